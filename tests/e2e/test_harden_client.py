"""Hardening of the clients (issue 26, items 1, 10 and 11).

1. A client sends nothing to a daemon it has not verified: the user's own
   socket must be in a directory of theirs (mode 0700, no symbolic link),
   and whoever serves a socket (SO_PEERCRED) must be the user or root.
10. An admin reading a user's log: no FIFO hangs `gjob log`, and the
   owner's control characters reach a terminal escaped (unless --raw).
11. A user asking for another user's log is told whose job it is and the
   rule.
"""
import json
import os
import pty
import pwd
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SLOW, Gflow

# A stand-in for a daemon, run as another user: it records every byte it is
# sent (and each connection) and answers a request as gflowd would answer a
# submission, so that a client that talks to it is done at once.
SPY = r'''
import os, socket, sys
path, record = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
open(record + ".ready", "w").close()
while True:
    c, _ = s.accept()
    with open(record + ".conns", "a") as f:
        f.write("x")
    c.settimeout(2.0)
    data = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
            with open(record, "ab") as f:
                f.write(d)
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                if len(body) >= n:
                    out = b'{"id":4242,"ids":[4242],"jobs":[],"status":"ok"}'
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n%s" % (len(out), out))
                    break
    except OSError:
        pass
    c.close()
'''


class Spy:
    """SPY run as user at socket path; .received() is what it was sent."""

    def __init__(self, g, user, path):
        self.dir = g.base / f"spy-{user}-{len(list(g.base.glob('spy-*')))}"
        self.dir.mkdir(mode=0o755)
        shutil.chown(self.dir, user, user)
        script = self.dir / "spy.py"
        script.write_text(SPY)
        self.record = self.dir / "record"
        self.proc = subprocess.Popen(["/usr/bin/python3", str(script), str(path), str(self.record)],
                                     user=user, group=user, env={"GFLOW_E2E_TAG": g.tag},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while not Path(str(self.record) + ".ready").exists():
            assert self.proc.poll() is None, self.proc.stderr.read().decode()
            assert time.time() < deadline, "the spy did not start"
            time.sleep(0.02)

    def received(self):
        return self.record.read_bytes() if self.record.exists() else b""

    def connections(self):
        p = Path(str(self.record) + ".conns")
        return len(p.read_text()) if p.exists() else 0

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()


def own_dir(uid):
    return Path(f"/tmp/gflow-{uid}")


def no_runtime(env=None):
    """A user's environment without XDG_RUNTIME_DIR (su, sudo -u, cron)."""
    e = {"GFLOW_EXECUTOR__TYPE": "process", "SECRET_TOKEN": "hunter2-e2e"}
    e.update(env or {})
    return e


@pytest.fixture
def users(system_gflow):
    """A system daemon's machine (not started), users a and b; /tmp/gflow-<uid>
    of each removed at the end."""
    g = system_gflow
    a, b = g.add_user("a"), g.add_user("b")
    uids = [pwd.getpwnam(u).pw_uid for u in (a, b)]
    spies = []
    g.spies = spies
    try:
        yield g, a, b
    finally:
        for s in spies:
            s.stop()
        for uid in uids:
            d = own_dir(uid)
            if d.is_symlink():
                d.unlink()
            elif d.exists():
                shutil.rmtree(d, ignore_errors=True)


def one_line(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


# ---- item 1: the user's own socket, in a directory another user made -------

def test_a_socket_in_a_directory_another_user_made_is_sent_nothing(users):
    g, a, b = users
    ua, ub = pwd.getpwnam(a).pw_uid, pwd.getpwnam(b).pw_uid
    d = own_dir(ua)
    sock = d / "gflowd.sock"
    g.as_user(b, "mkdir", "-m", "755", d, check=True)
    spy = Spy(g, b, sock)
    g.spies.append(spy)

    r = g.as_user(a, "gbatch", "--", "echo", "hello", env=no_runtime())
    assert r.returncode != 0, r.stdout
    line = one_line(r.stderr)
    assert line.startswith("gbatch: refusing ") and str(sock) in line, line
    assert f"belongs to {b} (uid {ub}), not you" in line, line
    assert "Submitted" not in r.stdout

    # gflowd's own commands that talk to a running daemon, and the MCP server
    r = g.as_user(a, "gflowd", "status", env=no_runtime())
    assert "hunter2" not in r.stdout + r.stderr
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "submit_jobs",
                        "arguments": {"jobs": [{"command": ["echo", "hunter2"]}]}}}]
    r = g.as_user(a, "gflow", "mcp", "serve", env=no_runtime(),
                  input="".join(json.dumps(m) + "\n" for m in msgs))
    assert "refusing" in r.stdout and str(sock) in r.stdout, r.stdout + r.stderr

    # the daemon itself will not make its socket there
    r = g.as_user(a, "gflowd", "up", "--hosting", "process", env=no_runtime(), timeout=30)
    assert r.returncode != 0
    assert f"{d} belongs to {b} (uid {ub}), not you" in r.stderr, r.stderr

    assert spy.received() == b"", spy.received()[:400]

    # With the machine's daemon up, the user is served by it and told why
    # their own socket was passed over; the spy still gets nothing.
    g.start()
    r = g.as_user(a, "gbatch", "--", "echo", "hello", env=no_runtime())
    assert r.returncode == 0, r.stderr
    assert "Submitted batch job" in r.stdout
    assert f"refusing {sock}" in r.stderr and "the system daemon answers instead" in r.stderr
    assert spy.received() == b""


