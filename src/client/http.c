/* http.c — one HTTP/1.1 request to gflowd over its Unix socket, and the
 * JSON calls the commands make. */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "trace.h"
#include "util.h"

#define HTTP_TIMEOUT_SECS 60

int http_socket_path(char *buf, size_t size, struct gf_err *e)
{
	const char *s = getenv("GFLOW_SOCKET"), *rt = getenv("XDG_RUNTIME_DIR");
	int n;

	if (s && *s)
		n = snprintf(buf, size, "%s", s);
	else if (rt && *rt)
		n = snprintf(buf, size, "%s/gflow/gflowd.sock", rt);
	else
		n = snprintf(buf, size, "/tmp/gflow-%u/gflowd.sock",
		    (unsigned)getuid());
	if (n < 0 || (size_t)n >= size)
		return gf_err_set(e, "socket path is too long");
	return 0;
}

/* How much the client says on stderr about its talks with the daemon
 * (http_set_verbose). */
static int verbose;

void http_set_verbose(int level)
{
	verbose = level;
}

/* The socket a connection was made on (for "which daemon answered"). */
static char answered[4096];

const char *http_answered(void)
{
	return answered;
}

const char *daemon_answered(void)
{
	static char line[4200];
	char sys[4096];

	snprintf(line, sizeof line, "%s daemon, %s",
	    gf_system_socket(sys, sizeof sys) == 0 && !strcmp(sys, answered)
	    ? "system" : "personal", answered);
	return line;
}

static int connect_socket(const char *sock, struct gf_err *e);

/* May the user's own socket be spoken to? Its directory must be theirs
 * (anyone may make /tmp/gflow-<uid> first): 0 when so, 1 when it is not
 * there (no daemon), -1 with the refusal in e. */
static int own_socket_dir(const char *sock, struct gf_err *e)
{
	char dir[4096];
	struct gf_err why;
	int rc;

	if (gf_socket_dir(dir, sizeof dir, sock) < 0)
		return gf_err_set(e, "socket path is too long");
	rc = gf_private_dir(dir, &why);
	if (rc < 0)
		gf_err_set(e, "refusing %s: its directory %s", sock, why.msg);
	else if (rc > 0)
		gf_err_set(e, "gflowd is not running (no answer on %s); start it "
		    "with: gflowd up", sock);
	return rc;
}

/* The daemon to talk to: GFLOW_SOCKET when set; else the user's own
 * daemon when one answers, else the machine's system daemon. Every one is
 * verified before a byte is sent (connect_socket): a refused socket of
 * the user's own is said once and passed over for the system daemon. */
static int connect_daemon(struct gf_err *e)
{
	const char *forced = getenv("GFLOW_SOCKET");
	char mine[4096], sys[4096];
	struct gf_err refused;
	int fd = -1, own;

	if (http_socket_path(mine, sizeof mine, e) < 0)
		return -1;
	snprintf(answered, sizeof answered, "%s", mine);
	if (forced && *forced)
		return connect_socket(mine, e);
	own = own_socket_dir(mine, &refused);
	if (own == 0) {
		fd = connect_socket(mine, e);
		if (fd >= 0 || !strstr(e->msg, "is not running"))
			return fd;
	}
	if (gf_system_socket(sys, sizeof sys) < 0)
		return gf_err_set(e, "GFLOW_SYSTEM_ROOT is too long");
	fd = connect_socket(sys, e);
	if (fd < 0 && own < 0 && strstr(e->msg, "is not running")) {
		*e = refused;
		return -1;
	}
	if (fd < 0 && strstr(e->msg, "is not running"))
		return gf_err_set(e, "gflowd is not running: start your own with "
		    "'gflowd up', or ask an admin to start the machine's with "
		    "'gflowd up --system' (no answer on %s nor on %s)", mine,
		    sys);
	if (fd >= 0) {
		snprintf(answered, sizeof answered, "%s", sys);
		if (own < 0)
			fprintf(stderr, "%s: %s; the system daemon answers "
			    "instead\n", program_invocation_short_name,
			    refused.msg);
	}
	return fd;
}

/* A connection opened ahead by http_preconnect: taken by the next call to
 * the daemon, with the error it met if it failed. */
static struct {
	int open, fd;
	struct gf_err e;
} early = { 0, -1, { { 0 } } };

