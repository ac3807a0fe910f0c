/* fake_nvml.c — a stand-in libnvidia-ml.so.1 for tests.
 *
 * It exports the NVML entry points gflow uses, with NVML's real names,
 * signatures, struct layouts and return codes, and pretends to be the
 * machine described by the scenario file named in $FAKE_NVML_SCENARIO
 * (format: README.md next to this file). The file is re-read whenever its
 * inode, size or mtime changes, so a test can swap it with rename(2) while
 * the daemon runs. All state is library-global, as in the real NVML, and
 * guarded by one mutex; a "hang" sleeps with the mutex released. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- NVML's public types (nvml.h) --------------------------------------- */

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;

#define NVML_STRUCT_VERSION(data, ver) \
	((unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U)))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlProcessInfo_v1_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef enum nvmlGpuLevel_enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

/* ---- the pretend machine ------------------------------------------------ */

#define FAKE_MAX_GPUS 64
#define FAKE_MAX_FAILS 32
#define FAKE_FIELD 128

#define FAKE_MAX_MIG 7		/* MIG devices per GPU (an A100/H100 has up to 7) */
#define NVML_DEVICE_MIG_ENABLE 1

struct fake_proc {
	int gpu;
	unsigned int pid;
	unsigned long long used_mb;
	int mig;		/* MIG device index on the GPU, -1 none */
};

/* `mig I count=N [profile=P] [total_mb=M]`: GPU I in MIG mode. */
struct fake_mig {
	int on;
	int count;
	char profile[32];
	unsigned long long total_mb;	/* per instance; 0: the GPU's / count */
};

struct fake_gpu {
	char name[FAKE_FIELD], uuid[FAKE_FIELD], pci[FAKE_FIELD];
	unsigned long long total_mb, used_mb;
	int used_set;		/* used_mb given; otherwise the sum of its procs */
	unsigned int util, mem_util;
	unsigned int minor;	/* of /dev/nvidiaN, default the index */
	int lost;
	int hang_secs;
};

/* A symbol made to fail: `omit NAME` (code 13) or `fail NAME CODE [gpu=I]`. */
struct fake_fail {
	char symbol[64];
	int gpu;		/* -1: every call */
	nvmlReturn_t code;
};

struct fake_machine {
	int init_fail;		/* nvmlReturn_t for nvmlInit, 0 = succeed */
	char driver[FAKE_FIELD];
	int ngpus;
	struct fake_gpu gpus[FAKE_MAX_GPUS];
	unsigned char topo[FAKE_MAX_GPUS][FAKE_MAX_GPUS];
	struct fake_proc *procs;
	size_t nprocs, procs_cap;
	size_t nfile_procs;	/* the first procs come from `proc` lines */
	char env_var[FAKE_FIELD];	/* `env_procs VAR`: live processes carrying VAR */
	struct fake_mig mig[FAKE_MAX_GPUS];
	struct fake_fail fails[FAKE_MAX_FAILS];
	int nfails;
};

/* The handle NVML gives out: one per index (and one per MIG device of
 * each), stable for the process. */
struct nvmlDevice_st {
	int index;
	int mig;		/* -1: the GPU itself */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_machine machine;
static struct nvmlDevice_st handles[FAKE_MAX_GPUS];
static struct nvmlDevice_st mig_handles[FAKE_MAX_GPUS][FAKE_MAX_MIG];
static int init_count;
static int loaded;		/* machine has been read at least once */
static struct stat loaded_st;	/* identity of the file last read */
static int loaded_exists;
static char loaded_path[4096];

static void machine_reset(struct fake_machine *m)
{
	free(m->procs);
	memset(m, 0, sizeof *m);
	snprintf(m->driver, sizeof m->driver, "550.54.15");
	for (int a = 0; a < FAKE_MAX_GPUS; a++)
		for (int b = 0; b < FAKE_MAX_GPUS; b++)
			m->topo[a][b] = a == b ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_SYSTEM;
}

static void gpu_defaults(struct fake_gpu *g, int index)
{
	memset(g, 0, sizeof *g);
	snprintf(g->name, sizeof g->name, "Fake GPU");
	snprintf(g->uuid, sizeof g->uuid, "GPU-%08x-0000-4000-8000-%012x", (unsigned)index, (unsigned)index);
	snprintf(g->pci, sizeof g->pci, "00000000:%02X:00.0", (unsigned)(0x10 + index));
	g->total_mb = 81920;
	g->minor = (unsigned int)index;
}

/* Define GPU `index` as *g (or defaults), keeping lost/hang flags that
 * earlier lines set on it. */
static void gpu_set(struct fake_gpu *slot, const struct fake_gpu *g, int index)
{
	int lost = slot->lost, hang = slot->hang_secs;

	if (g)
		*slot = *g;
	else
		gpu_defaults(slot, index);
	slot->lost = lost;
	slot->hang_secs = hang;
}

/* ---- scenario parsing --------------------------------------------------- */

static void warn(const char *path, int line, const char *what, const char *tok)
{
	fprintf(stderr, "fake-nvml: %s:%d: %s '%s' (line ignored)\n", path, line, what, tok);
}

/* Split the next token off *p: a word, or key="quoted value". NUL-terminates
 * it in place; returns NULL at end of line or at a comment. */
static char *next_token(char **p)
{
	char *s = *p, *out, *w;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '#' || *s == '\n' || *s == '\r')
		return NULL;
	out = w = s;
	while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') {
		if (*s == '"') {
			s++;
			while (*s && *s != '"')
				*w++ = *s++;
			if (*s == '"')
				s++;
			continue;
		}
		*w++ = *s++;
	}
	if (*s)
		s++;
	*w = '\0';
	*p = s;
	return out;
}

