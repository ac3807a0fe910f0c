"""GET /jobs is written job by job (api_list.c): a long list goes out
chunked, piece by piece as the client reads, and says exactly what the
per-job answer (GET /jobs/<id>, built as a jansson tree) says of each job,
for every caller; a client that leaves in the middle costs the daemon
nothing. gqueue reads the list as a stream and prints, in every format,
what a fully parsed answer gives."""
import json
import socket

from conftest import UnixHTTPConnection


def raw_get(sock_path, path, timeout=30):
    """(status, headers dict, body bytes) of one GET."""
    c = UnixHTTPConnection(str(sock_path), timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def pairs(raw):
    """JSON with object key order and the exact text of numbers kept."""
    return json.loads(raw, object_pairs_hook=lambda kv: kv, parse_float=str, parse_int=str)


def post_jobs(g, specs):
    """POST /jobs of these specs (in /tmp, a plain PATH); their ids."""
    st, body = g.api("POST", "/jobs", {"jobs": specs, "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]})
    assert st == 201, body
    return [j["id"] for j in body["jobs"]]


def held(n, **spec):
    return [{"command": ["true"], "hold": True, **spec}] * n


def fill_varied(g, n_plain):
    """Held jobs of every kind: text that needs escapes, arrays, dependencies,
    Slurm records, plus n_plain plain ones in one batch."""
    specs = [
        {"command": ["echo", "caf\u00e9 \U0001F600", "say \"hi\"\nbye", "tab\there", "back\\slash"],
         "name": "n\u00e4me-\u6f22\u5b57", "hold": True, "priority": 3, "project": "p \"q\""},
        {"command": ["printf", "esc\x1b[31m\x01"], "name": "limits", "hold": True, "time_limit_secs": 3600,
         "memory_mb": 2048},
        {"command": ["sh", "-c", "exit 3"], "hold": True, "params": {"lr": "0.001", "tag": "x\ny"}},
    ]
    first = post_jobs(g, specs)[0]
    g.submit("--hold", "--array", "1-3", "--name", "arr", "true")
    g.submit("--hold", "--depends-on-any", f"{first},{first + 1}", "--name", "dep", "true")
    st, body = g.api("POST", "/remote/jobs", {"cluster": "hpc", "cwd": "/tmp", "jobs": [
        {"name": "on-slurm", "command": ["python", "t.py"], "slurm_id": "777", "remote_log": "/s/o.log",
         "gpus": 1}]})
    assert st == 201, body
    done = g.submit("--name", "quick", "sh", "-c", "exit 0")
    g.wait_state(done, "Finished")
    post_jobs(g, [{"command": ["true"], "hold": True, "name": f"j{i}"} for i in range(n_plain)])


def check_list_matches_each_job(sock_path, query, expect_chunked=None):
    st, hdr, body = raw_get(sock_path, "/jobs?" + query)
    assert st == 200, body
    if expect_chunked is not None:
        assert (hdr.get("transfer-encoding") == "chunked") == expect_chunked, hdr
    listed = dict(pairs(body))["jobs"]
    ids = [dict(o)["id"] for o in listed]
    assert ids == sorted(ids, key=int) and len(set(ids)) == len(ids)
    for o in listed:
        jid = dict(o)["id"]
        st, _, one = raw_get(sock_path, f"/jobs/{jid}")
        assert st == 200
        whole = dict(dict(pairs(one))["job"])
        if "fields=" in query:
            wanted = query.split("fields=")[1].split("&")[0].split(",")
            whole = [(k, v) for k, v in whole.items() if k in wanted]
        else:
            whole = list(whole.items())
        assert o == whole, f"job {jid}"
    return listed


def test_a_long_list_is_streamed_and_says_what_each_job_says(gflow):
    g = gflow
    g.start()
    fill_varied(g, 1500)
    listed = check_list_matches_each_job(g.socket, "users=all", expect_chunked=True)
    assert len(listed) >= 1500 + 9
    names = [dict(o)["name"] for o in listed]
    assert "n\u00e4me-\u6f22\u5b57" in names         # exact text, not escaped
    short = check_list_matches_each_job(g.socket, "users=all&fields=id,name,state,log_path,cluster,slurm_id")
    assert len(short) == len(listed)
    live = check_list_matches_each_job(g.socket, "active=1&fields=id,state,reason,depends_on")
    assert len(live) == len(listed) - 1     # all but the finished one
    assert all(dict(o)["state"] != "Finished" for o in live)
    small = check_list_matches_each_job(g.socket, "states=Finished", expect_chunked=False)
    assert [dict(o)["name"] for o in small] == ["quick"]


def test_a_client_that_leaves_mid_list_costs_the_daemon_nothing(gflow):
    g = gflow
    g.start()
    post_jobs(g, held(3000, name="x" * 200))
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(g.socket))
        s.sendall(b"GET /jobs?users=all HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        s.close()                       # gone with most of the list unread
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)   # one that never reads
    s.connect(str(g.socket))
    s.sendall(b"GET /jobs?users=all HTTP/1.1\r\nHost: x\r\n\r\n")
    st, body = g.api("GET", "/health")
    assert st == 200
    st, hdr, raw = raw_get(g.socket, "/jobs?users=all&fields=id")
    assert st == 200 and len(json.loads(raw)["jobs"]) == 3000
    s.close()
    # two lists on one keep-alive connection, the first streamed
    c = UnixHTTPConnection(str(g.socket), timeout=30)
    try:
        for q in ("users=all", "users=all&fields=id"):
            c.request("GET", "/jobs?" + q)
            r = c.getresponse()
            assert r.status == 200 and len(json.loads(r.read())["jobs"]) == 3000
    finally:
        c.close()
    assert g.proc.poll() is None
    # the daemon stops cleanly with a list half sent
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(g.socket))
    s.sendall(b"GET /jobs?users=all HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    assert g.stop() == 0, g.daemon_log()
    s.close()


def test_others_see_only_public_fields_in_a_streamed_list(system_gflow):
    g = system_gflow
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    for i in range(3):
        g.submit_as(a, "--hold", "--name", f"a\u00e9{i}", "echo", "secret\nline")
    g.submit_as(b, "--hold", "--name", "b0", "true")
    post_jobs(g, held(1200))
    for user in (a, b):
        r = g.as_user(user, "python3", "-c", LIST_AS_USER, check=True)
        mine = json.loads(r.stdout)
        assert mine["chunked"]
        for o, one in zip(mine["list"], mine["each"]):
            assert o == one
        owners = {dict(o)["user"] for o in mine["list"]}
        assert owners == {a, b, "root"}
        for o in mine["list"]:
            d = dict(o)
            assert ("command" in d) == (d["user"] == user), d


# Run as a user: the list and each job's own answer, as that user sees them.
LIST_AS_USER = r'''
import http.client, json, os, socket
path = os.environ["GFLOW_SYSTEM_ROOT"] + "/run/gflow/gflowd.sock"
class C(http.client.HTTPConnection):
    def __init__(s): super().__init__("localhost", timeout=30)
    def connect(s):
        s.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.sock.connect(path)
def get(p):
    c = C(); c.request("GET", p); r = c.getresponse(); raw = r.read(); c.close()
    return r.getheader("Transfer-Encoding"), json.loads(raw, object_pairs_hook=lambda kv: kv,
                                                        parse_float=str, parse_int=str)
te, lst = get("/jobs?users=all")
lst = dict(lst)["jobs"]
each = [dict(get("/jobs/" + dict(o)["id"])[1])["job"] for o in lst]
print(json.dumps({"chunked": te == "chunked", "list": lst, "each": each}))
'''


ALL_COLUMNS = ("JOBID,NAME,ST,STATE,TIME,NODES,NODELIST(REASON),TIMELIMIT,MEMORY,USER,PROJECT,EXIT,"
               "PRIORITY,SUBMIT,START,END,GPUMEM,REASON,GPUIDS,CLUSTER")
FORMATS = ([], ["-o", "csv"], ["-o", "json", "-f", "JOBID,NAME,ST,JOBID,GPUS"], ["-f", ALL_COLUMNS],
           ["-o", "csv", "-f", ALL_COLUMNS], ["-o", "json", "-f", ALL_COLUMNS], ["-n", "7"], ["-o", "json"],
           ["-o", "json", "-n", "3"])


def same_as_parsed(run, args, text=True):
    """gqueue ARGS (streamed) prints what the fully parsed path prints:
    --tree reads the answer with jansson, and without links between the
    jobs listed (or in CSV and JSON, which have no tree) changes nothing."""
    streamed = run("gqueue", *args)
    assert streamed.returncode == 0, streamed.stderr
    if text or "-o" in args:
        parsed = run("gqueue", *args, "--tree")
        assert streamed.stdout == parsed.stdout and streamed.stderr == parsed.stderr, args
    if "json" in args:
        json.loads(streamed.stdout)
    return streamed.stdout


SORTS = (["--sort", "name"], ["--sort", "-id"], ["-r", "time", "-n", "5"], ["-r", "-submit", "-n", "-3"],
         ["-n", "-4"], ["-r", "user"], ["-r", "-priority"], ["-r", "state"], ["-r", "gpus"])


def test_gqueue_prints_in_every_format_what_a_parsed_answer_gives(gflow):
    g = gflow
    g.start()
    fill_varied(g, 700)
    # job 7 depends on 1 and 2: a tree differs there, so text is compared
    # where no such link is listed
    for base, text in (([], False), (["-a"], False), (["-c"], True), (["-s", "Hold"], False),
                       (["-j", "1-5"], True), (["-j", "8-709"], True), (["-a", "--since", "1h"], False)):
        for fmt in FORMATS:
            out = same_as_parsed(g.cli, base + fmt, text)
        for sort in SORTS:
            for fmt in ([], ["-o", "csv"], ["-o", "json", "-f", ALL_COLUMNS], ["-o", "json"]):
                same_as_parsed(g.cli, base + sort + fmt, text)
    out = same_as_parsed(g.cli, ["-a"], False)
    assert len(out.splitlines()) == 1 + 700 + 9
    assert "n\u00e4me-\u6f22\u5b57" in out
    rows = json.loads(same_as_parsed(g.cli, ["-a", "-o", "json", "-f", "JOBID,NAME,CLUSTER"]))
    assert {"JOBID": "6", "NAME": "arr-3", "CLUSTER": "-"} in rows
    assert any(r["CLUSTER"] == "hpc" and r["NAME"] == "on-slurm" for r in rows)
    names = [r["NAME"] for r in json.loads(same_as_parsed(g.cli, ["-a", "-r", "-name", "-o", "json", "-f",
                                                                "NAME"]))]
    assert names == sorted(names, key=lambda n: n.encode(), reverse=True)


def test_gqueue_stream_for_other_users_jobs(system_gflow):
    g = system_gflow
    g.start()
    a, b = g.add_user("a"), g.add_user("b")
    for i in range(5):
        g.submit_as(a, "--hold", "--name", f"a\u00e9{i}", "--time", "1:00:00", "echo", "secret")
    g.submit_as(b, "--hold", "--name", "b0", "true")
    post_jobs(g, held(600))
    for user in (a, b):
        run = lambda *args: g.as_user(user, *args)     # noqa: E731
        for fmt in FORMATS:
            same_as_parsed(run, ["-u", "all"] + fmt)
        for sort in SORTS:
            same_as_parsed(run, ["-u", "all"] + sort)
        out = same_as_parsed(run, ["-u", "all", "-f", "JOBID,USER,NAME"])
        assert len(out.splitlines()) == 1 + 606


def read_http_body(s):
    """The whole answer on socket s (Connection: close), dechunked."""
    raw = b""
    while True:
        piece = s.recv(65536)
        if not piece:
            break
        raw += piece
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    out = b""
    while True:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            return out
        out += rest[:n]
        body = rest[n + 2:]


def test_jobs_that_change_while_a_list_is_sent_are_listed_once(gflow):
    g = gflow
    g.start()
    post_jobs(g, held(3000, name="y" * 100))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(g.socket))
    s.sendall(b"GET /jobs?users=all HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    first = s.recv(1000)                # the list has begun; most of it is unsent
    post_jobs(g, held(5))
    st, body = g.api("POST", "/jobs/cancel", {"ids": [1, 2999, 3000]})
    assert st == 200 and body["cancelled"] == [1, 2999, 3000], body
    # other requests are answered while the list waits for its reader
    st, body = g.api("GET", "/jobs?users=all&fields=id,state&states=Cancelled")
    assert [j["id"] for j in body["jobs"]] == [1, 2999, 3000]
    rest = read_http_body_after(s, first)
    s.close()
    jobs = json.loads(rest)["jobs"]
    ids = [j["id"] for j in jobs]
    assert ids == sorted(set(ids))                  # each once, in id order
    assert set(range(1, 3001)) <= set(ids)          # every job there at the start
    state = {j["id"]: j["state"] for j in jobs}
    assert state[2999] == state[3000] == "Cancelled"   # written after they changed
    assert state[1] == "Hold"                       # written before


def read_http_body_after(s, first):
    class Joined:
        def __init__(self, data, sock):
            self.data, self.sock = data, sock

        def recv(self, n):
            if self.data:
                d, self.data = self.data, b""
                return d
            return self.sock.recv(n)
    return read_http_body(Joined(first, s))


def test_a_long_text_list_is_printed_as_it_comes(gflow):
    """gqueue's text table (issue 31: the first row of a million on screen
    in ≤ 50 ms): a list of up to 1,000 rows is aligned on all of them; a
    longer one is written once 1,000 rows have come, aligned on those, and
    every later row as it comes: the 1,000 rows cannot know a wider cell
    that comes later, which then widens its column from its row on. Other
    formats and a sorted list are whole as before."""
    g = gflow
    g.start()
    ids = post_jobs(g, [{"command": ["true"], "hold": True, "name": "n"} for _ in range(1100)] +
                    [{"command": ["true"], "hold": True, "name": "a-much-longer-name"}] +
                    [{"command": ["true"], "hold": True, "name": "n"} for _ in range(99)])
    out = g.cli("gqueue", "-a", "-f", "JOBID,NAME,ST", check=True).stdout.splitlines()
    assert len(out) == 1 + 1200
    head, first, late = out[0], out[1], out[1101]
    assert head.split() == ["JOBID", "NAME", "ST"] and first.split() == [str(ids[0]), "n", "H"]
    # the first 1,000 rows: NAME as wide as its header; the long name comes later
    assert first.index("H") == head.index("ST") and out[1000].index("H") == head.index("ST")
    assert late.split() == [str(ids[1100]), "a-much-longer-name", "H"]
    assert late.index("H") > head.index("ST") and out[-1].index("H") == late.index("H")
    # sorted (kept whole) and short lists: aligned on every row, as before
    out = g.cli("gqueue", "-a", "-f", "JOBID,NAME,ST", "--sort", "id", check=True).stdout.splitlines()
    assert len({ln.index("H") for ln in out[1:]} | {out[0].index("ST")}) == 1
    out = g.cli("gqueue", "-a", "-f", "JOBID,NAME,ST", "-n", "5", check=True).stdout.splitlines()
    assert len({ln.index("H") for ln in out[1:]}) == 1 and len(out) == 6
    # other formats: every row, the long name where it is
    rows = json.loads(g.cli("gqueue", "-a", "-f", "JOBID,NAME", "-o", "json", check=True).stdout)
    assert len(rows) == 1200 and rows[1100]["NAME"] == "a-much-longer-name"
