/* exec.c — starting processes: the only file in the daemon that forks.
 *
 * A job is started by making its run directory, log and lists (rundir.c)
 * and its cgroups (track.c), and launching `gflow-runner` for it: handed
 * to the standby runner when one waits (standby.c), else as the command of
 * a new detached session on gflow's own tmux server or as a detached
 * process of its own. Under the system daemon a tmux-executor job gets no
 * tmux (root's server would be out of its owner's reach): its runner
 * offers the job's terminal on an attach socket, <runtime dir>/attach/
 * <id>.sock, instead. */
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

#include "clone3.h"
#include "runfile.h"
#include "spawn.h"
#include "trace.h"

int exec_init(struct server *s, struct gf_err *e)
{
	const char *grace = getenv("GFLOW_KILL_GRACE_SECS");

	s->grace_secs = grace && atoi(grace) > 0 ? atoi(grace) : 10;
	/* The directories themselves are ours (gf_paths_create made them);
	 * from here on everything in them is reached through these fds. */
	s->run_dfd = runfile_open_dir(s->paths.run_dir, 1);
	if (s->run_dfd < 0)
		return gf_err_set(e, "cannot open %s: %s", s->paths.run_dir, strerror(errno));
	s->log_dfd = runfile_open_dir(s->paths.log_dir, 1);
	if (s->log_dfd < 0)
		return gf_err_set(e, "cannot open %s: %s", s->paths.log_dir, strerror(errno));
	rundir_drop_recycled(s);
	rundir_make_spares(s);
	if (s->executor == EXEC_PROCESS || s->paths.system)
		standby_want(s);	/* else after the first runner started alone */
	else
		standby_want_tmux(s);
	return 0;
}

void exec_close(struct server *s)
{
	standby_close(s);
	tmuxctl_close(s);
	if (s->run_dfd >= 0)
		close(s->run_dfd);
	if (s->log_dfd >= 0)
		close(s->log_dfd);
	s->run_dfd = s->log_dfd = -1;
}

/* Start the runner in a new session of gflow's own tmux server (its own
 * socket, so no other tmux server's life or settings matter; it never
 * exits when its last session ends, so a start never races its exit):
 * through the control client (tmuxctl.c), else with a tmux client of its
 * own. A start that failed is tried again once the session is known not to
 * exist (a runner started twice would find the first one's claim and
 * stop). */
static int start_in_tmux(struct server *s, struct job *j, const struct argv *runner, struct gf_err *e)
{
	char sock[GF_PATH_MAX + 16], trace[GF_PATH_MAX + 16], tmux[GF_PATH_MAX];
	const char *session = j->tmux_session;	/* the caller's "gflow-<id>" */
	struct argv w = { .n = 0 };

	if (tmux_server(s, tmux, sizeof tmux, sock, sizeof sock, e))
		return -1;
	tmux_new_session_words(&w, session, trace, sizeof trace);
	for (int i = 0; i < runner->n; i++)
		arg(&w, runner->v[i]);
	if (tmuxctl_new_session(s, j, tmux, sock, session, w.v, (size_t)w.n) == 0)
		return 0;
	return exec_tmux_client(tmux, sock, session, w.v, (size_t)w.n, e);
}

/* Does the job's runner start on gflow's tmux server? A tmux-executor job
 * of a personal daemon, but for an interactive one (galloc): that has the
 * caller's terminal, through an attach socket, as under the system daemon. */
static bool in_tmux(const struct server *s, const struct job *j)
{
	return j->executor == EXEC_TMUX && !s->paths.system && !jm(j)->interactive;
}

bool exec_holds_start(const struct server *s, const struct job *j)
{
	if (in_tmux(s, j))
		return standby_tmux_ready(s);
	return standby_ready(s);
}

/* The start to the standby: the job's environment, command, spec and
 * limits follow its options on the pipe (--env-bytes, --argv-bytes,
 * --spec-bytes, --limits-bytes: no files), and it is held (--hold) while
 * the commit that started the job is not yet synced. 0: handed. */
