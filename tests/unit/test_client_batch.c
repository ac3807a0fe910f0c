/* test_client_batch.c — gbatch without a daemon: options and their
 * aliases, script detection and "# GFLOW" directives, array and sweep
 * expansion into job specs, validation messages, dry-run text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "command.h"
#include "execlimit.h"

#define NOW ((time_t)1700000000)

static char tmpdir[256];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/gflow-test-batch-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const char *text, int mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, (mode_t)mode);
}

static struct batch_ctx ctx_of(const char *conda)
{
	static char *env[] = { "HOME=/home/alice", "PATH=/usr/bin", NULL };
	struct batch_ctx c = { NOW, NULL, NULL, env, 0, 0, NULL };

	c.cwd = tmpdir;
	c.conda_env = conda;
	return c;
}

/* Parse a NULL-terminated gbatch command line (without the program). */
static int parse_with(const struct batch_ctx *ctx, struct batch_opts *o,
    struct gf_err *e, const char *first, ...)
{
	static char *argv[64];
	const char *a;
	va_list ap;
	int argc = 0;

	argv[argc++] = "gbatch";
	va_start(ap, first);
	for (a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	e->msg[0] = '\0';
	return batch_parse(argc, argv, ctx, o, e);
}

#define PARSE(o, e, ...) parse_with(&ctx, (o), (e), __VA_ARGS__, NULL)

/* The single job spec of a request. */
static json_t *only_spec(json_t *body)
{
	json_t *jobs = json_object_get(body, "jobs");

	assert_int_equal(json_array_size(jobs), 1);
	return json_array_get(jobs, 0);
}

static json_int_t spec_int(json_t *spec, const char *key)
{
	json_t *v = json_object_get(spec, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static const char *spec_str(json_t *spec, const char *key)
{
	json_t *v = json_object_get(spec, key);

	assert_true(json_is_string(v));
	return json_string_value(v);
}

static void assert_argv(json_t *cmd, const char *const *want, size_t n)
{
	size_t i;

	assert_int_equal(json_array_size(cmd), n);
	for (i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_array_get(cmd, i)),
		    want[i]);
}

/* ---------- options ---------- */

static void test_plain_command(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *spec;
	const char *want[] = { "python", "train.py", "--lr", "0.1" };

	(void)state;
	assert_int_equal(PARSE(&o, &e, "python", "train.py", "--lr", "0.1"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	spec = only_spec(body);
	assert_argv(json_object_get(spec, "command"), want, 4);
	assert_string_equal(spec_str(spec, "name"), "python");
	/* nothing given: only name and command are sent */
	assert_int_equal(json_object_size(spec), 2);
	assert_string_equal(json_string_value(json_object_get(body, "cwd")),
	    tmpdir);
	assert_int_equal(json_array_size(json_object_get(body, "env")), 2);
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(body, "env"), 0)), "HOME=/home/alice");
	assert_true(json_is_false(json_object_get(body, "dry_run")));
	json_decref(body);
	batch_opts_free(&o);
}

static void test_every_flag(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *spec, *deps, *on;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gpus", "2", "--shared",
	    "--gpu-memory", "20G", "--memory", "1024M", "--time", "1:30:00",
	    "--priority", "50", "--name", "run", "--project", "ml",
	    "--conda-env", "torch", "--depends-on", "@~1", "--no-auto-cancel",
	    "--max-retries", "3", "--max-concurrent", "4", "--begin", "now+10m",
	    "--hold", "--notify-email", "a@b.org", "--notify-on",
	    "job_failed,job_timeout", "--dry-run", "--config", "/etc/x.toml",
	    "python", "t.py"), 0);
	body = batch_request(&o, &ctx, &e);
	spec = only_spec(body);
	assert_int_equal(spec_int(spec, "gpus"), 2);
	assert_true(json_is_true(json_object_get(spec, "shared")));
	assert_int_equal(spec_int(spec, "gpu_memory_mb"), 20480);
	assert_int_equal(spec_int(spec, "memory_mb"), 1024);
	assert_int_equal(spec_int(spec, "time_limit_secs"), 5400);
	assert_int_equal(spec_int(spec, "priority"), 50);
	assert_string_equal(spec_str(spec, "name"), "run");
	assert_string_equal(spec_str(spec, "project"), "ml");
	assert_string_equal(spec_str(spec, "conda_env"), "torch");
	deps = json_object_get(spec, "depends_on");
	assert_int_equal(json_array_size(deps), 1);
	assert_string_equal(json_string_value(json_array_get(deps, 0)), "@~1");
	assert_string_equal(spec_str(spec, "dep_mode"), "all");
	assert_true(json_is_false(json_object_get(spec, "auto_cancel")));
	assert_int_equal(spec_int(spec, "max_retries"), 3);
	assert_int_equal(spec_int(spec, "max_concurrent"), 4);
	assert_int_equal(spec_int(spec, "begin_at"), NOW + 600);
	assert_true(json_is_true(json_object_get(spec, "hold")));
	assert_string_equal(spec_str(spec, "notify_email"), "a@b.org");
	on = json_object_get(spec, "notify_on");
	assert_string_equal(json_string_value(on), "job_failed,job_timeout");
	assert_true(json_is_true(json_object_get(body, "dry_run")));
	assert_string_equal(o.config, "/etc/x.toml");
	json_decref(body);
	batch_opts_free(&o);
}

