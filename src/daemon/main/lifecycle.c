/* lifecycle.c — managing the daemon: start (hosted by a systemd service,
 * tmux or a detached process), stop, restart, reload, status, and the
 * token; setup.c has init, the unit and completion. Liveness is the flock
 * on the lock file, never a bare pid. A start or reload checks the config and options
 * first (server_check), then waits on the report the daemon writes
 * (--report: its pid, then "ready" or why not), so that what went wrong is
 * shown at once. */
#include "lifecycle.h"
#include "lcint.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "notify.h"
#include "parse.h"
#include "paths.h"
#include "runfile.h"
#include "server.h"
#include "verbose.h"

extern char **environ;

int lc_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gflowd: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

int lc_self_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}



/* pid of the live daemon, 0 when none. */
static pid_t daemon_pid(const struct gf_paths *p)
{
	char buf[64];
	int fd = open(p->lock, O_RDONLY | O_CLOEXEC), n;
	pid_t pid = 0;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		n = (int)read(fd, buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		pid = atoi(buf);
		if (pid <= 0)
			pid = 1;	/* locked but not yet written: starting */
	}
	close(fd);
	return pid;
}

/* One blocking GET over the Unix socket. Returns the HTTP status or -1. */
static int daemon_call(const char *sock, const char *method, const char *path, char **body)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[256], *buf = NULL, *p;
	size_t len = 0, cap = 0;
	int fd, status = -1;
	ssize_t n;

	*body = NULL;
	if (strlen(sock) >= sizeof sa.sun_path)
		return -1;
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Nothing goes to a server that is not the caller's own or root's
	 * (anyone may have made /tmp/gflow-<uid> first): as no daemon. */
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || gf_peer_trusted(fd, sock, NULL) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: gflowd\r\nConnection: close\r\n%s\r\n%s", method,
		     path, strcmp(method, "POST") ? "" : "Content-Type: application/json\r\nContent-Length: 2\r\n",
		     strcmp(method, "POST") ? "" : "{}");
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	for (;;) {
		if (len + 4097 > cap) {
			cap = (cap + 4097) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) == 1 && (p = strstr(buf, "\r\n\r\n")))
		*body = strdup(p + 4);
	free(buf);
	return status;
}

/* One blocking GET over the Unix socket. Returns the HTTP status or -1. */
static int daemon_get(const char *sock, const char *path, char **body)
{
	return daemon_call(sock, "GET", path, body);
}

/* Does a daemon answer on this socket? */
static bool answers(const char *sock)
{
	char *body = NULL;
	int st = daemon_get(sock, "/health", &body);

	free(body);
	return st == 200;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}


/* The caller's environment, for a daemon started by tmux or systemd (whose
 * own environments are not the caller's). */
static int write_env_file(const struct gf_paths *p, char *path, size_t size)
{
	struct gf_err e;
	size_t len = 0;
	char *blob;

	for (char **v = environ; *v; v++)
		len += strlen(*v) + 1;
	blob = malloc(len + 1);
	if (!blob)
		return -1;
	len = 0;
	for (char **v = environ; *v; v++) {
		memcpy(blob + len, *v, strlen(*v) + 1);
		len += strlen(*v) + 1;
	}
	gf_pathf(path, size, "%s/gflowd.env", p->data_dir);
	if (write_file_atomic(p->data_dir, "gflowd.env", blob, len, &e)) {
		free(blob);
		return lc_fail("%s", e.msg);
	}
	free(blob);
	return 0;
}

static int load_env_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return lc_fail("cannot read the environment file %s", path);
	clearenv();
	while ((n = getdelim(&line, &cap, '\0', f)) > 0)
		if (strchr(line, '='))
			putenv(strdup(line));
	free(line);
	fclose(f);
	unlink(path);
	return 0;
}

