/* batch.c — gbatch: parse options and script directives, expand arrays
 * and parameter sweeps into job specs, submit them in one POST /jobs;
 * also `gbatch new <name>` (a script template). */
#include "batch.h"
#include "events.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "command.h"
#include "execlimit.h"
#include "format.h"
#include "http.h"
#include "remote.h"
#include "rlimits.h"
#include "trace.h"
#include "util.h"

#define PROG "gbatch"
#define SCRIPT_READ_MAX (4u << 20) /* directives are read from the first 4 MiB */
#define PARAM_FILE_MAX  (64u << 20)

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
};
const size_t batch_opt_ndefs = sizeof batch_opt_defs / sizeof batch_opt_defs[0];

static const char batch_help[] =
"usage: gbatch [options] <command> [args...]\n"
"       gbatch [options] <script> [args...]\n"
"       gbatch new <name>          write <name>.sh, a script template\n"
"       gbatch completion bash|zsh|fish\n"
"\n"
"Submit a job. It runs in this directory with this environment, with the\n"
"GPUs it was given in CUDA_VISIBLE_DEVICES. Arguments are passed as they\n"
"are: no shell re-reads them, except that when the job starts gflow's own\n"
"numeric variables in them, $GFLOW_ARRAY_TASK_ID, $GFLOW_JOB_ID,\n"
"$GFLOW_GPU_IDS, $GFLOW_GPU_MEMORY_MB (or ${NAME}), become the job's values\n"
"(quote them so that your shell leaves them alone):\n"
"  gbatch --array 1-10 python task.py --i '$GFLOW_ARRAY_TASK_ID'\n"
"Nothing else is expanded. Their values are only digits and commas, safe\n"
"in a script (sh -c); $GFLOW_JOB_NAME, free text, is never put into a word:\n"
"it is in the job's environment (sh -c 'echo \"$GFLOW_JOB_NAME\"').\n"
"Options end at the first word that is not an option (or at --). A script\n"
"is a file ending in .sh or starting with #!; its '# GFLOW --flag value'\n"
"lines set options, and options given here win over them.\n"
"\n"
"Resources:\n"
"  --gpus N, --gres N|gpu:N     GPUs the job needs (default 0)\n"
"  --shared                     share GPUs with other --shared jobs (needs\n"
"                               --gpu-memory)\n"
"  --gpu-memory M               GPU memory per GPU (--max-gpu-mem,\n"
"                               --max-gpu-memory): 100 (MB), 1024M, 20G\n"
"  --memory M                   host RAM limit (--max-mem, --max-memory)\n"
"  --time T                     time limit (--time-limit, --timelimit):\n"
"                               HH:MM:SS, MM:SS, D-HH:MM:SS or N minutes\n"
"Scheduling:\n"
"  --priority 0-255             higher runs first (--nice; default 10)\n"
"  -J, --name NAME              job name (--job-name; default: the script\n"
"                               or program name)\n"
"  -P, --project P              project the job counts against\n"
"  --depends-on ID|@|@~N        start after this job finished (--dependency)\n"
"  --depends-on-all IDS         start after all of them finished\n"
"  --depends-on-any IDS         start after one of them finished\n"
"  --no-auto-cancel             stay queued when a dependency fails\n"
"  --begin TIME                 not before HH:MM[:SS], YYYY-MM-DD[THH:MM],\n"
"                               now+N[s|m|h|d]\n"
"  --hold                       submit held (release with gjob release)\n"
"  --max-retries N              resubmit a failed job up to N times\n"
"Environment:\n"
"  --conda-env ENV              conda environment to activate; needs conda\n"
"                               here (on PATH or $CONDA_EXE). Default for\n"
"                               commands: $CONDA_DEFAULT_ENV, skipped with a\n"
"                               warning when conda is not available\n"
"Many jobs at once (all accepted or none):\n"
"  --array SPEC                 tasks 1-10, 1,3,5, 0-20:2, with %K for at\n"
"                               most K at once; names <name>-<task>\n"
"  --param k=v1,v2 | k=a:b[:s]  sweep (repeatable; cartesian product, last\n"
"                               --param varies fastest); {k} in the command\n"
"                               is replaced by the value ({{ gives {)\n"
"  --param-file FILE.csv        one job per row; the header row names keys\n"
"  --name-template T            job names, e.g. 'run_{lr}' (default\n"
"                               <name>-<i>, i counting from 0)\n"
"  --max-concurrent K           at most K jobs of this batch run at once\n"
"Notifications:\n"
"  --notify-email ADDR[,ADDR]   mail these addresses about this job (through\n"
"                               the daemon's first [[notifications.emails]])\n"
"  --notify-on EVENTS           which events, comma list of job_submitted,\n"
"                               job_updated, job_started, job_completed,\n"
"                               job_failed, job_cancelled, job_timeout,\n"
"                               job_held, job_released,\n"
"                               job_gpu_memory_exceeded (default: completed,\n"
"                               failed, timeout, cancelled)\n"
"Slurm (docs/slurm.md):\n"
"  --cluster NAME               submit to [clusters.NAME] of gflow.toml with\n"
"                               sbatch (over ssh when it names a host);\n"
"                               --dry-run prints the script and what is lost\n"
"  --export-env                 with --cluster: carry this environment into\n"
"                               the job (default: none of it)\n"
"Other:\n"
"  --dry-run                    show what would be submitted; submit nothing\n"
"  --config PATH                config file: checked; gbatch reads the\n"
"                               [clusters] of --cluster and the timezone\n"
"                               --begin is read in from it\n"
"  -h, --help                   this help\n"
"  -V, --version                print the version\n"
"\n"
"Prints 'Submitted batch job <id> (<name>)' for each job.\n";

