/* mcptools.c — the tools of `gflow mcp serve` (see mcp.h): each reads or
 * changes the scheduler through the daemon's API, as the user who runs it,
 * and returns a JSON object; previews change nothing. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "clock.h"
#include "format.h"
#include "home.h"
#include "http.h"
#include "job.h"
#include "mcp.h"
#include "parse.h"
#include "rlimits.h"
#include "util.h"

extern char **environ;

#define JOB_ID "{\"type\":[\"integer\",\"string\"],\"description\":\"a job id, or \\\"@\\\" (your newest job), \\\"@~N\\\" (N jobs before it)\"}"

/* The job fields agents see in lists. */
#define LIST_FIELDS "id,name,user,state,reason,gpus,gpu_ids,priority,project,submit_time,start_time,end_time,exit_code,time_limit_secs"

static double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A job reference argument, as the API takes it (an id or "@", "@~N"). */
static json_t *ref_arg(json_t *v, struct gf_err *e)
{
	struct gf_jobref r;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 1)
			return gf_err_set(e, "job_id must be a positive id"), NULL;
		return json_integer(json_integer_value(v));
	}
	if (gf_parse_jobref(json_string_value(v), &r, e) < 0)
		return NULL;
	return jobref_json(&r);
}

/* GET one job (full object; owner's view or public fields). */
static json_t *fetch(json_t *v, struct gf_err *e)
{
	char num[32];

	if (json_is_integer(v)) {
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
		return fetch_job(num, e);
	}
	return fetch_job(json_string_value(v), e);
}

/* A log's bytes as a JSON string; bytes that are not UTF-8 are escaped. */
static json_t *log_text(const char *p, size_t l)
{
	json_t *text = json_stringn(p, l);

	if (!text) {
		size_t need = gf_escape(NULL, 0, p, l, 0);
		char *esc = xmalloc(need + 1);

		gf_escape(esc, need + 1, p, l, 0);
		text = json_string(esc);
		free(esc);
	}
	return text;
}

/* The last n lines of a job's log (an array of strings), or NULL with e;
 * *end (when not NULL): the byte after the last one read. */
static json_t *log_tail_at(const json_t *job, long long n, long long *end, struct gf_err *e)
{
	const char *path = jstr(job, "log_path");
	char *buf;
	json_t *lines = json_array();
	off_t off;
	ssize_t k;
	size_t len = 0, cap = 65536;
	int fd;

	if (!path)	/* the daemon shows a log's path to its owner and admins only */
		return json_decref(lines), gf_err_set(e, "job %lld belongs to %s; only %s or an admin may read its log",
		    (long long)jint(job, "id", 0), jstr(job, "user") ? jstr(job, "user") : "another user",
		    jstr(job, "user") ? jstr(job, "user") : "its owner"), NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		const char *st = jstr(job, "state");

		json_decref(lines);
		if (st && (!strcmp(st, "Queued") || !strcmp(st, "Hold")))
			return gf_err_set(e, "job %lld has not started: no log yet", (long long)jint(job, "id", 0)), NULL;
		return gf_err_set(e, "cannot read the log %s: %s", path, strerror(errno)), NULL;
	}
	off = job_last_lines_offset(fd, n);
	buf = xmalloc(cap);
	while (off >= 0 && (k = pread(fd, buf + len, cap - len - 1, off + (off_t)len)) > 0) {
		len += (size_t)k;
		if (len + 1 == cap)
			buf = xrealloc(buf, cap *= 2);
		if (len > (8u << 20))
			break;
	}
	close(fd);
	buf[len] = '\0';
	if (end)
		*end = off >= 0 ? (long long)off + (long long)len : 0;
	for (char *p = buf; *p;) {
		size_t l = strcspn(p, "\n");

		json_array_append_new(lines, log_text(p, l));
		p += l + (p[l] == '\n');
	}
	free(buf);
	return lines;
}

static json_t *log_tail(const json_t *job, long long n, struct gf_err *e)
{
	return log_tail_at(job, n, NULL, e);
}

/* ---- read-only tools ------------------------------------------------------ */

static json_t *t_health(json_t *a, struct gf_err *e)
{
	json_t *h, *i;

	(void)a;
	if (!(h = api_get("/health", e)))
		return NULL;
	if ((i = api_get("/info", e))) {
		json_object_set(h, "mode", json_object_get(i, "mode"));
		json_object_set(h, "socket", json_object_get(i, "socket"));
		json_object_set(h, "executor", json_object_get(i, "executor"));
		json_object_set(h, "jobs", json_object_get(i, "jobs"));
		json_object_set_new(h, "uptime_secs", json_real(now_secs() - jnum(i, "started_at", now_secs())));
		json_decref(i);
	}
	return h;
}

static json_t *t_info(json_t *a, struct gf_err *e)
{
	(void)a;
	return api_get("/info", e);
}

static void add_csv_param(struct sbuf *q, const char *key, json_t *v)
{
	struct sbuf s = { 0 };
	size_t i;
	json_t *it;

	if (!v)
		return;
	if (json_is_string(v))
		sbuf_adds(&s, json_string_value(v));
	json_array_foreach(v, i, it) {
		if (i)
			sbuf_addc(&s, ',');
		sbuf_adds(&s, json_string_value(it));
	}
	url_add_param(q, key, sbuf_str(&s));
	sbuf_free(&s);
}

/* A listed job as agents see it: LIST_FIELDS, and a waiting job's
 * expected start. start=1 gives whole job objects (not with fields=), so
 * the rest is left out here. */
