"""Supervision that cannot be lost (issue 9, faults 1-3, 10, 11): the daemon is
the backstop of every runner. A job that kills or stops its runner, a runner
killed from outside, a run directory removed under a job, a planted link, a tmux
server that goes away: each ends with the job's processes gone, its state
recorded truthfully, its GPUs freed only when nothing of it is left, and nothing
run twice.
"""
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SLOW


def runner_of(g, jid):
    return g.wait_for(lambda: g.job(jid)["runner_pid"], what=f"job {jid}'s runner")


def wait_gone(g, jid, timeout=15):
    """Nothing of the job is left, and then (never before) it frees what it held."""
    g.wait_for(lambda: not g.job_pids(jid), timeout=timeout, what=f"job {jid}'s processes to go")
    g.wait_for(lambda: not g.job(jid)["active"], timeout=timeout, what=f"job {jid} to free its resources")


# ---- fault 1: a job cannot escape its supervisor -------------------------------------

def test_job_that_kills_its_runner_is_ended_with_everything_it_left(gflow_exec):
    g = gflow_exec
    g.start()
    jid = g.submit("--time", "0:02", "--", "sh", "-c", "kill -9 $PPID; exec sleep 1000")
    j = g.wait_state(jid, {"Failed", "Timeout"})
    assert j["state"] == "Failed" and j["reason"] == "SystemError:supervisor killed"
    wait_gone(g, jid)


def test_job_that_stops_its_runner_is_ended(gflow):
    g = gflow
    g.start()
    jid = g.submit("--", "sh", "-c", "kill -STOP $PPID; exec sleep 1000")
    j = g.wait_state(jid, {"Failed", "Timeout"})
    assert j["reason"] == "SystemError:supervisor stopped", j
    wait_gone(g, jid)


def test_tmux_wakes_a_stopped_runner_and_the_job_stays_supervised(gflow):
    """tmux continues a pane's stopped process at once, so under tmux a
    stopped runner goes on supervising: a cancel still ends everything."""
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    jid = g.submit("--", "sh", "-c", "kill -STOP $PPID; exec sleep 1000")
    g.wait_state(jid, "Running")
    runner = runner_of(g, jid)
    time.sleep(2.5 * SLOW)      # past the daemon's checks of a stopped runner
    assert Path(f"/proc/{runner}/stat").read_text().rpartition(")")[2].split()[0] != "T"
    assert g.job(jid)["state"] == "Running"
    g.cli("gcancel", str(jid), check=True)
    g.wait_state(jid, "Cancelled")
    wait_gone(g, jid)


def test_stopped_runner_past_the_time_limit_is_a_timeout(gflow):
    g = gflow
    g.start()
    jid = g.submit("--time", "0:01", "--", "sh", "-c", "kill -STOP $PPID; exec sleep 1000")
    j = g.wait_state(jid, {"Failed", "Timeout"})
    assert j["state"] == "Timeout" and "gflowd" in j["reason"], j
    wait_gone(g, jid)


def test_runner_killed_from_outside_frees_its_gpu_only_when_the_job_is_gone(gflow_exec, tmp_path):
    g = gflow_exec
    g.gpus(1)
    g.start()
    # The job ignores SIGTERM and forks a grandchild that leaves its session.
    a = g.submit("--gpus", "1", "--", "sh", "-c",
                 "trap '' TERM; setsid sh -c 'trap \"\" TERM; exec sleep 1000' & exec sleep 1000")
    b = g.submit("--gpus", "1", "--", "sh", "-c", "echo second")
    g.wait_state(a, "Running")
    g.wait_for(lambda: len(g.job_pids(a)) >= 2, what="both processes of the first job")
    os.kill(runner_of(g, a), signal.SIGKILL)
    # Whenever the second job is seen running, nothing of the first is left.
    deadline = time.time() + 20 * SLOW
    while g.job(b)["state"] != "Finished":
        if g.job(b)["state"] == "Running" or g.job(b)["gpu_ids"]:
            assert not g.job_pids(a), "job 2 started on the GPU while job 1 still ran"
        assert time.time() < deadline, g.daemon_log()
        time.sleep(0.01)
    j = g.job(a)
    assert j["state"] == "Failed" and j["reason"] == "SystemError:supervisor killed"
    assert not g.job_pids(a)


