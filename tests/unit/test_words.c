/* test_words.c — a command string cut into argv words without a shell. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "words.h"

static void expect(const char *s, const char *const *want, size_t nwant)
{
	struct gf_err e;
	char **w;
	size_t n;

	assert_int_equal(gf_split_words(s, &w, &n, &e), 0);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(w[i], want[i]);
	assert_null(w[n]);
	gf_words_free(w);
}

static void refused(const char *s, const char *part)
{
	struct gf_err e;
	char **w;
	size_t n;

	assert_int_equal(gf_split_words(s, &w, &n, &e), -1);
	assert_non_null(strstr(e.msg, "invalid command"));
	assert_non_null(strstr(e.msg, part));
}

static void test_split(void **state)
{
	(void)state;
	expect("python train.py --lr 0.1", (const char *[]){ "python", "train.py", "--lr", "0.1" }, 4);
	expect("  a\t b  ", (const char *[]){ "a", "b" }, 2);
	expect("echo 'a b' \"c d\" e\\ f", (const char *[]){ "echo", "a b", "c d", "e f" }, 4);
	expect("x'y'\"z\"", (const char *[]){ "xyz" }, 1);
	expect("echo '' \"\"", (const char *[]){ "echo", "", "" }, 3);
	/* nothing is expanded; quoted metacharacters are plain text */
	expect("echo $HOME $GFLOW_ARRAY_TASK_ID {lr} *.txt ~",
	       (const char *[]){ "echo", "$HOME", "$GFLOW_ARRAY_TASK_ID", "{lr}", "*.txt", "~" }, 6);
	expect("echo 'a|b' \"c>d\" e\\;f", (const char *[]){ "echo", "a|b", "c>d", "e;f" }, 4);
	expect("echo \"q\\\"q \\\\ \\$x \\n\"", (const char *[]){ "echo", "q\"q \\ $x \\n" }, 2);
	expect("echo 'it''s'", (const char *[]){ "echo", "its" }, 2);
}

static void test_refuse(void **state)
{
	(void)state;
	refused("python a.py > out.txt", "'>' needs a shell");
	refused("a | b", "'|'");
	refused("a && b", "'&'");
	refused("a; b", "';'");
	refused("echo `id`", "'`'");
	refused("echo $(id)", "'('");
	refused("echo 'open", "quote is not closed");
	refused("echo \"open", "quote is not closed");
	refused("echo a\\", "lone backslash");
	refused("", "holds no word");
	refused("   ", "holds no word");
	refused("a\nb", "'\\n'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_refuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
