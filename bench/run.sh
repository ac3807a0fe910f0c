#!/bin/sh
# run.sh — what `make bench` runs: every benchmark case of bench/bench.py
# against the binaries in BUILD, written to docs/benchmarks.md.
#   bench/run.sh [BUILD] [bench.py options…]   (BUILD defaults to build)
# With GFLOW_BENCH_INSTALL_TSP=1, as root on Debian, task-spooler is
# installed first when it is missing, so the comparison rows are filled;
# without it nothing is installed and tsp is used only when present.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${1:-build}
[ $# -gt 0 ] && shift
if [ "${GFLOW_BENCH_INSTALL_TSP:-0}" = 1 ] && ! command -v tsp >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y task-spooler >/dev/null || echo "bench: could not install task-spooler; going on without it" >&2
	else
		echo "bench: not root (or no apt-get): not installing task-spooler" >&2
	fi
fi
/usr/bin/python3 "$here/bench.py" --build "$build" --out "$repo/docs/benchmarks.md" "$@"

# Load: 20 concurrent clients submitting and listing for 30 s (the e2e load
# test, at full length), with gqueue's latency added to the report.
report=$(mktemp /tmp/gflow-load.XXXXXX)
trap 'rm -f "$report"' EXIT
if GFLOW_BUILD_DIR=$(cd "$build" && pwd) GFLOW_LOAD_SECS=${GFLOW_LOAD_SECS:-30} GFLOW_LOAD_REPORT="$report" \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider "$repo/tests/e2e/test_load.py" >/dev/null 2>&1; then
	status="zero errors"
else
	status="FAILED (run tests/e2e/test_load.py to see why)"
fi
/usr/bin/python3 - "$report" "$status" >>"$repo/docs/benchmarks.md" <<'PY'
import json, sys
path, status = sys.argv[1], sys.argv[2]
try:
    r = json.load(open(path))
except ValueError:
    r = {}
print("\n## Load\n")
print(f"20 concurrent clients submitting and listing against one daemon: {status}.\n")
print("| operation | calls | p50 | p99 |")
print("|---|---|---|---|")
for name, v in sorted((r.get("ops") or {}).items()):
    if isinstance(v, dict) and "count" in v:
        p50, p99 = v.get("p50_ms"), v.get("p99_ms")
        fmt = lambda x: f"{x:.1f} ms" if isinstance(x, (int, float)) else "-"
        print(f"| {name} | {v['count']} | {fmt(p50)} | {fmt(p99)} |")
for k in ("clients", "secs", "jobs_submitted", "errors"):
    if k in r:
        print(f"\n{k}: {r[k]}")
PY

# The dashboard with 10,000 jobs in headless chromium (the e2e test's
# measurement), when chromium and selenium are there.
dash=$(mktemp /tmp/gflow-dash.XXXXXX)
trap 'rm -f "$report" "$dash"' EXIT
GFLOW_BUILD_DIR=$(cd "$build" && pwd) GFLOW_DASHBOARD_REPORT="$dash" \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider "$repo/tests/e2e/test_dashboard.py" \
	-k 10000 >/dev/null 2>&1 || true
/usr/bin/python3 - "$dash" >>"$repo/docs/benchmarks.md" <<'PY'
import json, sys
print("\n## Dashboard\n")
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    print("Not measured (needs chromium, chromium-driver and python3-selenium; see tests/e2e/test_dashboard.py).")
    sys.exit(0)
print(f"Headless chromium, {r['jobs']} jobs: the jobs table shown {r['shown_ms']:.0f} ms after navigation; "
      f"a sort and a scroll to the end {r['sort_scroll_ms']:.0f} ms; {r['rows_in_document']} rows in the document.")
PY
