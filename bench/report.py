"""report.py — the report of bench/bench.py: the machine and versions, the
results table, the targets of issue 13, the side-by-side table with tsp and
Slurm, and the Markdown document. Python 3 standard library only."""
import json
import math
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


# ---- the targets of issue 13 ------------------------------------------------------
# (area, the target as the issue states it, check). A check is
#   ("abs", [row keys], op, value): the median of each row (the worst one counts)
#   ("ratio", key_a, key_b, op, value): median of a / median of b, same run
#   ("show", key): no number in the issue; the figure is shown
TARGETS = [
    ("Listing", "`gqueue -a` with 10,000 jobs ≤ 20 ms", ("abs", ["list-10000-a"], "<=", 0.020)),
    ("Listing", "`gqueue -a` with 100,000 jobs ≤ 200 ms (linear)", ("abs", ["list-100000-a"], "<=", 0.200)),
    ("Listing", "with 1,000 jobs faster than `tsp -l` with 1,000",
     ("ratio", "list-1000-a", "tsp-list-1000", "<", 1.0)),
    ("Start latency", "submit → start of a 0-GPU job on an idle daemon, process executor, median no "
     "slower than tsp's in the same run", ("ratio", "lat-process", "lat-tsp", "<=", 1.0)),
    ("Start latency", "tmux executor ≤ 2× the process executor",
     ("ratio", "lat-tmux", "lat-process", "<=", 2.0)),
    ("Submission", "sequential `gbatch` rate ≥ 1.2× tsp's",
     ("ratio", "submit-gbatch", "submit-tsp", ">=", 1.2)),
    ("Submission", "sequential `gbatch` rate ≥ 55 % of the `/bin/true` loop floor in the same run",
     ("ratio", "submit-gbatch", "submit-floor", ">=", 0.55)),
    ("Scale", "with 100,000 held jobs stored, submissions run at ≥ 80 % of the empty-store rate",
     ("ratio", "sub-100000", "sub-0", ">=", 0.80)),
    ("Scale", "a scheduler pass over 100,000 queued jobs ≤ 2 ms (8 GPUs busy and idle)",
     ("abs", ["sched-100000-busy", "sched-100000-free"], "<=", 2000.0)),
    ("Scale", "passes only do work when something changed (shown: CPU of the idle daemon holding "
     "100,000 jobs)", ("show", "cpu-100000")),
    ("Scale", "daemon start with 100,000 jobs ≤ 0.5 s", ("abs", ["start-100000"], "<=", 0.5)),
    ("Scale", "RSS with 100,000 jobs ≤ 40 MiB idle", ("abs", ["rss-100000"], "<=", 40.0)),
    ("Scale", "RSS with 100,000 jobs ≤ 60 MiB at the peak of a full listing",
     ("abs", ["rsspeak-100000"], "<=", 60.0)),
    ("Scale", "a cancel cascade over 100,000 dependents ≤ 1 s", ("abs", ["cascade-100000"], "<=", 1.0)),
    ("Scale", "`/health` keeps answering within 100 ms during that cascade",
     ("abs", ["health-100000"], "<=", 0.100)),
    # issue 31
    ("Throughput", "2,000 `true` jobs as one array until all ended ≥ 1.5× `tsp -S <nproc>` (issue 31)",
     ("ratio", "tput-array", "tput-tsp", ">=", 1.5)),
    ("Throughput", "the same as 2,000 separate `gbatch` ≥ 1.5× `tsp -S <nproc>` (issue 31)",
     ("ratio", "tput-separate", "tput-tsp", ">=", 1.5)),
    ("Throughput", "the array ≥ 10× Slurm's `sbatch --array` (issue 31)",
     ("ratio", "tput-array", "tput-slurm", ">=", 10.0)),
    ("Throughput", "the array ≥ 50 % of the `xargs -P <nproc>` floor (issue 31)",
     ("ratio", "tput-array", "tput-floor", ">=", 0.50)),
    ("Throughput", "while 100 jobs run and a client lists every 100 ms ≥ 80 % of the idle figure (both with CPUs not counted; issue 31)",
     ("ratio", "tput-load", "tput-free", ">=", 0.80)),
    ("GPU hand-off", "last process of job A gone → job B's first instruction, median ≤ 5 ms (issue 31)",
     ("abs", ["handoff-median"], "<=", 0.005)),
    ("GPU hand-off", "the same, p99 ≤ 20 ms (issue 31)", ("abs", ["handoff-p99"], "<=", 0.020)),
    ("1,000,000 jobs", "`gqueue -a` ≤ 0.7 s (issue 31)", ("abs", ["mil-list-a-1m"], "<=", 0.7)),
    ("1,000,000 jobs", "`gqueue -a`: the first row on screen ≤ 50 ms (issue 31)",
     ("abs", ["mil-first-1m"], "<=", 0.050)),
    ("1,000,000 jobs", "`gqueue` (1,000 active) ≤ 10 ms (issue 31)", ("abs", ["mil-list-1m"], "<=", 0.010)),
    ("1,000,000 jobs", "daemon start ≤ 2.5 s (issue 31)", ("abs", ["mil-start-1m"], "<=", 2.5)),
    ("1,000,000 jobs", "RSS ≤ 250 MiB idle (issue 31)", ("abs", ["mil-rss-1m"], "<=", 250.0)),
    ("1,000,000 jobs", "RSS ≤ 250 MiB at the peak of a full listing (issue 31)",
     ("abs", ["mil-rsspeak-1m"], "<=", 250.0)),
    ("1,000,000 jobs", "submissions ≥ 80 % of the empty-store rate (issue 31)",
     ("ratio", "mil-sub-1m", "mil-sub-0-1m", ">=", 0.80)),
    ("1,000,000 jobs", "a scheduler pass with 1,000 waiting ≤ 2 ms (8 GPUs busy and idle; issue 31)",
     ("abs", ["sched-1000-busy", "sched-1000-free"], "<=", 2000.0)),
    ("1,000,000 jobs", "the store file size per job, stated (issue 31)", ("show", "mil-bytes-1m")),
    ("History", "`gstats` over a year of 1,000,000 jobs ≤ 300 ms (issue 31)",
     ("abs", ["mil-gstats-1m"], "<=", 0.300)),
    ("History", "`gqueue -a --since 7d` with 1,000,000 jobs ≤ 30 ms (issue 31)",
     ("abs", ["mil-since-1m"], "<=", 0.030)),
]


