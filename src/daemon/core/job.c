/* job.c — job records: allocation, state names, JSON conversion. */
#include "job.h"

#include <pwd.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bytes.h"

static const char *const state_names[JS_NSTATES] = {
	"Queued", "Hold", "Running", "Finished", "Failed", "Cancelled", "Timeout",
};
static const char *const state_codes[JS_NSTATES] = { "PD", "H", "R", "CD", "F", "CA", "TO" };

const char *job_state_name(enum job_state s)
{
	return (unsigned)s < JS_NSTATES ? state_names[s] : "Unknown";
}

const char *job_state_code(enum job_state s)
{
	return (unsigned)s < JS_NSTATES ? state_codes[s] : "?";
}

int job_state_parse(const char *s)
{
	for (int i = 0; i < JS_NSTATES; i++)
		if (!strcasecmp(s, state_names[i]) || !strcasecmp(s, state_codes[i]))
			return i;
	if (!strcasecmp(s, "Pending"))
		return JS_QUEUED;
	if (!strcasecmp(s, "Completed"))
		return JS_FINISHED;
	return -1;
}

/* The last answer, for a second: an array of 2,000 jobs asks 2,000 times
 * for one uid, and each lookup reads the user database. */
static struct {
	uid_t uid;
	struct timespec at;
	char name[256];
} last_user;

const char *job_user_name(uid_t uid, char *buf, size_t size)
{
	struct passwd pw, *res = NULL;
	char tmp[4096];
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last_user.at.tv_sec && last_user.uid == uid && now.tv_sec - last_user.at.tv_sec < 1) {
		snprintf(buf, size, "%s", last_user.name);
		return buf;
	}
	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
		snprintf(last_user.name, sizeof last_user.name, "%s", res->pw_name);
	else
		snprintf(last_user.name, sizeof last_user.name, "%u", (unsigned)uid);
	last_user.uid = uid;
	last_user.at = now;
	snprintf(buf, size, "%s", last_user.name);
	return buf;
}

const struct job_more job_more_none;

struct job_more *jm_w(struct job *j)
{
	if (!j->more && !(j->more = calloc(1, sizeof *j->more)))
		abort();
	return j->more;
}

void job_more_adopt(struct job *j, const struct job_more *m)
{
	if (!memcmp(m, &job_more_none, sizeof *m))
		return;
	*jm_w(j) = *m;
}

void job_more_trim(struct job *j)
{
	if (j->more && !memcmp(j->more, &job_more_none, sizeof *j->more)) {
		free(j->more);
		j->more = NULL;
	}
}

/* Both setters: the uint32_t field, or the job_more overflow (the block
 * made only when a value needs it, trimmed when it no longer does). */
void job_set_array_task_id(struct job *j, int64_t v)
{
	int64_t wide;

	job_split_u32(v, &j->array_task_id32, &wide);
	if (wide || j->more) {
		jm_w(j)->array_task_id_wide = wide;
		job_more_trim(j);
	}
}

void job_set_group_id(struct job *j, int64_t v)
{
	int64_t wide;

	job_split_u32(v, &j->group_id32, &wide);
	if (wide || j->more) {
		jm_w(j)->group_id_wide = wide;
		job_more_trim(j);
	}
}

const struct job_rt job_rt_none = { .pidfd = -1 };

struct job_rt *jr_w(struct job *j)
{
	if (!j->rt) {
		if (!(j->rt = malloc(sizeof *j->rt)))
			abort();
		*j->rt = job_rt_none;
	}
	return j->rt;
}

void job_rt_trim(struct job *j)
{
	const struct job_rt *r = j->rt;

	if (r && !r->pidfd_ev && !r->report && !r->backstop && !r->retried_by && r->pidfd < 0 && !r->stopped_ticks &&
	    !r->cancel_sent && !r->draining && !r->end_pending && !r->end_queued && !r->group_made) {
		free(j->rt);
		j->rt = NULL;
	}
}

/* ---- job records --------------------------------------------------------
 *
 * A million jobs may be in memory (issue 31): malloc's 8-byte header and
 * its rounding to 16 would cost each one up to 24 bytes, so records are cut
 * from blocks of JOB_SLAB and a freed one waits on a free list for the next
 * (the table only grows; freed records are transaction snapshots and
 * refused submissions). Under AddressSanitizer each record is its own
 * allocation, so that a use after free is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define JOB_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JOB_MALLOC 1
#endif
#endif

#define JOB_SLAB 4096

#ifndef JOB_MALLOC
static struct job *job_spare;	/* freed records, linked through their first bytes */
static struct job *slab_at, *slab_end;
#endif

