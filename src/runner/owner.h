/* owner.h — the job's owner, for a runner started by the system daemon
 * (root): who they are, acting as them for a moment (making the log in
 * their home), and becoming them for good (the job's process). */
#ifndef GF_OWNER_H
#define GF_OWNER_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

#define OWNER_MAX_GROUPS 1024

struct owner {
	bool set;		/* false: the job runs as the runner does */
	uid_t uid;
	gid_t gid;		/* primary group */
	char name[256];
	gid_t groups[OWNER_MAX_GROUPS];	/* supplementary, as initgroups would set */
	int ngroups;
	gid_t saved[OWNER_MAX_GROUPS];	/* the runner's own, while acting as the owner */
	int nsaved;
};

/* The owner: name and supplementary groups as given (the daemon's lookup,
 * "G1,G2,…"), else looked up in the user database. */
int owner_lookup(struct owner *o, uid_t uid, gid_t gid, const char *name, const char *groups, struct gf_err *e);

/* Act as the owner (effective ids and groups) until owner_leave: what is
 * made or opened meanwhile is theirs and checked with their rights. */
int owner_enter(struct owner *o, struct gf_err *e);
void owner_leave(struct owner *o);

/* In the job's process, before exec: become the owner for good. Returns
 * -1 with errno set when it cannot (the job must then not run). */
int owner_become(const struct owner *o);

/* As the owner (when there is one, also making the directories of path,
 * mode 0700), open path for appending, never through a link. When `fresh`,
 * a new file (O_EXCL): path, or when that is taken (by anything: a file,
 * a link), the first free one of STEM.1.log … STEM.GF_LOG_SEQ_MAX.log (path
 * is STEM.log). The path opened in used, its number (0: path) in *seq.
 * spare (NULL or -1: none): an unnamed file made ahead in path's directory
 * (O_TMPFILE), linked at the free name instead of a new file made there,
 * when fresh and there is no owner; then it is the descriptor returned
 * (*spare -1). One that cannot be linked is closed, and a file made. */
int owner_open_log(struct owner *o, const char *path, bool fresh, int *spare, char *used, size_t size, int *seq,
		   struct gf_err *e);

#endif
