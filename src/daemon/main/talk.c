/* talk.c — talking to a running daemon: its API over its socket, and the
 * commands that only ask it (status, token) or stop it (stop). */
#include "lcint.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


extern char **environ;
/* One blocking GET over the Unix socket. Returns the HTTP status or -1. */
static int daemon_call(const char *sock, const char *method, const char *path, char **body)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[256], *buf = NULL, *p;
	size_t len = 0, cap = 0;
	int fd, status = -1;
	ssize_t n;

	*body = NULL;
	if (strlen(sock) >= sizeof sa.sun_path)
		return -1;
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Nothing goes to a server that is not the caller's own or root's
	 * (anyone may have made /tmp/gflow-<uid> first): as no daemon. */
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || gf_peer_trusted(fd, sock, NULL) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: gflowd\r\nConnection: close\r\n%s\r\n%s", method,
		     path, strcmp(method, "POST") ? "" : "Content-Type: application/json\r\nContent-Length: 2\r\n",
		     strcmp(method, "POST") ? "" : "{}");
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	for (;;) {
		if (len + 4097 > cap) {
			cap = (cap + 4097) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) == 1 && (p = strstr(buf, "\r\n\r\n")))
		*body = strdup(p + 4);
	free(buf);
	return status;
}

/* One blocking GET over the Unix socket. Returns the HTTP status or -1. */
static int daemon_get(const char *sock, const char *path, char **body)
{
	return daemon_call(sock, "GET", path, body);
}

/* Does a daemon answer on this socket? */
static bool answers(const char *sock)
{
	char *body = NULL;
	int st = daemon_get(sock, "/health", &body);

	free(body);
	return st == 200;
}

int lc_cmd_stop(struct lc *c, bool quiet)
{
	pid_t pid = lc_daemon_pid(&c->paths);

	if (!pid) {
		if (!quiet)
			printf("gflowd is not running\n");
		return 0;
	}
	if (kill(pid, SIGTERM) < 0)
		return lc_fail("cannot signal the daemon: %s", strerror(errno));
	for (int i = 0; i < 300; i++) {
		if (!lc_daemon_pid(&c->paths)) {
			if (!quiet)
				printf("gflowd stopped (running jobs keep running)\n");
			return 0;
		}
		lc_sleep_ms(50);
	}
	return lc_fail("%s", "the daemon did not stop within 15 s");
}

static const char *fmt_uptime(double secs, char *buf, size_t size)
{
	long s = (long)secs;

	if (s >= 86400)
		snprintf(buf, size, "%ldd %ldh %ldm", s / 86400, s % 86400 / 3600, s % 3600 / 60);
	else if (s >= 3600)
		snprintf(buf, size, "%ldh %ldm %lds", s / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, size, "%ldm %lds", s / 60, s % 60);
	return buf;
}

