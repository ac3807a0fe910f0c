"""The other tool's command-line names and forms (issue 12, item 4), each
driven through the real CLI against a real daemon: gjob's aliases, update's
and redo's short forms and spellings, -c/-s/--param, --clear-deps,
close-sessions filters, MaxRetries=, ginfo -v/-vv/-q, gcancel --kill,
gqueue --job, the --since forms and their errors."""
import json
import re
import os
import pty
import subprocess

import pytest

from conftest import Gflow


def show(g, jid):
    r = g.cli("gjob", "show", str(jid), check=True)
    return dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)


# ---- gjob aliases ---------------------------------------------------------

def test_gjob_aliases(gflow):
    g = gflow
    g.start()
    jid = g.submit("--hold", "echo", "hi")
    assert g.cli("gjob", "s", str(jid), check=True).stdout.startswith(f"JobId={jid}\n")
    g.cli("gjob", "u", str(jid), "-p", "42", check=True)
    assert g.job(jid)["priority"] == 42
    g.cli("gjob", "r", str(jid), check=True)
    g.wait_state(jid, "Finished")
    assert g.cli("gjob", "l", str(jid), check=True).stdout.strip() == "hi"
    h = g.submit("--hold", "true")
    g.cli("gjob", "release", str(h), check=True)
    g.wait_state(h, "Finished")
    q = g.submit("--begin", "now+60", "true")
    assert "Held job" in g.cli("gjob", "h", str(q), check=True).stdout
    assert g.job(q)["state"] == "Hold"
    r = g.cli("gjob", "a", str(jid))   # attach: the job has ended
    assert r.returncode != 0 and "has ended" in r.stderr
    r = g.cli("gjob", "close")
    assert r.returncode != 0 and "needs a filter" in r.stderr
    help_ = g.cli("gjob", "--help", check=True).stdout
    for alias in ("show, s", "log, l", "attach, a", "close-sessions, close", "hold, h",
                  "release, r", "update, u"):
        assert alias in help_


# ---- gjob update ------------------------------------------------------------

