/* quota.c — quotas: the runtime overrides (stored, winning over the
 * `[quota]` section of the config until removed), the limits that hold for
 * a user or project, the subjects the scheduler pass counts, the refusal
 * of a submission over max_queued_jobs, and the note that says why a
 * queued job waits (which limit or reservation, and when it is expected to
 * start). */
#include "share.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const limit_key[] = { "max_running_jobs", "max_running_gpus", "max_queued_jobs",
					 "max_gpu_hours_per_day", "max_preemptible_gpus" };
#define NLIMITS 5

static int64_t *field(struct gf_quota *q, int i)
{
	return i == 0 ? &q->max_running_jobs : i == 1 ? &q->max_running_gpus : i == 2 ? &q->max_queued_jobs
	       : i == 3 ? &q->max_gpu_hours_per_day : &q->max_preemptible_gpus;
}

/* ---- overrides --------------------------------------------------------- */

static struct quota_override *find_ov(struct server *s, const char *key)
{
	for (size_t i = 0; i < s->nquota_ov; i++)
		if (!strcmp(s->quota_ov[i].key, key))
			return &s->quota_ov[i];
	return NULL;
}

static struct quota_override *add_ov(struct server *s, const char *key)
{
	struct quota_override *o = find_ov(s, key);

	if (o)
		return o;
	s->quota_ov = realloc(s->quota_ov, (s->nquota_ov + 1) * sizeof *s->quota_ov);
	if (!s->quota_ov)
		abort();
	o = &s->quota_ov[s->nquota_ov++];
	if (!(o->key = strdup(key)))
		abort();
	for (int i = 0; i < NLIMITS; i++)
		*field(&o->q, i) = QUOTA_UNSET;
	return o;
}

static json_t *ov_json(const struct gf_quota *q)
{
	json_t *o = json_object();

	for (int i = 0; i < NLIMITS; i++)
		if (*field((struct gf_quota *)q, i) != QUOTA_UNSET)
			json_object_set_new(o, limit_key[i], json_integer(*field((struct gf_quota *)q, i)));
	return o;
}

static void load_row(void *arg, const char *key, json_t *row)
{
	struct quota_override *o = add_ov(arg, key);

	for (int i = 0; i < NLIMITS; i++) {
		json_t *v = json_object_get(row, limit_key[i]);

		if (json_is_integer(v) && json_integer_value(v) >= -1)
			*field(&o->q, i) = json_integer_value(v);
	}
}

int quota_load(struct server *s, struct gf_err *e)
{
	return store_each_row(s->store, STORE_QUOTAS, load_row, s, e);
}

static void free_note_names(struct server *s)
{
	for (size_t i = 0; i < s->nnote_names; i++)
		free(s->note_names[i]);
	free(s->note_names);
	s->note_names = NULL;
	s->nnote_names = 0;
}

void quota_close(struct server *s)
{
	for (size_t i = 0; i < s->nquota_ov; i++)
		free(s->quota_ov[i].key);
	free(s->quota_ov);
	free(s->notes);
	free_note_names(s);
	s->quota_ov = NULL;
	s->notes = NULL;
	s->nquota_ov = s->nnotes = 0;
}

int quota_set(struct server *s, const char *key, const struct gf_quota *q, struct gf_err *e)
{
	struct quota_override *o = find_ov(s, key);
	struct gf_quota merged;
	json_t *row;
	int rc;

	for (int i = 0; i < NLIMITS; i++)
		*field(&merged, i) = o ? *field(&o->q, i) : QUOTA_UNSET;
	for (int i = 0; i < NLIMITS; i++)
		if (*field((struct gf_quota *)q, i) != QUOTA_UNSET)
			*field(&merged, i) = *field((struct gf_quota *)q, i);
	row = ov_json(&merged);
	rc = jobs_txn_begin(s, e) || store_row_put(s->store, STORE_QUOTAS, key, row, e) || jobs_txn_commit(s, e);
	json_decref(row);
	if (rc) {
		jobs_txn_rollback(s);
		return -1;
	}
	add_ov(s, key)->q = merged;	/* memory follows the store */
	server_schedule(s);
	return 0;
}

