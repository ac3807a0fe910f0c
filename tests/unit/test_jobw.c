/* test_jobw.c — a job written by jobw.c is byte for byte the compact dump
 * of job_to_json_only (job.c): for varied jobs (text that is not UTF-8,
 * byte strings that become base64, Slurm jobs, ended and running jobs,
 * params and GPU usage), with every field, each field alone, and field
 * lists with unknown names. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobw.h"

static char *dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static struct job *varied(int k)
{
	struct job *j = job_new();
	static const char *const argv0[] = { "python", "train.py", "--lr=0.1", "say \"hi\"\nbye", NULL };

	j->id = 1000 + k;
	j->state = (enum job_state)(k % JS_NSTATES);
	j->name = dup(k % 3 == 0 ? "caf\xc3\xa9-\xf0\x9f\x98\x80" : k % 3 == 1 ? "bad\xff\xfename" : "tab\tname");
	j->user = dup(k % 2 ? "alice" : NULL);
	j->uid = (uid_t)(1000 + k % 3);
	j->project = dup(k % 4 == 1 ? "proj \"q\"" : NULL);
	j->reason = dup(k % 5 ? "JobHeldUser" : NULL);
	j->argv = calloc(6, sizeof *j->argv);
	for (int i = 0; argv0[i]; i++)
		j->argv[i] = strdup(argv0[i]);
	if (k % 3 == 1)
		j->argv[4] = strdup("\xff\x01raw bytes");	/* base64 */
	jm_w(j)->script = dup(k % 6 == 2 ? "#!/bin/sh\necho \xe9\n" : NULL);
	j->cwd = dup(k % 2 ? "/home/alice/w" : "/tmp/\xff");
	jm_w(j)->log_dir = dup(k % 3 == 2 ? "/home/alice/logs" : NULL);
	j->env_id = k;
	j->gpus = k % 3;
	j->shared = k % 2;
	jm_w(j)->gpu_memory_mb = k % 4 ? 8192 : 0;
	j->memory_mb = k % 5 ? 0 : 2048;
	j->time_limit_secs = k % 2 ? 3600 : 0;
	j->priority = 10 + k;
	jm_w(j)->conda_env = dup(k % 3 ? NULL : "torch");
	jm_w(j)->notify_email = dup(k % 4 == 3 ? "a@b.c" : NULL);
	jm_w(j)->notify_on = dup(k % 4 == 3 ? "fail,end" : NULL);
	j->rlimits = dup(k % 3 == 1 ? "core=0,nofile=1024:4096,stack=8388608:unlimited" : NULL);
	jm_w(j)->cpus = k % 3 == 2 ? k + 2 : 0;
	jm_w(j)->cpu_ids = dup(k % 5 == 2 ? "0-1,7" : NULL);
	if (k % 4 == 1) {	/* gbatch --preemptible; some being preempted */
		jm_w(j)->preempt = PJ_PREEMPTIBLE | (k % 8 == 5 ? PJ_MODE_CANCEL | PJ_END_CANCEL : 0);
		jm_w(j)->preempt_sig = 10;
		jm_w(j)->preempt_secs = k;
		jm_w(j)->requeues = k % 3;
		jm_w(j)->preempt_since = k % 8 == 5 ? 1733220000.25 : 0;
	}
	jm_w(j)->interactive = k % 4 == 1;
	if (k % 2) {
		j->ndeps = 2;
		j->deps = calloc(2, sizeof *j->deps);
		j->deps[0] = 3, j->deps[1] = 4;
	}
	j->dep_any = k % 4 == 1;
	j->auto_cancel = k % 3;
	jm_w(j)->begin_at = k % 4 == 2 ? 1733220000.5 : 0;
	/* some ids too wide for struct job's 32 bits: kept in job_more */
	job_set_array_task_id(j, k % 11 == 4 ? INT64_C(1) << 40 : k % 3 ? k : 0);
	job_set_group_id(j, k % 13 == 6 ? INT64_C(5000000000) : k % 2 ? 7 : 0);
	j->max_concurrent = k % 3;
	j->max_retries = k % 2;
	j->attempt = k % 2;
	jm_w(j)->retry_of = k % 5 == 3 ? 12 : 0;
	jm_w(j)->redo_of = k % 5 == 4 ? 13 : 0;
	if (k % 3 == 0)
		json_object_set_new(jm_w(j)->params, "lr", json_real(0.001 * k));
	if (k % 7 == 5) {
		json_decref(jm_w(j)->params);
		jm_w(j)->params = NULL;
	}
	j->submit_time = 1733220000.0 + k * 1.123456789;
	j->start_time = k % 2 ? 1733220100.25 + k : 0;
	j->end_time = k % 4 == 3 ? 1733220200.0 : 0;
	j->has_exit = k % 3 != 0;
	j->exit_code = k % 3 == 1 ? 2 : 0;
	j->exit_signal = k % 3 == 2 ? 9 : 0;
	j->gpu_mask = k % 2 ? 0x5 : k % 3 ? 1ULL << 63 : 0;
	j->memory_enforced = k % 3 - 1;
	j->executor = k % 2 ? EXEC_TMUX : EXEC_PROCESS;
	j->tmux_session = dup(k % 2 ? "gflow-1" : NULL);
	j->tmux_socket = dup(k % 2 ? "/run/gflow/tmux.sock" : NULL);
	j->active = k % 2;
	j->runner_pid = 4242 + k;
	j->runner_ticks = 123456789ULL * (unsigned)k;
	j->run_seq = k;
	if (k % 2)
		jm_w(j)->gpu_usage = json_pack("{s:[s],s:i,s:f,s:b}", "uuids", "GPU-1", "peak_mb", 512, "util", 33.5,
					 "memory_exceeded", 0);
	if (k % 5 == 1) {
		jm_w(j)->cluster = strdup("hpc");
		jm_w(j)->slurm_id = dup(k % 2 ? "123_4" : NULL);
		jm_w(j)->remote_log = strdup("/scratch/out.log");
	}
	return j;
}

