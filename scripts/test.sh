#!/bin/sh
# test.sh — what `make test` and CI run: build with gcc and clang (warnings
# are errors), run the unit tests in each, then the end-to-end suite against
# the gcc build and again against an ASan+UBSan build, a short fuzzing run,
# and last the Debian package as an admin would use it (test-package.sh).
set -eu
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
setup() { # dir, compiler, extra meson options
	if [ ! -f "$1/build.ninja" ]; then
		CC=$2 meson setup "$1" $3 >/dev/null
	fi
	ninja -C "$1"
}

echo "== gcc build + unit tests"
setup build gcc ""
meson test -C build --print-errorlogs --suite unit

echo "== clang build + unit tests"
setup build-clang clang ""
meson test -C build-clang --print-errorlogs --suite unit

echo "== release build (-O3 warnings differ; what make install builds)"
setup build-release gcc "-Dbuildtype=release"

echo "== ASan+UBSan build + unit tests"
setup build-asan gcc "-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
meson test -C build-asan --print-errorlogs --suite unit

XDIST=""
if $PY -c "import xdist" 2>/dev/null; then XDIST="-n 2"; fi

echo "== end-to-end tests (gcc build)"
GFLOW_BUILD_DIR="$PWD/build" $PY -m pytest -q $XDIST tests/e2e

echo "== end-to-end tests (ASan+UBSan build)"
GFLOW_BUILD_DIR="$PWD/build-asan" GFLOW_SANITIZED=1 $PY -m pytest -q $XDIST tests/e2e

echo "== fuzzing, short (each target ${FUZZ_SECS:-10} s; make fuzz runs 60 s)"
scripts/fuzz.sh "${FUZZ_SECS:-10}"

echo "== the Debian package: build, install, use, purge (make test-package)"
scripts/test-package.sh
