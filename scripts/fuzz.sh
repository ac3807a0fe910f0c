#!/bin/sh
# fuzz.sh — build each libFuzzer target with clang (ASan+UBSan) and run it
# for a bounded time. Usage: scripts/fuzz.sh [SECONDS per target]
# A crash leaves its input in build-fuzz/<target>/ and fails the run; add
# that input as a regression test before fixing the bug.
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-60}
OUT=build-fuzz
mkdir -p "$OUT"
CFLAGS="-std=c11 -D_GNU_SOURCE -DGFLOW_VERSION=\"fuzz\" -DGFLOW_LIBEXECDIR=\"/nonexistent\" -g -O1 -Wall -Wextra -Werror
 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
 -Isrc/common -Isrc/client -iquote src/daemon/core -iquote src/daemon/gpu -iquote src/daemon/state -iquote src/daemon/store -iquote src/daemon/run -iquote src/daemon/share -iquote src/daemon/engine -iquote src/daemon/observe -iquote src/daemon/api -iquote src/daemon/main"

# The daemon's and the clients' sources, found rather than listed (a list
# by hand goes stale as files are added): every .c but the program's main.
# The daemon also needs the dashboard's files as C (meson makes the same).
python3 scripts/embed-web.py "$OUT/web_assets.c" web/*.html web/*.css web/*.js
COMMON=$(ls src/common/*.c | tr '\n' ' ')
DAEMON="$(ls src/daemon/*/*.c | grep -v '/main/main\.c$' | tr '\n' ' ') $OUT/web_assets.c $COMMON"
CLIENT="$(ls src/client/*.c | grep -v '/main\.c$' | grep -v '/musl\.c$' | tr '\n' ' ') $COMMON"

# target: extra flags: sources (besides the target itself). The client is
# built as meson builds it, with jval's JSON values (GF_JVAL).
TARGETS="
fuzz_parse::src/common/parse.c src/common/err.c
fuzz_toml::src/common/toml.c src/common/utf8.c src/common/err.c
fuzz_api::$DAEMON
fuzz_directives:-DGF_JVAL:$CLIENT
fuzz_json:-DGF_JVAL -Itests/unit:tests/unit/jval_oracle.c src/common/jval.c src/common/jvalread.c src/common/jsonw.c src/common/utf8.c
"
for f in tests/fuzz/fuzz_*.c; do
	t=$(basename "$f" .c)
	echo "$TARGETS" | grep -q "^$t:" || { echo "fuzz.sh: no sources listed for $t" >&2; exit 1; }
done

status=0
echo "$TARGETS" | while IFS=: read -r t flags srcs; do
	[ -n "$t" ] || continue
	rm -f "$OUT/$t"		# never run a binary left from an older build
	# shellcheck disable=SC2086
	if ! clang $CFLAGS $flags "tests/fuzz/$t.c" $srcs -levent -lsqlite3 -ljansson -lcurl -ldl -lpthread -lm -o "$OUT/$t"; then
		echo "fuzz.sh: $t does not build" >&2
		exit 1
	fi
	mkdir -p "$OUT/$t.corpus"
	seeds="tests/fuzz/${t#fuzz_}-corpus"
	[ -d "$seeds" ] || seeds=""
	echo "== $t: ${SECS}s"
	if ! (cd "$OUT" && "./$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 "$t.corpus" ${seeds:+"../$seeds"} >"$t.log" 2>&1); then
		tail -n 40 "$OUT/$t.log" >&2
		echo "fuzz.sh: $t found a problem; the input is in $OUT/" >&2
		exit 1
	fi
	grep -E "^(Done|stat::number_of_executed_units)" "$OUT/$t.log" || true
done || status=1
exit $status
