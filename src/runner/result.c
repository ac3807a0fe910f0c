/* result.c — the result: RUNDIR/result once the job and every
 * descendant are gone (how it ended, its exit code or signal, its times,
 * its peak memory, an OOM kill seen in its memory cgroup, why it could not
 * run), the same error told to its log, its pane and its viewers; written
 * again every second until it can be (a full disk, the run directory
 * removed and made again): the exit status is never given up. A standby
 * given --report tells it to the daemon on its socket first, and writes
 * the file only when the daemon does not answer that it recorded it. It calls
 * down into child.c (the exit code of a child's error), pane.c, attach.c
 * and the leaves. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "err.h"
#include "rlimits.h"
#include "runfile.h"
#include "runner.h"
#include "trace.h"

/* The kernel's count of OOM kills in the job's memory cgroup: v2's
 * memory.events or v1's memory.oom_control, each a line "oom_kill N". */
static bool cg_oom(const struct runner *r)
{
	static const char *const files[] = { "memory.events", "memory.oom_control" };
	char buf[4096], *p;

	if (!r->enforced)
		return false;
	for (int i = 0; i < r->o.ncgroups; i++)
		for (size_t f = 0; f < 2; f++) {
			if (runfile_read_text(r->o.cgroups[i], files[f], buf, sizeof buf))
				continue;
			for (p = buf; (p = strstr(p, "oom_kill ")); p++)
				if ((p == buf || p[-1] == '\n') && strtoll(p + 9, NULL, 10) > 0)
					return true;
		}
	return false;
}

static void child_error_text(const struct runner *r, char *buf, size_t size)
{
	if (r->cerr.stage == STAGE_CWD)
		snprintf(buf, size, "cannot change directory to '%s'%s%.64s: %s", r->o.cwd,
			 r->owner.set ? " as " : "", r->owner.set ? r->owner.name : "", strerror(r->cerr.err));
	else if (r->cerr.stage == STAGE_USER)
		snprintf(buf, size, "cannot run as %.64s: %s", r->owner.name, strerror(r->cerr.err));
	else if (r->cerr.stage == STAGE_LIMIT)
		snprintf(buf, size, "cannot set the job's %s limit: %s",
			 gf_rlimit_name(r->cerr.which >= 0 && r->cerr.which < GF_NRLIMITS ? r->cerr.which : 0),
			 strerror(r->cerr.err));
	else if (r->cerr.stage == STAGE_CPUS)
		snprintf(buf, size, "cannot pin the job to CPUs %.64s: %s", r->cpus ? r->cpus : "?",
			 strerror(r->cerr.err));
	else
		snprintf(buf, size, "cannot run '%s': %s", r->argv[0], strerror(r->cerr.err));
}

/* An error the job's log should show too. */
static void log_error(struct runner *r, const char *msg)
{
	char line[sizeof ((struct job_result *)0)->error + 32];
	int n = snprintf(line, sizeof line, "gflow-runner: %s\n", msg);

	if (r->logfd >= 0)
		gf_write_all(r->logfd, line, (size_t)n);
	if (r->o.pty)
		pane_write(r, line, (size_t)n);
	attach_output(r->attach, line, (size_t)n);
}

void fill_result(struct runner *r, struct job_result *res)
{
	res->start = r->start_real;
	res->end = now_real();
	snprintf(res->ended_by, sizeof res->ended_by, "%s", r->ended_by);
	res->peak_rss_kb = r->peak_rss_kb;
	res->memory_enforced = r->enforced;
	res->oom = cg_oom(r);
	if (r->have_cerr) {
		child_error_text(r, res->error, sizeof res->error);
		log_error(r, res->error);
		snprintf(res->ended_by, sizeof res->ended_by, "error");
		res->exited = 1;
		res->exit_code = child_exit_code(&r->cerr);
	} else if (WIFEXITED(r->status)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(r->status);
	} else if (WIFSIGNALED(r->status))
		res->signal = WTERMSIG(r->status);
}

