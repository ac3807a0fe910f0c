"""The dashboard's files as the daemon serves them (no browser needed): the
page at / and /ui/, its modules with their types, caching by ETag, a strict
Content-Security-Policy, and a plain 404 for anything else."""
import http.client
import json


def get(port, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def test_dashboard_files(gflow):
    g = gflow
    g.start()
    st, h, page = get(g.port, "/")
    assert st == 200 and h["content-type"] == "text/html; charset=utf-8"
    assert b'<script type="module" src="/ui/app.js">' in page
    assert "script-src 'self'" in h["content-security-policy"]
    assert "frame-ancestors 'none'" in h["content-security-policy"]
    assert h["x-content-type-options"] == "nosniff"
    assert get(g.port, "/ui/")[2] == page == get(g.port, "/ui/index.html")[2]
    for name, ctype in (("app.js", "text/javascript"), ("jobs.js", "text/javascript"),
                        ("style.css", "text/css")):
        st, h, body = get(g.port, f"/ui/{name}")
        assert st == 200 and h["content-type"].startswith(ctype) and body, name
        st2, h2, body2 = get(g.port, f"/ui/{name}", {"If-None-Match": h["etag"]})
        assert st2 == 304 and not body2 and h2["etag"] == h["etag"]
    # every module the page imports is served
    app = get(g.port, "/ui/app.js")[2].decode()
    for mod in ("api.js", "detail.js", "gpus.js", "history.js", "jobs.js", "timeline.js", "util.js"):
        assert f"'./{mod}'" in app or mod in get(g.port, "/ui/detail.js")[2].decode(), mod
        assert get(g.port, f"/ui/{mod}")[0] == 200, mod
    st, h, body = get(g.port, "/ui/../token")
    assert st == 404 and "no such file of the dashboard" in json.loads(body)["error"]
    st, _, body = get(g.port, "/ui/nothing.js")
    assert st == 404 and json.loads(body)["error"] == "no such file of the dashboard: /ui/nothing.js"
