#!/usr/bin/python3
"""bench.py — gflow's benchmarks (see bench/README.md for what each case
measures and how). Drives the real binaries of a build directory against
daemons in throwaway HOME/XDG trees, each on its own socket and TCP port,
with the process executor and no GPUs; compares with task-spooler (tsp) and
Slurm when they are installed; prints a table and, with --out, writes it as
Markdown. Everything it starts is stopped and everything it writes outside
--out is removed when it ends, also on failure or Ctrl-C.

    bench/bench.py --build build                 # every case, print
    bench/bench.py --build build --out docs/benchmarks.md
    bench/bench.py --build build --case submit   # one case (repeatable)

Python 3 standard library only.
"""
import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchlib import (REPO, Bench, Daemon, Slurm, Tsp, fmt, log, median, p95, proc_cpu_secs,
                      proc_hwm, proc_status, shell_loop, step_breakdown, wait_stamp)
from flow import case_handoff, case_throughput  # noqa: F401 (called by name)
from million import case_million  # noqa: F401 (called by name)
from report import (compare_text, handoff_text, kept_by_hand, markdown, scale_svg, scale_text, table_text,
                    targets_text, trace_text)

CASES = ["submit", "latency", "tmux", "queue", "sched", "array", "daemon", "cascade", "throughput", "handoff",
         "million"]
# The cases that compare with Slurm: a Slurm the run started is stopped after
# the last of them.
SLURM_CASES = {"submit", "latency", "queue", "throughput"}

# ---- case 1: sequential submissions ------------------------------------------

def submit_gflow_run(b, n, nrun):
    """One run of the submit case on a fresh daemon: the /bin/true floor,
    n held submissions, one gcancel of 100, nrun submissions that run."""
    d = Daemon(b)
    try:
        d.start()
        floor = n / shell_loop(n, ["/bin/true"], d.env, d.dir)
        held = n / shell_loop(n, [str(b.build / "gbatch"), "--hold", "true"], d.env, d.dir)
        st, body = d.api("GET", "/jobs?users=all")
        if len(body["jobs"]) != n:
            raise RuntimeError(f"{len(body['jobs'])} jobs stored, expected {n}")
        cancel = d.run_cli(["gcancel", "1-100"])[0]
        running = nrun / shell_loop(nrun, [str(b.build / "gbatch"), "true"], d.env, d.dir)
        d.wait_idle()
    finally:
        d.close()
    return floor, held, cancel, running


def submit_tsp_run(b, n):
    q = Tsp(b)
    try:
        q.run(["-l"])		# start its server outside the timing
        rate = n / shell_loop(n, ["tsp", "true"], q.env, q.dir)
        q.wait_idle()
    finally:
        q.close()
    return rate


def case_submit(b):
    n = b.n(1000, 200)
    nrun = b.n(200, 50)		# jobs that run cost a runner each: fewer
    held, running, floor, cancel, tsp, slurm = [], [], [], [], [], []
    # gflow's and tsp's runs take turns, so that a change in the machine's
    # load during the case weighs on both alike
    for _ in range(b.runs):
        f, h, c, r = submit_gflow_run(b, n, nrun)
        floor.append(f)
        held.append(h)
        cancel.append(c)
        running.append(r)
        if b.tsp_ok():
            tsp.append(submit_tsp_run(b, n))
    ms = 1000 / median(held)
    b.row("submit", f"{n} × `gbatch --hold true`, sequential, durable", "jobs/s", held,
          note=f"{ms:.2f} ms per submission", higher=True, key="submit-gbatch")
    b.row("submit", "`gcancel 1-100`: 100 held jobs in one call", "s", cancel,
          note=f"{median(cancel) * 10:.2f} ms per job")
    b.row("submit", f"{nrun} × `gbatch true` (0-GPU jobs that run meanwhile)", "jobs/s", running,
          note=f"{1000 / median(running):.2f} ms per submission", higher=True)
    b.row("submit", f"floor: {n} × `/bin/true` from the same shell loop", "procs/s", floor,
          note=f"{1000 / median(floor):.2f} ms per process", higher=True, key="submit-floor")
    b.comp("submit", f"{n} sequential submissions", "jobs/s", "gflow", held, higher=True)
    if b.tsp_ok():
        b.row("submit", f"tsp: {n} × `tsp true` (in memory, not durable)", "jobs/s", tsp,
              note=f"{1000 / median(tsp):.2f} ms per submission", higher=True, key="submit-tsp")
        b.comp("submit", None, None, "tsp", tsp)
    if b.slurm_ok():
        s = Slurm(b)
        try:
            for _ in range(b.runs):
                slurm.append(n / shell_loop(n, ["sbatch", "--hold", "-J", s.name, "-o", "/dev/null",
                                                "--wrap", "true"], os.environ, s.dir))
                s.run(["scancel", "--name", s.name])
        finally:
            s.close()
        b.row("submit", f"Slurm: {n} × `sbatch --hold --wrap true`", "jobs/s", slurm, higher=True)
        b.comp("submit", None, None, "slurm", slurm)


