/* test_client_mcp.c — the JSON Schema checks of gflow mcp (mcp_check) and
 * the tools' own schemas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mcp.h"

static int check(const char *schema, const char *value, char *msg, size_t size)
{
	json_t *s = json_loads(schema, 0, NULL), *v = json_loads(value, JSON_DECODE_ANY, NULL);
	struct gf_err e = { "" };
	int rc;

	assert_non_null(s);
	assert_non_null(v);
	rc = mcp_check(s, v, "", &e);
	snprintf(msg, size, "%s", e.msg);
	json_decref(s);
	json_decref(v);
	return rc;
}

#define OBJ "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":[\"integer\",\"string\"]}," \
	"\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9},\"mode\":{\"enum\":[\"all\",\"any\"]}," \
	"\"list\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"object\",\"properties\":" \
	"{\"cmd\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"cmd\"]}}}," \
	"\"required\":[\"id\"],\"additionalProperties\":false}"

static void test_check(void **state)
{
	char msg[512];

	(void)state;
	assert_int_equal(check(OBJ, "{\"id\":1}", msg, sizeof msg), 0);
	assert_int_equal(check(OBJ, "{\"id\":\"@\",\"n\":9,\"mode\":\"any\",\"list\":[{\"cmd\":[\"a\"]}]}", msg,
			       sizeof msg), 0);
	assert_int_equal(check(OBJ, "[]", msg, sizeof msg), -1);
	assert_string_equal(msg, "arguments must be an object, not an array");
	assert_int_equal(check(OBJ, "{}", msg, sizeof msg), -1);
	assert_string_equal(msg, "id is required");
	assert_int_equal(check(OBJ, "{\"id\":1.5}", msg, sizeof msg), -1);
	assert_string_equal(msg, "id must be an integer or string, not a number");
	assert_int_equal(check(OBJ, "{\"id\":1,\"n\":0}", msg, sizeof msg), -1);
	assert_string_equal(msg, "n must be at least 1");
	assert_int_equal(check(OBJ, "{\"id\":1,\"n\":10}", msg, sizeof msg), -1);
	assert_string_equal(msg, "n must be at most 9");
	assert_int_equal(check(OBJ, "{\"id\":1,\"mode\":\"some\"}", msg, sizeof msg), -1);
	assert_string_equal(msg, "mode must be one of [\"all\",\"any\"]");
	assert_int_equal(check(OBJ, "{\"id\":1,\"list\":[]}", msg, sizeof msg), -1);
	assert_string_equal(msg, "list needs at least 1 item");
	assert_int_equal(check(OBJ, "{\"id\":1,\"list\":[{\"cmd\":[\"a\",2]}]}", msg, sizeof msg), -1);
	assert_string_equal(msg, "list[0].cmd[1] must be a string, not an integer");
	assert_int_equal(check(OBJ, "{\"id\":1,\"list\":[{}]}", msg, sizeof msg), -1);
	assert_string_equal(msg, "list[0].cmd is required");
	assert_int_equal(check(OBJ, "{\"id\":1,\"extra\":true}", msg, sizeof msg), -1);
	assert_string_equal(msg, "unknown argument 'extra'");
}

/* Is text an object schema that lists what it requires among its
 * properties? */
static void object_schema(const char *tool, const char *text)
{
	json_error_t err;
	json_t *s = text ? json_loads(text, 0, &err) : NULL, *r;
	size_t k;

	if (!s)
		fail_msg("%s: %s", tool, text ? err.text : "no schema");
	assert_string_equal(json_string_value(json_object_get(s, "type")), "object");
	json_array_foreach(json_object_get(s, "required"), k, r)
		if (!json_object_get(json_object_get(s, "properties"), json_string_value(r)))
			fail_msg("%s: '%s' is required but not a property", tool, json_string_value(r));
	json_decref(s);
}

/* Every tool has an input and an output schema that parse, are object
 * schemas, and list what they require among their properties; no output
 * schema is for a tool that does not exist. */
static void test_tool_schemas(void **state)
{
	(void)state;
	assert_int_equal(mcp_ntools, 19);
	for (size_t i = 0; i < mcp_ntools; i++) {
		object_schema(mcp_tools[i].name, mcp_tools[i].schema);
		object_schema(mcp_tools[i].name, mcp_output_schema(mcp_tools[i].name));
		assert_true(!mcp_tools[i].destructive || !mcp_tools[i].read_only);
	}
	assert_null(mcp_output_schema("no_such_tool"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_tool_schemas),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
