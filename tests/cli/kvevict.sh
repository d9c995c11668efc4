#!/usr/bin/env bash
# kvevict on the real stories260k model: a budget of at least T-1 keeps
# every key, so every policy equals full (kl <= 1e-9, ppl_ratio and top1 1
# within 1e-6: heavy and random run the plain attention in blocks); a budget
# that cuts moves the window policy; one row per policy and budget; text,
# --ids and --jsonl give the same numbers; two runs are identical; and each
# bad input is one line, exit 1 or 2, with no output left behind.
. "$(dirname "$0")/../lib.sh"
S=$SS_ROOT/examples/models/stories260k
cd "$TMP"
printf 'Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog Max. One day, they found a big red ball.' >story.txt
printf '{"text": "Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog Max. One day, they found a big red ball."}\n' >story.jsonl
actdump --tokens-only -m "$S" story.txt | awk -F'\t' 'NR>1{printf "%s ", $2}' >story.ids
T=$(wc -w <story.ids)
t_ok "kvevict over every policy, budgets T-1 and 1000 (T=$T)" kvevict -m "$S" -t 2 --budgets $((T - 1)),1000 -o all.tsv story.txt
t_eq "one row per policy and budget" "13 $T" "$(wc -l <all.tsv | tr -d ' ') $(awk -F'\t' 'NR==2{print $4}' all.tsv)"
# kl <= 1e-8: heavy and random take the selected path (the kept keys gathered,
# one sgemm) even when they keep every key, so their logits differ from the
# tiled full pass by float32 summation order (kl 1.6e-9 in the -O1 sanitizer
# build, below 1e-9 at -O2)
t_eq "budget >= T-1: every policy equals full (kl, ppl_ratio, top1, nll)" "" "$(awk -F'\t' 'NR>1{
	d=$5-$6; if (d<0) d=-d; r=$7-1; if (r<0) r=-r
	if ($8 > 1e-8 || $8 < 0 || r > 1e-6 || $9 < 1 - 1e-6 || d > 1e-6) print $2, $3, $5, $7, $8, $9}' all.tsv)"
t_ok "kvevict --budgets 8" kvevict -m "$S" -t 2 --budgets 8 -o b8.tsv story.txt
t_eq "budget 8 cuts: window and streaming lose (ppl_ratio > 1.001, kl > 1e-4)" "window streaming" \
	"$(awk -F'\t' '($2=="window" || $2=="streaming") && $7 > 1.001 && $8 > 1e-4 {printf "%s%s", n++?" ":"", $2}' b8.tsv)"
kvevict -m "$S" -t 2 --budgets 8 --ids story.ids >ids.tsv 2>/dev/null
kvevict -m "$S" -t 2 --budgets 8 --jsonl story.jsonl --field text --index 0 >jsonl.tsv 2>/dev/null
cut -f2- b8.tsv >a; cut -f2- ids.tsv >b; cut -f2- jsonl.tsv >c
t_eq "text, --ids and --jsonl: the same numbers" "same same" \
	"$(cmp -s a b && echo same) $(cmp -s a c && echo same)"
t_eq "the trace column names the input (FILE, FILE:ROW)" "story.txt story.ids story.jsonl:0" \
	"$(awk -F'\t' 'NR==2{print $1}' b8.tsv) $(awk -F'\t' 'NR==2{print $1}' ids.tsv) $(awk -F'\t' 'NR==2{print $1}' jsonl.tsv)"
kvevict -m "$S" -t 2 --budgets 8 story.txt >again.tsv 2>/dev/null
t_eq "two runs are identical" same "$(cmp -s b8.tsv again.tsv && echo same)"
# bad input
T_OUT=$TMP/out.tsv
t_fails "budget 0: usage error" 2 "^kvevict: --budgets: '0' is not a budget" kvevict -m "$S" --budgets 0 -o out.tsv story.txt
t_fails "negative budget: usage error" 2 "^kvevict: --budgets: '-3'" kvevict -m "$S" --budgets 8,-3 -o out.tsv story.txt
t_fails "budget not a number: usage error" 2 "^kvevict: --budgets: 'x'" kvevict -m "$S" --budgets x -o out.tsv story.txt
t_fails "unknown policy: usage error" 2 "^kvevict: --policies: unknown policy 'lru'" kvevict -m "$S" --policies window,lru -o out.tsv story.txt
t_fails "missing input: usage error" 2 "^kvevict: missing input" kvevict -m "$S" -o out.tsv
t_fails "--jsonl without --index: usage error" 2 "^kvevict: --jsonl needs --field NAME and --index N" \
	kvevict -m "$S" --jsonl story.jsonl --field text -o out.tsv
$PY -c "print(' '.join(['1'] + ['300'] * 599))" >long.ids
t_fails "trace longer than max_position_embeddings (600 > 512): exit 1" 1 "max_position_embeddings: 600 tokens exceed 512" \
	kvevict -m "$S" --ids long.ids -o out.tsv
echo 1 >one.ids
t_fails "a one-token trace: exit 1" 1 "at least 2" kvevict -m "$S" --ids one.ids -o out.tsv
# an episode table of another trace: the tokens at its positions are not ours
printf 'Tom had a small cat. The cat liked milk and fish.' >other.txt
actdump --tokens-only -m "$S" other.txt | awk -F'\t' 'BEGIN{OFS="\t"; print "trace","pos","token","kind","l_start","l_end"}
	NR>1 && ($1==0 || $1==5) {print "other", $1, $2, ($1 ? "secondary" : "primary"), 1, 3}' >other.eps
t_ok "the table of the trace itself is accepted" kvevict -m "$S" --budgets 8 --policies sinks --episodes other.eps -o /dev/null other.txt
t_fails "episode table of another trace: exit 1" 1 "other.eps:3: token .* at pos 5, trace story.txt has .* another trace" \
	kvevict -m "$S" --episodes other.eps -o out.tsv story.txt
printf 'trace\tpos\ttoken\tkind\tl_start\tl_end\nx\t900\t1\tsecondary\t1\t2\n' >far.eps
t_fails "episode beyond the trace: exit 1" 1 "far.eps:2: pos 900 beyond the $T tokens" kvevict -m "$S" --episodes far.eps -o out.tsv story.txt
t_fails "episode table missing: exit 1" 1 "^kvevict: nope.tsv" kvevict -m "$S" --episodes nope.tsv -o out.tsv story.txt
t_done
