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

enum { C_SUBMITTED, C_FINISHED, C_FAILED, C_CANCELLED, C_TIMEOUT, C_QUEUED, C_HOLD, C_RUNNING, C_N };

struct tally {
	const char *user, *project;	/* borrowed from a job; project "" for none */
	uint64_t n[C_N];
};

struct tallies {
	struct tally *v;
	size_t n, cap;		/* cap: a power of two, open addressing */
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

static void tallies_grow(struct tallies *t);

static struct tally *tally_of(struct tallies *t, const char *user, const char *project)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap)
		tallies_grow(t);
	i = (size_t)hash_str(hash_str(14695981039346656037ULL, user), project) & (t->cap - 1);
	for (;; i = (i + 1) & (t->cap - 1)) {
		struct tally *x = &t->v[i];

		if (!x->user) {
			x->user = user;
			x->project = project;
			t->n++;
			return x;
		}
		if (!strcmp(x->user, user) && !strcmp(x->project, project))
			return x;
	}
}

static void tallies_grow(struct tallies *t)
{
	struct tallies bigger = { .cap = t->cap ? t->cap * 2 : 64 };

	bigger.v = calloc(bigger.cap, sizeof *bigger.v);
	if (!bigger.v)
		abort();
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].user)
			memcpy(tally_of(&bigger, t->v[i].user, t->v[i].project)->n, t->v[i].n, sizeof t->v[i].n);
	free(t->v);
	*t = bigger;
}

static int by_labels(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	int c;

	if (!x->user || !y->user)
		return !x->user - !y->user;
	c = strcmp(x->user, y->user);
	return c ? c : strcmp(x->project, y->project);
}

static void count_jobs(struct server *s, struct tallies *t)
{
	static const int ended[JS_NSTATES] = { [JS_FINISHED] = C_FINISHED, [JS_FAILED] = C_FAILED,
					      [JS_CANCELLED] = C_CANCELLED, [JS_TIMEOUT] = C_TIMEOUT };
	static const int live[JS_NSTATES] = { [JS_QUEUED] = C_QUEUED, [JS_HOLD] = C_HOLD,
					     [JS_RUNNING] = C_RUNNING };

	for (int64_t id = 1; id <= s->max_id; id++) {
		struct job *j = s->jobs[id];
		struct tally *x;

		if (!j)
			continue;
		x = tally_of(t, j->user ? j->user : "", j->project ? j->project : "");
		x->n[C_SUBMITTED]++;
		if (job_state_ended(j->state))
			x->n[ended[j->state]]++;
		else
			x->n[live[j->state]]++;
	}
	if (t->cap)
		qsort(t->v, t->cap, sizeof *t->v, by_labels);	/* the empty slots go last */
}

/* ---- the text format ------------------------------------------------------ */

/* A label value with \, " and newline escaped. */
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

static void jobs_section(struct server *s, struct evbuffer *b)
{
	static const char *const end_names[] = { "finished", "failed", "cancelled", "timeout" };
	static const char *const live_names[] = { "queued", "hold", "running" };
	struct tallies t = { 0 };

	count_jobs(s, &t);
	family(b, "gflow_jobs_submitted_total", "counter", "Jobs submitted, by user and project.");
	for (size_t i = 0; i < t.n; i++) {
		evbuffer_add_printf(b, "gflow_jobs_submitted_total{");
		add_label(b, "user", t.v[i].user, true);
		add_label(b, "project", t.v[i].project, false);
		evbuffer_add_printf(b, "} %llu\n", (unsigned long long)t.v[i].n[C_SUBMITTED]);
	}
	family(b, "gflow_jobs_ended_total", "counter",
	       "Jobs that ended, by user, project and final state (finished, failed, cancelled, timeout).");
	for (size_t i = 0; i < t.n; i++)
		for (int k = 0; k < 4; k++) {
			evbuffer_add_printf(b, "gflow_jobs_ended_total{");
			add_label(b, "user", t.v[i].user, true);
			add_label(b, "project", t.v[i].project, false);
			add_label(b, "state", end_names[k], false);
			evbuffer_add_printf(b, "} %llu\n", (unsigned long long)t.v[i].n[C_FINISHED + k]);
		}
	/* The gauges are per user: sum the projects of each. */
	family(b, "gflow_jobs", "gauge", "Jobs now queued, held or running, by user.");
	for (size_t i = 0; i < t.n;) {
		uint64_t sum[3] = { 0 };
		size_t k = i;

		for (; k < t.n && !strcmp(t.v[k].user, t.v[i].user); k++)
			for (int st = 0; st < 3; st++)
				sum[st] += t.v[k].n[C_QUEUED + st];
		for (int st = 0; st < 3; st++) {
			evbuffer_add_printf(b, "gflow_jobs{");
			add_label(b, "user", t.v[i].user, true);
			add_label(b, "state", live_names[st], false);
			evbuffer_add_printf(b, "} %llu\n", (unsigned long long)sum[st]);
		}
		i = k;
	}
	free(t.v);
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

static void histogram(struct evbuffer *b, const char *name, const char *help, const struct histogram *h)
{
	family(b, name, "histogram", help);
	for (int i = 0; i < METRICS_BUCKETS; i++)
		evbuffer_add_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)h->bucket[i]);
	evbuffer_add_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	evbuffer_add_printf(b, "%s_sum %.9f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
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
	histogram(b, "gflow_api_request_seconds",
		  "Time the daemon spent on each API request (until its answer, or until it waits for a cascade).",
		  &s->metrics.api);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}
