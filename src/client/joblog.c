/* joblog.c — gjob log (alias l): a job's output from its log file, the
 * first or last N lines, followed until the job ends; on a terminal its
 * control characters escaped (job_log_escape) unless --raw. The file is
 * opened as the caller, without following a link or blocking on a FIFO;
 * an admin who may not read it gets its end from the daemon, a cluster
 * job's output comes over ssh (remote.c). */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "remote.h"
#include "util.h"

#define PROG "gjob"

off_t job_last_lines_offset(int fd, long long n)
{
	char buf[65536];
	struct stat st;
	off_t pos, end;
	long long seen = 0;

	if (fstat(fd, &st) < 0)
		return -1;
	end = pos = st.st_size;
	if (n <= 0)
		return end;
	while (pos > 0) {
		size_t want = pos < (off_t)sizeof buf ? (size_t)pos : sizeof buf;
		ssize_t got = pread(fd, buf, want, pos - (off_t)want);
		ssize_t i;

		if (got < (ssize_t)want)
			return -1;
		for (i = got - 1; i >= 0; i--) {
			off_t at = pos - (off_t)want + i;

			if (buf[i] != '\n' || at == end - 1)
				continue;
			if (++seen == n)
				return at + 1;
		}
		pos -= (off_t)want;
	}
	return 0;
}

/* The bytes at the end of a chunk that may go on in the next: a CR (a
 * CR LF?) or the start of a UTF-8 character. */
static size_t log_tail_held(const unsigned char *p, size_t n)
{
	size_t back;

	if (n && p[n - 1] == '\r')
		return 1;
	for (back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = p[n - back];
		size_t need;

		if ((c & 0xc0) == 0x80)
			continue;	/* a continuation byte: look further */
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? back : 0;
	}
	return 0;
}

void job_log_escape(struct log_escaper *h, const char *in, size_t n, int final, struct sbuf *out)
{
	struct sbuf work = { 0 };
	const char *p;
	size_t len, keep, i, start = 0;

	if (h->nhold) {
		sbuf_add(&work, h->hold, h->nhold);
		sbuf_add(&work, in, n);
		p = work.p;
		len = work.len;
	} else {
		p = in;
		len = n;
	}
	keep = len - (final ? 0 : log_tail_held((const unsigned char *)p, len));
	h->nhold = len - keep;
	memcpy(h->hold, p + keep, h->nhold);
	for (i = 0; i <= keep; i++) {
		int plain = i < keep && (p[i] == '\n' || p[i] == '\t' ||
		    (p[i] == '\r' && i + 1 < keep && p[i + 1] == '\n'));

		if (i < keep && !plain)
			continue;
		if (i > start) {
			size_t need = gf_escape(NULL, 0, p + start, i - start, 0);

			sbuf_grow(out, need + 1);
			gf_escape(out->p + out->len, need + 1, p + start, i - start, 0);
			out->len += need;
		}
		if (i < keep)
			sbuf_addc(out, p[i]);
		start = i + 1;
	}
	sbuf_free(&work);
}

/* Where the log's bytes go: stdout, escaped when it is a terminal (the
 * owner's control sequences reach no one's terminal raw) unless --raw. */
static struct {
	int escape;
	struct log_escaper held;
} log_out;

static void log_write(const char *p, size_t n, int final)
{
	struct sbuf b = { 0 };

	if (!log_out.escape) {
		fwrite(p, 1, n, stdout);
		return;
	}
	job_log_escape(&log_out.held, p, n, final, &b);
	if (b.len)
		fwrite(b.p, 1, b.len, stdout);
	sbuf_free(&b);
}

/* Copy fd from *off to its current end onto stdout; lines_left >= 0
 * stops after that many lines. Returns bytes copied, -1 on error. */
static long long copy_out(int fd, off_t *off, long long *lines_left)
{
	char buf[65536];
	long long total = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof buf, *off), i, upto;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		upto = n;
		if (lines_left && *lines_left >= 0) {
			for (i = 0; i < n; i++)
				if (buf[i] == '\n' && --*lines_left == 0) {
					upto = i + 1;
					break;
				}
		}
		log_write(buf, (size_t)upto, 0);
		*off += upto;
		total += upto;
		if (upto < n || (lines_left && *lines_left == 0))
			break;
	}
	fflush(stdout);
	return total;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

enum { L_FIRST, L_LAST, L_FOLLOW, L_RAW };

