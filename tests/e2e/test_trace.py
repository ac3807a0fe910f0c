"""The start-latency trace (GFLOW_TRACE, issue 13): with the variable set to an
absolute path, gbatch, a personal gflowd and gflow-runner append one line per
step of submit → start to that file, `<CLOCK_MONOTONIC ns> <step> <id or ->`.
A system daemon ignores it; a relative path or a link there is not used."""
import stat

import pytest

CLIENT = ["client_start", "client_send", "accept", "commit", "reply", "client_exit"]
# A job that can start at once is recorded as started in its submission's
# own commit (the pass runs before it). When a standby runner is ready the
# start is handed to it before the commit is synced, and the job execs
# only after the sync, which comes before the answer; else its runner is
# launched once the answer is written.
START = ["accept", "pass", "running_commit", "reply", "fork", "runner_start", "exec"]
START_HELD = ["accept", "pass", "running_commit", "fork", "runner_start", "synced", "exec"]


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
    # held when a standby was ready (one is made a moment after the start)
    start = START_HELD if [x for _, s, x in rows if s == "synced"] else START
    for st in CLIENT[3:] + start[1:]:   # one each, for this job
        assert [x for _, s, x in rows if s == st][:1] == [j], (st, rows)
    if start is START_HELD:
        assert first(rows, "synced", j) < first(rows, "reply", j), rows
    # causal order: the client's steps, the daemon's answer, then the start
    # (send() may return after the daemon has read the request)
    for steps in (CLIENT[:2] + CLIENT[-1:], CLIENT[:1] + CLIENT[2:]):
        t = [first(rows, st, None if st in CLIENT[:3] else j) for st in steps]
        assert t == sorted(t), rows
    # (held, the runner and the daemon's sync go on side by side: each comes
    # after the hand-off and before the exec)
    chains = [start] if start is START else [START_HELD[:5] + ["exec"], START_HELD[:4] + ["synced", "exec"]]
    for chain in chains:
        t = [first(rows, st, None if st == "accept" else j) for st in chain]
        assert t == sorted(t), (chain, rows)


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

