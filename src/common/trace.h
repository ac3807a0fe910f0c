/* trace.h — the start-latency trace: with GFLOW_TRACE set to an absolute
 * path, the processes on the submit → start path append one line per step,
 * "<CLOCK_MONOTONIC ns> <step> <job id or ->", each with one write(). Unset,
 * it costs one getenv at start. */
#ifndef GF_TRACE_H
#define GF_TRACE_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t gf_trace_now(void);

/* Opens $GFLOW_TRACE (once per process; later calls do nothing). Returns
 * whether tracing is on. */
int gf_trace_open(void);

/* Whether gf_trace_open found a trace file. */
int gf_trace_on(void);

/* One line: step at `ns` (0: now) for job `id` (<= 0: "-"). */
void gf_trace_at(uint64_t ns, const char *step, int64_t id);

static inline void gf_trace(const char *step, int64_t id)
{
	gf_trace_at(0, step, id);
}

#endif
