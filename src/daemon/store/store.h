/* store.h — the SQLite store: the write-ahead truth for jobs and settings.
 *
 * WAL mode, each commit's log synced before it returns (as synchronous=FULL
 * would: store.c's on_commit): when a write returns 0 it is on disk
 * (store_begin_sync_later: once store_sync returns 0).
 * Jobs are stored as their JSON form (job.c); ids come from an AUTOINCREMENT
 * key, so they are never reused, also after a crash. */
#ifndef GF_STORE_H
#define GF_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "job.h"

struct store;

struct store *store_open(const char *path, struct gf_err *e);
void store_close(struct store *s);

/* Did the transaction begun last fail for want of space? Its message then
 * starts "disk full:". */
bool store_full(const struct store *s);
/* Is there no room to write: the last transaction failed so, or the file
 * system of the store has (nearly) no space left for us? */
bool store_no_room(const struct store *s);

int store_begin(struct store *s, struct gf_err *e);
int store_commit(struct store *s, struct gf_err *e);
void store_rollback(struct store *s);
/* A transaction whose commit is written but not synced: until store_sync
 * returns 0 (store_unsynced says whether one is due) nothing of it may be
 * answered or acted on outside the daemon. A sync that fails leaves the
 * commit neither durable nor undoable: the caller stops. */
int store_begin_sync_later(struct store *s, struct gf_err *e);
bool store_unsynced(const struct store *s);
int store_sync(struct store *s, struct gf_err *e);
/* store_sync, or the daemon stops (exit 1, the reason on stderr): such a
 * commit is past undoing, and nothing of it was answered or started; the
 * next daemon reads the store as it is. */
void store_sync_or_stop(struct store *s);

/* Captured environments (NUL-separated KEY=VALUE), deduplicated against the
 * last one written. Returns the id, or -1. */
int64_t store_put_env(struct store *s, const char *blob, size_t len, struct gf_err *e);
int store_get_env(struct store *s, int64_t id, char **blob, size_t *len, struct gf_err *e);

/* Insert assigns and returns the new id (also stored in j->id), or -1. */
int64_t store_insert_job(struct store *s, struct job *j, struct gf_err *e);
int store_update_job(struct store *s, const struct job *j, struct gf_err *e);
/* The largest id ever handed out (0 when none). */
int64_t store_max_job_id(struct store *s);
/* Hand out ids above `floor` from now on (ids named by files on disk that
 * this store does not know). Its own transaction. */
int store_raise_job_id(struct store *s, int64_t floor, struct gf_err *e);

/* Each stored job row's text as it is (NUL-ended), in id order, to cb in
 * the caller's thread (non-zero stops). scan, when given, runs first on
 * each row in a thread of the store's own, as the rows are read (while cb
 * makes jobs of the ones before), and leaves what it finds in the row's
 * slot of slot_size bytes, which cb gets (NULL without a scan). */
typedef void (*store_job_scan)(const char *text, size_t len, void *slot);
typedef int (*store_job_cb)(void *arg, int64_t id, const char *text, size_t len, const void *slot);
int store_load_jobs(struct store *s, store_job_scan scan, size_t slot_size, store_job_cb cb, void *arg,
		    struct gf_err *e);

/* value NULL deletes. */
int store_set_setting(struct store *s, const char *key, const char *value, struct gf_err *e);
/* malloc'd value or NULL when absent. */
char *store_get_setting(struct store *s, const char *key);
/* Every setting whose key starts with prefix, in key order. */
typedef void (*store_setting_cb)(void *arg, const char *key, const char *value);
int store_each_setting(struct store *s, const char *prefix, store_setting_cb cb, void *arg, struct gf_err *e);

/* Keyed JSON rows of the fair-use tables: quota overrides (key: the
 * subject), reservations (key: the id, zero-padded), decayed usage (key: the
 * user). data NULL deletes. Inside a transaction like every write. */
enum store_table { STORE_QUOTAS, STORE_RESERVATIONS, STORE_USAGE, STORE_NTABLES };
int store_row_put(struct store *s, enum store_table t, const char *key, const json_t *data, struct gf_err *e);
/* Every row in key order; rows that are not JSON objects are named on
 * stderr and skipped. */
typedef void (*store_row_cb)(void *arg, const char *key, json_t *row);
int store_each_row(struct store *s, enum store_table t, store_row_cb cb, void *arg, struct gf_err *e);

/* The dashboard's history (history.c): one sample of the machine. */
struct store_sample {
	double t;
	int64_t gpus_used, gpus_total, queued, running, held;
};
/* Record x and drop the samples older than keep_from (autocommit). */
int store_add_sample(struct store *s, const struct store_sample *x, double keep_from, struct gf_err *e);
/* Every sample from `from` on, oldest first. */
typedef void (*store_sample_cb)(void *arg, const struct store_sample *x);
int store_each_sample(struct store *s, double from, store_sample_cb cb, void *arg, struct gf_err *e);

#endif
