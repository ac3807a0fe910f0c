"""Starting, reloading and sharing the daemon when something is wrong
(issue 9, faults 6 and 7): a bad config or option is found before anything
is started or replaced and named with its file, line and key at once; a
reload under load loses no request; init writes what it was asked to
write; clients read their --config; a second daemon never takes the socket
of a live one."""
import os
import signal
import socket
import subprocess
import threading
import time
import tomllib

import pytest

from conftest import SLOW, Gflow

BAD = "[daemon]\nbogus_key = 1\n"


def write_config(g, text, home=None):
    d = (home or g.home) / ".config/gflow"
    d.mkdir(parents=True, exist_ok=True)
    (d / "gflow.toml").write_text(text)
    return d / "gflow.toml"


def gflowd(g, *args, timeout=10, env=None):
    """`gflowd ARGS`, bounded by a plain timeout (a 15 s wait fails it)."""
    e = dict(g.env)
    e.update(env or {})
    return subprocess.run([str(g.build / "gflowd"), *args], env=e, cwd=g.tmp, capture_output=True,
                          text=True, timeout=timeout)


def info(g):
    st, body = g.api("GET", "/info")
    assert st == 200, body
    return body


def assert_names_file_line_key(stderr, path):
    assert str(path) in stderr and "line 2" in stderr and "bogus_key" in stderr, stderr
    assert stderr.strip().count("\n") == 0, "one line: " + stderr


# ---- fault 6: a bad reload leaves the daemon as it was ------------------------------

def test_bad_reload_keeps_the_daemon_and_names_file_line_key(gflow):
    g = gflow
    cfg = write_config(g, "[daemon]\n")
    g.start()
    jid = g.submit("sleep", "30")
    g.wait_state(jid, "Running")
    before = info(g)
    cfg.write_text(BAD)
    r = gflowd(g, "reload")
    assert r.returncode != 0
    assert_names_file_line_key(r.stderr, cfg)
    assert "goes on as it was" in r.stderr
    after = info(g)
    assert after["pid"] == g.proc.pid and after["started_at"] == before["started_at"]
    assert g.job(jid)["state"] == "Running"
    assert g.cli("gqueue").returncode == 0
    cfg.write_text("[daemon]\n")
    r = gflowd(g, "reload")
    assert r.returncode == 0 and "reloaded" in r.stdout, r.stderr
    assert info(g)["started_at"] != before["started_at"]
    assert g.job(jid)["state"] == "Running"


def test_the_daemon_checks_a_reload_with_its_own_config_and_gpus(gflow):
    """What only the daemon can know (its own environment, its GPUs) is
    checked by the daemon before it replaces itself."""
    g = gflow
    g.gpus(2)
    g.start()
    pid, started = g.proc.pid, info(g)["started_at"]
    allowed = g.api("GET", "/gpus")[1]["allowed"]
    # The daemon reads ~/.config; this CLI is pointed elsewhere, at a good file.
    mine = g.tmp / "cli-config"
    write_config(g, "[daemon]\n", home=mine)
    daemon_cfg = write_config(g, BAD)
    r = gflowd(g, "reload", env={"XDG_CONFIG_HOME": str(mine / ".config")})
    assert r.returncode != 0
    assert_names_file_line_key(r.stderr, daemon_cfg)
    daemon_cfg.write_text("[daemon]\n")
    r = gflowd(g, "reload", "--gpus", "0-3")
    assert r.returncode != 0 and "0-3" in r.stderr and "2 GPUs" in r.stderr, r.stderr
    assert info(g)["pid"] == pid and info(g)["started_at"] == started
    assert g.api("GET", "/gpus")[1]["allowed"] == allowed


def test_a_replacement_that_cannot_start_gives_way_to_the_old_daemon(gflow):
    """A failure no check could foresee: the new process runs the replaced
    daemon again, on the same sockets, and the reload says why."""
    g = gflow
    g.gpus(2)
    g.start("--gpus", "1")
    jid = g.submit("sleep", "30")
    g.wait_state(jid, "Running")
    pid = g.proc.pid
    real = g.build / "gflowd"
    # A "new binary" whose checks pass but whose daemon cannot start.
    fake = g.tmp / "gflowd-new"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" --check "*) exec {real} "$@";; esac\n'
                    f'exec {real} "$@" --gpus 5\n')
    fake.chmod(0o755)
    report = g.data / "reload.test.report"
    (g.data / "reload.args").write_bytes(b"\0".join(
        [str(fake).encode(), b"--report", str(report).encode()]) + b"\0")
    os.kill(pid, signal.SIGUSR2)     # what `gflowd reload` sends
    g.wait_for(lambda: report.exists() and "error" in report.read_text(), what="the reload's report")
    assert "--gpus" in report.read_text() and "replaced one goes on" in report.read_text()
    g.wait_for(lambda: g.api("GET", "/health")[0] == 200, what="the old daemon back")
    assert info(g)["pid"] == pid
    assert g.api("GET", "/gpus")[1]["allowed"] == [1]     # its own options again
    assert g.job(jid)["state"] == "Running"
    assert g.cli("gflowd", "reload").returncode == 0


