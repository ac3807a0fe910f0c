/* track.c — which processes belong to a job, known by the daemon itself
 * and not only by the job's runner, so that the daemon can be the backstop
 * of every runner: end what is left of a job whose runner died or stopped,
 * and free its GPUs only when none of its processes is left.
 *
 * Three ways, the best the machine allows (GFLOW_TRACKING forces one):
 *   cgroup2  a cgroup v2 group per start, under the daemon's own group:
 *            membership from cgroup.procs, emptiness from cgroup.events,
 *            an atomic end with cgroup.kill; memory.max where the memory
 *            controller is ours.
 *   cgroup1  a group per start in the v1 `pids` and `freezer` hierarchies:
 *            membership from cgroup.procs, a frozen group is killed whole.
 *   session  no cgroup we may create: a marker in each process's
 *            environment that only the daemon can compute (a keyed hash of
 *            the job and start), the runner's session and descendants, and
 *            every process already seen as the job's (pid + start time).
 * A v1 `memory` hierarchy, when there is one we may write, enforces
 * --memory whatever the way of tracking. Each process of the job is born
 * inside the groups made here (--cgroup): the runner is started in the v2
 * group or has the job born there, and joins v1 groups before the job
 * exists (see the runner's child.c, join_cgroups). */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "runfile.h"

/* ---- small file helpers ------------------------------------------------ */

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[GF_PATH_MAX + 64];
	ssize_t n;
	int fd, err;

	if (gf_pathf(path, sizeof path, "%s/%s", dir, name))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || strchr(" +,:", p[-1])) && (p[n] == '\0' || strchr(" \n,:", p[n])))
			return true;
	return false;
}

/* ---- where the hierarchies are ------------------------------------------ */

/* A /proc/<pid>/cgroup line "ID:CONTROLLERS:PATH", split in place: line
 * keeps the ID. */
static int split_cgroup_line(char *line, char **ctls, char **path)
{
	char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

	if (!b)
		return -1;
	*a = *b = '\0';
	b[1 + strcspn(b + 1, "\n")] = '\0';
	*ctls = a + 1;
	*path = b + 1;
	return 0;
}

static bool is_v2_line(const char *id, const char *ctls)
{
	return !strcmp(id, "0") && !*ctls;
}

