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
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2"]
CASES = ["submit", "latency", "tmux", "queue", "sched", "array", "daemon", "cascade"]


# ---- small helpers ---------------------------------------------------------

def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def p95(v):
    """Nearest-rank 95th percentile."""
    s = sorted(v)
    return s[max(0, -(-95 * len(s) // 100) - 1)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh_out(args, **kw):
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30, **kw)
        return r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def tagged_pids(tag):
    """Processes whose environment carries this tag."""
    needle = ("GFLOW_BENCH_TAG=" + tag).encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def kill_tagged(tag):
    for _ in range(20):
        pids = tagged_pids(tag)
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def proc_status(pid):
    """VmRSS (KiB) and the context switches of all threads of pid."""
    rss, ctx = 0, 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        ctx += int(line.split()[1])
        except OSError:
            pass
    return rss, ctx


def proc_hwm(pid):
    """Peak RSS (VmHWM, KiB) of pid."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def proc_cpu_secs(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


# ---- one gflowd in a throwaway home ----------------------------------------

class Daemon:
    seq = 0

    def __init__(self, bench, executor="process"):
        Daemon.seq += 1
        self.b = bench
        self.dir = bench.work / f"gflow{Daemon.seq}"
        self.home = self.dir / "home"
        self.runtime = self.dir / "run"
        nogpu = self.dir / "no-nvml"	# LD_LIBRARY_PATH: no libnvidia-ml here
        for d in (self.home, self.runtime, nogpu):
            d.mkdir(mode=0o700, parents=True)
        self.socket = str(self.runtime / "gflow" / "gflowd.sock")
        self.data = self.home / ".local/share/gflow"
        self.tag = uuid.uuid4().hex
        bench.tags.append(self.tag)
        self.executor = executor
        self.proc = None
        self.env = {
            "PATH": f"{bench.build}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "TMUX_TMPDIR": str(self.dir),
            "GFLOW_DAEMON__HOST": "127.0.0.1",
            "GFLOW_DAEMON__PORT": str(free_port()),
            "GFLOW_EXECUTOR__TYPE": executor,
            "LD_LIBRARY_PATH": str(nogpu),
            "GFLOW_BENCH_TAG": self.tag,
        }

    def start(self, timeout=120):
        """Starts `gflowd run`; returns seconds until GET /health answered."""
        out = open(self.dir / "gflowd.out", "ab")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([str(self.b.build / "gflowd"), "run"], env=self.env,
                                     stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
                                     start_new_session=True)
        out.close()
        deadline = t0 + timeout
        while True:
            if self.healthy():
                return time.perf_counter() - t0
            if self.proc.poll() is not None:
                raise RuntimeError(f"gflowd exited with {self.proc.returncode}: {self.daemon_log()}")
            if time.perf_counter() > deadline:
                raise RuntimeError("gflowd did not answer /health: " + self.daemon_log())
            time.sleep(0.002)

    def healthy(self):
        try:
            return self.api("GET", "/health", timeout=5)[0] == 200
        except OSError:
            return False

    def daemon_log(self):
        p = self.dir / "gflowd.out"
        return p.read_text(errors="replace")[-2000:] if p.exists() else ""

    def api(self, method, path, body=None, timeout=60):
        c = UnixHTTPConnection(self.socket, timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
        finally:
            c.close()

    def fill(self, n, chunk=100000):
        """n held 0-GPU jobs through POST /jobs batches; returns seconds."""
        t0 = time.perf_counter()
        while n > 0:
            k = min(n, chunk)
            st, body = self.api("POST", "/jobs", {
                "jobs": [{"command": ["true"], "hold": True}] * k,
                "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]}, timeout=600)
            if st != 201 or len(body["jobs"]) != k:
                raise RuntimeError(f"POST /jobs of {k} jobs: {st} {str(body)[:200]}")
            n -= k
        return time.perf_counter() - t0

    def run_cli(self, args, stdout=subprocess.DEVNULL, timeout=600):
        """Runs a client; returns (seconds, CompletedProcess)."""
        t0 = time.perf_counter()
        r = subprocess.run([str(self.b.build / args[0]), *args[1:]], env=self.env, cwd=self.dir,
                           stdout=stdout, stderr=subprocess.PIPE, timeout=timeout)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"{args} failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
        return dt, r

    def run_cli_rss(self, args, timeout=600):
        """Runs a client with output to /dev/null; returns (seconds, peak RSS in MiB)."""
        t0 = time.perf_counter()
        p = subprocess.Popen([str(self.b.build / args[0]), *args[1:]], env=self.env, cwd=self.dir,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{args} failed ({p.returncode})")
        return dt, ru.ru_maxrss / 1024

    def job(self, jid):
        st, body = self.api("GET", f"/jobs/{jid}")
        if st != 200:
            raise RuntimeError(f"GET /jobs/{jid}: {st} {body}")
        return body["job"]

    def wait_ended(self, jid, timeout=60):
        deadline = time.perf_counter() + timeout
        while self.job(jid)["state"] in ("Queued", "Hold", "Running"):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"job {jid} did not end")
            time.sleep(0.005)

    def wait_idle(self, timeout=300):
        """Until no job is Queued or Running."""
        deadline = time.perf_counter() + timeout
        while True:
            st, body = self.api("GET", "/jobs?users=all&states=Queued,Running")
            if st == 200 and not body["jobs"]:
                return
            if time.perf_counter() > deadline:
                raise RuntimeError("jobs did not end")
            time.sleep(0.05)

    def stop(self):
        """SIGTERM and wait; returns seconds until it exited."""
        if not self.proc or self.proc.poll() is not None:
            return 0.0
        t0 = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.perf_counter() - t0

    def close(self):
        try:
            self.stop()
        finally:
            if self.executor == "tmux":
                subprocess.run(["tmux", "-S", str(self.runtime / "gflow" / "tmux.sock"), "kill-server"],
                               env=self.env, capture_output=True)
            kill_tagged(self.tag)
            shutil.rmtree(self.dir, ignore_errors=True)


# ---- task-spooler ------------------------------------------------------------

class Tsp:
    """One task-spooler queue of our own (its socket and output files in our
    temporary directory); tsp starts its server on first use."""
    seq = 0

    def __init__(self, bench):
        Tsp.seq += 1
        self.b = bench
        self.dir = bench.work / f"tsp{Tsp.seq}"
        self.dir.mkdir(mode=0o700)
        self.tag = uuid.uuid4().hex
        bench.tags.append(self.tag)
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.dir), "LANG": "C.UTF-8",
            "TMPDIR": str(self.dir), "TS_SOCKET": str(self.dir / "socket"),
            "TS_MAXFINISHED": "200000", "TS_SLOTS": "1", "GFLOW_BENCH_TAG": self.tag,
        }

    def run(self, args, stdout=subprocess.DEVNULL):
        t0 = time.perf_counter()
        r = subprocess.run(["tsp", *args], env=self.env, cwd=self.dir, stdout=stdout,
                           stderr=subprocess.PIPE, timeout=600)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"tsp {args} failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
        return dt, r

    def wait_idle(self, timeout=300):
        deadline = time.perf_counter() + timeout
        while True:
            out = self.run(["-l"], stdout=subprocess.PIPE)[1].stdout.decode()
            if not any(w in out for w in (" queued ", " running ", " allocating ")):
                return
            if time.perf_counter() > deadline:
                raise RuntimeError("tsp jobs did not end")
            time.sleep(0.05)

    def close(self):
        subprocess.run(["tsp", "-K"], env=self.env, capture_output=True, timeout=30)
        kill_tagged(self.tag)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- Slurm (only used where it is installed and answers) ---------------------

class Slurm:
    def __init__(self, bench):
        self.b = bench
        self.name = "gflow-bench-" + uuid.uuid4().hex[:12]
        self.dir = bench.work / "slurm"
        self.dir.mkdir(mode=0o700, exist_ok=True)

    def run(self, args, stdout=subprocess.DEVNULL):
        t0 = time.perf_counter()
        r = subprocess.run(args, cwd=self.dir, stdout=stdout, stderr=subprocess.PIPE, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"{args} failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
        return time.perf_counter() - t0, r

    def close(self):
        subprocess.run(["scancel", "--name", self.name], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- the benchmark run -------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.build = Path(args.build).resolve()
        self.runs = args.runs
        self.quick = args.quick
        self.tsp_big = args.tsp_10k
        self.tags = []
        self.rows = []		# dicts, see row()
        self.compare = {}	# key -> {"label", "unit", "gflow", "tsp", "slurm", "higher"}
        self.work = Path(tempfile.mkdtemp(prefix="gflow-bench-"))
        self.tsp_state = self.detect_tsp(args.no_tsp)
        self.slurm_state = self.detect_slurm(args.no_slurm)
        self.helpers = {}
        self.load_start = loadavg()

    # -- tools around us
    @staticmethod
    def detect_tsp(disabled):
        if disabled:
            return "disabled (--no-tsp)"
        if not shutil.which("tsp"):
            return "not installed"
        v = sh_out(["tsp", "-V"]) or "installed"
        return "ok: " + v.splitlines()[0]

    @staticmethod
    def detect_slurm(disabled):
        if disabled:
            return "disabled (--no-slurm)"
        if not (shutil.which("sbatch") and shutil.which("squeue")):
            return "not installed"
        if not sh_out(["sinfo", "-h", "-o", "%P"]):
            return "installed, but no controller answers (sinfo failed)"
        return "ok: " + (sh_out(["sbatch", "--version"]) or "slurm")

    def tsp_ok(self):
        return self.tsp_state.startswith("ok")

    def slurm_ok(self):
        return self.slurm_state.startswith("ok")

    def cc(self, name, sources, extra=()):
        """Builds a benchmark helper into the temporary directory."""
        out = self.work / name
        cc = os.environ.get("CC", "cc")
        cmd = [cc, *CFLAGS, *extra, *[str(REPO / s) for s in sources], "-o", str(out), "-lm"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"building {name}: {' '.join(cmd)}\n{r.stderr}")
        self.helpers[name] = " ".join(cmd).replace(str(REPO) + "/", "").replace(str(self.work), "$TMP")
        return out

    def stamp(self):
        if "stamp" not in self.helpers:
            self.cc("stamp", ["bench/stamp.c"])
        return self.work / "stamp"

    # -- results
    def row(self, case, label, unit, samples, note="", higher=False, target=None):
        """One result: median and min-max of samples. target: (op, value)
        where op is '<=' or '>='; checked against the median."""
        r = {"case": case, "label": label, "unit": unit, "samples": list(samples), "note": note,
             "higher": higher, "target": target}
        self.rows.append(r)
        m = median(samples)
        log(f"{case}: {label}: {fmt(m, unit)} (min {fmt(min(samples), unit)}, "
            f"max {fmt(max(samples), unit)}, n={len(samples)}) {note}")
        return r

    def comp(self, key, label, unit, who, samples, higher=False):
        c = self.compare.setdefault(key, {"label": label, "unit": unit, "higher": higher})
        c[who] = median(samples)

    def n(self, full, quick):
        return quick if self.quick else full

    def close(self):
        for t in self.tags:
            kill_tagged(t)
        shutil.rmtree(self.work, ignore_errors=True)


def fmt(v, unit):
    if v is None:
        return "—"
    if unit in ("s", "ms", "µs"):
        for u, k in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
            if unit == u:
                secs = v * k
        if secs >= 1:
            return f"{secs:.2f} s"
        if secs >= 1e-3:
            return f"{secs * 1e3:.3g} ms"
        return f"{secs * 1e6:.3g} µs"
    if unit == "MiB":
        return f"{v:.1f} MiB"
    if abs(v) >= 100:
        return f"{v:,.0f} {unit}"
    return f"{v:.3g} {unit}"


# ---- case 1: sequential submissions ------------------------------------------

LOOP = 'i=0; while [ "$i" -lt "$N" ]; do "$@" >/dev/null || exit 1; i=$((i+1)); done'


def shell_loop(n, argv, env, cwd):
    """Seconds for /bin/sh to run argv n times in a loop, one process each."""
    e = dict(env, N=str(n))
    t0 = time.perf_counter()
    r = subprocess.run(["/bin/sh", "-c", LOOP, "sh", *argv], env=e, cwd=cwd,
                       stderr=subprocess.PIPE, timeout=900)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"loop of {argv} failed: {r.stderr.decode(errors='replace')[-500:]}")
    return dt


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

def wait_stamp(path, timeout=60):
    deadline = time.perf_counter() + timeout
    while True:
        try:
            return float(path.read_text())
        except (OSError, ValueError):
            pass
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the job did not write {path}")
        time.sleep(0.0005)


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


# ---- report --------------------------------------------------------------------

def machine_info():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) / 1024 / 1024
    fs = sh_out(["df", "--output=fstype", tempfile.gettempdir()]).splitlines()
    return {"CPU": model, "cores": str(os.cpu_count()), "RAM": f"{mem:.1f} GiB",
            "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
            "file system of the temporary directories": fs[-1].strip() if len(fs) > 1 else "unknown"}


def pkg_version(*names):
    for n in names:
        v = sh_out(["dpkg-query", "-W", "-f", "${Version}", n])
        if v:
            return f"{v} ({n})"
    return "unknown"


def versions(b):
    return {
        "gflow": sh_out([str(b.build / "gflow"), "--version"]) or "unknown",
        "gflowd": sh_out([str(b.build / "gflowd"), "--version"]) or "unknown",
        "gcc": (sh_out(["gcc", "--version"]).splitlines() or ["unknown"])[0],
        "sqlite": pkg_version("libsqlite3-0"),
        "libevent": pkg_version("libevent-2.1-7", "libevent-core-2.1-7"),
        "jansson": pkg_version("libjansson4"),
        "python (driver)": platform.python_version(),
        "tsp": b.tsp_state,
        "Slurm": b.slurm_state,
    }


def apt_policy():
    out = sh_out(["apt-cache", "policy", "task-spooler", "slurm-wlm"])
    if not out:
        return "`apt-cache policy` gave nothing (not a Debian system?)."
    pk, res = {}, []
    cur = None
    for line in out.splitlines():
        if not line.startswith(" "):
            cur = line.rstrip(":")
            pk[cur] = {}
        elif cur and ":" in line and line.strip().split(":")[0] in ("Installed", "Candidate"):
            k, v = line.strip().split(":", 1)
            pk[cur][k] = v.strip()
    for name, v in pk.items():
        res.append(f"`{name}` is packaged (candidate {v.get('Candidate', '?')}), installed here: "
                   f"{v.get('Installed', '?')}")
    return "; ".join(res) + "."


def buildtype(b):
    try:
        opts = json.loads((b.build / "meson-info" / "intro-buildoptions.json").read_text())
        return next(o["value"] for o in opts if o["name"] == "buildtype")
    except (OSError, ValueError, StopIteration, KeyError):
        return "unknown"


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def verdict(r):
    if not r.get("target") or not r.get("samples"):
        return ""
    op, v = r["target"]
    m = median(r["samples"])
    ok = m >= v if op == ">=" else m <= v
    return ("ok" if ok else "**over**") + f" ({op} {fmt(v, r['unit'])})"


def table_text(b):
    lines = ["| case | what | median | min – max | n | target | notes |",
             "|---|---|---|---|---|---|---|"]
    for r in b.rows:
        if r.get("samples") is None:
            lines.append(f"| {r['case']} | {r['label']} | {r['note']} | | | | |")
            continue
        s = r["samples"]
        lines.append(f"| {r['case']} | {r['label']} | {fmt(median(s), r['unit'])} | "
                     f"{fmt(min(s), r['unit'])} – {fmt(max(s), r['unit'])} | {len(s)} | "
                     f"{verdict(r)} | {r['note']} |")
    return "\n".join(lines)


def compare_text(b):
    lines = ["| case | gflow | tsp | gflow vs tsp | Slurm | gflow vs Slurm |",
             "|---|---|---|---|---|---|"]

    def ratio(c, who):
        g, o = c.get("gflow"), c.get(who)
        if not g or not o:
            return ""
        x = g / o if c["higher"] else o / g	# > 1: gflow is better
        return f"{x:.2f}× faster" if x >= 1 else f"{1 / x:.2f}× slower"

    for key in ("submit", "latency", "list", "list10k"):
        c = b.compare.get(key)
        if not c or c.get("gflow") is None or (key == "list10k" and not ("tsp" in c or "slurm" in c)):
            continue
        def other(who, state):
            if who in c:
                return fmt(c[who], c["unit"])
            return "not measured" if state.startswith("ok") else state.split(":")[0]

        tsp = other("tsp", b.tsp_state)
        sl = other("slurm", b.slurm_state)
        lines.append(f"| {c['label']} | {fmt(c['gflow'], c['unit'])} | {tsp} | {ratio(c, 'tsp')} | "
                     f"{sl} | {ratio(c, 'slurm')} |")
    return "\n".join(lines)


def markdown(b, started, elapsed, cases):
    m = machine_info()
    v = versions(b)
    out = ["# gflow benchmarks", "",
           "Written by `make bench` (`bench/run.sh build` → `bench/bench.py`); do not edit by hand, "
           "run it again. What each case measures and how: [bench/README.md](../bench/README.md).", "",
           f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')} (the run took {elapsed:.0f} s; "
           f"cases: {', '.join(cases)}; {b.runs} runs each{', QUICK mode' if b.quick else ''})",
           f"- setup: every gflowd in its own throwaway HOME/XDG tree, own Unix socket and TCP port, "
           "`GFLOW_EXECUTOR__TYPE=process` (unless the row says tmux), `LD_LIBRARY_PATH` at an empty "
           f"directory (NVML absent: 0 GPUs); binaries of `{b.build.name}/` (meson buildtype "
           f"`{buildtype(b)}`)",
           f"- load average (1/5/15 min) at the start: {b.load_start}, at the end: {loadavg()} — "
           "other work on the machine during the run shows up as spread between min and max", "",
           "## Machine", ""]
    out += [f"- {k}: {val}" for k, val in m.items()]
    out += ["", "## Versions", ""]
    out += [f"- {k}: {val}" for k, val in v.items()]
    if b.helpers:
        out += [f"- helper `{k}` built with: `{cmd}`" for k, cmd in b.helpers.items()]
    out += ["", "## Results", "",
            "Median of the runs, with the smallest and largest run; `n` is the number of runs "
            "(samples). `target` is the goal from the project brief, checked against the median.", "",
            table_text(b), "",
            "Notes:",
            "- submit: jobs/s = jobs ÷ wall time of a `/bin/sh` loop starting one `gbatch` per job; "
            "the floor row is the same loop starting `/bin/true`.",
            "- latency: the job `stamp FILE` reads CLOCK_REALTIME as its first act; latency = that − "
            "the time just before `gbatch` was started; the daemon is idle at each submission.",
            "- queue: all jobs are held (active), so `gqueue` and `gqueue -a` list the same rows, every "
            "job of the store; output goes to /dev/null. Peak RSS of the client from wait4(), of the "
            "daemon from VmHWM.",
            "- sched: `bench/sched_bench.c` times `sched_pass()` in-process (no daemon, no I/O).",
            "- daemon: wakeups are context switches counted in /proc (perf counts nothing in this VM).",
            "",
            "## Compared with other schedulers", "",
            "Same machine, same run. Ratios are gflow against the other tool "
            "(\"faster\": gflow took less time or did more per second).", "",
            compare_text(b), "",
            f"Debian packages: {apt_policy()} Slurm is not installed by the benchmark (too heavy); "
            "task-spooler is used when `tsp` is on PATH (`apt-get install task-spooler`), never "
            "required. tsp keeps its queue in memory (no fsync), so its submission rate is not "
            "comparable to gflow's durable one; it keeps a waiting client process per queued job, "
            "so listings compare finished tsp jobs with held gflow jobs.", ""]
    return "\n".join(out)


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
