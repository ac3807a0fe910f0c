/* jval.c — the client's JSON values (see jval.h): values and their
 * reference counts, objects in insertion order with a hash index once they
 * grow, the reader (json_loadb), the writer (json_dumps, on jsonw.c's
 * scalars) and json_pack. */
#define GF_JVAL 1	/* jval's names, whatever the file is built with */

#include "jval.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "utf8.h"

struct gj_member {
	char *key;
	size_t klen;
	uint64_t hash;
	json_t *v;
};

/* Objects of more members than this find keys through a hash index. */
#define INDEX_FROM 8
/* Nesting deeper than jansson reads is refused alike. */
#define MAX_DEPTH 2048

static json_t the_true = { .type = JSON_TRUE, .refcount = -1 };
static json_t the_false = { .type = JSON_FALSE, .refcount = -1 };
static json_t the_null = { .type = JSON_NULL, .refcount = -1 };

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		abort();
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1)))
		abort();
	return p;
}

static json_t *new_value(json_type type)
{
	json_t *v = xmalloc(sizeof *v);

	memset(v, 0, sizeof *v);
	v->type = type;
	v->refcount = 1;
	return v;
}

/* ---- constructors and reference counts --------------------------------- */

json_t *gj_object(void)
{
	return new_value(JSON_OBJECT);
}

json_t *gj_array(void)
{
	return new_value(JSON_ARRAY);
}

/* A string value of n bytes (not checked), in one allocation. */
static json_t *string_of(const char *s, size_t n)
{
	json_t *v = xmalloc(sizeof *v + n + 1);

	memset(v, 0, sizeof *v);
	v->type = JSON_STRING;
	v->refcount = 1;
	v->u.str.s = (char *)(v + 1);
	v->u.str.len = n;
	memcpy(v->u.str.s, s, n);
	v->u.str.s[n] = '\0';
	return v;
}

json_t *gj_stringn(const char *s, size_t len)
{
	return s && gf_utf8_valid(s, len) ? string_of(s, len) : NULL;
}

json_t *gj_string(const char *s)
{
	return s ? gj_stringn(s, strlen(s)) : NULL;
}

json_t *gj_integer(json_int_t i)
{
	json_t *v = new_value(JSON_INTEGER);

	v->u.i = i;
	return v;
}

json_t *gj_real(double r)
{
	json_t *v;

	if (!isfinite(r))
		return NULL;
	v = new_value(JSON_REAL);
	v->u.r = r;
	return v;
}

json_t *gj_true(void)
{
	return &the_true;
}

json_t *gj_false(void)
{
	return &the_false;
}

json_t *gj_null(void)
{
	return &the_null;
}

json_t *gj_incref(json_t *v)
{
	if (v && v->refcount > 0)
		v->refcount++;
	return v;
}

static void delete(json_t *v)
{
	size_t i;

	switch (v->type) {
	case JSON_OBJECT:
		for (i = 0; i < v->u.obj.n; i++) {
			free(v->u.obj.m[i].key);
			gj_decref(v->u.obj.m[i].v);
		}
		free(v->u.obj.m);
		free(v->u.obj.index);
		break;
	case JSON_ARRAY:
		for (i = 0; i < v->u.arr.n; i++)
			gj_decref(v->u.arr.v[i]);
		free(v->u.arr.v);
		break;
	default:
		break;
	}
	free(v);
}

void gj_decref(json_t *v)
{
	if (v && v->refcount > 0 && --v->refcount == 0)
		delete(v);
}

/* ---- objects ----------------------------------------------------------- */

static uint64_t hash_key(const char *k, size_t n)
{
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a */

	while (n--)
		h = (h ^ (unsigned char)*k++) * 1099511628211ULL;
	return h;
}

static void index_put(json_t *o, size_t at)
{
	size_t mask = o->u.obj.icap - 1, slot = (size_t)o->u.obj.m[at].hash & mask;

	while (o->u.obj.index[slot])
		slot = (slot + 1) & mask;
	o->u.obj.index[slot] = (unsigned)at + 1;
}

/* (Re)build the index for the members there, room for twice as many. */
static void index_build(json_t *o)
{
	size_t cap = 16;

	while (cap < o->u.obj.n * 4)
		cap *= 2;
	free(o->u.obj.index);
	o->u.obj.index = xmalloc(cap * sizeof *o->u.obj.index);
	memset(o->u.obj.index, 0, cap * sizeof *o->u.obj.index);
	o->u.obj.icap = cap;
	for (size_t i = 0; i < o->u.obj.n; i++)
		index_put(o, i);
}

