/* sweep.c — parameter sweeps (gbatch --param, --param-file): their
 * dimensions read from a value list or a CSV file, and the points of
 * their cartesian product in order, the last dimension varying fastest.
 * Knows nothing of jobs: jobspec.c makes a job of each point. */
#include "sweep.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "utf8.h"
#include "util.h"

#define PARAM_FILE_MAX  (64u << 20)

void sweep_dim_free(struct sweep_dim *d)
{
	size_t i;

	for (i = 0; i < d->nkeys; i++)
		free(d->keys[i]);
	for (i = 0; i < d->nkeys * d->nrows; i++)
		free(d->vals[i]);
	free(d->keys);
	free(d->vals);
	memset(d, 0, sizeof *d);
}

static int key_in_dims(const struct sweep_dim *dims, size_t ndims,
    const char *key)
{
	size_t i, j;

	for (i = 0; i < ndims; i++)
		for (j = 0; j < dims[i].nkeys; j++)
			if (strcmp(dims[i].keys[j], key) == 0)
				return 1;
	return 0;
}

/* Take ownership of d as a new sweep dimension; its keys must be new and
 * its values text (they are shown as the job's params). */
static int add_dim(struct sweep_dim **dims, size_t *ndims,
    struct sweep_dim *d, struct gf_err *e)
{
	size_t j;

	for (j = 0; j < d->nkeys * d->nrows; j++)
		if (!gf_utf8_valid(d->vals[j], strlen(d->vals[j]))) {
			gf_err_set(e, "sweep value '%s' of '%s' is not UTF-8 "
			    "text", d->vals[j], d->keys[j % d->nkeys]);
			sweep_dim_free(d);
			return -1;
		}
	for (j = 0; j < d->nkeys; j++)
		if (key_in_dims(*dims, *ndims, d->keys[j])) {
			gf_err_set(e, "sweep parameter '%s' is given twice",
			    d->keys[j]);
			sweep_dim_free(d);
			return -1;
		}
	*dims = xrealloc(*dims, (*ndims + 1) * sizeof **dims);
	(*dims)[(*ndims)++] = *d;
	memset(d, 0, sizeof *d);
	return 0;
}

int sweep_param(struct sweep_dim **dims, size_t *ndims, const char *val,
    struct gf_err *e)
{
	struct gf_param p = { 0 };
	struct sweep_dim d = { 0 };

	if (gf_parse_param(val, &p, e) < 0)
		return -1;
	d.keys = xmalloc(sizeof *d.keys);
	d.keys[0] = p.key;
	d.nkeys = 1;
	d.vals = p.values;
	d.nrows = p.n;
	p.key = NULL;
	p.values = NULL;
	p.n = 0;
	gf_param_free(&p);
	return add_dim(dims, ndims, &d, e);
}

int sweep_param_file(struct sweep_dim **dims, size_t *ndims,
    const char *val, const char *cwd, struct gf_err *e)
{
	struct sweep_dim d = { 0 };
	char *path = path_in_dir(cwd, val), *text;
	size_t len;
	int trunc, rc;

	rc = read_file(path, PARAM_FILE_MAX, &text, &len, &trunc, e);
	free(path);
	if (rc < 0)
		return -1;
	if (trunc || strlen(text) != len) {
		free(text);
		return gf_err_set(e, "parameter file '%s' is too large or not "
		    "text", val);
	}
	rc = sweep_param_csv(text, val, &d, e);
	free(text);
	if (rc < 0)
		return -1;
	return add_dim(dims, ndims, &d, e);
}

/* ---------- CSV parameter files ---------- */

/* Split one CSV record starting at *pp into fields (RFC 4180 quoting).
 * Returns the number of fields, -1 on an unclosed quote. */
static void free_fields(char **f, int n);

static int csv_record(const char **pp, char ***fields)
{
	const char *p = *pp;
	struct sbuf b = { 0 };
	int n = 0;

	*fields = NULL;
	for (;;) {
		if (*p == '"') {
			p++;
			for (;;) {
				if (!*p) {
					sbuf_free(&b);
					free_fields(*fields, n);
					*fields = NULL;
					return -1;
				}
				if (*p == '"' && p[1] == '"') {
					sbuf_addc(&b, '"');
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					sbuf_addc(&b, *p++);
				}
			}
		}
		while (*p && *p != ',' && *p != '\n' && *p != '\r')
			sbuf_addc(&b, *p++);
		*fields = xrealloc(*fields, (size_t)(n + 1) * sizeof **fields);
		(*fields)[n++] = sbuf_take(&b);
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '\r')
		p++;
	if (*p == '\n')
		p++;
	*pp = p;
	return n;
}

