#!/usr/bin/env bash
# tsne against scikit-learn's Barnes-Hut TSNE (Debian python3-sklearn), side
# by side in one run on the same clustered data (tests/bench/tsne_ref.py gen:
# 20 clusters with L-dim latent structure in 896 dims), perplexity 30, 1000
# iterations, PCA init, learning rate auto, 2 threads each (sklearn n_jobs=2,
# OMP_WAIT_POLICY=passive so that its OpenMP threads do not spin when the
# machine is shared).  Quality: one evaluator for both embeddings
# (tsne_ref.py eval: the same input affinities P from the 896-dim data,
# exact output similarities); the ratio is tsne's KL over sklearn's (target
# <= 1.01).  Time: sklearn's wall time over tsne's.  Each size runs twice:
# L = 40 (50 principal components keep the data) and L = 150 (they do not:
# affinities computed in the PCA space would lose there).  Then tsne alone
# at N = 100000 (time and peak memory; KL is tsne's Barnes-Hut estimate).
# Foreign load: CPU seconds used by other processes during each run, per
# wall second (cores).
#   TSNE_BENCH_N="2000 10000"  TSNE_BENCH_L="40 150"  TSNE_BENCH_BIG=100000  (0 skips)
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
PY=/usr/bin/python3
R=$SS_ROOT/tests/bench/tsne_ref.py
B=$SS_BUILD/bench/tsne
mkdir -p "$B"
SIZES=${TSNE_BENCH_N:-"2000 10000"}
LATS=${TSNE_BENCH_L:-"40 150"}
BIG=${TSNE_BENCH_BIG:-100000}
HZ=$(getconf CLK_TCK)
cpu() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }
# run OUT CMD...: stdout of CMD to OUT; sets WALL CPU RSS_MB FOREIGN
run() {
	local out=$1; shift
	local c0; c0=$(cpu)
	/usr/bin/time -f "%e %U %S %M" -o "$B/time.txt" "$@" >"$out" 2>"$out.err"
	local rc=$?
	local c1; c1=$(cpu)
	read -r WALL u s m <"$B/time.txt"
	CPU=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.1f", u + s}')
	RSS_MB=$(awk -v m="$m" 'BEGIN{printf "%.0f", m / 1024}')
	FOREIGN=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v c="$CPU" -v w="$WALL" \
		'BEGIN{f = ((b - a) / hz - c) / w; printf "%.2f", f < 0 ? 0 : f}')
	return $rc
}
if ! $PY -c 'import sklearn, h5py, scipy' 2>/dev/null; then
	echo "tsne bench: SKIP (no sklearn/h5py/scipy in $PY)"; exit 0
fi
echo "machine: $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %-4s %-8s %8s %8s %8s %8s %10s %10s\n' N L tool wall_s cpu_s peak_MiB foreign KL_common KL_own
summary=()
for N in $SIZES; do
for L in $LATS; do
	d=$B/d$N.l$L
	[ -f "$d.npy" ] || $PY "$R" gen "$N" 896 "$N" "$d.npy" "$L"
	[ -f "$d.h5" ] || $PY "$R" h5 "$d.npy" "$d.h5"
	run "$B/sk$N.txt" env OMP_WAIT_POLICY=passive $PY "$R" sklearn "$d.npy" "$B/sk$N.npy" 30 1000 2 || { echo "sklearn failed"; cat "$B/sk$N.txt.err"; exit 1; }
	skw=$WALL skc=$CPU skm=$RSS_MB skf=$FOREIGN
	skkl=$(awk '{print $2}' "$B/sk$N.txt")
	run "$B/ours$N.txt" "$SS_BIN/tsne" --threads 2 -o "$B/ours$N.h5" "$d.h5:/X" || { echo "tsne failed"; cat "$B/ours$N.txt.err"; exit 1; }
	ow=$WALL oc=$CPU om=$RSS_MB of=$FOREIGN
	okl=$(sed -n 's/.*KL divergence \([0-9.]*\).*/\1/p' "$B/ours$N.txt.err")
	$PY "$R" eval "$d.npy" 30 "$B/ours$N.h5" "$B/sk$N.npy" >"$B/eval$N.txt"
	eo=$(awk 'NR==1{print $2}' "$B/eval$N.txt") es=$(awk 'NR==2{print $2}' "$B/eval$N.txt")
	printf '%-7s %-4s %-8s %8s %8s %8s %8s %10s %10s\n' "$N" "$L" sklearn "$skw" "$skc" "$skm" "$skf" "$es" "$skkl"
	printf '%-7s %-4s %-8s %8s %8s %8s %8s %10s %10s\n' "$N" "$L" tsne "$ow" "$oc" "$om" "$of" "$eo" "$okl"
	echo "        tsne stages: $(sed -n 's/.*s (\(pca.*\)), .*/\1/p' "$B/ours$N.txt.err")"
	summary+=("$(awk -v n="$N" -v l="$L" -v sw="$skw" -v ow="$ow" -v sc="$skc" -v oc="$oc" -v es="$es" -v eo="$eo" \
		'BEGIN{printf "N=%s x 896, L=%s: KL ratio %.3fx sklearn (target <= 1.01), time ratio %.1fx (sklearn wall / tsne wall; CPU %.1fx)", n, l, eo / es, sw / ow, sc / oc}')")
done
done
if [ "$BIG" -gt 0 ]; then
	d=$B/d$BIG.l40
	[ -f "$d.h5" ] || { $PY "$R" gen "$BIG" 896 "$BIG" "$d.npy" && $PY "$R" h5 "$d.npy" "$d.h5"; }
	run "$B/ours$BIG.txt" "$SS_BIN/tsne" --threads 2 -o "$B/ours$BIG.h5" "$d.h5:/X" || { echo "tsne failed"; cat "$B/ours$BIG.txt.err"; exit 1; }
	okl=$(sed -n 's/.*KL divergence \([0-9.]*\).*/\1/p' "$B/ours$BIG.txt.err")
	printf '%-7s %-4s %-8s %8s %8s %8s %8s %10s %10s\n' "$BIG" 40 tsne "$WALL" "$CPU" "$RSS_MB" "$FOREIGN" "-" "$okl(est)"
	echo "        tsne stages: $(sed -n 's/.*s (\(pca.*\)), .*/\1/p' "$B/ours$BIG.txt.err")"
fi
for s in "${summary[@]}"; do echo "$s"; done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
