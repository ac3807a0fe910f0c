/* batch.c — gbatch: its command line (options, then a script's "# GFLOW"
 * directives under them), the submission in one POST /jobs and what it
 * prints (--dry-run too); also `gbatch new <name>` (a script template).
 * The options themselves and the job specs they become are jobspec.c's;
 * sweeps are sweep.c's; --cluster hands the job to remote.c. */
#include "batch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
"  --cpus N                     CPUs the job books (--cpus-per-task;\n"
"                               default 1)\n"
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
"                               job_gpu_memory_exceeded, job_idle (default:\n"
"                               completed, failed, timeout, cancelled)\n"
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
	if (batch_validate(o, e) < 0)
		rc = EXIT_USAGE;
	else if (batch_decide_conda(o, ctx, e) < 0)
		rc = EXIT_FAIL;
out:
	free(cli);
	return rc;
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
	if (jint(j, "cpus", 1) > 1)
		sbuf_addf(b, ", CPUs: %lld", (long long)jint(j, "cpus", 1));
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
	"--max-gpu-memory --memory --max-mem --max-memory --cpus --cpus-per-task "
	"--time --time-limit "
	"--timelimit --priority --nice --name --job-name -J --project -P "
	"--conda-env --depends-on --dependency --depends-on-all "
	"--depends-on-any --no-auto-cancel --array --param --param-file "
	"--name-template --max-concurrent --max-retries --begin --hold "
	"--notify-email --notify-on --dry-run --config --help --version "
	"--cluster --export-env",
};
