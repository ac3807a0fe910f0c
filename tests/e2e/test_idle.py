"""Idle reclaim (issue 28 §3, [gpu.idle_reclaim]): a job whose GPUs stay
below threshold_util with their memory unchanged for `after` is warned (a
line in its log, the job_idle event, gqueue reason Idle(h:mm), gjob show
IdleFor=), and `warn_before` later the action is taken. The fake NVML's
utilisation is changed at run time by rewriting its scenario; memory comes
from the job's own processes (env_procs). Bounds are generous: the poll is
1 s, after = warn_before = 2 s."""
import pwd
import subprocess
import time

from test_gpu_usage import show, var_of, write_config
from test_notify import Sink

IDLE = '[gpu.idle_reclaim]\nafter = "2s"\nwarn_before = "2s"\nthreshold_util = 5\n'


def reason_of(g, jid):
    out = g.cli("gqueue", "-a", "-f", "JOBID,REASON", check=True).stdout
    for ln in out.splitlines()[1:]:
        f = ln.split()
        if f and f[0] == str(jid):
            return f[1] if len(f) > 1 else ""
    return None


def scenario(utils, var=None):
    return "".join(f"gpu {i} util={u}\n" for i, u in enumerate(utils)) + (f"env_procs {var}\n" if var else "")


def test_warn_then_cancel(gflow):
    g = gflow
    sink = Sink()
    write_config(g, IDLE + 'action = "cancel"\napply_to = "all"\n'
                 f'[notifications]\nenabled = true\n[[notifications.webhooks]]\nurl = "{sink.url}"\n'
                 'events = ["job_idle"]\n')
    g.set_scenario(scenario([0]))
    g.start("--gpu-poll-interval-secs", "1")
    try:
        jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
        t0 = time.time()
        g.wait_state(jid, "Running")
        # warned: the reason, IdleFor=, the log line, the event
        g.wait_for(lambda: (reason_of(g, jid) or "").startswith("Idle("), what="Idle(h:mm) in gqueue")
        assert time.time() - t0 >= 2, "warned before `after`"
        assert reason_of(g, jid) == "Idle(0:00)"
        s = show(g, jid)
        assert s["IdleFor"].startswith("0:00:0"), s.get("IdleFor")
        g.wait_for(lambda: "its GPUs have been idle" in g.log_of(jid), what="warning in the job's log")
        assert "it will be cancelled in 0:00:02" in g.log_of(jid)
        g.wait_for(lambda: sink.of("job_idle", jid), what="job_idle webhook")
        p = sink.of("job_idle", jid)[0]["job"]
        assert p["state"] == "Running" and p["idle_warned"] is True and p["idle_secs"] >= 2, p
        # then the action: cancelled as gcancel does, with the reason
        j = g.wait_state(jid, "Cancelled")
        assert j["reason"].startswith("Idle: no GPU activity for 0:00:0"), j["reason"]
        assert time.time() - t0 >= 4, "acted before after + warn_before"
        assert "cancelled: its GPUs were idle" in g.log_of(jid)
        assert len(sink.of("job_idle", jid)) == 1
    finally:
        sink.close()


def test_activity_resets_and_busy_job_untouched(gflow):
    g = gflow
    write_config(g, IDLE + 'action = "cancel"\napply_to = "all"\n')
    g.set_scenario(scenario([90, 0]))
    g.start("--gpu-poll-interval-secs", "1")
    busy = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    assert g.wait_state(busy, "Running")["gpu_ids"] == [0]
    idle = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    assert g.wait_state(idle, "Running")["gpu_ids"] == [1]
    g.wait_for(lambda: (reason_of(g, idle) or "").startswith("Idle("), what="idle job warned")
    # activity on its GPU: the warning is withdrawn and nothing is done
    g.set_scenario(scenario([90, 60]))
    g.wait_for(lambda: "IdleFor" not in show(g, idle), what="warning withdrawn")
    assert reason_of(g, idle) == "-"
    time.sleep(5)	# past after + warn_before
    assert g.job(idle)["state"] == "Running"
    assert "GPU activity again: idle warning withdrawn" in g.daemon_log()
    # idle again: a full `after` again, then cancelled
    g.set_scenario(scenario([90, 0]))
    j = g.wait_state(idle, "Cancelled")
    assert j["reason"].startswith("Idle:"), j["reason"]
    # the busy job was never warned
    assert g.job(busy)["state"] == "Running"
    assert "IdleFor" not in show(g, busy)
    assert f"job {busy}:" not in g.daemon_log()
    g.cli("gcancel", str(busy), check=True)


