/* reap.c — watching runners, and recording how each ended.
 *
 * A started runner announces itself (its `runner` file appears; inotify);
 * the daemon then watches it through a pidfd and collects its result when
 * it exits, and re-attaches to runners after a restart. When a runner is
 * gone, whatever is left of its job (track.c knows) is killed, and the
 * job's GPUs and memory go back only once no process of it is left. The
 * check that each running job is still supervised, and the retry of an end
 * the store could not record, are backstop.c's.
 *
 * A result told on the runner's socket (the "report" section below) is
 * taken without waiting for the runner's exit. */
#include "run.h"
#include "verbose.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "grow.h"
#include "runfile.h"
#include "trace.h"

#define START_TIMEOUT_SECS 30
/* A standby runner was handed the start: it announces itself within
 * milliseconds unless it died first (its tmux server killed, say). */
#define STANDBY_TIMEOUT_SECS 5
#define BOOT_ID_KEY "boot_id"	/* the settings key: the boot the last daemon ran in */

/* A job whose runner has been launched but has not written `runner` yet. */
struct pending {
	struct server *s;
	int64_t id;
	bool standby;		/* the start was handed to a standby runner */
	int wd;
	double deadline;	/* now_mono(): no runner file by then, it did not start */
	struct event *timeout;
	struct pending *next;
};

/* ---- a result told on the runner's socket ----------------------------------
 * A standby runner of the process executor is started on a socket of ours
 * (standby.c) and given --report: when its job and every process of it are
 * gone it sends "result LEN\n" and the result's text (runfile.h's format)
 * there, and waits. The result is recorded as a result file's is
 * (GF_EV_RUNNER_ENDED: the next pass's commit, with the other ends and the
 * starts they make room for) and, once that commit is on disk, answered
 * "k" (reap_forget): the runner exits without writing RUNDIR/result, which
 * saves it two syncs and the daemon the wait for its exit on the way from
 * one job to the next. It is answered "n" (write the file) when the daemon
 * cannot take it so: the job is not at a plain end, its runner is not
 * watched, the daemon counts processes of it still, or the store refused
 * the commit. A runner that gets no answer — the daemon stopped, crashed,
 * or is stuck for 2 s — writes the file, as every runner did before: an
 * exit status is never only in memory for long. After "k" the run
 * directory and the job's groups go when the runner has exited
 * (on_runner_exit): a runner whose wait ended just before the answer came
 * writes its file there, never into a directory reused.
 * "K" instead, while there is room for another standby, asks the runner
 * back: one that can serve again (a plain run, main.c) closes all it had of
 * the job and says "r", and is a standby again (standby_take_back), its
 * job's directory and groups released then, as at an exit (take_back). A
 * runner that cannot, or an older one, takes "K" as "k" or exits. */

#define REPORT_MAX 1200	/* "result LEN\n" and a result's text (under 1 KiB) */

struct report {
	struct server *s;
	int64_t id;
	struct event *ev;
	int fd;
	int pidfd;	/* the runner's, from the standbys: watched when it announces pid */
	pid_t pid;
	bool told;	/* its result is taken: the runner waits for our answer */
	bool answered;	/* "k" or "K" given: the job's end is on disk */
	size_t len;
	char buf[REPORT_MAX + 1];
};

