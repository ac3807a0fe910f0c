/* events.h — the names of notification events (docs/notifications.md):
 * one list shared by the config reader, gbatch and the daemon. */
#ifndef GF_EVENTS_H
#define GF_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Every event, in the documented order; the first GF_JOB_EVENTS are about
 * one job (the ones per-job mail may ask for). NULL-terminated. */
extern const char *const gf_events[];
#define GF_JOB_EVENTS 11

/* Is name an event (job_only: one of the job events)? */
bool gf_event_known(const char *name, bool job_only);

/* A comma list of job events ("job_failed,job_timeout"), as gbatch
 * --notify-on and the API's notify_on take it. 0, or -1 with e naming the
 * bad part. */
int gf_events_check_list(const char *list, struct gf_err *e);

/* Is event in the comma list (NULL: the default per-job events,
 * job_completed, job_failed, job_timeout, job_cancelled)? */
bool gf_events_list_has(const char *list, const char *event);

/* One or more mail addresses, comma-separated ("a@b.org,c@d.org"): each
 * with one '@', no spaces, control characters or <>"(),;. 0, or -1. */
int gf_mail_check_list(const char *list, struct gf_err *e);

#endif
