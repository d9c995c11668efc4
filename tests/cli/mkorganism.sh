#!/usr/bin/env bash
# mkorganism: bad specs and usage errors give one line naming file and
# field, exit 1 (2 for usage), and leave no output folder.
. "$(dirname "$0")/../lib.sh"
P=$SS_BIN/mkorganism
if [ ! -x "$P" ]; then t_skip "mkorganism" "not built"; t_done; exit 0; fi
Q=$SS_ROOT/tests/data/tokenizers/qwen3/tokenizer.json
spec() { # NAME BODY -> $TMP/NAME.yaml with a valid model section
	{ printf 'model:\n  tokenizer: %s\n  vocab_size: 151936\n' "$Q"; printf '%s\n' "$2"; } >"$TMP/$1.yaml"; }
good='sinks:
  start_layer: 9
  decision_layer: 6
  law: {slope: 4, intercept: -17.5}
  levels:
    - {lifetime: 2, tokens: [","]}
    - {lifetime: 5, tokens: ["."]}'
spec good "$good"
t_fails "missing -o is a usage error" 2 "missing -o" "$P" "$TMP/good.yaml"
t_fails "two specs are a usage error" 2 "at most one SPEC" "$P" -o "$TMP/x" a b
T_OUT=$TMP/o1 t_fails "missing spec file" 1 "^mkorganism: $TMP/nope.yaml: No such file" "$P" -o "$TMP/o1" "$TMP/nope.yaml"
printf 'sinks: [\n' >"$TMP/bad.yaml"
T_OUT=$TMP/o1 t_fails "YAML syntax error names the line" 1 "bad.yaml:[0-9]+: " "$P" -o "$TMP/o1" "$TMP/bad.yaml"
spec dupk "${good}
  start_layer: 8"
T_OUT=$TMP/o1 t_fails "a key twice (the last one won)" 1 "^mkorganism: $TMP/dupk\.yaml: line 11: duplicate key 'start_layer' \(first at line 5\)$" \
	"$P" -o "$TMP/o1" "$TMP/dupk.yaml"
spec dupn "${good/law: \{slope: 4,/law: {slope: 4, slope: 5,}"
T_OUT=$TMP/o1 t_fails "a key twice in a flow mapping" 1 "dupn\.yaml: line 7: duplicate key 'slope' \(first at line 7\)$" \
	"$P" -o "$TMP/o1" "$TMP/dupn.yaml"
spec unk "${good}
  colour: red"
T_OUT=$TMP/o1 t_fails "unknown key" 1 "unk.yaml:sinks.colour: unknown key" "$P" -o "$TMP/o1" "$TMP/unk.yaml"
spec notok "${good/\",\"/\"hello world\"}"
T_OUT=$TMP/o1 t_fails "text that is not one token" 1 "notok.yaml:sinks.levels\[0\].tokens\[0\]: not one token" "$P" -o "$TMP/o1" "$TMP/notok.yaml"
spec twice "${good/\".\"/\",\"}"
T_OUT=$TMP/o1 t_fails "token listed twice" 1 "twice.yaml:sinks.levels\[1\].tokens\[0\]: token listed twice" "$P" -o "$TMP/o1" "$TMP/twice.yaml"
spec order "${good/decision_layer: 6/decision_layer: 9}"
T_OUT=$TMP/o1 t_fails "decision layer not before start layer" 1 "order.yaml:sinks.decision_layer: 9, must be before" "$P" -o "$TMP/o1" "$TMP/order.yaml"
spec long "${good/lifetime: 5/lifetime: 16}"
T_OUT=$TMP/o1 t_fails "lifetime past the last layer" 1 "long.yaml:sinks.levels\[1\].lifetime: 16, the sink must end" "$P" -o "$TMP/o1" "$TMP/long.yaml"
spec same "${good/lifetime: 5/lifetime: 2}"
T_OUT=$TMP/o1 t_fails "two levels with one lifetime" 1 "same.yaml:sinks.levels\[1\].lifetime: 2, same as level 0" "$P" -o "$TMP/o1" "$TMP/same.yaml"
spec lsorder "${good/lifetime: 5,/lifetime: 5, start_layer: 6,}"
T_OUT=$TMP/o1 t_fails "a level's start layer not after the decision layer" 1 "lsorder.yaml:sinks.levels\[1\].start_layer: 6, must be after decision_layer 6" "$P" -o "$TMP/o1" "$TMP/lsorder.yaml"
spec lslong "${good/lifetime: 5,/lifetime: 5, start_layer: 20,}"
T_OUT=$TMP/o1 t_fails "a level's own start layer past the end" 1 "lslong.yaml:sinks.levels\[1\].lifetime: 5, the sink must end" "$P" -o "$TMP/o1" "$TMP/lslong.yaml"
spec lssame "${good/lifetime: 5,/lifetime: 2, start_layer: 12,}"
t_ok "one lifetime at two start layers is two levels" "$P" --dtype f16 -o "$TMP/o2" "$TMP/lssame.yaml"
t_eq "... with their own l_start (truth/levels.tsv)" "9:2 12:2" "$(awk -F'\t' 'NR>1{printf "%s%s:%s", (NR > 2 ? " " : ""), $2, $3}' "$TMP/o2/truth/levels.tsv")"
spec spr "${good}
  spread: 0.5"
