/* main.c — gflow-runner, the supervisor of one job.
 *
 * It announces itself in RUNDIR/runner, sees that the job is born in its
 * cgroups (--cgroup, made by the daemon, which tracks the job's processes
 * through them), starts the job (its own process group, the command of
 * RUNDIR/argv or after `--`, the environment of RUNDIR/env, output to the
 * log, under --pty through a pseudo-terminal it also copies to its own
 * stdout), enforces the time limit, obeys SIGTERM/SIGINT as "cancel",
 * cleans up whatever the job left behind, and writes RUNDIR/result once the
 * job and every descendant are gone (retrying until it can: the exit status
 * is never given up). Under --attach it offers the pty to viewers through a
 * socket (attach.c). It needs nothing from the daemon after it starts, so it
 * outlives daemon restarts.
 * Started with --standby [--ahead RUNROOT] (standby.c) it waits for these
 * options on stdin (with --env-bytes/--argv-bytes the environment and
 * command follow them there), writes its announcement ahead in RUNROOT's
 * file system, makes RUNDIR/runner.out itself when it has something to say,
 * and under --hold lets the job exec only on the daemon's word (the commit
 * that started it is on disk). One poll() loop; signals arrive
 * through a signalfd. Nothing in RUNDIR or the log is reached through a
 * symbolic link. The job's terminal (the pty, the pane, the viewers) is
 * pane.c's; the command line and the job's environment and command are
 * opts.c's. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "clone3.h"
#include "err.h"
#include "owner.h"
#include "runfile.h"
#include "standby.h"
#include "vmclone.h"
#include "trace.h"
#include "runner.h"

#define KILL_RESWEEP 0.1	/* seconds between SIGKILL sweeps at the end */
#define DRAIN_SECS 2.0		/* how long to wait for the pty once all are gone */

extern char **environ;

static const int cancel_ladder[] = { SIGINT, SIGTERM, SIGKILL };
static const int leftover_ladder[] = { SIGTERM, SIGKILL };

static int open_run_dir(struct runner *r, struct gf_err *e)
{
	r->dirfd = runfile_open_dir(r->o.dir, 1);
	if (r->dirfd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return gf_err_set(e, "%s is not a directory (a symbolic link?): not following it", r->o.dir);
	if (r->dirfd < 0)
		return gf_err_set(e, "cannot open %s: %s", r->o.dir, strerror(errno));
	return 0;
}


/* --- signals ----------------------------------------------------------- */

/* The signals ignored here, bit sig - 1: of what a process is given, only
 * an ignored disposition outlives exec (handlers are reset), so these are
 * what the job's child sets back to the default. Those we were started
 * with are read ahead of any job (a standby reads them as it waits), by
 * the system call: glibc hides the signals it reserves (32, 33), whose
 * ignored disposition is inherited all the same. */
static uint64_t ignored_signals;

struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
	unsigned long spare[4];	/* room for any architecture's layout */
};

static void read_ignored_signals(void)
{
	for (int sig = 1; sig < NSIG && sig <= 64; sig++) {
		struct kernel_sigaction old;

		if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) == 0 && old.handler == (void *)SIG_IGN)
			ignored_signals |= 1ull << (sig - 1);
	}
}

static void ignore_signal(int sig)
{
	signal(sig, SIG_IGN);
	ignored_signals |= 1ull << (sig - 1);
}

/* Cancel, child exits and pane resizes come through a signalfd; hangups
 * (the tmux session closed) and broken pipes are ignored. */
static int setup_signals(struct runner *r, struct gf_err *e)
{
	sigset_t set;

	ignore_signal(SIGHUP);
	ignore_signal(SIGPIPE);
	ignore_signal(SIGTTOU);	/* may set the pane's modes from the background */
	ignore_signal(SIGTTIN);
	signal(SIGCHLD, SIG_DFL);	/* ignored SIGCHLD would auto-reap: no exit status */
	ignored_signals &= ~(1ull << (SIGCHLD - 1));
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return gf_err_set(e, "sigprocmask: %s", strerror(errno));
	r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r->sigfd < 0)
		return gf_err_set(e, "signalfd: %s", strerror(errno));
	return 0;
}

