"""Crash test: clients submit through gbatch and straight to the API while a
killer thread kill -9s the daemon at random moments and starts it again.
Afterwards: every acknowledged submission is in the store exactly once, as it
was sent; no id was handed out twice; no job ran twice; a job started before
the kills ran throughout (same pid); and jobs that ended while the daemon was
down show their real exit codes. Bounded to about a minute of wall time.
"""
import http.client
import random
import re
import shlex
import signal
import threading
import time

from conftest import SLOW

KILL_PHASE_SECS = 30          # wall time of submissions under kills
GBATCH_CLIENTS = 3
API_CLIENTS = 3
# exit code of each gate job (None: it kills itself with SIGKILL); each gate is
# opened while the daemon is down, so the job ends while nobody watches
GATE_CODES = [0, 3, 7, 42, None, 255]

# what a client may be told when the daemon dies under it or is not there yet
CONNECTION_WORDS = re.compile(r"not running|cannot (send to|read|connect)|answer|reset|closed|broken pipe",
                              re.I)


def job_command(ran, code):
    return ["sh", "-c", f'echo "$GFLOW_JOB_ID" >> {shlex.quote(str(ran))}; exit {code}']


class Ledger:
    """Everything the clients sent and were told, in order, per client."""

    def __init__(self):
        self.lock = threading.Lock()
        self.subs = []            # dicts: client, names, commands, held, codes, ids (None: no ack), err
        self.problems = []        # answers no client should ever get

    def add(self, **sub):
        with self.lock:
            self.subs.append(sub)

    def problem(self, text):
        with self.lock:
            self.problems.append(text)


def gbatch_client(g, k, ran, stop, ledger):
    rnd = random.Random(1000 + k)
    i = 0
    while not stop.is_set():
        i += 1
        name = f"gb{k}-{i}"
        held = rnd.random() < 0.4
        code = rnd.choice([0, 0, 0, 1, 3])
        cmd = job_command(ran, code)
        try:
            r = g.cli("gbatch", "--name", name, *(["--hold"] if held else []), *cmd, timeout=30)
        except Exception as e:          # a hung client is a finding
            ledger.problem(f"gbatch {name}: {e!r}")
            continue
        ids = None
        if r.returncode == 0:
            m = re.search(r"Submitted batch job (\d+)", r.stdout)
            if m:
                ids = [int(m.group(1))]
            else:
                ledger.problem(f"gbatch {name}: exit 0 without an id: {r.stdout!r}")
        elif not CONNECTION_WORDS.search(r.stderr):
            ledger.problem(f"gbatch {name}: refused for a reason other than the crash: {r.stderr!r}")
        ledger.add(client=f"gb{k}", names=[name], commands=[cmd], held=[held], codes=[code], ids=ids,
                   err=None if ids else r.stderr.strip())
        time.sleep(rnd.uniform(0.01, 0.06))


def api_client(g, k, ran, stop, ledger):
    rnd = random.Random(2000 + k)
    i = 0
    while not stop.is_set():
        i += 1
        n = rnd.choice([1, 1, 1, 2, 3])
        names = [f"api{k}-{i}-{m}" for m in range(n)]
        held = [rnd.random() < 0.4 for _ in names]
        codes = [rnd.choice([0, 0, 0, 1, 3]) for _ in names]
        cmds = [job_command(ran, c) for c in codes]
        body = {"jobs": [{"name": nm, "command": c, "hold": h} for nm, c, h in zip(names, cmds, held)],
                "cwd": str(g.tmp), "env": ["PATH=/usr/bin:/bin"]}
        ids, err = None, None
        try:
            st, out = g.api("POST", "/jobs", body, timeout=20 * SLOW)
            if st == 201:
                ids = [j["id"] for j in out["jobs"]]
                if [j["name"] for j in out["jobs"]] != names:
                    ledger.problem(f"POST /jobs {names}: answered {out}")
            else:
                ledger.problem(f"POST /jobs {names}: {st} {out}")
                err = f"{st} {out}"
        except TimeoutError as e:
            ledger.problem(f"POST /jobs {names}: no answer in time ({e!r})")
            err = repr(e)
        except (OSError, http.client.HTTPException) as e:
            err = repr(e)               # the daemon died under us, or is not up yet
        ledger.add(client=f"api{k}", names=names, commands=cmds, held=held, codes=codes, ids=ids, err=err)
        time.sleep(rnd.uniform(0.01, 0.06))


