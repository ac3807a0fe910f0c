/* cgroup.c — where host memory limits can be enforced: finding a cgroup v2
 * directory, delegated to us, under which each job's runner can make a
 * cgroup with memory.max. When there is none, jobs run unenforced and say
 * so (MemoryEnforced=no); admission against MemTotal still applies. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_text(const char *dir, const char *name, char *buf, size_t size)
{
	char path[GF_PATH_MAX + 64];
	ssize_t n;
	int fd;

	if (gf_pathf(path, sizeof path, "%s/%s", dir, name))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[GF_PATH_MAX + 64];
	ssize_t n;
	int fd;

	if (gf_pathf(path, sizeof path, "%s/%s", dir, name))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == '+') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

static bool has_memory(const char *dir)
{
	char buf[1024];

	return read_text(dir, "cgroup.controllers", buf, sizeof buf) == 0 && has_word(buf, "memory");
}

/* Can job cgroups with a memory controller be made under dir? */
static bool usable_parent(const char *dir)
{
	char buf[1024];

	if (!has_memory(dir) || read_text(dir, "cgroup.subtree_control", buf, sizeof buf))
		return false;
	return has_word(buf, "memory") || write_text(dir, "cgroup.subtree_control", "+memory") == 0;
}

/* The cgroup v2 mount point and our own cgroup within it. */
static int own_cgroup(char *out, size_t size)
{
	char line[4096], mnt[GF_PATH_MAX] = "", path[GF_PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - "), point[GF_PATH_MAX];

		if (sep && !strncmp(sep, " - cgroup2 ", 11) &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1) {
			snprintf(mnt, sizeof mnt, "%s", point);
			break;
		}
	}
	fclose(f);
	if (!mnt[0] || !(f = fopen("/proc/self/cgroup", "re")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, sizeof path, "%s", line + 3);
		}
	fclose(f);
	if (!path[0])
		return -1;
	return gf_pathf(out, size, "%s%s", mnt, strcmp(path, "/") ? path : "");
}

void cgroup_setup(struct server *s)
{
	const char *env = getenv("GFLOW_CGROUP_PARENT");
	char base[GF_PATH_MAX], leaf[GF_PATH_MAX + 16], pid[32];

	s->cgroup_parent[0] = '\0';
	if (env && *env) {
		if (usable_parent(env))
			snprintf(s->cgroup_parent, sizeof s->cgroup_parent, "%s", env);
		else
			fprintf(stderr, "gflowd: GFLOW_CGROUP_PARENT=%s is not a cgroup v2 directory with the "
					"memory controller that we may write: memory limits are not enforced\n",
				env);
		return;
	}
	if (own_cgroup(base, sizeof base) || !has_memory(base))
		return;
	/* A cgroup with processes cannot give controllers to children, so the
	 * daemon moves into a leaf of its own first (a delegated systemd
	 * service is laid out this way). Nothing changes when that fails. */
	if (usable_parent(base)) {
		snprintf(s->cgroup_parent, sizeof s->cgroup_parent, "%s", base);
		return;
	}
	if (gf_pathf(leaf, sizeof leaf, "%s/gflowd", base) || (mkdir(leaf, 0755) < 0 && errno != EEXIST))
		return;
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	if (write_text(leaf, "cgroup.procs", pid) == 0 && usable_parent(base))
		snprintf(s->cgroup_parent, sizeof s->cgroup_parent, "%s", base);
}
