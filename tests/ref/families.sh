#!/usr/bin/env bash
# The families beyond the paper's five (model.h): GPT-2, GPT-NeoX (Pythia),
# Gemma 2 and 3, OLMo 2, Mixtral, Qwen2-MoE, Qwen3-MoE.
#
# 1. actdump against the float64 PyTorch reference (tests/ref/hf_ref.py's
#    forward_family, written from transformers' modeling code) on small random
#    models of each (tests/tools/mkmodel.py --set families: f32 and bf16, tied
#    and untied, single and sharded files, GPT-2 with and without the
#    "transformer." prefix and OpenAI's causal-mask buffers, NeoX with and
#    without the parallel residual, Gemma with windows of 100 and 64 keys
#    that bind at T = 300, Gemma 2's soft-capping active, Gemma 3 by pattern
#    and by layer_types, the MoE with and without renormalised top-k): stats,
#    all four activations and the experts chosen, tolerance 1e-4 as in
#    actdump_ref.sh (measured here: at most 2.2e-5, on Mixtral's activation
#    rows, the others below 5e-6); and --compute bf16 against the
#    reference's bf16 mode (tolerances stated there).  Mutants: switching one family feature
#    off in the config (same weights) moves the reference by more than 1e-2.
# 2. swapexp (--exact and cheap re-runs) and pcaprobe on a 4-layer model of
#    each family against swap_ref.py (the reference with the component
#    replaced, a full pass per swap; the probe's MLP is the reference's own
#    at mlp_in -> mlp_out), as tests/ref/swapexp.sh does on Qwen2.
. "$(dirname "$0")/../lib.sh"
REF=$SS_ROOT/tests/ref
MK=$SS_ROOT/tests/tools/mkmodel.py
TOL=1e-4
T=300

if ! have_py torch || ! have_py h5py || ! have_py numpy; then
	t_skip "family reference checks" "python3-torch, python3-h5py or python3-numpy absent for $PY"
	t_done; exit 0
fi
M=$TMP/models
$PY "$MK" --variants "$M" --set families || { t_fail "mkmodel.py --variants --set families"; t_done; exit 0; }
mapfile -t variants <"$M/list"
$PY -c "import numpy as np; r=np.random.default_rng(7); print(' '.join(map(str, [1]+list(r.integers(0,256,$T-1)))))" >"$TMP/ids"

# variant | python edit of config dict c
mutants=(
	"gemma2-f32|c['attn_logit_softcapping'] = None"
	"gemma2-f32|c['sliding_window'] = 4096"
	"gemma2-f32|c['query_pre_attn_scalar'] = 16"
	"gemma3-f32|c['rope_local_base_freq'] = 1e6"
	"gemma3-f32|c['sliding_window_pattern'] = 2"
	"neox-f32|c['use_parallel_residual'] = False"
	"neox-f32|c['rotary_pct'] = 0.5"
	"gpt2-f32|c['layer_norm_epsilon'] = 1e-1"
	"qwen2moe-f32|c['norm_topk_prob'] = True"
	"mixtral-f32|c['num_experts_per_tok'] = 1"
)
: >"$TMP/batch"; : >"$TMP/mpairs"; : >"$TMP/pairs"
i=0
for mu in "${mutants[@]}"; do
	i=$((i + 1)); cp -r "$M/${mu%%|*}" "$TMP/mut$i"
done
$PY - "$TMP" "${mutants[@]}" <<'PYEOF'
import json, sys
for i, mu in enumerate(sys.argv[2:], 1):
    p = "%s/mut%d/config.json" % (sys.argv[1], i)
    c = json.load(open(p))
    exec(mu.split("|", 1)[1])
    json.dump(c, open(p, "w"))
PYEOF
GEO=32,256   # the bf16 section's query block and key tile (SINKSCOPE_ATTN_TILE, actdump_ref.sh)
for v in "${variants[@]}"; do
	echo "$M/$v $TMP/ids $TMP/$v.ref.h5" >>"$TMP/batch"
	echo "$M/$v $TMP/ids $TMP/$v.refb.h5 bf16:$GEO" >>"$TMP/batch"   # the bf16 mode's reference