def test_an_open_or_symlinked_directory_of_ones_own_is_refused(users):
    g, a, _ = users
    ua = pwd.getpwnam(a).pw_uid
    d = own_dir(ua)
    g.as_user(a, "mkdir", "-m", "700", d, check=True)
    os.chmod(d, 0o755)
    spy = Spy(g, a, d / "gflowd.sock")
    g.spies.append(spy)
    r = g.as_user(a, "gbatch", "--", "echo", "hello", env=no_runtime())
    assert r.returncode != 0, r.stdout
    line = one_line(r.stderr)
    assert str(d / "gflowd.sock") in line and "mode 0755" in line, line
    assert spy.received() == b""
    spy.stop()
    g.spies.remove(spy)

    # the user's own private directory, reached through a symbolic link
    real = g.home_of(a) / "real"
    g.as_user(a, "mkdir", "-m", "700", real, check=True)
    shutil.rmtree(d)
    g.as_user(a, "ln", "-s", real, d, check=True)
    spy = Spy(g, a, real / "gflowd.sock")
    g.spies.append(spy)
    r = g.as_user(a, "gbatch", "--", "echo", "hello", env=no_runtime())
    assert r.returncode != 0, r.stdout
    line = one_line(r.stderr)
    assert str(d / "gflowd.sock") in line and "symbolic link" in line, line
    assert spy.received() == b""


def test_a_socket_served_by_another_user_is_refused_even_when_named(users):
    """GFLOW_SOCKET names the daemon; it must still be the user's own or
    root's (SO_PEERCRED)."""
    g, a, b = users
    ub = pwd.getpwnam(b).pw_uid
    shared = g.base / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    sock = shared / "gflowd.sock"
    spy = Spy(g, b, sock)
    g.spies.append(spy)
    env = no_runtime({"GFLOW_SOCKET": str(sock)})
    r = g.as_user(a, "gbatch", "--", "echo", "hello", env=env)
    assert r.returncode != 0, r.stdout
    line = one_line(r.stderr)
    assert line == f"gbatch: refusing {sock}: it is served by {b} (uid {ub}), not by you or root", line
    r = g.as_user(a, "gqueue", "--socket", sock, env=no_runtime())
    assert r.returncode != 0 and "not by you or root" in r.stderr
    g.as_user(a, "gflowd", "status", env=env)
    g.as_user(a, "gflowd", "stop", env=env)
    assert spy.connections() >= 1
    assert spy.received() == b"", spy.received()[:400]


