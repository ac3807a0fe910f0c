/* opt.c — scanning command-line options against a table (see opt.h). */
#include "opt.h"

#include <stdio.h>
#include <string.h>

void opt_init(struct opt_parser *p, int argc, char **argv, int first,
    const struct opt_def *defs, size_t ndefs, int permute)
{
	memset(p, 0, sizeof *p);
	p->argc = argc;
	p->argv = argv;
	p->i = first;
	p->defs = defs;
	p->ndefs = ndefs;
	p->permute = permute;
}

const struct opt_def *opt_find_long(const struct opt_def *defs, size_t n,
    const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (defs[i].name && strlen(defs[i].name) == len &&
		    strncmp(defs[i].name, name, len) == 0)
			return &defs[i];
	return NULL;
}

static const struct opt_def *find_short(const struct opt_parser *p, char c)
{
	size_t i;

	for (i = 0; i < p->ndefs; i++)
		if (p->defs[i].shrt == c)
			return &p->defs[i];
	return NULL;
}

/* The rest of a short-option group: "-n5" gives "5"; else the next word. */
static int short_option(struct opt_parser *p, const char **val,
    struct gf_err *e)
{
	char c = *p->bundle++;
	const struct opt_def *d = find_short(p, c);

	snprintf(p->spelled, sizeof p->spelled, "-%c", c);
	if (!d) {
		p->bundle = NULL;
		gf_err_set(e, "unknown option '-%c'", c);
		return OPT_ERROR;
	}
	if (!d->has_arg) {
		if (!*p->bundle)
			p->bundle = NULL;
		return d->id;
	}
	if (*p->bundle) {
		*val = p->bundle;
	} else if (p->i < p->argc) {
		*val = p->argv[p->i++];
	} else {
		p->bundle = NULL;
		gf_err_set(e, "option '-%c' needs a value", c);
		return OPT_ERROR;
	}
	p->bundle = NULL;
	return d->id;
}

static int long_option(struct opt_parser *p, const char *w,
    const char **val, struct gf_err *e)
{
	const char *name = w + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct opt_def *d = opt_find_long(p->defs, p->ndefs, name, len);

	snprintf(p->spelled, sizeof p->spelled, "--%.*s", (int)len, name);
	if (!d) {
		gf_err_set(e, "unknown option '--%.*s'", (int)len, name);
		return OPT_ERROR;
	}
	if (!d->has_arg) {
		if (eq) {
			gf_err_set(e, "option '--%s' takes no value", d->name);
			return OPT_ERROR;
		}
		return d->id;
	}
	if (eq) {
		*val = eq + 1;
	} else if (p->i < p->argc) {
		*val = p->argv[p->i++];
	} else {
		gf_err_set(e, "option '--%s' needs a value", d->name);
		return OPT_ERROR;
	}
	return d->id;
}

int opt_next(struct opt_parser *p, const char **val, struct gf_err *e)
{
	const char *w;

	*val = NULL;
	if (p->bundle)
		return short_option(p, val, e);
	if (p->i >= p->argc)
		return OPT_END;
	w = p->argv[p->i];
	if (p->dashdash || w[0] != '-' || w[1] == '\0') {
		if (!p->permute)
			return OPT_END;
		p->i++;
		*val = w;
		return OPT_POSITIONAL;
	}
	p->i++;
	if (strcmp(w, "--") == 0) {
		if (!p->permute)
			return OPT_END;
		p->dashdash = 1;
		return opt_next(p, val, e);
	}
	if (w[1] == '-')
		return long_option(p, w, val, e);
	p->bundle = w + 1;
	return short_option(p, val, e);
}
