/* toml.c — the TOML 1.0 reader (see toml.h).
 *
 * A recursive-descent parser over the caller's byte slice. It builds the
 * tree as it reads and enforces the table rules on the way: no key twice,
 * no table defined twice, dotted keys extend only the tables they created,
 * inline tables and static arrays are closed once written. Line and column
 * are worked out from byte offsets by a cursor that only moves forward while
 * the document is read (errors may rewind it). */
#include "toml.h"
#include "utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a table came to exist, which decides what may still be added to it. */
enum {
	T_IMPLICIT,	/* parent in a [header] path: may still get its own header */
	T_HEADER,	/* defined by [header], or an element of [[array]] */
	T_DOTTED,	/* made or defined by a dotted key: only dotted keys may extend it */
	T_INLINE,	/* { ... }: closed */
};

/* Arrays: written as [ ... ] (closed), or grown by [[header]]. */
enum { A_STATIC, A_TABLES };

struct toml_entry {
	char *key;
	size_t key_len;
	int line, col;
	struct toml_value *val;
};

struct toml_value {
	enum toml_type type;
	int line, col;
	int depth;		/* containers: levels below the root */
	int kind;		/* tables: T_*; arrays: A_* */
	union {
		struct {
			char *s;
			size_t len;
		} str;
		int64_t i;
		double f;
		int b;
		struct {
			struct toml_value **items;
			size_t len, cap;
		} arr;
		struct {
			struct toml_entry *ents;
			size_t len, cap;
			size_t *index;	/* open addressing: entry + 1, 0 = free */
			size_t index_cap;
		} tab;
	} u;
};

struct parser {
	const char *s;
	size_t len, pos;
	struct gf_err *e;
	size_t at_off;		/* line/column cursor */
	int at_line, at_col;
	struct toml_value *root, *cur;
};

/* One part of a dotted key, decoded. */
struct key_part {
	char *s;
	size_t len;
	size_t off;		/* where it was written */
	int line, col;
	int bare;
};

struct key {
	struct key_part part[TOML_MAX_DEPTH];
	int n;
};

/* Growable byte buffer for decoded strings. */
struct buf {
	char *s;
	size_t len, cap;
};

/* ---------- positions and errors ---------- */

static void where(struct parser *p, size_t off, int *line, int *col)
{
	if (off < p->at_off) {
		p->at_off = 0;
		p->at_line = 1;
		p->at_col = 1;
	}
	for (; p->at_off < off && p->at_off < p->len; p->at_off++) {
		unsigned char b = (unsigned char)p->s[p->at_off];

		if (b == '\n') {
			p->at_line++;
			p->at_col = 1;
		} else if ((b & 0xC0) != 0x80) {
			p->at_col++;
		}
	}
	*line = p->at_line;
	*col = p->at_col;
}

static int perr(struct parser *p, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "line L, column C: <message>" at byte offset off; returns -1. */
static int perr(struct parser *p, size_t off, const char *fmt, ...)
{
	char msg[GF_ERR_MAX];
	int line, col;
	va_list ap;

	where(p, off, &line, &col);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return gf_err_set(p->e, "line %d, column %d: %s", line, col, msg);
}

static int oom(struct parser *p)
{
	return perr(p, p->pos, "out of memory");
}

/* Describe the byte at off for "found ..." in messages. */
static const char *found(struct parser *p, size_t off, char *buf, size_t size)
{
	unsigned char c;

	if (off >= p->len)
		return "end of input";
	c = (unsigned char)p->s[off];
	if (c == '\n' || (c == '\r' && off + 1 < p->len && p->s[off + 1] == '\n'))
		return "end of line";
	if (c == '\r')
		return "a carriage return without a line feed";
	if (c < 0x20 || c == 0x7f)
		snprintf(buf, size, "control character U+%04X", c);
	else if (c >= 0x80)
		return "a non-ASCII character";
	else
		snprintf(buf, size, "'%c'", c);
	return buf;
}

/* Copy s[0..len) into out for a message: clipped, control bytes as '?',
 * never cutting a UTF-8 sequence in half. */
static void show(const char *s, size_t len, char *out, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 4 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (i < len) {
		while (n > 0 && ((unsigned char)out[n - 1] & 0xC0) == 0x80)
			n--;
		if (n > 0 && (unsigned char)out[n - 1] >= 0xC0)
			n--;
		out[n++] = '.';
		out[n++] = '.';
		out[n++] = '.';
	}
	out[n] = '\0';
}

/* The first upto+1 parts of k as written, e.g. a."b c".d */
static const char *key_show(const struct key *k, int upto, char *out, size_t size)
{
	char part[128];
	size_t n = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i <= upto && i < k->n && n < size; i++) {
		show(k->part[i].s, k->part[i].len, part, sizeof part);
		n += (size_t)snprintf(out + n, size - n, k->part[i].bare ? "%s%s" : "%s\"%s\"",
		    i ? "." : "", part);
	}
	return out;
}

/* ---------- tree ---------- */

/* A value written at line/col. */
static struct toml_value *new_node(struct parser *p, enum toml_type type, int line, int col)
{
	struct toml_value *v = calloc(1, sizeof *v);

	if (!v) {
		oom(p);
		return NULL;
	}
	v->type = type;
	v->line = line;
	v->col = col;
	return v;
}

/* A value that starts at p->pos. */
static struct toml_value *new_value(struct parser *p, enum toml_type type)
{
	int line, col;

	where(p, p->pos, &line, &col);
	return new_node(p, type, line, col);
}