/* The member of key k (klen bytes), or -1. */
static long find(const json_t *o, const char *k, size_t klen, uint64_t h)
{
	const struct gj_member *m = o->u.obj.m;

	if (!o->u.obj.index) {
		for (size_t i = 0; i < o->u.obj.n; i++)
			if (m[i].klen == klen && !memcmp(m[i].key, k, klen))
				return (long)i;
		return -1;
	}
	for (size_t mask = o->u.obj.icap - 1, slot = (size_t)h & mask; o->u.obj.index[slot];
	     slot = (slot + 1) & mask) {
		size_t i = o->u.obj.index[slot] - 1;

		if (m[i].hash == h && m[i].klen == klen && !memcmp(m[i].key, k, klen))
			return (long)i;
	}
	return -1;
}

json_t *gj_object_get(const json_t *o, const char *key)
{
	size_t n;
	long i;

	if (!json_is_object(o) || !key)
		return NULL;
	n = strlen(key);
	i = find(o, key, n, hash_key(key, n));
	return i < 0 ? NULL : o->u.obj.m[i].v;
}

/* Set key k (klen bytes, checked) to v, whose reference it takes; a new
 * member keeps `owned` (malloc'd k, else NULL: a copy is made), which is
 * freed when not kept. */
static void set_member(json_t *o, const char *k, size_t klen, json_t *v, char *owned)
{
	uint64_t h = hash_key(k, klen);
	long i = find(o, k, klen, h);
	struct gj_member *m;

	if (i >= 0) {
		gj_decref(o->u.obj.m[i].v);
		o->u.obj.m[i].v = v;
		free(owned);
		return;
	}
	if (o->u.obj.n == o->u.obj.cap) {
		o->u.obj.cap = o->u.obj.cap ? o->u.obj.cap * 2 : 4;
		o->u.obj.m = xrealloc(o->u.obj.m, o->u.obj.cap * sizeof *o->u.obj.m);
	}
	m = &o->u.obj.m[o->u.obj.n++];
	if (!(m->key = owned)) {
		m->key = xmalloc(klen + 1);
		memcpy(m->key, k, klen);
		m->key[klen] = '\0';
	}
	m->klen = klen;
	m->hash = h;
	m->v = v;
	if (o->u.obj.index && o->u.obj.n * 2 <= o->u.obj.icap)
		index_put(o, o->u.obj.n - 1);
	else if (o->u.obj.n > INDEX_FROM)
		index_build(o);
}

int gj_object_set_new(json_t *o, const char *key, json_t *v)
{
	size_t n;

	if (!v)
		return -1;
	n = key ? strlen(key) : 0;
	if (!json_is_object(o) || !key || o == v || !gf_utf8_valid(key, n)) {
		gj_decref(v);
		return -1;
	}
	set_member(o, key, n, v, NULL);
	return 0;
}

int gj_object_set(json_t *o, const char *key, json_t *v)
{
	return gj_object_set_new(o, key, gj_incref(v));
}

int gj_object_del(json_t *o, const char *key)
{
	size_t n;
	long i;

	if (!json_is_object(o) || !key)
		return -1;
	n = strlen(key);
	if ((i = find(o, key, n, hash_key(key, n))) < 0)
		return -1;
	free(o->u.obj.m[i].key);
	gj_decref(o->u.obj.m[i].v);
	memmove(&o->u.obj.m[i], &o->u.obj.m[i + 1], (o->u.obj.n - (size_t)i - 1) * sizeof *o->u.obj.m);
	o->u.obj.n--;
	if (o->u.obj.index)
		index_build(o);
	return 0;
}

size_t gj_object_size(const json_t *o)
{
	return json_is_object(o) ? o->u.obj.n : 0;
}

int gj_object_update(json_t *o, json_t *other)
{
	if (!json_is_object(o) || !json_is_object(other))
		return -1;
	for (size_t i = 0; i < other->u.obj.n; i++)
		set_member(o, other->u.obj.m[i].key, other->u.obj.m[i].klen, gj_incref(other->u.obj.m[i].v), NULL);
	return 0;
}

const char *gj_object_key_at(const json_t *o, size_t i)
{
	return json_is_object(o) && i < o->u.obj.n ? o->u.obj.m[i].key : NULL;
}

json_t *gj_object_value_at(const json_t *o, size_t i)
{
	return json_is_object(o) && i < o->u.obj.n ? o->u.obj.m[i].v : NULL;
}