void http_preconnect(void)
{
	if (!early.open) {
		early.fd = connect_daemon(&early.e);
		early.open = 1;
	}
}

/* The daemon's connection: the one opened ahead, else a new one. */
static int daemon_fd(struct gf_err *e)
{
	if (!early.open)
		return connect_daemon(e);
	early.open = 0;
	if (early.fd < 0 && e)
		*e = early.e;
	return early.fd;
}

static int connect_socket_quiet(const char *sock, struct gf_err *e);

/* connect_socket_quiet, each try said on stderr at verbosity 2. */
static int connect_socket(const char *sock, struct gf_err *e)
{
	int fd = connect_socket_quiet(sock, e);

	if (verbose >= 2)
		fprintf(stderr, "%s: connect %s: %s\n", program_invocation_short_name, sock,
			fd >= 0 ? "connected" : e->msg);
	return fd;
}

static int connect_socket_quiet(const char *sock, struct gf_err *e)
{
	struct sockaddr_un sa;
	struct timeval tv = { HTTP_TIMEOUT_SECS, 0 };
	int fd;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof sa.sun_path)
		return gf_err_set(e, "socket path '%s' is too long (at most "
		    "%zu bytes)", sock, sizeof sa.sun_path - 1);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return gf_err_set(e, "cannot create a socket: %s",
		    strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int err = errno;

		if (err == EINTR)
			continue;
		close(fd);
		if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR)
			return gf_err_set(e, "gflowd is not running (no answer "
			    "on %s); start it with: gflowd up", sock);
		return gf_err_set(e, "cannot connect to gflowd at %s: %s",
		    sock, strerror(err));
	}
	/* Nothing goes to a server that is not the user's own or root's. */
	if (gf_peer_trusted(fd, sock, e) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n, struct gf_err *e)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return gf_err_set(e, "gflowd did not take the request "
			    "within %d s", HTTP_TIMEOUT_SECS);
		if (w < 0) {
			int err = errno;

			gf_err_set(e, "cannot send to gflowd: %s", strerror(err));
			/* Closed before it read: it may have said why. */
			return err == EPIPE || err == ECONNRESET ? -2 : -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Forward: helpers of the answer parser below. */
static const char *header_end(const char *raw, size_t n, size_t *body_at);
static const char *header_value(const char *h, const char *end,
    const char *name, size_t *len);
static int dechunk(const char *p, size_t n, struct sbuf *out,
    struct gf_err *e);

/* Has a whole answer arrived? Then there is no need to wait for the
 * daemon to close the connection. */
static int answer_complete(const char *raw, size_t n)
{
	const char *hend, *v;
	size_t body_at = 0, vlen = 0;
	struct sbuf scratch = { 0 };
	int done;

	hend = header_end(raw, n, &body_at);
	if (!hend)
		return 0;
	v = header_value(raw, hend, "Transfer-Encoding", &vlen);
	if (v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0) {
		/* cheap test first: the last chunk ends "0\r\n\r\n" */
		if (n - body_at < 5 || memcmp(raw + n - 5, "0\r\n\r\n", 5) != 0)
			return 0;
		done = dechunk(raw + body_at, n - body_at, &scratch, NULL) == 0;
		sbuf_free(&scratch);
		return done;
	}
	v = header_value(raw, hend, "Content-Length", &vlen);
	return v && n - body_at >= strtoull(v, NULL, 10);
}

static int recv_all(int fd, struct sbuf *b, struct gf_err *e)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = recv(fd, chunk, sizeof chunk, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return gf_err_set(e, "gflowd did not answer within "
			    "%d s", HTTP_TIMEOUT_SECS);
		if (n < 0 && errno == ECONNRESET && b->len > 0)
			return 0;
		if (n < 0)
			return gf_err_set(e, "cannot read gflowd's answer: %s",
			    strerror(errno));
		if (n == 0)
			return 0;
		sbuf_add(b, chunk, (size_t)n);
		if (answer_complete(b->p, b->len))
			return 0;
	}
}

int http_request(const char *sock, const char *method, const char *target,
    const char *body, size_t body_len, struct http_resp *out,
    struct gf_err *e)
{
	struct sbuf req = { 0 }, raw = { 0 };
	struct timespec t0, t1;
	int fd, rc;