static bool have_tmux(void)
{
	char *const argv[] = { "/usr/bin/env", "tmux", "-V", NULL };
	struct gf_err e;
	int st;

	return exec_spawn(argv, NULL, true, &st, &e) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The options of a start or reload, as `gflowd run` words (from v[n]). */
static int opt_args(struct lc *c, char **v, int n, char *num)
{
	if (c->opts.system)
		v[n++] = "--system";
	if (c->opts.config_path) {
		v[n++] = "--config";
		v[n++] = (char *)c->opts.config_path;
	}
	if (c->opts.gpus) {
		v[n++] = "--gpus";
		v[n++] = (char *)c->opts.gpus;
	}
	if (c->opts.strategy) {
		v[n++] = "--gpu-allocation-strategy";
		v[n++] = (char *)c->opts.strategy;
	}
	if (c->opts.poll_interval) {
		snprintf(num, 16, "%d", c->opts.poll_interval);
		v[n++] = "--gpu-poll-interval-secs";
		v[n++] = num;
	}
	if (c->opts.report) {
		v[n++] = "--report";
		v[n++] = (char *)c->opts.report;
	}
	if (c->opts.verbosity)
		v[n++] = (char *)(c->opts.verbosity < 0 ? "-q" : (const char *[]){ "-v", "-vv", "-vvv", "-vvvv" }
			[c->opts.verbosity - 1]);
	v[n] = NULL;
	return n;
}

/* The whole `gflowd run` command that start hosts. */
static int run_args(struct lc *c, char **v, int n, char *exe, char *envfile, char *num)
{
	v[n++] = exe;
	v[n++] = "run";
	if (envfile) {
		v[n++] = "--env-file";
		v[n++] = envfile;
	}
	if (c->log) {
		v[n++] = "--log";
		v[n++] = (char *)c->log;
	}
	n = opt_args(c, v, n, num);
	v[n++] = "--hosting";
	v[n++] = (char *)c->opts.hosting;
	v[n] = NULL;
	return n;
}

/* words[0..n) NUL-separated into dir/name. */
static int write_words(const char *dir, const char *name, char **words, int n, struct gf_err *e)
{
	char blob[16384];
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		size_t k = strlen(words[i]) + 1;

		if (len + k > sizeof blob)
			return gf_err_set(e, "the options are too long");
		memcpy(blob + len, words[i], k);
		len += k;
	}
	return write_file_atomic(dir, name, blob, len, e);
}

static void print_log_tail(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n;

	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "%s", buf);
	}
}

/* Is pid a live process (not a zombie)? */
static bool alive(pid_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	bool live = false;

	if (kill(pid, 0) < 0 && errno != EPERM)
		return false;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	if (fgets(buf, sizeof buf, f) && (rp = strrchr(buf, ')')))
		live = rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
	fclose(f);
	return live;
}

/* ---- checking before anything is started or replaced ------------------ */

/* environ without the GFLOW_<SECTION>__<KEY> overrides: a reload keeps the
 * daemon's own environment, so ours must not judge it. */
static char **env_without_overrides(void)
{
	size_t n = 0, k = 0;
	char **v;

	while (environ[n])
		n++;
	v = calloc(n + 1, sizeof *v);
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');

		if (!strncmp(environ[i], "GFLOW_", 6) && eq && memmem(environ[i], (size_t)(eq - environ[i]), "__", 2))
			continue;
		v[k++] = environ[i];
	}
	return v;
}

/* The --config of a running daemon (from its command line), made absolute. */
static bool daemon_config(pid_t pid, char *buf, size_t size)
{
	char path[64], cmd[8192], cwd[GF_PATH_MAX];
	const char *val = NULL;
	ssize_t n = -1, k;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, cmd, sizeof cmd - 1);
		close(fd);
	}
	if (n <= 0)
		return false;
	cmd[n] = '\0';
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(cmd + off) + 1)
		if (!strcmp(cmd + off, "--config") && off + (ssize_t)strlen(cmd + off) + 1 < n)
			val = cmd + off + strlen(cmd + off) + 1;
	if (!val)
		return false;
	if (val[0] == '/')
		return gf_pathf(buf, size, "%s", val) == 0;
	snprintf(path, sizeof path, "/proc/%d/cwd", (int)pid);
	if ((k = readlink(path, cwd, sizeof cwd - 1)) < 0)
		return false;
	cwd[k] = '\0';
	return gf_pathf(buf, size, "%s/%s", cwd, val) == 0;
}

/* The config and options as the daemon will see them. Prints the error. */
static int check_opts(const struct daemon_opts *o, char *const *envp, const char *doing)
{
	struct gf_config cfg;
	struct gf_err e;

	if (server_check(o, envp, &cfg, &e)) {
		fprintf(stderr, "gflowd: %s%s\n", doing, e.msg);
		return 1;
	}
	gf_config_free(&cfg);
	return 0;
}

/* ---- the report of a starting daemon (loop.c writes it) ---------------- */

enum rstate { R_NONE, R_STARTING, R_READY, R_ERROR };

