/* reply.c — the API's answers: a JSON document (from jansson or from a
 * jsonw buffer, sent without a copy), an error in words, a store error
 * (507 when the disk is full); and who owns a job, for every route file. */
#include "apiint.h"
#include "bytes.h"
#include "jsonw.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_jw(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	free(arg);
}

void api_reply_jw(struct evhttp_request *req, int code, struct jsonw *w)
{
	struct evbuffer *b = evbuffer_new();

	jw_lit(w, "\n");
	/* The body goes to the connection as it is, without a copy. */
	if (evbuffer_add_reference(b, w->p, w->len, free_jw, w->p))
		abort();
	*w = (struct jsonw){ 0 };
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, code, code < 300 ? "OK" : code == 404 ? "Not Found" : "Error", b);
	evbuffer_free(b);
}

/* Does the request's If-None-Match name tag (a list of tags, weak or
 * strong, or "*")? */
static bool none_match(struct evhttp_request *req, const char *tag)
{
	const char *inm = evhttp_find_header(evhttp_request_get_input_headers(req), "If-None-Match");
	size_t n = strlen(tag);

	while (inm && *inm) {
		const char *end;

		inm += strspn(inm, " \t,");
		if (!strncmp(inm, "W/", 2))
			inm += 2;
		end = inm + strcspn(inm, ",");
		while (end > inm && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if ((end - inm == 1 && *inm == '*') || ((size_t)(end - inm) == n && !memcmp(inm, tag, n)))
			return true;
		inm = end + strcspn(end, ",");
	}
	return false;
}

void api_reply_tagged(struct evhttp_request *req, struct jsonw *w)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	uint64_t x = 0xcbf29ce484222325ULL;	/* FNV-1a over the body */
	char tag[48];

	for (size_t i = 0; i < w->len; i++)
		x = (x ^ (unsigned char)w->p[i]) * 0x100000001b3ULL;
	snprintf(tag, sizeof tag, "\"%zx-%016llx\"", w->len, (unsigned long long)x);
	evhttp_add_header(h, "ETag", tag);
	evhttp_add_header(h, "Cache-Control", "private, no-cache");	/* a caller's own view */
	if (none_match(req, tag)) {
		jw_free(w);
		evhttp_send_reply(req, 304, "Not Modified", NULL);
		return;
	}
	api_reply_jw(req, 200, w);
}

void api_reply(struct evhttp_request *req, int code, json_t *body)
{
	struct jsonw w = { 0 };

	jw_json(&w, body, JSON_COMPACT);
	json_decref(body);
	api_reply_jw(req, code, &w);
}

__attribute__((format(printf, 3, 4))) void api_reply_err(struct evhttp_request *req, int code,
							 const char *fmt, ...)
{
	char msg[1024], safe[4 * sizeof msg];
	const char *text = msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* A message may quote what the caller sent (a query's bytes): JSON
	 * holds only UTF-8, and a terminal should get no control characters,
	 * so such bytes are said as escapes rather than lose the answer. */
	if (gf_needs_escape(msg, strlen(msg))) {
		gf_escape(safe, sizeof safe, msg, strlen(msg), 0);
		text = safe;
	}
	api_reply(req, code, json_pack("{s:s}", "error", text));
}

/* A change the store refused, in its own words: 507 when the disk is full. */
void api_reply_store_err(struct server *s, struct evhttp_request *req, const struct gf_err *e)
{
	api_reply_err(req, store_full(s->store) ? 507 : 500, "%s", e->msg);
}

/* May the caller change job j (or see all of it)? Its owner or an admin. */
bool api_owns(const struct caller *c, const struct job *j)
{
	return c->admin || (c->uid != (uid_t)-1 && c->uid == j->uid);
}
