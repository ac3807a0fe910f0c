/* pane.c — the job's terminal (--pty): the pseudo-terminal, the runner's
 * own pane under tmux (keys in, the job's output out, neither ever stalling
 * the job or its log) and the viewers of the attach socket (attach.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "attach.h"
#include "runfile.h"
#include "runner.h"

#define PANE_BUF_MAX (4u << 20)	/* output queued for a slow pane; beyond it, dropped */
#define JOB_BUF_MAX (64u << 10)	/* typed input queued for a job not reading it */

/* --- the pty ----------------------------------------------------------- */

bool copy_winsize(const struct runner *r)
{
	struct winsize ws;

	return r->master >= 0 && (ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0) &&
	       ioctl(r->master, TIOCSWINSZ, &ws) == 0;
}

/* Open a pty pair; the slave is handed to the child, the master kept. The
 * slave writes "\n" untranslated, so the log holds the job's exact bytes. */
int open_pty(struct runner *r, int *slave, struct gf_err *e)
{
	char name[128];
	struct termios t;

	r->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (r->master < 0)
		return gf_err_set(e, "cannot open a pseudo-terminal: %s", strerror(errno));
	if (grantpt(r->master) || unlockpt(r->master) || ptsname_r(r->master, name, sizeof name) ||
	    (*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		gf_err_set(e, "cannot open a pseudo-terminal: %s", strerror(errno));
		close(r->master);
		r->master = -1;
		return -1;
	}
	if (tcgetattr(*slave, &t) == 0) {
		t.c_oflag &= ~(tcflag_t)ONLCR;
		tcsetattr(*slave, TCSANOW, &t);
	}
	/* The job's terminal is its owner's, as after a login. */
	if (r->owner.set && fchown(*slave, r->owner.uid, (gid_t)-1) < 0) {
		gf_err_set(e, "cannot give the terminal to %s: %s", r->owner.name, strerror(errno));
		close(*slave);
		close(r->master);
		r->master = -1;
		return -1;
	}
	if (!copy_winsize(r)) {
		struct winsize ws = { .ws_row = 24, .ws_col = 80 };	/* no pane: until a viewer says */

		ioctl(r->master, TIOCSWINSZ, &ws);
	}
	fcntl(r->master, F_SETFL, fcntl(r->master, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* The pane (the runner's own terminal under tmux) passes keys through raw,
 * so ^C reaches the job's terminal, not the runner; it still turns "\n"
 * into "\r\n" on output. Stdin/stdout go non-blocking: a stalled pane must
 * never stall the job or its log. Not under tmux (stdin and stdout are not
 * a terminal) there is no pane, and they are left alone. */
void pane_setup(struct runner *r)
{
	struct termios t;

	r->to_job.max = JOB_BUF_MAX;
	if (!isatty(0) || !isatty(1))
		return;
	r->pane_in = r->pane_out = true;
	r->to_pane.max = PANE_BUF_MAX;
	if (tcgetattr(0, &r->pane_saved) == 0) {
		t = r->pane_saved;
		cfmakeraw(&t);
		t.c_oflag |= OPOST | ONLCR;
		r->pane_restore = tcsetattr(0, TCSANOW, &t) == 0;
	}
	for (int fd = 0; fd < 2; fd++) {
		r->pane_flags[fd] = fcntl(fd, F_GETFL);
		if (r->pane_flags[fd] >= 0)
			fcntl(fd, F_SETFL, r->pane_flags[fd] | O_NONBLOCK);
	}
}

void pane_restore(struct runner *r)
{
	if (!r->o.pty)
		return;
	for (int fd = 1; fd >= 0; fd--)
		if (r->pane_flags[fd] >= 0)
			fcntl(fd, F_SETFL, r->pane_flags[fd]);
	if (r->pane_restore)
		tcsetattr(0, TCSANOW, &r->pane_saved);
}

void pane_write(struct runner *r, const char *data, size_t n)
{
	if (!r->pane_out)
		return;
	outbuf_add(&r->to_pane, data, n);
	if (outbuf_flush(&r->to_pane, 1)) {
		r->pane_out = false;	/* the pane is gone (EIO): log only */
		outbuf_free(&r->to_pane);
	}
}

void close_master(struct runner *r)
{
	if (r->master >= 0)
		close(r->master);
	if (r->slave_keep >= 0)
		close(r->slave_keep);
	r->master = r->slave_keep = -1;
	outbuf_free(&r->to_job);
}

/* Job output: to the log, and to the pane. */
void from_master(struct runner *r)
{
	char buf[65536];

	for (int i = 0; i < 16 && r->master >= 0; i++) {
		ssize_t n = read(r->master, buf, sizeof buf);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_master(r);	/* EIO: every slave fd is closed */
			return;
		}
		gf_write_all(r->logfd, buf, (size_t)n);
		pane_write(r, buf, (size_t)n);
		attach_output(r->attach, buf, (size_t)n);
		if (r->gone)
			r->quiet_until = now_mono() + QUIET_SECS;
	}
}

/* Keys for the job's terminal (from the pane or a viewer). */
static void to_job(struct runner *r, const char *data, size_t n)
{
	outbuf_add(&r->to_job, data, n);
	if (outbuf_flush(&r->to_job, r->master))
		outbuf_free(&r->to_job);
}

/* Keys typed into the pane: to the job's terminal. */
void from_pane(struct runner *r)
{
	char buf[4096];
	size_t room = r->to_job.max - r->to_job.len;
	ssize_t n;

	if (!room)
		return;
	n = read(0, buf, room < sizeof buf ? room : sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		r->pane_in = false;	/* EOF, or EIO when the pane closed */
		return;
	}
	to_job(r, buf, (size_t)n);
}

/* --- viewers through the attach socket (attach.c) ---------------------- */

static void viewer_keys(void *ctx, const char *data, size_t n)
{
	struct runner *r = ctx;

	if (r->master >= 0)
		to_job(r, data, n);
}

static bool viewer_can_type(void *ctx)
{
	const struct runner *r = ctx;

	/* Room for what one read of a viewer may bring (attach.c). */
	return r->master >= 0 && r->to_job.max - r->to_job.len >= ATTACH_FRAME_MAX;
}

/* The kernel sends SIGWINCH to the job's foreground process group. */
static void viewer_winsize(void *ctx, unsigned rows, unsigned cols)
{
	const struct runner *r = ctx;
	struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };

	if (r->master >= 0 && rows && cols)
		ioctl(r->master, TIOCSWINSZ, &ws);
}

/* Offer the pty at --attach; a job whose socket cannot be made still runs. */
void offer_attach(struct runner *r)
{
	struct attach_hooks h = { r, viewer_keys, viewer_can_type, viewer_winsize };
	struct gf_err e;
	char me[32];

	snprintf(me, sizeof me, "%u", (unsigned)getuid());
	r->attach = attach_open(r->o.attach, r->o.job, r->owner.set ? r->owner.uid : getuid(),
				r->owner.set ? r->owner.gid : getgid(), r->owner.set ? r->owner.name : me,
				r->o.attach_gid >= 0, (gid_t)r->o.attach_gid, &h, &e);
	if (!r->attach)
		say(r, "job %s: no attach: %s", r->o.job, e.msg);
}

/* Give a slow pane up to a second for what it has not taken yet. */
void pane_flush_final(struct runner *r)
{
	double until = now_mono() + 1.0;

	while (r->pane_out && r->to_pane.len && now_mono() < until) {
		struct pollfd p = { .fd = 1, .events = POLLOUT };

		if (poll(&p, 1, 100) > 0)
			pane_write(r, "", 0);
	}
}
