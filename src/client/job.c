/* job.c — gjob: show, log, attach, close-sessions, hold, release, update
 * and redo of jobs. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "batch.h"
#include "bytes.h"
#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "remote.h"
#include "queue.h"
#include "util.h"

#define PROG "gjob"

/* ---------- show ---------- */

/* Values are escaped: names, commands and paths are the user's. */
static void kv(struct sbuf *b, const char *key, const char *val)
{
	sbuf_addf(b, "%s=", key);
	fmt_text(b, val && *val ? val : "-");
	sbuf_addc(b, '\n');
}

static void kv_time(struct sbuf *b, const char *key, const json_t *j,
    const char *field)
{
	char buf[64];

	fmt_local_time(jnum(j, field, 0), buf, sizeof buf);
	kv(b, key, buf);
}

static void kv_mb(struct sbuf *b, const char *key, const json_t *j,
    const char *field)
{
	char buf[32];

	if (!jhas(j, field)) {
		kv(b, key, NULL);
		return;
	}
	fmt_mb(jint(j, field, 0), buf, sizeof buf);
	kv(b, key, buf);
}

static void kv_int(struct sbuf *b, const char *key, int64_t v)
{
	sbuf_addf(b, "%s=%lld\n", key, (long long)v);
}

/* GPUUUIDs=, PeakGPUMemory= (one per GPU, as GPUIDs), MeanGPUUtil= and,
 * for a shared job that used more than its booking, GPUMemoryExceeded=. */
static void kv_gpu_usage(struct sbuf *b, const json_t *j)
{
	const json_t *u = json_object_get(j, "gpu_usage");
	json_t *uuids = json_object_get(u, "gpu_uuids");
	json_t *peak = json_object_get(u, "peak_gpu_memory_mb");
	struct sbuf l = { 0 };
	char buf[64], booked[32];
	size_t i;

	if (!json_is_object(u))
		return;
	for (i = 0; i < json_array_size(uuids); i++)
		sbuf_addf(&l, "%s%s", i ? "," : "",
		    json_string_value(json_array_get(uuids, i)) ?
		    json_string_value(json_array_get(uuids, i)) : "?");
	kv(b, "GPUUUIDs", sbuf_str(&l));
	sbuf_free(&l);
	for (i = 0; i < json_array_size(peak); i++) {
		fmt_mb_human(json_integer_value(json_array_get(peak, i)), buf,
		    sizeof buf);
		sbuf_addf(&l, "%s%s", i ? "," : "", buf);
	}
	kv(b, "PeakGPUMemory", sbuf_str(&l));
	sbuf_free(&l);
	if (json_is_number(json_object_get(u, "mean_gpu_util"))) {
		snprintf(buf, sizeof buf, "%.0f%%",
		    json_number_value(json_object_get(u, "mean_gpu_util")));
		kv(b, "MeanGPUUtil", buf);
	} else
		kv(b, "MeanGPUUtil", NULL);
	if (jhas(u, "devices_constrained"))
		kv(b, "DevicesConstrained", jbool(u, "devices_constrained", 0) ?
		    "yes" : "no");
	if (jbool(u, "memory_exceeded", 0)) {
		fmt_mb_human(jint(u, "exceeded_mb", 0), buf, sizeof buf);
		fmt_mb_human(jint(j, "gpu_memory_mb", 0), booked, sizeof booked);
		sbuf_addf(b, "GPUMemoryExceeded=yes (used %s on a %s booking)\n",
		    buf, booked);
	}
}

/* Hint= after Reason=: what to change, for the reasons a user can act on
 * (the seed's troubleshooting advice, made automatic). */
static void kv_hint(struct sbuf *b, const json_t *j)
{
	const char *reason = jstr(j, "reason");
	json_t *peak = json_object_get(json_object_get(j, "gpu_usage"),
	    "peak_gpu_memory_mb");
	int64_t top = 0, booked = jint(j, "gpu_memory_mb", 0);
	char p[32], m[32];
	size_t i;

	if (!reason)
		return;
	for (i = 0; i < json_array_size(peak); i++)
		if (json_integer_value(json_array_get(peak, i)) > top)
			top = json_integer_value(json_array_get(peak, i));
	fmt_mb_human(top, p, sizeof p);
	if (strcmp(reason, "OutOfMemory:GPU") == 0 ||
	    strncmp(reason, "GPUMemoryExceeded", 17) == 0) {
		if (jbool(j, "shared", 0) && booked > 0 && top > 0) {
			fmt_mb_human(booked, m, sizeof m);
			sbuf_addf(b, "Hint=peak %s on a %s booking: raise "
			    "--gpu-memory\n", p, m);
		} else if (top > 0)
			sbuf_addf(b, "Hint=ran out of GPU memory (peak %s on one "
			    "GPU): use a smaller batch or model, or more GPUs\n", p);
		else
			sbuf_adds(b, "Hint=ran out of GPU memory: use a smaller "
			    "batch or model, or more GPUs\n");
	} else if (strcmp(reason, "OutOfMemory:Host") == 0) {
		if (jint(j, "memory_mb", 0) > 0) {
			fmt_mb_human(jint(j, "memory_mb", 0), m, sizeof m);
			sbuf_addf(b, "Hint=it reached its --memory limit of %s: "
			    "raise --memory\n", m);
		} else
			sbuf_adds(b, "Hint=the kernel's OOM killer ended it: the "
			    "machine ran out of memory\n");
	}
}

static const char *yes_no(const json_t *j, const char *field, int dflt)
{
	if (!jhas(j, field) && dflt < 0)
		return "-";
	return jbool(j, field, dflt) ? "yes" : "no";
}

