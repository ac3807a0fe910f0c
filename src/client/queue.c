/* queue.c — gqueue: list jobs from GET /jobs as a table (or CSV/JSON),
 * optionally as a dependency tree, grouped by state, or redrawn every few
 * seconds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include "queue.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "qstream.h"
#include "remote.h"

#define PROG "gqueue"

static const struct {
	enum qfield f;
	const char *name;
} fields[] = {
	{ QF_JOBID, "JOBID" }, { QF_NAME, "NAME" }, { QF_ST, "ST" },
	{ QF_STATE, "STATE" }, { QF_TIME, "TIME" }, { QF_NODES, "NODES" },
	{ QF_NODELIST, "NODELIST(REASON)" }, { QF_TIMELIMIT, "TIMELIMIT" },
	{ QF_MEMORY, "MEMORY" }, { QF_USER, "USER" }, { QF_PROJECT, "PROJECT" },
	{ QF_EXIT, "EXIT" }, { QF_PRIORITY, "PRIORITY" },
	{ QF_SUBMIT, "SUBMIT" }, { QF_START, "START" }, { QF_END, "END" },
	{ QF_GPUMEM, "GPUMEM" }, { QF_REASON, "REASON" },
	{ QF_GPUIDS, "GPUIDS" }, { QF_CLUSTER, "CLUSTER" }, { QF_CPUS, "CPUS" },
	{ QF_START_TIME, "START_TIME" }, { QF_SCHEDNODES, "SCHEDNODES" },
	/* other spellings */
	{ QF_NODELIST, "NODELIST" }, { QF_NODES, "GPUS" },
	{ QF_EXIT, "EXITCODE" }, { QF_JOBID, "ID" },
};
#define NFIELDS (sizeof fields / sizeof fields[0])

const char *queue_field_header(enum qfield f)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		if (fields[i].f == f)
			return fields[i].name;
	return "?";
}

int queue_parse_fields(const char *s, enum qfield *out, size_t *n,
    struct gf_err *e)
{
	const char *p = s;

	*n = 0;
	for (;;) {
		size_t len, i;

		while (*p == ' ')
			p++;
		len = strcspn(p, ",");
		while (len && p[len - 1] == ' ')
			len--;
		for (i = 0; i < NFIELDS; i++)
			if (strlen(fields[i].name) == len &&
			    strncasecmp(fields[i].name, p, len) == 0)
				break;
		if (i == NFIELDS) {
			struct sbuf names = { 0 };
			size_t k;

			for (k = 0; k < QF_COUNT; k++) /* main spellings */
				sbuf_addf(&names, "%s%s", k ? "," : "",
				    fields[k].name);
			gf_err_set(e, "unknown field '%.*s' (fields: %s)",
			    (int)(len > 64 ? 64 : len), p, sbuf_str(&names));
			sbuf_free(&names);
			return -1;
		}
		if (*n == QUEUE_MAX_FIELDS)
			return gf_err_set(e, "too many fields (at most %d)",
			    QUEUE_MAX_FIELDS);
		out[(*n)++] = fields[i].f;
		p += strcspn(p, ",");
		if (!*p)
			break;
		p++;
	}
	return 0;
}

static void add_or_dash(struct sbuf *b, const char *s)
{
	sbuf_adds(b, s && *s ? s : "-");
}

static int64_t num_or(const json_t *o, const char *key, int64_t dflt,
    int *has)
{
	*has = jhas(o, key);
	return jint(o, key, dflt);
}

void qjob_from_json(const json_t *job, struct qjob *q, struct sbuf *scratch)
{
	const json_t *u = json_object_get(job, "gpu_usage");
	const json_t *eg = json_object_get(job, "expected_gpus");
	char *ids = fmt_int_list(json_object_get(job, "gpu_ids"));
	char *sched = json_is_array(eg) ? fmt_int_list(eg) : NULL;
	int has;

	memset(q, 0, sizeof *q);
	q->id = jint(job, "id", 0);
	q->gpus = jint(job, "gpus", 0);
	q->uid = jint(job, "uid", -1);
	q->priority = jint(job, "priority", 10);
	q->time_limit_secs = num_or(job, "time_limit_secs", 0,
	    &q->has_time_limit);
	q->memory_mb = num_or(job, "memory_mb", 0, &q->has_memory);
	q->gpu_memory_mb = num_or(job, "gpu_memory_mb", 0, &q->has_gpu_memory);
	q->cpus = jint(job, "cpus", 1);
	q->exit_code = num_or(job, "exit_code", 0, &q->has_exit_code);
	q->exit_signal = num_or(job, "exit_signal", 0, &q->has_exit_signal);
	q->memory_exceeded = jbool(u, "memory_exceeded", 0);
	q->exceeded_mb = num_or(u, "exceeded_mb", 0, &has);
	q->idle_secs = jint(job, "idle_secs", 0);
	q->idle_warned = jbool(job, "idle_warned", 0);
	q->start_time = jnum(job, "start_time", 0);
	q->end_time = jnum(job, "end_time", 0);
	q->submit_time = jnum(job, "submit_time", 0);
	q->name = jstr(job, "name");
	q->state = jstr(job, "state");
	q->st = jstr(job, "st");
	q->reason = jstr(job, "reason");
	q->user = jstr(job, "user");
	q->project = jstr(job, "project");
	q->cluster = jstr(job, "cluster");
	q->has_expected = json_is_number(json_object_get(job, "expected_start"));
	q->expected_start = jnum(job, "expected_start", 0);
	sbuf_free(scratch);
	sbuf_adds(scratch, ids);
	sbuf_addc(scratch, '\0');
	if (sched)
		sbuf_adds(scratch, sched);
	q->gpu_ids = sbuf_str(scratch);
	q->expected_gpus = sched ? q->gpu_ids + strlen(ids) + 1 : NULL;
	free(ids);
	free(sched);
}

static void add_int(struct sbuf *b, int64_t v)
{
	char buf[24], *e = buf + sizeof buf, *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	sbuf_add(b, p, (size_t)(e - p));
}

static void exit_cell(const struct qjob *q, struct sbuf *b)
{
	const char *name;

	if (q->has_exit_code) {
		sbuf_addf(b, "%lld", (long long)q->exit_code);
		return;
	}
	if (!q->has_exit_signal) {
		sbuf_addc(b, '-');
		return;
	}
	name = fmt_signal_name((int)q->exit_signal);
	if (name)
		sbuf_adds(b, name);
	else
		sbuf_addf(b, "signal %d", (int)q->exit_signal);
}

