/* nvml_watch — an independent witness of what NVML says about GPUs: it
 * loads libnvidia-ml.so.1 with dlopen (the library search path decides,
 * as for gflowd) and prints, every INTERVAL_MS milliseconds, one line with
 * the compute processes of every GPU:
 *
 *     0:4242,4243 1: 2:977
 *
 * until its output is closed. e2e tests read it while they torment the
 * daemon; a separate process, so a sanitized build of the library never
 * has to load into the test's own interpreter. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*init_fn)(void);
typedef int (*count_fn)(unsigned int *);
typedef int (*handle_fn)(unsigned int, void **);

struct proc_info {	/* nvmlProcessInfo_t (v2/v3) */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};

typedef int (*procs_fn)(void *, unsigned int *, struct proc_info *);

int main(int argc, char **argv)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	long ms = argc > 1 ? atol(argv[1]) : 20;
	struct timespec nap = { ms / 1000, (ms % 1000) * 1000000L };
	init_fn init;
	count_fn count;
	handle_fn handle;
	procs_fn procs;
	unsigned int n;

	signal(SIGPIPE, SIG_DFL);
	if (!lib) {
		fprintf(stderr, "nvml_watch: %s\n", dlerror());
		return 1;
	}
	init = (init_fn)dlsym(lib, "nvmlInit_v2");
	count = (count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
	handle = (handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	procs = (procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!init || !count || !handle || !procs || init() || count(&n)) {
		fprintf(stderr, "nvml_watch: NVML did not initialise\n");
		return 1;
	}
	for (;;) {
		for (unsigned int g = 0; g < n; g++) {
			struct proc_info info[256];
			unsigned int k = 256;
			void *h;

			printf("%s%u:", g ? " " : "", g);
			if (handle(g, &h) == 0 && procs(h, &k, info) == 0)
				for (unsigned int i = 0; i < k; i++)
					printf("%s%u", i ? "," : "", info[i].pid);
		}
		printf("\n");
		if (fflush(stdout))
			return 0;
		nanosleep(&nap, NULL);
	}
}
