"""Notifications: webhooks and mail reach real sinks on 127.0.0.1 with the
documented payloads; per-job mail; an endpoint that never answers does not
slow the API; a full queue drops the oldest; gctl notify test."""
import email
import email.policy
import getpass
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import SLOW

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class Sink:
    """An HTTP server that records each POST (path, headers, JSON body)."""

    def __init__(self, status=200):
        self.posts = []
        self.status = status
        sink = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                sink.posts.append((self.path, dict(self.headers), json.loads(body)))
                self.send_response(sink.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def events(self):
        return [p[2]["event"] for p in self.posts]

    def of(self, event, jid=None):
        return [p[2] for p in self.posts
                if p[2]["event"] == event and (jid is None or p[2].get("job", {}).get("id") == jid)]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Mailbox:
    """A real SMTP server (aiosmtpd) that keeps what it is given."""

    def __init__(self, auth=None):
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        self.mails = []
        self.logins = []
        box = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                box.mails.append((envelope.mail_from, list(envelope.rcpt_tos),
                                  envelope.content.decode("utf-8", "replace")))
                return "250 OK"

        kw = {}
        if auth:
            def check(server, session, envelope, mechanism, data):
                box.logins.append((data.login.decode(), data.password.decode()))
                return AuthResult(success=(data.login.decode(), data.password.decode()) == auth)
            kw = dict(authenticator=check, auth_require_tls=False)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.ctl = Controller(Handler(), hostname="127.0.0.1", port=self.port, **kw)
        self.ctl.start()

    def to(self, addr):
        return [m for m in self.mails if addr in m[1]]

    def close(self):
        self.ctl.stop()


class Silent:
    """A listener that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/never"

    def close(self):
        self.sock.close()


@pytest.fixture
def sink():
    s = Sink()
    yield s
    s.close()


def configure(g, text):
    d = g.home / ".config/gflow"
    d.mkdir(parents=True, exist_ok=True)
    (d / "gflow.toml").write_text(text)


def test_webhook_gets_the_documented_payloads(gflow, sink):
    configure(gflow, f"""
[notifications]
enabled = true
max_concurrent_deliveries = 2

[[notifications.webhooks]]
url = "{sink.url}"
events = ["*"]
headers = {{ Authorization = "Bearer token123" }}
timeout_secs = 10
max_retries = 3
""")
    gflow.start()
    gflow.wait_for(lambda: sink.of("scheduler_online"), what="scheduler_online")
    ok = gflow.submit("true")
    bad = gflow.submit("false")
    gflow.wait_state(ok, "Finished")
    gflow.wait_state(bad, "Failed")
    gflow.wait_for(lambda: sink.of("job_completed", ok) and sink.of("job_failed", bad), what="job ends")
    done = sink.of("job_completed", ok)[0]
    assert RFC3339.match(done["timestamp"]), done
    assert done["job"]["id"] == ok and done["job"]["state"] == "Finished"
    assert done["job"]["user"] == gflow.env["USER"] or done["job"]["user"]
    assert done["scheduler"]["version"] and done["scheduler"]["host"] == socket.gethostname()
    assert sink.of("job_submitted", ok) and sink.of("job_started", ok)
    assert sink.of("job_failed", bad)[0]["job"]["exit_code"] == 1
    path, headers, _ = sink.posts[0]
    assert path == "/hook"
    assert headers["Authorization"] == "Bearer token123"
    assert headers["Content-Type"] == "application/json"

    # held, released, updated, cancelled
    h = gflow.submit("--hold", "sleep", "30")
    gflow.cli("gjob", "update", str(h), "--priority", "7", check=True)
    gflow.cli("gjob", "release", str(h), check=True)
    gflow.wait_state(h, "Running")
    gflow.cli("gjob", "hold", str(gflow.submit("--hold", "true")), check=False)
    gflow.cli("gcancel", str(h), check=True)
    gflow.wait_for(lambda: sink.of("job_cancelled", h), what="job_cancelled")
    assert sink.of("job_updated", h)[0]["job"]["state"] == "Hold"
    assert sink.of("job_released", h)
    status = gflow.cli("gflowd", "status", check=True).stdout
    m = re.search(r"notify: +(\d+) sent, (\d+) failed, (\d+) dropped", status)
    assert m and int(m.group(1)) >= 8 and m.group(2) == "0" and m.group(3) == "0", status


def test_webhook_subscriptions_and_user_filter(gflow, sink):
    other, mine, every = Sink(), Sink(), Sink()
    try:
        configure(gflow, f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
events = ["job_failed", "job_timeout"]
[[notifications.webhooks]]
url = "{other.url}"
events = ["*"]
filter_users = ["someone-else"]
[[notifications.webhooks]]
url = "{mine.url}"
events = ["scheduler_online", "job_failed"]
filter_users = ["{getpass.getuser()}"]
[[notifications.webhooks]]
url = "{every.url}"
events = ["scheduler_online"]
""")
        gflow.start()
        gflow.wait_state(gflow.submit("true"), "Finished")
        bad = gflow.submit("false")
        gflow.wait_state(bad, "Failed")
        gflow.wait_for(lambda: sink.of("job_failed", bad), what="job_failed")
        gflow.wait_for(lambda: mine.of("job_failed", bad), what="job_failed to the listed user's target")
        # scheduler_online has no user: only the target without filter_users gets it
        gflow.wait_for(lambda: every.of("scheduler_online"), what="scheduler_online")
        time.sleep(0.5)
        assert sink.events() == ["job_failed"]
        assert other.events() == []
        assert mine.events() == ["job_failed"]
    finally:
        other.close()
        mine.close()
        every.close()


