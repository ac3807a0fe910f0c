/* fuzz_api.c — libFuzzer target for the API's request decoding: a POST
 * /jobs body through the daemon's own JSON reading and validation (every
 * field of every job spec), against an empty daemon that stores nothing. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct server s;	/* no store, no jobs, no GPUs */
	static int ready;
	struct gf_err e;

	if (!ready) {
		gf_config_defaults(&s.cfg);
		s.mem_total_mb = 64 * 1024;
		ready = 1;
	}
	api_check_request(&s, 1000, (const char *)data, size, &e);
	return 0;
}