static int hand_to_standby(struct server *s, struct job *j, struct argv *a, const struct gf_bytes *env,
			   const struct gf_bytes *argv, const struct gf_bytes *spec, bool make_cgroup)
{
	const char *limits = j->rlimits ? j->rlimits : "";
	struct iovec more[4] = { { env->p, env->len }, { argv->p, argv->len }, { spec->p, spec->len },
				 { (void *)limits, strlen(limits) } };
	int n = a->n, nown = a->nown, rc;
	struct standby_chan chan;

	if (a->n > 63 - 10 || a->nown > 16 - 4)
		return 1;
	arg(a, "--env-bytes");
	argf(a, "%lld", (long long)env->len);
	arg(a, "--argv-bytes");
	argf(a, "%lld", (long long)argv->len);
	arg(a, "--spec-bytes");
	argf(a, "%lld", (long long)spec->len);
	arg(a, "--limits-bytes");
	argf(a, "%lld", (long long)strlen(limits));
	if (s->start_held)
		arg(a, "--hold");
	if (make_cgroup)
		arg(a, "--make-cgroup");
	if (in_tmux(s, j))
		rc = standby_hand_tmux(s, j, a->v, more, 4, s->start_held);
	else {
		/* Its result comes on its socket (reap.c's report section). */
		arg(a, "--report");
		if ((rc = standby_hand(s, a->v, more, 4, s->start_held, &chan)) == 0)
			reap_report_watch(s, j, &chan);
	}
	a->n = n;	/* a runner of its own takes the options before these */
	a->v[n] = NULL;
	a->nown = nown;
	return rc;
}

/* Launch gflow-runner for a job already recorded Running: its run
 * directory, log, cgroups, and the runner under tmux or on its own. A
 * held start (s->start_held) goes to the standby with --hold, or, when it
 * cannot, waits for the sync (jobs_txn_sync) before a runner starts. */
