"""What each job really used on its GPUs (issue 16): the UUIDs it was given,
its peak GPU memory (the fake NVML reports the job's own process, through
`env_procs`) and the mean utilisation; a shared job over its booking is
flagged, and cancelled under [gpu] shared_overuse = "cancel"."""
import json
import time

from test_notify import Sink


def var_of(g):
    return "FAKE_GPU_MB_" + g.tag


def write_config(g, text):
    d = g.home / ".config/gflow"
    d.mkdir(parents=True, exist_ok=True)
    (d / "gflow.toml").write_text(text)


def show(g, jid):
    out = g.cli("gjob", "show", str(jid), check=True).stdout
    return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)


def test_uuids_peak_memory_and_mean_util(gflow):
    g = gflow
    var = var_of(g)
    g.set_scenario("gpu 0 uuid=GPU-aaaaaaaa-0000-4000-8000-000000000000 util=40\n"
                   "gpu 1 uuid=GPU-bbbbbbbb-0000-4000-8000-000000000001 util=40\n"
                   f"env_procs {var}\n")
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--", "sh", "-c", "exec sleep 300", env={var: "642"})
    gpu = g.wait_state(jid, "Running")["gpu_ids"][0]
    uuid = ["GPU-aaaaaaaa-0000-4000-8000-000000000000", "GPU-bbbbbbbb-0000-4000-8000-000000000001"][gpu]
    g.wait_for(lambda: show(g, jid).get("PeakGPUMemory") == "642M", what="peak 642M in gjob show")
    s = show(g, jid)
    assert s["GPUUUIDs"] == uuid
    assert s["MeanGPUUtil"] == "40%"
    assert "GPUMemoryExceeded" not in s
    g.cli("gcancel", str(jid), check=True)
    g.wait_state(jid, "Cancelled")
    # persisted: the same after a restart, and in -o json
    g.stop()
    g.start()
    s = show(g, jid)
    assert s["GPUUUIDs"] == uuid and s["PeakGPUMemory"] == "642M"
    j = json.loads(g.cli("gjob", "show", "-o", "json", str(jid), check=True).stdout)[0]
    u = j["gpu_usage"]
    assert u["gpu_uuids"] == [uuid] and u["peak_gpu_memory_mb"] == [642] and u["mean_gpu_util"] == 40
    # gstats: the mean utilisation measured, weighted by GPU-hours
    rows = dict(ln.split(",") for ln in g.cli("gstats", "-o", "csv", check=True).stdout.splitlines()[1:])
    assert rows["mean_gpu_util_pct"] == "40.00", rows
    assert "mean GPU utilisation 40%" in g.cli("gstats", check=True).stdout
    # a job that has not started has no usage
    assert "gpu_usage" not in g.job(g.submit("--gpus", "1", "--hold", "true"))


def test_shared_overuse_is_flagged(gflow):
    g = gflow
    var = var_of(g)
    sink = Sink()
    write_config(g, f'[notifications]\nenabled = true\n[[notifications.webhooks]]\nurl = "{sink.url}"\n'
                    'events = ["job_gpu_memory_exceeded"]\n')
    g.set_scenario(f"gpu 0\nenv_procs {var}\n")
    g.start("--gpu-poll-interval-secs", "1")
    jid = g.submit("--gpus", "1", "--shared", "--gpu-memory", "500M", "--", "sh", "-c", "exec sleep 300",
                   env={var: "642"})
    g.wait_state(jid, "Running")
    g.wait_for(lambda: "GPUMemoryExceeded" in show(g, jid), what="overuse flagged")
    assert show(g, jid)["GPUMemoryExceeded"] == "yes (used 642M on a 500M booking)"
    assert g.job(jid)["state"] == "Running"     # warn (the default) only reports
    r = g.cli("gqueue", "-f", "JOBID,ST,REASON", check=True).stdout
    assert "GPUMemoryExceeded(used 642M, booked 500M)" in r, r
    assert "more than its 500 MB booking" in g.daemon_log()
    # the job_gpu_memory_exceeded event, once
    try:
        g.wait_for(lambda: sink.of("job_gpu_memory_exceeded", jid), what="job_gpu_memory_exceeded webhook")
        time.sleep(1.5)
        assert len(sink.of("job_gpu_memory_exceeded", jid)) == 1
        assert sink.of("job_gpu_memory_exceeded", jid)[0]["job"]["state"] == "Running"
    finally:
        sink.close()
    g.cli("gcancel", str(jid), check=True)


def test_shared_overuse_cancel(gflow):
    g = gflow
    var = var_of(g)
    write_config(g, '[gpu]\nshared_overuse = "cancel"\n')
    g.set_scenario(f"gpu 0\nenv_procs {var}\n")
    g.start("--gpu-poll-interval-secs", "1")
    ok = g.submit("--gpus", "1", "--shared", "--gpu-memory", "1G", "--", "sh", "-c", "exec sleep 300",
                  env={var: "642"})
    over = g.submit("--gpus", "1", "--shared", "--gpu-memory", "500M", "--", "sh", "-c", "exec sleep 300",
                    env={var: "642"})
    j = g.wait_state(over, "Cancelled")
    assert j["reason"].startswith("GPUMemoryExceeded: used 642 MB on GPU 0, booked 500 MB"), j["reason"]
    assert g.job(ok)["state"] == "Running"
    g.cli("gcancel", str(ok), check=True)
