/* api_decode.c — request decoding for the API: the JSON body, field checks
 * (integers, booleans, text, byte strings, times, job references) and a
 * submission spec turned into jobs (api_spec_to_job, the environment blob, the
 * checks a batch passes before anything is stored). */
#include "apiint.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bytes.h"
#include "execlimit.h"
#include "parse.h"
#include "rlimits.h"

#define MAX_BATCH 100000

/* ---- decoding helpers -------------------------------------------------- */

static json_t *parse_body(const char *data, size_t len, struct gf_err *e)
{
	json_error_t jerr;
	json_t *o;

	if (len == 0) {
		gf_err_set(e, "the request has no body (expected a JSON object)");
		return NULL;
	}
	o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		if (strstr(jerr.text, "NUL"))
			gf_err_set(e, "invalid JSON at line %d, column %d: NUL bytes (\\u0000) are not allowed in strings",
				   jerr.line, jerr.column);
		else
			gf_err_set(e, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		gf_err_set(e, "the request body must be a JSON object");
		return NULL;
	}
	return o;
}

json_t *api_read_body(struct evhttp_request *req, struct gf_err *e)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);

	return parse_body(len ? (const char *)evbuffer_pullup(in, -1) : "", len, e);
}

int api_check_fields(json_t *o, const char *const *allowed, const char *what, struct gf_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		bool ok = false;

		for (const char *const *a = allowed; *a && !ok; a++)
			ok = !strcmp(*a, k);
		if (!ok)
			return gf_err_set(e, "unknown field '%s' in %s", k, what);
	}
	return 0;
}

/* Integer field in [min,max]; absent or null leaves *out alone. */
int api_get_int(json_t *o, const char *k, int64_t min, int64_t max, int64_t *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return gf_err_set(e, "'%s' must be an integer", k);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return gf_err_set(e, "'%s' must be between %lld and %lld, got %lld", k, (long long)min,
				  (long long)max, (long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

int api_get_bool(json_t *o, const char *k, bool *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return gf_err_set(e, "'%s' must be true or false", k);
	*out = json_is_true(v);
	return 0;
}

/* The one check of every free-text value of every route (names, reasons,
 * projects, reservation users, parameter names, cluster fields, ...; not a
 * command, script, environment or path, which are data): no NUL byte and
 * no control character (C0, DEL, C1), at most max bytes. `k` names the
 * field in the refusal. */
int api_check_text(const char *k, json_t *v, size_t max, struct gf_err *e)
{
	if (!json_is_string(v))
		return gf_err_set(e, "'%s' must be a string", k);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return gf_err_set(e, "'%s' contains a NUL byte", k);
	if (json_string_length(v) > max)
		return gf_err_set(e, "'%s' is longer than %zu bytes", k, max);
	if (!gf_text_printable(json_string_value(v), json_string_length(v)))
		return gf_err_set(e, "'%s' contains a control character", k);
	return 0;
}

/* A job's parameters: an object of strings whose names are text
 * (api_check_text) and whose values are data: they fill the command, as
 * its words do, and may hold any character but NUL. */
int api_check_params(json_t *params, struct gf_err *e)
{
	const char *k;
	json_t *v;

	if (!json_is_object(params))
		return gf_err_set(e, "'params' must be an object of strings");
	json_object_foreach(params, k, v) {
		json_t *key = json_string(k);
		int bad = api_check_text("params", key, 200, e);

		json_decref(key);
		if (bad)
			return -1;
		if (!json_is_string(v))
			return gf_err_set(e, "'params' value of '%s' must be a string", k);
	}
	return 0;
}

/* Text field (UTF-8, as all JSON strings): api_check_text. */
int api_get_str(json_t *o, const char *k, size_t max, char **out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (api_check_text(k, v, max, e))
		return -1;
	job_set_str(out, json_string_value(v));
	return 0;
}

/* Byte-string field (a path): a string or {"base64": ...} (docs/api.md),
 * without NUL bytes, at most max bytes. */
static int get_bytes(json_t *o, const char *k, size_t max, char **out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);
	char what[64], *s;

	if (!v || json_is_null(v))
		return 0;
	snprintf(what, sizeof what, "'%s'", k);
	if (!(s = gf_cstr_from_json(v, what, e)))
		return -1;
	if (strlen(s) > max) {
		free(s);
		return gf_err_set(e, "'%s' is longer than %zu bytes", k, max);
	}
	free(*out);
	*out = s;
	return 0;
}

/* A time in epoch seconds: from 0 to the year 9999. */
int api_get_time(json_t *o, const char *k, double *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
	    json_number_value(v) > 253402300799.0)
		return gf_err_set(e, "'%s' must be a time in epoch seconds (0 to the year 9999)", k);
	*out = json_number_value(v);
	return 0;
}

/* A job reference item: integer or "42"/"@"/"@~N". */
int64_t api_ref_id(struct server *s, uid_t uid, json_t *item, struct gf_err *e)
{
	char num[32];

	if (json_is_integer(item)) {
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(item));
		return jobs_resolve_ref(s, uid, num, e);
	}
	if (json_is_string(item) && strlen(json_string_value(item)) == json_string_length(item))
		return jobs_resolve_ref(s, uid, json_string_value(item), e);
	return gf_err_set(e, "a job reference must be an id or \"@\", \"@~N\"");
}

