/* api.c — the HTTP+JSON API (docs/api.md): the caller's identity
 * (SO_PEERCRED on the Unix socket, tokens over TCP), the GPU and daemon
 * routes (/gpus, /token, /info), and routing each request to its handler.
 * Decoding is in api_decode.c, the job routes in api_jobs.c and
 * api_edit.c, the listeners in api_listen.c. A success answer is sent only
 * after the change is committed to the store. */
#include "apiint.h"
#include "jsonw.h"
#include "verbose.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- identity ---------------------------------------------------------- */

static bool token_ok(struct server *s, struct evhttp_request *req)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	size_t n = strlen(s->token), diff = 0;

	if (!h || strncmp(h, "Bearer ", 7))
		return false;
	h += 7;
	if (strlen(h) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(h[i] ^ s->token[i]);
	return diff == 0;
}

static struct caller identify(struct server *s, struct evhttp_request *req, bool unix_sock)
{
	struct caller c = { .uid = (uid_t)-1, .may_write = false, .local = unix_sock };
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");

	if (unix_sock) {
		struct evhttp_connection *conn = evhttp_request_get_connection(req);
		struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
		struct ucred cred;
		socklen_t len = sizeof cred;

		if (bev && getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			c.uid = cred.uid;
			c.pid = cred.pid;
			c.may_write = true;
		}
	} else if (token_ok(s, req)) {
		c.uid = s->uid;	/* the daemon's own token */
		c.may_write = true;
	} else if (h && !strncmp(h, "Bearer ", 7) && auth_token_user(s, h + 7, &c.uid))
		c.may_write = true;	/* a user's token acts as that user */
	c.admin = c.uid != (uid_t)-1 && auth_is_admin(s, c.uid);
	return c;
}

/* ---- GPUs and daemon --------------------------------------------------- */

/* Refuse a caller who is not an admin, naming who is. */
static bool admin_only(struct server *s, struct evhttp_request *req, struct caller *c, const char *what)
{
	if (c->admin)
		return true;
	if (s->paths.system)
		api_reply_err(req, 403, "only root%s%s%s may %s", s->have_admin_gid ? " and members of the group '" : "",
			  s->have_admin_gid ? s->cfg.admin_group : "", s->have_admin_gid ? "'" : "", what);
	else
		api_reply_err(req, 403, "only the daemon's user and root may %s", what);
	return false;
}