	memset(out, 0, sizeof *out);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = sock ? connect_socket(sock, e) : daemon_fd(e);
	if (fd < 0)
		return -1;
	sbuf_addf(&req, "%s %s HTTP/1.1\r\nHost: gflowd\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n", method, target,
	    body ? body_len : 0);
	if (body)
		sbuf_adds(&req, "Content-Type: application/json\r\n");
	sbuf_adds(&req, "\r\n");
	if (body)
		sbuf_add(&req, body, body_len);
	rc = send_all(fd, req.p, req.len, e);
	sbuf_free(&req);
	gf_trace("client_send", 0);	/* gbatch's, when traced (trace.h) */
	if (rc == 0)
		rc = recv_all(fd, &raw, e);
	else if (rc == -2) {
		/* A daemon that refuses a connection (too many of the user's)
		 * answers one line and closes it, maybe before the request came:
		 * that line is the answer. */
		struct gf_err ignored;

		rc = recv_all(fd, &raw, &ignored) == 0 && raw.len > 0 ? 0 : -1;
	}
	close(fd);
	if (rc == 0)
		rc = http_parse_response(sbuf_str(&raw), raw.len, out, e);
	if (verbose >= 1) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (rc == 0)
			fprintf(stderr, "%s: %s %s: %d, %zu bytes in %.1f ms from %s\n",
				program_invocation_short_name, method, target, out->status, out->len,
				(double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
				sock ? sock : daemon_answered());
		else
			fprintf(stderr, "%s: %s %s: %s\n", program_invocation_short_name, method, target,
				e->msg);
	}
	sbuf_free(&raw);
	return rc;
}

void http_resp_free(struct http_resp *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

/* Find the end of the header block; *body_at is where the body starts. */
static const char *header_end(const char *raw, size_t n, size_t *body_at)
{
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if (raw[i] == '\n' && raw[i + 1] == '\n') {
			*body_at = i + 2;
			return raw + i;
		}
		if (i + 3 < n && memcmp(raw + i, "\r\n\r\n", 4) == 0) {
			*body_at = i + 4;
			return raw + i;
		}
	}
	return NULL;
}

/* Value of header `name` within [h, end), or NULL; *len is its length. */
static const char *header_value(const char *h, const char *end,
    const char *name, size_t *len)
{
	size_t nl = strlen(name);

	while (h < end) {
		const char *eol = memchr(h, '\n', (size_t)(end - h));
		const char *le = eol ? eol : end;

		if ((size_t)(le - h) > nl && strncasecmp(h, name, nl) == 0 &&
		    h[nl] == ':') {
			const char *v = h + nl + 1;

			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			while (le > v && isspace((unsigned char)le[-1]))
				le--;
			*len = (size_t)(le - v);
			return v;
		}
		h = eol ? eol + 1 : end;
	}
	return NULL;
}

static int dechunk(const char *p, size_t n, struct sbuf *out,
    struct gf_err *e)
{
	size_t i = 0;

	for (;;) {
		char *endp;
		unsigned long long sz;
		const char *eol = memchr(p + i, '\n', n - i);

		if (!eol)
			return gf_err_set(e, "gflowd's answer is cut short");
		sz = strtoull(p + i, &endp, 16);
		if (endp == p + i)
			return gf_err_set(e, "gflowd's answer has a bad chunk");
		i = (size_t)(eol - p) + 1;
		if (sz == 0)
			return 0;
		if (sz > n - i)
			return gf_err_set(e, "gflowd's answer is cut short");
		sbuf_add(out, p + i, (size_t)sz);
		i += (size_t)sz;
		if (i < n && p[i] == '\r')
			i++;
		if (i < n && p[i] == '\n')
			i++;
	}
}

int http_parse_response(const char *raw, size_t n, struct http_resp *out,
    struct gf_err *e)
{
	struct sbuf body = { 0 };
	const char *hend, *v, *sp;
	size_t body_at = 0, vlen = 0;
	int status;

