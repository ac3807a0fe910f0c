/* loop.c — the daemon's life: taking the lock, opening the store, loading
 * jobs, starting the GPU poller and the API, the one event loop, and a clean
 * shutdown. Running jobs are never stopped by any of this. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runfile.h"

extern char **environ;

double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t meminfo_total_mb(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb / 1024;
}

/* The pass runs once per loop turn however many events asked for it, and
 * after the answers of this turn are on their way: a zero timer (it fires
 * after the next poll) at the lowest priority. */
void server_schedule(struct server *s)
{
	static const struct timeval now = { 0, 0 };

	if (s->sched_ev && !evtimer_pending(s->sched_ev, NULL))
		evtimer_add(s->sched_ev, &now);
}

static void on_sched(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	jobs_schedule_pass(arg);
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;

	(void)what;
	fprintf(stderr, "gflowd: %s received, stopping (jobs keep running)\n", strsignal((int)sig));
	event_base_loopexit(s->base, NULL);
}

/* ---- locks --------------------------------------------------------------
 *
 * Two flock'ed files, held for the daemon's whole life and carried across a
 * reload: the data lock (one daemon per data directory; it holds our pid
 * and start time, which is how clients tell a live daemon from a stale
 * file) and the socket lock beside the socket (one daemon per socket: only
 * its holder binds or removes the socket file). */

static int hold_lock(const char *path, int inherited, const char *text, int *out, int *holder, struct gf_err *e)
{
	char buf[GF_PATH_MAX + 64];
	int fd = inherited >= 0 ? inherited : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	int n = (int)strlen(text);

	if (fd < 0)
		return gf_err_set(e, "cannot open %s: %s", path, strerror(errno));
	fcntl(fd, F_SETFD, FD_CLOEXEC);	/* an inherited one came with us across exec */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int k = (int)pread(fd, buf, sizeof buf - 1, 0);

		buf[k > 0 ? k : 0] = '\0';
		*holder = atoi(buf);
		close(fd);
		return -1;
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n || fsync(fd) < 0) {
		close(fd);
		return gf_err_set(e, "cannot write %s: %s", path, strerror(errno));
	}
	*out = fd;
	return 0;
}

static int take_locks(struct server *s, struct gf_err *e)
{
	char text[GF_PATH_MAX + 64];
	unsigned long long ticks = 0;
	int holder = 0;

	e->msg[0] = '\0';
	proc_start_ticks(getpid(), &ticks);
	snprintf(text, sizeof text, "%d %llu\n", (int)getpid(), ticks);
	if (hold_lock(s->paths.lock, s->inherited[2], text, &s->lock_fd, &holder, e))
		return e->msg[0] ? -1 : gf_err_set(e, "gflowd is already running (pid %d)", holder);
	snprintf(text, sizeof text, "%d %s\n", (int)getpid(), s->paths.data_dir);
	if (hold_lock(s->paths.socket_lock, s->inherited[3], text, &s->sock_lock_fd, &holder, e))
		return e->msg[0] ? -1
				 : gf_err_set(e, "another gflowd (pid %d) serves %s: stop it first, or give this "
						 "one its own runtime directory (XDG_RUNTIME_DIR or GFLOW_SOCKET)",
					      holder, s->paths.socket);
	return 0;
}