static void h_set_gpus(struct server *s, struct evhttp_request *req, json_t *body)
{
	static const char *const fields[] = { "spec", NULL };
	char *spec = NULL;
	struct gf_err e;
	json_t *g;

	if (api_check_fields(body, fields, "request", &e) || api_get_str(body, "spec", 1024, &spec, &e) ||
	    (!spec && gf_err_set(&e, "'spec' is required (e.g. \"0,2\" or \"all\")")) ||
	    gpustate_set_allowed(s, spec, &e)) {
		free(spec);
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	free(spec);
	g = gpustate_json(s);
	api_reply(req, 200, json_pack("{s:O}", "allowed", json_object_get(g, "allowed")));
	json_decref(g);
}

static void h_ignore(struct server *s, struct evhttp_request *req, json_t *body, bool ignore)
{
	static const char *const fields[] = { "gpu", "pid", NULL };
	int64_t gpu = -1, pid = -1;
	struct gf_err e;

	if (api_check_fields(body, fields, "request", &e) || api_get_int(body, "gpu", 0, 63, &gpu, &e) ||
	    api_get_int(body, "pid", 1, 1 << 30, &pid, &e) ||
	    ((gpu < 0 || pid < 0) && gf_err_set(&e, "'gpu' and 'pid' are required")) ||
	    gpustate_ignore(s, (int)gpu, (pid_t)pid, ignore, &e)) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	api_reply(req, 200, json_pack("{s:o}", "ignored", gpustate_ignored_json(s)));
}

/* POST /tokens: the caller's own token for the TCP API (made on first
 * use); handed out over the local socket only, where the kernel says who
 * is asking. POST /tokens/revoke: it stops working at once. */
static void h_token(struct server *s, struct evhttp_request *req, struct caller *c, bool revoke)
{
	char token[64];
	struct gf_err e;
	bool had;

	if (c->uid == (uid_t)-1) {
		api_reply_err(req, 401, "tokens belong to users: ask over the local socket");
		return;
	}
	if (revoke) {
		if (auth_token_revoke(s, c->uid, &had, &e))
			api_reply_store_err(s, req, &e);
		else
			api_reply(req, 200, json_pack("{s:b}", "revoked", had));
		return;
	}
	if (!c->local) {
		api_reply_err(req, 403, "a token is handed out over the local socket only (run gflowd token on the machine)");
		return;
	}
	if (auth_token_get(s, c->uid, token, sizeof token, &e))
		api_reply_store_err(s, req, &e);
	else
		api_reply(req, 200, json_pack("{s:s,s:I}", "token", token, "uid", (json_int_t)c->uid));
}

static void h_info(struct server *s, struct evhttp_request *req, struct caller *c)
{
	int64_t bad[100];
	size_t nbad = jobs_unreadable(s, bad, sizeof bad / sizeof bad[0]);
	json_t *unreadable = json_array();
	json_t *o =
	      json_pack("{s:s,s:i,s:f,s:s,s:s,s:s,s:i,s:s,s:I,s:o}", "version", GFLOW_VERSION, "pid",
			(int)getpid(), "started_at", s->started_at, "executor",
			s->executor == EXEC_TMUX ? "tmux" : "process", "hosting",
			s->opts.hosting ? s->opts.hosting : "foreground", "strategy",
			s->strategy == SCHED_RANDOM ? "random" : "sequential", "gpu_poll_interval_secs",
			s->opts.poll_interval ? s->opts.poll_interval : s->cfg.gpu_poll_interval_secs,
			"data_dir", s->paths.data_dir, "jobs", (json_int_t)s->max_id, "gpus",
			gpustate_json(s));

	/* Where --memory limits are enforced (a cgroup directory), or null;
	 * how each job's processes are tracked. */
	json_object_set_new(o, "memory_cgroup", s->track.mem[0] ? json_string(s->track.mem) : json_null());
	json_object_set_new(o, "tracking", track_json(s));
	/* Which daemon this is, and who is asking. */
	json_object_set_new(o, "mode", json_string(s->paths.system ? "system" : "personal"));
	json_object_set_new(o, "socket", json_string(s->paths.socket));
	json_object_set_new(o, "tcp", s->bound_tcp ? json_sprintf("%s:%d", s->cfg.host, s->cfg.port) : json_null());
	if (s->tcp_note[0])
		json_object_set_new(o, "tcp_note", json_string(s->tcp_note));
	if (store_no_room(s->store)) {	/* the disk is full: what waits for it */
		size_t waiting = 0;

		for (size_t i = 0; i < s->nlive; i++) {
			struct job *j = jobs_live_at(s, i);

			waiting += j && j->state == JS_RUNNING && j->reason && !strncmp(j->reason, "WaitingForDisk:", 15);
		}
		json_object_set_new(o, "store_note",
				    json_sprintf("disk full: %s cannot be written; %zu job end%s wait%s to be "
						 "recorded (free some space)", s->paths.db, waiting,
						 waiting == 1 ? "" : "s", waiting == 1 ? "s" : ""));
	}
	json_object_set_new(o, "caller", c->uid == (uid_t)-1 ? json_null()
				       : json_pack("{s:I,s:b}", "uid", (json_int_t)c->uid, "admin", c->admin));
	/* Store rows that could not be read (their jobs are shown as stand-ins),
	 * the first 100 of unreadable_count. */
	for (size_t i = 0; i < nbad && i < sizeof bad / sizeof bad[0]; i++)
		json_array_append_new(unreadable, json_integer(bad[i]));
	json_object_set_new(o, "unreadable_jobs", unreadable);
	json_object_set_new(o, "unreadable_count", json_integer((json_int_t)nbad));
	json_object_set_new(o, "notifications", notify_json(s));
	api_reply(req, 200, o);
}

/* ---- routing -----------------------------------------------------------
 *
 * Every route in one table, in the order a path is tried: its method, its
 * path (exact, or a prefix ending in '*' whose rest the handler gets), who
 * may call it, and its handler. The dispatcher (route) checks the role
 * before the handler runs:
 *
 *   ANYONE  no credentials needed (reads; a handler shows a job's command,
 *           directory and log to its owner and admins only)
 *   OWNER   a caller who may write: the Unix socket, or a token over TCP;
 *           each job it names must be its own (or it an admin), which the
 *           handler checks job by job (api_permitted)
 *   ADMIN   an admin: root, [daemon] admin_group, a personal daemon's user
 *
 * Handlers decode, check and answer; what they change goes through the
 * engine and the layers below (jobs_*, quota_*, reserve_*, gpustate_*). */

enum role { ANYONE, OWNER, ADMIN };

typedef void route_fn(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
		      const char *rest);

struct route {
	enum evhttp_cmd_type method;
	const char *path;		/* exact; ending in '*': a prefix, the rest to the handler */
	bool (*also)(const char *path);	/* NULL, or what the path must also be */
	enum role role;
	const char *what;		/* ADMIN: what the refusal says others may not do */
	route_fn *fn;
};

static void r_health(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)s, (void)c, (void)body, (void)rest;
	api_reply(req, 200, json_pack("{s:s,s:s,s:i}", "status", "ok", "version", GFLOW_VERSION, "pid", (int)getpid()));
}