static const char script_template[] =
"#!/bin/bash\n"
"# %s - a gflow job script. Submit it with: gbatch %s\n"
"#\n"
"# gbatch reads option lines of the form '# GFLOW --flag value' from this\n"
"# file; options on the gbatch command line win over them. The examples\n"
"# below are switched off by their second '#': delete it to use one.\n"
"#\n"
"## GFLOW --gpus 1\n"
"## GFLOW --time 1:00:00\n"
"## GFLOW --memory 8G\n"
"## GFLOW --gpu-memory 20G\n"
"## GFLOW --shared\n"
"## GFLOW --priority 10\n"
"## GFLOW --project my-project\n"
"## GFLOW --conda-env myenv\n"
"## GFLOW --depends-on @\n"
"## GFLOW --begin now+30m\n"
"\n"
"echo \"job $GFLOW_JOB_ID ($GFLOW_JOB_NAME) on GPUs: $CUDA_VISIBLE_DEVICES\"\n";

/* ---------- options ---------- */

void batch_opts_init(struct batch_opts *o)
{
	memset(o, 0, sizeof *o);
	o->shared = o->auto_cancel = -1;
	o->gpus = o->gpu_memory_mb = o->memory_mb = o->time_limit_secs = -1;
	o->priority = o->max_concurrent = o->max_retries = o->begin_at = -1;
}

