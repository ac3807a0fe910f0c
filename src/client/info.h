/* info.h — ginfo's and gctl show-gpus' pure parts: how each GPU of a
 * GET /gpus answer is classified and shown. */
#ifndef GF_CLIENT_INFO_H
#define GF_CLIENT_INFO_H

#include "jsonapi.h"

#include "table.h"

/* Situations in the order ginfo lists them. */
enum gpu_situation {
	GPU_IDLE, GPU_RESERVED, GPU_ALLOCATED, GPU_SHARED, GPU_UNMANAGED,
	GPU_RESTRICTED, GPU_DOWN, GPU_OTHER
};

/* Classify one GPU object of GET /gpus. */
enum gpu_situation info_situation(const json_t *gpu);
/* "idle", "allocated", ...; GPU_OTHER gives the daemon's own state. */
const char *info_situation_name(enum gpu_situation s, const json_t *gpu);

/* The ginfo table (PARTITION GPUS NODES STATE JOB(REASON)): one row per
 * group of GPUs in the same situation, allocated GPUs grouped per job.
 * NULL when the answer lists no GPU. */
struct table *info_table(const json_t *gpus_answer);
/* ginfo -l: one row per GPU (INDEX NAME MEMORY UTIL STATE JOBS). */
struct table *info_long_table(const json_t *gpus_answer);
/* "No GPUs: <status>" (malloc'd, no newline). */
char *info_no_gpus_line(const json_t *gpus_answer);

/* gctl show-gpus: "<index> available|in_use [restricted] [reason]", one
 * line per GPU, newline-terminated (malloc'd). */
char *info_show_gpus_text(const json_t *gpus_answer);

/* ginfo --timeline: GET /timeline drawn as text, newline-terminated lines
 * (malloc'd): a header naming the column size, hour and day labels, the
 * current time marked, one row per GPU (capital letter = a running job,
 * small letter = a waiting job's expected start, digit = a reservation,
 * '.' = free), then the legend. Columns are 30 minutes, wider for long
 * ranges so a row stays within 160 characters. Local time (TZ). */
char *info_timeline_text(const json_t *timeline);

#endif