static void r_info(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body, (void)rest;
	h_info(s, req, c);
}

static void r_list(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body, (void)rest;
	api_h_list(s, req, c);
}

static void r_stats(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body, (void)rest;
	api_h_stats(s, req, c);
}

static void r_log(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body;
	joblog_get(s, req, c->uid, c->admin, rest);
}

static void r_get(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body;
	api_h_get(s, req, c, rest);
}

static void r_gpus(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	json_t *o = gpustate_json(s);
	struct jsonw w = { 0 };

	(void)c, (void)body, (void)rest;
	jw_json(&w, o, JSON_COMPACT);
	json_decref(o);
	api_reply_tagged(req, &w);
}

static void r_gpus_ignored(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			   const char *rest)
{
	(void)c, (void)body, (void)rest;
	api_reply(req, 200, json_pack("{s:o}", "ignored", gpustate_ignored_json(s)));
}

static void r_share(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)body;
	api_share_get(s, req, rest);
}

static void r_metrics(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)body, (void)rest;
	metrics_get(s, req);
}

static void r_history(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)body, (void)rest;
	api_reply(req, 200, history_json(s));
}

static void r_timeline(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
		       const char *rest)
{
	(void)c, (void)body, (void)rest;
	api_h_timeline(s, req);
}

static void r_web(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)body;
	web_get(s, req, rest);
}

static void r_submit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_submit(s, req, c, body);
}

static void r_cancel(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_cancel(s, req, c, body);
}

static void r_hold(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_hold_release(s, req, c, body, true);
}

static void r_release(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_hold_release(s, req, c, body, false);
}

static void r_update(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_update(s, req, c, body);
}

static void r_redo(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_redo(s, req, c, body);
}

static void r_limit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)rest;
	api_h_limit(s, req, c, body);
}

static void r_set_gpus(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)rest;
	h_set_gpus(s, req, body);
}

static void r_ignore(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)rest;
	h_ignore(s, req, body, true);
}

static void r_unignore(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)rest;
	h_ignore(s, req, body, false);
}

static void r_token(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body, (void)rest;
	h_token(s, req, c, false);
}

static void r_revoke(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)body, (void)rest;
	h_token(s, req, c, true);
}

static void r_notify_test(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			  const char *rest)
{
	(void)rest;
	notify_api_test(s, req, c->admin, body);
}

static void r_quota_set(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	(void)c, (void)rest;
	api_share_quota_set(s, req, body, false);
}

static void r_quota_remove(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			   const char *rest)
{
	(void)c, (void)rest;
	api_share_quota_set(s, req, body, true);
}

