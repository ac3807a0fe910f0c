/* fuzz_toml.c — libFuzzer target for src/common/toml.c: parses each input,
 * walks the whole tree checking the documented invariants, and frees it.
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined
 *        -Isrc/common src/common/toml.c src/common/err.c
 *        tests/fuzz/fuzz_toml.c -lm -o fuzz_toml
 * Run:   mkdir -p /tmp/toml-corpus &&
 *        ./fuzz_toml -max_total_time=60 /tmp/toml-corpus tests/fuzz/toml-corpus
 *        (libFuzzer writes new inputs into the first directory, so keep
 *        the seeds in the tree second.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

/* Abort (a finding for the fuzzer) unless cond holds. */
#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

static void walk(const struct toml_value *v, int depth)
{
	size_t i, n;

	CHECK(v != NULL);
	CHECK(depth <= TOML_MAX_DEPTH + 1);
	CHECK(toml_line(v) >= 1 && toml_col(v) >= 1);
	switch (toml_type(v)) {
	case TOML_TABLE:
		n = toml_table_len(v);
		for (i = 0; i < n; i++) {
			const char *k = toml_table_key(v, i);
			size_t klen = toml_table_key_len(v, i);

			CHECK(k != NULL && k[klen] == '\0');
			CHECK(toml_table_key_line(v, i) >= 1 && toml_table_key_col(v, i) >= 1);
			/* Lookup by name finds the same node (keys without NUL). */
			if (strlen(k) == klen)
				CHECK(toml_table_get(v, k) == toml_table_at(v, i));
			walk(toml_table_at(v, i), depth + 1);
		}
		CHECK(toml_table_at(v, n) == NULL);
		break;
	case TOML_ARRAY:
		n = toml_array_len(v);
		for (i = 0; i < n; i++)
			walk(toml_array_at(v, i), depth + 1);
		CHECK(toml_array_at(v, n) == NULL);
		break;
	case TOML_STRING:
	case TOML_DATETIME:
		CHECK(toml_string(v) != NULL);
		CHECK(toml_string(v)[toml_string_len(v)] == '\0');
		break;
	case TOML_INTEGER:
		(void)toml_integer(v);
		break;
	case TOML_FLOAT:
		(void)toml_float(v);
		break;
	case TOML_BOOLEAN:
		CHECK(toml_boolean(v) == 0 || toml_boolean(v) == 1);
		break;
	default:
		CHECK(0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gf_err e = { "" };
	struct toml_value *root = toml_parse((const char *)data, size, &e);

	if (!root) {
		/* Every failure says where: "line L, column C: ..." */
		CHECK(!strncmp(e.msg, "line ", 5) || !strncmp(e.msg, "document is too large", 21));
		CHECK(strstr(e.msg, ", column ") != NULL || e.msg[0] == 'd');
		return 0;
	}
	CHECK(toml_type(root) == TOML_TABLE);
	walk(root, 0);
	toml_free(root);
	return 0;
}
