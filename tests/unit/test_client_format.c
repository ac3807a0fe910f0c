/* test_client_format.c — what the clients print, without a daemon: time
 * and size formats, gqueue columns (TIME, NODELIST(REASON), ...), tree,
 * sorting and limits, ginfo grouping of the SPEC example, gctl show-gpus,
 * gjob show, tables in text/CSV/JSON, the option scanner, HTTP answer
 * parsing, log tails, gstats and completion scripts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "info.h"
#include "job.h"
#include "opt.h"
#include "queue.h"
#include "stats.h"
#include "table.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	if (!j)
		fprintf(stderr, "bad test JSON: %s: %s\n", je.text, text);
	assert_non_null(j);
	return j;
}

static void assert_field(const char *job, enum qfield f, double now,
    const char *want)
{
	json_t *j = J(job);
	char *v = queue_field_value(j, f, now);

	assert_string_equal(v, want);
	free(v);
	json_decref(j);
}

/* ---------- formats ---------- */

static void test_duration(void **state)
{
	char b[32];

	(void)state;
	fmt_duration(0, b, sizeof b);
	assert_string_equal(b, "0:00:00");
	fmt_duration(5, b, sizeof b);
	assert_string_equal(b, "0:00:05");
	fmt_duration(3599, b, sizeof b);
	assert_string_equal(b, "0:59:59");
	fmt_duration(3600 * 23 + 61, b, sizeof b);
	assert_string_equal(b, "23:01:01");
	fmt_duration(86400, b, sizeof b);
	assert_string_equal(b, "1-00:00:00");
	fmt_duration(86400 * 12 + 3600 * 5 + 7, b, sizeof b);
	assert_string_equal(b, "12-05:00:07");
	fmt_duration(-4, b, sizeof b);
	assert_string_equal(b, "0:00:00");
	/* the largest: 2^63 - 1 seconds; and cut to the buffer, as snprintf */
	fmt_duration(INT64_MAX, b, sizeof b);
	assert_string_equal(b, "106751991167300-15:30:07");
	fmt_duration(86400 * 12 + 3600 * 5 + 7, b, 5);
	assert_string_equal(b, "12-0");
}

static void test_time_column(void **state)
{
	(void)state;
	/* running: start to now */
	assert_field("{\"state\":\"Running\",\"start_time\":1000.5}", QF_TIME,
	    1000.5 + 3725, "1:02:05");
	/* ended: start to end, whatever now is */
	assert_field("{\"state\":\"Finished\",\"start_time\":100,"
	    "\"end_time\":190000}", QF_TIME, 1e9, "2-04:45:00");
	/* not started */
	assert_field("{\"state\":\"Queued\",\"start_time\":null}", QF_TIME, 1e9,
	    "0:00");
	assert_field("{\"state\":\"Cancelled\",\"end_time\":50}", QF_TIME, 1e9,
	    "0:00");
}

static void test_nodelist_column(void **state)
{
	(void)state;
	assert_field("{\"state\":\"Running\",\"gpus\":2,\"gpu_ids\":[0,1],"
	    "\"reason\":null}", QF_NODELIST, 0, "0,1");
	assert_field("{\"state\":\"Running\",\"gpus\":1,\"gpu_ids\":[3]}",
	    QF_NODELIST, 0, "3");
	/* a running job without GPUs has an empty NODELIST */
	assert_field("{\"state\":\"Running\",\"gpus\":0,\"gpu_ids\":[]}",
	    QF_NODELIST, 0, "");
	assert_field("{\"state\":\"Queued\",\"gpus\":1,\"gpu_ids\":[],"
	    "\"reason\":\"Resources\"}", QF_NODELIST, 0, "(Resources)");
	assert_field("{\"state\":\"Hold\",\"reason\":\"JobHeldUser\"}",
	    QF_NODELIST, 0, "(JobHeldUser)");
	assert_field("{\"state\":\"Cancelled\",\"reason\":"
	    "\"DependencyFailed:4\",\"gpu_ids\":[]}", QF_NODELIST, 0,
	    "(DependencyFailed:4)");
	assert_field("{\"state\":\"Finished\",\"reason\":null,\"gpu_ids\":[1]}",
	    QF_NODELIST, 0, "-");
}

static void test_other_columns(void **state)
{
	const char *job = "{\"id\":42,\"name\":\"train\",\"state\":\"Failed\","
	    "\"st\":\"F\",\"gpus\":2,\"user\":\"alice\",\"project\":null,"
	    "\"time_limit_secs\":5400,\"memory_mb\":1536,\"gpu_memory_mb\":20480,"
	    "\"exit_code\":null,\"exit_signal\":9,\"priority\":50}";

	(void)state;
	assert_field(job, QF_JOBID, 0, "42");
	assert_field(job, QF_NAME, 0, "train");
	assert_field(job, QF_ST, 0, "F");
	assert_field(job, QF_STATE, 0, "Failed");
	assert_field(job, QF_NODES, 0, "2");
	assert_field(job, QF_USER, 0, "alice");
	assert_field(job, QF_PROJECT, 0, "-");
	assert_field(job, QF_TIMELIMIT, 0, "1:30:00");
	assert_field(job, QF_MEMORY, 0, "1536M");
	assert_field(job, QF_GPUMEM, 0, "20G");
	assert_field(job, QF_EXIT, 0, "SIGKILL");
	assert_field(job, QF_PRIORITY, 0, "50");
	assert_field("{\"state\":\"Queued\"}", QF_ST, 0, "PD");
	assert_field("{\"time_limit_secs\":null}", QF_TIMELIMIT, 0, "UNLIMITED");
	assert_field("{\"exit_code\":3}", QF_EXIT, 0, "3");
	assert_field("{\"exit_code\":null}", QF_EXIT, 0, "-");
	assert_field("{\"memory_mb\":null}", QF_MEMORY, 0, "-");
	assert_field("{\"submit_time\":null}", QF_SUBMIT, 0, "-");
}

static void test_sizes_exits_quoting(void **state)
{
	struct sbuf b = { 0 };
	char buf[64];
	json_t *j;
	char *line;

	(void)state;
	fmt_mb(2048, buf, sizeof buf);
	assert_string_equal(buf, "2G");
	fmt_mb(1500, buf, sizeof buf);
	assert_string_equal(buf, "1500M");
	fmt_mb(1024 * 1024, buf, sizeof buf);
	assert_string_equal(buf, "1T");
	fmt_mb_human(1536, buf, sizeof buf);
	assert_string_equal(buf, "1.5G");
	fmt_mb_human(81920, buf, sizeof buf);
	assert_string_equal(buf, "80G");
	fmt_mb_human(512, buf, sizeof buf);
	assert_string_equal(buf, "512M");

	j = J("{\"exit_code\":null,\"exit_signal\":15}");
	fmt_exit(j, 0, buf, sizeof buf);
	assert_string_equal(buf, "signal 15 (SIGTERM)");
	json_decref(j);
	j = J("{\"exit_code\":0,\"exit_signal\":null}");
	fmt_exit(j, 0, buf, sizeof buf);
	assert_string_equal(buf, "0");
	json_decref(j);

	fmt_shell_word(&b, "plain-word_1.txt");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "two words");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "it's");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "$HOME;rm");
	assert_string_equal(sbuf_str(&b),
	    "plain-word_1.txt 'two words' 'it'\\''s' '' '$HOME;rm'");
	sbuf_free(&b);
	j = J("[\"python\",\"-c\",\"print(1)\"]");
	line = fmt_argv_line(j);
	assert_string_equal(line, "python -c 'print(1)'");
	free(line);
	json_decref(j);
}

