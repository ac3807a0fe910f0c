/* attach.c — the attach socket a runner offers for its job's terminal.
 *
 * Under the system daemon a job's terminal (the runner's pty) has no tmux
 * pane: the runner listens on a Unix socket (--attach PATH, made by root
 * in a root-owned directory, owned by the job's owner and the attach group)
 * and lets viewers in — root, the owner, members of the attach group, as
 * the kernel names them (SO_PEERCRED, SO_PEERGROUPS); anyone else gets one line naming
 * the rule. A new viewer gets a line, the last 64 KiB of the job's output,
 * then the output as it comes. Each viewer has a bounded queue: a viewer
 * that does not read loses output (a marker says where), never stalls the
 * job or its log. Viewers send framed keys and window sizes (attach.h).
 * Everything here is non-blocking and driven by the runner's poll loop. */
#include "attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REPLAY_MAX (64u << 10)		/* output kept for a new viewer */
#define VIEWER_BUF_MAX (256u << 10)	/* output queued for one viewer */
#define ACCEPTS_PER_TURN 16

static const char dropped_mark[] = "\r\n[gflow: output dropped here: this viewer did not keep up]\r\n";

struct ring {
	char *data;
	size_t head, len, max;
};

struct viewer {
	int fd;			/* -1: a free slot */
	struct ring out;	/* what it has not taken yet */
	bool dropped;		/* output was dropped: the marker goes first */
	unsigned char in[3 + ATTACH_FRAME_MAX];	/* a frame being read */
	size_t inlen;
};

struct attach {
	int lfd;
	char path[sizeof ((struct sockaddr_un *)0)->sun_path];
	dev_t dev;		/* our socket file, so only ours is removed */
	ino_t ino;
	char job[32], owner_name[256];
	uid_t owner;
	bool group_set;
	gid_t group;
	struct ring replay;
	struct viewer v[ATTACH_MAX_VIEWERS];
	struct attach_hooks hooks;
	bool ever;		/* a viewer was let in once */
};

/* --- rings ------------------------------------------------------------- */

/* Append n bytes that fit (n <= max - len). */
static void ring_in(struct ring *r, const char *data, size_t n)
{
	size_t tail = (r->head + r->len) % r->max;
	size_t first = n < r->max - tail ? n : r->max - tail;

	memcpy(r->data + tail, data, first);
	memcpy(r->data, data + first, n - first);
	r->len += n;
}

/* Append, dropping the oldest bytes to make room. */
static void ring_keep_last(struct ring *r, const char *data, size_t n)
{
	if (n > r->max) {
		data += n - r->max;
		n = r->max;
	}
	if (r->len + n > r->max) {
		size_t drop = r->len + n - r->max;

		r->head = (r->head + drop) % r->max;
		r->len -= drop;
	}
	ring_in(r, data, n);
}