static json_t *list_view(const json_t *job)
{
	static const char fields[] = LIST_FIELDS ",expected_start,expected_gpus,expected_start_note";
	json_t *out = json_object(), *v;
	char key[64];

	for (const char *p = fields; *p;) {
		size_t n = strcspn(p, ",");

		snprintf(key, sizeof key, "%.*s", (int)n, p);
		if ((v = json_object_get(job, key)))
			json_object_set(out, key, v);
		p += n + (p[n] == ',');
	}
	return out;
}

static json_t *t_list(json_t *a, struct gf_err *e)
{
	struct sbuf q = { 0 };
	json_t *resp, *jobs, *out, *shown;
	int64_t limit = json_is_integer(json_object_get(a, "limit")) ? json_integer_value(json_object_get(a, "limit")) : 50;
	size_t n;

	sbuf_adds(&q, "/jobs");
	add_csv_param(&q, "states", json_object_get(a, "states"));
	add_csv_param(&q, "users", json_object_get(a, "users"));
	add_csv_param(&q, "ids", json_object_get(a, "ids"));
	add_csv_param(&q, "names", json_object_get(a, "names"));
	if (jstr(a, "project"))
		url_add_param(&q, "project", jstr(a, "project"));
	if (jbool(a, "active", 0))
		url_add_param(&q, "active", "1");
	url_add_param(&q, "start", "1");	/* waiting jobs' expected starts */
	resp = api_get(q.p, e);
	sbuf_free(&q);
	if (!resp)
		return NULL;
	jobs = json_object_get(resp, "jobs");
	n = json_array_size(jobs);
	out = json_pack("{s:I,s:I}", "total", (json_int_t)n, "shown", (json_int_t)(n < (size_t)limit ? n : (size_t)limit));
	shown = json_array();
	for (size_t i = n > (size_t)limit ? n - (size_t)limit : 0; i < n; i++)	/* the newest `limit` */
		json_array_append_new(shown, list_view(json_array_get(jobs, i)));
	json_object_set_new(out, "jobs", shown);
	json_decref(resp);
	return out;
}

static json_t *t_job(json_t *a, struct gf_err *e)
{
	json_t *j = fetch(json_object_get(a, "job_id"), e);

	return j ? json_pack("{s:o}", "job", j) : NULL;
}

/* Where an incomplete UTF-8 character at the end of p[0..n) starts, so that
 * the next read begins with it; n when the end is whole. */
static size_t utf8_whole(const char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = (unsigned char)p[n - k];

		if ((c & 0xC0) == 0x80)
			continue;	/* a continuation byte: look further back */
		if (c >= 0xC0 && n - k + (c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2) > n)
			return n - k;
		return n;
	}
	return n;
}

/* The log from byte `offset` on, at most `bytes` of it, as the daemon
 * serves it (to the job's owner or an admin). */
static json_t *log_part(json_t *j, long long offset, long long bytes, struct gf_err *e)
{
	char target[128];
	struct http_resp r = { 0 };
	size_t n;
	json_t *out;

	snprintf(target, sizeof target, "/jobs/%lld/log?offset=%lld&bytes=%lld", (long long)jint(j, "id", 0), offset,
	    bytes);
	if (http_request(NULL, "GET", target, NULL, 0, &r, e) < 0)
		return NULL;
	if (r.status != 200) {
		json_t *err = json_loadb(r.body, r.len, 0, NULL);

		if (jstr(err, "error"))
			gf_err_set(e, "%s", jstr(err, "error"));
		else
			gf_err_set(e, "gflowd answered %d to GET %s", r.status, target);
		json_decref(err);
		http_resp_free(&r);
		return NULL;
	}
	n = r.len < (size_t)bytes ? r.len : utf8_whole(r.body, r.len);
	out = json_pack("{s:I,s:O?,s:I,s:I,s:I,s:b,s:o}", "id", (json_int_t)jint(j, "id", 0), "state",
	    json_object_get(j, "state"), "offset", (json_int_t)offset, "next_offset", (json_int_t)(offset + (long long)n),
	    "bytes", (json_int_t)n, "more", r.len >= (size_t)bytes || !state_is_ended(jstr(j, "state")), "text",
	    log_text(r.body, n));
	http_resp_free(&r);
	return out;
}

static json_t *t_log(json_t *a, struct gf_err *e)
{
	json_t *j, *lines, *out;
	long long end = 0;

	if (json_object_get(a, "lines") && json_object_get(a, "offset"))
		return gf_err_set(e, "lines (the log's end) and offset (the log from a byte on) exclude each other"),
		    NULL;
	if (json_object_get(a, "bytes") && !json_object_get(a, "offset"))
		return gf_err_set(e, "bytes needs offset (the byte to start at; 0 is the log's start)"), NULL;
	if (!(j = fetch(json_object_get(a, "job_id"), e)))
		return NULL;
	if (json_object_get(a, "offset")) {
		out = log_part(j, jint(a, "offset", 0), jint(a, "bytes", 65536), e);
		json_decref(j);
		return out;
	}
	lines = log_tail_at(j, jint(a, "lines", 100), &end, e);
	if (!lines)
		return json_decref(j), NULL;
	out = json_pack("{s:I,s:O?,s:O?,s:o,s:I}", "id", (json_int_t)jint(j, "id", 0), "state", json_object_get(j, "state"),
	    "log_path", json_object_get(j, "log_path"), "lines", lines, "next_offset", (json_int_t)end);
	json_decref(j);
	return out;
}

