"""GET /metrics: the Prometheus text format passes promtool and Python's
prometheus_client parser, and its values are what gqueue and ginfo show at the
same moment (a settled machine: 4 fake GPUs, a foreign process, jobs in every
state, two projects)."""
import http.client
import json
import shutil
import subprocess
import time

import pytest


def scrape(g, tcp=False):
    if tcp:
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body, ctype = r.read().decode(), r.getheader("Content-Type")
        c.close()
        return r.status, ctype, body
    st, body = g.api("GET", "/metrics")
    return st, None, body.decode() if isinstance(body, bytes) else body


def samples(text):
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    fams = {}
    for fam in text_string_to_metric_families(text):
        fams[fam.name] = fam.type
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return fams, out


def settle(g):
    """Jobs in every state: 2 running (GPUs 0-1), queued, held, and one each
    finished, failed, cancelled, timed out; projects p1 and p2."""
    go = g.tmp / "go"
    wait = f"while [ ! -e {go} ]; do sleep 0.05; done"
    fin = g.submit("-P", "p1", "true")
    bad = g.submit("-P", "p1", "false")
    tmo = g.submit("-P", "p2", "--time", "0:01", "sleep", "30")
    run1 = g.submit("-P", "p1", "--gpus", "1", "sh", "-c", wait)
    run2 = g.submit("-P", "p2", "--gpus", "1", "sh", "-c", wait)
    queued = g.submit("-P", "p2", "--gpus", "4", "true")     # GPU 2 is unmanaged: never fits now
    held = g.submit("--hold", "true")
    can = g.submit("-P", "p1", "--hold", "true")
    g.cli("gcancel", str(can), check=True)
    for jid, st in ((fin, "Finished"), (bad, "Failed"), (tmo, "Timeout"), (run1, "Running"),
                    (run2, "Running"), (held, "Hold"), (can, "Cancelled")):
        g.wait_state(jid, st, timeout=30)
    g.wait_for(lambda: g.job(queued)["state"] == "Queued" and g.job(queued)["reason"], what="queued reason")
    return go


def test_metrics_format_and_values(gflow):
    if not shutil.which("promtool"):
        pytest.skip("promtool (Debian package prometheus) is not installed")
    pytest.importorskip("prometheus_client")
    g = gflow
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        g.set_scenario("".join(f'gpu {i} name="Fake H100" total_mb=81920 util={10 * i}\n' for i in range(4))
                       + f"proc 2 pid={foreign.pid} used_mb=1000\n")
        g.start("--gpu-poll-interval-secs", "1")
        g.wait_for(lambda: any(x["state"] == "unmanaged" for x in g.api("GET", "/gpus")[1]["gpus"]),
                   what="the foreign process seen")
        go = settle(g)

        st, ctype, text = scrape(g, tcp=True)      # reads over TCP need no token
        assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), (st, ctype)
        queue = json.loads(g.cli("gqueue", "-a", "-u", "all", "-o", "json", check=True).stdout)
        ginfo = g.cli("ginfo", "-l", check=True).stdout
        gpus = g.api("GET", "/gpus")[1]["gpus"]

        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        fams, s = samples(text)
        assert fams["gflow_jobs_submitted"] == "counter"
        assert fams["gflow_scheduler_pass_seconds"] == "histogram"
        assert fams["gflow_api_request_seconds"] == "histogram"
        assert s[("gflow_build_info", (("mode", "personal"), ("version", g.api("GET", "/health")[1]["version"])))] == 1
        assert not any("id" in dict(k[1]) or "job" in dict(k[1]) for k in s), "no job-id labels"

        user = queue[0]["user"]
        # counters and gauges: what gqueue lists
        for proj in ("p1", "p2", ""):
            mine = [j for j in queue if (j["project"] or "") == proj]
            lab = (("project", proj), ("user", user))
            assert s[("gflow_jobs_submitted_total", lab)] == len(mine)
            for state, name in (("finished", "Finished"), ("failed", "Failed"), ("cancelled", "Cancelled"),
                                ("timeout", "Timeout")):
                got = s[("gflow_jobs_ended_total", (("project", proj), ("state", state), ("user", user)))]
                assert got == sum(j["state"] == name for j in mine), (proj, state)
        for state, name in (("queued", "Queued"), ("hold", "Hold"), ("running", "Running")):
            for proj in ("p1", "p2", ""):
                assert s[("gflow_jobs", (("project", proj), ("state", state), ("user", user)))] == \
                    sum(j["state"] == name and (j["project"] or "") == proj for j in queue), (state, proj)
        assert sum(v for (n, lab), v in s.items() if n == "gflow_jobs" and ("state", "running") in lab) == 2
        # waiting jobs: the queued one waits for resources (4 GPUs), the oldest's age, GPUs asked
        q = [j for j in queue if j["state"] == "Queued"]
        assert len(q) == 1
        assert s[("gflow_jobs_waiting", (("reason", q[0]["reason"]),))] == 1, q[0]["reason"]
        assert sum(v for (n, _), v in s.items() if n == "gflow_jobs_waiting") == 1
        assert s[("gflow_jobs_waiting_gpus", (("reason", q[0]["reason"]),))] == 4
        assert s[("gflow_jobs_oldest_waiting_seconds", ())] > 0
        # queue wait: every job that started (2 running, finished, failed, timed out); run time: the ended ones
        started = [j for j in queue if j["state"] in ("Running", "Finished", "Failed", "Timeout")]
        for proj in ("p1", "p2"):
            lab = (("project", proj), ("user", user))
            assert s[("gflow_job_queue_wait_seconds_count", lab)] == \
                sum((j["project"] or "") == proj for j in started), proj
            assert s[("gflow_job_run_seconds_count", lab)] == \
                sum((j["project"] or "") == proj and j["state"] != "Running" for j in started), proj
        assert s[("gflow_job_run_seconds_bucket", (("le", "+Inf"), ("project", "p2"), ("user", user)))] == 1
        assert s[("gflow_job_run_seconds_sum", (("project", "p2"), ("user", user)))] >= 1   # the 1 s time limit

        # GPUs: what ginfo -l shows (index, memory, utilisation, state)
        rows = [ln.split() for ln in ginfo.splitlines()[1:] if ln[:1].isdigit()]
        assert len(rows) == 4, ginfo
        for gpu in gpus:
            i = str(gpu["index"])
            assert s[("gflow_gpu_memory_total_bytes", (("gpu", i),))] == gpu["total_mb"] * 1048576
            assert s[("gflow_gpu_memory_used_bytes", (("gpu", i),))] == gpu["used_mb"] * 1048576
            assert s[("gflow_gpu_utilization_ratio", (("gpu", i),))] == pytest.approx(gpu["util_pct"] / 100)
            states = {st: v for (n, lab), v in s.items() if n == "gflow_gpu_state" and dict(lab)["gpu"] == i
                      for st in [dict(lab)["state"]]}
            assert [k for k, v in states.items() if v == 1] == [gpu["state"]]
            row = [r for r in rows if r[0] == i][0]
            assert gpu["state"] in row and f"{gpu['util_pct']}%" in row, (row, gpu)
            assert s[("gflow_gpu_unmanaged", (("gpu", i),))] == (1 if gpu["state"] == "unmanaged" else 0)
            assert s[("gflow_gpu_jobs", (("gpu", i),))] == len(gpu["jobs"])
        assert s[("gflow_gpu_state", (("gpu", "2"), ("state", "unmanaged")))] == 1
        assert sorted(gpu["state"] for gpu in gpus).count("allocated") == 2
        assert s[("gflow_host_memory_total_bytes", ())] > 0
        assert s[("gflow_scheduler_pass_seconds_count", ())] > 0
        api = {dict(lab)["route"]: v for (n, lab), v in s.items() if n == "gflow_api_request_seconds_count"
               and dict(lab)["status"] == "200"}
        assert api["/jobs/{id}"] > 0 and api["/jobs"] > 0 and api["/gpus"] > 0, api
        go.touch()
    finally:
        foreign.kill()
        foreign.wait()


