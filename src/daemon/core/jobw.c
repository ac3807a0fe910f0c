/* jobw.c — a job's JSON object written into a buffer without a jansson
 * tree (GET /jobs); byte for byte job_to_json_only's compact dump, which
 * tests/unit/test_jobw.c checks field by field on varied jobs. */
#include "jobw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"

/* In the order job_to_json_only sets them: the bit of a field is its index. */
static const char *const order[] = {
	"id", "name", "user", "uid", "project", "state", "st", "reason", "command", "script", "cwd",
	"log_dir", "log_seq", "env_id", "gpus", "shared", "gpu_memory_mb", "memory_mb", "cpus", "cpu_ids",
	"time_limit_secs", "priority",
	"priority_by_admin", "conda_env", "notify_email", "notify_on", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "group_id", "max_concurrent", "max_retries", "attempt", "retry_of", "redo_of",
	"params", "command_template", "submit_time", "start_time", "end_time", "exit_code", "exit_signal", "gpu_ids",
	"memory_enforced", "executor", "interactive", "tmux_session", "tmux_socket", "active", "runner_pid", "runner_ticks",
	"run_seq", "gpu_usage", "log_path", "cluster", "slurm_id", "remote_log", "rlimits", "preempt",
	"attach_socket",	/* api_jobs.c writes it */
	"priority_across_users",	/* api_list.c writes it */
};
#define NORDER (sizeof order / sizeof order[0])
_Static_assert(NORDER <= 64, "a job's fields fit a 64-bit mask");

enum {
	F_ID, F_NAME, F_USER, F_UID, F_PROJECT, F_STATE, F_ST, F_REASON, F_COMMAND, F_SCRIPT, F_CWD,
	F_LOG_DIR, F_LOG_SEQ, F_ENV_ID, F_GPUS, F_SHARED, F_GPU_MEMORY_MB, F_MEMORY_MB, F_CPUS, F_CPU_IDS,
	F_TIME_LIMIT_SECS, F_PRIORITY,
	F_PRIORITY_BY_ADMIN, F_CONDA_ENV, F_NOTIFY_EMAIL, F_NOTIFY_ON, F_DEPENDS_ON, F_DEP_MODE, F_AUTO_CANCEL, F_BEGIN_AT,
	F_ARRAY_TASK_ID, F_GROUP_ID, F_MAX_CONCURRENT, F_MAX_RETRIES, F_ATTEMPT, F_RETRY_OF, F_REDO_OF,
	F_PARAMS, F_COMMAND_TEMPLATE, F_SUBMIT_TIME, F_START_TIME, F_END_TIME, F_EXIT_CODE, F_EXIT_SIGNAL, F_GPU_IDS,
	F_MEMORY_ENFORCED, F_EXECUTOR, F_INTERACTIVE, F_TMUX_SESSION, F_TMUX_SOCKET, F_ACTIVE, F_RUNNER_PID, F_RUNNER_TICKS,
	F_RUN_SEQ, F_GPU_USAGE, F_LOG_PATH, F_CLUSTER, F_SLURM_ID, F_REMOTE_LOG, F_RLIMITS, F_PREEMPT, F_ATTACH_SOCKET,
	F_PRIORITY_ACROSS_USERS,
};
_Static_assert(F_PRIORITY_ACROSS_USERS + 1 == NORDER, "one bit per field name");

static int index_of(const char *key)
{
	for (size_t i = 0; i < NORDER; i++)
		if (!strcmp(order[i], key))
			return (int)i;
	return -1;
}

uint64_t jobw_mask(char *const *only)
{
	uint64_t m = 0;
	int i;

	if (!only)
		return NORDER == 64 ? ~0ULL : (1ULL << NORDER) - 1;
	for (; *only; only++)
		if ((i = index_of(*only)) >= 0)
			m |= 1ULL << i;
	return m;
}

bool jobw_has(uint64_t mask, const char *key)
{
	int i = index_of(key);

	return i >= 0 && (mask >> i & 1);
}

void jobw_key(struct jsonw *w, const char *key, bool *first)
{
	size_t n = strlen(key);

	jw_reserve(w, n + 4);
	if (!*first)
		w->p[w->len++] = ',';
	*first = false;
	w->p[w->len++] = '"';
	memcpy(w->p + w->len, key, n);
	w->len += n;
	w->p[w->len++] = '"';
	w->p[w->len++] = ':';
	w->p[w->len] = '\0';
}

