/* lcutil.c — what gflowd's management commands share: a failure line,
 * this executable's path, the live daemon's pid, a short sleep. */
#include "lcint.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


extern char **environ;
int lc_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gflowd: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

int lc_self_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}



/* pid of the live daemon, 0 when none. */
pid_t lc_daemon_pid(const struct gf_paths *p)
{
	char buf[64];
	int fd = open(p->lock, O_RDONLY | O_CLOEXEC), n;
	pid_t pid = 0;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		n = (int)read(fd, buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		pid = atoi(buf);
		if (pid <= 0)
			pid = 1;	/* locked but not yet written: starting */
	}
	close(fd);
	return pid;
}

void lc_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}