int exec_start_job(struct server *s, struct job *j, struct gf_err *e)
{
	char dir[GF_PATH_MAX], log[GF_PATH_MAX], cgroups[4][GF_PATH_MAX], attach[GF_PATH_MAX];
	char owner[256] = "", groups[SPAWN_GROUPS_MAX] = "";
	gid_t gid = 0;
	struct argv a = { .n = 0 };
	struct gf_bytes env = { 0 }, argv = { 0 }, spec = { 0 };
	/* The runner makes the log, with the first free name: a job's first
	 * log (a personal daemon's when the spare made ahead is not ready), so
	 * that its inode is made off the loop (a held start's as the store
	 * syncs; a runner back from a job has one made ahead, child.c); in
	 * system mode, as the owner, also a later start's, unless an earlier
	 * start recorded the name to use or the job was requeued (it goes on
	 * in its log, engine/preempt.c). */
	bool log_new = j->run_seq <= 1 || (jm(j)->log_dir && !jm(j)->log_seq && !jm(j)->requeues);
	size_t ncg;
	int dfd, out, rc = -1, err;
	/* A standby of the process executor makes the v2 group itself. */
	bool runner_makes = !in_tmux(s, j) && standby_ready(s);

	if ((dfd = rundir_make(s, j, dir, sizeof dir, e)) < 0)
		return -1;
	if ((ncg = track_prepare(s, j, cgroups, &runner_makes, e)) == (size_t)-1)
		goto out;
	if (ncg && s->track.method != TRACK_SESSION)
		jr_w(j)->group_made = true;
	/* The groups the runner moves itself into: v1's. The v2 group comes
	 * first; the runner is born in it (process executor, no standby) or
	 * has the job born in it (a standby, or under tmux). A prime there
	 * would only delay both: a move waits for its grace period holding
	 * cgroup_mutex, which a clone into a group needs too. */
	if (ncg > (s->track.method == TRACK_CGROUP2 ? 1u : 0u))
		spawn_prime_moves(cgroups[ncg - 1]);
	if (log_new && !jm(j)->log_dir && rundir_log_spare(s, j, log, sizeof log) == 0)
		log_new = false;	/* the spare made ahead is its log */
	else if (log_new)
		gf_pathf(log, sizeof log, "%s/%lld.log", jm(j)->log_dir ? jm(j)->log_dir : s->paths.log_dir,
			 (long long)j->id);
	else if (!jm(j)->log_dir) {
		if (rundir_make_log(s, j, dfd, log, sizeof log, e))
			goto out;
	} else
		jobs_log_path(s, j, log, sizeof log);
	if (rundir_env(s, j, &env, e))
		goto out;
	argv = rundir_argv(j);
	if (s->paths.system && spawn_owner_ids(j->uid, &gid, owner, sizeof owner, groups, sizeof groups, e)) {
		gf_err_prefix(e, "the job's owner");
		goto out;
	}
	spec = rundir_spec(j, log, log_new, s->paths.system ? owner : NULL, groups);
	/* Nothing of the job (its directory, log, name or command) is on the
	 * runner's command line, which anyone may read: that is in the spec. */
	arg(&a, s->runner_path);
	arg(&a, "--job");
	argf(&a, "%lld", (long long)j->id);
	arg(&a, "--dir");
	arg(&a, dir);
	if (j->time_limit_secs) {
		arg(&a, "--time-limit");
		argf(&a, "%lld", (long long)j->time_limit_secs);
	}
	for (size_t i = 0; i < ncg; i++) {
		arg(&a, "--cgroup");
		arg(&a, cgroups[i]);
	}
	arg(&a, "--grace");
	argf(&a, "%lld", (long long)s->grace_secs);
	if (s->paths.system) {
		/* The runner stays root; the job becomes its owner. */
		arg(&a, "--uid");
		argf(&a, "%lld", (long long)j->uid);
		arg(&a, "--gid");
		argf(&a, "%lld", (long long)gid);
	}
	if (j->executor == EXEC_TMUX || jm(j)->interactive) {
		arg(&a, "--pty");
		if (in_tmux(s, j)) {
			char session[64], sock[GF_PATH_MAX + 16];

			snprintf(session, sizeof session, "gflow-%lld", (long long)j->id);
			if (tmux_sock(s, sock, sizeof sock, e))
				goto out;
			job_set_str(&j->tmux_session, session);
			job_set_shared(&j->tmux_socket, sock);	/* one per daemon */
			gf_trace("fork", j->id);	/* the start-latency trace (trace.h) */
			if (hand_to_standby(s, j, &a, &env, &argv, &spec, false) == 0) {
				rc = 1;
				goto out;
			}
			jobs_txn_sync(s);	/* tmux starts it at once */
			if (rundir_write_limits(dfd, dir, j, e) == 0 &&
			    rundir_write_lists(dfd, dir, &env, &argv, &spec, e) == 0)
				rc = start_in_tmux(s, j, &a, e);
			goto out;
		}
		/* The system daemon or an interactive job: no tmux, an attach
		 * socket (see the top). */
		if (rundir_attach_prepare(s, j, attach, sizeof attach, e)) {
			gf_err_prefix(e, "attach");
			goto out;
		}
		arg(&a, "--attach");
		arg(&a, attach);
		if (s->have_admin_gid) {
			arg(&a, "--attach-group");
			argf(&a, "%lld", (long long)s->admin_gid);
		}
		if (jm(j)->interactive) {
			/* How long the runner waits for galloc to attach
			 * (tests shorten it, as GFLOW_KILL_GRACE_SECS the grace). */
			const char *wait = getenv("GFLOW_INTERACTIVE_WAIT_SECS");

			arg(&a, "--interactive");
			if (wait && atoi(wait) > 0) {
				arg(&a, "--attach-wait");
				argf(&a, "%d", atoi(wait));
			}
		}
	}
	gf_trace("fork", j->id);	/* the start-latency trace (trace.h) */
	/* The standby makes runner.out itself; then the job is born in the
	 * v2 group (the runner is not in it), as under tmux. */
	if (hand_to_standby(s, j, &a, &env, &argv, &spec, runner_makes) == 0) {
		rc = 1;
		goto out;
	}
	if (runner_makes && track_make_group(cgroups[0], e))
		goto out;	/* no standby took it after all: made here */
	jobs_txn_sync(s);	/* a runner of its own is not held: it starts after the sync */
	if (rundir_write_limits(dfd, dir, j, e) || rundir_write_lists(dfd, dir, &env, &argv, &spec, e))
		goto out;
	/* What the runner says before it has a log goes to runner.out. */
	out = runfile_open_empty_at(dfd, "runner.out");
	if (out < 0) {
		gf_err_set(e, "cannot create %s/runner.out: %s", dir, strerror(errno));
		goto out;
	}
	rc = ncg && s->track.method == TRACK_CGROUP2 ? spawn_runner_into(a.v, out, cgroups[0], e) : 1;
	if (rc > 0)
		rc = spawn_runner(a.v, out, e);
	close(out);
	standby_want(s);
out:
	err = errno;	/* EMFILE: the start waits for descriptors (pass.c) */
	close(dfd);
	free(env.p);
	free(argv.p);
	free(spec.p);
	errno = err;
	return rc;
}