done
i=0
for mu in "${mutants[@]}"; do
	i=$((i + 1))
	echo "$TMP/mut$i $TMP/ids $TMP/mut$i.h5" >>"$TMP/batch"
	printf 'mutant%d\t1e-2\t-\t1\t%s\t%s\n' $i "$TMP/mut$i.h5" "$TMP/${mu%%|*}.ref.h5" >>"$TMP/mpairs"
done
t_ok "reference forward pass on ${#variants[@]} family variants and ${#mutants[@]} mutants" \
	$PY "$REF/hf_ref.py" --batch "$TMP/batch"
$PY "$REF/cmp_h5.py" --pairs "$TMP/mpairs" >"$TMP/mcmp" 2>&1
i=0
for mu in "${mutants[@]}"; do
	i=$((i + 1))
	n=$(grep -c "^not ok	mutant$i: stats/" "$TMP/mcmp")
	t_ok "mutant ${mu%%|*} [${mu#*|}]: reference moves by > 1e-2 ($n stats differ)" test "$n" -gt 0
done

if [ ! -x "$SS_BIN/actdump" ]; then
	t_skip "actdump vs reference (${#variants[@]} variants)" "bin/actdump not built yet"
	t_done; exit 0
fi
ACTS=resid,attn_out,mlp_in,mlp_out
for v in "${variants[@]}"; do
	if ! actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/$v.h5" --acts $ACTS 2>"$TMP/err"; then
		t_fail "$v: actdump ran" "$(head -3 "$TMP/err")"; continue
	fi
	printf '%s\t%s\t%s\t0\t%s\t%s\n' "$v" $TOL $ACTS "$TMP/$v.h5" "$TMP/$v.ref.h5" >>"$TMP/pairs"
done
# the plain path (no hooks) and two threads give the same stats
v=gemma2-bf16-sh
if actdump -m "$M/$v" --ids "$TMP/ids" --threads 2 -o "$TMP/plain.h5" 2>"$TMP/err"; then
	printf '%s\t%s\t-\t0\t%s\t%s\n' "$v stats only, 2 threads" $TOL "$TMP/plain.h5" "$TMP/$v.ref.h5" >>"$TMP/pairs"
else t_fail "$v: actdump stats only" "$(head -3 "$TMP/err")"; fi
while IFS=$'\t' read -r st what det; do
	if [ "$st" = ok ]; then t_pass "$what ($det)"; else t_fail "$what" "$det"; fi
done < <($PY "$REF/cmp_h5.py" --pairs "$TMP/pairs" 2>&1 | sed '/\t/!s/^/not ok\tcmp_h5.py\t/')

# --compute bf16 against the reference's bf16 mode (hf_ref.py: projections,
# q, K, V and each key tile's P~ rounded as the engine does; measured as in
# actdump_ref.sh, the relative Frobenius error of each whole array).
# Measured on these 18 variants at T = 300 (engine bd06002): at most 2.7e-2
# (mlp_out of qwen2moe-bf16-norm, where bf16 rounding flips some top-k
# routing choices; the others at most 8.3e-3), so TOLB = 5e-2 (1.85x); the
# bf16 run at least RATIO = 1.5 times closer than the f32 run (measured
# 1.73x at the least, resid_norm of qwen2moe-bf16-norm, then 1.81x, recv of
# gpt2-f32-untied; 14 of 18 variants above 2.4x).  Against the reference
# that rounds the normalised A instead (bf16A) the least ratios were 0.48x
# .. 0.77x.
# Where oneDNN has no bf16 matmul (a CPU without AVX512_BF16 or AMX) the
# products run as sgemm on inputs and weights rounded to bf16: measured with
# oneDNN and the kernels capped at AVX2 on all 18 variants, at most 2.7e-2
# and at least 1.49x closer (recv of gemma3-bf16-types; then 1.73x), so
# those runs are held to RATIO_EMU = 1.25; here two variants run so capped.
TOLB=5e-2 RATIO=1.5 RATIO_EMU=1.25
emu_warn='^warning: --compute bf16: oneDNN has no bf16 matmul for this CPU'
: >"$TMP/bpairs"
for v in "${variants[@]}"; do
	if SINKSCOPE_ATTN_TILE=$GEO actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/$v.b.h5" --acts resid,attn_out,mlp_out \
		--compute bf16 2>"$TMP/err"; then
		q=$RATIO; grep -q "$emu_warn" "$TMP/err" && q=$RATIO_EMU
		echo "$v $TMP/$v.b.h5 $TMP/$v.h5 $TMP/$v.refb.h5 $q" >>"$TMP/bpairs"   # $v.h5: the f32 run above
	else t_fail "$v: actdump --compute bf16 ran" "$(head -3 "$TMP/err")"; fi
