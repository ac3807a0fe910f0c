/* clone3.h — clone3(2) with CLONE_INTO_CGROUP, for the daemon (a runner
 * born in its job's cgroup) and the runner (a job born there): a child
 * born in a cgroup v2 group costs no move, and a move costs an RCU grace
 * period. The argument block is linux/sched.h's, declared here because
 * that header clashes with <sched.h>. */
#ifndef GF_CLONE3_H
#define GF_CLONE3_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct gf_clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};
#define GF_CLONE_INTO_CGROUP 0x200000000ULL

/* fork(), the child born in the cgroup v2 group open at cgroup_fd: its pid
 * in the parent, 0 in the child, -1 with errno (see gf_clone3_unsupported). */
static inline long gf_fork_into_cgroup(int cgroup_fd)
{
	struct gf_clone3_args ca = { .exit_signal = SIGCHLD, .flags = GF_CLONE_INTO_CGROUP,
				     .cgroup = (uint64_t)cgroup_fd };

	return syscall(SYS_clone3, &ca, sizeof ca);
}

/* Whether gf_fork_into_cgroup's errno says this kernel cannot clone into a
 * group at all (then fork, and move instead). */
static inline int gf_clone3_unsupported(int err)
{
	return err == ENOSYS || err == EINVAL || err == E2BIG || err == EOPNOTSUPP;
}

#endif
