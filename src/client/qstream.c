/* qstream.c — GET /jobs read piece by piece: a small JSON reader over the
 * bytes that have arrived, one step at a time (a step that runs out of
 * bytes is taken again when more came), the fields gqueue shows taken
 * from each job object into a struct qjob. */
#include "qstream.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "decimal.h"

enum { S_START, S_KEY_FIRST, S_KEY, S_TOP_NEXT, S_ITEM_FIRST, S_ITEM, S_ITEM_NEXT, S_END, S_FAILED };

/* A step's result: done, out of bytes (try again with more), malformed. */
enum { OK = 1, MORE = 0, BAD = -1 };

#define MAX_DEPTH 512

struct rd {
	struct qstream *s;
	const char *p;
	size_t n, i;
};

static int bad(struct rd *r, const char *fmt, ...)
{
	char what[100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(r->s->err, sizeof r->s->err, "gflowd's job list is not valid JSON: %s at byte %zu", what,
	    r->s->taken + r->i);
	return BAD;
}

static void ws(struct rd *r)
{
	while (r->i < r->n && (r->p[r->i] == ' ' || r->p[r->i] == '\t' ||
	    r->p[r->i] == '\n' || r->p[r->i] == '\r'))
		r->i++;
}

/* The next byte after white space; -1 when none has arrived yet. */
static int peek(struct rd *r)
{
	ws(r);
	return r->i < r->n ? (unsigned char)r->p[r->i] : -1;
}

static int expect(struct rd *r, char c)
{
	int got = peek(r);

	if (got < 0)
		return MORE;
	if (got != c)
		return bad(r, "expected '%c'", c);
	r->i++;
	return OK;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int k = 0; k < 4; k++) {
		int d = gf_hex_digit((unsigned char)p[k]);

		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

/* A string at r (after white space), decoded into out (when not NULL). */
static int string(struct rd *r, struct sbuf *out)
{
	int c = peek(r);
	size_t i;

	if (c < 0)
		return MORE;
	if (c != '"')
		return bad(r, "expected a string");
	for (i = r->i + 1;;) {
		size_t k = i;
		unsigned char high = 0;	/* any byte past ASCII in the run */

		while (k < r->n && r->p[k] != '"' && r->p[k] != '\\' && (unsigned char)r->p[k] >= 0x20)
			high |= (unsigned char)r->p[k++];
		if (k >= r->n)
			return MORE;
		/* a run of plain bytes, whole: a quote, backslash or control
		 * character ends it, none of which is inside a UTF-8 sequence */
		if ((high & 0x80) && !gf_utf8_valid(r->p + i, k - i))
			return bad(r, "a string that is not UTF-8");
		if (out && k > i)
			sbuf_add(out, r->p + i, k - i);
		if (r->p[k] == '"') {
			r->i = k + 1;
			return OK;
		}
		if ((unsigned char)r->p[k] < 0x20)
			return bad(r, "a control character in a string");
		/* an escape */
		if (k + 1 >= r->n)
			return MORE;
		switch (r->p[k + 1]) {
		case '"': case '\\': case '/':
			if (out)
				sbuf_addc(out, r->p[k + 1]);
			i = k + 2;
			break;
		case 'b': if (out) sbuf_addc(out, '\b'); i = k + 2; break;
		case 'f': if (out) sbuf_addc(out, '\f'); i = k + 2; break;
		case 'n': if (out) sbuf_addc(out, '\n'); i = k + 2; break;
		case 'r': if (out) sbuf_addc(out, '\r'); i = k + 2; break;
		case 't': if (out) sbuf_addc(out, '\t'); i = k + 2; break;
		case 'u': {
			unsigned v, lo;

			if (k + 6 > r->n)
				return MORE;
			if (hex4(r->p + k + 2, &v))
				return bad(r, "a bad \\u escape");
			i = k + 6;
			if (v >= 0xD800 && v <= 0xDBFF) {
				if (i + 6 > r->n)
					return MORE;
				if (r->p[i] != '\\' || r->p[i + 1] != 'u' || hex4(r->p + i + 2, &lo) ||
				    lo < 0xDC00 || lo > 0xDFFF)
					return bad(r, "a lone surrogate in a \\u escape");
				v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
				i += 6;
			} else if (v >= 0xDC00 && v <= 0xDFFF)
				return bad(r, "a lone surrogate in a \\u escape");
			if (v == 0)
				return bad(r, "\\u0000 in a string");
			if (out) {
				char u[4];

				sbuf_add(out, u, gf_utf8_put(u, v));
			}
			break;
		}
		default:
			return bad(r, "a bad escape in a string");
		}
	}
}

struct val {
	enum { V_NULL, V_BOOL, V_INT, V_REAL, V_STR, V_OTHER } t;
	int64_t i;
	double d;
	size_t off;	/* V_STR: where in s->str */
};

static int value(struct rd *r, struct val *v, int depth);

static int number(struct rd *r, struct val *v)
{
	size_t i = r->i, start = r->i;
	int real = 0;
	char buf[64];

	if (i < r->n && r->p[i] == '-')
		i++;
	if (i >= r->n)
		return MORE;
	if (r->p[i] == '0')
		i++;
	else if (r->p[i] >= '1' && r->p[i] <= '9')
		while (i < r->n && r->p[i] >= '0' && r->p[i] <= '9')
			i++;
	else
		return bad(r, "a bad number");
	if (i < r->n && r->p[i] == '.') {
		real = 1;
		if (++i >= r->n)
			return MORE;
		if (r->p[i] < '0' || r->p[i] > '9')
			return bad(r, "a bad number");
		while (i < r->n && r->p[i] >= '0' && r->p[i] <= '9')
			i++;
	}
	if (i < r->n && (r->p[i] == 'e' || r->p[i] == 'E')) {
		real = 1;
		if (++i < r->n && (r->p[i] == '+' || r->p[i] == '-'))
			i++;
		if (i >= r->n)
			return MORE;
		if (r->p[i] < '0' || r->p[i] > '9')
			return bad(r, "a bad number");
		while (i < r->n && r->p[i] >= '0' && r->p[i] <= '9')
			i++;
	}
	if (i >= r->n)
		return MORE;	/* more digits may come */
	if (i - start >= sizeof buf)
		return bad(r, "a number too long");
	memcpy(buf, r->p + start, i - start);
	buf[i - start] = '\0';
	errno = 0;
	if (real) {
		v->t = V_REAL;
		if (gf_decimal(buf, &v->d) < 0)	/* the daemon's times: without musl's slow path */
			v->d = strtod(buf, NULL);
		if (errno == ERANGE && isinf(v->d))
			return bad(r, "a real number out of range");
	} else if (i - start < 18) {	/* fits: no overflow to check */
		int neg = buf[0] == '-';
		int64_t x = 0;

		for (const char *d = buf + neg; *d; d++)
			x = x * 10 + (*d - '0');
		v->t = V_INT;
		v->i = neg ? -x : x;
	} else {
		v->t = V_INT;
		v->i = strtoll(buf, NULL, 10);
		if (errno == ERANGE)
			return bad(r, "an integer out of range");
	}
	r->i = i;
	return OK;
}

static int literal(struct rd *r, const char *word, size_t len)
{
	size_t have = r->n - r->i < len ? r->n - r->i : len;

	if (memcmp(r->p + r->i, word, have))
		return bad(r, "an unknown word");
	if (have < len)
		return MORE;
	r->i += len;
	return OK;
}

/* An array or object, checked and passed over. */
static int skip_container(struct rd *r, int depth)
{
	char close = r->p[r->i] == '[' ? ']' : '}';
	struct val v;
	int rc, c;

	if (depth > MAX_DEPTH)
		return bad(r, "nesting too deep");
	r->i++;
	if ((c = peek(r)) < 0)
		return MORE;
	if (c == close) {
		r->i++;
		return OK;
	}
	for (;;) {
		if (close == '}') {
			if ((rc = string(r, NULL)) != OK || (rc = expect(r, ':')) != OK)
				return rc;
		}
		if ((rc = value(r, &v, depth + 1)) != OK)
			return rc;
		if ((c = peek(r)) < 0)
			return MORE;
		r->i++;
		if (c == close)
			return OK;
		if (c != ',')
			return bad(r, "expected ',' or '%c'", close);
	}
}

/* Any value: scalars into v (strings into s->str), containers passed over. */
static int value(struct rd *r, struct val *v, int depth)
{
	int c = peek(r);

	if (c < 0)
		return MORE;
	switch (c) {
	case '"':
		v->t = V_STR;
		v->off = r->s->str.len;
		if ((c = string(r, &r->s->str)) != OK)
			return c;
		sbuf_addc(&r->s->str, '\0');
		return OK;
	case '{': case '[':
		v->t = V_OTHER;
		return skip_container(r, depth);
	case 't': v->t = V_BOOL, v->i = 1; return literal(r, "true", 4);
	case 'f': v->t = V_BOOL, v->i = 0; return literal(r, "false", 5);
	case 'n': v->t = V_NULL; return literal(r, "null", 4);
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return number(r, v);
		return bad(r, "an unexpected '%c'", c);
	}
}

/* gpu_ids: its items as fmt_int_list writes them (integers, strings). */
static int id_list(struct rd *r, struct sbuf *out, int *is_array)
{
	struct val v;
	int rc, c, n = 0;

	if ((c = peek(r)) < 0)
		return MORE;
	if (c != '[') {
		*is_array = 0;
		return value(r, &v, 1);
	}
	*is_array = 1;
	r->i++;
	if ((c = peek(r)) < 0)
		return MORE;
	if (c == ']') {
		r->i++;
		return OK;
	}
	for (;;) {
		size_t mark = r->s->str.len;

		if ((rc = value(r, &v, 2)) != OK)
			return rc;
		if (n++)
			sbuf_addc(out, ',');
		if (v.t == V_INT)
			sbuf_addf(out, "%lld", (long long)v.i);
		else if (v.t == V_STR)
			sbuf_adds(out, r->s->str.p + v.off);
		r->s->str.len = mark;
		if ((c = peek(r)) < 0)
			return MORE;
		r->i++;
		if (c == ']')
			return OK;
		if (c != ',')
			return bad(r, "expected ',' or ']'");
	}
}

/* gpu_usage: memory_exceeded and exceeded_mb. */
static int usage(struct rd *r, struct qjob *q)
{
	struct val v;
	int rc, c;

	if ((c = peek(r)) < 0)
		return MORE;
	if (c != '{')
		return value(r, &v, 1);
	r->i++;
	if ((c = peek(r)) < 0)
		return MORE;
	if (c == '}') {
		r->i++;
		return OK;
	}
	for (;;) {
		size_t mark = r->s->str.len;
		const char *key;

		if ((rc = string(r, &r->s->str)) != OK)
			return rc;
		sbuf_addc(&r->s->str, '\0');
		if ((rc = expect(r, ':')) != OK || (rc = value(r, &v, 2)) != OK)
			return rc;
		key = r->s->str.p + mark;
		if (!strcmp(key, "memory_exceeded"))
			q->memory_exceeded = v.t == V_BOOL && v.i;
		else if (!strcmp(key, "exceeded_mb"))
			q->exceeded_mb = v.t == V_INT ? v.i : v.t == V_REAL ? (int64_t)v.d : 0;
		r->s->str.len = mark;
		if ((c = peek(r)) < 0)
			return MORE;
		r->i++;
		if (c == '}')
			return OK;
		if (c != ',')
			return bad(r, "expected ',' or '}'");
	}
}

/* Where a job's string fields are kept until the object is whole. */
struct strs {
	size_t name, state, st, reason, user, project, cluster;	/* +1, 0 = none */
};

static int64_t as_int(const struct val *v, int64_t dflt)
{
	return v->t == V_INT ? v->i : v->t == V_REAL ? (int64_t)v->d : dflt;
}

static size_t str_at(const struct val *v)
{
	return v->t == V_STR ? v->off + 1 : 0;
}

static double as_num(const struct val *v, double dflt)
{
	return v->t == V_INT ? (double)v->i : v->t == V_REAL ? v->d : dflt;
}

/* The job fields a column reads. */
enum { K_OTHER, K_ID, K_GPUS, K_UID, K_PRIORITY, K_TIME_LIMIT, K_MEMORY, K_GPU_MEMORY, K_EXIT_CODE,
       K_EXIT_SIGNAL, K_START, K_END, K_SUBMIT, K_NAME, K_STATE, K_ST, K_REASON, K_USER, K_PROJECT,
       K_CLUSTER, K_GPU_IDS, K_GPU_USAGE, K_CPUS, K_EXPECTED_START, K_EXPECTED_GPUS, K_IDLE_SECS,
       K_IDLE_WARNED };

static int key_of(const char *k, size_t n)
{
#define IS(word, id) if (n == sizeof word - 1 && !memcmp(k, word, n)) return id
	switch (n ? k[0] : 0) {
	case 'c':
		IS("cluster", K_CLUSTER);
		IS("cpus", K_CPUS);
		break;
	case 'e':
		IS("end_time", K_END);
		IS("expected_start", K_EXPECTED_START);
		IS("expected_gpus", K_EXPECTED_GPUS);
		IS("exit_code", K_EXIT_CODE);
		IS("exit_signal", K_EXIT_SIGNAL);
		break;
	case 'g':
		IS("gpus", K_GPUS);
		IS("gpu_ids", K_GPU_IDS);
		IS("gpu_usage", K_GPU_USAGE);
		IS("gpu_memory_mb", K_GPU_MEMORY);
		break;
	case 'i':
		IS("id", K_ID);
		IS("idle_secs", K_IDLE_SECS);
		IS("idle_warned", K_IDLE_WARNED);
		break;
	case 'm': IS("memory_mb", K_MEMORY); break;
	case 'n': IS("name", K_NAME); break;
	case 'p':
		IS("priority", K_PRIORITY);
		IS("project", K_PROJECT);
		break;
	case 'r': IS("reason", K_REASON); break;
	case 's':
		IS("st", K_ST);
		IS("state", K_STATE);
		IS("start_time", K_START);
		IS("submit_time", K_SUBMIT);
		break;
	case 't': IS("time_limit_secs", K_TIME_LIMIT); break;
	case 'u':
		IS("uid", K_UID);
		IS("user", K_USER);
		break;
	}
	return K_OTHER;
#undef IS
}

/* A member's key, which of the fields above; read in place when it is
 * plain ASCII (every key the daemon sends). */
static int key(struct rd *r, int *kid)
{
	size_t i, mark;
	int c = peek(r), rc;

	if (c < 0)
		return MORE;
	if (c == '"') {
		for (i = r->i + 1; i < r->n && r->p[i] != '"' && r->p[i] != '\\' &&
		    r->p[i] >= 0x20 && r->p[i] < 0x7f; i++)
			;
		if (i < r->n && r->p[i] == '"') {
			*kid = key_of(r->p + r->i + 1, i - r->i - 1);
			r->i = i + 1;
			return OK;
		}
	}
	mark = r->s->str.len;
	if ((rc = string(r, &r->s->str)) != OK)
		return rc;
	*kid = key_of(sbuf_str(&r->s->str) + mark, r->s->str.len - mark);
	r->s->str.len = mark;
	return OK;
}

/* One job object into q. */
static int job(struct rd *r, struct qjob *q)
{
	struct qstream *s = r->s;
	struct strs at = { 0 };
	int rc, c, ids_array = 0, eids_array = 0;

	memset(q, 0, sizeof *q);
	q->uid = -1;
	q->priority = 10;
	q->cpus = 1;
	s->str.len = 0;
	s->ids.len = 0;
	s->eids.len = 0;
	if ((rc = expect(r, '{')) != OK)
		return rc;
	if ((c = peek(r)) < 0)
		return MORE;
	if (c != '}')
		for (;;) {
			struct val v = { .t = V_NULL };
			int has, kid;

			if ((rc = key(r, &kid)) != OK || (rc = expect(r, ':')) != OK)
				return rc;
			if (kid == K_GPU_IDS) {
				s->ids.len = 0;
				rc = id_list(r, &s->ids, &ids_array);
			} else if (kid == K_EXPECTED_GPUS) {
				s->eids.len = 0;
				rc = id_list(r, &s->eids, &eids_array);
			} else if (kid == K_GPU_USAGE) {
				q->memory_exceeded = 0, q->exceeded_mb = 0;
				rc = usage(r, q);
			} else
				rc = value(r, &v, 1);
			if (rc != OK)
				return rc;
			has = v.t != V_NULL;
			switch (kid) {
			case K_ID: q->id = as_int(&v, 0); break;
			case K_GPUS: q->gpus = as_int(&v, 0); break;
			case K_CPUS: q->cpus = as_int(&v, 1); break;
			case K_UID: q->uid = as_int(&v, -1); break;
			case K_PRIORITY: q->priority = as_int(&v, 10); break;
			case K_TIME_LIMIT: q->time_limit_secs = as_int(&v, 0), q->has_time_limit = has; break;
			case K_MEMORY: q->memory_mb = as_int(&v, 0), q->has_memory = has; break;
			case K_GPU_MEMORY: q->gpu_memory_mb = as_int(&v, 0), q->has_gpu_memory = has; break;
			case K_EXIT_CODE: q->exit_code = as_int(&v, 0), q->has_exit_code = has; break;
			case K_EXIT_SIGNAL: q->exit_signal = as_int(&v, 0), q->has_exit_signal = has; break;
			case K_START: q->start_time = as_num(&v, 0); break;
			case K_END: q->end_time = as_num(&v, 0); break;
			case K_SUBMIT: q->submit_time = as_num(&v, 0); break;
			case K_IDLE_SECS: q->idle_secs = as_int(&v, 0); break;
			case K_IDLE_WARNED: q->idle_warned = v.t == V_BOOL && v.i; break;
			case K_EXPECTED_START:
				q->expected_start = as_num(&v, 0);
				q->has_expected = v.t == V_INT || v.t == V_REAL;
				break;
			case K_NAME: at.name = str_at(&v); break;
			case K_STATE: at.state = str_at(&v); break;
			case K_ST: at.st = str_at(&v); break;
			case K_REASON: at.reason = str_at(&v); break;
			case K_USER: at.user = str_at(&v); break;
			case K_PROJECT: at.project = str_at(&v); break;
			case K_CLUSTER: at.cluster = str_at(&v); break;
			default: break;
			}
			if ((c = peek(r)) < 0)
				return MORE;
			r->i++;
			if (c == '}')
				break;
			if (c != ',')
				return bad(r, "expected ',' or '}'");
		}
	else
		r->i++;
#define PTR(k) q->k = at.k ? s->str.p + at.k - 1 : NULL
	PTR(name); PTR(state); PTR(st); PTR(reason); PTR(user); PTR(project); PTR(cluster);
#undef PTR
	if (s->ids.p)
		s->ids.p[s->ids.len] = '\0';	/* emptied: no bytes of the last job */
	q->gpu_ids = ids_array ? sbuf_str(&s->ids) : "";
	if (s->eids.p)
		s->eids.p[s->eids.len] = '\0';
	q->expected_gpus = eids_array ? sbuf_str(&s->eids) : NULL;
	return OK;
}

/* One step of the list's grammar from s->at. */
static int step(struct qstream *s)
{
	struct rd r = { s, s->in.p, s->in.len, s->at };
	struct qjob q;
	struct val v;
	int rc = OK, c;

	switch (s->stage) {
	case S_START:
		if ((rc = expect(&r, '{')) == OK)
			s->stage = S_KEY_FIRST;
		break;
	case S_KEY_FIRST:
	case S_KEY:
		if ((c = peek(&r)) < 0)
			return MORE;
		if (c == '}' && s->stage == S_KEY_FIRST) {
			r.i++;
			s->stage = S_FAILED;
			snprintf(s->err, sizeof s->err, "gflowd's job list has no \"jobs\" array");
			return BAD;
		}
		s->str.len = 0;
		if ((rc = string(&r, &s->str)) != OK || (rc = expect(&r, ':')) != OK)
			break;
		if (strcmp(sbuf_str(&s->str), "jobs") == 0) {
			if ((c = peek(&r)) < 0)
				return MORE;
			if (c != '[') {
				snprintf(s->err, sizeof s->err, "gflowd's job list has no \"jobs\" array");
				return BAD;
			}
			r.i++;
			s->seen_jobs = 1;
			s->stage = S_ITEM_FIRST;
		} else {
			if ((rc = value(&r, &v, 1)) == OK)
				s->stage = S_TOP_NEXT;
		}
		break;
	case S_TOP_NEXT:
		if ((c = peek(&r)) < 0)
			return MORE;
		r.i++;
		if (c == ',')
			s->stage = S_KEY;
		else if (c == '}')
			s->stage = S_END;
		else
			rc = bad(&r, "expected ',' or '}'");
		break;
	case S_ITEM_FIRST:
	case S_ITEM:
		if ((c = peek(&r)) < 0)
			return MORE;
		if (c == ']' && s->stage == S_ITEM_FIRST) {
			r.i++;
			s->stage = S_TOP_NEXT;
			break;
		}
		if (c != '{')
			return bad(&r, "a job that is not an object");
		{
			size_t start = r.i;

			if ((rc = job(&r, &q)) == OK) {
				s->stage = S_ITEM_NEXT;
				s->at = r.i;
				if (s->row)
					s->row(&q, s->arg);
				if (s->raw && s->raw(r.p + start, r.i - start, s->arg) < 0) {
					snprintf(s->err, sizeof s->err, "%s", "gflowd sent a job "
					    "that could not be read back");
					return BAD;
				}
				return OK;
			}
		}
		break;
	case S_ITEM_NEXT:
		if ((c = peek(&r)) < 0)
			return MORE;
		r.i++;
		if (c == ',')
			s->stage = S_ITEM;
		else if (c == ']')
			s->stage = S_TOP_NEXT;
		else
			rc = bad(&r, "expected ',' or ']'");
		break;
	case S_END:
		if (peek(&r) >= 0)
			rc = bad(&r, "more after the end");
		else
			return MORE;
		break;
	default:
		return BAD;
	}
	if (rc == OK)
		s->at = r.i;
	return rc;
}

void qstream_init(struct qstream *s, void (*row)(const struct qjob *, void *), void *arg)
{
	memset(s, 0, sizeof *s);
	s->row = row;
	s->arg = arg;
}

int qstream_feed(struct qstream *s, const char *p, size_t n)
{
	int rc;

	if (s->stage == S_FAILED)
		return -1;
	if (s->at > 65536 && s->at * 2 > s->in.len) {	/* drop what was read */
		memmove(s->in.p, s->in.p + s->at, s->in.len - s->at);
		s->in.len -= s->at;
		s->taken += s->at;
		s->at = 0;
	}
	sbuf_add(&s->in, p, n);
	while ((rc = step(s)) == OK)
		;
	if (rc == BAD) {
		s->stage = S_FAILED;
		return -1;
	}
	return 0;
}

int qstream_end(struct qstream *s)
{
	if (s->stage == S_FAILED)
		return -1;
	if (s->stage == S_END && !s->seen_jobs) {
		snprintf(s->err, sizeof s->err, "gflowd's job list has no \"jobs\" array");
		s->stage = S_FAILED;
		return -1;
	}
	if (s->stage != S_END) {
		snprintf(s->err, sizeof s->err, s->in.len || s->taken ? "gflowd's job list is cut short" :
		    "gflowd sent an empty answer");
		s->stage = S_FAILED;
		return -1;
	}
	return 0;
}

void qstream_free(struct qstream *s)
{
	sbuf_free(&s->in);
	sbuf_free(&s->str);
	sbuf_free(&s->ids);
	sbuf_free(&s->eids);
}

const char *qstream_error(const struct qstream *s)
{
	return s->err;
}
