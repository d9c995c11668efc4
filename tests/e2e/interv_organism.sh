#!/usr/bin/env bash
# swapexp and pcaprobe on the model organism (mkorganism(1)), whose answer is
# planted: truth/decision.tsv says, for each start layer, swap layer and
# component, whether the swap prevents the sinks of that l_start (resid: every layer;
# mlp_out: the decision layer and l_start; attn_out: never), and
# truth/directions.tsv gives the direction the formation MLP reads.
#   - every planted (layer, component) outcome is found for every target
#     (fraction suppressed exactly 1 or 0);
#   - the earliest mlp_out layer that suppresses is the planted decision layer;
#   - the planted direction lies in the span of pcaprobe's top 6 principal
#     components of mlp_in at l_start (what is left: the bulk and u
#     coordinates the nuisance moves), and the MLP amplifies along it
#     (gain > 2 at 2 sd);
#   - pcaprobe cos_u (the response's direction) follows gain - 1 in sign, 0 at
#     alpha 0; swapexp base_score is the episode's score_start (layer l_start+1).
. "$(dirname "$0")/../lib.sh"
for p in mkorganism actdump sinkdetect swapexp pcaprobe; do
	if [ ! -x "$SS_BIN/$p" ]; then t_skip "organism swaps and PCA" "$p not built yet"; t_done; exit 0; fi
done
cd "$TMP" || exit 1
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null || { t_fail "mkorganism"; t_done; exit 0; }
# the first 1800 characters of the first trace's response (593 tokens),
# tokenized by actdump itself (so /tokens/text is filled)
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" |
	jq -j '.response[:1800]' >text.txt
actdump -m org --text text.txt --acts resid,mlp_in -o t.h5
sinkdetect t.h5 >eps.tsv
# truth/decision.tsv: rows per start layer (levels start at several)
LS=$(awk -F'\t' 'NR==2{print $2}' org/truth/decision.tsv)
LMAX=$(awk -F'\t' 'NR>1 && $2>m {m=$2} END {print m}' org/truth/decision.tsv)
LD=$(awk -F'\t' 'NR==2{print $1}' org/truth/decision.tsv)
t_ok "truth: more than one start layer ($(cut -f2 org/truth/decision.tsv | sed 1d | sort -u | xargs))" \
	test "$(cut -f2 org/truth/decision.tsv | sed 1d | sort -u | wc -l)" -gt 1
t_ok "swapexp on the organism" swapexp -m org t.h5 eps.tsv -w "$LMAX" --summary -o sum.tsv
# per level (the summary's rows per level: its l_start), each layer from 1
want=$(awk -F'\t' 'NR>1 {print $2, $4, $3, $5}' org/truth/decision.tsv | sort -u)
got=$(awk -F'\t' 'NR==FNR { if (FNR>1) k[$2" "$4" "$3]=1; next }
	$1!="all" && FNR>1 && (($2" "$4" "$6) in k) {print $2, $4, $6, $9}' org/truth/decision.tsv sum.tsv | sort -u)
t_eq "every planted swap outcome found, per start layer (l_start, component, layer, fraction)" "$want" "$got"
dec=$(awk -F'\t' '$1!="all" && $4=="mlp_out" && $10==1 {print $6}' sum.tsv | sort -u)
t_eq "decision layer (earliest suppressing mlp_out swap) is the planted one" "$LD" "$dec"
t_ok "pcaprobe on the organism" pcaprobe -m org t.h5 eps.tsv --layer "$LS" --n-components 6 --vectors -o vec.tsv
# the planted direction of this start layer against the top 6 components:
# with the nuisance tokens (truth/nuisance.tsv: norms 2-30x the median) the
# first components are the RMSNorm's bulk and u coordinates of those
# tokens, and at the first start layer the later start layer's future
# sinks already carry their own decision axis (set at ld), of about the
# same variance, so the two mix between components: the planted direction
# lies in the span of the top 6 (projection > 0.98), and the component
# closest to it is the one the MLP amplifies
read -r k c p < <(awk -F'\t' 'NR==FNR { if ($1=="decision") dir=$5; next } FNR>1 {
	n=split($5, a, ","); split(dir, b, ","); s=0; na=0; nb=0
	for (i=1;i<=n;i++) { s+=a[i]*b[i]; na+=a[i]*a[i]; nb+=b[i]*b[i] }
	c=s/sqrt(na*nb); pr+=c*c; if (c<0) c=-c; if (c > best) { best=c; k=$3 } } END { print k, best, sqrt(pr) }' <(awk -F'\t' -v l="$LS" '$2==l' org/truth/directions.tsv) vec.tsv)
t_ok "the planted direction lies in the span of the top 6 components (projection $p > 0.98)" awk -v c="$p" 'BEGIN{exit !(c > 0.98)}'
t_ok "the closest component (number $k, |cos| $c) is mostly the planted direction (> 0.8)" awk -v c="$c" 'BEGIN{exit !(c > 0.8)}'
g=$(pcaprobe -m org t.h5 eps.tsv --layer "$LS" --n-components 6 -a 2 | awk -F'\t' -v k="$k" 'NR>1 && $3==k {print $9}')
t_ok "the MLP amplifies along that component (gain at 2 sd: $g)" awk -v g="$g" 'BEGIN{exit !(g > 2)}'
# cos_u is the direction of the MLP's response to the move (pcaprobe(1)):
# the organism's MLP at l_start writes along the sink axis and the start
# layer's marker only (cosine 0.995 to u), so the response is along it, growing the sink
# where the gain exceeds 1 and shrinking it where the gain is below; no
# response at alpha 0
pcaprobe -m org t.h5 eps.tsv --layer "$LS" --n-components 4 -a -2,0,2 -o pc.tsv
bad=$(awk -F'\t' 'NR>1 { g = $9; c = $10; a = c < 0 ? -c : c
	if ($8 == 0) { if (c != 0) n++ } else if (a < 0.99 || (g > 1) != (c > 0)) n++ } END { print n + 0 }' pc.tsv)
t_eq "pcaprobe cos_u: 0 at alpha 0, else |cos_u| > 0.99 with the sign of gain - 1 (12 rows)" 0 "$bad"
t_eq "pcaprobe cos_u takes both signs (it varies with the response)" "-1 1" \
	"$(awk -F'\t' 'NR>1 && $8 != 0 { print ($10 > 0) ? 1 : -1 }' pc.tsv | sort -un | xargs)"
# swapexp scores where the sink is first visible: layer l_start + 1, the
# episode table's score_start (sinkdetect(1)); at l_start it is ~1e-38
swapexp -m org t.h5 eps.tsv -w 1 --components resid -o sw.tsv
bad=$(awk -F'\t' 'NR==FNR { if (FNR==1) { for (i=1;i<=NF;i++) h[$i]=i; next } if ($h["kind"]=="secondary") s[$h["pos"]]=$h["score_start"]; next }
	FNR>1 { d = $18 - s[$2]; if (d < 0) d = -d; if (!($2 in s) || d > 1e-4 * s[$2] || $18 < 1e-4) n++; m++ } END { print n + 0, m + 0 }' eps.tsv sw.tsv)
t_eq "swapexp base_score = score_start of every target (> 1e-4)" "0 $(awk -F'\t' 'NR>1 && $5=="secondary"' eps.tsv | wc -l)" "$bad"
t_done
