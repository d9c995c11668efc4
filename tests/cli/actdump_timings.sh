#!/usr/bin/env bash
# actdump --timings: the FLOPs it reports for the projections and for
# attention equal the hand-derived counts from config.json (2 M N K per
# product; 2 x 2 x head_dim per visible query-key pair and head, with
# query i seeing min(i + 1, sliding_window) keys), on a Qwen2 model and on
# a Mistral model whose window is shorter than the sequence; the parts of
# the time are non-negative and add up to at most the forward time.
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
cd "$TMP" || exit 1
$PY -c 'import numpy' 2>/dev/null || { t_skip "numpy (python3-numpy) missing for mkmodel.py"; t_done; exit 0; }
$PY "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen2 --layers 3 --hidden 64 --heads 4 --kv-heads 2 \
	--inter 96 --vocab 300 --bias q2 >/dev/null
$PY "$SS_ROOT/tests/tools/mkmodel.py" --arch mistral --layers 2 --hidden 48 --heads 6 --kv-heads 3 \
	--inter 80 --vocab 300 --window 37 mi >/dev/null
seq 1 200 | tr '\n' ' ' >ids200
# want MODEL T: "PROJ_GFLOP ATTN_GFLOP" from config.json
want() {
	$PY - "$1/config.json" "$2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); T = int(sys.argv[2])
D, F, H, L = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_hidden_layers"]
Hkv = c.get("num_key_value_heads", H); hd = c.get("head_dim") or D // H
w = c.get("sliding_window") or 0
if c.get("use_sliding_window") is False:
    w = 0
per_tok = (H * hd + 2 * Hkv * hd) * D + D * H * hd + 2 * F * D + D * F
pairs = sum(min(i + 1, w) if w else i + 1 for i in range(T))
print("%.6g %.6g" % (2.0 * T * per_tok * L / 1e9, 4.0 * hd * H * pairs * L / 1e9))
EOF
}
# got FILE: "PROJ_GFLOP ATTN_GFLOP"
got() { sed -n 's/.*projections [0-9.]* s (\([0-9.e+-]*\) GFLOP,.*attention [0-9.]* s (\([0-9.e+-]*\) GFLOP,.*/\1 \2/p' "$1"; }
for m in q2 mi; do
	for T in 200 37; do
		head -c 10000 ids200 | tr ' ' '\n' | head -n "$T" | tr '\n' ' ' >ids
		actdump -m "$m" --ids ids --timings -o "$m$T.h5" 2>"$m$T.err"
		t_eq "$m T=$T: projection and attention GFLOP = hand count" "$(want "$m" "$T")" "$(got "$m$T.err")"
	done
done
t_ok "mi: the window (37) is shorter than T=200" grep -q '"sliding_window": 37' mi/config.json
# parts FILE: the six parts of the time, each non-negative, adding up to
# at most the forward time. f16: an f16 model's matrices are converted
# inside their oneDNN packing (the mapping's f16 is no piece oneDNN takes),
# a conversion inside a conversion, which must be counted once
$PY "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen2 --layers 4 --hidden 512 --heads 8 --kv-heads 2 \
	--inter 2048 --vocab 400 --dtype f16 f16 >/dev/null
actdump -m f16 --ids ids200 --timings -o f16.h5 2>f16.err
for f in q2200 f16; do
	parts=$(awk '/time: projections/ {
		for (i = 1; i <= NF; i++) if ($(i+1) == "s" || $(i+1) == "s," || $(i+1) == "s;") { v = $i + 0; if (v < 0) bad = 1; sum += v; n++ }
		print (bad ? "negative" : "ok"), n, sum }' $f.err)
	fw=$(sed -n 's/.* forward \([0-9.]*\) s.*/\1/p' $f.err)
	t_eq "$f: six non-negative parts" "ok 6" "$(echo "$parts" | cut -d' ' -f1,2)"
	t_ok "$f: the parts add up to at most the forward time ($fw s)" \
		awk -v s="$(echo "$parts" | cut -d' ' -f3)" -v f="$fw" 'BEGIN { exit !(s <= f + 0.002) }'
done
t_done
