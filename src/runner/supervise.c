/* supervise.c — the supervise loop: from the job's start until the job
 * and every descendant are gone. One poll() on the signalfd (cancel,
 * child exits, pane resizes), the child's error pipe, the pty, the pane and
 * the viewers; the time limit; the signal ladders (cancel: SIGINT, SIGTERM,
 * SIGKILL; what the job left behind: SIGTERM, SIGKILL) sent to the job's
 * group and every descendant, found in /proc (we are their subreaper); the
 * reaping; the pty drained once all are gone. It calls down into pane.c,
 * attach.c and the leaves (runner.c, outbuf.c). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "err.h"
#include "runfile.h"
#include "runner.h"
#include "trace.h"

#define KILL_RESWEEP 0.1	/* seconds between SIGKILL sweeps at the end */
#define DRAIN_SECS 2.0		/* how long to wait for the pty once all are gone */

static const int cancel_ladder[] = { SIGINT, SIGTERM, SIGKILL };
static const int leftover_ladder[] = { SIGTERM, SIGKILL };
/* An interactive job (galloc) is a shell: it ignores SIGINT and SIGTERM
 * but leaves on a hang-up, as when its terminal closes. */
static const int hangup_ladder[] = { SIGHUP, SIGTERM, SIGKILL };

/* --- signals ----------------------------------------------------------- */

static void ignore_signal(struct runner *r, int sig)
{
	signal(sig, SIG_IGN);
	r->ignored_signals |= 1ull << (sig - 1);
}

/* What comes through the signalfd: cancel, child exits, pane resizes. */
static void signalfd_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGWINCH);
}

/* Cancel, child exits and pane resizes come through a signalfd; hangups
 * (the tmux session closed) and broken pipes are ignored. */
int setup_signals(struct runner *r, struct gf_err *e)
{
	sigset_t set;

	ignore_signal(r, SIGHUP);
	ignore_signal(r, SIGPIPE);
	ignore_signal(r, SIGTTOU);	/* may set the pane's modes from the background */
	ignore_signal(r, SIGTTIN);
	signal(SIGCHLD, SIG_DFL);	/* ignored SIGCHLD would auto-reap: no exit status */
	r->ignored_signals &= ~(1ull << (SIGCHLD - 1));
	signalfd_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return gf_err_set(e, "sigprocmask: %s", strerror(errno));
	r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r->sigfd < 0)
		return gf_err_set(e, "signalfd: %s", strerror(errno));
	return 0;
}

void rest_signals(struct runner *r)
{
	struct signalfd_siginfo si;
	sigset_t set;

	while (r->sigfd >= 0 && read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	signalfd_set(&set);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Orphans of the job (daemonised grandchildren) become our children. */
int become_subreaper(struct gf_err *e)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		return gf_err_set(e, "cannot become a child subreaper: %s", strerror(errno));
	return 0;
}

/* --- the job's processes ----------------------------------------------- */

struct proc {
	pid_t pid, ppid;
	bool in;	/* descends from the root */
};

static int proc_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct proc *)a)->pid, y = ((const struct proc *)b)->pid;

	return (x > y) - (x < y);
}

/* Every process descending from root, found by walking the parents in
 * /proc. *out is malloc'd (NULL when none); returns its length. */
static size_t descendants(pid_t root, pid_t **out)
{
	struct proc *ps = NULL;
	size_t n = 0, cap = 0, found = 0;
	struct dirent *d;
	bool grew = true;
	DIR *dir;

	*out = NULL;
	dir = opendir("/proc");
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		unsigned long long ppid;
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == root || proc_stat_field((pid_t)pid, 4, &ppid))
			continue;
		if (n == cap) {
			struct proc *p = realloc(ps, (cap = cap ? cap * 2 : 256) * sizeof *ps);

			if (!p)
				break;
			ps = p;
		}
		ps[n++] = (struct proc){ (pid_t)pid, (pid_t)ppid, (pid_t)ppid == root };
	}
	closedir(dir);
	if (n)
		qsort(ps, n, sizeof *ps, proc_cmp);
	/* Each pass adds at least one more generation. */
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			struct proc key = { .pid = ps[i].ppid }, *parent;

			if (ps[i].in)
				continue;
			parent = bsearch(&key, ps, n, sizeof *ps, proc_cmp);
			if (parent && parent->in)
				ps[i].in = grew = true;
		}
	}
	for (size_t i = 0; i < n; i++)
		found += ps[i].in;
	if (found && (*out = malloc(found * sizeof **out))) {
		found = 0;
		for (size_t i = 0; i < n; i++)
			if (ps[i].in)
				(*out)[found++] = ps[i].pid;
	} else
		found = 0;
	free(ps);
	return found;
}

