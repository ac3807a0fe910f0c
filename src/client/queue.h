/* queue.h — gqueue's pure parts: the columns (-f), one job object turned
 * into cells, the query sent to GET /jobs, sorting, limiting and the
 * dependency tree. The program itself is in queue.c. */
#ifndef GF_CLIENT_QUEUE_H
#define GF_CLIENT_QUEUE_H

#include <stddef.h>
#include <time.h>

#include "jsonapi.h"

#include "err.h"
#include "table.h"
#include "util.h"

enum qfield {
	QF_JOBID, QF_NAME, QF_ST, QF_STATE, QF_TIME, QF_NODES, QF_NODELIST,
	QF_TIMELIMIT, QF_MEMORY, QF_USER, QF_PROJECT, QF_EXIT, QF_PRIORITY,
	QF_SUBMIT, QF_START, QF_END, QF_GPUMEM, QF_REASON, QF_GPUIDS,
	QF_CLUSTER, /* the Slurm cluster of a gbatch --cluster job */
	QF_CPUS,
	QF_START_TIME,	/* a waiting job's expected start, else its start */
	QF_SCHEDNODES,	/* the GPUs a waiting job is expected to get */
	QF_COUNT
};

#define QUEUE_MAX_FIELDS 32

/* What the columns read of one job object: a flat view, so that a long
 * list can be read job by job without a JSON tree (qstream.c). Strings are
 * NULL when the field is absent or not a string; the has_ flags say a
 * number was there and not null; numbers read as jint/jnum read them. */
struct qjob {
	int64_t id, gpus, uid, priority, time_limit_secs, memory_mb,
	    gpu_memory_mb, exit_code, exit_signal, exceeded_mb;
	int64_t cpus; /* 1 when absent */
	double start_time, end_time, submit_time;
	int has_time_limit, has_memory, has_gpu_memory, has_exit_code,
	    has_exit_signal, memory_exceeded;
	/* asked with start=1 (GET /jobs): a queued job's expected start
	 * (has_expected: a number, not null) and GPUs ("0,1"; NULL: absent) */
	double expected_start;
	int has_expected;
	const char *expected_gpus;
	const char *name, *state, *st, *reason, *user, *project, *cluster;
	const char *gpu_ids; /* "0,1,3" as fmt_int_list writes it; NULL: absent */
	/* a running job idle reclaim measures idle: for how long, warned? */
	int64_t idle_secs;
	int idle_warned;
};

/* The view of a job object (strings point into it; gpu_ids and
 * expected_gpus into *scratch, which the caller frees). */
void qjob_from_json(const json_t *job, struct qjob *q, struct sbuf *scratch);
/* One cell of a job into b (appended; no NUL added). */
void qjob_cell(const struct qjob *q, enum qfield f, double now,
    struct sbuf *b);

/* "JOBID,NAME,ST,NODES,NODELIST(REASON)" (case-insensitive) -> fields. */
int queue_parse_fields(const char *s, enum qfield *out, size_t *n,
    struct gf_err *e);
const char *queue_field_header(enum qfield f);
/* The cell of one job (malloc'd). `now` is for the TIME of running jobs. */
char *queue_field_value(const json_t *job, enum qfield f, double now);

/* "Running,pd" -> "Running,Queued" (malloc'd), naming a bad state. */
char *queue_states_param(const char *s, struct gf_err *e);


/* Sort a JSON array of jobs in place by a field name (id, name, state,
 * user, priority, submit, start, end, time, gpus, project, expected (the
 * expected start; unknown last)); a leading '-' reverses. */
int queue_sort(json_t *jobs, const char *field, double now, struct gf_err *e);
/* -n N: keep the first N (N > 0) or the last -N (N < 0); 0 keeps all. */
void queue_limit(json_t *jobs, long long n);

/* Dependency tree order: for each printed line its job (index into jobs)
 * and the prefix to show before the id ("├─", "│ └─", ...). Dependencies
 * use solid lines; redo/retry links dotted ones ("├┈"). */
struct queue_tree_line {
	size_t job;
	char *prefix;
};
struct queue_tree_line *queue_tree(const json_t *jobs, size_t *n);
void queue_tree_free(struct queue_tree_line *l, size_t n);

/* The table of jobs with the given fields: flat, as a tree, or grouped by
 * state with a title line per group. */
enum queue_layout { QUEUE_FLAT, QUEUE_TREE, QUEUE_GROUP };
struct table *queue_table(const json_t *jobs, const enum qfield *f, size_t nf,
    enum queue_layout layout, double now);

#endif
