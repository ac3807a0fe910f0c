/* test_client_qstream.c — gqueue's streamed list: the reader (qstream.c)
 * gives, for every job of a varied list fed whole, byte by byte or in
 * uneven pieces, the cells a fully parsed (jansson) answer gives; it
 * refuses malformed and cut-short lists with a message; and the row-by-row
 * table (table_out) writes what table_render writes in every format. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "qstream.h"
#include "queue.h"
#include "table.h"

#define NOW 1733300000.0

/* Jobs of every shape a column reads, as the daemon could send them. */
static json_t *varied_list(void)
{
	json_t *jobs = json_array();

	for (int k = 0; k < 40; k++) {
		json_t *o = json_object();

		json_object_set_new(o, "id", json_integer(k + 1));
		json_object_set_new(o, "state", json_string(k % 4 == 0 ? "Running" : k % 4 == 1 ? "Queued" :
							 k % 4 == 2 ? "Finished" : "Failed"));
		if (k % 5)
			json_object_set_new(o, "st", json_string(k % 4 == 0 ? "R" : "PD"));
		json_object_set_new(o, "name", k % 3 == 0 ? json_string("caf\xc3\xa9 \"q\"\n\\ \xf0\x9f\x98\x80") :
					       k % 3 == 1 ? json_string("esc\x1b[31m,x") : json_null());
		json_object_set_new(o, "reason", k % 2 ? json_string("Resources") : json_null());
		json_object_set_new(o, "gpus", k % 6 == 5 ? json_real(2.7) : json_integer(k % 3));
		json_object_set_new(o, "gpu_ids", k % 4 == 0 ? json_pack("[i,s,b,i]", 0, "MIG-1", 1, 3) :
						  k % 7 == 3 ? json_string("bad") : json_array());
		json_object_set_new(o, "start_time", k % 2 ? json_real(1733290000.5 + k) : json_null());
		json_object_set_new(o, "end_time", k % 4 == 2 ? json_real(1733295000.25) : json_null());
		json_object_set_new(o, "submit_time", json_real(1733280000.0 + k));
		if (k % 4 == 1 || k % 4 == 2) {	/* as start=1 gives them, and odd ones */
			json_object_set_new(o, "expected_start", k % 3 == 0 ? json_null() :
				k % 3 == 1 ? json_real(1733299000.5 + k) : json_integer(1733299000 + k));
			json_object_set_new(o, "expected_gpus", k % 5 == 0 ? json_string("x") :
				k % 5 == 1 ? json_array() : json_pack("[i,i]", k % 4, 7));
		}
		json_object_set_new(o, "time_limit_secs", k % 3 ? json_integer(3600 * k) : json_null());
		json_object_set_new(o, "memory_mb", k % 4 ? json_integer(1024 * k) : json_null());
		json_object_set_new(o, "gpu_memory_mb", k % 5 ? json_integer(1500) : json_null());
		if (k % 8 == 1)
			json_object_set_new(o, "user", json_string("al\xc3\xaf" "ce"));
		json_object_set_new(o, "uid", json_integer(1000 + k));
		json_object_set_new(o, "project", k % 3 ? json_string("") : json_string("p,1"));
		json_object_set_new(o, "priority", k % 9 ? json_integer(k) : json_string("x"));
		json_object_set_new(o, "exit_code", k % 4 == 2 ? json_integer(k) : json_null());
		json_object_set_new(o, "exit_signal", k % 4 == 3 ? json_integer(k % 2 ? 9 : 77) : json_null());
		if (k % 6 == 1)
			json_object_set_new(o, "cluster", json_string("hpc"));
		if (k % 4 == 0)
			json_object_set_new(o, "gpu_usage", json_pack("{s:[s],s:b,s:i,s:{s:i}}", "uuids", "GPU-x",
								      "memory_exceeded", k % 8 == 0, "exceeded_mb",
								      3000 + k, "nested", "a", 1));
		json_object_set_new(o, "command", json_pack("[s,{s:s}]", "a", "base64", "/w=="));
		json_object_set_new(o, "params", json_pack("{s:[[],{}]}", "deep", NULL));
		json_array_append_new(jobs, o);
	}
	return jobs;
}

