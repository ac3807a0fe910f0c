/* remote.c — the client's side of jobs on a Slurm cluster (see remote.h,
 * docs/slurm.md): gbatch --cluster, state mirroring, cancel/hold/release,
 * logs, and the `gflow cluster` command. */
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "cluster.h"
#include "config.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "slurm.h"
#include "util.h"

#define SCRIPT_MAX (16 << 20)

extern char **environ;

static int load_cluster(const char *config, const char *name, struct gf_config *cfg,
    const struct gf_cluster **k, struct gf_err *e)
{
	struct sbuf known = { 0 };

	if (gf_config_load(config, environ, cfg, e) < 0)
		return -1;
	if ((*k = gf_config_cluster(cfg, name)))
		return 0;
	for (size_t i = 0; i < cfg->n_clusters; i++)
		sbuf_addf(&known, "%s%s", i ? ", " : "", cfg->clusters[i].name);
	gf_err_set(e, "unknown cluster '%s': %s has %s%s", name,
	    cfg->path ? cfg->path : "the config (no gflow.toml was found)",
	    known.len ? "only " : "no [clusters.NAME] table",
	    known.len ? sbuf_str(&known) : "");
	sbuf_free(&known);
	gf_config_free(cfg);
	return -1;
}

/* The cluster's directory for scripts and logs (malloc'd), or NULL. */
static char *cluster_dir(const struct gf_cluster *k, struct gf_err *e)
{
	const char *home = getenv("HOME");
	struct sbuf b = { 0 };

	if (k->remote_dir)
		return xstrdup(k->remote_dir);
	if (k->host) {
		gf_err_set(e, "[clusters.%s] needs remote_dir (an absolute path on %s for "
		    "scripts and logs)", k->name, k->host);
		return NULL;
	}
	if (!home || home[0] != '/') {
		gf_err_set(e, "[clusters.%s] needs remote_dir ($HOME is not set)", k->name);
		return NULL;
	}
	sbuf_addf(&b, "%s/%s", home, CLUSTER_DEFAULT_DIR);
	return sbuf_take(&b);
}

/* Slurm ids of the jobs o depends on, which must be on the same cluster. */
static int resolve_deps(const struct batch_opts *o, char ***ids, size_t *n,
    struct gf_err *e)
{
	struct sbuf refs = { 0 }, path = { 0 };
	json_t *resp, *jobs;
	size_t i;

	*ids = NULL;
	*n = 0;
	if (!json_array_size(o->depends_on))
		return 0;
	for (i = 0; i < json_array_size(o->depends_on); i++) {
		json_t *r = json_array_get(o->depends_on, i);

		if (json_is_integer(r))
			sbuf_addf(&refs, "%s%lld", i ? "," : "", (long long)json_integer_value(r));
		else
			sbuf_addf(&refs, "%s%s", i ? "," : "", json_string_value(r));
	}
	sbuf_adds(&path, "/jobs");
	url_add_param(&path, "ids", sbuf_str(&refs));
	url_add_param(&path, "fields", "id,cluster,slurm_id");
	resp = api_get(sbuf_str(&path), e);
	sbuf_free(&path);
	if (!resp) {
		sbuf_free(&refs);
		return -1;
	}
	jobs = json_object_get(resp, "jobs");
	if (json_array_size(jobs) != json_array_size(o->depends_on)) {
		gf_err_set(e, "--depends-on %s: not every job exists", sbuf_str(&refs));
		goto fail;
	}
	*ids = xcalloc(json_array_size(jobs) + 1, sizeof **ids);
	for (i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i);
		const char *c = jstr(j, "cluster");

