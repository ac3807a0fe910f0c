/* loop.c — the daemon's life: checking its config and options, taking the
 * locks, opening the store, loading jobs, starting the GPU poller and the
 * API, the one event loop, reload, and a clean shutdown. Running jobs are
 * never stopped by any of this. */
#include "main.h"

#include "grow.h"
#include "trace.h"
#include "verbose.h"
#include "wire.h"

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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "runfile.h"

extern char **environ;

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
static void on_sched(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	double t0 = metrics_clock();

	(void)fd;
	(void)what;
	if (jobs_schedule_pass(s))	/* skipped ones are not passes */
		metrics_observe(&s->metrics.sched, metrics_clock() - t0);
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;

	(void)what;
	vlog(0, "%s received, stopping (jobs keep running)", strsignal((int)sig));
	event_base_loopexit(s->base, NULL);
}

/* ---- locks --------------------------------------------------------------
 *
 * Two flock'ed files, held for the daemon's whole life and carried across a
 * reload: the data lock (one daemon per data directory; it holds our pid
 * and start time, which is how clients tell a live daemon from a stale
 * file) and the socket lock beside the socket (one daemon per socket: only
 * its holder binds or removes the socket file). */

/* Is the daemon a lock file names ("PID START_TICKS" or "PID DIR") gone?
 * Then whoever still holds the lock is a child it made a moment before it
 * died, between fork and exec (the lock is close-on-exec). */
static bool holder_gone(const char *text)
{
	unsigned long long want = 0, ticks;
	int pid = 0, n = sscanf(text, "%d %llu", &pid, &want);

	if (n < 1 || pid <= 0)
		return false;	/* not a daemon's words: leave it be */
	if (proc_start_ticks(pid, &ticks) || proc_state(pid) == 'Z')
		return true;
	return n == 2 && ticks != want;	/* its pid is another process's now */
}

/* Such a child lets the lock go at its exec: wait for that, up to 2 s. */
static bool lock_when_let_go(int fd)
{
	for (int i = 0; i < 200; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return true;
	}
	return false;
}

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
		if (!holder_gone(buf) || !lock_when_let_go(fd)) {
			k = (int)pread(fd, buf, sizeof buf - 1, 0);	/* who has it now */
			buf[k > 0 ? k : 0] = '\0';
			*holder = atoi(buf);
			close(fd);
			return -1;
		}
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

/* gflow-runner: $GFLOW_RUNNER, else next to our executable (a build
 * tree), else where it is installed (GFLOW_LIBEXECDIR, meson.build). */
