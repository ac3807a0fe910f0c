"""million.py — issue 31's "1,000,000 jobs stored" and "History" rows: one
daemon whose store holds a year of history (N jobs, 1,000 of them active),
measured as a user of such a box feels it: daemon start, idle RSS, `gqueue`
(active jobs), `gqueue -a` (time to the last row and to the first), the
daemon's peak RSS during it, `gqueue -a --since 7d`, `gstats`, submit →
start of a job, sequential submissions against the empty-store rate, and
the store's bytes per job.
Python 3 standard library only.

The fill (not itself a target). The API has no way to set a job's submit or
end time, and running a million jobs takes hours, so the history is written
into the store by the benchmark itself while the daemon is stopped: one real
job (`true`) is run to Finished through the daemon, the daemon is stopped,
and its row is the template of N - 1,001 more rows inserted with one SQL
statement (SQLite's json_set on the template's text): ids in order, submit
times evenly over the 365 days before the last hour, starts 0-10 min after
submission, ends 0-2 h after the start; every 20th job Failed (exit code 1),
every 20th Cancelled before it started, the rest Finished; 1,000 names
(train-0 … train-999). Then the daemon is started on that store and 1,000
held jobs are submitted through POST /jobs: the active ones, the newest.
Every job belongs to the one user the benchmark runs as."""
import os
import sqlite3
import subprocess
import time

from benchlib import Daemon, log, median, proc_hwm, proc_status

YEAR = 365 * 86400
ACTIVE = 1000


def fill_history(d, n):
    """The store of the stopped daemon d gets n ended jobs (see above)."""
    db = d.data / "gflow.db"
    c = sqlite3.connect(str(db))
    try:
        tmpl, = c.execute("SELECT data FROM jobs WHERE json_extract(data, '$.state') = 'Finished' "
                          "ORDER BY id LIMIT 1").fetchone()
        base, = c.execute("SELECT max(id) FROM jobs").fetchone()
        now = time.time()
        t0 = now - YEAR - 3600
        c.execute("PRAGMA synchronous=OFF")
        c.execute(
            """WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1),
                 t(i, sub, st) AS (SELECT i, ?2 + i * ?3, CASE WHEN i % 20 = 0 THEN 'F'
                                   WHEN i % 20 = 1 THEN 'CA' ELSE 'CD' END FROM k)
               INSERT INTO jobs(data)
               SELECT json_set(?4,
                 '$.name', 'train-' || (i % 1000),
                 '$.state', CASE st WHEN 'F' THEN 'Failed' WHEN 'CA' THEN 'Cancelled' ELSE 'Finished' END,
                 '$.st', st,
                 '$.reason', CASE st WHEN 'CA' THEN 'CancelledByUser' ELSE NULL END,
                 '$.submit_time', sub,
                 '$.start_time', CASE st WHEN 'CA' THEN NULL ELSE sub + (i * 7919) % 600 END,
                 '$.end_time', CASE st WHEN 'CA' THEN sub + 60
                                ELSE sub + (i * 7919) % 600 + (i * 104729) % 7200 END,
                 '$.exit_code', CASE st WHEN 'CA' THEN NULL WHEN 'F' THEN 1 ELSE 0 END,
                 '$.runner_pid', CASE st WHEN 'CA' THEN 0 ELSE 1000 + i % 30000 END,
                 '$.run_seq', CASE st WHEN 'CA' THEN 0 ELSE 1 END)
               FROM t""", (n, t0, YEAR / n, tmpl))
        c.commit()
        return base
    finally:
        c.close()


def first_row(d, args):
    """Seconds until a client's header and first row are printed, and until
    it exits."""
    exe = str(d.b.build / args[0])
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, *args[1:]], env=d.env, cwd=d.dir, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, bufsize=0)
    seen, buf, first = 0, b"", None
    while True:
        chunk = p.stdout.read(65536)
        if not chunk:
            break
        if first is None:
            buf += chunk
            if buf.count(b"\n") >= 2:
                first = time.perf_counter() - t0
                buf = b""
        seen += chunk.count(b"\n")
    p.wait()
    total = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{args} failed ({p.returncode})")
    return first if first is not None else total, total, seen


