/* api_jobs.c — the job routes of the API: submit (POST /jobs) and the
 * changes that act on a list of jobs (cancel, hold, release). Listing and
 * getting jobs are in api_list.c. */
#include "apiint.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
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
	int64_t *ids = NULL;
	bool launch_after;
	size_t i;

	gf_trace("accept", 0);	/* the start-latency trace (trace.h) */
	if (api_decode_submission(s, c->uid, c->pid, body, &sub, &e)) {
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
	if (jobs_submit(s, sub.jobs, sub.n, sub.env, sub.envlen, ids, &launch_after, &e)) {
		json_decref(out);
		free(ids);
		api_submission_free(&sub);
		api_reply_store_err(s, req, &e);
		return;
	}
	if (launch_after)
		evhttp_request_set_on_complete_cb(req, on_submit_answered, s);
	for (i = 0; i < sub.n; i++)
		json_array_append_new(out, json_pack("{s:I,s:s}", "id", (json_int_t)ids[i], "name",
						     jobs_get(s, ids[i])->name));
	{
		json_t *reply = json_pack("{s:o}", "jobs", out);
		bool mail = false;

		for (i = 0; i < sub.n && !mail; i++)
			mail = jm(jobs_get(s, ids[i]))->notify_email != NULL;
		if (mail && !notify_mail_transport(s))	/* kept, warned (notify.h) */
			json_object_set_new(reply, "warnings", json_pack("[s]", notify_no_transport_warning()));
		api_submission_free(&sub);
		api_reply(req, 201, reply);
	}
	gf_trace("reply", ids[0]);
	free(ids);
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

	if (api_owns(c, j) && jm(j)->cluster)	/* Slurm's: the client asks Slurm (remote.c) */
		snprintf(msg, sizeof msg, "job %lld is on Slurm cluster %s: gcancel and gjob hold/release "
			 "act on it through Slurm; it cannot be %s here", (long long)j->id, jm(j)->cluster,
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

/* {"cancelled":[…],"dependents":[…],"errors":[…]}: the dependents written
 * straight from the ids (a cascade's answer may list 100,000 of them). */
static void reply_cancelled(struct evhttp_request *req, json_t *done, const int64_t *deps, size_t ndeps,
			    json_t *errs)
{
	struct jsonw w = { 0 };

	jw_lit(&w, "{\"cancelled\":");
	jw_json(&w, done, JSON_COMPACT);
	jw_lit(&w, ",\"dependents\":[");
	for (size_t i = 0; i < ndeps; i++) {
		if (i)
			jw_lit(&w, ",");
		jw_int(&w, deps[i]);
	}
	jw_lit(&w, "],\"errors\":");
	jw_json(&w, errs, JSON_COMPACT);
	jw_lit(&w, "}");
	json_decref(done);
	json_decref(errs);
	api_reply_jw(req, 200, &w);
}

static void cancel_answered(struct server *s, void *arg, const char *err)
{
	struct cancel_answer *a = arg;
	int64_t *also = NULL;
	size_t nalso = 0;
	char msg[GF_ERR_MAX + 100];

	jobs_failed_because(s, a->roots, a->nroots, &also, &nalso);
	if (err) {
		snprintf(msg, sizeof msg, "%s (the jobs that depend on it are cancelled once that can be recorded)",
			 err);
		api_push_err(a->errs, a->roots[0], msg);
	}
	reply_cancelled(a->req, a->done, also, nalso, a->errs);
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
		if (nok)
			jobs_would_cascade(s, ok, nok, &also, &nalso);
		reply_cancelled(req, done, also, nalso, errs);
		free(also);
		free(ok);
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
