"""A runner tells its result on its socket (issue 31): a standby runner of
the process executor sends its job's result to the daemon, which records it
in its next commit and answers; the runner then writes no result file. The
guarantees of the file stay: a daemon that is stopped, killed or refused by
its store gets the result from the file the runner writes when no answer
comes, and loses nothing; the job never holds the socket. And there is a
standby runner per CPU (up to 4), so that short jobs ending one a CPU at a
time each find one."""
import json
import os
import pwd
import signal
import sqlite3
from pathlib import Path

import pytest

from test_start import standby_count, standbys
from test_trace import read_trace


def steps_of(trace, jid):
    return [s for _, s, j in read_trace(trace) if j == str(jid)]


def traced(g, standby=True):
    trace = g.tmp / "trace"
    g.env["GFLOW_TRACE"] = str(trace)
    g.start()
    if standby:
        g.wait_for(lambda: standbys(g), what="a standby runner")
    return trace


def ends_with_the_daemon_stopped(g, tail):
    """A job that runs until the daemon is stopped (SIGSTOP), then ends
    with the shell words tail: its id."""
    flag = g.tmp / "go"
    jid = g.submit("sh", "-c", f"while [ ! -e {flag} ]; do sleep 0.05; done; {tail}")
    g.wait_state(jid, "Running")
    os.kill(g.proc.pid, signal.SIGSTOP)
    flag.touch()
    return jid


def test_a_result_told_on_the_socket_is_recorded_and_no_file_is_written(gflow):
    g = gflow
    trace = traced(g)
    want = standby_count()
    ids = []
    for cmd, state in ((["true"], "Finished"), (["sh", "-c", "exit 7"], "Failed"),
                       (["sh", "-c", "kill -USR1 $$"], "Failed")):
        # each start finds a standby runner (a start without one runs a
        # runner of its own, which writes its file)
        g.wait_for(lambda: len(standbys(g)) >= want, what="the standby runners")
        ids.append(g.submit(*cmd))
        g.wait_state(ids[-1], state)
    ok, bad, killed = ids
    assert g.job(bad)["exit_code"] == 7
    assert g.job(killed)["exit_signal"] == signal.SIGUSR1
    for jid in (ok, bad, killed):
        steps = steps_of(trace, jid)
        assert "result_told" in steps and "result_written" not in steps, steps
        assert "end_commit" in steps, steps
    # and each runner is gone, collected, its run directory recycled
    g.wait_for(lambda: not [d for d in os.listdir(g.data / "run") if not d.startswith(".")],
               what="the run directories recycled")


def test_a_stopped_daemon_gets_the_result_from_the_file_and_loses_nothing(gflow):
    # No answer within 2 s: the runner writes its result file as it always
    # did, so the exit status is not only in its memory while the daemon is
    # stuck; a daemon killed then reads the file at its next start.
    g = gflow
    trace = traced(g)
    jid = ends_with_the_daemon_stopped(g, f"echo ran >> {g.tmp}/count; exit 7")
    try:
        g.wait_for(lambda: (g.data / "run" / f"{jid}.1" / "result").exists(), timeout=20,
                   what="the result file of a runner that got no answer")
        assert "result_told" in steps_of(trace, jid)
    finally:
        g.kill9()
    g.start()
    g.wait_state(jid, "Failed")
    assert g.job(jid)["exit_code"] == 7
    assert (g.tmp / "count").read_text() == "ran\n"


def test_a_daemon_killed_while_a_runner_waits_loses_nothing(gflow):
    # The daemon dies after the runner told it the result and before it
    # answered: the runner sees its socket end and writes the file at once.
    g = gflow
    trace = traced(g)
    jid = ends_with_the_daemon_stopped(g, "exit 3")
    g.wait_for(lambda: "result_told" in steps_of(trace, jid), timeout=20, what="the result told")
    g.kill9()
    g.wait_for(lambda: "result_written" in steps_of(trace, jid), timeout=20, what="the result file written")
    g.start()
    g.wait_state(jid, "Failed")
    assert g.job(jid)["exit_code"] == 3


def test_the_job_never_holds_the_daemons_socket(gflow):
    g = gflow
    g.start()
    g.wait_for(lambda: standbys(g), what="a standby runner")
    jid = g.submit("sh", "-c", "ls -l /proc/$$/fd/")
    g.wait_state(jid, "Finished")
    out = g.log_of(jid)
    assert "socket:" not in out, out
    assert " 0 -> /dev/null" in out, out


