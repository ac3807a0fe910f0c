/* api.c — the HTTP+JSON API (docs/api.md): listeners on the Unix socket and
 * TCP, the caller's identity, request decoding and validation, and routing
 * to the state machine in jobs.c. A success answer is sent only after the
 * change is committed to the store. */
#include "server.h"
#include "verbose.h"

#include <dirent.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bytes.h"
#include "execlimit.h"
#include "parse.h"

#define MAX_BODY (8 * 1024 * 1024)
#define MAX_BATCH 100000

struct caller {
	uid_t uid;		/* (uid_t)-1: anonymous (TCP without a token) */
	bool may_write;		/* Unix socket, or TCP with a token */
	bool admin;		/* root, [daemon] admin_group, a personal daemon's user */
	bool local;		/* over the Unix socket */
};

static int to_evbuffer(const char *buf, size_t size, void *data)
{
	return evbuffer_add(data, buf, size);
}

static void reply(struct evhttp_request *req, int code, json_t *body)
{
	struct evbuffer *b = evbuffer_new();

	json_dump_callback(body, to_evbuffer, b, JSON_COMPACT);
	evbuffer_add(b, "\n", 1);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, code, code < 300 ? "OK" : code == 404 ? "Not Found" : "Error", b);
	evbuffer_free(b);
	json_decref(body);
}

__attribute__((format(printf, 3, 4))) static void reply_err(struct evhttp_request *req, int code,
							   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	reply(req, code, json_pack("{s:s}", "error", msg));
}

/* A change the store refused, in its own words: 507 when the disk is full. */
static void reply_store_err(struct server *s, struct evhttp_request *req, const struct gf_err *e)
{
	reply_err(req, store_full(s->store) ? 507 : 500, "%s", e->msg);
}

void api_reply(struct evhttp_request *req, int code, json_t *body)
{
	reply(req, code, body);
}

void api_reply_err(struct evhttp_request *req, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	reply_err(req, code, "%s", msg);
}

void api_reply_store_err(struct server *s, struct evhttp_request *req, const struct gf_err *e)
{
	reply_store_err(s, req, e);
}

/* ---- decoding helpers -------------------------------------------------- */

static json_t *parse_body(const char *data, size_t len, struct gf_err *e)
{
	json_error_t jerr;
	json_t *o;

	if (len == 0) {
		gf_err_set(e, "the request has no body (expected a JSON object)");
		return NULL;
	}
	o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		if (strstr(jerr.text, "NUL"))
			gf_err_set(e, "invalid JSON at line %d, column %d: NUL bytes (\\u0000) are not allowed in strings",
				   jerr.line, jerr.column);
		else
			gf_err_set(e, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		gf_err_set(e, "the request body must be a JSON object");
		return NULL;
	}
	return o;
}

static json_t *read_body(struct evhttp_request *req, struct gf_err *e)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);

	return parse_body(len ? (const char *)evbuffer_pullup(in, -1) : "", len, e);
}

static int check_fields(json_t *o, const char *const *allowed, const char *what, struct gf_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		bool ok = false;

		for (const char *const *a = allowed; *a && !ok; a++)
			ok = !strcmp(*a, k);
		if (!ok)
			return gf_err_set(e, "unknown field '%s' in %s", k, what);
	}
	return 0;
}

/* Integer field in [min,max]; absent or null leaves *out alone. */
static int get_int(json_t *o, const char *k, int64_t min, int64_t max, int64_t *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return gf_err_set(e, "'%s' must be an integer", k);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return gf_err_set(e, "'%s' must be between %lld and %lld, got %lld", k, (long long)min,
				  (long long)max, (long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

static int get_bool(json_t *o, const char *k, bool *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return gf_err_set(e, "'%s' must be true or false", k);
	*out = json_is_true(v);
	return 0;
}

/* Text field (UTF-8, as all JSON strings) without NUL bytes or control
 * characters (C0, DEL, C1), at most max bytes. */
static int get_str(json_t *o, const char *k, size_t max, char **out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);
	const char *s;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return gf_err_set(e, "'%s' must be a string", k);
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return gf_err_set(e, "'%s' contains a NUL byte", k);
	if (json_string_length(v) > max)
		return gf_err_set(e, "'%s' is longer than %zu bytes", k, max);
	if (!gf_text_printable(s, json_string_length(v)))
		return gf_err_set(e, "'%s' contains a control character", k);
	job_set_str(out, s);
	return 0;
}

/* Byte-string field (a path): a string or {"base64": ...} (docs/api.md),
 * without NUL bytes, at most max bytes. */
static int get_bytes(json_t *o, const char *k, size_t max, char **out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);
	char what[64], *s;

	if (!v || json_is_null(v))
		return 0;
	snprintf(what, sizeof what, "'%s'", k);
	if (!(s = gf_cstr_from_json(v, what, e)))
		return -1;
	if (strlen(s) > max) {
		free(s);
		return gf_err_set(e, "'%s' is longer than %zu bytes", k, max);
	}
	free(*out);
	*out = s;
	return 0;
}

/* A time in epoch seconds: from 0 to the year 9999. */
static int get_time(json_t *o, const char *k, double *out, struct gf_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
	    json_number_value(v) > 253402300799.0)
		return gf_err_set(e, "'%s' must be a time in epoch seconds (0 to the year 9999)", k);
	*out = json_number_value(v);
	return 0;
}

/* A job reference item: integer or "42"/"@"/"@~N". */
static int64_t ref_id(struct server *s, uid_t uid, json_t *item, struct gf_err *e)
{
	char num[32];

	if (json_is_integer(item)) {
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(item));
		return jobs_resolve_ref(s, uid, num, e);
	}
	if (json_is_string(item) && strlen(json_string_value(item)) == json_string_length(item))
		return jobs_resolve_ref(s, uid, json_string_value(item), e);
	return gf_err_set(e, "a job reference must be an id or \"@\", \"@~N\"");
}

/* ---- identity ---------------------------------------------------------- */

static bool token_ok(struct server *s, struct evhttp_request *req)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	size_t n = strlen(s->token), diff = 0;

	if (!h || strncmp(h, "Bearer ", 7))
		return false;
	h += 7;
	if (strlen(h) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(h[i] ^ s->token[i]);
	return diff == 0;
}

static struct caller identify(struct server *s, struct evhttp_request *req, bool unix_sock)
{
	struct caller c = { .uid = (uid_t)-1, .may_write = false, .local = unix_sock };
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");

	if (unix_sock) {
		struct evhttp_connection *conn = evhttp_request_get_connection(req);
		struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
		struct ucred cred;
		socklen_t len = sizeof cred;

		if (bev && getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			c.uid = cred.uid;
			c.may_write = true;
		}
	} else if (token_ok(s, req)) {
		c.uid = s->uid;	/* the daemon's own token */
		c.may_write = true;
	} else if (h && !strncmp(h, "Bearer ", 7) && auth_token_user(s, h + 7, &c.uid))
		c.may_write = true;	/* a user's token acts as that user */
	c.admin = c.uid != (uid_t)-1 && auth_is_admin(s, c.uid);
	return c;
}

/* May the caller change job j (or see all of it)? Its owner or an admin. */
static bool owns(const struct caller *c, const struct job *j)
{
	return c->admin || (c->uid != (uid_t)-1 && c->uid == j->uid);
}

/* ---- submission -------------------------------------------------------- */

static const char *const spec_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "project", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "hold",
	"array_task_id", "max_concurrent", "max_retries", "params", "notify_email", "notify_on", NULL,
};

static int check_project(struct server *s, struct job *j, struct gf_err *e)
{
	if (j->project) {
		char *p = j->project, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		memmove(j->project, p, strlen(p) + 1);
		if (!*j->project)
			job_set_str(&j->project, NULL);
		else if (strlen(j->project) > 64)
			return gf_err_set(e, "project name is longer than 64 characters");
	}
	if (!j->project && s->cfg.require_project)
		return gf_err_set(e, "a project is required on this machine (--project NAME)");
	if (j->project && s->cfg.n_known_projects) {
		for (size_t i = 0; i < s->cfg.n_known_projects; i++)
			if (!strcmp(s->cfg.known_projects[i], j->project))
				return 0;
		return gf_err_set(e, "project '%s' is not one of the known projects", j->project);
	}
	return 0;
}

