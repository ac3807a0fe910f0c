/* remote.h — the client's side of jobs on a Slurm cluster: gbatch
 * --cluster, mirroring Slurm's states into the daemon (gqueue, gjob show,
 * `gflow cluster sync`), gcancel / gjob hold / release through scancel and
 * scontrol, gjob log over ssh, and `gflow cluster export`. The daemon only
 * records these jobs (api_remote.c); everything that talks to Slurm runs
 * here, as the user, with the user's own ssh. */
#ifndef GF_CLIENT_REMOTE_H
#define GF_CLIENT_REMOTE_H

#include "jsonapi.h"

#include "jobspec.h"
#include "command.h"

/* gbatch --cluster NAME (o->cluster set): translate, submit with sbatch,
 * record. Returns the exit status. */
int remote_submit(const char *prog, const struct batch_opts *o,
    const struct batch_ctx *ctx);

/* Mirror Slurm's state of the caller's open cluster jobs (of `cluster`
 * only, when not NULL) into the daemon. Quiet when the user's config names
 * no cluster. Problems are printed as warnings with prog; returns their
 * number. */
int remote_sync(const char *prog, const char *cluster, int verbose);

/* gcancel / gjob hold / gjob release ("cancel", "hold", "release"): the
 * cluster jobs among ids_text are handled here (scancel, scontrol); *rest
 * gets the references of the other jobs for the daemon, or NULL when none
 * are left. Returns EXIT_OK, or EXIT_FAIL when one failed. */
int remote_divert(const char *prog, const char *verb, const char *ids_text,
    int dry, json_t **rest);

/* gjob log of a cluster job: its output file, fetched from the cluster. */
int remote_log(const char *prog, const json_t *job);

extern const struct command cmd_cluster;

#endif
