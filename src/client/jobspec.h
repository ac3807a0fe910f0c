/* jobspec.h — a job's options and the job specs they become (jobspec.c):
 * struct batch_opts as gbatch's command line and "# GFLOW" directives fill
 * it (batch.c), as gjob update/redo fill it with the same option ids
 * (jobedit.c), and as gbatch --cluster translates it (cluster.c, remote.c);
 * batch_request() expands arrays and sweeps into the body of one
 * POST /jobs. It needs no daemon: test_client_batch drives it. The names
 * keep gbatch's prefix: these are gbatch's options. */
#ifndef GF_CLIENT_JOBSPEC_H
#define GF_CLIENT_JOBSPEC_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jsonapi.h"

#include "err.h"
#include "opt.h"
#include "parse.h"
#include "sweep.h"

enum batch_opt {
	BO_GPUS, BO_GRES, BO_SHARED, BO_GPU_MEMORY, BO_MEMORY, BO_TIME,
	BO_PRIORITY, BO_NAME, BO_PROJECT, BO_CONDA_ENV, BO_DEPENDS_ON,
	BO_DEPENDS_ON_ALL, BO_DEPENDS_ON_ANY, BO_NO_AUTO_CANCEL, BO_ARRAY,
	BO_PARAM, BO_PARAM_FILE, BO_NAME_TEMPLATE, BO_MAX_CONCURRENT,
	BO_MAX_RETRIES, BO_BEGIN, BO_HOLD, BO_NOTIFY_EMAIL, BO_NOTIFY_ON,
	BO_DRY_RUN, BO_CONFIG, BO_HELP, BO_VERSION,
	BO_CLUSTER, BO_EXPORT_ENV, /* gbatch --cluster (cluster.c, slurm.c) */
	BO_CPUS,
	BO_PREEMPTIBLE, BO_SIGNAL, BO_PREEMPT_MODE, /* preemptible jobs */
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

/* Parsed options. Numbers are -1 and pointers NULL when not given;
 * shared and auto_cancel are -1 / 0 / 1. */
struct batch_opts {
	int help, version, dry_run, hold;
	int shared, auto_cancel;
	int64_t gpus, gpu_memory_mb, memory_mb, time_limit_secs, priority;
	int64_t max_concurrent, max_retries, begin_at;
	int64_t cpus;        /* --cpus (--cpus-per-task); -1: not given (1) */
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
	/* --preemptible, --signal SIG@SECS (checked, kept as typed),
	 * --preempt-mode requeue|cancel */
	int preemptible;
	char *signal, *preempt_mode;
};

void batch_opts_init(struct batch_opts *o);
void batch_opts_free(struct batch_opts *o);

/* Apply one option (`flag` is how it was spelled, for messages). Returns
 * 0 or -1 with e set. */
int batch_apply(struct batch_opts *o, int id, const char *val,
    const char *flag, const struct batch_ctx *ctx, struct gf_err *e);

/* Options that may appear as "# GFLOW" directives. */
int batch_is_directive(int id);

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

/* The combinations of options that cannot go together (--shared without
 * --gpu-memory or --gpus, --array with a sweep). Returns 0 or -1 with e set. */
int batch_validate(const struct batch_opts *o, struct gf_err *e);

/* The conda environment of a job: an explicit one (flag or directive)
 * needs conda; the implicit $CONDA_DEFAULT_ENV of a command job is used
 * (o->conda_default 1) only when conda is there, else skipped (-1: the
 * caller warns). Returns 0 or -1 with e set. */
int batch_decide_conda(struct batch_opts *o, const struct batch_ctx *ctx,
    struct gf_err *e);

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

#endif
