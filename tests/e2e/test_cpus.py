"""CPUs as a resource (issue 28 §4): gbatch --cpus, [daemon] cpus and
constrain_cpus, the reason a job waits, refusals, and where it is shown."""
import json
import os

import pytest


def test_cpus_counted_third_job_waits_naming_cpus(gflow):
    g = gflow
    g.env["GFLOW_DAEMON__CPUS"] = "2"
    g.start()
    a = g.submit("--cpus", "1", "sleep", "300")
    b = g.submit("--cpus-per-task", "1", "sleep", "300")   # as Slurm users type it
    c = g.submit("--cpus", "1", "sleep", "300")
    g.wait_state(a, "Running")
    g.wait_state(b, "Running")
    g.wait_for(lambda: g.job(c).get("reason") == "Resources", what="the third job to wait Resources")
    j = g.job(c)
    assert j["state"] == "Queued" and j["cpus"] == 1
    assert j["reason_detail"].startswith("Resources: cpus 2 of 2 busy"), j["reason_detail"]
    show = g.cli("gjob", "show", str(c), check=True).stdout
    assert "\nCPUs=1\n" in show and "ReasonDetail=Resources: cpus 2 of 2 busy" in show
    q = g.cli("gqueue", "-f", "JOBID,CPUS,REASON", check=True).stdout
    assert any(ln.split()[:2] == [str(c), "1"] for ln in q.splitlines()), q
    info = g.cli("ginfo", check=True).stdout
    assert "CPUs: 2/2 booked" in info, info
    # --cpus 3 could never run here: refused, naming the flag and the limit
    r = g.cli("gbatch", "--cpus", "3", "true")
    assert r.returncode != 0
    assert "--cpus 3" in r.stderr and "only 2 CPUs" in r.stderr, r.stderr
    # an update of a waiting job's CPUs is seen by the next pass: asking 2
    # of 2 it still waits; back to 1 it starts when one ends
    st, body = g.api("POST", "/jobs/update", {"ids": [c], "set": {"cpus": 3}})
    assert st == 200 and body["errors"] and "--cpus 3" in json.dumps(body["errors"]), body
    r = g.cli("gjob", "update", str(c), "--cpus", "3")
    assert r.returncode != 0 and "--cpus 3" in r.stderr, r.stderr
    r = g.cli("gjob", "update", str(c), "--cpus", "0")
    assert r.returncode != 0 and "--cpus" in r.stderr and "'0'" in r.stderr, r.stderr
    g.cli("gjob", "update", str(c), "--cpus-per-task", "2", check=True)
    assert g.job(c)["cpus"] == 2
    # one ends: 1 of 2 busy is not room for 2
    g.cli("gcancel", str(a), check=True)
    g.wait_for(lambda: "cpus 1 of 2 busy" in (g.job(c).get("reason_detail") or ""),
               what="the detail to say 1 of 2")
    g.api("POST", "/jobs/update", {"ids": [c], "set": {"cpus": 1}})
    g.wait_state(c, "Running")


def test_cpus_bad_values_named(gflow):
    g = gflow
    g.start()
    for bad in ("0", "-1", "abc", "65537", ""):
        r = g.cli("gbatch", "--cpus", bad, "true")
        assert r.returncode != 0 and "--cpus" in r.stderr, (bad, r.stderr)
    st, body = g.api("POST", "/jobs", {"cwd": "/", "jobs": [{"command": ["true"], "cpus": 0}]})
    assert st == 400 and "cpus" in body["error"], body
    st, body = g.api("POST", "/jobs", {"cwd": "/", "jobs": [{"command": ["true"], "cpus": "2"}]})
    assert st == 400 and "cpus" in body["error"], body
    # the default is 1, and the dry run says what it would book
    jid = g.submit("true")
    assert g.job(jid)["cpus"] == 1
    r = g.cli("gbatch", "--dry-run", "--cpus", "2", "true", check=True)
    assert "CPUs: 2" in r.stdout, r.stdout


def test_cpus_directive(gflow, tmp_path):
    g = gflow
    g.start()
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n# GFLOW --cpus 2\necho hi\n")
    script.chmod(0o755)
    jid = g.submit(str(script))
    assert g.job(jid)["cpus"] == 2


