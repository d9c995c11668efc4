#!/usr/bin/env bash
# Tokenizers against Hugging Face's JavaScript implementation: ids (with and
# without the post-processor) and decode(encode(x)) for every corpus and
# random string and every tokenizer (expectations: tests/tok/expect/*.jsonl,
# made by tests/tok/gen_expect.mjs).  The one accepted difference (a U+FEFF
# that tokenizers.js's ByteFallback decoder drops) is counted, not failed.
. "$(dirname "$0")/../lib.sh"
chk=$SS_BUILD/tools/tok_check
declare -A files=(
	[qwen3]=tests/data/tokenizers/qwen3/tokenizer.json
	[llama3_1]=tests/data/tokenizers/llama3_1/tokenizer.json
	[deepseek_v3]=tests/data/tokenizers/deepseek_v3/tokenizer.json
	[mistral]=tests/data/tokenizers/mistral/tokenizer.json
	[stories260k]=examples/models/stories260k/tokenizer.json
	[tiny]=tests/tok/tiny/tokenizer.json
)
for n in qwen3 llama3_1 deepseek_v3 mistral stories260k tiny; do
	out=$("$chk" "$SS_ROOT/${files[$n]}" "$SS_ROOT/tests/tok/corpus.jsonl" "$SS_ROOT/tests/tok/pool.json" \
		"$SS_ROOT/tests/tok/expect/$n.jsonl" 2>&1); rc=$?
	_res $rc "$n: ids, post-processed ids and decode match tokenizers.js" "$(printf '%s' "$out" | tail -8)"
	printf '# %s\n' "$(printf '%s' "$out" | tail -1)"
done
n=$(wc -l <"$SS_ROOT/tests/tok/corpus.jsonl")
t_match "corpus has at least 300 strings" '^(3[0-9][0-9]|[4-9][0-9][0-9]|[0-9]{4,})$' "$n"
t_done
