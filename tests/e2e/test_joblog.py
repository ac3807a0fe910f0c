"""GET /jobs/<id>/log?tail=BYTES: the end of a job's log (or ?offset=N&bytes=M:
a part of it) for its owner or an admin; others are refused with the rule named; in system mode a log that a
user replaced by a symlink, a FIFO or someone else's file is not read."""
import http.client
import json
import os
import shutil

from conftest import SLOW


def get(port, path, token=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * SLOW)
    c.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict(r.getheaders()), body


def err(body):
    return json.loads(body)["error"]


def test_log_tail_for_the_owner(gflow):
    g = gflow
    g.start()
    jid = g.submit("sh", "-c", "for i in $(seq 1 2000); do echo line $i; done")
    g.wait_state(jid, "Finished")
    full = g.log_of(jid).encode()
    token = g.cli("gflowd", "token", check=True).stdout.strip()

    st, h, body = get(g.port, f"/jobs/{jid}/log", token)
    assert st == 200 and h["Content-Type"].startswith("text/plain")
    assert body == full[-65536:] and int(h["X-Gflow-Log-Size"]) == len(full)
    st, h, body = get(g.port, f"/jobs/{jid}/log?tail=20", token)
    assert st == 200 and body == full[-20:] and body.endswith(b"line 2000\n")
    assert int(h["X-Gflow-Log-Offset"]) == len(full) - 20
    # over the local socket the kernel says who asks
    st, body = g.api("GET", f"/jobs/{jid}/log?tail=10")
    assert st == 200 and body == full[-10:]

    # without a token over TCP: nobody, so refused with the rule named
    st, _, body = get(g.port, f"/jobs/{jid}/log")
    assert st == 403 and "only" in err(body) and "Bearer" in err(body)
    for q, what in (("tail=0", "'tail'"), ("tail=abc", "'tail'"), ("tail=99999999", "'tail'"),
                    ("from=3", "unknown query parameter 'from'")):
        st, _, body = get(g.port, f"/jobs/{jid}/log?{q}", token)
        assert st == 400 and what in err(body), (q, body)
    st, _, body = get(g.port, "/jobs/999/log", token)
    assert st == 404 and "job 999 does not exist" in err(body)
    st, _, body = get(g.port, f"/jobs/{jid}/logs", token)
    assert st == 404 and "no such endpoint" in err(body)
    held = g.submit("--hold", "true")
    st, _, body = get(g.port, f"/jobs/{held}/log", token)
    assert st == 404 and "has no log" in err(body)


def test_log_from_an_offset(gflow):
    g = gflow
    g.start()
    jid = g.submit("sh", "-c", "for i in $(seq 1 2000); do echo line $i; done")
    g.wait_state(jid, "Finished")
    full = g.log_of(jid).encode()
    token = g.cli("gflowd", "token", check=True).stdout.strip()

    # read on from where the last answer stopped: the parts make the whole
    got, off = b"", 0
    while True:
        st, h, body = get(g.port, f"/jobs/{jid}/log?offset={off}&bytes=5000", token)
        assert st == 200 and int(h["X-Gflow-Log-Offset"]) == off and int(h["X-Gflow-Log-Size"]) == len(full)
        assert len(body) <= 5000
        if not body:
            break
        got, off = got + body, off + len(body)
    assert got == full and off == len(full)
    st, _, body = get(g.port, f"/jobs/{jid}/log?offset=7", token)   # bytes: 65536 by default
    assert st == 200 and body == full[7:7 + 65536]
    st, _, body = get(g.port, f"/jobs/{jid}/log?offset={len(full) + 1}", token)
    assert st == 416 and err(body) == f"'offset' {len(full) + 1} is past the end of job {jid}'s log ({len(full)} bytes)"
    for q, what in (("offset=-1", "'offset' must be a byte offset from 0"),
                    ("offset=1e3", "'offset' must be a byte offset"),
                    ("offset=99999999999999999999", "'offset' must be a byte offset"),
                    ("offset=0&bytes=0", "'bytes' must be a number of bytes from 1 to 4194304"),
                    ("offset=0&bytes=4194305", "'bytes' must be a number of bytes from 1 to 4194304"),
                    ("bytes=10", "'bytes' needs 'offset'"),
                    ("tail=10&offset=0", "exclude each other"),
                    ("offset=1&offset=2", "'offset' is given twice")):
        st, _, body = get(g.port, f"/jobs/{jid}/log?{q}", token)
        assert st == 400 and what in err(body), (q, body)


def test_personal_log_replaced_by_a_symlink_is_not_read(gflow):
    g = gflow
    g.start()
    jid = g.submit("echo", "hello")
    g.wait_state(jid, "Finished")
    secret = g.tmp / "secret"
    secret.write_text("not a log\n")
    log = g.data / "logs" / f"{jid}.log"
    log.unlink()
    log.symlink_to(secret)
    st, body = g.api("GET", f"/jobs/{jid}/log")
    assert st == 403 and "symbolic link" in body["error"], body


def log_path(g, user, jid):
    return g.home_of(user) / ".local/share/gflow/logs/system" / f"{jid}.log"


def test_system_log_refusals(system_gflow):
    g = system_gflow
    g.gpus(1)
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    ja = g.submit_as(a, "echo", "from-a")
    jb = g.submit_as(b, "echo", "from-b")
    for jid in (ja, jb):
        g.wait_state(jid, "Finished")
    ta = g.as_user(a, "gflowd", "token", check=True).stdout.strip()

    st, _, body = get(g.port, f"/jobs/{ja}/log", ta)
    assert st == 200 and body == b"from-a\n"
    st, _, body = get(g.port, f"/jobs/{jb}/log", ta)
    assert st == 403 and err(body) == f"job {jb} belongs to {b}; only {b} or an admin may read its log"
    st, _, body = get(g.port, f"/jobs/{jb}/log?offset=0&bytes=4", ta)
    assert st == 403 and b"from-b" not in body
    st, _, body = get(g.port, f"/jobs/{jb}/log?offset=999", ta)     # its size is not told either
    assert st == 403 and "past the end" not in err(body)
    # root (an admin) reads any
    st, body = g.api("GET", f"/jobs/{jb}/log")
    assert st == 200 and body == b"from-b\n"

    # a plants a symlink to b's log in place of its own: not followed
    path = log_path(g, a, ja)
    g.as_user(a, "sh", "-c", f"rm -f {path} && ln -s {log_path(g, b, jb)} {path}", check=True)
    assert os.path.islink(path)
    st, _, body = get(g.port, f"/jobs/{ja}/log", ta)
    assert st == 403 and "symbolic link" in err(body) and b"from-b" not in body, body
    # a file that is not the owner's (what a hard link to another's file is)
    os.unlink(path)
    shutil.copy(log_path(g, b, jb), path)
    shutil.chown(path, b, b)
    st, _, body = get(g.port, f"/jobs/{ja}/log", ta)
    assert st == 403 and "does not belong to the job's owner" in err(body) and b"from-b" not in body
    # a FIFO: refused at once, the daemon does not block on it
    os.unlink(path)
    g.as_user(a, "mkfifo", str(path), check=True)
    st, _, body = get(g.port, f"/jobs/{ja}/log", ta)
    assert st == 403 and "not a regular file" in err(body)
    assert g.api("GET", "/health")[0] == 200
