#!/bin/sh
# deb.sh — `make deb`: the Debian package, built from this tree with
# Debian's tools (debian/, dpkg-buildpackage -b -us -uc), into deb/:
#   deb/gflow_<version>_<arch>.deb (and gflow-dbgsym_…deb)
# The tree is copied (tracked and untracked files, not ignored ones: no
# build directory) to deb/src/gflow-<version>/, since dpkg-buildpackage
# writes its results beside the source. No network is used.
# DEB_BUILD_OPTIONS as usual, e.g. DEB_BUILD_OPTIONS="nocheck parallel=2".
set -eu
cd "$(dirname "$0")/.."
version=$(dpkg-parsechangelog -SVersion)
src=deb/src/gflow-$version
rm -rf deb/src deb/gflow_* deb/gflow-dbgsym_*
mkdir -p "$src"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done; true' sh |
		tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar -cf - --exclude='./build*' --exclude=./deb . | tar -xf - -C "$src"
fi
(cd "$src" && dpkg-buildpackage -b -us -uc)
mv deb/src/gflow_* deb/src/gflow-dbgsym_* deb/ 2>/dev/null || true
rm -rf deb/src
ls deb/*.deb
