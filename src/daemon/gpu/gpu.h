/* gpu.h — the gpu layer (src/daemon/gpu/): the machine's GPUs, knowing no
 * jobs. gpu.c (this: NVML) and foreign.c (foreign.h: processes that are no
 * job of ours). May call: core (a uid's name), common and libc only.
 *
 * NVML, loaded at run time: snapshots of the GPUs, and the poller
 * thread that takes them so a hung driver call never blocks the event loop.
 *
 * Two layers:
 *   gpu_lib_*     synchronous: dlopen libnvidia-ml.so.1, nvmlInit, poll.
 *   gpu_poller_*  one pthread (the only thread in the daemon) that owns a
 *                 gpu_lib, polls it every interval and hands the newest
 *                 snapshot to the loop (copy under a mutex + one byte on a
 *                 pipe the loop watches). */
#ifndef GF_GPU_H
#define GF_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define GPU_NVML_SONAME "libnvidia-ml.so.1"

/* NVML topology levels (nvmlGpuTopologyLevel_t): lower is closer. */
#define GPU_TOPO_INTERNAL 0
#define GPU_TOPO_SINGLE 10
#define GPU_TOPO_MULTIPLE 20
#define GPU_TOPO_HOSTBRIDGE 30
#define GPU_TOPO_NODE 40
#define GPU_TOPO_SYSTEM 50

struct gpu_proc {
	uint32_t pid;
	uint64_t used_mb;	/* 0 when NVML cannot tell */
};

/* One unit of allocation: a GPU, or a MIG device of a GPU in MIG mode.
 * Without MIG the units are the GPUs and index is the NVML index. */
struct gpu_dev {
	int index;		/* unit number; devs[i].index == i */
	int parent;		/* NVML index of the GPU (== index without MIG) */
	int mig_index;		/* MIG device index on the parent, -1: a whole GPU */
	char uuid[96];		/* GPU-… or, for a MIG device, MIG-… */
	char name[96];
	char pci_bus_id[32];	/* "" when unknown */
	uint64_t total_mb, used_mb;
	int util_pct;		/* -1 unknown */
	int minor;		/* of its /dev/nvidiaN (nvmlDeviceGetMinorNumber), -1 unknown */
	int down;		/* NVML calls on this GPU fail (e.g. GPU is lost) */
	char down_reason[128];	/* e.g. "nvmlDeviceGetMemoryInfo: GPU is lost" */
	struct gpu_proc *procs;	/* compute processes, owned */
	size_t nprocs;
};

struct gpu_snapshot {
	int nvml_ok;		/* library loaded and initialised */
	char status[256];	/* when !nvml_ok: why, in plain words */
	char driver_version[80];	/* "" when unknown */
	size_t ndev;
	struct gpu_dev *devs;	/* owned */
	int *topo;		/* ndev*ndev levels, [a*ndev+b]; NULL when unsupported.
				 * A pair NVML cannot answer reads GPU_TOPO_SYSTEM. */
	uint64_t seq;		/* increments per poll */
};

/* Free what s owns and zero it. Safe on a zeroed snapshot. */
void gpu_snapshot_free(struct gpu_snapshot *s);

/* Deep copy: dst is overwritten (not freed first). Returns 0, or -1 when
 * out of memory, leaving dst zeroed. */
int gpu_snapshot_copy(struct gpu_snapshot *dst, const struct gpu_snapshot *src);

/* ---- synchronous probe --------------------------------------------------- */

struct gpu_lib;

/* dlopen GPU_NVML_SONAME (normal search path), resolve the entry points,
 * nvmlInit_v2. NULL on failure with e saying why:
 *   "NVML library libnvidia-ml.so.1 not found: <dlerror>"
 *   "NVML unusable: missing symbol <name>"
 *   "nvmlInit failed: <nvmlErrorString>" */
struct gpu_lib *gpu_lib_open(struct gf_err *e);

/* The same, for another library name (tests). */
struct gpu_lib *gpu_lib_open_named(const char *soname, struct gf_err *e);

/* Take one snapshot into *out (overwritten, not freed first; always valid
 * and freeable afterwards). Returns 0, or -1 when NVML as a whole failed
 * (e.g. the device count): then out->nvml_ok is 0 and out->status says why,
 * and the caller should close and reopen the library. Errors on one GPU
 * only mark that GPU down. A call may block as long as the driver does. */
int gpu_lib_poll(struct gpu_lib *lib, struct gpu_snapshot *out);

/* nvmlShutdown, dlclose, free. NULL is fine. */
void gpu_lib_close(struct gpu_lib *lib);

/* ---- poller thread --------------------------------------------------------- */

struct gpu_poller;

/* Start the thread: it opens the library (retrying every interval while
 * that fails, publishing a snapshot with nvml_ok = 0 and the reason),
 * polls every interval_secs (>= 1), and after each poll stores the
 * snapshot and writes one byte to notify_fd (non-blocking; EAGAIN ignored;
 * -1 for none). NULL with e set when the thread cannot be started. */
struct gpu_poller *gpu_poller_start(int interval_secs, int notify_fd, struct gf_err *e);

/* Deep-copy the newest snapshot into *copy (overwritten). Never waits for
 * NVML. Returns 0, or -1 when there is none yet (or out of memory). */
int gpu_poller_latest(struct gpu_poller *p, struct gpu_snapshot *copy);

/* Ask for a poll now (if one is running, another follows it). */
void gpu_poller_kick(struct gpu_poller *p);

/* Change the interval (>= 1; smaller values become 1); takes effect for
 * the wait in progress. */
void gpu_poller_set_interval(struct gpu_poller *p, int interval_secs);

/* Stop the thread. Waits up to GPU_POLLER_STOP_WAIT_MS for it; if it is
 * stuck in an NVML call, detaches it instead: it frees itself (and closes
 * the library) when the call returns, and never touches notify_fd again.
 * After this returns p is gone and notify_fd may be closed. */
#define GPU_POLLER_STOP_WAIT_MS 2000
void gpu_poller_stop(struct gpu_poller *p);

#endif