		if (!c || strcmp(c, o->cluster) || !jstr(j, "slurm_id")) {
			gf_err_set(e, "--depends-on %lld: job %lld %s; a Slurm job can only "
			    "wait for jobs of its own cluster (%s)", (long long)jint(j, "id", 0),
			    (long long)jint(j, "id", 0), c ? "is on another cluster" :
			    "runs on this machine", o->cluster);
			goto fail;
		}
		(*ids)[(*n)++] = xstrdup(jstr(j, "slurm_id"));
	}
	sbuf_free(&refs);
	json_decref(resp);
	return 0;
fail:
	for (i = 0; *ids && i < *n; i++)
		free((*ids)[i]);
	free(*ids);
	*ids = NULL;
	*n = 0;
	sbuf_free(&refs);
	json_decref(resp);
	return -1;
}

/* A script job's script, to be copied to the cluster. */
static char *read_script(const char *path, struct gf_err *e)
{
	struct sbuf b = { 0 };
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		gf_err_set(e, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		sbuf_add(&b, buf, (size_t)n);
		if (b.len > SCRIPT_MAX) {
			close(fd);
			sbuf_free(&b);
			gf_err_set(e, "%s: a script sent to a cluster may have at most %d MiB",
			    path, SCRIPT_MAX >> 20);
			return NULL;
		}
	}
	close(fd);
	if (n < 0 || memchr(sbuf_str(&b) ? sbuf_str(&b) : "", '\0', b.len)) {
		sbuf_free(&b);
		gf_err_set(e, "%s: %s", path, n < 0 ? strerror(errno) :
		    "a NUL byte: only text scripts are sent to a cluster");
		return NULL;
	}
	sbuf_addc(&b, '\0');
	return sbuf_take(&b);
}

static void print_dry_run(const struct gf_cluster *k, const struct cluster_plan *p)
{
	char *const sb[] = { "sbatch", "--parsable", p->script_path, NULL };
	char *cmd = slurm_command_text(k, sb);

	if (p->job_path)
		printf("#### the job's script is copied to %s\n", p->job_path);
	printf("#### batch script for cluster %s (written to %s)\n%s", k->name,
	    p->script_path, p->script);
	if (p->params)
		printf("#### parameters file (written to %s)\n%s", p->params_path, p->params);
	printf("#### submitted with\n%s\n", cmd);
	printf("#### not carried over exactly\n");
	for (size_t i = 0; i < p->nlossy; i++)
		printf("- %s\n", p->lossy[i]);
	if (!p->nlossy)
		printf("nothing\n");
	free(cmd);
}

/* The output file of one task: the pattern with %A/%a/%j filled. */
static char *task_log(const char *pattern, const char *id, int64_t task, int array)
{
	struct sbuf b = { 0 };

	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && (p[1] == 'A' || p[1] == 'j')) {
			sbuf_adds(&b, id);
			p++;
		} else if (p[0] == '%' && p[1] == 'a' && array) {
			sbuf_addf(&b, "%lld", (long long)task);
			p++;
		} else {
			sbuf_addc(&b, *p);
		}
	}
	return sbuf_take(&b);
}

