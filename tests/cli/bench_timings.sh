#!/usr/bin/env bash
# The benchmarks' reading of actdump --timings (tests/bench/timings, used by
# bench/actdump.sh, bench/peers/run.sh and bench-big's summary) on real
# actdump output, so that a change of actdump's lines cannot turn the
# benchmark tables into zeros silently (bench-big printed "forward 0.0 s,
# 0.00 tok/s" for an 88 s run: it read the last "actdump: " line, which is
# now the kernels line).  Independent sources: T is the number of ids given,
# the forward time is positive and at most the wall time this test measured
# around the process; bench-big's own script, run on a tiny mkbig model,
# prints, for each compute mode, the forward time and tokens/s that mode's
# actdump printed (read here with sed).
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
cd "$TMP" || exit 1
$PY -c 'import numpy' 2>/dev/null || { t_skip "numpy (python3-numpy) missing for mkmodel.py"; t_done; exit 0; }
. "$SS_ROOT/tests/bench/timings"
$PY "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen2 --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
	--inter 96 --vocab 300 q2 >/dev/null
seq 1 150 | tr '\n' ' ' >ids
t0=$(date +%s.%N)
actdump -m q2 --ids ids --timings -o q2.h5 2>q2.err
t1=$(date +%s.%N)
t_ok "the kernels line follows the summary line (what the old reading took)" \
	sh -c "tail -1 q2.err | grep -q '^actdump: kernels'"
if timings_read q2.err; then t_pass "timings_read reads actdump's summary"; else t_fail "timings_read reads actdump's summary"; fi
t_eq "T = the ids given" 150 "$TM_T"
t_ok "0 < forward ($TM_FORWARD s) <= wall ($t0 .. $t1)" \
	awk -v f="$TM_FORWARD" -v a="$t0" -v b="$t1" 'BEGIN { exit !(f > 0 && f <= b - a) }'
t_ok "tok/s = T / forward within 1% and the time's rounding to 1 ms ($TM_FORWARD_TOK)" \
	awk -v f="$TM_FORWARD" -v r="$TM_FORWARD_TOK" 'BEGIN { d = 150 / f - r; if (d < 0) d = -d; exit !(r > 0 && d <= (0.01 + 0.0005 / f) * r) }'
t_ok "compute <= forward, cpu > 0" \
	awk -v c="$TM_COMPUTE" -v f="$TM_FORWARD" -v u="$TM_CPU" 'BEGIN { exit !(c <= f && c > 0 && u > 0) }'
# fails loudly, naming the file, on output without the summary line
grep -v '^actdump: [0-9]* tokens' q2.err >noline.err
out=$(timings_read noline.err 2>&1); rc=$?
t_eq "no summary line: status 1" 1 "$rc"
t_match "no summary line: one line naming the file" '^timings: noline.err: no actdump --timings summary line' "$out"
sed 's/ forward \([0-9.]*\) s (/ forward 9\1 s (/' q2.err >bad.err
out=$(timings_read bad.err 2>&1); rc=$?
t_eq "forward time disagreeing with its tok/s: status 1" 1 "$rc"
t_match "forward disagreeing: named" '^timings: bad.err: forward 9' "$out"
# bench-big's script itself on a tiny model (2 layers, 3 shards)
BENCH_DIR=$TMP/big BENCH_MKBIG="--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --inter 96 --vocab 300 --shard-bytes 40000" \
	BENCH_T=64 bash "$SS_ROOT/tests/bench/big/actdump.sh" >big.out 2>&1
t_eq "bench-big (tiny) exits 0" 0 "$?"
# one block per compute mode, each with the figures of its own actdump run
for md in f32 bf16; do
	want=$(sed -n 's/^actdump: 64 tokens, .* forward \([0-9.]*\) s (\([0-9.]*\) tok\/s).*/\1 \2/p' "big/big-err-$md.txt" |
		awk '{ printf "%.3f %.2f", $1, $2 }')
	got=$(sed -n "s/^actdump    --compute $md, T=64, .*(forward \([0-9.]*\) s, \([0-9.]*\) tok\/s;.*/\1 \2/p" big.out)
	t_eq "bench-big's summary ($md): actdump's forward time and tok/s" "$want" "$got"
	t_ok "bench-big's summary ($md): tok/s > 0 ($got)" awk -v r="${got#* }" 'BEGIN { exit !(r > 0) }'
done
# the two blocks' ||h[L]|| (h5dump of each run's trace) differ: bf16 rounds the products' inputs
hl=$(grep -c '^  h\[2\]    ||h|| of the first positions: [0-9]' big.out)
t_eq "bench-big prints ||h[L]|| in both modes" 2 "$hl"
t_eq "bench-big's two modes differ in their numerics (bf16 is not f32 relabelled)" 2 \
	"$(grep '^  h\[2\]    ||h||' big.out | sort -u | wc -l)"
t_done
