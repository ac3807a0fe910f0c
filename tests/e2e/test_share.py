"""Sharing fairly (issue 11): quotas, fair share and reservations on a system
daemon, checked as real throwaway users through their own clients."""
import json
import math
import sqlite3
import time

import pytest


def reason(g, jid):
    j = g.job(jid)
    return j["state"], j.get("reason"), j.get("reason_detail")


def show(g, user, jid):
    return g.as_user(user, "gjob", "show", jid, check=True).stdout


@pytest.fixture
def share(system_gflow):
    g = system_gflow
    g.gpus(2)
    return g


def test_quota_max_running_jobs_waits_then_starts_and_max_queued_refuses(share):
    g = share
    alice, bob = g.add_user("a"), g.add_user("b")
    g.env[f"GFLOW_QUOTA__USERS__{alice}__MAX_RUNNING_JOBS"] = "3"
    g.start()
    jobs = [g.submit_as(alice, "sleep", "300") for _ in range(4)]
    for jid in jobs[:3]:
        g.wait_state(jid, "Running")
    g.wait_for(lambda: reason(g, jobs[3])[1] == "Quota", what="the fourth job to wait Quota")
    st, why, detail = reason(g, jobs[3])
    assert st == "Queued" and detail == f"Quota: {alice} max_running_jobs=3"
    out = show(g, alice, jobs[3])
    assert "Reason=Quota" in out and f"ReasonDetail=Quota: {alice} max_running_jobs=3" in out
    # gqueue names the rule too
    q = g.as_user(alice, "gqueue", check=True).stdout
    assert "Quota" in q
    # bob is not held back by alice's quota
    jb = g.submit_as(bob, "true")
    g.wait_state(jb, "Finished")
    # one of alice's ends: the fourth starts
    g.as_user(alice, "gcancel", jobs[0], check=True)
    g.wait_state(jobs[3], "Running")

    # max_queued_jobs: a runtime override, admin-only, refuses a whole batch
    r = g.as_user(alice, "gctl", "quota", "set", "--user", alice, "--max-queued-jobs", "2")
    assert r.returncode != 0 and "only root" in r.stderr
    g.cli("gctl", "quota", "set", "--user", alice, "--max-queued-jobs", "2", check=True)
    g.submit_as(alice, "sleep", "300")      # waits (3 running), 1 queued
    r = g.as_user(alice, "gbatch", "--array", "1-2", "sleep", "1")
    assert r.returncode != 0
    assert f"{alice} max_queued_jobs=2" in r.stderr and "nothing was submitted" in r.stderr
    before = len(g.api("GET", "/jobs?users=all")[1]["jobs"])
    g.submit_as(alice, "sleep", "300")      # the second queued one fits
    assert len(g.api("GET", "/jobs?users=all")[1]["jobs"]) == before + 1
    r = g.as_user(alice, "gbatch", "sleep", "1")
    assert r.returncode != 0 and "max_queued_jobs=2" in r.stderr
    r = g.as_user(alice, "gjob", "redo", jobs[0])     # a redo is a submission too
    assert r.returncode != 0 and "max_queued_jobs=2" in r.stderr

    # anyone may list; the override is shown
    out = g.as_user(bob, "gctl", "quota", "list", "-o", "json", check=True).stdout
    rows = {(r["SUBJECT"], r["NAME"]): r for r in json.loads(out)}
    a = rows[("user", alice)]
    assert a["MAX_RUN_JOBS"] == "3" and a["MAX_QUEUED"] == "2" and a["OVERRIDE"] == "yes"
    assert a["RUNNING"] == "3" and a["QUEUED"] == "2"

    # the override survives kill -9
    g.kill9()
    g.start()
    st, body = g.api("GET", "/quotas")
    subj = [s for s in body["subjects"] if s["name"] == alice][0]
    assert subj["limits"]["max_queued_jobs"] == 2 and subj["override"] == {"max_queued_jobs": 2}
    g.cli("gctl", "quota", "remove", "--user", alice, check=True)
    g.submit_as(alice, "sleep", "1")        # no queued limit any more
    r = g.cli("gctl", "quota", "remove", "--user", alice)
    assert r.returncode != 0 and "no quota override" in r.stderr