/* POST /remote/jobs for what Slurm accepted as job `id`. */
static json_t *record(const struct batch_opts *o, const json_t *body,
    const struct cluster_plan *p, const char *id, struct gf_err *e)
{
	json_t *req = json_object(), *jobs = json_array(), *resp;
	const json_t *specs = json_object_get(body, "jobs");

	for (size_t i = 0; i < json_array_size(specs); i++) {
		const json_t *s = json_array_get(specs, i);
		json_t *r = json_object();
		char sid[96], *log;

		if (p->ntasks)
			snprintf(sid, sizeof sid, "%s_%lld", id, (long long)p->tasks[i]);
		else
			snprintf(sid, sizeof sid, "%s", id);
		log = task_log(p->log_pattern, id, p->ntasks ? p->tasks[i] : 0, p->ntasks > 0);
		json_object_set(r, "name", json_object_get(s, "name"));
		json_object_set(r, "command", json_object_get(s, "command"));
		json_object_set_new(r, "slurm_id", json_string(sid));
		json_object_set_new(r, "remote_log", gf_cstr_json(log));
		free(log);
		if (json_object_get(s, "params"))
			json_object_set(r, "params", json_object_get(s, "params"));
		if (o->has_array)
			json_object_set_new(r, "array_task_id", json_integer(p->tasks[i]));
		if (o->project)
			json_object_set_new(r, "project", json_string(o->project));
		if (o->gpus > 0)
			json_object_set_new(r, "gpus", json_integer(o->gpus));
		if (o->memory_mb > 0)
			json_object_set_new(r, "memory_mb", json_integer(o->memory_mb));
		if (o->time_limit_secs > 0)
			json_object_set_new(r, "time_limit_secs", json_integer(o->time_limit_secs));
		if (o->hold)
			json_object_set_new(r, "hold", json_true());
		json_array_append_new(jobs, r);
	}
	json_object_set_new(req, "cluster", json_string(o->cluster));
	json_object_set(req, "cwd", json_object_get(body, "cwd"));
	json_object_set_new(req, "jobs", jobs);
	resp = api_post("/remote/jobs", req, e);
	json_decref(req);
	return resp;
}

static int submit_plan(const char *prog, const struct gf_cluster *k,
    const struct batch_opts *o, const json_t *body, const char *dir,
    const struct cluster_plan *p)
{
	json_t *resp, *jobs;
	struct gf_err e;
	char *id = NULL;

	if ((p->job_text && slurm_put(k, dir, p->job_path, p->job_text, 1, &e)) ||
	    slurm_put(k, dir, p->script_path, p->script, 0, &e) ||
	    (p->params && slurm_put(k, dir, p->params_path, p->params, 0, &e)) ||
	    slurm_sbatch(k, p->script_path, o->gpus, &id, &e))
		return cmd_fail(prog, &e);
	if (!(resp = record(o, body, p, id, &e))) {
		fprintf(stderr, "%s: Slurm job %s was submitted to cluster %s, but gflowd could "
		    "not record it (%s); cancel it there with: scancel %s\n", prog, id, k->name,
		    e.msg, id);
		free(id);
		return EXIT_FAIL;
	}
	jobs = json_object_get(resp, "jobs");
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i);
		char *name = fmt_escaped(jstr(j, "name"));

		if (p->ntasks)
			printf("Submitted batch job %lld (%s) to cluster %s as Slurm job %s_%lld\n",
			    (long long)jint(j, "id", 0), name, k->name, id,
			    (long long)p->tasks[i]);
		else
			printf("Submitted batch job %lld (%s) to cluster %s as Slurm job %s\n",
			    (long long)jint(j, "id", 0), name, k->name, id);
		free(name);
	}
	json_decref(resp);
	free(id);
	return EXIT_OK;
}

int remote_submit(const char *prog, const struct batch_opts *o,
    const struct batch_ctx *ctx)
{
	struct gf_config cfg;
	const struct gf_cluster *k;
	struct cluster_plan p;
	struct cluster_deps deps = { 0 };
	struct gf_err e;
	char **dep_ids = NULL, *dir = NULL, *script_text = NULL, stamp[96], when[32];
	size_t ndeps = 0;
	json_t *body = NULL;
	time_t now = ctx->now;
	struct tm tm;
	int rc = EXIT_FAIL;

	if (load_cluster(o->config, o->cluster, &cfg, &k, &e))
		return cmd_fail(prog, &e);
	if (!(dir = cluster_dir(k, &e)))
		goto fail;
	if (!(body = batch_request(o, ctx, &e))) {
		rc = cmd_usage_error(prog, &e);
		goto out;
	}
	if (resolve_deps(o, &dep_ids, &ndeps, &e))
		goto fail;
	deps.slurm_ids = (const char *const *)dep_ids;
	deps.n = ndeps;
	localtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
	snprintf(stamp, sizeof stamp, "gflow-%s-%ld", when, (long)getpid());
	if (o->script && !(script_text = read_script(o->script, &e)))
		goto fail;
	if (cluster_plan(k, o, body, &deps, script_text, o->export_env, dir, stamp, &p, &e)) {
		rc = cmd_usage_error(prog, &e);
		goto out;
	}
	if (o->dry_run) {
		print_dry_run(k, &p);
		rc = EXIT_OK;
	} else {
		for (size_t i = 0; i < p.nlossy; i++)
			fprintf(stderr, "%s: warning: %s\n", prog, p.lossy[i]);
		rc = submit_plan(prog, k, o, body, dir, &p);
	}
	cluster_plan_free(&p);
	goto out;
fail:
	rc = cmd_fail(prog, &e);
out:
	for (size_t i = 0; i < ndeps; i++)
		free(dep_ids[i]);
	free(dep_ids);
	json_decref(body);
	free(dir);
	free(script_text);
	gf_config_free(&cfg);
	return rc;
}

