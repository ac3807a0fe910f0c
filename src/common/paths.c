/* paths.c — resolving gflow's XDG directories. */
#include "paths.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "home.h"

static int join(char *dst, const char *a, const char *b, struct gf_err *e)
{
	int n = snprintf(dst, GF_PATH_MAX, "%s/%s", a, b);

	if (n < 0 || n >= GF_PATH_MAX)
		return gf_err_set(e, "path too long: %s/%s", a, b);
	return 0;
}

static const char *env_dir(const char *name)
{
	const char *v = getenv(name);

	/* XDG says relative values are invalid and must be ignored. */
	return (v && v[0] == '/') ? v : NULL;
}

/* The files in the data directory. */
static int data_paths(struct gf_paths *p, struct gf_err *e)
{
	if (join(p->db, p->data_dir, "gflow.db", e) || join(p->lock, p->data_dir, "gflowd.lock", e) ||
	    join(p->token, p->data_dir, "token", e) || join(p->log_dir, p->data_dir, "logs", e) ||
	    join(p->run_dir, p->data_dir, "run", e))
		return -1;
	return 0;
}

int gf_paths_init(struct gf_paths *p, struct gf_err *e)
{
	const char *home = getenv("HOME"), *v;
	char tmp[GF_PATH_MAX], pwhome[GF_PATH_MAX];

	memset(p, 0, sizeof *p);
	if (!home || !*home) {
		if (gf_user_home(pwhome, sizeof pwhome) < 0)
			return gf_err_set(e, "cannot find the home directory: HOME is unset");
		home = pwhome;
	}
	if (strlen(home) >= GF_PATH_MAX - 64)
		return gf_err_set(e, "home directory path too long");
	snprintf(p->home, sizeof p->home, "%s", home);

	if ((v = env_dir("XDG_CONFIG_HOME"))) {
		if (join(p->config_dir, v, "gflow", e))
			return -1;
	} else if (join(tmp, home, ".config", e) || join(p->config_dir, tmp, "gflow", e))
		return -1;

	if ((v = env_dir("XDG_DATA_HOME"))) {
		if (join(p->data_dir, v, "gflow", e))
			return -1;
	} else if (join(tmp, home, ".local/share", e) || join(p->data_dir, tmp, "gflow", e))
		return -1;

	if ((v = env_dir("XDG_RUNTIME_DIR"))) {
		if (join(p->runtime_dir, v, "gflow", e))
			return -1;
	} else
		snprintf(p->runtime_dir, sizeof p->runtime_dir, "/tmp/gflow-%u", (unsigned)getuid());

	if ((v = getenv("GFLOW_SOCKET")) && *v) {
		if (strlen(v) >= GF_PATH_MAX)
			return gf_err_set(e, "GFLOW_SOCKET too long");
		snprintf(p->socket, sizeof p->socket, "%s", v);
	} else if (join(p->socket, p->runtime_dir, "gflowd.sock", e))
		return -1;
	if (gf_pathf(p->socket_lock, sizeof p->socket_lock, "%s.lock", p->socket))
		return gf_err_set(e, "socket path too long: %s", p->socket);

	return data_paths(p, e);
}

const char *gf_system_root(void)
{
	static char root[GF_PATH_MAX];
	const char *v = getenv("GFLOW_SYSTEM_ROOT");
	size_t n;

	if (!v || v[0] != '/')
		return "";
	snprintf(root, sizeof root, "%s", v);
	n = strlen(root);
	while (n > 0 && root[n - 1] == '/')
		root[--n] = '\0';
	return root;
}

int gf_system_socket(char *buf, size_t size)
{
	return gf_pathf(buf, size, "%s/run/gflow/gflowd.sock", gf_system_root());
}

int gf_paths_init_system(struct gf_paths *p, struct gf_err *e)
{
	const char *root = gf_system_root(), *v;

	memset(p, 0, sizeof *p);
	p->system = 1;
	if (gf_pathf(p->home, sizeof p->home, "%s/var/lib/gflow", root) ||
	    gf_pathf(p->config_dir, sizeof p->config_dir, "%s/etc/gflow", root) ||
	    gf_pathf(p->data_dir, sizeof p->data_dir, "%s/var/lib/gflow", root) ||
	    gf_pathf(p->runtime_dir, sizeof p->runtime_dir, "%s/run/gflow", root))
		return gf_err_set(e, "GFLOW_SYSTEM_ROOT is too long");
	if ((v = getenv("GFLOW_SOCKET")) && *v) {
		if (strlen(v) >= GF_PATH_MAX)
			return gf_err_set(e, "GFLOW_SOCKET too long");
		snprintf(p->socket, sizeof p->socket, "%s", v);
	} else if (join(p->socket, p->runtime_dir, "gflowd.sock", e))
		return -1;
	if (gf_pathf(p->socket_lock, sizeof p->socket_lock, "%s.lock", p->socket))
		return gf_err_set(e, "socket path too long: %s", p->socket);
	return data_paths(p, e);
}

