"""gflow-runner, driven directly: the run directory's `runner` and `result`
files, the log, the environment, time limits, cancel, leftovers, --pty.

Needs GFLOW_BUILD_DIR (the runner is $GFLOW_BUILD_DIR/gflow-runner). Every
job carries a tag in its environment; each test checks that no tagged
process outlives the runner, and teardown kills any that did.
"""
import fcntl
import os
import pty
import shutil
import signal
import struct
import subprocess
import termios
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import tagged_pids

SLOW = 3.0 if os.environ.get("GFLOW_SANITIZED") == "1" else 1.0
TAG = "GFLOW_RUNNER_TEST_TAG"
RESULT_KEYS = {"exited", "exit_code", "signal", "start", "end", "ended_by",
               "peak_rss_kb", "memory_enforced", "oom", "error"}
MIB = 1 << 20


def runner_path():
    build = os.environ.get("GFLOW_BUILD_DIR")
    if not build:
        pytest.skip("GFLOW_BUILD_DIR is not set: it names the build directory holding gflow-runner")
    path = Path(build) / "gflow-runner"
    if not path.exists():
        pytest.skip(f"{path} does not exist: build gflow-runner first")
    return path


def parse_kv(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def tagged(tag):
    return tagged_pids(tag, TAG)


def children_of(pid):
    """Pids whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(proc_stat(int(d))[4]) == pid:
                    out.append(int(d))
            except (OSError, ValueError, KeyError):
                pass
    return out


def proc_stat(pid):
    """Fields of /proc/<pid>/stat after the command name, numbered as in proc(5)."""
    data = Path(f"/proc/{pid}/stat").read_text()
    rest = data[data.rindex(")") + 2:].split()
    return {i + 3: v for i, v in enumerate(rest)}


def proc_state(pid):
    try:
        return proc_stat(pid)[3]
    except OSError:
        return None


class Run:
    """One gflow-runner process with its own run directory and log."""

    def __init__(self, tmp, argv, env=None, args=(), cwd=None, grace="1", log=None,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=(),
                 write_env=True):
        self.tmp = Path(tmp)
        self.dir = self.tmp / "run"
        self.dir.mkdir(exist_ok=True)
        self.log = Path(log) if log else self.tmp / "job.log"
        self.tag = uuid.uuid4().hex
        job_env = dict(env if env is not None else {"PATH": "/usr/bin:/bin", "HOME": str(self.tmp)})
        job_env[TAG] = self.tag
        if write_env:
            blob = b"".join(f"{k}={v}".encode() + b"\0" for k, v in job_env.items())
            (self.dir / "env").write_bytes(blob)
        self.cmd = [str(runner_path()), "--job", "7", "--dir", str(self.dir), "--log", str(self.log),
                    "--cwd", str(cwd or self.tmp)]
        if grace is not None:
            self.cmd += ["--grace", grace]
        self.cmd += [*args, "--", *argv]
        # The runner's own environment holds a variable the job must not see.
        renv = dict(os.environ, GFLOW_RUNNER_TEST_LEAK="leaked")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, start_new_session=True, stdin=stdin, stdout=stdout,
                                     stderr=subprocess.PIPE, env=renv, pass_fds=pass_fds)

    def wait(self, timeout=20):
        try:
            _, err = self.proc.communicate(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"gflow-runner did not finish within {timeout * SLOW} s")
        self.elapsed = time.monotonic() - self.started
        self.stderr = err.decode(errors="replace")
        return self.proc.returncode

    def finish(self, timeout=20):
        """Wait for a normal end and return the parsed result."""
        rc = self.wait(timeout)
        assert rc == 0, f"runner exited {rc}: {self.stderr}"
        assert not (self.dir / "result.tmp").exists()
        assert not (self.dir / "runner.tmp").exists()
        res = parse_kv(self.dir / "result")
        assert RESULT_KEYS <= set(res), res
        # Only when the job and all it started are gone is there a result.
        assert tagged(self.tag) == []
        return res

    def log_bytes(self):
        return self.log.read_bytes() if self.log.exists() else b""

    def wait_file(self, name, timeout=10):
        deadline = time.monotonic() + timeout * SLOW
        while not (self.dir / name).exists():
            if time.monotonic() > deadline:
                pytest.fail(f"{name} never appeared in {self.dir}")
            time.sleep(0.01)

    def wait_log(self, text, timeout=10):
        deadline = time.monotonic() + timeout * SLOW
        while time.monotonic() < deadline:
            if text.encode() in self.log_bytes():
                return
            time.sleep(0.02)
        pytest.fail(f"{text!r} never appeared in the log: {self.log_bytes()[-500:]!r}")

    def kill(self):
        for pid in tagged(self.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def runs():
    started = []

    def start(*a, **kw):
        r = Run(*a, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill()


# --- exit status -----------------------------------------------------------

def test_exit_zero_writes_result_and_log(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "echo hello; echo oops >&2"])
    before = time.time()
    res = r.finish()
    assert res["exited"] == "1" and res["exit_code"] == "0" and res["signal"] == "0"
    assert res["ended_by"] == "exit" and res["error"] == ""
    assert r.log_bytes() == b"hello\noops\n"
    start, end = float(res["start"]), float(res["end"])
    assert before - 5 < start <= end <= time.time() + 1
    assert len(res["start"].partition(".")[2]) >= 3               # sub-second precision
    assert res["memory_enforced"] == "0" and res["oom"] == "0"
    assert r.log.stat().st_mode & 0o777 == 0o600


def test_exit_code_recorded(runs, tmp_path):
    res = runs(tmp_path, ["sh", "-c", "exit 3"]).finish()
    assert res["exited"] == "1" and res["exit_code"] == "3" and res["ended_by"] == "exit"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_death_by_signal_recorded(runs, tmp_path, sig):
    res = runs(tmp_path, ["sh", "-c", f"kill -{sig.name[3:]} $$"]).finish()
    assert res["exited"] == "0" and res["signal"] == str(int(sig)) and res["ended_by"] == "exit"


def test_log_is_appended_not_truncated(runs, tmp_path):
    (tmp_path / "job.log").write_bytes(b"earlier\n")
    runs(tmp_path, ["echo", "later"]).finish()
    assert (tmp_path / "job.log").read_bytes() == b"earlier\nlater\n"


def test_peak_rss_recorded(runs, tmp_path):
    res = runs(tmp_path, ["python3", "-c", "b = b'x' * (64 << 20); print(len(b))"]).finish()
    assert int(res["peak_rss_kb"]) >= 60 * 1024


# --- environment, cwd, stdin, fds --------------------------------------------

def test_env_file_is_the_whole_environment(runs, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "only-in-my-path"
    tool.write_text("#!/bin/sh\necho found-by-path \"$GREETING\"\n")
    tool.chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "GREETING": "hi there", "CUDA_VISIBLE_DEVICES": "1,3"}
    r = runs(tmp_path, ["sh", "-c", "only-in-my-path; env"], env=env)
    r.finish()
    lines = r.log_bytes().decode().splitlines()
    assert lines[0] == "found-by-path hi there"
    seen = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    assert seen["CUDA_VISIBLE_DEVICES"] == "1,3" and seen["PATH"] == env["PATH"]
    assert "GFLOW_RUNNER_TEST_LEAK" not in seen
    # Nothing beyond the file, except what sh itself sets.
    assert set(seen) - set(env) - {TAG} <= {"PWD", "OLDPWD", "SHLVL", "_"}


def test_argv0_found_through_the_files_path(runs, tmp_path):
    bindir = tmp_path / "tools"
    bindir.mkdir()
    (bindir / "mytool").write_text("#!/bin/sh\necho mytool ran with \"$1\"\n")
    (bindir / "mytool").chmod(0o755)
    r = runs(tmp_path, ["mytool", "a b"], env={"PATH": f"{bindir}:/bin"})
    res = r.finish()
    assert res["exit_code"] == "0" and r.log_bytes() == b"mytool ran with a b\n"


def test_cwd(runs, tmp_path):
    work = tmp_path / "work dir"
    work.mkdir()
    r = runs(tmp_path, ["pwd"], cwd=work)
    r.finish()
    assert r.log_bytes().decode().strip() == str(work)


def test_stdin_is_dev_null_and_job_has_own_group(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "readlink /proc/$$/fd/0; echo $$ $(cut -d' ' -f5,6 /proc/$$/stat)"])
    r.finish()
    lines = r.log_bytes().decode().splitlines()
    assert lines[0] == "/dev/null"
    pid, pgrp, sid = lines[1].split()
    assert pgrp == pid                      # its own process group
    assert sid == str(r.proc.pid)           # in the runner's session


def test_no_fds_or_signal_dispositions_leak_into_job(runs, tmp_path):
    rfd, wfd = os.pipe()
    try:
        r = runs(tmp_path, ["sh", "-c", f"test -e /proc/$$/fd/{wfd} && echo leaked || echo clean; "
                                        "grep -E '^Sig(Ign|Blk)' /proc/self/status"],
                 pass_fds=(wfd,))
        r.finish()
    finally:
        os.close(rfd)
        os.close(wfd)
    out = r.log_bytes().decode()
    assert out.startswith("clean\n")
    assert "SigBlk:\t0000000000000000" in out
    assert "SigIgn:\t0000000000000000" in out


# --- could not start ---------------------------------------------------------

def test_command_not_found(runs, tmp_path):
    r = runs(tmp_path, ["nosuchcmd-xyz", "arg"])
    res = r.finish()
    assert res["exited"] == "1" and res["exit_code"] == "127" and res["ended_by"] == "error"
    assert res["error"] == "cannot run 'nosuchcmd-xyz': No such file or directory"
    assert b"cannot run 'nosuchcmd-xyz': No such file or directory" in r.log_bytes()


def test_permission_denied_is_126(runs, tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho should not run\n")
    script.chmod(0o644)
    r = runs(tmp_path, [str(script)])
    res = r.finish()
    assert res["exit_code"] == "126" and res["ended_by"] == "error"
    assert "Permission denied" in res["error"]


def test_bad_cwd(runs, tmp_path):
    missing = tmp_path / "gone"
    r = runs(tmp_path, ["sh", "-c", "touch ran"], cwd=missing)
    res = r.finish()
    assert res["exit_code"] == "1" and res["ended_by"] == "error"
    assert res["error"] == f"cannot change directory to '{missing}': No such file or directory"
    assert str(missing).encode() in r.log_bytes()
    assert not (tmp_path / "ran").exists()


def test_unopenable_log_is_an_error_result(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "touch ran"], log=tmp_path / "no" / "such" / "x.log")
    res = r.finish()
    assert res["ended_by"] == "error" and res["exit_code"] == "1"
    assert res["error"].startswith("cannot open the log ") and "No such file" in res["error"]
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("args, words", [
    (["--dir", "x", "--log", "y", "--cwd", "/", "--", "true"], "missing --job"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--", "true"], "cannot open x"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--grace", "soon", "--", "true"], "--grace 'soon'"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--frobnicate", "--", "true"], "'--frobnicate'"),
    (["--job", "../1", "--dir", "x", "--log", "y", "--cwd", "/", "--", "true"], "--job '../1'"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--attach", "/s", "--", "true"], "--attach needs --pty"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--pty", "--attach", "s", "--", "true"], "--attach 's'"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--attach-group", "5", "--", "true"],
     "--attach-group needs --attach"),
    (["--job", "1", "--dir", "x", "--log", "y", "--cwd", "/", "--pty", "--attach", "/s", "--attach-group", "g",
      "--", "true"], "--attach-group 'g'"),
])
def test_bad_arguments_exit_2_without_result(tmp_path, args, words):
    proc = subprocess.run([str(runner_path()), *args], cwd=tmp_path, capture_output=True,
                          start_new_session=True, timeout=10 * SLOW)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("gflow-runner: ") and words in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_missing_env_file_exits_2(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "touch ran"], write_env=False)
    assert r.wait() == 2
    assert "environment" in r.stderr and r.stderr.count("\n") == 1
    assert not (r.dir / "result").exists() and not (r.dir / "runner").exists()
    assert not (tmp_path / "ran").exists()


def test_claimed_directory_is_not_run(runs, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "runner").write_text("pid=0\n")    # the daemon gave up on this start
    r = runs(tmp_path, ["sh", "-c", "touch ran"])
    assert r.wait() == 2
    assert "runner exists" in r.stderr
    assert (r.dir / "runner").read_text() == "pid=0\n"
    assert not (r.dir / "result").exists() and not (tmp_path / "ran").exists()


# --- the runner file -----------------------------------------------------------

def test_runner_file_names_the_runner(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "echo up; sleep 0.5"])
    r.wait_log("up")
    info = parse_kv(r.dir / "runner")
    assert int(info["pid"]) == r.proc.pid
    assert info["start_ticks"] == proc_stat(r.proc.pid)[22]
    assert abs(float(info["started_at"]) - time.time()) < 10
    r.finish()


# --- time limit and cancel -----------------------------------------------------

def test_time_limit(runs, tmp_path):
    r = runs(tmp_path, ["sleep", "100"], args=["--time-limit", "2"])
    res = r.finish()
    assert res["ended_by"] == "timeout"
    assert res["exited"] == "0" and res["signal"] == str(int(signal.SIGINT))
    assert 1.9 <= r.elapsed <= 2 + 1 + 1 * SLOW
    assert 1.9 <= float(res["end"]) - float(res["start"]) <= 2 + 1 + 1 * SLOW


def test_time_limit_escalates_to_sigkill(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", 'trap "" INT TERM; sleep 100'], args=["--time-limit", "1"],
             grace="0.5")
    res = r.finish()
    assert res["ended_by"] == "timeout" and res["signal"] == str(int(signal.SIGKILL))
    assert 1.9 <= r.elapsed <= 2 + 1 * SLOW


def test_cancel(runs, tmp_path):
    # exec: the shell between its echo and its fork may hold SIGINT back
    # (dash does while it sets up a child), which the cancel ladder then
    # rightly follows with SIGTERM; the job itself must get SIGINT first.
    r = runs(tmp_path, ["sh", "-c", "echo ready; exec sleep 100"])
    r.wait_log("ready")
    r.proc.send_signal(signal.SIGTERM)
    res = r.finish()
    assert res["ended_by"] == "cancel" and res["signal"] == str(int(signal.SIGINT))


def test_cancel_of_a_job_ignoring_int_and_term(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", 'trap "" INT TERM; echo ready; sleep 100'])
    r.wait_log("ready")
    sent = time.monotonic()
    r.proc.send_signal(signal.SIGTERM)
    res = r.finish()
    took = time.monotonic() - sent
    assert res["ended_by"] == "cancel" and res["exited"] == "0"
    assert res["signal"] == str(int(signal.SIGKILL))
    assert 1.9 <= took <= 2 + 1 * SLOW        # two graces of 1 s, then SIGKILL


def test_sighup_is_ignored(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "echo ready; sleep 0.5; echo still here"])
    r.wait_log("ready")
    r.proc.send_signal(signal.SIGHUP)
    res = r.finish()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"
    assert b"still here" in r.log_bytes()


# --- leftovers -----------------------------------------------------------------

def test_daemonised_grandchild_is_gone_when_result_appears(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "setsid sleep 100 & echo $! > gc.pid; echo started"])
    res = r.finish()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"
    gc = int((tmp_path / "gc.pid").read_text())
    assert not Path(f"/proc/{gc}").exists()
    assert r.elapsed < 1 + 1 * SLOW            # SIGTERM was enough


def test_leftovers_ignoring_term_get_sigkill_after_grace(runs, tmp_path):
    # A double fork into a new session, ignoring SIGTERM, with a child of its own.
    # The main process waits until both have set their traps, then exits.
    job = '( setsid sh -c "trap \\"\\" TERM; sleep 100 & echo > a; sleep 100" & ); ' \
          '(trap "" TERM; echo > b; sleep 100) & ' \
          'while ! [ -e a ] || ! [ -e b ]; do sleep 0.02; done; echo spawned'
    r = runs(tmp_path, ["sh", "-c", job])
    res = r.finish()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"
    assert 0.9 <= r.elapsed <= 1 + 1 * SLOW + 0.5
    assert r.log_bytes() == b"spawned\n"


# --- cgroups and memory -------------------------------------------------------------

def test_cgroup_that_cannot_be_joined_is_an_error_result(runs, tmp_path):
    notgroup = tmp_path / "not-a-cgroup"
    notgroup.mkdir()
    r = runs(tmp_path, ["sh", "-c", "touch ran"], args=["--cgroup", str(notgroup)])
    res = r.finish()
    assert res["ended_by"] == "error" and res["exit_code"] == "1"
    assert res["error"].startswith(f"cannot join the job's cgroup {notgroup}")
    assert not (tmp_path / "ran").exists()


def memory_group(limit):
    """A fresh cgroup limited to `limit` bytes that the runner can join: under
    GFLOW_TEST_CGROUP_PARENT (cgroup v2 with the memory controller), else in the
    v1 memory hierarchy when this machine has one we may write."""
    name = f"gflow-test-{uuid.uuid4().hex[:12]}"
    parent = os.environ.get("GFLOW_TEST_CGROUP_PARENT")
    if parent:
        group = Path(parent) / name
        group.mkdir()
        (group / "memory.max").write_text(str(limit))
        return group
    mount = own = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        fields, sfields = pre.split(), post.split()
        if sfields and sfields[0] == "cgroup" and "memory" in sfields[-1].split(","):
            mount = fields[4]
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, ctls, path = line.split(":", 2)
        if "memory" in ctls.split(","):
            own = path
    if not mount or own is None:
        pytest.skip("no cgroup with the memory controller here (set GFLOW_TEST_CGROUP_PARENT)")
    group = Path(mount + own) / name
    try:
        group.mkdir()
    except OSError as e:
        pytest.skip(f"cannot make a memory cgroup here: {e}")
    (group / "memory.limit_in_bytes").write_text(str(limit))
    return group


@pytest.fixture
def memgroup():
    made = []

    def make(limit):
        g = memory_group(limit)
        made.append(g)
        return g

    yield make
    for g in made:
        for _ in range(50):
            try:
                g.rmdir()
                break
            except OSError:
                time.sleep(0.02)


def test_memory_limit_enforced_in_cgroup(runs, tmp_path, memgroup):
    group = memgroup(64 * MIB)
    r = runs(tmp_path, ["cat", "/proc/self/cgroup"], args=["--cgroup", str(group)])
    res = r.finish()
    assert res["memory_enforced"] == "1" and res["oom"] == "0" and res["exit_code"] == "0"
    assert group.name in r.log_bytes().decode()


def test_memory_limit_oom_recorded(runs, tmp_path, memgroup):
    group = memgroup(64 * MIB)
    r = runs(tmp_path, ["python3", "-c", "b = b'x' * (512 << 20); print('survived')"],
             args=["--cgroup", str(group)])
    res = r.finish()
    assert res["memory_enforced"] == "1" and res["oom"] == "1"
    assert res["signal"] == str(int(signal.SIGKILL))
    assert b"survived" not in r.log_bytes()


# --- the command from RUNDIR/argv, links, a removed run directory ---------------------

def test_command_read_from_the_argv_file_byte_for_byte(runs, tmp_path):
    words = [b"python3", b"-c", b"import sys; sys.stdout.buffer.write(repr(sys.argv[1:]).encode())",
             b"\xff\xfe", b"a b", b"", b";", b"$(x)"] + [str(i).encode() for i in range(5000)]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "argv").write_bytes(b"\0".join(words) + b"\0")
    r = runs(tmp_path, [])
    res = r.finish()
    assert res["exit_code"] == "0", r.log_bytes()[-300:]
    expect = repr([w.decode("utf-8", "surrogateescape") for w in words[3:]])
    assert r.log_bytes().decode("utf-8", "surrogateescape") == expect


def test_missing_argv_file_is_an_error_result(runs, tmp_path):
    r = runs(tmp_path, [])
    res = r.finish()
    assert res["ended_by"] == "error" and "the job's command" in res["error"]


def test_log_that_is_a_link_is_not_followed(runs, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    log = tmp_path / "job.log"
    log.symlink_to(victim)
    r = runs(tmp_path, ["sh", "-c", "echo written; touch ran"], log=log)
    res = r.finish()
    assert res["ended_by"] == "error" and "symbolic link" in res["error"]
    assert victim.read_bytes() == b"precious\n"
    assert not (tmp_path / "ran").exists()


def test_run_directory_that_is_a_link_is_not_used(tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "env").write_bytes(b"PATH=/usr/bin:/bin\0")
    (tmp_path / "run").symlink_to(real)
    proc = subprocess.run([str(runner_path()), "--job", "7", "--dir", str(tmp_path / "run"), "--log",
                           str(tmp_path / "job.log"), "--cwd", "/", "--", "touch", str(tmp_path / "ran")],
                          capture_output=True, start_new_session=True, timeout=10 * SLOW)
    assert proc.returncode == 2 and b"symbolic link" in proc.stderr
    assert sorted(p.name for p in real.iterdir()) == ["env"]
    assert not (tmp_path / "ran").exists()


def test_result_written_even_when_the_run_directory_is_removed(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; exit 0"])
    r.wait_file("runner")
    shutil.rmtree(r.dir)
    (tmp_path / "go").touch()
    res = r.finish()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"


# --- big output -------------------------------------------------------------------

def test_one_mib_of_output_copied_completely(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", f"yes 0123456789abcdef | head -c {MIB}"])
    r.finish()
    data = r.log_bytes()
    assert len(data) == MIB and data == (b"0123456789abcdef\n" * (MIB // 17 + 1))[:MIB]


# --- --pty -------------------------------------------------------------------------

class Pane:
    """The tmux side of the runner: a pty whose slave is the runner's stdin/stdout."""

    def __init__(self, rows=33, cols=111):
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.chunks = []
        self.thread = threading.Thread(target=self._read, daemon=True)

    def start_reading(self):
        self.thread.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append(data)

    def text(self):
        return b"".join(self.chunks)

    def close(self, timeout=10):
        if self.thread.is_alive():
            self.thread.join(timeout * SLOW)
        os.close(self.master)


@pytest.fixture
def pane():
    p = Pane()
    yield p
    if p.slave >= 0:
        os.close(p.slave)
    if p.thread.is_alive():
        p.thread.join(1)


def run_in_pane(runs, tmp_path, pane, argv, read=True, **kw):
    if read:
        pane.start_reading()
    r = runs(tmp_path, argv, args=["--pty"], stdin=pane.slave, stdout=pane.slave, **kw)
    os.close(pane.slave)      # now only the runner holds it: EIO at its exit ends the reader
    pane.slave = -1
    return r


def test_pty_job_sees_a_terminal_and_log_gets_every_byte(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "test -t 0 && test -t 1 && echo tty; "
                                                       "stty size; printf 'a\\tb\\nno newline'"])
    res = r.finish()
    pane.close()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"
    assert r.log_bytes() == b"tty\n33 111\na\tb\nno newline"
    assert b"tty\r\n33 111\r\na\tb\r\nno newline" in pane.text()