def test_mail_global_and_per_job(gflow):
    box = Mailbox(auth=("mailer", "s3cret"))
    try:
        configure(gflow, f"""
[notifications]
enabled = true
[[notifications.emails]]
smtp_url = "smtp://mailer:s3cret@127.0.0.1:{box.port}"
from = "gflow <noreply@example.com>"
to = ["Opérations <ops@example.com>"]
events = ["job_failed"]
subject_prefix = "[gflow-test]"
timeout_secs = 10
max_retries = 1
""")
        gflow.start()
        bad = gflow.submit("--notify-email", "alice@example.com", "--name", "bad-one", "false")
        ok = gflow.submit("--notify-email", "bob@example.com,carol@example.com", "--name", "训练-ü",
                          "--notify-on", "job_started,job_completed", "true")
        script = gflow.tmp / "job.sh"
        script.write_text("#!/bin/sh\n# GFLOW --notify-email=dave@example.com\n# GFLOW --notify-on=job_failed\nexit 3\n")
        script.chmod(0o755)
        viadir = gflow.submit(str(script))
        gflow.wait_state(bad, "Failed")
        gflow.wait_state(ok, "Finished")
        gflow.wait_state(viadir, "Failed")
        gflow.wait_for(lambda: len(box.to("ops@example.com")) >= 2 and box.to("alice@example.com")
                       and len(box.to("bob@example.com")) >= 2 and box.to("dave@example.com"), what="mails")
        assert f"job {viadir} (job.sh): failed" in box.to("dave@example.com")[0][2]
        frm, rcpt, text = box.to("alice@example.com")[0]
        assert frm == "noreply@example.com" and rcpt == ["alice@example.com"]
        assert "Subject: [gflow-test] gflow on" in text and f"job {bad} (bad-one): failed" in text
        assert "From: gflow <noreply@example.com>" in text and "event: job_failed" in text
        # both failures reach ops@, in the order the jobs ended (they run side by side)
        text, = [t for _, _, t in box.to("ops@example.com") if f"job {bad} (bad-one): failed" in t]
        to = email.message_from_string(text, policy=email.policy.default)["To"]
        assert to.addresses[0].display_name == "Opérations" and to.addresses[0].addr_spec == "ops@example.com"
        bob = [m[2] for m in box.to("bob@example.com")]
        assert any("started" in t for t in bob) and any("completed" in t for t in bob)
        # a subject that is not ASCII is sent as RFC 2047 encoded words
        subjects = [email.message_from_string(t, policy=email.policy.default)["Subject"] for t in bob]
        assert any(sj.endswith(f"job {ok} (训练-ü): completed") for sj in subjects), subjects
        assert all(ord(ch) < 128 for t in bob for ch in t.split("\r\n\r\n")[0]), bob
        assert box.to("carol@example.com")
        assert ("mailer", "s3cret") in box.logins
        # the ops mailbox only takes job_failed: the finished job sent it nothing
        assert all(f"job {ok}" not in m[2] for m in box.to("ops@example.com"))
        # gjob show names the job's own mail; a transport is there
        shown = gflow.cli("gjob", "show", str(viadir), check=True).stdout
        assert "Notify=dave@example.com on job_failed\n" in shown, shown
    finally:
        box.close()


