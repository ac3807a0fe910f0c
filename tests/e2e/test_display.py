"""What users read cannot drive their terminal (issue 9, fault 10, display
part): names, commands, reasons and messages that hold control characters
or bytes that are not UTF-8 are shown escaped (\\e, \\a, \\xff) by gjob show,
gqueue's table/tree/group/CSV views, ginfo, gbatch --dry-run and error
messages; -o json stays exact."""
import json
import os
import subprocess

RAW = ("\x1b", "\x07", "\x9b")
TITLE = "\x1b]0;X\x07\x1b[2J"        # set the window title, clear the screen


def clean(out: bytes):
    text = out.decode()                # valid UTF-8: no stray bytes either
    for c in RAW:
        assert c not in text, repr(text)
    return text


def cli(g, *args):
    e = dict(g.env)
    return subprocess.run([str(a) for a in args], env=e, cwd=g.tmp, capture_output=True, timeout=60)


def test_gjob_show_and_dry_run_escape_the_command(gflow):
    g = gflow
    g.start()
    jid = g.submit("--hold", "--", "echo", TITLE)
    text = clean(cli(g, "gjob", "show", jid).stdout)
    assert "Command=echo $'\\e]0;X\\a\\e[2J'" in text
    assert g.job(jid)["command"] == ["echo", TITLE]       # stored exactly
    r = cli(g, "gbatch", "--dry-run", "--", "echo", TITLE)
    assert r.returncode == 0
    assert "$'\\e]0;X\\a\\e[2J'" in clean(r.stdout)


def test_queue_views_escape_names_and_reasons(gflow):
    g = gflow
    g.start()
    jid = g.submit("--", "nosuch" + TITLE)              # cannot run: a SystemError naming it
    j = g.wait_state(jid, {"Failed"})
    assert j["name"] == "nosuch\\e]0;X\\a\\e[2J"
    assert TITLE in j["reason"]
    for view in ([], ["-t"], ["-g"], ["-f", "JOBID,NAME,REASON"], ["-o", "csv", "-f", "NAME,REASON"]):
        r = cli(g, "gqueue", "-a", *view)
        assert r.returncode == 0, r.stderr
        assert "\\e]0;X\\a\\e[2J" in clean(r.stdout), view
    text = clean(cli(g, "gjob", "show", jid).stdout)
    assert "Reason=SystemError:" in text and "nosuch\\e]0;X\\a\\e[2J" in text
    # JSON stays exact
    r = cli(g, "gqueue", "-a", "-o", "json")
    assert json.loads(r.stdout)[0]["reason"] == j["reason"]
    r = cli(g, "gqueue", "-a", "-o", "json", "-f", "NAME,REASON")
    assert json.loads(r.stdout)[0]["REASON"] == j["reason"]


def test_ginfo_escapes_job_names(gflow):
    g = gflow
    g.gpus(1)
    g.start()
    link = g.tmp / ("sl" + TITLE + "eep")
    os.symlink("/bin/sleep", link)
    jid = g.submit("--gpus", "1", "--", str(link), "30")
    g.wait_state(jid, "Running")
    for args in ([], ["-l"]):
        text = clean(cli(g, "ginfo", *args).stdout)
        assert "sl\\e]0;X\\a\\e[2Jeep" in text, text
    cli(g, "gcancel", jid)


def test_messages_escape_what_they_quote(gflow):
    g = gflow
    g.start()
    r = cli(g, "gcancel", TITLE)
    assert r.returncode != 0
    assert "\\e]0;X\\a\\e[2J" in clean(r.stderr)
    r = cli(g, "gbatch", "--time", TITLE, "--", "true")
    assert r.returncode != 0
    assert "\\e]0;X\\a\\e[2J" in clean(r.stderr)
    r = cli(g, "gbatch", "-J", "x\u009b2J", "--", "true")     # a C1 control in a name
    assert r.returncode != 0 and "control" in clean(r.stderr)
