/* cmd.c — what every client command shares: error lines, --version,
 * --config and completion scripts. */
#include "command.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "format.h"
#include "util.h"

uint64_t cmd_started_ns;

extern char **environ;

/* Messages quote what the user or the daemon gave: escaped, one line. */
int cmd_fail(const char *prog, const struct gf_err *e)
{
	char *msg = fmt_escaped(e->msg);

	fprintf(stderr, "%s: %s\n", prog, msg);
	free(msg);
	return EXIT_FAIL;
}

int cmd_usage_error(const char *prog, const struct gf_err *e)
{
	char *msg = fmt_escaped(e->msg);

	fprintf(stderr, "%s: %s (see: %s --help)\n", prog, msg, prog);
	free(msg);
	return EXIT_USAGE;
}

int cmd_usagef(const char *prog, const char *fmt, ...)
{
	struct gf_err e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	return cmd_usage_error(prog, &e);
}

int cmd_version(void)
{
	printf("gflow %s\n", GFLOW_VERSION);
	return EXIT_OK;
}

/* The config's timezone for the times this program shows and reads;
 * without one, the time zone it was started with. At start nothing has
 * read the zone yet and glibc reads $TZ when a time is first converted,
 * so TZ is only set when the config names a zone, and tzset() (which reads
 * /etc/localtime or the zone's file) is left to the first time shown. A
 * later --config file may change the zone after times were converted:
 * then tzset() makes it count. */
static void use_timezone(const struct gf_config *cfg, int at_start)
{
	static int saved;
	static char *orig;

	if (!saved) {
		orig = getenv("TZ") ? xstrdup(getenv("TZ")) : NULL;
		saved = 1;
	}
	if (cfg->timezone && strcmp(cfg->timezone, "local"))
		setenv("TZ", cfg->timezone, 1);
	else if (at_start)
		return;		/* TZ stays as it came */
	else if (orig)
		setenv("TZ", orig, 1);
	else
		unsetenv("TZ");
	if (!at_start)
		tzset();
}

/* The default config file, read once per process (cmd_default_config). */
static struct {
	int read, rc;
	struct gf_config cfg;
	struct gf_err e;
} dflt;

const struct gf_config *cmd_default_config(struct gf_err *e)
{
	if (!dflt.read) {
		dflt.read = 1;
		dflt.rc = gf_config_load(NULL, environ, &dflt.cfg, &dflt.e);
	}
	if (dflt.rc < 0) {
		if (e)
			*e = dflt.e;
		return NULL;
	}
	return &dflt.cfg;
}

void cmd_default_timezone(void)
{
	/* a broken default config is reported by the daemon, not here */
	const struct gf_config *cfg = cmd_default_config(NULL);

	if (cfg)
		use_timezone(cfg, 1);
}

int cmd_check_config(const char *path, struct gf_err *e)
{
	struct gf_config cfg;

	/* Read as the daemon reads it: a typo is reported, not ignored. */
	if (gf_config_load(path, environ, &cfg, e) < 0)
		return -1;
	use_timezone(&cfg, 0);
	gf_config_free(&cfg);
	return 0;
}

/* A leading "--config PATH" (or --config=PATH) before the command:
 * checked, then skipped. Returns how many words it took, -1 on error. */
int cmd_leading_config(int argc, char **argv, const char *prog)
{
	struct gf_err e;
	const char *path = NULL;
	int n = 0;

	if (argc > 2 && strcmp(argv[1], "--config") == 0) {
		path = argv[2];
		n = 2;
	} else if (argc > 1 && strncmp(argv[1], "--config=", 9) == 0) {
		path = argv[1] + 9;
		n = 1;
	}
	if (path && cmd_check_config(path, &e) < 0) {
		cmd_fail(prog, &e);
		return -1;
	}
	return n;
}

/* Call fn for each space-separated word. */
static void each_word(const char *words, FILE *f,
    void (*fn)(FILE *, const char *prog, const char *w, size_t n),
    const char *prog)
{
	const char *p = words;

	while (*p) {
		size_t n;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (n)
			fn(f, prog, p, n);
		p += n;
	}
}

static void fish_word(FILE *f, const char *prog, const char *w, size_t n)
{
	if (n > 2 && w[0] == '-' && w[1] == '-')
		fprintf(f, "complete -c %s -l %.*s\n", prog, (int)n - 2, w + 2);
	else if (n == 2 && w[0] == '-')
		fprintf(f, "complete -c %s -s %c\n", prog, w[1]);
	else
		fprintf(f, "complete -c %s -n __fish_use_subcommand -a %.*s\n",
		    prog, (int)n, w);
}

/* Shell function names cannot hold '-'; program names here never do. */
int completion_script(FILE *f, const char *prog, const char *words,
    const char *shell, struct gf_err *e)
{
	if (strcmp(shell, "bash") == 0) {
		fprintf(f, "# bash completion for %s; load it with: "
		    "source <(%s completion bash)\n", prog, prog);
		fprintf(f, "_gflow_complete_%s() {\n"
		    "\tCOMPREPLY=($(compgen -W \"%s\" -- "
		    "\"${COMP_WORDS[COMP_CWORD]}\"))\n}\n", prog, words);
		fprintf(f, "complete -o default -F _gflow_complete_%s %s\n",
		    prog, prog);
	} else if (strcmp(shell, "zsh") == 0) {
		fprintf(f, "#compdef %s\n", prog);
		fprintf(f, "_gflow_complete_%s() {\n\tcompadd -- %s\n"
		    "\t_files\n}\n", prog, words);
		fprintf(f, "if [ \"$funcstack[1]\" = \"_%s\" ]; then\n"
		    "\t_gflow_complete_%s \"$@\"\nelse\n"
		    "\tcompdef _gflow_complete_%s %s\nfi\n", prog, prog, prog,
		    prog);
	} else if (strcmp(shell, "fish") == 0) {
		fprintf(f, "# fish completion for %s; load it with: "
		    "%s completion fish | source\n", prog, prog);
		each_word(words, f, fish_word, prog);
	} else {
		return gf_err_set(e, "unknown shell '%s': expected bash, zsh "
		    "or fish", shell);
	}
	return 0;
}

int cmd_completion(const struct command *c, int argc, char **argv)
{
	struct gf_err e;

	if (argc != 2)
		return cmd_usagef(c->alias, "usage: %s completion bash|zsh|fish",
		    c->alias);
	if (completion_script(stdout, c->alias, c->complete, argv[1], &e) < 0)
		return cmd_usage_error(c->alias, &e);
	return EXIT_OK;
}
