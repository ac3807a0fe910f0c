/* format.h — how the clients show values: durations, memory sizes, local
 * times, exit statuses, job states and argv lines quoted for display.
 * Pure functions; none of them does I/O. */
#ifndef GF_CLIENT_FORMAT_H
#define GF_CLIENT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "jsonapi.h"

#include "util.h"

/* "H:MM:SS" below a day, "D-HH:MM:SS" from one day on; negative -> 0. */
void fmt_duration(int64_t secs, char *buf, size_t size);

/* Elapsed run time of a job object at `now`: start to end (or to now while
 * running); "0:00" when it has not started. */
void fmt_job_elapsed(const json_t *job, double now, char *buf, size_t size);

/* Exact size as typed back: "2G" when a whole number of GiB (also "1T"),
 * else "1500M". */
void fmt_mb(int64_t mb, char *buf, size_t size);
/* Rounded size for humans: "512M", "1.5G", "80G". */
void fmt_mb_human(int64_t mb, char *buf, size_t size);

/* Local time "YYYY-MM-DDTHH:MM:SS"; "-" for t <= 0. */
void fmt_local_time(double t, char *buf, size_t size);

/* "SIGKILL" for 9; NULL when unknown. */
const char *fmt_signal_name(int sig);
/* Exit status of a job object: "0", "1", "signal 9 (SIGKILL)", or "-"
 * when it has none. `compact` gives "SIGKILL" instead of the long form. */
void fmt_exit(const json_t *job, int compact, char *buf, size_t size);

/* User-controlled text made safe for a terminal: control characters and
 * bytes that are not UTF-8 shown as C escapes (\e, \x07, \xff; bytes.h's
 * gf_escape). Every human-readable output passes such text through here. */
void fmt_text(struct sbuf *b, const char *s);
/* The same, as a new string. */
char *fmt_escaped(const char *s);

/* Quote one word for display the way bash would read it back: bare when
 * safe, '...' otherwise, $'...' with escapes when it holds control
 * characters or bytes that are not UTF-8. */
void fmt_shell_word(struct sbuf *b, const char *w);
/* A JSON array of byte strings (strings or {"base64"}) as one
 * shell-quoted line (malloc'd). */
char *fmt_argv_line(const json_t *argv);
/* A byte string (path) of a job object, escaped for display; NULL when
 * absent (malloc'd). */
char *fmt_bytes_field(const json_t *o, const char *key);

/* One error of an answer's "errors" list ({"id", "error"}) as a line
 * naming the job once: "job 3: <error>", or the error alone when it
 * already says "job 3". Escaped; no newline. */
void fmt_job_error(struct sbuf *b, const json_t *err, const char *fallback);

/* Canonical state name ("Running") for a name or short code in any case
 * ("running", "R", "pd"); NULL when unknown. Also accepts "pending",
 * "completed", "held", "cancelled"/"canceled". */
const char *state_canonical(const char *s);
/* Short code of a canonical state name ("Queued" -> "PD"); "?" if unknown. */
const char *state_short(const char *name);
/* 1 for Finished, Failed, Cancelled and Timeout. */
int state_is_ended(const char *name);

/* A JSON array of integers as "0,1,3" (malloc'd; "" when empty). */
char *fmt_int_list(const json_t *arr);

#endif