/* Orphans of the job (daemonised grandchildren) become our children. */
static int become_subreaper(struct gf_err *e)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		return gf_err_set(e, "cannot become a child subreaper: %s", strerror(errno));
	return 0;
}

/* Fds 0-2 must be open, or the first file we open would land there. */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return;
}

/* --- the runner file --------------------------------------------------- */

/* A standby's announcement, made while it waits (`--ahead RUNROOT`): an
 * unnamed file in the run directories' file system, linked into place at
 * the start (one link instead of a new inode on the start path). */
static int announce_ahead(const char *root)
{
	struct runner_info ri = { .pid = getpid(), .started_at = now_real() };
	int rootfd, fd;

	if (proc_start_ticks(ri.pid, &ri.start_ticks) || (rootfd = runfile_open_dir(root, 1)) < 0)
		return -1;
	fd = runfile_runner_ahead(rootfd, &ri);
	close(rootfd);
	return fd;
}

static int announce(struct runner *r, struct gf_err *e)
{
	struct runner_info ri = { .pid = getpid(), .started_at = now_real() };
	int rc;

	if (r->ahead >= 0) {
		rc = runfile_link_runner_at(r->dirfd, r->o.dir, r->ahead, e);
		r->ahead = -1;	/* closed */
		if (rc == 0 || errno == EEXIST)
			goto done;
	}
	if (proc_start_ticks(ri.pid, &ri.start_ticks))
		return gf_err_set(e, "cannot read /proc/self/stat: %s", strerror(errno));
	rc = runfile_write_runner_at(r->dirfd, r->o.dir, &ri, 0, e);
done:
	if (rc && errno == EEXIST)
		return gf_err_set(e, "%s/runner exists: the daemon gave up on this start", r->o.dir);
	return rc;
}

/* --- cgroups ------------------------------------------------------------ */

/* Are we in cg already (the daemon started us inside)? Then there is no
 * move to make: even a move to where one is costs an RCU grace period. */
static bool member_of(const char *cg, const char *pid)
{
	char buf[4096], *line, *save = NULL;

	if (runfile_read_text(cg, "cgroup.procs", buf, sizeof buf))
		return false;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strcmp(line, pid))
			return true;
	return false;
}

/* The daemon made the job's cgroups (v2, or v1 hierarchies) and tracks the
 * job through them; every process of the job is born inside. The runner is
 * started inside the v2 group (process executor) or, when it is not (a
 * standby, or under tmux), has the job born there by clone3(CLONE_INTO_CGROUP)
 * and stays out: moving itself in would cost an RCU grace period (~10 ms
 * here) on every start. v1 groups (no such clone) it moves itself into.
 * *into: an fd of the group the job is to be born into, or -1. */
static int join_cgroups(struct runner *r, int *into, struct gf_err *e)
{
	char path[PATH_MAX + 32], pid[32], buf[64];
	int n = snprintf(pid, sizeof pid, "%lld", (long long)getpid());

	*into = -1;
	for (int i = 0; i < r->o.ncgroups; i++) {
		const char *cg = r->o.cgroups[i];
		int fd = -2, err = 0;

		snprintf(path, sizeof path, "%s/cgroup.controllers", cg);
		if (member_of(cg, pid))
			;
		else if (*into < 0 && access(path, F_OK) == 0)
			*into = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else {
			snprintf(path, sizeof path, "%s/cgroup.procs", cg);
			fd = open(path, O_WRONLY | O_CLOEXEC);
		}
		if (fd == -1 || (fd >= 0 && gf_write_all(fd, pid, (size_t)n)))
			err = errno;
		if (fd >= 0 && close(fd) && !err)
			err = errno;
		if (err)
			return gf_err_set(e, "cannot join the job's cgroup %s: %s", cg, strerror(err));
		/* A limit below "max" (v2) or below the v1 default means enforced. */
		if (runfile_read_text(cg, "memory.max", buf, sizeof buf) == 0)
			r->enforced |= strncmp(buf, "max", 3) != 0;
		else if (runfile_read_text(cg, "memory.limit_in_bytes", buf, sizeof buf) == 0)
			r->enforced |= strtoull(buf, NULL, 10) < (1ULL << 62);
	}
	return 0;
}

