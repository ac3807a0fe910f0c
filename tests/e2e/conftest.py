"""End-to-end fixtures: a real gflowd in a throwaway HOME/XDG tree, on its own
socket and TCP port, with the fake NVML library on LD_LIBRARY_PATH, driven
through the real CLI. Teardown stops the daemon and kills every process the
test started (found by a tag in their environment), even when a test fails.
"""
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

BUILD = os.environ.get("GFLOW_BUILD_DIR")
SANITIZED = os.environ.get("GFLOW_SANITIZED") == "1"
# Sanitized binaries are slower; stretch every timeout for them.
SLOW = 3.0 if SANITIZED else 1.0


def build_dir():
    if not BUILD:
        pytest.skip("GFLOW_BUILD_DIR is not set (run through `make test`)")
    return Path(BUILD)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def pids_with(*entries):
    """Processes whose environment holds every one of these VAR=VALUE entries."""
    needles = [e.encode() for e in entries]
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{d}/stat", "rb") as f:
                if f.read().rpartition(b")")[2].split()[0] == b"Z":
                    continue    # a zombie is gone, only not yet waited for
        except OSError:
            continue
        if all(n in env for n in needles):
            pids.append(int(d))
    return pids


class DirEvents:
    """inotify on one directory, as a context manager: events() is every
    (name, mask) seen so far."""
    IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x80, 0x100, 0x200

    def __init__(self, path, mask):
        self.path, self.mask, self.buf = path, mask, b""

    def __enter__(self):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0 and libc.inotify_add_watch(self.fd, str(self.path).encode(), self.mask) >= 0
        return self

    def events(self):
        import struct
        while True:
            try:
                self.buf += os.read(self.fd, 65536)
            except BlockingIOError:
                break
        out, buf = [], self.buf
        while buf:
            _, mask, _, n = struct.unpack("iIII", buf[:16])
            out.append((buf[16:16 + n].rstrip(b"\0").decode(), mask & self.mask))
            buf = buf[16 + n:]
        return out

    def __exit__(self, *exc):
        os.close(self.fd)


def tagged_pids(tag, var="GFLOW_E2E_TAG"):
    """Processes whose environment carries this test's tag (var=tag)."""
    return pids_with(f"{var}={tag}")