static json_t *t_stats(json_t *a, struct gf_err *e)
{
	struct sbuf q = { 0 };
	json_t *resp, *jobs, *j, *by = json_object(), *out;
	double now = now_secs(), wait = 0, run = 0, gpu_s = 0;
	long long nwait = 0, nrun = 0, ok = 0, bad = 0, gpus_now = 0;
	size_t i;

	sbuf_adds(&q, "/jobs");
	if (jbool(a, "all_users", 0))
		url_add_param(&q, "users", "all");
	else if (jstr(a, "user"))
		url_add_param(&q, "users", jstr(a, "user"));
	url_add_param(&q, "fields", "state,gpus,submit_time,start_time,end_time");
	resp = api_get(q.p, e);
	sbuf_free(&q);
	if (!resp)
		return json_decref(by), NULL;
	jobs = json_object_get(resp, "jobs");
	json_array_foreach(jobs, i, j) {
		const char *st = jstr(j, "state");
		double sub = jnum(j, "submit_time", 0), start = jnum(j, "start_time", 0), end = jnum(j, "end_time", 0);

		if (!st)
			continue;
		json_object_set_new(by, st, json_integer(jint(by, st, 0) + 1));
		ok += !strcmp(st, "Finished");
		bad += !strcmp(st, "Failed") || !strcmp(st, "Timeout");
		if (start > 0 && sub > 0)
			wait += start - sub, nwait++;
		if (start > 0 && end > 0)
			run += end - start, nrun++;
		if (start > 0)
			gpu_s += (double)jint(j, "gpus", 0) * ((end > 0 ? end : now) - start);
		if (!strcmp(st, "Running"))
			gpus_now += jint(j, "gpus", 0);
	}
	out = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:f,s:I}", "scope",
	    jbool(a, "all_users", 0) ? "all users" : jstr(a, "user") ? jstr(a, "user") : "your jobs", "jobs",
	    (json_int_t)json_array_size(jobs), "by_state", by, "success_rate",
	    ok + bad ? json_real((double)ok / (double)(ok + bad)) : json_null(), "avg_wait_secs",
	    nwait ? json_real(wait / (double)nwait) : json_null(), "avg_run_secs",
	    nrun ? json_real(run / (double)nrun) : json_null(), "gpu_hours", gpu_s / 3600.0, "gpus_in_use",
	    (json_int_t)gpus_now);
	json_object_set_new(out, "success_rate_means", json_string("Finished / (Finished + Failed + Timeout)"));
	json_decref(resp);
	return out;
}

static json_t *t_reservations(json_t *a, struct gf_err *e)
{
	json_t *r;

	(void)a;
	if ((r = api_get("/reservations", e)))
		return r;
	if (strstr(e->msg, "no such endpoint"))
		gf_err_set(e, "this gflowd does not support GPU reservations (it has no /reservations endpoint)");
	return NULL;
}

static json_t *t_pressure(json_t *a, struct gf_err *e)
{
	json_t *resp, *gpus, *j, *g, *reasons = json_object(), *users = json_object(), *out, *oldest = json_null();
	long long queued = 0, held = 0, running = 0, want = 0, idle = 0, busy = 0, total = 0;
	double now = now_secs(), first = 0;
	size_t i;

	(void)a;
	resp = api_get("/jobs?users=all&active=1&fields=id,user,state,reason,gpus,submit_time", e);
	if (!resp || !(gpus = api_get("/gpus", e))) {
		json_decref(resp);
		json_decref(reasons);
		json_decref(users);
		return NULL;
	}
	json_array_foreach(json_object_get(resp, "jobs"), i, j) {
		const char *st = jstr(j, "state"), *who = jstr(j, "user") ? jstr(j, "user") : "?";
		json_t *u = json_object_get(users, who);

		if (!u)
			json_object_set_new(users, who, u = json_pack("{s:i,s:i,s:i}", "queued", 0, "running", 0,
			    "gpus_running", 0));
		if (!st)
			continue;
		if (!strcmp(st, "Queued")) {
			const char *r = jstr(j, "reason") ? jstr(j, "reason") : "Eligible";

			queued++, want += jint(j, "gpus", 0);
			json_object_set_new(reasons, r, json_integer(jint(reasons, r, 0) + 1));
			json_object_set_new(u, "queued", json_integer(jint(u, "queued", 0) + 1));
			if (!first || jnum(j, "submit_time", now) < first) {
				first = jnum(j, "submit_time", now);
				json_decref(oldest);
				oldest = json_pack("{s:I,s:f}", "id", (json_int_t)jint(j, "id", 0), "waiting_secs", now - first);
			}
		} else if (!strcmp(st, "Hold")) {
			held++;
		} else if (!strcmp(st, "Running")) {
			running++;
			json_object_set_new(u, "running", json_integer(jint(u, "running", 0) + 1));
			json_object_set_new(u, "gpus_running", json_integer(jint(u, "gpus_running", 0) + jint(j, "gpus", 0)));
		}
	}
	json_array_foreach(json_object_get(gpus, "gpus"), i, g) {
		total++;
		if (jstr(g, "state") && !strcmp(jstr(g, "state"), "idle"))
			idle++;
		else
			busy++;
	}
	out = json_pack("{s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I},s:o,s:o,s:o}", "queued", (json_int_t)queued, "held",
	    (json_int_t)held, "running", (json_int_t)running, "queued_gpus_requested", (json_int_t)want, "gpus",
	    "total", (json_int_t)total, "idle", (json_int_t)idle, "busy_or_unavailable", (json_int_t)busy,
	    "queued_by_reason", reasons, "oldest_queued", oldest, "by_user", users);
	json_object_set_new(out, "summary", json_string(
	    queued == 0 ? "nothing is waiting" :
	    want > idle ? "queued jobs ask for more GPUs than are idle: jobs wait for running ones to end" :
	    "GPUs are idle: queued jobs wait for other reasons (see queued_by_reason)"));
	json_decref(resp);
	json_decref(gpus);
	return out;
}

