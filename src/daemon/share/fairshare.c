/* fairshare.c — each user's decayed usage for fair share: GPU-seconds (gpus x
 * seconds run; a CPU-only job counts USAGE_CPU_WEIGHT per second), halved
 * every `[daemon.fair_share] half_life_secs`. A job's run is added when its
 * end is recorded, in the same transaction, so the stored value survives a
 * crash exactly as the job's end does; running jobs count from their start
 * while they run (not stored). Accounted whether fair share is on or not.
 *
 * Also the GPU runs that ended in the last 24 h (max_gpu_hours_per_day):
 * found in the job table at start, added as jobs end, dropped as they age,
 * so the quota check never walks the whole job history. */
#include "share.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static double decay(struct server *s, double value, double from, double to)
{
	double hl = (double)s->cfg.fair_share_half_life_secs;

	if (to <= from || hl <= 0)
		return value;
	return value * exp2(-(to - from) / hl);
}

static struct user_usage *find(struct user_usage *v, size_t n, const char *user)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].user, user))
			return &v[i];
	return NULL;
}

static struct user_usage *add(struct user_usage **v, size_t *n, const char *user)
{
	struct user_usage *u = find(*v, *n, user);

	if (u)
		return u;
	*v = realloc(*v, (*n + 1) * sizeof **v);
	if (!*v)
		abort();
	u = &(*v)[(*n)++];
	*u = (struct user_usage){ .user = strdup(user) };
	if (!u->user)
		abort();
	return u;
}

static void free_all(struct user_usage **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*v)[i].user);
	free(*v);
	*v = NULL;
	*n = 0;
}

static void load_row(void *arg, const char *key, json_t *row)
{
	struct server *s = arg;
	json_t *v = json_object_get(row, "gpu_secs"), *at = json_object_get(row, "at");
	struct user_usage *u;

	if (!json_is_number(v) || !json_is_number(at) || json_number_value(v) < 0) {
		fprintf(stderr, "gflowd: usage of '%s': not {\"gpu_secs\", \"at\"}: not used\n", key);
		return;
	}
	u = add(&s->usage, &s->nusage, key);
	u->value = json_number_value(v);
	u->at = json_number_value(at);
}

#define DAY_SECS 86400.0

static void recent_add(struct server *s, const struct recent_run *r)
{
	s->recent = gf_grow(s->recent, &s->recent_cap, s->nrecent + 1, sizeof *s->recent, 64);
	s->recent[s->nrecent] = *r;
	s->recent[s->nrecent].user = r->user ? strdup(r->user) : NULL;
	s->recent[s->nrecent].project = r->project ? strdup(r->project) : NULL;
	if ((r->user && !s->recent[s->nrecent].user) || (r->project && !s->recent[s->nrecent].project))
		abort();
	s->nrecent++;
}

/* The run of an ended GPU job, or false. */
static bool run_of(const struct job *j, struct recent_run *r)
{
	if (j->gpus <= 0 || j->start_time <= 0 || j->end_time <= j->start_time)
		return false;
	*r = (struct recent_run){ j->start_time, j->end_time, j->gpus, j->user, j->project };
	return true;
}

int usage_load(struct server *s, struct gf_err *e)
{
	double since = now_real() - DAY_SECS;
	struct recent_run r;

	for (int64_t i = 1; i <= s->max_id; i++) {
		const struct job *j = s->jobs[i];

		if (j && job_state_ended(j->state) && run_of(j, &r) && r.end > since)
			recent_add(s, &r);
	}
	return store_each_row(s->store, STORE_USAGE, load_row, s, e);
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

double usage_day_gpu_secs(struct server *s, bool project, const char *name, double now)
{
	double since = now - DAY_SECS, sum = 0;
	size_t k = 0;

	for (size_t i = 0; i < s->nrecent; i++) {
		struct recent_run *r = &s->recent[i];

		if (r->end <= since) {	/* aged out */
			free(r->user);
			free(r->project);
			continue;
		}
		s->recent[k++] = *r;
		if (same(project ? r->project : r->user, name))
			sum += (r->end - (r->start > since ? r->start : since)) * r->gpus;
	}
	s->nrecent = k;
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (j && j->state == JS_RUNNING && !jm(j)->cluster && j->gpus > 0 && j->start_time > 0 &&
		    now > j->start_time &&
		    same(project ? j->project : j->user, name))
			sum += (now - (j->start_time > since ? j->start_time : since)) * j->gpus;
	}
	return sum;
}