/* ---- submission -------------------------------------------------------- */

static const char *const spec_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "project", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "hold",
	"array_task_id", "max_concurrent", "max_retries", "params", "command_template", "notify_email",
	"notify_on", "cpus", "interactive", "preemptible", "preempt_mode", "signal", NULL,
};

/* "preemptible", "preempt_mode", "signal" (gbatch --preemptible,
 * --preempt-mode, --signal SIG@SECS) into j's preempt fields. */
static int get_preempt(json_t *spec, struct job *j, struct gf_err *e)
{
	bool pre = false;
	json_t *mode = json_object_get(spec, "preempt_mode"), *sig = json_object_get(spec, "signal");
	int signo = SIGTERM, secs = GF_PREEMPT_DEFAULT_SECS;

	if (api_get_bool(spec, "preemptible", &pre, e))
		return -1;
	if (json_is_null(mode))
		mode = NULL;
	if (json_is_null(sig))
		sig = NULL;
	if (!pre) {
		if (mode || sig)
			return gf_err_set(e, "'%s' is for preemptible jobs: set 'preemptible': true",
					  mode ? "preempt_mode" : "signal");
		return 0;
	}
	jm_w(j)->preempt = PJ_PREEMPTIBLE;
	if (mode) {
		if (api_check_text("preempt_mode", mode, 16, e))
			return -1;
		if (!strcmp(json_string_value(mode), "cancel"))
			jm_w(j)->preempt |= PJ_MODE_CANCEL;
		else if (strcmp(json_string_value(mode), "requeue"))
			return gf_err_set(e, "'preempt_mode' must be \"requeue\" or \"cancel\"");
	}
	if (sig) {
		if (api_check_text("signal", sig, 32, e) ||
		    gf_parse_signal_spec(json_string_value(sig), "'signal'", &signo, &secs, e))
			return -1;
	}
	jm_w(j)->preempt_sig = signo;
	jm_w(j)->preempt_secs = secs;
	return 0;
}

/* A job's project, trimmed, against [projects] (a submission's, a cluster
 * record's). */
int api_check_project(struct server *s, struct job *j, struct gf_err *e)
{
	if (j->project) {
		char *p = j->project, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		memmove(j->project, p, strlen(p) + 1);
		if (!*j->project)
			job_set_str(&j->project, NULL);
		else if (strlen(j->project) > 64)
			return gf_err_set(e, "project name is longer than 64 characters");
	}
	if (!j->project && s->cfg.require_project)
		return gf_err_set(e, "a project is required on this machine (--project NAME)");
	if (j->project && s->cfg.n_known_projects) {
		for (size_t i = 0; i < s->cfg.n_known_projects; i++)
			if (!strcmp(s->cfg.known_projects[i], j->project))
				return 0;
		return gf_err_set(e, "project '%s' is not one of the known projects", j->project);
	}
	return 0;
}