static int find_runner(char *path, size_t size, char *dir, size_t dsize, struct gf_err *e)
{
	const char *env = getenv("GFLOW_RUNNER");
	char exe[GF_PATH_MAX];
	ssize_t n;

	dir[0] = '\0';
	if (env && *env) {
		snprintf(path, size, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return gf_err_set(e, "cannot find my own executable: %s", strerror(errno));
	exe[n] = '\0';
	snprintf(dir, dsize, "%s", dirname(exe));
	gf_pathf(path, size, "%s/gflow-runner", dir);
	if (access(path, X_OK) == 0)
		return 0;
	gf_pathf(path, size, "%s/gflow-runner", GFLOW_LIBEXECDIR);
	if (access(path, X_OK) < 0)
		return gf_err_set(e, "cannot find gflow-runner next to gflowd (%s) or in %s: %s", dir,
				  GFLOW_LIBEXECDIR, strerror(errno));
	return 0;
}

int server_check(const struct daemon_opts *o, char *const *envp, struct gf_config *cfg, struct gf_err *e)
{
	char runner[GF_PATH_MAX], dir[GF_PATH_MAX], sys[GF_PATH_MAX];
	const char *config = o->config_path;
	struct stat st;
	uint64_t mask;
	int all;

	/* The system daemon's config is /etc/gflow/gflow.toml, when there is one. */
	if (!config && o->system && !gf_pathf(sys, sizeof sys, "%s/etc/gflow/gflow.toml", gf_system_root()) &&
	    stat(sys, &st) == 0)
		config = sys;
	if (gf_config_load(config, envp, cfg, e))
		return -1;
	if (o->strategy && strcmp(o->strategy, "random") && strcmp(o->strategy, "sequential"))
		gf_err_set(e, "--gpu-allocation-strategy '%s': expected sequential or random", o->strategy);
	else if (o->gpus && gf_parse_gpu_spec(o->gpus, &mask, &all, e))
		gf_err_prefix(e, "--gpus");
	else if (o->poll_interval < 0)
		gf_err_set(e, "--gpu-poll-interval-secs %d: expected whole seconds, 1 or more", o->poll_interval);
	else if (find_runner(runner, sizeof runner, dir, sizeof dir, e) == 0)
		return 0;
	gf_config_free(cfg);
	return -1;
}

/* --inherit UNIX,TCP,LOCK[,SOCKLOCK] and --rollback FD: what the daemon
 * we replace left open for us. */
static int parse_inherit(struct server *s, struct gf_err *e)
{
	int *in = s->inherited, n;

	in[0] = in[1] = in[2] = in[3] = -1;
	s->rollback_fd = -1;
	if (s->opts.rollback && (s->rollback_fd = atoi(s->opts.rollback)) >= 3)
		fcntl(s->rollback_fd, F_SETFD, FD_CLOEXEC);
	if (!s->opts.inherit)
		return 0;
	n = sscanf(s->opts.inherit, "%d,%d,%d,%d", &in[0], &in[1], &in[2], &in[3]);
	/* TCP is -1 when the replaced daemon served without it. */
	if (n < 3 || in[0] < 3 || (in[1] < 3 && in[1] != -1) || in[2] < 3 || (n == 4 && in[3] < 3)) {
		in[0] = in[1] = in[2] = in[3] = -1;
		return gf_err_set(e, "--inherit '%s': expected the file descriptors UNIX,TCP,LOCK,SOCKLOCK",
				  s->opts.inherit);
	}
	for (int i = 0; i < 2; i++)
		if (in[i] >= 0)
			fcntl(in[i], F_SETFD, FD_CLOEXEC);
	return 0;
}

/* ---- the report `gflowd start` and `gflowd reload` wait for -------------
 *
 * A small file the CLI names (--report): "pid N", then one line, "ready"
 * (with a note of what it runs without, if anything), "error <why>", or
 * (for --check) "listen <host> <port>". Rewritten whole
 * each time, so a reader sees one state or the next. */

static void report(const char *path, const char *state, const char *msg)
{
	char text[GF_ERR_MAX + 64], dir[GF_PATH_MAX], *slash;
	struct gf_err e;
	int n;

	if (!path || !*path)
		return;
	n = snprintf(text, sizeof text, "pid %d\n%s%s%s", (int)getpid(), state, msg ? " " : "", msg ? msg : "");
	if (n < 0 || n >= (int)sizeof text - 1)
		n = (int)sizeof text - 2;
	for (char *p = strchr(text, '\n') + 1; p < text + n; p++)
		if (*p == '\n')
			*p = ' ';	/* the message is one line */
	text[n++] = '\n';
	snprintf(dir, sizeof dir, "%s", path);
	if (!(slash = strrchr(dir, '/')))
		return;
	*slash = '\0';
	if (write_file_replace(*dir ? dir : "/", slash + 1, text, (size_t)n, &e))
		fprintf(stderr, "gflowd: cannot write the report %s: %s\n", path, e.msg);
}

/* All of a small file, NUL-terminated (*len without it); NULL if unreadable. */
static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, k;
	FILE *f = fopen(path, "re");

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (*len + 4097 > cap && !(buf = realloc(buf, cap = (*len + 4097) * 2)))
			abort();
		k = fread(buf + *len, 1, cap - *len - 1, f);
		*len += k;
	} while (k > 0);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* `gflowd run --check`: what a start or reload with these options would
 * find wrong, found by the binary that will run. */
static int check_only(const struct daemon_opts *o)
{
	struct gf_config cfg;
	struct gf_err e;
	char where[300];

	if (server_check(o, environ, &cfg, &e)) {
		fprintf(stderr, "gflowd: %s\n", e.msg);
		report(o->report, "error", e.msg);
		return 1;
	}
	snprintf(where, sizeof where, "%s %d", cfg.host, cfg.port);
	report(o->report, "listen", where);
	gf_config_free(&cfg);
	return 0;
}

/* ---- reload: replace this process with a new gflowd ---------------------
 *
 * 1. The new binary checks the new options and config (`gflowd run
 *    --check`, a child): on any error the CLI is told at once and we go on
 *    as we are. A new host:port is bound here, and --gpus checked against
 *    our GPUs, so that the new process cannot fail on them.
 * 2. Drain: stop accepting (connections wait in the listening sockets'
 *    backlog, which the new process inherits) and wait until every open
 *    connection has had its answer and closed (bounded).
 * 3. exec, handing over the listening sockets and both locks. Running jobs
 *    are not ours to stop; the new process re-attaches to their runners.
 *    Should its setup still fail, it runs this binary again with these
 *    options (--rollback), and the CLI is told. */

#define RELOAD_DRAIN_MAX_SECS 10.0
#define RELOAD_DRAIN_POLL_MS 10

struct reload {
	char exe[GF_PATH_MAX];
	char report[GF_PATH_MAX];	/* the CLI's, "" when none */
	char **argv;			/* the new `gflowd run`, --inherit still to come */
	size_t argc, cap;
	int tcp_fd;			/* a listener for a new host:port, else -1 */
	int undo_fd;			/* our executable (O_PATH), for --rollback */
	struct event *drain_ev;
	double deadline;
	bool again;			/* another reload was asked for meanwhile */
};

static void argv_add(struct reload *r, const char *word)
{
	r->argv = gf_grow(r->argv, &r->cap, r->argc + 2, sizeof *r->argv, 16);
	r->argv[r->argc++] = strdup(word);
	r->argv[r->argc] = NULL;
}

static void reload_free(struct reload *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	if (r->tcp_fd >= 0)
		close(r->tcp_fd);
	if (r->undo_fd >= 0)
		close(r->undo_fd);
	if (r->drain_ev)
		event_free(r->drain_ev);
	free(r);
}

/* Our own options, as `gflowd run` words (NUL-separated in *blob). */
static size_t own_options(struct server *s, char *blob, size_t size)
{
	const char *w[12];
	char num[16];
	size_t n = 0, len = 0;

	if (s->opts.config_path)
		w[n++] = "--config", w[n++] = s->opts.config_path;
	if (s->opts.gpus)
		w[n++] = "--gpus", w[n++] = s->opts.gpus;
	if (s->opts.strategy)
		w[n++] = "--gpu-allocation-strategy", w[n++] = s->opts.strategy;
	if (s->opts.poll_interval) {
		snprintf(num, sizeof num, "%d", s->opts.poll_interval);
		w[n++] = "--gpu-poll-interval-secs", w[n++] = num;
	}
	w[n++] = "--hosting", w[n++] = s->opts.hosting ? s->opts.hosting : "foreground";
	if (s->opts.verbosity)
		w[n++] = s->opts.verbosity < 0 ? "-q" : (const char *[]){ "-v", "-vv", "-vvv", "-vvvv" }[s->opts.verbosity - 1];
	for (size_t i = 0; i < n && len + strlen(w[i]) + 1 <= size; i++) {
		memcpy(blob + len, w[i], strlen(w[i]) + 1);
		len += strlen(w[i]) + 1;
	}
	return len;
}

/* data/reload.args, from `gflowd reload`: NUL-separated, the executable to
 * run, then the options of the new `gflowd run`. Without it (a plain
 * SIGUSR2) our own executable with our own options. */
static int reload_read_args(struct server *s, struct reload *r, struct gf_err *e)
{
	char path[GF_PATH_MAX + 32], *blob = NULL, *p;
	bool have_config = false;
	size_t len = 0, off;
	ssize_t n;

	argv_add(r, "gflowd");
	argv_add(r, "run");
	if (!gf_pathf(path, sizeof path, "%s/reload.args", s->paths.data_dir) && (blob = slurp(path, &len)))
		unlink(path);
	if (len > 0) {
		snprintf(r->exe, sizeof r->exe, "%s", blob);
		for (off = strlen(blob) + 1; off < len; off += strlen(blob + off) + 1) {
			if (!strcmp(blob + off, "--config"))
				have_config = true;
			if (!strcmp(blob + off, "--report") && off + strlen(blob + off) + 1 < len)
				snprintf(r->report, sizeof r->report, "%s", blob + off + strlen(blob + off) + 1);
			argv_add(r, blob + off);
		}
	} else {
		n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
		r->exe[n > 0 ? n : 0] = '\0';
		/* Replaced on disk (a new build): the new file is the one meant. */
		if ((p = strstr(r->exe, " (deleted)")) && !p[10])
			*p = '\0';
		if (s->opts.gpus)
			argv_add(r, "--gpus"), argv_add(r, s->opts.gpus);
		if (s->opts.strategy)
			argv_add(r, "--gpu-allocation-strategy"), argv_add(r, s->opts.strategy);
		if (s->opts.poll_interval) {
			char num[16];

			snprintf(num, sizeof num, "%d", s->opts.poll_interval);
			argv_add(r, "--gpu-poll-interval-secs"), argv_add(r, num);
		}
	}
	free(blob);
	/* Where the config lives carries over; settings given anew replace ours. */
	if (!have_config && s->opts.config_path)
		argv_add(r, "--config"), argv_add(r, s->opts.config_path);
	argv_add(r, "--hosting");
	argv_add(r, s->opts.hosting ? s->opts.hosting : "foreground");
	if (!r->exe[0] || access(r->exe, X_OK) < 0)
		return gf_err_set(e, "cannot run '%s': %s", r->exe, r->exe[0] ? strerror(errno) : "no executable");
	return 0;
}

/* Run the new binary's check; on success, where it will listen. */
static int reload_check(struct server *s, struct reload *r, char *host, size_t hsize, int *port,
			struct gf_err *e)
{
	char out[GF_PATH_MAX + 32], **argv, line[1200];
	struct gf_err se;
	int st = 0, ok = 0;
	FILE *f;

	if (gf_pathf(out, sizeof out, "%s/reload.check", s->paths.data_dir))
		return gf_err_set(e, "data directory path too long");
	unlink(out);
	argv = calloc(r->argc + 6, sizeof *argv);
	if (!argv)
		abort();
	argv[0] = r->exe;
	argv[1] = "run";
	argv[2] = "--check";
	for (size_t i = 2; i < r->argc; i++)
		argv[i + 1] = r->argv[i];
	argv[r->argc + 1] = "--report";
	argv[r->argc + 2] = out;
	if (exec_spawn(argv, NULL, true, &st, &se)) {
		free(argv);
		return gf_err_set(e, "cannot check the new daemon: %s", se.msg);
	}
	free(argv);
	*port = 0;
	if ((f = fopen(out, "re"))) {
		while (fgets(line, sizeof line, f)) {
			line[strcspn(line, "\n")] = '\0';
			if (!strncmp(line, "error ", 6)) {
				gf_err_set(e, "%s", line + 6);
				ok = -1;
			} else if (!strncmp(line, "listen ", 7)) {
				char *sp = strrchr(line + 7, ' ');

				if (sp && (size_t)(sp - line - 7) < hsize) {
					*sp = '\0';
					memcpy(host, line + 7, (size_t)(sp - line - 7) + 1);
					*port = atoi(sp + 1);
				}
			}
		}
		fclose(f);
		unlink(out);
	}
	if (ok < 0)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) || *port <= 0)
		return gf_err_set(e, "%s run --check failed (exit status %d) without saying why", r->exe,
				  WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

/* --gpus against the GPUs we see (the new process sees the same). */
static int reload_check_gpus(struct server *s, struct reload *r, struct gf_err *e)
{
	size_t have = gpustate_count(s);
	uint64_t mask;
	int all;

	for (size_t i = 2; i + 1 < r->argc; i++) {
		if (strcmp(r->argv[i], "--gpus"))
			continue;
		if (gf_parse_gpu_spec(r->argv[i + 1], &mask, &all, e))
			return gf_err_prefix(e, "--gpus");
		if (!all && have < 64 && (mask >> have))
			return gf_err_set(e, "--gpus '%s': this machine has %zu GPU%s%s", r->argv[i + 1], have,
					  have == 1 ? "" : "s", have ? ", numbered from 0" : "");
	}
	return 0;
}

static void reload_end(struct server *s, const char *why)
{
	struct reload *r = s->reload;

	if (why) {
		fprintf(stderr, "gflowd: reload refused, going on as before: %s\n", why);
		report(r ? r->report : NULL, "error", why);
	}
	if (s->reloading)
		api_resume(s);
	s->reloading = false;
	s->reload = NULL;
	if (r && r->again)
		kill(getpid(), SIGUSR2);	/* its turn now */
	reload_free(r);
}

static void reexec(struct server *s)
{
	struct reload *r = s->reload;
	char fds[64], undo[16], why[GF_PATH_MAX + 64];
	int ufd, tfd, keep[5], nkeep = 0, err, interval;
	char blob[8192];
	size_t len = own_options(s, blob, sizeof blob);
	struct gf_err e;
	sigset_t sigs;

	if (api_fds(s, &ufd, &tfd)) {
		reload_end(s, "cannot find my listening sockets");
		return;
	}
	if (r->tcp_fd >= 0)
		tfd = r->tcp_fd;
	snprintf(fds, sizeof fds, "%d,%d,%d,%d", ufd, tfd, s->lock_fd, s->sock_lock_fd);
	argv_add(r, "--inherit");
	argv_add(r, fds);
	/* What to run again should the new process fail to start. */
	r->undo_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (r->undo_fd >= 0 && !write_file_replace(s->paths.data_dir, "reload.undo", blob, len, &e)) {
		snprintf(undo, sizeof undo, "%d", r->undo_fd);
		argv_add(r, "--rollback");
		argv_add(r, undo);
		keep[nkeep++] = r->undo_fd;
	}
	keep[nkeep++] = ufd;
	if (tfd >= 0)
		keep[nkeep++] = tfd;
	keep[nkeep++] = s->lock_fd;
	keep[nkeep++] = s->sock_lock_fd;
	vlog(0, "reloading as %s (jobs keep running)", r->exe);
	fflush(NULL);
	gpu_poller_stop(s->poller);
	s->poller = NULL;
	store_close(s->store);
	s->store = NULL;
	for (int i = 0; i < nkeep; i++)
		fcntl(keep[i], F_SETFD, 0);
	/* A stop or reload signal that comes meanwhile waits for the new
	 * process's handlers (the mask and pending signals survive exec). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR2);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if (r->again)
		kill(getpid(), SIGUSR2);	/* pending: the new process takes it */
	execv(r->exe, r->argv);
	err = errno;
	/* Still us: take back what we let go and go on (a reload asked for
	 * meanwhile is pending already). */
	r->again = false;
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
	for (int i = 0; i < nkeep; i++)
		fcntl(keep[i], F_SETFD, FD_CLOEXEC);
	if (!(s->store = store_open(s->paths.db, &e))) {
		fprintf(stderr, "gflowd: reload: cannot run %s (%s), and cannot reopen the store: %s\n", r->exe,
			strerror(err), e.msg);
		exit(1);
	}
	interval = s->opts.poll_interval ? s->opts.poll_interval : s->cfg.gpu_poll_interval_secs;
	if (!(s->poller = gpu_poller_start(interval, s->gpu_pipe[1], &e))) {
		fprintf(stderr, "gflowd: reload: cannot run %s (%s), and cannot restart the GPU poller: %s\n",
			r->exe, strerror(err), e.msg);
		exit(1);
	}
	snprintf(why, sizeof why, "cannot run %s: %s", r->exe, strerror(err));
	reload_end(s, why);
}

static void on_drain(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	int open = api_open_connections(s);

	(void)fd;
	(void)what;
	if (open > 0 && now_real() < s->reload->deadline)
		return;
	if (open > 0)
		fprintf(stderr, "gflowd: reload: closing %d connection%s still open after %.0f s\n", open,
			open == 1 ? "" : "s", RELOAD_DRAIN_MAX_SECS);
	event_del(s->reload->drain_ev);
	reexec(s);
}

static void on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;
	struct timeval tv = { 0, RELOAD_DRAIN_POLL_MS * 1000 };
	struct reload *r;
	struct gf_err e;
	char host[256] = "";
	int port = 0;

	(void)sig;
	(void)what;
	if (s->reload) {
		s->reload->again = true;	/* one at a time: the next follows */
		return;
	}
	r = calloc(1, sizeof *r);
	if (!r)
		abort();
	r->tcp_fd = r->undo_fd = -1;
	s->reload = r;
	if (reload_read_args(s, r, &e) || reload_check(s, r, host, sizeof host, &port, &e) ||
	    reload_check_gpus(s, r, &e)) {
		reload_end(s, e.msg);
		return;
	}
	if ((strcmp(host, s->cfg.host) || port != s->cfg.port) &&
	    (r->tcp_fd = api_listen_tcp(host, port, &e)) < 0) {
		reload_end(s, e.msg);
		return;
	}
	s->reloading = true;
	api_pause(s);
	r->deadline = now_real() + RELOAD_DRAIN_MAX_SECS;
	r->drain_ev = event_new(s->base, -1, EV_PERSIST, on_drain, s);
	event_add(r->drain_ev, &tv);
}