def case_million(b):
    from bench import QUEUE_SUBS, gbatch_rate, job_latency, reset_hwm
    n = b.n(1000000, 100000)
    tag = f"{n // 1000}k" if n < 1000000 else "1m"
    d = Daemon(b)
    try:
        d.start()
        _, r = d.run_cli(["gbatch", "true"], stdout=subprocess.PIPE)
        d.wait_ended(int(r.stdout.split()[3]))
        d.stop()
        t0 = time.perf_counter()
        fill_history(d, n - ACTIVE - 1)
        fill = time.perf_counter() - t0
        b.row("million", f"fill: {n - ACTIVE - 1:,} ended jobs over a year written into the stopped "
              "daemon's store (SQL, bench/million.py)", "s", [fill], note="one sample; not a target")
        d.start(timeout=600)
        t0 = time.perf_counter()
        st, body = d.api("POST", "/jobs", {"jobs": [{"command": ["true"], "hold": True}] * ACTIVE,
                                           "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]}, timeout=600)
        if st != 201:
            raise RuntimeError(f"POST /jobs: {st} {str(body)[:200]}")
        db = d.data / "gflow.db"
        start, rss = [], []
        for _ in range(b.runs):
            d.stop()
            start.append(d.start(timeout=600))
            time.sleep(0.5)
            rss.append(proc_status(d.proc.pid)[0] / 1024)
        size = sum(os.path.getsize(p) for p in (db, str(db) + "-wal") if os.path.exists(p))
        b.row("million", f"store file size per job, {n:,} jobs (gflow.db + WAL after the starts)", "B",
              [size / n], key=f"mil-bytes-{tag}", note=f"{size / 2**20:,.0f} MiB in all")
        b.row("million", f"daemon start with {n:,} jobs stored, until `GET /health` answers", "s",
              start, key=f"mil-start-{tag}")
        b.row("million", f"daemon RSS, idle, {n:,} jobs ({ACTIVE:,} active)", "MiB", rss,
              key=f"mil-rss-{tag}", note="VmRSS, 0.5 s after /health")
        _, r = d.run_cli(["gqueue", "-a"], stdout=subprocess.PIPE)
        lines = r.stdout.count(b"\n")
        if lines != n + 1:
            raise RuntimeError(f"gqueue -a printed {lines} lines for {n} jobs")
        # the full listing: to the first row, to the end, the daemon's peak
        firsts, totals, peak, reset = [], [], [], True
        for _ in range(b.runs):
            reset = reset_hwm(d.proc.pid) and reset
            f, t, _ = first_row(d, ["gqueue", "-a"])
            firsts.append(f)
            totals.append(t)
            peak.append(proc_hwm(d.proc.pid) / 1024)
        b.row("million", f"`gqueue -a` with {n:,} jobs, until the last row", "s", totals,
              key=f"mil-list-a-{tag}", note="output read through a pipe")
        b.row("million", f"`gqueue -a` with {n:,} jobs, until the header and first row", "s", firsts,
              key=f"mil-first-{tag}")
        b.row("million", f"daemon peak RSS during `gqueue -a`, {n:,} jobs", "MiB", peak,
              key=f"mil-rsspeak-{tag}",
              note="VmHWM, reset (clear_refs 5) before each listing" if reset else
              "VmHWM since the start (this kernel refused clear_refs 5)")
        for args, key, what in ((["gqueue"], "list", f"{ACTIVE:,} active"),
                                (["gqueue", "-a", "--since", "7d"], "since", "the last 7 days' jobs"),
                                (["gstats"], "gstats", "a year of jobs")):
            t = []
            for _ in range(b.runs):
                dt, r = d.run_cli(args, stdout=subprocess.PIPE)
                t.append(dt)
            nl = r.stdout.count(b"\n")
            b.row("million", f"`{' '.join(args)}` with {n:,} jobs stored ({what})", "s", t,
                  key=f"mil-{key}-{tag}", note=f"{nl:,} lines out")
        lat = job_latency(b, d, b.runs)
        b.row("million", f"submit → start of a 0-GPU job with {n:,} jobs stored", "s", lat,
              key=f"mil-lat-{tag}", note="one job per sample, the daemon otherwise idle (its 1,000 active "
              "jobs held)")
        t, t0 = gbatch_rate(b, d, empty=True)
        b.row("million", f"{QUEUE_SUBS} × `gbatch --hold true`, empty store", "jobs/s", t0, higher=True,
              key=f"mil-sub-0-{tag}", note="each run right after one with the full store, on a fresh daemon")
        b.row("million", f"{QUEUE_SUBS} × `gbatch --hold true` with {n:,} jobs stored", "jobs/s", t,
              higher=True, key=f"mil-sub-{tag}", note=f"{1000 / median(t):.2f} ms per submission")
    finally:
        d.close()
    log(f"million: done ({n:,} jobs)")
