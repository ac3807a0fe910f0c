/* metrics.c — GET /metrics in the Prometheus text exposition format
 * (docs/api.md): job counters and gauges per user (and project), the GPUs as
 * GET /gpus shows them, host memory, notification deliveries, and the histograms of scheduler-pass
 * and API-request time this file records. Labels are users, projects, job
 * states and GPU indexes only (no job ids), so the series stay few.
 *
 * The counters are counted from the job table at each scrape: every job
 * ever submitted stays in it (and in the store), so they survive restarts
 * and never go down. */
#include "observe.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Upper bounds (seconds) of the histogram buckets; +Inf is implicit. */
static const double bounds[METRICS_BUCKETS] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
						0.01,   0.025,   0.05,   0.1,   0.25,   1.0 };

double metrics_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void metrics_observe(struct histogram *h, double secs)
{
	if (secs < 0)
		secs = 0;
	for (int i = 0; i < METRICS_BUCKETS; i++)
		if (secs <= bounds[i])
			h->bucket[i]++;
	h->count++;
	h->sum += secs;
}

/* ---- per-(user, project) counts ----------------------------------------- */

/* Label cardinality: projects are free text, so the series are bounded.
 * Users and projects keep their own label in the order they first appear
 * in the job table (by job id) up to MAX_USERS and MAX_PROJECTS; the
 * (user, project) pairs likewise up to MAX_PAIRS; beyond, the value is
 * OTHER. The table only grows and keeps its order, so a name never moves
 * between its own series and OTHER's: the counters stay monotonic. */
#define OTHER "(other)"
enum { MAX_USERS = 64, MAX_PROJECTS = 64, MAX_PAIRS = 256 };

/* Buckets (seconds) of the job histograms (queue wait, run time). */
#define JOB_BUCKETS 16
static const double job_bounds[JOB_BUCKETS] = { 1,    5,    15,    30,    60,    120,   300,   600,
						1800, 3600, 7200, 14400, 28800, 86400, 259200, 604800 };

struct job_hist {
	uint64_t bucket[JOB_BUCKETS], count;
	double sum;
};

enum { C_SUBMITTED, C_FINISHED, C_FAILED, C_CANCELLED, C_TIMEOUT, C_QUEUED, C_HOLD, C_RUNNING, C_N };

struct tally {
	const char *user, *project;	/* borrowed from a job (or OTHER); project "" for none */
	uint64_t n[C_N];
	struct job_hist wait, run;
};

/* A set of (a, b) string pairs, each with its index in insertion order. */
struct slot {
	const char *a, *b;
	size_t idx;
};
struct pairset {
	struct slot *v;
	size_t n, cap;		/* cap: a power of two, open addressing */
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

static struct slot *slot_of(struct pairset *t, const char *a, const char *b)
{
	size_t i = (size_t)hash_str(hash_str(14695981039346656037ULL, a), b) & (t->cap - 1);

