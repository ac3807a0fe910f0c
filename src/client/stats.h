/* stats.h — gstats' pure part: per-user totals of a job list. */
#ifndef GF_CLIENT_STATS_H
#define GF_CLIENT_STATS_H

#include <jansson.h>

#include "table.h"

/* USER JOBS RUNNING QUEUED HOLD FINISHED FAILED CANCELLED TIMEOUT
 * GPU_HOURS GPU_UTIL [SHARE_GPU_HOURS], one row per user (sorted by name)
 * and a TOTAL row when there is more than one user. GPU-hours count GPUs x
 * run time (to `now` for running jobs); GPU_UTIL is the mean utilisation
 * the daemon measured (gpu_usage), weighted by GPU-hours, "-" when none is
 * known. usage: {"user": decayed GPU-seconds} for a SHARE_GPU_HOURS column,
 * or NULL for none. */
struct table *stats_table(const json_t *jobs, double now, const json_t *usage);

#endif
