/* vmclone.c — clone3(CLONE_VM | CLONE_VFORK): what glibc's posix_spawn
 * does, which posix_spawn cannot do here (the runner's job, born in its
 * cgroup v2 group, as its owner, on a held start; the daemon's runners,
 * born in a group, or without posix_spawn's 128 system calls that look at
 * and reset each signal's handler: CLONE_CLEAR_SIGHAND does it in one).
 * fork() copies the parent's page tables, which on a virtual machine
 * costs as much as the rest of the runner's start; a child sharing them
 * costs nothing. libc only: the runner links it.
 * The child needs a stack of its own and must begin in code that does not
 * return into ours: a few instructions per machine, which call fn(arg) and
 * exit with what it returns. Elsewhere, and under the sanitizers (whose
 * runtime knows nothing of a second process on our memory), ENOSYS. */
#include "vmclone.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>

#include "clone3.h"

#define GF_CLONE_VM 0x00000100ULL
#define GF_CLONE_VFORK 0x00004000ULL

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define VMCLONE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define VMCLONE_OFF 1
#endif
#endif

#if !defined(VMCLONE_OFF) && (defined(__x86_64__) || defined(__aarch64__))
/* long vmclone_raw(args, size, fn, arg): the clone3 system call; in the
 * child (0 returned, on the new stack) fn(arg), then exit(its value). The
 * parent gets the pid or -errno. */
long vmclone_raw(struct gf_clone3_args *args, size_t size, int (*fn)(void *), void *arg);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl vmclone_raw\n"
	".hidden vmclone_raw\n"
	".type vmclone_raw,@function\n"
	"vmclone_raw:\n"
	"	mov %rdx, %r8\n"	/* fn and arg: kept across the system call */
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n"	/* SYS_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	xor %ebp, %ebp\n"	/* the child: a stack frame chain of its own */
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"	/* SYS_exit */
	"	syscall\n"
	"	hlt\n"
	".size vmclone_raw, .-vmclone_raw\n");
#else
__asm__(".text\n"
	".globl vmclone_raw\n"
	".hidden vmclone_raw\n"
	".type vmclone_raw,%function\n"
	"vmclone_raw:\n"
	"	mov x9, x2\n"		/* fn and arg: the kernel keeps them */
	"	mov x10, x3\n"
	"	mov x8, #435\n"		/* SYS_clone3 */
	"	svc #0\n"
	"	cbz x0, 1f\n"
	"	ret\n"
	"1:	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, x10\n"
	"	blr x9\n"
	"	mov x8, #93\n"		/* SYS_exit */
	"	svc #0\n"
	"	brk #0\n"
	".size vmclone_raw, .-vmclone_raw\n");
#endif

long gf_vmclone(int cgroup_fd, unsigned long long flags, int (*fn)(void *), void *arg, void *stack, size_t size)
{
	struct gf_clone3_args ca = { .flags = GF_CLONE_VM | GF_CLONE_VFORK | flags, .exit_signal = SIGCHLD,
				     .stack = (uint64_t)(uintptr_t)stack, .stack_size = size };
	long rc;

	if (cgroup_fd >= 0) {
		ca.flags |= GF_CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_fd;
	}
	rc = vmclone_raw(&ca, sizeof ca, fn, arg);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}
#else
long gf_vmclone(int cgroup_fd, unsigned long long flags, int (*fn)(void *), void *arg, void *stack, size_t size)
{
	(void)cgroup_fd;
	(void)flags;
	(void)fn;
	(void)arg;
	(void)stack;
	(void)size;
	errno = ENOSYS;
	return -1;
}
#endif
