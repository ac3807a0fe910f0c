/* api_stats.c — GET /stats: gstats's figures computed here, over the jobs
 * in memory, instead of by the client over GET /jobs (issue 31: a year of
 * 1,000,000 jobs in ≤ 300 ms; the list alone is 200 MB of JSON). The same
 * jobs as GET /jobs gives for users= and since=, the same arithmetic as
 * the client's stats_compute and stats_table (client/stats.c), in id
 * order; what a job's owner alone sees (gpu_usage) counts only for the
 * caller's own jobs, as in the list. */
#include "apiint.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* client/stats.c's state_cols order */
static const enum job_state user_cols[] = { JS_RUNNING, JS_QUEUED, JS_HOLD, JS_FINISHED, JS_FAILED, JS_CANCELLED,
					    JS_TIMEOUT };
#define NCOLS (sizeof user_cols / sizeof user_cols[0])

struct user_row {
	const char *user;
	long long jobs, by_state[NCOLS];
	double gpu_secs, util_secs, util_weighted;
};

struct gpu_event {
	double t;
	long long d;	/* +GPUs at a start, -GPUs at an end */
};

static int cmp_event(const void *a, const void *b)
{
	const struct gpu_event *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d < y->d ? -1 : x->d > y->d;	/* ends first at one instant */
}

static double round2(double v)
{
	return round(v * 100) / 100;
}

static double round4(double v)
{
	return round(v * 10000) / 10000;
}

struct stats_filter {
	bool all;
	uid_t uid;
	char **users;	/* NULL-terminated, or NULL */
	double since;
};

static bool wanted(const struct stats_filter *f, const struct job *j)
{
	if (f->users) {
		for (char **u = f->users; *u; u++)
			if (j->user && !strcmp(*u, j->user))
				return j->submit_time >= f->since || f->since <= 0;
		return false;
	}
	if (!f->all && j->uid != f->uid)
		return false;
	return f->since <= 0 || j->submit_time >= f->since;
}

static int parse_stats_filter(const struct caller *c, struct evkeyvalq *q, struct stats_filter *f,
			      struct gf_err *e)
{
	const char *v;

	*f = (struct stats_filter){ .uid = c->uid, .all = c->uid == (uid_t)-1 };
	for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next)
		if (strcmp(kv->key, "users") && strcmp(kv->key, "since"))
			return gf_err_set(e, "unknown parameter '%.64s' (GET /stats takes users and since)", kv->key);
	if ((v = evhttp_find_header(q, "users"))) {
		if (!strcmp(v, "all"))
			f->all = true;
		else
			f->users = api_split_csv(v);
	}
	if ((v = evhttp_find_header(q, "since"))) {
		char *end;

		f->since = strtod(v, &end);
		if (end == v || *end || !isfinite(f->since) || f->since < 0)
			return gf_err_set(e, "'since' must be a time in epoch seconds, got '%.64s'", v);
	}
	return 0;
}

static struct user_row *user_of(struct user_row **v, size_t *n, size_t *cap, const char *user)
{
	for (size_t k = 0; k < *n; k++)
		if (!strcmp((*v)[k].user, user))
			return &(*v)[k];
	*v = gf_grow(*v, cap, *n + 1, sizeof **v, 8);
	memset(&(*v)[*n], 0, sizeof **v);
	(*v)[*n].user = user;
	return &(*v)[(*n)++];
}

static int cmp_user(const void *a, const void *b)
{
	return strcmp(((const struct user_row *)a)->user, ((const struct user_row *)b)->user);
}

/* The 5 longest runs, longest first; of equal ones the earlier id first. */
struct top {
	const struct job *j;
	double secs;
};

static void top_add(struct top *t, size_t *n, const struct job *j, double secs)
{
	size_t at = *n < 5 ? *n : 5;

	while (at > 0 && t[at - 1].secs < secs)
		at--;
	if (at >= 5)
		return;
	memmove(t + at + 1, t + at, (size_t)((*n < 5 ? *n : 4) - at) * sizeof *t);
	t[at] = (struct top){ j, secs };
	if (*n < 5)
		(*n)++;
}

static double mean_util(const struct job *j, bool *known)
{
	json_t *u = jm(j)->gpu_usage ? json_object_get(jm(j)->gpu_usage, "mean_gpu_util") : NULL;

	*known = json_is_number(u);
	return *known ? json_number_value(u) : 0;
}

