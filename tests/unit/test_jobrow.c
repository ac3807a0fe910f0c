/* test_jobrow.c — the quick reader of stored job rows (jobrow.c): every row
 * it takes gives the very job job_from_json gives, and the rows it cannot
 * read that way (non-ASCII, \u escapes, base64 byte strings, broken JSON)
 * are left to job_from_json. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "jobw.h"

/* The job as its stored form says it, keys sorted: equal texts, equal jobs. */
static char *form(const struct job *j)
{
	json_t *o = job_to_json(j, NULL);
	char *t = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);

	json_decref(o);
	return t;
}

/* x and y have the same stored fields. */
static void assert_same_job(const struct job *x, const struct job *y)
{
	char *a = form(x), *b = form(y);

	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* The quick reader takes `text` and agrees with job_from_json. */
static void same_as_jansson(const char *text)
{
	struct gf_err e;
	json_t *o = json_loads(text, 0, NULL);
	struct job *slow, *quick = job_from_row(text, strlen(text));

	if (!quick)
		fail_msg("the quick reader refused: %s", text);
	assert_non_null(o);
	slow = job_from_json(o, &e);
	assert_non_null(slow);
	assert_same_job(slow, quick);
	job_free(slow);
	job_free(quick);
	json_decref(o);
}

static void left_to_jansson(const char *text)
{
	struct job *j = job_from_row(text, strlen(text));

	if (j)
		fail_msg("the quick reader took: %s", text);
}

static struct job *full_job(void)
{
	struct job *j = job_new();

	j->name = strdup("train \"big\"\n\tmodel\\/x");
	j->user = strdup("alice");
	j->uid = 1001;
	j->project = strdup("vision");
	j->state = JS_RUNNING;
	j->argv = calloc(4, sizeof *j->argv);
	j->argv[0] = strdup("python");
	j->argv[1] = strdup("-c");
	j->argv[2] = strdup("print('a, b', \"c\")\\\b\f\r");
	jm_w(j)->script = strdup("#!/bin/sh\necho hi\n");
	j->cwd = strdup("/home/alice/work");
	jm_w(j)->log_dir = strdup("/home/alice/.local/share/gflow/logs");
	j->env_id = 7;
	j->gpus = 2;
	j->shared = true;
	jm_w(j)->gpu_memory_mb = 20480;
	j->memory_mb = 65536;
	j->time_limit_secs = 7200;
	j->priority = -3;
	jm_w(j)->conda_env = strdup("torch");
	jm_w(j)->notify_email = strdup("a@example.org,b@example.org");
	jm_w(j)->notify_on = strdup("fail,timeout");
	j->rlimits = strdup("core=0,nofile=1024:4096,nproc=40");
	jm_w(j)->cpus = 6;
	jm_w(j)->cpu_ids = strdup("0-3,8,10");
	jm_w(j)->preempt = PJ_PREEMPTIBLE | PJ_END_CANCEL;
	jm_w(j)->preempt_sig = 12;
	jm_w(j)->preempt_secs = 30;
	jm_w(j)->requeues = 2;
	jm_w(j)->preempt_since = 1796292900.5;
	jm_w(j)->interactive = 1;
	j->ndeps = 3;
	j->deps = calloc(3, sizeof *j->deps);
	j->deps[0] = 4;
	j->deps[1] = 9000000000LL;
	j->deps[2] = 12;
	j->dep_any = true;
	j->auto_cancel = false;
	jm_w(j)->begin_at = 1796292960.125;
	job_set_array_task_id(j, 17);
	job_set_group_id(j, 3);
	j->max_concurrent = 4;
	j->max_retries = 2;
	j->attempt = 1;
	jm_w(j)->retry_of = 2;
	jm_w(j)->redo_of = 1;
	jm_w(j)->params = json_object();
	json_object_set_new(jm_w(j)->params, "lr", json_real(0.001));
	json_object_set_new(jm_w(j)->params, "layers", json_pack("[i,i,{s:s}]", 1, 2, "k", "v"));
	j->submit_time = 1796292960.8679161;
	j->start_time = 1796292961.5;
	j->end_time = 1e9;
	j->has_exit = true;
	j->exit_signal = 9;
	j->gpu_mask = (1ULL << 0) | (1ULL << 5) | (1ULL << 63);
	j->memory_enforced = 1;
	j->executor = EXEC_PROCESS;
	j->tmux_session = strdup("gflow-1");
	j->tmux_socket = strdup("/tmp/tmux-0/default");
	j->active = true;
	j->runner_pid = 4242;
	j->runner_ticks = 123456789012ULL;
	j->run_seq = 3;
	jm_w(j)->gpu_usage = json_pack("{s:[{s:s,s:i}],s:f}", "gpus", "uuid", "GPU-1", "peak_mb", 100, "mean", 0.5);
	jm_w(j)->cluster = strdup("hpc");
	jm_w(j)->slurm_id = strdup("123_4");
	jm_w(j)->remote_log = strdup("/scratch/a.out");
	return j;
}

/* Every field the daemon writes, through the stored form and back. */
static void stored_forms_read_the_same(void **state)
{
	struct job *j = full_job();
	struct job *plain = job_new();
	json_t *o;
	char *t;

	(void)state;
	for (int variant = 0; variant < 4; variant++) {
		if (variant == 1) {
			j->has_exit = true;
			j->exit_signal = 0;
			j->exit_code = 3;
			j->memory_enforced = 0;
			j->executor = EXEC_TMUX;
		} else if (variant == 2) {
			j->has_exit = false;
			j->memory_enforced = -1;
			j->shared = false;
			j->dep_any = false;
		}
		o = job_to_json(variant == 3 ? plain : j, "/x/1.log");
		t = json_dumps(o, JSON_COMPACT);
		same_as_jansson(t);
		free(t);
		t = json_dumps(o, JSON_INDENT(2));	/* whitespace anywhere */
		same_as_jansson(t);
		free(t);
		json_decref(o);
	}
	plain->argv = calloc(1, sizeof *plain->argv);
	o = job_to_json(plain, NULL);
	t = json_dumps(o, JSON_COMPACT);
	same_as_jansson(t);
	free(t);
	json_decref(o);
	job_free(j);
	job_free(plain);
}

/* Rows of other shapes that are still plain: the reader gives what
 * job_from_json gives (defaults for what is missing or of another type,
 * the last of a key given twice, unknown keys ignored). */
static void odd_but_plain_rows(void **state)
{
	static const char *const rows[] = {
		"{\"state\":\"Queued\",\"command\":[]}",
		"{\"command\":[\"a\",\"b\"],\"state\":\"queued\",\"name\":\"x\",\"name\":\"y\"}",
		"{\"state\":\"R\",\"command\":[\"a\"],\"gpus\":2.5,\"priority\":\"high\",\"uid\":-1,"
		"\"begin_at\":5,\"submit_time\":1e3,\"start_time\":-0.5E-2,\"end_time\":\"x\"}",
		"{\"state\":\"Finished\",\"command\":[\"a\"],\"exit_code\":0,\"exit_signal\":null,"
		"\"unknown\":{\"deep\":[[[1,2],{\"a\":null}]]},\"other\":[true,false,null,-0]}",
		"{\"state\":\"Hold\",\"command\":[\"a\"],\"params\":[],\"gpu_usage\":\"none\",\"shared\":1,"
		"\"active\":\"yes\",\"auto_cancel\":null,\"memory_enforced\":0,\"dep_mode\":5}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"depends_on\":[],\"gpu_ids\":[],\"cwd\":null,"
		"\"script\":null,\"name\":null,\"params\":{ }}",
		" \t\r\n{ \"state\" : \"Queued\" , \"command\" : [ \"a\" , \"b\" ] , \"depends_on\" : [ 1 , 2 ] } \n",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"runner_ticks\":9223372036854775807,"
		"\"runner_pid\":-9223372036854775808}",
		/* cpus: old rows have none (1); 0, 1 and less read as 1 */
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"cpus\":0,\"cpu_ids\":null}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"cpus\":-4}",
		"{\"state\":\"Running\",\"command\":[\"a\"],\"cpus\":3,\"cpu_ids\":\"1-2,5\"}",
		/* interactive (galloc): old rows have none; only true is one */
		"{\"state\":\"Running\",\"command\":[\"a\"],\"interactive\":true}",
		"{\"state\":\"Running\",\"command\":[\"a\"],\"interactive\":false}",
		/* preempt: any shape reads as job_from_json reads it */
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"preempt\":{\"preemptible\":true,\"mode\":\"cancel\","
		"\"signal\":10,\"secs\":5,\"requeues\":3,\"since\":null}}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"preempt\":{\"signal\":\"x\",\"secs\":-1,\"since\":7}}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"preempt\":true}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"preempt\":null}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
		same_as_jansson(rows[i]);
	/* a row from before --cpus books 1; one with cpus books those */
	struct job *j = job_from_row(rows[0], strlen(rows[0]));

	assert_non_null(j);
	assert_int_equal(job_cpus(j), 1);
	assert_null(j->more);	/* the default makes no block */
	job_free(j);
	j = job_from_row(rows[10], strlen(rows[10]));
	assert_non_null(j);
	assert_int_equal(job_cpus(j), 3);
	assert_string_equal(jm(j)->cpu_ids, "1-2,5");
	job_free(j);
	j = job_from_row(rows[11], strlen(rows[11]));
	assert_non_null(j);
	assert_int_equal(jm(j)->interactive, 1);
	job_free(j);
	j = job_from_row(rows[12], strlen(rows[12]));
	assert_non_null(j);
	assert_null(j->more);	/* false is the default: no block */
	job_free(j);
}

/* What the quick reader leaves to jansson: it must never guess. */
static void unusual_rows_are_left_to_jansson(void **state)
{
	static const char *const rows[] = {
		"",
		"[]",
		"{\"state\":\"Queued\",\"command\":[\"a\"]",
		"{\"state\":\"Queued\",\"command\":[\"a\"]} x",
		"{\"state\":\"Queued\",\"command\":[\"a\"],}",
		"{\"state\":\"Queued\",\"command\":[\"a\",]}",
		"{\"state\":\"Queued\" \"command\":[\"a\"]}",
		"{\"state\":\"Nope\",\"command\":[\"a\"]}",
		"{\"command\":[\"a\"]}",
		"{\"state\":\"Queued\"}",
		"{\"state\":\"Queued\",\"command\":\"a\"}",
		"{\"state\":\"Queued\",\"command\":[1]}",
		"{\"state\":\"Queued\",\"command\":[\"caf\xc3\xa9\"]}",
		"{\"state\":\"Queued\",\"command\":[\"a\\u00e9\"]}",
		"{\"state\":\"Queued\",\"command\":[\"a\\u0000b\"]}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"cwd\":{\"base64\":\"L3RtcA==\"}}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"cwd\":5}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"gpu_ids\":[\"0\"]}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"depends_on\":[1.5]}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"uid\":99999999999999999999}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"uid\":01}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"begin_at\":1.}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"begin_at\":1e999}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"name\":tru}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"name\":\"a\\x\"}",
		"{\"state\":\"Queued\",\"command\":[\"a\"],\"name\":\"tab\there\"}",
		"{\"st\\\"ate\":\"Queued\",\"state\":\"Queued\",\"command\":[\"a\"]}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
		left_to_jansson(rows[i]);
}

/* Pooled strings: one copy per text, left alone by job_str_free; a loaded
 * row's repeating fields are pooled. */
static void repeating_strings_are_pooled(void **state)
{
	char *a = job_str_shared("alice"), *b = job_str_shared("alice"), *c = strdup("alice");
	const char *row = "{\"state\":\"Queued\",\"command\":[\"true\"],\"user\":\"alice\",\"cwd\":\"/tmp\","
			  "\"tmux_socket\":\"/run/gflow/tmux.sock\"}";
	struct job *x = job_from_row(row, strlen(row)), *y = job_from_row(row, strlen(row));

	(void)state;
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, c);
	assert_ptr_equal(job_str_shared(c), a);
	assert_null(job_str_shared(NULL));
	job_str_free(a);	/* pooled: still there */
	assert_string_equal(b, "alice");
	job_str_free(c);	/* not pooled: freed */
	assert_non_null(x);
	assert_non_null(y);
	assert_ptr_equal(x->user, a);
	assert_ptr_equal(x->cwd, y->cwd);
	assert_ptr_equal(x->tmux_socket, y->tmux_socket);
	assert_ptr_equal(x->argv[0], y->argv[0]);
	assert_ptr_equal(x->argv, y->argv);	/* the same command: one vector */
	job_set_reason(x, "Resources");
	job_set_reason(y, "Resources");
	assert_ptr_equal(x->reason, y->reason);
	job_set_str(&x->reason, "mine");	/* a pooled one replaced: not freed */
	assert_string_equal(y->reason, "Resources");
	job_free(x);
	assert_string_equal(y->argv[0], "true");	/* a pooled vector outlives its jobs */
	assert_null(y->argv[1]);
	job_free(y);
}

/* Commands are pooled as vectors only when all their words agree, from a
 * row, a JSON form or a new job alike; a clone shares the pooled vector. */
static void commands_are_pooled_whole(void **state)
{
	const char *r1 = "{\"state\":\"Hold\",\"command\":[\"python\",\"train.py\",\"--lr\",\"1\"]}";
	const char *r2 = "{\"state\":\"Hold\",\"command\":[\"python\",\"train.py\",\"--lr\",\"2\"]}";
	const char *r3 = "{\"state\":\"Hold\",\"command\":[\"python\",\"train.py\"]}";
	struct job *a = job_from_row(r1, strlen(r1)), *b = job_from_row(r2, strlen(r2));
	struct job *c = job_from_row(r3, strlen(r3)), *n = job_new(), *k;
	json_t *o = json_loads(r1, 0, NULL);
	struct gf_err e;
	struct job *d = job_from_json(o, &e);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_non_null(d);
	assert_ptr_not_equal(a->argv, b->argv);
	assert_ptr_equal(a->argv[1], b->argv[1]);
	assert_ptr_not_equal(a->argv, c->argv);	/* a prefix is another command */
	assert_ptr_equal(a->argv, d->argv);
	n->argv = calloc(3, sizeof *n->argv);
	n->argv[0] = strdup("python");
	n->argv[1] = strdup("train.py");
	job_share_strings(n);
	assert_ptr_equal(n->argv, c->argv);
	k = job_clone(c);
	assert_ptr_equal(k->argv, c->argv);
	job_free(k);
	assert_string_equal(c->argv[1], "train.py");
	job_free(a);
	job_free(b);
	job_free(c);
	job_free(d);
	job_free(n);
	json_decref(o);
}

/* txn.c's snapshot: the same stored fields, its own memory. */
static void a_clone_is_the_same_job(void **state)
{
	struct job *j = full_job(), *c;
	char *a, *b;

	(void)state;
	j->dependents = malloc(sizeof *j->dependents + 2 * sizeof *j->dependents->id);
	*j->dependents = (struct job_ids){ .n = 1, .cap = 2 };
	j->dependents->id[0] = 9;
	c = job_clone(j);
	a = form(j);
	b = form(c);
	assert_string_equal(a, b);
	assert_ptr_not_equal(c->name, j->name);
	assert_ptr_not_equal(c->argv, j->argv);
	assert_ptr_not_equal(c->deps, j->deps);
	assert_ptr_not_equal(jm(c)->params, jm(j)->params);
	assert_null(c->dependents);
	assert_int_equal(job_ndependents(c), 0);
	assert_int_equal(job_ndependents(j), 1);
	job_free(j);	/* the clone stands alone */
	free(b);
	b = form(c);
	assert_string_equal(a, b);
	job_free(c);
	free(a);
	free(b);
}

/* The written row is the stored form job_to_json gives (types too: json_equal
 * tells an integer from a real), and reads back as the same job. */
static void check_written(const struct job *j)
{
	json_t *want = job_to_json(j, NULL), *got;
	char *text = jobw_row(j);
	struct job *back;

	assert_non_null(text);
	json_object_del(want, "id");
	got = json_loads(text, 0, NULL);
	if (!got || !json_equal(want, got)) {
		char *w = json_dumps(want, JSON_COMPACT);

		fail_msg("written %s\nwanted %s", text, w);
	}
	back = job_from_row(text, strlen(text));
	if (!back) {
		json_error_t err;
		json_t *o = json_loads(text, 0, &err);
		struct gf_err e;

		back = job_from_json(o, &e);	/* \u escapes: the long way */
		json_decref(o);
	}
	assert_non_null(back);
	assert_same_job(j, back);
	job_free(back);
	json_decref(want);
	json_decref(got);
	free(text);
}

static void rows_written_as_job_to_json_would(void **state)
{
	struct job *j = full_job(), *plain = job_new();

	(void)state;
	check_written(j);
	j->has_exit = true;
	j->exit_signal = 0;
	j->exit_code = -1;
	j->memory_enforced = 0;
	jm_w(j)->log_dir = (job_str_free(jm_w(j)->log_dir), NULL);
	jm_w(j)->gpu_usage = (json_decref(jm_w(j)->gpu_usage), NULL);
	jm_w(j)->cluster = (job_str_free(jm_w(j)->cluster), NULL);
	jm_w(j)->begin_at = 3.0;	/* a whole number stays a real */
	j->end_time = 0.1 + 0.2;
	job_set_str(&j->name, "ctl \x01\x1f\x7f end");
	check_written(j);
	j->memory_enforced = -1;
	j->has_exit = false;
	check_written(j);
	plain->argv = calloc(1, sizeof *plain->argv);
	check_written(plain);
	job_set_str(&j->name, "caf\xc3\xa9");
	check_written(j);
	job_set_str(&j->cwd, "/tmp/\xff");	/* not UTF-8: a base64 form */
	check_written(j);
	job_free(j);
	job_free(plain);
}

/* A job that sets none of the rarely set fields has no block for them,
 * read either way; one that sets one has it, and loses it when cleared. */
static void rare_fields_are_kept_only_when_set(void **state)
{
	const char *bare = "{\"name\":\"a\",\"state\":\"Hold\",\"command\":[\"true\"],\"params\":{},"
			   "\"begin_at\":null,\"script\":null,\"log_dir\":null}";
	const char *some = "{\"state\":\"Queued\",\"command\":[\"true\"],\"begin_at\":5.5}";
	json_t *o = json_loads(bare, 0, NULL);
	struct gf_err e;
	struct job *j;

	(void)state;
	j = job_from_row(bare, strlen(bare));
	assert_non_null(j);
	assert_null(j->more);
	assert_null(jm(j)->params);
	job_free(j);
	j = job_from_json(o, &e);
	assert_non_null(j);
	assert_null(j->more);
	json_decref(o);
	jm_w(j)->retry_of = 4;
	job_more_trim(j);
	assert_non_null(j->more);
	jm_w(j)->retry_of = 0;
	job_more_trim(j);
	assert_null(j->more);
	job_free(j);
	j = job_from_row(some, strlen(some));
	assert_non_null(j);
	assert_non_null(j->more);
	assert_true(jm(j)->begin_at == 5.5);
	job_free(j);
}

/* j read both ways from text, then written and read back: the same ids,
 * and a job_more block only when `block`. */
static void ids_read_back(const char *text, int64_t task, int64_t group, bool block)
{
	json_t *o = json_loads(text, 0, NULL);
	struct job *q = job_from_row(text, strlen(text)), *s;
	struct gf_err e;
	char *row;

	assert_non_null(o);
	assert_non_null(q);
	assert_non_null(s = job_from_json(o, &e));
	json_decref(o);
	for (struct job *j = q;; j = s) {
		assert_int_equal(job_array_task_id(j), task);
		assert_int_equal(job_group_id(j), group);
		assert_true((j->more != NULL) == block);
		if (j == s)
			break;
	}
	assert_same_job(q, s);
	check_written(q);
	row = jobw_row(q);
	job_free(s);
	s = job_from_row(row, strlen(row));
	assert_non_null(s);
	assert_int_equal(job_array_task_id(s), task);
	assert_int_equal(job_group_id(s), group);
	assert_true((s->more != NULL) == block);
	free(row);
	job_free(s);
	job_free(q);
}

/* Issue 13: every array task and every job of a multi-job submission has a
 * group; they live in struct job, so such a job has no job_more block. Ids
 * over 32 bits (never in practice) go to job_more and come back whole. */
static void array_and_group_ids_need_no_block(void **state)
{
	struct job *j = job_new();

	(void)state;
	ids_read_back("{\"state\":\"Queued\",\"command\":[\"true\"],\"array_task_id\":17,\"group_id\":5}", 17, 5,
		      false);
	ids_read_back("{\"state\":\"Hold\",\"command\":[\"true\"],\"array_task_id\":0,\"group_id\":99999}", 0,
		      99999, false);
	ids_read_back("{\"state\":\"Queued\",\"command\":[\"true\"],\"array_task_id\":4294967295,"
		      "\"group_id\":4294967295}",
		      UINT32_MAX, UINT32_MAX, false);
	ids_read_back("{\"state\":\"Queued\",\"command\":[\"true\"],\"array_task_id\":1099511627776,"
		      "\"group_id\":4294967296}",
		      INT64_C(1) << 40, INT64_C(1) << 32, true);
	ids_read_back("{\"state\":\"Queued\",\"command\":[\"true\"],\"array_task_id\":3,\"group_id\":"
		      "9000000000000}",
		      3, INT64_C(9000000000000), true);
	/* the setters: the block comes with a wide value and goes with it */
	job_set_group_id(j, 12);
	job_set_array_task_id(j, 4);
	assert_null(j->more);
	job_set_group_id(j, INT64_C(1) << 33);
	assert_non_null(j->more);
	assert_int_equal(j->group_id32, 0);
	assert_int_equal(job_group_id(j), INT64_C(1) << 33);
	assert_int_equal(job_array_task_id(j), 4);
	job_set_group_id(j, 12);
	assert_null(j->more);
	assert_int_equal(job_group_id(j), 12);
	job_set_array_task_id(j, INT64_C(1) << 40);
	jm_w(j)->retry_of = 2;
	job_set_array_task_id(j, 0);
	assert_non_null(j->more);	/* retry_of still needs it */
	assert_int_equal(job_array_task_id(j), 0);
	job_free(j);
}

/* struct job's narrow fields take no stored value they would cut: such a
 * row is refused both ways (and stands in as unreadable, jobs.c). */
static void values_too_wide_for_a_field_are_refused(void **state)
{
	static const char *const rows[] = {
		"{\"state\":\"Finished\",\"command\":[\"a\"],\"exit_code\":70000}",
		"{\"state\":\"Failed\",\"command\":[\"a\"],\"exit_signal\":-40000}",
		"{\"state\":\"Failed\",\"command\":[\"a\"],\"run_seq\":-1}",
		"{\"state\":\"Failed\",\"command\":[\"a\"],\"run_seq\":4294967296}",
	};
	static const char *const names[] = { "'exit_code'", "'exit_signal'", "'run_seq'", "'run_seq'" };

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		json_t *o = json_loads(rows[i], 0, NULL);
		struct gf_err e = { 0 };

		assert_null(job_from_row(rows[i], strlen(rows[i])));
		assert_null(job_from_json(o, &e));
		assert_non_null(strstr(e.msg, names[i]));
		json_decref(o);
	}
	same_as_jansson("{\"state\":\"Finished\",\"command\":[\"a\"],\"exit_code\":-32768,\"run_seq\":4294967295}");
}

/* Runtime fields: defaults without a block; a clone has none of them; the
 * block goes when all are back to their defaults. */
static void runtime_block_lives_while_set(void **state)
{
	struct job *j = job_new(), *c;

	(void)state;
	assert_null(j->rt);
	assert_int_equal(jr(j)->pidfd, -1);
	jr_w(j)->pidfd = 5;
	jr_w(j)->draining = true;
	c = job_clone(j);
	assert_null(c->rt);
	assert_int_equal(jr(c)->pidfd, -1);
	job_free(c);
	job_rt_trim(j);
	assert_non_null(j->rt);
	j->rt->pidfd = -1;
	job_rt_trim(j);
	assert_non_null(j->rt);	/* still draining */
	j->rt->draining = false;
	job_rt_trim(j);
	assert_null(j->rt);
	job_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stored_forms_read_the_same),
		cmocka_unit_test(odd_but_plain_rows),
		cmocka_unit_test(unusual_rows_are_left_to_jansson),
		cmocka_unit_test(repeating_strings_are_pooled),
		cmocka_unit_test(a_clone_is_the_same_job),
		cmocka_unit_test(rows_written_as_job_to_json_would),
		cmocka_unit_test(rare_fields_are_kept_only_when_set),
		cmocka_unit_test(commands_are_pooled_whole),
		cmocka_unit_test(runtime_block_lives_while_set),
		cmocka_unit_test(array_and_group_ids_need_no_block),
		cmocka_unit_test(values_too_wide_for_a_field_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
