/* test_config.c — unit tests for src/common/config.c: defaults, where the
 * file is looked for, every key in a full file, every GFLOW_* override and
 * its precedence, and the message for each kind of bad input. Each test
 * works in its own mkdtemp directory and passes its own environment. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#define assert_msg_has(msg, part) do { \
	if (!strstr((msg), (part))) \
		fail_msg("message \"%s\" lacks \"%s\"", (msg), (part)); \
} while (0)

#define MAX_ENV 16

struct fixture {
	char dir[256];		/* mkdtemp; used as XDG_CONFIG_HOME */
	char file[320];		/* dir/gflow/gflow.toml */
	char xdg[300];		/* "XDG_CONFIG_HOME=dir" */
	char *env[MAX_ENV + 1];
	int nenv;
	struct gf_config c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	char sub[300];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/gf-config-test-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(sub, sizeof sub, "%s/gflow", f->dir);
	if (mkdir(sub, 0700))
		return -1;
	snprintf(f->file, sizeof f->file, "%s/gflow.toml", sub);
	snprintf(f->xdg, sizeof f->xdg, "XDG_CONFIG_HOME=%s", f->dir);
	f->env[f->nenv++] = f->xdg;
	*state = f;
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int rc;

	gf_config_free(&f->c);
	rc = nftw(f->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return rc;
}

