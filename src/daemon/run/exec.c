/* exec.c — starting processes: the only file in the daemon that forks.
 *
 * A job is started by making its run directory, log and lists (rundir.c)
 * and its cgroups (track.c), and launching `gflow-runner` for it: handed
 * to the standby runner when one waits (standby.c), else as the command of
 * a new detached session on gflow's own tmux server or as a detached
 * process of its own. Under the system daemon a tmux-executor job gets no
 * tmux (root's server would be out of its owner's reach): its runner
 * offers the job's terminal on an attach socket, <runtime dir>/attach/
 * <id>.sock, instead. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clone3.h"
#include "runfile.h"
#include "trace.h"

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
 * /dev/null), nothing else open, then exec. */
static void child_exec(char *const argv[], int out_fd)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		if (out_fd < 0)
			out_fd = fd;
	}
	if (out_fd >= 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
	}
	close_fds_from(3);
	execv(argv[0], argv);
	/* Only async-signal-safe calls here: the daemon has a poller thread. */
	(void)!write(2, "gflowd: cannot run ", 19);
	(void)!write(2, argv[0], strlen(argv[0]));
	(void)!write(2, "\n", 1);
	_exit(127);
}

/* Start argv as a child of ours in a session of its own, with posix_spawn
 * (vfork-like: the daemon's memory is neither copied nor torn down, which a
 * fork of it costs a millisecond or more). stdin is /dev/null, stdout and
 * stderr out_fd (-1: /dev/null), nothing else open. */
