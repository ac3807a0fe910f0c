/* web.c — the dashboard: GET / and GET /ui/<file> answer the files of web/
 * compiled into the daemon (web.h). The page uses only the public JSON API
 * (docs/api.md); nothing here reads the disk. */
#include "api.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <string.h>

#include "web.h"

static void header(struct evhttp_request *req, const char *k, const char *v)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), k, v);
}

void web_get(struct server *s, struct evhttp_request *req, const char *path)
{
	const struct web_asset *a;
	const char *inm;
	struct evbuffer *b;
	char msg[300];

	(void)s;
	if (!strcmp(path, "/") || !strcmp(path, "/ui") || !strcmp(path, "/ui/"))
		path = "/ui/index.html";
	for (a = web_assets; a->path && strcmp(a->path, path); a++)
		;
	if (!a->path) {
		snprintf(msg, sizeof msg, "no such file of the dashboard: %.200s", path);
		api_reply_err(req, 404, "%s", msg);
		return;
	}
	/* The page and its scripts come from here only; the token it may hold
	 * is sent by script to this origin, never put in a URL. */
	header(req, "Content-Security-Policy",
	       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
	       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
	header(req, "X-Content-Type-Options", "nosniff");
	header(req, "Referrer-Policy", "no-referrer");
	header(req, "Cache-Control", "no-cache");
	header(req, "ETag", a->etag);
	inm = evhttp_find_header(evhttp_request_get_input_headers(req), "If-None-Match");
	if (inm && !strcmp(inm, a->etag)) {
		evhttp_send_reply(req, 304, "Not Modified", NULL);
		return;
	}
	header(req, "Content-Type", a->type);
	b = evbuffer_new();
	evbuffer_add_reference(b, a->data, a->size, NULL, NULL);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}
