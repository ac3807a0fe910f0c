/* rlimits.h — the submitter's resource limits, carried to the job.
 *
 * gbatch captures its own limits (getrlimit) and sends them with the
 * submission; the daemon checks and stores them with each job; the runner
 * sets them on the job's process just before its execve, as the job's
 * owner, never above its own hard limits (raising a hard limit needs a
 * privilege the job must not get from gflow). The limits carried are those
 * of Slurm's PropagateResourceLimits=ALL: as, core, cpu, data, fsize,
 * memlock, nofile, nproc, rss, stack.
 *
 * Their text form, used on the wire, in the store and in the run
 * directory's `limits` file: NAME=SOFT:HARD entries joined by commas, in
 * the table's order, each value a number or "unlimited", and NAME=V when
 * both are V ("nofile=1024:4096,core=0"). libc only: the runner links it. */
#ifndef GF_RLIMITS_H
#define GF_RLIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include "err.h"

#define GF_NRLIMITS 10
#define GF_RLIMITS_TEXT_MAX 512	/* the longest text form fits */

struct gf_rlimits {
	bool set[GF_NRLIMITS];
	struct rlimit v[GF_NRLIMITS];
};

/* Entry i's name ("nproc") and resource (RLIMIT_NPROC). */
const char *gf_rlimit_name(int i);
int gf_rlimit_resource(int i);

/* This process's limits, all of them (one getrlimit cannot refuse is left
 * out). */
void gf_rlimits_capture(struct gf_rlimits *r);

/* The text form (see above) read into r; -1 with e set, naming the bad
 * entry, when it is not that form (an unknown or repeated name, a soft
 * value above its hard one). An empty text sets nothing. */
int gf_rlimits_parse(const char *s, struct gf_rlimits *r, struct gf_err *e);

/* r's text form into buf (size GF_RLIMITS_TEXT_MAX is always enough);
 * its length. */
size_t gf_rlimits_format(const struct gf_rlimits *r, char *buf, size_t size);

/* Each limit of r lowered to `cap`'s hard one where cap has it set: what
 * a process with cap's limits may set without privilege. */
void gf_rlimits_clamp(struct gf_rlimits *r, const struct gf_rlimits *cap);

/* Each limit of r that `have` holds already, soft and hard alike, unset:
 * a process with have's limits passes it on to its children as it is. */
void gf_rlimits_drop_held(struct gf_rlimits *r, const struct gf_rlimits *have);

/* The limits in the text of /proc/PID/limits ("Max open files  1024
 * 4096  files" lines), those of the table it names; -1 when none is
 * there. Pure: the daemon reads the file (gf_rlimits_of_pid). */
int gf_rlimits_parse_proc(const char *text, struct gf_rlimits *r);

/* The limits of process pid, if it belongs to uid (its /proc entry, as
 * seen before and after the read); -1 when it cannot be told. */
int gf_rlimits_of_pid(long pid, unsigned uid, struct gf_rlimits *r);

/* The stack limit (soft) r gives a process whose own is `own`. */
rlim_t gf_rlimits_stack(const struct gf_rlimits *r, rlim_t own);

/* setrlimit for each limit set in r; async-signal-safe (the job's child
 * calls it). -1 with errno set at the first refused, *which its index. */
int gf_rlimits_apply(const struct gf_rlimits *r, int *which);

#endif
