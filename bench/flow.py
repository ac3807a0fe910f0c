"""flow.py — the cases of issue 31 that measure jobs flowing through the
daemon rather than one request: short-job throughput (idle and under load,
against `tsp -S <nproc>`, Slurm's `sbatch --array` and the `xargs -P` floor)
and the GPU hand-off (the last process of one GPU job gone → the next GPU
job's first instruction, with a trace of where the time goes). Python 3
standard library only."""
import os
import subprocess
import threading
import time

from benchlib import CpuSpan, Daemon, Slurm, Tsp, log, median, shell_loop, step_breakdown

NPROC = len(os.sched_getaffinity(0))


def ended_ids(d, lo, hi, poll=0.02, timeout=600):
    """Until none of the jobs lo..hi is Queued, Held or Running (one small
    listing per poll: ids only)."""
    deadline = time.perf_counter() + timeout
    q = f"/jobs?users=all&ids={lo}-{hi}&active=1&fields=id"
    while True:
        st, body = d.api("GET", q)
        if st != 200:
            raise RuntimeError(f"GET {q}: {st} {body}")
        if not body["jobs"]:
            return
        if time.perf_counter() > deadline:
            raise RuntimeError(f"jobs {lo}-{hi} did not end")
        time.sleep(poll)


def submitted(out):
    ids = [int(ln.split()[3]) for ln in out.decode().splitlines() if ln.startswith("Submitted batch job ")]
    if not ids:
        raise RuntimeError(f"nothing submitted: {out[-300:]!r}")
    return ids


def per_job(cpu, span, n):
    """cpu (a list, or None): the machine's CPU a job over span, appended
    as (ms of all CPUs' busy time per job, idle fraction)."""
    if cpu is not None:
        busy, idle = span.stop()
        cpu.append((busy * 1000 / n, idle))


def gflow_array(b, n, load=False, uncounted=False, cpu=None):
    """jobs/s of `gbatch --array 1-n true` until all ended. load: 100 jobs
    (`sleep`) run meanwhile and a client lists the queue every 100 ms.
    uncounted: CPUs not counted ([daemon] cpus = 0; as under load, where
    100 sleeping jobs would otherwise hold every CPU). cpu: see per_job."""
    d = Daemon(b)
    stop = threading.Event()
    lister = None
    try:
        if load or uncounted:
            d.env["GFLOW_DAEMON__CPUS"] = "0"
        d.start()
        d.jobs_as_tsp()
        if load:
            r = d.run_cli(["gbatch", "--array", "1-100", "sleep", "600"], stdout=subprocess.PIPE)[1]
            base = max(submitted(r.stdout))
            deadline = time.perf_counter() + 120
            while True:
                st, body = d.api("GET", "/jobs?users=all&states=Running&fields=id")
                if len(body["jobs"]) == 100:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError("the 100 background jobs did not all start")
                time.sleep(0.05)

            def listing():
                while not stop.wait(0.1):
                    d.run_cli(["gqueue", "-a"])
            lister = threading.Thread(target=listing, daemon=True)
            lister.start()
        else:
            base = 0
        span = CpuSpan()
        t0 = time.perf_counter()
        r = d.run_cli(["gbatch", "--array", f"1-{n}", "true"], stdout=subprocess.PIPE)[1]
        ids = submitted(r.stdout)
        if len(ids) != n or min(ids) != base + 1:
            raise RuntimeError(f"the array is jobs {min(ids)}-{max(ids)}, expected {base + 1}-{base + n}")
        ended_ids(d, base + 1, base + n)
        dt = time.perf_counter() - t0
        per_job(cpu, span, n)
        st, body = d.api("GET", f"/jobs?users=all&ids={base + 1}-{base + n}&states=Finished&fields=id")
        if len(body["jobs"]) != n:
            raise RuntimeError(f"{len(body['jobs'])} of {n} jobs Finished")
        return n / dt
    finally:
        stop.set()
        if lister:
            lister.join(timeout=10)
        d.close()


def gflow_separate(b, n, cpu=None):
    """jobs/s of n sequential `gbatch true` until all ended."""
    d = Daemon(b)
    try:
        d.start()
        d.jobs_as_tsp()
        span = CpuSpan()
        t0 = time.perf_counter()
        shell_loop(n, [str(b.build / "gbatch"), "true"], d.env, d.dir)
        ended_ids(d, 1, n)
        dt = time.perf_counter() - t0
        per_job(cpu, span, n)
        return n / dt
    finally:
        d.close()


def tsp_rate(b, n, cpu=None):
    """jobs/s of n sequential `tsp true` with nproc slots until all ended."""
    q = Tsp(b)
    q.env["TS_SLOTS"] = str(NPROC)
    try:
        q.run(["-l"])		# its server starts outside the timing
        span = CpuSpan()
        t0 = time.perf_counter()
        shell_loop(n, ["tsp", "true"], q.env, q.dir)
        q.wait_idle()
        dt = time.perf_counter() - t0
        per_job(cpu, span, n)
        return n / dt
    finally:
        q.close()


