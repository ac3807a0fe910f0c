/* mcp.c — the protocol side of `gflow mcp serve` (see mcp.h): JSON-RPC 2.0
 * over stdin/stdout, one message per line; diagnostics go to stderr only.
 *
 * Requests: initialize (the client's protocol version when we speak it,
 * else our newest), ping, tools/list (with each tool's outputSchema, from
 * mcpout.c), tools/call. Notifications (no id) are
 * never answered. Errors: -32700 parse error, -32600 invalid request,
 * -32601 unknown method, -32602 invalid params (an unknown tool, arguments
 * the tool's schema refuses), -32002 a tool request before initialize. A
 * tool that runs and fails (the daemon is down, a job does not exist)
 * answers a result with isError: true and the reason as text. */
#include "mcp.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define PROG "gflow mcp"

/* Newest first. From 2025-06-18 on, a tool has an outputSchema and its
 * result a structuredContent; from 2025-11-25 on, arguments its schema
 * refuses are a tool error (isError, so the model reads why), not -32602. */
static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

static const char mcp_help[] =
"usage: gflow mcp serve\n\n"
"Serve the Model Context Protocol on stdin/stdout (JSON-RPC 2.0, one\n"
"message per line) for agent CLIs such as Claude Code, Codex or OpenCode,\n"
"which start it as a child process, e.g.:\n"
"  claude mcp add --scope user gflow -- gflow mcp serve\n"
"  codex mcp add gflow -- gflow mcp serve\n\n"
"It talks to your gflowd like every gflow command (as you, over the local\n"
"socket; gflow --socket PATH mcp serve or $GFLOW_SOCKET choose another)\n"
"and offers these tools:\n"
"  read-only:  get_health get_info list_jobs get_job get_job_log get_stats\n"
"              list_reservations get_queue_pressure triage_job get_quotas\n"
"  waits:      wait_for_job (until a job ends, at most timeout_secs)\n"
"  previews:   preview_submit_jobs preview_update_job (nothing changes)\n"
"  changes:    submit_jobs update_job redo_job cancel_job hold_job\n"
"              release_job\n"
"Protocol versions: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05. Started\n"
"by hand it waits for a client on stdin; end it with Ctrl-D.\n";

/* ---- argument checks: the subset of JSON Schema the tools use ----------- */

static bool type_is(const json_t *v, const char *t)
{
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v);
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "null"))
		return json_is_null(v);
	return false;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

int mcp_check(const json_t *schema, const json_t *v, const char *path, struct gf_err *e)
{
	const json_t *t = json_object_get(schema, "type"), *props = json_object_get(schema, "properties");
	const json_t *en = json_object_get(schema, "enum"), *x;
	const char *where = *path ? path : "arguments";
	char sub[512];
	size_t i;

	if (t) {
		bool ok = false;
		char want[128] = "";

		if (json_is_string(t)) {
			ok = type_is(v, json_string_value(t));
			snprintf(want, sizeof want, "%s", json_string_value(t));
		} else {
			json_array_foreach(t, i, x) {
				ok |= type_is(v, json_string_value(x));
				snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? " or " : "",
				    json_string_value(x));
			}
		}
		if (!ok)
			return gf_err_set(e, "%s must be %s %s, not %s", where,
			    strchr("aeiou", want[0]) ? "an" : "a", want, type_name(v));
	}
	if (json_is_array(en)) {
		bool ok = false;

		json_array_foreach(en, i, x)
			ok |= json_equal(x, (json_t *)v);
		if (!ok) {
			char *list = json_dumps(en, JSON_COMPACT);

			gf_err_set(e, "%s must be one of %s", where, list ? list : "the listed values");
			free(list);
			return -1;
		}
	}
	if (json_is_number(v)) {
		double d = json_number_value(v);

		if ((x = json_object_get(schema, "minimum")) && d < json_number_value(x))
			return gf_err_set(e, "%s must be at least %.15g", where, json_number_value(x));
		if ((x = json_object_get(schema, "maximum")) && d > json_number_value(x))
			return gf_err_set(e, "%s must be at most %.15g", where, json_number_value(x));
	}
	if (json_is_string(v) && (x = json_object_get(schema, "minLength")) &&
	    json_string_length(v) < (size_t)json_integer_value(x))
		return gf_err_set(e, "%s must not be empty", where);
	if (json_is_array(v)) {
		if ((x = json_object_get(schema, "minItems")) && json_array_size(v) < (size_t)json_integer_value(x))
			return gf_err_set(e, "%s needs at least %lld item%s", where, (long long)json_integer_value(x),
			    json_integer_value(x) == 1 ? "" : "s");
		if ((x = json_object_get(schema, "items"))) {
			json_t *it;

			json_array_foreach(v, i, it) {
				snprintf(sub, sizeof sub, "%.400s[%zu]", path, i);
				if (mcp_check(x, it, sub, e))
					return -1;
			}
		}
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *it;

		json_array_foreach(json_object_get(schema, "required"), i, x)
			if (!json_object_get(v, json_string_value(x)))
				return gf_err_set(e, "%s%s%s is required", path, *path ? "." : "",
				    json_string_value(x));
		json_object_foreach((json_t *)v, k, it) {
			const json_t *ps = json_object_get(props, k);

			snprintf(sub, sizeof sub, "%.300s%s%.200s", path, *path ? "." : "", k);
			if (!ps) {
				if (json_is_false(json_object_get(schema, "additionalProperties")))
					return gf_err_set(e, "unknown argument '%s'", sub);
				continue;
			}
			if (mcp_check(ps, it, sub, e))
				return -1;
		}
	}
	return 0;
}

