/* test_client_cluster.c — gbatch --cluster without Slurm: [clusters.NAME]
 * profiles, shell quoting (checked against /bin/sh), path mapping, Slurm
 * times, array lists and states, and the translation of parsed gbatch
 * options into a batch script with its list of losses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "cluster.h"
#include "config.h"

#define NOW ((time_t)1700000000)

static char cfg_path[] = "/tmp/gflow-test-cluster-XXXXXX";

static int load(const char *text, struct gf_config *c, struct gf_err *e)
{
	int fd = mkstemp(cfg_path), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rc = gf_config_load(cfg_path, NULL, c, e);
	unlink(cfg_path);
	strcpy(cfg_path, "/tmp/gflow-test-cluster-XXXXXX");
	return rc;
}

static void test_profiles(void **state)
{
	struct gf_config c;
	struct gf_err e;
	const struct gf_cluster *k;

	(void)state;
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\nhost = \"login.hpc\"\n"
	    "partition = \"gpu\"\naccount = \"lab\"\nqos = \"normal\"\n"
	    "remote_dir = \"/scratch/me/gflow\"\nprelude = \"module load cuda\"\n"
	    "path_map = { \"/home/me\" = \"/scratch/me\", \"/data\" = \"/lustre/data\" }\n"
	    "[clusters.local]\ntype = \"slurm\"\n", &c, &e), 0);
	assert_int_equal(c.n_clusters, 2);
	k = gf_config_cluster(&c, "hpc");
	assert_non_null(k);
	assert_string_equal(k->host, "login.hpc");
	assert_string_equal(k->partition, "gpu");
	assert_string_equal(k->account, "lab");
	assert_string_equal(k->qos, "normal");
	assert_string_equal(k->remote_dir, "/scratch/me/gflow");
	assert_string_equal(k->prelude, "module load cuda");
	assert_int_equal(k->n_map, 2);
	assert_string_equal(k->map_from[1], "/data");
	assert_string_equal(k->map_to[1], "/lustre/data");
	k = gf_config_cluster(&c, "local");
	assert_non_null(k);
	assert_null(k->host);
	assert_null(gf_config_cluster(&c, "nope"));
	gf_config_free(&c);
}

static void test_profile_errors(void **state)
{
	struct gf_config c;
	struct gf_err e;

	(void)state;
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\nparttion = \"gpu\"\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "unknown key 'parttion' in [clusters.hpc]"));
	assert_non_null(strstr(e.msg, "line 3"));
	assert_int_equal(load("[clusters.hpc]\ntype = \"pbs\"\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "\"pbs\" is not a cluster type"));
	assert_int_equal(load("[clusters.hpc]\nhost = \"x\"\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "type = \"slurm\" is missing"));
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\nremote_dir = \"rel\"\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "remote_dir: must be an absolute path"));
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\npath_map = { \"rel\" = \"/x\" }\n",
	    &c, &e), -1);
	assert_non_null(strstr(e.msg, "path_map"));
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\nhost = \"-oProxyCommand=x\"\n", &c, &e),
	    -1);
	assert_non_null(strstr(e.msg, "is not an ssh destination"));
	assert_int_equal(load("[clusters.hpc]\ntype = \"slurm\"\nport = 3\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "unknown key 'port'"));
	assert_int_equal(load("[clusters]\nhpc = 3\n", &c, &e), -1);
	assert_non_null(strstr(e.msg, "expected a table"));
}

/* What /bin/sh makes of `printf %s <quoted>`. */
static char *through_sh(const char *quoted)
{
	char cmd[4096], *out = calloc(1, 4096);
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof cmd, "printf %%s %s", quoted);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, 4095, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

static void test_shquote(void **state)
{
	static const char *const words[] = {
		"plain", "a b", "it's", "'", "''", "$HOME", "`id`", "$(id)", "a\"b", "back\\slash",
		"new\nline", "*", "semi;colon", "-n", "tab\there", "\xff\xfe", "~", "a&b|c>d<e",
	};
	char *q, *back;

	(void)state;
	q = cluster_shquote("plain/path-1.2_x=y,z:@%+");
	assert_string_equal(q, "plain/path-1.2_x=y,z:@%+");
	free(q);
	q = cluster_shquote("");
	assert_string_equal(q, "''");
	free(q);
	q = cluster_shquote("it's");
	assert_string_equal(q, "'it'\\''s'");
	free(q);
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		q = cluster_shquote(words[i]);
		back = through_sh(q);
		assert_string_equal(back, words[i]);
		free(back);
		free(q);
	}
}

