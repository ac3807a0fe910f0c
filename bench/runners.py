"""N (1,000) running `sleep` jobs under a personal daemon (process
executor), as the e2e tests start one: the memory (RSS, PSS) and CPU of their
runners, the daemon's, how much MemAvailable falls, and submit → start of
one more job (bench/stamp.c, median of 15) with them running against the
same with none (issue 31's "per running job" row).

    GFLOW_BUILD_DIR=build python3 bench/runners.py 1000
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests/e2e"))
os.environ.setdefault("GFLOW_BUILD_DIR", str(ROOT / "build"))
import conftest
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
tmp = Path(tempfile.mkdtemp(prefix="gflow-runners-"))
g = conftest.Gflow(tmp)
stamp = tmp / "stamp"
subprocess.run(["cc", "-O2", "-o", str(stamp), str(ROOT / "bench/stamp.c")], check=True)


def start_latency(n=15):
    """Median seconds from submitting a `stamp` job to its first act."""
    out = []
    for i in range(n):
        f = tmp / f"stamp-{i}-{time.time()}"
        t0 = time.time()
        jid = g.submit(str(stamp), str(f))
        while not f.exists() or not f.read_text().strip():
            time.sleep(0.001)
        out.append(float(f.read_text().split()[0]) - t0)
        g.wait_state(jid, "Finished")
    return statistics.median(out)


try:
    g.start()
    idle_start = start_latency()
    def avail():
        for ln in open("/proc/meminfo"):
            if ln.startswith("MemAvailable:"): return int(ln.split()[1])
    a0 = avail()
    t0 = time.time()
    r = g.cli("gbatch", "--array", f"1-{N}", "--", "sleep", "120", check=True)
    t1 = time.time()
    def running():
        st, b = g.api("GET", "/jobs?states=Running&fields=id")
        return len(b["jobs"]) if st == 200 else 0
    while running() < N and time.time() - t0 < 50:
        time.sleep(0.5)
    t2 = time.time()
    print(f"submitted {N} in {t1-t0:.2f}s; {running()} running after {t2-t0:.1f}s")
    def runners():
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit(): continue
            try:
                cmd = open(f"/proc/{d}/cmdline","rb").read().split(b"\0")[0]
                env = open(f"/proc/{d}/environ","rb").read()
            except OSError: continue
            if cmd.endswith(b"gflow-runner") and f"GFLOW_E2E_TAG={g.tag}".encode() in env:
                out.append(int(d))
        return out
    def cpu(pid):
        f = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
        return int(f[11]) + int(f[12])
    def mem(pid):
        rss = pss = 0
        for ln in open(f"/proc/{pid}/smaps_rollup"):
            if ln.startswith("Rss:"): rss = int(ln.split()[1])
            if ln.startswith("Pss:"): pss = int(ln.split()[1])
        return rss, pss
    time.sleep(2)
    pids = runners()
    c0 = {p: cpu(p) for p in pids}
    dpid = g.proc.pid; d0 = cpu(dpid)
    w0 = time.time(); time.sleep(20); w1 = time.time()
    c1 = {}
    for p in pids:
        try: c1[p] = cpu(p)
        except OSError: pass
    d1 = cpu(dpid)
    ms = [mem(p) for p in pids if p in c1]
    hz = os.sysconf("SC_CLK_TCK")
    tot_cpu = sum(c1[p] - c0[p] for p in c1) / hz
    print(f"runners: {len(pids)}; RSS sum {sum(m[0] for m in ms)/1024:.1f} MiB (mean {sum(m[0] for m in ms)/len(ms):.0f} KiB), "
          f"PSS sum {sum(m[1] for m in ms)/1024:.1f} MiB (mean {sum(m[1] for m in ms)/len(ms):.0f} KiB)")
    print(f"runners' CPU over {w1-w0:.1f}s: {tot_cpu:.2f} s in all ({100*tot_cpu/(w1-w0):.2f}% of one CPU)")
    print(f"daemon CPU over the same: {(d1-d0)/hz:.2f} s; daemon RSS/PSS {mem(dpid)} KiB")
    print(f"MemAvailable fell by {(a0-avail())/1024:.0f} MiB with {N} jobs running (runners, jobs, kernel)")
    busy_start = start_latency()
    print(f"submit -> start of one more job: {busy_start * 1e3:.2f} ms with {N} running, "
          f"{idle_start * 1e3:.2f} ms with none: {busy_start / idle_start:.2f}x")
    r = g.cli("gqueue", "-s", "Running", "-f", "JOBID")
    print("gqueue answered:", r.returncode, len(r.stdout.splitlines()) - 1, "running rows")
finally:
    g.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