# which case writes the rows a target reads (by key prefix)
KEY_CASE = (("tsp-list", "queue"), ("list", "queue"), ("sub-", "queue"), ("start-", "queue"),
            ("rss", "queue"), ("cpu-", "queue"), ("lat-", "latency"), ("submit-", "submit"),
            ("sched-", "sched"), ("cascade-", "cascade"), ("health-", "cascade"), ("tput-", "throughput"),
            ("handoff-", "handoff"), ("mil-", "million"))


def _missing(b, keys):
    """Why the rows of keys are not there, in words."""
    for k in keys:
        if k in b.keyed:
            continue
        case = next((c for p, c in KEY_CASE if k.startswith(p)), None)
        if case and case not in b.cases:
            return f"not measured (case {case} not run)"
        if k.startswith(("tsp-", "submit-tsp", "lat-tsp", "tput-tsp")) and not b.tsp_ok():
            return f"not measured (tsp {b.tsp_state.split(' (')[0]})"
        if k.startswith("lat-tmux"):
            return "not measured (tmux not installed)"
        if b.quick:
            return "not measured (--quick: smaller sizes)"
        return "not measured"
    return ""


def _cmp(op, a, b):
    return {"<=": a <= b, "<": a < b, ">=": a >= b, ">": a > b}[op]


