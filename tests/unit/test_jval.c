/* test_jval.c — jval (src/common/jval.c), the client's JSON values, held
 * against jansson: the same API scripts built against each
 * (jval_script.h), and the same texts read and written by each — a corpus
 * of edge cases, then thousands of generated documents and their
 * mutations. Every answer must be byte for byte jansson's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jval.h"
#include "jval_oracle.h"

#define SIDE(name) ours_##name
#include "jval_script.h"

static const size_t dump_flags[] = { 0, JSON_COMPACT, JSON_INDENT(2), JSON_INDENT(3) | JSON_COMPACT };
static const size_t load_flags[] = { 0, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY };

static void same_text(const char *what, char *ours, char *theirs)
{
	if (!ours || !theirs || strcmp(ours, theirs))
		fail_msg("%s:\n jval:    %s\n jansson: %s", what, ours ? ours : "(none)", theirs ? theirs : "(none)");
	free(ours);
	free(theirs);
}

/* Script k of n on both sides, with every dump flag. */
static void both_sides(const char *what, int n, char *(*ours)(int, size_t), char *(*theirs)(int, size_t))
{
	char label[64];

	for (int k = 0; k < n; k++)
		for (size_t f = 0; f < sizeof dump_flags / sizeof dump_flags[0]; f++) {
			snprintf(label, sizeof label, "%s case %d, flags %#zx", what, k, dump_flags[f]);
			same_text(label, ours(k, dump_flags[f]), theirs(k, dump_flags[f]));
		}
}

static void test_pack(void **state)
{
	(void)state;
	both_sides("pack", SCRIPT_NPACK, ours_pack, jansson_pack);
}

static void test_ops(void **state)
{
	(void)state;
	both_sides("ops", SCRIPT_NOPS, ours_ops, jansson_ops);
}

static void test_numbers(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof dump_flags / sizeof dump_flags[0]; f++)
		same_text("numbers", ours_numbers(dump_flags[f]), jansson_numbers(dump_flags[f]));
}

static void test_scalars_and_counts(void **state)
{
	json_t *s = json_string("x"), *o = json_object();

	(void)state;
	assert_int_equal(s->refcount, 1);
	json_object_set(o, "s", s);
	assert_int_equal(s->refcount, 2);
	json_object_set_new(o, "s", json_incref(s));	/* replaced by itself */
	assert_int_equal(s->refcount, 2);
	json_object_del(o, "s");
	assert_int_equal(s->refcount, 1);
	assert_ptr_equal(json_incref(json_true()), json_true());
	json_decref(json_true());
	json_decref(json_null());
	assert_true(json_is_true(json_true()) && json_is_boolean(json_false()) && json_is_null(json_null()));
	assert_null(json_object_get(NULL, "x"));
	assert_int_equal(json_array_size(NULL), 0);
	assert_int_equal(json_integer_value(s), 0);
	assert_null(json_dumps(s, 0));				/* a scalar needs JSON_ENCODE_ANY */
	json_decref(s);
	json_decref(o);
}

/* Edge cases read with every load flag and written with every dump flag. */
static const char *const corpus[] = {
	"", " ", "{}", "[]", " [ ] ", "{ }", "[1]", "[-0]", "[-0.0]", "[0.0]", "[01]", "[-]", "[1.]", "[.5]",
	"[1e5]", "[1E+5]", "[1e-5]", "[1e]", "[1e+]", "[2.5e-3]", "[9223372036854775807]",
	"[9223372036854775808]", "[-9223372036854775808]", "[-9223372036854775809]", "[1e400]", "[-1e400]",
	"[1e-400]", "[123456789012345678901234567890.5]", "[true,false,null]", "[tru]", "[truex]", "[nul]",
	"[True]", "[\"a\"", "[\"a\\\"]", "[\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"]", "[\"\\ud83d\"]",
	"[\"\\ude00\"]", "[\"\\ud83dx\"]", "[\"\\u0000\"]", "[\"\\u00\"]", "[\"\\x\"]", "[\"\\/\"]",
	"[\"tab\there\"]", "[\"nl\nhere\"]", "[\"\x7f\"]", "[\"\xc3\xa9\"]", "[\"\xc3\"]", "[\"\xff\"]",
	"[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]", "[\"\xe0\x80\x80\"]", "{\"a\":1,\"a\":2}",
	"{\"a\":1,\"b\":{\"a\":2}}", "{\"a\" 1}", "{\"a\":}", "{\"a\":1,}", "{,}", "{1:2}", "{\"a\":1 \"b\":2}",
	"[1,]", "[,1]", "[1 2]", "[[[]]]", "[{}]", "{\"\":0}", "{\"\\u0000\":1}", "{\"k\\u00e9\":1}",
	"[1] x", "[1]]", "3", "\"s\"", "null", "true", "-1", "  3  ", "x", "\xff", "[\xff]", "\xef\xbb\xbf[]",
	"[\"a\"]\n", "\t\r\n[1]\t\r\n", "[1,\n2,\r\n3]", "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}",
	"[\"\\\\\",\"\\\"\",\"\\b\\f\\n\\r\\t\"]", "[1.5e308, 5e-324, 0.1]", "[1.0, 100, 1e2]",
};

