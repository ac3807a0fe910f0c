/* runner.h — what the files of gflow-runner share: its options, the state
 * of the one job it supervises (struct runner), and the functions one file
 * offers another. Each file calls only the files below it here, so none
 * calls one that calls back into it:
 *   main.c       the order of a run, the announcement, a standby's handshake
 *   supervise.c  the poll() loop until the job and its descendants are gone
 *   result.c     RUNDIR/result
 *   child.c      the start of the job's process
 *   pane.c       the job's terminal
 *   attach.c     its viewers (attach.h)
 *   runner.c     say(), the clocks
 *   outbuf.c     struct outbuf
 * and the leaves opts.c, owner.c, standby.c and vmclone.c. Upward only
 * through the hooks given at setup (attach.h's attach_hooks). */
#ifndef GF_RUNNER_H
#define GF_RUNNER_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <termios.h>

#include "err.h"
#include "owner.h"
#include "rlimits.h"

#define MAX_CGROUPS 4
#define QUIET_SECS 0.05		/* draining: how long the pty must stay quiet before we stop */

struct attach;
struct job_result;

struct opts {
	const char *job, *dir, *log, *cwd;	/* log, cwd: RUNDIR/spec's (read_spec), or given */
	const char *cgroups[MAX_CGROUPS];	/* to join before the job starts */
	int ncgroups;
	double time_limit, grace;	/* seconds; time_limit 0: none */
	long long uid, gid;		/* the job's owner (--uid/--gid), -1: as we are */
	bool log_new;			/* --log-new: a new log, the first free name from log on */
	bool pty;
	bool hold;			/* --hold (a standby's): the exec waits for the daemon's byte */
	bool report;			/* --report (a standby's): the result is told on stdin's socket */
	bool make_cgroup;		/* --make-cgroup (a standby's): the first --cgroup is ours to make */
	/* --env-bytes/... (a standby's): on stdin, -1: files */
	long long env_bytes, argv_bytes, spec_bytes, limits_bytes;
	const char *attach;		/* --attach: the socket to offer the pty at */
	long long attach_gid;		/* --attach-group, -1: none */
	bool interactive;		/* --interactive (galloc): the job ends when its caller leaves */
	double attach_wait;		/* --attach-wait: seconds for its caller to attach (default 60) */
	char **argv;			/* NULL: read RUNDIR/argv */
};

/* Bytes waiting for a non-blocking fd: a ring of max bytes, allocated
 * when first needed. */
struct outbuf {
	char *data;
	size_t head, len, max;
};

/* What the child reports through its close-on-exec pipe when it cannot
 * become the job. */
enum { STAGE_CWD = 1, STAGE_EXEC = 2, STAGE_USER = 3, STAGE_HOLD = 4, STAGE_LIMIT = 5, STAGE_CPUS = 6 };
struct child_err {
	int stage, err;
	int which;	/* STAGE_LIMIT: the limit's index (rlimits.h) */
};

struct runner {
	struct opts o;
	char *env_blob;		/* the env file, NUL-separated */
	char **envp;		/* points into env_blob */
	char *argv_blob;	/* the argv file, when the command was not given */
	char *spec_blob;	/* the spec file (cwd, log), NUL-separated */
	char *limits_blob;	/* a standby's limits (--limits-bytes), else NULL */
	char **spec;		/* points into spec_blob */
	const char *cpus;	/* spec's cpus= ([daemon] constrain_cpus): "0-1,4", or NULL */
	/* spec's owner= and groups= (system mode): the owner's name and
	 * supplementary groups, looked up by the daemon; NULL: we look */
	const char *spec_owner, *spec_groups;
	cpu_set_t cpuset;	/* what cpus says; the child pins the job to it */
	char log_path[4096];	/* the log opened: o.log, or the free name after it */
	bool log_failed;	/* open_log failed: log_err says why (start_job reports it) */
	struct gf_err log_err;
	char **argv;		/* the job's command */
	char **argv_owned;	/* words made by expanding job variables */
	size_t nargv;
	int dirfd;		/* RUNDIR, opened without following links */
	int sigfd, logfd;
	int holdfd;		/* --hold: the daemon's pipe, to wait on before the exec; -1: go */
	int chan;		/* --report: the daemon's socket, to tell the result on; -1: none */
	bool moved;		/* moved itself into a v1 group: the daemon waits for its exit */
	bool stay;		/* the daemon recorded the told result and asks us to serve its next job */
	unsigned long long start_ticks;	/* ours, read ahead by a standby as it waits; 0: not yet */
	/* A standby's unnamed file for its next job's log (-1: none), made in
	 * spare_dir after a job whose log it made (spare_log_make). */
	int spare_log;
	char spare_dir[4096];
	bool output_due;	/* a standby without runner.out yet (say()) */
	/* The signals ignored here, bit sig - 1: of what a process is given,
	 * only an ignored disposition outlives exec (handlers are reset), so
	 * these are what the job's child sets back to the default. Those we
	 * were started with are read ahead of any job (a standby reads them as
	 * it waits), by the system call: glibc hides the signals it reserves
	 * (32, 33), whose ignored disposition is inherited all the same. */
	uint64_t ignored_signals;

