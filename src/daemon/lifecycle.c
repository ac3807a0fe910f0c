/* lifecycle.c — managing the daemon: start (hosted by a systemd user
 * service, tmux or a detached process), stop, restart, status, init, the
 * systemd unit, and the token. Liveness is the flock on the lock file, never
 * a bare pid. */
#include "lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "paths.h"
#include "runfile.h"
#include "server.h"

extern char **environ;

struct lc {
	struct daemon_opts opts;
	struct gf_paths paths;
	const char *hosting_req;	/* --hosting */
	/* init */
	bool yes, force;
	const char *host, *port, *executor;
};

static int fail(const char *fmt, const char *a)
{
	fprintf(stderr, "gflowd: ");
	fprintf(stderr, fmt, a);
	fputc('\n', stderr);
	return 1;
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
static int daemon_get(const char *sock, const char *path, char **body)
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
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: gflowd\r\nConnection: close\r\n\r\n", path);
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

static bool answers(const struct gf_paths *p)
{
	char *body;
	int st = daemon_get(p->socket, "/health", &body);

	free(body);
	return st == 200;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int self_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
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
		return fail("%s", e.msg);
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
		return fail("cannot read the environment file %s", path);
	clearenv();
	while ((n = getdelim(&line, &cap, '\0', f)) > 0)
		if (strchr(line, '='))
			putenv(strdup(line));
	free(line);
	fclose(f);
	unlink(path);
	return 0;
}

static const char *unit_path(const struct gf_paths *p, char *buf, size_t size)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");

	if (xdg && *xdg == '/')
		gf_pathf(buf, size, "%s/systemd/user/gflowd.service", xdg);
	else
		gf_pathf(buf, size, "%s/.config/systemd/user/gflowd.service", p->home);
	return buf;
}

static bool systemd_usable(const struct gf_paths *p)
{
	char unit[GF_PATH_MAX];
	char *const argv[] = { "/usr/bin/env", "systemctl", "--user", "--quiet", "is-system-running", NULL };
	struct gf_err e;
	int st;

	if (access(unit_path(p, unit, sizeof unit), R_OK) < 0)
		return false;
	return exec_spawn(argv, NULL, true, &st, &e) == 0 && WIFEXITED(st) &&
	       (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1);
}