static void compare_text(const char *in, size_t n)
{
	if (!jansson_comparable(in, n)) {	/* refused by jval, whatever jansson does */
		char err[256];

		for (size_t l = 0; l < sizeof load_flags / sizeof load_flags[0]; l++)
			assert_null(ours_roundtrip(in, n, load_flags[l], 0, err, sizeof err));
		return;
	}
	char e1[256], e2[256], what[640];

	for (size_t l = 0; l < sizeof load_flags / sizeof load_flags[0]; l++)
		for (size_t d = 0; d < sizeof dump_flags / sizeof dump_flags[0]; d++) {
			char *a = ours_roundtrip(in, n, load_flags[l], dump_flags[d], e1, sizeof e1);
			char *b = jansson_roundtrip(in, n, load_flags[l], dump_flags[d], e2, sizeof e2);

			if (!a && !b) {
				if (strcmp(e1, e2))
					fail_msg("error reading %.*s (%zu bytes, load %#zx):\n jval:    %s\n jansson: %s",
					    (int)(n > 80 ? 80 : n), in, n, load_flags[l], e1, e2);
				continue;
			}
			snprintf(what, sizeof what, "reading %.*s (%zu bytes, load %#zx, dump %#zx)%s%s",
			    (int)(n > 80 ? 80 : n), in, n, load_flags[l], dump_flags[d], a ? "" : ": jval refused: ",
			    a ? (b ? "" : ": jansson refused it") : e1);
			if (!a || !b)
				fail_msg("%s%s%s", what, a ? " — " : "", a ? e2 : "");
			same_text(what, a, b);
		}
}

static void test_corpus(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++)
		compare_text(corpus[i], strlen(corpus[i]));
	compare_text("[\"a\0b\"]", 7);	/* a raw NUL: a control character */
	compare_text("[1]\0", 4);		/* refused, where jansson reads [1,2] and 2: */
	compare_text("2\0", 2);
	compare_text("[1,2\0]", 6);
	compare_text("[true\0,\n1e5\0\0]", 14);
}

/* jansson's words for the errors a user may see (gflow mcp shows them). */
static void test_error_texts(void **state)
{
	static const char *const cases[] = {
		"", "x", "3", "[1] x", "{\"a\":1,\"a\":2}", "[1e400]", "[99999999999999999999]",
		"[-99999999999999999999]", "[\"\\u0000\"]", "[\"\xff\"]", "{\"a\" 1}", "[1 2]", "{\"a\":1 \"b\":2}",
		"[\"a", "[\"a\nb\"]", "{\"a\":1,}",
	};
	char e1[256], e2[256];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t flags = i == 4 ? JSON_REJECT_DUPLICATES : 0;

		free(ours_roundtrip(cases[i], strlen(cases[i]), flags, 0, e1, sizeof e1));
		free(jansson_roundtrip(cases[i], strlen(cases[i]), flags, 0, e2, sizeof e2));
		if (strcmp(e1, e2))
			fail_msg("error for %s:\n jval:    %s\n jansson: %s", cases[i], e1, e2);
	}
}

