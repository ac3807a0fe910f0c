/* notify.h — notifications (docs/notifications.md): webhooks and mail
 * about job and system events.
 *
 * The loop builds each notification (payload, subject, body) and queues
 * it; worker threads deliver with libcurl, retrying with exponential
 * backoff. The queue is bounded: when it is full the oldest waiting
 * delivery is dropped and counted. Nothing here blocks the loop. Jobs'
 * events are taken from committed transactions (txn.c), so a change the
 * store refused is never announced. */
#ifndef GF_NOTIFY_H
#define GF_NOTIFY_H

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>

#include "err.h"

struct server;
struct job;

/* Start the workers when [notifications] enabled and a target is
 * configured (s->notify stays NULL otherwise: every hook is then a no-op).
 * After track_setup; before the loop runs. */
int notify_init(struct server *s, struct gf_err *e);
/* Stop the workers (a delivery in flight is abandoned), answer waiting
 * test requests. Before the API and the loop go. */
void notify_close(struct server *s);

/* A submission's notify_email / notify_on: well-formed, job events only,
 * (a missing mail transport is not checked here: notify_mail_transport). */
int notify_check_job(struct server *s, const struct job *j, struct gf_err *e);
/* Can per-job mail go out: notifications on and an email transport? A job
 * with notify_email is accepted without one (the submission is warned,
 * gjob show says so). */
bool notify_mail_transport(const struct server *s);
/* The one line a submission of such a job is warned with. */
const char *notify_no_transport_warning(void);

/* After a commit: job j was added (before_state -1) or changed from
 * before_state; updated when its fields were edited (gjob update). */
void notify_job_change(struct server *s, const struct job *j, int before_state, bool updated);
/* Job j has a named event that no state change tells (usage.c:
 * "job_gpu_memory_exceeded"). After its commit. */
void notify_job_event(struct server *s, const struct job *j, const char *event);
/* After the GPU views were recomputed: GPUs that became idle. */
void notify_gpus(struct server *s);
/* A reservation was made or cancelled ("reservation_created" /
 * "reservation_cancelled"); owner filters like a job's user; reservation
 * (borrowed) goes into the payload as "reservation". */
void notify_reservation(struct server *s, const char *event, const char *owner, json_t *reservation);
/* gflowd is up (scheduler_online). */
void notify_online(struct server *s);

/* /info's "notifications": enabled, targets, queued, sent, failed, dropped. */
json_t *notify_json(struct server *s);
/* gflowd status: one line about them (info is /info's answer). */
void notify_print_status(json_t *info);
/* POST /notify/test {"event": E}: one attempt to every target, answered
 * when all are done. */
void notify_api_test(struct server *s, struct evhttp_request *req, bool admin, json_t *body);

#endif
