/* info.c — ginfo: the GPUs of GET /gpus grouped by situation (idle,
 * allocated per job, shared, unmanaged, restricted, down), or one row per
 * GPU with -l; also the per-GPU lines of gctl show-gpus. */
#include "info.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "util.h"

#define PROG "ginfo"

static int is(const char *s, const char *v)
{
	return s && strcmp(s, v) == 0;
}

enum gpu_situation info_situation(const json_t *gpu)
{
	const char *state = jstr(gpu, "state");

	if (is(state, "down"))
		return GPU_DOWN;
	if (json_array_size(json_object_get(gpu, "jobs")))
		return is(state, "shared") ? GPU_SHARED : GPU_ALLOCATED;
	if (json_array_size(json_object_get(gpu, "unmanaged_pids")) ||
	    json_array_size(json_object_get(gpu, "escaped")) ||
	    is(state, "unmanaged"))
		return GPU_UNMANAGED;
	if (!jbool(gpu, "allowed", 1) || is(state, "restricted"))
		return GPU_RESTRICTED;
	if (is(state, "reserved"))
		return GPU_RESERVED;
	if (!state || is(state, "idle") || is(state, "shared"))
		return GPU_IDLE;
	if (is(state, "allocated"))
		return GPU_ALLOCATED;
	return GPU_OTHER;
}

const char *info_situation_name(enum gpu_situation s, const json_t *gpu)
{
	switch (s) {
	case GPU_IDLE: return "idle";
	case GPU_RESERVED: return "reserved";
	case GPU_ALLOCATED: return "allocated";
	case GPU_SHARED: return "shared";
	case GPU_UNMANAGED: return "unmanaged";
	case GPU_RESTRICTED: return "restricted";
	case GPU_DOWN: return "down";
	case GPU_OTHER: break;
	}
	return jstr(gpu, "state") ? jstr(gpu, "state") : "unknown";
}

/* "(pid 4242)" / "(pids 1,2)"; "" without pids. */
static void pids_text(struct sbuf *b, const json_t *pids)
{
	char *l;

	if (!json_array_size(pids))
		return;
	l = fmt_int_list(pids);
	sbuf_addf(b, "(pid%s %s)", json_array_size(pids) > 1 ? "s" : "", l);
	free(l);
}

/* "unmanaged(pid=4242 user=bob cmd=python age=2d3h mem=642M)" for each
 * foreign process that blocks the GPU, each after sep; with others, also
 * the ones the [gpu] policy lets pass, as "foreign(…: why)". Falls back to
 * the bare pids of an older daemon. */
static void foreign_text(struct sbuf *b, const json_t *gpu, const char *sep, int others)
{
	json_t *fl = json_object_get(gpu, "foreign");
	size_t i;

	if (!fl) {
		json_t *pids = json_object_get(gpu, "unmanaged_pids");
		char *l;

		if (!json_array_size(pids))
			return;
		sbuf_adds(b, sep);
		if (others) {
			pids_text(b, pids);
			return;
		}
		l = fmt_int_list(pids);
		sbuf_addf(b, "unmanaged(pid=%s)", l);
		free(l);
		return;
	}
	for (i = 0; i < json_array_size(fl); i++) {
		const json_t *f = json_array_get(fl, i);
		const char *label = jstr(f, "label") ? jstr(f, "label") : "";

		if (jbool(f, "blocks", 1))
			sbuf_addf(b, "%sunmanaged(%s)", sep, label);
		else if (others && !jbool(f, "ignored", 0))
			sbuf_addf(b, "%sforeign(%s: %s)", sep, label,
			    jstr(f, "exempt") ? jstr(f, "exempt") : "");
	}
}

/* "(alice until 2026-01-28T16:00:00)": whose reservation holds the GPU now. */
static void reserved_text(struct sbuf *b, const json_t *gpu)
{
	const json_t *r = json_object_get(gpu, "reservation");
	char until[64];

	if (!json_is_object(r))
		return;
	fmt_local_time(jnum(r, "end", 0), until, sizeof until);
	sbuf_addf(b, "(%s until %s)", jstr(r, "user") ? jstr(r, "user") : "?", until);
}

