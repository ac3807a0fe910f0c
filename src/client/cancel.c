/* cancel.c — gcancel: cancel jobs (POST /jobs/cancel), naming the queued
 * jobs cancelled with them because they depended on them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "format.h"
#include "http.h"
#include "opt.h"
#include "remote.h"
#include "util.h"

#define PROG "gcancel"

enum { C_DRY_RUN, C_KILL, C_CONFIG, C_HELP, C_VERSION };

static const struct opt_def cancel_opts[] = {
	{ C_DRY_RUN, "dry-run", 'n', 0 }, { C_KILL, "kill", 0, 0 },
	{ C_CONFIG, "config", 0, 1 },
	{ C_HELP, "help", 'h', 0 }, { C_VERSION, "version", 'V', 0 },
};

static const char cancel_help[] =
"usage: gcancel [--dry-run] [--kill] IDS\n"
"       gcancel completion bash|zsh|fish\n\n"
"Cancel queued, held or running jobs. Running jobs get SIGINT, then\n"
"SIGTERM, then SIGKILL. Queued jobs that depend on a cancelled job are\n"
"cancelled with it (unless submitted with --no-auto-cancel).\n"
"IDS: 42, 1,2,3, 1-5, 1,3,5-7, @ (your latest job), @~N.\n\n"
"  -n, --dry-run      list what would be cancelled; cancel nothing\n"
"      --kill         what gcancel always does to a running job (the\n"
"                     signals above end in SIGKILL); accepted so that\n"
"                     scripts written with it keep working\n"
"      --config PATH  config file: checked; its timezone is used\n"
"  -h, --help         this help\n"
"  -V, --version      print the version\n";

static int id_in(const json_t *arr, json_int_t id)
{
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		json_t *v = json_array_get(arr, i);

		if ((json_is_integer(v) && json_integer_value(v) == id) ||
		    (json_is_object(v) && jint(v, "id", -1) == id))
			return 1;
	}
	return 0;
}

/* The parent a cascaded job was cancelled for: the answer may say so
 * ({"id","parent"}); else it is looked up among the job's dependencies. */
static json_int_t parent_of(const json_t *dep, const json_t *lookup,
    const json_t *cancelled, const json_t *dependents)
{
	json_int_t id = json_is_object(dep) ? jint(dep, "id", 0) :
	    json_integer_value(dep);
	json_t *jobs = json_object_get(lookup, "jobs");
	size_t i, k;

	if (json_is_object(dep) && jhas(dep, "parent"))
		return jint(dep, "parent", 0);
	for (i = 0; i < json_array_size(jobs); i++) {
		json_t *j = json_array_get(jobs, i);
		json_t *parents = json_object_get(j, "depends_on");

		if (jint(j, "id", -1) != id)
			continue;
		for (k = 0; k < json_array_size(parents); k++) {
			json_int_t p = json_integer_value(
			    json_array_get(parents, k));

			if (id_in(cancelled, p))
				return p;
		}
		for (k = 0; k < json_array_size(parents); k++) {
			json_int_t p = json_integer_value(
			    json_array_get(parents, k));

			if (id_in(dependents, p))
				return p;
		}
	}
	return 0;
}

/* GET the dependents' job objects (for their depends_on), or NULL. */
static json_t *lookup_dependents(const json_t *dependents)
{
	struct sbuf ids = { 0 }, query = { 0 }, path = { 0 };
	struct gf_err e;
	json_t *resp;
	size_t i;

	for (i = 0; i < json_array_size(dependents); i++) {
		json_t *d = json_array_get(dependents, i);

		if (json_is_object(d) && jhas(d, "parent"))
			continue;
		sbuf_addf(&ids, "%s%lld", ids.len ? "," : "", (long long)
		    (json_is_object(d) ? jint(d, "id", 0) :
		    json_integer_value(d)));
	}
	if (!ids.len)
		return NULL;
	url_add_param(&query, "ids", ids.p);
	url_add_param(&query, "users", "all");
	sbuf_adds(&path, "/jobs");
	sbuf_adds(&path, query.p);
	resp = api_get(path.p, &e);
	sbuf_free(&ids);
	sbuf_free(&query);
	sbuf_free(&path);
	return resp;
}

