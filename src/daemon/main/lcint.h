/* lcint.h — what the parts of `gflowd`'s management commands share:
 * lifecycle.c (start, stop, reload, status, token, run) and setup.c
 * (init, the systemd unit, completion, --cleanup). */
#ifndef GF_LCINT_H
#define GF_LCINT_H

#include <stdbool.h>
#include <stddef.h>

#include "paths.h"
#include "server.h"

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
