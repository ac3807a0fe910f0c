"""Hardening the rules of a shared machine (issue 26, items 3, 4, 7, 9): every
job a request touches is checked against the caller's rights (redo
--cascade), a user's priority orders only that user's own jobs, remote
records obey the submission rules, and no free-text field takes control
characters. Checked on a system daemon as real throwaway users."""
import json
import sqlite3
import time

import pytest


def api_as(g, user, method, path, body=None):
    """One request to the daemon's socket as `user` (their own uid: the
    daemon knows the caller from SO_PEERCRED): (status, parsed body)."""
    args = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", str(g.socket),
            "-X", method, "-H", "Content-Type: application/json"]
    if body is not None:
        args += ["--data-binary", "@-"]
    r = g.as_user(user, *args, f"http://localhost{path}",
                  input=json.dumps(body) if body is not None else None)
    text, _, code = r.stdout.rpartition("\n")
    try:
        return int(code), json.loads(text) if text.strip() else None
    except ValueError:
        return int(code), text


@pytest.fixture
def two(system_gflow):
    g = system_gflow
    g.gpus(1)
    g.start()
    return g, g.add_user("a"), g.add_user("b")


def all_jobs(g):
    st, body = g.api("GET", "/jobs?users=all")
    assert st == 200, body
    return body["jobs"] if isinstance(body, dict) else body


# ---- item 3: redo --cascade over other users' jobs ---------------------------

def test_redo_cascade_over_another_users_job_is_refused_naming_it(two):
    g, a, b = two
    x = g.submit_as(b, "false")
    g.wait_state(x, "Failed")
    y = g.submit_as(a, "--depends-on", str(x), "echo", "a-ran")
    g.wait_state(y, "Cancelled")
    before = {j["id"] for j in all_jobs(g)}
    want = f"redo --cascade of job {x} would redo job {y} of {a}; only {a} or an admin may redo it"
    st, body = api_as(g, b, "POST", "/jobs/redo", {"id": x, "cascade": True})
    assert st == 403 and body["error"] == want, (st, body)
    r = g.as_user(b, "gjob", "redo", x, "--cascade")
    assert r.returncode != 0 and want in r.stderr, r.stderr
    assert {j["id"] for j in all_jobs(g)} == before    # nothing of A's (or B's) was made
    # without --cascade B redoes only their own job
    r = g.as_user(b, "gjob", "redo", x, check=True)
    mine = [j for j in all_jobs(g) if j["id"] not in before]
    assert [j["user"] for j in mine] == [b]
    # an admin (root) may cascade over anyone's jobs
    st, body = g.api("POST", "/jobs/redo", {"id": x, "cascade": True})
    assert st == 201, body
    made = {j["redo_of"]: j["id"] for j in body["jobs"]}
    assert set(made) == {x, y} and g.job(made[y])["user"] == a


# ---- item 4: a user's priority orders only that user's own jobs -------------

def heavy_usage(g, user, gpu_secs):
    """`user` used gpu_secs GPU-seconds just now (as the daemon records a job's end)."""
    g.stop()
    db = sqlite3.connect(g.data / "gflow.db")
    with db:
        db.execute("INSERT INTO usage(key, data) VALUES (?, ?)",
                   (user, json.dumps({"gpu_secs": gpu_secs, "at": time.time()})))
    db.close()
    g.start()


