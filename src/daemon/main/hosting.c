/* hosting.c — starting and replacing the daemon: start (hosted by a
 * systemd service, tmux or a detached process) and reload, the checks made
 * before either (server_check), and the report a starting daemon writes
 * (--report: its pid, then "ready" or why not), waited on so that what
 * went wrong is shown at once. Liveness is the flock on the lock file,
 * never a bare pid. */
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


extern char **environ;
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

int lc_load_env_file(const char *path)
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
int lc_check_opts(const struct daemon_opts *o, char *const *envp, const char *doing)
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
		lc_sleep_ms(10);
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
		lc_sleep_ms(50);
	}
	fprintf(stderr, "gflowd: the daemon did not answer within %.0f s; its log (%s) ends with:\n", secs, log);
	print_log_tail(log);
	return 1;
}

int lc_cmd_start(struct lc *c)
{
	char exe[GF_PATH_MAX], envfile[GF_PATH_MAX], log[GF_PATH_MAX], report[GF_PATH_MAX + 32], num[16], *v[48];
	char args[GF_PATH_MAX + 16];
	struct gf_err e;
	pid_t pid = lc_daemon_pid(&c->paths);
	const char *h = c->hosting_req ? c->hosting_req : "auto";
	int rc = 0, st, n = 0;

	if (pid)
		return lc_fail("gflowd is already running (pid %s); use 'gflowd restart' to replace it",
			    (snprintf(num, sizeof num, "%d", (int)pid), num));
	if (strcmp(h, "auto") && strcmp(h, "systemd") && strcmp(h, "tmux") && strcmp(h, "process"))
		return lc_fail("--hosting '%s': expected auto, systemd, tmux or process", h);
	/* The daemon gets our environment (directly or through the env file). */
	if (lc_check_opts(&c->opts, environ, ""))
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

/* Replace the running daemon by a new one with these options, on the same
 * sockets: requests meanwhile wait instead of failing. What is wrong with
 * the new config or options is found before anything is replaced (here,
 * then by the daemon with the new binary), and the daemon goes on as it was. */
int lc_cmd_reload(struct lc *c)
{
	char exe[GF_PATH_MAX], num[16], dconf[GF_PATH_MAX], report[GF_PATH_MAX + 32], log[GF_PATH_MAX], *v[40];
	const char *refused = "cannot reload, the daemon goes on as it was: ";
	pid_t pid = lc_daemon_pid(&c->paths), now;
	struct daemon_opts o = c->opts;
	struct gf_err e;
	char **envp;
	int n, rc, lock;

	if (!pid)
		return lc_cmd_start(c);
	if (!o.config_path && daemon_config(pid, dconf, sizeof dconf))
		o.config_path = dconf;	/* the file it reads, not ours */
	envp = env_without_overrides();
	rc = lc_check_opts(&o, envp, refused);
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
		now = lc_daemon_pid(&c->paths);
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
		lc_sleep_ms(50);
	}
	unlink(report);
	return lc_fail("%s", "the daemon did not come back within 30 s after reload (see gflowd status)");
}