/* Add "K=V" (a string literal) to the environment passed to the loader. */
static void env(struct fixture *f, char *kv)
{
	assert_true(f->nenv < MAX_ENV);
	f->env[f->nenv++] = kv;
	f->env[f->nenv] = NULL;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/* Write the default config file and load it (no --config). */
static void load_ok(struct fixture *f, const char *text)
{
	struct gf_err e = { "" };

	if (text)
		write_file(f->file, text);
	if (gf_config_load(NULL, f->env, &f->c, &e))
		fail_msg("load failed: %s", e.msg);
}

/* Loading must fail with a message holding every one of parts (NULL-ended). */
static void load_bad(struct fixture *f, const char *text, ...)
{
	struct gf_err e = { "" };
	const char *part;
	va_list ap;

	if (text)
		write_file(f->file, text);
	if (!gf_config_load(NULL, f->env, &f->c, &e))
		fail_msg("accepted: %s", text ? text : "(environment)");
	/* A failed load leaves nothing to free. */
	assert_null(f->c.host);
	assert_null(f->c.path);
	va_start(ap, text);
	while ((part = va_arg(ap, const char *)))
		assert_msg_has(e.msg, part);
	va_end(ap);
}

/* "<file>: line L, column C: " for the fixture's file. */
static const char *where(struct fixture *f, int line, int col)
{
	static char buf[512];

	snprintf(buf, sizeof buf, "%s: line %d, column %d: ", f->file, line, col);
	return buf;
}

/* ---------- defaults and file location ---------- */

static void check_defaults(const struct gf_config *c)
{
	assert_string_equal(c->host, "localhost");
	assert_int_equal(c->port, 59000);
	assert_int_equal(c->gpus_set, 0);
	assert_int_equal(c->strategy, GF_STRATEGY_SEQUENTIAL);
	assert_int_equal(c->gpu_poll_interval_secs, 10);
	assert_int_equal(c->fair_share_enabled, 1);
	assert_int_equal(c->fair_share_half_life_secs, 604800);
	assert_int_equal(c->executor, GF_EXEC_TMUX);
	assert_int_equal(c->n_known_projects, 0);
	assert_int_equal(c->require_project, 0);
	assert_int_equal(c->quota_default_user.max_running_jobs, -1);
	assert_int_equal(c->quota_default_user.max_running_gpus, -1);
	assert_int_equal(c->quota_default_user.max_queued_jobs, -1);
	assert_int_equal(c->quota_default_project.max_running_jobs, -1);
	assert_int_equal(c->n_quota_users, 0);
	assert_int_equal(c->n_quota_projects, 0);
	assert_int_equal(c->notifications_enabled, 0);
	assert_int_equal(c->n_webhooks, 0);
	assert_null(c->timezone);
	assert_true(c->idle_enabled <= 0);	/* -1 before a load: off unless given */
	assert_int_equal(c->idle_after_secs, 7200);
	assert_int_equal(c->idle_warn_before_secs, 900);
	assert_int_equal(c->idle_threshold_util, 5);
	assert_int_equal(c->idle_action, GF_IDLE_WARN);
	assert_int_equal(c->idle_apply_all, 0);
}

static void test_defaults(void **state)
{
	struct fixture *f = *state;
	struct gf_config c;

	gf_config_defaults(&c);
	check_defaults(&c);
	assert_null(c.path);
	gf_config_free(&c);
	/* No file: defaults, and no path. */
	load_ok(f, NULL);
	check_defaults(&f->c);
	assert_null(f->c.path);
}

static void test_empty_file(void **state)
{
	struct fixture *f = *state;

	load_ok(f, "# nothing set\n");
	check_defaults(&f->c);
	assert_string_equal(f->c.path, f->file);
}

static void test_full_file(void **state)
{
	struct fixture *f = *state;
	const struct gf_config *c = &f->c;

	load_ok(f, "timezone = \"Asia/Shanghai\"\n"
		   "[daemon]\n"
		   "host = \"0.0.0.0\"\n"
		   "port = 6000\n"
		   "gpus = [0, 2]\n"
		   "gpu_allocation_strategy = \"random\"\n"
		   "gpu_poll_interval_secs = 3\n"
		   "[daemon.fair_share]\n"
		   "enabled = true\n"
		   "half_life_secs = 3600\n"
		   "[executor]\n"
		   "type = \"process\"\n"
		   "[projects]\n"
		   "known_projects = [\"vision\", \"nlp\"]\n"
		   "require_project = true\n"
		   "[quota.default_user]\n"
		   "max_running_jobs = 4\n"
		   "max_running_gpus = 2\n"
		   "max_queued_jobs = 100\n"
		   "[quota.default_project]\n"
		   "max_running_gpus = 8\n"
		   "[quota.users.alice]\n"
		   "max_running_gpus = 4\n"
		   "[quota.users.bob]\n"
		   "max_running_jobs = -1\n"
		   "max_gpu_hours_per_day = 24\n"
		   "[quota.projects.vision]\n"
		   "max_queued_jobs = 10\n"
		   "[notifications]\n"
		   "enabled = true\n"
		   "[[notifications.webhooks]]\n"
		   "url = \"https://example.com/hook\"\n"
		   "events = [\"job_completed\", \"job_failed\"]\n"
		   "filter_users = [\"alice\"]\n"
		   "[[notifications.webhooks]]\n"
		   "url = \"http://localhost:9000/\"\n");
	assert_string_equal(c->path, f->file);
	assert_string_equal(c->timezone, "Asia/Shanghai");
	assert_string_equal(c->host, "0.0.0.0");
	assert_int_equal(c->port, 6000);
	assert_int_equal(c->gpus_set, 1);
	assert_int_equal(c->gpus_mask, 0x5);
	assert_string_equal(c->gpus_source, "config");
	assert_int_equal(c->strategy, GF_STRATEGY_RANDOM);
	assert_int_equal(c->gpu_poll_interval_secs, 3);
	assert_int_equal(c->fair_share_enabled, 1);
	assert_int_equal(c->fair_share_half_life_secs, 3600);
	assert_int_equal(c->executor, GF_EXEC_PROCESS);
	assert_int_equal(c->n_known_projects, 2);
	assert_string_equal(c->known_projects[0], "vision");
	assert_string_equal(c->known_projects[1], "nlp");
	assert_int_equal(c->require_project, 1);
	assert_int_equal(c->quota_default_user.max_running_jobs, 4);
	assert_int_equal(c->quota_default_user.max_running_gpus, 2);
	assert_int_equal(c->quota_default_user.max_queued_jobs, 100);
	assert_int_equal(c->quota_default_project.max_running_gpus, 8);
	assert_int_equal(c->quota_default_project.max_running_jobs, -1);
	assert_int_equal(c->n_quota_users, 2);
	assert_string_equal(c->quota_users[0].name, "alice");
	/* Fields a user entry leaves out come from [quota.default_user]. */
	assert_int_equal(c->quota_users[0].q.max_running_gpus, 4);
	assert_int_equal(c->quota_users[0].q.max_running_jobs, 4);
	assert_int_equal(c->quota_users[0].q.max_queued_jobs, 100);
	assert_string_equal(c->quota_users[1].name, "bob");
	assert_int_equal(c->quota_users[1].q.max_running_jobs, -1);
	assert_int_equal(c->quota_users[1].q.max_gpu_hours_per_day, 24);
	assert_int_equal(c->quota_users[0].q.max_gpu_hours_per_day, -1);
	assert_int_equal(c->quota_default_user.max_gpu_hours_per_day, -1);
	assert_int_equal(c->n_quota_projects, 1);
	assert_int_equal(c->quota_projects[0].q.max_queued_jobs, 10);
	assert_int_equal(c->quota_projects[0].q.max_running_gpus, 8);
	assert_ptr_equal(gf_config_user_quota(c, "alice"), &c->quota_users[0].q);
	assert_ptr_equal(gf_config_user_quota(c, "carol"), &c->quota_default_user);
	assert_ptr_equal(gf_config_project_quota(c, "vision"), &c->quota_projects[0].q);
	assert_ptr_equal(gf_config_project_quota(c, NULL), &c->quota_default_project);
	assert_int_equal(c->notifications_enabled, 1);
	assert_int_equal(c->n_webhooks, 2);
	assert_string_equal(c->webhooks[0].url, "https://example.com/hook");
	assert_int_equal(c->webhooks[0].n_events, 2);
	assert_string_equal(c->webhooks[0].events[1], "job_failed");
	assert_int_equal(c->webhooks[0].n_filter_users, 1);
	assert_string_equal(c->webhooks[0].filter_users[0], "alice");
	assert_string_equal(c->webhooks[1].url, "http://localhost:9000/");
	assert_int_equal(c->webhooks[1].n_events, 0);
}

static void test_inline_webhooks_and_dotted_keys(void **state)
{
	struct fixture *f = *state;

	load_ok(f, "daemon.port = 7000\n"
		   "daemon.fair_share.enabled = true\n"
		   "[notifications]\n"
		   "webhooks = [{ url = \"https://a.example/\", events = [\"job_started\"] }]\n");
	assert_int_equal(f->c.port, 7000);
	assert_int_equal(f->c.fair_share_enabled, 1);
	assert_int_equal(f->c.n_webhooks, 1);
	assert_string_equal(f->c.webhooks[0].events[0], "job_started");
}

/* Every key of the notifications reference, as documented. */
static void test_notification_targets(void **state)
{
	struct fixture *f = *state;
	struct gf_config *c = &f->c;

	load_ok(f, "[notifications]\n"
		   "enabled = true\n"
		   "max_concurrent_deliveries = 16\n"
		   "[[notifications.webhooks]]\n"
		   "url = \"https://api.example.com/gflow/events\"\n"
		   "events = [\"*\"]\n"
		   "filter_users = [\"alice\", \"bob\"]\n"
		   "headers = { Authorization = \"Bearer token123\", X-Team = \"ml\" }\n"
		   "timeout_secs = 5\n"
		   "max_retries = 0\n"
		   "[[notifications.emails]]\n"
		   "smtp_url = \"smtps://user:pass@smtp.example.com:465\"\n"
		   "from = \"gflow <noreply@example.com>\"\n"
		   "to = [\"alice@example.com\", \"ML On-call <ml-oncall@example.com>\"]\n"
		   "events = [\"job_failed\", \"job_timeout\"]\n"
		   "filter_users = [\"alice\"]\n"
		   "subject_prefix = \"[gflow-prod]\"\n"
		   "timeout_secs = 10\n"
		   "max_retries = 3\n"
		   "[[notifications.emails]]\n"
		   "smtp_url = \"smtp://user:pass@smtp.example.com:587?tls=required\"\n"
		   "from = \"noreply@example.com\"\n");
	assert_int_equal(c->notify_max_concurrent, 16);
	assert_int_equal(c->n_webhooks, 1);
	assert_int_equal(c->webhooks[0].n_events, 0);	/* "*": every event */
	assert_int_equal(c->webhooks[0].n_headers, 2);
	assert_string_equal(c->webhooks[0].header_names[1], "X-Team");
	assert_string_equal(c->webhooks[0].header_values[0], "Bearer token123");
	assert_int_equal(c->webhooks[0].timeout_secs, 5);
	assert_int_equal(c->webhooks[0].max_retries, 0);
	assert_int_equal(c->n_emails, 2);
	assert_string_equal(c->emails[0].from, "gflow <noreply@example.com>");
	assert_int_equal(c->emails[0].n_to, 2);
	assert_int_equal(c->emails[0].n_events, 2);
	assert_string_equal(c->emails[0].subject_prefix, "[gflow-prod]");
	assert_int_equal(c->emails[1].n_to, 0);
	assert_int_equal(c->emails[1].timeout_secs, 10);
	assert_int_equal(c->emails[1].max_retries, 3);
}

static void test_err_notification_targets(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[[notifications.webhooks]]\nurl = \"http://h/\"\nevents = [\"job_done\"]\n",
		 "webhook 1: events", "unknown event 'job_done'", NULL);
	load_bad(f, "[[notifications.webhooks]]\nurl = \"http://h/\"\nevents = []\n", "lists no event", NULL);
	load_bad(f, "[[notifications.webhooks]]\nurl = \"http://h/\"\nheaders = { \"a b\" = \"x\" }\n",
		 "not an HTTP header name", NULL);
	load_bad(f, "[[notifications.webhooks]]\nurl = \"http://h/\"\ntimeout_secs = 0\n", "timeout_secs", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"http://h/\"\nfrom = \"a@b\"\n",
		 "email 1: smtp_url", "smtp:// or smtps://", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"smtp://h?tls=maybe\"\nfrom = \"a@b\"\n",
		 "?tls=required", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"smtp://h\"\n", "from is required", NULL);
	load_bad(f, "[[notifications.emails]]\nfrom = \"a@b\"\n", "smtp_url is required", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"smtp://h\"\nfrom = \"nobody\"\n", "from",
		 "name@host", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"smtp://h\"\nfrom = \"a@b\"\nto = [\"x y@z\"]\n",
		 "to", NULL);
	load_bad(f, "[[notifications.emails]]\nsmtp_url = \"smtp://h\"\nfrom = \"a@b\"\nurl = \"x\"\n",
		 "unknown key 'url'", "smtp_url, from, to", NULL);
	load_bad(f, "[notifications]\nmax_concurrent_deliveries = 0\n", "max_concurrent_deliveries", NULL);
}