struct rep {
	pid_t pid;
	enum rstate state;
	char msg[1200];
};

static void read_report(const char *path, struct rep *r)
{
	char line[1200];
	FILE *f = fopen(path, "re");

	memset(r, 0, sizeof *r);
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "pid ", 4))
			r->pid = atoi(line + 4);
		else if (!strcmp(line, "starting"))
			r->state = R_STARTING;
		else if (!strncmp(line, "ready", 5) && (!line[5] || line[5] == ' ')) {
			r->state = R_READY;
			snprintf(r->msg, sizeof r->msg, "%s", line[5] ? line + 6 : "");
		}
		else if (!strncmp(line, "error ", 6)) {
			r->state = R_ERROR;
			snprintf(r->msg, sizeof r->msg, "%s", line + 6);
		}
	}
	fclose(f);
}

static bool tmux_session_gone(void)
{
	char *const argv[] = { "/usr/bin/env", "tmux", "has-session", "-t", "=gflowd", NULL };
	struct gf_err e;
	int st;

	return exec_spawn(argv, NULL, true, &st, &e) == 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0;
}

/* A daemon that said why it does not start is on its way out: once `up`
 * has said so too, nothing of it may be left (its lock held, a `gflowd
 * status` or the next `up` finding it "running"). */
static void wait_gone(pid_t pid, double secs)
{
	for (int i = 0; pid > 0 && alive(pid) && i < (int)(secs * 100); i++)
		sleep_ms(10);
}

/* Wait until the daemon says it is ready or why not, or it is gone.
 * Returns 0 with *pid set, or 1 after saying what happened. */
static int wait_report(const char *report, const char *log, const char *hosting, double secs, pid_t *pid)
{
	struct rep r;

	for (int i = 0; i < (int)(secs * 20); i++) {
		read_report(report, &r);
		if (r.state == R_READY) {
			if (r.msg[0])	/* what it runs without, e.g. a TCP port in use */
				fprintf(stderr, "gflowd: %s\n", r.msg);
			*pid = r.pid;
			return 0;
		}
		if (r.state == R_ERROR) {
			wait_gone(r.pid, 5);
			fprintf(stderr, "gflowd: %s\n", r.msg);
			return 1;
		}
		if ((r.pid > 0 && !alive(r.pid)) ||
		    (r.pid <= 0 && hosting && !strcmp(hosting, "tmux") && i % 10 == 9 && tmux_session_gone())) {
			read_report(report, &r);	/* it may have said why just now */
			if (r.state == R_ERROR) {
				fprintf(stderr, "gflowd: %s\n", r.msg);
				return 1;
			}
			if (r.pid > 0)
				fprintf(stderr, "gflowd: the daemon (pid %d) exited while starting; its log (%s) ends "
						"with:\n", (int)r.pid, log);
			else
				fprintf(stderr, "gflowd: the daemon exited while starting; its log (%s) ends with:\n", log);
			print_log_tail(log);
			return 1;
		}
		sleep_ms(50);
	}
	fprintf(stderr, "gflowd: the daemon did not answer within %.0f s; its log (%s) ends with:\n", secs, log);
	print_log_tail(log);
	return 1;
}

