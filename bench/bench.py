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
                      proc_hwm, proc_status, shell_loop, wait_stamp)
from report import compare_text, markdown, table_text

CASES = ["submit", "latency", "tmux", "queue", "sched", "array", "daemon", "cascade"]

# ---- case 1: sequential submissions ------------------------------------------

def case_submit(b):
    n = b.n(1000, 200)
    nrun = b.n(200, 50)		# jobs that run cost a runner each: fewer
    held, running, floor, cancel, tsp, slurm = [], [], [], [], [], []
    for _ in range(b.runs):
        d = Daemon(b)
        try:
            d.start()
            floor.append(n / shell_loop(n, ["/bin/true"], d.env, d.dir))
            held.append(n / shell_loop(n, [str(b.build / "gbatch"), "--hold", "true"], d.env, d.dir))
            st, body = d.api("GET", "/jobs?users=all")
            if len(body["jobs"]) != n:
                raise RuntimeError(f"{len(body['jobs'])} jobs stored, expected {n}")
            cancel.append(d.run_cli(["gcancel", "1-100"])[0])
            t = shell_loop(nrun, [str(b.build / "gbatch"), "true"], d.env, d.dir)
            running.append(nrun / t)
            d.wait_idle()
        finally:
            d.close()
    ms = 1000 / median(held)
    b.row("submit", f"{n} × `gbatch --hold true`, sequential, durable", "jobs/s", held,
          note=f"{ms:.2f} ms per submission", higher=True, target=(">=", 200))
    b.row("submit", "`gcancel 1-100`: 100 held jobs in one call", "s", cancel,
          note=f"{median(cancel) * 10:.2f} ms per job")
    b.row("submit", f"{nrun} × `gbatch true` (0-GPU jobs that run meanwhile)", "jobs/s", running,
          note=f"{1000 / median(running):.2f} ms per submission", higher=True)
    b.row("submit", f"floor: {n} × `/bin/true` from the same shell loop", "procs/s", floor,
          note=f"{1000 / median(floor):.2f} ms per process", higher=True)
    b.comp("submit", f"{n} sequential submissions", "jobs/s", "gflow", held, higher=True)
    if b.tsp_ok():
        for _ in range(b.runs):
            q = Tsp(b)
            try:
                q.run(["-l"])		# start its server outside the timing
                tsp.append(n / shell_loop(n, ["tsp", "true"], q.env, q.dir))
                q.wait_idle()
            finally:
                q.close()
        b.row("submit", f"tsp: {n} × `tsp true` (in memory, not durable)", "jobs/s", tsp,
              note=f"{1000 / median(tsp):.2f} ms per submission", higher=True)
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

def latency_gflow(b, executor, njobs):
    """Per run: list of latencies (s) and gbatch round trips (s)."""
    stamp = b.stamp()
    lat, rtt = [], []
    for _ in range(b.runs):
        d = Daemon(b, executor)
        run_lat, run_rtt = [], []
        try:
            d.start()
            for i in range(-2, njobs):		# two warm-up jobs, not counted
                f = d.dir / f"stamp-{i}"
                t0 = time.time()
                dt, r = d.run_cli(["gbatch", str(stamp), str(f)], stdout=subprocess.PIPE)
                jid = int(r.stdout.split()[3])
                v = wait_stamp(f)
                d.wait_ended(jid)
                if i >= 0:
                    run_lat.append(v - t0)
                    run_rtt.append(dt)
        finally:
            d.close()
        lat.append(run_lat)
        rtt.append(run_rtt)
    return lat, rtt


def latency_rows(b, label, lat, note=""):
    pooled = [x for r in lat for x in r]
    b.row("latency", f"{label}: median", "s", [median(r) for r in lat],
          note=f"{len(lat)} runs × {len(lat[0])} jobs; all samples: median {fmt(median(pooled), 's')}, "
               f"p95 {fmt(p95(pooled), 's')}" + note)
    b.row("latency", f"{label}: p95", "s", [p95(r) for r in lat])
    return [median(r) for r in lat]