/* Log lines that look like the cause of a failure. */
static const char *const evidence_marks[] = {
	"Traceback (most recent call last)", "CUDA out of memory", "OutOfMemoryError", "out of memory",
	"Killed", "Segmentation fault", "core dumped", "Error", "error:", "Exception", "No such file or directory",
	"Permission denied", "NCCL", "FAILED", "Aborted", NULL,
};

static bool log_has(json_t *lines, const char *mark)
{
	size_t i;
	json_t *l;

	json_array_foreach(lines, i, l)
		if (strstr(json_string_value(l), mark))
			return true;
	return false;
}

static json_t *t_triage(json_t *a, struct gf_err *e)
{
	json_t *j = fetch(json_object_get(a, "job_id"), e), *lines, *ev = json_array(), *diag = json_array(),
	       *hints = json_array(), *out, *l;
	const char *st, *reason;
	double start, end, now = now_secs(), runtime = -1;
	long long id, limit;
	size_t i;

	if (!j)
		return json_decref(ev), json_decref(diag), json_decref(hints), NULL;
	st = jstr(j, "state") ? jstr(j, "state") : "";
	reason = jstr(j, "reason");
	id = jint(j, "id", 0);
	limit = jint(j, "time_limit_secs", 0);
	start = jnum(j, "start_time", 0), end = jnum(j, "end_time", 0);
	if (start > 0)
		runtime = (end > 0 ? end : now) - start;
	lines = log_tail(j, jint(a, "log_lines", 200), e);
	if (!lines) {
		json_object_set_new(j, "log_error", json_string(e->msg));
		lines = json_array();
	}
	json_array_foreach(lines, i, l)
		for (const char *const *m = evidence_marks; *m; m++)
			if (strstr(json_string_value(l), *m)) {
				if (json_array_size(ev) < 40)
					json_array_append(ev, l);
				break;
			}
	if (!strcmp(st, "Finished"))
		json_array_append_new(diag, json_string("the job finished successfully (exit code 0)"));
	if (!strcmp(st, "Timeout")) {
		json_array_append_new(diag, json_string("the job ran into its time limit and was stopped"));
		json_array_append_new(hints, json_string("redo it with a longer limit: redo_job with set "
		    "{\"time_limit_secs\": N}, or make it save and resume from checkpoints"));
	}
	if (reason && !strcmp(reason, "OutOfMemory:Host")) {
		json_array_append_new(diag, json_string("the job used more memory than its --memory limit and was killed"));
		json_array_append_new(hints, json_string("redo it with more memory: set {\"memory_mb\": N}"));
	}
	if ((reason && !strcmp(reason, "OutOfMemory:GPU")) || log_has(lines, "CUDA out of memory") ||
	    log_has(lines, "OutOfMemoryError")) {
		json_array_append_new(diag, json_string("the GPU ran out of memory (CUDA out of memory)"));
		json_array_append_new(hints, json_string("use a smaller batch or model, more GPUs (set {\"gpus\": N}), "
		    "or an exclusive GPU instead of a shared one"));
	}
	if (log_has(lines, "Traceback (most recent call last)"))
		json_array_append_new(diag, json_string("the program raised a Python exception (see the Traceback "
		    "in evidence; its last line names the error)"));
	if (log_has(lines, "Killed") && !(reason && !strcmp(reason, "OutOfMemory:Host")))
		json_array_append_new(diag, json_string("the log says Killed: the kernel or a user killed the program "
		    "(often host memory)"));
	if (reason && !strncmp(reason, "DependencyFailed:", 17)) {
		json_array_append_new(diag, json_string("cancelled because a job it depends on did not succeed"));
		json_array_append_new(hints, json_string("triage the failed dependency first, then redo_job with "
		    "cascade: true on it"));
	}
	if (reason && !strncmp(reason, "SystemError", 11))
		json_array_append_new(diag, json_string("gflow could not run or supervise the job (SystemError): "
		    "see the reason and the daemon's log"));
	if (jint(j, "exit_signal", 0) > 0) {
		char s[96];

		snprintf(s, sizeof s, "the program was ended by signal %lld (%s)", (long long)jint(j, "exit_signal", 0),
		    strsignal((int)jint(j, "exit_signal", 0)));
		json_array_append_new(diag, json_string(s));
	} else if (!strcmp(st, "Failed") && jhas(j, "exit_code")) {
		char s[96];

		snprintf(s, sizeof s, "the program exited with code %lld", (long long)jint(j, "exit_code", 0));
		json_array_append_new(diag, json_string(s));
	}
	if (!strcmp(st, "Queued") || !strcmp(st, "Hold"))
		json_array_append_new(diag, json_string("the job has not run yet: see reason (Resources: waiting for "
		    "GPUs or memory; Dependency; Priority; BeginTime; JobHeldUser: release_job) and get_queue_pressure"));
	if (!strcmp(st, "Running"))
		json_array_append_new(diag, json_string("the job is still running"));
	if (!strcmp(st, "Failed") || !strcmp(st, "Timeout") || !strcmp(st, "Cancelled"))
		json_array_append_new(hints, json_string("after fixing the cause: redo_job (the same job again, "
		    "optionally with changed fields); ask the user first"));
	out = json_pack("{s:{s:I,s:O?,s:O?,s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:o},s:o,s:o,s:o,s:O?,s:o}",
	    "job", "id", (json_int_t)id, "name", json_object_get(j, "name"), "user", json_object_get(j, "user"),
	    "state", st, "reason", json_object_get(j, "reason"),
	    "exit_code", json_object_get(j, "exit_code"),
	    "exit_signal", json_object_get(j, "exit_signal"),
	    "gpus", json_object_get(j, "gpus"),
	    "gpu_ids", json_object_get(j, "gpu_ids"),
	    "attempt", json_object_get(j, "attempt"),
	    "max_retries", json_object_get(j, "max_retries"),
	    "time_limit_secs", limit ? json_integer(limit) : json_null(),
	    "diagnosis", diag, "evidence", ev, "hints", hints,
	    "log_path", json_object_get(j, "log_path"),
	    "log_tail", lines);
	json_object_set_new(json_object_get(out, "job"), "runtime_secs", runtime >= 0 ? json_real(runtime) : json_null());
	if (runtime >= 0 && limit)
		json_object_set_new(json_object_get(out, "job"), "limit_used_pct", json_real(100.0 * runtime / (double)limit));
	if (json_object_get(j, "log_error"))
		json_object_set(out, "log_error", json_object_get(j, "log_error"));
	json_decref(j);
	return out;
}

