#!/usr/bin/env bash
# kvevict's cost against actdump's stats-only pass, in the same run, on the
# random model with Qwen2.5-0.5B's shapes that bench/actdump.sh writes
# (made here when absent), T=512 (BENCH_T), 2 threads (BENCH_THREADS):
#   act   actdump stats only (-o FILE)
#   ref   kvevict --policies full: the reference pass and its output layer
#   pairs kvevict with the five other policies at budget B (BENCH_BUDGET,
#         default 128): the reference plus five policy passes
# per pair = (pairs - ref) / 5, reported as a ratio to act; "forward part"
# takes out the output layer and the comparison, (ref - act), which the
# stats-only pass never does (the issue's target: about one stats-only pass).
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
PY=/usr/bin/python3
B=$SS_BUILD/bench
M=$B/qwen05-shape
TH=${BENCH_THREADS:-2} T=${BENCH_T:-512} BUD=${BENCH_BUDGET:-128}
mkdir -p "$B"
. "$SS_ROOT/tests/bench/qwen05_model"
[ -f "$B/ids$T" ] || $PY -c "
import numpy as np; r = np.random.default_rng($T)
print(' '.join(map(str, [1] + list(r.integers(0, 151936, $T - 1)))))" >"$B/ids$T"
secs() { local t0 t1; sleep 1; t0=$(date +%s.%N); "$@" >/dev/null 2>"$B/kv.err" || { echo "failed: $* $(head -2 "$B/kv.err")" >&2; exit 1; }
	t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}'; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads, load $(cut -d' ' -f1 /proc/loadavg)"
act=$(secs "$SS_BIN/actdump" -m "$M" --ids "$B/ids$T" -t "$TH" -o "$B/kv.h5"); rm -f "$B/kv.h5"
ref=$(secs "$SS_BIN/kvevict" -m "$M" --ids "$B/ids$T" -t "$TH" --policies full --budgets "$BUD")
pairs=$(secs "$SS_BIN/kvevict" -m "$M" --ids "$B/ids$T" -t "$TH" --policies window,streaming,sinks,heavy,random --budgets "$BUD")
act2=$(secs "$SS_BIN/actdump" -m "$M" --ids "$B/ids$T" -t "$TH" -o "$B/kv.h5"); rm -f "$B/kv.h5"
awk -v T="$T" -v B="$BUD" -v a1="$act" -v a2="$act2" -v r="$ref" -v p="$pairs" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
	a = (a1 + a2) / 2; pp = (p - r) / 5
	printf "T=%d budget %d: actdump stats-only %.2f s (%.2f, %.2f); kvevict reference %.2f s; 5 pairs %.2f s\n", T, B, a, a1, a2, r, p
	printf "kvevict per policy-budget pair: %.2f s = %.2f x actdump stats-only; forward part (minus the output layer, %.2f s): %.2f x\n",
		pp, pp / a, r - a, (pp - (r - a)) / a
	printf "# load average at the end: %s (a loaded machine inflates every figure alike)\n", l }'
