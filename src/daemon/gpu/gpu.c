/* gpu.c — NVML at run time: dlopen of libnvidia-ml.so.1 into a table of
 * function pointers, one poll → one plain-data snapshot, and the poller
 * thread (the daemon's only thread) that polls so the event loop never
 * waits on the driver.
 *
 * NVML's types are declared here with nvml.h's names and layouts; no NVML
 * header is needed to build. */
#include "gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- NVML's types (the subset used, as in nvml.h) ------------------------ */

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
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

typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef enum nvmlGpuLevel_enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t layout");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");

/* ---- the library --------------------------------------------------------- */

#define GPU_MAX_DEVS 64		/* a count beyond this is taken as garbage */
#define PROC_FIRST_CAP 32	/* process-list buffer to start with */
#define PROC_TRIES 8		/* INSUFFICIENT_SIZE retries (processes come and go) */

struct nvml_api {
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*get_count)(unsigned int *);
	nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*get_name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*mem_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*mem_v1)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*procs_v3)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
	nvmlReturn_t (*procs_v2)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
	nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
	/* optional */
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*topo)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *);
	nvmlReturn_t (*driver)(char *, unsigned int);
	nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
};

#define NVML_DEVICE_MIG_ENABLE 1

struct gpu_lib {
	void *dl;
	struct nvml_api api;
	/* Scratch for process lists, reused across polls; sized in
	 * nvmlProcessInfo_t elements (the larger layout; v1 fits). */
	nvmlProcessInfo_t *pbuf;
	unsigned int pcap;
};

static const char *nvml_str(const struct gpu_lib *lib, nvmlReturn_t rc)
{
	const char *s = lib->api.error_string ? lib->api.error_string(rc) : NULL;

	return s ? s : "unknown NVML error";
}

/* A function pointer from the library, or NULL. */
static void *sym(struct gpu_lib *lib, const char *name)
{
	return dlsym(lib->dl, name);
}

static int resolve(struct gpu_lib *lib, struct gf_err *e)
{
	struct nvml_api *a = &lib->api;

	a->init = (nvmlReturn_t (*)(void))sym(lib, "nvmlInit_v2");
	a->shutdown = (nvmlReturn_t (*)(void))sym(lib, "nvmlShutdown");
	a->error_string = (const char *(*)(nvmlReturn_t))sym(lib, "nvmlErrorString");
	a->get_count = (nvmlReturn_t (*)(unsigned int *))sym(lib, "nvmlDeviceGetCount_v2");
	a->get_handle = (nvmlReturn_t (*)(unsigned int, nvmlDevice_t *))sym(lib, "nvmlDeviceGetHandleByIndex_v2");
	a->get_uuid = (nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned int))sym(lib, "nvmlDeviceGetUUID");
	a->get_name = (nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned int))sym(lib, "nvmlDeviceGetName");
	a->mem_v2 = (nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t *))sym(lib, "nvmlDeviceGetMemoryInfo_v2");
	a->mem_v1 = (nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t *))sym(lib, "nvmlDeviceGetMemoryInfo");
	a->procs_v3 = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))
		sym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	a->procs_v2 = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *))
		sym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	a->procs_v1 = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *))
		sym(lib, "nvmlDeviceGetComputeRunningProcesses");
	a->util = (nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t *))sym(lib, "nvmlDeviceGetUtilizationRates");
	a->pci = (nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t *))sym(lib, "nvmlDeviceGetPciInfo_v3");
	a->topo = (nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *))
		sym(lib, "nvmlDeviceGetTopologyCommonAncestor");
	a->driver = (nvmlReturn_t (*)(char *, unsigned int))sym(lib, "nvmlSystemGetDriverVersion");
	a->minor = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *))sym(lib, "nvmlDeviceGetMinorNumber");
	a->mig_mode = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *, unsigned int *))sym(lib, "nvmlDeviceGetMigMode");
	a->mig_max = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int *))sym(lib, "nvmlDeviceGetMaxMigDeviceCount");
	a->mig_handle = (nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlDevice_t *))
		sym(lib, "nvmlDeviceGetMigDeviceHandleByIndex");

	if (!a->init)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlInit_v2");
	if (!a->shutdown)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlShutdown");
	if (!a->error_string)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlErrorString");
	if (!a->get_count)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetCount_v2");
	if (!a->get_handle)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetHandleByIndex_v2");
	if (!a->get_uuid)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetUUID");
	if (!a->get_name)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetName");
	if (!a->mem_v2 && !a->mem_v1)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetMemoryInfo");
	if (!a->procs_v3 && !a->procs_v2 && !a->procs_v1)
		return gf_err_set(e, "NVML unusable: missing symbol nvmlDeviceGetComputeRunningProcesses "
			       "(no _v3, _v2 or v1)");
	return 0;
}