void api_h_stats(struct server *s, struct evhttp_request *req, struct caller *c)
{
	static const enum job_state count_states[] = { JS_FINISHED, JS_FAILED, JS_CANCELLED, JS_TIMEOUT, JS_RUNNING,
						       JS_QUEUED, JS_HOLD };
	static const char *const names[] = { "completed_jobs", "failed_jobs", "cancelled_jobs", "timeout_jobs",
					     "running_jobs", "queued_jobs", "held_jobs" };
	struct evkeyvalq q;
	struct stats_filter f;
	struct gf_err e;
	struct user_row *users = NULL;
	size_t nusers = 0, capusers = 0, nev = 0, capev = 0, ntop = 0;
	struct gpu_event *ev = NULL;
	struct top top[5];
	long long n = 0, count[7] = { 0 }, with_gpus = 0, gpus_sum = 0, cur = 0, peak = 0, waits = 0, runs = 0;
	double wait_sum = 0, run_sum = 0, gpu_secs = 0, util_secs = 0, util_weighted = 0, now = now_real(), preempt_secs = 0;
	json_t *st, *tops, *rows;
	long long ended;
	int rc;

	evhttp_parse_query_str(evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	rc = parse_stats_filter(c, &q, &f, &e);
	evhttp_clear_headers(&q);
	if (rc) {
		strv_free(f.users);
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	for (int64_t id = f.since > 0 ? jobs_since_next(s, f.since, 1) : 1; id <= s->max_id; id++) {
		const struct job *j;
		double submit, start, end;
		long long g;
		int ngpu;
		bool known;
		struct user_row *u;

		if (f.since > 0 && id % JOBS_SINCE_BLOCK == 0 && (id = jobs_since_next(s, f.since, id)) > s->max_id)
			break;
		if (!(j = s->jobs[id]) || !wanted(&f, j))
			continue;
		n++;
		submit = j->submit_time, start = j->start_time, end = j->end_time;
		ngpu = __builtin_popcountll(j->gpu_mask);
		g = ngpu ? ngpu : j->gpus;
		for (size_t k = 0; k < 7; k++)
			count[k] += j->state == count_states[k];
		if (j->gpus > 0) {
			with_gpus++;
			gpus_sum += j->gpus;
		}
		/* stats_table's per-user row */
		u = user_of(&users, &nusers, &capusers, j->user ? j->user : "?");
		u->jobs++;
		for (size_t k = 0; k < NCOLS; k++)
			u->by_state[k] += j->state == user_cols[k];
		if (start > 0) {
			double secs = (end > 0 ? end : now) - start, mu = mean_util(j, &known);

			if (secs > 0)
				u->gpu_secs += secs * (double)g;
			if (secs > 0 && known && api_owns(c, j)) {
				u->util_secs += secs * (double)g;
				u->util_weighted += secs * (double)g * mu;
			}
		}
		/* stats_compute's figures */
		if (start <= 0)
			continue;
		if (submit > 0 && start >= submit) {
			wait_sum += start - submit;
			waits++;
		}
		if (end <= 0)
			end = now;
		if (end < start)
			end = start;
		if (j->end_time > 0) {
			run_sum += end - start;
			runs++;
			top_add(top, &ntop, j, end - start);
		}
		gpu_secs += (end - start) * (double)g;
		/* gbatch --preemptible (its latest run: the job table keeps one) */
		if (job_preemptible(jm(j)))
			preempt_secs += (end - start) * (double)g;
		if (g > 0 && end > start) {
			double mu = mean_util(j, &known);

			if (known && api_owns(c, j)) {
				util_secs += (end - start) * (double)g;
				util_weighted += (end - start) * (double)g * mu;
			}
		}
		if (g > 0) {
			ev = gf_grow(ev, &capev, nev + 2, sizeof *ev, 1024);
			ev[nev++] = (struct gpu_event){ start, g };
			ev[nev++] = (struct gpu_event){ end, -g };
		}
	}
	if (nev)
		qsort(ev, nev, sizeof *ev, cmp_event);
	for (size_t i = 0; i < nev; i++) {
		cur += ev[i].d;
		if (cur > peak)
			peak = cur;
	}
	free(ev);
	ended = count[0] + count[1] + count[2] + count[3];
	st = json_object();
	json_object_set_new(st, "total_jobs", json_integer(n));
	for (size_t k = 0; k < 7; k++)
		json_object_set_new(st, names[k], json_integer(count[k]));
	json_object_set_new(st, "avg_wait_secs", json_real(round2(waits ? wait_sum / (double)waits : 0)));
	json_object_set_new(st, "avg_runtime_secs", json_real(round2(runs ? run_sum / (double)runs : 0)));
	json_object_set_new(st, "total_gpu_hours", json_real(round4(gpu_secs / 3600)));
	json_object_set_new(st, "preemptible_gpu_hours", json_real(round4(preempt_secs / 3600)));
	json_object_set_new(st, "jobs_with_gpus", json_integer(with_gpus));
	json_object_set_new(st, "avg_gpus_per_job",
			    json_real(round2(with_gpus ? (double)gpus_sum / (double)with_gpus : 0)));
	json_object_set_new(st, "peak_gpu_usage", json_integer(peak));
	json_object_set_new(st, "success_rate",
			    json_real(round2(ended ? 100.0 * (double)count[0] / (double)ended : 0)));
	json_object_set_new(st, "mean_gpu_util_pct",
			    util_secs > 0 ? json_real(round2(util_weighted / util_secs)) : json_null());
	tops = json_array();
	for (size_t i = 0; i < ntop; i++) {
		const struct job *j = top[i].j;
		int ngpu = __builtin_popcountll(j->gpu_mask);

		json_array_append_new(tops, json_pack("{s:I, s:s, s:s, s:s, s:I, s:f}", "id", (json_int_t)j->id,
						      "name", j->name ? j->name : "", "user", j->user ? j->user : "",
						      "state", job_state_name((enum job_state)j->state), "gpus",
						      (json_int_t)(ngpu ? ngpu : j->gpus), "runtime_secs",
						      round2(top[i].secs)));
	}
	json_object_set_new(st, "top_jobs", tops);
	if (nusers)
		qsort(users, nusers, sizeof *users, cmp_user);
	rows = json_array();
	for (size_t i = 0; i < nusers; i++) {
		json_t *bs = json_array();

		for (size_t k = 0; k < NCOLS; k++)
			json_array_append_new(bs, json_integer(users[i].by_state[k]));
		json_array_append_new(rows, json_pack("{s:s, s:I, s:o, s:f, s:f, s:f}", "user", users[i].user, "jobs",
						      (json_int_t)users[i].jobs, "by_state", bs, "gpu_secs",
						      users[i].gpu_secs, "util_secs", users[i].util_secs,
						      "util_weighted", users[i].util_weighted));
	}
	free(users);
	strv_free(f.users);
	api_reply(req, 200, json_pack("{s:o, s:o}", "stats", st, "users", rows));
}
