"""Arguments, environment and paths are bytes (issue 9, fault 8): words that
are not UTF-8 reach the job's execve exactly (argv, envp, chdir), through the
API and the store, under both executors; a value that cannot be carried is
refused naming it, never changed; gjob show prints such bytes escaped."""
import base64
import json
import os
import subprocess

import pytest

# Writes its argv (after OUT), $FOO and its working directory, as hex, to OUT.
PROBE = r"""
import json, os, sys
out = sys.argv[1]
rec = {"argv": [os.fsencode(a).hex() for a in sys.argv[2:]],
       "foo": os.environb.get(b"FOO", b"<unset>").hex(),
       "cwd": os.getcwdb().hex()}
with open(out, "w") as f:
    json.dump(rec, f)
"""


def run(g, *args, env=None, cwd=None):
    """A client program with bytes arguments and environment; bytes out."""
    e = {k.encode(): v.encode() for k, v in g.env.items()}
    e.update(env or {})
    return subprocess.run([a if isinstance(a, bytes) else str(a).encode() for a in args],
                          env=e, cwd=cwd or g.tmp, capture_output=True, timeout=60)


def submit(g, *args, env=None, cwd=None):
    r = run(g, "gbatch", *args, env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith(b"Submitted batch job ")][-1]
    return int(line.split()[3])


def probe(g):
    p = g.tmp / "probe.py"
    p.write_text(PROBE)
    return str(p)


def record(path):
    rec = json.loads(open(path).read())
    return ([bytes.fromhex(a) for a in rec["argv"]], bytes.fromhex(rec["foo"]),
            bytes.fromhex(rec["cwd"]))


def test_argv_env_and_cwd_bytes_reach_the_job(gflow_exec):
    g = gflow_exec
    g.start()
    workdir = bytes(g.tmp) + b"/dir-\xff\xe9"
    os.mkdir(workdir)
    out = str(g.tmp / "rec.json")
    words = [b"[%s]\\n", b"\xff\xfe", b"second", b"caf\xc3\xa9", b"\x1b]0;X\x07"]
    jid = submit(g, "--", "python3", probe(g), out, *words,
                 env={b"FOO": b"\xe9t\xe9"}, cwd=workdir)
    j = g.wait_state(jid, {"Finished", "Failed"})
    assert j["state"] == "Finished", (j, g.log_of(jid))
    argv, foo, cwd = record(out)
    assert argv == words
    assert foo == b"\xe9t\xe9"
    assert cwd == workdir
    # the API's form: a string when UTF-8, else {"base64"}; exact either way
    assert j["command"][3:] == [{"base64": base64.b64encode(w).decode()} if i == 1 else w.decode()
                                for i, w in enumerate(words)]
    assert j["cwd"] == {"base64": base64.b64encode(workdir).decode()}
    assert j["name"] == "python3"

    # the brief's own example, in the job's output
    jid = submit(g, "--", "printf", "[%s]\\n", b"\xff\xfe", "second")
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished"
    log = (g.data / "logs" / f"{jid}.log").read_bytes()
    assert b"[\xff\xfe]" in log and b"[second]" in log


def test_bytes_survive_the_store_update_and_redo(gflow):
    g = gflow
    g.start()
    out = str(g.tmp / "rec.json")
    jid = submit(g, "--hold", "--", "python3", probe(g), out, b"a\xff")
    before = g.job(jid)
    g.stop()
    g.start()
    assert g.job(jid)["command"] == before["command"]
    # gjob update with new words that are not UTF-8
    r = run(g, "gjob", "update", str(jid), "--", "python3", probe(g), out, b"b\xfe", b"\x80")
    assert r.returncode == 0, r.stderr
    run(g, "gjob", "release", str(jid))
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished"
    assert record(out)[0] == [b"b\xfe", b"\x80"]
    os.unlink(out)
    # redo re-reads the stored spec
    r = run(g, "gjob", "redo", str(jid))
    assert r.returncode == 0, r.stderr
    again = int(r.stdout.split()[3])
    assert g.wait_state(again, {"Finished", "Failed"})["state"] == "Finished"
    assert record(out)[0] == [b"b\xfe", b"\x80"]


