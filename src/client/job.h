/* job.h — gjob's pure parts: the Key=Value text of `gjob show` and the
 * line arithmetic of `gjob log -f/-l`. */
#ifndef GF_CLIENT_JOB_H
#define GF_CLIENT_JOB_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* Key=Value lines of one job object, newline-terminated (malloc'd). */
char *job_show_text(const json_t *job);

/* Offset in the file open on fd where its last n lines begin (a final
 * newline does not start an empty line). -1 on a read error. */
off_t job_last_lines_offset(int fd, long long n);

#endif