char *job_show_text(const json_t *j)
{
	struct sbuf b = { 0 };
	json_t *params = json_object_get(j, "params");
	char buf[64], *s;
	const char *k;
	json_t *v;

	kv_int(&b, "JobId", jint(j, "id", 0));
	kv(&b, "Name", jstr(j, "name"));
	kv(&b, "User", jstr(j, "user"));
	kv(&b, "Project", jstr(j, "project"));
	kv(&b, "State", jstr(j, "state"));
	kv(&b, "Reason", jstr(j, "reason"));
	/* Why it waits: the limit or reservation, and when it should start. */
	if (jhas(j, "reason_detail"))
		kv(&b, "ReasonDetail", jstr(j, "reason_detail"));
	if (jhas(j, "expected_start"))
		kv_time(&b, "ExpectedStart", j, "expected_start");
	kv_hint(&b, j);
	fmt_exit(j, 0, buf, sizeof buf);
	kv(&b, "ExitCode", buf);
	s = fmt_argv_line(json_object_get(j, "command"));
	kv(&b, jhas(j, "script") ? "Script" : "Command", s);
	free(s);
	s = fmt_bytes_field(j, "cwd");
	kv(&b, "WorkDir", s);
	free(s);
	if (jstr(j, "conda_env"))
		kv(&b, "CondaEnv", jstr(j, "conda_env"));
	kv_time(&b, "SubmitTime", j, "submit_time");
	kv_time(&b, "StartTime", j, "start_time");
	kv_time(&b, "EndTime", j, "end_time");
	if (jhas(j, "time_limit_secs"))
		fmt_duration(jint(j, "time_limit_secs", 0), buf, sizeof buf);
	else
		snprintf(buf, sizeof buf, "UNLIMITED");
	kv(&b, "TimeLimit", buf);
	kv_int(&b, "GPUs", jint(j, "gpus", 0));
	s = fmt_int_list(json_object_get(j, "gpu_ids"));
	kv(&b, "GPUIDs", s);
	free(s);
	kv_gpu_usage(&b, j);
	kv(&b, "Shared", yes_no(j, "shared", 0));
	kv_mb(&b, "GPUMemory", j, "gpu_memory_mb");
	kv_mb(&b, "Memory", j, "memory_mb");
	kv(&b, "MemoryEnforced", yes_no(j, "memory_enforced", -1));
	kv_int(&b, "Priority", jint(j, "priority", 10));
	/* which applies across users (system mode: a user's priority orders
	 * only their own jobs), said where it is not the priority itself */
	if (json_is_true(json_object_get(j, "priority_by_admin")))
		sbuf_addf(&b, "PriorityAcrossUsers=%lld (set by an admin)\n",
		    (long long)jint(j, "priority_across_users", jint(j, "priority", 10)));
	else if (jhas(j, "priority_across_users") &&
	    jint(j, "priority_across_users", 10) != jint(j, "priority", 10))
		sbuf_addf(&b, "PriorityAcrossUsers=%lld (Priority orders only %s's own jobs)\n",
		    (long long)jint(j, "priority_across_users", 10),
		    jstr(j, "user") ? jstr(j, "user") : "the owner");
	s = fmt_int_list(json_object_get(j, "depends_on"));
	if (*s)
		sbuf_addf(&b, "Dependencies=%s (%s)\n", s,
		    jstr(j, "dep_mode") ? jstr(j, "dep_mode") : "all");
	else
		kv(&b, "Dependencies", NULL);
	free(s);
	kv(&b, "AutoCancel", yes_no(j, "auto_cancel", 1));
	kv_int(&b, "MaxRetries", jint(j, "max_retries", 0));
	kv_int(&b, "Attempt", jint(j, "attempt", 0));
	if (jhas(j, "retry_of"))
		kv_int(&b, "RetryOf", jint(j, "retry_of", 0));
	if (jhas(j, "redo_of"))
		kv_int(&b, "RedoOf", jint(j, "redo_of", 0));
	if (jhas(j, "group_id")) {
		kv_int(&b, "GroupId", jint(j, "group_id", 0));
		kv_int(&b, "ArrayTaskId", jint(j, "array_task_id", 0));
		if (jint(j, "max_concurrent", 0))
			kv_int(&b, "MaxConcurrent", jint(j, "max_concurrent", 0));
	}
	if (json_object_size(params)) {
		struct sbuf p = { 0 };

		json_object_foreach(params, k, v)
			sbuf_addf(&p, "%s%s=%s", p.len ? "," : "", k,
			    json_string_value(v) ? json_string_value(v) : "");
		kv(&b, "Params", sbuf_str(&p));
		sbuf_free(&p);
	}
	kv_time(&b, "BeginTime", j, "begin_at");
	kv(&b, "Executor", jstr(j, "executor"));
	/* The submitter's resource limits as captured; each is capped at the
	 * daemon's hard limit when the job starts. */
	if (jstr(j, "rlimits"))
		kv(&b, "Limits", jstr(j, "rlimits"));
	kv(&b, "TmuxSession", jstr(j, "tmux_session"));
	kv(&b, "LogPath", jstr(j, "log_path"));
	if (jstr(j, "cluster")) {	/* a Slurm job (remote.c) */
		kv(&b, "Cluster", jstr(j, "cluster"));
		kv(&b, "SlurmJobId", jstr(j, "slurm_id"));
		if (jstr(j, "remote_log"))
			kv(&b, "RemoteLog", jstr(j, "remote_log"));
	}
	return sbuf_take(&b);
}

/* ---------- shared bits ---------- */

/* One job by reference: GET /jobs/<id>, or GET /jobs?ids=@~N for the @
 * forms (the daemon resolves those for the caller). Caller owns it. */
json_t *fetch_job(const char *ref_text, struct gf_err *e)
{
	struct gf_jobref ref;
	struct sbuf path = { 0 };
	char buf[32];
	json_t *resp, *job;

	if (gf_parse_jobref(ref_text, &ref, e) < 0)
		return NULL;
	if (!ref.is_relative) {
		sbuf_addf(&path, "/jobs/%lld", (long long)ref.id);
	} else {
		snprintf(buf, sizeof buf, "@~%lld", (long long)ref.back);
		sbuf_adds(&path, "/jobs");
		url_add_param(&path, "ids", buf);
	}
	resp = api_get(path.p, e);
	sbuf_free(&path);
	if (!resp)
		return NULL;
	job = json_object_get(resp, "job");
	if (!job)
		job = json_array_get(json_object_get(resp, "jobs"), 0);
	if (!json_is_object(job)) {
		json_decref(resp);
		gf_err_set(e, "job %s does not exist", ref_text);
		return NULL;
	}
	json_incref(job);
	json_decref(resp);
	return job;
}