static void job_text(struct sbuf *b, const json_t *job)
{
	sbuf_addf(b, "%lld (%s)", (long long)jint(job, "id", 0),
	    jstr(job, "name") ? jstr(job, "name") : "");
}

/* "(pid 77 of job 5)" for each process of a job found on a GPU that job
 * was not given ("escaped" in GET /gpus). */
static void escaped_text(struct sbuf *b, const json_t *gpu)
{
	json_t *esc = json_object_get(gpu, "escaped");
	size_t i;

	for (i = 0; i < json_array_size(esc); i++) {
		json_t *x = json_array_get(esc, i);

		sbuf_addf(b, "%s(pid %lld of job %lld)", i ? ", " : "",
		    (long long)jint(x, "pid", 0), (long long)jint(x, "job", 0));
	}
}

/* What a foreign or escaped process on a GPU that jobs use adds. */
static void foreign_suffix(struct sbuf *b, const json_t *gpu)
{
	json_t *pids = json_object_get(gpu, "unmanaged_pids");

	if (json_array_size(pids)) {
		sbuf_adds(b, " + unmanaged ");
		pids_text(b, pids);
	}
	if (json_array_size(json_object_get(gpu, "escaped"))) {
		sbuf_adds(b, " + escaped ");
		escaped_text(b, gpu);
	}
}

static void shared_text(struct sbuf *b, const json_t *gpu)
{
	json_t *jobs = json_object_get(gpu, "jobs");
	int64_t booked = 0;
	char used[32], total[32];
	size_t i;

	for (i = 0; i < json_array_size(jobs); i++) {
		if (i)
			sbuf_adds(b, ", ");
		job_text(b, json_array_get(jobs, i));
		booked += jint(json_array_get(jobs, i), "gpu_memory_mb", 0);
	}
	booked = jint(gpu, "booked_mb", booked);
	if (jhas(gpu, "total_mb")) {
		fmt_mb_human(booked, used, sizeof used);
		fmt_mb_human(jint(gpu, "total_mb", 0), total, sizeof total);
		sbuf_addf(b, "; %s/%s booked", used, total);
	}
	foreign_suffix(b, gpu);
}

struct group {
	enum gpu_situation sit;
	const char *label;
	char *reason;
	struct sbuf nodes;
	int count;
};

struct groups {
	struct group *v;
	size_t n;
};

static void add_unit(struct groups *g, enum gpu_situation sit,
    const char *label, char *reason, int64_t index)
{
	struct group *gr = NULL;
	size_t i;

	for (i = 0; i < g->n; i++)
		if (g->v[i].sit == sit && strcmp(g->v[i].label, label) == 0 &&
		    strcmp(g->v[i].reason, reason) == 0) {
			gr = &g->v[i];
			free(reason);
			break;
		}
	if (!gr) {
		g->v = xrealloc(g->v, (g->n + 1) * sizeof *g->v);
		gr = &g->v[g->n++];
		memset(gr, 0, sizeof *gr);
		gr->sit = sit;
		gr->label = label;
		gr->reason = reason;
	}
	sbuf_addf(&gr->nodes, "%s%lld", gr->count ? "," : "", (long long)index);
	gr->count++;
}

