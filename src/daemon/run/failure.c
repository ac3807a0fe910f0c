/* failure.c — why a job failed, where the evidence allows: OutOfMemory:GPU
 * when its log's tail holds a GPU out-of-memory message of a known library
 * (the table is src/common/oom.c), Signal:<name> when a signal ended it.
 * (OutOfMemory:Host comes from the runner, which reads the memory cgroup's
 * OOM events: jobs.c.) */
#include "run.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oom.h"

/* The last GF_OOM_TAIL_BYTES of the job's log into buf; its length, or -1.
 * Never follows a link at the log itself, never blocks on a FIFO. */
static ssize_t log_tail(struct server *s, const struct job *j, char *buf, size_t size)
{
	char path[GF_PATH_MAX + 32], name[64];
	struct stat st;
	ssize_t n, got = 0;
	off_t from;
	int fd;

	jobs_log_name(j, jm(j)->log_seq, name, sizeof name);
	if (!jm(j)->log_dir && s->log_dfd >= 0)
		fd = openat(s->log_dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	else {
		jobs_log_path(s, j, path, sizeof path);
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	from = st.st_size > (off_t)size ? st.st_size - (off_t)size : 0;
	while ((size_t)got < size && (n = pread(fd, buf + got, size - (size_t)got, from + got)) > 0)
		got += n;
	close(fd);
	return got;
}

void failure_classify(struct server *s, struct job *j, const struct job_result *r)
{
	char reason[64], *buf;
	const char *abbrev;
	ssize_t n;

	if (j->state != JS_FAILED || !r || j->reason)
		return;	/* not failed, or the reason is known already */
	buf = malloc(GF_OOM_TAIL_BYTES);
	if (buf && (n = log_tail(s, j, buf, GF_OOM_TAIL_BYTES)) > 0 && gf_oom_find(buf, (size_t)n)) {
		free(buf);
		job_set_reason(j, "OutOfMemory:GPU");
		return;
	}
	free(buf);
	if (!r->exited && r->signal > 0) {
		abbrev = sigabbrev_np(r->signal);
		if (abbrev)
			snprintf(reason, sizeof reason, "Signal:SIG%s", abbrev);
		else
			snprintf(reason, sizeof reason, "Signal:%d", r->signal);
		job_set_reason(j, reason);
	}
}
