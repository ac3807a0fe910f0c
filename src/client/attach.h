/* attach.h — `gjob attach` through a runner's attach socket (system
 * daemon, tmux executor). See attach.c. */
#ifndef GF_CLIENT_ATTACH_H
#define GF_CLIENT_ATTACH_H

#include <stddef.h>

#include "err.h"

/* Attach the terminal to job id through its socket at path, until Ctrl-b
 * d or the job's end. owner (may be NULL) names whom the job belongs to in
 * a refusal. Messages go to stderr; returns an exit code. */
int attach_job(long long id, const char *path, const char *owner);

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
