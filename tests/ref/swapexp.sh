#!/usr/bin/env bash
# swapexp and pcaprobe against independent expectations (tests/ref/swap_ref.py:
# the float64 PyTorch reference with the component replaced and a full
# forward pass per swap; numpy PCA and MLP), on a random Qwen2 model whose
# trace the reference writes.  With --tau-cos -0.99 --tau-norm 1.2 the sink
# rule marks the high-norm positions, so there are sinks to suppress.
#   --exact: norm, cos0, median and sink-score within 1e-4 of the reference,
#            sink flags identical;
#   default (cheap re-runs): norm and cos0 within 1e-4 (exact by causality),
#            the median within 2e-2 and the sink-score within 0.3 relative
#            (swapexp(1): later positions are not re-run);
#   pcaprobe: variance ratios, projections, gains and cosines within 1e-4.
# Then each bad input: one line, exit 1.
. "$(dirname "$0")/../lib.sh"
if ! have_py torch || ! have_py h5py || ! have_py numpy; then
	t_skip "swapexp/pcaprobe reference checks" "python3-torch, h5py or numpy absent for $PY"
	t_done; exit 0
fi
REF=$SS_ROOT/tests/ref/swap_ref.py
MK=$SS_ROOT/tests/tools/mkmodel.py
cd "$TMP" || exit 1
TC=-0.99 TN=1.2 W=3
RULE=(--tau-cos $TC --tau-norm $TN)
$PY "$MK" --arch qwen2 --dtype f32 --layers 4 M >/dev/null
$PY "$MK" --arch qwen2 --dtype f32 --layers 4 --seed 9 M2 >/dev/null
$PY "$MK" --arch llama --dtype f32 --layers 4 ML >/dev/null
$PY -c "import random; random.seed(3); print(' '.join(str(random.randrange(256)) for _ in range(64)))" >ids
$PY "$REF" trace M ids t.h5
$PY "$REF" trace ML ids tl.h5
$PY "$REF" targets t.h5 $TC $TN 4 >eps.tsv
t_eq "reference finds 4 episode starts" 4 "$(($(wc -l <eps.tsv) - 1))"
$PY "$REF" swaps M t.h5 eps.tsv $W $TC $TN >exp.tsv

