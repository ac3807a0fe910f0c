/* attach.h — the attach socket a runner offers (system mode, --attach):
 * viewers of a job's terminal without tmux. See attach.c. */
#ifndef GF_ATTACH_H
#define GF_ATTACH_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "attachwire.h"
#include "err.h"

#define ATTACH_MAX_VIEWERS 8
#define ATTACH_MAX_FDS (ATTACH_MAX_VIEWERS + 1)	/* the listening socket and the viewers */

struct attach;

struct attach_hooks {
	void *ctx;
	/* Keys typed by a viewer, for the job's terminal. */
	void (*keys)(void *ctx, const char *data, size_t n);
	/* false while the job's terminal takes no more: viewers wait. */
	bool (*can_take_keys)(void *ctx);
	/* A viewer's window size, for the job's terminal. */
	void (*winsize)(void *ctx, unsigned rows, unsigned cols);
};

/* Listen at path (a stale socket there is replaced), owned by owner_uid
 * and group (group_set: the attach group, mode 0660; else owner_gid,
 * 0600). Peers allowed: root, owner_uid, members of the attach group. */
struct attach *attach_open(const char *path, const char *job, uid_t owner_uid, gid_t owner_gid,
			   const char *owner_name, bool group_set, gid_t group, const struct attach_hooks *hooks,
			   struct gf_err *e);

/* Fill fds (room for ATTACH_MAX_FDS) with what to poll; returns how many. */
int attach_pollfds(const struct attach *a, struct pollfd *fds);

/* Act on the results of poll for the fds attach_pollfds gave. */
void attach_events(struct attach *a, const struct pollfd *fds, int n);

/* The job's terminal output: kept for replay, queued to every viewer. */
void attach_output(struct attach *a, const char *data, size_t n);

/* How many viewers are attached now; *ever: whether one ever was. */
int attach_viewers(const struct attach *a, bool *ever);

/* A job that ended before any viewer came (an interactive job whose
 * galloc has not attached yet): wait for one until `until` (CLOCK_MONOTONIC
 * seconds), so that it gets the job's output and its end. NULL is fine. */
void attach_await_viewer(struct attach *a, double until);

/* Give viewers up to `secs` for what is queued, close them, stop
 * listening and remove the socket. NULL is fine. */
void attach_close(struct attach *a, double secs);

#endif
