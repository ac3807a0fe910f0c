"""GPU management against the fake NVML, through the real dlopen path:
allocation, unmanaged GPUs, restriction, strategies, shared mode, missing or
broken NVML, lost GPUs."""
import os
import subprocess
import time

import pytest

from conftest import SLOW


def started(g, jid):
    return g.wait_state(jid, {"Running", "Finished"})


def test_four_jobs_on_four_gpus_and_a_fifth_waits(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    go = g.tmp / "go"
    ids = []
    for i in range(4):
        ids.append(g.submit("--gpus", "1", "sh", "-c",
                            f'echo "$CUDA_VISIBLE_DEVICES" > {g.tmp}/cvd.$GFLOW_JOB_ID; '
                            f'while [ ! -e {go}.$GFLOW_JOB_ID ]; do sleep 0.02; done'))
    for jid in ids:
        g.wait_state(jid, "Running")
    fifth = g.submit("--gpus", "1", "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES" > ' + f"{g.tmp}/cvd.fifth")
    time.sleep(0.3)
    j5 = g.job(fifth)
    assert j5["state"] == "Queued" and j5["reason"] == "Resources"
    r = g.cli("gqueue", "-s", "Running,Queued", "-f", "JOBID,NAME,ST,NODES,NODELIST(REASON)", check=True)
    rows = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines()[1:]}
    assert rows[str(fifth)][-1] == "(Resources)"
    seen = set()
    for jid in ids:
        cvd = g.wait_for(lambda: (g.tmp / f"cvd.{jid}").exists() and
                         (g.tmp / f"cvd.{jid}").read_text().strip(), what="cvd file")
        show = g.cli("gjob", "show", str(jid), check=True).stdout
        assert f"GPUIDs={cvd}" in show
        assert rows[str(jid)][-1] == cvd
        assert rows[str(jid)][3] == "1"
        seen.add(cvd)
    assert seen == {"0", "1", "2", "3"}
    freed = g.job(ids[2])["gpu_ids"]
    (g.tmp / f"go.{ids[2]}").touch()
    done = g.wait_state(ids[2], "Finished")
    j5 = g.wait_state(fifth, {"Running", "Finished"}, timeout=5)
    assert j5["start_time"] - done["end_time"] < 1.0 * SLOW
    assert j5["gpu_ids"] == freed
    for jid in ids:
        (g.tmp / f"go.{jid}").touch()


def test_unmanaged_gpu_is_never_used_and_frees_when_it_goes(gflow):
    g = gflow
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        g.set_scenario('gpu 0\ngpu 1\n' f'proc 1 pid={foreign.pid} used_mb=1000\n')
        g.start("--gpu-poll-interval-secs", "1")
        r = g.cli("ginfo", check=True)
        line = [ln for ln in r.stdout.splitlines() if "unmanaged" in ln]
        assert line and str(foreign.pid) in line[0], r.stdout
        show = g.cli("gctl", "show-gpus", check=True).stdout
        assert f"unmanaged(pid={foreign.pid} user=" in show
        go = g.tmp / "go"
        a = g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
        b = g.submit("--gpus", "1", "true")
        assert g.wait_state(a, "Running")["gpu_ids"] == [0]
        time.sleep(1.5)
        jb = g.job(b)
        assert jb["state"] == "Queued" and jb["reason"] == "Resources"
        # the foreign process was neither killed nor touched
        assert foreign.poll() is None
        g.set_scenario("gpu 0\ngpu 1\n")
        jb = g.wait_state(b, {"Running", "Finished"}, timeout=10)
        assert jb["gpu_ids"] == [1]
        go.touch()
    finally:
        foreign.kill()
        foreign.wait()


def test_foreign_process_on_a_held_gpu_is_shown(gflow):
    g = gflow
    g.gpus(2)
    g.start("--gpu-poll-interval-secs", "1")
    go = g.tmp / "go"
    a = g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
    assert g.wait_state(a, "Running")["gpu_ids"] == [0]
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        g.set_scenario(f'gpu 0\ngpu 1\nproc 0 pid={foreign.pid}\n')
        g.wait_for(lambda: str(foreign.pid) in g.cli("gctl", "show-gpus").stdout, what="foreign pid shown")
        go.touch()
    finally:
        foreign.kill()
        foreign.wait()


def test_restriction_set_gpus_and_flag_precedence(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    assert g.cli("gctl", "set-gpus", "0,2", check=True).returncode == 0
    show = g.cli("gctl", "show-gpus", check=True).stdout.splitlines()
    assert "restricted" in show[1] and "restricted" in show[3]
    assert "restricted" not in show[0] and "restricted" not in show[2]
    go = g.tmp / "go"
    ids = [g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done") for _ in range(3)]
    used = sorted(g.wait_state(i, "Running")["gpu_ids"][0] for i in ids[:2])
    assert used == [0, 2]
    assert g.job(ids[2])["state"] == "Queued"
    r = g.cli("gctl", "set-gpus", "7")
    assert r.returncode != 0 and "7" in r.stderr
    g.cli("gctl", "set-gpus", "all", check=True)
    assert g.wait_state(ids[2], "Running")["gpu_ids"][0] in (1, 3)
    go.touch()
    for i in ids:
        g.wait_state(i, "Finished")
    # set-gpus persists across a restart …
    g.cli("gctl", "set-gpus", "3", check=True)
    g.stop()
    g.start()
    assert "gctl set-gpus" in g.api("GET", "/gpus")[1]["allowed_source"]
    assert g.api("GET", "/gpus")[1]["allowed"] == [3]
    # … but a newer --gpus flag wins over it
    g.stop()
    g.start("--gpus", "0-1")
    assert g.api("GET", "/gpus")[1]["allowed"] == [0, 1]
    j = g.submit("--gpus", "2", "true")
    assert g.wait_state(j, "Finished")["gpu_ids"] == [0, 1]
    g.stop()
    r = g.cli("gflowd", "run", "--gpus", "9")
    assert r.returncode != 0 and "9" in r.stderr


def test_config_change_wins_over_older_set_gpus(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    g.cli("gctl", "set-gpus", "1", check=True)
    g.stop()
    g.env["GFLOW_DAEMON__GPUS"] = "2,3"
    g.start()
    assert g.api("GET", "/gpus")[1]["allowed"] == [2, 3]


def test_sequential_picks_lowest_random_varies(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    for _ in range(5):
        assert g.wait_state(g.submit("--gpus", "1", "true"), "Finished")["gpu_ids"] == [0]
    g.stop()
    g.start("--gpu-allocation-strategy", "random")
    firsts = set()
    for _ in range(50):
        firsts.add(g.wait_state(g.submit("--gpus", "1", "true"), "Finished")["gpu_ids"][0])
        if len(firsts) > 1:
            break
    assert len(firsts) > 1


def test_shared_jobs_pack_and_never_mix_with_exclusive(gflow):
    g = gflow
    g.gpus(3, total_mb=81920)
    g.start()
    go = g.tmp / "go"
    wait = ["sh", "-c", f"echo $GFLOW_GPU_MEMORY_MB > {g.tmp}/mem.$GFLOW_JOB_ID; "
                        f"while [ ! -e {go} ]; do sleep 0.02; done"]
    a = g.submit("--gpus", "1", "--shared", "--gpu-memory", "30G", *wait)
    b = g.submit("--gpus", "1", "--shared", "--max-gpu-mem", "30G", *wait)
    c = g.submit("--gpus", "1", "--shared", "--gpu-memory", "30G", *wait)
    x = g.submit("--gpus", "1", *wait)
    ja, jb, jc, jx = (g.wait_state(i, "Running") for i in (a, b, c, x))
    assert ja["gpu_ids"] == jb["gpu_ids"] == [0]
    assert jc["gpu_ids"] == [1]
    assert jx["gpu_ids"] == [2]
    assert (g.tmp / f"mem.{a}").read_text().strip() == "30720"
    y = g.submit("--gpus", "1", "true")
    time.sleep(0.3)
    assert g.job(y)["state"] == "Queued"      # only shared GPUs have room
    info = g.cli("ginfo", check=True).stdout
    assert "shared" in info
    show = g.cli("gjob", "show", str(a), check=True).stdout
    assert "GPUIDs=0" in show
    r = g.cli("gbatch", "--gpus", "1", "--shared", "true")
    assert r.returncode != 0 and "--gpu-memory" in r.stderr
    go.touch()


def real_nvml_present():
    r = subprocess.run(["sh", "-c", "ldconfig -p | grep -q libnvidia-ml.so.1"])
    return r.returncode == 0


@pytest.mark.skipif(real_nvml_present(), reason="a real NVML is installed here")
def test_no_nvml_library(gflow):
    g = gflow
    empty = g.tmp / "empty"
    empty.mkdir()
    g.env["LD_LIBRARY_PATH"] = str(empty)
    g.start()
    r = g.cli("ginfo", check=True)
    assert "No GPUs" in r.stdout and "libnvidia-ml.so.1" in r.stdout
    r = g.cli("gbatch", "--gpus", "1", "true")
    assert r.returncode != 0 and "no usable GPUs" in r.stderr
    assert g.wait_state(g.submit("true"), "Finished")["exit_code"] == 0


def test_nvml_init_failure(gflow):
    g = gflow
    g.set_scenario("init_fail 9\ngpu 0\n")
    g.start()
    r = g.cli("ginfo", check=True)
    assert "No GPUs" in r.stdout and "nvmlInit" in r.stdout
    r = g.cli("gbatch", "--gpus", "1", "true")
    assert r.returncode != 0 and "GPU" in r.stderr
    assert g.wait_state(g.submit("true"), "Finished")["exit_code"] == 0


def ginfo_table(g):
    """ginfo without its last line, which names the daemon (and so a path)."""
    return "\n".join(g.cli("ginfo").stdout.splitlines()[:-1])


def test_lost_gpu_is_down_and_gets_no_jobs(gflow):
    g = gflow
    g.gpus(2)
    g.start("--gpu-poll-interval-secs", "1")
    go = g.tmp / "go"
    a = g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
    assert g.wait_state(a, "Running")["gpu_ids"] == [0]
    g.set_scenario("gpu 0\ngpu 1\nlost 1\n")
    g.wait_for(lambda: "down" in ginfo_table(g), what="GPU 1 down")
    b = g.submit("--gpus", "1", "true")
    time.sleep(1.5)
    assert g.job(b)["state"] == "Queued"
    assert g.api("GET", "/health")[0] == 200
    go.touch()
    assert g.wait_state(b, "Finished")["gpu_ids"] == [0]
    g.set_scenario("gpu 0\ngpu 1\n")
    g.wait_for(lambda: "down" not in ginfo_table(g), what="GPU 1 back")


def test_ignoring_a_foreign_process_frees_its_gpu_until_restart(gflow):
    g = gflow
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        g.set_scenario(f"gpu 0\nproc 0 pid={foreign.pid} used_mb=1000\n")
        g.start()
        a = g.submit("--gpus", "1", "true")
        time.sleep(0.3)
        assert g.job(a)["reason"] == "Resources"
        r = g.cli("gctl", "gpu-process", "ignore", "--gpu", "0", "--pid", str(foreign.pid), check=True)
        assert "warning" in (r.stdout + r.stderr).lower()
        assert g.wait_state(a, "Finished")["gpu_ids"] == [0]
        r = g.cli("gctl", "gpu-process", "list", check=True)
        assert str(foreign.pid) in r.stdout
        g.cli("gctl", "gpu-process", "unignore", "--gpu", "0", "--pid", str(foreign.pid), check=True)
        b = g.submit("--gpus", "1", "true")
        time.sleep(0.3)
        assert g.job(b)["state"] == "Queued"
        g.cli("gctl", "gpu-process", "ignore", "--gpu", "0", "--pid", str(foreign.pid), check=True)
        g.wait_state(b, "Finished")
        g.stop()                       # runtime only: forgotten on restart
        g.start()
        assert str(foreign.pid) not in g.cli("gctl", "gpu-process", "list", check=True).stdout
        assert foreign.poll() is None  # never killed
    finally:
        foreign.kill()
        foreign.wait()
