/* job.h — the job model: states, the job record, and its JSON form.
 *
 * One struct job per job ever submitted; the daemon keeps them all in memory
 * (struct jobtab) and writes each change through to the store. The JSON form
 * is both the store's row format and the API's job object (docs/api.md). */
#ifndef GF_JOB_H
#define GF_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

enum job_state {
	JS_QUEUED,
	JS_HOLD,
	JS_RUNNING,
	JS_FINISHED,
	JS_FAILED,
	JS_CANCELLED,
	JS_TIMEOUT,
	JS_NSTATES
};

enum job_executor { EXEC_TMUX, EXEC_PROCESS };

/* The stored fields that most jobs leave unset (NULL or 0), kept out of
 * line in one block that exists only when one of them is set: with 100,000
 * jobs in memory every byte of struct job counts. Read them through jm(j)
 * (never NULL: an empty block when the job has none); set them through
 * jm_w(j), which makes the block. All fields are 8 bytes: no padding, so a
 * block compares with memcmp. */
struct job_more {
	char *script;		/* NULL for command jobs */
	char *log_dir;		/* system mode: in the owner's home; NULL: the daemon's logs/ */
	char *conda_env;
	char *notify_email;	/* per-job mail: comma list of addresses, or NULL */
	char *notify_on;	/* its events, comma list; NULL = the default ones */
	/* A job sent to a Slurm cluster (gbatch --cluster, api_remote.c): the
	 * daemon records it and never runs or schedules it; its owner's
	 * client mirrors Slurm's state into it. */
	char *cluster;		/* [clusters.NAME]; NULL for a local job */
	char *slurm_id;		/* "123", or "123_4" for an array task */
	char *remote_log;	/* its output file on the cluster */
	char *cpu_ids;		/* [daemon] constrain_cpus: the CPUs given ("0-1,4"), NULL: none */
	json_t *params;		/* object, owned; NULL when empty */
	/* the command before params filled its {KEY}s (gbatch --param,
	 * sweeps): an array as "command" is written, owned; NULL: none (also
	 * jobs stored before it was kept). gjob update --param refills it. */
	json_t *command_template;
	json_t *gpu_usage;	/* what it used on its GPUs (usage.c), or NULL */
	int64_t retry_of, redo_of;
	int64_t log_seq;	/* its log is ID.N.log, not ID.log (runfile.h); 0: ID.log */
	double begin_at;	/* 0 = none */
	int64_t cpus;		/* CPUs booked; 0: 1, the default (job_cpus) */
	int64_t interactive;	/* 1: galloc's, a pty and an attach socket, ends with its caller */
	/* Preemption (gbatch --preemptible, engine/preempt.c): PJ_* bits,
	 * the signal and the seconds before the kill (--signal SIG@SECS),
	 * how many times it was requeued, and since when it is being
	 * preempted (0: it is not). Stored as the job's "preempt" object. */
	int64_t preempt;
	int64_t preempt_sig, preempt_secs;
	int64_t requeues;
	double preempt_since;
	/* An array task id or group id that does not fit struct job's
	 * uint32_t (over UINT32_MAX, or negative, from a hand-made row): never
	 * in practice (ids are dense from 1, api_decode takes tasks up to
	 * 2^40); read and set them through job_array_task_id/job_group_id. */
	int64_t array_task_id_wide, group_id_wide;
	int64_t gpu_memory_mb;	/* 0 = not set */
};

enum {
	PJ_PREEMPTIBLE = 1,	/* --preemptible */
	PJ_MODE_CANCEL = 2,	/* --preempt-mode cancel (else requeue) */
	PJ_END_CANCEL = 4,	/* being preempted: what then (else requeue) */
};

static inline bool job_preemptible(const struct job_more *m)
{
	return m->preempt & PJ_PREEMPTIBLE;
}

/* Ids of the jobs that listed a job in depends_on (cascade.c's dependents
 * index; entries are only added, so check the job still lists it). */
struct job_ids {
	uint32_t n, cap;
	int64_t id[];
};

/* One per job ever submitted, and 100,000 of them may be in memory: what
 * most jobs leave unset lives out of line (more, rt), flags are bits, and
 * fields are ordered by size so that there are no holes. */
struct job {
	int64_t id;
	char *name;
	char *user;
	char *project;
	char *reason;		/* NULL when none */
	char **argv;		/* NULL-terminated */
	char *cwd;
	struct job_more *more;	/* NULL when none of its fields is set */
	/* Every job that ran under tmux (the default executor) has these: kept
	 * here, they cost all jobs 16 bytes; in job_more, they cost a tmux job
	 * a 128-byte block. */
	char *tmux_session;
	char *tmux_socket;	/* the tmux server's socket (pooled: one per daemon) */
	int64_t env_id;		/* row in the store's envs table */
	int64_t memory_mb;	/* 0 = not set (likewise below) */
	int64_t time_limit_secs;
	int64_t *deps;
	/* The submitter's resource limits (rlimits.h's text, pooled), NULL:
	 * none. Nearly every job has them: in job_more, they would cost each
	 * job a block of its own. */
	char *rlimits;
	double submit_time, start_time, end_time;
	uint64_t gpu_mask;	/* GPUs given */
	/* Supervision, persisted: the runner (runner_pid below) and its start
	 * time; a job holds its resources while `active` (its runner is
	 * starting or alive), whatever its state says. */
	unsigned long long runner_ticks;

