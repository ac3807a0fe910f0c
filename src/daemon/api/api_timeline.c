/* api_timeline.c — GET /timeline?range=48h: one picture of the machine
 * from now to now + range, per GPU: the running jobs until their time
 * limits, the reservations, and the expected starts of the waiting jobs
 * (the engine's estimate, jobs_expected). Public fields only (id, user,
 * name, state), like gqueue -a: anyone may read it. */
#include "apiint.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "parse.h"

#define RANGE_DEFAULT (48 * 3600)
#define RANGE_MIN 3600
#define RANGE_MAX (14 * 86400)
#define UNPLACED_MAX 100	/* waiting jobs without a start listed, at most */

static json_t *job_seg(const char *kind, const struct job *j, double start, double end)
{
	return json_pack("{s:s,s:I,s:s,s:s,s:s,s:f,s:o}", "kind", kind, "id", (json_int_t)j->id, "user",
			 j->user ? j->user : "", "name", j->name ? j->name : "", "state", job_state_name(j->state),
			 "start", start, "end", end > 0 ? json_real(end) : json_null());
}

/* Append seg to the segment list of each GPU in mask (index -> slot). */
static void add_seg(json_t *const *segs, const int *slot, uint64_t mask, json_t *seg)
{
	for (int g = 0; g < 64; g++)
		if (((mask >> g) & 1) && slot[g] >= 0)
			json_array_append(segs[slot[g]], seg);
	json_decref(seg);
}

static int cmp_start(const void *a, const void *b)
{
	double x = json_number_value(json_object_get(*(json_t *const *)a, "start")),
	       y = json_number_value(json_object_get(*(json_t *const *)b, "start"));

	return (x > y) - (x < y);
}

/* Sort one GPU's segments by start (jansson arrays have no sort). */
static json_t *sorted(json_t *a)
{
	size_t n = json_array_size(a);
	json_t **v = calloc(n + 1, sizeof *v), *out = json_array();

	if (!v)
		abort();
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(a, i);
	qsort(v, n, sizeof *v, cmp_start);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(a);
	return out;
}

static int parse_query(struct evhttp_request *req, int64_t *range, struct gf_err *e)
{
	const char *raw = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "";
	struct evkeyvalq q = { 0 };
	struct evkeyval *kv;
	bool seen = false;
	int rc = 0;

	*range = RANGE_DEFAULT;
	if (strstr(raw, "%00"))	/* a value cut short by its NUL would pass */
		return gf_err_set(e, "the query string has a NUL byte (%%00)");
	if (evhttp_parse_query_str(raw, &q))
		return gf_err_set(e, "the query string cannot be decoded");
	TAILQ_FOREACH(kv, &q, next) {
		if (strcmp(kv->key, "range")) {
			rc = gf_err_set(e, "unknown query parameter '%.100s' (known: range)", kv->key);
			break;
		}
		if (seen) {
			rc = gf_err_set(e, "'range' is given twice");
			break;
		}
		seen = true;
		if (strlen(kv->value) > 64) {
			rc = gf_err_set(e, "'range' is too long (e.g. 48h)");
			break;
		}
		if ((rc = gf_parse_duration(kv->value, "range", range, e)))
			break;
		if (*range < RANGE_MIN || *range > RANGE_MAX) {
			rc = gf_err_set(e, "range '%s' must be from 1h to 14d", kv->value);
			break;
		}
	}
	evhttp_clear_headers(&q);
	return rc;
}

void api_h_timeline(struct server *s, struct evhttp_request *req)
{
	json_t *segs[64], *gpus = json_array(), *unplaced = json_array(), *o;
	int slot[64];
	size_t ng = 0, nunplaced = 0;
	int64_t range;
	double now = now_real(), to;
	struct gf_err e;

	if (parse_query(req, &range, &e)) {
		json_decref(gpus);
		json_decref(unplaced);
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	to = now + (double)range;
	gpustate_refresh(s);
	for (int g = 0; g < 64; g++)
		slot[g] = -1;
	for (size_t i = 0; i < s->nviews && ng < 64; i++)
		if (s->views[i].index >= 0 && s->views[i].index < 64 && slot[s->views[i].index] < 0) {
			slot[s->views[i].index] = (int)ng;
			segs[ng++] = json_array();
		}
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_live_at(s, i);

		if (!j)
			continue;
		if (j->state == JS_RUNNING && j->gpu_mask) {
			/* no limit: until start + [daemon] default_runtime_estimate
			 * when set (as the estimate assumes), marked estimated; an
			 * estimate already past ends now (it still runs) */
			double dflt = (double)s->cfg.default_runtime_estimate;
			bool est = !j->time_limit_secs && dflt > 0;
			double end = j->time_limit_secs ? j->start_time + (double)j->time_limit_secs
				     : est ? fmax(j->start_time + dflt, now) : 0;
			json_t *seg;

			if (end && end <= now && !est)
				continue;
			seg = job_seg("running", j, j->start_time, end);
			json_object_set_new(seg, "estimated", json_boolean(est));
			add_seg(segs, slot, j->gpu_mask, seg);
		} else if (j->state == JS_QUEUED && j->gpus > 0) {
			const struct sched_estimate *x = jobs_expected(s, j->id);

			if (x && x->why == EST_KNOWN && x->gpu_mask) {
				if (x->start < to)
					add_seg(segs, slot, x->gpu_mask, job_seg("expected", j, x->start, x->end));
			} else if (x && nunplaced++ < UNPLACED_MAX) {
				json_t *u = json_pack("{s:I,s:s,s:s,s:s,s:s}", "id", (json_int_t)j->id, "user",
						      j->user ? j->user : "", "name", j->name ? j->name : "", "state",
						      job_state_name(j->state), "note",
						      x->why == EST_CAP ? "beyond what the estimate looks at"
									: "it waits for jobs whose end is not known "
									  "(no time limit, or held)");

				json_array_append_new(unplaced, u);
			}
		}
	}
	for (size_t i = 0; i < s->nresvs; i++) {
		const struct reservation *r = &s->resvs[i];

		if (r->cancelled || r->end <= now || r->start >= to)
			continue;
		add_seg(segs, slot, r->gpu_mask,
			json_pack("{s:s,s:I,s:s,s:f,s:f,s:s}", "kind", "reservation", "id", (json_int_t)r->id, "user",
				  r->user, "start", r->start, "end", r->end, "status", reserve_status(r, now)));
	}
	for (size_t i = 0; i < s->nviews && i < 64; i++) {
		int idx = s->views[i].index;

		if (idx < 0 || idx >= 64 || slot[idx] < 0 || !segs[slot[idx]])
			continue;
		json_array_append_new(gpus, json_pack("{s:i,s:o}", "index", idx, "segments", sorted(segs[slot[idx]])));
		segs[slot[idx]] = NULL;
	}
	o = json_pack("{s:f,s:f,s:I,s:o,s:o,s:I}", "now", now, "to", to, "range_secs", (json_int_t)range, "gpus", gpus,
		      "unplaced", unplaced, "unplaced_count", (json_int_t)nunplaced);
	api_reply(req, 200, o);
}