static void report_say(struct report *rp, char c)
{
	while (send(rp->fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR)
		;
}

static void report_free(struct report *rp)
{
	if (rp->ev)
		event_free(rp->ev);
	if (rp->fd >= 0)
		close(rp->fd);
	if (rp->pidfd >= 0)
		close(rp->pidfd);
	free(rp);
}

static struct report *report_of(const struct job *j)
{
	return j->rt ? j->rt->report : NULL;
}

static void report_drop(struct job *j)
{
	if (!report_of(j))
		return;
	report_free(j->rt->report);
	j->rt->report = NULL;
}

/* After the commit of a told job's end: "k", or "K" (come back) when a
 * standby more can be held. True when the runner was told so (now or
 * before): it may still be alive. */
static bool report_answer(struct server *s, struct job *j)
{
	struct report *rp = report_of(j);

	if (!rp || !rp->told)
		return false;
	if (!rp->answered)
		report_say(rp, standby_room(s) ? 'K' : 'k');
	rp->answered = true;
	return true;
}

/* The store refused a told job's end: "n", the runner writes its file.
 * True when there was such a runner waiting. */
static bool report_refuse(struct job *j)
{
	struct report *rp = report_of(j);

	if (!rp || !rp->told || rp->answered)
		return false;
	report_say(rp, 'n');
	report_drop(j);
	return true;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int reap_pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

/* Stop watching the runner's pidfd (it exited, or we forget the job). */
static void unwatch(struct job *j)
{
	if (jr(j)->pidfd_ev) {
		/* on_runner_exit's argument is freed by the callback only when
		 * it fires; free it here when it will not. */
		void *arg = event_get_callback_arg(jr(j)->pidfd_ev);

		if (event_pending(jr(j)->pidfd_ev, EV_READ, NULL))
			free(arg);
		event_free(jr(j)->pidfd_ev);
		jr_w(j)->pidfd_ev = NULL;
	}
	if (jr(j)->pidfd >= 0) {
		close(jr(j)->pidfd);
		jr_w(j)->pidfd = -1;
	}
}

/* Why a runner left no result, in the words the job's reason will use.
 * `left`: processes of the job outlived it (a runner never leaves them
 * unless it was killed). */
static void why_no_result(struct server *s, struct job *j, bool left, char *why, size_t size)
{
	char dir[GF_PATH_MAX], path[GF_PATH_MAX + 16], out[320] = "";
	struct stat st;
	FILE *f;

	rundir_path(s, j, dir, sizeof dir);
	if (jr(j)->backstop) {
		snprintf(why, size, "%s", jr(j)->backstop);
		return;
	}
	if (left) {
		snprintf(why, size, "supervisor killed");
		return;
	}
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, size, "result lost: the run directory %s was removed", dir);
		return;
	}
	/* What the runner said about it, if anything (process executor). */
	if (!gf_pathf(path, sizeof path, "%s/runner.out", dir) && (f = fopen(path, "re"))) {
		char line[320];

		while (fgets(line, sizeof line, f))
			if (line[0] != '\n')
				snprintf(out, sizeof out, "%s", line);
		fclose(f);
		out[strcspn(out, "\n")] = '\0';
	}
	if (out[0])
		snprintf(why, size, "supervisor failed: %s", out);
	else
		snprintf(why, size, "supervisor killed");
}

/* A start in which nothing ran: the job queues again (or, cancelled
 * meanwhile, ends so), and its run directory goes. */
static void start_again(struct server *s, struct job *j)
{
	struct gf_err e;

	if (jobs_txn_begin(s, &e) == 0) {
		jobs_touch(s, j);
		j->state = j->state == JS_CANCELLED ? JS_CANCELLED : JS_QUEUED;
		j->active = false;
		j->gpu_mask = 0;
		j->start_time = 0;
		if (j->state == JS_CANCELLED)
			j->end_time = now_real();
		jobs_save(s, j, &e);
		jobs_txn_commit(s, &e);
	}
	if (j->active) {
		/* Left as it is: the next start looks at it again. */
		fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
		return;
	}
	rundir_remove(s, j);
	track_release(s, j);
}

/* Did the runner take its announcement back? Only a held start given up
 * (the daemon stopped before its commit was on disk) does: the job never
 * ran. Its run directory is there; its runner file, read before, is not. */
static bool withdrawn(const char *dir)
{
	struct runner_info ri;
	struct stat st;

	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || runfile_read_runner(dir, &ri, NULL) == 0)
		return false;
	return errno == ENOENT;
}

/* The name the job's log got, where it is not the one recorded (that was
 * taken: RUNDIR/logseq, written by whoever made the log before the runner
 * announced itself). A fact about the machine, like the runner's pid: kept
 * in memory and stored with the job's next save. */
static void note_log_seq(struct job *j, const char *dir)
{
	long long seq;

	if (runfile_read_logseq(dir, &seq) == 0 && seq != jm(j)->log_seq)
		jm_w(j)->log_seq = seq;
}

/* Its end could not be recorded (the store refused it; a full disk, most
 * likely): it is shown Running until it is, and its reason says why. The
 * reason lives in memory, as a waiting job's does. */