void qjob_cell(const struct qjob *q, enum qfield f, double now, struct sbuf *b)
{
	char buf[96], used[32], booked[32];
	double end;

	switch (f) {
	case QF_JOBID:
		add_int(b, q->id);
		return;
	case QF_NAME:
		sbuf_adds(b, q->name ? q->name : "");
		return;
	case QF_ST:
		sbuf_adds(b, q->st ? q->st : state_short(q->state));
		return;
	case QF_STATE:
		add_or_dash(b, q->state);
		return;
	case QF_TIME:	/* fmt_job_elapsed */
		end = q->end_time > 0 ? q->end_time : now;
		if (q->start_time <= 0)
			sbuf_adds(b, "0:00");
		else {
			fmt_duration((int64_t)(end - q->start_time), buf,
			    sizeof buf);
			sbuf_adds(b, buf);
		}
		return;
	case QF_NODES:
		add_int(b, q->gpus);
		return;
	case QF_CPUS:
		add_int(b, q->cpus);
		return;
	case QF_NODELIST:
		if (q->state && strcmp(q->state, "Running") == 0)
			sbuf_adds(b, q->gpu_ids ? q->gpu_ids : "");
		else if (!q->reason || !*q->reason)
			sbuf_addc(b, '-');
		else {
			sbuf_addc(b, '(');
			sbuf_adds(b, q->reason);
			sbuf_addc(b, ')');
		}
		return;
	case QF_TIMELIMIT:
		if (!q->has_time_limit) {
			sbuf_adds(b, "UNLIMITED");
			return;
		}
		fmt_duration(q->time_limit_secs, buf, sizeof buf);
		sbuf_adds(b, buf);
		return;
	case QF_MEMORY:
	case QF_GPUMEM:
		if (!(f == QF_MEMORY ? q->has_memory : q->has_gpu_memory)) {
			sbuf_addc(b, '-');
			return;
		}
		fmt_mb(f == QF_MEMORY ? q->memory_mb : q->gpu_memory_mb, buf,
		    sizeof buf);
		sbuf_adds(b, buf);
		return;
	case QF_USER:
		if (q->user)
			sbuf_adds(b, q->user);
		else
			sbuf_addf(b, "%lld", (long long)q->uid);
		return;
	case QF_PROJECT:
		add_or_dash(b, q->project);
		return;
	case QF_EXIT:
		exit_cell(q, b);
		return;
	case QF_PRIORITY:
		sbuf_addf(b, "%lld", (long long)q->priority);
		return;
	case QF_SUBMIT:
	case QF_START:
	case QF_END:
		fmt_local_time(f == QF_SUBMIT ? q->submit_time : f == QF_START ?
		    q->start_time : q->end_time, buf, sizeof buf);
		sbuf_adds(b, buf);
		return;
	case QF_REASON:
		/* a running shared job whose processes use more GPU memory
		 * than it booked: that detail */
		/* a running job warned by idle reclaim: idle for h:mm */
		if (!q->reason && q->idle_warned) {
			snprintf(buf, sizeof buf, "Idle(%lld:%02lld)",
			    (long long)(q->idle_secs / 3600),
			    (long long)(q->idle_secs / 60 % 60));
			sbuf_adds(b, buf);
		} else if (!q->reason && q->memory_exceeded) {
			fmt_mb_human(q->exceeded_mb, used, sizeof used);
			fmt_mb_human(q->gpu_memory_mb, booked, sizeof booked);
			snprintf(buf, sizeof buf,
			    "GPUMemoryExceeded(used %s, booked %s)", used,
			    booked);
			sbuf_adds(b, buf);
		} else
			add_or_dash(b, q->reason);
		return;
	case QF_GPUIDS:
		add_or_dash(b, q->gpu_ids);
		return;
	case QF_CLUSTER:
		add_or_dash(b, q->cluster);
		return;
	case QF_START_TIME:	/* Slurm's: expected if waiting, else actual */
		if (q->state && (!strcmp(q->state, "Queued") ||
		    !strcmp(q->state, "Hold"))) {
			if (q->has_expected && q->expected_start > 0)
				fmt_local_time(q->expected_start, buf,
				    sizeof buf);
			else
				snprintf(buf, sizeof buf, "N/A");
		} else if (q->start_time > 0)
			fmt_local_time(q->start_time, buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "N/A");
		sbuf_adds(b, buf);
		return;
	case QF_SCHEDNODES:
		add_or_dash(b, q->has_expected ? q->expected_gpus : NULL);
		return;
	case QF_COUNT:
		break;
	}
}

char *queue_field_value(const json_t *job, enum qfield f, double now)
{
	struct sbuf scratch = { 0 }, b = { 0 };
	struct qjob q;

	qjob_from_json(job, &q, &scratch);
	qjob_cell(&q, f, now, &b);
	sbuf_free(&scratch);
	return sbuf_take(&b);
}

char *queue_states_param(const char *s, struct gf_err *e)
{
	struct sbuf b = { 0 };
	const char *p = s;

	for (;;) {
		size_t len = strcspn(p, ",");
		char word[32];
		const char *name;

		snprintf(word, sizeof word, "%.*s", (int)(len < 31 ? len : 31), p);
		name = len < 31 ? state_canonical(word) : NULL;
		if (!name) {
			gf_err_set(e, "unknown state '%.*s' (states: Queued/PD, "
			    "Hold/H, Running/R, Finished/CD, Failed/F, "
			    "Cancelled/CA, Timeout/TO)", (int)(len > 64 ? 64 : len),
			    p);
			sbuf_free(&b);
			return NULL;
		}
		if (b.len)
			sbuf_addc(&b, ',');
		sbuf_adds(&b, name);
		if (!p[len])
			break;
		p += len + 1;
	}
	return sbuf_take(&b);
}

/* ---------- sorting and limiting ---------- */

struct sort_key {
	const char *field;
	int reverse;
	double now;
};

