/* api.h — the API layer (src/daemon/api/): the HTTP+JSON API. api.c (who
 * asks, and the route table: method, path, role, handler), reply.c,
 * api_decode.c, one file per resource (api_jobs.c, api_list.c,
 * api_edit.c, api_share.c, api_remote.c), api_listen.c (listeners and the
 * connection guard), auth.c, joblog.c, web.c. Handlers decode, authorise
 * and answer; changes go through the engine. May call: every layer below. */
#ifndef GF_API_H
#define GF_API_H

#include "observe.h"
#include <event2/http.h>
#include <jansson.h>


/* api_listen.c (api_check_request: api_decode.c) */
int api_init(struct server *s, struct gf_err *e);
void api_close(struct server *s);
/* Decode and check a POST /jobs body as the API would, storing nothing
 * (the fuzz target's way in). */
int api_check_request(struct server *s, uid_t uid, const char *data, size_t len, struct gf_err *e);
/* Stop accepting (new connections wait in the backlog); api_resume undoes
 * it. While s->reloading, every answer says "Connection: close". */
void api_pause(struct server *s);
void api_resume(struct server *s);
/* Connections accepted and not yet closed. */
int api_open_connections(struct server *s);
/* A listening TCP socket on host:port (close-on-exec), or -1 with e set. */
int api_listen_tcp(const char *host, int port, struct gf_err *e);
/* The listening fds, for a reload. */
int api_fds(struct server *s, int *unix_fd, int *tcp_fd);

/* api_remote.c: POST /remote/jobs and /remote/update (jobs on a Slurm
 * cluster, recorded for their owner's client; `what` is the path after
 * "/remote/"). */
void api_remote(struct server *s, struct evhttp_request *req, uid_t uid, bool admin,
		const char *what, json_t *body);
/* api_decode.c's field checks, for api_remote.c: unknown fields, a printable
 * text field, an integer field in [min,max] (absent or null: left alone). */
int api_check_fields(json_t *o, const char *const *allowed, const char *what, struct gf_err *e);
int api_check_text(const char *k, json_t *v, size_t max, struct gf_err *e);
int api_get_str(json_t *o, const char *k, size_t max, char **out, struct gf_err *e);
int api_get_int(json_t *o, const char *k, int64_t min, int64_t max, int64_t *out, struct gf_err *e);

/* auth.c — callers, roles and per-user tokens */
int auth_setup(struct server *s, struct gf_err *e);	/* after the store is open */
void auth_close(struct server *s);
bool auth_is_admin(struct server *s, uid_t uid);
/* May this caller see all of job j (command, directory, log)? */
bool auth_sees_all(struct server *s, const struct job *j, uid_t uid, bool admin);
/* The user a token belongs to; false when it is nobody's. */
bool auth_token_user(struct server *s, const char *token, uid_t *uid);
/* A user's token, made (and stored) on first use. */
int auth_token_get(struct server *s, uid_t uid, char *out, size_t size, struct gf_err *e);
int auth_token_revoke(struct server *s, uid_t uid, bool *had, struct gf_err *e);

/* api.c's answers, for the other route files */
void api_reply(struct evhttp_request *req, int code, json_t *body);
struct jsonw;
/* Answers with what w holds (one JSON document) and takes its buffer. */
/* A 200 answer of w with an ETag of its bytes (a hash), or 304 Not
 * Modified with no body when the request's If-None-Match names that tag:
 * the tag changes exactly when the answer would. */
void api_reply_tagged(struct evhttp_request *req, struct jsonw *w);
void api_reply_jw(struct evhttp_request *req, int code, struct jsonw *w);
__attribute__((format(printf, 3, 4))) void api_reply_err(struct evhttp_request *req, int code, const char *fmt, ...);
void api_reply_store_err(struct server *s, struct evhttp_request *req, const struct gf_err *e);

/* api_share.c — routes of /quotas, /reservations, /usage: anyone reads,
 * admins change */
void api_share_get(struct server *s, struct evhttp_request *req, const char *path);
/* The changes, for admins (the route table, api.c, checks who asks). */
void api_share_quota_set(struct server *s, struct evhttp_request *req, json_t *body, bool remove);
void api_share_resv_create(struct server *s, struct evhttp_request *req, json_t *body);
void api_share_resv_cancel(struct server *s, struct evhttp_request *req, json_t *body);
bool api_share_path(const char *path);

/* joblog.c — GET /jobs/<id>/log (rest: "<id>/log"), for the job's owner or an admin */
void joblog_get(struct server *s, struct evhttp_request *req, uid_t uid, bool admin, const char *rest);

/* web.c — the dashboard's files: GET / and /ui/<file> */
void web_get(struct server *s, struct evhttp_request *req, const char *path);

#endif
