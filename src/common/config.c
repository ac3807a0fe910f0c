/* config.c — loading gflow.toml and GFLOW_* overrides (see config.h).
 *
 * The known keys live in one table (settings[]); the file walker and the
 * environment reader both find a key there and hand its value to the same
 * setter, so a key means the same thing whichever way it is given. A value
 * comes either as a TOML node or as an environment string (struct src). */
#include "configint.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "home.h"
#include "parse.h"
#include "jobvars.h"
#include "toml.h"

/* Quota fields of named entries not given yet; they take the default's. */
#define QUOTA_UNSET INT64_MIN

enum kind {
	K_STRING,	/* non-empty string */
	K_INT,		/* int field, min..max */
	K_INT64,	/* int64_t field, min..max */
	K_BOOL,
	K_GPUS,
	K_STRATEGY,
	K_EXECUTOR,
	K_STRLIST,	/* char ** at off, its size_t count at off_n */
	K_WEBHOOKS,
	K_EMAILS,
	K_OVERUSE,
	K_TIMEZONE,	/* a string gf_timezone_check accepts */
	K_DURATION,	/* int64_t seconds from "2h", "15m", "90s", "1:30:00" (gf_parse_duration) */
	K_IDLE_ACTION,
	K_IDLE_APPLY,
	K_WEIGHT,	/* a number from 0 to 1 (a double) */
};

struct setting {
	const char *section;	/* "" for the top level */
	const char *key;
	enum kind kind;
	size_t off;		/* field in struct gf_config */
	int64_t min, max;	/* K_INT, K_INT64 */
	size_t off_n;		/* K_STRLIST */
};

#define F(field) offsetof(struct gf_config, field)

static const struct setting settings[] = {
	{ "", "timezone", K_TIMEZONE, F(timezone), 0, 0, 0 },
	{ "daemon", "host", K_STRING, F(host), 0, 0, 0 },
	{ "daemon", "port", K_INT, F(port), 1, 65535, 0 },
	{ "daemon", "gpus", K_GPUS, 0, 0, 0, 0 },
	{ "daemon", "gpu_allocation_strategy", K_STRATEGY, F(strategy), 0, 0, 0 },
	{ "daemon", "gpu_poll_interval_secs", K_INT, F(gpu_poll_interval_secs), 1, INT_MAX, 0 },
	{ "daemon", "admin_group", K_STRING, F(admin_group), 0, 0, 0 },
	{ "daemon", "max_user_priority", K_INT, F(max_user_priority), 0, 255, 0 },
	{ "daemon", "max_connections_per_user", K_INT, F(max_connections_per_user), 1, INT_MAX, 0 },
	{ "daemon", "default_runtime_estimate", K_INT64, F(default_runtime_estimate), 0, 366LL * 86400, 0 },
	{ "daemon", "cpus", K_INT, F(cpus), 0, 65536, 0 },
	{ "daemon", "constrain_cpus", K_BOOL, F(constrain_cpus), 0, 0, 0 },
	{ "gpu", "unmanaged_min_memory_mb", K_INT64, F(gpu_unmanaged_min_memory_mb), 0, INT64_MAX, 0 },
	{ "gpu", "unmanaged_ignore_commands", K_STRLIST, F(gpu_unmanaged_ignore_commands), 0, 0,
	  F(n_gpu_unmanaged_ignore_commands) },
	{ "gpu", "shared_overuse", K_OVERUSE, F(gpu_shared_overuse), 0, 0, 0 },
	{ "gpu", "constrain_devices", K_BOOL, F(gpu_constrain_devices), 0, 0, 0 },
	{ "gpu.idle_reclaim", "enabled", K_BOOL, F(idle_enabled), 0, 0, 0 },
	{ "gpu.idle_reclaim", "after", K_DURATION, F(idle_after_secs), 0, 0, 0 },
	{ "gpu.idle_reclaim", "warn_before", K_DURATION, F(idle_warn_before_secs), 0, 0, 0 },
	{ "gpu.idle_reclaim", "threshold_util", K_INT, F(idle_threshold_util), 1, 100, 0 },
	{ "gpu.idle_reclaim", "action", K_IDLE_ACTION, F(idle_action), 0, 0, 0 },
	{ "gpu.idle_reclaim", "apply_to", K_IDLE_APPLY, F(idle_apply_all), 0, 0, 0 },
	{ "daemon.fair_share", "enabled", K_BOOL, F(fair_share_enabled), 0, 0, 0 },
	{ "daemon.fair_share", "half_life_secs", K_INT64, F(fair_share_half_life_secs), 1, INT64_MAX, 0 },
	{ "daemon.fair_share", "preemptible_weight", K_WEIGHT, F(fair_share_preemptible_weight), 0, 0, 0 },
	{ "executor", "type", K_EXECUTOR, F(executor), 0, 0, 0 },
	{ "projects", "known_projects", K_STRLIST, F(known_projects), 0, 0, F(n_known_projects) },
	{ "projects", "require_project", K_BOOL, F(require_project), 0, 0, 0 },
	{ "notifications", "enabled", K_BOOL, F(notifications_enabled), 0, 0, 0 },
	{ "notifications", "max_concurrent_deliveries", K_INT, F(notify_max_concurrent), 1, 64, 0 },
	{ "notifications", "webhooks", K_WEBHOOKS, 0, 0, 0, 0 },
	{ "notifications", "emails", K_EMAILS, 0, 0, 0, 0 },
};

