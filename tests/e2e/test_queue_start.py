"""gqueue --start (Slurm's squeue --start) and the START_TIME/SCHEDNODES
fields: the expected starts the daemon works out (core/estimate.c)."""
import csv
import io
import json
import time
from datetime import datetime

from conftest import SLOW  # noqa: F401  (the suite's slowness factor)


def epoch(local):
    return time.mktime(datetime.strptime(local, "%Y-%m-%dT%H:%M:%S").timetuple())


def rows(g, *args):
    out = g.cli("gqueue", *args, "-o", "csv", check=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def test_start_lists_waiting_jobs_with_expected_start_and_gpus(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    a = g.submit("--gpus", "1", "--time", "10", "--name", "first", "sleep", "300")
    ra = g.wait_state(a, "Running")
    b = g.submit("--gpus", "1", "--time", "5", "--name", "second", "sleep", "300")
    c = g.submit("--gpus", "1", "--name", "third", "sleep", "300")   # no limit
    d = g.submit("--gpus", "1", "--name", "fourth", "sleep", "300")  # behind c: unknown
    h = g.submit("--hold", "--gpus", "1", "--name", "held", "true")
    g.wait_for(lambda: g.job(b).get("reason") == "Resources", what="B to wait")

    table = g.cli("gqueue", "--start", check=True).stdout.splitlines()
    assert table[0].split() == ["JOBID", "NAME", "USER", "ST", "START_TIME", "NODES", "SCHEDNODES"]
    by = {int(r["JOBID"]): r for r in rows(g, "--start")}
    assert a not in by                       # running: not waiting
    assert set(by) == {b, c, d, h}
    assert abs(epoch(by[b]["START_TIME"]) - (ra["start_time"] + 600)) <= 2
    assert by[b]["SCHEDNODES"] == "0" and by[b]["ST"] == "PD" and by[b]["NODES"] == "1"
    # C starts after B's limit; D waits behind C, which has none: unknown
    assert abs(epoch(by[c]["START_TIME"]) - (ra["start_time"] + 900)) <= 2
    assert by[d]["START_TIME"] == "N/A" and by[d]["SCHEDNODES"] == "-"
    assert by[h]["START_TIME"] == "N/A" and by[h]["ST"] == "H"
    # earliest first, the unknown last
    order = [int(r["JOBID"]) for r in rows(g, "--start")]
    assert order[:2] == [b, c] and set(order[2:]) == {d, h}

    # the filters of gqueue apply
    assert [int(r["JOBID"]) for r in rows(g, "--start", "-j", f"{a},{b}")] == [b]
    assert [int(r["JOBID"]) for r in rows(g, "--start", "-N", "third")] == [c]
    assert [int(r["JOBID"]) for r in rows(g, "--start", "-s", "H")] == [h]
    assert rows(g, "--start", "-u", "nobody") == []
    assert [int(r["JOBID"]) for r in rows(g, "--start", "-n", "1")] == [b]

    # -o json: the job objects with the estimate
    js = json.loads(g.cli("gqueue", "--start", "-o", "json", check=True).stdout)
    jb = {j["id"]: j for j in js}
    assert abs(jb[b]["expected_start"] - (ra["start_time"] + 600)) <= 2
    assert jb[b]["expected_gpus"] == [0]
    assert jb[d]["expected_start"] is None and jb[d]["expected_start_note"]

    # the fields by themselves, with any listing (a running job: its start)
    by = {int(r["JOBID"]): r for r in rows(g, "-f", "JOBID,START_TIME,SCHEDNODES")}
    assert abs(epoch(by[a]["START_TIME"]) - ra["start_time"]) <= 1 and by[a]["SCHEDNODES"] == "-"
    assert by[b]["SCHEDNODES"] == "0"
    assert [int(r["JOBID"]) for r in rows(g, "-r", "expected", "-s", "PD")] == [b, c, d]
    # -f with --start: the chosen columns
    out = g.cli("gqueue", "--start", "-f", "JOBID,SCHEDNODES", check=True).stdout.splitlines()
    assert out[0].split() == ["JOBID", "SCHEDNODES"] and out[1].split() == [str(b), "0"]


def test_start_refuses_what_makes_no_sense(gflow):
    g = gflow
    g.start()
    for args, word in ((["-t"], "-t"), (["-a"], "-a"), (["-c"], "-c"), (["-T"], "-T"),
                       (["--cluster", "x"], "--cluster"), (["-s", "R"], "-s Running"),
                       (["-s", "PD,CD"], "-s Finished")):
        r = g.cli("gqueue", "--start", *args)
        assert r.returncode != 0 and r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "--start" in lines[0] and word in lines[0], r.stderr
    r = g.cli("gqueue", "-f", "JOBID,START_TIMEX")
    assert r.returncode != 0 and "START_TIMEX" in r.stderr and "SCHEDNODES" in r.stderr
    # nothing waits: the header only
    assert g.cli("gqueue", "--start", check=True).stdout.split() == [
        "JOBID", "NAME", "USER", "ST", "START_TIME", "NODES", "SCHEDNODES"]