def apply_targets(b):
    """Marks the rows of absolute targets (the results table shows ok/over)
    and returns [(area, text, figure, verdict)] for the targets table."""
    out = []
    for area, text, chk in TARGETS:
        kind = chk[0]
        if kind == "show":
            r = b.keyed.get(chk[1])
            fig = fmt(median(r["samples"]), r["unit"]) if r else _missing(b, [chk[1]])
            out.append((area, text, fig, ""))
            continue
        if kind == "abs":
            _, keys, op, v = chk
            rows = [b.keyed.get(k) for k in keys]
            if not all(rows):
                out.append((area, text, _missing(b, keys), ""))
                continue
            for r in rows:
                r["target"] = (op, v)
            meds = [median(r["samples"]) for r in rows]
            worst = max(meds) if op in ("<=", "<") else min(meds)
            fig = " / ".join(fmt(m, rows[0]["unit"]) for m in meds)
            out.append((area, text, fig, "ok" if _cmp(op, worst, v) else "**over**"))
            continue
        _, ka, kb, op, v = chk
        ra, rb = b.keyed.get(ka), b.keyed.get(kb)
        if not ra or not rb:
            out.append((area, text, _missing(b, [ka, kb]), ""))
            continue
        ma, mb = median(ra["samples"]), median(rb["samples"])
        x = ma / mb if mb else float("inf")
        pct = kb in ("submit-floor", "sub-0", "tput-floor", "tput-free")
        fig = (f"{x * 100:.0f} %" if pct else f"{x:.2f}×") + \
              f" ({fmt(ma, ra['unit'])} vs {fmt(mb, rb['unit'])})"
        out.append((area, text, fig, "ok" if _cmp(op, x, v) else "**over**"))
    return out


def targets_text(b):
    lines = ["| area | target | figure (medians, same run) | verdict |", "|---|---|---|---|"]
    for area, text, fig, ok in apply_targets(b):
        lines.append(f"| {area} | {text} | {fig} | {ok} |")
    return "\n".join(lines)


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

    for key in ("submit", "sub10k", "latency", "list1000", "list10000", "throughput"):
        c = b.compare.get(key)
        if not c or c.get("gflow") is None or (key in ("list10000", "sub10k") and
                                               not ("tsp" in c or "slurm" in c)):
            continue

        def other(who, state):
            if who in c:
                return fmt(c[who], c["unit"])
            return "not measured" if state.startswith("ok") else state.split(":")[0].split(" (")[0]

        tsp = other("tsp", b.tsp_state)
        sl = other("slurm", b.slurm_state)
        lines.append(f"| {c['label']} | {fmt(c['gflow'], c['unit'])} | {tsp} | {ratio(c, 'tsp')} | "
                     f"{sl} | {ratio(c, 'slurm')} |")
    return "\n".join(lines)


def trace_text(b):
    """The start-latency breakdown (case latency with GFLOW_TRACE set)."""
    t = b.trace
    if t is None:
        return "Not measured (the latency case did not run)."
    out = []
    gflow_steps = [s for s in ("client_start", "client_send", "accept", "commit", "reply", "pass", "fork",
                               "synced", "runner_start", "exec", "client_exit") if s in t["missing"]]
    if gflow_steps:
        out += [f"Steps missing from the trace: {', '.join(gflow_steps)} — the gflow programs of this "
                "build do not write them (GFLOW_TRACE), so the table below has only the steps that were "
                "written.", ""]
    if not t["steps"]:
        return "\n".join(out + ["No traced submission was recorded."])
    out += [f"Medians over {t['jobs']} submissions to one idle daemon (process executor), "
            "CLOCK_MONOTONIC stamps; steps in the order they happen (by their median time). "
            "`bench_exec` is the driver just before it starts `gbatch`; `job_start` is the job's "
            "first act (`bench/stamp.c`). `fork` is the daemon handing the start to its standby "
            "runner (a runner started ahead; a runner of its own when none waits), `runner_start` "
            "the runner holding the job's options, `synced` the daemon having synced the commit that "
            "started the job (the start is handed over before, held: the runner prepares it "
            "meanwhile), `exec` the job's process about to become the job (after `synced`). "
            "Steps on different processes can overlap "
            "(`client_exit` comes while the daemon goes on), so a step can be earlier than the one "
            "listed above it in some samples.", "",
            "| step | since the step above | since `bench_exec` | samples |", "|---|---|---|---|"]
    for step, prev, since, n in t["steps"]:
        gap = fmt(prev, 's') if prev is not None else '—'
        out.append(f"| `{step}` | {gap} | {fmt(since, 's')} | {n} |")
    return "\n".join(out)