static int load_token(struct server *s, struct gf_err *e)
{
	unsigned char raw[24];
	char hex[sizeof raw * 2 + 2];	/* digits, newline, NUL */
	FILE *f = fopen(s->paths.token, "re");

	if (f) {
		bool ok = fgets(s->token, sizeof s->token, f) != NULL;

		fclose(f);
		s->token[strcspn(s->token, "\r\n")] = '\0';
		if (ok && strlen(s->token) >= 16)
			return 0;
	}
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return gf_err_set(e, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(s->token, sizeof s->token, "%s", hex);
	strcat(hex, "\n");
	return write_file_atomic(s->paths.data_dir, "token", hex, strlen(hex), e);
}

static int find_runner(struct server *s, struct gf_err *e)
{
	const char *env = getenv("GFLOW_RUNNER");
	char exe[GF_PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(s->runner_path, sizeof s->runner_path, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return gf_err_set(e, "cannot find my own executable: %s", strerror(errno));
	exe[n] = '\0';
	snprintf(s->exe_dir, sizeof s->exe_dir, "%s", dirname(exe));
	gf_pathf(s->runner_path, sizeof s->runner_path, "%s/gflow-runner", s->exe_dir);
	if (access(s->runner_path, X_OK) < 0)
		return gf_err_set(e, "cannot find gflow-runner next to gflowd (%s): %s", s->runner_path,
				  strerror(errno));
	return 0;
}

/* --inherit UNIX,TCP,LOCK[,SOCKLOCK]: what the daemon we replace left
 * open for us. */
static int parse_inherit(struct server *s, struct gf_err *e)
{
	int *in = s->inherited, n;

	in[0] = in[1] = in[2] = in[3] = -1;
	if (!s->opts.inherit)
		return 0;
	n = sscanf(s->opts.inherit, "%d,%d,%d,%d", &in[0], &in[1], &in[2], &in[3]);
	if (n < 3 || in[0] < 3 || in[1] < 3 || in[2] < 3 || (n == 4 && in[3] < 3)) {
		in[0] = in[1] = in[2] = in[3] = -1;
		return gf_err_set(e, "--inherit '%s': expected the file descriptors UNIX,TCP,LOCK,SOCKLOCK",
				  s->opts.inherit);
	}
	for (int i = 0; i < 2; i++)
		fcntl(in[i], F_SETFD, FD_CLOEXEC);
	return 0;
}

/* ---- reload: replace this process with a new gflowd, keeping the
 * listening sockets (connections wait in their backlog, none is refused)
 * and the lock. Running jobs are not ours to stop; the new process
 * re-attaches to their runners like any start. */

#define RELOAD_DRAIN_MS 300

static char **reload_argv(struct server *s, char *fds)
{
	char path[GF_PATH_MAX + 32], *blob = NULL, **argv;
	size_t len = 0, n = 0, cap = 16;
	FILE *f;

	argv = calloc(cap, sizeof *argv);
	argv[n++] = strdup("gflowd");
	argv[n++] = strdup("run");
	/* The options of `gflowd reload`, NUL-separated; the same as this
	 * run's when it left none. */
	if (!gf_pathf(path, sizeof path, "%s/reload.args", s->paths.data_dir) && (f = fopen(path, "re"))) {
		char buf[4096];
		size_t k;

		while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
			blob = realloc(blob, len + k + 1);
			memcpy(blob + len, buf, k);
			len += k;
		}
		fclose(f);
		unlink(path);
	}
	for (size_t off = 0; blob && off < len; off += strlen(blob + off) + 1) {
		blob[len] = '\0';
		if (n + 4 >= cap)
			argv = realloc(argv, (cap *= 2) * sizeof *argv);
		argv[n++] = strdup(blob + off);
	}
	if (!blob && s->opts.config_path) {
		argv[n++] = strdup("--config");
		argv[n++] = strdup(s->opts.config_path);
	}
	free(blob);
	if (n + 5 >= cap)
		argv = realloc(argv, (cap += 8) * sizeof *argv);
	argv[n++] = strdup("--hosting");
	argv[n++] = strdup(s->opts.hosting ? s->opts.hosting : "foreground");
	argv[n++] = strdup("--inherit");
	argv[n++] = strdup(fds);
	argv[n] = NULL;
	return argv;
}

static void on_reexec(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char exe[GF_PATH_MAX], fds[64], **argv;
	int ufd, tfd;
	ssize_t n;

	(void)fd;
	(void)what;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0 || api_fds(s, &ufd, &tfd)) {
		fprintf(stderr, "gflowd: reload: cannot find my executable or sockets; going on as I am\n");
		s->reloading = false;
		return;
	}
	exe[n] = '\0';
	snprintf(fds, sizeof fds, "%d,%d,%d,%d", ufd, tfd, s->lock_fd, s->sock_lock_fd);
	argv = reload_argv(s, fds);
	fprintf(stderr, "gflowd: reloading (jobs keep running)\n");
	gpu_poller_stop(s->poller);
	s->poller = NULL;
	store_close(s->store);
	s->store = NULL;
	fcntl(ufd, F_SETFD, 0);
	fcntl(tfd, F_SETFD, 0);
	fcntl(s->lock_fd, F_SETFD, 0);
	fcntl(s->sock_lock_fd, F_SETFD, 0);
	execv(exe, argv);
	/* The store is closed: nothing sensible is left but to stop. The
	 * sockets and locks go with us; `gflowd start` brings a new one. */
	fprintf(stderr, "gflowd: reload: cannot run %s: %s\n", exe, strerror(errno));
	_exit(1);
}

static void on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;
	struct timeval tv = { 0, RELOAD_DRAIN_MS * 1000 };

	(void)sig;
	(void)what;
	if (s->reloading)
		return;
	s->reloading = true;
	/* New connections wait in the backlog for the new process; the ones
	 * already open get RELOAD_DRAIN_MS to finish. */
	api_pause(s);
	s->reload_ev = evtimer_new(s->base, on_reexec, s);
	evtimer_add(s->reload_ev, &tv);
}