static void sweep_dim_free(struct sweep_dim *d)
{
	size_t i;

	for (i = 0; i < d->nkeys; i++)
		free(d->keys[i]);
	for (i = 0; i < d->nkeys * d->nrows; i++)
		free(d->vals[i]);
	free(d->keys);
	free(d->vals);
	memset(d, 0, sizeof *d);
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
	case BO_MEMORY: case BO_GPU_MEMORY: case BO_PRIORITY:
	case BO_CONDA_ENV: case BO_DEPENDS_ON: case BO_PROJECT:
	case BO_NOTIFY_EMAIL: case BO_NOTIFY_ON: case BO_BEGIN:
	case BO_CLUSTER:
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

static int key_in_dims(const struct batch_opts *o, const char *key)
{
	size_t i, j;

	for (i = 0; i < o->ndims; i++)
		for (j = 0; j < o->dims[i].nkeys; j++)
			if (strcmp(o->dims[i].keys[j], key) == 0)
				return 1;
	return 0;
}

/* Take ownership of d as a new sweep dimension; its keys must be new and
 * its values text (they are shown as the job's params). */
static int add_dim(struct batch_opts *o, struct sweep_dim *d,
    struct gf_err *e)
{
	size_t j;

	for (j = 0; j < d->nkeys * d->nrows; j++)
		if (!gf_utf8_valid(d->vals[j], strlen(d->vals[j]))) {
			gf_err_set(e, "sweep value '%s' of '%s' is not UTF-8 "
			    "text", d->vals[j], d->keys[j % d->nkeys]);
			sweep_dim_free(d);
			return -1;
		}
	for (j = 0; j < d->nkeys; j++)
		if (key_in_dims(o, d->keys[j])) {
			gf_err_set(e, "sweep parameter '%s' is given twice",
			    d->keys[j]);
			sweep_dim_free(d);
			return -1;
		}
	o->dims = xrealloc(o->dims, (o->ndims + 1) * sizeof *o->dims);
	o->dims[o->ndims++] = *d;
	memset(d, 0, sizeof *d);
	return 0;
}

static int apply_param(struct batch_opts *o, const char *val,
    struct gf_err *e)
{
	struct gf_param p = { 0 };
	struct sweep_dim d = { 0 };

	if (gf_parse_param(val, &p, e) < 0)
		return -1;
	d.keys = xmalloc(sizeof *d.keys);
	d.keys[0] = p.key;
	d.nkeys = 1;
	d.vals = p.values;
	d.nrows = p.n;
	p.key = NULL;
	p.values = NULL;
	p.n = 0;
	gf_param_free(&p);
	return add_dim(o, &d, e);
}

static char *path_in(const char *cwd, const char *path)
{
	struct sbuf b = { 0 };

	if (path[0] == '/' || !cwd)
		return xstrdup(path);
	sbuf_adds(&b, cwd);
	if (b.len && b.p[b.len - 1] != '/')
		sbuf_addc(&b, '/');
	sbuf_adds(&b, path);
	return sbuf_take(&b);
}

static int apply_param_file(struct batch_opts *o, const char *val,
    const struct batch_ctx *ctx, struct gf_err *e)
{
	struct sweep_dim d = { 0 };
	char *path = path_in(ctx->cwd, val), *text;
	size_t len;
	int trunc, rc;

	rc = read_file(path, PARAM_FILE_MAX, &text, &len, &trunc, e);
	free(path);
	if (rc < 0)
		return -1;
	if (trunc || strlen(text) != len) {
		free(text);
		return gf_err_set(e, "parameter file '%s' is too large or not "
		    "text", val);
	}
	rc = batch_param_csv(text, val, &d, e);
	free(text);
	if (rc < 0)
		return -1;
	return add_dim(o, &d, e);
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
		return apply_param(o, val, e);
	case BO_PARAM_FILE:
		return apply_param_file(o, val, ctx, e);
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

/* ---------- script directives ---------- */

/* Next shell-like word of a directive line: whitespace-separated, with
 * '...' and "..." quoting; a word starting with '#' ends the line.
 * Returns 1 with *word (malloc'd), 0 at the end, -1 on an open quote. */
static int next_word(const char **pp, const char *end, char **word)
{
	const char *p = *pp;
	struct sbuf b = { 0 };

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p >= end || *p == '#') {
		*pp = end;
		return 0;
	}
	while (p < end && *p != ' ' && *p != '\t' && *p != '\r') {
		if (*p == '\'' || *p == '"') {
			char q = *p++;

			while (p < end && *p != q)
				sbuf_addc(&b, *p++);
			if (p >= end) {
				sbuf_free(&b);
				return -1;
			}
			p++;
		} else {
			sbuf_addc(&b, *p++);
		}
	}
	*pp = p;
	*word = sbuf_take(&b);
	return 1;
}

/* If the line [p, end) is a "# GFLOW ..." directive, *rest is what
 * follows the marker. */
static int is_directive_line(const char *p, const char *end,
    const char **rest)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= end || *p != '#')
		return 0;
	p++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p < 5 || strncmp(p, "GFLOW", 5) != 0)
		return 0;
	p += 5;
	if (p < end && *p != ' ' && *p != '\t' && *p != '\r')
		return 0;
	*rest = p;
	return 1;
}

