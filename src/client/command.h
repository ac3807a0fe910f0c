/* command.h — the client commands: one `struct command` per program
 * (gbatch, gqueue, ...), defined in its own file, plus what every command
 * shares: exit statuses, error printing, --version, --config and
 * completion scripts. */
#ifndef GF_CLIENT_COMMAND_H
#define GF_CLIENT_COMMAND_H

#include <stdint.h>
#include <stdio.h>

#include "err.h"

struct gf_config;

#ifndef GFLOW_VERSION
#define GFLOW_VERSION "0.1.0"
#endif

#define EXIT_OK    0
#define EXIT_FAIL  1 /* the command could not do its job */
#define EXIT_USAGE 2 /* the command line was wrong */

struct command {
	const char *name;     /* "queue": `gflow queue ...` */
	const char *alias;    /* "gqueue": the program (symlink) name */
	const char *usage;    /* one-line synopsis */
	/* argv[0] is the program or command name; returns the exit status */
	int (*exec)(int argc, char **argv);
	const char *complete; /* space-separated words for completion */
};

extern const struct command cmd_batch;
extern const struct command cmd_queue;
extern const struct command cmd_info;
extern const struct command cmd_job;
extern const struct command cmd_cancel;
extern const struct command cmd_ctl;
extern const struct command cmd_stats;
extern const struct command cmd_cluster; /* remote.c */
extern const struct command cmd_alloc;   /* alloc.c: galloc */

/* "<prog>: <e->msg>" on stderr; returns EXIT_FAIL. */
int cmd_fail(const char *prog, const struct gf_err *e);
/* "<prog>: <e->msg> (see: <prog> --help)" on stderr; returns EXIT_USAGE. */
int cmd_usage_error(const char *prog, const struct gf_err *e);
/* Same, from a format. */
int cmd_usagef(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints "gflow <version>"; returns EXIT_OK. */
int cmd_version(void);

/* --config: the clients talk to the daemon's socket and need only the
 * file's timezone, but it is read and checked like the daemon's (with the
 * GFLOW_* variables): a file that cannot be read or holds a mistake is an
 * error that names the file, line and key. */
int cmd_check_config(const char *path, struct gf_err *e);
/* Times are shown and read in the config's timezone (the default file's
 * at start; a --config file's once checked), else the starting TZ. */
void cmd_default_timezone(void);
/* The default config file (gflow.toml + GFLOW_* variables), read the first
 * time it is asked for (main asks at start) and kept: NULL with e set when
 * it cannot be read or holds a mistake. */
const struct gf_config *cmd_default_config(struct gf_err *e);

/* When main() began (CLOCK_MONOTONIC ns): gbatch's client_start step of
 * the start-latency trace (trace.h). */
extern uint64_t cmd_started_ns;

/* gjob/gctl: a "--config PATH" or "--config=PATH" before the command is
 * checked and skipped; returns the words it took (0-2), or -1 after
 * printing the error. */
int cmd_leading_config(int argc, char **argv, const char *prog);

/* Print the completion script of one program for "bash", "zsh" or
 * "fish". Returns 0, or -1 with e set for another shell name. */
int completion_script(FILE *f, const char *prog, const char *words,
    const char *shell, struct gf_err *e);
/* `<prog> completion <shell>`: argv = {"completion", shell}. */
int cmd_completion(const struct command *c, int argc, char **argv);

#endif
