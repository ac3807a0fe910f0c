/* joblog.c — GET /jobs/<id>/log?tail=BYTES: the end of a job's log, or
 * ?offset=N[&bytes=M]: the part from byte N on (a reader that resumes where
 * it stopped: gflow mcp's get_job_log), for its owner or an admin (the
 * dashboard's log view; docs/api.md).
 *
 * In system mode the log is in the owner's home and the daemon is root, so
 * the file is opened without following a symlink (O_NOFOLLOW), without
 * blocking on a FIFO (O_NONBLOCK), and read only when it is a regular file
 * that belongs to the job's owner: a link a user planted cannot make the
 * daemon read a file of someone else. Logs in the daemon's own logs/
 * directory are opened through its directory fd. */
#include "api.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAIL_DEFAULT (64 * 1024)
#define TAIL_MAX (4 * 1024 * 1024)

/* What a request asks for: the last `tail` bytes (offset < 0), or at most
 * `bytes` bytes from byte `offset` on. */
struct logq {
	long long tail, offset, bytes;
};

static int number(const struct evkeyval *p, long long lo, long long hi, const char *what, long long *out,
		  struct gf_err *e)
{
	char *end;

	errno = 0;
	*out = strtoll(p->value, &end, 10);
	if (errno || *end || end == p->value || *out < lo || *out > hi)
		return gf_err_set(e, "'%s' must be %s from %lld to %lld, got '%.40s'", p->key, what, lo, hi,
				  p->value);
	return 0;
}

/* ?tail=BYTES (1 to TAIL_MAX; default TAIL_DEFAULT), or ?offset=N (0 or
 * more) with bytes=M (1 to TAIL_MAX; default TAIL_DEFAULT); anything else,
 * a key twice or tail with offset is refused. */
static int parse_query(struct evhttp_request *req, struct logq *lq, struct gf_err *e)
{
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq kv = { 0 };
	struct evkeyval *p;
	bool seen[3] = { false, false, false };
	int rc = 0;

	lq->tail = lq->bytes = TAIL_DEFAULT;
	lq->offset = -1;
	if (!q || !*q)
		return 0;
	if (evhttp_parse_query_str(q, &kv))
		return gf_err_set(e, "the query string cannot be decoded");
	for (p = kv.tqh_first; p && !rc; p = p->next.tqe_next) {
		int k = !strcmp(p->key, "tail") ? 0 : !strcmp(p->key, "offset") ? 1 : !strcmp(p->key, "bytes") ? 2 : -1;

		if (k < 0)
			rc = gf_err_set(e, "unknown query parameter '%.80s' (known: tail, offset, bytes)", p->key);
		else if (seen[k])
			rc = gf_err_set(e, "'%s' is given twice", p->key);
		else if (k == 0)
			rc = number(p, 1, TAIL_MAX, "a number of bytes", &lq->tail, e);
		else if (k == 1)
			rc = number(p, 0, INT64_MAX / 2, "a byte offset", &lq->offset, e);
		else
			rc = number(p, 1, TAIL_MAX, "a number of bytes", &lq->bytes, e);
		if (k >= 0)
			seen[k] = true;
	}
	if (!rc && seen[0] && (seen[1] || seen[2]))
		rc = gf_err_set(e, "'tail' (the end) and 'offset'/'bytes' (a part from an offset) exclude each other");
	if (!rc && seen[2] && !seen[1])
		rc = gf_err_set(e, "'bytes' needs 'offset' (the byte to start at); 'tail' asks for the end");
	evhttp_clear_headers(&kv);
	return rc;
}