def test_job_that_starts_its_own_tmux_server_leaves_nothing(gflow_exec):
    g = gflow_exec
    g.start()
    jid = g.submit("--", "sh", "-c", "tmux new-session -d -s inner 'exec sleep 1000' && echo started")
    g.wait_state(jid, "Finished")
    assert "started" in g.log_of(jid)
    wait_gone(g, jid)
    assert subprocess.run(["tmux", "has-session", "-t", "=inner"], env=g.env,
                          capture_output=True).returncode != 0


# ---- fault 2: never twice, even when the run directory is lost ------------------------

def started_twice_job(tmp_path):
    """A job that counts its starts in a file and waits for a 'go' file."""
    return ["sh", "-c", f"echo start >> {tmp_path}/starts; "
                        f"while [ ! -e {tmp_path}/go ]; do sleep 0.05; done; echo done"]


def test_run_directory_removed_then_restart_does_not_run_the_job_twice(gflow_exec, tmp_path):
    g = gflow_exec
    g.start()
    jid = g.submit("--", *started_twice_job(tmp_path))
    g.wait_for(lambda: (tmp_path / "starts").exists(), what="the job to start")
    for d in (g.data / "run").glob(f"{jid}.*"):
        shutil.rmtree(d)
    g.stop()
    g.start()
    time.sleep(1.5 * SLOW)      # a pass or two, where a second start would happen
    assert (tmp_path / "starts").read_text() == "start\n"
    assert g.job(jid)["state"] == "Running"
    (tmp_path / "go").touch()
    j = g.wait_state(jid, {"Finished", "Failed"})
    assert j["state"] == "Finished" and j["exit_code"] == 0, j
    assert (tmp_path / "starts").read_text() == "start\n"


def test_run_directory_removed_under_a_job_keeps_its_exit_status(gflow_exec, tmp_path):
    g = gflow_exec
    g.start()
    jid = g.submit("--", *started_twice_job(tmp_path))
    g.wait_for(lambda: (tmp_path / "starts").exists(), what="the job to start")
    for d in (g.data / "run").glob(f"{jid}.*"):
        shutil.rmtree(d)
    (tmp_path / "go").touch()
    j = g.wait_state(jid, {"Finished", "Failed"})
    assert j["state"] == "Finished" and j["exit_code"] == 0, j


def test_lost_supervisor_found_at_restart_is_ended_not_restarted(gflow, tmp_path):
    g = gflow
    g.start()
    jid = g.submit("--", *started_twice_job(tmp_path))
    g.wait_for(lambda: (tmp_path / "starts").exists(), what="the job to start")
    runner = runner_of(g, jid)
    g.kill9()
    os.kill(runner, signal.SIGKILL)
    for d in (g.data / "run").glob(f"{jid}.*"):
        shutil.rmtree(d)
    g.start()
    j = g.wait_state(jid, {"Failed"})
    # "lost" when found dead at the start, "killed" when still a zombie then
    assert j["reason"].startswith(("SystemError:supervisor lost", "SystemError:supervisor killed")), j
    wait_gone(g, jid)
    time.sleep(0.5 * SLOW)
    assert (tmp_path / "starts").read_text() == "start\n"


def test_result_lost_while_the_daemon_was_down_is_a_system_error(gflow, tmp_path):
    g = gflow
    g.start()
    jid = g.submit("--", *started_twice_job(tmp_path))
    g.wait_for(lambda: (tmp_path / "starts").exists(), what="the job to start")
    runner_of(g, jid)
    g.stop()
    (tmp_path / "go").touch()
    g.wait_for(lambda: not g.job_pids(jid) and not any((g.data / "run").glob(f"{jid}.*/runner.tmp")),
               what="the job to end")
    time.sleep(0.3)
    for d in (g.data / "run").glob(f"{jid}.*"):
        shutil.rmtree(d)
    g.start()
    j = g.wait_state(jid, {"Failed", "Finished"})
    assert j["state"] == "Failed" and j["reason"].startswith("SystemError:result lost"), j
    assert (tmp_path / "starts").read_text() == "start\n"


# ---- fault 3: the tmux executor never fails a short job --------------------------------