done
if ! grep -q "$emu_warn" "$TMP/err"; then
	for v in gpt2-f32 mixtral-bf16-sh; do
		if ONEDNN_MAX_CPU_ISA=AVX2 SINKSCOPE_ISA=avx2 SINKSCOPE_ATTN_TILE=$GEO actdump -m "$M/$v" --ids "$TMP/ids" \
			-o "$TMP/$v.e.h5" --acts resid,attn_out,mlp_out --compute bf16 2>"$TMP/err-e"; then
			echo "$v(oneDNN capped at AVX2) $TMP/$v.e.h5 $TMP/$v.h5 $TMP/$v.refb.h5 $RATIO_EMU" >>"$TMP/bpairs"
			t_eq "$v --compute bf16, oneDNN capped at AVX2: one warning line saying so" 1 \
				"$(grep -c "$emu_warn" "$TMP/err-e")"
		else t_fail "$v: actdump --compute bf16 with oneDNN capped at AVX2 ran" "$(head -3 "$TMP/err-e")"; fi
	done
fi
while IFS=$'\t' read -r st what det; do
	if [ "$st" = ok ]; then t_pass "$what ($det)"; else t_fail "$what" "$det"; fi
done < <($PY - "$TMP/bpairs" $TOLB <<'PYEOF' 2>&1 | sed '/\t/!s/^/not ok\tbf16 comparison\t/'
import sys, h5py, numpy as np
tol = float(sys.argv[2])
for line in open(sys.argv[1]):
    v, b, f, r, ratio = line.rsplit(None, 4)
    b, f, r, ratio = h5py.File(b), h5py.File(f), h5py.File(r), float(ratio)
    for k in ("acts/resid", "acts/attn_out", "acts/mlp_out", "stats/resid_norm", "stats/resid_cos0",
              "stats/recv", "stats/attn_out_norm", "stats/mlp_out_norm"):
        R = r[k][()].astype(np.float64)
        n = np.linalg.norm(R)
        eb = np.linalg.norm(b[k][()] - R) / n
        ef = np.linalg.norm(f[k][()] - R) / n
        ok = eb < tol and ef >= ratio * eb
        print("%s\t%s --compute bf16: %s vs the bf16 reference\trel Frobenius err %.2e (tol %g); "
              "the f32 run's %.2e: %.2fx closer (at least %g)" %
              ("ok" if ok else "not ok", v, k, eb, tol, ef, ef / eb, ratio))
PYEOF
)

# actdump | sinkdetect | sinklevels on every family (a relaxed rule, so that
# the random models have episodes); for the mixtures of experts the table's
# experts column is the reference's router choice at (l_start, pos)
for v in "${variants[@]}"; do
	if actdump -m "$M/$v" --ids "$TMP/ids" 2>"$TMP/err" | sinkdetect --tau-cos -0.99 --tau-norm 1.2 >"$TMP/$v.eps" 2>>"$TMP/err" &&
	   sinklevels --assign "$TMP/$v.eps" >"$TMP/$v.lv" 2>>"$TMP/err" && sinklevels "$TMP/$v.eps" >/dev/null 2>>"$TMP/err"; then
		t_ok "$v: actdump | sinkdetect | sinklevels, $(($(wc -l <"$TMP/$v.eps") - 1)) episodes" test -s "$TMP/$v.lv"
	else t_fail "$v: actdump | sinkdetect | sinklevels" "$(head -2 "$TMP/err")"; fi
	case $v in mixtral*|qwen*moe*) ;; *) continue ;; esac
	got=$($PY - "$TMP/$v.eps" "$TMP/$v.lv" "$TMP/$v.ref.h5" <<'PYEOF'
import sys, h5py
ref = h5py.File(sys.argv[3])["stats/moe_experts"][()]
for path in sys.argv[1:3]:
    rows = [l.rstrip("\n").split("\t") for l in open(path)]
    h = rows[0]
    bad = [r for r in rows[1:] if r[h.index("experts")] !=
           ",".join(str(x) for x in ref[int(r[h.index("l_start")]) - 1, int(r[h.index("pos")])])]
    print(len(rows) - 1, len(bad))
PYEOF
)
	t_ok "$v: sinkdetect's and sinklevels --assign's experts column = the reference's experts at l_start ($got: rows, wrong)" \
		test "$(echo $got | awk '{print ($1 > 1 && $2 == 0 && $3 == $1 && $4 == 0)}')" = 1
