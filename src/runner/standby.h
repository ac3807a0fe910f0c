/* standby.h — a runner started ahead of its job (`gflow-runner --standby`,
 * see standby.c). */
#ifndef GF_RUNNER_STANDBY_H
#define GF_RUNNER_STANDBY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The daemon's pipe once the request is read: what came after it is kept
 * (the job's environment and command when the options say so, then, for a
 * held start (--hold), one byte, "g", that lets it go; EOF instead gives
 * it up). */
struct standby_pipe {
	int fd;			/* close-on-exec; -1 once it ended */
	char *rest;		/* read past what was taken */
	size_t nrest;
};

/* Waits on `in` for the daemon's request: the words of a runner's command
 * line after argv[0], each ending in a NUL, then one more NUL. `in` is
 * stdin (a socket of the daemon's; /dev/null afterwards), that socket
 * again (kept close-on-exec by a runner serving its next job), or, `fifo`,
 * a FIFO opened non-blocking (under tmux, whose pane is stdin), which waits
 * for the daemon to open it unless the daemon (pid `daemon`, 0: not
 * watched) is gone. Returns 0 with *argv_out (argv0 first, NULL-terminated, one
 * allocation with the words), *argc_out and *p set (p takes `in` over); 1
 * when the request did not come whole (the daemon stopped, or gave up on
 * this standby): nothing is to be done; -1 when it could not be read. */
int standby_wait(int in, bool fifo, pid_t daemon, const char *argv0, int *argc_out, char ***argv_out,
		 struct standby_pipe *p);

/* The next n bytes, in *out (malloc'd, NUL added). -1 when the pipe ends
 * first or cannot be read. */
int standby_take(struct standby_pipe *p, size_t n, char **out);

/* For a held start, after what it takes: 1 let go (the byte came with the
 * rest), 0 given up (EOF, or anything but the byte), -1 still to come: wait
 * with standby_released(p->fd). */
int standby_let_go(const struct standby_pipe *p);

/* Blocks until the byte that lets a held start go. True: go. */
bool standby_released(int fd);

void standby_pipe_close(struct standby_pipe *p);

/* What ps shows of us becomes "gflow-runner --job ID", written over the
 * words after argv[0] (the daemon leaves room), when it fits; job NULL:
 * "gflow-runner --standby" again (waiting for the next). */
void standby_retitle(char **argv, const char *job);

#endif