struct gpu_lib *gpu_lib_open_named(const char *soname, struct gf_err *e)
{
	struct gpu_lib *lib = calloc(1, sizeof *lib);
	nvmlReturn_t rc;
	const char *why;

	if (!lib) {
		gf_err_set(e, "out of memory");
		return NULL;
	}
	dlerror();
	lib->dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!lib->dl) {
		why = dlerror();
		gf_err_set(e, "NVML library %s not found: %s", soname, why ? why : "unknown reason");
		free(lib);
		return NULL;
	}
	if (resolve(lib, e))
		goto fail;
	rc = lib->api.init();
	if (rc != NVML_SUCCESS) {
		gf_err_set(e, "nvmlInit failed: %s", nvml_str(lib, rc));
		goto fail;
	}
	return lib;
fail:
	dlclose(lib->dl);
	free(lib);
	return NULL;
}

struct gpu_lib *gpu_lib_open(struct gf_err *e)
{
	return gpu_lib_open_named(GPU_NVML_SONAME, e);
}

void gpu_lib_close(struct gpu_lib *lib)
{
	if (!lib)
		return;
	lib->api.shutdown();
	dlclose(lib->dl);
	free(lib->pbuf);
	free(lib);
}

/* ---- one poll ------------------------------------------------------------ */

static uint64_t to_mb(unsigned long long bytes)
{
	return bytes / (1024ULL * 1024ULL);
}

/* "this feature is not there", as opposed to "this GPU is in trouble". */
static int absent(nvmlReturn_t rc)
{
	return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED;
}

static int mark_down(const struct gpu_lib *lib, struct gpu_dev *d, const char *call, nvmlReturn_t rc)
{
	d->down = 1;
	snprintf(d->down_reason, sizeof d->down_reason, "%s: %s", call, nvml_str(lib, rc));
	return -1;
}

static int down_oom(struct gpu_dev *d)
{
	d->down = 1;
	snprintf(d->down_reason, sizeof d->down_reason, "out of memory listing processes");
	return -1;
}

/* Memory, preferring _v2 (which leaves reserved memory out of "used") and
 * falling back to v1 for good when _v2 is stubbed or refuses the version. */
static int poll_memory(struct gpu_lib *lib, nvmlDevice_t h, struct gpu_dev *d)
{
	nvmlReturn_t rc;

	if (lib->api.mem_v2) {
		nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };

		rc = lib->api.mem_v2(h, &m);
		if (rc == NVML_SUCCESS) {
			d->total_mb = to_mb(m.total);
			d->used_mb = to_mb(m.used);
			return 0;
		}
		if (!lib->api.mem_v1 || !(absent(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH))
			return mark_down(lib, d, "nvmlDeviceGetMemoryInfo_v2", rc);
		lib->api.mem_v2 = NULL;
	}
	nvmlMemory_t m = { 0 };

	rc = lib->api.mem_v1(h, &m);
	if (rc != NVML_SUCCESS)
		return mark_down(lib, d, "nvmlDeviceGetMemoryInfo", rc);
	d->total_mb = to_mb(m.total);
	d->used_mb = to_mb(m.used);
	return 0;
}

/* Call the best process-list version still available into lib->pbuf.
 * A version the driver stubs out (FUNCTION_NOT_FOUND) is dropped for
 * good and the next older one tried. *v1 says which layout came back. */