static void test_aliases(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gres", "gpu:3", "--max-gpu-mem",
	    "1G", "--max-mem", "2G", "--time-limit", "10", "--nice", "7",
	    "-J", "j1", "-P", "p1", "--dependency", "42", "x"), 0);
	assert_int_equal(o.gpus, 3);
	assert_int_equal(o.gpu_memory_mb, 1024);
	assert_int_equal(o.memory_mb, 2048);
	assert_int_equal(o.time_limit_secs, 600);
	assert_int_equal(o.priority, 7);
	assert_string_equal(o.name, "j1");
	assert_string_equal(o.project, "p1");
	assert_int_equal(json_integer_value(json_array_get(o.depends_on, 0)),
	    42);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--gres=2", "--max-gpu-memory=512",
	    "--max-memory=3G", "--timelimit=5:00", "--job-name=j2",
	    "--project=p2", "x"), 0);
	assert_int_equal(o.gpus, 2);
	assert_int_equal(o.gpu_memory_mb, 512);
	assert_int_equal(o.memory_mb, 3072);
	assert_int_equal(o.time_limit_secs, 300);
	assert_string_equal(o.name, "j2");
	assert_string_equal(o.project, "p2");
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "-Jglued", "--gres", "gpu", "x"), 0);
	assert_string_equal(o.name, "glued");
	assert_int_equal(o.gpus, 1);
	batch_opts_free(&o);
}

static void test_dependency_lists(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *d;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--depends-on-all", "1-3,@", "x"), 0);
	d = o.depends_on;
	assert_int_equal(json_array_size(d), 4);
	assert_int_equal(json_integer_value(json_array_get(d, 2)), 3);
	assert_string_equal(json_string_value(json_array_get(d, 3)), "@");
	assert_string_equal(o.dep_mode, "all");
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--depends-on-any", "4,5", "x"), 0);
	assert_string_equal(o.dep_mode, "any");
	assert_int_equal(json_array_size(o.depends_on), 2);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--depends-on", "1,2", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'1,2'"));
	batch_opts_free(&o);
}

static void test_bad_values(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--bogus", "x"), EXIT_USAGE);
	assert_string_equal(e.msg, "unknown option '--bogus'");
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--gpus", "-1", "x"), EXIT_USAGE);
	assert_true(strncmp(e.msg, "invalid GPU count '-1'", 22) == 0);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--gres", "tpu:1", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'tpu:1'"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--time", "5x", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'5x'"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--memory", "lots", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--memory"));
	assert_non_null(strstr(e.msg, "'lots'"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--priority", "256", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "priority '256'"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--name", "", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "job name"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--notify-email", "nobody", "x"),
	    EXIT_USAGE);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--notify-on", "job_failed,,x", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "notification events"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--gpus"), EXIT_USAGE);
	assert_string_equal(e.msg, "option '--gpus' needs a value");
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--shared=yes", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "takes no value"));
	batch_opts_free(&o);
}

static void test_shared_needs_memory(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "--shared", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--shared needs --gpu-memory"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--shared", "--gpu-memory", "4G", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--gpus 1"));
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "--shared",
	    "--max-gpu-mem", "4G", "x"), 0);
	batch_opts_free(&o);
}

static void test_empty_command(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	assert_int_equal(parse_with(&ctx, &o, &e, NULL), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "no command given"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--gpus", "1"), EXIT_USAGE);
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "--"), EXIT_USAGE);
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, ""), EXIT_USAGE);
	assert_string_equal(e.msg, "empty command");
	batch_opts_free(&o);
}

static void test_options_stop_at_command(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body;
	const char *want1[] = { "python", "t.py", "--gpus", "4", "--bogus" };
	const char *want2[] = { "--weird-program", "-x" };

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "python", "t.py",
	    "--gpus", "4", "--bogus"), 0);
	assert_int_equal(o.gpus, 1);
	body = batch_request(&o, &ctx, &e);
	assert_argv(json_object_get(only_spec(body), "command"), want1, 5);
	json_decref(body);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--", "--weird-program", "-x"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_argv(json_object_get(only_spec(body), "command"), want2, 2);
	json_decref(body);
	batch_opts_free(&o);
}

static void test_help_and_version(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "--help"), 0);
	assert_true(o.help);
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "-V"), 0);
	assert_true(o.version);
	batch_opts_free(&o);
}