/* ---- submissions and changes ------------------------------------------- */

static json_t *submit(json_t *a, bool dry, struct gf_err *e)
{
	json_t *body = json_object(), *env = json_array(), *r;
	char cwd[4096], limits[GF_RLIMITS_TEXT_MAX];
	struct gf_rlimits rl;

	for (char **v = environ; *v; v++)
		json_array_append_new(env, gf_cstr_json(*v));
	if (jstr(a, "cwd"))
		snprintf(cwd, sizeof cwd, "%s", jstr(a, "cwd"));
	else if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, "/");
	json_object_set(body, "jobs", json_object_get(a, "jobs"));
	json_object_set_new(body, "env", env);
	json_object_set_new(body, "cwd", json_string(cwd));
	/* as gbatch: the jobs run under this process's limits */
	gf_rlimits_capture(&rl);
	gf_rlimits_format(&rl, limits, sizeof limits);
	json_object_set_new(body, "rlimits", json_string(limits));
	json_object_set_new(body, "dry_run", json_boolean(dry));
	r = api_post("/jobs", body, e);
	json_decref(body);
	if (r && dry)
		json_object_set_new(r, "note", json_string("a preview: nothing was submitted; submit_jobs with the "
		    "same arguments submits these jobs"));
	return r;
}

static json_t *t_preview_submit(json_t *a, struct gf_err *e)
{
	return submit(a, true, e);
}

static json_t *t_submit(json_t *a, struct gf_err *e)
{
	return submit(a, false, e);
}

/* The job's fields that a submission spec also has (what update edits). */
static const char *const spec_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "project", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "array_task_id",
	"max_concurrent", "max_retries", "params", "cpus", NULL,
};

static json_t *t_preview_update(json_t *a, struct gf_err *e)
{
	json_t *j = fetch(json_object_get(a, "job_id"), e), *set = json_object_get(a, "set"), *spec, *body, *r,
	       *changes = json_array(), *v, *out;
	const char *k, *st;

	if (!j)
		return json_decref(changes), NULL;
	st = jstr(j, "state");
	if (!st || (strcmp(st, "Queued") && strcmp(st, "Hold"))) {
		gf_err_set(e, "job %lld is %s: only queued or held jobs can be updated", (long long)jint(j, "id", 0),
		    st ? st : "unknown");
		return json_decref(j), json_decref(changes), NULL;
	}
	spec = json_object();
	for (const char *const *f = spec_fields; *f; f++)
		if ((v = json_object_get(j, *f)) && !json_is_null(v))
			json_object_set(spec, *f, v);
	json_object_foreach(set, k, v) {
		json_t *was = json_object_get(j, k);

		if (!json_equal(was ? was : json_null(), v))
			json_array_append_new(changes, json_pack("{s:s,s:O,s:O}", "field", k, "from",
			    was ? was : json_null(), "to", v));
		if (json_is_null(v))
			json_object_del(spec, k);
		else
			json_object_set(spec, k, v);
	}
	body = json_pack("{s:[O],s:[],s:O?,s:b}", "jobs", spec, "env", "cwd", json_object_get(j, "cwd"), "dry_run", 1);
	r = api_post("/jobs", body, e);
	json_decref(body);
	json_decref(spec);
	out = json_pack("{s:I,s:s,s:o}", "job_id", (json_int_t)jint(j, "id", 0), "state", st, "changes", changes);
	if (r) {
		json_object_set_new(out, "valid", json_true());
		json_object_set(out, "would_be", json_array_get(json_object_get(r, "jobs"), 0));
		json_object_set_new(out, "note", json_string("a preview: nothing changed; update_job with the same "
		    "arguments applies it"));
		json_decref(r);
	} else {
		json_object_set_new(out, "valid", json_false());
		json_object_set_new(out, "error", json_string(e->msg));
	}
	json_decref(j);
	return out;
}

/* POST {"ids":[ref], extra...}; the answer's "errors" become a tool error. */
static json_t *on_one(const char *route, json_t *a, json_t *extra, struct gf_err *e)
{
	json_t *ref = ref_arg(json_object_get(a, "job_id"), e), *body, *r, *errs;

	if (!ref)
		return json_decref(extra), NULL;
	body = json_pack("{s:[o]}", "ids", ref);
	if (extra)
		json_object_update(body, extra), json_decref(extra);
	r = api_post(route, body, e);
	json_decref(body);
	errs = json_object_get(r, "errors");
	if (r && json_array_size(errs)) {
		gf_err_set(e, "%s", jstr(json_array_get(errs, 0), "error") ? jstr(json_array_get(errs, 0), "error")
		    : "the daemon refused it");
		json_decref(r);
		return NULL;
	}
	return r;
}

