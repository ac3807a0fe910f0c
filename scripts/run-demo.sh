#!/bin/sh
# run-demo.sh — `make run`: start the freshly built daemon (if it is not
# running yet) and run a demo job through it, showing what a user sees.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
PATH="$PWD/$BUILD:$PATH"
export PATH

if ! gflowd status >/dev/null 2>&1; then
	gflowd up
fi
echo
echo "\$ ginfo"
ginfo
echo
echo "\$ gbatch --name demo sh -c 'echo hello from gflow job \$GFLOW_JOB_ID; sleep 1; echo done'"
out=$(gbatch --name demo sh -c 'echo "hello from gflow job $GFLOW_JOB_ID"; sleep 1; echo done')
echo "$out"
id=$(echo "$out" | awk '/Submitted batch job/ {print $4}')
i=0
while [ $i -lt 100 ]; do
	st=$(gqueue -j "$id" -f ST | tail -n 1 | tr -d ' ')
	case "$st" in CD|F|CA|TO) break ;; esac
	sleep 0.1
	i=$((i + 1))
done
echo
echo "\$ gqueue -a -n 5"
gqueue -a -n 5
echo
echo "\$ gjob log $id"
gjob log "$id"
echo
echo "The daemon keeps running. Try: $BUILD/gbatch --help, $BUILD/gqueue, $BUILD/gflowd status"
echo "Stop it with: $BUILD/gflowd down"
