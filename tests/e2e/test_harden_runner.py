"""Issue 26, items 6, 8 and 13: what a job's runner is given and where its
log goes, against a user who reads /proc, plants files, or names a job like
shell code."""
import os
import pwd

import pytest

from test_start import standby_count

from conftest import SystemGflow


# ---- 13: job variables in argv carry no free text --------------------------

def test_job_name_is_never_shell_code(gflow, tmp_path):
    g = gflow
    g.start()
    target = tmp_path / "pwned"
    names = [f"a$(touch {target})b", "it's", 'q"`touch ' + str(target) + '`"']
    ids = [g.submit("--name", n, "sh", "-c", 'echo "[$GFLOW_JOB_NAME]"; echo "id=$GFLOW_JOB_ID"')
           for n in names]
    for n, jid in zip(names, ids):
        g.wait_state(jid, "Finished")
        assert g.log_of(jid) == f"[{n}]\nid={jid}\n"
    assert not target.exists()
    # the numeric ones are still put into words (no shell needed)
    jid = g.submit("--name", "x", "echo", "$GFLOW_JOB_ID/${GFLOW_ARRAY_TASK_ID}/$GFLOW_JOB_NAME")
    g.wait_state(jid, "Finished")
    assert g.log_of(jid).strip() == f"{jid}/0/$GFLOW_JOB_NAME"


def test_help_says_which_are_substituted(gflow):
    out = gflow.cli("gbatch", "--help", check=True).stdout
    para = out.split("Resources:")[0]
    assert "$GFLOW_JOB_NAME, free text, is never put into a word" in para
    for v in ("$GFLOW_ARRAY_TASK_ID", "$GFLOW_JOB_ID", "$GFLOW_GPU_IDS", "$GFLOW_GPU_MEMORY_MB"):
        assert v in para


# ---- 6: a log name that is taken is never written into ----------------------

STALE = "stale: someone else's log\n"


def test_system_logs_never_meet_stale_files_and_gjob_log_finds_them(system_gflow):
    g = system_gflow
    g.start()
    a = g.add_user("a")
    logs = g.home_of(a) / ".local/share/gflow/logs"
    planted = []
    # what the user's own daemon (logs/ID.log) and an earlier system store
    # (logs/system/ID.log) left, for the ids the new jobs will get
    for d in (logs, logs / "system"):
        g.as_user(a, "mkdir", "-p", str(d), check=True)
        for jid in range(1, 4):
            g.as_user(a, "sh", "-c", f"printf %s \"$1\" > {d}/{jid}.log", "sh", STALE, check=True)
            planted.append(d / f"{jid}.log")
    # a link where the next name would be: passed over, never followed
    g.as_user(a, "ln", "-s", "/etc/hostname", str(logs / "system/2.1.log"), check=True)
    ids = [g.submit_as(a, "sh", "-c", f"echo out-{n}") for n in range(3)]
    assert ids == [1, 2, 3]
    for n, jid in enumerate(ids):
        j = g.wait_state(jid, {"Finished", "Failed"})
        assert j["state"] == "Finished", j
        want = logs / "system" / (f"{jid}.2.log" if jid == 2 else f"{jid}.1.log")
        assert j["log_path"] == str(want)
        assert want.read_text() == f"out-{n}\n"
        assert want.stat().st_uid == pwd.getpwnam(a).pw_uid
        r = g.as_user(a, "gjob", "log", str(jid), check=True)
        assert r.stdout == f"out-{n}\n"
        assert str(want) in g.as_user(a, "gjob", "show", str(jid), check=True).stdout
    for p in planted:
        assert p.read_text() == STALE, p
    assert os.path.islink(logs / "system/2.1.log")
    # the name is stored with the job: a restarted daemon still finds it
    g.stop()
    g.start()
    assert g.as_user(a, "gjob", "log", "3", check=True).stdout == "out-2\n"
    assert g.job(3)["log_path"] == str(logs / "system/3.1.log")
    # a job whose name is free gets it
    jid = g.submit_as(a, "echo", "plain")
    g.wait_state(jid, "Finished")
    assert g.job(jid)["log_path"] == str(logs / "system" / f"{jid}.log")


def test_personal_log_name_taken_gets_a_fresh_one(gflow):
    g = gflow
    g.start()
    first = g.submit("echo", "one")
    g.wait_state(first, "Finished")
    nxt = first + 1
    stale = g.data / "logs" / f"{nxt}.log"
    stale.write_text(STALE)     # written by someone else meanwhile
    jid = g.submit("echo", "two")
    assert jid == nxt
    j = g.wait_state(jid, {"Finished", "Failed"})
    assert j["state"] == "Finished", j
    assert j["log_path"] == str(g.data / "logs" / f"{jid}.1.log")
    assert g.cli("gjob", "log", str(jid), check=True).stdout == "two\n"
    assert stale.read_text() == STALE


# ---- 8: a runner's command line carries nothing of the job -----------------

def cmdlines_seen_by(g, user):
    """Every process's command line, as user reads /proc."""
    script = ("import os, json\nout = {}\n"
              "for p in os.listdir('/proc'):\n"
              "    if p.isdigit():\n"
              "        try:\n"
              "            out[p] = open(f'/proc/{p}/cmdline', 'rb').read().decode('utf-8', 'replace')\n"
              "        except OSError:\n"
              "            pass\n"
              "print(json.dumps(out))\n")
    import json
    return json.loads(g.as_user(user, "/usr/bin/python3", "-c", script, check=True).stdout)


@pytest.mark.parametrize("executor", ["process", "tmux"])
def test_runner_cmdline_shows_no_cwd_log_name_or_command(tmp_path, executor):
    if os.geteuid() != 0:
        pytest.skip("system mode needs root (to run the daemon and to make users)")
    g = SystemGflow(tmp_path, executor=executor)
    try:
        g.start()
        a, b = g.add_user("a"), g.add_user("b")
        secret_dir = g.home_of(a) / f"work-{g.tag[:6]}-cwd"
        g.as_user(a, "mkdir", str(secret_dir), check=True)
        name = f"secret-name-{g.tag[:6]}"
        secs = str(100000 + int(g.tag[:5], 16))    # the command: this test's own
        job = f"sleep\x00{secs}\x00"
        # several jobs at once: the first go to the standby runners (two a
        # CPU, up to 4), the others get runners of their own (the command
        # lines at stake)
        r = g.as_user(a, "gbatch", "--array", "1-6", "--name", name, "sleep", secs,
                      cwd=secret_dir, check=True)
        ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
        for jid in ids:
            g.wait_state(jid, "Running")
        g.wait_for(lambda: sum(c == job for c in cmdlines_seen_by(g, b).values()) == 6,
                   what="the six jobs' processes")
        # A's home holds the job's directory and its log
        secrets = [str(g.home_of(a)), name, secs]
        runners = 0
        for pid, cmd in cmdlines_seen_by(g, b).items():
            # a runner of its own (not the standby's): it names its run directory
            runners += "gflow-runner\0" in cmd and f"\0--dir\0{g.root}/" in cmd
            if cmd == job:
                continue        # the job's own command (hidepid=2 hides it: docs/design.md)
            for s in secrets:
                assert s not in cmd, (pid, cmd.split("\0"))
        assert runners >= 6 - standby_count()
        g.as_user(a, "gcancel", *map(str, ids), check=True)
        for jid in ids:
            g.wait_state(jid, "Cancelled")
            assert g.job(jid)["cwd"] == str(secret_dir)
    finally:
        g.cleanup()