/* fork(), the child born in the cgroup `into` when it is not -1; when the
 * kernel cannot do that, we move in first (our children are born where
 * we are) and fork. */
static pid_t fork_into(int into, struct gf_err *e)
{
	char pid[32];
	long rc;
	int fd, n;

	if (into < 0)
		return fork();
	rc = gf_fork_into_cgroup(into);
	if (rc >= 0 || !gf_clone3_unsupported(errno))
		return (pid_t)rc;
	n = snprintf(pid, sizeof pid, "%lld", (long long)getpid());
	fd = openat(into, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || gf_write_all(fd, pid, (size_t)n)) {
		gf_err_set(e, "cannot join the job's cgroup: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		errno = 0;
		return -2;
	}
	close(fd);
	return fork();
}

/* The kernel's count of OOM kills in the job's memory cgroup: v2's
 * memory.events or v1's memory.oom_control, each a line "oom_kill N". */
static bool cg_oom(const struct runner *r)
{
	static const char *const files[] = { "memory.events", "memory.oom_control" };
	char buf[4096], *p;

	if (!r->enforced)
		return false;
	for (int i = 0; i < r->o.ncgroups; i++)
		for (size_t f = 0; f < 2; f++) {
			if (runfile_read_text(r->o.cgroups[i], files[f], buf, sizeof buf))
				continue;
			for (p = buf; (p = strstr(p, "oom_kill ")); p++)
				if ((p == buf || p[-1] == '\n') && strtoll(p + 9, NULL, 10) > 0)
					return true;
		}
	return false;
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
	if (ended_by)
		r->ended_by = ended_by;
}

/* Send the ladder's next signal; the last one (SIGKILL) is repeated until
 * everything is gone, catching processes forked during a sweep. */
static void ladder_step(struct runner *r)
{
	int last = r->step >= r->nladder - 1;

	signal_job(r, r->ladder[last ? r->nladder - 1 : r->step]);
	r->next_step = now_mono() + (last ? KILL_RESWEEP : r->o.grace);
	if (!last)
		r->step++;
}

/* Wait for every child that has exited. Once the main process is reaped,
 * ECHILD means the whole tree is gone: as a subreaper the runner inherits
 * every orphan of the job. */
static void reap(struct runner *r)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			if (p == r->pid) {
				r->status = st;
				r->reaped = true;
			}
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 && errno == ECHILD && r->reaped)
			r->gone = true;
		return;
	}
}

/* --- starting the job -------------------------------------------------- */

/* Close-on-exec for every inherited fd from lowfd on. */
static void cloexec_from(int lowfd)
{
	long max;

	if (close_range((unsigned)lowfd, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = lowfd; fd < max; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0)
			fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
}

/* Like a shell: 127 when the command is not there, 126 when it cannot run;
 * 1 when the directory is bad. */
static int child_exit_code(const struct child_err *ce)
{
	if (ce->stage == STAGE_CWD || ce->stage == STAGE_USER || ce->stage == STAGE_LIMIT)
		return 1;
	return ce->err == ENOENT ? 127 : 126;
}

static void child_fail(int errw, int stage, int err, int which)
{
	struct child_err ce = { stage, err, which };

	gf_write_all(errw, &ce, sizeof ce);
	_exit(child_exit_code(&ce));
}

/* Back to the default, by the system call (see ignored_signals). */
static void default_signal(int sig)
{
	struct kernel_sigaction sa = { 0 };

	syscall(SYS_rt_sigaction, sig, &sa, NULL, sizeof sa.mask);
}

/* In the forked child: become the job. Never returns. */
static void child_run(const struct runner *r, int slave, int errw)
{
	sigset_t none;
	int fd, which;

	for (int sig = 1; sig <= 64; sig++)
		if (ignored_signals & (1ull << (sig - 1)))
			default_signal(sig);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (r->o.pty) {
		setsid();
		ioctl(slave, TIOCSCTTY, 0);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
	} else {
		setpgid(0, 0);
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, 0);
		dup2(r->logfd, 1);
		dup2(r->logfd, 2);
	}
	/* The job is its owner's, for good; the directory is entered with
	 * their rights. */
	if (owner_become(&r->owner))
		child_fail(errw, STAGE_USER, errno, 0);
	if (chdir(r->o.cwd))
		child_fail(errw, STAGE_CWD, errno, 0);
	cloexec_from(3);
	/* Held: all is ready; the exec waits until the daemon has synced the
	 * commit that started the job. */
	if (r->holdfd >= 0 && !standby_released(r->holdfd))
		child_fail(errw, STAGE_HOLD, ECANCELED, 0);
	/* The submitter's limits, as the owner (RLIMIT_NPROC then counts the
	 * owner's processes, as the kernel does for theirs); the exec then
	 * starts under them (its stack's, its argument room). */
	if (gf_rlimits_apply(&r->limits, &which))
		child_fail(errw, STAGE_LIMIT, errno, which);
	environ = r->envp;	/* execvp searches the job's own PATH */
	gf_trace("exec", strtoll(r->o.job, NULL, 10));
	execvp(r->argv[0], r->argv);
	child_fail(errw, STAGE_EXEC, errno, 0);
}