static void check(const struct job *j, const char *log, char *const *only)
{
	json_t *o = job_to_json_only(j, log, only);
	char *want = json_dumps(o, JSON_COMPACT);
	struct jsonw w = { 0 };
	bool first = true;

	jw_lit(&w, "{");
	jobw_members(&w, j, log, jobw_mask(only), &first);
	jw_lit(&w, "}");
	assert_string_equal(w.p, want);
	free(want);
	json_decref(o);
	jw_free(&w);
}

static void same_as_jansson(void **state)
{
	char *one[2] = { NULL, NULL };

	(void)state;
	for (int k = 0; k < 70; k++) {
		struct job *j = varied(k);
		const char *log = k % 2 ? "/home/alice/logs/1.log" : k % 4 ? NULL : "/tmp/\xff.log";

		check(j, log, NULL);
		for (const char *const *f = job_field_names(); *f; f++) {
			one[0] = (char *)*f;
			check(j, log, one);
		}
		{
			char *some[] = { "id", "state", "st", "name", "start_time", "end_time", "gpus", "reason",
					 "gpu_ids", "id", "no_such_field", NULL };

			check(j, log, some);
		}
		job_free(j);
	}
}

static void masks(void **state)
{
	char *none[] = { NULL }, *two[] = { "name", "log_path", NULL };

	(void)state;
	for (const char *const *f = job_field_names(); *f; f++) {	/* each has its bit */
		char *one[] = { (char *)*f, NULL };

		assert_true(jobw_has(jobw_mask(one), *f));
		assert_true(jobw_has(jobw_mask(NULL), *f));
	}
	assert_int_equal(jobw_mask(none), 0);
	assert_true(jobw_has(jobw_mask(two), "log_path"));
	assert_false(jobw_has(jobw_mask(two), "id"));
	assert_false(jobw_has(jobw_mask(NULL), "nonsense"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_as_jansson),
		cmocka_unit_test(masks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