static void add_gpu_units(struct groups *g, const json_t *gpu)
{
	enum gpu_situation sit = info_situation(gpu);
	json_t *jobs = json_object_get(gpu, "jobs");
	int64_t index = jint(gpu, "index", 0);
	const char *label = info_situation_name(sit, gpu);
	struct sbuf r = { 0 };
	size_t i;

	switch (sit) {
	case GPU_ALLOCATED:
		for (i = 0; i < json_array_size(jobs); i++) {
			job_text(&r, json_array_get(jobs, i));
			foreign_suffix(&r, gpu);
			add_unit(g, sit, label, sbuf_take(&r), index);
		}
		if (json_array_size(jobs))
			return;
		break;
	case GPU_SHARED:
		shared_text(&r, gpu);
		break;
	case GPU_UNMANAGED:
		pids_text(&r, json_object_get(gpu, "unmanaged_pids"));
		if (r.len && json_array_size(json_object_get(gpu, "escaped")))
			sbuf_adds(&r, ", ");
		escaped_text(&r, gpu);
		break;
	case GPU_DOWN:
	case GPU_OTHER:
		if (jstr(gpu, "reason") && *jstr(gpu, "reason"))
			sbuf_addf(&r, "(%s)", jstr(gpu, "reason"));
		break;
	case GPU_RESERVED:
		reserved_text(&r, gpu);
		break;
	case GPU_IDLE:
	case GPU_RESTRICTED:
		break;
	}
	add_unit(g, sit, label, sbuf_take(&r), index);
}

struct table *info_table(const json_t *answer)
{
	static const char *const headers[] = { "PARTITION", "GPUS", "NODES",
		"STATE", "JOB(REASON)" };
	json_t *gpus = json_object_get(answer, "gpus");
	struct groups g = { NULL, 0 };
	struct table *t;
	size_t i;
	int sit;

	if (!json_array_size(gpus))
		return NULL;
	for (i = 0; i < json_array_size(gpus); i++)
		add_gpu_units(&g, json_array_get(gpus, i));
	t = table_new(5, headers);
	for (sit = GPU_IDLE; sit <= GPU_OTHER; sit++)
		for (i = 0; i < g.n; i++) {
			char count[16];
			const char *row[5];

			if ((int)g.v[i].sit != sit)
				continue;
			snprintf(count, sizeof count, "%d", g.v[i].count);
			row[0] = "gpu";
			row[1] = count;
			row[2] = sbuf_str(&g.v[i].nodes);
			row[3] = g.v[i].label;
			row[4] = g.v[i].reason;
			table_add_row(t, row);
		}
	for (i = 0; i < g.n; i++) {
		free(g.v[i].reason);
		sbuf_free(&g.v[i].nodes);
	}
	free(g.v);
	return t;
}

/* JOBS cell of ginfo -l. */
static char *jobs_cell(const json_t *gpu, enum gpu_situation sit)
{
	json_t *jobs = json_object_get(gpu, "jobs");
	json_t *ign = json_object_get(gpu, "ignored_pids");
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < json_array_size(jobs); i++) {
		if (i)
			sbuf_adds(&b, ", ");
		job_text(&b, json_array_get(jobs, i));
	}
	{
		struct sbuf f = { 0 };

		foreign_text(&f, gpu, " ", 1);
		if (f.len)
			sbuf_adds(&b, b.len ? sbuf_str(&f) : sbuf_str(&f) + 1);
		sbuf_free(&f);
	}
	if (json_array_size(json_object_get(gpu, "escaped"))) {
		if (b.len)
			sbuf_addc(&b, ' ');
		escaped_text(&b, gpu);
	}
	if (json_array_size(ign)) {
		char *l = fmt_int_list(ign);

		sbuf_addf(&b, "%s(ignored pid%s %s)", b.len ? " " : "",
		    json_array_size(ign) > 1 ? "s" : "", l);
		free(l);
	}
	if ((sit == GPU_DOWN || sit == GPU_OTHER) && jstr(gpu, "reason"))
		sbuf_addf(&b, "%s(%s)", b.len ? " " : "", jstr(gpu, "reason"));
	if (sit == GPU_RESERVED)
		reserved_text(&b, gpu);
	return sbuf_take(&b);
}

struct table *info_long_table(const json_t *answer)
{
	static const char *const headers[] = { "INDEX", "NAME", "MEMORY",
		"UTIL", "STATE", "JOBS" };
	json_t *gpus = json_object_get(answer, "gpus");
	struct table *t;
	size_t i;

