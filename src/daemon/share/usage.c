/* usage.c — what each job really used on its GPUs, from the NVML poll:
 * the UUIDs of the GPUs it was given (recorded at start, stable across
 * reboots unlike indices), its peak GPU memory per GPU (the memory NVML
 * reports for the job's own processes: track.c says which processes are
 * the job's) and the mean utilisation of its GPUs while it ran (device
 * utilisation: on a shared GPU it includes the other jobs'). A shared job
 * whose processes use more than its --gpu-memory booking is flagged, and
 * [gpu] shared_overuse says whether it is only reported (warn) or
 * cancelled (cancel).
 *
 * Kept in the job's stored record as "gpu_usage" (docs/api.md):
 *   {"gpu_uuids":[...], "peak_gpu_memory_mb":[...] (one per gpu_ids entry),
 *    "util_sum":S, "util_samples":N, "mean_gpu_util":S/N or null,
 *    "memory_exceeded":bool, "exceeded_mb":M (the use that overran),
 *    "devices_constrained":bool ([gpu] constrain_devices in force)} */
#include "share.h"
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *uuids_of(struct server *s, uint64_t mask)
{
	json_t *a = json_array();

	for (int g = 0; g < 64; g++) {
		if (!(mask & (1ULL << g)))
			continue;
		if (s->have_snap && s->snap.nvml_ok && (size_t)g < s->snap.ndev && s->snap.devs[g].uuid[0])
			json_array_append_new(a, json_string(s->snap.devs[g].uuid));
		else
			json_array_append_new(a, json_null());
	}
	return a;
}

void usage_start(struct server *s, struct job *j)
{
	json_t *u, *peak = json_array();

	usage_clear(j);
	if (!j->gpu_mask) {
		json_decref(peak);
		return;
	}
	for (int g = 0; g < 64; g++)
		if (j->gpu_mask & (1ULL << g))
			json_array_append_new(peak, json_integer(0));
	u = json_object();
	json_object_set_new(u, "gpu_uuids", uuids_of(s, j->gpu_mask));
	json_object_set_new(u, "peak_gpu_memory_mb", peak);
	json_object_set_new(u, "util_sum", json_integer(0));
	json_object_set_new(u, "util_samples", json_integer(0));
	json_object_set_new(u, "mean_gpu_util", json_null());
	json_object_set_new(u, "memory_exceeded", json_false());
	json_object_set_new(u, "devices_constrained", json_boolean(s->track.devices[0] != '\0'));
	jm_w(j)->gpu_usage = u;
}

void usage_clear(struct job *j)
{
	json_decref(jm(j)->gpu_usage);
	jm_w(j)->gpu_usage = NULL;
}

uint64_t usage_job_mem_on(struct server *s, const struct job *j, size_t g)
{
	const struct gpu_dev *d = &s->snap.devs[g];
	uint64_t mb = 0;

	for (size_t k = 0; k < d->nprocs; k++)
		if (track_owner(s, (pid_t)d->procs[k].pid) == j)
			mb += d->procs[k].used_mb;
	return mb;
}

struct sample {
	struct job *j;
	json_t *usage;		/* the new gpu_usage */
	uint64_t over_mb;	/* > 0: newly over its booking by this use */
	int over_gpu;
};