/* A table or array at the given depth, written at line/col (off for the
 * message); refuses to nest too deep. */
static struct toml_value *new_container(struct parser *p, enum toml_type type, int kind,
    int depth, size_t off, int line, int col)
{
	struct toml_value *v;

	if (depth > TOML_MAX_DEPTH) {
		perr(p, off, "tables and arrays nested deeper than %d levels", TOML_MAX_DEPTH);
		return NULL;
	}
	v = new_node(p, type, line, col);
	if (v) {
		v->kind = kind;
		v->depth = depth;
	}
	return v;
}

/* A table named by key part kp. */
static struct toml_value *new_table(struct parser *p, int kind, int depth, const struct key_part *kp)
{
	return new_container(p, TOML_TABLE, kind, depth, kp->off, kp->line, kp->col);
}

/* An array or inline table that starts at p->pos. */
static struct toml_value *new_here(struct parser *p, enum toml_type type, int kind, int depth)
{
	int line, col;

	where(p, p->pos, &line, &col);
	return new_container(p, type, kind, depth, p->pos, line, col);
}

void toml_free(struct toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case TOML_STRING:
	case TOML_DATETIME:
		free(v->u.str.s);
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->u.arr.len; i++)
			toml_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case TOML_TABLE:
		for (i = 0; i < v->u.tab.len; i++) {
			free(v->u.tab.ents[i].key);
			toml_free(v->u.tab.ents[i].val);
		}
		free(v->u.tab.ents);
		free(v->u.tab.index);
		break;
	default:
		break;
	}
	free(v);
}

static size_t hash_key(const char *s, size_t len)
{
	size_t h = 2166136261u, i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* Tables past this many keys get a hash index. */
#define INDEX_MIN 16

static void index_put(struct toml_value *t, size_t i)
{
	size_t mask = t->u.tab.index_cap - 1;
	size_t h = hash_key(t->u.tab.ents[i].key, t->u.tab.ents[i].key_len) & mask;

	while (t->u.tab.index[h])
		h = (h + 1) & mask;
	t->u.tab.index[h] = i + 1;
}

static int index_grow(struct toml_value *t)
{
	size_t cap = t->u.tab.index_cap ? t->u.tab.index_cap * 2 : 64, i;
	size_t *index = calloc(cap, sizeof *index);

	if (!index)
		return -1;
	free(t->u.tab.index);
	t->u.tab.index = index;
	t->u.tab.index_cap = cap;
	for (i = 0; i < t->u.tab.len; i++)
		index_put(t, i);
	return 0;
}

static struct toml_value *table_find(const struct toml_value *t, const char *key, size_t len)
{
	size_t i;

	if (t->u.tab.index) {
		size_t mask = t->u.tab.index_cap - 1, h = hash_key(key, len) & mask;

		for (; t->u.tab.index[h]; h = (h + 1) & mask) {
			const struct toml_entry *en = &t->u.tab.ents[t->u.tab.index[h] - 1];

			if (en->key_len == len && !memcmp(en->key, key, len))
				return en->val;
		}
		return NULL;
	}
	for (i = 0; i < t->u.tab.len; i++) {
		const struct toml_entry *en = &t->u.tab.ents[i];

		if (en->key_len == len && !memcmp(en->key, key, len))
			return en->val;
	}
	return NULL;
}

/* Add key part kp = v to t (the caller checked it is new). On failure v is
 * freed. */
static int table_add(struct parser *p, struct toml_value *t, const struct key_part *kp,
    struct toml_value *v)
{
	struct toml_entry *en;

	if (t->u.tab.len == t->u.tab.cap) {
		size_t cap = t->u.tab.cap ? t->u.tab.cap * 2 : 8;
		struct toml_entry *ents = realloc(t->u.tab.ents, cap * sizeof *ents);

		if (!ents)
			goto fail;
		t->u.tab.ents = ents;
		t->u.tab.cap = cap;
	}
	en = &t->u.tab.ents[t->u.tab.len];
	en->key = malloc(kp->len + 1);
	if (!en->key)
		goto fail;
	memcpy(en->key, kp->s, kp->len);
	en->key[kp->len] = '\0';
	en->key_len = kp->len;
	en->line = kp->line;
	en->col = kp->col;
	en->val = v;
	t->u.tab.len++;
	if (t->u.tab.len >= INDEX_MIN && t->u.tab.len * 2 > t->u.tab.index_cap) {
		if (index_grow(t))
			return oom(p);	/* v is in the tree now */
	} else if (t->u.tab.index) {
		index_put(t, t->u.tab.len - 1);
	}
	return 0;
fail:
	toml_free(v);
	return oom(p);
}

/* Append v to array a; on failure v is freed. */
static int array_add(struct parser *p, struct toml_value *a, struct toml_value *v)
{
	if (a->u.arr.len == a->u.arr.cap) {
		size_t cap = a->u.arr.cap ? a->u.arr.cap * 2 : 8;
		struct toml_value **items = realloc(a->u.arr.items, cap * sizeof *items);

		if (!items) {
			toml_free(v);
			return oom(p);
		}
		a->u.arr.items = items;
		a->u.arr.cap = cap;
	}
	a->u.arr.items[a->u.arr.len++] = v;
	return 0;
}

/* Close an inline table and the dotted tables inside it. */
static void seal(struct toml_value *t)
{
	size_t i;

	t->kind = T_INLINE;
	for (i = 0; i < t->u.tab.len; i++) {
		struct toml_value *v = t->u.tab.ents[i].val;

		if (v->type == TOML_TABLE && v->kind == T_DOTTED)
			seal(v);
	}
}

/* ---------- bytes ---------- */

static int at_end(const struct parser *p)
{
	return p->pos >= p->len;
}

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int peek_at(const struct parser *p, size_t off)
{
	return off < p->len ? (unsigned char)p->s[off] : -1;
}

static int is_control(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static int is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '_' || c == '-';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int check_utf8(struct parser *p)
{
	const unsigned char *s = (const unsigned char *)p->s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < p->len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		n = gf_utf8_seq(s + i, p->len - i, &cp);
		if (!n)
			return perr(p, i, "invalid UTF-8 byte 0x%02X", s[i]);
		i += n;
	}
	return 0;
}

static void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		p->pos++;
}

