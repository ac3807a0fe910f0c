/* job.h — gjob, a family of subcommands (job.c finds them): each file of
 * the family declares its entry (struct job_cmd), as tmux's cmd-*.c do;
 * what they share (jobcmd.c); and the pure parts the unit tests reach: the
 * Key=Value text of `gjob show` (jobshow.c), the line arithmetic and the
 * escaping of `gjob log` (joblog.c). */
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

/* One gjob subcommand: `gjob NAME ...` or `gjob ALIAS ...`; argv[0] is
 * the subcommand's name, the exit status is returned. */
struct job_cmd {
	const char *name;
	const char *alias;	/* the other tool's short name, or NULL */
	int (*exec)(int argc, char **argv);
};

extern const struct job_cmd job_cmd_show;		/* jobshow.c */
extern const struct job_cmd job_cmd_log;		/* joblog.c */
extern const struct job_cmd job_cmd_attach;		/* jobsession.c */
extern const struct job_cmd job_cmd_close_sessions;	/* jobsession.c */
extern const struct job_cmd job_cmd_hold;		/* jobhold.c */
extern const struct job_cmd job_cmd_release;		/* jobhold.c */
extern const struct job_cmd job_cmd_update;		/* jobedit.c */
extern const struct job_cmd job_cmd_redo;		/* jobedit.c */

/* ---- what the subcommands share (jobcmd.c) ---- */

/* One job by reference ("42", "@", "@~N"): the daemon's job object (the
 * caller owns it), or NULL with e set. */
json_t *fetch_job(const char *ref_text, struct gf_err *e);

#define J_HELP 1000 /* the --help row of a gjob subcommand's options */

/* The --help text (id J_HELP, exit 0), else the usage error in e. */
int job_help_or_fail(const char *help, int id, const char *val, struct gf_err *e);

/* "<verb> job N" per id in resp["done"], one stderr line per error;
 * EXIT_FAIL when any failed. */
int job_report_done(const json_t *resp, const char *verb);

/* POST body (taken) to path and report its answer with verb. */
int job_post_report(const char *prog, const char *path, json_t *body, const char *verb);

/* Positional words joined into one id list ("1 2,3" -> "1,2,3"; malloc'd). */
char *job_join_ids(char **words, int n);

/* The positional words of a subcommand whose only option is --help, in
 * *pos (malloc'd, *npos of them); -1 when it has answered already (the
 * help, or a usage error), its exit status in *rc. */
int job_simple_args(int argc, char **argv, const char *help, char ***pos, int *npos, int *rc);

#endif