static nvmlReturn_t call_procs(struct gpu_lib *lib, nvmlDevice_t h, unsigned int *count, int *v1)
{
	nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
	unsigned int cap = *count;

	if (lib->api.procs_v3) {
		*v1 = 0;
		rc = lib->api.procs_v3(h, count, lib->pbuf);
		if (rc != NVML_ERROR_FUNCTION_NOT_FOUND)
			return rc;
		lib->api.procs_v3 = NULL;
		*count = cap;
	}
	if (lib->api.procs_v2) {
		*v1 = 0;
		rc = lib->api.procs_v2(h, count, lib->pbuf);
		if (rc != NVML_ERROR_FUNCTION_NOT_FOUND)
			return rc;
		lib->api.procs_v2 = NULL;
		*count = cap;
	}
	if (lib->api.procs_v1) {
		*v1 = 1;
		rc = lib->api.procs_v1(h, count, (nvmlProcessInfo_v1_t *)(void *)lib->pbuf);
		if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
			lib->api.procs_v1 = NULL;
	}
	return rc;
}

static int grow_pbuf(struct gpu_lib *lib, unsigned int need)
{
	unsigned int cap = need + need / 4 + 8;
	nvmlProcessInfo_t *nb;

	if (need > (1u << 20))
		return -1;
	nb = realloc(lib->pbuf, (size_t)cap * sizeof *nb);
	if (!nb)
		return -1;
	lib->pbuf = nb;
	lib->pcap = cap;
	return 0;
}

static uint64_t proc_mb(unsigned long long used)
{
	return used == NVML_VALUE_NOT_AVAILABLE_ULL ? 0 : to_mb(used);
}

/* Compute processes: grow the buffer while NVML answers INSUFFICIENT_SIZE
 * (it says how many there are; more may appear before the next call). */
static int poll_procs(struct gpu_lib *lib, nvmlDevice_t h, struct gpu_dev *d)
{
	unsigned int count = 0;
	nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
	int v1 = 0;

	if (!lib->pbuf) {
		lib->pbuf = calloc(PROC_FIRST_CAP, sizeof *lib->pbuf);
		if (!lib->pbuf)
			return down_oom(d);
		lib->pcap = PROC_FIRST_CAP;
	}
	for (int i = 0; i < PROC_TRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE; i++) {
		count = lib->pcap;
		rc = call_procs(lib, h, &count, &v1);
		if (rc == NVML_ERROR_INSUFFICIENT_SIZE && grow_pbuf(lib, count > lib->pcap ? count : lib->pcap * 2))
			break;
	}
	if (rc == NVML_ERROR_NOT_SUPPORTED)
		return 0;	/* this GPU cannot list processes: none known */
	if (rc != NVML_SUCCESS)
		return mark_down(lib, d, "nvmlDeviceGetComputeRunningProcesses", rc);
	if (count > lib->pcap)
		count = lib->pcap;
	if (!count)
		return 0;
	d->procs = calloc(count, sizeof *d->procs);
	if (!d->procs)
		return down_oom(d);
	for (unsigned int i = 0; i < count; i++) {
		if (v1) {
			const nvmlProcessInfo_v1_t *p = (const nvmlProcessInfo_v1_t *)(void *)lib->pbuf + i;

			d->procs[i] = (struct gpu_proc){ p->pid, proc_mb(p->usedGpuMemory) };
		} else
			d->procs[i] = (struct gpu_proc){ lib->pbuf[i].pid, proc_mb(lib->pbuf[i].usedGpuMemory) };
	}
	d->nprocs = count;
	return 0;
}

/* The optional fields: a GPU that is lost goes down, a feature the driver
 * lacks (FUNCTION_NOT_FOUND) is switched off, anything else leaves the
 * field unknown. */
static void poll_optional(struct gpu_lib *lib, nvmlDevice_t h, struct gpu_dev *d)
{
	nvmlReturn_t rc;

	if (lib->api.util) {
		nvmlUtilization_t u = { 0 };

		rc = lib->api.util(h, &u);
		if (rc == NVML_SUCCESS)
			d->util_pct = u.gpu > 100 ? 100 : (int)u.gpu;
		else if (rc == NVML_ERROR_GPU_IS_LOST) {
			mark_down(lib, d, "nvmlDeviceGetUtilizationRates", rc);
			return;
		} else if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
			lib->api.util = NULL;
	}
	if (lib->api.pci) {
		nvmlPciInfo_t pci;

		memset(&pci, 0, sizeof pci);
		rc = lib->api.pci(h, &pci);
		if (rc == NVML_SUCCESS) {
			pci.busId[sizeof pci.busId - 1] = '\0';
			snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", pci.busId);
		} else if (rc == NVML_ERROR_GPU_IS_LOST)
			mark_down(lib, d, "nvmlDeviceGetPciInfo_v3", rc);
		else if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
			lib->api.pci = NULL;
	}
	if (lib->api.minor) {
		unsigned int m = 0;

		rc = lib->api.minor(h, &m);
		if (rc == NVML_SUCCESS && m < 256)
			d->minor = (int)m;
		else if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
			lib->api.minor = NULL;
	}
}

