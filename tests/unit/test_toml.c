/* test_toml.c — unit tests for src/common/toml.c: every TOML 1.0 form the
 * reader accepts, the tree it builds (types, values, document order, line
 * and column), and every class of error with its position and wording. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

/* Assert msg contains part, printing both when it does not. */
#define assert_msg_has(msg, part) do { \
	if (!strstr((msg), (part))) \
		fail_msg("message \"%s\" lacks \"%s\"", (msg), (part)); \
} while (0)

static struct toml_value *parse_len(const char *text, size_t len)
{
	struct gf_err e = { "" };
	struct toml_value *t = toml_parse(text, len, &e);

	if (!t)
		fail_msg("rejected: %s\n--- input ---\n%.*s", e.msg, (int)len, text);
	assert_int_equal(toml_type(t), TOML_TABLE);
	return t;
}

static struct toml_value *parse(const char *text)
{
	return parse_len(text, strlen(text));
}

/* text must fail with a message starting "line L, column C:" (where) and
 * containing words. */
static void bad_len(const char *text, size_t len, const char *where, const char *words)
{
	struct gf_err e = { "" };
	struct toml_value *t = toml_parse(text, len, &e);
	char prefix[64];

	if (t) {
		toml_free(t);
		fail_msg("accepted: %.*s", (int)len, text);
	}
	snprintf(prefix, sizeof prefix, "%s: ", where);
	if (strncmp(e.msg, prefix, strlen(prefix)))
		fail_msg("message \"%s\" does not start with \"%s\"", e.msg, prefix);
	assert_msg_has(e.msg, words);
}

static void bad(const char *text, const char *where, const char *words)
{
	bad_len(text, strlen(text), where, words);
}

/* Follow a dotted path of plain keys ("a.b.c") from t. */
static const struct toml_value *get(const struct toml_value *t, const char *path)
{
	char buf[256], *part, *save = NULL;

	snprintf(buf, sizeof buf, "%s", path);
	for (part = strtok_r(buf, ".", &save); part && t; part = strtok_r(NULL, ".", &save))
		t = toml_table_get(t, part);
	if (!t)
		fail_msg("no value at %s", path);
	return t;
}

static const char *str_at(const struct toml_value *t, const char *path)
{
	const struct toml_value *v = get(t, path);

	assert_int_equal(toml_type(v), TOML_STRING);
	return toml_string(v);
}

static int64_t int_at(const struct toml_value *t, const char *path)
{
	const struct toml_value *v = get(t, path);

	assert_int_equal(toml_type(v), TOML_INTEGER);
	return toml_integer(v);
}

static double float_at(const struct toml_value *t, const char *path)
{
	const struct toml_value *v = get(t, path);

	assert_int_equal(toml_type(v), TOML_FLOAT);
	return toml_float(v);
}

static void assert_pos(const struct toml_value *v, int line, int col)
{
	if (toml_line(v) != line || toml_col(v) != col)
		fail_msg("at line %d, column %d; want line %d, column %d", toml_line(v), toml_col(v), line,
		    col);
}

/* ---------- documents, comments, keys ---------- */

static void test_empty_document(void **state)
{
	struct toml_value *t;

	(void)state;
	t = parse("");
	assert_int_equal(toml_table_len(t), 0);
	toml_free(t);
	t = parse("\n\n   \n\t\n# only a comment\n");
	assert_int_equal(toml_table_len(t), 0);
	toml_free(t);
}

