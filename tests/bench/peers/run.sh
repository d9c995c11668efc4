#!/usr/bin/env bash
# tests/bench/peers/run.sh - make bench-peers: sinkscope against llama.cpp
# on the same weights, in the same run (never part of make check).
#   1. llama.cpp built once (build.sh: the release inside the npm package
#      node-llama-cpp, CPU-only, native) into $SS_BUILD/peers;
#   2. the random Qwen2.5-0.5B-shaped bf16 bench model (qwen05_model) as
#      GGUF BF16 and F16 (gguf.py, llama.cpp's gguf-py), cached there;
#   3. interleaved, 2 threads: for each prefill length (PEERS_T, default
#      "512 2048 16384") llama-bench BF16, actdump (stats only, each
#      --compute mode actdump has), llama-bench F16; then decoding at depth
#      512: llama-bench -d 512 -n 32 BF16 and F16 against decodebench
#      (tests/tools: resident bf16 weights).  Each line carries the load
#      average and the CPU other processes used during it (cores), and
#      the ratios sinkscope / llama.cpp are printed per row and compute
#      mode, with the foreign load of the rows they divide.
# llama-bench runs each test once (-r 1, PEERS_REPS), and without its
# warm-up pass above T=PEERS_WARMUP_MAX (default 4096): the warm-up is a
# whole prefill of that length, and one llama.cpp BF16 prefill of 16384
# tokens took more than 13 min under load; actdump is likewise one run.
# PEERS_T (default "512 2048 16384"; e.g. PEERS_T="512 2048" for a short
# run), PEERS_THREADS (2), PEERS_DECODE_STEPS (32), PEERS_REPS (1),
# PEERS_WARMUP_MAX (4096).
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
export SS_ROOT SS_BUILD
PY=/usr/bin/python3
B=$SS_BUILD/bench
M=$B/qwen05-shape
P=$SS_BUILD/peers
TH=${PEERS_THREADS:-2}
mkdir -p "$B" "$P/gguf"
bash "$SS_ROOT/tests/bench/peers/build.sh" || exit 1
LB=$P/build/bin/llama-bench
. "$SS_ROOT/tests/bench/qwen05_model"
. "$SS_ROOT/tests/bench/timings"
for k in bf16 f16; do
	g=$P/gguf/qwen05-$k.gguf
	if [ ! -f "$g" ] || [ "$g" -ot "$M/model.safetensors" ]; then
		echo "# converting the bench model to GGUF $k"
		$PY "$SS_ROOT/tests/bench/peers/gguf.py" "$P/src/gguf-py" "$M" "$g.tmp" "$k" && mv "$g.tmp" "$g" || exit 1
	fi
