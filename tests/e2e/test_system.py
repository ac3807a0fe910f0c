"""One daemon for the whole machine (issue 10): a system daemon (root, under a
relocated root) that every local user reaches, running each job as its owner,
with logs that belong to their owners, roles, and per-user tokens. Every check
is made as real throwaway users (useradd), through their own client.
"""
import json
import os
import pwd
import shutil
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import SLOW


def job_of(g, jid):
    return g.job(jid)


def log_path(g, user, jid):
    return g.home_of(user) / ".local/share/gflow/logs/system" / f"{jid}.log"


def wait_done(g, jid, states=("Finished",), timeout=20):
    return g.wait_state(jid, set(states), timeout=timeout)


@pytest.fixture
def two(system_gflow):
    g = system_gflow
    g.gpus(2)
    g.start()
    return g, g.add_user("a"), g.add_user("b")


def test_jobs_run_as_their_owners_on_their_own_gpus_and_logs_are_theirs(two):
    g, a, b = two
    # each holds its GPU until both run (a short job could end before the
    # other starts, which would then rightly get the same GPU)
    flag = Path(f"/tmp/gflow-e2e-both-run-{uuid.uuid4().hex}")
    cmd = (f"while [ ! -e {flag} ]; do sleep 0.02; done; "
           "id -un; id -u; id -G; echo gpu=$CUDA_VISIBLE_DEVICES")
    ja = g.submit_as(a, "--gpus", "1", "sh", "-c", cmd)
    jb = g.submit_as(b, "--gpus", "1", "sh", "-c", cmd)
    g.wait_state(ja, "Running")
    g.wait_state(jb, "Running")
    flag.touch()
    for user, jid in ((a, ja), (b, jb)):
        j = wait_done(g, jid)
        assert j["user"] == user and j["uid"] == pwd.getpwnam(user).pw_uid
        path = log_path(g, user, jid)
        st = path.stat()
        assert st.st_uid == pwd.getpwnam(user).pw_uid and stat.S_IMODE(st.st_mode) == 0o600
        lines = path.read_text().split()
        assert lines[0] == user and lines[1] == str(pwd.getpwnam(user).pw_uid)
        groups = g.as_user(user, "id", "-G", check=True).stdout.split()
        assert sorted(lines[2:-1]) == sorted(groups)
        # the owner reads it with gjob log (and could with tail -f)
        assert g.as_user(user, "gjob", "log", jid, check=True).stdout.split()[0] == user
    gpus = {g.job(ja)["gpu_ids"][0], g.job(jb)["gpu_ids"][0]}
    assert gpus == {0, 1}
    flag.unlink()
    # each is refused the other's log
    r = g.as_user(a, "gjob", "log", jb)
    assert r.returncode != 0
    assert r.returncode != 0 and str(log_path(g, b, jb)) not in r.stdout
    # everyone sees both jobs
    for user in (a, b):
        out = g.as_user(user, "gqueue", "-a", "-u", "all", "-f", "JOBID,USER", check=True).stdout
        assert f"{ja}" in out and a in out and f"{jb}" in out and b in out


def test_others_see_only_what_anyone_may_see(two):
    g, a, b = two
    jb = g.submit_as(b, "--hold", "sh", "-c", "echo secret-command-word")
    show = g.as_user(a, "gjob", "show", jb, check=True).stdout
    assert f"User={b}" in show and "secret-command-word" not in show
    mine = g.as_user(b, "gjob", "show", jb, check=True).stdout
    assert "secret-command-word" in mine
    r = g.as_user(a, "gqueue", "-u", "all", "-o", "json", check=True)
    j = [x for x in json.loads(r.stdout) if x["id"] == jb][0]
    assert "command" not in j and "cwd" not in j and j["user"] == b


@pytest.mark.parametrize("verb", [("gcancel",), ("gjob", "hold"), ("gjob", "update", "--priority", "3")])
def test_a_user_cannot_change_another_users_job_and_is_told_the_rule(two, verb):
    g, a, b = two
    jb = g.submit_as(b, "--hold" if verb[-1] != "hold" else "--priority=5", "sleep", "100")
    args = list(verb[:2]) + [str(jb)] + list(verb[2:]) if verb[0] == "gjob" else [verb[0], str(jb)]
    r = g.as_user(a, *args)
    assert r.returncode != 0
    assert f"job {jb} belongs to {b}; only {b} or an admin may" in r.stderr, r.stderr
    assert g.job(jb)["state"] in ("Hold", "Queued", "Running")


