/* tmuxctl.c — the tmux executor's control client: one `tmux -C` per
 * personal daemon, attached to a session of its own ("gflow-control") on
 * gflow's tmux server, through which exec.c makes each job's session.
 *
 * A job's session is then one line written to a pipe, where a tmux client
 * started per job costs an exec, a connection and its handshake (about half
 * of what the tmux executor added to a start), and the loop no longer waits
 * for that client to exit. tmux answers each command line with one block,
 * "%begin T N F" … "%end T N F" or "%error T N F" (F = 1 for a command of
 * this client), in the order the lines were sent; between blocks come
 * notifications, which are read and dropped. The jobs whose lines wait for
 * their answer are a FIFO; an error answer fails that job's start (after
 * its run directory is claimed, so no late runner can run it).
 *
 * Whenever the client cannot be used (it is not running and cannot be
 * started, the pipe is full, or a line would hold what the line protocol
 * cannot carry), tmuxctl_new_session says so and exec.c starts a tmux
 * client as before. When the client dies, the starts still waiting for
 * their answer are made that way too (a session made already is found
 * there), and so are the other commands waiting (the standby's session,
 * its rename to a job's); the next start starts a new client, unless this
 * one and the one before it died before their first answer (then tmux
 * clients for RESTART_SECS). One such death alone is no sign of a tmux
 * that cannot serve: a client started as the server exits (kill-server)
 * connects to it and is told "server exited unexpectedly". */
#include "run.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

#define CTL_SESSION "gflow-control"
#define RESTART_SECS 10		/* after two clients in a row that never answered, tmux clients this long */

struct ctl_line {
	int64_t id;		/* the job whose session it makes; 0: another command */
	int64_t run_seq;	/* …in this run of it */
	char **words;		/* its words, NULL-terminated (NULL: our own first line) */
	size_t nwords;
};

struct tmuxctl {
	pid_t pid;
	int wfd, rfd;
	struct event *ev;
	struct evbuffer *in;
	double retry_after;		/* monotonic seconds */
	bool answered;			/* this client answered a line */
	int mute;			/* clients in a row that died before their first answer */
	char tmux[GF_PATH_MAX], sock[GF_PATH_MAX + 16];
	struct ctl_line *q;	/* sent, waiting for their answer: q[head..len) */
	size_t head, len, cap;
	bool in_block, ours;	/* inside an answer; one to a line of ours */
	char err[256];		/* the first line of an error answer */
};

/* Appends `v` to b as one word of tmux's command language: in single
 * quotes, where nothing is special (no ~, $, #{} or ; expansion), a quote
 * itself as '\''. False for what a line should not carry: control
 * characters (a newline above all) and bytes beyond ASCII, which tmux
 * might read as UTF-8 (a tmux client passes those as they are). */
static bool quote_word(struct evbuffer *b, const char *v)
{
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			return false;
	evbuffer_add(b, "'", 1);
	for (const char *c = v; *c;) {
		size_t n = strcspn(c, "'");

		evbuffer_add(b, c, n);
		c += n;
		if (*c == '\'') {
			evbuffer_add(b, "'\\''", 4);
			c++;
		}
	}
	evbuffer_add(b, "'", 1);
	return true;
}

static void drop_line(struct ctl_line *l)
{
	for (size_t i = 0; l->words && i < l->nwords; i++)
		free(l->words[i]);
	free(l->words);
	l->words = NULL;
}

static void queue_line(struct tmuxctl *c, int64_t id, int64_t run_seq, char **words, size_t nwords)
{
	if (c->len == c->cap) {
		if (c->head) {	/* reuse the answered front */
			memmove(c->q, c->q + c->head, (c->len - c->head) * sizeof *c->q);
			c->len -= c->head;
			c->head = 0;
		}
		c->q = gf_grow(c->q, &c->cap, c->len + 1, sizeof *c->q, 16);
	}
	c->q[c->len++] = (struct ctl_line){ .id = id, .run_seq = run_seq, .words = words, .nwords = nwords };
}

/* Writes a whole line or nothing (a pipe write of at most PIPE_BUF bytes
 * is atomic); false when it could not. */
static bool write_line(struct tmuxctl *c, const char *text, size_t n)
{
	ssize_t w;

	if (c->wfd < 0 || n > PIPE_BUF)
		return false;
	do
		w = write(c->wfd, text, n);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)n;
}

