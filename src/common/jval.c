/* jval.c — the client's JSON values (see jval.h): values and their
 * reference counts, objects in insertion order with a hash index once they
 * grow, the writer (json_dumps, on jsonw.c's scalars) and json_pack. The
 * reader is jvalread.c. */
#define GF_JVAL 1	/* jval's names, whatever the file is built with */

#include "jval.h"
#include "jvalint.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "jsonw.h"
#include "utf8.h"

/* Objects of more members than this find keys through a hash index. */
#define INDEX_FROM 8

static json_t the_true = { .type = JSON_TRUE, .refcount = -1 };
static json_t the_false = { .type = JSON_FALSE, .refcount = -1 };
static json_t the_null = { .type = JSON_NULL, .refcount = -1 };

void *gj_alloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		abort();
	return p;
}

static json_t *new_value(json_type type)
{
	json_t *v = gj_alloc(sizeof *v);

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
json_t *gj_string_of(const char *s, size_t n)
{
	json_t *v = gj_alloc(sizeof *v + n + 1);

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
	return s && gf_utf8_valid(s, len) ? gj_string_of(s, len) : NULL;
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

uint64_t gj_hash_key(const char *k, size_t n)
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
	o->u.obj.index = gj_alloc(cap * sizeof *o->u.obj.index);
	memset(o->u.obj.index, 0, cap * sizeof *o->u.obj.index);
	o->u.obj.icap = cap;
	for (size_t i = 0; i < o->u.obj.n; i++)
		index_put(o, i);
}

/* The member of key k (klen bytes), or -1. */
long gj_find(const json_t *o, const char *k, size_t klen, uint64_t h)
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
	i = gj_find(o, key, n, gj_hash_key(key, n));
	return i < 0 ? NULL : o->u.obj.m[i].v;
}

/* Set key k (klen bytes, checked) to v, whose reference it takes; a new
 * member keeps `owned` (malloc'd k, else NULL: a copy is made), which is
 * freed when not kept. */
void gj_set_member(json_t *o, const char *k, size_t klen, json_t *v, char *owned)
{
	uint64_t h = gj_hash_key(k, klen);
	long i = gj_find(o, k, klen, h);
	struct gj_member *m;

	if (i >= 0) {
		gj_decref(o->u.obj.m[i].v);
		o->u.obj.m[i].v = v;
		free(owned);
		return;
	}
	o->u.obj.m = gf_grow(o->u.obj.m, &o->u.obj.cap, o->u.obj.n + 1, sizeof *o->u.obj.m, 4);
	m = &o->u.obj.m[o->u.obj.n++];
	if (!(m->key = owned)) {
		m->key = gj_alloc(klen + 1);
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
	gj_set_member(o, key, n, v, NULL);
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
	if ((i = gj_find(o, key, n, gj_hash_key(key, n))) < 0)
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
		gj_set_member(o, other->u.obj.m[i].key, other->u.obj.m[i].klen, gj_incref(other->u.obj.m[i].v), NULL);
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
	a->u.arr.v = gf_grow(a->u.arr.v, &a->u.arr.cap, a->u.arr.n + 1, sizeof *a->u.arr.v, 8);
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
			long k = gj_find(b, m->key, m->klen, m->hash);

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
			gj_set_member(c, v->u.obj.m[i].key, v->u.obj.m[i].klen, gj_deep_copy(v->u.obj.m[i].v), NULL);
		return c;
	case JSON_ARRAY:
		c = gj_array();
		for (i = 0; i < v->u.arr.n; i++)
			gj_array_append_new(c, gj_deep_copy(v->u.arr.v[i]));
		return c;
	case JSON_STRING:
		return gj_string_of(v->u.str.s, v->u.str.len);
	case JSON_INTEGER:
		return gj_integer(v->u.i);
	case JSON_REAL:
		return gj_real(v->u.r);
	default:
		return (json_t *)v;	/* the constants */
	}
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

/* An object's or array's opening bracket, and the indent before its first
 * item; with no items, the closing one too (false: nothing more to write). */
static bool open_items(struct jsonw *w, const char *brackets, size_t n, size_t flags, int depth)
{
	jw_raw(w, brackets, 1);
	if (!n) {
		jw_raw(w, brackets + 1, 1);
		return false;
	}
	put_indent(w, flags, depth + 1, 0);
	return true;
}

/* After an item: a comma and the next one's indent, or, after the last,
 * the indent and the closing bracket. */
static void after_item(struct jsonw *w, const char *brackets, bool last, size_t flags, int depth)
{
	if (!last) {
		jw_raw(w, ",", 1);
		put_indent(w, flags, depth + 1, 1);
	} else {
		put_indent(w, flags, depth, 0);
		jw_raw(w, brackets + 1, 1);
	}
}

static void dump(struct jsonw *w, const json_t *v, size_t flags, int depth)
{
	size_t i, n;

	switch (v->type) {
	case JSON_OBJECT:
		if (!open_items(w, "{}", n = v->u.obj.n, flags, depth))
			return;
		for (i = 0; i < n; i++) {
			jw_str(w, v->u.obj.m[i].key, v->u.obj.m[i].klen);
			if (flags & JSON_COMPACT)
				jw_raw(w, ":", 1);
			else
				jw_raw(w, ": ", 2);
			dump(w, v->u.obj.m[i].v, flags, depth + 1);
			after_item(w, "{}", i + 1 == n, flags, depth);
		}
		return;
	case JSON_ARRAY:
		if (!open_items(w, "[]", n = v->u.arr.n, flags, depth))
			return;
		for (i = 0; i < n; i++) {
			dump(w, v->u.arr.v[i], flags, depth + 1);
			after_item(w, "[]", i + 1 == n, flags, depth);
		}
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