#define NSETTINGS (sizeof settings / sizeof settings[0])

/* Tables that hold settings or other tables. quota.users and
 * quota.projects hold one table per name. */
static const char *const sections[] = {
	"daemon", "daemon.fair_share", "gpu", "gpu.idle_reclaim", "executor", "projects", "notifications",
	"quota", "quota.default_user", "quota.default_project", "quota.users", "quota.projects",
	"clusters",
};

#define NSECTIONS (sizeof sections / sizeof sections[0])

static const char *const quota_keys[] = { "max_running_jobs", "max_running_gpus", "max_queued_jobs",
	"max_gpu_hours_per_day", "max_preemptible_gpus" };
#define NQUOTA_KEYS 5

static int64_t *quota_field(struct gf_quota *q, size_t i)
{
	return i == 0 ? &q->max_running_jobs : i == 1 ? &q->max_running_gpus : i == 2 ? &q->max_queued_jobs
	       : i == 3 ? &q->max_gpu_hours_per_day : &q->max_preemptible_gpus;
}

#define QUOTA_WHAT "a non-negative integer or -1 (unlimited)"

/* "[daemon] port", or "timezone" at the top level. */
static void key_show(const char *section, const char *key, char *out, size_t size)
{
	if (*section)
		snprintf(out, size, "[%.150s] %.100s", section, key);
	else
		snprintf(out, size, "%.100s", key);
}

/* ---------- the daemon's GPUs ---------- */

/* One index 0..63 in s[0..len). */
static int gpu_index(const char *spec, const char *s, size_t len, unsigned *out, struct gf_err *e)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > 6)
		goto bad;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			goto bad;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v >= GF_MAX_GPUS)
		return gf_err_set(e, "invalid GPU list '%.100s': GPU index %u is out of range (0..%d)", spec, v,
		    GF_MAX_GPUS - 1);
	*out = v;
	return 0;
bad:
	return gf_err_set(e, "invalid GPU list '%.100s': '%.*s' is not a GPU index", spec,
	    (int)(len > 50 ? 50 : len), s);
}