static int spec_deps(struct server *s, uid_t uid, json_t *spec, struct job *j, struct gf_err *e)
{
	json_t *d = json_object_get(spec, "depends_on"), *item;
	char *mode = NULL;
	size_t i;

	if (api_get_str(spec, "dep_mode", 8, &mode, e))
		return -1;
	if (mode) {
		bool ok = !strcmp(mode, "all") || !strcmp(mode, "any");

		j->dep_any = !strcmp(mode, "any");
		free(mode);
		if (!ok)
			return gf_err_set(e, "'dep_mode' must be \"all\" or \"any\"");
	}
	if (!d || json_is_null(d))
		return 0;
	if (!json_is_array(d))
		return gf_err_set(e, "'depends_on' must be an array of job references");
	if (json_array_size(d) > 10000)
		return gf_err_set(e, "'depends_on' has more than 10000 items");
	j->deps = calloc(json_array_size(d) + 1, sizeof *j->deps);
	if (!j->deps)
		abort();
	json_array_foreach(d, i, item) {
		int64_t id = api_ref_id(s, uid, item, e);

		if (id < 0)
			return gf_err_prefix(e, "dependency");
		j->deps[j->ndeps++] = jobs_latest_attempt(s, id);
	}
	return 0;
}

/* The limits a job with the submitter's `rlimits` (text form, NULL: none)
 * gets: what the runner sets, each capped at the daemon's hard limit (the
 * runner's are the daemon's). -1 with e set when the text is bad. */
static int job_rlimits(const char *rlimits, struct gf_rlimits *r, struct gf_err *e)
{
	struct gf_rlimits own;

	memset(r, 0, sizeof *r);
	if (!rlimits)
		return 0;
	if (gf_rlimits_parse(rlimits, r, e))
		return gf_err_prefix(e, "'rlimits'");
	gf_rlimits_capture(&own);
	gf_rlimits_clamp(r, &own);
	return 0;
}

/* The job's final execve carries its argv and environment: refuse now what
 * the kernel would refuse at start (execlimit.h), under the stack limit the
 * job will have (its submitter's, capped; else the daemon's). `env` is what
 * the environment alone counts. */
static int check_exec_size(const struct job *j, const struct gf_execsize *env, struct gf_err *e)
{
	struct gf_execsize x = *env;
	struct gf_rlimits r;
	struct rlimit own;

	if (job_rlimits(j->rlimits, &r, e))
		return -1;
	if (getrlimit(RLIMIT_STACK, &own))
		own.rlim_cur = RLIM_INFINITY;
	for (size_t i = 0; j->argv[i]; i++)
		if (gf_execsize_arg(&x, j->argv[i], i, e))
			return -1;
	return gf_execsize_check(&x, gf_arg_max_for(gf_rlimits_stack(&r, own.rlim_cur)), e);
}

/* The name of a job submitted without one: the base name of its script or
 * program, escaped where it is not printable text, cut to fit. */
static void default_name(struct job *j)
{
	const char *w = jm(j)->script ? jm(j)->script : j->argv[0], *slash = strrchr(w, '/');
	char name[201];

	if (slash && slash[1])
		w = slash + 1;
	gf_escape(name, sizeof name, w, strlen(w), 0);
	job_set_str(&j->name, name);
}

