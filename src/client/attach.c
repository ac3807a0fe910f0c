/* attach.c — `gjob attach` to a job of the system daemon: through the
 * attach socket its runner offers (the wire: attachwire.h), not tmux.
 *
 * It connects, reads the runner's first line (let in, or the rule that
 * keeps the caller out), then puts the terminal in raw mode — restored on
 * every way out — and relays: the job's output to stdout, keys to the job,
 * the window size at the start and on every SIGWINCH. Ctrl-b d detaches
 * (Ctrl-b Ctrl-b sends one Ctrl-b); the job runs on. */
#include "attach.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "attachwire.h"
#include "command.h"
#include "paths.h"
#include "runfile.h"

static const char *PROG = "gjob";	/* galloc sets its own (attach_session) */
#define PREFIX_KEY 0x02		/* Ctrl-b, as in tmux */
#define DETACH_KEY 'd'
#define HELLO_WAIT_MS 10000

static int send_frame(int sock, int type, const void *data, size_t n)
{
	unsigned char head[3] = { (unsigned char)type, (unsigned char)(n >> 8), (unsigned char)n };

	return gf_write_all(sock, head, sizeof head) || gf_write_all(sock, data, n) ? -1 : 0;
}

static int send_winsize(int sock)
{
	struct winsize ws;
	unsigned char b[4];

	if (ioctl(1, TIOCGWINSZ, &ws) && ioctl(0, TIOCGWINSZ, &ws))
		return 0;
	b[0] = (unsigned char)(ws.ws_row >> 8);
	b[1] = (unsigned char)ws.ws_row;
	b[2] = (unsigned char)(ws.ws_col >> 8);
	b[3] = (unsigned char)ws.ws_col;
	return send_frame(sock, ATTACH_FRAME_SIZE, b, sizeof b);
}

/* Connect; a refusal of the file system is the same rule the runner says.
 * A socket not there yet, or not yet listening, is tried again for up to
 * wait_ms (a runner that is starting). */
static int connect_to(long long id, const char *path, const char *owner, int wait_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "%s: job %lld: the attach socket path %s is too long\n", PROG, id, path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
again:
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "%s: socket: %s\n", PROG, strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		struct gf_err e;

		/* The runner is root's (or, for a daemon of the user's own,
		 * the user's): keys go to no one else. */
		if (gf_peer_trusted(fd, path, &e) == 0)
			return fd;
		fprintf(stderr, "%s: %s\n", PROG, e.msg);
		close(fd);
		return -1;
	}
	err = errno;
	close(fd);
	if ((err == ENOENT || err == ECONNREFUSED) && wait_ms > 0) {
		usleep(50000);
		wait_ms -= 50;
		goto again;
	}
	if (err == EACCES || err == EPERM)
		fprintf(stderr, "%s: job %lld belongs to %s; only %s or an admin may attach\n", PROG, id,
			owner ? owner : "another user", owner ? owner : "its owner");
	else if (err == ENOENT || err == ECONNREFUSED)
		fprintf(stderr, "%s: job %lld has no attach socket at %s (it is starting or ending); "
			"see its output with: gjob log %lld\n", PROG, id, path, id);
	else
		fprintf(stderr, "%s: job %lld: cannot connect to %s: %s\n", PROG, id, path, strerror(err));
	return -1;
}

/* The runner's first line. Bytes after it (the replay) stay in buf:
 * *have of them from *start. Returns 0 when let in. */
