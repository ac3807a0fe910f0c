/* spawn.c — the daemon's forks: runners (as our children, or born in a
 * cgroup), detached or waited-for commands, a child with pipes, a tmux
 * client that makes a session, and the checks run as a job's owner. */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clone3.h"
#include "runfile.h"
#include "spawn.h"
#include "vmclone.h"

extern char **environ;

/* In a child: close every descriptor from `from` up, however many the
 * daemon has open (connections may be numbered past 1024). */
static void close_fds_from(int from)
{
	if (close_range((unsigned)from, ~0U, 0) < 0)
		for (int i = from; i < 65536; i++)
			close(i);
}

/* In the child: stdin from /dev/null, stdout and stderr to out_fd (-1:
 * /dev/null), nothing else open, then exec. report_fd (-1: none), a pipe
 * of the parent's, is kept at 3 (close-on-exec: it reads EOF at the exec)
 * and told the exec's errno when it fails. */
static void child_exec(char *const argv[], int out_fd, int report_fd)
{
	int fd = open("/dev/null", O_RDWR), err;

	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		if (out_fd < 0)
			out_fd = fd;
	}
	if (out_fd >= 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
	}
	if (report_fd >= 0 && report_fd != 3 && dup3(report_fd, 3, O_CLOEXEC) < 0)
		report_fd = -1;
	close_fds_from(report_fd >= 0 ? 4 : 3);
	execv(argv[0], argv);
	err = errno;
	if (report_fd >= 0)
		(void)!write(3, &err, sizeof err);
	/* Only async-signal-safe calls here: the daemon has a poller thread. */
	(void)!write(2, "gflowd: cannot run ", 19);
	(void)!write(2, argv[0], strlen(argv[0]));
	(void)!write(2, "\n", 1);
	_exit(127);
}

/* The child of a spawn sharing our memory (vmclone.c), on a stack of its
 * own, until its exec: only system calls. Its handlers are the default
 * ones already (CLONE_CLEAR_SIGHAND) and its signals blocked until the
 * exec. A failed exec leaves its errno in err for the parent. */
struct spawn_child {
	char *const *argv;
	int in_fd, out_fd;
	volatile int err;
};

static int spawn_entry(void *arg)
{
	struct spawn_child *c = arg;
	sigset_t none;
	int null = -1;

	if (setsid() < 0 ||
	    ((c->in_fd < 0 || c->out_fd < 0) && (null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) ||
	    dup2(c->in_fd >= 0 ? c->in_fd : null, 0) < 0 || dup2(c->out_fd >= 0 ? c->out_fd : null, 1) < 0 ||
	    dup2(1, 2) < 0)
		goto fail;
	close_fds_from(3);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(c->argv[0], c->argv, environ);
fail:
	c->err = errno ? errno : EINVAL;
	_exit(127);
}

/* Start argv as a child of ours in a session of its own, without a copy of
 * the daemon's memory (vfork-like: a fork of it costs a millisecond or
 * more): stdin in_fd (-1: /dev/null), stdout and stderr out_fd (-1:
 * /dev/null), nothing else open; born in the cgroup v2 group open at
 * cgroup_fd (-1: ours). 0; -1 with errno when the clone failed, -2 with
 * errno when the exec did; 1 where the kernel cannot (before Linux 5.5,
 * other machines, the sanitizers): then posix_spawn or a fork does it.
 * Signals are blocked meanwhile, so the child begins with them blocked and
 * no handler of ours ever runs in it. */
static int vm_spawn(char *const argv[], int in_fd, int out_fd, int cgroup_fd, pid_t *pid)
{
	struct spawn_child c = { argv, in_fd, out_fd, 0 };
	char stack[32768] __attribute__((aligned(16)));
	sigset_t all, old;
	long rc;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = gf_vmclone(cgroup_fd, GF_VMCLONE_CLEAR_SIGHAND, spawn_entry, &c, stack, sizeof stack);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		errno = err;
		return err == ENOSYS || err == EINVAL || err == E2BIG ? 1 : -1;
	}
	if (c.err) {
		waitpid((pid_t)rc, NULL, 0);
		errno = c.err;
		return -2;
	}
	*pid = (pid_t)rc;
	return 0;
}

/* The same with posix_spawn where vm_spawn cannot (it looks at and resets
 * each of the 64 signals' handlers in the child, 128 system calls). */
