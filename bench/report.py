"""report.py — the report of bench/bench.py: the machine and versions, the
results table, the targets of issue 13, the side-by-side table with tsp and
Slurm, and the Markdown document. Python 3 standard library only."""
import json
import os
import platform
import tempfile

from benchlib import fmt, loadavg, median, sh_out

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

