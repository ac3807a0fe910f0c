/* err.h — errors as values: a fixed buffer a function fills when it fails.
 *
 * Functions that can fail take a `struct gf_err *` (may be NULL) and return
 * -1 (or NULL) after calling gf_err_set(); the message is printed once, at
 * the edge, by whoever called them. */
#ifndef GF_ERR_H
#define GF_ERR_H

#include <stddef.h>

#define GF_ERR_MAX 512

struct gf_err {
	char msg[GF_ERR_MAX];
};

/* printf-style; always returns -1 so callers can `return gf_err_set(...)`. */
int gf_err_set(struct gf_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix the existing message: "<prefix>: <old message>". Returns -1. */
int gf_err_prefix(struct gf_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
