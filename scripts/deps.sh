#!/bin/sh
# deps.sh — install the Debian packages gflow needs to build, test and run.
# As root it installs what is missing with apt-get; otherwise it prints the
# exact command to run. Quiet and quick when everything is there.
set -eu

PKGS="gcc libc6-dev clang libclang-rt-14-dev make meson ninja-build pkg-config
libevent-dev libjansson-dev libsqlite3-dev libcmocka-dev
libcurl4-openssl-dev tmux python3 python3-pytest python3-pytest-xdist
python3-aiosmtpd procps prometheus python3-prometheus-client scdoc
man-db chromium chromium-driver python3-selenium musl-tools
slurm-wlm munge openssh-server openssh-client tzdata"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "gflow needs these Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
