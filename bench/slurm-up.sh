#!/bin/sh
# slurm-up.sh — a local single-node Slurm for the benchmark, as root: a munge
# key and munged on its own socket, a slurm.conf for this host (its real CPU
# count and memory, from `slurmd -C`), slurmctld and slurmd on free ports, all
# state in one throwaway directory. The benchmark's Slurm runs only on request,
# never from make test (test_slurm.py starts one of its own in its own dir).
#   bench/slurm-up.sh [start]   start it; waits until sinfo shows the node idle
#   bench/slurm-up.sh stop      stop it and remove the directory
#   bench/slurm-up.sh status    say whether it runs (exit 0) or not (exit 1)
# The directory is $GFLOW_SLURM_DIR, default /tmp/gflow-bench-slurm; clients
# find it through SLURM_CONF=$dir/slurm.conf, which bench/bench.py sets by
# itself when that file exists (and `start` prints the export line).
# Slurm's defaults except: MaxJobCount=300000 (the benchmark stores 10,000+
# jobs), MaxArraySize=10001 (the throughput case submits 2,000 as one
# array), MinJobAge=30 (ended jobs leave the controller sooner) and
# batch_sched_delay=0 (the default lets the controller wait up to 3 s before
# it starts a batch job, which would be most of Slurm's measured latency).
# For other uses (tests/e2e/test_slurm.py): GFLOW_SLURM_NODENAME names the
# node (default: this host's short name), GFLOW_SLURM_NODE replaces the
# node's hardware (e.g. "CPUs=8 RealMemory=4000 Gres=gpu:2"), the lines of
# GFLOW_SLURM_EXTRA are appended to slurm.conf (replacing the script's lines
# of the same settings) and GFLOW_SLURM_GRES, when set, is written as gres.conf.
set -eu

dir=${GFLOW_SLURM_DIR:-/tmp/gflow-bench-slurm}
cmd=${1:-start}
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export PATH

say() { echo "slurm-up: $*" >&2; }

pid_alive() {	# pid_alive NAME: the daemon named in $dir/NAME.pid runs
	[ -f "$dir/$1.pid" ] || return 1
	p=$(head -n1 "$dir/$1.pid" 2>/dev/null) || return 1
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

stop() {
	[ -d "$dir" ] || { say "not running ($dir does not exist)"; return 0; }
	if [ -f "$dir/slurm.conf" ]; then
		SLURM_CONF=$dir/slurm.conf scancel --quiet --full -u "$(id -un)" 2>/dev/null || true
	fi
	for name in slurmd slurmctld munged; do
		pid_alive "$name" || continue
		p=$(head -n1 "$dir/$name.pid")
		kill -TERM "$p" 2>/dev/null || continue
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$dir"
	say "stopped, $dir removed"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

logs() {
	for f in "$dir"/log/*; do
		[ -f "$f" ] && { echo "==== $f"; tail -n 20 "$f"; }
	done >&2
}

start() {
	[ "$(id -u)" = 0 ] || { say "must run as root (slurmd and munged run as root here)"; exit 1; }
	for b in slurmctld slurmd munged sbatch squeue sinfo scancel; do
		command -v "$b" >/dev/null 2>&1 || { say "$b is not installed (Debian: apt-get install slurm-wlm munge)"; exit 1; }
	done
	if pid_alive slurmctld && pid_alive slurmd && pid_alive munged; then
		say "already running in $dir"
		echo "export SLURM_CONF=$dir/slurm.conf"
		return 0
	fi
	[ -d "$dir" ] && stop
	mkdir -m 0755 "$dir"	# other users' clients reach munge.sock and slurm.conf
	mkdir "$dir/state" "$dir/spool" "$dir/log"
	trap 'say "failed; cleaning up"; logs; stop' EXIT
	trap 'exit 130' INT TERM HUP
	head -c 1024 /dev/urandom >"$dir/munge.key"
	chmod 0600 "$dir/munge.key"
	host=$(hostname -s)
	node=${GFLOW_SLURM_NODENAME:-$host}
	# this host as slurmd sees it: NodeName=… CPUs=… Boards=… … RealMemory=…
	if [ -n "${GFLOW_SLURM_NODE:-}" ]; then
		hw=$GFLOW_SLURM_NODE
	else
		hw=$(slurmd -C | head -n1 | sed 's/^NodeName=[^ ]* //')
		case $hw in
		*CPUs=*RealMemory=*) ;;
		*) say "slurmd -C gave no hardware line: $hw"; exit 1 ;;
		esac
	fi
	[ -n "${GFLOW_SLURM_GRES:-}" ] && printf '%s\n' "$GFLOW_SLURM_GRES" >"$dir/gres.conf"
	cat >"$dir/slurm.conf" <<EOF
# written by bench/slurm-up.sh: a throwaway single-node Slurm
ClusterName=gflowbench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MaxJobCount=300000
MaxArraySize=10001
SchedulerParameters=batch_sched_delay=0
MinJobAge=30
KillWait=2
MailProg=/bin/true
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=bench Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
	if [ -n "${GFLOW_SLURM_EXTRA:-}" ]; then	# a key given twice: every client would complain
		for k in $(printf '%s\n' "$GFLOW_SLURM_EXTRA" | sed -n 's/^\([A-Za-z]*\)=.*/\1/p'); do
			sed -i "/^$k=/d" "$dir/slurm.conf"
		done
		printf '%s\n' "$GFLOW_SLURM_EXTRA" >>"$dir/slurm.conf"
	fi
	munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
		--log-file="$dir/log/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munge.seed"
	SLURM_CONF=$dir/slurm.conf
	export SLURM_CONF
	slurmctld -f "$dir/slurm.conf"
	slurmd -f "$dir/slurm.conf" -N "$node"
	i=0
	while [ $i -lt 300 ]; do
		st=$(sinfo -h -N -o %t 2>/dev/null || true)
		if [ "$st" = idle ]; then
			trap - EXIT
			say "node $node idle ($hw); state in $dir"
			echo "export SLURM_CONF=$dir/slurm.conf"
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	say "the node did not become idle within 30 s (sinfo: ${st:-no answer})"
	exit 1
}

case $cmd in
start) start ;;
stop) stop ;;
status)
	if pid_alive slurmctld && pid_alive slurmd && pid_alive munged; then
		echo "running in $dir (SLURM_CONF=$dir/slurm.conf)"
	else
		echo "not running"
		exit 1
	fi
	;;
-h | --help)
	sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
	;;
*)
	say "unknown command '$cmd' (start, stop, status)"
	exit 2
	;;
esac
