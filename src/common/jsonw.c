/* jsonw.c — a JSON writer into a growing buffer that writes what jansson's
 * compact dump writes (see jsonw.h; tests/unit/test_jsonw.c holds the two
 * side by side): the buffer and the scalars. It knows no JSON values, so
 * that jval.c's writer can stand on it; jw_json, which writes a whole
 * value, is jsonwvalue.c. */
#include "jsonw.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_free(struct jsonw *w)
{
	free(w->p);
	w->p = NULL;
	w->len = w->cap = 0;
}

void jw_grow(struct jsonw *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 256;

	if (w->len + n + 1 <= w->cap)
		return;
	while (cap < w->len + n + 1)
		cap *= 2;
	if (!(w->p = realloc(w->p, cap)))
		abort();
	w->cap = cap;
}

/* Bytes that need an escape: ", \ and the C0 controls. */
static inline int needs_esc(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

void jw_str(struct jsonw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	jw_reserve(w, n + 2);
	w->p[w->len++] = '"';
	while (i < n) {
		size_t k = i;
		char *o;

		while (k < n && !needs_esc(p[k]))
			k++;
		if (k > i)
			jw_raw(w, s + i, k - i);
		if (k == n)
			break;
		jw_reserve(w, 6);
		o = w->p + w->len;
		switch (p[k]) {
		case '"': memcpy(o, "\\\"", 2); w->len += 2; break;
		case '\\': memcpy(o, "\\\\", 2); w->len += 2; break;
		case '\b': memcpy(o, "\\b", 2); w->len += 2; break;
		case '\f': memcpy(o, "\\f", 2); w->len += 2; break;
		case '\n': memcpy(o, "\\n", 2); w->len += 2; break;
		case '\r': memcpy(o, "\\r", 2); w->len += 2; break;
		case '\t': memcpy(o, "\\t", 2); w->len += 2; break;
		default:
			memcpy(o, "\\u00", 4);
			o[4] = hex[p[k] >> 4];
			o[5] = hex[p[k] & 15];
			w->len += 6;
		}
		i = k + 1;
	}
	jw_reserve(w, 1);
	w->p[w->len++] = '"';
	w->p[w->len] = '\0';
}

void jw_cstr(struct jsonw *w, const char *s)
{
	jw_str(w, s, strlen(s));
}

void jw_int(struct jsonw *w, long long v)
{
	char buf[24], *e = buf + sizeof buf, *q = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--q = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--q = '-';
	jw_raw(w, q, (size_t)(e - q));
}

/* jansson's jsonp_dtostr: "%.17g", the locale's decimal point made '.',
 * ".0" when it would read back as an integer, the exponent without '+'
 * and leading zeros. */
#ifdef __SIZEOF_INT128__
/* "%.17g" of v with 1 <= |v| < 2^53 in exact integer arithmetic, as jansson
 * finishes it: the digits stdio writes (round half to even, as glibc's
 * printf in the default rounding mode), '.', trailing zeros dropped, ".0"
 * for an integer. Job times (~1.7e9 with a fraction) are all of this kind
 * and stdio's exact conversion of them was a tenth of a cascade's time.
 * 0 when v is not of this kind or a carry changes its digit count: the
 * caller asks stdio. */
static int fixed17(char *buf, size_t size, double v)
{
	static const uint64_t p10[18] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	};
	double a = fabs(v);
	char digits[17], *o = buf;
	unsigned __int128 p, rest, half;
	uint64_t ip, q, m;
	int e, k, d = 1, f, last;

	if (!(a >= 1.0 && a < 9007199254740992.0) || size < 24)
		return 0;
	m = (uint64_t)ldexp(frexp(a, &e), 53);	/* a = m * 2^-k exactly */
	k = 53 - e;
	for (ip = (uint64_t)a; d < 17 && ip >= p10[d]; d++)
		;
	f = 17 - d;				/* digits after the point */
	p = (unsigned __int128)m * p10[f];
	q = (uint64_t)(p >> k);
	if (k) {
		rest = p & (((unsigned __int128)1 << k) - 1);
		half = (unsigned __int128)1 << (k - 1);
		if (rest > half || (rest == half && (q & 1)))
			q++;
	}
	if (q >= p10[17])
		return 0;
	for (int i = 16; i >= 0; i--, q /= 10)
		digits[i] = (char)('0' + q % 10);
	for (last = 16; last >= d && digits[last] == '0'; last--)
		;
	if (v < 0)
		*o++ = '-';
	memcpy(o, digits, (size_t)d);
	o += d;
	*o++ = '.';
	if (last < d)
		*o++ = '0';
	else {
		memcpy(o, digits + d, (size_t)(last - d + 1));
		o += last - d + 1;
	}
	*o = '\0';
	return (int)(o - buf);
}
#endif

int jw_dtostr(char *buf, size_t size, double v)
{
	const char *point;
	int len;

#ifdef __SIZEOF_INT128__
	if ((len = fixed17(buf, size, v)) > 0)
		return len;
#endif
	point = localeconv()->decimal_point;
	len = snprintf(buf, size, "%.17g", v);
	char *start, *end;

	if (len < 0 || (size_t)len >= size)
		return -1;
	if (point && point[0] && point[0] != '.' && !point[1])
		for (char *c = buf; *c; c++)
			if (*c == point[0])
				*c = '.';
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		if ((size_t)len + 3 >= size)
			return -1;
		memcpy(buf + len, ".0", 3);
		len += 2;
	}
	if ((start = strchr(buf, 'e'))) {
		start++;
		end = start + 1;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, (size_t)len - (size_t)(end - buf) + 1);
			len -= (int)(end - start);
		}
	}
	return len;
}

void jw_real(struct jsonw *w, double v)
{
	char buf[64];
	int n = jw_dtostr(buf, sizeof buf, v);

	if (n > 0)
		jw_raw(w, buf, (size_t)n);
	else
		jw_lit(w, "null");	/* NaN/inf: jansson has no such real either */
}