/* The job of line l, while its start is the one the line was for. */
static struct job *line_job(struct server *s, const struct ctl_line *l)
{
	struct job *j = jobs_get(s, l->id);

	return j && j->active && j->run_seq == l->run_seq ? j : NULL;
}

/* The start of the job of line l failed: its runner will not come. */
static void start_failed(struct server *s, const struct ctl_line *l, const char *msg)
{
	struct job *j = line_job(s, l);

	if (!j)
		return;
	fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, msg);
	reap_start_failed(s, j, msg);
}

static void on_read(evutil_socket_t fd, short what, void *arg);

static void close_client(struct tmuxctl *c)
{
	if (c->ev)
		event_free(c->ev);
	c->ev = NULL;
	if (c->wfd >= 0)
		close(c->wfd);	/* the client reads EOF and exits; exec_reap collects it */
	if (c->rfd >= 0)
		close(c->rfd);
	c->wfd = c->rfd = -1;
	c->pid = 0;
	c->in_block = false;
	if (c->in)
		evbuffer_drain(c->in, evbuffer_get_length(c->in));
}

/* The client is gone: said, counted (two in a row that never answered
 * mean tmux clients for a while) and closed. */
static void client_gone(struct tmuxctl *c)
{
	fprintf(stderr, "gflowd: the tmux control client (pid %ld) is gone%s\n", (long)c->pid,
		c->answered ? "" : " before its first answer");
	if (c->answered)
		c->mute = 0;
	else if (++c->mute >= 2)
		c->retry_after = now_mono() + RESTART_SECS;
	close_client(c);
}

/* A client attached to CTL_SESSION (made if missing); the server, when
 * this starts it, never exits when its last session ends. -1 (e set) when
 * it cannot be started, 1 when it died at once (client_gone). */
static int start_client(struct server *s, struct tmuxctl *c, struct gf_err *e)
{
	static const char first[] = "set-option -s exit-empty off\n";
	char *argv[] = { c->tmux, "-f", "/dev/null", "-S", c->sock, "-C", "new-session", "-A", "-s", CTL_SESSION,
			 "--", "cat", NULL };

	if (exec_spawn_piped(argv, &c->wfd, &c->rfd, &c->pid, e))
		return -1;
	c->answered = false;
	c->ev = event_new(s->base, c->rfd, EV_READ | EV_PERSIST, on_read, s);
	if (!c->ev || event_add(c->ev, NULL))
		abort();
	c->in_block = false;
	if (!write_line(c, first, sizeof first - 1)) {
		client_gone(c);	/* its pipe closed already: it died before its first answer */
		return 1;
	}
	queue_line(c, 0, 0, NULL, 0);
	return 0;
}

/* The client is gone: what waits for an answer is done with tmux clients
 * (a command done already fails there harmlessly: a session made or
 * renamed is found so). */
static void client_died(struct server *s, struct tmuxctl *c)
{
	struct ctl_line *q = c->q;
	size_t head = c->head, len = c->len;

	client_gone(c);
	/* The queue is let go first: a start made meanwhile has a new one. */
	c->q = NULL;
	c->head = c->len = c->cap = 0;
	for (size_t i = head; i < len; i++) {
		struct ctl_line *l = &q[i];
		char session[64];
		struct gf_err e;

		snprintf(session, sizeof session, "gflow-%lld", (long long)l->id);
		if (l->id && line_job(s, l) &&
		    exec_tmux_client(c->tmux, c->sock, session, l->words, l->nwords, &e))
			start_failed(s, l, e.msg);
		else if (!l->id && l->words && exec_tmux_client(c->tmux, c->sock, NULL, l->words, l->nwords, &e))
			fprintf(stderr, "gflowd: %s\n", e.msg);
		drop_line(l);
	}
	free(q);
}

/* One answer is complete: the line at the front of the queue is answered. */
static void answered(struct server *s, struct tmuxctl *c, bool error)
{
	struct ctl_line line, *l = &line;

	if (c->head == c->len)
		return;		/* not ours after all */
	c->answered = true;
	line = c->q[c->head++];	/* a copy: a start made meanwhile may move the queue */
	if (c->head == c->len)
		c->head = c->len = 0;
	/* "duplicate session": this start's session is there already (made
	 * for the same run before): its runner claims the run or stops. */
	if (error && l->id && strncmp(c->err, "duplicate session", 17)) {
		char msg[GF_ERR_MAX];

		snprintf(msg, sizeof msg, "tmux new-session failed: %s", c->err[0] ? c->err : "(it said nothing)");
		start_failed(s, l, msg);
	} else if (error && !l->id)
		fprintf(stderr, "gflowd: tmux control client: %s\n", c->err);
	drop_line(l);
}

