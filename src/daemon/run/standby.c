/* standby.c — the standby runners: gflow-runners started ahead of any job
 * (`gflow-runner --standby`, its stdin a socket of ours), two a CPU (up to
 * GF_STANDBY_MAX), since short jobs end and start one a CPU at a time. A
 * start of the process executor hands the last one made the runner's
 * options (NUL-ended words, then an empty one) and the job's environment
 * and command (their sizes among the options), instead of starting a
 * runner; the socket is then the job's, and the runner tells its result
 * there (--report, reap.c). A held start (`--hold`, made before the commit
 * that records it is synced) writes one more byte, "g", when the sync is
 * done, that lets the job exec; the runner prepares everything meanwhile.
 * The exec and loading of a runner (~2 ms here) leave the submit → start
 * path; it reads what it announces itself with as it waits. New standbys
 * (and new spares, rundir.c) are made a moment after one is used (not at
 * once: it would compete with the start it just made for the CPUs, and a
 * daemon killed while it spawns leaves a child holding its lock until the
 * child execs, which a restart at once would find), and at daemon start
 * when jobs default to the process executor (the tmux executor has a
 * standby of its own, below). Each is our child like any runner
 * (exec_reap collects it). EOF on its socket before a whole request — we
 * stop, crash or exec ourselves again (the socket is close-on-exec) — ends
 * it with nothing done. A runner whose job's end was told and recorded
 * comes back to serve the next (standby_take_back): up to GF_STANDBY_MAX
 * are held, and none is made while as many as are kept wait. */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define STANDBY_DELAY_SECS 0.001	/* before standbys or spares are made (after a use, or at start) */

/* ---- the tmux executor's standby ------------------------------------------
 * A session of the daemon's tmux server ("gflow-standby-PID-N") whose runner
 * waits for its request on a FIFO of ours (RUNTIME/standby-PID-N.fifo; its
 * pane is its stdin). A start opens the FIFO (no reader: ENXIO, a standby not
 * up yet or gone: the start makes its own session), writes the request as
 * to the process executor's standby, removes the FIFO and renames the
 * session to the job's. The runner watches our pid while it waits (a crash
 * of ours leaves no writer to say EOF); we kill its session when we stop. */

#define TMUX_STANDBY_STALE 2.0	/* seconds after which a standby that opens no FIFO is made again */

static void drop_tmux_standby(struct server *s, bool kill_it)
{
	char *words[] = { "kill-session", "-t", NULL, NULL };
	char target[80];

	if (!s->tsb_session[0])
		return;
	if (kill_it) {
		snprintf(target, sizeof target, "=%s", s->tsb_session);
		words[2] = target;
		exec_tmux_command(s, words, 3);
	}
	unlink(s->tsb_fifo);
	s->tsb_session[0] = s->tsb_fifo[0] = '\0';
}

/* The FIFOs an earlier daemon of ours left (a crash: it removes its own). */
static void remove_old_fifos(struct server *s)
{
	DIR *d = opendir(s->paths.runtime_dir);
	struct dirent *de;
	size_t n;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "standby-", 8) && (n = strlen(de->d_name)) > 5 &&
		    !strcmp(de->d_name + n - 5, ".fifo"))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static void make_tmux_standby(struct server *s)
{
	char session[64], fifo[GF_PATH_MAX];
	unsigned n;

	if (s->tsb_session[0])
		return;
	if (!s->tsb_seq)
		remove_old_fifos(s);
	n = ++s->tsb_seq;
	snprintf(session, sizeof session, "gflow-standby-%ld-%u", (long)getpid(), n);
	if (gf_pathf(fifo, sizeof fifo, "%s/standby-%ld-%u.fifo", s->paths.runtime_dir, (long)getpid(), n))
		return;
	unlink(fifo);
	if (mkfifo(fifo, 0600))
		return;
	if (exec_tmux_standby(s, session, fifo)) {
		unlink(fifo);
		return;
	}
	snprintf(s->tsb_session, sizeof s->tsb_session, "%s", session);
	snprintf(s->tsb_fifo, sizeof s->tsb_fifo, "%s", fifo);
	s->tsb_made = now_mono();
}

#define STANDBY_MADE_MAX 4	/* made ahead, at most */

