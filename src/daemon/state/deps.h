/* deps.h — the cascade queue's items and waits, shared by state/deps.c
 * (the queue's data) and engine/cascade.c (working through it); no other
 * file sees them. */
#ifndef GF_DEPS_H
#define GF_DEPS_H

#include <stddef.h>
#include <stdint.h>

/* A job to check: cancel it if its dependencies can no longer be met. */
struct cascade_item {
	int64_t id;
	int64_t parent;			/* the parent that ended, 0 when not known */
	struct cascade_wait *origin;	/* the request waiting for it, or NULL */
};

/* A request waiting for the cascade it started to be worked through. */
struct cascade_wait {
	size_t left;			/* its items still in the queue */
	uint64_t txn_seq;		/* the transaction that made it */
	jobs_done_cb done;
	void *arg;
	struct cascade_wait *next;
};

#endif
