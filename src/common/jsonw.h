/* jsonw.h — JSON written straight into a growing buffer, byte for byte as
 * jansson's json_dumps(JSON_COMPACT) would write the same values: strings
 * escaped alike (", \, control characters; \uXXXX upper-case), integers in
 * %lld, reals in jansson's shortest-round-trip form ("%.17g", ".0" added,
 * exponent without '+' or leading zeros). Long lists are written this way
 * (GET /jobs) so that no tree of the whole answer is ever built.
 *
 * Strings passed to jw_str must be valid UTF-8 (jansson refuses others);
 * callers check with gf_utf8_valid first, as job.c does. */
#ifndef GF_JSONW_H
#define GF_JSONW_H

#include <stddef.h>
#include <string.h>

#include "jsonapi.h"

struct jsonw {
	char *p;
	size_t len, cap;
};

void jw_free(struct jsonw *w);
/* Make room for n more bytes (and a NUL after them). */
void jw_grow(struct jsonw *w, size_t n);
static inline void jw_reserve(struct jsonw *w, size_t n)
{
	if (w->len + n + 1 > w->cap)
		jw_grow(w, n);
}

static inline void jw_raw(struct jsonw *w, const char *s, size_t n)
{
	jw_reserve(w, n);
	memcpy(w->p + w->len, s, n);
	w->len += n;
	w->p[w->len] = '\0';
}

/* A literal (keys, punctuation). */
#define jw_lit(w, s) jw_raw((w), (s), strlen(s))
void jw_str(struct jsonw *w, const char *s, size_t n);
void jw_cstr(struct jsonw *w, const char *s);
void jw_int(struct jsonw *w, long long v);
void jw_real(struct jsonw *w, double v);
/* Any JSON value, as json_dumps(v, flags) writes it (jsonwvalue.c). */
void jw_json(struct jsonw *w, const json_t *v, size_t flags);

/* jansson's text of a real into buf (at least 32 bytes); its length. */
int jw_dtostr(char *buf, size_t size, double v);

#endif
