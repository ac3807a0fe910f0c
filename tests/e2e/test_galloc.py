"""galloc, interactive allocations (issue 28 §2): a job marked interactive that
waits in the queue like any other, then runs a shell or command in the caller's
terminal (through its runner's attach socket), and never outlives its caller.

galloc is run on a real terminal (a pty that is its controlling terminal, as a
user's would be), and without one (its stdin and stdout relayed); with the fake
NVML's GPUs; under the personal daemon with either executor, and under the
system daemon as real throwaway users.
"""
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time

import pytest

from conftest import SLOW


class Term:
    """galloc ARGS on a pty of its own that is its controlling terminal."""

    def __init__(self, g, *args, env=None, user=None, rows=30, cols=90):
        self.master, slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        kw = {}
        if user is None:
            e, cwd = dict(g.env), g.tmp
        else:
            e, cwd = g.user_env(user), g.home_of(user)
            kw = dict(user=user, group=user)
        e.update({"TERM": "xterm", "SHELL": "/bin/sh", "PS1": "$ "})
        e.update(env or {})
        prog = str(g.bin / "galloc") if user else "galloc"
        self.proc = subprocess.Popen(["setsid", "-w", "-c", prog, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=e, cwd=cwd, **kw)
        os.close(slave)
        self.out = b""

    def read_some(self, wait):
        r, _, _ = select.select([self.master], [], [], wait)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            data = b""
        self.out += data
        return bool(data)

    def expect(self, text, timeout=15):
        deadline = time.time() + timeout * SLOW
        while text.encode() not in self.out:
            if time.time() > deadline:
                raise AssertionError(f"{text!r} not seen on the terminal:\n{self.out!r}")
            if not self.read_some(0.2) and self.proc.poll() is not None:
                self.read_some(0)
                if text.encode() not in self.out:
                    raise AssertionError(f"galloc exited ({self.proc.returncode}) before {text!r}:\n{self.out!r}")

    def type(self, data):
        os.write(self.master, data)

    def finish(self, timeout=15):
        deadline = time.time() + timeout * SLOW
        while self.proc.poll() is None:
            if time.time() > deadline:
                self.proc.kill()
                raise AssertionError(f"galloc did not exit:\n{self.out!r}")
            self.read_some(0.1)
        while self.read_some(0):
            pass
        os.close(self.master)
        for word in (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:"):
            assert word not in self.out, self.out
        return self.proc.returncode


def galloc_bg(g, *args, stdin=subprocess.DEVNULL):
    """galloc without a terminal, in the background."""
    return subprocess.Popen(["galloc", *args], env=g.env, cwd=g.tmp, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def only_job(g, name="interactive"):
    st, body = g.api("GET", "/jobs?users=all&states=Queued,Hold,Running,Finished,Failed,Cancelled,Timeout")
    assert st == 200, body
    jobs = [j for j in body["jobs"] if j["name"] == name]
    return jobs[-1] if jobs else None


def wait_job(g, name="interactive", states=("Running",)):
    return g.wait_for(lambda: (lambda j: j if j and j["state"] in states else None)(only_job(g, name)),
                      what=f"the {name} job {states}")


def no_sanitizer_report(text):
    for word in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert word not in text, text


def test_shell_in_a_terminal_gets_its_gpus_and_leaving_it_ends_the_job(gflow_exec):
    g = gflow_exec
    g.gpus(2)
    g.start()
    t = Term(g, "--gpus", "1", "--time", "10")
    t.expect("granted: GPUs 0")
    t.type(b"echo cvd=$CUDA_VISIBLE_DEVICES id=$GFLOW_JOB_ID tty=$(tty | cut -c1-8)\r")
    t.expect("cvd=0 id=1 tty=/dev/pts")
    # a job of its own, seen as any other
    j = g.job(1)
    assert j["state"] == "Running" and j["name"] == "interactive" and j["interactive"] is True
    assert j["gpu_ids"] == [0] and j["time_limit_secs"] == 600
    q = g.cli("gqueue", "-f", "JOBID,NAME,ST", check=True).stdout
    assert any(ln.split() == ["1", "interactive", "R"] for ln in q.splitlines()), q
    assert "Interactive=yes" in g.cli("gjob", "show", "1", check=True).stdout
    assert "Interactive" not in g.cli("gjob", "show", str(g.submit("true")), check=True).stdout
    # the window size of the caller's terminal reached the job's
    t.type(b"stty size\r")
    t.expect("30 90")
    t.type(b"exit 7\r")
    assert t.finish() == 7, t.out
    j = g.wait_state(1, {"Failed"})
    assert j["exit_code"] == 7
    # its GPU is free again: a job that needs both starts
    jid = g.submit("--gpus", "2", "true")
    g.wait_state(jid, "Finished")
    # leaving the shell plainly: Finished, exit 0
    t = Term(g, "--gpus", "2", "--name", "mine")
    t.expect("granted: GPUs 0,1")
    t.type(b"exit\r")
    assert t.finish() == 0, t.out
    assert only_job(g, "mine")["state"] == "Finished"


def test_without_a_terminal_stdin_and_stdout_are_relayed_and_the_status_comes_back(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    r = g.cli("galloc", "--gpus", "1", "--", "sh", "-c", "read x; echo got=$x cvd=$CUDA_VISIBLE_DEVICES; exit 5",
              input="hello\n")
    assert r.returncode == 5, r
    assert "got=hello cvd=0" in r.stdout, r
    assert "job 1 granted" in r.stderr
    no_sanitizer_report(r.stderr)
    # the end of stdin is an end of file in the job's terminal
    r = g.cli("galloc", "--", "sh", "-c", "cat; echo after-eof", input="a\nb\n")
    assert r.returncode == 0 and "after-eof" in r.stdout, r
    # a command that does not exist: the job fails, galloc says so
    r = g.cli("galloc", "--", "no-such-command-here")
    assert r.returncode != 0 and g.job(3)["state"] == "Failed", r
    # a command over before galloc attached: its output still comes (the
    # runner waits for its caller before it closes the terminal)
    for i in range(5):
        r = g.cli("galloc", "--", "echo", f"quick-{i}")
        assert r.returncode == 0 and f"quick-{i}" in r.stdout, r


def test_waits_behind_a_busy_gpu_then_is_granted(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    busy = g.submit("--gpus", "1", "sleep", "60")
    g.wait_state(busy, "Running")
    p = galloc_bg(g, "--gpus", "1", "--", "sh", "-c", "echo ran-$GFLOW_JOB_ID")
    j = wait_job(g, states=("Queued",))
    g.wait_for(lambda: g.job(j["id"])["reason"], what="a reason")
    # an update while it waits keeps it interactive
    g.cli("gjob", "update", str(j["id"]), "-t", "7", check=True)
    g.cli("gcancel", str(busy), check=True)
    out, err = p.communicate(timeout=30 * SLOW)
    assert p.returncode == 0, (out, err)
    assert f"ran-{j['id']}" in out.decode()
    err = err.decode()
    assert f"galloc: job {j['id']} queued (Resources" in err and "; waiting" in err, err
    assert err.index("queued") < err.index("granted"), err
    j = g.job(j["id"])
    assert j["state"] == "Finished" and j["interactive"] is True and j["time_limit_secs"] == 420
    # a session is not redone as a batch job with nobody at its terminal
    r = g.cli("gjob", "redo", str(j["id"]))
    assert r.returncode != 0 and "interactive session (galloc): run galloc again" in r.stderr, r


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_waiting_withdraws_the_job(gflow, sig):
    g = gflow
    g.gpus(1)
    g.start()
    busy = g.submit("--gpus", "1", "sleep", "60")
    g.wait_state(busy, "Running")
    p = galloc_bg(g, "--gpus", "1", "--", "sh")
    j = wait_job(g, states=("Queued",))
    p.send_signal(sig)
    out, err = p.communicate(timeout=20 * SLOW)
    assert p.returncode == 128 + sig, (out, err)
    assert f"job {j['id']} withdrawn" in err.decode()
    assert g.job(j["id"])["state"] == "Cancelled"    # not left Queued
    assert g.job(busy)["state"] == "Running"


def test_ctrl_c_on_the_terminal_while_waiting_withdraws_the_job(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    busy = g.submit("--gpus", "1", "sleep", "60")
    g.wait_state(busy, "Running")
    t = Term(g, "--gpus", "1")
    t.expect("queued (Resources")
    t.type(b"\x03")
    assert t.finish() == 130, t.out
    assert g.job(2)["state"] == "Cancelled"


def test_immediate_is_refused_with_the_reason_when_it_cannot_start(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    busy = g.submit("--gpus", "1", "sleep", "60")
    g.wait_state(busy, "Running")
    r = g.cli("galloc", "--immediate", "--gpus", "1", "--", "true")
    assert r.returncode == 1, r
    assert "job 2 cannot start now (Resources" in r.stderr and "withdrawn" in r.stderr, r.stderr
    assert g.job(2)["state"] == "Cancelled"
    # more GPUs than the machine has: the daemon refuses it at once
    r = g.cli("galloc", "-I", "--gpus", "4", "--", "true")
    assert r.returncode == 1 and "only 1 GPU" in r.stderr, r
    # and when it can start, it runs
    r = g.cli("galloc", "-I", "--", "sh", "-c", "echo now")
    assert r.returncode == 0 and "now" in r.stdout, r


@pytest.mark.parametrize("how", ["SIGKILL", "SIGHUP"])
def test_the_job_ends_when_galloc_goes_away(gflow_exec, how):
    g = gflow_exec
    g.gpus(1)
    g.start()
    p = galloc_bg(g, "--gpus", "1", "--", "sh", "-c", "trap '' TERM INT; echo started; sleep 300",
                  stdin=subprocess.PIPE)
    j = wait_job(g)
    # attached: the job's output came through galloc
    assert select.select([p.stdout], [], [], 15 * SLOW)[0] and b"started" in p.stdout.readline()
    p.send_signal(getattr(signal, how))
    p.wait(timeout=20 * SLOW)
    if how == "SIGHUP":
        assert p.returncode == 129, p.stderr.read()
        assert b"cancelled" in p.stderr.read()
    p.stdin.close()
    p.stdout.close()
    p.stderr.close()
    j = g.wait_state(j["id"], {"Cancelled", "Failed", "Finished"}, timeout=20)
    assert j["state"] == "Cancelled", j
    g.wait_for(lambda: not g.job_pids(j["id"]), what="the job's processes to be gone")
    # its GPU is free
    jid = g.submit("--gpus", "1", "true")
    g.wait_state(jid, "Finished")


def test_the_time_limit_ends_the_session(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    t = Term(g, "--gpus", "1", "--time", "0:00:02")
    t.expect("granted")
    assert t.finish(timeout=20) == 124, t.out
    assert b"reached its time limit" in t.out
    assert g.job(1)["state"] == "Timeout"
    g.wait_for(lambda: not g.job_pids(1), what="the shell to be gone")


def test_another_terminal_of_the_owner_attaches_and_detaches(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    t = Term(g, "--gpus", "1")
    t.expect("granted")
    # gjob attach from a second terminal (process executor: the attach socket)
    master, slave = os.openpty()
    v = subprocess.Popen(["setsid", "-w", "-c", "gjob", "attach", "1"], stdin=slave, stdout=slave, stderr=slave,
                         env=dict(g.env, TERM="xterm"), cwd=g.tmp)
    os.close(slave)
    seen = b""
    deadline = time.time() + 15 * SLOW
    while b"detach with Ctrl-b d" not in seen and time.time() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            seen += os.read(master, 65536)
    assert b"detach with Ctrl-b d" in seen, seen
    os.write(master, b"echo from-$((40+2))\r")
    t.expect("from-42")             # typed in the second terminal, seen in the first
    os.write(master, b"\x02d")
    assert v.wait(timeout=15 * SLOW) == 0
    os.close(master)
    assert g.job(1)["state"] == "Running"   # the caller's galloc still holds it
    t.type(b"exit 0\r")
    assert t.finish() == 0, t.out
    assert g.job(1)["state"] == "Finished"


def test_bad_values_are_named_and_nothing_is_submitted(gflow):
    g = gflow
    g.start()
    for args, word in ((["--gpus", "x"], "'x'"), (["--time", "99x"], "'99x'"), (["--memory", "lots"], "'lots'"),
                       (["--cpus", "0"], "'0'"), (["--bogus"], "'--bogus'"), (["--gpus"], "GPU count"),
                       (["--", ""], "empty command"), (["--name"], "stdin is not a terminal")):
        r = g.cli("galloc", *args, "--", "true") if args[0] not in ("--", "--name") else \
            g.cli("galloc", *args, "--help", input="")
        assert r.returncode == 2, (args, r)
        assert word in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    st, body = g.api("GET", "/jobs?users=all&states=Queued,Hold,Running,Finished,Failed,Cancelled,Timeout")
    assert body["jobs"] == []
    r = g.cli("galloc", "--help", check=True)
    assert "--immediate" in r.stdout and "gjob attach" in r.stdout
    r = g.cli("gflow", "alloc", "--help", check=True)
    assert "usage: galloc" in r.stdout


@pytest.mark.parametrize("executor", ["process", "tmux"])
def test_system_daemon_runs_it_as_the_caller_and_others_cannot_attach(system_gflow, executor):
    g = system_gflow
    g.env["GFLOW_EXECUTOR__TYPE"] = executor
    g.gpus(1)
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    t = Term(g, "--gpus", "1", user=a)
    t.expect("granted")
    t.type(b"echo who=$(id -un) cvd=$CUDA_VISIBLE_DEVICES\r")
    t.expect(f"who={a} cvd=0")
    jid = only_job(g)["id"]
    r = g.as_user(b, "gjob", "attach", str(jid))
    assert r.returncode == 1 and f"belongs to {a}" in r.stderr, r
    r = g.as_user(b, "gcancel", str(jid))
    assert r.returncode != 0
    assert g.job(jid)["state"] == "Running"
    t.type(b"exit 3\r")
    assert t.finish() == 3, t.out
    assert g.job(jid)["state"] == "Failed"


def test_every_option_reaches_the_job(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    for args, name in ((["-G", "2", "-t", "5", "-m", "1G", "-c", "2", "-J", "short", "-P", "proj"], "short"),
                       (["--gpus", "1", "--time", "1:00:00", "--memory", "512M", "--cpus-per-task", "3",
                         "--name", "long", "--project", "proj2"], "long")):
        r = g.cli("galloc", *args, "--", "sh", "-c", "echo cvd=$CUDA_VISIBLE_DEVICES")
        assert r.returncode == 0, r
        j = only_job(g, name)
        want = {"short": dict(gpus=2, time_limit_secs=300, memory_mb=1024, cpus=2, project="proj"),
                "long": dict(gpus=1, time_limit_secs=3600, memory_mb=512, cpus=3, project="proj2")}[name]
        assert {k: j[k] for k in want} == want, j
        assert j["interactive"] is True and j["state"] == "Finished"
        assert ("cvd=0,1" if name == "short" else "cvd=0") in r.stdout, r


def test_a_session_whose_galloc_died_while_it_waited_ends_when_nobody_attaches(gflow):
    g = gflow
    g.env["GFLOW_INTERACTIVE_WAIT_SECS"] = "2"     # the runner's wait for its caller (default 60 s)
    g.gpus(1)
    g.start()
    busy = g.submit("--gpus", "1", "sleep", "60")
    g.wait_state(busy, "Running")
    p = galloc_bg(g, "--gpus", "1", "--", "sh", "-c", "trap '' TERM INT HUP; sleep 300")
    j = wait_job(g, states=("Queued",))
    p.kill()                    # nothing to withdraw it
    p.communicate()
    g.cli("gcancel", str(busy), check=True)
    g.wait_state(j["id"], "Running")
    j = g.wait_state(j["id"], {"Cancelled", "Failed", "Finished"}, timeout=20)
    assert j["state"] == "Cancelled", j
    g.wait_for(lambda: not g.job_pids(j["id"]), what="the job's processes to be gone")


@pytest.mark.parametrize("when", ["at_the_greeting", "while_output_flows"])
def test_closing_the_terminal_early_or_mid_output_ends_it_as_a_hang_up(gflow, when):
    # A terminal that has just closed fails tcsetattr and writes with EIO:
    # that is the terminal gone (129, the job cancelled), not a broken
    # relay (1, the job cancelled all the same).
    g = gflow
    g.start()
    t = Term(g)
    t.expect("granted")
    if when == "while_output_flows":
        t.type(b"while :; do echo flowing; sleep 0.002; done\r")
        t.expect("flowing")
    os.close(t.master)
    t.proc.wait(timeout=15 * SLOW)
    assert t.proc.returncode == 129, t.proc.returncode
    assert g.wait_state(1, {"Cancelled", "Failed", "Finished"})["state"] == "Cancelled"
    g.wait_for(lambda: not g.job_pids(1), what="the shell to be gone")


def test_closing_the_terminal_ends_the_session(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    t = Term(g, "--gpus", "1")
    t.expect("granted")
    t.type(b"echo ready-$((6*7))\r")
    t.expect("ready-42")
    os.close(t.master)          # the terminal window closed: galloc gets its hang-up
    t.proc.wait(timeout=15 * SLOW)
    assert t.proc.returncode == 129, t.proc.returncode
    j = g.wait_state(1, {"Cancelled", "Failed", "Finished"})
    assert j["state"] == "Cancelled", j
    g.wait_for(lambda: not g.job_pids(1), what="the shell to be gone")
