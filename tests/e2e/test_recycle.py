"""A job's run directory, kept when it ends (RUNDIR/.spare.K, its lists
emptied) and taken by a later start instead of a new one: no inode made or
freed for it (issue 31). What a later job gets from it is only the place:
nothing of the earlier job's environment, command or limits."""
import os
import stat
import subprocess
import time

import pytest

from conftest import DirEvents


def kept(g):
    run = g.data / "run"
    return sorted((d for d in run.iterdir() if d.name.startswith(".spare.")), key=lambda d: d.name)


def test_a_kept_run_directory_serves_the_next_start_with_nothing_of_its_job(gflow, tmp_path):
    g = gflow
    g.start()
    r = g.cli("prlimit", "--nofile=200:4096", "--", "gbatch", "sh", "-c", 'echo "$FOO $(ulimit -Sn) $0"', "a0",
              env={"FOO": "first"}, check=True)
    a = int(r.stdout.split()[3])
    g.wait_state(a, "Finished")
    assert g.log_of(a) == "first 200 a0\n"
    g.wait_for(lambda: kept(g), what="the kept run directory")
    d = kept(g)[0]
    # what the start made there (a standby's start has its lists and limits
    # on its socket), emptied, the runner file too (read as none; the next
    # runner writes it in place); the runner's other files (result) gone
    assert {p.name for p in d.iterdir()} <= {"argv", "env", "limits", "runner", "runner.out", "spec"}
    assert "runner" in {p.name for p in d.iterdir()}
    assert all(p.stat().st_size == 0 and stat.S_ISREG(p.lstat().st_mode) for p in d.iterdir())
    ino, runner_ino = d.stat().st_ino, (d / "runner").stat().st_ino
    # a job with no stored limits (an API client's): the empty limits file
    # it finds is none, not the last job's 200
    go = tmp_path / "go"
    st, body = g.api("POST", "/jobs", {
        "jobs": [{"command": ["sh", "-c", f'echo "${{FOO-unset}} $(ulimit -Sn)"; while [ ! -e {go} ]; do '
                              'sleep 0.05; done']}],
        "env": ["PATH=/usr/bin:/bin"], "cwd": str(tmp_path)})
    assert st == 201, body
    b = body["jobs"][0]["id"]
    g.wait_state(b, "Running")
    run_b = g.data / "run" / f"{b}.1"
    g.wait_for(lambda: run_b.exists(), what="b's run directory")
    assert run_b.stat().st_ino == ino          # the kept one, renamed into place
    # b's runner announced itself in the kept runner file: no inode made
    assert (run_b / "runner").stat().st_ino == runner_ino
    assert int(dict(ln.split("=", 1) for ln in (run_b / "runner").read_text().splitlines())["pid"]) > 0
    go.touch()
    g.wait_state(b, "Finished")
    out = g.log_of(b).split()
    assert out[0] == "unset" and out[1] != "200", out
    # and b's directory is kept in its turn
    g.wait_for(lambda: any(k.stat().st_ino == ino for k in kept(g)), what="b's run directory kept")


def test_something_planted_in_a_kept_directory_fails_the_start_not_the_daemon(gflow):
    # Only the daemon and its runners write there. What a standby's start
    # takes on its socket (lists, limits) is never read from there; a
    # runner file with something in it is a claim: nothing runs.
    g = gflow
    g.start()
    a = g.submit("true")
    g.wait_state(a, "Finished")
    g.wait_for(lambda: kept(g), what="the kept run directory")
    d = kept(g)[0]
    (d / "limits").unlink(missing_ok=True)
    os.mkfifo(d / "limits")
    (d / "argv").write_text("rm\0-rf\0/\0")
    b = g.submit("echo", "fine")
    assert g.wait_state(b, {"Failed", "Finished"}, timeout=20)["state"] == "Finished"
    assert g.log_of(b) == "fine\n"
    g.wait_for(lambda: kept(g), what="the kept run directory")
    d = kept(g)[0]
    (d / "runner").write_text("pid=1\n")    # read as a claim: the start is given up
    b = g.submit("echo", "fine")
    job = g.wait_state(b, {"Failed", "Finished"}, timeout=20)
    assert job["state"] == "Failed" and job["reason"].startswith("SystemError:"), job
    assert not (g.data / "logs" / f"{b}.log").exists() or g.log_of(b) == "", g.log_of(b)
    # the daemon goes on: the next start gets a clean directory
    c = g.submit("echo", "after")
    g.wait_state(c, "Finished")
    assert g.log_of(c) == "after\n"