static void test_states(void **state)
{
	char *s;
	struct gf_err e;

	(void)state;
	assert_string_equal(state_canonical("running"), "Running");
	assert_string_equal(state_canonical("R"), "Running");
	assert_string_equal(state_canonical("pd"), "Queued");
	assert_string_equal(state_canonical("CA"), "Cancelled");
	assert_string_equal(state_canonical("TIMEOUT"), "Timeout");
	assert_null(state_canonical("sleeping"));
	assert_string_equal(state_short("Hold"), "H");
	assert_true(state_is_ended("Timeout"));
	assert_false(state_is_ended("Running"));

	s = queue_states_param("Running,Queued", &e);
	assert_string_equal(s, "Running,Queued");
	free(s);
	s = queue_states_param("R,PD,cd", &e);
	assert_string_equal(s, "Running,Queued,Finished");
	free(s);
	assert_null(queue_states_param("R,zombie", &e));
	assert_non_null(strstr(e.msg, "'zombie'"));
}

static void test_fields_parse(void **state)
{
	enum qfield f[QUEUE_MAX_FIELDS];
	struct gf_err e;
	size_t n;

	(void)state;
	assert_int_equal(queue_parse_fields("JOBID,NAME,ST,NODES,"
	    "NODELIST(REASON)", f, &n, &e), 0);
	assert_int_equal(n, 5);
	assert_int_equal(f[0], QF_JOBID);
	assert_int_equal(f[4], QF_NODELIST);
	assert_int_equal(queue_parse_fields("jobid,nodelist(reason),timelimit,"
	    "memory,user,project,exit", f, &n, &e), 0);
	assert_int_equal(n, 7);
	assert_int_equal(f[2], QF_TIMELIMIT);
	assert_int_equal(queue_parse_fields("PRIORITY,SUBMIT,START,END,GPUMEM",
	    f, &n, &e), 0);
	assert_int_equal(f[4], QF_GPUMEM);
	assert_int_equal(queue_parse_fields("JOBID,BOGUS", f, &n, &e), -1);
	assert_true(strncmp(e.msg, "unknown field 'BOGUS'", 21) == 0);
	assert_int_equal(queue_parse_fields("JOBID,,ST", f, &n, &e), -1);
}

static const char *jobs_json =
    "[{\"id\":1,\"name\":\"prep\",\"state\":\"Finished\",\"st\":\"CD\","
    "\"gpus\":0,\"start_time\":100,\"end_time\":235,\"depends_on\":[],"
    "\"gpu_ids\":[]},"
    "{\"id\":2,\"name\":\"train\",\"state\":\"Running\",\"st\":\"R\","
    "\"gpus\":2,\"start_time\":1000,\"depends_on\":[1],\"gpu_ids\":[0,1]},"
    "{\"id\":3,\"name\":\"eval\",\"state\":\"Queued\",\"st\":\"PD\","
    "\"gpus\":0,\"reason\":\"Dependency\",\"depends_on\":[2],"
    "\"gpu_ids\":[]},"
    "{\"id\":4,\"name\":\"plot\",\"state\":\"Queued\",\"st\":\"PD\","
    "\"gpus\":0,\"reason\":\"Dependency\",\"depends_on\":[1],"
    "\"gpu_ids\":[]},"
    "{\"id\":5,\"name\":\"prep2\",\"state\":\"Queued\",\"st\":\"PD\","
    "\"gpus\":1,\"reason\":\"Resources\",\"depends_on\":[],\"redo_of\":1,"
    "\"gpu_ids\":[]}]";

static char *render_jobs(const char *fields, enum queue_layout layout,
    enum table_fmt fmt)
{
	enum qfield f[QUEUE_MAX_FIELDS];
	json_t *jobs = J(jobs_json);
	struct table *t;
	size_t n;
	char *s;

	assert_int_equal(queue_parse_fields(fields, f, &n, NULL), 0);
	t = queue_table(jobs, f, n, layout, 1065);
	s = table_render(t, fmt);
	table_free(t);
	json_decref(jobs);
	return s;
}

static void test_queue_table(void **state)
{
	char *s;

	(void)state;
	s = render_jobs("JOBID,NAME,ST,TIME,NODES,NODELIST(REASON)", QUEUE_FLAT,
	    TABLE_TEXT);
	assert_string_equal(s,
	    "JOBID  NAME   ST  TIME     NODES  NODELIST(REASON)\n"
	    "1      prep   CD  0:02:15  0      -\n"
	    "2      train  R   0:01:05  2      0,1\n"
	    "3      eval   PD  0:00     0      (Dependency)\n"
	    "4      plot   PD  0:00     0      (Dependency)\n"
	    "5      prep2  PD  0:00     1      (Resources)\n");
	free(s);
	s = render_jobs("JOBID,ST,NODES", QUEUE_FLAT, TABLE_CSV);
	assert_string_equal(s, "JOBID,ST,NODES\n1,CD,0\n2,R,2\n3,PD,0\n4,PD,0\n"
	    "5,PD,1\n");
	free(s);
}

static void test_queue_empty_is_header_only(void **state)
{
	enum qfield f[QUEUE_MAX_FIELDS];
	json_t *jobs = json_array();
	struct table *t;
	size_t n;
	char *s;

	(void)state;
	queue_parse_fields("JOBID,NAME,ST,TIME,NODES,NODELIST(REASON)", f, &n,
	    NULL);
	t = queue_table(jobs, f, n, QUEUE_FLAT, 0);
	s = table_render(t, TABLE_TEXT);
	assert_string_equal(s, "JOBID  NAME  ST  TIME  NODES  NODELIST(REASON)\n");
	free(s);
	s = table_render(t, TABLE_JSON);
	assert_string_equal(s, "[]\n");
	free(s);
	table_free(t);
	json_decref(jobs);
}

static void test_queue_tree(void **state)
{
	char *s;

	(void)state;
	s = render_jobs("JOBID,NAME,ST", QUEUE_TREE, TABLE_TEXT);
	assert_string_equal(s,
	    "JOBID  NAME   ST\n"
	    "1      prep   CD\n"
	    "├─2    train  R\n"
	    "│ └─3  eval   PD\n"
	    "├─4    plot   PD\n"
	    "└┈5    prep2  PD\n");
	free(s);
}

