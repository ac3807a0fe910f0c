/* spawn.h — starting processes (spawn.c), and the argument vectors the
 * starts in exec.c and tmux.c build. */
#ifndef GF_SPAWN_H
#define GF_SPAWN_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "err.h"

struct argv {
	char *v[64];
	char own[16][32];
	int n, nown;
};

static inline void arg(struct argv *a, const char *s)
{
	if (a->n < 63)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static inline void argf(struct argv *a, const char *fmt, long long v)
{
	snprintf(a->own[a->nown], sizeof a->own[0], fmt, v);
	arg(a, a->own[a->nown++]);
}

/* A runner, our child (exec_reap collects it); its output to out_fd. */
int spawn_runner(char *const argv[], int out_fd, struct gf_err *e);
/* A runner born in the job's cgroup v2 group: 1 when the kernel cannot. */
int spawn_runner_into(char *const argv[], int out_fd, const char *cgroup, struct gf_err *e);
/* A short-lived child moves into cgroup first (see spawn.c). */
void spawn_prime_moves(const char *cgroup);
/* System mode: the primary group of a job's owner (passwd). */
int spawn_owner_gid(uid_t uid, gid_t *gid, struct gf_err *e);

#endif
