#!/usr/bin/env bash
# The study across models (make -C pipelines compare, pipelines/bin/compare)
# on two model organisms built by mkorganism from two different specs (the
# default, examples/organism.yaml, and a shallower one written here): one
# report whose per-model numbers are checked against each organism's
# planted truth (truth/*.tsv) and the traces' tokens: n_layers, the levels
# (l_start, lifetime) and secondary sinks per 1,000 tokens (the future
# occurrences mkorganism --truth lists, over the token ids), the valley at the layer
# after the formation layer (where attention first sees the new sinks),
# the norm-law slope; both overlay figures parse.  Also the usage errors.
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
for p in mkorganism actdump sinkdetect sinklevels; do
	[ -x "$SS_BIN/$p" ] || { t_skip "compare" "$p not built"; t_done; exit 0; }
done
TR=$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
tokz=$SS_ROOT/tests/data/tokenizers/qwen3/tokenizer.json
# organism B: 16 layers, sinks from layer 7, its own law and tokens
cat >"$TMP/b.yaml" <<EOF
model:
  n_layers: 16
  dtype: f32
  seed: 7
  tokenizer: $tokz
sinks:
  start_layer: 7
  decision_layer: 5
  law: {slope: 3.0, intercept: -12.0}
  levels:
    - {lifetime: 3, tokens: [","]}
    - {lifetime: 7, tokens: [" ", "."]}
EOF
t_ok "mkorganism builds organism A (the default spec)" mkorganism -o "$TMP/orgA" "$SS_ROOT/examples/organism.yaml"
t_ok "mkorganism builds organism B (16 layers, another law)" mkorganism -o "$TMP/orgB" "$TMP/b.yaml"
mkdir -p "$TMP/models"
for m in A B; do
	L=$(jq .num_hidden_layers "$TMP/org$m/config.json")
	cat >"$TMP/models/org$m.yaml" <<EOF
pipeline:
  model: $TMP/org$m
  architecture: Qwen2ForCausalLM
  traces: $TR
  field: response
  prompt: raw
  n_traces: 1
  max_tokens: 400
  tsne_before: 2
  heatmap_trace: t001
  n_layers: $L
EOF
done
mk() { make -s -C "$PL" MODELS_DIR="$TMP/models" OUT_ROOT="$TMP/out" BIN="$SS_BIN" \
	TOKENIZE="$SS_BUILD/tools/tokenize" PLANT="$SS_BUILD/tools/plant" THREADS=1 "$@"; }
t0=$(date +%s)
t_ok "make compare MODELS=\"orgA orgB\" runs" mk compare MODELS="orgA orgB"
echo "# compare took $(($(date +%s) - t0)) s"
c=$TMP/out/compare
t_ok "one report: compare/report.md" test -s "$c/report.md"
val() { # MODEL COLUMN: that model's value in compare/tables/models.tsv
	awk -F'\t' -v m="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next } $1 == m { print $k[c] }' "$c/tables/models.tsv"; }
cells() { # LEVELS.tsv [MODEL]: l_start:lifetime cells, sorted
	awk -F'\t' -v m="${2:-}" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
		m == "" || $k["model"] == m { print $k["l_start"] ":" $k["lifetime"] }' "$1" | sort -t: -k1,1n -k2,2n | xargs; }
for m in A B; do
	org=$TMP/org$m truth=$TMP/org$m/truth
	t_eq "org$m: n_layers" "$(jq .num_hidden_layers "$org/config.json")" "$(val org$m n_layers)"
	# the planted truth of the trace (mkorganism --truth: the future
	# occurrences, organism A's context rule; every occurrence for B)
	mkorganism --truth "$org" "$TMP/out/org$m/h5/t001.h5" >"$TMP/occ$m.tsv"
	want=$(awk -F'\t' 'NR > 1 && $4 == 1 { print $6 ":" $7 }' "$TMP/occ$m.tsv" | sort -u -t: -k1,1n -k2,2n | xargs)
	t_eq "org$m: the planted levels present in the trace, in the compare table" "$want" "$(cells "$c/tables/levels.tsv" org$m)"
	# future occurrences (after position 0) per 1,000 tokens of the trace's
	# ids (/tokens/ids of its dump: actdump tokenizes the text)
	h5dump -y -w 0 -d /tokens/ids -o "$TMP/org$m.ids0" "$TMP/out/org$m/h5/t001.h5" >/dev/null
	tr -s ', \n' '  ' <"$TMP/org$m.ids0" | sed 's/^ //; s/ $//' >"$TMP/org$m.ids"
	want=$(awk -F'\t' 'FNR == NR { f += (FNR > 1 && $4 == 1); next } { t += NF } END { printf "%.4g", 1000 * f / t }' \
		"$TMP/occ$m.tsv" FS=' ' "$TMP/org$m.ids")
	t_num "org$m: secondary sinks per 1k tokens = future occurrences ($want)" "$want" "$(val org$m sinks_per_1k)" 0.001
	ls=$(awk -F'\t' 'NR == 2 { print $2 }' "$truth/levels.tsv")
	t_eq "org$m: valley at the layer after formation (l_start $ls + 1)" $((ls + 1)) "$(val org$m valley_layer)"
	want=$(awk -F'\t' '$1 == "ln_norm" { print $3 }' "$truth/law.tsv")
	t_num "org$m: norm-law slope (planted $want)" "$want" "$(val org$m lifetime_slope)" 0.02
done
for f in compare_valley compare_levels; do
	t_ok "$f.svg parses" xmllint --noout "$c/figs/$f.svg"
	t_eq "$f.png is a PNG" 89504e470d0a1a0a "$(head -c 8 "$c/figs/$f.png" | od -An -tx1 | tr -d ' \n')"
	t_match "the report shows $f" "figs/$f.svg" "$(cat "$c/report.md")"
done
t_match "the report has a row per model" '^\| orgB \| 16 \|' "$(cat "$c/report.md")"
# make adds its own "*** Error" line: check the status and our line
err=$(mk compare 2>&1 >/dev/null); rc=$?
t_eq "compare without MODELS: exit 2 (make's status for a failed recipe)" 2 "$rc"
t_match "compare without MODELS: says what to give" '^compare: give MODELS=' "$err"
err=$(mk compare MODELS="orgA nope" 2>&1 >/dev/null); rc=$?
t_eq "compare with an unknown model: fails before running any" 2 "$rc"
t_match "compare with an unknown model: names its file" 'models/nope.yaml does not exist' "$err"
t_fails "bin/compare on a folder without a pipeline run" 1 'missing \(run make' "$PL/bin/compare" "$TMP/c2" x="$TMP/none"
t_done