/* Fill d for GPU i; the handle goes to *h (NULL when the GPU is down). */
static void poll_dev(struct gpu_lib *lib, unsigned int i, struct gpu_dev *d, nvmlDevice_t *h)
{
	nvmlReturn_t rc;

	d->index = (int)i;
	d->parent = (int)i;
	d->mig_index = -1;
	d->util_pct = -1;
	d->minor = -1;
	*h = NULL;
	rc = lib->api.get_handle(i, h);
	if (rc != NVML_SUCCESS) {
		*h = NULL;
		mark_down(lib, d, "nvmlDeviceGetHandleByIndex_v2", rc);
		return;
	}
	rc = lib->api.get_uuid(*h, d->uuid, sizeof d->uuid);
	if (rc != NVML_SUCCESS) {
		d->uuid[0] = '\0';
		mark_down(lib, d, "nvmlDeviceGetUUID", rc);
		return;
	}
	d->uuid[sizeof d->uuid - 1] = '\0';
	rc = lib->api.get_name(*h, d->name, sizeof d->name);
	if (rc != NVML_SUCCESS) {
		d->name[0] = '\0';
		mark_down(lib, d, "nvmlDeviceGetName", rc);
		return;
	}
	d->name[sizeof d->name - 1] = '\0';
	if (poll_memory(lib, *h, d) || poll_procs(lib, *h, d))
		return;
	poll_optional(lib, *h, d);
}

/* The common-ancestor matrix, or NULL when the driver cannot tell. */
static int *poll_topo(struct gpu_lib *lib, const struct gpu_dev *devs, nvmlDevice_t *h, size_t n)
{
	int *t;

	if (!lib->api.topo || !n)
		return NULL;
	t = calloc(n * n, sizeof *t);
	if (!t)
		return NULL;
	for (size_t a = 0; a < n; a++) {
		t[a * n + a] = NVML_TOPOLOGY_INTERNAL;
		for (size_t b = a + 1; b < n; b++) {
			nvmlGpuTopologyLevel_t lvl = NVML_TOPOLOGY_SYSTEM;
			nvmlReturn_t rc = NVML_SUCCESS;

			if (!devs[a].down && !devs[b].down && h[a] && h[b])
				rc = lib->api.topo(h[a], h[b], &lvl);
			if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
				lib->api.topo = NULL;
			if (absent(rc)) {
				free(t);
				return NULL;
			}
			if (rc != NVML_SUCCESS || (int)lvl < 0 || (int)lvl > NVML_TOPOLOGY_SYSTEM)
				lvl = NVML_TOPOLOGY_SYSTEM;
			t[a * n + b] = t[b * n + a] = (int)lvl;
		}
	}
	return t;
}

static void poll_driver(struct gpu_lib *lib, struct gpu_snapshot *out)
{
	nvmlReturn_t rc;

	if (!lib->api.driver)
		return;
	rc = lib->api.driver(out->driver_version, sizeof out->driver_version);
	if (rc != NVML_SUCCESS)
		out->driver_version[0] = '\0';
	if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
		lib->api.driver = NULL;
	out->driver_version[sizeof out->driver_version - 1] = '\0';
}

static int poll_failed(struct gpu_snapshot *out, const char *fmt, const char *why)
{
	gpu_snapshot_free(out);
	snprintf(out->status, sizeof out->status, fmt, why);
	return -1;
}

/* Is GPU h in MIG mode? (No when the driver has no MIG calls.) */
static bool mig_on(struct gpu_lib *lib, nvmlDevice_t h)
{
	unsigned int cur = 0, pending = 0;
	nvmlReturn_t rc;

	if (!lib->api.mig_mode || !lib->api.mig_max || !lib->api.mig_handle)
		return false;
	rc = lib->api.mig_mode(h, &cur, &pending);
	if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
		lib->api.mig_mode = NULL;
	return rc == NVML_SUCCESS && cur == NVML_DEVICE_MIG_ENABLE;
}

