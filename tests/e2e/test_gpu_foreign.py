"""Foreign GPU processes (issue 16): each one named (pid, user, command, age,
memory), a pid this pid namespace cannot see blocks its GPU, and the opt-in
[gpu] policy for small or listed processes."""
import os
import pwd
import shutil
import signal
import subprocess
import time

import pytest

from conftest import SLOW

# Above any pid_max (at most 4194304): no process here can have it, as for a
# process in another pid namespace (a container) that NVML reports.
HIDDEN_PID = 5000000


def test_pid_not_visible_here_blocks_its_gpu(gflow):
    g = gflow
    g.set_scenario(f"gpu 0\ngpu 1\nproc 0 pid={HIDDEN_PID} used_mb=642\n")
    g.start("--gpu-poll-interval-secs", "1")
    go = g.tmp / "go"
    a = g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
    b = g.submit("--gpus", "1", "true")
    assert g.wait_state(a, "Running")["gpu_ids"] == [1]
    time.sleep(1.5 * SLOW)
    jb = g.job(b)
    assert jb["state"] == "Queued" and jb["reason"] == "Resources"
    show = g.cli("gctl", "show-gpus", check=True).stdout
    assert f"unmanaged(pid={HIDDEN_PID} not visible here mem=642M)" in show.splitlines()[0], show
    gpus = g.api("GET", "/gpus")[1]["gpus"]
    f = gpus[0]["foreign"][0]
    assert f["pid"] == HIDDEN_PID and f["visible"] is False and f["used_mb"] == 642 and f["blocks"] is True
    assert gpus[0]["unmanaged_pids"] == [HIDDEN_PID]
    # when NVML no longer lists it, the GPU is free again
    g.set_scenario("gpu 0\ngpu 1\n")
    assert g.wait_state(b, {"Running", "Finished"}, timeout=10)["gpu_ids"] == [0]
    go.touch()


def test_foreign_process_named_everywhere(gflow):
    g = gflow
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        g.set_scenario(f"gpu 0\ngpu 1\nproc 1 pid={foreign.pid} used_mb=642\n")
        g.start("--gpu-poll-interval-secs", "1")
        user = pwd.getpwuid(os.getuid()).pw_name
        want = f"pid={foreign.pid} user={user} cmd=sleep age="
        show = g.cli("gctl", "show-gpus", check=True).stdout.splitlines()
        assert f"unmanaged({want}" in show[1] and "mem=642M)" in show[1], show
        longl = g.cli("ginfo", "-l", check=True).stdout
        row = [ln for ln in longl.splitlines() if ln.split()[0] == "1"][0]
        assert want in row and "mem=642M" in row, longl
        lst = g.cli("gctl", "gpu-process", "list", "--all", check=True).stdout
        assert want in lst and "blocks the GPU" in lst, lst
        f = g.api("GET", "/gpus")[1]["gpus"][1]["foreign"][0]
        assert f["user"] == user and f["command"] == "sleep" and f["visible"] is True
        assert f["uid"] == os.getuid() and f["age_secs"] >= 0 and f["used_mb"] == 642
        # ignoring it: still listed, no longer blocking
        g.cli("gctl", "gpu-process", "ignore", "--gpu", "1", "--pid", str(foreign.pid), check=True)
        lst = g.cli("gctl", "gpu-process", "list", "--all", check=True).stdout
        assert "does not block (ignored with gctl gpu-process ignore)" in lst, lst
        r = g.cli("gctl", "gpu-process", "list", "--all", "--pid", "3")
        assert r.returncode != 0
    finally:
        foreign.kill()
        foreign.wait()


def write_config(g, text):
    d = g.home / ".config/gflow"
    d.mkdir(parents=True, exist_ok=True)
    (d / "gflow.toml").write_text(text)


