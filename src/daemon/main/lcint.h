/* lcint.h — what the parts of `gflowd`'s management commands share:
 * lifecycle.c (which command), options.c (the command line), hosting.c
 * (start, reload), talk.c (stop, status, token), lcutil.c (shared bits)
 * and setup.c (init, the systemd unit, completion, --cleanup). */
#ifndef GF_LCINT_H
#define GF_LCINT_H

#include <stdbool.h>
#include <stddef.h>

#include "paths.h"
#include "main.h"

struct lc {
	struct daemon_opts opts;
	struct gf_paths paths;
	const char *hosting_req;	/* --hosting */
	const char *log;		/* run --log: stdout and stderr go there */
	const char *envfile;		/* run --env-file */
	char *config_abs;		/* --config made absolute (the daemon's cwd is not ours) */
	char *args_blob;		/* options read from gflowd.args (systemd hosting) */
	bool help;
	bool cleanup;			/* --cleanup: remove the config file */
	/* init */
	bool yes, force, advanced;
	const char *timezone;
	bool revoke;			/* token --revoke */
	const char *host, *port, *executor;
};

/* "gflowd: <message>" on stderr; returns 1. */
__attribute__((format(printf, 1, 2))) int lc_fail(const char *fmt, ...);
/* This executable's path. */
int lc_self_exe(char *buf, size_t size);
/* pid of the live daemon, 0 when none. */
pid_t lc_daemon_pid(const struct gf_paths *p);
void lc_sleep_ms(int ms);

/* options.c: the options from argv[first] on (*sub: a subcommand's word);
 * those of gflowd.args; argv with the subcommand first. */
int lc_parse_opts(struct lc *c, int argc, char **argv, int first, const char **sub);
int lc_parse_args_file(struct lc *c, const char **sub);
char **lc_command_first(int argc, char **argv);

/* hosting.c */
int lc_cmd_start(struct lc *c);
int lc_cmd_reload(struct lc *c);
int lc_load_env_file(const char *path);	/* run --env-file */
/* The config and options checked as the daemon would (server_check). */
int lc_check_opts(const struct daemon_opts *o, char *const *envp, const char *doing);

/* talk.c */
int lc_cmd_stop(struct lc *c, bool quiet);
int lc_cmd_status(struct lc *c);
int lc_cmd_token(struct lc *c);

/* setup.c */
int setup_init(struct lc *c);
int setup_service(struct lc *c, const char *what);
int setup_completion(const char *shell);
int setup_cleanup(struct lc *c);
/* systemctl [--user] VERB [gflowd.service]: did it exit 0? */
bool setup_systemctl(const struct gf_paths *p, const char *verb, bool unit);
/* Is the unit installed and a systemd manager there to run it? */
bool setup_systemd_usable(const struct gf_paths *p);

#endif