	for (;; i = (i + 1) & (t->cap - 1))
		if (!t->v[i].a || (!strcmp(t->v[i].a, a) && !strcmp(t->v[i].b, b)))
			return &t->v[i];
}

/* The index of (a, b), or SIZE_MAX when absent and !add. */
static size_t pairset_get(struct pairset *t, const char *a, const char *b, bool add)
{
	struct slot *x;

	if ((t->n + 1) * 2 > t->cap) {
		struct pairset bigger = { .cap = t->cap ? t->cap * 2 : 64, .n = t->n };

		bigger.v = calloc(bigger.cap, sizeof *bigger.v);
		if (!bigger.v)
			abort();
		for (size_t i = 0; i < t->cap; i++)
			if (t->v[i].a)
				*slot_of(&bigger, t->v[i].a, t->v[i].b) = t->v[i];
		free(t->v);
		*t = bigger;
	}
	x = slot_of(t, a, b);
	if (x->a)
		return x->idx;
	if (!add)
		return SIZE_MAX;
	*x = (struct slot){ a, b, t->n++ };
	return x->idx;
}

static void job_hist_add(struct job_hist *h, double secs)
{
	if (!(secs >= 0))	/* also NaN: a clock that went back */
		secs = 0;
	for (int i = 0; i < JOB_BUCKETS; i++)
		if (secs <= job_bounds[i])
			h->bucket[i]++;
	h->count++;
	h->sum += secs;
}

struct counts {
	struct tally *t;	/* one per labelled pair, in pairs' order */
	size_t nt, cap;
	/* waiting (queued) jobs */
	uint64_t waiting[9], waiting_gpus[9];
	double oldest_submit;	/* 0: none waits */
	/* preemptions done: each job's requeues, and those it cancelled
	 * (from the job table, so a restart does not reset it) */
	uint64_t preemptions;
};

/* The reasons a queued job waits for (the scheduler's, state/table.c's). */
static const char *const wait_reasons[] = { "None",     "Dependency", "BeginTime", "Resources",
					    "Priority", "Quota",      "Reservation", "Preempted", "other" };
_Static_assert(sizeof wait_reasons / sizeof wait_reasons[0] == 9, "one count per reason (struct counts)");

static size_t wait_reason(const char *r)
{
	size_t n = sizeof wait_reasons / sizeof wait_reasons[0];

	if (!r)
		return 0;
	for (size_t i = 1; i < n - 1; i++)
		if (!strcmp(r, wait_reasons[i]))
			return i;
	return n - 1;
}

static int by_labels(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	int c = strcmp(x->user, y->user);

	return c ? c : strcmp(x->project, y->project);
}

static void count_jobs(struct server *s, struct counts *c)
{
	static const int ended[JS_NSTATES] = { [JS_FINISHED] = C_FINISHED, [JS_FAILED] = C_FAILED,
					      [JS_CANCELLED] = C_CANCELLED, [JS_TIMEOUT] = C_TIMEOUT };
	static const int live[JS_NSTATES] = { [JS_QUEUED] = C_QUEUED, [JS_HOLD] = C_HOLD,
					     [JS_RUNNING] = C_RUNNING };
	struct pairset users = { 0 }, projects = { 0 }, pairs = { 0 };

	for (int64_t id = 1; id <= s->max_id; id++) {
		struct job *j = s->jobs[id];
		const char *u, *p;
		struct tally *x;
		size_t k;

		if (!j)
			continue;
		c->preemptions += (uint64_t)jm(j)->requeues;
		c->preemptions += j->state == JS_CANCELLED && j->reason && !strcmp(j->reason, "Preempted");
		u = j->user ? j->user : "";
		p = j->project ? j->project : "";
		if (pairset_get(&users, u, "", true) >= MAX_USERS)
			u = OTHER;
		if (pairset_get(&projects, p, "", true) >= MAX_PROJECTS)
			p = OTHER;
		if (pairs.n >= MAX_PAIRS && pairset_get(&pairs, u, p, false) == SIZE_MAX)
			p = OTHER;	/* at most MAX_USERS + 1 more pairs */
		k = pairset_get(&pairs, u, p, true);
		if (k == c->nt) {
			if (c->nt == c->cap) {
				c->cap = c->cap ? c->cap * 2 : 16;
				if (!(c->t = realloc(c->t, c->cap * sizeof *c->t)))
					abort();
			}
			c->t[c->nt++] = (struct tally){ .user = u, .project = p };
		}
		x = &c->t[k];
		x->n[C_SUBMITTED]++;
		if (job_state_ended(j->state))
			x->n[ended[j->state]]++;
		else
			x->n[live[j->state]]++;
		/* Started: from submit to start (time held included). A start
		 * in which nothing ran queues the job again with no start. */
		if (j->start_time > 0 && (j->state == JS_RUNNING || job_state_ended(j->state)))
			job_hist_add(&x->wait, j->start_time - j->submit_time);
		if (j->start_time > 0 && job_state_ended(j->state) && j->end_time > 0)
			job_hist_add(&x->run, j->end_time - j->start_time);
		if (j->state == JS_QUEUED) {
			size_t r = wait_reason(j->reason);

			c->waiting[r]++;
			c->waiting_gpus[r] += j->gpus > 0 ? (uint64_t)j->gpus : 0;
			if (j->submit_time > 0 && (!c->oldest_submit || j->submit_time < c->oldest_submit))
				c->oldest_submit = j->submit_time;
		}
	}
	free(users.v);
	free(projects.v);
	free(pairs.v);
	if (c->nt)
		qsort(c->t, c->nt, sizeof *c->t, by_labels);
}

/* ---- the text format ------------------------------------------------------ */

/* A label value with \, " and newline escaped (the exposition format's
 * three); other bytes, UTF-8 included, go as they are. */
static void add_label(struct evbuffer *b, const char *name, const char *value, bool first)
{
	evbuffer_add_printf(b, "%s%s=\"", first ? "" : ",", name);
	for (const char *p = value; *p; p++) {
		if (*p == '\\' || *p == '"')
			evbuffer_add_printf(b, "\\%c", *p);
		else if (*p == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, p, 1);
	}
	evbuffer_add(b, "\"", 1);
}

static void family(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `name{user="…",project="…"` (suffix after name: "" or "_bucket"…) */
static void user_project(struct evbuffer *b, const char *name, const char *suffix, const struct tally *t)
{
	evbuffer_add_printf(b, "%s%s{", name, suffix);
	add_label(b, "user", t->user, true);
	add_label(b, "project", t->project, false);
}

static void job_histogram(struct evbuffer *b, const char *name, const struct counts *c, bool run)
{
	for (size_t i = 0; i < c->nt; i++) {
		const struct job_hist *h = run ? &c->t[i].run : &c->t[i].wait;

		if (!h->count)
			continue;
		for (int k = 0; k < JOB_BUCKETS; k++) {
			user_project(b, name, "_bucket", &c->t[i]);
			evbuffer_add_printf(b, ",le=\"%g\"} %llu\n", job_bounds[k], (unsigned long long)h->bucket[k]);
		}
		user_project(b, name, "_bucket", &c->t[i]);
		evbuffer_add_printf(b, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
		user_project(b, name, "_sum", &c->t[i]);
		evbuffer_add_printf(b, "} %.3f\n", h->sum);
		user_project(b, name, "_count", &c->t[i]);
		evbuffer_add_printf(b, "} %llu\n", (unsigned long long)h->count);
	}
}

static void jobs_section(struct server *s, struct evbuffer *b)
{
	static const char *const end_names[] = { "finished", "failed", "cancelled", "timeout" };
	static const char *const live_names[] = { "queued", "hold", "running" };
	struct counts c = { 0 };

	count_jobs(s, &c);
	family(b, "gflow_jobs_submitted_total", "counter", "Jobs submitted, by user and project.");
	for (size_t i = 0; i < c.nt; i++) {
		user_project(b, "gflow_jobs_submitted_total", "", &c.t[i]);
		evbuffer_add_printf(b, "} %llu\n", (unsigned long long)c.t[i].n[C_SUBMITTED]);
	}
	family(b, "gflow_preemptions_total", "counter",
	       "Preemptions done: jobs requeued or cancelled to give their GPUs to others.");
	evbuffer_add_printf(b, "gflow_preemptions_total %llu\n", (unsigned long long)c.preemptions);
	family(b, "gflow_jobs_ended_total", "counter",
	       "Jobs that ended, by user, project and final state (finished, failed, cancelled, timeout).");
	for (size_t i = 0; i < c.nt; i++)
		for (int k = 0; k < 4; k++) {
			user_project(b, "gflow_jobs_ended_total", "", &c.t[i]);
			add_label(b, "state", end_names[k], false);
			evbuffer_add_printf(b, "} %llu\n", (unsigned long long)c.t[i].n[C_FINISHED + k]);
		}
	family(b, "gflow_jobs", "gauge", "Jobs now queued, held or running, by user and project.");
	for (size_t i = 0; i < c.nt; i++)
		for (int st = 0; st < 3; st++) {
			user_project(b, "gflow_jobs", "", &c.t[i]);
			add_label(b, "state", live_names[st], false);
			evbuffer_add_printf(b, "} %llu\n", (unsigned long long)c.t[i].n[C_QUEUED + st]);
		}
	family(b, "gflow_job_queue_wait_seconds", "histogram",
	       "Time from submit to start (time held included) of every job that started, by user and project.");
	job_histogram(b, "gflow_job_queue_wait_seconds", &c, false);
	family(b, "gflow_job_run_seconds", "histogram",
	       "Time from start to end of every job that ran and ended, by user and project.");
	job_histogram(b, "gflow_job_run_seconds", &c, true);
	family(b, "gflow_jobs_waiting", "gauge", "Queued jobs, by the reason they wait (None: not yet looked at).");
	for (size_t r = 0; r < sizeof wait_reasons / sizeof wait_reasons[0]; r++)
		evbuffer_add_printf(b, "gflow_jobs_waiting{reason=\"%s\"} %llu\n", wait_reasons[r],
				    (unsigned long long)c.waiting[r]);
	family(b, "gflow_jobs_waiting_gpus", "gauge", "GPUs requested by queued jobs, by the reason they wait.");
	for (size_t r = 0; r < sizeof wait_reasons / sizeof wait_reasons[0]; r++)
		evbuffer_add_printf(b, "gflow_jobs_waiting_gpus{reason=\"%s\"} %llu\n", wait_reasons[r],
				    (unsigned long long)c.waiting_gpus[r]);
	family(b, "gflow_jobs_oldest_waiting_seconds", "gauge",
	       "Age (since submit) of the oldest queued job; 0 when none is queued.");
	{
		double age = c.oldest_submit > 0 ? now_real() - c.oldest_submit : 0;

		evbuffer_add_printf(b, "gflow_jobs_oldest_waiting_seconds %.3f\n", age > 0 ? age : 0);
	}
	free(c.t);
}

static void gpu_gauge(struct evbuffer *b, const char *name, json_t *gpus, const char *key, double scale)
{
	size_t i;
	json_t *g;

	json_array_foreach(gpus, i, g) {
		json_t *v = json_object_get(g, key);

		if (json_is_number(v))
			evbuffer_add_printf(b, "%s{gpu=\"%lld\"} %.17g\n", name,
					    (long long)json_integer_value(json_object_get(g, "index")),
					    json_number_value(v) * scale);
	}
}

static void gpus_section(struct server *s, struct evbuffer *b)
{
	static const char *const states[] = { "idle", "allocated", "shared", "unmanaged", "restricted", "down",
					       "reserved" };
	json_t *o = gpustate_json(s), *gpus = json_object_get(o, "gpus"), *g;
	size_t i;

	family(b, "gflow_nvml_up", "gauge", "1 when NVML answers (the GPUs below are known), else 0.");
	evbuffer_add_printf(b, "gflow_nvml_up %d\n", json_is_true(json_object_get(o, "nvml_ok")));
	family(b, "gflow_gpu_memory_used_bytes", "gauge", "GPU memory in use, by GPU index.");
	gpu_gauge(b, "gflow_gpu_memory_used_bytes", gpus, "used_mb", 1048576.0);
	family(b, "gflow_gpu_memory_total_bytes", "gauge", "GPU memory, by GPU index.");
	gpu_gauge(b, "gflow_gpu_memory_total_bytes", gpus, "total_mb", 1048576.0);
	family(b, "gflow_gpu_utilization_ratio", "gauge", "GPU utilisation from 0 to 1 (absent when unknown).");
	gpu_gauge(b, "gflow_gpu_utilization_ratio", gpus, "util_pct", 0.01);
	family(b, "gflow_gpu_state", "gauge", "1 for the state each GPU is in (as ginfo shows it), 0 for the others.");
	json_array_foreach(gpus, i, g) {
		const char *st = json_string_value(json_object_get(g, "state"));

		bool known = false;

		for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
			known |= st && !strcmp(st, states[k]);
			evbuffer_add_printf(b, "gflow_gpu_state{gpu=\"%lld\",state=\"%s\"} %d\n",
					    (long long)json_integer_value(json_object_get(g, "index")), states[k],
					    st && !strcmp(st, states[k]));
		}
		if (st && !known)	/* a state newer than this list */
			evbuffer_add_printf(b, "gflow_gpu_state{gpu=\"%lld\",state=\"%s\"} 1\n",
					    (long long)json_integer_value(json_object_get(g, "index")), st);
	}
	family(b, "gflow_gpu_unmanaged", "gauge",
	       "1 when processes gflow did not start (and does not ignore) use the GPU, else 0.");
	json_array_foreach(gpus, i, g)
		evbuffer_add_printf(b, "gflow_gpu_unmanaged{gpu=\"%lld\"} %d\n",
				    (long long)json_integer_value(json_object_get(g, "index")),
				    json_array_size(json_object_get(g, "unmanaged_pids")) > 0);
	family(b, "gflow_gpu_jobs", "gauge", "Running jobs holding each GPU.");
	json_array_foreach(gpus, i, g)
		evbuffer_add_printf(b, "gflow_gpu_jobs{gpu=\"%lld\"} %zu\n",
				    (long long)json_integer_value(json_object_get(g, "index")),
				    json_array_size(json_object_get(g, "jobs")));
	json_decref(o);
}

static void host_section(struct server *s, struct evbuffer *b)
{
	int64_t booked = 0;

	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (j)
			booked += j->memory_mb;
	}
	family(b, "gflow_host_memory_booked_bytes", "gauge", "Host memory booked (--memory) by jobs holding resources.");
	evbuffer_add_printf(b, "gflow_host_memory_booked_bytes %lld\n", (long long)booked * 1048576LL);
	family(b, "gflow_host_memory_total_bytes", "gauge", "Host memory (MemTotal).");
	evbuffer_add_printf(b, "gflow_host_memory_total_bytes %lld\n", (long long)s->mem_total_mb * 1048576LL);
}

/* Deliveries of notifications (notify.c), counted since the daemon started;
 * all 0 when notifications are off. */
static void notify_section(struct server *s, struct evbuffer *b)
{
	static const char *const kinds[] = { "sent", "failed", "dropped" };
	json_t *o = notify_json(s);

	family(b, "gflow_notifications_total", "counter",
	       "Notification deliveries since the daemon started: sent, failed (after its retries) or dropped "
	       "(the queue was full).");
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		evbuffer_add_printf(b, "gflow_notifications_total{result=\"%s\"} %lld\n", kinds[k],
				    (long long)json_integer_value(json_object_get(o, kinds[k])));
	family(b, "gflow_notifications_queued", "gauge", "Notification deliveries waiting or in flight.");
	evbuffer_add_printf(b, "gflow_notifications_queued %lld\n",
			    (long long)json_integer_value(json_object_get(o, "queued")));
	json_decref(o);
}

/* The lines of one histogram; labels: "" or `k="v",` pairs ending in a comma. */
static void histogram_lines(struct evbuffer *b, const char *name, const char *labels, const struct histogram *h)
{
	size_t n = strlen(labels);
	int nl = n ? (int)n - 1 : 0;	/* without its comma, for _sum and _count */

	for (int i = 0; i < METRICS_BUCKETS; i++)
		evbuffer_add_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, bounds[i],
				    (unsigned long long)h->bucket[i]);
	evbuffer_add_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
	evbuffer_add_printf(b, "%s_sum%s%.*s%s %.9f\n", name, n ? "{" : "", nl, labels, n ? "}" : "", h->sum);
	evbuffer_add_printf(b, "%s_count%s%.*s%s %llu\n", name, n ? "{" : "", nl, labels, n ? "}" : "",
			    (unsigned long long)h->count);
}

