#!/bin/sh
# tests/gpu/run.sh — the check on a machine with a real NVIDIA GPU: gflowd on
# the real NVML; a job's CUDA_VISIBLE_DEVICES against what gjob show says; a
# CUDA process started outside gflow makes its GPU unmanaged (named: pid,
# user, command, age, memory) and no job lands there, unless the [gpu]
# policy lets it pass; two shared jobs run on one GPU; a job's GPU UUID,
# peak memory and utilisation; a job that runs out of GPU memory ends
# OutOfMemory:GPU. One line per check, then a summary. Prints SKIP and
# exits 0 where there is no driver.
# Usage: tests/gpu/run.sh [BUILD_DIR]   (about two minutes)
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
	gctl show-gpus
	gctl show-gpus | grep -q "unmanaged(pid=$HOLD user=$(id -un) cmd=hold_gpu age=[0-9][0-9a-z]* mem=[0-9.]*[MG])" &&
		ok "the foreign process is named (user, command, age, memory)" || bad "foreign process not named in gctl show-gpus"
	gctl gpu-process list --all | grep -q "pid=$HOLD .*blocks the GPU" &&
		ok "gctl gpu-process list --all lists it" || bad "gctl gpu-process list --all"
	ginfo -l | grep -q "unmanaged(pid=$HOLD user=" && ok "ginfo -l names it" || bad "ginfo -l does not name it"
	id=$(submit --gpus "$NGPU" sh -c "echo \$CUDA_VISIBLE_DEVICES > $T/cvd2")
	sleep 3
	st=$(gqueue -j "$id" -f ST | tail -n 1 | tr -d ' ')
	[ "$st" = "PD" ] && ok "a job needing every GPU waits while one is unmanaged" || bad "job $id is $st"
	# the policy: a foreign process under unmanaged_min_memory_mb does not block
	gflowd down >/dev/null 2>&1 || true
	GFLOW_GPU__UNMANAGED_MIN_MEMORY_MB=100000 gflowd up --hosting process --gpu-poll-interval-secs 1 >/dev/null
	wait_state "$id" CD F && ok "with [gpu] unmanaged_min_memory_mb above its use, the GPU is used" ||
		bad "unmanaged_min_memory_mb did not let the GPU be used"
	gctl gpu-process list --all | grep -q "pid=$HOLD .*does not block" && ok "and the process is still shown" ||
		bad "process not shown as passing"
	gflowd down >/dev/null 2>&1 || true
	gflowd up --hosting process --gpu-poll-interval-secs 1 >/dev/null
	id=$(submit --gpus "$NGPU" true)
	sleep 3
	st=$(gqueue -j "$id" -f ST | tail -n 1 | tr -d ' ')
	[ "$st" = "PD" ] && ok "default policy: it blocks again" || bad "job $id is $st"
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

# 4. what a job used: its GPU's UUID, its peak memory, its utilisation
if [ -x "$T/hold_gpu" ]; then
	id=$(submit --gpus 1 "$T/hold_gpu" 6 1024)
	wait_state "$id" CD F
	gjob show "$id" | grep -E '^(GPUIDs|GPUUUIDs|PeakGPUMemory|MeanGPUUtil)='
	gpu=$(gjob show "$id" | sed -n 's/^GPUIDs=//p')
	uuid=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' -v g="$gpu" '$1 == g {print $2}')
	gjob show "$id" | grep -qx "GPUUUIDs=$uuid" && ok "GPUUUIDs is GPU $gpu's UUID" || bad "GPUUUIDs is not $uuid"
	peak=$(gjob show -o json "$id" | tr -d ' \n' | sed -n 's/.*"peak_gpu_memory_mb":\[\([0-9]*\).*/\1/p')
	[ "${peak:-0}" -ge 1024 ] && ok "peak GPU memory ${peak} MB >= the 1024 MB it allocated" || bad "peak GPU memory ${peak:-none}"
	gjob show "$id" | grep -q '^MeanGPUUtil=[0-9]*%$' && ok "mean utilisation recorded" || bad "no mean utilisation"
	# a shared job over its booking is flagged
	id=$(submit --gpus 1 --shared --gpu-memory 256M "$T/hold_gpu" 5 1024)
	wait_state "$id" CD F
	gjob show "$id" | grep -q '^GPUMemoryExceeded=yes' && ok "shared job over its 256M booking flagged" ||
		bad "shared overuse not flagged"
	# 5. out of GPU memory, on purpose
	id=$(submit --gpus 1 "$T/hold_gpu" 1 100000000)
	wait_state "$id" F
	gqueue -j "$id" -f JOBID,ST,REASON
	[ "$(gqueue -j "$id" -f REASON | tail -n 1 | tr -d ' ')" = "OutOfMemory:GPU" ] &&
		ok "a job out of GPU memory ends OutOfMemory:GPU" || bad "job $id: $(gjob show "$id" | grep Reason=)"
	gjob show "$id" | grep -q '^Hint=' && ok "gjob show gives a hint" || bad "no hint"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
