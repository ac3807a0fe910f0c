/* api_listen.c — the API's listeners: the Unix socket and the TCP port,
 * api_init/api_close, pausing and resuming them for a reload, and the
 * connections a reload waits for (api_open_connections). */
#include "apiint.h"

#include <dirent.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_BODY (8 * 1024 * 1024)
#define ADMIN_SHARE 4		/* admins together: this many times a user's cap */
#define TCP_UID ((uid_t)-2)	/* the bucket every TCP connection counts in */
#define BACKOFF_MIN_MS 100	/* out of descriptors: accept again after this… */
#define BACKOFF_MAX_MS 1000	/* …doubling up to this */

/* ---- who holds how many connections --------------------------------------
 *
 * evhttp accepts; each connection's bufferevent is made here (new_bev), and
 * before anything is read from it (when the next is accepted, or by
 * check_fresh in the same turn of the loop) its user is known: the peer's
 * uid on the Unix socket, one bucket for TCP. A user over [daemon]
 * max_connections_per_user, or any connection that would leave the daemon
 * too few descriptors for its jobs, is answered one line and freed at once
 * (refuse). Connections are remembered by descriptor with the socket's
 * inode, so one closed (by evhttp, which tells nobody) is seen as gone when
 * its slot is looked at. */

struct slot {
	bool used, admin;
	uid_t uid;
	dev_t dev;
	ino_t ino;
};

struct fresh {
	struct bufferevent *bev;
	bool tcp;
};

struct guard;

/* What a listener's connections are made with (evhttp_set_bevcb's arg). */
struct way {
	struct guard *g;
	bool tcp;
};

/* The guard's state: s->guard, made by api_init, freed by api_close. */
struct guard {
	struct server *s;
	struct slot *slot;	/* by descriptor */
	size_t nslot;
	struct fresh *fresh;	/* accepted this turn, not looked at yet */
	size_t nfresh, cfresh;
	struct event *check_ev, *resume_ev;
	int spare;		/* /dev/null: given up to answer one client when out of descriptors */
	int backoff_ms;
	bool reload_paused;	/* api_pause: a reload, not us */
	double refused_at;	/* the last line about refusals */
	unsigned long refused;	/* …and those since */
	double emfile_at;
	unsigned long emfile;
	struct way way[2];	/* [0] the Unix socket's, [1] TCP's */
};

/* The guard of the one daemon, for on_accept_error only: libevent calls a
 * listener's error callback with the listener's own argument, which evhttp
 * owns, so that callback cannot be given the guard. Set by api_init. */
static struct guard *accept_guard;

static bool slot_alive(struct guard *g, int fd)
{
	struct slot *sl = &g->slot[fd];
	struct stat st;

	if (sl->used && (fstat(fd, &st) || st.st_dev != sl->dev || st.st_ino != sl->ino))
		sl->used = false;
	return sl->used;
}

/* Connections open of this uid (admin: of all admins). */
static size_t held(struct guard *g, uid_t uid, bool admin)
{
	size_t n = 0;

	for (size_t fd = 0; fd < g->nslot; fd++)
		if (g->slot[fd].used && (admin ? g->slot[fd].admin : g->slot[fd].uid == uid) && slot_alive(g, (int)fd))
			n++;
	return n;
}

static void remember(struct guard *g, int fd, uid_t uid, bool admin)
{
	struct stat st;

	if ((size_t)fd >= g->nslot) {
		size_t n = (size_t)fd + 64 > g->nslot * 2 ? (size_t)fd + 64 : g->nslot * 2;
		struct slot *v = realloc(g->slot, n * sizeof *v);

		if (!v)
			return;	/* not counted: no worse than before */
		memset(v + g->nslot, 0, (n - g->nslot) * sizeof *v);
		g->slot = v;
		g->nslot = n;
	}
	if (fstat(fd, &st))
		return;
	g->slot[fd] = (struct slot){ .used = true, .admin = admin, .uid = uid, .dev = st.st_dev, .ino = st.st_ino };
}

