/* test_foreign.c — foreign GPU processes: the [gpu] policy on which of them
 * block their GPU, and how each is named (src/daemon/gpu/foreign.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server.h"

static struct foreign_proc named(const char *cmd, uint64_t mb)
{
	struct foreign_proc f;

	memset(&f, 0, sizeof f);
	f.pid = 4242;
	f.used_mb = mb;
	f.visible = true;
	f.blocks = true;
	f.age_secs = 2 * 86400 + 3 * 3600 + 59;
	snprintf(f.user, sizeof f.user, "bob");
	snprintf(f.cmd, sizeof f.cmd, "%s", cmd);
	return f;
}

static void test_default_policy_blocks_everything(void **state)
{
	struct gf_config c;
	struct foreign_proc f = named("Xorg", 1);

	(void)state;
	memset(&c, 0, sizeof c);
	foreign_apply_policy(&c, &f);
	assert_true(f.blocks);
	assert_null(f.exempt);
}

static void test_min_memory_and_ignored_commands(void **state)
{
	char *cmds[] = { "Xorg", "gnome-shell" };
	struct gf_config c;
	struct foreign_proc small = named("python", 99), big = named("python", 100);
	struct foreign_proc unknown = named("python", 0), x = named("Xorg", 4000);
	struct foreign_proc hidden = named("", 10);

	(void)state;
	memset(&c, 0, sizeof c);
	c.gpu_unmanaged_min_memory_mb = 100;
	c.gpu_unmanaged_ignore_commands = cmds;
	c.n_gpu_unmanaged_ignore_commands = 2;
	foreign_apply_policy(&c, &small);
	assert_false(small.blocks);
	assert_string_equal(small.exempt, "below [gpu] unmanaged_min_memory_mb");
	foreign_apply_policy(&c, &big);
	assert_true(big.blocks);		/* not less than N */
	foreign_apply_policy(&c, &unknown);
	assert_true(unknown.blocks);		/* memory NVML cannot tell is not small */
	foreign_apply_policy(&c, &x);
	assert_false(x.blocks);
	assert_string_equal(x.exempt, "in [gpu] unmanaged_ignore_commands");
	/* a process this namespace cannot see has no command to match */
	hidden.visible = false;
	hidden.used_mb = 4000;
	foreign_apply_policy(&c, &hidden);
	assert_true(hidden.blocks);
}

static void test_labels(void **state)
{
	struct foreign_proc f = named("python", 642);
	char buf[256];

	(void)state;
	foreign_label(&f, buf, sizeof buf);
	assert_string_equal(buf, "pid=4242 user=bob cmd=python age=2d3h mem=642M");
	f.used_mb = 1536;
	f.age_secs = 3 * 3600 + 120;
	foreign_label(&f, buf, sizeof buf);
	assert_string_equal(buf, "pid=4242 user=bob cmd=python age=3h2m mem=1.5G");
	f.used_mb = 0;
	f.age_secs = 42;
	snprintf(f.cmd, sizeof f.cmd, "evil\x1b[2J");	/* a command name is the user's */
	foreign_label(&f, buf, sizeof buf);
	assert_string_equal(buf, "pid=4242 user=bob cmd=evil\\e[2J age=42s mem=?");
	f.visible = false;
	f.used_mb = 642;
	foreign_label(&f, buf, sizeof buf);
	assert_string_equal(buf, "pid=4242 not visible here mem=642M");
}

static void test_describe_self(void **state)
{
	struct foreign_proc f;
	char buf[256];

	(void)state;
	foreign_describe(getpid(), 10, true, &f);
	assert_true(f.have_uid);
	assert_int_equal(f.uid, getuid());
	assert_string_equal(f.cmd, "test_foreign");
	assert_true(f.age_secs >= 0);
	foreign_label(&f, buf, sizeof buf);
	assert_non_null(strstr(buf, "cmd=test_foreign age="));
	foreign_describe(5000000, 10, false, &f);
	assert_false(f.visible);
	assert_true(f.blocks);
	assert_int_equal(f.user[0], '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_policy_blocks_everything),
		cmocka_unit_test(test_min_memory_and_ignored_commands),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_describe_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