/* "all", or indices and ranges joined by commas: "0", "0,2", "0-3", "0-1,3". */
static int parse_gpu_spec(const char *spec, uint64_t *mask, struct gf_err *e)
{
	const char *p = spec;
	uint64_t m = 0;

	if (!strcasecmp(spec, "all")) {
		*mask = UINT64_MAX;
		return 0;
	}
	if (!*spec)
		return gf_err_set(e, "invalid GPU list '': expected e.g. 0, 0,2, 0-3 or all");
	for (;;) {
		size_t len = strcspn(p, ","), dash;
		unsigned lo = 0, hi = 0, i;

		while (len && *p == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		dash = 0;
		while (dash < len && p[dash] != '-')
			dash++;
		if (dash < len) {
			if (gpu_index(spec, p, dash, &lo, e) ||
			    gpu_index(spec, p + dash + 1, len - dash - 1, &hi, e))
				return -1;
			if (lo > hi)
				return gf_err_set(e, "invalid GPU list '%.100s': range '%.*s' runs backwards", spec,
				    (int)len, p);
		} else {
			if (gpu_index(spec, p, len, &lo, e))
				return -1;
			hi = lo;
		}
		for (i = lo; i <= hi; i++) {
			if (m & (UINT64_C(1) << i))
				return gf_err_set(e, "invalid GPU list '%.100s': GPU %u is listed twice", spec, i);
			m |= UINT64_C(1) << i;
		}
		p += strcspn(p, ",");
		if (!*p)
			break;
		p++;
	}
	*mask = m;
	return 0;
}

/* An array of integers 0..63, or a string spec such as "0-3" or "all". */
static int get_gpus(struct src *s, struct gf_config *c, struct gf_err *e)
{
	uint64_t m = 0;
	size_t i;

	if (s->env || toml_type(s->v) == TOML_STRING) {
		const char *spec = s->env ? s->env : cfg_plain_string(s->v);

		if (!spec)
			return cfg_expected(s, "an array of GPU indices or a string such as \"0-3\"", e);
		if (parse_gpu_spec(spec, &m, e))
			return -1;
	} else if (toml_type(s->v) == TOML_ARRAY) {
		for (i = 0; i < toml_array_len(s->v); i++) {
			const struct toml_value *it = toml_array_at(s->v, i);
			int64_t g;

			s->at = it;
			if (toml_type(it) != TOML_INTEGER || (g = toml_integer(it)) < 0 || g >= GF_MAX_GPUS)
				return cfg_expected(s, "GPU indices between 0 and 63", e);
			if (m & (UINT64_C(1) << g))
				return gf_err_set(e, "GPU %lld is listed twice", (long long)g);
			m |= UINT64_C(1) << g;
		}
		s->at = NULL;
	} else {
		return cfg_expected(s, "an array of GPU indices or a string such as \"0-3\"", e);
	}
	c->gpus_set = 1;
	c->gpus_mask = m;
	return 0;
}

/* [gpu.idle_reclaim]'s durations and choices. */
static int apply_idle(const struct setting *st, struct src *s, struct gf_config *c, struct gf_err *e)
{
	const char *v = s->v ? cfg_plain_string(s->v) : s->env;

	switch (st->kind) {
	case K_DURATION:
		if (!v)
			return cfg_expected(s, "a duration such as \"2h\", \"15m\" or \"90s\"", e);
		return gf_parse_duration(v, "duration", (int64_t *)((char *)c + st->off), e);
	case K_IDLE_ACTION:
		if (v && !strcmp(v, "warn"))
			c->idle_action = GF_IDLE_WARN;
		else if (v && !strcmp(v, "cancel"))
			c->idle_action = GF_IDLE_CANCEL;
		else if (v && !strcmp(v, "requeue"))
			c->idle_action = GF_IDLE_REQUEUE;
		else
			return cfg_expected(s, "\"warn\", \"cancel\" or \"requeue\"", e);
		return 0;
	case K_IDLE_APPLY:
		if (v && !strcmp(v, "interactive"))
			c->idle_apply_all = 0;
		else if (v && !strcmp(v, "all"))
			c->idle_apply_all = 1;
		else
			return cfg_expected(s, "\"interactive\" or \"all\"", e);
		return 0;
	default:
		return gf_err_set(e, "unhandled setting");
	}
}

static int apply(const struct setting *st, struct src *s, struct gf_config *c, struct gf_err *e)
{
	static const char *const strategies[] = { "sequential", "random" };
	static const char *const executors[] = { "tmux", "process" };
	static const char *const overuses[] = { "warn", "cancel" };
	char *field = (char *)c + st->off;
	int64_t v;
	int i;

	if (!strcmp(st->section, "gpu.idle_reclaim") && strcmp(st->key, "enabled"))
		c->idle_given = 1;
	switch (st->kind) {
	case K_STRING:
		return cfg_get_string(s, (char **)field, e);
	case K_INT:
		if (cfg_get_int(s, st->min, st->max, NULL, &v, e))
			return -1;
		*(int *)field = (int)v;
		return 0;
	case K_INT64:
		return cfg_get_int(s, st->min, st->max, NULL, (int64_t *)field, e);
	case K_BOOL:
		return cfg_get_bool(s, (int *)field, e);
	case K_WEIGHT: {
		double d = -1;
		char *end = NULL;

		if (s->v && toml_type(s->v) == TOML_FLOAT)
			d = toml_float(s->v);
		else if (s->v && toml_type(s->v) == TOML_INTEGER)
			d = (double)toml_integer(s->v);
		else if (!s->v && s->env && *s->env)
			d = strtod(s->env, &end);
		if (!(d >= 0 && d <= 1) || (end && *end))
			return cfg_expected(s, "a number from 0 to 1", e);
		*(double *)field = d;
		return 0;
	}
	case K_GPUS:
		return get_gpus(s, c, e);
	case K_STRATEGY:
		if (cfg_get_choice(s, strategies, 2, &i, e))
			return -1;
		c->strategy = i ? GF_STRATEGY_RANDOM : GF_STRATEGY_SEQUENTIAL;
		return 0;
	case K_EXECUTOR:
		if (cfg_get_choice(s, executors, 2, &i, e))
			return -1;
		c->executor = i ? GF_EXEC_PROCESS : GF_EXEC_TMUX;
		return 0;
	case K_STRLIST:
		return cfg_get_strlist(s, (char ***)field, (size_t *)((char *)c + st->off_n), e);
	case K_WEBHOOKS:
		return cfg_get_targets(s, c, true, e);
	case K_EMAILS:
		return cfg_get_targets(s, c, false, e);
	case K_OVERUSE:
		if (cfg_get_choice(s, overuses, 2, &i, e))
			return -1;
		c->gpu_shared_overuse = i ? GF_OVERUSE_CANCEL : GF_OVERUSE_WARN;
		return 0;
	case K_TIMEZONE:
		return cfg_get_string(s, (char **)field, e) || gf_timezone_check(*(char **)field, e);
	case K_DURATION:
	case K_IDLE_ACTION:
	case K_IDLE_APPLY:
		return apply_idle(st, s, c, e);
	}
	return gf_err_set(e, "unhandled setting");
}

static int get_quota(struct src *s, int64_t *out, struct gf_err *e)
{
	return cfg_get_int(s, -1, INT64_MAX, QUOTA_WHAT, out, e);
}

/* ---------- lookups ---------- */

static const struct setting *find_setting(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < NSETTINGS; i++)
		if (!strcmp(settings[i].section, section) && !strcmp(settings[i].key, key))
			return &settings[i];
	return NULL;
}