/* ---------- mirroring ---------- */

/* Update the daemon's record of `jobs` (objects with id, cluster, slurm_id)
 * of cluster k from what Slurm says. Returns the number of problems. */
static int sync_cluster(const char *prog, const struct gf_cluster *k,
    json_t *jobs, int verbose)
{
	size_t n = json_array_size(jobs), ns = 0, i, m;
	char **ids = xcalloc(n + 1, sizeof *ids);
	struct slurm_state *st = NULL;
	json_t *body, *ups = json_array(), *resp;
	struct gf_err e;
	int problems = 0;

	for (i = 0; i < n; i++)
		ids[i] = (char *)jstr(json_array_get(jobs, i), "slurm_id");
	if (slurm_query(k, ids, n, &st, &ns, &e)) {
		fprintf(stderr, "%s: warning: %s (showing what was last seen)\n", prog, e.msg);
		free(ids);
		json_decref(ups);
		return 1;
	}
	for (i = 0; i < n; i++) {
		json_t *j = json_array_get(jobs, i), *u;

		for (m = 0; m < ns && strcmp(st[m].id, ids[i]); m++)
			;
		if (m == ns)
			continue;
		u = json_pack("{s:I,s:s}", "id", (json_int_t)jint(j, "id", 0), "state", st[m].code);
		json_object_set_new(u, "reason", st[m].reason ? json_string(st[m].reason) : json_null());
		if (st[m].has_exit) {
			json_object_set_new(u, "exit_code", json_integer(st[m].exit_code));
			json_object_set_new(u, "exit_signal", json_integer(st[m].exit_signal));
		}
		if (st[m].start > 0)
			json_object_set_new(u, "start_time", json_real(st[m].start));
		if (st[m].end > 0 && strcmp(st[m].code, "R") && strcmp(st[m].code, "PD") &&
		    strcmp(st[m].code, "H"))
			json_object_set_new(u, "end_time", json_real(st[m].end));
		json_array_append_new(ups, u);
		if (verbose)
			printf("job %lld: Slurm job %s on %s is %s\n", (long long)jint(j, "id", 0),
			    ids[i], k->name, st[m].code);
	}
	cluster_states_free(st, ns);
	free(ids);
	if (!json_array_size(ups)) {
		json_decref(ups);
		return 0;
	}
	body = json_pack("{s:o}", "jobs", ups);
	resp = api_post("/remote/update", body, &e);
	json_decref(body);
	if (!resp) {
		fprintf(stderr, "%s: warning: cannot record Slurm's states: %s\n", prog, e.msg);
		return 1;
	}
	for (i = 0; i < json_array_size(json_object_get(resp, "errors")); i++, problems++)
		fprintf(stderr, "%s: warning: %s\n", prog,
		    json_string_value(json_array_get(json_object_get(resp, "errors"), i)));
	json_decref(resp);
	return problems;
}

