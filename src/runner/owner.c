/* owner.c — the job's owner, for a runner started by the system daemon
 * (root). The runner itself stays root: the job, running as its owner,
 * can then neither signal nor trace it. Files in the owner's home are made
 * as the owner (effective ids), so no link of theirs leads root anywhere. */
#include "owner.h"
#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "G1,G2,…" into o->groups. */
static int parse_groups(struct owner *o, const char *groups, struct gf_err *e)
{
	const char *p = groups;

	o->ngroups = 0;
	while (*p) {
		char *end;
		unsigned long g;

		errno = 0;
		g = strtoul(p, &end, 10);
		if (end == p || errno || g > (gid_t)-1 - 1 || (*end && *end != ','))
			return gf_err_set(e, "the job's spec: groups= '%.64s' is not a list of group ids", groups);
		if (o->ngroups == OWNER_MAX_GROUPS)
			return gf_err_set(e, "user %s is in more than %d groups", o->name, OWNER_MAX_GROUPS);
		o->groups[o->ngroups++] = (gid_t)g;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int owner_lookup(struct owner *o, uid_t uid, gid_t gid, const char *name, const char *groups, struct gf_err *e)
{
	struct passwd pw, *res = NULL;
	char buf[16384];

	memset(o, 0, sizeof *o);
	if (name && groups) {
		snprintf(o->name, sizeof o->name, "%s", name);
		o->uid = uid;
		o->gid = gid;
		if (parse_groups(o, groups, e))
			return -1;
		o->set = true;
		return 0;
	}
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) || !res)
		return gf_err_set(e, "the job's owner (uid %u) is not a user of this machine", (unsigned)uid);
	snprintf(o->name, sizeof o->name, "%s", res->pw_name);
	o->uid = uid;
	o->gid = gid;
	o->ngroups = OWNER_MAX_GROUPS;
	if (getgrouplist(o->name, gid, o->groups, &o->ngroups) < 0)
		return gf_err_set(e, "user %s is in more than %d groups", o->name, OWNER_MAX_GROUPS);
	o->set = true;
	return 0;
}

int owner_enter(struct owner *o, struct gf_err *e)
{
	if (!o->set)
		return 0;
	o->nsaved = getgroups(OWNER_MAX_GROUPS, o->saved);
	if (o->nsaved < 0 || setgroups((size_t)o->ngroups, o->groups) || setegid(o->gid) || seteuid(o->uid)) {
		int err = errno;

		owner_leave(o);
		return gf_err_set(e, "cannot act as %s: %s", o->name, strerror(err));
	}
	return 0;
}

void owner_leave(struct owner *o)
{
	if (!o->set)
		return;
	/* Back to root; none of these can fail for a process whose saved
	 * set-user-ID is 0. */
	(void)!seteuid(0);
	(void)!setegid(0);
	if (o->nsaved >= 0)
		(void)!setgroups((size_t)o->nsaved, o->saved);
}

int owner_become(const struct owner *o)
{
	if (!o->set)
		return 0;
	if (setgroups((size_t)o->ngroups, o->groups) || setresgid(o->gid, o->gid, o->gid) ||
	    setresuid(o->uid, o->uid, o->uid))
		return -1;
	/* There must be no way back. */
	if (o->uid != 0 && setuid(0) == 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* mkdir -p of path's directories, each made new with mode 0700; an
 * existing component is used as it is (the owner's own home). */
static int make_parents(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof buf)
		return -1;
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return 0;
}

/* The spare linked at used: its descriptor; -1 with errno EEXIST when
 * that name is taken; -2 when there is no spare (any more). */
static int link_spare(int *spare, const char *used)
{
	char proc[64];
	int fd = *spare;

	if (fd < 0)
		return -2;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, used, AT_SYMLINK_FOLLOW) == 0) {
		*spare = -1;
		return fd;
	}
	if (errno == EEXIST)
		return -1;
	close(fd);	/* no /proc, another file system: made as before */
	*spare = -1;
	return -2;
}

int owner_open_log(struct owner *o, const char *path, bool fresh, int *spare, char *used, size_t size, int *seq,
		   struct gf_err *e)
{
	int fd = -1, err = 0, flags = O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC;
	size_t stem = strlen(path);
	struct stat st;

	if (stem > 4 && !strcmp(path + stem - 4, ".log"))
		stem -= 4;
	*seq = 0;
	if (snprintf(used, size, "%s", path) >= (int)size)
		return gf_err_set(e, "the log path %.64s… is too long", path);
	if (owner_enter(o, e))
		return -1;
	/* In the owner's home, the directories are made as needed. */
	if (o->set && make_parents(path))
		err = errno;
	/* A name that is taken is never written into (it may be another
	 * daemon's log, or an earlier store's): the next one is tried. */
	for (int n = 0; !err; n++) {
		if (n && snprintf(used, size, "%.*s.%d%s", (int)stem, path, n, path + stem) >= (int)size) {
			err = ENAMETOOLONG;
			break;
		}
		fd = fresh && spare && !o->set ? link_spare(spare, used) : -2;
		if (fd == -2)
			fd = open(used, flags | (fresh ? O_EXCL : 0), 0600);
		if (fd >= 0) {
			*seq = n;
			break;
		}
		err = errno;
		if (err == EEXIST && n < GF_LOG_SEQ_MAX)
			err = 0;
	}
	owner_leave(o);
	if (fd < 0 && err == ELOOP)
		return gf_err_set(e, "the log %s is a symbolic link: not following it", used);
	if (fd < 0 && err == EEXIST)
		return gf_err_set(e, "the log %s and the next %d names after it are all taken: not writing into any",
				  path, GF_LOG_SEQ_MAX);
	if (fd < 0)
		return gf_err_set(e, "cannot open the log %s%s%s: %s", used, o->set ? " as " : "", o->set ? o->name : "",
				  strerror(err));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return gf_err_set(e, "the log %s is not a regular file", used);
	}
	return fd;
}
