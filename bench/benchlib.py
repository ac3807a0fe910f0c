"""benchlib.py — what every case of bench/bench.py shares: small helpers
(medians, /proc readings, tagged-process cleanup), one gflowd in a throwaway
home (Daemon), a task-spooler queue of our own (Tsp), the local Slurm (Slurm)
and the run's state and results (Bench). Python 3 standard library only."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2"]

# ---- small helpers ---------------------------------------------------------

def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def p95(v):
    """Nearest-rank 95th percentile."""
    s = sorted(v)
    return s[max(0, -(-95 * len(s) // 100) - 1)]


def step_breakdown(per, first, known):
    """From [{step: CLOCK_MONOTONIC ns}] (one dict per traced run): the
    steps in the order they happen (their median time after `first`; the
    order of `known` breaks ties, unknown steps last), each with the median
    time since the step before it and since `first`, and how many runs have
    it. Runs without `first` are left out. Returns {"steps": [(step,
    since_prev_s, since_first_s, samples)], "missing": [known steps never
    seen], "jobs": runs counted}."""
    rel = [{k: (v - t[first]) / 1e9 for k, v in t.items()} for t in per if first in t]
    seen = sorted({k for p in rel for k in p})
    order = sorted(seen, key=lambda k: (median([p[k] for p in rel if k in p]),
                                        known.index(k) if k in known else len(known)))
    steps, prev = [], None
    for k in order:
        have = [p for p in rel if k in p]
        since = [p[k] - p[prev] for p in have if prev in p] if prev else [0.0]
        steps.append((k, median(since) if since else None, median([p[k] for p in have]), len(have)))
        prev = k
    return {"steps": steps, "missing": [k for k in known if k not in seen], "jobs": len(rel)}


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


def machine_cpu():
    """(busy, idle) seconds of all CPUs since boot (/proc/stat's first
    line; iowait counts as idle: a CPU that waits on the disk runs nothing)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = v[3] + v[4]
    return (sum(v) - idle) / hz, idle / hz


class CpuSpan:
    """The machine's CPU over a stretch of a run, from when it is made:
    stop() returns (busy seconds, idle fraction)."""

    def __init__(self):
        self.t0 = machine_cpu()

    def stop(self):
        b1, i1 = machine_cpu()
        busy, idle = b1 - self.t0[0], i1 - self.t0[1]
        return busy, idle / (busy + idle) if busy + idle > 0 else 0.0


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

    def jobs_as_tsp(self):
        """From here on, clients, and so the jobs they submit (a job runs
        in its submitter's environment), have task-spooler's PATH and no
        LD_LIBRARY_PATH: only the daemon needed no-nvml. A `true` job then
        costs what it costs under tsp, without a search of the build
        directory for `true` and of no-nvml for its libraries."""
        self.env = dict(self.env, PATH=JOB_PATH)
        self.env.pop("LD_LIBRARY_PATH", None)

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
            self.b.discard(self.dir)


# ---- task-spooler ------------------------------------------------------------

JOB_PATH = "/usr/local/bin:/usr/bin:/bin"	# tsp's jobs' PATH (and gflow's, after jobs_as_tsp)

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
            "PATH": JOB_PATH, "HOME": str(self.dir), "LANG": "C.UTF-8",
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
        self.b.discard(self.dir)


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
        # scancel only asks: slurmctld ends the jobs after it returns, and
        # with a thousand of them it would still be busy in the next case
        # (measured against gflow's); wait until none of ours is left
        subprocess.run(["scancel", "--name", self.name], capture_output=True, timeout=60)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                r = subprocess.run(["squeue", "-h", "-n", self.name, "-o", "%i"], capture_output=True,
                                   text=True, timeout=60)
            except (OSError, subprocess.SubprocessError):
                break
            if r.returncode != 0 or not r.stdout.strip():
                break
            time.sleep(0.5)
        time.sleep(2)       # and let it write what it keeps of them
        self.b.discard(self.dir)


SLURM_DIR = Path(os.environ.get("GFLOW_SLURM_DIR", "/tmp/gflow-bench-slurm"))