static void allowed_directives(struct sbuf *b)
{
	size_t i;
	int first = 1;

	for (i = 0; i < batch_opt_ndefs; i++) {
		const struct opt_def *d = &batch_opt_defs[i];

		if (!batch_is_directive(d->id) || (i > 0 &&
		    batch_opt_defs[i - 1].id == d->id))
			continue;
		sbuf_addf(b, "%s--%s", first ? "" : ", ", d->name);
		first = 0;
	}
}

static int directive_error(struct gf_err *e, const char *fname, int line,
    const char *fmt, const char *arg)
{
	char msg[GF_ERR_MAX];

	snprintf(msg, sizeof msg, fmt, arg);
	return gf_err_set(e, "%s:%d: %s", fname, line, msg);
}

/* Parse the flags of one directive line into *out. */
static int directive_flags(const char *p, const char *end, const char *fname,
    int line, struct batch_directive **out, size_t *n, struct gf_err *e)
{
	char *w, *val;
	int r;

	while ((r = next_word(&p, end, &w)) == 1) {
		const struct opt_def *d = NULL;
		char *eq = strchr(w, '=');
		struct batch_directive *bd;

		if (strncmp(w, "--", 2) == 0)
			d = opt_find_long(batch_opt_defs, batch_opt_ndefs, w + 2,
			    eq ? (size_t)(eq - w - 2) : strlen(w + 2));
		if (eq)
			*eq = '\0';
		if (!d || !batch_is_directive(d->id)) {
			struct sbuf allowed = { 0 };
			char msg[GF_ERR_MAX];

			allowed_directives(&allowed);
			snprintf(msg, sizeof msg, "%s:%d: unknown directive "
			    "'%.64s' (directives: %s)", fname, line, w,
			    sbuf_str(&allowed));
			sbuf_free(&allowed);
			free(w);
			return gf_err_set(e, "%s", msg);
		}
		val = NULL;
		if (d->has_arg && eq) {
			val = xstrdup(eq + 1);
		} else if (d->has_arg) {
			r = next_word(&p, end, &val);
			if (r != 1) {
				r = directive_error(e, fname, line, r < 0 ?
				    "unclosed quote after '%s'" :
				    "directive '%s' needs a value", w);
				free(w);
				return r;
			}
		} else if (eq) {
			r = directive_error(e, fname, line,
			    "directive '%s' takes no value", w);
			free(w);
			return r;
		}
		*out = xrealloc(*out, (*n + 1) * sizeof **out);
		bd = &(*out)[(*n)++];
		bd->id = d->id;
		bd->val = val;
		bd->line = line;
		snprintf(bd->flag, sizeof bd->flag, "%s", w);
		free(w);
	}
	if (r < 0)
		return directive_error(e, fname, line, "%s",
		    "unclosed quote in directive");
	return 0;
}

int batch_read_directives(const char *text, const char *fname,
    struct batch_directive **out, size_t *n, struct gf_err *e)
{
	const char *p = text, *rest;
	int line = 0;