done
v=mixtral-f32   # one of its rows with a broken experts field
{ head -1 "$TMP/$v.eps"; awk -F'\t' 'BEGIN {OFS = "\t"} NR == 3 {$15 = "3,,7"; print}' "$TMP/$v.eps"; } >"$TMP/badx.tsv"
t_fails "sinklevels: a malformed experts column" 1 "badx.tsv:2: column 'experts'" sinklevels "$TMP/badx.tsv"

# 2. swapexp and pcaprobe.  family:seed (seeds whose 64-token trace has two
#    secondary episode starts under the relaxed rule)
TC=-0.99 TN=1.2 W=2
RULE=(--tau-cos $TC --tau-norm $TN)
fams=(gpt2:1 neox:2 gemma2:1 gemma3:2 olmo2:4 mixtral:1 qwen2moe:1 qwen3moe:1)
S=$TMP/swap; mkdir -p "$S"
$PY -c "import random; random.seed(3); print(' '.join(str(random.randrange(256)) for _ in range(64)))" >"$S/ids"
: >"$S/batch"
for fs in "${fams[@]}"; do
	f=${fs%%:*}
	$PY "$MK" --arch "$f" --dtype f32 --layers 4 --window 24 --seed "${fs#*:}" "$S/M$f" >/dev/null
	{ echo "$S/$f.none trace $S/M$f $S/ids $S/t$f.h5"
	  echo "$S/eps$f.tsv targets $S/t$f.h5 $TC $TN 2"
	  echo "$S/exp$f.tsv swaps $S/M$f $S/t$f.h5 $S/eps$f.tsv $W $TC $TN"
	  echo "$S/pe$f.tsv probe $S/M$f $S/t$f.h5 $S/eps$f.tsv first 3 -2,0,2 $TC $TN"; } >>"$S/batch"
