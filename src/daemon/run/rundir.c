/* rundir.c — a start's files: the job's run directory (RUNDIR/ID.RUN) and
 * the environment, command and spec lists in it, its log (LOGDIR/ID.log,
 * or ID.N.log when that name is taken), the
 * spares made ahead of starts, and the system daemon's attach socket of a
 * tmux-executor job. exec.c starts the runner that uses them; reap.c
 * reads and removes them. Nothing here is reached through a symbolic
 * link: the run and log directories are opened once (exec_init) and
 * everything in them is made with openat(O_EXCL | O_NOFOLLOW), mkdirat or
 * a rename that does not replace, so a link planted there fails the job
 * and touches nothing outside. */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"
#include "runfile.h"

static void run_dir_name(const struct job *j, char *buf, size_t size)
{
	snprintf(buf, size, "%lld.%lld", (long long)j->id, (long long)j->run_seq);
}

void rundir_path(struct server *s, const struct job *j, char *buf, size_t size)
{
	gf_pathf(buf, size, "%s/%lld.%lld", s->paths.run_dir, (long long)j->id, (long long)j->run_seq);
}

/* Variables gflow sets itself; the submitter's values are dropped. */
static bool ours(const char *kv)
{
	static const char *const names[] = { "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "GFLOW_JOB_ID=",
					     "GFLOW_JOB_NAME=", "GFLOW_ARRAY_TASK_ID=", "GFLOW_GPU_IDS=",
					     "GFLOW_GPU_MEMORY_MB=", "GFLOW_JOB_MARK=", "GFLOW_RESTART_COUNT=", "TMUX=",
					     "TMUX_PANE=" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strncmp(kv, names[i], strlen(names[i])))
			return true;
	return false;
}