static void test_conda_default(void **state)
{
	struct batch_ctx ctx = ctx_of("myenv");
	struct batch_opts o;
	struct gf_err e;
	json_t *body;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "python", "x.py"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_string_equal(spec_str(only_spec(body), "conda_env"), "myenv");
	json_decref(body);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--conda-env", "other", "python"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_string_equal(spec_str(only_spec(body), "conda_env"), "other");
	json_decref(body);
	batch_opts_free(&o);

	/* scripts do not inherit $CONDA_DEFAULT_ENV */
	write_file("c.sh", "echo hi\n", 0644);
	assert_int_equal(PARSE(&o, &e, "c.sh"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_null(json_object_get(only_spec(body), "conda_env"));
	json_decref(body);
	batch_opts_free(&o);
}

/* ---------- scripts and directives ---------- */

static void test_script_detection(void **state)
{
	char *abs = NULL, expect[512];
	struct gf_err e;

	(void)state;
	write_file("a.sh", "echo a\n", 0644);
	write_file("runme", "#!/usr/bin/env python3\nprint(1)\n", 0755);
	write_file("data", "just data\n", 0644);
	mkdir("/tmp/gflow-test-batch-dir.sh", 0700);

	assert_int_equal(batch_detect_script("a.sh", tmpdir, &abs, &e), 1);
	snprintf(expect, sizeof expect, "%s/a.sh", tmpdir);
	assert_string_equal(abs, expect);
	free(abs);
	assert_int_equal(batch_detect_script("runme", tmpdir, &abs, &e), 1);
	free(abs);
	snprintf(expect, sizeof expect, "%s/runme", tmpdir);
	assert_int_equal(batch_detect_script(expect, "/", &abs, &e), 1);
	assert_string_equal(abs, expect);
	free(abs);
	assert_int_equal(batch_detect_script("data", tmpdir, &abs, &e), 0);
	assert_null(abs);
	assert_int_equal(batch_detect_script("python", tmpdir, &abs, &e), 0);
	assert_int_equal(batch_detect_script("nothere.sh", tmpdir, &abs, &e), 0);
	assert_int_equal(batch_detect_script("/tmp/gflow-test-batch-dir.sh",
	    tmpdir, &abs, &e), 0);
	rmdir("/tmp/gflow-test-batch-dir.sh");
}

static void test_directives_both_forms(void **state)
{
	struct batch_directive *d;
	struct gf_err e;
	size_t n;
	const char *text =
	    "#!/bin/bash\n"
	    "# GFLOW --gpus=2\n"
	    "# GFLOW --time 1:00:00\n"
	    "#GFLOW --memory 4G --shared   # trailing comment\n"
	    "  #  GFLOW --project \"my proj\"\n"
	    "## GFLOW --priority 99\n"
	    "# GFLOWX --priority 98\n"
	    "echo '# GFLOW --gpus 7'\n";

	(void)state;
	assert_int_equal(batch_read_directives(text, "t.sh", &d, &n, &e), 0);
	assert_int_equal(n, 5);
	assert_int_equal(d[0].id, BO_GPUS);
	assert_string_equal(d[0].val, "2");
	assert_int_equal(d[0].line, 2);
	assert_int_equal(d[1].id, BO_TIME);
	assert_string_equal(d[1].val, "1:00:00");
	assert_int_equal(d[2].id, BO_MEMORY);
	assert_string_equal(d[2].val, "4G");
	assert_int_equal(d[3].id, BO_SHARED);
	assert_null(d[3].val);
	assert_int_equal(d[3].line, 4);
	assert_int_equal(d[4].id, BO_PROJECT);
	assert_string_equal(d[4].val, "my proj");
	batch_directives_free(d, n);
}

static void test_directive_errors(void **state)
{
	struct batch_directive *d;
	struct gf_err e;
	size_t n;

	(void)state;
	assert_int_equal(batch_read_directives("#!/bin/sh\n\n# GFLOW --bogus 1\n",
	    "job.sh", &d, &n, &e), -1);
	assert_true(strncmp(e.msg, "job.sh:3: unknown directive '--bogus'",
	    37) == 0);
	assert_null(d);
	/* a real gbatch flag that is not a directive */
	assert_int_equal(batch_read_directives("# GFLOW --array 1-3\n", "j.sh",
	    &d, &n, &e), -1);
	assert_true(strncmp(e.msg, "j.sh:1: unknown directive '--array'",
	    35) == 0);
	assert_int_equal(batch_read_directives("# GFLOW --name=x\n", "j.sh",
	    &d, &n, &e), -1);
	assert_non_null(strstr(e.msg, "'--name'"));
	assert_int_equal(batch_read_directives("# GFLOW --gpus\n", "j.sh", &d,
	    &n, &e), -1);
	assert_string_equal(e.msg, "j.sh:1: directive '--gpus' needs a value");
	assert_int_equal(batch_read_directives("# GFLOW --shared=1\n", "j.sh",
	    &d, &n, &e), -1);
	assert_non_null(strstr(e.msg, "takes no value"));
	assert_int_equal(batch_read_directives("# GFLOW -J x\n", "j.sh", &d, &n,
	    &e), -1);
	assert_non_null(strstr(e.msg, "'-J'"));
	assert_int_equal(batch_read_directives("# GFLOW --project 'open\n",
	    "j.sh", &d, &n, &e), -1);
	assert_non_null(strstr(e.msg, "unclosed quote"));
}

/* --param-file CSV: a header and rows; errors name file and line. The
 * unclosed quote after a complete field leaked once (found by fuzzing). */
static void test_param_csv(void **state)
{
	struct sweep_dim d;
	struct gf_err e;

	(void)state;
	assert_int_equal(sweep_param_csv("lr,bs\n0.1,32\n\"0,01\",64\n", "p.csv", &d, &e), 0);
	assert_int_equal(d.nkeys, 2);
	assert_int_equal(d.nrows, 2);
	assert_string_equal(d.keys[1], "bs");
	assert_string_equal(d.vals[2], "0,01");
	assert_string_equal(d.vals[3], "64");
	for (size_t i = 0; i < d.nkeys; i++)
		free(d.keys[i]);
	for (size_t i = 0; i < d.nkeys * d.nrows; i++)
		free(d.vals[i]);
	free(d.keys);
	free(d.vals);
	assert_int_equal(sweep_param_csv("\x0e,\";", "p.csv", &d, &e), -1);
	assert_string_equal(e.msg, "p.csv:1: unclosed quote");
	assert_int_equal(sweep_param_csv("lr\n1\n2,3\n", "p.csv", &d, &e), -1);
	assert_string_equal(e.msg, "p.csv:3: expected 1 fields, found 2");
	assert_int_equal(sweep_param_csv("1bad\n1\n", "p.csv", &d, &e), -1);
	assert_non_null(strstr(e.msg, "bad column name '1bad'"));
}

static void test_all_directive_flags(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *spec;

	(void)state;
	write_file("all.sh",
	    "#!/bin/bash\n"
	    "# GFLOW --gpus 1\n"
	    "# GFLOW --shared\n"
	    "# GFLOW --time=2:00:00\n"
	    "# GFLOW --memory=4G\n"
	    "# GFLOW --gpu-memory=20G\n"
	    "# GFLOW --priority=20\n"
	    "# GFLOW --conda-env=myenv\n"
	    "# GFLOW --depends-on=123\n"
	    "# GFLOW --project=ml-research\n"
	    "# GFLOW --notify-email=a@b.c\n"
	    "# GFLOW --notify-on=job_failed\n"
	    "# GFLOW --begin=now+1h\n"
	    "python train.py\n", 0755);
	assert_int_equal(PARSE(&o, &e, "all.sh", "arg1"), 0);
	body = batch_request(&o, &ctx, &e);
	spec = only_spec(body);
	assert_int_equal(spec_int(spec, "gpus"), 1);
	assert_true(json_is_true(json_object_get(spec, "shared")));
	assert_int_equal(spec_int(spec, "time_limit_secs"), 7200);
	assert_int_equal(spec_int(spec, "memory_mb"), 4096);
	assert_int_equal(spec_int(spec, "gpu_memory_mb"), 20480);
	assert_int_equal(spec_int(spec, "priority"), 20);
	assert_string_equal(spec_str(spec, "conda_env"), "myenv");
	assert_int_equal(json_integer_value(json_array_get(
	    json_object_get(spec, "depends_on"), 0)), 123);
	assert_string_equal(spec_str(spec, "project"), "ml-research");
	assert_string_equal(spec_str(spec, "notify_email"), "a@b.c");
	assert_int_equal(spec_int(spec, "begin_at"), NOW + 3600);
	assert_string_equal(spec_str(spec, "name"), "all.sh");
	assert_non_null(strstr(spec_str(spec, "script"), "/all.sh"));
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(spec, "command"), 0)), spec_str(spec, "script"));
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(spec, "command"), 1)), "arg1");
	json_decref(body);
	batch_opts_free(&o);
}