def test_quota_max_running_gpus_names_the_limit(share):
    g = share
    alice = g.add_user("a")
    g.start()
    g.cli("gctl", "quota", "set", "--default-user", "--max-running-gpus", "1", check=True)
    j1 = g.submit_as(alice, "--gpus", "1", "--time", "10", "sleep", "300")
    j2 = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    r1 = g.wait_state(j1, "Running")
    g.wait_for(lambda: reason(g, j2)[2] == f"Quota: {alice} max_running_gpus=1", what="Quota on GPUs")
    # expected when j1 ends by its time limit (10 minutes)
    assert abs(g.job(j2)["expected_start"] - (r1["start_time"] + 600)) < 1
    assert "ExpectedStart=" in show(g, alice, j2)
    # a CPU-only job of hers is not held by the GPU limit
    j3 = g.submit_as(alice, "true")
    g.wait_state(j3, "Finished")
    # GPU-hours in 24 h: with 0 allowed, her next GPU job waits; CPU jobs run
    g.as_user(alice, "gcancel", j1, j2, check=True)
    g.cli("gctl", "quota", "set", "--user", alice, "--max-gpu-hours-per-day", "0", check=True)
    j4 = g.submit_as(alice, "--gpus", "1", "true")
    g.wait_for(lambda: reason(g, j4)[2] == f"Quota: {alice} max_gpu_hours_per_day=0", what="Quota on GPU-hours")
    j5 = g.submit_as(alice, "true")
    g.wait_state(j5, "Finished")
    g.cli("gctl", "quota", "set", "--user", alice, "--max-gpu-hours-per-day", "unlimited", check=True)
    g.wait_state(j4, "Finished")
    # a project's quota holds its jobs, whoever submits them
    g.cli("gctl", "quota", "set", "--project", "vis", "--max-running-jobs", "1", check=True)
    p1 = g.submit_as(alice, "--project", "vis", "sleep", "300")
    p2 = g.submit_as(alice, "--project", "vis", "sleep", "300")
    g.wait_state(p1, "Running")
    g.wait_for(lambda: reason(g, p2)[2] == "Quota: project vis max_running_jobs=1", what="the project's quota")
    g.as_user(alice, "gcancel", p1, p2, check=True)
    # a batch cap says so too
    r = g.as_user(alice, "gbatch", "--array", "1-2%1", "sleep", "300", check=True)
    first = int([ln for ln in r.stdout.split() if ln.isdigit()][0])
    g.wait_state(first, "Running")
    g.wait_for(lambda: reason(g, first + 1)[2] == f"Resources: batch {first} runs its max_concurrent=1 jobs",
               what="the batch cap named")


def test_fair_share_orders_equal_priority_by_decayed_usage(share):
    g = share
    g.gpus(1)
    alice, bob = g.add_user("a"), g.add_user("b")
    g.start()
    g.stop()
    # alice used 2 GPU-hours just now (as the daemon records a job's end)
    db = sqlite3.connect(g.data / "gflow.db")
    with db:
        db.execute("INSERT INTO usage(key, data) VALUES (?, ?)",
                   (alice, json.dumps({"gpu_secs": 7200.0, "at": time.time()})))
    db.close()
    g.start()
    blocker = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.wait_state(blocker, "Running")
    ja = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    jb = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.as_user(bob, "gcancel", blocker, check=True)
    g.wait_state(jb, "Running")
    assert g.job(ja)["state"] == "Queued"
    # a priority an admin set still wins over usage (a user's own orders
    # only that user's jobs: test_harden_rules.py)
    jp = g.submit_as(alice, "--gpus", "1", "true")
    jb2 = g.submit_as(bob, "--gpus", "1", "true")
    assert g.api("POST", "/jobs/update", {"ids": [jp], "set": {"priority": 20}})[1]["done"] == [jp]
    g.as_user(bob, "gcancel", jb, check=True)
    g.wait_state(jp, "Finished")
    assert g.job(jp)["start_time"] < (g.job(jb2)["start_time"] or math.inf)
    # shown by gstats and gctl quota list
    out = g.as_user(bob, "gstats", "--all-users", "-o", "json", check=True).stdout
    usage = {r["USER"]: float(r["SHARE_GPU_HOURS"]) for r in json.loads(out)["users"]}
    assert 1.9 < usage[alice] < 2.1
    out = g.as_user(bob, "gctl", "quota", "list", "-o", "json", check=True).stdout
    row = [r for r in json.loads(out) if r["NAME"] == alice][0]
    assert 1.9 < float(row["SHARE_GPU_H"]) < 2.1
    # bob's ended runs were recorded with their ends: they survive kill -9
    g.wait_state(jb2, "Finished")
    g.wait_for(lambda: not any(g.job(j)["active"] for j in (blocker, jb, jb2)), what="bob's jobs to end")
    bob_before = g.api("GET", "/usage")[1]["users"][bob]
    assert bob_before > 0
    g.kill9()
    g.start()
    users = g.api("GET", "/usage")[1]["users"]
    assert users[bob] >= bob_before * 0.99 and 1.9 * 3600 < users[alice] < 2.1 * 3600


