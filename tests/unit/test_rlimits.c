/* test_rlimits.c — the submitter's resource limits: their text form read
 * and written, capped at another process's hard limits, applied. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "rlimits.h"

static int index_of(const char *name)
{
	for (int i = 0; i < GF_NRLIMITS; i++)
		if (!strcmp(gf_rlimit_name(i), name))
			return i;
	return -1;
}

static void text_form_round_trips(void **state)
{
	struct gf_rlimits r;
	struct gf_err e;
	char buf[GF_RLIMITS_TEXT_MAX];
	int n = index_of("nofile");

	(void)state;
	assert_int_equal(gf_rlimits_parse("nofile=77:4096,core=0,stack=8388608:unlimited", &r, &e), 0);
	assert_true(r.set[n]);
	assert_int_equal(r.v[n].rlim_cur, 77);
	assert_int_equal(r.v[n].rlim_max, 4096);
	assert_false(r.set[index_of("nproc")]);
	assert_true(r.v[index_of("stack")].rlim_max == RLIM_INFINITY);
	gf_rlimits_format(&r, buf, sizeof buf);
	/* the table's order, and one value when both are the same */
	assert_string_equal(buf, "core=0,nofile=77:4096,stack=8388608:unlimited");
	assert_int_equal(gf_rlimits_parse("", &r, &e), 0);
	gf_rlimits_format(&r, buf, sizeof buf);
	assert_string_equal(buf, "");
	/* all of a process's limits fit the buffer */
	gf_rlimits_capture(&r);
	assert_true(gf_rlimits_format(&r, buf, sizeof buf) < sizeof buf);
	for (int i = 0; i < GF_NRLIMITS; i++) {
		r.set[i] = true;
		r.v[i].rlim_cur = RLIM_INFINITY - 1;
		r.v[i].rlim_max = RLIM_INFINITY;
	}
	assert_true(gf_rlimits_format(&r, buf, sizeof buf) < sizeof buf);
}

static void bad_forms_are_refused_naming_them(void **state)
{
	static const char *const bad[][2] = {
		{ "nofle=5", "'nofle=5' is none gflow carries" },
		{ "nofile", "'nofile' is not NAME=SOFT:HARD" },
		{ "nofile=", "'nofile=' is not" },
		{ "nofile=5:", "'nofile=5:' is not" },
		{ "nofile=x", "(numbers or \"unlimited\")" },
		{ "nofile=-1", "hold a character" },
		{ "nofile=9:5", "soft value is above the hard one" },
		{ "nofile=unlimited:5", "soft value is above" },
		{ "nofile=5,nofile=6", "'nofile' is given twice" },
		{ "nofile=5,", "end in a comma" },
		{ "nofile=99999999999999999999", "is not" },
		{ "nofile=1\x1b", "hold a character" },
	};
	struct gf_rlimits r;
	struct gf_err e;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(gf_rlimits_parse(bad[i][0], &r, &e), -1);
		if (!strstr(e.msg, bad[i][1]))
			fail_msg("%s: %s", bad[i][0], e.msg);
	}
}

static void capped_at_the_hard_limits_of_another(void **state)
{
	struct gf_rlimits r, cap = { 0 };
	struct gf_err e;
	int n = index_of("nofile"), c = index_of("core"), s = index_of("stack");

	(void)state;
	assert_int_equal(gf_rlimits_parse("nofile=2000:9000,core=unlimited,stack=100", &r, &e), 0);
	cap.set[n] = cap.set[c] = true;
	cap.v[n] = (struct rlimit){ 10, 1024 };
	cap.v[c] = (struct rlimit){ 0, 0 };
	gf_rlimits_clamp(&r, &cap);
	assert_int_equal(r.v[n].rlim_cur, 1024);	/* soft under the new hard */
	assert_int_equal(r.v[n].rlim_max, 1024);
	assert_int_equal(r.v[c].rlim_cur, 0);
	assert_int_equal(r.v[c].rlim_max, 0);
	assert_int_equal(r.v[s].rlim_cur, 100);	/* cap has none: as it was */
	assert_int_equal(gf_rlimits_stack(&r, 7), 100);
	r.set[s] = false;
	assert_int_equal(gf_rlimits_stack(&r, 7), 7);
}