static void test_cli_wins_over_directives(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	write_file("w.sh", "#!/bin/sh\n# GFLOW --gpus 2\n# GFLOW --time 10\n"
	    "# GFLOW --depends-on 5\n# GFLOW --priority 1\n", 0755);
	assert_int_equal(PARSE(&o, &e, "--gpus", "1", "--depends-on-any",
	    "7,8", "w.sh"), 0);
	assert_int_equal(o.gpus, 1);              /* CLI */
	assert_int_equal(o.time_limit_secs, 600); /* directive */
	assert_int_equal(o.priority, 1);          /* directive */
	assert_string_equal(o.dep_mode, "any");   /* CLI */
	assert_int_equal(json_array_size(o.depends_on), 2);
	batch_opts_free(&o);
}

static void test_script_directive_errors_name_file_and_line(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	write_file("bad.sh", "#!/bin/sh\n# GFLOW --gpus 1\n# GFLOW --array 1-3\n",
	    0755);
	assert_int_equal(PARSE(&o, &e, "bad.sh"), EXIT_FAIL);
	assert_true(strncmp(e.msg, "bad.sh:3: unknown directive '--array'",
	    37) == 0);
	batch_opts_free(&o);

	write_file("badval.sh", "#!/bin/sh\n\n# GFLOW --time 5x\n", 0755);
	assert_int_equal(PARSE(&o, &e, "badval.sh"), EXIT_FAIL);
	assert_true(strncmp(e.msg, "badval.sh:3: invalid time limit '5x'",
	    36) == 0);
	batch_opts_free(&o);

	/* a directive that sets --shared without memory fails validation */
	write_file("sh.sh", "#!/bin/sh\n# GFLOW --shared\n# GFLOW --gpus 1\n",
	    0755);
	assert_int_equal(PARSE(&o, &e, "sh.sh"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--gpu-memory"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--gpu-memory", "8G", "sh.sh"), 0);
	batch_opts_free(&o);
}