/* Find the hierarchy of controller `ctl` (NULL: the v2 one). */
static int find_hier(const char *ctl, struct cg_hier *h)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	memset(h, 0, sizeof *h);
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof line, f)) {
		char root[GF_PATH_MAX], point[GF_PATH_MAX], fstype[64], opts[1024];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) < 1)
			continue;
		if (ctl ? !strcmp(fstype, "cgroup") && has_word(opts, ctl) : !strcmp(fstype, "cgroup2")) {
			snprintf(h->mnt, sizeof h->mnt, "%s", point);
			snprintf(h->root, sizeof h->root, "%s", root);
			found = true;
		}
	}
	fclose(f);
	if (!found || !(f = fopen("/proc/self/cgroup", "re")))
		return -1;
	found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char *ctls, *path;

		if (split_cgroup_line(line, &ctls, &path) == 0 && (ctl ? has_word(ctls, ctl) : is_v2_line(line, ctls))) {
			snprintf(h->own, sizeof h->own, "%s", path);
			found = true;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* A group path as /proc/<pid>/cgroup gives it → its directory. */
static int group_dir(const struct cg_hier *h, const char *path, char *out, size_t size)
{
	size_t n = strlen(h->root);

	if (!strcmp(h->root, "/"))
		n = 0;
	else if (strncmp(path, h->root, n) || (path[n] && path[n] != '/'))
		return -1;	/* outside what this mount shows */
	return gf_pathf(out, size, "%s%s", h->mnt, strcmp(path + n, "/") ? path + n : "");
}

/* The daemon's own jobs directory `name` in hierarchy h (made). */
static int make_jobs_dir(const struct cg_hier *h, const char *parent, const char *name, char *out, size_t size)
{
	char base[GF_PATH_MAX];

	if (parent)
		snprintf(base, sizeof base, "%s", parent);
	else if (group_dir(h, h->own, base, sizeof base))
		return -1;
	if (gf_pathf(out, size, "%s/%s", base, name) || (mkdir(out, 0755) && errno != EEXIST)) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

/* ---- setup ------------------------------------------------------------- */

/* Give the v2 jobs directory the memory controller: the parent must pass
 * it down, which it can only do without processes of its own (the root
 * group excepted). A daemon alone in its group moves into a leaf `gflowd`
 * (a delegated systemd service is laid out this way). */
static bool v2_memory(struct tracker *t, const char *parent, bool parent_is_own)
{
	char buf[1024], leaf[GF_PATH_MAX + 16], pid[32];

	if (runfile_read_text(parent, "cgroup.controllers", buf, sizeof buf) || !has_word(buf, "memory"))
		return false;
	if (runfile_read_text(parent, "cgroup.subtree_control", buf, sizeof buf))
		return false;
	if (!has_word(buf, "memory") && write_text(parent, "cgroup.subtree_control", "+memory")) {
		if (!parent_is_own || gf_pathf(leaf, sizeof leaf, "%s/gflowd", parent) ||
		    (mkdir(leaf, 0755) && errno != EEXIST))
			return false;
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		if (write_text(leaf, "cgroup.procs", pid) ||
		    write_text(parent, "cgroup.subtree_control", "+memory"))
			return false;
	}
	return write_text(t->cg, "cgroup.subtree_control", "+memory") == 0;
}

static int setup_v2(struct tracker *t, const char *name)
{
	const char *env = getenv("GFLOW_CGROUP_PARENT");
	char parent[GF_PATH_MAX];

	if (find_hier(NULL, &t->h) && !(env && *env))
		return -1;
	if (env && *env)
		snprintf(parent, sizeof parent, "%s", env);
	else if (group_dir(&t->h, t->h.own, parent, sizeof parent))
		return -1;
	if (make_jobs_dir(&t->h, parent, name, t->cg, sizeof t->cg))
		return -1;
	t->method = TRACK_CGROUP2;
	if (v2_memory(t, parent, !(env && *env)))
		snprintf(t->mem, sizeof t->mem, "%s", t->cg);
	return 0;
}

static int setup_v1(struct tracker *t, const char *name)
{
	struct cg_hier h;

	if (find_hier("pids", &h) == 0 && make_jobs_dir(&h, NULL, name, t->cg, sizeof t->cg) == 0) {
		t->h = h;
		snprintf(t->ctl, sizeof t->ctl, "pids");
	}
	if (find_hier("freezer", &h) == 0 && make_jobs_dir(&h, NULL, name, t->freezer, sizeof t->freezer) == 0 &&
	    !t->cg[0]) {
		t->h = h;
		snprintf(t->ctl, sizeof t->ctl, "freezer");
		snprintf(t->cg, sizeof t->cg, "%s", t->freezer);
	}
	if (!t->cg[0])
		return -1;
	t->method = TRACK_CGROUP1;
	return 0;
}

static void setup_v1_memory(struct tracker *t, const char *name)
{
	struct cg_hier h;

	if (find_hier("memory", &h) == 0 && make_jobs_dir(&h, NULL, name, t->mem, sizeof t->mem) == 0)
		t->mem_v1 = true;
}

/* [gpu] constrain_devices: this daemon's jobs directory in the v1 devices
 * hierarchy; otherwise why not. */
static void setup_devices(struct server *s, const char *name)
{
	struct tracker *t = &s->track;
	struct cg_hier h;

	if (!s->cfg.gpu_constrain_devices)
		snprintf(t->devices_why, sizeof t->devices_why, "[gpu] constrain_devices is off");
	else if (geteuid() != 0)
		snprintf(t->devices_why, sizeof t->devices_why, "the daemon does not run as root");
	else if (find_hier("devices", &h))
		snprintf(t->devices_why, sizeof t->devices_why,
			 "no cgroup v1 devices controller here (cgroup v2 device control is not supported)");
	else if (make_jobs_dir(&h, NULL, name, t->devices, sizeof t->devices))
		snprintf(t->devices_why, sizeof t->devices_why, "cannot make a group in the devices hierarchy: %s",
			 strerror(errno));
}

/* FNV-1a: a stable short name for this daemon's groups, from its data
 * directory (several daemons may share a machine). */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The marker's key: the daemon's secret token, which no job sees. */
static void marker_key(struct server *s)
{
	for (int i = 0; i < 16; i++) {
		unsigned v = 0;

		if (sscanf(s->token + 2 * i, "%2x", &v) != 1)
			v = (unsigned)s->token[i];
		s->track.key[i] = (uint8_t)v;
	}
}

int track_setup(struct server *s, struct gf_err *e)
{
	struct tracker *t = &s->track;
	const char *want = getenv("GFLOW_TRACKING");
	char name[64];

	if (!want || !*want)
		want = "auto";
	if (strcmp(want, "auto") && strcmp(want, "cgroup2") && strcmp(want, "cgroup1") && strcmp(want, "session"))
		return gf_err_set(e, "GFLOW_TRACKING='%s': expected auto, cgroup2, cgroup1 or session", want);
	marker_key(s);
	snprintf(name, sizeof name, "gflow-%016llx", (unsigned long long)fnv1a(s->paths.data_dir));
	t->method = TRACK_SESSION;
	if (!strcmp(want, "auto") || !strcmp(want, "cgroup2"))
		setup_v2(t, name);
	if (t->method == TRACK_SESSION && (!strcmp(want, "auto") || !strcmp(want, "cgroup1")))
		setup_v1(t, name);
	if (t->method == TRACK_SESSION && strcmp(want, "auto") && strcmp(want, "session"))
		return gf_err_set(e, "GFLOW_TRACKING=%s: no %s hierarchy here in which this daemon may make "
				     "groups", want, want);
	if (!t->mem[0] && strcmp(want, "session"))
		setup_v1_memory(t, name);
	setup_devices(s, name);
	return 0;
}

const char *track_method_name(const struct server *s)
{
	static const char *const names[] = { "session", "cgroup2", "cgroup1" };

	return names[s->track.method];
}

void track_close(struct server *s)
{
	/* The jobs directories go when empty (no job of ours is running). */
	if (s->track.cg[0])
		rmdir(s->track.cg);
	if (s->track.freezer[0] && strcmp(s->track.freezer, s->track.cg))
		rmdir(s->track.freezer);
	if (s->track.mem[0] && strcmp(s->track.mem, s->track.cg))
		rmdir(s->track.mem);
	if (s->track.devices[0])
		rmdir(s->track.devices);
	free(s->track.seen);
	s->track.seen = NULL;
	s->track.nseen = s->track.seen_cap = 0;
}

/* ---- the marker -------------------------------------------------------- */

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = rotl(v[1], 13) ^ v[0];
	v[0] = rotl(v[0], 32);
	v[2] += v[3];
	v[3] = rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = rotl(v[1], 17) ^ v[2];
	v[2] = rotl(v[2], 32);
}

/* SipHash-2-4 of (id, seq) under the daemon's key. */
static uint64_t keyed_hash(const uint8_t key[16], int64_t id, int64_t seq)
{
	uint64_t k0 = 0, k1 = 0, m[2] = { (uint64_t)id, (uint64_t)seq };
	uint64_t v[4];

	for (int i = 0; i < 8; i++) {
		k0 |= (uint64_t)key[i] << (8 * i);
		k1 |= (uint64_t)key[8 + i] << (8 * i);
	}
	v[0] = k0 ^ 0x736f6d6570736575ULL;
	v[1] = k1 ^ 0x646f72616e646f6dULL;
	v[2] = k0 ^ 0x6c7967656e657261ULL;
	v[3] = k1 ^ 0x7465646279746573ULL;
	for (int i = 0; i < 2; i++) {
		v[3] ^= m[i];
		sip_round(v);
		sip_round(v);
		v[0] ^= m[i];
	}
	v[3] ^= 16ULL << 56;	/* length, no tail */
	sip_round(v);
	sip_round(v);
	v[0] ^= 16ULL << 56;
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

void track_marker(struct server *s, const struct job *j, char *buf, size_t size)
{
	snprintf(buf, size, "GFLOW_JOB_MARK=%lld.%lld.%016llx", (long long)j->id, (long long)j->run_seq,
		 (unsigned long long)keyed_hash(s->track.key, j->id, j->run_seq));
}

/* ---- one start's groups ------------------------------------------------- */

static int job_group(const char *jobs_dir, const struct job *j, char *out, size_t size)
{
	return gf_pathf(out, size, "%s/job-%lld.%lld", jobs_dir, (long long)j->id, (long long)j->run_seq);
}

/* Make dir (a leftover empty one is made again; one with processes is an
 * error: it is not ours to reuse). */
int track_make_group(const char *dir, struct gf_err *e)
{
	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno == EEXIST && rmdir(dir) == 0 && mkdir(dir, 0755) == 0)
		return 0;
	return gf_err_set(e, "cannot make the job's cgroup %s: %s", dir, strerror(errno));
}

static void set_memory(const char *dir, bool v1, int64_t mb)
{
	char value[32];

	snprintf(value, sizeof value, "%lld", (long long)mb * 1024 * 1024);
	if (v1) {
		write_text(dir, "memory.limit_in_bytes", value);
		/* No swapping past the limit, where swap is accounted. */
		write_text(dir, "memory.memsw.limit_in_bytes", value);
		return;
	}
	write_text(dir, "memory.max", value);
	write_text(dir, "memory.swap.max", "0");
	write_text(dir, "memory.oom.group", "1");	/* an OOM kill takes the whole job */
}

size_t track_prepare(struct server *s, const struct job *j, char paths[][GF_PATH_MAX], bool *runner_makes,
		     struct gf_err *e)
{
	struct tracker *t = &s->track;
	size_t n = 0;

	/* Nothing of ours to set in it: the runner may make it (see run.h).
	 * One left at its name (a start that never ran, before a crash) is
	 * looked at here, as ever: made again when empty, else refused. */
	*runner_makes = *runner_makes && t->method == TRACK_CGROUP2 &&
			!(j->memory_mb && t->mem[0] && !strcmp(t->mem, t->cg));
	if (t->method != TRACK_SESSION) {
		if (job_group(t->cg, j, paths[n], GF_PATH_MAX))
			return (size_t)-1;
		if (*runner_makes && access(paths[n], F_OK) == 0)
			*runner_makes = false;
		if (!*runner_makes && track_make_group(paths[n], e))
			return (size_t)-1;
		n++;
	}
	if (t->method == TRACK_CGROUP1 && t->freezer[0] && strcmp(t->freezer, t->cg)) {
		if (job_group(t->freezer, j, paths[n], GF_PATH_MAX) || track_make_group(paths[n], e))
			return (size_t)-1;
		n++;
	}
	if (j->memory_mb && t->mem[0]) {
		if (strcmp(t->mem, t->cg)) {
			if (job_group(t->mem, j, paths[n], GF_PATH_MAX) || track_make_group(paths[n], e))
				return (size_t)-1;
			n++;
		}
		set_memory(paths[strcmp(t->mem, t->cg) ? n - 1 : 0], t->mem_v1, j->memory_mb);
	}
	if (t->devices[0]) {
		if (job_group(t->devices, j, paths[n], GF_PATH_MAX) || track_make_group(paths[n], e) ||
		    devices_restrict(s, j, paths[n], e))
			return (size_t)-1;
		n++;
	}
	return n;
}

/* ---- members ------------------------------------------------------------ */

struct pids {
	pid_t *v;
	size_t n, cap;
};

static void pids_add(struct pids *p, pid_t pid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i] == pid)
			return;
	p->v = gf_grow(p->v, &p->cap, p->n + 1, sizeof *p->v, 16);
	p->v[p->n++] = pid;
}

