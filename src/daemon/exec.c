/* exec.c — starting processes: the only file in the daemon that forks.
 *
 * A job is started by writing its run directory (the environment it will
 * run with) and launching `gflow-runner` for it, either as the command of a
 * new detached tmux session or as a detached process of its own. */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runfile.h"

extern char **environ;

static void child_exec(char *const argv[], const char *out_path)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	for (int i = 3; i < 1024; i++)
		close(i);
	execv(argv[0], argv);
	/* Only async-signal-safe calls here: the daemon has a poller thread. */
	(void)!write(2, "gflowd: cannot run ", 19);
	(void)!write(2, argv[0], strlen(argv[0]));
	(void)!write(2, "\n", 1);
	_exit(127);
}

int exec_spawn(char *const argv[], const char *out_path, bool wait_for_exit, int *status,
	       struct gf_err *e)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return gf_err_set(e, "fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		if (!wait_for_exit) {
			/* Detach fully: the grandchild is not our child, so it
			 * outlives us and never becomes our zombie. */
			pid_t g = fork();

			if (g != 0)
				_exit(g < 0 ? 1 : 0);
		}
		child_exec(argv, out_path);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return gf_err_set(e, "waitpid: %s", strerror(errno));
	if (status)
		*status = st;
	if (!wait_for_exit && (!WIFEXITED(st) || WEXITSTATUS(st)))
		return gf_err_set(e, "could not start %s", argv[0]);
	return 0;
}

void exec_run_dir(struct server *s, const struct job *j, char *buf, size_t size)
{
	gf_pathf(buf, size, "%s/%lld.%lld", s->paths.run_dir, (long long)j->id, (long long)j->run_seq);
}

