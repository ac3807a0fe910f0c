"""Bad input catalogue: malformed HTTP, oversized and malformed bodies, wrong
types and huge numbers in every submission field, TCP without the token, and
broken configs. Every API case must be refused with a 4xx that names the
problem, leave the daemon up (same pid) and leave the store as it was.

Requests the HTTP layer (libevent) refuses before they reach the daemon's
routes get libevent's own plain answer, not a JSON one: for those the status
(or a closed connection, for what is far too big) is what is checked.
"""
import json
import socket
import subprocess
import threading
import time

import pytest

from conftest import SLOW, Gflow, tagged_pids

# ---- a daemon shared by the API cases of this module ----------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    g = Gflow(tmp_path_factory.mktemp("badinput"))
    g.start()
    # Something in the store, so "unchanged" means something.
    cwd = str(g.tmp)
    for name in ("seed-held-1", "seed-held-2"):
        st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"], "name": name, "hold": True}],
                                           "cwd": cwd, "env": ["PATH=/usr/bin:/bin"]})
        assert st == 201, body
    done = g.submit("--name", "seed-done", "true")
    g.wait_state(done, "Finished")
    yield g
    g.cleanup()


@pytest.fixture
def d(daemon):
    """The shared daemon, restarted first if an earlier case killed it."""
    if daemon.proc is None or daemon.proc.poll() is not None:
        daemon.proc = None
        daemon.start()
    return daemon


def snapshot(g):
    st, body = g.api("GET", "/jobs?users=all")
    assert st == 200, body
    return body["jobs"]


# ---- raw HTTP over the Unix socket ----------------------------------------


class Answer:
    def __init__(self, raw, reset, timed_out):
        self.raw, self.reset, self.timed_out = raw, reset, timed_out
        self.status = None
        self.headers = {}
        self.body = b""
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if sep and head.startswith(b"HTTP/"):
            lines = head.split(b"\r\n")
            self.status = int(lines[0].split()[1])
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                self.headers[k.strip().lower().decode()] = v.strip().decode(errors="replace")
            n = int(self.headers.get("content-length", len(rest)))
            self.body = rest[:n]

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return (f"<answer status={self.status} reset={self.reset} timed_out={self.timed_out} "
                f"raw={self.raw[:600]!r}>")


