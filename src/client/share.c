/* share.c — gctl quota (list, set, remove) and gctl reserve (create, list,
 * get, cancel, and the --timeline picture): the client side of fair use.
 * Times are read and shown in --timezone, else the config's `timezone`,
 * else the system's. */
#include "share.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "config.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "table.h"
#include "util.h"

#define PROG "gctl"
#define SLOT 1800	/* one timeline column: half an hour */

/* ---- time zone and times ----------------------------------------------- */

/* Use tz (NULL: the config's, else the system's) for local times. */
static int use_timezone(const char *tz, struct gf_err *e)
{
	const struct gf_config *cfg;

	if (!tz) {
		if (!(cfg = cmd_default_config(e)))
			return -1;
		return cfg->timezone ? use_timezone(cfg->timezone, e) : 0;
	}
	if (gf_timezone_check(tz, e) < 0)
		return -1;
	if (!strcmp(tz, "local"))
		return 0;
	setenv("TZ", tz, 1);
	tzset();
	return 0;
}

/* "2026-01-28 14:00" / "2026-01-28T14:00[:SS]" (local), with "Z" (UTC) or
 * "+HH:MM" / "-HH:MM" at the end. */
static int parse_start(const char *s, time_t *out, struct gf_err *e)
{
	struct tm tm = { 0 };
	const char *p;
	int off_sign = 0, oh = 0, om = 0;
	char rest[16] = "";

	tm.tm_isdst = -1;
	if (sscanf(s, "%4d-%2d-%2d%*1[ T]%2d:%2d%15s", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   rest) < 5)
		return gf_err_set(e, "--start '%s': expected YYYY-MM-DD HH:MM or ISO 8601 (2026-01-28T14:00:00Z)", s);
	p = rest;
	if (p[0] == ':') {
		if (sscanf(p, ":%2d", &tm.tm_sec) != 1)
			return gf_err_set(e, "--start '%s': bad seconds", s);
		p += 3;
	}
	if (*p == 'Z' && !p[1])
		off_sign = 2;
	else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &oh, &om) == 2 && strlen(p) == 6)
		off_sign = *p == '+' ? 1 : -1;
	else if (*p)
		return gf_err_set(e, "--start '%s': unexpected '%s' at the end (Z or +HH:MM may follow)", s, p);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 59)
		return gf_err_set(e, "--start '%s': not a valid date and time", s);
	if (off_sign) {
		*out = timegm(&tm);
		if (off_sign != 2)
			*out -= off_sign * (oh * 3600 + om * 60);
	} else
		*out = mktime(&tm);
	return 0;
}

/* "2h", "30m", "1h30m", "1d", "90" (minutes), or HH:MM:SS. */
static int parse_duration(const char *s, int64_t *secs, struct gf_err *e)
{
	return gf_parse_duration(s, "--duration", secs, e);
}

static void local_hm(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M %Z", &tm);
}

/* ---- quota ------------------------------------------------------------- */

static void limit_cell(const json_t *lim, const char *k, char *buf, size_t size)
{
	if (jhas(lim, k))
		snprintf(buf, size, "%lld", (long long)jint(lim, k, 0));
	else
		snprintf(buf, size, "-");
}