/* One line of HTTP, and no more from this connection: nothing it sent is
 * read, and evhttp (bev: its connection's) is told it ended, so that it is
 * freed (its descriptor closed) now. Without bev, fd is the caller's to
 * close. */
static void refuse(struct guard *g, struct bufferevent *bev, int fd, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void refuse(struct guard *g, struct bufferevent *bev, int fd, int code, const char *fmt, ...)
{
	bufferevent_event_cb ended = NULL;
	void *arg = NULL;
	char sink[4096];
	char msg[256], body[320], text[640];
	va_list ap;
	json_t *j;
	char *dump;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	j = json_pack("{s:s}", "error", msg);
	dump = j ? json_dumps(j, JSON_COMPACT) : NULL;
	snprintf(body, sizeof body, "%s\n", dump ? dump : "{\"error\":\"refused\"}");
	free(dump);
	json_decref(j);
	n = snprintf(text, sizeof text,
		     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n%s",
		     code, code == 503 ? "Service Unavailable" : "Too Many Requests", strlen(body), body);
	if (n > 0 && (size_t)n < sizeof text && send(fd, text, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0;	/* the client is gone or not reading: it is shut all the same */
	shutdown(fd, SHUT_RD);
	/* What it sent is dropped (a close with unread data would reset a TCP
	 * connection before our answer reached it). */
	for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
		;
	if (bev)
		bufferevent_getcb(bev, NULL, NULL, &ended, &arg);
	if (ended)
		ended(bev, BEV_EVENT_READING | BEV_EVENT_EOF, arg);	/* evhttp frees it */
	else
		shutdown(fd, SHUT_RDWR);
	if (now_mono() - g->refused_at >= 1.0) {
		fprintf(stderr, "gflowd: refused a connection: %s%s\n", msg,
			g->refused ? " (and others since the last such line)" : "");
		g->refused_at = now_mono();
		g->refused = 0;
	} else
		g->refused++;
}

/* The descriptors kept for jobs and admins: an ordinary user's connection
 * that lands among the last `users` numbers is refused, an admin's among
 * the last `admins` (the kernel gives the lowest free number, so one that
 * lands there means the table is that full). */
static void reserve_of(long limit, long *users, long *admins)
{
	long r = limit / 8;

	*users = r < 32 ? 32 : r > 1024 ? 1024 : r;
	if (*users > limit / 2)
		*users = limit / 2;	/* a tiny limit: half of it still serves */
	*admins = *users / 2;
}

/* Returns whether the connection was refused. */
static bool check_one(struct guard *g, struct bufferevent *bev, bool tcp)
{
	struct server *s = g->s;
	int fd = bufferevent_getfd(bev), cap = s->cfg.max_connections_per_user;
	long limit = fd_limit(), for_users, for_admins;
	struct ucred cred;
	socklen_t len = sizeof cred;
	uid_t uid = TCP_UID;
	bool admin = false;

	if (fd < 0)
		return false;
	if (!tcp) {
		uid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.uid : (uid_t)-1;
		admin = uid != (uid_t)-1 && (uid == s->uid || auth_is_admin(s, uid));
	}
	if (admin && held(g, uid, true) >= (size_t)cap * ADMIN_SHARE) {
		refuse(g, bev, fd, 429, "too many connections from admins (at most %lld together)",
		       (long long)cap * ADMIN_SHARE);
		return true;
	}
	if (!admin && held(g, uid, false) >= (size_t)cap) {
		if (tcp)
			refuse(g, bev, fd, 429, "too many connections over TCP (at most %d)", cap);
		else
			refuse(g, bev, fd, 429, "too many connections from uid %lld (at most %d)", (long long)uid, cap);
		return true;
	}
	reserve_of(limit, &for_users, &for_admins);
	if (fd >= limit - (admin ? for_admins : for_users)) {
		refuse(g, bev, fd, 503, "gflowd has few file descriptors left (the last %ld of %ld are kept for jobs%s); "
		       "try again later", admin ? for_admins : for_users, limit, admin ? "" : " and admins");
		return true;
	}
	remember(g, fd, uid, admin);
	if (now_mono() - g->emfile_at > 5.0)
		g->backoff_ms = BACKOFF_MIN_MS;	/* calm again: the next pause is short */
	return false;
}

static void set_listening(struct server *s, bool on);

static bool check_all(struct guard *g)
{
	bool refused = false;

	for (size_t i = 0; i < g->nfresh; i++)
		refused |= check_one(g, g->fresh[i].bev, g->fresh[i].tcp);
	g->nfresh = 0;
	return refused;
}

static void check_fresh(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	check_all(arg);
}

/* evhttp's maker of a connection's bufferevent: the descriptor is set on
 * it after this returns, and check_fresh, activated in the listener's
 * priority, runs before the loop waits for anything again (so before the
 * connection can be read, answered or freed). */
static struct bufferevent *new_bev(struct event_base *base, void *arg)
{
	struct way *w = arg;
	struct guard *g = w->g;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, 0);

	if (!bev)
		return NULL;
	/* The ones before this have their descriptors now. A refusal ends
	 * this turn's accepting (the listener stops when disabled): refused
	 * connections are freed before more are taken, so that a flood of
	 * one user does not run the daemon out of descriptors first. */
	if (check_all(g) && !g->reload_paused && !event_pending(g->resume_ev, EV_TIMEOUT, NULL)) {
		struct timeval now = { 0, 0 };

		set_listening(g->s, false);
		event_add(g->resume_ev, &now);
	}
	if (g->nfresh == g->cfresh) {
		size_t n = g->cfresh ? g->cfresh * 2 : 64;
		struct fresh *v = realloc(g->fresh, n * sizeof *v);

		if (!v)
			return bev;	/* not looked at: no worse than before */
		g->fresh = v;
		g->cfresh = n;
	}
	g->fresh[g->nfresh++] = (struct fresh){ bev, w->tcp };
	event_active(g->check_ev, 0, 0);
	return bev;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct guard *g = arg;

	(void)fd;
	(void)what;
	if (g->spare < 0)
		g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!g->reload_paused)
		set_listening(g->s, true);
}

/* accept() failed for a reason other than a retry (libevent's listener
 * calls this): out of descriptors, most likely. Tell one waiting client so
 * with the spare descriptor, stop accepting for a while (a listener that
 * cannot accept is always readable: it would spin), and say it at most once
 * a second. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct guard *g = accept_guard;
	int err = errno, fd;
	struct timeval tv;

	(void)arg;
	if (fd_short(err) && g->spare >= 0) {
		close(g->spare);
		g->spare = -1;
		fd = accept4(evconnlistener_get_fd(lev), NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			refuse(g, NULL, fd, 503, "gflowd is out of file descriptors; try again later");
			close(fd);
		}
		g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	set_listening(g->s, false);
	tv.tv_sec = g->backoff_ms / 1000;
	tv.tv_usec = (g->backoff_ms % 1000) * 1000;
	event_add(g->resume_ev, &tv);
	if (now_mono() - g->emfile_at >= 1.0) {
		fprintf(stderr, "gflowd: cannot accept connections: %s; accepting none for %d ms%s\n", strerror(err),
			g->backoff_ms, g->emfile ? " (and more such pauses since the last such line)" : "");
		g->emfile_at = now_mono();
		g->emfile = 0;
	} else
		g->emfile++;
	g->backoff_ms = g->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : g->backoff_ms * 2;
}

/* ---- listeners, and the connections a reload waits for -------------------
 *
 * The Unix socket belongs to the daemon that holds the socket lock
 * (loop.c takes it before this runs): only that daemon binds or removes
 * the socket file. */

static int listen_unix(struct server *s, struct gf_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(s->paths.socket) >= sizeof sa.sun_path)
		return gf_err_set(e, "socket path too long: %s", s->paths.socket);
	if (s->sock_lock_fd < 0)
		return gf_err_set(e, "%s is not ours to bind (no socket lock)", s->paths.socket);
	strcpy(sa.sun_path, s->paths.socket);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return gf_err_set(e, "socket: %s", strerror(errno));
	unlink(s->paths.socket);	/* stale: we hold the socket lock */
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 512) < 0) {
		gf_err_set(e, "cannot listen on %s: %s", s->paths.socket, strerror(errno));
		close(fd);
		return -1;
	}
	/* Anyone who can reach the directory may connect; who they are comes
	 * from SO_PEERCRED, and that is what permissions are checked against. */
	chmod(s->paths.socket, 0666);
	s->unix_fd = fd;
	return 0;
}

