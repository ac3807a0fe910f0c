"""Runners killed and stopped at random under load (issue 9): never two
exclusive jobs on one GPU, and no process left once every job has ended.

The judge is the fake NVML itself: with `env_procs` it lists, like a real
driver, every live process using a GPU (here: every process whose environment
holds FAKE_GPU_MB_<test tag>, on the GPUs of its CUDA_VISIBLE_DEVICES). `nvml_watch`
(tests/fake-nvml) loads it the way gflowd does and prints which processes are
on each GPU, over and over; the test maps them to their jobs. A second thread
kills (SIGKILL) or stops (SIGSTOP) the runners of running jobs at random.
"""
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from conftest import SLOW, pids_with


def job_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"GFLOW_JOB_ID="):
                    return int(entry[13:])
    except (OSError, ValueError):
        pass
    return None


@pytest.mark.parametrize("executor", ["process", "tmux"])
def test_random_runner_kills_and_stops_never_share_a_gpu_nor_leave_a_process(gflow, executor):
    g = gflow
    ngpus, njobs = 2, 16
    # The variable is this test's own: a test beside it must not see our
    # processes on its GPUs (nor we its).
    var = f"FAKE_GPU_MB_{g.tag}"
    g.set_scenario("".join(f"gpu {i}\n" for i in range(ngpus)) + f"env_procs {var}\n")
    g.env["GFLOW_EXECUTOR__TYPE"] = executor
    g.env["GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS"] = "1"
    g.start()
    watch = subprocess.Popen([str(g.build / "tests/fake-nvml/nvml_watch"), "10"], env=g.env,
                             stdout=subprocess.PIPE, text=True)
    # Each job: a process on its GPU that ignores SIGTERM, and one that left
    # its session; some end by themselves, some are cut short below.
    job = ("trap '' TERM; setsid sh -c 'trap \"\" TERM; sleep 2' & "
           "sleep $(( ($GFLOW_JOB_ID % 3) + 1 )); wait")
    ids = [g.submit("--gpus", "1", "--", "sh", "-c", job, env={var: "100"})
           for _ in range(njobs)]

    violations, seen, stop = [], set(), threading.Event()

    def sample():
        for line in watch.stdout:
            for field in line.split():
                gpu, _, pids = field.partition(":")
                owners = {job_of(int(p)) for p in pids.split(",") if p} - {None}
                seen.update(owners)
                if len(owners) > 1:
                    violations.append((time.time(), gpu, sorted(owners)))

    def chaos():
        rng = random.Random(9)
        while not stop.is_set():
            time.sleep(rng.uniform(0.6, 1.6))
            running = [j for j in g.api("GET", "/jobs?users=all&states=R")[1]["jobs"] if j["runner_pid"]]
            if running:
                victim = rng.choice(running)
                try:
                    os.kill(victim["runner_pid"], rng.choice([signal.SIGKILL, signal.SIGSTOP]))
                except OSError:
                    pass

    threads = [threading.Thread(target=sample), threading.Thread(target=chaos)]
    for t in threads:
        t.start()
    try:
        deadline = time.time() + 120 * SLOW
        while True:
            jobs = [g.job(i) for i in ids]
            if all(j["state"] not in ("Queued", "Running") and not j["active"] for j in jobs):
                break
            assert time.time() < deadline, ([(j["id"], j["state"], j["active"]) for j in jobs],
                                            g.daemon_log()[-3000:])
            time.sleep(0.1)
    finally:
        stop.set()
        watch.kill()
        watch.wait()
        for t in threads:
            t.join()
    assert not violations, violations[:5]
    assert len(seen) >= njobs // 2, seen      # the judge did see the jobs on their GPUs
    assert not pids_with(f"GFLOW_E2E_TAG={g.tag}", f"{var}=100")
    for j in jobs:
        assert j["state"] == "Finished" or (j["reason"] or "").startswith("SystemError:") \
            or j["state"] == "Timeout", j
    # The chaos really happened, and GPUs were really used.
    assert any((j["reason"] or "").startswith("SystemError:supervisor") for j in jobs)
    assert any(j["state"] == "Finished" for j in jobs)
