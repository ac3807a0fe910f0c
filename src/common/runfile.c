/* runfile.c — reading and writing a run directory's `runner` and `result`
 * files, atomic file writes, and /proc/<pid>/stat fields. libc only: the
 * runner links it. */
#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUNFILE_MAX 8192	/* far more than either file ever holds */

/* Fill e and leave errno at err (whatever formatting did to it). */
static int fail(struct gf_err *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct gf_err *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	errno = err;
	return -1;
}

int gf_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The exclusive form's end: tmp (written, still open as fd) is linked to
 * name, which fails when name is there, and only then made durable, file
 * and directory: one sync of each after every change, so a journaling file
 * system commits the data, the link and the removal of tmp together (a sync
 * of the file before the link costs a journal commit of its own). A
 * reader may see name before it is durable, never before it is whole; a
 * crash of the machine before the syncs may leave it empty, which a reader
 * takes for none. */
static int link_durably(int dfd, const char *label, const char *name, const char *tmp, int fd, int durable,
			struct gf_err *e)
{
	char proc[32];
	int saved, rc;

	if (tmp)
		rc = linkat(dfd, tmp, dfd, name, 0);
	else {
		/* An unnamed file (O_TMPFILE): linked by its /proc name. */
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		rc = linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW);
	}
	if (rc) {
		saved = errno;
		close(fd);
		if (tmp)
			unlinkat(dfd, tmp, 0);
		if (saved == EEXIST)
			return fail(e, saved, "%s/%s exists already", label, name);
		return fail(e, saved, "cannot create %s/%s: %s", label, name, strerror(saved));
	}
	if (tmp)
		unlinkat(dfd, tmp, 0);
	if (durable && (fsync(fd) || fsync(dfd))) {
		saved = errno;
		close(fd);
		return fail(e, saved, "cannot sync %s/%s: %s", label, name, strerror(saved));
	}
	if (close(fd)) {
		saved = errno;
		return fail(e, saved, "cannot write %s/%s: %s", label, name, strerror(saved));
	}
	return 0;
}

/* An unnamed file (O_TMPFILE) in dfd's file system, to be linked into
 * place by its /proc name (link_durably): one change to the directory
 * where a named .tmp costs three. -1 where the file system has none or
 * /proc is not there to link it by. */
static int unnamed_file(int dfd)
{
	if (faccessat(AT_FDCWD, "/proc/self/fd", X_OK, 0))
		return -1;
	return openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
}

/* dir/name.tmp kept empty for the next write (rundir.c keeps a run
 * directory's result.tmp): opened and emptied, when it is a plain file of
 * its own (never a link, a FIFO or a directory). No inode is made, nor
 * freed by the rename, which on ext4 without a journal costs each new
 * inode a scan of those freed in the last minutes. -1: none such. */