int api_listen_tcp(const char *host, int port, struct gf_err *e)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char service[16];
	int fd = -1, rc, one = 1, err = 0;

	snprintf(service, sizeof service, "%d", port);
	rc = getaddrinfo(host, service, &hints, &ai);
	if (rc)
		return gf_err_set(e, "cannot listen on %s:%d: %s", host, port, gai_strerror(rc));
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 512) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		gf_err_set(e, "cannot listen on %s:%d: %s (is another gflowd or program using it? set "
			      "[daemon] port)", host, port, strerror(err));
		errno = err;	/* EADDRINUSE: a start goes on without TCP (api_init) */
		return -1;
	}
	return fd;
}

static struct evhttp *new_http(struct server *s, void (*cb)(struct evhttp_request *, void *))
{
	struct evhttp *h = evhttp_new(s->base);

	evhttp_set_max_body_size(h, MAX_BODY);
	evhttp_set_max_headers_size(h, 64 * 1024);
	evhttp_set_timeout(h, 60);
	evhttp_set_gencb(h, cb, s);
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	evhttp_set_bevcb(h, new_bev, &s->guard->way[cb == api_on_tcp]);
	return h;
}

static void guard_listener(struct evhttp_bound_socket *b)
{
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(b), on_accept_error);
}

int api_init(struct server *s, struct gf_err *e)
{
	struct guard *g = calloc(1, sizeof *g);
	int tcp_fd;

	if (!g)
		return gf_err_set(e, "out of memory");
	s->guard = accept_guard = g;
	g->s = s;
	g->way[0] = (struct way){ g, false };
	g->way[1] = (struct way){ g, true };
	g->backoff_ms = BACKOFF_MIN_MS;
	g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	g->check_ev = event_new(s->base, -1, 0, check_fresh, g);
	g->resume_ev = evtimer_new(s->base, on_resume, g);
	s->http_unix = new_http(s, api_on_unix);
	if (s->inherited[0] >= 0)
		s->unix_fd = s->inherited[0];	/* a reload: the same socket, nothing lost */
	else if (listen_unix(s, e))
		return -1;
	if (!(s->bound_unix = evhttp_accept_socket_with_handle(s->http_unix, s->unix_fd)))
		return gf_err_set(e, "cannot serve on %s", s->paths.socket);
	guard_listener(s->bound_unix);

	s->http_tcp = new_http(s, api_on_tcp);
	/* A reload hands over the TCP socket for the new host:port (the old
	 * daemon bound it, so that a port in use could not stop us here). A
	 * port another program holds (a system daemon's, say) does not stop a
	 * daemon: it serves its Unix socket and says once what it went without. */
	tcp_fd = s->inherited[1] >= 0 ? s->inherited[1] : api_listen_tcp(s->cfg.host, s->cfg.port, e);
	if (tcp_fd < 0 && errno == EADDRINUSE) {
		snprintf(s->tcp_note, sizeof s->tcp_note,
			 "%s:%d is in use by another program; running without TCP (set [daemon] port to "
			 "serve it elsewhere)", s->cfg.host, s->cfg.port);
		fprintf(stderr, "gflowd: %s\n", s->tcp_note);
		return 0;
	}
	if (tcp_fd < 0)
		return -1;
	if (!(s->bound_tcp = evhttp_accept_socket_with_handle(s->http_tcp, tcp_fd))) {
		if (s->inherited[1] < 0)
			close(tcp_fd);
		return gf_err_set(e, "cannot serve on %s:%d", s->cfg.host, s->cfg.port);
	}
	guard_listener(s->bound_tcp);
	return 0;
}

