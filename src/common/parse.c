/* parse.c — pure parsers for the values users type (see parse.h).
 *
 * Everything works on (pointer, length) slices of the caller's string, so
 * nothing is modified and no parser needs a scratch copy. Numbers are read
 * with our own digit scanner: no locale, no leading blanks or '+' signs,
 * overflow detected rather than clamped. */
#include "parse.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------- small helpers ---------- */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parse p[0..len) as decimal digits into *out (0 on failure). Returns 0,
 * -1 when the slice is empty or holds a non-digit, -2 when the value
 * exceeds max. */
static int scan_u64(const char *p, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	int over = 0;

	*out = 0;
	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (!is_digit(p[i]))
			return -1;
		if (!over) {
			unsigned d = (unsigned)(p[i] - '0');
			if (v > (max - d) / 10)
				over = 1;
			else
				v = v * 10 + d;
		}
	}
	if (over)
		return -2;
	*out = v;
	return 0;
}

/* Like scan_u64 but into an int64_t bounded by max (>= 0). */
static int scan_i64(const char *p, size_t len, int64_t max, int64_t *out)
{
	uint64_t v;
	int rc = scan_u64(p, len, (uint64_t)max, &v);

	*out = (int64_t)v;
	return rc;
}

/* Find c in p[0..len); returns its index or len. */
static size_t find_char(const char *p, size_t len, char c)
{
	const char *q = memchr(p, c, len);

	return q ? (size_t)(q - p) : len;
}

/* Longest quoted input / bad part shown in a message, so the reason after
 * it still fits in struct gf_err. */
#define QUOTE_MAX 200
#define PART_MAX 100
/* printf arguments for a clipped slice: use with "%.*s". */
#define PART(p, len) (int)((len) > PART_MAX ? PART_MAX : (len)), (p)

