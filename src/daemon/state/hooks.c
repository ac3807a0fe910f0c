/* hooks.c — events up the layers (hooks.h), and the wish for a pass. */
#include "server.h"

#include <stdlib.h>

void hooks_on(struct server *s, const struct gf_hook_entry *table, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum gf_event ev = table[i].ev;

		if (ev >= GF_EV_COUNT || s->hooks.n[ev] == GF_HOOKS_PER_EVENT)
			abort();
		s->hooks.fn[ev][s->hooks.n[ev]++] = table[i].fn;
	}
}

int hooks_fire(struct server *s, enum gf_event ev, void *arg)
{
	for (unsigned i = 0; i < s->hooks.n[ev]; i++) {
		int rc = s->hooks.fn[ev][i](s, arg);

		if (rc)
			return rc;
	}
	return 0;
}

void server_schedule(struct server *s)
{
	static const struct timeval now = { 0, 0 };

	if (s->sched_ev && !evtimer_pending(s->sched_ev, NULL))
		evtimer_add(s->sched_ev, &now);
}
