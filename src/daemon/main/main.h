/* main.h — the main layer (src/daemon/main/): the program. main.c,
 * loop.c (start, the loop, reload, stop), wire.c (who hears which event),
 * and `gflowd`'s commands: lifecycle.c, options.c, hosting.c, talk.c,
 * lcutil.c, setup.c. May call: every layer. */
#ifndef GF_MAIN_H
#define GF_MAIN_H

#include "api.h"

/* loop.c */
int server_run(const struct daemon_opts *opts);
/* What a start can know before it takes anything over: the config (file
 * and the GFLOW_* variables of envp), the options, the runner. cfg is
 * filled (free it) on success. */
int server_check(const struct daemon_opts *o, char *const *envp, struct gf_config *cfg, struct gf_err *e);

/* util */
int64_t meminfo_total_mb(void);

#endif