def test_the_personal_daemon_without_xdg_runtime_dir_makes_its_directory_private(users):
    g, a, b = users
    ua = pwd.getpwnam(a).pw_uid
    d = own_dir(ua)
    home = g.home_of(a)
    # A symbolic link of b's to a's home: the daemon neither follows it
    # (to chmod a's home) nor puts its socket there.
    g.as_user(b, "ln", "-s", home, d, check=True)
    r = g.as_user(a, "gflowd", "up", "--hosting", "process", env=no_runtime(), timeout=30)
    assert r.returncode != 0
    assert f"{d} is a symbolic link (made by {b}" in r.stderr, r.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o750
    assert not (home / "gflowd.sock").exists()
    d.unlink()

    env = no_runtime({"GFLOW_DAEMON__HOST": "127.0.0.1", "GFLOW_DAEMON__PORT": str(g.port)})
    try:
        g.as_user(a, "gflowd", "up", "--hosting", "process", env=env, check=True, timeout=30)
        st = d.lstat()
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == ua and stat.S_IMODE(st.st_mode) == 0o700
        jid = g.submit_as(a, "sh", "-c", "id -un", env=env)
        assert "(personal daemon," in g.as_user(a, "ginfo", env=env, check=True).stdout
        assert "personal daemon" in g.as_user(a, "gflowd", "status", env=env, check=True).stdout
        deadline = time.time() + 20 * SLOW
        while "Finished" not in g.as_user(a, "gjob", "show", str(jid), env=env).stdout:
            assert time.time() < deadline, "the personal daemon's job did not finish"
            time.sleep(0.1)
    finally:
        g.as_user(a, "gflowd", "stop", env=env)


def test_root_and_users_reach_the_system_daemon(users):
    g, a, _ = users
    g.start()
    jid = g.submit_as(a, "true", env=no_runtime())
    assert g.job(jid)["user"] == a
    # root without XDG_RUNTIME_DIR and without a daemon of its own
    env = dict(g.env)
    env.pop("XDG_RUNTIME_DIR")
    r = subprocess.run([str(g.bin / "gqueue"), "-a", "-u", "all"], env=env, capture_output=True,
                       text=True, timeout=30 * SLOW)
    assert r.returncode == 0 and str(jid) in r.stdout, r.stderr


@pytest.fixture
def gflow_tmux(tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    g = Gflow(tmp_path, executor="tmux")
    yield g
    g.cleanup()


def test_gjob_attach_checks_the_tmux_servers_directory(gflow_tmux):
    g = gflow_tmux
    g.start()
    jid = g.submit("sleep", "30")
    g.wait_state(jid, "Running")
    d = g.runtime / "gflow"
    d.chmod(0o755)
    try:
        # (the daemon named outright: its socket is in that directory too)
        r = g.cli("gjob", "attach", str(jid), env={"GFLOW_SOCKET": str(g.socket)}, timeout=20)
        assert r.returncode != 0
        line = one_line(r.stderr)
        assert line.startswith(f"gjob: refusing {d / 'tmux.sock'}: its directory {d} is open to "
                               "others (mode 0755)"), line
    finally:
        d.chmod(0o700)
        g.cli("gcancel", str(jid))


# ---- items 10 and 11: reading a job's log -----------------------------------

NASTY = r"printf 'top\033[2J\033]0;pwned\007\302\233mid\ttab\n'"


def on_tty(args, env, user=None, timeout=20):
    """Run args with stdout on a terminal (stderr a pipe); (rc, stdout bytes, stderr)."""
    master, slave = os.openpty()
    kw = {}
    if user:
        kw = dict(user=user, group=user,
                  extra_groups=os.getgrouplist(user, pwd.getpwnam(user).pw_gid))
    p = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=subprocess.PIPE, cwd="/", **kw)
    os.close(slave)
    out = b""
    deadline = time.time() + timeout * SLOW
    try:
        while True:
            assert time.time() < deadline, f"{args} did not end: {out!r}"
            r, _, _ = select.select([master], [], [], 0.2)
            if not r:
                if p.poll() is not None:
                    break
                continue
            try:
                d = os.read(master, 65536)
            except OSError:
                break
            if not d:
                break
            out += d
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
    rc = p.wait()
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    return rc, out, err


