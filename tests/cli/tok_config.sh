#!/usr/bin/env bash
# tokenizer_config.json beside tokenizer.json: the Llama/CodeLlama/Gemma
# tokenizer classes rebuild the post-processor from add_bos_token /
# add_eos_token as transformers does; other classes keep tokenizer.json's.
# Expected ids come from the committed @huggingface/tokenizers expectations
# (tests/tok/expect, ids without the post-processor) and the BOS/EOS ids
# from the files themselves (jq), not from our tokenizer.
. "$(dirname "$0")/../lib.sh"
A=$SS_BIN/actdump
D=$SS_ROOT/tests/data/tokenizers
X=$SS_ROOT/tests/tok/expect
C=$SS_ROOT/tests/tok/corpus.jsonl
if [ ! -x "$A" ]; then t_skip "tokenizer_config.json" "actdump not built"; t_done; exit 0; fi
if ! command -v jq >/dev/null; then t_skip "tokenizer_config.json" "jq missing"; t_done; exit 0; fi
ids() { "$A" --tokens-only "$@" | awk 'NR>1{printf "%s%s", s, $2; s=" "}'; }
# corpus row 2 (a prose sentence) and its expected ids without post-processor
jq -j 'select(input_line_number == 2) | .s' "$C" >"$TMP/s.txt"
plain() { sed -n 3p "$X/$1.jsonl" | jq -r '.ids | map(tostring) | join(" ")'; }
# the id of the added token whose content is the config's bos/eos token
special() { local c; c=$(jq -r ".$2 | if type == \"object\" then .content else . end" "$D/$1/tokenizer_config.json")
	jq -r --arg c "$c" '.added_tokens[] | select(.content == $c) | .id' "$D/$1/tokenizer.json"; }

ds_bos=$(special deepseek_v3 bos_token)
t_eq "deepseek_v3: the config's bos_token is id 0 in tokenizer.json" 0 "$ds_bos"
t_eq "deepseek_v3 (LlamaTokenizerFast, add_bos_token true): BOS first, as transformers adds it" \
	"$ds_bos $(plain deepseek_v3)" "$(ids --tokenizer "$D/deepseek_v3/tokenizer.json" "$TMP/s.txt")"
t_eq "deepseek_v3 --no-bos: no BOS" "$(plain deepseek_v3)" \
	"$(ids --tokenizer "$D/deepseek_v3/tokenizer.json" --no-bos "$TMP/s.txt")"
t_eq "mistral (LlamaTokenizer): the same BOS as its own post-processor" \
	"$(special mistral bos_token) $(plain mistral)" "$(ids --tokenizer "$D/mistral/tokenizer.json" "$TMP/s.txt")"
t_eq "qwen3 (Qwen2Tokenizer): config changes nothing, no BOS" \
	"$(plain qwen3)" "$(ids --tokenizer "$D/qwen3/tokenizer.json" "$TMP/s.txt")"
t_eq "llama3_1 (PreTrainedTokenizerFast): tokenizer.json's <|begin_of_text|>" \
	"$(special llama3_1 bos_token) $(plain llama3_1)" "$(ids --tokenizer "$D/llama3_1/tokenizer.json" "$TMP/s.txt")"

# the same tokenizer.json without a config beside it: its post-processor only
mkdir -p "$TMP/bare" "$TMP/cfg"
ln -s "$D/deepseek_v3/tokenizer.json" "$TMP/bare/tokenizer.json"
t_eq "deepseek_v3 without tokenizer_config.json: no BOS (tokenizer.json has none)" \
	"$(plain deepseek_v3)" "$(ids --tokenizer "$TMP/bare/tokenizer.json" "$TMP/s.txt")"
ln -s "$D/deepseek_v3/tokenizer.json" "$TMP/cfg/tokenizer.json"
cfg() { printf '%s\n' "$1" >"$TMP/cfg/tokenizer_config.json"; }
ds_eos=$(special deepseek_v3 eos_token)
cfg '{"tokenizer_class": "GemmaTokenizerFast", "add_bos_token": false, "add_eos_token": true,
      "eos_token": {"content": "<｜end▁of▁sentence｜>", "lstrip": false}}'
t_eq "GemmaTokenizerFast, add_eos_token true, AddedToken form: EOS last, no BOS" \
	"$(plain deepseek_v3) $ds_eos" "$(ids --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt")"
cfg '{"tokenizer_class": "CodeLlamaTokenizer", "bos_token": "<｜begin▁of▁sentence｜>"}'
t_eq "CodeLlamaTokenizer, add_bos_token absent: BOS by default" \
	"$ds_bos $(plain deepseek_v3)" "$(ids --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt")"
cfg '{"tokenizer_class": "LlamaTokenizerFast", "model_max_length": 1000000000000000019884624838656, "add_bos_token": null, "bos_token": "<｜begin▁of▁sentence｜>"}'
t_eq "huge model_max_length and add_bos_token null: read, BOS by default" \
	"$ds_bos $(plain deepseek_v3)" "$(ids --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt")"

# bad configs: one line naming the file and field, exit 1, nothing on stdout
F=$TMP/cfg/tokenizer_config.json
cfg '{"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": "yes", "bos_token": "<s>"}'
t_fails "add_bos_token not a boolean" 1 "tokenizer_config.json:add_bos_token: expected true, false or null" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
cfg '{"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<no such token>"}'
t_fails "bos_token not in the vocabulary" 1 "tokenizer_config.json:bos_token: '<no such token>' is not a token" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
cfg '{"tokenizer_class": "LlamaTokenizerFast"}'
t_fails "add_bos_token true by default but no bos_token" 1 "tokenizer_config.json:bos_token: missing or not a string" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
cfg '{"tokenizer_class": 7}'
t_fails "tokenizer_class not a string" 1 "tokenizer_config.json:tokenizer_class: expected a string" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
printf '{"tokenizer_class": "LlamaTokenizerFast",\n "add_bos_token": tru' >"$F"
t_fails "truncated JSON: file:line:column" 1 "tokenizer_config.json:2:[0-9]+: not valid JSON" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
cfg '[1, 2]'
t_fails "not an object" 1 "tokenizer_config.json: expected a JSON object" \
	"$A" --tokens-only --tokenizer "$TMP/cfg/tokenizer.json" "$TMP/s.txt"
# a run with a model: no partial output file on a bad config
M=$TMP/model
cp -r "$SS_ROOT/examples/models/stories260k" "$M"
printf '{"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<nope>"}\n' >"$M/tokenizer_config.json"
t_fails "actdump -m with a bad config: exit 1" 1 "tokenizer_config.json:bos_token" \
	"$A" -m "$M" --text "$TMP/s.txt" -o "$TMP/out.h5"
t_ok "... and no output file" test ! -e "$TMP/out.h5"
t_done
