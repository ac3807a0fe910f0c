/* stats.c — gstats: usage statistics of a set of jobs (by default the
 * caller's own), computed by the daemon (GET /stats, api_stats.c: a year
 * of a million jobs is 200 MB of list) or, from an older daemon without
 * it, here from GET /jobs: jobs by state, success
 * rate, average wait and run time, GPU-hours, peak concurrent GPUs, the
 * top jobs by runtime, and per-user rows when several users are counted. */
#include "stats.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "queue.h"
#include "util.h"

#define PROG "gstats"

static const char *const state_cols[] = { "Running", "Queued", "Hold",
	"Finished", "Failed", "Cancelled", "Timeout" };
#define NSTATES (sizeof state_cols / sizeof state_cols[0])

struct user_stats {
	char *user;
	long long jobs, by_state[NSTATES];
	double gpu_secs;
	double util_secs, util_weighted;	/* GPU-seconds with a mean utilisation, and their sum */
};

static int cmp_user(const void *a, const void *b)
{
	return strcmp(((const struct user_stats *)a)->user,
	    ((const struct user_stats *)b)->user);
}

/* usage: the users' decayed GPU-seconds (fair share), or NULL for no
 * such column. */
static void add_row(struct table *t, const struct user_stats *u, const json_t *usage)
{
	char cells[NSTATES + 5][32];
	const char *row[NSTATES + 5];
	size_t k;

	snprintf(cells[0], sizeof cells[0], "%s", u->user);
	snprintf(cells[1], sizeof cells[1], "%lld", u->jobs);
	for (k = 0; k < NSTATES; k++)
		snprintf(cells[k + 2], sizeof cells[k + 2], "%lld",
		    u->by_state[k]);
	snprintf(cells[NSTATES + 2], sizeof cells[0], "%.2f",
	    u->gpu_secs / 3600);
	if (u->util_secs > 0)
		snprintf(cells[NSTATES + 3], sizeof cells[0], "%.0f%%",
		    u->util_weighted / u->util_secs);
	else
		snprintf(cells[NSTATES + 3], sizeof cells[0], "-");
	snprintf(cells[NSTATES + 4], sizeof cells[0], "%.2f",
	    usage ? jnum(usage, u->user, 0) / 3600 : 0.0);
	for (k = 0; k < NSTATES + 5; k++)
		row[k] = cells[k];
	row[0] = u->user; /* names may be longer than a cell buffer */
	table_add_row(t, row);
}

static struct table *users_table(struct user_stats *v, size_t n, const json_t *usage);

struct table *stats_table(const json_t *jobs, double now,
    const json_t *usage)
{
	struct user_stats *v = NULL;
	size_t n = 0, i, k;
	struct table *t;

	for (i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *user = jstr(j, "user") ? jstr(j, "user") : "?";
		const char *state = jstr(j, "state");
		double start = jnum(j, "start_time", 0), end = jnum(j, "end_time", 0);
		const json_t *util;
		struct user_stats *u = NULL;

		for (k = 0; k < n; k++)
			if (strcmp(v[k].user, user) == 0)
				u = &v[k];
		if (!u) {
			v = xrealloc(v, (n + 1) * sizeof *v);
			u = &v[n++];
			memset(u, 0, sizeof *u);
			u->user = xstrdup(user);
		}
		u->jobs++;
		for (k = 0; k < NSTATES; k++)
			if (state && strcmp(state, state_cols[k]) == 0)
				u->by_state[k]++;
		if (start > 0) {
			double secs = (end > 0 ? end : now) - start;
			size_t ngpu = json_array_size(json_object_get(j, "gpu_ids"));

			if (!ngpu)
				ngpu = (size_t)jint(j, "gpus", 0);
			if (secs > 0)
				u->gpu_secs += secs * (double)ngpu;
			/* the mean utilisation the daemon measured (gpu_usage),
			 * weighted by GPU-seconds */
			util = json_object_get(json_object_get(j, "gpu_usage"),
			    "mean_gpu_util");
			if (secs > 0 && json_is_number(util)) {
				u->util_secs += secs * (double)ngpu;
				u->util_weighted += secs * (double)ngpu *
				    json_number_value(util);
			}
		}
	}
	t = users_table(v, n, usage);
	for (i = 0; i < n; i++)
		free(v[i].user);
	free(v);
	return t;
}