	*out = NULL;
	*n = 0;
	while (*p) {
		const char *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		line++;
		if (is_directive_line(p, end, &rest) &&
		    directive_flags(rest, end, fname, line, out, n, e) < 0) {
			batch_directives_free(*out, *n);
			*out = NULL;
			*n = 0;
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

void batch_directives_free(struct batch_directive *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(d[i].val);
	free(d);
}

int batch_detect_script(const char *word, const char *cwd, char **abs,
    struct gf_err *e)
{
	char *path = path_in(cwd, word), *real, head[2];
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

/* ---------- CSV parameter files ---------- */

/* Split one CSV record starting at *pp into fields (RFC 4180 quoting).
 * Returns the number of fields, -1 on an unclosed quote. */
static void free_fields(char **f, int n);

static int csv_record(const char **pp, char ***fields)
{
	const char *p = *pp;
	struct sbuf b = { 0 };
	int n = 0;

	*fields = NULL;
	for (;;) {
		if (*p == '"') {
			p++;
			for (;;) {
				if (!*p) {
					sbuf_free(&b);
					free_fields(*fields, n);
					*fields = NULL;
					return -1;
				}
				if (*p == '"' && p[1] == '"') {
					sbuf_addc(&b, '"');
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					sbuf_addc(&b, *p++);
				}
			}
		}
		while (*p && *p != ',' && *p != '\n' && *p != '\r')
			sbuf_addc(&b, *p++);
		*fields = xrealloc(*fields, (size_t)(n + 1) * sizeof **fields);
		(*fields)[n++] = sbuf_take(&b);
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '\r')
		p++;
	if (*p == '\n')
		p++;
	*pp = p;
	return n;
}

static int valid_key(const char *k)
{
	if (!isalpha((unsigned char)*k) && *k != '_')
		return 0;
	for (k++; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

static void free_fields(char **f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

int batch_param_csv(const char *text, const char *fname,
    struct sweep_dim *d, struct gf_err *e)
{
	const char *p = text;
	char **f;
	int n, line = 0, i, j;

	memset(d, 0, sizeof *d);
	while (*p) {
		if (*p == '\n' || (*p == '\r' && p[1] == '\n')) {
			p += *p == '\r' ? 2 : 1;
			line++;
			continue;
		}
		line++;
		n = csv_record(&p, &f);
		if (n < 0) {
			gf_err_set(e, "%s:%d: unclosed quote", fname, line);
			goto fail;
		}
		if (!d->keys) {
			for (i = 0; i < n; i++) {
				for (j = 0; j < i; j++)
					if (strcmp(f[i], f[j]) == 0)
						break;
				if (!valid_key(f[i]) || j < i) {
					gf_err_set(e, "%s:%d: bad column name "
					    "'%s' (expected a unique name like "
					    "lr or batch_size)", fname, line,
					    f[i]);
					free_fields(f, n);
					goto fail;
				}
			}
			d->keys = f;
			d->nkeys = (size_t)n;
			continue;
		}
		if ((size_t)n != d->nkeys) {
			gf_err_set(e, "%s:%d: expected %zu fields, found %d",
			    fname, line, d->nkeys, n);
			free_fields(f, n);
			goto fail;
		}
		if (d->nrows >= GF_MAX_PARAM_VALUES) {
			gf_err_set(e, "%s: more than %d rows", fname,
			    GF_MAX_PARAM_VALUES);
			free_fields(f, n);
			goto fail;
		}
		d->vals = xrealloc(d->vals, (d->nrows + 1) * d->nkeys *
		    sizeof *d->vals);
		memcpy(d->vals + d->nrows * d->nkeys, f, d->nkeys * sizeof *f);
		d->nrows++;
		free(f);
	}
	if (!d->keys || d->nrows == 0) {
		gf_err_set(e, "%s: expected a header row and at least one row "
		    "of values", fname);
		goto fail;
	}
	return 0;
fail:
	sweep_dim_free(d);
	return -1;
}

/* ---------- the whole command line ---------- */

struct cli_opt {
	int id;
	const char *val;
	char flag[64];
};

static int apply_directives(struct batch_opts *o, const char *word,
    const struct batch_ctx *ctx, struct gf_err *e)
{
	struct batch_directive *d;
	char *text;
	size_t n, len, i;
	int rc;

	if (read_file(o->script, SCRIPT_READ_MAX, &text, &len, NULL, e) < 0)
		return -1;
	rc = batch_read_directives(text, word, &d, &n, e);
	free(text);
	if (rc < 0)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		if (batch_apply(o, d[i].id, d[i].val, d[i].flag, ctx, e) < 0)
			rc = gf_err_prefix(e, "%s:%d", word, d[i].line);
	batch_directives_free(d, n);
	return rc;
}

static int validate(const struct batch_opts *o, struct gf_err *e)
{
	if (o->shared == 1 && o->gpu_memory_mb < 0)
		return gf_err_set(e, "--shared needs --gpu-memory (the GPU "
		    "memory each job may use, e.g. --gpu-memory 20G)");
	if (o->shared == 1 && o->gpus < 1)
		return gf_err_set(e, "--shared needs --gpus 1 or more");
	if (o->has_array && o->ndims)
		return gf_err_set(e, "--array cannot be combined with --param "
		    "or --param-file");
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
static int decide_conda(struct batch_opts *o, const struct batch_ctx *ctx,
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

int batch_parse(int argc, char **argv, const struct batch_ctx *ctx,
    struct batch_opts *o, struct gf_err *e)
{
	struct cli_opt *cli = NULL;
	struct opt_parser p;
	size_t ncli = 0, i;
	const char *val;
	int id, rc = 0;

	batch_opts_init(o);
	opt_init(&p, argc, argv, 1, batch_opt_defs, batch_opt_ndefs, 0);
	while ((id = opt_next(&p, &val, e)) >= 0) {
		if (id == BO_HELP)
			o->help = 1;
		if (id == BO_VERSION)
			o->version = 1;
		cli = xrealloc(cli, (ncli + 1) * sizeof *cli);
		cli[ncli].id = id;
		cli[ncli].val = val;
		snprintf(cli[ncli].flag, sizeof cli[ncli].flag, "%s", p.spelled);
		ncli++;
	}
	if (id == OPT_ERROR) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (o->help || o->version)
		goto out;
	o->argv = argv + p.i;
	o->argc = argc - p.i;
	if (o->argc == 0) {
		gf_err_set(e, "no command given: usage: gbatch [options] "
		    "<command> [args...]");
		rc = EXIT_USAGE;
		goto out;
	}
	if (!o->argv[0][0]) {
		gf_err_set(e, "empty command");
		rc = EXIT_USAGE;
		goto out;
	}
	switch (batch_detect_script(o->argv[0], ctx->cwd, &o->script, e)) {
	case -1:
		rc = EXIT_FAIL;
		goto out;
	case 1:
		if (apply_directives(o, o->argv[0], ctx, e) < 0 ||
		    (access(o->script, X_OK) != 0 &&
		    batch_script_interpreter(o->script, o->interp, e) < 0)) {
			rc = EXIT_FAIL;
			goto out;
		}
		break;
	}
	for (i = 0; i < ncli; i++)
		if (batch_apply(o, cli[i].id, cli[i].val, cli[i].flag, ctx,
		    e) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
	if (validate(o, e) < 0)
		rc = EXIT_USAGE;
	else if (decide_conda(o, ctx, e) < 0)
		rc = EXIT_FAIL;
out:
	free(cli);
	return rc;
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
	size_t nkeys = 0, total = 1, i, d, k, at;
	const char **keys, **vals;
	int rc = 0;

	for (d = 0; d < o->ndims; d++) {
		nkeys += o->dims[d].nkeys;
		if (o->dims[d].nrows > GF_MAX_ARRAY_TASKS / total)
			return gf_err_set(e, "the sweep expands to more than %d "
			    "jobs", GF_MAX_ARRAY_TASKS);
		total *= o->dims[d].nrows;
	}
	keys = xcalloc(nkeys, sizeof *keys);
	vals = xcalloc(nkeys, sizeof *vals);
	for (d = 0, at = 0; d < o->ndims; d++)
		for (k = 0; k < o->dims[d].nkeys; k++)
			keys[at++] = o->dims[d].keys[k];
	for (i = 0; i < total && rc == 0; i++) {
		size_t rest = i;
		char label[32];
		json_t *extra = json_object(), *params = json_object();

		/* the last dimension varies fastest */
		at = nkeys;
		for (d = o->ndims; d-- > 0;) {
			const struct sweep_dim *sd = &o->dims[d];
			size_t row = rest % sd->nrows;

			rest /= sd->nrows;
			at -= sd->nkeys;
			for (k = 0; k < sd->nkeys; k++)
				vals[at + k] = sd->vals[row * sd->nkeys + k];
		}
		for (k = 0; k < nkeys; k++)
			json_object_set_new(params, keys[k], json_string(vals[k]));
		json_object_set_new(extra, "params", params);
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

/* ---------- output ---------- */

static void dry_run_details(struct sbuf *b, const json_t *j)
{
	char buf[64];
	json_t *params = json_object_get(j, "params");
	const char *k;
	json_t *v;

	sbuf_addf(b, " (GPUs: %lld", (long long)jint(j, "gpus", 0));
	if (jbool(j, "shared", 0))
		sbuf_adds(b, ", shared");
	if (jhas(j, "gpu_memory_mb")) {
		fmt_mb(jint(j, "gpu_memory_mb", 0), buf, sizeof buf);
		sbuf_addf(b, ", GPU memory: %s", buf);
	}
	if (jhas(j, "memory_mb")) {
		fmt_mb(jint(j, "memory_mb", 0), buf, sizeof buf);
		sbuf_addf(b, ", memory: %s", buf);
	}
	if (jhas(j, "time_limit_secs")) {
		fmt_duration(jint(j, "time_limit_secs", 0), buf, sizeof buf);
		sbuf_addf(b, ", time: %s", buf);
	}
	if (jhas(j, "priority"))
		sbuf_addf(b, ", priority: %lld",
		    (long long)jint(j, "priority", 10));
	if (jstr(j, "project"))
		sbuf_addf(b, ", project: %s", jstr(j, "project"));
	if (json_array_size(json_object_get(j, "depends_on"))) {
		char *l = fmt_int_list(json_object_get(j, "depends_on"));

		sbuf_addf(b, ", after: %s (%s)", l,
		    jstr(j, "dep_mode") ? jstr(j, "dep_mode") : "all");
		free(l);
	}
	if (jhas(j, "begin_at")) {
		fmt_local_time(jnum(j, "begin_at", 0), buf, sizeof buf);
		sbuf_addf(b, ", begin: %s", buf);
	}
	if (jbool(j, "hold", 0) || (jstr(j, "state") &&
	    strcmp(jstr(j, "state"), "Hold") == 0))
		sbuf_adds(b, ", held");
	if (jint(j, "array_task_id", 0))
		sbuf_addf(b, ", task: %lld",
		    (long long)jint(j, "array_task_id", 0));
	json_object_foreach(params, k, v) {
		sbuf_addf(b, ", %s=", k);
		fmt_text(b, json_string_value(v) ? json_string_value(v) : "");
	}
	sbuf_addc(b, ')');
}

char *batch_dry_run_text(const json_t *jobs)
{
	struct sbuf b = { 0 };
	size_t i;

	sbuf_addf(&b, "Would submit %zu job%s:\n", json_array_size(jobs),
	    json_array_size(jobs) == 1 ? "" : "s");
	for (i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		char *line = fmt_argv_line(json_object_get(j, "command"));

		sbuf_addf(&b, "  [%zu] ", i + 1);
		fmt_text(&b, jstr(j, "name") ? jstr(j, "name") : "?");
		sbuf_addf(&b, ": %s", line);
		free(line);
		dry_run_details(&b, j);
		sbuf_addc(&b, '\n');
	}
	return sbuf_take(&b);
}

/* ---------- the program ---------- */

static int batch_new(int argc, char **argv)
{
	struct sbuf path = { 0 };
	size_t len;
	FILE *f;
	int fd;

	if (argc != 3 || !argv[2][0])
		return cmd_usagef(PROG, "usage: gbatch new <name>");
	len = strlen(argv[2]);
	sbuf_adds(&path, argv[2]);
	if (len < 3 || strcmp(argv[2] + len - 3, ".sh") != 0)
		sbuf_adds(&path, ".sh");
	fd = open(path.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0) {
		fprintf(stderr, "%s: %s '%s'%s\n", PROG, errno == EEXIST ?
		    "not overwriting" : "cannot create", path.p,
		    errno == EEXIST ? ": it already exists" : "");
		sbuf_free(&path);
		return EXIT_FAIL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		sbuf_free(&path);
		return EXIT_FAIL;
	}
	fprintf(f, script_template, path.p, path.p);
	if (fclose(f) != 0) {
		fprintf(stderr, "%s: cannot write '%s': %s\n", PROG, path.p,
		    strerror(errno));
		sbuf_free(&path);
		return EXIT_FAIL;
	}
	printf("Created %s; edit it, then submit it with: gbatch %s\n",
	    path.p, path.p);
	sbuf_free(&path);
	return EXIT_OK;
}

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
}

static int submit(const struct batch_opts *o, const struct batch_ctx *ctx)
{
	struct gf_err e;
	json_t *body, *resp, *jobs;
	char *text;

	if (o->cluster)		/* a Slurm job (remote.c) */
		return remote_submit(PROG, o, ctx);
	if (o->export_env)
		return cmd_usagef(PROG, "--export-env goes with --cluster NAME");
	if (o->config && cmd_check_config(o->config, &e) < 0)
		return cmd_fail(PROG, &e);
	http_preconnect();	/* the daemon accepts while the body is built */
	body = batch_request(o, ctx, &e);
	if (!body)
		return cmd_usage_error(PROG, &e);
	resp = api_post("/jobs", body, &e);
	if (!resp) {
		json_decref(body);
		return cmd_fail(PROG, &e);
	}
	if (o->dry_run) {
		jobs = json_object_get(resp, "jobs");
		if (!json_array_size(jobs) ||
		    !json_object_get(json_array_get(jobs, 0), "command"))
			jobs = json_object_get(body, "jobs");
		text = batch_dry_run_text(jobs);
		fputs(text, stdout);
		free(text);
	} else {
		batch_print_submitted(resp);
	}
	gf_trace("client_exit", jint(json_array_get(json_object_get(resp, "jobs"), 0), "id", 0));
	json_decref(resp);
	json_decref(body);
	return EXIT_OK;
}

extern char **environ;

static int batch_exec(int argc, char **argv)
{
	struct batch_opts o;
	struct batch_ctx ctx;
	struct gf_err e;
	struct gf_rlimits rl;
	char cwd[PATH_MAX], limits[GF_RLIMITS_TEXT_MAX];
	int rc;

	if (gf_trace_open())	/* the start-latency trace (trace.h) */
		gf_trace_at(cmd_started_ns, "client_start", 0);
	if (argc >= 2 && strcmp(argv[1], "new") == 0)
		return batch_new(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_batch, argc - 1, argv + 1);
	if (!getcwd(cwd, sizeof cwd)) {
		fprintf(stderr, "%s: cannot tell the current directory: %s\n",
		    PROG, strerror(errno));
		return EXIT_FAIL;
	}
	ctx.now = time(NULL);
	ctx.cwd = cwd;
	ctx.conda_env = getenv("CONDA_DEFAULT_ENV");
	ctx.env = environ;
	ctx.no_conda = -1;	/* looked up if a job needs conda */
	ctx.arg_max = gf_arg_max();
	/* The job runs with these limits (the daemon's hard ones cap them). */
	gf_rlimits_capture(&rl);
	gf_rlimits_format(&rl, limits, sizeof limits);
	ctx.rlimits = limits;
	rc = batch_parse(argc, argv, &ctx, &o, &e);
	if (rc == 0 && o.conda_default < 0) {
		char *env = fmt_escaped(ctx.conda_env);

		fprintf(stderr, "%s: warning: conda is not available here, so "
		    "the job runs without activating $CONDA_DEFAULT_ENV "
		    "(%s); give --conda-env to require it\n", PROG, env);
		free(env);
	}
	if (rc == EXIT_USAGE)
		rc = cmd_usage_error(PROG, &e);
	else if (rc != 0)
		rc = cmd_fail(PROG, &e);
	else if (o.help)
		fputs(batch_help, stdout);
	else if (o.version)
		rc = cmd_version();
	else
		rc = submit(&o, &ctx);
	batch_opts_free(&o);
	return rc;
}

const struct command cmd_batch = {
	"batch", "gbatch", "submit a command or script as a job", batch_exec,
	"new completion --gpus --gres --shared --gpu-memory --max-gpu-mem "
	"--max-gpu-memory --memory --max-mem --max-memory --time --time-limit "
	"--timelimit --priority --nice --name --job-name -J --project -P "
	"--conda-env --depends-on --dependency --depends-on-all "
	"--depends-on-any --no-auto-cancel --array --param --param-file "
	"--name-template --max-concurrent --max-retries --begin --hold "
	"--notify-email --notify-on --dry-run --config --help --version "
	"--cluster --export-env",
};
