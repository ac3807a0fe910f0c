"""The start-latency trace (GFLOW_TRACE, issue 13): with the variable set to an
absolute path, gbatch, a personal gflowd and gflow-runner append one line per
step of submit → start to that file, `<CLOCK_MONOTONIC ns> <step> <id or ->`.
A system daemon ignores it; a relative path or a link there is not used."""
import os
import stat

import pytest

CLIENT = ["client_start", "client_send", "accept", "commit", "reply", "client_exit"]
START = ["reply", "pass", "running_commit", "fork", "runner_start", "exec"]


def read_trace(path):
    rows = []
    for line in path.read_text().splitlines():
        ns, step, jid = line.split(" ")
        rows.append((int(ns), step, jid))
    return rows


def first(rows, step, jid=None):
    for ns, st, j in rows:
        if st == step and (jid is None or j == jid):
            return ns
    raise AssertionError(f"no {step} {jid} in {rows}")


def test_every_step_of_submit_to_start_is_stamped_in_order(gflow_exec):
    g = gflow_exec
    trace = g.tmp / "trace"
    g.env["GFLOW_TRACE"] = str(trace)
    g.start()
    jid = g.submit("true")
    g.wait_state(jid, "Finished")
    g.cli("gqueue", "-a", check=True)     # only gbatch writes client steps
    rows = read_trace(trace)
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    for st in CLIENT[:3]:    # the job has no id yet
        assert [x for _, s, x in rows if s == st] == ["-"], (st, rows)
    j = str(jid)
    for st in CLIENT[3:] + START[1:]:
        assert [x for _, s, x in rows if s == st][:1] == [j], (st, rows)
    # causal order: the client's steps, the daemon's answer, then the start
    # (send() may return after the daemon has read the request)
    for steps in (CLIENT[:2] + CLIENT[-1:], CLIENT[:1] + CLIENT[2:]):
        t = [first(rows, st, None if st in CLIENT[:3] else j) for st in steps]
        assert t == sorted(t), rows
    t = [first(rows, st, j) for st in START]
    assert t == sorted(t), rows


def test_a_relative_path_or_a_link_is_not_used_and_jobs_still_run(gflow):
    g = gflow
    target = g.tmp / "elsewhere"
    link = g.tmp / "trace-link"
    link.symlink_to(target)
    g.env["GFLOW_TRACE"] = str(link)
    g.start()
    jid = g.submit("true")
    g.wait_state(jid, "Finished")
    assert not target.exists()
    jid = g.submit("true", env={"GFLOW_TRACE": "trace-rel"})
    g.wait_state(jid, "Finished")
    assert not (g.tmp / "trace-rel").exists()


def test_the_system_daemon_ignores_it(system_gflow):
    g = system_gflow
    trace = g.base / "trace"
    g.env["GFLOW_TRACE"] = str(trace)
    g.start()
    user = g.add_user("t")
    jid = g.submit_as(user, "true")
    g.wait_state(jid, "Finished")
    assert not trace.exists()


# ---- what the start path does to be quick (issue 13) ------------------------

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


def test_a_runner_starts_inside_its_jobs_group(gflow):
    g = gflow
    g.start()
    info = g.api("GET", "/info")[1]["tracking"]
    if info["method"] != "cgroup2":
        pytest.skip("no cgroup v2 tracking here")
    jid = g.submit("sleep", "30")
    g.wait_for(lambda: g.job(jid)["runner_pid"], what="the runner")
    with open(f"/proc/{g.job(jid)['runner_pid']}/cgroup") as f:
        v2 = [ln.split("::", 1)[1].strip() for ln in f if ln.startswith("0::")][0]
    assert os.path.basename(v2).startswith(f"job-{jid}."), v2
    assert info["cgroup"].endswith(os.path.dirname(v2)), (info, v2)
    g.cli("gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")


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