struct child_args {
	const struct runner *r;
	int slave, errw;
};

static int child_main(void *arg)
{
	const struct child_args *a = arg;

	child_run(a->r, a->slave, a->errw);
	return 127;
}

/* The job's process, running child_run: sharing our memory where it can
 * (vmclone.c: no copy of our page tables, which on a virtual machine costs
 * as much as the rest of a start), else forked. Its pid, -1 (e set) when
 * it could not be started, -2 when it could not be put in its group. */
static pid_t start_child(const struct runner *r, int into, int slave, int errw, struct gf_err *e)
{
	static char stack[256 << 10] __attribute__((aligned(64)));
	struct child_args a = { r, slave, errw };
	char **ours = environ;
	long pid = gf_vmclone(into, child_main, &a, stack, sizeof stack);
	pid_t fpid;

	environ = ours;	/* the child set the job's on our memory before its exec */
	if (pid > 0)
		return (pid_t)pid;
	fpid = fork_into(into, e);
	if (fpid == 0)
		child_run(r, slave, errw);
	return fpid;
}

/* The log, appended to; a symbolic link or anything but a plain file
 * there is refused, not followed. A new one (log-new) gets the first free
 * name, and one other than the one given is told to the daemon in
 * RUNDIR/logseq before we announce ourselves (the daemon reads it when it
 * sees the announcement). What fails here is the job's error (start_job),
 * as any failure after the announcement: kept in r->log_err. */
static void open_log(struct runner *r)
{
	int seq = 0;

	r->log_failed = (r->o.uid >= 0 && owner_lookup(&r->owner, (uid_t)r->o.uid, (gid_t)r->o.gid, &r->log_err)) ||
			(r->logfd = owner_open_log(&r->owner, r->o.log, r->o.log_new, r->log_path,
						   sizeof r->log_path, &seq, &r->log_err)) < 0;
	if (!r->log_failed && seq && runfile_write_logseq_at(r->dirfd, seq))
		r->log_failed = gf_err_set(&r->log_err, "cannot write %s/logseq: %s", r->o.dir, strerror(errno)) != 0;
}