class Gflow:
    def __init__(self, tmp: Path, executor="process"):
        self.build = build_dir()
        self.tmp = tmp
        self.tag = uuid.uuid4().hex
        self.home = tmp / "home"
        self.runtime = tmp / "run"
        for d in (self.home, self.runtime):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data = self.home / ".local/share/gflow"
        self.socket = self.runtime / "gflow" / "gflowd.sock"
        self.port = free_port()
        self.scenario = tmp / "nvml-scenario"
        self.scenario.write_text("")
        self.proc = None
        self.cgroups = set()    # groups the daemon made, removed at cleanup
        self.log = tmp / "gflowd.out"
        self.env = {
            "PATH": f"{self.build}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "TMUX_TMPDIR": str(tmp),
            "GFLOW_DAEMON__HOST": "127.0.0.1",
            "GFLOW_DAEMON__PORT": str(self.port),
            "GFLOW_EXECUTOR__TYPE": executor,
            # CPUs not counted: a test machine may have 2, and tests run more
            # jobs at once than that (test_cpus.py sets or drops it)
            "GFLOW_DAEMON__CPUS": "0",
            "GFLOW_KILL_GRACE_SECS": "1",
            "LD_LIBRARY_PATH": str(self.build / "tests/fake-nvml"),
            "FAKE_NVML_SCENARIO": str(self.scenario),
            "GFLOW_E2E_TAG": self.tag,
        }
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                self.env[k] = os.environ[k]

    # ---- the daemon -------------------------------------------------------
    def start(self, *args, wait=True):
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [str(self.build / "gflowd"), "run", *args],
            env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=self.tmp,
            start_new_session=True)
        out.close()
        if wait:
            self.wait_up()
        return self.proc

    def wait_up(self, timeout=15):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            if self.proc and self.proc.poll() is not None:
                raise AssertionError(f"gflowd exited with {self.proc.returncode}:\n{self.daemon_log()}")
            try:
                if self.api("GET", "/health")[0] == 200:
                    info = self.api("GET", "/info")[1]
                    for d in (info.get("tracking", {}).get("cgroup"), info.get("memory_cgroup")):
                        if d:
                            self.cgroups.add(d)
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise AssertionError("gflowd did not answer:\n" + self.daemon_log())

    def daemon_log(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode if self.proc else 0
        self.proc = None
        return rc

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def cleanup(self):
        try:
            self.stop()
            if SANITIZED:
                log = self.daemon_log()
                for word in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                    assert word not in log, "the sanitizers reported a problem:\n" + log[-4000:]
        finally:
            subprocess.run(["tmux", "kill-server"], env=self.env, capture_output=True)
            subprocess.run(["tmux", "-S", str(self.runtime / "gflow" / "tmux.sock"), "kill-server"],
                           env=self.env, capture_output=True)
            for _ in range(3):
                pids = tagged_pids(self.tag)
                if not pids:
                    break
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.05)
            self.remove_cgroups()

    # ---- the CLI and the API ---------------------------------------------
    def cli(self, *args, check=False, cwd=None, env=None, input=None, timeout=60):
        e = dict(self.env)
        if env:
            e.update(env)
        r = subprocess.run([str(a) for a in args], env=e, cwd=cwd or self.tmp, input=input,
                           capture_output=True, text=True, timeout=timeout * SLOW)
        if check and r.returncode != 0:
            raise AssertionError(f"{args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def submit(self, *args, cwd=None, env=None):
        """gbatch ARGS; returns the new job id."""
        r = self.cli("gbatch", *args, cwd=cwd, env=env, check=True)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")][-1]
        return int(line.split()[3])

    def api(self, method, path, body=None, timeout=10):
        c = UnixHTTPConnection(str(self.socket), timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, raw
        finally:
            c.close()

    def job(self, jid):
        st, body = self.api("GET", f"/jobs/{jid}")
        assert st == 200, body
        return body["job"]

    def wait_state(self, jid, states, timeout=20):
        if isinstance(states, str):
            states = {states}
        deadline = time.time() + timeout * SLOW
        while True:
            j = self.job(jid)
            if j["state"] in states:
                return j
            if time.time() > deadline:
                raise AssertionError(f"job {jid} is {j['state']} ({j['reason']}), not {states}\n"
                                     + self.daemon_log())
            time.sleep(0.05)

    def wait_for(self, pred, timeout=20, what="condition"):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}\n" + self.daemon_log())

    def set_scenario(self, text):
        tmp = self.scenario.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.scenario)

    def gpus(self, n, total_mb=81920):
        self.set_scenario("".join(
            f'gpu {i} name="Fake H100" total_mb={total_mb}\n' for i in range(n)))

    def job_pids(self, jid):
        """The live processes of job jid (they carry its GFLOW_JOB_ID)."""
        return pids_with(f"GFLOW_E2E_TAG={self.tag}", f"GFLOW_JOB_ID={jid}")

    def remove_cgroups(self):
        for top in self.cgroups:
            for root, dirs, _ in os.walk(top, topdown=False):
                for d in dirs:
                    try:
                        os.rmdir(os.path.join(root, d))
                    except OSError:
                        pass
            try:
                os.rmdir(top)
            except OSError:
                pass

    def log_of(self, jid):
        return (self.data / "logs" / f"{jid}.log").read_text(errors="replace")


@pytest.fixture
def gflow(tmp_path):
    g = Gflow(tmp_path)
    yield g
    g.cleanup()


@pytest.fixture(params=["process", "tmux"])
def gflow_exec(request, tmp_path):
    """The same test under each executor."""
    if request.param == "tmux" and subprocess.run(["which", "tmux"], capture_output=True).returncode:
        pytest.skip("tmux is not installed")
    g = Gflow(tmp_path, executor=request.param)
    yield g
    g.cleanup()


