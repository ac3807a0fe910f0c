/* api_share.c — the fair-use routes (docs/api.md): quotas (/quotas),
 * reservations (/reservations) and decayed usage (/usage). Anyone may read;
 * changes are for admins. Decoding and checks here, state in quota.c,
 * reserve.c and usage.c. */
#include "api.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const limit_names[] = { "max_running_jobs", "max_running_gpus", "max_queued_jobs",
					   "max_gpu_hours_per_day", "max_preemptible_gpus", NULL };

static bool is_route(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(path, prefix, n) && (!path[n] || path[n] == '/');
}

bool api_share_path(const char *path)
{
	return is_route(path, "/quotas") || is_route(path, "/reservations") || !strcmp(path, "/usage");
}

/* Only these keys in o; else e names the first other one. */
static int only_keys(json_t *o, const char *const *keys, const char *what, struct gf_err *e)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return gf_err_set(e, "%s must be an object", what);
	json_object_foreach(o, k, v) {
		const char *const *p = keys;

		while (*p && strcmp(*p, k))
			p++;
		if (!*p)
			return gf_err_set(e, "unknown field '%.100s' in %s", k, what);
	}
	return 0;
}

/* A printable name of at most 255 bytes (api_check_text), no ':' (it is part of a key). */
static const char *name_of(json_t *o, const char *k, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);
	const char *n = json_string_value(v);

	if (!json_is_string(v) || !*n || strlen(n) > 255) {
		gf_err_set(e, "'%s' must be a name (1 to 255 characters)", k);
		return NULL;
	}
	if (api_check_text(k, v, 255, e))	/* control characters, as every route */
		return NULL;
	if (strchr(n, ':')) {
		gf_err_set(e, "'%s' must not hold ':'", k);
		return NULL;
	}
	return n;
}

/* ---- quotas ------------------------------------------------------------ */

/* {"subject": "user"|"project"|"default_user"|"default_project", "name"}
 * -> the override's key. */
static int subject_key(json_t *body, char *key, size_t size, struct gf_err *e)
{
	const char *sub = json_string_value(json_object_get(body, "subject")), *name;
	bool named;

	if (!sub)
		return gf_err_set(e, "'subject' is required: user, project, default_user or default_project");
	named = !strcmp(sub, "user") || !strcmp(sub, "project");
	if (!named && strcmp(sub, "default_user") && strcmp(sub, "default_project"))
		return gf_err_set(e, "'subject' must be user, project, default_user or default_project, not '%.50s'", sub);
	if (!named) {
		if (json_object_get(body, "name"))
			return gf_err_set(e, "'name' goes only with subject user or project");
		snprintf(key, size, "%s", sub);
		return 0;
	}
	if (!(name = name_of(body, "name", e)))
		return -1;
	snprintf(key, size, "%s:%s", sub, name);
	return 0;
}

void api_share_quota_set(struct server *s, struct evhttp_request *req, json_t *body, bool remove)
{
	static const char *const set_keys[] = { "subject", "name", "limits", NULL };
	static const char *const rm_keys[] = { "subject", "name", NULL };
	json_t *limits = json_object_get(body, "limits");
	struct gf_quota q;
	struct gf_err e;
	char key[300];
	bool had;
	int n = 0;

	if (only_keys(body, remove ? rm_keys : set_keys, "the request", &e) || subject_key(body, key, sizeof key, &e) ||
	    (!remove && only_keys(limits, limit_names, "'limits'", &e))) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (remove) {
		if (quota_remove(s, key, &had, &e)) {
			api_reply_store_err(s, req, &e);
			return;
		}
		if (!had) {
			api_reply_err(req, 404, "no quota override for %s", key);
			return;
		}
		api_reply(req, 200, json_pack("{s:s}", "removed", key));
		return;
	}
	for (int i = 0; limit_names[i]; i++) {
		json_t *v = json_object_get(limits, limit_names[i]);
		int64_t *f = i == 0 ? &q.max_running_jobs : i == 1 ? &q.max_running_gpus : i == 2 ? &q.max_queued_jobs
			     : i == 3 ? &q.max_gpu_hours_per_day : &q.max_preemptible_gpus;

		*f = QUOTA_UNSET;
		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) > 1000000000) {
			api_reply_err(req, 400, "'%s' must be an integer from 0 to 1000000000, or -1 (unlimited)",
				      limit_names[i]);
			return;
		}
		*f = json_integer_value(v);
		n++;
	}
	if (!n) {
		api_reply_err(req, 400, "give at least one limit (%s, %s, %s, %s)", limit_names[0], limit_names[1],
			      limit_names[2], limit_names[3]);
		return;
	}
	if (quota_set(s, key, &q, &e)) {
		api_reply_store_err(s, req, &e);
		return;
	}
	api_reply(req, 200, json_pack("{s:s,s:o}", "set", key, "subjects", quota_list_json(s)));
}