static void note_unrecorded(struct server *s, struct job *j, const struct job_result *r)
{
	char what[64], note[GF_PATH_MAX + 200];

	if (j->state != JS_RUNNING)
		return;
	if (!r)
		snprintf(what, sizeof what, "it ended");
	else if (r->exited)
		snprintf(what, sizeof what, "it ended (exit %d)", r->exit_code);
	else
		snprintf(what, sizeof what, "it ended (signal %d)", r->signal);
	if (store_no_room(s->store))
		snprintf(note, sizeof note, "%s%s; the disk of %s is full: its end is recorded once there is room",
			 GF_DISK_NOTE, what, s->paths.db);
	else
		snprintf(note, sizeof note, "WaitingForStore: %s; the store refused to record it (see the daemon's "
			 "log): trying again", what);
	job_set_reason(j, note);
}

void reap_end_unrecorded(struct server *s, struct job *j, const struct job_result *r)
{
	note_unrecorded(s, j, r);
	/* A runner that waits for our word writes its result file now, and
	 * its exit brings that here again (reap_runner_gone). */
	if (report_refuse(j))
		return;
	jr_w(j)->end_pending = true;
	event_active(s->watch_ev, 0, 0);
}

/* The runner is gone: record how the job ended (its result, or why there
 * is none), and kill what is left of the job. */
void reap_runner_gone(struct server *s, struct job *j)
{
	char dir[GF_PATH_MAX], why[GF_PATH_MAX + 400];
	struct job_result r, *rp = &r;
	struct gf_err e;
	bool left;

	unwatch(j);
	if (report_of(j) && report_of(j)->told)
		return;	/* it told its result, which the next pass records */
	report_drop(j);
	if (!fd_room()) {
		/* Its result waits on disk; the backstop's next round reads it. */
		fd_note("job %lld ended, and gflowd is out of file descriptors: its result is read when there "
			"is room", (long long)j->id);
		jr_w(j)->end_pending = true;
		return;
	}
	if (job_state_ended(j->state) && j->state != JS_CANCELLED) {
		/* Its end was recorded before (a restart found it draining):
		 * only what is left of it remains to go. */
		if (track_empty(s, j))
			hooks_fire(s, GF_EV_JOB_FREED, j);
		else {
			track_kill(s, j);
			jr_w(j)->draining = true;
		}
		return;
	}
	left = !jr(j)->draining && !track_empty(s, j);
	rundir_path(s, j, dir, sizeof dir);
	note_log_seq(j, dir);
	if (runfile_read_result(dir, &r, &e)) {
		if (!left && !jr(j)->backstop && withdrawn(dir)) {
			start_again(s, j);
			server_schedule(s);
			return;
		}
		why_no_result(s, j, left, why, sizeof why);
		rp = NULL;
		if (jr(j)->backstop && !strcmp(jr(j)->backstop, "timeout")) {
			/* The daemon enforced the time limit itself. */
			memset(&r, 0, sizeof r);
			r.signal = SIGKILL;
			r.start = j->start_time;
			r.end = now_real();
			snprintf(r.ended_by, sizeof r.ended_by, "timeout");
			snprintf(r.error, sizeof r.error, "supervisor did not enforce the time limit; gflowd did");
			rp = &r;
		}
	}
	if (left) {
		fprintf(stderr, "gflowd: job %lld: its supervisor is gone and processes of it are left: "
				"killing them\n", (long long)j->id);
		track_kill(s, j);
		jr_w(j)->draining = true;
	}
	jr_w(j)->end_pending = false;
	if (hooks_fire(s, GF_EV_RUNNER_ENDED, &(struct gf_ev_runner_ended){ j, rp, why }))
		reap_end_unrecorded(s, j, rp);
}

