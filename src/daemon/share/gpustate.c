/* gpustate.c — GPUs as the daemon sees them: the newest NVML snapshot
 * (from the poller thread in gpu.c) joined with what the jobs hold, the
 * allowed set (restriction), and ignored processes. It decides which GPUs
 * are unmanaged: a compute process that belongs to no job (track.c says
 * which job a process belongs to) is foreign, and makes its GPU
 * unavailable (foreign.c names it and holds the [gpu] policy); so does one
 * whose pid this pid namespace cannot see. */
#include "share.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static bool is_ignored(struct server *s, int gpu, pid_t pid)
{
	for (size_t i = 0; i < s->nignored; i++)
		if (s->ignored[i].gpu == gpu && s->ignored[i].pid == pid)
			return true;
	return false;
}

/* Is pid among the compute processes of GPU gpu in the snapshot? */
static bool listed_on(struct server *s, int gpu, pid_t pid)
{
	if (!s->have_snap || gpu < 0 || (size_t)gpu >= s->snap.ndev)
		return false;
	for (size_t k = 0; k < s->snap.devs[gpu].nprocs; k++)
		if ((pid_t)s->snap.devs[gpu].procs[k].pid == pid)
			return true;
	return false;
}

/* Ignored processes that exited are forgotten (one not visible here is
 * kept while NVML lists it). */
static void prune_ignored(struct server *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nignored; i++)
		if (pid_alive(s->ignored[i].pid) || listed_on(s, s->ignored[i].gpu, s->ignored[i].pid))
			s->ignored[k++] = s->ignored[i];
	s->nignored = k;
}

/* The pids of the snapshot seen alive in this pid namespace: one of them
 * that is no longer alive has exited (since the poll), while a pid never
 * seen is a process this namespace cannot see. */
static bool seen_has(struct server *s, pid_t pid)
{
	for (size_t i = 0; i < s->ngpu_seen; i++)
		if (s->gpu_seen[i] == pid)
			return true;
	return false;
}

static void seen_add(struct server *s, pid_t pid)
{
	if (seen_has(s, pid))
		return;
	if (s->ngpu_seen == s->gpu_seen_cap) {
		s->gpu_seen_cap = s->gpu_seen_cap ? 2 * s->gpu_seen_cap : 64;
		s->gpu_seen = realloc(s->gpu_seen, s->gpu_seen_cap * sizeof *s->gpu_seen);
		if (!s->gpu_seen)
			abort();
	}
	s->gpu_seen[s->ngpu_seen++] = pid;
}

/* In the machine's initial pid namespace every process is visible, so a
 * listed pid that is not alive has exited, unless no process here could
 * have it (above pid_max). Elsewhere only a pid once seen alive can. */
static void pid_namespace(struct server *s)
{
	struct stat st;
	char buf[32];

	s->sees_all_pids = stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == 0xEFFFFFFCU;	/* PROC_PID_INIT_INO */
	s->pid_max = 4194304;	/* the kernel's largest */
	if (runfile_read_text("/proc/sys/kernel", "pid_max", buf, sizeof buf) == 0 && atol(buf) > 0)
		s->pid_max = atol(buf);
}

/* A new snapshot: forget the pids it no longer lists. */
static void seen_prune(struct server *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->ngpu_seen; i++) {
		bool listed = false;

		for (size_t g = 0; g < s->snap.ndev && !listed; g++)
			listed = listed_on(s, (int)g, s->gpu_seen[i]);
		if (listed)
			s->gpu_seen[k++] = s->gpu_seen[i];
	}
	s->ngpu_seen = k;
}

size_t gpustate_count(struct server *s)
{
	return s->have_snap && s->snap.nvml_ok ? s->snap.ndev : 0;
}