static void buf_add(struct gf_bytes *b, const char *s, size_t n)
{
	b->p = gf_grow(b->p, &b->cap, b->len + n + 1, 1, 256);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_var(struct gf_bytes *b, const char *name, const char *value)
{
	buf_add(b, name, strlen(name));
	buf_add(b, "=", 1);
	buf_add(b, value, strlen(value));
	buf_add(b, "", 1);
}

/* The job's whole environment, NUL-separated: what it was submitted with
 * (less our own variables) and ours. */
int rundir_env(struct server *s, const struct job *j, struct gf_bytes *out, struct gf_err *e)
{
	struct gf_bytes b = { 0 };
	char *env = NULL, ids[256] = "", num[32], mark[128], cvd[64 * 100];
	size_t len = 0;

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
	devices_cuda_visible(s, j->gpu_mask, cvd, sizeof cvd);	/* MIG devices by UUID */
	buf_var(&b, "CUDA_VISIBLE_DEVICES", cvd);
	buf_var(&b, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	buf_var(&b, "GFLOW_GPU_IDS", ids);
	snprintf(num, sizeof num, "%lld", (long long)j->id);
	buf_var(&b, "GFLOW_JOB_ID", num);
	buf_var(&b, "GFLOW_JOB_NAME", j->name ? j->name : "");
	snprintf(num, sizeof num, "%lld", (long long)job_array_task_id(j));
	buf_var(&b, "GFLOW_ARRAY_TASK_ID", num);
	/* How many times it was preempted and queued again (0: its first run). */
	snprintf(num, sizeof num, "%lld", (long long)jm(j)->requeues);
	buf_var(&b, "GFLOW_RESTART_COUNT", num);
	if (jm(j)->gpu_memory_mb) {
		snprintf(num, sizeof num, "%lld", (long long)jm(j)->gpu_memory_mb);
		buf_var(&b, "GFLOW_GPU_MEMORY_MB", num);
	}
	/* How the daemon knows the job's processes when no cgroup can. */
	track_marker(s, j, mark, sizeof mark);
	buf_add(&b, mark, strlen(mark) + 1);
	*out = b;
	return 0;
}

/* Conda: activation happens in bash through conda's own hook (conda from
 * $CONDA_EXE, else the PATH); the job's argv follows as "$@", so no word
 * of it is parsed by the shell. */
static const char conda_wrapper[] =
	"eval \"$(\"${CONDA_EXE:-conda}\" shell.bash hook)\" && conda activate \"$0\" && exec \"$@\"";

/* The job's command, NUL-separated. */
struct gf_bytes rundir_argv(const struct job *j)
{
	struct gf_bytes b = { 0 };

	if (jm(j)->conda_env) {
		buf_add(&b, "/bin/bash", sizeof "/bin/bash");
		buf_add(&b, "-c", sizeof "-c");
		buf_add(&b, conda_wrapper, sizeof conda_wrapper);
		buf_add(&b, jm(j)->conda_env, strlen(jm(j)->conda_env) + 1);
	}
	for (char **a = j->argv; *a; a++)
		buf_add(&b, *a, strlen(*a) + 1);
	return b;
}

/* The runner's spec: what of the job it needs that no command line may
 * carry, since anyone may read a process's command line (/proc/PID/cmdline,
 * ps): its working directory and its log, NUL-separated NAME=value entries
 * (cwd=, log=, and log-new=1 when the runner makes the log: as the owner,
 * a new file, the first free name from log= on; runner/opts.c). */
struct gf_bytes rundir_spec(const struct job *j, const char *log, bool log_new, const char *owner,
			    const char *groups)
{
	struct gf_bytes b = { 0 };

	buf_var(&b, "cwd", j->cwd ? j->cwd : "/");
	buf_var(&b, "log", log);
	if (owner) {	/* system mode: who the job runs as (spawn_owner_ids) */
		buf_var(&b, "owner", owner);
		buf_var(&b, "groups", groups);
	}
	if (log_new)
		buf_var(&b, "log-new", "1");
	if (jm(j)->cpu_ids)	/* [daemon] constrain_cpus: the runner pins the job */
		buf_var(&b, "cpus", jm(j)->cpu_ids);
	return b;
}

/* The runner reads the job's environment, command and spec from RUNDIR/env,
 * RUNDIR/argv and RUNDIR/spec (so no command line, tmux's or the runner's,
 * limits their length or shows them to others) — a standby from its pipe
 * instead (see standby_hand). Only a runner started from this boot reads
 * them: no fsync needed. */
int rundir_write_lists(int dfd, const char *dir, const struct gf_bytes *env, const struct gf_bytes *argv,
		       const struct gf_bytes *spec, struct gf_err *e)
{
	return write_file_new_at(dfd, dir, "env", env->p, env->len, e) ||
			       write_file_new_at(dfd, dir, "argv", argv->p, argv->len, e) ||
			       write_file_new_at(dfd, dir, "spec", spec->p, spec->len, e)
		       ? -1
		       : 0;
}

/* The job's resource limits (rlimits.h's text form, as stored) in
 * RUNDIR/limits, empty or new, for a runner of its own or under tmux (a
 * standby gets them after its request, --limits-bytes): the runner caps
 * each at its own hard limit and sets them on the job's process before its
 * exec. A job without limits gets no file (or the empty one a kept run
 * directory brings: no limits either). */
int rundir_write_limits(int dfd, const char *dir, const struct job *j, struct gf_err *e)
{
	const char *l = j->rlimits;

	return l ? write_file_new_at(dfd, dir, "limits", l, strlen(l), e) : 0;
}

/* System mode, tmux executor, or an interactive job (galloc): where the
 * runner offers the job's terminal (derived from the id: it needs nothing
 * stored). */
bool rundir_attach_socket(struct server *s, const struct job *j, char *buf, size_t size)
{
	return ((s->paths.system && j->executor == EXEC_TMUX) || jm(j)->interactive) &&
	       gf_pathf(buf, size, "%s/attach/%lld.sock", s->paths.runtime_dir, (long long)j->id) == 0;
}

/* <runtime dir>/attach, root's, 0711: anyone may reach a socket in it
 * whose name they know, nobody lists or plants anything there. A stale
 * socket of this job is removed. */
int rundir_attach_prepare(struct server *s, const struct job *j, char *sock, size_t size, struct gf_err *e)
{
	char dir[GF_PATH_MAX];
	struct stat st;

	if (!rundir_attach_socket(s, j, sock, size) || gf_pathf(dir, sizeof dir, "%s/attach", s->paths.runtime_dir))
		return gf_err_set(e, "the attach socket path is too long");
	if (mkdir(dir, 0711) && errno != EEXIST)
		return gf_err_set(e, "cannot create %s: %s", dir, strerror(errno));
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return gf_err_set(e, "%s is not a directory of the daemon's own: not using it", dir);
	if ((st.st_mode & 07777) != 0711 && chmod(dir, 0711))
		return gf_err_set(e, "cannot set mode 0711 on %s: %s", dir, strerror(errno));
	if (unlink(sock) && errno != ENOENT)
		return gf_err_set(e, "cannot remove the stale %s: %s", sock, strerror(errno));
	return 0;
}

/* Recycling. A job's run directory is not removed when it ends but kept,
 * its lists, runner and runner.out emptied, as RUNDIR/.spare.K for a later
 * start (up to GF_RECYCLED of them): a file system allocates and frees no
 * inode for those, which on ext4 without a journal costs a scan of every
 * inode freed in the last minutes, and a start only renames. An empty
 * limits file is a job without limits (runner/opts.c), an empty runner
 * file none (the runner writes it in place: runfile.c); a result becomes
 * result.tmp, which the next result is written into before its rename.
 * The runner's other files (logseq, other .tmp) go; anything else in it
 * (a directory, a FIFO) and the directory is removed as before. Only the daemon and, under
 * it, the runner write in a run directory; a kept one serves any owner's
 * job (under the system daemon all of it is root's). */
static bool kept_file(const char *name)
{
	return !strcmp(name, "env") || !strcmp(name, "argv") || !strcmp(name, "spec") || !strcmp(name, "limits") ||
	       !strcmp(name, "runner") || !strcmp(name, "runner.out") || !strcmp(name, "result.tmp");
}

/* Every file of dfd emptied or removed: whether it can be kept. */
static bool empty_out(int dfd, bool keep)
{
	struct dirent *d;
	DIR *dp = fdopendir(dfd);

	if (!dp) {
		close(dfd);
		return false;
	}
	while ((d = readdir(dp))) {
		int fd;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		/* The result becomes the next one's result.tmp (runfile.c),
		 * emptied as the other kept files are. */
		if (keep && !strcmp(d->d_name, "result") && d->d_type == DT_REG &&
		    renameat2(dirfd(dp), "result", dirfd(dp), "result.tmp", RENAME_NOREPLACE) == 0 &&
		    (fd = openat(dirfd(dp), "result.tmp", O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
			if (ftruncate(fd, 0))
				keep = false;
			close(fd);
			continue;
		}
		if (keep && kept_file(d->d_name) && (d->d_type == DT_REG || d->d_type == DT_UNKNOWN) &&
		    (fd = openat(dirfd(dp), d->d_name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
			struct stat st;
			bool ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && (!st.st_size || !ftruncate(fd, 0));

			close(fd);
			if (ok)
				continue;
		}
		if (unlinkat(dirfd(dp), d->d_name, 0))
			keep = false;	/* a directory in it: left, as before */
	}
	closedir(dp);
	return keep;
}

static void spare_name(int k, char *buf, size_t size)
{
	snprintf(buf, size, ".spare.%d", k);
}

/* RUNDIR/name removed with its files; a link in its place is removed
 * itself, never followed. */
static void remove_dir(struct server *s, const char *name)
{
	int dfd = openat(s->run_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			unlinkat(s->run_dfd, name, 0);
		return;
	}
	empty_out(dfd, false);
	unlinkat(s->run_dfd, name, AT_REMOVEDIR);
}

/* A job's run directory, no longer needed: kept for reuse, else removed
 * with its files. */
void rundir_remove(struct server *s, const struct job *j)
{
	char name[64], spare[32];
	char sock[GF_PATH_MAX];
	int dfd, k;

	/* The runner removes its socket; one it could not (killed) goes here. */
	if (rundir_attach_socket(s, j, sock, sizeof sock))
		unlink(sock);
	run_dir_name(j, name, sizeof name);
	for (k = 0; k < GF_RECYCLED && s->recycled[k / 64] == ~0ull; k += 64)
		;
	if (k < GF_RECYCLED)
		k += __builtin_ctzll(~s->recycled[k / 64]);
	if (k < GF_RECYCLED &&
	    (dfd = openat(s->run_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
	    empty_out(dfd, true)) {
		spare_name(k, spare, sizeof spare);
		if (renameat2(s->run_dfd, name, s->run_dfd, spare, RENAME_NOREPLACE) == 0) {
			s->recycled[k / 64] |= 1ull << (k % 64);
			return;
		}
	}
	remove_dir(s, name);	/* not kept: it and its (emptied) files go */
}

/* A kept run directory renamed to name: 0, or -1 when none is kept. */
static int take_recycled(struct server *s, const char *name)
{
	char spare[32];

	for (int w = 0; w < GF_RECYCLED / 64; w++)
		while (s->recycled[w]) {
			int k = w * 64 + __builtin_ctzll(s->recycled[w]);

			s->recycled[w] &= s->recycled[w] - 1;	/* its lowest bit, k */
			spare_name(k, spare, sizeof spare);
			if (renameat2(s->run_dfd, spare, s->run_dfd, name, RENAME_NOREPLACE) == 0)
				return 0;
		}
	return -1;
}

/* Kept run directories a stopped daemon left: removed (their number is
 * not known to this one, and a start makes what it needs). */
void rundir_drop_recycled(struct server *s)
{
	int fd = fcntl(s->run_dfd, F_DUPFD_CLOEXEC, 0);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *d;

	memset(s->recycled, 0, sizeof s->recycled);
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(dp);
	while ((d = readdir(dp)))
		if (!strncmp(d->d_name, ".spare.", 7) && d->d_name[7] >= '0' && d->d_name[7] <= '9')
			remove_dir(s, d->d_name);
	closedir(dp);
}

/* What is at dir/name that made an exclusive create fail. */
static const char *what_is_there(int dfd, const char *name)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return "something";
	return S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "a file";
}

/* Spares: an empty run directory (RUNDIR/.spare) and an empty log
 * (LOGDIR/.spare.log), made ahead of any start, which a start renames into
 * place instead of making its own: a new inode costs 0.1-0.4 ms on the
 * start path here, a rename ~20 µs. The rename does not replace (a name
 * that is there is still refused) and what it moves is opened as before,
 * without following links. Made again a moment after one is used (with
 * the standby, standby.c); one left by a stop or crash is used as it is
 * (only we write in these directories; a name with a dot is no job's).
 * The spare directory holds an empty runner file (written in place, as
 * in a recycled one) and, where runners read the job's environment,
 * command and spec from files (tmux), those too, empty (put_list). */
void rundir_make_spares(struct server *s)
{
	int fd, dfd;
	bool lists = s->executor == EXEC_TMUX && !s->paths.system;

	if (mkdirat(s->run_dfd, ".spare", 0700) && errno != EEXIST)
		return;
	fd = openat(s->log_dfd, ".spare.log", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	if ((dfd = openat(s->run_dfd, ".spare", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	for (int i = 0; i < (lists ? 4 : 1); i++) {
		static const char *const names[] = { "runner", "env", "argv", "spec" };

		if ((fd = openat(dfd, names[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0)
			close(fd);
	}
	close(dfd);
}

/* dfd/spare moved to dfd/name: 0, or -1 (then make it as before). */
static int take_spare(struct server *s, int dfd, const char *spare, const char *name)
{
	if (renameat2(dfd, spare, dfd, name, RENAME_NOREPLACE))
		return -1;
	hooks_fire(s, GF_EV_SPARE_TAKEN, NULL);
	return 0;
}

int rundir_log_spare(struct server *s, const struct job *j, char *path, size_t size)
{
	char name[64];

	jobs_log_name(j, 0, name, sizeof name);
	if (take_spare(s, s->log_dfd, ".spare.log", name))
		return -1;
	gf_pathf(path, size, "%s/%s", s->paths.log_dir, name);
	return 0;
}

/* The run directory: a kept one emptied (rundir_remove), the spare, else
 * made new; nothing already at its name is reused or followed. */
int rundir_make(struct server *s, const struct job *j, char *dir, size_t size, struct gf_err *e)
{
	char name[64];
	int dfd;

	run_dir_name(j, name, sizeof name);
	rundir_path(s, j, dir, size);
	if (take_recycled(s, name) && take_spare(s, s->run_dfd, ".spare", name) && mkdirat(s->run_dfd, name, 0700)) {
		if (errno == EEXIST)
			return gf_err_set(e, "the run directory %s exists already (%s): not using it", dir,
					  what_is_there(s->run_dfd, name));
		return gf_err_set(e, "cannot create %s: %s", dir, strerror(errno));
	}
	dfd = openat(s->run_dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return gf_err_set(e, "cannot open %s: %s", dir, strerror(errno));
	return dfd;
}

/* The log, new: a job never writes into a log that is there already (an
 * older job's, from a store that lost its ids), nor through a link: a name
 * that is taken is passed over for the next, ID.1.log, ID.2.log … (the
 * one used, when not the job's recorded one, goes to RUNDIR/logseq, where
 * the daemon learns it: reap.c). Only a job whose earlier start never ran
 * may find its own, and uses it. Its path in path. */
int rundir_make_log(struct server *s, const struct job *j, int dfd, char *path, size_t size, struct gf_err *e)
{
	char name[64];
	struct stat st;
	int fd;

	jobs_log_name(j, jm(j)->log_seq, name, sizeof name);
	gf_pathf(path, size, "%s/%s", s->paths.log_dir, name);
	if (j->run_seq > 1 && fstatat(s->log_dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid())
		return 0;
	for (int64_t seq = 0; seq <= GF_LOG_SEQ_MAX; seq++) {
		jobs_log_name(j, seq, name, sizeof name);
		gf_pathf(path, size, "%s/%s", s->paths.log_dir, name);
		if (take_spare(s, s->log_dfd, ".spare.log", name)) {
			fd = openat(s->log_dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0 && errno == EEXIST)
				continue;
			if (fd < 0)
				return gf_err_set(e, "cannot create the log %s: %s", path, strerror(errno));
			close(fd);
		}
		if (seq != jm(j)->log_seq && runfile_write_logseq_at(dfd, seq))
			return gf_err_set(e, "cannot write the log's name to the run directory: %s", strerror(errno));
		return 0;
	}
	return gf_err_set(e, "the logs %s/%lld.log and %lld.1.log to %lld.%d.log are all taken: not writing into any",
			  s->paths.log_dir, (long long)j->id, (long long)j->id, (long long)j->id, GF_LOG_SEQ_MAX);
}