static int quota_list(int argc, char **argv)
{
	static const char *const headers[] = { "SUBJECT", "NAME", "MAX_RUN_JOBS", "MAX_RUN_GPUS", "MAX_QUEUED",
		"MAX_GPU_H_DAY", "RUNNING", "GPUS", "QUEUED", "GPU_H_24H", "SHARE_GPU_H", "OVERRIDE" };
	enum table_fmt fmt = TABLE_TEXT;
	struct gf_err e;
	json_t *answer, *subs, *x;
	struct table *t;
	size_t i;
	char *text;

	if (argc == 3 && (!strcmp(argv[1], "-o") || !strcmp(argv[1], "--output"))) {
		if (table_parse_format(argv[2], &fmt, &e) < 0)
			return cmd_usage_error(PROG, &e);
	} else if (argc != 1)
		return cmd_usagef(PROG, "usage: gctl quota list [-o table|csv|json]");
	if (!(answer = api_get("/quotas", &e)))
		return cmd_fail(PROG, &e);
	subs = json_object_get(answer, "subjects");
	t = table_new(sizeof headers / sizeof headers[0], headers);
	json_array_foreach(subs, i, x) {
		const json_t *lim = json_object_get(x, "limits");
		char c[11][40];
		const char *row[12];
		bool named = jhas(x, "name");

		snprintf(c[0], sizeof c[0], "%s%s", named ? "" : "default_", jstr(x, "kind") ? jstr(x, "kind") : "?");
		limit_cell(lim, "max_running_jobs", c[2], sizeof c[2]);
		limit_cell(lim, "max_running_gpus", c[3], sizeof c[3]);
		limit_cell(lim, "max_queued_jobs", c[4], sizeof c[4]);
		limit_cell(lim, "max_gpu_hours_per_day", c[5], sizeof c[5]);
		/* what a user or project holds (the defaults hold nothing) */
		snprintf(c[6], sizeof c[6], "%lld", (long long)jint(x, "running_jobs", 0));
		snprintf(c[7], sizeof c[7], "%lld", (long long)jint(x, "running_gpus", 0));
		snprintf(c[8], sizeof c[8], "%lld", (long long)jint(x, "queued_jobs", 0));
		snprintf(c[9], sizeof c[9], "%.2f", jnum(x, "gpu_hours_24h", 0));
		if (!named)
			c[6][0] = c[7][0] = c[8][0] = c[9][0] = '\0';
		if (jhas(x, "usage_gpu_secs"))
			snprintf(c[10], sizeof c[10], "%.2f", jnum(x, "usage_gpu_secs", 0) / 3600);
		else
			snprintf(c[10], sizeof c[10], "-");
		row[0] = c[0];
		row[1] = named ? jstr(x, "name") : "*";
		for (int k = 2; k < 11; k++)
			row[k] = c[k];
		row[11] = jhas(x, "override") ? "yes" : "no";
		table_add_row(t, row);
	}
	text = table_render(t, fmt);
	fputs(text, stdout);
	if (fmt == TABLE_TEXT)
		printf("Fair share: %s (half-life %llds); '-' = unlimited\n",
		       jbool(json_object_get(answer, "fair_share"), "enabled", 0) ? "on" : "off",
		       (long long)jint(json_object_get(answer, "fair_share"), "half_life_secs", 0));
	free(text);
	table_free(t);
	json_decref(answer);
	return EXIT_OK;
}

enum { Q_USER, Q_PROJECT, Q_DUSER, Q_DPROJECT, Q_JOBS, Q_GPUS, Q_QUEUED, Q_HOURS, Q_PREEMPT };

static const struct opt_def quota_opts[] = {
	{ Q_USER, "user", 'u', 1 }, { Q_PROJECT, "project", 'p', 1 }, { Q_DUSER, "default-user", 0, 0 },
	{ Q_DPROJECT, "default-project", 0, 0 }, { Q_JOBS, "max-running-jobs", 0, 1 },
	{ Q_GPUS, "max-running-gpus", 0, 1 }, { Q_QUEUED, "max-queued-jobs", 0, 1 },
	{ Q_HOURS, "max-gpu-hours-per-day", 0, 1 }, { Q_PREEMPT, "max-preemptible-gpus", 0, 1 },
};

static const char *const quota_limit_keys[] = { "max_running_jobs", "max_running_gpus", "max_queued_jobs",
	"max_gpu_hours_per_day", "max_preemptible_gpus" };