	if (!json_array_size(gpus))
		return NULL;
	t = table_new(6, headers);
	for (i = 0; i < json_array_size(gpus); i++) {
		const json_t *gpu = json_array_get(gpus, i);
		enum gpu_situation sit = info_situation(gpu);
		char index[16], mem[64], used[32], total[32], util[16];
		struct sbuf state = { 0 }, name = { 0 };
		char *jobs = jobs_cell(gpu, sit);
		const char *row[6];

		snprintf(index, sizeof index, "%lld",
		    (long long)jint(gpu, "index", 0));
		if (jhas(gpu, "total_mb")) {
			fmt_mb_human(jint(gpu, "used_mb", 0), used, sizeof used);
			fmt_mb_human(jint(gpu, "total_mb", 0), total, sizeof total);
			snprintf(mem, sizeof mem, "%s/%s", used, total);
		} else {
			snprintf(mem, sizeof mem, "-");
		}
		if (jhas(gpu, "util_pct"))
			snprintf(util, sizeof util, "%lld%%",
			    (long long)jint(gpu, "util_pct", 0));
		else
			snprintf(util, sizeof util, "-");
		sbuf_adds(&state, info_situation_name(sit, gpu));
		if (sit != GPU_RESTRICTED && !jbool(gpu, "allowed", 1))
			sbuf_adds(&state, ",restricted");
		row[0] = index;
		row[1] = jstr(gpu, "name") ? jstr(gpu, "name") : "-";
		if (jhas(gpu, "mig_index")) {
			/* a MIG device: which GPU it is part of */
			sbuf_addf(&name, "%s (GPU %lld:%lld)", row[1],
			    (long long)jint(gpu, "parent_index", 0),
			    (long long)jint(gpu, "mig_index", 0));
			row[1] = sbuf_str(&name);
		}
		row[2] = mem;
		row[3] = util;
		row[4] = sbuf_str(&state);
		row[5] = jobs;
		table_add_row(t, row);
		sbuf_free(&state);
		sbuf_free(&name);
		free(jobs);
	}
	return t;
}

char *info_no_gpus_line(const json_t *answer)
{
	struct sbuf b = { 0 };
	const char *status = jstr(answer, "status");

	sbuf_addf(&b, "No GPUs: %s", status && *status ? status :
	    "none found");
	return sbuf_take(&b);
}

/* " unmanaged(pid=4242 user=bob cmd=python age=2d3h mem=642M)" and/or
 * " escaped(pid=77,job=5)". */
static void unmanaged_reason(struct sbuf *b, const json_t *gpu)
{
	json_t *esc = json_object_get(gpu, "escaped");
	size_t i;

	foreign_text(b, gpu, " ", 0);
	for (i = 0; i < json_array_size(esc); i++)
		sbuf_addf(b, " escaped(pid=%lld,job=%lld)",
		    (long long)jint(json_array_get(esc, i), "pid", 0),
		    (long long)jint(json_array_get(esc, i), "job", 0));
}

char *info_show_gpus_text(const json_t *answer)
{
	json_t *gpus = json_object_get(answer, "gpus");
	struct sbuf b = { 0 };
	size_t i, k;

	for (i = 0; i < json_array_size(gpus); i++) {
		const json_t *gpu = json_array_get(gpus, i);
		enum gpu_situation sit = info_situation(gpu);
		json_t *jobs = json_object_get(gpu, "jobs");

		sbuf_addf(&b, "%lld %s", (long long)jint(gpu, "index", 0),
		    sit == GPU_IDLE || sit == GPU_RESTRICTED || sit == GPU_RESERVED ?
		    "available" :
		    "in_use");
		if (!jbool(gpu, "allowed", 1) || sit == GPU_RESTRICTED)
			sbuf_adds(&b, " restricted");
		switch (sit) {
		case GPU_ALLOCATED:
		case GPU_SHARED:
			sbuf_addf(&b, " %s(job%s=", sit == GPU_SHARED ? "shared" :
			    "allocated", json_array_size(jobs) > 1 ? "s" : "");
			for (k = 0; k < json_array_size(jobs); k++)
				sbuf_addf(&b, "%s%lld", k ? "," : "",
				    (long long)jint(json_array_get(jobs, k), "id",
				    0));
			sbuf_addc(&b, ')');
			/* a foreign process on a job's GPU is shown too */
			unmanaged_reason(&b, gpu);
			break;
		case GPU_UNMANAGED:
			unmanaged_reason(&b, gpu);
			break;
		case GPU_DOWN:
		case GPU_OTHER:
			sbuf_addf(&b, " %s(%s)", info_situation_name(sit, gpu),
			    jstr(gpu, "reason") ? jstr(gpu, "reason") : "");
			break;
		case GPU_RESERVED:
			sbuf_adds(&b, " reserved");
			reserved_text(&b, gpu);
			break;
		case GPU_IDLE:
		case GPU_RESTRICTED:
			break;
		}
		sbuf_addc(&b, '\n');
	}
	return sbuf_take(&b);
}

