#!/usr/bin/env bash
# swapexp and pcaprobe on the model organism (mkorganism(1)), whose answer is
# planted: truth/decision.tsv says, for each swap layer and component,
# whether the swap prevents the sinks of l_start (resid: every layer;
# mlp_out: the decision layer and l_start; attn_out: never), and
# truth/directions.tsv gives the direction the formation MLP reads.
#   - every planted (layer, component) outcome is found for every target
#     (fraction suppressed exactly 1 or 0);
#   - the earliest mlp_out layer that suppresses is the planted decision layer;
#   - one of pcaprobe's top 4 principal components of mlp_in at l_start has
#     |cos| > 0.98 with the planted direction (what is left: the bulk and u
#     coordinates the nuisance moves), and the MLP amplifies along it
#     (gain > 2 at 2 sd).
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
LS=$(awk -F'\t' 'NR==2{print $2}' org/truth/decision.tsv)
LD=$(awk -F'\t' 'NR==2{print $1}' org/truth/decision.tsv)
t_ok "swapexp on the organism" swapexp -m org t.h5 eps.tsv -w "$LS" --summary -o sum.tsv
want=$(awk -F'\t' -v ls="$LS" 'NR>1 {print $4, $3 - ls, $5}' org/truth/decision.tsv | sort)
got=$(awk -F'\t' 'NR==FNR { if (FNR>1) k[$4" "($3-'"$LS"')]=1; next }
	$1=="all" && (($4" "$5) in k) {print $4, $5, $9}' org/truth/decision.tsv sum.tsv | sort)
t_eq "every planted swap outcome found (component, rel_layer, fraction)" "$want" "$got"
dec=$(awk -F'\t' '$1!="all" && $4=="mlp_out" && $10==1 {print $6}' sum.tsv | sort -u)
t_eq "decision layer (earliest suppressing mlp_out swap) is the planted one" "$LD" "$dec"
t_ok "pcaprobe on the organism" pcaprobe -m org t.h5 eps.tsv --layer "$LS" --components 4 --vectors -o vec.tsv
# the component closest to the planted direction: with the nuisance tokens
# (truth/nuisance.tsv: norms 2-30x the median), the first components are
# the RMSNorm's bulk and u coordinates of those tokens, not the decision
read -r k c < <(awk -F'\t' 'NR==FNR { if ($1=="decision") dir=$5; next } FNR>1 {
	n=split($5, a, ","); split(dir, b, ","); s=0; na=0; nb=0
	for (i=1;i<=n;i++) { s+=a[i]*b[i]; na+=a[i]*a[i]; nb+=b[i]*b[i] }
	c=s/sqrt(na*nb); if (c<0) c=-c; if (c > best) { best=c; k=$3 } } END { print k, best }' org/truth/directions.tsv vec.tsv)
t_ok "one of the top 4 components (number $k) has |cos| with the planted direction > 0.98 (got $c)" awk -v c="$c" 'BEGIN{exit !(c > 0.98)}'
g=$(pcaprobe -m org t.h5 eps.tsv --layer "$LS" --components 4 -a 2 | awk -F'\t' -v k="$k" 'NR>1 && $3==k {print $9}')
t_ok "the MLP amplifies along that component (gain at 2 sd: $g)" awk -v g="$g" 'BEGIN{exit !(g > 2)}'
t_done