/* The caller's open jobs on clusters, grouped: {"name": [job, ...]}. */
static json_t *open_remote_jobs(const char *only, const char *ids, struct gf_err *e)
{
	struct sbuf path = { 0 };
	json_t *resp, *jobs, *by = json_object();
	size_t i;

	sbuf_adds(&path, "/jobs");
	if (ids)
		url_add_param(&path, "ids", ids);
	else
		url_add_param(&path, "active", "1");
	url_add_param(&path, "fields", "id,cluster,slurm_id,st,state,remote_log");
	resp = api_get(sbuf_str(&path), e);
	sbuf_free(&path);
	if (!resp) {
		json_decref(by);
		return NULL;
	}
	jobs = json_object_get(resp, "jobs");
	for (i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i), *list;
		const char *c = jstr(j, "cluster");

		if (!c || !jstr(j, "slurm_id") || (only && strcmp(c, only)))
			continue;
		if (!(list = json_object_get(by, c))) {
			list = json_array();
			json_object_set_new(by, c, list);
		}
		json_array_append(list, j);
	}
	json_decref(resp);
	return by;
}

static int sync_groups(const char *prog, const struct gf_config *cfg, json_t *by, int verbose)
{
	const char *name;
	json_t *list;
	int problems = 0;

	json_object_foreach(by, name, list) {
		const struct gf_cluster *k = gf_config_cluster(cfg, name);

		if (!k) {
			fprintf(stderr, "%s: warning: jobs on cluster %s cannot be followed: %s has "
			    "no [clusters.%s] any more\n", prog, name,
			    cfg->path ? cfg->path : "the config", name);
			problems++;
			continue;
		}
		problems += sync_cluster(prog, k, list, verbose);
	}
	return problems;
}

int remote_sync(const char *prog, const char *cluster, int verbose)
{
	const struct gf_config *cfg;
	struct gf_err e;
	json_t *by;
	int problems;

	if (!(cfg = cmd_default_config(&e))) {
		if (verbose || cluster)
			fprintf(stderr, "%s: warning: %s\n", prog, e.msg);
		return 1;
	}
	if (!cfg->n_clusters && !verbose && !cluster)
		return 0;
	if (!(by = open_remote_jobs(cluster, NULL, &e))) {
		/* gqueue and gjob show say it themselves, once */
		if (verbose)
			fprintf(stderr, "%s: %s\n", prog, e.msg);
		return 1;
	}
	problems = sync_groups(prog, cfg, by, verbose);
	json_decref(by);
	return problems;
}

/* ---------- cancel, hold, release ---------- */

static int control_cluster(const char *prog, const struct gf_cluster *k, const char *verb,
    json_t *jobs, int dry)
{
	static const char *const done[][2] = {
		{ "cancel", "Cancelled" }, { "hold", "Held" }, { "release", "Released" },
	};
	const char *word = "Done";
	size_t n = json_array_size(jobs), i, nids = 0;
	char **ids = xcalloc(n + 1, sizeof *ids);
	struct gf_err e;
	int rc = EXIT_OK;

	for (i = 0; i < 3; i++)
		if (!strcmp(done[i][0], verb))
			word = done[i][1];
	for (i = 0; i < n; i++) {
		json_t *j = json_array_get(jobs, i);
		const char *st = jstr(j, "st");

		if (st && (!strcmp(st, "CD") || !strcmp(st, "F") || !strcmp(st, "CA") ||
		    !strcmp(st, "TO"))) {
			fprintf(stderr, "%s: cannot %s job %lld: it is %s already\n", prog, verb,
			    (long long)jint(j, "id", 0), jstr(j, "state"));
			rc = EXIT_FAIL;
			continue;
		}
		ids[nids++] = (char *)jstr(j, "slurm_id");
	}
	if (nids && !dry && slurm_control(k, verb, ids, nids, &e)) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		free(ids);
		return EXIT_FAIL;
	}
	for (i = 0; i < n; i++) {
		json_t *j = json_array_get(jobs, i);
		const char *sid = jstr(j, "slurm_id");

		for (size_t m = 0; m < nids; m++)
			if (ids[m] == sid)
				printf("%s%s job %lld (Slurm job %s on cluster %s)\n",
				    dry ? "Would " : "", dry ? verb : word,
				    (long long)jint(j, "id", 0), sid, k->name);
	}
	free(ids);
	if (!dry && nids)
		sync_cluster(prog, k, jobs, 0);
	return rc;
}

