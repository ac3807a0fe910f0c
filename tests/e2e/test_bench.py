"""The benchmark's own logic (bench/): the start-latency breakdown read from
trace lines, the targets' verdicts, the scaling plot, and one short real run
of bench.py. No timed assertion: the figures are synthetic or only checked to
be there."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import build_dir

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import bench as B          # noqa: E402
import report as R         # noqa: E402


def fake_bench(rows, quick=False, cases=B.CASES, tsp="ok: tsp"):
    """A Bench stand-in holding rows keyed as the cases key them."""
    b = SimpleNamespace(keyed={}, rows=[], quick=quick, cases=list(cases), tsp_state=tsp,
                        slurm_state="not installed", trace=None)
    b.tsp_ok = lambda: tsp.startswith("ok")
    for key, unit, samples in rows:
        r = {"case": "x", "label": key, "unit": unit, "samples": samples, "note": "", "target": None}
        b.rows.append(r)
        b.keyed[key] = r
    return b


def test_trace_breakdown_orders_steps_and_takes_medians():
    jobs = []
    for k in range(3):          # three submissions, the daemon's steps 1 µs apart * k
        base = 1_000_000_000 * (k + 1)
        jobs.append("\n".join([
            f"{base} bench_exec -",
            f"{base + 1000} client_start -",
            f"{base + 3000} accept -",
            f"{base + 2000} client_send -",
            f"{base + 5000 + k} commit 7",
            f"{base + 9000} job_start 7",
            "garbage line",
        ]))
    t = B.trace_breakdown(jobs)
    assert t["jobs"] == 3
    assert [s[0] for s in t["steps"]] == ["bench_exec", "client_start", "client_send", "accept", "commit",
                                          "job_start"]
    steps = {s[0]: s for s in t["steps"]}
    assert steps["client_send"][1] == pytest.approx(1e-6)       # since client_start
    assert steps["commit"][2] == pytest.approx(5.001e-6)        # median over k = 0, 1, 2
    assert steps["job_start"][3] == 3
    assert "pass" in t["missing"] and "accept" not in t["missing"]


def test_handoff_steps_take_a_end_and_b_start_after_it():
    import flow as F
    # B (id 8) was submitted while A (id 7) ran: its submission's "synced"
    # and "fork" of another job come before A's stamp and are not B's start
    text = "\n".join([
        "100 synced 8", "150 fork 9",
        "1000 job_start 7", "1400 job_exit 7", "1410 job_gone 7", "2200 result_written 7",
        "2400 runner_exit 7", "2900 end_commit 7", "3200 pass 8", "3500 running_commit 8",
        "3600 fork 8", "3700 synced 8", "3800 runner_start 8", "4200 exec 8", "4700 job_start 8",
        "4800 job_exit 8", "junk",
    ])
    t = F.handoff_steps(text, 7, 8)
    assert t["stamp_a"] == 1000 and t["synced"] == 3700 and t["job_start"] == 4700
    assert "job_exit" in t and t["job_exit"] == 1400      # A's, not B's
    assert F.handoff_steps("5 pass 8\n", 7, 8) == {}      # no stamp of A: nothing
    br = F.handoff_breakdown([t, dict(t)])
    steps = {s[0]: s for s in br["steps"]}
    assert [s[0] for s in br["steps"]][:3] == ["stamp_a", "job_exit", "job_gone"]
    assert steps["end_commit"][1] == pytest.approx(500e-9) and steps["job_start"][2] == pytest.approx(3700e-9)
    assert br["jobs"] == 2 and br["missing"] == []
    b = fake_bench([])
    b.handoff_trace = br
    assert "| `end_commit` |" in R.handoff_text(b)
    # a standby runner tells its result on its socket and exits after the
    # end's commit: that exit is off the path, and no file step is missing
    told = text.replace("2200 result_written 7", "1420 result_told 7").replace("2400 runner_exit 7",
                                                                                 "3000 runner_exit 7")
    t = F.handoff_steps(told, 7, 8)
    assert t["result_told"] == 1420 and "runner_exit" not in t and "result_written" not in t
    br = F.handoff_breakdown([t])
    assert [s[0] for s in br["steps"]][:5] == ["stamp_a", "job_exit", "job_gone", "result_told", "end_commit"]
    assert br["missing"] == []


def test_trace_missing_steps_are_named_not_a_crash():
    t = B.trace_breakdown(["5 bench_exec -\n9 job_start 1\n"])
    b = fake_bench([])
    b.trace = t
    text = R.trace_text(b)
    assert "Steps missing from the trace: client_start" in text
    assert "| `job_start` |" in text
    b.trace = B.trace_breakdown([])
    assert "No traced submission" in R.trace_text(b)


def test_targets_abs_ratio_and_missing():
    b = fake_bench([
        ("list-10000-a", "s", [0.010, 0.030, 0.015]),        # median 15 ms <= 20 ms: ok
        ("list-100000-a", "s", [0.3]),                        # over
        ("list-1000-a", "s", [0.004]), ("tsp-list-1000", "s", [0.005]),
        ("submit-gbatch", "jobs/s", [500]), ("submit-floor", "jobs/s", [1000]),   # 50 % < 55 %
        ("sched-100000-busy", "µs", [900.0]), ("sched-100000-free", "µs", [2500.0]),  # worst counts
    ])
    got = {text: (fig, ok) for _, text, fig, ok in R.apply_targets(b)}
    assert got["`gqueue -a` with 10,000 jobs ≤ 20 ms"] == ("15 ms", "ok")
    assert got["`gqueue -a` with 100,000 jobs ≤ 200 ms (linear)"][1] == "**over**"
    assert got["with 1,000 jobs faster than `tsp -l` with 1,000"] == ("0.80× (4 ms vs 5 ms)", "ok")
    fig, ok = got["sequential `gbatch` rate ≥ 55 % of the `/bin/true` loop floor in the same run"]
    assert fig.startswith("50 %") and ok == "**over**"
    assert got["a scheduler pass over 100,000 queued jobs ≤ 2 ms (8 GPUs busy and idle)"][1] == "**over**"
    assert got["sequential `gbatch` rate ≥ 1.2× tsp's"] == ("not measured", "")
    assert b.keyed["list-10000-a"]["target"] == ("<=", 0.020)   # the results table shows it too
    b = fake_bench([], cases=["sched"], tsp="not installed")
    got = {text: fig for _, text, fig, _ in R.apply_targets(b)}
    assert got["daemon start with 100,000 jobs ≤ 0.5 s"] == "not measured (case queue not run)"


def test_scaling_table_and_svg():
    rows = []
    for n, t in ((1000, 0.002), (10000, 0.02), (100000, 0.2)):
        rows += [(f"list-{n}-a", "s", [t]), (f"rss-{n}", "MiB", [10.0 + n / 10000])]
    # the 1,000,000 point is the million case's rows; the pass, case sched's
    rows += [("mil-list-a-1m", "s", [0.5]), ("mil-rss-1m", "MiB", [235.0]), ("sched-1000000-busy", "µs", [34000.0])]
    b = fake_bench(rows)
    table = R.scale_text(b)
    assert "| 100,000 | 200 ms | — | 20.0 MiB |" in table
    assert "| 1,000,000 | 500 ms | 34 ms | 235.0 MiB |" in table
    svg = R.scale_svg(b)
    root = ET.fromstring(svg)                    # well-formed XML
    assert root.tag.endswith("svg")
    texts = [e.text for e in root.iter() if e.tag.endswith("text")]
    assert "200 ms" in texts and "100k" in texts and "1M" in texts and "235.0 MiB" in texts
    assert any("(MiB)" in (t or "") for t in texts)
    # issue 31's 1,000,000-job targets are drawn: 0.7 s for gqueue -a, 250 MiB
    squares = [e for e in root.iter() if e.tag.endswith("rect") and e.get("stroke") == "#d1242f"]
    assert len(squares) == 3 + 1 + 2             # list: 10k, 100k, 1M; sched: 100k; RSS: 100k, 1M
    assert R.scale_svg(fake_bench([])) is None


def test_short_real_run_writes_report_and_plot(tmp_path):
    """bench.py end to end on the smallest case pair: a report with every
    section (no figure is judged)."""
    build = build_dir()
    out = tmp_path / "docs" / "benchmarks.md"
    out.parent.mkdir()
    work = Path(tempfile.mkdtemp(prefix="gb", dir="/tmp"))   # short: the daemon's socket path
    env = dict(os.environ, TMPDIR=str(work))
    try:
        r = subprocess.run([sys.executable, str(REPO / "bench/bench.py"), "--build", str(build),
                            "--case", "array", "--case", "sched", "--quick", "--runs", "1",
                            "--no-tsp", "--no-slurm", "--out", str(out)],
                           env=env, capture_output=True, text=True, timeout=300)
        left = list(work.iterdir())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not left, f"the work directory was left behind: {left}"
    md = out.read_text()
    for section in ("## Targets", "## Compared with other schedulers", "## Where the start latency goes",
                    "## Scaling", "## Results"):
        assert section in md
    assert "not measured (case queue not run)" in md
    assert "one `CPUID` instruction (`bench/cpuid.c`) at the start: " in md
    assert "![gflow at 1k to 1M jobs](img/bench-scaling.svg)" in md
    ET.parse(out.parent / "img" / "bench-scaling.svg")


def test_sections_measured_by_hand_are_kept_once_and_appended_ones_not_at_all(tmp_path):
    """A run keeps what follows the hand mark, but not the Load and
    Dashboard sections bench/run.sh appended to the last report: those it
    writes anew (a copy of each piled up per run before)."""
    out = tmp_path / "benchmarks.md"
    hand = R.HAND_MARK + "\n\n## Runners per running job (measured by hand)\n\n1,000 running: 1.5 s\n"
    out.write_text("# gflow benchmarks\n\n## Results\n\nold\n\n" + hand +
                   "\n## Load\n\nold load\n\n## Dashboard\n\nold dashboard\n" * 3)
    kept = R.kept_by_hand(out)
    assert kept == "\n" + hand
    out.write_text("# new report\n" + kept)
    assert R.kept_by_hand(out) == kept              # the same after a second run
    out.write_text("# no hand section\n\n## Load\n\nx\n")
    assert R.kept_by_hand(out) == ""


def test_times_are_written_in_the_unit_their_digits_round_to():
    """999.7 ms rounds to 1.00 s, not to "1e+03 ms" (a Slurm latency row
    wrote that), and 999.8 µs to 1 ms."""
    from benchlib import fmt
    assert fmt(0.9997, "s") == "1.00 s"
    assert fmt(0.9994, "s") == "999 ms"
    assert fmt(0.0009998, "s") == "1 ms"
    assert fmt(2.5e-4, "s") == "250 µs"
    assert all("e+" not in fmt(x, "s") for x in (0.99951, 9.9951e-4, 123.4, 5e-7))


def test_million_fill_writes_a_year_of_ended_jobs_from_one_row(tmp_path):
    """case million's fill (bench/million.py): rows made from the template
    of a real Finished job, ids in order, submit times over the year before
    the last hour, every 20th Failed, every 20th Cancelled before it
    started; and its targets say "case million not run" when it was not."""
    import json
    import sqlite3
    import time

    import million as M
    db = tmp_path / "gflow.db"
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)")
    tmpl = {"name": "true", "state": "Finished", "st": "CD", "reason": None, "command": ["true"],
            "submit_time": 1.5, "start_time": 2.5, "end_time": 3.5, "exit_code": 0, "runner_pid": 9,
            "run_seq": 1, "active": False}
    c.execute("INSERT INTO jobs(data) VALUES (?)", (json.dumps(tmpl),))
    c.commit()
    c.close()
    assert M.fill_history(SimpleNamespace(data=tmp_path), 200) == 1
    rows = [(i, json.loads(d)) for i, d in sqlite3.connect(db).execute("SELECT id, data FROM jobs ORDER BY id")]
    assert [i for i, _ in rows] == list(range(1, 202))
    now = time.time()
    made = [r for _, r in rows[1:]]
    assert [r["state"] for r in made].count("Failed") == 10 and [r["state"] for r in made].count("Cancelled") == 10
    subs = [r["submit_time"] for r in made]
    assert subs == sorted(subs) and now - 366 * 86400 < subs[0] and subs[-1] < now - 3500
    for r in made:
        assert r["command"] == ["true"] and r["active"] is False
        if r["state"] == "Cancelled":
            assert r["start_time"] is None and r["exit_code"] is None and r["reason"] == "CancelledByUser"
        else:
            assert r["submit_time"] <= r["start_time"] <= r["end_time"] <= r["start_time"] + 7200
            assert r["exit_code"] == (1 if r["state"] == "Failed" else 0) and r["st"] in ("CD", "F")
    b = fake_bench([], cases=["queue"])
    got = {text: fig for _, text, fig, _ in R.apply_targets(b)}
    assert got["`gqueue -a` ≤ 0.7 s (issue 31)"] == "not measured (case million not run)"


def test_throughput_jobs_run_in_the_environment_tsp_gives_its_own(tmp_path):
    """The throughput case compares a `true` under gflow with one under tsp:
    after jobs_as_tsp, a job submitted through the bench's client has tsp's
    PATH and no LD_LIBRARY_PATH, while the daemon keeps its no-nvml."""
    import benchlib
    work = Path(tempfile.mkdtemp(prefix="gb", dir="/tmp"))   # short: the daemon's socket path
    b = SimpleNamespace(work=work, tags=[], build=build_dir(), discard=lambda d: shutil.rmtree(d, True))
    d = benchlib.Daemon(b)
    out = tmp_path / "env.txt"
    try:
        d.start()
        d.jobs_as_tsp()
        d.run_cli(["gbatch", "--", "sh", "-c", f'printf "%s|%s" "$PATH" "${{LD_LIBRARY_PATH-unset}}" > {out}.tmp '
                   f'&& mv {out}.tmp {out}'])
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.read_text() == f"{benchlib.JOB_PATH}|unset"
        daemon_env = Path(f"/proc/{d.proc.pid}/environ").read_bytes().split(b"\0")
        assert f"LD_LIBRARY_PATH={d.dir / 'no-nvml'}".encode() in daemon_env
    finally:
        d.close()
        shutil.rmtree(work, ignore_errors=True)
