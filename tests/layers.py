#!/usr/bin/env python3
"""The layering of src/, checked from the object files.

For each program (the daemon, the client, the runner) it reads the symbols
each object defines and needs (nm), and draws the file-level call graph:
file A -> file B when A needs a symbol B defines. It then checks:

  1. No file-level cycle in the scopes of CYCLE_SCOPES (no file calls a file
     that, transitively, calls back into it).
  2. In the daemon, every symbol a layer's objects need comes from the same
     layer, a lower one (LAYERS, top first), src/common, or a library.

Usage: layers.py BUILD_DIR [--graph]
  --graph       print the daemon's file graph (who calls whom)
Cycles outside CYCLE_SCOPES are reported as known and do not fail.
Exit status 0 when the checks pass, 1 when they fail.
"""
import json
import os
import subprocess
import sys

# The daemon's layers, top first: a layer may call itself and any layer
# after it (docs/design.md, "Files"). Layers on one line would share a rank
# and not call each other. src/common is below them all.
LAYERS = [
    ["main"],       # main, the loop, gflowd's commands, the event wiring
    ["api"],        # HTTP routes, replies, decoding, auth, the dashboard
    ["observe"],    # notifications, metrics, history
    ["engine"],     # every job transition, the pass, cascades
    ["share"],      # GPU views, quotas, reservations, fair share, usage
    ["run"],        # spawning, run dirs, standby, tmux, reaping, tracking
    ["store"],      # SQLite, rows, transactions
    ["state"],      # struct server, the job table, deps index, hooks
    ["gpu"],        # NVML and foreign processes (knows no jobs)
    ["core"],       # job, jobw, sched_pass(): pure data and functions
]

# Where a file-level cycle fails the test (a prefix of the source path):
# everywhere (issue 27 broke the last circles).
CYCLE_SCOPES = ["src/daemon", "src/runner", "src/client", "src/common"]

# The programs: the object folders linked together (meson's target dirs).
PROGRAMS = {
    "daemon": ["libgfdaemon.a.p", "gflowd.p", "libgfcommon.a.p", "libgfcore.a.p", "libgfhome.a.p"],
    "client": ["libgfclient.a.p", "gflow.p"],
    "runner": ["gflow-runner.p", "libgfcore.a.p"],
}


def objects(build):
    """{target dir: [(object path, source path relative to the root)]}"""
    with open(os.path.join(build, "compile_commands.json")) as f:
        cmds = json.load(f)
    out = {}
    for c in cmds:
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        root = os.path.normpath(os.path.join(build, ".."))
        rel = os.path.relpath(src, root)
        if not rel.startswith("src/"):
            rel = "gen/" + os.path.basename(rel)      # generated (web assets)
        tdir = c["output"].split("/")[0]
        out.setdefault(tdir, []).append((os.path.join(build, c["output"]), rel))
    return out


def symbols(obj):
    """(defined, undefined) global symbols of one object."""
    r = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def graph(objs):
    """{file: {file it calls: [symbols]}} over the given objects."""
    syms = {rel: symbols(o) for o, rel in objs}
    owner = {}
    for rel, (d, _) in syms.items():
        for s in d:
            owner.setdefault(s, rel)
    g = {}
    for rel, (_, u) in syms.items():
        edges = g.setdefault(rel, {})
        for s in sorted(u):
            o = owner.get(s)
            if o is not None and o != rel:
                edges.setdefault(o, []).append(s)
    return g


def cycles(g):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def layer_of(rel):
    """The daemon layer of a source file, "common", or None (outside)."""
    p = rel.split("/")
    if p[0] == "src" and p[1] == "common":
        return "common"
    if p[0] == "src" and p[1] == "daemon":
        return p[2] if len(p) > 3 else "(flat)"
    if p[0] == "gen":
        return "api"                 # the web assets: served by api/web.c
    return None


def rank(layer):
    if layer == "common":
        return len(LAYERS)
    for i, row in enumerate(LAYERS):
        if layer in row:
            return i
    return None


def layer_errors(g):
    errs = []
    for a, edges in sorted(g.items()):
        la = layer_of(a)
        ra = rank(la)
        for b, syms in sorted(edges.items()):
            lb = layer_of(b)
            if (lb == la and la != "(flat)") or lb == "common":
                continue
            rb = rank(lb)
            if ra is None or rb is None or rb <= ra:
                errs.append("%s (%s) calls %s (%s): %s" % (a, la, b, lb, ", ".join(syms[:6])))
    return errs


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    build = args[0]
    objs = objects(build)
    failed = False
    for prog, dirs in PROGRAMS.items():
        po = [x for d in dirs for x in objs.get(d, [])]
        if not po:
            continue
        g = graph(po)
        if prog == "daemon" and "--graph" in args:
            for a, edges in sorted(g.items()):
                for b, syms in sorted(edges.items()):
                    print("%s -> %s: %s" % (a, b, " ".join(syms)))
        for comp in cycles(g):
            checked = any(f.startswith(sc) for f in comp for sc in CYCLE_SCOPES)
            print("%s: cycle of %d files%s: %s" % (prog, len(comp),
                      "" if checked else " (known, not checked)", " ".join(comp)))
            if checked:
                failed = True
        if prog == "daemon":
            for e in layer_errors(g):
                print("daemon: layering: " + e)
                failed = True
    if failed:
        print("layers: FAIL (layers, top first: %s)" % " > ".join("/".join(r) for r in LAYERS))
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
