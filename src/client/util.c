/* util.c — allocation, string buffers, JSON getters, job references and
 * the one place the client starts helper programs (tmux). */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void out_of_memory(void)
{
	fputs("gflow: out of memory\n", stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory();
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* ---------- string buffer ---------- */

void sbuf_grow(struct sbuf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (b->cap < 64)
		b->cap = 64;
	while (b->cap < need)
		b->cap *= 2;
	b->p = xrealloc(b->p, b->cap);
}

void sbuf_adds(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if ((size_t)n < sizeof small) {
		sbuf_add(b, small, (size_t)n);
		return;
	}
	sbuf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *sbuf_str(const struct sbuf *b)
{
	return b->p ? b->p : "";
}

char *sbuf_take(struct sbuf *b)
{
	char *p = b->p ? b->p : xstrdup("");

	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void sbuf_free(struct sbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* ---------- URLs ---------- */

void url_encode(struct sbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || strchr("-._~@,:", c)) {
			sbuf_addc(b, (char)c);
		} else {
			sbuf_addc(b, '%');
			sbuf_addc(b, hex[c >> 4]);
			sbuf_addc(b, hex[c & 15]);
		}
	}
}

void url_add_param(struct sbuf *q, const char *key, const char *value)
{
	sbuf_addc(q, q->len && strchr(q->p, '?') ? '&' : '?');
	sbuf_adds(q, key);
	sbuf_addc(q, '=');
	url_encode(q, value);
}

/* ---------- JSON getters ---------- */

const char *jstr(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int jhas(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return v && !json_is_null(v);
}

int64_t jint(const json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return dflt;
}

double jnum(const json_t *o, const char *key, double dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

int jbool(const json_t *o, const char *key, int dflt)
{
	json_t *v = json_object_get(o, key);

	if (json_is_boolean(v))
		return json_is_true(v);
	if (json_is_integer(v))
		return json_integer_value(v) != 0;
	return dflt;
}

/* ---------- job references ---------- */

json_t *jobref_json(const struct gf_jobref *r)
{
	char buf[32];

	if (!r->is_relative)
		return json_integer((json_int_t)r->id);
	if (r->back == 0)
		return json_string("@");
	snprintf(buf, sizeof buf, "@~%lld", (long long)r->back);
	return json_string(buf);
}

json_t *jobref_list_json(const char *s, struct gf_err *e)
{
	struct gf_jobref_list l = { 0 };
	json_t *a;
	size_t i;

	if (gf_parse_jobref_list(s, &l, e) < 0)
		return NULL;
	a = json_array();
	for (i = 0; i < l.n; i++)
		json_array_append_new(a, jobref_json(&l.v[i]));
	gf_jobref_list_free(&l);
	return a;
}

/* ---------- helper programs ---------- */

int run_capture(char *const argv[], char **out, int *status,
    struct gf_err *e)
{
	posix_spawn_file_actions_t fa;
	struct sbuf b = { 0 };
	char chunk[4096];
	int fds[2], rc, ws;
	pid_t pid;
	ssize_t n;

	*out = NULL;
	*status = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return gf_err_set(e, "cannot create a pipe: %s",
		    strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return gf_err_set(e, "cannot run %s: %s", argv[0],
		    strerror(rc));
	}
	for (;;) {
		n = read(fds[0], chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sbuf_add(&b, chunk, (size_t)n);
	}
	close(fds[0]);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	*out = sbuf_take(&b);
	return 0;
}

char **tmux_session_names(const char *socket, size_t *n)
{
	char *with[] = { "tmux", "-S", (char *)socket, "list-sessions", "-F",
		"#{session_name}", NULL };
	char *without[] = { "tmux", "list-sessions", "-F", "#{session_name}",
		NULL };
	char **argv = socket ? with : without;
	char **v = NULL, *out = NULL, *line, *save = NULL;
	size_t cap = 0;
	int status;

	*n = 0;
	if (run_capture(argv, &out, &status, NULL) < 0 || status != 0) {
		free(out);
		return NULL;
	}
	for (line = strtok_r(out, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, cap * sizeof *v);
		}
		v[(*n)++] = xstrdup(line);
	}
	free(out);
	return v;
}

int strv_contains(char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

void strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int read_file(const char *path, size_t max, char **buf, size_t *len,
    int *truncated, struct gf_err *e)
{
	struct sbuf b = { 0 };
	char chunk[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*buf = NULL;
	*len = 0;
	if (truncated)
		*truncated = 0;
	if (fd < 0)
		return gf_err_set(e, "cannot open '%s': %s", path,
		    strerror(errno));
	while (b.len < max) {
		size_t want = max - b.len < sizeof chunk ? max - b.len :
		    sizeof chunk;
		ssize_t n = read(fd, chunk, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			close(fd);
			sbuf_free(&b);
			return gf_err_set(e, "cannot read '%s': %s", path,
			    strerror(err));
		}
		if (n == 0)
			break;
		sbuf_add(&b, chunk, (size_t)n);
	}
	if (truncated && b.len >= max && read(fd, chunk, 1) > 0)
		*truncated = 1;
	close(fd);
	*len = b.len;
	*buf = sbuf_take(&b);
	return 0;
}

int word_in_list(const char *s, const char *list)
{
	size_t len = strlen(s);
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t wl = end ? (size_t)(end - p) : strlen(p);

		if (wl == len && strncasecmp(p, s, len) == 0)
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

char *path_in_dir(const char *cwd, const char *path)
{
	struct sbuf b = { 0 };

	if (path[0] == '/' || !cwd)
		return xstrdup(path);
	sbuf_adds(&b, cwd);
	if (b.len && b.p[b.len - 1] != '/')
		sbuf_addc(&b, '/');
	sbuf_adds(&b, path);
	return sbuf_take(&b);
}