static int spec_deps(struct server *s, uid_t uid, json_t *spec, struct job *j, struct gf_err *e)
{
	json_t *d = json_object_get(spec, "depends_on"), *item;
	char *mode = NULL;
	size_t i;

	if (get_str(spec, "dep_mode", 8, &mode, e))
		return -1;
	if (mode) {
		bool ok = !strcmp(mode, "all") || !strcmp(mode, "any");

		j->dep_any = !strcmp(mode, "any");
		free(mode);
		if (!ok)
			return gf_err_set(e, "'dep_mode' must be \"all\" or \"any\"");
	}
	if (!d || json_is_null(d))
		return 0;
	if (!json_is_array(d))
		return gf_err_set(e, "'depends_on' must be an array of job references");
	if (json_array_size(d) > 10000)
		return gf_err_set(e, "'depends_on' has more than 10000 items");
	j->deps = calloc(json_array_size(d) + 1, sizeof *j->deps);
	if (!j->deps)
		abort();
	json_array_foreach(d, i, item) {
		int64_t id = ref_id(s, uid, item, e);

		if (id < 0)
			return gf_err_prefix(e, "dependency");
		j->deps[j->ndeps++] = jobs_latest_attempt(s, id);
	}
	return 0;
}

/* The job's final execve carries its argv and environment: refuse now what
 * the kernel would refuse at start (execlimit.h). `env` is what the
 * environment alone counts. */
static int check_exec_size(const struct job *j, const struct gf_execsize *env, struct gf_err *e)
{
	struct gf_execsize x = *env;

	for (size_t i = 0; j->argv[i]; i++)
		if (gf_execsize_arg(&x, j->argv[i], i, e))
			return -1;
	return gf_execsize_check(&x, gf_arg_max(), e);
}

/* The name of a job submitted without one: the base name of its script or
 * program, escaped where it is not printable text, cut to fit. */
static void default_name(struct job *j)
{
	const char *w = j->script ? j->script : j->argv[0], *slash = strrchr(w, '/');
	char name[201];

	if (slash && slash[1])
		w = slash + 1;
	gf_escape(name, sizeof name, w, strlen(w), 0);
	job_set_str(&j->name, name);
}

static struct job *spec_to_job(struct server *s, uid_t uid, json_t *spec, const char *cwd,
			       const struct gf_execsize *env, struct gf_err *e)
{
	struct job *j = job_new();
	int64_t v;
	bool hold = false;
	char user[256];
	json_t *params;

	if (!json_is_object(spec)) {
		gf_err_set(e, "each job must be a JSON object");
		goto fail;
	}
	if (check_fields(spec, spec_fields, "job", e))
		goto fail;
	j->argv = strv_from_json(json_object_get(spec, "command"), e, "command");
	if (!j->argv)
		goto fail;
	if (!j->argv[0] || !j->argv[0][0]) {
		gf_err_set(e, "'command' is empty: nothing to run");
		goto fail;
	}
	if (get_str(spec, "name", 200, &j->name, e) || get_bytes(spec, "script", 4096, &j->script, e) ||
	    get_str(spec, "project", 1024, &j->project, e) ||
	    get_str(spec, "conda_env", 256, &j->conda_env, e) || get_bool(spec, "shared", &j->shared, e) ||
	    get_bool(spec, "auto_cancel", &j->auto_cancel, e) || get_bool(spec, "hold", &hold, e) ||
	    get_time(spec, "begin_at", &j->begin_at, e) ||
	    get_str(spec, "notify_email", 1024, &j->notify_email, e) ||
	    get_str(spec, "notify_on", 1024, &j->notify_on, e) || notify_check_job(s, j, e))
		goto fail;
	if (j->name && !j->name[0]) {
		gf_err_set(e, "'name' is empty");
		goto fail;
	}
	if (j->script && j->script[0] != '/') {
		char shown[128];

		gf_escape(shown, sizeof shown, j->script, strlen(j->script), 0);
		gf_err_set(e, "'script' must be an absolute path, got '%s'", shown);
		goto fail;
	}
	v = 0;
	if (get_int(spec, "gpus", 0, GFLOW_MAX_GPUS, &v, e))
		goto fail;
	j->gpus = (int)v;
	if (get_int(spec, "gpu_memory_mb", 1, INT64_C(1) << 40, &j->gpu_memory_mb, e) ||
	    get_int(spec, "memory_mb", 1, INT64_C(1) << 40, &j->memory_mb, e) ||
	    get_int(spec, "time_limit_secs", 1, 366LL * 86400, &j->time_limit_secs, e) ||
	    get_int(spec, "array_task_id", 0, INT64_C(1) << 40, &j->array_task_id, e))
		goto fail;
	v = 10;
	if (get_int(spec, "priority", 0, 255, &v, e))
		goto fail;
	j->priority = (int)v;
	v = 0;
	if (get_int(spec, "max_concurrent", 0, 1000000, &v, e))
		goto fail;
	j->max_concurrent = (int)v;
	v = 0;
	if (get_int(spec, "max_retries", 0, 100, &v, e))
		goto fail;
	j->max_retries = (int)v;
	params = json_object_get(spec, "params");
	if (params && !json_is_null(params)) {
		const char *k;
		json_t *pv;

		if (!json_is_object(params)) {
			gf_err_set(e, "'params' must be an object of strings");
			goto fail;
		}
		json_object_foreach(params, k, pv)
			if (!json_is_string(pv)) {
				gf_err_set(e, "'params' value of '%s' must be a string", k);
				goto fail;
			}
		json_decref(j->params);
		j->params = json_deep_copy(params);
	}
	if (j->shared && !j->gpu_memory_mb) {
		gf_err_set(e, "--shared needs --gpu-memory: shared jobs must say how much GPU memory they use");
		goto fail;
	}
	if (j->shared && !j->gpus) {
		gf_err_set(e, "--shared needs --gpus 1 or more");
		goto fail;
	}
	if (spec_deps(s, uid, spec, j, e) || check_project(s, j, e) || jobs_check_feasible(s, j, e) ||
	    check_exec_size(j, env, e))
		goto fail;
	if (!j->name)
		default_name(j);
	j->uid = uid;
	job_set_str(&j->user, job_user_name(uid, user, sizeof user));
	job_set_str(&j->cwd, cwd);
	j->state = hold ? JS_HOLD : JS_QUEUED;
	if (hold)
		job_set_reason(j, "JobHeldUser");
	j->executor = s->executor;
	j->submit_time = now_real();
	return j;
fail:
	job_free(j);
	return NULL;
}

/* NUL-separated blob of the "env" array (each item a byte string, see
 * bytes.h), and what it counts towards the execve limits. */
static char *env_blob(json_t *env, size_t *len, struct gf_execsize *size, struct gf_err *e)
{
	size_t total = 0, i;
	json_t *item;
	char *blob, *p, what[48];
	char **kv;

	if (env && !json_is_array(env)) {
		gf_err_set(e, "'env' must be an array of \"KEY=VALUE\" strings");
		return NULL;
	}
	kv = calloc(json_array_size(env) + 1, sizeof *kv);
	if (!kv)
		abort();
	json_array_foreach(env, i, item) {
		snprintf(what, sizeof what, "'env' item %zu", i);
		kv[i] = gf_cstr_from_json(item, what, e);
		if (!kv[i])
			goto fail;
		if (!strchr(kv[i], '=')) {
			gf_err_set(e, "'env' item %zu is not a \"KEY=VALUE\" string", i);
			goto fail;
		}
		if (gf_execsize_env(size, kv[i], e))
			goto fail;
		total += strlen(kv[i]) + 1;
	}
	p = blob = malloc(total + 1);
	if (!blob)
		abort();
	for (i = 0; kv[i]; i++) {
		memcpy(p, kv[i], strlen(kv[i]) + 1);
		p += strlen(kv[i]) + 1;
		free(kv[i]);
	}
	free(kv);
	*len = total;
	return blob;
fail:
	for (i = 0; kv[i]; i++)
		free(kv[i]);
	free(kv);
	return NULL;
}

/* A POST /jobs body, checked and turned into jobs (not yet stored). */
struct submission {
	struct job **jobs;
	size_t n;
	char *env;
	size_t envlen;
	bool dry;
};

static void submission_free(struct submission *sub)
{
	for (size_t i = 0; i < sub->n; i++)
		job_free(sub->jobs[i]);
	free(sub->jobs);
	free(sub->env);
	memset(sub, 0, sizeof *sub);
}