def test_an_admin_group_member_may_change_anyones_job_others_not_gctl(system_gflow):
    g = system_gflow
    grp = g.add_group(f"gfadm{g.tag[:6]}")
    (g.root / "etc/gflow").mkdir(parents=True)
    (g.root / "etc/gflow/gflow.toml").write_text(f'[daemon]\nadmin_group = "{grp}"\n')
    g.gpus(2)
    g.start()
    a, boss = g.add_user("a"), g.add_user("z", groups=[grp])
    ja = g.submit_as(a, "--hold", "sleep", "100")
    g.as_user(boss, "gcancel", ja, check=True)
    assert g.job(ja)["state"] == "Cancelled"
    # the owner's log file is the owner's alone; an admin reads it through the daemon
    jl = g.submit_as(a, "sh", "-c", "echo line-one; echo line-two")
    g.wait_state(jl, "Finished")
    assert g.as_user(boss, "cat", str(log_path(g, a, jl))).returncode != 0
    assert g.as_user(boss, "gjob", "log", jl, check=True).stdout == "line-one\nline-two\n"
    assert g.as_user(boss, "gjob", "log", "-l", "1", jl, check=True).stdout == "line-two\n"
    other = g.add_user("o")
    r = g.as_user(other, "gjob", "log", jl)
    assert r.returncode != 0 and "line-one" not in r.stdout
    r = g.as_user(a, "gctl", "set-gpus", "0")
    assert r.returncode != 0 and "only root and members of the group" in r.stderr and grp in r.stderr
    g.as_user(boss, "gctl", "set-gpus", "0", check=True)


def test_submission_that_the_owner_could_not_run_is_refused(two):
    g, a, _ = two
    secret = g.base / "rootonly"
    secret.mkdir(mode=0o700)
    code = ("import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "body = json.dumps({'jobs': [{'command': ['true']}], 'cwd': sys.argv[2], 'env': []})\n"
            "s.sendall(('POST /jobs HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n'\n"
            "           'Content-Length: %d\\r\\n\\r\\n%s' % (len(body), body)).encode())\n"
            "print(s.makefile().read())\n")
    r = g.as_user(a, "/usr/bin/python3", "-c", code, str(g.socket), str(secret), check=True)
    assert " 400 " in r.stdout.splitlines()[0]
    assert f"{a} cannot enter the working directory {secret}" in r.stdout


def test_a_fifo_as_script_is_refused_without_holding_up_the_daemon(two):
    """The owner check opens the script as the owner: a FIFO must not make
    it (and with it the whole daemon) wait for a writer."""
    g, a, _ = two
    fifo = g.home_of(a) / "pipe.sh"
    g.as_user(a, "mkfifo", str(fifo), check=True)
    code = ("import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)\n"
            "body = json.dumps({'jobs': [{'command': [sys.argv[2]], 'script': sys.argv[2]}], "
            "'cwd': sys.argv[3], 'env': []})\n"
            "s.sendall(('POST /jobs HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n'\n"
            "           'Content-Length: %d\\r\\n\\r\\n%s' % (len(body), body)).encode())\n"
            "print(s.makefile().read())\n")
    r = g.as_user(a, "/usr/bin/python3", "-c", code, str(g.socket), str(fifo), str(g.home_of(a)), check=True)
    assert " 400 " in r.stdout.splitlines()[0], r.stdout
    assert f"the script {fifo} is not a regular file" in r.stdout
    assert g.api("GET", "/health")[0] == 200


