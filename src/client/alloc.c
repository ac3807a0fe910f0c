/* alloc.c — galloc (gflow alloc): an interactive allocation.
 *
 * galloc submits one ordinary job marked "interactive" (POST /jobs, the
 * body gbatch's options make: jobspec.c), named "interactive", whose
 * command is the one given or the caller's login shell, with the caller's
 * environment and directory. It waits in the queue like any job, saying
 * why, then attaches the caller's terminal to the job's pty through the
 * attach socket its runner offers (attach.c, as gjob attach does), with no
 * detach key. The job's end ends galloc with the command's exit status.
 *
 * An interactive job does not outlive its caller: a signal to galloc while
 * it waits withdraws the job; once it runs, galloc leaving for any reason
 * (a signal, its terminal gone, killed) closes the attach connection, and
 * the runner ends the job when the last viewer has left (or when none came
 * within a minute of the start). galloc also cancels it itself where it
 * can. */
#include "command.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "execlimit.h"
#include "format.h"
#include "home.h"
#include "http.h"
#include "job.h"
#include "jobspec.h"
#include "rlimits.h"
#include "util.h"

#define PROG "galloc"
#define POLL_MS 200
#define IMMEDIATE_WAIT_MS 5000	/* --immediate: the longest wait for the scheduler's answer */
#define SOCKET_WAIT_MS 10000	/* a Running job's runner makes its socket */

enum { A_IMMEDIATE = BO_COUNT + 1 };

static const struct opt_def alloc_opts[] = {
	{ BO_GPUS, "gpus", 'G', 1 },
	{ BO_TIME, "time", 't', 1 }, { BO_TIME, "time-limit", 0, 1 },
	{ BO_MEMORY, "memory", 'm', 1 }, { BO_MEMORY, "mem", 0, 1 },
	{ BO_CPUS, "cpus", 'c', 1 }, { BO_CPUS, "cpus-per-task", 0, 1 },
	{ BO_NAME, "name", 'J', 1 }, { BO_NAME, "job-name", 0, 1 },
	{ BO_PROJECT, "project", 'P', 1 },
	{ A_IMMEDIATE, "immediate", 'I', 0 },
	{ BO_HELP, "help", 'h', 0 }, { BO_VERSION, "version", 'V', 0 },
};

static const char alloc_help[] =
"usage: galloc [options] [--] [COMMAND [ARGS...]]\n"
"       galloc completion bash|zsh|fish\n\n"
"An interactive allocation (also: gflow alloc). galloc submits a job named\n"
"'interactive' that waits in the queue like any other (same quotas, rules\n"
"and reasons), then runs COMMAND, or your login shell, in your terminal\n"
"with the job's GPUs (CUDA_VISIBLE_DEVICES), GFLOW_JOB_ID and limits, as a\n"
"job of its own: gqueue shows it Running, its time limit and cgroup hold,\n"
"its GPUs are freed when its last process is gone. Your environment and\n"
"current directory go with it, as with gbatch.\n\n"
"  -G, --gpus N          GPUs (default 0)\n"
"  -t, --time T          time limit: MIN, HH:MM:SS, D-HH:MM:SS, 4h, 30m...\n"
"  -m, --memory M        host memory: 16G, 512M, 1024 (MB)\n"
"  -c, --cpus N          CPUs (--cpus-per-task; default 1)\n"
"  -J, --name NAME       the job's name (default: interactive)\n"
"  -P, --project NAME    the job's project\n"
"  -I, --immediate       start now or not at all: when the job cannot start\n"
"                        at once it is withdrawn, and galloc says why and\n"
"                        exits 1\n"
"  -h, --help, -V, --version\n\n"
"While it waits, Ctrl-C (or SIGTERM, SIGHUP) withdraws the job. Once it\n"
"runs, every key goes to the job (there is no detach key) and the job\n"
"ends when you leave the shell. It never outlives galloc: if galloc ends\n"
"first (its terminal closed, a signal, killed) the job is cancelled: its\n"
"processes get SIGHUP, then SIGTERM and SIGKILL. Another terminal of\n"
"yours (or an admin) may watch and type with: gjob attach ID.\n\n"
"Without a terminal (stdin not a tty) galloc needs a COMMAND, and relays:\n"
"its stdin goes to the job's terminal (the end of stdin is a ^D there) and\n"
"the job's terminal output comes to stdout, with \\r\\n line ends and the\n"
"echo of the input.\n\n"
"Exit status: the command's; 128+N when a signal N ended it; 124 when\n"
"the time limit ended it; 1 when it could not run or was cancelled;\n"
"128+N when signal N made galloc withdraw; 2 for a wrong command line.\n";