/* The MIG devices of GPU p (handle h) as units, appended to out[*n..cap). */
static void poll_mig(struct gpu_lib *lib, nvmlDevice_t h, const struct gpu_dev *p, struct gpu_dev *out,
		     size_t *n, size_t cap)
{
	unsigned int max = 0;

	if (lib->api.mig_max(h, &max) != NVML_SUCCESS)
		return;
	for (unsigned int k = 0; k < max && *n < cap; k++) {
		struct gpu_dev *u = &out[*n];
		nvmlDevice_t mh = NULL;
		nvmlReturn_t rc = lib->api.mig_handle(h, k, &mh);

		if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && !mh))
			continue;	/* no MIG device at this index */
		memset(u, 0, sizeof *u);
		u->parent = p->index;
		u->mig_index = (int)k;
		u->util_pct = -1;	/* NVML has no utilisation for MIG devices */
		u->minor = p->minor;
		snprintf(u->pci_bus_id, sizeof u->pci_bus_id, "%s", p->pci_bus_id);
		(*n)++;
		if (rc != NVML_SUCCESS) {
			mark_down(lib, u, "nvmlDeviceGetMigDeviceHandleByIndex", rc);
			continue;
		}
		if ((rc = lib->api.get_uuid(mh, u->uuid, sizeof u->uuid)) != NVML_SUCCESS) {
			u->uuid[0] = '\0';
			mark_down(lib, u, "nvmlDeviceGetUUID", rc);
			continue;
		}
		u->uuid[sizeof u->uuid - 1] = '\0';
		if (lib->api.get_name(mh, u->name, sizeof u->name) != NVML_SUCCESS)
			snprintf(u->name, sizeof u->name, "%.90s MIG", p->name);
		u->name[sizeof u->name - 1] = '\0';
		if (poll_memory(lib, mh, u) == 0)
			poll_procs(lib, mh, u);
	}
}

/* The units of allocation: each GPU, or each MIG device of a GPU in MIG
 * mode (a GPU in MIG mode without MIG devices is a unit that is down). */
static size_t make_units(struct gpu_lib *lib, struct gpu_dev *phys, nvmlDevice_t *h, size_t n,
			 struct gpu_dev *units)
{
	size_t nu = 0;

	for (size_t i = 0; i < n && nu < GPU_MAX_DEVS; i++) {
		size_t before = nu;

		if (!phys[i].down && h[i] && mig_on(lib, h[i])) {
			poll_mig(lib, h[i], &phys[i], units, &nu, GPU_MAX_DEVS);
			if (nu > before) {
				free(phys[i].procs);
				phys[i].procs = NULL;
				phys[i].nprocs = 0;
				continue;
			}
			phys[i].down = 1;
			snprintf(phys[i].down_reason, sizeof phys[i].down_reason,
				 "MIG mode is on and the GPU has no MIG devices");
		}
		units[nu++] = phys[i];
		phys[i].procs = NULL;
		phys[i].nprocs = 0;
	}
	for (size_t u = 0; u < nu; u++)
		units[u].index = (int)u;
	return nu;
}

/* The topology of units from that of their GPUs: two MIG devices of one
 * GPU are as close as can be. */
static int *unit_topo(const int *ptopo, size_t n, const struct gpu_dev *units, size_t nu)
{
	int *t;

	if (!ptopo || !nu || !(t = calloc(nu * nu, sizeof *t)))
		return NULL;
	for (size_t a = 0; a < nu; a++)
		for (size_t b = 0; b < nu; b++) {
			size_t pa = (size_t)units[a].parent, pb = (size_t)units[b].parent;

			t[a * nu + b] = pa == pb ? NVML_TOPOLOGY_INTERNAL
				      : pa < n && pb < n ? ptopo[pa * n + pb] : NVML_TOPOLOGY_SYSTEM;
		}
	return t;
}