/* Variables gflow sets itself; the submitter's values are dropped. */
static bool ours(const char *kv)
{
	static const char *const names[] = { "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "GFLOW_JOB_ID=",
					     "GFLOW_JOB_NAME=", "GFLOW_ARRAY_TASK_ID=", "GFLOW_GPU_IDS=",
					     "GFLOW_GPU_MEMORY_MB=", "TMUX=", "TMUX_PANE=" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strncmp(kv, names[i], strlen(names[i])))
			return true;
	return false;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_var(struct buf *b, const char *name, const char *value)
{
	buf_add(b, name, strlen(name));
	buf_add(b, "=", 1);
	buf_add(b, value, strlen(value));
	buf_add(b, "", 1);
}

static int write_env(struct server *s, const struct job *j, const char *dir, struct gf_err *e)
{
	struct buf b = { 0 };
	char *env = NULL, ids[256] = "", num[32];
	size_t len = 0;
	int rc;

	if (store_get_env(s->store, j->env_id, &env, &len, e))
		return -1;
	for (size_t off = 0; off < len;) {
		size_t n = strnlen(env + off, len - off);

		if (n && !ours(env + off)) {
			buf_add(&b, env + off, n);
			buf_add(&b, "", 1);
		}
		off += n + 1;
	}
	free(env);
	for (int i = 0, first = 1; i < 64; i++)
		if (j->gpu_mask & (1ULL << i)) {
			size_t l = strlen(ids);

			snprintf(ids + l, sizeof ids - l, "%s%d", first ? "" : ",", i);
			first = 0;
		}
	buf_var(&b, "CUDA_VISIBLE_DEVICES", ids);
	buf_var(&b, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	buf_var(&b, "GFLOW_GPU_IDS", ids);
	snprintf(num, sizeof num, "%lld", (long long)j->id);
	buf_var(&b, "GFLOW_JOB_ID", num);
	buf_var(&b, "GFLOW_JOB_NAME", j->name ? j->name : "");
	snprintf(num, sizeof num, "%lld", (long long)j->array_task_id);
	buf_var(&b, "GFLOW_ARRAY_TASK_ID", num);
	if (j->gpu_memory_mb) {
		snprintf(num, sizeof num, "%lld", (long long)j->gpu_memory_mb);
		buf_var(&b, "GFLOW_GPU_MEMORY_MB", num);
	}
	/* Only a runner started from this boot reads it: no fsync needed. */
	rc = write_file_replace(dir, "env", b.p, b.len, e);
	free(b.p);
	return rc;
}

/* A run directory holds only plain files (env, runner, result, their .tmp
 * siblings after a crash, runner.out): remove them and it. */
void exec_remove_run_dir(struct server *s, const struct job *j)
{
	char dir[GF_PATH_MAX], path[GF_PATH_MAX + 300];
	struct dirent *d;
	DIR *dp;

	exec_run_dir(s, j, dir, sizeof dir);
	if (!(dp = opendir(dir)))
		return;
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
		    !gf_pathf(path, sizeof path, "%s/%s", dir, d->d_name))
			unlink(path);
	closedir(dp);
	rmdir(dir);
}

struct argv {
	char *v[64];
	char *own[16];
	int n, nown;
};

static void arg(struct argv *a, const char *s)
{
	if (a->n < 63)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static void argf(struct argv *a, const char *fmt, long long v)
{
	char tmp[32];

	snprintf(tmp, sizeof tmp, fmt, v);
	a->own[a->nown] = strdup(tmp);
	arg(a, a->own[a->nown++]);
}

/* Conda: activation happens in bash through conda's own hook; the job's
 * argv follows as "$@", so no word of it is parsed by the shell. */
static const char conda_wrapper[] =
	"eval \"$(conda shell.bash hook)\" && conda activate \"$0\" && exec \"$@\"";

int exec_start_job(struct server *s, struct job *j, struct gf_err *e)
{
	char dir[GF_PATH_MAX], log[GF_PATH_MAX], out[GF_PATH_MAX + 16], *full[4096 + 64];
	struct argv a = { .n = 0 };
	const char *grace = getenv("GFLOW_KILL_GRACE_SECS");
	size_t n = 0, argc = strv_len(j->argv);
	int status, rc;

	exec_remove_run_dir(s, j);
	exec_run_dir(s, j, dir, sizeof dir);
	if (mkdir(dir, 0700) < 0)
		return gf_err_set(e, "cannot create %s: %s", dir, strerror(errno));
	if (write_env(s, j, dir, e))
		return -1;
	jobs_log_path(s, j->id, log, sizeof log);
	snprintf(out, sizeof out, "%s/runner.out", dir);
	if (argc > 4096)
		return gf_err_set(e, "command has too many arguments");

	if (j->executor == EXEC_TMUX) {
		char session[64];

		snprintf(session, sizeof session, "gflow-%lld", (long long)j->id);
		job_set_str(&j->tmux_session, session);
		full[n++] = "/usr/bin/env";
		full[n++] = "tmux";
		full[n++] = "new-session";
		full[n++] = "-d";
		full[n++] = "-s";
		full[n++] = j->tmux_session;
		full[n++] = "-x";
		full[n++] = "200";
		full[n++] = "-y";
		full[n++] = "50";
		full[n++] = "--";
	}
	arg(&a, s->runner_path);
	arg(&a, "--job");
	argf(&a, "%lld", (long long)j->id);
	arg(&a, "--dir");
	arg(&a, dir);
	arg(&a, "--log");
	arg(&a, log);
	arg(&a, "--cwd");
	arg(&a, j->cwd ? j->cwd : "/");
	if (j->time_limit_secs) {
		arg(&a, "--time-limit");
		argf(&a, "%lld", (long long)j->time_limit_secs);
	}
	if (j->memory_mb && s->cgroup_parent[0]) {
		arg(&a, "--memory-max");
		argf(&a, "%lld", (long long)j->memory_mb * 1024 * 1024);
		arg(&a, "--cgroup-parent");
		arg(&a, s->cgroup_parent);
	}
	arg(&a, "--grace");
	argf(&a, "%lld", grace && atoi(grace) > 0 ? (long long)atoi(grace) : 10LL);
	if (j->executor == EXEC_TMUX)
		arg(&a, "--pty");
	arg(&a, "--");
	for (int i = 0; i < a.n; i++)
		full[n++] = a.v[i];
	if (j->conda_env) {
		full[n++] = "/bin/bash";
		full[n++] = "-c";
		full[n++] = (char *)conda_wrapper;
		full[n++] = j->conda_env;
	}
	for (size_t i = 0; i < argc; i++)
		full[n++] = j->argv[i];
	full[n] = NULL;

	if (j->executor == EXEC_TMUX) {
		rc = exec_spawn(full, out, true, &status, e);
		if (!rc && (!WIFEXITED(status) || WEXITSTATUS(status)))
			rc = gf_err_set(e, "tmux new-session failed (see %s)", out);
	} else
		rc = exec_spawn(full, out, false, NULL, e);
	for (int i = 0; i < a.nown; i++)
		free(a.own[i]);
	return rc;
}