def test_metrics_label_values_are_escaped(gflow):
    pytest.importorskip("prometheus_client")
    g = gflow
    g.start()
    odd = 'we"ird\\proj'
    jid = g.submit("-P", odd, "true")
    user = g.wait_state(jid, "Finished")["user"]
    _, s = samples(scrape(g)[2])
    assert s[("gflow_jobs_ended_total", (("project", odd), ("state", "finished"), ("user", user)))] == 1
    assert s[("gflow_jobs_submitted_total", (("project", odd), ("user", user)))] == 1


def test_metrics_count_notification_deliveries(gflow):
    pytest.importorskip("prometheus_client")
    from test_notify import Sink    # webhook endpoints on 127.0.0.1: one answers 200, one 500

    ok, failing = Sink(), Sink(status=500)
    g = gflow
    cfg = g.tmp / "gflow.toml"
    cfg.write_text(f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{ok.url}"
events = ["job_completed"]
[[notifications.webhooks]]
url = "{failing.url}"
events = ["job_completed"]
max_retries = 0
""")
    try:
        g.start("--config", str(cfg))
        _, s = samples(scrape(g)[2])
        assert s[("gflow_notifications_total", (("result", "sent"),))] == 0
        g.wait_state(g.submit("true"), "Finished")

        def counted():
            n = g.api("GET", "/info")[1]["notifications"]
            return n if n.get("sent") == 1 and n.get("failed") == 1 and n.get("queued") == 0 else None
        n = g.wait_for(counted, what="one delivery sent and one failed")
        _, s = samples(scrape(g)[2])
        for result in ("sent", "failed", "dropped"):
            assert s[("gflow_notifications_total", (("result", result),))] == n[result], result
        assert s[("gflow_notifications_queued", ())] == 0
        assert ok.events() == ["job_completed"] and failing.events() == ["job_completed"]
    finally:
        ok.close()
        failing.close()


def post_jobs(g, jobs):
    st, body = g.api("POST", "/jobs", {"jobs": jobs, "cwd": str(g.tmp), "env": ["PATH=/usr/bin:/bin"]})
    assert st == 201, body
    return [j["id"] for j in body["jobs"]]


def check_promtool(text):
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_metrics_hostile_label_values(gflow):
    """Quotes, backslashes, a newline and UTF-8 in a project name come back
    exactly (escaped per the exposition format) in every series that names
    it, the histograms included; promtool accepts the page."""
    pytest.importorskip("prometheus_client")
    g = gflow
    g.start()
    # control characters (a newline) never reach a label: a submission refuses them
    st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"], "project": "a\nb"}], "cwd": str(g.tmp)})
    assert st == 400 and "'project' contains a control character" in body["error"], body
    odd = ['we"ird\\proj', 'проект ✓ "😀"', '\\"} 1\\n# HELP x y', 'end\\', '"', '{le="1"}']
    for jid in post_jobs(g, [{"command": ["true"], "project": p} for p in odd]):
        user = g.wait_state(jid, "Finished")["user"]
    text = scrape(g)[2]
    check_promtool(text)
    _, s = samples(text)
    for p in odd:
        lab = (("project", p), ("user", user))
        assert s[("gflow_jobs_submitted_total", lab)] == 1, p
        assert s[("gflow_job_queue_wait_seconds_count", lab)] == 1, p
        assert s[("gflow_job_run_seconds_count", lab)] == 1, p
        assert s[("gflow_jobs", (("project", p), ("state", "queued"), ("user", user)))] == 0, p


def test_metrics_series_stay_bounded(gflow):
    """A flood of distinct projects: the first 64 seen keep their own label,
    the rest share project="(other)" (counted, not lost); the series count
    does not follow the projects; no route label carries an id."""
    pytest.importorskip("prometheus_client")
    g = gflow
    g.start()
    names = [f"flood{i:03d}" for i in range(150)]
    ids = post_jobs(g, [{"command": ["true"], "project": p, "hold": True} for p in names])
    for jid in ids[:3]:
        g.api("GET", f"/jobs/{jid}")
        g.api("GET", f"/jobs/{jid}/log")
    g.api("GET", "/jobs/999999")
    g.api("GET", "/no/such/route/123")
    text = scrape(g)[2]
    check_promtool(text)
    _, s = samples(text)
    sub = {dict(lab)["project"]: v for (n, lab), v in s.items() if n == "gflow_jobs_submitted_total"}
    assert set(sub) == set(names[:64]) | {"(other)"}, sorted(sub)
    assert sub["(other)"] == 150 - 64
    assert sum(v for (n, lab), v in s.items() if n == "gflow_jobs" and ("state", "hold") in lab) == 150
    routes = {dict(lab)["route"] for (n, lab), v in s.items() if n == "gflow_api_request_seconds_count"}
    assert {"/jobs/{id}", "/jobs/{id}/log", "none", "/jobs"} <= routes, routes
    assert not any(ch.isdigit() for r in routes for ch in r), routes
    statuses = {(dict(lab)["route"], dict(lab)["status"]) for (n, lab), v in s.items()
                if n == "gflow_api_request_seconds_count"}
    assert ("/jobs/{id}", "404") in statuses and ("none", "404") in statuses, statuses
    # a second flood adds no series: the labels are already all taken
    more = [f"late{i}" for i in range(100)]
    post_jobs(g, [{"command": ["true"], "project": p, "hold": True} for p in more])
    _, s2 = samples(scrape(g)[2])
    job_series = lambda d: {k for k in d if k[0].startswith("gflow_job")}
    assert job_series(s2) == job_series(s)
    assert s2[("gflow_jobs_submitted_total", (("project", "(other)"), ("user", dict(next(iter(
        k for k in s if k[0] == "gflow_jobs_submitted_total"))[1])["user"])))] == 150 - 64 + 100


def test_metrics_survive_a_restart(gflow):
    """The job histograms and ended counters are counted from the job table:
    a restarted daemon reports the same counts (monotonic across restarts),
    and the oldest waiting job's age goes on growing."""
    pytest.importorskip("prometheus_client")
    g = gflow
    g.start()
    ids = [g.submit("-P", "r", "true"), g.submit("-P", "r", "false"), g.submit("-P", "r", "--hold", "true")]
    g.wait_state(ids[0], "Finished")
    g.wait_state(ids[1], "Failed")
    g.cli("gcancel", str(ids[2]), check=True)
    g.wait_state(ids[2], "Cancelled")
    _, before = samples(scrape(g)[2])
    g.stop()
    g.start()
    _, after = samples(scrape(g)[2])
    keys = [k for k in before if k[0].startswith(("gflow_job_queue_wait", "gflow_job_run", "gflow_jobs_ended",
                                                   "gflow_jobs_submitted"))]
    assert keys and all(after[k] == before[k] for k in keys), [(k, before[k], after.get(k)) for k in keys
                                                              if after.get(k) != before[k]]
    user = g.job(ids[0])["user"]
    assert after[("gflow_jobs_ended_total", (("project", "r"), ("state", "failed"), ("user", user)))] == 1
    assert after[("gflow_job_queue_wait_seconds_count", (("project", "r"), ("user", user)))] == 2