static int spawn_child_io(char *const argv[], int in_fd, int out_fd, pid_t *pid, struct gf_err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int rc = vm_spawn(argv, in_fd, out_fd, -1, pid);

	if (rc <= 0)
		return rc ? gf_err_set(e, "cannot run %s: %s", argv[0], strerror(errno)) : 0;	/* clone or exec */
	sigemptyset(&none);
	if (posix_spawn_file_actions_init(&fa))
		return gf_err_set(e, "posix_spawn: out of memory");
	if (posix_spawnattr_init(&at)) {
		posix_spawn_file_actions_destroy(&fa);
		return gf_err_set(e, "posix_spawn: out of memory");
	}
	rc = in_fd >= 0 ? posix_spawn_file_actions_adddup2(&fa, in_fd, 0)
			: posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, out_fd >= 0 ? out_fd : 0, 1);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (!rc)
		rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (!rc)
		rc = posix_spawn(pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return gf_err_set(e, "cannot run %s: %s", argv[0], strerror(rc));
	return 0;
}

static int spawn_child(char *const argv[], int out_fd, pid_t *pid, struct gf_err *e)
{
	return spawn_child_io(argv, -1, out_fd, pid, e);
}

int exec_spawn_piped(char *const argv[], int *to_child, int *from_child, pid_t *pid, struct gf_err *e)
{
	int in[2], out[2] = { -1, 2 }, rc;

	if (pipe2(in, O_CLOEXEC))
		return gf_err_set(e, "pipe: %s", strerror(errno));
	if (from_child && pipe2(out, O_CLOEXEC)) {
		close(in[0]), close(in[1]);
		return gf_err_set(e, "pipe: %s", strerror(errno));
	}
	rc = spawn_child_io(argv, in[0], out[1], pid, e);
	close(in[0]);
	if (from_child)
		close(out[1]);
	if (rc) {
		close(in[1]);
		if (from_child)
			close(out[0]);
		return -1;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	*to_child = in[1];
	if (from_child) {
		fcntl(out[0], F_SETFL, O_NONBLOCK);
		*from_child = out[0];
	}
	return 0;
}

int exec_spawn_socket(char *const argv[], int *sock, pid_t *pid, struct gf_err *e)
{
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return gf_err_set(e, "socketpair: %s", strerror(errno));
	rc = spawn_child_io(argv, sv[1], 2, pid, e);
	close(sv[1]);
	if (rc) {
		close(sv[0]);
		return -1;
	}
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	*sock = sv[0];
	return 0;
}

/* A runner: it stays our child, exec_reap() collects it when it exits. */
int spawn_runner(char *const argv[], int out_fd, struct gf_err *e)
{
	pid_t pid;

	return spawn_child(argv, out_fd, &pid, e);
}

/* Start argv in a session of its own. With wait_for_exit, wait for it;
 * else detach it fully (a grandchild, never our zombie). */
static int spawn(char *const argv[], int out_fd, bool wait_for_exit, int *status, struct gf_err *e)
{
	pid_t pid;
	int st;

	if (wait_for_exit) {
		if (spawn_child(argv, out_fd, &pid, e))
			return -1;
	} else
		pid = fork();
	if (pid < 0)
		return gf_err_set(e, "fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		if (!wait_for_exit) {
			pid_t g = fork();

			if (g != 0)
				_exit(g < 0 ? 1 : 0);
		}
		child_exec(argv, out_fd, -1);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return gf_err_set(e, "waitpid: %s", strerror(errno));
	if (status)
		*status = st;
	if (!wait_for_exit && (!WIFEXITED(st) || WEXITSTATUS(st)))
		return gf_err_set(e, "could not start %s", argv[0]);
	return 0;
}

/* Start a runner born inside the job's cgroup v2 group (clone3 with
 * CLONE_INTO_CGROUP): it need not move itself in, and a move costs the
 * kernel an RCU grace period (~10 ms here) whenever no move happened in the
 * last few milliseconds, which is every start of an idle daemon. The child
 * shares the daemon's memory until its exec (vm_spawn); where it cannot,
 * it is a fork of the daemon (threads: only system calls until the exec).
 * Returns 1 when the kernel cannot do it (then spawn_runner does). */
int spawn_runner_into(char *const argv[], int out_fd, const char *cgroup, struct gf_err *e)
{
	sigset_t none;
	pid_t vpid;
	long pid;
	int cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc, ep[2];

	if (cg < 0)
		return 1;
	if ((rc = vm_spawn(argv, -1, out_fd, cg, &vpid)) <= 0) {
		int err = errno;

		close(cg);
		if (rc == 0)
			return 0;
		if (rc == -1 && (err == EPERM || err == EACCES || err == EBUSY))
			return 1;	/* not into this group: the runner moves itself in */
		return gf_err_set(e, "cannot %s %s: %s", rc == -2 ? "run" : "start", argv[0], strerror(err));
	}
	sigemptyset(&none);
	if (pipe2(ep, O_CLOEXEC)) {
		close(cg);
		return gf_err_set(e, "pipe: %s", strerror(errno));
	}
	pid = gf_fork_into_cgroup(cg);
	if (pid == 0) {
		setsid();
		sigprocmask(SIG_SETMASK, &none, NULL);
		child_exec(argv, out_fd, ep[1]);
	}
	close(ep[1]);
	close(cg);
	if (pid > 0) {
		/* EOF at its exec; its errno when the exec failed, as vm_spawn's */
		int err;
		ssize_t n;

		do
			n = read(ep[0], &err, sizeof err);
		while (n < 0 && errno == EINTR);
		close(ep[0]);
		if (n != (ssize_t)sizeof err)
			return 0;
		waitpid((pid_t)pid, NULL, 0);
		return gf_err_set(e, "cannot run %s: %s", argv[0], strerror(err));
	}
	close(ep[0]);
	if (gf_clone3_unsupported(errno) || errno == EPERM || errno == EACCES || errno == EBUSY)
		return 1;	/* or not into this group: the runner moves itself in */
	return gf_err_set(e, "cannot start %s: clone3: %s", argv[0], strerror(errno));
}

/* The runner will move itself into a v1 group (v2 ones the job is born
 * in: see exec_start_job), and the first move after a quiet spell waits for an RCU
 * grace period (~10 ms here). A short-lived child of ours makes a move
 * first, into the same group, while the runner is being started: then the
 * kernel's grace period has passed by the time the runner moves, and its
 * move is quick. The child is in the job's group for a moment and exits;
 * nothing waits for it (exec_reap collects it). Only system calls in it. */
void spawn_prime_moves(const char *cgroup)
{
	char path[GF_PATH_MAX + 16], num[24];
	pid_t pid;

	if (gf_pathf(path, sizeof path, "%s/cgroup.procs", cgroup))
		return;
	pid = fork();
	if (pid == 0) {
		unsigned long v = (unsigned long)getpid();
		size_t n = sizeof num;
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		do
			num[--n] = (char)('0' + v % 10);
		while ((v /= 10) && n > 0);
		if (fd >= 0)
			(void)!write(fd, num + n, sizeof num - n);
		_exit(0);
	}
}

/* Runners are our children (spawn_runner): collect those that exited. Every
 * other child of the daemon is waited for where it was started, by the
 * loop's own thread, so none is ever pending here. */
void exec_reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int exec_spawn(char *const argv[], const char *out_path, bool wait_for_exit, int *status,
	       struct gf_err *e)
{
	int fd = -1, rc;

	if (out_path && (fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return gf_err_set(e, "cannot open %s: %s", out_path, strerror(errno));
	rc = spawn(argv, fd, wait_for_exit, status, e);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Run argv to its end; what it printed (stdout and stderr, the last
 * size-1 bytes) lands in out. */
static int run_capture(char *const argv[], char *out, size_t size, int *status, struct gf_err *e)
{
	int p[2], rc;
	size_t len = 0;

	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC))
		return gf_err_set(e, "pipe: %s", strerror(errno));
	/* The child's copy is dup'ed onto 1 and 2 before exec; ours reads. */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	rc = spawn(argv, p[1], true, status, e);
	close(p[1]);
	for (;;) {
		char buf[512];
		ssize_t n = read(p[0], buf, sizeof buf);

		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (len + 1 == size) {
				memmove(out, out + 1, len - 1);
				len--;
			}
			out[len++] = buf[i];
		}
	}
	close(p[0]);
	out[len] = '\0';
	return rc;
}

/* ---- the owner of a job (system mode) ----------------------------------- */

struct owner_entry {
	char name[256], home[GF_PATH_MAX];
	gid_t gid;
	gid_t groups[1024];
	int ngroups;
};

static int owner_entry(uid_t uid, struct owner_entry *o, struct gf_err *e)
{
	struct passwd pw, *res = NULL;
	char buf[16384];

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) || !res)
		return gf_err_set(e, "uid %u is not a user of this machine", (unsigned)uid);
	snprintf(o->name, sizeof o->name, "%s", res->pw_name);
	snprintf(o->home, sizeof o->home, "%s", res->pw_dir);
	o->gid = res->pw_gid;
	o->ngroups = (int)(sizeof o->groups / sizeof o->groups[0]);
	if (getgrouplist(o->name, o->gid, o->groups, &o->ngroups) < 0)
		return gf_err_set(e, "user %s is in too many groups", o->name);
	return 0;
}

