/* jobshow.c — gjob show (alias s): jobs as Key=Value lines (job_show_text,
 * unit-tested) or as the daemon's JSON objects. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "remote.h"
#include "util.h"
#define PROG "gjob"

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
	if (jhas(j, "expected_start")) {
		json_t *g = json_object_get(j, "expected_gpus");
		struct sbuf ids = { 0 };

		kv_time(&b, "ExpectedStart", j, "expected_start");
		for (size_t i = 0; json_is_array(g) && i < json_array_size(g); i++)
			sbuf_addf(&ids, "%s%lld", i ? "," : "", (long long)json_integer_value(json_array_get(g, i)));
		if (ids.len)
			kv(&b, "ExpectedGPUs", ids.p);
		free(ids.p);
	} else if (json_object_get(j, "expected_start")) {
		/* null: not known, and why */
		char *why = NULL;

		if (asprintf(&why, "N/A (%s)", jstr(j, "expected_start_note") ? jstr(j, "expected_start_note") : "not known") < 0)
			abort();
		kv(&b, "ExpectedStart", why);
		free(why);
	}
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
	/* idle reclaim ([gpu.idle_reclaim]): how long its GPUs have been idle */
	if (jhas(j, "idle_secs")) {
		int64_t t = jint(j, "idle_secs", 0);

		snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(t / 3600), (long long)(t / 60 % 60),
		    (long long)(t % 60));
		kv(&b, "IdleFor", buf);
	}
	kv(&b, "Shared", yes_no(j, "shared", 0));
	kv_mb(&b, "GPUMemory", j, "gpu_memory_mb");
	kv_mb(&b, "Memory", j, "memory_mb");
	kv_int(&b, "CPUs", jint(j, "cpus", 1));
	if (jhas(j, "cpu_ids"))
		kv(&b, "CPUIDs", jstr(j, "cpu_ids"));
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
	if (jstr(j, "notify_email")) {
		/* the job's own mail: to whom, on which events, and whether the
		 * daemon has a transport to send it with */
		sbuf_adds(&b, "Notify=");
		fmt_text(&b, jstr(j, "notify_email"));
		sbuf_adds(&b, " on ");
		fmt_text(&b, jstr(j, "notify_on") ? jstr(j, "notify_on")
		    : "job_completed,job_failed,job_timeout,job_cancelled");
		if (!jbool(j, "notify_transport", 1))
			sbuf_adds(&b, " (no mail transport)");
		sbuf_addc(&b, '\n');
	}
	kv_time(&b, "BeginTime", j, "begin_at");
	kv(&b, "Executor", jstr(j, "executor"));
	if (jbool(j, "interactive", 0))	/* galloc's session */
		kv(&b, "Interactive", "yes");
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

static const char show_help[] =
"usage: gjob show [-o text|json] IDS\n\n"
"Show jobs as Key=Value lines, a blank line between jobs. IDS: 42, 1,2,3,\n"
"1-5, @ (your latest job), @~N (N before it).\n"
"  -o, --output json   the jobs as the daemon's JSON objects, one array\n";

enum { S_OUTPUT };

static const struct opt_def show_opts[] = {
	{ S_OUTPUT, "output", 'o', 1 }, { J_HELP, "help", 'h', 0 },
};

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
	ids = job_join_ids(pos, npos);
	free(pos);
	if (gf_parse_jobref_list(ids, &l, &e) < 0) {
		free(ids);
		return cmd_usage_error(PROG, &e);
	}
	url_add_param(&q, "ids", ids);
	url_add_param(&q, "users", "all");
	url_add_param(&q, "start", "1");	/* queued jobs' expected starts */
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

const struct job_cmd job_cmd_show = { "show", "s", job_show };
