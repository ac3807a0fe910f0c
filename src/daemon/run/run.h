/* run.h — the run layer (src/daemon/run/): starting and watching runners.
 * spawn.c (the forks), exec.c (a job's start), rundir.c (its files),
 * standby.c (runners started ahead), tmux.c and tmuxctl.c (the tmux
 * executor), reap.c (runners that end or die), track.c (a job's
 * processes), devices.c (which GPUs it may open), failure.c (why it
 * failed). May call: store, state, gpu, core, common. A runner's end goes
 * up as GF_EV_RUNNER_ENDED and GF_EV_JOB_FREED; a spare taken as
 * GF_EV_SPARE_TAKEN. */
#ifndef GF_RUN_H
#define GF_RUN_H

#include "txn.h"

/* failure.c — a Failed job with no reason yet: OutOfMemory:GPU (its log's
 * tail), Signal:<name> */
void failure_classify(struct server *s, struct job *j, const struct job_result *r);

/* devices.c — [gpu] constrain_devices: what a job may open */
#define NVIDIA_MAJOR 195
/* Write the job's rules into its v1 devices group dir: every /dev/nvidiaN
 * but its own GPUs' is denied (nvidiactl, nvidia-modeset and nvidia-uvm
 * stay allowed). */
int devices_restrict(struct server *s, const struct job *j, const char *dir, struct gf_err *e);
/* CUDA_VISIBLE_DEVICES for the units in mask: NVML indices, and MIG-<uuid>
 * for MIG devices (from the last snapshot). */
void devices_cuda_visible(struct server *s, uint64_t mask, char *buf, size_t size);

/* cpus.c — CPUs as a resource: s->cpus_total and s->cpu_list from the
 * daemon's affinity and [daemon] cpus (an error names the key when it asks
 * more than the daemon may use); with [daemon] constrain_cpus, a starting
 * job's cpu_ids (the first CPUs no other active job holds), else none. */
int cpus_setup(struct server *s, struct gf_err *e);
void cpus_assign(struct server *s, struct job *j);

/* exec.c — a job's start; spawn.c — the forks (the only files that fork) */
int exec_init(struct server *s, struct gf_err *e);	/* opens the run and log directories */
void exec_close(struct server *s);
/* System mode: a user's home (passwd); whether they may enter cwd and read
 * script (checked as them, in a child), else e says what they cannot. */
int exec_owner_home(uid_t uid, char *home, size_t size, struct gf_err *e);
int exec_check_owner(uid_t uid, const char *cwd, const char *script, struct gf_err *e);
/* 0 its runner is started, 1 the start was handed to a standby runner
 * (which announces itself within moments), -1 e says why not. */
int exec_start_job(struct server *s, struct job *j, struct gf_err *e);
/* Would j's start go to the standby, and may it be held (jobs_txn_sync)? */
bool exec_holds_start(const struct server *s, const struct job *j);
void exec_reap(void);	/* collects runners that exited (they are our children) */
/* tmux.c: tmux and its server's socket; the words of a job's new-session
 * up to the `--` (trace: room for the trace's variable). */
struct argv;
int tmux_sock(const struct server *s, char *sock, size_t size, struct gf_err *e);
int tmux_server(struct server *s, char *tmux, size_t size, char *sock, size_t ssize, struct gf_err *e);
void tmux_new_session_words(struct argv *w, const char *session, char *trace, size_t size);
/* argv as our child, its stdin and stdout+stderr pipes to us (our ends
 * non-blocking, close-on-exec); from_child NULL: its output goes to ours. */
int exec_spawn_piped(char *const argv[], int *to_child, int *from_child, pid_t *pid, struct gf_err *e);
/* The same with stdin one end of a socket pair, *sock the other (ours,
 * non-blocking, close-on-exec); its output goes to ours. */
int exec_spawn_socket(char *const argv[], int *sock, pid_t *pid, struct gf_err *e);

/* argv started, its stdout and stderr appended to log_path (NULL: ours);
 * waited for when wait_for_exit, its status then in *status. */
int exec_spawn(char *const argv[], const char *log_path, bool wait_for_exit, int *status,
	       struct gf_err *e);
/* A command for the daemon's tmux server: through the control client,
 * else (it cannot be used) with a tmux client of its own. 0 sent or done. */
int exec_tmux_command(struct server *s, char *const words[], size_t nwords);
int exec_tmux_standby(struct server *s, const char *session, const char *fifo);
/* A command with a tmux client of its own: `tmux -S sock` with words. For
 * session's new-session, tried again while that session does not exist;
 * session NULL: any other command, run once. */
int exec_tmux_client(const char *tmux, const char *sock, const char *session, char *const words[],
		     size_t nwords, struct gf_err *e);

