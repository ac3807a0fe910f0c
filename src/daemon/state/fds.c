/* fds.c — the daemon's file descriptors under pressure.
 *
 * Other users can make the daemon hold descriptors (connections, each
 * refused or capped per user by api_listen.c, but accepted first). What
 * the daemon does for jobs — a start, reading a runner's result, watching
 * a runner — must not fail because of that: each first asks for room
 * (fd_room) and, when there is none, waits and tries again instead of
 * recording a failure. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* What a job's start or end may open at once (run directory, lists,
 * runner.out, pipes of a spawn, a pidfd, the store's journal), with some
 * to spare. */
#define FD_ROOM 16

/* /dev/null, opened at start: fd_room counts room by duplicating it (a
 * dup takes a slot of the table; an open of /dev/null also walks its path
 * and makes a file, several times the cost, and a start or an end asks
 * several times). -1: fd_room opens /dev/null instead. */
static int probe = -1;

void fd_limit_raise(void)
{
	struct rlimit rl;

	if (probe < 0)
		probe = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			fprintf(stderr, "gflowd: cannot raise the open-files limit to %llu: %s\n",
				(unsigned long long)rl.rlim_max, strerror(errno));
	}
}

long fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1L << 30)
		return 1L << 30;
	return (long)rl.rlim_cur;
}

bool fd_room(void)
{
	int fds[FD_ROOM], n = 0;
	bool ok = true;

	for (; n < FD_ROOM; n++)
		if ((fds[n] = probe >= 0 ? fcntl(probe, F_DUPFD_CLOEXEC, 0) : open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
			ok = errno != EMFILE && errno != ENFILE;
			break;
		}
	while (n > 0)
		close(fds[--n]);
	return ok;
}

bool fd_short(int err)
{
	return err == EMFILE || err == ENFILE;
}

void fd_note(const char *fmt, ...)
{
	static double last;
	static unsigned long more;
	double now = now_mono();
	char msg[512];
	va_list ap;

	if (now - last < 1.0) {
		more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (more)
		fprintf(stderr, "gflowd: %s (%lu more like it since the last such line)\n", msg, more);
	else
		fprintf(stderr, "gflowd: %s\n", msg);
	last = now;
	more = 0;
}

static bool retry_armed;

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	retry_armed = false;
	server_schedule(arg);
}

void fd_retry_pass(struct server *s)
{
	struct timeval tv = { 1, 0 };

	if (!retry_armed && event_base_once(s->base, -1, EV_TIMEOUT, on_retry, s, &tv) == 0)
		retry_armed = true;
}