# ---- case 2: submit -> start latency ---------------------------------------

def latency_gflow(b, executor, njobs, trace=None):
    """One run on a fresh daemon: the latencies (s) and gbatch round trips
    (s) of njobs submissions. trace: a path; the daemon, its clients and
    the job append the start-latency trace there (GFLOW_TRACE), and the
    lines of each counted submission are collected in b.trace_jobs."""
    stamp = b.stamp()
    d = Daemon(b, executor)
    if trace:
        d.env["GFLOW_TRACE"] = str(trace)
    run_lat, run_rtt = [], []
    try:
        d.start()
        for i in range(-2, njobs):		# two warm-up jobs, not counted
            f = d.dir / f"stamp-{i}"
            at = trace.stat().st_size if trace and trace.exists() else 0
            mono0 = time.monotonic_ns()	# CLOCK_MONOTONIC, as the trace's
            t0 = time.time()
            argv = ["gbatch", str(stamp), str(f), *([str(trace)] if trace else [])]
            dt, r = d.run_cli(argv, stdout=subprocess.PIPE)
            jid = int(r.stdout.split()[3])
            v = wait_stamp(f)
            d.wait_ended(jid)
            if i >= 0:
                run_lat.append(v - t0)
                run_rtt.append(dt)
                if trace:
                    with open(trace, "rb") as tf:
                        tf.seek(at)
                        b.trace_jobs.append(f"{mono0} bench_exec -\n" +
                                            tf.read().decode(errors="replace"))
    finally:
        d.close()
    return run_lat, run_rtt


def latency_tsp(b, njobs):
    """One run of tsp: the latencies (s) of njobs `tsp stamp FILE`."""
    stamp = b.stamp()
    q = Tsp(b)
    run_lat = []
    try:
        q.run(["-l"])
        for i in range(-2, njobs):
            f = q.dir / f"stamp-{i}"
            t0 = time.time()
            q.run([str(stamp), str(f)])
            v = wait_stamp(f)
            q.wait_idle()
            if i >= 0:
                run_lat.append(v - t0)
    finally:
        q.close()
    return run_lat


def latency_rows(b, label, lat, note="", key=None):
    pooled = [x for r in lat for x in r]
    b.row("latency", f"{label}: median", "s", [median(r) for r in lat], key=key,
          note=f"{len(lat)} runs × {len(lat[0])} jobs; all samples: median {fmt(median(pooled), 's')}, "
               f"p95 {fmt(p95(pooled), 's')}" + note)
    b.row("latency", f"{label}: p95", "s", [p95(r) for r in lat])
    return [median(r) for r in lat]


# The start-latency trace's steps in path order (bench/README.md, "latency"):
# bench_exec is the driver's, just before it starts gbatch; job_start is
# stamp's; the others are written by gbatch, gflowd and gflow-runner.
TRACE_STEPS = ["bench_exec", "client_start", "client_send", "accept", "commit", "reply", "pass", "fork", "synced",
               "runner_start", "exec", "job_start", "client_exit"]