struct job *api_spec_to_job(struct server *s, uid_t uid, json_t *spec, const char *cwd,
			    const struct gf_execsize *env, const char *rlimits, struct gf_err *e)
{
	struct job *j = job_new();
	int64_t v;
	bool hold = false, shared = j->shared, auto_cancel = j->auto_cancel, interactive = false;
	char user[256];
	json_t *params;

	if (!json_is_object(spec)) {
		gf_err_set(e, "each job must be a JSON object");
		goto fail;
	}
	if (api_check_fields(spec, spec_fields, "job", e))
		goto fail;
	j->argv = strv_from_json(json_object_get(spec, "command"), e, "command");
	if (!j->argv)
		goto fail;
	if (!j->argv[0] || !j->argv[0][0]) {
		gf_err_set(e, "'command' is empty: nothing to run");
		goto fail;
	}
	if (api_get_str(spec, "name", 200, &j->name, e) || get_bytes(spec, "script", 4096, &jm_w(j)->script, e) ||
	    api_get_str(spec, "project", 1024, &j->project, e) ||
	    api_get_str(spec, "conda_env", 256, &jm_w(j)->conda_env, e) || api_get_bool(spec, "shared", &shared, e) ||
	    api_get_bool(spec, "auto_cancel", &auto_cancel, e) || api_get_bool(spec, "hold", &hold, e) ||
	    api_get_bool(spec, "interactive", &interactive, e) ||
	    api_get_time(spec, "begin_at", &jm_w(j)->begin_at, e) ||
	    api_get_str(spec, "notify_email", 1024, &jm_w(j)->notify_email, e) ||
	    api_get_str(spec, "notify_on", 1024, &jm_w(j)->notify_on, e) || notify_check_job(s, j, e))
		goto fail;
	if (rlimits)
		job_set_shared(&j->rlimits, rlimits);
	j->shared = shared;	/* bits: read through bools */
	j->auto_cancel = auto_cancel;
	if (interactive)
		jm_w(j)->interactive = 1;
	if (j->name && !j->name[0]) {
		gf_err_set(e, "'name' is empty");
		goto fail;
	}
	if (jm(j)->script && jm(j)->script[0] != '/') {
		char shown[128];

		gf_escape(shown, sizeof shown, jm(j)->script, strlen(jm(j)->script), 0);
		gf_err_set(e, "'script' must be an absolute path, got '%s'", shown);
		goto fail;
	}
	v = 0;
	if (api_get_int(spec, "gpus", 0, GFLOW_MAX_GPUS, &v, e))
		goto fail;
	j->gpus = (int)v;
	v = 0;
	if (api_get_int(spec, "gpu_memory_mb", 1, INT64_C(1) << 40, &v, e))
		goto fail;
	if (v)
		jm_w(j)->gpu_memory_mb = v;
	if (api_get_int(spec, "memory_mb", 1, INT64_C(1) << 40, &j->memory_mb, e) ||
	    api_get_int(spec, "time_limit_secs", 1, 366LL * 86400, &j->time_limit_secs, e))
		goto fail;
	v = 0;
	if (api_get_int(spec, "array_task_id", 0, INT64_C(1) << 40, &v, e))
		goto fail;
	if (v)
		job_set_array_task_id(j, v);
	v = 1;
	if (api_get_int(spec, "cpus", 1, 65536, &v, e))
		goto fail;
	if (v > 1)
		jm_w(j)->cpus = v;
	if (get_preempt(spec, j, e))
		goto fail;
	v = 10;
	if (api_get_int(spec, "priority", 0, 255, &v, e))
		goto fail;
	j->priority = (int)v;
	/* an admin's priority orders jobs across users; a user's, their own */
	j->priority_by_admin = json_object_get(spec, "priority") && auth_is_admin(s, uid);
	v = 0;
	if (api_get_int(spec, "max_concurrent", 0, 1000000, &v, e))
		goto fail;
	j->max_concurrent = (int)v;
	v = 0;
	if (api_get_int(spec, "max_retries", 0, 100, &v, e))
		goto fail;
	j->max_retries = (int)v;
	params = json_object_get(spec, "params");
	if (params && !json_is_null(params)) {
		if (api_check_params(params, e))
			goto fail;
		json_decref(jm(j)->params);
		jm_w(j)->params = json_deep_copy(params);
	}
	params = json_object_get(spec, "command_template");	/* as "command": words before params filled them */
	if (params && !json_is_null(params)) {
		char **words = strv_from_json(params, e, "command_template");

		if (!words)
			goto fail;
		strv_free(words);
		if (!json_array_size(params) || json_array_size(params) > 4096) {
			gf_err_set(e, "'command_template' must hold 1 to 4096 words");
			goto fail;
		}
		jm_w(j)->command_template = json_deep_copy(params);
	}
	if (j->shared && !jm(j)->gpu_memory_mb) {
		gf_err_set(e, "--shared needs --gpu-memory: shared jobs must say how much GPU memory they use");
		goto fail;
	}
	if (j->shared && !j->gpus) {
		gf_err_set(e, "--shared needs --gpus 1 or more");
		goto fail;
	}
	if (spec_deps(s, uid, spec, j, e) || api_check_project(s, j, e) || jobs_check_feasible(s, j, e) ||
	    check_exec_size(j, env, e))
		goto fail;
	if (!j->name)
		default_name(j);
	j->uid = uid;
	job_set_str(&j->user, job_user_name(uid, user, sizeof user));
	job_set_str(&j->cwd, cwd);
	j->state = hold ? JS_HOLD : JS_QUEUED;
	if (hold)
		job_set_reason(j, "JobHeldUser");
	j->executor = s->executor;
	j->submit_time = now_real();
	return j;
fail:
	job_free(j);
	return NULL;
}

