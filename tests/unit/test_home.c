/* test_home.c — the home directory from the user database (src/common/home.c):
 * built here with -DGF_HOME_GETENT, the static client's way (getent(1)), and
 * checked against what NSS (getpwuid_r) says in this dynamically linked test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "home.h"

/* gf_user_home gives what NSS gives for our uid. */
static void assert_home_as_nss(void)
{
	struct passwd pw, *res = NULL;
	char tmp[16384], home[4096];

	assert_int_equal(getpwuid_r(getuid(), &pw, tmp, sizeof tmp, &res), 0);
	assert_non_null(res);
	assert_int_equal(gf_user_home(home, sizeof home), 0);
	assert_string_equal(home, pw.pw_dir);
}

static void test_same_as_nss(void **state)
{
	(void)state;
	assert_home_as_nss();
}

/* A caller that ignores SIGCHLD (inherited from its parent) loses getent's
 * exit status: the line it printed, checked for our uid, still counts. */
static void test_sigchld_ignored(void **state)
{
	void (*old)(int) = signal(SIGCHLD, SIG_IGN);

	(void)state;
	assert_home_as_nss();
	signal(SIGCHLD, old);
}

/* gf_user_name gives what NSS gives, for root and for us. */
static void test_user_name(void **state)
{
	struct passwd pw, *res = NULL;
	char tmp[16384], name[256];

	(void)state;
	assert_int_equal(gf_user_name(0, name, sizeof name), 0);
	assert_string_equal(name, "root");
	assert_int_equal(getpwuid_r(getuid(), &pw, tmp, sizeof tmp, &res), 0);
	assert_non_null(res);
	assert_int_equal(gf_user_name(getuid(), name, sizeof name), 0);
	assert_string_equal(name, pw.pw_name);
	assert_int_equal(gf_user_name(0, name, 3), -1);	/* "root" does not fit */
	assert_int_equal(gf_user_name(4000000000u, name, sizeof name), -1);
}

static void test_too_small(void **state)
{
	char home[2];

	(void)state;
	memset(home, 'x', sizeof home);
	assert_int_equal(gf_user_home(home, 1), -1);	/* no home fits in 1 byte */
	assert_int_equal(home[0], 'x');	/* nothing written */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_nss),
		cmocka_unit_test(test_sigchld_ignored),
		cmocka_unit_test(test_user_name),
		cmocka_unit_test(test_too_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