void gpustate_refresh(struct server *s)
{
	size_t n = gpustate_count(s);

	if (n > GFLOW_MAX_GPUS)
		n = GFLOW_MAX_GPUS;
	memset(s->views, 0, n * sizeof *s->views);	/* only views below nviews are read */
	s->nviews = n;
	for (size_t g = 0; g < n; g++) {
		struct gpu_view *v = &s->views[g];
		const struct gpu_dev *d = &s->snap.devs[g];

		v->index = d->index;
		v->allowed = s->allowed_all || (s->allowed_mask & (1ULL << d->index));
		v->down = d->down;
	}
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_live_at(s, i);

		if (!j || !j->active)
			continue;
		for (size_t g = 0; g < n; g++) {
			struct gpu_view *v = &s->views[g];

			if (!(j->gpu_mask & (1ULL << v->index)))
				continue;
			if (j->shared) {
				v->nshared++;
				v->booked_mb += (uint64_t)jm(j)->gpu_memory_mb;
			} else
				v->exclusive = true;
		}
	}
	for (size_t g = 0; g < n; g++) {
		struct gpu_view *v = &s->views[g];
		const struct gpu_dev *d = &s->snap.devs[g];

		for (size_t k = 0; k < d->nprocs; k++) {
			pid_t pid = (pid_t)d->procs[k].pid;
			bool alive = pid_alive(pid);
			struct foreign_proc f;
			struct job *owner;

			if (alive)
				seen_add(s, pid);
			else if (seen_has(s, pid) || (s->sees_all_pids && pid <= s->pid_max))
				continue;	/* gone since the poll */
			/* Otherwise the pid is not in this pid namespace (the
			 * daemon runs in a container): foreign, and it blocks. */
			owner = alive ? track_owner(s, pid) : NULL;
			if (owner) {
				if (!(owner->gpu_mask & (1ULL << v->index)) && v->nescaped < 16) {
					v->escaped[v->nescaped] = pid;
					v->escaped_job[v->nescaped++] = owner->id;
				}
				continue;
			}
			foreign_describe(pid, d->procs[k].used_mb, alive, &f);
			if (is_ignored(s, v->index, pid)) {
				f.ignored = true;
				f.blocks = false;
			} else
				foreign_apply_policy(&s->cfg, &f);
			if (f.blocks)
				v->nunmanaged++;
			else
				v->foreign_mb += d->procs[k].used_mb;
			if (v->nforeign < 16)
				v->foreign[v->nforeign++] = f;
		}
	}
	hooks_fire(s, GF_EV_GPUS, NULL);
}

size_t gpustate_sched_gpus(struct server *s, struct sched_gpu *out)
{
	for (size_t g = 0; g < s->nviews; g++) {
		const struct gpu_view *v = &s->views[g];

		out[g] = (struct sched_gpu){
			.index = v->index,
			.usable = v->allowed && !v->down && !v->nunmanaged && !v->nescaped,
			.exclusive = v->exclusive,
			.nshared = v->nshared,
			.total_mb = s->snap.devs[g].total_mb,
			.booked_mb = v->booked_mb,
			.foreign_mb = v->foreign_mb,
		};
	}
	return s->nviews;
}

static const char *view_state(const struct gpu_view *v)
{
	if (v->down)
		return "down";
	if (v->exclusive)
		return "allocated";
	if (v->nshared)
		return "shared";
	if (v->nunmanaged || v->nescaped)
		return "unmanaged";
	if (!v->allowed)
		return "restricted";
	return "idle";
}

/* The pids of the foreign processes that block the GPU. */
static json_t *unmanaged_json(const struct gpu_view *v)
{
	json_t *a = json_array();

	for (int i = 0; i < v->nforeign; i++)
		if (v->foreign[i].blocks)
			json_array_append_new(a, json_integer(v->foreign[i].pid));
	return a;
}

static json_t *foreign_list_json(const struct gpu_view *v)
{
	json_t *a = json_array();

	for (int i = 0; i < v->nforeign; i++)
		json_array_append_new(a, foreign_json(&v->foreign[i]));
	return a;
}

/* "unmanaged(pid=4242 user=bob cmd=python age=2d3h mem=642M)", one per
 * blocking process, comma separated. */