/* A comment runs to the end of the line; it may not hold control characters. */
static int skip_comment(struct parser *p)
{
	if (peek(p) != '#')
		return 0;
	for (p->pos++; !at_end(p); p->pos++) {
		int c = peek(p);

		if (c == '\n' || (c == '\r' && peek_at(p, p->pos + 1) == '\n'))
			break;
		if (is_control(c))
			return perr(p, p->pos, "control character U+%04X in a comment", c);
	}
	return 0;
}

/* Consume a newline (LF or CRLF) if one is next; 1 when one was. */
static int eat_newline(struct parser *p)
{
	if (peek(p) == '\n') {
		p->pos++;
		return 1;
	}
	if (peek(p) == '\r' && peek_at(p, p->pos + 1) == '\n') {
		p->pos += 2;
		return 1;
	}
	return 0;
}

/* After a key/value pair or a header: blanks, a comment, then a newline or
 * the end of input. */
static int end_line(struct parser *p, const char *after)
{
	char b[40];

	skip_ws(p);
	if (skip_comment(p))
		return -1;
	if (at_end(p) || eat_newline(p))
		return 0;
	return perr(p, p->pos, "expected a newline after %s, found %s", after,
	    found(p, p->pos, b, sizeof b));
}

/* Blanks, newlines and comments, as allowed between array elements. */
static int skip_space(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		if (skip_comment(p))
			return -1;
		if (!eat_newline(p))
			return 0;
	}
}

/* ---------- strings ---------- */

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		char *ns;

		while (cap < b->len + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}


/* The escape sequence at p->pos (the backslash) into b. */
static int escape(struct parser *p, struct buf *b)
{
	size_t at = p->pos, i, digits;
	unsigned long cp = 0;
	int c = peek_at(p, at + 1);
	char ch, tmp[40], utf8[4];

	switch (c) {
	case 'b': ch = '\b'; break;
	case 't': ch = '\t'; break;
	case 'n': ch = '\n'; break;
	case 'f': ch = '\f'; break;
	case 'r': ch = '\r'; break;
	case '"': ch = '"'; break;
	case '\\': ch = '\\'; break;
	case 'u':
	case 'U':
		digits = c == 'u' ? 4 : 8;
		for (i = 0; i < digits; i++) {
			int h = gf_hex_digit(peek_at(p, at + 2 + i));

			if (h < 0)
				return perr(p, at, "invalid escape: \\%c needs %zu hex digits", c, digits);
			cp = cp * 16 + (unsigned long)h;
		}
		if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return perr(p, at, "invalid escape \\%c%.*s: U+%04lX is not a Unicode scalar value",
			    c, (int)digits, p->s + at + 2, cp);
		p->pos = at + 2 + digits;
		return buf_add(b, utf8, gf_utf8_put(utf8, (uint32_t)cp)) ? oom(p) : 0;
	default:
		if (c >= 0x21 && c < 0x7f)
			return perr(p, at, "invalid escape '\\%c'", c);
		return perr(p, at, "invalid escape: backslash followed by %s",
		    found(p, at + 1, tmp, sizeof tmp));
	}
	p->pos = at + 2;
	return buf_add(b, &ch, 1) ? oom(p) : 0;
}

/* In a multi-line basic string, a backslash that ends a line swallows the
 * line break and all blanks and newlines after it. 1 when one was there. */
static int line_ending_backslash(struct parser *p)
{
	size_t i = p->pos + 1;

	while (peek_at(p, i) == ' ' || peek_at(p, i) == '\t')
		i++;
	if (peek_at(p, i) != '\n' && !(peek_at(p, i) == '\r' && peek_at(p, i + 1) == '\n'))
		return 0;
	p->pos = i;
	for (;;) {
		skip_ws(p);
		if (!eat_newline(p))
			return 1;
	}
}

/* A string of any of the four forms starting at p->pos, decoded into b.
 * Multi-line forms only when multi is set. */
static int parse_string(struct parser *p, struct buf *b, int multi)
{
	size_t start = p->pos;
	int q = peek(p), basic = q == '"', ml = 0;

	if (peek_at(p, start + 1) == q && peek_at(p, start + 2) == q) {
		if (!multi)
			return perr(p, start, "a key cannot be a multi-line string");
		ml = 1;
		p->pos += 3;
		eat_newline(p);	/* a newline right after the opening quotes is dropped */
	} else {
		p->pos++;
	}
	if (buf_add(b, "", 0))
		return oom(p);
	for (;;) {
		int c = peek(p);

		if (c < 0)
			return perr(p, start, "unterminated string");
		if (c == q) {
			size_t n = 0;

			if (!ml) {
				p->pos++;
				return 0;
			}
			while (peek_at(p, p->pos + n) == q)
				n++;
			if (n >= 3 && n <= 5) {
				/* Up to two quotes may sit right before the closing three. */
				if (buf_add(b, p->s + p->pos, n - 3))
					return oom(p);
				p->pos += n;
				return 0;
			}
			if (n > 5)
				return perr(p, p->pos + 3, "more than two quotes in a row in a multi-line string");
			if (buf_add(b, p->s + p->pos, n))
				return oom(p);
			p->pos += n;
			continue;
		}
		if (c == '\\' && basic) {
			if (ml && line_ending_backslash(p))
				continue;
			if (escape(p, b))
				return -1;
			continue;
		}
		if (c == '\n' || (c == '\r' && peek_at(p, p->pos + 1) == '\n')) {
			if (!ml)
				return perr(p, p->pos, "newline in a single-line string");
			eat_newline(p);
			if (buf_add(b, "\n", 1))
				return oom(p);
			continue;
		}
		if (is_control(c))
			return perr(p, p->pos, "control character U+%04X in a string", c);
		if (buf_add(b, p->s + p->pos, 1))
			return oom(p);
		p->pos++;
	}
}