@pytest.mark.parametrize("hosting", ["tmux", "process"])
def test_up_with_a_bad_config_says_why_at_once(gflow, hosting):
    g = gflow
    if hosting == "tmux" and subprocess.run(["which", "tmux"], capture_output=True).returncode:
        pytest.skip("tmux is not installed")
    cfg = write_config(g, BAD)
    r = gflowd(g, "up", "--hosting", hosting)
    assert r.returncode != 0
    assert_names_file_line_key(r.stderr, cfg)
    assert gflowd(g, "status").returncode == 3
    # Wrong only where the daemon can tell (it has no GPU 0-3): said by the
    # daemon as it stops, not after a 15 s wait.
    cfg.write_text("[daemon]\n")
    r = gflowd(g, "up", "--hosting", hosting, "--gpus", "0-3")
    assert r.returncode != 0 and "0-3" in r.stderr and "within 15 s" not in r.stderr, r.stderr
    assert gflowd(g, "status").returncode == 3
    r = gflowd(g, "up", "--hosting", hosting)
    assert r.returncode == 0 and f"started ({hosting}" in r.stdout, r.stderr
    cfg.write_text(BAD)
    r = gflowd(g, "restart")
    assert r.returncode != 0
    assert_names_file_line_key(r.stderr, cfg)
    assert gflowd(g, "status").returncode == 0     # restart did not stop it
    assert gflowd(g, "down").returncode == 0


@pytest.mark.parametrize("hosting", ["tmux", "process"])
def test_up_notices_at_once_a_daemon_that_dies_while_starting(gflow, hosting):
    g = gflow
    if hosting == "tmux" and subprocess.run(["which", "tmux"], capture_output=True).returncode:
        pytest.skip("tmux is not installed")
    # A hung GPU holds the daemon in its start for 3 s: time to crash it.
    g.set_scenario('gpu 0 name="Fake H100" total_mb=81920\nhang 0 secs=60\n')
    out = {}
    t = threading.Thread(target=lambda: out.update(r=gflowd(g, "up", "--hosting", hosting)))
    t.start()
    try:
        def starting_pid():
            for f in g.data.glob("start.*.report"):
                words = f.read_text().split()
                if words[:1] == ["pid"] and "starting" in words:
                    return int(words[1])
        pid = g.wait_for(starting_pid, what="the daemon's report")
        os.kill(pid, signal.SIGKILL)
    finally:
        t.join()
    r = out["r"]
    assert r.returncode != 0
    assert f"daemon (pid {pid}) exited while starting" in r.stderr and "gflowd.log" in r.stderr, r.stderr
    assert gflowd(g, "status").returncode == 3


# ---- fault 6: no request refused or lost across reloads ----------------------------

