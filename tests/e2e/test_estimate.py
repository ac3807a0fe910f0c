"""Expected starts (core/estimate.c through the API and gjob show): the
queue simulated forward from now by the scheduler's own pass."""
import os

from conftest import SLOW  # noqa: F401  (the suite's slowness factor)


def show(g, jid):
    out = g.cli("gjob", "show", str(jid), check=True).stdout
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def test_expected_start_after_running_limit_and_dependency(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    a = g.submit("--gpus", "1", "--time", "10", "sleep", "300")
    ra = g.wait_state(a, "Running")
    b = g.submit("--gpus", "1", "--time", "5", "sleep", "300")
    c = g.submit("--gpus", "0", "--depends-on", str(b), "sleep", "300")
    g.wait_for(lambda: g.job(b).get("reason") == "Resources", what="B to wait")
    jb = g.job(b)
    assert abs(jb["expected_start"] - (ra["start_time"] + 600)) < 2
    assert jb["expected_gpus"] == [0]
    # a dependency: after its parent's expected end
    jc = g.job(c)
    assert abs(jc["expected_start"] - (jb["expected_start"] + 300)) < 2
    assert "expected_gpus" in jc and jc["expected_gpus"] == []
    kv = show(g, b)
    assert "ExpectedStart" in kv and kv.get("ExpectedGPUs") == "0"
    # the list gives it only when asked
    st, body = g.api("GET", "/jobs?active=1")
    assert all("expected_start" not in j for j in body["jobs"])
    st, body = g.api("GET", "/jobs?active=1&start=1")
    by = {j["id"]: j for j in body["jobs"]}
    assert st == 200 and abs(by[b]["expected_start"] - jb["expected_start"]) < 2
    assert "expected_start" not in by[a]        # running: its start is known
    st, body = g.api("GET", "/jobs?start=yes")
    assert st == 400 and "'start' must be 0 or 1" in body["error"]


def test_no_limit_ahead_unknown_unless_default(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    a = g.submit("--gpus", "1", "sleep", "300")
    g.wait_state(a, "Running")
    b = g.submit("--gpus", "1", "sleep", "300")
    g.wait_for(lambda: g.job(b).get("reason") == "Resources", what="B to wait")
    jb = g.job(b)
    assert jb["expected_start"] is None and "no time limit" in jb["expected_start_note"]
    assert show(g, b)["ExpectedStart"] == "N/A"
    g.stop()
    g.env["GFLOW_DAEMON__DEFAULT_RUNTIME_ESTIMATE"] = "3600"
    g.start()
    ra = g.wait_state(a, "Running")
    jb = g.job(b)
    assert abs(jb["expected_start"] - (ra["start_time"] + 3600)) < 2