static void histogram(struct evbuffer *b, const char *name, const char *help, const struct histogram *h)
{
	family(b, name, "histogram", help);
	histogram_lines(b, name, "", h);
}

void metrics_observe_api(struct server *s, const char *method, const char *route, int status, double secs)
{
	struct api_timing *t = NULL;

	for (size_t i = 0; i < s->metrics.napi && !t; i++)
		if (s->metrics.api[i].status == status && !strcmp(s->metrics.api[i].route, route) &&
		    !strcmp(s->metrics.api[i].method, method))
			t = &s->metrics.api[i];
	if (!t) {	/* methods x routes x the statuses the daemon answers: bounded */
		if (s->metrics.napi == s->metrics.api_cap) {
			size_t cap = s->metrics.api_cap ? s->metrics.api_cap * 2 : 32;
			struct api_timing *v = realloc(s->metrics.api, cap * sizeof *v);

			if (!v)
				return;
			s->metrics.api = v;
			s->metrics.api_cap = cap;
		}
		t = &s->metrics.api[s->metrics.napi++];
		*t = (struct api_timing){ .method = method, .route = route, .status = status };
	}
	metrics_observe(&t->h, secs);
}

void metrics_close(struct server *s)
{
	free(s->metrics.api);
	s->metrics.api = NULL;
	s->metrics.napi = s->metrics.api_cap = 0;
}

