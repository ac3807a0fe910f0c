/* stats.c — gstats: a short per-user summary of jobs by state and the
 * GPU-hours they used, from GET /jobs. */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "queue.h"
#include "util.h"

#define PROG "gstats"

static const char *const state_cols[] = { "Running", "Queued", "Hold",
	"Finished", "Failed", "Cancelled", "Timeout" };
#define NSTATES (sizeof state_cols / sizeof state_cols[0])

struct user_stats {
	char *user;
	long long jobs, by_state[NSTATES];
	double gpu_secs;
	double util_secs, util_weighted;	/* GPU-seconds with a mean utilisation, and their sum */
};

static int cmp_user(const void *a, const void *b)
{
	return strcmp(((const struct user_stats *)a)->user,
	    ((const struct user_stats *)b)->user);
}

/* usage: the users' decayed GPU-seconds (fair share), or NULL for no
 * such column. */
static void add_row(struct table *t, const struct user_stats *u, const json_t *usage)
{
	char cells[NSTATES + 5][32];
	const char *row[NSTATES + 5];
	size_t k;

	snprintf(cells[0], sizeof cells[0], "%s", u->user);
	snprintf(cells[1], sizeof cells[1], "%lld", u->jobs);
	for (k = 0; k < NSTATES; k++)
		snprintf(cells[k + 2], sizeof cells[k + 2], "%lld",
		    u->by_state[k]);
	snprintf(cells[NSTATES + 2], sizeof cells[0], "%.2f",
	    u->gpu_secs / 3600);
	if (u->util_secs > 0)
		snprintf(cells[NSTATES + 3], sizeof cells[0], "%.0f%%",
		    u->util_weighted / u->util_secs);
	else
		snprintf(cells[NSTATES + 3], sizeof cells[0], "-");
	snprintf(cells[NSTATES + 4], sizeof cells[0], "%.2f",
	    usage ? jnum(usage, u->user, 0) / 3600 : 0.0);
	for (k = 0; k < NSTATES + 5; k++)
		row[k] = cells[k];
	row[0] = u->user; /* names may be longer than a cell buffer */
	table_add_row(t, row);
}

struct table *stats_table(const json_t *jobs, double now,
    const json_t *usage)
{
	static const char *const headers[] = { "USER", "JOBS", "RUNNING",
		"QUEUED", "HOLD", "FINISHED", "FAILED", "CANCELLED", "TIMEOUT",
		"GPU_HOURS", "GPU_UTIL", "SHARE_GPU_HOURS" };
	struct user_stats *v = NULL, total;
	size_t n = 0, i, k;
	struct table *t;

	memset(&total, 0, sizeof total);
	for (i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i);
		const char *user = jstr(j, "user") ? jstr(j, "user") : "?";
		const char *state = jstr(j, "state");
		double start = jnum(j, "start_time", 0), end = jnum(j, "end_time", 0);
		const json_t *util;
		struct user_stats *u = NULL;

		for (k = 0; k < n; k++)
			if (strcmp(v[k].user, user) == 0)
				u = &v[k];
		if (!u) {
			v = xrealloc(v, (n + 1) * sizeof *v);
			u = &v[n++];
			memset(u, 0, sizeof *u);
			u->user = xstrdup(user);
		}
		u->jobs++;
		for (k = 0; k < NSTATES; k++)
			if (state && strcmp(state, state_cols[k]) == 0)
				u->by_state[k]++;
		if (start > 0) {
			double secs = (end > 0 ? end : now) - start;
			size_t ngpu = json_array_size(json_object_get(j, "gpu_ids"));

			if (!ngpu)
				ngpu = (size_t)jint(j, "gpus", 0);
			if (secs > 0)
				u->gpu_secs += secs * (double)ngpu;
			/* the mean utilisation the daemon measured (gpu_usage),
			 * weighted by GPU-seconds */
			util = json_object_get(json_object_get(j, "gpu_usage"),
			    "mean_gpu_util");
			if (secs > 0 && json_is_number(util)) {
				u->util_secs += secs * (double)ngpu;
				u->util_weighted += secs * (double)ngpu *
				    json_number_value(util);
			}
		}
	}
	qsort(v, n, sizeof *v, cmp_user);
	t = table_new(sizeof headers / sizeof headers[0] - (usage ? 0 : 1),
	    headers);
	for (i = 0; i < n; i++) {
		add_row(t, &v[i], usage);
		total.jobs += v[i].jobs;
		for (k = 0; k < NSTATES; k++)
			total.by_state[k] += v[i].by_state[k];
		total.gpu_secs += v[i].gpu_secs;
		total.util_secs += v[i].util_secs;
		total.util_weighted += v[i].util_weighted;
	}
	if (n > 1) {
		total.user = "TOTAL";
		add_row(t, &total, NULL);
	}
	for (i = 0; i < n; i++)
		free(v[i].user);
	free(v);
	return t;
}