def test_fair_share_keys_are_enforced(share):
    """half_life_secs decays usage; enabled = false orders by id alone."""
    g = share
    g.gpus(1)
    alice, bob = g.add_user("a"), g.add_user("b")
    g.env["GFLOW_DAEMON__FAIR_SHARE__ENABLED"] = "false"
    g.env["GFLOW_DAEMON__FAIR_SHARE__HALF_LIFE_SECS"] = "3600"
    g.start()
    g.stop()
    db = sqlite3.connect(g.data / "gflow.db")
    with db:     # 2 GPU-hours, one half-life ago: 1 GPU-hour now
        db.execute("INSERT INTO usage(key, data) VALUES (?, ?)",
                   (alice, json.dumps({"gpu_secs": 7200.0, "at": time.time() - 3600})))
    db.close()
    g.start()
    st, body = g.api("GET", "/usage")
    assert body["enabled"] is False and body["half_life_secs"] == 3600
    assert 3500 < body["users"][alice] < 3700
    blocker = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.wait_state(blocker, "Running")
    ja = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    jb = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.as_user(bob, "gcancel", blocker, check=True)
    g.wait_state(ja, "Running")     # off: submission order, usage or not
    assert g.job(jb)["state"] == "Queued"


def test_reservation_keeps_gpu_and_opens_on_time(share):
    g = share
    alice, bob = g.add_user("a"), g.add_user("b")
    g.env["GFLOW_RESERVATION_SLOT_SECS"] = "1"
    g.start()
    iso = lambda x: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(x))
    # only admins create
    r = g.as_user(alice, "gctl", "reserve", "create", "--user", alice, "--gpus", "1", "--start",
                  iso(math.floor(time.time()) + 60), "--duration", "1m")
    assert r.returncode != 0 and "only root" in r.stderr
    # root holds GPU 1 until t, bob from t (a slot is one second here)
    t0 = math.floor(time.time())
    t = t0 + 8
    g.cli("gctl", "reserve", "create", "--user", "root", "--gpu-spec", "1", "--start", iso(t0),
          "--duration", "8s", check=True)
    g.cli("gctl", "reserve", "create", "--user", bob, "--gpu-spec", "1", "--start", iso(t),
          "--duration", "10m", check=True)
    # an overlapping one is refused, naming the clash
    r = g.cli("gctl", "reserve", "create", "--user", alice, "--gpu-spec", "0-1", "--start", iso(t + 60),
              "--duration", "1m")
    assert r.returncode != 0 and f"overlaps reservation 2 for {bob} on GPU 1" in r.stderr
    # times on the slot; a time zone that does not exist is refused, not ignored
    r = g.cli("gctl", "reserve", "create", "--user", bob, "--gpus", "1", "--start", "2030-01-01 10:00",
              "--duration", "1h", "--timezone", "Mars/Olympus")
    assert r.returncode != 0 and "'Mars/Olympus' is not a time zone" in r.stderr
    out = g.cli("gctl", "reserve", "list", "--timezone", "Asia/Tokyo", check=True).stdout
    assert "JST" in out
    # alice's job takes GPU 0; her next (no time limit) may not take GPU 1
    a1 = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    assert g.wait_state(a1, "Running")["gpu_ids"] == [0]
    a2 = g.submit_as(alice, "--gpus", "1", "sleep", "300")
    b1 = g.submit_as(bob, "--gpus", "1", "sleep", "300")
    g.wait_for(lambda: reason(g, a2)[1] == "Reservation" and reason(g, b1)[1] == "Reservation",
               what="both to wait for the reservations")
    assert reason(g, b1)[2].startswith("Reservation: 1 for root on GPU 1")
    assert "ExpectedStart=" in show(g, bob, b1)
    assert time.time() < t, "the test was too slow to check before the window"
    j = g.wait_state(b1, "Running", timeout=15)
    assert j["gpu_ids"] == [1]
    assert t <= j["start_time"] <= t + 1.0, (j["start_time"], t)
    assert g.job(a2)["state"] == "Queued"
    # bob's job ends: GPU 1 is free, but still kept for bob
    g.as_user(bob, "gcancel", b1, check=True)
    g.wait_for(lambda: reason(g, a2)[1] == "Reservation", what="alice's job to wait for bob's reservation")
    st, why, detail = reason(g, a2)
    assert st == "Queued" and detail.startswith(f"Reservation: 2 for {bob} on GPU 1")

    # everyone sees them; the timeline draws GPU 1 reserved
    out = g.as_user(alice, "gctl", "reserve", "list", "--timeline", "--range", "2h", check=True).stdout
    rows = {ln.split()[1]: ln for ln in out.splitlines() if ln.startswith("GPU ")}
    assert set(rows) == {"0", "1"}
    assert "B" in rows["1"] and "B" not in rows["0"] and f"reservation 2: {bob}" in out
    out = g.as_user(alice, "gctl", "reserve", "list", "--status", "active", check=True).stdout
    assert bob in out
    # --active: only windows running now, not future ones
    g.cli("gctl", "reserve", "create", "--user", alice, "--gpu-spec", "0", "--start", iso(t + 3600),
          "--duration", "1m", check=True)
    st, body = g.api("GET", "/reservations?active=1")
    assert [(r["id"], r["status"]) for r in body["reservations"]] == [(2, "active")]
    out = g.as_user(alice, "gctl", "reserve", "list", "--active", check=True).stdout
    rows = [ln.split()[0] for ln in out.splitlines()[1:] if ln.strip()]
    assert rows == ["2"], out
    g.cli("gctl", "reserve", "cancel", "3", check=True)
    # cancel and kill -9: what was recorded stays
    r = g.as_user(bob, "gctl", "reserve", "cancel", "2")
    assert r.returncode != 0
    g.kill9()
    g.start()
    st, body = g.api("GET", "/reservations")
    assert [(r["id"], r["status"]) for r in body["reservations"]] == [(1, "completed"), (2, "active"),
                                                                      (3, "cancelled")]
    g.cli("gctl", "reserve", "cancel", "2", check=True)
    g.wait_state(a2, "Running")     # GPU 1 is no longer kept
    # its runner is up before the daemon goes (a child between fork and exec
    # would still hold the daemon's lock)
    g.wait_for(lambda: g.job(a2).get("runner_pid"), what="a2's runner")
    g.kill9()
    g.start()
    out = g.cli("gctl", "reserve", "get", "2", check=True).stdout
    assert "Status=cancelled" in out


