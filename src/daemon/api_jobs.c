/* api_jobs.c — the job routes of the API: submit (POST /jobs), list and
 * get (filters, the fields others may see, a job's JSON), and the changes
 * that act on a list of jobs (cancel, hold, release). */
#include "apiint.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "trace.h"

/* The answer to a submission is on its way: launch the runners of the jobs
 * its commit recorded as started. Whoever learns of the job from that
 * answer asks after this, so never sees it Running without its run
 * directory, log and runner launched; and the answer never waits for the
 * launch. (Not called when the connection failed: the pass then does it.) */
static void on_submit_answered(struct evhttp_request *req, void *arg)
{
	(void)req;
	jobs_launch_recorded(arg);
}

void api_h_submit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	struct submission sub;
	json_t *out;
	struct gf_err e;
	int64_t env_id, *ids = NULL;
	bool queued = false;
	size_t i;

	gf_trace("accept", 0);	/* the start-latency trace (trace.h) */
	if (api_decode_submission(s, c->uid, body, &sub, &e)) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (quota_check_submit(s, sub.jobs, sub.n, &e)) {
		api_reply_err(req, 409, "%s", e.msg);
		api_submission_free(&sub);
		return;
	}
	out = json_array();
	if (sub.dry) {
		for (i = 0; i < sub.n; i++)
			json_array_append_new(out, job_to_json(sub.jobs[i], NULL));
		api_reply(req, 200, json_pack("{s:o}", "jobs", out));
		api_submission_free(&sub);
		return;
	}
	if (!(ids = calloc(sub.n, sizeof *ids)))
		abort();
	if (jobs_txn_begin(s, &e) || (env_id = store_put_env(s->store, sub.env, sub.envlen, &e)) < 0)
		goto fail;
	for (i = 0; i < sub.n; i++) {
		struct job *j = sub.jobs[i];

		sub.jobs[i] = NULL;	/* the table's now, or freed */
		j->env_id = env_id;
		j->group_id = sub.n > 1 && i > 0 ? ids[0] : 0;
		if (jobs_insert(s, j, &e))
			goto fail;
		ids[i] = j->id;
		queued |= j->state == JS_QUEUED;
	}
	if (sub.n > 1) {
		struct job *first = jobs_get(s, ids[0]);

		first->group_id = first->id;
		if (jobs_save(s, first, &e))
			goto fail;
	}
	if (queued)
		jobs_start_at_once(s);	/* what can start is recorded in this commit */
	if (jobs_txn_commit(s, &e))
		goto fail;
	gf_trace("commit", ids[0]);
	if (jobs_get(s, ids[0])->state == JS_RUNNING) {
		gf_trace("running_commit", ids[0]);
		evhttp_request_set_on_complete_cb(req, on_submit_answered, s);
	}
	for (i = 0; i < sub.n; i++)
		json_array_append_new(out, json_pack("{s:I,s:s}", "id", (json_int_t)ids[i], "name",
						     jobs_get(s, ids[i])->name));
	api_submission_free(&sub);
	server_schedule(s);
	api_reply(req, 201, json_pack("{s:o}", "jobs", out));
	gf_trace("reply", ids[0]);
	free(ids);
	return;
fail:
	json_decref(out);
	jobs_txn_rollback(s);
	free(ids);
	api_submission_free(&sub);
	api_reply_store_err(s, req, &e);
}

/* ---- listing ----------------------------------------------------------- */

struct filter {
	bool states[JS_NSTATES];
	bool any_state;
	bool all_users;
	uid_t uid;
	char **users;
	struct gf_jobref_list ids;
	char **names;
	char *project;
	double since;
	char **fields;		/* only these job fields in the answer */
};