static int is_section(const char *name)
{
	size_t i;

	for (i = 0; i < NSECTIONS; i++)
		if (!strcmp(sections[i], name))
			return 1;
	return 0;
}

static int quota_key(const char *key)
{
	size_t i;

	for (i = 0; i < NQUOTA_KEYS; i++)
		if (!strcmp(quota_keys[i], key))
			return (int)i;
	return -1;
}

/* The quota entry for name in a named list, added when missing. */
static struct gf_quota *named_quota(struct gf_named_quota **list, size_t *n, const char *name,
    struct gf_err *e)
{
	struct gf_named_quota *nl;
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*list)[i].name, name))
			return &(*list)[i].q;
	nl = realloc(*list, (*n + 1) * sizeof *nl);
	if (!nl) {
		gf_err_set(e, "out of memory");
		return NULL;
	}
	*list = nl;
	if (!(nl[*n].name = cfg_strdup(name, e)))
		return NULL;
	nl[*n].q.max_running_jobs = nl[*n].q.max_running_gpus = nl[*n].q.max_queued_jobs = QUOTA_UNSET;
	nl[*n].q.max_gpu_hours_per_day = nl[*n].q.max_preemptible_gpus = QUOTA_UNSET;
	return &nl[(*n)++].q;
}

/* The quota a section names: quota.default_user, quota.default_project,
 * or quota.users / quota.projects with a name. */
static struct gf_quota *quota_for(struct gf_config *c, const char *section, const char *name,
    struct gf_err *e)
{
	if (!strcmp(section, "quota.default_user"))
		return &c->quota_default_user;
	if (!strcmp(section, "quota.default_project"))
		return &c->quota_default_project;
	if (!strcmp(section, "quota.users"))
		return named_quota(&c->quota_users, &c->n_quota_users, name, e);
	return named_quota(&c->quota_projects, &c->n_quota_projects, name, e);
}

/* Fill unset fields of named quotas from the defaults. */
static void finish_quotas(struct gf_named_quota *list, size_t n, const struct gf_quota *def)
{
	size_t i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < NQUOTA_KEYS; k++)
			if (*quota_field(&list[i].q, k) == QUOTA_UNSET)
				*quota_field(&list[i].q, k) = *quota_field((struct gf_quota *)def, k);
}

