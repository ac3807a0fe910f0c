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