static json_t *t_update(json_t *a, struct gf_err *e)
{
	return on_one("/jobs/update", a, json_pack("{s:O}", "set", json_object_get(a, "set")), e);
}

static json_t *t_cancel(json_t *a, struct gf_err *e)
{
	return on_one("/jobs/cancel", a, NULL, e);
}

static json_t *t_hold(json_t *a, struct gf_err *e)
{
	return on_one("/jobs/hold", a, NULL, e);
}

static json_t *t_release(json_t *a, struct gf_err *e)
{
	return on_one("/jobs/release", a, NULL, e);
}

static json_t *t_redo(json_t *a, struct gf_err *e)
{
	json_t *ref = ref_arg(json_object_get(a, "job_id"), e), *body, *r;

	if (!ref)
		return NULL;
	body = json_pack("{s:o,s:b}", "id", ref, "cascade", jbool(a, "cascade", 0));
	if (json_object_get(a, "set"))
		json_object_set(body, "set", json_object_get(a, "set"));
	r = api_post("/jobs/redo", body, e);
	json_decref(body);
	return r;
}

/* ---- waiting ------------------------------------------------------------ */

/* Sleep ms, or less when the client hangs up (stdin's writer closed): 0, or
 * -1 when it has gone. Asks for no input events, so pending input does not
 * wake it: the wait is a sleep, never a busy loop. */
static int nap(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = 0 };

	if (poll(&p, 1, ms) > 0) {
		if (p.revents & (POLLHUP | POLLERR))
			return -1;
		if (p.revents & POLLNVAL) {	/* no stdin to watch: sleep all the same */
			struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* Until the job ends or timeout_secs pass: polls the daemon, first every
 * 0.25 s, then less often, at most every 2 s. */
static json_t *t_wait(json_t *a, struct gf_err *e)
{
	json_t *j = fetch(json_object_get(a, "job_id"), e), *out;
	double timeout = (double)jint(a, "timeout_secs", 60), t0 = now_mono(), left;
	char num[32];
	int ms = 250;
	bool gone = false;

	if (!j)
		return NULL;
	/* "@" names the newest job now: follow that one, by its id */
	snprintf(num, sizeof num, "%lld", (long long)jint(j, "id", 0));
	while (!state_is_ended(jstr(j, "state")) && (left = timeout - (now_mono() - t0)) > 0) {
		if (nap(left * 1000 < ms ? (int)(left * 1000) + 1 : ms) < 0) {
			gone = true;
			break;
		}
		ms = ms * 3 / 2 > 2000 ? 2000 : ms * 3 / 2;
		json_decref(j);
		if (!(j = fetch_job(num, e)))
			return NULL;
	}
	if (gone) {
		json_decref(j);
		return gf_err_set(e, "the client closed its input while waiting for job %s", num), NULL;
	}
	out = json_pack("{s:b,s:b,s:f,s:o}", "ended", state_is_ended(jstr(j, "state")), "timed_out",
	    !state_is_ended(jstr(j, "state")), "waited_secs", now_mono() - t0, "job", j);
	return out;
}

/* ---- quotas ------------------------------------------------------------- */

/* The subject of `kind` named `name` in GET /quotas' answer, else (it holds
 * nothing yet) the default's limits with no usage. A new object. */
static json_t *subject(json_t *subs, const char *kind, const char *name)
{
	json_t *x, *dflt = NULL, *o;
	size_t i;

	json_array_foreach(subs, i, x) {
		if (!jstr(x, "kind") || strcmp(jstr(x, "kind"), kind))
			continue;
		if (jstr(x, "name") && !strcmp(jstr(x, "name"), name))
			return json_deep_copy(x);
		if (!jhas(x, "name"))
			dflt = x;
	}
	o = json_pack("{s:s,s:s,s:O?,s:n,s:i,s:i,s:i,s:f}", "kind", kind, "name", name, "limits",
	    dflt ? json_object_get(dflt, "limits") : NULL, "override", "running_jobs", 0, "running_gpus", 0,
	    "queued_jobs", 0, "gpu_hours_24h", 0.0);
	if (!strcmp(kind, "user"))
		json_object_set_new(o, "usage_gpu_secs", json_real(0));
	return o;
}

/* What each limit leaves: limit minus use, null when unlimited. */
static void add_headroom(json_t *sub)
{
	static const char *const k[][2] = {
		{ "max_running_jobs", "running_jobs" }, { "max_running_gpus", "running_gpus" },
		{ "max_queued_jobs", "queued_jobs" }, { "max_gpu_hours_per_day", "gpu_hours_24h" },
	};
	json_t *lim = json_object_get(sub, "limits"), *h = json_object();

	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
		json_t *l = json_object_get(lim, k[i][0]);
		double left = jnum(lim, k[i][0], 0) - jnum(sub, k[i][1], 0);

		if (!json_is_number(l))
			json_object_set_new(h, k[i][0], json_null());
		else if (i == 3)
			json_object_set_new(h, k[i][0], json_real(left > 0 ? left : 0));
		else
			json_object_set_new(h, k[i][0], json_integer(left > 0 ? (json_int_t)left : 0));
	}
	json_object_set_new(sub, "left", h);
}

static json_t *t_quotas(json_t *a, struct gf_err *e)
{
	json_t *q, *subs, *me, *projects = json_array(), *jobs = NULL, *j, *out;
	char who[256];
	const char *user = jstr(a, "user");
	size_t i;

	if (!user) {
		if (gf_user_name((unsigned)getuid(), who, sizeof who) < 0)
			return json_decref(projects), gf_err_set(e, "uid %u has no name in the user database: pass user",
			    (unsigned)getuid()), NULL;
		user = who;
	}
	if (!(q = api_get("/quotas", e)))
		return json_decref(projects), NULL;
	subs = json_object_get(q, "subjects");
	me = subject(subs, "user", user);
	add_headroom(me);
	if (jstr(a, "project")) {
		json_array_append_new(projects, subject(subs, "project", jstr(a, "project")));
	} else {	/* the projects of the user's active jobs */
		struct sbuf t = { 0 };

		sbuf_adds(&t, "/jobs");
		url_add_param(&t, "users", user);
		url_add_param(&t, "active", "1");
		url_add_param(&t, "fields", "project");
		jobs = api_get(t.p, e);
		sbuf_free(&t);
		if (!jobs)
			return json_decref(q), json_decref(me), json_decref(projects), NULL;
		json_array_foreach(json_object_get(jobs, "jobs"), i, j) {
			const char *p = jstr(j, "project");
			bool have = false;
			size_t k;
			json_t *x;

			json_array_foreach(projects, k, x)
				have |= p && !strcmp(jstr(x, "name"), p);
			if (p && *p && !have)
				json_array_append_new(projects, subject(subs, "project", p));
		}
		json_decref(jobs);
	}
	json_array_foreach(projects, i, j)
		add_headroom(j);
	out = json_pack("{s:o,s:o,s:O?}", "user", me, "projects", projects, "fair_share",
	    json_object_get(q, "fair_share"));
	json_object_set_new(out, "note", json_string("limits: null = unlimited; left: what each limit still "
	    "allows (null = unlimited); a job whose start would pass a limit waits with reason Quota"));
	json_decref(q);
	return out;
}

/* ---- the table --------------------------------------------------------------- */

#define NO_ARGS "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
#define ONE_JOB "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID "},\"required\":[\"job_id\"],\"additionalProperties\":false}"
#define UPDATE_SET \
	"{\"type\":\"object\",\"description\":\"fields to change (null clears one)\",\"properties\":{" \
	"\"name\":{\"type\":[\"string\",\"null\"]},\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1}," \
	"\"script\":{\"type\":[\"string\",\"null\"]},\"gpus\":{\"type\":\"integer\",\"minimum\":0}," \
	"\"shared\":{\"type\":\"boolean\"},\"gpu_memory_mb\":{\"type\":[\"integer\",\"null\"],\"minimum\":1}," \
	"\"memory_mb\":{\"type\":[\"integer\",\"null\"],\"minimum\":1},\"time_limit_secs\":{\"type\":[\"integer\",\"null\"],\"minimum\":1}," \
	"\"priority\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":255},\"conda_env\":{\"type\":[\"string\",\"null\"]}," \
	"\"depends_on\":{\"type\":\"array\",\"items\":" JOB_ID "},\"dep_mode\":{\"enum\":[\"all\",\"any\"]}," \
	"\"auto_cancel\":{\"type\":\"boolean\"},\"begin_at\":{\"type\":[\"number\",\"null\"]}," \
	"\"max_concurrent\":{\"type\":\"integer\",\"minimum\":0},\"max_retries\":{\"type\":\"integer\",\"minimum\":0}," \
	"\"params\":{\"type\":\"object\"},\"cpus\":{\"type\":\"integer\",\"minimum\":1}},\"additionalProperties\":false}"