/* ---- reservations ------------------------------------------------------ */

void api_share_resv_create(struct server *s, struct evhttp_request *req, json_t *body)
{
	static const char *const keys[] = { "user", "gpus", "gpu_ids", "start", "duration_secs", NULL };
	struct reservation r = { 0 };
	json_t *ids = json_object_get(body, "gpu_ids"), *v, *start = json_object_get(body, "start"),
	       *dur = json_object_get(body, "duration_secs"), *gpus = json_object_get(body, "gpus");
	struct gf_err e;
	size_t i;

	if (only_keys(body, keys, "the request", &e) || !(r.user = (char *)name_of(body, "user", &e)))
		goto bad;
	if (!ids == !gpus) {
		gf_err_set(&e, "give either 'gpus' (a count) or 'gpu_ids' (a list)");
		goto bad;
	}
	if (gpus && (!json_is_integer(gpus) || json_integer_value(gpus) < 1 || json_integer_value(gpus) > 64)) {
		gf_err_set(&e, "'gpus' must be an integer from 1 to 64");
		goto bad;
	}
	if (ids && (!json_is_array(ids) || !json_array_size(ids))) {
		gf_err_set(&e, "'gpu_ids' must be a non-empty list of GPU indices");
		goto bad;
	}
	json_array_foreach(ids, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 63) {
			gf_err_set(&e, "'gpu_ids' item %zu must be a GPU index from 0 to 63", i + 1);
			goto bad;
		}
		r.gpu_mask |= 1ULL << json_integer_value(v);
	}
	if (!json_is_number(start) || !isfinite(json_number_value(start)) || json_number_value(start) < 0) {
		gf_err_set(&e, "'start' must be epoch seconds");
		goto bad;
	}
	if (!json_is_integer(dur) || json_integer_value(dur) < 1 || json_integer_value(dur) > 366 * 86400) {
		gf_err_set(&e, "'duration_secs' must be an integer from 1 to %d", 366 * 86400);
		goto bad;
	}
	r.by_count = gpus != NULL;
	r.ngpus = gpus ? (int)json_integer_value(gpus) : 0;
	r.start = json_number_value(start);
	r.end = r.start + (double)json_integer_value(dur);
	int rc = reserve_create(s, &r, &e);

	if (rc == -2)
		api_reply_err(req, 409, "%s", e.msg);
	else if (rc && (store_full(s->store) || !strncmp(e.msg, "store", 5) || !strncmp(e.msg, "disk full", 9)))
		api_reply_store_err(s, req, &e);
	else if (rc)
		api_reply_err(req, 400, "%s", e.msg);
	if (rc)
		return;
	api_reply(req, 201, json_pack("{s:o}", "reservation", reserve_json(reserve_get(s, r.id), now_real())));
	return;
bad:
	api_reply_err(req, 400, "%s", e.msg);
}