/* The per-user rows of v (sorted here), and a TOTAL row when several. */
static struct table *users_table(struct user_stats *v, size_t n, const json_t *usage)
{
	static const char *const headers[] = { "USER", "JOBS", "RUNNING",
		"QUEUED", "HOLD", "FINISHED", "FAILED", "CANCELLED", "TIMEOUT",
		"GPU_HOURS", "GPU_UTIL", "SHARE_GPU_HOURS" };
	struct user_stats total;
	struct table *t;
	size_t i, k;

	memset(&total, 0, sizeof total);
	if (n)	/* qsort(NULL, 0) is undefined */
		qsort(v, n, sizeof *v, cmp_user);
	t = table_new(sizeof headers / sizeof headers[0] - (usage ? 0 : 1),
	    headers);
	for (i = 0; i < n; i++) {
		add_row(t, &v[i], usage);
		total.jobs += v[i].jobs;
		for (k = 0; k < NSTATES; k++)
			total.by_state[k] += v[i].by_state[k];
		total.gpu_secs += v[i].gpu_secs;
		total.util_secs += v[i].util_secs;
		total.util_weighted += v[i].util_weighted;
	}
	if (n > 1) {
		total.user = "TOTAL";
		add_row(t, &total, NULL);
	}
	return t;
}

struct table *stats_table_users(const json_t *rows, const json_t *usage)
{
	size_t n = json_array_size(rows), i, k;
	struct user_stats *v = xcalloc(n + 1, sizeof *v);
	struct table *t;

	for (i = 0; i < n; i++) {
		const json_t *r = json_array_get(rows, i);
		const json_t *bs = json_object_get(r, "by_state");

		v[i].user = (char *)(jstr(r, "user") ? jstr(r, "user") : "?");
		v[i].jobs = jint(r, "jobs", 0);
		for (k = 0; k < NSTATES; k++)
			v[i].by_state[k] = json_is_integer(json_array_get(bs, k)) ?
			    (long long)json_integer_value(json_array_get(bs, k)) : 0;
		v[i].gpu_secs = jnum(r, "gpu_secs", 0);
		v[i].util_secs = jnum(r, "util_secs", 0);
		v[i].util_weighted = jnum(r, "util_weighted", 0);
	}
	t = users_table(v, n, usage);
	free(v);
	return t;
}

/* ---------- the metrics ---------- */

struct gpu_event {
	double t;
	long long d; /* +GPUs at a start, -GPUs at an end */
};

static int cmp_event(const void *a, const void *b)
{
	const struct gpu_event *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d < y->d ? -1 : x->d > y->d; /* ends first at one instant */
}

struct top_run {
	const json_t *job;
	double secs;
};

static int cmp_top(const void *a, const void *b)
{
	const struct top_run *x = a, *y = b;

	return x->secs < y->secs ? 1 : x->secs > y->secs ? -1 : 0;
}

static long long job_gpus(const json_t *j)
{
	size_t n = json_array_size(json_object_get(j, "gpu_ids"));

	return n ? (long long)n : (long long)jint(j, "gpus", 0);
}

static double round2(double v)
{
	return round(v * 100) / 100;
}

/* GPU-hours keep 4 decimals: a short test job is worth seeing. */
static double round4(double v)
{
	return round(v * 10000) / 10000;
}