#define SUBMIT \
	"{\"type\":\"object\",\"properties\":{\"jobs\":{\"type\":\"array\",\"minItems\":1,\"description\":" \
	"\"submission specs as in gflow's API (docs/api.md): command (argv array, required), name, gpus, shared, " \
	"gpu_memory_mb, memory_mb, cpus (default 1), time_limit_secs, priority, project, conda_env, depends_on, dep_mode, auto_cancel, " \
	"begin_at (epoch seconds), hold, max_retries, params, notify_email, notify_on, preemptible (true: may run beyond quotas " \
	"on idle GPUs, preempted when a normal job needs them), signal (\\\"TERM@60\\\": the signal, then seconds before the kill), " \
	"preempt_mode (requeue or cancel)\",\"items\":{\"type\":\"object\"," \
	"\"properties\":{\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1}," \
	"\"name\":{\"type\":\"string\"},\"gpus\":{\"type\":\"integer\",\"minimum\":0},\"time_limit_secs\":{\"type\":\"integer\",\"minimum\":1}," \
	"\"memory_mb\":{\"type\":\"integer\",\"minimum\":1},\"gpu_memory_mb\":{\"type\":\"integer\",\"minimum\":1}," \
	"\"cpus\":{\"type\":\"integer\",\"minimum\":1},\"preemptible\":{\"type\":\"boolean\"}," \
	"\"signal\":{\"type\":\"string\"},\"preempt_mode\":{\"enum\":[\"requeue\",\"cancel\"]}," \
	"\"priority\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":255},\"depends_on\":{\"type\":\"array\",\"items\":" JOB_ID "}," \
	"\"hold\":{\"type\":\"boolean\"}},\"required\":[\"command\"]}}," \
	"\"cwd\":{\"type\":\"string\",\"minLength\":1,\"description\":\"absolute working directory (default: the server's)\"}}," \
	"\"required\":[\"jobs\"],\"additionalProperties\":false}"