static void test_explicit_path(void **state)
{
	struct fixture *f = *state;
	struct gf_err e = { "" };
	char path[400];

	snprintf(path, sizeof path, "%s/other.toml", f->dir);
	write_file(path, "[daemon]\nport = 6111\n");
	write_file(f->file, "[daemon]\nport = 6222\n");
	if (gf_config_load(path, f->env, &f->c, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(f->c.port, 6111);
	assert_string_equal(f->c.path, path);
}

static void test_home_fallback(void **state)
{
	struct fixture *f = *state;
	char home[300], dir[400], file[450];
	struct gf_err e = { "" };
	char *envp[3];

	snprintf(home, sizeof home, "HOME=%s", f->dir);
	snprintf(dir, sizeof dir, "%s/.config", f->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(dir, sizeof dir, "%s/.config/gflow", f->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(file, sizeof file, "%s/gflow.toml", dir);
	write_file(file, "[daemon]\nport = 6333\n");
	/* No XDG_CONFIG_HOME; a relative one is ignored, as XDG says. */
	envp[0] = home;
	envp[1] = "XDG_CONFIG_HOME=relative/dir";
	envp[2] = NULL;
	if (gf_config_load(NULL, envp, &f->c, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(f->c.port, 6333);
	assert_string_equal(f->c.path, file);
}

static void test_gpu_specs_in_file(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *text;
		uint64_t mask;
	} cases[] = {
		{ "[daemon]\ngpus = \"0-3\"\n", 0xF },
		{ "[daemon]\ngpus = \"0-1,3\"\n", 0xB },
		{ "[daemon]\ngpus = \"5\"\n", 0x20 },
		{ "[daemon]\ngpus = \"0, 2\"\n", 0x5 },
		{ "[daemon]\ngpus = \"63\"\n", UINT64_C(1) << 63 },
		{ "[daemon]\ngpus = \"all\"\n", UINT64_MAX },
		{ "[daemon]\ngpus = [7]\n", 0x80 },
		{ "[daemon]\ngpus = []\n", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		load_ok(f, cases[i].text);
		assert_int_equal(f->c.gpus_set, 1);
		if (f->c.gpus_mask != cases[i].mask)
			fail_msg("%s -> %llx", cases[i].text, (unsigned long long)f->c.gpus_mask);
		gf_config_free(&f->c);
	}
}

/* ---------- environment ---------- */

static void test_env_daemon_keys(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_DAEMON__HOST=10.0.0.1");
	env(f, "GFLOW_DAEMON__PORT=6000");
	env(f, "GFLOW_DAEMON__GPUS=0,2");
	env(f, "GFLOW_DAEMON__GPU_ALLOCATION_STRATEGY=random");
	env(f, "GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS=2");
	load_ok(f, NULL);
	assert_string_equal(f->c.host, "10.0.0.1");
	assert_int_equal(f->c.port, 6000);
	assert_int_equal(f->c.gpus_set, 1);
	assert_int_equal(f->c.gpus_mask, 0x5);
	assert_string_equal(f->c.gpus_source, "env GFLOW_DAEMON__GPUS");
	assert_int_equal(f->c.strategy, GF_STRATEGY_RANDOM);
	assert_int_equal(f->c.gpu_poll_interval_secs, 2);
}

static void test_env_nested_fair_share(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_DAEMON__FAIR_SHARE__ENABLED=true");
	env(f, "GFLOW_DAEMON__FAIR_SHARE__HALF_LIFE_SECS=60");
	load_ok(f, NULL);
	assert_int_equal(f->c.fair_share_enabled, 1);
	assert_int_equal(f->c.fair_share_half_life_secs, 60);
}

static void test_env_other_sections(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_EXECUTOR__TYPE=process");
	env(f, "GFLOW_PROJECTS__KNOWN_PROJECTS=a, b ,c");
	env(f, "GFLOW_PROJECTS__REQUIRE_PROJECT=yes");
	env(f, "GFLOW_NOTIFICATIONS__ENABLED=1");
	env(f, "GFLOW_QUOTA__DEFAULT_USER__MAX_RUNNING_JOBS=3");
	env(f, "GFLOW_QUOTA__DEFAULT_PROJECT__MAX_QUEUED_JOBS=9");
	env(f, "GFLOW_QUOTA__USERS__Alice__MAX_RUNNING_GPUS=1");
	env(f, "GFLOW_QUOTA__DEFAULT_PROJECT__MAX_GPU_HOURS_PER_DAY=100");
	env(f, "GFLOW_TIMEZONE=Europe/Paris");
	load_ok(f, NULL);
	assert_int_equal(f->c.quota_default_project.max_gpu_hours_per_day, 100);
	assert_int_equal(f->c.executor, GF_EXEC_PROCESS);
	assert_int_equal(f->c.n_known_projects, 3);
	assert_string_equal(f->c.known_projects[1], "b");
	assert_int_equal(f->c.require_project, 1);
	assert_int_equal(f->c.notifications_enabled, 1);
	assert_int_equal(f->c.quota_default_user.max_running_jobs, 3);
	assert_int_equal(f->c.quota_default_project.max_queued_jobs, 9);
	assert_int_equal(f->c.n_quota_users, 1);
	/* The user name keeps its case; unset fields take the default. */
	assert_string_equal(f->c.quota_users[0].name, "Alice");
	assert_int_equal(f->c.quota_users[0].q.max_running_gpus, 1);
	assert_int_equal(f->c.quota_users[0].q.max_running_jobs, 3);
	assert_string_equal(f->c.timezone, "Europe/Paris");
}

static void test_env_case_insensitive(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_daemon__Port=6100");
	env(f, "GFLOW_Daemon__Fair_Share__Enabled=TRUE");
	env(f, "GFLOW_EXECUTOR__TYPE=Process");
	load_ok(f, NULL);
	assert_int_equal(f->c.port, 6100);
	assert_int_equal(f->c.fair_share_enabled, 1);
	assert_int_equal(f->c.executor, GF_EXEC_PROCESS);
}

static void test_env_bool_forms(void **state)
{
	static char *const on[] = { "GFLOW_PROJECTS__REQUIRE_PROJECT=true", "GFLOW_PROJECTS__REQUIRE_PROJECT=1",
		"GFLOW_PROJECTS__REQUIRE_PROJECT=yes", "GFLOW_PROJECTS__REQUIRE_PROJECT=YES" };
	static char *const off[] = { "GFLOW_PROJECTS__REQUIRE_PROJECT=false", "GFLOW_PROJECTS__REQUIRE_PROJECT=0",
		"GFLOW_PROJECTS__REQUIRE_PROJECT=no" };
	struct fixture *f = *state;
	size_t i;

	write_file(f->file, "[projects]\nrequire_project = true\n");
	for (i = 0; i < 4; i++) {
		f->nenv = 1;
		env(f, on[i]);
		load_ok(f, "[projects]\nrequire_project = false\n");
		assert_int_equal(f->c.require_project, 1);
		gf_config_free(&f->c);
	}
	for (i = 0; i < 3; i++) {
		f->nenv = 1;
		env(f, off[i]);
		load_ok(f, "[projects]\nrequire_project = true\n");
		assert_int_equal(f->c.require_project, 0);
		gf_config_free(&f->c);
	}
}

static void test_env_beats_file(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_DAEMON__PORT=6001");
	env(f, "GFLOW_DAEMON__GPUS=all");
	env(f, "GFLOW_DAEMON__HOST=envhost");
	load_ok(f, "[daemon]\nport = 7001\nhost = \"filehost\"\ngpus = [1]\ngpu_poll_interval_secs = 4\n");
	assert_int_equal(f->c.port, 6001);
	assert_string_equal(f->c.host, "envhost");
	assert_int_equal(f->c.gpus_mask, UINT64_MAX);
	assert_string_equal(f->c.gpus_source, "env GFLOW_DAEMON__GPUS");
	/* What the environment does not set still comes from the file. */
	assert_int_equal(f->c.gpu_poll_interval_secs, 4);
}

static void test_env_unrelated_ignored(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_SOCKET=/tmp/x.sock");
	env(f, "GFLOW_JOB_ID=12");
	env(f, "GFLOW_GPU_IDS=0,1");
	env(f, "NOT_GFLOW__DAEMON__PORT=1");
	env(f, "PATH=/usr/bin");
	load_ok(f, NULL);
	check_defaults(&f->c);
}

/* ---------- checking text before it is written (gflowd init) ---------- */

static void test_check_text(void **state)
{
	static const char good[] = "[daemon]\nhost = \"a\\\"b\"\nport = 6000\ngpus = \"0,2\"\n"
				   "gpu_poll_interval_secs = 3\n[executor]\ntype = \"process\"\n";
	static const char bad[] = "[daemon]\nport = 6000\nbogus = 1\n";
	struct gf_err e;

	(void)state;
	assert_int_equal(gf_config_check_text("/x/gflow.toml", good, strlen(good), &e), 0);
	assert_int_equal(gf_config_check_text("/x/gflow.toml", bad, strlen(bad), &e), -1);
	assert_non_null(strstr(e.msg, "/x/gflow.toml: line 3, column 1"));
	assert_non_null(strstr(e.msg, "unknown key 'bogus'"));
	assert_int_equal(gf_config_check_text("/x/gflow.toml", "port = \"", 8, &e), -1);
	assert_non_null(strstr(e.msg, "/x/gflow.toml"));
}

/* ---------- errors in the file ---------- */

static void test_err_unknown_key(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\nport = 6000\n\nprot = 6001\n", where(f, 4, 1), "unknown key 'prot' in [daemon]",
	    "known keys: host, port, gpus", NULL);
}

static void test_err_unknown_top_level_key(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "timezon = \"UTC\"\n", where(f, 1, 1), "unknown key 'timezon'", "timezone", NULL);
}

static void test_err_unknown_section(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\nport = 1\n[deamon]\nport = 2\n", where(f, 3, 2), "unknown section [deamon]",
	    "[daemon]", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon.fair]\n", where(f, 1, 9), "unknown section [daemon.fair]", "[daemon.fair_share]",
	    NULL);
	gf_config_free(&f->c);
	load_bad(f, "[quota.user.alice]\n", where(f, 1, 8), "unknown section [quota.user]", NULL);
}

static void test_err_wrong_type(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\nhost = \"h\"\n\nport = \"abc\"\n", where(f, 4, 8),
	    "[daemon] port: expected an integer between 1 and 65535, got \"abc\"", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\nhost = 5\n", where(f, 2, 8), "[daemon] host: expected a string, got 5", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon.fair_share]\nenabled = \"yes\"\n", where(f, 2, 11),
	    "[daemon.fair_share] enabled: expected true or false, got \"yes\"", NULL);
	gf_config_free(&f->c);
	load_bad(f, "daemon = 1\n", where(f, 1, 10), "[daemon]: expected a table, got 1", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[projects]\nknown_projects = [\"a\",\n  2]\n", where(f, 3, 3),
	    "[projects] known_projects: expected an array of strings, got 2", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[projects]\nknown_projects = [\"a\", \"a\"]\n", where(f, 2, 24), "'a' is listed twice", NULL);
	gf_config_free(&f->c);
	load_bad(f, "timezone = \"\"\n", where(f, 1, 12), "timezone: must not be empty", NULL);
}

static void test_err_bad_port(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\nport = 0\n", where(f, 2, 8),
	    "[daemon] port: expected an integer between 1 and 65535, got 0", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\nport = 70000\n", where(f, 2, 8), "got 70000", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\nport = 1.5\n", where(f, 2, 8), "got 1.5", NULL);
}

static void test_err_bad_strategy(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\ngpu_allocation_strategy = \"fast\"\n", where(f, 2, 27),
	    "[daemon] gpu_allocation_strategy: expected \"sequential\" or \"random\", got \"fast\"", NULL);
}

static void test_err_bad_executor(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[executor]\ntype = \"docker\"\n", where(f, 2, 8),
	    "[executor] type: expected \"tmux\" or \"process\", got \"docker\"", NULL);
	gf_config_free(&f->c);
	/* The file is exact about case. */
	load_bad(f, "[executor]\ntype = \"TMUX\"\n", where(f, 2, 8), "got \"TMUX\"", NULL);
}