/* "host, port, ..." for the keys and sub-tables of section. */
static void known_keys(const char *section, char *out, size_t size)
{
	size_t i, n = 0, slen = strlen(section);

	out[0] = '\0';
	for (i = 0; i < NSETTINGS && n < size; i++)
		if (!strcmp(settings[i].section, section))
			n += (size_t)snprintf(out + n, size - n, "%s%s", n ? ", " : "", settings[i].key);
	for (i = 0; i < NSECTIONS && n < size; i++) {
		const char *sub = sections[i];

		/* Only the tables right below section. */
		if (slen) {
			if (strncmp(sub, section, slen) || sub[slen] != '.')
				continue;
			sub += slen + 1;
		}
		if (strchr(sub, '.'))
			continue;
		n += (size_t)snprintf(out + n, size - n, "%s[%s]", n ? ", " : "", sections[i]);
	}
}

/* ---------- the file ---------- */

static int walk(struct loader *L, const char *section, const struct toml_value *t);

/* [quota.default_user], [quota.users.<name>] and the like. */
static int walk_quota(struct loader *L, const char *section, const char *name, const char *show,
    const struct toml_value *t)
{
	struct gf_quota *q = quota_for(L->c, section, name, L->e);
	size_t i;
	int k;

	if (!q)
		return -1;
	for (i = 0; i < toml_table_len(t); i++) {
		struct src s = { .v = toml_table_at(t, i) };
		const char *key = cfg_key_at(t, i);

		if (!key || (k = quota_key(key)) < 0) {
			gf_err_set(L->e, "unknown key '%.100s' in [%s] (known keys: %s, %s, %s, %s)",
			    toml_table_key(t, i), show, quota_keys[0], quota_keys[1], quota_keys[2], quota_keys[3]);
			return cfg_at_key(L, t, i);
		}
		if (get_quota(&s, quota_field(q, (size_t)k), L->e)) {
			gf_err_prefix(L->e, "[%s] %s", show, key);
			return cfg_at(L, s.v);
		}
	}
	return 0;
}

/* [quota.users] / [quota.projects]: one table per name. */
static int walk_names(struct loader *L, const char *section, const struct toml_value *t)
{
	char show[300], name[128];
	size_t i;

	for (i = 0; i < toml_table_len(t); i++) {
		const struct toml_value *v = toml_table_at(t, i);
		const char *key = cfg_key_at(t, i);

		if (!key || !*key) {
			gf_err_set(L->e, "[%s]: a name must not be empty or hold a NUL byte", section);
			return cfg_at_key(L, t, i);
		}
		cfg_name_show(key, name, sizeof name);
		snprintf(show, sizeof show, "%s.%s", section, name);
		if (toml_type(v) != TOML_TABLE) {
			struct src s = { .v = v };

			cfg_expected(&s, "a table", L->e);
			gf_err_prefix(L->e, "[%s]", show);
			return cfg_at(L, v);
		}
		if (walk_quota(L, section, key, show, v))
			return -1;
	}
	return 0;
}

static int walk(struct loader *L, const char *section, const struct toml_value *t)
{
	char child[128], known[512], show[256];
	size_t i;

	for (i = 0; i < toml_table_len(t); i++) {
		const struct toml_value *v = toml_table_at(t, i);
		const char *key = cfg_key_at(t, i);
		const struct setting *st = key ? find_setting(section, key) : NULL;
		struct src s = { .v = v };

		snprintf(child, sizeof child, "%s%s%.100s", section, *section ? "." : "", toml_table_key(t, i));
		if (st) {
			if (apply(st, &s, L->c, L->e)) {
				key_show(section, key, show, sizeof show);
				gf_err_prefix(L->e, "%s", show);
				return cfg_at_src(L, &s);
			}
			continue;
		}
		if (!key || !is_section(child)) {
			known_keys(section, known, sizeof known);
			if (toml_type(v) == TOML_TABLE)
				gf_err_set(L->e, "unknown section [%s] (known here: %s)", child, known);
			else if (*section)
				gf_err_set(L->e, "unknown key '%.100s' in [%s] (known keys: %s)",
				    toml_table_key(t, i), section, known);
			else
				gf_err_set(L->e, "unknown key '%.100s' (known: %s)", toml_table_key(t, i), known);
			return cfg_at_key(L, t, i);
		}
		if (toml_type(v) != TOML_TABLE) {
			cfg_expected(&s, "a table", L->e);
			gf_err_prefix(L->e, "[%s]", child);
			return cfg_at(L, v);
		}
		if (!strcmp(child, "clusters")) {
			if (cfg_walk_clusters(L, v))
				return -1;
		} else if (!strcmp(child, "quota.users") || !strcmp(child, "quota.projects")) {
			if (walk_names(L, child, v))
				return -1;
		} else if (!strncmp(child, "quota.", 6)) {
			if (walk_quota(L, child, NULL, child, v))
				return -1;
		} else if (walk(L, child, v)) {
			return -1;
		}
	}
	return 0;
}