def test_cpus_above_affinity_refused_at_start(gflow):
    g = gflow
    g.env["GFLOW_DAEMON__CPUS"] = "65536"
    g.start(wait=False)
    assert g.proc.wait(timeout=15) != 0
    log = g.log.read_text()
    assert "[daemon] cpus = 65536" in log and "may run on only" in log, log


def test_constrain_cpus_pins_the_job(gflow):
    g = gflow
    n = len(os.sched_getaffinity(0))
    if n < 2:
        pytest.skip("needs 2 CPUs to tell a pinned job from one that is not")
    g.env["GFLOW_DAEMON__CONSTRAIN_CPUS"] = "true"
    del g.env["GFLOW_DAEMON__CPUS"]     # the default: the daemon's affinity
    g.start()
    a = g.submit("--cpus", "1", "sh", "-c", "nproc; sleep 300")
    b = g.submit("--cpus", "1", "sh", "-c", "nproc; sleep 300")
    g.wait_state(a, "Running")
    g.wait_state(b, "Running")
    g.wait_for(lambda: g.log_of(a).strip() and g.log_of(b).strip(), what="both jobs to print nproc")
    assert g.log_of(a).split()[0] == "1" and g.log_of(b).split()[0] == "1"
    ia, ib = g.job(a)["cpu_ids"], g.job(b)["cpu_ids"]
    assert ia != ib, (ia, ib)   # each its own CPU
    assert f"CPUIDs={ia}" in g.cli("gjob", "show", str(a), check=True).stdout
    # kept across a restart: a job started later gets neither
    g.stop()
    g.start()
    assert g.job(a)["cpu_ids"] == ia
    g.cli("gcancel", str(a), check=True)
    g.wait_for(lambda: not g.job(a)["active"], what="job a to let go")
    c = g.submit("--cpus", "1", "sh", "-c", "nproc; sleep 300")
    g.wait_state(c, "Running")
    assert g.job(c)["cpu_ids"] != ib
    g.wait_for(lambda: g.log_of(c).strip(), what="job c to print nproc")
    assert g.log_of(c).split()[0] == "1"
    g.cli("gcancel", str(b), str(c), check=True)


def test_default_is_the_affinity_and_zero_counts_none(gflow):
    g = gflow
    n = len(os.sched_getaffinity(0))
    del g.env["GFLOW_DAEMON__CPUS"]
    g.start()
    assert f"CPUs: 0/{n} booked" in g.cli("ginfo", check=True).stdout
    r = g.cli("gbatch", "--cpus", str(n + 1), "true")
    assert r.returncode != 0 and f"--cpus {n + 1}" in r.stderr
    g.stop()
    g.env["GFLOW_DAEMON__CPUS"] = "0"
    g.start()
    assert "not counted" in g.cli("ginfo", check=True).stdout
    jid = g.submit("--cpus", str(n + 1), "true")    # not counted: accepted, and runs
    g.wait_state(jid, "Finished")
    g.stop()
    g.env["GFLOW_DAEMON__CONSTRAIN_CPUS"] = "true"
    g.start(wait=False)
    assert g.proc.wait(timeout=15) != 0
    assert "constrain_cpus" in g.log.read_text()


def test_no_constrain_job_sees_all_cpus(gflow):
    g = gflow
    g.start()
    jid = g.submit("--cpus", "1", "nproc")
    g.wait_state(jid, "Finished")
    assert g.log_of(jid).split()[0] == str(len(os.sched_getaffinity(0)))
    assert "cpu_ids" not in g.job(jid)


def test_every_waiting_job_has_its_note_whatever_the_order_of_priorities(gflow):
    # The pass's notes are looked up by id (a binary search): decisions in
    # priority order, not id order, must still each find theirs.
    g = gflow
    g.env["GFLOW_DAEMON__CPUS"] = "1"
    g.start()
    a = g.submit("--cpus", "1", "sleep", "300")
    g.wait_state(a, "Running")
    waiting = [g.submit("--cpus", "1", "--priority", str(p), "sleep", "300") for p in (5, 50, 20, 90, 1, 70)]
    for jid in waiting:
        g.wait_for(lambda: (g.job(jid).get("reason_detail") or "").startswith("Resources: cpus 1 of 1 busy"),
                   what=f"job {jid}'s note")
    g.cli("gcancel", str(a), *map(str, waiting), check=True)