/* Join positional words into one ID list ("1 2,3" -> "1,2,3"). */
static char *join_ids(char **words, int n)
{
	struct sbuf b = { 0 };
	int i;

	for (i = 0; i < n; i++) {
		if (i)
			sbuf_addc(&b, ',');
		sbuf_adds(&b, words[i]);
	}
	return sbuf_take(&b);
}

/* Print "<verb> job N" for each id in resp["done"] and one stderr line
 * per error; EXIT_FAIL when any failed. */
int job_report_done(const json_t *resp, const char *verb)
{
	json_t *done = json_object_get(resp, "done");
	json_t *errs = json_object_get(resp, "errors");
	size_t i;

	for (i = 0; i < json_array_size(done); i++)
		printf("%s job %lld\n", verb,
		    (long long)json_integer_value(json_array_get(done, i)));
	for (i = 0; i < json_array_size(errs); i++) {
		struct sbuf line = { 0 };

		fmt_job_error(&line, json_array_get(errs, i), "failed");
		fprintf(stderr, "%s: %s\n", PROG, sbuf_str(&line));
		sbuf_free(&line);
	}
	return json_array_size(errs) ? EXIT_FAIL : EXIT_OK;
}

int job_post_report(const char *prog, const char *path, json_t *body, const char *verb)
{
	struct gf_err e;
	json_t *resp = api_post(path, body, &e);
	int rc;

	json_decref(body);
	if (!resp)
		return cmd_fail(prog, &e);
	rc = job_report_done(resp, verb);
	json_decref(resp);
	return rc;
}

int job_help_or_fail(const char *help, int id, const char *val,
    struct gf_err *e)
{
	(void)val;
	if (id == J_HELP) {
		fputs(help, stdout);
		return EXIT_OK;
	}
	return cmd_usage_error(PROG, e);
}

/* ---------- show ---------- */

static const char show_help[] =
"usage: gjob show [-o text|json] IDS\n\n"
"Show jobs as Key=Value lines, a blank line between jobs. IDS: 42, 1,2,3,\n"
"1-5, @ (your latest job), @~N (N before it).\n"
"  -o, --output json   the jobs as the daemon's JSON objects, one array\n";

enum { S_OUTPUT };

static const struct opt_def show_opts[] = {
	{ S_OUTPUT, "output", 'o', 1 }, { J_HELP, "help", 'h', 0 },
};

static const struct opt_def help_only[] = { { J_HELP, "help", 'h', 0 } };

/* Positional words of a subcommand with only --help; returns -1 when it
 * already answered (*rc set). */
static int simple_args(int argc, char **argv, const char *help,
    char ***pos, int *npos, int *rc)
{
	struct opt_parser p;
	struct gf_err e;
	const char *val;
	int id;

	*pos = xcalloc((size_t)argc + 1, sizeof **pos);
	*npos = 0;
	opt_init(&p, argc, argv, 1, help_only, 1, 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL) {
			(*pos)[(*npos)++] = (char *)val;
			continue;
		}
		*rc = job_help_or_fail(help, id, val, &e);
		free(*pos);
		*pos = NULL;
		return -1;
	}
	return 0;
}

static int show_jobs(const json_t *jobs, int first)
{
	size_t i;

	for (i = 0; i < json_array_size(jobs); i++) {
		char *s = job_show_text(json_array_get(jobs, i));

		if (!first || i)
			fputc('\n', stdout);
		fputs(s, stdout);
		free(s);
	}
	return 0;
}

static int job_show(int argc, char **argv)
{
	struct gf_jobref_list l = { 0 };
	struct sbuf path = { 0 }, q = { 0 };
	struct gf_err e;
	char **pos, *ids;
	int npos = 0, rc = EXIT_OK, as_json = 0, id;
	json_t *resp, *jobs;
	struct opt_parser p;
	const char *val;
	size_t i, k;

	pos = xcalloc((size_t)argc + 1, sizeof *pos);
	opt_init(&p, argc, argv, 1, show_opts, 2, 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL) {
			pos[npos++] = (char *)val;
			continue;
		}
		if (id == S_OUTPUT && (!strcmp(val, "json") || !strcmp(val, "text"))) {
			as_json = !strcmp(val, "json");
			continue;
		}
		free(pos);
		if (id == S_OUTPUT)
			return cmd_usagef(PROG, "invalid output format '%s': expected text or json", val);
		return job_help_or_fail(show_help, id, val, &e);
	}
	if (npos == 0) {
		free(pos);
		return cmd_usagef(PROG, "usage: gjob show IDS");
	}
	ids = join_ids(pos, npos);
	free(pos);
	if (gf_parse_jobref_list(ids, &l, &e) < 0) {
		free(ids);
		return cmd_usage_error(PROG, &e);
	}
	url_add_param(&q, "ids", ids);
	url_add_param(&q, "users", "all");
	sbuf_adds(&path, "/jobs");
	sbuf_adds(&path, q.p);
	sbuf_free(&q);
	remote_sync(PROG, NULL, 0);	/* cluster jobs as Slurm has them now */
	resp = api_get(path.p, &e);
	sbuf_free(&path);
	if (!resp) {
		rc = cmd_fail(PROG, &e);
		goto out;
	}
	jobs = json_object_get(resp, "jobs");
	if (as_json) {
		char *text = json_dumps(jobs, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		printf("%s\n", text ? text : "[]");
		free(text);
	} else
		show_jobs(jobs, 1);
	/* ids that matched nothing (the daemon resolved the @ forms) */
	for (i = 0; i < l.n; i++) {
		if (l.v[i].is_relative)
			continue;
		for (k = 0; k < json_array_size(jobs); k++)
			if (jint(json_array_get(jobs, k), "id", 0) == l.v[i].id)
				break;
		if (k == json_array_size(jobs)) {
			fprintf(stderr, "%s: job %lld does not exist\n", PROG,
			    (long long)l.v[i].id);
			rc = EXIT_FAIL;
		}
	}
	json_decref(resp);
out:
	gf_jobref_list_free(&l);
	free(ids);
	return rc;
}