/* "invalid <what> '<s>': <detail>"; returns -1. */
static int perr(struct gf_err *e, const char *what, const char *s,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int perr(struct gf_err *e, const char *what, const char *s,
    const char *fmt, ...)
{
	char detail[GF_ERR_MAX];
	size_t len = s ? strlen(s) : 0;
	va_list ap;

	if (!e)
		return -1;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	return gf_err_set(e, "invalid %s '%.*s%s': %s", what,
	    (int)(len > QUOTE_MAX ? QUOTE_MAX : len), s ? s : "",
	    len > QUOTE_MAX ? "..." : "", detail);
}

/* ---------- de-duplicating id collector ---------- */

/* An ordered list of int64 keys with a hash set to drop repeats. */
struct idcoll {
	int64_t *v;
	size_t n, cap;
	int64_t *slots;
	unsigned char *used;
	size_t nslots;
	size_t expanded; /* ids offered so far, repeats included */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static void idcoll_free(struct idcoll *c)
{
	free(c->v);
	free(c->slots);
	free(c->used);
	memset(c, 0, sizeof *c);
}

/* Returns 1 when k is new (and records it), 0 when already present. */
static int idset_insert(int64_t *slots, unsigned char *used, size_t nslots,
    int64_t k)
{
	size_t mask = nslots - 1, i = (size_t)mix64((uint64_t)k) & mask;

	while (used[i]) {
		if (slots[i] == k)
			return 0;
		i = (i + 1) & mask;
	}
	used[i] = 1;
	slots[i] = k;
	return 1;
}

/* Double the hash table (keeping it at most half full). -1 on OOM. */
static int idcoll_grow_set(struct idcoll *c)
{
	size_t nslots = c->nslots ? c->nslots * 2 : 64, i;
	int64_t *slots = malloc(nslots * sizeof *slots);
	unsigned char *used = calloc(nslots, 1);

	if (!slots || !used) {
		free(slots);
		free(used);
		return -1;
	}
	for (i = 0; i < c->n; i++)
		idset_insert(slots, used, nslots, c->v[i]);
	free(c->slots);
	free(c->used);
	c->slots = slots;
	c->used = used;
	c->nslots = nslots;
	return 0;
}

/* Append k unless already present. -1 on OOM. */
static int idcoll_add(struct idcoll *c, int64_t k)
{
	if ((c->n + 1) * 2 > c->nslots && idcoll_grow_set(c) < 0)
		return -1;
	if (!idset_insert(c->slots, c->used, c->nslots, k))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		int64_t *v = realloc(c->v, cap * sizeof *v);
		if (!v)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = k;
	return 0;
}

/* ---------- time limit ---------- */

#define TIME_FORMS "expected D-HH:MM:SS, HH:MM:SS, MM:SS or minutes"
#define TL "time limit"

int gf_parse_time_limit(const char *s, int64_t *secs, struct gf_err *e)
{
	/* Fields are capped so the arithmetic below cannot overflow. */
	const int64_t field_max = 1000000000000LL;
	const char *rest = s, *dash;
	int64_t days = 0, f[3], total;
	size_t len, nf = 0, i = 0;
	int rc;

	if (!s || !*s)
		return perr(e, TL, s, TIME_FORMS);
	if (s[0] == '-')
		return perr(e, TL, s, "must not be negative");
	dash = strchr(s, '-');
	if (dash) {
		size_t dlen = (size_t)(dash - s);
		rc = scan_i64(s, dlen, field_max, &days);
		if (rc == -1)
			return perr(e, TL, s, "'%.*s' is not a number of days "
			    "(" TIME_FORMS ")", PART(s, dlen));
		if (rc == -2)
			return perr(e, TL, s, "at most 365 days");
		rest = dash + 1;
	}

	/* Split the rest on ':' into at most three fields. */
	len = strlen(rest);
	for (;;) {
		size_t flen = find_char(rest + i, len - i, ':');
		if (nf == 3)
			return perr(e, TL, s, "too many ':' fields ("
			    TIME_FORMS ")");
		rc = scan_i64(rest + i, flen, field_max, &f[nf]);
		if (rc == -1)
			return perr(e, TL, s, "'%.*s' is not a number ("
			    TIME_FORMS ")", PART(rest + i, flen));
		if (rc == -2)
			return perr(e, TL, s, "at most 365 days");
		nf++;
		i += flen;
		if (i == len)
			break;
		i++; /* skip ':' */
	}

	if (dash && nf != 3)
		return perr(e, TL, s, "a day count must be followed by "
		    "HH:MM:SS");
	if (nf == 1) {
		total = f[0] * 60;
	} else {
		/* f[nf-1] is seconds, f[nf-2] minutes, f[0] hours if nf == 3. */
		if (f[nf - 1] >= 60)
			return perr(e, TL, s, "seconds field %lld must be "
			    "below 60", (long long)f[nf - 1]);
		if (nf == 3 && f[1] >= 60)
			return perr(e, TL, s, "minutes field %lld must be "
			    "below 60", (long long)f[1]);
		if (dash && f[0] >= 24)
			return perr(e, TL, s, "hours field %lld must be below "
			    "24 after a day count", (long long)f[0]);
		total = f[nf - 1] + f[nf - 2] * 60;
		if (nf == 3)
			total += f[0] * 3600;
	}
	total += days * 86400;
	if (total > GF_TIME_LIMIT_MAX_SECS)
		return perr(e, TL, s, "at most 365 days");
	if (total == 0)
		return perr(e, TL, s, "must be greater than zero");
	*secs = total;
	return 0;
}

/* ---------- memory ---------- */

#define MEM "memory size"

/* Unit suffix -> size of one unit in KiB; 0 when unknown. */
static int64_t memory_unit_kib(const char *u)
{
	static const struct {
		const char *name;
		int64_t kib;
	} units[] = {
		{ "", 1024 }, { "k", 1 }, { "kb", 1 }, { "kib", 1 },
		{ "m", 1024 }, { "mb", 1024 }, { "mib", 1024 },
		{ "g", 1024 * 1024 }, { "gb", 1024 * 1024 },
		{ "gib", 1024 * 1024 }, { "t", 1024LL * 1024 * 1024 },
		{ "tb", 1024LL * 1024 * 1024 }, { "tib", 1024LL * 1024 * 1024 },
	};
	size_t i;

	for (i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcasecmp(u, units[i].name) == 0)
			return units[i].kib;
	return 0;
}

int gf_parse_memory_mb(const char *s, int64_t *mb, struct gf_err *e)
{
	static const uint64_t pow10[] = { 1, 10, 100, 1000, 10000, 100000,
		1000000, 10000000, 100000000, 1000000000 };
	const uint64_t max_kib = (uint64_t)GF_MEMORY_MAX_MB * 1024;
	const char *p = s, *unit;
	uint64_t ip = 0, fr = 0, whole, rem, mib;
	size_t ilen, flen = 0;
	int64_t ukib;

	if (!s || !*s)
		return perr(e, MEM, s, "expected a number with an optional "
		    "unit (K, M, G, T)");
	if (s[0] == '-')
		return perr(e, MEM, s, "must not be negative");
	for (ilen = 0; is_digit(p[ilen]); ilen++)
		;
	if (ilen == 0)
		return perr(e, MEM, s, "'%.*s' is not a number (expected e.g. "
		    "100, 1024M, 2G)", PART(s, strlen(s)));
	if (scan_u64(p, ilen, max_kib, &ip) < 0)
		return perr(e, MEM, s, "too large (at most %lld MiB)",
		    (long long)GF_MEMORY_MAX_MB);
	p += ilen;
	if (*p == '.') {
		p++;
		for (flen = 0; is_digit(p[flen]); flen++)
			;
		if (flen == 0)
			return perr(e, MEM, s, "expected digits after '.'");
		if (flen > 9)
			return perr(e, MEM, s, "too many decimal places (at "
			    "most 9)");
		scan_u64(p, flen, UINT64_MAX, &fr);
		p += flen;
	}
	unit = p;
	ukib = memory_unit_kib(unit);
	if (ukib == 0)
		return perr(e, MEM, s, "unknown unit '%.*s' (expected K, M, G "
		    "or T)", PART(unit, strlen(unit)));

	/* KiB = ip*unit + fr*unit/10^flen; round the MiB up. */
	if (ip > max_kib / (uint64_t)ukib)
		return perr(e, MEM, s, "too large (at most %lld MiB)",
		    (long long)GF_MEMORY_MAX_MB);
	whole = ip * (uint64_t)ukib + fr * (uint64_t)ukib / pow10[flen];
	rem = fr * (uint64_t)ukib % pow10[flen];
	mib = whole / 1024 + ((whole % 1024 || rem) ? 1 : 0);
	if (mib > (uint64_t)GF_MEMORY_MAX_MB)
		return perr(e, MEM, s, "too large (at most %lld MiB)",
		    (long long)GF_MEMORY_MAX_MB);
	if (mib == 0)
		return perr(e, MEM, s, "must be greater than zero");
	*mb = (int64_t)mib;
	return 0;
}

/* ---------- bounded integer ---------- */

int gf_parse_int_range(const char *s, int64_t min, int64_t max,
    const char *what, int64_t *out, struct gf_err *e)
{
	const char *p = s;
	uint64_t mag = 0;
	int64_t v = 0;
	int neg = 0, rc;

	if (!what)
		what = "value";
	if (!s || !*s)
		return perr(e, what, s, "expected an integer");
	if (*p == '-') {
		neg = 1;
		p++;
	}
	rc = scan_u64(p, strlen(p), neg ? (uint64_t)INT64_MAX + 1 :
	    (uint64_t)INT64_MAX, &mag);
	if (rc == -1)
		return perr(e, what, s, "not an integer");
	if (rc == 0)
		v = neg ? (mag ? -(int64_t)(mag - 1) - 1 : 0) : (int64_t)mag;
	if (rc == -2 || v < min || v > max)
		return perr(e, what, s, "must be between %lld and %lld",
		    (long long)min, (long long)max);
	*out = v;
	return 0;
}

/* ---------- job references ---------- */

/* Reasons a job reference slice is bad. */
enum { REF_OK = 0, REF_SYNTAX = -1, REF_ZERO = -2, REF_BIG = -3 };

/* Parse a positive job id slice. */
static int scan_job_id(const char *p, size_t len, int64_t *id)
{
	int rc = scan_i64(p, len, INT64_MAX, id);

	if (rc == -1)
		return REF_SYNTAX;
	if (rc == -2)
		return REF_BIG;
	return *id == 0 ? REF_ZERO : REF_OK;
}

/* Parse "N", "@" or "@~N" in p[0..len). */
static int scan_jobref(const char *p, size_t len, struct gf_jobref *r)
{
	int64_t back;
	int rc;

	memset(r, 0, sizeof *r);
	if (len >= 1 && p[0] == '@') {
		r->is_relative = 1;
		if (len == 1)
			return REF_OK;
		if (p[1] != '~')
			return REF_SYNTAX;
		rc = scan_i64(p + 2, len - 2, INT64_MAX, &back);
		if (rc == -1)
			return REF_SYNTAX;
		if (rc == -2)
			return REF_BIG;
		r->back = back;
		return REF_OK;
	}
	return scan_job_id(p, len, &r->id);
}

/* Message for a bad reference slice; returns -1. */
static int jobref_error(struct gf_err *e, const char *what, const char *s,
    const char *p, size_t len, int why)
{
	const char *detail = why == REF_ZERO ? "job ids start at 1" :
	    why == REF_BIG ? "number too large" :
	    "expected a job id, @ or @~N";

	return perr(e, what, s, "'%.*s' is not a job id (%s)", PART(p, len),
	    detail);
}

int gf_parse_jobref(const char *s, struct gf_jobref *out, struct gf_err *e)
{
	struct gf_jobref r;
	int why;

	if (!s || !*s)
		return perr(e, "job reference", s, "expected a job id, @ or "
		    "@~N");
	why = scan_jobref(s, strlen(s), &r);
	if (why != REF_OK)
		return jobref_error(e, "job reference", s, s, strlen(s), why);
	*out = r;
	return 0;
}

/* Job refs as collector keys: ids stay positive, "@~N" becomes -N-1. */
static int64_t jobref_key(const struct gf_jobref *r)
{
	return r->is_relative ? -r->back - 1 : r->id;
}

static struct gf_jobref key_jobref(int64_t k)
{
	struct gf_jobref r = { 0, 0, 0 };

	if (k < 0) {
		r.is_relative = 1;
		r.back = -(k + 1);
	} else {
		r.id = k;
	}
	return r;
}

#define IDL "ID list"

/* Add one ID list item (a reference or an "A-B" range) to c. */
static int jobref_list_item(const char *s, const char *p, size_t len,
    void *ctx, struct gf_err *e)
{
	struct idcoll *c = ctx;
	size_t dash = find_char(p, len, '-'), blen = len - dash - 1;
	const char *bp = p + dash + 1;
	struct gf_jobref r;
	int64_t a, b, k;
	int why;

	if (dash == len || dash == 0 || p[0] == '@') {
		why = scan_jobref(p, len, &r);
		if (why != REF_OK)
			return jobref_error(e, IDL, s, p, len, why);
		if (c->expanded >= GF_MAX_LIST_IDS)
			return perr(e, IDL, s, "more than %d ids",
			    GF_MAX_LIST_IDS);
		c->expanded++;
		if (idcoll_add(c, jobref_key(&r)) < 0)
			return perr(e, IDL, s, "out of memory");
		return 0;
	}
	why = scan_job_id(p, dash, &a);
	if (why != REF_OK)
		return jobref_error(e, IDL, s, p, dash, why);
	why = scan_job_id(bp, blen, &b);
	if (why != REF_OK) /* name the whole item when its end is missing */
		return jobref_error(e, IDL, s, blen ? bp : p, blen ? blen : len,
		    why);
	if (a > b)
		return perr(e, IDL, s, "range '%.*s' starts after it ends",
		    PART(p, len));
	if ((uint64_t)(b - a) >= GF_MAX_LIST_IDS - c->expanded)
		return perr(e, IDL, s, "more than %d ids", GF_MAX_LIST_IDS);
	c->expanded += (size_t)(b - a) + 1;
	for (k = a;; k++) {
		if (idcoll_add(c, k) < 0)
			return perr(e, IDL, s, "out of memory");
		if (k == b)
			break;
	}
	return 0;
}

/* Call item() on each ','-separated slice of s[0..len); empty items and a
 * trailing ',' are errors. */
static int each_item(const char *s, size_t len, const char *what,
    int (*item)(const char *, const char *, size_t, void *,
    struct gf_err *), void *ctx, struct gf_err *e)
{
	size_t i = 0;

	for (;;) {
		size_t ilen = find_char(s + i, len - i, ',');
		if (ilen == 0 && i == len && i)
			return perr(e, what, s, "trailing ','");
		if (ilen == 0)
			return perr(e, what, s, "empty item at position %zu",
			    i + 1);
		if (item(s, s + i, ilen, ctx, e) < 0)
			return -1;
		i += ilen;
		if (i == len)
			return 0;
		i++;
	}
}

int gf_parse_jobref_list(const char *s, struct gf_jobref_list *out,
    struct gf_err *e)
{
	struct idcoll c = { 0 };
	size_t j;

	out->v = NULL;
	out->n = 0;
	if (!s || !*s)
		return perr(e, IDL, s, "expected ids like 42, 1,2,3, 1-5 or "
		    "@");
	if (each_item(s, strlen(s), IDL, jobref_list_item, &c, e) < 0) {
		idcoll_free(&c);
		return -1;
	}
	out->v = malloc(c.n * sizeof *out->v);
	if (!out->v) {
		idcoll_free(&c);
		return perr(e, IDL, s, "out of memory");
	}
	for (j = 0; j < c.n; j++)
		out->v[j] = key_jobref(c.v[j]);
	out->n = c.n;
	idcoll_free(&c);
	return 0;
}

void gf_jobref_list_free(struct gf_jobref_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* ---------- GPU specs ---------- */

#define GPU "GPU spec"

/* Parse a GPU index slice (item names the whole item for messages). */
static int scan_gpu_index(const char *s, const char *p, size_t len,
    const char *item, size_t ilen, int64_t *idx, struct gf_err *e)
{
	int rc = scan_i64(p, len, 63, idx);

	if (len == 0) {
		p = item;
		len = ilen;
	}
	if (rc == -1)
		return perr(e, GPU, s, "'%.*s' is not a GPU index",
		    PART(p, len));
	if (rc == -2)
		return perr(e, GPU, s, "GPU index '%.*s' is out of range "
		    "(0-63)", PART(p, len));
	return 0;
}

/* Set the bits of one "N" or "A-B" item in the mask ctx points to. */
static int gpu_item(const char *s, const char *p, size_t len, void *ctx,
    struct gf_err *e)
{
	uint64_t *mask = ctx;
	size_t dash = find_char(p, len, '-');
	int64_t a, b;

	if (scan_gpu_index(s, p, dash, p, len, &a, e) < 0)
		return -1;
	b = a;
	if (dash < len) {
		if (scan_gpu_index(s, p + dash + 1, len - dash - 1, p, len, &b,
		    e) < 0)
			return -1;
		if (a > b)
			return perr(e, GPU, s, "range '%.*s' starts after it "
			    "ends", PART(p, len));
	}
	for (; a <= b; a++)
		*mask |= 1ULL << a;
	return 0;
}

int gf_parse_gpu_spec(const char *s, uint64_t *mask, int *all,
    struct gf_err *e)
{
	uint64_t m = 0;

	if (!s || !*s)
		return perr(e, GPU, s, "expected 'all' or indices like 0,2 or "
		    "0-3");
	if (strcmp(s, "all") == 0) {
		*mask = 0;
		*all = 1;
		return 0;
	}
	if (each_item(s, strlen(s), GPU, gpu_item, &m, e) < 0)
		return -1;
	*mask = m;
	*all = 0;
	return 0;
}

int gf_format_gpu_mask(uint64_t mask, char *buf, size_t size)
{
	char tmp[256]; /* worst case "0,2,4,...,62" is well under this */
	size_t n = 0;
	int i = 0;

	tmp[0] = '\0';
	while (i < 64) {
		int j;
		if (!(mask >> i & 1)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < 64 && (mask >> (j + 1) & 1); j++)
			;
		n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s%d",
		    n ? "," : "", i);
		if (j > i)
			n += (size_t)snprintf(tmp + n, sizeof tmp - n, "-%d", j);
		i = j + 1;
	}
	return snprintf(buf, size, "%s", tmp);
}

/* ---------- begin time ---------- */

#define BT "begin time"
#define BEGIN_FORMS "expected HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], now " \
	"or now+N[s|m|h|d]"

/* Read minlen..maxlen digits at *pp (not followed by another digit). */
static int scan_field(const char **pp, size_t minlen, size_t maxlen, int *out)
{
	const char *p = *pp;
	size_t n = 0;
	int v = 0;

	while (n < maxlen && is_digit(p[n])) {
		v = v * 10 + (p[n] - '0');
		n++;
	}
	if (n < minlen || is_digit(p[n]))
		return -1;
	*pp = p + n;
	*out = v;
	return 0;
}

/* Parse "H[H]:MM[:SS]" at *pp into h, m, sec (ranges unchecked). */
static int scan_clock(const char **pp, int *h, int *m, int *sec)
{
	const char *p = *pp;

	*sec = 0;
	if (scan_field(&p, 1, 2, h) < 0 || *p++ != ':' ||
	    scan_field(&p, 2, 2, m) < 0)
		return -1;
	if (*p == ':') {
		p++;
		if (scan_field(&p, 2, 2, sec) < 0)
			return -1;
	}
	*pp = p;
	return 0;
}

static int is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30,
		31 };

	return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

static int check_clock(const char *s, int h, int m, int sec, struct gf_err *e)
{
	if (h > 23)
		return perr(e, BT, s, "hour %d is out of range (0-23)", h);
	if (m > 59)
		return perr(e, BT, s, "minute %d is out of range (0-59)", m);
	if (sec > 59)
		return perr(e, BT, s, "second %d is out of range (0-59)", sec);
	return 0;
}

/* "now+N[unit]"; p points just after "now+". */
static int begin_offset(const char *s, const char *p, time_t now,
    time_t *out, struct gf_err *e)
{
	size_t n = 0;
	int64_t v, mult = 60;

	while (is_digit(p[n]))
		n++;
	if (n == 0)
		return perr(e, BT, s, "expected a number after 'now+'");
	if (p[n] != '\0') {
		char u = p[n];
		if (p[n + 1] != '\0' || (u != 's' && u != 'm' && u != 'h' &&
		    u != 'd'))
			return perr(e, BT, s, "unknown unit '%.*s' (expected "
			    "s, m, h or d)", PART(p + n, strlen(p + n)));
		mult = u == 's' ? 1 : u == 'm' ? 60 : u == 'h' ? 3600 : 86400;
	}
	if (scan_i64(p, n, GF_BEGIN_MAX_OFFSET, &v) < 0 ||
	    v > GF_BEGIN_MAX_OFFSET / mult)
		return perr(e, BT, s, "offset too large (at most 100 years)");
	*out = now + (time_t)(v * mult);
	return 0;
}

/* "HH:MM[:SS]": the next such local time strictly after now. */
static int begin_clock(const char *s, time_t now, time_t *out,
    struct gf_err *e)
{
	const char *p = s;
	struct tm base, tm;
	int h, m, sec;
	time_t t;

	if (scan_clock(&p, &h, &m, &sec) < 0 || *p != '\0')
		return perr(e, BT, s, BEGIN_FORMS);
	if (check_clock(s, h, m, sec, e) < 0)
		return -1;
	if (!localtime_r(&now, &base))
		return perr(e, BT, s, "cannot read the local time");
	base.tm_hour = h;
	base.tm_min = m;
	base.tm_sec = sec;
	base.tm_isdst = -1;
	tm = base;
	t = mktime(&tm);
	if (t != (time_t)-1 && t <= now) { /* already passed: tomorrow */
		tm = base;
		tm.tm_mday++;
		t = mktime(&tm);
	}
	if (t == (time_t)-1)
		return perr(e, BT, s, "cannot be represented in local time");
	*out = t;
	return 0;
}

/* "YYYY-MM-DD[(T| )HH:MM[:SS]]" in local time. */
static int begin_date(const char *s, time_t *out, struct gf_err *e)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0;
	struct tm tm;
	time_t t;

	if (scan_field(&p, 4, 4, &y) < 0 || *p++ != '-' ||
	    scan_field(&p, 1, 2, &mo) < 0 || *p++ != '-' ||
	    scan_field(&p, 1, 2, &d) < 0)
		return perr(e, BT, s, BEGIN_FORMS);
	if (*p == 'T' || *p == ' ') {
		p++;
		if (scan_clock(&p, &h, &mi, &sec) < 0)
			return perr(e, BT, s, "expected HH:MM[:SS] after the "
			    "date");
	}
	if (*p != '\0')
		return perr(e, BT, s, "unexpected '%.*s' after the date",
		    PART(p, strlen(p)));
	if (y < 1970)
		return perr(e, BT, s, "year %d is out of range (1970-9999)", y);
	if (mo < 1 || mo > 12)
		return perr(e, BT, s, "month %d is out of range (1-12)", mo);
	if (d < 1 || d > days_in_month(y, mo))
		return perr(e, BT, s, "day %d is out of range for %04d-%02d "
		    "(1-%d)", d, y, mo, days_in_month(y, mo));
	if (check_clock(s, h, mi, sec, e) < 0)
		return -1;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return perr(e, BT, s, "cannot be represented in local time");
	*out = t;
	return 0;
}