	/* Runtime only. txn.c keeps these when a job's stored fields are
	 * replaced (an update, a rollback: see adopt()); add new ones there. */
	struct job_rt *rt;	/* NULL when all its fields are at their defaults */
	struct job_ids *dependents;	/* NULL when none */

	uid_t uid;
	int gpus;
	int priority;
	uint32_t ndeps;		/* api_decode.c takes at most 10,000 */
	int max_concurrent;
	int max_retries;
	int attempt;
	pid_t runner_pid;
	uint32_t txn_seq;	/* runtime: the transaction that has a snapshot of it (txn.c) */
	uint32_t run_seq;	/* distinguishes run directories of one job: one per start */
	/* Every array task and every job of a multi-job submission has these:
	 * in job_more they would cost each such job a block of its own. Read
	 * and set them through job_array_task_id/job_group_id and their
	 * setters: a value over UINT32_MAX lives in job_more (rare, see
	 * there), and 0 here then. */
	uint32_t array_task_id32;	/* 0 unless an array's task */
	uint32_t group_id32;	/* its array's or batch's first job; 0 = none */

	int16_t exit_code;	/* when exited normally: 0-255 (runfile.c, api_remote.c check) */
	int16_t exit_signal;	/* when killed by a signal (0 otherwise): likewise */

	uint8_t state;		/* enum job_state */
	uint8_t executor;	/* enum job_executor */
	int8_t memory_enforced;	/* -1 unknown, 0 no, 1 yes */
	bool shared : 1;
	bool dep_any : 1;
	bool auto_cancel : 1;
	bool priority_by_admin : 1;	/* priority set by an admin: it orders jobs across users */
	bool has_exit : 1;
	bool active : 1;	/* see runner_ticks */
	bool unreadable : 1;	/* runtime: a stand-in for a store row that could not be read */
	bool in_live : 1;	/* runtime: listed in the server's live list */
};

/* The daemon's memory with 1,000,000 jobs stored is mostly this struct
 * (issue 31: RSS with 1,000,000 jobs <= 250 MiB; records come from job.c's
 * slabs, so it costs exactly its size): a field added here costs 1,000,000
 * times its size, so put what most jobs leave unset in job_more, and what
 * many jobs set (array task and group ids: issue 13's 100,000 jobs are
 * such) in the narrowest type that holds it. 232 bytes: 22 of 8, 12 of 4,
 * 2 of 2 and 4 of 1, no holes. */
_Static_assert(sizeof(struct job) <= 232, "struct job grew past 232 bytes: see the comment above");

static inline size_t job_ndependents(const struct job *j)
{
	return j->dependents ? j->dependents->n : 0;
}

struct report;

/* Runtime fields for supervising a runner (reap.c), which only a job
 * whose runner is starting, alive or being drained sets, and retried_by:
 * one block made when one is set (jr_w), freed by job_rt_trim when all are
 * back to their defaults (reap_forget). Read them through jr(j). */
struct job_rt {
	struct event *pidfd_ev;
	struct report *report;	/* the runner's socket, when it tells its result there (reap.c) */
	/* Why the daemon ended the runner. */
	const char *backstop;
	int64_t retried_by;	/* the next attempt, when this one was retried */
	int pidfd;		/* -1 when none */
	int stopped_ticks;
	bool cancel_sent;
	/* The runner is gone but processes of the job are left and being
	 * killed; the end is still to be recorded (the store refused it). */
	bool draining, end_pending;
	/* Its end waits in s->ends for the next pass's commit (engine). */
	bool end_queued;
	/* This daemon made the group it tracks this run through, or left it
	 * to the runner to make (track.c): until made, and once gone, it holds
	 * nothing (a job process is only born inside; rmdir refuses a
	 * populated group), as when the runner removes it before telling its
	 * result. */
	bool group_made;
};

/* The defaults, what jr() gives for a job without a block. */
extern const struct job_rt job_rt_none;

static inline const struct job_rt *jr(const struct job *j)
{
	return j->rt ? j->rt : &job_rt_none;
}

/* j's runtime block, for writing: made when missing. */
struct job_rt *jr_w(struct job *j);
/* Frees j's runtime block when all its fields are at their defaults. */
void job_rt_trim(struct job *j);

/* An empty block, what jm() gives for a job without one. */
extern const struct job_more job_more_none;

/* j's rarely set fields, for reading (never NULL). */
static inline const struct job_more *jm(const struct job *j)
{
	return j->more ? j->more : &job_more_none;
}

/* The CPUs j books (--cpus; 1 unless set). */
static inline int job_cpus(const struct job *j)
{
	return jm(j)->cpus > 1 ? (int)jm(j)->cpus : 1;
}

