/* test_bytes.c — byte strings in JSON (string or {"base64"}), UTF-8
 * checks, the display escape, and the execve size limits. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bytes.h"
#include "execlimit.h"

#define S(lit) lit, sizeof lit - 1

static void utf8_validity(void **state)
{
	(void)state;
	assert_true(gf_utf8_valid(S("")));
	assert_true(gf_utf8_valid(S("plain ascii")));
	assert_true(gf_utf8_valid(S("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")));
	assert_true(gf_utf8_valid(S("a\0b")));			/* U+0000 is UTF-8 */
	assert_false(gf_utf8_valid(S("\xff\xfe")));
	assert_false(gf_utf8_valid(S("\xe9t\xe9")));		/* Latin-1 */
	assert_false(gf_utf8_valid(S("\xc0\x80")));		/* overlong NUL */
	assert_false(gf_utf8_valid(S("\xe0\x80\xaf")));		/* overlong '/' */
	assert_false(gf_utf8_valid(S("\xed\xa0\x80")));		/* surrogate */
	assert_false(gf_utf8_valid(S("\xf4\x90\x80\x80")));	/* past U+10FFFF */
	assert_false(gf_utf8_valid(S("\xe2\x82")));		/* cut short */
	assert_false(gf_utf8_valid(S("\x80")));			/* lone continuation */
	assert_true(gf_text_printable(S("train-\xc3\xa9t\xc3\xa9")));
	assert_false(gf_text_printable(S("a\tb")));
	assert_false(gf_text_printable(S("a\x7f")));
	assert_false(gf_text_printable(S("a\xc2\x9b" "2J")));	/* C1 CSI */
	assert_false(gf_text_printable(S("\xff")));
}

/* Encode, dump to text, parse, decode: the same bytes come back. */
static void round_trip(const char *s, size_t n, int want_string)
{
	json_t *v = gf_bytes_json(s, n), *wrap = json_pack("{s:O}", "v", v), *back;
	char *text = json_dumps(wrap, JSON_COMPACT), *out;
	size_t len;
	struct gf_err e;

	assert_non_null(text);
	assert_int_equal(json_is_string(v), want_string);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	assert_int_equal(gf_bytes_from_json(json_object_get(back, "v"), "v", &out, &len, &e), 0);
	assert_int_equal(len, n);
	assert_memory_equal(out, s, n);
	assert_int_equal(out[n], '\0');
	free(out);
	free(text);
	json_decref(back);
	json_decref(wrap);
	json_decref(v);
}

static void json_forms(void **state)
{
	unsigned char all[256];
	json_t *v;

	(void)state;
	round_trip(S(""), 1);
	round_trip(S("second"), 1);
	round_trip(S("[%s]\\n \xc3\xa9"), 1);
	round_trip(S("\xff\xfe"), 0);
	round_trip(S("\xe9t\xe9"), 0);
	round_trip(S("a\0b"), 0);
	round_trip(S("x"), 1);
	round_trip(S("\xff"), 0);
	round_trip(S("\xff\xff"), 0);
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (size_t n = 0; n <= sizeof all; n += 37)
		round_trip((const char *)all + 256 - n, n, n == 0);
	/* the documented spelling */
	v = gf_bytes_json(S("\xff\xfe"));
	assert_string_equal(json_string_value(json_object_get(v, "base64")), "//4=");
	json_decref(v);
	v = gf_cstr_json("FOO=\xe9t\xe9");
	assert_string_equal(json_string_value(json_object_get(v, "base64")), "Rk9PPel06Q==");
	json_decref(v);
}

static void assert_refused(const char *text, const char *word)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
	struct gf_err e;
	char *out = (char *)1;
	size_t n;

	assert_non_null(v);
	assert_int_equal(gf_bytes_from_json(v, "'command' item 1", &out, &n, &e), -1);
	if (!strstr(e.msg, word))
		fail_msg("'%s' not in '%s'", word, e.msg);
	assert_non_null(strstr(e.msg, "'command' item 1"));
	json_decref(v);
}

static void bad_forms_refused(void **state)
{
	json_t *v;
	struct gf_err e;

	(void)state;
	assert_refused("5", "must be a string");
	assert_refused("null", "must be a string");
	assert_refused("[\"a\"]", "must be a string");
	assert_refused("{}", "must be a string");
	assert_refused("{\"base64\": 5}", "must be a string");
	assert_refused("{\"b64\": \"YQ==\"}", "must be a string");
	assert_refused("{\"base64\": \"YQ==\", \"x\": 1}", "must be a string");
	assert_refused("{\"base64\": \"YQ\"}", "base64");	/* no padding */
	assert_refused("{\"base64\": \"Y Q==\"}", "base64");
	assert_refused("{\"base64\": \"YQ=a\"}", "base64");
	assert_refused("{\"base64\": \"=QQQ\"}", "base64");
	assert_refused("{\"base64\": \"YR==\"}", "base64");	/* non-zero dropped bits */
	assert_refused("{\"base64\": \"Y===\"}", "base64");
	/* a NUL is bytes, not a C string */
	v = json_pack("{s:s}", "base64", "YQBi");
	assert_null(gf_cstr_from_json(v, "'cwd'", &e));
	assert_non_null(strstr(e.msg, "'cwd' contains a NUL byte"));
	json_decref(v);
	/* either form decodes, also base64 of plain text */
	v = json_pack("{s:s}", "base64", "dHJ1ZQ==");
	{
		char *s = gf_cstr_from_json(v, "x", &e);

		assert_string_equal(s, "true");
		free(s);
	}
	json_decref(v);
}

