/* batch.h — gbatch's command line and script directives (batch.c).
 *
 * The flow: batch_parse() reads options up to the first word of the job,
 * decides whether that word is a script, reads the script's "# GFLOW"
 * directives, applies directives and then the command line (so the
 * command line wins) and validates the result; batch_request()
 * (jobspec.h) expands arrays and sweeps into the body of one POST /jobs.
 * No daemon is needed for either, so both are unit-tested. */
#ifndef GF_CLIENT_BATCH_H
#define GF_CLIENT_BATCH_H

#include <stddef.h>

#include "jsonapi.h"

#include "err.h"
#include "jobspec.h"

/* One option read from a script. */
struct batch_directive {
	int id;
	char *val;      /* NULL for flags */
	char flag[64];  /* "--gpus" */
	int line;       /* 1-based */
};

/* Read the "# GFLOW --flag=value" / "# GFLOW --flag value" lines of a
 * script's text (several flags per line allowed; a word starting with '#'
 * ends the line). Errors name the file, line and flag. The caller frees
 * *out with batch_directives_free(). */
int batch_read_directives(const char *text, const char *fname,
    struct batch_directive **out, size_t *n, struct gf_err *e);
void batch_directives_free(struct batch_directive *d, size_t n);

/* Parse a whole gbatch command line (argv[0] is the program). Returns 0,
 * EXIT_USAGE for a bad command line or EXIT_FAIL for anything else (a
 * script that cannot be read, a bad directive), with e set. On success
 * with o->help or o->version set nothing else is checked. */
int batch_parse(int argc, char **argv, const struct batch_ctx *ctx,
    struct batch_opts *o, struct gf_err *e);

/* What --dry-run prints for a list of job objects (or specs). */
char *batch_dry_run_text(const json_t *jobs);

#endif