/* The key of field f: ,"key": made once per field. */
static void field_key(struct jsonw *w, int f, bool *first)
{
	static char keys[NORDER][24];
	static size_t len[NORDER];

	if (!len[f])
		len[f] = (size_t)snprintf(keys[f], sizeof keys[f], ",\"%s\":", order[f]);
	if (*first) {
		*first = false;
		jw_raw(w, keys[f] + 1, len[f] - 1);
	} else
		jw_raw(w, keys[f], len[f]);
}

/* gf_utf8_valid, with plain ASCII (most names) checked first and fast. */
static bool valid_text(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && !((unsigned char)s[i] & 0x80))
		i++;
	return i == n || gf_utf8_valid(s + i, n - i);
}

/* Text (names, reasons): bytes that are not UTF-8 shown escaped (job.c's
 * str_or_null). */
static void text_or_null(struct jsonw *w, const char *s)
{
	size_t n, len;
	char *esc;

	if (!s) {
		jw_lit(w, "null");
		return;
	}
	len = strlen(s);
	if (valid_text(s, len)) {
		jw_str(w, s, len);
		return;
	}
	n = gf_escape(NULL, 0, s, len, 0) + 1;
	if (!(esc = malloc(n)))
		abort();
	gf_escape(esc, n, s, len, 0);
	jw_cstr(w, esc);
	free(esc);
}

/* A byte string (path, argv word): a string, or {"base64"} (bytes.h). */
static void bytes_val(struct jsonw *w, const char *s)
{
	size_t len = strlen(s);
	json_t *v;

	if (valid_text(s, len)) {
		jw_str(w, s, len);
		return;
	}
	v = gf_cstr_json(s);
	jw_json(w, v, JSON_COMPACT);
	json_decref(v);
}

static void bytes_or_null(struct jsonw *w, const char *s)
{
	if (s)
		bytes_val(w, s);
	else
		jw_lit(w, "null");
}

static void pos_or_null(struct jsonw *w, int64_t v)
{
	if (v > 0)
		jw_int(w, v);
	else
		jw_lit(w, "null");
}

static void time_or_null(struct jsonw *w, double t)
{
	if (t > 0)
		jw_real(w, t);
	else
		jw_lit(w, "null");
}

static void boolean(struct jsonw *w, bool b)
{
	jw_lit(w, b ? "true" : "false");
}

/* A plain C string value (known UTF-8: state names, executor). */
static void plain(struct jsonw *w, const char *s)
{
	jw_cstr(w, s);
}

/* json_string() refuses other text, and job.c then sets no key. */
static bool utf8(const char *s)
{
	return s && valid_text(s, strlen(s));
}

#define WANT(f) (mask >> (f) & 1)
#define KEY(f) field_key(w, f, first)