/* ---- arrays ------------------------------------------------------------ */

size_t gj_array_size(const json_t *a)
{
	return json_is_array(a) ? a->u.arr.n : 0;
}

json_t *gj_array_get(const json_t *a, size_t i)
{
	return json_is_array(a) && i < a->u.arr.n ? a->u.arr.v[i] : NULL;
}

int gj_array_append_new(json_t *a, json_t *v)
{
	if (!v)
		return -1;
	if (!json_is_array(a) || a == v) {
		gj_decref(v);
		return -1;
	}
	if (a->u.arr.n == a->u.arr.cap) {
		a->u.arr.cap = a->u.arr.cap ? a->u.arr.cap * 2 : 8;
		a->u.arr.v = xrealloc(a->u.arr.v, a->u.arr.cap * sizeof *a->u.arr.v);
	}
	a->u.arr.v[a->u.arr.n++] = v;
	return 0;
}

int gj_array_append(json_t *a, json_t *v)
{
	return gj_array_append_new(a, gj_incref(v));
}

int gj_array_remove(json_t *a, size_t i)
{
	if (!json_is_array(a) || i >= a->u.arr.n)
		return -1;
	gj_decref(a->u.arr.v[i]);
	memmove(&a->u.arr.v[i], &a->u.arr.v[i + 1], (a->u.arr.n - i - 1) * sizeof *a->u.arr.v);
	a->u.arr.n--;
	return 0;
}

int gj_array_clear(json_t *a)
{
	if (!json_is_array(a))
		return -1;
	for (size_t i = 0; i < a->u.arr.n; i++)
		gj_decref(a->u.arr.v[i]);
	a->u.arr.n = 0;
	return 0;
}

/* ---- scalars ----------------------------------------------------------- */

const char *gj_string_value(const json_t *v)
{
	return json_is_string(v) ? v->u.str.s : NULL;
}

size_t gj_string_length(const json_t *v)
{
	return json_is_string(v) ? v->u.str.len : 0;
}

json_int_t gj_integer_value(const json_t *v)
{
	return json_is_integer(v) ? v->u.i : 0;
}

double gj_real_value(const json_t *v)
{
	return json_is_real(v) ? v->u.r : 0.0;
}

double gj_number_value(const json_t *v)
{
	return json_is_integer(v) ? (double)v->u.i : gj_real_value(v);
}

/* ---- equality and copies ----------------------------------------------- */

int gj_equal(const json_t *a, const json_t *b)
{
	size_t i;

	if (!a || !b || a->type != b->type)
		return 0;
	if (a == b)
		return 1;
	switch (a->type) {
	case JSON_OBJECT:
		if (a->u.obj.n != b->u.obj.n)
			return 0;
		for (i = 0; i < a->u.obj.n; i++) {
			const struct gj_member *m = &a->u.obj.m[i];
			long k = find(b, m->key, m->klen, m->hash);

			if (k < 0 || !gj_equal(m->v, b->u.obj.m[k].v))
				return 0;
		}
		return 1;
	case JSON_ARRAY:
		if (a->u.arr.n != b->u.arr.n)
			return 0;
		for (i = 0; i < a->u.arr.n; i++)
			if (!gj_equal(a->u.arr.v[i], b->u.arr.v[i]))
				return 0;
		return 1;
	case JSON_STRING:
		return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
	case JSON_INTEGER:
		return a->u.i == b->u.i;
	case JSON_REAL:
		return a->u.r == b->u.r;
	default:
		return 1;	/* true, false, null: the type says it all */
	}
}

json_t *gj_deep_copy(const json_t *v)
{
	json_t *c;
	size_t i;

	if (!v)
		return NULL;
	switch (v->type) {
	case JSON_OBJECT:
		c = gj_object();
		for (i = 0; i < v->u.obj.n; i++)
			set_member(c, v->u.obj.m[i].key, v->u.obj.m[i].klen, gj_deep_copy(v->u.obj.m[i].v), NULL);
		return c;
	case JSON_ARRAY:
		c = gj_array();
		for (i = 0; i < v->u.arr.n; i++)
			gj_array_append_new(c, gj_deep_copy(v->u.arr.v[i]));
		return c;
	case JSON_STRING:
		return string_of(v->u.str.s, v->u.str.len);
	case JSON_INTEGER:
		return gj_integer(v->u.i);
	case JSON_REAL:
		return gj_real(v->u.r);
	default:
		return (json_t *)v;	/* the constants */
	}
}

