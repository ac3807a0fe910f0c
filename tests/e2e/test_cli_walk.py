"""Nothing accepted and ignored (issue 12, items 6 and 7): every flag that
any program's --help names is known to that program, is offered by its
shell completion, and has an effect — shown here for gbatch, gjob update
and gqueue by what the flag changes (an alias changes exactly what its
name does), and for the rest by the test named for it in ELSEWHERE. Every
key of the configuration reference, written as the reference writes it,
works or is refused as not supported."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

E2E = Path(__file__).parent

# (program words, the program whose completion offers them)
HELPS = [
    (["gbatch"], "gbatch"), (["gqueue"], "gqueue"), (["ginfo"], "ginfo"), (["gcancel"], "gcancel"),
    (["gstats"], "gstats"), (["gjob"], "gjob"), (["gjob", "show"], "gjob"), (["gjob", "log"], "gjob"),
    (["gjob", "attach"], "gjob"), (["gjob", "close-sessions"], "gjob"), (["gjob", "hold"], "gjob"),
    (["gjob", "release"], "gjob"), (["gjob", "update"], "gjob"), (["gjob", "redo"], "gjob"),
    (["gctl"], "gctl"), (["gflowd"], "gflowd"), (["galloc"], "galloc"),
]
# words of help prose that look like flags but are examples of other things
PROSE = {"--flag", "--i", "-FIELD"}
# per program: words of its help's prose that are another program's flags
PROSE_OF = {("gcancel",): {"--no-auto-cancel"}, ("gbatch",): {"-c"}, ("gjob", "attach"): {"--follow"}}
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9]|-[a-zA-Z]{1,4})(?![\w-])")
# flags a help names for a deeper subcommand: probed there
WHERE = {("gctl", "--gpu"): ["gctl", "gpu-process", "ignore"], ("gctl", "--pid"): ["gctl", "gpu-process", "ignore"]}


def help_flags(g, words):
    out = g.cli(*words, "--help", check=True).stdout
    return sorted({f for f in FLAG.findall(out) if f not in PROSE and f not in PROSE_OF.get(tuple(words), ())})


def all_help_flags(g):
    return [(tuple(w), comp, f) for w, comp in HELPS for f in help_flags(g, w)]


def unknown(stderr, flag):
    return f"unknown option '{flag}'" in stderr or f"unknown option '{flag[:2]}'" in stderr and len(flag) == 2


def test_every_help_flag_is_known_and_completed(gflow):
    g = gflow
    g.start()
    completions = {}
    bad = []
    for words, comp, flag in all_help_flags(g):
        if comp not in completions:
            completions[comp] = {sh: g.cli(comp, "completion", sh, check=True).stdout
                                 for sh in ("bash", "zsh", "fish")}
        probe = WHERE.get((words[0], flag), list(words))
        # --help after it: a known flag is parsed (and its value checked),
        # then the help answers; nothing is submitted or changed
        r = g.cli(*probe, flag, "--help")
        if unknown(r.stderr, flag) or "unexpected argument" in r.stderr and flag in r.stderr:
            bad.append(f"{' '.join(words)}: {flag} is in --help but refused: {r.stderr.strip()}")
        for sh, text in completions[comp].items():
            # fish names a long option without its dashes: "-l name"
            word = f"-l {flag[2:]}" if sh == "fish" else flag
            if flag.startswith("--") and not re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text):
                bad.append(f"{' '.join(words)}: {flag} is not offered by '{comp} completion {sh}'")
    assert not bad, "\n".join(bad)


def test_completions_offer_every_subcommand(gflow):
    g = gflow
    for prog, subs in (("gjob", ["show", "log", "attach", "close-sessions", "hold", "release", "update", "redo",
                                 "s", "l", "a", "close", "h", "r", "u", "completion"]),
                       ("gctl", ["show-gpus", "set-gpus", "gpu-process", "set-limit", "completion"]),
                       ("gflowd", ["start", "up", "stop", "down", "restart", "reload", "status", "init",
                                   "service", "token", "completion"])):
        for shell in ("bash", "zsh", "fish"):
            out = g.cli(prog, "completion", shell, check=True).stdout
            for s in subs:
                assert re.search(r"(?<![\w-])" + re.escape(s) + r"(?![\w-])", out), (prog, shell, s)


# ---- effects, shown by what each flag changes ---------------------------------------

VOLATILE = {"id", "submit_time", "log_path", "tmux_session", "tmux_socket", "env_id", "run_seq", "group_id",
            "dependents", "reason", "st", "state"}


def job_view(g, jid):
    return {k: v for k, v in g.job(jid).items() if k not in VOLATILE}


def submitted(g, r):
    return [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")]


# flag: (arguments, the flag it is an alias of, or None)
GBATCH = {
    "--gpus": (["--gpus", "1"], None), "--gres": (["--gres", "1"], "--gpus"),
    "--shared": (["--shared", "--gpus", "1", "--gpu-memory", "1G"], None),
    "--gpu-memory": (["--gpu-memory", "1G"], None), "--max-gpu-mem": (["--max-gpu-mem", "1G"], "--gpu-memory"),
    "--max-gpu-memory": (["--max-gpu-memory", "1G"], "--gpu-memory"),
    "--memory": (["--memory", "1G"], None), "--max-mem": (["--max-mem", "1G"], "--memory"),
    "--max-memory": (["--max-memory", "1G"], "--memory"),
    "--cpus": (["--cpus", "2"], None), "--cpus-per-task": (["--cpus-per-task", "2"], "--cpus"),
    "--time": (["--time", "5"], None), "--time-limit": (["--time-limit", "5"], "--time"),
    "--timelimit": (["--timelimit", "5"], "--time"),
    "--priority": (["--priority", "50"], None), "--nice": (["--nice", "50"], "--priority"),
    "--name": (["--name", "nm"], None), "-J": (["-J", "nm"], "--name"), "--job-name": (["--job-name", "nm"], "--name"),
    "--project": (["--project", "pj"], None), "-P": (["-P", "pj"], "--project"),
    "--depends-on": (["--depends-on", "FIRST"], None), "--dependency": (["--dependency", "FIRST"], "--depends-on"),
    "--depends-on-all": (["--depends-on-all", "FIRST"], None),
    "--depends-on-any": (["--depends-on-any", "FIRST"], None),
    "--no-auto-cancel": (["--no-auto-cancel"], None), "--begin": (["--begin", "2030-01-01T00:00"], None),
    "--max-retries": (["--max-retries", "2"], None),
    "--conda-env": (["--conda-env", "myenv"], None),
    "--array": (["--array", "3-4"], None), "--max-concurrent": (["--array", "3-4", "--max-concurrent", "1"], None),
    "--param": (["--param", "k=1"], None), "--name-template": (["--param", "k=1", "--name-template", "n{k}"], None),
}
# per-job mail: shown with a mail transport configured
NOTIFY = {
    "--notify-email": ["--notify-email", "a@example.com"],
    "--notify-on": ["--notify-email", "a@example.com", "--notify-on", "job_failed"],
}


@pytest.fixture
def fake_conda(gflow):
    d = gflow.tmp / "condabin"
    d.mkdir()
    (d / "conda").write_text("#!/bin/sh\nexit 0\n")
    (d / "conda").chmod(0o755)
    return {"PATH": f"{d}:{gflow.env['PATH']}"}


def test_every_gbatch_flag_has_an_effect(gflow, fake_conda):
    g = gflow
    g.gpus(2)
    g.start()
    first = g.submit("--hold", "true")
    base = job_view(g, g.submit("--hold", "true"))
    seen = {}
    for flag, (args, alias) in GBATCH.items():
        args = [str(first) if a == "FIRST" else a for a in args]
        r = g.cli("gbatch", "--hold", *args, "true", env=fake_conda, check=True)
        view = job_view(g, submitted(g, r)[0])
        assert view != base, f"gbatch {flag}: the job is as without it"
        seen[flag] = view
    for flag, (args, alias) in GBATCH.items():
        if alias:
            assert seen[flag] == seen[alias], f"gbatch {flag} is not the same as {alias}"
    assert first
    # the flags that are not about the job itself
    n = len(g.cli("gqueue", "-a", "-o", "json", check=True).stdout)
    r = g.cli("gbatch", "--dry-run", "true", check=True)
    assert "Would submit" in r.stdout and len(g.cli("gqueue", "-a", "-o", "json", check=True).stdout) == n
    held = submitted(g, g.cli("gbatch", "--hold", "true", check=True))[0]
    assert g.job(held)["state"] == "Hold"
    bad = g.tmp / "bad.toml"
    bad.write_text("[daemon]\nnot_a_key = 1\n")
    r = g.cli("gbatch", "--config", str(bad), "true")
    assert r.returncode != 0 and "not_a_key" in r.stderr
    csvf = g.tmp / "p.csv"
    csvf.write_text("k\n7\n")
    r = g.cli("gbatch", "--hold", "--param-file", str(csvf), "echo", "{k}", check=True)
    assert g.job(submitted(g, r)[0])["command"] == ["echo", "7"]
    helped = set(help_flags(g, ["gbatch"])) - {"--help", "-h", "--version", "-V"}
    covered = set(GBATCH) | set(NOTIFY) | {"--dry-run", "--hold", "--config", "--param-file"} | set(ELSEWHERE["gbatch"])
    assert helped <= covered, f"gbatch flags with no effect shown: {sorted(helped - covered)}"


@pytest.mark.parametrize("flag", sorted(NOTIFY))
def test_gbatch_notify_flags_are_kept(gflow, flag):
    """Per-job mail needs a mail transport; with one, the job keeps them
    (test_notify.py shows the mail sent)."""
    g = gflow
    cfg = g.tmp / "mail.toml"
    cfg.write_text('[notifications]\nenabled = true\n\n[[notifications.emails]]\n'
                   'smtp_url = "smtp://127.0.0.1:9"\nfrom = "gflow <gflow@example.com>"\n')
    g.start("--config", str(cfg))
    base = job_view(g, g.submit("--hold", "true"))
    assert job_view(g, g.submit("--hold", *NOTIFY[flag], "true")) != base


# gjob update: flag -> (arguments, alias of)
GJOB_UPDATE = {
    "--gpus": (["--gpus", "2"], None), "-g": (["-g", "2"], "--gpus"), "--gres": (["--gres", "2"], "--gpus"),
    "--shared": (["--shared"], None),
    "--gpu-memory": (["--gpu-memory", "2G"], None),
    "--max-gpu-mem": (["--max-gpu-mem", "2G"], "--gpu-memory"),
    "--max-gpu-memory": (["--max-gpu-memory", "2G"], "--gpu-memory"),
    "--memory": (["--memory", "2G"], None), "-m": (["-m", "2G"], "--memory"),
    "--memory-limit": (["--memory-limit", "2G"], "--memory"), "--max-mem": (["--max-mem", "2G"], "--memory"),
    "--max-memory": (["--max-memory", "2G"], "--memory"),
    "--time": (["--time", "7"], None), "-t": (["-t", "7"], "--time"), "--time-limit": (["--time-limit", "7"], "--time"),
    "--timelimit": (["--timelimit", "7"], "--time"),
    "--cpus": (["--cpus", "2"], None), "--cpus-per-task": (["--cpus-per-task", "2"], "--cpus"),
    "--priority": (["--priority", "3"], None), "-p": (["-p", "3"], "--priority"), "--nice": (["--nice", "3"], "--priority"),
    "--name": (["--name", "nn"], None), "-J": (["-J", "nn"], "--name"), "--job-name": (["--job-name", "nn"], "--name"),
    "--conda-env": (["--conda-env", "other"], None), "-e": (["-e", "other"], "--conda-env"),
    "--depends-on": (["--depends-on", "1"], None), "-d": (["-d", "1"], "--depends-on"),
    "--dependency": (["--dependency", "1"], "--depends-on"),
    "--depends-on-all": (["--depends-on-all", "1"], None), "--depends-on-any": (["--depends-on-any", "1"], None),
    "--no-auto-cancel": (["--no-auto-cancel"], None),
    "--no-auto-cancel-on-dep-failure": (["--no-auto-cancel-on-dep-failure"], "--no-auto-cancel"),
    "--max-concurrent": (["--max-concurrent", "5"], None), "--max-retries": (["--max-retries", "5"], None),
    "--begin": (["--begin", "2030-01-02T00:00"], None),
    "--command": (["--command", "echo changed"], None), "-c": (["-c", "echo changed"], "--command"),
    "--script": (["--script", "SCRIPT"], None), "-s": (["-s", "SCRIPT"], "--script"),
    "--param": (["--param", "k=2", "-c", "echo {k}"], None),
    # back to the default, from a job that has every one of them set
    "--clear-gpu-memory": (["--clear-gpu-memory"], None),
    "--clear-gpu-memory-limit": (["--clear-gpu-memory-limit"], "--clear-gpu-memory"),
    "--clear-memory": (["--clear-memory"], None), "--clear-memory-limit": (["--clear-memory-limit"], "--clear-memory"),
    "--clear-time": (["--clear-time"], None), "--clear-time-limit": (["--clear-time-limit"], "--clear-time"),
    "--clear-conda-env": (["--clear-conda-env"], None),
    "--clear-depends-on": (["--clear-depends-on"], None),
    "--clear-dependencies": (["--clear-dependencies"], "--clear-depends-on"),
    "--clear-deps": (["--clear-deps"], "--clear-depends-on"),
    "--clear-begin": (["--clear-begin"], None), "--clear-shared": (["--clear-shared"], None),
    "--clear-max-retries": (["--clear-max-retries"], None),
    "--clear-max-concurrent": (["--clear-max-concurrent"], None),
    "--auto-cancel": (["--auto-cancel"], None),
    "--auto-cancel-on-dep-failure": (["--auto-cancel-on-dep-failure"], "--auto-cancel"),
}
# a job with everything set that the --clear-* and --auto-cancel flags undo
FULL = ["--gpus", "1", "--gpu-memory", "1G", "--memory", "1G", "--time", "5", "--conda-env", "env1",
        "--depends-on", "2", "--begin", "2030-01-01T00:00", "--max-retries", "1", "--max-concurrent", "1",
        "--param", "k=1"]
# the flags that turn something back on start from a job that has it off
OFF = {"--auto-cancel": ["--no-auto-cancel"], "--auto-cancel-on-dep-failure": ["--no-auto-cancel"],
       "--clear-shared": ["--shared"]}


def test_every_gjob_update_flag_has_an_effect(gflow, fake_conda):
    g = gflow
    g.gpus(2)
    g.start()
    script = g.tmp / "s.sh"
    script.write_text("#!/bin/sh\necho s\n")
    g.submit("--hold", "true")      # jobs 1 and 2, dependency targets
    g.submit("--hold", "true")
    seen = {}
    for flag, (args, alias) in GJOB_UPDATE.items():
        r = g.cli("gbatch", "--hold", *FULL, *OFF.get(flag, []), "echo", "{k}", env=fake_conda, check=True)
        jid = submitted(g, r)[0]
        before = job_view(g, jid)
        args = [str(script) if a == "SCRIPT" else a for a in args]
        g.cli("gjob", "update", str(jid), *args, env=fake_conda, check=True)
        after = job_view(g, jid)
        assert after != before, f"gjob update {flag}: the job is as before"
        seen[flag] = after
    for flag, (args, alias) in GJOB_UPDATE.items():
        if alias:
            assert seen[flag] == seen[alias], f"gjob update {flag} is not the same as {alias}"
    bad = g.tmp / "bad.toml"
    bad.write_text("[daemon]\nnot_a_key = 1\n")
    r = g.cli("gjob", "update", "1", "--config", str(bad), "--priority", "1")
    assert r.returncode != 0 and "not_a_key" in r.stderr
    helped = set(help_flags(g, ["gjob", "update"])) - {"--help", "-h"}
    covered = set(GJOB_UPDATE) | {"--config", "--cascade"}     # --cascade: redo's (ELSEWHERE)
    assert helped <= covered, f"gjob update flags with no effect shown: {sorted(helped - covered)}"


# gqueue: flag -> (arguments, arguments it is compared with, alias of)
GQUEUE = {
    "--all": (["--all"], [], None), "-a": (["-a"], [], "--all"),
    "--completed": (["--completed"], ["-a"], None), "-c": (["-c"], ["-a"], "--completed"),
    "--states": (["--states", "H"], ["-a"], None), "-s": (["-s", "H"], ["-a"], "--states"),
    "--state": (["--state", "H"], ["-a"], "--states"),
    "--jobs": (["--jobs", "1"], [], None), "-j": (["-j", "1"], [], "--jobs"), "--job": (["--job", "1"], [], "--jobs"),
    "--user": (["--user", "nobody"], [], None), "-u": (["-u", "nobody"], [], "--user"),
    "--users": (["--users", "nobody"], [], "--user"),
    "--name": (["--name", "b"], [], None), "-N": (["-N", "b"], [], "--name"),
    "--names": (["--names", "b"], [], "--name"),
    "--project": (["--project", "pj"], [], None), "-P": (["-P", "pj"], [], "--project"),
    "--limit": (["--limit", "1"], [], None), "-n": (["-n", "1"], [], "--limit"),
    "--since": (["--since", "2999-01-01"], [], None),
    "--sort": (["--sort", "-id"], [], None), "-r": (["-r", "-id"], [], "--sort"),
    "--tree": (["-a", "--tree"], ["-a"], None), "-t": (["-a", "-t"], ["-a"], "--tree"),
    "--group": (["--group"], [], None), "-g": (["-g"], [], "--group"),
    "--start": (["--start"], [], None),
    "--output": (["--output", "csv"], [], None), "-o": (["-o", "csv"], [], "--output"),
    "--format": (["--format", "JOBID"], [], None), "-f": (["-f", "JOBID"], [], "--format"),
}


def test_every_gqueue_flag_has_an_effect(gflow):
    g = gflow
    g.start()
    a = g.submit("--name", "a", "true")
    g.wait_state(a, "Finished")
    g.submit("--hold", "--name", "b", "-P", "pj", "--depends-on", str(a), "true")
    g.submit("--hold", "--name", "c", "true")
    seen = {}
    for flag, (args, base, alias) in GQUEUE.items():
        out = g.cli("gqueue", *args, check=True).stdout
        assert out != g.cli("gqueue", *base, check=True).stdout, f"gqueue {flag}: no change"
        seen[flag] = out
    for flag, (args, base, alias) in GQUEUE.items():
        if alias:
            assert seen[flag] == seen[alias], f"gqueue {flag} is not the same as {alias}"
    helped = set(help_flags(g, ["gqueue"])) - {"--help", "-h", "--version", "-V"}
    covered = set(GQUEUE) | set(ELSEWHERE["gqueue"])
    assert helped <= covered, f"gqueue flags with no effect shown: {sorted(helped - covered)}"


# The other flags, each with the test that shows its effect (file::test).
ELSEWHERE = {
    "gbatch": {"--cluster": "test_slurm.py::test_plain_job_runs_on_slurm_and_shows_everywhere",
               "--export-env": "test_slurm.py::test_plain_job_runs_on_slurm_and_shows_everywhere"},
    "gqueue": {"--cluster": "test_slurm.py::test_plain_job_runs_on_slurm_and_shows_everywhere","--watch": "test_views.py::test_watch_redraws_until_stopped", "-w": "test_views.py::test_watch_redraws_until_stopped",
               "--interval": "test_views.py::test_watch_redraws_until_stopped",
               "--tmux": "test_views.py::test_tmux_sessions_attach_and_close", "-T": "test_views.py::test_tmux_sessions_attach_and_close",
               "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "ginfo": {"-l": "test_cli_names.py::test_ginfo_verbosity", "--long": "test_cli_names.py::test_ginfo_verbosity",
              "-v": "test_cli_names.py::test_ginfo_verbosity", "--verbose": "test_cli_names.py::test_ginfo_verbosity",
              "-vv": "test_cli_names.py::test_ginfo_verbosity", "-ll": "test_cli_names.py::test_ginfo_verbosity", "-q": "test_cli_names.py::test_ginfo_verbosity",
              "--quiet": "test_cli_names.py::test_ginfo_verbosity",
              "--timeline": "test_timeline.py::test_timeline_running_reservation_expected",
              "--range": "test_timeline.py::test_timeline_range_refused",
              "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "gcancel": {"--dry-run": "test_workflow.py::test_dry_run_submits_nothing", "-n": "test_cli_walk.py::test_short_forms_of_the_rest",
                "--kill": "test_cli_names.py::test_gcancel_kill",
                "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "gstats": {f: "test_cli_stats.py::test_documented_examples" for f in
               ("--all-users", "-a", "--since", "-t", "--output", "-o", "--user", "-u")} |
              {"--users": "test_cli_walk.py::test_short_forms_of_the_rest",
               "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "gjob": {"--at": "test_workflow.py::test_hold_and_release", "--cascade": "test_workflow.py::test_redo_cascade_reruns_the_chain",
             "-f": "test_views.py::test_job_log_forms", "-l": "test_views.py::test_job_log_forms",
             "--raw": "test_harden_client.py::test_an_admin_reading_a_log_gets_control_characters_escaped_on_a_terminal",
             "--first": "test_cli_walk.py::test_short_forms_of_the_rest", "--last": "test_cli_walk.py::test_short_forms_of_the_rest",
             "--head": "test_cli_walk.py::test_short_forms_of_the_rest", "--tail": "test_cli_walk.py::test_short_forms_of_the_rest",
             "--states": "test_cli_names.py::test_close_sessions_filters",
             "-o": "test_gpu_usage.py::test_uuids_peak_memory_and_mean_util",
             "--output": "test_cli_walk.py::test_short_forms_of_the_rest",
             "--follow": "test_views.py::test_job_log_forms", "-F": "test_cli_walk.py::test_short_forms_of_the_rest",
             "-a": "test_cli_names.py::test_close_sessions_filters", "--all": "test_cli_names.py::test_close_sessions_filters",
             "-j": "test_cli_names.py::test_close_sessions_filters", "--jobs": "test_cli_names.py::test_close_sessions_filters",
             "-s": "test_cli_names.py::test_close_sessions_filters", "--state": "test_cli_names.py::test_close_sessions_filters",
             "-p": "test_cli_names.py::test_close_sessions_filters", "--pattern": "test_cli_names.py::test_close_sessions_filters",
             "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "gctl": {"--gpu": "test_gpus.py::test_ignoring_a_foreign_process_frees_its_gpu_until_restart",
             **{f: "test_share.py::test_reservation_keeps_gpu_and_opens_on_time" for f in
                ("--gpus", "--gpu-spec", "--start", "--duration", "--timezone", "--timeline", "--range",
                 "--status")},
             **{f: "test_share.py::test_quota_max_running_gpus_names_the_limit" for f in
                ("--default-user", "--max-running-gpus", "--max-gpu-hours-per-day", "--project",
                 "--max-running-jobs")},
             "--user": "test_share.py::test_quota_max_running_jobs_waits_then_starts_and_max_queued_refuses",
             "--max-queued-jobs": "test_share.py::test_quota_max_running_jobs_waits_then_starts_and_max_queued_refuses",
             "-o": "test_share.py::test_quota_max_running_jobs_waits_then_starts_and_max_queued_refuses",
             "--default-project": "test_cli_walk.py::test_gctl_spellings_no_other_test_drives",
             "--active": "test_cli_walk.py::test_gctl_spellings_no_other_test_drives",
             "--all": "test_gpu_foreign.py::test_foreign_process_named_everywhere",
             "--event": "test_notify.py::test_gctl_notify_test",
             "--pid": "test_gpus.py::test_ignoring_a_foreign_process_frees_its_gpu_until_restart",
             "--config": "test_bad_input.py::test_broken_config_given_with_the_config_flag"},
    "galloc": {**{f: "test_galloc.py::test_every_option_reaches_the_job" for f in
                  ("--gpus", "-G", "--time", "-t", "--memory", "-m", "--cpus", "-c", "--cpus-per-task", "--name",
                   "-J", "--project", "-P")},
               "--immediate": "test_galloc.py::test_immediate_is_refused_with_the_reason_when_it_cannot_start",
               "-I": "test_galloc.py::test_immediate_is_refused_with_the_reason_when_it_cannot_start"},
    "gflowd": {"--gpus": "test_gpus.py::test_restriction_set_gpus_and_flag_precedence",
               "--gpu-allocation-strategy": "test_gpus.py::test_sequential_picks_lowest_random_varies",
               "--gpu-poll-interval-secs": "test_lifecycle_faults.py::test_init_writes_what_it_is_asked_to_where_it_is_asked",
               "--hosting": "test_lifecycle_faults.py::test_up_with_a_bad_config_says_why_at_once",
               "--config": "test_cli_names.py::test_gflowd_cleanup", "-c": "test_cli_names.py::test_gflowd_config_and_verbosity_before_the_command",
               "--yes": "test_cli_names.py::test_gflowd_cleanup", "--force": "test_cli_names.py::test_gflowd_init_timezone_and_advanced",
               "--host": "test_lifecycle_faults.py::test_init_writes_what_it_is_asked_to_where_it_is_asked",
               "--port": "test_lifecycle_faults.py::test_init_writes_what_it_is_asked_to_where_it_is_asked",
               "--executor": "test_lifecycle_faults.py::test_init_writes_what_it_is_asked_to_where_it_is_asked",
               "--timezone": "test_cli_names.py::test_gflowd_init_timezone_and_advanced",
               "--advanced": "test_cli_names.py::test_gflowd_init_timezone_and_advanced",
               "--cleanup": "test_cli_names.py::test_gflowd_cleanup",
               "--system": "test_system.py::test_an_admin_sets_up_the_machine_with_init_and_up_and_users_do_nothing",
               "--revoke": "test_system.py::test_per_user_tokens_act_as_their_user_over_tcp",
               "--root": "test_cli_walk.py::test_gflowd_root_flag",
               **{f: "test_cli_names.py::test_gflowd_verbosity_levels" for f in ("-v", "-vv", "-vvv", "-vvvv", "-q", "--quiet")}},
}


def test_every_other_flag_names_the_test_of_its_effect(gflow):
    g = gflow
    missing = []
    shown = {"gbatch": set(GBATCH) | set(NOTIFY) | {"--dry-run", "--hold", "--config", "--param-file"},
             "gqueue": set(GQUEUE), "gjob": set(GJOB_UPDATE)}
    for words, comp, flag in all_help_flags(g):
        if flag in ("--help", "-h", "--version", "-V"):
            continue        # test_views.py::test_help_version_and_completion
        prog = words[0]
        if flag in shown.get(prog, ()) or flag in ELSEWHERE.get(prog, {}):
            continue
        missing.append(f"{' '.join(words)} {flag}")
    assert not missing, "flags whose effect no test shows: " + ", ".join(missing)
    for prog, m in ELSEWHERE.items():
        for flag, where in m.items():
            fname, test = where.split("::")
            text = (E2E / fname).read_text()
            assert f"def {test}(" in text, f"{prog} {flag}: {where} does not exist"


def test_short_forms_of_the_rest(gflow):
    """Spellings that the tests named above drive in another form."""
    g = gflow
    g.start()
    jid = g.submit("sh", "-c", "echo 1; echo 2; echo 3")
    g.wait_state(jid, "Finished")
    assert g.cli("gjob", "log", str(jid), "--first", "1", check=True).stdout == "1\n"
    assert g.cli("gjob", "log", str(jid), "--last", "1", check=True).stdout == "3\n"
    assert g.cli("gjob", "log", str(jid), "--head", "2", check=True).stdout == "1\n2\n"
    assert g.cli("gjob", "log", str(jid), "--tail", "2", check=True).stdout == "2\n3\n"
    assert g.cli("gjob", "log", str(jid), "-F", check=True, timeout=20).stdout == "1\n2\n3\n"
    assert json.loads(g.cli("gjob", "show", "--output", "json", str(jid), check=True).stdout)[0]["id"] == jid
    held = g.submit("--hold", "true")
    r = g.cli("gcancel", "-n", str(held), check=True)
    assert f"Would cancel job {held}" in r.stdout and g.job(held)["state"] == "Hold"
    assert json.loads(g.cli("gstats", "--users", "all", "-o", "json", check=True).stdout)["total_jobs"] == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="the machine's daemon is root's")
def test_gflowd_root_flag(gflow):
    """--root DIR: --system with every path under DIR."""
    g = gflow
    root = g.tmp / "sysroot"
    root.mkdir()
    r = g.cli("gflowd", "init", "--root", str(root), "--yes", "--port", str(g.port), check=True)
    assert (root / "etc/gflow/gflow.toml").is_file() and str(root) in r.stdout


def test_gctl_spellings_no_other_test_drives(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    g.cli("gctl", "quota", "set", "--default-project", "--max-running-gpus", "6", check=True)
    rows = json.loads(g.cli("gctl", "quota", "list", "-o", "json", check=True).stdout)
    assert [r["MAX_RUN_GPUS"] for r in rows if r["SUBJECT"] == "default_project"] == ["6"]
    t = (int(time.time()) // 1800 + 2) * 1800
    start = time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
    g.cli("gctl", "reserve", "create", "--user", "root", "--gpus", "1", "--start", start, "--duration", "30m",
          check=True)
    g.cli("gctl", "reserve", "cancel", "1", check=True)
    assert "cancelled" in g.cli("gctl", "reserve", "list", check=True).stdout
    assert "cancelled" not in g.cli("gctl", "reserve", "list", "--active", check=True).stdout


# ---- every key of the configuration reference ----------------------------------------

# The blocks as the reference writes them (user-guide/configuration.md,
# multi-user.md, gpu-management.md); notifications.md is item 1's (branch
# notify) and is tested there.
CONFIG_BLOCKS = {
    "daemon": '[daemon]\nhost = "localhost"\nport = 59000\n# gpus = [0, 2]\n'
              '# gpu_allocation_strategy = "sequential" # or "random"\n# gpu_poll_interval_secs = 10\n',
    "gpus": "[daemon]\ngpus = [0, 2]\n",
    "strategy": '[daemon]\ngpu_allocation_strategy = "sequential" # default\n# gpu_allocation_strategy = "random"\n',
    "poll": "[daemon]\ngpu_poll_interval_secs = 3 # default: 10\n",
    "executor": '[executor]\ntype = "tmux" # or "process"\n',
    "projects": '[projects]\nknown_projects = ["ml-research", "cv-team"]\nrequire_project = false\n',
    "projects_required": '[projects]\nknown_projects = ["ml-research", "cv-team"]\nrequire_project = true\n',
    "port": "[daemon]\nport = 59001\n",
}
# blocks whose effect another test shows (file::test)
CONFIG_ELSEWHERE = {
    "fair_share": ("[daemon.fair_share]\nenabled = true        # default: true\n"
                   "half_life_secs = 604800 # default: 7 days\n",
                   "test_share.py::test_fair_share_keys_are_enforced"),
    "quota": ("[quota]\n# Fallback limits for every user / project not listed below.\n"
              "default_user = { max_running_jobs = 4, max_running_gpus = 2, max_queued_jobs = 50 }\n"
              "default_project = { max_running_gpus = 6 }\n\n[quota.users]\nalice = { max_running_gpus = 4 }\n\n"
              "[quota.projects]\ncv-team = { max_running_gpus = 8, max_queued_jobs = 100 }\n",
              "test_share.py::test_quota_max_running_gpus_names_the_limit"),
    "quota_multi_user": ("[quota]\ndefault_user = { max_running_jobs = 4, max_running_gpus = 2, max_queued_jobs = 50 }\n\n"
                         "[quota.projects]\ncv-team = { max_running_gpus = 8 }\n",
                         "test_share.py::test_quota_max_running_jobs_waits_then_starts_and_max_queued_refuses"),
}


def check_config(g, text):
    f = g.tmp / "walk.toml"
    f.write_text(text)
    env = {k: v for k, v in g.env.items() if not k.startswith("GFLOW_DAEMON__") and not k.startswith("GFLOW_EXECUTOR")}
    return subprocess.run([str(g.build / "gflowd"), "run", "--check", "--config", str(f)], env=env,
                          capture_output=True, text=True, timeout=30), f


def test_every_config_reference_key_works(gflow):
    g = gflow
    g.gpus(4)
    for name, text in CONFIG_BLOCKS.items():
        r, _ = check_config(g, text)
        assert r.returncode == 0, (name, r.stderr)
    # their effects, through a daemon that reads them (port and host stay the test's own)
    f = g.tmp / "effect.toml"
    f.write_text('[daemon]\ngpus = [0, 2]\ngpu_allocation_strategy = "random"\ngpu_poll_interval_secs = 3\n\n'
                 '[executor]\ntype = "process"\n\n[projects]\nknown_projects = ["ml-research", "cv-team"]\n'
                 'require_project = true\n')
    g.start("--config", str(f))
    info = g.api("GET", "/info")[1]
    shown = json.dumps(info)
    assert '"random"' in shown and "3" in shown, info
    out = g.cli("gctl", "show-gpus", check=True).stdout
    assert "1 available restricted" in out and "3 available restricted" in out
    r = g.cli("gbatch", "true")
    assert r.returncode != 0 and "project" in r.stderr
    r = g.cli("gbatch", "-P", "nope", "true")
    assert r.returncode != 0 and "nope" in r.stderr
    jid = g.submit("-P", "cv-team", "true")
    assert g.wait_state(jid, "Finished")["executor"] == "process"


def test_timezone_is_the_one_times_are_shown_and_read_in(gflow):
    """timezone = "Asia/Shanghai" (as the reference writes it): the programs
    read --begin and show times in it, whatever TZ they started with."""
    g = gflow
    g.start()
    cfg = g.home / ".config/gflow/gflow.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    utc = {"TZ": "UTC"}
    jid = g.submit("--hold", "--begin", "2030-01-01T08:00", "true", env=utc)
    assert g.job(jid)["begin_at"] == 1893484800            # 08:00 UTC
    assert "BeginTime=2030-01-01T08:00:00" in g.cli("gjob", "show", str(jid), env=utc, check=True).stdout
    cfg.write_text('timezone = "Asia/Shanghai"\n')
    # the same words now mean 08:00 in Shanghai, 00:00 UTC
    jid2 = g.submit("--hold", "--begin", "2030-01-01T08:00", "true", env=utc)
    assert g.job(jid2)["begin_at"] == 1893456000
    show = g.cli("gjob", "show", str(jid), env=utc, check=True).stdout
    assert "BeginTime=2030-01-01T16:00:00" in show
    # an explicit --config wins over the default file; "local" leaves TZ alone
    other = g.tmp / "local.toml"
    other.write_text('timezone = "local"\n')
    assert "BeginTime=2030-01-01T08:00:00" in g.cli("gjob", "--config", str(other), "show", str(jid), env=utc,
                                                    check=True).stdout
    # a zone the machine does not know is refused, naming it
    cfg.write_text('timezone = "Mars/Olympus"\n')
    r, _ = check_config(g, 'timezone = "Mars/Olympus"\n')
    assert r.returncode != 0 and "Mars/Olympus" in r.stderr and "timezone" in r.stderr


@pytest.mark.parametrize("name", sorted(CONFIG_ELSEWHERE))
def test_config_keys_shown_elsewhere_are_accepted(gflow, name):
    text, where = CONFIG_ELSEWHERE[name]
    r, _ = check_config(gflow, text)
    assert r.returncode == 0, (name, r.stderr)
    fname, test = where.split("::")
    assert f"def {test}(" in (E2E / fname).read_text(), where
