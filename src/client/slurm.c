/* slurm.c — running Slurm's commands for the client, here or over the
 * user's own ssh, and reading their answers (see slurm.h). */
#include "slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define SSH_CONNECT_SECS "15"

void slurm_out_free(struct slurm_out *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}

/* The words to exec: argv itself, or ssh HOST -- 'quoted words'. */
static char **full_argv(const struct gf_cluster *k, char *const *argv)
{
	struct sbuf cmd = { 0 };
	char **v;
	size_t i, n = 0;

	if (!k->host) {
		while (argv[n])
			n++;
		v = xcalloc(n + 1, sizeof *v);
		for (i = 0; i < n; i++)
			v[i] = xstrdup(argv[i]);
		return v;
	}
	for (i = 0; argv[i]; i++) {
		char *q = cluster_shquote(argv[i]);

		sbuf_addf(&cmd, "%s%s", i ? " " : "", q);
		free(q);
	}
	v = xcalloc(10, sizeof *v);
	v[n++] = xstrdup("ssh");
	v[n++] = xstrdup("-o");
	v[n++] = xstrdup("BatchMode=yes");
	v[n++] = xstrdup("-o");
	v[n++] = xstrdup("ConnectTimeout=" SSH_CONNECT_SECS);
	v[n++] = xstrdup(k->host);
	v[n++] = xstrdup("--");
	v[n++] = sbuf_take(&cmd);
	return v;
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char *slurm_command_text(const struct gf_cluster *k, char *const *argv)
{
	char **v = full_argv(k, argv);
	struct sbuf b = { 0 };

	for (size_t i = 0; v[i]; i++) {
		char *q = cluster_shquote(v[i]);

		sbuf_addf(&b, "%s%s", i ? " " : "", q);
		free(q);
	}
	free_argv(v);
	return sbuf_take(&b);
}

/* Feed `in` and collect stdout and stderr until both close. */
static void pump(int fin, int fout, int ferr, const char *in, struct sbuf *out,
    struct sbuf *err)
{
	size_t inlen = in ? strlen(in) : 0, off = 0;
	struct pollfd p[3] = { { fout, POLLIN, 0 }, { ferr, POLLIN, 0 }, { fin, POLLOUT, 0 } };
	char buf[8192];

	if (fin >= 0 && inlen == 0) {
		close(fin);
		p[2].fd = -1;
	}
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			r = read(p[i].fd, buf, sizeof buf);
			if (r > 0)
				sbuf_add(i ? err : out, buf, (size_t)r);
			else if (r == 0 || errno != EINTR) {
				close(p[i].fd);
				p[i].fd = -1;
			}
		}
		if (p[2].fd >= 0 && p[2].revents) {
			ssize_t w = write(p[2].fd, in + off, inlen - off);

			if (w > 0)
				off += (size_t)w;
			if ((w < 0 && errno != EINTR && errno != EAGAIN) || off == inlen) {
				close(p[2].fd);
				p[2].fd = -1;
			}
		}
	}
	if (p[2].fd >= 0)
		close(p[2].fd);
}

/* The last non-empty line of text, without Slurm's "prog: error: ". */
static void last_line(const char *text, char *out, size_t size)
{
	const char *end = text + strlen(text), *start, *p;

	while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	for (start = end; start > text && start[-1] != '\n'; start--)
		;
	if ((p = strstr(start, ": error: ")) && p < end)
		start = p + 9;
	if ((p = strstr(start, "Batch job submission failed: ")) && p < end)
		start = p + 29;
	snprintf(out, size, "%.*s", (int)(end - start), start);
}

extern char **environ;

/* This machine's own variables only (see cluster_machine_var), for Slurm's
 * commands run here: a local sbatch hands its environment to the job. */