/* The value of NAME= in a NUL-separated environment, or NULL. */
static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t off = 0; off < len; off += strlen(env + off) + 1)
		if (!strncmp(env + off, name, n) && env[off + n] == '=')
			return env + off + n + 1;
	return NULL;
}

/* System mode: the jobs run as their submitter. Their logs go to the
 * submitter's own data directory (as captured: $XDG_DATA_HOME/gflow/logs,
 * else $HOME/.local/share/gflow/logs, else their home's), made by the
 * runner as them; and what they could not do is refused now. */
static int owned_submission(uid_t uid, struct submission *sub, const char *cwd, struct gf_err *e)
{
	const char *xdg = env_value(sub->env, sub->envlen, "XDG_DATA_HOME"),
		   *home = env_value(sub->env, sub->envlen, "HOME"), *script = NULL;
	char dir[GF_PATH_MAX], pwhome[GF_PATH_MAX];

	if (xdg && xdg[0] == '/')
		gf_pathf(dir, sizeof dir, "%s/gflow/logs", xdg);
	else if (home && home[0] == '/')
		gf_pathf(dir, sizeof dir, "%s/.local/share/gflow/logs", home);
	else if (exec_owner_home(uid, pwhome, sizeof pwhome, e) == 0)
		gf_pathf(dir, sizeof dir, "%s/.local/share/gflow/logs", pwhome);
	else
		return -1;
	if (!dir[0])
		return gf_err_set(e, "the log directory path of this user is too long");
	for (size_t i = 0; i < sub->n; i++) {
		job_set_str(&sub->jobs[i]->log_dir, dir);
		if (sub->jobs[i]->script)
			script = sub->jobs[i]->script;
	}
	return exec_check_owner(uid, cwd, script, e);
}

/* All or nothing: on failure nothing is left in sub. */
static int decode_submission(struct server *s, uid_t uid, json_t *body, struct submission *sub,
			     struct gf_err *e)
{
	static const char *const fields[] = { "jobs", "env", "cwd", "dry_run", NULL };
	json_t *specs = json_object_get(body, "jobs"), *item;
	struct gf_execsize envsize = { 0 };
	char *cwd = NULL;
	size_t n, i;

	memset(sub, 0, sizeof *sub);
	if (check_fields(body, fields, "request", e) || get_bool(body, "dry_run", &sub->dry, e) ||
	    get_bytes(body, "cwd", 4096, &cwd, e))
		goto bad;
	if (!cwd || cwd[0] != '/') {
		gf_err_set(e, "'cwd' must be an absolute directory path");
		goto bad;
	}
	if (!json_is_array(specs) || !json_array_size(specs)) {
		gf_err_set(e, "'jobs' must be a non-empty array");
		goto bad;
	}
	n = json_array_size(specs);
	if (n > MAX_BATCH) {
		gf_err_set(e, "a batch may hold at most %d jobs, this one has %zu", MAX_BATCH, n);
		goto bad;
	}
	if (!(sub->env = env_blob(json_object_get(body, "env"), &sub->envlen, &envsize, e)))
		goto bad;
	sub->jobs = calloc(n, sizeof *sub->jobs);
	if (!sub->jobs)
		abort();
	json_array_foreach(specs, i, item) {
		sub->jobs[i] = spec_to_job(s, uid, item, cwd, &envsize, e);
		if (!sub->jobs[i]) {
			if (n > 1)
				gf_err_prefix(e, "job %zu of %zu", i + 1, n);
			goto bad;
		}
		sub->n = i + 1;
	}
	if (s->paths.system && owned_submission(uid, sub, cwd, e))
		goto bad;
	free(cwd);
	return 0;
bad:
	free(cwd);
	submission_free(sub);
	return -1;
}

int api_check_request(struct server *s, uid_t uid, const char *data, size_t len, struct gf_err *e)
{
	struct submission sub;
	json_t *body = parse_body(data, len, e);
	int rc;

	if (!body)
		return -1;
	rc = decode_submission(s, uid, body, &sub, e);
	submission_free(&sub);
	json_decref(body);
	return rc;
}