/* How many standbys are kept: two a CPU, up to STANDBY_MADE_MAX (short jobs
 * end and start one a CPU at a time, and the ones used are made again a
 * moment later; a start without one forks the daemon and waits for a
 * runner's exec). */
static int standby_count(struct server *s)
{
	if (!s->nstandby) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		s->nstandby = n < 1 ? 2 : 2 * n > STANDBY_MADE_MAX ? STANDBY_MADE_MAX : 2 * (int)n;
	}
	return s->nstandby;
}

/* The last standby made, or -1. */
static int standby_last(const struct server *s)
{
	for (int i = GF_STANDBY_MAX - 1; i >= 0; i--)
		if (s->standby_fd[i] >= 0)
			return i;
	return -1;
}

static void on_standby_timer(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	/* The blank word is room for the runner to name its job in (ps). */
	char *argv[] = { s->runner_path, "--standby", "                        ", NULL };
	struct gf_err e;
	pid_t pid;

	(void)fd;
	(void)what;
	if (s->spares_due) {
		s->spares_due = false;
		rundir_make_spares(s);
	}
	if (s->tsb_due) {
		s->tsb_due = false;
		make_tmux_standby(s);
	}
	if (!s->standby_due)
		return;
	s->standby_due = false;
	for (int i = 0; i < GF_STANDBY_MAX && standby_idle(s) < standby_count(s); i++) {
		if (s->standby_fd[i] >= 0)
			continue;
		if (exec_spawn_socket(argv, &s->standby_fd[i], &pid, &e)) {
			fprintf(stderr, "gflowd: no standby runner: %s (runners are started as they are needed)\n",
				e.msg);
			return;
		}
		s->standby_pidfd[i] = (int)syscall(SYS_pidfd_open, pid, 0);
		s->standby_pid[i] = pid;
	}
}

static void arm(struct server *s)
{
	struct timeval tv = { 0, (suseconds_t)(STANDBY_DELAY_SECS * 1e6) };

	if (!s->base)
		return;
	if (!s->standby_ev && !(s->standby_ev = evtimer_new(s->base, on_standby_timer, s)))
		return;
	if (!evtimer_pending(s->standby_ev, NULL))
		evtimer_add(s->standby_ev, &tv);
}

void standby_want(struct server *s)
{
	if (standby_idle(s) >= standby_count(s))
		return;
	s->standby_due = true;
	arm(s);
}

void standby_want_tmux(struct server *s)
{
	if (s->tsb_session[0])
		return;
	s->tsb_due = true;
	arm(s);
}

bool standby_tmux_ready(const struct server *s)
{
	return s->tsb_session[0] && s->standby_held_fd < 0;
}

void standby_want_spares(struct server *s)
{
	s->spares_due = true;
	arm(s);
}

bool standby_ready(const struct server *s)
{
	return standby_last(s) >= 0 && s->standby_held_fd < 0;
}

/* The request: argv's words after argv[0], each NUL-ended, an empty one,
 * then more. NULL when it cannot be sent (an empty word would end it; it
 * must fit the empty pipe, written at once as the pipe is non-blocking). */
static char *request(char *const argv[], const struct iovec *more, int nmore, size_t *total)
{
	size_t len = 1, at = 0;
	char *buf;

	for (int i = 1; argv[i]; i++) {
		if (!argv[i][0])
			return NULL;
		len += strlen(argv[i]) + 1;
	}
	*total = len;
	for (int i = 0; i < nmore; i++)
		*total += more[i].iov_len;
	if (*total > PIPE_BUF * 16 || !(buf = malloc(*total)))
		return NULL;
	for (int i = 1; argv[i]; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(buf + at, argv[i], n);
		at += n;
	}
	buf[at++] = '\0';
	for (int i = 0; i < nmore; i++) {
		memcpy(buf + at, more[i].iov_base, more[i].iov_len);
		at += more[i].iov_len;
	}
	return buf;
}

/* Writes buf to fd, then keeps fd as the held start's (hold: a copy of it
 * when the caller keeps fd) or closes it (unless the caller keeps it).
 * True when all of it went. */