def test_per_job_mail_refusals(gflow, sink):
    configure(gflow, f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
""")
    gflow.start()
    # no mail transport: the job is submitted all the same, with one line of warning,
    # and gjob show says its mail has no transport
    r = gflow.cli("gbatch", "--hold", "--notify-email", "a@example.com", "true")
    assert r.returncode == 0 and r.stdout.startswith("Submitted batch job"), r.stderr
    warn = r.stderr.splitlines()
    assert len(warn) == 1 and warn[0].startswith("gbatch: warning: no mail transport") and \
        "[[notifications.emails]]" in warn[0], r.stderr
    jid = int(r.stdout.split()[3])
    shown = gflow.cli("gjob", "show", str(jid), check=True).stdout
    assert ("Notify=a@example.com on job_completed,job_failed,job_timeout,job_cancelled "
            "(no mail transport)\n") in shown, shown
    script = gflow.tmp / "mail.sh"
    script.write_text("#!/bin/sh\n# GFLOW --notify-email=dave@example.com\n# GFLOW --notify-on=job_failed\ntrue\n")
    script.chmod(0o755)
    r = gflow.cli("gbatch", str(script))
    assert r.returncode == 0 and r.stderr.count("\n") == 1 and "no mail transport" in r.stderr, r.stderr
    sid = int(r.stdout.split()[3])
    gflow.wait_state(sid, "Finished")
    shown = gflow.cli("gjob", "show", str(sid), check=True).stdout
    assert "Notify=dave@example.com on job_failed (no mail transport)\n" in shown, shown
    assert gflow.job(sid)["notify_transport"] is False
    # a job without mail is not warned
    r = gflow.cli("gbatch", "true")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = gflow.cli("gbatch", "--notify-email", "a@example.com", "--notify-on", "gpu_available", "true")
    assert r.returncode != 0 and "not about one job" in r.stderr, r.stderr
    r = gflow.cli("gbatch", "--notify-email", "a@example.com", "--notify-on", "job_done", "true")
    assert r.returncode != 0 and "unknown notification event 'job_done'" in r.stderr, r.stderr
    r = gflow.cli("gbatch", "--notify-email", "not-an-address", "true")
    assert r.returncode != 0 and "invalid email address" in r.stderr, r.stderr
    st, body = gflow.api("POST", "/jobs", {"cwd": str(gflow.tmp), "jobs": [{"command": ["true"], "notify_on": "job_failed"}]})
    assert st == 400 and "notify_email" in body["error"], body


def one_silent_hook(g, silent, more):
    """Start g with one worker and one webhook that never answers."""
    configure(g, f"""
[notifications]
enabled = true
max_concurrent_deliveries = 1
[[notifications.webhooks]]
url = "{silent.url}"
{more}
""")
    g.start()


def test_silent_endpoint_does_not_slow_the_api(gflow):
    silent = Silent()
    try:
        one_silent_hook(gflow, silent, "timeout_secs = 2\nmax_retries = 0")
        for _ in range(5):
            gflow.submit("--hold", "true")
        # every delivery waits 2 s for an answer that never comes; the one
        # worker is busy for ~10 s, the loop and the API are not
        t0 = time.monotonic()
        for _ in range(5):
            gflow.cli("gqueue", check=True)
        # a blocked loop would make these wait for the deliveries (2 s each)
        assert time.monotonic() - t0 < 6.0 * SLOW
        info = gflow.api("GET", "/info")[1]["notifications"]
        assert info["queued"] >= 1, info
        gflow.wait_for(lambda: gflow.api("GET", "/info")[1]["notifications"]["failed"] >= 2,
                       what="failures counted", timeout=30)
        log = gflow.daemon_log()
        assert "notification job_submitted to webhook 1 (http://127.0.0.1:" in log
        assert "failed after 1 attempt: " in log
    finally:
        silent.close()


def test_full_queue_drops_the_oldest(gflow):
    silent = Silent()
    try:
        one_silent_hook(gflow, silent, "timeout_secs = 30")
        gflow.cli("gbatch", "--hold", "--array", "1-1100", "true", check=True)
        info = gflow.wait_for(lambda: (lambda n: n if n["dropped"] > 0 else None)(
            gflow.api("GET", "/info")[1]["notifications"]), what="drops")
        assert info["queued"] <= 1024 and info["dropped"] >= 1100 + 1 - 1024 - 1, info
        assert "the queue is full (1024 waiting): dropped" in gflow.daemon_log()
        assert "dropped" in gflow.cli("gflowd", "status", check=True).stdout
    finally:
        silent.close()


def test_retries_until_the_endpoint_answers(gflow):
    flaky = Sink(status=503)
    try:
        configure(gflow, f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{flaky.url}"
events = ["job_submitted"]
max_retries = 3
""")
        gflow.start()
        jid = gflow.submit("--hold", "true")
        gflow.wait_for(lambda: len(flaky.of("job_submitted", jid)) >= 2, what="a retry")
        flaky.status = 200
        gflow.wait_for(lambda: gflow.api("GET", "/info")[1]["notifications"]["sent"] == 1,
                       what="the retried delivery", timeout=30)
        assert gflow.api("GET", "/info")[1]["notifications"]["failed"] == 0
    finally:
        flaky.close()


