"""Why a job failed (issue 16): OutOfMemory:GPU from its log's tail,
Signal:<name>, shown by gqueue's REASON and with a hint by gjob show."""


def var_of(g):
    return "FAKE_GPU_MB_" + g.tag


def show(g, jid):
    out = g.cli("gjob", "show", str(jid), check=True).stdout
    return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)


def test_gpu_oom_from_the_log(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    jid = g.submit("--gpus", "1", "--", "sh", "-c",
                   'echo "Traceback (most recent call last):"; '
                   'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1')
    j = g.wait_state(jid, "Failed")
    assert j["reason"] == "OutOfMemory:GPU"
    r = g.cli("gqueue", "-s", "Failed", "-f", "JOBID,ST,REASON", check=True).stdout
    row = [ln.split() for ln in r.splitlines() if ln.split() and ln.split()[0] == str(jid)][0]
    assert row[1] == "F" and "OutOfMemory:GPU" in row[2], r
    assert show(g, jid)["Hint"].startswith("ran out of GPU memory")


def test_shared_job_oom_hint_names_the_booking(gflow):
    g = gflow
    var = var_of(g)
    g.set_scenario(f"gpu 0\nenv_procs {var}\n")
    g.start("--gpu-poll-interval-secs", "1")
    go = g.tmp / "go"
    jid = g.submit("--gpus", "1", "--shared", "--gpu-memory", "1G", "--", "sh", "-c",
                   f'while [ ! -e {go} ]; do sleep 0.1; done; '
                   'echo "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"; exit 1',
                   env={var: "700"})
    g.wait_state(jid, "Running")
    g.wait_for(lambda: g.job(jid)["gpu_usage"]["peak_gpu_memory_mb"][0] >= 700, what="peak seen")
    go.touch()
    g.wait_state(jid, "Failed")
    s = show(g, jid)
    assert s["Reason"] == "OutOfMemory:GPU"
    # sh and its sleep each report 700M: the peak is what the job's processes used together
    peak = g.job(jid)["gpu_usage"]["peak_gpu_memory_mb"][0]
    want = f"{peak}M" if peak < 1024 else f"{peak / 1024:.1f}G"
    assert s["Hint"] == f"peak {want} on a 1G booking: raise --gpu-memory", s


def test_signal_and_plain_failure(gflow):
    g = gflow
    g.start()
    killed = g.submit("sh", "-c", "kill -SEGV $$")
    assert g.wait_state(killed, "Failed")["reason"] == "Signal:SIGSEGV"
    plain = g.submit("sh", "-c", "echo 'out of memory? no'; exit 3")
    j = g.wait_state(plain, "Failed")
    assert j["reason"] is None and j["exit_code"] == 3
    assert "Hint" not in show(g, plain)