/* ---- messages ------------------------------------------------------------- */

static bool initialized;
static const char *version = NULL;	/* negotiated */

/* Is the negotiated version `v` or newer? (The versions are dates.) */
static bool since(const char *v)
{
	return version && strcmp(version, v) >= 0;
}

static json_t *schema_of(const char *tool, const char *what, const char *text)
{
	json_error_t jerr;
	json_t *schema = text ? json_loads(text, 0, &jerr) : NULL;

	if (!schema) {	/* a bug in mcptools.c or mcpout.c */
		fprintf(stderr, "%s: %s of %s: %s\n", PROG, what, tool, text ? jerr.text : "missing");
		abort();
	}
	return schema;
}

static void send_msg(json_t *m)
{
	char *text = json_dumps(m, JSON_COMPACT);

	json_decref(m);
	if (!text || puts(text) == EOF || fflush(stdout) == EOF) {
		fprintf(stderr, "%s: cannot write to stdout: %s\n", PROG, strerror(errno));
		exit(EXIT_FAIL);
	}
	free(text);
}

static void send_result(json_t *id, json_t *result)
{
	send_msg(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void send_error(json_t *id, int code, const char *msg)
{
	send_msg(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
	    "code", code, "message", msg));
}

static json_t *initialize(json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));

	version = versions[0];
	for (size_t i = 0; asked && i < sizeof versions / sizeof versions[0]; i++)
		if (!strcmp(asked, versions[i]))
			version = versions[i];
	initialized = true;
	return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", version, "capabilities",
	    "tools", "listChanged", 0, "serverInfo", "name", "gflow", "title", "gflow GPU job scheduler",
	    "version", GFLOW_VERSION, "instructions",
	    "Tools for the gflow scheduler of this machine. Read before you change: use get_health, "
	    "list_jobs, get_job, get_queue_pressure, get_quotas and triage_job first; wait_for_job "
	    "instead of polling; get_job_log with offset to read a log on from where you stopped; "
	    "preview_submit_jobs and "
	    "preview_update_job before submit_jobs and update_job. Ask the user before any tool that "
	    "changes jobs (submit, update, redo, cancel, hold, release) unless they asked for exactly that.");
}

static json_t *tools_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < mcp_ntools; i++) {
		const struct mcp_tool *t = &mcp_tools[i];
		json_t *tool = json_pack("{s:s,s:s,s:o,s:{s:b,s:b,s:b}}", "name", t->name, "description",
		    t->description, "inputSchema", schema_of(t->name, "inputSchema", t->schema), "annotations",
		    "readOnlyHint", t->read_only, "destructiveHint", t->destructive, "openWorldHint", 0);

		if (since("2025-06-18"))
			json_object_set_new(tool, "outputSchema", schema_of(t->name, "outputSchema",
			    mcp_output_schema(t->name)));
		json_array_append_new(list, tool);
	}
	return json_pack("{s:o}", "tools", list);
}