static bool have_tmux(void)
{
	char *const argv[] = { "/usr/bin/env", "tmux", "-V", NULL };
	struct gf_err e;
	int st;

	return exec_spawn(argv, NULL, true, &st, &e) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The `gflowd run` arguments that carry start's options. */
static int run_args(struct lc *c, char **v, int n, char *exe, char *envfile, char *num)
{
	v[n++] = exe;
	v[n++] = "run";
	if (envfile) {
		v[n++] = "--env-file";
		v[n++] = envfile;
	}
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
	v[n++] = "--hosting";
	v[n++] = (char *)c->opts.hosting;
	v[n] = NULL;
	return n;
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

static int cmd_start(struct lc *c)
{
	char exe[GF_PATH_MAX], envfile[GF_PATH_MAX], log[GF_PATH_MAX], num[16], *v[40];
	struct gf_err e;
	pid_t pid = daemon_pid(&c->paths);
	const char *h = c->hosting_req ? c->hosting_req : "auto";
	int rc = 0, st, n = 0;

	if (pid)
		return fail("gflowd is already running (pid %s); use 'gflowd restart' to replace it",
			    (snprintf(num, sizeof num, "%d", (int)pid), num));
	if (gf_paths_create(&c->paths, &e))
		return fail("%s", e.msg);
	if (self_exe(exe, sizeof exe))
		return fail("%s", "cannot find my own executable");
	if (!strcmp(h, "auto"))
		h = systemd_usable(&c->paths) ? "systemd" : have_tmux() ? "tmux" : "process";
	c->opts.hosting = h;
	gf_pathf(log, sizeof log, "%s/gflowd.log", c->paths.data_dir);

	if (!strcmp(h, "systemd")) {
		char *const sv[] = { "/usr/bin/env", "systemctl", "--user", "start", "gflowd.service", NULL };

		if (write_env_file(&c->paths, envfile, sizeof envfile))
			return 1;
		rc = exec_spawn(sv, log, true, &st, &e);
		if (rc || !WIFEXITED(st) || WEXITSTATUS(st))
			return fail("%s", "systemctl --user start gflowd.service failed");
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
		run_args(c, v, n, exe, envfile, num);
		rc = exec_spawn(v, log, true, &st, &e);
		if (rc || !WIFEXITED(st) || WEXITSTATUS(st))
			return fail("%s", "tmux new-session failed");
	} else if (!strcmp(h, "process")) {
		run_args(c, v, 0, exe, NULL, num);
		if (exec_spawn(v, log, false, NULL, &e))
			return fail("%s", e.msg);
	} else
		return fail("--hosting '%s': expected auto, systemd, tmux or process", h);

	for (int i = 0; i < 300; i++) {
		if (answers(&c->paths)) {
			printf("gflowd started (%s, pid %d)\n", h, (int)daemon_pid(&c->paths));
			return 0;
		}
		sleep_ms(50);
	}
	fprintf(stderr, "gflowd: the daemon did not answer within 15 s; its log (%s) ends with:\n", log);
	print_log_tail(log);
	return 1;
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
		return fail("cannot signal the daemon: %s", strerror(errno));
	for (int i = 0; i < 300; i++) {
		if (!daemon_pid(&c->paths)) {
			if (!quiet)
				printf("gflowd stopped (running jobs keep running)\n");
			return 0;
		}
		sleep_ms(50);
	}
	return fail("%s", "the daemon did not stop within 15 s");
}

static double started_at(const struct gf_paths *p)
{
	char *body;
	json_t *o;
	double t = 0;

	if (daemon_get(p->socket, "/info", &body) == 200 && (o = json_loads(body, 0, NULL))) {
		t = json_number_value(json_object_get(o, "started_at"));
		json_decref(o);
	}
	free(body);
	return t;
}

/* Replace the running daemon by a new one with these options, on the same
 * sockets: requests meanwhile wait instead of failing. */
static int cmd_reload(struct lc *c)
{
	char exe[GF_PATH_MAX], num[16], *v[40], blob[8192];
	pid_t pid = daemon_pid(&c->paths);
	size_t len = 0;
	double before;
	struct gf_err e;
	int n;

	if (!pid)
		return cmd_start(c);
	before = started_at(&c->paths);
	c->opts.hosting = "unchanged";
	n = run_args(c, v, 0, exe, NULL, num);
	/* v: exe run [options] --hosting X: the options alone are passed on */
	for (int i = 2; i < n - 2; i++) {
		size_t k = strlen(v[i]) + 1;

		if (len + k > sizeof blob)
			return fail("%s", "too many options");
		memcpy(blob + len, v[i], k);
		len += k;
	}
	if (write_file_atomic(c->paths.data_dir, "reload.args", blob, len, &e))
		return fail("%s", e.msg);
	if (kill(pid, SIGUSR2) < 0)
		return fail("cannot signal the daemon: %s", strerror(errno));
	for (int i = 0; i < 300; i++) {
		double now = started_at(&c->paths);

		if (now > 0 && now != before) {
			printf("gflowd reloaded (pid %d; running jobs kept running)\n", (int)daemon_pid(&c->paths));
			return 0;
		}
		sleep_ms(50);
	}
	return fail("%s", "the daemon did not come back within 15 s after reload (see gflowd status)");
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
	pid_t pid = daemon_pid(&c->paths);
	json_t *o, *gpus;
	char *body, up[64];
	int st;

	if (!pid) {
		printf("gflowd is not running (start it with: gflowd up)\n");
		return 3;
	}
	st = daemon_get(c->paths.socket, "/info", &body);
	if (st != 200 || !(o = json_loads(body, 0, NULL))) {
		free(body);
		printf("gflowd: running (pid %d) but not answering on %s\n", (int)pid, c->paths.socket);
		return 1;
	}
	free(body);
	gpus = json_object_get(o, "gpus");
	printf("gflowd is running\n");
	printf("  version:   %s\n", json_string_value(json_object_get(o, "version")));
	printf("  pid:       %d\n", (int)json_integer_value(json_object_get(o, "pid")));
	printf("  hosting:   %s\n", json_string_value(json_object_get(o, "hosting")));
	printf("  uptime:    %s\n",
	       fmt_uptime(now_real() - json_number_value(json_object_get(o, "started_at")), up, sizeof up));
	printf("  executor:  %s\n", json_string_value(json_object_get(o, "executor")));
	printf("  strategy:  %s\n", json_string_value(json_object_get(o, "strategy")));
	printf("  socket:    %s\n", c->paths.socket);
	printf("  data:      %s\n", json_string_value(json_object_get(o, "data_dir")));
	printf("  jobs:      %lld\n", (long long)json_integer_value(json_object_get(o, "jobs")));
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
	json_decref(o);
	return 0;
}

static int cmd_token(struct lc *c)
{
	char buf[128];
	FILE *f = fopen(c->paths.token, "re");

	if (!f || !fgets(buf, sizeof buf, f)) {
		if (f)
			fclose(f);
		return fail("no token yet at %s: start the daemon once (gflowd up)", c->paths.token);
	}
	fclose(f);
	fputs(buf, stdout);
	return 0;
}

static void ask(const char *what, const char *def, char *out, size_t size, bool yes)
{
	snprintf(out, size, "%s", def);
	if (yes || !isatty(0))
		return;
	printf("%s [%s]: ", what, def);
	fflush(stdout);
	if (fgets(out, (int)size, stdin)) {
		out[strcspn(out, "\n")] = '\0';
		if (!*out)
			snprintf(out, size, "%s", def);
	}
}

static int cmd_init(struct lc *c)
{
	char path[GF_PATH_MAX + 16], host[256], port[16], gpus[256], ex[32], strat[32], text[2048];
	struct stat st;
	struct gf_err e;
	struct gf_config check;
	int n;

	snprintf(path, sizeof path, "%s/gflow.toml", c->paths.config_dir);
	if (!c->force && stat(path, &st) == 0)
		return fail("%s exists already; use --force to overwrite it", path);
	ask("host", c->host ? c->host : "localhost", host, sizeof host, c->yes);
	ask("port", c->port ? c->port : "59000", port, sizeof port, c->yes);
	ask("GPUs gflow may use (all, or e.g. 0,2 or 0-3)", c->opts.gpus ? c->opts.gpus : "all", gpus,
	    sizeof gpus, c->yes);
	ask("executor (tmux or process)", c->executor ? c->executor : "tmux", ex, sizeof ex, c->yes);
	ask("GPU allocation strategy (sequential or random)", c->opts.strategy ? c->opts.strategy : "sequential",
	    strat, sizeof strat, c->yes);
	n = snprintf(text, sizeof text,
		     "# gflow configuration (written by gflowd init)\n\n"
		     "[daemon]\nhost = \"%s\"\nport = %s\n%s%s%s"
		     "gpu_allocation_strategy = \"%s\"\ngpu_poll_interval_secs = 10\n\n"
		     "[executor]\ntype = \"%s\"\n",
		     host, port, strcmp(gpus, "all") ? "gpus = \"" : "# gpus = [0, 1]\n",
		     strcmp(gpus, "all") ? gpus : "", strcmp(gpus, "all") ? "\"\n" : "", strat, ex);
	if (gf_mkdir_p(c->paths.config_dir, 0700, &e) ||
	    write_file_atomic(c->paths.config_dir, "gflow.toml", text, (size_t)n, &e))
		return fail("%s", e.msg);
	/* Check what we wrote the way the daemon will read it. */
	if (gf_config_load(path, environ, &check, &e)) {
		unlink(path);
		return fail("%s", e.msg);
	}
	gf_config_free(&check);
	printf("Wrote %s\n", path);
	return 0;
}

static int cmd_service(struct lc *c, const char *what)
{
	char unit[GF_PATH_MAX], dir[GF_PATH_MAX], exe[GF_PATH_MAX], text[GF_PATH_MAX * 2], *slash;
	char *const reload[] = { "/usr/bin/env", "systemctl", "--user", "daemon-reload", NULL };
	struct gf_err e;
	int st, n;

	unit_path(&c->paths, unit, sizeof unit);
	if (what && !strcmp(what, "uninstall")) {
		if (unlink(unit) < 0 && errno != ENOENT)
			return fail("cannot remove the unit: %s", strerror(errno));
		exec_spawn(reload, NULL, true, &st, &e);
		printf("Removed %s\n", unit);
		return 0;
	}
	if (!what || strcmp(what, "install"))
		return fail("%s", "usage: gflowd service install|uninstall"), 2;
	if (self_exe(exe, sizeof exe))
		return fail("%s", "cannot find my own executable");
	snprintf(dir, sizeof dir, "%s", unit);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	n = snprintf(text, sizeof text,
		     "[Unit]\nDescription=gflow GPU job scheduler\n\n"
		     "[Service]\nType=simple\n"
		     "ExecStart=/bin/sh -c 'f=\"%s/gflowd.env\"; if [ -f \"$f\" ]; then exec \"%s\" run "
		     "--env-file \"$f\" --hosting systemd; else exec \"%s\" run --hosting systemd; fi'\n"
		     "Restart=on-failure\nRestartSec=2\nKillMode=process\n\n"
		     "[Install]\nWantedBy=default.target\n",
		     c->paths.data_dir, exe, exe);
	if (gf_mkdir_p(dir, 0755, &e) || write_file_atomic(dir, "gflowd.service", text, (size_t)n, &e))
		return fail("%s", e.msg);
	exec_spawn(reload, NULL, true, &st, &e);
	printf("Wrote %s\n(enable it at login with: systemctl --user enable gflowd)\n", unit);
	return 0;
}

static const char completion_bash[] =
	"_gflowd() {\n"
	"  local cur=${COMP_WORDS[COMP_CWORD]}\n"
	"  if [ $COMP_CWORD -eq 1 ]; then\n"
	"    COMPREPLY=($(compgen -W 'start up stop down restart reload status run init service token "
	"completion --help --version' -- \"$cur\"))\n"
	"  else\n"
	"    COMPREPLY=($(compgen -W '--gpus --gpu-allocation-strategy --gpu-poll-interval-secs --hosting "
	"--config --yes --force --host --port --executor' -- \"$cur\"))\n"
	"  fi\n"
	"}\ncomplete -F _gflowd gflowd\n";

static int cmd_completion(const char *shell)
{
	if (!shell)
		return fail("%s", "usage: gflowd completion bash|zsh|fish"), 2;
	if (!strcmp(shell, "bash"))
		fputs(completion_bash, stdout);
	else if (!strcmp(shell, "zsh"))
		printf("autoload -U bashcompinit && bashcompinit\n%s", completion_bash);
	else if (!strcmp(shell, "fish"))
		printf("complete -c gflowd -f -n '__fish_use_subcommand' -a 'start up stop down restart reload "
		       "status run init service token completion'\n");
	else
		return fail("unknown shell '%s' (bash, zsh or fish)", shell), 2;
	return 0;
}

int lifecycle_main(int argc, char **argv, const char *usage)
{
	const char *cmd = argv[0], *envfile = NULL, *sub = NULL;
	struct lc c;
	struct gf_err e;

	memset(&c, 0, sizeof c);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "--yes") || !strcmp(a, "-y")) {
			c.yes = true;
			takes = false;
		} else if (!strcmp(a, "--force")) {
			c.force = true;
			takes = false;
		} else if (a[0] != '-') {
			if (sub)
				return fail("unexpected argument '%s'", a), 2;
			sub = a;
			takes = false;
		} else if (!val)
			return fail("option %s needs a value", a), 2;
		else if (!strcmp(a, "--gpus"))
			c.opts.gpus = val;
		else if (!strcmp(a, "--gpu-allocation-strategy"))
			c.opts.strategy = val;
		else if (!strcmp(a, "--gpu-poll-interval-secs")) {
			char *end;
			long v = strtol(val, &end, 10);

			if (*end || v < 1 || v > 3600)
				return fail("--gpu-poll-interval-secs '%s': expected whole seconds, 1 or more",
					    val), 2;
			c.opts.poll_interval = (int)v;
		} else if (!strcmp(a, "--hosting"))
			c.hosting_req = val;
		else if (!strcmp(a, "--config"))
			c.opts.config_path = val;
		else if (!strcmp(a, "--env-file"))
			envfile = val;
		else if (!strcmp(a, "--inherit"))
			c.opts.inherit = val;
		else if (!strcmp(a, "--host"))
			c.host = val;
		else if (!strcmp(a, "--port"))
			c.port = val;
		else if (!strcmp(a, "--executor"))
			c.executor = val;
		else
			return fail("unknown option '%s' (see gflowd --help)", a), 2;
		if (takes)
			i++;
	}
	if (envfile && load_env_file(envfile))
		return 1;
	if (gf_paths_init(&c.paths, &e))
		return fail("%s", e.msg);

	if (!strcmp(cmd, "run")) {
		c.opts.hosting = c.hosting_req ? c.hosting_req : "foreground";
		return server_run(&c.opts);
	}
	if (!strcmp(cmd, "start") || !strcmp(cmd, "up"))
		return cmd_start(&c);
	if (!strcmp(cmd, "stop") || !strcmp(cmd, "down"))
		return cmd_stop(&c, false);
	if (!strcmp(cmd, "reload"))
		return cmd_reload(&c);
	if (!strcmp(cmd, "restart")) {
		if (cmd_stop(&c, true))
			return 1;
		return cmd_start(&c);
	}
	if (!strcmp(cmd, "status"))
		return cmd_status(&c);
	if (!strcmp(cmd, "token"))
		return cmd_token(&c);
	if (!strcmp(cmd, "init"))
		return cmd_init(&c);
	if (!strcmp(cmd, "service"))
		return cmd_service(&c, sub);
	if (!strcmp(cmd, "completion"))
		return cmd_completion(sub);
	return fail("unknown command '%s' (see gflowd --help)", cmd), 2;
}
