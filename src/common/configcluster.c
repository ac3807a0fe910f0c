/* configcluster.c — [clusters.<name>] of gflow.toml (config.h's struct
 * gf_cluster): the Slurm clusters gbatch --cluster sends jobs to, each
 * key checked (type, ssh host, remote_dir, path_map), and the lookup by
 * name. The clients read them; the daemon only checks them. */
#include "configint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_free_cluster(struct gf_cluster *k)
{
	free(k->name);
	free(k->type);
	free(k->host);
	free(k->partition);
	free(k->account);
	free(k->qos);
	free(k->remote_dir);
	free(k->prelude);
	cfg_free_strv(k->map_from, k->n_map);
	cfg_free_strv(k->map_to, k->n_map);
}

static const char *const cluster_keys =
	"type, host, partition, account, qos, remote_dir, prelude, path_map";

/* path_map = { "/local/prefix" = "/remote/prefix", ... }: absolute paths. */
static int get_path_map(struct loader *L, struct gf_cluster *k, const char *show,
    const struct toml_value *t)
{
	size_t i, n = toml_table_len(t);

	k->map_from = calloc(n + 1, sizeof *k->map_from);
	k->map_to = calloc(n + 1, sizeof *k->map_to);
	if (!k->map_from || !k->map_to)
		return gf_err_set(L->e, "out of memory");
	for (i = 0; i < n; i++) {
		const char *from = cfg_key_at(t, i), *to = cfg_plain_string(toml_table_at(t, i));

		if (!from || from[0] != '/' || !to || to[0] != '/') {
			gf_err_set(L->e, "[%s] path_map: each entry maps an absolute local path to an "
			    "absolute remote path (\"/home/me/proj\" = \"/scratch/me/proj\")", show);
			return cfg_at(L, toml_table_at(t, i));
		}
		if (!(k->map_from[i] = cfg_strdup(from, L->e)) || !(k->map_to[i] = cfg_strdup(to, L->e)))
			return -1;
		k->n_map = i + 1;
	}
	return 0;
}

static int walk_cluster(struct loader *L, struct gf_cluster *k, const char *show,
    const struct toml_value *t)
{
	size_t i;

	for (i = 0; i < toml_table_len(t); i++) {
		const struct toml_value *v = toml_table_at(t, i);
		const char *key = cfg_key_at(t, i);
		struct src s = { .v = v };
		char **field = NULL;

		if (key && !strcmp(key, "path_map")) {
			if (toml_type(v) != TOML_TABLE) {
				cfg_expected(&s, "a table of \"local\" = \"remote\" paths", L->e);
				gf_err_prefix(L->e, "[%s] path_map", show);
				return cfg_at(L, v);
			}
			if (get_path_map(L, k, show, v))
				return -1;
			continue;
		}
		if (key && !strcmp(key, "type"))
			field = &k->type;
		else if (key && !strcmp(key, "host"))
			field = &k->host;
		else if (key && !strcmp(key, "partition"))
			field = &k->partition;
		else if (key && !strcmp(key, "account"))
			field = &k->account;
		else if (key && !strcmp(key, "qos"))
			field = &k->qos;
		else if (key && !strcmp(key, "remote_dir"))
			field = &k->remote_dir;
		else if (key && !strcmp(key, "prelude"))
			field = &k->prelude;
		if (!field) {
			gf_err_set(L->e, "unknown key '%.100s' in [%s] (known keys: %s)",
			    toml_table_key(t, i), show, cluster_keys);
			return cfg_at_key(L, t, i);
		}
		if (cfg_get_string(&s, field, L->e)) {
			gf_err_prefix(L->e, "[%s] %s", show, key);
			return cfg_at(L, v);
		}
		if (field == &k->type && strcmp(k->type, "slurm")) {
			gf_err_set(L->e, "[%s] type: \"%.50s\" is not a cluster type gflow knows "
			    "(known: \"slurm\")", show, k->type);
			return cfg_at(L, v);
		}
		if (field == &k->host && (k->host[0] == '-' || strpbrk(k->host, " \t\n\r'\"\\"))) {
			gf_err_set(L->e, "[%s] host: \"%.100s\" is not an ssh destination (HOST or USER@HOST)",
			    show, k->host);
			return cfg_at(L, v);
		}
		if (field == &k->remote_dir && k->remote_dir[0] != '/') {
			gf_err_set(L->e, "[%s] remote_dir: must be an absolute path", show);
			return cfg_at(L, v);
		}
	}
	if (!k->type) {
		gf_err_set(L->e, "[%s]: type = \"slurm\" is missing", show);
		return cfg_at(L, t);
	}
	return 0;
}

/* [clusters]: one table per cluster name. */
int cfg_walk_clusters(struct loader *L, const struct toml_value *t)
{
	char show[160], name[128];
	size_t i;

	for (i = 0; i < toml_table_len(t); i++) {
		const struct toml_value *v = toml_table_at(t, i);
		const char *key = cfg_key_at(t, i);
		struct gf_cluster *nk;

		if (!key || !*key || !cfg_is_bare(key)) {
			gf_err_set(L->e, "[clusters]: a cluster name is letters, digits, '-' and '_'");
			return cfg_at_key(L, t, i);
		}
		cfg_name_show(key, name, sizeof name);
		snprintf(show, sizeof show, "clusters.%s", name);
		if (toml_type(v) != TOML_TABLE) {
			struct src s = { .v = v };

			cfg_expected(&s, "a table", L->e);
			gf_err_prefix(L->e, "[%s]", show);
			return cfg_at(L, v);
		}
		nk = realloc(L->c->clusters, (L->c->n_clusters + 1) * sizeof *nk);
		if (!nk)
			return gf_err_set(L->e, "out of memory");
		L->c->clusters = nk;
		nk += L->c->n_clusters++;
		memset(nk, 0, sizeof *nk);
		if (!(nk->name = cfg_strdup(key, L->e)) || walk_cluster(L, nk, show, v))
			return -1;
	}
	return 0;
}

const struct gf_cluster *gf_config_cluster(const struct gf_config *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n_clusters; i++)
		if (!strcmp(c->clusters[i].name, name))
			return &c->clusters[i];
	return NULL;
}