def handoff_text(b):
    """The GPU hand-off breakdown (case handoff with GFLOW_TRACE set)."""
    t = getattr(b, "handoff_trace", None)
    if t is None:
        return "Not measured (the handoff case did not run)."
    if not t["steps"]:
        return "No traced hand-off was recorded."
    out = [f"Medians over {t['jobs']} hand-offs on one fake GPU (process executor), CLOCK_MONOTONIC "
           "stamps. `stamp_a` is job A's last process reading the clock just before it writes its file "
           "and exits; `job_exit` and `job_gone` are A's runner seeing its main process and then its "
           "last process gone, `result_told` its result sent to the daemon on the runner's socket (a "
           "standby runner's way), `result_written` its result file on disk and `runner_exit` the daemon "
           "seeing A's runner exit (the way of a runner without the socket), `end_commit` A's end "
           "committed (its GPU free from then on); the rest is "
           "job B's start as in the start-latency trace, up to `job_start`, B's first act.", "",
           "| step | since the step above | since `stamp_a` | samples |", "|---|---|---|---|"]
    if t["missing"]:
        out.insert(0, f"Steps missing from the trace: {', '.join(t['missing'])}.\n")
    for step, prev, since, n in t["steps"]:
        gap = fmt(prev, 's') if prev is not None else '—'
        out.append(f"| `{step}` | {gap} | {fmt(since, 's')} | {n} |")
    return "\n".join(out)


# ---- the scaling table and its plot -------------------------------------------------

# (row key pattern, the million case's key of it, label, unit, the targets
# of issues 13 and 31 as {jobs: value}); {n} is the number of jobs. Up to
# 100,000 the queue case's held jobs (the scheduler pass: case sched,
# in-process, that many queued); at 1,000,000 the million case's store (a
# year of ended jobs and 1,000 held), the pass still case sched's.
SCALE = [
    ("list-{n}-a", "mil-list-a-1m", "`gqueue -a`", "s", {10000: 0.020, 100000: 0.200, 1000000: 0.7}),
    ("sub-{n}", "mil-sub-1m", "`gbatch --hold` rate", "jobs/s", {}),
    ("sched-{n}-busy", None, "`sched_pass()`, 8 GPUs busy", "µs", {100000: 2000.0}),
    ("start-{n}", "mil-start-1m", "daemon start", "s", {100000: 0.5, 1000000: 2.5}),
    ("lat-{n}", "mil-lat-1m", "submit → start of a job", "s", {}),
    ("rss-{n}", "mil-rss-1m", "daemon RSS, idle", "MiB", {100000: 40.0, 1000000: 250.0}),
    ("rsspeak-{n}", "mil-rsspeak-1m", "daemon RSS, listing peak", "MiB", {100000: 60.0, 1000000: 250.0}),
]
SIZES = (1000, 10000, 100000, 1000000)


def scale_key(pat, mil, n):
    return mil if n == 1000000 and mil else pat.format(n=n)


def scale_data(b):
    """[(label, unit, {n: median}, {n: target})] for every metric measured at
    some size."""
    out = []
    for pat, mil, label, unit, tgt in SCALE:
        v = {n: median(b.keyed[scale_key(pat, mil, n)]["samples"]) for n in SIZES
             if scale_key(pat, mil, n) in b.keyed}
        if v:
            out.append((label, unit, v, tgt))
    return out


def size_label(n):
    return f"{n // 1000000}M" if n >= 1000000 else f"{n // 1000}k"


def scale_text(b):
    data = scale_data(b)
    if not data:
        return "Not measured (needs the cases queue and sched)."
    lines = ["| jobs stored | " + " | ".join(f"{label}" for label, _, _, _ in data) + " |",
             "|---|" + "---|" * len(data)]
    for n in SIZES:
        cells = [fmt(v[n], unit) if n in v else "—" for _, unit, v, _ in data]
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "")


