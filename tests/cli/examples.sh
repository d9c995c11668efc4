#!/usr/bin/env bash
# Every command of every man page's EXAMPLES runs (exit 0, with pipefail),
# in a sandbox where the model names of the examples (Qwen3-14B, M,
# organism ...) are links to the model organism, and the files they read
# (trace.txt, trace.ids, run*.h5, eps.tsv ...) exist.  Only sizes too large
# for a test are changed, by the substitutions listed in SUBST.  Also the
# provenance of examples/traces/: every shipped file is described in its
# PROVENANCE.md with its rows, bytes and sha256, and nothing else is.
. "$(dirname "$0")/../lib.sh"
for p in mkorganism actdump sinkdetect; do [ -x "$SS_BIN/$p" ] || { t_skip "man page examples" "$p not built"; t_done; exit 0; }; done
BASE=$TMP/base SB=$TMP/sandbox
mkdir -p "$BASE/examples/models" "$BASE/out" && cd "$BASE" || exit 1
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
for m in Qwen2.5-0.5B Qwen3-14B R1-Distill-Qwen-14B M organism qwen3; do ln -s org "$m"; done
# the organism with a DeepSeek tokenizer, for --prompt-format deepseek-r1
# (a template marker the tokenizer lacks is refused)
mkdir DeepSeek-R1-Distill-Qwen-14B
for f in config.json model.safetensors; do ln -s ../org/$f DeepSeek-R1-Distill-Qwen-14B/$f; done
cp "$SS_ROOT"/tests/data/tokenizers/deepseek_v3/tokenizer*.json DeepSeek-R1-Distill-Qwen-14B/
ln -s "$SS_ROOT/examples/models/stories260k" examples/models/stories260k
ln -s "$SS_ROOT/tests" tests # the spec's tokenizer path is relative to it
cp "$SS_ROOT/examples/organism.yaml" examples/
cp "$SS_ROOT/examples/traces/aime24.jsonl" .
TR=$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
head -n 1 "$TR" | jq -j '.response[:1500]' >trace.txt
cp trace.txt text.txt
printf 'Once upon a time, there was a little cat. The cat liked to play in the sun.\n' >story.txt
head -n 2 "$TR" | jq -c '{response: .response[:600]}' >traces.jsonl
actdump --tokens-only -m org trace.txt | awk -F'\t' 'NR > 1 { printf "%s%s", (NR > 2 ? " " : ""), ($2 < 500 ? $2 : 13) } END { print "" }' >trace.ids
cp trace.ids ids.txt
actdump -m org --text trace.txt --acts resid,mlp_in -o run.h5 2>/dev/null
for f in a b c run1 run2; do cp run.h5 $f.h5; done
sinkdetect run.h5 >eps.tsv && sinkdetect run1.h5 run2.h5 >sinks.tsv
sinkdetect run1.h5 >run1.tsv && sinkdetect run2.h5 >run2.tsv
t_ok "sandbox: the examples' inputs" test -s run.h5 -a -s eps.tsv -a -s trace.ids
# sizes made small enough for a test (the organism has 24 layers)
SUBST='s/--generate 8000/--generate 30/'
PROGS='actdump|sinkdetect|sinklevels|pcaprobe|swapexp|tsne|mkorganism|sinkplant|kvevict|echo|cat'
n=0
for m in "$SS_ROOT"/man/man1/*.1; do
	page=$(basename "$m" .1)
	# each page in a fresh copy of the sandbox (an example may rewrite an input)
	cd "$TMP" && rm -rf "$SB" && cp -a "$BASE" "$SB" && cd "$SB" || exit 1
	# the EXAMPLES section as text, continuation lines joined
	mandoc -Tascii -O width=1000 "$m" | col -b | awk '/^EXAMPLES/ { f = 1; next } /^[A-Z]/ { f = 0 } f' |
		sed 's/^[ \t]*//' | awk '{ if (sub(/\\$/, "")) { c = c $0; next } print c $0; c = "" }' |
		grep -E "^($PROGS)( |$)" >"$TMP/$page.ex"
	while IFS= read -r cmd; do
		n=$((n + 1))
		run=$(printf '%s' "$cmd" | sed "$SUBST")
		out=$(timeout 120 bash -o pipefail -c "$run" 2>&1 >/dev/null); rc=$?
		# a producer before `| head` may end by SIGPIPE (141), as any filter
		if [ $rc -eq 0 ] || { [ $rc -eq 141 ] && [[ $cmd == *"| head"* ]] && [ -z "$out" ]; }; then t_pass "$page(1) example runs: $cmd"
		else t_fail "$page(1) example runs: $cmd" "exit $rc: $run" "$(printf '%s' "$out" | tail -2)"; fi
	done <"$TMP/$page.ex"
done
t_ok "every man page with an EXAMPLES section gave commands ($n)" test "$n" -ge 20

# examples/traces/PROVENANCE.md: the shipped files, and only those
P=$SS_ROOT/examples/traces/PROVENANCE.md
listed=$(sed -n 's/^| `\([^`]*\)` | \([0-9]*\) | \([0-9,]*\) | `\([0-9a-f]*\)` |$/\1 \2 \3 \4/p' "$P" | tr -d , | sort)
have=$(cd "$SS_ROOT/examples/traces" && for f in *; do [ "$f" = PROVENANCE.md ] && continue
	echo "$f $(grep -c '' "$f") $(stat -c %s "$f") $(sha256sum "$f" | cut -d' ' -f1)"; done | sort)
t_eq "PROVENANCE.md lists exactly the shipped files, with their rows, bytes and sha256" "$have" "$listed"
t_done