static int quota_change(int argc, char **argv, bool remove)
{
	const char *usage = remove ? "usage: gctl quota remove --user U | --project P | --default-user | --default-project"
				   : "usage: gctl quota set --user U | --project P | --default-user | --default-project "
				     "[--max-running-jobs N] [--max-running-gpus N] [--max-queued-jobs N] "
				     "[--max-gpu-hours-per-day N] [--max-preemptible-gpus N] (N or unlimited)";
	json_t *body = json_object(), *limits = json_object(), *answer;
	const char *val, *subject = NULL, *name = NULL;
	struct opt_parser p;
	struct gf_err e;
	int id, nsub = 0;

	opt_init(&p, argc, argv, 1, quota_opts, sizeof quota_opts / sizeof quota_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		int64_t n;

		if (id == OPT_ERROR || id == OPT_POSITIONAL) {
			json_decref(body);
			json_decref(limits);
			return id == OPT_ERROR ? cmd_usage_error(PROG, &e) : cmd_usagef(PROG, "unexpected argument '%s'; %s",
											  val, usage);
		}
		if (id <= Q_DPROJECT) {
			static const char *const subs[] = { "user", "project", "default_user", "default_project" };

			subject = subs[id];
			name = id <= Q_PROJECT ? val : NULL;
			nsub++;
			continue;
		}
		if (remove) {
			json_decref(body);
			json_decref(limits);
			return cmd_usagef(PROG, "quota remove takes no limits (it removes the whole override); %s", usage);
		}
		if (!strcmp(val, "unlimited") || !strcmp(val, "-1"))
			n = -1;
		else if (gf_parse_int_range(val, 0, 1000000000, p.spelled, &n, &e) < 0) {
			json_decref(body);
			json_decref(limits);
			return cmd_usage_error(PROG, &e);
		}
		json_object_set_new(limits, quota_limit_keys[id - Q_JOBS], json_integer(n));
	}
	if (nsub != 1 || (!remove && !json_object_size(limits))) {
		json_decref(body);
		json_decref(limits);
		return cmd_usagef(PROG, "%s%s", nsub != 1 ? "choose exactly one subject; " : "give at least one limit; ",
				  usage);
	}
	json_object_set_new(body, "subject", json_string(subject));
	if (name)
		json_object_set_new(body, "name", json_string(name));
	if (remove)
		json_decref(limits);
	else
		json_object_set_new(body, "limits", limits);
	answer = api_post(remove ? "/quotas/remove" : "/quotas/set", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	if (remove)
		printf("Removed the quota override of %s (the config applies again)\n", jstr(answer, "removed"));
	else
		printf("Quota override of %s set\n", jstr(answer, "set"));
	json_decref(answer);
	return EXIT_OK;
}

int share_quota(int argc, char **argv)
{
	if (argc < 2)
		return cmd_usagef(PROG, "usage: gctl quota list|set|remove ...");
	if (!strcmp(argv[1], "list"))
		return quota_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "set"))
		return quota_change(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "remove"))
		return quota_change(argc - 1, argv + 1, true);
	return cmd_usagef(PROG, "unknown quota command '%s' (list, set, remove)", argv[1]);
}

/* ---- reserve ----------------------------------------------------------- */

enum { R_USER, R_GPUS, R_SPEC, R_START, R_DURATION, R_TZ, R_ACTIVE, R_STATUS, R_TIMELINE, R_RANGE, R_OUTPUT };

static const struct opt_def resv_opts[] = {
	{ R_USER, "user", 'u', 1 }, { R_GPUS, "gpus", 0, 1 }, { R_SPEC, "gpu-spec", 0, 1 },
	{ R_START, "start", 0, 1 }, { R_DURATION, "duration", 0, 1 }, { R_TZ, "timezone", 0, 1 },
	{ R_ACTIVE, "active", 0, 0 }, { R_STATUS, "status", 0, 1 }, { R_TIMELINE, "timeline", 0, 0 },
	{ R_RANGE, "range", 0, 1 }, { R_OUTPUT, "output", 'o', 1 },
};

