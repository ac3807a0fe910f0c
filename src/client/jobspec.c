/* jobspec.c — a job's options as gbatch takes them (struct batch_opts:
 * flags, "# GFLOW" directives, gjob update/redo) and the job specs they
 * become: the body of POST /jobs with arrays and sweeps expanded, the
 * "set" fields of an update, what a job runs (a script and its
 * interpreter, conda). gbatch (batch.c), gjob update/redo (jobedit.c) and
 * gbatch --cluster (remote.c, cluster.c) all stand on it; it calls none
 * of them. */
#include "jobspec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "command.h"
#include "events.h"
#include "execlimit.h"
#include "format.h"
#include "sweep.h"
#include "util.h"

const struct opt_def batch_opt_defs[] = {
	{ BO_GPUS, "gpus", 0, 1 },
	{ BO_GRES, "gres", 0, 1 },
	{ BO_SHARED, "shared", 0, 0 },
	{ BO_GPU_MEMORY, "gpu-memory", 0, 1 },
	{ BO_GPU_MEMORY, "max-gpu-mem", 0, 1 },
	{ BO_GPU_MEMORY, "max-gpu-memory", 0, 1 },
	{ BO_MEMORY, "memory", 0, 1 },
	{ BO_MEMORY, "max-mem", 0, 1 },
	{ BO_MEMORY, "max-memory", 0, 1 },
	{ BO_CPUS, "cpus", 0, 1 },
	{ BO_CPUS, "cpus-per-task", 0, 1 },
	{ BO_TIME, "time", 0, 1 },
	{ BO_TIME, "time-limit", 0, 1 },
	{ BO_TIME, "timelimit", 0, 1 },
	{ BO_PRIORITY, "priority", 0, 1 },
	{ BO_PRIORITY, "nice", 0, 1 },
	{ BO_NAME, "name", 'J', 1 },
	{ BO_NAME, "job-name", 0, 1 },
	{ BO_PROJECT, "project", 'P', 1 },
	{ BO_CONDA_ENV, "conda-env", 0, 1 },
	{ BO_DEPENDS_ON, "depends-on", 0, 1 },
	{ BO_DEPENDS_ON, "dependency", 0, 1 },
	{ BO_DEPENDS_ON_ALL, "depends-on-all", 0, 1 },
	{ BO_DEPENDS_ON_ANY, "depends-on-any", 0, 1 },
	{ BO_NO_AUTO_CANCEL, "no-auto-cancel", 0, 0 },
	{ BO_ARRAY, "array", 0, 1 },
	{ BO_PARAM, "param", 0, 1 },
	{ BO_PARAM_FILE, "param-file", 0, 1 },
	{ BO_NAME_TEMPLATE, "name-template", 0, 1 },
	{ BO_MAX_CONCURRENT, "max-concurrent", 0, 1 },
	{ BO_MAX_RETRIES, "max-retries", 0, 1 },
	{ BO_BEGIN, "begin", 0, 1 },
	{ BO_HOLD, "hold", 0, 0 },
	{ BO_NOTIFY_EMAIL, "notify-email", 0, 1 },
	{ BO_NOTIFY_ON, "notify-on", 0, 1 },
	{ BO_DRY_RUN, "dry-run", 0, 0 },
	{ BO_CONFIG, "config", 0, 1 },
	{ BO_HELP, "help", 'h', 0 },
	{ BO_VERSION, "version", 'V', 0 },
	{ BO_CLUSTER, "cluster", 0, 1 },
	{ BO_EXPORT_ENV, "export-env", 0, 0 },
	{ BO_PREEMPTIBLE, "preemptible", 0, 0 },
	{ BO_SIGNAL, "signal", 0, 1 },
	{ BO_PREEMPT_MODE, "preempt-mode", 0, 1 },
};
const size_t batch_opt_ndefs = sizeof batch_opt_defs / sizeof batch_opt_defs[0];

/* ---------- options ---------- */

