/* jval_oracle.c — jansson's side of test_jval.c: jval_script.h built
 * against jansson itself. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "jval_oracle.h"
#include "utf8.h"

#define SIDE(name) oracle_##name
#include "jval_script.h"

char *jansson_pack(int k, size_t flags) { return oracle_pack(k, flags); }
char *jansson_ops(int k, size_t flags) { return oracle_ops(k, flags); }
char *jansson_numbers(size_t flags) { return oracle_numbers(flags); }
/* jansson's message, its quoted token cut to whole UTF-8 characters: it
 * may quote the first byte of one, which jval leaves out (its messages are
 * text). */
static void whole_chars(char *text)
{
	char *q = strstr(text, " near '"), *end;

	if (!q || !(end = strrchr(q + 7, '\'')))
		return;
	q += 7;
	memmove(q + gf_utf8_prefix(q, (size_t)(end - q)), end, strlen(end) + 1);
}

char *jansson_roundtrip(const char *in, size_t n, size_t lflags, size_t dflags, char *err, size_t size)
{
	char *out = oracle_roundtrip(in, n, lflags, dflags, err, size);

	if (!out)
		whole_chars(err);
	return out;
}

int jansson_comparable(const char *in, size_t n)
{
	int in_str = 0;

	for (size_t i = 0; i < n; i++) {
		if (in_str && in[i] == '\\')
			i++;
		else if (in[i] == '"')
			in_str = !in_str;
		else if (!in[i] && !in_str)
			return 0;
	}
	return 1;
}