static char **machine_env(void)
{
	size_t n = 0, i;
	char **v;

	while (environ[n])
		n++;
	v = xcalloc(n + 1, sizeof *v);
	for (i = 0, n = 0; environ[i]; i++)
		if (cluster_machine_var(environ[i]) && strncmp(environ[i], "SSH_", 4))
			v[n++] = environ[i];
	return v;
}

int slurm_run(const struct gf_cluster *k, char *const *argv, const char *in,
    struct slurm_out *r, struct gf_err *e)
{
	int pin[2], pout[2], perr[2], st;
	struct sbuf out = { 0 }, err = { 0 };
	char **v = full_argv(k, argv), line[400];
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC)) {
		free_argv(v);
		return gf_err_set(e, "cannot run %s: %s", argv[0], strerror(errno));
	}
	pid = fork();
	if (pid < 0) {
		free_argv(v);
		return gf_err_set(e, "cannot run %s: %s", argv[0], strerror(errno));
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		if (!k->host)
			execvpe(v[0], v, machine_env());
		execvp(v[0], v);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	signal(SIGPIPE, SIG_IGN);
	pump(pin[1], pout[0], perr[0], in, &out, &err);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	free_argv(v);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	sbuf_addc(&out, '\0');
	sbuf_addc(&err, '\0');
	r->out = sbuf_take(&out);
	r->err = sbuf_take(&err);
	if (k->host && r->status == 255) {
		last_line(r->err, line, sizeof line);
		gf_err_set(e, "cannot reach cluster %s over ssh (%s): %s", k->name, k->host,
		    line[0] ? line : "ssh failed");
		slurm_out_free(r);
		return -1;
	}
	if (r->status == 127) {
		gf_err_set(e, "%s not found %s (cluster %s)", argv[0],
		    k->host ? "on the cluster" : "here: is Slurm installed? (the profile names no host)",
		    k->name);
		slurm_out_free(r);
		return -1;
	}
	return 0;
}

int slurm_put(const struct gf_cluster *k, const char *dir, const char *path,
    const char *text, int exec, struct gf_err *e)
{
	char *const argv[] = { "sh", "-c", exec ?
		"umask 077 && mkdir -p \"$1\" && cat > \"$2\" && chmod u+x \"$2\"" :
		"umask 077 && mkdir -p \"$1\" && cat > \"$2\"",
		"sh", (char *)dir, (char *)path, NULL };
	struct slurm_out r;
	char line[400];

	if (slurm_run(k, argv, text, &r, e))
		return -1;
	if (r.status) {
		last_line(r.err, line, sizeof line);
		gf_err_set(e, "cannot write %s on cluster %s: %s", path, k->name, line);
	}
	slurm_out_free(&r);
	return r.status ? -1 : 0;
}

int slurm_sbatch(const struct gf_cluster *k, const char *script, int64_t gpus,
    char **id, struct gf_err *e)
{
	char *const argv[] = { "sbatch", "--parsable", (char *)script, NULL };
	struct slurm_out r;
	char line[400];
	size_t n;

	if (slurm_run(k, argv, NULL, &r, e))
		return -1;
	n = strspn(r.out, "0123456789");
	if (r.status || !n) {
		last_line(r.err[0] ? r.err : r.out, line, sizeof line);
		if (gpus > 0 && strstr(line, "node configuration is not available"))
			gf_err_set(e, "sbatch refused the job: %s (does the cluster have nodes "
			    "with %lld GPUs%s%s?)", line, (long long)gpus,
			    k->partition ? " in partition " : "", k->partition ? k->partition : "");
		else
			gf_err_set(e, "sbatch refused the job: %s", line[0] ? line : "no job id");
		slurm_out_free(&r);
		return -1;
	}
	*id = xmalloc(n + 1);
	memcpy(*id, r.out, n);
	(*id)[n] = '\0';
	slurm_out_free(&r);
	return 0;
}

/* ---------- states ---------- */

