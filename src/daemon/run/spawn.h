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
/* System mode: a job's owner as its runner needs them, from the user
 * database (NSS): the primary group, the name, the supplementary groups
 * as "G1,G2,…" (the runner, which may be linked statically, asks no user
 * database: they go in its spec). */
#define SPAWN_GROUPS_MAX (1024 * 11)
int spawn_owner_ids(uid_t uid, gid_t *gid, char *name, size_t nsize, char *groups, size_t gsize, struct gf_err *e);

#endif