static void on_line(struct server *s, struct tmuxctl *c, const char *line)
{
	if (!c->in_block) {
		unsigned long long t, n;
		int flags;

		if (sscanf(line, "%%begin %llu %llu %d", &t, &n, &flags) == 3) {
			c->in_block = true;
			c->ours = flags & 1;
			c->err[0] = '\0';
		}
		return;		/* or a notification */
	}
	if (!strncmp(line, "%end ", 5) || !strncmp(line, "%error ", 7)) {
		c->in_block = false;
		if (c->ours)
			answered(s, c, line[1] == 'e' && line[2] == 'r');
	} else if (!c->err[0])
		snprintf(c->err, sizeof c->err, "%s", line);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	struct tmuxctl *c = s->tmuxctl;
	char *line;
	int n;

	(void)what;
	while ((n = evbuffer_read(c->in, fd, 65536)) > 0)
		while ((line = evbuffer_readln(c->in, NULL, EVBUFFER_EOL_LF))) {
			on_line(s, c, line);
			free(line);
		}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		client_died(s, c);
}

/* Sends one command line: 0 sent, 1 not (the client cannot be used). j:
 * the job whose session it makes, NULL: another command (an error is
 * logged). Its words are kept for a tmux client should this one die. */
static int send_line(struct server *s, const struct job *j, const char *tmux, const char *sock, char *const words[],
		     size_t nwords)
{
	struct tmuxctl *c = s->tmuxctl;
	struct evbuffer *b;
	char **copy;
	size_t n;
	bool ok = true;

	if (!s->base)
		return 1;
	if (!c) {
		if (!(c = s->tmuxctl = calloc(1, sizeof *c)) || !(c->in = evbuffer_new()))
			abort();
		c->wfd = c->rfd = -1;
	}
	if (!c->pid) {
		struct gf_err ce;
		int rc;

		if (now_mono() < c->retry_after)
			return 1;
		snprintf(c->tmux, sizeof c->tmux, "%s", tmux);
		snprintf(c->sock, sizeof c->sock, "%s", sock);
		if ((rc = start_client(s, c, &ce)) < 0) {
			fprintf(stderr, "gflowd: cannot start a tmux control client (%s): starting tmux for each job\n",
				ce.msg);
			c->retry_after = now_mono() + RESTART_SECS;
		}
		if (rc)
			return 1;
	}
	if (!(b = evbuffer_new()))
		abort();
	for (size_t i = 0; i < nwords && ok; i++)
		ok = !(i && evbuffer_add(b, " ", 1)) && quote_word(b, words[i]);
	evbuffer_add(b, "\n", 1);
	n = evbuffer_get_length(b);
	ok = ok && write_line(c, (const char *)evbuffer_pullup(b, -1), n);
	evbuffer_free(b);
	if (!ok)
		return 1;
	if (!(copy = calloc(nwords + 1, sizeof *copy)))
		abort();
	for (size_t i = 0; i < nwords; i++)
		if (!(copy[i] = strdup(words[i])))
			abort();
	queue_line(c, j ? j->id : 0, j ? j->run_seq : 0, copy, nwords);
	return 0;
}

int tmuxctl_new_session(struct server *s, const struct job *j, const char *tmux, const char *sock,
			const char *session, char *const words[], size_t nwords)
{
	(void)session;	/* "gflow-<id>", made again from the id when needed */
	return send_line(s, j, tmux, sock, words, nwords);
}

int tmuxctl_command(struct server *s, const char *tmux, const char *sock, char *const words[], size_t nwords)
{
	return send_line(s, NULL, tmux, sock, words, nwords);
}

void tmuxctl_close(struct server *s)
{
	struct tmuxctl *c = s->tmuxctl;

	if (!c)
		return;
	close_client(c);
	for (size_t i = c->head; i < c->len; i++)
		drop_line(&c->q[i]);
	free(c->q);
	evbuffer_free(c->in);
	free(c);
	s->tmuxctl = NULL;
}
