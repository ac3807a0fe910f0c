/* lifecycle.c — `gflowd` SUBCOMMAND: which command runs (start, stop,
 * restart, reload, status, token, run, init, …) and its log. The options
 * are read in options.c, the daemon is started or replaced in hosting.c,
 * asked or stopped in talk.c; setup.c has init, the unit and completion. */
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

#include "verbose.h"

extern char **environ;

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
		if (c->envfile && lc_load_env_file(c->envfile))
			return 1;
		if (c->envfile && (rc = lc_parse_args_file(c, &sub)))
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
		return lc_cmd_start(c);
	if (!strcmp(cmd, "stop") || !strcmp(cmd, "down"))
		return lc_cmd_stop(c, false);
	if (!strcmp(cmd, "reload"))
		return lc_cmd_reload(c);
	if (!strcmp(cmd, "restart")) {
		/* A bad config must not cost the running daemon. */
		if (lc_check_opts(&c->opts, environ, "cannot restart, the daemon goes on as it was: ") ||
		    lc_cmd_stop(c, true))
			return 1;
		return lc_cmd_start(c);
	}
	if (!strcmp(cmd, "status"))
		return lc_cmd_status(c);
	if (!strcmp(cmd, "token"))
		return lc_cmd_token(c);
	if (!strcmp(cmd, "init"))
		return setup_init(c);
	if (!strcmp(cmd, "service"))
		return setup_service(c, sub);
	if (!strcmp(cmd, "completion"))
		return setup_completion(sub);
	return lc_fail("unknown command '%s' (see gflowd --help)", cmd), 2;
}

int lifecycle_main(int argc, char **argv, const char *usage)
{
	const char *sub = NULL;
	char **v = lc_command_first(argc, argv);
	struct lc c;
	int rc;

	memset(&c, 0, sizeof c);
	rc = lc_parse_opts(&c, argc + !v[0], v, 1, &sub);
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
