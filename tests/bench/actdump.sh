#!/usr/bin/env bash
# actdump on a random model with the exact shapes of Qwen2.5-0.5B (hidden
# 896, 24 layers, 14 heads, 2 KV heads, head_dim 64, intermediate 4864,
# vocab 151936, q/k/v bias, tied, bf16), generated into $SS_BUILD/bench
# (never committed), at T=512 and T=2048 with 2 threads:
#   - the stats-only prefill against the tokens/s implied by OpenBLAS's own
#     sgemm GFLOP/s at this model's shapes (model FLOPs include attention at
#     that T), interleaved in one process: ref, (prefill, ref) x ROUNDS
#     (tests/tools/prefillbench.c).  This machine's speed drifts by 10-20%
#     within seconds, so each prefill is compared with the sgemm windows
#     just before and after it, and the median over rounds is the figure;
#   - actdump itself: tokens/s with stats only, and with all four components
#     on all layers (the time spent writing activations is reported apart);
#   - peak RSS (/usr/bin/time -v);
#   - the CPU other processes used during each run (from /proc/stat, minus
#     our own CPU time), in cores; a run with more than 0.25 cores of foreign
#     load is marked LOADED.  Next to the wall-clock figures, "cpu" figures
#     divide by our CPU time / threads, which moves less under load.
# BENCH_T="512 2048 16384" adds the long stats-only run; BENCH_THREADS=N;
# BENCH_ROUNDS=N prefillbench rounds per length (default 5); above T=4096
# the actdump run itself sits between two sgemm windows.
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
PY=/usr/bin/python3
B=$SS_BUILD/bench
M=$B/qwen05-shape
TH=${BENCH_THREADS:-2}
mkdir -p "$B"
. "$SS_ROOT/tests/bench/qwen05_model"
. "$SS_ROOT/tests/bench/timings"
wbytes=$(stat -c %s "$M/model.safetensors")

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }   # user nice system irq softirq
hz=$(getconf CLK_TCK)

# run NAME T ARGS...: actdump with timings; prints one result line
run() {
	local name=$1 T=$2; shift 2
	local b0 b1 t0 t1
	sleep 1   # let the memory a tool before freed settle (a run right after prefillbench was 5% slower)
	b0=$(busy); t0=$(date +%s.%N)
	/usr/bin/time -v -o "$B/time.txt" "$SS_BIN/actdump" -m "$M" --ids "$B/ids$T" -t "$TH" --timings "$@" \
		2>"$B/err.txt"
	local rc=$?
	t1=$(date +%s.%N); b1=$(busy)
	if [ $rc -ne 0 ]; then echo "$name T=$T: actdump failed: $(head -2 "$B/err.txt")"; return 1; fi
	local rss own brk
	timings_read "$B/err.txt" || { echo "$name T=$T: actdump --timings unreadable"; return 1; }
	rss=$(awk -F': ' '/Maximum resident/{print $2}' "$B/time.txt")
	own=$(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{print u+s}' "$B/time.txt")
	brk=$(grep '^actdump: time: ' "$B/err.txt" | tail -1 | sed 's/^actdump: time: //')
	# peak RSS against the bf16 weights (the file's matrices as stored; the
	# layer-major prefill holds one converted layer at a time, so a short
	# run stays below them): the targets are the weights + 1 / 1.5 GiB
	awk -v name="$name" -v T="$T" -v rss="$rss" -v own="$own" -v b0="$b0" -v b1="$b1" \
		-v hz="$hz" -v t0="$t0" -v t1="$t1" -v ref="${STATS_TOK:-0}" -v w="$wbytes" -v th="$TH" \
		-v tok="$TM_COMPUTE_TOK" -v tokc="$TM_CPU_TOK" -v wr="$TM_WRITE" 'BEGIN {
		wall = t1 - t0; foreign = ((b1 - b0) / hz - own) / wall; if (foreign < 0) foreign = 0
		d = (rss * 1024 - w) / 1073741824
		printf "%-10s T=%-5d  %7.2f tok/s  cpu %7.2f tok/s%s  write %6.2f s  peak RSS %6.0f MiB (%.2fx the bf16 weights, %s %.2f GiB)  foreign load %.2f cores%s\n",
			name, T, tok, tokc, (ref > 0 ? sprintf(" (compute time %+.1f%% vs stats)", 100 * (ref / tok - 1)) : ""),
			wr, rss / 1024, rss * 1024 / w, (d < 0 ? "weights -" : "weights +"), (d < 0 ? -d : d), foreign,
			(foreign > 0.25 ? "  LOADED" : "")
	}'
	echo "#            time: $brk"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads"
echo "# model: $M ($(awk "BEGIN{printf \"%.0f\", $wbytes/1048576}") MiB bf16 weights)"
for T in ${BENCH_T:-512 2048}; do
	[ -f "$B/ids$T" ] || $PY -c "
import numpy as np; r = np.random.default_rng($T)
print(' '.join(map(str, [1] + list(r.integers(0, 151936, $T - 1)))))" >"$B/ids$T"
	# long traces: one actdump run between two sgemm windows (a round of
	# prefillbench would take as long again)
	if [ "$T" -le 4096 ]; then
		"$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" "${BENCH_ROUNDS:-5}" || exit 1
	else
		r0=$("$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" 0) || exit 1
		echo "$r0"
	fi
	STATS_TOK=0
	sline=$(run stats "$T" -o "$B/stats.h5")
	echo "$sline"
	STATS_TOK=$(echo "$sline" | awk 'NR == 1 {print $3}')
	rm -f "$B/stats.h5"
	if [ "$T" -gt 4096 ]; then
		r1=$("$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" 0 | grep '^ref')
		echo "$r1"
		printf '%s\n%s\n' "$r0" "$r1" | awk -v tok="$STATS_TOK" -v T="$T" '
			/^# prefillbench/ { for (i = 1; i <= NF; i++) if ($i == "model") mf = $(i+1) }
			/^ref/ { s += $3; b += $(NF); n++ }
			END { s /= n; b /= n; printf "# stats T=%d: %.1f%% of sustained sgemm-implied %.1f (%.1f%% of best %.1f)\n",
			      T, 100 * tok / (s * 1e3 / mf), s * 1e3 / mf, 100 * tok / (b * 1e3 / mf), b * 1e3 / mf }'
	fi
	if [ "$T" -le 4096 ]; then
		run all-acts "$T" -o "$B/acts.h5" --acts resid,attn_out,mlp_in,mlp_out
		echo "#            (all-acts file: $(du -m "$B/acts.h5" 2>/dev/null | cut -f1) MiB)"
		rm -f "$B/acts.h5"
	fi
done
echo "# targets: stats >= 85% of sgemm-implied (prefillbench median); all-acts compute within 15% of stats;"
echo "#   peak RSS < the bf16 weights + 1.5 GiB at T=2048 (+ 1 GiB stats-only at T=16384);"
echo "#   llama.cpp on the same weights, in the same run: make bench-peers"
