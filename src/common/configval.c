/* configval.c — one value of gflow.toml or of a GFLOW_* variable (struct
 * src, configint.h) read as a type: strings, integers in a range,
 * booleans, one of a few names, lists of strings; the words of their
 * errors ("expected ..., got ...") and where in the file an error points.
 * config.c, confignotify.c and configcluster.c all read through it. */
#include "configint.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------- small helpers ---------- */

char *cfg_strdup(const char *s, struct gf_err *e)
{
	char *d = strdup(s);

	if (!d)
		gf_err_set(e, "out of memory");
	return d;
}

void cfg_free_strv(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cfg_is_bare(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* s as a TOML key part: bare, or quoted. */
void cfg_name_show(const char *s, char *out, size_t size)
{
	snprintf(out, size, cfg_is_bare(s) ? "%.100s" : "\"%.100s\"", s);
}

/* What a value is, for "got ...". */
static void describe(const struct src *s, char *out, size_t size)
{
	const struct toml_value *v = s->at ? s->at : s->v;

	if (!v) {
		snprintf(out, size, "\"%.80s\"", s->env);
		return;
	}
	switch (toml_type(v)) {
	case TOML_STRING:
		snprintf(out, size, "\"%.80s\"", toml_string(v));
		break;
	case TOML_INTEGER:
		snprintf(out, size, "%lld", (long long)toml_integer(v));
		break;
	case TOML_FLOAT:
		snprintf(out, size, "%g", toml_float(v));
		break;
	case TOML_BOOLEAN:
		snprintf(out, size, "%s", toml_boolean(v) ? "true" : "false");
		break;
	case TOML_DATETIME:
		snprintf(out, size, "%.80s", toml_string(v));
		break;
	case TOML_ARRAY:
		snprintf(out, size, "an array");
		break;
	case TOML_TABLE:
		snprintf(out, size, "a table");
		break;
	}
}

int cfg_expected(const struct src *s, const char *what, struct gf_err *e)
{
	char got[128];

	describe(s, got, sizeof got);
	return gf_err_set(e, "expected %s, got %s", what, got);
}

/* Key i of t, or NULL when it holds a NUL byte (no gflow key does). */
const char *cfg_key_at(const struct toml_value *t, size_t i)
{
	const char *k = toml_table_key(t, i);

	return strlen(k) == toml_table_key_len(t, i) ? k : NULL;
}

/* A string value without NUL bytes, or NULL. */
const char *cfg_plain_string(const struct toml_value *v)
{
	if (toml_type(v) != TOML_STRING || strlen(toml_string(v)) != toml_string_len(v))
		return NULL;
	return toml_string(v);
}

/* Decimal integer text: optional sign, digits, nothing else. */
static int env_int(const char *s, int64_t *out)
{
	int neg = 0;
	uint64_t v = 0, limit;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return -1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *s; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return -1;
		d = (unsigned)(*s - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (neg)
		*out = v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}
/* ---------- setters ---------- */

int cfg_get_string(struct src *s, char **out, struct gf_err *e)
{
	const char *v = s->env;
	char *copy;

	if (s->v && !(v = cfg_plain_string(s->v)))
		return cfg_expected(s, "a string", e);
	if (!*v)
		return gf_err_set(e, "must not be empty");
	if (!(copy = cfg_strdup(v, e)))
		return -1;
	free(*out);
	*out = copy;
	return 0;
}

/* An integer min..max; what names the range in the message (NULL: say it). */
int cfg_get_int(struct src *s, int64_t min, int64_t max, const char *what, int64_t *out,
    struct gf_err *e)
{
	char buf[96];
	int64_t v = 0;
	int ok;

	if (!what) {
		if (max == INT64_MAX || max == INT_MAX)
			snprintf(buf, sizeof buf, "an integer of at least %lld", (long long)min);
		else
			snprintf(buf, sizeof buf, "an integer between %lld and %lld", (long long)min,
			    (long long)max);
		what = buf;
	}
	if (s->v) {
		ok = toml_type(s->v) == TOML_INTEGER;
		v = toml_integer(s->v);
	} else {
		ok = s->env && env_int(s->env, &v) == 0;
	}
	if (!ok || v < min || v > max)
		return cfg_expected(s, what, e);
	*out = v;
	return 0;
}

int cfg_get_bool(struct src *s, int *out, struct gf_err *e)
{
	static const char *const yes[] = { "true", "1", "yes", "on" }, *const no[] = { "false", "0", "no", "off" };
	size_t i;

	if (s->v) {
		if (toml_type(s->v) != TOML_BOOLEAN)
			return cfg_expected(s, "true or false", e);
		*out = toml_boolean(s->v);
		return 0;
	}
	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s->env, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s->env, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return cfg_expected(s, "true or false (or 1/0, yes/no)", e);
}

/* One of names[0..n), as its index. The environment may use any case. */
int cfg_get_choice(struct src *s, const char *const *names, size_t n, int *out, struct gf_err *e)
{
	const char *v = s->v ? cfg_plain_string(s->v) : s->env;
	char what[128];
	size_t i;

	for (i = 0; v && i < n; i++) {
		if (s->v ? !strcmp(v, names[i]) : !strcasecmp(v, names[i])) {
			*out = (int)i;
			return 0;
		}
	}
	snprintf(what, sizeof what, "\"%s\" or \"%s\"", names[0], names[1]);
	return cfg_expected(s, what, e);
}

int cfg_strlist_push(char ***v, size_t *n, const char *s, size_t len, struct gf_err *e)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);

	if (!nv)
		return gf_err_set(e, "out of memory");
	*v = nv;
	if (!(nv[*n] = strndup(s, len)))
		return gf_err_set(e, "out of memory");
	(*n)++;
	return 0;
}

/* Add a list entry unless it is empty or already there. */
static int strlist_add(char ***v, size_t *n, const char *s, size_t len, struct gf_err *e)
{
	size_t i;

	if (len == 0)
		return gf_err_set(e, "entries must not be empty");
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return gf_err_set(e, "entries must not hold control characters");
	for (i = 0; i < *n; i++)
		if (strlen((*v)[i]) == len && !memcmp((*v)[i], s, len))
			return gf_err_set(e, "'%.*s' is listed twice", (int)(len > 100 ? 100 : len), s);
	return cfg_strlist_push(v, n, s, len, e);
}

/* An array of strings, or in the environment a comma-separated list. */
int cfg_get_strlist(struct src *s, char ***out, size_t *nout, struct gf_err *e)
{
	char **v = NULL;
	size_t n = 0, i;

	if (s->v) {
		if (toml_type(s->v) != TOML_ARRAY)
			return cfg_expected(s, "an array of strings", e);
		for (i = 0; i < toml_array_len(s->v); i++) {
			const struct toml_value *it = toml_array_at(s->v, i);
			const char *str = cfg_plain_string(it);

			s->at = it;
			if (!str) {
				cfg_expected(s, "an array of strings", e);
				goto fail;
			}
			if (strlist_add(&v, &n, str, strlen(str), e))
				goto fail;
		}
		s->at = NULL;
	} else if (*s->env) {
		const char *p = s->env;

		for (;;) {
			size_t len = strcspn(p, ",");
			const char *q = p;

			while (len && *q == ' ')
				q++, len--;
			while (len && q[len - 1] == ' ')
				len--;
			if (strlist_add(&v, &n, q, len, e))
				goto fail;
			p += strcspn(p, ",");
			if (!*p)
				break;
			p++;
		}
	}
	cfg_free_strv(*out, *nout);
	*out = v;
	*nout = n;
	return 0;
fail:
	cfg_free_strv(v, n);
	return -1;
}

/* ---------- where an error points ---------- */

/* Where a setter's error points: the value, or a part of it. */
const struct toml_value *cfg_src_node(const struct src *s)
{
	return s->at ? s->at : s->v;
}

/* "<path>: line L, column C: " before the message in e. */
int cfg_at(struct loader *L, const struct toml_value *v)
{
	return gf_err_prefix(L->e, "%s: line %d, column %d", L->path, toml_line(v), toml_col(v));
}

/* The same, where a setter's error points. */
int cfg_at_src(struct loader *L, const struct src *s)
{
	if (s->line)
		return gf_err_prefix(L->e, "%s: line %d, column %d", L->path, s->line, s->col);
	return cfg_at(L, cfg_src_node(s));
}

int cfg_at_key(struct loader *L, const struct toml_value *t, size_t i)
{
	return gf_err_prefix(L->e, "%s: line %d, column %d", L->path, toml_table_key_line(t, i),
	    toml_table_key_col(t, i));
}