int quota_remove(struct server *s, const char *key, bool *had, struct gf_err *e)
{
	struct quota_override *o = find_ov(s, key);

	*had = o != NULL;
	if (!o)
		return 0;
	if (jobs_txn_begin(s, e) || store_row_put(s->store, STORE_QUOTAS, key, NULL, e) || jobs_txn_commit(s, e)) {
		jobs_txn_rollback(s);
		return -1;
	}
	free(o->key);
	*o = s->quota_ov[--s->nquota_ov];
	server_schedule(s);
	return 0;
}

/* ---- effective limits ------------------------------------------------- */

static bool config_has(const struct gf_config *c, bool project, const char *name)
{
	const struct gf_named_quota *l = project ? c->quota_projects : c->quota_users;
	size_t n = project ? c->n_quota_projects : c->n_quota_users;

	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(l[i].name, name))
			return true;
	return false;
}

/* Per limit, the first that sets it: the subject's override, its entry in
 * the file (which the file's default already filled), the override of the
 * default, the file's default. */
void quota_effective(struct server *s, bool project, const char *name, struct gf_quota *out)
{
	char key[300];
	const struct quota_override *own = NULL, *def;
	const struct gf_quota *file_def = project ? &s->cfg.quota_default_project : &s->cfg.quota_default_user;
	const struct gf_quota *file_own = NULL;

	if (name) {
		snprintf(key, sizeof key, "%s:%s", project ? "project" : "user", name);
		own = find_ov(s, key);
		if (config_has(&s->cfg, project, name))
			file_own = project ? gf_config_project_quota(&s->cfg, name) : gf_config_user_quota(&s->cfg, name);
	}
	def = find_ov(s, project ? "default_project" : "default_user");
	for (int i = 0; i < NLIMITS; i++) {
		int64_t v = *field((struct gf_quota *)file_def, i);

		if (own && *field((struct gf_quota *)&own->q, i) != QUOTA_UNSET)
			v = *field((struct gf_quota *)&own->q, i);
		else if (file_own)
			v = *field((struct gf_quota *)file_own, i);
		else if (def && *field((struct gf_quota *)&def->q, i) != QUOTA_UNSET)
			v = *field((struct gf_quota *)&def->q, i);
		*field(out, i) = v == QUOTA_UNSET ? -1 : v;
	}
}

static bool limited(const struct gf_quota *q)
{
	for (int i = 0; i < NLIMITS; i++)
		if (*field((struct gf_quota *)q, i) >= 0)
			return true;
	return false;
}

/* ---- what a subject holds ---------------------------------------------- */

static bool is_subject(const struct job *j, bool project, const char *name)
{
	const char *v = project ? j->project : j->user;

	return v && !strcmp(v, name);
}

struct quota_subjects {
	struct sched_quota *q;
	struct subject_name {
		bool project;
		char *name;
		struct gf_quota lim;
		const char *seen;	/* the job's string it was found by: jobs share one a user (job.h's pool) */
	} *who;
	size_t n, cap;
};

/* The subject of a job as the pass names it (1 + its index), made when its
 * limits hold anything; 0 else. */
static int subject_index(struct server *s, struct quota_subjects *qs, bool project, const char *name, double now)
{
	struct gf_quota lim;

	if (!name)
		return 0;
	for (size_t i = 0; i < qs->n; i++)
		if (qs->who[i].project == project && (qs->who[i].seen == name || !strcmp(qs->who[i].name, name)))
			return qs->q[i].max_jobs == -2 ? 0 : (int)i + 1;
	quota_effective(s, project, name, &lim);
	if (qs->n == qs->cap) {
		qs->cap = qs->cap ? qs->cap * 2 : 16;
		qs->q = realloc(qs->q, qs->cap * sizeof *qs->q);
		qs->who = realloc(qs->who, qs->cap * sizeof *qs->who);
		if (!qs->q || !qs->who)
			abort();
	}
	qs->who[qs->n] = (struct subject_name){ project, strdup(name), lim, name };
	if (!qs->who[qs->n].name)
		abort();
	/* An unlimited subject is remembered as such (max_jobs -2), so it is
	 * looked up once. */
	qs->q[qs->n] = (struct sched_quota){
		.max_jobs = limited(&lim) ? lim.max_running_jobs : -2,
		.max_gpus = lim.max_running_gpus,
		.max_preempt_gpus = lim.max_preemptible_gpus,
		.day_used_up = lim.max_gpu_hours_per_day >= 0 &&
			       usage_day_gpu_secs(s, project, name, now) >= (double)lim.max_gpu_hours_per_day * 3600,
	};
	qs->n++;
	return limited(&lim) ? (int)qs->n : 0;
}