static void on_runner_exit(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;	/* reused as a plain (server, id) pair */
	struct job *j = jobs_get(p->s, p->id);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	(void)what;
	exec_reap();
	/* Only believe the pidfd itself. epoll can report an event for a file
	 * that had this fd number before: libevent closes a finished HTTP
	 * connection before removing it from epoll, and a child forked at that
	 * moment keeps the old file, and so its epoll entry, alive. */
	if (j && j->active && jr(j)->pidfd == fd && poll(&pfd, 1, 0) == 0) {
		event_add(jr(j)->pidfd_ev, NULL);
		return;
	}
	if (j && jr(j)->pidfd == fd) {
		gf_trace("runner_exit", j->id);	/* the hand-off trace (trace.h) */
		event_free(jr(j)->pidfd_ev);	/* its argument, p, is ours to free */
		jr_w(j)->pidfd_ev = NULL;
		if (j->active && !jr(j)->draining)
			reap_runner_gone(p->s, j);
		else if (report_of(j) && report_of(j)->answered)
			reap_forget(p->s, j);	/* its run directory and groups, now that it is gone */
	}
	free(p);
}

static struct pending *pending_take(struct server *s, int64_t id)
{
	for (struct pending **pp = &s->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct pending *p = *pp;

			*pp = p->next;
			return p;
		}
	return NULL;
}

static void pending_drop(struct server *s, int64_t id)
{
	struct pending *p = pending_take(s, id);

	if (!p)
		return;
	if (p->wd >= 0)
		inotify_rm_watch(s->inotify_fd, p->wd);
	if (p->timeout)
		event_free(p->timeout);
	free(p);
}

/* Runner pids seen, stored together a moment later (PIDS_SAVE_SECS): one
 * commit for the starts of many short jobs, not a commit each. A restart
 * finds a runner through its run directory (its runner file) as well; the
 * stored pid is for a directory removed under a running job. */
#define PIDS_SAVE_SECS 0.02

static void save_pids(struct server *s)
{
	struct gf_err e;
	size_t n = s->npids_due, i = 0;

	if (!n || s->txn.open)
		return;	/* kept for later: a transaction is never open across a turn of the loop */
	s->npids_due = 0;
	if (store_begin(s->store, &e))
		goto fail;
	for (; i < n; i++) {
		struct job *j = jobs_get(s, s->pids_due[i]);

		if (j && j->active && !j->unreadable && store_update_job(s->store, j, &e))
			break;
	}
	if (i < n)
		store_rollback(s->store);
	else if (store_commit(s->store, &e) == 0)
		return;
fail:
	/* As before: in memory, and stored with the job's next change. */
	fprintf(stderr, "gflowd: storing the runners' pids: %s\n", e.msg);
}

static void on_pids_due(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	save_pids(arg);
}

static void pid_save_soon(struct server *s, struct job *j)
{
	struct timeval tv = { 0, (suseconds_t)(PIDS_SAVE_SECS * 1e6) };
	struct gf_err e;

	if (s->txn.open || !s->base) {
		if (jobs_save(s, j, &e))
			fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
		return;
	}
	s->pids_due = gf_grow(s->pids_due, &s->pids_due_cap, s->npids_due + 1, sizeof *s->pids_due, 16);
	s->pids_due[s->npids_due++] = j->id;
	if (!s->pids_ev && !(s->pids_ev = evtimer_new(s->base, on_pids_due, s))) {
		save_pids(s);
		return;
	}
	if (!evtimer_pending(s->pids_ev, NULL))
		evtimer_add(s->pids_ev, &tv);
}

/* The pidfd of the standby that took j's start, when pid is its: opened
 * while that very process was ours to watch, so /proc need not say so. */
static int handed_pidfd(struct job *j, pid_t pid)
{
	struct report *rp = report_of(j);
	int fd = -1;

	if (rp && rp->pidfd >= 0 && rp->pid == pid) {
		fd = rp->pidfd;
		rp->pidfd = -1;
	}
	return fd;
}

/* Watch a live runner through a pidfd. -1 when it is gone already (or the
 * pid is someone else's now), -2 when there is no descriptor for it now. */