/* ---------- ginfo --timeline ---------- */

#define TL_LABEL 7		/* "GPU 12 " */
#define TL_WIDTH 160		/* a row at most */
#define TL_PAST 2		/* columns shown before the one holding now */

/* One thing drawn: a job (running or expected) or a reservation. */
struct tl_key {
	char kind;		/* 'R' running, 'E' expected, 'V' reservation */
	int64_t id;
	char glyph;
	const json_t *seg;
};

struct tl_keys {
	struct tl_key *v;
	size_t n;
	int nrun, nexp, nresv;
};

static char tl_kind(const json_t *seg)
{
	const char *k = jstr(seg, "kind");

	return is(k, "running") ? 'R' : is(k, "expected") ? 'E' : is(k, "reservation") ? 'V' : 0;
}

/* The glyph of seg's job or reservation, given on first sight: A-Z for
 * running jobs, a-z for expected starts, 1-9 for reservations, then '*',
 * '+', '#' for the ones beyond. */
static char tl_glyph(struct tl_keys *k, const json_t *seg)
{
	char kind = tl_kind(seg);
	int64_t id = jint(seg, "id", 0);
	struct tl_key *x;

	if (!kind)
		return 0;
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].kind == kind && k->v[i].id == id)
			return k->v[i].glyph;
	k->v = xrealloc(k->v, (k->n + 1) * sizeof *k->v);
	x = &k->v[k->n++];
	x->kind = kind;
	x->id = id;
	x->seg = seg;
	if (kind == 'R')
		x->glyph = k->nrun < 26 ? (char)('A' + k->nrun) : '*';
	else if (kind == 'E')
		x->glyph = k->nexp < 26 ? (char)('a' + k->nexp) : '+';
	else
		x->glyph = k->nresv < 9 ? (char)('1' + k->nresv) : '#';
	k->nrun += kind == 'R';
	k->nexp += kind == 'E';
	k->nresv += kind == 'V';
	return x->glyph;
}

static void tl_when(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(buf, size, "%a %H:%M", &tm);
}

/* Put text at column pos of line (width w) when it fits after the last
 * label (*last: the first free column). */
static void tl_label(char *line, int w, int pos, const char *text, int *last)
{
	int n = (int)strlen(text);

	if (pos < *last || pos + n > w)
		return;
	memcpy(line + pos, text, (size_t)n);
	*last = pos + n + 1;
}

