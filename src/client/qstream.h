/* qstream.h — GET /jobs read as a stream, for gqueue: the answer
 * {"jobs":[{...},...]} is fed in pieces as they arrive; each complete job
 * object becomes a struct qjob (queue.h) handed to a callback and is then
 * forgotten, so no tree of the list is ever built. The JSON is checked as
 * strictly as jansson checks it (strings: UTF-8, no raw control
 * characters, no \u0000; numbers: JSON's grammar, integers that fit). */
#ifndef GF_CLIENT_QSTREAM_H
#define GF_CLIENT_QSTREAM_H

#include <stddef.h>

#include "queue.h"
#include "util.h"

struct qstream {
	void (*row)(const struct qjob *job, void *arg);
	/* Optional, set after qstream_init: each job object's own bytes
	 * (valid JSON, checked); -1 stops the list. */
	int (*raw)(const char *p, size_t n, void *arg);
	void *arg;
	/* private */
	struct sbuf in;		/* bytes not yet taken */
	size_t at;		/* where the next step reads in `in` */
	size_t taken;		/* bytes dropped from the front of `in` */
	int stage, seen_jobs;
	struct sbuf str, ids;	/* a job's strings, its gpu_ids */
	struct sbuf eids;	/* its expected_gpus */
	char err[256];
};

void qstream_init(struct qstream *s, void (*row)(const struct qjob *, void *),
    void *arg); /* row may be NULL */
/* The next n bytes of the answer; -1 (err says why) when they are not a
 * job list. */
int qstream_feed(struct qstream *s, const char *p, size_t n);
/* The answer is over: -1 when the list was cut short. */
int qstream_end(struct qstream *s);
void qstream_free(struct qstream *s);
/* Why the last call failed. */
const char *qstream_error(const struct qstream *s);


#endif
