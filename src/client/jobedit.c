/* jobedit.c — gjob update and gjob redo: their options (gbatch's, plus
 * the other tool's short forms and spellings) into the "set" of
 * POST /jobs/update or /jobs/redo. A new command comes after --, from
 * -c/--command (one string, cut into words without a shell) or
 * -s/--script; --param fills {key} placeholders of that new command. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "command.h"
#include "format.h"
#include "http.h"
#include "job.h"
#include "jobspec.h"
#include "opt.h"
#include "parse.h"
#include "util.h"
#include "words.h"

#define PROG "gjob"

enum {
	U_CLEAR_GPU_MEMORY = 2000, U_CLEAR_MEMORY, U_CLEAR_TIME,
	U_CLEAR_CONDA_ENV, U_CLEAR_DEPENDS_ON, U_CLEAR_BEGIN, U_CLEAR_SHARED,
	U_CLEAR_MAX_RETRIES, U_CLEAR_MAX_CONCURRENT, U_AUTO_CANCEL, U_CASCADE,
	U_COMMAND, U_SCRIPT, U_PARAM
};

static const struct opt_def update_opts[] = {
	{ U_COMMAND, "command", 'c', 1 }, { U_SCRIPT, "script", 's', 1 },
	{ U_PARAM, "param", 0, 1 },
	{ BO_GPUS, "gpus", 'g', 1 }, { BO_GRES, "gres", 0, 1 },
	{ BO_SHARED, "shared", 0, 0 },
	{ BO_GPU_MEMORY, "gpu-memory", 0, 1 },
	{ BO_GPU_MEMORY, "max-gpu-mem", 0, 1 },
	{ BO_GPU_MEMORY, "max-gpu-memory", 0, 1 },
	{ BO_MEMORY, "memory", 'm', 1 }, { BO_MEMORY, "max-mem", 0, 1 },
	{ BO_MEMORY, "max-memory", 0, 1 }, { BO_MEMORY, "memory-limit", 0, 1 },
	{ BO_TIME, "time", 't', 1 }, { BO_TIME, "time-limit", 0, 1 },
	{ BO_TIME, "timelimit", 0, 1 },
	{ BO_CPUS, "cpus", 0, 1 }, { BO_CPUS, "cpus-per-task", 0, 1 },
	{ BO_PRIORITY, "priority", 'p', 1 }, { BO_PRIORITY, "nice", 0, 1 },
	{ BO_NAME, "name", 'J', 1 }, { BO_NAME, "job-name", 0, 1 },
	{ BO_CONDA_ENV, "conda-env", 'e', 1 },
	{ BO_DEPENDS_ON, "depends-on", 'd', 1 },
	{ BO_DEPENDS_ON, "dependency", 0, 1 },
	{ BO_DEPENDS_ON_ALL, "depends-on-all", 0, 1 },
	{ BO_DEPENDS_ON_ANY, "depends-on-any", 0, 1 },
	{ BO_NO_AUTO_CANCEL, "no-auto-cancel", 0, 0 },
	{ BO_NO_AUTO_CANCEL, "no-auto-cancel-on-dep-failure", 0, 0 },
	{ U_AUTO_CANCEL, "auto-cancel", 0, 0 },
	{ U_AUTO_CANCEL, "auto-cancel-on-dep-failure", 0, 0 },
	{ BO_MAX_CONCURRENT, "max-concurrent", 0, 1 },
	{ BO_MAX_RETRIES, "max-retries", 0, 1 },
	{ BO_BEGIN, "begin", 0, 1 },
	{ U_CLEAR_GPU_MEMORY, "clear-gpu-memory", 0, 0 },
	{ U_CLEAR_GPU_MEMORY, "clear-gpu-memory-limit", 0, 0 },
	{ U_CLEAR_MEMORY, "clear-memory", 0, 0 },
	{ U_CLEAR_MEMORY, "clear-memory-limit", 0, 0 },
	{ U_CLEAR_TIME, "clear-time", 0, 0 },
	{ U_CLEAR_TIME, "clear-time-limit", 0, 0 },
	{ U_CLEAR_CONDA_ENV, "clear-conda-env", 0, 0 },
	{ U_CLEAR_DEPENDS_ON, "clear-depends-on", 0, 0 },
	{ U_CLEAR_DEPENDS_ON, "clear-dependencies", 0, 0 },
	{ U_CLEAR_DEPENDS_ON, "clear-deps", 0, 0 },
	{ U_CLEAR_BEGIN, "clear-begin", 0, 0 },
	{ U_CLEAR_SHARED, "clear-shared", 0, 0 },
	{ U_CLEAR_MAX_RETRIES, "clear-max-retries", 0, 0 },
	{ U_CLEAR_MAX_CONCURRENT, "clear-max-concurrent", 0, 0 },
	{ U_CASCADE, "cascade", 0, 0 },
	{ BO_CONFIG, "config", 0, 1 },
	{ J_HELP, "help", 'h', 0 },
};
#define NUPDATE (sizeof update_opts / sizeof update_opts[0])

/* The fields of POST /jobs/update "set" that the --clear-* flags null,
 * in U_CLEAR_* order. */
