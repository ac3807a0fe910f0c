"""The machine timeline (GET /timeline, ginfo --timeline) and a reserved
GPU shown as such (ginfo, /metrics, MCP get_info): issue 29 §2."""
import math
import time

from conftest import SLOW  # noqa: F401  (the suite's slowness factor)
from test_mcp import Client


def iso(x):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(x))


def segs(body, gpu):
    return [s for g in body["gpus"] if g["index"] == gpu for s in g["segments"]]


def test_timeline_running_reservation_expected(gflow):
    g = gflow
    g.gpus(2)
    g.env["GFLOW_RESERVATION_SLOT_SECS"] = "1"
    g.start()
    a = g.submit("--gpus", "1", "--time", "120", "--name", "train", "sleep", "300")
    ra = g.wait_state(a, "Running")
    assert ra["gpu_ids"] == [0]
    t1 = math.floor(time.time()) + 3600
    g.cli("gctl", "reserve", "create", "--user", "nobody", "--gpu-spec", "1", "--start", iso(t1),
          "--duration", "2h", check=True)
    # wants both GPUs: GPU 0 frees at the limit, GPU 1 after the reservation
    w = g.submit("--gpus", "2", "--time", "60", "--name", "eval", "sleep", "300")
    g.wait_for(lambda: g.job(w).get("reason") not in (None, ""), what="the job to wait")
    st, body = g.api("GET", "/timeline?range=48h")
    assert st == 200, body
    assert body["range_secs"] == 48 * 3600 and abs(body["to"] - body["now"] - 48 * 3600) < 1
    s0, s1 = segs(body, 0), segs(body, 1)
    run = [s for s in s0 if s["kind"] == "running"]
    assert len(run) == 1 and run[0]["id"] == a and run[0]["name"] == "train"
    assert abs(run[0]["end"] - (ra["start_time"] + 7200)) < 2
    assert set(run[0]) == {"kind", "id", "user", "name", "state", "start", "end", "estimated"}   # public only
    assert run[0]["estimated"] is False
    resv = [s for s in s1 if s["kind"] == "reservation"]
    assert len(resv) == 1 and resv[0]["user"] == "nobody" and resv[0]["start"] == t1
    assert resv[0]["end"] == t1 + 7200 and resv[0]["status"] == "pending"
    exp0 = [s for s in s0 if s["kind"] == "expected"]
    exp1 = [s for s in s1 if s["kind"] == "expected"]
    assert len(exp0) == 1 and exp0 == exp1 and exp0[0]["id"] == w and exp0[0]["state"] == "Queued"
    # it needs both GPUs: after the reservation ends (the limit ends first)
    assert abs(exp0[0]["start"] - (t1 + 7200)) < 2 and abs(exp0[0]["end"] - (t1 + 10800)) < 2
    assert body["unplaced"] == [] and body["unplaced_count"] == 0

    # a short range leaves the expected start out
    st, body = g.api("GET", "/timeline?range=2h")
    assert st == 200 and not [s for s in segs(body, 0) if s["kind"] == "expected"]

    # ginfo --timeline: rows, the legend, the column size and now marked
    out = g.cli("ginfo", "--timeline", check=True).stdout
    lines = out.splitlines()
    rows = {ln.split()[1]: ln[7:] for ln in lines if ln.startswith("GPU ")}
    assert set(rows) == {"0", "1"}
    assert "one column = 30 min" in lines[0]
    assert any(ln.rstrip().endswith("v") and not ln.strip("v ") for ln in lines), out
    assert "A" in rows["0"] and "A" not in rows["1"]
    assert "1" in rows["1"] and "1" not in rows["0"]
    assert "a" in rows["0"] and "a" in rows["1"]
    # the running job comes before the expected start on GPU 0
    assert rows["0"].rindex("A") < rows["0"].index("a")
    assert rows["1"].rindex("1") < rows["1"].index("a")
    assert f"A = job {a} (" in out and "train: running since" in out
    assert "1 = reservation 1 for nobody" in out
    assert f"a = job {w} (" in out and "eval: expected to start" in out
    # a longer range: wider columns, still within 160 characters
    out = g.cli("ginfo", "--timeline", "--range", "14d", check=True).stdout
    assert "one column = 3 h" in out.splitlines()[0]
    assert max(len(ln) for ln in out.splitlines() if ln.startswith("GPU ")) <= 160