void api_share_resv_cancel(struct server *s, struct evhttp_request *req, json_t *body)
{
	static const char *const keys[] = { "id", NULL };
	json_t *id = json_object_get(body, "id");
	struct gf_err e;

	if (only_keys(body, keys, "the request", &e) ||
	    (!json_is_integer(id) && gf_err_set(&e, "'id' (a reservation id) is required"))) {
		api_reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (reserve_cancel(s, json_integer_value(id), &e)) {
		api_reply_err(req, reserve_get(s, json_integer_value(id)) ? 409 : 404, "%s", e.msg);
		return;
	}
	api_reply(req, 200, json_pack("{s:o}", "reservation",
				      reserve_json(reserve_get(s, json_integer_value(id)), now_real())));
}

static void resv_list(struct server *s, struct evhttp_request *req)
{
	static const char *const known[] = { "active", "user", "status", NULL };
	struct evkeyvalq q;
	struct evkeyval *kv;
	const char *user, *status, *active;
	json_t *out = json_array();
	double now = now_real();

	evhttp_parse_query_str(evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	TAILQ_FOREACH(kv, &q, next) {
		const char *const *p = known;

		while (*p && strcmp(*p, kv->key))
			p++;
		if (!*p) {
			api_reply_err(req, 400, "unknown query parameter '%.100s' (known: active, user, status)", kv->key);
			evhttp_clear_headers(&q);
			json_decref(out);
			return;
		}
	}
	user = evhttp_find_header(&q, "user");
	status = evhttp_find_header(&q, "status");
	active = evhttp_find_header(&q, "active");
	if (status && strcmp(status, "pending") && strcmp(status, "active") && strcmp(status, "completed") &&
	    strcmp(status, "cancelled")) {
		api_reply_err(req, 400, "status must be pending, active, completed or cancelled, not '%.50s'", status);
		evhttp_clear_headers(&q);
		json_decref(out);
		return;
	}
	for (size_t i = 0; i < s->nresvs; i++) {
		const struct reservation *r = &s->resvs[i];
		const char *st = reserve_status(r, now);

		if ((user && strcmp(user, r->user)) || (status && strcmp(status, st)) ||
		    (active && strcmp(active, "0") && strcmp(st, "active")))
			continue;
		json_array_append_new(out, reserve_json(r, now));
	}
	evhttp_clear_headers(&q);
	api_reply(req, 200, json_pack("{s:o,s:I,s:f}", "reservations", out, "gpus", (json_int_t)gpustate_count(s),
				      "now", now));
}

/* ---- dispatch ---------------------------------------------------------- */

void api_share_get(struct server *s, struct evhttp_request *req, const char *path)
{
	if (!strcmp(path, "/quotas"))
		api_reply(req, 200, json_pack("{s:o,s:{s:b,s:I}}", "subjects", quota_list_json(s), "fair_share", "enabled",
					      s->cfg.fair_share_enabled, "half_life_secs",
					      (json_int_t)s->cfg.fair_share_half_life_secs));
	else if (!strcmp(path, "/usage"))
		api_reply(req, 200, json_pack("{s:b,s:I,s:o}", "enabled", s->cfg.fair_share_enabled, "half_life_secs",
					      (json_int_t)s->cfg.fair_share_half_life_secs, "users",
					      usage_json(s, now_real())));
	else if (!strcmp(path, "/reservations"))
		resv_list(s, req);
	else if (!strncmp(path, "/reservations/", 14)) {
		char *end;
		long long id = strtoll(path + 14, &end, 10);
		const struct reservation *r = *end || end == path + 14 ? NULL : reserve_get(s, id);

		if (!r)
			api_reply_err(req, 404, "reservation %s does not exist", path + 14);
		else
			api_reply(req, 200, json_pack("{s:o}", "reservation", reserve_json(r, now_real())));
	} else
		api_reply_err(req, 404, "no such endpoint: GET %s", path);
}