static int cmd_start(struct lc *c)
{
	char exe[GF_PATH_MAX], envfile[GF_PATH_MAX], log[GF_PATH_MAX], report[GF_PATH_MAX + 32], num[16], *v[48];
	char args[GF_PATH_MAX + 16];
	struct gf_err e;
	pid_t pid = daemon_pid(&c->paths);
	const char *h = c->hosting_req ? c->hosting_req : "auto";
	int rc = 0, st, n = 0;

	if (pid)
		return lc_fail("gflowd is already running (pid %s); use 'gflowd restart' to replace it",
			    (snprintf(num, sizeof num, "%d", (int)pid), num));
	if (strcmp(h, "auto") && strcmp(h, "systemd") && strcmp(h, "tmux") && strcmp(h, "process"))
		return lc_fail("--hosting '%s': expected auto, systemd, tmux or process", h);
	/* The daemon gets our environment (directly or through the env file). */
	if (check_opts(&c->opts, environ, ""))
		return 1;
	if (gf_paths_create(&c->paths, &e))
		return lc_fail("%s", e.msg);
	if (lc_self_exe(exe, sizeof exe))
		return lc_fail("%s", "cannot find my own executable");
	if (!strcmp(h, "auto"))
		h = setup_systemd_usable(&c->paths) ? "systemd" : have_tmux() ? "tmux" : "process";
	c->opts.hosting = h;
	gf_pathf(log, sizeof log, "%s/gflowd.log", c->paths.data_dir);
	if (gf_pathf(report, sizeof report, "%s/start.%d.report", c->paths.data_dir, (int)getpid()))
		return lc_fail("%s", "data directory path too long");
	unlink(report);
	c->opts.report = report;
	if (gf_pathf(args, sizeof args, "%s/gflowd.args", c->paths.data_dir) == 0)
		unlink(args);	/* none left from a systemd start that failed */

	if (!strcmp(h, "systemd")) {
		/* The unit runs `gflowd run --env-file`; our options follow in gflowd.args. */
		n = opt_args(c, v, 0, num);
		if (write_env_file(&c->paths, envfile, sizeof envfile) ||
		    write_words(c->paths.data_dir, "gflowd.args", v, n, &e))
			return lc_fail("%s", e.msg);
		if (!setup_systemctl(&c->paths, "start", true))
			rc = lc_fail("systemctl%s start gflowd.service failed", c->paths.system ? "" : " --user");
	} else if (!strcmp(h, "tmux")) {
		char *const kill[] = { "/usr/bin/env", "tmux", "kill-session", "-t", "=gflowd", NULL };

		/* A session left from a daemon that died is stale: we hold no lock. */
		exec_spawn(kill, NULL, true, &st, &e);
		if (write_env_file(&c->paths, envfile, sizeof envfile))
			return 1;
		v[n++] = "/usr/bin/env";
		v[n++] = "tmux";
		v[n++] = "new-session";
		v[n++] = "-d";
		v[n++] = "-s";
		v[n++] = "gflowd";
		v[n++] = "--";
		c->log = log;	/* the pane closes with the daemon: its words go to the log */
		run_args(c, v, n, exe, envfile, num);
		rc = exec_spawn(v, log, true, &st, &e);
		if (rc || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = lc_fail("%s", "tmux new-session failed");
	} else {
		run_args(c, v, 0, exe, NULL, num);
		if (exec_spawn(v, log, false, NULL, &e))
			rc = lc_fail("%s", e.msg);
	}
	if (!rc)
		rc = wait_report(report, log, h, 15, &pid);
	if (!rc)
		printf("gflowd started (%s, pid %d)\n", h, (int)pid);
	unlink(report);
	return rc;
}

static int cmd_stop(struct lc *c, bool quiet)
{
	pid_t pid = daemon_pid(&c->paths);

	if (!pid) {
		if (!quiet)
			printf("gflowd is not running\n");
		return 0;
	}
	if (kill(pid, SIGTERM) < 0)
		return lc_fail("cannot signal the daemon: %s", strerror(errno));
	for (int i = 0; i < 300; i++) {
		if (!daemon_pid(&c->paths)) {
			if (!quiet)
				printf("gflowd stopped (running jobs keep running)\n");
			return 0;
		}
		sleep_ms(50);
	}
	return lc_fail("%s", "the daemon did not stop within 15 s");
}

/* Replace the running daemon by a new one with these options, on the same
 * sockets: requests meanwhile wait instead of failing. What is wrong with
 * the new config or options is found before anything is replaced (here,
 * then by the daemon with the new binary), and the daemon goes on as it was. */
static int cmd_reload(struct lc *c)
{
	char exe[GF_PATH_MAX], num[16], dconf[GF_PATH_MAX], report[GF_PATH_MAX + 32], log[GF_PATH_MAX], *v[40];
	const char *refused = "cannot reload, the daemon goes on as it was: ";
	pid_t pid = daemon_pid(&c->paths), now;
	struct daemon_opts o = c->opts;
	struct gf_err e;
	char **envp;
	int n, rc, lock;

	if (!pid)
		return cmd_start(c);
	if (!o.config_path && daemon_config(pid, dconf, sizeof dconf))
		o.config_path = dconf;	/* the file it reads, not ours */
	envp = env_without_overrides();
	rc = check_opts(&o, envp, refused);
	free(envp);
	if (rc)
		return 1;
	if (lc_self_exe(exe, sizeof exe))
		return lc_fail("%s", "cannot find my own executable");
	if (gf_pathf(report, sizeof report, "%s/reload.%d.report", c->paths.data_dir, (int)getpid()) ||
	    gf_pathf(log, sizeof log, "%s/reload.lock", c->paths.data_dir))
		return lc_fail("%s", "data directory path too long");
	/* One reload at a time: reload.args is the daemon's one mailbox. The
	 * lock goes with our exit. */
	if ((lock = open(log, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || flock(lock, LOCK_EX) < 0)
		return lc_fail("cannot lock %s", log);
	unlink(report);
	c->opts.report = report;
	/* reload.args: the executable, then the new `gflowd run` options. */
	v[0] = exe;
	n = opt_args(c, v, 1, num);
	if (write_words(c->paths.data_dir, "reload.args", v, n, &e))
		return lc_fail("%s", e.msg);
	if (kill(pid, SIGUSR2) < 0)
		return lc_fail("cannot signal the daemon: %s", strerror(errno));
	gf_pathf(log, sizeof log, "%s/gflowd.log", c->paths.data_dir);
	for (int i = 0; i < 600; i++) {	/* 30 s: a drain may take 10 */
		struct rep r;

		read_report(report, &r);
		if (r.state == R_READY) {
			unlink(report);
			printf("gflowd reloaded (pid %d; running jobs kept running)\n", (int)r.pid);
			return 0;
		}
		now = daemon_pid(&c->paths);
		if (r.state == R_ERROR && now) {
			unlink(report);
			fprintf(stderr, "gflowd: %s%s\n", refused, r.msg);
			return 1;
		}
		if (!now) {
			unlink(report);
			fprintf(stderr, "gflowd: the daemon stopped while reloading%s%s; its log (%s) ends with:\n",
				r.state == R_ERROR ? ": " : "", r.state == R_ERROR ? r.msg : "", log);
			print_log_tail(log);
			return 1;
		}
		sleep_ms(50);
	}
	unlink(report);
	return lc_fail("%s", "the daemon did not come back within 30 s after reload (see gflowd status)");
}

static const char *fmt_uptime(double secs, char *buf, size_t size)
{
	long s = (long)secs;

	if (s >= 86400)
		snprintf(buf, size, "%ldd %ldh %ldm", s / 86400, s % 86400 / 3600, s % 3600 / 60);
	else if (s >= 3600)
		snprintf(buf, size, "%ldh %ldm %lds", s / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, size, "%ldm %lds", s / 60, s % 60);
	return buf;
}

static int cmd_status(struct lc *c)
{
	pid_t pid;
	json_t *o, *gpus, *track;
	char *body, up[64], sys[GF_PATH_MAX];
	const char *sock = c->paths.socket;
	int st;

	/* The user's own daemon, else the machine's (as the clients choose). */
	if (!c->opts.system && !answers(sock) && !gf_system_socket(sys, sizeof sys) && answers(sys))
		sock = sys;
	st = daemon_get(sock, "/info", &body);
	if (st != 200 || !(o = json_loads(body, 0, NULL))) {
		free(body);
		if ((pid = daemon_pid(&c->paths))) {
			printf("gflowd: running (pid %d) but not answering on %s\n", (int)pid, c->paths.socket);
			return 1;
		}
		printf("gflowd is not running (start your own with: gflowd up; the machine's, as root: gflowd up "
		       "--system)\n");
		return 3;
	}
	free(body);
	gpus = json_object_get(o, "gpus");
	printf("gflowd is running: %s daemon, %s\n", json_string_value(json_object_get(o, "mode")), sock);
	printf("  version:   %s\n", json_string_value(json_object_get(o, "version")));
	printf("  pid:       %d\n", (int)json_integer_value(json_object_get(o, "pid")));
	printf("  hosting:   %s\n", json_string_value(json_object_get(o, "hosting")));
	printf("  uptime:    %s\n",
	       fmt_uptime(now_real() - json_number_value(json_object_get(o, "started_at")), up, sizeof up));
	printf("  executor:  %s\n", json_string_value(json_object_get(o, "executor")));
	printf("  strategy:  %s\n", json_string_value(json_object_get(o, "strategy")));
	printf("  socket:    %s\n", sock);
	if (json_string_value(json_object_get(o, "tcp")))
		printf("  tcp:       %s\n", json_string_value(json_object_get(o, "tcp")));
	else
		printf("  tcp:       none (%s)\n", json_string_value(json_object_get(o, "tcp_note"))
						    ? json_string_value(json_object_get(o, "tcp_note")) : "not served");
	printf("  data:      %s\n", json_string_value(json_object_get(o, "data_dir")));
	printf("  jobs:      %lld\n", (long long)json_integer_value(json_object_get(o, "jobs")));
	if (json_string_value(json_object_get(o, "store_note")))
		printf("  store:     %s\n", json_string_value(json_object_get(o, "store_note")));
	notify_print_status(o);
	if (json_array_size(json_object_get(o, "unreadable_jobs"))) {
		json_t *bad = json_object_get(o, "unreadable_jobs"), *id;
		size_t i;

		/* Store rows set aside: shown as Failed, kept as found. */
		printf("  unreadable: %lld job record%s, kept as found (see the daemon's log):",
		       (long long)json_integer_value(json_object_get(o, "unreadable_count")),
		       json_integer_value(json_object_get(o, "unreadable_count")) == 1 ? "" : "s");
		json_array_foreach(bad, i, id)
			printf(" %lld", (long long)json_integer_value(id));
		printf("%s\n", json_array_size(bad) < (size_t)json_integer_value(json_object_get(o, "unreadable_count"))
					? " …" : "");
	}
	if (json_is_true(json_object_get(gpus, "nvml_ok"))) {
		json_t *a = json_object_get(gpus, "gpus"), *g;
		size_t i;

		printf("  GPUs:      %zu (driver %s)\n", json_array_size(a),
		       json_string_value(json_object_get(gpus, "driver_version")));
		json_array_foreach(a, i, g)
			printf("    %lld  %s  %s\n", (long long)json_integer_value(json_object_get(g, "index")),
			       json_string_value(json_object_get(g, "name")),
			       json_string_value(json_object_get(g, "state")));
	} else
		printf("  GPUs:      none (%s)\n", json_string_value(json_object_get(gpus, "status")));
	track = json_object_get(o, "tracking");
	if (json_is_true(json_object_get(track, "devices_constrained")))
		printf("  devices:   DevicesConstrained=yes (a job opens only its own GPUs)\n");
	else
		printf("  devices:   DevicesConstrained=no (%s)\n",
		       json_string_value(json_object_get(track, "devices_why"))
			       ? json_string_value(json_object_get(track, "devices_why")) : "unknown");
	json_decref(o);
	return 0;
}

/* `gflowd token [--revoke]`: the caller's own token for the TCP API, from
 * the daemon that answers (the personal one, else the system one). */
static int cmd_token(struct lc *c)
{
	char buf[128], sys[GF_PATH_MAX], *body = NULL;
	const char *sock = c->paths.socket;
	json_t *o;
	FILE *f;
	int st;

	if (!c->opts.system && !answers(c->paths.socket) && !gf_system_socket(sys, sizeof sys))
		sock = sys;
	st = daemon_call(sock, "POST", c->revoke ? "/tokens/revoke" : "/tokens", &body);
	o = body ? json_loads(body, 0, NULL) : NULL;
	free(body);
	if (st == 200 && o) {
		if (c->revoke)
			printf("%s\n", json_is_true(json_object_get(o, "revoked")) ? "Your token is revoked"
										   : "You had no token");
		else
			printf("%s\n", json_string_value(json_object_get(o, "token")));
		json_decref(o);
		return 0;
	}
	if (st > 0) {
		lc_fail("%s", o && json_string_value(json_object_get(o, "error")) ? json_string_value(json_object_get(o, "error"))
									       : "the daemon refused");
		json_decref(o);
		return 1;
	}
	json_decref(o);
	if (c->revoke || c->opts.system)
		return lc_fail("no gflowd answers on %s", sock);
	/* No daemon: the personal daemon's own token, which acts as its user. */
	f = fopen(c->paths.token, "re");
	if (!f || !fgets(buf, sizeof buf, f)) {
		if (f)
			fclose(f);
		return lc_fail("no token yet at %s: start the daemon once (gflowd up)", c->paths.token);
	}
	fclose(f);
	fputs(buf, stdout);
	return 0;
}

/* Options from argv[first..argc). Returns 0, or an exit status after
 * saying what is wrong. */
static int parse_opts(struct lc *c, int argc, char **argv, int first, const char **sub)
{
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			c->help = true;
			return 0;
		} else if (!strcmp(a, "--yes") || !strcmp(a, "-y")) {
			c->yes = true;
			takes = false;
		} else if (!strcmp(a, "--force")) {
			c->force = true;
			takes = false;
		} else if (!strcmp(a, "--check")) {
			c->opts.check = true;
			takes = false;
		} else if (!strcmp(a, "--revoke")) {
			c->revoke = true;
			takes = false;
		} else if (!strcmp(a, "--system")) {
			c->opts.system = true;
			takes = false;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			c->opts.verbosity = -1;
			takes = false;
		} else if (!strcmp(a, "--verbose") || (a[0] == '-' && a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1))) {
			c->opts.verbosity = a[1] == '-' ? (c->opts.verbosity > 0 ? c->opts.verbosity : 0) + 1
							: (int)strlen(a + 1);
			if (c->opts.verbosity > 4)
				return lc_fail("'%s': at most -vvvv", a), 2;
			takes = false;
		} else if (!strcmp(a, "--cleanup")) {
			c->cleanup = true;
			takes = false;
		} else if (!strcmp(a, "--advanced")) {
			c->advanced = true;
			takes = false;
		} else if (a[0] != '-') {
			if (*sub)
				return lc_fail("unexpected argument '%s'", a), 2;
			*sub = a;
			takes = false;
		} else if (!val)
			return lc_fail("option %s needs a value", a), 2;
		else if (!strcmp(a, "--gpus"))
			c->opts.gpus = val;
		else if (!strcmp(a, "--gpu-allocation-strategy"))
			c->opts.strategy = val;
		else if (!strcmp(a, "--gpu-poll-interval-secs")) {
			char *end;
			long v = strtol(val, &end, 10);

			if (!*val || *end || v < 1 || v > 3600)
				return lc_fail("--gpu-poll-interval-secs '%s': expected whole seconds, 1 or more",
					    val), 2;
			c->opts.poll_interval = (int)v;
		} else if (!strcmp(a, "--hosting"))
			c->hosting_req = val;
		else if (!strcmp(a, "--config") || !strcmp(a, "-c"))
			c->opts.config_path = val;
		else if (!strcmp(a, "--timezone"))
			c->timezone = val;
		else if (!strcmp(a, "--env-file"))
			c->envfile = val;
		else if (!strcmp(a, "--inherit"))
			c->opts.inherit = val;
		else if (!strcmp(a, "--report"))
			c->opts.report = val;
		else if (!strcmp(a, "--rollback"))
			c->opts.rollback = val;
		else if (!strcmp(a, "--log"))
			c->log = val;
		else if (!strcmp(a, "--host"))
			c->host = val;
		else if (!strcmp(a, "--port"))
			c->port = val;
		else if (!strcmp(a, "--executor"))
			c->executor = val;
		else if (!strcmp(a, "--root")) {
			/* The system daemon's files under DIR (tests; a chroot). */
			if (val[0] != '/')
				return lc_fail("--root '%s': expected an absolute directory", val), 2;
			setenv("GFLOW_SYSTEM_ROOT", val, 1);
			c->opts.system = true;
		} else
			return lc_fail("unknown option '%s' (see gflowd --help)", a), 2;
		if (takes)
			i++;
	}
	return 0;
}

