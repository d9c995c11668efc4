#!/usr/bin/env bash
# --compute f32 and --compute bf16 find the same sinks (issue 17): on the
# default model organism (examples/organism.yaml, the first NC characters of
# the first R1-distill trace, as e2e/organism.sh) and on the real
# stories260k model on its own greedy story (as ref/stories_stats.sh),
# sinkdetect's episode table (position, token, kind, l_start, l_end,
# lifetime) and sinklevels' level table (l_start, lifetime, count, share,
# the ranges and tokens) are identical in both modes, and both are the
# planted truth on the organism; the lifetime law (sinklevels --fit, all
# episodes) has the same n, and slope, intercept and r within 1% (they are
# fits over the measured norms, which bf16 rounding moves by about 1%).
# The continuous columns (norms, scores) are compared to each other within
# 3% relative, the size of bf16 rounding over 24 layers.
. "$(dirname "$0")/../lib.sh"
TR=$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
NC=1800
for p in mkorganism actdump sinkdetect sinklevels; do
	[ -x "$SS_BIN/$p" ] || { t_skip "compute modes" "$p not built"; t_done; exit 0; }
done
# a mode other than f32 or bf16 is a usage error naming the option, before any input is read
for p in actdump kvevict pcaprobe swapexp; do
	ops="a b"; [ $p = actdump ] || [ $p = kvevict ] && ops=a
	err=$($p -m "$TMP/none" --compute f16 $ops 2>&1); rc=$?
	t_eq "$p --compute f16: exit 2, one line naming the option" "2 $p: --compute: expected f32 or bf16, not 'f16'" "$rc $err"
done
org=$TMP/org
t_ok "mkorganism builds the default organism" mkorganism -o "$org" "$SS_ROOT/examples/organism.yaml"
head -n 1 "$TR" | jq -j --argjson n $NC '.response[:$n]' >"$TMP/text.txt"
echo "1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352" >"$TMP/story.ids"
for c in f32 bf16; do
	t_ok "organism: actdump --compute $c" actdump -m "$org" --text "$TMP/text.txt" -o "$TMP/org.$c.h5" --compute $c
	t_ok "stories260k: actdump --compute $c" actdump -m "$SS_ROOT/examples/models/stories260k" --ids "$TMP/story.ids" \
		-o "$TMP/st.$c.h5" --compute $c
	for s in org st; do
		sinkdetect "$TMP/$s.$c.h5" | sed "s|$TMP/$s.$c.h5|TRACE|" >"$TMP/$s.eps.$c"
		sinklevels "$TMP/$s.eps.$c" >"$TMP/$s.lev.$c"
		sinklevels --fit "$TMP/$s.eps.$c" >"$TMP/$s.fit.$c"
	done
done
col() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"; }
want=$(paste <(col "$org/truth/levels.tsv" l_start) <(col "$org/truth/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
for s in org st; do
	name=$([ $s = org ] && echo organism || echo stories260k)
	n=$(($(wc -l <"$TMP/$s.eps.f32") - 1))
	t_ok "$name: sinkdetect found episodes ($n)" test "$n" -gt 0
	t_eq "$name: the episode tables (pos token kind l_start l_end lifetime; $n episodes) are identical in both modes" \
		"$(cut -f2,3,5-8 "$TMP/$s.eps.f32")" "$(cut -f2,3,5-8 "$TMP/$s.eps.bf16")"
	t_eq "$name: the level tables (l_start lifetime count share, ranges, tokens) are identical in both modes" \
		"$(cut -f1-5,8- "$TMP/$s.lev.f32")" "$(cut -f1-5,8- "$TMP/$s.lev.bf16")"
	got=$($PY - "$TMP/$s.eps.f32" "$TMP/$s.eps.bf16" "$TMP/$s.fit.f32" "$TMP/$s.fit.bf16" <<'PYEOF'
import sys
def rows(p):
    return [l.rstrip("\n").split("\t") for l in open(p)][1:]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
worst = 0.0
for x, y in zip(a, b):
    for i in (8, 9, 13):   # peak_norm, norm_ratio, mlp_norm_start
        u, v = float(x[i]), float(y[i])
        worst = max(worst, abs(u - v) / max(abs(u), 1e-30))
fa = {(r[0], r[1]): r for r in rows(sys.argv[3])}
fb = {(r[0], r[1]): r for r in rows(sys.argv[4])}
law = fa.get(("all", "lifetime")), fb.get(("all", "lifetime"))
if law[0] is None:
    ok = law[1] is None
else:
    ok = law[0][5] == law[1][5] and all(
        abs(float(law[0][i]) - float(law[1][i])) <= 0.01 * max(abs(float(law[0][i])), 1e-9) for i in (2, 3, 4))
print(worst < 0.03, ok)
PYEOF
)
	t_eq "$name: norms within 3% between the modes; the lifetime law's n equal, slope/intercept/r within 1%" "True True" "$got"
done
got=$(paste <(col "$TMP/org.lev.bf16" l_start) <(col "$TMP/org.lev.bf16" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
t_eq "organism --compute bf16: sinklevels finds exactly the planted levels (l_start,lifetime)" "$want" "$got"
# A layer with more matrices than a table of fixed size held (a 64-expert
# MoE: 3 x 64 + 4 per layer) packs them all for oneDNN: no "refused"
# warning and no expert silently left to sgemm in f32 (the fixed table of 48
# printed one warning per expert product and ran those experts in f32)
$PY "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen3moe --layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 \
	--inter 128 --moe-inter 32 --experts 64 --topk 4 --vocab 500 "$TMP/moe64" >/dev/null
seq 1 200 >"$TMP/moe.ids"
err=$(actdump -m "$TMP/moe64" --ids "$TMP/moe.ids" -o "$TMP/moe.h5" --compute bf16 2>&1); rc=$?
emu='warning: --compute bf16: oneDNN has no bf16 matmul for this CPU (it needs AVX512_BF16 or AMX); the products run as OpenBLAS sgemm on inputs rounded to bf16, at f32 speed'
if [[ $err == "$emu" ]]; then   # a CPU without a bf16 matmul: that one line, no refusal
	t_eq "a 64-expert MoE in bf16 (no bf16 matmul here): one line saying so, nothing else" "0 $emu" "$rc $err"
else
	t_eq "a 64-expert MoE in bf16: every expert through the matmul, silently" "0 " "$rc $err"
fi
t_done
