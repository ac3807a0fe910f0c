"""Workflow features against the real daemon: dependencies and auto-cancel,
redo, hold/release, begin times, retries, arrays, sweeps, concurrency caps,
update, backfill, projects."""
import json
import time

import pytest

from conftest import SLOW


def test_pipeline_runs_in_order(gflow):
    g = gflow
    g.start()
    out = g.tmp / "order.txt"
    a = g.submit("sh", "-c", f"sleep 0.3; echo a >> {out}")
    b = g.submit("--depends-on", "@", "sh", "-c", f"echo b >> {out}")
    c = g.submit("--depends-on", "@", "sh", "-c", f"echo c >> {out}")
    assert g.job(b)["depends_on"] == [a] and g.job(c)["depends_on"] == [b]
    time.sleep(0.1)
    assert g.job(c)["reason"] == "Dependency"
    g.wait_state(c, "Finished")
    assert out.read_text().split() == ["a", "b", "c"]
    assert g.job(b)["start_time"] >= g.job(a)["end_time"]


def test_at_tilde_refers_to_earlier_jobs(gflow):
    g = gflow
    g.start()
    a = g.submit("--hold", "true")
    b = g.submit("--hold", "true")
    c = g.submit("--hold", "--depends-on", "@~1", "true")
    assert g.job(c)["depends_on"] == [a]      # @ is b, @~1 the one before it
    d = g.submit("--hold", "--depends-on-all", "@,@~2", "true")
    assert g.job(d)["depends_on"] == [c, a]
    assert b


def test_failure_cascades_and_no_auto_cancel_stays(gflow):
    g = gflow
    g.start()
    a = g.submit("sh", "-c", "exit 1")
    b = g.submit("--depends-on", str(a), "true")
    c = g.submit("--depends-on", str(b), "true")
    keep = g.submit("--depends-on", str(a), "--no-auto-cancel", "true")
    g.wait_state(a, "Failed")
    jb = g.wait_state(b, "Cancelled")
    assert jb["reason"] == f"DependencyFailed:{a}"
    jc = g.wait_state(c, "Cancelled")
    assert jc["reason"] == f"DependencyFailed:{b}"
    time.sleep(0.2)
    assert g.job(keep)["state"] == "Queued"


def test_redo_cascade_reruns_the_chain(gflow):
    g = gflow
    g.start()
    flag = g.tmp / "fixed"
    out = g.tmp / "ran.txt"
    a = g.submit("sh", "-c", f"test -e {flag}; r=$?; echo a >> {out}; exit $r")
    b = g.submit("--depends-on", str(a), "sh", "-c", f"echo b >> {out}")
    c = g.submit("--depends-on", str(b), "sh", "-c", f"echo c >> {out}")
    g.wait_state(c, "Cancelled")
    flag.touch()
    r = g.cli("gjob", "redo", str(a), "--cascade", check=True)
    new = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job")]
    assert len(new) == 3, r.stdout
    na, nb, nc = new
    assert g.job(na)["redo_of"] == a and g.job(nb)["redo_of"] == b
    assert g.job(nb)["depends_on"] == [na] and g.job(nc)["depends_on"] == [nb]
    g.wait_state(nc, "Finished")
    assert out.read_text().split() == ["a", "a", "b", "c"]
    tree = g.cli("gqueue", "-a", "-t", check=True).stdout
    assert "└─" in tree or "├─" in tree


def test_hold_and_release(gflow):
    g = gflow
    g.start()
    a = g.submit("--hold", "true")
    j = g.job(a)
    assert j["state"] == "Hold" and j["reason"] == "JobHeldUser"
    b = g.submit("sleep", "5")
    g.wait_state(b, "Running")
    g.cli("gcancel", str(b), check=True)
    c = g.submit("--begin", "now+1h", "true")
    g.cli("gjob", "hold", str(c), check=True)
    assert g.job(c)["state"] == "Hold"
    g.cli("gjob", "release", str(a), check=True)
    g.wait_state(a, "Finished")


def test_begin_times_start_on_time(gflow):
    g = gflow
    g.start()
    t0 = time.time()
    now = g.submit("--begin", "now+0", "true")
    g.wait_state(now, "Finished")
    assert g.job(now)["start_time"] - t0 < 2
    later = g.submit("--begin", "now+3s", "true")
    j = g.job(later)
    time.sleep(0.2)
    assert g.job(later)["reason"] == "BeginTime"
    j = g.wait_state(later, "Finished", timeout=10)
    assert abs(j["start_time"] - (j["begin_at"])) < 2
    assert j["begin_at"] - t0 == pytest.approx(3, abs=1.5)
    held = g.submit("--hold", "true")
    g.cli("gjob", "release", str(held), "--at", "now+2s", check=True)
    t1 = time.time()
    j = g.wait_state(held, "Finished", timeout=10)
    assert j["start_time"] - t1 == pytest.approx(2, abs=1.5)


def test_begin_in_a_minute(gflow):
    g = gflow
    g.start()
    t0 = time.time()
    jid = g.submit("--begin", "now+1m", "true")
    j = g.job(jid)
    assert j["begin_at"] - t0 == pytest.approx(60, abs=2)
    assert j["state"] == "Queued"


