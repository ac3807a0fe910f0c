/* err.c — filling struct gf_err. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gf_err_set(struct gf_err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int gf_err_prefix(struct gf_err *e, const char *fmt, ...)
{
	char prefix[GF_ERR_MAX], old[GF_ERR_MAX];
	va_list ap;

	if (!e)
		return -1;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	/* Keep the end of a long chain readable: the prefix gets at most half. */
	snprintf(e->msg, sizeof e->msg, "%.*s: %.*s", GF_ERR_MAX / 2, prefix, GF_ERR_MAX / 2 - 3, old);
	return -1;
}
