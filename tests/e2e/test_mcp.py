"""gflow mcp serve: a Model Context Protocol server on stdio, driven by a
client that checks every answer against JSON-RPC 2.0 and MCP."""
import json
import os
import queue
import subprocess
import threading
import time

import jsonschema
import pytest

from conftest import SLOW

TOOLS = {"get_health", "get_info", "list_jobs", "get_job", "get_job_log", "get_stats",
         "list_reservations", "get_queue_pressure", "triage_job", "preview_submit_jobs", "submit_jobs",
         "preview_update_job", "update_job", "redo_job", "cancel_job", "hold_job", "release_job",
         "wait_for_job", "get_quotas"}
READ_ONLY = {"get_health", "get_info", "list_jobs", "get_job", "get_job_log", "get_stats",
             "list_reservations", "get_queue_pressure", "triage_job", "preview_submit_jobs",
             "preview_update_job", "wait_for_job", "get_quotas"}
VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]   # newest first


class Client:
    def __init__(self, g, user=None):
        self.g = g
        if user:    # a user of a system daemon (SystemGflow), with their own copy of gflow
            self.p = subprocess.Popen([str(g.bin / "gflow"), "mcp", "serve"], env=g.user_env(user),
                                      cwd=g.home_of(user), user=user, group=user, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        else:
            self.p = subprocess.Popen([str(g.build / "gflow"), "mcp", "serve"], env=g.env, cwd=g.tmp,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        self.version = None
        self.schemas = None
        self.validated = set()      # the tools whose results were checked against their outputSchema

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data: bytes):
        self.p.stdin.write(data + b"\n")
        self.p.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode())

    def recv(self, timeout=20):
        line = self.lines.get(timeout=timeout * SLOW)
        assert line is not None, "the server closed stdout: " + self.p.stderr.read().decode()
        m = json.loads(line)
        # JSON-RPC 2.0: a response has the version, an id, one of result/error
        assert m.get("jsonrpc") == "2.0", m
        assert "id" in m, m
        assert ("result" in m) != ("error" in m), m
        if "error" in m:
            assert isinstance(m["error"]["code"], int) and isinstance(m["error"]["message"], str), m
        return m

    def request(self, method, params=None, expect_error=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        m = self.recv()
        assert m["id"] == self.next_id, m
        if expect_error is not None:
            assert "error" in m and m["error"]["code"] == expect_error, m
            return m["error"]
        assert "result" in m, m
        return m["result"]

    def init(self, version="2025-06-18"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.version = r["protocolVersion"]
        self.schemas = None
        return r

    def output_schemas(self):
        """Each tool's outputSchema (from 2025-06-18 on), each a valid 2020-12 schema."""
        if self.schemas is None:
            self.schemas = {}
            for t in self.request("tools/list")["tools"]:
                if self.version >= "2025-06-18":
                    jsonschema.Draft202012Validator.check_schema(t["outputSchema"])
                    assert t["outputSchema"]["type"] == "object", t
                    self.schemas[t["name"]] = t["outputSchema"]
                else:
                    assert "outputSchema" not in t, t
        return self.schemas

    def call(self, tool, args=None, ok=True):
        r = self.request("tools/call", {"name": tool, "arguments": args or {}})
        assert isinstance(r["content"], list) and r["content"][0]["type"] == "text", r
        assert r["isError"] is (not ok), r
        if ok:
            data = json.loads(r["content"][0]["text"])
            if self.version >= "2025-06-18":
                # the result as structuredContent too, valid under the tool's outputSchema
                assert r["structuredContent"] == data
                jsonschema.Draft202012Validator(self.output_schemas()[tool]).validate(data)
                self.validated.add(tool)
            else:
                assert "structuredContent" not in r
            return data
        assert "structuredContent" not in r
        return r["content"][0]["text"]

    def refused(self, tool, args):
        """Arguments the tool's schema refuses: a protocol error before
        2025-11-25, a tool error (isError, for the model to read) from then on."""
        if self.version >= "2025-11-25":
            return self.call(tool, args, ok=False)
        return self.request("tools/call", {"name": tool, "arguments": args}, expect_error=-32602)["message"]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=10 * SLOW)
        err = self.p.stderr.read().decode(errors="replace")
        self.p.stdout.close()
        self.p.stderr.close()
        assert rc == 0 and "Sanitizer" not in err and "runtime error" not in err, err[-4000:]


@pytest.fixture
def mcp(gflow):
    c = Client(gflow)
    yield c
    c.close()


def test_initialize_negotiates_and_lists_tools(mcp):
    r = mcp.init("2025-06-18")
    assert r["protocolVersion"] == "2025-06-18"
    assert "tools" in r["capabilities"] and r["serverInfo"]["name"] == "gflow"
    # the notification got no answer: the next line answers the ping
    assert mcp.request("ping") == {}
    assert mcp.request("initialize", {"protocolVersion": "2024-11-05"})["protocolVersion"] == "2024-11-05"
    assert mcp.request("initialize", {"protocolVersion": "2099-01-01"})["protocolVersion"] == VERSIONS[0]
    # each version it speaks is answered as asked (a client asking for
    # 2025-11-25 gets 2025-11-25, not an older one)
    for v in VERSIONS:
        assert mcp.request("initialize", {"protocolVersion": v})["protocolVersion"] == v
    # the last was 2024-11-05: no outputSchema then
    assert all("outputSchema" not in t for t in mcp.request("tools/list")["tools"])
    mcp.init("2025-11-25")
    assert set(mcp.output_schemas()) == TOOLS     # every tool has one, and it is a valid schema
    tools = mcp.request("tools/list")["tools"]
    assert {t["name"] for t in tools} == TOOLS
    for t in tools:
        assert t["description"] and t["inputSchema"]["type"] == "object", t
        assert t["annotations"]["readOnlyHint"] == (t["name"] in READ_ONLY), t
    by = {t["name"]: t for t in tools}
    assert by["cancel_job"]["annotations"]["destructiveHint"] is True
    assert by["triage_job"]["inputSchema"]["required"] == ["job_id"]


def test_protocol_errors(mcp):
    mcp.send_raw(b"{not json")
    m = mcp.recv()
    assert m["id"] is None and m["error"]["code"] == -32700
    mcp.send({"id": 1, "method": "ping"})
    m = mcp.recv()
    assert m["error"]["code"] == -32600 and m["id"] == 1
    mcp.send([{"jsonrpc": "2.0", "id": 2, "method": "ping"}])
    assert mcp.recv()["error"]["code"] == -32600
    mcp.request("tools/list", expect_error=-32002)      # before initialize
    mcp.init()
    mcp.request("resources/list", expect_error=-32601)
    mcp.request("tools/call", [1, 2], expect_error=-32602)
    e = mcp.request("tools/call", {"name": "rm_rf"}, expect_error=-32602)
    assert "unknown tool 'rm_rf'" in e["message"]
    e = mcp.request("tools/call", {"name": "get_job", "arguments": {}}, expect_error=-32602)
    assert "job_id is required" in e["message"]
    e = mcp.request("tools/call", {"name": "get_job", "arguments": {"job_id": True}}, expect_error=-32602)
    assert "job_id must be an integer or string, not a boolean" in e["message"]
    e = mcp.request("tools/call", {"name": "get_job", "arguments": {"job_id": 1, "force": 1}},
                    expect_error=-32602)
    assert "unknown argument 'force'" in e["message"]
    e = mcp.request("tools/call", {"name": "submit_jobs", "arguments": {"jobs": [{"name": "x"}]}},
                    expect_error=-32602)
    assert "jobs[0].command is required" in e["message"]
    e = mcp.request("tools/call", {"name": "update_job", "arguments": {"job_id": 1, "set": {"priority": 300}}},
                    expect_error=-32602)
    assert "set.priority must be at most 255" in e["message"]
    e = mcp.request("tools/call", {"name": "update_job", "arguments": {"job_id": 1, "set": {"project": "p"}}},
                    expect_error=-32602)
    assert "unknown argument 'set.project'" in e["message"]
    # a notification with an unknown method is not answered either
    mcp.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    assert mcp.request("ping") == {}


def test_daemon_down_is_a_tool_error(mcp):
    mcp.init()
    text = mcp.call("get_health", ok=False)
    assert "not running" in text or "gflowd" in text, text
    assert "gflowd" in mcp.call("list_jobs", ok=False)


def test_tools_on_a_failed_job(gflow, mcp):
    gflow.start()
    mcp.init("2025-03-26")
    h = mcp.call("get_health")
    assert h["status"] == "ok" and h["mode"] == "personal"
    assert mcp.call("get_info")["executor"] == "process"
    job = {"name": "boom", "command": ["python3", "-c",
           "print('loading'); import sys; sys.stdout.flush(); raise RuntimeError('CUDA out of memory. Tried')"]}
    pre = mcp.call("preview_submit_jobs", {"jobs": [job]})
    assert pre["jobs"][0]["name"] == "boom" and "nothing was submitted" in pre["note"]
    assert mcp.call("list_jobs")["total"] == 0
    jid = mcp.call("submit_jobs", {"jobs": [job]})["jobs"][0]["id"]
    gflow.wait_state(jid, "Failed")
    lst = mcp.call("list_jobs", {"states": ["Failed"]})
    assert [j["id"] for j in lst["jobs"]] == [jid] and lst["jobs"][0]["exit_code"] == 1
    assert mcp.call("get_job", {"job_id": "@"})["job"]["id"] == jid
    log = mcp.call("get_job_log", {"job_id": jid, "lines": 50})
    assert "loading" in log["lines"] and any("RuntimeError" in ln for ln in log["lines"])
    t = mcp.call("triage_job", {"job_id": jid})
    assert t["job"]["state"] == "Failed" and t["job"]["exit_code"] == 1
    assert any("Traceback" in ln for ln in t["evidence"])
    assert any("CUDA out of memory" in ln for ln in t["evidence"])
    assert "loading" not in t["evidence"]
    d = " ".join(t["diagnosis"])
    assert "GPU ran out of memory" in d and "Python exception" in d and "exited with code 1" in d
    assert any("redo_job" in h for h in t["hints"])
    assert t["job"]["runtime_secs"] >= 0
    redo = mcp.call("redo_job", {"job_id": jid, "set": {"name": "boom2"}})
    assert redo["jobs"][0]["redo_of"] == jid
    st = mcp.call("get_stats")
    assert st["jobs"] == 2 and st["by_state"]["Failed"] >= 1
    text = mcp.call("triage_job", {"job_id": 999}, ok=False)
    assert "999" in text


def test_tools_that_change_a_job(gflow, mcp):
    gflow.start()
    mcp.init()
    jid = mcp.call("submit_jobs", {"jobs": [{"command": ["sleep", "30"], "hold": True, "priority": 5}]})["jobs"][0]["id"]
    p = mcp.call("preview_update_job", {"job_id": jid, "set": {"priority": 40, "name": "renamed"}})
    assert p["valid"] is True and {c["field"] for c in p["changes"]} == {"priority", "name"}
    assert gflow.job(jid)["priority"] == 5        # a preview changes nothing
    p = mcp.call("preview_update_job", {"job_id": jid, "set": {"depends_on": [9999]}})
    assert p["valid"] is False and "9999" in p["error"]
    mcp.call("update_job", {"job_id": jid, "set": {"priority": 40}})
    assert gflow.job(jid)["priority"] == 40
    q = mcp.call("get_queue_pressure")
    assert q["held"] == 1 and q["queued"] == 0
    mcp.call("release_job", {"job_id": jid})
    gflow.wait_state(jid, "Running")
    text = mcp.call("hold_job", {"job_id": jid}, ok=False)
    assert "Running" in text or "running" in text, text
    text = mcp.call("update_job", {"job_id": jid, "set": {"priority": 1}}, ok=False)
    assert "only queued or held" in text
    mcp.call("cancel_job", {"job_id": jid})
    gflow.wait_state(jid, "Cancelled")
    t = mcp.call("triage_job", {"job_id": jid})
    assert t["job"]["state"] == "Cancelled"
    r = mcp.request("tools/call", {"name": "list_reservations", "arguments": {}})
    assert r["content"][0]["text"]      # a list, or says reservations are not supported


def test_every_tool_result_matches_its_output_schema(gflow, mcp):
    """Each tool, run on real jobs: its structuredContent validates against its
    outputSchema (Client.call checks; here every tool is made to answer)."""
    g = gflow
    g.start()
    mcp.init("2025-11-25")
    h = mcp.call("get_health")
    assert h["mode"] == "personal"
    mcp.call("get_info")
    ok = {"command": ["sh", "-c", "echo one; echo two"], "name": "fine"}
    mcp.call("preview_submit_jobs", {"jobs": [ok]})
    jid = mcp.call("submit_jobs", {"jobs": [ok]})["jobs"][0]["id"]
    w = mcp.call("wait_for_job", {"job_id": jid, "timeout_secs": 20})
    assert w["ended"] is True and w["timed_out"] is False and w["job"]["state"] == "Finished"
    mcp.call("list_jobs", {"states": "CD"})
    mcp.call("get_job", {"job_id": jid})
    mcp.call("get_job_log", {"job_id": jid})
    mcp.call("get_job_log", {"job_id": jid, "offset": 0})
    mcp.call("get_stats", {"all_users": True})
    mcp.call("triage_job", {"job_id": jid})
    mcp.call("redo_job", {"job_id": jid})
    held = mcp.call("submit_jobs", {"jobs": [{"command": ["sleep", "30"], "hold": True}]})["jobs"][0]["id"]
    mcp.call("preview_update_job", {"job_id": held, "set": {"priority": 9}})
    mcp.call("update_job", {"job_id": held, "set": {"priority": 9}})
    mcp.call("release_job", {"job_id": held})
    queued = mcp.call("submit_jobs", {"jobs": [{"command": ["true"], "begin_at": time.time() + 3600}]})
    mcp.call("hold_job", {"job_id": queued["jobs"][0]["id"]})
    mcp.call("get_queue_pressure")
    mcp.call("get_quotas")
    mcp.call("list_reservations")
    mcp.call("cancel_job", {"job_id": held})
    assert mcp.validated == TOOLS, TOOLS - mcp.validated


def test_older_versions_get_no_structured_content(gflow, mcp):
    gflow.start()
    for v in ("2025-03-26", "2024-11-05"):
        mcp.init(v)
        mcp.output_schemas()        # asserts that tools/list has none
        assert mcp.call("get_health")["status"] == "ok"      # asserts no structuredContent


def test_log_from_an_offset(gflow, mcp):
    g = gflow
    g.start()
    mcp.init("2025-11-25")
    jid = mcp.call("submit_jobs", {"jobs": [{"command": [
        "python3", "-c", "import sys; sys.stdout.buffer.write('h\u00e9llo\\n'.encode() + b'x' * 200000 + b'\\n')"]}]})["jobs"][0]["id"]
    assert mcp.call("wait_for_job", {"job_id": jid})["job"]["state"] == "Finished"
    full = g.log_of(jid)
    size = len(full.encode())
    # read on from each answer's next_offset: the parts make the whole
    got, off, parts = "", 0, 0
    while True:
        r = mcp.call("get_job_log", {"job_id": jid, "offset": off, "bytes": 65536})
        assert r["offset"] == off and r["next_offset"] == off + r["bytes"] and r["bytes"] <= 65536
        got, off, parts = got + r["text"], r["next_offset"], parts + 1
        if not r["more"]:
            break
    assert got == full and off == size and parts == 4
    # a part never ends inside a character: the next one starts with it
    r = mcp.call("get_job_log", {"job_id": jid, "offset": 0, "bytes": 2})
    assert r["text"] == "h" and r["next_offset"] == 1 and r["more"] is True
    r = mcp.call("get_job_log", {"job_id": jid, "offset": 1, "bytes": 2})
    assert r["text"] == "\u00e9" and r["next_offset"] == 3
    # the end: nothing more; the tail's next_offset is where to read on
    r = mcp.call("get_job_log", {"job_id": jid, "offset": size})
    assert r["text"] == "" and r["more"] is False and r["next_offset"] == size
    assert mcp.call("get_job_log", {"job_id": jid, "lines": 1})["next_offset"] == size
    # careless and hostile arguments: refused in one line naming the argument
    text = mcp.call("get_job_log", {"job_id": jid, "offset": size + 1}, ok=False)
    assert text == f"'offset' {size + 1} is past the end of job {jid}'s log ({size} bytes)", text
    assert "lines" in mcp.call("get_job_log", {"job_id": jid, "lines": 5, "offset": 0}, ok=False)
    assert "bytes needs offset" in mcp.call("get_job_log", {"job_id": jid, "bytes": 5}, ok=False)
    for v in ("2025-11-25", "2025-06-18"):     # a tool error, then a protocol error
        mcp.init(v)
        assert "bytes must be at most 1048576" in mcp.refused("get_job_log", {"job_id": jid, "offset": 0,
                                                                             "bytes": 10 ** 12})
        assert "offset must be at least 0" in mcp.refused("get_job_log", {"job_id": jid, "offset": -5})
        assert "offset must be an integer" in mcp.refused("get_job_log", {"job_id": jid, "offset": "0"})
    held = mcp.call("submit_jobs", {"jobs": [{"command": ["true"], "hold": True}]})["jobs"][0]["id"]
    assert "no log" in mcp.call("get_job_log", {"job_id": held, "offset": 0}, ok=False)


def test_wait_for_job(gflow, mcp):
    g = gflow
    g.start()
    mcp.init("2025-11-25")
    jid = mcp.call("submit_jobs", {"jobs": [{"command": ["sleep", "30"]}]})["jobs"][0]["id"]
    g.wait_state(jid, "Running")
    t0 = time.monotonic()
    w = mcp.call("wait_for_job", {"job_id": "@", "timeout_secs": 1})
    assert w["ended"] is False and w["timed_out"] is True and w["job"]["state"] == "Running"
    assert 1 <= w["waited_secs"] and time.monotonic() - t0 >= 1
    # it ends while we wait (cancelled by someone else): answered then, not at the timeout
    threading.Timer(1.0, lambda: g.cli("gcancel", str(jid))).start()
    t0 = time.monotonic()
    w = mcp.call("wait_for_job", {"job_id": jid, "timeout_secs": 60})
    assert w["ended"] is True and w["job"]["state"] == "Cancelled" and time.monotonic() - t0 < 30
    assert mcp.call("wait_for_job", {"job_id": 999}, ok=False) == "job 999 does not exist"
    assert mcp.call("wait_for_job", {"job_id": "@~50"}, ok=False) == "'@~50' names no job: you have 1 job"
    for bad, what in ((0, "timeout_secs must be at least 1"), (601, "timeout_secs must be at most 600"),
                      (2.5, "timeout_secs must be an integer"), ("60", "timeout_secs must be an integer")):
        assert what in mcp.refused("wait_for_job", {"job_id": jid, "timeout_secs": bad})
    assert "job_id is required" in mcp.refused("wait_for_job", {})


def test_wait_ends_when_the_client_goes(gflow):
    """A client that hangs up mid-wait does not leave the server waiting."""
    g = gflow
    g.start()
    jid = g.submit("sleep", "60")
    c = Client(g)
    c.init()
    c.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": "wait_for_job", "arguments": {"job_id": jid, "timeout_secs": 600}}})
    time.sleep(0.5)
    c.p.stdin.close()
    assert c.p.wait(timeout=10 * SLOW) == 0
    c.p.stdout.close()
    c.p.stderr.close()


def test_get_quotas(gflow, mcp):
    g = gflow
    g.start()
    mcp.init("2025-11-25")
    me = os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name
    q = mcp.call("get_quotas")
    assert q["user"]["name"] == me and q["user"]["running_jobs"] == 0 and q["projects"] == []
    assert q["user"]["limits"]["max_running_jobs"] is None and q["user"]["left"]["max_running_jobs"] is None
    g.cli("gctl", "quota", "set", "--user", me, "--max-running-jobs", "3", check=True)
    g.cli("gctl", "quota", "set", "--project", "vision", "--max-running-gpus", "4", check=True)
    mcp.call("submit_jobs", {"jobs": [{"command": ["sleep", "30"], "project": "vision"}]})
    g.wait_for(lambda: mcp.call("get_quotas")["user"]["running_jobs"] == 1, what="the job to run")
    q = mcp.call("get_quotas")
    assert q["user"]["limits"]["max_running_jobs"] == 3 and q["user"]["left"]["max_running_jobs"] == 2
    assert [p["name"] for p in q["projects"]] == ["vision"]
    assert q["projects"][0]["limits"]["max_running_gpus"] == 4
    q = mcp.call("get_quotas", {"user": "nobody-here", "project": "other"})
    assert q["user"]["name"] == "nobody-here" and q["user"]["running_jobs"] == 0
    assert q["projects"][0]["name"] == "other"
    assert "user must not be empty" in mcp.refused("get_quotas", {"user": ""})
    assert "unknown argument 'all'" in mcp.refused("get_quotas", {"all": True})


def test_system_mode_logs_of_others_are_refused(system_gflow):
    g = system_gflow
    g.gpus(1)
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    jb = g.submit_as(b, "echo", "secret-of-b")
    g.wait_state(jb, "Finished")
    c = Client(g, user=a)
    try:
        c.init("2025-11-25")
        text = c.call("get_job_log", {"job_id": jb, "offset": 0}, ok=False)
        assert text == f"job {jb} belongs to {b}; only {b} or an admin may read its log", text
        assert c.call("get_job_log", {"job_id": jb}, ok=False) == text
        t = c.call("triage_job", {"job_id": jb})
        assert t["log_error"] == text and t["log_tail"] == []
        # a's own numbers, under a's name
        q = c.call("get_quotas")
        assert q["user"]["name"] == a
        w = c.call("wait_for_job", {"job_id": jb, "timeout_secs": 1})     # states are public
        assert w["ended"] is True
    finally:
        c.close()


def test_help_and_usage(gflow):
    r = gflow.cli("gflow", "mcp", "serve", "--help")
    assert r.returncode == 0 and "triage_job" in r.stdout and "claude mcp add" in r.stdout
    assert "wait_for_job" in r.stdout and "get_quotas" in r.stdout and "2025-11-25" in r.stdout
    r = gflow.cli("gflow", "mcp")
    assert r.returncode == 2 and "gflow mcp serve" in r.stderr
    r = gflow.cli("gflow", "mcp", "serve", "--port", "1")
    assert r.returncode == 2 and "unexpected '--port'" in r.stderr
    assert "mcp" in gflow.cli("gflow", "--help").stdout
    # EOF on stdin ends it cleanly
    r = subprocess.run([str(gflow.build / "gflow"), "mcp", "serve"], input=b"", env=gflow.env,
                       capture_output=True, timeout=10)
    assert r.returncode == 0 and r.stdout == b""
    assert os.path.exists(gflow.build / "gflow")


def test_list_and_get_job_give_the_expected_start(gflow, mcp):
    """A waiting job's expected start and GPUs (the daemon's estimate)."""
    gflow.gpus(1)
    gflow.start()
    mcp.init()
    a = gflow.submit("--gpus", "1", "--time", "10", "sleep", "300")
    ra = gflow.wait_state(a, "Running")
    b = gflow.submit("--gpus", "1", "sleep", "300")
    c = gflow.submit("--gpus", "1", "sleep", "300")
    gflow.wait_for(lambda: gflow.job(b).get("reason") == "Resources", what="B to wait")
    by = {j["id"]: j for j in mcp.call("list_jobs", {"active": True})["jobs"]}
    assert abs(by[b]["expected_start"] - (ra["start_time"] + 600)) <= 2 and by[b]["expected_gpus"] == [0]
    assert by[c]["expected_start"] is None and "no time limit" in by[c]["expected_start_note"]
    assert "expected_start" not in by[a]            # running: start_time says it
    # the list's own fields, no more (the whole objects are asked for)
    assert "command" not in by[b] and "cwd" not in by[b] and by[b]["time_limit_secs"] is None
    assert set(by[a]) <= set(by[b]) | {"gpu_ids", "start_time"}
    assert mcp.call("list_jobs", {"limit": 1})["jobs"][0]["id"] == c
    j = mcp.call("get_job", {"job_id": b})["job"]
    assert abs(j["expected_start"] - by[b]["expected_start"]) <= 2 and j["expected_gpus"] == [0]
    tools = {t["name"]: t for t in mcp.request("tools/list")["tools"]}
    assert "expected_start" in tools["list_jobs"]["description"]
    assert "expected_start" in tools["get_job"]["description"]