/* Read all of path into *text. A missing file sets *missing when allowed. */
static int read_file(const char *path, int must_exist, char **text, size_t *len, int *missing,
    struct gf_err *e)
{
	struct stat st;
	size_t cap, n = 0;
	char *buf;
	int fd;

	*missing = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && !must_exist) {
			*missing = 1;
			return 0;
		}
		return gf_err_set(e, "cannot read config file %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) || S_ISDIR(st.st_mode)) {
		close(fd);
		return gf_err_set(e, "cannot read config file %s: it is a directory", path);
	}
	if (st.st_size > (off_t)TOML_MAX_SIZE) {
		close(fd);
		return gf_err_set(e, "config file %s is too large (over %u bytes)", path, TOML_MAX_SIZE);
	}
	cap = (size_t)st.st_size + 1;
	if (!(buf = malloc(cap))) {
		close(fd);
		return gf_err_set(e, "out of memory");
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			/* The file grew while we read it; TOML_MAX_SIZE still bounds it. */
			char *nb = cap > TOML_MAX_SIZE ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				close(fd);
				return gf_err_set(e, "config file %s is too large (over %u bytes)", path, TOML_MAX_SIZE);
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;

			free(buf);
			close(fd);
			return gf_err_set(e, "cannot read config file %s: %s", path, strerror(err));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;
}

/* The text of a file called path: parsed and walked into c. */
static int load_text(struct gf_config *c, const char *path, const char *text, size_t len, struct gf_err *e)
{
	struct loader L = { c, path, e };
	struct toml_value *root = toml_parse(text, len, e);
	int rc;

	if (!root)
		return gf_err_prefix(e, "%s", path);
	if (!(c->path = cfg_strdup(path, e))) {
		toml_free(root);
		return -1;
	}
	rc = walk(&L, "", root);
	toml_free(root);
	return rc;
}

static int load_file(struct gf_config *c, const char *path, int must_exist, struct gf_err *e)
{
	char *text = NULL;
	size_t len = 0;
	int missing, rc;

	if (read_file(path, must_exist, &text, &len, &missing, e))
		return -1;
	if (missing)
		return 0;
	rc = load_text(c, path, text, len, e);
	free(text);
	return rc;
}

/* ---------- the environment ---------- */

/* Where the config file is when --config is not given. */
static int default_path(char *const *envp, char *out, size_t size, struct gf_err *e)
{
	const char *xdg = gf_env_get(envp, "XDG_CONFIG_HOME"), *home = gf_env_get(envp, "HOME");
	char pwhome[4096];
	int n;

	out[0] = '\0';
	if (xdg && xdg[0] == '/') {
		n = snprintf(out, size, "%s/gflow/gflow.toml", xdg);
	} else {
		if (!home || !*home) {
			if (gf_user_home(pwhome, sizeof pwhome) < 0)
				return 0;	/* no home: defaults only */
			home = pwhome;
		}
		n = snprintf(out, size, "%s/.config/gflow/gflow.toml", home);
	}
	if (n < 0 || (size_t)n >= size)
		return gf_err_set(e, "config file path too long");
	return 0;
}

#define ENV_PARTS 8

/* Split name[0..nlen) at "__" into parts (lower case) and oparts (as
 * written), in buffers of 256 bytes. Returns the count, 0 when a part is
 * empty or there are too many. */
