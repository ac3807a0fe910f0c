/* config.h — gflow.toml and its GFLOW_* environment overrides.
 *
 * gf_config_load() reads the file (explicit --config path, else
 * $XDG_CONFIG_HOME/gflow/gflow.toml, else ~/.config/gflow/gflow.toml; a
 * missing default file means defaults), checks every key, then applies
 * GFLOW_<SECTION>__<KEY> variables from the environment it is given.
 * Unknown keys, wrong types and bad values are errors that name the file,
 * line, column and key, or the variable. */
#ifndef GF_CONFIG_H
#define GF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum gf_strategy { GF_STRATEGY_SEQUENTIAL, GF_STRATEGY_RANDOM };
enum gf_executor { GF_EXEC_TMUX, GF_EXEC_PROCESS };
enum gf_overuse { GF_OVERUSE_WARN, GF_OVERUSE_CANCEL };
enum gf_idle_action { GF_IDLE_WARN, GF_IDLE_CANCEL };	/* "requeue" is refused for now */

#define GF_DEFAULT_PORT 59000
#define GF_MAX_GPUS 64		/* GPU indices are 0..63 */

/* -1 = unlimited */
struct gf_quota {
	int64_t max_running_jobs, max_running_gpus, max_queued_jobs;
	int64_t max_gpu_hours_per_day;	/* GPU-hours in any rolling 24 h */
};

struct gf_named_quota {
	char *name;
	struct gf_quota q;
};

/* [[notifications.webhooks]] (or webhooks = [{ ... }]) */
struct gf_webhook {
	char *url;			/* http:// or https:// */
	char **events;			/* empty = every event */
	size_t n_events;
	char **filter_users;		/* empty = every user */
	size_t n_filter_users;
	char **header_names, **header_values;	/* headers = { Name = "value" } */
	size_t n_headers;
	int timeout_secs;		/* default 10 */
	int max_retries;		/* default 3 */
};

/* [[notifications.emails]]: an SMTP transport, its fixed recipients and
 * subscriptions. Per-job mail (gbatch --notify-email) goes through the first. */
struct gf_email {
	char *smtp_url;			/* smtp[s]://[user:pass@]host[:port][?tls=required|opportunistic] */
	char *from;			/* "addr" or "Name <addr>" */
	char **to;			/* fixed recipients; may be none */
	size_t n_to;
	char **events;			/* empty = every event */
	size_t n_events;
	char **filter_users;		/* empty = every user */
	size_t n_filter_users;
	char *subject_prefix;		/* or NULL */
	int timeout_secs;		/* default 10 */
	int max_retries;		/* default 3 */
};

/* [clusters.<name>]: a Slurm cluster gbatch --cluster sends jobs to
 * (client side only; see docs/slurm.md). */
struct gf_cluster {
	char *name;
	char *type;			/* "slurm" (the only type) */
	char *host;			/* login node for `ssh HOST`; NULL: sbatch here */
	char *partition, *account, *qos; /* NULL: the cluster's default */
	char *remote_dir;		/* scripts and logs; NULL: ~/gflow-slurm there */
	char *prelude;			/* shell lines run before the job, or NULL */
	char **map_from, **map_to;	/* path_map: local prefix -> remote prefix */
	size_t n_map;
};