struct resv_args {
	const char *user, *gpus, *spec, *start, *duration, *tz, *status, *range, *output, *id;
	bool active, timeline;
	int nopts;
};

static int resv_parse(int argc, char **argv, struct resv_args *a, struct gf_err *e)
{
	struct opt_parser p;
	const char *val;
	int id;

	memset(a, 0, sizeof *a);
	opt_init(&p, argc, argv, 1, resv_opts, sizeof resv_opts / sizeof resv_opts[0], 1);
	while ((id = opt_next(&p, &val, e)) != OPT_END) {
		const char **slot[] = { [R_USER] = &a->user, [R_GPUS] = &a->gpus, [R_SPEC] = &a->spec,
					[R_START] = &a->start, [R_DURATION] = &a->duration, [R_TZ] = &a->tz,
					[R_STATUS] = &a->status, [R_RANGE] = &a->range, [R_OUTPUT] = &a->output };

		if (id == OPT_ERROR)
			return -1;
		if (id == OPT_POSITIONAL) {
			if (a->id)
				return gf_err_set(e, "unexpected argument '%s'", val);
			a->id = val;
			continue;
		}
		a->nopts++;
		if (id == R_ACTIVE)
			a->active = true;
		else if (id == R_TIMELINE)
			a->timeline = true;
		else
			*slot[id] = val;
	}
	return 0;
}

static void print_resv(const json_t *r)
{
	char from[64], to[64];
	char *gpus = fmt_int_list(json_object_get(r, "gpu_ids"));

	local_hm(jnum(r, "start", 0), from, sizeof from);
	local_hm(jnum(r, "end", 0), to, sizeof to);
	printf("ReservationId=%lld\nUser=%s\nGPUs=%s%s\nStart=%s\nEnd=%s\nStatus=%s\n", (long long)jint(r, "id", 0),
	       jstr(r, "user"), gpus, jbool(r, "by_count", 0) ? " (picked for --gpus)" : "", from, to, jstr(r, "status"));
	free(gpus);
}