static void h_submit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	struct submission sub;
	json_t *out;
	struct gf_err e;
	int64_t env_id, *ids = NULL;
	size_t i;

	if (decode_submission(s, c->uid, body, &sub, &e)) {
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (quota_check_submit(s, sub.jobs, sub.n, &e)) {
		reply_err(req, 409, "%s", e.msg);
		submission_free(&sub);
		return;
	}
	out = json_array();
	if (sub.dry) {
		for (i = 0; i < sub.n; i++)
			json_array_append_new(out, job_to_json(sub.jobs[i], NULL));
		reply(req, 200, json_pack("{s:o}", "jobs", out));
		submission_free(&sub);
		return;
	}
	if (!(ids = calloc(sub.n, sizeof *ids)))
		abort();
	if (jobs_txn_begin(s, &e) || (env_id = store_put_env(s->store, sub.env, sub.envlen, &e)) < 0)
		goto fail;
	for (i = 0; i < sub.n; i++) {
		struct job *j = sub.jobs[i];

		sub.jobs[i] = NULL;	/* the table's now, or freed */
		j->env_id = env_id;
		j->group_id = sub.n > 1 && i > 0 ? ids[0] : 0;
		if (jobs_insert(s, j, &e))
			goto fail;
		ids[i] = j->id;
	}
	if (sub.n > 1) {
		struct job *first = jobs_get(s, ids[0]);

		first->group_id = first->id;
		if (jobs_save(s, first, &e))
			goto fail;
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	for (i = 0; i < sub.n; i++)
		json_array_append_new(out, json_pack("{s:I,s:s}", "id", (json_int_t)ids[i], "name",
						     jobs_get(s, ids[i])->name));
	free(ids);
	submission_free(&sub);
	server_schedule(s);
	reply(req, 201, json_pack("{s:o}", "jobs", out));
	return;
fail:
	json_decref(out);
	jobs_txn_rollback(s);
	free(ids);
	submission_free(&sub);
	reply_store_err(s, req, &e);
}

/* ---- listing ----------------------------------------------------------- */

struct filter {
	bool states[JS_NSTATES];
	bool any_state;
	bool all_users;
	uid_t uid;
	char **users;
	struct gf_jobref_list ids;
	char **names;
	char *project;
	double since;
	char **fields;		/* only these job fields in the answer */
};

static char **split_csv(const char *s)
{
	size_t n = 1, k = 0;
	char **v, *copy = strdup(s), *tok, *save = NULL;

	for (const char *p = s; *p; p++)
		n += *p == ',';
	v = calloc(n + 1, sizeof *v);
	if (!v || !copy)
		abort();
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		v[k++] = strdup(tok);
	free(copy);
	return v;
}

static bool in_list(char **v, const char *s)
{
	for (; v && *v; v++)
		if (s && !strcmp(*v, s))
			return true;
	return false;
}

static int parse_filter(struct server *s, struct caller *c, struct evkeyvalq *q, struct filter *f,
			struct gf_err *e)
{
	const char *v;

	memset(f, 0, sizeof *f);
	f->any_state = true;
	f->uid = c->uid;
	if ((v = evhttp_find_header(q, "states"))) {
		char **names = split_csv(v);

		f->any_state = false;
		for (char **p = names; *p; p++) {
			int st = job_state_parse(*p);

			if (st < 0) {
				gf_err_set(e, "unknown state '%s' (states: Queued/PD, Hold/H, Running/R, "
					      "Finished/CD, Failed/F, Cancelled/CA, Timeout/TO)", *p);
				strv_free(names);
				return -1;
			}
			f->states[st] = true;
		}
		strv_free(names);
	}
	if ((v = evhttp_find_header(q, "active")) && !strcmp(v, "1")) {
		f->any_state = false;
		f->states[JS_QUEUED] = f->states[JS_HOLD] = f->states[JS_RUNNING] = true;
	}
	v = evhttp_find_header(q, "users");
	if (v && !strcmp(v, "all"))
		f->all_users = true;
	else if (v)
		f->users = split_csv(v);
	else if (c->uid == (uid_t)-1)
		f->all_users = true;	/* anonymous TCP reader */
	if ((v = evhttp_find_header(q, "ids"))) {
		if (gf_parse_jobref_list(v, &f->ids, e))
			return -1;
		for (size_t i = 0; i < f->ids.n; i++)
			if (f->ids.v[i].is_relative) {
				char ref[32];
				int64_t id;

				snprintf(ref, sizeof ref, "@~%lld", (long long)f->ids.v[i].back);
				if ((id = jobs_resolve_ref(s, c->uid, ref, e)) < 0)
					return -1;
				f->ids.v[i].is_relative = 0;
				f->ids.v[i].id = id;
			}
		f->all_users = true;	/* asking by id shows the job whoever owns it */
	}
	if ((v = evhttp_find_header(q, "names")))
		f->names = split_csv(v);
	if ((v = evhttp_find_header(q, "fields"))) {
		f->fields = split_csv(v);
		for (char **p = f->fields; *p; p++)
			if (!job_field_known(*p))
				return gf_err_set(e, "unknown job field '%s' in 'fields'", *p);
	}
	if ((v = evhttp_find_header(q, "project")))
		f->project = strdup(v);
	if ((v = evhttp_find_header(q, "since"))) {
		char *end;

		f->since = strtod(v, &end);
		if (end == v || *end || !isfinite(f->since) || f->since < 0)
			return gf_err_set(e, "'since' must be a time in epoch seconds, got '%s'", v);
	}
	return 0;
}

static void filter_free(struct filter *f)
{
	strv_free(f->users);
	strv_free(f->names);
	strv_free(f->fields);
	free(f->project);
	gf_jobref_list_free(&f->ids);
}

static bool matches(const struct filter *f, const struct job *j)
{
	if (!f->any_state && !f->states[j->state])
		return false;
	if (f->users ? !in_list(f->users, j->user) : !f->all_users && j->uid != f->uid)
		return false;
	if (f->names && !in_list(f->names, j->name))
		return false;
	if (f->project && (!j->project || strcmp(f->project, j->project)))
		return false;
	if (f->since > 0 && j->submit_time < f->since)
		return false;
	if (f->ids.n) {
		for (size_t i = 0; i < f->ids.n; i++)
			if (f->ids.v[i].id == j->id)
				return true;
		return false;
	}
	return true;
}

/* What anyone may see of any job: who, what it is called, its state, its
 * resources and times. Its command, directory, environment and log are
 * its owner's and the admins'. */
static char *const public_fields[] = {
	"id", "name", "user", "uid", "project", "state", "st", "reason", "gpus", "shared", "gpu_memory_mb",
	"memory_mb", "time_limit_secs", "priority", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "group_id", "max_concurrent", "max_retries", "attempt", "retry_of", "redo_of",
	"submit_time", "start_time", "end_time", "exit_code", "exit_signal", "gpu_ids", "memory_enforced",
	"executor", "active", "attach_socket", "cluster", "slurm_id", NULL,
};

static bool in_strv(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (!strcmp(*v, s))
			return true;
	return false;
}

/* A running job's attach socket (system mode, tmux executor): public, so
 * that a user who may not attach hears the rule from the runner. */
static void add_attach_socket(struct server *s, const struct job *j, char *const *only, json_t *o)
{
	char sock[GF_PATH_MAX];

	if ((!only || in_strv(only, "attach_socket")) && j->state == JS_RUNNING &&
	    exec_attach_socket(s, j, sock, sizeof sock))
		json_object_set_new(o, "attach_socket", json_string(sock));
}

static json_t *job_json_only(struct server *s, const struct caller *c, const struct job *j, char *const *only)
{
	char log[GF_PATH_MAX], *shown[sizeof public_fields / sizeof public_fields[0]];
	size_t n = 0;
	json_t *o;

	jobs_log_path(s, j, log, sizeof log);
	if (owns(c, j))
		o = job_to_json_only(j, log, only);
	else {
		for (char *const *f = public_fields; *f; f++)
			if (!only || in_strv(only, *f))
				shown[n++] = *f;
		shown[n] = NULL;
		o = job_to_json_only(j, NULL, shown);
	}
	if (!only)
		quota_annotate(s, j, o);	/* why it waits (quota.c) */
	add_attach_socket(s, j, only, o);
	return o;
}

static json_t *job_json(struct server *s, const struct caller *c, const struct job *j)
{
	return job_json_only(s, c, j, NULL);
}

/* Does the filter ask only for jobs that are not over? Then the open list
 * holds every one of them. */
static bool only_live(const struct filter *f)
{
	if (f->any_state)
		return false;
	for (int st = 0; st < JS_NSTATES; st++)
		if (f->states[st] && job_state_ended((enum job_state)st))
			return false;
	return true;
}

static void add_job(struct server *s, const struct caller *c, struct evbuffer *out, const struct job *j,
		    char *const *only, bool *first)
{
	json_t *o = job_json_only(s, c, j, only);

	if (!*first)
		evbuffer_add(out, ",", 1);
	*first = false;
	json_dump_callback(o, to_evbuffer, out, JSON_COMPACT);
	json_decref(o);
}

static void h_list(struct server *s, struct evhttp_request *req, struct caller *c)
{
	struct evkeyvalq q;
	struct filter f;
	struct gf_err e;
	struct evbuffer *out;
	bool first = true;

	evhttp_parse_query_str(evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	if (parse_filter(s, c, &q, &f, &e)) {
		evhttp_clear_headers(&q);
		filter_free(&f);
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	evhttp_clear_headers(&q);
	/* Written job by job into the answer, never as one tree: a long list
	 * costs its size in the output buffer, not several times that. */
	out = evbuffer_new();
	evbuffer_add(out, "{\"jobs\":[", 9);
	if (only_live(&f)) {
		for (size_t i = 0; i < s->nopen; i++) {
			struct job *j = jobs_open_at(s, i);

			if (j && matches(&f, j))
				add_job(s, c, out, j, f.fields, &first);
		}
	} else
		for (int64_t i = 1; i <= s->max_id; i++)
			if (s->jobs[i] && matches(&f, s->jobs[i]))
				add_job(s, c, out, s->jobs[i], f.fields, &first);
	evbuffer_add(out, "]}\n", 3);
	filter_free(&f);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

static void h_get(struct server *s, struct evhttp_request *req, struct caller *c, const char *idstr)
{
	char *end;
	long long id = strtoll(idstr, &end, 10);
	struct job *j = *end || end == idstr ? NULL : jobs_get(s, id);

	if (!j) {
		reply_err(req, 404, "job %s does not exist", idstr);
		return;
	}
	reply(req, 200, json_pack("{s:o}", "job", job_json(s, c, j)));
}

/* ---- changes to jobs --------------------------------------------------- */

/* Resolve body["ids"]; unknown ones go to errs. Returns count. */
static size_t body_ids(struct server *s, struct caller *c, json_t *body, int64_t **out, json_t *errs,
		       struct gf_err *e)
{
	json_t *ids = json_object_get(body, "ids"), *item;
	size_t i, n = 0;

	*out = NULL;
	if (!json_is_array(ids) || !json_array_size(ids)) {
		gf_err_set(e, "'ids' must be a non-empty array of job references");
		return 0;
	}
	*out = calloc(json_array_size(ids), sizeof **out);
	if (!*out)
		abort();
	json_array_foreach(ids, i, item) {
		struct gf_err ie;
		int64_t id = ref_id(s, c->uid, item, &ie);

		if (id < 0)
			json_array_append_new(errs, json_pack("{s:o,s:s}", "id", json_deep_copy(item),
							      "error", ie.msg));
		else
			(*out)[n++] = id;
	}
	return n;
}

/* The refusal that names the rule. */
static void not_yours(const struct job *j, const char *verb, char *msg, size_t size)
{
	const char *who = j->user ? j->user : "another user";

	snprintf(msg, size, "job %lld belongs to %s; only %s or an admin may %s it", (long long)j->id, who, who,
		 verb);
}

static bool permitted(struct caller *c, struct job *j, const char *verb, json_t *errs)
{
	char msg[512];

	if (owns(c, j) && j->cluster)	/* Slurm's: the client asks Slurm (remote.c) */
		snprintf(msg, sizeof msg, "job %lld is on Slurm cluster %s: gcancel and gjob hold/release "
			 "act on it through Slurm; it cannot be %s here", (long long)j->id, j->cluster,
			 !strcmp(verb, "cancel") ? "cancelled" : !strcmp(verb, "hold") ? "held" :
			 !strcmp(verb, "release") ? "released" : "updated");
	else if (owns(c, j))
		return true;
	else
		not_yours(j, verb, msg, sizeof msg);
	json_array_append_new(errs, json_pack("{s:I,s:s}", "id", (json_int_t)j->id, "error", msg));
	return false;
}

/* The jobs a change request names, and what became of each. */
struct id_batch {
	int64_t *ids;
	size_t n;
	json_t *done, *errs;
};

/* The start of every handler that acts on a list of jobs: `ok` says whether
 * its own field checks passed (e says why not). The ids are resolved, those
 * that name no job recorded as errors. Answers 400 and returns false when
 * there is nothing to act on. */
static bool id_batch_start(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			   bool ok, struct gf_err *e, struct id_batch *b)
{
	b->ids = NULL;
	b->n = 0;
	b->done = json_array();
	b->errs = json_array();
	if (ok) {
		b->n = body_ids(s, c, body, &b->ids, b->errs, e);
		if (b->n || json_array_size(b->errs))
			return true;
	}
	json_decref(b->errs);
	json_decref(b->done);
	free(b->ids);
	reply_err(req, 400, "%s", e->msg);
	return false;
}

static void push_err(json_t *errs, int64_t id, const char *msg)
{
	json_array_append_new(errs, json_pack("{s:I,s:s}", "id", (json_int_t)id, "error", msg));
}

/* A cancel answered when its cascade is through. */
struct cancel_answer {
	struct evhttp_request *req;
	json_t *done, *errs;
	int64_t *roots;
	size_t nroots;
};

static void cancel_answered(struct server *s, void *arg, const char *err)
{
	struct cancel_answer *a = arg;
	json_t *deps = json_array();
	int64_t *also = NULL;
	size_t nalso = 0;
	char msg[GF_ERR_MAX + 100];

	jobs_failed_because(s, a->roots, a->nroots, &also, &nalso);
	for (size_t i = 0; i < nalso; i++)
		json_array_append_new(deps, json_integer(also[i]));
	if (err) {
		snprintf(msg, sizeof msg, "%s (the jobs that depend on it are cancelled once that can be recorded)",
			 err);
		push_err(a->errs, a->roots[0], msg);
	}
	reply(a->req, 200, json_pack("{s:o,s:o,s:o}", "cancelled", a->done, "dependents", deps, "errors", a->errs));
	free(also);
	free(a->roots);
	free(a);
}

static void h_cancel(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "ids", "dry_run", NULL };
	struct cancel_answer *a;
	struct id_batch b;
	json_t *errs, *done;
	int64_t *ids, *ok, *also = NULL;
	size_t n, nok = 0, nalso = 0;
	bool dry = false, *seen;
	struct gf_err e;

	if (!id_batch_start(s, req, c, body,
			    !check_fields(body, fields, "request", &e) && !get_bool(body, "dry_run", &dry, &e), &e,
			    &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	ok = calloc(n + 1, sizeof *ok);
	seen = calloc((size_t)s->max_id + 1, sizeof *seen);
	if (!ok || !seen)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (seen[j->id] || !permitted(c, j, "cancel", errs))
			continue;
		seen[j->id] = true;
		if (job_state_ended(j->state)) {
			if (dry)
				snprintf(e.msg, sizeof e.msg, "already ended");
			else
				snprintf(e.msg, sizeof e.msg, "job %lld has already ended (%s)", (long long)j->id,
					 job_state_name(j->state));
			push_err(errs, j->id, e.msg);
		} else {
			ok[nok++] = j->id;
			json_array_append_new(done, json_integer(j->id));
		}
	}
	free(seen);
	free(ids);
	if (dry || !nok) {
		json_t *deps = json_array();

		if (nok)
			jobs_would_cascade(s, ok, nok, &also, &nalso);
		for (size_t i = 0; i < nalso; i++)
			json_array_append_new(deps, json_integer(also[i]));
		free(also);
		free(ok);
		reply(req, 200, json_pack("{s:o,s:o,s:o}", "cancelled", done, "dependents", deps, "errors", errs));
		return;
	}
	/* Answered by cancel_answered once the dependents are cancelled too
	 * (maybe before jobs_cancel_many returns); other requests are served
	 * meanwhile. */
	if (!(a = calloc(1, sizeof *a)))
		abort();
	*a = (struct cancel_answer){ .req = req, .done = done, .errs = errs, .roots = ok, .nroots = nok };
	if (jobs_cancel_many(s, ok, nok, "CancelledByUser", cancel_answered, a, &e)) {
		json_decref(done);
		json_decref(errs);
		free(ok);
		free(a);
		reply_store_err(s, req, &e);
	}
}

static void h_hold_release(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
			   bool hold)
{
	static const char *const fields[] = { "ids", "at", NULL };
	struct id_batch b;
	json_t *errs, *done;
	int64_t *ids;
	double at = 0;
	size_t n;
	struct gf_err e;

	if (!id_batch_start(s, req, c, body,
			    !check_fields(body, fields, "request", &e) && !get_time(body, "at", &at, &e), &e, &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	/* One transaction: every change of the request is recorded, or none. */
	if (jobs_txn_begin(s, &e))
		goto fail;
	for (size_t i = 0; i < n && !s->txn.failed; i++) {
		struct job *j = jobs_get(s, ids[i]);

		if (!permitted(c, j, hold ? "hold" : "release", errs))
			continue;
		if (hold ? jobs_hold(s, j, &e) : jobs_release(s, j, at, &e))
			push_err(errs, j->id, e.msg);
		else
			json_array_append_new(done, json_integer(j->id));
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	free(ids);
	reply(req, 200, json_pack("{s:o,s:o}", "done", done, "errors", errs));
	return;
fail:
	free(ids);
	json_decref(done);
	json_decref(errs);
	reply_store_err(s, req, &e);
}

/* ---- update, redo, limits --------------------------------------------- */

/* The fields of a job's JSON form that are also submission fields: what
 * would make this job again. Absent values come as null, which a spec reads
 * as "not given". */
static const char *const respec_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "project", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "max_concurrent", "max_retries", "params", "notify_email", "notify_on", NULL,
};

static json_t *spec_of(const struct job *j)
{
	return job_to_json_only(j, NULL, (char *const *)respec_fields);
}

static const char *const update_fields[] = {
	"name", "command", "script", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs",
	"priority", "conda_env", "depends_on", "dep_mode", "auto_cancel", "begin_at", "max_concurrent",
	"max_retries", "params", NULL,
};

/* Apply `set` (null clears a field) over the job's spec and validate the
 * result as a new submission would be. */
static struct job *edited(struct server *s, uid_t uid, const struct job *old, json_t *set,
			  struct gf_err *e)
{
	json_t *spec;
	const char *k;
	json_t *v;
	struct job *n;
	struct gf_execsize envsize = { 0 };
	char *env;
	size_t len;

	/* the job keeps its environment: count it for the execve limits (one
	 * that cannot be read is reported when the job starts) */
	if (!store_get_env(s->store, old->env_id, &env, &len, NULL)) {
		for (size_t off = 0, l; off < len; off += l + 1)
			if ((l = strnlen(env + off, len - off)) < len - off)
				gf_execsize_env(&envsize, env + off, NULL);
		free(env);
	}
	spec = spec_of(old);
	json_object_foreach(set, k, v) {
		if (json_is_null(v))
			json_object_del(spec, k);
		else
			json_object_set(spec, k, v);
	}
	n = spec_to_job(s, uid, spec, old->cwd, &envsize, e);
	json_decref(spec);
	if (!n)
		return NULL;
	n->uid = old->uid;
	job_set_str(&n->user, old->user);
	n->env_id = old->env_id;
	n->group_id = old->group_id;
	n->executor = old->executor;
	job_set_str(&n->log_dir, old->log_dir);
	return n;
}

/* An edited job keeps what makes it the same job: copy that from j. */
static void keep_identity(struct job *n, const struct job *j)
{
	n->id = j->id;
	n->state = j->state;
	job_set_reason(n, j->reason);
	n->submit_time = j->submit_time;
	n->attempt = j->attempt;
	n->retry_of = j->retry_of;
	n->redo_of = j->redo_of;
	n->run_seq = j->run_seq;
}

static void h_update(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "ids", "set", NULL };
	json_t *set = json_object_get(body, "set"), *errs, *done;
	struct id_batch b;
	int64_t *ids;
	size_t n;
	struct gf_err e;

	if (!id_batch_start(s, req, c, body,
			    !check_fields(body, fields, "request", &e) &&
				    (json_is_object(set) || !gf_err_set(&e, "'set' must be an object of fields to change")) &&
				    !check_fields(set, update_fields, "'set'", &e),
			    &e, &b))
		return;
	ids = b.ids, n = b.n, errs = b.errs, done = b.done;
	if (jobs_txn_begin(s, &e)) {
		free(ids);
		json_decref(done);
		json_decref(errs);
		reply_store_err(s, req, &e);
		return;
	}
	for (size_t i = 0; i < n && !s->txn.failed; i++) {
		struct job *j = jobs_get(s, ids[i]), *nj;

		if (!permitted(c, j, "update", errs))
			continue;
		if (j->state != JS_QUEUED && j->state != JS_HOLD) {
			snprintf(e.msg, sizeof e.msg, "job %lld is %s: only queued or held jobs can be updated",
				 (long long)j->id, job_state_name(j->state));
			push_err(errs, j->id, e.msg);
			continue;
		}
		if (!(nj = edited(s, c->uid, j, set, &e)) ||
		    (jobs_would_cycle(s, j->id, nj->deps, nj->ndeps) &&
		     gf_err_set(&e, "the new dependencies of job %lld would form a cycle", (long long)j->id))) {
			job_free(nj);
			push_err(errs, j->id, e.msg);
			continue;
		}
		keep_identity(nj, j);
		/* j stays the same struct, so pointers to it stay valid. */
		if (jobs_replace(s, j, nj, &e) == 0)
			json_array_append_new(done, json_integer(j->id));
	}
	free(ids);
	if (jobs_txn_commit(s, &e)) {
		json_decref(done);
		json_decref(errs);
		reply_store_err(s, req, &e);
		return;
	}
	server_schedule(s);
	reply(req, 200, json_pack("{s:o,s:o}", "done", done, "errors", errs));
}

static void h_redo(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "id", "cascade", "set", NULL };
	json_t *set = json_object_get(body, "set"), *out = NULL, *empty = json_object();
	int64_t *old = NULL, *newid = NULL, root;
	struct job **made = NULL;
	size_t nold = 0, nmade = 0;
	bool cascade = false;
	struct gf_err e;
	struct job *j;
	int code = 400;

	if (check_fields(body, fields, "request", &e) || get_bool(body, "cascade", &cascade, &e) ||
	    (set && !json_is_object(set) && gf_err_set(&e, "'set' must be an object")) ||
	    (set && check_fields(set, update_fields, "'set'", &e)) ||
	    (root = ref_id(s, c->uid, json_object_get(body, "id"), &e)) < 0)
		goto bad;
	j = jobs_get(s, root);
	if (!owns(c, j)) {
		not_yours(j, "redo", e.msg, sizeof e.msg);
		goto bad;
	}
	if (j->cluster) {
		gf_err_set(&e, "job %lld ran on Slurm cluster %s: submit it again with gbatch --cluster %s",
			   (long long)root, j->cluster, j->cluster);
		goto bad;
	}
	if (!job_state_ended(j->state)) {
		gf_err_set(&e, "job %lld is %s: only ended jobs can be redone", (long long)root,
			   job_state_name(j->state));
		goto bad;
	}
	if (j->unreadable) {
		gf_err_set(&e, "job %lld is an unreadable record (see gflowd's log): it cannot be redone",
			   (long long)root);
		goto bad;
	}
	old = malloc(sizeof *old);
	if (!old)
		abort();
	old[nold++] = root;
	if (cascade)
		jobs_failed_because(s, &root, 1, &old, &nold);
	made = calloc(nold, sizeof *made);
	newid = calloc(nold, sizeof *newid);
	if (!made || !newid)
		abort();
	for (size_t i = 0; i < nold; i++) {
		/* Parents that are redone too are swapped for their new copies
		 * once those have ids, below. */
		made[i] = edited(s, c->uid, jobs_get(s, old[i]), i == 0 && set ? set : empty, &e);
		if (!made[i])
			goto bad;
		nmade = i + 1;
	}
	if (quota_check_submit(s, made, nold, &e)) {
		code = 409;	/* over max_queued_jobs: none is made */
		goto bad;
	}
	if (jobs_txn_begin(s, &e))
		goto fail;
	out = json_array();
	for (size_t i = 0; i < nold; i++) {
		struct job *n = made[i];

		made[i] = NULL;		/* the table's now, or freed */
		for (size_t k = 0; k < n->ndeps; k++)
			for (size_t p = 0; p < i; p++)
				if (n->deps[k] == old[p])
					n->deps[k] = newid[p];
		n->redo_of = old[i];
		if (jobs_insert(s, n, &e))
			goto fail;
		newid[i] = n->id;
		json_array_append_new(out, json_pack("{s:I,s:s,s:I}", "id", (json_int_t)n->id, "name", n->name,
						     "redo_of", (json_int_t)old[i]));
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	free(made);
	free(newid);
	free(old);
	json_decref(empty);
	server_schedule(s);
	reply(req, 201, json_pack("{s:o}", "jobs", out));
	return;
fail:
	jobs_txn_rollback(s);
	json_decref(out);
	for (size_t i = 0; i < nmade; i++)
		job_free(made[i]);
	free(made);
	free(newid);
	free(old);
	json_decref(empty);
	reply_store_err(s, req, &e);
	return;
bad:
	for (size_t i = 0; i < nmade; i++)
		job_free(made[i]);
	free(made);
	free(newid);
	free(old);
	json_decref(empty);
	reply_err(req, code, "%s", e.msg);
}

/* gctl set-limit: the running cap of the group a job belongs to. */
static void h_limit(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "id", "max_concurrent", NULL };
	int64_t id, k = -1, group;
	size_t changed = 0;
	struct gf_err e;
	struct job *j;

	if (check_fields(body, fields, "request", &e) ||
	    get_int(body, "max_concurrent", 0, 1000000, &k, &e) ||
	    (k < 0 && gf_err_set(&e, "'max_concurrent' is required (0 removes the cap)")) ||
	    (id = ref_id(s, c->uid, json_object_get(body, "id"), &e)) < 0) {
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	j = jobs_get(s, id);
	group = j->group_id ? j->group_id : j->id;
	if (jobs_txn_begin(s, &e))
		goto fail;
	for (int64_t i = group; i <= s->max_id && !s->txn.failed; i++) {
		struct job *g = s->jobs[i];

		if (!g || g->unreadable || (g->id != group && g->group_id != group))
			continue;
		if (!owns(c, g)) {
			jobs_txn_rollback(s);
			not_yours(g, "limit", e.msg, sizeof e.msg);
			reply_err(req, 403, "%s", e.msg);
			return;
		}
		jobs_touch(s, g);
		g->max_concurrent = (int)k;
		jobs_save(s, g, &e);
		changed++;
	}
	if (jobs_txn_commit(s, &e))
		goto fail;
	server_schedule(s);
	reply(req, 200, json_pack("{s:I,s:I,s:I}", "group", (json_int_t)group, "max_concurrent", (json_int_t)k,
				  "jobs", (json_int_t)changed));
	return;
fail:
	reply_store_err(s, req, &e);
}

/* ---- GPUs and daemon --------------------------------------------------- */

/* Refuse a caller who is not an admin, naming who is. */
static bool admin_only(struct server *s, struct evhttp_request *req, struct caller *c, const char *what)
{
	if (c->admin)
		return true;
	if (s->paths.system)
		reply_err(req, 403, "only root%s%s%s may %s", s->have_admin_gid ? " and members of the group '" : "",
			  s->have_admin_gid ? s->cfg.admin_group : "", s->have_admin_gid ? "'" : "", what);
	else
		reply_err(req, 403, "only the daemon's user and root may %s", what);
	return false;
}

static void h_set_gpus(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body)
{
	static const char *const fields[] = { "spec", NULL };
	char *spec = NULL;
	struct gf_err e;
	json_t *g;

	if (!admin_only(s, req, c, "change which GPUs gflow uses"))
		return;
	if (check_fields(body, fields, "request", &e) || get_str(body, "spec", 1024, &spec, &e) ||
	    (!spec && gf_err_set(&e, "'spec' is required (e.g. \"0,2\" or \"all\")")) ||
	    gpustate_set_allowed(s, spec, &e)) {
		free(spec);
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	free(spec);
	g = gpustate_json(s);
	reply(req, 200, json_pack("{s:O}", "allowed", json_object_get(g, "allowed")));
	json_decref(g);
}

static void h_ignore(struct server *s, struct evhttp_request *req, struct caller *c, json_t *body,
		     bool ignore)
{
	static const char *const fields[] = { "gpu", "pid", NULL };
	int64_t gpu = -1, pid = -1;
	struct gf_err e;

	if (!admin_only(s, req, c, ignore ? "ignore a GPU process" : "stop ignoring a GPU process"))
		return;
	if (check_fields(body, fields, "request", &e) || get_int(body, "gpu", 0, 63, &gpu, &e) ||
	    get_int(body, "pid", 1, 1 << 30, &pid, &e) ||
	    ((gpu < 0 || pid < 0) && gf_err_set(&e, "'gpu' and 'pid' are required")) ||
	    gpustate_ignore(s, (int)gpu, (pid_t)pid, ignore, &e)) {
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	reply(req, 200, json_pack("{s:o}", "ignored", gpustate_ignored_json(s)));
}

/* POST /tokens: the caller's own token for the TCP API (made on first
 * use); handed out over the local socket only, where the kernel says who
 * is asking. POST /tokens/revoke: it stops working at once. */
static void h_token(struct server *s, struct evhttp_request *req, struct caller *c, bool revoke)
{
	char token[64];
	struct gf_err e;
	bool had;

	if (c->uid == (uid_t)-1) {
		reply_err(req, 401, "tokens belong to users: ask over the local socket");
		return;
	}
	if (revoke) {
		if (auth_token_revoke(s, c->uid, &had, &e))
			reply_store_err(s, req, &e);
		else
			reply(req, 200, json_pack("{s:b}", "revoked", had));
		return;
	}
	if (!c->local) {
		reply_err(req, 403, "a token is handed out over the local socket only (run gflowd token on the machine)");
		return;
	}
	if (auth_token_get(s, c->uid, token, sizeof token, &e))
		reply_store_err(s, req, &e);
	else
		reply(req, 200, json_pack("{s:s,s:I}", "token", token, "uid", (json_int_t)c->uid));
}

static void h_info(struct server *s, struct evhttp_request *req, struct caller *c)
{
	int64_t bad[100];
	size_t nbad = jobs_unreadable(s, bad, sizeof bad / sizeof bad[0]);
	json_t *unreadable = json_array();
	json_t *o =
	      json_pack("{s:s,s:i,s:f,s:s,s:s,s:s,s:i,s:s,s:I,s:o}", "version", GFLOW_VERSION, "pid",
			(int)getpid(), "started_at", s->started_at, "executor",
			s->executor == EXEC_TMUX ? "tmux" : "process", "hosting",
			s->opts.hosting ? s->opts.hosting : "foreground", "strategy",
			s->strategy == SCHED_RANDOM ? "random" : "sequential", "gpu_poll_interval_secs",
			s->opts.poll_interval ? s->opts.poll_interval : s->cfg.gpu_poll_interval_secs,
			"data_dir", s->paths.data_dir, "jobs", (json_int_t)s->max_id, "gpus",
			gpustate_json(s));

	/* Where --memory limits are enforced (a cgroup directory), or null;
	 * how each job's processes are tracked. */
	json_object_set_new(o, "memory_cgroup", s->track.mem[0] ? json_string(s->track.mem) : json_null());
	json_object_set_new(o, "tracking", track_json(s));
	/* Which daemon this is, and who is asking. */
	json_object_set_new(o, "mode", json_string(s->paths.system ? "system" : "personal"));
	json_object_set_new(o, "socket", json_string(s->paths.socket));
	json_object_set_new(o, "tcp", s->bound_tcp ? json_sprintf("%s:%d", s->cfg.host, s->cfg.port) : json_null());
	if (s->tcp_note[0])
		json_object_set_new(o, "tcp_note", json_string(s->tcp_note));
	json_object_set_new(o, "caller", c->uid == (uid_t)-1 ? json_null()
				       : json_pack("{s:I,s:b}", "uid", (json_int_t)c->uid, "admin", c->admin));
	/* Store rows that could not be read (their jobs are shown as stand-ins),
	 * the first 100 of unreadable_count. */
	for (size_t i = 0; i < nbad && i < sizeof bad / sizeof bad[0]; i++)
		json_array_append_new(unreadable, json_integer(bad[i]));
	json_object_set_new(o, "unreadable_jobs", unreadable);
	json_object_set_new(o, "unreadable_count", json_integer((json_int_t)nbad));
	json_object_set_new(o, "notifications", notify_json(s));
	reply(req, 200, o);
}

/* ---- routing ----------------------------------------------------------- */

static void route(struct evhttp_request *req, struct server *s, bool unix_sock)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct caller c = identify(s, req, unix_sock);
	json_t *body = NULL;
	struct gf_err e;

	if (!path)
		path = "/";
	vlog(2, "%s %s from uid %ld (%s)", m == EVHTTP_REQ_GET ? "GET" : m == EVHTTP_REQ_POST ? "POST" : "other",
	     path, (long)c.uid, unix_sock ? "socket" : "tcp");
	if (s->reloading)	/* draining for a reload: no next request here */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	/* HTTP/1.1 requires Host (RFC 9112 §3.2); libevent does not check. */
	if (req->major == 1 && req->minor >= 1 &&
	    !evhttp_find_header(evhttp_request_get_input_headers(req), "Host")) {
		reply_err(req, 400, "an HTTP/1.1 request needs a Host header");
		return;
	}
	if (m == EVHTTP_REQ_GET) {
		if (!strcmp(path, "/health"))
			reply(req, 200, json_pack("{s:s,s:s,s:i}", "status", "ok", "version", GFLOW_VERSION,
						  "pid", (int)getpid()));
		else if (!strcmp(path, "/info"))
			h_info(s, req, &c);
		else if (!strcmp(path, "/jobs"))
			h_list(s, req, &c);
		else if (!strncmp(path, "/jobs/", 6) && strchr(path + 6, '/'))
			joblog_get(s, req, c.uid, c.admin, path + 6);
		else if (!strncmp(path, "/jobs/", 6))
			h_get(s, req, &c, path + 6);
		else if (!strcmp(path, "/gpus"))
			reply(req, 200, gpustate_json(s));
		else if (!strcmp(path, "/gpus/ignored"))
			reply(req, 200, json_pack("{s:o}", "ignored", gpustate_ignored_json(s)));
		else if (api_share_path(path))
			api_share_get(s, req, path);
		else if (!strcmp(path, "/metrics"))
			metrics_get(s, req);
		else if (!strcmp(path, "/history"))
			history_get(s, req);
		else if (!strcmp(path, "/") || !strncmp(path, "/ui", 3))
			web_get(s, req, path);
		else
			reply_err(req, 404, "no such endpoint: GET %s", path);
		return;
	}
	if (m != EVHTTP_REQ_POST) {
		reply_err(req, 405, "method not allowed");
		return;
	}
	if (!c.may_write) {
		reply_err(req, 401, "changes over TCP need 'Authorization: Bearer <token>' (see gflowd token)");
		return;
	}
	if (!(body = read_body(req, &e))) {
		reply_err(req, 400, "%s", e.msg);
		return;
	}
	if (!strcmp(path, "/jobs"))
		h_submit(s, req, &c, body);
	else if (!strcmp(path, "/jobs/cancel"))
		h_cancel(s, req, &c, body);
	else if (!strcmp(path, "/jobs/hold"))
		h_hold_release(s, req, &c, body, true);
	else if (!strcmp(path, "/jobs/release"))
		h_hold_release(s, req, &c, body, false);
	else if (!strcmp(path, "/jobs/update"))
		h_update(s, req, &c, body);
	else if (!strcmp(path, "/jobs/redo"))
		h_redo(s, req, &c, body);
	else if (!strcmp(path, "/jobs/limit"))
		h_limit(s, req, &c, body);
	else if (!strcmp(path, "/gpus/allowed"))
		h_set_gpus(s, req, &c, body);
	else if (!strcmp(path, "/gpus/ignore"))
		h_ignore(s, req, &c, body, true);
	else if (!strcmp(path, "/gpus/unignore"))
		h_ignore(s, req, &c, body, false);
	else if (!strcmp(path, "/tokens"))
		h_token(s, req, &c, false);
	else if (!strcmp(path, "/tokens/revoke"))
		h_token(s, req, &c, true);
	else if (!strcmp(path, "/notify/test"))
		notify_api_test(s, req, c.admin, body);
	else if (api_share_path(path))
		api_share_post(s, req, path, body, c.admin);
	else if (!strncmp(path, "/remote/", 8))
		api_remote(s, req, c.uid, c.admin, path + 8, body);
	else
		reply_err(req, 404, "no such endpoint: POST %s", path);
	json_decref(body);
}

/* The same field checks for api_remote.c. */
int api_check_fields(json_t *o, const char *const *allowed, const char *what, struct gf_err *e)
{
	return check_fields(o, allowed, what, e);
}

int api_get_str(json_t *o, const char *k, size_t max, char **out, struct gf_err *e)
{
	return get_str(o, k, max, out, e);
}

int api_get_int(json_t *o, const char *k, int64_t min, int64_t max, int64_t *out, struct gf_err *e)
{
	return get_int(o, k, min, max, out, e);
}

static void on_unix(struct evhttp_request *req, void *arg)
{
	double t0 = metrics_clock();

	route(req, arg, true);
	metrics_observe(&((struct server *)arg)->metrics.api, metrics_clock() - t0);
}

static void on_tcp(struct evhttp_request *req, void *arg)
{
	double t0 = metrics_clock();

	route(req, arg, false);
	metrics_observe(&((struct server *)arg)->metrics.api, metrics_clock() - t0);
}

/* ---- listeners, and the connections a reload waits for -------------------
 *
 * The Unix socket belongs to the daemon that holds the socket lock
 * (loop.c takes it before this runs): only that daemon binds or removes
 * the socket file. */

static int listen_unix(struct server *s, struct gf_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(s->paths.socket) >= sizeof sa.sun_path)
		return gf_err_set(e, "socket path too long: %s", s->paths.socket);
	if (s->sock_lock_fd < 0)
		return gf_err_set(e, "%s is not ours to bind (no socket lock)", s->paths.socket);
	strcpy(sa.sun_path, s->paths.socket);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return gf_err_set(e, "socket: %s", strerror(errno));
	unlink(s->paths.socket);	/* stale: we hold the socket lock */
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 512) < 0) {
		gf_err_set(e, "cannot listen on %s: %s", s->paths.socket, strerror(errno));
		close(fd);
		return -1;
	}
	/* Anyone who can reach the directory may connect; who they are comes
	 * from SO_PEERCRED, and that is what permissions are checked against. */
	chmod(s->paths.socket, 0666);
	s->unix_fd = fd;
	return 0;
}

int api_listen_tcp(const char *host, int port, struct gf_err *e)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char service[16];
	int fd = -1, rc, one = 1, err = 0;

	snprintf(service, sizeof service, "%d", port);
	rc = getaddrinfo(host, service, &hints, &ai);
	if (rc)
		return gf_err_set(e, "cannot listen on %s:%d: %s", host, port, gai_strerror(rc));
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 512) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		gf_err_set(e, "cannot listen on %s:%d: %s (is another gflowd or program using it? set "
			      "[daemon] port)", host, port, strerror(err));
		errno = err;	/* EADDRINUSE: a start goes on without TCP (api_init) */
		return -1;
	}
	return fd;
}