static void test_map_path(void **state)
{
	char *from[] = { "/home/me", "/home/me/proj", "/" }, *to[] = { "/scratch/me", "/proj", "/r/" };
	struct gf_cluster k = { .name = "x", .map_from = from, .map_to = to, .n_map = 2 };
	char *s;

	(void)state;
	s = cluster_map_path(&k, "/home/me/data/x.csv");
	assert_string_equal(s, "/scratch/me/data/x.csv");
	free(s);
	s = cluster_map_path(&k, "/home/me/proj/train.py");	/* the longest prefix wins */
	assert_string_equal(s, "/proj/train.py");
	free(s);
	s = cluster_map_path(&k, "/home/me");
	assert_string_equal(s, "/scratch/me");
	free(s);
	s = cluster_map_path(&k, "/home/meg/x");		/* whole components only */
	assert_string_equal(s, "/home/meg/x");
	free(s);
	k.n_map = 3;
	s = cluster_map_path(&k, "/etc/x");
	assert_string_equal(s, "/r/etc/x");
	free(s);
}

static void test_times_arrays_states(void **state)
{
	char buf[64], *s;
	int rounded;
	int64_t ids[] = { 1, 2, 3, 7, 9, 10, 11 }, one[] = { 5 };
	char line[] = "12|N/A|PENDING|Priority|0|N/A|N/A|", *f[8];

	(void)state;
	cluster_slurm_time(3600, buf, sizeof buf, &rounded);
	assert_string_equal(buf, "0-01:00:00");
	assert_false(rounded);
	cluster_slurm_time(90, buf, sizeof buf, &rounded);
	assert_string_equal(buf, "0-00:02:00");
	assert_true(rounded);
	cluster_slurm_time(2 * 86400 + 61 * 60, buf, sizeof buf, &rounded);
	assert_string_equal(buf, "2-01:01:00");
	s = cluster_array_list(ids, 7, 0);
	assert_string_equal(s, "1-3,7,9-11");
	free(s);
	s = cluster_array_list(one, 1, 2);
	assert_string_equal(s, "5%2");
	free(s);
	assert_string_equal(cluster_state_code("PENDING"), "PD");
	assert_string_equal(cluster_state_code("RUNNING"), "R");
	assert_string_equal(cluster_state_code("COMPLETED"), "CD");
	assert_string_equal(cluster_state_code("FAILED"), "F");
	assert_string_equal(cluster_state_code("OUT_OF_MEMORY"), "F");
	assert_string_equal(cluster_state_code("NODE_FAIL"), "F");
	assert_string_equal(cluster_state_code("CANCELLED by 0"), "CA");
	assert_string_equal(cluster_state_code("TIMEOUT"), "TO");
	assert_null(cluster_state_code("WEIRD"));
	assert_int_equal(cluster_split(line, '|', f, 8), 8);
	assert_string_equal(f[0], "12");
	assert_string_equal(f[3], "Priority");
	assert_string_equal(f[7], "");
}

/* Parse a gbatch line, expand it and translate it for profile k. */
static int plan_of(const struct gf_cluster *k, struct cluster_plan *p, struct gf_err *e,
    char **argv)
{
	int argc = 0;

	static char *env[] = { "HOME=/home/me", "PATH=/usr/bin", "MY_VAR=it's", "SSH_AUTH_SOCK=/s",
		NULL };
	struct batch_ctx ctx = { NOW, "/home/me/proj", NULL, env, 0, 0, NULL };
	struct batch_opts o;
	json_t *body;
	int rc;

	while (argv[argc])
		argc++;
	assert_int_equal(batch_parse(argc, argv, &ctx, &o, e), 0);
	body = batch_request(&o, &ctx, e);
	assert_non_null(body);
	rc = cluster_plan(k, &o, body, NULL, NULL, o.export_env, "/scratch/me/gflow", "stamp", p, e);
	json_decref(body);
	batch_opts_free(&o);
	return rc;
}

static int lossy_has(const struct cluster_plan *p, const char *what)
{
	for (size_t i = 0; i < p->nlossy; i++)
		if (strstr(p->lossy[i], what))
			return 1;
	return 0;
}

