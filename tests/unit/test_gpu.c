/* test_gpu.c — the NVML layer (src/daemon/gpu/gpu.c) against the fake
 * libnvidia-ml.so.1 (tests/fake-nvml/), through the real dlopen path.
 *
 * How the fake is found: the runner puts its directory on LD_LIBRARY_PATH
 * (meson: LD_LIBRARY_PATH=<builddir>/tests/fake-nvml). As a convenience,
 * when FAKE_NVML_DIR is set and LD_LIBRARY_PATH does not start with it, the
 * binary re-execs itself with LD_LIBRARY_PATH=$FAKE_NVML_DIR. main() checks
 * that the library found is the fake (it exports fake_nvml_marker) and
 * refuses to run against a real driver.
 *
 * The scenario file lives at one fixed path for the whole run (set in
 * FAKE_NVML_SCENARIO before any test, never changed, since the poller
 * thread reads the environment); tests replace it with rename(2) or delete
 * it. "--probe-absent" is the child mode used by test_library_absent: it
 * is re-exec'd with LD_LIBRARY_PATH pointing at an empty directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

static char tmpdir[256];
static char scenario[512];

static void write_scenario(const char *text)
{
	char tmp[600];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp", scenario);
	f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, scenario), 0);
}

static void remove_scenario(void)
{
	unlink(scenario);
}

static struct gpu_lib *open_ok(void)
{
	struct gf_err e = { { 0 } };
	struct gpu_lib *lib = gpu_lib_open(&e);

	if (!lib)
		fail_msg("gpu_lib_open: %s", e.msg);
	return lib;
}

/* Open, poll once, close. */
static void probe(struct gpu_snapshot *s)
{
	struct gpu_lib *lib = open_ok();

	assert_int_equal(gpu_lib_poll(lib, s), 0);
	gpu_lib_close(lib);
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static const char four_gpus[] =
	"# a 4-GPU box\n"
	"driver 550.54.15\n"
	"gpu 0 name=\"NVIDIA H100 80GB HBM3\" total_mb=81920 used_mb=0 util=0 "
	"uuid=GPU-00000000-0000-0000-0000-000000000000 pci=00000000:18:00.0\n"
	"gpu 1 name=\"NVIDIA H100 80GB HBM3\" total_mb=81920 used_mb=1024 util=37\n"
	"gpu 2 name=\"NVIDIA A100-SXM4-40GB\" total_mb=40960 util=100   # used from procs\n"
	"gpu 3 total_mb=24576\n";

/* ---- the synchronous probe ------------------------------------------------ */

static void test_four_gpus(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	write_scenario(four_gpus);
	probe(&s);
	assert_true(s.nvml_ok);
	assert_string_equal(s.driver_version, "550.54.15");
	assert_int_equal(s.ndev, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(s.devs[i].index, (int)i);
		assert_false(s.devs[i].down);
		assert_int_equal(s.devs[i].nprocs, 0);
	}
	assert_string_equal(s.devs[0].name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(s.devs[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	assert_string_equal(s.devs[0].pci_bus_id, "00000000:18:00.0");
	assert_int_equal(s.devs[0].total_mb, 81920);
	assert_int_equal(s.devs[0].used_mb, 0);
	assert_int_equal(s.devs[0].util_pct, 0);
	assert_int_equal(s.devs[1].used_mb, 1024);
	assert_int_equal(s.devs[1].util_pct, 37);
	assert_string_equal(s.devs[2].name, "NVIDIA A100-SXM4-40GB");
	assert_int_equal(s.devs[2].total_mb, 40960);
	assert_int_equal(s.devs[2].util_pct, 100);
	/* Defaults: name, derived uuid distinct per GPU, a PCI id. */
	assert_string_equal(s.devs[3].name, "Fake GPU");
	assert_int_equal(s.devs[3].total_mb, 24576);
	assert_true(strncmp(s.devs[3].uuid, "GPU-", 4) == 0);
	assert_string_not_equal(s.devs[3].uuid, s.devs[1].uuid);
	assert_string_not_equal(s.devs[3].pci_bus_id, "");
	gpu_snapshot_free(&s);
	assert_null(s.devs);
	assert_int_equal(s.ndev, 0);
}

static void test_processes(void **state)
{
	char text[8192];
	size_t off;
	struct gpu_snapshot s;

	(void)state;
	off = (size_t)snprintf(text, sizeof text, "gpu 0\ngpu 1\ngpu 2 total_mb=1000000\n"
				 "proc 0 pid=4242 used_mb=500\nproc 0 pid=4243 used_mb=1500\n");
	/* 70 processes on GPU 2: more than the first buffer holds. */
	for (int i = 0; i < 70; i++)
		off += (size_t)snprintf(text + off, sizeof text - off, "proc 2 pid=%d used_mb=%d\n", 10000 + i, i + 1);
	write_scenario(text);
	probe(&s);
	assert_int_equal(s.ndev, 3);
	assert_int_equal(s.devs[0].nprocs, 2);
	assert_int_equal(s.devs[0].procs[0].pid, 4242);
	assert_int_equal(s.devs[0].procs[0].used_mb, 500);
	assert_int_equal(s.devs[0].procs[1].pid, 4243);
	assert_int_equal(s.devs[0].procs[1].used_mb, 1500);
	assert_int_equal(s.devs[0].used_mb, 2000);	/* fake: sum of its processes */
	assert_int_equal(s.devs[1].nprocs, 0);
	assert_null(s.devs[1].procs);
	assert_int_equal(s.devs[2].nprocs, 70);
	for (int i = 0; i < 70; i++) {
		assert_int_equal(s.devs[2].procs[i].pid, 10000 + i);
		assert_int_equal(s.devs[2].procs[i].used_mb, i + 1);
	}
	gpu_snapshot_free(&s);
}

static void test_lost_gpu(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	write_scenario("gpu 0\ngpu 1\ngpu 2\ngpu 3\nproc 3 pid=7 used_mb=1\nlost 2\n");
	probe(&s);
	assert_true(s.nvml_ok);
	assert_int_equal(s.ndev, 4);
	assert_true(s.devs[2].down);
	assert_int_equal(s.devs[2].index, 2);
	assert_non_null(strstr(s.devs[2].down_reason, "GPU is lost"));
	assert_int_equal(s.devs[2].nprocs, 0);
	for (int i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_false(s.devs[i].down);
		assert_string_equal(s.devs[i].down_reason, "");
		assert_int_equal(s.devs[i].total_mb, 81920);
	}
	assert_int_equal(s.devs[3].nprocs, 1);
	/* Topology around a lost GPU: the worst level, not a failure. */
	assert_non_null(s.topo);
	assert_int_equal(s.topo[2 * 4 + 0], GPU_TOPO_SYSTEM);
	gpu_snapshot_free(&s);
}

static void test_init_failure(void **state)
{
	struct gf_err e = { { 0 } };

	(void)state;
	write_scenario("init_fail 9\ngpu 0\n");
	assert_null(gpu_lib_open(&e));
	assert_string_equal(e.msg, "nvmlInit failed: Driver Not Loaded");
	write_scenario("init_fail 18\n");
	assert_null(gpu_lib_open(&e));
	assert_non_null(strstr(e.msg, "nvmlInit failed: "));
	assert_non_null(strstr(e.msg, "version mismatch"));
}

static void test_no_scenario(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	remove_scenario();
	probe(&s);
	assert_true(s.nvml_ok);
	assert_int_equal(s.ndev, 0);
	assert_null(s.devs);
	assert_null(s.topo);
	gpu_snapshot_free(&s);

	write_scenario("# nothing but a comment\n\n");
	probe(&s);
	assert_true(s.nvml_ok);
	assert_int_equal(s.ndev, 0);
	gpu_snapshot_free(&s);
}

static void test_rewrite_between_polls(void **state)
{
	struct gpu_lib *lib;
	struct gpu_snapshot a, b;

	(void)state;
	write_scenario("gpu 0 used_mb=0\ngpu 1\n");
	lib = open_ok();
	assert_int_equal(gpu_lib_poll(lib, &a), 0);
	/* Same size, rewritten at once: rename gives a new inode. */
	write_scenario("gpu 0 used_mb=9\ngpu 1\nproc 1 pid=99 used_mb=5\ngpu 2\n");
	assert_int_equal(gpu_lib_poll(lib, &b), 0);
	gpu_lib_close(lib);
	assert_int_equal(a.ndev, 2);
	assert_int_equal(a.devs[0].used_mb, 0);
	assert_int_equal(a.devs[1].nprocs, 0);
	assert_int_equal(b.ndev, 3);
	assert_int_equal(b.devs[0].used_mb, 9);
	assert_int_equal(b.devs[1].nprocs, 1);
	assert_int_equal(b.devs[1].procs[0].pid, 99);
	gpu_snapshot_free(&a);
	gpu_snapshot_free(&b);
}

static void test_omit_optional(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	write_scenario("gpu 0 util=50\ngpu 1 util=60\n"
		       "omit nvmlDeviceGetUtilizationRates\n"
		       "omit nvmlDeviceGetTopologyCommonAncestor\n"
		       "omit nvmlSystemGetDriverVersion\n"
		       "omit nvmlDeviceGetPciInfo_v3\n");
	probe(&s);
	assert_int_equal(s.ndev, 2);
	for (int i = 0; i < 2; i++) {
		assert_false(s.devs[i].down);
		assert_int_equal(s.devs[i].util_pct, -1);
		assert_string_equal(s.devs[i].pci_bus_id, "");
		assert_int_equal(s.devs[i].total_mb, 81920);
	}
	assert_null(s.topo);
	assert_string_equal(s.driver_version, "");
	gpu_snapshot_free(&s);

	/* NOT_SUPPORTED on one GPU only leaves that GPU's field unknown. */
	write_scenario("gpu 0 util=50\ngpu 1 util=60\nfail nvmlDeviceGetUtilizationRates 3 gpu=1\n");
	probe(&s);
	assert_int_equal(s.devs[0].util_pct, 50);
	assert_int_equal(s.devs[1].util_pct, -1);
	assert_false(s.devs[1].down);
	gpu_snapshot_free(&s);
}

static void test_fallback_versions(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	/* _v3 and _v2 process lists and memory _v2 stubbed: v1 of each. */
	write_scenario("gpu 0 total_mb=1000 used_mb=300\nproc 0 pid=11 used_mb=100\nproc 0 pid=12 used_mb=200\n"
		       "omit nvmlDeviceGetComputeRunningProcesses_v3\n"
		       "omit nvmlDeviceGetComputeRunningProcesses_v2\n"
		       "omit nvmlDeviceGetMemoryInfo_v2\n");
	probe(&s);
	assert_false(s.devs[0].down);
	assert_int_equal(s.devs[0].total_mb, 1000);
	assert_int_equal(s.devs[0].used_mb, 300);
	assert_int_equal(s.devs[0].nprocs, 2);
	assert_int_equal(s.devs[0].procs[0].pid, 11);
	assert_int_equal(s.devs[0].procs[1].pid, 12);
	assert_int_equal(s.devs[0].procs[1].used_mb, 200);
	gpu_snapshot_free(&s);

	/* Only _v3 stubbed: _v2 (the 24-byte layout). */
	write_scenario("gpu 0\nproc 0 pid=21 used_mb=7\nproc 0 pid=22 used_mb=8\n"
		       "omit nvmlDeviceGetComputeRunningProcesses_v3\n");
	probe(&s);
	assert_int_equal(s.devs[0].nprocs, 2);
	assert_int_equal(s.devs[0].procs[1].pid, 22);
	assert_int_equal(s.devs[0].procs[1].used_mb, 8);
	gpu_snapshot_free(&s);

	/* No process list at all: the GPU cannot be trusted, so it is down. */
	write_scenario("gpu 0\ngpu 1\n"
		       "omit nvmlDeviceGetComputeRunningProcesses_v3\n"
		       "omit nvmlDeviceGetComputeRunningProcesses_v2\n"
		       "omit nvmlDeviceGetComputeRunningProcesses\n");
	probe(&s);
	assert_true(s.devs[0].down);
	assert_non_null(strstr(s.devs[0].down_reason, "Function Not Found"));
	gpu_snapshot_free(&s);
}

static void test_topology(void **state)
{
	struct gpu_snapshot s;
	static const int want[4][4] = {
		{ 0, 10, 50, 50 },
		{ 10, 0, 50, 50 },
		{ 50, 50, 0, 20 },
		{ 50, 50, 20, 0 },
	};

	(void)state;
	write_scenario("gpu 3\ntopo 0 1 level=10\ntopo 3 2 level=20\n");
	probe(&s);
	assert_int_equal(s.ndev, 4);	/* gpu 3 implies 0..2 */
	assert_non_null(s.topo);
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			assert_int_equal(s.topo[a * 4 + b], want[a][b]);
	gpu_snapshot_free(&s);
}

/* MIG: a GPU in MIG mode becomes its MIG devices (units), each with its
 * own UUID, name, memory and processes; units after it are renumbered;
 * two units of one GPU are INTERNAL to each other. */
static void test_mig_units(void **state)
{
	struct gpu_snapshot s;

	(void)state;
	write_scenario("gpu 0 name=A100 total_mb=80000\ngpu 1 name=B\ngpu 2\n"
	    "mig 1 count=2 profile=3g.40gb total_mb=40000\n"
	    "proc 1 pid=31 used_mb=100 mig=1\nproc 0 pid=32 used_mb=5\ntopo 0 1 level=10\n"
	    "mig 2 count=0\n");
	probe(&s);
	assert_int_equal(s.ndev, 4);
	assert_int_equal(s.devs[0].parent, 0);
	assert_int_equal(s.devs[0].mig_index, -1);
	for (int u = 1; u <= 2; u++) {
		assert_int_equal(s.devs[u].index, u);
		assert_int_equal(s.devs[u].parent, 1);
		assert_int_equal(s.devs[u].mig_index, u - 1);
		assert_memory_equal(s.devs[u].uuid, "MIG-", 4);
		assert_string_equal(s.devs[u].name, "B MIG 3g.40gb");
		assert_int_equal(s.devs[u].total_mb, 40000);
		assert_int_equal(s.devs[u].util_pct, -1);
	}
	assert_string_not_equal(s.devs[1].uuid, s.devs[2].uuid);
	assert_int_equal(s.devs[1].nprocs, 0);
	assert_int_equal(s.devs[2].nprocs, 1);
	assert_int_equal(s.devs[2].procs[0].pid, 31);
	assert_int_equal(s.devs[2].used_mb, 100);
	assert_int_equal(s.devs[0].nprocs, 1);
	/* MIG mode without MIG devices: one unit, down */
	assert_int_equal(s.devs[3].parent, 2);
	assert_true(s.devs[3].down);
	assert_non_null(strstr(s.devs[3].down_reason, "no MIG devices"));
	assert_non_null(s.topo);
	assert_int_equal(s.topo[1 * 4 + 2], 0);
	assert_int_equal(s.topo[0 * 4 + 1], 10);
	assert_int_equal(s.topo[0 * 4 + 2], 10);
	assert_int_equal(s.topo[0 * 4 + 3], 50);
	gpu_snapshot_free(&s);
}

static void test_snapshot_copy(void **state)
{
	struct gpu_snapshot s, c;

	(void)state;
	write_scenario("gpu 0\ngpu 1\nproc 1 pid=5 used_mb=10\ntopo 0 1 level=30\n");
	probe(&s);
	s.seq = 41;
	assert_int_equal(gpu_snapshot_copy(&c, &s), 0);
	assert_ptr_not_equal(c.devs, s.devs);
	assert_ptr_not_equal(c.devs[1].procs, s.devs[1].procs);
	assert_ptr_not_equal(c.topo, s.topo);
	assert_string_equal(c.devs[1].uuid, s.devs[1].uuid);
	gpu_snapshot_free(&s);
	assert_int_equal(c.seq, 41);
	assert_int_equal(c.ndev, 2);
	assert_int_equal(c.devs[1].procs[0].pid, 5);
	assert_int_equal(c.topo[1], 30);
	gpu_snapshot_free(&c);
}

static void test_missing_symbol(void **state)
{
	struct gf_err e = { { 0 } };

	(void)state;
	/* A real library that is not NVML. */
	assert_null(gpu_lib_open_named("libm.so.6", &e));
	assert_string_equal(e.msg, "NVML unusable: missing symbol nvmlInit_v2");
	assert_null(gpu_lib_open_named("libgflow-no-such-lib.so.1", &e));
	assert_non_null(strstr(e.msg, "NVML library libgflow-no-such-lib.so.1 not found: "));
}

/* The library absent from the search path: a child re-exec'd with
 * LD_LIBRARY_PATH at an empty directory reports what gpu_lib_open said. */
static int probe_absent_child(void)
{
	struct gf_err e = { { 0 } };
	struct gpu_lib *lib = gpu_lib_open(&e);

	if (lib) {
		printf("loaded\n");
		gpu_lib_close(lib);
	} else
		printf("%s\n", e.msg);
	return 0;
}

static void test_library_absent(void **state)
{
	char empty[600], env[700], out[1024] = "";
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	(void)state;
	snprintf(empty, sizeof empty, "%s/empty", tmpdir);
	assert_true(mkdir(empty, 0700) == 0 || errno == EEXIST);
	snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s", empty);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "test_gpu", "--probe-absent", NULL };
		char *envp[] = { env, NULL };

		dup2(fds[1], 1);
		close(fds[0]);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + got, sizeof out - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	out[got] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (strncmp(out, "loaded", 6) == 0)
		skip();	/* a real driver on the default path: nothing to prove */
	assert_non_null(strstr(out, "NVML library libnvidia-ml.so.1 not found: "));
	assert_non_null(strstr(out, "libnvidia-ml.so.1"));
}

/* The fake's own NVML semantics, called directly. */
static void test_fake_semantics(void **state)
{
	typedef int (*v_fn)(void);
	typedef int (*count_fn)(unsigned int *);
	typedef int (*handle_fn)(unsigned int, void **);
	typedef int (*str_fn)(void *, char *, unsigned int);
	typedef int (*procs_fn)(void *, unsigned int *, void *);
	struct { unsigned int version; unsigned long long total, reserved, free, used; } mem2;
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW), *dev = NULL;
	unsigned int n = 0;
	char small[8], buf[96];

	(void)state;
	assert_non_null(h);
	v_fn init = (v_fn)dlsym(h, "nvmlInit_v2"), shut = (v_fn)dlsym(h, "nvmlShutdown");
	count_fn count = (count_fn)dlsym(h, "nvmlDeviceGetCount_v2");
	handle_fn handle = (handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	str_fn uuid = (str_fn)dlsym(h, "nvmlDeviceGetUUID");
	procs_fn procs = (procs_fn)dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
	int (*mem)(void *, void *) = (int (*)(void *, void *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
	assert_true(init && shut && count && handle && uuid && procs && mem);

	write_scenario("gpu 0 uuid=GPU-1234567890\nproc 0 pid=1\nproc 0 pid=2\nproc 0 pid=3\n");
	assert_int_equal(count(&n), 1);		/* UNINITIALIZED */
	assert_int_equal(init(), 0);
	assert_int_equal(count(&n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(handle(1, &dev), 2);	/* INVALID_ARGUMENT */
	assert_int_equal(handle(0, &dev), 0);
	assert_int_equal(uuid(dev, small, sizeof small), 7);	/* INSUFFICIENT_SIZE */
	assert_int_equal(uuid(dev, buf, sizeof buf), 0);
	assert_string_equal(buf, "GPU-1234567890");
	n = 0;
	assert_int_equal(procs(dev, &n, NULL), 7);
	assert_int_equal(n, 3);
	assert_int_equal(procs(dev, NULL, NULL), 2);
	memset(&mem2, 0, sizeof mem2);
	mem2.version = 1;
	assert_int_equal(mem(dev, &mem2), 25);	/* ARGUMENT_VERSION_MISMATCH */
	mem2.version = (unsigned int)sizeof mem2 | 2u << 24;
	assert_int_equal(mem(dev, &mem2), 0);
	assert_int_equal(mem2.total, 81920ULL << 20);
	assert_int_equal(shut(), 0);
	assert_int_equal(count(&n), 1);
	assert_int_equal(shut(), 1);
	dlclose(h);
}

/* ---- the poller ----------------------------------------------------------- */

/* Wait up to ms for a byte on fd; 1 if one came. Drains it. */
static int wait_notify(int fd, int ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char buf[64];

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	while (read(fd, buf, sizeof buf) > 0)
		;
	return 1;
}

static void new_pipe(int fds[2])
{
	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
}

static struct gpu_poller *start_ok(int interval, int fd)
{
	struct gf_err e = { { 0 } };
	struct gpu_poller *p = gpu_poller_start(interval, fd, &e);

	if (!p)
		fail_msg("gpu_poller_start: %s", e.msg);
	return p;
}

static void test_poller_delivers(void **state)
{
	struct gpu_snapshot s;
	struct gf_err e = { { 0 } };
	struct gpu_poller *p;
	uint64_t seq;
	int fds[2];

	(void)state;
	assert_null(gpu_poller_start(0, -1, &e));
	assert_non_null(strstr(e.msg, "poll interval"));

	write_scenario("gpu 0 name=A\ngpu 1 name=B\nproc 1 pid=77 used_mb=3\n");
	new_pipe(fds);
	p = start_ok(60, fds[1]);
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_true(s.nvml_ok);
	assert_int_equal(s.ndev, 2);
	assert_string_equal(s.devs[1].name, "B");
	assert_int_equal(s.devs[1].procs[0].pid, 77);
	seq = s.seq;
	assert_true(seq >= 1);
	gpu_snapshot_free(&s);

	/* A kick polls long before the 60 s interval, and sees the change. */
	write_scenario("gpu 0 name=A\n");
	gpu_poller_kick(p);
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_true(s.seq > seq);
	assert_int_equal(s.ndev, 1);
	gpu_snapshot_free(&s);

	/* A shorter interval applies to the wait in progress. */
	gpu_poller_set_interval(p, 1);
	assert_true(wait_notify(fds[0], 3000));
	gpu_poller_stop(p);
	close(fds[0]);
	close(fds[1]);
}

static void test_poller_reports_failure_then_recovers(void **state)
{
	struct gpu_snapshot s;
	struct gpu_poller *p;
	int fds[2];

	(void)state;
	write_scenario("init_fail 9\ngpu 0\n");
	new_pipe(fds);
	p = start_ok(60, fds[1]);
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_false(s.nvml_ok);
	assert_string_equal(s.status, "nvmlInit failed: Driver Not Loaded");
	assert_int_equal(s.ndev, 0);
	gpu_snapshot_free(&s);

	/* The driver comes back: the next round reopens the library. */
	write_scenario("gpu 0\n");
	gpu_poller_kick(p);
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_true(s.nvml_ok);
	assert_int_equal(s.ndev, 1);
	gpu_snapshot_free(&s);
	gpu_poller_stop(p);
	close(fds[0]);
	close(fds[1]);
}

/* A hung driver call delays GPU data, never the reader. */
static void test_poller_hang_does_not_block(void **state)
{
	struct gpu_snapshot s;
	struct gpu_poller *p;
	uint64_t seq;
	long t0;
	int fds[2];

	(void)state;
	write_scenario("gpu 0\ngpu 1\ngpu 2\ngpu 3\n");
	new_pipe(fds);
	p = start_ok(60, fds[1]);
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	seq = s.seq;
	gpu_snapshot_free(&s);

	write_scenario("gpu 0\ngpu 1\ngpu 2\ngpu 3\nhang 3 secs=30\n");
	gpu_poller_kick(p);
	sleep_ms(300);	/* the poller is now asleep inside the fake */
	t0 = now_ms();
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_true(now_ms() - t0 < 100);
	assert_int_equal(s.seq, seq);	/* the previous snapshot */
	assert_int_equal(s.ndev, 4);
	gpu_snapshot_free(&s);
	assert_false(wait_notify(fds[0], 200));

	/* The hang ends: the poll completes and is delivered. */
	write_scenario("gpu 0\ngpu 1\ngpu 2\ngpu 3 name=Back\n");
	assert_true(wait_notify(fds[0], 5000));
	assert_int_equal(gpu_poller_latest(p, &s), 0);
	assert_true(s.seq > seq);
	assert_string_equal(s.devs[3].name, "Back");
	gpu_snapshot_free(&s);
	gpu_poller_stop(p);
	close(fds[0]);
	close(fds[1]);
}

/* Stopping while the thread is stuck in NVML returns after the bound; the
 * detached thread cleans up once the call returns and never writes to the
 * (by then closed) notify fd. */
static void test_poller_stop_while_hung(void **state)
{
	struct gpu_poller *p;
	long t0, took;
	int fds[2];

	(void)state;
	write_scenario("gpu 0\nhang 0 secs=30\n");
	new_pipe(fds);
	p = start_ok(60, fds[1]);
	sleep_ms(300);
	t0 = now_ms();
	gpu_poller_stop(p);
	took = now_ms() - t0;
	assert_true(took >= GPU_POLLER_STOP_WAIT_MS - 100);
	assert_true(took < GPU_POLLER_STOP_WAIT_MS + 1000);
	/* Let the orphan's call return: it must clean up without a word. */
	write_scenario("gpu 0\n");
	sleep_ms(500);
	assert_false(wait_notify(fds[0], 50));
	close(fds[0]);
	close(fds[1]);
}

int main(int argc, char **argv)
{
	const char *fake_dir = getenv("FAKE_NVML_DIR"), *ldp = getenv("LD_LIBRARY_PATH");
	void *h;

	if (argc > 1 && strcmp(argv[1], "--probe-absent") == 0)
		return probe_absent_child();
	if (fake_dir && *fake_dir && (!ldp || strncmp(ldp, fake_dir, strlen(fake_dir)) != 0)) {
		setenv("LD_LIBRARY_PATH", fake_dir, 1);
		execv("/proc/self/exe", argv);
		perror("re-exec with LD_LIBRARY_PATH");
		return 1;
	}
	h = dlopen(GPU_NVML_SONAME, RTLD_NOW);
	if (!h || !dlsym(h, "fake_nvml_marker")) {
		fprintf(stderr, "test_gpu: %s is not the fake NVML (%s); run with "
			"LD_LIBRARY_PATH=<builddir>/tests/fake-nvml or FAKE_NVML_DIR\n",
			GPU_NVML_SONAME, h ? "a real library was found" : dlerror());
		return 1;
	}
	dlclose(h);

	snprintf(tmpdir, sizeof tmpdir, "/tmp/gflow-test-gpu-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(scenario, sizeof scenario, "%s/scenario", tmpdir);
	setenv("FAKE_NVML_SCENARIO", scenario, 1);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_four_gpus),
		cmocka_unit_test(test_processes),
		cmocka_unit_test(test_lost_gpu),
		cmocka_unit_test(test_init_failure),
		cmocka_unit_test(test_no_scenario),
		cmocka_unit_test(test_rewrite_between_polls),
		cmocka_unit_test(test_omit_optional),
		cmocka_unit_test(test_fallback_versions),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_mig_units),
		cmocka_unit_test(test_snapshot_copy),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_library_absent),
		cmocka_unit_test(test_fake_semantics),
		cmocka_unit_test(test_poller_delivers),
		cmocka_unit_test(test_poller_reports_failure_then_recovers),
		cmocka_unit_test(test_poller_hang_does_not_block),
		cmocka_unit_test(test_poller_stop_while_hung),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char path[600];

	remove_scenario();
	snprintf(path, sizeof path, "%s/empty", tmpdir);
	rmdir(path);
	rmdir(tmpdir);
	return rc;
}
