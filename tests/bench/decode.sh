#!/usr/bin/env bash
# Decoding speed at depth 512 on the random Qwen2.5-0.5B-shaped bf16 model
# (tests/bench/qwen05_model), 2 threads, tests/tools/decodebench:
#   before  resident weights in f32 (the former path: sgemv on weights
#           converted once, 4 bytes a weight)
#   after   resident weights in bf16 (gemv.h on the CPU's best path,
#           2 bytes a weight, lm_head read from the mapping)
# alternating in separate processes (BENCH_ROUNDS pairs, default 2), each
# with the machine's read bandwidth measured in the same process (a
# streaming read of 1 GiB) and its bound: bytes of the resident weights
# read per token over that bandwidth; peak RSS per process; the CPU other
# processes used meanwhile (cores; > 0.25 marked LOADED).
# BENCH_DECODE_DEPTH (512), BENCH_DECODE_STEPS (32), BENCH_THREADS (2).
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
PY=/usr/bin/python3
B=$SS_BUILD/bench
M=$B/qwen05-shape
TH=${BENCH_THREADS:-2}
DEPTH=${BENCH_DECODE_DEPTH:-512}
STEPS=${BENCH_DECODE_STEPS:-32}
mkdir -p "$B"
. "$SS_ROOT/tests/bench/qwen05_model"
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
hz=$(getconf CLK_TCK)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads, gemv path $("$SS_BUILD/tools/decodebench" --path 2>/dev/null || echo ?)"
rc=0
for r in $(seq 1 "${BENCH_ROUNDS:-2}"); do
	for mode in f32 bf16; do
		b0=$(busy); t0=$(date +%s.%N)
		line=$(/usr/bin/time -f '%e %U %S' -o "$B/decode-time.txt" "$SS_BUILD/tools/decodebench" "$M" "$DEPTH" "$STEPS" "$TH" "$mode" 2>"$B/decode-err.txt")
		if [ $? -ne 0 ]; then echo "decodebench $mode failed: $(head -2 "$B/decode-err.txt")"; rc=1; continue; fi
		t1=$(date +%s.%N); b1=$(busy)
		read -r _ u s <"$B/decode-time.txt"
		foreign=$(awk -v b0="$b0" -v b1="$b1" -v hz="$hz" -v u="$u" -v s="$s" -v t0="$t0" -v t1="$t1" \
			'BEGIN { f = ((b1 - b0) / hz - u - s) / (t1 - t0); printf "%.2f", f < 0 ? 0 : f }')
		loaded=$(awk -v f="$foreign" 'BEGIN { print (f > 0.25 ? "  LOADED" : "") }')
		echo "$([ $mode = f32 ] && echo before || echo after ) $line; foreign load $foreign cores$loaded"
		echo "$mode $line" >>"$B/decode-lines.txt.$$"
	done
done
[ -f "$B/decode-lines.txt.$$" ] && awk '
	{ for (i = 1; i <= NF; i++) if ($i == "tok/s,") { tok[$1] += $(i-1); n[$1]++ } }
	END { if (n["f32"] && n["bf16"])
		printf "# decode depth '"$DEPTH"': bf16 %.2f tok/s vs f32 %.2f (mean of %d): %.2fx\n",
		       tok["bf16"] / n["bf16"], tok["f32"] / n["f32"], n["bf16"], (tok["bf16"] / n["bf16"]) / (tok["f32"] / n["f32"]) }' \
	"$B/decode-lines.txt.$$"
rm -f "$B/decode-lines.txt.$$"
echo "# targets: bf16 within 80% of the bound (bound = resident bytes per token / read bandwidth);"
echo "#   peak RSS within the bf16 weights + 0.5 GiB"
exit $rc
