"""`gjob attach` under the system daemon (issue 10, item 7): a tmux-executor
job gets no tmux server (root's would be out of its owner's reach); its runner
offers the job's terminal on an attach socket. Checked as real throwaway
users, each on a terminal of their own (a pty): the owner sees the earlier
output and the live output, types into the job, resizes it and detaches;
another user hears the rule; root and admin-group members get in; a viewer
that never reads does not stall the job.
"""
import fcntl
import grp
import os
import pwd
import select
import socket
import stat
import struct
import subprocess
import termios
import time

from conftest import SLOW, DirEvents


class Viewer:
    """`gjob attach ID` as user (None: root) on a pty that is its controlling
    terminal (setsid -c), so resizing the pty sends it SIGWINCH."""

    def __init__(self, g, user, jid, rows=33, cols=101):
        self.master, slave = os.openpty()
        self.resize(rows, cols)
        kw = {}
        if user is None:
            env, cwd = dict(g.env), g.tmp
        else:
            env, cwd = g.user_env(user), g.home_of(user)
            kw = dict(user=user, group=user,
                      extra_groups=os.getgrouplist(user, pwd.getpwnam(user).pw_gid))
        env["TERM"] = "xterm"
        self.proc = subprocess.Popen(["setsid", "-w", "-c", str(g.bin / "gjob"), "attach", str(jid)],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, **kw)
        os.close(slave)
        self.out = b""

    def resize(self, rows, cols):
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_some(self, wait):
        r, _, _ = select.select([self.master], [], [], wait)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:     # EIO: the client is gone and nothing holds the slave
            data = b""
        self.out += data
        return bool(data)

    def expect(self, text, timeout=15):
        deadline = time.time() + timeout * SLOW
        while text.encode() not in self.out:
            if time.time() > deadline:
                raise AssertionError(f"{text!r} not seen on the viewer's terminal:\n{self.out!r}")
            if not self.read_some(0.2) and self.proc.poll() is not None:
                self.read_some(0)
                if text.encode() not in self.out:
                    raise AssertionError(f"gjob attach exited ({self.proc.returncode}) before "
                                         f"{text!r}:\n{self.out!r}")

    def type(self, data):
        os.write(self.master, data)

    def finish(self, timeout=15):
        """Wait for the client to exit; its exit code."""
        deadline = time.time() + timeout * SLOW
        while self.proc.poll() is None:
            if time.time() > deadline:
                self.proc.kill()
                raise AssertionError(f"gjob attach did not exit:\n{self.out!r}")
            self.read_some(0.1)
        while self.read_some(0):
            pass
        os.close(self.master)
        for word in (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:"):
            assert word not in self.out, self.out
        return self.proc.returncode


JOB = ("echo early-$((6*7)); read x; echo got=$x; stty size; read y; echo y=$y; "
       "read z; echo z=$z; stty size; sleep 60")


def start_tmux_daemon(g, config=None):
    g.env["GFLOW_EXECUTOR__TYPE"] = "tmux"
    if config:
        (g.root / "etc/gflow").mkdir(parents=True)
        (g.root / "etc/gflow/gflow.toml").write_text(config)
    g.gpus(1)
    g.start()


def log_of(g, user, jid):
    path = g.home_of(user) / ".local/share/gflow/logs/system" / f"{jid}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def running_job(g, user, command=JOB):
    jid = g.submit_as(user, "sh", "-c", command)
    j = g.wait_state(jid, "Running")
    g.wait_for(lambda: os.path.exists(j.get("attach_socket") or "/nonexistent"), what="the attach socket")
    return jid, j


def test_owner_attaches_sees_replay_and_live_output_types_resizes_and_detaches(system_gflow):
    g = system_gflow
    start_tmux_daemon(g)
    a, b = g.add_user("a"), g.add_user("b")
    jid, j = running_job(g, a)
    # no tmux for system jobs: a socket of the runner's, in a root directory
    assert j["executor"] == "tmux" and not j.get("tmux_session")
    sock = g.root / "run/gflow/attach" / f"{jid}.sock"
    assert j["attach_socket"] == str(sock)
    d = os.stat(sock.parent)
    assert d.st_uid == 0 and stat.S_IMODE(d.st_mode) == 0o711
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and st.st_uid == pwd.getpwnam(a).pw_uid
    assert stat.S_IMODE(st.st_mode) == 0o600
    g.wait_for(lambda: "early-42" in log_of(g, a, jid), what="the job's first output")

    # the owner: the output from before (replay), then typed input and live output
    v = Viewer(g, a, jid, rows=33, cols=101)
    v.expect("detach with Ctrl-b d")
    v.expect("early-42")
    v.type(b"hello\r")
    v.expect("got=hello")
    v.expect("33 101")          # the viewer's window size reached the job's terminal
    v.type(b"\x02d")            # Ctrl-b d
    assert v.finish() == 0, v.out
    assert b"detached from job" in v.out
    assert g.job(jid)["state"] == "Running"

    # another user: refused with the rule (the socket is the owner's, 0600) ...
    rule = f"job {jid} belongs to {a}; only {a} or an admin may attach"
    r = g.as_user(b, "gjob", "attach", jid)
    assert r.returncode != 0 and rule in r.stderr, r.stderr
    # ... and by the runner itself, which asks the kernel who connects
    os.chmod(sock, 0o666)
    r = g.as_user(b, "gjob", "attach", jid)
    assert r.returncode != 0 and rule in r.stderr, r.stderr
    os.chmod(sock, 0o600)

    # root: the replay has what happened so far; a new window size goes live (SIGWINCH)
    v = Viewer(g, None, jid, rows=33, cols=101)
    v.expect("got=hello")
    v.type(b"again\r")
    v.expect("y=again")
    v.resize(40, 120)
    time.sleep(0.2)
    v.type(b"z\r")
    v.expect("z=z")
    v.expect("40 120")
    v.type(b"\x02d")
    assert v.finish() == 0, v.out
    assert g.job(jid)["state"] == "Running"
    # the log has every byte, whoever watched
    g.wait_for(lambda: "40 120" in log_of(g, a, jid), what="the log to follow")
    assert "got=hello" in log_of(g, a, jid)

    # the job ends: its socket goes, and attach says so in one line
    g.as_user(a, "gcancel", jid, check=True)
    g.wait_state(jid, "Cancelled")
    g.wait_for(lambda: not sock.exists(), what="the attach socket to go")
    r = g.as_user(a, "gjob", "attach", jid)
    assert r.returncode != 0 and "has ended" in r.stderr, r.stderr


def test_admin_group_member_attaches_beside_the_owner_after_a_daemon_restart(system_gflow):
    g = system_gflow
    group = g.add_group(f"gfadm{g.tag[:6]}")
    start_tmux_daemon(g, f'[daemon]\nadmin_group = "{group}"\n')
    a, boss = g.add_user("a"), g.add_user("z", groups=[group])
    jid, j = running_job(g, a, "echo ready; read x; echo bye=$x")
    st = os.stat(j["attach_socket"])
    assert st.st_gid == grp.getgrnam(group).gr_gid and stat.S_IMODE(st.st_mode) == 0o660
    # the socket is named by the job's id: a restarted daemon names the same one
    g.stop()
    g.start()
    assert g.wait_state(jid, "Running")["attach_socket"] == j["attach_socket"]
    # two viewers at once: the admin-group member and the owner
    v = Viewer(g, boss, jid)
    v.expect("ready")
    w = Viewer(g, a, jid)
    w.expect("ready")
    v.type(b"now\r")
    for viewer in (v, w):
        viewer.expect("bye=now")
        viewer.expect("has ended")  # the job ended while attached: told, then out
        assert viewer.finish() == 0, viewer.out
    g.wait_state(jid, "Finished")


def test_the_admin_group_counts_among_many_groups_and_only_as_the_kernel_says(system_gflow):
    # The runner asks no user database (it may be linked statically): a
    # viewer's groups are the connecting process's, as the kernel keeps
    # them (SO_PEERGROUPS), also past the first 64. A user in 70 groups,
    # the admin group last, gets in; one in 70 others is refused in one
    # line, however the socket's mode treats them.
    g = system_gflow
    tag = g.tag[:5]
    many = [g.add_group(f"gfm{tag}{i}") for i in range(70)]
    admin = g.add_group(f"gfadm{tag}")
    start_tmux_daemon(g, f'[daemon]\nadmin_group = "{admin}"\n')
    a = g.add_user("a")
    boss = g.add_user("y", groups=many + [admin])
    other = g.add_user("x", groups=many)
    jid, _ = running_job(g, a, "echo ready; read x; echo bye=$x")
    v = Viewer(g, boss, jid)
    v.expect("ready")
    r = g.as_user(other, "gjob", "attach", jid)
    assert r.returncode != 0 and "only" in (r.stderr + r.stdout), (r.stdout, r.stderr)
    v.type(b"in\r")
    v.expect("bye=in")
    v.expect("has ended")
    assert v.finish() == 0, v.out
    g.wait_state(jid, "Finished")


def test_a_viewer_that_never_reads_stalls_neither_job_nor_log(system_gflow):
    g = system_gflow
    start_tmux_daemon(g)
    a = g.add_user("a")
    jid, j = running_job(g, a, "read x; head -c 1000000 /dev/zero | tr '\\0' x; echo; echo done-$x")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(j["attach_socket"])        # root, and it never reads what comes
    s.sendall(b"k\x00\x03go\r")          # a keys frame: the job goes on
    try:
        g.wait_state(jid, "Finished", timeout=30)
    finally:
        s.close()
    log = log_of(g, a, jid)
    assert log.count("x") >= 1000000 and "done-go" in log


def test_a_viewer_that_speaks_nonsense_is_dropped_and_the_job_runs_on(system_gflow):
    g = system_gflow
    start_tmux_daemon(g)
    a = g.add_user("a")
    jid, j = running_job(g, a, "read x; echo x=$x")
    for frame in (b"q\x00\x01x", b"w\x00\x03abc", b"k\xff\xffxx"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(j["attach_socket"])
        s.settimeout(10 * SLOW)
        assert s.recv(100).startswith(b"gflow-attach 1 job ")
        s.sendall(frame)
        while s.recv(4096):     # until the runner closes it
            pass
        s.close()
        assert g.job(jid)["state"] == "Running"
    v = Viewer(g, a, jid)
    v.type(b"fine\r")
    v.expect("x=fine")
    v.finish()
    g.wait_state(jid, "Finished")


def test_the_attach_socket_appears_only_once_it_is_the_owners(system_gflow):
    # Made under another name and renamed when handed over and listening:
    # the socket never appears at its path root's (an owner connecting then
    # was told "only <owner> or an admin may attach": a flaky galloc).
    IN_CREATE, IN_MOVED_TO = DirEvents.IN_CREATE, DirEvents.IN_MOVED_TO
    g = system_gflow
    start_tmux_daemon(g)
    a = g.add_user("a")
    adir = g.root / "run/gflow/attach"
    adir.mkdir(mode=0o711, parents=True, exist_ok=True)
    os.chmod(adir, 0o711)
    with DirEvents(adir, IN_CREATE | IN_MOVED_TO) as watch:
        jid, _ = running_job(g, a)
        events = watch.events()
    assert (f"{jid}.sock", IN_MOVED_TO) in events, events
    assert (f"{jid}.sock", IN_CREATE) not in events, events
    assert os.stat(adir / f"{jid}.sock").st_uid == pwd.getpwnam(a).pw_uid
    assert not (adir / f"{jid}.sock.n").exists()
    g.as_user(a, "gcancel", jid, check=True)