/* ---------- log ---------- */

off_t job_last_lines_offset(int fd, long long n)
{
	char buf[65536];
	struct stat st;
	off_t pos, end;
	long long seen = 0;

	if (fstat(fd, &st) < 0)
		return -1;
	end = pos = st.st_size;
	if (n <= 0)
		return end;
	while (pos > 0) {
		size_t want = pos < (off_t)sizeof buf ? (size_t)pos : sizeof buf;
		ssize_t got = pread(fd, buf, want, pos - (off_t)want);
		ssize_t i;

		if (got < (ssize_t)want)
			return -1;
		for (i = got - 1; i >= 0; i--) {
			off_t at = pos - (off_t)want + i;

			if (buf[i] != '\n' || at == end - 1)
				continue;
			if (++seen == n)
				return at + 1;
		}
		pos -= (off_t)want;
	}
	return 0;
}

/* The bytes at the end of a chunk that may go on in the next: a CR (a
 * CR LF?) or the start of a UTF-8 character. */
static size_t log_tail_held(const unsigned char *p, size_t n)
{
	size_t back;

	if (n && p[n - 1] == '\r')
		return 1;
	for (back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = p[n - back];
		size_t need;

		if ((c & 0xc0) == 0x80)
			continue;	/* a continuation byte: look further */
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? back : 0;
	}
	return 0;
}

void job_log_escape(struct log_escaper *h, const char *in, size_t n, int final, struct sbuf *out)
{
	struct sbuf work = { 0 };
	const char *p;
	size_t len, keep, i, start = 0;

	if (h->nhold) {
		sbuf_add(&work, h->hold, h->nhold);
		sbuf_add(&work, in, n);
		p = work.p;
		len = work.len;
	} else {
		p = in;
		len = n;
	}
	keep = len - (final ? 0 : log_tail_held((const unsigned char *)p, len));
	h->nhold = len - keep;
	memcpy(h->hold, p + keep, h->nhold);
	for (i = 0; i <= keep; i++) {
		int plain = i < keep && (p[i] == '\n' || p[i] == '\t' ||
		    (p[i] == '\r' && i + 1 < keep && p[i + 1] == '\n'));

		if (i < keep && !plain)
			continue;
		if (i > start) {
			size_t need = gf_escape(NULL, 0, p + start, i - start, 0);

			sbuf_grow(out, need + 1);
			gf_escape(out->p + out->len, need + 1, p + start, i - start, 0);
			out->len += need;
		}
		if (i < keep)
			sbuf_addc(out, p[i]);
		start = i + 1;
	}
	sbuf_free(&work);
}

/* Where the log's bytes go: stdout, escaped when it is a terminal (the
 * owner's control sequences reach no one's terminal raw) unless --raw. */
static struct {
	int escape;
	struct log_escaper held;
} log_out;

static void log_write(const char *p, size_t n, int final)
{
	struct sbuf b = { 0 };

	if (!log_out.escape) {
		fwrite(p, 1, n, stdout);
		return;
	}
	job_log_escape(&log_out.held, p, n, final, &b);
	if (b.len)
		fwrite(b.p, 1, b.len, stdout);
	sbuf_free(&b);
}

/* Copy fd from *off to its current end onto stdout; lines_left >= 0
 * stops after that many lines. Returns bytes copied, -1 on error. */
static long long copy_out(int fd, off_t *off, long long *lines_left)
{
	char buf[65536];
	long long total = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof buf, *off), i, upto;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		upto = n;
		if (lines_left && *lines_left >= 0) {
			for (i = 0; i < n; i++)
				if (buf[i] == '\n' && --*lines_left == 0) {
					upto = i + 1;
					break;
				}
		}
		log_write(buf, (size_t)upto, 0);
		*off += upto;
		total += upto;
		if (upto < n || (lines_left && *lines_left == 0))
			break;
	}
	fflush(stdout);
	return total;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

enum { L_FIRST, L_LAST, L_FOLLOW, L_RAW };

static const struct opt_def log_opts[] = {
	{ L_FIRST, "first", 'f', 1 }, { L_FIRST, "head", 0, 1 },
	{ L_LAST, "last", 'l', 1 }, { L_LAST, "tail", 0, 1 },
	{ L_FOLLOW, "follow", 'F', 0 }, { L_RAW, "raw", 0, 0 },
	{ J_HELP, "help", 'h', 0 },
};

static const char log_help[] =
"usage: gjob log ID [-f N | -l N] [--follow] [--raw]\n\n"
"Print a job's output (its log file).\n"
"  -f, --first N   only the first N lines (also --head)\n"
"  -l, --last N    only the last N lines (also --tail)\n"
"  -F, --follow    keep printing what is appended until the job has ended\n"
"      --raw       on a terminal too, the bytes as they are\n"
"On a terminal, control characters (escape sequences, bell, C1 codes,\n"
"a carriage return not before a line feed) and bytes that are not UTF-8\n"
"are shown escaped (\\e, \\a, \\r, \\xNN), so that a job's output cannot drive\n"
"your terminal; line feeds and tabs pass. Only regular files are read (no\n"
"FIFO, device or symbolic link). An admin of the machine's daemon who may\n"
"not read the owner's file gets its last 4 MiB from the daemon (without\n"
"--follow).\n";

/* Open a job's log to read: a regular file of the job's owner (uid, -1:
 * unknown) and no symbolic link, opened without blocking (a FIFO put
 * there would hang the reader) and without becoming our terminal. -1 with
 * errno (EACCES, ENOENT) for the caller, or -2 when refused, said in e. */