/* ---------- keys ---------- */

static void key_free(struct key *k)
{
	int i;

	for (i = 0; i < k->n; i++)
		free(k->part[i].s);
	k->n = 0;
}

static int parse_key_part(struct parser *p, struct key_part *kp)
{
	int c = peek(p);
	char b[40];

	kp->off = p->pos;
	where(p, p->pos, &kp->line, &kp->col);
	kp->s = NULL;
	kp->len = 0;
	kp->bare = 0;
	if (c == '"' || c == '\'') {
		struct buf sb = { 0 };

		if (parse_string(p, &sb, 0)) {
			free(sb.s);
			return -1;
		}
		kp->s = sb.s;
		kp->len = sb.len;
		return 0;
	}
	if (!is_bare(c))
		return perr(p, p->pos, "expected a key, found %s", found(p, p->pos, b, sizeof b));
	while (is_bare(peek(p)))
		p->pos++;
	kp->len = p->pos - kp->off;
	kp->bare = 1;
	kp->s = malloc(kp->len + 1);
	if (!kp->s)
		return oom(p);
	memcpy(kp->s, p->s + kp->off, kp->len);
	kp->s[kp->len] = '\0';
	return 0;
}

/* A simple or dotted key; blanks are allowed around the dots. */
static int parse_key(struct parser *p, struct key *k)
{
	k->n = 0;
	for (;;) {
		if (k->n == TOML_MAX_DEPTH)
			return perr(p, p->pos, "key has more than %d dotted parts", TOML_MAX_DEPTH);
		if (parse_key_part(p, &k->part[k->n]))
			return -1;
		k->n++;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		p->pos++;
		skip_ws(p);
	}
}

/* ---------- scalars ---------- */

static int set_string(struct parser *p, struct toml_value *v, const char *s, size_t len)
{
	v->u.str.s = malloc(len + 1);
	if (!v->u.str.s)
		return oom(p);
	memcpy(v->u.str.s, s, len);
	v->u.str.s[len] = '\0';
	v->u.str.len = len;
	return 0;
}

static int is_token(int c)
{
	return is_bare(c) || c == '+' || c == '.' || c == ':';
}

/* n decimal digits at s, as a number. */
static int num(const char *s, int n)
{
	int v = 0, i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_digit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* HH:MM:SS[.frac] at s; returns its length, 0 when malformed or -1 out of range. */
static int scan_time(const char *s, size_t n)
{
	size_t i = 8;

	if (n < 8 || !all_digits(s, 2) || s[2] != ':' || !all_digits(s + 3, 2) || s[5] != ':' ||
	    !all_digits(s + 6, 2))
		return 0;
	if (num(s, 2) > 23 || num(s + 3, 2) > 59 || num(s + 6, 2) > 59)
		return -1;
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || !is_digit((unsigned char)s[i]))
			return 0;
		while (i < n && is_digit((unsigned char)s[i]))
			i++;
	}
	return (int)i;
}

static int days_in(int year, int month)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/* An offset date-time, local date-time, local date or local time. */
static int check_datetime(struct parser *p, size_t off, const char *s, size_t n)
{
	char tok[64];
	size_t i = 0;
	int t;

	show(s, n, tok, sizeof tok);
	if (n >= 3 && s[2] == ':') {
		t = scan_time(s, n);
		if (t < 0)
			return perr(p, off, "invalid time '%s': hour, minute or second out of range", tok);
		if (t == 0 || (size_t)t != n)
			return perr(p, off, "invalid time '%s': expected HH:MM:SS[.fraction]", tok);
		return 0;
	}
	if (n < 10 || !all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) || s[7] != '-' ||
	    !all_digits(s + 8, 2))
		return perr(p, off, "invalid date '%s': expected YYYY-MM-DD", tok);
	{
		int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);

		if (m < 1 || m > 12 || d < 1 || d > days_in(y, m))
			return perr(p, off, "invalid date '%s': no such day", tok);
	}
	i = 10;
	if (i == n)
		return 0;
	if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
		return perr(p, off, "invalid date-time '%s': expected 'T' or a space after the date", tok);
	i++;
	t = scan_time(s + i, n - i);
	if (t < 0)
		return perr(p, off, "invalid date-time '%s': hour, minute or second out of range", tok);
	if (t == 0)
		return perr(p, off, "invalid date-time '%s': expected HH:MM:SS after the date", tok);
	i += (size_t)t;
	if (i == n)
		return 0;
	if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n)
		return 0;
	if ((s[i] == '+' || s[i] == '-') && n - i == 6 && all_digits(s + i + 1, 2) && s[i + 3] == ':' &&
	    all_digits(s + i + 4, 2)) {
		if (num(s + i + 1, 2) > 23 || num(s + i + 4, 2) > 59)
			return perr(p, off, "invalid date-time '%s': offset out of range", tok);
		return 0;
	}
	return perr(p, off, "invalid date-time '%s': expected Z or an offset like +08:00 after the time", tok);
}

