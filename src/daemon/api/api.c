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

static void h_set_gpus(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "spec", NULL };
	char *spec = NULL;
	struct gf_err e;
	json_t *g;

	if (!admin_only(s, req, c, "change which GPUs gflow uses"))
		return;
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

static void h_ignore(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
		     bool ignore)
{
	static const char *const fields[] = { "gpu", "pid", NULL };
	int64_t gpu = -1, pid = -1;
	struct gf_err e;

	if (!admin_only(s, req, c, ignore ? "ignore a GPU process" : "stop ignoring a GPU process"))
		return;
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

/* ---- routing ----------------------------------------------------------- */

static void route(struct evhttp_request *req, struct server *s, bool unix_sock)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct caller c = identify(s, req, unix_sock);
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
		return;
	}
	if (m == EVHTTP_REQ_GET) {
		if (!strcmp(path, "/health"))
			api_reply(req, 200, json_pack("{s:s,s:s,s:i}", "status", "ok", "version", GFLOW_VERSION,
						  "pid", (int)getpid()));
		else if (!strcmp(path, "/info"))
			h_info(s, req, &c);
		else if (!strcmp(path, "/jobs"))
			api_h_list(s, req, &c);
		else if (!strncmp(path, "/jobs/", 6) && strchr(path + 6, '/'))
			joblog_get(s, req, c.uid, c.admin, path + 6);
		else if (!strncmp(path, "/jobs/", 6))
			api_h_get(s, req, &c, path + 6);
		else if (!strcmp(path, "/gpus"))
			api_reply(req, 200, gpustate_json(s));
		else if (!strcmp(path, "/gpus/ignored"))
			api_reply(req, 200, json_pack("{s:o}", "ignored", gpustate_ignored_json(s)));
		else if (api_share_path(path))
			api_share_get(s, req, path);
		else if (!strcmp(path, "/metrics"))
			metrics_get(s, req);
		else if (!strcmp(path, "/history"))
			api_reply(req, 200, history_json(s));
		else if (!strcmp(path, "/") || !strncmp(path, "/ui", 3))
			web_get(s, req, path);
		else
			api_reply_err(req, 404, "no such endpoint: GET %s", path);
		return;
	}
	if (m != EVHTTP_REQ_POST) {
		api_reply_err(req, 405, "method not allowed");
		return;
	}
	if (!c.may_write) {
		api_reply_err(req, 401, "changes over TCP need 'Authorization: Bearer <token>' (see gflowd token)");
		return;
	}
	if (!(body = api_read_body(req, &e))) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (!strcmp(path, "/jobs"))
		api_h_submit(s, req, &c, body);
	else if (!strcmp(path, "/jobs/cancel"))
		api_h_cancel(s, req, &c, body);
	else if (!strcmp(path, "/jobs/hold"))
		api_h_hold_release(s, req, &c, body, true);
	else if (!strcmp(path, "/jobs/release"))
		api_h_hold_release(s, req, &c, body, false);
	else if (!strcmp(path, "/jobs/update"))
		api_h_update(s, req, &c, body);
	else if (!strcmp(path, "/jobs/redo"))
		api_h_redo(s, req, &c, body);
	else if (!strcmp(path, "/jobs/limit"))
		api_h_limit(s, req, &c, body);
	else if (!strcmp(path, "/gpus/allowed"))
		h_set_gpus(s, req, &c, body);
	else if (!strcmp(path, "/gpus/ignore"))
		h_ignore(s, req, &c, body, true);
	else if (!strcmp(path, "/gpus/unignore"))
		h_ignore(s, req, &c, body, false);
	else if (!strcmp(path, "/tokens"))
		h_token(s, req, &c, false);
	else if (!strcmp(path, "/tokens/revoke"))
		h_token(s, req, &c, true);
	else if (!strcmp(path, "/notify/test"))
		notify_api_test(s, req, c.admin, body);
	else if (api_share_path(path))
		api_share_post(s, req, path, body, c.admin);
	else if (!strncmp(path, "/remote/", 8))
		api_remote(s, req, c.uid, c.admin, path + 8, body);
	else
		api_reply_err(req, 404, "no such endpoint: POST %s", path);
	json_decref(body);
}

void api_on_unix(struct evhttp_request *req, void *arg)
{
	double t0 = metrics_clock();

	route(req, arg, true);
	metrics_observe(&((struct server *)arg)->metrics.api, metrics_clock() - t0);
}

void api_on_tcp(struct evhttp_request *req, void *arg)
{
	double t0 = metrics_clock();

	route(req, arg, false);
	metrics_observe(&((struct server *)arg)->metrics.api, metrics_clock() - t0);
}