static void set_listening(struct server *s, bool on)
{
	struct evhttp_bound_socket *b[] = { s->bound_unix, s->bound_tcp };

	for (size_t i = 0; i < 2; i++)
		if (b[i])
			(on ? evconnlistener_enable : evconnlistener_disable)(evhttp_bound_socket_get_listener(b[i]));
}

void api_pause(struct server *s)
{
	if (s->guard)
		s->guard->reload_paused = true;
	set_listening(s, false);
}

void api_resume(struct server *s)
{
	if (s->guard)
		s->guard->reload_paused = false;
	set_listening(s, true);
}

/* The local port of an INET or INET6 address, 0 for others. */
static int local_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

/* Does fd hold a connection accepted on one of the listeners: not itself
 * listening, and the same local path (Unix) or port (TCP: a listener on a
 * wildcard address accepts on the address the client reached)? */
static bool accepted_on(int fd, const struct sockaddr_storage *ls, const socklen_t *llen, int n)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	int listening = 0;
	socklen_t ilen = sizeof listening;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) < 0 || listening)
		return false;
	memset(&a, 0, sizeof a);
	if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (a.ss_family != ls[i].ss_family)
			continue;
		if (a.ss_family == AF_UNIX ? alen == llen[i] && !memcmp(&a, &ls[i], alen)
					   : local_port(&a) == local_port(&ls[i]))
			return true;
	}
	return false;
}