static int watch_pid(struct server *s, struct job *j, pid_t pid, unsigned long long start_ticks)
{
	unsigned long long ticks = 0;
	struct pending *p;
	int fd = handed_pidfd(j, pid);
	bool handed = fd >= 0;

	if (!handed && (fd = pidfd_open_(pid)) < 0 && fd_short(errno))
		return -2;
	if (fd < 0 || (!handed && (proc_start_ticks(pid, &ticks) || ticks != start_ticks)) ||
	    (j->runner_ticks && j->runner_ticks != start_ticks)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (j->runner_pid != pid || j->runner_ticks != start_ticks) {
		/* A fact about the machine, not a change anyone asked for: kept
		 * in memory even when the store refuses it (then it is stored
		 * with the job's next change, and a restart finds the runner
		 * through its run directory). */
		j->runner_pid = pid;
		j->runner_ticks = start_ticks;
		pid_save_soon(s, j);
	}
	p = calloc(1, sizeof *p);
	if (!p)
		abort();
	p->s = s;
	p->id = j->id;
	jr_w(j)->pidfd = fd;
	jr_w(j)->pidfd_ev = event_new(s->base, fd, EV_READ, on_runner_exit, p);
	event_add(jr(j)->pidfd_ev, NULL);
	if (j->state == JS_CANCELLED && !jr(j)->cancel_sent)
		reap_signal(s, j, SIGTERM);
	else if (j->state == JS_RUNNING && jm(j)->preempt_since > 0 && !jr(j)->cancel_sent)
		reap_preempt(s, j);	/* after a daemon restart, or before the runner was seen */
	return 0;
}

/* The runner's file is there: watch its pid. Returns 0 when attached (or
 * the job was collected), -1 when there is no runner file yet. */
static void attach_later(struct server *s, struct job *j);

static int attach(struct server *s, struct job *j)
{
	char dir[GF_PATH_MAX];
	struct runner_info ri;
	struct gf_err e;
	int rc;

	/* A pidfd comes with the standby's start: no descriptor is needed. */
	if (!(report_of(j) && report_of(j)->pidfd >= 0) && !fd_room()) {
		attach_later(s, j);
		return 0;
	}
	rundir_path(s, j, dir, sizeof dir);
	if (runfile_read_runner(dir, &ri, &e))
		return -1;
	note_log_seq(j, dir);
	pending_drop(s, j->id);
	if (ri.pid <= 0) {
		/* Claimed by an earlier daemon that gave up on this start. */
		jr_w(j)->backstop = "the job's supervisor did not start";
		reap_runner_gone(s, j);
		return 0;
	}
	if ((rc = watch_pid(s, j, ri.pid, ri.start_ticks)) == -2)
		attach_later(s, j);
	else if (rc)
		reap_runner_gone(s, j);
	return 0;
}

/* Mark a run directory as abandoned, unless its runner got there first.
 * Returns 1 when we claimed it (the runner will refuse to run). */
static int claim(struct server *s, const struct job *j)
{
	char dir[GF_PATH_MAX];
	struct runner_info none = { 0 };
	struct gf_err e;

	rundir_path(s, j, dir, sizeof dir);
	if (runfile_write_runner(dir, &none, &e) == 0)
		return 1;
	return errno == EEXIST ? 0 : 1;	/* no directory: nothing can start in it */
}

static void on_start_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;
	struct server *s = p->s;
	struct job *j = jobs_get(s, p->id);

	(void)fd;
	(void)what;
	if (!j || !j->active) {
		pending_drop(s, p->id);
		return;
	}
	if (attach(s, j) == 0)
		return;
	if (now_mono() < p->deadline) {
		/* Woken early to attach when there was no room: its time runs on. */
		struct timeval tv = gf_timeval(p->deadline - now_mono());

		event_add(p->timeout, &tv);
		return;
	}
	if (claim(s, j)) {
		bool standby = p->standby;

		pending_drop(s, j->id);
		if (standby) {
			/* No runner file: it never started the job, and the
			 * claim keeps it from starting it late. */
			fprintf(stderr, "gflowd: job %lld: the standby runner did not take the start within %d s: "
					"starting it again\n", (long long)j->id, STANDBY_TIMEOUT_SECS);
			start_again(s, j);
			server_schedule(s);
			return;
		}
		jr_w(j)->backstop = "the job's supervisor did not start within 30 s";
		reap_runner_gone(s, j);
	} else
		attach(s, j);
}