static void test_queue_group(void **state)
{
	char *s;

	(void)state;
	s = render_jobs("JOBID,ST", QUEUE_GROUP, TABLE_TEXT);
	assert_string_equal(s,
	    "JOBID  ST\n"
	    "== Running (1) ==\n"
	    "2      R\n"
	    "== Queued (3) ==\n"
	    "3      PD\n"
	    "4      PD\n"
	    "5      PD\n"
	    "== Finished (1) ==\n"
	    "1      CD\n");
	free(s);
}

static void test_queue_sort_and_limit(void **state)
{
	json_t *jobs = J(jobs_json);
	struct gf_err e;

	(void)state;
	assert_int_equal(queue_sort(jobs, "-id", 0, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(
	    json_array_get(jobs, 0), "id")), 5);
	assert_int_equal(queue_sort(jobs, "name", 0, &e), 0);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(jobs, 0), "name")), "eval");
	assert_int_equal(queue_sort(jobs, "gpus", 0, &e), 0);
	/* ties keep id order */
	assert_int_equal(json_integer_value(json_object_get(
	    json_array_get(jobs, 0), "id")), 1);
	assert_int_equal(json_integer_value(json_object_get(
	    json_array_get(jobs, 4), "id")), 2);
	assert_int_equal(queue_sort(jobs, "color", 0, &e), -1);
	assert_non_null(strstr(e.msg, "'color'"));
	assert_int_equal(queue_sort(jobs, "id", 0, &e), 0);
	queue_limit(jobs, 0);
	assert_int_equal(json_array_size(jobs), 5);
	queue_limit(jobs, -2);
	assert_int_equal(json_array_size(jobs), 2);
	assert_int_equal(json_integer_value(json_object_get(
	    json_array_get(jobs, 0), "id")), 4);
	queue_limit(jobs, 1);
	assert_int_equal(json_array_size(jobs), 1);
	json_decref(jobs);
}

/* ---------- ginfo / gctl ---------- */

static const char *spec_gpus =
    "{\"nvml_ok\":true,\"status\":\"ok\",\"allowed\":null,\"gpus\":["
    "{\"index\":0,\"name\":\"A100\",\"total_mb\":40960,\"used_mb\":0,"
    "\"util_pct\":0,\"state\":\"idle\",\"allowed\":true,\"jobs\":[],"
    "\"unmanaged_pids\":[]},"
    "{\"index\":1,\"name\":\"A100\",\"total_mb\":40960,\"used_mb\":30720,"
    "\"util_pct\":97,\"state\":\"allocated\",\"allowed\":true,"
    "\"jobs\":[{\"id\":5,\"name\":\"train-resnet\"}],\"unmanaged_pids\":[]},"
    "{\"index\":2,\"name\":\"A100\",\"total_mb\":40960,\"used_mb\":2048,"
    "\"util_pct\":12,\"state\":\"unmanaged\",\"allowed\":true,\"jobs\":[],"
    "\"unmanaged_pids\":[4242]},"
    "{\"index\":3,\"name\":\"A100\",\"total_mb\":40960,\"used_mb\":0,"
    "\"util_pct\":null,\"state\":\"idle\",\"allowed\":true,\"jobs\":[],"
    "\"unmanaged_pids\":[]}]}";

static char *info_text(const char *answer, int lng)
{
	json_t *a = J(answer);
	struct table *t = lng ? info_long_table(a) : info_table(a);
	char *s;

	assert_non_null(t);
	s = table_render(t, TABLE_TEXT);
	table_free(t);
	json_decref(a);
	return s;
}

