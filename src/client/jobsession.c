/* jobsession.c — a job's terminal: gjob attach (alias a), through tmux or
 * the runner's attach socket (attach.c), and gjob close-sessions (alias
 * close), which kills the tmux sessions that ended jobs left. */
#include "job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "queue.h"
#include "util.h"

#define PROG "gjob"

static const char attach_help[] =
"usage: gjob attach ID\n\n"
"Attach your terminal to a running job of the tmux executor: see its output\n"
"and type into it. Detach again with Ctrl-b d; the job runs on.\n\n"
"With your own daemon this is the job's session on gflow's tmux server.\n"
"With the system daemon the job's runner offers its terminal on a socket:\n"
"you see the last 64 KiB of output first, the window size follows yours,\n"
"Ctrl-b Ctrl-b types one Ctrl-b. Only the job's owner, root and members of\n"
"[daemon] admin_group may attach. An interactive job (galloc) offers its\n"
"terminal the same way under either daemon and executor; its caller's\n"
"galloc stays attached, and the job ends when that one leaves. Other jobs\n"
"of the process executor have no terminal: follow them with\n"
"gjob log ID --follow.\n";

/* A job is Running before tmux has made its session (the daemon asks for
 * it without waiting): give tmux a moment, up to 2 s. */
static void wait_for_session(const char *sock, const char *session)
{
	for (int i = 0; i < 40; i++) {
		size_t n;
		char **names = tmux_session_names(sock, &n);
		int found = names && strv_contains(names, n, session);

		strv_free(names, n);
		if (found)
			return;
		usleep(50000);
	}
}

static int job_attach(int argc, char **argv)
{
	char **pos, target[300], sockbuf[4200];
	const char *state, *session, *exec_kind, *sock, *attach_sock;
	int npos, rc = EXIT_OK;
	struct gf_err e;
	json_t *job;
	long long id;

	if (job_simple_args(argc, argv, attach_help, &pos, &npos, &rc) < 0)
		return rc;
	if (npos != 1) {
		free(pos);
		return cmd_usagef(PROG, "usage: gjob attach ID");
	}
	job = fetch_job(pos[0], &e);
	free(pos);
	if (!job)
		return cmd_fail(PROG, &e);
	id = (long long)jint(job, "id", 0);
	state = jstr(job, "state");
	session = jstr(job, "tmux_session");
	sock = jstr(job, "tmux_socket");
	exec_kind = jstr(job, "executor");
	attach_sock = jstr(job, "attach_socket");
	if (state && (strcmp(state, "Queued") == 0 || strcmp(state, "Hold") == 0))
		fprintf(stderr, "%s: job %lld has not started yet (%s)\n", PROG,
		    id, state);
	else if (state_is_ended(state))
		fprintf(stderr, "%s: job %lld has ended (%s); see its output "
		    "with: gjob log %lld\n", PROG, id, state, id);
	else if (attach_sock) {
		/* The system daemon, or an interactive job (galloc) of any
		 * executor: the runner offers the job's terminal. */
		rc = attach_job(id, attach_sock, jstr(job, "user"));
		json_decref(job);
		return rc;
	} else if ((exec_kind && strcmp(exec_kind, "tmux") != 0) || !session)
		fprintf(stderr, "%s: job %lld runs with the %s executor and has "
		    "no tmux session; follow its output with: gjob log %lld "
		    "--follow\n", PROG, id, exec_kind ? exec_kind : "process",
		    id);
	else
		goto attach;
	json_decref(job);
	return EXIT_FAIL;
attach:
	/* The job's session lives on gflow's own tmux server (-S socket). */
	snprintf(target, sizeof target, "=%s", session);
	snprintf(sockbuf, sizeof sockbuf, "%s", sock ? sock : "");
	json_decref(job);
	if (sockbuf[0] && attach_tmux_verified(sockbuf, &e) < 0)
		return cmd_fail(PROG, &e);
	if (sockbuf[0])
		wait_for_session(sockbuf, session);
	fflush(stdout);
	if (sockbuf[0])
		execlp("tmux", "tmux", "-S", sockbuf, "attach-session", "-t",
		    target, (char *)NULL);
	else if (getenv("TMUX") && *getenv("TMUX"))
		execlp("tmux", "tmux", "switch-client", "-t", target, (char *)NULL);
	else
		execlp("tmux", "tmux", "attach-session", "-t", target,
		    (char *)NULL);
	fprintf(stderr, "%s: cannot run tmux: %s\n", PROG, strerror(errno));
	return EXIT_FAIL;
}

/* ---------- close-sessions ---------- */

static const char close_help[] =
"usage: gjob close-sessions (-a | -j IDS | -s STATES | -p TEXT)...\n\n"
"Kill the tmux sessions left by ended jobs (alias: gjob close). Without a\n"
"filter it does nothing and says so. Filters combine (all must match):\n"
"  -a, --all             every ended job's session\n"
"  -j, --jobs IDS        these jobs (also IDS without -j)\n"
"  -s, --state STATES    jobs in these ended states (--states; default:\n"
"                        finished, failed, cancelled, timeout); a running\n"
"                        or waiting job's session is its job: use gcancel\n"
"  -p, --pattern TEXT    sessions whose name contains TEXT\n";