int gpu_lib_poll(struct gpu_lib *lib, struct gpu_snapshot *out)
{
	unsigned int n = 0;
	nvmlDevice_t *handles;
	struct gpu_dev *phys;
	int *ptopo;
	nvmlReturn_t rc;

	memset(out, 0, sizeof *out);
	poll_driver(lib, out);
	rc = lib->api.get_count(&n);
	if (rc != NVML_SUCCESS)
		return poll_failed(out, "nvmlDeviceGetCount failed: %s", nvml_str(lib, rc));
	if (n > GPU_MAX_DEVS)
		n = GPU_MAX_DEVS;
	out->nvml_ok = 1;
	if (!n)
		return 0;
	phys = calloc(n, sizeof *phys);
	out->devs = calloc(GPU_MAX_DEVS, sizeof *out->devs);
	handles = calloc(n, sizeof *handles);
	if (!phys || !out->devs || !handles) {
		free(handles);
		free(phys);
		return poll_failed(out, "%s", "out of memory taking a GPU snapshot");
	}
	for (unsigned int i = 0; i < n; i++)
		poll_dev(lib, i, &phys[i], &handles[i]);
	ptopo = poll_topo(lib, phys, handles, n);
	out->ndev = make_units(lib, phys, handles, n, out->devs);
	out->topo = unit_topo(ptopo, n, out->devs, out->ndev);
	for (unsigned int i = 0; i < n; i++)
		free(phys[i].procs);
	free(ptopo);
	free(phys);
	free(handles);
	return 0;
}

/* ---- snapshots ----------------------------------------------------------- */

void gpu_snapshot_free(struct gpu_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ndev; i++)
		free(s->devs[i].procs);
	free(s->devs);
	free(s->topo);
	memset(s, 0, sizeof *s);
}

int gpu_snapshot_copy(struct gpu_snapshot *dst, const struct gpu_snapshot *src)
{
	*dst = *src;
	dst->devs = NULL;
	dst->topo = NULL;
	dst->ndev = 0;
	if (src->ndev) {
		dst->devs = calloc(src->ndev, sizeof *dst->devs);
		if (!dst->devs)
			goto fail;
		dst->ndev = src->ndev;
		for (size_t i = 0; i < src->ndev; i++) {
			struct gpu_dev *d = &dst->devs[i];

			*d = src->devs[i];
			d->procs = NULL;
			d->nprocs = 0;
			if (!src->devs[i].nprocs)
				continue;
			d->procs = malloc(src->devs[i].nprocs * sizeof *d->procs);
			if (!d->procs)
				goto fail;
			memcpy(d->procs, src->devs[i].procs, src->devs[i].nprocs * sizeof *d->procs);
			d->nprocs = src->devs[i].nprocs;
		}
	}
	if (src->topo) {
		dst->topo = malloc(src->ndev * src->ndev * sizeof *dst->topo);
		if (!dst->topo)
			goto fail;
		memcpy(dst->topo, src->topo, src->ndev * src->ndev * sizeof *dst->topo);
	}
	return 0;
fail:
	gpu_snapshot_free(dst);
	return -1;
}

/* ---- the poller thread --------------------------------------------------- */

struct gpu_poller {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* CLOCK_MONOTONIC */
	/* under mu: */
	int interval;
	int notify_fd;
	int kicked, stopping;
	int finished;		/* the thread is past its last NVML call */
	int orphaned;		/* stop gave up waiting: the thread frees p */
	int have;
	struct gpu_snapshot latest;
	/* thread only: */
	uint64_t seq;
};

static void poller_free(struct gpu_poller *p)
{
	gpu_snapshot_free(&p->latest);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Open the library if needed and poll it; on failure the snapshot says
 * why and the library is closed so the next round reopens it. */
static void take_snapshot(struct gpu_poller *p, struct gpu_lib **lib, struct gpu_snapshot *snap)
{
	struct gf_err e = { { 0 } };

	memset(snap, 0, sizeof *snap);
	if (!*lib && !(*lib = gpu_lib_open(&e)))
		snprintf(snap->status, sizeof snap->status, "%.*s", (int)sizeof snap->status - 1, e.msg);
	else if (gpu_lib_poll(*lib, snap)) {
		gpu_lib_close(*lib);
		*lib = NULL;
	}
	snap->seq = ++p->seq;
}

/* Store the new snapshot and tell the loop. mu held. */
static void publish(struct gpu_poller *p, struct gpu_snapshot *snap)
{
	char byte = 1;
	ssize_t w;

	gpu_snapshot_free(&p->latest);
	p->latest = *snap;
	p->have = 1;
	if (p->notify_fd >= 0) {
		do
			w = write(p->notify_fd, &byte, 1);
		while (w < 0 && errno == EINTR);
		/* EAGAIN: the loop has unread bytes already, which is enough. */
	}
}

/* Wait for the interval, a kick, or stop. mu held. The deadline is
 * recomputed on each wake-up so a new interval applies at once. */
static void wait_next(struct gpu_poller *p)
{
	struct timespec start, deadline, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!p->kicked && !p->stopping) {
		deadline = start;
		deadline.tv_sec += p->interval;
		if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) != ETIMEDOUT)
			continue;
		/* Timed out against the interval of the time; still due now? */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= p->interval)
			break;
	}
	p->kicked = 0;
}