int remote_divert(const char *prog, const char *verb, const char *ids_text,
    int dry, json_t **rest)
{
	const struct gf_config *cfg;
	struct gf_err e;
	json_t *by = open_remote_jobs(NULL, ids_text, &e), *list, *all, *locals;
	const char *name;
	int rc = EXIT_OK;
	size_t i;

	*rest = NULL;
	if (!by || !json_object_size(by)) {
		json_decref(by);
		if (!(*rest = jobref_list_json(ids_text, &e)))
			return cmd_usage_error(prog, &e);
		return EXIT_OK;
	}
	if (!(cfg = cmd_default_config(&e))) {
		json_decref(by);
		return cmd_fail(prog, &e);
	}
	json_object_foreach(by, name, list) {
		const struct gf_cluster *k = gf_config_cluster(cfg, name);

		if (!k) {
			fprintf(stderr, "%s: cannot %s jobs on cluster %s: %s has no "
			    "[clusters.%s]\n", prog, verb, name, cfg->path ? cfg->path : "the config",
			    name);
			rc = EXIT_FAIL;
			continue;
		}
		if (control_cluster(prog, k, verb, list, dry) != EXIT_OK)
			rc = EXIT_FAIL;
	}
	json_decref(by);
	/* what is left for the daemon: the jobs that are not on a cluster */
	{
		struct sbuf path = { 0 };
		json_t *resp;

		sbuf_adds(&path, "/jobs");
		url_add_param(&path, "ids", ids_text);
		url_add_param(&path, "fields", "id,cluster");
		resp = api_get(sbuf_str(&path), &e);
		sbuf_free(&path);
		all = resp ? json_object_get(resp, "jobs") : NULL;
		locals = json_array();
		for (i = 0; i < json_array_size(all); i++)
			if (!jstr(json_array_get(all, i), "cluster"))
				json_array_append_new(locals, json_integer(
				    jint(json_array_get(all, i), "id", 0)));
		json_decref(resp);
	}
	if (json_array_size(locals))
		*rest = locals;
	else
		json_decref(locals);
	return rc;
}

/* ---------- logs ---------- */

int remote_log(const char *prog, const json_t *job)
{
	struct gf_config cfg;
	const struct gf_cluster *k;
	struct slurm_out r;
	struct gf_err e;
	const char *path = jstr(job, "remote_log"), *st = jstr(job, "st");
	int rc = EXIT_OK;

	if (!path)
		return cmd_usagef(prog, "job %lld on cluster %s has no output file recorded",
		    (long long)jint(job, "id", 0), jstr(job, "cluster"));
	if (load_cluster(NULL, jstr(job, "cluster"), &cfg, &k, &e))
		return cmd_fail(prog, &e);
	{
		char *const argv[] = { "cat", "--", (char *)path, NULL };

		if (slurm_run(k, argv, NULL, &r, &e)) {
			gf_config_free(&cfg);
			return cmd_fail(prog, &e);
		}
	}
	if (r.status) {
		if (st && (!strcmp(st, "PD") || !strcmp(st, "H")))
			fprintf(stderr, "%s: job %lld has not started yet on cluster %s; its "
			    "output will be %s\n", prog, (long long)jint(job, "id", 0), k->name, path);
		else
			fprintf(stderr, "%s: cannot read %s on cluster %s: %s", prog, path, k->name,
			    r.err[0] ? r.err : "cat failed\n");
		rc = EXIT_FAIL;
	} else {
		fputs(r.out, stdout);
	}
	slurm_out_free(&r);
	gf_config_free(&cfg);
	return rc;
}