int gf_parse_begin_time(const char *s, time_t now, time_t *out,
    struct gf_err *e)
{
	size_t n = 0;

	if (!s || !*s)
		return perr(e, BT, s, BEGIN_FORMS);
	if (strcmp(s, "now") == 0) {
		*out = now;
		return 0;
	}
	if (strncmp(s, "now+", 4) == 0)
		return begin_offset(s, s + 4, now, out, e);
	tzset(); /* localtime_r need not re-read TZ itself */
	while (is_digit(s[n]))
		n++;
	if (n == 4 && s[4] == '-')
		return begin_date(s, out, e);
	return begin_clock(s, now, out, e);
}

/* ---------- --since ---------- */

#define SINCE "--since"
#define SINCE_FORMS "expected N[s|m|h|d|w] (N alone: minutes), now-N[s|m|h|d|w], " \
	"today, yesterday, HH:MM[:SS] or YYYY-MM-DD[THH:MM[:SS]]"

/* Local midnight of the day `days` before now's. */
static time_t local_midnight(time_t now, int days)
{
	struct tm tm;

	localtime_r(&now, &tm);
	tm.tm_mday -= days;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_isdst = -1;
	return mktime(&tm);
}

int gf_parse_since(const char *s, time_t now, time_t *out, struct gf_err *e)
{
	const char *p;
	struct gf_err sub;
	size_t n = 0;
	int64_t v;

	if (!s || !*s)
		return perr(e, SINCE, s, SINCE_FORMS);
	tzset();
	if (!strcmp(s, "today") || !strcmp(s, "yesterday")) {
		*out = local_midnight(now, s[0] == 'y');
		return 0;
	}
	p = strncmp(s, "now-", 4) == 0 ? s + 4 : s;
	while (is_digit(p[n]))
		n++;
	if (n && (!p[n] || (!p[n + 1] && strchr("smhdw", p[n])))) {
		static const int64_t mult[] = { 1, 60, 3600, 86400, 7 * 86400 };
		int64_t m = !p[n] ? 60 : mult[strchr("smhdw", p[n]) - "smhdw"];

		if (scan_i64(p, n, INT64_MAX, &v) < 0 || v > 200LL * 365 * 86400 / m)
			return perr(e, SINCE, s, "too far back");
		*out = now - (time_t)(v * m);
		return 0;
	}
	if (p != s)
		return perr(e, SINCE, s, SINCE_FORMS);
	if (gf_parse_begin_time(s, now, out, &sub) < 0)
		return perr(e, SINCE, s, SINCE_FORMS);
	if (*out > now && n && n != 4)
		*out -= 86400; /* a clock time: its last occurrence */
	/* a time still ahead (a date, now+N) is kept: nothing was submitted
	 * since then */
	return 0;
}