#define DOTS "..................................................................................................................."
#define BEES "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
#define LETTER_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* ginfo --timeline: the picture of a GET /timeline answer (TZ=UTC). Now is
 * Tue 2023-11-14 10:10; columns from 09:00 (two before now's). */
static void test_ginfo_timeline(void **state)
{
	const char *answer =
	    "{\"now\":1699956600,\"to\":1700129400,\"range_secs\":172800,\"gpus\":["
	    "{\"index\":0,\"segments\":["
	    "{\"kind\":\"running\",\"id\":7,\"user\":\"alice\",\"name\":\"train\",\"state\":\"Running\","
	    "\"start\":1699948800,\"end\":1699963200},"
	    "{\"kind\":\"expected\",\"id\":9,\"user\":\"bob\",\"name\":\"eval\",\"state\":\"Queued\","
	    "\"start\":1699966800,\"end\":1699970400}]},"
	    "{\"index\":1,\"segments\":["
	    "{\"kind\":\"reservation\",\"id\":3,\"user\":\"carol\",\"start\":1699959600,\"end\":1699966800,"
	    "\"status\":\"pending\"},"
	    "{\"kind\":\"expected\",\"id\":9,\"user\":\"bob\",\"name\":\"eval\",\"state\":\"Queued\","
	    "\"start\":1699966800,\"end\":1699970400},"
	    "{\"kind\":\"running\",\"id\":8,\"user\":\"dave\",\"name\":\"x\",\"state\":\"Running\","
	    "\"start\":1699956000,\"end\":null}]}],"
	    "\"unplaced\":[{\"id\":12,\"user\":\"erin\",\"name\":\"big\",\"state\":\"Queued\","
	    "\"note\":\"beyond what the estimate looks at\"}],\"unplaced_count\":3}";
	json_t *a = J(answer);
	char *s = info_timeline_text(a), row0[200], row1[200];
	size_t n = 99 - 10;

	(void)state;
	snprintf(row0, sizeof row0, "GPU 0  AAAAAA..aa%.*s\n", (int)n, DOTS);
	/* dave's job (no limit) runs from 10:00 to beyond the range, over
	 * the reservation and the expected start */
	snprintf(row1, sizeof row1, "GPU 1  ..%.*s\n", 97, BEES);
	assert_non_null(strstr(s, "Timeline Tue 09:00 to Thu 10:30, one column = 30 min; now = Tue 10:10 (v)\n"));
	assert_non_null(strstr(s, "\n         v\n"));
	assert_non_null(strstr(s, "\n         10  12  14"));
	assert_non_null(strstr(s, "\n                                     Wed 15"));
	assert_non_null(strstr(s, row0));
	assert_non_null(strstr(s, row1));
	assert_non_null(strstr(s, "A = job 7 (alice) train: running since Tue 08:00, until Tue 12:00\n"));
	assert_non_null(strstr(s, "a = job 9 (bob) eval: expected to start Tue 13:00, until Tue 14:00\n"));
	assert_non_null(strstr(s, "1 = reservation 3 for carol: Tue 11:00 to Tue 13:00\n"));
	assert_non_null(strstr(s, "B = job 8 (dave) x: running since Tue 10:00, end not known (no time limit)\n"));
	assert_non_null(strstr(s, "  job 12 (erin) big: no expected start: beyond what the estimate looks at\n"
				  "  and 2 more without an expected start\n"));
	free(s);
	json_decref(a);

	/* GPU 1 without dave's job: the reservation, then the expected start */
	a = J("{\"now\":1699956600,\"to\":1700129400,\"gpus\":[{\"index\":1,\"segments\":["
	      "{\"kind\":\"reservation\",\"id\":3,\"user\":\"carol\",\"start\":1699959600,\"end\":1699966800},"
	      "{\"kind\":\"expected\",\"id\":9,\"user\":\"bob\",\"name\":\"eval\",\"start\":1699966800,"
	      "\"end\":null}]}],\"unplaced\":[]}");
	s = info_timeline_text(a);
	snprintf(row1, sizeof row1, "GPU 1  ....1111%.*s\n", 91, LETTER_A);
	assert_non_null(strstr(s, row1));
	assert_non_null(strstr(s, "a = job 9 (bob) eval: expected to start Tue 13:00, end not known\n"));
	free(s);
	json_decref(a);

	/* 14 days: 3-hour columns, rows within 160 characters; nothing to draw */
	a = J("{\"now\":1699956600,\"to\":1701166200,\"gpus\":[{\"index\":0,\"segments\":[]}],\"unplaced\":[]}");
	s = info_timeline_text(a);
	assert_non_null(strstr(s, "one column = 3 h"));
	assert_non_null(strstr(s, "Nothing running, reserved or expected in this range\n"));
	for (const char *p = s, *nl; (nl = strchr(p, '\n')); p = nl + 1)
		assert_true(nl - p <= 160);
	free(s);
	json_decref(a);
}

static void test_ginfo_spec_example(void **state)
{
	char *s = info_text(spec_gpus, 0);

	(void)state;
	assert_string_equal(s,
	    "PARTITION  GPUS  NODES  STATE      JOB(REASON)\n"
	    "gpu        2     0,3    idle\n"
	    "gpu        1     1      allocated  5 (train-resnet)\n"
	    "gpu        1     2      unmanaged  (pid 4242)\n");
	free(s);
}

static void test_ginfo_other_situations(void **state)
{
	const char *answer =
	    "{\"gpus\":["
	    "{\"index\":0,\"state\":\"allocated\",\"allowed\":true,"
	    "\"jobs\":[{\"id\":7,\"name\":\"big\"}],\"unmanaged_pids\":[]},"
	    "{\"index\":1,\"state\":\"allocated\",\"allowed\":true,"
	    "\"jobs\":[{\"id\":7,\"name\":\"big\"}],\"unmanaged_pids\":[]},"
	    "{\"index\":2,\"state\":\"shared\",\"allowed\":true,\"total_mb\":"
	    "81920,\"booked_mb\":40960,\"jobs\":[{\"id\":8,\"name\":\"a\","
	    "\"gpu_memory_mb\":20480},{\"id\":9,\"name\":\"b\","
	    "\"gpu_memory_mb\":20480}],\"unmanaged_pids\":[]},"
	    "{\"index\":3,\"state\":\"unmanaged\",\"allowed\":true,\"jobs\":[],"
	    "\"unmanaged_pids\":[11,12]},"
	    "{\"index\":4,\"state\":\"idle\",\"allowed\":false,\"jobs\":[],"
	    "\"unmanaged_pids\":[]},"
	    "{\"index\":5,\"state\":\"idle\",\"allowed\":false,\"jobs\":[],"
	    "\"unmanaged_pids\":[]},"
	    "{\"index\":6,\"state\":\"down\",\"allowed\":true,\"jobs\":[],"
	    "\"unmanaged_pids\":[],\"reason\":\"GPU is lost\"},"
	    "{\"index\":7,\"state\":\"allocated\",\"allowed\":true,"
	    "\"jobs\":[{\"id\":10,\"name\":\"c\"}],\"unmanaged_pids\":[99]},"
	    "{\"index\":8,\"state\":\"unmanaged\",\"allowed\":true,"
	    "\"jobs\":[],\"unmanaged_pids\":[],\"escaped\":[{\"pid\":77,"
	    "\"job\":10}]}]}";
	json_t *a;
	char *s = info_text(answer, 0);

	(void)state;
	assert_string_equal(s,
	    "PARTITION  GPUS  NODES  STATE       JOB(REASON)\n"
	    "gpu        2     0,1    allocated   7 (big)\n"
	    "gpu        1     7      allocated   10 (c) + unmanaged (pid 99)\n"
	    "gpu        1     2      shared      8 (a), 9 (b); 40G/80G booked\n"
	    "gpu        1     3      unmanaged   (pids 11,12)\n"
	    "gpu        1     8      unmanaged   (pid 77 of job 10)\n"
	    "gpu        2     4,5    restricted\n"
	    "gpu        1     6      down        (GPU is lost)\n");
	free(s);

	a = J(answer);
	s = info_show_gpus_text(a);
	assert_string_equal(s,
	    "0 in_use allocated(job=7)\n"
	    "1 in_use allocated(job=7)\n"
	    "2 in_use shared(jobs=8,9)\n"
	    "3 in_use unmanaged(pid=11,12)\n"
	    "4 available restricted\n"
	    "5 available restricted\n"
	    "6 in_use down(GPU is lost)\n"
	    "7 in_use allocated(job=10) unmanaged(pid=99)\n"
	    "8 in_use escaped(pid=77,job=10)\n");
	free(s);
	json_decref(a);
}

static void test_ginfo_long_and_no_gpus(void **state)
{
	json_t *a;
	char *s = info_text(spec_gpus, 1);

	(void)state;
	assert_string_equal(s,
	    "INDEX  NAME  MEMORY   UTIL  STATE      JOBS\n"
	    "0      A100  0M/40G   0%    idle\n"
	    "1      A100  30G/40G  97%   allocated  5 (train-resnet)\n"
	    "2      A100  2G/40G   12%   unmanaged  (pid 4242)\n"
	    "3      A100  0M/40G   -     idle\n");
	free(s);

	a = J("{\"nvml_ok\":false,\"status\":\"NVML not found\",\"gpus\":[]}");
	assert_null(info_table(a));
	assert_null(info_long_table(a));
	s = info_no_gpus_line(a);
	assert_string_equal(s, "No GPUs: NVML not found");
	free(s);
	json_decref(a);
}

/* Foreign processes named by the daemon ("foreign"): blocking ones as
 * unmanaged(label), the ones the [gpu] policy lets pass only in ginfo -l. */
static void test_foreign_named(void **state)
{
	const char *answer =
	    "{\"gpus\":[{\"index\":0,\"name\":\"A100\",\"state\":\"unmanaged\","
	    "\"allowed\":true,\"jobs\":[],\"unmanaged_pids\":[4242],"
	    "\"foreign\":[{\"pid\":4242,\"blocks\":true,\"label\":"
	    "\"pid=4242 user=bob cmd=python age=2d3h mem=642M\"},"
	    "{\"pid\":7,\"blocks\":false,\"exempt\":\"in [gpu] "
	    "unmanaged_ignore_commands\",\"label\":\"pid=7 user=root cmd=Xorg "
	    "age=9d0h mem=20M\"}]},"
	    "{\"index\":1,\"name\":\"A100\",\"state\":\"unmanaged\","
	    "\"allowed\":true,\"jobs\":[],\"unmanaged_pids\":[5000000],"
	    "\"foreign\":[{\"pid\":5000000,\"blocks\":true,\"label\":"
	    "\"pid=5000000 not visible here mem=1.5G\"}]}]}";
	json_t *a = J(answer);
	char *s = info_show_gpus_text(a);

	(void)state;
	assert_string_equal(s,
	    "0 in_use unmanaged(pid=4242 user=bob cmd=python age=2d3h mem=642M)\n"
	    "1 in_use unmanaged(pid=5000000 not visible here mem=1.5G)\n");
	free(s);
	json_decref(a);
	s = info_text(answer, 1);
	assert_non_null(strstr(s, "unmanaged(pid=4242 user=bob cmd=python "
	    "age=2d3h mem=642M) foreign(pid=7 user=root cmd=Xorg age=9d0h "
	    "mem=20M: in [gpu] unmanaged_ignore_commands)"));
	free(s);
}

static void test_show_gpus_spec(void **state)
{
	json_t *a = J(spec_gpus);
	char *s = info_show_gpus_text(a);

	(void)state;
	assert_string_equal(s, "0 available\n1 in_use allocated(job=5)\n"
	    "2 in_use unmanaged(pid=4242)\n3 available\n");
	free(s);
	json_decref(a);
}

/* ---------- gjob ---------- */

static void test_job_show(void **state)
{
	json_t *j = J("{\"id\":7,\"name\":\"train\",\"user\":\"alice\","
	    "\"project\":\"ml\",\"state\":\"Failed\",\"reason\":null,"
	    "\"command\":[\"python\",\"t.py\",\"a b\"],\"script\":null,"
	    "\"cwd\":\"/w\",\"gpus\":2,\"gpu_ids\":[0,1],\"shared\":false,"
	    "\"gpu_memory_mb\":null,\"memory_mb\":2048,\"memory_enforced\":true,"
	    "\"time_limit_secs\":3600,\"priority\":10,\"depends_on\":[3,4],"
	    "\"dep_mode\":\"any\",\"auto_cancel\":true,\"max_retries\":2,"
	    "\"attempt\":1,\"exit_code\":null,\"exit_signal\":9,"
	    "\"submit_time\":null,\"tmux_session\":\"gflow-7\","
	    "\"log_path\":\"/l/7.log\",\"params\":{\"lr\":\"0.1\"}}");
	char *s = job_show_text(j);

	(void)state;
	assert_true(strncmp(s, "JobId=7\nName=train\nUser=alice\nProject=ml\n"
	    "State=Failed\nReason=-\nExitCode=signal 9 (SIGKILL)\n"
	    "Command=python t.py 'a b'\nWorkDir=/w\n", 119) == 0);
	assert_non_null(strstr(s, "\nTimeLimit=1:00:00\n"));
	assert_non_null(strstr(s, "\nGPUs=2\nGPUIDs=0,1\nShared=no\n"
	    "GPUMemory=-\nMemory=2G\nCPUs=1\nMemoryEnforced=yes\nPriority=10\n"
	    "Dependencies=3,4 (any)\nAutoCancel=yes\nMaxRetries=2\nAttempt=1\n"));
	assert_non_null(strstr(s, "\nParams=lr=0.1\n"));
	assert_non_null(strstr(s, "\nSubmitTime=-\n"));
	assert_non_null(strstr(s, "\nTmuxSession=gflow-7\nLogPath=/l/7.log\n"));
	free(s);
	json_decref(j);

	j = J("{\"id\":8,\"script\":\"/w/run.sh\",\"command\":[\"/w/run.sh\"],"
	    "\"exit_code\":0}");
	s = job_show_text(j);
	assert_non_null(strstr(s, "\nScript=/w/run.sh\n"));
	assert_null(strstr(s, "Command="));
	assert_non_null(strstr(s, "\nExitCode=0\n"));
	free(s);
	json_decref(j);
}

static void test_last_lines(void **state)
{
	char path[] = "/tmp/gflow-test-log-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "one\ntwo\nthree\nfour\n";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(job_last_lines_offset(fd, 1), 14);  /* "four\n" */
	assert_int_equal(job_last_lines_offset(fd, 2), 8);   /* "three\n..." */
	assert_int_equal(job_last_lines_offset(fd, 4), 0);
	assert_int_equal(job_last_lines_offset(fd, 10), 0);
	assert_int_equal(job_last_lines_offset(fd, 0), 19);
	assert_int_equal(write(fd, "tail", 4), 4); /* no final newline */
	assert_int_equal(job_last_lines_offset(fd, 1), 19);
	close(fd);
	unlink(path);
}

/* ---------- tables ---------- */

static void test_table_formats(void **state)
{
	const char *h[] = { "A", "LONGER" };
	const char *r1[] = { "x,y", "say \"hi\"" };
	const char *r2[] = { "├─ü", "" };
	struct table *t = table_new(2, h);
	char *s;

	(void)state;
	table_add_row(t, r1);
	table_add_row(t, r2);
	assert_int_equal(table_nrows(t), 2);
	assert_string_equal(table_cell(t, 1, 0), "├─ü");
	assert_null(table_cell(t, 2, 0));
	s = table_render(t, TABLE_TEXT);
	/* widths count characters, not bytes; no trailing blanks */
	assert_string_equal(s, "A    LONGER\nx,y  say \"hi\"\n├─ü\n");
	free(s);
	s = table_render(t, TABLE_CSV);
	assert_string_equal(s, "A,LONGER\n\"x,y\",\"say \"\"hi\"\"\"\n├─ü,\n");
	free(s);
	s = table_render(t, TABLE_JSON);
	assert_non_null(strstr(s, "\"A\": \"x,y\""));
	assert_non_null(strstr(s, "\"LONGER\": \"say \\\"hi\\\"\""));
	free(s);
	table_free(t);
	assert_int_equal(utf8_width("├─2"), 3);
}

/* ---------- user text on terminals ---------- */

static void test_escaped_output(void **state)
{
	const char *h[] = { "NAME", "REASON" };
	const char *r1[] = { "a\x1b]0;X\x07", "(SystemError: cannot run 'x\x1b[2J')" };
	struct table *t = table_new(2, h);
	struct sbuf b = { 0 };
	json_t *j, *err;
	char *s;

	(void)state;
	/* the one escape: C0, DEL, C1 and invalid bytes; backslash kept */
	s = fmt_escaped("t\x1b[2J\x07\x7f\xc2\x9b\xff\\ \xc3\xa9");
	assert_string_equal(s, "t\\e[2J\\a\\x7f\\xc2\\x9b\\xff\\ \xc3\xa9");
	free(s);
	s = fmt_escaped(NULL);
	assert_string_equal(s, "");
	free(s);
	/* shell words: exact for bash when they need escapes */
	fmt_shell_word(&b, "\xff\xfe");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "it's\n");
	sbuf_addc(&b, ' ');
	fmt_shell_word(&b, "a\\b c");
	assert_string_equal(sbuf_str(&b), "$'\\xff\\xfe' $'it\\'s\\n' 'a\\b c'");
	sbuf_free(&b);
	/* argv lines decode {"base64"} words */
	j = J("[\"printf\",\"[%s]\\\\n\",{\"base64\":\"//4=\"},\"second\"]");
	s = fmt_argv_line(j);
	assert_string_equal(s, "printf '[%s]\\n' $'\\xff\\xfe' second");
	free(s);
	json_decref(j);
	j = J("{\"cwd\":{\"base64\":\"L3f/\"},\"script\":null}");
	s = fmt_bytes_field(j, "cwd");
	assert_string_equal(s, "/w\\xff");
	free(s);
	assert_null(fmt_bytes_field(j, "script"));
	json_decref(j);
	/* tables: text and CSV escaped, JSON exact */
	table_add_row(t, r1);
	s = table_render(t, TABLE_TEXT);
	assert_null(strchr(s, '\x1b'));
	assert_non_null(strstr(s, "a\\e]0;X\\a  (SystemError: cannot run 'x\\e[2J')"));
	free(s);
	s = table_render(t, TABLE_CSV);
	assert_null(strchr(s, '\x1b'));
	assert_non_null(strstr(s, "a\\e]0;X\\a,"));
	free(s);
	s = table_render(t, TABLE_JSON);
	assert_non_null(strstr(s, "a\\u001B]0;X\\u0007"));
	free(s);
	table_free(t);
	/* gjob show */
	j = J("{\"id\":3,\"name\":\"n\\u001b[2J\",\"command\":[\"echo\","
	    "\"\\u001b]0;X\\u0007\"],\"cwd\":\"/w\"}");
	s = job_show_text(j);
	assert_null(strchr(s, '\x1b'));
	assert_non_null(strstr(s, "Name=n\\e[2J\n"));
	assert_non_null(strstr(s, "Command=echo $'\\e]0;X\\a'\n"));
	free(s);
	json_decref(j);
	/* errors of a change request name the job once */
	err = J("{\"id\":1,\"error\":\"job 1 has already ended (Finished)\"}");
	fmt_job_error(&b, err, "failed");
	assert_string_equal(sbuf_str(&b), "job 1 has already ended (Finished)");
	sbuf_free(&b);
	json_decref(err);
	err = J("{\"id\":12,\"error\":\"job 1 is a parent\"}");
	fmt_job_error(&b, err, "failed");
	assert_string_equal(sbuf_str(&b), "job 12: job 1 is a parent");
	sbuf_free(&b);
	json_decref(err);
	err = J("{\"id\":5,\"error\":\"already ended\"}");
	fmt_job_error(&b, err, "failed");
	assert_string_equal(sbuf_str(&b), "job 5: already ended");
	sbuf_free(&b);
	json_decref(err);
	err = J("{\"id\":5}");
	fmt_job_error(&b, err, "cannot cancel");
	assert_string_equal(sbuf_str(&b), "job 5: cannot cancel");
	sbuf_free(&b);
	json_decref(err);
	err = J("{\"id\":\"@~9\",\"error\":\"'@~9' names no job: you have 2\"}");
	fmt_job_error(&b, err, "failed");
	assert_string_equal(sbuf_str(&b), "'@~9' names no job: you have 2");
	sbuf_free(&b);
	json_decref(err);
	err = J("{\"id\":3,\"error\":\"--gpus 3: \\u001b only 2\"}");
	fmt_job_error(&b, err, "failed");
	assert_string_equal(sbuf_str(&b), "job 3: --gpus 3: \\e only 2");
	sbuf_free(&b);
	json_decref(err);
}

