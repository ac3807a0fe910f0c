/* cluster.c — gbatch --cluster's translation of a job into a Slurm batch
 * script, shell quoting, path mapping and Slurm's states (see cluster.h and
 * docs/slurm.md). Pure: no process, file or daemon is touched here. */
#include "cluster.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytes.h"
#include "util.h"

char *cluster_shquote(const char *s)
{
	struct sbuf b = { 0 };
	const char *p;

	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-+=.,/:@%") == strlen(s))
		return xstrdup(s);
	sbuf_addc(&b, '\'');
	for (p = s; *p; p++) {
		if (*p == '\'')
			sbuf_adds(&b, "'\\''");
		else
			sbuf_addc(&b, *p);
	}
	sbuf_addc(&b, '\'');
	return sbuf_take(&b);
}

char *cluster_map_path(const struct gf_cluster *k, const char *path)
{
	size_t i, best = 0, len;
	const char *to = NULL;
	struct sbuf b = { 0 };

	for (i = 0; k && i < k->n_map; i++) {
		len = strlen(k->map_from[i]);
		while (len > 1 && k->map_from[i][len - 1] == '/')
			len--;
		if (strncmp(path, k->map_from[i], len) ||
		    (path[len] && path[len] != '/' && len > 1))
			continue;
		if (len > best) {
			best = len;
			to = k->map_to[i];
		}
	}
	if (!to)
		return xstrdup(path);
	sbuf_adds(&b, to);
	len = strlen(to);
	if (path[best] && len && to[len - 1] == '/' && path[best] == '/')
		best++;
	sbuf_adds(&b, path + best);
	return sbuf_take(&b);
}

void cluster_slurm_time(int64_t secs, char *out, size_t size, int *rounded)
{
	int64_t mins = (secs + 59) / 60;

	*rounded = secs % 60 != 0;
	snprintf(out, size, "%lld-%02lld:%02lld:00", (long long)(mins / 1440),
	    (long long)(mins / 60 % 24), (long long)(mins % 60));
}

char *cluster_array_list(const int64_t *ids, size_t n, int64_t max_concurrent)
{
	struct sbuf b = { 0 };
	size_t i = 0, j;

	while (i < n) {
		for (j = i; j + 1 < n && ids[j + 1] == ids[j] + 1; j++)
			;
		sbuf_addf(&b, "%s%lld", i ? "," : "", (long long)ids[i]);
		if (j > i)
			sbuf_addf(&b, "-%lld", (long long)ids[j]);
		i = j + 1;
	}
	if (max_concurrent > 0)
		sbuf_addf(&b, "%%%lld", (long long)max_concurrent);
	return sbuf_take(&b);
}

const char *cluster_state_code(const char *st)
{
	static const struct {
		const char *slurm, *code;
	} map[] = {
		{ "PENDING", "PD" }, { "REQUEUED", "PD" }, { "REQUEUE_HOLD", "PD" },
		{ "REQUEUE_FED", "PD" }, { "RESV_DEL_HOLD", "PD" },
		{ "CONFIGURING", "R" }, { "RUNNING", "R" }, { "COMPLETING", "R" },
		{ "SUSPENDED", "R" }, { "STOPPED", "R" }, { "RESIZING", "R" },
		{ "SIGNALING", "R" }, { "STAGE_OUT", "R" },
		{ "COMPLETED", "CD" },
		{ "FAILED", "F" }, { "OUT_OF_MEMORY", "F" }, { "NODE_FAIL", "F" },
		{ "BOOT_FAIL", "F" }, { "DEADLINE", "F" }, { "PREEMPTED", "F" },
		{ "REVOKED", "F" }, { "SPECIAL_EXIT", "F" },
		{ "CANCELLED", "CA" },
		{ "TIMEOUT", "TO" },
	};
	size_t i, n = strcspn(st, " +");

	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strlen(map[i].slurm) == n && !strncmp(st, map[i].slurm, n))
			return map[i].code;
	return NULL;
}

