"""Man pages: every page renders with `man -l`, every flag each program's
--help names (and its subcommands' --help) is in its page, and an install
puts the pages where `man` finds them."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import build_dir

PAGES = {  # page: the --help texts it must cover
    "gflow.1": [["gflow", "--help"]],
    "gflowd.1": [["gflowd", "--help"]],
    "gbatch.1": [["gbatch", "--help"]],
    "gqueue.1": [["gqueue", "--help"]],
    "ginfo.1": [["ginfo", "--help"]],
    "gjob.1": [["gjob", "--help"]] + [["gjob", c, "--help"] for c in (
        "show", "log", "attach", "close-sessions", "hold", "release", "update", "redo")],
    "gcancel.1": [["gcancel", "--help"]],
    "gctl.1": [["gctl", "--help"]],
    "gstats.1": [["gstats", "--help"]],
    "galloc.1": [["galloc", "--help"]],
}
# What every client takes before its arguments (gflow --help says so).
CLIENT_FLAGS = {"--socket"}
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")
ENV = {"LANG": "C", "LC_ALL": "C", "MANWIDTH": "100", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}


def render(path):
    r = subprocess.run(["man", "-l", str(path)], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), (path, r.stderr)
    # undo hyphenation at line ends and the backspace overstrike of bold
    text = re.sub(r".\x08", "", r.stdout)
    return re.sub(r"-\n\s+", "", text)


def flags_of(args):
    r = subprocess.run([str(build_dir() / args[0]), *args[1:]], capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stderr)
    return set(FLAG.findall(r.stdout))


@pytest.mark.parametrize("page", sorted(PAGES) + ["gflow.toml.5"])
def test_page_renders(page):
    path = build_dir() / "man" / page
    assert path.exists(), f"{path} was not built (is scdoc installed?)"
    text = render(path)
    name = page.rsplit(".", 1)[0]
    assert text.startswith(f"{name}({page.rsplit('.', 1)[1]})"), text[:200]
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
        assert f"\n{section}\n" in text, (page, section)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_help_flag_is_in_the_page(page):
    text = render(build_dir() / "man" / page)
    words = set(FLAG.findall(text))
    wanted = set()
    for args in PAGES[page]:
        wanted |= flags_of(args)
    if page != "gflowd.1":
        assert CLIENT_FLAGS <= flags_of(["gflow", "--help"])
        wanted |= CLIENT_FLAGS
    assert wanted, page
    missing = sorted(wanted - words)
    assert not missing, f"{page} lacks {missing}"


def test_install_puts_pages_where_man_finds_them(tmp_path):
    b = build_dir()
    r = subprocess.run(["meson", "install", "-C", str(b), "--no-rebuild", "--tags", "man",
                        "--destdir", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = subprocess.run(["meson", "introspect", "--buildoptions", str(b)], capture_output=True,
                            text=True, check=True).stdout
    import json
    opts = {o["name"]: o["value"] for o in json.loads(prefix)}
    mandir = tmp_path / opts["prefix"].lstrip("/") / opts["mandir"]
    # man finds PREFIX/share/man from PREFIX/bin on PATH, as after make install
    bindir = tmp_path / opts["prefix"].lstrip("/") / opts["bindir"]
    bindir.mkdir(parents=True, exist_ok=True)
    for page in list(PAGES) + ["gflow.toml.5"]:
        name, sec = page.rsplit(".", 1)
        assert (mandir / f"man{sec}" / page).exists(), page
        env = dict(ENV, PATH=f"{bindir}:/usr/bin:/bin")
        env.pop("MANPATH", None)
        w = subprocess.run(["man", "-w", sec, name], env=env, capture_output=True, text=True)
        assert w.returncode == 0 and w.stdout.strip() == str(mandir / f"man{sec}" / page), (page, w.stdout, w.stderr)


def test_config_page_names_every_key():
    """gflow.toml(5) names every section and key the config reader knows
    (the table in src/common/config.c)."""
    src = (Path(__file__).resolve().parents[2] / "src/common/config.c").read_text()
    table = src[src.index("static const struct setting settings[]"):]
    keys = re.findall(r'\{ "([a-z_.]*)", "([a-z_]+)"', table[:table.index("};")])
    sections = src[src.index("static const char *const sections[]"):]
    sections = re.findall(r'"([a-z_.]+)"', sections[:sections.index("};")])
    quota = src[src.index("static const char *const quota_keys[]"):]
    quota = re.findall(r'"([a-z_]+)"', quota[:quota.index("};")])
    assert "max_gpu_hours_per_day" in quota
    keys += [("quota", k) for k in quota]
    assert len(keys) > 10 and "quota" in sections
    text = render(build_dir() / "man" / "gflow.toml.5")
    missing = [f"[{s}] {k}" for s, k in keys if k not in text]
    missing += [f"[{s}]" for s in sections if s not in text]
    assert not missing, f"gflow.toml.5 lacks {missing}"