/* The job's usage with this snapshot added; NULL when nothing to add. */
static json_t *add_sample(struct server *s, struct job *j, uint64_t *over_mb, int *over_gpu)
{
	json_t *u = json_deep_copy(jm(j)->gpu_usage), *peak = json_object_get(u, "peak_gpu_memory_mb");
	int64_t usum = json_integer_value(json_object_get(u, "util_sum"));
	int64_t nsamp = json_integer_value(json_object_get(u, "util_samples"));
	int64_t util = 0, nutil = 0;
	size_t slot = 0;
	bool was_over = json_is_true(json_object_get(u, "memory_exceeded"));

	*over_mb = 0;
	for (int g = 0; g < 64; g++) {
		uint64_t mb;

		if (!(j->gpu_mask & (1ULL << g)))
			continue;
		if ((size_t)g < s->snap.ndev && !s->snap.devs[g].down) {
			mb = usage_job_mem_on(s, j, (size_t)g);
			if (json_integer_value(json_array_get(peak, slot)) < (json_int_t)mb)
				json_array_set_new(peak, slot, json_integer((json_int_t)mb));
			if (s->snap.devs[g].util_pct >= 0) {
				util += s->snap.devs[g].util_pct;
				nutil++;
			}
			if (j->shared && jm(j)->gpu_memory_mb > 0 && mb > (uint64_t)jm(j)->gpu_memory_mb && !was_over &&
			    mb > *over_mb) {
				*over_mb = mb;
				*over_gpu = g;
			}
		}
		slot++;
	}
	if (nutil) {
		usum += util / nutil;
		nsamp++;
		json_object_set_new(u, "util_sum", json_integer(usum));
		json_object_set_new(u, "util_samples", json_integer(nsamp));
		json_object_set_new(u, "mean_gpu_util", json_real((double)usum / (double)nsamp));
	}
	if (*over_mb) {
		json_object_set_new(u, "memory_exceeded", json_true());
		json_object_set_new(u, "exceeded_mb", json_integer((json_int_t)*over_mb));
	}
	if (json_equal(u, jm(j)->gpu_usage)) {
		json_decref(u);
		return NULL;
	}
	return u;
}

static void after_overuse(struct server *s, struct job *j, uint64_t mb, int gpu)
{
	char reason[160], err[GF_ERR_MAX];
	struct gf_ev_cancel c = { j->id, reason, err, sizeof err };

	fprintf(stderr, "gflowd: job %lld uses %llu MB of GPU memory on GPU %d, more than its %lld MB booking%s\n",
		(long long)j->id, (unsigned long long)mb, gpu, (long long)jm(j)->gpu_memory_mb,
		s->cfg.gpu_shared_overuse == GF_OVERUSE_CANCEL ? ": cancelling it ([gpu] shared_overuse = \"cancel\")"
							       : "");
	hooks_fire(s, GF_EV_JOB_EVENT, &(struct gf_ev_job_event){ j, "job_gpu_memory_exceeded" });
	if (s->cfg.gpu_shared_overuse != GF_OVERUSE_CANCEL || j->state != JS_RUNNING)
		return;
	snprintf(reason, sizeof reason, "GPUMemoryExceeded: used %llu MB on GPU %d, booked %lld MB",
		 (unsigned long long)mb, gpu, (long long)jm(j)->gpu_memory_mb);
	if (hooks_fire(s, GF_EV_CANCEL, &c))
		fprintf(stderr, "gflowd: cancelling job %lld: %s\n", (long long)c.id, err);
}

void usage_sample(struct server *s)
{
	struct sample *v = NULL;
	size_t n = 0;
	struct gf_err e;

	if (!s->have_snap || !s->snap.nvml_ok || s->snap.seq == s->usage_seq)
		return;
	for (size_t i = 0; i < s->nlive; i++) {
		struct job *j = jobs_active_at(s, i);
		json_t *u;
		uint64_t over = 0;
		int over_gpu = -1;

		if (!j || j->state != JS_RUNNING || !j->gpu_mask || !jm(j)->gpu_usage)
			continue;
		u = add_sample(s, j, &over, &over_gpu);
		if (!u)
			continue;
		v = realloc(v, (n + 1) * sizeof *v);
		if (!v)
			abort();
		v[n++] = (struct sample){ j, u, over, over_gpu };
	}
	s->usage_seq = s->snap.seq;
	if (!n)
		return;
	if (jobs_txn_begin(s, &e) == 0) {
		for (size_t i = 0; i < n && !s->txn.failed; i++) {
			jobs_touch(s, v[i].j);
			json_decref(jm(v[i].j)->gpu_usage);
			jm_w(v[i].j)->gpu_usage = json_incref(v[i].usage);
			jobs_save(s, v[i].j, &e);
		}
		if (jobs_txn_commit(s, &e) == 0) {
			for (size_t i = 0; i < n; i++)
				if (v[i].over_mb)
					after_overuse(s, v[i].j, v[i].over_mb, v[i].over_gpu);
		} else
			s->usage_seq = 0;	/* not recorded: the next poll tries again */
	} else
		s->usage_seq = 0;
	for (size_t i = 0; i < n; i++)
		json_decref(v[i].usage);
	free(v);
}