def test_retries_then_failed_and_dependent_follows(gflow):
    g = gflow
    g.start()
    a = g.submit("--max-retries", "2", "sh", "-c", "exit 4")
    d = g.submit("--depends-on", str(a), "--no-auto-cancel", "true")

    def attempts():
        st, body = g.api("GET", "/jobs?users=all")
        tries = [j for j in body["jobs"] if j["id"] != d]
        return tries if len(tries) == 3 and all(j["state"] == "Failed" for j in tries) else None

    tries = g.wait_for(attempts, timeout=20, what="three failed attempts")
    assert [t["attempt"] for t in tries] == [0, 1, 2]
    assert tries[1]["retry_of"] == a and tries[2]["retry_of"] == tries[1]["id"]
    assert all(t["exit_code"] == 4 for t in tries)
    assert g.job(d)["depends_on"] == [tries[2]["id"]]


def test_timeout_is_not_retried(gflow):
    g = gflow
    g.start()
    a = g.submit("--max-retries", "2", "--time", "0:01", "sleep", "30")
    g.wait_state(a, "Timeout", timeout=15)
    time.sleep(0.5)
    st, body = g.api("GET", "/jobs?users=all")
    assert len(body["jobs"]) == 1


def test_array_gives_task_ids(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--array", "1-5", "sh", "-c", "echo task=$GFLOW_ARRAY_TASK_ID", check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
    assert len(ids) == 5
    tasks = []
    for jid in ids:
        g.wait_state(jid, "Finished")
        tasks.append(g.log_of(jid).strip())
        assert g.job(jid)["group_id"] == ids[0]
    assert tasks == [f"task={i}" for i in range(1, 6)]


def test_array_concurrency_cap(gflow):
    g = gflow
    g.start()
    log = g.tmp / "spans.txt"
    r = g.cli("gbatch", "--array", "1-4%1", "sh", "-c",
              f'echo "start $(date +%s.%N)" >> {log}; sleep 0.3; echo "end $(date +%s.%N)" >> {log}',
              check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
    for jid in ids:
        g.wait_state(jid, "Finished")
    events = [ln.split() for ln in log.read_text().splitlines()]
    running = peak = 0
    for kind, _ in sorted(events, key=lambda e: float(e[1])):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 1


def test_max_concurrent_never_runs_two(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--max-concurrent", "1", "--param", "i=1,2,3", "sh", "-c", "sleep 0.3", check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
    assert len(ids) == 3
    spans = [(j["start_time"], j["end_time"]) for j in (g.wait_state(i, "Finished") for i in ids)]
    spans.sort()
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s2 >= e1 - 0.01


def test_param_sweep_fills_argv(gflow):
    g = gflow
    g.start()
    out = g.tmp / "sweep"
    out.mkdir()
    r = g.cli("gbatch", "--param", "lr=0.1,0.01", "--param", "bs=32,64", "--name-template", "run_{lr}_{bs}",
              "python3", "-c", "import sys; open(sys.argv[1], 'w').write(' '.join(sys.argv[2:]))",
              f"{out}/{{lr}}-{{bs}}", "--lr", "{lr}", "--bs={bs}", check=True)
    ids = [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]
    assert len(ids) == 4
    names = [g.wait_state(i, "Finished")["name"] for i in ids]
    assert sorted(names) == sorted(["run_0.1_32", "run_0.1_64", "run_0.01_32", "run_0.01_64"])
    got = {p.name: p.read_text() for p in out.iterdir()}
    assert got == {f"{lr}-{bs}": f"--lr {lr} --bs={bs}" for lr in ("0.1", "0.01") for bs in ("32", "64")}


def test_dry_run_submits_nothing(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--dry-run", "--param", "k=a,b", "echo", "{k}", check=True)
    assert "a" in r.stdout and "b" in r.stdout
    st, body = g.api("GET", "/jobs?users=all")
    assert body["jobs"] == []


def test_batch_is_all_or_nothing(gflow):
    g = gflow
    g.start()
    st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"]}, {"command": ["true"], "gpus": "x"}],
                                       "cwd": str(g.tmp), "env": []})
    assert st == 400 and "job 2 of 2" in body["error"]
    st, body = g.api("GET", "/jobs?users=all")
    assert body["jobs"] == []


def test_update_queued_job(gflow):
    g = gflow
    g.start()
    a = g.submit("--hold", "--priority", "5", "sh", "-c", "echo old")
    r = g.cli("gjob", "update", str(a), "--priority", "99", "--time", "10", check=True)
    j = g.job(a)
    assert j["priority"] == 99 and j["time_limit_secs"] == 600
    g.cli("gjob", "update", str(a), "--clear-time", check=True)
    assert g.job(a)["time_limit_secs"] is None
    b = g.submit("--hold", "--depends-on", str(a), "true")
    r = g.cli("gjob", "update", str(a), "--depends-on", str(b))
    assert r.returncode != 0 and "cycle" in r.stderr
    g.cli("gjob", "release", str(a), check=True)
    g.wait_state(a, "Finished")
    r = g.cli("gjob", "update", str(a), "--priority", "1")
    assert r.returncode != 0 and "Finished" in r.stderr


def test_gctl_set_limit(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--hold", "--array", "1-3", "true", check=True)
    first = int(r.stdout.split()[3])
    g.cli("gctl", "set-limit", str(first), "2", check=True)
    st, body = g.api("GET", "/jobs?users=all")
    assert all(j["max_concurrent"] == 2 for j in body["jobs"])


def test_backfill_respects_time_limits(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    go = g.tmp / "go"
    busy = g.submit("--gpus", "1", "--time", "0:30", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
    g.wait_state(busy, "Running")
    big = g.submit("--gpus", "2", "--priority", "50", "true")
    no_limit = g.submit("--gpus", "1", "sleep", "5")
    short = g.submit("--gpus", "1", "--time", "0:05", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
    js = g.wait_state(short, "Running")
    assert js["gpu_ids"] == [1]
    time.sleep(0.3)
    assert g.job(big)["reason"] == "Resources"
    jn = g.job(no_limit)
    # Priority while short was being started (its GPU was free, promised to
    # big), Resources once a pass has seen short running on it
    assert jn["state"] == "Queued" and jn["reason"] in ("Priority", "Resources")
    go.touch()
    g.wait_state(big, "Finished")
    # no_limit may still be waiting for the big job's GPUs to come back;
    # if it has started, it started after the big job.
    jn = g.job(no_limit)
    assert jn["start_time"] is None or g.job(big)["start_time"] <= jn["start_time"]


def test_project_is_kept_and_listed(gflow):
    g = gflow
    g.start()
    a = g.submit("-P", "  vision  ", "--hold", "true")
    assert g.job(a)["project"] == "vision"
    r = g.cli("gqueue", "-P", "vision", check=True)
    assert str(a) in r.stdout
    r = g.cli("gbatch", "-P", "x" * 65, "true")
    assert r.returncode != 0 and "64" in r.stderr


def test_required_and_known_projects(gflow):
    g = gflow
    cfg = g.home / ".config/gflow"
    cfg.mkdir(parents=True)
    (cfg / "gflow.toml").write_text('[projects]\nknown_projects = ["nlp", "vision"]\nrequire_project = true\n')
    g.start()
    r = g.cli("gbatch", "true")
    assert r.returncode != 0 and "project" in r.stderr
    r = g.cli("gbatch", "-P", "audio", "true")
    assert r.returncode != 0 and "audio" in r.stderr
    g.submit("-P", "nlp", "true")


def test_memory_admission_and_enforcement_report(gflow):
    g = gflow
    g.start()
    a = g.submit("--memory", "100M", "true")
    j = g.wait_state(a, "Finished")
    assert j["memory_mb"] == 100
    show = g.cli("gjob", "show", str(a), check=True).stdout
    assert "MemoryEnforced=" in show


def test_depending_on_an_already_failed_job_cancels(gflow):
    g = gflow
    g.start()
    a = g.submit("false")
    g.wait_state(a, "Failed")
    b = g.submit("--depends-on", str(a), "true")
    assert g.wait_state(b, "Cancelled")["reason"] == f"DependencyFailed:{a}"
    c = g.submit("--depends-on", str(a), "--no-auto-cancel", "true")
    time.sleep(0.2)
    assert g.job(c)["state"] == "Queued"


def test_depending_on_a_retried_job_follows_its_newest_attempt(gflow):
    g = gflow
    g.start()
    a = g.submit("--max-retries", "1", "sh", "-c", "exit 2")
    g.wait_for(lambda: len(g.api("GET", "/jobs?users=all")[1]["jobs"]) == 2 and
               all(j["state"] == "Failed" for j in g.api("GET", "/jobs?users=all")[1]["jobs"]),
               what="both attempts failed")
    d = g.submit("--depends-on", str(a), "true")
    j = g.wait_state(d, "Cancelled")
    assert j["depends_on"] == [a + 1] and j["reason"] == f"DependencyFailed:{a + 1}"


def test_memory_limit_is_enforced_where_a_cgroup_is_delegated(gflow):
    g = gflow
    g.start()
    if not g.api("GET", "/info")[1]["memory_cgroup"]:
        j = g.wait_state(g.submit("--memory", "100M", "true"), "Finished")
        assert j["memory_enforced"] is False
        assert "MemoryEnforced=no" in g.cli("gjob", "show", str(j["id"]), check=True).stdout
        pytest.skip("no delegated cgroup v2 with the memory controller here: enforcement not testable")
    hog = g.submit("--memory", "100M", "python3", "-c",
                   "import time; b = bytearray(400 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); time.sleep(5)")
    j = g.wait_state(hog, {"Failed", "Finished"}, timeout=30)
    assert j["state"] == "Failed" and j["reason"] == "OutOfMemory:Host"
    show = g.cli("gjob", "show", str(hog), check=True).stdout
    assert "Hint=it reached its --memory limit of 100M: raise --memory" in show, show
    assert j["memory_enforced"] is True