def trace_breakdown(jobs):
    """From each submission's trace lines ("<ns> <step> <id|->"): the steps
    in the order they happen (median time after bench_exec), and per step
    the median time since the step before it and since bench_exec. Returns
    {"steps": [(step, since_prev_s, since_start_s, samples)], "missing": [...],
    "jobs": n}."""
    per = []
    for text in jobs:
        t = {}
        for line in text.splitlines():
            w = line.split()
            if len(w) >= 2 and w[0].isdigit() and w[1] not in t:
                t[w[1]] = int(w[0])
        per.append(t)
    return step_breakdown(per, "bench_exec", TRACE_STEPS)


def case_latency(b):
    n = b.n(50, 10)
    tmux = shutil.which("tmux")
    lat, rtt, lat_tmux, lat_tsp = [], [], [], []
    # the process executor, tmux and tsp take turns, run by run, so that a
    # change in the machine's load during the case weighs on each alike
    for _ in range(b.runs):
        run_lat, run_rtt = latency_gflow(b, "process", n)
        lat.append(run_lat)
        rtt.append(run_rtt)
        if tmux:
            lat_tmux.append(latency_gflow(b, "tmux", b.n(20, 5))[0])
        if b.tsp_ok():
            lat_tsp.append(latency_tsp(b, n))
    meds = latency_rows(b, "submit → start, 0-GPU job, process executor", lat, key="lat-process")
    b.row("latency", "`gbatch` round trip of those submissions (median)", "s",
          [median(r) for r in rtt], note="from exec to exit of gbatch")
    b.comp("latency", "submit → start latency (median)", "s", "gflow", meds)
    if tmux:
        latency_rows(b, "submit → start, 0-GPU job, tmux executor", lat_tmux, key="lat-tmux")
    else:
        b.rows.append({"case": "latency", "label": "tmux executor", "samples": None,
                       "note": "tmux not installed"})
    # where the milliseconds go: one more daemon with GFLOW_TRACE set
    trace = b.work / "trace.log"
    b.trace_jobs = []
    latency_gflow(b, "process", b.n(30, 10), trace=trace)
    b.trace = trace_breakdown(b.trace_jobs)
    log(f"latency: trace of {b.trace['jobs']} submissions; steps missing: "
        f"{', '.join(b.trace['missing']) or 'none'}")
    if b.tsp_ok():
        meds = latency_rows(b, "tsp: submit → start (`tsp stamp FILE`)", lat_tsp, key="lat-tsp")
        b.comp("latency", None, None, "tsp", meds)
    if b.slurm_ok():
        stamp = b.stamp()
        s = Slurm(b)
        lat = []
        try:
            for r in range(b.runs):
                run_lat = []
                for i in range(b.n(10, 3)):
                    # one file per run and job: a stamp left by an earlier
                    # run would be read at once (negative latencies)
                    f = s.dir / f"stamp-{r}-{i}"
                    f.unlink(missing_ok=True)
                    t0 = time.time()
                    s.run(["sbatch", "-J", s.name, "-o", "/dev/null", "--wrap", f"{stamp} {f}"])
                    v = wait_stamp(f, timeout=120) - t0
                    if v < 0:
                        raise RuntimeError(f"Slurm latency {v:.3f} s < 0: {f} was there before the job")
                    run_lat.append(v)
                lat.append(run_lat)
        finally:
            s.close()
        meds = latency_rows(b, "Slurm: submit → start (`sbatch --wrap`)", lat)
        b.comp("latency", None, None, "slurm", meds)


# ---- case 3: tmux and the store at 1k, 10k and 100k jobs -----------------------

