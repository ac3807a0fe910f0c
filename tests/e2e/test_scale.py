"""Scale: a scheduler pass does work only when something it looks at changed,
and held jobs cost a pass nothing."""
import time


def passes(g):
    st, body = g.api("GET", "/metrics")
    text = body.decode() if isinstance(body, bytes) else body
    for line in text.splitlines():
        if line.startswith("gflow_scheduler_pass_seconds_count"):
            return int(float(line.split()[-1]))
    raise AssertionError("no gflow_scheduler_pass_seconds_count in /metrics")


def test_idle_polls_run_no_pass_and_a_change_does(gflow):
    g = gflow
    g.gpus(1)
    g.env["GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS"] = "1"
    g.start()
    busy = g.submit("--gpus", "1", "--", "sleep", "60")
    g.wait_state(busy, "Running")
    waiting = g.submit("--gpus", "1", "true")
    held = [g.submit("--hold", "true") for _ in range(20)]
    g.wait_for(lambda: g.job(waiting)["reason"] == "Resources", what="the waiting job's reason")
    # What the submissions and the first GPU polls asked for may still be
    # on its way on a loaded machine: measure from a quiet moment on.
    def no_pass_for_a_poll_interval():
        p0 = passes(g)
        time.sleep(1.2)
        return passes(g) == p0
    g.wait_for(no_pass_for_a_poll_interval, what="no pass for a poll interval")
    before = passes(g)
    time.sleep(3.5)		# three GPU polls: each asks for a pass, none changes anything
    assert passes(g) == before
    assert g.job(waiting)["state"] == "Queued"
    g.cli("gcancel", str(busy), check=True)
    g.wait_state(waiting, "Finished")
    assert passes(g) > before
    assert all(g.job(h)["state"] == "Hold" for h in held)
    g.cli("gjob", "release", str(held[-1]), check=True)
    g.wait_state(held[-1], "Finished")