char *info_timeline_text(const json_t *tl)
{
	static const int sizes[] = { 1800, 3600, 7200, 10800, 21600, 43200, 86400 };
	const json_t *gpus = json_object_get(tl, "gpus");
	double now = jnum(tl, "now", 0), to = jnum(tl, "to", now);
	double range = to > now ? to - now : 1800, t0;
	struct tl_keys keys = { NULL, 0, 0, 0, 0 };
	struct sbuf b = { 0 };
	int col = sizes[0], cols, nowcol, lasth = 0, lastd = 0;
	char *hours, *days, from[64], until[64], nowt[64];
	size_t i, k;

	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		col = sizes[i];
		if (TL_LABEL + TL_PAST + (int)ceil(range / col) <= TL_WIDTH)
			break;
	}
	t0 = floor(now / col) * col - TL_PAST * col;
	cols = TL_PAST + (int)ceil((to - floor(now / col) * col) / col);
	if (cols > TL_WIDTH - TL_LABEL)
		cols = TL_WIDTH - TL_LABEL;
	nowcol = (int)floor((now - t0) / col);
	tl_when(t0, from, sizeof from);
	tl_when(t0 + (double)cols * col, until, sizeof until);
	tl_when(now, nowt, sizeof nowt);
	if (col < 3600)
		sbuf_addf(&b, "Timeline %s to %s, one column = %d min; now = %s (v)\n", from, until, col / 60, nowt);
	else
		sbuf_addf(&b, "Timeline %s to %s, one column = %d h; now = %s (v)\n", from, until, col / 3600, nowt);
	sbuf_adds(&b, "A-Z running (to its time limit), a-z expected start, 1-9 reservation, . free\n");
	/* Day names at local midnights, hours every 4 columns' worth. */
	hours = xmalloc((size_t)cols + 1);
	days = xmalloc((size_t)cols + 1);
	memset(hours, ' ', (size_t)cols);
	memset(days, ' ', (size_t)cols);
	hours[cols] = days[cols] = '\0';
	for (int c = 0; c < cols; c++) {
		time_t tt = (time_t)(t0 + (double)c * col);
		struct tm tm;
		char text[32];
		int since;

		localtime_r(&tt, &tm);
		since = tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
		if (since < col) {	/* this column holds a local midnight */
			strftime(text, sizeof text, "%a %d", &tm);
			tl_label(days, cols, c, text, &lastd);
		}
		if (since % (4 * col) == 0) {
			snprintf(text, sizeof text, "%02d", tm.tm_hour);
			tl_label(hours, cols, c, text, &lasth);
		}
	}
	sbuf_addf(&b, "%*s%s\n", TL_LABEL, "", days);
	sbuf_addf(&b, "%*s%s\n", TL_LABEL, "", hours);
	sbuf_addf(&b, "%*s%*sv\n", TL_LABEL, "", nowcol, "");
	free(hours);
	free(days);
	for (i = 0; i < json_array_size(gpus); i++) {
		const json_t *g = json_array_get(gpus, i), *segs = json_object_get(g, "segments"), *seg;
		char *row = xmalloc((size_t)cols + 1);
		int rank[TL_WIDTH];	/* what is drawn: 3 running, 2 expected, 1 reservation */

		memset(row, '.', (size_t)cols);
		row[cols] = '\0';
		memset(rank, 0, sizeof rank);
		json_array_foreach(segs, k, seg) {
			char glyph = tl_glyph(&keys, seg), kind = tl_kind(seg);
			int r = kind == 'R' ? 3 : kind == 'E' ? 2 : 1;
			double s = jnum(seg, "start", 0);
			double e = jhas(seg, "end") && jnum(seg, "end", 0) > 0 ? jnum(seg, "end", 0) : INFINITY;

			if (!glyph)
				continue;
			for (int c = 0; c < cols; c++) {
				double a = t0 + (double)c * col, z = a + col;

				if (s < z && e > a && r > rank[c]) {
					row[c] = glyph;
					rank[c] = r;
				}
			}
		}
		sbuf_addf(&b, "GPU %-2lld %s\n", (long long)jint(g, "index", 0), row);
		free(row);
	}
	for (i = 0; i < keys.n; i++) {
		const json_t *seg = keys.v[i].seg;
		char s[64], e[64];
		bool has_end = jhas(seg, "end") && jnum(seg, "end", 0) > 0;

		tl_when(jnum(seg, "start", 0), s, sizeof s);
		tl_when(jnum(seg, "end", 0), e, sizeof e);
		if (keys.v[i].kind == 'V') {
			sbuf_addf(&b, "%c = reservation %lld for %s: %s to %s\n", keys.v[i].glyph,
			    (long long)keys.v[i].id, jstr(seg, "user") ? jstr(seg, "user") : "?", s, e);
			continue;
		}
		sbuf_addf(&b, "%c = job %lld (%s) %s: %s %s", keys.v[i].glyph, (long long)keys.v[i].id,
		    jstr(seg, "user") ? jstr(seg, "user") : "?", jstr(seg, "name") ? jstr(seg, "name") : "",
		    keys.v[i].kind == 'R' ? "running since" : "expected to start", s);
		if (has_end && json_is_true(json_object_get(seg, "estimated")))
			sbuf_addf(&b, ", until about %s (no time limit: default_runtime_estimate)\n", e);
		else if (has_end)
			sbuf_addf(&b, ", until %s\n", e);
		else
			sbuf_adds(&b, keys.v[i].kind == 'R' ? ", end not known (no time limit)\n"
			    : ", end not known\n");
	}
	{
		const json_t *un = json_object_get(tl, "unplaced"), *u;

		json_array_foreach(un, k, u)
			sbuf_addf(&b, "  job %lld (%s) %s: no expected start: %s\n", (long long)jint(u, "id", 0),
			    jstr(u, "user") ? jstr(u, "user") : "?", jstr(u, "name") ? jstr(u, "name") : "",
			    jstr(u, "note") ? jstr(u, "note") : "");
		if (jint(tl, "unplaced_count", 0) > (int64_t)json_array_size(un))
			sbuf_addf(&b, "  and %lld more without an expected start\n",
			    (long long)(jint(tl, "unplaced_count", 0) - (int64_t)json_array_size(un)));
	}
	if (!keys.n && !json_array_size(json_object_get(tl, "unplaced")))
		sbuf_adds(&b, "Nothing running, reserved or expected in this range\n");
	free(keys.v);
	return sbuf_take(&b);
}