def test_pty_keys_typed_into_the_pane_reach_the_job(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "echo ready; read line; echo got:$line"])
    r.wait_log("ready")
    os.write(pane.master, b"hello\r")
    res = r.finish()
    pane.close()
    assert res["exit_code"] == "0"
    assert b"got:hello\n" in r.log_bytes()
    assert b"got:hello" in pane.text()


def test_pty_one_mib_copied_to_log_and_pane(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", f"yes 0123456789abcdef | head -c {MIB}"])
    r.finish(timeout=30)
    pane.close()
    expect = (b"0123456789abcdef\n" * (MIB // 17 + 1))[:MIB]
    assert r.log_bytes() == expect
    assert pane.text().replace(b"\r\n", b"\n") == expect


def test_pty_leftovers_are_killed(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "(sleep 0.3; echo from-orphan) & echo main-done"])
    res = r.finish()
    pane.close()
    assert res["ended_by"] == "exit"
    assert r.log_bytes() == b"main-done\n"    # the orphan got SIGTERM before it spoke


def test_pty_cancel(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "echo ready; sleep 100"])
    r.wait_log("ready")
    r.proc.send_signal(signal.SIGTERM)
    res = r.finish()
    pane.close()
    assert res["ended_by"] == "cancel" and res["signal"] == str(int(signal.SIGINT))


def test_pty_pane_gone_job_keeps_logging(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "echo ready; sleep 0.5; echo after-hangup"])
    r.wait_log("ready")
    os.close(pane.master)          # tmux session killed: the pane's tty is gone
    pane.master = os.open("/dev/null", os.O_RDONLY)   # for pane.close()
    r.proc.send_signal(signal.SIGHUP)
    res = r.finish()
    pane.close()
    assert res["ended_by"] == "exit" and res["exit_code"] == "0"
    assert r.log_bytes() == b"ready\nafter-hangup\n"