static int by_route(const void *a, const void *b)
{
	const struct api_timing *x = a, *y = b;
	int c = strcmp(x->route, y->route);

	if (!c)
		c = strcmp(x->method, y->method);
	return c ? c : x->status - y->status;
}

/* Labels are static strings of the route table: nothing to escape. */
static void api_section(struct server *s, struct evbuffer *b)
{
	family(b, "gflow_api_request_seconds", "histogram",
	       "Time the daemon spent on each API request (until its answer, or until it waits: status pending), "
	       "by method, route (the route table's pattern) and status.");
	if (s->metrics.napi)
		qsort(s->metrics.api, s->metrics.napi, sizeof *s->metrics.api, by_route);
	for (size_t i = 0; i < s->metrics.napi; i++) {
		const struct api_timing *t = &s->metrics.api[i];
		char labels[160], status[16];

		if (t->status > 0)
			snprintf(status, sizeof status, "%d", t->status);
		else
			snprintf(status, sizeof status, "pending");
		snprintf(labels, sizeof labels, "method=\"%s\",route=\"%s\",status=\"%s\",", t->method, t->route,
			 status);
		histogram_lines(b, "gflow_api_request_seconds", labels, &t->h);
	}
}

void metrics_get(struct server *s, struct evhttp_request *req)
{
	struct evbuffer *b = evbuffer_new();

	family(b, "gflow_build_info", "gauge", "Always 1; the version of the running daemon is its label.");
	evbuffer_add_printf(b, "gflow_build_info{version=\"%s\",mode=\"%s\"} 1\n", GFLOW_VERSION,
			    s->paths.system ? "system" : "personal");
	family(b, "gflow_start_time_seconds", "gauge", "When the daemon started (epoch seconds).");
	evbuffer_add_printf(b, "gflow_start_time_seconds %.3f\n", s->started_at);
	jobs_section(s, b);
	gpus_section(s, b);
	host_section(s, b);
	notify_section(s, b);
	histogram(b, "gflow_scheduler_pass_seconds", "Time of each scheduler pass.", &s->metrics.sched);
	api_section(s, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}
