#!/bin/sh
# tests/gpu/run.sh — the check on a machine with a real NVIDIA GPU: gflowd on
# the real NVML; a job's CUDA_VISIBLE_DEVICES against what gjob show says; a
# CUDA process started outside gflow makes its GPU unmanaged and no job lands
# there; two shared jobs run on one GPU. Prints SKIP and exits 0 where there
# is no driver. Usage: tests/gpu/run.sh [BUILD_DIR]   (about a minute)
set -eu
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:-build}" && pwd)

if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1' && [ ! -e /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ]; then
	echo "SKIP: no NVIDIA driver (libnvidia-ml.so.1) on this machine"
	exit 0
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
T=$(mktemp -d /tmp/gflow-gpu.XXXXXX)
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

export HOME="$T/home" XDG_RUNTIME_DIR="$T/run" TMUX_TMPDIR="$T"
export GFLOW_DAEMON__PORT=$((50000 + $$ % 10000)) GFLOW_EXECUTOR__TYPE=process
export PATH="$BUILD:$PATH"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
HOLD=""
cleanup() {
	[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null || true
	gflowd down >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT

wait_state() { # id state...
	id=$1; shift
	i=0
	while [ $i -lt 300 ]; do
		st=$(gqueue -j "$id" -f ST | tail -n 1 | tr -d ' ')
		for want in "$@"; do [ "$st" = "$want" ] && return 0; done
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
submit() { gbatch "$@" | awk '/Submitted batch job/ {print $4}'; }

gflowd up --hosting process --gpu-poll-interval-secs 1 >/dev/null
NGPU=$(nvidia-smi -L | wc -l)
ginfo
ginfo -l
[ "$(ginfo -l | tail -n +2 | wc -l)" -eq "$NGPU" ] && ok "ginfo -l lists all $NGPU GPUs" || bad "ginfo -l GPU count"

# 1. CUDA_VISIBLE_DEVICES is what gjob show says
id=$(submit --gpus 1 sh -c "echo \$CUDA_VISIBLE_DEVICES > $T/cvd; nvidia-smi -L > $T/seen")
wait_state "$id" CD F
cvd=$(cat "$T/cvd")
gjob show "$id" | grep -qx "GPUIDs=$cvd" && ok "job $id got GPU $cvd, as gjob show says" || bad "GPUIDs vs CUDA_VISIBLE_DEVICES ($cvd)"

# 2. an unmanaged CUDA process: its GPU is shown unmanaged and gets no job
if [ -x "$NVCC" ] && "$NVCC" -o "$T/hold_gpu" tests/gpu/hold_gpu.cu 2>"$T/nvcc.log"; then
	CUDA_VISIBLE_DEVICES=0 "$T/hold_gpu" 120 256 > "$T/hold.out" 2>&1 &
	HOLD=$!
	i=0
	until ginfo | grep unmanaged | grep -q "$HOLD" || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
	ginfo
	ginfo | grep unmanaged | grep -q "$HOLD" && ok "GPU 0 unmanaged (pid $HOLD)" || bad "GPU 0 not shown unmanaged"
	id=$(submit --gpus "$NGPU" sh -c "echo \$CUDA_VISIBLE_DEVICES > $T/cvd2")
	sleep 3
	st=$(gqueue -j "$id" -f ST | tail -n 1 | tr -d ' ')
	[ "$st" = "PD" ] && ok "a job needing every GPU waits while one is unmanaged" || bad "job $id is $st"
	kill "$HOLD"; wait "$HOLD" 2>/dev/null || true; HOLD=""
	wait_state "$id" CD F && ok "it starts once the process is gone" || bad "job $id did not start"
else
	echo "skip: no nvcc to build a CUDA process (unmanaged check not run)"
fi

# 3. two shared jobs on one GPU, both with real CUDA processes when we can
if [ -x "$T/hold_gpu" ]; then work="$T/hold_gpu 5 256"; else work="sleep 5"; fi
a=$(submit --gpus 1 --shared --gpu-memory 10G $work)
b=$(submit --gpus 1 --shared --gpu-memory 10G $work)
wait_state "$a" R CD; wait_state "$b" R CD
ga=$(gjob show "$a" | sed -n 's/^GPUIDs=//p'); gb=$(gjob show "$b" | sed -n 's/^GPUIDs=//p')
ginfo
[ "$ga" = "$gb" ] && ok "shared jobs $a and $b share GPU $ga" || bad "shared jobs on $ga and $gb"
sleep 2
ginfo | grep -q unmanaged && bad "a job's own CUDA process was taken for unmanaged" || ok "job processes count as managed"
wait_state "$a" CD; wait_state "$b" CD

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