static void test_script_without_exec_bit(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *cmd;
	char abs[512];

	(void)state;
	write_file("py.sh", "#!/usr/bin/env  python3 \nprint(1)\n", 0644);
	assert_int_equal(PARSE(&o, &e, "py.sh", "x"), 0);
	body = batch_request(&o, &ctx, &e);
	cmd = json_object_get(only_spec(body), "command");
	snprintf(abs, sizeof abs, "%s/py.sh", tmpdir);
	{
		const char *want[] = { "/usr/bin/env", "python3", abs, "x" };

		assert_argv(cmd, want, 4);
	}
	assert_string_equal(spec_str(only_spec(body), "script"), abs);
	json_decref(body);
	batch_opts_free(&o);

	write_file("plain.sh", "echo hi\n", 0600);
	assert_int_equal(PARSE(&o, &e, "plain.sh"), 0);
	body = batch_request(&o, &ctx, &e);
	snprintf(abs, sizeof abs, "%s/plain.sh", tmpdir);
	{
		const char *want[] = { "/bin/sh", abs };

		assert_argv(json_object_get(only_spec(body), "command"), want, 2);
	}
	json_decref(body);
	batch_opts_free(&o);

	/* executable: run directly */
	write_file("x.sh", "#!/bin/bash\n", 0700);
	assert_int_equal(PARSE(&o, &e, "x.sh"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_int_equal(json_array_size(json_object_get(only_spec(body),
	    "command")), 1);
	json_decref(body);
	batch_opts_free(&o);
}

static void test_non_script_file_ignores_directives(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;

	(void)state;
	write_file("notes", "# GFLOW --gpus 9\n", 0644);
	assert_int_equal(PARSE(&o, &e, "notes"), 0);
	assert_null(o.script);
	assert_int_equal(o.gpus, -1);
	batch_opts_free(&o);
}

/* ---------- arrays and sweeps ---------- */

static void test_array_expansion(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *jobs, *j;
	size_t i;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--array", "0-6:3%2", "--gpus", "1",
	    "-J", "task", "python", "t.py", "{notfilled}"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	jobs = json_object_get(body, "jobs");
	assert_int_equal(json_array_size(jobs), 3);
	for (i = 0; i < 3; i++) {
		char name[32];

		j = json_array_get(jobs, i);
		snprintf(name, sizeof name, "task-%zu", i * 3);
		assert_string_equal(spec_str(j, "name"), name);
		assert_int_equal(spec_int(j, "array_task_id"), (json_int_t)i * 3);
		assert_int_equal(spec_int(j, "max_concurrent"), 2);
		assert_int_equal(spec_int(j, "gpus"), 1);
		/* arrays do not template the command */
		assert_string_equal(json_string_value(json_array_get(
		    json_object_get(j, "command"), 2)), "{notfilled}");
	}
	json_decref(body);
	batch_opts_free(&o);

	/* --max-concurrent wins over %K; template names */
	assert_int_equal(PARSE(&o, &e, "--array", "1,3%5", "--max-concurrent",
	    "1", "--name-template", "t{array_task_id}", "x"), 0);
	body = batch_request(&o, &ctx, &e);
	jobs = json_object_get(body, "jobs");
	assert_int_equal(json_array_size(jobs), 2);
	assert_string_equal(spec_str(json_array_get(jobs, 1), "name"), "t3");
	assert_int_equal(spec_int(json_array_get(jobs, 0), "max_concurrent"), 1);
	json_decref(body);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--array", "5-1", "x"), EXIT_USAGE);
	batch_opts_free(&o);
}

static void test_sweep_cartesian_order(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *jobs, *j;
	const char *lr[] = { "0.1", "0.1", "0.1", "0.01", "0.01", "0.01" };
	const char *bs[] = { "32", "64", "128", "32", "64", "128" };
	size_t i;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--param", "lr=0.1,0.01", "--param",
	    "bs=32,64,128", "--max-concurrent", "2", "python", "train.py",
	    "--lr={lr}", "--bs", "{bs}", "{{literal}}"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	jobs = json_object_get(body, "jobs");
	assert_int_equal(json_array_size(jobs), 6);
	for (i = 0; i < 6; i++) {
		char name[32], flag[32];
		json_t *cmd, *params;

		j = json_array_get(jobs, i);
		cmd = json_object_get(j, "command");
		params = json_object_get(j, "params");
		snprintf(name, sizeof name, "python-%zu", i);
		snprintf(flag, sizeof flag, "--lr=%s", lr[i]);
		assert_string_equal(spec_str(j, "name"), name);
		assert_string_equal(json_string_value(json_array_get(cmd, 2)),
		    flag);
		assert_string_equal(json_string_value(json_array_get(cmd, 4)),
		    bs[i]);
		assert_string_equal(json_string_value(json_array_get(cmd, 5)),
		    "{literal}");
		assert_string_equal(spec_str(params, "lr"), lr[i]);
		assert_string_equal(spec_str(params, "bs"), bs[i]);
		assert_int_equal(spec_int(j, "max_concurrent"), 2);
		assert_null(json_object_get(j, "array_task_id"));
	}
	json_decref(body);
	batch_opts_free(&o);
}

static void test_sweep_name_template_and_ranges(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *jobs;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--param", "seed=1:3",
	    "--name-template", "run_{seed}", "echo", "{seed}"), 0);
	body = batch_request(&o, &ctx, &e);
	jobs = json_object_get(body, "jobs");
	assert_int_equal(json_array_size(jobs), 3);
	assert_string_equal(spec_str(json_array_get(jobs, 0), "name"), "run_1");
	assert_string_equal(spec_str(json_array_get(jobs, 2), "name"), "run_3");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_array_get(jobs, 2), "command"), 1)), "3");
	json_decref(body);
	batch_opts_free(&o);

	/* an unknown placeholder is an error naming it */
	assert_int_equal(PARSE(&o, &e, "--param", "a=1,2", "echo", "{b}"), 0);
	assert_null(batch_request(&o, &ctx, &e));
	assert_non_null(strstr(e.msg, "b"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--param", "a=1", "--name-template",
	    "n{zz}", "echo"), 0);
	assert_null(batch_request(&o, &ctx, &e));
	assert_non_null(strstr(e.msg, "--name-template"));
	batch_opts_free(&o);

	/* keys may not repeat; arrays and sweeps do not mix */
	assert_int_equal(PARSE(&o, &e, "--param", "a=1", "--param", "a=2",
	    "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'a'"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--param", "a=1", "--array", "1-2", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--array"));
	batch_opts_free(&o);
}