/* Take a told result as the runner's end, when it is a plain one: the job
 * runs (or was cancelled) with no end on its way by another path, is not
 * being preempted (a requeued job starts again under its id: its old
 * runner must be gone first, and is, on the file's way), its runner is
 * watched (its exit then cleans up), and no process of it is left by our
 * count. */
static bool report_take(struct server *s, struct job *j, struct report *rp, char *text)
{
	char dir[GF_PATH_MAX];
	struct job_result r;
	struct gf_err e;

	rundir_path(s, j, dir, sizeof dir);
	if (runfile_result_parse(text, dir, "report", &r, &e)) {
		fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
		return false;
	}
	if (!jr(j)->pidfd_ev && j->active)
		attach(s, j);	/* its announcement may be read after this */
	if (!j->active || jr(j)->draining || jr(j)->end_queued || jr(j)->end_pending || !jr(j)->pidfd_ev ||
	    (j->state != JS_RUNNING && j->state != JS_CANCELLED) || jm(j)->preempt_since > 0 || !track_empty(s, j))
		return false;
	rp->told = true;
	if (hooks_fire(s, GF_EV_RUNNER_ENDED, &(struct gf_ev_runner_ended){ j, &r, NULL })) {
		rp->told = false;
		return false;
	}
	return true;
}

/* The runner is done with the job it told ("r", after our "K"): it waits
 * on its socket for another job's options. Its socket and pidfd go to the
 * standbys, and the job's run directory and groups are released, as at
 * its exit. */
static void take_back(struct server *s, struct job *j)
{
	struct standby_chan c = { .fd = jr(j)->report->fd, .pidfd = jr(j)->pidfd, .pid = j->runner_pid };

	jr_w(j)->report->fd = -1;
	jr_w(j)->pidfd = -1;
	unwatch(j);
	report_drop(j);
	standby_take_back(s, &c);
	reap_forget(s, j);
}

static void on_report(evutil_socket_t fd, short what, void *arg)
{
	struct report *rp = arg;
	struct job *j = jobs_get(rp->s, rp->id);
	ssize_t got;
	char *text;
	int whole;

	(void)what;
	do
		got = recv(fd, rp->buf + rp->len, REPORT_MAX - rp->len, MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got < 0 && errno == EAGAIN)
		return;
	if (!j || report_of(j) != rp) {
		report_free(rp);	/* its job is gone (deleted): nobody else holds it */
		return;
	}
	if (rp->told) {
		if (rp->answered && got == 1 && rp->buf[rp->len] == 'r' && jr(j)->pidfd_ev) {
			take_back(rp->s, j);
			return;
		}
		/* EOF (it exited, or stopped waiting), or more than it should
		 * say: nothing more is read. Its answer and the rest are due
		 * as they were. */
		event_del(rp->ev);
		return;
	}
	if (got <= 0) {
		report_drop(j);	/* gone without telling: its exit says the rest */
		return;
	}
	rp->len += (size_t)got;
	if ((whole = runfile_report_whole(rp->buf, rp->len, sizeof rp->buf, &text)) == 0)
		return;
	if (whole < 0 || !report_take(rp->s, j, rp, text)) {
		report_say(rp, 'n');	/* the runner writes its result file */
		report_drop(j);
	}
}

int reap_report_watch(struct server *s, struct job *j, const struct standby_chan *c)
{
	struct report *rp = calloc(1, sizeof *rp);

	if (!rp) {
		close(c->fd);
		if (c->pidfd >= 0)
			close(c->pidfd);
		return -1;
	}
	rp->s = s;
	rp->id = j->id;
	rp->fd = c->fd;
	rp->pidfd = c->pidfd;
	rp->pid = c->pid;
	if (!(rp->ev = event_new(s->base, c->fd, EV_READ | EV_PERSIST, on_report, rp)) || event_add(rp->ev, NULL)) {
		report_free(rp);
		return -1;
	}
	report_drop(j);
	jr_w(j)->report = rp;
	return 0;
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof *ev + ev->len;
			if (!ev->len || strcmp(ev->name, "runner"))
				continue;
			for (struct pending *q = s->pending; q; q = q->next)
				if (q->wd == ev->wd) {
					struct job *j = jobs_get(s, q->id);

					if (j && j->active)
						attach(s, j);
					else
						pending_drop(s, q->id);
					break;
				}
		}
	}
}