static int resv_create(struct resv_args *a)
{
	json_t *body, *answer;
	struct gf_err e;
	int64_t n, dur = 0;
	time_t start = 0;
	uint64_t mask;
	int all;

	if (!a->user || !a->start || !a->duration || !a->gpus == !a->spec)
		return cmd_usagef(PROG, "usage: gctl reserve create --user U (--gpus N | --gpu-spec 0,2) --start TIME "
				  "--duration D [--timezone TZ]");
	if (a->id || a->active || a->timeline || a->status || a->range || a->output)
		return cmd_usagef(PROG, "reserve create takes only --user, --gpus/--gpu-spec, --start, --duration, "
				  "--timezone");
	body = json_object();
	if (a->gpus) {
		if (gf_parse_int_range(a->gpus, 1, 64, "--gpus", &n, &e) < 0)
			goto bad;
		json_object_set_new(body, "gpus", json_integer(n));
	} else {
		json_t *ids = json_array();

		if (gf_parse_gpu_spec(a->spec, &mask, &all, &e) < 0 ||
		    (all && gf_err_set(&e, "--gpu-spec: name the GPUs (e.g. 0,2 or 0-3), not all"))) {
			json_decref(ids);
			goto bad;
		}
		for (int i = 0; i < 64; i++)
			if (mask & (1ULL << i))
				json_array_append_new(ids, json_integer(i));
		json_object_set_new(body, "gpu_ids", ids);
	}
	if (parse_start(a->start, &start, &e) < 0 || parse_duration(a->duration, &dur, &e) < 0)
		goto bad;
	json_object_set_new(body, "user", json_string(a->user));
	json_object_set_new(body, "start", json_integer(start));
	json_object_set_new(body, "duration_secs", json_integer(dur));
	answer = api_post("/reservations", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	printf("Created reservation %lld\n", (long long)jint(json_object_get(answer, "reservation"), "id", 0));
	print_resv(json_object_get(answer, "reservation"));
	json_decref(answer);
	return EXIT_OK;
bad:
	json_decref(body);
	return cmd_usage_error(PROG, &e);
}

/* One row per GPU, one column per half hour from the slot holding now;
 * each reservation drawn with its own letter (legend below). */
static void timeline(const json_t *list, int ngpus, double now, int64_t range)
{
	int cols = (int)(range / SLOT), maxg = ngpus;
	double t0 = floor(now / SLOT) * SLOT;
	const json_t *r;
	size_t i;
	char when[64];

	json_array_foreach(list, i, r) {
		const json_t *ids = json_object_get(r, "gpu_ids"), *g;
		size_t k;

		json_array_foreach(ids, k, g)
			if (json_integer_value(g) + 1 > maxg)
				maxg = (int)json_integer_value(g) + 1;
	}
	local_hm(t0, when, sizeof when);
	printf("Timeline from %s: one column = 30 min, hours on top, '|' = a free hour "
	       "start, '.' = free\n", when);
	/* The hour's two digits over its two half-hour columns. */
	printf("       ");
	for (int c = 0; c < cols; c++) {
		time_t tt = (time_t)(t0 + c * SLOT);
		struct tm tm;

		localtime_r(&tt, &tm);
		if (tm.tm_min == 0 && c + 1 < cols) {
			printf("%02d", tm.tm_hour);
			c++;
		} else
			putchar(' ');
	}
	putchar('\n');
	for (int gpu = 0; gpu < maxg; gpu++) {
		printf("GPU %-2d ", gpu);
		for (int c = 0; c < cols; c++) {
			double a = t0 + c * SLOT, b = a + SLOT;
			char ch = '.';

			json_array_foreach(list, i, r) {
				const json_t *ids = json_object_get(r, "gpu_ids"), *g;
				size_t k;

				if (jnum(r, "start", 0) >= b || jnum(r, "end", 0) <= a)
					continue;
				json_array_foreach(ids, k, g)
					if (json_integer_value(g) == gpu)
						ch = (char)('A' + i % 26);
			}
			if (ch == '.') {
				time_t tt = (time_t)a;
				struct tm tm;

				localtime_r(&tt, &tm);
				if (tm.tm_min == 0)
					ch = '|';
			}
			putchar(ch);
		}
		putchar('\n');
	}
	json_array_foreach(list, i, r) {
		char from[64], to[64];

		local_hm(jnum(r, "start", 0), from, sizeof from);
		local_hm(jnum(r, "end", 0), to, sizeof to);
		printf("%c = reservation %lld: %s, %s to %s (%s)\n", 'A' + (int)(i % 26), (long long)jint(r, "id", 0),
		       jstr(r, "user"), from, to, jstr(r, "status"));
	}
	if (!json_array_size(list))
		printf("No reservations in this range\n");
}

static int resv_list(struct resv_args *a)
{
	static const char *const headers[] = { "ID", "USER", "GPUS", "START", "END", "STATUS" };
	struct sbuf q = { 0 };
	enum table_fmt fmt = TABLE_TEXT;
	int64_t range = 48 * 3600;
	json_t *answer, *list, *r, *shown;
	struct gf_err e;
	struct table *t;
	size_t i;
	char *text;

	if (a->id || a->gpus || a->spec || a->start || a->duration)
		return cmd_usagef(PROG, "usage: gctl reserve list [--active] [--user U] [--status S] "
				  "[--timeline [--range 48h]] [-o table|csv|json]");
	if ((a->range && !a->timeline) || (a->timeline && a->output))
		return cmd_usagef(PROG, a->range ? "--range goes with --timeline" : "--timeline draws a picture: "
				  "no --output with it");
	if (a->range && parse_duration(a->range, &range, &e) < 0)
		return cmd_usage_error(PROG, &e);
	if (a->range && (range < SLOT || range > 31 * 86400))
		return cmd_usagef(PROG, "--range must be from 30m to 31d");
	if (a->output && table_parse_format(a->output, &fmt, &e) < 0)
		return cmd_usage_error(PROG, &e);
	sbuf_adds(&q, "/reservations");
	if (a->active)
		url_add_param(&q, "active", "1");
	if (a->user)
		url_add_param(&q, "user", a->user);
	if (a->status)
		url_add_param(&q, "status", a->status);
	answer = api_get(q.p, &e);
	sbuf_free(&q);
	if (!answer)
		return cmd_fail(PROG, &e);
	list = json_object_get(answer, "reservations");
	if (a->timeline) {
		double now = jnum(answer, "now", (double)time(NULL));

		shown = json_array();
		json_array_foreach(list, i, r)
			if (jnum(r, "end", 0) > floor(now / SLOT) * SLOT && jnum(r, "start", 0) < now + (double)range &&
			    strcmp(jstr(r, "status") ? jstr(r, "status") : "", "cancelled"))
				json_array_append(shown, r);
		timeline(shown, (int)jint(answer, "gpus", 0), now, range);
		json_decref(shown);
		json_decref(answer);
		return EXIT_OK;
	}
	t = table_new(6, headers);
	json_array_foreach(list, i, r) {
		char id[24], from[64], to[64];
		char *gpus = fmt_int_list(json_object_get(r, "gpu_ids"));
		const char *row[6] = { id, jstr(r, "user"), gpus, from, to, jstr(r, "status") };

		snprintf(id, sizeof id, "%lld", (long long)jint(r, "id", 0));
		local_hm(jnum(r, "start", 0), from, sizeof from);
		local_hm(jnum(r, "end", 0), to, sizeof to);
		table_add_row(t, row);
		free(gpus);
	}
	if (fmt == TABLE_TEXT && !table_nrows(t))
		printf("No reservations\n");
	else {
		text = table_render(t, fmt);
		fputs(text, stdout);
		free(text);
	}
	table_free(t);
	json_decref(answer);
	return EXIT_OK;
}

static int resv_one(struct resv_args *a, bool cancel)
{
	struct gf_err e;
	json_t *answer, *body;
	int64_t id;
	char path[64];

	if (!a->id || a->nopts > (a->tz ? 1 : 0))
		return cmd_usagef(PROG, "usage: gctl reserve %s ID", cancel ? "cancel" : "get");
	if (gf_parse_int_range(a->id, 1, INT64_MAX, "reservation id", &id, &e) < 0)
		return cmd_usage_error(PROG, &e);
	if (cancel) {
		body = json_pack("{s:I}", "id", (json_int_t)id);
		answer = api_post("/reservations/cancel", body, &e);
		json_decref(body);
	} else {
		snprintf(path, sizeof path, "/reservations/%lld", (long long)id);
		answer = api_get(path, &e);
	}
	if (!answer)
		return cmd_fail(PROG, &e);
	if (cancel)
		printf("Cancelled reservation %lld\n", (long long)id);
	else
		print_resv(json_object_get(answer, "reservation"));
	json_decref(answer);
	return EXIT_OK;
}

int share_reserve(int argc, char **argv)
{
	struct resv_args a;
	struct gf_err e;

	if (argc < 2)
		return cmd_usagef(PROG, "usage: gctl reserve create|list|get|cancel ...");
	if (resv_parse(argc - 1, argv + 1, &a, &e) < 0)
		return cmd_usage_error(PROG, &e);
	if (use_timezone(a.tz, &e) < 0)
		return cmd_usage_error(PROG, &e);
	if (!strcmp(argv[1], "create"))
		return resv_create(&a);
	if (!strcmp(argv[1], "list"))
		return resv_list(&a);
	if (!strcmp(argv[1], "get") || !strcmp(argv[1], "cancel"))
		return resv_one(&a, !strcmp(argv[1], "cancel"));
	return cmd_usagef(PROG, "unknown reserve command '%s' (create, list, get, cancel)", argv[1]);
}