def case_tmux(b):
    """Back-to-back short jobs under the tmux executor: none may fail (issue 9
    fault 3: the tmux server's exit raced the next job's start)."""
    if not shutil.which("tmux"):
        b.rows.append({"case": "tmux", "label": "short jobs under tmux", "samples": None,
                       "note": "tmux not installed"})
        return
    n = b.n(1000, 100)
    failed, rates = [], []
    for _ in range(max(1, b.runs // 5)):
        d = Daemon(b, "tmux")
        try:
            d.start()
            t0 = time.perf_counter()
            shell_loop(n, [str(b.build / "gbatch"), "--", "sh", "-c", "sleep 0.05"], d.env, d.dir)
            d.wait_idle(timeout=900)
            rates.append(n / (time.perf_counter() - t0))
            st, body = d.api("GET", "/jobs?users=all")
            failed.append(sum(1 for j in body["jobs"] if j["state"] != "Finished"))
        finally:
            d.close()
    b.row("tmux", f"{n} back-to-back `gbatch -- sh -c 'sleep 0.05'`, tmux executor: jobs not Finished",
          "jobs", failed, target=("<=", 0))
    b.row("tmux", "the same: jobs run per second (submit to all ended)", "jobs/s", rates, higher=True)


def reset_hwm(pid):
    """Resets the peak RSS (VmHWM) of pid to its current RSS (Linux 4.0+);
    False where the kernel refuses (the peak is then since the start)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def idle_look(d, secs):
    """Context switches per second and CPU % of the idle daemon over secs."""
    pid = d.proc.pid
    c0, u0, t0 = proc_status(pid)[1], proc_cpu_secs(pid), time.perf_counter()
    time.sleep(secs)
    c1, u1, t1 = proc_status(pid)[1], proc_cpu_secs(pid), time.perf_counter()
    return (c1 - c0) / (t1 - t0), (u1 - u0) / (t1 - t0) * 100


# Submissions per run of the queue case's gbatch rows: at ~1 ms each, 100
# were a tenth of a second, too short a sample to weigh one store size
# against another on a shared machine.
QUEUE_SUBS = 300


def gbatch_rate(b, d, k=QUEUE_SUBS, empty=False):
    """Jobs/s of k sequential `gbatch --hold true`, per run. empty: each
    run is followed by one on an empty store (a fresh daemon, ten untimed
    submissions first), and both lists are returned: the empty-store rate
    the target weighs against is taken in the same minutes."""
    argv = [str(b.build / "gbatch"), "--hold", "true"]
    rates, empties = [], []
    for _ in range(b.runs):
        rates.append(k / shell_loop(k, argv, d.env, d.dir))
        if empty:
            e = Daemon(b)
            try:
                e.start()
                shell_loop(10, argv, e.env, e.dir)
                empties.append(k / shell_loop(k, argv, e.env, e.dir))
            finally:
                e.close()
    return (rates, empties) if empty else rates


def job_latency(b, d, njobs):
    """Submit → start of njobs 0-GPU jobs (after one warm-up job)."""
    stamp = b.stamp()
    lat = []
    for i in range(-1, njobs):
        f = d.dir / f"stamp-q-{time.monotonic_ns()}"
        t0 = time.time()
        _, r = d.run_cli(["gbatch", str(stamp), str(f)], stdout=subprocess.PIPE)
        v = wait_stamp(f)
        d.wait_ended(int(r.stdout.split()[3]))
        if i >= 0:
            lat.append(v - t0)
    return lat


def case_queue(b):
    sizes = [1000, 10000, 100000] if not b.quick else [1000, 10000]
    top = sizes[-1]
    window = b.n(2.0, 1.0)
    d = Daemon(b)
    try:
        d.start()
        have = 0
        for n in sizes:
            fill = d.fill(n - have)
            b.row("queue", f"fill: POST /jobs with {n - have:,} held specs in one request", "s",
                  [fill], note="one sample")
            have = n
            # a daemon started with n jobs stored: start time, idle RSS
            start, rss, wake, cpu, stop = [], [], [], [], []
            for _ in range(b.runs):
                stop.append(d.stop())
                start.append(d.start(timeout=300))
                time.sleep(0.5)
                rss.append(proc_status(d.proc.pid)[0] / 1024)
                if n == top:
                    w, c = idle_look(d, window)
                    wake.append(w)
                    cpu.append(c)
            b.row("queue", f"daemon start with {n:,} jobs stored, until `GET /health` answers", "s",
                  start, key=f"start-{n}")
            b.row("queue", f"daemon RSS, idle, {n:,} jobs", "MiB", rss, key=f"rss-{n}",
                  note="VmRSS, 0.5 s after /health")
            if n == top:
                b.row("queue", f"daemon stop (SIGTERM until exit) with {n:,} jobs", "s", stop[1:] or stop)
                b.row("queue", f"daemon wakeups/s, idle, {n:,} jobs stored", "/s", wake,
                      note=f"{window:.0f} s after each start; context switches of all threads")
                b.row("queue", f"daemon CPU, idle, {n:,} jobs stored (passes only when something "
                      "changed)", "%", cpu, key=f"cpu-{n}",
                      note=f"CPU time over the same {window:.0f} s windows")
            _, r = d.run_cli(["gqueue", "-a"], stdout=subprocess.PIPE)
            lines = r.stdout.count(b"\n")
            if lines != n + 1:
                raise RuntimeError(f"gqueue -a printed {lines} lines for {n} jobs")
            for args in (["gqueue"], ["gqueue", "-a"]):
                res, peak, reset = [], [], True
                for _ in range(b.runs):
                    reset = reset_hwm(d.proc.pid) and reset
                    res.append(d.run_cli_rss(args))
                    peak.append(proc_hwm(d.proc.pid) / 1024)
                t = [x[0] for x in res]
                b.row("queue", f"`{' '.join(args)}` with {n:,} held jobs", "s", t,
                      key=f"list-{n}" + ("-a" if args[-1] == "-a" else ""),
                      note=f"client peak RSS {median([x[1] for x in res]):.0f} MiB")
                if args[-1] == "-a":
                    b.row("queue", f"daemon peak RSS during `gqueue -a`, {n:,} jobs", "MiB", peak,
                          key=f"rsspeak-{n}",
                          note="VmHWM, reset (clear_refs 5) before each listing" if reset else
                          "VmHWM since the start (this kernel refused clear_refs 5)")
                    if n in (1000, 10000):
                        b.comp(f"list{n}", f"list {n:,} jobs (`gqueue -a`; tsp: `tsp -l`, finished; "
                               "Slurm: `squeue -n NAME`, held)", "s", "gflow", t)
            if n == top:
                t, t0 = gbatch_rate(b, d, empty=True)
                b.row("queue", f"{QUEUE_SUBS} × `gbatch --hold true`, empty store", "jobs/s", t0,
                      higher=True, key="sub-0",
                      note=f"{1000 / median(t0):.2f} ms per submission; each run right after one with "
                           f"{n:,} stored, on a fresh daemon")
            else:
                t = gbatch_rate(b, d)
            have += QUEUE_SUBS * b.runs
            b.row("queue", f"{QUEUE_SUBS} × `gbatch --hold true` with {n:,} jobs already stored", "jobs/s", t,
                  higher=True, note=f"{1000 / median(t):.2f} ms per submission", key=f"sub-{n}")
            if n == 10000:
                b.comp("sub10k", f"sequential submissions with 10,000 jobs stored ({QUEUE_SUBS} × gbatch; "
                       "100 × tsp, sbatch)", "jobs/s",
                       "gflow", t, higher=True)
            lat = job_latency(b, d, b.runs)
            have += b.runs + 1
            b.row("queue", f"submit → start of a 0-GPU job with {n:,} held jobs stored", "s", lat,
                  key=f"lat-{n}", note="one job per sample, the daemon otherwise idle")
            if n > 10000:
                continue	# as slow as gqueue itself there; not worth the minutes
            t = []
            for _ in range(b.runs):
                t0 = time.perf_counter()
                st, body = d.api("GET", "/jobs?users=all")
                t.append(time.perf_counter() - t0)
            b.row("queue", f"daemon side: GET /jobs?users=all with {n:,} jobs (Python client, "
                  f"includes its JSON parse)", "s", t)
    finally:
        d.close()
    queue_tsp(b)
    queue_slurm(b)


def others_sizes(b):
    """How many jobs tsp and Slurm are filled with: 1,000 and 10,000 (filling
    either one job at a time takes a minute or more for 10,000: not in quick)."""
    return (1000,) if b.quick else (1000, 10000)


def queue_tsp(b):
    if not b.tsp_ok():
        return
    q = Tsp(b)
    try:
        q.run(["-l"])
        have = 0
        for n in others_sizes(b):
            t0 = time.perf_counter()
            shell_loop(n - have, ["tsp", "true"], q.env, q.dir)
            q.wait_idle()
            fill = time.perf_counter() - t0
            have = n
            t = [q.run(["-l"])[0] for _ in range(b.runs)]
            b.row("queue", f"tsp: `tsp -l` with {n:,} finished jobs", "s", t, key=f"tsp-list-{n}",
                  note=f"filled by {n:,} × `tsp true` in {fill:.1f} s")
            b.comp(f"list{n}", None, None, "tsp", t)
            if n == 10000:
                t = [100 / shell_loop(100, ["tsp", "true"], q.env, q.dir) for _ in range(b.runs)]
                b.row("queue", "tsp: 100 × `tsp true` with 10,000 finished jobs stored", "jobs/s", t,
                      higher=True)
                b.comp("sub10k", None, None, "tsp", t)
                q.wait_idle()
                have += 100 * b.runs
    finally:
        q.close()


def queue_slurm(b):
    if not b.slurm_ok():
        return
    s = Slurm(b)
    sb = ["sbatch", "--hold", "-J", s.name, "-o", "/dev/null", "--wrap", "true"]
    try:
        have = 0
        for n in others_sizes(b):
            fill = shell_loop(n - have, sb, os.environ, s.dir)
            have = n
            t = [s.run(["squeue", "-n", s.name])[0] for _ in range(b.runs)]
            b.row("queue", f"Slurm: `squeue -n NAME` with {n:,} held jobs", "s", t,
                  note=f"filled by {n:,} × `sbatch --hold` in {fill:.1f} s")
            b.comp(f"list{n}", None, None, "slurm", t)
            if n == 10000:
                t = [100 / shell_loop(100, sb, os.environ, s.dir) for _ in range(b.runs)]
                have += 100 * b.runs
                b.row("queue", "Slurm: 100 × `sbatch --hold` with 10,000 held jobs stored", "jobs/s", t,
                      higher=True)
                b.comp("sub10k", None, None, "slurm", t)
    finally:
        s.close()


# ---- case 4: one scheduler pass ---------------------------------------------

def case_sched(b):
    exe = b.cc("sched_bench", ["bench/sched_bench.c", "src/daemon/core/sched.c", "src/daemon/core/preempt.c", "src/daemon/core/estimate.c"],
               extra=["-iquote", str(REPO / "src/daemon/core")])
    sizes = ((1000, b.n(1000, 100)), (10000, b.n(200, 20)), (100000, b.n(30, 5)))
    if not b.quick:
        sizes += ((1000000, 5),)	# the scaling plot's last point
    for n, passes in sizes:
        for scen, what in (("busy", "8 GPUs all busy"), ("free", "8 GPUs idle")):
            samples = []
            out = ""
            for _ in range(b.runs):
                out = subprocess.run([str(exe), str(n), str(passes), scen], capture_output=True,
                                     text=True, check=True, timeout=300).stdout
                kv = dict(w.split("=", 1) for w in out.split())
                samples.append(float(kv["median_us"]))
            kv = dict(w.split("=", 1) for w in out.split())
            b.row("sched", f"`sched_pass()`, {n:,} queued jobs, {what}", "µs", samples,
                  key=f"sched-{n}-{scen}", note=f"each sample: median of {passes} passes; "
                                               f"{kv['started']} start")
    # the expected starts (estimate.c: sched_pass() driven forward) beside it
    for n, passes in ((1000, b.n(20, 5)), (10000, b.n(10, 3))):
        for scen, what in (("busy", "8 GPUs all busy"), ("free", "8 GPUs idle")):
            samples = []
            out = ""
            for _ in range(b.runs):
                out = subprocess.run([str(exe), str(n), str(passes), scen, "estimate"], capture_output=True,
                                     text=True, check=True, timeout=300).stdout
                kv = dict(w.split("=", 1) for w in out.split())
                samples.append(float(kv["median_us"]))
            b.row("sched", f"`sched_estimate()`, {n:,} queued jobs, {what}", "µs", samples,
                  key=f"estimate-{n}-{scen}", note=f"each sample: median of {passes} estimates; "
                                                  f"{kv['started']} jobs placed (the rest: beyond the year it looks at, or N/A)")
    # every job with an end: default_runtime_estimate = 1 h
    samples = []
    for _ in range(b.runs):
        out = subprocess.run([str(exe), "10000", str(b.n(10, 3)), "busy", "estimate", "3600"], capture_output=True,
                             text=True, check=True, timeout=300).stdout
        kv = dict(w.split("=", 1) for w in out.split())
        samples.append(float(kv["median_us"]))
    b.row("sched", "`sched_estimate()`, 10,000 queued jobs, 8 GPUs all busy, default_runtime_estimate 1 h", "µs",
          samples, key="estimate-10000-busy-dr", note=f"each sample: median of {b.n(10, 3)} estimates; "
                                                      f"{kv['started']} jobs placed (the rest: beyond a year)")


# ---- case 5: a big array ------------------------------------------------------

def case_array(b):
    n = b.n(10000, 2000)
    t = []
    for _ in range(b.runs):
        d = Daemon(b)
        try:
            d.start()
            dt, r = d.run_cli(["gbatch", "--array", f"1-{n}", "--hold", "true"], stdout=subprocess.PIPE)
            got = r.stdout.count(b"Submitted batch job ")
            if got != n:
                raise RuntimeError(f"--array 1-{n} reported {got} jobs")
            t.append(dt)
        finally:
            d.close()
    b.row("array", f"`gbatch --array 1-{n} --hold true` until it returns", "s", t)


# ---- case 6: the daemon itself -----------------------------------------------

def case_daemon(b):
    """The daemon with an empty store (with jobs stored: case queue)."""
    window = b.n(10.0, 2.0)
    d = Daemon(b)
    try:
        start0, rss0, wake0, cpu0 = [], [], [], []
        for i in range(b.runs):
            start0.append(d.start())
            time.sleep(0.5)
            rss0.append(proc_status(d.proc.pid)[0] / 1024)
            if i < b.runs - 1:
                d.stop()
        # idle wakeups of the 0-job daemon, in consecutive windows
        time.sleep(1.0)
        for _ in range(b.runs):
            w, c = idle_look(d, window)
            wake0.append(w)
            cpu0.append(c)
    finally:
        d.close()
    b.row("daemon", "start with 0 jobs, until `GET /health` answers", "s", start0)
    b.row("daemon", "RSS, idle, 0 jobs", "MiB", rss0, note="VmRSS, 0.5 s after /health")
    b.row("daemon", "wakeups/s, idle, 0 jobs, no GPUs", "/s", wake0,
          note=f"context switches (voluntary+nonvoluntary, all threads, /proc/PID/task/*/status) "
               f"per second over {window:.0f} s windows; CPU {median(cpu0):.2f}%")


# ---- case 7: a cancel cascade -------------------------------------------------

def cascade_once(b, n, batch=20000):
    """One daemon: a held root and n queued jobs depending on it (POST /jobs
    batches), then POST /jobs/cancel of the root while a thread keeps asking
    GET /health. Returns (seconds until the cancel was answered, /health
    latencies during it in seconds)."""
    d = Daemon(b)
    try:
        d.start()
        st, body = d.api("POST", "/jobs", {"jobs": [{"command": ["true"], "hold": True}], "cwd": "/tmp",
                                           "env": ["PATH=/usr/bin:/bin"]})
        root = body["jobs"][0]["id"]
        left = n
        while left > 0:
            k = min(left, batch)
            st, body = d.api("POST", "/jobs", {"jobs": [{"command": ["true"], "depends_on": [root]}] * k,
                                               "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]}, timeout=600)
            if st != 201:
                raise RuntimeError(f"POST /jobs of {k} dependents: {st} {str(body)[:200]}")
            left -= k
        time.sleep(1.0)		# let the passes after the submissions settle
        stop = threading.Event()
        lat = []

        def probe():
            while not stop.is_set():
                t0 = time.perf_counter()
                d.api("GET", "/health", timeout=60)
                lat.append(time.perf_counter() - t0)

        th = threading.Thread(target=probe)
        th.start()
        time.sleep(0.2)
        before = len(lat)
        t0 = time.perf_counter()
        st, body = d.api("POST", "/jobs/cancel", {"ids": [root]}, timeout=600)
        dt = time.perf_counter() - t0
        during = lat[before:]
        stop.set()
        th.join()
        if st != 200 or len(body["dependents"]) != n:
            raise RuntimeError(f"cancel of the root: {st}, {len(body.get('dependents', []))} dependents")
        return dt, during
    finally:
        d.close()


def case_cascade(b):
    for n in (b.n(20000, 2000), b.n(100000, 10000)):
        total, worst, mid, count = [], [], [], []
        for _ in range(b.runs):
            dt, during = cascade_once(b, n)
            total.append(dt)
            worst.append(max(during) if during else dt)
            mid.append(median(during) if during else dt)
            count.append(len(during))
        b.row("cascade", f"`POST /jobs/cancel` of a job with {n:,} queued dependents, until answered", "s",
              total, key=f"cascade-{n}",
              note="the answer lists every dependent; it comes when the cascade is through")
        b.row("cascade", f"longest `GET /health` while that cascade runs ({n:,})", "s", worst,
              key=f"health-{n}",
              note=f"the longest loop stall as a client sees it; median answer {fmt(median(mid), 's')}, "
                   f"{median(count):.0f} answers per cascade")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="directory with gflowd, gflow …")
    ap.add_argument("--case", action="append", choices=CASES, help="run only this case (repeatable)")
    ap.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    ap.add_argument("--out", help="write the Markdown report here")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for trying the script")
    ap.add_argument("--no-tsp", action="store_true", help="do not compare with task-spooler")
    ap.add_argument("--no-slurm", action="store_true", help="do not compare with Slurm")
    ap.add_argument("--slurm-up", action="store_true",
                    help="start a local Slurm with bench/slurm-up.sh (as root) for this run and stop it "
                         "at the end, unless one already runs")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    for exe in ("gflowd", "gflow", "gbatch", "gqueue", "gflow-runner"):
        if not os.access(Path(args.build) / exe, os.X_OK):
            ap.error(f"{args.build}/{exe} not found: build first (make)")
    cases = args.case or CASES

    def on_signal(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    rc = 0
    b = None
    try:
        b = Bench(args)
        b.cases = cases
        log(f"work dir {b.work}; tsp: {b.tsp_state}; Slurm: {b.slurm_state}")
        for k, c in enumerate(cases):
            log(f"case {c}")
            globals()["case_" + c](b)
            if not set(cases[k + 1:]) & SLURM_CASES:
                b.slurm_down()	# the rest does without it
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as ex:		# report, clean up, fail
        log(f"FAILED: {ex}")
        rc = 1
    finally:
        if b:
            b.close()
    elapsed = time.perf_counter() - t0
    if not b:
        return rc
    for title, text in (("Results", table_text(b)), ("Targets", targets_text(b)),
                        ("Compared with other schedulers", compare_text(b)),
                        ("Where the start latency goes", trace_text(b)),
                        ("Where the GPU hand-off goes", handoff_text(b)), ("Scaling", scale_text(b))):
        print(f"\n## {title}\n\n{text}")
    if args.out and rc == 0:
        out = Path(args.out)
        svg = scale_svg(b)
        if svg:
            (out.parent / "img").mkdir(exist_ok=True)
            (out.parent / "img" / "bench-scaling.svg").write_text(svg)
            log(f"wrote {out.parent / 'img' / 'bench-scaling.svg'}")
        text = markdown(b, started, elapsed, cases, "img/bench-scaling.svg" if svg else None)
        out.write_text(text + kept_by_hand(out))
        log(f"wrote {args.out}")
    log(f"done in {elapsed:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