static int hello(long long id, int sock, char *buf, size_t size, size_t *start, size_t *have)
{
	size_t len = 0;
	char *nl = NULL;

	while (!nl && len < size - 1) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, HELLO_WAIT_MS) == 0) {
			fprintf(stderr, "%s: job %lld: its runner did not answer\n", PROG, id);
			return -1;
		}
		n = read(sock, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "%s: job %lld has ended; see its output with: gjob log %lld\n", PROG, id,
				id);
			return -1;
		}
		len += (size_t)n;
		buf[len] = '\0';
		nl = memchr(buf, '\n', len);
	}
	if (nl && !strncmp(buf, "gflow: ", 7)) {
		*nl = '\0';
		fprintf(stderr, "%s: %s\n", PROG, buf + 7);
		return -1;
	}
	if (!nl || strncmp(buf, ATTACH_HELLO " ", sizeof ATTACH_HELLO)) {
		fprintf(stderr, "%s: job %lld: its attach socket does not speak gflow's protocol\n", PROG, id);
		return -1;
	}
	*start = (size_t)(nl + 1 - buf);
	*have = len - *start;
	return 0;
}

size_t attach_filter_keys(const unsigned char *in, size_t n, int *prefix, unsigned char *out, int *detach)
{
	size_t len = 0;

	*detach = 0;
	for (size_t i = 0; i < n && !*detach; i++) {
		unsigned char c = in[i];

		if (*prefix) {
			*prefix = 0;
			if (c == DETACH_KEY)
				*detach = 1;
			else if (c == PREFIX_KEY)
				out[len++] = c;
			else {
				out[len++] = PREFIX_KEY;
				out[len++] = c;
			}
		} else if (c == PREFIX_KEY)
			*prefix = 1;
		else
			out[len++] = c;
	}
	return len;
}

/* Keys typed: to the job in frames, but for Ctrl-b d. Returns 1 on
 * detach, -1 when the runner is gone. */
static int relay_keys(int sock, const unsigned char *in, size_t n, int *prefix, bool keys_as_typed)
{
	static unsigned char out[65536 + 1];
	int detach = 0;
	size_t len = n;

	if (n > sizeof out - 1)
		n = len = sizeof out - 1;
	if (keys_as_typed)
		memcpy(out, in, n);
	else
		len = attach_filter_keys(in, n, prefix, out, &detach);
	for (size_t off = 0; off < len; off += ATTACH_FRAME_MAX)
		if (send_frame(sock, ATTACH_FRAME_KEYS, out + off,
			       len - off < ATTACH_FRAME_MAX ? len - off : ATTACH_FRAME_MAX))
			return -1;
	return detach;
}

/* Relay until a detach, the job's end, or a signal to stop. */
static enum attach_how relay(int sock, int sigfd, const struct attach_mode *m, int *signo)
{
	int prefix = 0, in_open = 1;

	for (;;) {
		struct pollfd fds[3] = {
			{ .fd = sock, .events = POLLIN },
			{ .fd = in_open ? 0 : -1, .events = POLLIN },
			{ .fd = sigfd, .events = POLLIN },
		};
		unsigned char buf[65536];
		ssize_t n;

		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return BROKEN;
		}
		if (fds[0].revents) {
			n = read(sock, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return ENDED;
			if (gf_write_all(1, buf, (size_t)n))	/* EIO: the terminal hung up */
				return errno == EIO || errno == EPIPE ? DETACHED : BROKEN;
		}
		if (fds[1].revents) {
			int r;

			n = read(0, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 && m->pipe && !m->tty) {
				/* Piped input has ended: an end of file (^D)
				 * for the job, whose output still comes. */
				static const unsigned char eot = 0x04;

				in_open = 0;
				if (send_frame(sock, ATTACH_FRAME_KEYS, &eot, 1))
					return ENDED;
				continue;
			}
			if (n <= 0)
				return DETACHED;	/* the terminal is gone */
			r = relay_keys(sock, buf, (size_t)n, &prefix, m->keys_as_typed);
			if (r)
				return r > 0 ? DETACHED : ENDED;
		}
		if (fds[2].revents) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof si) != (ssize_t)sizeof si)
				continue;
			if (si.ssi_signo != SIGWINCH) {
				*signo = (int)si.ssi_signo;
				return DETACHED;	/* SIGTERM, SIGHUP, SIGINT: leave, the job runs on */
			}
			if (send_winsize(sock))
				return ENDED;
		}
	}
}

