/* jobhold.c — gjob hold (alias h) and gjob release (alias r, --at TIME):
 * keep queued jobs from starting and let them queue again; a cluster
 * job's through scontrol (remote.c). */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "remote.h"
#include "util.h"

#define PROG "gjob"

static const char hold_help[] =
"usage: gjob hold IDS\n\nKeep queued jobs from starting until released.\n";

static int job_hold(int argc, char **argv)
{
	char **pos, *ids;
	int npos, rc = EXIT_OK;
	json_t *body, *refs;

	if (job_simple_args(argc, argv, hold_help, &pos, &npos, &rc) < 0)
		return rc;
	if (!npos) {
		free(pos);
		return cmd_usagef(PROG, "usage: gjob hold IDS");
	}
	ids = job_join_ids(pos, npos);
	free(pos);
	/* jobs on a Slurm cluster: scontrol hold (remote.c) */
	rc = remote_divert(PROG, "hold", ids, 0, &refs);
	free(ids);
	if (!refs)
		return rc;
	body = json_object();
	json_object_set_new(body, "ids", refs);
	if (job_post_report(PROG, "/jobs/hold", body, "Held") != EXIT_OK)
		rc = EXIT_FAIL;	/* rc: what the cluster's jobs gave */
	return rc;
}

enum { R_AT };

static const struct opt_def release_opts[] = {
	{ R_AT, "at", 0, 1 }, { J_HELP, "help", 'h', 0 },
};

static const char release_help[] =
"usage: gjob release IDS [--at TIME]\n\n"
"Let held jobs queue again, now or at TIME (HH:MM[:SS],\n"
"YYYY-MM-DD[THH:MM[:SS]], now+N[s|m|h|d]).\n";

static int job_release(int argc, char **argv)
{
	struct opt_parser p;
	struct sbuf ids = { 0 };
	struct gf_err e;
	const char *val;
	time_t at = 0;
	int id, has_at = 0, rc;
	json_t *body, *refs, *resp, *done;
	size_t i;

	opt_init(&p, argc, argv, 1, release_opts,
	    sizeof release_opts / sizeof release_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL) {
			sbuf_addf(&ids, "%s%s", ids.len ? "," : "", val);
		} else if (id == R_AT) {
			if (gf_parse_begin_time(val, time(NULL), &at, &e) < 0) {
				sbuf_free(&ids);
				return cmd_usage_error(PROG, &e);
			}
			has_at = 1;
		} else {
			sbuf_free(&ids);
			return job_help_or_fail(release_help, id, val, &e);
		}
	}
	if (!ids.len)
		return cmd_usagef(PROG, "usage: gjob release IDS [--at TIME]");
	/* jobs on a Slurm cluster: scontrol release (remote.c); --at is
	 * this daemon's and not Slurm's */
	if (!has_at) {
		int rrc = remote_divert(PROG, "release", ids.p, 0, &refs);

		sbuf_free(&ids);
		if (!refs)
			return rrc;
	} else {
		refs = jobref_list_json(ids.p, &e);
		sbuf_free(&ids);
		if (!refs)
			return cmd_usage_error(PROG, &e);
	}
	body = json_object();
	json_object_set_new(body, "ids", refs);
	json_object_set_new(body, "at", has_at ? json_integer(at) : json_null());
	resp = api_post("/jobs/release", body, &e);
	json_decref(body);
	if (!resp)
		return cmd_fail(PROG, &e);
	if (!has_at) {
		rc = job_report_done(resp, "Released");
	} else {
		char when[64];

		fmt_local_time((double)at, when, sizeof when);
		done = json_object_get(resp, "done");
		for (i = 0; i < json_array_size(done); i++)
			printf("Job %lld will be released at %s\n",
			    (long long)json_integer_value(json_array_get(done, i)),
			    when);
		json_object_set_new(resp, "done", json_array());
		rc = job_report_done(resp, "Released");
	}
	json_decref(resp);
	return rc;
}

const struct job_cmd job_cmd_hold = { "hold", "h", job_hold };
const struct job_cmd job_cmd_release = { "release", "r", job_release };
