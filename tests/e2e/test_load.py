"""Load: 20 concurrent clients submit (gbatch, POST /jobs) and list (gqueue,
gqueue -a, GET /jobs) against one daemon for a bounded time. Every call must
be answered correctly: every submission acknowledged, every listing showing
what this client already got acknowledged, and afterwards every job present
exactly once. The p50/p99 latency of each kind of call is printed and, when
$GFLOW_LOAD_REPORT is set, written there as JSON.

GFLOW_LOAD_SECS sets the duration (default 10 s; 30 s for the full run).
"""
import json
import multiprocessing
import os
import queue
import random
import re
import time

from conftest import SLOW

CLIENTS = 20
SECS = float(os.environ.get("GFLOW_LOAD_SECS", "10"))
OPS = ["gbatch", "api_submit", "gqueue", "gqueue_a", "api_list"]
WEIGHTS = [3, 2, 3, 1, 1]


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def table_ids(out):
    """Job ids in the first column of a gqueue table (header checked)."""
    lines = out.splitlines()
    if not lines or lines[0].split()[:3] != ["JOBID", "NAME", "ST"]:
        raise AssertionError(f"gqueue printed no table header: {out[:300]!r}")
    return {int(ln.split()[0]) for ln in lines[1:] if ln.strip()}


class Client:
    def __init__(self, g, k, deadline):
        self.g, self.k, self.deadline = g, k, deadline
        self.rnd = random.Random(k)
        self.n = 0
        self.held = {}            # id -> name: acknowledged, held (stay active)
        self.ran = {}             # id -> name: acknowledged, meant to run
        self.lat = {op: [] for op in OPS}
        self.errors = []

    def name(self):
        self.n += 1
        return f"load{self.k}-{self.n}"

    def timed(self, op, fn):
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:          # an unanswered or wrong call is an error
            self.errors.append(f"{op}: {e!r}"[:600])
        finally:
            self.lat[op].append(time.perf_counter() - t0)

    def gbatch(self):
        name, held = self.name(), self.rnd.random() < 0.8
        r = self.g.cli("gbatch", "--name", name, *(["--hold"] if held else []), "true", timeout=60)
        m = re.search(r"Submitted batch job (\d+) \((.*)\)", r.stdout)
        assert r.returncode == 0 and m and m.group(2) == name, f"gbatch: {r.returncode} {r.stdout!r} {r.stderr!r}"
        (self.held if held else self.ran)[int(m.group(1))] = name

    def api_submit(self):
        n = self.rnd.choice([1, 1, 2, 5])
        names = [self.name() for _ in range(n)]
        held = self.rnd.random() < 0.8
        st, body = self.g.api("POST", "/jobs", {
            "jobs": [{"name": nm, "command": ["true"], "hold": held} for nm in names],
            "cwd": str(self.g.tmp), "env": ["PATH=/usr/bin:/bin"]}, timeout=60 * SLOW)
        assert st == 201 and [j["name"] for j in body["jobs"]] == names, f"POST /jobs: {st} {body}"
        for j in body["jobs"]:
            (self.held if held else self.ran)[j["id"]] = j["name"]

    def gqueue(self):
        r = self.g.cli("gqueue", timeout=60)
        assert r.returncode == 0, f"gqueue: {r.returncode} {r.stderr!r}"
        missing = set(self.held) - table_ids(r.stdout)
        assert not missing, f"gqueue does not show held jobs {sorted(missing)[:10]}"

    def gqueue_a(self):
        r = self.g.cli("gqueue", "-a", timeout=60)
        assert r.returncode == 0, f"gqueue -a: {r.returncode} {r.stderr!r}"
        missing = (set(self.held) | set(self.ran)) - table_ids(r.stdout)
        assert not missing, f"gqueue -a does not show jobs {sorted(missing)[:10]}"

    def api_list(self):
        st, body = self.g.api("GET", "/jobs", timeout=60 * SLOW)
        assert st == 200, f"GET /jobs: {st} {body}"
        seen = {j["id"]: j["name"] for j in body["jobs"]}
        mine = {**self.held, **self.ran}
        wrong = {i: n for i, n in mine.items() if seen.get(i) != n}
        assert not wrong, f"GET /jobs: jobs missing or renamed: {list(wrong.items())[:10]}"

    def run(self, results):
        """In a client process of its own: loop, then send back what it saw."""
        try:
            while time.time() < self.deadline:
                op = self.rnd.choices(OPS, WEIGHTS)[0]
                self.timed(op, getattr(self, op))
        except BaseException as e:
            self.errors.append(f"client crashed: {e!r}")
        results.put({"k": self.k, "held": self.held, "ran": self.ran, "lat": self.lat, "errors": self.errors})