# ---- the machine's daemon (system mode), with real users ---------------------

class SystemGflow(Gflow):
    """A system daemon (`gflowd run --system`, as root) under a relocated root
    in a world-traversable directory, and throwaway users who talk to it
    through their own copy of the clients (the build directory need not be
    reachable by them). Users are made with useradd and removed with userdel."""

    def __init__(self, tmp: Path, executor="process"):
        super().__init__(tmp, executor)
        self.base = Path(tempfile.mkdtemp(prefix="gflow-sys-", dir="/tmp"))
        self.base.chmod(0o755)
        self.root = self.base / "root"
        self.root.mkdir(mode=0o755)
        self.bin = self.base / "bin"
        self.bin.mkdir(mode=0o755)
        shutil.copy2(self.build / "gflow", self.bin / "gflow")
        shutil.copy2(self.build / "gflowd", self.bin / "gflowd")
        shutil.copy2(self.build / "gflow-runner", self.bin / "gflow-runner")
        for name in ("gbatch", "gqueue", "ginfo", "gjob", "gcancel", "gctl", "gstats", "galloc"):
            (self.bin / name).symlink_to("gflow")
        self.env["GFLOW_SYSTEM_ROOT"] = str(self.root)
        self.socket = self.root / "run/gflow/gflowd.sock"
        self.data = self.root / "var/lib/gflow"
        self.users = []

    def start(self, *args, wait=True):
        return super().start("--system", *args, wait=wait)

    def add_user(self, suffix, groups=()):
        """A new user (unique per test run), with a home of their own."""
        name = f"gf{self.tag[:8]}{suffix}"
        home = self.base / "home" / name
        home.parent.mkdir(mode=0o755, exist_ok=True)
        cmd = ["useradd", "-M", "-d", str(home), "-s", "/bin/sh", "-U", name]
        if groups:
            cmd[1:1] = ["-G", ",".join(groups)]
        subprocess.run(cmd, check=True, capture_output=True)
        self.users.append(name)
        home.mkdir(mode=0o750)
        shutil.chown(home, name, name)
        return name

    def add_group(self, name):
        subprocess.run(["groupadd", name], check=True, capture_output=True)
        self.groups = getattr(self, "groups", []) + [name]
        return name

    def home_of(self, user):
        return self.base / "home" / user

    def user_env(self, user, env=None):
        e = {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home_of(user)),
            "USER": user,
            "LANG": "C.UTF-8",
            "GFLOW_SYSTEM_ROOT": str(self.root),
            "GFLOW_E2E_TAG": self.tag,
        }
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                e[k] = os.environ[k]
        e.update(env or {})
        return e

    def as_user(self, user, *args, check=False, env=None, cwd=None, input=None, timeout=60):
        """Run a command as user (their uid, group and supplementary groups)."""
        r = subprocess.run([str(a) for a in args], user=user, group=user,
                           extra_groups=os.getgrouplist(user, pwd.getpwnam(user).pw_gid),
                           env=self.user_env(user, env), cwd=cwd or self.home_of(user), input=input,
                           capture_output=True, text=True, timeout=timeout * SLOW)
        if check and r.returncode != 0:
            raise AssertionError(f"{user}: {args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def submit_as(self, user, *args, env=None, cwd=None):
        r = self.as_user(user, "gbatch", *args, env=env, cwd=cwd, check=True)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("Submitted batch job ")][-1]
        return int(line.split()[3])

    def cleanup(self):
        try:
            super().cleanup()
        finally:
            for u in self.users:
                subprocess.run(["pkill", "-9", "-u", u], capture_output=True)
                subprocess.run(["userdel", "-f", u], capture_output=True)
            for grp in getattr(self, "groups", []):
                subprocess.run(["groupdel", grp], capture_output=True)
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def system_gflow(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("system mode needs root (to run the daemon and to make users)")
    g = SystemGflow(tmp_path)
    yield g
    g.cleanup()