/* ---------- gflow cluster ---------- */

enum { K_CLUSTER, K_DIR, K_HELP };

static const struct opt_def cluster_opts[] = {
	{ K_CLUSTER, "cluster", 0, 1 }, { K_DIR, "dir", 0, 1 }, { K_HELP, "help", 'h', 0 },
};

static const char cluster_help[] =
"usage: gflow cluster sync [--cluster NAME]\n"
"       gflow cluster export IDS --cluster NAME [--dir DIR]\n\n"
"Jobs on Slurm clusters ([clusters.NAME] in gflow.toml; docs/slurm.md).\n"
"  sync     read the state of your open cluster jobs from squeue (sacct for\n"
"           jobs squeue has forgotten) and record it; gqueue and gjob show\n"
"           do this for what they show\n"
"  export   write a Slurm batch script for each of these jobs of this\n"
"           machine, as gbatch --cluster NAME would, to DIR (default: the\n"
"           current directory) as gflow-job-<id>.sbatch\n";

/* A batch_opts and a POST /jobs body that say what job object j says. */
static void opts_of_job(const json_t *j, const char *cluster, struct batch_opts *o,
    json_t **body)
{
	json_t *spec = json_object();

	batch_opts_init(o);
	o->cluster = xstrdup(cluster);
	if (jint(j, "gpus", 0) > 0)
		o->gpus = jint(j, "gpus", 0);
	if (jint(j, "memory_mb", 0) > 0)
		o->memory_mb = jint(j, "memory_mb", 0);
	if (jint(j, "time_limit_secs", 0) > 0)
		o->time_limit_secs = jint(j, "time_limit_secs", 0);
	if (jint(j, "gpu_memory_mb", 0) > 0)
		o->gpu_memory_mb = jint(j, "gpu_memory_mb", 0);
	if (json_is_true(json_object_get(j, "shared")))
		o->shared = 1;
	if (jstr(j, "name"))
		o->name = xstrdup(jstr(j, "name"));
	if (jstr(j, "project"))
		o->project = xstrdup(jstr(j, "project"));
	if (jstr(j, "conda_env"))
		o->conda_env = xstrdup(jstr(j, "conda_env"));
	if (jint(j, "max_retries", 0) > 0)
		o->max_retries = jint(j, "max_retries", 0);
	json_object_set(spec, "name", json_object_get(j, "name"));
	json_object_set(spec, "command", json_object_get(j, "command"));
	*body = json_pack("{s:[o],s:O,s:[]}", "jobs", spec, "cwd", json_object_get(j, "cwd"), "env");
}