struct gf_config {
	char *path;			/* file that was read, or NULL when none existed */
	char *host;			/* [daemon] host, default "localhost" */
	int port;			/* [daemon] port, default 59000, 1..65535 */
	int gpus_set;			/* [daemon] gpus given (file or env)? */
	uint64_t gpus_mask;		/* bit i = GPU i allowed; "all" = every bit */
	char gpus_source[64];		/* "config" or "env GFLOW_DAEMON__GPUS" */
	enum gf_strategy strategy;	/* [daemon] gpu_allocation_strategy */
	int gpu_poll_interval_secs;	/* [daemon] default 10, min 1 */
	char *admin_group;		/* [daemon] admin_group: its members are admins; NULL none */
	int max_user_priority;		/* [daemon] how far a user's own priority counts across
					 * users (system mode), default 10, 0..255 */
	int max_connections_per_user;	/* [daemon] default 64: open API connections of one uid */
	int64_t default_runtime_estimate; /* [daemon] seconds a job without a time limit is assumed
					   * to run, for expected starts; 0 (default): unknown */
	int cpus;			/* [daemon] CPUs jobs may book; -1 (unset): those the
					 * daemon may use (sched_getaffinity); 0: not counted */
	int constrain_cpus;		/* [daemon] pin each job to cpus of its own, default 0 */
	int64_t gpu_unmanaged_min_memory_mb;	/* [gpu] default 0: every foreign process blocks */
	char **gpu_unmanaged_ignore_commands;	/* [gpu] command names that never block */
	size_t n_gpu_unmanaged_ignore_commands;
	enum gf_overuse gpu_shared_overuse;	/* [gpu] shared_overuse, default warn */
	int gpu_constrain_devices;		/* [gpu] constrain_devices, default 0 */
	/* [gpu.idle_reclaim] (share/idle.c): off unless the table (or a
	 * GFLOW_GPU__IDLE_RECLAIM__* variable) is given; enabled = false
	 * turns a given one off. */
	int idle_enabled;			/* after loading: 1 on, 0 off */
	int idle_given;				/* a key of the table was set */
	int64_t idle_after_secs;		/* after, default 2h */
	int64_t idle_warn_before_secs;		/* warn_before, default 15m */
	int idle_threshold_util;		/* threshold_util, percent 1..100, default 5 */
	enum gf_idle_action idle_action;	/* action, default warn */
	int idle_apply_all;			/* apply_to: 0 "interactive" (default), 1 "all" */
	int fair_share_enabled;		/* [daemon.fair_share] enabled, default 1 */
	int64_t fair_share_half_life_secs; /* [daemon.fair_share] default 604800 (7 days), > 0 */
	enum gf_executor executor;	/* [executor] type, default tmux */
	char **known_projects;		/* [projects] known_projects */
	size_t n_known_projects;
	int require_project;		/* [projects] require_project, default 0 */
	struct gf_quota quota_default_user;	/* [quota.default_user] */
	struct gf_quota quota_default_project;	/* [quota.default_project] */
	struct gf_named_quota *quota_users;	/* [quota.users.<name>] */
	size_t n_quota_users;
	struct gf_named_quota *quota_projects;	/* [quota.projects.<name>] */
	size_t n_quota_projects;
	int notifications_enabled;	/* [notifications] enabled, default 0 */
	struct gf_webhook *webhooks;	/* [notifications] webhooks, in file order */
	size_t n_webhooks;
	struct gf_email *emails;	/* [notifications] emails, in file order */
	size_t n_emails;
	int notify_max_concurrent;	/* [notifications] max_concurrent_deliveries, default 4, 1..64 */
	char *timezone;			/* top-level timezone (checked), or NULL: the clients
					 * show and read times in it (cmd.c) */
	struct gf_cluster *clusters;	/* [clusters.<name>], in file order */
	size_t n_clusters;
};

/* Defaults only. Allocates host; release with gf_config_free(). */
void gf_config_defaults(struct gf_config *c);

/* Fill c (which holds nothing yet) from defaults, the file and envp (a
 * NULL-terminated "K=V" array such as environ; NULL = empty). The config
 * file location is found from XDG_CONFIG_HOME and HOME in envp (HOME falls
 * back to the password database). Environment overrides: GFLOW_<SECTION>__
 * <KEY>, sections nested with "__", names case-insensitive, e.g.
 * GFLOW_DAEMON__PORT=6000, GFLOW_DAEMON__FAIR_SHARE__ENABLED=yes,
 * GFLOW_QUOTA__USERS__alice__MAX_RUNNING_JOBS=2 (the user name verbatim),
 * GFLOW_TIMEZONE. Other GFLOW_* variables holding "__" are errors.
 * Returns 0, or -1 with e set and c holding nothing (free is still safe). */
/* A time zone gflow accepts: "local", "UTC", or an IANA name this machine
 * knows (a file under $TZDIR or /usr/share/zoneinfo). Returns 0, or -1
 * with e saying why. */
int gf_timezone_check(const char *tz, struct gf_err *e);

int gf_config_load(const char *explicit_path, char *const *envp, struct gf_config *c,
    struct gf_err *e);

/* Check text as the contents of the file at path (which it names in its
 * messages), without reading the file or the environment. */
int gf_config_check_text(const char *path, const char *text, size_t len, struct gf_err *e);

void gf_config_free(struct gf_config *c);

/* [clusters.<name>], or NULL. */
const struct gf_cluster *gf_config_cluster(const struct gf_config *c, const char *name);

/* The quota for a user / project: its own entry, else the default. */
const struct gf_quota *gf_config_user_quota(const struct gf_config *c, const char *user);
const struct gf_quota *gf_config_project_quota(const struct gf_config *c, const char *project);

#endif