static const struct opt_def log_opts[] = {
	{ L_FIRST, "first", 'f', 1 }, { L_FIRST, "head", 0, 1 },
	{ L_LAST, "last", 'l', 1 }, { L_LAST, "tail", 0, 1 },
	{ L_FOLLOW, "follow", 'F', 0 }, { L_RAW, "raw", 0, 0 },
	{ J_HELP, "help", 'h', 0 },
};

static const char log_help[] =
"usage: gjob log ID [-f N | -l N] [--follow] [--raw]\n\n"
"Print a job's output (its log file).\n"
"  -f, --first N   only the first N lines (also --head)\n"
"  -l, --last N    only the last N lines (also --tail)\n"
"  -F, --follow    keep printing what is appended until the job has ended\n"
"      --raw       on a terminal too, the bytes as they are\n"
"On a terminal, control characters (escape sequences, bell, C1 codes,\n"
"a carriage return not before a line feed) and bytes that are not UTF-8\n"
"are shown escaped (\\e, \\a, \\r, \\xNN), so that a job's output cannot drive\n"
"your terminal; line feeds and tabs pass. Only regular files are read (no\n"
"FIFO, device or symbolic link). An admin of the machine's daemon who may\n"
"not read the owner's file gets its last 4 MiB from the daemon (without\n"
"--follow).\n";

/* Open a job's log to read: a regular file of the job's owner (uid, -1:
 * unknown) and no symbolic link, opened without blocking (a FIFO put
 * there would hang the reader) and without becoming our terminal. -1 with
 * errno (EACCES, ENOENT) for the caller, or -2 when refused, said in e. */
static int open_log_file(const char *path, long long uid, struct gf_err *e)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC), err;

	if (fd < 0 && errno == ELOOP) {
		gf_err_set(e, "refusing %s: it is a symbolic link, not the job's log", path);
		return -2;
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		gf_err_set(e, "refusing %s: it is %s, not a regular file", path,
		    S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" :
		    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
		    S_ISSOCK(st.st_mode) ? "a socket" : "something else");
	else if (uid >= 0 && (long long)st.st_uid != uid)
		gf_err_set(e, "refusing %s: it belongs to uid %u, not to the job's owner (uid %lld)", path,
		    (unsigned)st.st_uid, uid);
	else {
		/* reads of a regular file never block: back to plain reads */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		return fd;
	}
	close(fd);
	return -2;
}

/* Follow the log until the job has ended and the file stops growing. */
static int follow_log(const char *ref, const char *path, long long uid, int fd, off_t off,
    struct gf_err *e)
{
	int ended = 0, tick = 0;

	for (;;) {
		long long got;

		if (fd < 0) {
			fd = open_log_file(path, uid, e);
			if (fd == -2)
				return -1;
			off = 0;
		}
		got = 0;
		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) == 0 && st.st_size < off)
				off = 0; /* truncated */
			got = copy_out(fd, &off, NULL);
			if (got < 0) {
				gf_err_set(e, "cannot read %s: %s", path,
				    strerror(errno));
				close(fd);
				return -1;
			}
		}
		if (ended && got == 0)
			break;
		if (!ended && ++tick % 4 == 0) {
			json_t *job = fetch_job(ref, e);

			if (!job) {
				if (fd >= 0)
					close(fd);
				return -1;
			}
			ended = state_is_ended(jstr(job, "state"));
			json_decref(job);
			if (ended)
				continue; /* one more read, then stop */
		}
		sleep_ms(250);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* The end of a job's log as the daemon serves it (GET /jobs/ID/log: to its
 * owner and admins, the last LOG_SERVED bytes), in a memory file for the
 * readers below; -1 when it will not. */
#define LOG_SERVED (4 * 1024 * 1024)
static int log_from_daemon(int64_t id, int follow)
{
	char target[96];
	struct http_resp r = { 0 };
	struct gf_err e;
	int fd;

	snprintf(target, sizeof target, "/jobs/%lld/log?tail=%d", (long long)id, LOG_SERVED);
	if (http_request(NULL, "GET", target, NULL, 0, &r, &e) < 0 || r.status != 200 ||
	    (fd = memfd_create("gflow-log", MFD_CLOEXEC)) < 0) {
		http_resp_free(&r);
		return -1;
	}
	if (write(fd, r.body, r.len) != (ssize_t)r.len || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		fd = -1;
	}
	http_resp_free(&r);
	if (fd >= 0 && follow)
		fprintf(stderr, "%s: --follow needs read access to the file; showing the end the daemon "
		    "serves (at most %d MiB)\n", PROG, LOG_SERVED >> 20);
	return fd;
}