json_t *stats_compute(const json_t *jobs, double now)
{
	static const char *const names[] = { "completed_jobs", "failed_jobs", "cancelled_jobs", "timeout_jobs",
		"running_jobs", "queued_jobs", "held_jobs" };
	static const char *const states[] = { "Finished", "Failed", "Cancelled", "Timeout", "Running", "Queued",
		"Hold" };
	size_t n = json_array_size(jobs), nev = 0, ntop = 0, i, k;
	long long count[7] = { 0 }, with_gpus = 0, gpus_sum = 0, cur = 0, peak = 0, waits = 0, runs = 0;
	double wait_sum = 0, run_sum = 0, gpu_secs = 0, util_secs = 0, util_weighted = 0, preempt_secs = 0;
	struct gpu_event *ev = xcalloc(2 * n + 1, sizeof *ev);
	struct top_run *top = xcalloc(n + 1, sizeof *top);
	json_t *out = json_object(), *tops = json_array();
	long long ended;

	for (i = 0; i < n; i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *st = jstr(j, "state");
		double submit = jnum(j, "submit_time", 0), start = jnum(j, "start_time", 0);
		double end = jnum(j, "end_time", 0);
		long long g = job_gpus(j), asked = jint(j, "gpus", 0);

		for (k = 0; k < 7; k++)
			if (st && !strcmp(st, states[k]))
				count[k]++;
		if (asked > 0) {
			with_gpus++;
			gpus_sum += asked;
		}
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
		if (jhas(j, "end_time")) {
			run_sum += end - start;
			runs++;
			top[ntop].job = j;
			top[ntop++].secs = end - start;
		}
		gpu_secs += (end - start) * (double)g;
		/* gbatch --preemptible (its latest run: the job table keeps one) */
		if (jbool(json_object_get(j, "preempt"), "preemptible", 0))
			preempt_secs += (end - start) * (double)g;
		{
			/* the utilisation the daemon measured, weighted by GPU-seconds */
			const json_t *util = json_object_get(json_object_get(j, "gpu_usage"), "mean_gpu_util");

			if (g > 0 && end > start && json_is_number(util)) {
				util_secs += (end - start) * (double)g;
				util_weighted += (end - start) * (double)g * json_number_value(util);
			}
		}
		if (g > 0) {
			ev[nev++] = (struct gpu_event){ start, g };
			ev[nev++] = (struct gpu_event){ end, -g };
		}
	}
	if (nev)
		qsort(ev, nev, sizeof *ev, cmp_event);
	for (i = 0; i < nev; i++) {
		cur += ev[i].d;
		if (cur > peak)
			peak = cur;
	}
	ended = count[0] + count[1] + count[2] + count[3];
	json_object_set_new(out, "total_jobs", json_integer((json_int_t)n));
	for (k = 0; k < 7; k++)
		json_object_set_new(out, names[k], json_integer(count[k]));
	json_object_set_new(out, "avg_wait_secs", json_real(round2(waits ? wait_sum / (double)waits : 0)));
	json_object_set_new(out, "avg_runtime_secs", json_real(round2(runs ? run_sum / (double)runs : 0)));
	json_object_set_new(out, "total_gpu_hours", json_real(round4(gpu_secs / 3600)));
	json_object_set_new(out, "preemptible_gpu_hours", json_real(round4(preempt_secs / 3600)));
	json_object_set_new(out, "jobs_with_gpus", json_integer(with_gpus));
	json_object_set_new(out, "avg_gpus_per_job",
	    json_real(round2(with_gpus ? (double)gpus_sum / (double)with_gpus : 0)));
	json_object_set_new(out, "peak_gpu_usage", json_integer(peak));
	json_object_set_new(out, "success_rate", json_real(round2(ended ? 100.0 * (double)count[0] /
	    (double)ended : 0)));
	json_object_set_new(out, "mean_gpu_util_pct",
	    util_secs > 0 ? json_real(round2(util_weighted / util_secs)) : json_null());
	if (ntop)
		qsort(top, ntop, sizeof *top, cmp_top);
	for (i = 0; i < ntop && i < 5; i++) {
		const json_t *j = top[i].job;

		json_array_append_new(tops, json_pack("{s:I, s:s, s:s, s:s, s:I, s:f}",
		    "id", (json_int_t)jint(j, "id", 0), "name", jstr(j, "name") ? jstr(j, "name") : "",
		    "user", jstr(j, "user") ? jstr(j, "user") : "", "state", jstr(j, "state") ? jstr(j, "state") : "",
		    "gpus", (json_int_t)job_gpus(j), "runtime_secs", round2(top[i].secs)));
	}
	json_object_set_new(out, "top_jobs", tops);
	free(ev);
	free(top);
	return out;
}

/* One metric's value as text: integers plain, reals with 2 decimals
 * (GPU-hours 4). */
static void metric_text(const char *key, const json_t *v, char *buf, size_t size)
{
	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, size, "%.*f", strstr(key, "gpu_hours") ? 4 : 2, json_number_value(v));
}