done
t_ok "swap_ref.py: traces, targets, swaps and probes of ${#fams[@]} families" $PY "$REF/swap_ref.py" batch "$S/batch"
cmpcol() { paste "$1" "$2" | awk -F'\t' -v a="$3" -v b="$4" -v t="$5" -v m="$6" '
	NR > 1 { d = $a - $b; if (d < 0) d = -d; s = $a < 0 ? -$a : $a
	         if (m == "rel") { if (s < 1e-6) s = 1e-6; d /= s }
	         if (d > w) w = d; n++ }
	END { printf "%d %.3g\n", n, w; exit !(n > 0 && w <= t) }'; }
cols() { cut -f2,7,9,14,17,15,19,11 "$1" | awk -F'\t' 'BEGIN{OFS="\t"} {print $1,$2,$3,$5,$7,$6,$8,$4}'; }
cd "$S" || exit 1
for fs in "${fams[@]}"; do
	f=${fs%%:*}
	t_eq "$f: the reference finds 2 episode starts" 2 "$(($(wc -l <eps$f.tsv) - 1))"
	if swapexp -m M$f t$f.h5 eps$f.tsv -w $W "${RULE[@]}" --exact >x$f.tsv 2>err; then
		cols x$f.tsv >ex$f.tsv
		t_eq "$f: swapexp --exact rows in the reference's order" "$(cut -f1-3 exp$f.tsv)" "$(cut -f1-3 ex$f.tsv)"
		r=""; ok=0
		for c in 4 5 6 7; do r="$r $(cmpcol exp$f.tsv ex$f.tsv $c $c 1e-4 rel)" || ok=1; done
		t_ok "$f: swapexp --exact norm, cos0, median, score within 1e-4 (rows, worst:$r)" test $ok -eq 0
		t_eq "$f: swapexp --exact sink flags as the reference" "$(cut -f8 exp$f.tsv)" "$(cut -f8 ex$f.tsv)"
	else t_fail "$f: swapexp --exact ran" "$(head -2 err)"; fi
	if swapexp -m M$f t$f.h5 eps$f.tsv -w $W "${RULE[@]}" >c$f.tsv 2>err; then
		cols c$f.tsv >ch$f.tsv
		r=""; ok=0
		for c in 4 5; do r="$r $(cmpcol exp$f.tsv ch$f.tsv $c $c 1e-4 rel)" || ok=1; done
		r="$r $(cmpcol exp$f.tsv ch$f.tsv 7 7 0.3 rel)" || ok=1
		t_ok "$f: swapexp re-runs: norm, cos0 within 1e-4, score within 0.3 (worst:$r)" test $ok -eq 0
	else t_fail "$f: swapexp ran" "$(head -2 err)"; fi
	LS=$(awk -F'\t' 'NR==2 {print $4}' eps$f.tsv)
	if pcaprobe -m M$f t$f.h5 eps$f.tsv --layer "$LS" --n-components 3 -a -2,0,2 "${RULE[@]}" >pc$f.tsv 2>err; then
		cut -f3,4,6,7,8,9,10 pc$f.tsv >pg$f.tsv
		r=""; ok=0
		for c in 2 3 4 6 7; do r="$r $(cmpcol pe$f.tsv pg$f.tsv $c $c 1e-4 abs)" || ok=1; done
		t_ok "$f: pcaprobe var_ratio, projections, gain, cos_u within 1e-4 (worst:$r)" test $ok -eq 0
	else t_fail "$f: pcaprobe ran" "$(head -2 err)"; fi
done

# 3. Gemma 2's final logit soft-capping (logits z -> cap tanh(z / cap)): the
#    stats and activations never see it, so the next-token NLL of the full
#    pass (kvevict's nll_full) is compared with the reference's on
#    gemma2-f32 (cap 2.0, T = 300, windows binding), within 1e-4 as in
#    kvevict_ref.py.  The cap moves the reference's NLL by more than 1e-2,
#    and configs with a wrong cap (4.0, none) are caught: their nll_full is
#    off the reference by more than 1e-3.
G=$M/gemma2-f32 C=$TMP/cap
mkdir -p "$C"
ref=$($PY - "$REF" "$G" "$TMP/ids" <<'PYEOF'
import sys, torch
sys.path.insert(0, sys.argv[1])
import hf_ref
cfg, w = hf_ref.load(sys.argv[2])
ids = [int(t) for t in open(sys.argv[3]).read().split()]
tgt = torch.tensor(ids[1:])
out = []
for cap in (cfg["final_logit_softcapping"], None):
    cfg["final_logit_softcapping"] = cap
    lf = torch.log_softmax(hf_ref.forward(cfg, w, ids, keep_acts=False)["logits"], -1)
    out.append(float(-lf[:-1].gather(1, tgt[:, None]).mean()))
print("%.9f %.9f" % tuple(out))
PYEOF
)
read -r nll nocap <<<"$ref"
t_ok "gemma2-f32: final soft-capping moves the reference's nll by > 1e-2 ($nll vs $nocap uncapped)" \
	awk -v a="$nll" -v b="$nocap" 'BEGIN { d = a - b; exit !(a != "" && (d > 1e-2 || d < -1e-2)) }'
capnll() { # model dir -> kvevict's nll_full
	kvevict -m "$1" --ids "$TMP/ids" --policies full --budgets 1 -t 2 2>"$C/err" | awk -F'\t' 'NR == 2 {print $6}'
}
got=$(capnll "$G")
t_ok "gemma2-f32: kvevict's nll_full (soft-capped logits) = reference within 1e-4 ($got vs $nll)" \
	awk -v a="$got" -v b="$nll" 'BEGIN { d = a - b; exit !(a != "" && d < 1e-4 && d > -1e-4) }'
for mu in 4.0 None; do
	cp -r "$G" "$C/m$mu"
	$PY -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); c['final_logit_softcapping'] = $mu; json.dump(c, open(p, 'w'))" \
		"$C/m$mu/config.json"
	got=$(capnll "$C/m$mu")
	t_ok "mutant gemma2-f32 [final_logit_softcapping = $mu]: nll_full off the reference by > 1e-3 ($got vs $nll)" \
		awk -v a="$got" -v b="$nll" 'BEGIN { d = a - b; exit !(a != "" && (d > 1e-3 || d < -1e-3)) }'
done
t_done
