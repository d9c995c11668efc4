#!/usr/bin/env bash
# actdump on a random model with the exact shapes of Qwen2.5-0.5B (hidden
# 896, 24 layers, 14 heads, 2 KV heads, head_dim 64, intermediate 4864,
# vocab 151936, q/k/v bias, tied, bf16), generated into $SS_BUILD/bench
# (never committed), at T=512 and T=2048 with 2 threads, in each compute
# mode (--compute f32 and bf16; BENCH_MODES to choose):
#   - the stats-only prefill against the tokens/s implied by oneDNN's own
#     matmul GFLOP/s at this model's shapes in the same mode (the engine's
#     projections: engine/matmul.h; the model's FLOPs include causal
#     attention at that T), interleaved in one process: ref, ((prefill,
#     ref) per mode) x ROUNDS (tests/tools/prefillbench.c).  This
#     machine's speed drifts by 10-20% within seconds, so each prefill is
#     compared with the matmul windows just before and after it, and the
#     median over rounds is the figure;
#   - actdump itself, per mode: tokens/s with stats only, and with all four
#     components on all layers (the time spent writing activations is
#     reported apart), and the stats-only run as a % of the rate implied by
#     prefillbench's last matmul window (just before it);
#   - peak RSS (/usr/bin/time -v);
#   - the CPU other processes used during each run (from /proc/stat, minus
#     our own CPU time), in cores; a run with more than 0.25 cores of foreign
#     load is marked LOADED.  Next to the wall-clock figures, "cpu" figures
#     divide by our CPU time / threads, which moves less under load.
# BENCH_T="512 2048 16384" adds the long stats-only runs; BENCH_THREADS=N;
# BENCH_ROUNDS=N prefillbench rounds per length (default 5); BENCH_MODES
# (default "f32 bf16"); BENCH_KEPT=0 leaves out prefillbench's passes with
# the packed weights kept from an earlier pass (MODE-kept, on by default);
# above T=4096 the actdump runs themselves sit between two matmul windows.
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