static int setup(struct server *s, struct gf_err *e)
{
	if (parse_inherit(s, e) || gf_paths_init(&s->paths, e) ||
	    gf_config_load(s->opts.config_path, environ, &s->cfg, e))
		return -1;
	if (gf_paths_create(&s->paths, e) || take_locks(s, e) || find_runner(s, e) || load_token(s, e))
		return -1;
	umask(077);
	s->uid = getuid();
	s->executor = s->cfg.executor == GF_EXEC_PROCESS ? EXEC_PROCESS : EXEC_TMUX;
	s->strategy = s->cfg.strategy == GF_STRATEGY_RANDOM ? SCHED_RANDOM : SCHED_SEQUENTIAL;
	if (s->opts.strategy) {
		if (!strcmp(s->opts.strategy, "random"))
			s->strategy = SCHED_RANDOM;
		else if (!strcmp(s->opts.strategy, "sequential"))
			s->strategy = SCHED_SEQUENTIAL;
		else
			return gf_err_set(e, "--gpu-allocation-strategy '%s': expected sequential or random",
					  s->opts.strategy);
	}
	s->mem_total_mb = meminfo_total_mb();
	s->sched_seed = (uint64_t)now_real() ^ ((uint64_t)getpid() << 32);
	s->started_at = now_real();
	if (!(s->store = store_open(s->paths.db, e)) || jobs_load(s, e))
		return -1;
	s->base = event_base_new();
	if (!s->base)
		return gf_err_set(e, "cannot create the event loop");
	event_base_priority_init(s->base, 3);	/* events default to the middle one */
	s->sched_ev = evtimer_new(s->base, on_sched, s);
	event_priority_set(s->sched_ev, 2);
	s->begin_ev = event_new(s->base, -1, 0, on_sched, s);
	s->sig_term = evsignal_new(s->base, SIGTERM, on_stop_signal, s);
	s->sig_int = evsignal_new(s->base, SIGINT, on_stop_signal, s);
	s->sig_reload = evsignal_new(s->base, SIGUSR2, on_reload_signal, s);
	event_add(s->sig_term, NULL);
	event_add(s->sig_int, NULL);
	event_add(s->sig_reload, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);	/* a closed tmux session must not stop us */
	cgroup_setup(s);
	if (reap_init(s, e) || gpustate_init(s, e))
		return -1;
	reap_recover(s);
	return api_init(s, e);
}

static void teardown(struct server *s)
{
	api_close(s);
	gpustate_close(s);
	reap_close(s);
	for (int64_t i = 1; i <= s->max_id; i++)
		if (s->jobs && s->jobs[i]) {
			if (s->jobs[i]->pidfd_ev)
				free(event_get_callback_arg(s->jobs[i]->pidfd_ev)), event_free(s->jobs[i]->pidfd_ev);
			if (s->jobs[i]->pidfd >= 0)
				close(s->jobs[i]->pidfd);
			job_free(s->jobs[i]);
		}
	free(s->jobs);
	free(s->open);
	if (s->sched_ev)
		event_free(s->sched_ev);
	if (s->begin_ev)
		event_free(s->begin_ev);
	if (s->sig_term)
		event_free(s->sig_term);
	if (s->sig_int)
		event_free(s->sig_int);
	if (s->sig_reload)
		event_free(s->sig_reload);
	if (s->reload_ev)
		event_free(s->reload_ev);
	if (s->inotify_ev)
		event_free(s->inotify_ev);
	if (s->inotify_fd > 0)
		close(s->inotify_fd);
	if (s->base)
		event_base_free(s->base);
	store_close(s->store);
	gf_config_free(&s->cfg);
	/* The socket file is gone (api_close) before its lock is let go. */
	if (s->sock_lock_fd >= 0)
		close(s->sock_lock_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* releases the flock */
}

int server_run(const struct daemon_opts *opts)
{
	static struct server s;	/* the daemon's one state object */
	struct gf_err e;
	int rc = 0;

	s.opts = *opts;
	s.lock_fd = s.sock_lock_fd = s.inotify_fd = s.unix_fd = -1;
	s.inherited[0] = s.inherited[1] = s.inherited[2] = s.inherited[3] = -1;
	if (setup(&s, &e)) {
		fprintf(stderr, "gflowd: %s\n", e.msg);
		teardown(&s);
		return 1;
	}
	fprintf(stderr, "gflowd %s: pid %d, %lld jobs, listening on %s and %s:%d\n", GFLOW_VERSION,
		(int)getpid(), (long long)s.max_id, s.paths.socket, s.cfg.host, s.cfg.port);
	server_schedule(&s);
	if (event_base_dispatch(s.base) < 0)
		rc = 1;
	teardown(&s);
	return rc;
}