static void test_param_file(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *jobs, *p;

	(void)state;
	write_file("p.csv", "id,opt\r\n1,\"a,b\"\r\n\r\n2,\"say \"\"hi\"\"\"\r\n",
	    0644);
	assert_int_equal(PARSE(&o, &e, "--param-file", "p.csv", "--param",
	    "k=x,y", "--name-template", "run_{id}_{k}", "echo", "{opt}"), 0);
	body = batch_request(&o, &ctx, &e);
	jobs = json_object_get(body, "jobs");
	/* file rows x k values, the later --param varying fastest */
	assert_int_equal(json_array_size(jobs), 4);
	assert_string_equal(spec_str(json_array_get(jobs, 0), "name"),
	    "run_1_x");
	assert_string_equal(spec_str(json_array_get(jobs, 1), "name"),
	    "run_1_y");
	assert_string_equal(spec_str(json_array_get(jobs, 3), "name"),
	    "run_2_y");
	p = json_object_get(json_array_get(jobs, 0), "params");
	assert_string_equal(spec_str(p, "opt"), "a,b");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_array_get(jobs, 2), "command"), 1)), "say \"hi\"");
	json_decref(body);
	batch_opts_free(&o);

	write_file("bad.csv", "a,b\n1,2\n3\n", 0644);
	assert_int_equal(PARSE(&o, &e, "--param-file", "bad.csv", "x"),
	    EXIT_USAGE);
	assert_string_equal(e.msg, "bad.csv:3: expected 2 fields, found 1");
	batch_opts_free(&o);

	write_file("badkey.csv", "a,1x\n1,2\n", 0644);
	assert_int_equal(PARSE(&o, &e, "--param-file", "badkey.csv", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'1x'"));
	batch_opts_free(&o);

	write_file("empty.csv", "a,b\n", 0644);
	assert_int_equal(PARSE(&o, &e, "--param-file", "empty.csv", "x"),
	    EXIT_USAGE);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--param-file", "missing.csv", "x"),
	    EXIT_USAGE);
	assert_non_null(strstr(e.msg, "missing.csv"));
	batch_opts_free(&o);
}

