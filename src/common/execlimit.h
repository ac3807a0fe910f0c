/* execlimit.h — what one execve(2) may carry, checked before a job is
 * accepted so that no job is refused by the kernel only when it starts.
 *
 * Linux refuses an execve when one argument or environment string is longer
 * than MAX_ARG_STRLEN (131072 bytes with its NUL), or when all strings (with
 * their NULs) and their pointers together pass the limit that
 * gf_arg_max computes (a quarter of the stack limit, see there). A job's
 * final execve carries its argv and its captured environment plus what
 * gflow adds (its GFLOW_ and CUDA_ variables, the conda wrapper's words):
 * GF_EXEC_RESERVE bytes are kept for that. */
#ifndef GF_EXECLIMIT_H
#define GF_EXECLIMIT_H

#include <stddef.h>

#include "err.h"

#define GF_MAX_ARG_STRLEN 131072 /* with the NUL */
#define GF_EXEC_RESERVE 16384

struct gf_execsize {
	size_t bytes; /* strings with their NULs, plus one pointer each */
	size_t nargs, nenv;
};

/* What the kernel (fs/exec.c, bprm_stack_limits) lets all of an execve's
 * strings and pointers take under a stack limit (soft, RLIM_INFINITY for
 * none): a quarter of it, capped at 6 MiB (3/4 of its 8 MiB _STK_LIM),
 * and never under 128 KiB (its ARG_MAX of 32 pages). */
long gf_arg_max_for(unsigned long long stack);
/* The limit for this process: gf_arg_max_for its own RLIMIT_STACK.
 * Computed, not asked of sysconf(_SC_ARG_MAX): musl's says 131072
 * whatever the stack limit. */
long gf_arg_max(void);

/* Count argv word i (0 is the program). -1 with e set, naming the word,
 * when it alone is too long. */
int gf_execsize_arg(struct gf_execsize *x, const char *s, size_t i, struct gf_err *e);
/* Count one "KEY=VALUE" entry; -1 with e set, naming KEY, when too long. */
int gf_execsize_env(struct gf_execsize *x, const char *kv, struct gf_err *e);
/* -1 with e set when everything counted, the reserve and the two closing
 * NULL pointers pass arg_max (gf_arg_max(); <= 0: no check). */
int gf_execsize_check(const struct gf_execsize *x, long arg_max, struct gf_err *e);

#endif
