/* runfile.h — the files a job's supervisor (gflow-runner) leaves in its run
 * directory, shared by the runner (writer) and the daemon (reader):
 *
 *   runner   the runner's pid and start time, written before the job starts
 *   result   how the job ended, written when the job and all it started are gone
 *   logseq   N when the job's log is ID.N.log, not ID.log (that name was
 *            taken), written by whoever made the log before `runner`
 *
 * Both are `key=value\n` lines; readers ignore keys they do not know. Also
 * here: writing any file atomically, and reading /proc/<pid>/stat fields.
 *
 * Nothing under a run directory is reached through a symbolic link: the
 * directory itself and every file in it are opened with O_NOFOLLOW, so a
 * link planted there makes the operation fail (ELOOP) instead of touching
 * what it points to. The *_at forms work on an open directory. */
#ifndef GF_RUNFILE_H
#define GF_RUNFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct runner_info {
	pid_t pid;			/* 0: the daemon claimed the directory first */
	unsigned long long start_ticks;	/* field 22 of /proc/<pid>/stat */
	double started_at;		/* CLOCK_REALTIME, seconds */
};

struct job_result {
	int exited;			/* 1: exit_code is valid; 0: killed by signal */
	int exit_code;
	int signal;
	double start, end;		/* CLOCK_REALTIME, seconds */
	char ended_by[16];		/* "exit", "timeout", "cancel", "error" */
	long peak_rss_kb;
	int memory_enforced;
	int oom;
	char error[256];		/* why the job could not start ("error") */
};

/* Write all of data to fd (retrying short writes and EINTR); -1 with errno. */
int gf_write_all(int fd, const void *data, size_t len);

/* Writes `runner` exclusively: fails with errno EEXIST when it is there
 * already and not empty (the daemon claimed the directory for a start it
 * gave up on), so a runner never overwrites a claim. An empty one, kept by
 * a recycled or spare run directory, is written in place under a lock;
 * else the file is made and linked in. The path form (the daemon's claim)
 * is durable; the runner's announcement (_at, durable 0) is not synced: it
 * outlives a daemon crash in the page cache, and after a machine crash the
 * daemon does not trust its absence (reap.c's recover). */
int runfile_write_runner(const char *dir, const struct runner_info *ri, struct gf_err *e);
int runfile_write_runner_at(int dirfd, const char *dir, const struct runner_info *ri, int durable,
			    struct gf_err *e);

/* An empty `runner` (kept by a run directory), or one caught as it is
 * written (no final newline), reads as none: -1 with errno ENOENT. One of
 * zeros (a machine stopped before a claim was synced) reads as pid 0. */
int runfile_read_runner(const char *dir, struct runner_info *ri, struct gf_err *e);
int runfile_read_runner_at(int dirfd, const char *dir, struct runner_info *ri, struct gf_err *e);

/* The result as `result` holds it, in buf: its length, or -1 (EINVAL)
 * when it does not fit size. runfile_result_parse reads such a text
 * (NUL-ended; changed in place), naming it LABEL/NAME in errors. */
int runfile_result_text(const struct job_result *r, char *buf, size_t size);
int runfile_result_parse(char *text, const char *label, const char *name, struct job_result *r,
			 struct gf_err *e);
/* A result told on a socket instead (the runner's --report, reap.c):
 * "result LEN\n" and LEN bytes of its text. runfile_report_message makes
 * it in buf (its length, or -1 when it does not fit size);
 * runfile_report_whole looks at the len bytes received so far in buf (of
 * room max, at least len + 1): 1 a whole message, its text NUL-ended at
 * *text; 0 more is to come; -1 not one message. */
int runfile_report_message(const struct job_result *r, char *buf, size_t size);
int runfile_report_whole(char *buf, size_t len, size_t max, char **text);
int runfile_write_result(const char *dir, const struct job_result *r, struct gf_err *e);
int runfile_write_result_at(int dirfd, const char *dir, const struct job_result *r, struct gf_err *e);