static bool put_request(struct server *s, int fd, char *buf, size_t total, bool hold, bool keep)
{
	ssize_t put;
	bool sent;

	do
		put = write(fd, buf, total);
	while (put < 0 && errno == EINTR);
	free(buf);
	sent = put == (ssize_t)total;
	if (hold && sent && (s->standby_held_fd = keep ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : fd) < 0)
		sent = false;	/* no byte could let it go: EOF gives it up */
	if (!keep && !(hold && sent))
		close(fd);
	return sent;
}

int standby_hand(struct server *s, char *const argv[], const struct iovec *more, int nmore, bool hold,
		 struct standby_chan *chan)
{
	char *buf;
	size_t total;
	int i = standby_last(s);
	bool sent;

	if (i < 0 || (hold && s->standby_held_fd >= 0) || !(buf = request(argv, more, nmore, &total)))
		return 1;
	/* It is taken whatever happens next: a standby that got part of a
	 * request, or none, exits without doing anything. */
	*chan = (struct standby_chan){ .fd = s->standby_fd[i], .pidfd = s->standby_pidfd[i], .pid = s->standby_pid[i] };
	s->standby_fd[i] = s->standby_pidfd[i] = -1;
	sent = put_request(s, chan->fd, buf, total, hold, true);
	if (!sent) {
		close(chan->fd);
		if (chan->pidfd >= 0)
			close(chan->pidfd);
	}
	standby_want(s);
	return sent ? 0 : 1;
}

int standby_hand_tmux(struct server *s, const struct job *j, char *const argv[], const struct iovec *more, int nmore,
		      bool hold)
{
	char *rename[] = { "rename-session", "-t", NULL, NULL, NULL }, target[80], name[64];
	size_t total;
	char *buf;
	bool sent;
	int fd;

	if (!standby_tmux_ready(s) || (hold && s->standby_held_fd >= 0))
		return 1;
	fd = open(s->tsb_fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		/* Not up yet, or gone: after a while, made again. */
		if (errno == ENXIO && now_mono() - s->tsb_made > TMUX_STANDBY_STALE) {
			drop_tmux_standby(s, true);
			standby_want_tmux(s);
		}
		return 1;
	}
	if (!(buf = request(argv, more, nmore, &total))) {
		close(fd);
		return 1;
	}
	snprintf(target, sizeof target, "=%s", s->tsb_session);
	snprintf(name, sizeof name, "gflow-%lld", (long long)j->id);
	drop_tmux_standby(s, false);	/* taken, whatever happens next */
	sent = put_request(s, fd, buf, total, hold, false);
	if (sent) {
		rename[2] = target;
		rename[3] = name;
		exec_tmux_command(s, rename, 4);
	}
	standby_want_tmux(s);
	return sent ? 0 : 1;
}

/* The byte that lets a held job exec. A runner gone meanwhile (EPIPE) is
 * seen like any other runner that died. */
void standby_release(struct server *s)
{
	int fd = s->standby_held_fd;

	if (fd < 0)
		return;
	s->standby_held_fd = -1;
	while (write(fd, "g", 1) < 0 && errno == EINTR)
		;
	close(fd);
}

void standby_close(struct server *s)
{
	drop_tmux_standby(s, true);
	/* A start is never held across a return to the loop; were one held,
	 * EOF without the byte gives it up (a socket's other copy is the
	 * job's: shut down for all). */
	if (s->standby_held_fd >= 0) {
		shutdown(s->standby_held_fd, SHUT_RDWR);
		close(s->standby_held_fd);
	}
	s->standby_held_fd = -1;
	if (s->standby_ev)
		event_free(s->standby_ev);
	s->standby_ev = NULL;
	for (int i = 0; i < GF_STANDBY_MAX; i++) {
		if (s->standby_fd[i] >= 0)
			close(s->standby_fd[i]);
		s->standby_fd[i] = -1;
	}
	/* Each exits at the EOF: collected here (unless exec_reap was first),
	 * so nothing of ours outlives a stop. A second at most. */
	for (int i = 0; i < GF_STANDBY_MAX; i++) {
		struct pollfd p = { .fd = s->standby_pidfd[i], .events = POLLIN };
		siginfo_t si;

		if (p.fd < 0)
			continue;
		while (poll(&p, 1, 1000) < 0 && errno == EINTR)
			;
		waitid(P_PIDFD, (id_t)p.fd, &si, WEXITED | WNOHANG);
		close(p.fd);
		s->standby_pidfd[i] = -1;
	}
}
