/* opt.h — the command-line option scanner every client program uses.
 *
 * Options are described by a table of rows; aliases are extra rows with
 * the same id. Accepted spellings: "--name value", "--name=value",
 * "-x value", "-xvalue" and bundled flags "-ac". Unlike getopt it keeps no
 * global state, never abbreviates long names, and either stops at the
 * first word that is not an option (gbatch: the rest is the job) or hands
 * such words back one by one (everything else). "--" ends the options. */
#ifndef GF_CLIENT_OPT_H
#define GF_CLIENT_OPT_H

#include <stddef.h>

#include "err.h"

struct opt_def {
	int id;           /* >= 0; several rows may share one id */
	const char *name; /* long name without "--", or NULL */
	char shrt;        /* short letter, or 0 */
	int has_arg;      /* 1 when the option takes a value */
};

#define OPT_END        (-1) /* no more options */
#define OPT_POSITIONAL (-2) /* a non-option word (permute mode), in *val */
#define OPT_ERROR      (-3) /* unknown option or missing value; e is set */

struct opt_parser {
	int argc;
	char **argv;
	int i;                 /* next word to look at */
	const char *bundle;    /* rest of a "-abc" group being scanned */
	int permute;           /* 1: return positional words; 0: stop there */
	int dashdash;          /* "--" seen (permute mode) */
	const struct opt_def *defs;
	size_t ndefs;
	char spelled[64];      /* the option as the user wrote it: "--gres" */
};

/* Start scanning argv[first..argc). */
void opt_init(struct opt_parser *p, int argc, char **argv, int first,
    const struct opt_def *defs, size_t ndefs, int permute);

/* Next option: its id (and *val when it takes a value), OPT_POSITIONAL,
 * OPT_END (in stop mode p->i is then the first word of the rest) or
 * OPT_ERROR. */
int opt_next(struct opt_parser *p, const char **val, struct gf_err *e);

/* Find the row for a long name; NULL when unknown. */
const struct opt_def *opt_find_long(const struct opt_def *defs, size_t n,
    const char *name, size_t len);

#endif