char *stats_csv(const json_t *st)
{
	struct sbuf b = { 0 };
	const char *k;
	json_t *v;
	char buf[64];

	sbuf_adds(&b, "metric,value\n");
	json_object_foreach((json_t *)st, k, v) {
		if (json_is_array(v) || json_is_object(v))
			continue;
		if (json_is_null(v))
			buf[0] = '\0';	/* not known */
		else
			metric_text(k, v, buf, sizeof buf);
		sbuf_addf(&b, "%s,%s\n", k, buf);
	}
	return sbuf_take(&b);
}

static void dur(struct sbuf *b, double secs)
{
	char buf[64];

	fmt_duration((int64_t)llround(secs), buf, sizeof buf);
	sbuf_adds(b, buf);
}

char *stats_text(const json_t *st, const char *scope, struct table *per_user)
{
	struct sbuf b = { 0 };
	json_t *tops = json_object_get(st, "top_jobs");
	size_t i;

	sbuf_addf(&b, "Jobs of %s\n", scope);
	sbuf_addf(&b, "  total %lld: %lld finished, %lld failed, %lld cancelled, %lld timeout, "
	    "%lld running, %lld queued, %lld held\n",
	    (long long)jint(st, "total_jobs", 0), (long long)jint(st, "completed_jobs", 0),
	    (long long)jint(st, "failed_jobs", 0), (long long)jint(st, "cancelled_jobs", 0),
	    (long long)jint(st, "timeout_jobs", 0), (long long)jint(st, "running_jobs", 0),
	    (long long)jint(st, "queued_jobs", 0), (long long)jint(st, "held_jobs", 0));
	sbuf_addf(&b, "  success rate %.2f%% (finished among ended jobs)\n", jnum(st, "success_rate", 0));
	sbuf_adds(&b, "Time\n  average wait ");
	dur(&b, jnum(st, "avg_wait_secs", 0));
	sbuf_adds(&b, " (submit to start), average run ");
	dur(&b, jnum(st, "avg_runtime_secs", 0));
	sbuf_adds(&b, " (ended jobs)\n");
	sbuf_addf(&b, "GPUs\n  %.4f GPU-hours, peak %lld GPUs at once, %lld jobs asked for GPUs "
	    "(%.2f each on average)\n", jnum(st, "total_gpu_hours", 0), (long long)jint(st, "peak_gpu_usage", 0),
	    (long long)jint(st, "jobs_with_gpus", 0), jnum(st, "avg_gpus_per_job", 0));
	if (jnum(st, "preemptible_gpu_hours", 0) > 0)
		sbuf_addf(&b, "  %.4f GPU-hours of them preemptible (gbatch --preemptible)\n",
		    jnum(st, "preemptible_gpu_hours", 0));
	if (jhas(st, "mean_gpu_util_pct"))
		sbuf_addf(&b, "  mean GPU utilisation %.0f%% while they ran (weighted by GPU-hours)\n",
		    jnum(st, "mean_gpu_util_pct", 0));
	else
		sbuf_adds(&b, "  mean GPU utilisation not known (measured for your own jobs)\n");
	if (json_array_size(tops)) {
		struct table *t;
		static const char *const hdr[] = { "JOBID", "NAME", "USER", "ST", "GPUS", "RUNTIME" };
		char *txt;

		sbuf_adds(&b, "Top jobs by runtime (ended jobs, longest first)\n");
		t = table_new(6, hdr);
		for (i = 0; i < json_array_size(tops); i++) {
			const json_t *j = json_array_get(tops, i);
			char id[32], g[32], rt[64];
			const char *row[6];
			char *name = fmt_escaped(jstr(j, "name"));

			snprintf(id, sizeof id, "%lld", (long long)jint(j, "id", 0));
			snprintf(g, sizeof g, "%lld", (long long)jint(j, "gpus", 0));
			fmt_duration((int64_t)llround(jnum(j, "runtime_secs", 0)), rt, sizeof rt);
			row[0] = id, row[1] = name, row[2] = jstr(j, "user"), row[3] = jstr(j, "state");
			row[4] = g, row[5] = rt;
			table_add_row(t, row);
			free(name);
		}
		txt = table_render(t, TABLE_TEXT);
		sbuf_adds(&b, txt);
		free(txt);
		table_free(t);
	}
	if (per_user) {
		char *txt = table_render(per_user, TABLE_TEXT);

		sbuf_adds(&b, "Per user\n");
		sbuf_adds(&b, txt);
		free(txt);
	}
	return sbuf_take(&b);
}

