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
#include <poll.h>
#include <signal.h>
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

/* A FIFO's reader (tmux) waits for the daemon to open it: until then a
 * read says EOF. Waits until there is something to read, or the daemon is
 * gone (checked every second): 0, or 1 then. */
static int wait_writer(int fd, pid_t daemon)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	while ((n = poll(&p, 1, daemon > 0 ? 1000 : -1)) <= 0)
		if (n == 0 && kill(daemon, 0) && errno == ESRCH)
			return 1;
	return 0;
}

/* Read what is there into buf[*len..cap), growing it up to REQUEST_MAX.
 * 1 on EOF, -1 (errno set) when it cannot. fifo: see wait_writer. */
static int read_more(int fd, bool fifo, pid_t daemon, char **buf, size_t *len, size_t *cap)
{
	ssize_t got;

	if (*len == *cap) {
		char *p = *cap < REQUEST_MAX ? realloc(*buf, *cap * 2) : NULL;

		if (!p) {
			if (*cap >= REQUEST_MAX)
				errno = E2BIG;
			return -1;
		}
		*buf = p;
		*cap *= 2;
	}
	for (;;) {
		if (fifo && wait_writer(fd, daemon))
			return 1;
		got = read(fd, *buf + *len, *cap - *len);
		if (got >= 0 || (errno != EINTR && !(fifo && errno == EAGAIN)))
			break;
	}
	if (got < 0)
		return -1;
	*len += (size_t)got;
	return got == 0;
}

int standby_wait(int in, bool fifo, pid_t daemon, const char *argv0, int *argc_out, char ***argv_out,
		 struct standby_pipe *p)
{
	size_t len = 0, n = 0, cap = 4096;
	char *buf = malloc(cap), **argv;
	long end = -1;
	int rc = 0, fd;

	if (!buf)
		return -1;
	while (end < 0 && rc == 0) {
		size_t from = len ? len - 1 : 0;

		rc = read_more(in, fifo, daemon, &buf, &len, &cap);
		if (rc < 0) {
			int err = errno;

			free(buf);
			errno = err;
			return -1;
		}
		end = request_end(buf, from, len);
	}
	/* Whole: at least one word, every word ended, then an empty one. */
	if (end < 2) {
		free(buf);
		return 1;
	}
	for (long i = 0; i + 1 < end; i += (long)strlen(buf + i) + 1)
		n++;
	argv = malloc((n + 2) * sizeof *argv + (size_t)end + 1);
	p->nrest = len - (size_t)end - 1;
	p->rest = malloc(p->nrest + 1);
	if (rc) {
		p->fd = -1;	/* ended with the request */
		if (in != 0)
			close(in);
	} else if (fifo) {
		/* It has had its writer: blocking reads end at its EOF. */
		p->fd = in;
		fcntl(in, F_SETFL, fcntl(in, F_GETFL) & ~O_NONBLOCK);
	} else if (in != 0)
		p->fd = in;	/* the socket a job before this one was told on */
	else
		p->fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (!argv || !p->rest) {
		free(argv);
		free(buf);
		standby_pipe_close(p);
		errno = ENOMEM;
		return -1;
	}
	memcpy(p->rest, buf + end + 1, p->nrest);
	memcpy(argv + n + 2, buf, (size_t)end + 1);
	free(buf);
	buf = (char *)(argv + n + 2);
	argv[0] = (char *)argv0;
	n = 1;
	for (long i = 0; i + 1 < end; i += (long)strlen(buf + i) + 1)
		argv[n++] = buf + i;
	argv[n] = NULL;
	fd = fifo || in != 0 ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd > 0) {
		dup2(fd, 0);
		close(fd);
	}
	*argc_out = (int)n;
	*argv_out = argv;
	return 0;
}

int standby_take(struct standby_pipe *p, size_t n, char **out)
{
	size_t len = p->nrest, cap = len > n ? len : n;
	char *buf;

	if (n > REQUEST_MAX || !(buf = malloc(cap + 1)))
		return -1;
	memcpy(buf, p->rest, len);
	while (len < n) {
		ssize_t got;

		if (p->fd < 0) {
			free(buf);
			return -1;
		}
		do
			got = read(p->fd, buf + len, n - len);
		while (got < 0 && errno == EINTR);
		if (got <= 0) {
			close(p->fd);
			p->fd = -1;
			free(buf);
			return -1;
		}
		len += (size_t)got;
	}
	/* What is left over stays in rest. */
	memmove(p->rest, buf + n, len - n);
	p->nrest = len - n;
	buf[n] = '\0';
	*out = buf;
	return 0;
}

int standby_let_go(const struct standby_pipe *p)
{
	if (p->nrest)
		return p->rest[0] == 'g';
	return p->fd < 0 ? 0 : -1;
}

bool standby_released(int fd)
{
	char c;
	ssize_t got;

	do
		got = read(fd, &c, 1);
	while (got < 0 && errno == EINTR);
	return got == 1 && c == 'g';
}

void standby_pipe_close(struct standby_pipe *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	free(p->rest);
	p->rest = NULL;
	p->nrest = 0;
}

void standby_retitle(char **argv, const char *job)
{
	static char *start, *end;	/* the words after argv[0]: found once, before they are written over */
	char title[64];
	int n;

	if (!start) {
		if (!argv[1])
			return;
		start = end = argv[1];
		for (int i = 1; argv[i]; i++)
			end = argv[i] + strlen(argv[i]);	/* the words lie one after another */
	}
	n = job ? snprintf(title, sizeof title, "--job %s", job) : snprintf(title, sizeof title, "--standby");
	if (n < 0 || n > end - start)
		return;
	memset(start, 0, (size_t)(end - start));
	memcpy(start, title, (size_t)n);
}
