/* mcp.h — `gflow mcp serve`: a Model Context Protocol server on stdio.
 *
 * mcp.c speaks the protocol (JSON-RPC 2.0, one message per line: initialize
 * with version negotiation, tools/list, tools/call, ping, errors) and checks
 * each call's arguments against the tool's JSON Schema; mcptools.c holds the
 * tools, each of which talks to the daemon like every client (http.c). */
#ifndef GF_CLIENT_MCP_H
#define GF_CLIENT_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include "jsonapi.h"

#include "err.h"

struct mcp_tool {
	const char *name;
	const char *description;
	const char *schema;	/* the inputSchema, as JSON text */
	bool read_only;		/* changes nothing */
	bool destructive;	/* may end or drop work */
	/* args passed the schema. Returns the result (an object) or NULL with
	 * e set: a tool error, reported with isError. */
	json_t *(*run)(json_t *args, struct gf_err *e);
};

extern const struct mcp_tool mcp_tools[];
extern const size_t mcp_ntools;

/* The outputSchema of a tool (JSON text; mcpout.c): what its result, sent
 * as structuredContent, always matches. NULL for a name it does not know. */
const char *mcp_output_schema(const char *tool);

/* Is v valid under schema (the subset gflow's schemas use: type (one or a
 * list), properties, required, additionalProperties: false, items, enum,
 * minimum, maximum, minLength, minItems)? -1 with e naming the bad part
 * (path like "jobs[0].command"). */
int mcp_check(const json_t *schema, const json_t *v, const char *path, struct gf_err *e);

/* `gflow mcp ...` (argv[0] is "mcp"). */
int mcp_main(int argc, char **argv);

#endif