def test_a_users_priority_does_not_beat_fair_share_an_admins_does(two):
    g, a, b = two
    heavy_usage(g, b, 7 * 3600.0)
    heavy_usage(g, a, 3600.0)
    blocker = g.submit_as(b, "--gpus", "1", "sleep", "300")
    g.wait_state(blocker, "Running")
    jb = g.submit_as(b, "--gpus", "1", "--priority", "255", "sleep", "300")
    jb_low = g.submit_as(b, "--gpus", "1", "--priority", "1", "sleep", "300")
    ja = g.submit_as(a, "--gpus", "1", "sleep", "300")
    g.as_user(b, "gcancel", blocker, check=True)
    g.wait_for(lambda: g.job(ja)["state"] == "Running" or g.job(jb)["state"] == "Running",
               what="a job to start")
    assert g.job(ja)["state"] == "Running", g.job(jb)
    assert g.job(jb)["state"] == "Queued" and g.job(jb_low)["state"] == "Queued"
    show = g.as_user(b, "gjob", "show", jb, check=True).stdout
    assert "Priority=255\n" in show
    assert f"PriorityAcrossUsers=10 (Priority orders only {b}'s own jobs)" in show, show
    # B's own 255 goes before B's own 1
    g.as_user(a, "gcancel", ja, check=True)
    g.wait_state(jb, "Running")
    assert g.job(jb_low)["state"] == "Queued"
    # an admin's priority counts across users: B's job set to 50 by root
    # goes before A's new one
    ja2 = g.submit_as(a, "--gpus", "1", "sleep", "300")
    st, body = g.api("POST", "/jobs/update", {"ids": [jb_low], "set": {"priority": 50}})
    assert st == 200 and body["done"] == [jb_low], body
    show = g.as_user(b, "gjob", "show", jb_low, check=True).stdout
    assert "Priority=50\nPriorityAcrossUsers=50 (set by an admin)\n" in show, show
    # B editing another field keeps the admin's priority; B setting one
    # makes it B's own again (checked after the start below)
    g.as_user(b, "gjob", "update", jb_low, "--name", "renamed", check=True)
    assert g.job(jb_low)["priority_by_admin"] is True
    g.as_user(b, "gcancel", jb, check=True)
    g.wait_state(jb_low, "Running")
    assert g.job(ja2)["state"] == "Queued"
    jb3 = g.submit_as(b, "--gpus", "1", "--hold", "true")
    st, body = g.api("POST", "/jobs/update", {"ids": [jb3], "set": {"priority": 60}})
    assert st == 200 and g.job(jb3)["priority_across_users"] == 60
    g.as_user(b, "gjob", "update", jb3, "--priority", "61", check=True)
    j = g.job(jb3)
    assert j["priority_by_admin"] is False and j["priority_across_users"] == 10


def test_max_user_priority_lets_users_reach_higher(system_gflow):
    g = system_gflow
    (g.root / "etc/gflow").mkdir(parents=True)
    (g.root / "etc/gflow/gflow.toml").write_text("[daemon]\nmax_user_priority = 30\n")
    g.gpus(1)
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    heavy_usage(g, b, 7 * 3600.0)
    blocker = g.submit_as(a, "--gpus", "1", "sleep", "300")
    g.wait_state(blocker, "Running")
    jb = g.submit_as(b, "--gpus", "1", "--priority", "255", "sleep", "300")
    ja = g.submit_as(a, "--gpus", "1", "sleep", "300")
    assert g.job(jb)["priority_across_users"] == 30 and g.job(ja)["priority_across_users"] == 10
    g.as_user(a, "gcancel", blocker, check=True)
    g.wait_state(jb, "Running")
    assert g.job(ja)["state"] == "Queued"


# ---- item 7: cluster records obey the rules of a submission ------------------

def records(n, project=None, first=1):
    jobs = []
    for i in range(first, first + n):
        r = {"name": f"r{i}", "command": ["true"], "slurm_id": str(1000 + i)}
        if project:
            r["project"] = project
        jobs.append(r)
    return {"cluster": "hpc", "cwd": "/tmp", "jobs": jobs}


def cluster_jobs_of(g, user):
    return [j for j in all_jobs(g) if j.get("cluster") and j["user"] == user]


