/* apiint.h — what the api*.c files share inside the daemon (not part of
 * server.h): the caller's identity, a decoded submission, a batch of job ids,
 * and the helpers and route handlers one file defines and another uses. */
#ifndef GF_APIINT_H
#define GF_APIINT_H

#include "api.h"

#include <event2/http.h>

#include "execlimit.h"

/* Who sent a request, and what that lets them do (identify in api.c). */
struct caller {
	uid_t uid;		/* (uid_t)-1: anonymous (TCP without a token) */
	pid_t pid;		/* the connecting process (Unix socket); 0: not known */
	bool may_write;		/* Unix socket, or TCP with a token */
	bool admin;		/* root, [daemon] admin_group, a personal daemon's user */
	bool local;		/* over the Unix socket */
};

/* A POST /jobs body, checked and turned into jobs (not yet stored). */
struct submission {
	struct job **jobs;
	size_t n;
	char *env;
	size_t envlen;
	bool dry;
};

/* The jobs a change request names, and what became of each. */
struct id_batch {
	int64_t *ids;
	size_t n;
	json_t *done, *errs;
};

/* replies, identity and routing (api.c) */
void api_on_tcp(struct evhttp_request *req, void *arg);
void api_on_unix(struct evhttp_request *req, void *arg);
bool api_owns(const struct caller *c, const struct job *j);

/* request decoding (api_decode.c) */
int api_decode_submission(struct server *s, uid_t uid, pid_t pid, json_t *body, struct submission *sub,
			  struct gf_err *e);
int api_check_params(json_t *params, struct gf_err *e);
int api_check_project(struct server *s, struct job *j, struct gf_err *e);
int api_get_bool(json_t *o, const char *k, bool *out, struct gf_err *e);
int api_get_time(json_t *o, const char *k, double *out, struct gf_err *e);
json_t *api_read_body(struct evhttp_request *req, struct gf_err *e);
int64_t api_ref_id(struct server *s, uid_t uid, json_t *item, struct gf_err *e);
struct job *api_spec_to_job(struct server *s, uid_t uid, json_t *spec, const char *cwd,
			    const struct gf_execsize *env, const char *rlimits, struct gf_err *e);
void api_submission_free(struct submission *sub);

/* submission, listing, cancel/hold/release (api_jobs.c) */
void api_h_cancel(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body);
void api_h_get(struct server *s, struct evhttp_request *req, struct caller *c, const char *idstr);
void api_h_hold_release(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			bool hold);
void api_h_list(struct server *s, struct evhttp_request *req, struct caller *c);
/* "a,b,c" as a NULL-terminated array of copies (strv_free), empty items
 * skipped: the list parameters of GET /jobs and GET /stats. */
char **api_split_csv(const char *s);
/* GET /stats (api_stats.c): gstats's figures over the jobs users= and since= pick. */
void api_h_stats(struct server *s, struct evhttp_request *req, struct caller *c);
void api_h_submit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body);
bool api_id_batch_start(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			bool ok, struct gf_err *e, struct id_batch *b);
void api_not_yours(const struct job *j, const char *verb, char *msg, size_t size);
bool api_permitted(struct caller *c, struct job *j, const char *verb, json_t *errs);
void api_push_err(json_t *errs, int64_t id, const char *msg);

/* update, redo, limit (api_edit.c) */
void api_h_limit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body);
void api_h_redo(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body);
void api_h_update(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body);

/* GET /timeline (api_timeline.c) */
void api_h_timeline(struct server *s, struct evhttp_request *req);

#endif