def test_policy_min_memory_and_ignored_commands(gflow):
    g = gflow
    small = subprocess.Popen(["sleep", "300"], env=g.env)
    listed = subprocess.Popen(["cat"], stdin=subprocess.PIPE, env=g.env)
    big = subprocess.Popen(["sleep", "301"], env=g.env)
    try:
        write_config(g, '[gpu]\nunmanaged_min_memory_mb = 500\nunmanaged_ignore_commands = ["cat"]\n')
        g.set_scenario("gpu 0\ngpu 1\ngpu 2\n"
                       f"proc 0 pid={small.pid} used_mb=100\n"
                       f"proc 1 pid={listed.pid} used_mb=4000\n"
                       f"proc 2 pid={big.pid} used_mb=500\n")
        g.start("--gpu-poll-interval-secs", "1")
        go = g.tmp / "go"
        ids = [g.submit("--gpus", "1", "sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done")
               for _ in range(3)]
        used = sorted(g.wait_state(i, "Running")["gpu_ids"][0] for i in ids[:2])
        assert used == [0, 1]
        time.sleep(1.0 * SLOW)
        assert g.job(ids[2])["state"] == "Queued"
        gpus = g.api("GET", "/gpus")[1]["gpus"]
        assert gpus[0]["foreign"][0]["blocks"] is False
        assert "unmanaged_min_memory_mb" in gpus[0]["foreign"][0]["exempt"]
        assert "unmanaged_ignore_commands" in gpus[1]["foreign"][0]["exempt"]
        assert gpus[2]["foreign"][0]["blocks"] is True and gpus[2]["unmanaged_pids"] == [big.pid]
        lst = g.cli("gctl", "gpu-process", "list", "--all", check=True).stdout
        assert lst.count("does not block") == 2 and lst.count("blocks the GPU") == 1, lst
        go.touch()
    finally:
        for p in (small, listed, big):
            p.kill()
            p.wait()


def test_policy_bad_values_are_refused(gflow):
    g = gflow
    write_config(g, '[gpu]\nunmanaged_min_memory_mb = -1\n')
    r = subprocess.run([str(g.build / "gflowd"), "run", "--check"], env=g.env, capture_output=True, text=True)
    assert r.returncode != 0 and "unmanaged_min_memory_mb" in r.stderr, r.stderr
    write_config(g, '[gpu]\nshared_overuse = "kill"\n')
    r = subprocess.run([str(g.build / "gflowd"), "run", "--check"], env=g.env, capture_output=True, text=True)
    assert r.returncode != 0 and "shared_overuse" in r.stderr, r.stderr


def test_daemon_in_a_pid_namespace_blocks_what_it_cannot_see(gflow):
    """The daemon in a pid namespace of its own (as in a container): NVML
    lists a process by its host pid, which does not exist in there. It must
    block its GPU, while the job processes it does see come and go freely."""
    g = gflow
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1)")
    foreign = subprocess.Popen(["sleep", "300"], env=g.env)
    try:
        var = "FAKE_GPU_MB_" + g.tag
        g.set_scenario(f"gpu 0\ngpu 1\nproc 0 pid={foreign.pid} used_mb=100\nenv_procs {var}\n")
        with open(g.log, "ab") as out:
            g.proc = subprocess.Popen(
                ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM",
                 str(g.build / "gflowd"), "run", "--gpu-poll-interval-secs", "1"],
                env=g.env, stdout=out, stderr=subprocess.STDOUT, cwd=g.tmp, start_new_session=True)
        g.wait_up()
        show = g.cli("gctl", "show-gpus", check=True).stdout
        assert f"unmanaged(pid={foreign.pid} not visible here mem=100M)" in show.splitlines()[0], show
        # short jobs whose processes NVML lists come and go on GPU 1 without
        # leaving it blocked (their pids were seen here)
        for _ in range(3):
            j = g.submit("--gpus", "1", "sh", "-c", "sleep 1.5", env={var: "10"})
            assert g.wait_state(j, "Finished")["gpu_ids"] == [1]
        b = g.submit("--gpus", "2", "true")
        time.sleep(1.5 * SLOW)
        assert g.job(b)["state"] == "Queued"
        g.set_scenario(f"gpu 0\ngpu 1\nenv_procs {var}\n")
        g.wait_state(b, "Finished", timeout=10)
    finally:
        # unshare(1) does not pass SIGTERM on: stop the daemon itself
        if g.proc:
            kids = f"/proc/{g.proc.pid}/task/{g.proc.pid}/children"
            for pid in (open(kids).read().split() if os.path.exists(kids) else []):
                os.kill(int(pid), signal.SIGTERM)
        foreign.kill()
        foreign.wait()