static int open_log_file(const char *path, long long uid, struct gf_err *e)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC), err;

	if (fd < 0 && errno == ELOOP) {
		gf_err_set(e, "refusing %s: it is a symbolic link, not the job's log", path);
		return -2;
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		gf_err_set(e, "refusing %s: it is %s, not a regular file", path,
		    S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" :
		    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
		    S_ISSOCK(st.st_mode) ? "a socket" : "something else");
	else if (uid >= 0 && (long long)st.st_uid != uid)
		gf_err_set(e, "refusing %s: it belongs to uid %u, not to the job's owner (uid %lld)", path,
		    (unsigned)st.st_uid, uid);
	else {
		/* reads of a regular file never block: back to plain reads */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		return fd;
	}
	close(fd);
	return -2;
}

/* Follow the log until the job has ended and the file stops growing. */
static int follow_log(const char *ref, const char *path, long long uid, int fd, off_t off,
    struct gf_err *e)
{
	int ended = 0, tick = 0;

	for (;;) {
		long long got;

		if (fd < 0) {
			fd = open_log_file(path, uid, e);
			if (fd == -2)
				return -1;
			off = 0;
		}
		got = 0;
		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) == 0 && st.st_size < off)
				off = 0; /* truncated */
			got = copy_out(fd, &off, NULL);
			if (got < 0) {
				gf_err_set(e, "cannot read %s: %s", path,
				    strerror(errno));
				close(fd);
				return -1;
			}
		}
		if (ended && got == 0)
			break;
		if (!ended && ++tick % 4 == 0) {
			json_t *job = fetch_job(ref, e);

			if (!job) {
				if (fd >= 0)
					close(fd);
				return -1;
			}
			ended = state_is_ended(jstr(job, "state"));
			json_decref(job);
			if (ended)
				continue; /* one more read, then stop */
		}
		sleep_ms(250);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* The end of a job's log as the daemon serves it (GET /jobs/ID/log: to its
 * owner and admins, the last LOG_SERVED bytes), in a memory file for the
 * readers below; -1 when it will not. */
#define LOG_SERVED (4 * 1024 * 1024)
static int log_from_daemon(int64_t id, int follow)
{
	char target[96];
	struct http_resp r = { 0 };
	struct gf_err e;
	int fd;

	snprintf(target, sizeof target, "/jobs/%lld/log?tail=%d", (long long)id, LOG_SERVED);
	if (http_request(NULL, "GET", target, NULL, 0, &r, &e) < 0 || r.status != 200 ||
	    (fd = memfd_create("gflow-log", MFD_CLOEXEC)) < 0) {
		http_resp_free(&r);
		return -1;
	}
	if (write(fd, r.body, r.len) != (ssize_t)r.len || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		fd = -1;
	}
	http_resp_free(&r);
	if (fd >= 0 && follow)
		fprintf(stderr, "%s: --follow needs read access to the file; showing the end the daemon "
		    "serves (at most %d MiB)\n", PROG, LOG_SERVED >> 20);
	return fd;
}

static int job_log(int argc, char **argv)
{
	struct opt_parser p;
	struct gf_err e;
	const char *val, *ref = NULL, *path, *state;
	int64_t first = -1, last = -1;
	int id, follow = 0, raw = 0, fd, rc = EXIT_OK;
	long long uid;
	json_t *job;
	off_t off = 0;

	opt_init(&p, argc, argv, 1, log_opts,
	    sizeof log_opts / sizeof log_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_POSITIONAL:
			if (ref)
				return cmd_usagef(PROG, "gjob log takes one job");
			ref = val;
			break;
		case L_FIRST:
		case L_LAST:
			if (gf_parse_int_range(val, 0, LLONG_MAX, "line count",
			    id == L_FIRST ? &first : &last, &e) < 0)
				return cmd_usage_error(PROG, &e);
			break;
		case L_FOLLOW:
			follow = 1;
			break;
		case L_RAW:
			raw = 1;
			break;
		default:
			return job_help_or_fail(log_help, id, val, &e);
		}
	}
	if (!ref)
		return cmd_usagef(PROG, "usage: gjob log ID [-f N | -l N] "
		    "[--follow] [--raw]");
	if (first >= 0 && (last >= 0 || follow))
		return cmd_usagef(PROG, "-f cannot be combined with -l or "
		    "--follow");
	job = fetch_job(ref, &e);
	if (!job)
		return cmd_fail(PROG, &e);
	path = jstr(job, "log_path");
	state = jstr(job, "state");
	uid = jhas(job, "uid") ? (long long)jint(job, "uid", -1) : -1;
	log_out.escape = !raw && isatty(STDOUT_FILENO);
	if (jstr(job, "cluster")) {	/* its output is on the cluster */
		if (first >= 0 || last >= 0 || follow)
			rc = cmd_usagef(PROG, "job %s runs on cluster %s: gjob log shows "
			    "its whole output file (no -f, -l or --follow)", ref,
			    jstr(job, "cluster"));
		else
			rc = remote_log(PROG, job);
		json_decref(job);
		return rc;
	}
	if (!path && uid >= 0 && uid != (long long)getuid() && jstr(job, "user")) {
		/* The daemon shows a job's log path to its owner and admins
		 * only: the rule, as the daemon words it. */
		fprintf(stderr, "%s: job %lld belongs to %s; only %s or an admin may read its log\n", PROG,
		    (long long)jint(job, "id", 0), jstr(job, "user"), jstr(job, "user"));
		json_decref(job);
		return EXIT_FAIL;
	}
	if (!path) {
		json_decref(job);
		return cmd_usagef(PROG, "job %s has no log path", ref);
	}
	fd = open_log_file(path, uid, &e);
	if (fd == -2) {
		json_decref(job);
		return cmd_fail(PROG, &e);
	}
	if (fd < 0 && errno == EACCES) {
		/* An admin of the machine's daemon who may not read the owner's
		 * file: the daemon serves its end. */
		fd = log_from_daemon(jint(job, "id", 0), follow);
		follow = 0;
		if (fd < 0)
			errno = EACCES;
	}
	if (fd < 0 && !(follow && errno == ENOENT)) {
		if (errno == ENOENT && (state && (strcmp(state, "Queued") == 0 ||
		    strcmp(state, "Hold") == 0)))
			fprintf(stderr, "%s: job %lld has not started yet; its "
			    "log will be %s\n", PROG,
			    (long long)jint(job, "id", 0), path);
		else
			fprintf(stderr, "%s: cannot open %s: %s\n", PROG, path,
			    strerror(errno));
		json_decref(job);
		return EXIT_FAIL;
	}
	if (fd >= 0) {
		long long left = first >= 0 ? first : -1;

		if (last >= 0)
			off = job_last_lines_offset(fd, last);
		if (off < 0 || (first != 0 && copy_out(fd, &off, &left) < 0)) {
			fprintf(stderr, "%s: cannot read %s: %s\n", PROG, path,
			    strerror(errno));
			rc = EXIT_FAIL;
		}
	}
	if (rc == EXIT_OK && follow) {
		char idbuf[32];

		snprintf(idbuf, sizeof idbuf, "%lld",
		    (long long)jint(job, "id", 0));
		if (follow_log(idbuf, path, uid, fd, off, &e) < 0)
			rc = cmd_fail(PROG, &e);
		fd = -1; /* follow_log closed it */
	}
	log_write("", 0, 1);	/* what was held for the next bytes */
	fflush(stdout);
	if (fd >= 0)
		close(fd);
	json_decref(job);
	return rc;
}