static void esc(const char *s, size_t n, int flags, const char *want)
{
	char buf[256];
	size_t len = gf_escape(buf, sizeof buf, s, n, flags);

	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want));
}

static void escaping(void **state)
{
	char small[8], again[256], once[256];

	(void)state;
	esc(S("plain text"), 0, "plain text");
	esc(S("\x1b]0;X\x07\x1b[2J"), 0, "\\e]0;X\\a\\e[2J");
	esc(S("\xff\xfe"), 0, "\\xff\\xfe");
	esc(S("\xe9t\xe9"), 0, "\\xe9t\\xe9");
	esc(S("\xc3\xa9t\xc3\xa9"), 0, "\xc3\xa9t\xc3\xa9");
	esc(S("a\xc2\x9b" "2J"), 0, "a\\xc2\\x9b2J");
	esc(S("del\x7f"), 0, "del\\x7f");
	esc(S("t\tn\nr\rv\vf\fb\b"), 0, "t\\tn\\nr\\rv\\vf\\fb\\b");
	esc(S("nul\0x\x01"), 0, "nul\\x00x\\x01");
	esc(S("back\\slash 'q'"), 0, "back\\slash 'q'");
	esc(S("back\\slash 'q'"), GF_ESC_SHELL, "back\\\\slash \\'q\\'");
	esc(S("\xed\xa0\x80"), 0, "\\xed\\xa0\\x80");
	/* a short buffer holds whole escapes only; the length is the whole */
	assert_int_equal(gf_escape(small, sizeof small, S("ab\x1b\x1b\x1b"), 0), 8);
	assert_string_equal(small, "ab\\e\\e");
	assert_int_equal(gf_escape(small, 4, S("\xff\xfe"), 0), 8);
	assert_string_equal(small, "");
	assert_int_equal(gf_escape(small, sizeof small, S("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), 0), 8);
	assert_string_equal(small, "\xc3\xa9\xc3\xa9\xc3\xa9");
	assert_int_equal(gf_escape(NULL, 0, S("\x1b"), 0), 2);
	/* idempotent without GF_ESC_SHELL */
	gf_escape(once, sizeof once, S("x\x1b\xff\\e"), 0);
	gf_escape(again, sizeof again, once, strlen(once), 0);
	assert_string_equal(once, again);
	assert_true(gf_needs_escape(S("\x1b")));
	assert_false(gf_needs_escape(S("fine \xc3\xa9")));
}

static void exec_limits(void **state)
{
	struct gf_execsize x = { 0 };
	struct gf_err e;
	char *big = malloc(GF_MAX_ARG_STRLEN + 8);

	(void)state;
	memset(big, 'a', GF_MAX_ARG_STRLEN + 7);
	big[GF_MAX_ARG_STRLEN - 1] = '\0';	/* 131071 bytes + NUL: fits */
	assert_int_equal(gf_execsize_arg(&x, "true", 0, &e), 0);
	assert_int_equal(gf_execsize_arg(&x, big, 1, &e), 0);
	big[GF_MAX_ARG_STRLEN - 1] = 'a';
	big[GF_MAX_ARG_STRLEN] = '\0';
	assert_int_equal(gf_execsize_arg(&x, big, 2, &e), -1);
	assert_non_null(strstr(e.msg, "argument 2 ('aaaaaaaaaaaaaaaaaaaaaaaa...') is 131072 bytes"));
	assert_non_null(strstr(e.msg, "MAX_ARG_STRLEN"));
	memcpy(big, "BIG\x1b=", 5);
	assert_int_equal(gf_execsize_env(&x, big, &e), -1);
	assert_non_null(strstr(e.msg, "environment variable BIG\\e is 131072 bytes"));
	assert_int_equal(x.nargs, 2);
	assert_int_equal(x.nenv, 0);
	assert_int_equal(x.bytes, 5 + 8 + GF_MAX_ARG_STRLEN + 8);
	assert_int_equal(gf_execsize_env(&x, "A=b", &e), 0);
	/* the total: strings, pointers, two NULL pointers and the reserve */
	assert_int_equal(gf_execsize_check(&x, (long)(x.bytes + 16 + GF_EXEC_RESERVE), &e), 0);
	assert_int_equal(gf_execsize_check(&x, (long)(x.bytes + 15 + GF_EXEC_RESERVE), &e), -1);
	assert_non_null(strstr(e.msg, "ARG_MAX"));
	assert_non_null(strstr(e.msg, "2 words"));
	assert_true(gf_arg_max() >= 131072 && gf_arg_max() <= 6L * 1024 * 1024);
	free(big);
}

/* fs/exec.c: a quarter of the stack limit, at most 6 MiB, at least 128 KiB. */
static void arg_max_of_the_stack_limit(void **state)
{
	(void)state;
	assert_int_equal(gf_arg_max_for(8ULL << 20), 2L << 20);
	assert_int_equal(gf_arg_max_for(16ULL << 20), 4L << 20);
	assert_int_equal(gf_arg_max_for(24ULL << 20), 6L << 20);
	assert_int_equal(gf_arg_max_for(1ULL << 40), 6L << 20);
	assert_int_equal(gf_arg_max_for((unsigned long long)RLIM_INFINITY), 6L << 20);
	assert_int_equal(gf_arg_max_for(256ULL << 10), 131072);
	assert_int_equal(gf_arg_max_for(0), 131072);
	assert_int_equal(gf_arg_max_for(1000001), 250000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(utf8_validity),
		cmocka_unit_test(json_forms),
		cmocka_unit_test(bad_forms_refused),
		cmocka_unit_test(escaping),
		cmocka_unit_test(exec_limits),
		cmocka_unit_test(arg_max_of_the_stack_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
