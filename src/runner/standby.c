/* standby.c — a runner started ahead of its job. The daemon keeps one
 * gflow-runner waiting with `--standby` and its stdin on a pipe; a job's
 * start then writes the runner's options there, and the runner goes on as
 * if started with them (saving the exec and loading of a runner on every
 * start). EOF before a whole request — the daemon stopped, was restarted,
 * or dropped this standby — ends it with nothing done. A held start
 * (--hold) waits, before the job's exec, for one more byte on the pipe. */
#include "standby.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUEST_MAX (256u << 10)	/* far above any runner command line */

/* Where the request ends in buf[from..len): the index of its last NUL
 * (the empty word's), or -1. An empty first word ends it at once. */
static long request_end(const char *buf, size_t from, size_t len)
{
	for (size_t i = from; i < len; i++)
		if (!buf[i] && (i == 0 || !buf[i - 1]))
			return (long)i;
	return -1;
}

/* After the request: what came with it (one byte at most is looked at),
 * else the pipe, kept on a descriptor of its own. */
static void after_request(const char *rest, size_t nrest, bool eof, enum standby_after *after, int *pipe_out)
{
	*pipe_out = -1;
	if (nrest)
		*after = rest[0] == 'g' ? STANDBY_GO : STANDBY_EOF;
	else if (eof)
		*after = STANDBY_EOF;
	else if ((*pipe_out = fcntl(0, F_DUPFD_CLOEXEC, 3)) >= 0)
		*after = STANDBY_OPEN;
	else
		*after = STANDBY_EOF;	/* cannot wait for it: given up */
}

int standby_wait(const char *argv0, int *argc_out, char ***argv_out, enum standby_after *after, int *pipe_out)
{
	size_t len = 0, n = 0, cap = 4096;
	char *buf = malloc(cap), **argv;
	long end = -1;
	bool eof = false;
	int fd;

	if (!buf)
		return -1;
	while (end < 0) {
		ssize_t got;

		if (len == cap) {
			char *p = cap < REQUEST_MAX ? realloc(buf, cap * 2) : NULL;

			if (!p) {
				int err = cap >= REQUEST_MAX ? E2BIG : errno;

				free(buf);
				errno = err;
				return -1;
			}
			buf = p;
			cap *= 2;
		}
		got = read(0, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return -1;
		}
		if (got == 0) {
			eof = true;
			break;
		}
		end = request_end(buf, len ? len - 1 : 0, len + (size_t)got);
		len += (size_t)got;
	}
	/* Whole: at least one word, every word ended, then an empty one. */
	if (end < 2) {
		free(buf);
		return 1;
	}
	after_request(buf + end + 1, len - (size_t)end - 1, eof, after, pipe_out);
	len = (size_t)end + 1;
	for (size_t i = 0; i + 1 < len; i += strlen(buf + i) + 1)
		n++;
	argv = malloc((n + 2) * sizeof *argv + len);
	if (!argv) {
		free(buf);
		if (*pipe_out >= 0)
			close(*pipe_out);
		return -1;
	}
	memcpy(argv + n + 2, buf, len);
	free(buf);
	buf = (char *)(argv + n + 2);
	argv[0] = (char *)argv0;
	n = 1;
	for (size_t i = 0; i + 1 < len; i += strlen(buf + i) + 1)
		argv[n++] = buf + i;
	argv[n] = NULL;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	*argc_out = (int)n;
	*argv_out = argv;
	return 0;
}

bool standby_released(int pipe)
{
	char c;
	ssize_t got;

	do
		got = read(pipe, &c, 1);
	while (got < 0 && errno == EINTR);
	return got == 1 && c == 'g';
}

void standby_retitle(char **argv, const char *job)
{
	char *start = argv[1], *end = start;
	char title[64];
	int n;

	if (!start)
		return;
	for (int i = 1; argv[i]; i++)
		end = argv[i] + strlen(argv[i]);	/* the words lie one after another */
	n = snprintf(title, sizeof title, "--job %s", job);
	if (n < 0 || n > end - start)
		return;
	memset(start, 0, (size_t)(end - start));
	memcpy(start, title, (size_t)n);
}
