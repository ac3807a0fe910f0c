/* api_remote.c — jobs on a Slurm cluster, as the daemon records them.
 *
 * gbatch --cluster submits with sbatch itself (the user's own ssh, never
 * the daemon's) and then records what Slurm accepted here, so that gqueue,
 * gjob and gcancel show one queue. A remote job is never scheduled, run or
 * cascaded by the daemon (the pass, pass.c, skips jobs with a cluster);
 * its state is what its owner's client last read from squeue/sacct:
 *
 *   POST /remote/jobs    {"cluster","cwd","jobs":[{name, command, slurm_id,
 *                         remote_log, project, gpus, memory_mb,
 *                         time_limit_secs, array_task_id, params, hold}]}
 *   POST /remote/update  {"jobs":[{id, state, reason, exit_code,
 *                         exit_signal, start_time, end_time}]}
 *
 * Both are the owner's (or an admin's); see docs/api.md.
 *
 * Records obey the rules of a submission: their projects pass [projects],
 * they count toward max_queued_jobs while Queued or Held, and a request
 * holds at most REMOTE_MAX_REQUEST of them; a user records at most
 * REMOTE_MAX_HOUR in any hour (counted from the store, no state of its
 * own), so that no one fills everyone's queue with made-up records. */
#include "apiint.h"

#include <event2/http.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"

#define REMOTE_MAX_REQUEST 10000	/* ten times Slurm's default MaxArraySize */
#define REMOTE_MAX_HOUR 20000

/* The cluster records uid made in the hour before now. */
static size_t recorded_lately(struct server *s, uid_t uid, double now)
{
	size_t n = 0;

	for (int64_t i = 1; i <= s->max_id; i++) {
		const struct job *j = s->jobs[i];

		if (j && !j->unreadable && j->uid == uid && jm(j)->cluster && j->submit_time > now - 3600)
			n++;
	}
	return n;
}

static void refuse(struct evhttp_request *req, int code, const struct gf_err *e)
{
	api_reply(req, code, json_pack("{s:s}", "error", e->msg));
}

static struct job *remote_job(struct server *s, uid_t uid, const char *cluster, const char *cwd, json_t *spec,
			      struct gf_err *e)
{
	static const char *const fields[] = {
		"name", "command", "slurm_id", "remote_log", "project", "gpus", "memory_mb",
		"time_limit_secs", "array_task_id", "params", "hold", NULL,
	};
	struct job *j = job_new();
	char user[256];
	int64_t v = 0;
	json_t *params;

	if (!json_is_object(spec)) {
		gf_err_set(e, "each job must be a JSON object");
		goto fail;
	}
	if (api_check_fields(spec, fields, "a remote job", e) ||
	    !(j->argv = strv_from_json(json_object_get(spec, "command"), e, "command")) ||
	    api_get_str(spec, "name", 200, &j->name, e) || api_get_str(spec, "slurm_id", 64, &jm_w(j)->slurm_id, e) ||
	    api_get_str(spec, "remote_log", 4096, &jm_w(j)->remote_log, e) ||
	    api_get_str(spec, "project", 1024, &j->project, e) ||
	    api_get_int(spec, "gpus", 0, 1 << 20, &v, e) ||
	    api_get_int(spec, "memory_mb", 0, INT64_C(1) << 40, &j->memory_mb, e) ||
	    api_get_int(spec, "time_limit_secs", 0, INT64_C(1) << 40, &j->time_limit_secs, e))
		goto fail;
	j->gpus = (int)v;
	v = 0;
	if (api_get_int(spec, "array_task_id", 0, INT64_C(1) << 40, &v, e))
		goto fail;
	if (v)
		job_set_array_task_id(j, v);
	if (!jm(j)->slurm_id || !j->name || !jm(j)->slurm_id[0] || !j->name[0]) {
		gf_err_set(e, "a remote job needs 'name' and 'slurm_id'");
		goto fail;
	}
	if (api_check_project(s, j, e))
		goto fail;
	params = json_object_get(spec, "params");
	if (params && api_check_params(params, e))
		goto fail;
	if (params) {
		json_decref(jm(j)->params);
		jm_w(j)->params = json_deep_copy(params);
	}
	job_set_str(&jm_w(j)->cluster, cluster);
	j->uid = uid;
	job_set_str(&j->user, job_user_name(uid, user, sizeof user));
	job_set_str(&j->cwd, cwd);
	j->state = json_is_true(json_object_get(spec, "hold")) ? JS_HOLD : JS_QUEUED;
	j->auto_cancel = true;
	j->priority = 10;
	j->submit_time = now_real();
	return j;
fail:
	job_free(j);
	return NULL;
}