/* ---------- array specs ---------- */

#define ARR "array spec"

/* Parse a task id slice; item/ilen name the whole item if it is empty. */
static int scan_task_id(const char *s, const char *p, size_t len,
    const char *item, size_t ilen, int64_t *id, struct gf_err *e)
{
	int rc = scan_i64(p, len, INT64_MAX, id);

	if (len == 0) {
		p = item;
		len = ilen;
	}
	if (rc == -1)
		return perr(e, ARR, s, "'%.*s' is not a task id (ids are "
		    "integers >= 0)", PART(p, len));
	if (rc == -2)
		return perr(e, ARR, s, "task id '%.*s' is too large",
		    PART(p, len));
	return 0;
}

/* Add one array item ("N", "A-B" or "A-B:S") to the collector. */
static int array_item(const char *s, const char *p, size_t len, void *ctx,
    struct gf_err *e)
{
	struct idcoll *c = ctx;
	size_t colon = find_char(p, len, ':');
	size_t dash = find_char(p, colon, '-');
	int64_t a, b, step = 1;
	uint64_t count, i;

	if (colon < len && dash == colon && dash > 0)
		return perr(e, ARR, s, "step in '%.*s' needs a range "
		    "(A-B:STEP)", PART(p, len));
	if (scan_task_id(s, p, dash, p, len, &a, e) < 0)
		return -1;
	b = a;
	if (dash < colon) {
		if (scan_task_id(s, p + dash + 1, colon - dash - 1, p, len, &b,
		    e) < 0)
			return -1;
		if (a > b)
			return perr(e, ARR, s, "range '%.*s' starts after it "
			    "ends", PART(p, colon));
	}
	if (colon < len) {
		const char *q = p + colon + 1;
		size_t qlen = len - colon - 1;
		if (scan_i64(q, qlen, INT64_MAX, &step) < 0)
			return perr(e, ARR, s, "step '%.*s' is not a number",
			    PART(q, qlen));
		if (step == 0)
			return perr(e, ARR, s, "step in '%.*s' must be at "
			    "least 1", PART(p, len));
	}
	count = (uint64_t)(b - a) / (uint64_t)step + 1;
	if (count > GF_MAX_ARRAY_TASKS - c->expanded)
		return perr(e, ARR, s, "more than %d tasks",
		    GF_MAX_ARRAY_TASKS);
	c->expanded += (size_t)count;
	for (i = 0; i < count; i++) /* a + i*step <= b: no overflow */
		if (idcoll_add(c, a + (int64_t)i * step) < 0)
			return perr(e, ARR, s, "out of memory");
	return 0;
}