struct quota_subjects *quota_subjects_build(struct server *s, struct sched_job *q, struct job **jobs, size_t nq,
					    double now)
{
	struct quota_subjects *qs = calloc(1, sizeof *qs);
	bool any = false;

	if (!qs)
		abort();
	for (size_t i = 0; i < nq; i++) {
		q[i].user_quota = subject_index(s, qs, false, jobs[i]->user, now);
		q[i].project_quota = subject_index(s, qs, true, jobs[i]->project, now);
	}
	/* What the limited subjects of waiting jobs hold now. */
	for (size_t k = 0; k < qs->n && !any; k++)
		any = qs->q[k].max_jobs != -2;
	for (size_t i = 0; i < s->nlive && any; i++) {
		struct job *j = jobs_live_at(s, i);

		if (!j || !j->active)
			continue;
		for (size_t k = 0; k < qs->n; k++)
			if (qs->q[k].max_jobs != -2 && is_subject(j, qs->who[k].project, qs->who[k].name)) {
				if (job_preemptible(jm(j))) {	/* beyond the quotas: its own limit */
					qs->q[k].running_preempt_gpus += j->gpus;
					continue;
				}
				qs->q[k].running_jobs++;
				qs->q[k].running_gpus += j->gpus;
			}
	}
	/* The pass knows only limited subjects: make unlimited ones harmless. */
	for (size_t k = 0; k < qs->n; k++)
		if (qs->q[k].max_jobs == -2)
			qs->q[k] = (struct sched_quota){ .max_jobs = -1, .max_gpus = -1, .max_preempt_gpus = -1 };
	return qs;
}

const struct sched_quota *quota_subjects_array(const struct quota_subjects *qs, size_t *n)
{
	*n = qs->n;
	return qs->q;
}

void quota_subjects_of(const struct quota_subjects *qs, const struct job *j, int *uq, int *pq)
{
	*uq = *pq = 0;
	for (size_t k = 0; k < qs->n; k++)
		if (is_subject(j, qs->who[k].project, qs->who[k].name))
			*(qs->who[k].project ? pq : uq) = (int)k + 1;
}

void quota_subjects_free(struct quota_subjects *qs)
{
	if (!qs)
		return;
	for (size_t i = 0; i < qs->n; i++)
		free(qs->who[i].name);
	free(qs->who);
	free(qs->q);
	free(qs);
}

/* ---- why a job waits --------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* When the subject's running jobs, ending by their time limits, leave room
 * for one more job of `gpus` GPUs under this limit; 0 when that is not
 * known (a job it must wait for has no time limit, or the limit is
 * max_gpu_hours_per_day). */
