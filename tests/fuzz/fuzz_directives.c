/* fuzz_directives.c — libFuzzer target for gbatch's script side: the
 * "# GFLOW" directive reader, applying each directive as gbatch would, and
 * the --param-file CSV reader. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch_ctx ctx = { .now = 1700000000, .cwd = "/tmp", .conda_env = NULL, .env = NULL };
	struct batch_directive *d = NULL;
	struct sweep_dim dim;
	struct batch_opts o;
	struct gf_err e;
	char *text = malloc(size + 1);
	size_t n = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	batch_opts_init(&o);
	if (batch_read_directives(text, "fuzz.sh", &d, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++)
			if (batch_apply(&o, d[i].id, d[i].val, d[i].flag, &ctx, &e))
				break;
		batch_directives_free(d, n);
	}
	batch_opts_free(&o);
	memset(&dim, 0, sizeof dim);
	if (sweep_param_csv(text, "fuzz.csv", &dim, &e) == 0) {
		for (size_t i = 0; i < dim.nkeys; i++)
			free(dim.keys[i]);
		for (size_t i = 0; i < dim.nkeys * dim.nrows; i++)
			free(dim.vals[i]);
		free(dim.keys);
		free(dim.vals);
	}
	free(text);
	return 0;
}