int reap_init(struct server *s, struct gf_err *e)
{
	s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->inotify_fd < 0)
		return gf_err_set(e, "inotify: %s", strerror(errno));
	s->inotify_ev = event_new(s->base, s->inotify_fd, EV_READ | EV_PERSIST, on_inotify, s);
	event_add(s->inotify_ev, NULL);
	return 0;
}

void reap_watch_start(struct server *s, struct job *j, bool standby)
{
	struct pending *p = calloc(1, sizeof *p);
	struct timeval tv = { standby ? STANDBY_TIMEOUT_SECS : START_TIMEOUT_SECS, 0 };
	char dir[GF_PATH_MAX];

	if (!p)
		abort();
	rundir_path(s, j, dir, sizeof dir);
	p->s = s;
	p->id = j->id;
	p->standby = standby;
	p->deadline = now_mono() + (double)tv.tv_sec;
	/* made, or written in place (an empty one kept: runfile.c) */
	p->wd = inotify_add_watch(s->inotify_fd, dir,
				  IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW);
	p->timeout = event_new(s->base, -1, 0, on_start_timeout, p);
	event_add(p->timeout, &tv);
	p->next = s->pending;
	s->pending = p;
	/* The runner may have been quicker than the watch. */
	attach(s, j);
}

/* The runner is (or may be) there, and there is no descriptor to watch it
 * with: try again in a second, keeping the start's own deadline. */
static void attach_later(struct server *s, struct job *j)
{
	struct timeval tv = { 1, 0 };
	struct pending *p;

	for (p = s->pending; p && p->id != j->id; p = p->next)
		;
	if (!p) {
		if (!(p = calloc(1, sizeof *p)))
			abort();
		p->s = s;
		p->id = j->id;
		p->wd = -1;
		p->deadline = now_mono() + START_TIMEOUT_SECS;
		p->timeout = event_new(s->base, -1, 0, on_start_timeout, p);
		p->next = s->pending;
		s->pending = p;
	}
	fd_note("job %lld: gflowd is out of file descriptors: it watches the job's runner when there is room",
		(long long)j->id);
	event_add(p->timeout, &tv);
}

/* A start undone before anything ran: out of descriptors (pass.c). */
void reap_start_undo(struct server *s, struct job *j)
{
	start_again(s, j);
}

void reap_start_failed(struct server *s, struct job *j, const char *why)
{
	if (jr(j)->pidfd >= 0 || attach(s, j) == 0)
		return;		/* its runner came after all */
	if (!claim(s, j)) {
		attach(s, j);	/* …just now */
		return;
	}
	pending_drop(s, j->id);
	if (hooks_fire(s, GF_EV_RUNNER_ENDED, &(struct gf_ev_runner_ended){ j, NULL, why })) {
		jr_w(j)->backstop = "the job could not be started";
		jr_w(j)->end_pending = true;	/* tried again by the backstop */
	}
}

int reap_preempt(struct server *s, struct job *j)
{
	siginfo_t si;
	int sig = jm(j)->preempt_sig > 0 ? (int)jm(j)->preempt_sig : SIGTERM;
	int64_t secs = jm(j)->preempt_secs;

	if (!job_preemptible(jm(j)))
		secs = s->grace_secs;	/* a job requeued that did not ask for it */
	if (jr(j)->pidfd < 0)
		return -1;	/* not attached yet: attach() sends it */
	memset(&si, 0, sizeof si);
	si.si_signo = SIGTERM;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = GF_PREEMPT_VALUE(sig, secs < 0 ? 0 : secs > 0xfffff ? 0xfffff : secs);
	jr_w(j)->cancel_sent = true;
	return (int)syscall(SYS_pidfd_send_signal, jr(j)->pidfd, SIGTERM, &si, 0);
}

int reap_signal(struct server *s, struct job *j, int sig)
{
	(void)s;
	if (jr(j)->pidfd < 0)
		return -1;	/* not attached yet: attach() sends it */
	jr_w(j)->cancel_sent = true;
	return reap_pidfd_signal(jr(j)->pidfd, sig);
}