static double quota_frees_at(struct server *s, const struct subject_name *who, enum sched_limit lim, int gpus)
{
	struct {
		double end;
		int gpus;
	} *v = NULL;
	size_t n = 0, cap = 0;
	int64_t jobs = 0, held = 0;
	double at = 0;

	if (lim != LIM_JOBS && lim != LIM_GPUS)
		return 0;
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (!j || !is_subject(j, who->project, who->name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				abort();
		}
		/* Unknown ends sort last (INFINITY). */
		v[n].end = j->time_limit_secs ? j->start_time + (double)j->time_limit_secs : INFINITY;
		v[n++].gpus = j->gpus;
		jobs++;
		held += j->gpus;
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_double);	/* end is the first member */
	for (size_t i = 0; i < n; i++) {
		if (lim == LIM_JOBS ? jobs + 1 <= who->lim.max_running_jobs
				    : held + gpus <= who->lim.max_running_gpus)
			break;
		jobs--;
		held -= v[i].gpus;
		at = v[i].end;
	}
	if (lim == LIM_JOBS ? jobs + 1 > who->lim.max_running_jobs : held + gpus > who->lim.max_running_gpus)
		at = 0;		/* never by these jobs alone */
	free(v);
	return isfinite(at) ? at : 0;
}

static int cmp_note(const void *a, const void *b)
{
	int64_t x = ((const struct wait_note *)a)->id, y = ((const struct wait_note *)b)->id;

	return (x > y) - (x < y);
}

void quota_notes(struct server *s, const struct quota_subjects *qs, const struct sched_decision *d, size_t n)
{
	size_t k = 0, cap = 0;
	/* When each subject frees room, per limit and GPU count asked: worked
	 * out once per pass (NAN: not yet). */
	double *at = malloc((qs->n * 66 + 1) * sizeof *at);

	if (!at)
		abort();
	for (size_t i = 0; i < qs->n * 66; i++)
		at[i] = NAN;
	free(s->notes);
	s->notes = NULL;
	s->nnotes = 0;
	free_note_names(s);
	/* The subjects, named as notes show them. */
	s->note_names = calloc(qs->n + 1, sizeof *s->note_names);
	if (!s->note_names)
		abort();
	for (size_t i = 0; i < qs->n; i++)
		if (asprintf(&s->note_names[i], "%s%s", qs->who[i].project ? "project " : "", qs->who[i].name) < 0)
			abort();
	s->nnote_names = qs->n;
	for (size_t i = 0; i < n; i++) {
		struct wait_note w = { .id = d[i].id, .expected_start = d[i].expected_start, .subject = -1 };
		const struct job *j = jobs_get(s, d[i].id);
		bool resources;

		if (!d[i].reason)
			continue;
		resources = !strcmp(d[i].reason, "Resources");	/* the common one, compared once */
		if (!resources && !strcmp(d[i].reason, "Quota") && d[i].quota >= 1 && (size_t)d[i].quota <= qs->n) {
			const struct subject_name *who = &qs->who[d[i].quota - 1];
			int li = d[i].limit == LIM_JOBS ? 0 : d[i].limit == LIM_GPUS ? 1 : d[i].limit == LIM_PREEMPT_GPUS ? 4 : 3;
			double *c = &at[(size_t)(d[i].quota - 1) * 66 +
					(d[i].limit == LIM_JOBS ? 65 : (j->gpus > 64 ? 64 : j->gpus))];

			if (isnan(*c))
				*c = quota_frees_at(s, who, d[i].limit, j->gpus);
			w.kind = NOTE_QUOTA;
			w.limit = (uint8_t)li;
			w.value = *field((struct gf_quota *)&who->lim, li);
			w.subject = d[i].quota - 1;
			w.expected_start = *c;
		} else if (!resources && !strcmp(d[i].reason, "Reservation")) {
			w.kind = NOTE_RESERVATION;
			w.ref = d[i].resv_id;
		} else if (resources && d[i].limit == LIM_GROUP) {
			w.kind = NOTE_GROUP;
			w.ref = job_group_id(j);
			w.value = j->max_concurrent;
		} else if (resources && d[i].limit == LIM_CPUS) {
			w.kind = NOTE_CPUS;
			w.value = d[i].cpus_busy;
		} else if (resources && d[i].expected_start > 0)
			w.kind = NOTE_RESOURCES;
		else
			continue;	/* its reason says it all */
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			s->notes = realloc(s->notes, cap * sizeof *s->notes);
			if (!s->notes)
				abort();
		}
		s->notes[k++] = w;
	}
	free(at);
	s->nnotes = k;
	/* Decisions come in id order mostly (a queue of equal priorities):
	 * sorted already, a pass over 2,000 waiting jobs skips the sort. */
	for (size_t i = 1; i < k; i++)
		if (s->notes[i - 1].id > s->notes[i].id) {
			qsort(s->notes, k, sizeof *s->notes, cmp_note);
			break;
		}
}