enum { S_USER, S_SINCE, S_OUTPUT, S_CONFIG, S_HELP, S_VERSION };

static const struct opt_def stats_opts[] = {
	{ S_USER, "user", 'u', 1 }, { S_USER, "users", 0, 1 },
	{ S_SINCE, "since", 0, 1 }, { S_OUTPUT, "output", 'o', 1 },
	{ S_CONFIG, "config", 0, 1 }, { S_HELP, "help", 'h', 0 },
	{ S_VERSION, "version", 'V', 0 },
};

static const char stats_help[] =
"usage: gstats [-u USERS|all] [--since TIME] [-o table|csv|json]\n"
"       gstats completion bash|zsh|fish\n\n"
"Per-user job counts by state and GPU-hours used (GPUs x run time), and\n"
"the mean GPU utilisation measured while their jobs ran (GPU_UTIL,\n"
"weighted by GPU-hours; - when unknown, e.g. other users' jobs);\n"
"SHARE_GPU_HOURS is the decayed usage fair share orders by.\n"
"  -u, --user USERS|all  these users (default: all)\n"
"      --since TIME      jobs submitted since: 1h, 30m, 7d, HH:MM,\n"
"                        YYYY-MM-DD[THH:MM]\n"
"  -o, --output FORMAT   table (default), csv or json\n"
"      --config PATH     config file (not needed by the client)\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n";

static int stats_exec(int argc, char **argv)
{
	struct sbuf q = { 0 }, path = { 0 };
	enum table_fmt fmt = TABLE_TEXT;
	const char *val, *users = "all";
	struct opt_parser p;
	struct gf_err e;
	struct table *t;
	json_t *resp, *usage;
	time_t since;
	char *text, buf[32];
	int id;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_stats, argc - 1, argv + 1);
	opt_init(&p, argc, argv, 1, stats_opts,
	    sizeof stats_opts / sizeof stats_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			sbuf_free(&q);
			return cmd_usage_error(PROG, &e);
		case OPT_POSITIONAL:
			sbuf_free(&q);
			return cmd_usagef(PROG, "unexpected argument '%s'", val);
		case S_USER:
			users = val;
			break;
		case S_SINCE:
			if (gf_parse_since(val, time(NULL), &since, &e) < 0) {
				sbuf_free(&q);
				return cmd_usage_error(PROG, &e);
			}
			snprintf(buf, sizeof buf, "%lld", (long long)since);
			url_add_param(&q, "since", buf);
			break;
		case S_OUTPUT:
			if (table_parse_format(val, &fmt, &e) < 0) {
				sbuf_free(&q);
				return cmd_usage_error(PROG, &e);
			}
			break;
		case S_CONFIG:
			if (cmd_check_config(val, &e) < 0) {
				sbuf_free(&q);
				return cmd_fail(PROG, &e);
			}
			break;
		case S_HELP:
			sbuf_free(&q);
			fputs(stats_help, stdout);
			return EXIT_OK;
		case S_VERSION:
			sbuf_free(&q);
			return cmd_version();
		}
	}
	url_add_param(&q, "users", users);
	url_add_param(&q, "states", "Queued,Hold,Running,Finished,Failed,"
	    "Cancelled,Timeout");
	sbuf_adds(&path, "/jobs");
	sbuf_adds(&path, q.p);
	sbuf_free(&q);
	resp = api_get(path.p, &e);
	sbuf_free(&path);
	if (!resp)
		return cmd_fail(PROG, &e);
	usage = api_get("/usage", &e);	/* an older daemon has none */
	t = stats_table(json_object_get(resp, "jobs"), (double)time(NULL),
	    usage ? json_object_get(usage, "users") : NULL);
	json_decref(usage);
	text = table_render(t, fmt);
	fputs(text, stdout);
	free(text);
	table_free(t);
	json_decref(resp);
	return EXIT_OK;
}

const struct command cmd_stats = {
	"stats", "gstats", "usage statistics per user", stats_exec,
	"completion --user -u --since --output -o --config --help --version",
};
