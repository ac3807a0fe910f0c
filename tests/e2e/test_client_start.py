"""What a client start does (issue 13, submission rate): the client is linked
statically where it can be (meson option static_client), reads the default
config once and only what it needs, and gbatch connects to the daemon while
it builds its request. These check that the behaviour stays what it was:
the home directory of a user without $HOME comes from the user database (a
static client asks getent(1), never NSS itself), and a request that cannot
be built is refused the same with and without a daemon.
"""
import os
import pwd
import subprocess

from conftest import SLOW

SHANGHAI_0800_UTC_0000 = 1893456000   # 2030-01-01T08:00 in Asia/Shanghai


def run_as(g, user, *args, env):
    """Run a client as user with exactly env (no HOME unless given)."""
    return subprocess.run([str(a) for a in args], user=user, group=user,
                          extra_groups=os.getgrouplist(user, pwd.getpwnam(user).pw_gid),
                          env=env, cwd=g.home_of(user), capture_output=True, text=True,
                          timeout=60 * SLOW)


def test_without_home_the_config_is_found_in_the_users_home(system_gflow):
    """HOME unset (cron, env -i): the config in the home that the user
    database gives is still read — here its timezone, by which --begin is
    read — as it is with HOME set."""
    g = system_gflow
    g.start()
    user = g.add_user("h")
    home = g.home_of(user)
    cfg = home / ".config/gflow/gflow.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('timezone = "Asia/Shanghai"\n')
    for d in (home / ".config", cfg.parent, cfg):
        os.chown(d, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    assert pwd.getpwnam(user).pw_dir == str(home)

    env = g.user_env(user, {"TZ": "UTC"})
    with_home = dict(env)
    del env["HOME"]
    ids = []
    for e in (with_home, env):
        r = run_as(g, user, "gbatch", "--hold", "--begin", "2030-01-01T08:00", "true", env=e)
        assert r.returncode == 0, r.stderr
        ids.append(int(r.stdout.split()[3]))
    for jid in ids:
        assert g.job(jid)["begin_at"] == SHANGHAI_0800_UTC_0000, jid
    # and the same user's times are shown in it: 08:00 in Shanghai
    r = run_as(g, user, "gjob", "show", str(ids[1]), env=env)
    assert r.returncode == 0 and "BeginTime=2030-01-01T08:00:00" in r.stdout, r.stdout + r.stderr


def test_a_request_that_cannot_be_built_is_refused_alike_with_and_without_a_daemon(gflow):
    """gbatch connects before it builds the request: a request that cannot
    be built is still refused with its own message and exit code (not the
    daemon's absence), nothing is stored, and the daemon goes on answering."""
    g = gflow
    bad = ["gbatch", "--hold", "--param", "a=1,2", "echo", "{b}"]
    down = g.cli(*bad)
    g.start()
    up = g.cli(*bad)
    for r in (down, up):
        assert r.returncode == 2, r.stderr
        assert "invalid template '{b}': unknown parameter 'b'" in r.stderr
        assert "not running" not in r.stderr
    assert down.stderr == up.stderr
    assert g.api("GET", "/jobs?users=all")[1]["jobs"] == []
    jid = g.submit("--hold", "true")
    assert g.job(jid)["state"] == "Hold"
