#!/usr/bin/env bash
# actdump: every way a model folder or an ids file can be broken.  Each case:
# exit 1, ONE stderr line naming the file (and the tensor or field), nothing on
# stdout, no output file and no temporary left in the output directory.
# The broken folders come from tests/tools/mkmodel.py --fault KIND.
. "$(dirname "$0")/../lib.sh"
MK=$SS_ROOT/tests/tools/mkmodel.py

if ! have_py numpy; then t_skip "actdump loading errors" "python3-numpy absent"; t_done; exit 0; fi
if [ ! -x "$SS_BIN/actdump" ]; then t_skip "actdump loading errors" "bin/actdump not built yet"; t_done; exit 0; fi

O=$TMP/o; mkdir -p "$O"
export T_OUT=$O/out.h5
seq 1 40 | tr '\n' ' ' >"$TMP/ids"

# A good model first: the cases below differ from it by one fault.
$PY "$MK" "$TMP/good"
t_ok "good model loads" actdump -m "$TMP/good" --ids "$TMP/ids" -o "$O/good.h5"
rm -f "$O/good.h5"

V='model\.layers\.0\.self_attn\.o_proj\.weight'
# kind | mkmodel options | regex the message must match
cases=(
	"missing-tensor||model\.safetensors.*$V"
	"extra-tensor||model\.safetensors.*model\.layers\.0\.self_attn\.rotary_emb\.extra"
	"misshaped||model\.safetensors.*$V.*64"
	"unknown-dtype||model\.safetensors.*$V.*F8_E9M0"
	"offsets-overflow||model\.safetensors.*$V"
	"trunc-header-len||model\.safetensors"
	"trunc-header||model\.safetensors"
	"trunc-mid||model\.safetensors.*(model\.|lm_head)"
	"bad-json||model\.safetensors"
	"bad-config-json||config\.json"
	"missing-config||config\.json"
	"unsupported-arch||config\.json.*BloomForCausalLM"
	"unsupported-rope||config\.json.*rope_scaling.*yarn"
	"missing-shard|--shards 2|model-00002-of-00002\.safetensors"
	"missing-tensor|--shards 3 --dtype bf16|model-0000[123]-of-00003\.safetensors.*$V|index\.json.*$V"
	"misshaped|--arch phi3|model\.safetensors.*$V"
	"unknown-dtype|--arch qwen3 --dtype f16|model\.safetensors.*$V.*F8_E9M0"
	"conv1d-transposed|--arch gpt2|model\.safetensors:h\.0\.attn\.c_attn\.weight: shape 192x64, expected 64x192.*Conv1D.*transposed"
	"missing-expert|--arch mixtral|model\.safetensors:model\.layers\.1\.block_sparse_moe\.experts\.1\.w2\.weight: missing tensor"
	"missing-expert|--arch qwen3moe --shards 2|model\.layers\.1\.mlp\.experts\.1\.down_proj\.weight: missing tensor"
	"unsupported-act|--arch gpt2|config\.json:activation_function: unsupported activation 'relu2'"
	"unsupported-act|--arch neox|config\.json:hidden_act: unsupported activation 'relu2'"
	"unsupported-act|--arch gemma2|config\.json:hidden_activation: unsupported activation 'relu2'"
	"unsupported-layer-type|--arch gemma3|config\.json:layer_types\[0\]: unsupported layer type 'chunked_attention'"
	"unsupported-rope|--arch gemma3|config\.json:rope_scaling\.rope_type: unsupported rope scaling 'yarn'"
)
for c in "${cases[@]}"; do
	IFS='|' read -r kind opts re <<<"$c"
	d=$TMP/m-$kind${opts//[ -]/}
	# shellcheck disable=SC2086
	$PY "$MK" $opts --fault "$kind" "$d"
	t_fails "$kind ${opts:+($opts) }-> one line naming file and tensor/field" 1 "$re" \
		actdump -m "$d" --ids "$TMP/ids" -o "$O/out.h5"
done

# Model folder itself
# GPT-NeoX's query_key_value holds q, k and v head by head: fewer KV heads
# than heads cannot be laid out (the engine reads it as it is stored)
$PY "$MK" --arch neox "$TMP/m-neoxgqa" >/dev/null
$PY -c "import json,sys; p=sys.argv[1]+'/config.json'; c=json.load(open(p))
c['num_key_value_heads'] = c['num_attention_heads'] // 2; json.dump(c, open(p, 'w'))" "$TMP/m-neoxgqa"
t_fails "GPT-NeoX with num_key_value_heads below its heads -> one line naming the field" 1 \
	"config\.json:num_key_value_heads: [0-9]*, but GPTNeoXForCausalLM fuses q, k and v per head" \
	actdump -m "$TMP/m-neoxgqa" --ids "$TMP/ids" -o "$O/out.h5"
t_fails "model folder does not exist" 1 "nonexistent" actdump -m "$TMP/nonexistent" --ids "$TMP/ids" -o "$O/out.h5"
: >"$TMP/empty.safetensors"
mkdir -p "$TMP/m-empty"; cp "$TMP/good/config.json" "$TMP/m-empty/"; : >"$TMP/m-empty/model.safetensors"
t_fails "empty model.safetensors" 1 "model\.safetensors" actdump -m "$TMP/m-empty" --ids "$TMP/ids" -o "$O/out.h5"
mkdir -p "$TMP/m-nost"; cp "$TMP/good/config.json" "$TMP/m-nost/"
t_fails "no safetensors at all" 1 "safetensors" actdump -m "$TMP/m-nost" --ids "$TMP/ids" -o "$O/out.h5"

# Token ids
t_fails "ids file missing" 1 "noids" actdump -m "$TMP/good" --ids "$TMP/noids" -o "$O/out.h5"
printf '1 2 x3 4\n' >"$TMP/ids-bad"
t_fails "ids: not an integer" 1 "ids-bad.*x3" actdump -m "$TMP/good" --ids "$TMP/ids-bad" -o "$O/out.h5"
printf '1 2 256\n' >"$TMP/ids-big"
t_fails "ids: id >= vocab_size" 1 "ids-big.*256" actdump -m "$TMP/good" --ids "$TMP/ids-big" -o "$O/out.h5"
printf '1 -3\n' >"$TMP/ids-neg"
t_fails "ids: negative id" 1 "ids-neg.*-3" actdump -m "$TMP/good" --ids "$TMP/ids-neg" -o "$O/out.h5"
: >"$TMP/ids-empty"
t_fails "ids: empty" 1 "ids-empty" actdump -m "$TMP/good" --ids "$TMP/ids-empty" -o "$O/out.h5"

left=$(ls -A "$O")
t_eq "no output or temporary file left by any failure" "" "$left"
t_done