void batch_opts_init(struct batch_opts *o)
{
	memset(o, 0, sizeof *o);
	o->shared = o->auto_cancel = -1;
	o->gpus = o->gpu_memory_mb = o->memory_mb = o->time_limit_secs = -1;
	o->priority = o->max_concurrent = o->max_retries = o->begin_at = -1;
	o->cpus = -1;
}

void batch_opts_free(struct batch_opts *o)
{
	size_t i;

	free(o->name);
	free(o->project);
	free(o->conda_env);
	free(o->name_template);
	free(o->notify_email);
	free(o->config);
	free(o->script);
	free(o->notify_on);
	free(o->cluster);
	free(o->signal);
	free(o->preempt_mode);
	free(o->interp[0]);
	free(o->interp[1]);
	json_decref(o->depends_on);
	gf_array_spec_free(&o->array);
	for (i = 0; i < o->ndims; i++)
		sweep_dim_free(&o->dims[i]);
	free(o->dims);
	batch_opts_init(o);
}

int batch_is_directive(int id)
{
	switch (id) {
	case BO_GPUS: case BO_GRES: case BO_SHARED: case BO_TIME:
	case BO_MEMORY: case BO_GPU_MEMORY: case BO_PRIORITY: case BO_CPUS:
	case BO_CONDA_ENV: case BO_DEPENDS_ON: case BO_PROJECT:
	case BO_NOTIFY_EMAIL: case BO_NOTIFY_ON: case BO_BEGIN:
	case BO_CLUSTER: case BO_PREEMPTIBLE: case BO_SIGNAL:
	case BO_PREEMPT_MODE:
		return 1;
	}
	return 0;
}

static void set_str(char **dst, const char *val)
{
	free(*dst);
	*dst = xstrdup(val);
}

/* A name-like value: not empty, UTF-8 text without control characters
 * (names are text; unlike arguments they are never bytes). */
static int check_text(const char *val, const char *what, struct gf_err *e)
{
	if (!*val)
		return gf_err_set(e, "invalid %s '': must not be empty", what);
	if (!gf_utf8_valid(val, strlen(val)))
		return gf_err_set(e, "invalid %s '%s': not UTF-8 text", what,
		    val);
	if (!gf_text_printable(val, strlen(val)))
		return gf_err_set(e, "invalid %s '%s': must not contain "
		    "control characters", what, val);
	return 0;
}

static int parse_gres(const char *val, int64_t *out, struct gf_err *e)
{
	const char *n = val;

	if (strcasecmp(val, "gpu") == 0) {
		*out = 1;
		return 0;
	}
	if (strncasecmp(val, "gpu:", 4) == 0)
		n = val + 4;
	if (gf_parse_int_range(n, 0, 64, "GPU count", out, NULL) < 0)
		return gf_err_set(e, "invalid GPU request '%s': expected N or "
		    "gpu:N with N from 0 to 64", val);
	return 0;
}

static int apply_number(const char *val, int64_t min, int64_t max,
    const char *what, int64_t *out, struct gf_err *e)
{
	return gf_parse_int_range(val, min, max, what, out, e);
}

