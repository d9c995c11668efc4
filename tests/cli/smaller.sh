#!/usr/bin/env bash
# Smaller defects (#16 §7): t-SNE whose perplexity calibration cannot
# reach the target says so (every point: exit 1, no embedding; some: a
# warning); a prompt format whose markers the tokenizer lacks is refused;
# actdump's prompt formats are the list of sinkscope(7); the --positions
# warning of a multi-row --jsonl run names the row; kvevict on an empty
# text is an error.
. "$(dirname "$0")/../lib.sh"
S=$SS_ROOT/examples/models/stories260k Q=$SS_ROOT/tests/data/tokenizers/qwen3/tokenizer.json
cd "$TMP"
awk 'BEGIN{for (i = 0; i < 200; i++) print "1\t2\t3"}' >same.tsv
T_OUT=same.h5 t_fails "200 identical points: calibration fails, exit 1, no output" 1 \
	"^tsne: <stdin>: perplexity calibration failed: no point reaches perplexity 30 \(they reach 91 with 91 neighbours" \
	sh -c 'tsne -q -o same.h5 <same.tsv'
awk 'BEGIN{srand(1); for (i = 0; i < 200; i++) print (i < 190 ? "1\t2\t3" : rand() "\t" rand() "\t" rand())}' >most.tsv
tsne --iter 100 <most.tsv >most.out 2>most.err; rc=$?
t_eq "190 of 200 identical: runs (exit 0)" 0 "$rc"
t_match "190 of 200 identical: a warning counts them" "^tsne: warning: 190 of 200 points miss perplexity 30" "$(cat most.err)"
awk 'BEGIN{srand(2); for (i = 0; i < 200; i++) print rand() "\t" rand() "\t" rand()}' >rand.tsv
tsne -q --iter 100 <rand.tsv >rand.out 2>rand.err
t_eq "distinct points: no warning" "" "$(cat rand.err)"
printf 'hello there\n' >h.txt
t_fails "--prompt-format chatml on a tokenizer without <|im_start|>: refused" 1 \
	"^actdump: .*--prompt-format chatml: the tokenizer has no <\|im_start\|> token" actdump --tokens-only -m "$S" --prompt-format chatml h.txt
t_fails "--prompt-format llama3 on Qwen's tokenizer: refused" 1 "llama3: the tokenizer has no <\|begin_of_text\|> token" \
	actdump --tokens-only --tokenizer "$Q" --prompt-format llama3 h.txt
t_eq "--prompt-format chatml on Qwen's tokenizer: the marker is one token" "151644" \
	"$(actdump --tokens-only --tokenizer "$Q" --prompt-format chatml h.txt | awk -F'\t' 'NR==2{print $2}')"
t_eq "chatml-think: <think> after the assistant header" "<think>" \
	"$(actdump --tokens-only --tokenizer "$Q" --prompt-format chatml-think h.txt | awk -F'\t' 'END{print p} {p = q; q = $3}')"
# one list: sinkscope(7)'s prompt formats are actdump's
man7=$(mandoc -Tascii -O width=1000 "$SS_ROOT/man/man7/sinkscope.7" | col -b | tr -s ' \n' ' ' |
	sed -n 's/.*(prompt: \([^:]*\): the list of actdump.*/\1/p' | tr -d ' ' | tr ',' '\n' | sort | xargs)
ours=$(actdump --tokens-only --tokenizer "$Q" --prompt-format nosuch h.txt 2>&1 | sed 's/.*expected //; s/ or /, /' |
	tr -d ' ' | tr ',' '\n' | sort | xargs)
t_eq "sinkscope(7) lists actdump's prompt formats" "$ours" "$man7"
t_ok "actdump knows 7 formats" test "$(echo "$ours" | wc -w)" -eq 7
for f in $ours; do
	t_match "pipelines/bin/mktraces takes $f" "$f" "$(sed -n 's/^case \$fmt in \(.*\)) ;;$/\1/p' "$SS_ROOT/pipelines/bin/mktraces")"
done
# the multi-row --jsonl warning names the row
awk 'BEGIN{print "{\"t\": \"short\"}"; printf "{\"t\": \""; for (i = 0; i < 80; i++) printf "Once upon a time there was a cat. "; print "\"}"}' >rows.jsonl
actdump -m "$S" --jsonl rows.jsonl --field t --positions warn -o 'r{row}.h5' 2>rows.err
t_match "--jsonl rows: the warning names the row" "^actdump: warning: rows.jsonl:1: [0-9]+ tokens exceed max_position_embeddings 512" "$(cat rows.err)"
: >empty.txt
t_fails "kvevict on an empty text: exit 1" 1 "^kvevict: empty.txt: empty text, nothing to run$" kvevict -m "$S" empty.txt
t_done
