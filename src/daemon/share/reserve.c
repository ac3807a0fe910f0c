/* reserve.c — reservations: GPUs kept for one user in a time window.
 * Stored one row each (cancelled ones stay, so ids are never reused);
 * created and cancelled by admins. Windows start and end on the half hour
 * and last a multiple of 30 minutes (GFLOW_RESERVATION_SLOT_SECS changes
 * the slot, for tests). A `--gpus N` reservation gets concrete GPUs when it
 * is made: the lowest ones no overlapping reservation holds. Two
 * reservations that would share a GPU at the same time are refused, naming
 * the one already there. A window that began already (and has not ended)
 * is taken from now on. The scheduler (sched.c) keeps other users' jobs
 * off reserved GPUs; the pass's timer wakes at every start and end. */
#include "share.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse.h"

#define SLOT_DEFAULT 1800

static int64_t slot_secs(void)
{
	const char *v = getenv("GFLOW_RESERVATION_SLOT_SECS");
	char *end;
	long long n;

	if (!v || !*v)
		return SLOT_DEFAULT;
	errno = 0;
	n = strtoll(v, &end, 10);
	return errno || *end || n < 1 || n > SLOT_DEFAULT ? SLOT_DEFAULT : n;
}

static json_t *gpu_list(uint64_t mask)
{
	json_t *a = json_array();

	for (int i = 0; i < 64; i++)
		if (mask & (1ULL << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

const char *reserve_status(const struct reservation *r, double now)
{
	if (r->cancelled)
		return "cancelled";
	if (now >= r->end)
		return "completed";
	return now >= r->start ? "active" : "pending";
}

json_t *reserve_json(const struct reservation *r, double now)
{
	return json_pack("{s:I,s:s,s:I,s:o,s:i,s:b,s:f,s:f,s:f,s:s}", "id", (json_int_t)r->id, "user", r->user, "uid",
			 (json_int_t)r->uid, "gpu_ids", gpu_list(r->gpu_mask), "gpus", r->ngpus, "by_count",
			 r->by_count, "start", r->start, "end", r->end, "created", r->created, "status",
			 reserve_status(r, now));
}

static void load_row(void *arg, const char *key, json_t *row)
{
	struct server *s = arg;
	struct reservation r = { 0 };
	json_t *ids = json_object_get(row, "gpu_ids"), *v;
	size_t i;
	int bad = 0;

	r.id = json_integer_value(json_object_get(row, "id"));
	r.uid = (uid_t)json_integer_value(json_object_get(row, "uid"));
	r.ngpus = (int)json_integer_value(json_object_get(row, "gpus"));
	r.by_count = json_is_true(json_object_get(row, "by_count"));
	r.start = json_number_value(json_object_get(row, "start"));
	r.end = json_number_value(json_object_get(row, "end"));
	r.created = json_number_value(json_object_get(row, "created"));
	r.cancelled = json_is_true(json_object_get(row, "cancelled"));
	json_array_foreach(ids, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 63)
			bad = 1;
		else
			r.gpu_mask |= 1ULL << json_integer_value(v);
	}
	if (bad || r.id <= 0 || !json_is_string(json_object_get(row, "user")) || r.end <= r.start) {
		fprintf(stderr, "gflowd: reservation row '%s' is not a reservation: not used\n", key);
		return;
	}
	if (!(r.user = strdup(json_string_value(json_object_get(row, "user")))))
		abort();
	s->resvs = realloc(s->resvs, (s->nresvs + 1) * sizeof *s->resvs);
	if (!s->resvs)
		abort();
	s->resvs[s->nresvs++] = r;
}

int reserve_load(struct server *s, struct gf_err *e)
{
	return store_each_row(s->store, STORE_RESERVATIONS, load_row, s, e);
}

void reserve_close(struct server *s)
{
	for (size_t i = 0; i < s->nresvs; i++)
		free(s->resvs[i].user);
	free(s->resvs);
	s->resvs = NULL;
	s->nresvs = 0;
}

static bool live(const struct reservation *r, double now)
{
	return !r->cancelled && r->end > now;
}

struct sched_resv *reserve_sched(struct server *s, double now, size_t *n)
{
	struct sched_resv *v = calloc(s->nresvs + 1, sizeof *v);

	if (!v)
		abort();
	*n = 0;
	for (size_t i = 0; i < s->nresvs; i++)
		if (live(&s->resvs[i], now))
			v[(*n)++] = (struct sched_resv){ s->resvs[i].id, (uint32_t)s->resvs[i].uid, s->resvs[i].gpu_mask,
							 s->resvs[i].start, s->resvs[i].end };
	return v;
}

double reserve_next_edge(struct server *s, double now)
{
	double next = INFINITY;

	for (size_t i = 0; i < s->nresvs; i++) {
		const struct reservation *r = &s->resvs[i];

		if (!live(r, now))
			continue;
		if (r->start > now && r->start < next)
			next = r->start;
		if (r->end > now && r->end < next)
			next = r->end;
	}
	return next;
}

const struct reservation *reserve_get(struct server *s, int64_t id)
{
	for (size_t i = 0; i < s->nresvs; i++)
		if (s->resvs[i].id == id)
			return &s->resvs[i];
	return NULL;
}

static void when(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm);
}

/* "3 for bob on GPU 1, 2026-12-03 14:00:00 UTC to 2026-12-03 16:00:00 UTC" */
static void describe(const struct reservation *r, char *buf, size_t size)
{
	char gpus[64], from[40], to[40];

	gf_format_gpu_mask(r->gpu_mask, gpus, sizeof gpus);
	when(r->start, from, sizeof from);
	when(r->end, to, sizeof to);
	snprintf(buf, size, "%lld for %.40s on GPU%s %.30s, %.30s to %.30s", (long long)r->id, r->user,
		 __builtin_popcountll(r->gpu_mask) == 1 ? "" : "s", gpus, from, to);
}

void reserve_describe(struct server *s, int64_t id, char *buf, size_t size)
{
	const struct reservation *r = reserve_get(s, id);
	char d[256];

	if (!r) {
		snprintf(buf, size, "Reservation: %lld", (long long)id);
		return;
	}
	describe(r, d, sizeof d);
	snprintf(buf, size, "Reservation: %.200s", d);
}

static int save(struct server *s, const struct reservation *r, struct gf_err *e)
{
	char key[32];
	json_t *row = reserve_json(r, 0);
	int rc;

	json_object_del(row, "status");
	json_object_set_new(row, "cancelled", json_boolean(r->cancelled));
	snprintf(key, sizeof key, "%020lld", (long long)r->id);
	rc = jobs_txn_begin(s, e) || store_row_put(s->store, STORE_RESERVATIONS, key, row, e) ||
	     jobs_txn_commit(s, e);
	json_decref(row);
	if (rc)
		jobs_txn_rollback(s);
	return rc ? -1 : 0;
}

/* Refuse what overlaps; pick GPUs for a --gpus N reservation. */
static int place(struct server *s, struct reservation *r, size_t ngpus, struct gf_err *e)
{
	uint64_t taken = 0;
	const struct reservation *clash = NULL;
	char d[256];

	for (size_t i = 0; i < s->nresvs; i++) {
		const struct reservation *o = &s->resvs[i];

		if (o->cancelled || o->end <= r->start || o->start >= r->end)
			continue;
		taken |= o->gpu_mask;
		if (!clash && (r->by_count || (o->gpu_mask & r->gpu_mask)))
			clash = o;	/* the first one in the way */
	}
	if (r->by_count) {
		for (size_t g = 0; g < ngpus && __builtin_popcountll(r->gpu_mask) < r->ngpus; g++)
			if (!(taken & (1ULL << g)))
				r->gpu_mask |= 1ULL << g;
		if (__builtin_popcountll(r->gpu_mask) < r->ngpus && clash) {
			describe(clash, d, sizeof d);
			return gf_err_set(e, "--gpus %d: only %d of the %zu GPUs are free of reservations in that window "
					     "(reservation %s holds some)", r->ngpus, __builtin_popcountll(r->gpu_mask), ngpus, d);
		}
		return 0;
	}
	if (clash) {
		char both[200];

		gf_format_gpu_mask(taken & r->gpu_mask & clash->gpu_mask, both, sizeof both);
		describe(clash, d, sizeof d);
		return gf_err_set(e, "overlaps reservation %s (GPU %s in both)", d, both);
	}
	return 0;
}

/* Tell who listens (notifications) that r was made or cancelled; after
 * its change is stored. */
static void announce(struct server *s, const char *event, const struct reservation *r, double now)
{
	json_t *o = reserve_json(r, now);

	hooks_fire(s, GF_EV_RESERVATION, &(struct gf_ev_reservation){ event, r->user, o });
	json_decref(o);
}

int reserve_create(struct server *s, struct reservation *r, struct gf_err *e)
{
	int64_t slot = slot_secs(), next = 1;
	size_t ngpus = gpustate_count(s);
	double now = now_real();
	struct passwd *pw;

	if (!r->user || !(pw = getpwnam(r->user)))
		return gf_err_set(e, "user '%s' does not exist on this machine", r->user ? r->user : "");
	r->uid = pw->pw_uid;
	if (fmod(r->start, (double)slot) != 0 || fmod(r->end - r->start, (double)slot) != 0)
		return gf_err_set(e, "a reservation starts on the %s and lasts a multiple of %lld minutes%s",
				  slot == SLOT_DEFAULT ? "hour or half hour" : "slot", (long long)(slot / 60),
				  slot == SLOT_DEFAULT ? "" : " (GFLOW_RESERVATION_SLOT_SECS)");
	if (r->end <= r->start)
		return gf_err_set(e, "the duration must be positive");
	if (r->end <= now)
		return gf_err_set(e, "the window is over already (it ended before now)");
	if (r->by_count ? (r->ngpus < 1 || (size_t)r->ngpus > ngpus) : (r->gpu_mask >> ngpus) != 0) {
		if (r->by_count)
			return gf_err_set(e, "--gpus %d: this machine has %zu GPU%s", r->ngpus, ngpus, ngpus == 1 ? "" : "s");
		return gf_err_set(e, "--gpu-spec names a GPU this machine does not have (it has %zu)", ngpus);
	}
	if (!r->by_count)
		r->ngpus = __builtin_popcountll(r->gpu_mask);
	if (place(s, r, ngpus, e))
		return -2;	/* a clash, not bad input */
	for (size_t i = 0; i < s->nresvs; i++)
		if (s->resvs[i].id >= next)
			next = s->resvs[i].id + 1;
	r->id = next;
	r->created = now;
	r->cancelled = false;
	if (save(s, r, e))
		return -1;
	s->resvs = realloc(s->resvs, (s->nresvs + 1) * sizeof *s->resvs);
	if (!s->resvs)
		abort();
	s->resvs[s->nresvs] = *r;
	if (!(s->resvs[s->nresvs].user = strdup(r->user)))
		abort();
	s->nresvs++;
	announce(s, "reservation_created", &s->resvs[s->nresvs - 1], now);
	server_schedule(s);
	return 0;
}

int reserve_cancel(struct server *s, int64_t id, struct gf_err *e)
{
	struct reservation *r = (struct reservation *)reserve_get(s, id), copy;

	if (!r)
		return gf_err_set(e, "reservation %lld does not exist", (long long)id);
	if (r->cancelled)
		return gf_err_set(e, "reservation %lld is cancelled already", (long long)id);
	if (r->end <= now_real())
		return gf_err_set(e, "reservation %lld is over already", (long long)id);
	copy = *r;
	copy.cancelled = true;
	if (save(s, &copy, e))
		return -1;
	r->cancelled = true;
	announce(s, "reservation_cancelled", r, now_real());
	server_schedule(s);
	return 0;
}
