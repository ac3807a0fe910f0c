/* tmux.c — the tmux executor's server: where tmux and its socket are,
 * commands through the control client (tmuxctl.c), a job's new-session
 * words, and the tmux standby's session. */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

#include "spawn.h"
#include "trace.h"

/* tmux as the daemon's PATH finds it, the way /usr/bin/env would, without
 * starting env first (an exec on every start). */
static int find_tmux(char *path, size_t size, struct gf_err *e)
{
	const char *p = getenv("PATH");

	for (p = p ? p : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (n && (size_t)snprintf(path, size, "%.*s/tmux", (int)n, p) < size && access(path, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return gf_err_set(e, "tmux new-session failed: tmux is not on the daemon's PATH");
}

/* The socket of the daemon's own tmux server (so no other tmux server's
 * life or settings matter). */
int tmux_sock(const struct server *s, char *sock, size_t size, struct gf_err *e)
{
	if (gf_pathf(sock, size, "%s/tmux.sock", s->paths.runtime_dir))
		return gf_err_set(e, "the tmux socket path is too long");
	return 0;
}

/* tmux, and its server's socket. */
int tmux_server(struct server *s, char *tmux, size_t size, char *sock, size_t ssize, struct gf_err *e)
{
	return find_tmux(tmux, size, e) || tmux_sock(s, sock, ssize, e) ? -1 : 0;
}

/* session: the one a new-session makes (NULL: another command). A command
 * lost here would leave a job's session under the standby's name, where
 * `gjob attach` cannot find it, or a standby that is never made. */
static int tmux_command(struct server *s, const char *session, char *const words[], size_t nwords)
{
	char tmux[GF_PATH_MAX], sock[GF_PATH_MAX + 16];
	struct gf_err e;

	if (tmux_server(s, tmux, sizeof tmux, sock, sizeof sock, NULL))
		return 1;
	if (tmuxctl_command(s, tmux, sock, words, nwords) == 0)
		return 0;
	if (exec_tmux_client(tmux, sock, session, words, nwords, &e)) {
		fprintf(stderr, "gflowd: %s\n", e.msg);
		return 1;
	}
	return 0;
}

int exec_tmux_command(struct server *s, char *const words[], size_t nwords)
{
	return tmux_command(s, NULL, words, nwords);
}

/* `new-session` of a job's session, detached, up to the `--` before its
 * command; trace: room for the trace's variable. */
void tmux_new_session_words(struct argv *w, const char *session, char *trace, size_t size)
{
	arg(w, "new-session");
	arg(w, "-d");
	arg(w, "-s");
	arg(w, session);
	arg(w, "-x");
	arg(w, "200");
	arg(w, "-y");
	arg(w, "50");
	if (gf_trace_on() && getenv("GFLOW_TRACE") &&
	    snprintf(trace, size, "GFLOW_TRACE=%s", getenv("GFLOW_TRACE")) < (int)size) {
		arg(w, "-e");	/* a tmux server started untraced would not pass it on */
		arg(w, trace);
	}
	arg(w, "--");
}

/* The tmux executor's standby (standby.c): a session whose runner waits
 * for its request on fifo. */
int exec_tmux_standby(struct server *s, const char *session, const char *fifo)
{
	char trace[GF_PATH_MAX + 16], pid[32];
	struct argv w = { .n = 0 };

	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	tmux_new_session_words(&w, session, trace, sizeof trace);
	arg(&w, s->runner_path);
	arg(&w, "--standby");
	arg(&w, "--request");
	arg(&w, fifo);
	arg(&w, "--daemon");
	arg(&w, pid);
	arg(&w, "                        ");	/* room for the runner to name its job in (ps) */
	return tmux_command(s, session, w.v, (size_t)w.n);
}