size_t cluster_split(char *line, char sep, char **fields, size_t max)
{
	size_t n = 0;
	char *p = line, *q;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		fields[n++] = p;
		if (!(q = strchr(p, sep)))
			break;
		*q = '\0';
		p = q + 1;
	}
	return n;
}

/* ---------- the plan ---------- */

static void lossy(struct cluster_plan *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void lossy(struct cluster_plan *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	p->lossy = xrealloc(p->lossy, (p->nlossy + 1) * sizeof *p->lossy);
	p->lossy[p->nlossy++] = xstrdup(buf);
}

/* A value on an #SBATCH line: sbatch splits those at blanks and reads
 * double quotes, so a value holding either is quoted, and one holding a
 * double quote, a backslash or a control character is refused. */
static int sbatch_line(struct sbuf *b, const char *opt, const char *val,
    const char *what, struct gf_err *e)
{
	const char *p;

	for (p = val; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return gf_err_set(e, "%s '%s': a Slurm #SBATCH line cannot "
			    "carry '\"', '\\' or control characters", what, val);
	if (strpbrk(val, " \t'"))
		sbuf_addf(b, "#SBATCH --%s=\"%s\"\n", opt, val);
	else
		sbuf_addf(b, "#SBATCH --%s=%s\n", opt, val);
	return 0;
}

/* notify_on events → Slurm's --mail-type. */
static char *mail_types(const char *events, struct cluster_plan *p)
{
	static const struct {
		const char *ev, *type;
	} map[] = {
		{ "job_started", "BEGIN" }, { "job_completed", "END" },
		{ "job_cancelled", "END" }, { "job_failed", "FAIL" },
		{ "job_timeout", "TIME_LIMIT" },
	};
	struct sbuf b = { 0 }, lost = { 0 };
	const char *q = events;

	if (!events)	/* gflow's default: every end */
		return xstrdup("END");
	while (*q) {
		size_t n = strcspn(q, ","), i;
		const char *type = NULL;

		for (i = 0; i < sizeof map / sizeof map[0] && !type; i++)
			if (strlen(map[i].ev) == n && !strncmp(q, map[i].ev, n))
				type = map[i].type;
		if (type && !strstr(sbuf_str(&b), type))
			sbuf_addf(&b, "%s%s", b.len ? "," : "", type);
		else if (!type)
			sbuf_addf(&lost, "%s%.*s", lost.len ? "," : "", (int)n, q);
		q += n + (q[n] == ',');
	}
	if (lost.len)
		lossy(p, "--notify-on %s: Slurm mails only when a job begins, "
		    "ends, fails or reaches its time limit; dropped", sbuf_str(&lost));
	sbuf_free(&lost);
	if (!b.len) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_take(&b);
}

int cluster_machine_var(const char *kv)
{
	static const char *const names[] = {
		"HOME", "PATH", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD",
		"HOSTNAME", "HOST", "TERM", "DISPLAY", "MAIL", "SHLVL", "_",
		"LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES",
		"TMPDIR", "LANG", "LC_ALL", "TZ",
	};
	static const char *const prefixes[] = {
		"SSH_", "XDG_", "TMUX", "SLURM_", "GFLOW_", "DBUS_", "WAYLAND_",
		"CONDA_", "BASH_FUNC_",
	};
	size_t i, n = strcspn(kv, "=");

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == n && !strncmp(kv, names[i], n))
			return 1;
	for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (!strncmp(kv, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* A valid shell variable name up to '='. */
static int shell_name(const char *kv)
{
	size_t n = strcspn(kv, "="), i;

	if (!n || !kv[n] || (kv[0] >= '0' && kv[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!((kv[i] >= 'a' && kv[i] <= 'z') || (kv[i] >= 'A' && kv[i] <= 'Z') ||
		    (kv[i] >= '0' && kv[i] <= '9') || kv[i] == '_'))
			return 0;
	return 1;
}

/* A job's command words (byte strings), quoted and joined by blanks; word
 * number `at` (the script) is `shipped` when that is not NULL. */
static int command_line(const json_t *cmd, const struct gf_cluster *k,
    size_t at, const char *shipped, struct sbuf *b, struct gf_err *e)
{
	size_t i;

	for (i = 0; i < json_array_size(cmd); i++) {
		char *w = gf_cstr_from_json(json_array_get(cmd, i), "command word", e);
		char *m, *q;

		if (!w)
			return -1;
		/* paths of this machine (the script, absolute arguments under
		 * a mapped prefix) become the cluster's */
		if (shipped && i == at)
			m = xstrdup(shipped);
		else
			m = w[0] == '/' ? cluster_map_path(k, w) : xstrdup(w);
		q = cluster_shquote(m);
		sbuf_addf(b, "%s%s", i ? " " : "", q);
		free(q);
		free(m);
		free(w);
	}
	return 0;
}

static void add_header(struct sbuf *b, const struct gf_cluster *k)
{
	sbuf_adds(b, "#!/bin/bash\n");
	sbuf_addf(b, "# Written by gflow (gbatch --cluster %s) for Slurm.\n", k->name);
}

static int add_resources(struct sbuf *b, const struct gf_cluster *k,
    const struct batch_opts *o, struct cluster_plan *p, struct gf_err *e)
{
	char buf[64];
	int rounded;

	if (k->partition && sbatch_line(b, "partition", k->partition, "partition", e))
		return -1;
	if (k->account && sbatch_line(b, "account", k->account, "account", e))
		return -1;
	if (k->qos && sbatch_line(b, "qos", k->qos, "qos", e))
		return -1;
	if (o->gpus > 0)
		sbuf_addf(b, "#SBATCH --gres=gpu:%lld\n", (long long)o->gpus);
	if (o->shared > 0 || o->gpu_memory_mb > 0)
		lossy(p, "--shared/--gpu-memory: Slurm gives the job whole GPUs");
	if (o->memory_mb > 0)
		sbuf_addf(b, "#SBATCH --mem=%lldM\n", (long long)o->memory_mb);
	if (o->cpus > 1)
		sbuf_addf(b, "#SBATCH --cpus-per-task=%lld\n", (long long)o->cpus);
	if (o->time_limit_secs > 0) {
		cluster_slurm_time(o->time_limit_secs, buf, sizeof buf, &rounded);
		sbuf_addf(b, "#SBATCH --time=%s\n", buf);
		if (rounded)
			lossy(p, "--time: Slurm counts whole minutes; the limit is %s",
			    buf);
	}
	if (o->priority >= 0)
		lossy(p, "--priority: Slurm orders the cluster's jobs itself; not "
		    "carried over");
	if (o->max_retries > 0)
		lossy(p, "--max-retries: not carried over (Slurm does not resubmit "
		    "failed jobs)");
	return 0;
}

static int add_scheduling(struct sbuf *b, const struct batch_opts *o,
    const struct cluster_deps *deps, struct cluster_plan *p, struct gf_err *e)
{
	size_t i;

	if (o->project) {
		struct sbuf c = { 0 };
		int rc;

		sbuf_addf(&c, "gflow-project=%s", o->project);
		rc = sbatch_line(b, "comment", sbuf_str(&c), "--project", e);
		sbuf_free(&c);
		if (rc)
			return -1;
	}
	if (deps && deps->n) {
		int any = o->dep_mode && !strcmp(o->dep_mode, "any");

		sbuf_adds(b, "#SBATCH --dependency=afterok");
		for (i = 0; i < deps->n; i++)
			sbuf_addf(b, "%s%s", i == 0 ? ":" : any ? "?afterok:" : ":",
			    deps->slurm_ids[i]);
		sbuf_addc(b, '\n');
		sbuf_addf(b, "#SBATCH --kill-on-invalid-dep=%s\n",
		    o->auto_cancel == 0 ? "no" : "yes");
	}
	if (o->begin_at > 0) {
		char when[64];
		time_t t = (time_t)o->begin_at;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		sbuf_addf(b, "#SBATCH --begin=%s\n", when);
		lossy(p, "--begin: %s is this machine's local time; Slurm reads it "
		    "in the cluster's", when);
	}
	if (o->hold)
		sbuf_adds(b, "#SBATCH --hold\n");
	if (o->notify_email) {
		char *types = mail_types(o->notify_on, p);

		if (sbatch_line(b, "mail-user", o->notify_email, "--notify-email", e)) {
			free(types);
			return -1;
		}
		if (types)
			sbuf_addf(b, "#SBATCH --mail-type=%s\n", types);
		free(types);
	} else if (o->notify_on) {
		lossy(p, "--notify-on without --notify-email: Slurm mails only to "
		    "an address; dropped");
	}
	return 0;
}

static void add_environment(struct sbuf *b, const json_t *body,
    int export_env, struct cluster_plan *p);

int cluster_plan(const struct gf_cluster *k, const struct batch_opts *o,
    const json_t *body, const struct cluster_deps *deps,
    const char *script_text, int export_env, const char *dir,
    const char *stamp, struct cluster_plan *p, struct gf_err *e)
{
	const json_t *jobs = json_object_get(body, "jobs"), *first;
	struct sbuf b = { 0 }, pb = { 0 };
	char *cwd = NULL, *s;
	size_t i, n = json_array_size(jobs);
	int sweep = o->ndims > 0 && !o->has_array;
	const char *name, *conda;
	size_t script_at = 0;

	memset(p, 0, sizeof *p);
	if (!n)
		return gf_err_set(e, "nothing to submit");
	if (!dir || dir[0] != '/')
		return gf_err_set(e, "[clusters.%s] remote_dir: an absolute path is "
		    "needed", k->name);
	first = json_array_get(jobs, 0);
	p->script_path = xmalloc(strlen(dir) + strlen(stamp) + 16);
	sprintf(p->script_path, "%s/%s.sbatch", dir, stamp);
	p->log_pattern = xmalloc(strlen(dir) + strlen(stamp) + 16);
	sprintf(p->log_pattern, "%s/%s-%s.out", dir, stamp,
	    o->has_array || sweep ? "%A_%a" : "%j");

	if (o->script && script_text) {	/* the script goes with the job */
		p->job_path = xmalloc(strlen(dir) + strlen(stamp) + 16);
		sprintf(p->job_path, "%s/%s.job", dir, stamp);
		p->job_text = xstrdup(script_text);
		script_at = (o->interp[0] != NULL) + (o->interp[1] != NULL);
	}
	add_header(&b, k);
	/* names: the job's own; array tasks and sweep points share it */
	name = o->name ? o->name : jstr(first, "name");
	if (o->has_array || sweep) {
		if (o->name_template)
			lossy(p, "--name-template: Slurm gives every task of an "
			    "array the same name");
		if (!o->name) {
			s = xstrdup(name ? name : "job");
			/* "<base>-<label>": the base is what all share */
			if (strrchr(s, '-'))
				*strrchr(s, '-') = '\0';
			if (sbatch_line(&b, "job-name", s, "--name", e)) {
				free(s);
				goto fail;
			}
			free(s);
			name = NULL;
		}
	}
	if (name && sbatch_line(&b, "job-name", name, "--name", e))
		goto fail;
	if (sbatch_line(&b, "output", p->log_pattern, "remote_dir", e))
		goto fail;
	if (!(s = gf_cstr_from_json(json_object_get(body, "cwd"), "cwd", e)))
		goto fail;
	cwd = cluster_map_path(k, s);
	free(s);
	if (sbatch_line(&b, "chdir", cwd, "the working directory", e))
		goto fail;
	if (add_resources(&b, k, o, p, e) || add_scheduling(&b, o, deps, p, e))
		goto fail;
	if (o->has_array) {
		p->ntasks = o->array.n;
		p->tasks = xcalloc(n, sizeof *p->tasks);
		memcpy(p->tasks, o->array.ids, n * sizeof *p->tasks);
		s = cluster_array_list(o->array.ids, o->array.n,
		    o->max_concurrent > 0 ? o->max_concurrent : o->array.max_concurrent);
		sbuf_addf(&b, "#SBATCH --array=%s\n", s);
		free(s);
	} else if (sweep) {
		p->ntasks = n;
		p->tasks = xcalloc(n, sizeof *p->tasks);
		for (i = 0; i < n; i++)
			p->tasks[i] = (int64_t)i;
		sbuf_addf(&b, "#SBATCH --array=0-%zu", n - 1);
		if (o->max_concurrent > 0)
			sbuf_addf(&b, "%%%lld", (long long)o->max_concurrent);
		sbuf_addc(&b, '\n');
	} else if (o->max_concurrent > 0) {
		lossy(p, "--max-concurrent: a single job; ignored");
	}
	sbuf_addf(&b, "\n# gflow's variables, from Slurm's\n");
	sbuf_addf(&b, "export GFLOW_JOB_ID=\"$SLURM_JOB_ID\"\n");
	sbuf_addf(&b, "export GFLOW_JOB_NAME=\"$SLURM_JOB_NAME\"\n");
	sbuf_addf(&b, "export GFLOW_ARRAY_TASK_ID=\"%s\"\n",
	    o->has_array ? "$SLURM_ARRAY_TASK_ID" : "0");
	sbuf_addf(&b, "export GFLOW_CLUSTER=%s\n", k->name);
	if (k->prelude)
		sbuf_addf(&b, "\n# prelude of [clusters.%s]\n%s%s", k->name,
		    k->prelude, k->prelude[strlen(k->prelude) - 1] == '\n' ? "" : "\n");
	add_environment(&b, body, export_env, p);
	conda = o->conda_env;	/* $CONDA_DEFAULT_ENV is this machine's */
	if (conda) {
		char *q = cluster_shquote(conda);

		sbuf_addf(&b, "\n# --conda-env\n"
		    "eval \"$(conda shell.bash hook)\" && conda activate %s || "
		    "{ echo \"gflow: cannot activate the conda environment %s\" >&2; "
		    "exit 1; }\n", q, q);
		free(q);
	}
	sbuf_adds(&b, "\n# the job\n");
	if (sweep) {
		char *q = NULL;

		p->params_path = xmalloc(strlen(dir) + strlen(stamp) + 16);
		sprintf(p->params_path, "%s/%s.params", dir, stamp);
		for (i = 0; i < n; i++) {
			if (command_line(json_object_get(json_array_get(jobs, i),
			    "command"), k, script_at, p->job_path, &pb, e))
				goto fail;
			sbuf_addc(&pb, '\n');
		}
		q = cluster_shquote(p->params_path);
		sbuf_addf(&b, "# line N+1 of the parameters file: sweep point N's "
		    "command\nline=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" %s)\n"
		    "eval \"set -- $line\"\nexec \"$@\"\n", q);
		free(q);
		p->params = sbuf_take(&pb);
	} else {
		sbuf_adds(&b, "exec ");
		if (command_line(json_object_get(first, "command"), k, script_at,
		    p->job_path, &b, e))
			goto fail;
		sbuf_addc(&b, '\n');
	}
	p->script = sbuf_take(&b);
	free(cwd);
	return 0;
fail:
	sbuf_free(&b);
	sbuf_free(&pb);
	free(cwd);
	cluster_plan_free(p);
	return -1;
}

/* --export-env: the captured variables, but those of this machine. */
static void add_environment(struct sbuf *b, const json_t *body,
    int export_env, struct cluster_plan *p)
{
	const json_t *env = json_object_get(body, "env");
	size_t i, skipped = 0;
	struct gf_err e;

	if (!export_env)
		return;
	sbuf_adds(b, "\n# --export-env: this machine's environment\n");
	for (i = 0; i < json_array_size(env); i++) {
		char *kv = gf_cstr_from_json(json_array_get(env, i), "env", &e), *q;

		if (!kv)
			continue;
		if (!shell_name(kv) || cluster_machine_var(kv)) {
			skipped++;
			free(kv);
			continue;
		}
		q = cluster_shquote(kv);
		sbuf_addf(b, "export %s\n", q);
		free(q);
		free(kv);
	}
	if (skipped)
		lossy(p, "--export-env: %zu variables of this machine (PATH, HOME, "
		    "SSH_*, ...) stay behind", skipped);
}

void cluster_plan_free(struct cluster_plan *p)
{
	size_t i;

	free(p->script);
	free(p->params);
	free(p->script_path);
	free(p->params_path);
	free(p->job_path);
	free(p->job_text);
	free(p->log_pattern);
	for (i = 0; i < p->nlossy; i++)
		free(p->lossy[i]);
	free(p->lossy);
	free(p->tasks);
	memset(p, 0, sizeof *p);
}

/* ---------- what squeue and sacct say ---------- */

static double slurm_time(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof tm);
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || *end)
		return 0;
	tm.tm_isdst = -1;
	return (double)mktime(&tm);
}

static void add_state(struct slurm_state **v, size_t *n, const char *id,
    const char *state, const char *reason)
{
	struct slurm_state *s;
	const char *code = cluster_state_code(state);
	size_t sl = strcspn(state, " +");

	if (!code)
		return;
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	s = &(*v)[(*n)++];
	memset(s, 0, sizeof *s);
	s->id = xstrdup(id);
	s->code = code;
	if (!strcmp(code, "PD") && reason && (!strcmp(reason, "JobHeldUser") ||
	    !strcmp(reason, "JobHeldAdmin")))
		s->code = "H";
	if (!strcmp(code, "PD") || !strcmp(code, "H") || !strcmp(code, "CA")) {
		if (reason && *reason && strcmp(reason, "None") && strcmp(reason, "(null)"))
			s->reason = xstrdup(reason);
	} else if (strcmp(code, "R") && strcmp(code, "CD")) {
		/* F and TO: which of Slurm's ends it was */
		char buf[96];

		snprintf(buf, sizeof buf, "Slurm: %.*s", (int)sl, state);
		s->reason = xstrdup(buf);
	}
}

static int in_ids(char *const *ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return 1;
	return 0;
}

int cluster_knows(const struct slurm_state *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return 1;
	return 0;
}

void cluster_parse_squeue(char *text, char *const *ids, size_t nids,
    struct slurm_state **v, size_t *n)
{
	char *line = text, *next, *f[8], id[96];

	for (; line && *line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (cluster_split(line, '|', f, 8) < 7)
			continue;
		if (!strcmp(f[1], "N/A"))
			snprintf(id, sizeof id, "%s", f[0]);
		else
			snprintf(id, sizeof id, "%s_%s", f[0], f[1]);
		if (!in_ids(ids, nids, id) || cluster_knows(*v, *n, id))
			continue;
		add_state(v, n, id, f[2], f[3]);
		if (*n && !strcmp((*v)[*n - 1].id, id)) {
			struct slurm_state *s = &(*v)[*n - 1];
			char *endp;
			long st = strtol(f[4], &endp, 10);

			if (*endp == '\0' && f[4][0] && strcmp(s->code, "PD") &&
			    strcmp(s->code, "H") && strcmp(s->code, "R")) {
				s->has_exit = 1;
				s->exit_code = (int)((st >> 8) & 0xff);
				s->exit_signal = (int)(st & 0x7f);
			}
			s->start = slurm_time(f[5]);
			s->end = slurm_time(f[6]);
		}
	}
}

void cluster_parse_sacct(char *text, char *const *ids, size_t nids,
    struct slurm_state **v, size_t *n)
{
	char *line = text, *next, *f[6];

	for (; line && *line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (cluster_split(line, '|', f, 6) < 5 || !in_ids(ids, nids, f[0]) ||
		    cluster_knows(*v, *n, f[0]))
			continue;
		add_state(v, n, f[0], f[1], NULL);
		if (*n && !strcmp((*v)[*n - 1].id, f[0])) {
			struct slurm_state *s = &(*v)[*n - 1];
			int code, sig;

			if (sscanf(f[2], "%d:%d", &code, &sig) == 2 && strcmp(s->code, "PD") &&
			    strcmp(s->code, "R")) {
				s->has_exit = 1;
				s->exit_code = code;
				s->exit_signal = sig;
			}
			s->start = slurm_time(f[3]);
			s->end = slurm_time(f[4]);
		}
	}
}

void cluster_states_free(struct slurm_state *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].id);
		free(s[i].reason);
	}
	free(s);
}
