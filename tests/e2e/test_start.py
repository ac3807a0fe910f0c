"""What the submit → start path does to be quick (issue 13), and that the
guarantees hold: runners are the daemon's children and are collected, a
standby runner takes each start and its job is born inside the job's cgroup,
the store's log is given room, a job
that can start at once is recorded as started in its submission's commit —
and a crash right after that commit starts it once."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest


def zombies_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if fields[0] == b"Z" and int(fields[1]) == pid:
            out.append(int(d))
    return out


def test_runners_are_the_daemons_children_and_are_collected(gflow_exec):
    g = gflow_exec
    g.start()
    ids = [g.submit("true") for _ in range(3)]
    for jid in ids:
        g.wait_state(jid, "Finished")
    if g.env["GFLOW_EXECUTOR__TYPE"] == "process":
        slow = g.submit("sleep", "30")
        g.wait_for(lambda: g.job(slow)["runner_pid"], what="the runner")
        with open(f"/proc/{g.job(slow)['runner_pid']}/stat", "rb") as f:
            assert int(f.read().rpartition(b")")[2].split()[1]) == g.proc.pid
        g.cli("gcancel", slow, check=True)
        g.wait_state(slow, "Cancelled")
    # every runner (and every other child) that ended is collected
    g.wait_for(lambda: not zombies_of(g.proc.pid), timeout=10, what="no zombie children")


def test_a_job_is_born_inside_its_group_and_the_standby_runner_supervises_it(gflow, tmp_path):
    # The process executor hands each start to a runner started ahead
    # (--standby): the job is born in its cgroup v2 group (clone3), the
    # runner stays where the daemon is; once used, another standby is made.
    g = gflow
    g.start()
    info = g.api("GET", "/info")[1]["tracking"]
    if info["method"] != "cgroup2":
        pytest.skip("no cgroup v2 tracking here")
    g.wait_for(lambda: standbys(g), what="a standby runner")
    first = standbys(g)
    pidfile = tmp_path / "pid"
    jid = g.submit("sh", "-c", f"echo $$ > {pidfile}; exec sleep 30")
    g.wait_for(lambda: g.job(jid)["runner_pid"] and pidfile.exists() and pidfile.read_text().strip(),
               what="the job")
    runner = g.job(jid)["runner_pid"]
    assert runner in first
    with open(f"/proc/{runner}/cmdline", "rb") as f:     # what ps shows of it now
        assert f.read().split(b"\0")[1] == f"--job {jid}".encode()
    with open(f"/proc/{pidfile.read_text().strip()}/cgroup") as f:
        v2 = [ln.split("::", 1)[1].strip() for ln in f if ln.startswith("0::")][0]
    assert os.path.basename(v2).startswith(f"job-{jid}."), v2
    assert info["cgroup"].endswith(os.path.dirname(v2)), (info, v2)
    g.wait_for(lambda: set(standbys(g)) - set(first), what="the next standby runner")
    nxt = standbys(g)
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")
    g.stop()
    assert not [p for p in nxt if os.path.exists(f"/proc/{p}")]    # gone with the daemon


def test_a_start_takes_a_run_directory_and_log_made_ahead(gflow):
    # Making an inode is the slow part of a start here: the daemon keeps an
    # empty run directory and log ready (names with a dot: no job's) and a
    # start renames them into place; it makes the next ones a moment later.
    g = gflow
    g.start()
    run, logs = g.data / "run", g.data / "logs"
    g.wait_for(lambda: (run / ".spare").is_dir() and (logs / ".spare.log").is_file(), what="the spares")
    spare_dir, spare_log = (run / ".spare").stat().st_ino, (logs / ".spare.log").stat().st_ino
    jid = g.submit("sh", "-c", "echo hello; exec sleep 30")
    g.wait_for(lambda: (logs / f"{jid}.log").exists() and g.log_of(jid) == "hello\n", what="the job's output")
    assert (logs / f"{jid}.log").stat().st_ino == spare_log
    assert [d.name for d in run.iterdir() if d.stat().st_ino == spare_dir] == [f"{jid}.1"]
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")
    g.wait_for(lambda: (run / ".spare").is_dir() and (logs / ".spare.log").is_file(), what="the next spares")
    assert (logs / ".spare.log").stat().st_ino != spare_log and (logs / ".spare.log").stat().st_size == 0
    # a log that is there already is still never written into, spare or
    # not: the job's log gets the next free name (issue 26, item 6)
    (logs / f"{jid + 1}.log").write_text("an older job's\n")
    nxt = g.submit("echo", "mine")
    assert nxt == jid + 1
    job = g.wait_state(nxt, "Finished")
    assert job["log_path"] == str(logs / f"{nxt}.1.log")
    assert (logs / f"{nxt}.log").read_text() == "an older job's\n"
    assert (logs / f"{nxt}.1.log").read_text() == "mine\n"


@pytest.mark.parametrize("spare", [False, True])
def test_a_log_the_runner_makes_never_follows_a_link_planted_at_its_name(gflow, tmp_path, spare):
    # With no spare log ready (a burst of starts uses it up) the runner makes
    # the job's first log, with the first free name; a link planted at the
    # name is passed over, never followed, spare or not.
    g = gflow
    g.start()
    logs = g.data / "logs"
    g.wait_for(lambda: (logs / ".spare.log").is_file(), what="the spare log")
    if not spare:
        (logs / ".spare.log").unlink()
    target = tmp_path / "target"
    target.write_text("not the job's\n")
    first = g.submit("echo", "one")
    g.wait_state(first, "Finished")
    assert g.log_of(first) == "one\n"
    # the start took the spare run directory: the spares are made again
    g.wait_for(lambda: (g.data / "run" / ".spare").is_dir() and (logs / ".spare.log").is_file(),
               what="the next spares")
    if not spare:
        (logs / ".spare.log").unlink()
    os.symlink(target, logs / f"{first + 1}.log")
    nxt = g.submit("echo", "mine")
    assert nxt == first + 1
    job = g.wait_state(nxt, "Finished")
    assert job["log_path"] == str(logs / f"{nxt}.1.log")
    assert (logs / f"{nxt}.1.log").read_text() == "mine\n"
    assert target.read_text() == "not the job's\n"
    assert os.path.islink(logs / f"{nxt}.log")
    # a burst: each job's log is its own, whoever made it
    r = g.cli("gbatch", "--array", "1-20", "sh", "-c", "echo task $GFLOW_ARRAY_TASK_ID", check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")]
    assert len(ids) == 20
    for k, i in enumerate(ids):
        g.wait_state(i, "Finished")
        assert g.log_of(i) == f"task {k + 1}\n"


def test_under_tmux_the_spare_run_directory_brings_the_jobs_list_files(gflow_exec):
    # A runner under tmux reads the job's environment and command from its
    # run directory: the spare holds those files too, empty, for the start
    # to fill (no new inode on its path); the standby path needs none. Every
    # spare holds an empty runner file, which the runner writes in place.
    g = gflow_exec
    g.start()
    spare = g.data / "run" / ".spare"
    g.wait_for(lambda: spare.is_dir(), what="the spare run directory")
    tmux = g.env["GFLOW_EXECUTOR__TYPE"] == "tmux"
    want = ["argv", "env", "runner", "spec"] if tmux else ["runner"]

    def names():
        # a start renames the spare away; the next one follows a moment later
        try:
            return sorted(p.name for p in spare.iterdir())
        except FileNotFoundError:
            return None
    g.wait_for(lambda: names() == want, what=f"{want} in the spare")
    assert all(p.stat().st_size == 0 for p in spare.iterdir())
    jid = g.submit("sh", "-c", "echo job $GFLOW_JOB_ID")
    g.wait_state(jid, "Finished")
    assert g.log_of(jid) == f"job {jid}\n"
    g.wait_for(lambda: names() == want, what="the next spare")


def tmux_sessions(g):
    """{session name: pane pid} on the daemon's tmux server."""
    r = subprocess.run(["tmux", "-S", str(g.runtime / "gflow" / "tmux.sock"), "list-sessions", "-F",
                        "#{session_name} #{pane_pid}"], capture_output=True, text=True)
    return dict(line.split() for line in r.stdout.splitlines())


