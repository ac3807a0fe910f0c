/* fuzz_parse.c — libFuzzer target for src/common/parse.c: feeds each input
 * (NUL-terminated copy) to every parser, frees what they return, and
 * aborts when a result breaks a documented invariant.
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined
 *        -Isrc/common src/common/parse.c src/common/err.c
 *        tests/fuzz/fuzz_parse.c -o fuzz_parse */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* Abort (a finding for the fuzzer) unless cond holds. */
#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

/* Every failure must leave a non-empty message. */
static void check_err(int rc, const struct gf_err *e)
{
	CHECK(rc == 0 || rc == -1);
	if (rc == -1)
		CHECK(e->msg[0] != '\0');
}

static void fuzz_scalars(const char *s)
{
	struct gf_err e = { "" };
	struct gf_jobref r;
	int64_t v;
	int rc;

	rc = gf_parse_time_limit(s, &v, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(v > 0 && v <= GF_TIME_LIMIT_MAX_SECS);
	e.msg[0] = '\0';
	rc = gf_parse_memory_mb(s, &v, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(v > 0 && v <= GF_MEMORY_MAX_MB);
	e.msg[0] = '\0';
	rc = gf_parse_int_range(s, 0, 255, "priority", &v, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(v >= 0 && v <= 255);
	e.msg[0] = '\0';
	rc = gf_parse_jobref(s, &r, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(r.is_relative ? r.back >= 0 : r.id > 0);
}

static void fuzz_gpu(const char *s)
{
	struct gf_err e = { "" };
	uint64_t m, m2;
	char buf[256];
	int all, all2, rc;

	rc = gf_parse_gpu_spec(s, &m, &all, &e);
	check_err(rc, &e);
	if (rc != 0 || all)
		return;
	CHECK(m != 0);
	/* formatting and parsing again must give the same mask */
	CHECK(gf_format_gpu_mask(m, buf, sizeof buf) < (int)sizeof buf);
	CHECK(gf_parse_gpu_spec(buf, &m2, &all2, &e) == 0);
	CHECK(m2 == m && all2 == 0);
}

static void fuzz_lists(const char *s)
{
	struct gf_err e = { "" };
	struct gf_jobref_list l;
	struct gf_array_spec a;
	time_t t;
	int rc;

	rc = gf_parse_jobref_list(s, &l, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(l.n >= 1 && l.n <= GF_MAX_LIST_IDS);
	gf_jobref_list_free(&l);
	e.msg[0] = '\0';
	rc = gf_parse_array_spec(s, &a, &e);
	check_err(rc, &e);
	if (rc == 0)
		CHECK(a.n >= 1 && a.n <= GF_MAX_ARRAY_TASKS &&
		    a.max_concurrent >= 0);
	gf_array_spec_free(&a);
	e.msg[0] = '\0';
	rc = gf_parse_begin_time(s, (time_t)1710072000, &t, &e);
	check_err(rc, &e);
}

static void fuzz_param_template(const char *s)
{
	const char *keys[] = { "k", "lr", "name" };
	const char *vals[] = { "1", "0.1", "x" };
	struct gf_err e = { "" };
	struct gf_param p;
	char *out;
	int rc;

	rc = gf_parse_param(s, &p, &e);
	check_err(rc, &e);
	if (rc == 0) {
		const char *k = p.key, *v = p.values[0];
		size_t klen = strlen(k);
		char *tmpl = malloc(klen + 3);
		CHECK(p.n >= 1 && p.n <= GF_MAX_PARAM_VALUES && tmpl);
		/* "{key}" filled with the first value is that value */
		tmpl[0] = '{';
		memcpy(tmpl + 1, k, klen);
		memcpy(tmpl + 1 + klen, "}", 2);
		out = gf_fill_template(tmpl, &k, &v, 1, &e);
		CHECK(out && strcmp(out, v) == 0);
		free(out);
		free(tmpl);
	}
	gf_param_free(&p);
	e.msg[0] = '\0';
	out = gf_fill_template(s, keys, vals, 3, &e);
	if (!out)
		CHECK(e.msg[0] != '\0');
	free(out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	fuzz_scalars(s);
	fuzz_gpu(s);
	fuzz_lists(s);
	fuzz_param_template(s);
	free(s);
	return 0;
}
