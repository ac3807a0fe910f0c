/* api_list.c — listing and getting jobs: GET /jobs (the filters, the fields
 * others may see) written job by job into a chunked answer as the client
 * reads it, never as one tree or one buffer of the whole list; GET
 * /jobs/<id>. */
#include "apiint.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "jobw.h"
#include "parse.h"

/* ---- listing ----------------------------------------------------------- */

struct filter {
	bool states[JS_NSTATES];
	bool any_state;
	bool all_users;
	uid_t uid;
	char **users;
	int64_t *idv;		/* ids=, resolved, ascending, once each */
	size_t nidv;
	char **names;
	char *project;
	double since;
	char **fields;		/* only these job fields in the answer */
	bool start;		/* start=1: queued jobs' expected starts */
};

char **api_split_csv(const char *s)
{
	size_t n = 1, k = 0;
	char **v, *copy = strdup(s), *tok, *save = NULL;

	for (const char *p = s; *p; p++)
		n += *p == ',';
	v = calloc(n + 1, sizeof *v);
	if (!v || !copy)
		abort();
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!(v[k++] = strdup(tok)))
			abort();
	free(copy);
	return v;
}

static bool in_list(char **v, const char *s)
{
	for (; v && *v; v++)
		if (s && !strcmp(*v, s))
			return true;
	return false;
}

/* Idle reclaim's annotations (share/idle.c): asked for by name with
 * fields=, written by write_job; no stored field, so no jobw bit. */
