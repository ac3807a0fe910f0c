/* test_jsonw.c — the JSON writer (jsonw.c) writes what jansson's compact
 * dump writes: strings (every control character, quotes, backslashes,
 * multi-byte text, NUL inside), integers at their limits, reals of every
 * shape, and jansson values passed through. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

/* jansson's compact text of v (consumed). */
static char *dumped(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	assert_non_null(s);
	json_decref(v);
	return s;
}

static void same_string(const char *s, size_t n)
{
	struct jsonw w = { 0 };
	char *want = dumped(json_stringn(s, n));

	jw_str(&w, s, n);
	assert_string_equal(w.p, want);
	assert_int_equal(w.len, strlen(want));
	free(want);
	jw_free(&w);
}

static void strings(void **state)
{
	static const char *const tricky[] = {
		"", "plain", "say \"hi\"", "back\\slash", "a/b", "tab\there", "new\nline\r\n",
		"\x01\x02\x1b[31mred\x1b[0m\x7f", "\b\f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		"\xe2\x80\xa8 line sep \xe2\x80\xa9", ("\xc2\x9b" "2J"), "trailing \\", "\"", "x\x1f",
	};
	char all[64];

	(void)state;
	for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++)
		same_string(tricky[i], strlen(tricky[i]));
	for (int c = 0; c < 0x20; c++) {	/* each control character alone and in text */
		snprintf(all, sizeof all, "a%cb", c ? c : 'x');
		same_string(all, 3);
		all[0] = (char)c;
		same_string(all, 1);
	}
	same_string("a\0b", 3);			/* NUL inside a string */
	for (int c = 0; c < 32; c++)
		all[c] = (char)c;
	same_string(all, 32);
}

static void integers(void **state)
{
	static const long long v[] = { 0, 1, -1, 9, 10, 42, -42, 1733220000, INT_MAX, INT_MIN,
				       LLONG_MAX, LLONG_MIN, 4294967295LL };

	(void)state;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct jsonw w = { 0 };
		char *want = dumped(json_integer(v[i]));

		jw_int(&w, v[i]);
		assert_string_equal(w.p, want);
		free(want);
		jw_free(&w);
	}
}

static void reals(void **state)
{
	static const double v[] = { 0.0, 1.0, -1.0, 0.1, 0.5, 100.0, 1e20, 1e21, 1e22, 1e-5, 1e-7, 123e-20,
				    1.5e300, 1733220000.0, 1733220000.123456, 1733220123.9876543, 5e-324,
				    1.7976931348623157e308, -2.5e-10, 3.14159265358979, 1e100, 12345678901234567.0 };

	(void)state;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct jsonw w = { 0 };
		char *want = dumped(json_real(v[i]));

		jw_real(&w, v[i]);
		assert_string_equal(w.p, want);
		free(want);
		jw_free(&w);
	}
}

/* The exact fast path for 1 <= |v| < 2^53 against jansson (stdio) over
 * random doubles of every size there, times like a job's, exact ties
 * (round half to even) and the edges where a carry adds a digit. */
static void reals_fast_path(void **state)
{
	static const double edge[] = { 1.0, 9.9999999999999982, 9.9999999999999991, 99.999999999999986,
				       999999999.99999988, 1234567890123456.2, 1234567890123456.5,
				       1234567890123456.8, 4503599627370495.5, 4503599627370496.5,
				       9007199254740991.0, 9007199254740990.5, 2.5, 0.75 + 1 };
	uint64_t x = 88172645463325252ull;

	(void)state;
	for (long i = 0; i < 400000; i++) {
		double v;
		char *want, got[64];

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;	/* xorshift64 */
		if (i < (long)(sizeof edge / sizeof *edge))
			v = edge[i];
		else if (i % 4 == 0)	/* a job's time: now-ish, microseconds */
			v = 1.7e9 + (double)(x % 300000000000000ull) / 1e6;
		else if (i % 4 == 1)	/* any double in [1, 2^53) */
			v = ldexp(1.0 + (double)(x >> 12) / 4503599627370496.0, (int)(x % 53));
		else if (i % 4 == 2)	/* exact halves and quarters: ties */
			v = (double)(x % 9007199254740992ull) / (double)(1u << (x % 3));
		else
			v = -ldexp(1.0 + (double)(x >> 12) / 4503599627370496.0, (int)(x % 53));
		if (fabs(v) < 1.0)
			continue;
		want = dumped(json_real(v));
		assert_true(jw_dtostr(got, sizeof got, v) > 0);
		if (strcmp(got, want))
			fail_msg("%.17g: jw_dtostr wrote %s, jansson %s", v, got, want);
		free(want);
	}
}

static void values_and_growth(void **state)
{
	struct jsonw w = { 0 };
	json_t *v = json_pack("{s:[i,f,s,n,b],s:{s:s},s:[]}", "a", 1, 2.5, "x\ny", 1, "o", "k", "\"v\"", "e");
	char *want = json_dumps(v, JSON_COMPACT);
	size_t n;

	(void)state;
	jw_json(&w, v, JSON_COMPACT);
	assert_string_equal(w.p, want);
	n = w.len;
	for (int i = 0; i < 10000; i++)		/* the buffer grows; what is in it stays */
		jw_lit(&w, ",");
	assert_int_equal(w.len, n + 10000);
	assert_memory_equal(w.p, want, n);
	assert_int_equal(w.p[w.len], '\0');
	free(want);
	json_decref(v);
	jw_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings),
		cmocka_unit_test(integers),
		cmocka_unit_test(reals),
		cmocka_unit_test(reals_fast_path),
		cmocka_unit_test(values_and_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
