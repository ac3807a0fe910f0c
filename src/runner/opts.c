/* opts.c — gflow-runner's command line, and the job's environment, command
 * and spec (working directory, log): from RUNDIR/env, RUNDIR/argv and
 * RUNDIR/spec (never through a link), or, for a standby, from what the
 * daemon sent on its pipe. Nothing of the job is on our command line, which
 * anyone may read (/proc/PID/cmdline). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobvars.h"
#include "runner.h"

#define LIST_MAX (64u << 20)	/* refuse an env or argv file bigger than this */

static int parse_secs(const char *opt, const char *s, bool zero_ok, double *v, struct gf_err *e)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(*v) || *v < 0 || (*v == 0 && !zero_ok) || *v > 1e9)
		return gf_err_set(e, "invalid %s '%s': expected a number of seconds", opt, s);
	return 0;
}

int parse_opts(int argc, char **argv, struct opts *o, struct gf_err *e)
{
	enum { O_JOB = 1, O_DIR, O_LOG, O_CWD, O_TIME, O_GRACE, O_CGROUP, O_PTY, O_UID, O_GID, O_LOGNEW,
	       O_ATTACH, O_ATTACH_GID, O_HOLD, O_ENV_BYTES, O_ARGV_BYTES, O_SPEC_BYTES, O_LIMITS_BYTES, O_INTERACTIVE, O_ATTACH_WAIT, O_REPORT, O_MAKE_CGROUP };
	static const struct option longopts[] = {
		{ "job", required_argument, NULL, O_JOB },
		{ "dir", required_argument, NULL, O_DIR },
		{ "log", required_argument, NULL, O_LOG },
		{ "cwd", required_argument, NULL, O_CWD },
		{ "time-limit", required_argument, NULL, O_TIME },
		{ "grace", required_argument, NULL, O_GRACE },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "pty", no_argument, NULL, O_PTY },
		{ "uid", required_argument, NULL, O_UID },
		{ "gid", required_argument, NULL, O_GID },
		{ "log-new", no_argument, NULL, O_LOGNEW },
		{ "attach", required_argument, NULL, O_ATTACH },
		{ "attach-group", required_argument, NULL, O_ATTACH_GID },
		{ "hold", no_argument, NULL, O_HOLD },
		{ "report", no_argument, NULL, O_REPORT },
		{ "make-cgroup", no_argument, NULL, O_MAKE_CGROUP },
		{ "interactive", no_argument, NULL, O_INTERACTIVE },
		{ "attach-wait", required_argument, NULL, O_ATTACH_WAIT },
		{ "env-bytes", required_argument, NULL, O_ENV_BYTES },
		{ "argv-bytes", required_argument, NULL, O_ARGV_BYTES },
		{ "spec-bytes", required_argument, NULL, O_SPEC_BYTES },
		{ "limits-bytes", required_argument, NULL, O_LIMITS_BYTES },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof *o);
	o->grace = 10;
	o->attach_wait = 60;
	o->uid = o->gid = o->attach_gid = o->env_bytes = o->argv_bytes = o->spec_bytes = o->limits_bytes = -1;
	opterr = 0;
	optind = 0;	/* from the first word again: a standby parses a request per job it serves */
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case O_JOB:
			o->job = optarg;
			if (!*optarg || strspn(optarg, "0123456789") != strlen(optarg))
				return gf_err_set(e, "invalid --job '%s': expected a job id", optarg);
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_LOG:
			o->log = optarg;
			break;
		case O_CWD:
			o->cwd = optarg;
			break;
		case O_TIME:
			if (parse_secs("--time-limit", optarg, true, &o->time_limit, e))
				return -1;
			break;
		case O_GRACE:
			if (parse_secs("--grace", optarg, true, &o->grace, e))
				return -1;
			break;
		case O_CGROUP:
			if (o->ncgroups == MAX_CGROUPS)
				return gf_err_set(e, "at most %d --cgroup options", MAX_CGROUPS);
			if (optarg[0] != '/')
				return gf_err_set(e, "invalid --cgroup '%s': expected an absolute path", optarg);
			o->cgroups[o->ncgroups++] = optarg;
			break;
		case O_ATTACH:
			if (optarg[0] != '/')
				return gf_err_set(e, "invalid --attach '%s': expected an absolute path", optarg);
			o->attach = optarg;
			break;
		case O_UID:
		case O_GID:
		case O_ATTACH_GID:
		case O_ENV_BYTES:
		case O_ARGV_BYTES:
		case O_SPEC_BYTES:
		case O_LIMITS_BYTES: {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (!*optarg || *end || errno || v < 0 || v > 0x7fffffff)
				return gf_err_set(e, "invalid %s '%s': expected a number", argv[optind - 2], optarg);
			*(c == O_UID	     ? &o->uid
			  : c == O_GID	     ? &o->gid
			  : c == O_ENV_BYTES ? &o->env_bytes
			  : c == O_ARGV_BYTES ? &o->argv_bytes
			  : c == O_SPEC_BYTES ? &o->spec_bytes
			  : c == O_LIMITS_BYTES ? &o->limits_bytes
					     : &o->attach_gid) = v;
			break;
		}
		case O_LOGNEW:
			o->log_new = true;
			break;
		case O_PTY:
			o->pty = true;
			break;
		case O_HOLD:
			o->hold = true;
			break;
		case O_REPORT:
			o->report = true;
			break;
		case O_MAKE_CGROUP:
			o->make_cgroup = true;
			break;
		case O_INTERACTIVE:
			o->interactive = true;
			break;
		case O_ATTACH_WAIT:
			if (parse_secs("--attach-wait", optarg, false, &o->attach_wait, e))
				return -1;
			break;
		case ':':
			return gf_err_set(e, "option '%s' needs a value", argv[optind - 1]);
		default:
			return gf_err_set(e, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!o->job)
		return gf_err_set(e, "missing --job");
	if (!o->dir)
		return gf_err_set(e, "missing --dir");
	if ((o->uid < 0) != (o->gid < 0))
		return gf_err_set(e, "--uid and --gid go together");
	if (o->attach && !o->pty)
		return gf_err_set(e, "--attach needs --pty");
	if (o->interactive && !o->attach)
		return gf_err_set(e, "--interactive needs --attach");
	if (o->attach_gid >= 0 && !o->attach)
		return gf_err_set(e, "--attach-group needs --attach");
	o->argv = optind < argc ? argv + optind : NULL;
	return 0;
}