/* Signal the job's process group and every descendant of the runner (also
 * those that left the group with setsid). SIGCONT follows, so a stopped
 * process gets to act on a catchable signal. */
static void signal_job(const struct runner *r, int sig)
{
	pid_t *pids;
	size_t n;

	/* The group id cannot be reused while its leader is unreaped. */
	if (!r->reaped && kill(-r->pid, sig) && errno == ESRCH)
		kill(r->pid, sig);
	n = descendants(getpid(), &pids);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
	if (sig != SIGKILL) {
		if (!r->reaped)
			kill(-r->pid, SIGCONT);
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGCONT);
	}
	free(pids);
}

static void start_ladder(struct runner *r, const int *ladder, int n, const char *ended_by)
{
	if (r->ladder)
		return;
	r->ladder = ladder;
	r->nladder = n;
	r->step = 0;
	r->next_step = now_mono();
	r->ladder_grace = r->o.grace;
	if (ended_by)
		r->ended_by = ended_by;
}

/* Send the ladder's next signal; the last one (SIGKILL) is repeated until
 * everything is gone, catching processes forked during a sweep. */
static void ladder_step(struct runner *r)
{
	int last = r->step >= r->nladder - 1;

	signal_job(r, r->ladder[last ? r->nladder - 1 : r->step]);
	r->next_step = now_mono() + (last ? KILL_RESWEEP : r->ladder_grace);
	if (!last)
		r->step++;
}

/* Wait for every child that has exited. Once the main process is reaped,
 * ECHILD means the whole tree is gone: as a subreaper the runner inherits
 * every orphan of the job. */
static void reap(struct runner *r)
{
	for (;;) {
		struct rusage ru;
		int st;
		pid_t p = wait4(-1, &st, WNOHANG, &ru);

		if (p > 0) {
			/* Each process's own: a runner serving its next job would
			 * carry the last one's in RUSAGE_CHILDREN. */
			if (ru.ru_maxrss > r->peak_rss_kb)
				r->peak_rss_kb = ru.ru_maxrss;
			if (p == r->pid) {
				r->status = st;
				r->reaped = true;
				gf_trace("job_exit", strtoll(r->o.job, NULL, 10));	/* trace.h */
			}
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 && errno == ECHILD && r->reaped && !r->gone) {
			r->gone = true;
			gf_trace("job_gone", strtoll(r->o.job, NULL, 10));
		}
		return;
	}
}

/* --- supervising ------------------------------------------------------- */

/* The daemon preempts the job: its signal, then SIGKILL after the grace;
 * a line in the log marks it. */
static void preempt(struct runner *r, int value)
{
	char line[160];
	int sig = GF_PREEMPT_SIG(value), secs = GF_PREEMPT_SECS(value), n;

	if (r->ladder || sig <= 0 || sig >= 65)
		return;
	n = snprintf(line, sizeof line, "\ngflow: job preempted: sending signal %d (%s), killed in %d s if still "
		     "running\n", sig, strsignal(sig), secs);
	if (r->logfd >= 0)
		gf_write_all(r->logfd, line, (size_t)n);
	if (r->o.pty)
		pane_write(r, line, (size_t)n);
	attach_output(r->attach, line, (size_t)n);
	r->preempt_ladder[0] = sig;
	r->preempt_ladder[1] = SIGKILL;
	start_ladder(r, r->preempt_ladder, sig == SIGKILL ? 1 : 2, "preempt");
	r->ladder_grace = secs;
}

static void on_signals(struct runner *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM && si.ssi_code == SI_QUEUE && GF_PREEMPT_IS(si.ssi_int) && !r->reaped)
			preempt(r, si.ssi_int);
		else if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) && !r->reaped)
			start_ladder(r, r->o.interactive ? hangup_ladder : cancel_ladder, 3, "cancel");
		else if (si.ssi_signo == SIGWINCH)
			copy_winsize(r);
	}
}

static void on_child_error(struct runner *r)
{
	struct child_err ce;
	ssize_t n = read(r->errfd, &ce, sizeof ce);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n == (ssize_t)sizeof ce) {
		r->cerr = ce;
		r->have_cerr = true;
	}
	close(r->errfd);
	r->errfd = -1;
}