/* "-Name" -> name, reversed; NULL field (and e) when not a sort field. */
static int sort_key_parse(const char *spec, double now, struct sort_key *k,
    struct gf_err *e)
{
	static const char *const known[] = { "id", "name", "state", "user",
		"priority", "submit", "start", "end", "time", "gpus",
		"project", "expected" };
	const char *field = spec;
	char lower[32];
	size_t i;

	k->reverse = 0;
	k->now = now;
	if (*field == '-') {
		k->reverse = 1;
		field++;
	}
	for (i = 0; field[i] && i < sizeof lower - 1; i++)
		lower[i] = (char)tolower((unsigned char)field[i]);
	lower[i] = '\0';
	if (strcmp(lower, "jobid") == 0)
		strcpy(lower, "id");
	for (i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strcmp(lower, known[i]) == 0)
			break;
	if (i == sizeof known / sizeof known[0])
		return gf_err_set(e, "cannot sort by '%s' (fields: id, name, "
		    "state, user, project, priority, gpus, submit, start, end, "
		    "time, expected; '-' in front reverses)", field);
	k->field = known[i];
	return 0;
}

static double num_key(const struct qjob *q, const char *field, double now)
{
	if (strcmp(field, "id") == 0)
		return (double)q->id;
	if (strcmp(field, "priority") == 0)
		return (double)q->priority;
	if (strcmp(field, "gpus") == 0)
		return (double)q->gpus;
	if (strcmp(field, "submit") == 0)
		return q->submit_time;
	if (strcmp(field, "start") == 0)
		return q->start_time;
	if (strcmp(field, "end") == 0)
		return q->end_time;
	if (strcmp(field, "expected") == 0)	/* unknown: after the known */
		return q->has_expected ? q->expected_start : 1e300;
	if (strcmp(field, "time") == 0)
		return q->start_time <= 0 ? 0 : (q->end_time > 0 ? q->end_time :
		    now) - q->start_time;
	return 0;
}

static const char *str_key(const struct qjob *q, const char *field)
{
	const char *s = strcmp(field, "name") == 0 ? q->name :
	    strcmp(field, "state") == 0 ? q->state :
	    strcmp(field, "user") == 0 ? q->user : q->project;

	return s ? s : "";
}

static int is_str_field(const char *f)
{
	return strcmp(f, "name") == 0 || strcmp(f, "state") == 0 ||
	    strcmp(f, "user") == 0 || strcmp(f, "project") == 0;
}

/* The order of two jobs (their views): by the field, then by id. */
static int cmp_qjobs(const struct qjob *x, const struct qjob *y,
    const struct sort_key *k)
{
	int c = 0;

	if (is_str_field(k->field)) {
		c = strcmp(str_key(x, k->field), str_key(y, k->field));
	} else {
		double dx = num_key(x, k->field, k->now);
		double dy = num_key(y, k->field, k->now);

		c = dx < dy ? -1 : dx > dy;
	}
	if (c == 0)
		c = x->id < y->id ? -1 : x->id > y->id;
	return k->reverse ? -c : c;
}

struct sorted_json {
	json_t *job;
	struct qjob q;
	struct sbuf scratch;
};

static int cmp_json(const void *a, const void *b, void *arg)
{
	return cmp_qjobs(&((const struct sorted_json *)a)->q,
	    &((const struct sorted_json *)b)->q, arg);
}

int queue_sort(json_t *jobs, const char *field, double now, struct gf_err *e)
{
	struct sort_key k;
	size_t i, n = json_array_size(jobs);
	struct sorted_json *v;

	if (sort_key_parse(field, now, &k, e) < 0)
		return -1;
	v = xcalloc(n + 1, sizeof *v);
	for (i = 0; i < n; i++) {
		v[i].job = json_incref(json_array_get(jobs, i));
		qjob_from_json(v[i].job, &v[i].q, &v[i].scratch);
	}
	qsort_r(v, n, sizeof *v, cmp_json, &k);
	json_array_clear(jobs);
	for (i = 0; i < n; i++) {
		json_array_append_new(jobs, v[i].job);
		sbuf_free(&v[i].scratch);
	}
	free(v);
	return 0;
}

void queue_limit(json_t *jobs, long long n)
{
	size_t size = json_array_size(jobs);

	if (n > 0)
		while (json_array_size(jobs) > (size_t)n)
			json_array_remove(jobs, json_array_size(jobs) - 1);
	else if (n < 0 && size > (size_t)-n)
		while (json_array_size(jobs) > (size_t)-n)
			json_array_remove(jobs, 0);
}

/* ---------- dependency tree ---------- */

struct tnode {
	size_t *kids;
	int *dotted; /* per kid: a redo/retry link */
	size_t nkids;
	int has_parent, done;
};

static long index_of(const json_t *jobs, int64_t id)
{
	size_t i;

	for (i = 0; i < json_array_size(jobs); i++)
		if (jint(json_array_get(jobs, i), "id", -1) == id)
			return (long)i;
	return -1;
}

static void add_kid(struct tnode *t, size_t parent, size_t kid, int dotted)
{
	struct tnode *p = &t[parent];
	size_t i;

	for (i = 0; i < p->nkids; i++)
		if (p->kids[i] == kid)
			return;
	p->kids = xrealloc(p->kids, (p->nkids + 1) * sizeof *p->kids);
	p->dotted = xrealloc(p->dotted, (p->nkids + 1) * sizeof *p->dotted);
	p->kids[p->nkids] = kid;
	p->dotted[p->nkids++] = dotted;
	t[kid].has_parent = 1;
}

struct tree_out {
	struct queue_tree_line *v;
	size_t n;
};

static void walk(struct tnode *t, size_t at, const char *indent,
    const char *conn, struct tree_out *out)
{
	struct sbuf pre = { 0 }, sub = { 0 };
	size_t i;

	t[at].done = 1;
	sbuf_adds(&pre, indent);
	sbuf_adds(&pre, conn);
	out->v = xrealloc(out->v, (out->n + 1) * sizeof *out->v);
	out->v[out->n].job = at;
	out->v[out->n++].prefix = sbuf_take(&pre);
	sbuf_adds(&sub, indent);
	if (*conn)
		sbuf_adds(&sub, strncmp(conn, "└", strlen("└")) == 0 ?
		    "  " : "│ ");
	for (i = 0; i < t[at].nkids; i++) {
		size_t k = t[at].kids[i], j;
		int last = 1;

		if (t[k].done)
			continue;
		for (j = i + 1; j < t[at].nkids; j++)
			if (!t[t[at].kids[j]].done)
				last = 0;
		walk(t, k, sbuf_str(&sub), t[at].dotted[i] ?
		    (last ? "└┈" : "├┈") : (last ? "└─" : "├─"), out);
	}
	sbuf_free(&sub);
}