/* --- the environment and the command ---------------------------------- */

/* NUL-separated entries (the last may lack its NUL) of blob[0..len), which
 * ends in a NUL past them: *vec (NULL-terminated) points into it. */
static int split_list(char *blob, size_t len, char ***vec_out, size_t *count, struct gf_err *e)
{
	size_t n = 0;
	char **vec;

	for (size_t off = 0; off < len; off += strlen(blob + off) + 1)
		n++;
	vec = calloc(n + 1, sizeof *vec);
	if (!vec)
		return gf_err_set(e, "out of memory");
	n = 0;
	for (size_t off = 0; off < len; off += strlen(blob + off) + 1)
		vec[n++] = blob + off;
	*vec_out = vec;
	*count = n;
	return 0;
}

/* The list of RUNDIR/name, or, for a standby told its size, what the
 * daemon sent after the request (*blob_out set already: `given` bytes).
 * *blob owns the text. */
static int read_list(struct runner *r, const char *name, const char *what, long long given, char **blob_out,
		     char ***vec_out, size_t *count, struct gf_err *e)
{
	size_t len = 0, cap = 0;
	char *blob = NULL;
	int fd;

	if (given >= 0) {
		if (split_list(*blob_out, (size_t)given, vec_out, count, e))
			return -1;
		return 0;
	}
	fd = openat(r->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return gf_err_set(e, "cannot read %s %s/%s: %s", what, r->o.dir, name, strerror(errno));
	for (;;) {
		ssize_t got;

		if (len + 1 >= cap) {
			char *p;

			cap = cap ? cap * 2 : 65536;
			if (cap > LIST_MAX + 1 || !(p = realloc(blob, cap))) {
				free(blob);
				close(fd);
				return gf_err_set(e, "%s %s/%s is too big", what, r->o.dir, name);
			}
			blob = p;
		}
		got = read(fd, blob + len, cap - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int err = errno;

			free(blob);
			close(fd);
			return gf_err_set(e, "cannot read %s %s/%s: %s", what, r->o.dir, name, strerror(err));
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	blob[len] = '\0';
	if (split_list(blob, len, vec_out, count, e)) {
		free(blob);
		return -1;
	}
	*blob_out = blob;
	return 0;
}

/* RUNDIR/env is the job's whole environment; entries without '=' are
 * dropped. */
int read_env(struct runner *r, struct gf_err *e)
{
	size_t n, k = 0;

	if (read_list(r, "env", "the job's environment", r->o.env_bytes, &r->env_blob, &r->envp, &n, e))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strchr(r->envp[i], '=') && r->envp[i][0] != '=')
			r->envp[k++] = r->envp[i];
	r->envp[k] = NULL;
	return 0;
}

/* RUNDIR/limits into text: 0, 1 when there is none (a job submitted
 * without limits), -1 with e set. */
static int limits_file(struct runner *r, char *text, size_t size, struct gf_err *e)
{
	ssize_t n;
	int fd = openat(r->dirfd, "limits", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return gf_err_set(e, "cannot read the job's limits %s/limits: %s", r->o.dir, strerror(errno));
	do
		n = read(fd, text, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return gf_err_set(e, "cannot read the job's limits %s/limits: %s", r->o.dir, strerror(errno));
	if ((size_t)n == size - 1)
		return gf_err_set(e, "the job's limits %s/limits are too long", r->o.dir);
	text[n] = '\0';
	return 0;
}

/* The submitter's resource limits — a standby's follow its request
 * (--limits-bytes), else RUNDIR/limits (rundir.c) when there —, each capped
 * at our own hard limit (a job never gets a limit raised past what we have:
 * that needs a privilege it must not get from us). */
int read_limits(struct runner *r, struct gf_err *e)
{
	char text[GF_RLIMITS_TEXT_MAX];
	struct gf_rlimits own;
	bool given = r->o.limits_bytes >= 0;
	int rc;

	memset(&r->limits, 0, sizeof r->limits);
	if (given) {
		if ((size_t)r->o.limits_bytes >= sizeof text)
			return gf_err_set(e, "the job's limits are too long");
		memcpy(text, r->limits_blob, (size_t)r->o.limits_bytes);
		text[r->o.limits_bytes] = '\0';
	} else if ((rc = limits_file(r, text, sizeof text, e)))
		return rc < 0 ? -1 : 0;
	if (gf_rlimits_parse(text, &r->limits, e))
		return given ? gf_err_prefix(e, "the job's limits") : gf_err_prefix(e, "%s/limits", r->o.dir);
	gf_rlimits_capture(&own);
	gf_rlimits_clamp(&r->limits, &own);
	gf_rlimits_drop_held(&r->limits, &own);	/* the job inherits those: no call to make */
	return 0;
}

/* The command: after `--`, else RUNDIR/argv (the daemon's way: no length
 * limit of tmux's or our own command line applies to it). */
int read_argv(struct runner *r, struct gf_err *e)
{
	size_t n;

	if (r->o.argv) {
		r->argv = r->o.argv;
		for (n = 0; r->argv[n]; n++)
			;
	} else {
		if (read_list(r, "argv", "the job's command", r->o.argv_bytes, &r->argv_blob, &r->argv, &n, e))
			return -1;
		if (!n || !r->argv[0][0])
			return r->o.argv_bytes >= 0 ? gf_err_set(e, "the job's command (--argv-bytes) is empty")
						    : gf_err_set(e, "%s/argv holds no command", r->o.dir);
	}
	/* $GFLOW_ARRAY_TASK_ID and the like, from the job's own environment. */
	if (!(r->argv_owned = calloc(n + 1, sizeof *r->argv_owned)))
		return gf_err_set(e, "out of memory");
	r->nargv = n;
	for (size_t i = 0; i < n; i++) {
		if (gf_jobvars_expand(r->argv[i], r->envp, &r->argv_owned[i]))
			return gf_err_set(e, "out of memory");
		if (r->argv_owned[i])
			r->argv[i] = r->argv_owned[i];
	}
	return 0;
}

/* A CPU list "0-1,4" into *set; -1 when it is not one. */
static int parse_cpus(const char *p, cpu_set_t *set)
{
	CPU_ZERO(set);
	if (!*p)
		return -1;
	while (*p) {
		char *end;
		long a, b;

		if (*p < '0' || *p > '9')
			return -1;
		a = b = strtol(p, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -1;
			b = strtol(end + 1, &end, 10);
		}
		if (a > b || b >= CPU_SETSIZE || (*end && *end != ','))
			return -1;
		for (long i = a; i <= b; i++)
			CPU_SET((int)i, set);
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return -1;
	}
	return 0;
}

/* RUNDIR/spec (a standby: what followed the request, --spec-bytes): what of
 * the job the daemon does not put on our command line, NUL-separated
 * NAME=value entries: cwd=DIR, log=PATH, log-new=1. A runner started by
 * hand may give them as options (--cwd, --log, --log-new) instead; then
 * there is no spec to read. */
int read_spec(struct runner *r, struct gf_err *e)
{
	size_t n;

	if (r->o.spec_bytes < 0 && r->o.log && r->o.cwd)
		return 0;
	if (read_list(r, "spec", "the job's spec", r->o.spec_bytes, &r->spec_blob, &r->spec, &n, e))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *kv = r->spec[i], *v = strchr(kv, '=');

		if (!v)
			return gf_err_set(e, "the job's spec: '%.64s' is not NAME=value", kv);
		v++;
		if (!strncmp(kv, "cwd=", 4) && !r->o.cwd)
			r->o.cwd = v;
		else if (!strncmp(kv, "log=", 4) && !r->o.log)
			r->o.log = v;
		else if (!strcmp(kv, "log-new=1"))
			r->o.log_new = true;
		else if (!strncmp(kv, "owner=", 6))
			r->spec_owner = v;
		else if (!strncmp(kv, "groups=", 7))
			r->spec_groups = v;
		else if (!strncmp(kv, "cpus=", 5)) {
			if (parse_cpus(v, &r->cpuset))
				return gf_err_set(e, "the job's spec: cpus= '%.64s' is not a CPU list", v);
			r->cpus = v;
		} else if (strncmp(kv, "cwd=", 4) && strncmp(kv, "log=", 4))
			return gf_err_set(e, "the job's spec: unknown entry '%.64s'", kv);
	}
	if (!r->o.log)
		return gf_err_set(e, "missing --log (or log= in %s/spec)", r->o.dir);
	if (!r->o.cwd)
		return gf_err_set(e, "missing --cwd (or cwd= in %s/spec)", r->o.dir);
	return 0;
}