@pytest.fixture
def admin_machine(system_gflow):
    """A system daemon with an admin group: users a (owner), b (another
    user) and z (an admin, not root)."""
    g = system_gflow
    grp = g.add_group(f"gfadm{g.tag[:6]}")
    (g.root / "etc/gflow").mkdir(parents=True)
    (g.root / "etc/gflow/gflow.toml").write_text(f'[daemon]\nadmin_group = "{grp}"\n')
    g.start()
    return g, g.add_user("a"), g.add_user("b"), g.add_user("z", groups=[grp])


def test_another_users_log_is_refused_naming_its_owner_and_the_rule(admin_machine):
    g, a, b, _ = admin_machine
    jid = g.submit_as(a, "echo", "private")
    g.wait_state(jid, "Finished")
    r = g.as_user(b, "gjob", "log", str(jid))
    assert r.returncode != 0 and "private" not in r.stdout
    assert one_line(r.stderr) == (f"gjob: job {jid} belongs to {a}; only {a} or an admin "
                                  "may read its log"), r.stderr


def test_an_admin_reading_a_log_gets_control_characters_escaped_on_a_terminal(admin_machine):
    g, a, _, z = admin_machine
    jid = g.submit_as(a, "sh", "-c", NASTY)
    g.wait_state(jid, "Finished")
    root_env = dict(g.env)
    for who, env in (("root", root_env), (z, g.user_env(z))):
        user = None if who == "root" else z
        gjob = g.bin / "gjob"
        rc, out, err = on_tty([gjob, "log", jid], env, user)
        assert rc == 0, err
        assert b"\x1b" not in out and b"\x07" not in out and b"\xc2\x9b" not in out, out
        assert b"top\\e[2J\\e]0;pwned\\a\\xc2\\x9bmid\ttab" in out, out
        rc, out, err = on_tty([gjob, "log", "--raw", jid], env, user)
        assert rc == 0, err
        assert b"top\x1b[2J\x1b]0;pwned\x07\xc2\x9bmid\ttab" in out, out
        # not a terminal: the bytes as they are, as before
        r = subprocess.run([str(gjob), "log", str(jid)], env=env, capture_output=True, timeout=20 * SLOW,
                           **({} if user is None else dict(user=z, group=z, extra_groups=os.getgrouplist(
                               z, pwd.getpwnam(z).pw_gid))))
        assert b"top\x1b[2J\x1b]0;pwned\x07\xc2\x9bmid\ttab" in r.stdout, r
    # --follow of a running job goes through the same escaping
    flag = g.home_of(a) / "go"
    jf = g.submit_as(a, "sh", "-c", f"{NASTY}; while [ ! -e {flag} ]; do sleep 0.05; done; {NASTY}")
    g.wait_state(jf, "Running")
    g.as_user(a, "touch", flag, check=True)
    rc, out, err = on_tty([g.bin / "gjob", "log", "--follow", jf], root_env)
    assert rc == 0, err
    assert b"\x1b" not in out and out.count(b"top\\e[2J") == 2, out


def test_a_fifo_at_the_log_path_is_refused_at_once(admin_machine):
    g, a, _, _ = admin_machine
    jid = g.submit_as(a, "echo", "hello")
    g.wait_state(jid, "Finished")
    path = Path(g.job(jid)["log_path"])
    g.as_user(a, "rm", path, check=True)
    g.as_user(a, "mkfifo", path, check=True)
    try:
        r = g.cli("gjob", "log", str(jid), timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("gjob log hung on a FIFO at the log's path")
    assert r.returncode != 0
    assert one_line(r.stderr) == f"gjob: refusing {path}: it is a FIFO, not a regular file", r.stderr
    # a symbolic link there, to a file of the admin's: refused too
    secret = g.base / "root-only"
    secret.write_text("root secret\n")
    g.as_user(a, "rm", path, check=True)
    g.as_user(a, "ln", "-s", secret, path, check=True)
    r = g.cli("gjob", "log", str(jid), timeout=10)
    assert r.returncode != 0 and "root secret" not in r.stdout
    assert one_line(r.stderr) == f"gjob: refusing {path}: it is a symbolic link, not the job's log"
