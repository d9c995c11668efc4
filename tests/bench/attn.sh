#!/usr/bin/env bash
# attn_run alone at Qwen2.5-0.5B's attention shapes (tests/tools/attnbench.c),
# this tree's attention.c against the one of ATTN_BASE (default 5552984, the
# code before key tiling) built from git into $SS_BUILD/bench/attn-old and
# linked into the same attnbench process, which times old, new and sgemm in
# turn for BENCH_SECONDS (default 3; this machine's speed drifts 10-20% over
# minutes) and keeps the best of each; BENCH_REPS such runs (default 3) per
# length, medians reported.
# Each run also times OpenBLAS sgemm at the model's gate_up shape, so
# "of sgemm" compares with the speed the projections get in the same run,
# and one decoding step (the last query against all T keys).
# BENCH_T (default "512 2048 8192"), BENCH_THREADS (default 2).  The old
# code is compiled for x86-64-v3 (AVX2, as the suite was before run-time
# dispatch); the new one runs the kernels util/cpu.h picks (SINKSCOPE_ISA=avx2
# to compare the AVX2 path).  The CPU that
# other processes used during each run is printed (cores); above 0.25 the
# run is marked LOADED, and the cpu figures (CPU time / threads) move less.
# The bf16 compute mode's attention (attn_set_compute: bf16 QK^T and PV,
# f32 sums; its kernels named on the first line) runs in the same turns:
# each run prints "bf16" with its ratio to "new" (f32) from that run and
# the load average at its end; the medians of those ratios per length.
# On a CPU with AMX, "bf16" runs the AMX tiles (bf16-amx) and "vdp" the
# same mode on the vdpbf16ps tiles (bf16-avx512bf16) in the same turns;
# SINKSCOPE_ISA=avx512bf16 makes "bf16" the vdpbf16ps one (no "vdp").
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BUILD:=$SS_ROOT/build}"
B=$SS_BUILD/bench
O=$B/attn-old
TH=${BENCH_THREADS:-2}
BASE=${ATTN_BASE:-5552984}
mkdir -p "$O"
# the old attention.c with its functions renamed old_attn_*, linked into a
# second attnbench that then times both in turn (attnbench.c)
# (src/lib/engine/attention.c from the library's folders on; one file up to 938a532)
git -C "$SS_ROOT" show "$BASE:src/lib/engine/attention.c" >"$O/attention.c" 2>/dev/null ||
	git -C "$SS_ROOT" show "$BASE:src/lib/attention.c" >"$O/attention.c" || exit 1
ren="-Dattn_create=old_attn_create -Dattn_run=old_attn_run -Dattn_free=old_attn_free"
ren="$ren -Dattn_memory_estimate=old_attn_memory_estimate -Dattn_set_key_tile=old_attn_set_key_tile"
ren="$ren -Dattn_set_layer=old_attn_set_layer -Dattn_run_sel=old_attn_run_sel"
cc -std=c11 -D_GNU_SOURCE -O2 -march=x86-64-v3 $ren -I"$SS_ROOT/src/lib" -I"$SS_ROOT/src/lib/engine" -I"$SS_ROOT/src/lib/util" $(pkg-config --cflags openblas) \
	-c "$O/attention.c" -o "$O/attention.o" || exit 1
cc -o "$O/attnbench" "$SS_BUILD/tools/attnbench.o" "$O/attention.o" "$SS_BUILD/libsinkscope.a" \
	$(pkg-config --libs openblas) -ldnnl -lgomp -lm -pthread || exit 1

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
hz=$(getconf CLK_TCK)
# one T: one attnbench run (old and new in turn); prints a line for each
one() {
	local b0 b1 t0 t1 line
	b0=$(busy); t0=$(date +%s.%N)
	line=$(/usr/bin/time -f '%U %S' -o "$B/attn-time.txt" "$O/attnbench" "$1" "$TH" "${BENCH_SECONDS:-3}") || return 1
	t1=$(date +%s.%N); b1=$(busy)
	echo "$line" | awk -v b0="$b0" -v b1="$b1" -v hz="$hz" -v t0="$t0" -v t1="$t1" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" \
		-v own="$(awk '{print $1+$2}' "$B/attn-time.txt")" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		f = ((b1 - b0) / hz - own) / (t1 - t0); if (f < 0) f = 0
		for (k = 0; k < 4; k++) {
			p = k == 3 ? "vdp_" : k == 2 ? "bf16_" : k ? "" : "old_"
			if (!((p "attn_gflops") in v)) continue
			printf "%-4s T=%-5d attn %6.1f GFLOP/s (%5.1f%% of sgemm %6.1f)  cpu %6.1f (%5.1f%% of %6.1f)  decode %6.1f us  sum_recv %s  foreign load %.2f cores%s\n",
				k == 3 ? "vdp" : k == 2 ? "bf16" : k ? "new" : "old", v["T"], v[p "attn_gflops"], 100 * v[p "ratio"], v["sgemm_gflops"],
				v[p "attn_gflops_cpu"], 100 * v[p "ratio_cpu"], v["sgemm_gflops_cpu"], v[p "decode_us"], v[p "sum_recv"], f,
				(f > 0.25 ? "  LOADED" : "")
		}
		printf "ratio T=%-5d bf16/f32 %.3f (attn GFLOP/s, this run)  cpu %.3f  kernels %s vs %s",
			v["T"], v["bf16_attn_gflops"] / v["attn_gflops"], v["bf16_attn_gflops_cpu"] / v["attn_gflops_cpu"],
			v["bf16_kernels"], v["kernels"]
		if ("vdp_attn_gflops" in v)
			printf "  vdp/f32 %.3f (cpu %.3f, %s)", v["vdp_attn_gflops"] / v["attn_gflops"],
				v["vdp_attn_gflops_cpu"] / v["attn_gflops_cpu"], v["vdp_kernels"]
		printf "  load average %s\n", la
	}'
}
med() { sort -n | awk -v d="${1:-1}" '{r[NR] = $1} END {printf "%." d "f", NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2}'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads; old = $BASE; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for T in ${BENCH_T:-512 2048 8192}; do
	: >"$B/attn-runs.txt"
	for rep in $(seq "${BENCH_REPS:-3}"); do
		one "$T" | tee -a "$B/attn-runs.txt"
	done
	for n in old new bf16 vdp; do
		grep -q "^$n " "$B/attn-runs.txt" || continue
		g=$(grep "^$n " "$B/attn-runs.txt" | sed 's/.*attn *\([0-9.]*\) GFLOP.*/\1/' | med)
		r=$(grep "^$n " "$B/attn-runs.txt" | sed 's/.*(\( *[0-9.]*\)% of sgemm.*/\1/' | med)
		rc=$(grep "^$n " "$B/attn-runs.txt" | sed 's/.*cpu *[0-9.]* (\( *[0-9.]*\)% of.*/\1/' | med)
		echo "# $n T=$T: median attn $g GFLOP/s, $r% of sgemm (cpu $rc%) over ${BENCH_REPS:-3} runs"
	done
	echo "# bf16/f32 T=$T: median ratio $(grep '^ratio ' "$B/attn-runs.txt" | sed 's/.*bf16\/f32 \([0-9.]*\).*/\1/' | med 3) over ${BENCH_REPS:-3} runs (each from one run)"
	grep -q ' vdp/f32 ' "$B/attn-runs.txt" &&
		echo "# vdp/f32 T=$T: median ratio $(grep '^ratio ' "$B/attn-runs.txt" | sed 's/.* vdp\/f32 \([0-9.]*\).*/\1/' | med 3) over ${BENCH_REPS:-3} runs"
done