# compare COLUMN-OF-EXP COLUMN-OF-GOT TOL MODE(rel|abs) over aligned rows
# (the second file's columns follow the first's in the pasted row)
cmpcol() { paste "$1" "$2" | awk -F'\t' -v a="$3" -v b="$4" -v t="$5" -v m="$6" \
	-v nf="$(head -n 1 "$1" | awk -F'\t' '{ print NF }')" '
	NR > 1 { d = $a - $(b + nf); if (d < 0) d = -d; s = $a < 0 ? -$a : $a
	         if (m == "rel") { if (s < 1e-6) s = 1e-6; d /= s }
	         if (d > w + 0) w = d; n++ }
	END { printf "%d %.3g\n", n, w; exit !(n > 0 && w <= t) }'; }
NE=$(($(wc -l <exp.tsv) - 1))
t_eq "reference: one row per (target, layer, component)" \
	"$(awk -F'\t' -v w=$W 'NR>1 {lo = $4 - w + 1; if (lo < 1) lo = 1; n += 3 * ($4 - lo + 1)} END {print n}' eps.tsv)" "$NE"

swapexp -m M t.h5 eps.tsv -w $W "${RULE[@]}" --exact >exact.tsv
t_eq "--exact: one row per swap" "$NE" "$(($(wc -l <exact.tsv) - 1))"
# exact.tsv columns: 2 pos 7 layer 9 comp 11 sink 14 norm 15 median 17 cos0 19 score
cut -f2,7,9,14,17,15,19,11 exact.tsv | awk -F'\t' 'BEGIN{OFS="\t"} {print $1,$2,$3,$5,$7,$6,$8,$4}' >ex.tsv
t_eq "--exact: rows in the reference's order" "$(cut -f1-3 exp.tsv)" "$(cut -f1-3 ex.tsv)"
for c in "4 norm" "5 cos0" "6 median" "7 score"; do set -- $c
	r=$(cmpcol exp.tsv ex.tsv "$1" "$1" 1e-4 rel); t_ok "--exact $2 within 1e-4 of the reference ($r)" test $? -eq 0
done
t_eq "--exact: sink flags as the reference" "$(cut -f8 exp.tsv)" "$(cut -f8 ex.tsv)"

swapexp -m M t.h5 eps.tsv -w $W "${RULE[@]}" >cheap.tsv
cut -f2,7,9,14,17,15,19,11 cheap.tsv | awk -F'\t' 'BEGIN{OFS="\t"} {print $1,$2,$3,$5,$7,$6,$8,$4}' >ch.tsv
for c in "4 norm 1e-4" "5 cos0 1e-4" "6 median 2e-2" "7 score 0.3"; do set -- $c
	r=$(cmpcol exp.tsv ch.tsv "$1" "$1" "$3" rel); t_ok "cheap $2 within $3 of the reference ($r)" test $? -eq 0
done
t_eq "cheap: sink flags as the reference" "$(cut -f8 exp.tsv)" "$(cut -f8 ch.tsv)"
swapexp -m M t.h5 eps.tsv -w $W "${RULE[@]}" --kv bf16 >bf.tsv
r=$(cmpcol cheap.tsv bf.tsv 14 14 1e-2 rel); t_ok "bf16 cache: norms within 1e-2 of f32 ($r)" test $? -eq 0

# summary: the "all" rows count the rows' base sinks and suppressions
swapexp -m M t.h5 eps.tsv -w $W "${RULE[@]}" --summary >sum.tsv
want=$(awk -F'\t' 'NR>1 && $10==1 {n[$9" "$8]++; s[$9" "$8]+=$12} END {for (k in n) print k, n[k], s[k]}' cheap.tsv | sort)
got=$(awk -F'\t' '$1=="all" {print $4, $5, $7, $8}' sum.tsv | sort)
t_eq "--summary: level 'all' counts match the rows" "$want" "$got"
t_match "--summary: a decision layer is marked" $'\t1$' "$(awk -F'\t' 'NR>1' sum.tsv)"

# pcaprobe
LS=$(awk -F'\t' 'NR==2 {print $4}' eps.tsv)
pcaprobe -m M t.h5 eps.tsv --layer "$LS" --n-components 3 -a -2,0,2 "${RULE[@]}" >pc.tsv
$PY "$REF" probe M t.h5 eps.tsv "$LS" 3 -2,0,2 $TC $TN >pe.tsv
cut -f3,4,6,7,8,9,10 pc.tsv | awk -F'\t' 'BEGIN{OFS="\t"} {print $1,$2,$3,$4,$5,$6,$7}' >pg.tsv
for c in "2 var_ratio" "3 proj_sinks" "4 proj_controls" "6 gain" "7 cos_u"; do set -- $c
	r=$(cmpcol pe.tsv pg.tsv "$1" "$1" 1e-4 abs); t_ok "pcaprobe $2 within 1e-4 of numpy ($r)" test $? -eq 0
done
pcaprobe -m M t.h5 eps.tsv --layer "$LS" --n-components 3 --per-sink "${RULE[@]}" >ps.tsv
t_ok "pcaprobe --per-sink: one row per future sink" test "$(($(wc -l <ps.tsv) - 1))" -eq \
	"$(awk -F'\t' -v l="$LS" 'NR>1 && $4==l' eps.tsv | wc -l)"

# bad input
printf 'pos\tl_start\n999\t2\n' >far.tsv
printf 'pos\tl_start\n3\t99\n' >deep.tsv
printf 'pos\tkind\tl_start\n0\tprimary\t1\n' >prim.tsv
t_fails "target position out of range" 1 "far.tsv:2: pos 999 out of range" swapexp -m M t.h5 far.tsv
t_fails "target layer out of range" 1 "deep.tsv:2: l_start 99 out of range 1-4" swapexp -m M t.h5 deep.tsv
t_fails "no secondary episode" 1 "no secondary episode" swapexp -m M t.h5 prim.tsv
t_fails "trace of another architecture" 1 "tl.h5:/:architecture: 'LlamaForCausalLM'" swapexp -m M tl.h5 eps.tsv
t_fails "trace of another model with the same shapes" 1 "t.h5:/stats/resid_norm: .*another model" \
	swapexp -m M2 t.h5 eps.tsv "${RULE[@]}"
t_fails "empty control set" 1 "empty control set" swapexp -m M t.h5 eps.tsv --classes digit "${RULE[@]}"
t_fails "window 0 is a usage error" 2 "^swapexp: --window: 0 must be at least 1$" swapexp -m M t.h5 eps.tsv -w 0
t_fails "missing model is a usage error" 2 "^swapexp: -m, --model: missing" swapexp t.h5 eps.tsv
T_OUT=$TMP/o.tsv t_fails "nothing written on failure" 1 "empty control set" swapexp -m M t.h5 eps.tsv --classes digit "${RULE[@]}" -o "$TMP/o.tsv"
t_fails "pcaprobe: layer out of range (a usage error, checked against config.json before the trace is read)" 2 "^pcaprobe: --layer: 99 outside 1-4, the layers of M$" pcaprobe -m M t.h5 eps.tsv --layer 99
t_fails "pcaprobe: trace of another architecture" 1 "architecture" pcaprobe -m M tl.h5 eps.tsv
t_fails "pcaprobe: empty control set" 1 "empty control set" pcaprobe -m M t.h5 eps.tsv --layer "$LS" --classes digit "${RULE[@]}"
t_fails "pcaprobe: target out of range" 1 "far.tsv:2: pos 999" pcaprobe -m M t.h5 far.tsv
t_fails "pcaprobe: too many components" 2 "^pcaprobe: --n-components: 0 must be at least 1$" pcaprobe -m M t.h5 eps.tsv --n-components 0
$PY -c "
import h5py, shutil; shutil.copy('t.h5', 'na.h5'); f = h5py.File('na.h5', 'a'); del f['acts/mlp_in']"
sed 's/^t\.h5/na.h5/' eps.tsv >na.tsv
t_fails "pcaprobe: activations not stored" 1 "na.h5:/acts/mlp_in" pcaprobe -m M na.h5 na.tsv --layer "$LS"
t_done
