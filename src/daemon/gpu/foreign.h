/* foreign.h — GPU processes that are no job of gflow's (foreign.c): who
 * runs them, and what [gpu] foreign_processes makes of them. Knows no jobs. */
#ifndef GF_FOREIGN_H
#define GF_FOREIGN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

struct foreign_proc {
	pid_t pid;
	uint64_t used_mb;		/* 0 when NVML cannot tell */
	bool visible;			/* the pid exists in this pid namespace */
	bool ignored;			/* gctl gpu-process ignore */
	bool blocks;			/* makes its GPU unavailable */
	const char *exempt;		/* why it does not block (policy), else NULL */
	bool have_uid;
	uid_t uid;
	char user[64];
	char cmd[32];			/* /proc/<pid>/comm */
	int64_t age_secs;		/* -1 unknown */
};

/* foreign.c — foreign GPU processes named, and the [gpu] policy */
void foreign_describe(pid_t pid, uint64_t used_mb, bool visible, struct foreign_proc *f);
void foreign_apply_policy(const struct gf_config *cfg, struct foreign_proc *f);
void foreign_label(const struct foreign_proc *f, char *buf, size_t size);	/* "pid=… user=… cmd=… age=… mem=…" */
json_t *foreign_json(const struct foreign_proc *f);

#endif
