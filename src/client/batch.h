/* batch.h — gbatch's command line, script directives and job specs.
 *
 * The flow: batch_parse() reads options up to the first word of the job,
 * decides whether that word is a script, reads the script's "# GFLOW"
 * directives, applies directives and then the command line (so the
 * command line wins) and validates the result; batch_request() expands
 * arrays and sweeps into the body of one POST /jobs. No daemon is needed
 * for either, so both are unit-tested. gjob update/redo reuse the option
 * ids and batch_apply(). */
#ifndef GF_CLIENT_BATCH_H
#define GF_CLIENT_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jsonapi.h"

#include "err.h"
#include "opt.h"
#include "parse.h"

enum batch_opt {
	BO_GPUS, BO_GRES, BO_SHARED, BO_GPU_MEMORY, BO_MEMORY, BO_TIME,
	BO_PRIORITY, BO_NAME, BO_PROJECT, BO_CONDA_ENV, BO_DEPENDS_ON,
	BO_DEPENDS_ON_ALL, BO_DEPENDS_ON_ANY, BO_NO_AUTO_CANCEL, BO_ARRAY,
	BO_PARAM, BO_PARAM_FILE, BO_NAME_TEMPLATE, BO_MAX_CONCURRENT,
	BO_MAX_RETRIES, BO_BEGIN, BO_HOLD, BO_NOTIFY_EMAIL, BO_NOTIFY_ON,
	BO_DRY_RUN, BO_CONFIG, BO_HELP, BO_VERSION,
	BO_CLUSTER, BO_EXPORT_ENV, /* gbatch --cluster (cluster.c, slurm.c) */
	BO_COUNT
};

extern const struct opt_def batch_opt_defs[];
extern const size_t batch_opt_ndefs;

/* What the submission sees of its surroundings (main fills it from the
 * process; tests make it up). */
struct batch_ctx {
	time_t now;
	const char *cwd;        /* absolute */
	const char *conda_env;  /* $CONDA_DEFAULT_ENV, or NULL */
	char *const *env;       /* NULL-terminated "K=V" list, or NULL */
	int no_conda;           /* the submitter has no conda (see
				 * batch_conda_available); -1: look it up
				 * only if a job needs it */
	long arg_max;           /* execve's limit here; 0: not checked */
	const char *rlimits;    /* the submitter's resource limits (text form,
				 * rlimits.h), sent as "rlimits"; NULL: none */
};

/* One sweep dimension: nrows rows of nkeys values. A --param is one key;
 * a --param-file has one key per CSV column. */
struct sweep_dim {
	char **keys;
	size_t nkeys;
	char **vals; /* row-major, nrows * nkeys */
	size_t nrows;
};

/* Parsed options. Numbers are -1 and pointers NULL when not given;
 * shared and auto_cancel are -1 / 0 / 1. */
struct batch_opts {
	int help, version, dry_run, hold;
	int shared, auto_cancel;
	int64_t gpus, gpu_memory_mb, memory_mb, time_limit_secs, priority;
	int64_t max_concurrent, max_retries, begin_at;
	char *name, *project, *conda_env, *name_template, *notify_email;
	char *config;
	char *notify_on;     /* comma list of events */
	json_t *depends_on;  /* array of references */
	const char *dep_mode; /* "all" or "any" with depends_on */
	int has_array;
	struct gf_array_spec array;
	struct sweep_dim *dims;
	size_t ndims;
	/* the job itself */
	char **argv;  /* command words; point into the caller's argv */
	int argc;
	char *script; /* absolute path when argv[0] is a script */
	/* a script without the execute bit runs through its "#!" line (or
	 * /bin/sh): these words go before it in the command */
	char *interp[2];
	/* $CONDA_DEFAULT_ENV for a command job: 1 used, -1 skipped because
	 * the submitter has no conda (main warns), 0 not set */
	int conda_default;
	/* --cluster NAME: a Slurm job of [clusters.NAME] (docs/slurm.md) */
	char *cluster;
	int export_env;
};

void batch_opts_init(struct batch_opts *o);
void batch_opts_free(struct batch_opts *o);

/* Apply one option (`flag` is how it was spelled, for messages). Returns
 * 0 or -1 with e set. */
int batch_apply(struct batch_opts *o, int id, const char *val,
    const char *flag, const struct batch_ctx *ctx, struct gf_err *e);

/* Options that may appear as "# GFLOW" directives. */
int batch_is_directive(int id);

/* One option read from a script. */
struct batch_directive {
	int id;
	char *val;      /* NULL for flags */
	char flag[64];  /* "--gpus" */
	int line;       /* 1-based */
};

/* Read the "# GFLOW --flag=value" / "# GFLOW --flag value" lines of a
 * script's text (several flags per line allowed; a word starting with '#'
 * ends the line). Errors name the file, line and flag. The caller frees
 * *out with batch_directives_free(). */
int batch_read_directives(const char *text, const char *fname,
    struct batch_directive **out, size_t *n, struct gf_err *e);
void batch_directives_free(struct batch_directive *d, size_t n);

/* Is `word` a script: a regular file (relative to cwd) whose name ends in
 * ".sh" or whose first line starts with "#!"? Returns 1 and its absolute
 * path in *abs (malloc'd), 0 when not, -1 on error. */
int batch_detect_script(const char *word, const char *cwd, char **abs,
    struct gf_err *e);

/* For a script that cannot be executed directly: the interpreter of its
 * "#!" line and its optional argument, else "/bin/sh". Both malloc'd;
 * interp[1] may be NULL. Returns 0, or -1 when the file cannot be read. */
int batch_script_interpreter(const char *path, char *interp[2],
    struct gf_err *e);

/* Can the submitter run conda: an executable $CONDA_EXE, or `conda` in a
 * directory of `path` (a $PATH value)? Either may be NULL. */
int batch_conda_available(const char *path, const char *conda_exe);

/* An explicit conda environment needs conda: "conda not found for
 * --conda-env ENV" when ctx says the submitter has none. */
int batch_check_conda(const struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e);

/* Parse a whole gbatch command line (argv[0] is the program). Returns 0,
 * EXIT_USAGE for a bad command line or EXIT_FAIL for anything else (a
 * script that cannot be read, a bad directive), with e set. On success
 * with o->help or o->version set nothing else is checked. */
int batch_parse(int argc, char **argv, const struct batch_ctx *ctx,
    struct batch_opts *o, struct gf_err *e);

/* The body of POST /jobs: {"jobs":[spec,...], "env":[...], "cwd":...,
 * "dry_run":bool}; arrays and sweeps expanded. Words of the command, the
 * script, the environment and cwd are byte strings (bytes.h): exact also
 * when they are not UTF-8. NULL with e set when a template cannot be
 * filled or a job would pass the kernel's execve limits (execlimit.h). */
json_t *batch_request(const struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e);

/* The fields given on the command line as a "set" object for
 * POST /jobs/update and /jobs/redo. */
json_t *batch_set_fields(const struct batch_opts *o);

/* "Submitted batch job <id> (<name>)" for each job of a POST answer. */
void batch_print_submitted(const json_t *resp);

/* What --dry-run prints for a list of job objects (or specs). */
char *batch_dry_run_text(const json_t *jobs);

/* Parse CSV text: header row = keys, each further row = one sweep point. */
int batch_param_csv(const char *text, const char *fname,
    struct sweep_dim *d, struct gf_err *e);

#endif