/* ---------- option scanner ---------- */

static void test_opt_scanner(void **state)
{
	static const struct opt_def defs[] = {
		{ 1, "all", 'a', 0 }, { 2, "limit", 'n', 1 },
		{ 3, "completed", 'c', 0 }, { 2, "max", 0, 1 },
	};
	char *argv[] = { "p", "-ac", "-n5", "pos1", "--limit=7", "--max", "-3",
		"--", "-a", NULL };
	struct opt_parser p;
	struct gf_err e;
	const char *val;

	(void)state;
	opt_init(&p, 9, argv, 1, defs, 4, 1);
	assert_int_equal(opt_next(&p, &val, &e), 1);
	assert_int_equal(opt_next(&p, &val, &e), 3);
	assert_int_equal(opt_next(&p, &val, &e), 2);
	assert_string_equal(val, "5");
	assert_int_equal(opt_next(&p, &val, &e), OPT_POSITIONAL);
	assert_string_equal(val, "pos1");
	assert_int_equal(opt_next(&p, &val, &e), 2);
	assert_string_equal(val, "7");
	assert_int_equal(opt_next(&p, &val, &e), 2);
	assert_string_equal(val, "-3");
	assert_string_equal(p.spelled, "--max");
	assert_int_equal(opt_next(&p, &val, &e), OPT_POSITIONAL);
	assert_string_equal(val, "-a");
	assert_int_equal(opt_next(&p, &val, &e), OPT_END);

	/* stop mode leaves the rest alone */
	opt_init(&p, 9, argv, 3, defs, 4, 0);
	assert_int_equal(opt_next(&p, &val, &e), OPT_END);
	assert_int_equal(p.i, 3);

	{
		char *flags[] = { "p", "--all", "--completed", "--all=1", NULL };

		opt_init(&p, 4, flags, 1, defs, 4, 1);
		assert_int_equal(opt_next(&p, &val, &e), 1);
		assert_null(val);
		assert_int_equal(opt_next(&p, &val, &e), 3);
		assert_int_equal(opt_next(&p, &val, &e), OPT_ERROR);
		assert_string_equal(e.msg, "option '--all' takes no value");
	}
	{
		char *bad[] = { "p", "--al", "-x", "--limit", NULL };

		opt_init(&p, 4, bad, 1, defs, 4, 1);
		assert_int_equal(opt_next(&p, &val, &e), OPT_ERROR);
		assert_string_equal(e.msg, "unknown option '--al'");
		assert_int_equal(opt_next(&p, &val, &e), OPT_ERROR);
		assert_string_equal(e.msg, "unknown option '-x'");
		assert_int_equal(opt_next(&p, &val, &e), OPT_ERROR);
		assert_string_equal(e.msg, "option '--limit' needs a value");
	}
}

