/* idle.c — the idle clock (idle.h). Pure: no clock, no I/O. */
#include "idle.h"

#include <stdio.h>
#include <string.h>

static bool sample_idle(const struct idle_clock *c, const struct idle_rule *r, const struct idle_sample *s)
{
	if (s->ngpu == 0 || s->ngpu > IDLE_MAX_GPUS)
		return false;
	for (size_t i = 0; i < s->ngpu; i++)
		if (s->util[i] < 0 || s->util[i] >= r->threshold_util)
			return false;
	if (c->have_mem && (c->nmem != s->ngpu || memcmp(c->mem, s->mem_mb, s->ngpu * sizeof *s->mem_mb)))
		return false;
	return true;
}

enum idle_event idle_step(struct idle_clock *c, const struct idle_rule *r, const struct idle_sample *s)
{
	bool idle = sample_idle(c, r, s), was_warned = c->warned_at > 0;

	if (s->ngpu <= IDLE_MAX_GPUS) {
		memcpy(c->mem, s->mem_mb, s->ngpu * sizeof *s->mem_mb);
		c->nmem = s->ngpu;
		c->have_mem = true;
	} else
		c->have_mem = false;
	if (!idle) {
		c->since = c->warned_at = 0;
		c->acted = false;
		return was_warned ? IDLE_CLEARED : IDLE_NOTHING;
	}
	if (c->since <= 0) {
		c->since = s->now;
		return IDLE_NOTHING;
	}
	if (!was_warned) {
		if (s->now - c->since >= (double)r->after_secs) {
			c->warned_at = s->now;
			return IDLE_WARN;
		}
		return IDLE_NOTHING;
	}
	if (!c->acted && s->now - c->warned_at >= (double)r->warn_before_secs) {
		c->acted = true;
		return IDLE_ACT;
	}
	return IDLE_NOTHING;
}

double idle_for(const struct idle_clock *c, double now)
{
	return c->since > 0 && now > c->since ? now - c->since : 0;
}

void idle_fmt_hms(double secs, char *buf, size_t size)
{
	long long t = secs > 0 ? (long long)secs : 0;

	snprintf(buf, size, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}

void idle_fmt_hm(double secs, char *buf, size_t size)
{
	long long t = secs > 0 ? (long long)secs : 0;

	snprintf(buf, size, "%lld:%02lld", t / 3600, t / 60 % 60);
}