def test_memory_use_changing_is_activity(gflow):
    """A GPU at 0% utilisation whose job's memory keeps changing is not idle."""
    g = gflow
    var = var_of(g)
    write_config(g, IDLE + 'action = "cancel"\napply_to = "all"\n')
    g.set_scenario(scenario([0], var))
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c",
                   f"i=100; while :; do i=$((i+1)); env {var}=$i sleep 0.4; done")
    g.wait_state(jid, "Running")
    time.sleep(7)	# well past after + warn_before
    assert g.job(jid)["state"] == "Running"
    assert "idle" not in g.log_of(jid)
    g.cli("gcancel", str(jid), check=True)


def test_warn_only_and_apply_to(gflow):
    g = gflow
    # apply_to = "interactive" (the default): a batch job is left alone
    write_config(g, IDLE + 'action = "cancel"\n')
    g.set_scenario(scenario([0]))
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    g.wait_state(jid, "Running")
    time.sleep(6)
    assert g.job(jid)["state"] == "Running"
    assert "IdleFor" not in show(g, jid) and reason_of(g, jid) == "-"
    g.cli("gcancel", str(jid), check=True)
    g.wait_state(jid, "Cancelled")
    g.stop()
    # action = "warn": warned, never cancelled
    write_config(g, IDLE + 'action = "warn"\napply_to = "all"\n')
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    g.wait_state(jid, "Running")
    g.wait_for(lambda: "its GPUs have been idle" in g.log_of(jid), what="warning in the log")
    assert "this is a warning only" in g.log_of(jid)
    time.sleep(5)	# past warn_before
    assert g.job(jid)["state"] == "Running"
    assert (reason_of(g, jid) or "").startswith("Idle(")
    g.cli("gcancel", str(jid), check=True)


def test_idle_reclaim_off_by_default(gflow):
    g = gflow
    g.set_scenario(scenario([0]))
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    g.wait_state(jid, "Running")
    time.sleep(4)
    assert "IdleFor" not in show(g, jid) and "idle_secs" not in g.job(jid)
    g.cli("gcancel", str(jid), check=True)


def test_bad_values_are_refused(gflow):
    g = gflow

    def check(text, *parts):
        write_config(g, text)
        r = subprocess.run([str(g.build / "gflowd"), "run", "--check"], env=g.env, capture_output=True,
                           text=True)
        assert r.returncode != 0, text
        for p in parts:
            assert p in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr

    check('[gpu.idle_reclaim]\naction = "requeue"\n',
          "idle_reclaim.action = requeue needs preemption's requeue (not built yet)")
    check('[gpu.idle_reclaim]\naction = "kill"\n', "[gpu.idle_reclaim] action", '"kill"')
    check('[gpu.idle_reclaim]\nafter = "soon"\n', "[gpu.idle_reclaim] after", "soon")
    check('[gpu.idle_reclaim]\nwarn_before = "-5m"\n', "[gpu.idle_reclaim] warn_before")
    check('[gpu.idle_reclaim]\nthreshold_util = 0\n', "[gpu.idle_reclaim] threshold_util")
    check('[gpu.idle_reclaim]\nthreshold_util = "5%"\n', "[gpu.idle_reclaim] threshold_util")
    check('[gpu.idle_reclaim]\napply_to = "bob"\n', "[gpu.idle_reclaim] apply_to", '"bob"')
    check('[gpu.idle_reclaim]\nafter_secs = 5\n', "unknown key 'after_secs' in [gpu.idle_reclaim]")


def test_system_mode_owner_log_and_others(system_gflow):
    """The machine's daemon (root): the warning reaches the owner's log in
    their home, others see the reason (as any reason), and a log the owner
    swapped for a symbolic link is not written through."""
    g = system_gflow
    (g.root / "etc/gflow").mkdir(parents=True, exist_ok=True)
    (g.root / "etc/gflow/gflow.toml").write_text(IDLE + 'action = "warn"\napply_to = "all"\n')
    g.set_scenario(scenario([0, 0]))
    g.start("--gpu-poll-interval-secs", "1")
    a, b = g.add_user("a"), g.add_user("b")
    ja = g.submit_as(a, "--gpus", "1", "sh", "-c", "exec sleep 300")
    g.wait_state(ja, "Running")
    log = g.home_of(a) / ".local/share/gflow/logs/system" / f"{ja}.log"
    g.wait_for(lambda: log.exists() and "its GPUs have been idle" in log.read_text(), what="warning in a's log")
    assert log.stat().st_uid == pwd.getpwnam(a).pw_uid
    out = g.as_user(b, "gqueue", "-a", "-u", "all", "-f", "JOBID,REASON", check=True).stdout
    assert f"{ja}" in out and "Idle(0:00)" in out, out
    # a log that is a symbolic link: nothing is written through it
    target = g.base / f"target-{g.tag}"
    target.write_text("root's\n")
    target.chmod(0o644)
    jb = g.submit_as(a, "--gpus", "1", "sh", "-c", "exec sleep 300")
    g.wait_state(jb, "Running")
    logb = g.home_of(a) / ".local/share/gflow/logs/system" / f"{jb}.log"
    g.wait_for(logb.exists, what="b's log")
    logb.unlink()
    logb.symlink_to(target)
    g.wait_for(lambda: f"job {jb}: GPUs idle" in g.daemon_log(), what="second job warned")
    time.sleep(0.5)
    assert target.read_text() == "root's\n"
    for j in (ja, jb):
        g.as_user(a, "gcancel", str(j), check=True)


