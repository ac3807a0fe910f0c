/* main.c — gflow-runner, the supervisor of one job: the order of a run.
 *
 * It announces itself in RUNDIR/runner, sees that the job is born in its
 * cgroups (--cgroup, made by the daemon, which tracks the job's processes
 * through them), starts the job (its own process group, the command of
 * RUNDIR/argv or after `--`, the environment of RUNDIR/env, output to the
 * log, under --pty through a pseudo-terminal it also copies to its own
 * stdout), enforces the time limit, obeys SIGTERM/SIGINT as "cancel",
 * cleans up whatever the job left behind, and writes RUNDIR/result once the
 * job and every descendant are gone (retrying until it can: the exit status
 * is never given up). Under --attach it offers the pty to viewers through a
 * socket (attach.c). It needs nothing from the daemon after it starts, so it
 * outlives daemon restarts.
 * Started with --standby (standby.c) it waits for these options on stdin
 * (with --env-bytes/--argv-bytes the environment and command follow them
 * there), makes RUNDIR/runner.out itself when it has something to say,
 * under --hold lets the job exec only on the daemon's word (the commit
 * that started it is on disk), and under --report tells the result on its
 * stdin (a socket of the daemon's) and writes RUNDIR/result only when the
 * daemon does not answer that it recorded it; asked back ("K") after a
 * plain run, it waits on that socket for the next job's options and runs
 * that job the same way (standby_main). Nothing in RUNDIR or the log is
 * reached through a symbolic link.
 * This file owns the order (options, the run directory, the announcement,
 * start, supervise, result) and the standby's handshake; the start of the
 * child is child.c's, the poll() loop until all are gone supervise.c's,
 * RUNDIR/result result.c's, the job's terminal (the pty, the pane, the
 * viewers) pane.c's, the command line and the job's environment, command
 * and spec opts.c's. It calls down into them all; none calls back up. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "attach.h"
#include "err.h"
#include "runfile.h"
#include "standby.h"
#include "trace.h"
#include "runner.h"

static int open_run_dir(struct runner *r, struct gf_err *e)
{
	r->dirfd = runfile_open_dir(r->o.dir, 1);
	if (r->dirfd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return gf_err_set(e, "%s is not a directory (a symbolic link?): not following it", r->o.dir);
	if (r->dirfd < 0)
		return gf_err_set(e, "cannot open %s: %s", r->o.dir, strerror(errno));
	return 0;
}

/* Fds 0-2 must be open, or the first file we open would land there. */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return;
}

/* --- the runner file --------------------------------------------------- */

/* RUNDIR/runner: our pid and start, in place where the run directory
 * keeps an empty one (no inode made: runfile.c), exclusively: a claim of
 * the daemon's there is never replaced. A standby read its start ticks as
 * it waited. */
static int announce(struct runner *r, struct gf_err *e)
{
	struct runner_info ri = { .pid = getpid(), .start_ticks = r->start_ticks, .started_at = now_real() };

	if (!ri.start_ticks && proc_start_ticks(ri.pid, &ri.start_ticks))
		return gf_err_set(e, "cannot read /proc/self/stat: %s", strerror(errno));
	if (runfile_write_runner_at(r->dirfd, r->o.dir, &ri, 0, e) == 0)
		return 0;
	if (errno == EEXIST)
		return gf_err_set(e, "%s/runner exists: the daemon gave up on this start", r->o.dir);
	return -1;
}