struct queue_tree_line *queue_tree(const json_t *jobs, size_t *n)
{
	size_t nj = json_array_size(jobs), i, k;
	struct tnode *t = xcalloc(nj, sizeof *t);
	struct tree_out out = { NULL, 0 };

	for (i = 0; i < nj; i++) {
		const json_t *j = json_array_get(jobs, i);
		json_t *deps = json_object_get(j, "depends_on");
		const char *links[] = { "redo_of", "retry_of" };

		for (k = 0; k < json_array_size(deps); k++) {
			json_t *d = json_array_get(deps, k);
			long p = json_is_integer(d) ?
			    index_of(jobs, json_integer_value(d)) : -1;

			if (p >= 0 && (size_t)p != i)
				add_kid(t, (size_t)p, i, 0);
		}
		for (k = 0; k < 2; k++) {
			long p = jhas(j, links[k]) ?
			    index_of(jobs, jint(j, links[k], 0)) : -1;

			if (p >= 0 && (size_t)p != i)
				add_kid(t, (size_t)p, i, 1);
		}
	}
	for (i = 0; i < nj; i++)
		if (!t[i].has_parent && !t[i].done)
			walk(t, i, "", "", &out);
	for (i = 0; i < nj; i++) /* cycles: no root reaches them */
		if (!t[i].done)
			walk(t, i, "", "", &out);
	for (i = 0; i < nj; i++) {
		free(t[i].kids);
		free(t[i].dotted);
	}
	free(t);
	*n = out.n;
	return out.v;
}

void queue_tree_free(struct queue_tree_line *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(l[i].prefix);
	free(l);
}

/* ---------- the table ---------- */

static void add_job_row(struct table *t, const json_t *job,
    const enum qfield *f, size_t nf, double now, const char *prefix)
{
	char *cells[QUEUE_MAX_FIELDS] = { 0 };
	size_t i;

	for (i = 0; i < nf; i++) {
		cells[i] = queue_field_value(job, f[i], now);
		if (prefix && f[i] == QF_JOBID) {
			struct sbuf b = { 0 };

			sbuf_adds(&b, prefix);
			sbuf_adds(&b, cells[i]);
			free(cells[i]);
			cells[i] = sbuf_take(&b);
		}
	}
	table_add_row(t, (const char *const *)cells);
	for (i = 0; i < nf; i++)
		free(cells[i]);
}

struct table *queue_table(const json_t *jobs, const enum qfield *f, size_t nf,
    enum queue_layout layout, double now)
{
	static const char *const order[] = { "Running", "Queued", "Hold",
		"Finished", "Failed", "Cancelled", "Timeout" };
	const char *headers[QUEUE_MAX_FIELDS];
	struct table *t;
	size_t i, g, n;

	for (i = 0; i < nf; i++)
		headers[i] = queue_field_header(f[i]);
	t = table_new(nf, headers);
	if (layout == QUEUE_TREE) {
		struct queue_tree_line *l = queue_tree(jobs, &n);

		for (i = 0; i < n; i++)
			add_job_row(t, json_array_get(jobs, l[i].job), f, nf, now,
			    l[i].prefix);
		queue_tree_free(l, n);
	} else if (layout == QUEUE_GROUP) {
		char *used = xcalloc(json_array_size(jobs) + 1, 1);

		for (g = 0; g <= sizeof order / sizeof order[0]; g++) {
			const char *name = g < sizeof order / sizeof order[0] ?
			    order[g] : NULL;
			char title[64];

			for (i = 0, n = 0; i < json_array_size(jobs); i++) {
				const char *s = jstr(json_array_get(jobs, i),
				    "state");

				if (!used[i] && (!name || (s &&
				    strcmp(s, name) == 0)))
					n++;
			}
			if (!n)
				continue;
			snprintf(title, sizeof title, "== %s (%zu) ==",
			    name ? name : "Other", n);
			table_add_section(t, title);
			for (i = 0; i < json_array_size(jobs); i++) {
				const json_t *j = json_array_get(jobs, i);
				const char *s = jstr(j, "state");

				if (used[i] || (name && (!s ||
				    strcmp(s, name) != 0)))
					continue;
				used[i] = 1;
				add_job_row(t, j, f, nf, now, NULL);
			}
		}
		free(used);
	} else {
		for (i = 0; i < json_array_size(jobs); i++)
			add_job_row(t, json_array_get(jobs, i), f, nf, now, NULL);
	}
	return t;
}

/* ---------- the program ---------- */

enum {
	Q_ALL, Q_COMPLETED, Q_STATES, Q_JOBS, Q_USER, Q_NAME, Q_PROJECT,
	Q_LIMIT, Q_SINCE, Q_SORT, Q_TREE, Q_GROUP, Q_TMUX, Q_WATCH,
	Q_INTERVAL, Q_OUTPUT, Q_FORMAT, Q_CONFIG, Q_HELP, Q_VERSION,
	Q_CLUSTER, Q_START
};

static const struct opt_def queue_opts[] = {
	{ Q_ALL, "all", 'a', 0 }, { Q_COMPLETED, "completed", 'c', 0 },
	{ Q_STATES, "states", 's', 1 }, { Q_STATES, "state", 0, 1 },
	{ Q_JOBS, "jobs", 'j', 1 }, { Q_JOBS, "job", 0, 1 },
	{ Q_USER, "user", 'u', 1 },
	{ Q_USER, "users", 0, 1 }, { Q_NAME, "name", 'N', 1 },
	{ Q_NAME, "names", 0, 1 }, { Q_PROJECT, "project", 'P', 1 },
	{ Q_LIMIT, "limit", 'n', 1 }, { Q_SINCE, "since", 0, 1 },
	{ Q_SORT, "sort", 'r', 1 }, { Q_TREE, "tree", 't', 0 },
	{ Q_GROUP, "group", 'g', 0 }, { Q_TMUX, "tmux", 'T', 0 },
	{ Q_WATCH, "watch", 'w', 0 }, { Q_INTERVAL, "interval", 0, 1 },
	{ Q_OUTPUT, "output", 'o', 1 }, { Q_FORMAT, "format", 'f', 1 },
	{ Q_CONFIG, "config", 0, 1 }, { Q_HELP, "help", 'h', 0 },
	{ Q_VERSION, "version", 'V', 0 }, { Q_CLUSTER, "cluster", 0, 1 },
	{ Q_START, "start", 0, 0 },
};