	memset(out, 0, sizeof *out);
	if (n == 0)
		return gf_err_set(e, "gflowd closed the connection without "
		    "answering");
	hend = header_end(raw, n, &body_at);
	if (!hend || n < 12 || strncmp(raw, "HTTP/1.", 7) != 0)
		return gf_err_set(e, "gflowd sent an answer that is not HTTP");
	sp = memchr(raw, ' ', (size_t)(hend - raw));
	if (!sp || !isdigit((unsigned char)sp[1]))
		return gf_err_set(e, "gflowd sent a bad status line");
	status = atoi(sp + 1);
	v = header_value(raw, hend, "Transfer-Encoding", &vlen);
	if (v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0) {
		if (dechunk(raw + body_at, n - body_at, &body, e) < 0) {
			sbuf_free(&body);
			return -1;
		}
	} else {
		size_t have = n - body_at;

		v = header_value(raw, hend, "Content-Length", &vlen);
		if (v) {
			unsigned long long cl = strtoull(v, NULL, 10);

			if (cl > have)
				return gf_err_set(e, "gflowd's answer is cut "
				    "short (%zu of %llu bytes)", have, cl);
			have = (size_t)cl;
		}
		sbuf_add(&body, raw + body_at, have);
	}
	out->status = status;
	out->len = body.len;
	out->body = sbuf_take(&body);
	return 0;
}

json_t *api_call(const char *method, const char *target, const json_t *body,
    struct gf_err *e)
{
	struct http_resp r;
	char *text = NULL;
	json_error_t je;
	json_t *j;
	int rc;

	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			gf_err_set(e, "cannot encode the request");
			return NULL;
		}
	}
	rc = http_request(NULL, method, target, text, text ? strlen(text) : 0,
	    &r, e);
	free(text);
	if (rc < 0)
		return NULL;
	j = json_loadb(r.body, r.len, 0, &je);
	if (r.status < 200 || r.status > 299) {
		const char *msg = jstr(j, "error");

		if (msg)
			gf_err_set(e, "%s", msg);
		else
			gf_err_set(e, "gflowd answered %d to %s %s", r.status,
			    method, target);
		json_decref(j);
		http_resp_free(&r);
		return NULL;
	}
	http_resp_free(&r);
	if (!json_is_object(j)) {
		json_decref(j);
		gf_err_set(e, "gflowd sent an answer that is not a JSON object");
		return NULL;
	}
	return j;
}

json_t *api_get(const char *target, struct gf_err *e)
{
	return api_call("GET", target, NULL, e);
}

json_t *api_post(const char *target, const json_t *body, struct gf_err *e)
{
	return api_call("POST", target, body, e);
}

/* ---- an answer read as it arrives (api_get_stream) ---------------------- */

struct feed {
	int (*body)(const char *p, size_t n, void *arg);
	void *arg;
	int chunked, done;
	unsigned long long left;	/* chunk bytes, or Content-Length left */
	int have_length;
	enum { C_SIZE, C_DATA, C_CR, C_LF } cs;
	char line[40];
	size_t linelen;
};

/* Body bytes of a 2xx answer: dechunked and handed on. */
static int feed_body(struct feed *f, const char *p, size_t n, struct gf_err *e)
{
	int rc;

	if (!f->chunked) {
		if (f->have_length && n > f->left)
			n = (size_t)f->left;
		if (n && (rc = f->body(p, n, f->arg)) != 0) {
			f->done = 1;	/* > 0: the caller has read enough */
			return rc < 0 ? -1 : 0;
		}
		f->left -= f->have_length ? n : 0;
		f->done = f->have_length && f->left == 0;
		return 0;
	}
	while (n && !f->done) {
		size_t k;

		switch (f->cs) {
		case C_SIZE:
			if (*p != '\n') {
				if (f->linelen < sizeof f->line - 1)
					f->line[f->linelen++] = *p;
				p++, n--;
				break;
			}
			p++, n--;
			f->line[f->linelen] = '\0';
			{
				char *end;

				f->left = strtoull(f->line, &end, 16);
				if (end == f->line)
					return gf_err_set(e, "gflowd's answer has "
					    "a bad chunk");
			}
			f->linelen = 0;
			if (f->left == 0)
				f->done = 1;
			else
				f->cs = C_DATA;
			break;
		case C_DATA:
			k = n < f->left ? n : (size_t)f->left;
			if ((rc = f->body(p, k, f->arg)) != 0) {
				f->done = 1;
				return rc < 0 ? -1 : 0;
			}
			p += k, n -= k;
			if ((f->left -= k) == 0)
				f->cs = C_CR;
			break;
		case C_CR:
			if (*p == '\r')
				p++, n--;
			f->cs = C_LF;
			break;
		case C_LF:
			if (*p == '\n')
				p++, n--;
			f->cs = C_SIZE;
			break;
		}
	}
	return 0;
}