/* NUL-separated blob of the "env" array (each item a byte string, see
 * bytes.h), and what it counts towards the execve limits. */
static char *env_blob(json_t *env, size_t *len, struct gf_execsize *size, struct gf_err *e)
{
	size_t total = 0, i;
	json_t *item;
	char *blob, *p, what[48];
	char **kv;

	if (env && !json_is_array(env)) {
		gf_err_set(e, "'env' must be an array of \"KEY=VALUE\" strings");
		return NULL;
	}
	kv = calloc(json_array_size(env) + 1, sizeof *kv);
	if (!kv)
		abort();
	json_array_foreach(env, i, item) {
		snprintf(what, sizeof what, "'env' item %zu", i);
		kv[i] = gf_cstr_from_json(item, what, e);
		if (!kv[i])
			goto fail;
		if (!strchr(kv[i], '=')) {
			gf_err_set(e, "'env' item %zu is not a \"KEY=VALUE\" string", i);
			goto fail;
		}
		if (gf_execsize_env(size, kv[i], e))
			goto fail;
		total += strlen(kv[i]) + 1;
	}
	p = blob = malloc(total + 1);
	if (!blob)
		abort();
	for (i = 0; kv[i]; i++) {
		memcpy(p, kv[i], strlen(kv[i]) + 1);
		p += strlen(kv[i]) + 1;
		free(kv[i]);
	}
	free(kv);
	*len = total;
	return blob;
fail:
	for (i = 0; kv[i]; i++)
		free(kv[i]);
	free(kv);
	return NULL;
}

void api_submission_free(struct submission *sub)
{
	for (size_t i = 0; i < sub->n; i++)
		job_free(sub->jobs[i]);
	free(sub->jobs);
	free(sub->env);
	memset(sub, 0, sizeof *sub);
}

/* The value of NAME= in a NUL-separated environment, or NULL. */
static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t off = 0; off < len; off += strlen(env + off) + 1)
		if (!strncmp(env + off, name, n) && env[off + n] == '=')
			return env + off + n + 1;
	return NULL;
}

/* System mode: the jobs run as their submitter. Their logs go to the
 * submitter's own data directory (as captured: $XDG_DATA_HOME/gflow/logs/
 * system, else $HOME/.local/share/gflow/logs/system, else their home's),
 * made by the runner as them: logs/system, so that they never meet the
 * logs of the user's own daemon (logs/ID.log, with ids of its own); and
 * what they could not do is refused now. */
static int owned_submission(uid_t uid, struct submission *sub, const char *cwd, struct gf_err *e)
{
	const char *xdg = env_value(sub->env, sub->envlen, "XDG_DATA_HOME"),
		   *home = env_value(sub->env, sub->envlen, "HOME"), *script = NULL;
	char dir[GF_PATH_MAX], pwhome[GF_PATH_MAX];

	if (xdg && xdg[0] == '/')
		gf_pathf(dir, sizeof dir, "%s/gflow/logs/system", xdg);
	else if (home && home[0] == '/')
		gf_pathf(dir, sizeof dir, "%s/.local/share/gflow/logs/system", home);
	else if (exec_owner_home(uid, pwhome, sizeof pwhome, e) == 0)
		gf_pathf(dir, sizeof dir, "%s/.local/share/gflow/logs/system", pwhome);
	else
		return -1;
	if (!dir[0])
		return gf_err_set(e, "the log directory path of this user is too long");
	for (size_t i = 0; i < sub->n; i++) {
		job_set_str(&jm_w(sub->jobs[i])->log_dir, dir);
		if (jm(sub->jobs[i])->script)
			script = jm(sub->jobs[i])->script;
	}
	return exec_check_owner(uid, cwd, script, e);
}