/* The replaced daemon's executable, run again with its own options: the
 * new one could not start. Returns only if that cannot be done. */
static void rollback(struct server *s)
{
	char path[GF_PATH_MAX + 32], fds[64], *blob, *argv[40];
	size_t len, n = 0;
	sigset_t sigs;

	if (s->rollback_fd < 0 || s->inherited[0] < 0 ||
	    gf_pathf(path, sizeof path, "%s/reload.undo", s->paths.data_dir) || !(blob = slurp(path, &len)))
		return;
	argv[n++] = "gflowd";
	argv[n++] = "run";
	for (size_t off = 0; off < len && n < 34; off += strlen(blob + off) + 1)
		argv[n++] = blob + off;
	snprintf(fds, sizeof fds, "%d,%d,%d,%d", s->inherited[0], s->inherited[1], s->inherited[2],
		 s->inherited[3]);
	argv[n++] = "--inherit";
	argv[n++] = fds;
	argv[n] = NULL;
	for (int i = 0; i < 4; i++)
		if (s->inherited[i] >= 0)
			fcntl(s->inherited[i], F_SETFD, 0);
	fprintf(stderr, "gflowd: going back to the daemon this one was to replace\n");
	fflush(NULL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR2);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	fexecve(s->rollback_fd, argv, environ);
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
	fprintf(stderr, "gflowd: cannot run the replaced daemon again: %s\n", strerror(errno));
	free(blob);
}