/* Fork the job. Returns -1 (e set) when it could not be started at all. */
static int start_job(struct runner *r, struct gf_err *e)
{
	int errp[2], slave = -1, into = -1;

	if (r->log_failed) {
		*e = r->log_err;
		goto fail_early;
	}
	if (read_argv(r, e) || read_limits(r, e) || join_cgroups(r, &into, e))
		goto fail_early;
	if (r->o.pty && open_pty(r, &slave, e))
		goto fail_early;
	if (pipe2(errp, O_CLOEXEC)) {
		gf_err_set(e, "pipe: %s", strerror(errno));
		goto fail;
	}
	r->start_real = now_real();
	r->start_mono = now_mono();
	r->pid = start_child(r, into, slave, errp[1], e);
	close(errp[1]);
	if (r->holdfd >= 0)
		close(r->holdfd);	/* the child waits on it */
	r->holdfd = -1;
	if (into >= 0)
		close(into);
	into = -1;
	if (r->pid < 0) {
		if (r->pid == -1)
			gf_err_set(e, "cannot start the job: fork: %s", strerror(errno));
		close(errp[0]);
		goto fail;
	}
	/* Keep a slave open: then the master never reports EIO while the
	 * kernel may still be moving the job's last bytes across, and we stop
	 * reading when the pty goes quiet after the job is gone instead. */
	r->slave_keep = slave;
	if (!r->o.pty)
		setpgid(r->pid, r->pid);	/* also here, so it holds before we signal */
	r->errfd = errp[0];
	fcntl(r->errfd, F_SETFL, O_NONBLOCK);
	if (r->o.time_limit > 0)
		r->deadline = r->start_mono + r->o.time_limit;
	return 0;
fail:
	if (slave >= 0)
		close(slave);
	close_master(r);
fail_early:
	if (into >= 0)
		close(into);
	return -1;
}

/* --- supervising ------------------------------------------------------- */

static void on_signals(struct runner *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) && !r->reaped)
			start_ladder(r, cancel_ladder, 3, "cancel");
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

