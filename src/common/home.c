/* home.c — the caller's home directory from the user database (home.h).
 *
 * Built twice: plain (NSS through getpwuid_r, in libgfhome for every
 * dynamically linked program) and with -DGF_HOME_GETENT for the statically
 * linked client, which must not call NSS: a static glibc would dlopen the
 * NSS modules of whatever glibc is installed (sssd, LDAP), which need not
 * match the one linked in. There the answer comes from getent(1), a
 * dynamically linked program of the C library that loads them properly.
 * It is asked only when $HOME is unset, so a normal start costs nothing;
 * a user's name (gf_user_name) only for a message. */
#include "home.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef GF_HOME_GETENT

#include <pwd.h>
#include <stdlib.h>

/* Field 0 (the name), 5 (the home) or 6 (the shell) of uid's passwd entry. */
static int passwd_field(unsigned uid, int field, char *buf, size_t size)
{
	struct passwd pw, *res = NULL;
	size_t len = 16384;
	char *tmp = malloc(len);
	const char *v;
	int rc = -1;

	if (tmp && getpwuid_r((uid_t)uid, &pw, tmp, len, &res) == 0 && res) {
		v = field == 0 ? pw.pw_name : field == 5 ? pw.pw_dir : pw.pw_shell;
		if (v && *v && strlen(v) < size) {
			memcpy(buf, v, strlen(v) + 1);
			rc = 0;
		}
	}
	free(tmp);
	return rc;
}

#else /* GF_HOME_GETENT */

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

/* Field 0 (the name), 5 (the home) or 6 (the shell) of a passwd line
 * ("name:pw:uid:gid:gecos:dir:shell"), when its third is uid. */
static int line_field(const char *line, size_t n, const char *uid, int field,
    char *buf, size_t size)
{
	const char *p = line, *end = line + n, *f;
	int i;

	for (i = 0; i < 5; i++) {
		p = memchr(p, ':', (size_t)(end - p));
		if (!p)
			return -1;
		p++;
		if (i == 1 && ((size_t)(end - p) <= strlen(uid) ||
		    memcmp(p, uid, strlen(uid)) != 0 || p[strlen(uid)] != ':'))
			return -1;
	}
	if (field == 0)
		p = line;
	if (field == 6) {	/* the shell: the last field */
		if (!(p = memchr(p, ':', (size_t)(end - p))))
			return -1;
		p++;
	}
	f = field == 6 ? end : memchr(p, ':', (size_t)(end - p));
	if (!f || f == p || (size_t)(f - p) >= size)
		return -1;
	memcpy(buf, p, (size_t)(f - p));
	buf[f - p] = '\0';
	return 0;
}

static int passwd_field(unsigned uidn, int field, char *buf, size_t size)
{
	static const char *const tools[] = { "/usr/bin/getent", "/bin/getent" };
	char uid[32], line[4096], *argv[4], *nl;
	posix_spawn_file_actions_t fa;
	size_t n = 0, t;
	pid_t pid = -1, r;
	int fd[2], st = 0, werr = 0, rc = -1;

	snprintf(uid, sizeof uid, "%u", uidn);
	argv[0] = "getent";
	argv[1] = "passwd";
	argv[2] = uid;
	argv[3] = NULL;
	if (pipe2(fd, O_CLOEXEC) < 0)
		return -1;
	if (posix_spawn_file_actions_init(&fa) != 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	for (t = 0; t < sizeof tools / sizeof tools[0] && pid < 0; t++) {
		char *const env[] = { NULL };

		if (posix_spawn(&pid, tools[t], &fa, NULL, argv, env) != 0)
			pid = -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		return -1;
	}
	for (;;) {
		ssize_t got = read(fd[0], line + n, sizeof line - 1 - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
		if (n == sizeof line - 1)
			break;
	}
	close(fd[0]);
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		werr = errno;
	/* a whole line, and getent said yes (or SIGCHLD is ignored here, so
	 * its status is gone: then the line alone, checked for our uid) */
	nl = memchr(line, '\n', n);
	if (nl && ((r == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
	    (r < 0 && werr == ECHILD)))
		rc = line_field(line, (size_t)(nl - line), uid, field, buf, size);
	return rc;
}

#endif /* GF_HOME_GETENT */

int gf_user_home(char *buf, size_t size)
{
	return passwd_field((unsigned)getuid(), 5, buf, size);
}

int gf_user_shell(char *buf, size_t size)
{
	return passwd_field((unsigned)getuid(), 6, buf, size);
}

int gf_user_name(unsigned uid, char *buf, size_t size)
{
	return passwd_field(uid, 0, buf, size);
}