def slurm_up():
    """--slurm-up: starts bench/slurm-up.sh's Slurm unless it already runs;
    True when this run started it (and so stops it at the end)."""
    up = REPO / "bench/slurm-up.sh"
    if subprocess.run([str(up), "status"], capture_output=True).returncode == 0:
        return False
    r = subprocess.run([str(up), "start"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        log("bench/slurm-up.sh failed; going on without Slurm:\n" + r.stderr[-2000:])
        return False
    return True


# ---- the benchmark run -------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.build = Path(args.build).resolve()
        self.runs = args.runs
        self.quick = args.quick
        self.tags = []
        self.rows = []		# dicts, see row()
        self.keyed = {}		# key -> row, see row()
        self.trace = None	# the start-latency breakdown, see case_latency
        self.trace_jobs = []	# each traced submission's trace lines
        self.handoff_trace = None	# the GPU hand-off breakdown, see flow.case_handoff
        self.cases = list(args.case or [])	# the cases run (main sets it)
        self.compare = {}	# key -> {"label", "unit", "gflow", "tsp", "slurm", "higher"}
        self.discarded = []	# case directories, removed at close (discard)
        self.work = Path(tempfile.mkdtemp(prefix="gflow-bench-"))
        self.tsp_state = self.detect_tsp(args.no_tsp)
        self.slurm_started = False
        if args.slurm_up and not args.no_slurm:
            self.slurm_started = slurm_up()
        self.slurm_state = self.detect_slurm(args.no_slurm)
        self.helpers = {}
        self.load_start = loadavg()
        self.cpuid_start = self.cpuid_us()

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
        if "SLURM_CONF" not in os.environ and (SLURM_DIR / "slurm.conf").exists():
            os.environ["SLURM_CONF"] = str(SLURM_DIR / "slurm.conf")	# bench/slurm-up.sh's
        if not sh_out(["sinfo", "-h", "-o", "%P"]):
            return ("installed, but no controller answers (sinfo failed; start one with "
                    "bench/slurm-up.sh or --slurm-up)")
        v = sh_out(["sbatch", "--version"]) or "slurm"
        conf = os.environ.get("SLURM_CONF", "the system's slurm.conf")
        return f"ok: {v}, {sh_out(['sinfo', '-h', '-N', '-o', '%c CPUs, %m MB, %t'])} ({conf})"

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

    def cpuid_us(self):
        """What one CPUID instruction takes here (bench/cpuid.c), as text:
        glibc's start-up runs 68 of them, each a trap in a VM."""
        if "cpuid" not in self.helpers:
            self.cc("cpuid", ["bench/cpuid.c"])
        v = sh_out([str(self.work / "cpuid")])
        return f"{v} µs" if v and v != "none" else "no CPUID"

    def stamp(self):
        if "stamp" not in self.helpers:
            self.cc("stamp", ["bench/stamp.c"])
        return self.work / "stamp"

    # -- results
    def row(self, case, label, unit, samples, note="", higher=False, target=None, key=None):
        """One result: median and min-max of samples. target: (op, value)
        where op is '<=' or '>='; checked against the median. key: a name
        the issue's targets and the scaling table find the row by."""
        r = {"case": case, "label": label, "unit": unit, "samples": list(samples), "note": note,
             "higher": higher, "target": target}
        self.rows.append(r)
        if key:
            self.keyed[key] = r
        m = median(samples)
        log(f"{case}: {label}: {fmt(m, unit)} (min {fmt(min(samples), unit)}, "
            f"max {fmt(max(samples), unit)}, n={len(samples)}) {note}")
        return r

    def comp(self, key, label, unit, who, samples, higher=False):
        c = self.compare.setdefault(key, {"label": label, "unit": unit, "higher": higher})
        c[who] = median(samples)

    def n(self, full, quick):
        return quick if self.quick else full

    def discard(self, path):
        """A case's directory, removed with the rest at the end of the run:
        removed at once, it would weigh on the next case, whichever tool
        that is (on ext4 without a journal every new inode scans those
        freed in the last minutes: 2,000 jobs' files freed halve the next
        case's throughput, gflow's and tsp's alike)."""
        self.discarded.append(path)

    def close(self):
        for t in self.tags:
            kill_tagged(t)
        self.cpuid_end = self.cpuid_us()	# while its helper is still there
        for path in self.discarded:
            shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)
        self.slurm_down()

    def slurm_down(self):
        """Stop the Slurm this run started (a no-op otherwise): its
        controller goes on working on the jobs it was given (saving state,
        purging them after MinJobAge) and must not do so during the cases
        that do not use it."""
        if self.slurm_started:
            subprocess.run([str(REPO / "bench/slurm-up.sh"), "stop"], capture_output=True, timeout=120)
            self.slurm_started = False


def fmt(v, unit):
    if v is None:
        return "—"
    if unit in ("s", "ms", "µs"):
        for u, k in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
            if unit == u:
                secs = v * k
        # (the thresholds sit where 3 digits round up to the next unit:
        # 999.7 ms is "1.00 s", not "1e+03 ms")
        if secs >= 0.9995:
            return f"{secs:.2f} s"
        if secs >= 0.9995e-3:
            return f"{secs * 1e3:.3g} ms"
        return f"{secs * 1e6:.3g} µs"
    if unit == "MiB":
        return f"{v:.1f} MiB"
    if abs(v) >= 100:
        return f"{v:,.0f} {unit}"
    return f"{v:.3g} {unit}"


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

def wait_stamp(path, timeout=60):
    deadline = time.perf_counter() + timeout
    while True:
        try:
            return float(path.read_text().split()[0])	# REALTIME [MONOTONIC]
        except (OSError, ValueError, IndexError):
            pass
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the job did not write {path}")
        time.sleep(0.0005)


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"