/* -1 with errno ENOENT when there is no result (yet); EINVAL when the file
 * does not parse. */
int runfile_read_result(const char *dir, struct job_result *r, struct gf_err *e);
int runfile_read_result_at(int dirfd, const char *dir, struct job_result *r, struct gf_err *e);

/* A job's log is ID.log in its log directory, or, when that name was
 * taken by a file that is not the job's (another daemon's, an earlier
 * store's), the first free ID.N.log, N = 1 .. GF_LOG_SEQ_MAX. logseq
 * holds N, in decimal, only where N > 0. */
#define GF_LOG_SEQ_MAX 999
int runfile_write_logseq_at(int dirfd, long long seq);
/* 0 with *seq set, or -1 when there is none (ENOENT) or it does not parse. */
int runfile_read_logseq(const char *dir, long long *seq);

/* Open a directory (O_DIRECTORY); nofollow refuses a symbolic link as its
 * last component. Returns the fd or -1 (errno set). */
int runfile_open_dir(const char *dir, int nofollow);

/* Field `field` (numbered as in proc(5): 4 = ppid, 22 = starttime) of
 * /proc/<pid>/stat, robust to spaces and ')' in the command name. -1 with
 * errno set when the process is gone or the field is not a number. */
int proc_stat_field(pid_t pid, int field, unsigned long long *value);
int proc_start_ticks(pid_t pid, unsigned long long *ticks);
/* The state letter of /proc/<pid>/stat ('R', 'S', 'T' stopped, 'Z' a
 * zombie: gone, only not yet waited for), or 0 when there is no such
 * process. */
char proc_state(pid_t pid);

/* The first size-1 bytes of dir/name (a small kernel file, e.g. of a
 * cgroup), NUL-terminated. -1 when it cannot be read. */
int runfile_read_text(const char *dir, const char *name, char *buf, size_t size);

/* dir/name.tmp, fsync, rename over dir/name, fsync dir. Mode 0600. The
 * directory itself may be a link (the data directory a user moved); name
 * and name.tmp are never followed. */
int write_file_atomic(const char *dir, const char *name, const void *data, size_t len,
		      struct gf_err *e);
int write_file_atomic_at(int dirfd, const char *dir, const char *name, const void *data, size_t len,
			 struct gf_err *e);
/* The same without the fsyncs: readers see all of it or none of it, but a
 * power cut may lose it. For files nobody needs after a reboot. */
int write_file_replace(const char *dir, const char *name, const void *data, size_t len, struct gf_err *e);
/* dir/name for writing: the empty regular file that is there (a spare or
 * recycled run directory brings its files empty: rundir.c), else made new
 * (O_EXCL). Anything else there — a file with something in it, a link, a
 * FIFO — is refused (-1, errno EEXIST) and never opened through. */
int runfile_open_empty_at(int dirfd, const char *name);
/* dir/name written into the empty file there or a new one
 * (runfile_open_empty_at), not synced: for a run directory before its
 * runner starts, whose files nobody reads before they are whole. */
int write_file_new_at(int dirfd, const char *dir, const char *name, const void *data, size_t len,
		      struct gf_err *e);

/* Preemption (engine/preempt.c): the daemon sends the runner SIGTERM with
 * this value (sigqueue's, SI_QUEUE): "send the job SIG, then SIGKILL SECS
 * seconds later, and end as preempted". A plain SIGTERM is a cancel. */
#define GF_PREEMPT_MAGIC 0x5
#define GF_PREEMPT_VALUE(sig, secs) ((int)((GF_PREEMPT_MAGIC << 28) | ((unsigned)(secs) << 8) | (unsigned)(sig)))
#define GF_PREEMPT_IS(v) ((((unsigned)(v)) >> 28) == GF_PREEMPT_MAGIC)
#define GF_PREEMPT_SIG(v) ((int)((unsigned)(v) & 0xff))
#define GF_PREEMPT_SECS(v) ((int)(((unsigned)(v) >> 8) & 0xfffff))

#endif