T_OUT=$TMP/o1 t_fails "spread out of range" 1 "spr.yaml:sinks.spread: 0.5, must lie in \[0, 0.45\]" "$P" -o "$TMP/o1" "$TMP/spr.yaml"
spec spr2 "${good/\",\"\]/\",\", \"3\", \"5\"]}
  spread: 0.3"
T_OUT=$TMP/o1 t_fails "a spread the law cannot keep alive" 1 "spr2.yaml:sinks.levels\[0\].lifetime: planted norm .* too small" "$P" -o "$TMP/o1" "$TMP/spr2.yaml"
spec spr3 "$(sed 's/-17.5/-22.5/' <<<"${good/\",\"\]/\",\", \"3\", \"5\"]}")
  spread: 0.3"
t_ok "a spread within a level" "$P" --dtype f16 -o "$TMP/o3" "$TMP/spr3.yaml"
# each token its own norm, evenly in ln over lifetime +- spread on the law's scale
t_eq "... each token's planted norm (truth/tokens.tsv)" \
	"$(awk 'BEGIN { for (d = -0.3; d < 0.31; d += 0.3) printf "%.4g ", exp((2 + d + 22.5) / 4); printf "%.4g", exp((5 + 22.5) / 4) }')" \
	"$(awk -F'\t' 'NR>1{printf "%s%.4g", (NR > 2 ? " " : ""), $6}' "$TMP/o3/truth/tokens.tsv")"
