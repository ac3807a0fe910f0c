/* options.c — gflowd's command line: options, the arguments file of a
 * systemd-hosted daemon (gflowd.args), and the subcommand found first. */
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
/* Options from argv[first..argc). Returns 0, or an exit status after
 * saying what is wrong. */
int lc_parse_opts(struct lc *c, int argc, char **argv, int first, const char **sub)
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
int lc_parse_args_file(struct lc *c, const char **sub)
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
	return lc_parse_opts(c, n, words, 1, sub);
}

/* Global options may come before the command (`gflowd -c FILE -v up`):
 * the command word moves to the front; -c/--config take a value. */
char **lc_command_first(int argc, char **argv)
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
