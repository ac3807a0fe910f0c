/* devices.c — [gpu] constrain_devices: a job may open only the
 * /dev/nvidiaN of its own GPUs (plus nvidiactl, nvidia-modeset and
 * nvidia-uvm), like Slurm's ConstrainDevices. Enforced by the cgroup v1
 * devices controller (the daemon as root; track.c makes the groups and the
 * runner joins them before the job exists): each job's group inherits the
 * parent's allow-all and gets a deny entry for every NVIDIA GPU minor that
 * is not one of its GPUs'. The rule is by major:minor, so it holds
 * whatever path the node is opened by. A GPU's minor comes from
 * nvmlDeviceGetMinorNumber (the GPU's index when NVML cannot tell).
 * Also the CUDA_VISIBLE_DEVICES a job is given (devices_cuda_visible). */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* /dev/nvidia0..253 are GPUs; 254 is nvidia-modeset, 255 nvidiactl. */
#define NVIDIA_GPU_MINORS 254

static int minor_of(struct server *s, int gpu)
{
	if (s->have_snap && s->snap.nvml_ok && (size_t)gpu < s->snap.ndev && s->snap.devs[gpu].minor >= 0)
		return s->snap.devs[gpu].minor;
	return gpu;
}

int devices_restrict(struct server *s, const struct job *j, const char *dir, struct gf_err *e)
{
	bool own[NVIDIA_GPU_MINORS] = { false };
	char path[GF_PATH_MAX + 32], rule[32];
	int fd, len;

	for (int g = 0; g < 64; g++)
		if (j->gpu_mask & (1ULL << g)) {
			int m = minor_of(s, g);

			if (m >= 0 && m < NVIDIA_GPU_MINORS)
				own[m] = true;
		}
	if (gf_pathf(path, sizeof path, "%s/devices.deny", dir))
		return gf_err_set(e, "devices group path too long: %s", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return gf_err_set(e, "cannot open %s: %s", path, strerror(errno));
	/* One rule per write: the kernel parses one entry per write(2). */
	for (int m = 0; m < NVIDIA_GPU_MINORS; m++) {
		if (own[m])
			continue;
		len = snprintf(rule, sizeof rule, "c %d:%d rwm", NVIDIA_MAJOR, m);
		if (write(fd, rule, (size_t)len) != len) {
			int err = errno;

			close(fd);
			return gf_err_set(e, "cannot deny %s in %s: %s", rule, path, strerror(err));
		}
	}
	close(fd);
	return 0;
}

void devices_cuda_visible(struct server *s, uint64_t mask, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int g = 0; g < 64 && len < size; g++) {
		const struct gpu_dev *d = s->have_snap && (size_t)g < s->snap.ndev ? &s->snap.devs[g] : NULL;

		if (!(mask & (1ULL << g)))
			continue;
		if (d && d->mig_index >= 0)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", d->uuid);
		else
			len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? "," : "", d ? d->parent : g);
	}
}
