#!/bin/sh
# deps.sh — install the Debian packages gflow needs, by purpose:
#   scripts/deps.sh [SET...]     SET: run (always), test, bench, slurm, deb
#   scripts/deps.sh --list SET   print the packages of one set and exit
# run    building and running gflow (make, make run, make install)
# deb    building the Debian package (make deb)
# test   what make test adds: the second compiler, the test frameworks, the
#        tools the end-to-end tests drive, and what the package test needs
# bench  what make bench adds (task-spooler, the load and dashboard runs)
# slurm  a local Slurm for make bench SLURM_UP=1 (and the Slurm e2e tests)
# As root it installs what is missing with apt-get; otherwise it prints the
# exact command to run. Quiet and quick when everything is there.
#
# Installing starts nothing: while apt-get runs, a policy-rc.d (unless the
# machine has one) tells the packages' scripts not to start their services,
# and the services of the packages installed here (sshd, munged, slurmctld,
# slurmd, prometheus) are disabled at boot afterwards. A test that needs one
# starts its own instance on its own port or socket (tests/e2e/test_slurm.py).
set -eu

RUN="gcc libc6-dev make meson ninja-build pkg-config python3
libevent-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev
musl-tools scdoc tmux tzdata"
DEB="debhelper dpkg-dev fakeroot"
TEST="clang libclang-rt-14-dev libcmocka-dev
python3-pytest python3-pytest-xdist python3-aiosmtpd python3-jsonschema procps
prometheus python3-prometheus-client man-db
chromium chromium-driver python3-selenium
slurm-wlm munge openssh-server openssh-client
$DEB lintian bash-completion systemd"
BENCH="task-spooler python3-pytest procps chromium chromium-driver python3-selenium"
SLURM="slurm-wlm munge"

# Package -> the services it ships, disabled again when we installed it.
services() {
	case $1 in
	openssh-server) echo ssh ;;
	munge) echo munge ;;
	slurmctld) echo slurmctld ;;
	slurmd) echo slurmd ;;
	prometheus) echo prometheus ;;
	esac
}

set_of() {
	case $1 in
	run) echo "$RUN" ;;
	deb) echo "$DEB" ;;
	test) echo "$TEST" ;;
	bench) echo "$BENCH" ;;
	slurm) echo "$SLURM" ;;
	*) echo "deps.sh: unknown set '$1' (run, deb, test, bench, slurm)" >&2; return 1 ;;
	esac
}

if [ "${1:-}" = "--list" ]; then
	set_of "${2:-run}" | tr -s ' \n' '\n\n' | sed '/^$/d'
	exit 0
fi

PKGS=$RUN
for s in "$@"; do
	[ "$s" = run ] && continue
	PKGS="$PKGS $(set_of "$s")"
done

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=""
for p in $PKGS; do
	case " $missing " in *" $p "*) continue ;; esac
	installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "gflow needs these Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install -y --no-install-recommends$missing" >&2
	exit 1
fi

# The packages that ship services and are not installed yet (slurm-wlm
# brings slurmctld and slurmd).
fresh=""
for p in openssh-server munge slurmctld slurmd prometheus; do
	installed "$p" || fresh="$fresh $p"
done

policy=/usr/sbin/policy-rc.d
ours=""
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# gflow scripts/deps.sh: start no service while it installs packages\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	ours=1
fi
cleanup() { [ -z "$ours" ] || rm -f "$policy"; }
trap cleanup EXIT INT TERM

echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing

# Newly installed services: not enabled at boot, and stopped if something
# started them anyway (a policy-rc.d of the machine's that allows it).
for p in $fresh; do
	installed "$p" || continue
	for u in $(services "$p"); do
		if [ -d /run/systemd/system ]; then
			systemctl disable --now "$u" >/dev/null 2>&1 || true
		else
			command -v systemctl >/dev/null && systemctl disable "$u" >/dev/null 2>&1 || true
			if [ -x "/etc/init.d/$u" ]; then
				update-rc.d "$u" disable >/dev/null 2>&1 || true
				"/etc/init.d/$u" stop >/dev/null 2>&1 || true
			fi
		fi
		echo "deps.sh: $u (from $p) is not started at boot; tests start their own"
	done
done