static size_t split_env(const char *name, size_t nlen, char *buf, char *orig, char **parts, char **oparts)
{
	size_t i, n = 0;
	char *p = buf;

	if (nlen >= 256)
		return 0;
	for (i = 0; i < nlen; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[nlen] = '\0';
	memcpy(orig, name, nlen);
	orig[nlen] = '\0';
	for (;;) {
		char *sep = strstr(p, "__");

		if (n == ENV_PARTS)
			return 0;
		parts[n] = p;
		oparts[n] = orig + (p - buf);
		n++;
		if (!sep)
			break;
		*sep = '\0';
		orig[sep - buf] = '\0';
		p = sep + 2;
	}
	for (i = 0; i < n; i++)
		if (!*parts[i])
			return 0;
	return n;
}

/* One GFLOW_* variable; name is what follows "GFLOW_" up to '='. */
static int apply_env(struct gf_config *c, const char *var, const char *name, size_t nlen, const char *value,
    struct gf_err *e)
{
	char buf[256], orig[256], *parts[ENV_PARTS] = { 0 }, *oparts[ENV_PARTS] = { 0 }, section[256], show[400];
	struct src s = { .env = value };
	const struct setting *st;
	size_t i, n, off = 0;
	const char *key;
	int named;

	n = split_env(name, nlen, buf, orig, parts, oparts);
	if (n < 2)
		return gf_err_set(e, "unknown config variable %.100s: expected GFLOW_<SECTION>__<KEY>, "
		    "e.g. GFLOW_DAEMON__PORT", var);
	key = parts[n - 1];
	/* GFLOW_QUOTA__USERS__<name>__<KEY>: the name keeps its case. */
	named = n == 4 && !strcmp(parts[0], "quota") && (!strcmp(parts[1], "users") || !strcmp(parts[1], "projects"));
	section[0] = '\0';
	for (i = 0; i + 1 < n - (named ? 1 : 0); i++)
		off += (size_t)snprintf(section + off, sizeof section - off, "%s%s", i ? "." : "", parts[i]);
	if (named || !strcmp(section, "quota.default_user") || !strcmp(section, "quota.default_project")) {
		int k = quota_key(key);
		struct gf_quota *q;

		if (named)
			snprintf(show, sizeof show, "[%s.%.100s]", section, oparts[2]);
		else
			snprintf(show, sizeof show, "[%s]", section);
		if (k < 0)
			return gf_err_set(e, "unknown config variable %.100s: %s has no key '%.100s'", var, show, key);
		if (!(q = quota_for(c, section, named ? oparts[2] : NULL, e)))
			return -1;
		if (get_quota(&s, quota_field(q, (size_t)k), e))
			return gf_err_prefix(e, "environment %s: %s %s", var, show, key);
		return 0;
	}
	if (!(st = find_setting(section, key))) {
		if (is_section(section))
			return gf_err_set(e, "unknown config variable %.100s: [%s] has no key '%.100s'", var, section,
			    key);
		return gf_err_set(e, "unknown config variable %.100s: there is no section [%s]", var, section);
	}
	if (apply(st, &s, c, e)) {
		key_show(section, key, show, sizeof show);
		return gf_err_prefix(e, "environment %s: %s", var, show);
	}
	if (st->kind == K_GPUS)
		snprintf(c->gpus_source, sizeof c->gpus_source, "env %.55s", var);
	return 0;
}

static int load_env(struct gf_config *c, char *const *envp, struct gf_err *e)
{
	for (; envp && *envp; envp++) {
		const char *kv = *envp, *eq = strchr(kv, '='), *name = kv + 6;
		char var[128];
		size_t nlen;

		if (strncmp(kv, "GFLOW_", 6) || !eq)
			continue;
		nlen = (size_t)(eq - name);
		snprintf(var, sizeof var, "%.*s", (int)(eq - kv), kv);
		if (nlen == 8 && !strncasecmp(name, "TIMEZONE", 8)) {
			struct src s = { .env = eq + 1 };

			if (cfg_get_string(&s, &c->timezone, e) || gf_timezone_check(c->timezone, e))
				return gf_err_prefix(e, "environment %s: timezone", var);
			continue;
		}
		/* Other GFLOW_ names (GFLOW_SOCKET, GFLOW_JOB_ID, ...) are not config. */
		if (!memmem(name, nlen, "__", 2))
			continue;
		if (apply_env(c, var, name, nlen, eq + 1, e))
			return -1;
	}
	return 0;
}

/* ---------- public ---------- */

int gf_timezone_check(const char *tz, struct gf_err *e)
{
	const char *dir = getenv("TZDIR");
	char path[4096];
	struct stat st;

	if (!strcmp(tz, "local") || !strcmp(tz, "UTC"))
		return 0;
	if (!*tz || tz[0] == '/' || strstr(tz, "..") || strlen(tz) > 100)
		return gf_err_set(e, "'%.100s' is not a time zone: expected an IANA name like Asia/Shanghai or UTC, "
		    "or local", tz);
	snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return gf_err_set(e, "'%.100s' is not a time zone this machine knows (%s): e.g. Asia/Shanghai, "
		    "UTC, or local", tz, dir && *dir ? dir : "/usr/share/zoneinfo");
	return 0;
}

void gf_config_defaults(struct gf_config *c)
{
	static const struct gf_quota unlimited = { -1, -1, -1, -1, -1 };

	memset(c, 0, sizeof *c);
	c->host = strdup("localhost");
	c->port = GF_DEFAULT_PORT;
	c->strategy = GF_STRATEGY_SEQUENTIAL;
	c->gpu_poll_interval_secs = 10;
	c->max_user_priority = 10;
	c->max_connections_per_user = 64;
	c->cpus = -1;
	c->fair_share_enabled = 1;
	c->fair_share_half_life_secs = 604800;
	c->fair_share_preemptible_weight = 0.5;
	c->executor = GF_EXEC_TMUX;
	c->quota_default_user = unlimited;
	c->quota_default_project = unlimited;
	c->notify_max_concurrent = 4;
	c->idle_enabled = -1;
	c->idle_after_secs = 2 * 3600;
	c->idle_warn_before_secs = 15 * 60;
	c->idle_threshold_util = 5;
}

/* [gpu.idle_reclaim] is on when given, unless enabled = false. */
static void finish_idle(struct gf_config *c)
{
	if (c->idle_enabled < 0)
		c->idle_enabled = c->idle_given;
}

int gf_config_load(const char *explicit_path, char *const *envp, struct gf_config *c,
    struct gf_err *e)
{
	char path[4096];

	gf_config_defaults(c);
	if (!c->host) {
		gf_err_set(e, "out of memory");
		goto fail;
	}
	if (explicit_path) {
		if (load_file(c, explicit_path, 1, e))
			goto fail;
	} else {
		if (default_path(envp, path, sizeof path, e))
			goto fail;
		if (path[0] && load_file(c, path, 0, e))
			goto fail;
	}
	if (c->gpus_set)
		snprintf(c->gpus_source, sizeof c->gpus_source, "config");
	if (load_env(c, envp, e))
		goto fail;
	finish_quotas(c->quota_users, c->n_quota_users, &c->quota_default_user);
	finish_quotas(c->quota_projects, c->n_quota_projects, &c->quota_default_project);
	finish_idle(c);
	return 0;
fail:
	gf_config_free(c);
	return -1;
}

int gf_config_check_text(const char *path, const char *text, size_t len, struct gf_err *e)
{
	struct gf_config c;
	int rc;

	gf_config_defaults(&c);
	rc = c.host ? load_text(&c, path, text, len, e) : gf_err_set(e, "out of memory");
	gf_config_free(&c);
	return rc;
}

void gf_config_free(struct gf_config *c)
{
	size_t i;

	free(c->path);
	free(c->host);
	free(c->timezone);
	free(c->admin_group);
	cfg_free_strv(c->known_projects, c->n_known_projects);
	cfg_free_strv(c->gpu_unmanaged_ignore_commands, c->n_gpu_unmanaged_ignore_commands);
	for (i = 0; i < c->n_quota_users; i++)
		free(c->quota_users[i].name);
	free(c->quota_users);
	for (i = 0; i < c->n_quota_projects; i++)
		free(c->quota_projects[i].name);
	free(c->quota_projects);
	cfg_free_webhooks(c->webhooks, c->n_webhooks);
	cfg_free_emails(c->emails, c->n_emails);
	for (i = 0; i < c->n_clusters; i++)
		cfg_free_cluster(&c->clusters[i]);
	free(c->clusters);
	memset(c, 0, sizeof *c);
}

static const struct gf_quota *find_quota(const struct gf_named_quota *list, size_t n, const char *name,
    const struct gf_quota *def)
{
	size_t i;

	for (i = 0; name && i < n; i++)
		if (!strcmp(list[i].name, name))
			return &list[i].q;
	return def;
}

const struct gf_quota *gf_config_user_quota(const struct gf_config *c, const char *user)
{
	return find_quota(c->quota_users, c->n_quota_users, user, &c->quota_default_user);
}

const struct gf_quota *gf_config_project_quota(const struct gf_config *c, const char *project)
{
	return find_quota(c->quota_projects, c->n_quota_projects, project, &c->quota_default_project);
}