static int parse_num(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "key=value" → value when the key matches, else NULL. */
static const char *kv(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return strncmp(tok, key, n) == 0 && tok[n] == '=' ? tok + n + 1 : NULL;
}

static int parse_gpu_index(const char *s, long long *out)
{
	return parse_num(s, 0, FAKE_MAX_GPUS - 1, out);
}

static int add_proc(struct fake_machine *m, int gpu, unsigned int pid, unsigned long long used_mb, int mig)
{
	if (m->nprocs == m->procs_cap) {
		size_t cap = m->procs_cap ? m->procs_cap * 2 : 64;
		struct fake_proc *np = realloc(m->procs, cap * sizeof *np);

		if (!np)
			return -1;
		m->procs = np;
		m->procs_cap = cap;
	}
	m->procs[m->nprocs++] = (struct fake_proc){ gpu, pid, used_mb, mig };
	return 0;
}

/* One `gpu I key=value...` line. */
static void parse_gpu(struct fake_machine *m, char *rest, const char *path, int ln)
{
	char *tok = next_token(&rest);
	struct fake_gpu g;
	long long idx, v;
	const char *val;

	if (!tok || parse_gpu_index(tok, &idx))
		return warn(path, ln, "bad gpu index", tok ? tok : "");
	gpu_defaults(&g, (int)idx);
	while ((tok = next_token(&rest))) {
		if ((val = kv(tok, "name")))
			snprintf(g.name, sizeof g.name, "%s", val);
		else if ((val = kv(tok, "uuid")))
			snprintf(g.uuid, sizeof g.uuid, "%s", val);
		else if ((val = kv(tok, "pci")))
			snprintf(g.pci, sizeof g.pci, "%s", val);
		else if ((val = kv(tok, "total_mb")) && !parse_num(val, 0, 1LL << 40, &v))
			g.total_mb = (unsigned long long)v;
		else if ((val = kv(tok, "used_mb")) && !parse_num(val, 0, 1LL << 40, &v)) {
			g.used_mb = (unsigned long long)v;
			g.used_set = 1;
		} else if ((val = kv(tok, "util")) && !parse_num(val, 0, 100, &v))
			g.util = (unsigned int)v;
		else if ((val = kv(tok, "mem_util")) && !parse_num(val, 0, 100, &v))
			g.mem_util = (unsigned int)v;
		else if ((val = kv(tok, "minor")) && !parse_num(val, 0, 255, &v))
			g.minor = (unsigned int)v;
		else
			return warn(path, ln, "bad gpu field", tok);
	}
	/* Defining GPU I implies GPUs 0..I-1 exist (with defaults) too. */
	for (int i = m->ngpus; i < idx; i++)
		gpu_set(&m->gpus[i], NULL, i);
	gpu_set(&m->gpus[idx], &g, (int)idx);
	if (idx >= m->ngpus)
		m->ngpus = (int)idx + 1;
}

static void parse_proc(struct fake_machine *m, char *rest, const char *path, int ln)
{
	char *tok = next_token(&rest);
	long long idx, pid = -1, used = 0, mig = -1;
	const char *val;

	if (!tok || parse_gpu_index(tok, &idx))
		return warn(path, ln, "bad proc gpu index", tok ? tok : "");
	while ((tok = next_token(&rest))) {
		if ((val = kv(tok, "pid")) && !parse_num(val, 1, 0xffffffffLL, &pid))
			continue;
		if ((val = kv(tok, "used_mb")) && !parse_num(val, 0, 1LL << 40, &used))
			continue;
		if ((val = kv(tok, "mig")) && !parse_num(val, 0, FAKE_MAX_MIG - 1, &mig))
			continue;
		return warn(path, ln, "bad proc field", tok);
	}
	if (pid < 0)
		return warn(path, ln, "proc without", "pid=");
	if (add_proc(m, (int)idx, (unsigned int)pid, (unsigned long long)used, (int)mig))
		return warn(path, ln, "out of memory for", "proc");
}

/* mig I count=N [profile=P] [total_mb=M] */
static void parse_mig(struct fake_machine *m, char *rest, const char *path, int ln)
{
	char *tok = next_token(&rest);
	struct fake_mig g = { 1, 0, "1g.10gb", 0 };
	long long idx, v;
	const char *val;

	if (!tok || parse_gpu_index(tok, &idx))
		return warn(path, ln, "bad mig gpu index", tok ? tok : "");
	while ((tok = next_token(&rest))) {
		if ((val = kv(tok, "count")) && !parse_num(val, 0, FAKE_MAX_MIG, &v))
			g.count = (int)v;
		else if ((val = kv(tok, "profile")))
			snprintf(g.profile, sizeof g.profile, "%s", val);
		else if ((val = kv(tok, "total_mb")) && !parse_num(val, 0, 1LL << 40, &v))
			g.total_mb = (unsigned long long)v;
		else
			return warn(path, ln, "bad mig field", tok);
	}
	m->mig[idx] = g;
}

/* lost I | hang I secs=S | topo I J level=L */
static void parse_gpu_flag(struct fake_machine *m, const char *kw, char *rest, const char *path, int ln)
{
	char *tok = next_token(&rest);
	long long idx, other = -1, v = -1;
	const char *val;

	if (!tok || parse_gpu_index(tok, &idx))
		return warn(path, ln, "bad gpu index", tok ? tok : "");
	if (!strcmp(kw, "topo")) {
		tok = next_token(&rest);
		if (!tok || parse_gpu_index(tok, &other))
			return warn(path, ln, "bad second gpu index", tok ? tok : "");
	}
	while ((tok = next_token(&rest))) {
		if (!strcmp(kw, "hang") && (val = kv(tok, "secs")) && !parse_num(val, 0, 86400, &v))
			continue;
		if (!strcmp(kw, "topo") && (val = kv(tok, "level")) && !parse_num(val, 0, 50, &v) && v % 10 == 0)
			continue;
		return warn(path, ln, "bad field", tok);
	}
	if (!strcmp(kw, "lost"))
		m->gpus[idx].lost = 1;
	else if (!strcmp(kw, "hang"))
		m->gpus[idx].hang_secs = v < 0 ? 3600 : (int)v;
	else if (v < 0)
		warn(path, ln, "topo without", "level=");
	else
		m->topo[idx][other] = m->topo[other][idx] = (unsigned char)v;
}

/* omit NAME | fail NAME CODE [gpu=I] */
static void parse_fail(struct fake_machine *m, const char *kw, char *rest, const char *path, int ln)
{
	char *sym = next_token(&rest), *tok;
	struct fake_fail f = { .gpu = -1, .code = NVML_ERROR_FUNCTION_NOT_FOUND };
	long long v;
	const char *val;

	if (!sym || strlen(sym) >= sizeof f.symbol)
		return warn(path, ln, "bad symbol name", sym ? sym : "");
	snprintf(f.symbol, sizeof f.symbol, "%s", sym);
	if (!strcmp(kw, "fail")) {
		tok = next_token(&rest);
		if (!tok || parse_num(tok, 1, 999, &v))
			return warn(path, ln, "bad return code", tok ? tok : "");
		f.code = (nvmlReturn_t)v;
	}
	while ((tok = next_token(&rest))) {
		if ((val = kv(tok, "gpu")) && !parse_gpu_index(val, &v)) {
			f.gpu = (int)v;
			continue;
		}
		return warn(path, ln, "bad field", tok);
	}
	if (m->nfails == FAKE_MAX_FAILS)
		return warn(path, ln, "too many omit/fail lines at", sym);
	m->fails[m->nfails++] = f;
}

static void parse_line(struct fake_machine *m, char *line, const char *path, int ln)
{
	char *rest = line, *kw = next_token(&rest), *tok;
	long long v;

	if (!kw)
		return;
	if (!strcmp(kw, "gpu"))
		parse_gpu(m, rest, path, ln);
	else if (!strcmp(kw, "proc"))
		parse_proc(m, rest, path, ln);
	else if (!strcmp(kw, "mig"))
		parse_mig(m, rest, path, ln);
	else if (!strcmp(kw, "lost") || !strcmp(kw, "hang") || !strcmp(kw, "topo"))
		parse_gpu_flag(m, kw, rest, path, ln);
	else if (!strcmp(kw, "omit") || !strcmp(kw, "fail"))
		parse_fail(m, kw, rest, path, ln);
	else if (!strcmp(kw, "driver")) {
		if ((tok = next_token(&rest)))
			snprintf(m->driver, sizeof m->driver, "%s", tok);
	} else if (!strcmp(kw, "env_procs")) {
		tok = next_token(&rest);
		if (!tok || strchr(tok, '='))
			return warn(path, ln, "env_procs needs a variable name", tok ? tok : "");
		snprintf(m->env_var, sizeof m->env_var, "%s", tok);
	} else if (!strcmp(kw, "init_fail")) {
		tok = next_token(&rest);
		if (!tok || parse_num(tok, 1, 999, &v))
			return warn(path, ln, "bad init_fail code", tok ? tok : "");
		m->init_fail = (int)v;
	} else
		warn(path, ln, "unknown keyword", kw);
}

static void machine_load(struct fake_machine *m, const char *path)
{
	char line[4096];
	int ln = 0;
	FILE *f;

	machine_reset(m);
	if (!path || !*path || !(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f))
		parse_line(m, line, path, ++ln);
	fclose(f);
	m->nfile_procs = m->nprocs;
}

static void mig_uuid(int gpu, int k, char *buf, size_t size)
{
	snprintf(buf, size, "MIG-%08x-%04x-4000-8000-%012x", (unsigned)gpu, (unsigned)k, (unsigned)(gpu * 16 + k));
}

/* `env_procs VAR`: like a real driver, report the processes that use the
 * GPUs now — here every live process whose environment holds VAR=MB, on
 * each GPU of its CUDA_VISIBLE_DEVICES. Rescanned on every call. */
static void scan_env_procs(struct fake_machine *m)
{
	size_t want = strlen(m->env_var);
	struct dirent *d;
	DIR *dp;

	m->nprocs = m->nfile_procs;
	if (!want || !(dp = opendir("/proc")))
		return;
	while ((d = readdir(dp))) {
		char path[64], buf[65536], *vis = NULL;
		long long used = -1;
		unsigned int pid = (unsigned int)strtoul(d->d_name, NULL, 10);
		ssize_t n;
		int fd;

		if (!pid)
			continue;
		snprintf(path, sizeof path, "/proc/%u/environ", pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *e = buf; e < buf + n; e += strlen(e) + 1) {
			if (!strncmp(e, m->env_var, want) && e[want] == '=')
				used = strtoll(e + want + 1, NULL, 10);
			else if (!strncmp(e, "CUDA_VISIBLE_DEVICES=", 21))
				vis = e + 21;
		}
		if (used < 0 || !vis)
			continue;
		for (char *p = vis; *p;) {
			char *end;
			long g;

			if (!strncmp(p, "MIG-", 4)) {
				size_t len = strcspn(p, ",");

				for (int i = 0; i < m->ngpus; i++)
					for (int k = 0; k < m->mig[i].count; k++) {
						char uuid[64];

						mig_uuid(i, k, uuid, sizeof uuid);
						if (strlen(uuid) == len && !strncmp(p, uuid, len))
							add_proc(m, i, pid, (unsigned long long)used, k);
					}
				p += len;
				p += *p == ',';
				continue;
			}
			g = strtol(p, &end, 10);
			if (end == p)
				break;
			if (g >= 0 && g < m->ngpus)
				add_proc(m, (int)g, pid, (unsigned long long)used, -1);
			p = *end == ',' ? end + 1 : end;
		}
	}
	closedir(dp);
}

/* Re-read the scenario when the file is not the one last read. Lock held. */
static void refresh(void)
{
	const char *path = getenv("FAKE_NVML_SCENARIO");
	struct stat st;
	int exists;

	if (!path)
		path = "";
	exists = *path && stat(path, &st) == 0;
	if (loaded && exists == loaded_exists && strcmp(path, loaded_path) == 0 &&
	    (!exists || (st.st_ino == loaded_st.st_ino && st.st_dev == loaded_st.st_dev &&
			 st.st_size == loaded_st.st_size &&
			 st.st_mtim.tv_sec == loaded_st.st_mtim.tv_sec &&
			 st.st_mtim.tv_nsec == loaded_st.st_mtim.tv_nsec)))
		return;
	machine_load(&machine, exists ? path : NULL);
	loaded = 1;
	loaded_exists = exists;
	if (exists)
		loaded_st = st;
	snprintf(loaded_path, sizeof loaded_path, "%s", path);
}

/* The library is unloaded (dlclose, exit): free what the scenario holds. */
__attribute__((destructor)) static void unload(void)
{
	free(machine.procs);
	machine.procs = NULL;
	loaded = 0;
}

/* ---- call plumbing ------------------------------------------------------ */

static nvmlReturn_t failure_for(const char *symbol, int gpu)
{
	for (int i = 0; i < machine.nfails; i++) {
		const struct fake_fail *f = &machine.fails[i];

		if (!strcmp(f->symbol, symbol) && (f->gpu < 0 || f->gpu == gpu))
			return f->code;
	}
	return NVML_SUCCESS;
}

/* Start a call that needs no device: lock, refresh, check init and
 * failure injection. On success the lock stays held. */
static nvmlReturn_t enter(const char *symbol)
{
	nvmlReturn_t rc;

	pthread_mutex_lock(&lock);
	refresh();
	rc = init_count > 0 ? failure_for(symbol, -1) : NVML_ERROR_UNINITIALIZED;
	if (rc != NVML_SUCCESS)
		pthread_mutex_unlock(&lock);
	return rc;
}

static void leave(void)
{
	pthread_mutex_unlock(&lock);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sleep while GPU `index` is marked hung, up to its secs, re-reading the
 * scenario every 50 ms so a test can end the hang by rewriting it. Called
 * and returns with the lock held; releases it while sleeping. */
static void wait_while_hung(int index)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (index < machine.ngpus && machine.gpus[index].hang_secs > 0) {
		long limit_ms = machine.gpus[index].hang_secs * 1000L, ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
		if (ms >= limit_ms)
			break;
		pthread_mutex_unlock(&lock);
		sleep_ms(limit_ms - ms < 50 ? limit_ms - ms : 50);
		pthread_mutex_lock(&lock);
		refresh();
	}
}

/* Start a call on GPU `index`: as enter(), then hang and lost. */
static nvmlReturn_t enter_index(const char *symbol, int index)
{
	nvmlReturn_t rc;

	pthread_mutex_lock(&lock);
	refresh();
	if (init_count <= 0) {
		rc = NVML_ERROR_UNINITIALIZED;
		goto fail;
	}
	if (index < 0 || index >= machine.ngpus) {
		rc = NVML_ERROR_INVALID_ARGUMENT;
		goto fail;
	}
	wait_while_hung(index);
	if (init_count <= 0) {
		rc = NVML_ERROR_UNINITIALIZED;
		goto fail;
	}
	if (index >= machine.ngpus) {
		rc = NVML_ERROR_INVALID_ARGUMENT;	/* the GPU vanished meanwhile */
		goto fail;
	}
	if (machine.gpus[index].lost) {
		rc = NVML_ERROR_GPU_IS_LOST;
		goto fail;
	}
	rc = failure_for(symbol, index);
	if (rc != NVML_SUCCESS)
		goto fail;
	return NVML_SUCCESS;
fail:
	pthread_mutex_unlock(&lock);
	return rc;
}

static int handle_index(nvmlDevice_t d)
{
	if (d >= &mig_handles[0][0] && d < &mig_handles[0][0] + FAKE_MAX_GPUS * FAKE_MAX_MIG)
		return (int)(d - &mig_handles[0][0]) / FAKE_MAX_MIG;
	if (d < &handles[0] || d >= &handles[FAKE_MAX_GPUS])
		return -1;
	return (int)(d - handles);
}

/* The MIG device index of a MIG handle, else -1. */
static int handle_mig(nvmlDevice_t d)
{
	if (d >= &mig_handles[0][0] && d < &mig_handles[0][0] + FAKE_MAX_GPUS * FAKE_MAX_MIG)
		return (int)(d - &mig_handles[0][0]) % FAKE_MAX_MIG;
	return -1;
}

static nvmlReturn_t enter_device(const char *symbol, nvmlDevice_t d, struct fake_gpu **g)
{
	int index = handle_index(d);
	nvmlReturn_t rc;

	if (index < 0) {
		/* Still report UNINITIALIZED first, as NVML does. */
		pthread_mutex_lock(&lock);
		rc = init_count > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
		pthread_mutex_unlock(&lock);
		return rc;
	}
	rc = enter_index(symbol, index);
	if (rc == NVML_SUCCESS && handle_mig(d) >= machine.mig[index].count) {
		pthread_mutex_unlock(&lock);
		return NVML_ERROR_INVALID_ARGUMENT;	/* the MIG device was destroyed */
	}
	if (rc == NVML_SUCCESS)
		*g = &machine.gpus[index];
	return rc;
}

/* Copy a string into a caller buffer of `length` bytes, NVML style. */
static nvmlReturn_t copy_out(char *buf, unsigned int length, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

static unsigned long long mb(unsigned long long v)
{
	return v * 1024ULL * 1024ULL;
}

/* A MIG device's memory: its own total, and what its processes use. */
static unsigned long long mig_total_mb(int index)
{
	const struct fake_mig *m = &machine.mig[index];

	return m->total_mb ? m->total_mb : machine.gpus[index].total_mb / (unsigned long long)(m->count ? m->count : 1);
}

static unsigned long long mig_used_mb(int index, int k)
{
	unsigned long long sum = 0;

	scan_env_procs(&machine);
	for (size_t i = 0; i < machine.nprocs; i++)
		if (machine.procs[i].gpu == index && machine.procs[i].mig == k)
			sum += machine.procs[i].used_mb;
	return sum > mig_total_mb(index) ? mig_total_mb(index) : sum;
}

static unsigned long long used_mb(const struct fake_gpu *g)
{
	unsigned long long sum = 0;
	int index = (int)(g - machine.gpus);

	if (g->used_set)
		return g->used_mb;
	scan_env_procs(&machine);
	for (size_t i = 0; i < machine.nprocs; i++)
		if (machine.procs[i].gpu == index)
			sum += machine.procs[i].used_mb;
	return sum > g->total_mb ? g->total_mb : sum;
}

/* ---- the exported API --------------------------------------------------- */

/* Not NVML: lets a test check that it loaded the fake, not a real driver. */
const char fake_nvml_marker[] = "gflow fake NVML";

nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t rc;

	pthread_mutex_lock(&lock);
	refresh();
	rc = machine.init_fail ? (nvmlReturn_t)machine.init_fail : failure_for("nvmlInit_v2", -1);
	if (rc == NVML_SUCCESS)
		init_count++;
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&lock);
	if (init_count > 0)
		init_count--;
	else
		rc = NVML_ERROR_UNINITIALIZED;
	pthread_mutex_unlock(&lock);
	return rc;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
	case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
	case NVML_ERROR_IN_USE: return "In use by another client";
	case NVML_ERROR_MEMORY: return "Insufficient Memory";
	case NVML_ERROR_NO_DATA: return "No data";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	nvmlReturn_t rc = enter("nvmlSystemGetDriverVersion");

	if (rc)
		return rc;
	rc = copy_out(version, length, machine.driver);
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetCount_v2");

	if (rc)
		return rc;
	if (deviceCount)
		*deviceCount = (unsigned int)machine.ngpus;
	else
		rc = NVML_ERROR_INVALID_ARGUMENT;
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t rc;

	if (index >= FAKE_MAX_GPUS) {
		pthread_mutex_lock(&lock);
		rc = init_count > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
		pthread_mutex_unlock(&lock);
		return rc;
	}
	rc = enter_index("nvmlDeviceGetHandleByIndex_v2", (int)index);
	if (rc)
		return rc;
	if (device) {
		handles[index].index = (int)index;
		handles[index].mig = -1;
		*device = &handles[index];
	} else
		rc = NVML_ERROR_INVALID_ARGUMENT;
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetUUID", device, &g);
	char mu[64];

	if (rc)
		return rc;
	if (handle_mig(device) >= 0) {
		mig_uuid(handle_index(device), handle_mig(device), mu, sizeof mu);
		rc = copy_out(uuid, length, mu);
	} else
		rc = copy_out(uuid, length, g->uuid);
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetName", device, &g);
	char mn[FAKE_FIELD + 48];

	if (rc)
		return rc;
	if (handle_mig(device) >= 0) {
		snprintf(mn, sizeof mn, "%s MIG %s", g->name, machine.mig[handle_index(device)].profile);
		rc = copy_out(name, length, mn);
	} else
		rc = copy_out(name, length, g->name);
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetMemoryInfo", device, &g);

	if (rc)
		return rc;
	if (memory && handle_mig(device) >= 0) {
		memory->total = mb(mig_total_mb(handle_index(device)));
		memory->used = mb(mig_used_mb(handle_index(device), handle_mig(device)));
		memory->free = memory->total - memory->used;
	} else if (memory) {
		memory->total = mb(g->total_mb);
		memory->used = mb(used_mb(g));
		memory->free = memory->total - memory->used;
	} else
		rc = NVML_ERROR_INVALID_ARGUMENT;
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetMemoryInfo_v2", device, &g);

	if (rc)
		return rc;
	if (!memory)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (memory->version != nvmlMemory_v2)
		rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	else if (handle_mig(device) >= 0) {
		memory->total = mb(mig_total_mb(handle_index(device)));
		memory->reserved = 0;
		memory->used = mb(mig_used_mb(handle_index(device), handle_mig(device)));
		memory->free = memory->total - memory->used;
	} else {
		memory->total = mb(g->total_mb);
		memory->reserved = 0;
		memory->used = mb(used_mb(g));
		memory->free = memory->total - memory->used;
	}
	leave();
	return rc;
}

