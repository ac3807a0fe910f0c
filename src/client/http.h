/* http.h — a small blocking HTTP/1.1 client over the daemon's Unix socket,
 * and JSON calls on top of it.
 *
 * One request per connection: "Content-Length" body, "Connection: close";
 * the answer is read to the end (Content-Length, chunked or EOF). */
#ifndef GF_CLIENT_HTTP_H
#define GF_CLIENT_HTTP_H

#include <stddef.h>

#include "jsonapi.h"

#include "err.h"

struct http_resp {
	int status;
	char *body; /* NUL-terminated, malloc'd */
	size_t len;
};

/* Where gflowd listens: $GFLOW_SOCKET, else
 * $XDG_RUNTIME_DIR/gflow/gflowd.sock, else /tmp/gflow-<uid>/gflowd.sock. */
int http_socket_path(char *buf, size_t size, struct gf_err *e);
/* The socket of the daemon that answered the last request. */
const char *http_answered(void);
/* "system daemon, PATH" or "personal daemon, PATH": who answered. */
const char *daemon_answered(void);

/* Verbosity on stderr: 1 names each request, its status, size, time and
 * the daemon that answered; 2 also each socket tried. 0 (default): none. */
void http_set_verbose(int level);

/* Send one request (body may be NULL) and read the answer. sock NULL:
 * the daemon the user means — $GFLOW_SOCKET, else their own daemon when
 * it answers, else the machine's system daemon. When nothing answers, the
 * error says so and how to start either. */
int http_request(const char *sock, const char *method, const char *target,
    const char *body, size_t body_len, struct http_resp *out,
    struct gf_err *e);
void http_resp_free(struct http_resp *r);

/* Connect to the daemon now (as a NULL sock would), so that it accepts
 * while the caller still builds its request: the next request to it takes
 * this connection, and reports the error if there is none. */
void http_preconnect(void);

/* Parse a complete raw answer (status line, headers, body). */
int http_parse_response(const char *raw, size_t n, struct http_resp *out,
    struct gf_err *e);

/* JSON calls: send `body` (may be NULL) to the daemon and return the
 * parsed answer of a 2xx reply (caller owns it). Any other reply becomes
 * an error carrying the daemon's {"error": "..."} text. */
json_t *api_call(const char *method, const char *target, const json_t *body,
    struct gf_err *e);
json_t *api_get(const char *target, struct gf_err *e);
json_t *api_post(const char *target, const json_t *body, struct gf_err *e);

/* GET target from the daemon with its body handed to `body` piece by
 * piece as it arrives (dechunked), so that a long answer is never held
 * whole. `body` returns 0 for more, 1 when it has read enough (the rest
 * is not read), -1 to fail (its error in e). A reply that is not
 * 2xx is an error carrying the daemon's {"error": "..."} text, as
 * api_call's. */
int api_get_stream(const char *target,
    int (*body)(const char *p, size_t n, void *arg), void *arg,
    struct gf_err *e);

#endif