static void record(struct server *s, struct evhttp_request *req, uid_t uid, json_t *body)
{
	static const char *const fields[] = { "cluster", "cwd", "jobs", NULL };
	json_t *jobs = json_object_get(body, "jobs"), *out = NULL;
	char *cluster = NULL, *cwd = NULL;
	struct job **list = NULL;
	int64_t first = 0;
	size_t i, n = json_array_size(jobs), lately;
	struct gf_err e;
	int code = 400;

	if (api_check_fields(body, fields, "the request", &e) || api_get_str(body, "cluster", 100, &cluster, &e))
		goto bad;
	if (!cluster || !cluster[0] || !n) {
		gf_err_set(&e, "a remote submission needs 'cluster' and 'jobs'");
		goto bad;
	}
	if (n > REMOTE_MAX_REQUEST) {
		gf_err_set(&e, "a remote submission may record at most %d jobs, this one has %zu",
			   REMOTE_MAX_REQUEST, n);
		code = 413;
		goto bad;
	}
	if ((lately = recorded_lately(s, uid, now_real())) + n > REMOTE_MAX_HOUR) {
		gf_err_set(&e, "a user may record at most %d cluster jobs an hour: %zu recorded in the last hour, "
			   "this submission adds %zu (nothing was recorded)", REMOTE_MAX_HOUR, lately, n);
		code = 429;
		goto bad;
	}
	if (!(cwd = gf_cstr_from_json(json_object_get(body, "cwd"), "cwd", &e)))
		goto bad;
	if (!(list = calloc(n, sizeof *list)))
		abort();
	for (i = 0; i < n; i++)
		if (!(list[i] = remote_job(s, uid, cluster, cwd, json_array_get(jobs, i), &e))) {
			gf_err_prefix(&e, "job %zu", i + 1);
			goto bad;
		}
	if (quota_check_submit(s, list, n, &e)) {
		code = 409;	/* over max_queued_jobs: none is recorded */
		goto bad;
	}
	out = json_array();
	if (jobs_txn_begin(s, &e))
		goto store;
	for (i = 0; i < n; i++) {
		struct job *j = list[i];

		list[i] = NULL;	/* the table's now, or freed */
		if (first)
			job_set_group_id(j, first);
		if (jobs_insert(s, j, &e))
			goto store;
		if (n > 1 && !first) {
			job_set_group_id(j, first = j->id);
			if (jobs_save(s, j, &e))
				goto store;
		}
		json_array_append_new(out, json_pack("{s:I,s:s}", "id", (json_int_t)j->id, "name", j->name));
	}
	if (jobs_txn_commit(s, &e))
		goto store;
	api_reply(req, 201, json_pack("{s:o}", "jobs", out));
	goto done;
store:
	jobs_txn_rollback(s);
	json_decref(out);
	api_reply_store_err(s, req, &e);
	goto done;
bad:
	refuse(req, code, &e);
done:
	for (i = 0; list && i < n; i++)
		job_free(list[i]);
	free(list);
	free(cluster);
	free(cwd);
}