static int export_jobs(const char *ids, const char *name, const char *outdir)
{
	struct gf_config cfg;
	const struct gf_cluster *k;
	struct sbuf path = { 0 };
	struct gf_err e;
	json_t *resp, *jobs;
	char *dir;
	int rc = EXIT_OK;

	if (load_cluster(NULL, name, &cfg, &k, &e))
		return cmd_fail("gflow cluster", &e);
	if (!(dir = cluster_dir(k, &e))) {
		gf_config_free(&cfg);
		return cmd_fail("gflow cluster", &e);
	}
	sbuf_adds(&path, "/jobs");
	url_add_param(&path, "ids", ids);
	resp = api_get(sbuf_str(&path), &e);
	sbuf_free(&path);
	if (!resp) {
		free(dir);
		gf_config_free(&cfg);
		return cmd_fail("gflow cluster", &e);
	}
	jobs = json_object_get(resp, "jobs");
	if (!json_array_size(jobs)) {
		fprintf(stderr, "gflow cluster: no job matches %s\n", ids);
		rc = EXIT_FAIL;
	}
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		long long id = (long long)jint(j, "id", 0);
		struct batch_opts o;
		struct cluster_plan p;
		json_t *body;
		char stamp[64], file[4096];
		FILE *f;
		int fd;

		if (!json_object_get(j, "command") || jstr(j, "cluster")) {
			fprintf(stderr, "gflow cluster: job %lld: %s\n", id, jstr(j, "cluster") ?
			    "it is a cluster job already" : "only its owner may export it");
			rc = EXIT_FAIL;
			continue;
		}
		opts_of_job(j, name, &o, &body);
		snprintf(stamp, sizeof stamp, "gflow-job-%lld", id);
		if (cluster_plan(k, &o, body, NULL, NULL, 0, dir, stamp, &p, &e)) {
			fprintf(stderr, "gflow cluster: job %lld: %s\n", id, e.msg);
			rc = EXIT_FAIL;
		} else {
			snprintf(file, sizeof file, "%s/%s.sbatch", outdir, stamp);
			fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
			if (fd < 0 || !(f = fdopen(fd, "w"))) {
				fprintf(stderr, "gflow cluster: cannot create %s: %s\n", file,
				    strerror(errno));
				if (fd >= 0)
					close(fd);
				rc = EXIT_FAIL;
			} else {
				fputs(p.script, f);
				if (fclose(f)) {
					fprintf(stderr, "gflow cluster: cannot write %s\n", file);
					rc = EXIT_FAIL;
				} else {
					printf("Wrote %s (job %lld, for cluster %s)\n", file, id, name);
				}
			}
			for (size_t m = 0; m < p.nlossy; m++)
				fprintf(stderr, "gflow cluster: warning: job %lld: %s\n", id, p.lossy[m]);
			if (json_array_size(json_object_get(j, "depends_on")))
				fprintf(stderr, "gflow cluster: warning: job %lld: its dependencies are "
				    "not exported (they are jobs of this machine)\n", id);
			cluster_plan_free(&p);
		}
		json_decref(body);
		batch_opts_free(&o);
	}
	json_decref(resp);
	free(dir);
	gf_config_free(&cfg);
	return rc;
}

static int cluster_exec(int argc, char **argv)
{
	struct opt_parser p;
	struct gf_err e;
	struct sbuf ids = { 0 };
	const char *val, *name = NULL, *dir = ".", *verb = NULL;
	int id, rc;

	if (argc >= 2 && !strcmp(argv[1], "completion"))
		return cmd_completion(&cmd_cluster, argc - 1, argv + 1);
	opt_init(&p, argc, argv, 1, cluster_opts, sizeof cluster_opts / sizeof cluster_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			sbuf_free(&ids);
			return cmd_usage_error("gflow cluster", &e);
		case OPT_POSITIONAL:
			if (!verb)
				verb = val;
			else
				sbuf_addf(&ids, "%s%s", ids.len ? "," : "", val);
			break;
		case K_CLUSTER:
			name = val;
			break;
		case K_DIR:
			dir = val;
			break;
		case K_HELP:
			sbuf_free(&ids);
			fputs(cluster_help, stdout);
			return EXIT_OK;
		}
	}
	if (verb && !strcmp(verb, "sync") && !ids.len) {
		rc = remote_sync("gflow cluster", name, 1) ? EXIT_FAIL : EXIT_OK;
	} else if (verb && !strcmp(verb, "export") && ids.len && name) {
		rc = export_jobs(sbuf_str(&ids), name, dir);
	} else {
		rc = cmd_usagef("gflow cluster", "usage: gflow cluster sync [--cluster NAME] | "
		    "gflow cluster export IDS --cluster NAME [--dir DIR]");
	}
	sbuf_free(&ids);
	return rc;
}

const struct command cmd_cluster = {
	"cluster", "gcluster", "jobs on Slurm clusters: sync, export", cluster_exec,
	"sync export completion --cluster --dir --help",
};