def slow_request(g, method, path, body=b"", pause=0.5):
    """One request sent in two parts with a pause between: in flight while
    a reload begins. Returns the status code."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    try:
        s.connect(str(g.socket))
        head = (f"{method} {path} HTTP/1.1\r\nHost: gflowd\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        s.sendall(head[:20])
        time.sleep(pause)
        s.sendall(head[20:] + body)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        return int(raw.split(b" ", 2)[1]) if raw else None
    finally:
        s.close()


@pytest.mark.parametrize("over", ["unix", "tcp"])
def test_reload_waits_for_a_request_in_flight(gflow, over):
    g = gflow
    g.start()
    out = {}

    def reload():
        out["r"] = gflowd(g, "reload", timeout=60)

    if over == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(str(g.socket))
    else:
        s = socket.create_connection(("127.0.0.1", g.port), timeout=60)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: gflowd\r\n")    # accepted, not yet whole
    t = threading.Thread(target=reload)
    t.start()
    time.sleep(0.8)                  # the old daemon drained for 300 ms, then exec'd
    s.sendall(b"Connection: close\r\n\r\n")
    raw = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        raw += chunk
    s.close()
    t.join()
    assert raw.startswith(b"HTTP/1.1 200"), raw
    assert out["r"].returncode == 0, out["r"].stderr


def test_reloads_under_load_lose_nothing(gflow):
    g = gflow
    g.start()
    stop = threading.Event()
    lock = threading.Lock()
    outcomes, failures, submitted = [], [], []

    def record(what, ok, detail=""):
        with lock:
            outcomes.append(what)
            if not ok:
                failures.append(f"{what}: {detail}")

    def cli_client(i):
        while not stop.is_set():
            if i % 2:
                r = g.cli("gbatch", "--hold", "true")
                ok = r.returncode == 0 and "Submitted batch job" in r.stdout
                if ok:
                    with lock:
                        submitted.append(int(r.stdout.split()[3]))
            else:
                r = g.cli("gqueue", "-a")
                ok = r.returncode == 0
            record("cli", ok, r.stderr.strip())

    def slow_client(i):
        body = ('{"jobs":[{"command":["true"],"hold":true}],"cwd":"%s","env":[]}' % g.tmp).encode()
        while not stop.is_set():
            try:
                if i % 2:
                    st = slow_request(g, "POST", "/jobs", body, pause=0.4)
                    ok = st == 201
                else:
                    st = slow_request(g, "GET", "/jobs?users=all", pause=0.3)
                    ok = st == 200
                record("slow", ok, f"status {st}")
            except OSError as e:
                record("slow", False, repr(e))

    def keepalive_client():
        import http.client
        from conftest import UnixHTTPConnection
        c = UnixHTTPConnection(str(g.socket), timeout=60)
        while not stop.is_set():
            try:
                c.request("GET", "/health")
                r = c.getresponse()
                r.read()
                record("keep-alive", r.status == 200, f"status {r.status}")
            except (OSError, http.client.HTTPException) as e:
                record("keep-alive", False, repr(e))
                c.close()
        c.close()

    threads = ([threading.Thread(target=cli_client, args=(i,)) for i in range(2)] +
               [threading.Thread(target=slow_client, args=(i,)) for i in range(2)] +
               [threading.Thread(target=keepalive_client)])
    for t in threads:
        t.start()
    reloads = []
    try:
        time.sleep(0.5)
        for _ in range(5):
            reloads.append(gflowd(g, "reload", timeout=60))
            time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert [r.returncode for r in reloads] == [0] * 5, [r.stderr for r in reloads]
    assert not failures, failures[:5]
    for kind in ("cli", "slow", "keep-alive"):
        assert outcomes.count(kind) >= 5, (kind, len(outcomes))
    for jid in submitted:          # every acknowledged submission is there
        assert g.job(jid)["state"] == "Hold"


# ---- fault 6: init, service, clients' --config --------------------------------------

def test_init_writes_what_it_is_asked_to_where_it_is_asked(gflow):
    g = gflow
    target = g.tmp / "elsewhere" / "mine.toml"
    r = gflowd(g, "init", "--yes", "--config", str(target), "--host", "127.0.0.2", "--port", "6123",
               "--gpus", "0,2", "--executor", "process", "--gpu-allocation-strategy", "random",
               "--gpu-poll-interval-secs", "3")
    assert r.returncode == 0 and str(target) in r.stdout, r.stderr
    assert not (g.home / ".config/gflow/gflow.toml").exists()
    c = tomllib.loads(target.read_text())
    assert c == {"daemon": {"host": "127.0.0.2", "port": 6123, "gpus": "0,2",
                            "gpu_allocation_strategy": "random", "gpu_poll_interval_secs": 3},
                 "executor": {"type": "process"}}
    r = gflowd(g, "init", "--yes", "--config", str(target))
    assert r.returncode != 0 and "--force" in r.stderr
    assert tomllib.loads(target.read_text())["daemon"]["port"] == 6123
    for bad in (["--port", "70000"], ["--gpus", "0-x"], ["--executor", "slurm"],
                ["--gpu-allocation-strategy", "best"], ["--gpu-poll-interval-secs", "0"]):
        r = gflowd(g, "init", "--yes", "--force", "--config", str(target), *bad)
        assert r.returncode != 0 and bad[0] in r.stderr, (bad, r.stderr)
        assert tomllib.loads(target.read_text())["daemon"]["port"] == 6123, "left as it was"
    # The daemon runs on what init wrote.
    r = gflowd(g, "init", "--yes", "--force", "--config", str(target), "--host", "127.0.0.1",
               "--port", str(g.port), "--gpu-poll-interval-secs", "2")
    assert r.returncode == 0, r.stderr
    g.start("--config", str(target))
    assert info(g)["gpu_poll_interval_secs"] == 2
    r = gflowd(g, "init", "--yes")
    assert r.returncode == 0 and (g.home / ".config/gflow/gflow.toml").exists()


def test_service_install_without_a_user_manager_fails(gflow):
    g = gflow
    if subprocess.run(["systemctl", "--user", "show-environment"], capture_output=True).returncode == 0:
        pytest.skip("this machine has a systemd user manager")
    r = gflowd(g, "service", "install")
    assert r.returncode != 0
    assert "systemd user manager" in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert not (g.home / ".config/systemd/user/gflowd.service").exists()


CLIENTS = [
    ["gbatch", "--config", "{}", "true"],
    ["gqueue", "--config", "{}"],
    ["ginfo", "--config", "{}"],
    ["gjob", "--config", "{}", "show", "1"],
    ["gcancel", "--config", "{}", "1"],
    ["gctl", "--config", "{}", "show-gpus"],
    ["gstats", "--config", "{}"],
    ["gflow", "--config", "{}", "queue"],
    ["gflow", "queue", "--config={}"],
]


def test_clients_read_their_config_and_report_its_errors(gflow):
    g = gflow
    g.start()
    good, bad = g.tmp / "good.toml", g.tmp / "bad.toml"
    good.write_text("[daemon]\nport = 6000\n")
    bad.write_text(BAD)
    for argv in CLIENTS:
        r = g.cli(*[a.format(bad) for a in argv])
        assert r.returncode != 0, argv
        assert_names_file_line_key(r.stderr.replace(" (see: gqueue --help)", ""), bad)
        r = g.cli(*[a.format(g.tmp / "missing.toml") for a in argv])
        assert r.returncode != 0 and "missing.toml" in r.stderr, (argv, r.stderr)
    for argv in CLIENTS:
        r = g.cli(*[a.format(good) for a in argv])
        assert "good.toml" not in r.stderr, (argv, r.stderr)
    assert g.cli("gqueue", "--config", good).returncode == 0


# ---- fault 7: one daemon per socket --------------------------------------------------

def test_a_refused_second_daemon_leaves_the_socket_alone(gflow):
    g = gflow
    g.start()
    r = g.cli("gflowd", "run")
    assert r.returncode != 0 and f"pid {g.proc.pid}" in r.stderr, r.stderr
    assert g.socket.exists()
    assert g.cli("gqueue").returncode == 0


def test_second_daemon_with_another_data_dir_cannot_take_the_socket(gflow, tmp_path):
    g = gflow
    g.start()
    jid = g.submit("sleep", "30")
    g.wait_state(jid, "Running")
    other = Gflow(tmp_path / "other")
    other.env["XDG_RUNTIME_DIR"] = g.env["XDG_RUNTIME_DIR"]       # the same socket
    other.socket = g.socket
    try:
        r = other.cli("gflowd", "run", timeout=20)
        assert r.returncode != 0
        assert f"pid {g.proc.pid}" in r.stderr and str(g.socket) in r.stderr, r.stderr
        r = gflowd(other, "up", "--hosting", "process")
        assert r.returncode != 0 and f"pid {g.proc.pid}" in r.stderr, r.stderr
        assert g.socket.exists()
        assert g.api("GET", "/health")[1]["pid"] == g.proc.pid
        r = g.cli("gqueue", check=True)
        assert str(jid) in r.stdout
        # The second one stopping (had it started) never removes the socket;
        # the first stopping does, and then the second may have it.
        g.stop()
        assert not g.socket.exists()
        other.start()
        assert other.api("GET", "/health")[1]["pid"] == other.proc.pid
    finally:
        other.cleanup()


def test_tmux_executor_without_tmux_on_path_says_so(tmp_path):
    """The daemon starts tmux from its own PATH (no /usr/bin/env in between):
    without one there, the job fails naming the cause, and the daemon goes on."""
    g = Gflow(tmp_path, executor="tmux")
    try:
        nodir = tmp_path / "no-tmux"
        nodir.mkdir()
        path = g.env["PATH"]
        g.env["PATH"] = f"{g.build}:{nodir}"
        g.start()
        g.env["PATH"] = path		# the clients' (and cleanup's)
        jid = g.submit("--", "/bin/true")
        j = g.wait_state(jid, "Failed")
        assert "tmux is not on the daemon's PATH" in j["reason"], j
        assert g.api("GET", "/health")[0] == 200
    finally:
        g.cleanup()