struct seen {
	char **cells;	/* per job, per field */
	size_t n;
};

static void take(const struct qjob *q, void *arg)
{
	struct seen *s = arg;

	for (int f = 0; f < QF_COUNT; f++) {
		struct sbuf b = { 0 };

		qjob_cell(q, (enum qfield)f, NOW, &b);
		s->cells = realloc(s->cells, (s->n + 1) * sizeof *s->cells);
		s->cells[s->n++] = sbuf_take(&b);
	}
}

/* Feed text in pieces of the given sizes (cycled); compare every cell. */
static void read_in_pieces(const char *text, json_t *jobs, const size_t *sizes, size_t nsizes)
{
	struct qstream st;
	struct seen s = { 0 };
	size_t at = 0, len = strlen(text), k = 0;

	qstream_init(&st, take, &s);
	while (at < len) {
		size_t n = sizes[k++ % nsizes];

		if (n > len - at)
			n = len - at;
		assert_int_equal(qstream_feed(&st, text + at, n), 0);
		at += n;
	}
	assert_int_equal(qstream_end(&st), 0);
	assert_int_equal(s.n, json_array_size(jobs) * QF_COUNT);
	for (size_t j = 0; j < json_array_size(jobs); j++)
		for (int f = 0; f < QF_COUNT; f++) {
			char *want = queue_field_value(json_array_get(jobs, j), (enum qfield)f, NOW);

			if (strcmp(s.cells[j * QF_COUNT + (size_t)f], want))
				fail_msg("job %zu field %d: %s != %s", j, f, s.cells[j * QF_COUNT + (size_t)f], want);
			free(want);
		}
	for (size_t i = 0; i < s.n; i++)
		free(s.cells[i]);
	free(s.cells);
	qstream_free(&st);
}

static void same_cells_as_a_parsed_answer(void **state)
{
	json_t *jobs = varied_list(), *doc = json_pack("{s:s,s:O,s:i}", "note", "x", "jobs", jobs, "n", 1);
	static const size_t whole[] = { 1 << 30 }, one[] = { 1 }, uneven[] = { 7, 1, 300, 2, 64, 3 };
	char *compact = json_dumps(doc, JSON_COMPACT), *pretty = json_dumps(doc, JSON_INDENT(3));

	(void)state;
	read_in_pieces(compact, jobs, whole, 1);
	read_in_pieces(compact, jobs, one, 1);
	read_in_pieces(compact, jobs, uneven, 6);
	read_in_pieces(pretty, jobs, uneven, 6);	/* white space anywhere */
	free(compact);
	free(pretty);
	json_decref(doc);
	json_decref(jobs);
}

static void count(const struct qjob *q, void *arg)
{
	(void)q;
	++*(int *)arg;
}

/* 0 when the text reads as a list, else -1 (and a message). */
static int read_text(const char *text, size_t n, int *rows)
{
	struct qstream st;
	int rc;

	*rows = 0;
	qstream_init(&st, count, rows);
	rc = qstream_feed(&st, text, n) < 0 || qstream_end(&st) < 0 ? -1 : 0;
	if (rc)
		assert_true(strlen(qstream_error(&st)) > 10);
	qstream_free(&st);
	return rc;
}