int gf_parse_array_spec(const char *s, struct gf_array_spec *out,
    struct gf_err *e)
{
	struct idcoll c = { 0 };
	const char *pct;
	size_t len;
	int64_t k = 0;

	memset(out, 0, sizeof *out);
	if (!s || !*s)
		return perr(e, ARR, s, "expected task ids like 1-10, 1,3,5 or "
		    "0-20:2, optionally with %%K");
	pct = strchr(s, '%');
	len = pct ? (size_t)(pct - s) : strlen(s);
	if (pct) {
		const char *q = pct + 1;
		if (scan_i64(q, strlen(q), INT64_MAX, &k) < 0)
			return perr(e, ARR, s, "'%.*s' after '%%' is not a "
			    "number", PART(q, strlen(q)));
		if (k < 1)
			return perr(e, ARR, s, "'%%%.*s' must allow at least 1 "
			    "task at once", PART(q, strlen(q)));
	}
	if (len == 0)
		return perr(e, ARR, s, "no task ids before '%%'");
	if (each_item(s, len, ARR, array_item, &c, e) < 0) {
		idcoll_free(&c);
		return -1;
	}
	out->ids = c.v; /* hand the vector over; drop the hash set */
	out->n = c.n;
	out->max_concurrent = k;
	c.v = NULL;
	idcoll_free(&c);
	return 0;
}