/* Send what the socket takes now. -1 when the viewer is gone. */
static int ring_send(struct ring *r, int fd)
{
	while (r->len) {
		size_t chunk = r->len < r->max - r->head ? r->len : r->max - r->head;
		ssize_t n = send(fd, r->data + r->head, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		r->head = (r->head + (size_t)n) % r->max;
		r->len -= (size_t)n;
	}
	return 0;
}

/* --- viewers ----------------------------------------------------------- */

static void viewer_close(struct viewer *v)
{
	if (v->fd >= 0)
		close(v->fd);
	free(v->out.data);
	memset(v, 0, sizeof *v);
	v->fd = -1;
}

/* Queue output for a viewer; what does not fit is dropped, and the marker
 * goes out before the next output that fits with it. */
static void viewer_queue(struct viewer *v, const char *data, size_t n)
{
	size_t room = v->out.max - v->out.len;

	if (v->dropped) {
		if (room < sizeof dropped_mark - 1 + n)
			return;
		ring_in(&v->out, dropped_mark, sizeof dropped_mark - 1);
		room -= sizeof dropped_mark - 1;
		v->dropped = false;
	}
	if (n > room) {
		v->dropped = true;
		return;
	}
	ring_in(&v->out, data, n);
}

static void viewer_flush(struct viewer *v)
{
	if (v->fd >= 0 && ring_send(&v->out, v->fd))
		viewer_close(v);
}

/* Frames from a viewer: keys for the job, window sizes. A viewer that
 * speaks anything else is closed. */
static void viewer_read(struct attach *a, struct viewer *v)
{
	for (int turn = 0; turn < 16 && v->fd >= 0; turn++) {
		size_t off = 0;
		ssize_t n;

		if (!a->hooks.can_take_keys(a->hooks.ctx))
			return;
		n = read(v->fd, v->in + v->inlen, sizeof v->in - v->inlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			viewer_close(v);	/* detached */
			return;
		}
		v->inlen += (size_t)n;
		while (v->inlen - off >= 3) {
			const unsigned char *f = v->in + off;
			size_t len = (size_t)f[1] << 8 | f[2];

			if (len > ATTACH_FRAME_MAX || (f[0] != ATTACH_FRAME_KEYS && f[0] != ATTACH_FRAME_SIZE) ||
			    (f[0] == ATTACH_FRAME_SIZE && len != 4)) {
				viewer_close(v);
				return;
			}
			if (v->inlen - off < 3 + len)
				break;
			if (f[0] == ATTACH_FRAME_KEYS)
				a->hooks.keys(a->hooks.ctx, (const char *)f + 3, len);
			else
				a->hooks.winsize(a->hooks.ctx, (unsigned)f[3] << 8 | f[4], (unsigned)f[5] << 8 | f[6]);
			off += 3 + len;
		}
		memmove(v->in, v->in + off, v->inlen - off);
		v->inlen -= off;
	}
}

/* --- who may attach ---------------------------------------------------- */

/* Is the peer on fd (credentials cr) in group: its primary group or one
 * of its supplementary groups, as the kernel recorded them when it
 * connected (SO_PEERGROUPS)? No user database is asked: the runner may be
 * linked statically, and a process's groups are what its file accesses
 * are checked against too. */
static bool peer_in_group(int fd, const struct ucred *cr, gid_t group)
{
	gid_t some[64], *groups = some;
	socklen_t len = sizeof some;
	bool in = false;

	if (cr->gid == group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
		/* ERANGE: more than fit; len says how many bytes they take */
		if (errno != ERANGE || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
			len = 0;
	}
	for (size_t i = 0; !in && i < len / sizeof *groups; i++)
		in = groups[i] == group;
	if (groups != some)
		free(groups);
	return in;
}

static bool allowed(const struct attach *a, int fd, const struct ucred *cr)
{
	return cr->uid == 0 || cr->uid == a->owner || (a->group_set && peer_in_group(fd, cr, a->group));
}

/* Say one line to a connection we are about to close. */
static void say(int fd, const char *line)
{
	(void)!send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void on_accept(struct attach *a)
{
	for (int turn = 0; turn < ACCEPTS_PER_TURN; turn++) {
		struct ucred cr;
		socklen_t len = sizeof cr;
		struct viewer *v = NULL;
		char line[640];
		int fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || !allowed(a, fd, &cr)) {
			snprintf(line, sizeof line, "gflow: job %s belongs to %s; only %s or an admin may attach\n",
				 a->job, a->owner_name, a->owner_name);
			say(fd, line);
			close(fd);
			continue;
		}
		for (int i = 0; i < ATTACH_MAX_VIEWERS && !v; i++)
			if (a->v[i].fd < 0)
				v = &a->v[i];
		if (!v || !(v->out.data = malloc(VIEWER_BUF_MAX))) {
			snprintf(line, sizeof line, "gflow: job %s has %d viewers already; try again when one detaches\n",
				 a->job, ATTACH_MAX_VIEWERS);
			say(fd, line);
			close(fd);
			continue;
		}
		v->fd = fd;
		v->out.max = VIEWER_BUF_MAX;
		a->ever = true;
		snprintf(line, sizeof line, ATTACH_HELLO " job %s\n", a->job);
		ring_in(&v->out, line, strlen(line));
		/* The replay: the last REPLAY_MAX bytes, oldest first. */
		if (a->replay.len) {
			size_t first = a->replay.len < a->replay.max - a->replay.head ? a->replay.len
										   : a->replay.max - a->replay.head;

			ring_in(&v->out, a->replay.data + a->replay.head, first);
			ring_in(&v->out, a->replay.data, a->replay.len - first);
		}
		viewer_flush(v);
	}
}

/* --- the runner's side -------------------------------------------------- */

struct attach *attach_open(const char *path, const char *job, uid_t owner_uid, gid_t owner_gid,
			   const char *owner_name, bool group_set, gid_t group, const struct attach_hooks *hooks,
			   struct gf_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct attach *a;
	struct stat st;
	mode_t old;
	int rc;

	if (strlen(path) + 2 >= sizeof sa.sun_path) {	/* room for the ".n" it is made under */
		gf_err_set(e, "the attach socket path %s is too long", path);
		return NULL;
	}
	if (!(a = calloc(1, sizeof *a)) || !(a->replay.data = malloc(REPLAY_MAX))) {
		free(a);
		gf_err_set(e, "out of memory");
		return NULL;
	}
	a->replay.max = REPLAY_MAX;
	for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
		a->v[i].fd = -1;
	snprintf(a->path, sizeof a->path, "%s", path);
	snprintf(a->job, sizeof a->job, "%s", job);
	snprintf(a->owner_name, sizeof a->owner_name, "%s", owner_name);
	a->owner = owner_uid;
	a->group_set = group_set;
	a->group = group;
	a->hooks = *hooks;
	/* Made as PATH.n and renamed to PATH once handed over and listening:
	 * the owner, waiting for PATH, never meets it still root's (EACCES,
	 * "only its owner may attach") or not yet listening. */
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s.n", path);
	a->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->lfd < 0) {
		gf_err_set(e, "socket: %s", strerror(errno));
		goto fail;
	}
	if ((unlink(path) && errno != ENOENT) || (unlink(sa.sun_path) && errno != ENOENT)) {
		gf_err_set(e, "cannot remove the old %s: %s", path, strerror(errno));
		goto fail;
	}
	/* Born 0600: nobody else gets in before it is handed over. */
	old = umask(0177);
	rc = bind(a->lfd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (rc) {
		gf_err_set(e, "cannot listen at %s: %s", path, strerror(errno));
		goto fail;
	}
	if (lchown(sa.sun_path, owner_uid, group_set ? group : owner_gid) ||
	    (group_set && chmod(sa.sun_path, 0660)) || lstat(sa.sun_path, &st) || listen(a->lfd, 16) ||
	    rename(sa.sun_path, path)) {
		gf_err_set(e, "cannot set up %s: %s", path, strerror(errno));
		unlink(sa.sun_path);
		goto fail;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	return a;
fail:
	if (a->lfd >= 0)
		close(a->lfd);
	free(a->replay.data);
	free(a);
	return NULL;
}

int attach_pollfds(const struct attach *a, struct pollfd *fds)
{
	int n = 0;
	bool keys = a->hooks.can_take_keys(a->hooks.ctx);

	fds[n++] = (struct pollfd){ .fd = a->lfd, .events = POLLIN };
	for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
		if (a->v[i].fd >= 0)
			fds[n++] = (struct pollfd){ .fd = a->v[i].fd,
						    .events = (short)((keys ? POLLIN : 0) | (a->v[i].out.len ? POLLOUT : 0)) };
	return n;
}

void attach_events(struct attach *a, const struct pollfd *fds, int n)
{
	bool accept_now = false;

	for (int i = 0; i < n; i++) {
		struct viewer *v = NULL;

		if (!fds[i].revents)
			continue;
		if (fds[i].fd == a->lfd) {
			accept_now = true;	/* last: a new viewer may reuse a number closed here */
			continue;
		}
		for (int k = 0; k < ATTACH_MAX_VIEWERS && !v; k++)
			if (a->v[k].fd == fds[i].fd)
				v = &a->v[k];
		if (!v)
			continue;
		if (fds[i].revents & POLLOUT)
			viewer_flush(v);
		if (v->fd >= 0 && (fds[i].revents & POLLIN) && a->hooks.can_take_keys(a->hooks.ctx))
			viewer_read(a, v);
		else if (v->fd >= 0 && (fds[i].revents & (POLLHUP | POLLERR)))
			viewer_close(v);
	}
	if (accept_now)
		on_accept(a);
}

void attach_output(struct attach *a, const char *data, size_t n)
{
	if (!a || !n)
		return;
	ring_keep_last(&a->replay, data, n);
	for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
		if (a->v[i].fd >= 0) {
			viewer_queue(&a->v[i], data, n);
			viewer_flush(&a->v[i]);
		}
}

int attach_viewers(const struct attach *a, bool *ever)
{
	int n = 0;

	for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
		n += a->v[i].fd >= 0;
	*ever = a->ever;
	return n;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void attach_await_viewer(struct attach *a, double until)
{
	while (a && !a->ever && mono() < until) {
		struct pollfd fds[ATTACH_MAX_FDS];
		int n = attach_pollfds(a, fds), ms = (int)((until - mono()) * 1000.0) + 1;

		if (poll(fds, (nfds_t)n, ms < 100 ? ms : 100) > 0)
			attach_events(a, fds, n);
	}
}

void attach_close(struct attach *a, double secs)
{
	struct stat st;
	double until = mono() + secs;

	if (!a)
		return;
	for (;;) {
		struct pollfd fds[ATTACH_MAX_VIEWERS];
		int n = 0;

		for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
			if (a->v[i].fd >= 0 && a->v[i].out.len)
				fds[n++] = (struct pollfd){ .fd = a->v[i].fd, .events = POLLOUT };
		if (!n || mono() >= until)
			break;
		if (poll(fds, (nfds_t)n, 50) > 0)
			for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
				viewer_flush(&a->v[i]);
	}
	for (int i = 0; i < ATTACH_MAX_VIEWERS; i++)
		viewer_close(&a->v[i]);
	close(a->lfd);
	if (lstat(a->path, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino)
		unlink(a->path);
	free(a->replay.data);
	free(a);
}
