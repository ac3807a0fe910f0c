/* jobcmd.c — what gjob's subcommands (job*.c) share: one job fetched by
 * reference, positional ids joined into one list, the done/errors answer
 * of a POST reported, --help or a usage error, and the positional words
 * of a subcommand that takes no option but --help. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "parse.h"
#include "util.h"

#define PROG "gjob"

/* One job by reference: GET /jobs/<id>, or GET /jobs?ids=@~N for the @
 * forms (the daemon resolves those for the caller). Caller owns it. */
json_t *fetch_job(const char *ref_text, struct gf_err *e)
{
	struct gf_jobref ref;
	struct sbuf path = { 0 };
	char buf[32];
	json_t *resp, *job;

	if (gf_parse_jobref(ref_text, &ref, e) < 0)
		return NULL;
	if (!ref.is_relative) {
		sbuf_addf(&path, "/jobs/%lld", (long long)ref.id);
	} else {
		snprintf(buf, sizeof buf, "@~%lld", (long long)ref.back);
		sbuf_adds(&path, "/jobs");
		url_add_param(&path, "ids", buf);
	}
	resp = api_get(path.p, e);
	sbuf_free(&path);
	if (!resp)
		return NULL;
	job = json_object_get(resp, "job");
	if (!job)
		job = json_array_get(json_object_get(resp, "jobs"), 0);
	if (!json_is_object(job)) {
		json_decref(resp);
		gf_err_set(e, "job %s does not exist", ref_text);
		return NULL;
	}
	json_incref(job);
	json_decref(resp);
	return job;
}

/* Join positional words into one ID list ("1 2,3" -> "1,2,3"). */
char *job_join_ids(char **words, int n)
{
	struct sbuf b = { 0 };
	int i;

	for (i = 0; i < n; i++) {
		if (i)
			sbuf_addc(&b, ',');
		sbuf_adds(&b, words[i]);
	}
	return sbuf_take(&b);
}

/* Print "<verb> job N" for each id in resp["done"] and one stderr line
 * per error; EXIT_FAIL when any failed. */
int job_report_done(const json_t *resp, const char *verb)
{
	json_t *done = json_object_get(resp, "done");
	json_t *errs = json_object_get(resp, "errors");
	size_t i;

	for (i = 0; i < json_array_size(done); i++)
		printf("%s job %lld\n", verb,
		    (long long)json_integer_value(json_array_get(done, i)));
	for (i = 0; i < json_array_size(errs); i++) {
		struct sbuf line = { 0 };

		fmt_job_error(&line, json_array_get(errs, i), "failed");
		fprintf(stderr, "%s: %s\n", PROG, sbuf_str(&line));
		sbuf_free(&line);
	}
	return json_array_size(errs) ? EXIT_FAIL : EXIT_OK;
}

int job_post_report(const char *prog, const char *path, json_t *body, const char *verb)
{
	struct gf_err e;
	json_t *resp = api_post(path, body, &e);
	int rc;

	json_decref(body);
	if (!resp)
		return cmd_fail(prog, &e);
	rc = job_report_done(resp, verb);
	json_decref(resp);
	return rc;
}

int job_help_or_fail(const char *help, int id, const char *val,
    struct gf_err *e)
{
	(void)val;
	if (id == J_HELP) {
		fputs(help, stdout);
		return EXIT_OK;
	}
	return cmd_usage_error(PROG, e);
}

static const struct opt_def help_only[] = { { J_HELP, "help", 'h', 0 } };

/* Positional words of a subcommand with only --help; returns -1 when it
 * already answered (*rc set). */
int job_simple_args(int argc, char **argv, const char *help,
    char ***pos, int *npos, int *rc)
{
	struct opt_parser p;
	struct gf_err e;
	const char *val;
	int id;

	*pos = xcalloc((size_t)argc + 1, sizeof **pos);
	*npos = 0;
	opt_init(&p, argc, argv, 1, help_only, 1, 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		if (id == OPT_POSITIONAL) {
			(*pos)[(*npos)++] = (char *)val;
			continue;
		}
		*rc = job_help_or_fail(help, id, val, &e);
		free(*pos);
		*pos = NULL;
		return -1;
	}
	return 0;
}