/* ---------- talking to the daemon ---------- */

/* One job by its id (jobcmd.c's fetch_job, as gjob asks). */
static json_t *get_job(long long id, struct gf_err *e)
{
	char ref[32];

	snprintf(ref, sizeof ref, "%lld", id);
	return fetch_job(ref, e);
}

/* Withdraw (or end) the job; quiet: the caller says what happened. */
static void cancel_job(long long id)
{
	json_t *body = json_object(), *ids = json_array(), *resp;
	struct gf_err e;

	json_array_append_new(ids, json_integer(id));
	json_object_set_new(body, "ids", ids);
	resp = api_post("/jobs/cancel", body, &e);
	if (!resp)
		fprintf(stderr, "%s: cannot cancel job %lld: %s\n", PROG, id, e.msg);
	json_decref(resp);
	json_decref(body);
}

/* ---------- the request ---------- */

extern char **environ;

/* The command: the words given, else the login shell ($SHELL, else the
 * user database's, else /bin/sh). */
static void set_command(struct batch_opts *o, int argc, char **argv, char *shell, size_t size)
{
	static char *words[2];
	const char *env = getenv("SHELL");

	if (argc > 0) {
		o->argv = argv;
		o->argc = argc;
		return;
	}
	if (env && env[0] == '/' && strlen(env) < size)
		snprintf(shell, size, "%s", env);
	else if (gf_user_shell(shell, size) < 0 || shell[0] != '/')
		snprintf(shell, size, "/bin/sh");
	words[0] = shell;
	o->argv = words;
	o->argc = 1;
}

/* Submit; the job's id, or -1 after saying why (*rc the exit status). */
static long long submit(struct batch_opts *o, int *rc)
{
	struct batch_ctx ctx = { 0 };
	struct gf_rlimits rl;
	char cwd[PATH_MAX], limits[GF_RLIMITS_TEXT_MAX];
	struct gf_err e;
	json_t *body, *resp, *jobs;
	long long id;

	*rc = EXIT_FAIL;
	if (!getcwd(cwd, sizeof cwd)) {
		fprintf(stderr, "%s: cannot tell the current directory: %s\n", PROG, strerror(errno));
		return -1;
	}
	ctx.now = time(NULL);
	ctx.cwd = cwd;
	ctx.env = environ;
	ctx.no_conda = -1;
	ctx.arg_max = gf_arg_max();
	gf_rlimits_capture(&rl);
	gf_rlimits_format(&rl, limits, sizeof limits);
	ctx.rlimits = limits;
	if (batch_validate(o, &e) < 0) {
		*rc = cmd_usage_error(PROG, &e);
		return -1;
	}
	if (!(body = batch_request(o, &ctx, &e))) {
		*rc = cmd_usage_error(PROG, &e);
		return -1;
	}
	jobs = json_object_get(body, "jobs");
	json_object_set_new(json_array_get(jobs, 0), "interactive", json_true());
	resp = api_post("/jobs", body, &e);
	json_decref(body);
	if (!resp) {
		*rc = cmd_fail(PROG, &e);
		return -1;
	}
	id = (long long)jint(json_array_get(json_object_get(resp, "jobs"), 0), "id", 0);
	json_decref(resp);
	if (id <= 0) {
		fprintf(stderr, "%s: the daemon did not say which job it made\n", PROG);
		return -1;
	}
	return id;
}

/* ---------- waiting ---------- */