const struct mcp_tool mcp_tools[] = {
	{ "get_health", "Is gflowd running and answering? Version, pid, mode, uptime.", NO_ARGS, true, false, t_health },
	{ "get_info", "The daemon's settings and state: executor, strategy, GPUs, data directory, how job "
	  "processes are tracked, notification counts.", NO_ARGS, true, false, t_info },
	{ "list_jobs", "Jobs, newest last (your own by default). Filters: states, users (\"all\" for everyone), "
	  "ids (\"1-5,9\"), names, project, active (only queued/held/running); limit keeps the newest N (default 50). "
	  "A queued job carries expected_start (epoch seconds, or null with expected_start_note saying why it is "
	  "not known) and expected_gpus (the GPU indices it would get).",
	  "{\"type\":\"object\",\"properties\":{\"states\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},"
	  "\"description\":\"Queued,Hold,Running,Finished,Failed,Cancelled,Timeout (or PD,H,R,CD,F,CA,TO)\"},"
	  "\"users\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"}},\"ids\":{\"type\":\"string\"},"
	  "\"names\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"}},\"project\":{\"type\":\"string\"},"
	  "\"active\":{\"type\":\"boolean\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000}},"
	  "\"additionalProperties\":false}", true, false, t_list },
	{ "get_job", "Everything gflow knows about one job; a queued one also when it is expected to start "
	  "(expected_start: epoch seconds, or null and expected_start_note) and on which GPUs (expected_gpus).",
	  ONE_JOB, true, false, t_job },
	{ "get_job_log", "The last lines of a job's output log (default 100), or with offset the log from "
	  "that byte on (at most bytes, default 65536): each answer's next_offset is where to read on, "
	  "more says whether more may follow.",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"lines\":{\"type\":\"integer\",\"minimum\":1,"
	  "\"maximum\":5000},\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"a byte offset, "
	  "e.g. the last answer's next_offset\"},\"bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576}},"
	  "\"required\":[\"job_id\"],\"additionalProperties\":false}", true, false, t_log },
	{ "get_stats", "Counts by state, success rate, average wait and run time, GPU-hours: your jobs, one "
	  "user's, or everyone's (all_users).",
	  "{\"type\":\"object\",\"properties\":{\"all_users\":{\"type\":\"boolean\"},\"user\":{\"type\":\"string\"}},"
	  "\"additionalProperties\":false}", true, false, t_stats },
	{ "list_reservations", "GPU reservations (when this gflowd supports them).", NO_ARGS, true, false, t_reservations },
	{ "get_queue_pressure", "Why jobs wait: queued/held/running counts, GPUs asked for vs idle, waiting "
	  "reasons, the oldest queued job, per-user load.", NO_ARGS, true, false, t_pressure },
	{ "triage_job", "Why a job failed (or waits): state, reason, exit code or signal, runtime vs limit, GPUs, "
	  "the log's tail with the lines that look like the cause (Traceback, CUDA out of memory, Killed), and "
	  "retry hints. Call it before retrying a job.",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"log_lines\":{\"type\":\"integer\",\"minimum\":1,"
	  "\"maximum\":5000}},\"required\":[\"job_id\"],\"additionalProperties\":false}", true, false, t_triage },
	{ "preview_submit_jobs", "Check jobs as submit_jobs would and show the jobs they would be; submits nothing.",
	  SUBMIT, true, false, t_preview_submit },
	{ "submit_jobs", "Submit jobs (all or none) with this server's environment. Preview first; ask the user.",
	  SUBMIT, false, false, t_submit },
	{ "preview_update_job", "Show what update_job would change in a queued or held job, checked as the "
	  "daemon checks it; changes nothing.",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"set\":" UPDATE_SET "},"
	  "\"required\":[\"job_id\",\"set\"],\"additionalProperties\":false}", true, false, t_preview_update },
	{ "update_job", "Change fields of a queued or held job. Preview first; ask the user.",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"set\":" UPDATE_SET "},"
	  "\"required\":[\"job_id\",\"set\"],\"additionalProperties\":false}", false, false, t_update },
	{ "redo_job", "Submit an ended job again as a new job, optionally with changed fields (set) and with "
	  "the jobs its failure cancelled (cascade).",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"cascade\":{\"type\":\"boolean\"},\"set\":"
	  UPDATE_SET "},\"required\":[\"job_id\"],\"additionalProperties\":false}", false, false, t_redo },
	{ "cancel_job", "Cancel a queued, held or running job (and the jobs that depend on it). Ask the user.",
	  ONE_JOB, false, true, t_cancel },
	{ "hold_job", "Keep a queued job from starting until release_job.", ONE_JOB, false, false, t_hold },
	{ "release_job", "Let a held job be scheduled again.", ONE_JOB, false, false, t_release },
	{ "wait_for_job", "Wait until a job ends (Finished, Failed, Cancelled, Timeout) or timeout_secs "
	  "pass (default 60, at most 600), then return it: use it instead of polling get_job. The server "
	  "answers nothing else meanwhile.",
	  "{\"type\":\"object\",\"properties\":{\"job_id\":" JOB_ID ",\"timeout_secs\":{\"type\":\"integer\","
	  "\"minimum\":1,\"maximum\":600}},\"required\":[\"job_id\"],\"additionalProperties\":false}",
	  true, false, t_wait },
	{ "get_quotas", "Your quota limits and what you use of them (running jobs and GPUs, queued jobs, "
	  "GPU-hours in 24 h), what each still leaves, those of your active jobs' projects (or of project), "
	  "and fair share. user: someone else's.",
	  "{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"string\",\"minLength\":1},"
	  "\"project\":{\"type\":\"string\",\"minLength\":1}},\"additionalProperties\":false}",
	  true, false, t_quotas },
};

const size_t mcp_ntools = sizeof mcp_tools / sizeof mcp_tools[0];