/* ---------- the program ---------- */

enum { I_LONG, I_VERBOSE, I_QUIET, I_CONFIG, I_HELP, I_VERSION, I_TIMELINE, I_RANGE };

static const struct opt_def info_opts[] = {
	{ I_LONG, "long", 'l', 0 }, { I_VERBOSE, "verbose", 'v', 0 },
	{ I_QUIET, "quiet", 'q', 0 }, { I_CONFIG, "config", 0, 1 },
	{ I_HELP, "help", 'h', 0 }, { I_VERSION, "version", 'V', 0 },
	{ I_TIMELINE, "timeline", 0, 0 }, { I_RANGE, "range", 0, 1 },
};

static const char info_help[] =
"usage: ginfo [-l | -ll] [-v | -vv] [-q]\n"
"       ginfo --timeline [--range 48h]\n"
"       ginfo completion bash|zsh|fish\n"
"\n"
"Show the GPUs and what they are doing, one row per group of GPUs in the\n"
"same situation: idle, allocated (one row per job), shared (its jobs and\n"
"GPU memory booked/total), unmanaged (a process gflow did not start; its\n"
"pids), restricted (outside the GPUs gflow may use: gctl set-gpus), down.\n"
"NODES are physical GPU indices (as in CUDA_VISIBLE_DEVICES). A GPU in MIG\n"
"mode is shown as its MIG devices, each a unit of its own, numbered after\n"
"the units before it; -l names each one's GPU and MIG index (GPU 0:1).\n"
"\n"
"  -l, --long         one row per GPU: index, name, memory used/total,\n"
"                     utilisation, state, jobs\n"
"  -ll                that, then one line per GPU with its processes\n"
"                     (gctl show-gpus: unmanaged and escaped pids)\n"
"  -v, --verbose      on stderr: each request, its status, size, time and\n"
"                     the daemon that answered; -vv also each socket tried\n"
"      --timeline     one row per GPU over time (30-minute columns, wider\n"
"                     for long ranges): running jobs until their time\n"
"                     limits, reservations and the expected starts of\n"
"                     waiting jobs, the current time marked, a legend\n"
"      --range SPAN   how far --timeline looks ahead: 1h to 14d (48h;\n"
"                     e.g. 12h, 3d, 1d12h)\n"
"  -q, --quiet        the table only, without the lines naming the CPUs and\n"
"                     host memory booked/total and the daemon\n"
"      --config PATH  config file: checked; its timezone is used\n"
"  -h, --help         this help\n"
"  -V, --version      print the version\n";