static void *poller_main(void *arg)
{
	struct gpu_poller *p = arg;
	struct gpu_lib *lib = NULL;
	struct gpu_snapshot snap;
	int orphaned;

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		pthread_mutex_unlock(&p->mu);
		take_snapshot(p, &lib, &snap);	/* may block in the driver */
		pthread_mutex_lock(&p->mu);
		if (p->stopping) {
			gpu_snapshot_free(&snap);
			break;
		}
		publish(p, &snap);
		wait_next(p);
	}
	pthread_mutex_unlock(&p->mu);

	gpu_lib_close(lib);	/* nvmlShutdown may block too: before "finished" */

	pthread_mutex_lock(&p->mu);
	p->finished = 1;
	orphaned = p->orphaned;
	pthread_mutex_unlock(&p->mu);
	if (orphaned)
		poller_free(p);
	return NULL;
}

static int poller_init_sync(struct gpu_poller *p, struct gf_err *e)
{
	pthread_condattr_t ca;
	int rc;

	if ((rc = pthread_mutex_init(&p->mu, NULL)))
		return gf_err_set(e, "GPU poller mutex: %s", strerror(rc));
	if ((rc = pthread_condattr_init(&ca))) {
		pthread_mutex_destroy(&p->mu);
		return gf_err_set(e, "GPU poller condition variable: %s", strerror(rc));
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc) {
		pthread_mutex_destroy(&p->mu);
		return gf_err_set(e, "GPU poller condition variable: %s", strerror(rc));
	}
	return 0;
}

struct gpu_poller *gpu_poller_start(int interval_secs, int notify_fd, struct gf_err *e)
{
	struct gpu_poller *p;
	sigset_t all, old;
	int rc;

	if (interval_secs < 1) {
		gf_err_set(e, "invalid GPU poll interval %d: expected at least 1 second", interval_secs);
		return NULL;
	}
	p = calloc(1, sizeof *p);
	if (!p) {
		gf_err_set(e, "out of memory");
		return NULL;
	}
	p->interval = interval_secs;
	p->notify_fd = notify_fd;
	if (poller_init_sync(p, e)) {
		free(p);
		return NULL;
	}
	/* The thread takes no signals: they belong to the event loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&p->thread, NULL, poller_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		gf_err_set(e, "cannot start the GPU poller thread: %s", strerror(rc));
		poller_free(p);
		return NULL;
	}
	return p;
}

int gpu_poller_latest(struct gpu_poller *p, struct gpu_snapshot *copy)
{
	int rc = -1;

	memset(copy, 0, sizeof *copy);
	pthread_mutex_lock(&p->mu);
	if (p->have)
		rc = gpu_snapshot_copy(copy, &p->latest);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void gpu_poller_kick(struct gpu_poller *p)
{
	pthread_mutex_lock(&p->mu);
	p->kicked = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void gpu_poller_set_interval(struct gpu_poller *p, int interval_secs)
{
	pthread_mutex_lock(&p->mu);
	p->interval = interval_secs < 1 ? 1 : interval_secs;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void gpu_poller_stop(struct gpu_poller *p)
{
	pthread_t th;
	struct timespec deadline;

	if (!p)
		return;
	th = p->thread;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);

	clock_gettime(CLOCK_REALTIME, &deadline);	/* pthread_timedjoin_np's clock */
	deadline.tv_sec += GPU_POLLER_STOP_WAIT_MS / 1000;
	deadline.tv_nsec += (GPU_POLLER_STOP_WAIT_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(th, NULL, &deadline) == 0) {
		poller_free(p);
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (p->finished) {
		/* It got past NVML just now; what is left cannot block. */
		pthread_mutex_unlock(&p->mu);
		pthread_join(th, NULL);
		poller_free(p);
		return;
	}
	p->orphaned = 1;	/* from here on p belongs to the thread */
	pthread_mutex_unlock(&p->mu);
	pthread_detach(th);
}