/* The job's log, opened safely: fd, or -1 with code and e set. */
static int open_log(struct server *s, const struct job *j, struct stat *st, int *code, struct gf_err *e)
{
	char path[GF_PATH_MAX], name[64];
	int fd;

	jobs_log_path(s, j, path, sizeof path);
	jobs_log_name(j, jm(j)->log_seq, name, sizeof name);
	if (jm(j)->log_dir)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	else
		fd = openat(s->log_dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		*code = errno == ENOENT ? 404 : 403;
		if (errno == ENOENT)
			return gf_err_set(e, "job %lld has no log (yet): %s does not exist", (long long)j->id, path);
		if (errno == ELOOP)
			return gf_err_set(e, "job %lld's log %s is a symbolic link: not read", (long long)j->id, path);
		return gf_err_set(e, "cannot open job %lld's log %s: %s", (long long)j->id, path, strerror(errno));
	}
	*code = 403;
	if (fstat(fd, st) < 0)
		gf_err_set(e, "cannot stat job %lld's log %s: %s", (long long)j->id, path, strerror(errno));
	else if (!S_ISREG(st->st_mode))
		gf_err_set(e, "job %lld's log %s is not a regular file: not read", (long long)j->id, path);
	else if (st->st_uid != j->uid)
		gf_err_set(e, "job %lld's log %s does not belong to the job's owner (uid %u, the file's %u): not read",
			   (long long)j->id, path, (unsigned)j->uid, (unsigned)st->st_uid);
	else
		return fd;
	close(fd);
	return -1;
}

void joblog_get(struct server *s, struct evhttp_request *req, uid_t uid, bool admin, const char *rest)
{
	char *end, msg[600], num[32];
	long long id = strtoll(rest, &end, 10);
	struct logq lq;
	struct job *j = end == rest || strcmp(end, "/log") ? NULL : jobs_get(s, id);
	struct evbuffer *b;
	struct stat st;
	struct gf_err e;
	off_t from, to;
	char *data;
	size_t got = 0;
	int fd, code;

	if (end == rest || strcmp(end, "/log")) {
		snprintf(msg, sizeof msg, "no such endpoint: GET /jobs/%s", rest);
		api_reply_err(req, 404, "%s", msg);
		return;
	}
	if (!j) {
		snprintf(msg, sizeof msg, "job %lld does not exist", id);
		api_reply_err(req, 404, "%s", msg);
		return;
	}
	if (parse_query(req, &lq, &e)) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (!auth_sees_all(s, j, uid, admin)) {
		const char *who = j->user ? j->user : "another user";

		snprintf(msg, sizeof msg, "job %lld belongs to %s; only %s or an admin may read its log%s", id, who,
			 who, uid == (uid_t)-1 ? " (over TCP, send 'Authorization: Bearer <token>')" : "");
		api_reply_err(req, 403, "%s", msg);
		return;
	}
	if ((fd = open_log(s, j, &st, &code, &e)) < 0) {
		api_reply_err(req, code, "%s", e.msg);
		return;
	}
	if (lq.offset > (long long)st.st_size) {
		close(fd);
		api_reply_err(req, 416, "'offset' %lld is past the end of job %lld's log (%lld bytes)", lq.offset, id,
			      (long long)st.st_size);
		return;
	}
	if (lq.offset >= 0)
		from = (off_t)lq.offset, to = st.st_size - from > lq.bytes ? from + (off_t)lq.bytes : st.st_size;
	else
		from = st.st_size > lq.tail ? st.st_size - (off_t)lq.tail : 0, to = st.st_size;
	/* Read now what is there now (at most TAIL_MAX bytes): the file may
	 * grow or shrink meanwhile. */
	data = malloc((size_t)(to - from) + 1);
	if (!data)
		abort();
	for (size_t want = (size_t)(to - from); got < want;) {
		ssize_t r = pread(fd, data + got, want - got, from + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	b = evbuffer_new();
	evbuffer_add(b, data, got);
	free(data);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
	snprintf(num, sizeof num, "%lld", (long long)st.st_size);
	evhttp_add_header(evhttp_request_get_output_headers(req), "X-Gflow-Log-Size", num);
	snprintf(num, sizeof num, "%lld", (long long)from);
	evhttp_add_header(evhttp_request_get_output_headers(req), "X-Gflow-Log-Offset", num);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}