static const char queue_help[] =
"usage: gqueue [options]\n"
"       gqueue completion bash|zsh|fish\n"
"\n"
"List jobs. By default: your active jobs (Queued, Hold, Running).\n"
"\n"
"  -a, --all               all states\n"
"  -c, --completed         ended jobs only (Finished, Failed, Cancelled,\n"
"                          Timeout)\n"
"  -s, --states LIST       states by name or code: Running,Queued or R,PD\n"
"                          (also --state)\n"
"  -j, --jobs IDS          these jobs (42, 1-5, 1,3,@), any state and user\n"
"                          (also --job)\n"
"  -u, --user USERS|all    these users' jobs (default: yours; --users)\n"
"  -N, --name NAMES        jobs with these names (comma list; --names)\n"
"  -P, --project P         jobs of this project\n"
"      --cluster NAME      jobs sent to Slurm cluster NAME (gbatch --cluster);\n"
"                          the state of cluster jobs is read from Slurm first\n"
"  -n, --limit N           the first N jobs; -N: the last N; 0: all\n"
"      --since TIME        submitted since: 1h, 30m, 2d, 3w, now-90s,\n"
"                          N minutes, today, yesterday,\n"
"                          HH:MM (today), YYYY-MM-DD[THH:MM]\n"
"  -r, --sort FIELD        id (default), name, state, user, project,\n"
"                          priority, gpus, submit, start, end, time,\n"
"                          expected (expected start); -FIELD: reversed\n"
"  -t, --tree              dependency tree (dotted lines: redo/retry)\n"
"  -g, --group             group by state\n"
"  -T, --tmux              only jobs with a live tmux session\n"
"      --start             when waiting jobs are expected to start (Queued,\n"
"                          Hold; earliest first): JOBID NAME USER ST\n"
"                          START_TIME NODES SCHEDNODES\n"
"  -w, --watch             redraw until Ctrl-C\n"
"      --interval N        seconds between redraws (default 2)\n"
"  -o, --output FORMAT     table (default), csv, or json (the job objects;\n"
"                          with -f: the chosen fields)\n"
"  -f, --format FIELDS     columns, e.g. JOBID,NAME,ST,NODES,NODELIST(REASON)\n"
"                          Fields: JOBID NAME ST STATE TIME NODES\n"
"                          NODELIST(REASON) TIMELIMIT MEMORY USER PROJECT\n"
"                          EXIT PRIORITY SUBMIT START END GPUMEM REASON\n"
"                          GPUIDS CLUSTER CPUS START_TIME SCHEDNODES\n"
"      --config PATH       config file: checked; times are shown in its\n"
"                          timezone\n"
"  -h, --help              this help\n"
"  -V, --version           print the version\n"
"\n"
"TIME is the run time (H:MM:SS or D-HH:MM:SS), NODES the GPUs asked for,\n"
"NODELIST(REASON) the GPU indices of a running job, else (why it waits).\n"
"START_TIME is a waiting job's expected start (N/A: not known), else when it\n"
"started; SCHEDNODES the GPUs a waiting job is expected to get.\n";

struct queue_opts {
	int all, completed, tree, group, tmux, watch, fields_given, start;
	const char *states, *jobs, *users, *names, *project, *since, *sort;
	const char *cluster;
	long long limit;
	int64_t interval;
	enum table_fmt fmt;
	enum qfield f[QUEUE_MAX_FIELDS];
	size_t nf;
};

/* The job fields each column reads (besides id, state and st). */
static const char *const field_keys[QF_COUNT] = {
	[QF_JOBID] = "", [QF_NAME] = "name", [QF_ST] = "", [QF_STATE] = "",
	[QF_TIME] = "start_time,end_time", [QF_NODES] = "gpus",
	[QF_NODELIST] = "reason,gpu_ids", [QF_TIMELIMIT] = "time_limit_secs",
	[QF_MEMORY] = "memory_mb", [QF_GPUMEM] = "gpu_memory_mb",
	[QF_USER] = "user,uid", [QF_PROJECT] = "project",
	[QF_EXIT] = "exit_code,exit_signal", [QF_PRIORITY] = "priority",
	[QF_SUBMIT] = "submit_time", [QF_START] = "start_time",
	[QF_END] = "end_time", [QF_REASON] = "reason,gpu_usage,gpu_memory_mb,idle_secs,idle_warned",
	[QF_GPUIDS] = "gpu_ids",
	[QF_CLUSTER] = "cluster",
	[QF_CPUS] = "cpus",
};

/* Does the listing show expected starts? They come only with start=1 in
 * whole job objects (not with fields=). */
static int needs_start(const struct queue_opts *q)
{
	size_t i;

	if (q->start || (q->sort && strcasecmp(q->sort + (*q->sort == '-'),
	    "expected") == 0))
		return 1;
	for (i = 0; i < q->nf; i++)
		if (q->f[i] == QF_START_TIME || q->f[i] == QF_SCHEDNODES)
			return 1;
	return 0;
}

/* Ask the daemon for only the fields this listing shows (and sorts by):
 * building and parsing the rest is most of the cost of a long list. JSON
 * output of whole jobs gets everything. */
static void add_fields_param(const struct queue_opts *q, struct sbuf *qs)
{
	struct sbuf f = { 0 };
	size_t i;

	if ((q->fmt == TABLE_JSON && !q->fields_given) || needs_start(q))
		return;
	sbuf_adds(&f, "id,state,st");
	for (i = 0; i < q->nf; i++)
		if (field_keys[q->f[i]] && *field_keys[q->f[i]])
			sbuf_addf(&f, ",%s", field_keys[q->f[i]]);
	if (q->tree)
		sbuf_adds(&f, ",name,depends_on,redo_of,retry_of");
	if (q->tmux)
		sbuf_adds(&f, ",tmux_session,tmux_socket");
	if (q->cluster)
		sbuf_adds(&f, ",cluster");
	if (q->sort)	/* what cmp_qjobs may read */
		sbuf_adds(&f, ",name,user,project,priority,gpus,submit_time,"
		    "start_time,end_time");
	url_add_param(qs, "fields", sbuf_str(&f));
	sbuf_free(&f);
}