enum attach_how attach_session(long long id, const char *sock_path, const char *owner, struct attach_mode *m)
{
	char buf[4096];
	size_t start = 0, have = 0;
	struct termios saved, raw;
	sigset_t set, old;
	int sock, sigfd;
	enum attach_how how;

	PROG = m->prog;
	m->signo = 0;
	if ((sock = connect_to(id, sock_path, owner, m->connect_wait_ms)) < 0)
		return REFUSED;
	if (hello(id, sock, buf, sizeof buf, &start, &have)) {
		close(sock);
		return REFUSED;
	}
	errno = 0;
	m->tty = isatty(0) && isatty(1) && tcgetattr(0, &saved) == 0;
	if (!m->tty && errno == EIO) {
		/* the terminal hung up already, as the relay would have found */
		close(sock);
		return DETACHED;
	}
	if (!m->tty && !m->pipe) {
		fprintf(stderr, "%s: attach needs a terminal (stdin and stdout); follow the output with: "
			"gjob log %lld --follow\n", PROG, id);
		close(sock);
		return REFUSED;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, &old) || (sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", PROG, strerror(errno));
		close(sock);
		return BROKEN;
	}
	if (m->hello)
		fprintf(stderr, "%s\n", m->hello);
	/* Keys go through raw (^C reaches the job); output still gets "\r\n". */
	raw = saved;
	if (m->tty) {
		cfmakeraw(&raw);
		raw.c_oflag |= OPOST | ONLCR;
	}
	if (m->tty && tcsetattr(0, TCSADRAIN, &raw)) {
		/* EIO: it hung up already, as the relay would have found */
		if (errno != EIO)
			fprintf(stderr, "%s: cannot set the terminal to raw mode: %s\n", PROG, strerror(errno));
		how = errno == EIO ? DETACHED : BROKEN;
	} else {
		if (send_winsize(sock))
			how = ENDED;
		else if (have && gf_write_all(1, buf + start, have))	/* EIO: the terminal hung up */
			how = errno == EIO || errno == EPIPE ? DETACHED : BROKEN;
		else
			how = relay(sock, sigfd, m, &m->signo);
		if (m->tty)
			tcsetattr(0, TCSADRAIN, &saved);
	}
	close(sock);
	close(sigfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return how;
}

int attach_job(long long id, const char *sock_path, const char *owner)
{
	struct attach_mode m = { .prog = "gjob" };
	char hello[128];
	enum attach_how how;

	snprintf(hello, sizeof hello, "gjob: attached to job %lld; detach with Ctrl-b d", id);
	m.hello = hello;
	how = attach_session(id, sock_path, owner, &m);
	if (how == DETACHED) {
		fprintf(stderr, "\r\n%s: detached from job %lld (it runs on)\n", PROG, id);
		return EXIT_OK;
	}
	if (how == ENDED) {
		fprintf(stderr, "\r\n%s: job %lld has ended; see its output with: gjob log %lld\n", PROG, id, id);
		return EXIT_OK;
	}
	return EXIT_FAIL;
}

int attach_tmux_verified(const char *sock, struct gf_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[4096];
	struct gf_err why;
	int fd, rc;

	if (gf_socket_dir(dir, sizeof dir, sock) < 0 || strlen(sock) >= sizeof sa.sun_path)
		return gf_err_set(e, "the tmux socket path %s is too long", sock);
	rc = gf_private_dir(dir, &why);
	if (rc < 0)
		return gf_err_set(e, "refusing %s: its directory %s", sock, why.msg);
	if (rc > 0)
		return gf_err_set(e, "tmux is not running (no %s)", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return gf_err_set(e, "socket: %s", strerror(errno));
	/* Not listening (yet): tmux itself says so; nothing was sent. */
	rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? gf_peer_trusted(fd, sock, e) : 0;
	close(fd);
	return rc;
}