static void test_comments(void **state)
{
	struct toml_value *t = parse("# full line\n"
				     "a = 1 # after a value\n"
				     "  # indented, with \xc3\xa9 and a\ttab\n"
				     "b = \"# not a comment\"#tight\n"
				     "[t] # after a header\n"
				     "c = [ # in an array\n 1, # one\n]\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 1);
	assert_string_equal(str_at(t, "b"), "# not a comment");
	assert_int_equal(toml_array_len(get(t, "t.c")), 1);
	toml_free(t);
}

static void test_bare_and_quoted_keys(void **state)
{
	struct toml_value *t = parse("bare_key-1 = 1\n"
				     "1234 = 2\n"
				     "\"127.0.0.1\" = 3\n"
				     "\"character encoding\" = 4\n"
				     "'quoted \"value\"' = 5\n"
				     "\"\xca\x8e\" = 6\n"
				     "\"\" = 7\n"
				     "\"esc\\tkey\" = 8\n");

	(void)state;
	assert_int_equal(toml_integer(toml_table_get(t, "bare_key-1")), 1);
	assert_int_equal(toml_integer(toml_table_get(t, "1234")), 2);
	assert_int_equal(toml_integer(toml_table_get(t, "127.0.0.1")), 3);
	assert_int_equal(toml_integer(toml_table_get(t, "character encoding")), 4);
	assert_int_equal(toml_integer(toml_table_get(t, "quoted \"value\"")), 5);
	assert_int_equal(toml_integer(toml_table_get(t, "\xca\x8e")), 6);
	assert_int_equal(toml_integer(toml_table_get(t, "")), 7);
	assert_int_equal(toml_integer(toml_table_get(t, "esc\tkey")), 8);
	assert_null(toml_table_get(t, "missing"));
	toml_free(t);
}

static void test_dotted_keys(void **state)
{
	struct toml_value *t = parse("name = \"Orange\"\n"
				     "physical.color = \"orange\"\n"
				     "physical . shape\t=  \"round\"\n"
				     "site.\"google.com\" = true\n"
				     "3.14159 = \"pi\"\n");
	const struct toml_value *site;

	(void)state;
	assert_string_equal(str_at(t, "physical.color"), "orange");
	assert_string_equal(str_at(t, "physical.shape"), "round");
	site = toml_table_get(t, "site");
	assert_int_equal(toml_type(site), TOML_TABLE);
	assert_int_equal(toml_type(toml_table_get(site, "google.com")), TOML_BOOLEAN);
	assert_true(toml_boolean(toml_table_get(site, "google.com")));
	assert_string_equal(str_at(t, "3.14159"), "pi");
	toml_free(t);
}

static void test_key_with_nul(void **state)
{
	static const char doc[] = "\"a\\u0000b\" = 1\n";
	struct toml_value *t = parse(doc);

	(void)state;
	assert_int_equal(toml_table_len(t), 1);
	assert_int_equal(toml_table_key_len(t, 0), 3);
	assert_memory_equal(toml_table_key(t, 0), "a\0b", 4);
	assert_null(toml_table_get(t, "a"));
	toml_free(t);
}

/* ---------- tables ---------- */

static void test_tables(void **state)
{
	struct toml_value *t = parse("top = 0\n"
				     "[table-1]\nkey1 = \"some string\"\nkey2 = 123\n"
				     "[table-2]\nkey1 = \"another string\"\n"
				     "[dog.\"tater.man\"]\ntype.name = \"pug\"\n"
				     "[ j . \"k\" . 'l' ]\nx = 1\n");
	const struct toml_value *dog;

	(void)state;
	assert_int_equal(int_at(t, "top"), 0);
	assert_string_equal(str_at(t, "table-1.key1"), "some string");
	assert_int_equal(int_at(t, "table-1.key2"), 123);
	assert_string_equal(str_at(t, "table-2.key1"), "another string");
	dog = toml_table_get(get(t, "dog"), "tater.man");
	assert_non_null(dog);
	assert_string_equal(str_at(dog, "type.name"), "pug");
	assert_int_equal(int_at(t, "j.k.l.x"), 1);
	toml_free(t);
}

static void test_nested_and_implicit_tables(void **state)
{
	struct toml_value *t = parse("[x.y.z.w]\na = 1\n[x]\nb = 2\n[x.y.other]\nc = 3\n");

	(void)state;
	assert_int_equal(int_at(t, "x.y.z.w.a"), 1);
	assert_int_equal(int_at(t, "x.b"), 2);
	assert_int_equal(int_at(t, "x.y.other.c"), 3);
	toml_free(t);
}

static void test_subtable_of_dotted_table(void **state)
{
	struct toml_value *t = parse("[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n"
				     "[fruit.apple.texture]\nsmooth = true\n");

	(void)state;
	assert_string_equal(str_at(t, "fruit.apple.color"), "red");
	assert_true(toml_boolean(get(t, "fruit.apple.taste.sweet")));
	assert_true(toml_boolean(get(t, "fruit.apple.texture.smooth")));
	toml_free(t);
}

static void test_dotted_keys_into_implicit_table(void **state)
{
	struct toml_value *t = parse("[a.b.c]\n[a]\nb.d = 1\n");

	(void)state;
	assert_int_equal(int_at(t, "a.b.d"), 1);
	assert_int_equal(toml_type(get(t, "a.b.c")), TOML_TABLE);
	toml_free(t);
}

static void test_inline_tables(void **state)
{
	struct toml_value *t = parse("name = { first = \"Tom\", last = \"Preston-Werner\" }\n"
				     "point = {x=1,y=2}\n"
				     "animal = { type.name = \"pug\", type.age = 3 }\n"
				     "empty = {}\n"
				     "nested = { a = { b = { c = 1 } }, d = [ { e = 2 } ] }\n");
	const struct toml_value *d;

	(void)state;
	assert_string_equal(str_at(t, "name.first"), "Tom");
	assert_string_equal(str_at(t, "name.last"), "Preston-Werner");
	assert_int_equal(int_at(t, "point.y"), 2);
	assert_string_equal(str_at(t, "animal.type.name"), "pug");
	assert_int_equal(int_at(t, "animal.type.age"), 3);
	assert_int_equal(toml_table_len(get(t, "empty")), 0);
	assert_int_equal(int_at(t, "nested.a.b.c"), 1);
	d = get(t, "nested.d");
	assert_int_equal(toml_array_len(d), 1);
	assert_int_equal(int_at(toml_array_at(d, 0), "e"), 2);
	toml_free(t);
}

static void test_array_of_tables(void **state)
{
	struct toml_value *t = parse("[[products]]\nname = \"Hammer\"\nsku = 738594937\n\n"
				     "[[products]]  # empty\n\n"
				     "[[products]]\nname = \"Nail\"\n");
	const struct toml_value *p;

	(void)state;
	p = get(t, "products");
	assert_int_equal(toml_type(p), TOML_ARRAY);
	assert_int_equal(toml_array_len(p), 3);
	assert_string_equal(str_at(toml_array_at(p, 0), "name"), "Hammer");
	assert_int_equal(toml_table_len(toml_array_at(p, 1)), 0);
	assert_string_equal(str_at(toml_array_at(p, 2), "name"), "Nail");
	toml_free(t);
}

static void test_nested_array_of_tables(void **state)
{
	struct toml_value *t = parse("[[fruits]]\nname = \"apple\"\n"
				     "[fruits.physical]\ncolor = \"red\"\n"
				     "[[fruits.varieties]]\nname = \"red delicious\"\n"
				     "[[fruits.varieties]]\nname = \"granny smith\"\n"
				     "[[fruits]]\nname = \"banana\"\n"
				     "[[fruits.varieties]]\nname = \"plantain\"\n");
	const struct toml_value *f, *apple, *banana;

	(void)state;
	f = get(t, "fruits");
	assert_int_equal(toml_array_len(f), 2);
	apple = toml_array_at(f, 0);
	banana = toml_array_at(f, 1);
	assert_string_equal(str_at(apple, "physical.color"), "red");
	assert_int_equal(toml_array_len(get(apple, "varieties")), 2);
	assert_string_equal(str_at(toml_array_at(get(apple, "varieties"), 1), "name"), "granny smith");
	assert_int_equal(toml_array_len(get(banana, "varieties")), 1);
	assert_string_equal(str_at(toml_array_at(get(banana, "varieties"), 0), "name"), "plantain");
	toml_free(t);
}

static void test_document_order(void **state)
{
	static const char *const want[] = { "zeta", "alpha", "mid", "b", "a" };
	struct toml_value *t = parse("zeta = 1\nalpha = 2\nmid.x = 3\n[b]\n[a]\n");
	size_t i, n = 40;
	char doc[2048], key[16];
	int len = 0;

	(void)state;
	assert_int_equal(toml_table_len(t), 5);
	for (i = 0; i < 5; i++)
		assert_string_equal(toml_table_key(t, i), want[i]);
	assert_null(toml_table_key(t, 5));
	assert_null(toml_table_at(t, 5));
	toml_free(t);

	/* Order and lookup still hold once a table is big enough to be hashed. */
	for (i = 0; i < n; i++)
		len += snprintf(doc + len, sizeof doc - (size_t)len, "k%zu = %zu\n", (n - i) * 7 % 101, i);
	t = parse(doc);
	assert_int_equal(toml_table_len(t), n);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof key, "k%zu", (n - i) * 7 % 101);
		assert_string_equal(toml_table_key(t, i), key);
		assert_ptr_equal(toml_table_get(t, key), toml_table_at(t, i));
		assert_int_equal(toml_integer(toml_table_at(t, i)), (int64_t)i);
	}
	toml_free(t);
}