int spawn_owner_ids(uid_t uid, gid_t *gid, char *name, size_t nsize, char *groups, size_t gsize, struct gf_err *e)
{
	struct owner_entry o;
	size_t at = 0;

	if (owner_entry(uid, &o, e))
		return -1;
	*gid = o.gid;
	snprintf(name, nsize, "%s", o.name);
	groups[0] = '\0';
	for (int i = 0; i < o.ngroups; i++) {
		int n = snprintf(groups + at, gsize - at, "%s%u", i ? "," : "", (unsigned)o.groups[i]);

		if (n < 0 || (size_t)n >= gsize - at)
			return gf_err_set(e, "user %s is in too many groups", o.name);
		at += (size_t)n;
	}
	return 0;
}

int exec_owner_home(uid_t uid, char *home, size_t size, struct gf_err *e)
{
	struct owner_entry o;

	if (owner_entry(uid, &o, e))
		return -1;
	snprintf(home, size, "%s", o.home);
	return 0;
}

int exec_check_owner(uid_t uid, const char *cwd, const char *script, struct gf_err *e)
{
	struct owner_entry o;
	int p[2], st, got[2] = { 0, 0 };
	pid_t pid;

	if (owner_entry(uid, &o, e))
		return -1;
	if (pipe2(p, O_CLOEXEC))
		return gf_err_set(e, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return gf_err_set(e, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* Only system calls here: the daemon has a poller thread. */
		int r[2] = { 0, 0 }, fd;
		struct stat sb;

		/* Nothing of the daemon's stays open here, its lock least of all:
		 * a daemon killed meanwhile must be restartable at once. */
		if (dup2(p[1], 3) == 3)
			p[1] = 3;
		close_fds_from(4);
		if (setgroups((size_t)o.ngroups, o.groups) || setresgid(o.gid, o.gid, o.gid) ||
		    setresuid(uid, uid, uid))
			r[0] = 1, r[1] = errno;
		else if (chdir(cwd))
			r[0] = 2, r[1] = errno;
		/* Never blocks (a FIFO would hold the daemon here): a script is a
		 * regular file the owner may read. */
		else if (script && (fd = open(script, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
			r[0] = 3, r[1] = errno;
		else if (script && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)))
			r[0] = 4, r[1] = 0;
		(void)!write(p[1], r, sizeof r);
		_exit(0);
	}
	close(p[1]);
	while (read(p[0], got, sizeof got) < 0 && errno == EINTR)
		;
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got[0] == 1)
		return gf_err_set(e, "cannot act as %s to check the submission: %s", o.name, strerror(got[1]));
	if (got[0] == 2)
		return gf_err_set(e, "%s cannot enter the working directory %s: %s", o.name, cwd, strerror(got[1]));
	if (got[0] == 3)
		return gf_err_set(e, "%s cannot read the script %s: %s", o.name, script, strerror(got[1]));
	if (got[0] == 4)
		return gf_err_set(e, "the script %s is not a regular file", script);
	return 0;
}

int exec_tmux_client(const char *tmux, const char *sock, const char *session, char *const words[],
		     size_t nwords, struct gf_err *e)
{
	char target[80], out[1024];
	char *has[] = { (char *)tmux, "-S", (char *)sock, "has-session", "-t", target, NULL };
	struct argv a = { .n = 0 };
	int status = 0, rc = -1;

	snprintf(target, sizeof target, "=%s", session);
	arg(&a, tmux);
	arg(&a, "-f");
	arg(&a, "/dev/null");
	arg(&a, "-S");
	arg(&a, sock);
	for (size_t i = 0; i < nwords; i++)
		arg(&a, words[i]);
	arg(&a, ";");
	arg(&a, "set-option");
	arg(&a, "-s");
	arg(&a, "exit-empty");
	arg(&a, "off");
	for (int attempt = 0; attempt < (session ? 3 : 1) && rc; attempt++) {
		if (run_capture(a.v, out, sizeof out, &status, e))
			return -1;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			rc = 0;
		else if (session && spawn(has, -1, true, &status, e) == 0 && WIFEXITED(status) &&
			 WEXITSTATUS(status) == 0)
			rc = 0;	/* it was made, whatever the client said */
		else if (session)
			usleep(20000);
	}
	if (rc) {
		out[strcspn(out, "\n")] = '\0';
		return gf_err_set(e, "tmux %s failed: %s", nwords ? words[0] : "", out[0] ? out : "(it said nothing)");
	}
	return 0;
}