def exited(pid):
    """Gone, or a zombie its parent (here tmux's server) has yet to collect."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def tmux_standby(g):
    return [(n, int(p)) for n, p in tmux_sessions(g).items() if n.startswith("gflow-standby-")]


def hand_to_standby(g):
    """Waits for the tmux standby and its FIFO, submits a job that says
    hello and sleeps; (the standby's session name, its pane pid, its FIFO,
    the job's id) once the job said hello."""
    g.wait_for(lambda: tmux_standby(g), what="a standby session")
    (name, pane), = tmux_standby(g)
    fifo = g.runtime / "gflow" / (name.replace("gflow-standby-", "standby-") + ".fifo")
    g.wait_for(lambda: fifo.exists(), what="its FIFO")
    time.sleep(0.3)      # its runner opens the FIFO
    jid = g.submit("sh", "-c", "echo hello; exec sleep 30")
    g.wait_for(lambda: g.log_of(jid) == "hello\n", what="the job")
    return name, pane, fifo, jid


def test_the_tmux_executor_hands_a_start_to_a_session_made_ahead(gflow, tmp_path):
    # A session whose runner waits on a FIFO is made ahead; a start hands it
    # the job and renames it to the job's; the next one is made; it goes
    # with the daemon, and, the daemon killed, goes by itself.
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    name, pane, fifo, jid = hand_to_standby(g)
    assert tmux_sessions(g).get(f"gflow-{jid}") == str(pane)
    # the job's terminal is the pane's, as for a session made for the job
    pane_text = lambda: subprocess.run(["tmux", "-S", str(g.runtime / "gflow" / "tmux.sock"), "capture-pane",
                                        "-p", "-t", f"=gflow-{jid}:"], capture_output=True, text=True).stdout
    g.wait_for(lambda: "hello" in pane_text(), what="the job's output in its pane")
    assert g.job(jid)["runner_pid"] == pane
    with open(f"/proc/{pane}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[1] == f"--job {jid}".encode()
    assert not fifo.exists()
    g.wait_for(lambda: tmux_standby(g) and tmux_standby(g)[0][0] != name, what="the next standby session")
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")
    g.stop()
    assert not tmux_standby(g)
    g.start()
    g.wait_for(lambda: tmux_standby(g), what="a standby session")
    (name, pane), = tmux_standby(g)
    g.kill9()
    g.wait_for(lambda: exited(pane), timeout=10, what="the standby runner gone")


def test_with_a_control_client_that_dies_no_tmux_command_is_lost(gflow, tmp_path):
    # The control client dies before it answers (a tmux server that was
    # exiting, say), and for a while none is started again: the standby's
    # session and its rename to the job's are made with tmux clients instead
    # (lost before, the job's session kept the standby's name, where `gjob
    # attach` could not find it, and no standby was made).
    g = gflow
    wrap = tmp_path / "bin"
    wrap.mkdir()
    (wrap / "tmux").write_text('#!/bin/sh\n'
                               'for a; do [ "$a" = -C ] && { sleep 0.3; exit 1; }; done\n'
                               f'exec {shutil.which("tmux")} "$@"\n')
    (wrap / "tmux").chmod(0o755)
    g.env["PATH"] = f"{wrap}:{g.env['PATH']}"
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    g.wait_for(lambda: "control client" in g.daemon_log(), what="the control client's death")
    name, pane, fifo, jid = hand_to_standby(g)
    g.wait_for(lambda: tmux_sessions(g).get(f"gflow-{jid}") == str(pane), what="the session renamed to the job's")
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")


def test_a_start_a_standby_never_takes_is_made_again_and_runs_once(gflow, tmp_path):
    # The standby runner stopped (the start is handed to it all the same):
    # after a few seconds without its announcement the daemon claims the run
    # and starts the job again; let go, the old runner finds no run to take.
    g = gflow
    g.start()
    want = standby_count()
    g.wait_for(lambda: len(standbys(g)) >= want, what="the standby runners")
    olds = standbys(g)
    for old in olds:
        os.kill(old, signal.SIGSTOP)
    count = tmp_path / "count"
    try:
        jid = g.submit("sh", "-c", f"echo ran >> {count}")
        assert g.wait_state(jid, "Finished", timeout=30)["state"] == "Finished"
    finally:
        for old in olds:
            os.kill(old, signal.SIGCONT)
    g.wait_for(lambda: any(exited(old) for old in olds), what="the old runner gone")
    assert count.read_text() == "ran\n"
    assert f"job {jid}: the standby runner did not take the start within" in g.daemon_log()
    assert g.job(jid)["runner_pid"] not in olds


def standby_count():
    """How many standby runners a daemon keeps: two a CPU, up to 4."""
    return min(2 * (os.cpu_count() or 1), 4)


def standbys(g):
    """Pids of the daemon's idle standby runners."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if argv[1:2] == [b"--standby"] and argv[0].endswith(b"gflow-runner") and g.proc and ppid == g.proc.pid:
            out.append(int(d))
    return out


def test_the_write_ahead_log_gets_room_and_a_kill_loses_nothing(gflow):
    g = gflow
    g.start()
    wal = g.data / "gflow.db-wal"
    assert wal.stat().st_size >= 1100 * 4096
    ids = [g.submit("--hold", "true") for _ in range(5)]
    g.kill9()
    g.start()
    assert [g.job(j)["state"] for j in ids] == ["Hold"] * 5
    assert g.submit("--hold", "true") == ids[-1] + 1


# A runner that kills the daemon as it is given a job: started by the
# daemon with the job's options, or as the standby runner (--standby) when
# the job's options arrive on its stdin (an empty stdin: the daemon stopped).
FAKE_RUNNER = """#!/bin/sh
if [ "$1" = --standby ]; then
    [ -n "$(tr '\\0' ' ')" ] || exit 0
fi
kill -9 $PPID
"""


def start_with_runner(g, tmp_path, text, **env):
    """The daemon started with the script `text` as its runner (GFLOW_RUNNER)
    and env added to its environment."""
    fake = tmp_path / "fake-runner"
    fake.write_text(text)
    fake.chmod(0o755)
    g.env.update(GFLOW_RUNNER=str(fake), **env)
    g.start()


def submit_and_lose_the_daemon(g, count):
    """Submits a job that appends a line to count each time it runs; the
    fake runner kills the daemon as it is handed the job. Returns the job's
    id; the next start of the daemon has the real runner."""
    g.cli("gbatch", "sh", "-c", f"echo ran >> {count}")
    g.proc.wait(timeout=20)
    g.proc = None
    del g.env["GFLOW_RUNNER"]
    return 1


def test_a_crash_between_the_start_commit_and_the_runner_starts_the_job_once(gflow, tmp_path):
    g = gflow
    start_with_runner(g, tmp_path, FAKE_RUNNER)     # the daemon dies as it launches
    count = tmp_path / "count"
    # the runner is launched before the answer: gbatch may get none, but
    # the job is on disk (recorded as started) before the runner exists
    jid = submit_and_lose_the_daemon(g, count)
    g.start()
    assert g.wait_state(jid, "Finished")["state"] == "Finished"
    assert count.read_text() == "ran\n"
    g.stop()
    g.start()       # and once only, also after another restart
    assert g.job(jid)["state"] == "Finished" and count.read_text() == "ran\n"


# A standby runner given a held start (--hold: the job may exec only once
# the daemon has synced the commit that started it) that announces itself,
# kills the daemon before the byte that would let the job go, and once the
# next daemon has found it (FAKE_GO exists) takes its announcement back and
# exits, as gflow-runner does when the daemon goes without that byte. A
# runner of its own is the real one.
FAKE_HELD = """#!/usr/bin/python3
import os, sys, time
if sys.argv[1:2] != ["--standby"]:
    os.execv(os.environ["REAL_RUNNER"], ["gflow-runner"] + sys.argv[1:])
open(os.environ["FAKE_GO"] + ".ready", "w").close()
buf = b""
while b"\\0\\0" not in buf:
    more = os.read(0, 65536)
    if not more:
        sys.exit(0)
    buf += more
words = buf.split(b"\\0")
assert b"--hold" in words, words
d = words[words.index(b"--dir") + 1].decode()
with open("/proc/self/stat") as f:
    ticks = f.read().rpartition(")")[2].split()[19]
# announced as the runner does: in place into the empty runner file the
# spare or kept run directory holds
with open(d + "/runner", "r+") as f:
    assert f.read() == ""
    f.write(f"pid={os.getpid()}\\nstart_ticks={ticks}\\nstarted_at={time.time():.6f}\\n")
os.kill(os.getppid(), 9)
while not os.path.exists(os.environ["FAKE_GO"]):
    time.sleep(0.01)
os.unlink(d + "/runner")
"""


def test_a_held_start_given_up_by_its_runner_queues_the_job_again(gflow, tmp_path):
    g = gflow
    go = tmp_path / "go"
    start_with_runner(g, tmp_path, FAKE_HELD, FAKE_GO=str(go), REAL_RUNNER=str(g.build / "gflow-runner"))
    g.wait_for(lambda: os.path.exists(f"{go}.ready"), what="the standby runner")
    count = tmp_path / "count"
    jid = submit_and_lose_the_daemon(g, count)
    g.start()
    # the next daemon finds the runner, which then gives the start up: the
    # job never ran, so it queues again and runs, once
    g.wait_for(lambda: g.job(jid)["runner_pid"] and g.job(jid)["runner_pid"] != g.proc.pid, what="the runner")
    go.touch()
    assert g.wait_state(jid, "Finished")["state"] == "Finished"
    assert count.read_text() == "ran\n"


def _stored_boot(g):
    db = sqlite3.connect(g.data / "gflow.db")
    try:
        row = db.execute("SELECT value FROM settings WHERE key = 'boot_id'").fetchone()
        return row and row[0]
    finally:
        db.close()


def test_after_a_machine_restart_a_job_caught_starting_is_failed_not_run_again(gflow, tmp_path):
    # The runner's file is not synced: after a machine crash its absence
    # does not prove the job never ran. Seen as a restart of the machine
    # (another boot id stored), a job recorded as started with no runner
    # file ends, with the reason, instead of being queued again.
    g = gflow
    start_with_runner(g, tmp_path, FAKE_RUNNER)
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert _stored_boot(g) == boot
    count = tmp_path / "count"
    submit_and_lose_the_daemon(g, count)
    db = sqlite3.connect(g.data / "gflow.db")
    with db:
        db.execute("UPDATE settings SET value = 'an-earlier-boot' WHERE key = 'boot_id'")
    db.close()
    g.start()
    job = g.wait_state(1, "Failed")
    assert "machine restarted" in json.dumps(job), job
    assert _stored_boot(g) == boot
    g.stop()
    g.start()
    assert g.job(1)["state"] == "Failed" and not count.exists()


def test_a_runner_that_cannot_be_run_is_said_once_per_try_and_fails_the_job_not_the_daemon(gflow, tmp_path):
    # A standby whose exec fails (clone3 with CLONE_VM: spawn.c) is said in
    # the log, naming the file and why, and none is there; the job's start
    # makes a runner of its own, whose exec fails too: the job fails with
    # the reason, the daemon goes on and does not loop on it.
    g = gflow
    runner = tmp_path / "not-executable"
    runner.write_text("#!/bin/sh\nexit 0\n")
    runner.chmod(0o644)
    g.env["GFLOW_RUNNER"] = str(runner)
    g.start()
    jid = g.submit("echo", "never")
    job = g.wait_state(jid, {"Failed", "Finished"}, timeout=30)
    assert job["state"] == "Failed", job
    assert "Permission denied" in (job["reason"] or ""), job
    g.wait_for(lambda: "no standby runner" in g.daemon_log(), what="the standby's failure said")
    assert "Permission denied" in g.daemon_log()
    # a few tries, not a loop: each start makes at most its standbys again
    time.sleep(0.5)
    tries = g.daemon_log().count("no standby runner")
    assert 0 < tries <= 2 * 4, g.daemon_log()[-2000:]
    assert g.api("GET", "/health")[0] == 200