/* ---------- strings ---------- */

static void test_basic_string_escapes(void **state)
{
	struct toml_value *t = parse("b = \"\\b\"\nt = \"\\t\"\nn = \"\\n\"\nf = \"\\f\"\nr = \"\\r\"\n"
				     "q = \"\\\"\"\nbs = \"\\\\\"\n"
				     "u = \"Jos\\u00E9\"\n"
				     "u3 = \"\\u20AC\"\n"
				     "U = \"\\U0001F600\"\n"
				     "U1 = \"\\U00000041\"\n"
				     "mix = \"I'm a string. \\\"You can quote me\\\". Tab\\there.\"\n"
				     "raw = \"caf\xc3\xa9 \xe2\x9c\x93\ttab\"\n");

	(void)state;
	assert_string_equal(str_at(t, "b"), "\b");
	assert_string_equal(str_at(t, "t"), "\t");
	assert_string_equal(str_at(t, "n"), "\n");
	assert_string_equal(str_at(t, "f"), "\f");
	assert_string_equal(str_at(t, "r"), "\r");
	assert_string_equal(str_at(t, "q"), "\"");
	assert_string_equal(str_at(t, "bs"), "\\");
	assert_string_equal(str_at(t, "u"), "Jos\xc3\xa9");
	assert_string_equal(str_at(t, "u3"), "\xe2\x82\xac");
	assert_string_equal(str_at(t, "U"), "\xf0\x9f\x98\x80");
	assert_string_equal(str_at(t, "U1"), "A");
	assert_string_equal(str_at(t, "mix"), "I'm a string. \"You can quote me\". Tab\there.");
	assert_string_equal(str_at(t, "raw"), "caf\xc3\xa9 \xe2\x9c\x93\ttab");
	toml_free(t);
}

static void test_string_with_nul(void **state)
{
	struct toml_value *t = parse("s = \"a\\u0000b\"\n");
	const struct toml_value *s = get(t, "s");

	(void)state;
	assert_int_equal(toml_string_len(s), 3);
	assert_memory_equal(toml_string(s), "a\0b", 4);
	toml_free(t);
}

static void test_literal_strings(void **state)
{
	struct toml_value *t = parse("winpath = 'C:\\Users\\nodejs\\templates'\n"
				     "winpath2 = '\\\\ServerX\\admin$\\system32\\'\n"
				     "quoted = 'Tom \"Dubs\" Preston-Werner'\n"
				     "regex = '<\\i\\c*\\s*>'\n"
				     "empty = ''\n");

	(void)state;
	assert_string_equal(str_at(t, "winpath"), "C:\\Users\\nodejs\\templates");
	assert_string_equal(str_at(t, "winpath2"), "\\\\ServerX\\admin$\\system32\\");
	assert_string_equal(str_at(t, "quoted"), "Tom \"Dubs\" Preston-Werner");
	assert_string_equal(str_at(t, "regex"), "<\\i\\c*\\s*>");
	assert_string_equal(str_at(t, "empty"), "");
	toml_free(t);
}

static void test_multiline_basic(void **state)
{
	struct toml_value *t = parse("s1 = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n"
				     "s2 = \"\"\"\nThe quick brown \\\n\n\n  fox jumps over \\\n    the lazy dog.\"\"\"\n"
				     "s3 = \"\"\"\\\n       The quick brown \\\n       fox.\\\n       \"\"\"\n"
				     "s4 = \"\"\"two quotes: \"\". three: \"\"\\\".\"\"\"\n"
				     "s5 = \"\"\"\"This,\" she said.\"\"\"\"\n"
				     "s6 = \"\"\"two at the end\"\"\"\"\"\n"
				     "s7 = \"\"\"tab\tand \\u00e9 escape\"\"\"\n"
				     "s8 = \"\"\"trailing blanks \\   \n  gone\"\"\"\n"
				     "s9 = \"\"\"\"\"\"\n");

	(void)state;
	assert_string_equal(str_at(t, "s1"), "Roses are red\nViolets are blue");
	assert_string_equal(str_at(t, "s2"), "The quick brown fox jumps over the lazy dog.");
	assert_string_equal(str_at(t, "s3"), "The quick brown fox.");
	assert_string_equal(str_at(t, "s4"), "two quotes: \"\". three: \"\"\".");
	assert_string_equal(str_at(t, "s5"), "\"This,\" she said.\"");
	assert_string_equal(str_at(t, "s6"), "two at the end\"\"");
	assert_string_equal(str_at(t, "s7"), "tab\tand \xc3\xa9 escape");
	assert_string_equal(str_at(t, "s8"), "trailing blanks gone");
	assert_string_equal(str_at(t, "s9"), "");
	toml_free(t);
}

static void test_multiline_crlf(void **state)
{
	struct toml_value *t = parse("a = \"\"\"\r\none\r\ntwo\"\"\"\r\nb = \"\"\"x \\\r\n  y\"\"\"\r\n"
				     "c = '''\r\nlit\r\n'''\r\n");

	(void)state;
	assert_string_equal(str_at(t, "a"), "one\ntwo");
	assert_string_equal(str_at(t, "b"), "x y");
	assert_string_equal(str_at(t, "c"), "lit\n");
	toml_free(t);
}