static int build_query(const struct queue_opts *q, struct sbuf *path,
    struct gf_err *e)
{
	struct sbuf qs = { 0 };
	char *states = NULL;
	time_t since;

	if (q->start && !q->states) {
		url_add_param(&qs, "states", "Queued,Hold");
	} else if (q->states) {
		states = queue_states_param(q->states, e);
		if (!states)
			return -1;
		url_add_param(&qs, "states", states);
		free(states);
	} else if (q->completed) {
		url_add_param(&qs, "states", "Finished,Failed,Cancelled,Timeout");
	} else if (!q->all && !q->jobs) {
		url_add_param(&qs, "active", "1");
	}
	if (q->users)
		url_add_param(&qs, "users", q->users);
	else if (q->jobs)
		url_add_param(&qs, "users", "all");
	if (q->jobs)
		url_add_param(&qs, "ids", q->jobs);
	if (q->names)
		url_add_param(&qs, "names", q->names);
	if (q->project)
		url_add_param(&qs, "project", q->project);
	if (q->since) {
		char buf[32];

		if (gf_parse_since(q->since, time(NULL), &since, e) < 0) {
			sbuf_free(&qs);
			return -1;
		}
		snprintf(buf, sizeof buf, "%lld", (long long)since);
		url_add_param(&qs, "since", buf);
	}
	if (needs_start(q))
		url_add_param(&qs, "start", "1");
	add_fields_param(q, &qs);
	sbuf_adds(path, "/jobs");
	sbuf_adds(path, sbuf_str(&qs));
	sbuf_free(&qs);
	return 0;
}

/* Keep only jobs whose tmux session is alive (on its job's tmux server;
 * listed again only when the server changes from one job to the next). */
static void filter_tmux(json_t *jobs)
{
	size_t n = 0, i = 0;
	char **live = NULL, *listed = NULL;
	int have = 0;

	while (i < json_array_size(jobs)) {
		const json_t *j = json_array_get(jobs, i);
		const char *s = jstr(j, "tmux_session"), *sock = jstr(j, "tmux_socket");

		if (s && (!have || (sock ? !listed || strcmp(sock, listed) : listed != NULL))) {
			strv_free(live, n);
			free(listed);
			listed = sock ? xstrdup(sock) : NULL;
			live = tmux_session_names(sock, &n);
			have = 1;
		}
		if (s && strv_contains(live, n, s))
			i++;
		else
			json_array_remove(jobs, i);
	}
	strv_free(live, n);
	free(listed);
}