/* rundir.c — a start's files: run directory, lists, log, spares, attach
 * socket. A list is NUL-separated words in a growing buffer. */
struct gf_bytes {
	char *p;
	size_t len, cap;
};
void rundir_path(struct server *s, const struct job *j, char *buf, size_t size);
/* The run directory, new (nothing there is reused or followed): its
 * descriptor, its path in dir; -1 e says why not. */
int rundir_make(struct server *s, const struct job *j, char *dir, size_t size, struct gf_err *e);
/* The log, new (a name that is taken is passed over: ID.1.log, …, told in
 * RUNDIR/logseq, dfd); only a job whose earlier start never ran finds its
 * own. Its path in path. */
int rundir_make_log(struct server *s, const struct job *j, int dfd, char *path, size_t size, struct gf_err *e);
/* The spare log renamed to j's first name, LOGDIR/ID.log (its path in
 * path): 0, or -1 when there is no spare or that name is taken (nothing
 * done). */
int rundir_log_spare(struct server *s, const struct job *j, char *path, size_t size);
/* The job's environment (what it was submitted with, less gflow's own
 * variables, and gflow's) and command (conda's activation first). */
int rundir_env(struct server *s, const struct job *j, struct gf_bytes *out, struct gf_err *e);
struct gf_bytes rundir_argv(const struct job *j);
/* What the runner needs of the job that its command line must not show
 * (cwd, log; owner, when not NULL, and groups: who the job runs as, in
 * system mode): NAME=value entries. */
struct gf_bytes rundir_spec(const struct job *j, const char *log, bool log_new, const char *owner,
			    const char *groups);
/* RUNDIR/env, RUNDIR/argv and RUNDIR/spec, for a runner that reads them
 * from files. */
int rundir_write_lists(int dfd, const char *dir, const struct gf_bytes *env, const struct gf_bytes *argv,
		       const struct gf_bytes *spec, struct gf_err *e);
/* RUNDIR/limits: the submitter's resource limits, which the runner sets on
 * the job (every runner reads it; none when the job has none). */
int rundir_write_limits(int dfd, const char *dir, const struct job *j, struct gf_err *e);
/* A job's run directory, no longer needed: kept emptied for a later start
 * (RUNDIR/.spare.K) or removed (rundir.c). */
void rundir_remove(struct server *s, const struct job *j);
/* The kept ones a stopped daemon left, removed (at start). */
void rundir_drop_recycled(struct server *s);
/* A start's run directory and log, made ahead (see rundir.c). */
void rundir_make_spares(struct server *s);
/* System mode, tmux executor: the job's attach socket (false: it has none). */
bool rundir_attach_socket(struct server *s, const struct job *j, char *buf, size_t size);
/* Its directory made (root's, 0711) and a stale socket removed. */
int rundir_attach_prepare(struct server *s, const struct job *j, char *sock, size_t size, struct gf_err *e);

/* tmuxctl.c: the tmux executor's control client. Sends the same words for
 * j: 0 sent, 1 when the client cannot be used (exec_tmux_client then). */
int tmuxctl_new_session(struct server *s, const struct job *j, const char *tmux, const char *sock,
			const char *session, char *const words[], size_t nwords);
/* Any other command through the client: 0 sent (an error answer is
 * logged), 1 the client cannot be used. */
int tmuxctl_command(struct server *s, const char *tmux, const char *sock, char *const words[], size_t nwords);
void tmuxctl_close(struct server *s);
/* standby.c: the standby runner. standby_hand gives it a runner's argv
 * (argv[0] the runner) and after it the bytes of more (what the options
 * say follows): 0 handed, 1 there is none or it could not take it
 * (start a runner then). hold: the job waits before its exec until
 * standby_release (after the commit that started it is synced); EOF instead
 * — we stopped — and the runner gives the start up. Handed, *chan is the
 * runner: its socket, and its pidfd (-1: none) and pid (the caller's:
 * reap_report_watch). standby_want makes one in a moment unless there is
 * one. */
struct iovec;
struct standby_chan {
	int fd, pidfd;
	pid_t pid;
};
int standby_hand(struct server *s, char *const argv[], const struct iovec *more, int nmore, bool hold,
		 struct standby_chan *chan);
bool standby_ready(const struct server *s);
void standby_release(struct server *s);
/* The run directory and log spares (rundir.c) are made again in a moment. */
void standby_want_spares(struct server *s);
/* The tmux executor's standby: a session whose runner waits for its
 * request on a FIFO. standby_hand_tmux hands it j's start as standby_hand
 * does and renames its session to j's; 1 when there is none (yet). */