/* ---------- the program ---------- */

enum { S_USER, S_ALL, S_SINCE, S_OUTPUT, S_CONFIG, S_HELP, S_VERSION };

static const struct opt_def stats_opts[] = {
	{ S_USER, "user", 'u', 1 }, { S_USER, "users", 0, 1 },
	{ S_ALL, "all-users", 'a', 0 },
	{ S_SINCE, "since", 't', 1 }, { S_OUTPUT, "output", 'o', 1 },
	{ S_CONFIG, "config", 0, 1 }, { S_HELP, "help", 'h', 0 },
	{ S_VERSION, "version", 'V', 0 },
};

static const char stats_help[] =
"usage: gstats [-u USER | -a] [-t WHEN] [-o table|json|csv]\n"
"       gstats completion bash|zsh|fish\n\n"
"Usage statistics of your own jobs (by default), of USER's, or of all\n"
"users' jobs: jobs by state, success rate (finished among ended jobs),\n"
"average wait (submit to start) and run time (ended jobs), GPU-hours\n"
"(GPUs x run time, running jobs up to now), peak GPUs in use at once,\n"
"jobs with GPUs and GPUs per such job, the mean GPU utilisation measured\n"
"while they ran (weighted by GPU-hours; known for your own jobs), the top\n"
"jobs by runtime (the five longest ended runs), and per-user rows when\n"
"several users are counted or fair share keeps usage (GPU_UTIL: - when\n"
"unknown; SHARE_GPU_HOURS: the decayed usage fair share orders by).\n\n"
"  -u, --user USER[,USER...]  these users' jobs (also 'all'; --users)\n"
"  -a, --all-users            every user's jobs\n"
"  -t, --since WHEN           jobs submitted since: 1h, 7d, 3w, 30 (minutes),\n"
"                             today, yesterday, HH:MM, YYYY-MM-DD[THH:MM]\n"
"  -o, --output FORMAT        table (default), json (the metrics and\n"
"                             top_jobs), or csv (metric,value rows)\n"
"      --config PATH          config file: checked; --since is read in its\n"
"                             timezone\n"
"  -h, --help                 this help\n"
"  -V, --version              print the version\n";

/* GET path?query as api_get does; *missing when the daemon has no such
 * route (404: an older one). */
static json_t *stats_get(const char *path, const char *query, int *missing, struct gf_err *e)
{
	struct sbuf target = { 0 };
	struct http_resp r;
	json_error_t je;
	json_t *j;
	int rc;

	sbuf_adds(&target, path);
	sbuf_adds(&target, query ? query : "");
	rc = http_request(NULL, "GET", target.p, NULL, 0, &r, e);
	sbuf_free(&target);
	if (rc < 0)
		return NULL;
	j = json_loadb(r.body, r.len, 0, &je);
	*missing = r.status == 404 && (!jstr(j, "error") || !strncmp(jstr(j, "error"), "no such endpoint", 16));
	if (r.status < 200 || r.status > 299 || !json_is_object(j)) {
		if (jstr(j, "error"))
			gf_err_set(e, "%s", jstr(j, "error"));
		else
			gf_err_set(e, "gflowd answered %d to GET %s", r.status, path);
		json_decref(j);
		http_resp_free(&r);
		return NULL;
	}
	http_resp_free(&r);
	return j;
}

