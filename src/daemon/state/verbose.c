/* verbose.c — the daemon's verbosity level and its level-gated log line
 * (see verbose.h). */
#include "verbose.h"

#include <stdarg.h>
#include <stdio.h>

int gflowd_verbosity;

void vlog(int level, const char *fmt, ...)
{
	va_list ap;

	if (gflowd_verbosity < level)
		return;
	fputs("gflowd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