/* `gflowd run` under systemd: the options `gflowd up` left beside the
 * environment file (the unit's command line is fixed). */
static int parse_args_file(struct lc *c, const char **sub)
{
	char path[GF_PATH_MAX + 16], *slash, *words[64];
	size_t len = 0, cap = 0, k;
	int n = 0, fd;
	ssize_t r;

	snprintf(path, sizeof path, "%s", c->envfile);
	if (!(slash = strrchr(path, '/')))
		return 0;
	snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "gflowd.args");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	do {
		if (len + 4097 > cap && !(c->args_blob = realloc(c->args_blob, cap = (len + 4097) * 2)))
			abort();
		r = read(fd, c->args_blob + len, cap - len - 1);
		len += r > 0 ? (size_t)r : 0;
	} while (r > 0);
	close(fd);
	unlink(path);
	c->args_blob[len] = '\0';
	words[n++] = "gflowd";
	for (size_t off = 0; off < len && n < 63; off += k + 1) {
		k = strlen(c->args_blob + off);
		words[n++] = c->args_blob + off;
	}
	words[n] = NULL;
	return parse_opts(c, n, words, 1, sub);
}

/* run --log: our stdout and stderr go to the log from the first word on. */
static int to_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return lc_fail("cannot open the log %s", path);
	fflush(NULL);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	return 0;
}