static int read_more(int fd, char *buf, size_t size, ssize_t *got,
    struct gf_err *e)
{
	for (;;) {
		ssize_t n = recv(fd, buf, size, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return gf_err_set(e, "gflowd did not answer within "
			    "%d s", HTTP_TIMEOUT_SECS);
		if (n < 0 && errno == ECONNRESET)
			n = 0;
		if (n < 0)
			return gf_err_set(e, "cannot read gflowd's answer: %s",
			    strerror(errno));
		*got = n;
		return 0;
	}
}

/* Not a 2xx: the whole answer, and its {"error"} as the message. */
static int answer_error(int fd, struct sbuf *raw, const char *target,
    struct gf_err *e)
{
	struct http_resp r;
	json_error_t je;
	const char *msg;
	json_t *j;

	if (!answer_complete(raw->p, raw->len) && recv_all(fd, raw, e) < 0)
		return -1;
	if (http_parse_response(raw->p, raw->len, &r, e) < 0)
		return -1;
	j = json_loadb(r.body, r.len, 0, &je);
	msg = jstr(j, "error");
	if (msg)
		gf_err_set(e, "%s", msg);
	else
		gf_err_set(e, "gflowd answered %d to GET %s", r.status, target);
	json_decref(j);
	http_resp_free(&r);
	return -1;
}

int api_get_stream(const char *target,
    int (*body)(const char *p, size_t n, void *arg), void *arg,
    struct gf_err *e)
{
	static char chunk[65536];
	struct feed f = { body, arg, 0, 0, 0, 0, C_SIZE, "", 0 };
	struct sbuf raw = { 0 };
	const char *hend, *v, *sp;
	size_t body_at = 0, vlen = 0;
	int fd, rc = -1, status;
	ssize_t n;

	if ((fd = daemon_fd(e)) < 0)
		return -1;
	sbuf_addf(&raw, "GET %s HTTP/1.1\r\nHost: gflowd\r\nConnection: "
	    "close\r\nContent-Length: 0\r\n\r\n", target);
	if (send_all(fd, raw.p, raw.len, e) == -1)
		goto out;	/* (-2: closed before it read; its answer is read) */
	raw.len = 0;
	while (!(hend = header_end(raw.p, raw.len, &body_at))) {
		if (read_more(fd, chunk, sizeof chunk, &n, e) < 0)
			goto out;
		if (n == 0) {
			http_parse_response(raw.p, raw.len, &(struct http_resp){ 0 }, e);
			if (!raw.len)
				gf_err_set(e, "gflowd closed the connection "
				    "without answering");
			goto out;
		}
		sbuf_add(&raw, chunk, (size_t)n);
	}
	if (raw.len < 12 || strncmp(raw.p, "HTTP/1.", 7) != 0) {
		gf_err_set(e, "gflowd sent an answer that is not HTTP");
		goto out;
	}
	sp = memchr(raw.p, ' ', (size_t)(hend - raw.p));
	if (!sp || !isdigit((unsigned char)sp[1])) {
		gf_err_set(e, "gflowd sent a bad status line");
		goto out;
	}
	status = atoi(sp + 1);
	if (status < 200 || status > 299) {
		rc = answer_error(fd, &raw, target, e);
		goto out;
	}
	v = header_value(raw.p, hend, "Transfer-Encoding", &vlen);
	f.chunked = v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0;
	if (!f.chunked && (v = header_value(raw.p, hend, "Content-Length",
	    &vlen))) {
		f.have_length = 1;
		f.left = strtoull(v, NULL, 10);
		f.done = f.left == 0;
	}
	if (feed_body(&f, raw.p + body_at, raw.len - body_at, e) < 0)
		goto out;
	while (!f.done) {
		if (read_more(fd, chunk, sizeof chunk, &n, e) < 0)
			goto out;
		if (n == 0) {
			if (f.chunked || f.have_length) {
				gf_err_set(e, "gflowd's answer is cut short");
				goto out;
			}
			break;	/* the answer ends with the connection */
		}
		if (feed_body(&f, chunk, (size_t)n, e) < 0)
			goto out;
	}
	rc = 0;
out:
	sbuf_free(&raw);
	close(fd);
	return rc;
}