def test_back_to_back_short_jobs_under_tmux_never_fail(gflow):
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    ids = [g.submit("--", "sh", "-c", "sleep 0.05") for _ in range(150)]
    g.wait_for(lambda: all(g.job(i)["state"] not in ("Queued", "Running") for i in ids[-5:]),
               timeout=120, what="the jobs to end")
    jobs = g.api("GET", "/jobs?users=all")[1]["jobs"]
    bad = [(j["id"], j["state"], j["reason"]) for j in jobs if j["state"] != "Finished"]
    assert not bad


def control_clients(g):
    """The daemon's tmux control clients (tmuxctl.c): its children `tmux … -C …`
    (the tmux server such a client started has the same command line)."""
    sock = str(g.runtime / "gflow" / "tmux.sock")
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if (b"-C" in argv and sock.encode() in argv and argv[0].endswith(b"tmux")
                and int(stat[1]) == g.proc.pid and stat[0] != b"Z"):
            found.append(int(d))
    return found


def tmux_server_gone(sock):
    """No tmux server answers on sock, nor is one still exiting there."""
    err = subprocess.run(["tmux", "-S", sock, "has-session"], capture_output=True, text=True).stderr
    return "no server running" in err or "error connecting" in err


def test_tmux_sessions_made_by_the_control_client_and_without_it(gflow):
    """Jobs' sessions are made through one `tmux -C` client of the daemon's;
    when it is killed (or tmux's server is), the next jobs still start."""
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    sock = str(g.runtime / "gflow" / "tmux.sock")
    first = [g.submit("--", "sh", "-c", "sleep 0.2") for _ in range(3)]
    for jid in first:
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
    clients = control_clients(g)
    assert len(clients) == 1, clients
    names = subprocess.run(["tmux", "-S", sock, "list-sessions", "-F", "#{session_name}"],
                           capture_output=True, text=True).stdout.split()
    # the jobs' sessions ended with them; the standby's waits for the next
    assert [n for n in names if not n.startswith("gflow-standby-")] == ["gflow-control"], names
    os.kill(clients[0], signal.SIGKILL)
    # Each client's end is seen by the daemon first: a start before that
    # writes to the dying client and falls back to a tmux client without
    # starting the next one (that start would leave none to count).
    g.wait_for(lambda: g.daemon_log().count("the tmux control client") >= 1, what="the client's end seen")
    again = [g.submit("--", "sh", "-c", "sleep 0.2") for _ in range(3)]
    for jid in again:
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
    g.wait_for(lambda: len(control_clients(g)) == 1, what="a second control client")
    subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
    g.wait_for(lambda: g.daemon_log().count("the tmux control client") >= 2, what="the second client's end seen")
    # ...and the server gone, not exiting: a client that reaches an exiting
    # server dies before it answers (the tests below)
    g.wait_for(lambda: tmux_server_gone(sock), what="tmux's server gone")
    late = [g.submit("--", "sh", "-c", "echo late-$0", str(i)) for i in range(3)]
    for i, jid in enumerate(late):
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
        assert f"late-{i}" in g.log_of(jid)
    g.wait_for(lambda: len(control_clients(g)) == 1, what="a third control client")