/* A signal that arrived (SIGINT, SIGTERM, SIGHUP), or 0 after ms. */
static int wait_signal(int sigfd, int ms)
{
	struct pollfd p = { .fd = sigfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (poll(&p, 1, ms) > 0 && read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		return (int)si.ssi_signo;
	return 0;
}

enum wait_end { W_RUNNING, W_ENDED, W_GAVE_UP, W_SIGNAL, W_ERROR };

/* Wait until the job runs (its attach socket at *sock), or ends, or a
 * signal comes, saying the queue's reason as it changes. */
static enum wait_end wait_for_start(long long id, int sigfd, int immediate, json_t **jobp, int *signo)
{
	char last[512] = "";
	int waited = 0, step;

	for (;;) {
		struct gf_err e;
		json_t *job = get_job(id, &e);
		const char *state, *reason;

		if (!job) {
			fprintf(stderr, "%s: job %lld: %s\n", PROG, id, e.msg);
			return W_ERROR;
		}
		state = jstr(job, "state");
		/* "Resources: cpus 3 of 4 busy (it asks 2)" where the daemon
		 * says what is short, else the reason's name */
		reason = jstr(job, "reason_detail") ? jstr(job, "reason_detail") : jstr(job, "reason");
		if (state && !strcmp(state, "Running")) {
			if (jstr(job, "attach_socket")) {
				*jobp = job;
				return W_RUNNING;
			}
			fprintf(stderr, "%s: job %lld runs without a terminal to attach to\n", PROG, id);
			json_decref(job);
			return W_ERROR;
		}
		if (state_is_ended(state)) {
			*jobp = job;
			return W_ENDED;
		}
		if (state && (!strcmp(state, "Queued") || !strcmp(state, "Hold")) && reason && *reason) {
			if (immediate) {
				fprintf(stderr, "%s: job %lld cannot start now (%s); withdrawn\n", PROG, id, reason);
				json_decref(job);
				return W_GAVE_UP;
			}
			if (strcmp(last, reason)) {
				fprintf(stderr, "%s: job %lld queued (%s); waiting\n", PROG, id, reason);
				snprintf(last, sizeof last, "%s", reason);
			}
		}
		json_decref(job);
		if (immediate && waited >= IMMEDIATE_WAIT_MS) {
			fprintf(stderr, "%s: job %lld did not start within %d s; withdrawn\n", PROG, id,
				IMMEDIATE_WAIT_MS / 1000);
			return W_GAVE_UP;
		}
		/* Asked often at first (a start is quick), then less: a
		 * long wait of many callers costs the daemon little. */
		step = waited < 1000 ? 50 : waited < 10000 ? POLL_MS : 1000;
		if ((*signo = wait_signal(sigfd, step)))
			return W_SIGNAL;
		waited += step;
	}
}

/* The socket of a Running job appears when its runner has made it. */
static int wait_socket(const char *path, int sigfd, int *signo)
{
	struct stat st;

	for (int waited = 0; waited < SOCKET_WAIT_MS; waited += 50) {
		if (stat(path, &st) == 0)
			return 0;
		if ((*signo = wait_signal(sigfd, 50)))
			return -1;
	}
	return 0;	/* attach says what is wrong */
}

/* The exit status for an ended job, saying how it ended when not plainly. */
static int ended_status(long long id, const json_t *job)
{
	const char *state = jstr(job, "state");
	int sig = (int)jint(job, "exit_signal", 0), code = (int)jint(job, "exit_code", 0);

	if (state && !strcmp(state, "Timeout")) {
		fprintf(stderr, "%s: job %lld reached its time limit\n", PROG, id);
		return 124;
	}
	if (state && !strcmp(state, "Cancelled")) {
		fprintf(stderr, "%s: job %lld was cancelled\n", PROG, id);
		return EXIT_FAIL;
	}
	if (sig > 0)
		return 128 + sig;
	if (state && !strcmp(state, "Failed") && !code) {
		const char *reason = jstr(job, "reason");

		fprintf(stderr, "%s: job %lld failed%s%s\n", PROG, id, reason ? ": " : "", reason ? reason : "");
		return EXIT_FAIL;
	}
	return code;
}

/* After the relay: wait for the daemon to record the job's end. */
static int final_status(long long id, int sigfd)
{
	for (int i = 0;; i++) {
		struct gf_err e;
		json_t *job = get_job(id, &e);
		int rc;

		if (!job) {
			fprintf(stderr, "%s: job %lld: %s\n", PROG, id, e.msg);
			return EXIT_FAIL;
		}
		if (state_is_ended(jstr(job, "state"))) {
			rc = ended_status(id, job);
			json_decref(job);
			return rc;
		}
		json_decref(job);
		if (wait_signal(sigfd, i < 20 ? 50 : POLL_MS)) {
			cancel_job(id);
			return EXIT_FAIL;
		}
	}
}

/* ---------- the program ---------- */

static int run(struct batch_opts *o, int immediate)
{
	struct attach_mode m = { .prog = PROG, .keys_as_typed = true, .pipe = true, .connect_wait_ms = 5000 };
	char sock[4096], hello[160];
	json_t *job = NULL;
	long long id;
	sigset_t set, old;
	int rc, sigfd, signo = 0;
	enum wait_end w;
	enum attach_how how;

	/* Signals while waiting withdraw the job: blocked before the
	 * submission, so that none is lost in between. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (sigprocmask(SIG_BLOCK, &set, &old) || (sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", PROG, strerror(errno));
		return EXIT_FAIL;
	}
	if ((id = submit(o, &rc)) < 0)
		goto out;
	w = wait_for_start(id, sigfd, immediate, &job, &signo);
	if (w == W_SIGNAL || w == W_GAVE_UP || w == W_ERROR) {
		cancel_job(id);
		if (w == W_SIGNAL)
			fprintf(stderr, "\n%s: job %lld withdrawn (%s)\n", PROG, id, strsignal(signo));
		rc = w == W_SIGNAL ? 128 + signo : EXIT_FAIL;
		goto out;
	}
	if (w == W_ENDED) {
		rc = ended_status(id, job);
		goto out;
	}
	snprintf(sock, sizeof sock, "%s", jstr(job, "attach_socket"));
	{
		char *gpus = fmt_int_list(json_object_get(job, "gpu_ids"));

		snprintf(hello, sizeof hello, "%s: job %lld granted%s%s; leaving the shell ends it", PROG, id,
			 gpus && *gpus ? ": GPUs " : "", gpus && *gpus ? gpus : "");
		free(gpus);
	}
	if (wait_socket(sock, sigfd, &signo)) {
		cancel_job(id);
		fprintf(stderr, "%s: job %lld cancelled (%s)\n", PROG, id, strsignal(signo));
		rc = 128 + signo;
		goto out;
	}
	/* The terminal's signals go to attach_session's own signalfd now. */
	close(sigfd);
	sigfd = -1;
	m.hello = hello;
	how = attach_session(id, sock, jstr(job, "user"), &m);
	if (how == ENDED) {
		sigfd = signalfd(-1, &set, SFD_CLOEXEC);
		rc = final_status(id, sigfd);
		goto out;
	}
	/* The caller left first (a signal, the terminal gone) or the relay
	 * broke: the job does not outlive galloc. */
	cancel_job(id);
	if (m.signo)
		fprintf(stderr, "%s%s: job %lld cancelled (%s)\n", m.tty ? "\r\n" : "", PROG, id,
			strsignal(m.signo));
	else
		fprintf(stderr, "%s%s: job %lld cancelled: the terminal went away\n", m.tty ? "\r\n" : "", PROG, id);
	rc = m.signo ? 128 + m.signo : how == DETACHED ? 128 + SIGHUP : EXIT_FAIL;
out:
	json_decref(job);
	if (sigfd >= 0)
		close(sigfd);
	/* A signal still pending (a hang-up comes more than once) must not
	 * end galloc with it: the status is ours to give. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int alloc_exec(int argc, char **argv)
{
	struct batch_opts o;
	struct opt_parser p;
	struct batch_ctx ctx = { 0 };
	struct gf_err e;
	const char *val;
	char shell[PATH_MAX];
	int id, immediate = 0, rc;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_alloc, argc - 1, argv + 1);
	batch_opts_init(&o);
	opt_init(&p, argc, argv, 1, alloc_opts, sizeof alloc_opts / sizeof alloc_opts[0], 0);
	while ((id = opt_next(&p, &val, &e)) >= 0) {
		if (id == BO_HELP) {
			fputs(alloc_help, stdout);
			batch_opts_free(&o);
			return EXIT_OK;
		}
		if (id == BO_VERSION) {
			batch_opts_free(&o);
			return cmd_version();
		}
		if (id == A_IMMEDIATE) {
			immediate = 1;
			continue;
		}
		if (batch_apply(&o, id, val, p.spelled, &ctx, &e) < 0) {
			batch_opts_free(&o);
			return cmd_usage_error(PROG, &e);
		}
	}
	if (id == OPT_ERROR) {
		batch_opts_free(&o);
		return cmd_usage_error(PROG, &e);
	}
	if (p.i < argc && !argv[p.i][0]) {
		batch_opts_free(&o);
		return cmd_usagef(PROG, "empty command");
	}
	if (p.i == argc && !isatty(0)) {
		/* A login shell reading a pipe or a file is rarely what was
		 * meant (and `galloc --name --help` would be one). */
		batch_opts_free(&o);
		return cmd_usagef(PROG, "no command, and stdin is not a terminal: give the command "
				  "(galloc [options] -- COMMAND) or run galloc in a terminal for a shell");
	}
	if (!o.name)
		o.name = xstrdup("interactive");
	set_command(&o, argc - p.i, argv + p.i, shell, sizeof shell);
	rc = run(&o, immediate);
	batch_opts_free(&o);
	return rc;
}

const struct command cmd_alloc = {
	"alloc", "galloc", "an interactive allocation: a shell or command in your terminal", alloc_exec,
	"completion --gpus -G --time -t --time-limit --memory -m --mem --cpus -c --cpus-per-task --name -J "
	"--job-name --project -P --immediate -I --help -h --version -V",
};