int gf_pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		if (size)
			buf[0] = '\0';
		return -1;
	}
	return 0;
}

int gf_mkdir_p(const char *path, unsigned mode, struct gf_err *e)
{
	char buf[GF_PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof buf)
		return gf_err_set(e, "bad directory path '%s'", path);
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return gf_err_set(e, "cannot create directory %s: %s", buf, strerror(errno));
			*s = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

int gf_paths_create(const struct gf_paths *p, struct gf_err *e)
{
	const char *dirs[] = { p->data_dir, p->log_dir, p->run_dir, p->runtime_dir };
	char sockdir[GF_PATH_MAX];
	char *slash;

	/* The system daemon's runtime directory (and any parent made for it)
	 * is for every local user to reach the socket in. */
	if (p->system && gf_mkdir_p(p->runtime_dir, 0755, e))
		return -1;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] - (p->system ? 1 : 0); i++) {
		struct stat st;

		if (gf_mkdir_p(dirs[i], 0700, e))
			return -1;
		/* A personal runtime directory (/tmp/gflow-<uid>: anyone may
		 * have made it first) must be ours and no symbolic link. */
		if (dirs[i] == p->runtime_dir && !p->system && lstat(dirs[i], &st) == 0 &&
		    (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) || st.st_uid != getuid())) {
			gf_private_dir(dirs[i], e);
			return gf_err_prefix(e, "refusing the runtime directory");
		}
		/* Existing directories keep their mode; ours must be private. */
		if (chmod(dirs[i], 0700) < 0)
			return gf_err_set(e, "cannot set mode 0700 on %s: %s", dirs[i], strerror(errno));
	}
	snprintf(sockdir, sizeof sockdir, "%s", p->socket);
	if ((slash = strrchr(sockdir, '/')) && slash != sockdir) {
		*slash = '\0';
		if (gf_mkdir_p(sockdir, 0700, e))
			return -1;
	}
	/* The system daemon's socket directory is for every local user. */
	if (p->system && (chmod(p->runtime_dir, 0755) < 0 || (strcmp(sockdir, p->runtime_dir) && chmod(sockdir, 0755) < 0)))
		return gf_err_set(e, "cannot set mode 0755 on %s: %s", p->runtime_dir, strerror(errno));
	return 0;
}

/* "mallory (uid 1002)", or "uid 1002" when the user database has no name. */
static const char *who(unsigned uid, char *buf, size_t size)
{
	char name[256];

	if (gf_user_name(uid, name, sizeof name) == 0)
		snprintf(buf, size, "%s (uid %u)", name, uid);
	else
		snprintf(buf, size, "uid %u", uid);
	return buf;
}

int gf_private_dir(const char *dir, struct gf_err *e)
{
	static const char fix[] = "have it removed or set XDG_RUNTIME_DIR";
	unsigned me = (unsigned)getuid();
	char owner[300];
	struct stat st;

	if (lstat(dir, &st) < 0)
		return errno == ENOENT ? 1 : gf_err_set(e, "%s cannot be checked: %s", dir, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return gf_err_set(e, "%s is a symbolic link (made by %s), not a directory of yours; %s", dir,
				  who((unsigned)st.st_uid, owner, sizeof owner), fix);
	if (!S_ISDIR(st.st_mode))
		return gf_err_set(e, "%s is not a directory; %s", dir, fix);
	if ((unsigned)st.st_uid != me)
		return gf_err_set(e, "%s belongs to %s, not you; %s", dir, who((unsigned)st.st_uid, owner, sizeof owner),
				  fix);
	if (st.st_mode & 077)
		return gf_err_set(e, "%s is open to others (mode %04o), not private; make it so with "
				  "'chmod 700 %s' or set XDG_RUNTIME_DIR", dir, (unsigned)(st.st_mode & 07777), dir);
	return 0;
}

int gf_socket_dir(char *buf, size_t size, const char *sock)
{
	const char *slash = strrchr(sock, '/');
	size_t n;

	if (!slash)
		return gf_pathf(buf, size, ".");
	n = slash == sock ? 1 : (size_t)(slash - sock);
	if (n >= size)
		return -1;
	memcpy(buf, sock, n);
	buf[n] = '\0';
	return 0;
}

int gf_peer_trusted(int fd, const char *sock, struct gf_err *e)
{
	struct ucred cr;
	socklen_t len = sizeof cr;
	char owner[300];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof cr)
		return gf_err_set(e, "refusing %s: the kernel does not say who serves it (%s)", sock,
				  strerror(errno));
	if (cr.uid == getuid() || cr.uid == 0)
		return 0;
	return gf_err_set(e, "refusing %s: it is served by %s, not by you or root", sock,
			  who((unsigned)cr.uid, owner, sizeof owner));
}