const struct wait_note *quota_note(struct server *s, int64_t id)
{
	struct wait_note key = { .id = id };

	return s->nnotes ? bsearch(&key, s->notes, s->nnotes, sizeof key, cmp_note) : NULL;
}

/* The words for a queued job's wait; false when there is nothing to add. */
static bool note_words(struct server *s, const struct job *j, const struct wait_note *w, char *buf, size_t size)
{
	const char *why = j->reason;

	if (!why)
		return false;
	if (w && w->kind == NOTE_QUOTA && !strcmp(why, "Quota") && w->subject >= 0 &&
	    (size_t)w->subject < s->nnote_names)
		snprintf(buf, size, "Quota: %.150s %s=%lld", s->note_names[w->subject], limit_key[w->limit],
			 (long long)w->value);
	else if (w && w->kind == NOTE_RESERVATION && !strcmp(why, "Reservation"))
		reserve_describe(s, w->ref, buf, size);
	else if (w && w->kind == NOTE_GROUP && !strcmp(why, "Resources"))
		snprintf(buf, size, "Resources: batch %lld runs its max_concurrent=%lld jobs", (long long)w->ref,
			 (long long)w->value);
	else if (w && w->kind == NOTE_CPUS && !strcmp(why, "Resources"))
		snprintf(buf, size, "Resources: cpus %lld of %d busy (it asks %d)%s", (long long)w->value, s->cpus_total,
			 job_cpus(j), w->expected_start > 0 ? " (start expected by the running jobs' time limits)" : "");
	else if (!strcmp(why, "Resources"))
		snprintf(buf, size, "Resources: waiting for GPUs or memory%s",
			 w && w->expected_start > 0 ? " (start expected by the running jobs' time limits)" : "");
	else if (!strcmp(why, "Priority"))
		snprintf(buf, size, "Priority: a job ahead of it has the GPUs or memory it needs promised");
	else
		return false;
	return true;
}

void quota_annotate(struct server *s, const struct job *j, json_t *o)
{
	const struct wait_note *w;
	char words[300];

	if (j->state != JS_QUEUED)
		return;
	w = quota_note(s, j->id);
	if (!note_words(s, j, w, words, sizeof words))
		return;
	json_object_set_new(o, "reason_detail", json_string(words));
}

/* ---- submission and listing -------------------------------------------- */

static size_t waiting_of(struct server *s, bool project, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		/* a cluster record (Slurm's) counts too: it is the user's
		 * waiting job as much as a local one */
		if (j && (j->state == JS_QUEUED || j->state == JS_HOLD) && is_subject(j, project, name))
			n++;
	}
	return n;
}

/* One subject against max_queued_jobs, with n more waiting. */
static int check_waiting(struct server *s, bool project, const char *name, size_t n, struct gf_err *e)
{
	struct gf_quota lim;
	size_t have;

	quota_effective(s, project, name, &lim);
	if (lim.max_queued_jobs < 0)
		return 0;
	have = waiting_of(s, project, name);
	if (have + n <= (size_t)lim.max_queued_jobs)
		return 0;
	return gf_err_set(e, "quota: %s%s max_queued_jobs=%lld: %zu job%s waiting, this submission adds %zu "
			     "(nothing was submitted)", project ? "project " : "", name, (long long)lim.max_queued_jobs,
			  have, have == 1 ? "" : "s", n);
}