/* One screen: the whole output as text. */
static char *render(const struct queue_opts *q, struct gf_err *e)
{
	struct sbuf path = { 0 };
	json_t *resp, *jobs;
	struct table *t;
	char *text;
	double now;

	if (build_query(q, &path, e) < 0)
		return NULL;
	remote_sync(PROG, q->cluster, 0);	/* Slurm's word on cluster jobs */
	resp = api_get(path.p, e);
	sbuf_free(&path);
	if (!resp)
		return NULL;
	now = (double)time(NULL);
	jobs = json_object_get(resp, "jobs");
	if (!json_is_array(jobs)) {
		json_decref(resp);
		gf_err_set(e, "gflowd's job list has no \"jobs\" array");
		return NULL;
	}
	if (q->tmux)
		filter_tmux(jobs);
	for (size_t i = 0; q->cluster && i < json_array_size(jobs);) {
		const char *c = jstr(json_array_get(jobs, i), "cluster");

		if (c && !strcmp(c, q->cluster))
			i++;
		else
			json_array_remove(jobs, i);
	}
	if ((q->sort || q->start) && queue_sort(jobs, q->sort ? q->sort :
	    "expected", now, e) < 0) {
		json_decref(resp);
		return NULL;
	}
	queue_limit(jobs, q->limit);
	if (q->fmt == TABLE_JSON && !q->fields_given) {
		char *s = json_dumps(jobs, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		struct sbuf b = { 0 };

		sbuf_adds(&b, s ? s : "[]");
		sbuf_addc(&b, '\n');
		free(s);
		json_decref(resp);
		return sbuf_take(&b);
	}
	t = queue_table(jobs, q->f, q->nf, q->fmt != TABLE_TEXT ? QUEUE_FLAT :
	    q->tree ? QUEUE_TREE : q->group ? QUEUE_GROUP : QUEUE_FLAT, now);
	text = table_render(t, q->fmt);
	table_free(t);
	json_decref(resp);
	return text;
}

/* ---------- the list as a stream ---------- */

/* A kept row: its sort key (strings in the keys buffer) and cells. */
struct kept {
	struct qjob key;
	size_t str, cells;	/* offsets in the lister's keys and all */
};

struct lister {
	const struct queue_opts *q;
	FILE *to;
	struct table_out *out;
	struct qstream in;
	struct sbuf cells;
	long long shown;
	double now;
	struct gf_err *e;
	struct sort_key sort;
	struct kept *kept;
	size_t nkept, capkept;
	struct sbuf keys, all;
};

/* The common listing — flat, in the daemon's order, no filter of the
 * client's own — is printed as the answer arrives: each job's cells are
 * made from its object and the object forgotten (qstream.c); only a text
 * table keeps the escaped cells until it knows the widths. */
static int streamable(const struct queue_opts *q)
{
	int whole_json = q->fmt == TABLE_JSON && !q->fields_given;

	return !q->tmux && !q->cluster && !q->tree && !q->group &&
	    !needs_start(q) && !((q->sort || q->limit < 0) && whole_json);
}

/* --sort or -n -N: the rows are kept (their cells and the sort key) until
 * the list is over. */
static int collecting(const struct queue_opts *q)
{
	return q->sort || q->limit < 0;
}

/* -o json (the job objects): each object as json_dumps indents it inside
 * the array — read and dumped by jval one job at a time, its lines
 * indented one level (a dumped string holds no raw newline). */
static int json_job(const char *p, size_t n, void *arg)
{
	struct lister *l = arg;
	json_error_t je;
	json_t *o;
	char *text;

	if (l->q->limit > 0 && l->shown >= l->q->limit)
		return 0;
	if (!(o = json_loadb(p, n, 0, &je)))
		return -1;
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return -1;
	fputs(l->shown++ ? ",\n  " : "[\n  ", l->to);
	for (const char *c = text; *c; c++) {
		const char *nl = strchr(c, '\n');

		if (!nl) {
			fputs(c, l->to);
			break;
		}
		fwrite(c, 1, (size_t)(nl - c + 1), l->to);
		fputs("  ", l->to);
		c = nl;
	}
	free(text);
	return 0;
}

static void list_row(const struct qjob *job, void *arg)
{
	struct lister *l = arg;
	const char *cells[QUEUE_MAX_FIELDS];
	size_t at[QUEUE_MAX_FIELDS], i;

	if (!collecting(l->q) && l->q->limit > 0 && l->shown >= l->q->limit)
		return;
	l->shown++;
	if (collecting(l->q)) {
		struct kept *k;

		if (l->nkept == l->capkept) {
			l->capkept = l->capkept ? l->capkept * 2 : 1024;
			l->kept = xrealloc(l->kept, l->capkept * sizeof *l->kept);
		}
		k = &l->kept[l->nkept++];
		k->key = *job;
		k->str = l->keys.len;
		sbuf_adds(&l->keys, l->q->sort && is_str_field(l->sort.field) ?
		    str_key(job, l->sort.field) : "");
		sbuf_addc(&l->keys, '\0');
		k->cells = l->all.len;
		for (i = 0; i < l->q->nf; i++) {
			qjob_cell(job, l->q->f[i], l->now, &l->all);
			sbuf_addc(&l->all, '\0');
		}
		return;
	}
	l->cells.len = 0;
	for (i = 0; i < l->q->nf; i++) {
		at[i] = l->cells.len;
		qjob_cell(job, l->q->f[i], l->now, &l->cells);
		sbuf_addc(&l->cells, '\0');
	}
	for (i = 0; i < l->q->nf; i++)
		cells[i] = l->cells.p + at[i];
	table_out_row(l->out, cells);
}

static int list_bytes(const char *p, size_t n, void *arg)
{
	struct lister *l = arg;

	if (qstream_feed(&l->in, p, n) < 0)
		return gf_err_set(l->e, "%s", qstream_error(&l->in));
	/* -n N in the daemon's order: enough */
	return !collecting(l->q) && l->q->limit > 0 && l->shown >= l->q->limit;
}

static int cmp_kept(const void *a, const void *b, void *arg)
{
	return cmp_qjobs(&((const struct kept *)a)->key,
	    &((const struct kept *)b)->key, arg);
}

/* The kept rows sorted and limited as queue_sort and queue_limit do. */
static void put_kept(struct lister *l)
{
	const char *cells[QUEUE_MAX_FIELDS];
	size_t i, j, from = 0, to = l->nkept;

	for (i = 0; i < l->nkept; i++) {	/* the buffers are whole now */
		struct qjob *k = &l->kept[i].key;

		k->name = k->state = k->user = k->project = l->keys.p +
		    l->kept[i].str;
	}
	if (l->q->sort)
		qsort_r(l->kept, l->nkept, sizeof *l->kept, cmp_kept, &l->sort);
	if (l->q->limit > 0 && (size_t)l->q->limit < to)
		to = (size_t)l->q->limit;
	else if (l->q->limit < 0 && (size_t)-l->q->limit < to)
		from = to - (size_t)-l->q->limit;
	for (i = from; i < to; i++) {
		const char *c = l->all.p + l->kept[i].cells;

		for (j = 0; j < l->q->nf; j++) {
			cells[j] = c;
			c += strlen(c) + 1;
		}
		table_out_row(l->out, cells);
	}
}

/* A text list longer than this is written as it comes: its widths are
 * those of the first rows (and widen where a later cell needs it). */
#define QUEUE_FLOW_ROWS 1000

static int stream_list(const struct queue_opts *q, FILE *to, struct gf_err *e)
{
	const char *headers[QUEUE_MAX_FIELDS];
	struct lister l = { .q = q, .to = to, .now = (double)time(NULL), .e = e };
	struct sbuf path = { 0 };
	int rc;
	size_t i;

	if (build_query(q, &path, e) < 0)
		return -1;
	if (q->sort && sort_key_parse(q->sort, l.now, &l.sort, e) < 0) {
		sbuf_free(&path);
		return -1;
	}
	remote_sync(PROG, q->cluster, 0);	/* Slurm's word on cluster jobs */
	for (i = 0; i < q->nf; i++)
		headers[i] = queue_field_header(q->f[i]);
	if (q->fmt == TABLE_JSON && !q->fields_given) {	/* the job objects */
		qstream_init(&l.in, NULL, &l);
		l.in.raw = json_job;
	} else {
		qstream_init(&l.in, list_row, &l);
		l.out = table_out_new(q->fmt, q->nf, headers, to);
		/* a long list on the screen: its first rows at once (issue 31) */
		if (to == stdout && !collecting(q))
			table_out_flow(l.out, QUEUE_FLOW_ROWS);
	}
	rc = api_get_stream(path.p, list_bytes, &l, e);
	if (rc == 0 && !(!collecting(q) && q->limit > 0 && l.shown >= q->limit) &&
	    qstream_end(&l.in) < 0)
		rc = gf_err_set(e, "%s", qstream_error(&l.in));
	if (rc == 0 && !l.out)
		fputs(l.shown ? "\n]\n" : "[]\n", to);
	if (rc == 0 && l.out && collecting(q))
		put_kept(&l);
	if (rc == 0 && l.out)
		table_out_end(l.out);
	else if (l.out)
		table_out_free(l.out);
	free(l.kept);
	sbuf_free(&l.keys);
	sbuf_free(&l.all);
	qstream_free(&l.in);
	sbuf_free(&l.cells);
	sbuf_free(&path);
	return rc;
}

/* One screen of a streamed list, as text (NULL and e on failure). */
static char *stream_text(const struct queue_opts *q, struct gf_err *e)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	if (!mem) {
		gf_err_set(e, "out of memory");
		return NULL;
	}
	rc = stream_list(q, mem, e);
	fclose(mem);
	if (rc < 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int watch(const struct queue_opts *q)
{
	struct gf_err e;

	for (;;) {
		char *text = streamable(q) ? stream_text(q, &e) : render(q, &e),
		    stamp[64];
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
		printf("\033[H\033[2JEvery %llds: gqueue    %s\n\n",
		    (long long)q->interval, stamp);
		if (text) {
			fputs(text, stdout);
		} else {
			text = fmt_escaped(e.msg);
			printf("%s: %s\n", PROG, text);
		}
		fflush(stdout);
		free(text);
		sleep((unsigned)q->interval);
	}
	return EXIT_OK;
}

/* --start: the waiting jobs (Slurm's squeue --start lists pending ones),
 * in Slurm's columns unless -f chose others; what makes no sense with it
 * is refused. */
static int start_opts(struct queue_opts *q, struct gf_err *e)
{
	static const char *const waiting[] = { "Queued", "Hold" };
	const char *bad = q->all ? "-a (all states)" : q->completed ?
	    "-c (ended jobs)" : q->tree ? "-t (dependency tree)" : q->tmux ?
	    "-T (live tmux sessions: a waiting job has none)" : q->cluster ?
	    "--cluster (Slurm's own: squeue --start)" : NULL;

	if (bad)
		return gf_err_set(e, "--start lists waiting jobs; it does not go "
		    "with %s", bad);
	if (q->states) {
		char *s = queue_states_param(q->states, e), *p, *save = NULL;
		int rc = 0;

		if (!s)
			return -1;
		for (p = strtok_r(s, ",", &save); p && !rc;
		    p = strtok_r(NULL, ",", &save))
			if (strcmp(p, waiting[0]) && strcmp(p, waiting[1]))
				rc = gf_err_set(e, "--start lists waiting jobs "
				    "(Queued, Hold); -s %s is not one", p);
		free(s);
		if (rc < 0)
			return -1;
	}
	if (!q->fields_given)
		queue_parse_fields("JOBID,NAME,USER,ST,START_TIME,NODES,"
		    "SCHEDNODES", q->f, &q->nf, NULL);
	return 0;
}

static int parse_queue_opts(int argc, char **argv, struct queue_opts *q,
    int *done, struct gf_err *e)
{
	struct opt_parser p;
	const char *val;
	int id;

	memset(q, 0, sizeof *q);
	q->interval = 2;
	queue_parse_fields("JOBID,NAME,ST,TIME,NODES,NODELIST(REASON)", q->f,
	    &q->nf, NULL);
	*done = 0;
	opt_init(&p, argc, argv, 1, queue_opts,
	    sizeof queue_opts / sizeof queue_opts[0], 1);
	while ((id = opt_next(&p, &val, e)) != OPT_END) {
		int64_t n;

		switch (id) {
		case OPT_ERROR:
			return -1;
		case OPT_POSITIONAL:
			return gf_err_set(e, "unexpected argument '%s'", val);
		case Q_ALL: q->all = 1; break;
		case Q_COMPLETED: q->completed = 1; break;
		case Q_STATES: {
			char *s = queue_states_param(val, e);

			if (!s)
				return -1;
			free(s);
			q->states = val;
			break;
		}
		case Q_JOBS: {
			struct gf_jobref_list l;

			if (gf_parse_jobref_list(val, &l, e) < 0)
				return -1;
			gf_jobref_list_free(&l);
			q->jobs = val;
			break;
		}
		case Q_USER: q->users = val; break;
		case Q_NAME: q->names = val; break;
		case Q_PROJECT: q->project = val; break;
		case Q_CLUSTER: q->cluster = val; break;
		case Q_LIMIT:
			if (gf_parse_int_range(val, -1000000000, 1000000000,
			    "limit", &n, e) < 0)
				return -1;
			q->limit = n;
			break;
		case Q_SINCE: {
			time_t t;

			if (gf_parse_since(val, time(NULL), &t, e) < 0)
				return -1;
			q->since = val;
			break;
		}
		case Q_SORT: {
			json_t *empty = json_array();
			int rc = queue_sort(empty, val, 0, e);

			json_decref(empty);
			if (rc < 0)
				return -1;
			q->sort = val;
			break;
		}
		case Q_TREE: q->tree = 1; break;
		case Q_GROUP: q->group = 1; break;
		case Q_TMUX: q->tmux = 1; break;
		case Q_START: q->start = 1; break;
		case Q_WATCH: q->watch = 1; break;
		case Q_INTERVAL:
			if (gf_parse_int_range(val, 1, 86400, "interval",
			    &q->interval, e) < 0)
				return -1;
			break;
		case Q_OUTPUT:
			if (table_parse_format(val, &q->fmt, e) < 0)
				return -1;
			break;
		case Q_FORMAT:
			if (queue_parse_fields(val, q->f, &q->nf, e) < 0)
				return -1;
			q->fields_given = 1;
			break;
		case Q_CONFIG:
			if (cmd_check_config(val, e) < 0)
				return -1;
			break;
		case Q_HELP:
			fputs(queue_help, stdout);
			*done = 1;
			return 0;
		case Q_VERSION:
			cmd_version();
			*done = 1;
			return 0;
		}
	}
	if (q->tree && q->group)
		return gf_err_set(e, "choose -t (tree) or -g (group), not both");
	return q->start ? start_opts(q, e) : 0;
}

static int queue_exec(int argc, char **argv)
{
	struct queue_opts q;
	struct gf_err e = { "" };
	char *text;
	int done;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_queue, argc - 1, argv + 1);
	if (parse_queue_opts(argc, argv, &q, &done, &e) < 0)
		return cmd_usage_error(PROG, &e);
	if (done)
		return EXIT_OK;
	if (q.watch)
		return watch(&q);
	if (streamable(&q))
		return stream_list(&q, stdout, &e) < 0 ? cmd_fail(PROG, &e) :
		    EXIT_OK;
	text = render(&q, &e);
	if (!text)
		return cmd_fail(PROG, &e);
	fputs(text, stdout);
	free(text);
	return EXIT_OK;
}

const struct command cmd_queue = {
	"queue", "gqueue", "list jobs", queue_exec,
	"completion --all -a --completed -c --states -s --state --jobs -j --job --user -u --users "
	"--cluster --name -N --names --project -P --limit -n --since --sort -r --tree -t "
	"--group -g --tmux -T --start --watch -w --interval --output -o --format -f "
	"--config --help --version",
};
