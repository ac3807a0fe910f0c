/* auth.c — who is calling and what they may do.
 *
 * Over the Unix socket the kernel names the caller (SO_PEERCRED); over TCP
 * a per-user token does (`gflowd token`), and without one the caller is
 * anonymous. Admins are root, members of [daemon] admin_group, and — for a
 * personal daemon — its own user. Anyone may see every job's id, owner,
 * name, state, GPUs and times; only the owner and admins see the rest (its
 * command, directory, environment, log) or change it. Tokens live in the
 * store's settings (`token.<uid>`), which only root (system mode) or the
 * daemon's user can read. */
#include "api.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define TOKEN_PREFIX "token."

static void load_token(void *arg, const char *key, const char *value)
{
	struct server *s = arg;
	char *end;
	unsigned long uid = strtoul(key + strlen(TOKEN_PREFIX), &end, 10);
	struct user_token *t;

	if (*end || strlen(value) >= sizeof t->token)
		return;
	s->tokens = realloc(s->tokens, (s->ntokens + 1) * sizeof *s->tokens);
	if (!s->tokens)
		abort();
	t = &s->tokens[s->ntokens++];
	t->uid = (uid_t)uid;
	snprintf(t->token, sizeof t->token, "%s", value);
}

int auth_setup(struct server *s, struct gf_err *e)
{
	s->have_admin_gid = false;
	if (s->cfg.admin_group && *s->cfg.admin_group) {
		struct group gr, *res = NULL;
		char buf[16384];

		if (getgrnam_r(s->cfg.admin_group, &gr, buf, sizeof buf, &res) || !res)
			return gf_err_set(e, "[daemon] admin_group '%s' is not a group of this machine",
					  s->cfg.admin_group);
		s->admin_gid = res->gr_gid;
		s->have_admin_gid = true;
	}
	return store_each_setting(s->store, TOKEN_PREFIX, load_token, s, e);
}

void auth_close(struct server *s)
{
	free(s->tokens);
	s->tokens = NULL;
	s->ntokens = 0;
}

bool auth_is_admin(struct server *s, uid_t uid)
{
	struct passwd pw, *res = NULL;
	gid_t groups[1024];
	int n = (int)(sizeof groups / sizeof groups[0]);
	char buf[16384];

	if (uid == 0 || (!s->paths.system && uid == s->uid))
		return true;
	if (!s->have_admin_gid || uid == (uid_t)-1)
		return false;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) || !res ||
	    getgrouplist(res->pw_name, res->pw_gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == s->admin_gid)
			return true;
	return false;
}

bool auth_sees_all(struct server *s, const struct job *j, uid_t uid, bool admin)
{
	(void)s;
	return admin || (uid != (uid_t)-1 && uid == j->uid);
}

/* ---- per-user tokens ---------------------------------------------------- */

static struct user_token *token_of(struct server *s, uid_t uid)
{
	for (size_t i = 0; i < s->ntokens; i++)
		if (s->tokens[i].uid == uid)
			return &s->tokens[i];
	return NULL;
}

/* Constant time over the whole token: no timing tells how much matched. */
static bool same(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), diff = n ^ m;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(a[i] ^ (i < m ? b[i] : 0));
	return diff == 0;
}

bool auth_token_user(struct server *s, const char *token, uid_t *uid)
{
	bool found = false;

	if (!*token)
		return false;
	for (size_t i = 0; i < s->ntokens; i++)
		if (same(token, s->tokens[i].token) && !found) {
			*uid = s->tokens[i].uid;
			found = true;
		}
	return found;
}

int auth_token_get(struct server *s, uid_t uid, char *out, size_t size, struct gf_err *e)
{
	struct user_token *t = token_of(s, uid), made = { .uid = uid };
	unsigned char raw[24];
	char key[64];

	if (t) {
		snprintf(out, size, "%s", t->token);
		return 0;
	}
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return gf_err_set(e, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(made.token + 2 * i, 3, "%02x", raw[i]);
	snprintf(key, sizeof key, TOKEN_PREFIX "%u", (unsigned)uid);
	if (store_set_setting(s->store, key, made.token, e))
		return -1;
	s->tokens = realloc(s->tokens, (s->ntokens + 1) * sizeof *s->tokens);
	if (!s->tokens)
		abort();
	s->tokens[s->ntokens++] = made;
	snprintf(out, size, "%s", made.token);
	return 0;
}

int auth_token_revoke(struct server *s, uid_t uid, bool *had, struct gf_err *e)
{
	struct user_token *t = token_of(s, uid);
	char key[64];

	*had = t != NULL;
	if (!t)
		return 0;
	snprintf(key, sizeof key, TOKEN_PREFIX "%u", (unsigned)uid);
	if (store_set_setting(s->store, key, NULL, e))
		return -1;
	*t = s->tokens[--s->ntokens];
	return 0;
}
