/* attach.h — `gjob attach` through a runner's attach socket (system
 * daemon, tmux executor). See attach.c. */
#ifndef GF_CLIENT_ATTACH_H
#define GF_CLIENT_ATTACH_H

/* Attach the terminal to job id through its socket at path, until Ctrl-b
 * d or the job's end. owner (may be NULL) names whom the job belongs to in
 * a refusal. Messages go to stderr; returns an exit code. */
int attach_job(long long id, const char *path, const char *owner);

#endif