	pid_t pid;		/* the job's main process (and its process group) */
	bool reaped, gone;	/* main process waited for; no children left */
	long peak_rss_kb;	/* the most any process of the job waited for held (wait4) */
	int status;
	int errfd;		/* read end of the child's error pipe */
	struct child_err cerr;
	bool have_cerr;
	double start_real, start_mono, deadline;	/* deadline 0: no limit */

	const int *ladder;	/* signals to send, in order, NULL until needed */
	int nladder, step;
	double next_step;
	double ladder_grace;	/* seconds between its steps */
	int preempt_ladder[2];	/* the job's --signal, then SIGKILL */
	const char *ended_by;

	int master;		/* pty master, -1 when closed or not --pty */
	bool pane_in, pane_out;	/* stdin/stdout still usable */
	struct outbuf to_pane, to_job;
	double drain_deadline;
	double quiet_until;	/* draining: close once the pty has been quiet until then */
	int slave_keep;		/* our copy of the pty slave: see start_job */
	struct termios pane_saved;
	bool pane_restore;
	int pane_flags[2];	/* fcntl flags of fds 0 and 1 to restore, -1: none */

	bool enforced;		/* a joined cgroup limits memory */
	struct owner owner;	/* whom the job runs as (system daemon) */
	struct gf_rlimits limits;	/* RUNDIR/limits, capped at ours: set on the job */
	struct attach *attach;	/* viewers of the pty (--attach), NULL: none */
};

/* runner.c: the leaf every file may call */
double now_mono(void);
double now_real(void);
/* A line for whoever looks into why the job ended (our stderr; a standby's
 * runner.out, made when first needed). */
__attribute__((format(printf, 2, 3))) void say(struct runner *r, const char *fmt, ...);
/* Make RUNDIR/runner.out our stdout and stderr (a standby on the daemon's
 * pipe): at once under --pty, else by say() when first needed. */
int own_output(struct runner *r, struct gf_err *e);

/* outbuf.c: the leaf ring of bytes */
void outbuf_add(struct outbuf *b, const char *data, size_t n);
/* -1 on a real error (the reader is gone); 0 when all or what fits now is written. */
int outbuf_flush(struct outbuf *b, int fd);
void outbuf_free(struct outbuf *b);

/* opts.c */
int parse_opts(int argc, char **argv, struct opts *o, struct gf_err *e);
int read_env(struct runner *r, struct gf_err *e);
int read_argv(struct runner *r, struct gf_err *e);
int read_limits(struct runner *r, struct gf_err *e);
int read_spec(struct runner *r, struct gf_err *e);

/* supervise.c */
/* Cancel, child exits, pane resizes through r->sigfd; hangups, broken
 * pipes and terminal stops ignored (and told to r->ignored_signals). */
int setup_signals(struct runner *r, struct gf_err *e);
int become_subreaper(struct gf_err *e);
/* Between two jobs (a standby serving its next): what was sent for the one
 * that ended is dropped, and a cancel or SIGINT ends us while we wait, as
 * it ends a standby that never served. */
void rest_signals(struct runner *r);
/* Until the job and every descendant are gone and the pty is drained. */
void supervise(struct runner *r);

/* child.c */
void read_ignored_signals(struct runner *r);
/* Open the job's log (as its owner); what fails is kept for start_job. */
void open_log(struct runner *r);
void spare_log_make(struct runner *r);
/* Start the job's process. -1 (e set) when it could not be started at all. */
int start_job(struct runner *r, struct gf_err *e);
/* The job and all of it gone: its groups go with it (rmdir), where we are
 * not in them (v2's, where the job was born), as soon as its result is
 * told (report_result: while the daemon records the end; before any result
 * file): the daemon, which made them, finds them gone instead of removing
 * them on its own path from one job to the next. A group still populated,
 * or with groups below it, stays for the daemon. */
void leave_cgroups(const struct runner *r);
/* Like a shell's: 127, 126, or 1 (its directory, its owner, its limits). */
int child_exit_code(const struct child_err *ce);

/* result.c */
void fill_result(struct runner *r, struct job_result *res);
void result_not_started(struct runner *r, const char *msg, struct job_result *res);
/* Write RUNDIR/result, again and again until it can be. */
void write_result(struct runner *r, const struct job_result *res);
/* --report: res told to the daemon on r->chan, and the job's groups left
 * while the daemon records it; 0 when the daemon answered that it
 * recorded it (its end is on disk): then there is nothing to write. -1:
 * write_result, as without --report. */
int report_result(struct runner *r, const struct job_result *res);

/* pane.c */
bool copy_winsize(const struct runner *r);
int open_pty(struct runner *r, int *slave, struct gf_err *e);
void pane_setup(struct runner *r);
void pane_restore(struct runner *r);
void pane_write(struct runner *r, const char *data, size_t n);
void close_master(struct runner *r);
void from_master(struct runner *r);
void from_pane(struct runner *r);
void offer_attach(struct runner *r);
void pane_flush_final(struct runner *r);

#endif
