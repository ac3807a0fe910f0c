#!/bin/sh
# test-package.sh — `make test-package`, and the last step of `make test`:
# build the Debian package once (make deb, without its own unit tests:
# make test ran them) and test it as an admin would use it
# (tests/package/test_package.py: install, gflowd up --system, jobs as two
# users, man, completion, purge). Needs root; it is skipped otherwise. It
# installs gflow on this machine for the length of the test and purges it.
# Alone, not beside other tests: while it runs, the machine's daemon is up
# and clients without a daemon of their own would find it.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
if [ "$(id -u)" -ne 0 ]; then
	echo "test-package: skipped (installing a package needs root)"
	exit 0
fi
mkdir -p deb
DEB_BUILD_OPTIONS="nocheck parallel=${GFLOW_DEB_JOBS:-2}" scripts/deb.sh >deb/build.log 2>&1 || {
	tail -n 40 deb/build.log >&2
	echo "test-package: make deb failed (deb/build.log)" >&2
	exit 1
}
version=$(dpkg-parsechangelog -SVersion)
arch=$(dpkg --print-architecture)
GFLOW_DEB="$PWD/deb/gflow_${version}_${arch}.deb" $PY -m pytest -q -p no:cacheprovider tests/package
