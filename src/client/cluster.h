/* cluster.h — gbatch --cluster: a job's translation into a Slurm batch
 * script, and the mapping of Slurm's states back to gflow's.
 *
 * Everything here is pure (no process, file or daemon is touched), so it
 * is unit-tested: cluster_plan() turns parsed gbatch options plus the
 * expanded POST /jobs body (batch_request) into the script, the optional
 * parameters file of a sweep and the list of what could not be carried
 * over exactly. Running sbatch and friends is slurm.c's. */
#ifndef GF_CLIENT_CLUSTER_H
#define GF_CLIENT_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "jsonapi.h"

#include "jobspec.h"
#include "config.h"
#include "err.h"

/* Scripts and logs go to the profile's remote_dir; a cluster reached
 * here (no host) without one uses $HOME/CLUSTER_DEFAULT_DIR. */
#define CLUSTER_DEFAULT_DIR "gflow-slurm"

/* Word `s` quoted for a POSIX shell: as it is when it needs no quoting,
 * else in single quotes ('\'' for a quote). Never NULL (malloc'd). */
char *cluster_shquote(const char *s);

/* Is "K=V" one of this machine's own variables (PATH, HOME, USER, LANG,
 * SSH_*, SLURM_*, XDG_*, ...)? Those never go with --export-env; and only
 * those (but SSH_*) are in the environment of a local sbatch, whose
 * default --export=ALL would otherwise hand the job all of the user's. */
int cluster_machine_var(const char *kv);

/* Local path → the cluster's, by the longest path_map prefix that matches
 * whole components; unchanged when none does. malloc'd. */
char *cluster_map_path(const struct gf_cluster *k, const char *path);

/* What the caller knows of the job's dependencies: Slurm job ids (the
 * array job's id for an array) of jobs on the same cluster. */
struct cluster_deps {
	const char *const *slurm_ids;
	size_t n;
};

struct cluster_plan {
	char *script;		/* the batch script */
	char *params;		/* sweep: one line per task, its command quoted; else NULL */
	char *script_path;	/* <dir>/<stamp>.sbatch */
	char *params_path;	/* <dir>/<stamp>.params (sweeps) */
	char *job_path;		/* a script job: <dir>/<stamp>.job, its copy there */
	char *job_text;		/* ... and what goes into it; else both NULL */
	char *log_pattern;	/* <dir>/<stamp>-%j.out, or -%A_%a.out for arrays */
	char **lossy;		/* one line per field not carried over exactly */
	size_t nlossy;
	/* tasks: 0 for a plain job, else the array task ids (sweeps: 0..n-1) */
	int64_t *tasks;
	size_t ntasks;
};

/* Translate. `body` is batch_request()'s output for `o` (its jobs give the
 * final names and commands); script_text, for a script job, is the
 * script's content: it is copied to the cluster and run there (NULL: the
 * script's own path, mapped by path_map, is run); `dir` is the absolute
 * directory for scripts and logs on the cluster; `stamp` names the files
 * (letters, digits, '-', '.'); export_env carries the captured environment
 * into the script. Returns 0, or -1 with e set when something cannot be translated
 * at all (the message names it). */
int cluster_plan(const struct gf_cluster *k, const struct batch_opts *o,
    const json_t *body, const struct cluster_deps *deps,
    const char *script_text, int export_env, const char *dir, const char *stamp, struct cluster_plan *p, struct gf_err *e);
void cluster_plan_free(struct cluster_plan *p);

/* A Slurm time limit for secs: "D-HH:MM:SS", rounded up to whole minutes
 * (Slurm counts minutes); *rounded set when it was. */
void cluster_slurm_time(int64_t secs, char *out, size_t size, int *rounded);

/* Array task ids as Slurm's --array list ("1-3,7,9-11"), "%K" added when
 * max_concurrent > 0. malloc'd. */
char *cluster_array_list(const int64_t *ids, size_t n, int64_t max_concurrent);

/* A Slurm job state (squeue's or sacct's, e.g. "CANCELLED by 0") as a
 * gflow state code (PD R CD F CA TO), or NULL when unknown. */
const char *cluster_state_code(const char *slurm_state);

/* Lines "A|B|..." of squeue/sacct output: one field split off. Returns the
 * number of fields (at most max), each NUL-terminated in place. */
size_t cluster_split(char *line, char sep, char **fields, size_t max);

/* What Slurm says of one job ("123" or "123_4"). */
struct slurm_state {
	char *id;
	const char *code;	/* PD H R CD F CA TO */
	char *reason;		/* NULL: none */
	int has_exit, exit_code, exit_signal;
	double start, end;	/* 0: unknown (times are the cluster's local time) */
};

/* Add to *v (*n entries) the states of the ids (of nids) that text holds
 * and *v does not: text is the output of
 *   squeue --noheader --array --states=all --Format=ArrayJobID:|,
 *     ArrayTaskID:|,State:|,Reason:|,exit_code:|,StartTime:|,EndTime:|
 * (exit_code a wait status), or of
 *   sacct --noheader --parsable2 --format=JobID,State,ExitCode,Start,End
 * (ExitCode "code:signal"). text is changed in place. */
void cluster_parse_squeue(char *text, char *const *ids, size_t nids,
    struct slurm_state **v, size_t *n);
void cluster_parse_sacct(char *text, char *const *ids, size_t nids,
    struct slurm_state **v, size_t *n);
int cluster_knows(const struct slurm_state *v, size_t n, const char *id);
void cluster_states_free(struct slurm_state *s, size_t n);

#endif