/* [gpu.idle_reclaim]: off unless given; durations; choices. */
static void test_idle_reclaim(void **state)
{
	struct fixture *f = *state;

	load_ok(f, "# nothing\n");
	assert_int_equal(f->c.idle_enabled, 0);
	gf_config_free(&f->c);
	load_ok(f, "[gpu.idle_reclaim]\nafter = \"2s\"\nwarn_before = \"1h30m\"\nthreshold_util = 10\n"
		   "action = \"cancel\"\napply_to = \"all\"\n");
	assert_int_equal(f->c.idle_enabled, 1);
	assert_int_equal(f->c.idle_after_secs, 2);
	assert_int_equal(f->c.idle_warn_before_secs, 5400);
	assert_int_equal(f->c.idle_threshold_util, 10);
	assert_int_equal(f->c.idle_action, GF_IDLE_CANCEL);
	assert_int_equal(f->c.idle_apply_all, 1);
	gf_config_free(&f->c);
	load_ok(f, "[gpu.idle_reclaim]\nenabled = false\nafter = \"1h\"\n");
	assert_int_equal(f->c.idle_enabled, 0);
	gf_config_free(&f->c);
	load_ok(f, "[gpu]\nidle_reclaim = { after = \"3m\" }\n");
	assert_int_equal(f->c.idle_enabled, 1);
	assert_int_equal(f->c.idle_after_secs, 180);
	gf_config_free(&f->c);
	load_ok(f, "[gpu.idle_reclaim]\naction = \"requeue\"\n");
	assert_int_equal(f->c.idle_action, GF_IDLE_REQUEUE);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\naction = \"kill\"\n", "[gpu.idle_reclaim] action", "\"kill\"", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\nafter = \"soon\"\n", "[gpu.idle_reclaim] after", "'soon'", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\nafter = 0\n", "[gpu.idle_reclaim] after", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\nwarn_before = \"0s\"\n", "[gpu.idle_reclaim] warn_before", "positive",
	    NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\nthreshold_util = 101\n", "[gpu.idle_reclaim] threshold_util", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\napply_to = \"others\"\n", "[gpu.idle_reclaim] apply_to", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[gpu.idle_reclaim]\nidle = 1\n", "unknown key 'idle' in [gpu.idle_reclaim]", "after", NULL);
	gf_config_free(&f->c);
	env(f, "GFLOW_GPU__IDLE_RECLAIM__AFTER=10s");
	load_ok(f, "# nothing\n");
	assert_int_equal(f->c.idle_enabled, 1);
	assert_int_equal(f->c.idle_after_secs, 10);
}