static struct job *job_alloc(void)
{
#ifdef JOB_MALLOC
	struct job *j = malloc(sizeof *j);

	if (!j)
		abort();
	return j;
#else
	struct job *j = job_spare;

	if (j) {
		void *next;

		memcpy(&next, j, sizeof next);
		job_spare = next;
		return j;
	}
	if (slab_at == slab_end) {
		if (!(slab_at = malloc(JOB_SLAB * sizeof *slab_at)))
			abort();
		slab_end = slab_at + JOB_SLAB;
	}
	return slab_at++;
#endif
}

static void job_release(struct job *j)
{
#ifdef JOB_MALLOC
	free(j);
#else
	void *next = job_spare;

	memcpy(j, &next, sizeof next);
	job_spare = j;
#endif
}

struct job *job_new(void)
{
	struct job *j = job_alloc();

	memset(j, 0, sizeof *j);
	j->priority = 10;
	j->auto_cancel = true;
	j->memory_enforced = -1;
	return j;
}

/* ---- shared strings ---------------------------------------------------- */

/* The strings that repeat from job to job (users, directories, reasons,
 * names, command words) are kept once, in a pool that lives as long as the
 * daemon: with 100,000 jobs that is most of their memory. A pooled string
 * is never freed or changed; job_str_free knows one by its address. */
static struct {
	struct chunk {
		char *base;
		size_t size, used;
	} *chunks;
	size_t nchunks;
} pool;

/* A set of pooled things (strings, command vectors): open addressing, at
 * most half full. */
struct pset {
	const void **slots;
	size_t cap, n;
	size_t (*hash)(const void *x);
	bool (*equal)(const void *a, const void *b);
};

/* The slot that holds what equals x, or the empty one where x goes (the
 * set made room first). */
static size_t pset_slot(struct pset *t, const void *x)
{
	size_t i;

	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		const void **slots = calloc(cap, sizeof *slots);

		if (!slots)
			abort();
		for (size_t k = 0; k < t->cap; k++)
			if (t->slots[k]) {
				for (i = t->hash(t->slots[k]) & (cap - 1); slots[i]; i = (i + 1) & (cap - 1))
					;
				slots[i] = t->slots[k];
			}
		free(t->slots);
		t->slots = slots;
		t->cap = cap;
	}
	for (i = t->hash(x) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
		if (t->equal(t->slots[i], x))
			break;
	return i;
}

static bool pooled(const char *p)
{
	for (size_t i = pool.nchunks; i-- > 0;)
		if (p >= pool.chunks[i].base && p < pool.chunks[i].base + pool.chunks[i].size)
			return true;
	return false;
}