static int base_digit(int c, int base)
{
	int v = gf_hex_digit(c);

	return v >= 0 && v < base;
}

/* A run of digits in base with single '_' between digits, from s[*i].
 * Returns the number of digits, or -1 for a misplaced underscore. */
static int digit_run(const char *s, size_t n, size_t *i, int base)
{
	int count = 0, prev_digit = 0;

	while (*i < n) {
		int c = (unsigned char)s[*i];

		if (base_digit(c, base)) {
			count++;
			prev_digit = 1;
		} else if (c == '_') {
			if (!prev_digit)
				return -1;
			prev_digit = 0;
		} else {
			break;
		}
		(*i)++;
	}
	if (count && !prev_digit)
		return -1;
	return count;
}

/* Accumulate the digits (skipping '_') of s[from..to) in base; -1 on overflow
 * past limit. */
static int accumulate(const char *s, size_t from, size_t to, int base, uint64_t limit, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = from; i < to; i++) {
		uint64_t d;

		if (s[i] == '_')
			continue;
		d = (uint64_t)gf_hex_digit((unsigned char)s[i]);
		if (v > (limit - d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + d;
	}
	*out = v;
	return 0;
}

static int parse_float(struct parser *p, struct toml_value *v, size_t off, const char *s, size_t n,
    const char *tok)
{
	const char *what = "before the fraction or exponent";
	size_t i = 0, j, k;
	char *clean, *end;
	double d;
	int r;

	if (s[i] == '+' || s[i] == '-')
		i++;
	j = i;
	r = digit_run(s, n, &j, 10);
	if (r <= 0)
		goto digits;
	if (s[i] == '0' && j - i > 1)
		return perr(p, off, "invalid float '%s': leading zeros are not allowed", tok);
	if (j < n && s[j] == '.') {
		j++;
		r = digit_run(s, n, &j, 10);
		if (r <= 0) {
			what = "after the decimal point";
			goto digits;
		}
	}
	if (j < n && (s[j] == 'e' || s[j] == 'E')) {
		j++;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		r = digit_run(s, n, &j, 10);
		if (r <= 0) {
			what = "in the exponent";
			goto digits;
		}
	}
	if (j != n)
		return perr(p, off, "invalid number '%s'", tok);
	clean = malloc(n + 1);
	if (!clean)
		return oom(p);
	for (j = 0, k = 0; j < n; j++)
		if (s[j] != '_')
			clean[k++] = s[j];
	clean[k] = '\0';
	/* strtod reads '.' in the C locale, which gflow never changes. */
	d = strtod(clean, &end);
	k = (size_t)(end - clean) != k;	/* strtod stopped early: cannot happen after the checks */
	free(clean);
	if (k)
		return perr(p, off, "invalid float '%s'", tok);
	if (isinf(d))
		return perr(p, off, "float '%s' is out of range", tok);
	v->type = TOML_FLOAT;
	v->u.f = d;
	return 0;
digits:
	if (r < 0)
		return perr(p, off, "invalid float '%s': '_' must sit between digits", tok);
	return perr(p, off, "invalid float '%s': expected digits %s", tok, what);
}

/* Integers (decimal, 0x, 0o, 0b) and floats. */
static int parse_number(struct parser *p, struct toml_value *v, size_t off, const char *s, size_t n)
{
	char tok[64];
	size_t i = 0, j;
	int neg = 0, base = 10, r;
	uint64_t u;

	show(s, n, tok, sizeof tok);
	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i = 1;
	}
	if (n - i == 3 && (!strncmp(s + i, "inf", 3) || !strncmp(s + i, "nan", 3))) {
		v->type = TOML_FLOAT;
		v->u.f = s[i] == 'i' ? INFINITY : NAN;
		if (neg)
			v->u.f = -v->u.f;
		return 0;
	}
	if (n - i >= 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o' || s[i + 1] == 'b')) {
		base = s[i + 1] == 'x' ? 16 : s[i + 1] == 'o' ? 8 : 2;
		if (i)
			return perr(p, off, "invalid integer '%s': no sign allowed with 0x, 0o or 0b", tok);
		j = i + 2;
		r = digit_run(s, n, &j, base);
		if (r < 0)
			return perr(p, off, "invalid integer '%s': '_' must sit between digits", tok);
		if (r == 0 || j != n)
			return perr(p, off, "invalid integer '%s': bad digit for base %d", tok, base);
		if (accumulate(s, i + 2, n, base, INT64_MAX, &u))
			return perr(p, off, "integer '%s' does not fit in 64 bits", tok);
		v->type = TOML_INTEGER;
		v->u.i = (int64_t)u;
		return 0;
	}
	j = i;
	r = digit_run(s, n, &j, 10);
	if (r < 0)
		return perr(p, off, "invalid number '%s': '_' must sit between digits", tok);
	if (r == 0)
		return perr(p, off, "invalid value '%s'", tok);
	if (j < n && (s[j] == '.' || s[j] == 'e' || s[j] == 'E'))
		return parse_float(p, v, off, s, n, tok);
	if (j != n)
		return perr(p, off, "invalid number '%s'", tok);
	if (s[i] == '0' && n - i > 1)
		return perr(p, off, "invalid integer '%s': leading zeros are not allowed", tok);
	if (accumulate(s, i, n, 10, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &u))
		return perr(p, off, "integer '%s' does not fit in 64 bits", tok);
	v->type = TOML_INTEGER;
	if (neg)
		v->u.i = u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
	else
		v->u.i = (int64_t)u;
	return 0;
}

