"""MIG (issue 16): a GPU in MIG mode is allocated by its MIG devices; each
job's CUDA_VISIBLE_DEVICES holds its MIG-<uuid>; gctl set-gpus I:K names one
MIG device; ginfo -l lists them with their GPU, profile and memory."""
import time

from conftest import SLOW


def test_three_mig_devices_run_three_jobs(gflow):
    g = gflow
    var = "FAKE_GPU_MB_" + g.tag
    g.set_scenario('gpu 0 name="NVIDIA A100-SXM4-80GB"\nmig 0 count=3 profile=2g.20gb total_mb=20096\n'
                   f"gpu 1\nenv_procs {var}\n")
    g.start("--gpu-poll-interval-secs", "1")
    longl = g.cli("ginfo", "-l", check=True).stdout
    rows = [ln for ln in longl.splitlines() if "MIG 2g.20gb" in ln]
    assert len(rows) == 3, longl
    assert "(GPU 0:0)" in rows[0] and "(GPU 0:2)" in rows[2] and "0M/19.6G" in rows[0], longl
    gpus = g.api("GET", "/gpus")[1]["gpus"]
    assert [(x["index"], x["parent_index"], x["mig_index"]) for x in gpus] == \
        [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 1, None)]
    assert all(x["uuid"].startswith("MIG-") for x in gpus[:3])
    # only the MIG devices: GPU 1 is not allowed
    g.cli("gctl", "set-gpus", "0", check=True)
    go = g.tmp / "go"
    ids = [g.submit("--gpus", "1", "sh", "-c",
                    f'echo "$CUDA_VISIBLE_DEVICES $GFLOW_GPU_IDS" > {g.tmp}/cvd.$GFLOW_JOB_ID; '
                    f'while [ ! -e {go} ]; do sleep 0.05; done', env={var: "300"})
           for _ in range(4)]
    for j in ids[:3]:
        g.wait_state(j, "Running")
    time.sleep(0.5 * SLOW)
    assert g.job(ids[3])["state"] == "Queued"
    seen = {}
    for j in ids[:3]:
        text = g.wait_for(lambda: (g.tmp / f"cvd.{j}").exists() and (g.tmp / f"cvd.{j}").read_text().split(),
                          what="cvd")
        cvd, unit = text
        assert cvd.startswith("MIG-") and "," not in cvd
        assert gpus[int(unit)]["uuid"] == cvd
        seen[cvd] = j
    assert len(seen) == 3
    # usage is attributed per MIG device (the fake reports each job's process on its own)
    g.wait_for(lambda: all(max(g.job(j).get("gpu_usage", {}).get("peak_gpu_memory_mb", [0])) >= 300
                           for j in ids[:3]), what="per-MIG usage")
    assert g.job(ids[0])["gpu_usage"]["gpu_uuids"][0].startswith("MIG-")
    go.touch()
    for j in ids:
        g.wait_state(j, "Finished")


def test_set_gpus_names_one_mig_device(gflow):
    g = gflow
    g.set_scenario("gpu 0\nmig 0 count=2\ngpu 1\n")
    g.start()
    r = g.cli("gctl", "set-gpus", "0:1", check=True)
    gpus = g.api("GET", "/gpus")[1]["gpus"]
    assert [x["allowed"] for x in gpus] == [False, True, False], r.stdout
    r = g.cli("gctl", "set-gpus", "0:5")
    assert r.returncode != 0 and "GPU 0 has no MIG device 5" in r.stderr, r.stderr
    r = g.cli("gctl", "set-gpus", "1:0")
    assert r.returncode != 0 and "GPU 1 has no MIG device 0" in r.stderr, r.stderr
    g.cli("gctl", "set-gpus", "1,0:0", check=True)
    gpus = g.api("GET", "/gpus")[1]["gpus"]
    assert [x["allowed"] for x in gpus] == [True, False, True]
    jid = g.submit("--gpus", "2", "sh", "-c", f'echo "$CUDA_VISIBLE_DEVICES" > {g.tmp}/cvd')
    g.wait_state(jid, "Finished")
    cvd = (g.tmp / "cvd").read_text().strip().split(",")
    assert cvd == [gpus[0]["uuid"], "1"], cvd


def test_mig_mode_without_devices_is_down(gflow):
    g = gflow
    g.set_scenario("gpu 0\nmig 0 count=0\n")
    g.start()
    gpus = g.api("GET", "/gpus")[1]["gpus"]
    assert gpus[0]["state"] == "down" and "no MIG devices" in gpus[0]["reason"]
