/* configint.h — what the files of the config reader share (config.c the
 * settings, the file and the environment; configval.c one value read as a
 * type; confignotify.c the notification targets; configcluster.c the
 * Slurm clusters). Not for other files: config.h is the interface. */
#ifndef GF_CONFIGINT_H
#define GF_CONFIGINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "toml.h"

/* A value: a node of the file, or the text of an environment variable.
 * A setter that fails may say which part of the value is wrong. */
struct src {
	const struct toml_value *v;	/* from the file, or */
	const char *env;		/* from the environment */
	const struct toml_value *at;	/* the element an error is about */
	int line, col;			/* or this position (a key) */
};

/* The file being walked into c; errors go to e. */
struct loader {
	struct gf_config *c;
	const char *path;
	struct gf_err *e;
};

/* ---- configval.c ---- */

/* strdup, or NULL with e set ("out of memory"). */
char *cfg_strdup(const char *s, struct gf_err *e);
void cfg_free_strv(char **v, size_t n);
/* Letters, digits, '_' and '-' only (a bare TOML key), not empty. */
int cfg_is_bare(const char *s);
/* s as a TOML key part: bare, or quoted. */
void cfg_name_show(const char *s, char *out, size_t size);
/* "expected <what>, got <the value>" in e; returns -1. */
int cfg_expected(const struct src *s, const char *what, struct gf_err *e);
/* Key i of t, or NULL when it holds a NUL byte (no gflow key does). */
const char *cfg_key_at(const struct toml_value *t, size_t i);
/* A string value without NUL bytes, or NULL. */
const char *cfg_plain_string(const struct toml_value *v);

/* Setters: 0, or -1 with e set (and s->at, s->line where the error is). */
int cfg_get_string(struct src *s, char **out, struct gf_err *e);
/* An integer min..max; what names the range in the message (NULL: say it). */
int cfg_get_int(struct src *s, int64_t min, int64_t max, const char *what, int64_t *out,
    struct gf_err *e);
int cfg_get_bool(struct src *s, int *out, struct gf_err *e);
/* One of names[0..n), as its index. The environment may use any case. */
int cfg_get_choice(struct src *s, const char *const *names, size_t n, int *out, struct gf_err *e);
/* s[0..len) appended to the list *v of *n. */
int cfg_strlist_push(char ***v, size_t *n, const char *s, size_t len, struct gf_err *e);
/* An array of strings, or in the environment a comma-separated list. */
int cfg_get_strlist(struct src *s, char ***out, size_t *nout, struct gf_err *e);

/* Where a setter's error points: the value, or a part of it. */
const struct toml_value *cfg_src_node(const struct src *s);
/* "<path>: line L, column C: " before the message in L->e, for a node,
 * where a setter's error points, or key i of table t; return -1. */
int cfg_at(struct loader *L, const struct toml_value *v);
int cfg_at_src(struct loader *L, const struct src *s);
int cfg_at_key(struct loader *L, const struct toml_value *t, size_t i);

/* ---- confignotify.c ---- */

/* [[notifications.webhooks]] (webhooks) or [[notifications.emails]]: the
 * whole array, which replaces c's. */
int cfg_get_targets(struct src *s, struct gf_config *c, bool webhooks, struct gf_err *e);
void cfg_free_webhooks(struct gf_webhook *w, size_t n);
void cfg_free_emails(struct gf_email *m, size_t n);

/* ---- configcluster.c ---- */

/* [clusters]: one table per cluster name, appended to L->c->clusters. */
int cfg_walk_clusters(struct loader *L, const struct toml_value *t);
void cfg_free_cluster(struct gf_cluster *k);

#endif