def test_remote_records_count_toward_quota_and_pass_project_checks(system_gflow):
    g = system_gflow
    (g.root / "etc/gflow").mkdir(parents=True)
    (g.root / "etc/gflow/gflow.toml").write_text(
        '[projects]\nknown_projects = ["ml"]\n\n[quota.default_user]\nmax_queued_jobs = 2\n')
    g.gpus(1)
    g.start()
    b = g.add_user("b")
    st, body = api_as(g, b, "POST", "/remote/jobs", records(200, "ml"))
    assert st == 409 and "max_queued_jobs=2" in body["error"] and "adds 200" in body["error"], (st, body)
    st, body = api_as(g, b, "POST", "/remote/jobs", records(1, "made-up"))
    assert st == 400 and body["error"] == "job 1: project 'made-up' is not one of the known projects", body
    assert cluster_jobs_of(g, b) == []
    st, body = api_as(g, b, "POST", "/remote/jobs", records(2, "ml"))
    assert st == 201, body
    st, body = api_as(g, b, "POST", "/remote/jobs", records(1, "ml", first=3))
    assert st == 409 and "2 jobs waiting, this submission adds 1" in body["error"], body
    # the records count toward a local submission's quota too
    r = g.as_user(b, "gbatch", "--project", "ml", "--hold", "true")
    assert r.returncode != 0 and "max_queued_jobs=2" in r.stderr, r.stderr
    assert len(cluster_jobs_of(g, b)) == 2


def test_remote_records_have_a_size_and_rate_limit(two):
    g, a, b = two
    st, body = api_as(g, b, "POST", "/remote/jobs", records(10001))
    assert st == 413 and body["error"] == \
        "a remote submission may record at most 10000 jobs, this one has 10001", (st, body)
    assert cluster_jobs_of(g, b) == []
    for k in range(2):
        st, body = api_as(g, b, "POST", "/remote/jobs", records(10000, first=1 + k * 10000))
        assert st == 201, (st, body)
    st, body = api_as(g, b, "POST", "/remote/jobs", records(1, first=30000))
    assert st == 429 and body["error"] == (
        "a user may record at most 20000 cluster jobs an hour: 20000 recorded in the last hour, "
        "this submission adds 1 (nothing was recorded)"), (st, body)
    # another user is not held back by B's records
    st, body = api_as(g, a, "POST", "/remote/jobs", records(1))
    assert st == 201, body


# ---- item 9: no control characters in any free-text field --------------------

CONTROLS = {"esc": "a\x1b[31mb", "bel": "a\x07b", "c1": "a\u009bb"}   # U+009B: \xc2\x9b in UTF-8


def sweep_cases(g, held, ended, remote):
    """(what, method, path, body-with-X, where the refusal is, field named)."""
    def sub(**spec):
        return {"jobs": [dict({"command": ["true"], "hold": True}, **spec)], "cwd": "/tmp",
                "env": ["PATH=/usr/bin:/bin"]}

    def rec(**spec):
        return {"cluster": "hpc", "cwd": "/tmp",
                "jobs": [dict({"name": "r", "command": ["true"], "slurm_id": "77"}, **spec)]}
    return [
        ("submit name", "POST", "/jobs", lambda x: sub(name=x), "name"),
        ("submit project", "POST", "/jobs", lambda x: sub(project=x), "project"),
        ("submit conda_env", "POST", "/jobs", lambda x: sub(conda_env=x), "conda_env"),
        ("submit notify_email", "POST", "/jobs", lambda x: sub(notify_email=x), "notify_email"),
        ("submit notify_on", "POST", "/jobs", lambda x: sub(notify_on=x), "notify_on"),
        ("submit dep_mode", "POST", "/jobs", lambda x: sub(dep_mode=x), "dep_mode"),
        ("submit params name", "POST", "/jobs", lambda x: sub(params={x: "v"}), "params"),
        ("update name", "POST", "/jobs/update", lambda x: {"ids": [held], "set": {"name": x}}, "name"),
        ("update params name", "POST", "/jobs/update",
         lambda x: {"ids": [held], "set": {"params": {x: "v"}}}, "params"),
        ("redo name", "POST", "/jobs/redo", lambda x: {"id": ended, "set": {"name": x}}, "name"),
        ("remote cluster", "POST", "/remote/jobs", lambda x: dict(rec(), cluster=x), "cluster"),
        ("remote name", "POST", "/remote/jobs", lambda x: rec(name=x), "name"),
        ("remote slurm_id", "POST", "/remote/jobs", lambda x: rec(slurm_id=x), "slurm_id"),
        ("remote remote_log", "POST", "/remote/jobs", lambda x: rec(remote_log=x), "remote_log"),
        ("remote project", "POST", "/remote/jobs", lambda x: rec(project=x), "project"),
        ("remote params name", "POST", "/remote/jobs", lambda x: rec(params={x: "v"}), "params"),
        ("remote reason", "POST", "/remote/update",
         lambda x: {"jobs": [{"id": remote, "state": "PD", "reason": x}]}, "reason"),
        ("quota name", "POST", "/quotas/set",
         lambda x: {"subject": "user", "name": x, "limits": {"max_running_jobs": 1}}, "name"),
        ("quota remove name", "POST", "/quotas/remove", lambda x: {"subject": "project", "name": x}, "name"),
        ("reservation user", "POST", "/reservations",
         lambda x: {"user": x, "gpus": 1, "start": time.time() + 3600, "duration_secs": 60}, "user"),
        ("gpus spec", "POST", "/gpus/allowed", lambda x: {"spec": x}, "spec"),
    ]


