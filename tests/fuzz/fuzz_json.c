/* fuzz_json.c — libFuzzer target for jval (src/common/jval.c), the
 * client's JSON reader and writer: each input is read by jval and by
 * jansson (tests/unit/jval_oracle.c) with every load flag, and written
 * back with every dump flag; both must refuse it with the same words or
 * write the same bytes (but for a NUL outside a string, which jval always
 * refuses: jval_oracle.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jval.h"
#include "jval_oracle.h"

#define SIDE(name) ours_##name
#include "jval_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t load[] = { 0, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY };
	static const size_t dump[] = { 0, JSON_COMPACT, JSON_INDENT(2) };
	const char *in = (const char *)data;
	char e1[256], e2[256];

	if (!jansson_comparable(in, size)) {
		for (size_t l = 0; l < sizeof load / sizeof load[0]; l++)
			if (ours_roundtrip(in, size, load[l], 0, e1, sizeof e1))
				abort();	/* a NUL outside a string: refused */
		return 0;
	}
	for (size_t l = 0; l < sizeof load / sizeof load[0]; l++)
		for (size_t d = 0; d < sizeof dump / sizeof dump[0]; d++) {
			char *a = ours_roundtrip(in, size, load[l], dump[d], e1, sizeof e1);
			char *b = jansson_roundtrip(in, size, load[l], dump[d], e2, sizeof e2);

			if (!a != !b || (a && strcmp(a, b)) || (!a && strcmp(e1, e2))) {
				fprintf(stderr, "jval and jansson differ (load %#zx, dump %#zx):\n jval:    %s\n jansson: %s\n",
				    load[l], dump[d], a ? a : e1, b ? b : e2);
				abort();
			}
			free(a);
			free(b);
		}
	return 0;
}