static void test_plan_plain(void **state)
{
	char *from[] = { "/home/me" }, *to[] = { "/scratch/me" };
	struct gf_cluster k = { .name = "hpc", .type = "slurm", .partition = "gpu", .qos = "long",
		.prelude = "module load cuda", .map_from = from, .map_to = to, .n_map = 1 };
	char *argv[] = { "gbatch", "--cluster", "hpc", "--gpus", "2", "--memory", "16G", "--time",
		"2:00:00", "--name", "my run", "--project", "vision", "--hold", "--conda-env", "torch",
		"python", "/home/me/proj/train.py", "--note", "it's", NULL };
	struct cluster_plan p;
	struct gf_err e;

	(void)state;
	assert_int_equal(plan_of(&k, &p, &e, argv), 0);
	assert_non_null(strstr(p.script, "#!/bin/bash\n"));
	assert_non_null(strstr(p.script, "#SBATCH --job-name=\"my run\"\n"));
	assert_non_null(strstr(p.script, "#SBATCH --output=/scratch/me/gflow/stamp-%j.out\n"));
	assert_non_null(strstr(p.script, "#SBATCH --chdir=/scratch/me/proj\n"));
	assert_non_null(strstr(p.script, "#SBATCH --partition=gpu\n"));
	assert_non_null(strstr(p.script, "#SBATCH --qos=long\n"));
	assert_null(strstr(p.script, "--account"));
	assert_non_null(strstr(p.script, "#SBATCH --gres=gpu:2\n"));
	assert_non_null(strstr(p.script, "#SBATCH --mem=16384M\n"));
	assert_non_null(strstr(p.script, "#SBATCH --time=0-02:00:00\n"));
	assert_non_null(strstr(p.script, "#SBATCH --comment=gflow-project=vision\n"));
	assert_non_null(strstr(p.script, "#SBATCH --hold\n"));
	assert_null(strstr(p.script, "--array"));
	assert_non_null(strstr(p.script, "module load cuda\n"));
	assert_non_null(strstr(p.script, "conda activate torch"));
	assert_non_null(strstr(p.script, "export GFLOW_JOB_ID=\"$SLURM_JOB_ID\"\n"));
	assert_non_null(strstr(p.script,
	    "exec python /scratch/me/proj/train.py --note 'it'\\''s'\n"));
	assert_null(strstr(p.script, "MY_VAR"));	/* no --export-env */
	assert_string_equal(p.script_path, "/scratch/me/gflow/stamp.sbatch");
	assert_null(p.params);
	assert_int_equal(p.ntasks, 0);
	assert_int_equal(p.nlossy, 0);
	cluster_plan_free(&p);
}

static void test_plan_losses_and_env(void **state)
{
	struct gf_cluster k = { .name = "hpc", .type = "slurm" };
	char *argv[] = { "gbatch", "--gpus", "1", "--shared", "--gpu-memory", "10G", "--priority",
		"99", "--max-retries", "2", "--time", "1:30", "--notify-email", "a@b.c", "--notify-on",
		"job_failed,job_held", "--export-env", "true", NULL };
	char *bad[] = { "gbatch", "--name", "a\"b", "true", NULL };
	struct cluster_plan p;
	struct gf_err e;

	(void)state;
	assert_int_equal(plan_of(&k, &p, &e, argv), 0);
	assert_true(lossy_has(&p, "--shared/--gpu-memory"));
	assert_true(lossy_has(&p, "--priority"));
	assert_true(lossy_has(&p, "--max-retries"));
	assert_true(lossy_has(&p, "--time: Slurm counts whole minutes"));
	assert_true(lossy_has(&p, "--notify-on job_held"));
	assert_true(lossy_has(&p, "--export-env: 3 variables"));
	assert_non_null(strstr(p.script, "#SBATCH --mail-user=a@b.c\n#SBATCH --mail-type=FAIL\n"));
	assert_non_null(strstr(p.script, "export 'MY_VAR=it'\\''s'\n"));
	assert_null(strstr(p.script, "SSH_AUTH_SOCK"));
	assert_null(strstr(p.script, "export HOME"));
	cluster_plan_free(&p);
	assert_int_equal(plan_of(&k, &p, &e, bad), -1);
	assert_non_null(strstr(e.msg, "#SBATCH line cannot carry"));
}