/* The job could not be started at all: a result that says why (and our
 * stderr and the job's log). */
void result_not_started(struct runner *r, const char *msg, struct job_result *res)
{
	res->start = res->end = now_real();
	res->exited = 1;
	res->exit_code = 1;
	snprintf(res->ended_by, sizeof res->ended_by, "error");
	snprintf(res->error, sizeof res->error, "%.*s", (int)sizeof res->error - 1, msg);
	say(r, "job %s: %s", r->o.job, res->error);
	log_error(r, res->error);
}

/* The run directory is gone (removed under us): make it again, so the
 * result still reaches the daemon. Only the last component is made; a
 * link planted in its place is not followed. */
static int remake_run_dir(struct runner *r)
{
	char parent[PATH_MAX], *slash;
	int pfd, fd;

	snprintf(parent, sizeof parent, "%s", r->o.dir);
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return -1;
	*slash = '\0';
	pfd = runfile_open_dir(parent[0] ? parent : "/", 0);
	if (pfd < 0)
		return -1;
	if (mkdirat(pfd, slash + 1, 0700) && errno != EEXIST) {
		close(pfd);
		return -1;
	}
	close(pfd);
	fd = runfile_open_dir(r->o.dir, 1);
	if (fd < 0)
		return -1;
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->dirfd = fd;
	return 0;
}

/* The exit status is never given up: a result that cannot be written (a
 * full disk, the directory removed) is tried again, every second, until it
 * can be. */
void write_result(struct runner *r, const struct job_result *res)
{
	double wait = 0.1;
	int said = 0;
	struct gf_err e;

	for (;;) {
		struct stat st;

		/* A directory removed under us still has our fd: check the name. */
		if ((fstat(r->dirfd, &st) || st.st_nlink == 0) && remake_run_dir(r) == 0)
			continue;
		if (runfile_write_result_at(r->dirfd, r->o.dir, res, &e) == 0) {
			gf_trace("result_written", strtoll(r->o.job, NULL, 10));	/* trace.h */
			return;
		}
		if (errno == ENOENT && remake_run_dir(r) == 0)
			continue;
		if (!said++)
			say(r, "job %s: %s (trying again until it can be written)",
				r->o.job, e.msg);
		usleep((useconds_t)(wait * 1e6));
		if (wait < 1)	/* at most a second after there is room again */
			wait *= 2;
	}
}

/* How long a told result waits for the daemon's answer before it is
 * written to the file all the same: a daemon that is stopped or stuck must
 * not keep an exit status only in our memory for long. The daemon answers
 * after its next commit, milliseconds after it reads us. */
#define REPORT_WAIT_MS 2000

/* The message is runfile.h's report; the answer one byte: "k" recorded
 * (its end is on disk), "K" recorded, and serve the next job if you can
 * (main.c; r->stay); anything else, EOF (the daemon stopped or exec'd
 * itself again) or no answer in time: write the file. Not told when we
 * moved ourselves into a v1 group: the daemon then waits for our exit
 * before the job's groups are free, and reads the file. */
int report_result(struct runner *r, const struct job_result *res)
{
	char msg[1100], c = 0;
	struct pollfd p = { .fd = r->chan, .events = POLLIN };
	int len = -1, rc;
	bool told;

	if (r->chan < 0)
		return -1;
	told = !r->moved && (len = runfile_report_message(res, msg, sizeof msg)) >= 0 &&
	       send(r->chan, msg, (size_t)len, MSG_NOSIGNAL) == len;
	if (told)
		gf_trace("result_told", strtoll(r->o.job, NULL, 10));	/* trace.h */
	/* The job's groups go (a daemon we tell it to knows: track.c) while
	 * the daemon records the end; told or not, before any file. */
	leave_cgroups(r);
	if (!told)
		return -1;
	do
		rc = poll(&p, 1, REPORT_WAIT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc != 1 || recv(r->chan, &c, 1, 0) != 1 || (c != 'k' && c != 'K'))
		return -1;
	r->stay = c == 'K';
	return 0;
}