def test_gjob_show_prints_bytes_escaped(gflow):
    g = gflow
    g.start()
    workdir = bytes(g.tmp) + b"/w\xff"
    os.mkdir(workdir)
    jid = submit(g, "--hold", "--", "printf", "[%s]\\n", b"\xff\xfe", "it's", b"\x1b[2J",
                 cwd=workdir)
    r = run(g, "gjob", "show", str(jid))
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()          # valid UTF-8: nothing raw is left
    assert "Command=printf '[%s]\\n' $'\\xff\\xfe' 'it'\\''s' $'\\e[2J'" in text
    assert f"WorkDir={os.fsdecode(bytes(g.tmp))}/w\\xff" in text
    assert "\x1b" not in text


def test_names_are_text(gflow):
    g = gflow
    g.start()
    r = run(g, "gbatch", "-J", b"bad\xffname", "--", "true")
    assert r.returncode != 0
    assert b"bad\\xffname" in r.stderr and b"UTF-8" in r.stderr
    r = run(g, "gbatch", "--project", b"p\xe9", "--", "true")
    assert r.returncode != 0 and b"p\\xe9" in r.stderr
    r = run(g, "gbatch", "-J", "x\u009b2J", "--", "true")     # a C1 control
    assert r.returncode != 0 and b"control" in r.stderr
    r = run(g, "gbatch", "--param", b"lr=0.1,\xff", "--", "echo", "{lr}")
    assert r.returncode != 0 and b"\\xff" in r.stderr and b"UTF-8" in r.stderr
    # a program whose name is not text gives an escaped default name
    prog = bytes(g.tmp) + b"/run-\xff"
    with open(prog, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(prog, 0o755)
    jid = submit(g, "--", prog)
    assert g.job(jid)["name"] == "run-\\xff"
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished"


API_CASES = {
    "bad-base64": ({"command": ["echo", {"base64": "!!"}]}, ["'command' item 1", "base64"]),
    "base64-with-nul": ({"command": ["echo", {"base64": "YQBi"}]}, ["'command' item 1", "nul"]),
    "base64-extra-key": ({"command": ["echo", {"base64": "YQ==", "x": 1}]}, ["'command' item 1"]),
    "script-base64-nul": ({"script": {"base64": "L3gAeQ=="}}, ["'script'", "nul"]),
}


@pytest.mark.parametrize("case", list(API_CASES))
def test_api_refuses_bad_byte_strings(gflow, case):
    g = gflow
    g.start()
    spec, words = API_CASES[case]
    job = {"command": ["true"], "hold": True}
    job.update(spec)
    st, body = g.api("POST", "/jobs", {"jobs": [job], "env": [], "cwd": "/"})
    assert st == 400, body
    for w in words:
        assert w.lower() in body["error"].lower(), body


def test_api_takes_base64_everywhere(gflow):
    g = gflow
    g.start()
    b64 = lambda b: {"base64": base64.b64encode(b).decode()}
    out = str(g.tmp / "rec.json")
    workdir = bytes(g.tmp) + b"/c\x01d"
    os.mkdir(workdir)
    st, body = g.api("POST", "/jobs", {
        "jobs": [{"command": ["python3", b64(probe(g).encode()), out, b64(b"x\xffy"), "plain"]}],
        "env": [b64(b"FOO=\xfe"), "PATH=/usr/bin:/bin"],
        "cwd": b64(workdir)})
    assert st == 201, body
    jid = body["jobs"][0]["id"]
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished"
    assert record(out) == ([b"x\xffy", b"plain"], b"\xfe", workdir)
    # plain text comes back as plain strings
    assert g.job(jid)["command"][4] == "plain"
