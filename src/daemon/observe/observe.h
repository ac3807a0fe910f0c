/* observe.h — the observe layer (src/daemon/observe/): what is told about
 * the daemon. notify.c, notifymsg.c, curlapi.c (notifications), metrics.c
 * (GET /metrics), history.c (the dashboard's history). Reads the layers
 * below; changes nothing of theirs. May call: engine (reads), share, run,
 * store, state, gpu, core, common. */
#ifndef GF_OBSERVE_H
#define GF_OBSERVE_H

#include "engine.h"
#include "notify.h"

/* metrics.c — GET /metrics, and the timings it reports */
void metrics_get(struct server *s, struct evhttp_request *req);
double metrics_clock(void);	/* monotonic seconds */
void metrics_observe(struct histogram *h, double secs);
/* One API request: method and route static strings (route: the route
 * table's pattern), status its answer's (0: the answer comes later). */
void metrics_observe_api(struct server *s, const char *method, const char *route, int status, double secs);
void metrics_close(struct server *s);

/* history.c — the dashboard's history ring and GET /history */
int history_init(struct server *s, struct gf_err *e);	/* after the store and the loop */
void history_close(struct server *s);
json_t *history_json(struct server *s);	/* GET /history's answer */

#endif
