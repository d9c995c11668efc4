#!/usr/bin/env bash
# examples/demo.sh - the main job (`make demo`): the pipeline
#     actdump -m MODEL TEXT | sinkdetect | sinklevels   (actdump tokenizes TEXT)
# on two shipped models:
#   1. the model organism: a SYNTHETIC Qwen2 (24 layers, d_model 64) whose
#      weights are built by hand by mkorganism(1) to plant secondary sinks
#      of known levels; the levels found are printed next to the planted
#      ones (examples/organism/truth/).  It is not a language model.
#   2. the real stories260k model (a 260K-parameter Llama trained on
#      TinyStories, examples/models/stories260k/) on a short story.
# actdump tokenizes the text itself with the model's tokenizer.json (the C
# tokenizer), so the traces carry the real token ids and their pieces in
# /tokens/text.  Outputs go to build/demo/ (DEMO_OUT).
set -u
cd "$(dirname "$0")/.."
B=${SS_BIN:-$PWD/bin}
OUT=${DEMO_OUT:-build/demo}
for p in mkorganism actdump sinkdetect sinklevels; do
	if [ ! -x "$B/$p" ]; then echo "demo: $B/$p is not built (run make)" >&2; exit 1; fi
done
mkdir -p "$OUT"
tab() { column -t -s $'\t' "$@"; }
col() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"; }

ORG=examples/organism
TRACE=examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
echo "== 1. The model organism: SYNTHETIC model with planted sinks (hand-built"
echo "==    weights, mkorganism(1); not a language model)"
if [ ! -f "$ORG/config.json" ] || [ examples/organism.yaml -nt "$ORG/config.json" ]; then
	"$B/mkorganism" -o "$ORG" examples/organism.yaml || exit 1
fi
echo "text: the response of the first trace in $TRACE"
echo "\$ actdump -m $ORG --jsonl $TRACE --field response --index 0 -o $OUT/organism.h5"
echo "\$ sinkdetect $OUT/organism.h5 > $OUT/organism.episodes.tsv; sinklevels [--fit] $OUT/organism.episodes.tsv"
"$B/actdump" -m "$ORG" --jsonl "$TRACE" --field response --index 0 -o "$OUT/organism.h5" || exit 1
"$B/actdump" --tokens-only -m "$ORG" --jsonl "$TRACE" --field response --index 0 >"$OUT/organism.tokens.tsv" || exit 1
"$B/sinkdetect" "$OUT/organism.h5" >"$OUT/organism.episodes.tsv" || exit 1
"$B/sinklevels" "$OUT/organism.episodes.tsv" >"$OUT/organism.levels.tsv" || exit 1
"$B/sinklevels" --fit "$OUT/organism.episodes.tsv" >"$OUT/organism.fit.tsv" || exit 1
echo
echo "levels found (sinklevels):"
cut -f1-7 "$OUT/organism.levels.tsv" | tab | sed 's/^/  /'
echo "levels planted (examples/organism/truth/levels.tsv):"
cut -f1-5,10 "$ORG/truth/levels.tsv" | tab | sed 's/^/  /'
want=$(paste <(col "$ORG/truth/levels.tsv" l_start) <(col "$ORG/truth/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
got=$(paste <(col "$OUT/organism.levels.tsv" l_start) <(col "$OUT/organism.levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
if [ "$want" = "$got" ]; then echo "=> every planted level (l_start,lifetime) recovered: $got"
else echo "=> MISMATCH: planted $want found $got"; fi
# planted tokens in the text (the tokenizer's ids, position 0 excluded) per level
want=$(awk -F'\t' 'NR==FNR { if (FNR>1) { n=split($11, a, ","); for (i=1;i<=n;i++) lev[a[i]]=$1 } next }
	FNR>2 && ($2 in lev) { c[lev[$2]]++ } END { for (k in c) print k":"c[k] }' "$ORG/truth/levels.tsv" "$OUT/organism.tokens.tsv" | sort -n | xargs)
got=$(paste -d: <(col "$OUT/organism.levels.tsv" level) <(col "$OUT/organism.levels.tsv" count) | xargs)
echo "episodes per level (level:count): found $got; planted tokens in the $(($(wc -l <"$OUT/organism.tokens.tsv") - 1))-token text $want"
fit=$(awk -F'\t' '$1=="all" && $2=="lifetime"{printf "lifetime = %.4g + %.4g ln(norm)  (r = %.4g, n = %d)", $4, $3, $5, $6}' "$OUT/organism.fit.tsv")
law=$(awk -F'\t' '$1=="ln_norm"{printf "lifetime = %g + %g ln(norm)", $4, $3}' "$ORG/truth/law.tsv")
echo "norm law fitted: $fit"
echo "norm law planted: $law"
echo "primary sink-score by layer (the valley is where the secondary sinks live):"
"$B/sinkdetect" --summary "$OUT/organism.h5" | awk -F'\t' 'NR>1{printf " %d:%.2f", $2, $6} END{print ""}'

echo
echo "== 2. A real model: stories260k (Llama, 5 layers, TinyStories)"
S=examples/models/stories260k
printf '%s\n' "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She ran to get it, but a dog took it first. Lily was sad, but then the dog came back and gave her the ball. They played together all day." >"$OUT/story.txt"
echo "\$ actdump -m $S $OUT/story.txt -o $OUT/story.h5; sinkdetect $OUT/story.h5 | sinklevels"
"$B/actdump" -m "$S" "$OUT/story.txt" -o "$OUT/story.h5" || exit 1
"$B/sinkdetect" "$OUT/story.h5" >"$OUT/story.episodes.tsv" || exit 1
echo "sink episodes: $(awk -F'\t' 'NR>1 && $5=="primary"' "$OUT/story.episodes.tsv" | wc -l) primary, $(awk -F'\t' 'NR>1 && $5=="secondary"' "$OUT/story.episodes.tsv" | wc -l) secondary"
cut -f2,3,5-12 "$OUT/story.episodes.tsv" | head -8 | tab | sed 's/^/  /'
echo "levels (sinklevels):"
"$B/sinklevels" "$OUT/story.episodes.tsv" | cut -f1-7 | tab | sed 's/^/  /'
echo "primary sink-score by layer:"
"$B/sinkdetect" --summary "$OUT/story.h5" | awk -F'\t' 'NR>1{printf " %d:%.2f", $2, $6} END{print ""}'
echo
echo "tables and traces: $OUT/"
