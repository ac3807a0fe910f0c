"""Messages (issue 9, fault 12): each job id is named once ("job 1 has
already ended", not "job 1: job 1 has already ended") by gcancel and every
gjob change; a conda environment that cannot be activated is refused at
submission ("conda not found for --conda-env myenv"), while the implicit
$CONDA_DEFAULT_ENV is skipped with a warning."""
import re


def one_line_naming(stderr, jid):
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert len(re.findall(rf"\bjob {jid}\b", lines[0])) == 1, lines[0]
    assert f"job {jid}: job {jid}" not in lines[0]
    return lines[0]


def test_each_job_is_named_once(gflow):
    g = gflow
    g.start()
    done = g.submit("--", "true")
    g.wait_state(done, "Finished")
    r = g.cli("gcancel", done)
    assert r.returncode != 0
    assert one_line_naming(r.stderr, done) == f"gcancel: job {done} has already ended (Finished)"
    r = g.cli("gcancel", "--dry-run", done)
    assert r.returncode != 0 and "already ended" in one_line_naming(r.stderr, done)
    r = g.cli("gjob", "hold", done)
    assert r.returncode != 0 and "only queued jobs can be held" in one_line_naming(r.stderr, done)
    r = g.cli("gjob", "release", done)
    assert r.returncode != 0 and "only held jobs" in one_line_naming(r.stderr, done)
    r = g.cli("gjob", "update", done, "--priority", "3")
    assert r.returncode != 0 and "only queued or held" in one_line_naming(r.stderr, done)
    held = g.submit("--hold", "--", "true")
    r = g.cli("gjob", "redo", held)
    assert r.returncode != 0 and "only ended jobs" in one_line_naming(r.stderr, held)
    # an error that does not name the job gets it once, in front
    r = g.cli("gjob", "update", held, "--gpus", "64")
    assert r.returncode != 0
    assert one_line_naming(r.stderr, held).startswith(f"gjob: job {held}: ")
    r = g.cli("gcancel", "999")
    assert r.returncode != 0 and "does not exist" in one_line_naming(r.stderr, 999)


def fake_conda(g):
    """A `conda` whose shell hook defines an `activate` that exports the
    environment's name (enough for gflow's wrapper)."""
    d = g.tmp / "condabin"
    d.mkdir()
    (d / "conda").write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = shell.bash ]; then\n"
        "  echo 'conda() { [ \"$1\" = activate ] && export FAKE_CONDA_ENV=\"$2\"; }'\n"
        "fi\n")
    (d / "conda").chmod(0o755)
    return d


def test_conda_env_without_conda_is_refused_at_submission(gflow):
    g = gflow
    g.start()
    r = g.cli("gbatch", "--conda-env", "myenv", "--", "true")
    assert r.returncode != 0
    assert "conda not found for --conda-env myenv" in r.stderr
    script = g.tmp / "job.sh"
    script.write_text("#!/bin/sh\n# GFLOW --conda-env myenv\necho hi\n")
    script.chmod(0o755)
    r = g.cli("gbatch", str(script))
    assert r.returncode != 0 and "conda not found for --conda-env myenv" in r.stderr
    jid = g.submit("--hold", "--", "true")
    r = g.cli("gjob", "update", jid, "--conda-env", "myenv")
    assert r.returncode != 0 and "conda not found for --conda-env myenv" in r.stderr
    assert g.cli("gqueue", "-a", "-f", "JOBID", check=True).stdout.split() == ["JOBID", str(jid)]

    # the implicit default: the job runs without it, and gbatch says so
    r = g.cli("gbatch", "--", "sh", "-c", "echo env=${FAKE_CONDA_ENV:-none}",
              env={"CONDA_DEFAULT_ENV": "myenv"})
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "myenv" in r.stderr
    jid = int(r.stdout.split()[3])
    j = g.wait_state(jid, {"Finished", "Failed"})
    assert j["state"] == "Finished" and j["conda_env"] is None
    assert "env=none" in g.log_of(jid)
    assert "command not found" not in g.log_of(jid)


def test_conda_env_with_conda_is_activated(gflow):
    g = gflow
    g.start()
    d = fake_conda(g)
    path = f"{d}:{g.env['PATH']}"
    jid = g.submit("--conda-env", "myenv", "--", "sh", "-c", "echo env=$FAKE_CONDA_ENV",
                   env={"PATH": path})
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished", g.log_of(jid)
    assert "env=myenv" in g.log_of(jid)
    # $CONDA_EXE is enough for the check (conda's shell function case)
    r = g.cli("gbatch", "--hold", "--conda-env", "other", "--", "true",
              env={"CONDA_EXE": str(d / "conda")})
    assert r.returncode == 0, r.stderr
    # the implicit default is used when conda is there
    jid = g.submit("--", "sh", "-c", "echo env=$FAKE_CONDA_ENV",
                   env={"PATH": path, "CONDA_DEFAULT_ENV": "base"})
    assert g.wait_state(jid, {"Finished", "Failed"})["state"] == "Finished", g.log_of(jid)
    assert "env=base" in g.log_of(jid)