/* A bare token: boolean, number or date/time. */
static int parse_token(struct parser *p, struct toml_value *v)
{
	size_t off = p->pos, n;
	const char *s = p->s + off;
	char tok[64], b[40];

	while (is_token(peek(p)))
		p->pos++;
	n = p->pos - off;
	/* "1979-05-27 07:32:00": a space may part the date from the time. */
	if (n == 10 && s[4] == '-' && all_digits(s, 4) && peek(p) == ' ' &&
	    is_digit(peek_at(p, p->pos + 1))) {
		p->pos++;
		while (is_token(peek(p)))
			p->pos++;
		n = p->pos - off;
	}
	if (n == 0)
		return perr(p, off, "expected a value, found %s", found(p, off, b, sizeof b));
	show(s, n, tok, sizeof tok);
	if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5))) {
		v->type = TOML_BOOLEAN;
		v->u.b = n == 4;
		return 0;
	}
	if ((n >= 5 && all_digits(s, 4) && s[4] == '-') || (n >= 3 && all_digits(s, 2) && s[2] == ':')) {
		if (check_datetime(p, off, s, n))
			return -1;
		v->type = TOML_DATETIME;
		return set_string(p, v, s, n);
	}
	if (is_digit((unsigned char)s[0]) || s[0] == '+' || s[0] == '-' ||
	    (n == 3 && (!memcmp(s, "inf", 3) || !memcmp(s, "nan", 3))))
		return parse_number(p, v, off, s, n);
	return perr(p, off, "invalid value '%s' (strings need quotes)", tok);
}

/* ---------- values ---------- */

static int parse_value(struct parser *p, int depth, struct toml_value **out);
static int keyval(struct parser *p, struct toml_value *t);

static int parse_array(struct parser *p, int depth, struct toml_value **out)
{
	struct toml_value *a = new_here(p, TOML_ARRAY, A_STATIC, depth), *v;
	char b[40];

	if (!a)
		return -1;
	p->pos++;
	for (;;) {
		if (skip_space(p))
			goto fail;
		if (peek(p) == ']')
			break;
		if (parse_value(p, depth + 1, &v) || array_add(p, a, v))
			goto fail;
		if (skip_space(p))
			goto fail;
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == ']')
			break;
		perr(p, p->pos, "expected ',' or ']' in an array, found %s", found(p, p->pos, b, sizeof b));
		goto fail;
	}
	p->pos++;
	*out = a;
	return 0;
fail:
	toml_free(a);
	return -1;
}

static int parse_inline_table(struct parser *p, int depth, struct toml_value **out)
{
	struct toml_value *t = new_here(p, TOML_TABLE, T_DOTTED, depth);
	char b[40];

	if (!t)
		return -1;
	p->pos++;
	skip_ws(p);
	if (peek(p) != '}') {
		for (;;) {
			if (peek(p) == '\n' || peek(p) == '\r') {
				perr(p, p->pos, "newline in an inline table (it must fit on one line)");
				goto fail;
			}
			if (keyval(p, t))
				goto fail;
			skip_ws(p);
			if (peek(p) == '}')
				break;
			if (peek(p) == ',') {
				p->pos++;
				skip_ws(p);
				if (peek(p) == '}') {
					perr(p, p->pos, "trailing comma in an inline table");
					goto fail;
				}
				continue;
			}
			if (peek(p) == '\n' || peek(p) == '\r')
				perr(p, p->pos, "newline in an inline table (it must fit on one line)");
			else
				perr(p, p->pos, "expected ',' or '}' in an inline table, found %s",
				    found(p, p->pos, b, sizeof b));
			goto fail;
		}
	}
	p->pos++;
	seal(t);
	*out = t;
	return 0;
fail:
	toml_free(t);
	return -1;
}

/* Any value at p->pos into *out, for a slot depth levels below the root. */
static int parse_value(struct parser *p, int depth, struct toml_value **out)
{
	struct toml_value *v;
	int c = peek(p);

	*out = NULL;
	if (c == '[')
		return parse_array(p, depth, out);
	if (c == '{')
		return parse_inline_table(p, depth, out);
	v = new_value(p, TOML_STRING);
	if (!v)
		return -1;
	if (c == '"' || c == '\'') {
		struct buf b = { 0 };

		if (parse_string(p, &b, 1)) {
			free(b.s);
			toml_free(v);
			return -1;
		}
		v->u.str.s = b.s;
		v->u.str.len = b.len;
	} else {
		v->type = TOML_BOOLEAN;	/* owns nothing until parse_token says */
		if (parse_token(p, v)) {
			toml_free(v);
			return -1;
		}
	}
	*out = v;
	return 0;
}

/* ---------- key/value pairs and headers ---------- */

/* Step into part i of a dotted key k inside t, making a table if needed. */
static struct toml_value *dotted_step(struct parser *p, struct toml_value *t, const struct key *k, int i)
{
	const struct key_part *kp = &k->part[i];
	struct toml_value *v = table_find(t, kp->s, kp->len);
	char name[256];