static void only_those_not_held_already_are_left_to_set(void **state)
{
	struct gf_rlimits r, have = { 0 };
	struct gf_err e;
	int n = index_of("nofile"), c = index_of("core"), s = index_of("stack"), a = index_of("as");

	(void)state;
	assert_int_equal(gf_rlimits_parse("nofile=2000:9000,core=0:unlimited,stack=100,as=5", &r, &e), 0);
	have.set[n] = have.set[c] = have.set[s] = true;
	have.v[n] = (struct rlimit){ 2000, 9000 };	/* the same: dropped */
	have.v[c] = (struct rlimit){ 0, 0 };		/* the soft alone the same: kept */
	have.v[s] = (struct rlimit){ 50, 100 };		/* the hard alone the same: kept */
	gf_rlimits_drop_held(&r, &have);
	assert_false(r.set[n]);
	assert_true(r.set[c] && r.v[c].rlim_cur == 0 && r.v[c].rlim_max == RLIM_INFINITY);
	assert_true(r.set[s] && r.v[s].rlim_cur == 100 && r.v[s].rlim_max == 100);
	assert_true(r.set[a]);	/* have has none: kept */
}

static void applied_to_this_process(void **state)
{
	struct gf_rlimits r = { 0 }, now;
	int c = index_of("core"), which = -1;
	struct rlimit old;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_CORE, &old), 0);
	r.set[c] = true;
	r.v[c] = (struct rlimit){ 0, old.rlim_max };
	assert_int_equal(gf_rlimits_apply(&r, &which), 0);
	gf_rlimits_capture(&now);
	assert_int_equal(now.v[c].rlim_cur, 0);
	/* soft above hard: refused, naming it */
	r.v[c] = (struct rlimit){ 2, 1 };
	assert_int_equal(gf_rlimits_apply(&r, &which), -1);
	assert_int_equal(which, c);
	assert_int_equal(setrlimit(RLIMIT_CORE, &old), 0);
}

/* /proc/PID/limits as the kernel writes it: each line's name, soft and
 * hard values, and units; lines we do not carry are passed over. */
static void read_from_proc_text(void **state)
{
	static const char text[] = "Limit                     Soft Limit           Hard Limit           Units     \n"
				   "Max cpu time              unlimited            unlimited            seconds   \n"
				   "Max file size             unlimited            unlimited            bytes     \n"
				   "Max stack size            8388608              unlimited            bytes     \n"
				   "Max core file size        0                    unlimited            bytes     \n"
				   "Max processes             40                   40                   processes \n"
				   "Max open files            1024                 4096                 files     \n"
				   "Max pending signals       96368                96368                signals   \n"
				   "Max realtime timeout      unlimited            unlimited            us        \n";
	struct gf_rlimits r;
	int np = index_of("nproc"), nf = index_of("nofile"), st = index_of("stack"), as = index_of("as");

	(void)state;
	assert_int_equal(gf_rlimits_parse_proc(text, &r), 0);
	assert_true(r.set[np] && r.v[np].rlim_cur == 40 && r.v[np].rlim_max == 40);
	assert_true(r.set[nf] && r.v[nf].rlim_cur == 1024 && r.v[nf].rlim_max == 4096);
	assert_true(r.set[st] && r.v[st].rlim_cur == 8388608 && r.v[st].rlim_max == RLIM_INFINITY);
	assert_false(r.set[as]);	/* not in the text */
	/* nothing of ours, or a value that is not one: nothing read */
	assert_int_equal(gf_rlimits_parse_proc("Max pending signals 1 1 signals\n", &r), -1);
	assert_int_equal(gf_rlimits_parse_proc("Max processes  4x  4  processes\n", &r), -1);
	assert_int_equal(gf_rlimits_parse_proc("Max processes  8  4  processes\n", &r), -1);
}

/* This process's own limits, read back through /proc as the daemon reads
 * a submitter's; refused for another uid. */
static void read_from_a_live_process(void **state)
{
	struct gf_rlimits proc, own;
	int nf = index_of("nofile");

	(void)state;
	gf_rlimits_capture(&own);
	assert_int_equal(gf_rlimits_of_pid((long)getpid(), (unsigned)getuid(), &proc), 0);
	assert_true(proc.set[nf]);
	assert_int_equal(proc.v[nf].rlim_cur, own.v[nf].rlim_cur);
	assert_int_equal(proc.v[nf].rlim_max, own.v[nf].rlim_max);
	assert_int_equal(gf_rlimits_of_pid((long)getpid(), (unsigned)getuid() + 1, &proc), -1);
	assert_int_equal(gf_rlimits_of_pid(0, (unsigned)getuid(), &proc), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(text_form_round_trips),
		cmocka_unit_test(bad_forms_are_refused_naming_them),
		cmocka_unit_test(capped_at_the_hard_limits_of_another),
		cmocka_unit_test(only_those_not_held_already_are_left_to_set),
		cmocka_unit_test(applied_to_this_process),
		cmocka_unit_test(read_from_proc_text),
		cmocka_unit_test(read_from_a_live_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
