/* stamp.c — the job of the latency benchmark: its first act is to read the
 * clocks. It writes "REALTIME MONOTONIC\n" (seconds, CLOCK_REALTIME — the
 * clock Python's time.time() reads — and CLOCK_MONOTONIC) to FILE, via
 * FILE.tmp and rename() so a reader never sees half a line. With a trace
 * file (TRACE, else $GFLOW_TRACE when set) it also appends the start-latency
 * trace's last step, "<CLOCK_MONOTONIC ns> job_start <$GFLOW_JOB_ID or ->",
 * with one write() (the format of the gflow processes' steps).
 *   stamp FILE [TRACE] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int trace(const char *path, const struct timespec *mono)
{
	const char *id = getenv("GFLOW_JOB_ID");
	char line[128];
	int n, fd;

	if (!id || !*id || strlen(id) > 32)
		id = "-";
	n = snprintf(line, sizeof line, "%lld job_start %s\n",
		     (long long)mono->tv_sec * 1000000000LL + mono->tv_nsec, id);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, line, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	struct timespec real, mono;
	const char *tpath;
	char tmp[4096];
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	if (argc < 2 || argc > 3 || snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
		fprintf(stderr, "usage: stamp FILE [TRACE]\n");
		return 2;
	}
	tpath = argc == 3 ? argv[2] : getenv("GFLOW_TRACE");
	if (tpath && *tpath && trace(tpath, &mono) != 0) {
		perror("stamp: trace file");
		return 1;
	}
	f = fopen(tmp, "w");
	if (!f ||
	    fprintf(f, "%lld.%09ld %lld.%09ld\n", (long long)real.tv_sec, real.tv_nsec,
		    (long long)mono.tv_sec, mono.tv_nsec) < 0 ||
	    fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
		perror("stamp");
		return 1;
	}
	return 0;
}