static void test_err_poll_interval_zero(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\ngpu_poll_interval_secs = 0\n", where(f, 2, 26),
	    "[daemon] gpu_poll_interval_secs: expected an integer of at least 1, got 0", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon.fair_share]\nhalf_life_secs = 0\n", where(f, 2, 18),
	    "[daemon.fair_share] half_life_secs: expected an integer of at least 1, got 0", NULL);
}

static void test_err_bad_gpus(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\ngpus = [0, 64]\n", where(f, 2, 12),
	    "[daemon] gpus: expected GPU indices between 0 and 63, got 64", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = [1, 1]\n", where(f, 2, 12), "GPU 1 is listed twice", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = \"0-x\"\n", where(f, 2, 8), "invalid GPU list '0-x': 'x' is not a GPU index",
	    NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = \"3-1\"\n", where(f, 2, 8), "range '3-1' runs backwards", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = \"0,64\"\n", where(f, 2, 8), "GPU index 64 is out of range (0..63)", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = \"0,,1\"\n", where(f, 2, 8), "'' is not a GPU index", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = \"\"\n", where(f, 2, 8), "invalid GPU list ''", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\ngpus = true\n", where(f, 2, 8), "expected an array of GPU indices", NULL);
}

static void test_err_bad_quota(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[quota.users.alice]\nmax_running_jobs = -2\n", where(f, 2, 20),
	    "[quota.users.alice] max_running_jobs: expected a non-negative integer or -1 (unlimited), got -2",
	    NULL);
	gf_config_free(&f->c);
	load_bad(f, "[quota.default_user]\nmax_jobs = 1\n", where(f, 2, 1),
	    "unknown key 'max_jobs' in [quota.default_user]", "max_running_jobs", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[quota.users]\nalice = 3\n", where(f, 2, 9), "[quota.users.alice]: expected a table, got 3",
	    NULL);
}

