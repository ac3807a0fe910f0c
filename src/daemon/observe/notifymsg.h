/* notifymsg.h — the text of notifications (notifymsg.c), for notify.c. */
#ifndef GF_NOTIFYMSG_H
#define GF_NOTIFYMSG_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"

/* The job fields a payload carries (NULL-terminated). */
extern const char *const notify_payload_job_fields[];

/* {"event", "timestamp" (RFC 3339, UTC), <what>: obj (stolen; what and obj
 * may be NULL), "scheduler": {"host", "version"}} */
json_t *notify_payload(const char *host, const char *event, const char *what, json_t *obj);

/* The whole mail for target m to these recipients about payload p (CRLF
 * lines; malloc'd). seq makes its Message-ID unique within this daemon. */
char *notify_mail(const char *host, unsigned long long seq, const struct gf_email *m, char *const *to, size_t nto,
		  const char *event, json_t *p);

#endif