/* ---------- HTTP answers ---------- */

static void test_http_parse(void **state)
{
	const char *plain = "HTTP/1.1 201 Created\r\nContent-Type: "
	    "application/json\r\nContent-Length: 8\r\n\r\n{\"a\":1}\nEXTRA";
	const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n4\r\n{\"a\"\r\n3\r\n:2}\r\n0\r\n\r\n";
	const char *noclen = "HTTP/1.0 404 Not Found\r\n\r\n{\"error\":\"x\"}";
	struct http_resp r;
	struct gf_err e;

	(void)state;
	assert_int_equal(http_parse_response(plain, strlen(plain), &r, &e), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"a\":1}\n");
	http_resp_free(&r);
	assert_int_equal(http_parse_response(chunked, strlen(chunked), &r, &e),
	    0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"a\":2}");
	http_resp_free(&r);
	assert_int_equal(http_parse_response(noclen, strlen(noclen), &r, &e), 0);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body, "{\"error\":\"x\"}");
	http_resp_free(&r);
	assert_int_equal(http_parse_response("HTTP/1.1 200 OK\r\nContent-Length:"
	    " 50\r\n\r\nshort", 43, &r, &e), -1);
	assert_non_null(strstr(e.msg, "cut short"));
	assert_int_equal(http_parse_response("garbage", 7, &r, &e), -1);
	assert_int_equal(http_parse_response("", 0, &r, &e), -1);
}

