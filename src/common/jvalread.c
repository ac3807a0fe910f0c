/* jvalread.c — json_loadb for jval (jval.h): a lexer that reads one token
 * ahead, as jansson's does (its errors come first), and a parser over its
 * tokens, so that it accepts the same texts and fails with the same words
 * at the same place. */
#define GF_JVAL 1	/* jval's names, whatever the file is built with */

#include "jval.h"
#include "jvalint.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "utf8.h"

/* Nesting deeper than jansson reads is refused alike. */
#define MAX_DEPTH 2048

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

/* The length of the UTF-8 sequence at p[i] (1 for ASCII), 0 when it is
 * none. */
static size_t utf8_len_at(const struct rd *r, size_t i)
{
	uint32_t cp;

	return gf_utf8_seq((const unsigned char *)r->p + i, r->n - i, &cp);
}

/* Fail at p[i], which starts no UTF-8 (the token read up to it). */
static void fail_not_utf8(struct rd *r, size_t from, size_t i)
{
	char msg[40];

	r->i = i;
	snprintf(msg, sizeof msg, "unable to decode byte 0x%x", (unsigned char)r->p[i]);
	fail(r, from, msg);
}

/* In an escape, p[i] is not what may come there: the escape is bad, read
 * up to and with that byte — unless it does not start UTF-8, which is the
 * error then (jansson decodes each character as it reads it, and reads the
 * first byte of one here; the message keeps only whole characters). */
static void bad_escape(struct rd *r, size_t i)
{
	if (i >= r->n) {
		r->i = r->n;
		fail(r, r->from, "invalid escape");
	} else if (!utf8_len_at(r, i)) {
		fail_not_utf8(r, r->from, i);
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
		int d = i < r->n ? gf_hex_digit((unsigned char)r->p[i]) : -1;

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
			fail_not_utf8(r, r->from, i + ok);
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
	if (r->i >= r->n || utf8_len_at(r, r->i))
		return 0;
	fail_not_utf8(r, r->from, r->i);
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
		text = gj_alloc(i - from + 1);
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
	size_t n;
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
		while (r->i < r->n && ((r->p[r->i] >= 'a' && r->p[r->i] <= 'z') || (r->p[r->i] >= 'A' && r->p[r->i] <= 'Z')))
			r->i++;
		n = r->i - r->from;
		if (ended_badly(r))
			return;
		r->tok = n == 4 && !memcmp(r->p + r->from, "true", 4)    ? T_TRUE :
			 n == 5 && !memcmp(r->p + r->from, "false", 5)   ? T_FALSE :
			 n == 4 && !memcmp(r->p + r->from, "null", 4)    ? T_NULL :
									   T_INVALID;
	} else if ((n = utf8_len_at(r, r->i))) {
		r->i += n;
		r->tok = T_INVALID;
	} else {
		fail_not_utf8(r, NO_TOKEN, r->i);
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
		if ((r->flags & JSON_REJECT_DUPLICATES) && gj_find(o, r->buf.p, klen, gj_hash_key(r->buf.p, klen)) >= 0) {
			fail_token(r, "duplicate object key");
			goto bad;
		}
		key = gj_alloc(klen + 1);
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
		gj_set_member(o, key, klen, v, key);
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
			v = gj_string_of(r->buf.p, r->buf.len);
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