/* ---- reading ----------------------------------------------------------- */

/* The reader works as jansson's does, so that it accepts the same texts
 * and fails with the same words at the same place: a lexer that reads one
 * token ahead (its errors come first), and a parser over its tokens. */
enum tok { T_EOF, T_ERROR, T_INVALID, T_PUNCT, T_STRING, T_INTEGER, T_REAL, T_TRUE, T_FALSE, T_NULL };

struct rd {
	const char *p;
	size_t n, i;		/* the text; the lexer's place (past the token) */
	size_t flags;
	int depth;
	json_error_t *err;
	int failed;
	/* the token read last */
	enum tok tok;
	char punct;		/* T_PUNCT: one of {}[]:, */
	size_t from;		/* where it began */
	json_int_t ival;
	double rval;
	struct jsonw buf;	/* T_STRING: its bytes, decoded */
};

/* Fail with jansson's "<what> near '<token>'", the token being what the
 * lexer read from `from` to its place: "near end of file" at the end, no
 * "near" for a token over 20 bytes or with NO_TOKEN. Only the first
 * failure is kept. */
#define NO_TOKEN ((size_t)-1)
static void fail(struct rd *r, size_t from, const char *what)
{
	json_error_t *e = r->err;
	size_t to = r->i < r->n ? r->i : r->n, len;
	int line = 1, col = 0;

	if (r->failed)
		return;
	r->failed = 1;
	r->tok = T_ERROR;
	if (!e)
		return;
	if (from == NO_TOKEN) {
		snprintf(e->text, sizeof e->text, "%s", what);
	} else if (from >= r->n || !r->p[from]) {	/* a NUL reads as the end, as in jansson */
		snprintf(e->text, sizeof e->text, "%s near end of file", what);
	} else if (to - (from < to ? from : to) > 20) {
		snprintf(e->text, sizeof e->text, "%s", what);	/* jansson quotes no longer token */
	} else {
		/* the token as far as it was read (UTF-8: the message is text) */
		if (from > to)
			from = to;
		len = gf_utf8_prefix(r->p + from, to - from);
		snprintf(e->text, sizeof e->text, "%s near '%.*s'", what, (int)len, r->p + from);
	}
	for (size_t k = 0; k < to; k++) {
		if (r->p[k] == '\n') {
			line++;
			col = 0;
		} else if (((unsigned char)r->p[k] & 0xC0) != 0x80) {
			col++;
		}
	}
	e->line = line;
	e->column = col;
	e->position = (int)to;
}

/* Fail naming the token read last. */
static void fail_token(struct rd *r, const char *what)
{
	if (r->tok != T_ERROR)
		fail(r, r->tok == T_EOF ? r->n : r->from, what);
}

static int hexdigit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The length of the UTF-8 sequence at p[i], 0 when it is none. */
static size_t utf8_len_at(const struct rd *r, size_t i)
{
	uint32_t cp;

	return gf_utf8_seq((const unsigned char *)r->p + i, r->n - i, &cp);
}

/* In an escape, p[i] is not what may come there: the escape is bad, read
 * up to and with that byte — unless it does not start UTF-8, which is the
 * error then (jansson decodes each character as it reads it, and reads the
 * first byte of one here; the message keeps only whole characters). */
static void bad_escape(struct rd *r, size_t i)
{
	char msg[40];

	if (i >= r->n) {
		r->i = r->n;
		fail(r, r->from, "invalid escape");
	} else if ((unsigned char)r->p[i] >= 0x80 && !utf8_len_at(r, i)) {
		r->i = i;
		snprintf(msg, sizeof msg, "unable to decode byte 0x%x", (unsigned char)r->p[i]);
		fail(r, r->from, msg);
	} else {
		r->i = i + 1;
		fail(r, r->from, "invalid escape");
	}
}

/* The four hex digits of a \u escape, from p[i]; r->i past them. */
static int read_hex4(struct rd *r, size_t i, uint32_t *v)
{
	*v = 0;
	for (int k = 0; k < 4; k++, i++) {
		int d = i < r->n ? hexdigit(r->p[i]) : -1;

		if (d < 0) {
			bad_escape(r, i);
			return -1;
		}
		*v = *v << 4 | (uint32_t)d;
	}
	r->i = i;
	return 0;
}

/* A string token, its quote at r->i. Errors in its characters and escapes
 * come at once, a bad surrogate only once the string is whole (jansson
 * decodes escapes after it has read the string); \u0000 is the parser's
 * to refuse. */
