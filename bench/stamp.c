/* stamp.c — the job of the latency benchmark: its first act is to read
 * the wall clock (CLOCK_REALTIME, the clock Python's time.time() reads)
 * and write it to FILE, via FILE.tmp and rename() so a reader never sees
 * half a number.
 *   stamp FILE */
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char tmp[4096];
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (argc != 2 || snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
		fprintf(stderr, "usage: stamp FILE\n");
		return 2;
	}
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec) < 0 || fclose(f) != 0 ||
	    rename(tmp, argv[1]) != 0) {
		perror("stamp");
		return 1;
	}
	return 0;
}
