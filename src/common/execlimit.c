/* execlimit.c — counting a job's argv and environment against the
 * kernel's execve limits. */
#include "execlimit.h"

#include <string.h>
#include <sys/resource.h>

#include "bytes.h"

/* At most the first 24 bytes of s, escaped, with "..." when cut. */
static void preview(char *buf, size_t size, const char *s, size_t n)
{
	size_t len = gf_escape(buf, size, s, n < 24 ? n : 24, 0);

	if (n > 24 && len + 4 <= size)
		strcat(buf, "...");
}

long gf_arg_max_for(unsigned long long stack)
{
	unsigned long long v = stack / 4;

	if (stack == (unsigned long long)RLIM_INFINITY || v > 6ULL * 1024 * 1024)
		v = 6ULL * 1024 * 1024;
	if (v < 131072)
		v = 131072;
	return (long)v;
}

long gf_arg_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_STACK, &rl))
		return 131072;
	return gf_arg_max_for(rl.rlim_cur);
}

int gf_execsize_arg(struct gf_execsize *x, const char *s, size_t i, struct gf_err *e)
{
	size_t n = strlen(s);
	char p[128];

	if (n + 1 > GF_MAX_ARG_STRLEN) {
		preview(p, sizeof p, s, n);
		if (i == 0)
			return gf_err_set(e, "the program name '%s' is %zu bytes: one word of a command "
					  "may hold at most %d (the kernel's MAX_ARG_STRLEN)", p, n,
					  GF_MAX_ARG_STRLEN - 1);
		return gf_err_set(e, "argument %zu ('%s') is %zu bytes: one argument may hold at "
				  "most %d (the kernel's MAX_ARG_STRLEN)", i, p, n,
				  GF_MAX_ARG_STRLEN - 1);
	}
	x->bytes += n + 1 + sizeof(char *);
	x->nargs++;
	return 0;
}

int gf_execsize_env(struct gf_execsize *x, const char *kv, struct gf_err *e)
{
	size_t n = strlen(kv);
	const char *eq = strchr(kv, '=');
	char p[128];

	if (n + 1 > GF_MAX_ARG_STRLEN) {
		preview(p, sizeof p, kv, eq ? (size_t)(eq - kv) : n);
		return gf_err_set(e, "environment variable %s is %zu bytes: one variable (NAME=value) "
				  "may hold at most %d (the kernel's MAX_ARG_STRLEN)", p, n,
				  GF_MAX_ARG_STRLEN - 1);
	}
	x->bytes += n + 1 + sizeof(char *);
	x->nenv++;
	return 0;
}

int gf_execsize_check(const struct gf_execsize *x, long arg_max, struct gf_err *e)
{
	size_t total = x->bytes + 2 * sizeof(char *) + GF_EXEC_RESERVE;

	if (arg_max > 0 && total > (size_t)arg_max)
		return gf_err_set(e, "the command (%zu words) and its environment (%zu variables) "
				  "need %zu bytes with the %d gflow adds; a program started on this "
				  "machine may get at most %ld (ARG_MAX)", x->nargs, x->nenv, total,
				  GF_EXEC_RESERVE, arg_max);
	return 0;
}