/* An interactive job's caller (galloc, attached when it starts) is gone:
 * its last viewer left, or none came in time, or there is no socket. */
static bool caller_gone(const struct runner *r, double now)
{
	bool ever;
	int n;

	if (!r->attach)
		return true;
	n = attach_viewers(r->attach, &ever);
	return ever ? n == 0 : now >= r->start_mono + r->o.attach_wait;
}

/* Milliseconds until the next thing due, -1 when nothing is. */
static int next_timeout(const struct runner *r, double now)
{
	double due = INFINITY;
	bool ever;

	if (r->deadline && !r->ladder && !r->reaped)
		due = r->deadline;
	if (r->o.interactive && !r->ladder && !r->reaped && r->attach && !attach_viewers(r->attach, &ever) && !ever &&
	    r->start_mono + r->o.attach_wait < due)
		due = r->start_mono + r->o.attach_wait;
	if (r->ladder && !r->gone && r->next_step < due)
		due = r->next_step;
	if (r->drain_deadline && r->drain_deadline < due)
		due = r->drain_deadline;
	if (r->drain_deadline && r->quiet_until < due)
		due = r->quiet_until;
	if (due == INFINITY)
		return -1;
	if (due <= now)
		return 0;
	if (due - now > 86400)
		return 86400 * 1000;
	return (int)((due - now) * 1000.0) + 1;	/* rounded up: never wake early */
}

void supervise(struct runner *r)
{
	for (;;) {
		struct pollfd fds[5 + ATTACH_MAX_FDS];
		int n = 0, isig, ierr = -1, imaster = -1, iin = -1, iout = -1, iatt = 0, natt = 0;
		double now;

		reap(r);
		now = now_mono();
		if (r->deadline && !r->ladder && !r->reaped && now >= r->deadline)
			start_ladder(r, r->o.interactive ? hangup_ladder : cancel_ladder, 3, "timeout");
		if (r->o.interactive && !r->ladder && !r->reaped && caller_gone(r, now))
			start_ladder(r, hangup_ladder, 3, "cancel");
		if (r->reaped && !r->gone && !r->ladder)
			start_ladder(r, leftover_ladder, 2, NULL);
		if (r->ladder && !r->gone && now >= r->next_step)
			ladder_step(r);
		if (r->gone && r->master >= 0 && !r->drain_deadline) {
			r->drain_deadline = now + DRAIN_SECS;
			r->quiet_until = now + QUIET_SECS;
		}
		if (r->drain_deadline && (now >= r->drain_deadline || now >= r->quiet_until))
			close_master(r);
		if (r->gone && r->master < 0 && r->errfd < 0)
			return;

		fds[isig = n++] = (struct pollfd){ .fd = r->sigfd, .events = POLLIN };
		if (r->errfd >= 0)
			fds[ierr = n++] = (struct pollfd){ .fd = r->errfd, .events = POLLIN };
		if (r->master >= 0)
			fds[imaster = n++] = (struct pollfd){
				.fd = r->master, .events = POLLIN | (r->to_job.len ? POLLOUT : 0) };
		if (r->master >= 0 && r->pane_in && r->to_job.len < r->to_job.max)
			fds[iin = n++] = (struct pollfd){ .fd = 0, .events = POLLIN };
		if (r->pane_out && r->to_pane.len)
			fds[iout = n++] = (struct pollfd){ .fd = 1, .events = POLLOUT };
		if (r->attach)
			n += natt = attach_pollfds(r->attach, fds + (iatt = n));
		if (poll(fds, (nfds_t)n, next_timeout(r, now)) < 0) {
			if (errno != EINTR)
				usleep(10000);	/* cannot happen; never spin */
			continue;
		}
		if (fds[isig].revents)
			on_signals(r);
		if (ierr >= 0 && fds[ierr].revents)
			on_child_error(r);
		if (imaster >= 0 && (fds[imaster].revents & POLLOUT) && outbuf_flush(&r->to_job, r->master))
			outbuf_free(&r->to_job);
		if (imaster >= 0 && (fds[imaster].revents & (POLLIN | POLLHUP | POLLERR)))
			from_master(r);
		if (iin >= 0 && fds[iin].revents && r->master >= 0)
			from_pane(r);
		if (iout >= 0 && fds[iout].revents)
			pane_write(r, "", 0);
		if (natt)
			attach_events(r->attach, fds + iatt, natt);
	}
}