static void unmanaged_reason(const struct gpu_view *v, char *buf, size_t size)
{
	size_t len = 0;
	char label[256];

	buf[0] = '\0';
	for (int i = 0; i < v->nforeign && len < size; i++) {
		if (!v->foreign[i].blocks)
			continue;
		foreign_label(&v->foreign[i], label, sizeof label);
		len += (size_t)snprintf(buf + len, size - len, "%sunmanaged(%s)", len ? ", " : "", label);
	}
}

/* The reservation whose window holds now on GPU index, or NULL. */
static const struct reservation *active_resv(struct server *s, int index, double now)
{
	for (size_t i = 0; i < s->nresvs; i++) {
		const struct reservation *r = &s->resvs[i];

		if (!r->cancelled && r->start <= now && now < r->end && index >= 0 && index < 64 &&
		    (r->gpu_mask >> index) & 1)
			return r;
	}
	return NULL;
}

json_t *gpustate_json(struct server *s)
{
	double now = now_real();
	json_t *o = json_object(), *gpus = json_array(), *allowed;
	char reason[1024];

	gpustate_refresh(s);
	json_object_set_new(o, "nvml_ok", json_boolean(s->have_snap && s->snap.nvml_ok));
	json_object_set_new(o, "status", json_string(!s->have_snap ? "GPU information not available yet"
					  : s->snap.nvml_ok ? (s->snap.ndev ? "ok" : "NVML reports no GPUs")
							    : s->snap.status));
	json_object_set_new(o, "driver_version", json_string(s->have_snap ? s->snap.driver_version : ""));
	if (s->allowed_all)
		allowed = json_null();
	else {
		allowed = json_array();
		for (int i = 0; i < 64; i++)
			if (s->allowed_mask & (1ULL << i))
				json_array_append_new(allowed, json_integer(i));
	}
	json_object_set_new(o, "allowed", allowed);
	json_object_set_new(o, "allowed_source", json_string(s->allowed_source));
	{
		/* The host's other resources the pass counts: booked / total. */
		int64_t cpus = 0, mem = 0;

		for (size_t i = 0; i < s->nlive; i++) {
			struct job *j = jobs_active_at(s, i);

			if (j) {
				cpus += job_cpus(j);
				mem += j->memory_mb;
			}
		}
		json_object_set_new(o, "cpus_total", json_integer(s->cpus_total));
		json_object_set_new(o, "cpus_booked", json_integer(cpus));
		json_object_set_new(o, "memory_total_mb", json_integer(s->mem_total_mb));
		json_object_set_new(o, "memory_booked_mb", json_integer(mem));
	}
	for (size_t g = 0; g < s->nviews; g++) {
		const struct gpu_view *v = &s->views[g];
		const struct gpu_dev *d = &s->snap.devs[g];
		json_t *gj = json_object(), *jobs = json_array(), *ign = json_array(), *esc = json_array();

		for (size_t i = 0; i < s->nlive; i++) {
			struct job *j = jobs_active_at(s, i);

			if (!j || !(j->gpu_mask & (1ULL << v->index)))
				continue;
			json_t *jj = json_object();

			json_object_set_new(jj, "id", json_integer(j->id));
			json_object_set_new(jj, "name", json_string(j->name ? j->name : ""));
			json_object_set_new(jj, "gpu_memory_mb", json_integer(jm(j)->gpu_memory_mb));
			json_object_set_new(jj, "shared", json_boolean(j->shared));
			json_array_append_new(jobs, jj);
		}
		for (size_t i = 0; i < s->nignored; i++)
			if (s->ignored[i].gpu == v->index)
				json_array_append_new(ign, json_integer(s->ignored[i].pid));
		for (int i = 0; i < v->nescaped; i++) {
			json_t *ej = json_object();

			json_object_set_new(ej, "pid", json_integer(v->escaped[i]));
			json_object_set_new(ej, "job", json_integer(v->escaped_job[i]));
			json_array_append_new(esc, ej);
		}
		reason[0] = '\0';
		if (v->down)
			snprintf(reason, sizeof reason, "%s", d->down_reason[0] ? d->down_reason : "GPU lost");
		else if (v->nunmanaged)
			unmanaged_reason(v, reason, sizeof reason);
		else if (v->nescaped)
			snprintf(reason, sizeof reason, "job %lld process %d on a GPU it was not given",
				 (long long)v->escaped_job[0], (int)v->escaped[0]);
		json_object_set_new(gj, "index", json_integer(v->index));
		json_object_set_new(gj, "parent_index", json_integer(d->parent));
		json_object_set_new(gj, "mig_index", d->mig_index >= 0 ? json_integer(d->mig_index) : json_null());
		json_object_set_new(gj, "name", json_string(d->name));
		json_object_set_new(gj, "uuid", json_string(d->uuid));
		json_object_set_new(gj, "total_mb", json_integer((json_int_t)d->total_mb));
		json_object_set_new(gj, "used_mb", json_integer((json_int_t)d->used_mb));
		json_object_set_new(gj, "util_pct", d->util_pct < 0 ? json_null() : json_integer(d->util_pct));
		{	/* an idle GPU in a reservation's window is "reserved" */
			const struct reservation *rv = active_resv(s, v->index, now);
			const char *st = view_state(v);

			json_object_set_new(gj, "state", json_string(rv && !strcmp(st, "idle") ? "reserved" : st));
			json_object_set_new(gj, "reservation",
					    rv ? json_pack("{s:I,s:s,s:f,s:f}", "id", (json_int_t)rv->id, "user",
							   rv->user, "start", rv->start, "end", rv->end)
					       : json_null());
		}
		json_object_set_new(gj, "allowed", json_boolean(v->allowed));
		json_object_set_new(gj, "jobs", jobs);
		json_object_set_new(gj, "booked_mb", json_integer((json_int_t)v->booked_mb));
		json_object_set_new(gj, "unmanaged_pids", unmanaged_json(v));
		json_object_set_new(gj, "foreign", foreign_list_json(v));
		json_object_set_new(gj, "escaped", esc);
		json_object_set_new(gj, "ignored_pids", ign);
		json_object_set_new(gj, "reason", json_string(reason));
		json_array_append_new(gpus, gj);
	}
	json_object_set_new(o, "gpus", gpus);
	return o;
}

