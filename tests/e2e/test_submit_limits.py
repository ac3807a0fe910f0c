"""What execve would refuse is refused at submission (issue 9, fault 9): one
argument or variable over MAX_ARG_STRLEN, or argv + environment over ARG_MAX
(with gflow's reserve), is refused by gbatch and by the daemon with a
message naming the problem; what fits is accepted, 5000 small arguments
and a 16 KB one included.

That accepted jobs also *start* is the runner's side: the job's argv goes
through its run directory instead of the runner's and tmux's command
lines."""
import os


def submission(g, command, env=None):
    return {"jobs": [{"command": command, "hold": True}],
            "env": env if env is not None else ["PATH=/usr/bin:/bin"], "cwd": str(g.tmp)}


def test_many_and_long_arguments_are_accepted(gflow):
    g = gflow
    g.start()
    jid = g.submit("--hold", "--", "true", *[str(i) for i in range(1, 5001)])
    assert len(g.job(jid)["command"]) == 5001
    jid = g.submit("--hold", "--", "echo", "x" * 16384)
    assert g.job(jid)["command"][1] == "x" * 16384


def test_too_long_argument_is_refused_by_gbatch_and_daemon(gflow):
    g = gflow
    g.start()
    # gbatch itself cannot be given such a word, but a sweep can make one
    r = g.cli("gbatch", "--param", "k=" + "y" * 70000, "--", "echo", "ok", "{k}{k}")
    assert r.returncode != 0
    assert "argument 2" in r.stderr and "140000 bytes" in r.stderr and "MAX_ARG_STRLEN" in r.stderr
    st, body = g.api("POST", "/jobs", submission(g, ["echo", "y" * 140000]))
    assert st == 400 and "argument 1" in body["error"] and "MAX_ARG_STRLEN" in body["error"], body
    st, body = g.api("POST", "/jobs", submission(g, ["echo"], ["BIG=" + "v" * 140000]))
    assert st == 400 and "environment variable BIG" in body["error"], body
    # the daemon's check is authoritative for every job of a batch
    st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"], "hold": True},
                                                {"command": ["echo", "z" * 140000], "hold": True}],
                                       "env": [], "cwd": "/"})
    assert st == 400 and "job 2 of 2" in body["error"], body
    assert g.cli("gqueue", "-a", "-f", "JOBID", check=True).stdout.split() == ["JOBID"]


def test_too_much_in_total_is_refused(gflow):
    g = gflow
    g.start()
    arg_max = min(os.sysconf("SC_ARG_MAX"), 6 << 20)
    words = ["w" * 100000 for _ in range(arg_max // 100000 + 1)]
    st, body = g.api("POST", "/jobs", submission(g, ["echo", *words]))
    assert st == 400 and "ARG_MAX" in body["error"], body
    # close to the limit: fits the kernel alone, but not with gflow's reserve
    words = ["w" * 100000 for _ in range(arg_max // 100000 - 1)]
    rest = arg_max - sum(len(w) + 9 for w in words) - 4096
    words += ["r" * 100000] * (rest // 100009) + ["r" * (rest % 100009)]
    st, body = g.api("POST", "/jobs", submission(g, ["echo", *words], env=[]))
    assert st == 400 and "ARG_MAX" in body["error"] and "16384" in body["error"], body
    # an update that would pass the limit is refused too, naming the job
    jid = g.submit("--hold", "--", "echo", "small")
    big = ["w" * 100000 for _ in range(arg_max // 100000 + 1)]
    st, body = g.api("POST", "/jobs/update", {"ids": [jid], "set": {"command": ["echo", *big]}})
    assert st == 200 and body["done"] == [] and "ARG_MAX" in body["errors"][0]["error"], body
    assert g.job(jid)["command"] == ["echo", "small"]


def test_accepted_jobs_also_start(gflow_exec):
    """The runner reads the job's argv from its run directory: no command
    line of tmux's or the runner's limits what was accepted."""
    g = gflow_exec
    g.start()
    many = g.submit("--", "sh", "-c", 'test "$#" = 5000', "sh", *[str(i) for i in range(1, 5001)])
    long = g.submit("--", "sh", "-c", 'test "${#1}" = 16384', "sh", "x" * 16384)
    for jid in (many, long):
        j = g.wait_state(jid, {"Finished", "Failed"})
        assert j["state"] == "Finished", j
