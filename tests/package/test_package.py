"""The Debian package, used as a lab admin would (scripts/test-package.sh,
the last step of `make test`): `apt-get install ./gflow_*.deb`, the unit
enabled but nothing started, `gflowd up --system` through the installed
paths, jobs of two throwaway users, `man gbatch`, bash completion in a
login shell, then `dpkg --purge` and nothing left: no file of the package,
no /etc/gflow, /var/lib/gflow or /run/gflow, no process. The unit is
checked with systemd-analyze verify (it needs no running systemd), the
package with lintian. GFLOW_DEB names the .deb; root only.

The tests run in this order and share one installation (the module's
fixture, which purges it and removes the users whatever happens)."""
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEB = os.environ.get("GFLOW_DEB")
UNIT = "/lib/systemd/system/gflowd.service"
WANTS = "/etc/systemd/system/multi-user.target.wants/gflowd.service"
STATE = ("/etc/gflow", "/var/lib/gflow", "/run/gflow")
SYSTEMD = os.path.isdir("/run/systemd/system")


def run(*args, check=True, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def deps_set(name):
    return run(REPO / "scripts/deps.sh", "--list", name).stdout.split()


def test_run_set_holds_no_test_tool():
    """make and make run install what building and running need, no test
    tool and no service (scripts/deps.sh)."""
    run_set = set(deps_set("run"))
    test_only = {"clang", "libcmocka-dev", "python3-pytest", "python3-pytest-xdist", "python3-selenium",
                 "chromium", "chromium-driver", "prometheus", "slurm-wlm", "munge", "openssh-server",
                 "lintian", "debhelper", "task-spooler"}
    assert not run_set & test_only, run_set & test_only
    assert test_only - {"task-spooler"} <= set(deps_set("test"))
    assert "task-spooler" in deps_set("bench") and "slurm-wlm" not in deps_set("bench")
    assert {"slurm-wlm", "munge"} <= set(deps_set("slurm"))


def tagged_pids(tag):
    """Processes whose environment holds GFLOW_PKG_TAG=tag."""
    needle = f"GFLOW_PKG_TAG={tag}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                env = Path(f"/proc/{d}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if needle in env:
                pids.append(int(d))
    return pids


def installed_pids():
    """Processes running the package's programs (also once deleted)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                exe = os.readlink(f"/proc/{d}/exe")
            except OSError:
                continue
            if exe.startswith(("/usr/bin/gflowd", "/usr/libexec/gflow/")):
                pids.append(int(d))
    return pids


def wait_for(pred, timeout=20, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """The machine with the package on it, its admin and two users."""

    def __init__(self):
        self.tag = uuid.uuid4().hex
        self.base = Path(tempfile.mkdtemp(prefix="gflow-pkg-", dir="/tmp"))
        self.base.chmod(0o755)
        (self.base / "home").mkdir(mode=0o755)
        (self.base / "tmux").mkdir(mode=0o700)
        self.users = []
        self.files = []
        self.admin_env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root", "USER": "root", "LANG": "C.UTF-8",
            "TMUX_TMPDIR": str(self.base / "tmux"),    # tmux hosting: a server of our own
            "GFLOW_DAEMON__PORT": str(free_port()),    # not the default 59000 of a real daemon
            "GFLOW_DAEMON__HOST": "127.0.0.1",
            "GFLOW_PKG_TAG": self.tag,
        }

    def admin(self, *args, check=True):
        return run(*args, check=check, env=self.admin_env)

    def add_user(self, suffix):
        name = f"gfp{self.tag[:8]}{suffix}"
        home = self.base / "home" / name
        run("useradd", "-m", "-d", home, "-s", "/bin/bash", "-U", name)
        self.users.append(name)
        return name

    def as_user(self, user, *args, check=True, input=None):
        pw = pwd.getpwnam(user)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user, "LOGNAME": user,
               "SHELL": "/bin/bash", "LANG": "C.UTF-8", "MANWIDTH": "80", "GFLOW_PKG_TAG": self.tag}
        return run(*args, check=check, env=env, cwd=pw.pw_dir, input=input, user=user, group=pw.pw_gid,
                   extra_groups=os.getgrouplist(user, pw.pw_gid))

    def submit(self, user, *args):
        out = self.as_user(user, "gbatch", *args).stdout
        return int(re.search(r"Submitted batch job (\d+)", out).group(1))

    def state(self, user, jid):
        return self.as_user(user, "gqueue", "-j", str(jid), "-f", "ST").stdout.split()[-1]

    def cleanup(self):
        if run("dpkg-query", "-W", "-f=${Status}", "gflow", check=False).stdout.startswith("install"):
            run("dpkg", "--purge", "gflow", check=False)
        for u in self.users:
            run("pkill", "-9", "-u", u, check=False)
            run("userdel", "-r", "-f", u, check=False)
        for pid in tagged_pids(self.tag):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def lab():
    if not DEB:
        pytest.skip("GFLOW_DEB is not set (run through scripts/test-package.sh)")
    if os.geteuid() != 0:
        pytest.skip("installing a package needs root")
    for tool in ("dpkg", "apt-get", "useradd"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not here")
    # Never touch a real installation: the purge would take its state.
    if run("dpkg-query", "-W", "-f=${Status}", "gflow", check=False).stdout.startswith("install"):
        pytest.skip("gflow is installed on this machine; this test would replace and purge it")
    there = [p for p in STATE if os.path.exists(p)]
    if there:
        pytest.skip(f"{there} exist (a machine's daemon from source?); a purge would remove them")
    lab = Lab()
    try:
        yield lab
    finally:
        lab.cleanup()


def test_the_unit_verifies_before_install(tmp_path):
    """systemd-analyze verify needs no running systemd: CI checks the unit."""
    if not DEB:
        pytest.skip("GFLOW_DEB is not set")
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not here (Debian: systemd)")
    run("dpkg-deb", "-x", DEB, tmp_path)
    unit = tmp_path / UNIT.lstrip("/")
    text = unit.read_text()
    assert "LimitNOFILE=" in text and "KillMode=process" in text and "Delegate=yes" in text
    r = run("systemd-analyze", "verify", "--man=no", unit, check=False)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def test_lintian_finds_no_error():
    if not DEB:
        pytest.skip("GFLOW_DEB is not set")
    if not shutil.which("lintian"):
        pytest.skip("lintian is not here")
    r = run("lintian", "--fail-on", "error", DEB, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not re.search(r"^E: ", r.stdout, re.M), r.stdout


def test_install_enables_the_unit_and_starts_nothing(lab):
    env = dict(lab.admin_env, DEBIAN_FRONTEND="noninteractive")
    opts = []
    # A dpkg told to leave out man pages (Docker's images) would not give
    # `man gbatch` anything to show: an admin's machine has them.
    excl = " ".join(p.read_text() for p in Path("/etc/dpkg/dpkg.cfg.d").glob("*") if p.is_file())
    if "path-exclude" in excl:
        opts = ["-o", "DPkg::Options::=--path-include=/usr/share/man/*",
                "-o", "DPkg::Options::=--path-include=/usr/share/doc/gflow/*"]
    run("apt-get", "install", "-y", "-q", *opts, DEB, env=env)
    lab.files = run("dpkg", "-L", "gflow").stdout.split("\n")
    for path in ("/usr/bin/gflow", "/usr/bin/gflowd", "/usr/bin/gbatch", "/usr/bin/galloc", "/usr/libexec/gflow/gflow-runner",
                 "/etc/gflow/gflow.toml", UNIT, "/usr/share/man/man1/gbatch.1.gz",
                 "/usr/share/bash-completion/completions/gbatch", "/usr/share/zsh/vendor-completions/_gbatch",
                 "/usr/share/fish/vendor_completions.d/gbatch.fish"):
        assert path in lab.files, path
    assert "/usr/bin/gflow-runner" not in lab.files
    assert "/etc/gflow/gflow.toml" in run("dpkg-query", "-W", "-f=${Conffiles}", "gflow").stdout
    assert Path("/etc/gflow/gflow.toml").read_text().startswith("# gflow configuration (written by gflowd init --system)")
    # enabled, not started: the admin starts it
    assert os.path.islink(WANTS) and os.path.realpath(WANTS) == os.path.realpath(UNIT)
    assert not installed_pids() and not os.path.exists("/run/gflow/gflowd.sock")
    version = run("dpkg-query", "-W", "-f=${Version}", "gflow").stdout
    assert lab.admin("gflow", "--version").stdout.strip() == f"gflow {version}"
    assert lab.admin("gflowd", "--version").stdout.strip() == f"gflowd {version}"
    r = run("systemd-analyze", "verify", UNIT, check=False) if shutil.which("systemd-analyze") else None
    assert r is None or (r.returncode == 0 and not r.stderr.strip()), r.stderr


def test_the_machines_daemon_runs_jobs_as_their_users(lab):
    up = lab.admin("gflowd", "up", "--system")
    assert "gflowd started" in up.stdout + up.stderr, up.stdout + up.stderr
    status = lab.admin("gflowd", "status", "--system").stdout
    assert "system daemon, /run/gflow/gflowd.sock" in status and "data:      /var/lib/gflow" in status
    assert re.search(r"hosting:\s+" + ("systemd" if SYSTEMD else "(tmux|process)"), status), status
    # the runner is the installed one
    wait_for(lambda: any(os.readlink(f"/proc/{p}/exe") == "/usr/libexec/gflow/gflow-runner"
                         for p in installed_pids()), what="the standby gflow-runner")
    alice, bob = lab.add_user("a"), lab.add_user("b")
    jobs = {}
    for user in (alice, bob):
        jobs[user] = lab.submit(user, "--name", f"hello-{user}", "sh", "-c", 'echo "hello from $(id -un)"')
    for user, jid in jobs.items():
        wait_for(lambda: lab.state(user, jid) == "CD", what=f"{user}'s job {jid} to complete")
        assert lab.as_user(user, "gjob", "log", str(jid)).stdout.strip() == f"hello from {user}"
        log = Path(pwd.getpwnam(user).pw_dir) / ".local/share/gflow/logs/system" / f"{jid}.log"
        st = log.stat()
        assert st.st_uid == pwd.getpwnam(user).pw_uid and st.st_mode & 0o777 == 0o600
    # one may not read the other's log
    r = lab.as_user(alice, "gjob", "log", str(jobs[bob]), check=False)
    assert r.returncode != 0 and "only" in r.stderr, r.stderr
    everyone = lab.as_user(bob, "gqueue", "-a", "-u", "all").stdout
    assert f"hello-{alice}" in everyone and f"hello-{bob}" in everyone


def test_man_pages_and_completion_for_users(lab):
    user = lab.users[0]
    for args, head in ((["gbatch"], "gbatch(1)"), (["gflow"], "gflow(1)"), (["gflowd"], "gflowd(1)"),
                       (["5", "gflow.toml"], "gflow.toml(5)")):
        r = lab.as_user(user, "man", "-P", "cat", *args)
        assert r.stdout.lstrip().startswith(head) and "NAME" in r.stdout, (args, r.stdout[:200], r.stderr)
    # A login shell sources ~/.bashrc (Debian's skeleton loads bash-completion),
    # which loads a command's completion on first use, as Tab would.
    r = lab.as_user(user, "bash", "-l", "-i", "-c",
                    "_completion_loader gbatch; _completion_loader gflowd; complete -p gbatch gflowd",
                    input="")
    assert "complete -o default -F _gflow_complete_gbatch gbatch" in r.stdout, r.stdout + r.stderr
    assert "complete -F _gflowd gflowd" in r.stdout, r.stdout + r.stderr


def test_purge_leaves_nothing(lab):
    """dpkg --purge with the daemon still up: prerm stops it, postrm removes
    its state and configuration; no file of the package is left."""
    assert lab.files and installed_pids()
    run("dpkg", "--purge", "gflow", env=dict(lab.admin_env, DEBIAN_FRONTEND="noninteractive"))
    wait_for(lambda: not installed_pids(), what="the package's processes to end")
    assert run("dpkg-query", "-W", "-f=${Status}", "gflow", check=False).stdout.strip() in ("", "unknown ok not-installed")
    left = [f for f in lab.files if f and os.path.lexists(f) and not os.path.isdir(f)]
    assert not left, left
    assert not [p for p in STATE + ("/usr/libexec/gflow", "/usr/share/doc/gflow", WANTS) if os.path.lexists(p)]
    for u in lab.users:
        assert not run("pgrep", "-u", u, check=False).stdout.strip(), f"{u} has processes left"
    wait_for(lambda: not tagged_pids(lab.tag), what="no process of this test")