/* gjob log on a terminal: control characters escaped, lines and tabs
 * kept, a CR before LF kept, what a chunk boundary cuts held over. */
#define LOG_ESCAPE(in, want) assert_log_escape(in, sizeof in - 1, want)
static void assert_log_escape(const char *in, size_t n, const char *want)
{
	struct log_escaper h = { { 0 }, 0 };
	struct sbuf b = { 0 };

	job_log_escape(&h, in, n, 1, &b);
	assert_string_equal(b.p ? b.p : "", want);
	sbuf_free(&b);
}

static void test_log_escape(void **state)
{
	struct log_escaper h = { { 0 }, 0 };
	struct sbuf b = { 0 };

	(void)state;
	LOG_ESCAPE("a\x1b]0;owned\x07" "b\x1b[31mred\n", "a\\e]0;owned\\ab\\e[31mred\n");
	LOG_ESCAPE("x\ty\r\nz\rw\n", "x\ty\r\nz\\rw\n");
	LOG_ESCAPE("\xc2\x9b" "2J caf\xc3\xa9 \xff\x7f", "\\xc2\\x9b" "2J caf\xc3\xa9 \\xff\\x7f");
	LOG_ESCAPE("", "");
	/* across chunks: a CR then its LF, a character cut in two, a CR at the end */
	job_log_escape(&h, "one\r", 4, 0, &b);
	job_log_escape(&h, "\ntw\xc3", 4, 0, &b);
	assert_string_equal(b.p, "one\r\ntw");
	job_log_escape(&h, "\xa9\x1b", 2, 0, &b);
	job_log_escape(&h, "\r", 1, 0, &b);
	assert_string_equal(b.p, "one\r\ntw\xc3\xa9\\e");
	job_log_escape(&h, "", 0, 1, &b);
	assert_string_equal(b.p, "one\r\ntw\xc3\xa9\\e\\r");
	sbuf_free(&b);
}

static void test_http_socket_path_and_not_running(void **state)
{
	char buf[256];
	struct gf_err e;
	struct http_resp r;

	(void)state;
	setenv("GFLOW_SOCKET", "/tmp/gflow-test-none/x.sock", 1);
	assert_int_equal(http_socket_path(buf, sizeof buf, &e), 0);
	assert_string_equal(buf, "/tmp/gflow-test-none/x.sock");
	unsetenv("GFLOW_SOCKET");
	setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
	assert_int_equal(http_socket_path(buf, sizeof buf, &e), 0);
	assert_string_equal(buf, "/run/user/1000/gflow/gflowd.sock");
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(http_socket_path(buf, sizeof buf, &e), 0);
	snprintf(e.msg, sizeof e.msg, "/tmp/gflow-%u/gflowd.sock",
	    (unsigned)getuid());
	assert_string_equal(buf, e.msg);

	assert_int_equal(http_request("/tmp/gflow-test-none/x.sock", "GET",
	    "/health", NULL, 0, &r, &e), -1);
	assert_string_equal(e.msg, "gflowd is not running (no answer on "
	    "/tmp/gflow-test-none/x.sock); start it with: gflowd up");
}

/* A one-process fake daemon: for each connection, read one request and
 * answer it; the first answer echoes the request and the connection is
 * then left open (the client must not wait for a close). */
static void fake_server(int lfd)
{
	int round;

	for (round = 0; round < 2; round++) {
		char req[4096], resp[8192];
		size_t got = 0;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			_exit(1);
		while (got < sizeof req - 1) {
			ssize_t n = read(fd, req + got, sizeof req - 1 - got);
			char *hend;

			if (n <= 0)
				break;
			got += (size_t)n;
			req[got] = '\0';
			hend = strstr(req, "\r\n\r\n");
			if (hend && strstr(req, "Content-Length: ") &&
			    got - (size_t)(hend + 4 - req) >= (size_t)atoi(
			    strstr(req, "Content-Length: ") + 16))
				break;
		}
		if (round == 0)
			snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\n"
			    "Content-Length: %zu\r\n\r\n%s", got, req);
		else
			snprintf(resp, sizeof resp, "HTTP/1.1 400 Bad Request\r\n"
			    "Content-Length: 23\r\n\r\n{\"error\":\"bad thing x\"}");
		if (write(fd, resp, strlen(resp)) < 0)
			_exit(1);
		if (round == 1)
			close(fd);
	}
	sleep(30);
	_exit(0);
}