/* Milliseconds until the next thing due, -1 when nothing is. */
static int next_timeout(const struct runner *r, double now)
{
	double due = INFINITY;

	if (r->deadline && !r->ladder && !r->reaped)
		due = r->deadline;
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

static void supervise(struct runner *r)
{
	for (;;) {
		struct pollfd fds[5 + ATTACH_MAX_FDS];
		int n = 0, isig, ierr = -1, imaster = -1, iin = -1, iout = -1, iatt = 0, natt = 0;
		double now;

		reap(r);
		now = now_mono();
		if (r->deadline && !r->ladder && !r->reaped && now >= r->deadline)
			start_ladder(r, cancel_ladder, 3, "timeout");
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

/* --- the result -------------------------------------------------------- */

static void child_error_text(const struct runner *r, char *buf, size_t size)
{
	if (r->cerr.stage == STAGE_CWD)
		snprintf(buf, size, "cannot change directory to '%s'%s%.64s: %s", r->o.cwd,
			 r->owner.set ? " as " : "", r->owner.set ? r->owner.name : "", strerror(r->cerr.err));
	else if (r->cerr.stage == STAGE_USER)
		snprintf(buf, size, "cannot run as %.64s: %s", r->owner.name, strerror(r->cerr.err));
	else if (r->cerr.stage == STAGE_LIMIT)
		snprintf(buf, size, "cannot set the job's %s limit: %s",
			 gf_rlimit_name(r->cerr.which >= 0 && r->cerr.which < GF_NRLIMITS ? r->cerr.which : 0),
			 strerror(r->cerr.err));
	else
		snprintf(buf, size, "cannot run '%s': %s", r->argv[0], strerror(r->cerr.err));
}

/* An error the job's log should show too. */
static void log_error(struct runner *r, const char *msg)
{
	char line[sizeof ((struct job_result *)0)->error + 32];
	int n = snprintf(line, sizeof line, "gflow-runner: %s\n", msg);

	if (r->logfd >= 0)
		gf_write_all(r->logfd, line, (size_t)n);
	if (r->o.pty)
		pane_write(r, line, (size_t)n);
	attach_output(r->attach, line, (size_t)n);
}

static void fill_result(struct runner *r, struct job_result *res)
{
	struct rusage ru;

	res->start = r->start_real;
	res->end = now_real();
	snprintf(res->ended_by, sizeof res->ended_by, "%s", r->ended_by);
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		res->peak_rss_kb = ru.ru_maxrss;
	res->memory_enforced = r->enforced;
	res->oom = cg_oom(r);
	if (r->have_cerr) {
		child_error_text(r, res->error, sizeof res->error);
		log_error(r, res->error);
		snprintf(res->ended_by, sizeof res->ended_by, "error");
		res->exited = 1;
		res->exit_code = child_exit_code(&r->cerr);
	} else if (WIFEXITED(r->status)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(r->status);
	} else if (WIFSIGNALED(r->status))
		res->signal = WTERMSIG(r->status);
}

static void runner_free(struct runner *r)
{
	close_master(r);
	outbuf_free(&r->to_pane);
	if (r->logfd >= 0)
		close(r->logfd);
	if (r->sigfd >= 0)
		close(r->sigfd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->envp);
	free(r->env_blob);
	if (r->argv_blob)
		free(r->argv);
	free(r->argv_blob);
	free(r->spec);
	free(r->spec_blob);
	for (size_t i = 0; r->argv_owned && i < r->nargv; i++)
		free(r->argv_owned[i]);
	free(r->argv_owned);
}

/* The run directory is gone (removed under us): make it again, so the
 * result still reaches the daemon. Only the last component is made; a
 * link planted in its place is not followed. */
static int remake_run_dir(struct runner *r)
{
	char parent[PATH_MAX], *slash;
	int pfd, fd;

	snprintf(parent, sizeof parent, "%s", r->o.dir);
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return -1;
	*slash = '\0';
	pfd = runfile_open_dir(parent[0] ? parent : "/", 0);
	if (pfd < 0)
		return -1;
	if (mkdirat(pfd, slash + 1, 0700) && errno != EEXIST) {
		close(pfd);
		return -1;
	}
	close(pfd);
	fd = runfile_open_dir(r->o.dir, 1);
	if (fd < 0)
		return -1;
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->dirfd = fd;
	return 0;
}

/* The exit status is never given up: a result that cannot be written (a
 * full disk, the directory removed) is tried again, every second, until it
 * can be. */
static void write_result(struct runner *r, const struct job_result *res)
{
	double wait = 0.1;
	int said = 0;
	struct gf_err e;

	for (;;) {
		struct stat st;

		/* A directory removed under us still has our fd: check the name. */
		if ((fstat(r->dirfd, &st) || st.st_nlink == 0) && remake_run_dir(r) == 0)
			continue;
		if (runfile_write_result_at(r->dirfd, r->o.dir, res, &e) == 0)
			return;
		if (errno == ENOENT && remake_run_dir(r) == 0)
			continue;
		if (!said++)
			say(r, "job %s: %s (trying again until it can be written)",
				r->o.job, e.msg);
		usleep((useconds_t)(wait * 1e6));
		if (wait < 1)	/* at most a second after there is room again */
			wait *= 2;
	}
}

/* A held start the daemon gave up (it stopped before the commit that
 * started the job was on disk): the job never ran. Our announcement goes,
 * so a daemon that finds the job recorded as started queues it again. */
static void give_up(struct runner *r)
{
	unlinkat(r->dirfd, "runner", 0);
	say(r, "job %s: the daemon stopped before this start was on disk; not started", r->o.job);
}

/* A standby's: what follows the request on the pipe (the job's
 * environment and command, as the options say) and, held, the pipe to
 * wait on before the exec. Nonzero: the pipe ended first (the daemon
 * stopped): nothing is to be done. */
static int take_the_rest(struct runner *r, struct standby_pipe *p)
{
	int go;

	if ((r->o.env_bytes >= 0 && standby_take(p, (size_t)r->o.env_bytes, &r->env_blob)) ||
	    (r->o.argv_bytes >= 0 && standby_take(p, (size_t)r->o.argv_bytes, &r->argv_blob)) ||
	    (r->o.spec_bytes >= 0 && standby_take(p, (size_t)r->o.spec_bytes, &r->spec_blob)))
		return -1;
	if (!r->o.hold)
		return 0;
	go = standby_let_go(p);
	if (go == 0)
		return -1;
	if (go < 0) {
		r->holdfd = p->fd;	/* the child waits on it */
		p->fd = -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct runner r = { .sigfd = -1, .logfd = -1, .errfd = -1, .master = -1, .slave_keep = -1, .dirfd = -1,
			    .holdfd = -1, .ahead = -1, .pane_flags = { -1, -1 },
			    .ended_by = "exit" };
	struct job_result res = { 0 };
	struct gf_err e;
	uint64_t started = gf_trace_now();	/* the start-latency trace (trace.h) */
	char **request = NULL;
	struct standby_pipe pipe = { .fd = -1 };
	bool piped = false;	/* a standby of the daemon's pipe: our output is not a pane's */
	int bad;

	ensure_std_fds();
	read_ignored_signals();
	if (argc >= 2 && !strcmp(argv[1], "--standby")) {
		/* Started ahead: the options come when there is a job. */
		char **own = argv;
		const char *fifo = NULL;
		pid_t daemon = 0;
		int in = 0;

		for (int i = 2; i + 1 < argc; i++)
			if (!strcmp(argv[i], "--ahead"))
				r.ahead = announce_ahead(argv[++i]);
			else if (!strcmp(argv[i], "--request"))
				fifo = argv[++i];
			else if (!strcmp(argv[i], "--daemon"))
				daemon = (pid_t)atoi(argv[++i]);
		piped = !fifo;
		if (fifo && (in = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
			fprintf(stderr, "gflow-runner: --standby: cannot open %s: %s\n", fifo, strerror(errno));
			return 2;
		}
		bad = standby_wait(in, daemon, argv[0], &argc, &request, &pipe);
		if (bad < 0)
			fprintf(stderr, "gflow-runner: --standby: cannot read the job's options on %s: %s\n",
				fifo ? fifo : "stdin", strerror(errno));
		if (bad)
			return bad > 0 ? 0 : 2;
		argv = request;
		started = gf_trace_now();
		bad = parse_opts(argc, argv, &r.o, &e);
		if (!bad && take_the_rest(&r, &pipe)) {
			standby_pipe_close(&pipe);	/* given up before we began */
			runner_free(&r);
			free(request);
			return 0;
		}
		standby_pipe_close(&pipe);
		if (!bad)
			standby_retitle(own, r.o.job);
	} else if (!(bad = parse_opts(argc, argv, &r.o, &e)) &&
		   (r.o.hold || r.o.env_bytes >= 0 || r.o.argv_bytes >= 0 || r.o.spec_bytes >= 0))
		bad = gf_err_set(&e, "%s: only for a standby runner (--standby), which reads it from its stdin",
				 r.o.hold		? "--hold"
				 : r.o.env_bytes >= 0	? "--env-bytes"
				 : r.o.argv_bytes >= 0 ? "--argv-bytes"
							: "--spec-bytes");
	/* Traced only for a personal daemon (the system one never passes it). */
	if (!bad && r.o.uid < 0 && gf_trace_open())
		gf_trace_at(started, "runner_start", strtoll(r.o.job, NULL, 10));
	r.output_due = piped;
	if (bad || open_run_dir(&r, &e) || (piped && r.o.pty && own_output(&r, &e)) || read_env(&r, &e) ||
	    read_spec(&r, &e) || setup_signals(&r, &e) || become_subreaper(&e) || (open_log(&r), announce(&r, &e))) {
		say(&r, "%s", e.msg);
		runner_free(&r);
		free(request);
		return 2;
	}
	/* From here on, every way out writes a result. */
	if (!r.o.pty || !isatty(0))
		setsid();	/* no pane: a session of our own (fails harmlessly when we lead one) */
	if (start_job(&r, &e) == 0) {
		if (r.o.pty)
			pane_setup(&r);
		if (r.o.attach)
			offer_attach(&r);
		supervise(&r);
		if (r.have_cerr && r.cerr.stage == STAGE_HOLD) {
			give_up(&r);
			runner_free(&r);
			free(request);
			return 0;
		}
		fill_result(&r, &res);
		pane_flush_final(&r);
		pane_restore(&r);
		attach_close(r.attach, 0.5);	/* viewers see the end, then EOF */
		r.attach = NULL;
	} else {
		res.start = res.end = now_real();
		res.exited = 1;
		res.exit_code = 1;
		snprintf(res.ended_by, sizeof res.ended_by, "error");
		snprintf(res.error, sizeof res.error, "%.*s", (int)sizeof res.error - 1, e.msg);
		say(&r, "job %s: %s", r.o.job, res.error);
		log_error(&r, res.error);
	}
	write_result(&r, &res);
	runner_free(&r);
	free(request);
	return 0;
}