/* ---------- attach ---------- */

static const char attach_help[] =
"usage: gjob attach ID\n\n"
"Attach your terminal to a running job of the tmux executor: see its output\n"
"and type into it. Detach again with Ctrl-b d; the job runs on.\n\n"
"With your own daemon this is the job's session on gflow's tmux server.\n"
"With the system daemon the job's runner offers its terminal on a socket:\n"
"you see the last 64 KiB of output first, the window size follows yours,\n"
"Ctrl-b Ctrl-b types one Ctrl-b. Only the job's owner, root and members of\n"
"[daemon] admin_group may attach. Jobs of the process executor have no\n"
"terminal: follow them with gjob log ID --follow.\n";

/* A job is Running before tmux has made its session (the daemon asks for
 * it without waiting): give tmux a moment, up to 2 s. */
static void wait_for_session(const char *sock, const char *session)
{
	for (int i = 0; i < 40; i++) {
		size_t n;
		char **names = tmux_session_names(sock, &n);
		int found = names && strv_contains(names, n, session);

		strv_free(names, n);
		if (found)
			return;
		usleep(50000);
	}
}

static int job_attach(int argc, char **argv)
{
	char **pos, target[300], sockbuf[4200];
	const char *state, *session, *exec_kind, *sock, *attach_sock;
	int npos, rc = EXIT_OK;
	struct gf_err e;
	json_t *job;
	long long id;

	if (simple_args(argc, argv, attach_help, &pos, &npos, &rc) < 0)
		return rc;
	if (npos != 1) {
		free(pos);
		return cmd_usagef(PROG, "usage: gjob attach ID");
	}
	job = fetch_job(pos[0], &e);
	free(pos);
	if (!job)
		return cmd_fail(PROG, &e);
	id = (long long)jint(job, "id", 0);
	state = jstr(job, "state");
	session = jstr(job, "tmux_session");
	sock = jstr(job, "tmux_socket");
	exec_kind = jstr(job, "executor");
	attach_sock = jstr(job, "attach_socket");
	if (state && (strcmp(state, "Queued") == 0 || strcmp(state, "Hold") == 0))
		fprintf(stderr, "%s: job %lld has not started yet (%s)\n", PROG,
		    id, state);
	else if (state_is_ended(state))
		fprintf(stderr, "%s: job %lld has ended (%s); see its output "
		    "with: gjob log %lld\n", PROG, id, state, id);
	else if ((exec_kind && strcmp(exec_kind, "tmux") != 0) || (!session && !attach_sock))
		fprintf(stderr, "%s: job %lld runs with the %s executor and has "
		    "no tmux session; follow its output with: gjob log %lld "
		    "--follow\n", PROG, id, exec_kind ? exec_kind : "process",
		    id);
	else if (attach_sock) {
		/* The system daemon: the runner offers the job's terminal. */
		rc = attach_job(id, attach_sock, jstr(job, "user"));
		json_decref(job);
		return rc;
	} else
		goto attach;
	json_decref(job);
	return EXIT_FAIL;
attach:
	/* The job's session lives on gflow's own tmux server (-S socket). */
	snprintf(target, sizeof target, "=%s", session);
	snprintf(sockbuf, sizeof sockbuf, "%s", sock ? sock : "");
	json_decref(job);
	if (sockbuf[0] && attach_tmux_verified(sockbuf, &e) < 0)
		return cmd_fail(PROG, &e);
	if (sockbuf[0])
		wait_for_session(sockbuf, session);
	fflush(stdout);
	if (sockbuf[0])
		execlp("tmux", "tmux", "-S", sockbuf, "attach-session", "-t",
		    target, (char *)NULL);
	else if (getenv("TMUX") && *getenv("TMUX"))
		execlp("tmux", "tmux", "switch-client", "-t", target, (char *)NULL);
	else
		execlp("tmux", "tmux", "attach-session", "-t", target,
		    (char *)NULL);
	fprintf(stderr, "%s: cannot run tmux: %s\n", PROG, strerror(errno));
	return EXIT_FAIL;
}

/* ---------- close-sessions ---------- */

static const char close_help[] =
"usage: gjob close-sessions (-a | -j IDS | -s STATES | -p TEXT)...\n\n"
"Kill the tmux sessions left by ended jobs (alias: gjob close). Without a\n"
"filter it does nothing and says so. Filters combine (all must match):\n"
"  -a, --all             every ended job's session\n"
"  -j, --jobs IDS        these jobs (also IDS without -j)\n"
"  -s, --state STATES    jobs in these ended states (--states; default:\n"
"                        finished, failed, cancelled, timeout); a running\n"
"                        or waiting job's session is its job: use gcancel\n"
"  -p, --pattern TEXT    sessions whose name contains TEXT\n";

