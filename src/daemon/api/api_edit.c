/* api_edit.c — the API routes that change a job's spec: update (a waiting
 * job edited in place), redo (a job submitted again, with changes) and
 * limit (a running job's time limit). */
#include "apiint.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execlimit.h"
#include "parse.h"

/* ---- update, redo, limits --------------------------------------------- */

/* The fields of a job's JSON form that are also submission fields: what
 * would make this job again. Absent values come as null, which a spec reads
 * as "not given". */
static const char *const respec_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "project", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "max_concurrent", "max_retries", "params", "command_template", "notify_email",
	"notify_on", "cpus", "interactive", NULL,
};

static json_t *spec_of(const struct job *j)
{
	return job_to_json_only(j, NULL, (char *const *)respec_fields);
}

static const char *const update_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "max_concurrent",
	"max_retries", "params", "command_template", "cpus", NULL,
};

/* set has params and no new command: the job's command is its template
 * filled again with its parameters, the new ones winning (spec's "params"
 * and "command" become those). A job without a template (submitted
 * without parameters, or stored before templates were kept) is refused. */
static int refill(const struct job *old, json_t *spec, json_t *set, struct gf_err *e)
{
	json_t *tmpl = json_object_get(spec, "command_template"), *params, *v;
	char **words, **filled;
	const char **keys, **vals, *k;
	size_t n = 0, nw, i;
	int rc = 0;

	if (api_check_params(json_object_get(set, "params"), e))
		return -1;
	if (!json_is_array(tmpl))
		return gf_err_set(e, "job %lld keeps no command template (it was submitted without --param, or by an "
				     "older gflowd): give the new command with -c, -s or after --, and --param fills "
				     "its {KEY}s", (long long)old->id);
	params = jm(old)->params ? json_deep_copy(jm(old)->params) : json_object();
	json_object_update(params, json_object_get(set, "params"));
	if (!(words = strv_from_json(tmpl, e, "command_template"))) {
		json_decref(params);
		return -1;
	}
	nw = strv_len(words);
	keys = calloc(json_object_size(params) + 1, sizeof *keys);
	vals = calloc(json_object_size(params) + 1, sizeof *vals);
	filled = calloc(nw + 1, sizeof *filled);
	if (!keys || !vals || !filled)
		abort();
	json_object_foreach(params, k, v) {
		keys[n] = k;
		vals[n++] = json_string_value(v);
	}
	for (i = 0; i < nw && !rc; i++)
		if (!(filled[i] = gf_fill_template(words[i], keys, vals, n, e))) {
			gf_err_prefix(e, "job %lld: command word %zu", (long long)old->id, i + 1);
			rc = -1;
		}
	if (!rc) {
		json_object_set_new(spec, "command", strv_to_json(filled));
		json_object_set_new(spec, "params", params);
	} else
		json_decref(params);
	for (i = 0; i < nw; i++)
		free(filled[i]);
	free(filled);
	free(keys);
	free(vals);
	strv_free(words);
	return rc;
}

/* Apply `set` (null clears a field) over the job's spec and validate the
 * result as a new submission would be. */
static struct job *edited(struct server *s, uid_t uid, const struct job *old, json_t *set, bool keep_admin,
			  struct gf_err *e)
{
	json_t *spec;
	const char *k;
	json_t *v;
	struct job *n;
	struct gf_execsize envsize = { 0 };
	char *env;
	size_t len;

	/* the job keeps its environment: count it for the execve limits (one
	 * that cannot be read is reported when the job starts) */
	if (!store_get_env(s->store, old->env_id, &env, &len, NULL)) {
		for (size_t off = 0, l; off < len; off += l + 1)
			if ((l = strnlen(env + off, len - off)) < len - off)
				gf_execsize_env(&envsize, env + off, NULL);
		free(env);
	}
	spec = spec_of(old);
	json_object_foreach(set, k, v) {
		if (json_is_null(v))
			json_object_del(spec, k);
		else
			json_object_set(spec, k, v);
	}
	if (json_is_object(json_object_get(set, "params")) && !json_object_get(set, "command")) {
		if (refill(old, spec, set, e)) {
			json_decref(spec);
			return NULL;
		}
	} else if (json_object_get(set, "command") && !json_object_get(set, "command_template"))
		json_object_del(spec, "command_template");	/* a new command is no longer the template's */
	n = api_spec_to_job(s, uid, spec, old->cwd, &envsize, old->rlimits, e);
	json_decref(spec);
	if (!n)
		return NULL;
	/* A priority not changed keeps who set it (an admin's stays an
	 * admin's while its owner edits other fields); redo by its owner
	 * makes a job of the owner's priority. */
	if (!json_object_get(set, "priority"))
		n->priority_by_admin = old->priority_by_admin && (keep_admin || auth_is_admin(s, uid));
	n->uid = old->uid;
	job_set_str(&n->user, old->user);
	n->env_id = old->env_id;
	job_set_group_id(n, job_group_id(old));
	n->executor = old->executor;
	job_set_str(&jm_w(n)->log_dir, jm(old)->log_dir);
	/* stays preemptible (or not), as submitted */
	jm_w(n)->preempt = jm(old)->preempt & (PJ_PREEMPTIBLE | PJ_MODE_CANCEL);
	jm_w(n)->preempt_sig = jm(old)->preempt_sig;
	jm_w(n)->preempt_secs = jm(old)->preempt_secs;
	job_more_trim(n);
	return n;
}

