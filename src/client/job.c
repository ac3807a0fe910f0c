/* job.c — gjob: finds the subcommand and runs it. Each subcommand family
 * is a file of its own declaring a struct job_cmd (job.h): show
 * (jobshow.c), log (joblog.c), attach and close-sessions (jobsession.c),
 * hold and release (jobhold.c), update and redo (jobedit.c); what they
 * share is jobcmd.c. */
#include "job.h"

#include <stdio.h>
#include <string.h>

#include "command.h"

#define PROG "gjob"

/* Each subcommand's entry, defined in its own file (job*.c). */
static const struct job_cmd *const job_cmds[] = {
	&job_cmd_show, &job_cmd_log, &job_cmd_attach, &job_cmd_close_sessions,
	&job_cmd_hold, &job_cmd_release, &job_cmd_update, &job_cmd_redo,
};

static const char job_help[] =
"usage: gjob <command> [args...]\n\n"
"  show, s [-o json] IDS             a job's details, Key=Value (or JSON)\n"
"  log, l ID [-f N | -l N] [--follow] [--raw]   its output\n"
"  attach, a ID                      its terminal (tmux executor; Ctrl-b d detaches)\n"
"  close-sessions, close -a|-j IDS|-s STATES|-p TEXT\n"
"                                    kill tmux sessions of ended jobs\n"
"  hold, h IDS                       keep queued jobs from starting\n"
"  release, r IDS [--at TIME]        let held jobs queue again\n"
"  update, u IDS [options]           change queued or held jobs\n"
"  redo ID [--cascade] [options]     submit an ended job again\n"
"  completion bash|zsh|fish          a shell completion script\n\n"
"IDS: 42, 1,2,3, 1-5, 1,3,5-7; @ is your latest job, @~N the one N\n"
"before it. 'gjob <command> --help' for one command. Also: --version,\n"
"--config PATH (before the command; checked, and its timezone is the\n"
"one times are shown and read in).\n";

static int job_exec(int argc, char **argv)
{
	size_t i;
	int skip = cmd_leading_config(argc, argv, PROG);

	if (skip < 0)
		return EXIT_FAIL;
	argc -= skip;
	argv += skip;

	if (argc < 2)
		return cmd_usagef(PROG, "missing command (commands: show, log, attach, close-sessions, hold, release, update, redo)");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(job_help, stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cmd_version();
	if (strcmp(argv[1], "completion") == 0)
		return cmd_completion(&cmd_job, argc - 1, argv + 1);
	for (i = 0; i < sizeof job_cmds / sizeof job_cmds[0]; i++)
		if (strcmp(argv[1], job_cmds[i]->name) == 0 ||
		    (job_cmds[i]->alias && strcmp(argv[1], job_cmds[i]->alias) == 0))
			return job_cmds[i]->exec(argc - 1, argv + 1);
	return cmd_usagef(PROG, "unknown command '%s' (commands: show, log, "
	    "attach, close-sessions, hold, release, update, redo)", argv[1]);
}

const struct command cmd_job = {
	"job", "gjob", "show, follow and change jobs", job_exec,
	"show log attach close-sessions hold release update redo completion "
	"s l a close h r u "
	"--first --last --head --tail --follow --raw --at --cascade --all --jobs --state --states --pattern "
	"--command --script --param --gpus --gres --shared --gpu-memory --max-gpu-mem --max-gpu-memory "
	"--memory --max-mem --max-memory --memory-limit --time --time-limit --timelimit --cpus --cpus-per-task "
	"--priority --nice --name --job-name --conda-env --depends-on --dependency "
	"--depends-on-all --depends-on-any --no-auto-cancel --no-auto-cancel-on-dep-failure "
	"--auto-cancel --auto-cancel-on-dep-failure "
	"--max-retries --max-concurrent --begin --clear-gpu-memory --clear-gpu-memory-limit "
	"--clear-memory --clear-memory-limit --clear-time --clear-time-limit --clear-conda-env "
	"--clear-depends-on --clear-dependencies --clear-deps --clear-begin --clear-shared "
	"--clear-max-retries --clear-max-concurrent --output --config --help --version",
};