static void test_set_fields_and_dry_run_text(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *set, *body;
	char *text;

	(void)state;
	assert_int_equal(PARSE(&o, &e, "--gpus", "0", "--time", "90",
	    "--priority", "3", "x"), 0);
	set = batch_set_fields(&o);
	assert_int_equal(json_object_size(set), 3);
	assert_int_equal(spec_int(set, "gpus"), 0);
	assert_int_equal(spec_int(set, "time_limit_secs"), 5400);
	json_decref(set);
	batch_opts_free(&o);

	assert_int_equal(PARSE(&o, &e, "--param", "lr=1,2", "--gpus", "1",
	    "--time", "1:00:00", "python", "t.py", "--lr", "{lr}", "a b"), 0);
	body = batch_request(&o, &ctx, &e);
	text = batch_dry_run_text(json_object_get(body, "jobs"));
	assert_string_equal(text,
	    "Would submit 2 jobs:\n"
	    "  [1] python-0: python t.py --lr 1 'a b' (GPUs: 1, time: 1:00:00, "
	    "lr=1)\n"
	    "  [2] python-1: python t.py --lr 2 'a b' (GPUs: 1, time: 1:00:00, "
	    "lr=2)\n");
	free(text);
	json_decref(body);
	batch_opts_free(&o);
}

/* ---------- bytes, limits, conda ---------- */

static const char *b64_of(json_t *v)
{
	assert_true(json_is_object(v));
	return json_string_value(json_object_get(v, "base64"));
}

