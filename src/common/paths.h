/* paths.h — where gflow keeps its files (XDG base directories).
 *
 *   config   $XDG_CONFIG_HOME/gflow/gflow.toml   (~/.config/gflow)
 *   data     $XDG_DATA_HOME/gflow/               (~/.local/share/gflow)
 *            gflow.db, token, gflowd.lock, logs/<id>.log, run/<id>/
 *   runtime  $XDG_RUNTIME_DIR/gflow/gflowd.sock  (/tmp/gflow-<uid>/ when unset)
 *            gflowd.sock.lock: flock'ed by the daemon that owns the socket
 *
 * GFLOW_SOCKET overrides the socket path (tests use it); the lock is always
 * the socket's path plus ".lock".
 *
 * System mode (one daemon for the machine, run by root), every path under
 * $GFLOW_SYSTEM_ROOT (default /; tests relocate it):
 *   config   /etc/gflow/gflow.toml
 *   data     /var/lib/gflow/          (0700 root)
 *   runtime  /run/gflow/gflowd.sock   (the directory 0755: every user connects) */
#ifndef GF_PATHS_H
#define GF_PATHS_H

#include <stddef.h>

#include "err.h"

#define GF_PATH_MAX 4096

struct gf_paths {
	int system;			/* the machine's daemon, not a user's */
	char home[GF_PATH_MAX];
	char config_dir[GF_PATH_MAX];
	char data_dir[GF_PATH_MAX];
	char runtime_dir[GF_PATH_MAX];
	char socket[GF_PATH_MAX];
	char socket_lock[GF_PATH_MAX];
	char db[GF_PATH_MAX];
	char lock[GF_PATH_MAX];
	char token[GF_PATH_MAX];
	char log_dir[GF_PATH_MAX];
	char run_dir[GF_PATH_MAX];
};

/* Fill every path from the environment; creates nothing. */
int gf_paths_init(struct gf_paths *p, struct gf_err *e);
/* The same for the system daemon. */
int gf_paths_init_system(struct gf_paths *p, struct gf_err *e);
/* $GFLOW_SYSTEM_ROOT without a trailing slash ("" for /). */
const char *gf_system_root(void);
/* The system daemon's socket. */
int gf_system_socket(char *buf, size_t size);

/* Create the data, log, run and runtime directories with mode 0700. */
int gf_paths_create(const struct gf_paths *p, struct gf_err *e);

/* snprintf into a path buffer; -1 (and an empty buffer) when it does not fit. */
int gf_pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* mkdir -p with the given mode for each missing component. */
int gf_mkdir_p(const char *path, unsigned mode, struct gf_err *e);


/* Who a client may talk to (a client sends nothing to a daemon it has not
 * verified). gf_private_dir: is dir a directory (not a symbolic link) of
 * the caller's real uid with no access for group or others? 0 when so, 1
 * when it does not exist, else -1 with e saying what is wrong and whose it
 * is ("DIR belongs to mallory (uid 1002), not you; ..."). */
int gf_private_dir(const char *dir, struct gf_err *e);
/* The directory of a socket path ("." for a bare name). */
int gf_socket_dir(char *buf, size_t size, const char *sock);
/* Is the server of connected Unix socket fd (SO_PEERCRED) the caller's
 * real uid or root? 0 when so, else -1 with e ("refusing SOCK: it is served
 * by mallory (uid 1002), not by you or root"). */
int gf_peer_trusted(int fd, const char *sock, struct gf_err *e);

#endif