static bool idle_field(const char *name)
{
	return !strcmp(name, "idle_secs") || !strcmp(name, "idle_warned");
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int parse_filter(struct server *s, struct caller *c, struct evkeyvalq *q, struct filter *f,
			struct gf_err *e)
{
	const char *v;

	memset(f, 0, sizeof *f);
	f->any_state = true;
	f->uid = c->uid;
	if ((v = evhttp_find_header(q, "states"))) {
		char **names = api_split_csv(v);

		f->any_state = false;
		for (char **p = names; *p; p++) {
			int st = job_state_parse(*p);

			if (st < 0) {
				gf_err_set(e, "unknown state '%s' (states: Queued/PD, Hold/H, Running/R, "
					      "Finished/CD, Failed/F, Cancelled/CA, Timeout/TO)", *p);
				strv_free(names);
				return -1;
			}
			f->states[st] = true;
		}
		strv_free(names);
	}
	if ((v = evhttp_find_header(q, "active")) && !strcmp(v, "1")) {
		f->any_state = false;
		f->states[JS_QUEUED] = f->states[JS_HOLD] = f->states[JS_RUNNING] = true;
	}
	v = evhttp_find_header(q, "users");
	if (v && !strcmp(v, "all"))
		f->all_users = true;
	else if (v)
		f->users = api_split_csv(v);
	else if (c->uid == (uid_t)-1)
		f->all_users = true;	/* anonymous TCP reader */
	if ((v = evhttp_find_header(q, "ids"))) {
		struct gf_jobref_list refs;
		size_t n = 0;

		if (gf_parse_jobref_list(v, &refs, e))
			return -1;
		if (!(f->idv = malloc((refs.n ? refs.n : 1) * sizeof *f->idv)))
			abort();
		for (; n < refs.n; n++) {
			char ref[32];

			f->idv[n] = refs.v[n].id;
			if (!refs.v[n].is_relative)
				continue;
			snprintf(ref, sizeof ref, "@~%lld", (long long)refs.v[n].back);
			if ((f->idv[n] = jobs_resolve_ref(s, c->uid, ref, e)) < 0)
				break;
		}
		bool resolved = n == refs.n;

		gf_jobref_list_free(&refs);
		if (!resolved)
			return -1;
		qsort(f->idv, n, sizeof *f->idv, cmp_id);
		for (size_t i = 0; i < n; i++)
			if (!f->nidv || f->idv[f->nidv - 1] != f->idv[i])
				f->idv[f->nidv++] = f->idv[i];
		f->all_users = true;	/* asking by id shows the job whoever owns it */
	}
	if ((v = evhttp_find_header(q, "names")))
		f->names = api_split_csv(v);
	if ((v = evhttp_find_header(q, "fields"))) {
		f->fields = api_split_csv(v);
		for (char **p = f->fields; *p; p++)
			if (!job_field_known(*p) && !idle_field(*p))
				return gf_err_set(e, "unknown job field '%s' in 'fields'", *p);
	}
	if ((v = evhttp_find_header(q, "start"))) {
		if (strcmp(v, "0") && strcmp(v, "1"))
			return gf_err_set(e, "'start' must be 0 or 1, got '%.64s'", v);
		f->start = !strcmp(v, "1");
	}
	if ((v = evhttp_find_header(q, "project")))
		f->project = strdup(v);
	if ((v = evhttp_find_header(q, "since"))) {
		char *end;

		f->since = strtod(v, &end);
		if (end == v || *end || !isfinite(f->since) || f->since < 0)
			return gf_err_set(e, "'since' must be a time in epoch seconds, got '%s'", v);
	}
	return 0;
}

static void filter_free(struct filter *f)
{
	strv_free(f->users);
	strv_free(f->names);
	strv_free(f->fields);
	free(f->project);
	free(f->idv);
}

static bool matches(const struct filter *f, const struct job *j)
{
	if (!f->any_state && !f->states[j->state])
		return false;
	if (f->users ? !in_list(f->users, j->user) : !f->all_users && j->uid != f->uid)
		return false;
	if (f->names && !in_list(f->names, j->name))
		return false;
	if (f->project && (!j->project || strcmp(f->project, j->project)))
		return false;
	if (f->since > 0 && j->submit_time < f->since)
		return false;
	return !f->idv || bsearch(&j->id, f->idv, f->nidv, sizeof *f->idv, cmp_id);
}

/* What anyone may see of any job: who, what it is called, its state, its
 * resources and times. Its command, directory, environment and log are
 * its owner's and the admins'. */
static char *const public_fields[] = {
	"id", "name", "user", "uid", "project", "state", "st", "reason", "gpus", "shared", "gpu_memory_mb",
	"memory_mb", "cpus", "cpu_ids", "time_limit_secs", "priority", "priority_by_admin",
	"priority_across_users", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "group_id", "max_concurrent", "max_retries", "attempt", "retry_of", "redo_of",
	"submit_time", "start_time", "end_time", "exit_code", "exit_signal", "gpu_ids", "memory_enforced",
	"executor", "interactive", "preempt", "active", "attach_socket", "cluster", "slurm_id", NULL,
};

static bool in_strv(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (!strcmp(*v, s))
			return true;
	return false;
}

/* A running job's attach socket (system mode, tmux executor): public, so
 * that a user who may not attach hears the rule from the runner. */
static void add_attach_socket(struct server *s, const struct job *j, char *const *only, json_t *o)
{
	char sock[GF_PATH_MAX];

	if ((!only || in_strv(only, "attach_socket")) && j->state == JS_RUNNING &&
	    rundir_attach_socket(s, j, sock, sizeof sock))
		json_object_set_new(o, "attach_socket", json_string(sock));
}

/* A queued job's expected start (engine: jobs_expected): when, on which
 * GPUs, or null and why not. */
static void add_expected(struct server *s, const struct job *j, json_t *o)
{
	const struct sched_estimate *x = j->state == JS_QUEUED ? jobs_expected(s, j->id) : NULL;
	json_t *g;

	if (!x)
		return;
	if (x->why != EST_KNOWN) {
		json_object_set_new(o, "expected_start", json_null());
		json_object_set_new(o, "expected_start_note",
				    json_string(x->why == EST_CAP ? "beyond what the estimate looks at"
								  : "it waits for jobs whose end is not known "
								    "(no time limit, or held)"));
		return;
	}
	g = json_array();
	for (int i = 0; i < 64; i++)
		if ((x->gpu_mask >> i) & 1)
			json_array_append_new(g, json_integer(i));
	json_object_set_new(o, "expected_start", json_real(x->start));
	json_object_set_new(o, "expected_gpus", g);
}

static json_t *job_json_only(struct server *s, const struct caller *c, const struct job *j, char *const *only)
{
	char log[GF_PATH_MAX], *shown[sizeof public_fields / sizeof public_fields[0]];
	size_t n = 0;
	json_t *o;

	jobs_log_path(s, j, log, sizeof log);
	if (api_owns(c, j))
		o = job_to_json_only(j, log, only);
	else {
		for (char *const *f = public_fields; *f; f++)
			if (!only || in_strv(only, *f))
				shown[n++] = *f;
		shown[n] = NULL;
		o = job_to_json_only(j, NULL, shown);
	}
	if (!only) {
		quota_annotate(s, j, o);	/* why it waits (quota.c) */
		add_expected(s, j, o);
		idle_annotate(s, j, o);		/* idle for how long (idle.c) */
	}
	if (json_is_string(json_object_get(o, "notify_email")))	/* can its mail go out (notify.h) */
		json_object_set_new(o, "notify_transport", json_boolean(notify_mail_transport(s)));
	add_attach_socket(s, j, only, o);
	if (!only || in_strv(only, "priority_across_users"))
		json_object_set_new(o, "priority_across_users", json_integer(jobs_cross_priority(s, j)));
	return o;
}

static json_t *job_json(struct server *s, const struct caller *c, const struct job *j)
{
	return job_json_only(s, c, j, NULL);
}

/* Does the filter ask only for jobs that are not over? Then the open list
 * holds every one of them. */
static bool only_live(const struct filter *f)
{
	if (f->any_state)
		return false;
	for (int st = 0; st < JS_NSTATES; st++)
		if (f->states[st] && job_state_ended((enum job_state)st))
			return false;
	return true;
}

/* ---- the streamed list ------------------------------------------------- *
 *
 * A list is written a piece at a time: about LIST_PIECE bytes of job
 * objects, then, when the client has taken them (libevent calls
 * list_more once the connection's output is written), the next piece. A
 * list that fits one piece is one plain answer; a longer one goes out
 * chunked. Each job is written as it is when its piece is made, once, in
 * id order; the daemon serves other requests between pieces. */

#define LIST_PIECE (64 * 1024)
#define TAG_MAX (16 * 1024 * 1024)	/* a tagged list answered whole, at most */

struct lister {
	struct server *s;
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	struct caller c;
	struct filter f;
	uint64_t own_mask, other_mask;	/* the fields the owner / anyone else gets */
	bool annotate, attach, across, log, live, first, started, idle;
	bool tagged;			/* answered whole, with an ETag */
	int64_t next;			/* the next id to look at */
	size_t next_ref;		/* ids=: the next of f.idv to look at */
	struct jsonw w;
};

static void lister_free(struct lister *l)
{
	filter_free(&l->f);
	jw_free(&l->w);
	free(l);
}

/* One job's object, as job_json_only builds it for this caller. */
static void write_job(struct lister *l, const struct job *j)
{
	struct jsonw *w = &l->w;
	char log[GF_PATH_MAX], sock[GF_PATH_MAX];
	bool owner = api_owns(&l->c, j), first = true;
	uint64_t mask = owner ? l->own_mask : l->other_mask;

	if (!l->first)
		jw_lit(w, ",");
	l->first = false;
	jw_lit(w, "{");
	if (owner && l->log)
		jobs_log_path(l->s, j, log, sizeof log);
	jobw_members(w, j, owner ? log : NULL, mask, &first);
	if (l->annotate && j->state == JS_QUEUED) {	/* why it waits (quota.c) */
		json_t *o = json_object(), *v;

		quota_annotate(l->s, j, o);
		if (l->f.start)
			add_expected(l->s, j, o);
		if ((v = json_object_get(o, "reason_detail")))
			jobw_key(w, "reason_detail", &first), jw_json(w, v, JSON_COMPACT);
		for (const char *const *k = (const char *const[]){ "expected_start", "expected_gpus",
								   "expected_start_note", NULL }; *k; k++)
			if ((v = json_object_get(o, *k)))
				jobw_key(w, *k, &first), jw_json(w, v, JSON_COMPACT);
		json_decref(o);
	}
	if (l->idle && j->state == JS_RUNNING && idle_applies(l->s, j)) {	/* idle for how long (idle.c) */
		json_t *o = json_object(), *v;

		idle_annotate(l->s, j, o);
		for (const char *const *k = (const char *const[]){ "idle_secs", "idle_warned", NULL }; *k; k++)
			if ((v = json_object_get(o, *k)))
				jobw_key(w, *k, &first), jw_json(w, v, JSON_COMPACT);
		json_decref(o);
	}
	if (l->across)
		jobw_key(w, "priority_across_users", &first), jw_int(w, jobs_cross_priority(l->s, j));
	if (jm(j)->notify_email && jobw_has(mask, "notify_email"))	/* can its mail go out (notify.h) */
		jobw_key(w, "notify_transport", &first), jw_lit(w, notify_mail_transport(l->s) ? "true" : "false");
	if (l->attach && j->state == JS_RUNNING && rundir_attach_socket(l->s, j, sock, sizeof sock) &&
	    gf_utf8_valid(sock, strlen(sock)))
		jobw_key(w, "attach_socket", &first), jw_cstr(w, sock);
	jw_lit(w, "}");
}

/* The first index of the open list at or after id (it is sorted by id). */
static size_t open_from(struct server *s, int64_t id)
{
	size_t lo = 0, hi = s->nopen;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->open[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Write jobs into l->w until a piece is full; true when the list is done. */
static bool fill_piece(struct lister *l)
{
	struct server *s = l->s;

	if (l->live) {
		for (size_t i = open_from(s, l->next); i < s->nopen; i++) {
			struct job *j = jobs_open_at(s, i);

			l->next = s->open[i] + 1;
			if (j && matches(&l->f, j))
				write_job(l, j);
			if (l->w.len >= LIST_PIECE)
				return l->next > s->open[s->nopen - 1];
		}
	} else if (l->f.idv) {	/* by id: those jobs only, not a walk of all */
		while (l->next_ref < l->f.nidv) {
			struct job *j = jobs_get(s, l->f.idv[l->next_ref++]);

			if (j && matches(&l->f, j))
				write_job(l, j);
			if (l->w.len >= LIST_PIECE)
				return l->next_ref == l->f.nidv;
		}
	} else
		for (; l->next <= s->max_id; l->next++) {
			struct job *j;

			if (l->f.since > 0 && l->next % JOBS_SINCE_BLOCK == 0 &&
			    (l->next = jobs_since_next(s, l->f.since, l->next)) > s->max_id)
				break;
			if ((j = s->jobs[l->next]) && matches(&l->f, j))
				write_job(l, j);
			if (l->w.len >= LIST_PIECE) {
				l->next++;
				return l->next > s->max_id;
			}
		}
	return true;
}

static void list_closed(struct evhttp_connection *conn, void *arg);

/* Send what fill_piece wrote; then the next piece when it is taken. */
static void list_more(struct evhttp_connection *conn, void *arg)
{
	struct lister *l = arg;
	bool done;
	struct evbuffer *b;

	(void)conn;
	done = fill_piece(l);
	if (l->tagged && !l->started) {
		/* Up to TAG_MAX bytes made at once: a list that ends within
		 * them is answered whole with its ETag (or a 304); a longer
		 * one streams on from there, untagged. */
		while (!done && l->w.len < TAG_MAX)
			done = fill_piece(l);
		if (done) {
			jw_lit(&l->w, "]}");
			api_reply_tagged(l->req, &l->w);
			lister_free(l);
			return;
		}
	}
	b = evbuffer_new();
	if (done)
		jw_lit(&l->w, "]}\n");
	evbuffer_add(b, l->w.p, l->w.len);
	l->w.len = 0;
	if (!l->started && done) {	/* all of it in one piece: a plain answer */
		evhttp_add_header(evhttp_request_get_output_headers(l->req), "Content-Type", "application/json");
		evhttp_send_reply(l->req, 200, "OK", b);
		evbuffer_free(b);
		lister_free(l);
		return;
	}
	if (!l->started) {
		l->started = true;
		evhttp_add_header(evhttp_request_get_output_headers(l->req), "Content-Type", "application/json");
		evhttp_send_reply_start(l->req, 200, "OK");
		/* A client that goes away mid-list: the connection tells. */
		evhttp_connection_set_closecb(l->conn, list_closed, l);
	}
	if (done) {
		evhttp_connection_set_closecb(l->conn, NULL, NULL);
		evhttp_send_reply_chunk(l->req, b);
		evhttp_send_reply_end(l->req);
		lister_free(l);
	} else
		evhttp_send_reply_chunk_with_cb(l->req, b, list_more, l);
	evbuffer_free(b);
}

/* The connection is going away before the list was done (the client left,
 * a timeout, the daemon stopping). A request libevent let go of is ours to
 * free; one it still holds it frees itself. */
static void list_closed(struct evhttp_connection *conn, void *arg)
{
	struct lister *l = arg;

	(void)conn;
	if (!evhttp_request_get_connection(l->req))
		evhttp_request_free(l->req);
	lister_free(l);
}

void api_h_list(struct server *s, struct evhttp_request *req, struct caller *c)
{
	struct evkeyvalq q;
	struct lister *l = calloc(1, sizeof *l);
	struct gf_err e;
	char *shown[sizeof public_fields / sizeof public_fields[0]];
	size_t n = 0;

	if (!l)
		abort();
	evhttp_parse_query_str(evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	if (parse_filter(s, c, &q, &l->f, &e)) {
		evhttp_clear_headers(&q);
		lister_free(l);
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	evhttp_clear_headers(&q);
	*l = (struct lister){ .s = s, .req = req, .conn = evhttp_request_get_connection(req), .c = *c, .f = l->f,
			      .first = true, .next = 1 };
	l->own_mask = jobw_mask(l->f.fields);
	for (char *const *p = public_fields; *p; p++)
		if (!l->f.fields || in_strv(l->f.fields, *p))
			shown[n++] = *p;
	shown[n] = NULL;
	l->other_mask = jobw_mask(shown);
	l->log = jobw_has(l->own_mask, "log_path");
	l->annotate = !l->f.fields;
	l->idle = !l->f.fields || in_strv(l->f.fields, "idle_secs") || in_strv(l->f.fields, "idle_warned");
	l->attach = !l->f.fields || in_strv(l->f.fields, "attach_socket");
	l->across = !l->f.fields || in_strv(l->f.fields, "priority_across_users");
	l->live = only_live(&l->f);
	if (!l->live && l->f.since > 0)	/* the submit-time index: no walk of older jobs */
		l->next = jobs_since_next(s, l->f.since, 1);
	/* The lists a dashboard asks for on each refresh, the jobs that are
	 * not over (active=1) and those submitted since (since=), are made
	 * whole and sent with an ETag of their bytes, so an unchanged answer
	 * is a 304 without a body (up to TAG_MAX bytes; a longer one streams,
	 * untagged). */
	l->tagged = l->live || l->f.since > 0;
	jw_lit(&l->w, "{\"jobs\":[");
	list_more(NULL, l);
}

void api_h_get(struct server *s, struct evhttp_request *req, struct caller *c, const char *idstr)
{
	char *end;
	long long id = strtoll(idstr, &end, 10);
	struct job *j = *end || end == idstr ? NULL : jobs_get(s, id);

	if (!j) {
		api_reply_err(req, 404, "job %s does not exist", idstr);
		return;
	}
	api_reply(req, 200, json_pack("{s:o}", "job", job_json(s, c, j)));
}

