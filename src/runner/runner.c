/* runner.c — what every file of gflow-runner may call: its voice (say():
 * our stderr, or a standby's RUNDIR/runner.out made when first needed) and
 * its clocks. It calls no other file of the runner; the files above it
 * (pane.c, supervise.c, ...) call down into it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "runfile.h"
#include "runner.h"

static double clock_secs(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double now_mono(void)
{
	return clock_secs(CLOCK_MONOTONIC);
}

double now_real(void)
{
	return clock_secs(CLOCK_REALTIME);
}

/* The output of a standby on the daemon's pipe: RUNDIR/runner.out, which
 * the daemon makes for a runner it starts itself. Made when there is
 * something to say (say()), or at once under --pty (the system daemon's
 * attach mode: the copy of the job's terminal goes there). A standby in a
 * tmux pane writes to the pane, as any runner there. */
int own_output(struct runner *r, struct gf_err *e)
{
	int fd = runfile_open_empty_at(r->dirfd, "runner.out");

	r->output_due = false;
	if (fd < 0)
		return gf_err_set(e, "cannot create %s/runner.out: %s", r->o.dir, strerror(errno));
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	return 0;
}

/* A line for whoever looks into why the job ended: our stderr, which for
 * a standby is runner.out, made now (or, when it cannot be, the daemon's). */
void say(struct runner *r, const char *fmt, ...)
{
	va_list ap;

	if (r->output_due && r->dirfd >= 0)
		own_output(r, NULL);
	va_start(ap, fmt);
	fputs("gflow-runner: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