static void runner_free(struct runner *r)
{
	close_master(r);
	outbuf_free(&r->to_pane);
	if (r->logfd >= 0)
		close(r->logfd);
	if (r->sigfd >= 0)
		close(r->sigfd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	if (r->chan >= 0)
		close(r->chan);
	if (r->holdfd >= 0)
		close(r->holdfd);
	if (r->errfd >= 0)
		close(r->errfd);
	free(r->envp);
	free(r->env_blob);
	if (r->argv_blob)
		free(r->argv);
	free(r->argv_blob);
	free(r->spec);
	free(r->spec_blob);
	free(r->limits_blob);
	for (size_t i = 0; r->argv_owned && i < r->nargv; i++)
		free(r->argv_owned[i]);
	free(r->argv_owned);
}

/* A held start the daemon gave up (it stopped before the commit that
 * started the job was on disk): the job never ran. Our announcement goes,
 * so a daemon that finds the job recorded as started queues it again. */
static void give_up(struct runner *r)
{
	unlinkat(r->dirfd, "runner", 0);	/* read as none, like an empty one */
	say(r, "job %s: the daemon stopped before this start was on disk; not started", r->o.job);
}

/* A standby's: what follows the request on the pipe (the job's
 * environment, command, spec and limits, as the options say) and, held,
 * the pipe to wait on before the exec. Nonzero: the pipe ended first (the
 * daemon stopped): nothing is to be done. */
static int take_the_rest(struct runner *r, struct standby_pipe *p)
{
	int go;

	if ((r->o.env_bytes >= 0 && standby_take(p, (size_t)r->o.env_bytes, &r->env_blob)) ||
	    (r->o.argv_bytes >= 0 && standby_take(p, (size_t)r->o.argv_bytes, &r->argv_blob)) ||
	    (r->o.spec_bytes >= 0 && standby_take(p, (size_t)r->o.spec_bytes, &r->spec_blob)) ||
	    (r->o.limits_bytes >= 0 && standby_take(p, (size_t)r->o.limits_bytes, &r->limits_blob)))
		return -1;
	if (!r->o.hold)
		return 0;
	go = standby_let_go(p);
	if (go == 0)
		return -1;
	if (go < 0) {
		r->holdfd = p->fd;	/* the child waits on it */
		p->fd = -1;
	}
	return 0;
}

/* --report: the daemon's socket (stdin's, kept close-on-exec) stays ours
 * to tell the result on (result.c's report_result). Under --hold the
 * child waits on it for the daemon's byte: we keep a copy. */
static void keep_channel(struct runner *r, struct standby_pipe *p)
{
	if (r->holdfd >= 0)
		r->chan = fcntl(r->holdfd, F_DUPFD_CLOEXEC, 3);
	else {
		r->chan = p->fd;
		p->fd = -1;
	}
}

/* A runner's state before its job: nothing open, nothing read. What a
 * standby learnt as it waited (its start ticks, the signals it was started
 * with ignored) is kept across the jobs it serves, and so is the spare log
 * it made for the next (spare_log_make). r is zeroed or a runner's. */
static void runner_reset(struct runner *r)
{
	unsigned long long ticks = r->start_ticks;
	uint64_t ignored = r->ignored_signals;
	int spare = r->spare_dir[0] ? r->spare_log : -1;
	char dir[sizeof r->spare_dir];

	memcpy(dir, r->spare_dir, sizeof dir);
	*r = (struct runner){ .sigfd = -1, .logfd = -1, .errfd = -1, .master = -1, .slave_keep = -1, .dirfd = -1,
			      .holdfd = -1, .chan = -1, .pane_flags = { -1, -1 }, .ended_by = "exit",
			      .start_ticks = ticks, .ignored_signals = ignored, .spare_log = spare };
	memcpy(r->spare_dir, dir, sizeof dir);
}

/* May this runner, its job's end recorded, serve the daemon's next job?
 * Only a plain run on the daemon's socket that left nothing behind in us:
 * no terminal, no viewers, no output of ours redirected (runner.out), not
 * moved into a job's group. */
static bool can_serve_again(const struct runner *r, bool piped)
{
	return r->stay && piped && r->chan >= 0 && !r->moved && !r->o.pty && !r->o.attach && !r->o.interactive &&
	       r->output_due;
}

/* One job, from its options on (`bad`/`e`: they could not be read); the
 * exit status. *again: its end was told, recorded, and we may serve the
 * next job (the daemon's socket is left open in r->chan). */
static int run_job(struct runner *r, bool piped, uint64_t started, int bad, struct gf_err *e, bool *again)
{
	struct job_result res = { 0 };

	*again = false;
	/* Traced only for a personal daemon (the system one never passes it). */
	if (!bad && r->o.uid < 0 && gf_trace_open())
		gf_trace_at(started, "runner_start", strtoll(r->o.job, NULL, 10));
	r->output_due = piped;
	if (bad || open_run_dir(r, e) || (piped && r->o.pty && own_output(r, e)) || read_env(r, e) ||
	    read_spec(r, e) || setup_signals(r, e) || become_subreaper(e) || (open_log(r), announce(r, e))) {
		say(r, "%s", e->msg);
		return 2;
	}
	/* From here on, every way out writes a result. */
	if (!r->o.pty || !isatty(0))
		setsid();	/* no pane: a session of our own (fails harmlessly when we lead one) */
	if (start_job(r, e) == 0) {
		if (r->o.pty)
			pane_setup(r);
		if (r->o.attach)
			offer_attach(r);
		supervise(r);
		if (r->have_cerr && r->cerr.stage == STAGE_HOLD) {
			give_up(r);
			return 0;
		}
		fill_result(r, &res);
		pane_flush_final(r);
		pane_restore(r);
		if (r->o.interactive)	/* galloc sees the output of a quick job too */
			attach_await_viewer(r->attach, r->start_mono + r->o.attach_wait);
		attach_close(r->attach, 0.5);	/* viewers see the end, then EOF */
		r->attach = NULL;
	} else
		result_not_started(r, e->msg, &res);
	if (report_result(r, &res))	/* (it leaves the job's groups) */
		write_result(r, &res);
	else
		*again = can_serve_again(r, piped);
	return 0;
}

/* --standby: waits for a job's options, runs it, and, when the daemon
 * recorded its end and asks (result.c's report_result), says so ("r") on
 * the daemon's socket once everything of that job is closed, and waits
 * there for the next job's, up to RUNS_MAX jobs. The daemon then reuses
 * its run directory: nothing of ours touches it after the "r". */
#define RUNS_MAX 1000

static int standby_main(struct runner *r, int argc, char **argv)
{
	char **own = argv, **request = NULL;
	const char *fifo = NULL;
	pid_t daemon = 0;
	int in = 0, rc = 0;
	bool piped, again = false;

	if (proc_start_ticks(getpid(), &r->start_ticks))
		r->start_ticks = 0;	/* read again at the start */
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--request"))
			fifo = argv[++i];
		else if (!strcmp(argv[i], "--daemon"))
			daemon = (pid_t)atoi(argv[++i]);
	piped = !fifo;	/* the daemon's socket: our output is not a pane's */
	if (fifo && (in = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		fprintf(stderr, "gflow-runner: --standby: cannot open %s: %s\n", fifo, strerror(errno));
		return 2;
	}
	for (int runs = 0; runs < RUNS_MAX; runs++) {
		struct standby_pipe pipe = { .fd = -1 };
		struct gf_err e;
		uint64_t started;
		int bad = standby_wait(in, fifo != NULL, daemon, argv[0], &argc, &request, &pipe);

		if (bad < 0)
			fprintf(stderr, "gflow-runner: --standby: cannot read the job's options on %s: %s\n",
				fifo ? fifo : runs ? "its socket" : "stdin", strerror(errno));
		if (bad)
			return bad > 0 ? 0 : 2;
		started = gf_trace_now();	/* the start-latency trace (trace.h) */
		bad = parse_opts(argc, request, &r->o, &e);
		if (!bad && take_the_rest(r, &pipe)) {
			standby_pipe_close(&pipe);	/* given up before we began */
			runner_free(r);
			free(request);
			return 0;
		}
		if (!bad && r->o.report && piped)
			keep_channel(r, &pipe);
		standby_pipe_close(&pipe);
		if (!bad)
			standby_retitle(own, r->o.job);
		rc = run_job(r, piped, started, bad, &e, &again);
		again = again && runs + 1 < RUNS_MAX;
		if (again) {
			in = r->chan;	/* ours to wait on for the next */
			r->chan = -1;
			rest_signals(r);
			spare_log_make(r);
		}
		runner_free(r);
		free(request);
		request = NULL;
		if (!again)
			return rc;
		runner_reset(r);
		standby_retitle(own, NULL);
		if (send(in, "r", 1, MSG_NOSIGNAL) != 1)
			return 0;
	}
	return rc;	/* not reached: the last run is never offered again */
}

int main(int argc, char **argv)
{
	struct runner r = { 0 };
	struct gf_err e;
	uint64_t started = gf_trace_now();	/* the start-latency trace (trace.h) */
	bool again;
	int bad, rc;

	runner_reset(&r);
	ensure_std_fds();
	read_ignored_signals(&r);
	if (argc >= 2 && !strcmp(argv[1], "--standby"))
		return standby_main(&r, argc, argv);	/* started ahead: the options come when there is a job */
	if (!(bad = parse_opts(argc, argv, &r.o, &e)) &&
	    (r.o.hold || r.o.report || r.o.make_cgroup || r.o.env_bytes >= 0 || r.o.argv_bytes >= 0 ||
	     r.o.spec_bytes >= 0 || r.o.limits_bytes >= 0))
		bad = gf_err_set(&e, "%s: only for a standby runner (--standby), which reads it from its stdin",
				 r.o.hold		? "--hold"
				 : r.o.report		? "--report"
				 : r.o.make_cgroup	? "--make-cgroup"
				 : r.o.env_bytes >= 0	? "--env-bytes"
				 : r.o.argv_bytes >= 0 ? "--argv-bytes"
				 : r.o.spec_bytes >= 0 ? "--spec-bytes"
							: "--limits-bytes");
	rc = run_job(&r, false, started, bad, &e, &again);
	runner_free(&r);
	return rc;
}