void gf_array_spec_free(struct gf_array_spec *a)
{
	if (!a)
		return;
	free(a->ids);
	memset(a, 0, sizeof *a);
}

/* ---------- sweep parameters ---------- */

#define PRM "parameter"

/* A decimal number slice: -?(D+(.D*)?|.D+). */
struct decnum {
	int neg;
	const char *ip, *fp; /* integer and fraction digits */
	size_t ilen, flen;
};

static int scan_decnum(const char *p, size_t len, struct decnum *d)
{
	size_t i = 0;

	memset(d, 0, sizeof *d);
	if (i < len && p[i] == '-') {
		d->neg = 1;
		i++;
	}
	d->ip = p + i;
	while (i < len && is_digit(p[i])) {
		i++;
		d->ilen++;
	}
	if (i < len && p[i] == '.') {
		i++;
		d->fp = p + i;
		while (i < len && is_digit(p[i])) {
			i++;
			d->flen++;
		}
	}
	return (i == len && d->ilen + d->flen > 0) ? 0 : -1;
}

/* d * 10^places as an int64 (places >= d->flen). -1 on overflow. */
static int decnum_scaled(const struct decnum *d, size_t places, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < d->ilen + places; i++) {
		size_t f = i - d->ilen;
		int digit = i < d->ilen ? d->ip[i] - '0' :
		    f < d->flen ? d->fp[f] - '0' : 0;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, digit, &v))
			return -1;
	}
	*out = d->neg ? -v : v;
	return 0;
}

/* Print v / 10^places with trailing fraction zeros dropped. */
static char *format_scaled(int64_t v, size_t places)
{
	uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v, p10 = 1, ip, fp;
	char buf[64], frac[32];
	size_t i, n;

	for (i = 0; i < places; i++)
		p10 *= 10;
	ip = a / p10;
	fp = a % p10;
	n = (size_t)snprintf(buf, sizeof buf, "%s%llu", v < 0 ? "-" : "",
	    (unsigned long long)ip);
	if (fp) {
		size_t fl = places;
		snprintf(frac, sizeof frac, "%0*llu", (int)places,
		    (unsigned long long)fp);
		while (frac[fl - 1] == '0')
			fl--;
		snprintf(buf + n, sizeof buf - n, ".%.*s", (int)fl, frac);
	}
	return strdup(buf);
}