/* ---- restriction ------------------------------------------------------- */

#define SET_GPUS_KEY "allowed_gpus"
#define SET_GPUS_BASIS_KEY "allowed_gpus_basis"

/* What the flag/env/config said when set-gpus was used, so that a later
 * change there wins over an older set-gpus. */
static void config_basis(struct server *s, char *buf, size_t size)
{
	if (s->cfg.gpus_set)
		snprintf(buf, size, "mask:%llx", (unsigned long long)s->cfg.gpus_mask);
	else
		snprintf(buf, size, "all");
}

static int check_exists(struct server *s, uint64_t mask, const char *spec, struct gf_err *e)
{
	size_t n = gpustate_count(s);
	char missing[256];
	uint64_t bad = n >= 64 ? 0 : mask & ~((1ULL << n) - 1);

	if (!bad)
		return 0;
	gf_format_gpu_mask(bad, missing, sizeof missing);
	return gf_err_set(e, "GPU spec '%s': this machine has no GPU %s (it has %zu GPU%s%s)", spec,
			  missing, n, n == 1 ? "" : "s", n ? ", numbered from 0" : "");
}

static void set_allowed(struct server *s, bool all, uint64_t mask, const char *source)
{
	s->allowed_all = all;
	s->allowed_mask = all ? 0 : mask;
	snprintf(s->allowed_source, sizeof s->allowed_source, "%s", source);
}

static bool any_mig(struct server *s)
{
	for (size_t g = 0; s->have_snap && g < s->snap.ndev; g++)
		if (s->snap.devs[g].mig_index >= 0)
			return true;
	return false;
}

/* One item of a unit spec: I (every unit of GPU I), A-B (GPUs A..B) or
 * I:K (MIG device K of GPU I) into *mask. */
