/* standby.h — a runner started ahead of its job (`gflow-runner --standby`,
 * see standby.c). */
#ifndef GF_RUNNER_STANDBY_H
#define GF_RUNNER_STANDBY_H

/* Waits on stdin for the daemon's request: the words of a runner's command
 * line after argv[0], each ending in a NUL, then one more NUL. Returns 0
 * with *argv_out (argv0 first, NULL-terminated, one allocation with the
 * words) and *argc_out set; 1 when stdin ended without a whole request (the
 * daemon stopped, or gave up on this standby): nothing is to be done; -1
 * when it could not be read. stdin is /dev/null afterwards. */
int standby_wait(const char *argv0, int *argc_out, char ***argv_out);

/* What ps shows of us becomes "gflow-runner --job ID", written over the
 * words after argv[0] (the daemon leaves room), when it fits. */
void standby_retitle(char **argv, const char *job);

#endif