static void tools_call(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *schema, *out;
	const struct mcp_tool *t = NULL;
	struct gf_err e = { "" };
	char msg[700];
	char *text;

	if (!name) {
		send_error(id, -32602, "params.name (the tool) is required");
		return;
	}
	for (size_t i = 0; i < mcp_ntools && !t; i++)
		if (!strcmp(mcp_tools[i].name, name))
			t = &mcp_tools[i];
	if (!t) {
		snprintf(msg, sizeof msg, "unknown tool '%.200s' (see tools/list)", name);
		send_error(id, -32602, msg);
		return;
	}
	if (args && json_is_null(args))
		args = NULL;
	args = args ? json_incref(args) : json_object();
	schema = json_loads(t->schema, 0, NULL);
	if (mcp_check(schema, args, "", &e)) {
		snprintf(msg, sizeof msg, "invalid arguments for %s: %s", name, e.msg);
		json_decref(schema);
		json_decref(args);
		if (since("2025-11-25"))
			send_result(id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", msg,
			    "isError", 1));
		else
			send_error(id, -32602, msg);
		return;
	}
	json_decref(schema);
	out = t->run(args, &e);
	json_decref(args);
	if (!out) {
		send_result(id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", e.msg,
		    "isError", 1));
		return;
	}
	text = json_dumps(out, JSON_INDENT(2));
	if (!text)
		abort();
	if (since("2025-06-18"))
		send_result(id, json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text", text,
		    "structuredContent", out, "isError", 0));
	else {
		send_result(id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text,
		    "isError", 0));
		json_decref(out);
	}
	free(text);
}

/* One message (an object): a request, a notification or an answer. */
static void handle(json_t *m)
{
	json_t *id = json_object_get(m, "id"), *params = json_object_get(m, "params");
	const char *method = json_string_value(json_object_get(m, "method"));
	char msg[300];

	if (!json_is_object(m) || !json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0")) {
		send_error(json_is_object(m) && (json_is_string(id) || json_is_integer(id)) ? id : NULL, -32600,
		    "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" is required)");
		return;
	}
	if (!json_object_get(m, "method")) {
		if (json_object_get(m, "result") || json_object_get(m, "error"))
			return;		/* an answer to a request we never make */
		send_error(json_is_string(id) || json_is_integer(id) ? id : NULL, -32600, "a request needs a method");
		return;
	}
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		send_error(NULL, -32600, "id must be a string or an integer");
		return;
	}
	if (!method) {
		if (id)
			send_error(id, -32600, "method must be a string");
		return;
	}
	if (!id)		/* a notification: initialized, cancelled, ... */
		return;
	if (params && !json_is_object(params)) {
		send_error(id, -32602, "params must be an object");
		return;
	}
	if (!strcmp(method, "initialize")) {
		if (!json_is_string(json_object_get(params, "protocolVersion"))) {
			send_error(id, -32602, "params.protocolVersion (a string) is required");
			return;
		}
		send_result(id, initialize(params));
	} else if (!strcmp(method, "ping")) {
		send_result(id, json_object());
	} else if (!initialized && !strncmp(method, "tools/", 6)) {
		send_error(id, -32002, "the server is not initialized: send initialize first");
	} else if (!strcmp(method, "tools/list")) {
		send_result(id, tools_list());
	} else if (!strcmp(method, "tools/call")) {
		tools_call(id, params);
	} else {
		snprintf(msg, sizeof msg, "unknown method '%.200s' (this server offers initialize, ping, "
		    "tools/list, tools/call)", method);
		send_error(id, -32601, msg);
	}
}

static int serve(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	signal(SIGPIPE, SIG_IGN);
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		json_error_t jerr;
		json_t *m;
		char msg[300];

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		m = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
		if (!m) {
			snprintf(msg, sizeof msg, "parse error at column %d: %s", jerr.column, jerr.text);
			send_error(NULL, -32700, msg);
			continue;
		}
		if (json_is_array(m))
			send_error(NULL, -32600, "batches are not supported: send one message per line");
		else
			handle(m);
		json_decref(m);
	}
	free(line);
	return EXIT_OK;
}

int mcp_main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		fputs(mcp_help, stdout);
		return EXIT_OK;
	}
	if (argc < 2)
		return cmd_usagef(PROG, "missing subcommand (usage: gflow mcp serve)");
	if (strcmp(argv[1], "serve"))
		return cmd_usagef(PROG, "unknown subcommand '%s' (usage: gflow mcp serve)", argv[1]);
	if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		fputs(mcp_help, stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return cmd_usagef(PROG, "unexpected '%s' (usage: gflow mcp serve)", argv[2]);
	return serve();
}