def test_kept_directories_a_stopped_daemon_left_are_removed_at_start(gflow):
    g = gflow
    g.start()
    ids = [g.submit("true") for _ in range(3)]
    for i in ids:
        g.wait_state(i, "Finished")
    g.wait_for(lambda: kept(g), what="kept run directories")
    g.stop()
    left = kept(g)
    assert left
    (left[0] / "stray").write_text("x")
    g.start()
    assert kept(g) == []
    j = g.submit("echo", "ok")
    g.wait_state(j, "Finished")
    assert g.log_of(j) == "ok\n"


def test_many_ends_at_once_keep_every_run_directory_and_free_no_inode(gflow):
    # 80 jobs at once: each run directory is kept (the pool holds 4,096),
    # none removed, so no inode is freed for a later one to scan past
    g = gflow
    g.start()
    run = g.data / "run"
    with DirEvents(run, DirEvents.IN_DELETE) as watch:
        r = g.cli("gbatch", "--array", "1-80", "true", check=True)
        ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")]
        for i in ids:
            g.wait_state(i, "Finished")
        g.wait_for(lambda: not [d for d in run.iterdir() if d.name[0].isdigit()],
                   what="no job's run directory left")
        removed = [name for name, _ in watch.events()]
    assert removed == [], removed
    assert 0 < len(kept(g)) <= 80
    # more starts at once than standbys: some runners wrote a result file,
    # kept as the next one's result.tmp, emptied; nothing else of theirs
    names = [{p.name for p in d.iterdir()} for d in kept(g)]
    assert any("result.tmp" in n for n in names), names
    assert all(n <= {"argv", "env", "limits", "runner", "runner.out", "spec", "result.tmp"} for n in names), names
    assert all(p.stat().st_size == 0 for d in kept(g) for p in d.iterdir())


# ---- ends recorded together ---------------------------------------------------

def runner_pids(g, ids):
    return {i: g.job(i)["runner_pid"] for i in ids}


def exited(pid):
    """Gone, or a zombie its stopped parent (the daemon) has not collected."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(g, pids):
    g.wait_for(lambda: all(exited(p) for p in pids), what="the runners to exit")


def test_ends_that_come_together_are_one_commit_with_the_start_they_make_room_for(gflow, tmp_path):
    # The daemon is stopped (SIGSTOP) while five jobs end: when it goes on,
    # their runners' exits are all there at once and the next pass records
    # the five ends and starts the job that waited for them in one commit.
    g = gflow
    g.start("-vvv")
    go = tmp_path / "go"
    ids = [g.submit("sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done") for _ in range(5)]
    waiting = g.submit("--depends-on-all", ",".join(map(str, ids)), "echo", "after")
    for i in ids:
        g.wait_state(i, "Running")
    pids = list(runner_pids(g, ids).values())
    os.kill(g.proc.pid, 19)       # SIGSTOP
    try:
        go.touch()
        wait_gone(g, pids)
    finally:
        os.kill(g.proc.pid, 18)   # SIGCONT
    for i in ids:
        assert g.wait_state(i, "Finished")["exit_code"] == 0
    g.wait_state(waiting, "Finished")
    assert g.log_of(waiting) == "after\n"
    assert "5 ends recorded in one commit" in g.daemon_log(), g.daemon_log()[-3000:]


def test_a_stop_records_the_ends_still_waiting_for_a_pass(gflow, tmp_path):
    # SIGSTOP, the job ends, SIGCONT and SIGTERM at once: the stop comes
    # before the pass; the end is recorded by the stop, not lost or left
    # for the next start.
    g = gflow
    g.start()
    go = tmp_path / "go"
    j = g.submit("sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done; exit 3")
    g.wait_state(j, "Running")
    pid = g.job(j)["runner_pid"]
    os.kill(g.proc.pid, 19)
    go.touch()
    wait_gone(g, [pid])
    os.kill(g.proc.pid, 15)       # SIGTERM, delivered first when it goes on
    os.kill(g.proc.pid, 18)
    g.proc.wait(timeout=30)
    # recorded by the stop: its run directory went with the record (an end
    # left for the next start would have left it, result and all)
    assert not (g.data / "run" / f"{j}.1").exists()
    g.start()
    job = g.job(j)
    assert job["state"] == "Failed" and job["exit_code"] == 3, job
