/* vmclone.h — starting a process without copying the parent's memory:
 * the runner's job, the daemon's runners (see vmclone.c). */
#ifndef GF_VMCLONE_H
#define GF_VMCLONE_H

#include <stddef.h>

/* The child's signal handlers set back to the default by the kernel
 * (CLONE_CLEAR_SIGHAND, Linux 5.5: EINVAL before); ignored ones stay. */
#define GF_VMCLONE_CLEAR_SIGHAND 0x100000000ULL

/* Runs fn(arg) in a child that shares our memory, on `stack` (size bytes,
 * its top 16-byte aligned), born in the cgroup v2 group open at cgroup_fd
 * (-1: ours), with the clone flags in `flags` added (0, or
 * GF_VMCLONE_CLEAR_SIGHAND); we are suspended until the child execs or
 * exits, so the child may use what we have but must not return, allocate
 * or leave anything changed that we need (fn must end in exec or _exit).
 * Returns the child's pid, or -1 with errno: ENOSYS where this is not
 * built for the machine (fork then). */
long gf_vmclone(int cgroup_fd, unsigned long long flags, int (*fn)(void *), void *arg, void *stack, size_t size);

#endif
