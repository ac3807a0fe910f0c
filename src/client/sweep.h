/* sweep.h — parameter sweeps (sweep.c): gbatch --param KEY=V1,V2,... and
 * --param-file FILE.csv give dimensions; their cartesian product gives one
 * job per point, the last dimension varying fastest. */
#ifndef GF_CLIENT_SWEEP_H
#define GF_CLIENT_SWEEP_H

#include <stddef.h>

#include "err.h"

/* One sweep dimension: nrows rows of nkeys values. A --param is one key;
 * a --param-file has one key per CSV column. */
struct sweep_dim {
	char **keys;
	size_t nkeys;
	char **vals; /* row-major, nrows * nkeys */
	size_t nrows;
};

void sweep_dim_free(struct sweep_dim *d);

/* --param KEY=VALUES (parse.h's gf_parse_param) / --param-file PATH (CSV,
 * relative to cwd): one more dimension appended to *dims (*ndims of them);
 * its keys must be new and its values UTF-8 text. 0, or -1 with e set. */
int sweep_param(struct sweep_dim **dims, size_t *ndims, const char *val,
    struct gf_err *e);
int sweep_param_file(struct sweep_dim **dims, size_t *ndims,
    const char *val, const char *cwd, struct gf_err *e);

/* Parse CSV text: header row = keys, each further row = one sweep point. */
int sweep_param_csv(const char *text, const char *fname,
    struct sweep_dim *d, struct gf_err *e);

/* How many points (at most GF_MAX_ARRAY_TASKS, else -1 with e set) and
 * keys the dimensions have. */
int sweep_size(const struct sweep_dim *dims, size_t ndims, size_t *npoints,
    size_t *nkeys, struct gf_err *e);
/* Every key, in dimension order, into keys (nkeys of them). */
void sweep_keys(const struct sweep_dim *dims, size_t ndims, const char **keys);
/* The values of point i, in the order of sweep_keys, into vals. */
void sweep_point(const struct sweep_dim *dims, size_t ndims, size_t i,
    const char **vals);

#endif
