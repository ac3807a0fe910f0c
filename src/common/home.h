/* home.h — the caller's home directory from the user database, for when
 * $HOME is unset (cron, `env -i`). */
#ifndef GF_HOME_H
#define GF_HOME_H

#include <stddef.h>

/* The home directory of the real uid into buf. 0 on success; -1 when the
 * user database has no entry (or no home) for it or it does not fit.
 *
 * Two builds of home.c, one each program: the daemon, the runner and the
 * tests ask NSS (getpwuid_r); the statically linked client (meson option
 * static_client) asks getent(1), because a static glibc cannot load the
 * system's NSS modules (sssd, LDAP) safely. Either way the answer is what
 * `getent passwd UID` says. */
int gf_user_home(char *buf, size_t size);

/* The login shell of the real uid, the same way; -1 when it has none. */
int gf_user_shell(char *buf, size_t size);

/* The name of uid from the same user database, for a message; -1 when it
 * has none or it does not fit. */
int gf_user_name(unsigned uid, char *buf, size_t size);

#endif