static int valid_key(const char *k)
{
	if (!isalpha((unsigned char)*k) && *k != '_')
		return 0;
	for (k++; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

static void free_fields(char **f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

int sweep_param_csv(const char *text, const char *fname,
    struct sweep_dim *d, struct gf_err *e)
{
	const char *p = text;
	char **f;
	int n, line = 0, i, j;

	memset(d, 0, sizeof *d);
	while (*p) {
		if (*p == '\n' || (*p == '\r' && p[1] == '\n')) {
			p += *p == '\r' ? 2 : 1;
			line++;
			continue;
		}
		line++;
		n = csv_record(&p, &f);
		if (n < 0) {
			gf_err_set(e, "%s:%d: unclosed quote", fname, line);
			goto fail;
		}
		if (!d->keys) {
			for (i = 0; i < n; i++) {
				for (j = 0; j < i; j++)
					if (strcmp(f[i], f[j]) == 0)
						break;
				if (!valid_key(f[i]) || j < i) {
					gf_err_set(e, "%s:%d: bad column name "
					    "'%s' (expected a unique name like "
					    "lr or batch_size)", fname, line,
					    f[i]);
					free_fields(f, n);
					goto fail;
				}
			}
			d->keys = f;
			d->nkeys = (size_t)n;
			continue;
		}
		if ((size_t)n != d->nkeys) {
			gf_err_set(e, "%s:%d: expected %zu fields, found %d",
			    fname, line, d->nkeys, n);
			free_fields(f, n);
			goto fail;
		}
		if (d->nrows >= GF_MAX_PARAM_VALUES) {
			gf_err_set(e, "%s: more than %d rows", fname,
			    GF_MAX_PARAM_VALUES);
			free_fields(f, n);
			goto fail;
		}
		d->vals = xrealloc(d->vals, (d->nrows + 1) * d->nkeys *
		    sizeof *d->vals);
		memcpy(d->vals + d->nrows * d->nkeys, f, d->nkeys * sizeof *f);
		d->nrows++;
		free(f);
	}
	if (!d->keys || d->nrows == 0) {
		gf_err_set(e, "%s: expected a header row and at least one row "
		    "of values", fname);
		goto fail;
	}
	return 0;
fail:
	sweep_dim_free(d);
	return -1;
}

/* ---------- the points ---------- */

int sweep_size(const struct sweep_dim *dims, size_t ndims, size_t *npoints,
    size_t *nkeys, struct gf_err *e)
{
	size_t total = 1, keys = 0, d;

	for (d = 0; d < ndims; d++) {
		keys += dims[d].nkeys;
		if (dims[d].nrows > GF_MAX_ARRAY_TASKS / total)
			return gf_err_set(e, "the sweep expands to more than %d "
			    "jobs", GF_MAX_ARRAY_TASKS);
		total *= dims[d].nrows;
	}
	*npoints = total;
	*nkeys = keys;
	return 0;
}

void sweep_keys(const struct sweep_dim *dims, size_t ndims, const char **keys)
{
	size_t d, k, at = 0;

	for (d = 0; d < ndims; d++)
		for (k = 0; k < dims[d].nkeys; k++)
			keys[at++] = dims[d].keys[k];
}

void sweep_point(const struct sweep_dim *dims, size_t ndims, size_t i,
    const char **vals)
{
	size_t rest = i, at = 0, d, k;

	for (d = 0; d < ndims; d++)
		at += dims[d].nkeys;
	/* the last dimension varies fastest */
	for (d = ndims; d-- > 0;) {
		const struct sweep_dim *sd = &dims[d];
		size_t row = rest % sd->nrows;

		rest /= sd->nrows;
		at -= sd->nkeys;
		for (k = 0; k < sd->nkeys; k++)
			vals[at + k] = sd->vals[row * sd->nkeys + k];
	}
}
