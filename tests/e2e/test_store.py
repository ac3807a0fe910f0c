"""The store and what is shown agree: a write the store refuses (a full disk)
changes nothing in memory and is refused in one plain line while reads go on;
a cancel cascade of many thousands of jobs is worked through in slices while
the daemon keeps answering, and a crash in the middle of one is finished at
the next start; a damaged row is set aside instead of keeping every job down;
ids continue past the logs of a store that was replaced.
"""
import errno
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import SLOW, Gflow


# ---- a real full disk -------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A daemon whose data directory (XDG_DATA_HOME) is a 2 MiB tmpfs."""
    g = Gflow(tmp_path)
    mnt = Path(g.env["XDG_DATA_HOME"])
    mnt.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield g, mnt
    finally:
        try:
            g.cleanup()
        finally:
            for _ in range(50):
                if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(path):
    """Write path until the file system has no block left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
    finally:
        os.close(fd)


def shown(g, ids):
    return {j: {k: g.job(j)[k] for k in ("state", "reason", "priority", "runner_pid")} for j in ids}


def refused_full(r):
    lines = r.stderr.strip().splitlines()
    return r.returncode != 0 and len(lines) == 1 and "disk full" in lines[0] and not r.stdout.strip()


def test_full_disk_refuses_writes_in_one_line_and_memory_stays_as_stored(small_disk):
    g, mnt = small_disk
    # the one GPU is taken by a process of someone else's until the disk is full
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    g.set_scenario(f"gpu 0\nproc 0 pid={foreign.pid} used_mb=1000\n")
    g.start("--gpu-poll-interval-secs", "1")
    run = g.submit("sleep", "1000")
    g.wait_state(run, "Running")
    g.wait_for(lambda: g.job(run)["runner_pid"], what="the runner to be attached")
    held = g.submit("--hold", "true")
    waits = g.submit("--depends-on", str(run), "true")
    soon = g.submit("--gpus", "1", "true")
    ids = [run, held, waits]
    before = shown(g, ids)
    pid = before[run]["runner_pid"]
    fill(mnt / "filler")

    r = g.cli("gcancel", run)
    assert refused_full(r), (r.returncode, r.stdout, r.stderr)
    assert shown(g, ids) == before
    for args in (("gjob", "hold", waits), ("gjob", "release", held),
                 ("gjob", "update", waits, "--priority", "99"), ("gbatch", "true"),
                 ("gcancel", held, waits)):
        r = g.cli(*args)
        assert refused_full(r), (args, r.returncode, r.stdout, r.stderr)
        assert shown(g, ids) == before, args
    # the job runs on, and reads are served
    os.kill(pid, 0)
    assert g.job(run)["state"] == "Running"
    assert g.api("GET", "/health")[0] == 200
    r = g.cli("gqueue", "-a", check=True)
    assert all(str(j) in r.stdout for j in ids)
    assert "JobId=%d" % run in g.cli("gjob", "show", run, check=True).stdout.replace(" ", "")
    st, body = g.api("GET", "/jobs?users=all")
    assert st == 200 and sorted(j["id"] for j in body["jobs"]) == ids + [soon]
    # the GPU frees: a start the store refuses does not happen, books nothing ...
    assert g.job(soon)["reason"] == "Resources"
    g.set_scenario("gpu 0\n")
    g.wait_for(lambda: "starting 1 job: disk full" in g.daemon_log(), what="the refused start")
    assert g.job(soon)["state"] == "Queued" and g.job(soon)["gpu_ids"] == []
    assert g.api("GET", "/gpus")[1]["gpus"][0]["jobs"] == []

    # ... and is tried again once there is room
    os.unlink(mnt / "filler")
    assert g.wait_state(soon, "Finished")["gpu_ids"] == [0]
    # a restart shows what was shown before
    g.stop()
    g.start()
    assert shown(g, ids) == before
    st, body = g.api("GET", "/jobs?users=all")
    assert sorted(j["id"] for j in body["jobs"]) == ids + [soon]
    os.kill(pid, 0)
    # and writes work again
    g.cli("gcancel", run, check=True)
    g.wait_state(run, "Cancelled")
    assert g.wait_state(waits, "Cancelled")["reason"] == f"DependencyFailed:{run}"


@pytest.mark.parametrize("executor", ["process", "tmux"])
def test_job_that_exits_0_on_a_full_disk_is_recorded_finished_once_there_is_room(small_disk, tmp_path,
                                                                                   executor):
    """Its result cannot be written (the runner retries) nor recorded (the
    daemon retries): it stays Running, never a made-up failure."""
    g, mnt = small_disk
    g.env["GFLOW_EXECUTOR__TYPE"] = executor
    g.start()
    go = tmp_path / "go"
    jid = g.submit("--", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done")
    g.wait_state(jid, "Running")
    g.wait_for(lambda: g.job(jid)["runner_pid"], what="the runner to be attached")
    fill(mnt / "filler")
    go.touch()
    g.wait_for(lambda: not g.job_pids(jid), what="the job's process to end")
    time.sleep(2 * SLOW)    # a result would have been written or given up by now
    j = g.job(jid)
    assert j["state"] == "Running" and j["active"], j
    os.unlink(mnt / "filler")
    j = g.wait_state(jid, {"Finished", "Failed"}, timeout=30)
    assert j["state"] == "Finished" and j["exit_code"] == 0, j


def test_an_end_and_the_start_it_makes_room_for_are_refused_together_on_a_full_disk(small_disk, tmp_path):
    """The end of a job and the start of the one waiting for its GPU are one
    commit: refused, the first is still Running holding the GPU and the
    second still Queued (never started unrecorded); with room again both
    are recorded, and the second runs once."""
    g, mnt = small_disk
    g.gpus(1)
    g.start()
    go = tmp_path / "go"
    first = g.submit("--gpus", "1", "--", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done")
    g.wait_state(first, "Running")
    g.wait_for(lambda: g.job(first)["runner_pid"], what="the runner to be attached")
    ran = tmp_path / "ran"
    second = g.submit("--gpus", "1", "--", "sh", "-c", f"echo x >> {ran}")
    assert g.job(second)["state"] == "Queued"
    fill(mnt / "filler")
    go.touch()
    g.wait_for(lambda: not g.job_pids(first), what="the first job's process to end")
    time.sleep(2 * SLOW)
    assert g.job(first)["state"] == "Running"
    assert g.job(second)["state"] == "Queued"
    assert not ran.exists()
    os.unlink(mnt / "filler")
    assert g.wait_state(first, {"Finished", "Failed"}, timeout=30)["state"] == "Finished"
    assert g.wait_state(second, {"Finished", "Failed"}, timeout=30)["state"] == "Finished"
    assert ran.read_text() == "x\n"


def test_a_submission_refused_on_a_full_disk_takes_no_end_with_it(small_disk, tmp_path):
    """An end told while the daemon could not read it, and a submission that
    comes with it. Refused on a full disk, the submission is answered so
    and stored nowhere, the job that ended is still Running (its result
    kept, never lost), and with room again it is recorded, once."""
    g, mnt = small_disk
    g.start()
    go = tmp_path / "go"
    first = g.submit("--", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; exit 7")
    g.wait_state(first, "Running")
    g.wait_for(lambda: g.job(first)["runner_pid"], what="the runner to be attached")
    os.kill(g.proc.pid, signal.SIGSTOP)
    try:
        go.touch()
        g.wait_for(lambda: not g.job_pids(first), what="the job's process to end")
        time.sleep(0.5 * SLOW)      # its end is told on the runner's socket, unread
        fill(mnt / "filler")
        sub = subprocess.Popen([str(g.build / "gbatch"), "true"], env=g.env, cwd=g.tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3 * SLOW)
    finally:
        os.kill(g.proc.pid, signal.SIGCONT)
    out, err = sub.communicate(timeout=30 * SLOW)
    assert sub.returncode != 0 and "disk full" in err, (out, err)
    time.sleep(SLOW)
    j = g.job(first)
    assert j["state"] == "Running", j
    st, body = g.api("GET", "/jobs?users=all&fields=id")
    assert [x["id"] for x in body["jobs"]] == [first]
    os.unlink(mnt / "filler")
    j = g.wait_state(first, {"Finished", "Failed"}, timeout=30)
    assert j["state"] == "Failed" and j["exit_code"] == 7, j
    nxt = g.submit("true")
    assert nxt == first + 1
    assert g.wait_state(nxt, {"Finished", "Failed"})["state"] == "Finished"


# ---- cascades ---------------------------------------------------------------

def submit_dependents(g, root, n, batch=5000):
    ids = []
    while len(ids) < n:
        k = min(batch, n - len(ids))
        st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"], "depends_on": [root]}] * k,
                                           "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]},
                         timeout=120 * SLOW)
        assert st == 201, body
        ids += [j["id"] for j in body["jobs"]]
    return ids


def cancel_in_background(g, root):
    out = {}

    def run():
        try:
            out["answer"] = g.api("POST", "/jobs/cancel", {"ids": [root]}, timeout=300 * SLOW)
        except OSError as e:
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


def wait_cascade_under_way(g, t, root, last):
    """Until the root is recorded cancelled while its last dependent still
    waits: the cascade is under way."""
    while t.is_alive():
        if g.job(root)["state"] == "Cancelled":
            return g.job(last)["state"] == "Queued" and t.is_alive()
    return False


def test_cancel_cascade_of_100k_dependents_lets_other_requests_through(gflow):
    g = gflow
    g.start()
    root = g.submit("--hold", "true")
    ids = submit_dependents(g, root, 100000)
    t, out = cancel_in_background(g, root)
    assert wait_cascade_under_way(g, t, root, ids[-1]), "the cascade was never seen under way"
    # /health is answered while the cascade goes on: its last dependent is
    # still waiting after the answer (how many answers fit in depends only
    # on how fast the cascade is, so one is what is asked)
    assert g.api("GET", "/health")[0] == 200
    assert g.job(ids[-1])["state"] == "Queued", "the cascade ended before /health was answered"
    t.join()
    st, body = out["answer"]
    assert st == 200 and body["cancelled"] == [root] and not body["errors"], body
    assert sorted(body["dependents"]) == ids
    st, body = g.api("GET", "/jobs?users=all&fields=id,state,reason")
    got = {j["id"]: (j["state"], j["reason"]) for j in body["jobs"]}
    want = ("Cancelled", f"DependencyFailed:{root}")
    assert all(got[i] == want for i in ids), [(i, got[i]) for i in ids if got[i] != want][:5]


def test_a_cascade_cut_short_by_a_crash_is_finished_at_the_next_start(gflow):
    g = gflow
    g.start()
    root = g.submit("--hold", "true")
    mid = g.submit("--depends-on", str(root), "--hold", "true")
    ids = submit_dependents(g, mid, 100000)
    t, out = cancel_in_background(g, root)
    assert wait_cascade_under_way(g, t, root, ids[-1])
    g.kill9()
    t.join()
    g.start()

    def done():
        st, body = g.api("GET", "/jobs?users=all&states=Queued,Hold&fields=id")
        return st == 200 and not body["jobs"]

    g.wait_for(done, timeout=60, what="every dependent to be cancelled")
    st, body = g.api("GET", "/jobs?users=all&fields=id,state,reason")
    got = {j["id"]: (j["state"], j["reason"]) for j in body["jobs"]}
    assert got[root] == ("Cancelled", "CancelledByUser")
    assert got[mid] == ("Cancelled", f"DependencyFailed:{root}")
    want = ("Cancelled", f"DependencyFailed:{mid}")
    assert all(got[i] == want for i in ids), [(i, got[i]) for i in ids if got[i] != want][:5]


def test_dry_run_and_redo_cascade_follow_the_dependents(gflow):
    g = gflow
    g.start()
    a = g.submit("--hold", "true")
    b = g.submit("--depends-on", str(a), "true")
    c = g.submit("--depends-on", str(b), "--hold", "true")
    d = g.submit("--depends-on-any", f"{a},{c}", "true")
    keep = g.submit("--depends-on", str(a), "--no-auto-cancel", "true")
    st, body = g.api("POST", "/jobs/cancel", {"ids": [a], "dry_run": True})
    assert st == 200 and body["cancelled"] == [a] and sorted(body["dependents"]) == [b, c, d]
    assert g.job(a)["state"] == "Hold"
    st, body = g.api("POST", "/jobs/cancel", {"ids": [a]})
    assert st == 200 and sorted(body["dependents"]) == [b, c, d], body
    assert g.job(keep)["state"] == "Queued"
    st, body = g.api("POST", "/jobs/redo", {"id": a, "cascade": True})
    assert st == 201, body
    assert sorted(j["redo_of"] for j in body["jobs"]) == [a, b, c, d]


# ---- a damaged store --------------------------------------------------------

def rows(g):
    with sqlite3.connect(g.data / "gflow.db") as db:
        return dict(db.execute("SELECT id, data FROM jobs"))


def test_unreadable_rows_are_set_aside_and_everything_else_runs(gflow):
    g = gflow
    g.start()
    bad_state = g.submit("--name", "first", "true")
    held = g.submit("--hold", "true")
    not_json = g.submit("true")
    for j in (bad_state, not_json):
        g.wait_state(j, "Finished")
    g.stop()
    with sqlite3.connect(g.data / "gflow.db") as db:
        db.execute("UPDATE jobs SET data = json_set(data, '$.state', 'Exploded') WHERE id = ?", (bad_state,))
        db.execute("UPDATE jobs SET data = '{\"state\": \"Finished\", truncated' WHERE id = ?", (not_json,))
    damaged = rows(g)

    g.start()
    for j in (bad_state, not_json):
        job = g.job(j)
        assert (job["state"], job["reason"]) == ("Failed", "SystemError: unreadable record"), job
        r = g.cli("gjob", "show", j, check=True)
        assert "unreadable record" in r.stdout
        assert f"job {j}: unreadable record" in g.daemon_log()
    assert g.job(bad_state)["name"] == "first"
    r = g.cli("gqueue", "-a", check=True)
    assert str(bad_state) in r.stdout and str(not_json) in r.stdout
    r = g.cli("gflowd", "status", check=True)
    line = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("unreadable:")]
    assert line and f" {bad_state}" in line[0] and f" {not_json}" in line[0], r.stdout
    st, info = g.api("GET", "/info")
    assert info["unreadable_jobs"] == [bad_state, not_json]
    # the rest goes on: release, run, submit, redo refused in plain words
    g.cli("gjob", "release", held, check=True)
    g.wait_state(held, "Finished")
    new = g.submit("true")
    assert new > not_json
    g.wait_state(new, "Finished")
    r = g.cli("gjob", "redo", bad_state)
    assert r.returncode != 0 and "unreadable" in r.stderr
    g.stop()
    now = rows(g)
    assert now[bad_state] == damaged[bad_state] and now[not_json] == damaged[not_json]


def test_ids_continue_past_the_logs_of_a_replaced_store(gflow):
    g = gflow
    g.start()
    first = g.submit("sh", "-c", "echo first")
    g.wait_state(first, "Finished")
    g.stop()
    for suffix in ("", "-wal", "-shm"):
        p = g.data / f"gflow.db{suffix}"
        if p.exists():
            p.unlink()
    (g.data / "run" / "7.1").mkdir()	# a run directory left by a job the store forgot
    g.start()
    new = g.submit("sh", "-c", "echo second")
    assert new == 8, new
    g.wait_state(new, "Finished")
    assert g.log_of(first) == "first\n"
    assert g.log_of(new) == "second\n"
    assert "new jobs are numbered from 8" in g.daemon_log()
    g.stop()
    g.start()
    assert g.submit("true") == 9