static void malformed_and_cut_short(void **state)
{
	static const char *const bad[] = {
		"", "[]", "{}", "{\"jobs\":{}}", "{\"jobs\":[1]}", "{\"jobs\":[{\"id\":1}]", "{\"jobs\":[{\"id\":1}]}x",
		"{\"jobs\":[{\"id\":01}]}", "{\"jobs\":[{\"id\":1.}]}", "{\"jobs\":[{\"id\":-}]}",
		"{\"jobs\":[{\"id\":99999999999999999999}]}", "{\"jobs\":[{\"id\":1e999}]}",
		"{\"jobs\":[{\"name\":\"a\x01\"}]}", "{\"jobs\":[{\"name\":\"\xff\"}]}",
		"{\"jobs\":[{\"name\":\"\\x\"}]}", "{\"jobs\":[{\"name\":\"\\u12G4\"}]}",
		"{\"jobs\":[{\"name\":\"\\ud800\"}]}", "{\"jobs\":[{\"name\":\"\\u0000\"}]}",
		"{\"jobs\":[{\"id\":1,}]}", "{\"jobs\":[{\"id\":1},]}", "{\"jobs\":[{\"id\" 1}]}",
		"{\"jobs\":[{\"id\":tru}]}", "{\"jobs\":[{\"id\":nul}]} ", "{\"jobs\":[{\"a\":[1,2}]}",
		"{\"jobs\":[{1:2}]}", "{\"jobs\" [] }", "{\"jobs\":[]", "{\"jobs\":[] ,}",
	};
	static const char good[] = " {\"x\":[1,{\"y\":null}], \"jobs\" : [ {\"id\":1,\"name\":\"\\ud83d\\ude00\\n\","
				   "\"gpu_ids\":[0,\"a\"]} , {} ] } \n";
	int rows;
	char deep[2100];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (read_text(bad[i], strlen(bad[i]), &rows) == 0)
			fail_msg("read as a list: %s", bad[i]);
	assert_int_equal(read_text(good, strlen(good), &rows), 0);
	assert_int_equal(rows, 2);
	for (size_t n = 0; n + 3 < strlen(good); n++)	/* every cut is noticed */
		assert_int_equal(read_text(good, n, &rows), -1);
	/* keys escaped or empty are keys too */
	{
		static const char esc[] = "{\"j\\u006fbs\":[{\"\":1,\"n\\u0061me\":\"z\"}]}";

		assert_int_equal(read_text(esc, sizeof esc - 1, &rows), 0);
	}
	assert_int_equal(rows, 1);
	memset(deep, '[', sizeof deep);	/* nesting deeper than any answer */
	memcpy(deep, "{\"jobs\":[{\"a\":", 14);
	assert_int_equal(read_text(deep, sizeof deep, &rows), -1);
}

static int keep_raw(const char *p, size_t n, void *arg)
{
	struct sbuf *b = arg;

	sbuf_add(b, p, n);
	sbuf_addc(b, '|');
	return 0;
}

/* Each job object's own bytes, whatever the pieces they came in. */
static void raw_objects(void **state)
{
	static const char text[] = "{\"jobs\": [ {\"id\":1,\"n\":\"}\\\"\"} ,{ \"a\":[{}]} ]}";
	struct qstream st;
	struct sbuf got = { 0 };

	(void)state;
	qstream_init(&st, NULL, &got);
	st.raw = keep_raw;
	for (size_t i = 0; i < sizeof text - 1; i++)
		assert_int_equal(qstream_feed(&st, text + i, 1), 0);
	assert_int_equal(qstream_end(&st), 0);
	assert_string_equal(sbuf_str(&got), "{\"id\":1,\"n\":\"}\\\"\"}|{ \"a\":[{}]}|");
	sbuf_free(&got);
	qstream_free(&st);
}

static void rows_out_as_table_render_writes(void **state)
{
	const char *headers[] = { "JOBID", "NAME", "ST", "JOBID", "NODELIST(REASON)" };
	const char *rows[][5] = {
		{ "1", "caf\xc3\xa9 \"q\"", "R", "1", "0,1" },
		{ "22", "esc\x1b[31m,x\nnext", "PD", "22", "(Resources)" },
		{ "333", "", "CD", "333", "-" },
		{ "4", "wide \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80", "F", "4", "trailing  " },
	};

	(void)state;
	for (int fmt = TABLE_TEXT; fmt <= TABLE_JSON; fmt++)
		for (size_t nrows = 0; nrows <= 4; nrows++) {
			struct table *t = table_new(5, headers);
			char *want, *got = NULL;
			size_t len = 0;
			FILE *out = open_memstream(&got, &len);
			struct table_out *o = table_out_new((enum table_fmt)fmt, 5, headers, out);

			for (size_t r = 0; r < nrows; r++) {
				table_add_row(t, rows[r]);
				table_out_row(o, rows[r]);
			}
			table_out_end(o);
			fclose(out);
			want = table_render(t, (enum table_fmt)fmt);
			assert_string_equal(got, want);
			free(want);
			free(got);
			table_free(t);
		}
}


