/* main.c — `gflowd`: the daemon's command line. `gflowd run` is the daemon
 * itself (foreground); every other subcommand manages it (lifecycle.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"

static const char usage[] =
	"usage: gflowd [-c PATH] [-v...|-q] <command> [options]\n"
	"       gflowd [-c PATH] --cleanup\n"
	"\n"
	"commands:\n"
	"  start, up       start the daemon in the background and wait until it answers\n"
	"  stop, down      stop the daemon (running jobs keep running)\n"
	"  restart         stop, then start\n"
	"  reload          replace the daemon by a new one with these options, on the\n"
	"                  same sockets: no request is refused meanwhile (jobs keep running);\n"
	"                  a bad config or option leaves the daemon as it was\n"
	"  status          show whether it runs, how, and its GPUs\n"
	"  run             run the daemon in the foreground\n"
	"  init            write the config file\n"
	"  service install|uninstall   manage the systemd user service (with\n"
	"                  --system: the machine's system unit, Restart=on-failure)\n"
	"  token           print your own token for the TCP API (made on first use;\n"
	"                  --revoke: revoke it, the next 'gflowd token' makes a new one)\n"
	"  completion bash|zsh|fish    print a shell completion script\n"
	"\n"
	"options for start, up, restart, reload, run:\n"
	"  --gpus SPEC                       allow only these GPUs (0,2 | 0-3 | all)\n"
	"  --gpu-allocation-strategy S       sequential (default) or random\n"
	"  --gpu-poll-interval-secs N        NVML poll interval (default 10, minimum 1)\n"
	"  --hosting auto|systemd|tmux|process   how start hosts the daemon (default auto)\n"
	"  -c, --config PATH                 config file (default ~/.config/gflow/gflow.toml);\n"
	"                                    before or after the command\n"
	"  -v, -vv, -vvv, -vvvv              the daemon also logs each job's start and end,\n"
	"                                    each API request, each scheduler pass, each\n"
	"                                    second's check of a running job (cumulative)\n"
	"  -q, --quiet                       the daemon logs problems only\n"
	"\n"
	"  (start, reload and restart check the config and options before they\n"
	"  start or replace anything, and say what is wrong at once)\n"
	"\n"
	"options for init:\n"
	"  --yes --force --host H --port P --gpus SPEC --executor tmux|process\n"
	"  --gpu-allocation-strategy S --gpu-poll-interval-secs N\n"
	"  --timezone TZ                     an IANA name (Asia/Shanghai, UTC) written as\n"
	"                                    timezone; local (the default) writes none\n"
	"  --advanced                        also ask for the projects jobs may name and\n"
	"                                    whether one is required; write fair share,\n"
	"                                    quota and notifications as commented examples\n"
	"  -c, --config PATH                 the file to write (default as above)\n"
	"\n"
	"the machine's daemon (system mode, root; any command):\n"
	"  --system                          act on the system daemon: config\n"
	"                                    /etc/gflow/gflow.toml, state /var/lib/gflow,\n"
	"                                    socket /run/gflow/gflowd.sock; jobs run as\n"
	"                                    the users who submit them\n"
	"  --root DIR                        --system with every path under DIR (also\n"
	"                                    GFLOW_SYSTEM_ROOT=DIR)\n"
	"\n"
	"--cleanup removes the config file (-c's, else the default) and exits.\n";

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage, cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
		printf("gflowd %s\n", GFLOW_VERSION);
		return 0;
	}
	return lifecycle_main(argc - 1, argv + 1, usage);
}