void usage_close(struct server *s)
{
	free_all(&s->usage, &s->nusage);
	free_all(&s->usage_pending, &s->nusage_pending);
	for (size_t i = 0; i < s->nrecent; i++) {
		free(s->recent[i].user);
		free(s->recent[i].project);
	}
	free(s->recent);
	s->recent = NULL;
	s->nrecent = s->recent_cap = 0;
	free(s->recent_pending);
	s->recent_pending = NULL;
	s->nrecent_pending = s->recent_pending_cap = 0;
}

static double weight(const struct job *j)
{
	return j->gpus > 0 ? (double)j->gpus : USAGE_CPU_WEIGHT;
}

double usage_of(struct server *s, const char *user, double now)
{
	struct user_usage *u = find(s->usage, s->nusage, user);
	double v = u ? decay(s, u->value, u->at, now) : 0;

	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (j && j->state == JS_RUNNING && !jm(j)->cluster && j->start_time > 0 && now > j->start_time &&
		    j->user && !strcmp(j->user, user))
			v += (now - j->start_time) * weight(j);
	}
	return v;
}

struct user_usage *usage_snapshot(struct server *s, double now, size_t *n)
{
	struct user_usage *v = NULL;

	*n = 0;
	for (size_t i = 0; i < s->nusage; i++)
		add(&v, n, s->usage[i].user)->value = decay(s, s->usage[i].value, s->usage[i].at, now);
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (j && j->state == JS_RUNNING && !jm(j)->cluster && j->start_time > 0 && now > j->start_time &&
		    j->user)
			add(&v, n, j->user)->value += (now - j->start_time) * weight(j);
	}
	return v;
}

double usage_in(const struct user_usage *v, size_t n, const char *user)
{
	const struct user_usage *u = user ? find((struct user_usage *)v, n, user) : NULL;

	return u ? u->value : 0;
}

void usage_snapshot_free(struct user_usage *v, size_t n)
{
	free_all(&v, &n);
}

int usage_stage(struct server *s, const struct job *j, struct gf_err *e)
{
	double end = j->end_time > 0 ? j->end_time : now_real();
	struct user_usage *cur, *p;
	json_t *row;
	int rc;

	if (!j->user || j->start_time <= 0 || end <= j->start_time)
		return 0;
	s->recent_pending = gf_grow(s->recent_pending, &s->recent_pending_cap, s->nrecent_pending + 1,
				    sizeof *s->recent_pending, 16);
	if (run_of(j, &s->recent_pending[s->nrecent_pending]))
		s->nrecent_pending++;	/* the job's strings, copied at the commit */
	p = find(s->usage_pending, s->nusage_pending, j->user);
	cur = p ? p : find(s->usage, s->nusage, j->user);
	{
		double base = cur ? decay(s, cur->value, cur->at, end) : 0;
		double at = cur && cur->at > end ? cur->at : end;

		if (cur && cur->at > end)	/* ended before the last entry: decay the run instead */
			base = cur->value + decay(s, (end - j->start_time) * weight(j), end, at);
		else
			base += (end - j->start_time) * weight(j);
		p = add(&s->usage_pending, &s->nusage_pending, j->user);
		p->value = base;
		p->at = at;
	}
	row = json_pack("{s:f,s:f}", "gpu_secs", p->value, "at", p->at);
	rc = store_row_put(s->store, STORE_USAGE, j->user, row, e);
	json_decref(row);
	return rc;
}

void usage_commit(struct server *s)
{
	for (size_t i = 0; i < s->nrecent_pending; i++)
		recent_add(s, &s->recent_pending[i]);
	for (size_t i = 0; i < s->nusage_pending; i++) {
		struct user_usage *u = add(&s->usage, &s->nusage, s->usage_pending[i].user);

		u->value = s->usage_pending[i].value;
		u->at = s->usage_pending[i].at;
	}
	usage_drop(s);
}

void usage_drop(struct server *s)
{
	s->nrecent_pending = 0;
	free_all(&s->usage_pending, &s->nusage_pending);
}

json_t *usage_json(struct server *s, double now)
{
	json_t *o = json_object();

	for (size_t i = 0; i < s->nusage; i++)
		json_object_set_new(o, s->usage[i].user, json_real(usage_of(s, s->usage[i].user, now)));
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		if (j && j->state == JS_RUNNING && j->user && !json_object_get(o, j->user))
			json_object_set_new(o, j->user, json_real(usage_of(s, j->user, now)));
	}
	return o;
}