/* gf_decimal (common/decimal.c, qstream's and jobrow.c's numbers) gives strtod's double, bit for bit, for every form it
 * takes, and takes the daemon's times; it leaves the rest to strtod. */
static void check_decimal(const char *text)
{
	double got, want = strtod(text, NULL);

	if (gf_decimal(text, &got) == 0 && memcmp(&got, &want, sizeof got)) {
		fprintf(stderr, "gf_decimal(%s) = %.17g, strtod: %.17g\n", text, got, want);
		fail();
	}
}

static void decimals_as_strtod_rounds_them(void **state)
{
	static const char *const odd[] = { "0", "0.0", "-0.0", "1e5", "1.5E-3", "12345678901234567890",
		"0.1234567890123456", "1.2.3", "", "-", "1.", NULL };
	char buf[64];
	double d;
	uint64_t x = 88172645463325252ULL;

	(void)state;
	assert_int_equal(gf_decimal("1796440242.6112356", &d), 0);
	assert_true(d == strtod("1796440242.6112356", NULL));
	assert_int_equal(gf_decimal("-2.5", &d), 0);
	assert_true(d == -2.5);
	for (const char *const *p = odd; *p; p++) {
		check_decimal(*p);
		if (strchr(*p, 'e') || strchr(*p, 'E') || !strcmp(*p, "0") || strlen(*p) > 20)
			assert_int_equal(gf_decimal(*p, &d), -1);
	}
	for (int i = 0; i < 400000; i++) {
		int kind;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;	/* xorshift */
		kind = (int)(x % 4);
		if (kind == 0) {	/* a time as the daemon writes it */
			double t = 1.6e9 + (double)(x >> 20) / 1e6;

			snprintf(buf, sizeof buf, "%.17g", t);
		} else if (kind == 1) {	/* any double, 17 digits */
			double v;
			uint64_t bits = x & ~(UINT64_C(0x7ff) << 52);

			bits |= (uint64_t)(1000 + (x >> 40) % 60) << 52;	/* 2^-23 .. 2^36 */
			memcpy(&v, &bits, sizeof v);
			snprintf(buf, sizeof buf, "%.17g", v);
		} else if (kind == 2) {	/* halfway and near-halfway cases */
			double v = (double)(x >> 11) * 0x1p-20;
			uint64_t bits;

			memcpy(&bits, &v, sizeof bits);
			bits += 1;
			memcpy(&v, &bits, sizeof v);
			snprintf(buf, sizeof buf, "%.*f", (int)(x % 16), v - (v - (double)(x >> 11) * 0x1p-20) / 2);
		} else {	/* random digits: up to 19, up to 15 after the point */
			int n = 1 + (int)(x % 19), k = (int)((x >> 8) % 16), at = 0;
			uint64_t y = x;

			if ((x >> 30) & 1)
				buf[at++] = '-';
			for (int j = 0; j < n; j++) {
				if (j == n - k && j > 0)
					buf[at++] = '.';
				buf[at++] = (char)('0' + y % 10);
				y = y / 10 ? y / 10 : x >> 3;
			}
			buf[at] = 0;
		}
		check_decimal(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_cells_as_a_parsed_answer),
		cmocka_unit_test(malformed_and_cut_short),
		cmocka_unit_test(raw_objects),
		cmocka_unit_test(rows_out_as_table_render_writes),
		cmocka_unit_test(decimals_as_strtod_rounds_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
