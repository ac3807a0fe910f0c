"""Preemptible jobs (issue 28 §1): gbatch --preemptible / --signal SIG@SECS /
--preempt-mode, the victims (fewest, newest-started, never a normal job), the
signal then the kill after the grace, the requeue under the same id with
$GFLOW_RESTART_COUNT and the log continued, and the hostile and careless
uses. Fake NVML GPUs; no timed assertions beyond generous bounds."""
import json
import os
import signal
import time

import pytest

# A job that says when it got TERM (then exits), and its restart count.
TRAP = ('echo "start restart=$GFLOW_RESTART_COUNT"; '
        'trap \'echo "got TERM"; exit 0\' TERM; '
        'while :; do sleep 0.1; done')
# A job that ignores TERM.
STUBBORN = 'trap "echo ignoring TERM" TERM; echo started; while :; do sleep 0.1; done'


def preempt_of(g, jid):
    return g.job(jid).get("preempt") or {}


def test_preemptible_sweep_gives_way_to_a_normal_job_and_requeues(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    sweep = []
    for _ in range(4):
        sweep.append(g.submit("--preemptible", "--signal", "TERM@2", "--gpus", "1", "bash", "-c", TRAP))
        # starts in order: their start times differ
        g.wait_state(sweep[-1], "Running")
        g.wait_for(lambda: "start restart=0" in g.log_of(sweep[-1]), what="the job to print its start")
        time.sleep(0.05)
    show = g.cli("gjob", "show", str(sweep[0]), check=True).stdout
    assert "Preemptible=yes PreemptMode=requeue Signal=TERM@2 Requeues=0" in show, show
    normal = g.submit("--gpus", "2", "sleep", "300")
    t0 = time.time()
    g.wait_state(normal, "Running", timeout=30)
    waited = time.time() - t0
    assert waited < 2 + 1 + 10, waited      # the grace + 1 s, with a generous margin for slow runs
    # exactly the two newest-started were preempted, and queued again under their ids
    for jid in sweep[2:]:
        j = g.wait_state(jid, {"Queued", "Running"})
        assert j["preempt"]["requeues"] == 1, j
        assert "got TERM" in g.log_of(jid)
        assert "gflow: job preempted" in g.log_of(jid)
    for jid in sweep[:2]:
        j = g.job(jid)
        assert j["state"] == "Running" and j["preempt"]["requeues"] == 0, j
    q = g.cli("gqueue", "-f", "JOBID,ST,REASON", check=True).stdout
    for jid in sweep[2:]:
        row = [ln.split() for ln in q.splitlines() if ln.split()[:1] == [str(jid)]][0]
        assert row[1] == "PD" and row[2] == "Preempted", q
    # GPUs free: the requeued jobs start again, told so, their logs continued
    g.cli("gcancel", str(normal), check=True)
    for jid in sweep[2:]:
        g.wait_state(jid, "Running")
        g.wait_for(lambda: "start restart=1" in g.log_of(jid), what="the restart to be logged")
        log = g.log_of(jid)
        assert log.index("start restart=0") < log.index("got TERM") < log.index("start restart=1"), log
    assert "Requeues=1" in g.cli("gjob", "show", str(sweep[3]), check=True).stdout
    # metrics count them
    st, body = g.api("GET", "/metrics")
    text = body.decode() if isinstance(body, bytes) else str(body)
    assert "gflow_preemptions_total 2" in text, text
    for jid in sweep:
        g.cli("gcancel", str(jid), check=True)


def test_job_ignoring_the_signal_is_killed_after_the_grace(gflow_exec):
    g = gflow_exec
    g.gpus(1)
    g.start()
    p = g.submit("--preemptible", "--signal", "TERM@1", "--gpus", "1", "bash", "-c", STUBBORN)
    g.wait_state(p, "Running")
    g.wait_for(lambda: "started" in g.log_of(p), what="the job to start")
    n = g.submit("--gpus", "1", "sleep", "300")
    g.wait_state(n, "Running", timeout=30)
    j = g.job(p)
    assert j["state"] == "Queued" and j["preempt"]["requeues"] == 1, j
    assert "ignoring TERM" in g.log_of(p)
    assert not g.job_pids(p) or g.wait_for(lambda: not g.job_pids(p), what="no process left")
    g.cli("gcancel", str(n), str(p), check=True)


def test_preempt_mode_cancel(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    p = g.submit("--preemptible", "--preempt-mode", "cancel", "--signal", "USR1@0", "--gpus", "1",
                 "sleep", "300")
    g.wait_state(p, "Running")
    n = g.submit("--gpus", "1", "sleep", "300")
    g.wait_state(n, "Running", timeout=30)
    j = g.wait_state(p, "Cancelled")
    assert j["reason"] == "Preempted", j
    show = g.cli("gjob", "show", str(p), check=True).stdout
    assert "PreemptMode=cancel Signal=USR1@0" in show, show
    g.cli("gcancel", str(n), check=True)


def test_a_normal_job_is_never_a_victim(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    a = g.submit("--gpus", "1", "sleep", "300")
    p = g.submit("--preemptible", "--signal", "TERM@1", "--gpus", "1", "sleep", "300")
    g.wait_state(a, "Running")
    g.wait_state(p, "Running")
    # a 2-GPU job: the preemptible one alone is not enough, so nobody is preempted
    n = g.submit("--gpus", "2", "sleep", "300")
    time.sleep(1.5)
    assert g.job(a)["state"] == "Running" and g.job(p)["state"] == "Running"
    assert not (g.job(p).get("preempt") or {}).get("since")
    assert g.job(n)["state"] == "Queued"
    g.cli("gcancel", str(a), str(p), str(n), check=True)


def test_preemptible_jobs_wait_for_normal_ones_and_run_beyond_quota(gflow):
    g = gflow
    g.gpus(3)
    g.env["GFLOW_QUOTA__DEFAULT_USER__MAX_RUNNING_GPUS"] = "1"
    g.env["GFLOW_QUOTA__DEFAULT_USER__MAX_PREEMPTIBLE_GPUS"] = "1"
    g.start()
    a = g.submit("--gpus", "1", "sleep", "300")
    b = g.submit("--gpus", "1", "sleep", "300")      # over the quota: waits
    p = g.submit("--preemptible", "--gpus", "1", "sleep", "300")     # beyond the quota
    q = g.submit("--preemptible", "--gpus", "1", "sleep", "300")     # over max_preemptible_gpus
    g.wait_state(a, "Running")
    g.wait_state(p, "Running")
    g.wait_for(lambda: g.job(b).get("reason") == "Quota", what="b to wait Quota")
    g.wait_for(lambda: g.job(q).get("reason") == "Quota", what="q to wait Quota")
    assert "max_preemptible_gpus=1" in (g.job(q).get("reason_detail") or ""), g.job(q)
    # raised at run time (gctl quota set): q starts; a bad value is named
    r = g.cli("gctl", "quota", "set", "--default-user", "--max-preemptible-gpus", "x")
    assert r.returncode != 0 and "--max-preemptible-gpus" in r.stderr, r.stderr
    g.cli("gctl", "quota", "set", "--default-user", "--max-preemptible-gpus", "2", check=True)
    g.wait_state(q, "Running")
    g.cli("gcancel", str(a), str(b), str(p), str(q), check=True)


@pytest.mark.parametrize("bad,word", [
    ("FOO@10", "unknown signal"), ("TERM@-1", "0..3600"), ("TERM@3601", "0..3600"), ("STOP", "unknown signal"),
    ("99@5", "signal 99"), ("@5", "SIG[@SECS]"), ("TERM@x", "0..3600"), ("", "SIG[@SECS]"),
])
def test_bad_signal_values_are_named(gflow, bad, word):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--preemptible", "--signal", bad, "true")
    assert r.returncode != 0 and "--signal" in r.stderr and word in r.stderr, (bad, r.stderr)
    st, body = g.api("POST", "/jobs", {"cwd": "/", "jobs": [{"command": ["true"], "preemptible": True,
                                                               "signal": bad}]})
    assert st == 400 and "signal" in body["error"], body


def test_preempt_flags_need_preemptible_and_are_checked(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--signal", "TERM@5", "true")
    assert r.returncode != 0 and "--signal" in r.stderr and "--preemptible" in r.stderr, r.stderr
    r = g.cli("gbatch", "--preemptible", "--preempt-mode", "kill", "true")
    assert r.returncode != 0 and "--preempt-mode" in r.stderr, r.stderr
    st, body = g.api("POST", "/jobs", {"cwd": "/", "jobs": [{"command": ["true"], "preempt_mode": "cancel"}]})
    assert st == 400 and "preempt_mode" in body["error"], body
    st, body = g.api("POST", "/jobs", {"cwd": "/", "jobs": [{"command": ["true"], "preemptible": "yes"}]})
    assert st == 400 and "preemptible" in body["error"], body
    # a directive works like the flag
    script = g.tmp / "job.sh"
    script.write_text("#!/bin/bash\n# GFLOW --preemptible\n# GFLOW --signal USR1@5\nsleep 300\n")
    jid = g.submit(str(script))
    p = g.job(jid)["preempt"]
    assert p["preemptible"] and p["signal"] == signal.SIGUSR1 and p["secs"] == 5, p
    r = g.cli("gbatch", "--dry-run", "--preemptible", "true", check=True)
    assert "preemptible (TERM@60, requeue)" in r.stdout, r.stdout
    g.cli("gcancel", str(jid), check=True)


def test_preemption_survives_a_daemon_restart(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    p = g.submit("--preemptible", "--signal", "TERM@3", "--gpus", "1", "bash", "-c", STUBBORN)
    g.wait_state(p, "Running")
    g.wait_for(lambda: "started" in g.log_of(p), what="the job to start")
    n = g.submit("--gpus", "1", "sleep", "300")
    g.wait_for(lambda: (g.job(p).get("preempt") or {}).get("since"), what="the preemption to begin")
    assert g.job(p)["st"] == "PR"
    g.kill9()
    g.start()
    g.wait_state(n, "Running", timeout=40)
    j = g.job(p)
    assert j["state"] == "Queued" and j["preempt"]["requeues"] == 1, j
    g.cli("gcancel", str(n), str(p), check=True)


def test_mcp_submit_and_update_keep_preemption(gflow):
    from test_mcp import Client
    g = gflow
    g.gpus(1)
    g.start()
    c = Client(g)
    try:
        c.init("2025-06-18")
        jid = c.call("submit_jobs", {"jobs": [{"command": ["sleep", "30"], "hold": True, "preemptible": True,
                                               "signal": "USR2@7", "preempt_mode": "cancel"}]})["jobs"][0]["id"]
        p = g.job(jid)["preempt"]
        assert p["preemptible"] and p["mode"] == "cancel" and p["signal"] == signal.SIGUSR2 and p["secs"] == 7, p
        c.call("get_job", {"job_id": jid})
    finally:
        c.close()
    # an update of another field keeps it preemptible; a redo makes a preemptible job too
    g.cli("gjob", "update", str(jid), "--priority", "20", check=True)
    assert g.job(jid)["preempt"]["preemptible"] and g.job(jid)["preempt"]["secs"] == 7
    g.cli("gcancel", str(jid), check=True)
    r = g.cli("gjob", "redo", str(jid), check=True)
    new = int([ln for ln in r.stdout.split() if ln.isdigit()][-1])
    assert g.job(new)["preempt"]["mode"] == "cancel" and g.job(new)["preempt"]["requeues"] == 0


def test_hostile_second_user(system_gflow):
    """bob cannot make alice's normal job a victim, nor run more preemptible
    GPUs than max_preemptible_gpus; alice's normal job does take bob's
    preemptible GPU back."""
    g = system_gflow
    g.gpus(3)
    alice, bob = g.add_user("a"), g.add_user("b")
    g.env[f"GFLOW_QUOTA__USERS__{bob}__MAX_PREEMPTIBLE_GPUS"] = "2"
    g.start()
    a1 = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    g.wait_state(a1, "Running")
    p = [g.submit_as(bob, "--preemptible", "--signal", "TERM@1", "--gpus", "1", "sleep", "300") for _ in range(3)]
    g.wait_state(p[0], "Running")
    g.wait_state(p[1], "Running")
    g.wait_for(lambda: g.job(p[2]).get("reason") == "Quota", what="bob's third to wait Quota")
    assert "max_preemptible_gpus=2" in g.job(p[2])["reason_detail"], g.job(p[2])
    # bob's normal 3-GPU job: only alice's normal job could free the last GPU: nobody is preempted
    b3 = g.submit_as(bob, "--gpus", "3", "sleep", "300")
    time.sleep(1.5)
    assert g.job(a1)["state"] == "Running"
    assert all(not (g.job(x).get("preempt") or {}).get("since") for x in p[:2])
    assert g.job(b3)["state"] == "Queued"
    g.as_user(bob, "gcancel", b3, check=True)
    # bob cannot cancel alice's job either
    r = g.as_user(bob, "gcancel", a1)
    assert r.returncode != 0
    # alice's normal job needing 1 more GPU: the newest of bob's preemptible jobs gives way
    a2 = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    g.wait_state(a2, "Running", timeout=30)
    assert g.job(p[1])["preempt"]["requeues"] == 1 and g.job(p[0])["state"] == "Running"
    out = g.as_user(bob, "gjob", "show", p[1], check=True).stdout
    assert "Requeues=1" in out, out
    for u, ids in ((alice, [a1, a2]), (bob, p)):
        g.as_user(u, "gcancel", *ids)


def test_gstats_counts_preemptible_gpu_hours(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    p = g.submit("--preemptible", "--gpus", "1", "sleep", "0.5")
    g.wait_state(p, "Finished")
    st = json.loads(g.cli("gstats", "-o", "json", check=True).stdout)
    assert st["preemptible_gpu_hours"] > 0 and st["preemptible_gpu_hours"] <= st["total_gpu_hours"], st
    assert "preemptible (gbatch --preemptible)" in g.cli("gstats", check=True).stdout


def test_kill9_while_preempting_runs_nothing_twice(gflow):
    """The backstop holds with preemption on: the daemon is killed -9 at
    random moments while normal jobs preempt a preemptible sweep; no job
    ever runs twice at once (a lock per job id, taken by each run), and in
    the end every preemptible job is whole again."""
    import random
    g = gflow
    g.gpus(2)
    g.start()
    ran = g.tmp / "ran.txt"
    ran.touch()
    body = (f'exec 9>"{g.tmp}/lock.$GFLOW_JOB_ID"; flock -n 9 || echo "TWICE $GFLOW_JOB_ID" >> {ran}; '
            f'echo "$GFLOW_JOB_ID $GFLOW_RESTART_COUNT" >> {ran}; '
            "trap 'exit 0' TERM; while :; do sleep 0.1; done")
    sweep = [g.submit("--preemptible", "--signal", "TERM@1", "--gpus", "1", "bash", "-c", body) for _ in range(3)]
    rnd = random.Random(5)
    normals = []
    for k in range(4):
        normals.append(g.submit("--gpus", "1", "sleep", str(rnd.uniform(0.5, 2))))
        time.sleep(rnd.uniform(0.2, 1.2))
        g.kill9()
        time.sleep(rnd.uniform(0, 0.5))
        g.start()
    for n in normals:
        g.wait_state(n, {"Finished"}, timeout=40)
    # the sweep holds the 2 GPUs again, the third waits
    g.wait_for(lambda: sum(g.job(p)["state"] == "Running" for p in sweep) == 2, timeout=40,
               what="two preemptible jobs running again")
    text = ran.read_text()
    assert "TWICE" not in text, text
    for p in sweep:
        g.cli("gcancel", str(p), check=True)
    for p in sweep:
        g.wait_state(p, "Cancelled")
        g.wait_for(lambda: not g.job_pids(p), what=f"job {p}'s processes to be gone")


@pytest.mark.parametrize("weight", ["0", "1"])
def test_fair_share_counts_preemptible_use_at_its_weight(gflow, weight):
    g = gflow
    g.gpus(2)
    g.env["GFLOW_DAEMON__FAIR_SHARE__PREEMPTIBLE_WEIGHT"] = weight
    g.start()
    p = g.submit("--preemptible", "--gpus", "2", "sleep", "1")
    g.wait_state(p, "Finished")
    st, body = g.api("GET", "/usage")
    used = sum(body["users"].values())
    if weight == "0":
        assert used == 0, body
    else:
        assert 1.5 < used < 30, body     # 2 GPUs for about a second
    # a bad weight is named
    r = g.cli("gbatch", "--config", "/dev/null", "true", env={"GFLOW_DAEMON__FAIR_SHARE__PREEMPTIBLE_WEIGHT": "2"})
    assert r.returncode != 0 and "preemptible_weight" in r.stderr, r.stderr


def test_reservation_window_takes_gpus_back(system_gflow):
    import math
    g = system_gflow
    g.gpus(1)
    alice, bob = g.add_user("a"), g.add_user("b")
    g.env["GFLOW_RESERVATION_SLOT_SECS"] = "1"
    g.start()
    iso = lambda x: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(x))
    t = math.floor(time.time()) + 4
    g.cli("gctl", "reserve", "create", "--user", bob, "--gpu-spec", "0", "--start", iso(t),
          "--duration", "10m", check=True)
    # before the window alice's preemptible job may use the GPU (a normal one without a limit may not)
    p = g.submit_as(alice, "--preemptible", "--signal", "TERM@1", "--gpus", "1", "sleep", "300")
    g.wait_state(p, "Running")
    # the window begins: alice's job gives the GPU back by itself, nobody asked
    g.wait_for(lambda: (g.job(p).get("preempt") or {}).get("requeues") == 1, timeout=20,
               what="alice's job to be requeued")
    assert time.time() >= t
    assert g.job(p)["state"] == "Queued"
    b = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.wait_state(b, "Running", timeout=20)
    g.as_user(bob, "gcancel", b)
    g.as_user(alice, "gcancel", p)