/* The limits a local submission's jobs get (out): what the submitter sent
 * (sent; NULL: nothing), each capped at the hard limits of the process
 * that connected (pid, from SO_PEERCRED), or that process's own limits
 * when it sent none. A hand-made request gets no more than its sender may
 * set: a user under `prlimit --nproc=40` cannot reach the daemon's limits
 * by leaving `rlimits` out. Root's are not read (it may raise its own);
 * over TCP (pid 0) the sent ones stand, capped later at the daemon's. */
static int caller_limits(uid_t uid, pid_t pid, const struct gf_rlimits *sent, struct gf_rlimits *out,
			 struct gf_err *e)
{
	struct gf_rlimits own;

	if (pid <= 0 || uid == 0) {
		if (!sent)
			memset(out, 0, sizeof *out);
		return 0;
	}
	if (gf_rlimits_of_pid((long)pid, (unsigned)uid, &own))
		return gf_err_set(e, "cannot read the resource limits of the submitting process (pid %ld), "
				  "which a job's are capped at: is it still running?", (long)pid);
	if (!sent) {
		*out = own;
		return 0;
	}
	if (out != sent)
		*out = *sent;
	gf_rlimits_clamp(out, &own);
	return 0;
}

/* All or nothing: on failure nothing is left in sub. */
int api_decode_submission(struct server *s, uid_t uid, pid_t pid, json_t *body, struct submission *sub,
			  struct gf_err *e)
{
	static const char *const fields[] = { "jobs", "env", "cwd", "rlimits", "dry_run", NULL };
	json_t *specs = json_object_get(body, "jobs"), *item;
	struct gf_execsize envsize = { 0 };
	struct gf_rlimits rl;
	char *cwd = NULL, *rlimits = NULL, canon[GF_RLIMITS_TEXT_MAX];
	size_t n, i;

	memset(sub, 0, sizeof *sub);
	if (api_check_fields(body, fields, "request", e) || api_get_bool(body, "dry_run", &sub->dry, e) ||
	    get_bytes(body, "cwd", 4096, &cwd, e) || api_get_str(body, "rlimits", 1024, &rlimits, e))
		goto bad;
	/* The submitter's limits, for every job of the request, as stored in
	 * their one text form (rlimits.h). */
	if (rlimits && gf_rlimits_parse(rlimits, &rl, e)) {
		gf_err_prefix(e, "'rlimits'");
		goto bad;
	}
	if (caller_limits(uid, pid, rlimits ? &rl : NULL, &rl, e))
		goto bad;
	if (rlimits || pid > 0)
		gf_rlimits_format(&rl, canon, sizeof canon);
	if (!cwd || cwd[0] != '/') {
		gf_err_set(e, "'cwd' must be an absolute directory path");
		goto bad;
	}
	if (!json_is_array(specs) || !json_array_size(specs)) {
		gf_err_set(e, "'jobs' must be a non-empty array");
		goto bad;
	}
	n = json_array_size(specs);
	if (n > MAX_BATCH) {
		gf_err_set(e, "a batch may hold at most %d jobs, this one has %zu", MAX_BATCH, n);
		goto bad;
	}
	if (!(sub->env = env_blob(json_object_get(body, "env"), &sub->envlen, &envsize, e)))
		goto bad;
	sub->jobs = calloc(n, sizeof *sub->jobs);
	if (!sub->jobs)
		abort();
	json_array_foreach(specs, i, item) {
		sub->jobs[i] = api_spec_to_job(s, uid, item, cwd, &envsize, (rlimits || pid > 0) && canon[0] ? canon : NULL, e);
		if (!sub->jobs[i]) {
			if (n > 1)
				gf_err_prefix(e, "job %zu of %zu", i + 1, n);
			goto bad;
		}
		sub->n = i + 1;
	}
	if (s->paths.system && owned_submission(uid, sub, cwd, e))
		goto bad;
	free(cwd);
	free(rlimits);
	return 0;
bad:
	free(cwd);
	free(rlimits);
	api_submission_free(sub);
	return -1;
}

int api_check_request(struct server *s, uid_t uid, const char *data, size_t len, struct gf_err *e)
{
	struct submission sub;
	json_t *body = parse_body(data, len, e);
	int rc;

	if (!body)
		return -1;
	rc = api_decode_submission(s, uid, 0, body, &sub, e);
	api_submission_free(&sub);
	json_decref(body);
	return rc;
}
