/* foreign.c — foreign GPU processes (compute processes that belong to no
 * job): naming each one (user, command, age, GPU memory, or "not visible
 * here" when its pid is not in this pid namespace) and the opt-in policy
 * that lets small or listed ones not block their GPU ([gpu]
 * unmanaged_min_memory_mb, unmanaged_ignore_commands). The default policy
 * is the seed's: every foreign process blocks its GPU. */
#include "foreign.h"

#include "job.h"
#include "runfile.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"

/* Seconds since the process started, or -1 when unknown. */
static int64_t proc_age(pid_t pid)
{
	unsigned long long ticks;
	char up[64];
	long hz = sysconf(_SC_CLK_TCK);
	double uptime;

	if (hz <= 0 || proc_start_ticks(pid, &ticks) ||
	    runfile_read_text("/proc", "uptime", up, sizeof up) || sscanf(up, "%lf", &uptime) != 1)
		return -1;
	uptime -= (double)ticks / (double)hz;
	return uptime < 0 ? 0 : (int64_t)uptime;
}

static int proc_uid(pid_t pid, uid_t *uid)
{
	char dir[32], buf[2048], *p;
	unsigned long v;

	snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
	if (runfile_read_text(dir, "status", buf, sizeof buf) || !(p = strstr(buf, "\nUid:")) ||
	    sscanf(p + 5, "%lu", &v) != 1)
		return -1;
	*uid = (uid_t)v;
	return 0;
}

void foreign_describe(pid_t pid, uint64_t used_mb, bool visible, struct foreign_proc *f)
{
	char dir[32];
	size_t n;

	memset(f, 0, sizeof *f);
	f->pid = pid;
	f->used_mb = used_mb;
	f->visible = visible;
	f->age_secs = -1;
	f->blocks = true;
	if (!visible)
		return;
	if (proc_uid(pid, &f->uid) == 0) {
		f->have_uid = true;
		job_user_name(f->uid, f->user, sizeof f->user);
	}
	snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
	if (runfile_read_text(dir, "comm", f->cmd, sizeof f->cmd) == 0) {
		n = strlen(f->cmd);
		if (n && f->cmd[n - 1] == '\n')
			f->cmd[n - 1] = '\0';
	}
	f->age_secs = proc_age(pid);
}

void foreign_apply_policy(const struct gf_config *cfg, struct foreign_proc *f)
{
	f->blocks = true;
	f->exempt = NULL;
	/* Unknown memory (0) is never taken as small: it blocks. */
	if (cfg->gpu_unmanaged_min_memory_mb > 0 && f->used_mb > 0 &&
	    f->used_mb < (uint64_t)cfg->gpu_unmanaged_min_memory_mb) {
		f->blocks = false;
		f->exempt = "below [gpu] unmanaged_min_memory_mb";
		return;
	}
	for (size_t i = 0; f->visible && f->cmd[0] && i < cfg->n_gpu_unmanaged_ignore_commands; i++)
		if (!strcmp(cfg->gpu_unmanaged_ignore_commands[i], f->cmd)) {
			f->blocks = false;
			f->exempt = "in [gpu] unmanaged_ignore_commands";
			return;
		}
}

/* "2d3h", "5h12m", "3m20s", "42s". */
static void age_text(int64_t s, char *buf, size_t size)
{
	if (s >= 86400)
		snprintf(buf, size, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, size, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, size, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, size, "%llds", (long long)s);
}

/* "642M", "1.5G", "80G"; "?" when NVML could not tell. */
static void mem_text(uint64_t mb, char *buf, size_t size)
{
	if (!mb)
		snprintf(buf, size, "?");
	else if (mb < 1024)
		snprintf(buf, size, "%lluM", (unsigned long long)mb);
	else
		snprintf(buf, size, mb % 1024 && mb < 100 * 1024 ? "%.1fG" : "%.0fG", (double)mb / 1024.0);
}

void foreign_label(const struct foreign_proc *f, char *buf, size_t size)
{
	char mem[32], age[32], cmd[80];

	mem_text(f->used_mb, mem, sizeof mem);
	if (!f->visible) {
		snprintf(buf, size, "pid=%d not visible here mem=%s", (int)f->pid, mem);
		return;
	}
	gf_escape(cmd, sizeof cmd, f->cmd[0] ? f->cmd : "?", f->cmd[0] ? strlen(f->cmd) : 1, 0);
	if (f->age_secs >= 0)
		age_text(f->age_secs, age, sizeof age);
	else
		snprintf(age, sizeof age, "?");
	snprintf(buf, size, "pid=%d user=%s cmd=%s age=%s mem=%s", (int)f->pid, f->user[0] ? f->user : "?",
		 cmd, age, mem);
}

json_t *foreign_json(const struct foreign_proc *f)
{
	json_t *o = json_object();
	char label[256];

	foreign_label(f, label, sizeof label);
	json_object_set_new(o, "pid", json_integer(f->pid));
	json_object_set_new(o, "visible", json_boolean(f->visible));
	json_object_set_new(o, "user", f->user[0] ? json_string(f->user) : json_null());
	json_object_set_new(o, "uid", f->have_uid ? json_integer(f->uid) : json_null());
	json_object_set_new(o, "command", f->cmd[0] ? gf_cstr_json(f->cmd) : json_null());
	json_object_set_new(o, "age_secs", f->age_secs >= 0 ? json_integer(f->age_secs) : json_null());
	json_object_set_new(o, "used_mb", f->used_mb ? json_integer((json_int_t)f->used_mb) : json_null());
	json_object_set_new(o, "ignored", json_boolean(f->ignored));
	json_object_set_new(o, "blocks", json_boolean(f->blocks));
	json_object_set_new(o, "exempt", f->ignored ? json_string("ignored with gctl gpu-process ignore")
				       : f->exempt ? json_string(f->exempt) : json_null());
	json_object_set_new(o, "label", json_string(label));
	return o;
}