/* "123_4" → "123" appended to a comma list, once. */
static void add_base(struct sbuf *b, const char *id)
{
	size_t n = strcspn(id, "_");
	const char *p = sbuf_str(b);

	while (p && *p) {
		size_t m = strcspn(p, ",");

		if (m == n && !strncmp(p, id, n))
			return;
		p += m + (p[m] == ',');
	}
	sbuf_addf(b, "%s%.*s", b->len ? "," : "", (int)n, id);
}

int slurm_query(const struct gf_cluster *k, char *const *ids, size_t nids,
    struct slurm_state **out, size_t *n, struct gf_err *e)
{
	struct sbuf bases = { 0 }, missing = { 0 };
	struct slurm_out r;
	char line[400];
	size_t i;

	*out = NULL;
	*n = 0;
	for (i = 0; i < nids; i++)
		add_base(&bases, ids[i]);
	{
		char *const argv[] = { "squeue", "--noheader", "--array", "--states=all",
			"--jobs", (char *)sbuf_str(&bases),
			"--Format=ArrayJobID:|,ArrayTaskID:|,State:|,Reason:|,exit_code:|,"
			"StartTime:|,EndTime:|", NULL };

		if (slurm_run(k, argv, NULL, &r, e))
			goto fail;
	}
	/* squeue fails when it knows none of the ids: then sacct says */
	if (r.status == 0)
		cluster_parse_squeue(r.out, ids, nids, out, n);
	slurm_out_free(&r);
	for (i = 0; i < nids; i++)
		if (!cluster_knows(*out, *n, ids[i]))
			sbuf_addf(&missing, "%s%s", missing.len ? "," : "", ids[i]);
	if (missing.len) {
		char *const acct[] = { "sacct", "--noheader", "--parsable2", "--allocations",
			"--jobs", (char *)sbuf_str(&missing),
			"--format=JobID,State,ExitCode,Start,End", NULL };
		/* without slurmdbd: the job completion log (JobCompType) */
		char *const comp[] = { "sacct", "--completion", "--noheader", "--parsable2",
			"--jobs", (char *)sbuf_str(&missing),
			"--format=JobID,State,ExitCode,Start,End", NULL };

		if (slurm_run(k, acct, NULL, &r, e))
			goto fail;
		if (r.status) {
			slurm_out_free(&r);
			if (slurm_run(k, comp, NULL, &r, e))
				goto fail;
		}
		if (r.status == 0)
			cluster_parse_sacct(r.out, ids, nids, out, n);
		else if (!*n) {
			last_line(r.err, line, sizeof line);
			gf_err_set(e, "cluster %s: neither squeue nor sacct knows jobs %s (%s)",
			    k->name, sbuf_str(&missing), line);
			slurm_out_free(&r);
			goto fail;
		}
		slurm_out_free(&r);
	}
	sbuf_free(&bases);
	sbuf_free(&missing);
	return 0;
fail:
	sbuf_free(&bases);
	sbuf_free(&missing);
	cluster_states_free(*out, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

int slurm_control(const struct gf_cluster *k, const char *verb,
    char *const *ids, size_t nids, struct gf_err *e)
{
	char **argv = xcalloc(nids + 3, sizeof *argv);
	struct slurm_out r;
	size_t n = 0;
	char line[400];
	int rc = 0;

	if (!strcmp(verb, "cancel")) {
		argv[n++] = "scancel";
	} else {
		/* uhold: a hold its user may release (root's plain hold is
		 * an admin's) */
		argv[n++] = "scontrol";
		argv[n++] = !strcmp(verb, "hold") ? "uhold" : (char *)verb;
	}
	for (size_t i = 0; i < nids; i++)
		argv[n++] = ids[i];
	if (slurm_run(k, argv, NULL, &r, e)) {
		free(argv);
		return -1;
	}
	if (r.status) {
		last_line(r.err, line, sizeof line);
		rc = gf_err_set(e, "%s on cluster %s: %s", argv[0], k->name,
		    line[0] ? line : "failed");
	}
	slurm_out_free(&r);
	free(argv);
	return rc;
}