done
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
hz=$(getconf CLK_TCK)
# measure NAME CMD...: runs CMD (its stdout to $P/out.txt), sets FOREIGN,
# LOAD (1-minute load average at the start) and WALL
measure() {
	local b0 b1 t0 t1
	LOAD=$(cut -d' ' -f1 /proc/loadavg)
	b0=$(busy); t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S' -o "$P/time.txt" "$@" >"$P/out.txt" 2>"$P/err.txt"
	local rc=$?
	t1=$(date +%s.%N); b1=$(busy)
	read -r u s <"$P/time.txt" 2>/dev/null || { u=0; s=0; }
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
	FOREIGN=$(awk -v b0="$b0" -v b1="$b1" -v hz="$hz" -v u="$u" -v s="$s" -v t0="$t0" -v t1="$t1" \
		'BEGIN { f = ((b1 - b0) / hz - u - s) / (t1 - t0); printf "%.2f", f < 0 ? 0 : f }')
	return $rc
}
# llama-bench's mean tokens/s from its CSV (the avg_ts column)
lb_rate() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); if ($i == "avg_ts") c = i } next }
	c { gsub(/"/, "", $c); print $c; exit }' "$P/out.txt"; }
modes=""
"$SS_BIN/actdump" --help 2>&1 | grep -q -- '--compute' && modes="f32 bf16"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads"
echo "# $(cat "$P/version"); sinkscope $("$SS_BIN/actdump" --version 2>&1 | head -1)${modes:+, --compute $modes}"
row() { printf '%-34s %9s tok/s   load %5s  foreign %5s cores  (%s s)\n' "$1" "$2" "$LOAD" "$FOREIGN" "$WALL"; }
declare -A R FL
REPS=${PEERS_REPS:-1}
tstart=$(date +%s)
# lb_args T: llama-bench's repetitions and, for a long prefill, no warm-up
lb_args() { echo "-r $REPS"; [ "$1" -gt "${PEERS_WARMUP_MAX:-4096}" ] && echo "--no-warmup"; }
for T in ${PEERS_T:-512 2048 16384}; do
	[ -f "$B/ids$T" ] || $PY -c "
import numpy as np; r = np.random.default_rng($T)
print(' '.join(map(str, [1] + list(r.integers(0, 151936, $T - 1)))))" >"$B/ids$T"
	measure "$LB" -m "$P/gguf/qwen05-bf16.gguf" -p "$T" -n 0 -t "$TH" $(lb_args "$T") -o csv &&
		R[lb-bf16-$T]=$(lb_rate) || R[lb-bf16-$T]=failed
	FL[lb-bf16-$T]=$FOREIGN
	row "llama.cpp BF16 prefill T=$T" "${R[lb-bf16-$T]}"
	for md in ${modes:-default}; do
		extra=(); [ "$md" != default ] && extra=(--compute "$md")
		measure "$SS_BIN/actdump" -m "$M" --ids "$B/ids$T" -t "$TH" --timings "${extra[@]}" -o "$P/stats.h5"
		R[ss-$md-$T]=failed
		timings_read "$P/err.txt" && R[ss-$md-$T]=$TM_COMPUTE_TOK
		FL[ss-$md-$T]=$FOREIGN
		row "sinkscope $md prefill T=$T" "${R[ss-$md-$T]}"
		rm -f "$P/stats.h5"
	done
	measure "$LB" -m "$P/gguf/qwen05-f16.gguf" -p "$T" -n 0 -t "$TH" $(lb_args "$T") -o csv &&
		R[lb-f16-$T]=$(lb_rate) || R[lb-f16-$T]=failed
	FL[lb-f16-$T]=$FOREIGN
	row "llama.cpp F16 prefill T=$T" "${R[lb-f16-$T]}"
done
NS=${PEERS_DECODE_STEPS:-32}
for k in bf16 f16; do
	measure "$LB" -m "$P/gguf/qwen05-$k.gguf" -p 0 -n "$NS" -d 512 -t "$TH" -r "$REPS" -o csv &&
		R[lb-$k-dec]=$(lb_rate) || R[lb-$k-dec]=failed
	FL[lb-$k-dec]=$FOREIGN
	row "llama.cpp ${k^^} decode depth 512" "${R[lb-$k-dec]}"
	if [ $k = bf16 ]; then
		measure "$SS_BUILD/tools/decodebench" "$M" 512 "$NS" "$TH" bf16
		R[ss-dec]=$(sed -n 's/.*: \([0-9.]*\) tok\/s,.*/\1/p' "$P/out.txt")
		[ -n "${R[ss-dec]}" ] || R[ss-dec]=failed
		FL[ss-dec]=$FOREIGN
		row "sinkscope decode depth 512" "${R[ss-dec]}"
		echo "#   $(sed 's/^decode [a-z0-9]* depth 512: [0-9.]* tok\/s, //' "$P/out.txt")"
	fi
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }
# the largest foreign load of the rows named
fmax() { local m=0 k; for k; do m=$(awk -v a="$m" -v b="${FL[$k]:-0}" 'BEGIN { print (b + 0 > a + 0 ? b : a) }'); done; echo "$m"; }
echo "# ratios sinkscope / llama.cpp BF16, / llama.cpp F16 (largest foreign load of the rows divided):"
for T in ${PEERS_T:-512 2048 16384}; do
	for md in ${modes:-default}; do
		printf '#   prefill T=%-5s --compute %-4s  %5s / %5s   foreign <= %s cores\n' "$T" "$md" \
			"$(ratio "${R[ss-$md-$T]}" "${R[lb-bf16-$T]}")" "$(ratio "${R[ss-$md-$T]}" "${R[lb-f16-$T]}")" \
			"$(fmax "ss-$md-$T" "lb-bf16-$T" "lb-f16-$T")"
	done
done
printf '#   decode depth 512 (bf16 resident)  %5s / %5s   foreign <= %s cores\n' \
	"$(ratio "${R[ss-dec]}" "${R[lb-bf16-dec]}")" "$(ratio "${R[ss-dec]}" "${R[lb-f16-dec]}")" \
	"$(fmax ss-dec lb-bf16-dec lb-f16-dec)"
echo "# targets: bf16 prefill >= 1 x llama.cpp BF16 at T=512, 2048 and >= 1.5 x at 16384; f32 >= 1 x llama.cpp F16 at 512, 2048;"
echo "#   decode >= 1 x llama.cpp BF16"
echo "# foreign load above 0.25 cores makes a row's figure a lower bound of the quiet machine's"
echo "# bench-peers took $(( $(date +%s) - tstart )) s (llama-bench -r $REPS, no warm-up above T=${PEERS_WARMUP_MAX:-4096})"