void standby_want_tmux(struct server *s);
int standby_hand_tmux(struct server *s, const struct job *j, char *const argv[], const struct iovec *more, int nmore,
		      bool hold);
bool standby_tmux_ready(const struct server *s);
void standby_want(struct server *s);
void standby_close(struct server *s);
/* pool.c: the standbys waiting. standby_take_back holds a runner back from
 * the job it served (its end recorded; reap.c): on its socket fd it waits
 * for the next job's, as a standby does; when GF_STANDBY_MAX wait, it is
 * let go (closed: it exits). standby_room: whether one would be held now
 * (the answer "K" asks the runner back). standby_idle: how many wait. */
int standby_idle(const struct server *s);
bool standby_room(const struct server *s);
void standby_take_back(struct server *s, const struct standby_chan *c);

/* reap.c — watching runners, and recording how each ended */
int reap_init(struct server *s, struct gf_err *e);
void reap_watch_start(struct server *s, struct job *j, bool standby);	/* after exec */
/* The runner of a job launched will not come (tmuxctl.c): the run
 * directory claimed, the end recorded with why. */
void reap_start_failed(struct server *s, struct job *j, const char *why);
/* A start undone before anything ran (no descriptors for it): the job
 * queues again. */
void reap_start_undo(struct server *s, struct job *j);
int reap_recover(struct server *s, struct gf_err *e);	/* at daemon start */
int reap_signal(struct server *s, struct job *j, int sig);
/* Tell the runner to preempt the job (its preempt_sig, then SIGKILL after
 * preempt_secs; runfile.h's GF_PREEMPT_VALUE). -1: not attached yet (the
 * attach sends it). */
int reap_preempt(struct server *s, struct job *j);
/* After the commit of j's end (or to drop it): its runner's watch, run
 * directory and groups go; a runner that told its result on its socket is
 * answered, and the rest waits for its exit. */
void reap_forget(struct server *s, struct job *j);
/* The socket of j's runner (a standby given --report), to read its result
 * on, and its pidfd, watched once the runner announces itself with that
 * pid (both are the job's then, also when -1 is returned). */
int reap_report_watch(struct server *s, struct job *j, const struct standby_chan *c);
/* The store refused to record j's end (r: its result, or none): the job
 * says so and the backstop reads its result again (end_pending). */
void reap_end_unrecorded(struct server *s, struct job *j, const struct job_result *r);
/* The runner is gone (or ended by the backstop): the job's end is queued
 * with its result or why there is none, and what is left of it is killed. */
void reap_runner_gone(struct server *s, struct job *j);
/* Signal the process a pidfd refers to (pidfd_send_signal). */
int reap_pidfd_signal(int fd, int sig);
/* A running job's reason while its end cannot be recorded (a full disk). */
#define GF_DISK_NOTE "WaitingForDisk: "
void reap_close(struct server *s);			/* at shutdown */
void reap_job_close(struct job *j);	/* at shutdown: what watches j's runner */

/* backstop.c — every second, each running job checked to be supervised
 * (s->watch_ev: reap_end_unrecorded makes it run at once) */
void backstop_init(struct server *s);
void backstop_close(struct server *s);

/* track.c — each job's processes, known to the daemon itself */
int track_setup(struct server *s, struct gf_err *e);	/* before any thread starts */
void track_close(struct server *s);
const char *track_method_name(const struct server *s);
json_t *track_json(struct server *s);
/* "GFLOW_JOB_MARK=…" for this start: put in the job's environment. */
void track_marker(struct server *s, const struct job *j, char *buf, size_t size);
/* Make this start's groups; fills paths (the runner joins them). Returns
 * their count, or (size_t)-1 with e set. *runner_makes: asked, the first
 * (the v2 group) is left for the runner to make (`--make-cgroup`: a
 * standby's, which makes it while the start's commit is synced), where
 * the daemon sets nothing in it; false when it was made here. A job
 * process is only ever born inside it, so until it is made none exists
 * (track_empty). track_make_group makes it when the start goes elsewhere. */
size_t track_prepare(struct server *s, const struct job *j, char paths[][GF_PATH_MAX], bool *runner_makes,
		     struct gf_err *e);
int track_make_group(const char *dir, struct gf_err *e);
size_t track_pids(struct server *s, const struct job *j, pid_t **out);	/* malloc'd */
bool track_empty(struct server *s, const struct job *j);
void track_kill(struct server *s, const struct job *j);	/* SIGKILL all that is left */
void track_release(struct server *s, const struct job *j);	/* remove its groups */
struct job *track_owner(struct server *s, pid_t pid);	/* the active job of a process */
void track_observe(struct server *s);	/* session way: remember what is seen */

#endif