# run NAME T MODE ARGS...: actdump --compute MODE with timings; prints one
# result line (with the % of the oneDNN-MODE-implied rate when IMPL[MODE]
# holds it) and sets RUN_TOK
run() {
	local name=$1 T=$2 md=$3; shift 3
	local b0 b1 t0 t1
	sleep 1   # let the memory a tool before freed settle (a run right after prefillbench was 5% slower)
	b0=$(busy); t0=$(date +%s.%N)
	/usr/bin/time -v -o "$B/time.txt" "$SS_BIN/actdump" -m "$M" --ids "$B/ids$T" -t "$TH" --timings --compute "$md" "$@" \
		2>"$B/err.txt"
	local rc=$?
	t1=$(date +%s.%N); b1=$(busy)
	if [ $rc -ne 0 ]; then echo "$name $md T=$T: actdump failed: $(head -2 "$B/err.txt")"; return 1; fi
	local rss own brk
	timings_read "$B/err.txt" || { echo "$name $md T=$T: actdump --timings unreadable"; return 1; }
	RUN_TOK=$TM_COMPUTE_TOK
	rss=$(awk -F': ' '/Maximum resident/{print $2}' "$B/time.txt")
	own=$(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{print u+s}' "$B/time.txt")
	brk=$(grep '^actdump: time: ' "$B/err.txt" | tail -1 | sed 's/^actdump: time: //')
	# peak RSS against the bf16 weights (the file's matrices as stored; the
	# layer-major prefill holds one converted layer at a time, so a short
	# run stays below them): the targets are the weights + 1 / 1.5 GiB
	awk -v name="$name $md" -v T="$T" -v impl="${IMPL[$md]:-0}" -v rss="$rss" -v own="$own" -v b0="$b0" -v b1="$b1" \
		-v hz="$hz" -v t0="$t0" -v t1="$t1" -v ref="${STATS_TOK:-0}" -v w="$wbytes" -v th="$TH" \
		-v tok="$TM_COMPUTE_TOK" -v tokc="$TM_CPU_TOK" -v wr="$TM_WRITE" 'BEGIN {
		wall = t1 - t0; foreign = ((b1 - b0) / hz - own) / wall; if (foreign < 0) foreign = 0
		d = (rss * 1024 - w) / 1073741824
		printf "%-15s T=%-5d  %7.2f tok/s%s  cpu %7.2f tok/s%s  write %6.2f s  peak RSS %6.0f MiB (%.2fx the bf16 weights, %s %.2f GiB)  foreign load %.2f cores%s\n",
			name, T, tok, (impl > 0 ? sprintf(" (%.1f%% of oneDNN-implied %.1f)", 100 * tok / impl, impl) : ""),
			tokc, (ref > 0 ? sprintf(" (compute time %+.1f%% vs stats)", 100 * (ref / tok - 1)) : ""),
			wr, rss / 1024, rss * 1024 / w, (d < 0 ? "weights -" : "weights +"), (d < 0 ? -d : d), foreign,
			(foreign > 0.25 ? "  LOADED" : "")
	}'
	echo "#            time: $brk"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads"
echo "# model: $M ($(awk "BEGIN{printf \"%.0f\", $wbytes/1048576}") MiB bf16 weights)"
MODES=${BENCH_MODES:-f32 bf16}
# prefillbench also times each mode with the packed weights kept from an
# earlier pass (MODE-kept: actdump's rows after the first); BENCH_KEPT=0: not
pbmodes=$(for md in $MODES; do echo "$md"; [ "${BENCH_KEPT:-1}" = 0 ] || echo "$md-kept"; done | paste -sd,)
# implied ARGS: from prefillbench lines on stdin (its "# prefillbench" line
# and ref windows), "MODE TOK/S" per mode: the tokens/s the mean sustained
# matmul rate of the ref windows given implies for the model's FLOPs
implied() { awk '/^# prefillbench/ { for (i = 1; i <= NF; i++) if ($i == "model") mf = $(i+1) }
	/^ref: oneDNN matmul f32 / && $11 == "bf16" { f += $5; b += $12; n++ }
	END { if (n && mf > 0) printf "f32 %.2f\nbf16 %.2f\n", f / n * 1e3 / mf, b / n * 1e3 / mf }'; }
declare -A IMPL
for T in ${BENCH_T:-512 2048}; do
	[ -f "$B/ids$T" ] || $PY -c "
import numpy as np; r = np.random.default_rng($T)
print(' '.join(map(str, [1] + list(r.integers(0, 151936, $T - 1)))))" >"$B/ids$T"
	# long traces: the actdump runs between two matmul windows (a round of
	# prefillbench would take as long again)
	if [ "$T" -le 4096 ]; then
		"$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" "${BENCH_ROUNDS:-5}" "$pbmodes" | tee "$B/prefill$T.txt"
		[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
		pre=$(grep -E '^# prefillbench' "$B/prefill$T.txt"; grep '^ref: ' "$B/prefill$T.txt" | tail -1)
	else
		pre=$("$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" 0) || exit 1
		echo "$pre"
	fi
	IMPL=()
	while read -r md v; do IMPL[$md]=$v; done < <(echo "$pre" | implied)
	declare -A STOK=()
	for md in $MODES; do
		STATS_TOK=0
		run stats "$T" "$md" -o "$B/stats.h5"
		STOK[$md]=${RUN_TOK:-0}
		rm -f "$B/stats.h5"
	done
	if [ "$T" -gt 4096 ]; then
		r1=$("$SS_BUILD/tools/prefillbench" "$M" "$T" "$TH" 0 | grep '^ref')
		echo "$r1"
		for md in $MODES; do
			printf '%s\n%s\n' "$pre" "$r1" | implied | awk -v md="$md" -v tok="${STOK[$md]}" -v T="$T" '
				$1 == md { printf "# stats %s T=%d: %.1f%% of oneDNN-%s-implied %.1f (the mean of the windows before and after)\n",
				           md, T, 100 * tok / $2, md, $2 }'
		done
	fi
	if [ "$T" -le 4096 ]; then
		for md in $MODES; do
			STATS_TOK=${STOK[$md]}
			run all-acts "$T" "$md" -o "$B/acts.h5" --acts resid,attn_out,mlp_in,mlp_out
			echo "#            (all-acts file: $(du -m "$B/acts.h5" 2>/dev/null | cut -f1) MiB)"
			rm -f "$B/acts.h5"
		done
		# the bf16 mode's target at T=2048 (issue 17), from prefillbench's
		# medians: the pass that packs its weights, and the one that finds
		# them kept (what llama.cpp's prefill and the matmul rate both assume)
		for v in bf16 bf16-kept; do
			sed -n "s/.*[:;] $v median \([0-9.]*\)% of sustained.*/\1/p" "$B/prefill$T.txt" | awk -v T="$T" -v v="$v" '
				{ printf "# %s T=%d: prefill %.1f%% of the oneDNN-bf16-implied rate (median of rounds)%s\n", v, T, $1,
				  T == 2048 ? ($1 >= 70 ? "; target >= 70%: met" : "; target >= 70%: NOT met") : "" }'
		done
	fi
done
echo "# targets: bf16 stats >= 70% of oneDNN-bf16-implied at T=2048 (prefillbench median; f32 mode against"
echo "#   oneDNN-f32-implied for reference); all-acts compute within 15% of stats;"
echo "#   peak RSS < the bf16 weights + 1.5 GiB at T=2048 (+ 1 GiB stats-only at T=16384);"
echo "#   llama.cpp on the same weights, in the same run: make bench-peers"