int lc_cmd_status(struct lc *c)
{
	pid_t pid;
	json_t *o, *gpus, *track;
	char *body, up[64], sys[GF_PATH_MAX];
	const char *sock = c->paths.socket;
	int st;

	/* The user's own daemon, else the machine's (as the clients choose). */
	if (!c->opts.system && !answers(sock) && !gf_system_socket(sys, sizeof sys) && answers(sys))
		sock = sys;
	st = daemon_get(sock, "/info", &body);
	if (st != 200 || !(o = json_loads(body, 0, NULL))) {
		free(body);
		if ((pid = lc_daemon_pid(&c->paths))) {
			printf("gflowd: running (pid %d) but not answering on %s\n", (int)pid, c->paths.socket);
			return 1;
		}
		printf("gflowd is not running (start your own with: gflowd up; the machine's, as root: gflowd up "
		       "--system)\n");
		return 3;
	}
	free(body);
	gpus = json_object_get(o, "gpus");
	printf("gflowd is running: %s daemon, %s\n", json_string_value(json_object_get(o, "mode")), sock);
	printf("  version:   %s\n", json_string_value(json_object_get(o, "version")));
	printf("  pid:       %d\n", (int)json_integer_value(json_object_get(o, "pid")));
	printf("  hosting:   %s\n", json_string_value(json_object_get(o, "hosting")));
	printf("  uptime:    %s\n",
	       fmt_uptime(now_real() - json_number_value(json_object_get(o, "started_at")), up, sizeof up));
	printf("  executor:  %s\n", json_string_value(json_object_get(o, "executor")));
	printf("  strategy:  %s\n", json_string_value(json_object_get(o, "strategy")));
	printf("  socket:    %s\n", sock);
	if (json_string_value(json_object_get(o, "tcp")))
		printf("  tcp:       %s\n", json_string_value(json_object_get(o, "tcp")));
	else
		printf("  tcp:       none (%s)\n", json_string_value(json_object_get(o, "tcp_note"))
						    ? json_string_value(json_object_get(o, "tcp_note")) : "not served");
	printf("  data:      %s\n", json_string_value(json_object_get(o, "data_dir")));
	printf("  jobs:      %lld\n", (long long)json_integer_value(json_object_get(o, "jobs")));
	if (json_string_value(json_object_get(o, "store_note")))
		printf("  store:     %s\n", json_string_value(json_object_get(o, "store_note")));
	notify_print_status(o);
	if (json_array_size(json_object_get(o, "unreadable_jobs"))) {
		json_t *bad = json_object_get(o, "unreadable_jobs"), *id;
		size_t i;

		/* Store rows set aside: shown as Failed, kept as found. */
		printf("  unreadable: %lld job record%s, kept as found (see the daemon's log):",
		       (long long)json_integer_value(json_object_get(o, "unreadable_count")),
		       json_integer_value(json_object_get(o, "unreadable_count")) == 1 ? "" : "s");
		json_array_foreach(bad, i, id)
			printf(" %lld", (long long)json_integer_value(id));
		printf("%s\n", json_array_size(bad) < (size_t)json_integer_value(json_object_get(o, "unreadable_count"))
					? " …" : "");
	}
	if (json_is_true(json_object_get(gpus, "nvml_ok"))) {
		json_t *a = json_object_get(gpus, "gpus"), *g;
		size_t i;

		printf("  GPUs:      %zu (driver %s)\n", json_array_size(a),
		       json_string_value(json_object_get(gpus, "driver_version")));
		json_array_foreach(a, i, g)
			printf("    %lld  %s  %s\n", (long long)json_integer_value(json_object_get(g, "index")),
			       json_string_value(json_object_get(g, "name")),
			       json_string_value(json_object_get(g, "state")));
	} else
		printf("  GPUs:      none (%s)\n", json_string_value(json_object_get(gpus, "status")));
	track = json_object_get(o, "tracking");
	if (json_is_true(json_object_get(track, "devices_constrained")))
		printf("  devices:   DevicesConstrained=yes (a job opens only its own GPUs)\n");
	else
		printf("  devices:   DevicesConstrained=no (%s)\n",
		       json_string_value(json_object_get(track, "devices_why"))
			       ? json_string_value(json_object_get(track, "devices_why")) : "unknown");
	json_decref(o);
	return 0;
}

/* `gflowd token [--revoke]`: the caller's own token for the TCP API, from
 * the daemon that answers (the personal one, else the system one). */
int lc_cmd_token(struct lc *c)
{
	char buf[128], sys[GF_PATH_MAX], *body = NULL;
	const char *sock = c->paths.socket;
	json_t *o;
	FILE *f;
	int st;

	if (!c->opts.system && !answers(c->paths.socket) && !gf_system_socket(sys, sizeof sys))
		sock = sys;
	st = daemon_call(sock, "POST", c->revoke ? "/tokens/revoke" : "/tokens", &body);
	o = body ? json_loads(body, 0, NULL) : NULL;
	free(body);
	if (st == 200 && o) {
		if (c->revoke)
			printf("%s\n", json_is_true(json_object_get(o, "revoked")) ? "Your token is revoked"
										   : "You had no token");
		else
			printf("%s\n", json_string_value(json_object_get(o, "token")));
		json_decref(o);
		return 0;
	}
	if (st > 0) {
		lc_fail("%s", o && json_string_value(json_object_get(o, "error")) ? json_string_value(json_object_get(o, "error"))
									       : "the daemon refused");
		json_decref(o);
		return 1;
	}
	json_decref(o);
	if (c->revoke || c->opts.system)
		return lc_fail("no gflowd answers on %s", sock);
	/* No daemon: the personal daemon's own token, which acts as its user. */
	f = fopen(c->paths.token, "re");
	if (!f || !fgets(buf, sizeof buf, f)) {
		if (f)
			fclose(f);
		return lc_fail("no token yet at %s: start the daemon once (gflowd up)", c->paths.token);
	}
	fclose(f);
	fputs(buf, stdout);
	return 0;
}
