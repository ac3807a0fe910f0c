/* reap.c — watching runners: noticing that a started runner is up (its
 * `runner` file appears; inotify), watching it through a pidfd, collecting
 * its result when it exits, and re-attaching to runners after a restart. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runfile.h"

#define START_TIMEOUT_SECS 30

/* A job whose runner has been launched but has not written `runner` yet. */
struct pending {
	struct server *s;
	int64_t id;
	int wd;
	struct event *timeout;
	struct pending *next;
};


static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_send_signal_(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

static void collect(struct server *s, struct job *j)
{
	char dir[GF_PATH_MAX];
	struct job_result r;
	struct gf_err e;

	exec_run_dir(s, j, dir, sizeof dir);
	if (runfile_read_result(dir, &r, &e) == 0)
		jobs_ended(s, j, &r, NULL);
	else {
		char why[GF_ERR_MAX + 400], out[320] = "", path[GF_PATH_MAX + 16];
		FILE *f;

		/* What the runner said about it, if anything. */
		if (!gf_pathf(path, sizeof path, "%s/runner.out", dir) && (f = fopen(path, "re"))) {
			char line[320];

			while (fgets(line, sizeof line, f))
				if (line[0] != '\n')
					snprintf(out, sizeof out, "%s", line);
			fclose(f);
			out[strcspn(out, "\n")] = '\0';
		}
		snprintf(why, sizeof why, "the job's supervisor ended without a result (%s)%s%s", e.msg,
			 out[0] ? ": " : "", out);
		jobs_ended(s, j, NULL, why);
	}
}

static void on_runner_exit(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;	/* reused as a plain (server, id) pair */
	struct job *j = jobs_get(p->s, p->id);


	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	(void)what;
	/* Only believe the pidfd itself. epoll can report an event for a file
	 * that had this fd number before: libevent closes a finished HTTP
	 * connection before removing it from epoll, and a child forked at that
	 * moment keeps the old file, and so its epoll entry, alive. */
	if (j && j->active && j->pidfd == fd && poll(&pfd, 1, 0) == 0) {
		event_add(j->pidfd_ev, NULL);
		return;
	}
	if (j && j->active)
		collect(p->s, j);
	free(p);
}

static struct pending *pending_take(struct server *s, int64_t id)
{
	for (struct pending **pp = &s->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct pending *p = *pp;

			*pp = p->next;
			return p;
		}
	return NULL;
}

static void pending_drop(struct server *s, int64_t id)
{
	struct pending *p = pending_take(s, id);

	if (!p)
		return;
	if (p->wd >= 0)
		inotify_rm_watch(s->inotify_fd, p->wd);
	if (p->timeout)
		event_free(p->timeout);
	free(p);
}

/* The runner's file is there: watch its pid. Returns 0 when attached (or
 * the job was collected), -1 when there is no runner file yet. */
static int attach(struct server *s, struct job *j)
{
	char dir[GF_PATH_MAX];
	struct runner_info ri;
	unsigned long long ticks = 0;
	struct pending *p;
	struct gf_err e;
	int fd;

	exec_run_dir(s, j, dir, sizeof dir);
	if (runfile_read_runner(dir, &ri, &e))
		return -1;
	pending_drop(s, j->id);
	if (ri.pid <= 0) {
		/* Claimed by an earlier daemon that gave up on this start. */
		jobs_ended(s, j, NULL, "the job's supervisor did not start");
		return 0;
	}
	fd = pidfd_open_(ri.pid);
	if (fd < 0 || proc_start_ticks(ri.pid, &ticks) || ticks != ri.start_ticks ||
	    (j->runner_ticks && j->runner_ticks != ri.start_ticks)) {
		/* Gone already (or the pid is someone else's now). */
		if (fd >= 0)
			close(fd);
		collect(s, j);
		return 0;
	}
	if (j->runner_pid != ri.pid || j->runner_ticks != ri.start_ticks) {
		j->runner_pid = ri.pid;
		j->runner_ticks = ri.start_ticks;
		if (jobs_save(s, j, &e))
			fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
	}
	p = calloc(1, sizeof *p);
	if (!p)
		abort();
	p->s = s;
	p->id = j->id;
	j->pidfd = fd;
	j->pidfd_ev = event_new(s->base, fd, EV_READ, on_runner_exit, p);
	event_add(j->pidfd_ev, NULL);
	if (j->state == JS_CANCELLED && !j->cancel_sent)
		reap_signal(s, j, SIGTERM);
	return 0;
}

/* Mark a run directory as abandoned, unless its runner got there first.
 * Returns 1 when we claimed it (the runner will refuse to run). */
static int claim(const char *dir)
{
	char path[GF_PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof path, "%s/runner", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == ENOENT ? 1 : 0;	/* no directory: it never started */
	if (write(fd, "pid=0\n", 6) != 6 || fsync(fd) < 0) {
		/* Still a claim: the file exists and holds no live pid. */
	}
	close(fd);
	return 1;
}

static void on_start_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;
	struct server *s = p->s;
	struct job *j = jobs_get(s, p->id);
	char dir[GF_PATH_MAX];

	(void)fd;
	(void)what;
	if (!j || !j->active) {
		pending_drop(s, p->id);
		return;
	}
	exec_run_dir(s, j, dir, sizeof dir);
	if (attach(s, j) == 0)
		return;
	if (claim(dir)) {
		pending_drop(s, j->id);
		jobs_ended(s, j, NULL, "the job's supervisor did not start within 30 s");
	} else
		attach(s, j);
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof *ev + ev->len;
			if (!ev->len || strcmp(ev->name, "runner"))
				continue;
			for (struct pending *q = s->pending; q; q = q->next)
				if (q->wd == ev->wd) {
					struct job *j = jobs_get(s, q->id);

					if (j && j->active)
						attach(s, j);
					else
						pending_drop(s, q->id);
					break;
				}
		}
	}
}

