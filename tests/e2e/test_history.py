"""GET /history: the ring of samples (GPUs in use, jobs queued, running,
held) that the dashboard plots, kept across restarts, and each user's
GPU-hours per day over the last 7 days."""
import pytest

from conftest import SLOW


def history(g):
    st, h = g.api("GET", "/history")
    assert st == 200, h
    cols = h["columns"]
    return h, [dict(zip(cols, s)) for s in h["samples"]]


def test_history_samples_persist_and_gpu_hours(gflow):
    g = gflow
    g.env["GFLOW_HISTORY_SECS"] = "1"
    g.gpus(2)
    g.start()
    go = g.tmp / "go"
    run = g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done")
    g.wait_state(run, "Running")
    queued = g.submit("--gpus", "2", "true")
    held = g.submit("--hold", "true")
    g.wait_for(lambda: g.job(queued)["reason"] == "Resources", what="queued for resources")
    h, samples = g.wait_for(
        lambda: (lambda h: h if any(s["gpus_used"] == 1 and s["queued"] == 1 and s["held"] == 1
                                    and s["running"] == 1 for s in h[1]) else None)(history(g)),
        what="a sample of the busy machine")
    assert h["interval_secs"] == 1 and h["span_secs"] == 86400
    assert all(s["gpus_total"] == 2 for s in samples)
    assert [s["t"] for s in samples] == sorted(s["t"] for s in samples)
    go.touch()
    g.wait_state(run, "Finished")
    g.cli("gcancel", str(held), check=True)
    g.wait_state(queued, "Finished")

    j = g.job(run)
    h, samples = history(g)
    hours = h["gpu_hours"]["users"][j["user"]]
    assert len(hours) == h["gpu_hours"]["days"] == 7
    want = (j["end_time"] - j["start_time"]) / 3600     # one GPU; job `queued` ran instantly on 2
    jq = g.job(queued)
    want += 2 * (jq["end_time"] - jq["start_time"]) / 3600
    assert sum(hours) == pytest.approx(want, rel=1e-6, abs=1e-9)
    assert hours[-1] == pytest.approx(sum(hours))      # all of it today

    # the samples survive a restart (kept in the store)
    before = {s["t"] for s in samples}
    assert g.stop() == 0
    g.start()
    _, after = history(g)
    assert before <= {s["t"] for s in after}


def test_history_interval_is_checked(gflow):
    g = gflow
    g.env["GFLOW_HISTORY_SECS"] = "0"
    g.start(wait=False)
    assert g.proc.wait(timeout=20 * SLOW) != 0
    assert "GFLOW_HISTORY_SECS '0': expected whole seconds from 1 to 3600" in g.daemon_log()