static int unit_item(struct server *s, const char *spec, const char *item, uint64_t *mask, struct gf_err *e)
{
	long a, b, k = -1;
	char *end;
	uint64_t got = 0;

	a = strtol(item, &end, 10);
	b = a;
	if (end == item || a < 0)
		goto bad;
	if (*end == '-') {
		const char *p = end + 1;

		b = strtol(p, &end, 10);
		if (end == p || b < a)
			goto bad;
	} else if (*end == ':') {
		const char *p = end + 1;

		k = strtol(p, &end, 10);
		if (end == p || k < 0)
			goto bad;
	}
	if (*end)
		goto bad;
	for (size_t g = 0; g < s->snap.ndev; g++) {
		const struct gpu_dev *d = &s->snap.devs[g];

		if (d->parent >= a && d->parent <= b && (k < 0 || d->mig_index == k))
			got |= 1ULL << g;
	}
	if (!got && k >= 0)
		return gf_err_set(e, "GPU spec '%s': GPU %ld has no MIG device %ld", spec, a, k);
	if (!got)
		return gf_err_set(e, "GPU spec '%s': this machine has no GPU %s", spec, item);
	*mask |= got;
	return 0;
bad:
	return gf_err_set(e, "GPU spec '%s': '%s' is not a GPU (I, A-B, or I:K for MIG device K of GPU I)",
			  spec, item);
}

/* A spec of the units to allow. Where no GPU is in MIG mode the units are
 * the GPUs, and a spec without I:K means what gf_parse_gpu_spec says. */
static int parse_units(struct server *s, const char *spec, uint64_t *mask, int *all, struct gf_err *e)
{
	char *copy, *item, *save = NULL;
	int rc = 0;

	if ((!any_mig(s) && !strchr(spec, ':')) || !strcmp(spec, "all"))
		return gf_parse_gpu_spec(spec, mask, all, e);
	*mask = 0;
	*all = 0;
	copy = strdup(spec);
	if (!copy)
		return gf_err_set(e, "out of memory");
	for (item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save))
		rc = unit_item(s, spec, item, mask, e);
	free(copy);
	if (!rc && !*mask)
		rc = gf_err_set(e, "GPU spec '%s': no GPU named", spec);
	return rc;
}

int gpustate_set_allowed(struct server *s, const char *spec, struct gf_err *e)
{
	uint64_t mask;
	int all;
	char basis[64];

	if (parse_units(s, spec, &mask, &all, e))
		return -1;
	if (!all && check_exists(s, mask, spec, e))
		return -1;
	config_basis(s, basis, sizeof basis);
	if (jobs_txn_begin(s, e))
		return -1;
	if (store_set_setting(s->store, SET_GPUS_KEY, spec, e) ||
	    store_set_setting(s->store, SET_GPUS_BASIS_KEY, basis, e)) {
		jobs_txn_rollback(s);
		return -1;
	}
	if (jobs_txn_commit(s, e))
		return -1;
	set_allowed(s, all, mask, "gctl set-gpus");
	server_schedule(s);
	return 0;
}

/* Decide the allowed set at start: flag > stored set-gpus (while the config
 * it was made against is unchanged) > env/config > all. */
static int apply_sources(struct server *s, struct gf_err *e)
{
	char basis[64], *stored = store_get_setting(s->store, SET_GPUS_KEY);
	char *stored_basis = store_get_setting(s->store, SET_GPUS_BASIS_KEY);
	uint64_t mask;
	int all, rc = 0;

	config_basis(s, basis, sizeof basis);
	if (s->opts.gpus) {
		if (gf_parse_gpu_spec(s->opts.gpus, &mask, &all, e) ||
		    (!all && check_exists(s, mask, s->opts.gpus, e))) {
			rc = gf_err_prefix(e, "--gpus");
			goto out;
		}
		set_allowed(s, all, mask, "--gpus");
		if (stored && (store_set_setting(s->store, SET_GPUS_KEY, NULL, e) ||
			       store_set_setting(s->store, SET_GPUS_BASIS_KEY, NULL, e)))
			rc = -1;
		goto out;
	}
	if (stored && stored_basis && !strcmp(stored_basis, basis) &&
	    parse_units(s, stored, &mask, &all, NULL) == 0) {
		set_allowed(s, all, mask, "gctl set-gpus");
		goto out;
	}
	if (stored && (store_set_setting(s->store, SET_GPUS_KEY, NULL, e) ||
		       store_set_setting(s->store, SET_GPUS_BASIS_KEY, NULL, e))) {
		rc = -1;
		goto out;
	}
	if (s->cfg.gpus_set)
		set_allowed(s, false, s->cfg.gpus_mask, s->cfg.gpus_source);
	else
		set_allowed(s, true, 0, "default");
out:
	free(stored);
	free(stored_basis);
	return rc;
}