static void test_bytes_are_sent_exactly(void **state)
{
	static char *env[] = { "FOO=\xe9t\xe9", "PATH=/usr/bin", NULL };
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body, *cmd;

	(void)state;
	ctx.env = env;
	ctx.cwd = "/w/\xff";
	assert_int_equal(PARSE(&o, &e, "--", "printf", "[%s]\\n", "\xff\xfe",
	    "second"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	cmd = json_object_get(only_spec(body), "command");
	assert_int_equal(json_array_size(cmd), 4);
	assert_string_equal(json_string_value(json_array_get(cmd, 1)), "[%s]\\n");
	assert_string_equal(b64_of(json_array_get(cmd, 2)), "//4=");
	assert_string_equal(json_string_value(json_array_get(cmd, 3)), "second");
	assert_string_equal(b64_of(json_array_get(json_object_get(body, "env"),
	    0)), "Rk9PPel06Q==");
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(body, "env"), 1)), "PATH=/usr/bin");
	assert_string_equal(b64_of(json_object_get(body, "cwd")), "L3cv/w==");
	json_decref(body);
	batch_opts_free(&o);

	/* a program name that is not text: an escaped default name */
	assert_int_equal(PARSE(&o, &e, "/opt/\x1b[2Jrun\xff"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_string_equal(spec_str(only_spec(body), "name"), "\\e[2Jrun\\xff");
	json_decref(body);
	batch_opts_free(&o);

	/* names, projects and sweep values are text */
	assert_int_equal(PARSE(&o, &e, "-J", "n\xff", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "not UTF-8"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "-P", "p\xc2\x9b", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "control characters"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "--param", "k=a,\xff", "x"), EXIT_USAGE);
	assert_non_null(strstr(e.msg, "sweep value '\xff' of 'k' is not UTF-8"));
	batch_opts_free(&o);
}

static void test_exec_limits_checked_before_sending(void **state)
{
	struct batch_ctx ctx = ctx_of(NULL);
	struct batch_opts o;
	struct gf_err e;
	json_t *body;
	char *big = malloc(200000), *args[5001];
	int i;

	(void)state;
	memset(big, 'x', 199999);
	big[199999] = '\0';
	ctx.arg_max = 2 * 1024 * 1024;
	assert_int_equal(PARSE(&o, &e, "echo", "ok", big), 0);
	assert_null(batch_request(&o, &ctx, &e));
	assert_non_null(strstr(e.msg, "argument 2 ('xxxx"));
	assert_non_null(strstr(e.msg, "199999 bytes"));
	assert_non_null(strstr(e.msg, "MAX_ARG_STRLEN"));
	batch_opts_free(&o);
	/* a sweep value can make one job too big */
	big[16] = '\0';
	ctx.arg_max = 20000;
	assert_int_equal(PARSE(&o, &e, "--param", "k=a,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "echo", "{k}{k}"), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	json_decref(body);
	ctx.arg_max = GF_EXEC_RESERVE + 100;
	body = batch_request(&o, &ctx, &e);
	assert_null(body);
	assert_non_null(strstr(e.msg, "ARG_MAX"));
	batch_opts_free(&o);
	/* 5000 small arguments are fine */
	ctx.arg_max = 2 * 1024 * 1024;
	args[0] = "gbatch";
	args[1] = "true";
	for (i = 2; i < 5001; i++)
		args[i] = "12345";
	assert_int_equal(batch_parse(5001, args, &ctx, &o, &e), 0);
	body = batch_request(&o, &ctx, &e);
	assert_non_null(body);
	assert_int_equal(json_array_size(json_object_get(only_spec(body),
	    "command")), 5000);
	json_decref(body);
	batch_opts_free(&o);
	free(big);
}

static void test_conda_needs_conda(void **state)
{
	struct batch_ctx ctx = ctx_of("myenv");
	struct batch_opts o;
	struct gf_err e;
	json_t *body;
	char path[600], bin[300];

	(void)state;
	ctx.no_conda = 1;
	/* explicit: refused at submission */
	assert_int_equal(PARSE(&o, &e, "--conda-env", "other", "python"),
	    EXIT_FAIL);
	assert_non_null(strstr(e.msg, "conda not found for --conda-env other"));
	batch_opts_free(&o);
	write_file("cd.sh", "#!/bin/sh\n# GFLOW --conda-env envd\necho\n",
	    0755);
	assert_int_equal(PARSE(&o, &e, "cd.sh"), EXIT_FAIL);
	assert_non_null(strstr(e.msg, "conda not found for --conda-env envd"));
	batch_opts_free(&o);
	/* implicit $CONDA_DEFAULT_ENV: skipped, and said so */
	assert_int_equal(PARSE(&o, &e, "python", "x.py"), 0);
	assert_int_equal(o.conda_default, -1);
	body = batch_request(&o, &ctx, &e);
	assert_null(json_object_get(only_spec(body), "conda_env"));
	json_decref(body);
	batch_opts_free(&o);

	/* where conda is found */
	assert_false(batch_conda_available(NULL, NULL));
	snprintf(bin, sizeof bin, "%s/bin", tmpdir);
	mkdir(bin, 0755);
	snprintf(path, sizeof path, "/nonexistent::%s", bin);
	assert_false(batch_conda_available(path, "/nonexistent/conda"));
	write_file("bin/conda", "#!/bin/sh\n", 0644);	/* not executable */
	assert_false(batch_conda_available(path, NULL));
	write_file("bin/conda", "#!/bin/sh\n", 0755);
	assert_true(batch_conda_available(path, NULL));
	snprintf(path, sizeof path, "%s/bin/conda", tmpdir);
	assert_true(batch_conda_available("/nonexistent", path));
}

/* no_conda -1: looked up along $PATH / $CONDA_EXE when a job needs conda,
 * and then as batch_conda_available says. */
static void test_conda_looked_up_when_needed(void **state)
{
	struct batch_ctx ctx = ctx_of("myenv");
	struct batch_opts o;
	struct gf_err e;
	char bin[300], *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char *old_exe = getenv("CONDA_EXE") ? strdup(getenv("CONDA_EXE")) : NULL;

	(void)state;
	ctx.no_conda = -1;
	snprintf(bin, sizeof bin, "%s/lazybin", tmpdir);
	mkdir(bin, 0755);
	setenv("PATH", bin, 1);
	unsetenv("CONDA_EXE");
	/* not there: explicit refused, implicit skipped */
	assert_int_equal(PARSE(&o, &e, "--conda-env", "other", "python"), EXIT_FAIL);
	assert_non_null(strstr(e.msg, "conda not found for --conda-env other"));
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "python", "x.py"), 0);
	assert_int_equal(o.conda_default, -1);
	batch_opts_free(&o);
	/* on $PATH now: both taken */
	write_file("lazybin/conda", "#!/bin/sh\n", 0755);
	assert_int_equal(PARSE(&o, &e, "--conda-env", "other", "python"), 0);
	batch_opts_free(&o);
	assert_int_equal(PARSE(&o, &e, "python", "x.py"), 0);
	assert_int_equal(o.conda_default, 1);
	batch_opts_free(&o);
	if (old_path)
		setenv("PATH", old_path, 1);
	if (old_exe)
		setenv("CONDA_EXE", old_exe, 1);
	free(old_path);
	free(old_exe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_command),
		cmocka_unit_test(test_every_flag),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_dependency_lists),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_shared_needs_memory),
		cmocka_unit_test(test_empty_command),
		cmocka_unit_test(test_options_stop_at_command),
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test(test_conda_default),
		cmocka_unit_test(test_conda_looked_up_when_needed),
		cmocka_unit_test(test_bytes_are_sent_exactly),
		cmocka_unit_test(test_exec_limits_checked_before_sending),
		cmocka_unit_test(test_conda_needs_conda),
		cmocka_unit_test(test_script_detection),
		cmocka_unit_test(test_directives_both_forms),
		cmocka_unit_test(test_directive_errors),
		cmocka_unit_test(test_param_csv),
		cmocka_unit_test(test_all_directive_flags),
		cmocka_unit_test(test_cli_wins_over_directives),
		cmocka_unit_test(test_script_directive_errors_name_file_and_line),
		cmocka_unit_test(test_script_without_exec_bit),
		cmocka_unit_test(test_non_script_file_ignores_directives),
		cmocka_unit_test(test_array_expansion),
		cmocka_unit_test(test_sweep_cartesian_order),
		cmocka_unit_test(test_sweep_name_template_and_ranges),
		cmocka_unit_test(test_param_file),
		cmocka_unit_test(test_set_fields_and_dry_run_text),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