static struct evhttp *new_http(struct server *s, void (*cb)(struct evhttp_request *, void *))
{
	struct evhttp *h = evhttp_new(s->base);

	evhttp_set_max_body_size(h, MAX_BODY);
	evhttp_set_max_headers_size(h, 64 * 1024);
	evhttp_set_timeout(h, 60);
	evhttp_set_gencb(h, cb, s);
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	return h;
}

int api_init(struct server *s, struct gf_err *e)
{
	int tcp_fd;

	s->http_unix = new_http(s, on_unix);
	if (s->inherited[0] >= 0)
		s->unix_fd = s->inherited[0];	/* a reload: the same socket, nothing lost */
	else if (listen_unix(s, e))
		return -1;
	if (!(s->bound_unix = evhttp_accept_socket_with_handle(s->http_unix, s->unix_fd)))
		return gf_err_set(e, "cannot serve on %s", s->paths.socket);

	s->http_tcp = new_http(s, on_tcp);
	/* A reload hands over the TCP socket for the new host:port (the old
	 * daemon bound it, so that a port in use could not stop us here). A
	 * port another program holds (a system daemon's, say) does not stop a
	 * daemon: it serves its Unix socket and says once what it went without. */
	tcp_fd = s->inherited[1] >= 0 ? s->inherited[1] : api_listen_tcp(s->cfg.host, s->cfg.port, e);
	if (tcp_fd < 0 && errno == EADDRINUSE) {
		snprintf(s->tcp_note, sizeof s->tcp_note,
			 "%s:%d is in use by another program; running without TCP (set [daemon] port to "
			 "serve it elsewhere)", s->cfg.host, s->cfg.port);
		fprintf(stderr, "gflowd: %s\n", s->tcp_note);
		return 0;
	}
	if (tcp_fd < 0)
		return -1;
	if (!(s->bound_tcp = evhttp_accept_socket_with_handle(s->http_tcp, tcp_fd))) {
		if (s->inherited[1] < 0)
			close(tcp_fd);
		return gf_err_set(e, "cannot serve on %s:%d", s->cfg.host, s->cfg.port);
	}
	return 0;
}

