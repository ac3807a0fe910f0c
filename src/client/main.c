/* main.c — the `gflow` binary: picks the command from the program name
 * (gbatch, gqueue, ... are links to it) or from the first argument
 * (`gflow queue ...`, `gflow gqueue ...`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "mcp.h"
#include "trace.h"

static const struct command *const commands[] = {
	&cmd_batch, &cmd_queue, &cmd_info, &cmd_job, &cmd_cancel, &cmd_ctl,
	&cmd_stats, &cmd_cluster, &cmd_alloc,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(name, commands[i]->name) == 0 ||
		    strcmp(name, commands[i]->alias) == 0)
			return commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: gflow <command> [options] [args...]\n"
	    "\n"
	    "gflow schedules jobs on the GPUs of this machine. Each command is\n"
	    "also a program of its own (gbatch = gflow batch, ...).\n"
	    "\n"
	    "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-7s %s\n", commands[i]->name, commands[i]->usage);
	fprintf(f, "\n"
	    "  mcp     gflow mcp serve: a Model Context Protocol server on stdio\n"
	    "          for AI agents (gflow mcp --help)\n"
	    "\n"
	    "  gflow --help | --version | completion bash|zsh|fish\n"
	    "Run 'gflow <command> --help' for the options of one command.\n"
	    "\n"
	    "Which daemon: --socket PATH first (gflow --socket PATH queue, or\n"
	    "gqueue --socket PATH), else GFLOW_SOCKET, else your own daemon if it\n"
	    "runs, else the machine's (system) daemon. The daemon is gflowd\n"
	    "(gflowd up, gflowd status, gflowd down; gflowd up --system as root).\n");
}

/* `gflow completion SHELL`: scripts for gflow and every program. */
static int all_completions(int argc, char **argv)
{
	char words[512] = "--help --version completion mcp serve";
	struct gf_err e;
	size_t i;

	if (argc != 3)
		return cmd_usagef("gflow", "usage: gflow completion "
		    "bash|zsh|fish");
	for (i = 0; i < NCOMMANDS; i++) {
		strncat(words, " ", sizeof words - strlen(words) - 1);
		strncat(words, commands[i]->name,
		    sizeof words - strlen(words) - 1);
	}
	if (completion_script(stdout, "gflow", words, argv[2], &e) < 0)
		return cmd_usage_error("gflow", &e);
	for (i = 0; i < NCOMMANDS; i++)
		completion_script(stdout, commands[i]->alias,
		    commands[i]->complete, argv[2], &e);
	return EXIT_OK;
}

/* A leading "--socket PATH" (or --socket=PATH): the daemon to talk to, as
 * GFLOW_SOCKET says. Returns how many words it took, -1 after saying why. */
static int leading_socket(int argc, char **argv, const char *prog)
{
	const char *path = NULL;
	int n = 0;

	if (argc > 1 && strcmp(argv[1], "--socket") == 0) {
		if (argc < 3 || !*argv[2]) {
			cmd_usagef(prog, "option --socket needs a path");
			return -1;
		}
		path = argv[2];
		n = 2;
	} else if (argc > 1 && strncmp(argv[1], "--socket=", 9) == 0) {
		if (!argv[1][9]) {
			cmd_usagef(prog, "option --socket needs a path");
			return -1;
		}
		path = argv[1] + 9;
		n = 1;
	}
	if (path && setenv("GFLOW_SOCKET", path, 1) < 0)
		return -1;
	if (n)
		argv[n] = argv[0];	/* the program name stays first */
	return n;
}

int main(int argc, char **argv)
{
	const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
	const struct command *c;
	int skip;

	cmd_started_ns = gf_trace_now();	/* gbatch traces it (trace.h) */
	base = base ? base + 1 : (argc > 0 ? argv[0] : "gflow");
	if ((skip = leading_socket(argc, argv, base)) < 0)
		return EXIT_USAGE;
	argc -= skip;
	argv += skip;
	cmd_default_timezone();
	c = find_command(base);
	if (c && strcmp(base, c->alias) == 0)
		return c->exec(argc, argv);
	if (argc > 1 && (strcmp(argv[1], "--config") == 0 ||
	    strncmp(argv[1], "--config=", 9) == 0)) {
		/* `gflow --config PATH queue ...` */
		int skip = cmd_leading_config(argc, argv, "gflow");

		if (skip < 0)
			return EXIT_FAIL;
		if (skip == 0)
			return cmd_usagef("gflow", "option --config needs a value");
		argc -= skip;
		argv += skip;
		if ((skip = leading_socket(argc, argv, "gflow")) < 0)	/* either order */
			return EXIT_USAGE;
		argc -= skip;
		argv += skip;
	}
	if (argc < 2)
		return cmd_usagef("gflow", "missing command (commands: batch, "
		    "queue, info, job, cancel, ctl, stats, alloc)");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cmd_version();
	if (strcmp(argv[1], "completion") == 0)
		return all_completions(argc, argv);
	if (strcmp(argv[1], "mcp") == 0)
		return mcp_main(argc - 1, argv + 1);
	c = find_command(argv[1]);
	if (!c)
		return cmd_usagef("gflow", "unknown command '%s'", argv[1]);
	return c->exec(argc - 1, argv + 1);
}