static size_t str_hash(const void *x)
{
	size_t h = 14695981039346656037ULL;

	for (const char *s = x; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static bool str_equal(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static struct pset strs = { .hash = str_hash, .equal = str_equal };

/* size bytes at an `align`-aligned place in the pool's last chunk. */
static void *pool_alloc(size_t size, size_t align)
{
	struct chunk *c = pool.nchunks ? &pool.chunks[pool.nchunks - 1] : NULL;
	size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;

	if (!c || at > c->size || c->size - at < size) {
		size_t csize = c && c->size < (1u << 20) ? c->size * 2 : (c ? c->size : 1u << 16);

		if (csize < size)
			csize = size;
		pool.chunks = realloc(pool.chunks, (pool.nchunks + 1) * sizeof *pool.chunks);
		if (!pool.chunks)
			abort();
		c = &pool.chunks[pool.nchunks++];
		*c = (struct chunk){ .base = malloc(csize), .size = csize };
		if (!c->base)
			abort();
		at = 0;
	}
	c->used = at + size;
	return c->base + at;
}

static char *pool_copy(const char *s, size_t len)
{
	return memcpy(pool_alloc(len + 1, 1), s, len + 1);
}

char *job_str_shared(const char *s)
{
	size_t i;

	if (!s)
		return NULL;
	if (pooled(s))
		return (char *)s;
	i = pset_slot(&strs, s);
	if (strs.slots[i])
		return (char *)strs.slots[i];
	strs.n++;
	return (char *)(strs.slots[i] = pool_copy(s, strlen(s)));
}

void job_str_free(char *s)
{
	if (s && !pooled(s))
		free(s);
}

void job_set_shared(char **dst, const char *src)
{
	char *v = job_str_shared(src);

	job_str_free(*dst);
	*dst = v;
}

/* Command vectors that repeat (an array's tasks, one command sent again
 * and again) are kept once too, in the same pool: a pooled vector holds
 * pooled words and is never freed or changed (strv_free leaves it alone). */
static size_t vec_hash(const void *x)
{
	size_t h = 14695981039346656037ULL;

	for (char *const *v = x; *v; v++)
		h = (h ^ (size_t)(uintptr_t)*v) * 1099511628211ULL;
	return h;
}

static bool vec_equal(const void *x, const void *y)
{
	for (char *const *a = x, *const *b = y; *a == *b; a++, b++)
		if (!*a)
			return true;
	return false;
}

static struct pset vecs = { .hash = vec_hash, .equal = vec_equal };

static void share(char **f);

void job_share_argv(struct job *j)
{
	size_t n, i;
	char **v;

	if (!j->argv || pooled((const char *)j->argv))
		return;
	for (n = 0; j->argv[n]; n++)
		share(&j->argv[n]);
	i = pset_slot(&vecs, j->argv);
	if (vecs.slots[i]) {
		free(j->argv);
		j->argv = (char **)vecs.slots[i];
		return;
	}
	v = memcpy(pool_alloc((n + 1) * sizeof *v, _Alignof(char *)), j->argv, (n + 1) * sizeof *v);
	free(j->argv);
	vecs.slots[i] = j->argv = v;
	vecs.n++;
}

static void share(char **f)
{
	char *v = job_str_shared(*f);

	job_str_free(*f);
	*f = v;
}

void job_share_strings(struct job *j)
{
	share(&j->name);
	share(&j->user);
	share(&j->project);
	share(&j->reason);
	share(&j->cwd);
	share(&j->tmux_socket);
	share(&j->rlimits);
	if (j->more) {
		share(&j->more->log_dir);
		share(&j->more->conda_env);
		share(&j->more->cpu_ids);
	}
	job_share_argv(j);
}

void strv_free(char **v)
{
	if (!v || pooled((const char *)v))
		return;
	for (char **p = v; *p; p++)
		job_str_free(*p);
	free(v);
}

size_t strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

static void more_free(struct job_more *m)
{
	if (!m)
		return;
	job_str_free(m->script);
	job_str_free(m->log_dir);
	job_str_free(m->conda_env);
	job_str_free(m->notify_email);
	job_str_free(m->notify_on);
	job_str_free(m->cluster);
	job_str_free(m->slurm_id);
	job_str_free(m->remote_log);
	job_str_free(m->cpu_ids);
	json_decref(m->params);
	json_decref(m->command_template);
	json_decref(m->gpu_usage);
	free(m);
}

void job_free(struct job *j)
{
	if (!j)
		return;
	job_str_free(j->name);
	job_str_free(j->user);
	job_str_free(j->project);
	job_str_free(j->reason);
	strv_free(j->argv);
	job_str_free(j->cwd);
	job_str_free(j->tmux_session);
	job_str_free(j->tmux_socket);
	job_str_free(j->rlimits);
	free(j->deps);
	more_free(j->more);
	free(j->rt);
	free(j->dependents);
	job_release(j);
}

/* A copy that owns what it points to (pooled strings are shared). */
static char *copy_str(const char *s)
{
	char *c;

	if (!s || pooled(s))
		return (char *)s;
	if (!(c = strdup(s)))
		abort();
	return c;
}

struct job *job_clone(const struct job *j)
{
	struct job *c = job_alloc();
	size_t n = strv_len(j->argv);

	*c = *j;
	c->name = copy_str(j->name);
	c->user = copy_str(j->user);
	c->project = copy_str(j->project);
	c->reason = copy_str(j->reason);
	c->cwd = copy_str(j->cwd);
	c->tmux_session = copy_str(j->tmux_session);
	c->tmux_socket = copy_str(j->tmux_socket);
	c->rlimits = copy_str(j->rlimits);
	c->more = NULL;
	if (j->more) {
		struct job_more *m = jm_w(c);

		*m = *j->more;
		m->script = copy_str(m->script);
		m->log_dir = copy_str(m->log_dir);
		m->conda_env = copy_str(m->conda_env);
		m->notify_email = copy_str(m->notify_email);
		m->notify_on = copy_str(m->notify_on);
		m->cluster = copy_str(m->cluster);
		m->slurm_id = copy_str(m->slurm_id);
		m->remote_log = copy_str(m->remote_log);
		m->cpu_ids = copy_str(m->cpu_ids);
		m->params = m->params ? json_deep_copy(m->params) : NULL;
		m->command_template = m->command_template ? json_deep_copy(m->command_template) : NULL;
		m->gpu_usage = m->gpu_usage ? json_deep_copy(m->gpu_usage) : NULL;
	}
	c->argv = NULL;
	if (j->argv && pooled((const char *)j->argv))
		c->argv = j->argv;
	else if (j->argv) {
		if (!(c->argv = calloc(n + 1, sizeof *c->argv)))
			abort();
		for (size_t i = 0; i < n; i++)
			c->argv[i] = copy_str(j->argv[i]);
	}
	c->deps = NULL;
	if (j->ndeps) {
		if (!(c->deps = malloc(j->ndeps * sizeof *c->deps)))
			abort();
		memcpy(c->deps, j->deps, j->ndeps * sizeof *c->deps);
	}
	/* Runtime fields are the original's alone. */
	c->rt = NULL;
	c->dependents = NULL;
	return c;
}

void job_set_str(char **dst, const char *src)
{
	char *copy = src ? strdup(src) : NULL;

	if (src && !copy)
		abort();
	job_str_free(*dst);
	*dst = copy;
}

void job_set_reason(struct job *j, const char *reason)
{
	job_set_shared(&j->reason, reason);
}

json_t *strv_to_json(char *const *v)
{
	json_t *a = json_array();

	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new(a, gf_cstr_json(v[i]));
	return a;
}

char **strv_from_json(json_t *a, struct gf_err *e, const char *what)
{
	size_t n, i;
	char **v, item[64];

	if (!json_is_array(a)) {
		gf_err_set(e, "'%s' must be an array of strings", what);
		return NULL;
	}
	n = json_array_size(a);
	v = calloc(n + 1, sizeof *v);
	if (!v)
		abort();
	for (i = 0; i < n; i++) {
		snprintf(item, sizeof item, "'%s' item %zu", what, i);
		v[i] = gf_cstr_from_json(json_array_get(a, i), item, e);
		if (!v[i]) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

/* Text (names, reasons): a string; bytes that are not UTF-8, which only
 * a message quoting a path can hold, are shown escaped. */
static json_t *str_or_null(const char *s)
{
	char *esc;
	size_t n;
	json_t *v;

	if (!s)
		return json_null();
	if (gf_utf8_valid(s, strlen(s)))
		return json_string(s);
	n = gf_escape(NULL, 0, s, strlen(s), 0) + 1;
	esc = malloc(n);
	if (!esc)
		abort();
	gf_escape(esc, n, s, strlen(s), 0);
	v = json_string(esc);
	free(esc);
	return v;
}

/* A byte string (path): exact, in the form of bytes.h. */
static json_t *bytes_or_null(const char *s)
{
	return s ? gf_cstr_json(s) : json_null();
}

static json_t *pos_or_null(int64_t v)
{
	return v > 0 ? json_integer(v) : json_null();
}

static json_t *time_or_null(double t)
{
	return t > 0 ? json_real(t) : json_null();
}

/* Is key among the requested fields (all when only is NULL)? */
static bool want(char *const *only, const char *key)
{
	if (!only)
		return true;
	for (; *only; only++)
		if (!strcmp(*only, key))
			return true;
	return false;
}

static const char *const job_fields[] = {
	"id", "name", "user", "uid", "project", "state", "st", "reason", "command", "script", "cwd", "log_dir",
	"env_id", "gpus", "shared", "gpu_memory_mb", "memory_mb", "cpus", "cpu_ids", "time_limit_secs", "priority",
	"priority_by_admin", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "array_task_id", "group_id",
	"max_concurrent", "max_retries", "attempt", "retry_of", "redo_of", "params", "command_template", "submit_time",
	"start_time", "end_time", "exit_code", "exit_signal", "gpu_ids", "memory_enforced", "executor", "interactive",
	"tmux_session", "tmux_socket", "active", "runner_pid", "runner_ticks", "run_seq", "gpu_usage", "log_path",
	"notify_email", "notify_on",
	"attach_socket",	/* api_jobs.c adds it: derived from the daemon's paths */
	"priority_across_users",	/* api_list.c adds it: jobs_cross_priority */
	"cluster", "slurm_id", "remote_log",	/* jobs on a Slurm cluster */
	"rlimits", "log_seq", "preempt", NULL,
};

bool job_field_known(const char *key)
{
	return want((char *const *)job_fields, key);
}

const char *const *job_field_names(void)
{
	return job_fields;
}

json_t *job_to_json(const struct job *j, const char *log_path)
{
	return job_to_json_only(j, log_path, NULL);
}

json_t *job_to_json_only(const struct job *j, const char *log_path, char *const *only)
{
	json_t *o = json_object(), *deps = NULL, *gpus = NULL;
	const struct job_more *m = jm(j);

	if (want(only, "depends_on")) {
		deps = json_array();
		for (size_t i = 0; i < j->ndeps; i++)
			json_array_append_new(deps, json_integer(j->deps[i]));
	}
	if (want(only, "gpu_ids")) {
		gpus = json_array();
		for (int i = 0; i < 64; i++)
			if (j->gpu_mask & (1ULL << i))
				json_array_append_new(gpus, json_integer(i));
	}

	if (want(only, "id"))
		json_object_set_new(o, "id", json_integer(j->id));
	if (want(only, "name"))
		json_object_set_new(o, "name", str_or_null(j->name));
	if (want(only, "user"))
		json_object_set_new(o, "user", str_or_null(j->user));
	if (want(only, "uid"))
		json_object_set_new(o, "uid", json_integer(j->uid));
	if (want(only, "project"))
		json_object_set_new(o, "project", str_or_null(j->project));
	if (want(only, "state"))
		json_object_set_new(o, "state", json_string(job_state_name(j->state)));
	if (want(only, "st"))
		json_object_set_new(o, "st", json_string(job_st(j)));
	if (want(only, "reason"))
		json_object_set_new(o, "reason", str_or_null(j->reason));
	if (want(only, "command"))
		json_object_set_new(o, "command", strv_to_json(j->argv));
	if (want(only, "script"))
		json_object_set_new(o, "script", bytes_or_null(m->script));
	if (want(only, "cwd"))
		json_object_set_new(o, "cwd", bytes_or_null(j->cwd));
	if (m->log_dir && want(only, "log_dir"))
		json_object_set_new(o, "log_dir", bytes_or_null(m->log_dir));
	if (m->log_seq && want(only, "log_seq"))
		json_object_set_new(o, "log_seq", json_integer(m->log_seq));
	if (want(only, "env_id"))
		json_object_set_new(o, "env_id", json_integer(j->env_id));
	if (want(only, "gpus"))
		json_object_set_new(o, "gpus", json_integer(j->gpus));
	if (want(only, "shared"))
		json_object_set_new(o, "shared", json_boolean(j->shared));
	if (want(only, "gpu_memory_mb"))
		json_object_set_new(o, "gpu_memory_mb", pos_or_null(m->gpu_memory_mb));
	if (want(only, "memory_mb"))
		json_object_set_new(o, "memory_mb", pos_or_null(j->memory_mb));
	if (want(only, "cpus"))
		json_object_set_new(o, "cpus", json_integer(job_cpus(j)));
	if (m->cpu_ids && want(only, "cpu_ids"))	/* [daemon] constrain_cpus */
		json_object_set_new(o, "cpu_ids", json_string(m->cpu_ids));
	if (want(only, "time_limit_secs"))
		json_object_set_new(o, "time_limit_secs", pos_or_null(j->time_limit_secs));
	if (want(only, "priority"))
		json_object_set_new(o, "priority", json_integer(j->priority));
	if (want(only, "priority_by_admin"))
		json_object_set_new(o, "priority_by_admin", json_boolean(j->priority_by_admin));
	if (want(only, "conda_env"))
		json_object_set_new(o, "conda_env", str_or_null(m->conda_env));
	if (want(only, "notify_email"))
		json_object_set_new(o, "notify_email", str_or_null(m->notify_email));
	if (want(only, "notify_on"))
		json_object_set_new(o, "notify_on", str_or_null(m->notify_on));
	if (want(only, "depends_on"))
		json_object_set_new(o, "depends_on", deps);
	if (want(only, "dep_mode"))
		json_object_set_new(o, "dep_mode", json_string(j->dep_any ? "any" : "all"));
	if (want(only, "auto_cancel"))
		json_object_set_new(o, "auto_cancel", json_boolean(j->auto_cancel));
	if (want(only, "begin_at"))
		json_object_set_new(o, "begin_at", time_or_null(m->begin_at));
	if (want(only, "array_task_id"))
		json_object_set_new(o, "array_task_id", json_integer(job_array_task_id(j)));
	if (want(only, "group_id"))
		json_object_set_new(o, "group_id", pos_or_null(job_group_id(j)));
	if (want(only, "max_concurrent"))
		json_object_set_new(o, "max_concurrent", json_integer(j->max_concurrent));
	if (want(only, "max_retries"))
		json_object_set_new(o, "max_retries", json_integer(j->max_retries));
	if (want(only, "attempt"))
		json_object_set_new(o, "attempt", json_integer(j->attempt));
	if (want(only, "retry_of"))
		json_object_set_new(o, "retry_of", pos_or_null(m->retry_of));
	if (want(only, "redo_of"))
		json_object_set_new(o, "redo_of", pos_or_null(m->redo_of));
	if (want(only, "params"))
		json_object_set_new(o, "params", m->params ? json_incref(m->params) : json_object());
	if (want(only, "command_template"))
		json_object_set_new(o, "command_template",
				    m->command_template ? json_incref(m->command_template) : json_null());
	if (want(only, "submit_time"))
		json_object_set_new(o, "submit_time", time_or_null(j->submit_time));
	if (want(only, "start_time"))
		json_object_set_new(o, "start_time", time_or_null(j->start_time));
	if (want(only, "end_time"))
		json_object_set_new(o, "end_time", time_or_null(j->end_time));
	if (want(only, "exit_code"))
		json_object_set_new(o, "exit_code",
				    j->has_exit && !j->exit_signal ? json_integer(j->exit_code) : json_null());
	if (want(only, "exit_signal"))
		json_object_set_new(o, "exit_signal",
				    j->has_exit && j->exit_signal ? json_integer(j->exit_signal) : json_null());
	if (want(only, "gpu_ids"))
		json_object_set_new(o, "gpu_ids", gpus);
	if (want(only, "memory_enforced"))
		json_object_set_new(o, "memory_enforced",
				    j->memory_enforced < 0 ? json_null() : json_boolean(j->memory_enforced));
	if (want(only, "executor"))
		json_object_set_new(o, "executor", json_string(j->executor == EXEC_TMUX ? "tmux" : "process"));
	if (jm(j)->interactive && want(only, "interactive"))	/* absent: false */
		json_object_set_new(o, "interactive", json_true());
	if (want(only, "tmux_session"))
		json_object_set_new(o, "tmux_session", str_or_null(j->tmux_session));
	if (want(only, "tmux_socket"))
		json_object_set_new(o, "tmux_socket", str_or_null(j->tmux_socket));
	if (want(only, "active"))
		json_object_set_new(o, "active", json_boolean(j->active));
	if (want(only, "runner_pid"))
		json_object_set_new(o, "runner_pid", json_integer(j->runner_pid));
	if (want(only, "runner_ticks"))
		json_object_set_new(o, "runner_ticks", json_integer((json_int_t)j->runner_ticks));
	if (want(only, "run_seq"))
		json_object_set_new(o, "run_seq", json_integer(j->run_seq));
	if (m->gpu_usage && want(only, "gpu_usage"))
		json_object_set_new(o, "gpu_usage", json_deep_copy(m->gpu_usage));
	if (log_path && want(only, "log_path"))
		json_object_set_new(o, "log_path", json_string(log_path));
	if (m->cluster && want(only, "cluster"))	/* remote jobs only */
		json_object_set_new(o, "cluster", json_string(m->cluster));
	if (m->cluster && want(only, "slurm_id"))
		json_object_set_new(o, "slurm_id", str_or_null(m->slurm_id));
	if (m->cluster && want(only, "remote_log"))
		json_object_set_new(o, "remote_log", str_or_null(m->remote_log));
	if (j->rlimits && want(only, "rlimits"))	/* jobs submitted with limits only */
		json_object_set_new(o, "rlimits", json_string(j->rlimits));
	if (want(only, "preempt")) {
		json_t *p = job_preempt_json(m);

		if (p)
			json_object_set_new(o, "preempt", p);
	}
	return o;
}

json_t *job_preempt_json(const struct job_more *m)
{
	json_t *o;

	if (!m->preempt && !m->requeues && !m->preempt_since)
		return NULL;
	o = json_object();
	json_object_set_new(o, "preemptible", json_boolean(m->preempt & PJ_PREEMPTIBLE));
	json_object_set_new(o, "mode", json_string(m->preempt & PJ_MODE_CANCEL ? "cancel" : "requeue"));
	json_object_set_new(o, "signal", json_integer(m->preempt_sig ? m->preempt_sig : SIGTERM));
	json_object_set_new(o, "secs", json_integer(m->preempt_secs));
	json_object_set_new(o, "requeues", json_integer(m->requeues));
	json_object_set_new(o, "since", m->preempt_since > 0 ? json_real(m->preempt_since) : json_null());
	if (m->preempt_since > 0)
		json_object_set_new(o, "action", json_string(m->preempt & PJ_END_CANCEL ? "cancel" : "requeue"));
	return o;
}

void job_preempt_read(struct job_more *m, json_t *v)
{
	json_t *x;

	m->preempt = 0;
	m->preempt_sig = m->preempt_secs = m->requeues = 0;
	m->preempt_since = 0;
	if (!json_is_object(v))
		return;
	if (json_is_true(json_object_get(v, "preemptible")))
		m->preempt |= PJ_PREEMPTIBLE;
	x = json_object_get(v, "mode");
	if (json_is_string(x) && !strcmp(json_string_value(x), "cancel"))
		m->preempt |= PJ_MODE_CANCEL;
	x = json_object_get(v, "action");
	if (json_is_string(x) && !strcmp(json_string_value(x), "cancel"))
		m->preempt |= PJ_END_CANCEL;
	x = json_object_get(v, "signal");
	m->preempt_sig = json_is_integer(x) && json_integer_value(x) > 0 && json_integer_value(x) < 65
				 ? json_integer_value(x) : SIGTERM;
	x = json_object_get(v, "secs");
	m->preempt_secs = json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= 86400
				  ? json_integer_value(x) : 60;
	x = json_object_get(v, "requeues");
	m->requeues = json_is_integer(x) && json_integer_value(x) > 0 ? json_integer_value(x) : 0;
	x = json_object_get(v, "since");
	m->preempt_since = json_is_number(x) && json_number_value(x) > 0 ? json_number_value(x) : 0;
}

static char *get_str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* A byte string in either form (old rows hold plain strings); NULL when
 * absent or unreadable. */
static char *get_bytes(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return v && !json_is_null(v) ? gf_cstr_from_json(v, k, NULL) : NULL;
}

static int64_t get_int(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : 0;
}

static double get_num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : 0;
}

/* False (e set) when o's k is an integer outside lo..hi: the narrow
 * fields of struct job take no value that they would cut. */
static bool int_fits(json_t *o, const char *k, int64_t lo, int64_t hi, struct gf_err *e)
{
	int64_t v = get_int(o, k);

	if (v >= lo && v <= hi)
		return true;
	gf_err_set(e, "job record: '%s' out of range (%lld..%lld)", k, (long long)lo, (long long)hi);
	return false;
}

struct job *job_from_json(json_t *o, struct gf_err *e)
{
	struct job *j;
	struct job_more m = { 0 };
	json_t *v, *it;
	size_t i;
	int st;

	if (!json_is_object(o)) {
		gf_err_set(e, "job record is not an object");
		return NULL;
	}
	v = json_object_get(o, "state");
	if (!json_is_string(v) || (st = job_state_parse(json_string_value(v))) < 0) {
		gf_err_set(e, "job record has no valid state");
		return NULL;
	}
	if (!int_fits(o, "exit_code", INT16_MIN, INT16_MAX, e) || !int_fits(o, "exit_signal", INT16_MIN, INT16_MAX, e) ||
	    !int_fits(o, "run_seq", 0, UINT32_MAX, e))
		return NULL;
	j = job_new();
	j->state = (enum job_state)st;
	j->argv = strv_from_json(json_object_get(o, "command"), e, "command");
	if (!j->argv) {
		job_free(j);
		return NULL;
	}
	j->name = get_str(o, "name");
	j->user = get_str(o, "user");
	j->uid = (uid_t)get_int(o, "uid");
	j->project = get_str(o, "project");
	j->reason = get_str(o, "reason");
	m.script = get_bytes(o, "script");
	j->cwd = get_bytes(o, "cwd");
	m.log_dir = get_bytes(o, "log_dir");
	m.log_seq = get_int(o, "log_seq");
	j->env_id = get_int(o, "env_id");
	j->gpus = (int)get_int(o, "gpus");
	j->shared = json_is_true(json_object_get(o, "shared"));
	m.gpu_memory_mb = get_int(o, "gpu_memory_mb");
	j->memory_mb = get_int(o, "memory_mb");
	m.cpus = get_int(o, "cpus") > 1 ? get_int(o, "cpus") : 0;	/* old rows: 1 */
	m.cpu_ids = get_str(o, "cpu_ids");
	job_preempt_read(&m, json_object_get(o, "preempt"));
	m.interactive = json_is_true(json_object_get(o, "interactive"));
	j->time_limit_secs = get_int(o, "time_limit_secs");
	j->priority = (int)get_int(o, "priority");
	j->priority_by_admin = json_is_true(json_object_get(o, "priority_by_admin"));
	m.conda_env = get_str(o, "conda_env");
	m.notify_email = get_str(o, "notify_email");
	m.notify_on = get_str(o, "notify_on");
	v = json_object_get(o, "depends_on");
	if (json_is_array(v) && json_array_size(v)) {
		j->deps = calloc(json_array_size(v), sizeof *j->deps);
		json_array_foreach(v, i, it)
			j->deps[j->ndeps++] = json_integer_value(it);
	}
	v = json_object_get(o, "dep_mode");
	j->dep_any = json_is_string(v) && !strcmp(json_string_value(v), "any");
	j->auto_cancel = !json_is_false(json_object_get(o, "auto_cancel"));
	m.begin_at = get_num(o, "begin_at");
	job_split_u32(get_int(o, "array_task_id"), &j->array_task_id32, &m.array_task_id_wide);
	job_split_u32(get_int(o, "group_id"), &j->group_id32, &m.group_id_wide);
	j->max_concurrent = (int)get_int(o, "max_concurrent");
	j->max_retries = (int)get_int(o, "max_retries");
	j->attempt = (int)get_int(o, "attempt");
	m.retry_of = get_int(o, "retry_of");
	m.redo_of = get_int(o, "redo_of");
	v = json_object_get(o, "params");
	if (json_is_object(v) && json_object_size(v)) {
		m.params = json_incref(v);
	}
	v = json_object_get(o, "command_template");
	if (json_is_array(v))
		m.command_template = json_incref(v);
	j->submit_time = get_num(o, "submit_time");
	j->start_time = get_num(o, "start_time");
	j->end_time = get_num(o, "end_time");
	if (json_is_integer(json_object_get(o, "exit_signal"))) {
		j->has_exit = true;
		j->exit_signal = (int16_t)get_int(o, "exit_signal");
	} else if (json_is_integer(json_object_get(o, "exit_code"))) {
		j->has_exit = true;
		j->exit_code = (int16_t)get_int(o, "exit_code");
	}
	v = json_object_get(o, "gpu_ids");
	json_array_foreach(v, i, it) {
		json_int_t g = json_integer_value(it);

		if (g >= 0 && g < 64)
			j->gpu_mask |= 1ULL << g;
	}
	v = json_object_get(o, "memory_enforced");
	j->memory_enforced = json_is_boolean(v) ? json_is_true(v) : -1;
	v = json_object_get(o, "executor");
	j->executor = json_is_string(v) && !strcmp(json_string_value(v), "process") ? EXEC_PROCESS
										     : EXEC_TMUX;
	j->tmux_session = get_str(o, "tmux_session");
	j->tmux_socket = get_str(o, "tmux_socket");
	j->active = json_is_true(json_object_get(o, "active"));
	j->runner_pid = (pid_t)get_int(o, "runner_pid");
	j->runner_ticks = (unsigned long long)get_int(o, "runner_ticks");
	j->run_seq = (uint32_t)get_int(o, "run_seq");
	v = json_object_get(o, "gpu_usage");
	m.gpu_usage = json_is_object(v) ? json_deep_copy(v) : NULL;
	m.cluster = get_str(o, "cluster");
	m.slurm_id = get_str(o, "slurm_id");
	m.remote_log = get_str(o, "remote_log");
	j->rlimits = get_str(o, "rlimits");
	job_more_adopt(j, &m);
	job_share_strings(j);
	return j;
}