static void set_listening(struct server *s, bool on)
{
	struct evhttp_bound_socket *b[] = { s->bound_unix, s->bound_tcp };

	for (size_t i = 0; i < 2; i++)
		if (b[i])
			(on ? evconnlistener_enable : evconnlistener_disable)(evhttp_bound_socket_get_listener(b[i]));
}

void api_pause(struct server *s)
{
	set_listening(s, false);
}

void api_resume(struct server *s)
{
	set_listening(s, true);
}

/* The local port of an INET or INET6 address, 0 for others. */
static int local_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

/* Does fd hold a connection accepted on one of the listeners: not itself
 * listening, and the same local path (Unix) or port (TCP: a listener on a
 * wildcard address accepts on the address the client reached)? */
static bool accepted_on(int fd, const struct sockaddr_storage *ls, const socklen_t *llen, int n)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	int listening = 0;
	socklen_t ilen = sizeof listening;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) < 0 || listening)
		return false;
	memset(&a, 0, sizeof a);
	if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (a.ss_family != ls[i].ss_family)
			continue;
		if (a.ss_family == AF_UNIX ? alen == llen[i] && !memcmp(&a, &ls[i], alen)
					   : local_port(&a) == local_port(&ls[i]))
			return true;
	}
	return false;
}

/* libevent keeps its connections to itself, so they are counted where the
 * kernel keeps them: our open sockets. */