/* The process list, NVML style: *infoCount in = capacity, out = how many
 * there are; too small → INSUFFICIENT_SIZE with the needed count. `size` is
 * the element size of the caller's struct version. */
static nvmlReturn_t list_procs(const char *symbol, nvmlDevice_t device, unsigned int *infoCount,
			       void *infos, size_t size)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device(symbol, device, &g);
	unsigned int n = 0, k = 0;
	int index, mig = handle_mig(device);

	if (rc)
		return rc;
	if (!infoCount || (!infos && *infoCount)) {
		leave();
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	index = (int)(g - machine.gpus);
	scan_env_procs(&machine);
	for (size_t i = 0; i < machine.nprocs; i++)
		n += machine.procs[i].gpu == index && (mig < 0 || machine.procs[i].mig == mig);
	if (n > *infoCount) {
		*infoCount = n;
		leave();
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (size_t i = 0; i < machine.nprocs; i++) {
		const struct fake_proc *p = &machine.procs[i];
		unsigned char *slot = (unsigned char *)infos + k * size;

		if (p->gpu != index || (mig >= 0 && p->mig != mig))
			continue;
		if (size == sizeof(nvmlProcessInfo_v1_t)) {
			nvmlProcessInfo_v1_t v1 = { p->pid, mb(p->used_mb) };
			memcpy(slot, &v1, sizeof v1);
		} else {
			unsigned int gi = p->mig >= 0 ? (unsigned int)p->mig : 0xFFFFFFFFu;
			nvmlProcessInfo_v2_t v2 = { p->pid, mb(p->used_mb), gi, p->mig >= 0 ? 0u : 0xFFFFFFFFu };
			memcpy(slot, &v2, sizeof v2);
		}
		k++;
	}
	*infoCount = n;
	leave();
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	return list_procs("nvmlDeviceGetComputeRunningProcesses_v3", device, infoCount, infos,
			  sizeof(nvmlProcessInfo_t));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_v2_t *infos)
{
	return list_procs("nvmlDeviceGetComputeRunningProcesses_v2", device, infoCount, infos,
			  sizeof(nvmlProcessInfo_v2_t));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
						  nvmlProcessInfo_v1_t *infos)
{
	return list_procs("nvmlDeviceGetComputeRunningProcesses", device, infoCount, infos,
			  sizeof(nvmlProcessInfo_v1_t));
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetUtilizationRates", device, &g);

	if (rc)
		return rc;
	if (handle_mig(device) >= 0)
		rc = NVML_ERROR_NOT_SUPPORTED;	/* as on real MIG devices */
	else if (utilization) {
		utilization->gpu = g->util;
		utilization->memory = g->mem_util;
	} else
		rc = NVML_ERROR_INVALID_ARGUMENT;
	leave();
	return rc;
}

/* ---- MIG ------------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetMigMode", device, &g);

	if (rc)
		return rc;
	if (!currentMode || !pendingMode || handle_mig(device) >= 0)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*currentMode = *pendingMode = machine.mig[handle_index(device)].on ? NVML_DEVICE_MIG_ENABLE : 0;
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetMigDeviceHandleByIndex", device, &g);
	int gpu = handle_index(device);

	if (rc)
		return rc;
	if (!migDevice || handle_mig(device) >= 0 || !machine.mig[gpu].on || index >= FAKE_MAX_MIG)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if ((int)index >= machine.mig[gpu].count)
		rc = NVML_ERROR_NOT_FOUND;
	else {
		mig_handles[gpu][index] = (struct nvmlDevice_st){ gpu, (int)index };
		*migDevice = &mig_handles[gpu][index];
	}
	leave();
	return rc;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice, &g);
	int gpu = handle_index(migDevice);

	if (rc)
		return rc;
	if (!device || handle_mig(migDevice) < 0)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else {
		handles[gpu] = (struct nvmlDevice_st){ gpu, -1 };
		*device = &handles[gpu];
	}
	leave();
	return rc;
}

/* Calls that answer one unsigned int about a device: `value` gives it, or
 * an error code (the lock is held while it runs). */
static nvmlReturn_t get_uint(const char *symbol, nvmlDevice_t device, unsigned int *out,
			     nvmlReturn_t (*value)(nvmlDevice_t, const struct fake_gpu *, unsigned int *))
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device(symbol, device, &g);

	if (rc)
		return rc;
	rc = out ? value(device, g, out) : NVML_ERROR_INVALID_ARGUMENT;
	leave();
	return rc;
}