def xargs_floor(n, cpu=None):
    span = CpuSpan()
    t0 = time.perf_counter()
    subprocess.run(f"seq {n} | xargs -P {NPROC} -n 1 sh -c true", shell=True, check=True,
                   stdout=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    per_job(cpu, span, n)
    return n / dt


def slurm_array(b, n):
    """jobs/s of `sbatch --array=1-n --wrap true` until none is left."""
    s = Slurm(b)
    try:
        t0 = time.perf_counter()
        s.run(["sbatch", f"--array=1-{n}", "-J", s.name, "-o", "/dev/null", "--wrap", "true"])
        deadline = time.perf_counter() + 900
        while True:
            r = subprocess.run(["squeue", "-h", "-n", s.name, "-o", "%i"], capture_output=True, text=True,
                               timeout=60)
            if r.returncode == 0 and not r.stdout.strip():
                break
            if time.perf_counter() > deadline:
                raise RuntimeError("the Slurm array did not end")
            time.sleep(0.05)
        return n / (time.perf_counter() - t0)
    finally:
        s.close()


def case_throughput(b):
    n = b.n(2000, 200)
    arr, sep, free, loaded, tsp, floor, slurm = [], [], [], [], [], [], []
    cpu = {"array": [], "separate": [], "floor": [], "tsp": []}
    # the tools take turns, run by run, so that a change in the machine's
    # load weighs on each alike
    for _ in range(b.runs):
        arr.append(gflow_array(b, n, cpu=cpu["array"]))
        sep.append(gflow_separate(b, n, cpu=cpu["separate"]))
        free.append(gflow_array(b, n, uncounted=True))
        loaded.append(gflow_array(b, n, load=True))
        floor.append(xargs_floor(n, cpu=cpu["floor"]))
        if b.tsp_ok():
            tsp.append(tsp_rate(b, n, cpu=cpu["tsp"]))
    # Slurm starts an array's tasks a few per scheduling cycle: an eighth of
    # the jobs, one run (its rate, jobs/s, compares all the same)
    ns = max(n // 8, 50)
    if b.slurm_ok():
        slurm.append(slurm_array(b, ns))
    b.row("throughput", f"`gbatch --array 1-{n} true` until all ended", "jobs/s", arr, higher=True,
          key="tput-array", note=f"{NPROC} CPUs counted, so {NPROC} run at once")
    b.row("throughput", f"{n} × `gbatch true`, sequential, until all ended", "jobs/s", sep, higher=True,
          key="tput-separate")
    b.row("throughput", "the array, CPUs not counted (as many at once as start)", "jobs/s", free,
          higher=True, key="tput-free")
    b.row("throughput", "the same while 100 `sleep` jobs run and `gqueue -a` lists every 100 ms", "jobs/s",
          loaded, higher=True, key="tput-load")
    b.row("throughput", f"floor: `seq {n} | xargs -P {NPROC} -n 1 sh -c true`", "procs/s", floor, higher=True,
          key="tput-floor")
    b.comp("throughput", f"{n} `true` jobs until all ended", "jobs/s", "gflow", arr, higher=True)
    if tsp:
        b.row("throughput", f"tsp -S {NPROC}: {n} × `tsp true` until all ended", "jobs/s", tsp, higher=True,
              key="tput-tsp")
        b.comp("throughput", None, None, "tsp", tsp)
    cpu_rows(b, cpu)
    if slurm:
        b.row("throughput", f"Slurm: `sbatch --array=1-{ns} --wrap true` until none left", "jobs/s", slurm,
              higher=True, key="tput-slurm", note="an eighth of the jobs, one run: its tasks start a few per "
              "scheduling cycle")
        b.comp("throughput", None, None, "slurm", slurm)


def cpu_rows(b, cpu):
    """What a job costs the machine in each throughput run: all CPUs' busy
    time over the run divided by the jobs (the daemon, runners, clients,
    the jobs themselves and the kernel), and the share of CPU time left
    idle. A rate can exceed NPROC / (CPU a job) only by spending less CPU a
    job, whatever else changes: the note gives that ceiling."""
    what = {"array": "the array", "separate": "separate `gbatch`", "tsp": "`tsp -S` (its clients and jobs)",
            "floor": "the `xargs` floor"}
    for k, label in what.items():
        if not cpu[k]:
            continue
        ms = [c[0] for c in cpu[k]]
        idle = median([c[1] for c in cpu[k]])
        b.row("throughput", f"machine CPU a job: {label}", "ms", ms, key=f"tput-cpu-{k}",
              note=f"{idle * 100:.0f} % of the CPUs idle meanwhile; with none idle at most "
              f"{NPROC * 1000 / median(ms):,.0f} jobs/s")


# ---- GPU hand-off -------------------------------------------------------------

# The hand-off trace's steps in path order: A's end (stamp_a: the last
# process of job A reads the clock, writes its file and exits), then B's
# start (bench/README.md, "handoff").
HANDOFF_STEPS = ["stamp_a", "job_exit", "job_gone", "result_told", "result_written", "runner_exit", "end_commit",
                 "pass", "running_commit", "fork", "synced", "runner_start", "exec", "job_start"]
A_STEPS = {"job_exit", "job_gone", "result_told", "result_written", "runner_exit", "end_commit"}
# The way of a runner without the daemon's socket: its result file, then the
# daemon sees it exit. A runner that told its result exits after the end's
# commit, off the path.
FILE_WAY = {"result_written", "runner_exit"}


def handoff_steps(text, a, b_id):
    """{step: CLOCK_MONOTONIC ns} of one hand-off from the trace lines of A
    (id a) and B (id b_id): stamp_a (A's stamp), A's end steps, and B's
    start steps from stamp_a on (B's submission wrote some of them before)."""
    lines = []
    for line in text.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0].isdigit() and w[2].isdigit():
            lines.append((int(w[0]), w[1], int(w[2])))
    t0 = next((ns for ns, step, jid in lines if jid == a and step == "job_start"), None)
    if t0 is None:
        return {}
    t = {"stamp_a": t0}
    for ns, step, jid in lines:
        if (jid == a and step in A_STEPS) or (jid == b_id and step not in A_STEPS and ns >= t0):
            t.setdefault(step, ns)
    if "result_told" in t:
        for step in FILE_WAY:
            t.pop(step, None)
    return t


def handoff_breakdown(per):
    """From [{step: ns}]: the steps in the order they happen, as
    trace_breakdown in bench.py, from stamp_a (a pass that records an end
    starts the next job inside the end's transaction, before its commit)."""
    told = any("result_told" in t for t in per)
    known = [s for s in HANDOFF_STEPS if s not in (FILE_WAY if told else {"result_told"})]
    return step_breakdown(per, "stamp_a", known)


def read_mono(path, timeout=60):
    deadline = time.perf_counter() + timeout
    while True:
        try:
            return float(path.read_text().split()[1])
        except (OSError, ValueError, IndexError):
            pass
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the job did not write {path}")
        time.sleep(0.0005)


def handoff_run(b, njobs, trace=None):
    """One daemon with one fake GPU: njobs hand-offs (after 2 warm-ups), in
    seconds; with trace, each one's steps."""
    fake = b.build / "tests" / "fake-nvml"
    stamp = b.stamp()
    d = Daemon(b)
    scen = d.dir / "nvml-scenario"
    scen.write_text('gpu 0 name="Fake H100" total_mb=81920\n')
    d.env.update(LD_LIBRARY_PATH=str(fake), FAKE_NVML_SCENARIO=str(scen))
    if trace:
        d.env["GFLOW_TRACE"] = str(trace)
    out, steps = [], []
    try:
        d.start()
        for i in range(-2, njobs):
            fa, fb = d.dir / f"a-{i}", d.dir / f"b-{i}"
            at = trace.stat().st_size if trace and trace.exists() else 0
            # A: a short sleep, then stamp is its last process (clock read,
            # file written, exit); B waits for the one GPU meanwhile
            ra = d.run_cli(["gbatch", "--gpus", "1", "sh", "-c", f"sleep 0.2; exec {stamp} {fa}"],
                           stdout=subprocess.PIPE)[1]
            rb = d.run_cli(["gbatch", "--gpus", "1", str(stamp), str(fb)], stdout=subprocess.PIPE)[1]
            a, bid = submitted(ra.stdout)[0], submitted(rb.stdout)[0]
            v = read_mono(fb) - read_mono(fa)
            d.wait_ended(bid)
            if v < 0:
                raise RuntimeError(f"job {bid} started before job {a} ended: the GPU was given twice")
            if i >= 0:
                out.append(v)
                if trace:
                    with open(trace, "rb") as tf:
                        tf.seek(at)
                        steps.append(handoff_steps(tf.read().decode(errors="replace"), a, bid))
    finally:
        d.close()
    return out, steps


def case_handoff(b):
    if not (b.build / "tests" / "fake-nvml" / "libnvidia-ml.so.1").exists():
        b.rows.append({"case": "handoff", "label": "GPU hand-off", "samples": None,
                       "note": f"no fake NVML in {b.build}/tests/fake-nvml"})
        return
    n = b.n(40, 10)
    runs = [handoff_run(b, n)[0] for _ in range(b.runs)]
    pooled = [x for r in runs for x in r]
    b.row("handoff", "GPU hand-off, fake NVML, process executor: median", "s", [median(r) for r in runs],
          key="handoff-median", note=f"{len(runs)} runs × {n}; all samples: p99 {pooled_p99(pooled) * 1e3:.2f} ms")
    b.row("handoff", "GPU hand-off: p99", "s", [pooled_p99(r) for r in runs], key="handoff-p99")
    trace = b.work / "handoff-trace.log"
    b.handoff_trace = handoff_breakdown(handoff_run(b, b.n(30, 10), trace=trace)[1])
    log(f"handoff: trace of {b.handoff_trace['jobs']} hand-offs; steps missing: "
        f"{', '.join(b.handoff_trace['missing']) or 'none'}")


def pooled_p99(v):
    """Nearest-rank 99th percentile."""
    s = sorted(v)
    return s[max(0, -(-99 * len(s) // 100) - 1)]