static void test_plan_array_and_sweep(void **state)
{
	struct gf_cluster k = { .name = "hpc", .type = "slurm" };
	char *arr[] = { "gbatch", "--array", "1-3,7%2", "echo", "x", NULL };
	char *sweep[] = { "gbatch", "--param", "a=1,2", "--param", "b=x,y z", "--max-concurrent",
		"1", "echo", "{a}", "{b}", NULL };
	struct cluster_plan p;
	struct gf_err e;

	(void)state;
	assert_int_equal(plan_of(&k, &p, &e, arr), 0);
	assert_non_null(strstr(p.script, "#SBATCH --array=1-3,7%2\n"));
	assert_non_null(strstr(p.script, "#SBATCH --job-name=echo\n"));
	assert_non_null(strstr(p.script, "stamp-%A_%a.out"));
	assert_non_null(strstr(p.script, "GFLOW_ARRAY_TASK_ID=\"$SLURM_ARRAY_TASK_ID\""));
	assert_int_equal(p.ntasks, 4);
	assert_int_equal(p.tasks[3], 7);
	cluster_plan_free(&p);
	assert_int_equal(plan_of(&k, &p, &e, sweep), 0);
	assert_non_null(strstr(p.script, "#SBATCH --array=0-3%1\n"));
	assert_string_equal(p.params, "echo 1 x\necho 1 'y z'\necho 2 x\necho 2 'y z'\n");
	assert_string_equal(p.params_path, "/scratch/me/gflow/stamp.params");
	assert_non_null(strstr(p.script, "sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" "
	    "/scratch/me/gflow/stamp.params"));
	assert_int_equal(p.ntasks, 4);
	cluster_plan_free(&p);
}

static void test_plan_dependencies(void **state)
{
	struct gf_cluster k = { .name = "hpc", .type = "slurm" };
	const char *const ids[] = { "11", "12_3" };
	struct cluster_deps deps = { ids, 2 };
	static char *env[] = { NULL };
	struct batch_ctx ctx = { NOW, "/w", NULL, env, 0, 0, NULL };
	char *any[] = { "gbatch", "--depends-on-any", "1,2", "--no-auto-cancel", "true", NULL };
	char *all[] = { "gbatch", "--depends-on-all", "1,2", "--begin", "2030-01-02T03:04", "true",
		NULL };
	struct batch_opts o;
	struct cluster_plan p;
	struct gf_err e;
	json_t *body;

	(void)state;
	assert_int_equal(batch_parse(5, any, &ctx, &o, &e), 0);
	body = batch_request(&o, &ctx, &e);
	assert_int_equal(cluster_plan(&k, &o, body, &deps, NULL, 0, "/d", "s", &p, &e), 0);
	assert_non_null(strstr(p.script, "#SBATCH --dependency=afterok:11?afterok:12_3\n"
	    "#SBATCH --kill-on-invalid-dep=no\n"));
	cluster_plan_free(&p);
	json_decref(body);
	batch_opts_free(&o);
	assert_int_equal(batch_parse(6, all, &ctx, &o, &e), 0);
	body = batch_request(&o, &ctx, &e);
	assert_int_equal(cluster_plan(&k, &o, body, &deps, NULL, 0, "/d", "s", &p, &e), 0);
	assert_non_null(strstr(p.script, "#SBATCH --dependency=afterok:11:12_3\n"
	    "#SBATCH --kill-on-invalid-dep=yes\n"));
	assert_non_null(strstr(p.script, "#SBATCH --begin=2030-01-02T03:04:00\n"));
	cluster_plan_free(&p);
	assert_int_equal(cluster_plan(&k, &o, body, NULL, NULL, 0, "relative", "s", &p, &e), -1);
	assert_non_null(strstr(e.msg, "an absolute path is needed"));
	json_decref(body);
	batch_opts_free(&o);
}

static void test_plan_script_is_shipped(void **state)
{
	char dir[] = "/tmp/gflow-test-cluster-script-XXXXXX", path[128];
	static char *env[] = { NULL };
	struct gf_cluster k = { .name = "hpc", .type = "slurm" };
	struct batch_ctx ctx = { NOW, NULL, NULL, env, 0, 0, NULL };
	const char *text = "#!/bin/bash\n# GFLOW --time 5\n# GFLOW --gpus 1\necho $1\n";
	char *argv[] = { "gbatch", "run.sh", "it's", NULL };
	struct batch_opts o;
	struct cluster_plan p;
	struct gf_err e;
	json_t *body;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/run.sh", dir);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);			/* not executable: run through its #! line */
	ctx.cwd = dir;
	assert_int_equal(batch_parse(3, argv, &ctx, &o, &e), 0);
	body = batch_request(&o, &ctx, &e);
	assert_int_equal(cluster_plan(&k, &o, body, NULL, text, 0, "/r", "s", &p, &e), 0);
	assert_string_equal(p.job_path, "/r/s.job");
	assert_string_equal(p.job_text, text);
	assert_non_null(strstr(p.script, "#SBATCH --job-name=run.sh\n"));
	assert_non_null(strstr(p.script, "#SBATCH --time=0-00:05:00\n"));
	assert_non_null(strstr(p.script, "#SBATCH --gres=gpu:1\n"));
	assert_non_null(strstr(p.script, "exec /bin/bash /r/s.job 'it'\\''s'\n"));
	cluster_plan_free(&p);
	/* without the text: the script's own path, as it is there */
	assert_int_equal(cluster_plan(&k, &o, body, NULL, NULL, 0, "/r", "s", &p, &e), 0);
	assert_null(p.job_path);
	assert_non_null(strstr(p.script, path));
	cluster_plan_free(&p);
	json_decref(body);
	batch_opts_free(&o);
	unlink(path);
	rmdir(dir);
}