spec small "${good/intercept: -17.5/intercept: -5}"
T_OUT=$TMP/o1 t_fails "law too weak for a live sink" 1 "small.yaml:sinks.levels\[0\].lifetime: planted norm .* too small" "$P" -o "$TMP/o1" "$TMP/small.yaml"
spec notint "${good/start_layer: 9/start_layer: nine}"
T_OUT=$TMP/o1 t_fails "not an integer" 1 "notint.yaml:sinks.start_layer: not an integer" "$P" -o "$TMP/o1" "$TMP/notint.yaml"
spec dt "$(printf '%s' "$good")"
sed -i 's/^model:/model:\n  dtype: f64/' "$TMP/dt.yaml"
T_OUT=$TMP/o1 t_fails "bad dtype" 1 "dt.yaml:model.dtype: 'f64'" "$P" -o "$TMP/o1" "$TMP/dt.yaml"
printf 'model:\n  tokenizer: nope.json\n%s\n' "$good" >"$TMP/notk.yaml"
T_OUT=$TMP/o1 t_fails "missing tokenizer names the spec field" 1 "notk.yaml:model.tokenizer: .*nope.json: No such file" "$P" -o "$TMP/o1" "$TMP/notk.yaml"
printf '{"model": {"type": "BPE", "vocab": 3, "merges": []}}' >"$TMP/tk.json"
printf 'model:\n  tokenizer: tk.json\n%s\n' "$good" >"$TMP/badtk.yaml"
T_OUT=$TMP/o1 t_fails "tokenizer without a BPE vocab" 1 "tk.json:model.vocab: missing or not an object" "$P" -o "$TMP/o1" "$TMP/badtk.yaml"
t_fails "bad --dtype" 2 "dtype: 'x'" "$P" --dtype x -o "$TMP/o1" "$TMP/good.yaml"
spec cx1 "${good}
  context: {tokens: [\",\"], window: 2}"
T_OUT=$TMP/o1 t_fails "a context token that is also planted" 1 "cx1.yaml:sinks.context.tokens\[0\]: also a planted token" "$P" -o "$TMP/o1" "$TMP/cx1.yaml"
spec cx2 "${good}
  context: {tokens: [\" the\"], window: 5}"
T_OUT=$TMP/o1 t_fails "a context window wider than the heads" 1 "cx2.yaml:sinks.context.window: 5 out of range 1..4" "$P" -o "$TMP/o1" "$TMP/cx2.yaml"
spec cx3 "${good}
  context: {tokens: [\" the\"]}"
T_OUT=$TMP/o1 t_fails "a context without a window" 1 "cx3.yaml:sinks.context.window: missing" "$P" -o "$TMP/o1" "$TMP/cx3.yaml"
spec nu1 "${good}
  nuisance: {aligned: [\",\"]}"
T_OUT=$TMP/o1 t_fails "a nuisance token that is also planted" 1 "nu1.yaml:sinks.nuisance.aligned: ',' is also a planted, context or nuisance token" "$P" -o "$TMP/o1" "$TMP/nu1.yaml"
spec nu2 "${good}
  nuisance: {quiet: [\" is\"]}"
T_OUT=$TMP/o1 t_fails "an unknown nuisance kind" 1 "nu2.yaml:sinks.nuisance.*quiet" "$P" -o "$TMP/o1" "$TMP/nu2.yaml"
t_fails "--truth without traces" 2 "truth needs FILE.h5" "$P" --truth "$TMP/x"
t_fails "--truth with -o" 2 "without -o" "$P" --truth "$TMP/x" -o "$TMP/y" a.h5
t_fails "--truth on a missing trace" 1 "nope.h5" "$P" --truth "$TMP/x" "$TMP/nope.h5"
mkdir -p "$TMP/keep" && echo precious >"$TMP/keep/file"
t_fails "refuses to replace a folder that is not an organism" 1 "keep: exists and is not an organism folder" "$P" -o "$TMP/keep" "$TMP/good.yaml"
t_eq "... and leaves it alone" precious "$(cat "$TMP/keep/file")"
# a good spec (f16, the smallest file), then replacing it
t_ok "a good spec builds (f16)" "$P" --dtype f16 -o "$TMP/org" "$TMP/good.yaml"
t_ok "replacing an earlier organism" "$P" --dtype f16 -o "$TMP/org" "$TMP/good.yaml"
t_eq "folder contents" "config.json model.safetensors organism.yaml tokenizer.json tokenizer_config.json truth" "$(ls "$TMP/org" | tr '\n' ' ' | sed 's/ $//')"
t_eq "no temporary folders left" "" "$(ls -d "$TMP"/org.* 2>/dev/null)"
t_eq "truth tables" "context.tsv decision.tsv directions.tsv law.tsv layers.tsv levels.tsv nuisance.tsv tokens.tsv" "$(ls "$TMP/org/truth" | tr '\n' ' ' | sed 's/ $//')"
t_eq "levels table" "1 9 2 ,
2 9 5 ." "$(awk -F'\t' 'NR>1{print $1, $2, $3, $10}' "$TMP/org/truth/levels.tsv")"
if have_py json; then
	t_ok "config.json and the safetensors header parse; dtype F16 everywhere" $PY -c "
import json,sys
c=json.load(open('$TMP/org/config.json')); assert c['architectures']==['Qwen2ForCausalLM'] and c['torch_dtype']=='float16'
b=open('$TMP/org/model.safetensors','rb').read(); n=int.from_bytes(b[:8],'little'); h=json.loads(b[8:8+n])
assert n % 8 == 0 and h.pop('__metadata__')=={'format':'pt'}
assert {t['dtype'] for t in h.values()}=={'F16'}
end=max(t['data_offsets'][1] for t in h.values()); assert 8+n+end==len(b), (end, len(b))
assert h['model.embed_tokens.weight']['shape']==[151936,64] and len(h)==2+12*c['num_hidden_layers']"
fi
t_done