/* Every process in dir and its child groups (a job may make some). */
static void group_pids(const char *dir, struct pids *out, int depth)
{
	char path[GF_PATH_MAX + 32], line[64];
	struct dirent *d;
	FILE *f;
	DIR *dp;

	if (gf_pathf(path, sizeof path, "%s/cgroup.procs", dir) == 0 && (f = fopen(path, "re"))) {
		while (fgets(line, sizeof line, f))
			if (atoi(line) > 0)
				pids_add(out, (pid_t)atoi(line));
		fclose(f);
	}
	if (depth > 8 || !(dp = opendir(dir)))
		return;
	while ((d = readdir(dp)))
		if (d->d_type == DT_DIR && d->d_name[0] != '.' &&
		    !gf_pathf(path, sizeof path, "%s/%s", dir, d->d_name))
			group_pids(path, out, depth + 1);
	closedir(dp);
}

#define PF_KTHREAD_FLAG 0x00200000ULL	/* /proc/<pid>/stat's flags: a kernel thread */

/* Appends what path reads (up to 1 MiB, far bigger than any environment
 * we made) to *buf (cap bytes, *len used; one byte kept for a NUL). */
static void read_into(const char *path, char **buf, size_t *len, size_t *cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	for (;;) {
		if (*len + 4096 + 1 > *cap) {
			if (*cap >= (1u << 20))
				break;
			*cap = *cap ? *cap * 2 : 16384;
			if (!(*buf = realloc(*buf, *cap)))
				abort();
		}
		n = read(fd, *buf + *len, *cap - *len - 1);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
}

/* The job whose marker a process carries (checked against the key, so
 * it cannot be made up), or NULL. */
static struct job *marked_job(struct server *s, pid_t pid)
{
	static const char key[] = "GFLOW_JOB_MARK=";
	char path[64], *buf = NULL, want[128];
	size_t len = 0, cap = 0;
	struct job *found = NULL;
	long long id = 0, seq = 0;
	unsigned long long flags;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	/* The file reads the memory the process had when it was opened: one
	 * that execs in between reads as empty. A live process read as empty
	 * is read again (a job's process mid-exec must not go unseen); kernel
	 * threads and zombies have no environment. */
	read_into(path, &buf, &len, &cap);
	if (!len && proc_stat_field(pid, 9, &flags) == 0 && !(flags & PF_KTHREAD_FLAG))
		for (int tries = 1; !len && tries < 4 && proc_state(pid) != 'Z'; tries++)
			read_into(path, &buf, &len, &cap);
	for (size_t off = 0; buf && off < len; off += strlen(buf + off) + 1) {
		buf[len] = '\0';
		if (strncmp(buf + off, key, sizeof key - 1) ||
		    sscanf(buf + off + sizeof key - 1, "%lld.%lld.", &id, &seq) != 2)
			continue;
		found = jobs_get(s, id);
		if (found && found->active && found->run_seq == seq) {
			track_marker(s, found, want, sizeof want);
			if (strcmp(buf + off, want))
				found = NULL;
		} else
			found = NULL;
		break;
	}
	free(buf);
	return found;
}

/* The process is the one that had these start ticks, and not a zombie. */
static bool still(pid_t pid, unsigned long long ticks)
{
	unsigned long long now;

	return proc_start_ticks(pid, &now) == 0 && now == ticks && proc_state(pid) != 'Z';
}

static bool seen_has(const struct tracker *t, const struct job *j, pid_t pid)
{
	for (size_t i = 0; i < t->nseen; i++)
		if (t->seen[i].pid == pid && t->seen[i].job == j->id)
			return still(pid, t->seen[i].ticks);
	return false;
}

static void seen_add(struct tracker *t, const struct job *j, pid_t pid)
{
	unsigned long long ticks;

	if (seen_has(t, j, pid) || proc_start_ticks(pid, &ticks))
		return;
	t->seen = gf_grow(t->seen, &t->seen_cap, t->nseen + 1, sizeof *t->seen, 64);
	t->seen[t->nseen++] = (struct seen_pid){ pid, ticks, j->id };
}

static bool runner_alive(const struct job *j)
{
	unsigned long long ticks;

	return j->runner_pid > 0 && proc_start_ticks(j->runner_pid, &ticks) == 0 &&
	       (!j->runner_ticks || ticks == j->runner_ticks) && proc_state(j->runner_pid) != 'Z';
}

/* Session way: the runner (while alive), its descendants, its session
 * (process executor: the runner leads it; only while it is alive, as a
 * dead one's id may be taken again), the processes carrying the job's
 * marker, and those seen as the job's before. */
static void session_pids(struct server *s, const struct job *j, struct pids *out)
{
	struct pids rest = { 0 };
	bool alive = runner_alive(j), grew = true;
	struct dirent *d;
	DIR *dp = opendir("/proc");

	if (!dp)
		return;
	if (alive)
		pids_add(out, j->runner_pid);
	while ((d = readdir(dp))) {
		unsigned long long sid;
		pid_t pid = (pid_t)atoi(d->d_name);

		if (pid <= 0 || pid == getpid() || pid == j->runner_pid || proc_state(pid) == 'Z')
			continue;
		if (seen_has(&s->track, j, pid) || marked_job(s, pid) == j ||
		    (alive && j->executor == EXEC_PROCESS && proc_stat_field(pid, 6, &sid) == 0 &&
		     (pid_t)sid == j->runner_pid))
			pids_add(out, pid);
		else
			pids_add(&rest, pid);	/* may still descend from a member */
	}
	closedir(dp);
	while (grew && out->n) {
		grew = false;
		for (size_t i = 0; i < rest.n; i++) {
			unsigned long long ppid;

			if (!rest.v[i] || proc_stat_field(rest.v[i], 4, &ppid))
				continue;
			for (size_t k = 0; k < out->n; k++)
				if (out->v[k] == (pid_t)ppid) {
					pids_add(out, rest.v[i]);
					rest.v[i] = 0;
					grew = true;
					break;
				}
		}
	}
	free(rest.v);
}

/* The groups of this start in the tracking hierarchy that exist. */
static bool has_group(struct server *s, const struct job *j, char *dir, size_t size)
{
	struct stat st;

	return s->track.method != TRACK_SESSION && job_group(s->track.cg, j, dir, size) == 0 &&
	       stat(dir, &st) == 0;
}

size_t track_pids(struct server *s, const struct job *j, pid_t **out)
{
	char dir[GF_PATH_MAX];
	struct pids p = { 0 };

	if (has_group(s, j, dir, sizeof dir))
		group_pids(dir, &p, 0);
	else if (!jr(j)->group_made)	/* (only made where there are groups) */
		session_pids(s, j, &p);	/* (a group made here and gone was empty) */
	*out = p.v;
	return p.n;
}

bool track_empty(struct server *s, const struct job *j)
{
	char dir[GF_PATH_MAX], buf[256];
	pid_t *v;
	size_t n;

	/* v2 says at once, for the group and all below it. */
	if (has_group(s, j, dir, sizeof dir)) {
		if (runfile_read_text(dir, "cgroup.events", buf, sizeof buf) == 0)
			return strstr(buf, "populated 0") != NULL;
	} else if (jr(j)->group_made)
		return true;	/* not made yet, or removed: a group made here holds nothing then */
	n = track_pids(s, j, &v);
	free(v);
	return n == 0;
}

static void kill_all(const pid_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kill(v[i], SIGKILL);
}

void track_kill(struct server *s, const struct job *j)
{
	char dir[GF_PATH_MAX], frz[GF_PATH_MAX], buf[64];
	bool frozen = false;
	pid_t *v;
	size_t n;

	if (has_group(s, j, dir, sizeof dir) && write_text(dir, "cgroup.kill", "1") == 0)
		return;
	/* v1: freeze first, so no process forks while the others die. */
	if (s->track.method == TRACK_CGROUP1 && s->track.freezer[0] &&
	    !job_group(s->track.freezer, j, frz, sizeof frz) && write_text(frz, "freezer.state", "FROZEN") == 0) {
		frozen = true;
		for (int i = 0; i < 50; i++) {
			struct timespec ms = { 0, 1000000 };

			if (runfile_read_text(frz, "freezer.state", buf, sizeof buf) == 0 && !strncmp(buf, "FROZEN", 6))
				break;
			nanosleep(&ms, NULL);
		}
	}
	n = track_pids(s, j, &v);
	kill_all(v, n);
	free(v);
	if (frozen)
		write_text(frz, "freezer.state", "THAWED");	/* killed processes die only when thawed */
}

/* Remove dir and every group below it, deepest first. One with no group
 * below it (a job's nearly always) goes at the first rmdir. */
static void remove_group(const char *dir, int depth)
{
	char path[GF_PATH_MAX + 256];
	struct dirent *d;
	DIR *dp;

	if (rmdir(dir) == 0 || errno == ENOENT)
		return;
	if (depth < 8 && (dp = opendir(dir))) {
		while ((d = readdir(dp)))
			if (d->d_type == DT_DIR && d->d_name[0] != '.' &&
			    !gf_pathf(path, sizeof path, "%s/%s", dir, d->d_name))
				remove_group(path, depth + 1);
		closedir(dp);
	}
	rmdir(dir);
}

void track_release(struct server *s, const struct job *j)
{
	const char *dirs[4] = { s->track.cg, s->track.freezer, s->track.mem, s->track.devices };
	char dir[GF_PATH_MAX];
	size_t k = 0;

	for (int i = 0; i < 4; i++)
		if (dirs[i][0] && !job_group(dirs[i], j, dir, sizeof dir))
			remove_group(dir, 0);
	/* Forget the pids seen as this job's. */
	for (size_t i = 0; i < s->track.nseen; i++)
		if (s->track.seen[i].job != j->id)
			s->track.seen[k++] = s->track.seen[i];
	s->track.nseen = k;
}

/* ---- who owns a process ------------------------------------------------- */

/* The active job whose runner `pid` descends from, or NULL. */
static struct job *by_ancestry(struct server *s, pid_t pid)
{
	for (int depth = 0; pid > 1 && depth < 128; depth++) {
		unsigned long long ppid;

		for (size_t i = 0; i < s->nlive; i++) {
			struct job *j = jobs_active_at(s, i);

			if (j && j->runner_pid == pid && runner_alive(j))
				return j;
		}
		if (proc_stat_field(pid, 4, &ppid))
			return NULL;
		pid = (pid_t)ppid;
	}
	return NULL;
}

/* The job whose group holds pid, by /proc/<pid>/cgroup. */
static struct job *by_cgroup(struct server *s, pid_t pid)
{
	const struct tracker *t = &s->track;
	char path[64], line[GF_PATH_MAX + 64], dir[GF_PATH_MAX], prefix[GF_PATH_MAX + 8];
	struct job *found = NULL;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	snprintf(prefix, sizeof prefix, "%s/job-", t->cg);
	while (!found && fgets(line, sizeof line, f)) {
		char *ctls, *gpath;
		long long id, seq;
		struct job *j;

		if (split_cgroup_line(line, &ctls, &gpath) ||
		    (t->method == TRACK_CGROUP2 ? !is_v2_line(line, ctls) : !has_word(ctls, t->ctl)))
			continue;
		if (group_dir(&t->h, gpath, dir, sizeof dir) || strncmp(dir, prefix, strlen(prefix)) ||
		    sscanf(dir + strlen(prefix), "%lld.%lld", &id, &seq) != 2)
			continue;
		j = jobs_get(s, id);
		if (j && j->active && j->run_seq == seq)
			found = j;
	}
	fclose(f);
	return found;
}

struct job *track_owner(struct server *s, pid_t pid)
{
	struct job *j = NULL;

	if (s->track.method != TRACK_SESSION)
		j = by_cgroup(s, pid);
	if (!j && s->track.method == TRACK_SESSION) {
		for (size_t i = 0; i < s->track.nseen && !j; i++)
			if (s->track.seen[i].pid == pid) {
				struct job *c = jobs_get(s, s->track.seen[i].job);

				if (c && c->active && seen_has(&s->track, c, pid))
					j = c;
			}
		if (!j)
			j = marked_job(s, pid);
	}
	return j ? j : by_ancestry(s, pid);
}

/* Session way: remember every process now seen as a job's (by marker or
 * as a live runner's descendant), so that it stays the job's after its
 * runner is gone, whatever it does to its environment. One scan of /proc. */
void track_observe(struct server *s)
{
	struct dirent *d;
	DIR *dp;
	size_t k = 0;

	if (s->track.method != TRACK_SESSION || !(dp = opendir("/proc")))
		return;
	/* Entries of processes that are gone go first. */
	for (size_t i = 0; i < s->track.nseen; i++)
		if (still(s->track.seen[i].pid, s->track.seen[i].ticks))
			s->track.seen[k++] = s->track.seen[i];
	s->track.nseen = k;
	while ((d = readdir(dp))) {
		pid_t pid = (pid_t)atoi(d->d_name);
		struct job *j;

		if (pid <= 0 || pid == getpid())
			continue;
		j = marked_job(s, pid);
		if (!j && (j = by_ancestry(s, pid)) && !runner_alive(j))
			j = NULL;
		if (j)
			seen_add(&s->track, j, pid);
	}
	closedir(dp);
}

json_t *track_json(struct server *s)
{
	return json_pack("{s:s,s:s?,s:s?,s:b,s:s?,s:s?}", "method", track_method_name(s), "cgroup",
			 s->track.cg[0] ? s->track.cg : NULL, "memory_cgroup", s->track.mem[0] ? s->track.mem : NULL,
			 "devices_constrained", s->track.devices[0] != '\0', "devices_cgroup",
			 s->track.devices[0] ? s->track.devices : NULL, "devices_why",
			 s->track.devices[0] ? NULL : s->track.devices_why);
}