static void test_multiline_literal(void **state)
{
	struct toml_value *t = parse("regex2 = '''I [dw]on't need \\d{2} apples'''\n"
				     "lines = '''\nThe first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved.\n'''\n"
				     "quot15 = '''fifteen: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"'''\n"
				     "apos = ''''That,' she said, 'is still pointless.''''\n"
				     "bs = '''no \\\n escapes'''\n");

	(void)state;
	assert_string_equal(str_at(t, "regex2"), "I [dw]on't need \\d{2} apples");
	assert_string_equal(str_at(t, "lines"),
	    "The first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved.\n");
	assert_string_equal(str_at(t, "quot15"), "fifteen: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"");
	assert_string_equal(str_at(t, "apos"), "'That,' she said, 'is still pointless.'");
	assert_string_equal(str_at(t, "bs"), "no \\\n escapes");
	toml_free(t);
}

/* ---------- numbers, booleans, dates ---------- */

static void test_decimal_integers(void **state)
{
	struct toml_value *t = parse("a = +99\nb = 42\nc = 0\nd = -17\ne = 1_000\nf = 5_349_221\n"
				     "g = 1_2_3_4_5\nh = +0\ni = -0\n"
				     "max = 9223372036854775807\nmin = -9223372036854775808\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 99);
	assert_int_equal(int_at(t, "b"), 42);
	assert_int_equal(int_at(t, "c"), 0);
	assert_int_equal(int_at(t, "d"), -17);
	assert_int_equal(int_at(t, "e"), 1000);
	assert_int_equal(int_at(t, "f"), 5349221);
	assert_int_equal(int_at(t, "g"), 12345);
	assert_int_equal(int_at(t, "h"), 0);
	assert_int_equal(int_at(t, "i"), 0);
	assert_true(int_at(t, "max") == INT64_MAX);
	assert_true(int_at(t, "min") == INT64_MIN);
	toml_free(t);
}

static void test_hex_integers(void **state)
{
	struct toml_value *t = parse("a = 0xDEADBEEF\nb = 0xdeadbeef\nc = 0xdead_beef\nd = 0x00ff\n"
				     "max = 0x7FFFFFFFFFFFFFFF\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 0xDEADBEEF);
	assert_int_equal(int_at(t, "b"), 0xDEADBEEF);
	assert_int_equal(int_at(t, "c"), 0xDEADBEEF);
	assert_int_equal(int_at(t, "d"), 255);
	assert_true(int_at(t, "max") == INT64_MAX);
	toml_free(t);
}

static void test_octal_integers(void **state)
{
	struct toml_value *t = parse("a = 0o01234567\nb = 0o755\nc = 0o7_7\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 01234567);
	assert_int_equal(int_at(t, "b"), 0755);
	assert_int_equal(int_at(t, "c"), 077);
	toml_free(t);
}

static void test_binary_integers(void **state)
{
	struct toml_value *t = parse("a = 0b11010110\nb = 0b0\nc = 0b1_0\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 214);
	assert_int_equal(int_at(t, "b"), 0);
	assert_int_equal(int_at(t, "c"), 2);
	toml_free(t);
}

static void test_floats(void **state)
{
	struct toml_value *t = parse("f1 = +1.0\nf2 = 3.1415\nf3 = -0.01\nf4 = 5e+22\nf5 = 1e06\n"
				     "f6 = -2E-2\nf7 = 6.626e-34\nf8 = 224_617.445_991_228\nf9 = 0.0\n"
				     "f10 = 1e1_0\nf11 = -0.0\n");

	(void)state;
	assert_true(float_at(t, "f1") == 1.0);
	assert_true(float_at(t, "f2") == 3.1415);
	assert_true(float_at(t, "f3") == -0.01);
	assert_true(float_at(t, "f4") == 5e22);
	assert_true(float_at(t, "f5") == 1e6);
	assert_true(float_at(t, "f6") == -2e-2);
	assert_true(float_at(t, "f7") == 6.626e-34);
	assert_true(float_at(t, "f8") == 224617.445991228);
	assert_true(float_at(t, "f9") == 0.0);
	assert_true(float_at(t, "f10") == 1e10);
	assert_true(float_at(t, "f11") == 0.0 && signbit(float_at(t, "f11")));
	toml_free(t);
}

static void test_float_inf_nan(void **state)
{
	struct toml_value *t = parse("a = inf\nb = +inf\nc = -inf\nd = nan\ne = +nan\nf = -nan\n");

	(void)state;
	assert_true(isinf(float_at(t, "a")) && float_at(t, "a") > 0);
	assert_true(isinf(float_at(t, "b")) && float_at(t, "b") > 0);
	assert_true(isinf(float_at(t, "c")) && float_at(t, "c") < 0);
	assert_true(isnan(float_at(t, "d")));
	assert_true(isnan(float_at(t, "e")));
	assert_true(isnan(float_at(t, "f")));
	toml_free(t);
}

static void test_booleans(void **state)
{
	struct toml_value *t = parse("yes = true\nno = false\narr = [true,false]\n");

	(void)state;
	assert_int_equal(toml_type(get(t, "yes")), TOML_BOOLEAN);
	assert_int_equal(toml_boolean(get(t, "yes")), 1);
	assert_int_equal(toml_boolean(get(t, "no")), 0);
	assert_int_equal(toml_boolean(toml_array_at(get(t, "arr"), 0)), 1);
	toml_free(t);
}

static void test_datetimes(void **state)
{
	static const char *const keys[] = { "odt1", "odt2", "odt3", "odt4", "ldt1", "ldt2", "ld", "lt1",
		"lt2", "leap", "lower" };
	static const char *const want[] = { "1979-05-27T07:32:00Z", "1979-05-27T00:32:00-07:00",
		"1979-05-27T00:32:00.999999-07:00", "1979-05-27 07:32:00Z", "1979-05-27T07:32:00",
		"1979-05-27T00:32:00.999999", "1979-05-27", "07:32:00", "00:32:00.999999", "2000-02-29",
		"1979-05-27t07:32:00z" };
	struct toml_value *t = parse("odt1 = 1979-05-27T07:32:00Z\n"
				     "odt2 = 1979-05-27T00:32:00-07:00\n"
				     "odt3 = 1979-05-27T00:32:00.999999-07:00\n"
				     "odt4 = 1979-05-27 07:32:00Z\n"
				     "ldt1 = 1979-05-27T07:32:00\n"
				     "ldt2 = 1979-05-27T00:32:00.999999\n"
				     "ld = 1979-05-27 # a date, then a comment\n"
				     "lt1 = 07:32:00\n"
				     "lt2 = 00:32:00.999999\n"
				     "leap = 2000-02-29\n"
				     "lower = 1979-05-27t07:32:00z\n");
	size_t i;

	(void)state;
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct toml_value *v = get(t, keys[i]);

		assert_int_equal(toml_type(v), TOML_DATETIME);
		assert_string_equal(toml_string(v), want[i]);
	}
	toml_free(t);
}

/* ---------- arrays ---------- */

static void test_arrays(void **state)
{
	struct toml_value *t = parse("ints = [ 1, 2, 3 ]\n"
				     "empty = []\n"
				     "nested = [ [ 1, 2 ], [\"a\", \"b\", \"c\"] ]\n"
				     "strs = [ \"all\", 'strings', \"\"\"are\"\"\", '''same''' ]\n"
				     "mixed = [ 0.1, 1, \"x\", true, 1979-05-27, { a = 1 } ]\n"
				     "multi = [\n  1,\n  2, # this is ok\n]\n"
				     "trail = [1,2,]\n"
				     "comments = [ # c\n # more\n ]\n");
	const struct toml_value *m;

	(void)state;
	assert_int_equal(toml_array_len(get(t, "ints")), 3);
	assert_int_equal(toml_integer(toml_array_at(get(t, "ints"), 2)), 3);
	assert_null(toml_array_at(get(t, "ints"), 3));
	assert_int_equal(toml_array_len(get(t, "empty")), 0);
	assert_int_equal(toml_array_len(toml_array_at(get(t, "nested"), 1)), 3);
	assert_string_equal(toml_string(toml_array_at(get(t, "strs"), 3)), "same");
	m = get(t, "mixed");
	assert_int_equal(toml_array_len(m), 6);
	assert_int_equal(toml_type(toml_array_at(m, 0)), TOML_FLOAT);
	assert_int_equal(toml_type(toml_array_at(m, 1)), TOML_INTEGER);
	assert_int_equal(toml_type(toml_array_at(m, 2)), TOML_STRING);
	assert_int_equal(toml_type(toml_array_at(m, 3)), TOML_BOOLEAN);
	assert_int_equal(toml_type(toml_array_at(m, 4)), TOML_DATETIME);
	assert_int_equal(toml_type(toml_array_at(m, 5)), TOML_TABLE);
	assert_int_equal(toml_array_len(get(t, "multi")), 2);
	assert_int_equal(toml_array_len(get(t, "trail")), 2);
	assert_int_equal(toml_array_len(get(t, "comments")), 0);
	toml_free(t);
}

/* ---------- positions, line endings, accessors ---------- */

static void test_positions(void **state)
{
	struct toml_value *t = parse("# c\n"
				     "port = 59000\n"
				     "\n"
				     "[daemon]\n"
				     "  host  =  \"x\"\n"
				     "\"\xc3\xa9t\xc3\xa9\" = [1,\n    2]\n"
				     "a.b = { c = true }\n");
	const struct toml_value *d = get(t, "daemon"), *arr;

	(void)state;
	assert_int_equal(toml_table_key_line(t, 0), 2);
	assert_int_equal(toml_table_key_col(t, 0), 1);
	assert_pos(get(t, "port"), 2, 8);
	assert_pos(d, 4, 2);
	assert_int_equal(toml_table_key_line(d, 0), 5);
	assert_int_equal(toml_table_key_col(d, 0), 3);
	assert_pos(get(d, "host"), 5, 12);
	/* Columns count characters, not bytes: "été" is 5 columns wide. */
	arr = toml_table_get(d, "\xc3\xa9t\xc3\xa9");
	assert_pos(arr, 6, 9);
	assert_pos(toml_array_at(arr, 1), 7, 5);
	assert_pos(get(d, "a"), 8, 1);
	assert_pos(get(d, "a.b"), 8, 7);	/* a value sits where it is written */
	assert_pos(get(d, "a.b.c"), 8, 13);
	toml_free(t);
}

static void test_crlf_and_bom(void **state)
{
	struct toml_value *t = parse("\xef\xbb\xbf" "a = 1\r\n# c\r\n[t]\r\nb = 'x'\r\n");

	(void)state;
	assert_int_equal(int_at(t, "a"), 1);
	assert_string_equal(str_at(t, "t.b"), "x");
	assert_pos(get(t, "t.b"), 4, 5);
	toml_free(t);
}

static void test_no_final_newline(void **state)
{
	struct toml_value *t = parse("a = 1");

	(void)state;
	assert_int_equal(int_at(t, "a"), 1);
	toml_free(t);
}

static void test_accessors_on_wrong_types(void **state)
{
	struct toml_value *t = parse("s = \"x\"\ni = 5\n");

	(void)state;
	assert_null(toml_string(get(t, "i")));
	assert_int_equal(toml_integer(get(t, "s")), 0);
	assert_int_equal(toml_table_len(get(t, "s")), 0);
	assert_int_equal(toml_array_len(get(t, "s")), 0);
	assert_null(toml_table_get(get(t, "i"), "x"));
	assert_string_equal(toml_type_name(TOML_DATETIME), "date-time");
	assert_string_equal(toml_type_name(TOML_INTEGER), "integer");
	toml_free(NULL);
	toml_free(t);
}

/* ---------- errors: keys and tables ---------- */

static void test_err_duplicate_key(void **state)
{
	(void)state;
	bad("a = 1\nport = 1\nport = 2\n", "line 3, column 1", "duplicate key 'port'");
	bad("spelling = 1\n\"spelling\" = 2\n", "line 2, column 1", "duplicate key '\"spelling\"'");
	bad("a.b = 1\na.b = 2\n", "line 2, column 3", "duplicate key 'a.b'");
	bad("a = {x = 1, x = 2}\n", "line 1, column 13", "duplicate key 'x'");
	bad("[product]\ntype.name = \"Nail\"\ntype = { edible = false }\n", "line 3, column 1",
	    "duplicate key 'type'");
}

static void test_err_table_defined_twice(void **state)
{
	(void)state;
	bad("[fruit]\napple = 1\n[fruit]\norange = 2\n", "line 3, column 2", "table [fruit] is defined twice");
	bad("[a]\n[a.b]\n[a.b]\n", "line 3, column 4", "table [a.b] is defined twice");
	bad("[a.b.c]\n[a]\nb.x = 1\n[a.b]\n", "line 4, column 4", "already defined by dotted keys");
}

static void test_err_table_over_dotted_keys(void **state)
{
	(void)state;
	bad("[fruit]\napple.color = \"red\"\n[fruit.apple]\n", "line 3, column 8",
	    "table [fruit.apple] is already defined by dotted keys");
	bad("[fruit]\napple.taste.sweet = true\n[fruit.apple.taste]\n", "line 3, column 14",
	    "table [fruit.apple.taste] is already defined by dotted keys");
}

static void test_err_dotted_keys_into_header_table(void **state)
{
	(void)state;
	bad("[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n", "line 4, column 3",
	    "cannot add keys to table 'b.c' with dotted keys");
}

static void test_err_table_over_value(void **state)
{
	(void)state;
	bad("[fruit]\napple = \"red\"\n[fruit.apple]\n", "line 3, column 8",
	    "cannot define table [fruit.apple]: the key already holds a string");
	bad("a = 1\n[a.b]\n", "line 2, column 2", "cannot use 'a' as a table: it is already an integer");
	bad("fruit.apple = 1\nfruit.apple.smooth = true\n", "line 2, column 7",
	    "cannot add keys to 'fruit.apple': it is already an integer");
}

static void test_err_extend_inline_table(void **state)
{
	(void)state;
	bad("[product]\ntype = { name = \"Nail\" }\ntype.edible = false\n", "line 3, column 1",
	    "cannot add keys to inline table 'type' after it is closed");
	bad("a = { b = 1 }\n[a.c]\n", "line 2, column 2", "cannot add to inline table 'a' after it is closed");
	bad("a = { b = 1 }\n[a]\n", "line 2, column 2", "table [a] is already defined as an inline table");
	bad("a = { b = { c = 1 }, b.d = 2 }\n", "line 1, column 22",
	    "cannot add keys to inline table 'b' after it is closed");
}

static void test_err_append_static_array(void **state)
{
	(void)state;
	bad("fruits = []\n[[fruits]]\n", "line 2, column 3", "cannot append to static array 'fruits' with [[fruits]]");
	bad("a = [{b=1}]\n[[a]]\n", "line 2, column 3", "cannot append to static array 'a'");
	bad("a = [{b=1}]\n[a.c]\n", "line 2, column 2", "cannot use 'a' as a table: it is already an array");
}

static void test_err_table_vs_array_of_tables(void **state)
{
	(void)state;
	bad("[[a]]\n[a]\n", "line 2, column 2", "cannot define table [a]: it is an array of tables");
	bad("[fruit.physical]\n[[fruit]]\n", "line 2, column 3",
	    "cannot define array of tables [[fruit]]: the key already holds a table");
	bad("[[fruits]]\n[[fruits.varieties]]\n[fruits.varieties]\n", "line 3, column 9",
	    "cannot define table [fruits.varieties]: it is an array of tables");
}

static void test_err_key_syntax(void **state)
{
	(void)state;
	bad("= 1\n", "line 1, column 1", "expected a key, found '='");
	bad("a = 1\nb\n", "line 2, column 2", "expected '=' after key 'b', found end of line");
	bad("a b = 1\n", "line 1, column 3", "expected '=' after key 'a', found 'b'");
	bad("a. = 1\n", "line 1, column 4", "expected a key, found '='");
	bad("\"\"\"k\"\"\" = 1\n", "line 1, column 1", "a key cannot be a multi-line string");
	bad("\"a\n\" = 1\n", "line 1, column 3", "newline in a single-line string");
}

static void test_err_header_syntax(void **state)
{
	(void)state;
	bad("[a\n", "line 1, column 3", "expected ']' to close the table header, found end of line");
	bad("[[a]\n", "line 1, column 4", "expected ']]' to close the table header, found ']'");
	bad("[ [a]]\n", "line 1, column 3", "expected a key, found '['");
	bad("[]\n", "line 1, column 2", "expected a key, found ']'");
	bad("[a] b = 1\n", "line 1, column 5", "expected a newline after a table header, found 'b'");
}

static void test_err_missing_newline(void **state)
{
	(void)state;
	bad("first = \"Tom\" last = \"Preston-Werner\"\n", "line 1, column 15",
	    "expected a newline after a key/value pair, found 'l'");
	bad("a = 1 2\n", "line 1, column 7", "expected a newline after a key/value pair, found '2'");
	bad("a = [1] ]\n", "line 1, column 9", "expected a newline after a key/value pair, found ']'");
}

static void test_err_missing_value(void **state)
{
	(void)state;
	bad("key = # nothing\n", "line 1, column 7", "expected a value, found '#'");
	bad("key =\n", "line 1, column 6", "expected a value, found end of line");
	bad("key = ", "line 1, column 7", "expected a value, found end of input");
	bad("b = True\n", "line 1, column 5", "invalid value 'True' (strings need quotes)");
	bad("b = hello\n", "line 1, column 5", "invalid value 'hello'");
}

/* ---------- errors: strings ---------- */

static void test_err_invalid_escape(void **state)
{
	(void)state;
	bad("s = \"a\\q\"\n", "line 1, column 7", "invalid escape '\\q'");
	bad("s = \"\\x41\"\n", "line 1, column 6", "invalid escape '\\x'");
	bad("s = \"\\e\"\n", "line 1, column 6", "invalid escape '\\e'");
	bad("s = \"\\ \"\n", "line 1, column 6", "invalid escape: backslash followed by ' '");
	bad("s = \"\"\"a\\ b\"\"\"\n", "line 1, column 9", "invalid escape: backslash followed by ' '");
	bad("s = \"\\u00\"\n", "line 1, column 6", "\\u needs 4 hex digits");
	bad("s = \"\\U0000004\"\n", "line 1, column 6", "\\U needs 8 hex digits");
}

static void test_err_escape_not_scalar(void **state)
{
	(void)state;
	bad("s = \"\\uD800\"\n", "line 1, column 6", "U+D800 is not a Unicode scalar value");
	bad("s = \"\\uDFFF\"\n", "line 1, column 6", "U+DFFF is not a Unicode scalar value");
	bad("s = \"\\U00110000\"\n", "line 1, column 6", "U+110000 is not a Unicode scalar value");
}

static void test_err_control_characters(void **state)
{
	(void)state;
	bad("s = \"a\x01\"\n", "line 1, column 7", "control character U+0001 in a string");
	bad("s = 'a\x7f'\n", "line 1, column 7", "control character U+007F in a string");
	bad("s = '''a\x1b'''\n", "line 1, column 9", "control character U+001B in a string");
	bad("s = \"\"\"a\rb\"\"\"\n", "line 1, column 9", "control character U+000D in a string");
	bad("# bell \x07\n", "line 1, column 8", "control character U+0007 in a comment");
	bad_len("a = 1 # nul \0\n", 14, "line 1, column 13", "control character U+0000 in a comment");
	bad_len("s = \"a\0\"\n", 9, "line 1, column 7", "control character U+0000 in a string");
}

static void test_err_unterminated_strings(void **state)
{
	(void)state;
	bad("s = \"abc", "line 1, column 5", "unterminated string");
	bad("x = 1\ns = \"\"\"abc\n\ndef", "line 2, column 5", "unterminated string");
	bad("s = '''abc''", "line 1, column 5", "unterminated string");
	bad("s = 'lit\neral'\n", "line 1, column 9", "newline in a single-line string");
	bad("s = \"\"\"a\"\"\"\"\"\"\n", "line 1, column 12", "more than two quotes in a row");
}

static void test_err_invalid_utf8(void **state)
{
	(void)state;
	bad("s = \"\xff\"\n", "line 1, column 6", "invalid UTF-8 byte 0xFF");
	bad("# ok\ns = \"\xc3\"\n", "line 2, column 6", "invalid UTF-8 byte 0xC3");
	bad("s = \"\xc0\x80\"\n", "line 1, column 6", "invalid UTF-8 byte 0xC0");	/* overlong */
	bad("s = \"\xed\xa0\x80\"\n", "line 1, column 6", "invalid UTF-8 byte 0xED");	/* surrogate */
	bad("s = \"\xf4\x90\x80\x80\"\n", "line 1, column 6", "invalid UTF-8 byte 0xF4"); /* > U+10FFFF */
	bad("\xc3\xa9\xc3\xa9 = \"\x80\"\n", "line 1, column 7", "invalid UTF-8 byte 0x80");
}

static void test_err_lone_carriage_return(void **state)
{
	(void)state;
	bad("a = 1\rb = 2\n", "line 1, column 6", "found a carriage return without a line feed");
	bad("\r", "line 1, column 1", "expected a key, found a carriage return without a line feed");
}

/* ---------- errors: numbers, dates ---------- */

static void test_err_integers(void **state)
{
	(void)state;
	bad("i = 01\n", "line 1, column 5", "invalid integer '01': leading zeros are not allowed");
	bad("i = -0_1\n", "line 1, column 5", "leading zeros are not allowed");
	bad("i = 1__2\n", "line 1, column 5", "'_' must sit between digits");
	bad("i = 1_\n", "line 1, column 5", "'_' must sit between digits");
	bad("i = _1\n", "line 1, column 5", "invalid value '_1'");
	bad("i = 0x_1\n", "line 1, column 5", "'_' must sit between digits");
	bad("i = +0x1\n", "line 1, column 5", "no sign allowed with 0x, 0o or 0b");
	bad("i = 0X1\n", "line 1, column 5", "invalid number '0X1'");
	bad("i = 0xG\n", "line 1, column 5", "bad digit for base 16");
	bad("i = 0o8\n", "line 1, column 5", "bad digit for base 8");
	bad("i = 0b102\n", "line 1, column 5", "bad digit for base 2");
	bad("i = 0x\n", "line 1, column 5", "bad digit for base 16");
	bad("i = 12a\n", "line 1, column 5", "invalid number '12a'");
}

static void test_err_integer_overflow(void **state)
{
	(void)state;
	bad("i = 9223372036854775808\n", "line 1, column 5", "integer '9223372036854775808' does not fit in 64 bits");
	bad("i = -9223372036854775809\n", "line 1, column 5", "does not fit in 64 bits");
	bad("i = 0x8000000000000000\n", "line 1, column 5", "does not fit in 64 bits");
	bad("i = 0o1000000000000000000000\n", "line 1, column 5", "does not fit in 64 bits");
	bad("i = 99999999999999999999999999\n", "line 1, column 5", "does not fit in 64 bits");
}

static void test_err_floats(void **state)
{
	(void)state;
	bad("f = .7\n", "line 1, column 5", "invalid value '.7'");
	bad("f = 7.\n", "line 1, column 5", "invalid float '7.': expected digits after the decimal point");
	bad("f = 3.e+20\n", "line 1, column 5", "expected digits after the decimal point");
	bad("f = 03.14\n", "line 1, column 5", "invalid float '03.14': leading zeros are not allowed");
	bad("f = 1e\n", "line 1, column 5", "expected digits in the exponent");
	bad("f = 1.5_\n", "line 1, column 5", "'_' must sit between digits");
	bad("f = 1e_5\n", "line 1, column 5", "'_' must sit between digits");
	bad("f = 1.2.3\n", "line 1, column 5", "invalid number '1.2.3'");
	bad("f = infinity\n", "line 1, column 5", "invalid value 'infinity'");
	bad("f = -infx\n", "line 1, column 5", "invalid value '-infx'");
	bad("f = 1e400\n", "line 1, column 5", "float '1e400' is out of range");
}

static void test_err_datetimes(void **state)
{
	(void)state;
	bad("d = 1979-02-30\n", "line 1, column 5", "invalid date '1979-02-30': no such day");
	bad("d = 1900-02-29\n", "line 1, column 5", "no such day");
	bad("d = 1979-13-01\n", "line 1, column 5", "no such day");
	bad("d = 1979-5-27\n", "line 1, column 5", "expected YYYY-MM-DD");
	bad("d = 1979-05-27T25:00:00\n", "line 1, column 5", "hour, minute or second out of range");
	bad("d = 1979-05-27T07:32\n", "line 1, column 5", "expected HH:MM:SS after the date");
	bad("d = 1979-05-27T07:32:00.\n", "line 1, column 5", "expected HH:MM:SS after the date");
	bad("d = 1979-05-27T07:32:00+7:00\n", "line 1, column 5", "expected Z or an offset like +08:00");
	bad("d = 1979-05-27T07:32:00+24:00\n", "line 1, column 5", "offset out of range");
	bad("d = 1979-05-27X07:32:00\n", "line 1, column 5", "expected 'T' or a space after the date");
	bad("t = 07:32\n", "line 1, column 5", "invalid time '07:32': expected HH:MM:SS[.fraction]");
	bad("t = 07:60:00\n", "line 1, column 5", "out of range");
	bad("t = 07:32:00Z\n", "line 1, column 5", "invalid time '07:32:00Z'");
}

/* ---------- errors: arrays and inline tables ---------- */

static void test_err_arrays(void **state)
{
	(void)state;
	bad("a = [1,,2]\n", "line 1, column 8", "expected a value, found ','");
	bad("a = [,]\n", "line 1, column 6", "expected a value, found ','");
	bad("a = [1 2]\n", "line 1, column 8", "expected ',' or ']' in an array, found '2'");
	bad("a = [1,\n2\n", "line 3, column 1", "expected ',' or ']' in an array, found end of input");
	bad("a = [1, # c \x01\n]\n", "line 1, column 13", "control character U+0001 in a comment");
}

static void test_err_inline_tables(void **state)
{
	(void)state;
	bad("a = { b = 1, }\n", "line 1, column 14", "trailing comma in an inline table");
	bad("a = { b = 1\n}\n", "line 1, column 12", "newline in an inline table");
	bad("a = {\nb = 1 }\n", "line 1, column 6", "newline in an inline table");
	bad("a = { b = 1 c = 2 }\n", "line 1, column 13", "expected ',' or '}' in an inline table, found 'c'");
	bad("a = { b = 1", "line 1, column 12", "expected ',' or '}' in an inline table, found end of input");
}

/* ---------- errors: limits ---------- */

static void test_err_depth_limit(void **state)
{
	char doc[1024];
	int i, n = 0;
	struct toml_value *t;

	(void)state;
	/* 64 levels are fine... */
	n = snprintf(doc, sizeof doc, "a = ");
	for (i = 0; i < 63; i++)
		doc[n++] = '[';
	for (i = 0; i < 63; i++)
		doc[n++] = ']';
	doc[n] = '\0';
	t = parse(doc);
	toml_free(t);
	/* ...65 are not. */
	n = snprintf(doc, sizeof doc, "a = ");
	for (i = 0; i < 65; i++)
		doc[n++] = '[';
	for (i = 0; i < 65; i++)
		doc[n++] = ']';
	doc[n] = '\0';
	bad(doc, "line 1, column 69", "nested deeper than 64 levels");
	n = snprintf(doc, sizeof doc, "a = ");
	for (i = 0; i < 70; i++)
		n += snprintf(doc + n, sizeof doc - (size_t)n, "{b=");
	doc[n] = '\0';
	bad(doc, "line 1, column 197", "nested deeper than 64 levels");
	/* Headers and dotted keys count too. */
	n = snprintf(doc, sizeof doc, "[a");
	for (i = 1; i < 60; i++)
		n += snprintf(doc + n, sizeof doc - (size_t)n, ".a");
	n += snprintf(doc + n, sizeof doc - (size_t)n, "]\nb.b.b.b.b.b = 1\n");
	bad(doc, "line 2, column 9", "nested deeper than 64 levels");
	n = 0;
	for (i = 0; i < 65; i++)
		n += snprintf(doc + n, sizeof doc - (size_t)n, "k.");
	n += snprintf(doc + n, sizeof doc - (size_t)n, "k = 1\n");
	bad(doc, "line 1, column 129", "key has more than 64 dotted parts");
}

static void test_err_size_limit(void **state)
{
	size_t len = TOML_MAX_SIZE + 1;
	char *doc = malloc(len);
	struct gf_err e = { "" };

	(void)state;
	assert_non_null(doc);
	memset(doc, '\n', len);
	assert_null(toml_parse(doc, len, &e));
	assert_msg_has(e.msg, "document is too large: 4194305 bytes, the limit is 4194304");
	/* Exactly at the limit is fine. */
	toml_free(parse_len(doc, TOML_MAX_SIZE));
	free(doc);
}

/* ---------- errors: input that stops short ---------- */

static void test_err_end_of_input(void **state)
{
	(void)state;
	bad("a=\"\\", "line 1, column 4", "invalid escape: backslash followed by end of input");
	bad("a=\"\\u12", "line 1, column 4", "\\u needs 4 hex digits");
	bad("a=\"\"\"\\", "line 1, column 6", "invalid escape: backslash followed by end of input");
	bad("a=\"\"\"\\  ", "line 1, column 6", "invalid escape: backslash followed by ' '");
	bad("a='''", "line 1, column 3", "unterminated string");
	bad("[a.", "line 1, column 4", "expected a key, found end of input");
	bad("a=[", "line 1, column 4", "expected a value, found end of input");
	bad("a={", "line 1, column 4", "expected a key, found end of input");
	bad("a=-", "line 1, column 3", "invalid value '-'");
	bad("a=+", "line 1, column 3", "invalid value '+'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_document),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_bare_and_quoted_keys),
		cmocka_unit_test(test_dotted_keys),
		cmocka_unit_test(test_key_with_nul),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_nested_and_implicit_tables),
		cmocka_unit_test(test_subtable_of_dotted_table),
		cmocka_unit_test(test_dotted_keys_into_implicit_table),
		cmocka_unit_test(test_inline_tables),
		cmocka_unit_test(test_array_of_tables),
		cmocka_unit_test(test_nested_array_of_tables),
		cmocka_unit_test(test_document_order),
		cmocka_unit_test(test_basic_string_escapes),
		cmocka_unit_test(test_string_with_nul),
		cmocka_unit_test(test_literal_strings),
		cmocka_unit_test(test_multiline_basic),
		cmocka_unit_test(test_multiline_crlf),
		cmocka_unit_test(test_multiline_literal),
		cmocka_unit_test(test_decimal_integers),
		cmocka_unit_test(test_hex_integers),
		cmocka_unit_test(test_octal_integers),
		cmocka_unit_test(test_binary_integers),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_float_inf_nan),
		cmocka_unit_test(test_booleans),
		cmocka_unit_test(test_datetimes),
		cmocka_unit_test(test_arrays),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_crlf_and_bom),
		cmocka_unit_test(test_no_final_newline),
		cmocka_unit_test(test_accessors_on_wrong_types),
		cmocka_unit_test(test_err_duplicate_key),
		cmocka_unit_test(test_err_table_defined_twice),
		cmocka_unit_test(test_err_table_over_dotted_keys),
		cmocka_unit_test(test_err_dotted_keys_into_header_table),
		cmocka_unit_test(test_err_table_over_value),
		cmocka_unit_test(test_err_extend_inline_table),
		cmocka_unit_test(test_err_append_static_array),
		cmocka_unit_test(test_err_table_vs_array_of_tables),
		cmocka_unit_test(test_err_key_syntax),
		cmocka_unit_test(test_err_header_syntax),
		cmocka_unit_test(test_err_missing_newline),
		cmocka_unit_test(test_err_missing_value),
		cmocka_unit_test(test_err_invalid_escape),
		cmocka_unit_test(test_err_escape_not_scalar),
		cmocka_unit_test(test_err_control_characters),
		cmocka_unit_test(test_err_unterminated_strings),
		cmocka_unit_test(test_err_invalid_utf8),
		cmocka_unit_test(test_err_lone_carriage_return),
		cmocka_unit_test(test_err_integers),
		cmocka_unit_test(test_err_integer_overflow),
		cmocka_unit_test(test_err_floats),
		cmocka_unit_test(test_err_datetimes),
		cmocka_unit_test(test_err_arrays),
		cmocka_unit_test(test_err_inline_tables),
		cmocka_unit_test(test_err_depth_limit),
		cmocka_unit_test(test_err_size_limit),
		cmocka_unit_test(test_err_end_of_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