static int stats_exec(int argc, char **argv)
{
	struct sbuf q = { 0 }, path = { 0 };
	enum table_fmt fmt = TABLE_TEXT;
	const char *val, *users = NULL;
	struct opt_parser p;
	struct gf_err e;
	json_t *resp, *st, *usage, *users_usage;
	struct table *per_user;
	time_t since;
	char *text, buf[32];
	int id, all = 0, missing = 0, several = 0;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_stats, argc - 1, argv + 1);
	opt_init(&p, argc, argv, 1, stats_opts,
	    sizeof stats_opts / sizeof stats_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			sbuf_free(&q);
			return cmd_usage_error(PROG, &e);
		case OPT_POSITIONAL:
			sbuf_free(&q);
			return cmd_usagef(PROG, "unexpected argument '%s'", val);
		case S_USER:
			users = val;
			break;
		case S_ALL:
			all = 1;
			break;
		case S_SINCE:
			if (gf_parse_since(val, time(NULL), &since, &e) < 0) {
				sbuf_free(&q);
				return cmd_usage_error(PROG, &e);
			}
			snprintf(buf, sizeof buf, "%lld", (long long)since);
			url_add_param(&q, "since", buf);
			break;
		case S_OUTPUT:
			if (table_parse_format(val, &fmt, &e) < 0) {
				sbuf_free(&q);
				return cmd_usage_error(PROG, &e);
			}
			break;
		case S_CONFIG:
			if (cmd_check_config(val, &e) < 0) {
				sbuf_free(&q);
				return cmd_fail(PROG, &e);
			}
			break;
		case S_HELP:
			sbuf_free(&q);
			fputs(stats_help, stdout);
			return EXIT_OK;
		case S_VERSION:
			sbuf_free(&q);
			return cmd_version();
		}
	}
	if (all && users) {
		sbuf_free(&q);
		return cmd_usagef(PROG, "--all-users and --user exclude each other");
	}
	if (all)
		users = "all";
	if (users)
		url_add_param(&q, "users", users);	/* else the daemon's default: the caller */
	/* the daemon's figures (GET /stats); an older daemon has none: then
	 * computed here from the jobs' list */
	resp = stats_get("/stats", q.p, &missing, &e);
	if (!resp && missing) {
		url_add_param(&q, "fields", "id,name,user,state,gpus,gpu_ids,submit_time,start_time,end_time,gpu_usage,preempt");
		sbuf_adds(&path, "/jobs");
		sbuf_adds(&path, q.p);
		resp = api_get(path.p, &e);
		sbuf_free(&path);
	}
	sbuf_free(&q);
	if (!resp)
		return cmd_fail(PROG, &e);
	usage = api_get("/usage", &e);	/* fair share's decayed usage; an older daemon has none */
	users_usage = usage ? json_object_get(usage, "users") : NULL;
	if (!missing) {
		st = json_incref(json_object_get(resp, "stats"));
		per_user = stats_table_users(json_object_get(resp, "users"), users_usage);
		several = json_array_size(json_object_get(resp, "users")) > 1;
	} else {
		const json_t *jobs = json_object_get(resp, "jobs");
		double now = (double)time(NULL);
		const char *first = NULL;

		st = stats_compute(jobs, now);
		per_user = stats_table(jobs, now, users_usage);
		for (size_t i = 0; i < json_array_size(jobs) && !several; i++) {
			const char *u = jstr(json_array_get(jobs, i), "user");

			if (u && first && strcmp(u, first))
				several = 1;
			if (u && !first)
				first = u;
		}
	}
	if (!json_is_object(st)) {
		json_decref(st);
		table_free(per_user);
		json_decref(usage);
		json_decref(resp);
		gf_err_set(&e, "gflowd's statistics have no 'stats' object");
		return cmd_fail(PROG, &e);
	}
	if (fmt == TABLE_JSON) {
		/* and the per-user rows, as the table view shows them */
		char *rows = table_render(per_user, TABLE_JSON);

		json_object_set_new(st, "users", json_loads(rows, 0, NULL));
		free(rows);
		text = json_dumps(st, JSON_INDENT(2));
		puts(text);
	} else if (fmt == TABLE_CSV) {
		text = stats_csv(st);
		fputs(text, stdout);
	} else {
		struct sbuf scope = { 0 };

		if (all || (users && !strcmp(users, "all")))
			sbuf_adds(&scope, "all users");
		else if (users)
			sbuf_adds(&scope, users);
		else
			sbuf_adds(&scope, "yours");
		/* per user, when several are counted */
		text = stats_text(st, sbuf_str(&scope), several || users_usage ? per_user : NULL);
		fputs(text, stdout);
		sbuf_free(&scope);
	}
	free(text);
	table_free(per_user);
	json_decref(st);
	json_decref(usage);
	json_decref(resp);
	return EXIT_OK;
}

const struct command cmd_stats = {
	"stats", "gstats", "usage statistics (your jobs by default)", stats_exec,
	"completion --user -u --users --all-users -a --since -t --output -o --config --help --version",
};