static void test_err_bad_webhooks(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[[notifications.webhooks]]\nevents = [\"job_failed\"]\n", where(f, 1, 17),
	    "[notifications] webhooks: webhook 1: url is required", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[[notifications.webhooks]]\nurl = \"https://x/\"\n[[notifications.webhooks]]\nurl = \"ftp://x\"\n",
	    where(f, 4, 7), "webhook 2: url: expected an http:// or https:// URL, got \"ftp://x\"", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[[notifications.webhooks]]\nurl = \"https://x/\"\n  secret = 1\n", where(f, 3, 3),
	    "webhook 1: unknown key 'secret'", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[notifications]\nwebhooks = \"https://x/\"\n", where(f, 2, 12),
	    "expected an array of tables", NULL);
}

static void test_err_toml_syntax(void **state)
{
	struct fixture *f = *state;

	load_bad(f, "[daemon]\nport = 6000\nhost = \"unterminated\n", where(f, 3, 21),
	    "newline in a single-line string", NULL);
	gf_config_free(&f->c);
	load_bad(f, "[daemon]\nport = 1\nport = 2\n", where(f, 3, 1), "duplicate key 'port'", NULL);
}

static void test_err_missing_explicit_file(void **state)
{
	struct fixture *f = *state;
	struct gf_err e = { "" };
	char path[400];

	snprintf(path, sizeof path, "%s/nope.toml", f->dir);
	assert_int_equal(gf_config_load(path, f->env, &f->c, &e), -1);
	assert_msg_has(e.msg, "cannot read config file");
	assert_msg_has(e.msg, path);
	assert_msg_has(e.msg, "No such file or directory");
}