static int reuse_tmp(int dfd, const char *tmp)
{
	struct stat st;
	int fd = openat(dfd, tmp, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1 || (st.st_size && ftruncate(fd, 0)) ||
	    fcntl(fd, F_SETFL, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Write dir/name.tmp and move it into place: with rename (replacing), or
 * with link (failing with EEXIST when dir/name exists; an unnamed file
 * instead of name.tmp where it can). Nothing is reached
 * through a symbolic link: a link planted at name.tmp is removed, not
 * followed, and one at name is replaced (or, exclusive, refused). `label`
 * names the directory in messages. */
static int write_file(int dfd, const char *label, const char *name, const void *data, size_t len,
		      int exclusive, int durable, struct gf_err *e)
{
	char tmp[NAME_MAX + 1];
	int fd, saved;

	if (exclusive && (fd = unnamed_file(dfd)) >= 0) {
		if (gf_write_all(fd, data, len)) {
			saved = errno;
			close(fd);
			return fail(e, saved, "cannot write %s/%s: %s", label, name, strerror(saved));
		}
		return link_durably(dfd, label, name, NULL, fd, durable, e);
	}
	if (snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp)
		return fail(e, ENAMETOOLONG, "name too long: %s/%s", label, name);
	if (exclusive || (fd = reuse_tmp(dfd, tmp)) < 0) {
		unlinkat(dfd, tmp, 0);	/* left by a crash, or planted */
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		saved = errno;
		return fail(e, saved, "cannot create %s/%s: %s", label, tmp, strerror(saved));
	}
	if (gf_write_all(fd, data, len) || (durable && !exclusive && fsync(fd))) {
		saved = errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		return fail(e, saved, "cannot write %s/%s: %s", label, tmp, strerror(saved));
	}
	if (exclusive)
		return link_durably(dfd, label, name, tmp, fd, durable, e);
	if (close(fd)) {
		saved = errno;
		unlinkat(dfd, tmp, 0);
		return fail(e, saved, "cannot write %s/%s: %s", label, tmp, strerror(saved));
	}
	if (renameat(dfd, tmp, dfd, name)) {
		saved = errno;
		unlinkat(dfd, tmp, 0);
		return fail(e, saved, "cannot create %s/%s: %s", label, name, strerror(saved));
	}
	if (durable && fsync(dfd)) {
		saved = errno;
		return fail(e, saved, "cannot sync %s: %s", label, strerror(saved));
	}
	return 0;
}

int runfile_open_dir(const char *dir, int nofollow)
{
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
}

/* Run `op` on the directory at path: the data directory itself may be a
 * link the user made (follow), a run directory may not (nofollow). */
static int open_dir_for(const char *dir, int nofollow, struct gf_err *e)
{
	int fd = runfile_open_dir(dir, nofollow);

	if (fd < 0) {
		int saved = errno == ELOOP || errno == ENOTDIR ? ELOOP : errno;

		if (saved == ELOOP)
			return fail(e, saved, "%s is not a directory (a symbolic link?): not following it", dir);
		return fail(e, saved, "cannot open %s: %s", dir, strerror(saved));
	}
	return fd;
}

int write_file_atomic_at(int dfd, const char *label, const char *name, const void *data, size_t len,
			 struct gf_err *e)
{
	return write_file(dfd, label, name, data, len, 0, 1, e);
}

int runfile_open_empty_at(int dfd, const char *name)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO planted there must not hold us in open() */
	int fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENXIO || errno == EISDIR)
			errno = EEXIST;	/* a link, a FIFO nobody reads, a directory */
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int write_file_new_at(int dfd, const char *label, const char *name, const void *data, size_t len,
		      struct gf_err *e)
{
	int fd = runfile_open_empty_at(dfd, name), saved;

	if (fd < 0) {
		saved = errno;
		if (saved == EEXIST)
			return fail(e, saved, "%s/%s is there already and not an empty file: not writing into it",
				    label, name);
		return fail(e, saved, "cannot create %s/%s: %s", label, name, strerror(saved));
	}
	if (gf_write_all(fd, data, len) || close(fd)) {
		saved = errno;
		unlinkat(dfd, name, 0);
		return fail(e, saved, "cannot write %s/%s: %s", label, name, strerror(saved));
	}
	return 0;
}

/* The path forms: the directory may be a link (see runfile.h). */
static int write_in(const char *dir, const char *name, const void *data, size_t len, int durable,
		    struct gf_err *e)
{
	int dfd = open_dir_for(dir, 0, e), rc;

	if (dfd < 0)
		return -1;
	rc = write_file(dfd, dir, name, data, len, 0, durable, e);
	close(dfd);
	return rc;
}

int write_file_atomic(const char *dir, const char *name, const void *data, size_t len,
		      struct gf_err *e)
{
	return write_in(dir, name, data, len, 1, e);
}

int write_file_replace(const char *dir, const char *name, const void *data, size_t len, struct gf_err *e)
{
	return write_in(dir, name, data, len, 0, e);
}

/* Read name (never through a link) whole into buf (NUL-terminated), its
 * length in *got. */
static int read_small_n(int dfd, const char *label, const char *name, char *buf, size_t size, size_t *got,
			struct gf_err *e)
{
	size_t len = 0;
	int fd, saved;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		return fail(e, saved, "cannot open %s/%s: %s", label, name, strerror(saved));
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			close(fd);
			return fail(e, saved, "cannot read %s/%s: %s", label, name, strerror(saved));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size - 1) {
			close(fd);
			return fail(e, EFBIG, "%s/%s is too big", label, name);
		}
	}
	close(fd);
	buf[len] = '\0';
	*got = len;
	return 0;
}