def test_update_short_forms_and_spellings(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    dep = g.submit("--hold", "true")
    jid = g.submit("--hold", "--time", "10", "--memory", "1G", "--gpu-memory", "1G", "true")
    g.cli("gjob", "update", str(jid), "-g", "2", "-p", "7", "-t", "1:00:00", "-m", "2G",
          "-d", str(dep), check=True)
    j = g.job(jid)
    assert (j["gpus"], j["priority"], j["time_limit_secs"], j["memory_mb"], j["depends_on"]) == \
        (2, 7, 3600, 2048, [dep])
    g.cli("gjob", "update", str(jid), "--memory-limit", "3G", "--time-limit", "5", check=True)
    j = g.job(jid)
    assert (j["memory_mb"], j["time_limit_secs"]) == (3072, 300)
    g.cli("gjob", "update", str(jid), "--no-auto-cancel-on-dep-failure", check=True)
    assert g.job(jid)["auto_cancel"] is False
    g.cli("gjob", "update", str(jid), "--auto-cancel-on-dep-failure", check=True)
    assert g.job(jid)["auto_cancel"] is True
    g.cli("gjob", "update", str(jid), "--clear-time-limit", "--clear-memory-limit",
          "--clear-gpu-memory-limit", check=True)
    j = g.job(jid)
    assert j.get("time_limit_secs") is None and j.get("memory_mb") is None and j.get("gpu_memory_mb") is None
    # today's spellings stay
    g.cli("gjob", "update", str(jid), "--time", "3", "--memory", "1G", "--no-auto-cancel", check=True)
    g.cli("gjob", "update", str(jid), "--clear-time", "--clear-memory", check=True)
    j = g.job(jid)
    assert j.get("time_limit_secs") is None and j.get("memory_mb") is None and j["auto_cancel"] is False
    # -e needs conda: refused naming it when there is none
    r = g.cli("gjob", "update", str(jid), "-e", "myenv", env={"PATH": f"{g.build}:/usr/bin:/bin", "CONDA_EXE": ""})
    assert r.returncode != 0 and "conda" in r.stderr


def test_update_command_forms(gflow, tmp_path):
    g = gflow
    g.start()
    jid = g.submit("--hold", "true")
    g.cli("gjob", "update", str(jid), "-c", "printf '%s|' 'a b' \"c\\\"d\" e\\ f $GFLOW_JOB_ID", check=True)
    assert g.job(jid)["command"] == ["printf", "%s|", "a b", 'c"d', "e f", "$GFLOW_JOB_ID"]
    g.cli("gjob", "release", str(jid), check=True)
    g.wait_state(jid, "Finished")
    assert g.log_of(jid) == f'a b|c"d|e f|{jid}|'
    # what only a shell could do is refused, naming it; nothing changes
    other = g.submit("--hold", "true")
    r = g.cli("gjob", "update", str(other), "--command", "python a.py > out.txt")
    assert r.returncode != 0 and "'>'" in r.stderr and "shell" in r.stderr
    assert g.job(other)["command"] == ["true"]
    r = g.cli("gjob", "update", str(other), "-c", "echo 'open")
    assert r.returncode != 0 and "quote" in r.stderr
    # -s/--script: the job becomes that script
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho from-script\n")
    g.cli("gjob", "update", str(other), "-s", str(script), check=True)
    j = g.job(other)
    assert j["script"] == str(script) and j["command"][-1] == str(script)
    g.cli("gjob", "release", str(other), check=True)
    g.wait_state(other, "Finished")
    assert g.log_of(other).strip() == "from-script"
    plain = tmp_path / "plain.txt"
    plain.write_text("not a script\n")
    r = g.cli("gjob", "update", str(g.submit("--hold", "true")), "-s", str(plain))
    assert r.returncode != 0 and "--script" in r.stderr
    r = g.cli("gjob", "update", str(jid), "-c", "true", "-s", str(script))
    assert r.returncode != 0 and "once" in r.stderr


def test_update_param(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--hold", "--param", "lr=0.1,0.2", "--param", "bs=8", "echo", "lr={lr}", "bs={bs}",
              check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
    assert len(ids) == 2
    g.cli("gjob", "update", f"{ids[0]},{ids[1]}", "--param", "bs=16", "-c", "echo lr={lr} bs={bs} new",
          check=True)
    assert g.job(ids[0])["command"] == ["echo", "lr=0.1", "bs=16", "new"]
    assert g.job(ids[1])["command"] == ["echo", "lr=0.2", "bs=16", "new"]
    assert g.job(ids[1])["params"] == {"lr": "0.2", "bs": "16"}
    assert show(g, ids[1])["Params"] in ("lr=0.2,bs=16", "bs=16,lr=0.2")
    # --param alone refills the command from the template the job keeps
    assert g.job(ids[0])["command_template"] == ["echo", "lr={lr}", "bs={bs}", "new"]
    g.cli("gjob", "update", str(ids[0]), "--param", "bs=32", check=True)
    assert g.job(ids[0])["command"] == ["echo", "lr=0.1", "bs=32", "new"]
    assert g.job(ids[0])["params"] == {"lr": "0.1", "bs": "32"}
    # also on a job as gbatch submitted it
    r = g.cli("gbatch", "--hold", "--param", "lr=0.1", "echo", "lr={lr}", check=True)
    q = int(r.stdout.split()[3])
    assert g.job(q)["command"] == ["echo", "lr=0.1"]
    g.cli("gjob", "update", str(q), "--param", "lr=0.5", check=True)
    assert g.job(q)["command"] == ["echo", "lr=0.5"] and g.job(q)["params"] == {"lr": "0.5"}
    # and through the API: only the new parameter, the others kept
    st, _ = g.api("POST", "/jobs/update", {"ids": [q], "set": {"params": {"lr": "0.7"}}})
    assert st == 200 and g.job(q)["command"] == ["echo", "lr=0.7"]
    # a placeholder the parameters do not fill is named; the job is unchanged
    st, body = g.api("POST", "/jobs/update", {"ids": [q], "set": {"params": {"lr": 1}}})
    assert st != 200 or body.get("errors"), body
    assert g.job(q)["command"] == ["echo", "lr=0.7"]
    # a new command without --param is no longer the template's
    g.cli("gjob", "update", str(q), "-c", "echo plain {x}", check=True)
    assert g.job(q)["command_template"] is None
    # a job without a template (no --param at submit, or stored before they were kept): a clear refusal
    plain = g.submit("--hold", "echo", "hi")
    r = g.cli("gjob", "update", str(plain), "--param", "bs=32")
    assert r.returncode != 0 and f"job {plain} keeps no command template" in r.stderr, r.stderr
    assert "-c, -s or after --" in r.stderr and g.job(plain)["command"] == ["echo", "hi"]
    r = g.cli("gjob", "update", str(q), "--param", "bs=32")
    assert r.returncode != 0 and "keeps no command template" in r.stderr, r.stderr
    # redo with --param alone refills the same way
    g.cli("gcancel", str(ids[1]), check=True)
    g.wait_state(ids[1], "Cancelled")
    r = g.cli("gjob", "redo", str(ids[1]), "--param", "lr=0.9", check=True)
    assert g.job(int(r.stdout.split()[3]))["command"] == ["echo", "lr=0.9", "bs=16", "new"]
    r = g.cli("gjob", "update", str(ids[0]), "--param", "nokey")
    assert r.returncode != 0 and "invalid --param 'nokey'" in r.stderr
    r = g.cli("gjob", "update", str(ids[0]), "--param", "bs=1", "-c", "echo {unknown}")
    assert r.returncode != 0 and "unknown" in r.stderr


# ---- gjob redo, show ----------------------------------------------------------

def test_redo_short_forms_and_clear_deps(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    parent = g.submit("true")
    g.wait_state(parent, "Finished")
    jid = g.submit("--depends-on", str(parent), "false")
    g.wait_state(jid, "Failed")
    r = g.cli("gjob", "redo", str(jid), "-g", "1", "-p", "9", "-t", "2:00", "-m", "1G", "--gpu-memory", "1G",
              "--clear-deps", check=True)
    new = int(r.stdout.split()[3])
    j = g.job(new)
    assert (j["gpus"], j["priority"], j["time_limit_secs"], j["memory_mb"], j["gpu_memory_mb"]) == \
        (1, 9, 120, 1024, 1024)
    assert not j.get("depends_on")
    assert g.job(jid)["depends_on"] == [parent]
    r = g.cli("gjob", "redo", str(jid), "-d", str(parent), check=True)
    assert g.job(int(r.stdout.split()[3]))["depends_on"] == [parent]
    r = g.cli("gjob", "redo", str(jid), "--param", "x=1", "-c", "echo {x}", check=True)
    again = int(r.stdout.split()[3])
    assert g.job(again)["command"] == ["echo", "1"]


def test_show_max_retries_and_attempt(gflow):
    g = gflow
    g.start()
    jid = g.submit("--max-retries", "2", "--hold", "true")
    s = show(g, jid)
    assert s["MaxRetries"] == "2" and s["Attempt"] == "0"
    g.cli("gjob", "update", str(jid), "--clear-max-retries", check=True)
    assert show(g, jid)["MaxRetries"] == "0"


# ---- close-sessions -------------------------------------------------------------

def tmux_ok():
    return subprocess.run(["which", "tmux"], capture_output=True).returncode == 0


@pytest.fixture
def gflow_tmux(tmp_path):
    if not tmux_ok():
        pytest.skip("tmux is not installed")
    g = Gflow(tmp_path, executor="tmux")
    yield g
    g.cleanup()


def test_close_sessions_filters(gflow_tmux):
    g = gflow_tmux
    g.start()
    sock = str(g.runtime / "gflow" / "tmux.sock")

    def alive(jid):
        return subprocess.run(["tmux", "-S", sock, "has-session", "-t", f"=gflow-{jid}"], env=g.env,
                              capture_output=True).returncode == 0

    ids = []
    for cmd in ("true", "false", "sleep 60"):
        jid = g.submit("sh", "-c", cmd)
        ids.append(jid)
    a, b, c = ids
    g.wait_state(a, "Finished")
    g.wait_state(b, "Failed")
    g.wait_state(c, "Running")
    g.cli("gcancel", str(c), check=True)
    g.wait_state(c, "Cancelled")
    g.wait_for(lambda: not g.job(c).get("active"), what="the cancelled job's processes to be gone")
    # (c's session may still be closing by itself: a and b's are settled)
    ended = [x for x in (a, b) if alive(x)]
    # no filter: refused, nothing closed
    r = g.cli("gjob", "close-sessions")
    assert r.returncode != 0 and "filter" in r.stderr
    assert [x for x in (a, b) if alive(x)] == ended
    # -s: only that state (names or codes); a non-final state is refused
    r = g.cli("gjob", "close-sessions", "--states", "Running")
    assert r.returncode != 0 and "invalid --state" in r.stderr
    g.cli("gjob", "close-sessions", "-s", "failed", check=True)
    assert not alive(b)
    assert alive(a) == (a in ended)
    # -p: a substring of the session name; -j: these jobs
    r = g.cli("gjob", "close", "-p", "no-such-session", check=True)
    assert "No sessions" in r.stdout
    if alive(a):
        g.cli("gjob", "close", "-j", str(a), "-p", f"gflow-{a}", check=True)
        assert not alive(a)
    # -a: every ended job's session; a running job's is kept
    run = g.submit("sleep", "60")
    g.wait_state(run, "Running")
    g.cli("gjob", "close-sessions", "-a", check=True)
    assert not any(alive(x) for x in ids)
    assert alive(run)


# ---- ginfo, gcancel, gqueue ------------------------------------------------------

def test_ginfo_verbosity(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    jid = g.submit("--gpus", "1", "sleep", "30")
    g.wait_state(jid, "Running")
    plain = g.cli("ginfo", check=True).stdout
    assert "PARTITION" in plain and "answered" in plain.splitlines()[-1] or plain.splitlines()[-1].startswith("(")
    # the default table is the seed's, whatever the verbosity
    assert plain.splitlines()[0].split() == ["PARTITION", "GPUS", "NODES", "STATE", "JOB(REASON)"]
    lng = g.cli("ginfo", "-l", check=True).stdout
    assert lng != plain and g.cli("ginfo", "--long", check=True).stdout == lng
    ll = g.cli("ginfo", "-ll", check=True).stdout
    # -ll is -l's table, then the processes (the footer lines, CPUs booked
    # and the daemon, come after both)
    table = lng.split("\nCPUs:")[0]
    assert ll.startswith(table) and "in_use allocated(job=" in ll and "0 " in ll
    assert g.cli("ginfo", "-l", "-l", check=True).stdout == ll
    # -v / -vv: verbosity on stderr (the request, its answer, the daemon), the table unchanged
    v = g.cli("ginfo", "-v", check=True)
    assert v.stdout == plain
    assert re.fullmatch(r"ginfo: GET /gpus: 200, \d+ bytes in [\d.]+ ms from personal daemon, \S+\n", v.stderr), v.stderr
    assert g.cli("ginfo", "--verbose", check=True).stderr.startswith("ginfo: GET /gpus: 200")
    vv = g.cli("ginfo", "-vv", check=True)
    assert vv.stdout == plain
    lines = vv.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("ginfo: connect ") and lines[0].endswith(": connected")
    assert lines[1].startswith("ginfo: GET /gpus: 200"), vv.stderr
    assert g.cli("ginfo", "-l", "-v", check=True).stdout == lng
    assert g.cli("ginfo", check=True).stderr == ""
    # -q: the table only, without the footer (CPUs booked, the daemon)
    assert plain.splitlines()[-2].startswith("CPUs: ")
    q = g.cli("ginfo", "-q", check=True).stdout
    assert q == "\n".join(plain.splitlines()[:-2]) + "\n"
    ql = g.cli("ginfo", "-q", "-l", check=True).stdout
    assert ql == "\n".join(lng.splitlines()[:-2]) + "\n"


def test_gcancel_kill(gflow):
    g = gflow
    g.start()
    jid = g.submit("sleep", "60")
    g.wait_state(jid, "Running")
    r = g.cli("gcancel", "--kill", str(jid), check=True)
    assert f"Cancelled job {jid}" in r.stdout
    g.wait_state(jid, "Cancelled")
    g.wait_for(lambda: not g.job_pids(jid), what="the job's processes to be gone")
    assert "--kill" in g.cli("gcancel", "--help", check=True).stdout


def test_gqueue_job_alias(gflow):
    g = gflow
    g.start()
    a = g.submit("--hold", "true")
    b = g.submit("--hold", "true")
    r = g.cli("gqueue", "--job", str(b), "-f", "JOBID", check=True)
    assert r.stdout.split()[1:] == [str(b)]
    r = g.cli("gqueue", "--jobs", f"{a},{b}", "-f", "JOBID", check=True)
    assert r.stdout.split()[1:] == [str(a), str(b)]


@pytest.mark.parametrize("prog", [["gqueue", "-a"], ["gstats"]])
def test_since_forms(gflow, prog):
    g = gflow
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    for form in ("today", "yesterday", "1w", "2d", "1h", "now-3w", "30", "2000-01-01"):
        r = g.cli(*prog, "--since", form, "-o", "json")
        assert r.returncode == 0, (form, r.stderr)
        out = json.loads(r.stdout)
        if prog[0] == "gqueue":
            assert len(out) == 1, form
        else:
            assert out["total_jobs"] == 1, form
    # a time still ahead: an empty answer, not an error
    r = g.cli(*prog, "--since", "2999-01-01", "-o", "json", check=True)
    out = json.loads(r.stdout)
    assert (out == []) if prog[0] == "gqueue" else out["total_jobs"] == 0
    for bad in ("tomorrowish", "now-x", "5y", "2023-13-01"):
        r = g.cli(*prog, "--since", bad)
        assert r.returncode != 0 and f"invalid --since '{bad}'" in r.stderr, r.stderr
        assert "begin time" not in r.stderr


# ---- gflowd: global options, verbosity, --cleanup, init ---------------------------

def gflowd(g, *args, timeout=30):
    return subprocess.run([str(g.build / "gflowd"), *args], env=g.env, cwd=g.tmp, capture_output=True,
                          text=True, timeout=timeout)


def test_gflowd_config_and_verbosity_before_the_command(gflow):
    g = gflow
    cfg = g.tmp / "mine.toml"
    cfg.write_text("[projects]\nrequire_project = true\n")
    r = gflowd(g, "-c", str(cfg), "-vv", "up", "--hosting", "process")
    assert r.returncode == 0, r.stderr
    try:
        # the daemon read our file: a job without a project is refused
        r = g.cli("gbatch", "true")
        assert r.returncode != 0 and "project" in r.stderr
        jid = g.submit("-P", "p1", "true")
        g.wait_state(jid, "Finished")
        log = g.data / "gflowd.log"
        # -vv: each job's end and each API request are logged
        g.wait_for(lambda: f"job {jid} ended: Finished" in log.read_text(), what="the job's end in the log")
        assert "POST /jobs from uid" in log.read_text()
    finally:
        assert gflowd(g, "--config", str(cfg), "down").returncode == 0


@pytest.mark.parametrize("flag,want,unwanted", [
    ("-q", [], ["listening on"]),
    (None, ["listening on"], ["started, GPUs", "GET /health"]),
    ("-v", ["listening on", "started, GPUs", "ended: Finished"], ["GET /health", "scheduler pass"]),
    ("-vv", ["started, GPUs", "GET /health from uid"], ["scheduler pass"]),
    ("-vvv", ["GET /health from uid", "scheduler pass:"], ["runner pid"]),
    ("-vvvv", ["scheduler pass:", "runner pid"], []),
])
def test_gflowd_verbosity_levels(gflow, flag, want, unwanted):
    g = gflow
    g.start(*([flag] if flag else []))
    jid = g.submit("sleep", "2")
    g.wait_state(jid, "Finished")
    g.stop()
    log = g.daemon_log()
    for w in want:
        assert w in log, (flag, w, log)
    for u in unwanted:
        assert u not in log, (flag, u, log)


def test_gflowd_option_errors(gflow):
    g = gflow
    r = gflowd(g, "-vvvvv", "status")
    assert r.returncode == 2 and "-vvvvv" in r.stderr
    r = gflowd(g, "-v")
    assert r.returncode == 2 and "missing command" in r.stderr
    r = gflowd(g, "status", "--timezone", "UTC")
    assert r.returncode == 2 and "--timezone is for gflowd init" in r.stderr
    r = gflowd(g, "up", "--advanced")
    assert r.returncode == 2 and "--advanced is for gflowd init" in r.stderr
    r = gflowd(g, "--cleanup", "up")
    assert r.returncode == 2 and "--cleanup" in r.stderr


def test_gflowd_cleanup(gflow):
    g = gflow
    default = g.home / ".config/gflow/gflow.toml"
    r = gflowd(g, "init", "--yes")
    assert r.returncode == 0 and default.exists(), r.stderr
    r = gflowd(g, "--cleanup")
    assert r.returncode == 0 and "Removed" in r.stdout and not default.exists()
    r = gflowd(g, "--cleanup")
    assert r.returncode == 0 and "nothing to clean up" in r.stdout
    other = g.tmp / "other.toml"
    assert gflowd(g, "init", "--yes", "-c", str(other)).returncode == 0
    assert gflowd(g, "-c", str(other), "--cleanup").returncode == 0 and not other.exists()


def test_gflowd_init_timezone_and_advanced(gflow):
    g = gflow
    cfg = g.tmp / "tz.toml"
    r = gflowd(g, "init", "--yes", "--config", str(cfg), "--timezone", "Asia/Shanghai")
    assert r.returncode == 0, r.stderr
    assert 'timezone = "Asia/Shanghai"' in cfg.read_text()
    r = gflowd(g, "init", "--yes", "--force", "--config", str(cfg), "--timezone", "local")
    assert r.returncode == 0 and "timezone" not in cfg.read_text()
    r = gflowd(g, "init", "--yes", "--force", "--config", str(cfg), "--timezone", "UTC")
    assert r.returncode == 0 and 'timezone = "UTC"' in cfg.read_text()
    for bad in ("Mars/Olympus", "../etc/passwd", "/etc/localtime"):
        r = gflowd(g, "init", "--yes", "--force", "--config", str(cfg), "--timezone", bad)
        assert r.returncode != 0 and "--timezone" in r.stderr and f"'{bad}'" in r.stderr
    r = gflowd(g, "init", "--yes", "--force", "--config", str(cfg), "--advanced")
    assert r.returncode == 0, r.stderr
    text = cfg.read_text()
    assert "[projects]\n# known_projects = []\nrequire_project = false" in text
    assert "# [daemon.fair_share]" in text and "# [notifications]" in text and "# [quota.default_user]" in text
    # interactive: the answers are written, and the file is one the daemon reads and follows
    # (questions are asked on a terminal only)
    master, slave = pty.openpty()
    os.write(master, ("\n" * 7 + "ml, cv\nyes\n").encode())
    r = subprocess.run([str(g.build / "gflowd"), "init", "--force", "--config", str(cfg), "--advanced"],
                       env=g.env, cwd=g.tmp, stdin=slave, capture_output=True, text=True, timeout=30)
    os.close(slave)
    os.close(master)
    assert r.returncode == 0, r.stderr
    assert "projects jobs may name" in r.stdout
    assert 'known_projects = ["ml", "cv"]\nrequire_project = true' in cfg.read_text()
    g.start("--config", str(cfg))
    r = g.cli("gbatch", "true")
    assert r.returncode != 0 and "project" in r.stderr
    g.wait_state(g.submit("-P", "cv", "true"), "Finished")


def test_gflowd_reload_takes_its_verbosity(gflow):
    g = gflow
    g.start("-q")
    g.cli("gqueue", check=True)
    assert "GET /jobs from uid" not in g.daemon_log() and "listening on" not in g.daemon_log()
    r = gflowd(g, "reload", "-vv")
    assert r.returncode == 0, r.stderr
    g.wait_for(lambda: g.cli("gqueue").returncode == 0 and "GET /jobs from uid" in g.daemon_log(),
               what="the reloaded daemon to log requests")