def case_latency(b):
    n = b.n(50, 10)
    lat, rtt = latency_gflow(b, "process", n)
    meds = latency_rows(b, "submit → start, 0-GPU job, process executor", lat)
    b.row("latency", "`gbatch` round trip of those submissions (median)", "s",
          [median(r) for r in rtt], note="from exec to exit of gbatch")
    b.comp("latency", "submit → start latency (median)", "s", "gflow", meds)
    if shutil.which("tmux"):
        lat, _ = latency_gflow(b, "tmux", b.n(20, 5))
        latency_rows(b, "submit → start, 0-GPU job, tmux executor", lat)
    else:
        b.rows.append({"case": "latency", "label": "tmux executor", "samples": None,
                       "note": "tmux not installed"})
    if b.tsp_ok():
        stamp = b.stamp()
        lat = []
        for _ in range(b.runs):
            q = Tsp(b)
            run_lat = []
            try:
                q.run(["-l"])
                for i in range(-2, n):
                    f = q.dir / f"stamp-{i}"
                    t0 = time.time()
                    q.run([str(stamp), str(f)])
                    v = wait_stamp(f)
                    q.wait_idle()
                    if i >= 0:
                        run_lat.append(v - t0)
            finally:
                q.close()
            lat.append(run_lat)
        meds = latency_rows(b, "tsp: submit → start (`tsp stamp FILE`)", lat)
        b.comp("latency", None, None, "tsp", meds)
    if b.slurm_ok():
        stamp = b.stamp()
        s = Slurm(b)
        lat = []
        try:
            for r in range(b.runs):
                run_lat = []
                for i in range(min(n, 10)):
                    # one file per run and job: a stamp left by an earlier
                    # run would be read at once (negative latencies)
                    f = s.dir / f"stamp-{r}-{i}"
                    f.unlink(missing_ok=True)
                    t0 = time.time()
                    s.run(["sbatch", "-J", s.name, "-o", "/dev/null", "--wrap", f"{stamp} {f}"])
                    run_lat.append(wait_stamp(f, timeout=120) - t0)
                lat.append(run_lat)
        finally:
            s.close()
        meds = latency_rows(b, "Slurm: submit → start (`sbatch --wrap`)", lat)
        b.comp("latency", None, None, "slurm", meds)


# ---- case 3: listing --------------------------------------------------------

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


def case_queue(b):
    sizes = [1000, 10000, 100000] if not b.quick else [1000, 10000]
    d = Daemon(b)
    try:
        d.start()
        have = 0
        for n in sizes:
            fill = d.fill(n - have)
            if n >= 10000:
                b.row("queue", f"fill: POST /jobs with {n - have:,} held specs in one request", "s",
                      [fill], note="one sample")
            have = n
            _, r = d.run_cli(["gqueue"], stdout=subprocess.PIPE)
            lines = r.stdout.count(b"\n")
            if lines != n + 1:
                raise RuntimeError(f"gqueue printed {lines} lines for {n} jobs")
            runs = b.runs
            for args in (["gqueue"], ["gqueue", "-a"]):
                res = [d.run_cli_rss(args) for _ in range(runs)]
                t = [x[0] for x in res]
                tgt = ("<=", 0.050) if n == 10000 else None
                b.row("queue", f"`{' '.join(args)}` with {n:,} held jobs", "s", t, target=tgt,
                      note=f"client peak RSS {median([x[1] for x in res]):.0f} MiB")
                if n == 1000 and args[-1] == "-a":
                    b.comp("list", "list 1,000 jobs (`gqueue -a`; tsp: `tsp -l`, finished)", "s",
                           "gflow", t)
                if n == 10000 and args[-1] == "-a":
                    b.comp("list10k", "list 10,000 jobs (`gqueue -a`; tsp: `tsp -l`, finished)", "s",
                           "gflow", t)
            b.row("queue", f"daemon peak RSS (VmHWM) after those listings, {n:,} jobs", "MiB",
                  [proc_hwm(d.proc.pid) / 1024], note="one sample")
            k = 100
            t = [k / shell_loop(k, [str(b.build / "gbatch"), "--hold", "true"], d.env, d.dir)
                 for _ in range(runs)]
            have += k * runs
            b.row("queue", f"{k} × `gbatch --hold true` with {n:,} jobs already stored", "jobs/s", t,
                  higher=True, note=f"{1000 / median(t):.2f} ms per submission")
            if n > 10000:
                continue	# as slow as gqueue itself there; not worth the minutes
            t = []
            for _ in range(runs):
                t0 = time.perf_counter()
                st, body = d.api("GET", "/jobs?users=all")
                t.append(time.perf_counter() - t0)
            b.row("queue", f"daemon side: GET /jobs?users=all with {n:,} jobs (Python client, "
                  f"includes its JSON parse)", "s", t)
    finally:
        d.close()
    if b.tsp_ok():
        q = Tsp(b)
        try:
            q.run(["-l"])
            have = 0
            for n in (1000, 10000) if b.tsp_big and not b.quick else (1000,):
                t0 = time.perf_counter()
                shell_loop(n - have, ["tsp", "true"], q.env, q.dir)
                q.wait_idle()
                fill = time.perf_counter() - t0
                have = n
                t = [q.run(["-l"])[0] for _ in range(b.runs)]
                b.row("queue", f"tsp: `tsp -l` with {n:,} finished jobs", "s", t,
                      note=f"filled by {n:,} × `tsp true` in {fill:.1f} s")
                b.comp("list" if n == 1000 else "list10k", None, None, "tsp", t)
        finally:
            q.close()
    if b.slurm_ok():
        s = Slurm(b)
        try:
            shell_loop(1000, ["sbatch", "--hold", "-J", s.name, "-o", "/dev/null", "--wrap", "true"],
                       os.environ, s.dir)
            t = [s.run(["squeue", "-n", s.name])[0] for _ in range(b.runs)]
        finally:
            s.close()
        b.row("queue", "Slurm: `squeue -n NAME` with 1,000 held jobs", "s", t)
        b.comp("list", None, None, "slurm", t)