static int job_log(int argc, char **argv)
{
	struct opt_parser p;
	struct gf_err e;
	const char *val, *ref = NULL, *path, *state;
	int64_t first = -1, last = -1;
	int id, follow = 0, raw = 0, fd, rc = EXIT_OK;
	long long uid;
	json_t *job;
	off_t off = 0;

	opt_init(&p, argc, argv, 1, log_opts,
	    sizeof log_opts / sizeof log_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_POSITIONAL:
			if (ref)
				return cmd_usagef(PROG, "gjob log takes one job");
			ref = val;
			break;
		case L_FIRST:
		case L_LAST:
			if (gf_parse_int_range(val, 0, LLONG_MAX, "line count",
			    id == L_FIRST ? &first : &last, &e) < 0)
				return cmd_usage_error(PROG, &e);
			break;
		case L_FOLLOW:
			follow = 1;
			break;
		case L_RAW:
			raw = 1;
			break;
		default:
			return job_help_or_fail(log_help, id, val, &e);
		}
	}
	if (!ref)
		return cmd_usagef(PROG, "usage: gjob log ID [-f N | -l N] "
		    "[--follow] [--raw]");
	if (first >= 0 && (last >= 0 || follow))
		return cmd_usagef(PROG, "-f cannot be combined with -l or "
		    "--follow");
	job = fetch_job(ref, &e);
	if (!job)
		return cmd_fail(PROG, &e);
	path = jstr(job, "log_path");
	state = jstr(job, "state");
	uid = jhas(job, "uid") ? (long long)jint(job, "uid", -1) : -1;
	log_out.escape = !raw && isatty(STDOUT_FILENO);
	if (jstr(job, "cluster")) {	/* its output is on the cluster */
		if (first >= 0 || last >= 0 || follow)
			rc = cmd_usagef(PROG, "job %s runs on cluster %s: gjob log shows "
			    "its whole output file (no -f, -l or --follow)", ref,
			    jstr(job, "cluster"));
		else
			rc = remote_log(PROG, job);
		json_decref(job);
		return rc;
	}
	if (!path && uid >= 0 && uid != (long long)getuid() && jstr(job, "user")) {
		/* The daemon shows a job's log path to its owner and admins
		 * only: the rule, as the daemon words it. */
		fprintf(stderr, "%s: job %lld belongs to %s; only %s or an admin may read its log\n", PROG,
		    (long long)jint(job, "id", 0), jstr(job, "user"), jstr(job, "user"));
		json_decref(job);
		return EXIT_FAIL;
	}
	if (!path) {
		json_decref(job);
		return cmd_usagef(PROG, "job %s has no log path", ref);
	}
	fd = open_log_file(path, uid, &e);
	if (fd == -2) {
		json_decref(job);
		return cmd_fail(PROG, &e);
	}
	if (fd < 0 && errno == EACCES) {
		/* An admin of the machine's daemon who may not read the owner's
		 * file: the daemon serves its end. */
		fd = log_from_daemon(jint(job, "id", 0), follow);
		follow = 0;
		if (fd < 0)
			errno = EACCES;
	}
	if (fd < 0 && !(follow && errno == ENOENT)) {
		if (errno == ENOENT && (state && (strcmp(state, "Queued") == 0 ||
		    strcmp(state, "Hold") == 0)))
			fprintf(stderr, "%s: job %lld has not started yet; its "
			    "log will be %s\n", PROG,
			    (long long)jint(job, "id", 0), path);
		else
			fprintf(stderr, "%s: cannot open %s: %s\n", PROG, path,
			    strerror(errno));
		json_decref(job);
		return EXIT_FAIL;
	}
	if (fd >= 0) {
		long long left = first >= 0 ? first : -1;

		if (last >= 0)
			off = job_last_lines_offset(fd, last);
		if (off < 0 || (first != 0 && copy_out(fd, &off, &left) < 0)) {
			fprintf(stderr, "%s: cannot read %s: %s\n", PROG, path,
			    strerror(errno));
			rc = EXIT_FAIL;
		}
	}
	if (rc == EXIT_OK && follow) {
		char idbuf[32];

		snprintf(idbuf, sizeof idbuf, "%lld",
		    (long long)jint(job, "id", 0));
		if (follow_log(idbuf, path, uid, fd, off, &e) < 0)
			rc = cmd_fail(PROG, &e);
		fd = -1; /* follow_log closed it */
	}
	log_write("", 0, 1);	/* what was held for the next bytes */
	fflush(stdout);
	if (fd >= 0)
		close(fd);
	json_decref(job);
	return rc;
}

const struct job_cmd job_cmd_log = { "log", "l", job_log };