static void lex_string(struct rd *r)
{
	size_t i = r->i + 1;
	char late[64] = "";

	r->buf.len = 0;
	for (;;) {
		size_t k = i, ok;
		uint32_t v, lo;
		char u[4];

		while (k < r->n && r->p[k] != '"' && r->p[k] != '\\' && (unsigned char)r->p[k] >= 0x20)
			k++;
		/* a run of plain bytes, whole: a quote, backslash or control
		 * character ends it, none of which is inside a UTF-8 sequence */
		if ((ok = gf_utf8_prefix(r->p + i, k - i)) < k - i) {
			char msg[40];

			r->i = i + ok;
			snprintf(msg, sizeof msg, "unable to decode byte 0x%x", (unsigned char)r->p[i + ok]);
			fail(r, r->from, msg);
			return;
		}
		jw_raw(&r->buf, r->p + i, k - i);
		if (k >= r->n) {
			r->i = r->n;
			fail(r, r->from, "premature end of input");
			return;
		}
		if (r->p[k] == '"') {
			r->i = k + 1;
			break;
		}
		if ((unsigned char)r->p[k] < 0x20) {
			char msg[40];

			r->i = k;
			if (r->p[k] == '\n')
				snprintf(msg, sizeof msg, "unexpected newline");
			else
				snprintf(msg, sizeof msg, "control character 0x%x", (unsigned char)r->p[k]);
			fail(r, r->from, msg);
			return;
		}
		/* an escape */
		if (k + 1 >= r->n || !r->p[k + 1] || !strchr("\"\\/bfnrtu", r->p[k + 1])) {
			bad_escape(r, k + 1);
			return;
		}
		if (r->p[k + 1] != 'u') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";

			jw_raw(&r->buf, &to[strchr(from, r->p[k + 1]) - from], 1);
			i = k + 2;
			continue;
		}
		if (read_hex4(r, k + 2, &v))
			return;
		i = r->i;
		if (v >= 0xD800 && v <= 0xDBFF) {
			if (i + 1 < r->n && r->p[i] == '\\' && r->p[i + 1] == 'u') {
				if (read_hex4(r, i + 2, &lo))
					return;
				i = r->i;
				if (lo >= 0xDC00 && lo <= 0xDFFF)
					v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
				else if (!late[0])
					snprintf(late, sizeof late, "invalid Unicode '\\u%04X\\u%04X'", (unsigned)v,
						 (unsigned)lo);
			} else if (!late[0]) {
				snprintf(late, sizeof late, "invalid Unicode '\\u%04X'", (unsigned)v);
			}
		} else if (v >= 0xDC00 && v <= 0xDFFF && !late[0]) {
			snprintf(late, sizeof late, "invalid Unicode '\\u%04X'", (unsigned)v);
		}
		if (!late[0])
			jw_raw(&r->buf, u, gf_utf8_put(u, v));
	}
	if (late[0])
		fail(r, r->from, late);
	else
		r->tok = T_STRING;
}

/* The character that ended a number or a word, at r->i, is read as UTF-8
 * as jansson reads it: bytes that are none fail the token. */
static int ended_badly(struct rd *r)
{
	char msg[40];

	if (r->i >= r->n || (unsigned char)r->p[r->i] < 0x80 || utf8_len_at(r, r->i))
		return 0;
	snprintf(msg, sizeof msg, "unable to decode byte 0x%x", (unsigned char)r->p[r->i]);
	fail(r, r->from, msg);
	return 1;
}

static int digit_at(const struct rd *r, size_t i)
{
	return i < r->n && r->p[i] >= '0' && r->p[i] <= '9';
}

/* A number token by JSON's grammar, an integer when it has neither a
 * fraction nor an exponent; T_INVALID ends before the character that did
 * not fit. */