/* Split "a:b[:c]" into decimal numbers; 0 when v is exactly that form. */
static int scan_range_form(const char *v, struct decnum d[3], size_t *nd)
{
	size_t len = strlen(v), i = 0;

	*nd = 0;
	for (;;) {
		size_t flen = find_char(v + i, len - i, ':');
		if (*nd == 3 || scan_decnum(v + i, flen, &d[*nd]) < 0)
			return -1;
		(*nd)++;
		i += flen;
		if (i == len)
			break;
		i++;
	}
	return *nd >= 2 ? 0 : -1;
}

static void free_values(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Expand a numeric range "a:b[:step]" into out->values. Values are exact:
 * every number is scaled to the same count of decimals as an integer. */
static int param_range(const char *s, const struct decnum *d, size_t nd,
    struct gf_param *out, struct gf_err *e)
{
	const struct decnum one = { 0, "1", NULL, 1, 0 };
	const struct decnum *step = nd == 3 ? &d[2] : &one;
	size_t places = d[0].flen, i;
	int64_t a, b, st, span;
	uint64_t count;

	if (d[1].flen > places)
		places = d[1].flen;
	if (step->flen > places)
		places = step->flen;
	if (places > 9 || decnum_scaled(&d[0], places, &a) < 0 ||
	    decnum_scaled(&d[1], places, &b) < 0 ||
	    decnum_scaled(step, places, &st) < 0)
		return perr(e, PRM, s, "range numbers too large or too precise "
		    "(at most 9 decimals)");
	if (st <= 0)
		return perr(e, PRM, s, "step must be greater than zero");
	if (a > b)
		return perr(e, PRM, s, "range start is greater than its end");
	if (__builtin_sub_overflow(b, a, &span))
		return perr(e, PRM, s, "range too large");
	count = (uint64_t)span / (uint64_t)st + 1;
	if (count > GF_MAX_PARAM_VALUES)
		return perr(e, PRM, s, "more than %d values",
		    GF_MAX_PARAM_VALUES);
	out->values = calloc((size_t)count, sizeof *out->values);
	if (!out->values)
		return perr(e, PRM, s, "out of memory");
	for (i = 0; i < count; i++) {
		out->values[i] = format_scaled(a + (int64_t)i * st, places);
		if (!out->values[i]) {
			free_values(out->values, i);
			out->values = NULL;
			return perr(e, PRM, s, "out of memory");
		}
	}
	out->n = (size_t)count;
	return 0;
}

/* Split a literal "a,b,c" list into out->values. */
static int param_list(const char *s, const char *v, struct gf_param *out,
    struct gf_err *e)
{
	size_t len = strlen(v), i = 0, n = 1, k;

	for (k = 0; k < len; k++)
		n += v[k] == ',';
	if (n > GF_MAX_PARAM_VALUES)
		return perr(e, PRM, s, "more than %d values",
		    GF_MAX_PARAM_VALUES);
	out->values = calloc(n, sizeof *out->values);
	if (!out->values)
		return perr(e, PRM, s, "out of memory");
	for (k = 0; k < n; k++) {
		size_t flen = find_char(v + i, len - i, ',');
		if (flen == 0 || !(out->values[k] = strndup(v + i, flen))) {
			free_values(out->values, k);
			out->values = NULL;
			if (flen == 0)
				return perr(e, PRM, s, "value %zu is empty",
				    k + 1);
			return perr(e, PRM, s, "out of memory");
		}
		i += flen + 1;
	}
	out->n = n;
	return 0;
}

static int valid_key(const char *p, size_t len)
{
	size_t i;

	if (len == 0 || is_digit(p[0]))
		return 0;
	for (i = 0; i < len; i++) {
		char c = p[i];
		if (!(is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z')))
			return 0;
	}
	return 1;
}

int gf_parse_param(const char *s, struct gf_param *out, struct gf_err *e)
{
	struct decnum d[3];
	const char *eq, *v;
	size_t nd, klen;
	int rc;

	memset(out, 0, sizeof *out);
	if (!s || !*s)
		return perr(e, PRM, s, "expected key=a,b,c or "
		    "key=start:end[:step]");
	eq = strchr(s, '=');
	if (!eq)
		return perr(e, PRM, s, "missing '=' (expected key=a,b,c or "
		    "key=start:end[:step])");
	klen = (size_t)(eq - s);
	if (klen == 0)
		return perr(e, PRM, s, "missing key before '='");
	if (!valid_key(s, klen))
		return perr(e, PRM, s, "'%.*s' is not a valid key (letters, "
		    "digits and '_', not starting with a digit)",
		    PART(s, klen));
	v = eq + 1;
	if (*v == '\0')
		return perr(e, PRM, s, "no values after '='");
	if (scan_range_form(v, d, &nd) == 0)
		rc = param_range(s, d, nd, out, e);
	else
		rc = param_list(s, v, out, e);
	if (rc < 0)
		return -1;
	out->key = strndup(s, klen);
	if (!out->key) {
		gf_param_free(out);
		return perr(e, PRM, s, "out of memory");
	}
	return 0;
}

void gf_param_free(struct gf_param *p)
{
	if (!p)
		return;
	free(p->key);
	free_values(p->values, p->n);
	memset(p, 0, sizeof *p);
}

/* ---------- name templates ---------- */

#define TPL "template"

/* A growing NUL-terminated output string. */
struct strbuf {
	char *s;
	size_t n, cap;
};

static int sb_add(struct strbuf *b, const char *p, size_t len)
{
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *s;
		while (cap < b->n + len + 1)
			cap *= 2;
		s = realloc(b->s, cap);
		if (!s)
			return -1;
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->n, p, len);
	b->n += len;
	b->s[b->n] = '\0';
	return 0;
}

/* Index of key p[0..len) in keys, or n. */
static size_t find_key(const char *p, size_t len, const char *const *keys,
    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (keys[i] && strlen(keys[i]) == len &&
		    memcmp(keys[i], p, len) == 0)
			return i;
	return n;
}

/* Append the placeholder starting at *pp ('{') and move past it. */
static int fill_one(const char *tmpl, const char **pp, const char *const *keys,
    const char *const *values, size_t n, struct strbuf *b, struct gf_err *e)
{
	const char *p = *pp, *close = strchr(p + 1, '}'), *val;
	size_t len, k;

	if (!close)
		return perr(e, TPL, tmpl, "unclosed '{' at position %zu",
		    (size_t)(p - tmpl) + 1);
	len = (size_t)(close - p - 1);
	if (len == 0)
		return perr(e, TPL, tmpl, "empty placeholder '{}' (write '{{' "
		    "for a literal brace)");
	k = find_key(p + 1, len, keys, n);
	if (k == n)
		return perr(e, TPL, tmpl, "unknown parameter '%.*s'",
		    PART(p + 1, len));
	val = values[k] ? values[k] : "";
	if (sb_add(b, val, strlen(val)) < 0)
		return perr(e, TPL, tmpl, "out of memory");
	*pp = close + 1;
	return 0;
}

char *gf_fill_template(const char *tmpl, const char *const *keys,
    const char *const *values, size_t n, struct gf_err *e)
{
	struct strbuf b = { NULL, 0, 0 };
	const char *p = tmpl;

	if (!tmpl) {
		perr(e, TPL, tmpl, "none given");
		return NULL;
	}
	if (sb_add(&b, "", 0) < 0)
		goto oom;
	while (*p) {
		size_t run = strcspn(p, "{}");

		if (sb_add(&b, p, run) < 0)
			goto oom;
		p += run;
		if (*p == '\0')
			break;
		if (p[0] == p[1]) { /* "{{" or "}}" */
			if (sb_add(&b, p, 1) < 0)
				goto oom;
			p += 2;
		} else if (*p == '}') {
			perr(e, TPL, tmpl, "single '}' at position %zu (write "
			    "'}}' for a literal brace)",
			    (size_t)(p - tmpl) + 1);
			goto fail;
		} else if (fill_one(tmpl, &p, keys, values, n, &b, e) < 0) {
			goto fail;
		}
	}
	return b.s;
oom:
	perr(e, TPL, tmpl, "out of memory");
fail:
	free(b.s);
	return NULL;
}

int gf_parse_duration(const char *s, const char *what, int64_t *secs,
    struct gf_err *e)
{
	const char *p = s;
	int64_t total = 0;

	if (strchr(s, ':'))
		return gf_parse_time_limit(s, secs, e);
	while (*p) {
		char *end;
		long long n;

		if (!is_digit(*p))
			goto bad;
		errno = 0;
		n = strtoll(p, &end, 10);
		if (errno || end == p || n < 0 || n > 1000000000)
			goto bad;
		if (!*end && p == s) {
			total = n * 60;
			if (total > GF_BEGIN_MAX_OFFSET)
				return gf_err_set(e, "%s '%s' is too long (at most 100 years)", what, s);
			break;
		}
		switch (*end) {
		case 'd': total += n * 86400; break;
		case 'h': total += n * 3600; break;
		case 'm': total += n * 60; break;
		case 's': total += n; break;
		default: goto bad;
		}
		if (total > GF_BEGIN_MAX_OFFSET)
			return gf_err_set(e, "%s '%s' is too long (at most 100 years)", what, s);
		p = end + 1;
	}
	if (total <= 0)
		return gf_err_set(e, "%s '%s' must be positive", what, s);
	*secs = total;
	return 0;
bad:
	return gf_err_set(e, "%s '%s': expected e.g. 2h, 30m, 1h30m, 1d", what, s);
}

/* ---- --signal SIG@SECS ------------------------------------------------- */

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
	{ "USR2", SIGUSR2 }, { "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "XCPU", SIGXCPU }, { "PWR", SIGPWR },
};

const char *gf_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].sig == sig)
			return signal_names[i].name;
	return NULL;
}