def test_every_free_text_field_refuses_control_characters_naming_it(two):
    g, a, b = two
    held = g.submit_as(b, "--hold", "true")
    ended = g.submit_as(b, "true")
    g.wait_state(ended, "Finished")
    st, body = g.api("POST", "/remote/jobs", {"cluster": "hpc", "cwd": "/tmp", "jobs": [
        {"name": "r", "command": ["true"], "slurm_id": "76"}]})
    assert st == 201, body
    remote = body["jobs"][0]["id"]
    before = {j["id"]: j for j in all_jobs(g)}
    for what, method, path, make, field in sweep_cases(g, held, ended, remote):
        for kind, x in CONTROLS.items():
            st, body = g.api(method, path, make(x))
            errors = body.get("errors") if isinstance(body, dict) else None
            msg = body.get("error") if isinstance(body, dict) and "error" in body else \
                (errors[0]["error"] if errors and isinstance(errors[0], dict) else (errors or [""])[0])
            assert st in (200, 400) and f"'{field}' contains a control character" in msg, \
                (what, kind, st, body)
            assert st == 400 or not body.get("done") and not body.get("updated"), (what, kind, body)
    # nothing was made or changed, and nothing a listing serves carries one
    after = {j["id"]: j for j in all_jobs(g)}
    assert after.keys() == before.keys()
    assert after[remote]["reason"] == before[remote]["reason"]
    st, raw = g.api("GET", "/jobs?users=all")
    text = json.dumps(raw, ensure_ascii=False)
    assert not any(c in text for c in "\x1b\x07\u009b")
    assert g.api("GET", "/reservations")[1]["reservations"] == []
    # as an ordinary user over the socket too (the same check)
    st, body = api_as(g, b, "POST", "/remote/update",
                      {"jobs": [{"id": remote, "state": "PD", "reason": CONTROLS["esc"]}]})
    assert st == 403 or "contains a control character" in json.dumps(body) or "belongs to" in json.dumps(body)
    st, body = api_as(g, b, "POST", "/jobs", {"jobs": [{"command": ["true"], "hold": True, "name": "x\x1by"}],
                                              "cwd": str(g.home_of(b)), "env": ["PATH=/usr/bin:/bin"]})
    assert st == 400 and body["error"].endswith("'name' contains a control character"), body


def test_a_remote_jobs_reason_with_control_characters_is_refused(two):
    g, a, b = two
    st, body = api_as(g, b, "POST", "/remote/jobs", {"cluster": "hpc", "cwd": "/tmp", "jobs": [
        {"name": "r", "command": ["true"], "slurm_id": "76"}]})
    assert st == 201, body
    rid = body["jobs"][0]["id"]
    for x in CONTROLS.values():
        st, body = api_as(g, b, "POST", "/remote/update", {"jobs": [{"id": rid, "state": "PD", "reason": x}]})
        assert st == 200 and body["updated"] == 0 and \
            body["errors"] == [f"job {rid}: 'reason' contains a control character"], body
    st, body = api_as(g, b, "POST", "/remote/update", {"jobs": [{"id": rid, "state": "PD", "reason": "fine"}]})
    assert body["updated"] == 1 and g.job(rid)["reason"] == "fine"