/* j's rarely set fields, for writing: the block is made when missing. */
struct job_more *jm_w(struct job *j);

/* Splits v into a uint32_t field (when 1..UINT32_MAX) or its job_more
 * overflow (any other value but 0): what the setters below and the
 * loaders (with a job_more of their own) use. */
static inline void job_split_u32(int64_t v, uint32_t *narrow, int64_t *wide)
{
	bool fits = v > 0 && v <= (int64_t)UINT32_MAX;

	*narrow = fits ? (uint32_t)v : 0;
	*wide = fits ? 0 : v;
}

/* Its task id in its array (0 unless an array's task). */
static inline int64_t job_array_task_id(const struct job *j)
{
	return j->array_task_id32 ? (int64_t)j->array_task_id32 : jm(j)->array_task_id_wide;
}

/* Its array's or batch's first job (0: none). */
static inline int64_t job_group_id(const struct job *j)
{
	return j->group_id32 ? (int64_t)j->group_id32 : jm(j)->group_id_wide;
}

void job_set_array_task_id(struct job *j, int64_t v);
void job_set_group_id(struct job *j, int64_t v);

/* j takes the fields of m (which it then owns) as its block, made only
 * when one of them is set. */
void job_more_adopt(struct job *j, const struct job_more *m);
/* Frees j's block when none of its fields is set any more (writers that
 * set fields to NULL or 0 through jm_w leave an empty one). */
void job_more_trim(struct job *j);

/* Its state's code for gqueue's ST: "PR" for a running job being
 * preempted, else job_state_code's. */
#define job_st(j) ((j)->state == JS_RUNNING && jm(j)->preempt_since > 0 ? "PR" : job_state_code((j)->state))
const char *job_state_name(enum job_state s);
const char *job_state_code(enum job_state s);
/* Accepts names ("Running", any case) and codes ("R"); -1 when unknown. */
int job_state_parse(const char *s);
static inline bool job_state_ended(enum job_state s)
{
	return s >= JS_FINISHED;
}

/* The login name of uid (its number when it has none). */
const char *job_user_name(uid_t uid, char *buf, size_t size);

struct job *job_new(void);
/* A copy of j's stored fields that owns what it points to (runtime fields
 * are not copied over: no dependents, no pidfd): txn.c's snapshot. */
struct job *job_clone(const struct job *j);
void job_free(struct job *j);
void job_set_reason(struct job *j, const char *reason);
void job_set_str(char **dst, const char *src);
/* Strings kept once for all jobs (job.c's pool, for as long as the daemon
 * runs): the pooled copy of s (NULL for NULL). A job's string fields are
 * freed with job_str_free, which leaves pooled ones alone; job_set_shared
 * is job_set_str with a pooled copy. Never change a pooled string. */
char *job_str_shared(const char *s);
void job_str_free(char *s);
void job_set_shared(char **dst, const char *src);
/* The fields that repeat from job to job (name, user, project, reason, cwd,
 * log_dir, conda_env, tmux_socket, command words and the command itself)
 * made pooled. */
void job_share_strings(struct job *j);
/* j's command made pooled: its words, and the vector (kept once for all
 * jobs with the same command; strv_free leaves a pooled one alone, and
 * none is ever changed). */
void job_share_argv(struct job *j);

/* Full JSON form. `log_path` may be NULL. */
json_t *job_to_json(const struct job *j, const char *log_path);
/* Only the fields named in the NULL-terminated list `only` (all if NULL). */
json_t *job_to_json_only(const struct job *j, const char *log_path, char *const *only);
bool job_field_known(const char *key);
/* Every field name a client may ask for (NULL-terminated). */
const char *const *job_field_names(void);
/* Store row → job (id is set by the caller). */
struct job *job_from_json(json_t *o, struct gf_err *e);
/* A store row's text → job without a JSON tree (jobrow.c), for the rows it
 * reads exactly as job_from_json would; NULL for any other row, which the
 * caller then reads with json_loads + job_from_json (and its errors). */
struct job *job_from_row(const char *text, size_t len);
/* The same in two steps: job_row_scan finds the fields (no allocation, no
 * state shared between threads: it may run in another thread once
 * job_row_scan_size has been called) into a slot of job_row_scan_size()
 * bytes, which points into text; job_from_scan makes the job while text is
 * still there. */
size_t job_row_scan_size(void);
void job_row_scan(const char *text, size_t len, void *slot);
struct job *job_from_scan(const void *slot);

/* The "preempt" object of a job (NULL when it has none: not preemptible,
 * never requeued, not being preempted), and the fields read back from one
 * (a malformed one is read as none). */
json_t *job_preempt_json(const struct job_more *m);
void job_preempt_read(struct job_more *m, json_t *v);

/* Helpers for reading and writing argv vectors as JSON arrays. */
json_t *strv_to_json(char *const *v);
char **strv_from_json(json_t *a, struct gf_err *e, const char *what);
void strv_free(char **v);
size_t strv_len(char *const *v);

#endif