enum { CS_ALL = 1100, CS_JOBS, CS_STATE, CS_PATTERN };

static const struct opt_def close_opts[] = {
	{ CS_ALL, "all", 'a', 0 }, { CS_JOBS, "jobs", 'j', 1 },
	{ CS_STATE, "state", 's', 1 }, { CS_STATE, "states", 0, 1 },
	{ CS_PATTERN, "pattern", 'p', 1 }, { J_HELP, "help", 'h', 0 },
};

/* -s STATES: only ended states, as the names /jobs takes. */
static char *close_states(const char *val, struct gf_err *e)
{
	char *states = queue_states_param(val, e), *save = NULL, *copy, *tok;

	if (!states)
		return NULL;
	copy = xstrdup(states);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!state_is_ended(tok)) {
			gf_err_set(e, "invalid --state '%s': %s jobs have no session to close apart from the job "
			    "itself (use gcancel)", val, tok);
			free(copy);
			free(states);
			return NULL;
		}
	free(copy);
	return states;
}

/* Is this session alive on the tmux server of sock (NULL: the default)? */
static int session_alive(const char *sock, const char *session)
{
	size_t n;
	char **live = tmux_session_names(sock, &n);
	int alive = strv_contains(live, n, session);

	strv_free(live, n);
	return alive;
}

static int job_close_sessions(int argc, char **argv)
{
	struct sbuf path = { 0 }, q = { 0 }, idl = { 0 };
	struct opt_parser p;
	const char *val, *pattern = NULL;
	char *states = NULL;
	int id, all = 0, rc = EXIT_OK, closed = 0;
	size_t i;
	struct gf_err e;
	json_t *resp = NULL, *jobs;

	opt_init(&p, argc, argv, 1, close_opts, sizeof close_opts / sizeof close_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL || id == CS_JOBS) {
			sbuf_addf(&idl, "%s%s", idl.len ? "," : "", val);
		} else if (id == CS_ALL) {
			all = 1;
		} else if (id == CS_STATE) {
			free(states);
			if (!(states = close_states(val, &e)))
				goto usage;
		} else if (id == CS_PATTERN) {
			pattern = val;
		} else {
			rc = job_help_or_fail(close_help, id, val, &e);
			goto out;
		}
	}
	if (!all && !idl.len && !states && !pattern) {
		rc = cmd_usagef(PROG, "close-sessions needs a filter: -a (every ended job), -j IDS, -s STATES "
		    "or -p TEXT; nothing was closed");
		goto out;
	}
	url_add_param(&q, "states", states ? states : "Finished,Failed,Cancelled,Timeout");
	if (idl.len) {
		struct gf_jobref_list l;

		if (gf_parse_jobref_list(idl.p, &l, &e) < 0)
			goto usage;
		gf_jobref_list_free(&l);
		url_add_param(&q, "ids", idl.p);
	}
	sbuf_adds(&path, "/jobs");
	sbuf_adds(&path, q.p);
	sbuf_free(&q);
	resp = api_get(path.p, &e);
	if (!resp) {
		rc = cmd_fail(PROG, &e);
		goto out;
	}
	jobs = json_object_get(resp, "jobs");
	for (i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *s = jstr(j, "tmux_session");
		const char *sock = jstr(j, "tmux_socket");
		char target[300], *out;
		char *kill[] = { "tmux", "kill-session", "-t", target, NULL };
		char *kill_on[] = { "tmux", "-S", (char *)sock, "kill-session",
			"-t", target, NULL };
		int status;

		if (!s || !state_is_ended(jstr(j, "state")) || (pattern && !strstr(s, pattern)))
			continue;
		if (!session_alive(sock, s))
			continue;
		snprintf(target, sizeof target, "=%s", s);
		if (run_capture(sock ? kill_on : kill, &out, &status, &e) < 0 ||
		    status != 0) {
			/* It may have closed by itself meanwhile (its job's
			 * supervisor ended): then there is nothing to do. */
			if (session_alive(sock, s)) {
				fprintf(stderr, "%s: cannot close session %s of "
				    "job %lld\n", PROG, s,
				    (long long)jint(j, "id", 0));
				rc = EXIT_FAIL;
			}
		} else {
			printf("Closed session %s (job %lld)\n", s,
			    (long long)jint(j, "id", 0));
			closed++;
		}
		free(out);
	}
	if (!closed && rc == EXIT_OK)
		printf("No sessions of ended jobs to close\n");
	goto out;
usage:
	rc = cmd_usage_error(PROG, &e);
out:
	json_decref(resp);
	free(states);
	sbuf_free(&idl);
	sbuf_free(&q);
	sbuf_free(&path);
	return rc;
}

/* ---------- hold / release ---------- */

static const char hold_help[] =
"usage: gjob hold IDS\n\nKeep queued jobs from starting until released.\n";

static int job_hold(int argc, char **argv)
{
	char **pos, *ids;
	int npos, rc = EXIT_OK;
	json_t *body, *refs;

	if (simple_args(argc, argv, hold_help, &pos, &npos, &rc) < 0)
		return rc;
	if (!npos) {
		free(pos);
		return cmd_usagef(PROG, "usage: gjob hold IDS");
	}
	ids = join_ids(pos, npos);
	free(pos);
	/* jobs on a Slurm cluster: scontrol hold (remote.c) */
	rc = remote_divert(PROG, "hold", ids, 0, &refs);
	free(ids);
	if (!refs)
		return rc;
	body = json_object();
	json_object_set_new(body, "ids", refs);
	if (job_post_report(PROG, "/jobs/hold", body, "Held") != EXIT_OK)
		rc = EXIT_FAIL;	/* rc: what the cluster's jobs gave */
	return rc;
}

enum { R_AT };