static int setup(struct server *s, struct gf_err *e)
{
	static const char *const leftovers[] = { "reload.args", "reload.check", "reload.undo" };
	char path[GF_PATH_MAX + 32];
	sigset_t sigs;

	if (s->opts.system && geteuid() != 0)
		return gf_err_set(e, "the system daemon (--system) runs as root: it starts every job as its owner");
	if (parse_inherit(s, e) ||
	    (s->opts.system ? gf_paths_init_system(&s->paths, e) : gf_paths_init(&s->paths, e)) ||
	    server_check(&s->opts, environ, &s->cfg, e))
		return -1;
	if (gf_paths_create(&s->paths, e) || take_locks(s, e) ||
	    find_runner(s->runner_path, sizeof s->runner_path, s->exe_dir, sizeof s->exe_dir, e) ||
	    load_token(s, e))
		return -1;
	if (s->inherited[0] < 0)	/* a fresh start: what a dead daemon's reload left */
		for (size_t i = 0; i < sizeof leftovers / sizeof leftovers[0]; i++)
			if (!gf_pathf(path, sizeof path, "%s/%s", s->paths.data_dir, leftovers[i]))
				unlink(path);
	umask(077);
	fd_limit_raise();	/* other users' connections must not run it out */
	s->uid = getuid();
	s->executor = s->cfg.executor == GF_EXEC_PROCESS ? EXEC_PROCESS : EXEC_TMUX;
	s->strategy = s->cfg.strategy == GF_STRATEGY_RANDOM ? SCHED_RANDOM : SCHED_SEQUENTIAL;
	if (s->opts.strategy)
		s->strategy = !strcmp(s->opts.strategy, "random") ? SCHED_RANDOM : SCHED_SEQUENTIAL;
	s->mem_total_mb = meminfo_total_mb();
	if (cpus_setup(s, e))
		return -1;
	s->sched_seed = (uint64_t)now_real() ^ ((uint64_t)getpid() << 32);
	s->started_at = now_real();
	if (!(s->store = store_open(s->paths.db, e)) || jobs_load(s, e) || auth_setup(s, e) || quota_load(s, e) ||
	    reserve_load(s, e) || usage_load(s, e))
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
	/* A reload blocked these across exec; any that came are delivered now. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR2);
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);	/* a closed tmux session must not stop us */
	if (track_setup(s, e) || exec_init(s, e) || reap_init(s, e))
		return -1;
	backstop_init(s);
	if (gpustate_init(s, e) || notify_init(s, e) || history_init(s, e))
		return -1;
	if (reap_recover(s, e))
		return -1;
	return api_init(s, e);
}