def test_per_user_tokens_act_as_their_user_over_tcp(two):
    g, a, b = two
    ja = g.submit_as(a, "--hold", "sleep", "100")
    jb = g.submit_as(b, "--hold", "sleep", "100")
    token = g.as_user(a, "gflowd", "token", check=True).stdout.strip()
    assert len(token) >= 32
    assert g.as_user(a, "gflowd", "token", check=True).stdout.strip() == token
    import http.client

    def tcp(method, path, body=None, tok=None):
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        h = {"Content-Type": "application/json"}
        if tok:
            h["Authorization"] = f"Bearer {tok}"
        c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
        r = c.getresponse()
        return r.status, json.loads(r.read())

    st, body = tcp("POST", "/jobs/cancel", {"ids": [ja, jb]}, token)
    assert st == 200 and body["cancelled"] == [ja]
    assert f"belongs to {b}" in body["errors"][0]["error"]
    # anonymous readers see what any local user may see, no more
    st, body = tcp("GET", "/jobs?users=all")
    assert st == 200 and all("command" not in j for j in body["jobs"])
    st, _ = tcp("POST", "/jobs/cancel", {"ids": [jb]})
    assert st == 401
    # revoked: it stops working at once
    g.as_user(a, "gflowd", "token", "--revoke", check=True)
    st, _ = tcp("POST", "/jobs/hold", {"ids": [ja]}, token)
    assert st == 401


@pytest.mark.parametrize("sig", ["KILL", "STOP"])
def test_a_users_job_cannot_kill_or_stop_its_supervisor(two, sig):
    g, a, _ = two
    jid = g.submit_as(a, "--time", "0:03", "sh", "-c", f"kill -{sig} $PPID; echo rc=$?; exec sleep 1000")
    j = g.wait_state(jid, {"Timeout", "Failed", "Finished"}, timeout=30)
    assert j["state"] == "Timeout", j
    assert "rc=1" in log_path(g, a, jid).read_text()
    g.wait_for(lambda: not g.job_pids(jid), what="the job's processes to go")


def test_clients_say_which_daemon_answered(two):
    g, a, _ = two
    out = g.as_user(a, "ginfo", check=True).stdout
    assert f"system daemon, {g.socket}" in out


def test_a_personal_daemon_beside_the_system_daemon_goes_without_its_taken_port(two):
    """A user's own daemon configured with the port the system daemon holds
    says so in one line and serves its own socket; the user's clients then
    use it (their own daemon first), and the system daemon is untouched."""
    g, a, _ = two
    run = g.home_of(a) / "run"
    run.mkdir(mode=0o700)
    shutil.chown(run, a, a)
    env = {"XDG_RUNTIME_DIR": str(run), "GFLOW_DAEMON__HOST": "127.0.0.1",
           "GFLOW_DAEMON__PORT": str(g.port), "GFLOW_EXECUTOR__TYPE": "process"}
    try:
        r = g.as_user(a, "gflowd", "start", env=env, check=True)
        assert f"127.0.0.1:{g.port} is in use by another program; running without TCP" in r.stderr
        st = g.as_user(a, "gflowd", "status", env=env, check=True).stdout
        assert "personal daemon" in st and "tcp:       none" in st
        jid = g.submit_as(a, "sh", "-c", "id -un", env=env)
        out = g.as_user(a, "ginfo", env=env, check=True).stdout
        assert "(personal daemon," in out
        # --socket (or GFLOW_SOCKET) picks the daemon, before the user's own.
        out = g.as_user(a, "ginfo", "--socket", str(g.socket), env=env, check=True).stdout
        assert f"(system daemon, {g.socket})" in out
        out = g.as_user(a, "gflow", f"--socket={g.socket}", "info", env=env, check=True).stdout
        assert f"(system daemon, {g.socket})" in out
        deadline = time.time() + 20
        while "Finished" not in g.as_user(a, "gjob", "show", str(jid), env=env).stdout:
            assert time.time() < deadline, "the personal daemon's job did not finish"
            time.sleep(0.1)
        # The system daemon never saw it, and still serves TCP.
        assert g.api("GET", "/info")[1]["tcp"] == f"127.0.0.1:{g.port}"
        assert all(j["user"] != a for j in g.api("GET", "/jobs?users=all")[1]["jobs"])
    finally:
        g.as_user(a, "gflowd", "stop", env=env)