# ---- case 4: one scheduler pass ---------------------------------------------

def case_sched(b):
    exe = b.cc("sched_bench", ["bench/sched_bench.c", "src/daemon/sched.c"],
               extra=["-iquote", str(REPO / "src/daemon")])
    for n, passes in ((10000, b.n(200, 20)), (100000, b.n(30, 5))):
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
                  note=f"each sample: median of {passes} passes; {kv['started']} start")


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
    njobs = b.n(100000, 20000)
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
        pid = d.proc.pid
        for _ in range(b.runs):
            c0, u0, t0 = proc_status(pid)[1], proc_cpu_secs(pid), time.perf_counter()
            time.sleep(window)
            c1, u1, t1 = proc_status(pid)[1], proc_cpu_secs(pid), time.perf_counter()
            wake0.append((c1 - c0) / (t1 - t0))
            cpu0.append((u1 - u0) / (t1 - t0) * 100)
        fill = d.fill(njobs)
        d.stop()
        startn, rssn, stopn, wakeN = [], [], [], []
        for i in range(b.runs):
            startn.append(d.start(timeout=300))
            time.sleep(0.5)
            rss, c0 = proc_status(d.proc.pid)
            rssn.append(rss / 1024)
            t0 = time.perf_counter()
            time.sleep(window / 5)	# a short look at the idle daemon holding the jobs
            wakeN.append((proc_status(d.proc.pid)[1] - c0) / (time.perf_counter() - t0))
            stopn.append(d.stop())
    finally:
        d.close()
    b.row("daemon", "start with 0 jobs, until `GET /health` answers", "s", start0)
    b.row("daemon", f"start with {njobs:,} jobs stored, until `GET /health` answers", "s", startn,
          target=("<=", 2.0) if njobs == 100000 else None,
          note=f"store filled with {njobs:,} held jobs in {fill:.1f} s (one POST /jobs)")
    b.row("daemon", f"stop (SIGTERM until exit) with {njobs:,} jobs", "s", stopn)
    b.row("daemon", "RSS, idle, 0 jobs", "MiB", rss0, note="VmRSS, 0.5 s after /health")
    b.row("daemon", f"RSS, idle, {njobs:,} jobs", "MiB", rssn, note="VmRSS, 0.5 s after /health")
    b.row("daemon", "wakeups/s, idle, 0 jobs, no GPUs", "/s", wake0,
          note=f"context switches (voluntary+nonvoluntary, all threads, /proc/PID/task/*/status) "
               f"per second over {window:.0f} s windows; CPU {median(cpu0):.2f}%")
    b.row("daemon", f"wakeups/s, idle, {njobs:,} jobs, no GPUs", "/s", wakeN,
          note=f"one {window / 5:.0f} s window after each start")


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
              total, note="the answer lists every dependent; it comes when the cascade is through")
        b.row("cascade", f"longest `GET /health` while that cascade runs ({n:,})", "s", worst,
              target=("<=", 0.100) if n == 100000 else None,
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
    ap.add_argument("--tsp-10k", action="store_true",
                    help="also list 10,000 tsp jobs (filling tsp takes 40-90 s: off by default)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    for exe in ("gflowd", "gflow", "gbatch", "gqueue", "gflow-runner"):
        if not os.access(Path(args.build) / exe, os.X_OK):
            ap.error(f"{args.build}/{exe} not found: build first (make)")
    cases = args.case or CASES
    b = Bench(args)

    def on_signal(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    rc = 0
    try:
        log(f"work dir {b.work}; tsp: {b.tsp_state}; Slurm: {b.slurm_state}")
        for c in cases:
            log(f"case {c}")
            globals()["case_" + c](b)
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as ex:		# report, clean up, fail
        log(f"FAILED: {ex}")
        rc = 1
    finally:
        b.close()
    elapsed = time.perf_counter() - t0
    print(table_text(b))
    print()
    print(compare_text(b))
    if args.out and rc == 0:
        Path(args.out).write_text(markdown(b, started, elapsed, cases))
        log(f"wrote {args.out}")
    log(f"done in {elapsed:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