/* ---- generated documents ----------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

struct text {
	char p[65536];
	size_t n;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->n + n < sizeof t->p) {
		memcpy(t->p + t->n, s, n);
		t->n += n;
	}
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static void gen_ws(struct text *t)
{
	static const char ws[] = " \t\n\r";

	while (rnd(4) == 0)
		put(t, ws + rnd(4), 1);
}

static void gen_string(struct text *t)
{
	static const char *const bits[] = {
		"a", "Z", "0", " ", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041", "\\u00e9",
		"\\u20AC", "\\uD83D\\uDE00", "\\ud800", "\\udc00", "\\u0000", "\\u001f", "\xc3\xa9", "\xe2\x82\xac",
		"\xf0\x9f\x98\x80", "\x7f", "\x01", "\xff", "\xc3", "\\x", "\\u12", "key", "\xed\xa0\x80",
	};
	int n = (int)rnd(8);

	put(t, "\"", 1);
	while (n--) {
		unsigned k = rnd(100);
		/* mostly valid: the rare bad pieces come last in the table */
		puts_(t, bits[k < 90 ? k % 24 : 24 + k % 7]);
	}
	put(t, "\"", 1);
}

static void gen_number(struct text *t)
{
	static const char *const forms[] = {
		"0", "-0", "7", "-42", "123456789", "9223372036854775807", "-9223372036854775808", "1.5", "-0.25",
		"1e10", "2E-3", "6.02e+23", "1e308", "5e-324", "0.1", "3.0", "99999999999999999999", "1e400", "01",
		"1.", "-", ".5",
	};
	unsigned k = rnd(100);

	puts_(t, forms[k < 94 ? k % 18 : 18 + k % 4]);
}

static void gen_value(struct text *t, int depth)
{
	unsigned k = rnd(depth > 5 ? 6 : 10);

	gen_ws(t);
	switch (k) {
	case 0: case 1: gen_string(t); break;
	case 2: case 3: gen_number(t); break;
	case 4: puts_(t, rnd(20) ? (rnd(2) ? "true" : "false") : "tru"); break;
	case 5: puts_(t, "null"); break;
	case 6: case 7: {
		int n = (int)rnd(5);

		put(t, "[", 1);
		for (int i = 0; i < n; i++) {
			if (i)
				put(t, ",", 1);
			gen_value(t, depth + 1);
		}
		gen_ws(t);
		put(t, "]", 1);
		break;
	}
	default: {
		int n = (int)rnd(5);

		put(t, "{", 1);
		for (int i = 0; i < n; i++) {
			if (i)
				put(t, ",", 1);
			gen_ws(t);
			if (rnd(4))
				gen_string(t);
			else
				puts_(t, rnd(2) ? "\"a\"" : "\"b\"");	/* duplicates */
			gen_ws(t);
			put(t, ":", 1);
			gen_value(t, depth + 1);
		}
		gen_ws(t);
		put(t, "}", 1);
		break;
	}
	}
	gen_ws(t);
}

static void test_generated(void **state)
{
	static struct text t;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		t.n = 0;
		if (rnd(2))
			gen_value(&t, 5);	/* any value, often an array or object */
		else {
			put(&t, "[", 1);
			gen_value(&t, 0);
			put(&t, "]", 1);
		}
		compare_text(t.p, t.n);
		/* the same text with a few bytes changed, dropped or added */
		for (int m = 0; m < 4 && t.n; m++) {
			static const char bytes[] = "{}[],:\"\\ 0-e.atfn\xff\x01\0";
			size_t at = rnd((unsigned)t.n);

			switch (rnd(3)) {
			case 0: t.p[at] = bytes[rnd(sizeof bytes - 1)]; break;
			case 1: memmove(t.p + at, t.p + at + 1, t.n - at - 1); t.n--; break;
			default:
				if (t.n + 1 < sizeof t.p) {
					memmove(t.p + at + 1, t.p + at, t.n - at);
					t.p[at] = bytes[rnd(sizeof bytes - 1)];
					t.n++;
				}
			}
			compare_text(t.p, t.n);
		}
	}
}

static void test_deep(void **state)
{
	static char deep[8192];
	size_t n;

	(void)state;
	for (size_t levels = 2040; levels <= 2056; levels += 8) {
		n = 0;
		for (size_t i = 0; i < levels; i++)
			deep[n++] = '[';
		for (size_t i = 0; i < levels; i++)
			deep[n++] = ']';
		compare_text(deep, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack),
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_scalars_and_counts),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_error_texts),
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_deep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
