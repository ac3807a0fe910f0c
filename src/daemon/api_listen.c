/* api_listen.c — the API's listeners: the Unix socket and the TCP port,
 * api_init/api_close, pausing and resuming them for a reload, and the
 * connections a reload waits for (api_open_connections). */
#include "apiint.h"

#include <dirent.h>
#include <errno.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_BODY (8 * 1024 * 1024)

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
	return h;
}

int api_init(struct server *s, struct gf_err *e)
{
	int tcp_fd;

	s->http_unix = new_http(s, api_on_unix);
	if (s->inherited[0] >= 0)
		s->unix_fd = s->inherited[0];	/* a reload: the same socket, nothing lost */
	else if (listen_unix(s, e))
		return -1;
	if (!(s->bound_unix = evhttp_accept_socket_with_handle(s->http_unix, s->unix_fd)))
		return gf_err_set(e, "cannot serve on %s", s->paths.socket);

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
	set_listening(s, false);
}

void api_resume(struct server *s)
{
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
	if (s->http_unix)
		evhttp_free(s->http_unix);
	if (s->http_tcp)
		evhttp_free(s->http_tcp);
	/* Only the owner removes the socket: a daemon refused at start must
	 * not take it from the one that serves it. */
	if (s->sock_lock_fd >= 0)
		unlink(s->paths.socket);
}