def proc_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill9_under_load_loses_nothing_and_runs_nothing_twice(gflow):
    g = gflow
    ran = g.tmp / "ran.txt"
    ran.touch()
    g.start()

    # a long job started before the kills, to run through all of them
    long_pid_file = g.tmp / "long.pid"
    long_id = g.submit("--name", "long", "sh", "-c", f"echo $$ > {long_pid_file}; exec sleep 600")
    long_job = g.wait_state(long_id, "Running")
    g.wait_for(lambda: long_pid_file.exists() and long_pid_file.read_text().strip(), what="long job's pid")
    long_pid = int(long_pid_file.read_text())

    # gate jobs: each waits for its gate, which is opened while the daemon is down
    gates = []
    for n, code in enumerate(GATE_CODES):
        gate, done = g.tmp / f"gate{n}", g.tmp / f"gate{n}.done"
        end = "kill -KILL $$" if code is None else f"exit {code}"
        jid = g.submit("--name", f"gate{n}", "sh", "-c",
                       f"while [ ! -e {gate} ]; do sleep 0.05; done; touch {done}; {end}")
        gates.append((jid, gate, done, code))
    for jid, *_ in gates:
        g.wait_state(jid, "Running")

    ledger = Ledger()
    stop = threading.Event()
    kills = []                      # (time of kill, gate opened while down or None)
    killer_errors = []
    deadline = time.time() + KILL_PHASE_SECS

    def killer():
        rnd = random.Random(7)
        todo = list(gates)
        try:
            while time.time() < deadline:
                time.sleep(rnd.uniform(0.3, 1.5))
                g.kill9()               # waits until the old daemon is gone
                opened = None
                if todo:
                    jid, gate, done, _ = opened = todo.pop(0)
                    gate.touch()
                    t_end = time.time() + 5 * SLOW
                    while not done.exists() and time.time() < t_end:
                        time.sleep(0.02)
                    time.sleep(0.3)     # the runner records the result
                else:
                    time.sleep(rnd.uniform(0.0, 0.3))
                kills.append((time.time(), opened and opened[0]))
                g.start()
                if not proc_alive(long_pid):
                    killer_errors.append(f"long job's process {long_pid} gone after kill {len(kills)}")
        except BaseException as e:      # report in the main thread
            killer_errors.append(f"killer: {e!r}")
        finally:
            stop.set()

    threads = [threading.Thread(target=gbatch_client, args=(g, k, ran, stop, ledger)) for k in range(GBATCH_CLIENTS)]
    threads += [threading.Thread(target=api_client, args=(g, k, ran, stop, ledger)) for k in range(API_CLIENTS)]
    kt = threading.Thread(target=killer)
    for t in threads + [kt]:
        t.start()
    kt.join(KILL_PHASE_SECS + 60 * SLOW)
    stop.set()
    for t in threads:
        t.join(60 * SLOW)
    assert not kt.is_alive() and not any(t.is_alive() for t in threads), "a thread hung"
    assert not killer_errors, killer_errors
    if g.proc is None or g.proc.poll() is not None:
        g.proc = None
        g.start()
    for _, gate, _, _ in gates:     # in case there were fewer kills than gates
        gate.touch()

    acked = [s for s in ledger.subs if s["ids"]]
    lost = [s for s in ledger.subs if not s["ids"]]
    assert len(kills) >= len(GATE_CODES), f"only {len(kills)} kills"
    assert len(acked) >= 50, f"only {len(acked)} acknowledged submissions: the test did not test much"

    # let everything that can run finish
    def settled():
        st, body = g.api("GET", "/jobs?users=all")
        assert st == 200, body
        busy = [j for j in body["jobs"] if j["state"] in ("Queued", "Running") and j["id"] != long_id]
        return None if busy else body["jobs"]
    jobs = g.wait_for(settled, timeout=60, what="all jobs to end")
    by_id = {j["id"]: j for j in jobs}
    by_name = {}
    for j in jobs:
        by_name.setdefault(j["name"], []).append(j)

    problems = list(ledger.problems)

    # ids: never handed out twice; increasing per client in acknowledgement order
    all_acked_ids = [i for s in acked for i in s["ids"]]
    if len(all_acked_ids) != len(set(all_acked_ids)):
        dup = sorted({i for i in all_acked_ids if all_acked_ids.count(i) > 1})
        problems.append(f"ids acknowledged twice: {dup}")
    per_client = {}
    for s in acked:
        per_client.setdefault(s["client"], []).extend(s["ids"])
    for c, ids in per_client.items():
        if any(b <= a for a, b in zip(ids, ids[1:])):
            problems.append(f"client {c}: ids not increasing: {ids}")

    # every acknowledged job exists exactly once, as it was sent
    run_jobs = {}                   # id -> expected exit code, for jobs meant to run
    held_jobs = set()
    for s in acked:
        for name, cmd, held, code, jid in zip(s["names"], s["commands"], s["held"], s["codes"], s["ids"]):
            found = by_name.get(name, [])
            if len(found) != 1:
                problems.append(f"acknowledged job {jid} ({name}) is in the store {len(found)} times")
                continue
            j = found[0]
            if j["id"] != jid or j["command"] != cmd:
                problems.append(f"acknowledged job {jid} ({name}) came back as {j['id']} {j['command']}")
            (held_jobs.add(j["id"]) if held else run_jobs.__setitem__(j["id"], code))
    # unacknowledged ones may be there, but once, and a batch whole or not at all
    for s in lost:
        present = [by_name.get(n, []) for n in s["names"]]
        if any(len(p) > 1 for p in present):
            problems.append(f"unacknowledged {s['names']} stored more than once")
        if len({bool(p) for p in present}) > 1:
            problems.append(f"unacknowledged batch {s['names']} stored in part: {[len(p) for p in present]}")
        for name, held, code, p in zip(s["names"], s["held"], s["codes"], present):
            if len(p) == 1:
                (held_jobs.add(p[0]["id"]) if held else run_jobs.__setitem__(p[0]["id"], code))
    expected_names = {n for s in ledger.subs for n in s["names"]} | {"long"} | {f"gate{n}" for n in range(len(gates))}
    strays = [(j["id"], j["name"]) for j in jobs if j["name"] not in expected_names]
    if strays:
        problems.append(f"jobs nobody submitted: {strays}")

    # no job ran twice; every job meant to run ran once, with its exit code
    counts = {}
    for ln in ran.read_text().split():
        counts[int(ln)] = counts.get(int(ln), 0) + 1
    twice = {i: n for i, n in counts.items() if n > 1}
    if twice:
        problems.append(f"jobs that ran more than once (id: times): {twice}")
    for jid in held_jobs:
        j = by_id[jid]
        if j["state"] != "Hold" or jid in counts:
            problems.append(f"held job {jid} is {j['state']} and ran {counts.get(jid, 0)} times")
    for jid, code in run_jobs.items():
        j = by_id[jid]
        want = "Finished" if code == 0 else "Failed"
        if (j["state"], j["exit_code"]) != (want, code) or counts.get(jid) != 1:
            problems.append(f"job {jid} ({j['name']}) is {j['state']} exit {j['exit_code']} reason {j['reason']}"
                            f", ran {counts.get(jid, 0)} times; expected {want} exit {code}, ran once")
    unknown = set(counts) - set(run_jobs)
    if unknown:
        problems.append(f"ids in the run record that are no job meant to run: {sorted(unknown)}")

    # the long job ran throughout: same process, same start, still Running
    jl = by_id[long_id]
    if jl["state"] != "Running" or jl["start_time"] != long_job["start_time"] or not proc_alive(long_pid):
        problems.append(f"long job: {jl['state']} start {jl['start_time']} (was {long_job['start_time']}), "
                        f"pid {long_pid} alive: {proc_alive(long_pid)}")

    # gate jobs that ended while the daemon was down show what really happened
    for jid, _, _, code in gates:
        j = by_id[jid]
        want = ("Failed", None, signal.SIGKILL) if code is None else \
            ("Finished" if code == 0 else "Failed", code, None)
        if (j["state"], j["exit_code"], j["exit_signal"]) != want:
            problems.append(f"gate job {jid}: {j['state']} exit {j['exit_code']} signal {j['exit_signal']} "
                            f"reason {j['reason']}; expected {want}")

    # and the next id is a new one
    new = g.submit("--hold", "true")
    if new <= max(by_id):
        problems.append(f"new job got id {new}, not above the highest seen {max(by_id)}")

    log = g.daemon_log()
    for bad in ("AddressSanitizer", "runtime error:", "LeakSanitizer"):
        if bad in log:
            problems.append(f"sanitizer report in the daemon log: {log[log.index(bad) - 200:][:2000]}")

    kinds = sorted({re.sub(r"\d+", "N", s["err"] or "")[:70] for s in lost})
    summary = (f"{len(kills)} kills, {len(acked)} acknowledged submissions "
               f"({len(all_acked_ids)} jobs), {len(lost)} not acknowledged "
               f"({sum(1 for x in lost if by_name.get(x['names'][0]))} of them stored all the same), "
               f"{sum(counts.values())} job runs; refusals seen: {kinds}")
    assert not problems, summary + "\n" + "\n".join(problems[:40])
    print(summary)