enum { CS_ALL = 1100, CS_JOBS, CS_STATE, CS_PATTERN };

static const struct opt_def close_opts[] = {
	{ CS_ALL, "all", 'a', 0 }, { CS_JOBS, "jobs", 'j', 1 },
	{ CS_STATE, "state", 's', 1 }, { CS_STATE, "states", 0, 1 },
	{ CS_PATTERN, "pattern", 'p', 1 }, { J_HELP, "help", 'h', 0 },
};

/* -s STATES: only ended states, as the names /jobs takes. */
static char *close_states(const char *val, struct gf_err *e)
{
	char *states = queue_states_param(val, e), *save = NULL, *copy, *tok;

	if (!states)
		return NULL;
	copy = xstrdup(states);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!state_is_ended(tok)) {
			gf_err_set(e, "invalid --state '%s': %s jobs have no session to close apart from the job "
			    "itself (use gcancel)", val, tok);
			free(copy);
			free(states);
			return NULL;
		}
	free(copy);
	return states;
}

/* Is this session alive on the tmux server of sock (NULL: the default)? */
static int session_alive(const char *sock, const char *session)
{
	size_t n;
	char **live = tmux_session_names(sock, &n);
	int alive = strv_contains(live, n, session);

	strv_free(live, n);
	return alive;
}

static int job_close_sessions(int argc, char **argv)
{
	struct sbuf path = { 0 }, q = { 0 }, idl = { 0 };
	struct opt_parser p;
	const char *val, *pattern = NULL;
	char *states = NULL;
	int id, all = 0, rc = EXIT_OK, closed = 0;
	size_t i;
	struct gf_err e;
	json_t *resp = NULL, *jobs;

	opt_init(&p, argc, argv, 1, close_opts, sizeof close_opts / sizeof close_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL || id == CS_JOBS) {
			sbuf_addf(&idl, "%s%s", idl.len ? "," : "", val);
		} else if (id == CS_ALL) {
			all = 1;
		} else if (id == CS_STATE) {
			free(states);
			if (!(states = close_states(val, &e)))
				goto usage;
		} else if (id == CS_PATTERN) {
			pattern = val;
		} else {
			rc = job_help_or_fail(close_help, id, val, &e);
			goto out;
		}
	}
	if (!all && !idl.len && !states && !pattern) {
		rc = cmd_usagef(PROG, "close-sessions needs a filter: -a (every ended job), -j IDS, -s STATES "
		    "or -p TEXT; nothing was closed");
		goto out;
	}
	url_add_param(&q, "states", states ? states : "Finished,Failed,Cancelled,Timeout");
	if (idl.len) {
		struct gf_jobref_list l;

		if (gf_parse_jobref_list(idl.p, &l, &e) < 0)
			goto usage;
		gf_jobref_list_free(&l);
		url_add_param(&q, "ids", idl.p);
	}
	sbuf_adds(&path, "/jobs");
	sbuf_adds(&path, q.p);
	sbuf_free(&q);
	resp = api_get(path.p, &e);
	if (!resp) {
		rc = cmd_fail(PROG, &e);
		goto out;
	}
	jobs = json_object_get(resp, "jobs");
	for (i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *s = jstr(j, "tmux_session");
		const char *sock = jstr(j, "tmux_socket");
		char target[300], *out;
		char *kill[] = { "tmux", "kill-session", "-t", target, NULL };
		char *kill_on[] = { "tmux", "-S", (char *)sock, "kill-session",
			"-t", target, NULL };
		int status;

		if (!s || !state_is_ended(jstr(j, "state")) || (pattern && !strstr(s, pattern)))
			continue;
		if (!session_alive(sock, s))
			continue;
		snprintf(target, sizeof target, "=%s", s);
		if (run_capture(sock ? kill_on : kill, &out, &status, &e) < 0 ||
		    status != 0) {
			/* It may have closed by itself meanwhile (its job's
			 * supervisor ended): then there is nothing to do. */
			if (session_alive(sock, s)) {
				fprintf(stderr, "%s: cannot close session %s of "
				    "job %lld\n", PROG, s,
				    (long long)jint(j, "id", 0));
				rc = EXIT_FAIL;
			}
		} else {
			printf("Closed session %s (job %lld)\n", s,
			    (long long)jint(j, "id", 0));
			closed++;
		}
		free(out);
	}
	if (!closed && rc == EXIT_OK)
		printf("No sessions of ended jobs to close\n");
	goto out;
usage:
	rc = cmd_usage_error(PROG, &e);
out:
	json_decref(resp);
	free(states);
	sbuf_free(&idl);
	sbuf_free(&q);
	sbuf_free(&path);
	return rc;
}

const struct job_cmd job_cmd_attach = { "attach", "a", job_attach };
const struct job_cmd job_cmd_close_sessions = { "close-sessions", "close", job_close_sessions };