/* Each user and project of the new jobs, counted once at its first job. */
int quota_check_submit(struct server *s, struct job *const *jobs, size_t n, struct gf_err *e)
{
	for (int project = 0; project < 2; project++)
		for (size_t i = 0; i < n; i++) {
			const char *name = project ? jobs[i]->project : jobs[i]->user;
			size_t same = 0;
			bool first = true;

			if (!name)
				continue;
			for (size_t k = 0; k < i && first; k++)
				first = !is_subject(jobs[k], project, name);
			if (!first)
				continue;
			for (size_t k = i; k < n; k++)
				same += is_subject(jobs[k], project, name);
			if (check_waiting(s, project, name, same, e))
				return -1;
		}
	return 0;
}

static json_t *limit_or_null(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *subject_json(struct server *s, bool project, const char *name, double now)
{
	struct gf_quota lim;
	char key[300];
	json_t *o = json_object(), *l = json_object();
	int64_t running = 0, gpus = 0;

	quota_effective(s, project, name, &lim);
	for (int i = 0; i < NLIMITS; i++)
		json_object_set_new(l, limit_key[i], limit_or_null(*field(&lim, i)));
	if (name)
		snprintf(key, sizeof key, "%s:%s", project ? "project" : "user", name);
	else
		snprintf(key, sizeof key, "%s", project ? "default_project" : "default_user");
	json_object_set_new(o, "kind", json_string(project ? "project" : "user"));
	json_object_set_new(o, "name", name ? json_string(name) : json_null());
	json_object_set_new(o, "limits", l);
	json_object_set_new(o, "override", find_ov(s, key) ? ov_json(&find_ov(s, key)->q) : json_null());
	if (!name)
		return o;
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);

		if (j && is_subject(j, project, name)) {
			running++;
			gpus += j->gpus;
		}
	}
	json_object_set_new(o, "running_jobs", json_integer(running));
	json_object_set_new(o, "running_gpus", json_integer(gpus));
	json_object_set_new(o, "queued_jobs", json_integer((json_int_t)waiting_of(s, project, name)));
	json_object_set_new(o, "gpu_hours_24h", json_real(usage_day_gpu_secs(s, project, name, now) / 3600));
	if (!project)
		json_object_set_new(o, "usage_gpu_secs", json_real(usage_of(s, name, now)));
	return o;
}

static bool listed(char **v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

static void add_name(char ***v, size_t *n, const char *name)
{
	if (!name || listed(*v, *n, name))
		return;
	*v = realloc(*v, (*n + 1) * sizeof **v);
	if (!*v)
		abort();
	(*v)[(*n)++] = (char *)name;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Subjects: the defaults, then every user and project that the file or an
 * override names, or that has open jobs or usage. */
json_t *quota_list_json(struct server *s)
{
	json_t *out = json_array();
	double now = now_real();
	char **names[2] = { NULL, NULL };
	size_t n[2] = { 0, 0 };

	for (size_t i = 0; i < s->cfg.n_quota_users; i++)
		add_name(&names[0], &n[0], s->cfg.quota_users[i].name);
	for (size_t i = 0; i < s->cfg.n_quota_projects; i++)
		add_name(&names[1], &n[1], s->cfg.quota_projects[i].name);
	for (size_t i = 0; i < s->nquota_ov; i++) {
		const char *k = s->quota_ov[i].key;

		if (!strncmp(k, "user:", 5))
			add_name(&names[0], &n[0], k + 5);
		else if (!strncmp(k, "project:", 8))
			add_name(&names[1], &n[1], k + 8);
	}
	for (size_t i = 0; i < s->nopen; i++) {
		struct job *j = jobs_open_at(s, i);

		if (j) {
			add_name(&names[0], &n[0], j->user);
			add_name(&names[1], &n[1], j->project);
		}
	}
	for (size_t i = 0; i < s->nusage; i++)
		add_name(&names[0], &n[0], s->usage[i].user);
	json_array_append_new(out, subject_json(s, false, NULL, now));
	json_array_append_new(out, subject_json(s, true, NULL, now));
	for (int k = 0; k < 2; k++) {
		if (n[k])
			qsort(names[k], n[k], sizeof *names[k], cmp_str);
		for (size_t i = 0; i < n[k]; i++)
			json_array_append_new(out, subject_json(s, k, names[k][i], now));
		free(names[k]);
	}
	return out;
}