static int info_exec(int argc, char **argv)
{
	struct opt_parser p;
	struct gf_err e;
	const char *val;
	struct table *t;
	json_t *answer;
	int id, lng = 0, quiet = 0, verbose = 0, tline = 0;
	int64_t range = 48 * 3600;
	const char *range_s = NULL;
	char *text;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_info, argc - 1, argv + 1);
	opt_init(&p, argc, argv, 1, info_opts,
	    sizeof info_opts / sizeof info_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			return cmd_usage_error(PROG, &e);
		case OPT_POSITIONAL:
			return cmd_usagef(PROG, "unexpected argument '%s'", val);
		case I_LONG:
			lng++;
			break;
		case I_VERBOSE:
			http_set_verbose(++verbose);
			break;
		case I_QUIET:
			quiet = 1;
			break;
		case I_CONFIG:
			if (cmd_check_config(val, &e) < 0)
				return cmd_fail(PROG, &e);
			break;
		case I_TIMELINE:
			tline = 1;
			break;
		case I_RANGE:
			if (gf_parse_duration(val, "--range", &range, &e) < 0)
				return cmd_usage_error(PROG, &e);
			if (range < 3600 || range > 14 * 86400)
				return cmd_usagef(PROG, "--range '%s' must be from 1h to 14d", val);
			range_s = val;
			break;
		case I_HELP:
			fputs(info_help, stdout);
			return EXIT_OK;
		case I_VERSION:
			return cmd_version();
		}
	}
	if (range_s && !tline)
		return cmd_usagef(PROG, "--range goes with --timeline");
	if (tline && lng)
		return cmd_usagef(PROG, "--timeline draws its own picture: not with -l");
	if (tline) {
		char path[64];

		snprintf(path, sizeof path, "/timeline?range=%llds", (long long)range);
		if (!(answer = api_get(path, &e)))
			return cmd_fail(PROG, &e);
		text = info_timeline_text(answer);
		fputs(text, stdout);
		if (!quiet)
			printf("(%s)\n", daemon_answered());
		free(text);
		json_decref(answer);
		return EXIT_OK;
	}
	answer = api_get("/gpus", &e);
	if (!answer)
		return cmd_fail(PROG, &e);
	t = lng ? info_long_table(answer) : info_table(answer);
	text = t ? table_render(t, TABLE_TEXT) : info_no_gpus_line(answer);
	fputs(text, stdout);
	if (!t)
		fputc('\n', stdout);
	if (t && lng > 1) {
		free(text);
		text = info_show_gpus_text(answer);
		fputs(text, stdout);
	}
	if (!quiet && jhas(answer, "cpus_total")) {
		char used[32], total[32];

		if (jint(answer, "cpus_total", 0) > 0)
			printf("CPUs: %lld/%lld booked", (long long)jint(answer, "cpus_booked", 0),
			    (long long)jint(answer, "cpus_total", 0));
		else
			printf("CPUs: %lld booked (not counted: [daemon] cpus = 0)",
			    (long long)jint(answer, "cpus_booked", 0));
		if (jint(answer, "memory_total_mb", 0) > 0) {
			fmt_mb_human(jint(answer, "memory_booked_mb", 0), used, sizeof used);
			fmt_mb_human(jint(answer, "memory_total_mb", 0), total, sizeof total);
			printf("; host memory: %s/%s booked", used, total);
		}
		putchar('\n');
	}
	if (!quiet)
		printf("(%s)\n", daemon_answered());
	free(text);
	table_free(t);
	json_decref(answer);
	return EXIT_OK;
}

const struct command cmd_info = {
	"info", "ginfo", "show GPUs and their allocation", info_exec,
	"completion --long -l -ll --verbose -v -vv --quiet -q --config --timeline --range --help --version",
};