def test_an_admin_sets_up_the_machine_with_init_and_up_and_users_do_nothing(system_gflow):
    """The admin's three commands under a relocated root: init --system
    writes the machine's config (readable by all, root's), up --system
    starts the daemon, and users' plain clients find it."""
    g = system_gflow
    g.gpus(2)
    r = g.cli("gflowd", "init", "--system", "--yes", "--port", str(g.port), check=True)
    conf = g.root / "etc/gflow/gflow.toml"
    assert f"Wrote {conf}" in r.stdout and "gflowd up --system" in r.stdout
    st = conf.stat()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o644
    assert stat.S_IMODE(conf.parent.stat().st_mode) == 0o755
    assert 'admin_group = "gflow-admins"' in conf.read_text()
    assert "# [quota.default_user]" in conf.read_text()
    assert g.cli("gflowd", "init", "--system", "--yes").returncode != 0   # never overwritten unasked
    a, b = g.add_user("a"), g.add_user("b")
    try:
        r = g.cli("gflowd", "up", "--system", "--hosting", "process", check=True)
        assert "gflowd started" in r.stdout
        # each job stays a while, so that the two overlap (a job that ended
        # would give its GPU to the next: a start takes a few ms now)
        ids = {u: g.submit_as(u, "--gpus", "1", "sh", "-c", "id -un; echo $CUDA_VISIBLE_DEVICES; sleep 3")
               for u in (a, b)}
        for u, jid in ids.items():
            g.wait_state(jid, "Finished")
            words = log_path(g, u, jid).read_text().split()
            assert words[0] == u
        assert {log_path(g, u, j).read_text().split()[1] for u, j in ids.items()} == {"0", "1"}
        assert g.as_user(a, "gjob", "log", ids[b]).returncode != 0
        st = g.as_user(b, "gflowd", "status", check=True).stdout
        assert f"system daemon, {g.socket}" in st
        # the system daemon's lifecycle is root's
        r = g.as_user(a, "gflowd", "down", "--system")
        assert r.returncode != 0 and "run it as root" in r.stderr
    finally:
        g.cli("gflowd", "down", "--system")


def test_service_install_system_writes_and_enables_a_system_unit(system_gflow):
    g = system_gflow
    r = g.cli("gflowd", "service", "install", "--system", check=True)
    unit = g.root / "etc/systemd/system/gflowd.service"
    assert f"Wrote and enabled {unit}" in r.stdout
    text = unit.read_text()
    assert "Restart=on-failure" in text and "WantedBy=multi-user.target" in text
    assert f"run --system --root {g.root} --hosting systemd" in text
    link = g.root / "etc/systemd/system/multi-user.target.wants/gflowd.service"
    assert link.is_symlink() and os.readlink(link).endswith("/etc/systemd/system/gflowd.service")
    r = g.cli("gflowd", "service", "uninstall", "--system", check=True)
    assert not unit.exists()


@pytest.mark.skipif(os.path.exists("/run/systemd/system"), reason="systemd runs here: would touch /etc")
def test_service_install_system_says_so_where_systemd_does_not_run(system_gflow):
    g = system_gflow
    env = dict(g.env)
    del env["GFLOW_SYSTEM_ROOT"]
    r = subprocess.run([str(g.build / "gflowd"), "service", "install", "--system"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "systemd is not running on this machine" in r.stderr and "gflowd up --system" in r.stderr
    assert not os.path.exists("/etc/systemd/system/gflowd.service")


def test_a_job_gets_its_owners_supplementary_groups_from_the_daemons_lookup(system_gflow):
    # The system daemon looks the owner up (NSS) and gives the runner the
    # name and groups in its spec: the runner (linked statically) asks no
    # user database, and the job has every group of its owner.
    g = system_gflow
    g.start()
    grp = g.add_group(f"gfx{uuid.uuid4().hex[:6]}")
    c = g.add_user("c", groups=(grp,))
    jid = g.submit_as(c, "sh", "-c", "id -G")
    j = wait_done(g, jid)
    assert j["state"] == "Finished", j
    got = log_path(g, c, jid).read_text().split()
    assert str(grp_gid(grp)) in got
    assert sorted(got) == sorted(g.as_user(c, "id", "-G", check=True).stdout.split())


def grp_gid(name):
    import grp
    return grp.getgrnam(name).gr_gid
