"""[gpu] constrain_devices (issue 16): with the cgroup v1 devices controller
and the daemon as root, a job may open only the /dev/nvidiaN of its own
GPUs. The nodes are made for the test (mknod, major 195) in its own
directory: the rule is by major:minor, so they are governed like /dev's.
Opening another GPU's node is refused by the cgroup (EPERM); the job's own
gets past it, and the missing driver answers (ENXIO)."""
import os
import pytest

PROBE = r"""
import errno, os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDWR))
        print(os.path.basename(path), "OK")
    except OSError as e:
        print(os.path.basename(path), errno.errorcode[e.errno])
"""


def write_config(g, text):
    d = g.home / ".config/gflow"
    d.mkdir(parents=True, exist_ok=True)
    (d / "gflow.toml").write_text(text)


def devices_hierarchy():
    with open("/proc/self/mountinfo") as f:
        return any(" - cgroup " in ln and "devices" in ln.split(" - ")[1].split()[-1].split(",")
                   for ln in f)


def test_job_opens_only_its_own_gpu(gflow):
    g = gflow
    if os.geteuid() != 0 or not devices_hierarchy():
        pytest.skip("needs root and the cgroup v1 devices controller")
    nodes = g.tmp / "dev"
    nodes.mkdir()
    for m in range(3):
        os.mknod(nodes / f"nvidia{m}", 0o666 | 0o020000, os.makedev(195, m))
    write_config(g, "[gpu]\nconstrain_devices = true\n")
    # GPU 1's node is minor 2: the rule follows NVML's minor number, not the index
    g.set_scenario("gpu 0\ngpu 1 minor=2\ngpu 2 minor=1\n")
    g.start()
    info = g.api("GET", "/info")[1]
    if info["tracking"].get("devices_cgroup"):
        g.cgroups.add(info["tracking"]["devices_cgroup"])   # removed at cleanup
    try:
        assert info["tracking"]["devices_constrained"] is True, info["tracking"]
        st = g.cli("gflowd", "status", check=True).stdout
        assert "DevicesConstrained=yes" in st, st
        paths = [str(nodes / f"nvidia{m}") for m in range(3)]
        a = g.submit("--gpus", "1", "python3", "-c", PROBE, *paths)
        b = g.submit("--gpus", "1", "python3", "-c", PROBE, *paths)
        ja = g.wait_state(a, "Finished")
        jb = g.wait_state(b, "Finished")
        for j in (ja, jb):
            out = dict(ln.split() for ln in g.log_of(j["id"]).splitlines() if ln.startswith("nvidia"))
            own = {0: "nvidia0", 1: "nvidia2", 2: "nvidia1"}[j["gpu_ids"][0]]
            assert out[own] == "ENXIO", out
            assert all(v == "EPERM" for k, v in out.items() if k != own), out
        show = g.cli("gjob", "show", str(a), check=True).stdout
        assert "DevicesConstrained=yes" in show
        # a job without GPUs may open none
        c = g.submit("python3", "-c", PROBE, *paths)
        g.wait_state(c, "Finished")
        out = dict(ln.split() for ln in g.log_of(c).splitlines() if ln.startswith("nvidia"))
        assert set(out.values()) == {"EPERM"}, out
    finally:
        g.stop()


def test_not_enforceable_is_said(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    st = g.cli("gflowd", "status", check=True).stdout
    assert "DevicesConstrained=no ([gpu] constrain_devices is off)" in st, st
    j = g.submit("--gpus", "1", "true")
    g.wait_state(j, "Finished")
    assert "DevicesConstrained=no" in g.cli("gjob", "show", str(j), check=True).stdout