static int read_small(int dfd, const char *label, const char *name, char *buf, size_t size, struct gf_err *e)
{
	size_t len;

	return read_small_n(dfd, label, name, buf, size, &len, e);
}

int runfile_write_logseq_at(int dirfd, long long seq)
{
	char num[32];
	int n = snprintf(num, sizeof num, "%lld\n", seq), fd, err = 0;

	fd = openat(dirfd, "logseq", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (gf_write_all(fd, num, (size_t)n))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	errno = err;
	return err ? -1 : 0;
}

int runfile_read_logseq(const char *dir, long long *seq)
{
	char path[PATH_MAX], buf[32], *end;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof path, "%s/logseq", dir) >= (int)sizeof path)
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	*seq = strtoll(buf, &end, 10);
	if (errno || end == buf || (*end && strcmp(end, "\n")) || *seq < 0 || *seq > GF_LOG_SEQ_MAX) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int runfile_read_text(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Split the next "key=value\n" line off *p. Returns 0 at the end. Lines
 * without '=' come back with an empty key, so callers skip them. */
static int next_line(char **p, char **key, char **value)
{
	char *line = *p, *nl, *eq;

	if (!*line)
		return 0;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else
		*p = line + strlen(line);
	eq = strchr(line, '=');
	if (!eq) {
		*key = line + strlen(line);
		*value = *key;
		return 1;
	}
	*eq = '\0';
	*key = line;
	*value = eq + 1;
	return 1;
}

static int parse_ll(const char *s, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return (!*s || *end || errno) ? -1 : 0;
}

static int parse_ull(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return (!*s || *s == '-' || *end || errno) ? -1 : 0;
}

static int parse_double(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return (!*s || *end || errno || !isfinite(*v)) ? -1 : 0;
}

static int parse_int(const char *s, int *v)
{
	long long ll;

	if (parse_ll(s, &ll) || ll < INT_MIN || ll > INT_MAX)
		return -1;
	*v = (int)ll;
	return 0;
}

static int bad_value(const char *label, const char *name, const char *key, struct gf_err *e)
{
	return fail(e, EINVAL, "%s/%s: bad value for '%s'", label, name, key);
}

static int runner_text(char *buf, size_t size, const struct runner_info *ri)
{
	return snprintf(buf, size, "pid=%lld\nstart_ticks=%llu\nstarted_at=%.6f\n", (long long)ri->pid,
			ri->start_ticks, ri->started_at);
}

/* The in-place form, where the run directory keeps an empty `runner`
 * (rundir.c's recycled and spare directories): one write under an
 * exclusive flock, refused (EEXIST) when the file is not empty, so of the
 * runner and the daemon's claim the first to hold the lock has it. No
 * inode is made or freed: on ext4 without a journal each new one scans
 * every inode freed in the last minutes. A reader takes an empty or
 * unfinished file for none (runfile_read_runner_at). 1: no such file. */
static int write_in_place(int dfd, const char *dir, const char *buf, size_t len, int durable, struct gf_err *e)
{
	struct stat st;
	int fd = openat(dfd, "runner", O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), saved;

	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0 && (errno == ELOOP || errno == ENXIO || errno == EISDIR))
		return fail(e, EEXIST, "%s/runner exists already", dir);	/* a link, a FIFO, a directory */
	if (fd < 0)
		return fail(e, errno, "cannot open %s/runner: %s", dir, strerror(errno));
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size) {
		close(fd);
		return fail(e, EEXIST, "%s/runner exists already", dir);
	}
	if (gf_write_all(fd, buf, len) || (durable && (fsync(fd) || fsync(dfd)))) {
		saved = errno;
		if (ftruncate(fd, 0))	/* a claim half made is none */
			saved = errno;
		close(fd);
		return fail(e, saved, "cannot write %s/runner: %s", dir, strerror(saved));
	}
	close(fd);	/* and the lock with it */
	return 0;
}

int runfile_write_runner_at(int dfd, const char *dir, const struct runner_info *ri, int durable, struct gf_err *e)
{
	char buf[256];
	int n = runner_text(buf, sizeof buf, ri), rc = write_in_place(dfd, dir, buf, (size_t)n, durable, e);

	if (rc <= 0)
		return rc;
	return write_file(dfd, dir, "runner", buf, (size_t)n, 1, durable, e);
}