static void test_err_config_is_directory(void **state)
{
	struct fixture *f = *state;
	struct gf_err e = { "" };

	assert_int_equal(mkdir(f->file, 0700), 0);
	assert_int_equal(gf_config_load(NULL, f->env, &f->c, &e), -1);
	assert_msg_has(e.msg, "it is a directory");
	rmdir(f->file);
}

/* ---------- errors in the environment ---------- */

static void test_err_env_bad_value(void **state)
{
	struct fixture *f = *state;

	env(f, "GFLOW_DAEMON__PORT=abc");
	load_bad(f, NULL, "environment GFLOW_DAEMON__PORT: [daemon] port: expected an integer between 1 and 65535, "
			  "got \"abc\"", NULL);
}

static void test_err_env_bad_values(void **state)
{
	static const struct {
		char *kv;
		const char *words;
	} cases[] = {
		{ "GFLOW_DAEMON__PORT=", "got \"\"" },
		{ "GFLOW_DAEMON__PORT=99999", "got \"99999\"" },
		{ "GFLOW_DAEMON__FAIR_SHARE__ENABLED=maybe", "expected true or false (or 1/0, yes/no), got \"maybe\"" },
		{ "GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS=0", "expected an integer of at least 1, got \"0\"" },
		{ "GFLOW_DAEMON__GPUS=0-", "invalid GPU list '0-'" },
		{ "GFLOW_DAEMON__GPU_ALLOCATION_STRATEGY=best", "got \"best\"" },
		{ "GFLOW_EXECUTOR__TYPE=ssh", "expected \"tmux\" or \"process\", got \"ssh\"" },
		{ "GFLOW_QUOTA__USERS__bob__MAX_QUEUED_JOBS=x", "[quota.users.bob] max_queued_jobs" },
		{ "GFLOW_NOTIFICATIONS__WEBHOOKS=x", "webhooks can only be set in the config file" },
		{ "GFLOW_PROJECTS__KNOWN_PROJECTS=a,,b", "entries must not be empty" },
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		f->nenv = 1;
		env(f, cases[i].kv);
		load_bad(f, NULL, "environment GFLOW_", cases[i].words, NULL);
		gf_config_free(&f->c);
	}
}