def test_timeline_no_limit_to_estimate(gflow):
    """A running job without a time limit is drawn until start + [daemon]
    default_runtime_estimate when it is set (marked estimated), not to the
    end of the range; without the setting its end is not known."""
    g = gflow
    g.gpus(2)
    g.env["GFLOW_DAEMON__DEFAULT_RUNTIME_ESTIMATE"] = "7200"
    g.start()
    a = g.submit("--gpus", "1", "--name", "open-ended", "sleep", "300")
    ra = g.wait_state(a, "Running")
    st, body = g.api("GET", "/timeline?range=12h")
    assert st == 200, body
    run = [s for s in segs(body, ra["gpu_ids"][0]) if s["kind"] == "running"]
    assert len(run) == 1 and run[0]["estimated"] is True, run
    assert abs(run[0]["end"] - (ra["start_time"] + 7200)) < 2, run
    out = g.cli("ginfo", "--timeline", "--range", "12h", check=True).stdout
    row = [ln for ln in out.splitlines() if ln.startswith(f"GPU {ra['gpu_ids'][0]} ")][0][7:]
    # 30-minute columns: about 4 of the job's glyph (2 h), then free until the end
    assert row.count("A") in (4, 5, 6) and row.rstrip().endswith("."), out
    assert "until about" in out and "default_runtime_estimate" in out, out
    g.stop()
    del g.env["GFLOW_DAEMON__DEFAULT_RUNTIME_ESTIMATE"]
    g.start()
    st, body = g.api("GET", "/timeline?range=12h")
    run = [s for s in segs(body, ra["gpu_ids"][0]) if s["kind"] == "running"]
    assert run and run[0]["end"] is None and run[0]["estimated"] is False, run
    assert "end not known (no time limit)" in g.cli("ginfo", "--timeline", check=True).stdout


def test_timeline_range_refused(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    for bad in ("0", "-1h", "2x", "abc", "30m", "15d", "9" * 80):
        st, body = g.api("GET", "/timeline?range=" + bad)
        assert st == 400 and "range" in body["error"], (bad, body)
    st, body = g.api("GET", "/timeline?range=1h%00x")
    assert st == 400 and "NUL" in body["error"]
    # twice: refused, not the last one taken
    st, body = g.api("GET", "/timeline?range=1h&range=2h")
    assert st == 400 and "'range' is given twice" in body["error"], body
    # bytes that are not UTF-8, or control characters, in what the error
    # quotes: the answer is still JSON, with them escaped
    st, body = g.api("GET", "/timeline?range=%ff%fe")
    assert st == 400 and "\\xff\\xfe" in body["error"], body
    st, body = g.api("GET", "/timeline?range=%1b%5b2J")
    assert st == 400 and "\\e[2J" in body["error"] and "\x1b" not in body["error"], body
    st, body = g.api("GET", "/timeline?rang=2h")
    assert st == 400 and "unknown query parameter 'rang'" in body["error"]
    st, body = g.api("GET", "/timeline?range=1d12h")
    assert st == 200 and body["range_secs"] == 36 * 3600
    for bad, msg in (("2x", "--range '2x': expected e.g. 2h"), ("30m", "--range '30m' must be from 1h to 14d"),
                     ("0", "--range '0' must be positive")):
        r = g.cli("ginfo", "--timeline", "--range", bad)
        assert r.returncode == 2 and msg in r.stderr, (bad, r.stderr)
    r = g.cli("ginfo", "--range", "2h")
    assert r.returncode == 2 and "--range goes with --timeline" in r.stderr
    r = g.cli("ginfo", "--timeline", "-l")
    assert r.returncode == 2 and "not with -l" in r.stderr
    out = g.cli("ginfo", "--timeline", "--range", "12h", check=True).stdout
    assert "Nothing running, reserved or expected" in out


def test_reserved_gpu_shown_everywhere(gflow):
    g = gflow
    g.gpus(2)
    g.env["GFLOW_RESERVATION_SLOT_SECS"] = "1"
    g.start()
    t0 = math.floor(time.time())
    g.cli("gctl", "reserve", "create", "--user", "nobody", "--gpu-spec", "1", "--start", iso(t0),
          "--duration", "1h", check=True)
    st, body = g.api("GET", "/gpus")
    g1 = [x for x in body["gpus"] if x["index"] == 1][0]
    g0 = [x for x in body["gpus"] if x["index"] == 0][0]
    assert g1["state"] == "reserved" and g1["reservation"]["user"] == "nobody"
    assert g1["reservation"]["end"] == t0 + 3600
    assert g0["state"] == "idle" and g0["reservation"] is None
    out = g.cli("ginfo", check=True).stdout
    row = [ln for ln in out.splitlines() if " reserved " in ln]
    assert len(row) == 1 and row[0].split()[2] == "1" and "(nobody until " in row[0], out
    out = g.cli("ginfo", "-l", check=True).stdout
    assert any(ln.split()[0] == "1" and "reserved" in ln and "nobody" in ln for ln in out.splitlines()), out
    st, text = g.api("GET", "/metrics")
    text = text.decode() if isinstance(text, bytes) else text
    assert 'gflow_gpu_state{gpu="1",state="reserved"} 1' in text
    assert 'gflow_gpu_state{gpu="0",state="reserved"} 0' in text
    assert 'gflow_gpu_state{gpu="1",state="idle"} 0' in text
    # MCP get_info carries the GPUs with their state and the reservation
    c = Client(g)
    try:
        c.init()
        info = c.call("get_info")
    finally:
        c.close()
    assert [x["state"] for x in info["gpus"]["gpus"]] == ["idle", "reserved"]
    assert info["gpus"]["gpus"][1]["reservation"]["user"] == "nobody"
    # once cancelled, GPU 1 is idle again
    g.cli("gctl", "reserve", "cancel", "1", check=True)
    st, body = g.api("GET", "/gpus")
    assert [x["state"] for x in body["gpus"]] == ["idle", "idle"]
