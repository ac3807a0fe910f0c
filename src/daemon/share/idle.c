/* idle.c — idle reclaim ([gpu.idle_reclaim], off by default): after each
 * NVML poll, every running job it applies to (apply_to: interactive jobs,
 * or all) with GPUs is fed to its idle clock (core/idle.h). A job whose
 * GPUs all stayed below threshold_util, with the memory its processes use
 * unchanged, for `after` is warned: a line in its log (what its terminal
 * shows is written there too), the job_idle notification, and its
 * reason Idle(h:mm) in gqueue / IdleFor= in gjob show. `warn_before`
 * after the warning the action is taken: warn does nothing more, cancel
 * cancels it as gcancel does (through the engine, one committed
 * transition). Any activity restarts the clock and withdraws a warning.
 *
 * Measured: NVML's utilisation of each of the job's GPUs (the device's:
 * on a shared GPU it includes the other jobs') and the memory NVML reports
 * for the job's own processes (track.c says which are the job's). A GPU
 * whose utilisation NVML cannot tell (a MIG device, a GPU that is down)
 * counts as active: the daemon never reclaims what it cannot measure.
 *
 * The clocks are in memory only: a daemon restart starts them again. */
#include "share.h"
#include "idle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

struct idle_entry {
	int64_t id;
	bool seen;			/* in this sample */
	struct idle_clock c;
};

static struct idle_entry *find(struct server *s, int64_t id)
{
	for (size_t i = 0; i < s->nidle; i++)
		if (s->idle[i].id == id)
			return &s->idle[i];
	return NULL;
}

static struct idle_entry *find_or_add(struct server *s, int64_t id)
{
	struct idle_entry *e = find(s, id), *n;

	if (e)
		return e;
	n = realloc(s->idle, (s->nidle + 1) * sizeof *n);
	if (!n)
		abort();
	s->idle = n;
	e = &n[s->nidle++];
	memset(e, 0, sizeof *e);
	e->id = id;
	return e;
}

bool idle_applies(struct server *s, const struct job *j)
{
	return s->cfg.idle_enabled && j->state == JS_RUNNING && j->gpu_mask &&
	       (s->cfg.idle_apply_all || jm(j)->interactive);
}

#define LOG_FLAGS (O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* A log in the owner's home, opened by root (system mode): no symbolic
 * link anywhere on the path where the kernel can tell (openat2), never one
 * at the file itself. */
static int open_owner_log(const char *path)
{
#ifdef SYS_openat2
	struct open_how how = { .flags = LOG_FLAGS, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

	if (fd >= 0 || errno != ENOSYS)
		return (int)fd;
#endif
	return open(path, LOG_FLAGS);
}

/* Append one line to the job's log (what its terminal shows is written
 * there too). Never through a link at the log, never blocks on a FIFO.
 * A log in the owner's home (system mode) is written only when it is a
 * regular file of the job's owner with one link: the same rule as
 * reading it (joblog.c), so root appends only to a file its owner could
 * write themselves. */
static void log_line(struct server *s, const struct job *j, const char *line)
{
	char path[GF_PATH_MAX + 32], name[64];
	struct stat st;
	int fd;

	if (!jm(j)->log_dir && s->log_dfd >= 0) {
		jobs_log_name(j, jm(j)->log_seq, name, sizeof name);
		fd = openat(s->log_dfd, name, LOG_FLAGS);
	} else {
		jobs_log_path(s, j, path, sizeof path);
		fd = s->paths.system ? open_owner_log(path) : open(path, LOG_FLAGS);
	}
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (!s->paths.system || !jm(j)->log_dir || (st.st_uid == j->uid && st.st_nlink == 1))) {
		ssize_t n = write(fd, line, strlen(line));

		(void)n;	/* a full disk loses the line, not the warning */
	}
	close(fd);
}

static void warn(struct server *s, struct job *j, double idle_secs)
{
	char line[512], hms[32], after[32], act[96];
	const struct gf_config *c = &s->cfg;

	idle_fmt_hms(idle_secs, hms, sizeof hms);
	idle_fmt_hms((double)c->idle_warn_before_secs, after, sizeof after);
	if (c->idle_action == GF_IDLE_CANCEL || (c->idle_action == GF_IDLE_REQUEUE && jm(j)->interactive))
		snprintf(act, sizeof act, "it will be cancelled in %s", after);
	else if (c->idle_action == GF_IDLE_REQUEUE)
		snprintf(act, sizeof act, "it will be stopped and queued again in %s", after);
	else
		snprintf(act, sizeof act, "this is a warning only");
	snprintf(line, sizeof line,
		 "\r\ngflow: job %lld: its GPUs have been idle (below %d%% utilisation, GPU memory unchanged) for %s; "
		 "%s unless they are used ([gpu.idle_reclaim])\r\n",
		 (long long)j->id, c->idle_threshold_util, hms, act);
	log_line(s, j, line);
	fprintf(stderr, "gflowd: job %lld: GPUs idle for %s: warned (action %s)\n", (long long)j->id, hms,
		c->idle_action == GF_IDLE_CANCEL ? "cancel" : c->idle_action == GF_IDLE_REQUEUE ? "requeue" : "warn");
	hooks_fire(s, GF_EV_JOB_EVENT, &(struct gf_ev_job_event){ j, "job_idle" });
}

