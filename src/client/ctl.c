/* ctl.c — gctl: runtime control of the daemon: which GPUs it may use
 * (show-gpus, set-gpus), foreign GPU processes it should ignore
 * (gpu-process), the concurrency limit of a job group (set-limit); quota
 * and reserve are in share.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "info.h"
#include "opt.h"
#include "parse.h"
#include "share.h"
#include "util.h"

#define PROG "gctl"

int ctl_notify(int argc, char **argv);	/* ctlnotify.c */

static const char ctl_help[] =
"usage: gctl <command> [args...]\n\n"
"  show-gpus                               each GPU: available or in_use,\n"
"                                          restricted, and why\n"
"  set-gpus SPEC|all                       let gflow allocate only these\n"
"                                          GPUs (0, 0,2,4, 0-3, 0-1,3);\n"
"                                          I:K is MIG device K of GPU I\n"
"                                          (0:1,1), I a whole GPU; running\n"
"                                          jobs keep theirs\n"
"  gpu-process ignore --gpu I --pid P      treat a foreign process as\n"
"                                          harmless (until it exits or\n"
"                                          gflowd restarts)\n"
"  gpu-process unignore --gpu I --pid P    stop ignoring it\n"
"  gpu-process list [--all]                the ignored processes; with\n"
"                                          --all every foreign process on\n"
"                                          each GPU: pid, user, command,\n"
"                                          age, GPU memory, and whether it\n"
"                                          blocks the GPU\n"
"  set-limit ID K                          at most K jobs of job ID's\n"
"                                          batch (array/sweep) run at once\n"
"  notify test [--event E]                 send a test notification (E:\n"
"                                          an event name, default\n"
"                                          job_completed) to every webhook\n"
"                                          and mail target; print each result\n"
"  quota list [-o FORMAT]                  users and projects: limits,\n"
"                                          what they hold, fair-share usage\n"
"  quota set (--user U | --project P | --default-user | --default-project)\n"
"        [--max-running-jobs N] [--max-running-gpus N]\n"
"        [--max-queued-jobs N] [--max-gpu-hours-per-day N]\n"
"        [--max-preemptible-gpus N]\n"
"                                          merge a runtime override (kept\n"
"                                          by the daemon, wins over the\n"
"                                          config; N or unlimited)\n"
"  quota remove (--user U | --project P | --default-user | --default-project)\n"
"                                          back to the config\n"
"  reserve create --user U (--gpus N | --gpu-spec 0,2) --start TIME\n"
"        --duration D [--timezone TZ]      keep GPUs for U in a window\n"
"                                          (TIME: YYYY-MM-DD HH:MM or ISO\n"
"                                          8601, on :00 or :30; D: 2h, 90m,\n"
"                                          a multiple of 30 minutes)\n"
"  reserve list [--active] [--user U] [--status S] [-o FORMAT]\n"
"  reserve list --timeline [--range 48h]   one row per GPU, one column per\n"
"                                          half hour\n"
"  reserve get ID | reserve cancel ID\n"
"  completion bash|zsh|fish                a shell completion script\n\n"
"Changes need an admin (the daemon's user, root, or the admin group of a\n"
"system daemon); anyone may list. reserve shows and reads times in\n"
"--timezone, else the config's timezone, else the system's. Also: --help,\n"
"--version, --config PATH (before the command; the file is checked, and\n"
"its timezone used).\n";

static int show_gpus(int argc, char **argv)
{
	struct gf_err e;
	json_t *answer;
	char *text;

	(void)argv;
	if (argc != 1)
		return cmd_usagef(PROG, "usage: gctl show-gpus");
	answer = api_get("/gpus", &e);
	if (!answer)
		return cmd_fail(PROG, &e);
	if (!json_array_size(json_object_get(answer, "gpus")))
		text = info_no_gpus_line(answer);
	else
		text = info_show_gpus_text(answer);
	fputs(text, stdout);
	if (!json_array_size(json_object_get(answer, "gpus")))
		fputc('\n', stdout);
	free(text);
	json_decref(answer);
	return EXIT_OK;
}

