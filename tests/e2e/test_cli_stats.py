"""gstats as the other tool documents it (issue 12, item 3): the metrics,
-u/--user, -a/--all-users, -t/--since, -o table|json|csv (CSV as
metric,value), and its default: the caller's own jobs. The documented
examples run as written."""
import csv
import io
import json

import pytest

METRICS = ["total_jobs", "completed_jobs", "failed_jobs", "cancelled_jobs", "timeout_jobs", "running_jobs",
           "queued_jobs", "avg_wait_secs", "avg_runtime_secs", "total_gpu_hours", "jobs_with_gpus",
           "avg_gpus_per_job", "peak_gpu_usage", "success_rate"]


def stats_json(g, *args):
    return json.loads(g.cli("gstats", *args, "-o", "json", check=True).stdout)


def test_metrics_of_real_jobs(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    two = g.submit("--gpus", "2", "sleep", "1")
    one = g.submit("--gpus", "1", "sleep", "1")
    bad = g.submit("false")
    g.wait_state(two, "Finished")
    g.wait_state(one, "Finished")
    g.wait_state(bad, "Failed")
    held = g.submit("--hold", "--gpus", "1", "true")
    run = g.submit("sleep", "60")
    g.wait_state(run, "Running")
    gone = g.submit("--hold", "true")
    g.cli("gcancel", str(gone), check=True)
    st = stats_json(g)
    for m in METRICS:
        assert m in st, m
    assert st["total_jobs"] == 6
    assert (st["completed_jobs"], st["failed_jobs"], st["cancelled_jobs"], st["running_jobs"],
            st["held_jobs"], st["queued_jobs"], st["timeout_jobs"]) == (2, 1, 1, 1, 1, 0, 0)
    assert st["success_rate"] == pytest.approx(50.0)       # 2 finished of 4 ended
    assert st["jobs_with_gpus"] == 3 and st["avg_gpus_per_job"] == pytest.approx(4 / 3, abs=0.01)
    assert st["peak_gpu_usage"] == 3                        # the 2-GPU and 1-GPU jobs ran together
    assert 2 * 1 / 3600 * 0.9 < st["total_gpu_hours"] < 0.01
    assert 0.5 <= st["avg_runtime_secs"] < 30 and st["avg_wait_secs"] >= 0   # two 1 s runs, one ~0
    assert [t["id"] for t in st["top_jobs"]][:2] in ([two, one], [one, two])
    # csv: one metric,value row per metric
    rows = list(csv.reader(io.StringIO(g.cli("gstats", "-o", "csv", check=True).stdout)))
    assert rows[0] == ["metric", "value"]
    got = dict(rows[1:])
    assert all(len(r) == 2 for r in rows)
    for m in METRICS:
        assert m in got
    assert got["total_jobs"] == "6" and got["peak_gpu_usage"] == "3"
    # table: the same numbers in words
    text = g.cli("gstats", check=True).stdout
    assert "total 6: 2 finished, 1 failed, 1 cancelled" in text and "peak 3 GPUs" in text
    assert "success rate 50.00%" in text and str(held) not in text.split("Top jobs by runtime")[1]
    # the top jobs by runtime: a table of the ended jobs, longest first, up to 5
    top = text.split("Top jobs by runtime (ended jobs, longest first)\n")[1].splitlines()
    assert top[0].split() == ["JOBID", "NAME", "USER", "ST", "GPUS", "RUNTIME"]
    assert {top[1].split()[0], top[2].split()[0]} == {str(two), str(one)}
    assert [ln.split()[0] for ln in top[1:4]] == [str(t["id"]) for t in st["top_jobs"]][:3]


def test_documented_examples(gflow):
    g = gflow
    g.start()
    g.wait_state(g.submit("true"), "Finished")
    assert "total 1" in g.cli("gstats", check=True).stdout
    assert "total 1" in g.cli("gstats", "--since", "7d", check=True).stdout
    # another user: none of this user's jobs
    assert "total 0" in g.cli("gstats", "--user", "alice", check=True).stdout
    assert json.loads(g.cli("gstats", "--all-users", "--output", "json", check=True).stdout)["total_jobs"] == 1
    out = g.cli("gstats", "--since", "today", "--output", "csv", check=True).stdout
    assert out.startswith("metric,value\n") and "total_jobs,1\n" in out
    assert g.cli("gstats", "-t", "1h", "-a", "-o", "json", check=True).stdout
    assert g.cli("gstats", "completion", "bash", check=True).stdout
    r = g.cli("gstats", "-a", "-u", "alice")
    assert r.returncode != 0 and "--all-users" in r.stderr
    r = g.cli("gstats", "-o", "yaml")
    assert r.returncode != 0 and "yaml" in r.stderr


def test_default_is_the_callers_own_jobs(system_gflow):
    g = system_gflow
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    for user, n in ((a, 2), (b, 1)):
        for _ in range(n):
            g.wait_state(g.submit_as(user, "true"), "Finished")

    def total(user, *args):
        r = g.as_user(user, "gstats", *args, "-o", "json", check=True)
        return json.loads(r.stdout)["total_jobs"]

    assert total(a) == 2 and total(b) == 1
    assert total(a, "-a") == 3 and total(b, "--all-users") == 3
    assert total(b, "-u", a) == 2
    assert "your own jobs (by default)" in g.as_user(a, "gstats", "--help", check=True).stdout.replace("\n", " ")
    text = g.as_user(a, "gstats", "-a", check=True).stdout
    assert "Per user" in text and a in text and b in text


def figures_from_list(jobs, now):
    """What gstats computed from GET /jobs before GET /stats (client/stats.c's
    stats_compute), the figures a restart cannot change."""
    st = {"total_jobs": len(jobs)}
    names = {"Finished": "completed_jobs", "Failed": "failed_jobs", "Cancelled": "cancelled_jobs",
             "Timeout": "timeout_jobs", "Running": "running_jobs", "Queued": "queued_jobs", "Hold": "held_jobs"}
    for n in names.values():
        st[n] = 0
    waits, runs, top = [], [], []
    for j in jobs:
        st[names[j["state"]]] += 1
        start, end = j["start_time"] or 0, j["end_time"] or 0
        if start <= 0:
            continue
        if j["submit_time"] and start >= j["submit_time"]:
            waits.append(start - j["submit_time"])
        if j["end_time"] is not None:
            runs.append(max(end, start) - start)
            top.append((max(end, start) - start, j["id"]))
    st["avg_wait_secs"] = round(sum(waits) / len(waits), 2) if waits else 0
    st["avg_runtime_secs"] = round(sum(runs) / len(runs), 2) if runs else 0
    top.sort(key=lambda t: -t[0])     # stable: of equal runs the earlier id first
    st["top_jobs"] = [i for _, i in top[:5]]
    return st


def test_daemon_figures_match_the_list(system_gflow):
    """GET /stats (issue 31: computed by the daemon over the jobs in memory)
    gives the figures gstats used to compute from the whole list, for the
    same users= and since=; per-user rows; the caller's own jobs by default;
    bad parameters named."""
    g = system_gflow
    g.gpus(2)
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    for user, args in ((a, ("true",)), (a, ("false",)), (b, ("--gpus", "1", "sleep", "0.3")), (b, ("true",)),
                       (a, ("--gpus", "2", "sleep", "0.2")), (b, ("--hold", "true")), (a, ("sleep", "60"))):
        jid = g.submit_as(user, *args)
        if "--hold" not in args and "60" not in args:
            g.wait_state(jid, ("Finished", "Failed"))
    g.wait_state(jid, "Running")
    for who, q in ((a, ""), (a, "?users=all"), (b, "?users=" + a), (b, "?users=all&since=1")):
        out = g.as_user(who, "gstats", "-o", "json", *({"": (), "?users=all": ("-a",),
                                                        "?users=" + a: ("-u", a),
                                                        "?users=all&since=1": ("-a", "-t", "1970-01-01")}[q]),
                        check=True)
        st = json.loads(out.stdout)
        jobs = [j for j in g.api("GET", "/jobs?users=all")[1]["jobs"]
                if ("users=all" in q) or j["user"] == (a if q else who)]
        want = figures_from_list(jobs, 0)
        for k, v in want.items():
            if k == "top_jobs":
                assert [t["id"] for t in st["top_jobs"]] == v, (who, q)
            else:
                assert st[k] == pytest.approx(v, abs=0.011), (who, q, k)
        users = {u["USER"]: u for u in st["users"]}
        for u in {j["user"] for j in jobs}:
            assert int(users[u]["JOBS"]) == sum(j["user"] == u for j in jobs)
        assert ("TOTAL" in users) == (len({j["user"] for j in jobs}) > 1)
    assert json.loads(g.as_user(a, "gstats", "-o", "json", check=True).stdout)["peak_gpu_usage"] == 2
    # the daemon's answer itself; a careless or hostile caller hears which part is wrong
    st, body = g.api("GET", "/stats?users=all")
    assert st == 200 and body["stats"]["total_jobs"] == 7 and [u["user"] for u in body["users"]] == sorted([a, b])
    for q, word in (("?fields=id", "fields"), ("?since=soon", "since"), ("?since=-5", "since"),
                    ("?users=all&bogus=1", "bogus")):
        st, body = g.api("GET", "/stats" + q)
        assert st == 400 and word in body["error"], q
    st, body = g.api("GET", "/stats?since=99999999999")
    assert st == 200 and body["stats"]["total_jobs"] == 0 and body["users"] == []