BAD = [
    ("/quotas/set", {"subject": "user", "name": "a", "limits": {"max_running_jobs": 1}, "x": 1}, 400, "'x'"),
    ("/quotas/set", {"subject": "group", "limits": {"max_running_jobs": 1}}, 400, "'group'"),
    ("/quotas/set", {"subject": "user", "limits": {"max_running_jobs": 1}}, 400, "'name'"),
    ("/quotas/set", {"subject": "default_user", "name": "a", "limits": {"max_queued_jobs": 1}}, 400, "'name'"),
    ("/quotas/set", {"subject": "user", "name": "a:b", "limits": {"max_queued_jobs": 1}}, 400, "':'"),
    ("/quotas/set", {"subject": "user", "name": "a", "limits": {"max_runing_jobs": 1}}, 400, "max_runing_jobs"),
    ("/quotas/set", {"subject": "user", "name": "a", "limits": {"max_running_gpus": -2}}, 400, "max_running_gpus"),
    ("/quotas/set", {"subject": "user", "name": "a", "limits": {}}, 400, "at least one limit"),
    ("/quotas/remove", {"subject": "user", "name": "nobody"}, 404, "user:nobody"),
    ("/reservations", {"user": "root", "gpus": 1, "gpu_ids": [0], "start": 0, "duration_secs": 1800}, 400,
     "either"),
    ("/reservations", {"user": "root", "gpu_ids": [0, 99], "start": 0, "duration_secs": 1800}, 400,
     "'gpu_ids' item 2"),
    ("/reservations", {"user": "root", "gpus": 1, "start": "soon", "duration_secs": 1800}, 400, "'start'"),
    ("/reservations", {"user": "root", "gpus": 1, "start": 4102444800, "duration_secs": 100}, 400,
     "multiple of 30 minutes"),
    ("/reservations", {"user": "root", "gpus": 5, "start": 4102444800, "duration_secs": 1800}, 400,
     "this machine has 2 GPUs"),
    ("/reservations", {"user": "no-such-user-x", "gpus": 1, "start": 4102444800, "duration_secs": 1800}, 400,
     "no-such-user-x"),
    ("/reservations/cancel", {"id": 42}, 404, "reservation 42"),
]


@pytest.mark.parametrize("path,body,code,word", BAD, ids=[f"{p}:{w}" for p, _, _, w in BAD])
def test_bad_fair_use_requests_name_the_bad_part(gflow, path, body, code, word):
    gflow.gpus(2)
    gflow.start()
    st, answer = gflow.api("POST", path, body)
    assert st == code and word in answer["error"], (st, answer)
    assert "\n" not in answer["error"]


def test_list_filters_are_checked(gflow):
    gflow.start()
    st, answer = gflow.api("GET", "/reservations?state=active")
    assert st == 400 and "'state'" in answer["error"]
    st, answer = gflow.api("GET", "/reservations?status=done")
    assert st == 400 and "'done'" in answer["error"]
    st, answer = gflow.api("GET", "/reservations/7")
    assert st == 404
