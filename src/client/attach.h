/* attach.h — `gjob attach` through a runner's attach socket (system
 * daemon, tmux executor). See attach.c. */
#ifndef GF_CLIENT_ATTACH_H
#define GF_CLIENT_ATTACH_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Attach the terminal to job id through its socket at path, until Ctrl-b
 * d or the job's end. owner (may be NULL) names whom the job belongs to in
 * a refusal. Messages go to stderr; returns an exit code. */
int attach_job(long long id, const char *path, const char *owner);

enum attach_how { DETACHED, ENDED, BROKEN, REFUSED };

/* How attach_session behaves (gjob attach's, galloc's). */
struct attach_mode {
	const char *prog;	/* in messages */
	const char *hello;	/* a line on stderr once attached, or NULL */
	bool keys_as_typed;	/* no Ctrl-b d: every key goes to the job (galloc) */
	bool pipe;		/* without a terminal, relay stdin and stdout (the
				 * end of stdin is a ^D for the job); else refuse */
	int connect_wait_ms;	/* a socket not yet there or listening: tried again for so long */
	bool tty;		/* out: the terminal was there (raw mode) */
	int signo;		/* out: the signal that made it leave (DETACHED), or 0 */
};

/* Attach as m says until the caller leaves (DETACHED: Ctrl-b d, the
 * terminal gone, or m->signo), the job ends (ENDED), or it breaks;
 * REFUSED: never let in (said on stderr). The terminal is restored. */
enum attach_how attach_session(long long id, const char *path, const char *owner, struct attach_mode *m);

/* May `tmux -S sock` be run (a personal daemon's tmux server)? Its
 * directory must be the user's own and private, and a server listening on
 * it the user's or root's: 0 when so, else -1 with the refusal in e. */
int attach_tmux_verified(const char *sock, struct gf_err *e);

/* The keys typed, as they go to the job: Ctrl-b d detaches (*detach set,
 * the rest dropped), Ctrl-b Ctrl-b is one Ctrl-b, Ctrl-b and another key
 * go through as they are. *prefix carries a Ctrl-b from one read to the
 * next. out has room for n + 1 bytes; returns how many it holds. */
size_t attach_filter_keys(const unsigned char *in, size_t n, int *prefix, unsigned char *out, int *detach);

#endif