void jobw_members(struct jsonw *w, const struct job *j, const char *log_path, uint64_t mask, bool *first)
{
	const struct job_more *m = jm(j);

	if (WANT(F_ID))
		KEY(F_ID), jw_int(w, j->id);
	if (WANT(F_NAME))
		KEY(F_NAME), text_or_null(w, j->name);
	if (WANT(F_USER))
		KEY(F_USER), text_or_null(w, j->user);
	if (WANT(F_UID))
		KEY(F_UID), jw_int(w, j->uid);
	if (WANT(F_PROJECT))
		KEY(F_PROJECT), text_or_null(w, j->project);
	if (WANT(F_STATE))
		KEY(F_STATE), plain(w, job_state_name(j->state));
	if (WANT(F_ST))
		KEY(F_ST), plain(w, job_st(j));
	if (WANT(F_REASON))
		KEY(F_REASON), text_or_null(w, j->reason);
	if (WANT(F_COMMAND)) {
		KEY(F_COMMAND);
		jw_lit(w, "[");
		for (size_t i = 0; j->argv && j->argv[i]; i++) {
			if (i)
				jw_lit(w, ",");
			bytes_val(w, j->argv[i]);
		}
		jw_lit(w, "]");
	}
	if (WANT(F_SCRIPT))
		KEY(F_SCRIPT), bytes_or_null(w, m->script);
	if (WANT(F_CWD))
		KEY(F_CWD), bytes_or_null(w, j->cwd);
	if (m->log_dir && WANT(F_LOG_DIR))
		KEY(F_LOG_DIR), bytes_or_null(w, m->log_dir);
	if (m->log_seq && WANT(F_LOG_SEQ))
		KEY(F_LOG_SEQ), jw_int(w, m->log_seq);
	if (WANT(F_ENV_ID))
		KEY(F_ENV_ID), jw_int(w, j->env_id);
	if (WANT(F_GPUS))
		KEY(F_GPUS), jw_int(w, j->gpus);
	if (WANT(F_SHARED))
		KEY(F_SHARED), boolean(w, j->shared);
	if (WANT(F_GPU_MEMORY_MB))
		KEY(F_GPU_MEMORY_MB), pos_or_null(w, jm(j)->gpu_memory_mb);
	if (WANT(F_MEMORY_MB))
		KEY(F_MEMORY_MB), pos_or_null(w, j->memory_mb);
	if (WANT(F_CPUS))
		KEY(F_CPUS), jw_int(w, job_cpus(j));
	if (m->cpu_ids && WANT(F_CPU_IDS))
		KEY(F_CPU_IDS), plain(w, m->cpu_ids);
	if (WANT(F_TIME_LIMIT_SECS))
		KEY(F_TIME_LIMIT_SECS), pos_or_null(w, j->time_limit_secs);
	if (WANT(F_PRIORITY))
		KEY(F_PRIORITY), jw_int(w, j->priority);
	if (WANT(F_PRIORITY_BY_ADMIN))
		KEY(F_PRIORITY_BY_ADMIN), boolean(w, j->priority_by_admin);
	if (WANT(F_CONDA_ENV))
		KEY(F_CONDA_ENV), text_or_null(w, m->conda_env);
	if (WANT(F_NOTIFY_EMAIL))
		KEY(F_NOTIFY_EMAIL), text_or_null(w, m->notify_email);
	if (WANT(F_NOTIFY_ON))
		KEY(F_NOTIFY_ON), text_or_null(w, m->notify_on);
	if (WANT(F_DEPENDS_ON)) {
		KEY(F_DEPENDS_ON);
		jw_lit(w, "[");
		for (size_t i = 0; i < j->ndeps; i++) {
			if (i)
				jw_lit(w, ",");
			jw_int(w, j->deps[i]);
		}
		jw_lit(w, "]");
	}
	if (WANT(F_DEP_MODE))
		KEY(F_DEP_MODE), plain(w, j->dep_any ? "any" : "all");
	if (WANT(F_AUTO_CANCEL))
		KEY(F_AUTO_CANCEL), boolean(w, j->auto_cancel);
	if (WANT(F_BEGIN_AT))
		KEY(F_BEGIN_AT), time_or_null(w, m->begin_at);
	if (WANT(F_ARRAY_TASK_ID))
		KEY(F_ARRAY_TASK_ID), jw_int(w, job_array_task_id(j));
	if (WANT(F_GROUP_ID))
		KEY(F_GROUP_ID), pos_or_null(w, job_group_id(j));
	if (WANT(F_MAX_CONCURRENT))
		KEY(F_MAX_CONCURRENT), jw_int(w, j->max_concurrent);
	if (WANT(F_MAX_RETRIES))
		KEY(F_MAX_RETRIES), jw_int(w, j->max_retries);
	if (WANT(F_ATTEMPT))
		KEY(F_ATTEMPT), jw_int(w, j->attempt);
	if (WANT(F_RETRY_OF))
		KEY(F_RETRY_OF), pos_or_null(w, m->retry_of);
	if (WANT(F_REDO_OF))
		KEY(F_REDO_OF), pos_or_null(w, m->redo_of);
	if (WANT(F_PARAMS)) {	/* NULL: none (job.c writes an empty object) */
		KEY(F_PARAMS);
		if (m->params)
			jw_json(w, m->params, JSON_COMPACT);
		else
			jw_raw(w, "{}", 2);
	}
	if (WANT(F_COMMAND_TEMPLATE)) {	/* NULL: none */
		KEY(F_COMMAND_TEMPLATE);
		if (m->command_template)
			jw_json(w, m->command_template, JSON_COMPACT);
		else
			jw_raw(w, "null", 4);
	}
	if (WANT(F_SUBMIT_TIME))
		KEY(F_SUBMIT_TIME), time_or_null(w, j->submit_time);
	if (WANT(F_START_TIME))
		KEY(F_START_TIME), time_or_null(w, j->start_time);
	if (WANT(F_END_TIME))
		KEY(F_END_TIME), time_or_null(w, j->end_time);
	if (WANT(F_EXIT_CODE)) {
		KEY(F_EXIT_CODE);
		if (j->has_exit && !j->exit_signal)
			jw_int(w, j->exit_code);
		else
			jw_lit(w, "null");
	}
	if (WANT(F_EXIT_SIGNAL)) {
		KEY(F_EXIT_SIGNAL);
		if (j->has_exit && j->exit_signal)
			jw_int(w, j->exit_signal);
		else
			jw_lit(w, "null");
	}
	if (WANT(F_GPU_IDS)) {
		bool none = true;

		KEY(F_GPU_IDS);
		jw_lit(w, "[");
		for (int i = 0; i < 64; i++)
			if (j->gpu_mask & (1ULL << i)) {
				if (!none)
					jw_lit(w, ",");
				none = false;
				jw_int(w, i);
			}
		jw_lit(w, "]");
	}
	if (WANT(F_MEMORY_ENFORCED)) {
		KEY(F_MEMORY_ENFORCED);
		if (j->memory_enforced < 0)
			jw_lit(w, "null");
		else
			boolean(w, j->memory_enforced);
	}
	if (WANT(F_EXECUTOR))
		KEY(F_EXECUTOR), plain(w, j->executor == EXEC_TMUX ? "tmux" : "process");
	if (jm(j)->interactive && WANT(F_INTERACTIVE))
		KEY(F_INTERACTIVE), boolean(w, true);
	if (WANT(F_TMUX_SESSION))
		KEY(F_TMUX_SESSION), text_or_null(w, j->tmux_session);
	if (WANT(F_TMUX_SOCKET))
		KEY(F_TMUX_SOCKET), text_or_null(w, j->tmux_socket);
	if (WANT(F_ACTIVE))
		KEY(F_ACTIVE), boolean(w, j->active);
	if (WANT(F_RUNNER_PID))
		KEY(F_RUNNER_PID), jw_int(w, j->runner_pid);
	if (WANT(F_RUNNER_TICKS))
		KEY(F_RUNNER_TICKS), jw_int(w, (long long)j->runner_ticks);
	if (WANT(F_RUN_SEQ))
		KEY(F_RUN_SEQ), jw_int(w, j->run_seq);
	if (m->gpu_usage && WANT(F_GPU_USAGE))
		KEY(F_GPU_USAGE), jw_json(w, m->gpu_usage, JSON_COMPACT);
	if (utf8(log_path) && WANT(F_LOG_PATH))
		KEY(F_LOG_PATH), plain(w, log_path);
	if (utf8(m->cluster) && WANT(F_CLUSTER))
		KEY(F_CLUSTER), plain(w, m->cluster);
	if (m->cluster && WANT(F_SLURM_ID))
		KEY(F_SLURM_ID), text_or_null(w, m->slurm_id);
	if (m->cluster && WANT(F_REMOTE_LOG))
		KEY(F_REMOTE_LOG), text_or_null(w, m->remote_log);
	if (j->rlimits && WANT(F_RLIMITS))
		KEY(F_RLIMITS), plain(w, j->rlimits);
	if ((m->preempt || m->requeues || m->preempt_since) && WANT(F_PREEMPT)) {
		json_t *p = job_preempt_json(m);

		KEY(F_PREEMPT), jw_json(w, p, JSON_COMPACT);
		json_decref(p);
	}
}

char *jobw_row(const struct job *j)
{
	struct jsonw w = { 0 };
	bool first = true;

	jw_raw(&w, "{", 1);
	jobw_members(&w, j, NULL, jobw_mask(NULL) & ~(1ULL << F_ID | 1ULL << F_ATTACH_SOCKET), &first);
	jw_raw(&w, "}", 1);
	return w.p;
}
