/* trace.c — the start-latency trace (see trace.h): GFLOW_TRACE names a file
 * every gflow process on the submit → start path appends its steps to. The
 * file is opened once per process, O_APPEND and never through a link; each
 * line is one write(), so lines of several processes never interleave. */
#include "trace.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int trace_fd = -1;
static int trace_opened;

uint64_t gf_trace_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int gf_trace_open(void)
{
	const char *path;

	if (trace_opened)
		return trace_fd >= 0;
	trace_opened = 1;
	path = getenv("GFLOW_TRACE");
	if (!path || path[0] != '/')
		return 0;
	trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	return trace_fd >= 0;
}

int gf_trace_on(void)
{
	return trace_fd >= 0;
}

void gf_trace_at(uint64_t ns, const char *step, int64_t id)
{
	char line[128];
	int n;

	if (trace_fd < 0)
		return;
	if (!ns)
		ns = gf_trace_now();
	if (id > 0)
		n = snprintf(line, sizeof line, "%llu %s %lld\n", (unsigned long long)ns, step, (long long)id);
	else
		n = snprintf(line, sizeof line, "%llu %s -\n", (unsigned long long)ns, step);
	if (n > 0 && (size_t)n < sizeof line)
		(void)!write(trace_fd, line, (size_t)n);
}
