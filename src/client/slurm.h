/* slurm.h — running Slurm's commands (sbatch, squeue, sacct, scancel,
 * scontrol, cat) for gflow's client: on this machine when the cluster
 * profile names no host, else on its login node through the user's own
 * `ssh HOST`. Commands are argv vectors; for ssh each word is quoted for
 * the remote shell with cluster_shquote(), never pasted into a string. */
#ifndef GF_CLIENT_SLURM_H
#define GF_CLIENT_SLURM_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "config.h"
#include "err.h"

struct slurm_out {
	int status;	/* exit status; 127: not found; 255 from ssh: no connection */
	char *out, *err;
};
void slurm_out_free(struct slurm_out *r);

/* Run argv (NULL-terminated) for cluster k with `in` on its stdin (NULL:
 * none). Returns 0 when it ran (whatever its status), -1 with e set when
 * it could not be started, reached (ssh) or found. */
int slurm_run(const struct gf_cluster *k, char *const *argv, const char *in,
    struct slurm_out *r, struct gf_err *e);

/* The argv slurm_run would exec (for --dry-run): malloc'd, shell-quoted,
 * blank-separated. */
char *slurm_command_text(const struct gf_cluster *k, char *const *argv);

/* Write text to path on the cluster (its directory made first, mode 0700;
 * the file 0600, 0700 with exec). */
int slurm_put(const struct gf_cluster *k, const char *dir, const char *path,
    const char *text, int exec, struct gf_err *e);

/* sbatch --parsable SCRIPT: the job id in *id (malloc'd). Slurm's refusal
 * is the error, in its own words. */
int slurm_sbatch(const struct gf_cluster *k, const char *script, int64_t gpus,
    char **id, struct gf_err *e);

/* squeue, then sacct for the ids squeue no longer lists. *out gets one
 * entry per id Slurm knows (free with cluster_states_free). */
int slurm_query(const struct gf_cluster *k, char *const *ids, size_t nids,
    struct slurm_state **out, size_t *n, struct gf_err *e);

/* scancel / scontrol hold / scontrol release of these ids. */
int slurm_control(const struct gf_cluster *k, const char *verb,
    char *const *ids, size_t nids, struct gf_err *e);

#endif