static void teardown(struct server *s)
{
	jobs_close_ends(s);	/* recorded while what they tell is still up */
	notify_close(s);
	jobs_close(s);
	api_close(s);
	gpustate_close(s);
	history_close(s);
	metrics_close(s);
	reap_close(s);
	backstop_close(s);
	exec_close(s);
	track_close(s);
	auth_close(s);
	for (int64_t i = 1; i <= s->max_id; i++)
		if (s->jobs && s->jobs[i]) {
			reap_job_close(s->jobs[i]);
			job_free(s->jobs[i]);
		}
	free(s->jobs);
	free(s->since_max);
	free(s->open);
	free(s->live);
	free(s->cpu_list);
	free(s->launch);
	quota_close(s);
	jobs_expected_close(s);
	reserve_close(s);
	usage_close(s);
	reload_free(s->reload);
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
	if (s->inotify_ev)
		event_free(s->inotify_ev);
	if (s->inotify_fd > 0)
		close(s->inotify_fd);
	if (s->base)
		event_base_free(s->base);
	store_close(s->store);
	gf_config_free(&s->cfg);
	if (s->rollback_fd >= 0)
		close(s->rollback_fd);
	/* The socket file is gone (api_close) before its lock is let go. */
	if (s->sock_lock_fd >= 0)
		close(s->sock_lock_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* releases the flock */
}

int server_run(const struct daemon_opts *opts)
{
	static struct server s;	/* the daemon's one state object */
	char path[GF_PATH_MAX + 32];
	struct gf_err e;
	int rc = 0;

	if (opts->check)
		return check_only(opts);
	s.opts = *opts;
	wire_hooks(&s);
	s.lock_fd = s.sock_lock_fd = s.inotify_fd = s.unix_fd = s.rollback_fd = s.run_dfd = s.log_dfd = -1;
	s.standby_held_fd = -1;
	for (int i = 0; i < GF_STANDBY_MAX; i++)
		s.standby_fd[i] = s.standby_pidfd[i] = -1;
	s.inherited[0] = s.inherited[1] = s.inherited[2] = s.inherited[3] = -1;
	report(opts->report, "starting", NULL);
	/* The start-latency trace (trace.h): a personal daemon's only; it goes
	 * on to the runners through the environment. */
	if (opts->system)
		unsetenv("GFLOW_TRACE");
	else
		gf_trace_open();
	if (setup(&s, &e)) {
		fprintf(stderr, "gflowd: %s\n", e.msg);
		if (s.rollback_fd >= 0) {
			gf_err_prefix(&e, "the new daemon could not start, the replaced one goes on");
			report(opts->report, "error", e.msg);
			rollback(&s);
		} else
			report(opts->report, "error", e.msg);
		teardown(&s);
		return 1;
	}
	if (s.rollback_fd >= 0) {	/* started: nothing to go back to */
		close(s.rollback_fd);
		s.rollback_fd = -1;
		if (!gf_pathf(path, sizeof path, "%s/reload.undo", s.paths.data_dir))
			unlink(path);
	}
	if (gflowd_verbosity < 0)	/* -q: problems only */
		(void)0;
	else if (s.bound_tcp)
		fprintf(stderr, "gflowd %s: pid %d, %lld jobs, listening on %s and %s:%d\n", GFLOW_VERSION,
			(int)getpid(), (long long)s.max_id, s.paths.socket, s.cfg.host, s.cfg.port);
	else
		fprintf(stderr, "gflowd %s: pid %d, %lld jobs, listening on %s\n", GFLOW_VERSION, (int)getpid(),
			(long long)s.max_id, s.paths.socket);
	report(opts->report, "ready", s.tcp_note[0] ? s.tcp_note : NULL);
	notify_online(&s);
	server_schedule(&s);
	if (event_base_dispatch(s.base) < 0)
		rc = 1;
	teardown(&s);
	return rc;
}