int batch_apply(struct batch_opts *o, int id, const char *val,
    const char *flag, const struct batch_ctx *ctx, struct gf_err *e)
{
	struct gf_jobref ref;
	time_t t;
	json_t *refs;

	switch ((enum batch_opt)id) {
	case BO_GPUS:
		return apply_number(val, 0, 64, "GPU count", &o->gpus, e);
	case BO_GRES:
		return parse_gres(val, &o->gpus, e);
	case BO_SHARED:
		o->shared = 1;
		return 0;
	case BO_GPU_MEMORY:
		if (gf_parse_memory_mb(val, &o->gpu_memory_mb, e) < 0)
			return gf_err_prefix(e, "%s", flag);
		return 0;
	case BO_MEMORY:
		if (gf_parse_memory_mb(val, &o->memory_mb, e) < 0)
			return gf_err_prefix(e, "%s", flag);
		return 0;
	case BO_CPUS:
		if (apply_number(val, 1, 65536, "CPU count", &o->cpus, e) < 0)
			return gf_err_prefix(e, "%s", flag);
		return 0;
	case BO_PREEMPTIBLE:
		o->preemptible = 1;
		return 0;
	case BO_SIGNAL: {
		int sig, secs;

		if (gf_parse_signal_spec(val, flag, &sig, &secs, e) < 0)
			return -1;
		set_str(&o->signal, val);
		return 0;
	}
	case BO_PREEMPT_MODE:
		if (strcmp(val, "requeue") && strcmp(val, "cancel"))
			return gf_err_set(e, "invalid %s '%s': expected requeue or cancel", flag, val);
		set_str(&o->preempt_mode, val);
		return 0;
	case BO_TIME:
		return gf_parse_time_limit(val, &o->time_limit_secs, e);
	case BO_PRIORITY:
		return apply_number(val, 0, 255, "priority", &o->priority, e);
	case BO_NAME:
		if (check_text(val, "job name", e) < 0)
			return -1;
		set_str(&o->name, val);
		return 0;
	case BO_PROJECT:
		if (check_text(val, "project", e) < 0)
			return -1;
		set_str(&o->project, val);
		return 0;
	case BO_CONDA_ENV:
		if (check_text(val, "conda environment", e) < 0)
			return -1;
		set_str(&o->conda_env, val);
		return 0;
	case BO_DEPENDS_ON:
		if (gf_parse_jobref(val, &ref, e) < 0)
			return -1;
		json_decref(o->depends_on);
		o->depends_on = json_array();
		json_array_append_new(o->depends_on, jobref_json(&ref));
		o->dep_mode = "all";
		return 0;
	case BO_DEPENDS_ON_ALL:
	case BO_DEPENDS_ON_ANY:
		refs = jobref_list_json(val, e);
		if (!refs)
			return -1;
		json_decref(o->depends_on);
		o->depends_on = refs;
		o->dep_mode = id == BO_DEPENDS_ON_ALL ? "all" : "any";
		return 0;
	case BO_NO_AUTO_CANCEL:
		o->auto_cancel = 0;
		return 0;
	case BO_ARRAY:
		gf_array_spec_free(&o->array);
		o->has_array = 0;
		if (gf_parse_array_spec(val, &o->array, e) < 0)
			return -1;
		o->has_array = 1;
		return 0;
	case BO_PARAM:
		return sweep_param(&o->dims, &o->ndims, val, e);
	case BO_PARAM_FILE:
		return sweep_param_file(&o->dims, &o->ndims, val, ctx->cwd, e);
	case BO_NAME_TEMPLATE:
		if (check_text(val, "name template", e) < 0)
			return -1;
		set_str(&o->name_template, val);
		return 0;
	case BO_MAX_CONCURRENT:
		return apply_number(val, 0, 1000000, "max concurrent",
		    &o->max_concurrent, e);
	case BO_MAX_RETRIES:
		return apply_number(val, 0, 1000, "max retries",
		    &o->max_retries, e);
	case BO_BEGIN:
		if (gf_parse_begin_time(val, ctx->now, &t, e) < 0)
			return -1;
		o->begin_at = (int64_t)t;
		return 0;
	case BO_HOLD:
		o->hold = 1;
		return 0;
	case BO_NOTIFY_EMAIL:
		if (gf_mail_check_list(val, e) < 0)
			return -1;
		set_str(&o->notify_email, val);
		return 0;
	case BO_NOTIFY_ON:
		if (gf_events_check_list(val, e) < 0)
			return -1;
		set_str(&o->notify_on, val);
		return 0;
	case BO_DRY_RUN:
		o->dry_run = 1;
		return 0;
	case BO_CONFIG:
		set_str(&o->config, val);
		return 0;
	case BO_HELP:
		o->help = 1;
		return 0;
	case BO_VERSION:
		o->version = 1;
		return 0;
	case BO_CLUSTER:
		if (check_text(val, flag, e))
			return -1;
		set_str(&o->cluster, val);
		return 0;
	case BO_EXPORT_ENV:
		o->export_env = 1;
		return 0;
	case BO_COUNT:
		break;
	}
	return gf_err_set(e, "option '%s' is not supported here", flag);
}