static const char *const clear_fields[] = {
	"gpu_memory_mb", "memory_mb", "time_limit_secs", "conda_env",
	"depends_on", "begin_at", "shared", "max_retries", "max_concurrent",
};

static const char update_help[] =
"usage: gjob update IDS [options] [-- command args...]\n"
"       gjob redo ID [--cascade] [options] [-- command args...]\n\n"
"update (alias u) changes queued or held jobs; redo submits an ended job\n"
"again as a new job (--cascade: also the jobs its failure cancelled;\n"
"refused when one of them is another user's, unless you are an admin).\n"
"The command:\n"
"  -- WORDS...                  the new command, word by word\n"
"  -c, --command 'CMD ARGS'     the new command as one string, cut into\n"
"                               words as a shell quotes them ('..', \"..\",\n"
"                               \\) but never run by one: | & ; < > ( ) `\n"
"                               are refused\n"
"  -s, --script PATH            the new command is this script (its\n"
"                               '# GFLOW' lines are not read)\n"
"  --param KEY=VALUE            fill {KEY} in the new command (repeatable;\n"
"                               the job's other parameters fill the rest);\n"
"                               without one, in the command template the job\n"
"                               keeps from gbatch --param\n"
"Resources and scheduling (as for gbatch):\n"
"  -g, --gpus N (--gres)        --shared          --gpu-memory M\n"
"  -m, --memory M (--memory-limit)  -t, --time T (--time-limit)\n"
"  --cpus N (--cpus-per-task)\n"
"  -p, --priority P (--nice)    -J, --name NAME   -e, --conda-env ENV\n"
"  -d, --depends-on ID          --depends-on-all IDS  --depends-on-any IDS\n"
"  --no-auto-cancel (--no-auto-cancel-on-dep-failure)\n"
"  --auto-cancel (--auto-cancel-on-dep-failure)\n"
"  --max-retries N  --max-concurrent K  --begin TIME\n"
"Back to the default:\n"
"  --clear-gpu-memory (--clear-gpu-memory-limit)\n"
"  --clear-memory (--clear-memory-limit)  --clear-time (--clear-time-limit)\n"
"  --clear-conda-env  --clear-depends-on (--clear-deps)  --clear-begin\n"
"  --clear-shared  --clear-max-retries  --clear-max-concurrent\n"
"gbatch's other spellings work too: --dependency --job-name --max-mem\n"
"--max-memory --max-gpu-mem --max-gpu-memory --timelimit, and\n"
"--clear-dependencies. Also --config PATH, -h/--help.\n"
"(A job's project and notifications cannot be changed.)\n";

struct change {
	struct sbuf ids;
	json_t *set;
	int cascade;
	json_t *params; /* --param KEY=VALUE, or NULL */
};

/* -s PATH: the command that runs this script, as gbatch makes it. */
static json_t *script_command(const char *path, const char *cwd, char **abs, struct gf_err *e)
{
	char *interp[2] = { NULL, NULL };
	json_t *cmd;

	*abs = NULL;
	switch (batch_detect_script(path, cwd, abs, e)) {
	case -1:
		return NULL;
	case 0:
		gf_err_set(e, "invalid --script '%s': not a script (a file ending in .sh or starting with #!)", path);
		return NULL;
	}
	if (access(*abs, X_OK) != 0 && batch_script_interpreter(*abs, interp, e) < 0) {
		free(*abs);
		*abs = NULL;
		return NULL;
	}
	cmd = json_array();
	for (int i = 0; i < 2 && interp[i]; i++)
		json_array_append_new(cmd, gf_cstr_json(interp[i]));
	json_array_append_new(cmd, gf_cstr_json(*abs));
	free(interp[0]);
	free(interp[1]);
	return cmd;
}

/* --param KEY=VALUE into c->params. */
static int add_param(struct change *c, const char *val, struct gf_err *e)
{
	const char *eq = strchr(val, '=');

	if (!eq || eq == val)
		return gf_err_set(e, "invalid --param '%s': expected KEY=VALUE", val);
	if (!c->params)
		c->params = json_object();
	{
		char *key = xstrndup(val, (size_t)(eq - val));

		json_object_set_new(c->params, key, json_string(eq + 1));
		free(key);
	}
	return 0;
}

