#!/usr/bin/env bash
# Cheap swaps and decoding on a random model with Qwen2.5-0.5B's shapes
# (hidden 896, 24 layers, 14 heads, 2 KV heads, head_dim 64, intermediate
# 4864, vocab 151936, q/k/v bias, tied, bf16), written into build/bench by
# tests/tools/mkmodel.py (about 1 GB, made once).
#   - one full forward pass of T=2048 tokens (stats on, cache filled);
#   - 100 targets x 10 layers x 3 components of swaps, re-run layer-major
#     against the cache: swaps/s and one swap's cost over the forward's
#     (target: <= 1/100);
#   - decoding 16 tokens after the 2048-token context, f32 and bf16 caches.
# THREADS (default 2).  The machine's load average is printed with the run:
# foreign load slows every figure.
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BUILD:=$SS_ROOT/build}"
M=$SS_BUILD/bench/qwen05b
TH=${THREADS:-2}
if [ ! -f "$M/model.safetensors" ]; then
	mkdir -p "$SS_BUILD/bench"
	/usr/bin/python3 "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen2 --dtype bf16 --tied --layers 24 \
		--hidden 896 --heads 14 --kv-heads 2 --head-dim 64 --inter 4864 --vocab 151936 "$M" >/dev/null || exit 1
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  threads: $TH"
OPENBLAS_NUM_THREADS=1 "$SS_BUILD/tools/swapbench" "$M" 2048 100 10 "$TH" 16 | tee "$SS_BUILD/bench/swap.kv" || exit 1
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk '$1=="swap_over_forward" { printf "one swap = 1/%.0f of a forward pass (target: 1/100 or less): %s\n", 1/$2, ($2 <= 0.01 ? "met" : "NOT met") }' "$SS_BUILD/bench/swap.kv"
