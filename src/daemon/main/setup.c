/* setup.c — setting gflow up on a machine: `gflowd init` (the config
 * file, personal or --system), the systemd unit (`gflowd service
 * install|uninstall`, a user unit or the machine's system unit), shell
 * completion, and --cleanup. */
#include "lcint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "parse.h"
#include "runfile.h"

/* The unit: the user's (~/.config/systemd/user) or, for the machine's
 * daemon, a system unit under the system root. */
static const char *unit_path(const struct gf_paths *p, char *buf, size_t size)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");

	if (p->system)
		gf_pathf(buf, size, "%s/etc/systemd/system/gflowd.service", gf_system_root());
	else if (xdg && *xdg == '/')
		gf_pathf(buf, size, "%s/systemd/user/gflowd.service", xdg);
	else
		gf_pathf(buf, size, "%s/.config/systemd/user/gflowd.service", p->home);
	return buf;
}

/* systemctl [--user] VERB [gflowd.service]: did it exit 0? */
bool setup_systemctl(const struct gf_paths *p, const char *verb, bool unit)
{
	char *argv[8];
	struct gf_err e;
	int n = 0, st;

	argv[n++] = "/usr/bin/env";
	argv[n++] = "systemctl";
	if (!p->system)
		argv[n++] = "--user";
	argv[n++] = (char *)verb;
	if (unit)
		argv[n++] = "gflowd.service";
	argv[n] = NULL;
	return exec_spawn(argv, NULL, true, &st, &e) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Is there a systemd manager for this daemon's unit: the user's, or the
 * machine's (booted with systemd, and the system root is the real one)? */
static bool have_manager(const struct gf_paths *p)
{
	if (p->system)
		return !*gf_system_root() && access("/run/systemd/system", F_OK) == 0;
	return setup_systemctl(p, "show-environment", false);
}

/* The machine's unit may also be the Debian package's (debian/). */
bool setup_systemd_usable(const struct gf_paths *p)
{
	char unit[GF_PATH_MAX];
	bool pkg = p->system && !*gf_system_root() && access("/usr/lib/systemd/system/gflowd.service", R_OK) == 0;

	return (pkg || access(unit_path(p, unit, sizeof unit), R_OK) == 0) && have_manager(p);
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

/* s as a TOML basic string, quotes included. */
static void toml_quote(const char *s, char *out, size_t size)
{
	size_t n = 0;

	out[n++] = '"';
	for (; *s && n + 8 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			n += (size_t)snprintf(out + n, size - n, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			n += (size_t)snprintf(out + n, size - n, "\\u%04x", ch);
		else
			out[n++] = (char)ch;
	}
	out[n++] = '"';
	out[n] = '\0';
}

/* init --timezone: "local" (none written) or a zone this machine knows. */
static int check_timezone(const char *tz)
{
	struct gf_err e;

	if (gf_timezone_check(tz, &e))
		return lc_fail("--timezone: %s", e.msg);
	return 0;
}

/* init --advanced: the sections most users never need. Projects are
 * asked (the daemon enforces them); fair share, quotas and notifications
 * are written as commented examples. */
static int advanced_text(struct lc *c, char *buf, size_t size)
{
	char names[512], req[16], list[1024] = "", q[300], *save = NULL, *tok;
	size_t n = 0;

	ask("projects jobs may name (comma list; empty: any)", "", names, sizeof names, c->yes);
	ask("must every job name a project (yes or no)", "no", req, sizeof req, c->yes);
	if (strcmp(req, "yes") && strcmp(req, "no"))
		return lc_fail("require project '%s': expected yes or no", req), -1;
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		tok[strcspn(tok, " ")] = '\0';
		if (!*tok)
			continue;
		toml_quote(tok, q, sizeof q);
		n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s%s", n ? ", " : "", q);
	}
	if (n >= sizeof list)
		return lc_fail("%s", "too many projects"), -1;
	return snprintf(buf, size,
			"\n[projects]\n%sknown_projects = [%s]\nrequire_project = %s\n\n"
			"# [daemon.fair_share]\n# enabled = true\n# half_life_secs = 604800\n\n"
			"# [quota.default_user]\n# max_running_jobs = 4\n# max_running_gpus = 2\n"
			"# max_queued_jobs = 100\n\n"
			"# [notifications]\n# enabled = true\n# [[notifications.webhooks]]\n"
			"# url = \"https://example.com/gflow-hook\"\n# events = [\"job_completed\", \"job_failed\"]\n",
			n ? "" : "# ", list, req[0] == 'y' ? "true" : "false");
}

int setup_init(struct lc *c)
{
	char def[GF_PATH_MAX + 16], dir[GF_PATH_MAX + 16], host[256], port[16], gpus[256], ex[32], strat[32];
	char poll[16], poll_def[16], qhost[1600], qgpus[1600], text[4096], adv[1024] = "", tz[160] = "";
	char *slash, *end;
	const char *path = c->opts.config_path;
	struct stat st;
	struct gf_err e;
	uint64_t mask;
	long v;
	int n, all;

	if (!path) {
		snprintf(def, sizeof def, "%s/gflow.toml", c->paths.config_dir);
		path = def;
	}
	if (!c->force && stat(path, &st) == 0)
		return lc_fail("%s exists already; use --force to overwrite it", path);
	snprintf(poll_def, sizeof poll_def, "%d", c->opts.poll_interval ? c->opts.poll_interval : 10);
	ask("host", c->host ? c->host : "localhost", host, sizeof host, c->yes);
	ask("port", c->port ? c->port : "59000", port, sizeof port, c->yes);
	ask("GPUs gflow may use (all, or e.g. 0,2 or 0-3)", c->opts.gpus ? c->opts.gpus : "all", gpus,
	    sizeof gpus, c->yes);
	ask("executor (tmux or process)", c->executor ? c->executor : "tmux", ex, sizeof ex, c->yes);
	ask("GPU allocation strategy (sequential or random)", c->opts.strategy ? c->opts.strategy : "sequential",
	    strat, sizeof strat, c->yes);
	ask("GPU poll interval in seconds", poll_def, poll, sizeof poll, c->yes);
	ask("time zone (an IANA name like Asia/Shanghai, or local)", c->timezone ? c->timezone : "local", tz,
	    sizeof tz, c->yes);
	if (check_timezone(tz))
		return 1;
	if (c->advanced && advanced_text(c, adv, sizeof adv) < 0)
		return 1;
	if (!c->advanced && c->paths.system)	/* the machine's: its sharing rules, to uncomment */
		snprintf(adv, sizeof adv, "\n# Sharing rules (README, \"Sharing one machine fairly\"):\n"
			 "# [quota.default_user]\n# max_running_gpus = 2\n# max_queued_jobs = 100\n");
	/* Each answer checked on its own, so that the message names it. */
	if (!*host)
		return lc_fail("%s", "--host: must not be empty");
	v = strtol(port, &end, 10);
	if (!*port || *end || v < 1 || v > 65535)
		return lc_fail("--port '%s': expected a port number, 1 to 65535", port);
	if (gf_parse_gpu_spec(gpus, &mask, &all, &e))
		return lc_fail("--gpus: %s", e.msg);
	if (strcmp(ex, "tmux") && strcmp(ex, "process"))
		return lc_fail("--executor '%s': expected tmux or process", ex);
	if (strcmp(strat, "sequential") && strcmp(strat, "random"))
		return lc_fail("--gpu-allocation-strategy '%s': expected sequential or random", strat);
	v = strtol(poll, &end, 10);
	if (!*poll || *end || v < 1 || v > 3600)
		return lc_fail("--gpu-poll-interval-secs '%s': expected whole seconds, 1 or more", poll);
	toml_quote(host, qhost, sizeof qhost);
	toml_quote(gpus, qgpus, sizeof qgpus);
	n = snprintf(text, sizeof text,
		     "# gflow configuration (written by gflowd init%s)\n\n%s%s%s"
		     "[daemon]\nhost = %s\nport = %s\n%s%s%s"
		     "gpu_allocation_strategy = \"%s\"\ngpu_poll_interval_secs = %ld\n%s\n"
		     "[executor]\ntype = \"%s\"\n"
		     "\n# Idle reclaim, off unless this table is given (gflow.toml(5)): a job whose GPUs\n"
		     "# stay idle is warned, then the action is taken.\n"
		     "# [gpu.idle_reclaim]\n# after = \"2h\"\n# threshold_util = 5\n# action = \"warn\"\n"
		     "# warn_before = \"15m\"\n# apply_to = \"interactive\"\n%s",
		     c->paths.system ? " --system" : "", strcmp(tz, "local") ? "timezone = \"" : "",
		     strcmp(tz, "local") ? tz : "", strcmp(tz, "local") ? "\"\n\n" : "", qhost, port,
		     all ? "# gpus = [0, 1]\n" : "gpus = ", all ? "" : qgpus, all ? "" : "\n", strat, v,
		     c->paths.system ? "# Members of this Unix group administer every job (root always does):\n"
				       "# admin_group = \"gflow-admins\"\n" : "",
		     ex, adv);
	if (n < 0 || n >= (int)sizeof text)
		return lc_fail("%s", "the configuration is too long");
	/* Check what we write the way the daemon will read it, before writing. */
	if (gf_config_check_text(path, text, (size_t)n, &e))
		return lc_fail("%s", e.msg);
	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	/* The machine's config is root's and readable by all (it holds no
	 * secret: tokens live in the store); a user's is theirs alone. */
	if (gf_mkdir_p(dir, c->paths.system ? 0755 : 0700, &e) ||
	    write_file_atomic(dir, slash ? path + (slash - dir) + 1 : path, text, (size_t)n, &e))
		return lc_fail("%s", e.msg);
	if (c->paths.system)
		chmod(path, 0644);
	printf("Wrote %s\n", path);
	if (c->paths.system)
		printf("Start the machine's daemon with: gflowd up --system (or at boot: gflowd service install "
		       "--system)\n");
	return 0;
}

int setup_service(struct lc *c, const char *what)
{
	char unit[GF_PATH_MAX], dir[GF_PATH_MAX], exe[GF_PATH_MAX], text[GF_PATH_MAX * 3], root[GF_PATH_MAX + 16];
	const char *sys = c->paths.system ? " --system" : "", *user = c->paths.system ? "" : " --user", *slash;
	struct gf_err e;
	int n;

	unit_path(&c->paths, unit, sizeof unit);
	if (what && !strcmp(what, "uninstall")) {
		if (have_manager(&c->paths))
			setup_systemctl(&c->paths, "disable", true);
		if (unlink(unit) < 0 && errno != ENOENT)
			return lc_fail("cannot remove the unit: %s", strerror(errno));
		if (have_manager(&c->paths))
			setup_systemctl(&c->paths, "daemon-reload", false);
		printf("Removed %s\n", unit);
		return 0;
	}
	if (!what || strcmp(what, "install"))
		return lc_fail("%s", "usage: gflowd service install|uninstall [--system]"), 2;
	/* A relocated system root has no manager, but its unit is written
	 * (and enabled in that tree) as on the real one. */
	if (!have_manager(&c->paths) && !(c->paths.system && *gf_system_root()))
		return lc_fail("%s", c->paths.system
			    ? "systemd is not running on this machine (no /run/systemd/system), so nothing was "
			      "installed; start the machine's daemon with 'gflowd up --system' and from your init "
			      "system at boot"
			    : "there is no systemd user manager for this user ('systemctl --user' cannot reach "
			      "one), so nothing was installed; start the daemon with 'gflowd up' (tmux or a "
			      "detached process) instead");
	if (lc_self_exe(exe, sizeof exe))
		return lc_fail("%s", "cannot find my own executable");
	root[0] = '\0';
	if (c->paths.system && *gf_system_root())
		snprintf(root, sizeof root, " --root %s", gf_system_root());
	n = snprintf(text, sizeof text,
		     "[Unit]\nDescription=gflow GPU job scheduler%s\n%s\n"
		     "[Service]\nType=simple\n"
		     "ExecStart=/bin/sh -c 'f=\"%s/gflowd.env\"; if [ -f \"$f\" ]; then exec \"%s\" run%s%s "
		     "--env-file \"$f\" --hosting systemd; else exec \"%s\" run%s%s --hosting systemd; fi'\n"
		     "Restart=on-failure\nRestartSec=2\nKillMode=process\n"
		     /* every user may hold connections (capped per user) and jobs
		      * need their descriptors: not systemd's 1024 */
		     "LimitNOFILE=65536\n\n"
		     "[Install]\nWantedBy=%s\n",
		     c->paths.system ? " (the machine's daemon)" : "",
		     c->paths.system ? "After=network.target\n" : "", c->paths.data_dir, exe, sys, root, exe, sys,
		     root, c->paths.system ? "multi-user.target" : "default.target");
	if (n < 0 || n >= (int)sizeof text)
		return lc_fail("%s", "the unit is too long (paths too long)");
	snprintf(dir, sizeof dir, "%s", unit);
	if ((slash = strrchr(dir, '/')))
		dir[slash - dir] = '\0';
	if (gf_mkdir_p(dir, 0755, &e) || write_file_atomic(dir, "gflowd.service", text, (size_t)n, &e))
		return lc_fail("%s", e.msg);
	chmod(unit, 0644);
	if (c->paths.system && *gf_system_root()) {
		char *const en[] = { "/usr/bin/env", "systemctl", "--root", (char *)gf_system_root(), "enable",
				     "gflowd.service", NULL };
		int st;

		/* Enabled in that tree (links only), for whoever boots it. */
		if (exec_spawn(en, NULL, true, &st, &e) || !WIFEXITED(st) || WEXITSTATUS(st))
			return lc_fail("wrote %s, but 'systemctl --root %s enable gflowd.service' failed", unit,
				    gf_system_root());
		printf("Wrote and enabled %s\n", unit);
		return 0;
	}
	if (!setup_systemctl(&c->paths, "daemon-reload", false)) {
		unlink(unit);
		return lc_fail("systemctl%s daemon-reload failed, so the unit was removed again", user);
	}
	if (c->paths.system) {
		if (!setup_systemctl(&c->paths, "enable", true))
			return lc_fail("wrote %s, but 'systemctl enable gflowd.service' failed", unit);
		printf("Wrote and enabled %s (starts at boot; start it now with: gflowd up --system)\n", unit);
	} else
		printf("Wrote %s\n(enable it at login with: systemctl --user enable gflowd)\n", unit);
	return 0;
}

static const char completion_bash[] =
	"_gflowd() {\n"
	"  local cur=${COMP_WORDS[COMP_CWORD]}\n"
	"  if [ $COMP_CWORD -eq 1 ]; then\n"
	"    COMPREPLY=($(compgen -W 'start up stop down restart reload status run init service token "
	"completion --help --version --config -c --cleanup -v -vv -vvv -vvvv -q --system' -- \"$cur\"))\n"
	"  else\n"
	"    COMPREPLY=($(compgen -W '--gpus --gpu-allocation-strategy --gpu-poll-interval-secs --hosting "
	"--config -c --yes -y --force --host --port --executor --timezone --advanced --system --root --revoke "
	"-v -vv -vvv -vvvv --verbose -q --quiet --help' -- \"$cur\"))\n"
	"  fi\n"
	"}\ncomplete -F _gflowd gflowd\n";

int setup_completion(const char *shell)
{
	if (!shell)
		return lc_fail("%s", "usage: gflowd completion bash|zsh|fish"), 2;
	if (!strcmp(shell, "bash"))
		fputs(completion_bash, stdout);
	else if (!strcmp(shell, "zsh"))
		printf("autoload -U bashcompinit && bashcompinit\n%s", completion_bash);
	else if (!strcmp(shell, "fish")) {
		static const char *const longs[] = { "gpus", "gpu-allocation-strategy", "gpu-poll-interval-secs",
			"hosting", "config", "yes", "force", "host", "port", "executor", "timezone", "advanced", "system",
			"root", "revoke", "verbose", "quiet", "cleanup", "help", "version" };

		printf("complete -c gflowd -f -n '__fish_use_subcommand' -a 'start up stop down restart reload "
		       "status run init service token completion'\n");
		for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
			printf("complete -c gflowd -l %s\n", longs[i]);
		printf("complete -c gflowd -s c\ncomplete -c gflowd -s v\ncomplete -c gflowd -s q\n");
	}
	else
		return lc_fail("unknown shell '%s' (bash, zsh or fish)", shell), 2;
	return 0;
}

/* --cleanup: remove the config file (-c's, else the default one). */
int setup_cleanup(struct lc *c)
{
	char def[GF_PATH_MAX + 16];
	const char *path = c->opts.config_path;

	if (!path) {
		snprintf(def, sizeof def, "%s/gflow.toml", c->paths.config_dir);
		path = def;
	}
	if (unlink(path) < 0) {
		if (errno != ENOENT)
			return lc_fail("cannot remove the config file: %s", strerror(errno));
		printf("No config file at %s: nothing to clean up\n", path);
		return 0;
	}
	printf("Removed %s (a running daemon keeps its settings until it restarts)\n", path);
	return 0;
}