static void r_resv_create(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			  const char *rest)
{
	(void)c, (void)rest;
	api_share_resv_create(s, req, body);
}

static void r_resv_cancel(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			  const char *rest)
{
	(void)c, (void)rest;
	api_share_resv_cancel(s, req, body);
}

static void r_remote(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body, const char *rest)
{
	api_remote(s, req, c->uid, c->admin, rest, body);
}

static bool has_subpath(const char *path)
{
	return strchr(path + 6, '/') != NULL;	/* "/jobs/<id>/…" */
}

static bool is_ui(const char *path)
{
	return !strcmp(path, "/") || !strncmp(path, "/ui", 3);
}

#define GET EVHTTP_REQ_GET
#define POST EVHTTP_REQ_POST

static const struct route routes[] = {
	{ GET, "/health", NULL, ANYONE, NULL, r_health },
	{ GET, "/info", NULL, ANYONE, NULL, r_info },
	{ GET, "/jobs", NULL, ANYONE, NULL, r_list },
	{ GET, "/jobs/*", has_subpath, ANYONE, NULL, r_log },	/* /jobs/<id>/log: owner or admin (joblog.c) */
	{ GET, "/jobs/*", NULL, ANYONE, NULL, r_get },
	{ GET, "/stats", NULL, ANYONE, NULL, r_stats },	/* public fields only, but gpu_usage of one's own (api_stats.c) */
	{ GET, "/gpus", NULL, ANYONE, NULL, r_gpus },
	{ GET, "/gpus/ignored", NULL, ANYONE, NULL, r_gpus_ignored },
	{ GET, "*", api_share_path, ANYONE, NULL, r_share },	/* /quotas…, /reservations…, /usage */
	{ GET, "/metrics", NULL, ANYONE, NULL, r_metrics },
	{ GET, "/history", NULL, ANYONE, NULL, r_history },
	{ GET, "/timeline", NULL, ANYONE, NULL, r_timeline },	/* public fields only (api_timeline.c) */
	{ GET, "*", is_ui, ANYONE, NULL, r_web },		/* / and /ui/<file> */

	{ POST, "/jobs", NULL, OWNER, NULL, r_submit },
	{ POST, "/jobs/cancel", NULL, OWNER, NULL, r_cancel },
	{ POST, "/jobs/hold", NULL, OWNER, NULL, r_hold },
	{ POST, "/jobs/release", NULL, OWNER, NULL, r_release },
	{ POST, "/jobs/update", NULL, OWNER, NULL, r_update },
	{ POST, "/jobs/redo", NULL, OWNER, NULL, r_redo },
	{ POST, "/jobs/limit", NULL, OWNER, NULL, r_limit },
	{ POST, "/gpus/allowed", NULL, ADMIN, "change which GPUs gflow uses", r_set_gpus },
	{ POST, "/gpus/ignore", NULL, ADMIN, "ignore a GPU process", r_ignore },
	{ POST, "/gpus/unignore", NULL, ADMIN, "stop ignoring a GPU process", r_unignore },
	{ POST, "/tokens", NULL, OWNER, NULL, r_token },		/* the caller's own */
	{ POST, "/tokens/revoke", NULL, OWNER, NULL, r_revoke },
	/* admins only, said after the body is checked (notify.c) */
	{ POST, "/notify/test", NULL, OWNER, NULL, r_notify_test },
	{ POST, "/quotas/set", NULL, ADMIN, "change quotas", r_quota_set },
	{ POST, "/quotas/remove", NULL, ADMIN, "change quotas", r_quota_remove },
	{ POST, "/reservations", NULL, ADMIN, "create reservations", r_resv_create },
	{ POST, "/reservations/cancel", NULL, ADMIN, "cancel reservations", r_resv_cancel },
	{ POST, "/remote/*", NULL, OWNER, NULL, r_remote },	/* a cluster's jobs: the owner's (api_remote.c) */
};

/* The route label /metrics gives a request to r (NULL: none matched): its
 * pattern, never the path itself, so ids and file names make no series. */
