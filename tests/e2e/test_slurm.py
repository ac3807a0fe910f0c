"""gbatch --cluster against a real single-node Slurm (Debian's slurm-wlm and
munge) started here as root by bench/slurm-up.sh: munged on its own socket,
slurmctld and slurmd on free ports with a node of 2 fake GPUs (gres.conf File=/dev/null...), no
accounting database (squeue keeps ended jobs for an hour: MinJobAge; the
job completion log backs sacct --completion). Everything is torn down
afterwards. Skipped, saying why, when not root or Slurm is not installed.
"""
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import Gflow, SLOW, free_port

SLURM_BINS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue")


def _slurm_missing():
    if os.geteuid() != 0:
        return "the Slurm tests start slurmctld, slurmd and munged as root"
    for b in SLURM_BINS:
        if not shutil.which(b, path="/usr/sbin:/usr/bin:/sbin:/bin"):
            return f"{b} is not installed (Debian: slurm-wlm munge)"
    return None


UP = Path(__file__).resolve().parents[2] / "bench" / "slurm-up.sh"


class Slurm:
    """bench/slurm-up.sh's Slurm in a directory of our own, with a node of 8
    CPUs and 2 fake GPUs and ended jobs kept for an hour."""

    def __init__(self):
        self.top = Path(tempfile.mkdtemp(prefix="gflow-slurm-"))
        self.top.chmod(0o755)   # other users' sbatch reach munge.sock and slurm.conf
        self.dir = self.top / "s"
        self.conf = self.dir / "slurm.conf"
        self.env = {"SLURM_CONF": str(self.conf), "PATH": "/usr/sbin:/usr/bin:/bin"}
        d = self.dir
        self.up_env = dict(
            self.env, GFLOW_SLURM_DIR=str(d), GFLOW_SLURM_NODENAME="g" + uuid.uuid4().hex[:8],
            GFLOW_SLURM_NODE="CPUs=8 RealMemory=4000 Gres=gpu:2",
            GFLOW_SLURM_GRES="AutoDetect=off\nName=gpu File=/dev/null\nName=gpu File=/dev/zero",
            GFLOW_SLURM_EXTRA=(f"ClusterName=gflowtest\nSchedulerType=sched/builtin\nGresTypes=gpu\n"
                               f"JobCompType=jobcomp/filetxt\nJobCompLoc={d}/jobcomp.txt\nMinJobAge=3600"))

    def logs(self):
        out = []
        for f in sorted((self.dir / "log").glob("*")):
            out.append(f"==== {f.name}\n" + f.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def run(self, *args, check=True):
        r = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=30)
        if check and r.returncode:
            raise AssertionError(f"{args}: {r.returncode}\n{r.stdout}{r.stderr}\n{self.logs()}")
        return r

    def start(self):
        r = subprocess.run([str(UP), "start"], env=self.up_env, capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise AssertionError(f"bench/slurm-up.sh start: {r.returncode}\n{r.stdout}{r.stderr}")

    def stop(self):
        subprocess.run([str(UP), "stop"], env=self.up_env, capture_output=True, timeout=60)
        shutil.rmtree(self.top, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm():
    why = _slurm_missing()
    if why:
        pytest.skip(why)
    s = Slurm()
    try:
        s.start()
    except BaseException:
        s.stop()
        raise
    yield s
    s.stop()


def cluster_config(g, extra=""):
    remote = g.tmp / "remote"
    cfg = g.home / ".config" / "gflow"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "gflow.toml").write_text(
        f'[clusters.test]\ntype = "slurm"\nremote_dir = "{remote}"\n{extra}')
    return remote


@pytest.fixture
def sg(tmp_path, slurm):
    """A personal gflowd whose user has [clusters.test]: the Slurm above."""
    g = Gflow(tmp_path)
    g.env["SLURM_CONF"] = slurm.env["SLURM_CONF"]
    g.slurm = slurm
    cluster_config(g)
    g.start()
    yield g
    g.cleanup()


def submit_remote(g, *args, env=None):
    r = g.cli("gbatch", "--cluster", "test", *args, check=True, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")]
    assert lines, r.stdout + r.stderr
    return [(int(ln.split()[3]), ln.split()[-1]) for ln in lines]


def wait_remote(g, jid, states, timeout=30):
    """Refresh through gqueue -a (which mirrors Slurm) until job jid is in states."""
    if isinstance(states, str):
        states = {states}
    deadline = time.time() + timeout * SLOW
    while True:
        r = g.cli("gqueue", "-a", "-f", "JOBID,ST,STATE,CLUSTER,REASON")
        assert r.returncode == 0, r.stderr
        j = g.job(jid)
        if j["state"] in states:
            return j, r.stdout
        if time.time() > deadline:
            raise AssertionError(f"job {jid} is {j['state']} ({j.get('reason')}), not {states}\n"
                                 f"{r.stdout}{r.stderr}\n{g.slurm.run('squeue', '-t', 'all').stdout}")
        time.sleep(0.3)


def show(g, jid):
    r = g.cli("gjob", "show", str(jid), check=True)
    return dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)


def row_of(table, jid):
    for ln in table.splitlines():
        w = ln.split()
        if w and w[0] == str(jid):
            return w
    raise AssertionError(f"job {jid} not in:\n{table}")


def test_plain_job_runs_on_slurm_and_shows_everywhere(sg):
    say = "echo hello from $GFLOW_JOB_ID on $GFLOW_CLUSTER secret=${MY_SECRET:-none}"
    [(jid, sid)] = submit_remote(sg, "sh", "-c", say, env={"MY_SECRET": "s3cret"})
    [(jid2, _)] = submit_remote(sg, "--export-env", "sh", "-c", say, env={"MY_SECRET": "s3cret"})
    j, table = wait_remote(sg, jid, "Finished")
    assert row_of(table, jid)[1:4] == ["CD", "Finished", "test"]
    assert j["cluster"] == "test" and j["slurm_id"] == sid
    s = show(sg, jid)
    assert s["Cluster"] == "test" and s["SlurmJobId"] == sid and s["ExitCode"].startswith("0")
    log = sg.cli("gjob", "log", str(jid), check=True).stdout
    assert f"hello from {sid} on test secret=none" in log      # not carried by default
    wait_remote(sg, jid2, "Finished")
    assert "secret=s3cret" in sg.cli("gjob", "log", str(jid2), check=True).stdout
    # filtered by cluster: this job only
    r = sg.cli("gqueue", "-a", "--cluster", "test", "-f", "JOBID,CLUSTER", check=True)
    assert str(jid) in r.stdout
    r = sg.cli("gqueue", "-a", "--cluster", "other", "-f", "JOBID,CLUSTER", check=True)
    assert str(jid) not in r.stdout
    r = sg.cli("gjob", "redo", str(jid))
    assert r.returncode != 0 and "submit it again with gbatch --cluster test" in r.stderr


def test_script_job_is_copied_with_its_directives(sg):
    work = sg.tmp / "work"
    work.mkdir()
    script = work / "job.sh"
    script.write_text("#!/bin/sh\n# GFLOW --time 5\necho from script \"$1\" in $(pwd)\n")
    script.chmod(0o755)
    r = sg.cli("gbatch", "--cluster", "test", "job.sh", "a b", cwd=work, check=True)
    jid = int(r.stdout.split()[3])
    script.write_text("echo changed after submission\n")     # the copy runs, not this
    j, _ = wait_remote(sg, jid, "Finished")
    assert j["name"] == "job.sh" and j["time_limit_secs"] == 300
    assert f"from script a b in {work}" in sg.cli("gjob", "log", str(jid), check=True).stdout


def test_failing_job_exit_code(sg):
    [(jid, sid)] = submit_remote(sg, "sh", "-c", "exit 3")
    # gflow cluster sync: every open cluster job at once, saying what it saw
    def synced():
        r = sg.cli("gflow", "cluster", "sync", check=True)
        return f"job {jid}: Slurm job {sid} on test is F" in r.stdout
    sg.wait_for(synced, what="gflow cluster sync to see the failure")
    assert sg.job(jid)["state"] == "Failed"
    wait_remote(sg, jid, "Failed")
    s = show(sg, jid)
    assert s["ExitCode"].startswith("3"), s
    assert s["State"] == "Failed"


def test_array_with_limit_runs_one_at_a_time(sg):
    jobs = submit_remote(sg, "--array", "1-3%1", "sh", "-c", "sleep 1; echo task $GFLOW_ARRAY_TASK_ID")
    assert len(jobs) == 3
    ids = [j for j, _ in jobs]
    for jid in ids:
        wait_remote(sg, jid, "Finished", timeout=40)
    got = [sg.job(j) for j in ids]
    assert [j["array_task_id"] for j in got] == [1, 2, 3]
    for a, b in zip(got, got[1:]):
        assert b["start_time"] >= a["end_time"], got     # %1: never two at once
    assert "task 2" in sg.cli("gjob", "log", str(ids[1]), check=True).stdout


def test_dependency_chain_auto_cancel(sg):
    [(a, _)] = submit_remote(sg, "sh", "-c", "sleep 1; exit 1")
    [(b, _)] = submit_remote(sg, "--depends-on", str(a), "true")
    [(c, _)] = submit_remote(sg, "--depends-on", str(b), "true")
    wait_remote(sg, a, "Failed")
    wait_remote(sg, b, "Cancelled", timeout=40)
    wait_remote(sg, c, "Cancelled", timeout=40)
    # a local job cannot be waited for by a Slurm job
    local = sg.submit("--hold", "true")
    r = sg.cli("gbatch", "--cluster", "test", "--depends-on", str(local), "true")
    assert r.returncode != 0 and "own cluster" in r.stderr


def test_sweep_two_by_two_is_one_array(sg):
    jobs = submit_remote(sg, "--param", "a=1,2", "--param", "b=x,y", "sh", "-c", "echo point {a}-{b}")
    assert len(jobs) == 4
    assert len({sid.split("_")[0] for _, sid in jobs}) == 1    # one Slurm array job
    logs = []
    for jid, _ in jobs:
        wait_remote(sg, jid, "Finished", timeout=40)
        logs.append(sg.cli("gjob", "log", str(jid), check=True).stdout.strip())
    assert logs == ["point 1-x", "point 1-y", "point 2-x", "point 2-y"]
    assert sg.job(jobs[3][0])["params"] == {"a": "2", "b": "y"}


def test_gcancel_pending_job(sg):
    [(jid, sid)] = submit_remote(sg, "--begin", "now+1h", "true")
    wait_remote(sg, jid, "Queued")
    table = sg.wait_for(lambda: (lambda out: row_of(out, jid)[-1] == "BeginTime" and out)(
        sg.cli("gqueue", "-f", "JOBID,ST,STATE,CLUSTER,REASON").stdout), what="reason BeginTime")
    assert row_of(table, jid)[1:4] == ["PD", "Queued", "test"]
    r = sg.cli("gjob", "update", str(jid), "--time", "5")
    assert r.returncode != 0 and "is on Slurm cluster test" in r.stderr
    st, body = sg.api("POST", "/jobs/cancel", {"ids": [jid]})
    assert "is on Slurm cluster test" in body["errors"][0]["error"]
    r = sg.cli("gcancel", str(jid), check=True)
    assert f"Cancelled job {jid} (Slurm job {sid} on cluster test)" in r.stdout
    wait_remote(sg, jid, "Cancelled")
    r = sg.slurm.run("squeue", "-h", "-t", "all", "-j", sid, "-o", "%T")
    assert r.stdout.strip() == "CANCELLED"


def test_hold_and_release_go_to_scontrol(sg):
    [(jid, sid)] = submit_remote(sg, "--begin", "now+1h", "true")
    sg.cli("gjob", "hold", str(jid), check=True)
    j, _ = wait_remote(sg, jid, "Hold")
    assert j["reason"] == "JobHeldUser"
    sg.cli("gjob", "release", str(jid), check=True)
    wait_remote(sg, jid, "Queued")
    sg.cli("gcancel", str(jid), check=True)


def test_refusals_record_nothing(sg):
    before = sg.api("GET", "/jobs?users=all&states=PD,H,R,CD,F,CA,TO")[1]["jobs"]
    r = sg.cli("gbatch", "--cluster", "test", "--gpus", "3", "true")
    assert r.returncode == 1 and "sbatch refused the job" in r.stderr and "3 GPUs" in r.stderr
    cluster_config(sg, 'partition = "nosuch"\n')
    r = sg.cli("gbatch", "--cluster", "test", "true")
    assert r.returncode == 1 and "sbatch refused the job" in r.stderr
    assert "partition" in r.stderr.lower()
    r = sg.cli("gbatch", "--cluster", "nosuch", "true")
    assert r.returncode == 1 and "unknown cluster 'nosuch'" in r.stderr
    after = sg.api("GET", "/jobs?users=all&states=PD,H,R,CD,F,CA,TO")[1]["jobs"]
    assert before == after


def test_gpu_job_gets_gres(sg):
    [(jid, _)] = submit_remote(sg, "--gpus", "2", "sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES")
    wait_remote(sg, jid, "Finished")
    assert "gpus=0,1" in sg.cli("gjob", "log", str(jid), check=True).stdout


def test_timeout(sg):
    [(jid, _)] = submit_remote(sg, "--time", "1", "sleep", "300")
    wait_remote(sg, jid, "Running")
    j, _ = wait_remote(sg, jid, "Timeout", timeout=150)
    assert j["reason"] and "TIMEOUT" in j["reason"]


def test_ssh_path_through_a_local_sshd(system_gflow, slurm):
    """A throwaway user whose profile names a host: every Slurm command goes
    through their own ssh (a throwaway key) to a throwaway sshd here."""
    if not shutil.which("sshd", path="/usr/sbin:/usr/bin") or not shutil.which("ssh-keygen"):
        pytest.skip("openssh-server is not installed")
    g = system_gflow
    g.start()
    user = g.add_user("s")
    subprocess.run(["usermod", "-p", "*", user], check=True)     # not locked: sshd lets it in
    home = g.home_of(user)
    d = g.base / "sshd"
    d.mkdir(mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "hostkey")], check=True)
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / "id")], check=True)
    (ssh / "authorized_keys").write_text((ssh / "id.pub").read_text())
    port = free_port()
    (ssh / "config").write_text(
        f"Host gflowtest\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile ~/.ssh/id\n"
        "  StrictHostKeyChecking no\n  UserKnownHostsFile ~/.ssh/known_hosts\n")
    cfg = home / ".config" / "gflow"
    cfg.mkdir(parents=True)
    (cfg / "gflow.toml").write_text(
        f'[clusters.test]\ntype = "slurm"\nhost = "gflowtest"\nremote_dir = "{home}/remote"\n')
    subprocess.run(["chown", "-R", f"{user}:{user}", str(home)], check=True)
    (d / "sshd_config").write_text(f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {d}/hostkey
PidFile {d}/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers {user}
SetEnv SLURM_CONF={slurm.conf}
""")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    log = open(d / "sshd.log", "wb")
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    try:
        g.wait_for(lambda: subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"],
                                          capture_output=True).returncode == 0, what="sshd")
        r = g.as_user(user, "gbatch", "--cluster", "test", "sh", "-c", "echo via ssh as $(id -un)")
        assert r.returncode == 0, r.stderr + (d / "sshd.log").read_text(errors="replace")
        jid = int(r.stdout.split()[3])
        assert "to cluster test as Slurm job" in r.stdout

        def finished():
            g.as_user(user, "gqueue", "-a", check=True)
            return g.job(jid)["state"] == "Finished"
        g.wait_for(finished, timeout=40, what="the job over ssh")
        out = g.as_user(user, "gjob", "log", str(jid), check=True).stdout
        assert f"via ssh as {user}" in out
        s = g.as_user(user, "gjob", "show", str(jid), check=True).stdout
        assert "Cluster=test" in s and "SlurmJobId=" in s
        assert f"Accepted publickey for {user}" in (d / "sshd.log").read_text(errors="replace")
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)
        slurm.run("scancel", "--quiet", "-u", user, check=False)


# ---- no Slurm needed ------------------------------------------------------

def test_dry_run_prints_script_command_and_losses(gflow):
    g = gflow
    remote = cluster_config(g, 'partition = "gpu"\naccount = "lab"\nprelude = "module load cuda"\n'
                               'path_map = { "/work" = "/scratch/me" }\n')
    g.start()
    r = g.cli("gbatch", "--cluster", "test", "--dry-run", "--gpus", "2", "--memory", "8G",
              "--time", "1:30", "--project", "vision", "--priority", "50", "--name", "train",
              "--array", "1-5%2", "--notify-email", "me@example.org", "--notify-on", "job_failed",
              "--conda-env", "torch", "python", "/work/train.py", "--lr", "it's", cwd="/tmp",
              env={"CONDA_EXE": "/bin/true"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for line in ("#SBATCH --gres=gpu:2", "#SBATCH --mem=8192M", "#SBATCH --time=0-00:02:00",
                 "#SBATCH --job-name=train", "#SBATCH --partition=gpu", "#SBATCH --account=lab",
                 "#SBATCH --comment=gflow-project=vision", "#SBATCH --array=1-5%2",
                 "#SBATCH --mail-user=me@example.org", "#SBATCH --mail-type=FAIL",
                 f"#SBATCH --output={remote}/", "module load cuda", "conda activate torch",
                 "exec python /scratch/me/train.py --lr 'it'\\''s'",
                 'export GFLOW_ARRAY_TASK_ID="$SLURM_ARRAY_TASK_ID"',
                 f"sbatch --parsable {remote}/"):
        assert line in out, f"{line!r} not in:\n{out}"
    assert "--time: Slurm counts whole minutes" in out
    assert "--priority" in out.split("#### not carried over exactly")[1]
    assert not g.api("GET", "/jobs?states=PD,H,R,CD,F,CA,TO")[1]["jobs"]    # nothing recorded


def test_dry_run_over_ssh_names_the_ssh_command(gflow):
    g = gflow
    cluster_config(g, 'host = "login.example.org"\n')
    g.start()
    r = g.cli("gbatch", "--cluster", "test", "--dry-run", "--depends-on-any", "1,2", "true")
    # dependencies must be jobs of the same cluster (these do not exist)
    assert r.returncode == 1 and "--depends-on" in r.stderr
    r = g.cli("gbatch", "--cluster", "test", "--dry-run", "--export-env", "true",
              env={"MY_SETTING": "a b", "SSH_AUTH_SOCK": "/x"})
    assert r.returncode == 0, r.stderr
    assert "ssh -o BatchMode=yes -o ConnectTimeout=15 login.example.org -- 'sbatch --parsable " in r.stdout
    assert "export 'MY_SETTING=a b'" in r.stdout and "SSH_AUTH_SOCK" not in r.stdout.split("####")[1]
    r = g.cli("gbatch", "--export-env", "true")
    assert r.returncode == 2 and "--export-env goes with --cluster" in r.stderr


def test_unreachable_host_is_one_line(gflow):
    g = gflow
    cluster_config(g, 'host = "nosuchhost.invalid"\n')
    g.start()
    r = g.cli("gbatch", "--cluster", "test", "true")
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot reach cluster test over ssh (nosuchhost.invalid)" in r.stderr
    assert not g.api("GET", "/jobs?states=PD,H,R,CD,F,CA,TO")[1]["jobs"]


def test_export_writes_scripts_for_local_jobs(gflow):
    g = gflow
    cluster_config(g, 'path_map = { "/tmp" = "/scratch/tmp" }\n')
    g.start()
    jid = g.submit("--hold", "--gpus", "0", "--time", "10", "--name", "prep", "sh", "-c", "echo x")
    out = g.tmp / "scripts"
    out.mkdir()
    r = g.cli("gflow", "cluster", "export", str(jid), "--cluster", "test", "--dir", str(out), check=True)
    script = out / f"gflow-job-{jid}.sbatch"
    assert f"Wrote {script}" in r.stdout
    text = script.read_text()
    assert "#SBATCH --job-name=prep" in text and "#SBATCH --time=0-00:10:00" in text
    assert "exec sh -c 'echo x'" in text and "#SBATCH --chdir=/scratch/tmp/" in text
    r = g.cli("gflow", "cluster", "export", str(jid), "--cluster", "test", "--dir", str(out))
    assert r.returncode == 1 and "cannot create" in r.stderr       # never overwritten
    r = g.cli("gflow", "cluster", "export", str(jid))
    assert r.returncode == 2 and "usage: gflow cluster" in r.stderr


def test_config_refuses_unknown_cluster_keys(gflow):
    g = gflow
    cluster_config(g, 'partitio = "gpu"\n')
    r = g.cli("gbatch", "--cluster", "test", "--dry-run", "true")
    assert r.returncode == 1
    assert "unknown key 'partitio' in [clusters.test]" in r.stderr