static void lex_number(struct rd *r)
{
	size_t from = r->i, i = r->i;
	int real = 0;
	char tmp[64], *text = tmp, *end;

	r->tok = T_INVALID;
	if (i < r->n && r->p[i] == '-')
		i++;
	if (!digit_at(r, i))
		goto out;
	if (r->p[i] == '0') {
		if (digit_at(r, ++i))
			goto out;
	} else {
		while (digit_at(r, i))
			i++;
	}
	if (i < r->n && r->p[i] == '.') {
		real = 1;
		if (!digit_at(r, ++i))
			goto out;
		while (digit_at(r, i))
			i++;
	}
	if (i < r->n && (r->p[i] == 'e' || r->p[i] == 'E')) {
		real = 1;
		i++;
		if (i < r->n && (r->p[i] == '+' || r->p[i] == '-'))
			i++;
		if (!digit_at(r, i))
			goto out;
		while (digit_at(r, i))
			i++;
	}
	r->i = i;
	if (ended_badly(r))
		return;
	if (i - from >= sizeof tmp)
		text = xmalloc(i - from + 1);
	memcpy(text, r->p + from, i - from);
	text[i - from] = '\0';
	errno = 0;
	if (!real) {
		r->ival = strtoll(text, &end, 10);
		if (errno == ERANGE)
			fail(r, from, r->ival < 0 ? "too big negative integer" : "too big integer");
		else
			r->tok = T_INTEGER;
	} else {
		r->rval = strtod(text, &end);
		if (errno == ERANGE && (r->rval == HUGE_VAL || r->rval == -HUGE_VAL))
			fail(r, from, "real number overflow");
		else
			r->tok = T_REAL;
	}
	if (text != tmp)
		free(text);
	return;
out:
	r->i = i;
	ended_badly(r);
}

/* The next token into r->tok. */
static void lex(struct rd *r)
{
	char c;

	if (r->failed)
		return;
	while (r->i < r->n && (r->p[r->i] == ' ' || r->p[r->i] == '\t' || r->p[r->i] == '\n' || r->p[r->i] == '\r'))
		r->i++;
	r->from = r->i;
	if (r->i >= r->n) {
		r->tok = T_EOF;
		return;
	}
	c = r->p[r->i];
	if (strchr("{}[]:,", c) && c) {
		r->tok = T_PUNCT;
		r->punct = c;
		r->i++;
	} else if (c == '"') {
		lex_string(r);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		lex_number(r);
	} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
		size_t n;

		while (r->i < r->n && ((r->p[r->i] >= 'a' && r->p[r->i] <= 'z') || (r->p[r->i] >= 'A' && r->p[r->i] <= 'Z')))
			r->i++;
		n = r->i - r->from;
		if (ended_badly(r))
			return;
		r->tok = n == 4 && !memcmp(r->p + r->from, "true", 4)    ? T_TRUE :
			 n == 5 && !memcmp(r->p + r->from, "false", 5)   ? T_FALSE :
			 n == 4 && !memcmp(r->p + r->from, "null", 4)    ? T_NULL :
									   T_INVALID;
	} else if (utf8_len_at(r, r->i)) {
		r->i += utf8_len_at(r, r->i);
		r->tok = T_INVALID;
	} else {
		char msg[40];

		snprintf(msg, sizeof msg, "unable to decode byte 0x%x", (unsigned char)c);
		fail(r, NO_TOKEN, msg);
	}
}

static int is_punct(const struct rd *r, char c)
{
	return r->tok == T_PUNCT && r->punct == c;
}

static json_t *parse_value(struct rd *r);

static json_t *parse_object(struct rd *r)
{
	json_t *o = gj_object(), *v;

	lex(r);
	if (is_punct(r, '}'))
		return o;
	for (;;) {
		char *key;
		size_t klen;

		if (r->tok != T_STRING) {
			fail_token(r, "string or '}' expected");
			goto bad;
		}
		klen = r->buf.len;
		if (memchr(r->buf.p, '\0', klen)) {
			fail_token(r, "NUL byte in object key not supported");
			goto bad;
		}
		if ((r->flags & JSON_REJECT_DUPLICATES) && find(o, r->buf.p, klen, hash_key(r->buf.p, klen)) >= 0) {
			fail_token(r, "duplicate object key");
			goto bad;
		}
		key = xmalloc(klen + 1);
		memcpy(key, r->buf.p, klen + 1);
		lex(r);
		if (!is_punct(r, ':')) {
			free(key);
			fail_token(r, "':' expected");
			goto bad;
		}
		lex(r);
		if (!(v = parse_value(r))) {
			free(key);
			goto bad;
		}
		set_member(o, key, klen, v, key);
		lex(r);
		if (!is_punct(r, ','))
			break;
		lex(r);
	}
	if (!is_punct(r, '}')) {
		fail_token(r, "'}' expected");
		goto bad;
	}
	return o;
bad:
	gj_decref(o);
	return NULL;
}