/* Parse update/redo options into c->set (and the IDS words). */
static int parse_change(int argc, char **argv, int allow_cascade,
    struct change *c, int *rc)
{
	struct batch_opts o;
	struct batch_ctx ctx = { .now = time(NULL) };
	json_t *command = NULL;
	struct opt_parser p;
	struct gf_err e;
	const char *val;
	char cwd[PATH_MAX];
	int id, dashwords = 0;

	memset(c, 0, sizeof *c);
	ctx.cwd = getcwd(cwd, sizeof cwd);
	batch_opts_init(&o);
	c->set = json_object();
	opt_init(&p, argc, argv, 1, update_opts, NUPDATE, 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL && p.dashdash) {
			if (!command)
				command = json_array();
			else if (!dashwords) {
				*rc = cmd_usagef(PROG, "give the new command once: -c, -s or words after --");
				goto fail;
			}
			dashwords = 1;
			json_array_append_new(command, gf_cstr_json(val));
		} else if (id == OPT_POSITIONAL) {
			sbuf_addf(&c->ids, "%s%s", c->ids.len ? "," : "", val);
		} else if (id == OPT_ERROR || id == J_HELP) {
			*rc = job_help_or_fail(update_help, id, val, &e);
			goto fail;
		} else if (id == U_CASCADE) {
			if (!allow_cascade) {
				*rc = cmd_usagef(PROG, "--cascade is for gjob redo");
				goto fail;
			}
			c->cascade = 1;
		} else if (id == U_AUTO_CANCEL) {
			o.auto_cancel = 1;
		} else if (id == U_COMMAND || id == U_SCRIPT) {
			char **w = NULL, *abs = NULL;
			size_t n;

			if (command) {
				*rc = cmd_usagef(PROG, "give the new command once: -c, -s or words after --");
				goto fail;
			}
			if (id == U_COMMAND && gf_split_words(val, &w, &n, &e) == 0) {
				command = json_array();
				for (size_t k = 0; k < n; k++)
					json_array_append_new(command, gf_cstr_json(w[k]));
				gf_words_free(w);
			} else if (id == U_SCRIPT) {
				command = script_command(val, ctx.cwd, &abs, &e);
			}
			if (!command) {
				*rc = cmd_usage_error(PROG, &e);
				goto fail;
			}
			json_object_set_new(c->set, "script", abs ? gf_cstr_json(abs) : json_null());
			free(abs);
		} else if (id == U_PARAM) {
			if (add_param(c, val, &e) < 0) {
				*rc = cmd_usage_error(PROG, &e);
				goto fail;
			}
		} else if (id >= U_CLEAR_GPU_MEMORY &&
		    id <= U_CLEAR_MAX_CONCURRENT) {
			json_object_set_new(c->set,
			    clear_fields[id - U_CLEAR_GPU_MEMORY], json_null());
		} else if (id == BO_CONFIG) {
			if (cmd_check_config(val, &e) < 0) {
				*rc = cmd_fail(PROG, &e);
				goto fail;
			}
		} else if (batch_apply(&o, id, val, p.spelled, &ctx, &e) < 0) {
			*rc = cmd_usage_error(PROG, &e);
			goto fail;
		}
	}
	ctx.no_conda = -1;	/* looked up if --conda-env is given */
	if (batch_check_conda(&o, &ctx, &e) < 0) {
		*rc = cmd_fail(PROG, &e);
		goto fail;
	}
	{
		json_t *given = batch_set_fields(&o);

		json_object_update(c->set, given);
		json_decref(given);
	}
	/* --param without a new command: the daemon fills the job's kept
	 * command template again (api_edit.c); with one, filled_set fills it
	 * and it becomes the job's template */
	if (command)
		json_object_set_new(c->set, "command", command);
	batch_opts_free(&o);
	return 0;
fail:
	json_decref(command);
	json_decref(c->params);
	json_decref(c->set);
	sbuf_free(&c->ids);
	batch_opts_free(&o);
	return -1;
}

/* The set for one job when --param is given: the new command with its
 * {KEY} filled from the job's parameters and the --param values (they
 * win), and the merged parameters. */
static json_t *filled_set(const struct change *c, const json_t *job, struct gf_err *e)
{
	json_t *params = json_object(), *set = json_deep_copy(c->set), *words = json_array();
	json_t *cmd = json_object_get(set, "command"), *v;
	const char **keys, **vals, *k;
	size_t n = 0, i;

	json_object_update(params, json_object_get(job, "params"));
	json_object_update(params, c->params);
	keys = xcalloc(json_object_size(params) + 1, sizeof *keys);
	vals = xcalloc(json_object_size(params) + 1, sizeof *vals);
	json_object_foreach(params, k, v) {
		keys[n] = k;
		vals[n++] = json_string_value(v) ? json_string_value(v) : "";
	}
	json_array_foreach(cmd, i, v) {
		char *filled;

		if (!json_is_string(v)) {
			json_array_append(words, v);
			continue;
		}
		if (!(filled = gf_fill_template(json_string_value(v), keys, vals, n, e))) {
			gf_err_prefix(e, "job %lld", (long long)jint(job, "id", 0));
			json_decref(words);
			json_decref(set);
			json_decref(params);
			set = NULL;
			goto out;
		}
		json_array_append_new(words, gf_cstr_json(filled));
		free(filled);
	}
	json_object_set_new(set, "command_template", json_incref(cmd));
	json_object_set_new(set, "command", words);
	json_object_set_new(set, "params", params);
out:
	free(keys);
	free(vals);
	return set;
}

