/* util.h — small helpers the client programs share: allocation that exits
 * on failure, a growable string buffer, tolerant getters for daemon JSON,
 * job references to JSON, and running helper programs (tmux) without a
 * shell. */
#ifndef GF_CLIENT_UTIL_H
#define GF_CLIENT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jsonapi.h"

#include "err.h"
#include "parse.h"

/* Allocation: a client that cannot allocate prints one line and exits 1. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* A growable NUL-terminated buffer; zero-initialise it. */
struct sbuf {
	char *p;
	size_t len, cap;
};
/* Room for n more bytes and the NUL after them. */
void sbuf_grow(struct sbuf *b, size_t n);
/* Inline: a long listing adds its bytes a few at a time, by the million. */
static inline void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
		sbuf_grow(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}
static inline void sbuf_addc(struct sbuf *b, char c)
{
	if (b->len + 2 > b->cap)
		sbuf_grow(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The text so far ("" when empty); stays owned by b. */
const char *sbuf_str(const struct sbuf *b);
/* Hand the text to the caller (never NULL) and reset b. */
char *sbuf_take(struct sbuf *b);
void sbuf_free(struct sbuf *b);

/* Append "?key=value" (or "&key=value" once the buffer holds a '?') to a
 * path or query, percent-encoding the value. */
void url_add_param(struct sbuf *q, const char *key, const char *value);
/* Percent-encode one path segment or query value. */
void url_encode(struct sbuf *b, const char *s);

/* Getters that tolerate absent fields, nulls and int/real mix-ups. */
const char *jstr(const json_t *o, const char *key);   /* NULL if not a string */
int jhas(const json_t *o, const char *key);           /* present and not null */
int64_t jint(const json_t *o, const char *key, int64_t dflt);
double jnum(const json_t *o, const char *key, double dflt);
int jbool(const json_t *o, const char *key, int dflt);

/* A job reference as the API wants it: an integer id, or "@" / "@~N". */
json_t *jobref_json(const struct gf_jobref *r);
/* Parse an ID list ("1,3-5,@") into a JSON array of references. */
json_t *jobref_list_json(const char *s, struct gf_err *e);

/* Run argv (argv[0] looked up in PATH, no shell), stdin and stderr on
 * /dev/null; its stdout is returned in *out (malloc'd, may be NULL) and its
 * exit status (or -1 when it could not start) in *status. Returns 0, or -1
 * with e set when it could not be run at all. */
int run_capture(char *const argv[], char **out, int *status,
    struct gf_err *e);

/* Names of the live tmux sessions of the calling user's tmux server;
 * an empty list when tmux is missing or no server runs. Free with
 * strv_free(). */
/* Sessions alive on the tmux server of `socket` (NULL: the default one). */
char **tmux_session_names(const char *socket, size_t *n);
int strv_contains(char *const *v, size_t n, const char *s);
void strv_free(char **v, size_t n);

/* Read at most `max` bytes of a file into a malloc'd NUL-terminated
 * buffer (*len without the NUL); *truncated says whether more was there. */
int read_file(const char *path, size_t max, char **buf, size_t *len,
    int *truncated, struct gf_err *e);

/* path relative to the directory cwd (absolute), malloc'd; an absolute
 * path, or any path when cwd is NULL, as it is. */
char *path_in_dir(const char *cwd, const char *path);

/* Case-insensitive "is s one of the comma-separated words in list". */
int word_in_list(const char *s, const char *list);

#endif