static json_t *parse_array(struct rd *r)
{
	json_t *a = gj_array(), *v;

	lex(r);
	if (is_punct(r, ']'))
		return a;
	while (r->tok != T_EOF && r->tok != T_ERROR) {
		if (!(v = parse_value(r)))
			goto bad;
		gj_array_append_new(a, v);
		lex(r);
		if (!is_punct(r, ','))
			break;
		lex(r);
	}
	if (!is_punct(r, ']')) {
		fail_token(r, "']' expected");
		goto bad;
	}
	return a;
bad:
	gj_decref(a);
	return NULL;
}

/* The value whose first token was read last. */
static json_t *parse_value(struct rd *r)
{
	json_t *v = NULL;

	if (++r->depth > MAX_DEPTH) {
		fail_token(r, "maximum parsing depth reached");
		return NULL;
	}
	switch (r->tok) {
	case T_STRING:
		if (memchr(r->buf.p, '\0', r->buf.len))
			fail_token(r, "\\u0000 is not allowed without JSON_ALLOW_NUL");
		else
			v = string_of(r->buf.p, r->buf.len);
		break;
	case T_INTEGER: v = gj_integer(r->ival); break;
	case T_REAL: v = gj_real(r->rval); break;
	case T_TRUE: v = gj_true(); break;
	case T_FALSE: v = gj_false(); break;
	case T_NULL: v = gj_null(); break;
	case T_PUNCT:
		if (r->punct == '{')
			v = parse_object(r);
		else if (r->punct == '[')
			v = parse_array(r);
		else
			fail_token(r, "unexpected token");
		break;
	case T_INVALID: fail_token(r, "invalid token"); break;
	default: fail_token(r, "unexpected token"); break;
	}
	r->depth--;
	return v;
}

json_t *gj_loadb(const char *buf, size_t len, size_t flags, json_error_t *err)
{
	struct rd r = { .p = buf, .n = buf ? len : 0, .flags = flags, .err = err };
	json_t *v = NULL;

	if (err) {
		memset(err, 0, sizeof *err);
		snprintf(err->source, sizeof err->source, "<buffer>");
	}
	lex(&r);
	if (!(flags & JSON_DECODE_ANY) && !is_punct(&r, '[') && !is_punct(&r, '{'))
		fail_token(&r, "'[' or '{' expected");
	else if ((v = parse_value(&r))) {
		lex(&r);
		if (r.tok != T_EOF) {
			fail_token(&r, "end of file expected");
			gj_decref(v);
			v = NULL;
		}
	}
	jw_free(&r.buf);
	return v;
}

json_t *gj_loads(const char *s, size_t flags, json_error_t *err)
{
	return gj_loadb(s, s ? strlen(s) : 0, flags, err);
}

/* ---- writing ----------------------------------------------------------- */

/* jansson's layout: with JSON_INDENT(n) a newline and depth × n spaces;
 * else a space where one was asked for, unless JSON_COMPACT. */
static void put_indent(struct jsonw *w, size_t flags, int depth, int space)
{
	size_t n = JSON_INDENT(flags) * (size_t)depth;

	if (JSON_INDENT(flags)) {
		jw_reserve(w, n + 1);
		w->p[w->len++] = '\n';
		memset(w->p + w->len, ' ', n);
		w->len += n;
		w->p[w->len] = '\0';
	} else if (space && !(flags & JSON_COMPACT)) {
		jw_raw(w, " ", 1);
	}
}

static void dump(struct jsonw *w, const json_t *v, size_t flags, int depth)
{
	size_t i, n;

	switch (v->type) {
	case JSON_OBJECT:
		n = v->u.obj.n;
		jw_raw(w, "{", 1);
		if (!n) {
			jw_raw(w, "}", 1);
			return;
		}
		put_indent(w, flags, depth + 1, 0);
		for (i = 0; i < n; i++) {
			jw_str(w, v->u.obj.m[i].key, v->u.obj.m[i].klen);
			if (flags & JSON_COMPACT)
				jw_raw(w, ":", 1);
			else
				jw_raw(w, ": ", 2);
			dump(w, v->u.obj.m[i].v, flags, depth + 1);
			if (i + 1 < n) {
				jw_raw(w, ",", 1);
				put_indent(w, flags, depth + 1, 1);
			} else {
				put_indent(w, flags, depth, 0);
			}
		}
		jw_raw(w, "}", 1);
		return;
	case JSON_ARRAY:
		n = v->u.arr.n;
		jw_raw(w, "[", 1);
		if (!n) {
			jw_raw(w, "]", 1);
			return;
		}
		put_indent(w, flags, depth + 1, 0);
		for (i = 0; i < n; i++) {
			dump(w, v->u.arr.v[i], flags, depth + 1);
			if (i + 1 < n) {
				jw_raw(w, ",", 1);
				put_indent(w, flags, depth + 1, 1);
			} else {
				put_indent(w, flags, depth, 0);
			}
		}
		jw_raw(w, "]", 1);
		return;
	case JSON_STRING:
		jw_str(w, v->u.str.s, v->u.str.len);
		return;
	case JSON_INTEGER:
		jw_int(w, v->u.i);
		return;
	case JSON_REAL:
		jw_real(w, v->u.r);
		return;
	case JSON_TRUE:
		jw_raw(w, "true", 4);
		return;
	case JSON_FALSE:
		jw_raw(w, "false", 5);
		return;
	case JSON_NULL:
		jw_raw(w, "null", 4);
		return;
	}
}