/* filled_set for the job refs names (42 or "@~N"). */
static json_t *filled_set_of(const struct change *c, const json_t *ref, struct gf_err *e)
{
	char text[32];
	json_t *job, *set;

	if (json_is_string(ref))
		snprintf(text, sizeof text, "%s", json_string_value(ref));
	else
		snprintf(text, sizeof text, "%lld", (long long)json_integer_value(ref));
	if (!(job = fetch_job(text, e)))
		return NULL;
	set = filled_set(c, job, e);
	json_decref(job);
	return set;
}

static int post_update(json_t *ids, json_t *set)
{
	json_t *body = json_object();

	json_object_set_new(body, "ids", ids);
	json_object_set(body, "set", set);
	return job_post_report(PROG, "/jobs/update", body, "Updated");
}

static int job_update(int argc, char **argv)
{
	struct change c;
	struct gf_err e;
	json_t *refs, *ref, *set;
	int rc = EXIT_OK;
	size_t i;

	if (parse_change(argc, argv, 0, &c, &rc) < 0)
		return rc;
	if (!c.ids.len || (!json_object_size(c.set) && !c.params)) {
		rc = cmd_usagef(PROG, c.ids.len ? "nothing to change (give "
		    "options like --gpus 2 or --clear-time)" :
		    "usage: gjob update IDS [options]");
		goto out;
	}
	refs = jobref_list_json(c.ids.p, &e);
	if (!refs) {
		rc = cmd_usage_error(PROG, &e);
		goto out;
	}
	if (!c.params || !json_object_get(c.set, "command")) {
		/* no --param, or --param alone: the daemon refills each job's
		 * command template with its parameters and these */
		if (c.params)
			json_object_set(c.set, "params", c.params);
		rc = post_update(refs, c.set);
		goto out;
	}
	/* each job fills the new command with its own parameters */
	json_array_foreach(refs, i, ref) {
		int one;

		if (!(set = filled_set_of(&c, ref, &e))) {
			rc = cmd_fail(PROG, &e);
			continue;
		}
		one = post_update(json_pack("[O]", ref), set);
		json_decref(set);
		if (one != EXIT_OK)
			rc = one;
	}
	json_decref(refs);
out:
	json_decref(c.set);
	json_decref(c.params);
	sbuf_free(&c.ids);
	return rc;
}

static int job_redo(int argc, char **argv)
{
	struct gf_jobref ref;
	struct change c;
	struct gf_err e;
	json_t *body, *resp, *set = NULL;
	int rc = EXIT_OK;

	if (parse_change(argc, argv, 1, &c, &rc) < 0)
		return rc;
	if (!c.ids.len || strchr(c.ids.p, ',')) {
		rc = cmd_usagef(PROG, "usage: gjob redo ID [--cascade] "
		    "[options]");
		goto out;
	}
	if (gf_parse_jobref(c.ids.p, &ref, &e) < 0) {
		rc = cmd_usage_error(PROG, &e);
		goto out;
	}
	if (c.params && !json_object_get(c.set, "command"))
		json_object_set(c.set, "params", c.params);	/* refilled by the daemon */
	else if (c.params) {
		json_t *job = fetch_job(c.ids.p, &e);

		if (!job || !(set = filled_set(&c, job, &e))) {
			json_decref(job);
			rc = cmd_fail(PROG, &e);
			goto out;
		}
		json_decref(job);
	}
	body = json_object();
	json_object_set_new(body, "id", jobref_json(&ref));
	json_object_set_new(body, "cascade", json_boolean(c.cascade));
	json_object_set(body, "set", set ? set : c.set);
	resp = api_post("/jobs/redo", body, &e);
	json_decref(body);
	if (!resp) {
		rc = cmd_fail(PROG, &e);
		goto out;
	}
	batch_print_submitted(resp);
	json_decref(resp);
out:
	json_decref(set);
	json_decref(c.set);
	json_decref(c.params);
	sbuf_free(&c.ids);
	return rc;
}

const struct job_cmd job_cmd_update = { "update", "u", job_update };
const struct job_cmd job_cmd_redo = { "redo", NULL, job_redo };