class Result:
    def __init__(self, d):
        self.__dict__.update(d)


def test_twenty_clients_submit_and_list_without_errors(gflow, capsys):
    g = gflow
    g.start()
    # Each client is a process of its own, as real clients are (and so that
    # one client's Python does not hold up another's timings).
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    deadline = time.time() + SECS
    procs = [ctx.Process(target=Client(g, k, deadline).run, args=(results,)) for k in range(CLIENTS)]
    t0 = time.time()
    for p in procs:
        p.start()
    clients = []
    try:
        for _ in procs:
            try:
                clients.append(Result(results.get(timeout=SECS + 180 * SLOW)))
            except queue.Empty:
                raise AssertionError(f"only {len(clients)} of {CLIENTS} clients came back: one hung")
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    wall = time.time() - t0

    errors = [f"client {c.k}: {e}" for c in clients for e in c.errors]

    # afterwards: every acknowledged job is there exactly once, as named
    st, body = g.api("GET", "/jobs?users=all", timeout=60 * SLOW)
    assert st == 200
    by_id = {}
    for j in body["jobs"]:
        by_id.setdefault(j["id"], []).append(j)
    acked = {i: n for c in clients for i, n in list(c.held.items()) + list(c.ran.items())}
    n_acked = sum(len(c.held) + len(c.ran) for c in clients)
    if n_acked != len(acked):
        errors.append(f"{n_acked - len(acked)} ids were acknowledged to two submissions")
    for i, name in acked.items():
        found = by_id.get(i, [])
        if len(found) != 1 or found[0]["name"] != name:
            errors.append(f"job {i} ({name}) in the store: {[(j['id'], j['name']) for j in found]}")
    held = {i for c in clients for i in c.held}
    not_held = [i for i in held if by_id.get(i) and by_id[i][0]["state"] != "Hold"]
    if not_held:
        errors.append(f"held jobs that are not Hold: {not_held[:10]}")
    names = [j["name"] for j in body["jobs"]]
    if len(names) != len(set(names)):
        errors.append("a submission is in the store twice")
    if g.proc.poll() is not None:
        errors.append(f"gflowd exited with {g.proc.returncode}")

    ops = {}
    for op in OPS:
        lat = [x for c in clients for x in c.lat[op]]
        ops[op] = {"count": len(lat),
                   "p50_ms": round(percentile(lat, 50) * 1000, 2) if lat else None,
                   "p99_ms": round(percentile(lat, 99) * 1000, 2) if lat else None,
                   "max_ms": round(max(lat) * 1000, 2) if lat else None}
    report = {"test": "load", "clients": CLIENTS, "secs": SECS, "wall_s": round(wall, 2),
              "sanitized": SLOW > 1, "jobs_submitted": len(acked), "jobs_in_store": len(by_id),
              "errors": len(errors), "ops": ops,
              "gqueue_p50_ms": ops["gqueue"]["p50_ms"], "gqueue_p99_ms": ops["gqueue"]["p99_ms"]}
    with capsys.disabled():
        print(f"\nload: {CLIENTS} clients, {SECS:g} s, {len(acked)} jobs submitted, {len(errors)} errors")
        for op, v in ops.items():
            print(f"  {op:<11} n={v['count']:<6} p50={v['p50_ms']} ms  p99={v['p99_ms']} ms  max={v['max_ms']} ms")
    path = os.environ.get("GFLOW_LOAD_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")

    assert sum(v["count"] for v in ops.values()) >= CLIENTS, "the clients did almost nothing"
    assert ops["gqueue"]["count"] > 0, "no gqueue call was made"
    assert not errors, f"{len(errors)} errors:\n" + "\n".join(errors[:30])
