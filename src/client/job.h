/* job.h — gjob's pure parts: the Key=Value text of `gjob show` and the
 * line arithmetic of `gjob log -f/-l`. */
#ifndef GF_CLIENT_JOB_H
#define GF_CLIENT_JOB_H

#include <stddef.h>
#include <sys/types.h>

#include "jsonapi.h"

#include "err.h"

/* Key=Value lines of one job object, newline-terminated (malloc'd). */
char *job_show_text(const json_t *job);

/* Offset in the file open on fd where its last n lines begin (a final
 * newline does not start an empty line). -1 on a read error. */
off_t job_last_lines_offset(int fd, long long n);

/* gjob log's output on a terminal: the log's bytes with gf_escape's
 * escapes (bytes.h) for everything but line feeds, tabs and a CR before a
 * line feed, appended to out. The end of a chunk that may go on in the
 * next (a CR, the start of a UTF-8 character) is held in h for the next
 * call; final gives it out as it is. */
struct sbuf;
struct log_escaper {
	char hold[4];
	size_t nhold;
};
void job_log_escape(struct log_escaper *h, const char *in, size_t n, int final, struct sbuf *out);

/* One job by reference ("42", "@", "@~N"): the daemon's job object (the
 * caller owns it), or NULL with e set. */
json_t *fetch_job(const char *ref_text, struct gf_err *e);

/* ---- shared by job.c and jobedit.c ---- */

#define J_HELP 1000 /* the --help row of a gjob subcommand's options */

/* The --help text (id J_HELP, exit 0), else the usage error in e. */
int job_help_or_fail(const char *help, int id, const char *val, struct gf_err *e);

/* "<verb> job N" per id in resp["done"], one stderr line per error;
 * EXIT_FAIL when any failed. */
int job_report_done(const json_t *resp, const char *verb);

/* POST body (taken) to path and report its answer with verb. */
int job_post_report(const char *prog, const char *path, json_t *body, const char *verb);

/* gjob update / gjob redo (jobedit.c). */
int job_update(int argc, char **argv);
int job_redo(int argc, char **argv);

#endif