static int dispatch(struct lc *c, const char *cmd, const char *sub, const char *usage)
{
	struct gf_err e;
	int rc;

	if (c->help) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "run")) {
		gflowd_verbosity = c->opts.verbosity;
		if (c->log && to_log(c->log))
			return 1;
		if (c->envfile && load_env_file(c->envfile))
			return 1;
		if (c->envfile && (rc = parse_args_file(c, &sub)))
			return rc;
		c->opts.hosting = c->hosting_req ? c->hosting_req : "foreground";
		return server_run(&c->opts);
	}
	if ((c->opts.system ? gf_paths_init_system(&c->paths, &e) : gf_paths_init(&c->paths, &e)))
		return lc_fail("%s", e.msg);
	if (c->opts.system && geteuid() != 0 && strcmp(cmd, "status") && strcmp(cmd, "token") &&
	    strcmp(cmd, "completion"))
		return lc_fail("'gflowd %s --system' acts on the machine's daemon, which is root's: run it as root "
			    "(e.g. sudo gflowd ... --system)", cmd);
	/* The daemon runs elsewhere (cwd) than we do: give it the full path. */
	if (c->opts.config_path && c->opts.config_path[0] != '/' && strcmp(cmd, "init")) {
		char cwd[GF_PATH_MAX];

		if (!getcwd(cwd, sizeof cwd) || asprintf(&c->config_abs, "%s/%s", cwd, c->opts.config_path) < 0)
			return lc_fail("%s", "cannot find the current directory");
		c->opts.config_path = c->config_abs;
	}
	if (!strcmp(cmd, "start") || !strcmp(cmd, "up"))
		return cmd_start(c);
	if (!strcmp(cmd, "stop") || !strcmp(cmd, "down"))
		return cmd_stop(c, false);
	if (!strcmp(cmd, "reload"))
		return cmd_reload(c);
	if (!strcmp(cmd, "restart")) {
		/* A bad config must not cost the running daemon. */
		if (check_opts(&c->opts, environ, "cannot restart, the daemon goes on as it was: ") ||
		    cmd_stop(c, true))
			return 1;
		return cmd_start(c);
	}
	if (!strcmp(cmd, "status"))
		return cmd_status(c);
	if (!strcmp(cmd, "token"))
		return cmd_token(c);
	if (!strcmp(cmd, "init"))
		return setup_init(c);
	if (!strcmp(cmd, "service"))
		return setup_service(c, sub);
	if (!strcmp(cmd, "completion"))
		return setup_completion(sub);
	return lc_fail("unknown command '%s' (see gflowd --help)", cmd), 2;
}

