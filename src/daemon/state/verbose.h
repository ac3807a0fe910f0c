/* verbose.h — how much the daemon says (gflowd -q, -v … -vvvv).
 *
 *  -1 (-q)   problems only: no start, stop or reload lines
 *   0        problems, and when it starts, stops, reloads (the default)
 *   1 (-v)   also each job's start and end
 *   2 (-vv)  also each API request (method, path, caller)
 *   3 (-vvv) also each scheduler pass (jobs waiting, running, started)
 *   4 (-vvvv) also each second's check of each running job's runner */
#ifndef GF_VERBOSE_H
#define GF_VERBOSE_H

extern int gflowd_verbosity;

/* "gflowd: <text>\n" on stderr when the verbosity is at least level. */
void vlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