int runfile_read_runner_at(int dfd, const char *dir, struct runner_info *ri, struct gf_err *e)
{
	char buf[RUNFILE_MAX], *p = buf, *key, *value;
	long long pid;
	size_t len;

	memset(ri, 0, sizeof *ri);
	if (read_small_n(dfd, dir, "runner", buf, sizeof buf, &len, e))
		return -1;
	/* Kept empty (rundir.c), or caught as it is written: none yet. Zeros
	 * (a machine stopped before a claim's sync) are a claim without a pid. */
	if (!len || (buf[0] && buf[len - 1] != '\n'))
		return fail(e, ENOENT, "%s/runner: not written yet", dir);
	while (next_line(&p, &key, &value)) {
		if (!strcmp(key, "pid")) {
			if (parse_ll(value, &pid) || pid < 0 || pid > INT_MAX)
				return bad_value(dir, "runner", key, e);
			ri->pid = (pid_t)pid;
		} else if (!strcmp(key, "start_ticks")) {
			if (parse_ull(value, &ri->start_ticks))
				return bad_value(dir, "runner", key, e);
		} else if (!strcmp(key, "started_at")) {
			if (parse_double(value, &ri->started_at))
				return bad_value(dir, "runner", key, e);
		}
	}
	return 0;
}

int runfile_result_text(const struct job_result *r, char *buf, size_t size)
{
	char error[sizeof r->error];
	int n;

	/* One line per key: the message must not break the format. */
	snprintf(error, sizeof error, "%s", r->error);
	for (char *c = error; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	n = snprintf(buf, size,
		     "exited=%d\nexit_code=%d\nsignal=%d\nstart=%.6f\nend=%.6f\nended_by=%s\n"
		     "peak_rss_kb=%ld\nmemory_enforced=%d\noom=%d\nerror=%s\n",
		     r->exited ? 1 : 0, r->exit_code, r->signal, r->start, r->end, r->ended_by,
		     r->peak_rss_kb, r->memory_enforced ? 1 : 0, r->oom ? 1 : 0, error);
	if (n < 0 || (size_t)n >= size) {
		errno = EINVAL;
		return -1;
	}
	return n;
}

int runfile_report_message(const struct job_result *r, char *buf, size_t size)
{
	char text[1024];
	int n = runfile_result_text(r, text, sizeof text), len;

	if (n < 0)
		return -1;
	len = snprintf(buf, size, "result %d\n%s", n, text);
	if (len < 0 || (size_t)len >= size) {
		errno = EINVAL;
		return -1;
	}
	return len;
}

int runfile_report_whole(char *buf, size_t len, size_t max, char **text)
{
	char *nl = memchr(buf, '\n', len), *end;
	unsigned long n;
	size_t head;

	if (!nl)
		return len > 32 ? -1 : 0;
	head = (size_t)(nl + 1 - buf);
	if (strncmp(buf, "result ", 7) || buf[7] < '1' || buf[7] > '9')
		return -1;
	errno = 0;
	n = strtoul(buf + 7, &end, 10);
	if (end != nl || errno || n >= max || head + n >= max)
		return -1;
	if (len < head + n)
		return 0;
	if (len > head + n)
		return -1;	/* more than one message */
	*text = nl + 1;
	(*text)[n] = '\0';
	return 1;
}

int runfile_write_result_at(int dfd, const char *dir, const struct job_result *r, struct gf_err *e)
{
	char buf[1024];
	int n = runfile_result_text(r, buf, sizeof buf);

	if (n < 0)
		return fail(e, EINVAL, "result for %s does not fit", dir);
	return write_file(dfd, dir, "result", buf, (size_t)n, 0, 1, e);	/* the exit status must survive */
}

int runfile_result_parse(char *text, const char *label, const char *name, struct job_result *r,
			 struct gf_err *e)
{
	char *p = text, *key, *value;
	int have_exited = 0;
	long long ll;

	memset(r, 0, sizeof *r);
	while (next_line(&p, &key, &value)) {
		int bad = 0;

		if (!strcmp(key, "exited")) {
			bad = parse_int(value, &r->exited);
			have_exited = 1;
		} else if (!strcmp(key, "exit_code"))	/* an exit status; the daemon keeps it in 16 bits */
			bad = parse_int(value, &r->exit_code) || r->exit_code < 0 || r->exit_code > 255;
		else if (!strcmp(key, "signal"))
			bad = parse_int(value, &r->signal) || r->signal < 0 || r->signal > 255;
		else if (!strcmp(key, "start"))
			bad = parse_double(value, &r->start);
		else if (!strcmp(key, "end"))
			bad = parse_double(value, &r->end);
		else if (!strcmp(key, "ended_by")) {
			bad = !*value || strlen(value) >= sizeof r->ended_by;
			if (!bad)
				strcpy(r->ended_by, value);
		} else if (!strcmp(key, "peak_rss_kb")) {
			bad = parse_ll(value, &ll) || ll < 0 || ll > LONG_MAX;
			r->peak_rss_kb = bad ? 0 : (long)ll;
		} else if (!strcmp(key, "memory_enforced"))
			bad = parse_int(value, &r->memory_enforced);
		else if (!strcmp(key, "oom"))
			bad = parse_int(value, &r->oom);
		else if (!strcmp(key, "error"))
			snprintf(r->error, sizeof r->error, "%s", value);
		if (bad)
			return bad_value(label, name, key, e);
	}
	if (!have_exited || !r->ended_by[0]) {
		return fail(e, EINVAL, "%s/%s: incomplete (no '%s')", label, name,
				  have_exited ? "ended_by" : "exited");
	}
	return 0;
}

int runfile_read_result_at(int dfd, const char *dir, struct job_result *r, struct gf_err *e)
{
	char buf[RUNFILE_MAX];

	memset(r, 0, sizeof *r);
	if (read_small(dfd, dir, "result", buf, sizeof buf, e))
		return -1;
	return runfile_result_parse(buf, dir, "result", r, e);
}

/* The same, given the run directory's path (never followed as a link). */
enum { W_RUNNER, R_RUNNER, W_RESULT, R_RESULT };

static int on_dir(const char *dir, int op, void *arg, struct gf_err *e)
{
	int dfd = open_dir_for(dir, 1, e), rc = -1;

	if (dfd < 0)
		return -1;
	switch (op) {
	case W_RUNNER:
		rc = runfile_write_runner_at(dfd, dir, arg, 1, e);
		break;
	case R_RUNNER:
		rc = runfile_read_runner_at(dfd, dir, arg, e);
		break;
	case W_RESULT:
		rc = runfile_write_result_at(dfd, dir, arg, e);
		break;
	case R_RESULT:
		rc = runfile_read_result_at(dfd, dir, arg, e);
		break;
	}
	close(dfd);
	return rc;
}

int runfile_write_runner(const char *dir, const struct runner_info *ri, struct gf_err *e)
{
	return on_dir(dir, W_RUNNER, (void *)ri, e);
}

int runfile_read_runner(const char *dir, struct runner_info *ri, struct gf_err *e)
{
	return on_dir(dir, R_RUNNER, ri, e);
}

int runfile_write_result(const char *dir, const struct job_result *r, struct gf_err *e)
{
	return on_dir(dir, W_RESULT, (void *)r, e);
}

int runfile_read_result(const char *dir, struct job_result *r, struct gf_err *e)
{
	return on_dir(dir, R_RESULT, r, e);
}

int proc_stat_field(pid_t pid, int field, unsigned long long *value)
{
	char path[64], buf[4096], *p, *end;
	ssize_t n;
	int fd;

	if (field < 3) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0) {
		if (n == 0)
			errno = ESRCH;
		return -1;
	}
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold anything, even ") ". */
	p = strrchr(buf, ')');
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	p++;
	for (int i = 3; i <= field; i++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n') {
			errno = EINVAL;
			return -1;
		}
		if (i == field)
			break;
		while (*p && *p != ' ')
			p++;
	}
	errno = 0;
	*value = strtoull(p, &end, 10);
	if (end == p || (*end != ' ' && *end != '\n' && *end) || errno) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int proc_start_ticks(pid_t pid, unsigned long long *ticks)
{
	return proc_stat_field(pid, 22, ticks);
}

char proc_state(pid_t pid)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}