int gpustate_ignore(struct server *s, int gpu, pid_t pid, bool ignore, struct gf_err *e)
{
	if (gpu < 0 || (size_t)gpu >= gpustate_count(s))
		return gf_err_set(e, "no GPU %d on this machine", gpu);
	if (ignore) {
		if (!pid_alive(pid) && !listed_on(s, gpu, pid))
			return gf_err_set(e, "no process %d is running or listed on GPU %d", (int)pid, gpu);
		if (is_ignored(s, gpu, pid))
			return 0;
		s->ignored = realloc(s->ignored, (s->nignored + 1) * sizeof *s->ignored);
		if (!s->ignored)
			abort();
		s->ignored[s->nignored++] = (struct ignored_proc){ gpu, pid };
	} else {
		size_t k = 0;

		for (size_t i = 0; i < s->nignored; i++)
			if (s->ignored[i].gpu != gpu || s->ignored[i].pid != pid)
				s->ignored[k++] = s->ignored[i];
		if (k == s->nignored)
			return gf_err_set(e, "process %d on GPU %d is not ignored", (int)pid, gpu);
		s->nignored = k;
	}
	server_schedule(s);
	return 0;
}

json_t *gpustate_ignored_json(struct server *s)
{
	json_t *a = json_array();

	prune_ignored(s);
	for (size_t i = 0; i < s->nignored; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "gpu", json_integer(s->ignored[i].gpu));
		json_object_set_new(o, "pid", json_integer(s->ignored[i].pid));
		json_array_append_new(a, o);
	}
	return a;
}

/* ---- the poller -------------------------------------------------------- */

static void take_snapshot(struct server *s)
{
	struct gpu_snapshot snap;

	if (gpu_poller_latest(s->poller, &snap))
		return;
	if (s->have_snap)
		gpu_snapshot_free(&s->snap);
	s->snap = snap;
	s->have_snap = true;
	seen_prune(s);
}

static void on_gpu_poll(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char buf[64];

	(void)what;
	while (read(fd, buf, sizeof buf) > 0)
		;
	take_snapshot(s);
	prune_ignored(s);
	usage_sample(s);
	idle_sample(s);
	server_schedule(s);
}

int gpustate_init(struct server *s, struct gf_err *e)
{
	int interval = s->opts.poll_interval ? s->opts.poll_interval : s->cfg.gpu_poll_interval_secs;
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	if (interval < 1)
		interval = 1;
	pid_namespace(s);
	if (pipe2(s->gpu_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return gf_err_set(e, "pipe: %s", strerror(errno));
	s->poller = gpu_poller_start(interval, s->gpu_pipe[1], e);
	if (!s->poller)
		return -1;
	/* Wait briefly for the first snapshot, so that the first answers know
	 * the GPUs; a hung driver only delays this by the bound. */
	for (int i = 0; i < 300 && !s->have_snap; i++) {
		take_snapshot(s);
		if (!s->have_snap)
			nanosleep(&ts, NULL);
	}
	s->gpu_ev = event_new(s->base, s->gpu_pipe[0], EV_READ | EV_PERSIST, on_gpu_poll, s);
	event_add(s->gpu_ev, NULL);
	return apply_sources(s, e);
}

void gpustate_close(struct server *s)
{
	if (s->poller)
		gpu_poller_stop(s->poller);
	if (s->gpu_ev)
		event_free(s->gpu_ev);
	if (s->have_snap)
		gpu_snapshot_free(&s->snap);
	free(s->ignored);
	free(s->gpu_seen);
	idle_close(s);
}