def scale_svg(b):
    """Small multiples, one panel per metric: x = jobs stored (log scale,
    1k-1M), y = the metric from 0 (linear), each point labelled with its
    value. Returns the SVG text, or None when nothing was measured."""
    data = scale_data(b)
    if not data:
        return None
    cols = 4
    pw, ph = 230, 170			# panel size
    ml, mr, mt, mb = 44, 14, 34, 34	# margins inside a panel
    rows = -(-len(data) // cols)
    W, H = cols * pw, rows * ph + 30
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="#fff"/>',
         '<text x="8" y="18" font-size="13" font-weight="bold">gflow at 1,000 to 1,000,000 jobs stored '
         '(x: jobs, log scale; y: from 0; red squares: the targets of issues 13 and 31)</text>']
    lx = [math.log10(n) for n in SIZES]
    for i, (label, unit, v, tgt) in enumerate(data):
        x0, y0 = (i % cols) * pw, 30 + (i // cols) * ph
        left, right, top, bottom = x0 + ml, x0 + pw - mr, y0 + mt, y0 + ph - mb
        ymax = max([*v.values(), *tgt.values()]) * 1.15 or 1.0

        def X(n):
            return left + (math.log10(n) - lx[0]) / (lx[-1] - lx[0]) * (right - left)

        def Y(val):
            return bottom - val / ymax * (bottom - top)
        top_label, axis_unit = (fmt(ymax, unit).split(" ", 1) + [unit])[:2]	# e.g. "229", "ms"
        o.append(f'<text x="{x0 + 8}" y="{y0 + 18}" font-weight="bold">{_esc(label)} ({_esc(axis_unit)})'
                 '</text>')
        o.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#888"/>')
        o.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#888"/>')
        for n in SIZES:
            o.append(f'<line x1="{X(n):.1f}" y1="{bottom}" x2="{X(n):.1f}" y2="{bottom + 4}" stroke="#888"/>')
            o.append(f'<text x="{X(n):.1f}" y="{bottom + 16}" text-anchor="middle">{size_label(n)}</text>')
        o.append(f'<text x="{left - 4}" y="{bottom + 4}" text-anchor="end">0</text>')
        o.append(f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_esc(top_label)}</text>')
        for n, val in sorted(tgt.items()):	# the target: a red open square
            o.append(f'<rect x="{X(n) - 4:.1f}" y="{Y(val) - 4:.1f}" width="8" height="8" fill="none" '
                     'stroke="#d1242f" stroke-width="1.5"/>')
        pts = sorted(v.items())
        o.append('<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="' +
                 " ".join(f"{X(n):.1f},{Y(val):.1f}" for n, val in pts) + '"/>')
        for n, val in pts:
            o.append(f'<circle cx="{X(n):.1f}" cy="{Y(val):.1f}" r="3" fill="#1f6feb"/>')
            anchor = "start" if n == SIZES[0] else "end" if n == SIZES[-1] else "middle"
            o.append(f'<text x="{X(n):.1f}" y="{Y(val) - 7:.1f}" text-anchor="{anchor}" fill="#333">'
                     f'{_esc(fmt(val, unit))}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


HAND_MARK = "<!-- measured by hand: kept by make bench -->"


# Sections bench/run.sh appends after bench.py has written the report: each
# run writes them anew, so they are never kept.
APPENDED = ("\n## Load\n", "\n## Dashboard\n")


def kept_by_hand(path):
    """What the report at path holds after HAND_MARK (sections measured by
    hand with their own command, e.g. bench/runners.py), to keep, up to the
    sections the last run appended (APPENDED)."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    i = text.find(HAND_MARK)
    if i < 0:
        return ""
    kept = text[i:]
    ends = [k for k in (kept.find(a) for a in APPENDED) if k >= 0]
    return "\n" + (kept[:min(ends)] if ends else kept).rstrip("\n") + "\n"


def markdown(b, started, elapsed, cases, svg_name=None):
    """The report. svg_name: the scaling plot's path relative to the report
    (written by the caller), or None."""
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
           "other work on the machine during the run shows up as spread between min and max",
           f"- one `CPUID` instruction (`bench/cpuid.c`) at the start: {b.cpuid_start}, at the end: "
           f"{b.cpuid_end} — in a VM a trap to the hypervisor, of which every start of a glibc program "
           "makes 68 (see the notes under Results)", "",
           "## Targets", "",
           "Every target of issues 13 and 31, checked against the medians of this run (ratios: both sides "
           "from this run).", "",
           targets_text(b), "",
           "## Compared with other schedulers", "",
           "Same machine, same run. Ratios are gflow against the other tool "
           "(\"faster\": gflow took less time or did more per second).", "",
           compare_text(b), "",
           f"Debian packages: {apt_policy()} Slurm is started for the run by `bench/slurm-up.sh` "
           "(a single node with this machine's CPUs and memory; `make bench SLURM_UP=1` starts and "
           "stops it), never installed by the benchmark; task-spooler is used when `tsp` is on PATH. "
           "tsp keeps its queue in memory (no fsync), so its submission rate is not comparable to "
           "gflow's durable one; it keeps a waiting client process per queued job, so listings compare "
           "finished tsp jobs with held gflow jobs. Slurm runs with `SchedulerParameters="
           "batch_sched_delay=0` (its default lets the controller wait up to 3 s before it starts a "
           "batch job, which was most of its latency here); the rest of its latency is its "
           "controller and slurmd acting on the new job, not its clients.", "",
           "## Where the start latency goes", "",
           trace_text(b), "",
           "## Where the GPU hand-off goes", "",
           handoff_text(b), "",
           "## Scaling", "",
           "One daemon filled with 1,000, then 10,000, then 100,000 held jobs (case queue); at "
           "1,000,000 the million case's store: a year of ended jobs and the 1,000 newest held. The "
           "scheduler pass is case sched's, in-process, with that many jobs queued. Medians of the runs "
           "at each size.", "",
           scale_text(b), ""]
    if svg_name:
        out += [f"![gflow at 1k to 1M jobs]({svg_name})", ""]
    out += ["## Results", "",
            "Median of the runs, with the smallest and largest run; `n` is the number of runs "
            "(samples). `target` is the issue's goal where one row decides it, checked against the "
            "median.", "",
            table_text(b), "",
            "Notes:",
            "- submit: jobs/s = jobs ÷ wall time of a `/bin/sh` loop starting one `gbatch` per job; "
            "the floor row is the same loop starting `/bin/true`. `/bin/true` and `tsp` are linked "
            "with glibc, whose start-up asks the CPU its cache sizes with 68 `CPUID` instructions, "
            "each a trap to the hypervisor in a VM (what one took here: see the top); the gflow "
            "client is linked with musl (docs/design.md) and asks nothing, which is how a "
            "submission can take less than the floor.",
            "- latency: the job `stamp FILE` reads CLOCK_REALTIME as its first act; latency = that − "
            "the time just before `gbatch` was started; the daemon is idle at each submission.",
            "- queue: all jobs are held (active), so `gqueue` and `gqueue -a` list the same rows, every "
            "job of the store; output goes to /dev/null. Peak RSS of the client from wait4(), of the "
            "daemon from VmHWM, reset before each listing.",
            "- sched: `bench/sched_bench.c` times `sched_pass()` in-process (no daemon, no I/O).",
            "- daemon: wakeups are context switches counted in /proc (perf counts nothing in this VM).",
            "- throughput: jobs/s = jobs ÷ the time from submitting to the last one ended (gflow: a "
            "listing of the still-active ids every 20 ms; tsp: `tsp -l` every 50 ms; Slurm: `squeue` "
            "every 50 ms); gflow counts the machine's CPUs ([daemon] cpus), so as many `true` jobs run "
            "at once as tsp's slots; the jobs of both run with the same PATH and no LD_LIBRARY_PATH. "
            "\"Machine CPU a job\": the busy time of all CPUs over the same span (/proc/stat: every "
            "process and the kernel; iowait counts as idle) ÷ the jobs; its note gives the idle share and "
            "the rate that CPU a job allows with no CPU idle, which no change but less CPU a job can pass.",
            "- handoff: job A (`--gpus 1`) and job B (`--gpus 1`, queued behind it) on one fake GPU; "
            "hand-off = B's first clock reading − A's last (`bench/stamp.c` in both).",
            "", "## Machine", ""]
    out += [f"- {k}: {val}" for k, val in m.items()]
    out += ["", "## Versions", ""]
    out += [f"- {k}: {val}" for k, val in v.items()]
    if b.helpers:
        out += [f"- helper `{k}` built with: `{cmd}`" for k, cmd in b.helpers.items()]
    out.append("")
    return "\n".join(out)