/* Global options may come before the command (`gflowd -c FILE -v up`):
 * the command word moves to the front; -c/--config take a value. */
static char **command_first(int argc, char **argv)
{
	char **v = calloc((size_t)argc + 2, sizeof *v);
	int i, n = 1;

	if (!v)
		abort();
	for (i = 0; i < argc && argv[i][0] == '-'; i++)
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc)
			i++;
	v[0] = i < argc ? argv[i] : NULL;
	for (int k = 0; k < argc; k++)
		if (k != i)
			v[n++] = argv[k];
	v[n] = NULL;
	return v;
}

int lifecycle_main(int argc, char **argv, const char *usage)
{
	const char *sub = NULL;
	char **v = command_first(argc, argv);
	struct lc c;
	int rc;

	memset(&c, 0, sizeof c);
	rc = parse_opts(&c, argc + !v[0], v, 1, &sub);
	if (!rc && !v[0] && !c.help && !c.cleanup)
		rc = (lc_fail("%s", "missing command (see gflowd --help)"), 2);
	if (!rc && (c.timezone || c.advanced) && (!v[0] || strcmp(v[0], "init")))
		rc = (lc_fail("%s is for gflowd init", c.timezone ? "--timezone" : "--advanced"), 2);
	if (!rc && c.cleanup && v[0])
		rc = (lc_fail("--cleanup removes the config file and does nothing else: give it without '%s'", v[0]), 2);
	if (!rc && c.cleanup && !c.help)
		rc = gf_paths_init(&c.paths, NULL) ? lc_fail("%s", "cannot find the config directory") : setup_cleanup(&c);
	else if (!rc)
		rc = dispatch(&c, v[0] ? v[0] : "help", sub, usage);
	free(v);
	free(c.config_abs);
	free(c.args_blob);
	return rc;
}