int api_open_connections(struct server *s)
{
	struct sockaddr_storage ls[2];
	socklen_t llen[2];
	int fds[2], n = 0, count = 0;
	struct dirent *d;
	DIR *dir;

	if (api_fds(s, &fds[0], &fds[1]))
		return 0;
	for (int i = 0; i < 2 && fds[i] >= 0; i++) {
		llen[n] = sizeof ls[n];
		memset(&ls[n], 0, sizeof ls[n]);
		if (getsockname(fds[i], (struct sockaddr *)&ls[n], &llen[n]) == 0)
			n++;
	}
	if (!(dir = opendir("/proc/self/fd")))
		return 0;
	while ((d = readdir(dir))) {
		struct stat st;
		int fd = atoi(d->d_name);

		if (d->d_name[0] == '.' || fd == dirfd(dir) || fd == fds[0] || fd == fds[1])
			continue;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && accepted_on(fd, ls, llen, n))
			count++;
	}
	closedir(dir);
	return count;
}

int api_fds(struct server *s, int *unix_fd, int *tcp_fd)
{
	if (!s->bound_unix)
		return -1;
	*unix_fd = evhttp_bound_socket_get_fd(s->bound_unix);
	*tcp_fd = s->bound_tcp ? evhttp_bound_socket_get_fd(s->bound_tcp) : -1;
	return 0;
}

void api_close(struct server *s)
{
	if (s->http_unix)
		evhttp_free(s->http_unix);
	if (s->http_tcp)
		evhttp_free(s->http_tcp);
	/* Only the owner removes the socket: a daemon refused at start must
	 * not take it from the one that serves it. */
	if (s->sock_lock_fd >= 0)
		unlink(s->paths.socket);
}