	if (!v) {
		v = new_table(p, T_DOTTED, t->depth + 1, kp);
		if (!v || table_add(p, t, kp, v))
			return NULL;
		return v;
	}
	if (v->type == TOML_TABLE && (v->kind == T_DOTTED || v->kind == T_IMPLICIT)) {
		v->kind = T_DOTTED;	/* defined now: no [header] for it later */
		return v;
	}
	key_show(k, i, name, sizeof name);
	if (v->type != TOML_TABLE)
		perr(p, kp->off, "cannot add keys to '%s': it is already %s %s", name,
		    v->type == TOML_INTEGER || v->type == TOML_ARRAY ? "an" : "a",
		    toml_type_name(v->type));
	else if (v->kind == T_INLINE)
		perr(p, kp->off, "cannot add keys to inline table '%s' after it is closed", name);
	else
		perr(p, kp->off, "cannot add keys to table '%s' with dotted keys: it has its own [header]",
		    name);
	return NULL;
}

/* key = value, into table t. */
static int keyval(struct parser *p, struct toml_value *t)
{
	struct key k;
	struct toml_value *v;
	char name[256], b[40];
	int i, rc = -1;

	if (parse_key(p, &k))
		goto out;
	if (peek(p) != '=') {
		perr(p, p->pos, "expected '=' after key '%s', found %s", key_show(&k, k.n - 1, name, sizeof name),
		    found(p, p->pos, b, sizeof b));
		goto out;
	}
	p->pos++;
	skip_ws(p);
	for (i = 0; i < k.n - 1; i++)
		if (!(t = dotted_step(p, t, &k, i)))
			goto out;
	if (table_find(t, k.part[i].s, k.part[i].len)) {
		perr(p, k.part[i].off, "duplicate key '%s'", key_show(&k, i, name, sizeof name));
		goto out;
	}
	if (parse_value(p, t->depth + 1, &v) || table_add(p, t, &k.part[i], v))
		goto out;
	rc = 0;
out:
	key_free(&k);
	return rc;
}

/* Step into part i of a [header] path, making an implicit table if needed;
 * an array of tables leads to its last element. */
static struct toml_value *header_step(struct parser *p, struct toml_value *t, const struct key *k, int i)
{
	const struct key_part *kp = &k->part[i];
	struct toml_value *v = table_find(t, kp->s, kp->len);
	char name[256];

	if (!v) {
		v = new_table(p, T_IMPLICIT, t->depth + 1, kp);
		if (!v || table_add(p, t, kp, v))
			return NULL;
		return v;
	}
	if (v->type == TOML_ARRAY && v->kind == A_TABLES)
		return v->u.arr.items[v->u.arr.len - 1];
	if (v->type == TOML_TABLE && v->kind != T_INLINE)
		return v;
	key_show(k, i, name, sizeof name);
	if (v->type == TOML_TABLE && v->kind == T_INLINE)
		perr(p, kp->off, "cannot add to inline table '%s' after it is closed", name);
	else
		perr(p, kp->off, "cannot use '%s' as a table: it is already %s %s", name,
		    v->type == TOML_INTEGER || v->type == TOML_ARRAY ? "an" : "a",
		    toml_type_name(v->type));
	return NULL;
}

/* Define the table named by the last part of k inside t. */
static struct toml_value *header_table(struct parser *p, struct toml_value *t, const struct key *k)
{
	const struct key_part *kp = &k->part[k->n - 1];
	struct toml_value *v = table_find(t, kp->s, kp->len);
	char name[256];

	if (!v) {
		v = new_table(p, T_HEADER, t->depth + 1, kp);
		if (!v || table_add(p, t, kp, v))
			return NULL;
		return v;
	}
	if (v->type == TOML_TABLE && v->kind == T_IMPLICIT) {
		v->kind = T_HEADER;
		v->line = kp->line;
		v->col = kp->col;
		return v;
	}
	key_show(k, k->n - 1, name, sizeof name);
	if (v->type == TOML_TABLE && v->kind == T_HEADER)
		perr(p, kp->off, "table [%s] is defined twice", name);
	else if (v->type == TOML_TABLE && v->kind == T_DOTTED)
		perr(p, kp->off, "table [%s] is already defined by dotted keys", name);
	else if (v->type == TOML_TABLE)
		perr(p, kp->off, "table [%s] is already defined as an inline table", name);
	else if (v->type == TOML_ARRAY && v->kind == A_TABLES)
		perr(p, kp->off, "cannot define table [%s]: it is an array of tables", name);
	else
		perr(p, kp->off, "cannot define table [%s]: the key already holds %s %s", name,
		    v->type == TOML_INTEGER || v->type == TOML_ARRAY ? "an" : "a", toml_type_name(v->type));
	return NULL;
}

/* Append a new table to the array of tables named by the last part of k. */
static struct toml_value *header_array(struct parser *p, struct toml_value *t, const struct key *k)
{
	const struct key_part *kp = &k->part[k->n - 1];
	struct toml_value *a = table_find(t, kp->s, kp->len), *v;
	char name[256];

	key_show(k, k->n - 1, name, sizeof name);
	if (!a) {
		a = new_container(p, TOML_ARRAY, A_TABLES, t->depth + 1, kp->off, kp->line, kp->col);
		if (!a || table_add(p, t, kp, a))
			return NULL;
	} else if (a->type == TOML_ARRAY && a->kind == A_STATIC) {
		perr(p, kp->off, "cannot append to static array '%s' with [[%s]]", name, name);
		return NULL;
	} else if (a->type != TOML_ARRAY) {
		perr(p, kp->off, "cannot define array of tables [[%s]]: the key already holds %s %s", name,
		    a->type == TOML_INTEGER ? "an" : "a", toml_type_name(a->type));
		return NULL;
	}
	v = new_table(p, T_HEADER, a->depth + 1, kp);
	if (!v || array_add(p, a, v))
		return NULL;
	return v;
}

