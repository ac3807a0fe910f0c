/* jsonwvalue.c — jw_json (jsonw.h): a whole JSON value written into a
 * jsonw buffer by the value library's own dump (jansson's json_dump_callback
 * in the daemon, jval's in the client). Apart from jsonw.c because it
 * stands above the values while jval.c's writer stands on jsonw.c's
 * scalars: together they would call each other. */
#include "jsonw.h"

static int to_jw(const char *buf, size_t size, void *data)
{
	jw_raw(data, buf, size);
	return 0;
}

void jw_json(struct jsonw *w, const json_t *v, size_t flags)
{
	json_dump_callback(v, to_jw, w, flags | JSON_ENCODE_ANY);
}