void reap_forget(struct server *s, struct job *j)
{
	/* A runner that told its result waits for our word that its end is on
	 * disk (it is, when this is called): given now, and the rest waits
	 * for its exit (on_runner_exit). */
	if (report_answer(s, j) && jr(j)->pidfd_ev)
		return;
	report_drop(j);
	pending_drop(s, j->id);
	unwatch(j);
	rundir_remove(s, j);
	track_release(s, j);
	if (j->rt) {
		j->rt->backstop = NULL;
		j->rt->draining = j->rt->end_pending = false;
		j->rt->stopped_ticks = 0;
		j->rt->cancel_sent = false;	/* a later run is signalled afresh */
		j->rt->group_made = false;
	}
	job_rt_trim(j);	/* the runner's block goes with it */
}

void reap_job_close(struct job *j)
{
	unwatch(j);
	report_drop(j);	/* its runner, if it waits, writes its result file */
}

void reap_close(struct server *s)
{
	save_pids(s);
	free(s->pids_due);
	s->pids_due = NULL;
	s->pids_due_cap = 0;
	if (s->pids_ev)
		event_free(s->pids_ev);
	s->pids_ev = NULL;
	while (s->pending)
		pending_drop(s, s->pending->id);
}

/* A job the store says was started, found at daemon start. It is started
 * again only when no process of it can be alive: it never ran (no runner
 * was ever seen), its run directory is claimed against a late runner, and
 * the daemon finds none of its processes. After a machine restart "no
 * runner was ever seen" is not known (`rebooted`): the runner's file is not
 * synced, so one that started the job may have left none; the job ends. */
static void recover(struct server *s, struct job *j, bool rebooted)
{
	char dir[GF_PATH_MAX];
	struct job_result r;
	struct gf_err e;
	int rc;

	rundir_path(s, j, dir, sizeof dir);
	if (runfile_read_result(dir, &r, &e) == 0) {
		reap_runner_gone(s, j);
		return;
	}
	if (attach(s, j) == 0)
		return;
	/* No runner file: the directory may have been removed under a job
	 * whose runner still runs. */
	if (j->runner_pid > 0 && (rc = watch_pid(s, j, j->runner_pid, j->runner_ticks)) != -1) {
		if (rc == -2)
			attach_later(s, j);
		return;
	}
	if (job_state_ended(j->state) && j->state != JS_CANCELLED) {
		reap_runner_gone(s, j);	/* recorded already: what is left goes */
		return;
	}
	if (!track_empty(s, j)) {
		jr_w(j)->backstop = "supervisor lost: processes of the job ran on without it";
		reap_runner_gone(s, j);
		return;
	}
	if (j->runner_pid > 0) {
		reap_runner_gone(s, j);	/* it ran, and its result is gone */
		return;
	}
	if (!claim(s, j)) {
		attach(s, j);	/* its runner got there first */
		return;
	}
	if (rebooted && j->state != JS_CANCELLED) {
		jr_w(j)->backstop = "the machine restarted as the job was starting: it may have run in part, "
				    "so it is not started again";
		reap_runner_gone(s, j);
		return;
	}
	/* The runner never started: nothing ran, so it queues again. */
	start_again(s, j);
}

/* This boot's id, or "" when /proc does not say. */
static void boot_id(char *buf, size_t size)
{
	if (runfile_read_text("/proc/sys/kernel/random", "boot_id", buf, size))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

int reap_recover(struct server *s, struct gf_err *e)
{
	char boot[64], *last = store_get_setting(s->store, BOOT_ID_KEY);
	bool rebooted;

	boot_id(boot, sizeof boot);
	/* No boot recorded: a new store, or one of a daemon that synced
	 * every runner file; either way an absent one means none started. */
	rebooted = boot[0] && last && strcmp(last, boot);
	for (int64_t i = 1; i <= s->max_id; i++) {
		struct job *j = s->jobs[i];

		if (j && j->active)
			recover(s, j, rebooted);
	}
	/* Recorded before any job of this boot starts. */
	if (boot[0] && (!last || strcmp(last, boot)) && store_set_setting(s->store, BOOT_ID_KEY, boot, e)) {
		free(last);
		return gf_err_prefix(e, "recording the boot id");
	}
	free(last);
	return 0;
}