/* An edited job keeps what makes it the same job: copy that from j. */
static void keep_identity(struct job *n, const struct job *j)
{
	n->id = j->id;
	n->state = j->state;
	job_set_reason(n, j->reason);
	n->submit_time = j->submit_time;
	n->attempt = j->attempt;
	jm_w(n)->retry_of = jm(j)->retry_of;
	jm_w(n)->redo_of = jm(j)->redo_of;
	jm_w(n)->log_seq = jm(j)->log_seq;
	jm_w(n)->requeues = jm(j)->requeues;
	n->run_seq = j->run_seq;
}

void api_h_update(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "ids", "set", NULL };
	json_t *set = json_object_get(body, "set"), *errs, *done;
	struct id_batch b;
	int64_t *ids;
	size_t n;
	struct gf_err e;

	if (!api_id_batch_start(s, req, c, body,
			    !api_check_fields(body, fields, "request", &e) &&
				    (json_is_object(set) || !gf_err_set(&e, "'set' must be an object of fields to change")) &&
				    !api_check_fields(set, update_fields, "'set'", &e),
			    &e, &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	if (jobs_txn_begin(s, &e)) {
		free(ids);
		json_decref(done);
		json_decref(errs);
		api_reply_store_err(s, req, &e);
		return;
	}
	for (size_t i = 0; i < n && !s->txn.failed; i++) {
		struct job *j = jobs_get(s, ids[i]), *nj;

		if (!api_permitted(c, j, "update", errs))
			continue;
		if (j->state != JS_QUEUED && j->state != JS_HOLD) {
			snprintf(e.msg, sizeof e.msg, "job %lld is %s: only queued or held jobs can be updated",
				 (long long)j->id, job_state_name(j->state));
			api_push_err(errs, j->id, e.msg);
			continue;
		}
		if (!(nj = edited(s, c->uid, j, set, true, &e)) ||
		    (jobs_would_cycle(s, j->id, nj->deps, nj->ndeps) &&
		     gf_err_set(&e, "the new dependencies of job %lld would form a cycle", (long long)j->id))) {
			job_free(nj);
			api_push_err(errs, j->id, e.msg);
			continue;
		}
		keep_identity(nj, j);
		/* j stays the same struct, so pointers to it stay valid. */
		if (jobs_replace(s, j, nj, &e) == 0)
			json_array_append_new(done, json_integer(j->id));
	}
	free(ids);
	if (jobs_txn_commit(s, &e)) {
		json_decref(done);
		json_decref(errs);
		api_reply_store_err(s, req, &e);
		return;
	}
	server_schedule(s);
	api_reply(req, 200, json_pack("{s:o,s:o}", "done", done, "errors", errs));
}

void api_h_redo(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "id", "cascade", "set", NULL };
	json_t *set = json_object_get(body, "set"), *out = NULL, *empty = json_object();
	int64_t *old = NULL, *newid = NULL, root;
	struct job **made = NULL;
	size_t nold = 0, nmade = 0;
	bool cascade = false;
	struct gf_err e;
	struct job *j;
	int code = 400;

	if (api_check_fields(body, fields, "request", &e) || api_get_bool(body, "cascade", &cascade, &e) ||
	    (set && !json_is_object(set) && gf_err_set(&e, "'set' must be an object")) ||
	    (set && api_check_fields(set, update_fields, "'set'", &e)) ||
	    (root = api_ref_id(s, c->uid, json_object_get(body, "id"), &e)) < 0)
		goto bad;
	j = jobs_get(s, root);
	if (!api_owns(c, j)) {
		api_not_yours(j, "redo", e.msg, sizeof e.msg);
		goto bad;
	}
	if (jm(j)->cluster) {
		gf_err_set(&e, "job %lld ran on Slurm cluster %s: submit it again with gbatch --cluster %s",
			   (long long)root, jm(j)->cluster, jm(j)->cluster);
		goto bad;
	}
	if (jm(j)->interactive) {
		gf_err_set(&e, "job %lld was an interactive session (galloc): run galloc again", (long long)root);
		goto bad;
	}
	if (!job_state_ended(j->state)) {
		gf_err_set(&e, "job %lld is %s: only ended jobs can be redone", (long long)root,
			   job_state_name(j->state));
		goto bad;
	}
	if (j->unreadable) {
		gf_err_set(&e, "job %lld is an unreadable record (see gflowd's log): it cannot be redone",
			   (long long)root);
		goto bad;
	}
	old = malloc(sizeof *old);
	if (!old)
		abort();
	old[nold++] = root;
	if (cascade)
		jobs_failed_because(s, &root, 1, &old, &nold);
	/* Every job the request would run again is checked, not only the
	 * first: a cascade may reach the dependents of other users. */
	for (size_t i = 1; i < nold; i++) {
		const struct job *o = jobs_get(s, old[i]);

		if (!api_owns(c, o)) {
			const char *who = o->user ? o->user : "another user";

			gf_err_set(&e, "redo --cascade of job %lld would redo job %lld of %s; only %s or an admin may "
				   "redo it", (long long)root, (long long)o->id, who, who);
			code = 403;
			goto bad;
		}
	}
	made = calloc(nold, sizeof *made);
	newid = calloc(nold, sizeof *newid);
	if (!made || !newid)
		abort();
	for (size_t i = 0; i < nold; i++) {
		/* Parents that are redone too are swapped for their new copies
		 * once those have ids, below. */
		made[i] = edited(s, c->uid, jobs_get(s, old[i]), i == 0 && set ? set : empty, false, &e);
		if (!made[i])
			goto bad;
		nmade = i + 1;
	}
	if (quota_check_submit(s, made, nold, &e)) {
		code = 409;	/* over max_queued_jobs: none is made */
		goto bad;
	}
	if (jobs_txn_begin(s, &e))
		goto fail;
	out = json_array();
	for (size_t i = 0; i < nold; i++) {
		struct job *n = made[i];

		made[i] = NULL;		/* the table's now, or freed */
		for (size_t k = 0; k < n->ndeps; k++)
			for (size_t p = 0; p < i; p++)
				if (n->deps[k] == old[p])
					n->deps[k] = newid[p];
		jm_w(n)->redo_of = old[i];
		if (jobs_insert(s, n, &e))
			goto fail;
		newid[i] = n->id;
		json_array_append_new(out, json_pack("{s:I,s:s,s:I}", "id", (json_int_t)n->id, "name", n->name,
						     "redo_of", (json_int_t)old[i]));
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	server_schedule(s);
	api_reply(req, 201, json_pack("{s:o}", "jobs", out));
	goto done;
fail:
	jobs_txn_rollback(s);
	json_decref(out);
	code = 0;	/* the store's error, said as such */
bad:
	for (size_t i = 0; i < nmade; i++)
		job_free(made[i]);
	if (code)
		api_reply_err(req, code, "%s", e.msg);
	else
		api_reply_store_err(s, req, &e);
done:
	free(made);
	free(newid);
	free(old);
	json_decref(empty);
}

/* gctl set-limit: the running cap of the group a job belongs to. */
void api_h_limit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "id", "max_concurrent", NULL };
	int64_t id, k = -1, group;
	size_t changed = 0;
	struct gf_err e;
	struct job *j;

	if (api_check_fields(body, fields, "request", &e) ||
	    api_get_int(body, "max_concurrent", 0, 1000000, &k, &e) ||
	    (k < 0 && gf_err_set(&e, "'max_concurrent' is required (0 removes the cap)")) ||
	    (id = api_ref_id(s, c->uid, json_object_get(body, "id"), &e)) < 0) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	j = jobs_get(s, id);
	group = job_group_id(j) ? job_group_id(j) : j->id;
	if (jobs_txn_begin(s, &e))
		goto fail;
	for (int64_t i = group; i <= s->max_id && !s->txn.failed; i++) {
		struct job *g = s->jobs[i];

		if (!g || g->unreadable || (g->id != group && job_group_id(g) != group))
			continue;
		if (!api_owns(c, g)) {
			jobs_txn_rollback(s);
			api_not_yours(g, "limit", e.msg, sizeof e.msg);
			api_reply_err(req, 403, "%s", e.msg);
			return;
		}
		jobs_touch(s, g);
		g->max_concurrent = (int)k;
		jobs_save(s, g, &e);
		changed++;
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	server_schedule(s);
	api_reply(req, 200, json_pack("{s:I,s:I,s:I}", "group", (json_int_t)group, "max_concurrent", (json_int_t)k,
				  "jobs", (json_int_t)changed));
	return;
fail:
	api_reply_store_err(s, req, &e);
}
