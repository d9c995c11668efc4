#!/usr/bin/env bash
# The families beyond the paper's at realistic layer shapes, each against the
# rate oneDNN's matmul implies in each compute mode, measured in the same process (tests/tools/prefillbench.c:
# ref, (prefill, ref) x ROUNDS; a mixture of experts counts only its active
# experts' FLOPs), next to the Qwen2.5-0.5B-shaped model of bench/actdump.sh
# measured the same way in the same run.  Random bf16 models are written once
# into $SS_BUILD/bench (never committed):
#   gpt2-small     GPT-2 small: 12 layers, d 768, 12 heads, MLP 3072, vocab 50257
#   pythia-410m    Pythia-410m: 24 layers, d 1024, 16 heads, MLP 4096,
#                  rotary_pct 0.25, parallel residual
#   gemma2-2b      Gemma-2-2b: 26 layers, d 2304, 8 heads, 4 KV heads, head_dim
#                  256, MLP 9216, soft-capping, window 4096
#   olmo2-1b       OLMo-2-1B: 16 layers, d 2048, 16 heads, MLP 8192
#   moe-small      a small Mixtral: 16 layers, d 1024, 16 heads, 4 KV heads, 8
#                  experts of 2816, top 2
# The real models' depths (BENCH_DEPTH=real, the default): one cost of a
# prefill is not per layer, the first touch of the layer buffers and the
# weight packings (one layer's weights: 312 MB for Gemma-2-2b, 268 MB
# OLMo-2-1B, 277 MB the MoE's 8 experts, 60 MB Qwen2.5-0.5B), zeroed by the
# kernel as the first layer is converted into them, so a model of 4 of its
# layers understates its per-FLOP rate (BENCH_PERF=1 shows it as
# faults/zeroing).  BENCH_DEPTH=short writes the quick ones instead (8 of
# Pythia's layers, 4 of the others').  A vocabulary of 32000 where theirs is
# larger: a stats-only prefill reads only the embedding rows of its ids.  The machine is shared and noisy:
# compare the ratios (each round's % of the matmul-implied rate), not tok/s.
# BENCH_T (default 512), BENCH_ROUNDS (default 3), BENCH_THREADS (default 2), BENCH_DEPTH, BENCH_KEPT,
# BENCH_FAMILIES (qwen2-0.5b and the names above; default all).
# Both compute modes come from prefillbench, each against its own mode's
# oneDNN matmul rate in the same process.
# BENCH_PERF=1 (with perf installed) also profiles one stats-only actdump
# per model and mode at T and prints where its CPU cycles go, in the same
# groups for every family: oneDNN's JIT code (the products and the weight
# packing reorders; perf sees no symbols in it), OpenBLAS (sgemm/sgemv:
# one-token products, the lm_head), libgomp (oneDNN's OpenMP threads
# spinning or waiting), weight conversion (bf16 -> f32 rows, GPT-2's
# Conv1D transpose), page faults and zeroing (first touch), attention, row
# kernels, the rest.  Shares of cycles move little under foreign load,
# unlike the wall-clock parts of --timings.
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
PY=/usr/bin/python3
B=$SS_BUILD/bench
TH=${BENCH_THREADS:-2}
T=${BENCH_T:-512}
R=${BENCH_ROUNDS:-3}
mkdir -p "$B"
MK="$PY $SS_ROOT/tests/tools/mkmodel.py --dtype bf16 --vocab 32000"
declare -A spec=(
	[gpt2-small]="--arch gpt2 --hidden 768 --heads 12 --kv-heads 12 --inter 3072 --max-pos 1024 --tied --vocab 50257"
	[pythia-410m]="--arch neox --hidden 1024 --heads 16 --kv-heads 16 --inter 4096 --max-pos 2048"
	[gemma2-2b]="--arch gemma2 --hidden 2304 --heads 8 --kv-heads 4 --head-dim 256 --inter 9216 --window 4096 --tied"
	[olmo2-1b]="--arch olmo2 --hidden 2048 --heads 16 --kv-heads 16 --head-dim 128 --inter 8192"
	[moe-small]="--arch mixtral --hidden 1024 --heads 16 --kv-heads 4 --head-dim 64 --experts 8 --topk 2 --moe-inter 2816"
)
case ${BENCH_DEPTH:-real} in
real) declare -A depth=([gpt2-small]=12 [pythia-410m]=24 [gemma2-2b]=26 [olmo2-1b]=16 [moe-small]=16) ;;
short) declare -A depth=([gpt2-small]=12 [pythia-410m]=8 [gemma2-2b]=4 [olmo2-1b]=4 [moe-small]=4) ;;
*) echo "families.sh: BENCH_DEPTH=${BENCH_DEPTH}: expected real or short" >&2; exit 2 ;;
esac
order=(gpt2-small pythia-410m gemma2-2b olmo2-1b moe-small)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads, T=$T, $R rounds"
M=$B/qwen05-shape
# each mode as a pass that packs its weights, and one that finds them kept
# from an earlier pass (MODE-kept: actdump's rows after the first; the
# yardsticks' weights are packed beforehand too); BENCH_KEPT=0: only the first
PBMODES=f32,bf16
[ "${BENCH_KEPT:-1}" = 0 ] || PBMODES=f32,bf16,f32-kept,bf16-kept
[[ " ${BENCH_FAMILIES:-qwen2-0.5b} " == *" qwen2-0.5b "* ]] && . "$SS_ROOT/tests/bench/qwen05_model"
summary=()
bench() {   # NAME DIR
	echo "## $1 ($(du -sm "$2" | cut -f1) MiB)"
	"$SS_BUILD/tools/prefillbench" "$2" "$T" "$TH" "$R" "$PBMODES" | tee "$B/$1.prefill" || return 1
	summary+=("$(printf '%-12s %s' "$1" "$(grep '^summary' "$B/$1.prefill" | sed 's/^summary T=[0-9]*: //')")")
}
prof=()
ids() {
	[ -f "$B/ids$T-v32000" ] || $PY -c "
import numpy as np; r = np.random.default_rng($T)
print(' '.join(map(str, [1] + list(r.integers(0, 32000, $T - 1)))))" >"$B/ids$T-v32000"
}
# profile NAME DIR: perf's cycle shares of one actdump run per mode (BENCH_PERF=1)
profile() {
	[ "${BENCH_PERF:-}" = 1 ] || return 0
	command -v perf >/dev/null || { prof+=("$(printf '%-12s perf missing' "$1")"); return 0; }
	ids
	local c
	for c in f32 bf16; do
		perf record -q -F 499 -o "$B/$1.$c.perf" "$SS_BIN/actdump" -m "$2" --ids "$B/ids$T-v32000" -t "$TH" \
			--compute $c -o "$B/$1.perf.h5" >/dev/null 2>&1 ||
			{ prof+=("$(printf '%-12s %-4s perf record failed' "$1" $c)"); continue; }
		rm -f "$B/$1.perf.h5"
		prof+=("$(perf report -i "$B/$1.$c.perf" --no-children --sort dso,symbol --stdio 2>/dev/null |
			grep -E '^ +[0-9.]+%' | awk -v n="$1" -v c=$c '{ p = $1 + 0; d = $2; s = $NF }
			{ for (i = 2; i <= NF; i++) if ($i == "[.]" || $i == "[k]") { s = $(i + 1); break } }
			d == "[JIT]" { j += p; next }
			d ~ /libgomp/ { g += p; next }
			d ~ /openblas/ { ob += p; next }
			s ~ /st_conv|st_to_f32|tr_task|conv_task|round_task|widen/ { cv += p; next }
			s ~ /clear_page|page_fault|set_ptes|unmap_page|zap_|folio|lru|_raw_spin/ { pf += p; next }
			s ~ /^(qk|pv)_|attn|exp_shift/ { at += p; next }
			s ~ /norm|^add_|gelu|silu|rope|axpy|tanh|expm1|^exp|sumsq|^dot|^max/ { rw += p; next }
			{ o += p }
			END { printf "%-12s %-4s oneDNN jit %5.1f%%  openblas %4.1f%%  libgomp %4.1f%%  conversion %4.1f%%  faults/zeroing %4.1f%%  attention %4.1f%%  rows %4.1f%%  rest %4.1f%%",
			      n, c, j, ob, g, cv, pf, at, rw, o }')")
	done
}
for f in ${BENCH_FAMILIES:-qwen2-0.5b ${order[@]}}; do
	d=$B/fam-$f-L${depth[$f]:-0}
	[ "$f" = qwen2-0.5b ] && d=$M
	if [ ! -f "$d/config.json" ]; then
		echo "# writing the random $f model to $d"
		# shellcheck disable=SC2086
		$MK ${spec[$f]} --layers "${depth[$f]}" "$d.tmp" >/dev/null && mv "$d.tmp" "$d" || { echo "mkmodel.py failed for $f"; exit 1; }
	fi
	bench "$f" "$d" || exit 1
	profile "$f" "$d"
done
echo "# median % of the sustained oneDNN-matmul-implied rate in each mode (of the best repetitions), % of the"
echo "#   OpenBLAS-sgemm-implied rate (the yardstick before oneDNN, issue 19) and the pass's own GFLOP/s:"
printf '%s\n' "${summary[@]}"
if [ ${#prof[@]} -gt 0 ]; then
	echo "# where the CPU cycles of one stats-only actdump go (perf, T=$T; load $(cut -d' ' -f1-3 /proc/loadavg)):"
	printf '%s\n' "${prof[@]}"
fi