/* The action; nonzero when it could not be done now (tried again at the
 * next sample). requeue stops the job as a preemption does and queues it
 * again under its id (engine/preempt.c); an interactive session, whose
 * terminal cannot come back, is cancelled instead. */
static int act(struct server *s, struct job *j, double idle_secs)
{
	char reason[128], err[GF_ERR_MAX], hms[32], line[256];
	struct gf_ev_cancel ev = { j->id, reason, err, sizeof err };
	bool requeue = s->cfg.idle_action == GF_IDLE_REQUEUE && !jm(j)->interactive;

	if (s->cfg.idle_action == GF_IDLE_WARN)
		return 0;
	idle_fmt_hms(idle_secs, hms, sizeof hms);
	snprintf(reason, sizeof reason, "Idle: no GPU activity for %s", hms);
	snprintf(line, sizeof line, "\r\ngflow: job %lld: %s: its GPUs were idle for %s ([gpu.idle_reclaim])\r\n",
		 (long long)j->id, requeue ? "stopped to be queued again" : "cancelled", hms);
	fprintf(stderr, "gflowd: job %lld: GPUs idle for %s: %s ([gpu.idle_reclaim] action = \"%s\")\n",
		(long long)j->id, hms, requeue ? "queueing it again" : "cancelling it", requeue ? "requeue" : "cancel");
	if (requeue)	/* before the runner's own line about the preemption */
		log_line(s, j, line);
	if (!hooks_fire(s, requeue ? GF_EV_REQUEUE : GF_EV_CANCEL, &ev)) {
		if (!requeue)
			log_line(s, j, line);
		return 0;
	}
	fprintf(stderr, requeue ? "gflowd: queueing job %lld again: %s\n" : "gflowd: cancelling job %lld: %s\n",
		(long long)j->id, err);
	return -1;
}

void idle_sample(struct server *s)
{
	double now = now_mono();
	size_t w = 0, nact = 0;
	struct { int64_t id; double secs; } *due = NULL;

	if (!s->have_snap || s->snap.seq == s->idle_seq)
		return;
	s->idle_seq = s->snap.seq;
	for (size_t i = 0; i < s->nidle; i++)
		s->idle[i].seen = false;
	for (size_t i = 0; s->cfg.idle_enabled && s->snap.nvml_ok && i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);
		int util[IDLE_MAX_GPUS];
		uint64_t mem[IDLE_MAX_GPUS];
		size_t n = 0;
		struct idle_entry *e;
		enum idle_event ev;
		const struct idle_rule r = { s->cfg.idle_after_secs, s->cfg.idle_warn_before_secs,
					     s->cfg.idle_threshold_util };

		if (!j || !idle_applies(s, j))
			continue;
		for (int g = 0; g < 64 && n < IDLE_MAX_GPUS; g++) {
			if (!(j->gpu_mask & (1ULL << g)))
				continue;
			if ((size_t)g < s->snap.ndev && !s->snap.devs[g].down) {
				util[n] = s->snap.devs[g].util_pct;
				mem[n] = usage_job_mem_on(s, j, (size_t)g);
			} else {
				util[n] = -1;
				mem[n] = 0;
			}
			n++;
		}
		e = find_or_add(s, j->id);
		e->seen = true;
		ev = idle_step(&e->c, &r, &(struct idle_sample){ now, n, util, mem });
		if (ev == IDLE_WARN)
			warn(s, j, idle_for(&e->c, now));
		else if (ev == IDLE_ACT && s->cfg.idle_action != GF_IDLE_WARN) {
			/* acted on after the walk: a cancel or requeue changes the lists */
			if (!(due = realloc(due, (nact + 1) * sizeof *due)))
				abort();
			due[nact].id = j->id;
			due[nact++].secs = idle_for(&e->c, now);
		} else if (ev == IDLE_CLEARED)
			fprintf(stderr, "gflowd: job %lld: GPU activity again: idle warning withdrawn\n",
				(long long)j->id);
	}
	for (size_t i = 0; i < nact; i++) {
		struct job *j = jobs_get(s, due[i].id);
		struct idle_entry *e;

		if (j && j->state == JS_RUNNING && act(s, j, due[i].secs) && (e = find(s, due[i].id)))
			e->c.acted = false;	/* not done: again at the next sample */
	}
	free(due);
	/* Forget the jobs that no longer run (or no longer apply). */
	for (size_t i = 0; i < s->nidle; i++)
		if (s->idle[i].seen)
			s->idle[w++] = s->idle[i];
	s->nidle = w;
	if (!w) {
		free(s->idle);
		s->idle = NULL;
	}
}

void idle_close(struct server *s)
{
	free(s->idle);
	s->idle = NULL;
	s->nidle = 0;
}

void idle_annotate(struct server *s, const struct job *j, json_t *o)
{
	const struct idle_entry *e;
	double f;

	if (!idle_applies(s, j) || !(e = find(s, j->id)) || (f = idle_for(&e->c, now_mono())) <= 0)
		return;
	json_object_set_new(o, "idle_secs", json_integer((json_int_t)f));
	json_object_set_new(o, "idle_warned", json_boolean(e->c.warned_at > 0));
}
