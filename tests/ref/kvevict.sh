#!/usr/bin/env bash
# kvevict against an independent float64 PyTorch reference
# (tests/ref/kvevict_ref.py, on hf_ref.forward with the key selection) on
# random models of four architectures (Llama; Qwen3 with q/k norms and an
# explicit head_dim; Mistral and Gemma 2 with a sliding window of 24 keys
# that binds at T = 100), all with GQA: every policy's masks checked against
# its definition, the masked forward pass's nll, kl and top1, the full
# pass's nll, and the attention mass lost per layer and key class
# (tolerances in kvevict_ref.py: 1e-4 on nll, 1e-4 + 1e-3 kl on kl, one
# position on top1, 1e-5 on masses).  A mutant mask (streaming's window cut
# by one key) shows the comparison has teeth.
. "$(dirname "$0")/../lib.sh"
if ! have_py torch || ! have_py numpy; then
	t_skip "kvevict reference" "python3-torch or python3-numpy absent for $PY"; t_done; exit 0
fi
if [ ! -x "$SS_BIN/kvevict" ]; then t_skip "kvevict reference" "bin/kvevict not built"; t_done; exit 0; fi
T=100
$PY -c "import numpy as np; r=np.random.default_rng(5); print(' '.join(map(str, [1]+list(r.integers(0,256,$T-1)))))" >"$TMP/ids"
# a synthetic episode table of this trace: the sinks policy keeps these keys
$PY - "$TMP/ids" >"$TMP/eps.tsv" <<'PYEOF'
import sys
ids = open(sys.argv[1]).read().split()
print("trace\tpos\ttoken\tkind\tl_start\tl_end\tlifetime")
for pos, kind, a, b in ((0, "primary", 1, 4), (9, "secondary", 1, 2), (23, "secondary", 2, 3),
                        (41, "secondary", 1, 4), (57, "primary", 1, 4), (70, "secondary", 3, 3)):
    print("x\t%d\t%s\t%s\t%d\t%d\t%d" % (pos, ids[pos], kind, a, b, b - a + 1))
PYEOF
ref() { # name dir
	local d=$2 n=$1
	if ! kvevict -m "$d" --ids "$TMP/ids" --budgets 12,40 --first 4 --seed 7 --episodes "$TMP/eps.tsv" \
		-t 2 --per-layer "$TMP/$n.lay" --masks "$TMP/$n.masks" -o "$TMP/$n.tot" 2>"$TMP/err"; then
		t_fail "$n: kvevict ran" "$(head -3 "$TMP/err")"; return
	fi
	while IFS=$'\t' read -r st what det; do
		if [ "$st" = ok ]; then t_pass "$n: $what"; else t_fail "$n: $what" "$det"; fi
	done < <($PY "$SS_ROOT/tests/ref/kvevict_ref.py" "$d" "$TMP/ids" "$TMP/$n.tot" "$TMP/$n.lay" \
		"$TMP/$n.masks" "$TMP/eps.tsv" 4 7 2>&1 | sed '/\t/!s/^/not ok\tkvevict_ref.py\t/')
}
M=$TMP/models
# arch[:window]: Mistral slides on every layer, Gemma 2 on layers 1 and 3
# (with attention and final-logit soft-capping); a window of 24 < T binds,
# below and above the budgets
for va in "llama" "qwen3" "mistral:24" "gemma2:24"; do
	v=${va%%:*} win=()
	[ "$va" = "$v" ] || { win=(--window "${va#*:}"); v=$v-swa; }
	if $PY "$SS_ROOT/tests/tools/mkmodel.py" --arch "${va%%:*}" --dtype f32 --layers 4 "${win[@]}" "$M/$v" >/dev/null 2>&1; then
		ref "$v" "$M/$v"
	else t_fail "mkmodel.py --arch $va"; fi
done
# teeth: streaming 12's masks with one more key hidden from every cut query
awk -F'\t' 'BEGIN{OFS="\t"} NR==1 || ($1=="streaming" && $2==12) {if (NR>1) $5=$5+1; print}' \
	"$TMP/llama.masks" >"$TMP/mut.masks"
awk -F'\t' 'NR==1 || ($2=="streaming" && $3==12)' "$TMP/llama.tot" >"$TMP/mut.tot"
n=$($PY "$SS_ROOT/tests/ref/kvevict_ref.py" "$M/llama" "$TMP/ids" "$TMP/mut.tot" "$TMP/llama.lay" \
	"$TMP/mut.masks" "$TMP/eps.tsv" 4 7 2>&1 | grep -c '^not ok')
t_ok "mutant mask (streaming 12 window one key short): the reference disagrees ($n checks)" test "$n" -ge 3
t_done