/* One item of /remote/update, inside the open transaction. */
static int update_one(struct server *s, uid_t uid, bool admin, json_t *u, struct gf_err *e)
{
	static const char *const fields[] = {
		"id", "state", "reason", "exit_code", "exit_signal", "start_time", "end_time", NULL,
	};
	json_t *st = json_object_get(u, "state"), *r = json_object_get(u, "reason");
	int64_t id = 0, code = INT64_MIN, sig = 0;
	double t0 = 0, t1 = 0;
	struct job *j;
	int state;

	if (!json_is_object(u) || api_check_fields(u, fields, "an update", e) ||
	    api_get_int(u, "id", 1, INT64_MAX, &id, e) ||
	    api_get_int(u, "exit_code", -1, 255, &code, e) || api_get_int(u, "exit_signal", 0, 128, &sig, e))
		return -1;
	if (!(j = jobs_get(s, id)))
		return gf_err_set(e, "job %lld: no such job", (long long)id);
	if (!jm(j)->cluster)
		return gf_err_set(e, "job %lld is not a cluster job", (long long)id);
	if (j->uid != uid && !admin)
		return gf_err_set(e, "job %lld belongs to %s; only %s or an admin may update it", (long long)id,
				  j->user, j->user);
	if (!json_is_string(st) || (state = job_state_parse(json_string_value(st))) < 0)
		return gf_err_set(e, "job %lld: 'state' must be a job state code (PD H R CD F CA TO)",
				  (long long)id);
	if (r && !json_is_null(r) && api_check_text("reason", r, 200, e))
		return gf_err_prefix(e, "job %lld", (long long)id);
	if (json_is_number(json_object_get(u, "start_time")))
		t0 = json_number_value(json_object_get(u, "start_time"));
	if (json_is_number(json_object_get(u, "end_time")))
		t1 = json_number_value(json_object_get(u, "end_time"));
	if (job_state_ended(j->state) && (int)j->state != state)
		return 0;	/* an end is final: a late report does not reopen it */
	jobs_touch(s, j);
	j->state = (enum job_state)state;
	job_set_reason(j, json_is_string(r) && json_string_value(r)[0] ? json_string_value(r) : NULL);
	if (t0 > 0 && isfinite(t0))
		j->start_time = t0;
	if (t1 > 0 && isfinite(t1))
		j->end_time = t1;
	if (job_state_ended(j->state) && !j->end_time)
		j->end_time = now_real();
	if (code != INT64_MIN && code >= 0) {
		j->has_exit = true;
		j->exit_code = (int)code;
		j->exit_signal = (int)sig;
	}
	return jobs_save(s, j, e);
}

static void update(struct server *s, struct evhttp_request *req, uid_t uid, bool admin, json_t *body)
{
	json_t *jobs = json_object_get(body, "jobs"), *errs = json_array();
	size_t i, done = 0;
	struct gf_err e;

	if (!json_is_array(jobs)) {
		json_decref(errs);
		gf_err_set(&e, "'jobs' must be a list of updates");
		refuse(req, 400, &e);
		return;
	}
	if (jobs_txn_begin(s, &e)) {
		json_decref(errs);
		refuse(req, 500, &e);
		return;
	}
	for (i = 0; i < json_array_size(jobs); i++) {
		if (update_one(s, uid, admin, json_array_get(jobs, i), &e) == 0) {
			done++;
			continue;
		}
		if (s->txn.failed)
			break;
		json_array_append_new(errs, json_string(e.msg));
	}
	if (jobs_txn_commit(s, &e)) {
		json_decref(errs);
		api_reply_store_err(s, req, &e);
		return;
	}
	server_schedule(s);	/* local jobs may depend on remote ones */
	api_reply(req, 200, json_pack("{s:I,s:o}", "updated", (json_int_t)done, "errors", errs));
}

void api_remote(struct server *s, struct evhttp_request *req, uid_t uid, bool admin, const char *what,
		json_t *body)
{
	struct gf_err e;

	if (uid == (uid_t)-1) {
		gf_err_set(&e, "recording cluster jobs needs a user");
		refuse(req, 401, &e);
	} else if (!strcmp(what, "jobs"))
		record(s, req, uid, body);
	else if (!strcmp(what, "update"))
		update(s, req, uid, admin, body);
	else {
		gf_err_set(&e, "no such endpoint: POST /remote/%s", what);
		refuse(req, 404, &e);
	}
}