static const struct slurm_state *state_of(const struct slurm_state *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return &v[i];
	return NULL;
}

static void test_parse_squeue_and_sacct(void **state)
{
	char sq[] = "4|1|COMPLETED|None|0|2026-12-03T06:54:26|2026-12-03T06:54:27|\n"
		"4|2|PENDING|JobHeldUser|0|N/A|N/A|\n"
		"4|3|PENDING|Dependency|0|N/A|N/A|\n"
		"1|N/A|FAILED|NonZeroExitCode|768|2026-12-03T06:54:09|2026-12-03T06:54:10|\n"
		"3|N/A|TIMEOUT|TimeLimit|15|2026-12-03T06:54:26|2026-12-03T06:55:30|\n"
		"9|N/A|CANCELLED|DependencyNeverSatisfied|0|N/A|2026-12-03T07:00:00|\n"
		"8|N/A|OUT_OF_MEMORY|OutOfMemory|9|N/A|N/A|\n"
		"77|N/A|RUNNING|None|0|2026-12-03T06:54:26|N/A|\n";
	char sa[] = "5|COMPLETED|0:0|2026-12-03T06:54:29|2026-12-03T06:54:30\n"
		"6|CANCELLED by 0|0:15|Unknown|2026-12-03T06:54:30\n"
		"1|COMPLETED|0:0|N/A|N/A\n";
	char *ids[] = { "4_1", "4_2", "4_3", "1", "3", "9", "8", "5", "6" };
	struct slurm_state *v = NULL;
	const struct slurm_state *s;
	size_t n = 0;

	(void)state;
	cluster_parse_squeue(sq, ids, 9, &v, &n);
	assert_int_equal(n, 7);			/* 77 was not asked for */
	s = state_of(v, n, "4_1");
	assert_string_equal(s->code, "CD");
	assert_true(s->has_exit);
	assert_int_equal(s->exit_code, 0);
	assert_null(s->reason);
	assert_true(s->end - s->start == 1);
	s = state_of(v, n, "4_2");
	assert_string_equal(s->code, "H");
	assert_string_equal(s->reason, "JobHeldUser");
	assert_false(s->has_exit);
	s = state_of(v, n, "4_3");
	assert_string_equal(s->code, "PD");
	assert_string_equal(s->reason, "Dependency");
	s = state_of(v, n, "1");
	assert_string_equal(s->code, "F");
	assert_int_equal(s->exit_code, 3);
	assert_int_equal(s->exit_signal, 0);
	assert_string_equal(s->reason, "Slurm: FAILED");
	s = state_of(v, n, "3");
	assert_string_equal(s->code, "TO");
	assert_int_equal(s->exit_signal, 15);
	s = state_of(v, n, "9");
	assert_string_equal(s->code, "CA");
	assert_string_equal(s->reason, "DependencyNeverSatisfied");
	assert_true(s->start == 0 && s->end > 0);
	assert_string_equal(state_of(v, n, "8")->reason, "Slurm: OUT_OF_MEMORY");
	assert_false(cluster_knows(v, n, "5"));
	/* sacct for what squeue forgot; what squeue said stays */
	cluster_parse_sacct(sa, ids, 9, &v, &n);
	assert_int_equal(n, 9);
	s = state_of(v, n, "5");
	assert_string_equal(s->code, "CD");
	assert_true(s->has_exit && s->exit_code == 0);
	s = state_of(v, n, "6");
	assert_string_equal(s->code, "CA");
	assert_int_equal(s->exit_signal, 15);
	assert_true(s->start == 0);
	assert_string_equal(state_of(v, n, "1")->code, "F");
	cluster_states_free(v, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_profile_errors),
		cmocka_unit_test(test_shquote),
		cmocka_unit_test(test_map_path),
		cmocka_unit_test(test_times_arrays_states),
		cmocka_unit_test(test_plan_plain),
		cmocka_unit_test(test_plan_losses_and_env),
		cmocka_unit_test(test_plan_array_and_sweep),
		cmocka_unit_test(test_plan_dependencies),
		cmocka_unit_test(test_parse_squeue_and_sacct),
		cmocka_unit_test(test_plan_script_is_shipped),
	};

	setenv("TZ", "UTC", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