static void test_http_roundtrip(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[64];
	struct http_resp r;
	struct gf_err e;
	time_t t0;
	json_t *body;
	pid_t pid;
	int lfd;

	(void)state;
	snprintf(path, sizeof path, "/tmp/gflow-test-http-%d.sock",
	    (int)getpid());
	unlink(path);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		fake_server(lfd);
	close(lfd);

	t0 = time(NULL);
	assert_int_equal(http_request(path, "POST", "/jobs", "{\"a\":1}", 7,
	    &r, &e), 0);
	assert_true(time(NULL) - t0 < 5); /* did not wait for a close */
	assert_int_equal(r.status, 200);
	assert_true(strncmp(r.body, "POST /jobs HTTP/1.1\r\n", 21) == 0);
	assert_non_null(strstr(r.body, "\r\nContent-Length: 7\r\n"));
	assert_non_null(strstr(r.body, "\r\nConnection: close\r\n"));
	assert_non_null(strstr(r.body, "\r\n\r\n{\"a\":1}"));
	http_resp_free(&r);

	/* api_call turns an error answer into its "error" text */
	setenv("GFLOW_SOCKET", path, 1);
	body = json_object();
	assert_null(api_post("/jobs", body, &e));
	assert_string_equal(e.msg, "bad thing x");
	json_decref(body);
	unsetenv("GFLOW_SOCKET");

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

static void test_url_params(void **state)
{
	struct sbuf b = { 0 };

	(void)state;
	url_add_param(&b, "ids", "1-3,@~1");
	url_add_param(&b, "names", "a b&c");
	assert_string_equal(sbuf_str(&b), "?ids=1-3,@~1&names=a%20b%26c");
	sbuf_free(&b);
	sbuf_adds(&b, "/jobs");
	url_add_param(&b, "ids", "@");
	url_add_param(&b, "users", "all");
	assert_string_equal(sbuf_str(&b), "/jobs?ids=@&users=all");
	sbuf_free(&b);
}

/* ---------- gstats, completion ---------- */

static void test_stats(void **state)
{
	json_t *jobs = J("[{\"user\":\"bob\",\"state\":\"Running\",\"gpus\":2,"
	    "\"gpu_ids\":[0,1],\"start_time\":100},"
	    "{\"user\":\"alice\",\"state\":\"Finished\",\"gpus\":1,"
	    "\"gpu_ids\":[0],\"start_time\":100,\"end_time\":1900,"
	    "\"gpu_usage\":{\"mean_gpu_util\":40}},"
	    "{\"user\":\"alice\",\"state\":\"Queued\",\"gpus\":4}]");
	struct table *t = stats_table(jobs, 3700, NULL);
	char *s = table_render(t, TABLE_CSV);

	(void)state;
	assert_string_equal(s,
	    "USER,JOBS,RUNNING,QUEUED,HOLD,FINISHED,FAILED,CANCELLED,TIMEOUT,"
	    "GPU_HOURS,GPU_UTIL\n"
	    "alice,2,0,1,0,1,0,0,0,0.50,40%\n"
	    "bob,1,1,0,0,0,0,0,0,2.00,-\n"
	    "TOTAL,3,1,1,0,1,0,0,0,2.50,40%\n");
	free(s);
	table_free(t);
	json_decref(jobs);
}

static void test_stats_metrics(void **state)
{
	/* t=0..: a 2-GPU run 100..1900 (finished, waited 99), a 1-GPU run
	 * 1000..3700 (running at now=3700, waited 500), a failed 0-GPU run
	 * 50..150, a queued 4-GPU job, a cancelled job that never ran */
	json_t *jobs = J("[{\"id\":1,\"name\":\"a\",\"user\":\"u\",\"state\":\"Finished\",\"gpus\":2,"
	    "\"gpu_ids\":[0,1],\"submit_time\":1,\"start_time\":100,\"end_time\":1900},"
	    "{\"id\":2,\"name\":\"b\",\"user\":\"u\",\"state\":\"Running\",\"gpus\":1,"
	    "\"gpu_ids\":[2],\"submit_time\":500,\"start_time\":1000},"
	    "{\"id\":3,\"name\":\"c\",\"user\":\"u\",\"state\":\"Failed\",\"gpus\":0,"
	    "\"submit_time\":50,\"start_time\":50,\"end_time\":150},"
	    "{\"id\":4,\"name\":\"d\",\"user\":\"u\",\"state\":\"Queued\",\"gpus\":4,\"submit_time\":10},"
	    "{\"id\":5,\"name\":\"e\",\"user\":\"u\",\"state\":\"Cancelled\",\"gpus\":0,\"submit_time\":10,"
	    "\"end_time\":20}]");
	json_t *st = stats_compute(jobs, 3700), *top;
	char *csv = stats_csv(st);

	(void)state;
	assert_string_equal(csv,
	    "metric,value\n"
	    "total_jobs,5\ncompleted_jobs,1\nfailed_jobs,1\ncancelled_jobs,1\ntimeout_jobs,0\n"
	    "running_jobs,1\nqueued_jobs,1\nheld_jobs,0\n"
	    "avg_wait_secs,199.67\n"          /* (99 + 500 + 0) / 3 */
	    "avg_runtime_secs,950.00\n"       /* (1800 + 100) / 2 ended runs */
	    "total_gpu_hours,1.7500\n"          /* 2 x 1800 s + 1 x 2700 s */
	    "preemptible_gpu_hours,0.0000\n"  /* none --preemptible */
	    "jobs_with_gpus,3\navg_gpus_per_job,2.33\n"
	    "peak_gpu_usage,3\n"              /* 1000..1900: 2 + 1 */
	    "success_rate,33.33\n"            /* 1 of 3 ended */
	    "mean_gpu_util_pct,\n");          /* none measured */
	top = json_object_get(st, "top_jobs");
	assert_int_equal(json_array_size(top), 2);
	assert_int_equal(jint(json_array_get(top, 0), "id", 0), 1);
	assert_int_equal(jint(json_array_get(top, 1), "id", 0), 3);
	free(csv);
	json_decref(st);
	/* nothing at all: zeros, no division by zero */
	json_decref(jobs);
	jobs = J("[]");
	st = stats_compute(jobs, 10);
	csv = stats_csv(st);
	assert_non_null(strstr(csv, "total_jobs,0\n"));
	assert_non_null(strstr(csv, "success_rate,0.00\n"));
	free(csv);
	json_decref(st);
	json_decref(jobs);
}

static void test_completion(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct gf_err e;

	(void)state;
	assert_int_equal(completion_script(f, "gqueue", "--all -a", "bash", &e),
	    0);
	assert_int_equal(completion_script(f, "gjob", "show --first -f", "fish",
	    &e), 0);
	assert_int_equal(completion_script(f, "gqueue", "x", "tcsh", &e), -1);
	fclose(f);
	assert_non_null(strstr(buf, "complete -o default -F "
	    "_gflow_complete_gqueue gqueue"));
	assert_non_null(strstr(buf, "compgen -W \"--all -a\""));
	assert_non_null(strstr(buf, "complete -c gjob -n __fish_use_subcommand "
	    "-a show\n"));
	assert_non_null(strstr(buf, "complete -c gjob -l first\n"));
	assert_non_null(strstr(buf, "complete -c gjob -s f\n"));
	assert_non_null(strstr(e.msg, "'tcsh'"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_time_column),
		cmocka_unit_test(test_nodelist_column),
		cmocka_unit_test(test_other_columns),
		cmocka_unit_test(test_sizes_exits_quoting),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_fields_parse),
		cmocka_unit_test(test_queue_table),
		cmocka_unit_test(test_queue_empty_is_header_only),
		cmocka_unit_test(test_queue_tree),
		cmocka_unit_test(test_queue_group),
		cmocka_unit_test(test_queue_sort_and_limit),
		cmocka_unit_test(test_ginfo_spec_example),
		cmocka_unit_test(test_ginfo_other_situations),
		cmocka_unit_test(test_ginfo_long_and_no_gpus),
		cmocka_unit_test(test_ginfo_timeline),
		cmocka_unit_test(test_foreign_named),
		cmocka_unit_test(test_show_gpus_spec),
		cmocka_unit_test(test_job_show),
		cmocka_unit_test(test_last_lines),
		cmocka_unit_test(test_table_formats),
		cmocka_unit_test(test_escaped_output),
		cmocka_unit_test(test_opt_scanner),
		cmocka_unit_test(test_http_parse),
		cmocka_unit_test(test_log_escape),
		cmocka_unit_test(test_http_socket_path_and_not_running),
		cmocka_unit_test(test_http_roundtrip),
		cmocka_unit_test(test_url_params),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_stats_metrics),
		cmocka_unit_test(test_completion),
	};

	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