static void test_err_env_unknown_variable(void **state)
{
	static const struct {
		char *kv;
		const char *words;
	} cases[] = {
		{ "GFLOW_DAEMON__PROT=1", "GFLOW_DAEMON__PROT: [daemon] has no key 'prot'" },
		{ "GFLOW_FOO__BAR=1", "GFLOW_FOO__BAR: there is no section [foo]" },
		{ "GFLOW_DAEMON__=1", "GFLOW_DAEMON__: expected GFLOW_<SECTION>__<KEY>" },
		{ "GFLOW_QUOTA__USERS__bob__MAX=1", "[quota.users.bob] has no key 'max'" },
		{ "GFLOW_QUOTA__DEFAULT_USER__JOBS=1", "[quota.default_user] has no key 'jobs'" },
		{ "GFLOW_DAEMON__FAIR_SHARE__X__Y=1", "there is no section [daemon.fair_share.x]" },
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		f->nenv = 1;
		env(f, cases[i].kv);
		load_bad(f, NULL, "unknown config variable", cases[i].words, NULL);
		gf_config_free(&f->c);
	}
}

static void test_timezone(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;

	assert_int_equal(gf_timezone_check("UTC", &e), 0);
	assert_int_equal(gf_timezone_check("local", &e), 0);
	assert_int_equal(gf_timezone_check("Europe/Paris", &e), 0);
	assert_int_equal(gf_timezone_check("Mars/Olympus", &e), -1);
	assert_msg_has(e.msg, "'Mars/Olympus' is not a time zone this machine knows");
	assert_int_equal(gf_timezone_check("../etc/passwd", &e), -1);
	assert_int_equal(gf_timezone_check("/etc/localtime", &e), -1);
	assert_int_equal(gf_timezone_check("Europe", &e), -1);	/* a directory */
	load_bad(f, "timezone = \"Mars/Olympus\"\n", "line 1", "timezone", "Mars/Olympus", NULL);
	load_ok(f, "timezone = \"UTC\"\n");
	assert_string_equal(f->c.timezone, "UTC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timezone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_webhooks_and_dotted_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_explicit_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_home_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_specs_in_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_daemon_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_nested_fair_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_other_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_case_insensitive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_bool_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_beats_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_unrelated_ignored, setup, teardown),
		cmocka_unit_test(test_check_text),
		cmocka_unit_test_setup_teardown(test_err_unknown_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_unknown_top_level_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_unknown_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_wrong_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_strategy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_executor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_reclaim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_poll_interval_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_gpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_bad_webhooks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_toml_syntax, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_missing_explicit_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_config_is_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_env_bad_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_env_bad_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_env_unknown_variable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notification_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_notification_targets, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