def test_pty_window_size_follows_the_pane(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", "stty size; echo ready; "
                                                       "while ! [ -e go ]; do sleep 0.02; done; stty size"])
    r.wait_log("ready")
    fcntl.ioctl(pane.master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    r.proc.send_signal(signal.SIGWINCH)   # what the kernel sends a pane's foreground process
    time.sleep(0.2 * SLOW)
    (tmp_path / "go").touch()
    r.finish()
    pane.close()
    assert r.log_bytes() == b"33 111\nready\n40 120\n"


def test_pty_command_not_found(runs, tmp_path, pane):
    r = run_in_pane(runs, tmp_path, pane, ["nosuchcmd-xyz"])
    res = r.finish()
    pane.close()
    assert res["exit_code"] == "127" and res["ended_by"] == "error"
    assert b"cannot run 'nosuchcmd-xyz'" in r.log_bytes()
    assert b"cannot run 'nosuchcmd-xyz'" in pane.text()


def test_cancel_of_a_stopped_job(runs, tmp_path):
    r = runs(tmp_path, ["sh", "-c", "echo ready; kill -STOP $$; echo resumed"])
    r.wait_log("ready")
    deadline = time.monotonic() + 5 * SLOW
    while not any(proc_state(p) == "T" for p in tagged(r.tag)):
        assert time.monotonic() < deadline, "the job never stopped"
        time.sleep(0.02)
    sent = time.monotonic()
    r.proc.send_signal(signal.SIGTERM)
    res = r.finish()
    assert res["ended_by"] == "cancel" and res["signal"] == str(int(signal.SIGINT))
    assert time.monotonic() - sent < 0.9       # SIGCONT woke it for the SIGINT: no waiting


def test_pty_stalled_pane_does_not_stall_the_job(runs, tmp_path, pane):
    # Nobody reads the pane (a stopped tmux server): the job still runs to
    # its end at full speed and the log gets everything.
    r = run_in_pane(runs, tmp_path, pane, ["sh", "-c", f"yes 0123456789abcdef | head -c {MIB}"], read=False)
    res = r.finish(timeout=10)
    assert res["exit_code"] == "0"
    assert r.elapsed < 1 + 2 * SLOW          # at most a second spent offering the pane the rest
    assert r.log_bytes() == (b"0123456789abcdef\n" * (MIB // 17 + 1))[:MIB]


# --- the standby runner ----------------------------------------------------------

def standby(tmp_path, request):
    """gflow-runner --standby given `request` on its stdin; returns it ended."""
    p = subprocess.Popen([str(runner_path()), "--standby", " " * 24], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         cwd=tmp_path)
    out, err = p.communicate(request, timeout=20 * SLOW)
    return p.returncode, out.decode(errors="replace") + err.decode(errors="replace")


def standby_run(tmp_path, env=b"PATH=/usr/bin:/bin\0"):
    """The run directory of a standby's job, with that env file (None: none)."""
    run = tmp_path / "run"
    run.mkdir()
    if env is not None:
        (run / "env").write_bytes(env)
    return run


def job7(run, tmp_path, *rest, log=None, cwd=None):
    """The request for job 7 in run: its options, then rest (more options,
    `--` and the command), each NUL-ended, then the empty word."""
    words = ["--job", "7", "--dir", str(run), "--log", str(log or tmp_path / "job.log"),
             "--cwd", str(cwd or tmp_path), *rest]
    return b"".join(w.encode() + b"\0" for w in words) + b"\0"


def test_standby_runs_the_job_it_is_handed(tmp_path):
    run = standby_run(tmp_path, b"PATH=/usr/bin:/bin\0GFLOW_JOB_ID=7\0")
    rc, said = standby(tmp_path, job7(run, tmp_path, "--", "sh", "-c", "echo hello $GFLOW_JOB_ID; ps -o args= -p $PPID"))
    assert rc == 0 and said == "", said
    res = parse_kv(run / "result")
    assert res["exited"] == "1" and res["exit_code"] == "0", res
    # its output went to the log; ps named it by its job
    log = (tmp_path / "job.log").read_text().splitlines()
    assert log[0] == "hello 7" and log[1].split() == [str(runner_path()), "--job", "7"], log
    assert not (run / "runner.out").exists()        # made only when it has something to say
    assert int(parse_kv(run / "runner")["pid"]) > 0


def test_a_standby_says_why_a_job_could_not_start_in_runner_out(tmp_path):
    run = standby_run(tmp_path)
    log = tmp_path / "gone" / "job.log"
    rc, said = standby(tmp_path, job7(run, tmp_path, "--", "true", log=log))
    assert rc == 0 and said == "", said
    assert parse_kv(run / "result")["ended_by"] == "error"
    out = (run / "runner.out").read_text()
    assert out.startswith("gflow-runner: job 7: ") and str(log) in out and out.count("\n") == 1, out


def test_a_standby_takes_the_jobs_environment_and_command_from_its_pipe(tmp_path):
    # --env-bytes/--argv-bytes: the lists follow the request on stdin, no
    # files are read; a pipe that ends before all of them came starts nothing
    run = standby_run(tmp_path, None)
    env = b"PATH=/usr/bin:/bin\0GFLOW_JOB_ID=7\0WHO=pipe\0"
    cmd = b"sh\0-c\0echo $WHO $GFLOW_JOB_ID \"$0\" > out\0\0"      # an empty word too
    request = job7(run, tmp_path, "--env-bytes", str(len(env)), "--argv-bytes", str(len(cmd)))
    rc, said = standby(tmp_path, request + (env + cmd)[:-3])
    assert rc == 0 and said == "", said
    assert sorted(p.name for p in run.iterdir()) == [] and not (tmp_path / "out").exists()
    rc, said = standby(tmp_path, request + env + cmd)
    assert rc == 0 and said == "", said
    assert parse_kv(run / "result")["exit_code"] == "0"
    assert (tmp_path / "out").read_text() == "pipe 7 \n"
    assert sorted(p.name for p in run.iterdir()) == ["result", "runner"]


def test_a_standby_takes_the_limits_from_its_pipe_and_refuses_bad_ones(tmp_path):
    # --limits-bytes: the limits follow the request; a limits file in the
    # run directory is not read then. Text that is not limits (a shell
    # expansion, bytes not UTF-8, too long) starts nothing and says so.
    base = tmp_path
    for k, (limits, ok) in enumerate([(b"nofile=33:33", True), (b"nofile=$(touch pwned)", False),
                                      (b"nofile=\xff\xfe:1", False), (b"nofile=1:1," * 500, False)]):
        tmp = base / f"t{k}"
        tmp.mkdir()
        run = standby_run(tmp)
        (run / "limits").write_text("nofile=44:44")
        request = job7(run, tmp, "--limits-bytes", str(len(limits)), "--", "sh", "-c", "ulimit -n > out")
        rc, said = standby(tmp, request + limits)
        assert rc == 0 and said == "", said
        res = parse_kv(run / "result")
        if ok:
            assert res["exit_code"] == "0" and (tmp / "out").read_text() == "33\n", res
        else:
            assert res["ended_by"] == "error" and not (tmp / "out").exists(), res
            out = (run / "runner.out").read_text()
            assert "the job's limits" in out and out.count("\n") == 1, out
        assert not (tmp / "pwned").exists() and not (base / "pwned").exists()


def held_standby(tmp_path, ran):
    """A standby handed a held start (--hold) of `touch ran`; returns it
    running, its stdin still open, and the run directory."""
    run = standby_run(tmp_path)
    p = subprocess.Popen([str(runner_path()), "--standby", " " * 24], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd=tmp_path)
    p.stdin.write(job7(run, tmp_path, "--hold", "--", "touch", str(ran)))
    p.stdin.flush()
    return p, run


def test_a_held_start_is_made_ready_and_execs_only_on_the_daemons_byte(tmp_path):
    ran = tmp_path / "ran"
    p, run = held_standby(tmp_path, ran)
    # everything is ready: announced, the log made, the job's process forked
    deadline = time.time() + 10 * SLOW
    while not ((run / "runner").exists() and (tmp_path / "job.log").exists() and
               children_of(p.pid)) and time.time() < deadline:
        time.sleep(0.01)
    assert (run / "runner").exists() and children_of(p.pid)
    time.sleep(0.3)
    assert not ran.exists() and not (run / "result").exists()      # …but it has not run
    p.stdin.write(b"g")
    p.stdin.close()
    assert p.wait(timeout=10 * SLOW) == 0
    assert ran.exists()
    assert parse_kv(run / "result")["exit_code"] == "0"


def test_a_held_start_is_given_up_when_the_daemon_goes_without_the_byte(tmp_path):
    ran = tmp_path / "ran"
    p, run = held_standby(tmp_path, ran)
    deadline = time.time() + 10 * SLOW
    while not (run / "runner").exists() and time.time() < deadline:
        time.sleep(0.01)
    p.stdin.close()         # the daemon died before its commit was on disk
    assert p.wait(timeout=10 * SLOW) == 0
    assert not ran.exists()
    # no result, and its announcement taken back: the daemon queues the job again
    assert sorted(x.name for x in run.iterdir()) == ["env", "runner.out"]
    assert "not started" in (run / "runner.out").read_text()
    assert p.stdout.read() == b"" and p.stderr.read() == b""


def test_hold_and_the_lists_on_stdin_are_for_a_standby_only(tmp_path):
    for opt in (["--hold"], ["--report"], ["--make-cgroup"], ["--env-bytes", "3"], ["--argv-bytes", "5"],
                ["--spec-bytes", "4"], ["--limits-bytes", "9"]):
        r = subprocess.run([str(runner_path()), "--job", "7", "--dir", str(tmp_path), "--log", str(tmp_path / "l"),
                            "--cwd", str(tmp_path), *opt, "--", "true"], capture_output=True, text=True, timeout=20)
        assert r.returncode == 2
        assert r.stderr == (f"gflow-runner: {opt[0]}: only for a standby runner (--standby), "
                            "which reads it from its stdin\n"), r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_standby_writes_its_runner_file_in_place_and_never_over_a_claim(tmp_path):
    # no runner file in the run directory: it makes one
    run = standby_run(tmp_path)
    request = job7(run, tmp_path, "--", "sh", "-c", "echo $PPID")
    rc, said = standby(tmp_path, request)
    assert rc == 0 and said == "", said
    ri = parse_kv(run / "runner")
    assert ri["pid"] == (tmp_path / "job.log").read_text().strip()
    assert int(ri["start_ticks"]) > 0 and float(ri["started_at"]) > 0
    # an empty one, as a recycled or spare run directory keeps: written in
    # place, the same file (no new inode)
    (run / "result").unlink()
    (run / "runner").write_text("")
    (tmp_path / "job.log").unlink()
    ino = (run / "runner").stat().st_ino
    rc, said = standby(tmp_path, request)
    assert rc == 0 and said == "", said
    assert (run / "runner").stat().st_ino == ino
    assert parse_kv(run / "runner")["pid"] == (tmp_path / "job.log").read_text().strip()
    # a claim is there already (the daemon's: pid 0): refused, not replaced,
    # and the job never runs
    (run / "result").unlink()
    (run / "runner").write_text("pid=0\nstart_ticks=0\nstarted_at=0.000000\n")
    (tmp_path / "job.log").unlink()
    rc, said = standby(tmp_path, request)
    assert rc == 2 and "runner exists: the daemon gave up on this start" in (run / "runner.out").read_text()
    assert (run / "runner").read_text() == "pid=0\nstart_ticks=0\nstarted_at=0.000000\n"
    assert not (run / "result").exists() and (tmp_path / "job.log").read_text() == ""
    # a link planted there is not followed: refused
    (run / "runner").unlink()
    (run / "runner.out").unlink()
    target = tmp_path / "elsewhere"
    target.write_text("")
    (run / "runner").symlink_to(target)
    rc, said = standby(tmp_path, request)
    assert rc == 2 and "runner exists" in (run / "runner.out").read_text()
    assert target.read_text() == "" and not (run / "result").exists()


def test_the_daemons_claim_and_a_runner_racing_for_a_kept_runner_file_one_wins(tmp_path):
    # Many standbys at once on one run directory with an empty runner file:
    # exactly one writes it and runs the job; the others are refused.
    run = standby_run(tmp_path)
    (run / "runner").write_text("")
    marks = tmp_path / "marks"
    marks.mkdir()
    request = job7(run, tmp_path, "--", "sh", "-c", f"touch {marks}/$$")
    procs = [subprocess.Popen([str(runner_path()), "--standby", " " * 24], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd=tmp_path)
             for _ in range(8)]
    for p in procs:
        p.stdin.write(request)
    for p in procs:
        p.stdin.close()
    codes = sorted(p.wait(timeout=20 * SLOW) for p in procs)
    assert codes == [0] + [2] * 7, codes
    assert len(list(marks.iterdir())) == 1
    assert int(parse_kv(run / "runner")["pid"]) > 0


def test_standby_given_nothing_or_part_of_a_request_does_nothing(tmp_path):
    run = standby_run(tmp_path)
    whole = job7(run, tmp_path, "--", "touch", str(tmp_path / "ran"))
    for request in (b"", whole[:-1], whole[:10], b"\0"):
        rc, said = standby(tmp_path, request)
        assert rc == 0 and said == "", (request, said)
    assert sorted(p.name for p in run.iterdir()) == ["env"]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "job.log").exists()
    # far more than a runner's options: refused in one line
    rc, said = standby(tmp_path, b"a" * (300 << 10))
    assert rc == 2 and said == ("gflow-runner: --standby: cannot read the job's options on stdin: "
                                "Argument list too long\n"), said