def test_unmeasurable_gpu_is_never_reclaimed(gflow):
    """A GPU whose utilisation NVML does not give counts as active."""
    g = gflow
    write_config(g, IDLE + 'action = "cancel"\napply_to = "all"\n')
    g.set_scenario("gpu 0\nomit nvmlDeviceGetUtilizationRates\n")
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    g.wait_state(jid, "Running")
    time.sleep(6)
    assert g.job(jid)["state"] == "Running"
    assert "IdleFor" not in show(g, jid)
    g.cli("gcancel", str(jid), check=True)


def test_many_idle_shared_jobs(gflow):
    """Twelve idle jobs sharing two GPUs: each warned once, each cancelled."""
    g = gflow
    sink = Sink()
    write_config(g, IDLE + 'action = "cancel"\napply_to = "all"\n'
                 f'[notifications]\nenabled = true\n[[notifications.webhooks]]\nurl = "{sink.url}"\n'
                 'events = ["job_idle"]\n')
    g.set_scenario(scenario([0, 0]))
    g.start("--gpu-poll-interval-secs", "1")
    try:
        ids = [g.submit("--gpus", "1", "--shared", "--gpu-memory", "1G", "--", "sh", "-c", "exec sleep 300")
               for _ in range(12)]
        for jid in ids:
            j = g.wait_state(jid, "Cancelled", timeout=30)
            assert j["reason"].startswith("Idle:"), j["reason"]
        g.wait_for(lambda: len(sink.of("job_idle")) >= 12, what="12 job_idle events")
        time.sleep(1)
        assert sorted(p["job"]["id"] for p in sink.of("job_idle")) == sorted(ids)
    finally:
        sink.close()


def test_gflowd_init_writes_the_example_commented(gflow):
    g = gflow
    cfg = g.tmp / "init.toml"
    r = subprocess.run([str(g.build / "gflowd"), "init", "--yes", "-c", str(cfg)], env=g.env, cwd=g.tmp,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    text = cfg.read_text()
    assert "# [gpu.idle_reclaim]\n# after = \"2h\"\n" in text and "\n[gpu.idle_reclaim]" not in text
    # uncommented, the example is a valid configuration
    on = text.replace("# [gpu.idle_reclaim]", "[gpu.idle_reclaim]")
    for k in ("after", "threshold_util", "action", "warn_before", "apply_to"):
        on = on.replace(f"# {k} = ", f"{k} = ")
    cfg.write_text(on)
    r = subprocess.run([str(g.build / "gflowd"), "-c", str(cfg), "run", "--check"], env=g.env, cwd=g.tmp,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_warning_line_under_each_executor(gflow_exec):
    g = gflow_exec
    write_config(g, IDLE + 'action = "warn"\napply_to = "all"\n')
    g.set_scenario(scenario([0]))
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "echo before; exec sleep 300")
    g.wait_state(jid, "Running")
    g.wait_for(lambda: "its GPUs have been idle" in g.log_of(jid), what="warning in the log")
    assert "before" in g.log_of(jid)
    out = g.cli("gjob", "log", str(jid), check=True).stdout
    assert "its GPUs have been idle" in out
    g.cli("gcancel", str(jid), check=True)


def test_apply_to_interactive_reclaims_a_galloc_session_only(gflow):
    """apply_to = "interactive" (the default): a galloc session idle on its
    GPU is warned and cancelled (its galloc returns); a batch job idle on
    the other GPU is left alone."""
    from test_galloc import Term, only_job
    g = gflow
    write_config(g, IDLE + 'action = "cancel"\n')
    g.set_scenario(scenario([0, 0]))
    g.start("--gpu-poll-interval-secs", "1")
    batch = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300")
    assert g.wait_state(batch, "Running")["gpu_ids"] == [0]
    t = Term(g, "--gpus", "1", "--", "sh", "-c", "echo session-up; exec sleep 300")
    t.expect("session-up")
    jid = only_job(g)["id"]
    assert g.job(jid)["interactive"] is True
    g.wait_for(lambda: (reason_of(g, jid) or "").startswith("Idle("), what="the session warned")
    j = g.wait_state(jid, "Cancelled")
    assert j["reason"].startswith("Idle: no GPU activity"), j["reason"]
    t.finish(timeout=20)
    assert g.job(batch)["state"] == "Running" and "IdleFor" not in show(g, batch)
    g.cli("gcancel", str(batch), check=True)
