/* child.c — the start of the child: the job's log (opened as its owner),
 * its cgroups (the job born inside them: clone3(CLONE_INTO_CGROUP), or we
 * move in first), and its process: vmclone.c's shared-memory clone or a
 * fork, which in the child sets the signals we ignore back to the default,
 * takes the job's terminal or log, becomes the owner, enters the job's
 * directory, waits for the daemon's word when held, takes the job's limits
 * and execs the command. What fails in the child comes back on a
 * close-on-exec pipe (struct child_err) for supervise.c. It calls down
 * into pane.c (the pty), owner.c, standby.c, vmclone.c, opts.c and the
 * leaves. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clone3.h"
#include "err.h"
#include "owner.h"
#include "runfile.h"
#include "standby.h"
#include "trace.h"
#include "vmclone.h"
#include "runner.h"

extern char **environ;

/* --- signals ----------------------------------------------------------- */

struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
	unsigned long spare[4];	/* room for any architecture's layout */
};

/* Read the signals we were started ignoring (r->ignored_signals), by the
 * system call: glibc hides the ones it reserves (32, 33). */
void read_ignored_signals(struct runner *r)
{
	for (int sig = 1; sig < NSIG && sig <= 64; sig++) {
		struct kernel_sigaction old;

		if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) == 0 && old.handler == (void *)SIG_IGN)
			r->ignored_signals |= 1ull << (sig - 1);
	}
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

		/* --make-cgroup: the daemon left the v2 group to us (it saw
		 * none at its name). One there now is not ours to use. Made
		 * just now, it holds no one and no limit (the daemon sets none
		 * in it): the job is born into it, nothing to read. */
		if (i == 0 && r->o.make_cgroup) {
			if (mkdir(cg, 0755))
				return gf_err_set(e, "cannot make the job's cgroup %s: %s", cg, strerror(errno));
			if ((*into = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
				continue;
		}

		snprintf(path, sizeof path, "%s/cgroup.controllers", cg);
		if (member_of(cg, pid))
			;
		else if (*into < 0 && access(path, F_OK) == 0)
			*into = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else {
			snprintf(path, sizeof path, "%s/cgroup.procs", cg);
			fd = open(path, O_WRONLY | O_CLOEXEC);
			r->moved = true;
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

void leave_cgroups(const struct runner *r)
{
	if (r->moved)
		return;
	for (int i = 0; i < r->o.ncgroups; i++)
		rmdir(r->o.cgroups[i]);	/* EBUSY: groups the job made below it, or us in it */
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

/* --- starting the job -------------------------------------------------- */

/* Close-on-exec for every inherited fd from lowfd on. */
static void cloexec_from(int lowfd)
{
	long max;

	/* the system call (musl has no wrapper); CLOSE_RANGE_CLOEXEC is 4 */
	if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 4U) == 0)
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
int child_exit_code(const struct child_err *ce)
{
	if (ce->stage == STAGE_CWD || ce->stage == STAGE_USER || ce->stage == STAGE_LIMIT || ce->stage == STAGE_CPUS)
		return 1;
	return ce->err == ENOENT ? 127 : 126;
}

static void child_fail(int errw, int stage, int err, int which)
{
	struct child_err ce = { stage, err, which };

	gf_write_all(errw, &ce, sizeof ce);
	_exit(child_exit_code(&ce));
}

/* Back to the default, by the system call (see struct runner's ignored_signals). */
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
		if (r->ignored_signals & (1ull << (sig - 1)))
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
	/* [daemon] constrain_cpus: the CPUs the daemon gave it. */
	if (r->cpus && sched_setaffinity(0, sizeof r->cpuset, &r->cpuset))
		child_fail(errw, STAGE_CPUS, errno, 0);
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
	long pid = gf_vmclone(into, 0, child_main, &a, stack, sizeof stack);
	pid_t fpid;

	environ = ours;	/* the child set the job's on our memory before its exec */
	if (pid > 0)
		return (pid_t)pid;
	fpid = fork_into(into, e);
	if (fpid == 0)
		child_run(r, slave, errw);
	return fpid;
}

/* The spare for this log: one made in the log's own directory. */
static int *spare_for(struct runner *r)
{
	size_t n = strlen(r->spare_dir);

	return r->spare_log >= 0 && n && !strncmp(r->o.log, r->spare_dir, n) && r->o.log[n] == '/' &&
			       !strchr(r->o.log + n + 1, '/')
		       ? &r->spare_log
		       : NULL;
}

/* After a job whose log we made new (a personal daemon's: no owner to
 * become), an unnamed file in that directory for the next job's log, made
 * while no job waits for us: a new inode is the slow part of making a log
 * (owner_open_log links this one at its name instead). */
void spare_log_make(struct runner *r)
{
	char *slash;

	if (r->spare_log >= 0 || !r->o.log_new || r->o.uid >= 0 || r->log_failed ||
	    snprintf(r->spare_dir, sizeof r->spare_dir, "%s", r->log_path) >= (int)sizeof r->spare_dir ||
	    !(slash = strrchr(r->spare_dir, '/')) || slash == r->spare_dir) {
		if (r->spare_log < 0)
			r->spare_dir[0] = '\0';
		return;
	}
	*slash = '\0';
	r->spare_log = open(r->spare_dir, O_TMPFILE | O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* The log, appended to; a symbolic link or anything but a plain file
 * there is refused, not followed. A new one (log-new) gets the first free
 * name, and one other than the one given is told to the daemon in
 * RUNDIR/logseq before we announce ourselves (the daemon reads it when it
 * sees the announcement). What fails here is the job's error (start_job),
 * as any failure after the announcement: kept in r->log_err. */
void open_log(struct runner *r)
{
	int seq = 0;

	r->log_failed = (r->o.uid >= 0 && owner_lookup(&r->owner, (uid_t)r->o.uid, (gid_t)r->o.gid, r->spec_owner,
						       r->spec_groups, &r->log_err)) ||
			(r->logfd = owner_open_log(&r->owner, r->o.log, r->o.log_new, spare_for(r), r->log_path,
						   sizeof r->log_path, &seq, &r->log_err)) < 0;
	if (!r->log_failed && seq && runfile_write_logseq_at(r->dirfd, seq))
		r->log_failed = gf_err_set(&r->log_err, "cannot write %s/logseq: %s", r->o.dir, strerror(errno)) != 0;
}

/* Fork the job. Returns -1 (e set) when it could not be started at all. */
int start_job(struct runner *r, struct gf_err *e)
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