def exchange(sock_path, data, timeout=10):
    """Send bytes, read the answer until the daemon closes. The send runs in
    a thread so that an early answer (413, 400) is read while we still send."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout * SLOW)
    s.connect(str(sock_path))

    def send():
        try:
            s.sendall(data)
        except OSError:
            pass                    # the daemon stopped reading: fine

    t = threading.Thread(target=send, daemon=True)
    t.start()
    out, reset, timed_out = b"", False, False
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        timed_out = True
    except ConnectionResetError:
        reset = True
    t.join(timeout * SLOW)
    s.close()
    return Answer(out, reset, timed_out)


def request(method, path, body=b"", headers=None, host=True):
    h = [f"{method} {path} HTTP/1.1"]
    if host:
        h.append("Host: gflowd")
    h.append("Connection: close")
    if body:
        h += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    h += headers or []
    return ("\r\n".join(h) + "\r\n\r\n").encode() + body


# ---- the check every API case goes through --------------------------------


def check_refused(g, data, statuses, words, want_json=True, may_close=False):
    """Send `data`; expect a status in `statuses` (or, when may_close, a closed
    connection with no answer), a JSON error naming `words` when want_json,
    the daemon up with the same pid, and the store unchanged."""
    before = snapshot(g)
    pid = g.api("GET", "/health")[1]["pid"]
    ans = exchange(g.socket, data)

    # the daemon is still there, the same one, and answers
    assert g.proc.poll() is None, f"gflowd died ({g.proc.returncode}) on this input\n{g.daemon_log()[-3000:]}"
    st, health = g.api("GET", "/health")
    assert st == 200 and health["pid"] == pid, health

    # nothing was stored
    after = snapshot(g)
    if after != before:
        known = {j["id"] for j in before}
        new = [j for j in after if j["id"] not in known]
        if new:                     # keep later cases clean
            g.api("POST", "/jobs/cancel", {"ids": [j["id"] for j in new]})
        raise AssertionError(f"the store changed: new jobs {[(j['id'], j['state'], j['reason']) for j in new]}"
                             f"; answer {ans!r}")

    assert not ans.timed_out, f"no answer: {ans!r}"
    if ans.status is None:
        assert may_close, f"connection closed without an answer: {ans!r}"
        return ans
    assert ans.status in statuses, ans
    if want_json:
        assert ans.headers.get("content-type", "").startswith("application/json"), ans
        err = ans.json()
        assert isinstance(err, dict) and isinstance(err.get("error"), str) and err["error"], ans
        assert "\n" not in err["error"].strip(), "one line"
        for w in words:
            assert w.lower() in err["error"].lower(), f"{w!r} not in {err['error']!r}"
    return ans


# ---- malformed HTTP ---------------------------------------------------------

CWD = "@CWD@"       # replaced by the daemon's directory


def submission(spec=None, **top):
    body = {"jobs": [dict({"command": ["true"], "hold": True}, **(spec or {}))],
            "cwd": CWD, "env": ["PATH=/usr/bin:/bin"]}
    body.update(top)
    return body


def encode(body, cwd):
    if isinstance(body, bytes):
        return body.replace(CWD.encode(), cwd.encode())
    return json.dumps(body).replace(json.dumps(CWD), json.dumps(cwd)).encode()


BIG = 9 * 1024 * 1024

HTTP_CASES = {
    # id: (bytes builder(cwd), statuses, words, want_json, may_close)
    "garbage-request-line": (lambda c: b"\x16\x03\x01\x02\x00garbage \xff\xfe\r\n\r\n", {400}, [], False, False),
    "request-line-without-version": (lambda c: b"GET\r\n\r\n", {400}, [], False, False),
    "unknown-http-version": (lambda c: b"GET /health HTTP/7.3\r\nHost: x\r\n\r\n", {400, 505}, [], False, False),
    "unknown-method": (lambda c: b"BREW /jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                       {400, 405, 501}, [], False, False),
    # RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
    "missing-host": (lambda c: request("POST", "/jobs", encode(submission(), c), host=False),
                     {400}, ["host"], True, False),
    "header-without-colon": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nThisHeaderHasNoColon\r\n"
                             b"Connection: close\r\nContent-Length: 2\r\n\r\n{}", {400}, [], False, False),
    "header-over-64k": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (65 * 1024)
                        + b"\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", {400, 413, 431}, [], False, True),
    "many-headers-over-64k": (lambda c: b"GET /health HTTP/1.1\r\nHost: x\r\n"
                              + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 40) for i in range(2000))
                              + b"Connection: close\r\n\r\n", {400, 413, 431}, [], False, True),
    "chunk-size-not-hex": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                           b"Connection: close\r\n\r\nZZZ\r\n{}\r\n0\r\n\r\n", {400, 413}, [], False, False),
    "chunk-longer-than-its-size": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                   b"Connection: close\r\n\r\n2\r\n{}garbage\r\n0\r\n\r\n", {400, 413}, [], False,
                                   False),
    "chunk-size-negative": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                            b"Connection: close\r\n\r\n-2\r\n{}\r\n0\r\n\r\n", {400, 413}, [], False, False),
    "content-length-not-a-number": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n"
                                    b"Connection: close\r\n\r\n{}", {400, 411, 413}, [], False, False),
    "body-over-8mib-announced": (lambda c: request("POST", "/jobs", b"")[:-2]
                                 + f"Content-Length: {BIG}\r\n\r\n".encode(), {413}, [], False, True),
    "body-over-8mib-sent": (lambda c: request("POST", "/jobs", encode(submission(
        {"name": "big", "command": ["true", "x" * BIG]}), c)), {413}, [], False, True),
    "body-over-8mib-chunked": (lambda c: b"POST /jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                               b"Connection: close\r\n\r\n"
                               + (b"100000\r\n" + b" " * 0x100000 + b"\r\n") * 9 + b"0\r\n\r\n",
                               {413}, [], False, True),
}


@pytest.mark.parametrize("case", list(HTTP_CASES))
def test_malformed_http_is_refused(d, case):
    build, statuses, words, want_json, may_close = HTTP_CASES[case]
    check_refused(d, build(str(d.tmp)), statuses, words, want_json=want_json, may_close=may_close)


# ---- bodies that are not what a submission should be -------------------------

RAW_BODIES = {
    "empty-body": (b"", ["body"]),
    "invalid-json": (b'{"jobs": [{"command": ["true"]', ["json"]),
    "trailing-garbage": (b'{"jobs": [], "cwd": "/"} xyz', ["json"]),
    "json-array": (b'[{"command": ["true"]}]', ["object"]),
    "json-string": (b'"submit please"', ["json"]),
    "json-number": (b"42", ["json"]),
    "json-null": (b"null", ["json"]),
    "duplicate-key": (b'{"jobs": [{"command": ["true"], "name": "a", "name": "b"}], "cwd": "@CWD@"}',
                      ["duplicate"]),
    "invalid-utf8": (b'{"jobs": [{"command": ["true"], "name": "\xff\xfe"}], "cwd": "@CWD@"}', ["byte"]),
    "raw-nul-byte-in-name": (b'{"jobs": [{"command": ["true"], "name": "a\x00b"}], "cwd": "@CWD@"}', ["control"]),
    "nesting-10000-arrays": (b"[" * 10000 + b"]" * 10000, ["depth"]),
    "nesting-10000-in-spec": (b'{"jobs": [{"command": ["true"], "params": '
                              + b'{"a": ' * 10000 + b"1" + b"}" * 10000 + b'}], "cwd": "@CWD@"}', ["depth"]),
    "integer-2-63-gpus": (b'{"jobs": [{"command": ["true"], "gpus": 9223372036854775808}], "cwd": "@CWD@"}',
                          ["integer"]),
    "integer-2-63-begin-at": (b'{"jobs": [{"command": ["true"], "begin_at": 9223372036854775808}], '
                              b'"cwd": "@CWD@"}', ["integer"]),
    "integer-2-64-priority": (b'{"jobs": [{"command": ["true"], "priority": 18446744073709551616}], '
                              b'"cwd": "@CWD@"}', ["integer"]),
    "number-1e400": (b'{"jobs": [{"command": ["true"], "begin_at": 1e400}], "cwd": "@CWD@"}', ["number"]),
}


@pytest.mark.parametrize("case", list(RAW_BODIES))
def test_bad_body_is_refused(d, case):
    body, words = RAW_BODIES[case]
    check_refused(d, request("POST", "/jobs", encode(body, str(d.tmp))), {400}, words)


# ---- well-formed JSON, wrong submission -----------------------------------

INT_FIELDS = ["gpus", "gpu_memory_mb", "memory_mb", "time_limit_secs", "priority", "array_task_id",
              "max_concurrent", "max_retries"]

SPEC_CASES = {
    # wrong types, field by field
    "name-number": ({"name": 123}, ["name"]),
    "name-too-long": ({"name": "n" * 100000}, ["name"]),
    "name-newline": ({"name": "two\nlines"}, ["name", "control"]),
    "name-nul": ({"name": "a\u0000b"}, ["nul"]),
    "command-missing": ({"command": None}, ["command"]),
    "command-string": ({"command": "true"}, ["command"]),
    "command-object": ({"command": {"argv": ["true"]}}, ["command"]),
    "command-item-number": ({"command": ["true", 5]}, ["command"]),
    "command-item-null": ({"command": ["true", None]}, ["command"]),
    "command-item-list": ({"command": [["true"]]}, ["command"]),
    "command-empty": ({"command": []}, ["command", "empty"]),
    "command-empty-word": ({"command": [""]}, ["command", "empty"]),
    "command-nul-in-word": ({"command": ["tr\u0000ue"]}, ["nul"]),
    "command-nul-in-arg": ({"command": ["echo", "a\u0000b"]}, ["nul"]),
    "script-number": ({"script": 5}, ["script"]),
    "script-relative": ({"script": "relative/run.sh"}, ["script"]),    # api.md: absolute path
    "gpus-two": ({"gpus": "two"}, ["gpus"]),
    "gpus-fraction": ({"gpus": 1.5}, ["gpus"]),
    "gpus-bool": ({"gpus": True}, ["gpus"]),
    "gpus-too-many": ({"gpus": 1000}, ["gpus"]),
    "shared-string": ({"shared": "yes"}, ["shared"]),
    "gpu-memory-string": ({"gpu_memory_mb": "1G"}, ["gpu_memory_mb"]),
    "memory-string": ({"memory_mb": "1G"}, ["memory_mb"]),
    "time-limit-string": ({"time_limit_secs": "1:00"}, ["time_limit_secs"]),
    "priority-1e99": ({"priority": 1e99}, ["priority"]),
    "priority-string": ({"priority": "high"}, ["priority"]),
    "priority-256": ({"priority": 256}, ["priority"]),
    "project-number": ({"project": 7}, ["project"]),
    "conda-env-list": ({"conda_env": ["base"]}, ["conda_env"]),
    "depends-on-string": ({"depends_on": "1"}, ["depends_on"]),
    "depends-on-bool-item": ({"depends_on": [True]}, ["reference"]),
    "depends-on-missing-job": ({"depends_on": [999999]}, ["999999"]),
    "depends-on-negative": ({"depends_on": [-1]}, ["-1"]),
    "depends-on-nul": ({"depends_on": ["1\u00002"]}, ["nul"]),
    "dep-mode-number": ({"dep_mode": 1}, ["dep_mode"]),
    "dep-mode-unknown": ({"dep_mode": "some"}, ["dep_mode"]),
    "auto-cancel-string": ({"auto_cancel": "no"}, ["auto_cancel"]),
    "begin-at-string": ({"begin_at": "tomorrow"}, ["begin_at"]),
    "begin-at-negative": ({"begin_at": -1}, ["begin_at"]),
    "begin-at-1e308": ({"begin_at": 1e308}, ["begin_at"]),
    "begin-at-1e19": ({"begin_at": 1e19}, ["begin_at"]),
    "hold-string": ({"hold": "yes"}, ["hold"]),
    "array-task-id-fraction": ({"array_task_id": 1.5}, ["array_task_id"]),
    "max-concurrent-string": ({"max_concurrent": "2"}, ["max_concurrent"]),
    "max-retries-bool": ({"max_retries": True}, ["max_retries"]),
    "params-list": ({"params": [1]}, ["params"]),
    "params-value-number": ({"params": {"lr": 0.1}}, ["params"]),
    "notify-email-number": ({"notify_email": 1}, ["notify_email"]),
    "notify-on-list": ({"notify_on": ["end"]}, ["notify_on"]),
    "unknown-field": ({"colour": "red"}, ["colour"]),
    "unknown-field-near-miss": ({"gpu": 1}, ["gpu"]),
}
for _f in INT_FIELDS:                      # huge numbers in every integer field
    SPEC_CASES[f"{_f}-minus-1"] = ({_f: -1}, [_f])
    SPEC_CASES[f"{_f}-1e308"] = ({_f: 1e308}, [_f])
    SPEC_CASES[f"{_f}-2-63-minus-1"] = ({_f: 2**63 - 1}, [_f])
    SPEC_CASES[f"{_f}-minus-2-63"] = ({_f: -2**63}, [_f])


@pytest.mark.parametrize("case", list(SPEC_CASES))
def test_bad_job_field_is_refused(d, case):
    spec, words = SPEC_CASES[case]
    spec = {k: v for k, v in spec.items()}
    body = submission()
    body["jobs"][0].update(spec)
    if spec.get("command", 0) is None:
        del body["jobs"][0]["command"]
    check_refused(d, request("POST", "/jobs", encode(body, str(d.tmp))), {400}, words)


TOP_CASES = {
    "jobs-missing": ({"jobs": None}, ["jobs"]),
    "jobs-object": ({"jobs": {"command": ["true"]}}, ["jobs"]),
    "jobs-empty": ({"jobs": []}, ["jobs"]),
    "jobs-item-number": ({"jobs": [5]}, ["job"]),
    "jobs-item-null": ({"jobs": [None]}, ["job"]),
    "cwd-missing": ({"cwd": None}, ["cwd"]),
    "cwd-relative": ({"cwd": "relative/dir"}, ["cwd"]),
    "cwd-number": ({"cwd": 5}, ["cwd"]),
    "cwd-nul": ({"cwd": "/tmp\u0000/x"}, ["nul"]),
    "cwd-too-long": ({"cwd": "/" + "d" * 100000}, ["cwd"]),
    "env-string": ({"env": "PATH=/bin"}, ["env"]),
    "env-object": ({"env": {"PATH": "/bin"}}, ["env"]),
    "env-item-number": ({"env": ["PATH=/bin", 5]}, ["env"]),
    "env-item-without-equals": ({"env": ["JUSTANAME"]}, ["env"]),
    "env-item-nul": ({"env": ["A=b\u0000c"]}, ["nul"]),
    "dry-run-string": ({"dry_run": "yes"}, ["dry_run"]),
    "unknown-top-level-field": ({"priority": 5}, ["priority"]),
}


@pytest.mark.parametrize("case", list(TOP_CASES))
def test_bad_request_field_is_refused(d, case):
    top, words = TOP_CASES[case]
    body = submission()
    for k, v in top.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    check_refused(d, request("POST", "/jobs", encode(body, str(d.tmp))), {400}, words)


def test_batch_over_100000_jobs_is_refused(d):
    body = submission()
    body["jobs"] = [{"command": ["true"], "hold": True}] * 100001
    check_refused(d, request("POST", "/jobs", encode(body, str(d.tmp))), {400}, ["100000"])


def test_batch_with_one_bad_job_stores_none(d):
    body = submission()
    body["jobs"] = [{"command": ["true"], "hold": True, "name": "ok-1"},
                    {"command": ["true"], "hold": True, "name": "ok-2"},
                    {"command": ["true"], "hold": True, "gpus": "two"}]
    check_refused(d, request("POST", "/jobs", encode(body, str(d.tmp))), {400}, ["job 3", "gpus"])


OTHER_CASES = {
    "list-unknown-state": ("GET", "/jobs?states=Sleeping", None, {400}, ["Sleeping"]),
    "list-bad-ids": ("GET", "/jobs?ids=1-x", None, {400}, ["1-x"]),
    "list-huge-id-range": ("GET", "/jobs?ids=1-999999999999", None, {400}, ["ids"]),
    "list-since-not-a-number": ("GET", "/jobs?since=yesterday", None, {400}, ["since"]),
    "get-job-not-a-number": ("GET", "/jobs/abc", None, {404}, ["abc"]),
    "get-job-over-int64": ("GET", "/jobs/99999999999999999999999", None, {404}, ["99999999999999999999999"]),
    "unknown-endpoint": ("POST", "/jobs/explode", {"ids": [1]}, {404}, ["/jobs/explode"]),
    "wrong-method": ("PUT", "/jobs", {"jobs": []}, {405, 501}, []),
    "cancel-ids-string": ("POST", "/jobs/cancel", {"ids": "1"}, {400}, ["ids"]),
    "cancel-ids-empty": ("POST", "/jobs/cancel", {"ids": []}, {400}, ["ids"]),
    "cancel-unknown-field": ("POST", "/jobs/cancel", {"ids": [1], "force": True}, {400}, ["force"]),
    "update-set-unknown-field": ("POST", "/jobs/update", {"ids": [1], "set": {"owner": "x"}}, {400}, ["owner"]),
    "update-set-not-object": ("POST", "/jobs/update", {"ids": [1], "set": [1]}, {400}, ["set"]),
    "release-at-negative": ("POST", "/jobs/release", {"ids": [1], "at": -5}, {400}, ["at"]),
    "redo-bad-ref": ("POST", "/jobs/redo", {"id": "zzz"}, {400}, ["zzz"]),
    "set-gpus-bad-spec": ("POST", "/gpus/allowed", {"spec": "0-99999"}, {400}, ["99999"]),
    "set-gpus-number": ("POST", "/gpus/allowed", {"spec": 5}, {400}, ["spec"]),
    "ignore-gpu-string": ("POST", "/gpus/ignore", {"gpu": "a", "pid": 1}, {400}, ["gpu"]),
}


@pytest.mark.parametrize("case", list(OTHER_CASES))
def test_bad_request_to_other_endpoints_is_refused(d, case):
    method, path, body, statuses, words = OTHER_CASES[case]
    data = json.dumps(body).encode() if body is not None else b""
    want_json = method in ("GET", "POST")
    check_refused(d, request(method, path, data), statuses, words, want_json=want_json)


def test_stalled_and_abandoned_connections_do_not_block_the_daemon(d):
    before = snapshot(d)
    # a client that sends half a request and stalls
    stalled = []
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(d.socket))
        s.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"jobs\":")
        stalled.append(s)
    # clients that ask for a big answer and hang up without reading it
    for _ in range(50):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(d.socket))
        s.sendall(request("GET", "/jobs?users=all"))
        s.close()
    t0 = time.time()
    st, body = d.api("GET", "/health", timeout=5)
    assert st == 200 and time.time() - t0 < 5 * SLOW
    for s in stalled:
        s.close()
    assert d.proc.poll() is None
    assert snapshot(d) == before


# ---- TCP: reads are open, changes need the token ---------------------------


def tcp_exchange(g, data):
    s = socket.create_connection(("127.0.0.1", g.port), timeout=10 * SLOW)
    s.sendall(data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return Answer(out, False, False)


def token_of(g):
    return (g.data / "token").read_text().strip()


def wrong_token(g):
    t = token_of(g)
    return ("0" if t[0] != "0" else "1") + t[1:]


TCP_CASES = {
    "no-token": lambda g: [],
    "wrong-token": lambda g: [f"Authorization: Bearer {wrong_token(g)}"],
    "token-without-bearer": lambda g: [f"Authorization: {token_of(g)}"],
    "token-prefix": lambda g: [f"Authorization: Bearer {token_of(g)[:-1]}"],
    "token-with-suffix": lambda g: [f"Authorization: Bearer {token_of(g)}x"],
    "empty-bearer": lambda g: ["Authorization: Bearer "],
    "basic-auth": lambda g: ["Authorization: Basic dXNlcjpwYXNz"],
}


@pytest.mark.parametrize("case", list(TCP_CASES))
def test_tcp_change_without_the_right_token_is_refused(d, case):
    before = snapshot(d)
    pid = d.api("GET", "/health")[1]["pid"]
    body = encode(submission({"name": "via-tcp"}), str(d.tmp))
    ans = tcp_exchange(d, request("POST", "/jobs", body, headers=TCP_CASES[case](d)))
    assert ans.status == 401, ans
    err = ans.json()
    assert isinstance(err, dict) and "token" in err["error"].lower(), ans
    assert d.api("GET", "/health")[1]["pid"] == pid
    assert snapshot(d) == before


def test_tcp_reads_are_open_and_the_token_works(d):
    ans = tcp_exchange(d, request("GET", "/health"))
    assert ans.status == 200 and ans.json()["status"] == "ok"
    body = encode(submission({"name": "via-tcp-ok"}), str(d.tmp))
    ans = tcp_exchange(d, request("POST", "/jobs", body, headers=[f"Authorization: Bearer {token_of(d)}"]))
    assert ans.status == 201, ans
    jid = ans.json()["jobs"][0]["id"]
    j = d.job(jid)
    assert j["name"] == "via-tcp-ok" and j["state"] == "Hold"
    st, out = d.api("POST", "/jobs/cancel", {"ids": [jid]})
    assert st == 200 and out["cancelled"] == [jid]


# ---- broken configs: gflowd refuses to start and says where ----------------

CONFIG_CASES = {
    # id: (file text, words in the message; {path} is the config file)
    "syntax-error": ('[daemon]\nhost = "127.0.0.1"\nport = = {port}\n', ["{path}", "line 3"]),
    "unterminated-string": ('[daemon]\nhost = "127.0.0.1\nport = {port}\n', ["{path}", "line 2"]),
    "unclosed-table-header": ('[daemon\nhost = "127.0.0.1"\n', ["{path}", "line 1"]),
    "binary-garbage": ("\x00\x01\x02\xff", ["{path}", "line 1"]),
    "unknown-key": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\ncolour = "red"\n',
                    ["{path}", "line 4", "colour"]),
    "unknown-section": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\n[deamon]\nport = 1\n',
                        ["{path}", "line 4", "deamon"]),
    "port-too-big": ('[daemon]\nhost = "127.0.0.1"\nport = 70000\n', ["{path}", "line 3", "port", "70000"]),
    "port-zero": ('[daemon]\nhost = "127.0.0.1"\nport = 0\n', ["{path}", "line 3", "port"]),
    "port-string": ('[daemon]\nhost = "127.0.0.1"\nport = "abc"\n', ["{path}", "line 3", "port", "abc"]),
    "port-float": ('[daemon]\nhost = "127.0.0.1"\nport = 5900.5\n', ["{path}", "line 3", "port"]),
    "executor-unknown": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\n[executor]\ntype = "docker"\n',
                         ["{path}", "line 5", "type", "docker"]),
    "executor-number": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\n[executor]\ntype = 1\n',
                        ["{path}", "line 5", "type"]),
    "strategy-unknown": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\ngpu_allocation_strategy = "fast"\n',
                         ["{path}", "line 4", "gpu_allocation_strategy", "fast"]),
    "poll-interval-zero": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\ngpu_poll_interval_secs = 0\n',
                           ["{path}", "line 4", "gpu_poll_interval_secs"]),
    "duplicate-key": ('[daemon]\nhost = "127.0.0.1"\nport = {port}\nport = {port}\n', ["{path}", "line 4", "port"]),
}


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def run_gflowd_expecting_refusal(g, env, args=()):
    r = subprocess.run([str(g.build / "gflowd"), "run", *args], env=env, capture_output=True, text=True,
                       cwd=g.tmp, timeout=20 * SLOW)
    # nothing may be left behind: no answer on the socket, no daemon process
    assert r.returncode != 0, f"gflowd run started on a bad config:\n{r.stdout}\n{r.stderr}"
    assert g.cli("gflowd", "status").returncode != 0
    with pytest.raises(OSError):
        g.api("GET", "/health", timeout=2)
    left = [p for p in tagged_pids(g.tag) if b"gflowd" in cmdline(p)]
    assert not left, f"gflowd processes left behind: {left}"
    return r


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_broken_config_stops_the_daemon_with_file_line_key(gflow, case):
    text, words = CONFIG_CASES[case]
    cfg = gflow.home / ".config/gflow/gflow.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(text.replace("{port}", str(gflow.port)))
    env = dict(gflow.env)
    del env["GFLOW_DAEMON__PORT"], env["GFLOW_DAEMON__HOST"], env["GFLOW_EXECUTOR__TYPE"]
    r = run_gflowd_expecting_refusal(gflow, env)
    msg = r.stderr.strip()
    assert msg and msg.count("\n") == 0, f"one clear line: {r.stderr!r}"
    for w in words:
        assert w.replace("{path}", str(cfg)) in msg, f"{w!r} not in {msg!r}"


def test_broken_config_given_with_the_config_flag(gflow):
    cfg = gflow.tmp / "elsewhere.toml"
    cfg.write_text('[executor]\ntype = "docker"\n')
    r = run_gflowd_expecting_refusal(gflow, gflow.env, ["--config", str(cfg)])
    for w in (str(cfg), "line 2", "type", "docker"):
        assert w in r.stderr, r.stderr


ENV_CASES = {
    "port-abc": ("GFLOW_DAEMON__PORT", "abc", ["GFLOW_DAEMON__PORT", "abc"]),
    "port-empty": ("GFLOW_DAEMON__PORT", "", ["GFLOW_DAEMON__PORT"]),
    "port-too-big": ("GFLOW_DAEMON__PORT", "99999", ["GFLOW_DAEMON__PORT", "99999"]),
    "port-trailing-junk": ("GFLOW_DAEMON__PORT", "59000x", ["GFLOW_DAEMON__PORT", "59000x"]),
    "executor-unknown": ("GFLOW_EXECUTOR__TYPE", "docker", ["GFLOW_EXECUTOR__TYPE", "docker"]),
    "poll-interval-words": ("GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS", "often",
                            ["GFLOW_DAEMON__GPU_POLL_INTERVAL_SECS", "often"]),
    "unknown-variable": ("GFLOW_DAEMON__COLOUR", "red", ["GFLOW_DAEMON__COLOUR"]),
}


@pytest.mark.parametrize("case", list(ENV_CASES))
def test_broken_env_override_stops_the_daemon(gflow, case):
    var, value, words = ENV_CASES[case]
    env = dict(gflow.env)
    env[var] = value
    r = run_gflowd_expecting_refusal(gflow, env)
    msg = r.stderr.strip()
    assert msg and msg.count("\n") == 0, f"one clear line: {r.stderr!r}"
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
