/* parse.h — pure parsers for user-typed values: time limits, memory sizes,
 * bounded integers, job references and ID lists, GPU index sets, begin
 * times, array specs, sweep parameters and "{k}" name templates.
 *
 * Every parser returns 0 on success, or -1 with a message in `e` (may be
 * NULL) that quotes the input and names the bad part. None does I/O or
 * keeps state; gf_parse_begin_time calls tzset() so TZ is honoured. */
#ifndef GF_PARSE_H
#define GF_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

#define GF_TIME_LIMIT_MAX_SECS (365 * 24 * 3600LL) /* 365 days */
#define GF_MEMORY_MAX_MB       (1LL << 40)         /* 1 EiB, in MiB */
#define GF_MAX_LIST_IDS        100000 /* ids one ID list may expand to */
#define GF_MAX_ARRAY_TASKS     100000 /* tasks one array spec may expand to */
#define GF_MAX_PARAM_VALUES    100000 /* values one sweep parameter may have */
#define GF_BEGIN_MAX_OFFSET    (100 * 365 * 24 * 3600LL) /* now+N: 100 years */

/* "N" (minutes), "MM:SS", "HH:MM:SS", "D-HH:MM:SS" -> seconds, 1 s to 365
 * days. Non-leading fields must be < 60 (hours < 24 after a day count). */
int gf_parse_time_limit(const char *s, int64_t *secs, struct gf_err *e);

/* A span of time: "2h", "30m", "1h30m", "1d", "90s", "90" (minutes), or a
 * time limit's HH:MM:SS forms -> seconds, 1 s to 100 years. `what` names
 * the value in messages ("--duration", "range"). */
int gf_parse_duration(const char *s, const char *what, int64_t *secs,
    struct gf_err *e);

/* "100" (MiB), "1024M", "1024MB", "2G", "1.5G", "1T", "512K" (KiB, MiB,
 * ... spellings too; units case-insensitive) -> MiB, rounded up, > 0. */
int gf_parse_memory_mb(const char *s, int64_t *mb, struct gf_err *e);

/* A decimal integer (optional leading '-') in [min, max]; `what` names the
 * field in messages ("priority"). */
int gf_parse_int_range(const char *s, int64_t min, int64_t max,
    const char *what, int64_t *out, struct gf_err *e);

/* One job: a positive id, "@" (the submitter's most recent job) or "@~N"
 * (N before it; "@~0" is "@"). */
struct gf_jobref {
	int is_relative;
	int64_t id;   /* when !is_relative */
	int64_t back; /* N when is_relative */
};
int gf_parse_jobref(const char *s, struct gf_jobref *out, struct gf_err *e);

/* "42", "1,2,3", "1-5", "1,3,5-7", "1,@,@~2": ranges expanded (at most
 * GF_MAX_LIST_IDS ids before de-duplication), duplicates dropped keeping
 * the first occurrence. `out->v` is owned by the caller: free it with
 * gf_jobref_list_free(). On failure *out is empty. */
struct gf_jobref_list {
	struct gf_jobref *v;
	size_t n;
};
int gf_parse_jobref_list(const char *s, struct gf_jobref_list *out,
    struct gf_err *e);
void gf_jobref_list_free(struct gf_jobref_list *l);

/* "all" (*all = 1, *mask = 0) or a list of indices 0..63 and ranges
 * ("0-1,3,5-6") -> bit mask, *all = 0. */
int gf_parse_gpu_spec(const char *s, uint64_t *mask, int *all,
    struct gf_err *e);
/* Mask -> compact ranges ("0-1,3"); empty mask -> "". snprintf semantics:
 * returns the length the full text needs, writes at most size - 1 chars. */
int gf_format_gpu_mask(uint64_t mask, char *buf, size_t size);

/* Local-time begin time relative to `now`: "HH:MM[:SS]" (next occurrence,
 * strictly after now), "YYYY-MM-DD[(T| )HH:MM[:SS]]", "now", "now+N"
 * (minutes) and "now+N(s|m|h|d)". */
int gf_parse_begin_time(const char *s, time_t now, time_t *out,
    struct gf_err *e);

/* A --since value: the time it names, at or before now for every form
 * but a date still ahead (then nothing was submitted since). "N[s|m|h|d|w]"
 * (N alone: minutes) and "now-N…" ago, "today"/"yesterday" (local
 * midnight), "HH:MM[:SS]" (its last occurrence), "YYYY-MM-DD[THH:MM[:SS]]".
 * Errors say "invalid --since '…'". */
int gf_parse_since(const char *s, time_t now, time_t *out, struct gf_err *e);

/* "1-10", "1,3,5", "0-20:2", "1-3,7", optional "%K" (at most K at once,
 * K >= 1; max_concurrent is 0 without it). Ids >= 0, at most
 * GF_MAX_ARRAY_TASKS before de-duplication, duplicates dropped keeping
 * order. Free with gf_array_spec_free(). On failure *out is empty. */
struct gf_array_spec {
	int64_t *ids;
	size_t n;
	int64_t max_concurrent;
};
int gf_parse_array_spec(const char *s, struct gf_array_spec *out,
    struct gf_err *e);
void gf_array_spec_free(struct gf_array_spec *a);

/* "k=a,b,c" (literal values) or "k=a:b[:step]" (numeric, inclusive range,
 * step > 0, default 1; values printed with minimal digits). Key matches
 * [A-Za-z_][A-Za-z0-9_]*. Free with gf_param_free(). On failure *out is
 * empty. */
struct gf_param {
	char *key;
	char **values;
	size_t n;
};
int gf_parse_param(const char *s, struct gf_param *out, struct gf_err *e);
void gf_param_free(struct gf_param *p);

/* Replace "{key}" in `tmpl` by its value; "{{" -> "{", "}}" -> "}".
 * Returns a malloc'd string, or NULL with `e` set (unknown key, unclosed
 * or empty placeholder, lone '}'). */
char *gf_fill_template(const char *tmpl, const char *const *keys,
    const char *const *values, size_t n, struct gf_err *e);

/* gbatch --signal SIG@SECS (preemptible jobs): the signal, by name ("TERM",
 * "SIGUSR1", any case) or number, then "@" and the seconds before the kill
 * (0..GF_PREEMPT_MAX_SECS); "@SECS" may be left out (60). `flag` names the
 * option in the error ("--signal"). */
#define GF_PREEMPT_MAX_SECS 3600
#define GF_PREEMPT_DEFAULT_SECS 60
int gf_parse_signal_spec(const char *s, const char *flag, int *sig, int *secs, struct gf_err *e);
/* The short name of a signal gf_parse_signal_spec takes ("TERM"), or NULL. */
const char *gf_signal_name(int sig);

#endif