def test_gctl_notify_test(gflow, sink):
    failing = Sink(status=500)
    box = Mailbox()
    try:
        configure(gflow, f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
events = ["job_failed"]
[[notifications.webhooks]]
url = "{failing.url}?key=secret"
[[notifications.emails]]
smtp_url = "smtp://127.0.0.1:{box.port}"
from = "noreply@example.com"
to = ["ops@example.com"]
[[notifications.emails]]
smtp_url = "smtp://127.0.0.1:{box.port}"
from = "noreply@example.com"
[[notifications.emails]]
smtp_url = "smtp://127.0.0.1:{box.port}?tls=required"
from = "noreply@example.com"
to = ["tls@example.com"]
""")
        gflow.start()
        r = gflow.cli("gctl", "notify", "test", "--event", "job_timeout")
        assert r.returncode == 1, r.stdout + r.stderr
        out = r.stdout
        assert "test event job_timeout:" in out
        assert f"webhook 1 ({sink.url}): sent, HTTP 200" in out
        assert f"webhook 2 (http://127.0.0.1:{failing.port}/hook): failed, HTTP 500" in out
        assert "secret" not in out
        assert f"email 1 (smtp://127.0.0.1:{box.port}): sent" in out
        assert "email 2" in out and "skipped" in out
        # the server offers no STARTTLS: ?tls=required refuses to send in clear
        assert f"email 3 (smtp://127.0.0.1:{box.port}): failed" in out
        assert not box.to("tls@example.com")
        p = sink.of("job_timeout")[0]
        assert p["test"] is True and p["job"]["state"]
        assert any("event: job_timeout" in m[2] for m in box.to("ops@example.com"))
        r = gflow.cli("gctl", "notify", "test", "--event", "nope")
        assert r.returncode == 2 and "unknown event 'nope'" in r.stderr
    finally:
        failing.close()
        box.close()


def test_gctl_notify_test_when_off(gflow):
    gflow.start()
    r = gflow.cli("gctl", "notify", "test")
    assert r.returncode == 1 and "[notifications] enabled = true" in r.stderr, r.stderr
    assert "notify:    off" in gflow.cli("gflowd", "status", check=True).stdout


def one_webhook(sink, event):
    return f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
events = ["{event}"]
"""


def libcurl_mapped(pid):
    with open(f"/proc/{pid}/maps") as f:
        return any(line.rsplit("/", 1)[-1].startswith("libcurl") for line in f.read().splitlines())


def test_libcurl_is_loaded_only_for_notification_targets(gflow, sink):
    """A daemon with no target never maps libcurl (and its TLS, LDAP and
    SSH libraries: ~6 MiB resident); one with a target loads it at start
    and delivers."""
    gflow.start()
    assert not libcurl_mapped(gflow.proc.pid)
    gflow.cli("gflowd", "stop", check=True)
    gflow.proc.wait(timeout=30)
    configure(gflow, one_webhook(sink, "job_submitted"))
    gflow.start()
    assert libcurl_mapped(gflow.proc.pid)
    gflow.cli("gbatch", "--hold", "true", check=True)
    gflow.wait_for(lambda: sink.of("job_submitted"), what="the job_submitted webhook")


def test_gpu_available(gflow, sink):
    gflow.gpus(2)
    configure(gflow, one_webhook(sink, "gpu_available"))
    gflow.start()
    jid = gflow.submit("--gpus", "1", "sleep", "30")
    j = gflow.wait_state(jid, "Running")
    gflow.cli("gcancel", str(jid), check=True)
    gpu = j["gpu_ids"][0]
    gflow.wait_for(lambda: [p for p in sink.of("gpu_available") if p["gpu"]["index"] == gpu],
                   what="gpu_available")


def test_reservation_created_and_cancelled(gflow, sink):
    gflow.gpus(2)
    configure(gflow, f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
events = ["reservation_created", "reservation_cancelled"]
""")
    gflow.start()
    user = gflow.env["USER"]
    start = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() + 7200))
    gflow.cli("gctl", "reserve", "create", "--user", user, "--gpu-spec", "1", "--start", start,
              "--duration", "1h", check=True)
    gflow.wait_for(lambda: sink.of("reservation_created"), what="reservation_created")
    made = sink.of("reservation_created")[0]["reservation"]
    assert made["user"] == user and made["id"] == 1, made
    gflow.cli("gctl", "reserve", "cancel", "1", check=True)
    gflow.wait_for(lambda: sink.of("reservation_cancelled"), what="reservation_cancelled")
    gone = sink.of("reservation_cancelled")[0]["reservation"]
    assert gone["id"] == 1 and gone["status"] == "cancelled", gone
    assert sink.events() == ["reservation_created", "reservation_cancelled"]


def test_config_mistakes_are_refused(gflow):
    configure(gflow, """
[notifications]
enabled = true
[[notifications.emails]]
smtp_url = "smtp://localhost:25?tls=maybe"
from = "noreply@example.com"
""")
    r = gflow.cli("gflowd", "run", "--check")
    assert r.returncode != 0 and "tls=required" in r.stderr, r.stderr
    configure(gflow, """
[[notifications.webhooks]]
url = "http://localhost/"
events = ["job_finished"]
""")
    r = gflow.cli("gflowd", "run", "--check")
    assert r.returncode != 0 and "unknown event 'job_finished'" in r.stderr, r.stderr


def test_system_daemon_notifies_about_each_users_jobs(system_gflow, sink):
    g = system_gflow
    box = Mailbox()
    try:
        etc = g.root / "etc/gflow"
        etc.mkdir(parents=True)
        (etc / "gflow.toml").write_text(f"""
[notifications]
enabled = true
[[notifications.webhooks]]
url = "{sink.url}"
events = ["job_completed"]
[[notifications.emails]]
smtp_url = "smtp://127.0.0.1:{box.port}"
from = "gflow <root@example.com>"
""")
        g.start()
        a = g.add_user("a")
        jid = g.submit_as(a, "--notify-email", "a@example.com", "true")
        g.wait_state(jid, "Finished")
        g.wait_for(lambda: sink.of("job_completed", jid) and box.to("a@example.com"), what="notifications")
        assert sink.of("job_completed", jid)[0]["job"]["user"] == a
        assert f"job {jid}" in box.to("a@example.com")[0][2]
        # what the job's owner asked for is theirs to see, not others'
        b = g.add_user("b")
        probe = ("import http.client, socket, sys\n"
                 "c = http.client.HTTPConnection('x')\n"
                 "c.sock = socket.socket(socket.AF_UNIX); c.sock.connect(sys.argv[1])\n"
                 "c.request('GET', '/jobs/' + sys.argv[2]); print(c.getresponse().read().decode())\n")
        shown = g.as_user(b, "/usr/bin/python3", "-c", probe, str(g.socket), str(jid), check=True).stdout
        assert json.loads(shown)["job"]["id"] == jid and "notify" not in shown, shown
        mine = g.as_user(a, "/usr/bin/python3", "-c", probe, str(g.socket), str(jid), check=True).stdout
        assert json.loads(mine)["job"]["notify_email"] == "a@example.com", mine
        r = g.as_user(a, "gctl", "notify", "test")
        assert r.returncode == 1 and "only an admin" in r.stderr, r.stderr
        st, body = g.api("POST", "/notify/test", {"event": "scheduler_online"})
        assert st == 200 and body["results"][0]["result"] == "sent", body
    finally:
        box.close()