static char **split_csv(const char *s)
{
	size_t n = 1, k = 0;
	char **v, *copy = strdup(s), *tok, *save = NULL;

	for (const char *p = s; *p; p++)
		n += *p == ',';
	v = calloc(n + 1, sizeof *v);
	if (!v || !copy)
		abort();
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		v[k++] = strdup(tok);
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

static int parse_filter(struct server *s, struct caller *c, struct evkeyvalq *q, struct filter *f,
			struct gf_err *e)
{
	const char *v;

	memset(f, 0, sizeof *f);
	f->any_state = true;
	f->uid = c->uid;
	if ((v = evhttp_find_header(q, "states"))) {
		char **names = split_csv(v);

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
		f->users = split_csv(v);
	else if (c->uid == (uid_t)-1)
		f->all_users = true;	/* anonymous TCP reader */
	if ((v = evhttp_find_header(q, "ids"))) {
		if (gf_parse_jobref_list(v, &f->ids, e))
			return -1;
		for (size_t i = 0; i < f->ids.n; i++)
			if (f->ids.v[i].is_relative) {
				char ref[32];
				int64_t id;

				snprintf(ref, sizeof ref, "@~%lld", (long long)f->ids.v[i].back);
				if ((id = jobs_resolve_ref(s, c->uid, ref, e)) < 0)
					return -1;
				f->ids.v[i].is_relative = 0;
				f->ids.v[i].id = id;
			}
		f->all_users = true;	/* asking by id shows the job whoever owns it */
	}
	if ((v = evhttp_find_header(q, "names")))
		f->names = split_csv(v);
	if ((v = evhttp_find_header(q, "fields"))) {
		f->fields = split_csv(v);
		for (char **p = f->fields; *p; p++)
			if (!job_field_known(*p))
				return gf_err_set(e, "unknown job field '%s' in 'fields'", *p);
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
	gf_jobref_list_free(&f->ids);
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
	if (f->ids.n) {
		for (size_t i = 0; i < f->ids.n; i++)
			if (f->ids.v[i].id == j->id)
				return true;
		return false;
	}
	return true;
}

/* What anyone may see of any job: who, what it is called, its state, its
 * resources and times. Its command, directory, environment and log are
 * its owner's and the admins'. */
static char *const public_fields[] = {
	"id", "name", "user", "uid", "project", "state", "st", "reason", "gpus", "shared", "gpu_memory_mb",
	"memory_mb", "time_limit_secs", "priority", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "group_id", "max_concurrent", "max_retries", "attempt", "retry_of", "redo_of",
	"submit_time", "start_time", "end_time", "exit_code", "exit_signal", "gpu_ids", "memory_enforced",
	"executor", "active", "attach_socket", "cluster", "slurm_id", NULL,
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
	    exec_attach_socket(s, j, sock, sizeof sock))
		json_object_set_new(o, "attach_socket", json_string(sock));
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
	if (!only)
		quota_annotate(s, j, o);	/* why it waits (quota.c) */
	add_attach_socket(s, j, only, o);
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

static void add_job(struct server *s, const struct caller *c, struct evbuffer *out, const struct job *j,
		    char *const *only, bool *first)
{
	json_t *o = job_json_only(s, c, j, only);

	if (!*first)
		evbuffer_add(out, ",", 1);
	*first = false;
	json_dump_callback(o, api_to_evbuffer, out, JSON_COMPACT);
	json_decref(o);
}

void api_h_list(struct server *s, struct evhttp_request *req, struct caller *c)
{
	struct evkeyvalq q;
	struct filter f;
	struct gf_err e;
	struct evbuffer *out;
	bool first = true;

	evhttp_parse_query_str(evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	if (parse_filter(s, c, &q, &f, &e)) {
		evhttp_clear_headers(&q);
		filter_free(&f);
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	evhttp_clear_headers(&q);
	/* Written job by job into the answer, never as one tree: a long list
	 * costs its size in the output buffer, not several times that. */
	out = evbuffer_new();
	evbuffer_add(out, "{\"jobs\":[", 9);
	if (only_live(&f)) {
		for (size_t i = 0; i < s->nopen; i++) {
			struct job *j = jobs_open_at(s, i);

			if (j && matches(&f, j))
				add_job(s, c, out, j, f.fields, &first);
		}
	} else
		for (int64_t i = 1; i <= s->max_id; i++)
			if (s->jobs[i] && matches(&f, s->jobs[i]))
				add_job(s, c, out, s->jobs[i], f.fields, &first);
	evbuffer_add(out, "]}\n", 3);
	filter_free(&f);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
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

/* ---- changes to jobs --------------------------------------------------- */

/* Resolve body["ids"]; unknown ones go to errs. Returns count. */
static size_t body_ids(struct server *s, struct caller *c, json_t *body, int64_t **out, json_t *errs,
		       struct gf_err *e)
{
	json_t *ids = json_object_get(body, "ids"), *item;
	size_t i, n = 0;

	*out = NULL;
	if (!json_is_array(ids) || !json_array_size(ids)) {
		gf_err_set(e, "'ids' must be a non-empty array of job references");
		return 0;
	}
	*out = calloc(json_array_size(ids), sizeof **out);
	if (!*out)
		abort();
	json_array_foreach(ids, i, item) {
		struct gf_err ie;
		int64_t id = api_ref_id(s, c->uid, item, &ie);

		if (id < 0)
			json_array_append_new(errs, json_pack("{s:o,s:s}", "id", json_deep_copy(item),
							      "error", ie.msg));
		else
			(*out)[n++] = id;
	}
	return n;
}

/* The refusal that names the rule. */
void api_not_yours(const struct job *j, const char *verb, char *msg, size_t size)
{
	const char *who = j->user ? j->user : "another user";

	snprintf(msg, size, "job %lld belongs to %s; only %s or an admin may %s it", (long long)j->id, who, who,
		 verb);
}

bool api_permitted(struct caller *c, struct job *j, const char *verb, json_t *errs)
{
	char msg[512];

	if (api_owns(c, j) && j->cluster)	/* Slurm's: the client asks Slurm (remote.c) */
		snprintf(msg, sizeof msg, "job %lld is on Slurm cluster %s: gcancel and gjob hold/release "
			 "act on it through Slurm; it cannot be %s here", (long long)j->id, j->cluster,
			 !strcmp(verb, "cancel") ? "cancelled" : !strcmp(verb, "hold") ? "held" :
			 !strcmp(verb, "release") ? "released" : "updated");
	else if (api_owns(c, j))
		return true;
	else
		api_not_yours(j, verb, msg, sizeof msg);
	json_array_append_new(errs, json_pack("{s:I,s:s}", "id", (json_int_t)j->id, "error", msg));
	return false;
}

/* The start of every handler that acts on a list of jobs: `ok` says whether
 * its own field checks passed (e says why not). The ids are resolved, those
 * that name no job recorded as errors. Answers 400 and returns false when
 * there is nothing to act on. */
bool api_id_batch_start(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			bool ok, struct gf_err *e, struct id_batch *b)
{
	b->ids = NULL;
	b->n = 0;
	b->done = json_array();
	b->errs = json_array();
	if (ok) {
		b->n = body_ids(s, c, body, &b->ids, b->errs, e);
		if (b->n || json_array_size(b->errs))
			return true;
	}
	json_decref(b->errs);
	json_decref(b->done);
	free(b->ids);
	api_reply_err(req, 400, "%s", e->msg);
	return false;
}

void api_push_err(json_t *errs, int64_t id, const char *msg)
{
	json_array_append_new(errs, json_pack("{s:I,s:s}", "id", (json_int_t)id, "error", msg));
}

/* A cancel answered when its cascade is through. */
struct cancel_answer {
	struct evhttp_request *req;
	json_t *done, *errs;
	int64_t *roots;
	size_t nroots;
};

static void cancel_answered(struct server *s, void *arg, const char *err)
{
	struct cancel_answer *a = arg;
	json_t *deps = json_array();
	int64_t *also = NULL;
	size_t nalso = 0;
	char msg[GF_ERR_MAX + 100];

	jobs_failed_because(s, a->roots, a->nroots, &also, &nalso);
	for (size_t i = 0; i < nalso; i++)
		json_array_append_new(deps, json_integer(also[i]));
	if (err) {
		snprintf(msg, sizeof msg, "%s (the jobs that depend on it are cancelled once that can be recorded)",
			 err);
		api_push_err(a->errs, a->roots[0], msg);
	}
	api_reply(a->req, 200, json_pack("{s:o,s:o,s:o}", "cancelled", a->done, "dependents", deps, "errors", a->errs));
	free(also);
	free(a->roots);
	free(a);
}

void api_h_cancel(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "ids", "dry_run", NULL };
	struct cancel_answer *a;
	struct id_batch b;
	json_t *errs, *done;
	int64_t *ids, *ok, *also = NULL;
	size_t n, nok = 0, nalso = 0;
	bool dry = false, *seen;
	struct gf_err e;

	if (!api_id_batch_start(s, req, c, body,
			    !api_check_fields(body, fields, "request", &e) && !api_get_bool(body, "dry_run", &dry, &e), &e,
			    &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	ok = calloc(n + 1, sizeof *ok);
	seen = calloc((size_t)s->max_id + 1, sizeof *seen);
	if (!ok || !seen)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (seen[j->id] || !api_permitted(c, j, "cancel", errs))
			continue;
		seen[j->id] = true;
		if (job_state_ended(j->state)) {
			if (dry)
				snprintf(e.msg, sizeof e.msg, "already ended");
			else
				snprintf(e.msg, sizeof e.msg, "job %lld has already ended (%s)", (long long)j->id,
					 job_state_name(j->state));
			api_push_err(errs, j->id, e.msg);
		} else {
			ok[nok++] = j->id;
			json_array_append_new(done, json_integer(j->id));
		}
	}
	free(seen);
	free(ids);
	if (dry || !nok) {
		json_t *deps = json_array();

		if (nok)
			jobs_would_cascade(s, ok, nok, &also, &nalso);
		for (size_t i = 0; i < nalso; i++)
			json_array_append_new(deps, json_integer(also[i]));
		free(also);
		free(ok);
		api_reply(req, 200, json_pack("{s:o,s:o,s:o}", "cancelled", done, "dependents", deps, "errors", errs));
		return;
	}
	/* Answered by cancel_answered once the dependents are cancelled too
	 * (maybe before jobs_cancel_many returns); other requests are served
	 * meanwhile. */
	if (!(a = calloc(1, sizeof *a)))
		abort();
	*a = (struct cancel_answer){ .req = req, .done = done, .errs = errs, .roots = ok, .nroots = nok };
	if (jobs_cancel_many(s, ok, nok, "CancelledByUser", cancel_answered, a, &e)) {
		json_decref(done);
		json_decref(errs);
		free(ok);
		free(a);
		api_reply_store_err(s, req, &e);
	}
}

void api_h_hold_release(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			bool hold)
{
	static const char *const fields[] = { "ids", "at", NULL };
	struct id_batch b;
	json_t *errs, *done;
	int64_t *ids;
	double at = 0;
	size_t n;
	struct gf_err e;

	if (!api_id_batch_start(s, req, c, body,
			    !api_check_fields(body, fields, "request", &e) && !api_get_time(body, "at", &at, &e), &e, &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	/* One transaction: every change of the request is recorded, or none. */
	if (jobs_txn_begin(s, &e))
		goto fail;
	for (size_t i = 0; i < n && !s->txn.failed; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (!api_permitted(c, j, hold ? "hold" : "release", errs))
			continue;
		if (hold ? jobs_hold(s, j, &e) : jobs_release(s, j, at, &e))
			api_push_err(errs, j->id, e.msg);
		else
			json_array_append_new(done, json_integer(j->id));
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	free(ids);
	api_reply(req, 200, json_pack("{s:o,s:o}", "done", done, "errors", errs));
	return;
fail:
	free(ids);
	json_decref(done);
	json_decref(errs);
	api_reply_store_err(s, req, &e);
}