/* libevent keeps its connections to itself, so they are counted where the
 * kernel keeps them: our open sockets. */
int api_open_connections(struct server *s)
{
	struct sockaddr_storage ls[2];
	socklen_t llen[2];
	int fds[2], n = 0, count = 0;
	struct dirent *d;
	DIR *dir;

	if (api_fds(s, &fds[0], &fds[1]))
		return 0;
	for (int i = 0; i < 2 && fds[i] >= 0; i++) {
		llen[n] = sizeof ls[n];
		memset(&ls[n], 0, sizeof ls[n]);
		if (getsockname(fds[i], (struct sockaddr *)&ls[n], &llen[n]) == 0)
			n++;
	}
	if (!(dir = opendir("/proc/self/fd")))
		return 0;
	while ((d = readdir(dir))) {
		struct stat st;
		int fd = atoi(d->d_name);

		if (d->d_name[0] == '.' || fd == dirfd(dir) || fd == fds[0] || fd == fds[1])
			continue;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && accepted_on(fd, ls, llen, n))
			count++;
	}
	closedir(dir);
	return count;
}

int api_fds(struct server *s, int *unix_fd, int *tcp_fd)
{
	if (!s->bound_unix)
		return -1;
	*unix_fd = evhttp_bound_socket_get_fd(s->bound_unix);
	*tcp_fd = s->bound_tcp ? evhttp_bound_socket_get_fd(s->bound_tcp) : -1;
	return 0;
}

void api_close(struct server *s)
{
	struct guard *g = s->guard;

	if (s->http_unix)
		evhttp_free(s->http_unix);
	if (s->http_tcp)
		evhttp_free(s->http_tcp);
	if (g) {
		if (g->check_ev)
			event_free(g->check_ev);
		if (g->resume_ev)
			event_free(g->resume_ev);
		if (g->spare >= 0)
			close(g->spare);
		free(g->slot);
		free(g->fresh);
		free(g);
	}
	s->guard = accept_guard = NULL;
	/* Only the owner removes the socket: a daemon refused at start must
	 * not take it from the one that serves it. */
	if (s->sock_lock_fd >= 0)
		unlink(s->paths.socket);
}