static const char *route_label(const struct route *r, const char *path)
{
	if (!r)
		return "none";
	if (r->fn == r_log)
		return "/jobs/{id}/log";
	if (r->fn == r_get)
		return "/jobs/{id}";
	if (r->fn == r_web)
		return "/ui";
	if (r->fn == r_share)	/* one entry, three families */
		return !strncmp(path, "/quotas", 7)	  ? "/quotas*"
		       : !strncmp(path, "/reservations", 13) ? "/reservations*"
							     : "/usage";
	return r->path;
}

/* The route for m and path, and the part of path its handler gets. */
static const struct route *find_route(enum evhttp_cmd_type m, const char *path, const char **rest)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *r = &routes[i];
		size_t n = strlen(r->path);
		bool prefix = n && r->path[n - 1] == '*';

		if (r->method != m)
			continue;
		if (prefix ? strncmp(path, r->path, n - 1) : strcmp(path, r->path))
			continue;
		if (r->also && !r->also(path))
			continue;
		*rest = prefix && n > 1 ? path + n - 1 : path;
		return r;
	}
	return NULL;
}

/* Answers req (or starts to); returns the route label for /metrics. */
static const char *route(struct evhttp_request *req, struct server *s, bool unix_sock)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req)), *rest = NULL;
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct caller c = identify(s, req, unix_sock);
	const struct route *r;
	const char *label;
	json_t *body = NULL;
	struct gf_err e;

	if (!path)
		path = "/";
	vlog(2, "%s %s from uid %ld (%s)", m == EVHTTP_REQ_GET ? "GET" : m == EVHTTP_REQ_POST ? "POST" : "other",
	     path, (long)c.uid, unix_sock ? "socket" : "tcp");
	if (s->reloading)	/* draining for a reload: no next request here */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	/* HTTP/1.1 requires Host (RFC 9112 §3.2); libevent does not check. */
	if (req->major == 1 && req->minor >= 1 &&
	    !evhttp_find_header(evhttp_request_get_input_headers(req), "Host")) {
		api_reply_err(req, 400, "an HTTP/1.1 request needs a Host header");
		return route_label(NULL, path);
	}
	if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_POST) {
		api_reply_err(req, 405, "method not allowed");
		return route_label(NULL, path);
	}
	/* OWNER and ADMIN: a caller who may write. Every POST route needs one,
	 * so it is checked (and the body read) before the path is looked up. */
	if (m == EVHTTP_REQ_POST && !c.may_write) {
		api_reply_err(req, 401, "changes over TCP need 'Authorization: Bearer <token>' (see gflowd token)");
		return route_label(find_route(m, path, &rest), path);
	}
	if (m == EVHTTP_REQ_POST && !(body = api_read_body(req, &e))) {
		api_reply_err(req, 400, "%s", e.msg);
		return route_label(find_route(m, path, &rest), path);
	}
	if (!(r = find_route(m, path, &rest)))
		api_reply_err(req, 404, "no such endpoint: %s %s", m == EVHTTP_REQ_GET ? "GET" : "POST", path);
	label = route_label(r, path);
	if (r && (r->role != ADMIN || admin_only(s, req, &c, r->what)))
		r->fn(s, req, &c, body, rest);
	json_decref(body);
	return label;
}

/* Times the request: until its answer, or until it waits (a cascade, a
 * stream), which /metrics labels status="pending". The request is still
 * ours when route() returns: libevent frees it only once the answer is
 * written, from the loop. */
static void on_request(struct evhttp_request *req, struct server *s, bool unix_sock)
{
	double t0 = metrics_clock();
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	const char *method = m == EVHTTP_REQ_GET ? "GET" : m == EVHTTP_REQ_POST ? "POST" : "other";
	const char *label = route(req, s, unix_sock);

	metrics_observe_api(s, method, label, evhttp_request_get_response_code(req), metrics_clock() - t0);
}

void api_on_unix(struct evhttp_request *req, void *arg)
{
	on_request(req, arg, true);
}

void api_on_tcp(struct evhttp_request *req, void *arg)
{
	on_request(req, arg, false);
}
