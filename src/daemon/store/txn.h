/* txn.h — the store layer (src/daemon/store/): SQLite (store.c, store.h),
 * a job's row (jobrow.c) and transactions (txn.c). Owns what is on disk
 * and the undo log that puts memory back when the store refuses a change.
 * May call: state, gpu, core, common. What a commit means to the layers
 * above travels as events (hooks_fire: GF_EV_JOB_CHANGED). */
#ifndef GF_TXN_H
#define GF_TXN_H

#include "server.h"

/* The i-th change of the open transaction, when it added a job (NULL
 * otherwise); i < s->txn.nundo. */
struct job *jobs_txn_added_at(struct server *s, size_t i);

/* txn.c — store transactions. Every change to jobs goes through one. A job
 * is changed in place after jobs_touch(); when the store refuses the change
 * (a failed jobs_save or commit, or jobs_txn_rollback) every touched job
 * gets back what it had, added jobs go away, and the first store error is
 * what jobs_txn_commit reports. One transaction at a time. */
int jobs_txn_begin(struct server *s, struct gf_err *e);
void jobs_touch(struct server *s, struct job *j);
int jobs_save(struct server *s, struct job *j, struct gf_err *e);
/* Store a new job and add it to the table (ids from the store); takes j. */
int jobs_insert(struct server *s, struct job *j, struct gf_err *e);
/* j takes n's stored fields (an edit), keeping its own runtime ones; frees n. */
int jobs_replace(struct server *s, struct job *j, struct job *n, struct gf_err *e);
int jobs_txn_commit(struct server *s, struct gf_err *e);
void jobs_txn_rollback(struct server *s);
/* A transaction whose commit is synced by jobs_txn_sync (store.h's
 * store_begin_sync_later): between the two only a held start may be handed
 * to the standby (standby_hand), nothing answered; standby_release lets
 * it go after. A sync that fails stops the daemon. */
int jobs_txn_begin_sync_later(struct server *s, struct gf_err *e);
void jobs_txn_sync(struct server *s);

#endif