int reap_init(struct server *s, struct gf_err *e)
{
	s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->inotify_fd < 0)
		return gf_err_set(e, "inotify: %s", strerror(errno));
	s->inotify_ev = event_new(s->base, s->inotify_fd, EV_READ | EV_PERSIST, on_inotify, s);
	event_add(s->inotify_ev, NULL);
	return 0;
}

void reap_watch_start(struct server *s, struct job *j)
{
	struct pending *p = calloc(1, sizeof *p);
	struct timeval tv = { START_TIMEOUT_SECS, 0 };
	char dir[GF_PATH_MAX];

	if (!p)
		abort();
	exec_run_dir(s, j, dir, sizeof dir);
	p->s = s;
	p->id = j->id;
	p->wd = inotify_add_watch(s->inotify_fd, dir, IN_MOVED_TO | IN_CREATE | IN_ONLYDIR);
	p->timeout = event_new(s->base, -1, 0, on_start_timeout, p);
	event_add(p->timeout, &tv);
	p->next = s->pending;
	s->pending = p;
	/* The runner may have been quicker than the watch. */
	attach(s, j);
}

int reap_signal(struct server *s, struct job *j, int sig)
{
	(void)s;
	if (j->pidfd < 0)
		return -1;	/* not attached yet: attach() sends it */
	j->cancel_sent = true;
	return pidfd_send_signal_(j->pidfd, sig);
}

void reap_forget(struct server *s, struct job *j)
{
	pending_drop(s, j->id);
	if (j->pidfd_ev) {
		/* on_runner_exit's argument is freed by the callback only when it
		 * fires; free it here when it will not. */
		void *arg = event_get_callback_arg(j->pidfd_ev);

		if (event_pending(j->pidfd_ev, EV_READ, NULL))
			free(arg);
		event_free(j->pidfd_ev);
		j->pidfd_ev = NULL;
	}
	if (j->pidfd >= 0) {
		close(j->pidfd);
		j->pidfd = -1;
	}
	exec_remove_run_dir(s, j);
}

void reap_close(struct server *s)
{
	while (s->pending)
		pending_drop(s, s->pending->id);
}

void reap_recover(struct server *s)
{
	struct gf_err e;

	for (int64_t i = 1; i <= s->max_id; i++) {
		struct job *j = s->jobs[i];
		char dir[GF_PATH_MAX];
		struct job_result r;

		if (!j || !j->active)
			continue;
		exec_run_dir(s, j, dir, sizeof dir);
		if (runfile_read_result(dir, &r, &e) == 0) {
			jobs_ended(s, j, &r, NULL);
			continue;
		}
		if (attach(s, j) == 0)
			continue;
		if (claim(dir)) {
			/* The runner never started: nothing ran, so it queues again. */
			j->state = j->state == JS_CANCELLED ? JS_CANCELLED : JS_QUEUED;
			j->active = false;
			j->gpu_mask = 0;
			j->start_time = 0;
			if (j->state == JS_CANCELLED)
				j->end_time = now_real();
			if (jobs_save(s, j, &e))
				fprintf(stderr, "gflowd: job %lld: %s\n", (long long)j->id, e.msg);
			exec_remove_run_dir(s, j);
		} else
			attach(s, j);
	}
}
