/* standby.h — a runner started ahead of its job (`gflow-runner --standby`,
 * see standby.c). */
#ifndef GF_RUNNER_STANDBY_H
#define GF_RUNNER_STANDBY_H

#include <stdbool.h>

/* What follows a request on the pipe: a held start (--hold) is let go by
 * one byte, "g"; EOF instead gives it up. */
enum standby_after {
	STANDBY_OPEN,		/* nothing yet: *pipe_out is the pipe, to wait on */
	STANDBY_GO,		/* "g" came with the request */
	STANDBY_EOF,		/* the pipe ended (or sent anything else) */
};

/* Waits on stdin for the daemon's request: the words of a runner's command
 * line after argv[0], each ending in a NUL, then one more NUL. Returns 0
 * with *argv_out (argv0 first, NULL-terminated, one allocation with the
 * words), *argc_out and *after set, and *pipe_out the pipe (close-on-exec)
 * when *after is STANDBY_OPEN, else -1; 1 when stdin ended without a whole
 * request (the daemon stopped, or gave up on this standby): nothing is to
 * be done; -1 when it could not be read. stdin is /dev/null afterwards. */
int standby_wait(const char *argv0, int *argc_out, char ***argv_out, enum standby_after *after, int *pipe_out);

/* For a held start: blocks until the byte that lets it go. True: go. */
bool standby_released(int pipe);

/* What ps shows of us becomes "gflow-runner --job ID", written over the
 * words after argv[0] (the daemon leaves room), when it fits. */
void standby_retitle(char **argv, const char *job);

#endif
