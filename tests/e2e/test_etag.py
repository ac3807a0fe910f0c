"""Fetch only what changed (issue 29 §3): GET /jobs?active=1 (the jobs that
are not over), GET /jobs?since= and GET /gpus carry an ETag of their bytes; If-None-Match
with it is 304 Not Modified with no body, under 1 KB on the wire (measured
on a raw socket) even with 10,000 waiting jobs; the tag changes whenever
the answer does (a job changed, a GPU changed, another caller's view)."""
import json
import socket
import time

HOST = "127.0.0.1"
FIELDS = ("id,name,user,uid,project,state,st,reason,gpus,gpu_ids,submit_time,start_time,end_time,"
          "priority,depends_on,dep_mode,active")
LIVE = f"/jobs?users=all&active=1&fields={FIELDS}"


def raw(port, path, headers=()):
    """(status, headers dict, body bytes, all the bytes received) of one
    GET over TCP, the connection closed by the client after the answer."""
    s = socket.create_connection((HOST, port), timeout=20)
    try:
        req = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        req += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        s.sendall(req.encode())
        got = b""
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            got += b
    finally:
        s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdr = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdr[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), hdr, body, got


def test_unchanged_live_list_and_gpus_cost_under_1k(gflow):
    g = gflow
    g.gpus(2)
    g.start()
    for i in range(0, 10000, 2500):
        st, body = g.api("POST", "/jobs", {"jobs": [{"command": ["true"], "hold": True, "name": f"h{i + k}"}
                                                    for k in range(2500)],
                                           "cwd": "/tmp", "env": ["PATH=/usr/bin:/bin"]}, timeout=60)
        assert st == 201, body
    st, hdr, body, wire = raw(g.port, LIVE)
    assert st == 200 and len(json.loads(body)["jobs"]) == 10000
    tag = hdr["etag"]
    assert tag.startswith('"') and tag.endswith('"') and hdr["cache-control"] == "private, no-cache", hdr
    print(f"\nfull answer: {len(wire)} bytes")
    st, hdr2, body2, wire2 = raw(g.port, LIVE, [("If-None-Match", tag)])
    assert st == 304 and body2 == b"" and hdr2["etag"] == tag, (st, hdr2)
    assert len(wire2) <= 1024, wire2
    print(f"unchanged: {len(wire2)} bytes")
    # the whole refresh of the dashboard (app.js): the live jobs, the jobs
    # submitted since the newest it knows, the GPUs; unchanged: three 304s
    newest = max(j["submit_time"] for j in json.loads(body)["jobs"])
    since = f"/jobs?users=all&since={newest}&fields={FIELDS}"
    st, hs, bs, _ = raw(g.port, since)
    assert st == 200 and hs["etag"] and json.loads(bs)["jobs"], hs
    st, hgp, _, _ = raw(g.port, "/gpus")
    total = 0
    for path, t in ((LIVE, tag), (since, hs["etag"]), ("/gpus", hgp["etag"])):
        st, _, b, w = raw(g.port, path, [("If-None-Match", t)])
        assert st == 304 and b == b"", path
        total += len(w)
    assert total <= 1024, total
    print(f"unchanged refresh (3 answers): {total} bytes")
    # a list of tags, a weak one and "*" match too; another tag does not
    for inm in (f'"x", {tag}', f"W/{tag}", "*"):
        assert raw(g.port, LIVE, [("If-None-Match", inm)])[0] == 304, inm
    for inm in ('"0-0"', tag[:-2] + '"', ""):
        assert raw(g.port, LIVE, [("If-None-Match", inm)])[0] == 200, inm
    # the same tag for another query or fields is another answer
    st, h3, _, _ = raw(g.port, "/jobs?users=all&active=1&fields=id", [("If-None-Match", tag)])
    assert st == 200 and h3["etag"] != tag
    # any change to a listed job changes the tag: release one (it runs, ends)
    jid = json.loads(body)["jobs"][0]["id"]
    g.cli("gjob", "release", str(jid), check=True)
    g.wait_state(jid, "Finished")
    st, h4, b4, _ = raw(g.port, LIVE, [("If-None-Match", tag)])
    assert st == 200 and h4["etag"] != tag and len(json.loads(b4)["jobs"]) == 9999
    # a changed name too (not a field the scheduler reads)
    other = json.loads(b4)["jobs"][0]["id"]
    g.cli("gjob", "update", str(other), "--name", "renamed", check=True)
    st, h5, b5, _ = raw(g.port, LIVE, [("If-None-Match", h4["etag"])])
    assert st == 200 and h5["etag"] != h4["etag"] and json.loads(b5)["jobs"][0]["name"] == "renamed"

    # GET /gpus: the same, and a GPU that changes changes the tag
    st, hg, bg, _ = raw(g.port, "/gpus")
    assert st == 200 and hg["etag"]
    st, _, b, wire = raw(g.port, "/gpus", [("If-None-Match", hg["etag"])])
    assert st == 304 and b == b"" and len(wire) <= 1024
    g.set_scenario('gpu 0 name="Fake H100" total_mb=81920 util=55\ngpu 1 name="Fake H100" total_mb=81920\n')
    deadline = time.time() + 15
    while raw(g.port, "/gpus", [("If-None-Match", hg["etag"])])[0] == 304:
        assert time.time() < deadline, "GPU 0's utilisation never changed the tag"
        time.sleep(0.2)


def test_a_tag_is_per_caller_view(gflow):
    """The owner (its token) sees its jobs' private fields; a caller without
    one sending the owner's tag gets its own (public) answer, not a 304."""
    g = gflow
    g.start()
    g.submit("--hold", "-J", "mine", "true")
    token = g.cli("gflowd", "token", check=True).stdout.strip()
    auth = [("Authorization", f"Bearer {token}")]
    st, h_own, b_own, _ = raw(g.port, "/jobs?active=1", auth)
    assert st == 200 and "command" in json.loads(b_own)["jobs"][0]
    st, h_anon, b_anon, _ = raw(g.port, "/jobs?users=all&active=1", [("If-None-Match", h_own["etag"])])
    assert st == 200 and h_anon["etag"] != h_own["etag"] and "command" not in json.loads(b_anon)["jobs"][0]
    assert raw(g.port, "/jobs?active=1", auth + [("If-None-Match", h_own["etag"])])[0] == 304
    # a flood of conditional requests is answered and changes nothing
    for _ in range(200):
        assert raw(g.port, "/jobs?users=all&active=1", [("If-None-Match", h_anon["etag"])])[0] == 304
    assert g.api("GET", "/health")[0] == 200