def fake_tmux_mute_clients(tmp_path, n):
    """A tmux on PATH whose first n control clients (`-C`) exit before
    they answer, as one started while tmux's server exits does ("server
    exited unexpectedly"); everything else is the real tmux."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    count = tmp_path / "mute"
    (fake / "tmux").write_text(
        "#!/bin/sh\n"
        "for a; do [ \"$a\" = -C ] || continue\n"
        f"  [ $(wc -c < {count} 2>/dev/null || echo 0) -lt {n} ] || break\n"
        f"  printf x >> {count}; echo 'server exited unexpectedly' >&2; exit 1\n"
        "done\n"
        f"exec {shutil.which('tmux')} \"$@\"\n")
    (fake / "tmux").chmod(0o755)
    return fake, count


def test_tmux_control_client_that_died_before_answering_once_is_started_again(gflow, tmp_path):
    """One control client that dies before its first answer (tmux's server
    was exiting as it connected) is no broken tmux: the next start starts
    another at once. Two in a row are: tmux clients for a while, and the
    jobs still run."""
    g = gflow
    fake, count = fake_tmux_mute_clients(tmp_path, 1)
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.env["PATH"] = f"{fake}:{g.env['PATH']}"
    g.start()
    # Its death seen first: a start before that writes to the dying client
    # (and falls back to a tmux client) without starting the next one.
    g.wait_for(lambda: "before its first answer" in g.daemon_log(), what="the first control client's death")
    ids = [g.submit("--", "sh", "-c", "echo ran-$0", str(i)) for i in range(3)]
    for i, jid in enumerate(ids):
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
        assert f"ran-{i}" in g.log_of(jid)
    assert count.read_text() == "x"
    assert len(control_clients(g)) == 1, g.daemon_log()
    assert g.daemon_log().count("before its first answer") == 1


def test_tmux_control_clients_that_die_before_answering_twice_leave_tmux_clients(gflow, tmp_path):
    g = gflow
    fake, count = fake_tmux_mute_clients(tmp_path, 2)
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.env["PATH"] = f"{fake}:{g.env['PATH']}"
    g.start()
    g.wait_for(lambda: "before its first answer" in g.daemon_log(), what="the first control client's death")
    ids = [g.submit("--", "sh", "-c", "echo ran-$0", str(i)) for i in range(3)]
    for i, jid in enumerate(ids):
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
        assert f"ran-{i}" in g.log_of(jid)
    assert count.read_text() == "xx"
    assert not control_clients(g), g.daemon_log()


def test_tmux_words_reach_the_runner_as_they_are(gflow, tmp_path):
    """The control client's line quotes every word (tmux expands nothing in
    it); what it should not carry (bytes beyond ASCII) goes through a tmux
    client of its own. Either way the job runs where it was submitted."""
    g = gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.start()
    dirs = [tmp_path / "it's #{session_name} $HOME ~ ; a", tmp_path / "donn\u00e9es"]
    ids = []
    for d in dirs:
        d.mkdir()
        ids.append(g.submit("--", "sh", "-c", 'pwd; printf "%s|" "$@"', "sh", "#{x}", "a'b", cwd=d))
    for d, jid in zip(dirs, ids):
        assert g.wait_state(jid, "Finished")["state"] == "Finished"
        assert g.log_of(jid).splitlines()[:2] == [str(d), "#{x}|a'b|"], g.log_of(jid)


def test_tmux_failure_says_what_tmux_answered(gflow, tmp_path):
    g = gflow
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "tmux").write_text("#!/bin/sh\necho 'server exploded: no space for panes' >&2\nexit 1\n")
    (fake / "tmux").chmod(0o755)
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    g.env["PATH"] = f"{fake}:{g.env['PATH']}"
    g.start()
    jid = g.submit("true")
    j = g.wait_state(jid, "Failed")
    assert j["reason"] == "SystemError:tmux new-session failed: server exploded: no space for panes", j


# ---- fault 10: links planted under the data directory -----------------------------------

def test_link_planted_at_the_next_log_is_passed_over_and_touches_nothing(gflow_exec, tmp_path):
    g = gflow_exec
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (g.data / "logs" / "2.log").symlink_to(victim)
    jid = g.submit("--", "sh", "-c", "echo mine")
    assert jid == 2
    # the name is taken: the job's log gets the next free one (issue 26, item 6)
    j = g.wait_state(jid, "Finished")
    assert j["log_path"] == str(g.data / "logs" / "2.1.log")
    assert (g.data / "logs" / "2.1.log").read_text() == "mine\n"
    assert victim.read_text() == "precious\n"


def test_link_planted_at_the_next_run_directory_fails_the_job_and_touches_nothing(gflow_exec, tmp_path):
    g = gflow_exec
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep").write_text("keep me\n")
    (g.data / "run" / "2.1").symlink_to(target)
    jid = g.submit("--", "sh", "-c", "touch ran")
    assert jid == 2
    j = g.wait_state(jid, "Failed")
    assert "run directory" in j["reason"] and "a symbolic link" in j["reason"], j
    assert (target / "keep").read_text() == "keep me\n"
    assert sorted(p.name for p in target.iterdir()) == ["keep"]
    assert not (tmp_path / "ran").exists()


# ---- fault 11: a new job never writes into an existing log -----------------------------

def test_a_job_never_appends_to_a_log_that_is_already_there(gflow):
    g = gflow
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    old = g.data / "logs" / "2.log"
    old.write_text("an older job's output\n")
    jid = g.submit("--", "echo", "new output")
    assert jid == 2
    j = g.wait_state(jid, {"Failed", "Finished"})
    assert j["state"] == "Finished" and j["log_path"] == str(g.data / "logs" / "2.1.log"), j
    assert old.read_text() == "an older job's output\n"
    assert (g.data / "logs" / "2.1.log").read_text() == "new output\n"


# ---- how processes are tracked -------------------------------------------------------

def test_info_names_how_processes_are_tracked(gflow):
    g = gflow
    g.start()
    t = g.api("GET", "/info")[1]["tracking"]
    assert t["method"] in ("cgroup2", "cgroup1", "session")


@pytest.mark.parametrize("executor", ["process", "tmux"])
def test_session_tracking_ends_a_job_whose_runner_died(gflow, executor):
    """Without cgroups: the marker in each process's environment and the
    processes already seen find what is left of the job."""
    g = gflow
    g.env["GFLOW_TRACKING"] = "session"
    g.env["GFLOW_EXECUTOR__TYPE"] = executor
    g.start()
    assert g.api("GET", "/info")[1]["tracking"]["method"] == "session"
    jid = g.submit("--", "sh", "-c",
                   "setsid sh -c 'exec sleep 1000' & kill -9 $PPID; exec sleep 1000")
    j = g.wait_state(jid, {"Failed"})
    assert j["reason"] == "SystemError:supervisor killed"
    wait_gone(g, jid)


def test_forced_tracking_that_is_not_available_is_refused(gflow):
    g = gflow
    g.env["GFLOW_TRACKING"] = "cgroup7"
    g.start(wait=False)
    assert g.proc.wait(timeout=10 * SLOW) != 0
    assert "GFLOW_TRACKING='cgroup7'" in g.daemon_log()


def test_groups_a_job_made_inside_its_own_go_with_it(gflow):
    """A job may make groups inside its cgroup v2 group: at its end they go
    with it, deepest first (a job's group nearly always goes at the first
    rmdir; one with groups below it does not)."""
    g = gflow
    g.start()
    info = g.api("GET", "/info")[1]["tracking"]
    if info["method"] != "cgroup2":
        pytest.skip("no cgroup v2 tracking here")
    jid = g.submit("sh", "-c", 'd=$(findmnt -n -t cgroup2 -o TARGET | head -1)$(sed -n "s/^0:://p" /proc/self/cgroup); '
                   'mkdir -p "$d/a/b" "$d/c" && echo "$d"')
    g.wait_state(jid, "Finished")
    group = Path(g.log_of(jid).strip())
    assert group.name.startswith(f"job-{jid}.") and str(group).startswith(info["cgroup"]), (group, info)
    g.wait_for(lambda: not group.exists(), what="the job's group and those it made removed")


def test_a_group_left_at_the_next_jobs_name_is_made_again_or_refused_when_it_holds_processes(gflow):
    """The v2 group of a start is made by the standby runner that takes it
    (--make-cgroup) or by the daemon: an empty one left at its name (a
    start that never ran, before a crash) is made again; one with a process
    in it is not the job's, and the start fails without touching it."""
    g = gflow
    g.start()
    info = g.api("GET", "/info")[1]["tracking"]
    if info["method"] != "cgroup2":
        pytest.skip("no cgroup v2 tracking here")
    g.wait_state(g.submit("true"), "Finished")
    left = Path(info["cgroup"]) / "job-2.1"
    left.mkdir()
    assert g.wait_state(g.submit("--", "sh", "-c", "echo ran"), "Finished")["state"] == "Finished"
    assert g.log_of(2) == "ran\n"
    busy = Path(info["cgroup"]) / "job-3.1"
    busy.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        j = g.wait_state(g.submit("true"), "Failed")
        assert "cgroup" in j["reason"] and str(busy) in j["reason"], j
        assert sleeper.poll() is None and (busy / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
    finally:
        sleeper.kill()
        sleeper.wait()
        g.wait_for(lambda: not (busy / "cgroup.procs").read_text().strip(), what="the sleeper gone")
        busy.rmdir()