static int spawn_child_io(char *const argv[], int in_fd, int out_fd, pid_t *pid, struct gf_err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int rc;

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

/* A runner: it stays our child, exec_reap() collects it when it exits. */
static int spawn_runner(char *const argv[], int out_fd, struct gf_err *e)
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
		child_exec(argv, out_fd);
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
 * is a fork of the daemon (threads: only system calls until the exec).
 * Returns 1 when the kernel cannot do it (then spawn_runner does). */
static int spawn_runner_into(char *const argv[], int out_fd, const char *cgroup, struct gf_err *e)
{
	sigset_t none;
	long pid;
	int cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (cg < 0)
		return 1;
	sigemptyset(&none);
	pid = gf_fork_into_cgroup(cg);
	if (pid == 0) {
		setsid();
		sigprocmask(SIG_SETMASK, &none, NULL);
		child_exec(argv, out_fd);
	}
	close(cg);
	if (pid > 0)
		return 0;
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
static void prime_moves(const char *cgroup)
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

int exec_init(struct server *s, struct gf_err *e)
{
	const char *grace = getenv("GFLOW_KILL_GRACE_SECS");

	s->grace_secs = grace && atoi(grace) > 0 ? atoi(grace) : 10;
	/* The directories themselves are ours (gf_paths_create made them);
	 * from here on everything in them is reached through these fds. */
	s->run_dfd = runfile_open_dir(s->paths.run_dir, 1);
	if (s->run_dfd < 0)
		return gf_err_set(e, "cannot open %s: %s", s->paths.run_dir, strerror(errno));
	s->log_dfd = runfile_open_dir(s->paths.log_dir, 1);
	if (s->log_dfd < 0)
		return gf_err_set(e, "cannot open %s: %s", s->paths.log_dir, strerror(errno));
	rundir_make_spares(s);
	if (s->executor == EXEC_PROCESS || s->paths.system)
		standby_want(s);	/* else after the first runner started alone */
	else
		standby_want_tmux(s);
	return 0;
}

void exec_close(struct server *s)
{
	standby_close(s);
	tmuxctl_close(s);
	if (s->run_dfd >= 0)
		close(s->run_dfd);
	if (s->log_dfd >= 0)
		close(s->log_dfd);
	s->run_dfd = s->log_dfd = -1;
}

struct argv {
	char *v[64];
	char own[16][32];
	int n, nown;
};

static void arg(struct argv *a, const char *s)
{
	if (a->n < 63)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static void argf(struct argv *a, const char *fmt, long long v)
{
	snprintf(a->own[a->nown], sizeof a->own[0], fmt, v);
	arg(a, a->own[a->nown++]);
}

/* tmux as the daemon's PATH finds it, the way /usr/bin/env would, without
 * starting env first (an exec on every start). */
static int find_tmux(char *path, size_t size, struct gf_err *e)
{
	const char *p = getenv("PATH");

	for (p = p ? p : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (n && (size_t)snprintf(path, size, "%.*s/tmux", (int)n, p) < size && access(path, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return gf_err_set(e, "tmux new-session failed: tmux is not on the daemon's PATH");
}

/* The socket of the daemon's own tmux server (so no other tmux server's
 * life or settings matter). */
static int tmux_sock(const struct server *s, char *sock, size_t size, struct gf_err *e)
{
	if (gf_pathf(sock, size, "%s/tmux.sock", s->paths.runtime_dir))
		return gf_err_set(e, "the tmux socket path is too long");
	return 0;
}

/* tmux, and its server's socket. */
static int tmux_server(struct server *s, char *tmux, size_t size, char *sock, size_t ssize, struct gf_err *e)
{
	return find_tmux(tmux, size, e) || tmux_sock(s, sock, ssize, e) ? -1 : 0;
}

int exec_tmux_command(struct server *s, char *const words[], size_t nwords)
{
	char tmux[GF_PATH_MAX], sock[GF_PATH_MAX + 16];

	if (tmux_server(s, tmux, sizeof tmux, sock, sizeof sock, NULL))
		return 1;
	return tmuxctl_command(s, tmux, sock, words, nwords);
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
	for (int attempt = 0; attempt < 3 && rc; attempt++) {
		if (run_capture(a.v, out, sizeof out, &status, e))
			return -1;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			rc = 0;
		else if (spawn(has, -1, true, &status, e) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			rc = 0;	/* it was made, whatever the client said */
		else
			usleep(20000);
	}
	if (rc) {
		out[strcspn(out, "\n")] = '\0';
		return gf_err_set(e, "tmux new-session failed: %s", out[0] ? out : "(it said nothing)");
	}
	return 0;
}

/* `new-session` of a job's session, detached, up to the `--` before its
 * command; trace: room for the trace's variable. */
static void new_session_words(struct argv *w, const char *session, char *trace, size_t size)
{
	arg(w, "new-session");
	arg(w, "-d");
	arg(w, "-s");
	arg(w, session);
	arg(w, "-x");
	arg(w, "200");
	arg(w, "-y");
	arg(w, "50");
	if (gf_trace_on() && getenv("GFLOW_TRACE") &&
	    snprintf(trace, size, "GFLOW_TRACE=%s", getenv("GFLOW_TRACE")) < (int)size) {
		arg(w, "-e");	/* a tmux server started untraced would not pass it on */
		arg(w, trace);
	}
	arg(w, "--");
}

/* The tmux executor's standby (standby.c): a session whose runner waits
 * for its request on fifo, made through the control client only. */
int exec_tmux_standby(struct server *s, const char *session, const char *fifo)
{
	char trace[GF_PATH_MAX + 16], pid[32];
	struct argv w = { .n = 0 };

	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	new_session_words(&w, session, trace, sizeof trace);
	arg(&w, s->runner_path);
	arg(&w, "--standby");
	arg(&w, "--request");
	arg(&w, fifo);
	arg(&w, "--ahead");
	arg(&w, s->paths.run_dir);
	arg(&w, "--daemon");
	arg(&w, pid);
	arg(&w, "                        ");	/* room for the runner to name its job in (ps) */
	return exec_tmux_command(s, w.v, (size_t)w.n);
}

/* Start the runner in a new session of gflow's own tmux server (its own
 * socket, so no other tmux server's life or settings matter; it never
 * exits when its last session ends, so a start never races its exit):
 * through the control client (tmuxctl.c), else with a tmux client of its
 * own. A start that failed is tried again once the session is known not to
 * exist (a runner started twice would find the first one's claim and
 * stop). */
static int start_in_tmux(struct server *s, struct job *j, const struct argv *runner, struct gf_err *e)
{
	char sock[GF_PATH_MAX + 16], trace[GF_PATH_MAX + 16], tmux[GF_PATH_MAX];
	const char *session = j->tmux_session;	/* the caller's "gflow-<id>" */
	struct argv w = { .n = 0 };

	if (tmux_server(s, tmux, sizeof tmux, sock, sizeof sock, e))
		return -1;
	new_session_words(&w, session, trace, sizeof trace);
	for (int i = 0; i < runner->n; i++)
		arg(&w, runner->v[i]);
	if (tmuxctl_new_session(s, j, tmux, sock, session, w.v, (size_t)w.n) == 0)
		return 0;
	return exec_tmux_client(tmux, sock, session, w.v, (size_t)w.n, e);
}

bool exec_holds_start(const struct server *s, const struct job *j)
{
	if (j->executor == EXEC_TMUX && !s->paths.system)
		return standby_tmux_ready(s);
	return standby_ready(s);
}

/* The start to the standby: the job's environment, command and spec follow
 * its options on the pipe (--env-bytes, --argv-bytes, --spec-bytes), and it
 * is held (--hold) while the commit that started the job is not yet
 * synced. 0: handed. */
static int hand_to_standby(struct server *s, const struct job *j, struct argv *a, const struct gf_bytes *env,
			   const struct gf_bytes *argv, const struct gf_bytes *spec)
{
	struct iovec more[3] = { { env->p, env->len }, { argv->p, argv->len }, { spec->p, spec->len } };
	int n = a->n, nown = a->nown, rc;

	if (a->n > 63 - 7 || a->nown > 16 - 3)
		return 1;
	arg(a, "--env-bytes");
	argf(a, "%lld", (long long)env->len);
	arg(a, "--argv-bytes");
	argf(a, "%lld", (long long)argv->len);
	arg(a, "--spec-bytes");
	argf(a, "%lld", (long long)spec->len);
	if (s->start_held)
		arg(a, "--hold");
	if (j->executor == EXEC_TMUX && !s->paths.system)
		rc = standby_hand_tmux(s, j, a->v, more, 3, s->start_held);
	else
		rc = standby_hand(s, a->v, more, 3, s->start_held);
	a->n = n;	/* a runner of its own takes the options before these */
	a->v[n] = NULL;
	a->nown = nown;
	return rc;
}

/* Launch gflow-runner for a job already recorded Running: its run
 * directory, log, cgroups, and the runner under tmux or on its own. A
 * held start (s->start_held) goes to the standby with --hold, or, when it
 * cannot, waits for the sync (jobs_txn_sync) before a runner starts. */
int exec_start_job(struct server *s, struct job *j, struct gf_err *e)
{
	char dir[GF_PATH_MAX], log[GF_PATH_MAX], cgroups[4][GF_PATH_MAX], attach[GF_PATH_MAX];
	struct argv a = { .n = 0 };
	struct gf_bytes env = { 0 }, argv = { 0 }, spec = { 0 };
	/* System mode: the runner makes the log, as the owner, with the first
	 * free name; a start after one in which nothing ran uses the name that
	 * start recorded. */
	bool log_new = jm(j)->log_dir && (j->run_seq <= 1 || !jm(j)->log_seq);
	size_t ncg;
	int dfd, out, rc = -1, err;

	if ((dfd = rundir_make(s, j, dir, sizeof dir, e)) < 0)
		return -1;
	/* A log in the owner's home is made by the runner, as the owner. */
	if ((ncg = track_prepare(s, j, cgroups, e)) == (size_t)-1)
		goto out;
	/* The groups the runner moves itself into: v1's. The v2 group comes
	 * first; the runner is born in it (process executor, no standby) or
	 * has the job born in it (a standby, or under tmux). A prime there
	 * would only delay both: a move waits for its grace period holding
	 * cgroup_mutex, which a clone into a group needs too. */
	if (ncg > (s->track.method == TRACK_CGROUP2 ? 1u : 0u))
		prime_moves(cgroups[ncg - 1]);
	if (!jm(j)->log_dir) {
		if (rundir_make_log(s, j, dfd, log, sizeof log, e))
			goto out;
	} else if (log_new)
		gf_pathf(log, sizeof log, "%s/%lld.log", jm(j)->log_dir, (long long)j->id);
	else
		jobs_log_path(s, j, log, sizeof log);
	if (rundir_env(s, j, &env, e))
		goto out;
	argv = rundir_argv(j);
	if (rundir_write_limits(dfd, dir, j, e))
		goto out;
	spec = rundir_spec(j, log, log_new);
	/* Nothing of the job (its directory, log, name or command) is on the
	 * runner's command line, which anyone may read: that is in the spec. */
	arg(&a, s->runner_path);
	arg(&a, "--job");
	argf(&a, "%lld", (long long)j->id);
	arg(&a, "--dir");
	arg(&a, dir);
	if (j->time_limit_secs) {
		arg(&a, "--time-limit");
		argf(&a, "%lld", (long long)j->time_limit_secs);
	}
	for (size_t i = 0; i < ncg; i++) {
		arg(&a, "--cgroup");
		arg(&a, cgroups[i]);
	}
	arg(&a, "--grace");
	argf(&a, "%lld", (long long)s->grace_secs);
	if (s->paths.system) {
		/* The runner stays root; the job becomes its owner. */
		struct owner_entry o;

		if (owner_entry(j->uid, &o, e)) {
			gf_err_prefix(e, "the job's owner");
			goto out;
		}
		arg(&a, "--uid");
		argf(&a, "%lld", (long long)j->uid);
		arg(&a, "--gid");
		argf(&a, "%lld", (long long)o.gid);
	}
	if (j->executor == EXEC_TMUX) {
		arg(&a, "--pty");
		if (!s->paths.system) {
			char session[64], sock[GF_PATH_MAX + 16];

			snprintf(session, sizeof session, "gflow-%lld", (long long)j->id);
			if (tmux_sock(s, sock, sizeof sock, e))
				goto out;
			job_set_str(&j->tmux_session, session);
			job_set_shared(&j->tmux_socket, sock);	/* one per daemon */
			gf_trace("fork", j->id);	/* the start-latency trace (trace.h) */
			if (hand_to_standby(s, j, &a, &env, &argv, &spec) == 0) {
				rc = 1;
				goto out;
			}
			jobs_txn_sync(s);	/* tmux starts it at once */
			if (rundir_write_lists(dfd, dir, &env, &argv, &spec, e) == 0)
				rc = start_in_tmux(s, j, &a, e);
			goto out;
		}
		/* The system daemon: no tmux, an attach socket (see the top). */
		if (rundir_attach_prepare(s, j, attach, sizeof attach, e)) {
			gf_err_prefix(e, "attach");
			goto out;
		}
		arg(&a, "--attach");
		arg(&a, attach);
		if (s->have_admin_gid) {
			arg(&a, "--attach-group");
			argf(&a, "%lld", (long long)s->admin_gid);
		}
	}
	gf_trace("fork", j->id);	/* the start-latency trace (trace.h) */
	/* The standby makes runner.out itself; then the job is born in the
	 * v2 group (the runner is not in it), as under tmux. */
	if (hand_to_standby(s, j, &a, &env, &argv, &spec) == 0) {
		rc = 1;
		goto out;
	}
	jobs_txn_sync(s);	/* a runner of its own is not held: it starts after the sync */
	if (rundir_write_lists(dfd, dir, &env, &argv, &spec, e))
		goto out;
	/* What the runner says before it has a log goes to runner.out. */
	out = openat(dfd, "runner.out", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		gf_err_set(e, "cannot create %s/runner.out: %s", dir, strerror(errno));
		goto out;
	}
	rc = ncg && s->track.method == TRACK_CGROUP2 ? spawn_runner_into(a.v, out, cgroups[0], e) : 1;
	if (rc > 0)
		rc = spawn_runner(a.v, out, e);
	close(out);
	standby_want(s);
out:
	err = errno;	/* EMFILE: the start waits for descriptors (jobs.c) */
	close(dfd);
	free(env.p);
	free(argv.p);
	free(spec.p);
	errno = err;
	return rc;
}
