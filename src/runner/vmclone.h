/* vmclone.h — starting the job's process without copying the runner's
 * memory (see vmclone.c). */
#ifndef GF_RUNNER_VMCLONE_H
#define GF_RUNNER_VMCLONE_H

#include <stddef.h>

/* Runs fn(arg) in a child that shares our memory, on `stack` (size bytes,
 * its top 16-byte aligned), born in the cgroup v2 group open at cgroup_fd
 * (-1: ours); we are suspended until the child execs or exits, so the
 * child may use what we have but must not return, allocate or leave
 * anything changed that we need (fn must end in exec or _exit). Returns
 * the child's pid, or -1 with errno: ENOSYS where this is not built for
 * the machine (fork then). */
long gf_vmclone(int cgroup_fd, int (*fn)(void *), void *arg, void *stack, size_t size);

#endif
