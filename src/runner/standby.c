/* standby.c — a runner started ahead of its job. The daemon keeps one
 * gflow-runner waiting with `--standby` and its stdin on a pipe; a job's
 * start then writes the runner's options there and closes the pipe, and
 * the runner goes on as if started with them (saving the exec and loading
 * of a runner on every start). EOF before a whole request — the daemon
 * stopped, was restarted, or dropped this standby — ends it with nothing
 * done. */
#include "standby.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUEST_MAX (256u << 10)	/* far above any runner command line */

int standby_wait(const char *argv0, int *argc_out, char ***argv_out)
{
	size_t len = 0, n = 0, cap = 4096;
	char *buf = malloc(cap), **argv;
	int fd;

	if (!buf)
		return -1;
	for (;;) {
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
		if (got == 0)
			break;
		len += (size_t)got;
	}
	/* Whole: at least one word, every word ended, then an empty one. */
	if (len < 3 || buf[len - 1] || buf[len - 2] || !buf[0]) {
		free(buf);
		return 1;
	}
	for (size_t i = 0; i + 1 < len; i += strlen(buf + i) + 1)
		n++;
	argv = malloc((n + 2) * sizeof *argv + len);
	if (!argv) {
		free(buf);
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
