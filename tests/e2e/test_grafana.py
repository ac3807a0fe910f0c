"""docs/grafana/gflow.json, the ready Grafana dashboard: it parses, every
query is PromQL that promtool accepts, and every metric it names is a series
a real daemon exports (scraped from /metrics after some traffic), with the
labels its `by (…)` clauses and selectors use."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DASH = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "gflow.json"
FUNCS = {"sum", "rate", "increase", "histogram_quantile", "time", "by", "without", "and", "or", "unless"}


def queries(d):
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            out.append((v["name"], q["query"]))
    return out


def concrete(expr):
    """The expression with Grafana's variables filled in as Prometheus would get it."""
    expr = expr.replace("$__rate_interval", "5m").replace("$user", ".*").replace("$project", ".*")
    m = re.fullmatch(r"label_values\((\w+), *(\w+)\)", expr)
    return f"count by ({m[2]}) ({m[1]})" if m else expr


def families(text):
    fams, labels = {}, {}
    for ln in text.splitlines():
        if ln.startswith("# TYPE "):
            _, _, name, typ = ln.split()
            fams[name] = typ
        elif ln and not ln.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?", ln)
            labels.setdefault(m[1], set()).update(re.findall(r'(\w+)="', m[2] or ""))
    return fams, labels


def series_names(fams):
    names = set()
    for f, typ in fams.items():
        names.add(f)
        if typ == "histogram":
            names |= {f + "_bucket", f + "_sum", f + "_count"}
    return names


def test_dashboard_parses():
    d = json.loads(DASH.read_text())
    assert d["title"] == "gflow" and d["panels"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for p in d["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"], p["title"]
            for t in p["targets"]:
                assert t["datasource"]["uid"] == "${datasource}", p["title"]


def test_dashboard_queries_are_promql():
    if not shutil.which("promtool"):
        pytest.skip("promtool (Debian package prometheus) is not installed")
    d = json.loads(DASH.read_text())
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"gflow_dashboard:q{i}", "expr": concrete(e)} for i, (_, e) in enumerate(queries(d))]}]}
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump(rules, f)     # JSON is YAML
    r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    Path(f.name).unlink()
    assert r.returncode == 0, r.stdout + r.stderr


def test_dashboard_names_only_exported_series(gflow):
    g = gflow
    g.set_scenario("".join(f'gpu {i} name="Fake H100" total_mb=81920 util=50\n' for i in range(2)))
    g.start()
    jid = g.submit("-P", "p", "--gpus", "1", "true")
    g.wait_state(jid, "Finished")
    g.api("GET", f"/jobs/{jid}")
    st, body = g.api("GET", "/metrics")
    assert st == 200
    fams, labels = families(body if isinstance(body, str) else body.decode())
    names = series_names(fams)
    d = json.loads(DASH.read_text())
    used = set()
    for title, e in queries(d):
        e = concrete(e)
        e = re.sub(r'"[^"]*"', '""', e)             # no names inside label values
        e = re.sub(r"\[[^\]]*\]", "", e)            # nor in ranges
        for name in re.findall(r"\b(gflow_\w+)", e):
            assert name in names, f"panel {title!r}: {name} is not in /metrics"
            used.add(name)
        # labels in by (…) and selectors exist on the metrics of the expression
        metric_labels = set().union(*(labels.get(n, set()) for n in re.findall(r"\b(gflow_\w+)", e))) | {"le"}
        for grp in re.findall(r"by \(([^)]*)\)", e):
            for lab in (x.strip() for x in grp.split(",")):
                assert lab in metric_labels, f"panel {title!r}: no label {lab!r}"
        for sel in re.findall(r"\{([^}]*)\}", e):
            for lab in re.findall(r"(\w+)\s*[=!~]", sel):
                assert lab in metric_labels, f"panel {title!r}: no label {lab!r}"
    # the dashboard shows what issue 29 asks a Grafana user gets
    for want in ("gflow_job_queue_wait_seconds_bucket", "gflow_job_run_seconds_bucket", "gflow_jobs_waiting",
                 "gflow_jobs_waiting_gpus", "gflow_jobs_oldest_waiting_seconds", "gflow_jobs_ended_total",
                 "gflow_api_request_seconds_bucket", "gflow_jobs"):
        assert want in used, want


def test_dashboard_on_a_real_prometheus(gflow):
    """A real Prometheus scrapes the daemon; every dashboard query runs
    without error, and the queue panels have data (a started job's wait, the
    queued job's reason and GPUs, requests by route)."""
    import time
    import urllib.parse
    import urllib.request
    from conftest import free_port

    if not shutil.which("prometheus"):
        pytest.skip("prometheus (Debian package prometheus) is not installed")
    g = gflow
    g.set_scenario("".join(f'gpu {i} name="Fake H100" total_mb=81920 util=50\n' for i in range(2)))
    g.start()
    g.wait_state(g.submit("-P", "p", "true"), "Finished")
    g.submit("-P", "q", "--gpus", "2", "--hold", "true")
    waiting = g.submit("-P", "q", "--gpus", "2", "--begin", "now+1h", "true")
    g.wait_for(lambda: g.job(waiting)["reason"], what="a reason for the waiting job")
    port = free_port()
    (g.tmp / "prom.yml").write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs: [{{job_name: gflow, static_configs: [{{targets: ['127.0.0.1:{g.port}']}}]}}]\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={g.tmp / 'prom.yml'}",
                             f"--storage.tsdb.path={g.tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def query(expr):
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as r:
            out = json.loads(r.read())
        assert out["status"] == "success", (expr, out)
        return out["data"]["result"]

    try:
        def scraped():
            try:
                return [r for r in query('up{job="gflow"}') if r["value"][1] == "1"] and \
                    query("gflow_jobs_waiting_gpus") and query("gflow_api_request_seconds_count") or None
            except OSError:
                return None
        g.wait_for(scraped, timeout=15, what="Prometheus scraping gflowd")
        d = json.loads(DASH.read_text())
        for title, e in queries(d):
            query(concrete(e).replace("[5m]", "[1m]"))
        reason = g.job(waiting)["reason"]
        got = {r["metric"]["reason"]: float(r["value"][1]) for r in query("gflow_jobs_waiting_gpus")}
        assert got[reason] == 2, (reason, got)
        assert float(query("gflow_jobs_oldest_waiting_seconds")[0]["value"][1]) >= 0
        assert float(query('sum(gflow_job_queue_wait_seconds_count{project="p"})')[0]["value"][1]) == 1
        assert query('gflow_api_request_seconds_count{route="/jobs/{id}",status="200"}')
        assert float(query('sum(gflow_jobs{project="q"})')[0]["value"][1]) == 2
    finally:
        prom.terminate()
        prom.wait(timeout=10)