/* [a.b] or [[a.b]] at p->pos; makes it the current table. */
static int header(struct parser *p)
{
	int aot = peek_at(p, p->pos + 1) == '[', i, rc = -1;
	struct toml_value *t = p->root;
	struct key k;
	char b[40];

	p->pos += aot ? 2 : 1;
	skip_ws(p);
	if (parse_key(p, &k))
		goto out;
	if (peek(p) != ']' || (aot && peek_at(p, p->pos + 1) != ']')) {
		perr(p, p->pos, "expected '%s' to close the table header, found %s", aot ? "]]" : "]",
		    found(p, p->pos, b, sizeof b));
		goto out;
	}
	p->pos += aot ? 2 : 1;
	for (i = 0; i < k.n - 1; i++)
		if (!(t = header_step(p, t, &k, i)))
			goto out;
	t = aot ? header_array(p, t, &k) : header_table(p, t, &k);
	if (!t)
		goto out;
	p->cur = t;
	rc = end_line(p, "a table header");
out:
	key_free(&k);
	return rc;
}

static int document(struct parser *p)
{
	/* A UTF-8 byte order mark is allowed before the document. */
	if (p->len >= 3 && !memcmp(p->s, "\xEF\xBB\xBF", 3))
		p->pos = 3;
	for (;;) {
		skip_ws(p);
		if (at_end(p))
			return 0;
		if (eat_newline(p))
			continue;
		if (peek(p) == '#') {
			if (end_line(p, "a comment"))
				return -1;
		} else if (peek(p) == '[') {
			if (header(p))
				return -1;
		} else if (keyval(p, p->cur) || end_line(p, "a key/value pair")) {
			return -1;
		}
	}
}

struct toml_value *toml_parse(const char *text, size_t len, struct gf_err *e)
{
	struct parser p = { .s = text, .len = len, .e = e, .at_line = 1, .at_col = 1 };

	if (len > TOML_MAX_SIZE) {
		gf_err_set(e, "document is too large: %zu bytes, the limit is %u", len, TOML_MAX_SIZE);
		return NULL;
	}
	if (check_utf8(&p))
		return NULL;
	p.root = new_container(&p, TOML_TABLE, T_HEADER, 0, 0, 1, 1);
	if (!p.root)
		return NULL;
	p.cur = p.root;
	if (document(&p)) {
		toml_free(p.root);
		return NULL;
	}
	return p.root;
}

/* ---------- reading the tree ---------- */

enum toml_type toml_type(const struct toml_value *v)
{
	return v->type;
}

const char *toml_type_name(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "string";
	case TOML_INTEGER: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOLEAN: return "boolean";
	case TOML_DATETIME: return "date-time";
	case TOML_ARRAY: return "array";
	case TOML_TABLE: return "table";
	}
	return "value";
}

int toml_line(const struct toml_value *v)
{
	return v ? v->line : 0;
}

int toml_col(const struct toml_value *v)
{
	return v ? v->col : 0;
}

static const struct toml_entry *entry(const struct toml_value *t, size_t i)
{
	if (!t || t->type != TOML_TABLE || i >= t->u.tab.len)
		return NULL;
	return &t->u.tab.ents[i];
}

size_t toml_table_len(const struct toml_value *t)
{
	return t && t->type == TOML_TABLE ? t->u.tab.len : 0;
}

const char *toml_table_key(const struct toml_value *t, size_t i)
{
	const struct toml_entry *en = entry(t, i);

	return en ? en->key : NULL;
}

size_t toml_table_key_len(const struct toml_value *t, size_t i)
{
	const struct toml_entry *en = entry(t, i);

	return en ? en->key_len : 0;
}

int toml_table_key_line(const struct toml_value *t, size_t i)
{
	const struct toml_entry *en = entry(t, i);

	return en ? en->line : 0;
}

int toml_table_key_col(const struct toml_value *t, size_t i)
{
	const struct toml_entry *en = entry(t, i);

	return en ? en->col : 0;
}

const struct toml_value *toml_table_at(const struct toml_value *t, size_t i)
{
	const struct toml_entry *en = entry(t, i);

	return en ? en->val : NULL;
}

const struct toml_value *toml_table_get(const struct toml_value *t, const char *key)
{
	if (!t || t->type != TOML_TABLE || !key)
		return NULL;
	return table_find(t, key, strlen(key));
}

size_t toml_array_len(const struct toml_value *a)
{
	return a && a->type == TOML_ARRAY ? a->u.arr.len : 0;
}

const struct toml_value *toml_array_at(const struct toml_value *a, size_t i)
{
	if (!a || a->type != TOML_ARRAY || i >= a->u.arr.len)
		return NULL;
	return a->u.arr.items[i];
}

const char *toml_string(const struct toml_value *v)
{
	return v && (v->type == TOML_STRING || v->type == TOML_DATETIME) ? v->u.str.s : NULL;
}

size_t toml_string_len(const struct toml_value *v)
{
	return v && (v->type == TOML_STRING || v->type == TOML_DATETIME) ? v->u.str.len : 0;
}

int64_t toml_integer(const struct toml_value *v)
{
	return v && v->type == TOML_INTEGER ? v->u.i : 0;
}

double toml_float(const struct toml_value *v)
{
	return v && v->type == TOML_FLOAT ? v->u.f : 0.0;
}

int toml_boolean(const struct toml_value *v)
{
	return v && v->type == TOML_BOOLEAN ? v->u.b : 0;
}