def test_there_are_two_standby_runners_a_cpu_up_to_four(gflow):
    g = gflow
    g.start()
    want = standby_count()
    g.wait_for(lambda: len(standbys(g)) >= want, what=f"{want} standby runners")
    jid = g.submit("sleep", "30")
    g.wait_for(lambda: g.job(jid)["runner_pid"], what="the runner")
    g.wait_for(lambda: len(standbys(g)) >= want, what="the standby used made again")
    assert g.job(jid)["runner_pid"] not in standbys(g)
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")
    kept = standbys(g)
    g.stop()
    assert not [p for p in kept if os.path.exists(f"/proc/{p}")]    # gone with the daemon


@pytest.mark.parametrize("executor", ["tmux"])
def test_runners_of_the_tmux_executor_write_their_file(gflow, executor):
    # The tmux standby has no socket of ours (its stdin is a pane): its
    # result comes as a file, as before.
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = executor
    trace = traced(g, standby=False)
    jid = g.submit("sh", "-c", "exit 5")
    g.wait_state(jid, "Failed")
    assert g.job(jid)["exit_code"] == 5
    steps = steps_of(trace, jid)
    assert "result_written" in steps and "result_told" not in steps, steps


def test_a_told_error_with_hostile_bytes_is_one_message(gflow):
    # The command cannot run; its name (a newline, quotes, $( ), a
    # non-ASCII character, 3,000 characters) is in the error the runner
    # tells: it stays one message of one result, cut to the error's room,
    # on one line.
    g = gflow
    trace = traced(g)
    name = "no\nsuch $(touch /tmp/x) 'q' \"d\" \u00ff" + "z" * 3000
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    st, body = g.api("POST", "/jobs", {"jobs": [{"command": [name]}],
                                       "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]})
    assert st == 201, body
    jid = body["jobs"][0]["id"]
    j = g.wait_state(jid, "Failed")
    assert j["exit_code"] == 127, j
    assert j["reason"].startswith("SystemError:cannot run 'no such $(touch /tmp/x)"), j["reason"]
    assert "\n" not in j["reason"] and len(j["reason"]) < 400, j["reason"]
    steps = steps_of(trace, jid)
    assert "result_told" in steps and "result_written" not in steps, steps


def stored_runner_pids(g):
    """{job id: runner_pid} as the store has them (json of each row)."""
    with sqlite3.connect(g.data / "gflow.db") as db:
        return {i: json.loads(d).get("runner_pid") for i, d in db.execute("SELECT id, data FROM jobs")}


def test_runners_pids_are_stored_together_a_moment_later_and_at_a_stop(gflow, tmp_path):
    # A runner seen is not stored in a commit of its own: with the others
    # seen in the next moment (one commit, one sync, for many starts). A
    # daemon killed a moment after has them all; one stopped at once stores
    # them as it stops. Either way a restart finds each job running, once.
    g = gflow
    g.start()
    ran = tmp_path / "ran"
    ids = [g.submit("sh", "-c", f"echo $GFLOW_JOB_ID >> {ran}; exec sleep 60") for _ in range(3)]
    for jid in ids:
        g.wait_state(jid, "Running")
    pids = {jid: g.wait_for(lambda: g.job(jid)["runner_pid"], what="the runner") for jid in ids}
    g.wait_for(lambda: {i: stored_runner_pids(g)[i] for i in ids} == pids, timeout=5,
               what="the runners' pids in the store")
    g.kill9()
    g.start()
    for jid in ids:
        j = g.job(jid)
        assert j["state"] == "Running" and j["runner_pid"] == pids[jid], j
    # stopped right after a start: its runner's pid is stored at the stop
    late = g.submit("sh", "-c", f"echo $GFLOW_JOB_ID >> {ran}; exec sleep 60")
    g.wait_state(late, "Running")
    pid = g.wait_for(lambda: g.job(late)["runner_pid"], what="the runner")
    g.stop()
    assert stored_runner_pids(g)[late] == pid
    g.start()
    assert g.job(late)["state"] == "Running" and g.job(late)["runner_pid"] == pid
    assert sorted(int(x) for x in ran.read_text().split()) == sorted(ids + [late])   # each ran once
    g.cli("gcancel", *map(str, ids + [late]), check=True)


# ---- a runner serves the next job --------------------------------------------------------
# Its job's end recorded, the daemon answers "K" and the runner, done with
# everything of that job, says "r" and waits on its socket as a standby.

def api_job(g, command, cwd, env):
    st, body = g.api("POST", "/jobs", {"jobs": [{"command": command}], "cwd": str(cwd), "env": env})
    assert st == 201, body
    return body["jobs"][0]["id"]


def served_by(g, runner, jobs=8, **kw):
    """Jobs one after another until one is run by `runner`: [(id, n)]."""
    done = []
    for n in range(jobs):
        jid = kw["make"](n)
        g.wait_state(jid, {"Finished", "Failed"})
        done.append((jid, n))
        if g.job(jid)["runner_pid"] == runner:
            return done
    raise AssertionError(f"no job of {done} was run by the runner {runner} back from its job")


def test_a_runner_back_from_its_job_serves_the_next_with_nothing_of_the_last(gflow, tmp_path):
    g = gflow
    trace = traced(g)
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    first_dir = tmp_path / "first"
    first_dir.mkdir()
    script = 'echo "FOO=${FOO-unset} $(pwd)"; ls -l /proc/$$/fd/; exit $CODE'
    env = lambda foo, code: [f"CODE={code}", "PATH=/usr/bin:/bin"] + ([f"FOO={foo}"] if foo else [])
    first = api_job(g, ["sh", "-c", script], first_dir, env("secret-of-the-first", 3))
    assert g.wait_state(first, "Failed")["exit_code"] == 3
    runner = g.job(first)["runner_pid"]
    # back as a standby, what ps shows of it too
    g.wait_for(lambda: runner in standbys(g), what="the runner back as a standby")
    with open(f"/proc/{runner}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[1] == b"--standby"
    dirs = []

    def make(n):
        d = tmp_path / f"next{n}"
        d.mkdir()
        dirs.append(d)
        return api_job(g, ["sh", "-c", script], d, env(None, 0))
    done = served_by(g, runner, make=make)
    jid, n = done[-1]
    j = g.job(jid)
    assert j["state"] == "Finished" and j["exit_code"] == 0, j
    out = g.log_of(jid)
    assert out.splitlines()[0] == f"FOO=unset {dirs[n]}", out
    assert "secret-of-the-first" not in out and "socket:" not in out, out
    fds = [ln.split()[-3] for ln in out.splitlines() if " -> " in ln]
    assert sorted(fds) == ["0", "1", "2", "255"] or sorted(fds) == ["0", "1", "2"], out
    for k in (first, jid):
        steps = steps_of(trace, k)
        assert "result_told" in steps and "result_written" not in steps, steps
    # the first job's run directory went when the runner came back
    g.wait_for(lambda: not (g.data / "run" / f"{first}.1").exists(), what="the first run directory recycled")
    kept = standbys(g)
    g.stop()
    assert not [p for p in kept if os.path.exists(f"/proc/{p}")]    # gone with the daemon


def spare_log_inode(runner, logs):
    """The inode of the unnamed file a runner holds in logs (O_TMPFILE:
    /proc shows it as LOGS/#INODE (deleted)), or None."""
    for fd in os.listdir(f"/proc/{runner}/fd"):
        try:
            target = os.readlink(f"/proc/{runner}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{logs}/#") and target.endswith(" (deleted)"):
            return os.stat(f"/proc/{runner}/fd/{fd}").st_ino
    return None


def test_a_runner_back_from_its_job_links_the_next_log_it_made_ahead(gflow, tmp_path):
    # Back from a job whose log it made, a runner makes an unnamed file in
    # that directory while it waits; the next job it serves gets it as its
    # log, linked at the job's name: no inode is made on the start's path.
    # A name that is taken, by a link too, is passed over as ever.
    g = gflow
    g.start()
    logs = g.data / "logs"
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    (logs / ".spare.log").unlink()      # the daemon's own spare: gone, so the runner makes the log
    first = g.submit("echo", "first")
    g.wait_state(first, "Finished")
    runner = g.job(first)["runner_pid"]
    g.wait_for(lambda: runner in standbys(g), what="the runner back as a standby")
    ino = g.wait_for(lambda: spare_log_inode(runner, logs), what="the spare log it holds")
    target = tmp_path / "target"
    target.write_text("not a log\n")

    last = [first]

    def make(n):
        (logs / ".spare.log").unlink(missing_ok=True)
        os.symlink(target, logs / f"{last[0] + 1}.log")
        last[0] = g.submit("echo", f"job {n}")
        return last[0]
    done = served_by(g, runner, make=make)
    jid, n = done[-1]
    job = g.job(jid)
    assert job["log_path"] == str(logs / f"{jid}.1.log")
    assert os.stat(logs / f"{jid}.1.log").st_ino == ino
    assert (logs / f"{jid}.1.log").read_text() == f"job {n}\n"
    assert os.path.islink(logs / f"{jid}.log") and target.read_text() == "not a log\n"
    assert oct(os.stat(logs / f"{jid}.1.log").st_mode & 0o777) == "0o600"


def test_a_runner_back_from_its_job_ended_by_a_signal_costs_no_start(gflow, tmp_path):
    # A cancel that reaches a runner waiting for its next job ends it, as it
    # ends any standby: the start handed to it (its socket is dead) is made
    # by a runner of its own, and every job runs once.
    g = gflow
    g.start()
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    jid = g.submit("true")
    g.wait_state(jid, "Finished")
    runner = g.job(jid)["runner_pid"]
    g.wait_for(lambda: runner in standbys(g), what="the runner back as a standby")
    os.kill(runner, signal.SIGTERM)
    g.wait_for(lambda: not os.path.exists(f"/proc/{runner}") or runner not in standbys(g),
               what="the runner gone")
    count = tmp_path / "count"
    ids = [g.submit("sh", "-c", f"echo $GFLOW_JOB_ID >> {count}") for _ in range(8)]
    for k in ids:
        assert g.wait_state(k, {"Finished", "Failed"})["state"] == "Finished"
    assert sorted(int(x) for x in count.read_text().split()) == ids
    assert runner not in [g.job(k)["runner_pid"] for k in ids]


def test_a_runner_serves_jobs_of_the_process_executor_only(gflow):
    # Under tmux the runner's stdin is a pane: it writes its file and exits.
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    ids = [g.submit("true") for _ in range(3)]
    runners = [g.wait_state(k, "Finished") and g.job(k)["runner_pid"] for k in ids]
    assert len(set(runners)) == 3, runners


def test_a_runner_back_from_one_users_job_runs_the_next_users_as_that_user(system_gflow):
    # The system daemon's runners stay root: one that ran a's job and came
    # back runs b's as b (uid, groups, HOME, log), holding nothing of a's.
    g = system_gflow
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    first = g.submit_as(a, "sh", "-c", "echo secret-of-a")
    g.wait_state(first, "Finished")
    runner = g.job(first)["runner_pid"]
    g.wait_for(lambda: runner in standbys(g), what="the runner back as a standby")
    script = 'id -u; id -G; echo "$HOME"; ls -l /proc/$$/fd/'
    done = served_by(g, runner, make=lambda n: g.submit_as(b, "sh", "-c", script))
    j = g.job(done[-1][0])
    assert j["state"] == "Finished", j
    log = Path(j["log_path"])
    assert log.stat().st_uid == pwd.getpwnam(b).pw_uid
    out = log.read_text().splitlines()
    want_groups = g.as_user(b, "id", "-G", check=True).stdout.split()
    assert out[0] == str(pwd.getpwnam(b).pw_uid) and sorted(out[1].split()) == sorted(want_groups), out
    assert out[2] == str(g.home_of(b)), out
    assert not [ln for ln in out if "socket:" in ln or "secret" in ln or str(g.home_of(a)) in ln], out


def test_a_runner_that_tells_its_result_has_removed_the_jobs_group_first(gflow):
    # The job and all of it gone, the runner removes its (empty) v2 group
    # before it tells the result, even with the daemon stopped; the daemon,
    # which made the group, takes it as empty and records the end.
    g = gflow
    g.start()
    info = g.api("GET", "/info")[1]["tracking"]
    if info["method"] != "cgroup2":
        pytest.skip("no cgroup v2 tracking here")
    g.wait_for(lambda: len(standbys(g)) >= standby_count(), what="the standby runners")
    jid = ends_with_the_daemon_stopped(g, "exit 3")
    group = f"{info['cgroup']}/job-{jid}.1"
    try:
        g.wait_for(lambda: not os.path.exists(group), timeout=5, what="the group removed by the runner")
    finally:
        os.kill(g.proc.pid, signal.SIGCONT)
    j = g.wait_state(jid, "Failed")
    assert j["exit_code"] == 3 and j["reason"] != "SystemError:supervisor killed", j