static int cancel_exec(int argc, char **argv)
{
	struct opt_parser p;
	struct sbuf ids = { 0 };
	struct gf_err e;
	const char *val, *verb;
	int id, dry = 0, rc = EXIT_OK;
	json_t *body, *refs, *resp, *cancelled, *dependents, *errs, *lookup;
	size_t i;

	if (argc >= 2 && strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_cancel, argc - 1, argv + 1);
	opt_init(&p, argc, argv, 1, cancel_opts,
	    sizeof cancel_opts / sizeof cancel_opts[0], 1);
	while ((id = opt_next(&p, &val, &e)) != OPT_END) {
		switch (id) {
		case OPT_ERROR:
			sbuf_free(&ids);
			return cmd_usage_error(PROG, &e);
		case OPT_POSITIONAL:
			sbuf_addf(&ids, "%s%s", ids.len ? "," : "", val);
			break;
		case C_DRY_RUN:
			dry = 1;
			break;
		case C_KILL:
			break; /* the default: see the help */
		case C_CONFIG:
			if (cmd_check_config(val, &e) < 0) {
				sbuf_free(&ids);
				return cmd_fail(PROG, &e);
			}
			break;
		case C_HELP:
			sbuf_free(&ids);
			fputs(cancel_help, stdout);
			return EXIT_OK;
		case C_VERSION:
			sbuf_free(&ids);
			return cmd_version();
		}
	}
	if (!ids.len)
		return cmd_usagef(PROG, "usage: gcancel IDS [--dry-run]");
	/* jobs on a Slurm cluster go to scancel (remote.c) */
	rc = remote_divert(PROG, "cancel", ids.p, dry, &refs);
	sbuf_free(&ids);
	if (!refs)
		return rc;
	body = json_object();
	json_object_set_new(body, "ids", refs);
	json_object_set_new(body, "dry_run", json_boolean(dry));
	resp = api_post("/jobs/cancel", body, &e);
	json_decref(body);
	if (!resp)
		return cmd_fail(PROG, &e);
	verb = dry ? "Would cancel" : "Cancelled";
	cancelled = json_object_get(resp, "cancelled");
	dependents = json_object_get(resp, "dependents");
	errs = json_object_get(resp, "errors");
	for (i = 0; i < json_array_size(cancelled); i++)
		printf("%s job %lld\n", verb,
		    (long long)json_integer_value(json_array_get(cancelled, i)));
	lookup = json_array_size(dependents) ? lookup_dependents(dependents) :
	    NULL;
	for (i = 0; i < json_array_size(dependents); i++) {
		json_t *d = json_array_get(dependents, i);
		json_int_t did = json_is_object(d) ? jint(d, "id", 0) :
		    json_integer_value(d);
		json_int_t parent = parent_of(d, lookup, cancelled, dependents);

		if (parent)
			printf("%s job %lld (dependency of %lld)\n", verb,
			    (long long)did, (long long)parent);
		else
			printf("%s job %lld (dependency)\n", verb,
			    (long long)did);
	}
	json_decref(lookup);
	for (i = 0; i < json_array_size(errs); i++) {
		struct sbuf line = { 0 };

		fmt_job_error(&line, json_array_get(errs, i), "cannot cancel");
		fprintf(stderr, "%s: %s\n", PROG, sbuf_str(&line));
		sbuf_free(&line);
		rc = EXIT_FAIL;
	}
	json_decref(resp);
	return rc;
}

const struct command cmd_cancel = {
	"cancel", "gcancel", "cancel jobs", cancel_exec,
	"completion --dry-run -n --kill --config --help --version",
};