int gf_parse_signal_spec(const char *s, const char *flag, int *sig, int *secs, struct gf_err *e)
{
	const char *at = strchr(s, '@'), *name = s;
	size_t n = at ? (size_t)(at - s) : strlen(s);
	char buf[16];
	int64_t v;

	*sig = 0;
	*secs = GF_PREEMPT_DEFAULT_SECS;
	if (n == 0 || n >= sizeof buf)
		return gf_err_set(e, "invalid %s '%s': expected SIG[@SECS], e.g. TERM@60", flag, s);
	memcpy(buf, name, n);
	buf[n] = 0;
	if (buf[0] >= '0' && buf[0] <= '9') {
		if (gf_parse_int_range(buf, 1, 64, "signal", &v, NULL) || !gf_signal_name((int)v))
			return gf_err_set(e, "invalid %s '%s': signal %s is not one a job can be sent before "
					     "preemption (HUP INT QUIT KILL USR1 USR2 ALRM TERM XCPU PWR)", flag, s, buf);
		*sig = (int)v;
	} else {
		const char *b = strncasecmp(buf, "SIG", 3) == 0 ? buf + 3 : buf;

		for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
			if (!strcasecmp(b, signal_names[i].name))
				*sig = signal_names[i].sig;
		if (!*sig)
			return gf_err_set(e, "invalid %s '%s': unknown signal '%s' (HUP INT QUIT KILL USR1 USR2 "
					     "ALRM TERM XCPU PWR, or its number)", flag, s, buf);
	}
	if (at && gf_parse_int_range(at + 1, 0, GF_PREEMPT_MAX_SECS, "seconds", &v, NULL))
		return gf_err_set(e, "invalid %s '%s': the seconds after '@' must be 0..%d", flag, s,
				  GF_PREEMPT_MAX_SECS);
	if (at)
		*secs = (int)v;
	return 0;
}