/* ---------- what the job runs ---------- */

int batch_detect_script(const char *word, const char *cwd, char **abs,
    struct gf_err *e)
{
	char *path = path_in_dir(cwd, word), *real, head[2];
	size_t len = strlen(word);
	struct stat st;
	int fd, script = 0;

	*abs = NULL;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(path);
		return 0;
	}
	if (len > 3 && strcmp(word + len - 3, ".sh") == 0) {
		script = 1;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			script = read(fd, head, 2) == 2 && head[0] == '#' &&
			    head[1] == '!';
			close(fd);
		}
	}
	if (!script) {
		free(path);
		return 0;
	}
	real = realpath(path, NULL);
	if (!real) {
		gf_err_set(e, "cannot resolve script path '%s': %s", word,
		    strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	*abs = xstrdup(real);
	free(real);
	return 1;
}

int batch_script_interpreter(const char *path, char *interp[2],
    struct gf_err *e)
{
	char head[256], *p, *end;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	interp[0] = interp[1] = NULL;
	if (fd < 0)
		return gf_err_set(e, "cannot open script '%s': %s", path,
		    strerror(errno));
	n = read(fd, head, sizeof head - 1);
	close(fd);
	head[n > 0 ? n : 0] = '\0';
	if (n < 3 || head[0] != '#' || head[1] != '!') {
		interp[0] = xstrdup("/bin/sh");
		return 0;
	}
	head[strcspn(head, "\n")] = '\0';
	for (p = head + 2; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strcspn(p, " \t");
	if (end == p)
		return gf_err_set(e, "script '%s' has an empty #! line", path);
	interp[0] = xstrndup(p, (size_t)(end - p));
	for (p = end; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strlen(p);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' ||
	    end[-1] == '\r'))
		end--;
	if (end > p)
		interp[1] = xstrndup(p, (size_t)(end - p));
	return 0;
}

/* ---------- checks of the whole ---------- */

int batch_validate(const struct batch_opts *o, struct gf_err *e)
{
	if (o->shared == 1 && o->gpu_memory_mb < 0)
		return gf_err_set(e, "--shared needs --gpu-memory (the GPU "
		    "memory each job may use, e.g. --gpu-memory 20G)");
	if (o->shared == 1 && o->gpus < 1)
		return gf_err_set(e, "--shared needs --gpus 1 or more");
	if (o->has_array && o->ndims)
		return gf_err_set(e, "--array cannot be combined with --param "
		    "or --param-file");
	if (!o->preemptible && (o->signal || o->preempt_mode))
		return gf_err_set(e, "%s is for preemptible jobs: add --preemptible",
		    o->signal ? "--signal" : "--preempt-mode");
	if (o->preemptible && o->cluster)
		return gf_err_set(e, "--preemptible cannot be used with --cluster "
		    "(Slurm decides preemption there)");
	return 0;
}

int batch_conda_available(const char *path, const char *conda_exe)
{
	struct sbuf b = { 0 };
	struct stat st;
	const char *p = path;
	int found = 0;

	if (conda_exe && *conda_exe && access(conda_exe, X_OK) == 0)
		return 1;
	while (p && !found) {
		size_t n = strcspn(p, ":");

		b.len = 0;
		if (n)
			sbuf_add(&b, p, n);
		else
			sbuf_addc(&b, '.');	/* an empty entry is "." */
		sbuf_adds(&b, "/conda");
		found = stat(b.p, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(b.p, X_OK) == 0;
		p = p[n] ? p + n + 1 : NULL;
	}
	sbuf_free(&b);
	return found;
}

/* ctx->no_conda, looked up along $PATH only when it is -1 and a job
 * would activate an environment: most submissions never ask. */
static int lacks_conda(const struct batch_ctx *ctx)
{
	if (ctx->no_conda >= 0)
		return ctx->no_conda;
	return !batch_conda_available(getenv("PATH"), getenv("CONDA_EXE"));
}

int batch_check_conda(const struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e)
{
	if (o->conda_env && lacks_conda(ctx))
		return gf_err_set(e, "conda not found for --conda-env %s (no "
		    "conda on PATH and no $CONDA_EXE): the job could not "
		    "activate it", o->conda_env);
	return 0;
}

/* The conda environment of a job: an explicit one (flag or directive)
 * needs conda; the implicit $CONDA_DEFAULT_ENV of a command job is used
 * only when conda is there, else skipped (main warns). */
int batch_decide_conda(struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e)
{
	const char *dflt = ctx->conda_env;
	int none;

	if (o->cluster)	/* conda is the cluster's business (cluster.c) */
		return 0;
	if (o->conda_env)
		return batch_check_conda(o, ctx, e);
	if (o->script || !dflt || !*dflt)
		return 0;
	none = lacks_conda(ctx);
	if (!none && check_text(dflt,
	    "conda environment ($CONDA_DEFAULT_ENV)", e) < 0)
		return -1;
	o->conda_default = none ? -1 : 1;
	return 0;
}

/* ---------- job specs ---------- */

json_t *batch_set_fields(const struct batch_opts *o)
{
	json_t *s = json_object();

	if (o->name)
		json_object_set_new(s, "name", json_string(o->name));
	if (o->gpus >= 0)
		json_object_set_new(s, "gpus", json_integer(o->gpus));
	if (o->shared >= 0)
		json_object_set_new(s, "shared", json_boolean(o->shared));
	if (o->gpu_memory_mb >= 0)
		json_object_set_new(s, "gpu_memory_mb",
		    json_integer(o->gpu_memory_mb));
	if (o->memory_mb >= 0)
		json_object_set_new(s, "memory_mb", json_integer(o->memory_mb));
	if (o->cpus >= 1)
		json_object_set_new(s, "cpus", json_integer(o->cpus));
	if (o->preemptible)
		json_object_set_new(s, "preemptible", json_true());
	if (o->signal)
		json_object_set_new(s, "signal", json_string(o->signal));
	if (o->preempt_mode)
		json_object_set_new(s, "preempt_mode", json_string(o->preempt_mode));
	if (o->time_limit_secs >= 0)
		json_object_set_new(s, "time_limit_secs",
		    json_integer(o->time_limit_secs));
	if (o->priority >= 0)
		json_object_set_new(s, "priority", json_integer(o->priority));
	if (o->project)
		json_object_set_new(s, "project", json_string(o->project));
	if (o->conda_env)
		json_object_set_new(s, "conda_env", json_string(o->conda_env));
	if (o->depends_on) {
		json_object_set(s, "depends_on", o->depends_on);
		json_object_set_new(s, "dep_mode", json_string(o->dep_mode));
	}
	if (o->auto_cancel >= 0)
		json_object_set_new(s, "auto_cancel",
		    json_boolean(o->auto_cancel));
	if (o->begin_at >= 0)
		json_object_set_new(s, "begin_at", json_integer(o->begin_at));
	if (o->max_retries >= 0)
		json_object_set_new(s, "max_retries",
		    json_integer(o->max_retries));
	if (o->max_concurrent >= 0)
		json_object_set_new(s, "max_concurrent",
		    json_integer(o->max_concurrent));
	if (o->notify_email)
		json_object_set_new(s, "notify_email",
		    json_string(o->notify_email));
	if (o->notify_on)
		json_object_set_new(s, "notify_on", json_string(o->notify_on));
	return s;
}

/* Fields every job of this submission shares. */
static json_t *common_spec(const struct batch_opts *o,
    const struct batch_ctx *ctx)
{
	json_t *s = batch_set_fields(o);

	json_object_del(s, "name");
	if (o->script)
		json_object_set_new(s, "script", gf_cstr_json(o->script));
	if (!o->conda_env && o->conda_default > 0)
		json_object_set_new(s, "conda_env", json_string(ctx->conda_env));
	if (o->hold)
		json_object_set_new(s, "hold", json_true());
	if (o->max_concurrent < 0 && o->has_array &&
	    o->array.max_concurrent > 0)
		json_object_set_new(s, "max_concurrent",
		    json_integer(o->array.max_concurrent));
	return s;
}

/* The job's argv; with keys, every word but a script's path has its
 * {key} placeholders filled. Each word is counted (after env) against the
 * execve limits of ctx. */
static json_t *command_json(const struct batch_opts *o,
    const struct batch_ctx *ctx, const struct gf_execsize *env,
    const char *const *keys, const char *const *vals, size_t nkeys,
    struct gf_err *e)
{
	json_t *a = json_array();
	struct gf_execsize size = *env;
	int i;

	for (i = 0; i < 2 && o->script && o->interp[i]; i++) {
		if (gf_execsize_arg(&size, o->interp[i], json_array_size(a),
		    e) < 0)
			goto fail;
		json_array_append_new(a, gf_cstr_json(o->interp[i]));
	}
	for (i = 0; i < o->argc; i++) {
		const char *word = i == 0 && o->script ? o->script : o->argv[i];
		char *filled = NULL;

		if (keys && !(i == 0 && o->script)) {
			filled = gf_fill_template(o->argv[i], keys, vals, nkeys,
			    e);
			if (!filled) {
				gf_err_prefix(e, "argument %d", i + 1);
				goto fail;
			}
			word = filled;
		}
		if (gf_execsize_arg(&size, word, json_array_size(a), e) < 0) {
			free(filled);
			goto fail;
		}
		json_array_append_new(a, gf_cstr_json(word));
		free(filled);
	}
	if (gf_execsize_check(&size, ctx->arg_max, e) < 0)
		goto fail;
	return a;
fail:
	json_decref(a);
	return NULL;
}

static const char *base_name(const struct batch_opts *o)
{
	const char *w = o->script ? o->script : o->argv[0], *s;

	if (o->name)
		return o->name;
	s = strrchr(w, '/');
	return s && s[1] ? s + 1 : w;
}

/* Name of job number i: the template filled, else "<base>-<label>". */
static char *job_name(const struct batch_opts *o, const char *label,
    const char *const *keys, const char *const *vals, size_t nkeys,
    struct gf_err *e)
{
	struct sbuf b = { 0 };
	char *n;

	if (o->name_template) {
		n = gf_fill_template(o->name_template, keys, vals, nkeys, e);
		if (!n)
			gf_err_prefix(e, "--name-template");
		return n;
	}
	if (o->name) {
		sbuf_adds(&b, o->name);
	} else {
		/* a program's name need not be text: escape it, and keep
		 * the whole name within the daemon's 200 bytes */
		const char *base = base_name(o);
		size_t room = 200 - (label ? strlen(label) + 1 : 0);
		char *cut = xmalloc(room + 1);

		gf_escape(cut, room + 1, base, strlen(base), 0);
		sbuf_adds(&b, cut);
		free(cut);
	}
	if (label) {
		sbuf_addc(&b, '-');
		sbuf_adds(&b, label);
	}
	return sbuf_take(&b);
}

/* Append one spec: common fields + name + command (+ extra fields). */
static int add_job(json_t *jobs, const json_t *common, char *name,
    json_t *command, json_t *extra)
{
	json_t *s = json_deep_copy(common);

	if (!name || !command) {
		free(name);
		json_decref(command);
		json_decref(extra);
		json_decref(s);
		return -1;
	}
	json_object_set_new(s, "name", json_string(name));
	json_object_set_new(s, "command", command);
	if (extra)
		json_object_update(s, extra);
	json_decref(extra);
	free(name);
	json_array_append_new(jobs, s);
	return 0;
}

static int expand_array(const struct batch_opts *o,
    const struct batch_ctx *ctx, const struct gf_execsize *env,
    const json_t *common, json_t *jobs, struct gf_err *e)
{
	const char *key = "array_task_id";
	size_t i;

	for (i = 0; i < o->array.n; i++) {
		char label[32];
		const char *lp = label;
		json_t *extra = json_object();

		snprintf(label, sizeof label, "%lld", (long long)o->array.ids[i]);
		json_object_set_new(extra, "array_task_id",
		    json_integer(o->array.ids[i]));
		if (add_job(jobs, common, job_name(o, label, &key, &lp, 1, e),
		    command_json(o, ctx, env, NULL, NULL, 0, e), extra) < 0)
			return -1;
	}
	return 0;
}

static int expand_sweep(const struct batch_opts *o,
    const struct batch_ctx *ctx, const struct gf_execsize *env,
    const json_t *common, json_t *jobs, struct gf_err *e)
{
	size_t nkeys, total, i, k;
	const char **keys, **vals;
	int rc = 0;

	if (sweep_size(o->dims, o->ndims, &total, &nkeys, e) < 0)
		return -1;
	keys = xcalloc(nkeys, sizeof *keys);
	vals = xcalloc(nkeys, sizeof *vals);
	sweep_keys(o->dims, o->ndims, keys);
	for (i = 0; i < total && rc == 0; i++) {
		char label[32];
		json_t *extra = json_object(), *params = json_object(), *tmpl;

		sweep_point(o->dims, o->ndims, i, vals);
		for (k = 0; k < nkeys; k++)
			json_object_set_new(params, keys[k], json_string(vals[k]));
		json_object_set_new(extra, "params", params);
		/* the words before the parameters filled them: gjob update
		 * --param fills them again */
		if (!(tmpl = command_json(o, ctx, env, NULL, NULL, 0, e))) {
			json_decref(extra);
			rc = -1;
			break;
		}
		json_object_set_new(extra, "command_template", tmpl);
		snprintf(label, sizeof label, "%zu", i);
		rc = add_job(jobs, common, job_name(o, label, keys, vals, nkeys,
		    e), command_json(o, ctx, env, keys, vals, nkeys, e), extra);
	}
	free(keys);
	free(vals);
	return rc;
}

json_t *batch_request(const struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e)
{
	json_t *body = json_object(), *jobs = json_array(), *env = json_array();
	json_t *common = common_spec(o, ctx);
	struct gf_execsize envsize = { 0 };
	int rc = 0;
	size_t i;

	for (i = 0; ctx->env && ctx->env[i] && rc == 0; i++) {
		rc = gf_execsize_env(&envsize, ctx->env[i], e);
		json_array_append_new(env, gf_cstr_json(ctx->env[i]));
	}
	if (rc == 0 && o->has_array)
		rc = expand_array(o, ctx, &envsize, common, jobs, e);
	else if (rc == 0 && o->ndims)
		rc = expand_sweep(o, ctx, &envsize, common, jobs, e);
	else if (rc == 0)
		rc = add_job(jobs, common, job_name(o, NULL, NULL, NULL, 0, e),
		    command_json(o, ctx, &envsize, NULL, NULL, 0, e), NULL);
	json_decref(common);
	if (rc < 0) {
		json_decref(jobs);
		json_decref(env);
		json_decref(body);
		return NULL;
	}
	json_object_set_new(body, "jobs", jobs);
	json_object_set_new(body, "env", env);
	json_object_set_new(body, "cwd", gf_cstr_json(ctx->cwd ? ctx->cwd : "/"));
	if (ctx->rlimits)
		json_object_set_new(body, "rlimits", json_string(ctx->rlimits));
	json_object_set_new(body, "dry_run", json_boolean(o->dry_run));
	return body;
}

/* ---------- the answer ---------- */

void batch_print_submitted(const json_t *resp)
{
	json_t *jobs = json_object_get(resp, "jobs");
	size_t i;

	for (i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i);
		char *name = fmt_escaped(jstr(j, "name"));

		printf("Submitted batch job %lld (%s)\n",
		    (long long)jint(j, "id", 0), name);
		free(name);
	}
	/* what the daemon accepted but wants said (a job's mail without a
	 * mail transport): one line each, on stderr */
	jobs = json_object_get(resp, "warnings");
	for (i = 0; i < json_array_size(jobs); i++) {
		char *w = fmt_escaped(json_string_value(json_array_get(jobs, i)));

		fflush(stdout);
		fprintf(stderr, "%s: warning: %s\n", program_invocation_short_name, w);
		free(w);
	}
}
