/* test_parse.c — unit tests for src/common/parse.c: every accepted form,
 * every rejected form, boundaries, and the wording of error messages. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse.h"

/* Assert msg contains part, printing both when it does not. */
#define assert_msg_has(msg, part) do { \
	if (!strstr((msg), (part))) \
		fail_msg("message \"%s\" lacks \"%s\"", (msg), (part)); \
} while (0)

/* ---------- time limit ---------- */

static void time_ok(const char *s, int64_t want)
{
	struct gf_err e = { "" };
	int64_t v = -1;

	if (gf_parse_time_limit(s, &v, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	if (v != want)
		fail_msg("'%s' -> %lld, want %lld", s, (long long)v,
		    (long long)want);
}

static void time_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	int64_t v = 7;

	if (gf_parse_time_limit(s, &v, &e) != -1)
		fail_msg("'%s' accepted as %lld", s, (long long)v);
	assert_int_equal(v, 7);
	assert_msg_has(e.msg, "invalid time limit");
	assert_msg_has(e.msg, part);
}

static void test_time_limit_accepts(void **state)
{
	(void)state;
	time_ok("90", 90 * 60);
	time_ok("1", 60);
	time_ok("0:30", 30);
	time_ok("1:30", 90);
	time_ok("90:00", 5400); /* leading minutes may exceed 59 */
	time_ok("01:02:03", 3723);
	time_ok("1:00:00", 3600);
	time_ok("100:00:00", 360000); /* leading hours may exceed 23 */
	time_ok("0:00:01", 1);
	time_ok("1-00:00:00", 86400);
	time_ok("2-12:30:15", 2 * 86400 + 12 * 3600 + 30 * 60 + 15);
	time_ok("0-00:00:01", 1);
	time_ok("007", 420);
}

static void test_duration(void **state)
{
	static const struct { const char *s; int64_t v; } ok[] = {
		{ "2h", 7200 }, { "30m", 1800 }, { "1h30m", 5400 }, { "1d", 86400 }, { "90s", 90 },
		{ "90", 5400 }, { "1d12h", 129600 }, { "01:00:00", 3600 }, { "172800s", 172800 },
	};
	static const struct { const char *s, *msg; } bad[] = {
		{ "", "'' must be positive" }, { "0", "'0' must be positive" }, { "2x", "'2x': expected e.g." },
		{ "-1h", "'-1h': expected" }, { " 2h", "' 2h': expected" }, { "h", "'h': expected" },
		{ "2h ", "'2h ': expected" }, { "99999999999999", "'99999999999999': expected" },
		{ "999999999d", "is too long" }, { "999999999", "is too long" },
	};
	struct gf_err e;
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		assert_int_equal(gf_parse_duration(ok[i].s, "range", &v, &e), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (gf_parse_duration(bad[i].s, "range", &v, &e) != -1)
			fail_msg("'%s' accepted", bad[i].s);
		assert_msg_has(e.msg, "range '");
		assert_msg_has(e.msg, bad[i].msg);
	}
}

static void test_time_limit_max(void **state)
{
	(void)state;
	time_ok("525600", 365 * 86400LL);
	time_ok("8760:00:00", 365 * 86400LL);
	time_ok("365-00:00:00", 365 * 86400LL);
	time_bad("525601", "365 days");
	time_bad("8760:00:01", "365 days");
	time_bad("365-00:00:01", "365 days");
	time_bad("99999999999999999999", "365 days");
	time_bad("1:99999999999999999999", "365 days");
}

static void test_time_limit_rejects(void **state)
{
	(void)state;
	time_bad("5x", "'5x'");
	time_bad("1:2:3:4", "too many");
	time_bad("", "''");
	time_bad("-1", "negative");
	time_bad("1:60", "60");
	time_bad("1:60:00", "minutes field 60");
	time_bad("1:00:60", "seconds field 60");
	time_bad("0", "greater than zero");
	time_bad("0:00", "greater than zero");
	time_bad("0-00:00:00", "greater than zero");
	time_bad(" ", "' '");
	time_bad(" 5", "' 5'");
	time_bad("5 ", "'5 '");
	time_bad("+5", "'+5'");
	time_bad("1.5", "'1.5'");
	time_bad("1::2", "'' is not a number");
	time_bad(":30", "'' is not a number");
	time_bad("1:", "'' is not a number");
	time_bad("1-2:00", "followed by HH:MM:SS");
	time_bad("1-2", "followed by HH:MM:SS");
	time_bad("1-24:00:00", "hours field 24");
	time_bad("x-01:00:00", "'x' is not a number of days");
	time_bad("1-1-01:00:00", "'1-01'");
	time_bad("1:2x", "'2x'");
}

static void test_time_limit_null_err(void **state)
{
	int64_t v = 3;

	(void)state;
	assert_int_equal(gf_parse_time_limit("bad", &v, NULL), -1);
	assert_int_equal(v, 3);
	assert_int_equal(gf_parse_time_limit(NULL, &v, NULL), -1);
}

/* ---------- memory ---------- */

static void mem_ok(const char *s, int64_t want)
{
	struct gf_err e = { "" };
	int64_t v = -1;

	if (gf_parse_memory_mb(s, &v, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	if (v != want)
		fail_msg("'%s' -> %lld, want %lld", s, (long long)v,
		    (long long)want);
}

static void mem_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	int64_t v = 7;

	if (gf_parse_memory_mb(s, &v, &e) != -1)
		fail_msg("'%s' accepted as %lld", s, (long long)v);
	assert_int_equal(v, 7);
	assert_msg_has(e.msg, "invalid memory size");
	assert_msg_has(e.msg, part);
}

static void test_memory_accepts(void **state)
{
	(void)state;
	mem_ok("100", 100);
	mem_ok("1", 1);
	mem_ok("1024M", 1024);
	mem_ok("1024MB", 1024);
	mem_ok("1024m", 1024);
	mem_ok("1024mb", 1024);
	mem_ok("1024MiB", 1024);
	mem_ok("2G", 2048);
	mem_ok("2GB", 2048);
	mem_ok("2g", 2048);
	mem_ok("2gB", 2048);
	mem_ok("2GiB", 2048);
	mem_ok("1.5G", 1536);
	mem_ok("0.5G", 512);
	mem_ok("1T", 1048576);
	mem_ok("1TB", 1048576);
	mem_ok("1.5t", 1572864);
	mem_ok("512K", 1); /* rounds up */
	mem_ok("512kb", 1);
	mem_ok("1K", 1);
	mem_ok("1024K", 1);
	mem_ok("1025K", 2);
	mem_ok("2048KiB", 2);
	mem_ok("1.5", 2); /* 1.5 MiB rounds up */
	mem_ok("0.5M", 1);
	mem_ok("0.000000001G", 1);
	mem_ok("1.000000001G", 1025);
	mem_ok("1048576T", 1LL << 40); /* the maximum */
	mem_ok("1099511627776", 1LL << 40);
	mem_ok("1048575.999999999T", 1LL << 40);
}

static void test_memory_rejects(void **state)
{
	(void)state;
	mem_bad("lots", "'lots' is not a number");
	mem_bad("-1", "negative");
	mem_bad("-1G", "negative");
	mem_bad("0G", "must be greater than zero");
	mem_bad("0", "must be greater than zero");
	mem_bad("0.0M", "must be greater than zero");
	mem_bad("", "''");
	mem_bad(" ", "' '");
	mem_bad(" 1G", "not a number");
	mem_bad("1G ", "'G '");
	mem_bad("1 G", "' G'");
	mem_bad("1.", "digits after '.'");
	mem_bad(".5G", "'.5G'");
	mem_bad("1X", "unknown unit 'X'");
	mem_bad("1GBB", "'GBB'");
	mem_bad("1Gi", "'Gi'");
	mem_bad("1B", "'B'");
	mem_bad("+1G", "'+1G'");
	mem_bad("1.1234567891G", "decimal places");
	mem_bad("1048577T", "too large");
	mem_bad("1099511627777", "too large");
	mem_bad("99999999999999999999G", "too large");
	mem_bad("1048576.1T", "too large");
}

/* ---------- integers ---------- */

static void test_int_range(void **state)
{
	struct gf_err e = { "" };
	int64_t v = 0;

	(void)state;
	assert_int_equal(gf_parse_int_range("0", 0, 255, "priority", &v, &e),
	    0);
	assert_int_equal(v, 0);
	assert_int_equal(gf_parse_int_range("255", 0, 255, "priority", &v,
	    &e), 0);
	assert_int_equal(v, 255);
	assert_int_equal(gf_parse_int_range("10", 0, 255, "priority", &v, &e),
	    0);
	assert_int_equal(v, 10);
	assert_int_equal(gf_parse_int_range("300", 0, 255, "priority", &v,
	    &e), -1);
	assert_string_equal(e.msg,
	    "invalid priority '300': must be between 0 and 255");
	assert_int_equal(v, 10);
	assert_int_equal(gf_parse_int_range("256", 0, 255, "priority", &v,
	    &e), -1);
	assert_int_equal(gf_parse_int_range("-1", 0, 255, "priority", &v, &e),
	    -1);
	assert_string_equal(e.msg,
	    "invalid priority '-1': must be between 0 and 255");
	assert_int_equal(gf_parse_int_range("-10", -10, 10, "nice", &v, &e),
	    0);
	assert_int_equal(v, -10);
	assert_int_equal(gf_parse_int_range("-0", -10, 10, "nice", &v, &e),
	    0);
	assert_int_equal(v, 0);
	assert_int_equal(gf_parse_int_range("-11", -10, 10, "nice", &v, &e),
	    -1);
}

static void test_int_range_extremes(void **state)
{
	struct gf_err e = { "" };
	int64_t v = 0;

	(void)state;
	assert_int_equal(gf_parse_int_range("9223372036854775807", INT64_MIN,
	    INT64_MAX, "n", &v, &e), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(gf_parse_int_range("-9223372036854775808",
	    INT64_MIN, INT64_MAX, "n", &v, &e), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(gf_parse_int_range("9223372036854775808", INT64_MIN,
	    INT64_MAX, "n", &v, &e), -1);
	assert_msg_has(e.msg, "must be between");
	assert_int_equal(gf_parse_int_range("-9223372036854775809",
	    INT64_MIN, INT64_MAX, "n", &v, &e), -1);
	assert_int_equal(gf_parse_int_range("99999999999999999999999", 0,
	    255, "priority", &v, &e), -1);
	assert_msg_has(e.msg, "'99999999999999999999999'");
}

static void test_int_range_rejects(void **state)
{
	static const char *bad[] = { "", " ", "abc", "12a", " 1", "1 ", "+1",
		"-", "1.0", "0x10", "--1" };
	struct gf_err e = { "" };
	int64_t v = 42;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char quoted[64];
		if (gf_parse_int_range(bad[i], 0, 255, "priority", &v, &e) !=
		    -1)
			fail_msg("'%s' accepted", bad[i]);
		snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
		assert_msg_has(e.msg, "invalid priority");
		assert_msg_has(e.msg, quoted);
	}
	assert_int_equal(v, 42);
	assert_int_equal(gf_parse_int_range("x", 0, 1, NULL, &v, &e), -1);
	assert_msg_has(e.msg, "invalid value 'x'");
}

/* ---------- job references ---------- */

static void test_jobref_accepts(void **state)
{
	struct gf_err e = { "" };
	struct gf_jobref r;

	(void)state;
	assert_int_equal(gf_parse_jobref("42", &r, &e), 0);
	assert_int_equal(r.is_relative, 0);
	assert_int_equal(r.id, 42);
	assert_int_equal(gf_parse_jobref("1", &r, &e), 0);
	assert_int_equal(r.id, 1);
	assert_int_equal(gf_parse_jobref("9223372036854775807", &r, &e), 0);
	assert_true(r.id == INT64_MAX);
	assert_int_equal(gf_parse_jobref("@", &r, &e), 0);
	assert_int_equal(r.is_relative, 1);
	assert_int_equal(r.back, 0);
	assert_int_equal(gf_parse_jobref("@~0", &r, &e), 0);
	assert_int_equal(r.is_relative, 1);
	assert_int_equal(r.back, 0);
	assert_int_equal(gf_parse_jobref("@~3", &r, &e), 0);
	assert_int_equal(r.is_relative, 1);
	assert_int_equal(r.back, 3);
}

static void test_jobref_rejects(void **state)
{
	static const struct {
		const char *s, *part;
	} bad[] = {
		{ "", "''" }, { " ", "' '" }, { "0", "start at 1" },
		{ "-1", "'-1'" }, { "@~", "'@~'" }, { "@3", "'@3'" },
		{ "@~x", "'@~x'" }, { "x", "'x' is not a job id" },
		{ "42x", "'42x'" }, { "@~-1", "'@~-1'" }, { "1,2", "'1,2'" },
		{ " 42", "' 42'" }, { "+4", "'+4'" }, { "@@", "'@@'" },
		{ "9223372036854775808", "too large" },
		{ "@~9223372036854775808", "too large" },
	};
	struct gf_err e = { "" };
	struct gf_jobref r = { 5, 5, 5 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (gf_parse_jobref(bad[i].s, &r, &e) != -1)
			fail_msg("'%s' accepted", bad[i].s);
		assert_msg_has(e.msg, "invalid job reference");
		assert_msg_has(e.msg, bad[i].part);
	}
	assert_int_equal(r.id, 5);
}

/* ---------- ID lists ---------- */

/* Parse s, expecting exactly the refs given as (rel, value) pairs. */
static void list_ok(const char *s, size_t n, const int64_t *want)
{
	struct gf_err e = { "" };
	struct gf_jobref_list l;
	size_t i;

	if (gf_parse_jobref_list(s, &l, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	if (l.n != n)
		fail_msg("'%s' gave %zu refs, want %zu", s, l.n, n);
	for (i = 0; i < n; i++) {
		int rel = want[2 * i] != 0;
		assert_int_equal(l.v[i].is_relative, rel);
		if (rel)
			assert_int_equal(l.v[i].back, want[2 * i + 1]);
		else
			assert_int_equal(l.v[i].id, want[2 * i + 1]);
	}
	gf_jobref_list_free(&l);
	assert_null(l.v);
	assert_int_equal(l.n, 0);
}

static void list_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	struct gf_jobref_list l;

	if (gf_parse_jobref_list(s, &l, &e) != -1)
		fail_msg("'%s' accepted", s);
	assert_null(l.v);
	assert_int_equal(l.n, 0);
	assert_msg_has(e.msg, "invalid ID list");
	assert_msg_has(e.msg, part);
	gf_jobref_list_free(&l); /* harmless on an empty list */
}

static void test_jobref_list_accepts(void **state)
{
	(void)state;
	list_ok("42", 1, (int64_t[]){ 0, 42 });
	list_ok("1,2,3", 3, (int64_t[]){ 0, 1, 0, 2, 0, 3 });
	list_ok("1-5", 5, (int64_t[]){ 0, 1, 0, 2, 0, 3, 0, 4, 0, 5 });
	list_ok("1,3,5-7", 5, (int64_t[]){ 0, 1, 0, 3, 0, 5, 0, 6, 0, 7 });
	list_ok("1,@,@~2", 3, (int64_t[]){ 0, 1, 1, 0, 1, 2 });
	list_ok("@", 1, (int64_t[]){ 1, 0 });
	list_ok("7-7", 1, (int64_t[]){ 0, 7 });
	/* duplicates dropped, first occurrence kept; "@" == "@~0" */
	list_ok("3,1-4,@,@~0,3", 5,
	    (int64_t[]){ 0, 3, 0, 1, 0, 2, 0, 4, 1, 0 });
	list_ok("@~1,1,@~1", 2, (int64_t[]){ 1, 1, 0, 1 });
}

static void test_jobref_list_limit(void **state)
{
	struct gf_err e = { "" };
	struct gf_jobref_list l;
	size_t i;

	(void)state;
	assert_int_equal(gf_parse_jobref_list("1-100000", &l, &e), 0);
	assert_int_equal(l.n, 100000);
	for (i = 0; i < l.n; i++)
		assert_int_equal(l.v[i].id, (int64_t)i + 1);
	gf_jobref_list_free(&l);
	assert_int_equal(gf_parse_jobref_list("1-50000,50001-100000", &l, &e),
	    0);
	assert_int_equal(l.n, 100000);
	gf_jobref_list_free(&l);
	list_bad("1-100001", "more than 100000 ids");
	list_bad("1-100000,@", "more than 100000 ids");
	list_bad("1-9223372036854775807", "more than 100000 ids");
	/* the cap counts ids as written, before duplicates are dropped */
	list_bad("1-50000,1-50001", "more than 100000 ids");
}

static void test_jobref_list_rejects(void **state)
{
	struct gf_err e = { "" };
	struct gf_jobref_list l;

	(void)state;
	assert_int_equal(gf_parse_jobref_list("1,x,3", &l, &e), -1);
	assert_msg_has(e.msg, "invalid ID list '1,x,3': 'x' is not a job id");
	list_bad("5-1", "'5-1'");
	list_bad("5-1", "starts after it ends");
	list_bad("", "''");
	list_bad(" ", "' '");
	list_bad("1,,2", "empty item at position 3");
	list_bad(",1", "empty item at position 1");
	list_bad("1,", "trailing ','");
	list_bad("0", "start at 1");
	list_bad("0-3", "start at 1");
	list_bad("1-", "'1-'");
	list_bad("-1", "'-1'");
	list_bad("@-3", "'@-3'");
	list_bad("1-@", "'@'");
	list_bad("1-2-3", "'2-3'");
	list_bad(" 1", "' 1'");
	list_bad("1 ,2", "'1 '");
	list_bad("1-x", "'x'");
	list_bad("@~", "'@~'");
	list_bad("99999999999999999999", "too large");
}

/* ---------- GPU specs ---------- */

static void gpu_ok(const char *s, uint64_t want)
{
	struct gf_err e = { "" };
	uint64_t m = 12345;
	int all = 7;

	if (gf_parse_gpu_spec(s, &m, &all, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	assert_int_equal(all, 0);
	if (m != want)
		fail_msg("'%s' -> %#llx, want %#llx", s, (unsigned long long)m,
		    (unsigned long long)want);
}

static void gpu_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	uint64_t m = 12345;
	int all = 7;

	if (gf_parse_gpu_spec(s, &m, &all, &e) != -1)
		fail_msg("'%s' accepted", s);
	assert_true(m == 12345);
	assert_int_equal(all, 7);
	assert_msg_has(e.msg, "invalid GPU spec");
	assert_msg_has(e.msg, part);
}

static void test_gpu_spec_accepts(void **state)
{
	struct gf_err e = { "" };
	uint64_t m = 99;
	int all = 0;

	(void)state;
	assert_int_equal(gf_parse_gpu_spec("all", &m, &all, &e), 0);
	assert_int_equal(all, 1);
	assert_true(m == 0);
	gpu_ok("0", 1);
	gpu_ok("0,2,4", 0x15);
	gpu_ok("0-3", 0xf);
	gpu_ok("0-1,3,5-6", 0x6b);
	gpu_ok("63", 1ULL << 63);
	gpu_ok("0-63", UINT64_MAX);
	gpu_ok("62-63", 3ULL << 62);
	gpu_ok("1,1,0-1", 3);
	gpu_ok("007", 1 << 7);
}

static void test_gpu_spec_rejects(void **state)
{
	(void)state;
	gpu_bad("64", "'64' is out of range");
	gpu_bad("1-64", "'64' is out of range");
	gpu_bad("99999999999999999999", "out of range");
	gpu_bad("-1", "'-1' is not a GPU index");
	gpu_bad("3-1", "'3-1' starts after it ends");
	gpu_bad("a", "'a' is not a GPU index");
	gpu_bad("", "''");
	gpu_bad(" ", "' '");
	gpu_bad("0,", "trailing ','");
	gpu_bad(",0", "empty item");
	gpu_bad("0,,1", "empty item");
	gpu_bad("0-", "'0-'");
	gpu_bad("0-1-2", "'1-2'");
	gpu_bad("0 ", "'0 '");
	gpu_bad("ALL", "'ALL'");
	gpu_bad("all,0", "'all'");
	gpu_bad("1,x", "'x'");
}

static void fmt_is(uint64_t m, const char *want)
{
	char buf[256];
	int n = gf_format_gpu_mask(m, buf, sizeof buf);

	assert_string_equal(buf, want);
	assert_int_equal(n, (int)strlen(want));
}

static void test_format_gpu_mask(void **state)
{
	char small[4];
	int n;

	(void)state;
	fmt_is(0xb, "0-1,3");
	fmt_is(0, "");
	fmt_is(1, "0");
	fmt_is(0x6b, "0-1,3,5-6");
	fmt_is(UINT64_MAX, "0-63");
	fmt_is(1ULL << 63, "63");
	fmt_is(3ULL << 62, "62-63");
	fmt_is(0x5555555555555555ULL,
	    "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,"
	    "44,46,48,50,52,54,56,58,60,62");
	/* snprintf semantics: truncated text, full length returned */
	n = gf_format_gpu_mask(0x6b, small, sizeof small);
	assert_int_equal(n, 9);
	assert_string_equal(small, "0-1");
	assert_int_equal(gf_format_gpu_mask(0x6b, NULL, 0), 9);
}

static void test_gpu_round_trip(void **state)
{
	static const uint64_t masks[] = { 1, 0xb, 0x6b, UINT64_MAX,
		0xAAAAAAAAAAAAAAAAULL, 0x8000000000000001ULL, 0xf0f0ULL };
	struct gf_err e = { "" };
	char buf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof masks / sizeof masks[0]; i++) {
		uint64_t m = 0;
		int all = 1;
		gf_format_gpu_mask(masks[i], buf, sizeof buf);
		assert_int_equal(gf_parse_gpu_spec(buf, &m, &all, &e), 0);
		assert_true(m == masks[i]);
		assert_int_equal(all, 0);
	}
}

/* ---------- begin time ---------- */

/* 2024-03-10 12:00:00 UTC. */
#define NOW ((time_t)1710072000)

static void use_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

static void begin_ok(const char *s, time_t now, time_t want)
{
	struct gf_err e = { "" };
	time_t t = 0;

	if (gf_parse_begin_time(s, now, &t, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	if (t != want)
		fail_msg("'%s' -> %lld, want %lld", s, (long long)t,
		    (long long)want);
}

static void begin_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	time_t t = 5;

	if (gf_parse_begin_time(s, NOW, &t, &e) != -1)
		fail_msg("'%s' accepted as %lld", s, (long long)t);
	assert_int_equal(t, 5);
	assert_msg_has(e.msg, "invalid begin time");
	assert_msg_has(e.msg, part);
}

static void test_begin_relative(void **state)
{
	(void)state;
	use_tz("UTC");
	begin_ok("now", NOW, NOW);
	begin_ok("now+0", NOW, NOW);
	begin_ok("now+5", NOW, NOW + 300);
	begin_ok("now+30s", NOW, NOW + 30);
	begin_ok("now+2m", NOW, NOW + 120);
	begin_ok("now+3h", NOW, NOW + 3 * 3600);
	begin_ok("now+1d", NOW, NOW + 86400);
	begin_ok("now+36500d", NOW, NOW + 36500 * 86400LL);
}

static void test_begin_clock_utc(void **state)
{
	(void)state;
	use_tz("UTC");
	begin_ok("13:00", NOW, NOW + 3600);            /* later today */
	begin_ok("12:00:01", NOW, NOW + 1);
	begin_ok("9:05", NOW, NOW + 21 * 3600 + 300);  /* tomorrow */
	begin_ok("11:00", NOW, NOW + 23 * 3600);       /* rolls over */
	begin_ok("12:00", NOW, NOW + 86400);           /* now is not ahead */
	begin_ok("12:00:00", NOW, NOW + 86400);
	begin_ok("00:00", NOW, NOW + 12 * 3600);       /* next midnight */
	begin_ok("23:59:59", NOW, NOW + 12 * 3600 - 1);
}

static void test_begin_dates_utc(void **state)
{
	(void)state;
	use_tz("UTC");
	begin_ok("2024-12-25", NOW, 1735084800);
	begin_ok("2024-12-25T08:30", NOW, 1735115400);
	begin_ok("2024-12-25 08:30", NOW, 1735115400);
	begin_ok("2024-12-25T08:30:15", NOW, 1735115415);
	begin_ok("2024-12-25 08:30:15", NOW, 1735115415);
	begin_ok("2024-02-29", NOW, 1709164800);        /* leap day */
	begin_ok("2024-3-11", NOW, 1710115200);
	begin_ok("1970-01-01", NOW, 0 + 0);
	begin_ok("2000-02-29", NOW, 951782400);
}

static void test_begin_other_zones(void **state)
{
	(void)state;
	/* UTC+2, no DST */
	use_tz("EET-2");
	begin_ok("2024-12-25", NOW, 1735077600);
	/* 12:00Z is 14:00 local: 13:00 is tomorrow, 11:00Z on the 11th */
	begin_ok("13:00", NOW, 1710154800);
	begin_ok("15:00", NOW, NOW + 3600);
	/* US Eastern with DST: July is UTC-4 */
	use_tz("EST5EDT,M3.2.0,M11.1.0");
	begin_ok("2024-07-01T12:00", NOW, 1719849600);
	/* 12:00 EST on Mar 9; 11:00 next day is EDT (15:00Z), 23 h later */
	begin_ok("11:00", (time_t)1710003600, (time_t)1710082800);
	use_tz("UTC");
}

static void test_begin_rejects(void **state)
{
	(void)state;
	use_tz("UTC");
	begin_bad("2024-13-01", "month 13");
	begin_bad("2024-00-10", "month 0");
	begin_bad("2024-02-30", "day 30");
	begin_bad("2023-02-29", "day 29");
	begin_bad("2024-04-31", "day 31");
	begin_bad("2024-01-00", "day 0");
	begin_bad("24:00", "hour 24");
	begin_bad("12:60", "minute 60");
	begin_bad("12:00:60", "second 60");
	begin_bad("2024-01-01T24:00", "hour 24");
	begin_bad("2024-01-01 10:61", "minute 61");
	begin_bad("1969-12-31", "year 1969");
	begin_bad("", "''");
	begin_bad(" ", "' '");
	begin_bad("tomorrow", "'tomorrow'");
	begin_bad("now+", "number after 'now+'");
	begin_bad("now+5x", "unknown unit 'x'");
	begin_bad("now+5mm", "unknown unit 'mm'");
	begin_bad("now+5 ", "unknown unit ' '");
	begin_bad("now-5", "'now-5'");
	begin_bad("now+-5", "number after 'now+'");
	begin_bad("now+99999999999999999999", "too large");
	begin_bad("now+36501d", "too large");
	begin_bad("NOW", "'NOW'");
	begin_bad("1:2", "'1:2'");
	begin_bad("123:00", "'123:00'");
	begin_bad("12:00x", "'12:00x'");
	begin_bad("12", "'12'");
	begin_bad(" 12:00", "' 12:00'");
	begin_bad("2024-01-01X", "unexpected 'X'");
	begin_bad("2024-01-01T", "after the date");
	begin_bad("2024-01-01T1", "after the date");
	begin_bad("2024-01", "'2024-01'");
	begin_bad("2024-01-011", "'2024-01-011'");
	begin_bad("20240-01-01", "'20240-01-01'");
}

/* ---------- array specs ---------- */

static void array_ok(const char *s, int64_t maxc, size_t n,
    const int64_t *want)
{
	struct gf_err e = { "" };
	struct gf_array_spec a;
	size_t i;

	if (gf_parse_array_spec(s, &a, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	assert_int_equal(a.max_concurrent, maxc);
	if (a.n != n)
		fail_msg("'%s' gave %zu ids, want %zu", s, a.n, n);
	for (i = 0; i < n; i++)
		assert_int_equal(a.ids[i], want[i]);
	gf_array_spec_free(&a);
	assert_null(a.ids);
	assert_int_equal(a.n, 0);
}

static void array_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	struct gf_array_spec a;

	if (gf_parse_array_spec(s, &a, &e) != -1)
		fail_msg("'%s' accepted", s);
	assert_null(a.ids);
	assert_int_equal(a.n, 0);
	assert_msg_has(e.msg, "invalid array spec");
	assert_msg_has(e.msg, part);
	gf_array_spec_free(&a);
}

static void test_array_accepts(void **state)
{
	(void)state;
	array_ok("1-10", 0, 10, (int64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 });
	array_ok("1,3,5", 0, 3, (int64_t[]){ 1, 3, 5 });
	array_ok("0-20:2", 0, 11,
	    (int64_t[]){ 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20 });
	array_ok("1-3,7", 0, 4, (int64_t[]){ 1, 2, 3, 7 });
	array_ok("1-10%2", 2, 10,
	    (int64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 });
	array_ok("0", 0, 1, (int64_t[]){ 0 });
	array_ok("5-5", 0, 1, (int64_t[]){ 5 });
	array_ok("1-10:3", 0, 4, (int64_t[]){ 1, 4, 7, 10 });
	array_ok("1-10:4", 0, 3, (int64_t[]){ 1, 5, 9 });
	array_ok("0-20:2%3", 3, 11,
	    (int64_t[]){ 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20 });
	array_ok("1,3,5%1", 1, 3, (int64_t[]){ 1, 3, 5 });
	/* duplicates dropped keeping order */
	array_ok("3,1-4,2", 0, 4, (int64_t[]){ 3, 1, 2, 4 });
	array_ok("0-4:2,0-4", 0, 5, (int64_t[]){ 0, 2, 4, 1, 3 });
	array_ok("9223372036854775807", 0, 1, (int64_t[]){ INT64_MAX });
	array_ok("9223372036854775806-9223372036854775807:5", 0, 1,
	    (int64_t[]){ INT64_MAX - 1 });
}

static void test_array_limit(void **state)
{
	struct gf_err e = { "" };
	struct gf_array_spec a;
	size_t i;

	(void)state;
	assert_int_equal(gf_parse_array_spec("0-99999", &a, &e), 0);
	assert_int_equal(a.n, 100000);
	for (i = 0; i < a.n; i++)
		assert_int_equal(a.ids[i], (int64_t)i);
	gf_array_spec_free(&a);
	assert_int_equal(gf_parse_array_spec("0-199998:2", &a, &e), 0);
	assert_int_equal(a.n, 100000);
	gf_array_spec_free(&a);
	array_bad("0-100000", "more than 100000 tasks");
	array_bad("0-99999,100000", "more than 100000 tasks");
	array_bad("0-9223372036854775807", "more than 100000 tasks");
	/* counted as written, before duplicates are dropped */
	array_bad("0-99999,5", "more than 100000 tasks");
}

static void test_array_rejects(void **state)
{
	(void)state;
	array_bad("", "''");
	array_bad(" ", "' '");
	array_bad("-1", "'-1' is not a task id");
	array_bad("5-1", "'5-1' starts after it ends");
	array_bad("1-10%0", "'%0'");
	array_bad("1-10%", "'' after '%'");
	array_bad("%2", "no task ids");
	array_bad("1-10%x", "'x' after '%'");
	array_bad("1-10%2%3", "'2%3'");
	array_bad("1-10%-1", "'-1' after '%'");
	array_bad("a", "'a' is not a task id");
	array_bad("1,,2", "empty item at position 3");
	array_bad("1,", "trailing ','");
	array_bad("1,%2", "trailing ','");
	array_bad("1-", "'1-'");
	array_bad("1:2", "needs a range");
	array_bad("1-10:0", "at least 1");
	array_bad("1-10:x", "step 'x'");
	array_bad("1-10:", "step ''");
	array_bad("1-10:-2", "step '-2'");
	array_bad(" 1", "' 1'");
	array_bad("1-2-3", "'2-3'");
	array_bad("1-3:1:1", "step '1:1'");
	array_bad("99999999999999999999", "too large");
}

/* ---------- sweep parameters ---------- */

static void param_ok(const char *s, const char *key, size_t n,
    const char *const *want)
{
	struct gf_err e = { "" };
	struct gf_param p;
	size_t i;

	if (gf_parse_param(s, &p, &e) != 0)
		fail_msg("'%s' rejected: %s", s, e.msg);
	assert_string_equal(p.key, key);
	if (p.n != n)
		fail_msg("'%s' gave %zu values, want %zu", s, p.n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(p.values[i], want[i]);
	gf_param_free(&p);
	assert_null(p.key);
	assert_null(p.values);
	assert_int_equal(p.n, 0);
}

static void param_bad(const char *s, const char *part)
{
	struct gf_err e = { "" };
	struct gf_param p;

	if (gf_parse_param(s, &p, &e) != -1)
		fail_msg("'%s' accepted", s);
	assert_null(p.key);
	assert_null(p.values);
	assert_int_equal(p.n, 0);
	assert_msg_has(e.msg, "invalid parameter");
	assert_msg_has(e.msg, part);
	gf_param_free(&p);
}

#define V(...) ((const char *const[]){ __VA_ARGS__ })

static void test_param_lists(void **state)
{
	(void)state;
	param_ok("k=a,b,c", "k", 3, V("a", "b", "c"));
	param_ok("k=a", "k", 1, V("a"));
	param_ok("k=a:b", "k", 1, V("a:b"));       /* not numeric: literal */
	param_ok("k=1:x", "k", 1, V("1:x"));
	param_ok("k=1:2:3:4", "k", 1, V("1:2:3:4")); /* too many parts */
	param_ok("k=1:3,5", "k", 2, V("1:3", "5"));
	param_ok("k=1:", "k", 1, V("1:"));
	param_ok("k=a=b", "k", 1, V("a=b"));
	param_ok("k= a", "k", 1, V(" a"));
	param_ok("_k1=x", "_k1", 1, V("x"));
	param_ok("Lr_2=1e-3,1e-4", "Lr_2", 2, V("1e-3", "1e-4"));
	param_ok("k=a,a", "k", 2, V("a", "a"));    /* literal values kept */
}

static void test_param_ranges(void **state)
{
	(void)state;
	param_ok("n=1:3", "n", 3, V("1", "2", "3"));
	param_ok("n=1:10:3", "n", 4, V("1", "4", "7", "10"));
	param_ok("n=1:10:4", "n", 3, V("1", "5", "9"));
	param_ok("n=5:5", "n", 1, V("5"));
	param_ok("lr=0.1:0.3:0.1", "lr", 3, V("0.1", "0.2", "0.3"));
	param_ok("x=0:0.3:0.1", "x", 4, V("0", "0.1", "0.2", "0.3"));
	param_ok("x=0.1:0.7:0.1", "x", 7,
	    V("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"));
	param_ok("x=0:1:0.25", "x", 5, V("0", "0.25", "0.5", "0.75", "1"));
	param_ok("x=-1:1", "x", 3, V("-1", "0", "1"));
	param_ok("x=-0.5:0.5:0.5", "x", 3, V("-0.5", "0", "0.5"));
	param_ok("x=1.0:2.0:0.5", "x", 3, V("1", "1.5", "2"));
	param_ok("x=0.05:0.25:0.1", "x", 3, V("0.05", "0.15", "0.25"));
	param_ok("x=.5:1.5", "x", 2, V("0.5", "1.5"));
	param_ok("x=1.:3", "x", 3, V("1", "2", "3"));
	param_ok("x=-3:-1", "x", 3, V("-3", "-2", "-1"));
	param_ok("x=0:0.000000002:0.000000001", "x", 3,
	    V("0", "0.000000001", "0.000000002"));
}

static void test_param_limit(void **state)
{
	struct gf_err e = { "" };
	struct gf_param p;
	char *big;
	size_t i;

	(void)state;
	assert_int_equal(gf_parse_param("n=1:100000", &p, &e), 0);
	assert_int_equal(p.n, 100000);
	assert_string_equal(p.values[99999], "100000");
	gf_param_free(&p);
	param_bad("n=1:100001", "more than 100000 values");
	param_bad("n=0:1:0.00001", "more than 100000 values");
	/* a literal list of 100001 values */
	big = malloc(2 + 2 * 100001);
	assert_non_null(big);
	strcpy(big, "k=");
	for (i = 0; i < 100001; i++)
		strcat(big + 2 * i, i ? ",a" : "a");
	param_bad(big, "more than 100000 values");
	big[strlen(big) - 2] = '\0'; /* 100000 values */
	assert_int_equal(gf_parse_param(big, &p, &e), 0);
	assert_int_equal(p.n, 100000);
	gf_param_free(&p);
	free(big);
}

static void test_param_rejects(void **state)
{
	(void)state;
	param_bad("", "''");
	param_bad("k", "missing '='");
	param_bad("=a", "missing key");
	param_bad("1k=a", "'1k' is not a valid key");
	param_bad("k-1=a", "'k-1'");
	param_bad("k 1=a", "'k 1'");
	param_bad(" k=a", "' k'");
	param_bad("k=", "no values");
	param_bad("k=a,,b", "value 2 is empty");
	param_bad("k=a,", "value 2 is empty");
	param_bad("k=,a", "value 1 is empty");
	param_bad("k=3:1", "start is greater than its end");
	param_bad("k=1:3:0", "step must be greater than zero");
	param_bad("k=1:3:-1", "step must be greater than zero");
	param_bad("k=1:3:0.0", "step must be greater than zero");
	param_bad("k=0.0000000001:1", "at most 9 decimals");
	param_bad("k=99999999999999999999:1", "too large");
	param_bad("k=-9000000000000000000:9000000000000000000", "too large");
}

/* ---------- templates ---------- */

static void test_fill_template(void **state)
{
	const char *keys[] = { "k", "lr", "name" };
	const char *vals[] = { "5", "0.1", "x y" };
	struct gf_err e = { "" };
	char *s;

	(void)state;
	s = gf_fill_template("run_{k}", keys, vals, 3, &e);
	assert_string_equal(s, "run_5");
	free(s);
	s = gf_fill_template("{k}_{lr}_{k}-{name}", keys, vals, 3, &e);
	assert_string_equal(s, "5_0.1_5-x y");
	free(s);
	s = gf_fill_template("{{k}}", keys, vals, 3, &e);
	assert_string_equal(s, "{k}");
	free(s);
	s = gf_fill_template("a}}b{{", keys, vals, 3, &e);
	assert_string_equal(s, "a}b{");
	free(s);
	s = gf_fill_template("{{{k}}}", keys, vals, 3, &e);
	assert_string_equal(s, "{5}");
	free(s);
	s = gf_fill_template("plain", keys, vals, 3, &e);
	assert_string_equal(s, "plain");
	free(s);
	s = gf_fill_template("", keys, vals, 3, &e);
	assert_string_equal(s, "");
	free(s);
	s = gf_fill_template("x", NULL, NULL, 0, &e);
	assert_string_equal(s, "x");
	free(s);
}

static void tmpl_bad(const char *t, const char *part)
{
	const char *keys[] = { "k" };
	const char *vals[] = { "5" };
	struct gf_err e = { "" };

	if (gf_fill_template(t, keys, vals, 1, &e) != NULL)
		fail_msg("'%s' accepted", t);
	assert_msg_has(e.msg, "invalid template");
	assert_msg_has(e.msg, part);
}

static void test_fill_template_rejects(void **state)
{
	(void)state;
	tmpl_bad("run_{x}", "unknown parameter 'x'");
	tmpl_bad("{K}", "unknown parameter 'K'");
	tmpl_bad("{k", "unclosed '{' at position 1");
	tmpl_bad("a{k}{", "unclosed '{' at position 5");
	tmpl_bad("k}", "single '}' at position 2");
	tmpl_bad("{k}}", "single '}' at position 4");
	tmpl_bad("{}", "empty placeholder");
	tmpl_bad("{ k}", "unknown parameter ' k'");
	assert_null(gf_fill_template("{x}", NULL, NULL, 0, NULL));
}

/* ---------- messages ---------- */

/* A very long input is clipped so the reason still fits the buffer. */
static void test_long_input_message(void **state)
{
	struct gf_err e = { "" };
	char *s = malloc(5001);
	int64_t v;

	(void)state;
	assert_non_null(s);
	memset(s, 'x', 5000);
	s[5000] = '\0';
	assert_int_equal(gf_parse_memory_mb(s, &v, &e), -1);
	assert_msg_has(e.msg, "...");
	assert_msg_has(e.msg, "is not a number");
	free(s);
}

static void test_since(void **state)
{
	time_t now = 1700000000, t;
	struct gf_err e;

	(void)state;
	setenv("TZ", "UTC", 1);
	assert_int_equal(gf_parse_since("1h", now, &t, &e), 0);
	assert_int_equal(t, now - 3600);
	assert_int_equal(gf_parse_since("30", now, &t, &e), 0);
	assert_int_equal(t, now - 1800);
	assert_int_equal(gf_parse_since("now-2d", now, &t, &e), 0);
	assert_int_equal(t, now - 2 * 86400);
	assert_int_equal(gf_parse_since("90s", now, &t, &e), 0);
	assert_int_equal(t, now - 90);
	assert_int_equal(gf_parse_since("3w", now, &t, &e), 0);
	assert_int_equal(t, now - 21 * 86400);
	assert_int_equal(gf_parse_since("now-1w", now, &t, &e), 0);
	assert_int_equal(t, now - 7 * 86400);
	/* 1700000000 is 2023-11-14 22:13:20 UTC */
	assert_int_equal(gf_parse_since("today", now, &t, &e), 0);
	assert_int_equal(t, 1699920000);
	assert_int_equal(gf_parse_since("yesterday", now, &t, &e), 0);
	assert_int_equal(t, 1699920000 - 86400);
	/* a clock time means its last occurrence, within the last day */
	assert_int_equal(gf_parse_since("12:00", now, &t, &e), 0);
	assert_int_equal(t, 1699920000 + 12 * 3600);
	assert_int_equal(gf_parse_since("23:00", now, &t, &e), 0);
	assert_int_equal(t, 1699920000 - 3600);
	assert_int_equal(gf_parse_since("2000-01-01", now, &t, &e), 0);
	assert_int_equal(t, 946684800);
	assert_int_equal(gf_parse_since("2023-11-14T10:00", now, &t, &e), 0);
	assert_int_equal(t, 1699920000 + 10 * 3600);
	/* a time still ahead is kept: nothing was submitted since */
	assert_int_equal(gf_parse_since("2999-01-01", now, &t, &e), 0);
	assert_true(t > now);
	assert_int_equal(gf_parse_since("now+1h", now, &t, &e), 0);
	assert_int_equal(t, now + 3600);
	/* errors say --since and name the value */
	assert_int_equal(gf_parse_since("tomorrowish", now, &t, &e), -1);
	assert_non_null(strstr(e.msg, "invalid --since 'tomorrowish'"));
	assert_null(strstr(e.msg, "begin time"));
	assert_int_equal(gf_parse_since("now-x", now, &t, &e), -1);
	assert_non_null(strstr(e.msg, "invalid --since 'now-x'"));
	assert_int_equal(gf_parse_since("5y", now, &t, &e), -1);
	assert_non_null(strstr(e.msg, "invalid --since '5y'"));
	assert_int_equal(gf_parse_since("", now, &t, &e), -1);
	assert_int_equal(gf_parse_since("99999999999w", now, &t, &e), -1);
	assert_non_null(strstr(e.msg, "too far back"));
	assert_int_equal(gf_parse_since("2023-13-01", now, &t, &e), -1);
	assert_non_null(strstr(e.msg, "invalid --since"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_limit_accepts),
		cmocka_unit_test(test_time_limit_max),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_time_limit_rejects),
		cmocka_unit_test(test_time_limit_null_err),
		cmocka_unit_test(test_memory_accepts),
		cmocka_unit_test(test_memory_rejects),
		cmocka_unit_test(test_int_range),
		cmocka_unit_test(test_int_range_extremes),
		cmocka_unit_test(test_int_range_rejects),
		cmocka_unit_test(test_jobref_accepts),
		cmocka_unit_test(test_jobref_rejects),
		cmocka_unit_test(test_jobref_list_accepts),
		cmocka_unit_test(test_jobref_list_limit),
		cmocka_unit_test(test_jobref_list_rejects),
		cmocka_unit_test(test_gpu_spec_accepts),
		cmocka_unit_test(test_gpu_spec_rejects),
		cmocka_unit_test(test_format_gpu_mask),
		cmocka_unit_test(test_gpu_round_trip),
		cmocka_unit_test(test_begin_relative),
		cmocka_unit_test(test_begin_clock_utc),
		cmocka_unit_test(test_begin_dates_utc),
		cmocka_unit_test(test_begin_other_zones),
		cmocka_unit_test(test_begin_rejects),
		cmocka_unit_test(test_array_accepts),
		cmocka_unit_test(test_array_limit),
		cmocka_unit_test(test_array_rejects),
		cmocka_unit_test(test_param_lists),
		cmocka_unit_test(test_param_ranges),
		cmocka_unit_test(test_param_limit),
		cmocka_unit_test(test_param_rejects),
		cmocka_unit_test(test_fill_template),
		cmocka_unit_test(test_fill_template_rejects),
		cmocka_unit_test(test_long_input_message),
		cmocka_unit_test(test_since),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