/* The text of v, or NULL (no value, or a scalar without JSON_ENCODE_ANY). */
static int dump_all(struct jsonw *w, const json_t *v, size_t flags)
{
	memset(w, 0, sizeof *w);
	if (!v || (!(flags & JSON_ENCODE_ANY) && !json_is_object(v) && !json_is_array(v)))
		return -1;
	jw_reserve(w, 0);
	dump(w, v, flags, 0);
	return 0;
}

char *gj_dumps(const json_t *v, size_t flags)
{
	struct jsonw w;

	return dump_all(&w, v, flags) ? NULL : w.p;
}

int gj_dump_callback(const json_t *v, json_dump_callback_t cb, void *data, size_t flags)
{
	struct jsonw w;
	int rc;

	if (dump_all(&w, v, flags))
		return -1;
	rc = cb(w.p, w.len, data) ? -1 : 0;
	jw_free(&w);
	return rc;
}

/* ---- json_pack --------------------------------------------------------- */

struct pk {
	const char *f;
	va_list *ap;
};

static char pk_next(struct pk *p)
{
	while (*p->f == ' ' || *p->f == '\t' || *p->f == '\n' || *p->f == ':' || *p->f == ',')
		p->f++;
	return *p->f;
}

/* A '?' after the format letter: NULL is allowed (and becomes null). */
static int pk_optional(struct pk *p)
{
	if (p->f[1] == '?') {
		p->f++;
		return 1;
	}
	return 0;
}

static json_t *pk_value(struct pk *p)
{
	char c = pk_next(p);
	json_t *v, *x;
	const char *s;
	double d;
	int opt;

	switch (c) {
	case '{':
		p->f++;
		v = gj_object();
		while ((c = pk_next(p)) != '}') {
			if (c != 's')
				goto bad;
			p->f++;
			s = va_arg(*p->ap, const char *);
			if (!s || !(x = pk_value(p)) || gj_object_set_new(v, s, x))
				goto bad;
		}
		p->f++;
		return v;
	case '[':
		p->f++;
		v = gj_array();
		while ((c = pk_next(p)) != ']') {
			if (!c || !(x = pk_value(p)))
				goto bad;
			gj_array_append_new(v, x);
		}
		p->f++;
		return v;
	case 's':
		opt = pk_optional(p);
		p->f++;
		s = va_arg(*p->ap, const char *);
		return !s && opt ? gj_null() : gj_string(s);
	case 'n':
		p->f++;
		return gj_null();
	case 'b':
		p->f++;
		return json_boolean(va_arg(*p->ap, int));
	case 'i':
		p->f++;
		return gj_integer(va_arg(*p->ap, int));
	case 'I':
		p->f++;
		return gj_integer(va_arg(*p->ap, json_int_t));
	case 'f':
		p->f++;
		d = va_arg(*p->ap, double);
		return gj_real(d);
	case 'o':
	case 'O':
		opt = pk_optional(p);
		p->f++;
		x = va_arg(*p->ap, json_t *);
		if (!x)
			return opt ? gj_null() : NULL;
		return c == 'O' ? gj_incref(x) : x;
	default:
		return NULL;
	}
bad:
	gj_decref(v);
	return NULL;
}

json_t *gj_pack(const char *fmt, ...)
{
	va_list ap;
	struct pk p = { .f = fmt, .ap = &ap };
	json_t *v;

	va_start(ap, fmt);
	v = pk_value(&p);
	va_end(ap);
	if (v && pk_next(&p)) {	/* more after the value */
		gj_decref(v);
		v = NULL;
	}
	return v;
}