static nvmlReturn_t max_mig_value(nvmlDevice_t d, const struct fake_gpu *g, unsigned int *v)
{
	(void)g;
	if (handle_mig(d) >= 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = machine.mig[handle_index(d)].on ? FAKE_MAX_MIG : 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	return get_uint("nvmlDeviceGetMaxMigDeviceCount", device, count, max_mig_value);
}

static nvmlReturn_t is_mig_value(nvmlDevice_t d, const struct fake_gpu *g, unsigned int *v)
{
	(void)g;
	*v = handle_mig(d) >= 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
	return get_uint("nvmlDeviceIsMigDeviceHandle", device, isMigDevice, is_mig_value);
}

static nvmlReturn_t instance_value(nvmlDevice_t d, const struct fake_gpu *g, unsigned int *v)
{
	(void)g;
	if (handle_mig(d) < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*v = (unsigned int)handle_mig(d);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	return get_uint("nvmlDeviceGetGpuInstanceId", device, id, instance_value);
}

static nvmlReturn_t minor_value(nvmlDevice_t d, const struct fake_gpu *g, unsigned int *v)
{
	(void)d;
	*v = g->minor;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
	return get_uint("nvmlDeviceGetMinorNumber", device, minorNumber, minor_value);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	struct fake_gpu *g;
	nvmlReturn_t rc = enter_device("nvmlDeviceGetPciInfo_v3", device, &g);
	unsigned int domain = 0, bus = 0, dev = 0, fn = 0;

	if (rc)
		return rc;
	if (!pci) {
		leave();
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	memset(pci, 0, sizeof *pci);
	sscanf(g->pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
	snprintf(pci->busId, sizeof pci->busId, "%.*s", (int)sizeof pci->busId - 1, g->pci);
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", domain & 0xffff,
		 bus & 0xff, dev & 0x1f, fn & 0x7);
	pci->domain = domain;
	pci->bus = bus;
	pci->device = dev;
	pci->pciDeviceId = 0x233010deu;	/* device id << 16 | NVIDIA's vendor id */
	pci->pciSubSystemId = 0x16c110deu;
	leave();
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
						 nvmlGpuTopologyLevel_t *pathInfo)
{
	const char *sym = "nvmlDeviceGetTopologyCommonAncestor";
	struct fake_gpu *g1, *g2;
	int a = handle_index(device1), b;
	nvmlReturn_t rc;

	/* Check the second device first (hang/lost), then hold the lock for
	 * the answer through enter_device on the first. */
	rc = enter_device(sym, device2, &g2);
	if (rc)
		return rc;
	b = (int)(g2 - machine.gpus);
	leave();
	rc = enter_device(sym, device1, &g1);
	if (rc)
		return rc;
	if (!pathInfo || b >= machine.ngpus)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*pathInfo = (nvmlGpuTopologyLevel_t)machine.topo[a][b];
	leave();
	return rc;
}