static int set_gpus(int argc, char **argv)
{
	struct gf_err e;
	json_t *body, *answer, *allowed;
	uint64_t mask;
	int all;
	char *l;

	if (argc != 2)
		return cmd_usagef(PROG, "usage: gctl set-gpus SPEC|all");
	/* I:K (a MIG device) only the daemon can check */
	if (!strchr(argv[1], ':') && gf_parse_gpu_spec(argv[1], &mask, &all, &e) < 0)
		return cmd_usage_error(PROG, &e);
	body = json_object();
	json_object_set_new(body, "spec", json_string(argv[1]));
	answer = api_post("/gpus/allowed", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	allowed = json_object_get(answer, "allowed");
	if (json_is_array(allowed)) {
		l = fmt_int_list(allowed);
		printf("Allowed GPUs: %s\n", *l ? l : "none");
		free(l);
	} else {
		printf("Allowed GPUs: all\n");
	}
	json_decref(answer);
	return EXIT_OK;
}

static void print_ignored(const json_t *answer)
{
	json_t *ign = json_object_get(answer, "ignored");
	size_t i;

	if (!json_array_size(ign)) {
		printf("No ignored GPU processes\n");
		return;
	}
	printf("GPU  PID\n");
	for (i = 0; i < json_array_size(ign); i++) {
		json_t *x = json_array_get(ign, i);

		printf("%-3lld  %lld\n", (long long)jint(x, "gpu", 0),
		    (long long)jint(x, "pid", 0));
	}
}

/* gpu-process list --all: every foreign process of GET /gpus. */
static void print_foreign(const json_t *answer)
{
	json_t *gpus = json_object_get(answer, "gpus");
	size_t i, k, n = 0;

	for (i = 0; i < json_array_size(gpus); i++) {
		const json_t *gpu = json_array_get(gpus, i);
		json_t *fl = json_object_get(gpu, "foreign");

		for (k = 0; k < json_array_size(fl); k++) {
			const json_t *f = json_array_get(fl, k);

			if (!n++)
				printf("GPU  PROCESS  STATUS\n");
			printf("%-3lld  %s  ", (long long)jint(gpu, "index", 0),
			    jstr(f, "label") ? jstr(f, "label") : "?");
			if (jbool(f, "blocks", 1))
				printf("blocks the GPU\n");
			else
				printf("does not block (%s)\n",
				    jstr(f, "exempt") ? jstr(f, "exempt") : "");
		}
	}
	if (!n)
		printf("No foreign GPU processes\n");
}

enum { G_GPU, G_PID, G_ALL };

static const struct opt_def gp_opts[] = {
	{ G_GPU, "gpu", 0, 1 }, { G_PID, "pid", 0, 1 }, { G_ALL, "all", 0, 0 },
};

static int gpu_process(int argc, char **argv)
{
	const char *usage = "usage: gctl gpu-process ignore|unignore --gpu I "
	    "--pid P, or gctl gpu-process list [--all]";
	int64_t gpu = -1, pid = -1;
	int all = 0;
	struct opt_parser p;
	struct gf_err e;
	const char *val, *action = NULL;
	json_t *body, *answer;
	int id, ignore;

	opt_init(&p, argc, argv, 1, gp_opts, 3, 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			return cmd_usage_error(PROG, &e);
		case OPT_POSITIONAL:
			if (action)
				return cmd_usagef(PROG, "%s", usage);
			action = val;
			break;
		case G_GPU:
			if (gf_parse_int_range(val, 0, 63, "GPU index", &gpu,
			    &e) < 0)
				return cmd_usage_error(PROG, &e);
			break;
		case G_PID:
			if (gf_parse_int_range(val, 1, 1 << 30, "pid", &pid,
			    &e) < 0)
				return cmd_usage_error(PROG, &e);
			break;
		case G_ALL:
			all = 1;
			break;
		}
	}
	if (all && (!action || strcmp(action, "list") != 0))
		return cmd_usagef(PROG, "--all goes with gpu-process list");
	if (action && strcmp(action, "list") == 0) {
		if (gpu >= 0 || pid >= 0)
			return cmd_usagef(PROG, "gpu-process list takes no --gpu or --pid");
		answer = api_get(all ? "/gpus" : "/gpus/ignored", &e);
		if (!answer)
			return cmd_fail(PROG, &e);
		if (all)
			print_foreign(answer);
		else
			print_ignored(answer);
		json_decref(answer);
		return EXIT_OK;
	}
	if (!action || (strcmp(action, "ignore") != 0 &&
	    strcmp(action, "unignore") != 0))
		return cmd_usagef(PROG, "%s", usage);
	if (gpu < 0 || pid < 0)
		return cmd_usagef(PROG, "gpu-process %s needs --gpu I and --pid P",
		    action);
	ignore = strcmp(action, "ignore") == 0;
	body = json_object();
	json_object_set_new(body, "gpu", json_integer(gpu));
	json_object_set_new(body, "pid", json_integer(pid));
	answer = api_post(ignore ? "/gpus/ignore" : "/gpus/unignore", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	if (ignore) {
		fprintf(stderr, "%s: warning: pid %lld on GPU %lld is now "
		    "treated as harmless: gflow may give that GPU to jobs while "
		    "the process runs (until it exits or gflowd restarts)\n",
		    PROG, (long long)pid, (long long)gpu);
		printf("Ignoring pid %lld on GPU %lld\n", (long long)pid,
		    (long long)gpu);
	} else {
		printf("No longer ignoring pid %lld on GPU %lld\n",
		    (long long)pid, (long long)gpu);
	}
	json_decref(answer);
	return EXIT_OK;
}

static int set_limit(int argc, char **argv)
{
	struct gf_jobref ref;
	struct gf_err e;
	json_t *body, *answer;
	int64_t k;

	if (argc != 3)
		return cmd_usagef(PROG, "usage: gctl set-limit ID K");
	if (gf_parse_jobref(argv[1], &ref, &e) < 0 ||
	    gf_parse_int_range(argv[2], 0, 1000000, "limit", &k, &e) < 0)
		return cmd_usage_error(PROG, &e);
	body = json_object();
	json_object_set_new(body, "id", jobref_json(&ref));
	json_object_set_new(body, "max_concurrent", json_integer(k));
	answer = api_post("/jobs/limit", body, &e);
	json_decref(body);
	if (!answer)
		return cmd_fail(PROG, &e);
	if (k)
		printf("At most %lld job%s of batch %lld run%s at once (%lld "
		    "jobs)\n", (long long)k, k == 1 ? "" : "s",
		    (long long)jint(answer, "group", 0), k == 1 ? "s" : "",
		    (long long)jint(answer, "jobs", 0));
	else
		printf("No limit on batch %lld (%lld jobs)\n",
		    (long long)jint(answer, "group", 0),
		    (long long)jint(answer, "jobs", 0));
	json_decref(answer);
	return EXIT_OK;
}

static int ctl_exec(int argc, char **argv)
{
	const char *sub;
	int skip = cmd_leading_config(argc, argv, PROG);

	if (skip < 0)
		return EXIT_FAIL;
	argc -= skip;
	argv += skip;
	if (argc < 2)
		return cmd_usagef(PROG, "missing command (commands: show-gpus, set-gpus, gpu-process, set-limit, notify, "
				  "quota, reserve)");
	sub = argv[1];
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 ||
	    strcmp(sub, "help") == 0) {
		fputs(ctl_help, stdout);
		return EXIT_OK;
	}
	if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0)
		return cmd_version();
	if (strcmp(sub, "completion") == 0)
		return cmd_completion(&cmd_ctl, argc - 1, argv + 1);
	if (argc > 2 && (strcmp(argv[2], "--help") == 0 ||
	    strcmp(argv[2], "-h") == 0)) {
		fputs(ctl_help, stdout);
		return EXIT_OK;
	}
	if (strcmp(sub, "show-gpus") == 0)
		return show_gpus(argc - 1, argv + 1);
	if (strcmp(sub, "set-gpus") == 0)
		return set_gpus(argc - 1, argv + 1);
	if (strcmp(sub, "gpu-process") == 0)
		return gpu_process(argc - 1, argv + 1);
	if (strcmp(sub, "set-limit") == 0)
		return set_limit(argc - 1, argv + 1);
	if (strcmp(sub, "notify") == 0)
		return ctl_notify(argc - 1, argv + 1);
	if (strcmp(sub, "quota") == 0)
		return share_quota(argc - 1, argv + 1);
	if (strcmp(sub, "reserve") == 0)
		return share_reserve(argc - 1, argv + 1);
	return cmd_usagef(PROG, "unknown command '%s' (commands: show-gpus, "
	    "set-gpus, gpu-process, set-limit, notify, quota, reserve)", sub);
}

const struct command cmd_ctl = {
	"ctl", "gctl", "runtime control: allowed GPUs, ignored processes, "
	"limits, notifications, quotas, reservations", ctl_exec,
	"show-gpus set-gpus gpu-process set-limit notify quota reserve ignore "
	"unignore list test set remove create get cancel completion --event "
	"--gpu --pid --all --user --project --default-user --default-project "
	"--max-running-jobs --max-running-gpus --max-queued-jobs "
	"--max-gpu-hours-per-day --max-preemptible-gpus --gpus --gpu-spec --start --duration "
	"--timezone --active --status --timeline --range --config --help --version",
};
