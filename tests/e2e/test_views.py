"""What users read: every program's --help/--version/completion, gqueue's
views (-g, -t, -o json/csv, -T, -w), gjob log forms, attach and
close-sessions under tmux, gstats."""
import json
import subprocess
import time

import pytest

PROGRAMS = ["gbatch", "gqueue", "ginfo", "gjob", "gcancel", "gctl", "gstats", "gflowd"]


@pytest.mark.parametrize("prog", PROGRAMS)
def test_help_version_and_completion(gflow, prog):
    r = gflow.cli(prog, "--help")
    assert r.returncode == 0 and "usage" in r.stdout.lower()
    r = gflow.cli(prog, "--version")
    assert r.returncode == 0 and "0.1.0" in r.stdout
    r = gflow.cli(prog, "completion", "bash")
    assert r.returncode == 0 and "complete" in r.stdout
    r = gflow.cli(prog, "--no-such-option")
    assert r.returncode != 0 and r.stderr.strip()


def test_queue_views(gflow):
    g = gflow
    g.start()
    a = g.submit("--name", "first", "true")
    g.wait_state(a, "Finished")
    b = g.submit("--name", "second", "--hold", "--depends-on", str(a), "true")
    c = g.submit("--name", "third", "--hold", "--depends-on", str(b), "true")
    r = g.cli("gqueue", "-a", "-o", "json", check=True)
    jobs = json.loads(r.stdout)
    assert [j["id"] for j in jobs] == [a, b, c]
    r = g.cli("gqueue", "-a", "-o", "csv", "-f", "JOBID,NAME,ST", check=True)
    assert r.stdout.splitlines()[0] == "JOBID,NAME,ST"
    assert f"{b},second,H" in r.stdout
    r = g.cli("gqueue", "-a", "-g", check=True)
    assert "Hold" in r.stdout and "Finished" in r.stdout
    r = g.cli("gqueue", "-a", "-t", check=True)
    assert "second" in r.stdout and ("└─" in r.stdout or "├─" in r.stdout)
    r = g.cli("gqueue", "-c", check=True)
    assert "first" in r.stdout and "second" not in r.stdout
    r = g.cli("gqueue", "-s", "H", "-f", "JOBID", check=True)
    assert r.stdout.split()[1:] == [str(b), str(c)]
    r = g.cli("gqueue", "-a", "-r", "-id", "-f", "JOBID", check=True)
    assert r.stdout.split()[1:] == [str(c), str(b), str(a)]
    r = g.cli("gqueue", "-j", "@", "-f", "NAME", check=True)
    assert r.stdout.split()[1:] == ["third"]
    r = g.cli("gqueue", "-s", "nonsense")
    assert r.returncode != 0 and "nonsense" in r.stderr


def test_watch_redraws_until_stopped(gflow):
    g = gflow
    g.start()
    g.submit("--hold", "--name", "watched", "true")
    p = subprocess.Popen([str(g.build / "gqueue"), "-w", "--interval", "1"], env=g.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    p.terminate()
    out, _ = p.communicate(timeout=10)
    assert out.count("watched") >= 2


def test_job_log_forms(gflow):
    g = gflow
    g.start()
    jid = g.submit("sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done")
    g.wait_state(jid, "Finished")
    assert g.cli("gjob", "log", str(jid), check=True).stdout.split() == [f"line{i}" for i in range(1, 6)]
    assert g.cli("gjob", "log", str(jid), "-f", "2", check=True).stdout.split() == ["line1", "line2"]
    assert g.cli("gjob", "log", str(jid), "-l", "2", check=True).stdout.split() == ["line4", "line5"]
    slow = g.submit("sh", "-c", "echo one; sleep 1; echo two")
    r = g.cli("gjob", "log", str(slow), "--follow", check=True, timeout=30)
    assert r.stdout.split() == ["one", "two"]
    r = g.cli("gjob", "log", "999")
    assert r.returncode != 0 and "999" in r.stderr


def test_tmux_sessions_attach_and_close(gflow_exec):
    g = gflow_exec
    if g.env["GFLOW_EXECUTOR__TYPE"] != "tmux":
        g.start()
        jid = g.submit("sleep", "5")
        g.wait_state(jid, "Running")
        r = g.cli("gjob", "attach", str(jid))
        assert r.returncode != 0 and "tmux" in r.stderr
        return
    g.start()
    jid = g.submit("sleep", "30")
    j = g.wait_state(jid, "Running")
    assert j["tmux_session"] == f"gflow-{jid}"
    # Running is recorded before tmux has made the session (the daemon does
    # not wait for it): -T lists the job once it is there.
    g.wait_for(lambda: str(jid) in g.cli("gqueue", "-T", "-f", "JOBID", check=True).stdout.split(),
               what="the job's session in gqueue -T")
    # gflow's own tmux server, on a socket in the daemon's runtime directory
    sock = j["tmux_socket"]
    assert sock == str(g.runtime / "gflow" / "tmux.sock")
    assert subprocess.run(["tmux", "-S", sock, "has-session", "-t", j["tmux_session"]],
                          env=g.env).returncode == 0
    g.cli("gcancel", str(jid), check=True)
    g.wait_state(jid, "Cancelled")
    g.cli("gjob", "close-sessions", "-a", check=True)
    assert subprocess.run(["tmux", "-S", sock, "has-session", "-t", j["tmux_session"]], env=g.env,
                          capture_output=True).returncode != 0


def test_gstats_summarises(gflow):
    g = gflow
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    g.wait_state(g.submit("false"), "Failed")
    r = g.cli("gstats", check=True)
    assert r.stdout.strip()


def test_jobs_by_id_are_those_jobs_in_order_once_each(gflow):
    # GET /jobs?ids= looks up the jobs it names (it used to walk every job
    # and compare each with every id): ascending, once each, a missing one
    # left out, @~N resolved, other filters still applied.
    g = gflow
    g.start()
    ids = [g.submit("--hold", "true") for _ in range(5)]
    st, body = g.api("GET", f"/jobs?ids={ids[3]},{ids[0]},{ids[3]},999,{ids[1]}&fields=id")
    assert st == 200, body
    assert [j["id"] for j in body["jobs"]] == [ids[0], ids[1], ids[3]]
    st, body = g.api("GET", f"/jobs?ids=@~1,{ids[0]}-{ids[2]}&fields=id,state")
    assert [j["id"] for j in body["jobs"]] == [ids[0], ids[1], ids[2], ids[3]]   # @~1: the one before the last
    st, body = g.api("GET", f"/jobs?ids={ids[0]},@~50&fields=id")    # beyond the jobs there are
    assert st == 400 and "@~50" in body["error"], (st, body)
    g.cli("gcancel", str(ids[1]), check=True)
    st, body = g.api("GET", f"/jobs?ids={ids[0]}-{ids[4]}&states=Cancelled&fields=id")
    assert [j["id"] for j in body["jobs"]] == [ids[1]]
    r = g.cli("gqueue", "-j", f"{ids[4]},{ids[2]}", "-f", "JOBID", check=True)
    assert r.stdout.split()[1:] == [str(ids[2]), str(ids[4])]
