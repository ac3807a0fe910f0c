/* backstop.c — the daemon's check that each running job is supervised.
 *
 * Every second (WATCH_SECS) it looks at each running job, independently of
 * any runner: a runner that is stopped, or that lets its job run past
 * limit + 2 × grace + a margin (or past its preemption's grace), is ended
 * by the daemon with everything of its job (reap.c then records the end).
 * An end the store could not record is tried again here, leftovers of a
 * job whose runner is gone are killed until none is left, and a job whose
 * end waits for room on a full disk says so in its reason. */
#include "run.h"
#include "verbose.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define WATCH_SECS 1.0		/* how often every running job is checked */
#define DRAIN_SECS 0.1		/* ... and while leftovers are being killed */
#define STOPPED_CHECKS 2	/* a runner seen stopped this many times in a row is ended */
#define LIMIT_MARGIN_SECS 5	/* past limit + 2 × grace, the daemon enforces the limit */

/* Does the job have a process besides its runner? */
static bool job_has_work(struct server *s, const struct job *j)
{
	pid_t *v;
	size_t n = track_pids(s, j, &v), others = 0;

	for (size_t i = 0; i < n; i++)
		others += v[i] != j->runner_pid;
	free(v);
	return others > 0;
}

/* End a runner that no longer supervises, and everything of its job. Its
 * pidfd then reports the exit and reap_runner_gone records `why`. */
static void backstop(struct server *s, struct job *j, const char *why, const char *what)
{
	fprintf(stderr, "gflowd: job %lld: its supervisor (pid %d) %s: ending the job\n", (long long)j->id,
		(int)j->runner_pid, what);
	jr_w(j)->backstop = why;
	reap_pidfd_signal(jr(j)->pidfd, SIGKILL);
	track_kill(s, j);
}

/* 'T' when j's runner is stopped. A runner of ours (a child: we started
 * it) says so to waitid on its pidfd (WNOWAIT: the stop stays reported), a
 * system call; another (found again after a restart, or under tmux) is
 * read from /proc/PID/stat, ten times the cost: with 1,000 jobs running,
 * a percent of a CPU each second. */
static char runner_state(const struct job *j)
{
	siginfo_t si = { 0 };

	if (jr(j)->pidfd >= 0 && waitid(P_PIDFD, (id_t)jr(j)->pidfd, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0)
		return si.si_pid && si.si_code == CLD_STOPPED ? 'T' : 'S';
	return proc_state(j->runner_pid);
}

static void check_runner(struct server *s, struct job *j, double now)
{
	double limit_end = j->start_time + (double)j->time_limit_secs + 2.0 * s->grace_secs + LIMIT_MARGIN_SECS;
	char state;

	if (jr(j)->backstop)
		return;	/* ended already; its exit is on the way */
	state = runner_state(j);
	vlog(4, "job %lld: runner pid %d is '%c'", (long long)j->id, (int)j->runner_pid, state);
	if (state == 'T') {
		if (++jr_w(j)->stopped_ticks >= STOPPED_CHECKS)
			backstop(s, j,
				 j->time_limit_secs && now > j->start_time + (double)j->time_limit_secs ? "timeout"
													  : "supervisor stopped",
				 "is stopped");
		return;
	}
	jr_w(j)->stopped_ticks = 0;
	if (j->time_limit_secs && now > limit_end && job_has_work(s, j))
		backstop(s, j, "timeout", "let the job run past its time limit");
	else if (jm(j)->preempt_since > 0 &&
		 now > jm(j)->preempt_since + (double)(job_preemptible(jm(j)) ? jm(j)->preempt_secs : s->grace_secs) +
			       2.0 * s->grace_secs + LIMIT_MARGIN_SECS &&
		 job_has_work(s, j))
		backstop(s, j, "preempted", "let the job run past its preemption grace");
}

/* A job whose processes are gone while its runner lives on, with the disk
 * full: the runner waits to write the result (it tries every second). It
 * is shown Running, and its reason says why; the note goes when there is
 * room again. */
static void disk_note(struct server *s, struct job *j, bool no_room)
{
	char note[GF_PATH_MAX + 200];
	bool noted = j->reason && !strncmp(j->reason, GF_DISK_NOTE, strlen(GF_DISK_NOTE));

	if (j->state != JS_RUNNING || jr(j)->end_pending)
		return;
	if (!no_room) {
		if (noted)
			job_set_reason(j, NULL);
		return;
	}
	if (noted || jr(j)->pidfd < 0 || job_has_work(s, j))
		return;
	snprintf(note, sizeof note, "%sits processes have ended; the disk of %s is full: its end is recorded once "
		 "there is room", GF_DISK_NOTE, s->paths.db);
	job_set_reason(j, note);
}

static void arm_watch(struct server *s, double secs)
{
	struct timeval tv = gf_timeval(secs);

	event_add(s->watch_ev, &tv);
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	double now = now_real(), next = WATCH_SECS;
	bool no_room;

	(void)fd;
	(void)what;
	exec_reap();
	if (!fd_room()) {
		/* What the checks read (cgroup.procs, /proc) would look empty. */
		fd_note("%s", "gflowd is out of file descriptors: its check of running jobs waits");
		arm_watch(s, WATCH_SECS);
		return;
	}
	track_observe(s);
	no_room = store_no_room(s->store);
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_live_at(s, i);

		if (!j || !j->active || jr(j)->end_queued)
			continue;	/* ended: the next pass records it */
		disk_note(s, j, no_room);
		if (jr(j)->end_pending) {
			reap_runner_gone(s, j);
			next = DRAIN_SECS * 10;
		} else if (jr(j)->draining) {
			if (track_empty(s, j))
				hooks_fire(s, GF_EV_JOB_FREED, j);
			else {
				track_kill(s, j);
				next = DRAIN_SECS;
			}
		} else if (jr(j)->pidfd >= 0)
			check_runner(s, j, now);
	}
	arm_watch(s, next);
}

void backstop_init(struct server *s)
{
	if (!(s->watch_ev = evtimer_new(s->base, on_watch, s)))
		abort();
	arm_watch(s, WATCH_SECS);
}

void backstop_close(struct server *s)
{
	if (s->watch_ev)
		event_free(s->watch_ev);
	s->watch_ev = NULL;
}
