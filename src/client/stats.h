/* stats.h — gstats' pure part: the metrics of a job list, per-user totals. */
#ifndef GF_CLIENT_STATS_H
#define GF_CLIENT_STATS_H

#include "jsonapi.h"

#include "table.h"

/* USER JOBS RUNNING QUEUED HOLD FINISHED FAILED CANCELLED TIMEOUT
 * GPU_HOURS GPU_UTIL [SHARE_GPU_HOURS], one row per user (sorted by name)
 * and a TOTAL row when there is more than one user. GPU-hours count GPUs x
 * run time (to `now` for running jobs); GPU_UTIL is the mean utilisation
 * the daemon measured (gpu_usage), weighted by GPU-hours, "-" when none is
 * known. usage: {"user": decayed GPU-seconds} for a SHARE_GPU_HOURS column,
 * or NULL for none. */
struct table *stats_table(const json_t *jobs, double now, const json_t *usage);

/* The metrics of a job list (GET /jobs objects) at time now, as a JSON
 * object: total_jobs, completed/failed/cancelled/timeout/running/queued/
 * held_jobs, avg_wait_secs (submit to start, started jobs),
 * avg_runtime_secs (ended runs), total_gpu_hours (running jobs up to now),
 * jobs_with_gpus, avg_gpus_per_job (among those), peak_gpu_usage (most
 * GPUs held at one moment), success_rate (percent finished among ended
 * jobs), mean_gpu_util_pct (the utilisation the daemon measured, weighted
 * by GPU-seconds; null when none is known), and top_jobs (the 5 longest
 * ended runs). */
json_t *stats_compute(const json_t *jobs, double now);

/* "metric,value" rows of every number of stats_compute (malloc'd). */
char *stats_csv(const json_t *stats);

/* The table view: scope names whose jobs these are; usage (fair share's
 * {"user": decayed GPU-seconds}, or NULL) adds per-user rows with it. */
char *stats_text(const json_t *stats, const char *scope, struct table *per_user);
/* The per-user rows of GET /stats's "users". */
struct table *stats_table_users(const json_t *rows, const json_t *usage);

#endif