static const struct opt_def release_opts[] = {
	{ R_AT, "at", 0, 1 }, { J_HELP, "help", 'h', 0 },
};

static const char release_help[] =
"usage: gjob release IDS [--at TIME]\n\n"
"Let held jobs queue again, now or at TIME (HH:MM[:SS],\n"
"YYYY-MM-DD[THH:MM[:SS]], now+N[s|m|h|d]).\n";

static int job_release(int argc, char **argv)
{
	struct opt_parser p;
	struct sbuf ids = { 0 };
	struct gf_err e;
	const char *val;
	time_t at = 0;
	int id, has_at = 0, rc;
	json_t *body, *refs, *resp, *done;
	size_t i;

	opt_init(&p, argc, argv, 1, release_opts,
	    sizeof release_opts / sizeof release_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL) {
			sbuf_addf(&ids, "%s%s", ids.len ? "," : "", val);
		} else if (id == R_AT) {
			if (gf_parse_begin_time(val, time(NULL), &at, &e) < 0) {
				sbuf_free(&ids);
				return cmd_usage_error(PROG, &e);
			}
			has_at = 1;
		} else {
			sbuf_free(&ids);
			return job_help_or_fail(release_help, id, val, &e);
		}
	}
	if (!ids.len)
		return cmd_usagef(PROG, "usage: gjob release IDS [--at TIME]");
	/* jobs on a Slurm cluster: scontrol release (remote.c); --at is
	 * this daemon's and not Slurm's */
	if (!has_at) {
		int rrc = remote_divert(PROG, "release", ids.p, 0, &refs);

		sbuf_free(&ids);
		if (!refs)
			return rrc;
	} else {
		refs = jobref_list_json(ids.p, &e);
		sbuf_free(&ids);
		if (!refs)
			return cmd_usage_error(PROG, &e);
	}
	body = json_object();
	json_object_set_new(body, "ids", refs);
	json_object_set_new(body, "at", has_at ? json_integer(at) : json_null());
	resp = api_post("/jobs/release", body, &e);
	json_decref(body);
	if (!resp)
		return cmd_fail(PROG, &e);
	if (!has_at) {
		rc = job_report_done(resp, "Released");
	} else {
		char when[64];

		fmt_local_time((double)at, when, sizeof when);
		done = json_object_get(resp, "done");
		for (i = 0; i < json_array_size(done); i++)
			printf("Job %lld will be released at %s\n",
			    (long long)json_integer_value(json_array_get(done, i)),
			    when);
		json_object_set_new(resp, "done", json_array());
		rc = job_report_done(resp, "Released");
	}
	json_decref(resp);
	return rc;
}

/* ---------- dispatch ---------- */

static const struct {
	const char *name;
	int (*fn)(int, char **);
} subs[] = {
	{ "show", job_show }, { "log", job_log }, { "attach", job_attach },
	{ "close-sessions", job_close_sessions }, { "hold", job_hold },
	{ "release", job_release }, { "update", job_update },
	{ "redo", job_redo },
	/* the other tool's short names */
	{ "s", job_show }, { "l", job_log }, { "a", job_attach },
	{ "close", job_close_sessions }, { "h", job_hold },
	{ "r", job_release }, { "u", job_update },
};

static const char job_help[] =
"usage: gjob <command> [args...]\n\n"
"  show, s [-o json] IDS             a job's details, Key=Value (or JSON)\n"
"  log, l ID [-f N | -l N] [--follow] [--raw]   its output\n"
"  attach, a ID                      its terminal (tmux executor; Ctrl-b d detaches)\n"
"  close-sessions, close -a|-j IDS|-s STATES|-p TEXT\n"
"                                    kill tmux sessions of ended jobs\n"
"  hold, h IDS                       keep queued jobs from starting\n"
"  release, r IDS [--at TIME]        let held jobs queue again\n"
"  update, u IDS [options]           change queued or held jobs\n"
"  redo ID [--cascade] [options]     submit an ended job again\n"
"  completion bash|zsh|fish          a shell completion script\n\n"
"IDS: 42, 1,2,3, 1-5, 1,3,5-7; @ is your latest job, @~N the one N\n"
"before it. 'gjob <command> --help' for one command. Also: --version,\n"
"--config PATH (before the command; checked, and its timezone is the\n"
"one times are shown and read in).\n";

static int job_exec(int argc, char **argv)
{
	size_t i;
	int skip = cmd_leading_config(argc, argv, PROG);

	if (skip < 0)
		return EXIT_FAIL;
	argc -= skip;
	argv += skip;

	if (argc < 2)
		return cmd_usagef(PROG, "missing command (commands: show, log, attach, close-sessions, hold, release, update, redo)");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(job_help, stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cmd_version();
	if (strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_job, argc - 1, argv + 1);
	for (i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc - 1, argv + 1);
	return cmd_usagef(PROG, "unknown command '%s' (commands: show, log, "
	    "attach, close-sessions, hold, release, update, redo)", argv[1]);
}

const struct command cmd_job = {
	"job", "gjob", "show, follow and change jobs", job_exec,
	"show log attach close-sessions hold release update redo completion "
	"s l a close h r u "
	"--first --last --head --tail --follow --raw --at --cascade --all --jobs --state --states --pattern "
	"--command --script --param --gpus --gres --shared --gpu-memory --max-gpu-mem --max-gpu-memory "
	"--memory --max-mem --max-memory --memory-limit --time --time-limit --timelimit "
	"--priority --nice --name --job-name --conda-env --depends-on --dependency "
	"--depends-on-all --depends-on-any --no-auto-cancel --no-auto-cancel-on-dep-failure "
	"--auto-cancel --auto-cancel-on-dep-failure "
	"--max-retries --max-concurrent --begin --clear-gpu-memory --clear-gpu-memory-limit "
	"--clear-memory --clear-memory-limit --clear-time --clear-time-limit --clear-conda-env "
	"--clear-depends-on --clear-dependencies --clear-deps --clear-begin --clear-shared "
	"--clear-max-retries --clear-max-concurrent --output --config --help --version",
};
