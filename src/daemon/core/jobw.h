/* jobw.h — a job's JSON object written straight into a jsonw buffer, the
 * same bytes as json_dumps(job_to_json_only(...), JSON_COMPACT) (job.c),
 * for listings that must not build a tree per job. Which fields: a bit
 * mask over the job's fields, made once per request from a field list. */
#ifndef GF_JOBW_H
#define GF_JOBW_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"
#include "jsonw.h"

/* The mask of the fields named in the NULL-terminated list `only` (every
 * field when NULL). Names that are not job fields are left out. */
uint64_t jobw_mask(char *const *only);

/* Is the field `key` in mask? */
bool jobw_has(uint64_t mask, const char *key);

/* The members of j's object (no braces) in job_to_json_only's order;
 * `*first` says whether none was written before (and is cleared when one
 * is). `log_path` may be NULL. */
void jobw_members(struct jsonw *w, const struct job *j, const char *log_path, uint64_t mask, bool *first);

/* The store's row of j: its object without "id" (the row's key) and
 * without "log_path", as json_dumps(job_to_json(j, NULL)) less "id" would
 * write it. Never NULL (allocation failure aborts); free() it. */
char *jobw_row(const struct job *j);

/* One member key: a comma unless first, then "key":. */
void jobw_key(struct jsonw *w, const char *key, bool *first);

#endif
