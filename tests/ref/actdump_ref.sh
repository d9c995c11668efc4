#!/usr/bin/env bash
# actdump against an independent float64 PyTorch reference (tests/ref/hf_ref.py)
# on small random models of every supported architecture (tests/tools/mkmodel.py):
# Llama (plain, llama3 and linear rope scaling, CodeLlama theta), Mistral, Qwen2,
# Qwen3, Phi-3; GQA; tied and untied; f32, bf16, f16; single and sharded files.
#
# Tolerance: 1e-4 for every variant (cmp_h5.py says how each error is measured:
# relative for norms and activation rows, absolute for cosines and attention
# probabilities).  The reference widens the stored bf16/f16 weights exactly, so
# for those dtypes it computes with the very weights the engine uses and the
# only difference left is the engine's f32 arithmetic, as with f32 weights: no
# looser bound is needed.  Sizing: the same reference code run in float32
# (hf_ref.py --f32) reaches 4.5e-6 (norms, cosines), 6e-7 (recv) and 1.6e-5
# (activation rows) on these 17 variants at T=384; actdump
# (engine 51a8458, blocked attention, OpenBLAS) measured at most 1.2e-5 on
# norms and cosines, 6.5e-6 on recv and 3.3e-5 on activation rows, so 1e-4
# leaves a 3x margin, while a wrong convention (RoPE pairing or scaling band,
# a missing norm weight or bias, the window) moves the numbers by more than
# 1e-2 (the mutant checks below show it).
. "$(dirname "$0")/../lib.sh"
REF=$SS_ROOT/tests/ref
TOL=1e-4
T=384
# the bf16 section's attention geometry (query block, key tile), imposed on
# the engine through its test hook SINKSCOPE_ATTN_TILE and given to the
# reference; GEO2 a second one on a few variants (blocks not aligned to 16,
# several tiles per row, the window's first key inside a tile)
GEO=32,256 GEO2=24,48
GEO2_VARIANTS="mistral-swa-f32 qwen2-bf16-sh"

if ! have_py torch || ! have_py h5py || ! have_py numpy; then
	t_skip "reference checks" "python3-torch, python3-h5py or python3-numpy absent for $PY"
	t_done; exit 0
fi

# 1. The reference itself is right on a real model: greedy decoding of
#    stories260k from BOS reproduces llama2.c run.c's ids (issue 3).
want="1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352"
got=$($PY "$REF/hf_ref.py" -m "$SS_ROOT/examples/models/stories260k" --greedy 40 2>&1)
t_eq "reference: stories260k greedy decode = llama2.c run.c" "$want" "$got"

# What the real model does at position 0 on its own story (the 41 ids above),
# for the record (TAP diagnostics): sink-score (recv averaged over heads) and
# ||h[l][0]|| against the median norm of the other positions, per layer.
echo "$want" >"$TMP/story.ids"
$PY "$REF/hf_ref.py" -m "$SS_ROOT/examples/models/stories260k" --ids "$TMP/story.ids" -o "$TMP/story.ref.h5" --no-acts
$PY - "$TMP/story.ref.h5" <<'PYEOF' | sed 's/^/# /'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1])
r, n, c = f["stats/recv"][()], f["stats/resid_norm"][()], f["stats/resid_cos0"][()]
print("stories260k on its greedy story (T=%d), position 0:" % n.shape[1])
print("layer  sink-score(0)  median j>0  ||h[l][0]||  median ||h[l][j>0]||  mean cos0(j>0)")
for l in range(n.shape[0]):
    s = ("%13.4f  %10.4f" % (r[l-1].mean(0)[0], np.median(r[l-1].mean(0)[1:]))) if l else "%13s  %10s" % ("-", "-")
    print("%5d  %s  %11.3f  %20.3f  %14.3f" % (l, s, n[l, 0], np.median(n[l, 1:]), c[l, 1:].mean()))
PYEOF

M=$TMP/models
$PY "$SS_ROOT/tests/tools/mkmodel.py" --variants "$M" || { t_fail "mkmodel.py --variants"; t_done; exit 0; }
mapfile -t variants <"$M/list"
$PY -c "import numpy as np; r=np.random.default_rng(7); print(' '.join(map(str, [1]+list(r.integers(0,256,$T-1)))))" >"$TMP/ids"

# 2. The comparison has teeth: switching off one architecture feature in the
#    config (same weights) moves the reference by far more than the tolerance.
#    variant | python edit of config dict c
mutants=(
	"llama3rope-f32|c['rope_scaling'] = None"
	"linrope-f16|c['rope_scaling'] = None"
	"codellama-bf16|c['rope_theta'] = 10000.0"
	"mistral-swa-f32|c['sliding_window'] = 4096"
	"phi3-partial-bf16|del c['partial_rotary_factor']"
	"qwen3-f32|c['rope_theta'] = 10000.0"
	"llama-f32|c['rms_norm_eps'] = 1e-1"
)
# one torch start-up for every reference run, one h5py start-up for every
# comparison (this test is CPU-bound on a shared machine)
: >"$TMP/batch"; : >"$TMP/pairs"; i=0
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
# the real model too (vocab 512, max_position_embeddings 512)
$PY -c "import numpy as np; r=np.random.default_rng(11); print(' '.join(map(str, [1]+list(r.integers(3,512,$T-1)))))" >"$TMP/ids512"
ln -s "$SS_ROOT/examples/models/stories260k" "$M/stories260k"
echo "$M/stories260k $TMP/ids512 $TMP/stories260k.ref.h5" >>"$TMP/batch"
t_ok "reference forward pass on ${#variants[@]} variants, stories260k and ${#mutants[@]} mutants" \
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
pair() { printf '%s\t%s\t%s\t0\t%s\t%s\n' "$1" $TOL "$2" "$3" "$4" >>"$TMP/pairs"; }
for v in "${variants[@]}" stories260k; do
	ids=$TMP/ids; [ $v = stories260k ] && ids=$TMP/ids512
	if ! actdump -m "$M/$v" --ids "$ids" -o "$TMP/$v.h5" --acts $ACTS 2>"$TMP/err"; then
		t_fail "$v: actdump ran" "$(head -3 "$TMP/err")"; continue
	fi
	pair "$v" $ACTS "$TMP/$v.h5" "$TMP/$v.ref.h5"
done

# Every kernel path this CPU has (util/cpu.h, forced by SINKSCOPE_ISA) against
# the same reference and tolerance, on two variants that between them reach
# GQA, bf16 and f16 conversion, the sliding window and partial RoPE; the
# --timings line names the kernels each run used.
for l in c avx2 avx512 avx512bf16 amx; do
	SINKSCOPE_ISA=$l actdump --version >/dev/null 2>&1
	if ! SINKSCOPE_ISA=$l actdump -m "$M/qwen2-bf16-sh" --ids "$TMP/ids" -o "$TMP/isa-$l.h5" --timings \
		2>"$TMP/isa-$l.err"; then
		if grep -q 'lacks it' "$TMP/isa-$l.err"; then t_skip "kernels $l" "this CPU lacks $l"; continue; fi
		t_fail "SINKSCOPE_ISA=$l: actdump ran" "$(head -3 "$TMP/isa-$l.err")"; continue
	fi
	k=$(case $l in avx512bf16|amx) echo avx512;; *) echo $l;; esac)
	t_match "SINKSCOPE_ISA=$l: --timings names the kernels" \
		"^actdump: kernels \\($l\\): attention $k \\(bf16 compute: bf16-$l\\), rows $k, bf16/f16 rows $k" \
		"$(grep 'kernels' "$TMP/isa-$l.err")"
	pair "qwen2-bf16-sh stats, SINKSCOPE_ISA=$l" - "$TMP/isa-$l.h5" "$TMP/qwen2-bf16-sh.ref.h5"
	for v in mistral-swa-f32 phi3-f16-sh; do
		[ -d "$M/$v" ] || { t_fail "variant $v exists"; continue; }
		if SINKSCOPE_ISA=$l actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/isa-$l-$v.h5" --acts $ACTS 2>"$TMP/err"; then
			pair "$v, SINKSCOPE_ISA=$l" $ACTS "$TMP/isa-$l-$v.h5" "$TMP/$v.ref.h5"
		else t_fail "$v SINKSCOPE_ISA=$l: actdump ran" "$(head -3 "$TMP/err")"; fi
	done
done

# The plain path (no hooks) gives the same stats; a layer subset stores only those
# layers; the HDF5 image on a stdout pipe is the same file; two runs with the same
# thread count are bit-identical.
v=qwen2-bf16-sh
if actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/plain.h5" 2>"$TMP/err"; then
	pair "$v stats only" - "$TMP/plain.h5" "$TMP/$v.ref.h5"
else t_fail "$v: actdump stats only" "$(head -3 "$TMP/err")"; fi
v=phi3-f32
if actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/sel.h5" --acts mlp_out,resid --layers 1,3 2>"$TMP/err"; then
	pair "$v --layers 1,3" mlp_out,resid "$TMP/sel.h5" "$TMP/$v.ref.h5"
else t_fail "$v: actdump --layers 1,3" "$(head -3 "$TMP/err")"; fi
v=llama3rope-bf16-sh
actdump -m "$M/$v" --ids - <"$TMP/ids" 2>"$TMP/err" | cat >"$TMP/pipe.h5"
if [ -s "$TMP/pipe.h5" ]; then
	pair "$v ids on stdin, image on stdout pipe" - "$TMP/pipe.h5" "$TMP/$v.ref.h5"
else t_fail "$v: actdump to a pipe wrote nothing" "$(head -3 "$TMP/err")"; fi
v=mistral-f32-sh
actdump -m "$M/$v" --ids "$TMP/ids" --threads 2 -o "$TMP/d1.h5" 2>/dev/null
actdump -m "$M/$v" --ids "$TMP/ids" --threads 2 -o "$TMP/d2.h5" 2>/dev/null

# cmp_h5.py lines: "ok|not ok<TAB>what<TAB>detail" -> TAP
while IFS=$'\t' read -r st what det; do
	if [ "$st" = ok ]; then t_pass "$what ($det)"; else t_fail "$what" "$det"; fi
done < <($PY "$REF/cmp_h5.py" --pairs "$TMP/pairs" 2>&1 | sed '/\t/!s/^/not ok\tcmp_h5.py\t/')

got=$($PY -c "
import h5py, numpy as np, sys
a, b, s = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), h5py.File(sys.argv[3])
print(all(np.array_equal(a['stats/'+k][()], b['stats/'+k][()]) for k in a['stats']),
      sorted(s['acts']), list(s['acts/mlp_out'].attrs['layers']), s['acts/mlp_out'].shape)" \
	"$TMP/d1.h5" "$TMP/d2.h5" "$TMP/sel.h5" 2>&1)
t_eq "mistral-f32-sh: two runs with --threads 2 are bit-identical; phi3-f32 --acts mlp_out,resid --layers 1,3 stores only those" \
	"True ['mlp_out', 'resid'] [1, 3] (2, $T, 64)" "$got"

# 3. --compute bf16 against the reference's bf16 mode (hf_ref.py --compute
#    bf16: each projection's input and weight rounded to bf16, the rounded
#    values multiplied in float64; attention rounded where the engine
#    documents it, q, K, V and each key tile's unnormalised P~ against the
#    row's running max, over the same query blocks and key tiles: GEO above,
#    imposed on the engine by SINKSCOPE_ATTN_TILE), every variant.  bf16
#    rounding is discontinuous: where the engine's f32 values and the
#    float64 reference's straddle a rounding boundary they round one bf16
#    step apart, and that grows layer by layer, so the worst element says
#    little.  The measure is the relative Frobenius error of each whole
#    array, ||test - ref|| / ||ref|| over every layer and position.
#    Measured on these 17 variants at T=384 (engine d19387f, GEO 32,256):
#    at most 5.5e-3 (attn_out), 3.8e-3 (mlp_out), 3.7e-3 (recv), 2.8e-3
#    (resid), 1.8e-3 (resid_cos0), 1.5e-3 (attn_out_norm), 1.3e-3
#    (mlp_out_norm), 6.1e-4 (resid_norm), so TOLB = 1.2e-2 is a 2.2x margin;
#    and each array of the bf16 run must be at least RATIO = 2 times closer
#    to the bf16 reference than the f32 run's (measured 2.3x at the least,
#    mlp_out_norm of qwen3-bf16-tied; most arrays 3-5x).  The criterion has
#    teeth: against the earlier reference that rounds the normalised A
#    instead of P~ (hf_ref.py bf16A) the ratios fall to 0.87x (recv of
#    phi3-partial-bf16) .. 1.4x; an engine that skips rounding P~ and V
#    (f32 PV tiles) gives 0.64x .. 1.3x, one that truncates P~ instead of
#    rounding it 0.76x .. 1.3x.  Below, the second geometry GEO2 on two
#    variants is held to the same bounds against its own reference
#    (measured at least 3.3x, at most 3.2e-3; phi3-partial-bf16 there gave
#    2.04x on recv, too near the bound to keep).  An engine run at GEO2
#    against the GEO reference gave 1.64x .. 2.0x at the least, a margin
#    too thin to be a check.  The f32 mode keeps its 1e-4 above; the HDF5
#    records the mode (root attribute compute).
#    Where oneDNN has no bf16 matmul the products run as sgemm on inputs
#    rounded to bf16 (below): those runs are held to RATIO_EMU.
TOLB=1.2e-2 RATIO=2 RATIO_EMU=1.5
emu_warn='^warning: --compute bf16: oneDNN has no bf16 matmul for this CPU'
ratio_of() { if grep -q "$emu_warn" "$1"; then echo $RATIO_EMU; else echo $RATIO; fi; }   # ERRFILE
: >"$TMP/bpairs"; : >"$TMP/batch2"
for v in "${variants[@]}"; do
	if SINKSCOPE_ATTN_TILE=$GEO actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/$v.b.h5" --acts resid,attn_out,mlp_out \
		--compute bf16 2>"$TMP/err"; then
		echo "$v $TMP/$v.b.h5 $TMP/$v.h5 $TMP/$v.refb.h5 $(ratio_of "$TMP/err")" >>"$TMP/bpairs"
	else t_fail "$v: actdump --compute bf16 ran" "$(head -3 "$TMP/err")"; fi
done
for v in $GEO2_VARIANTS; do
	echo "$M/$v $TMP/ids $TMP/$v.refb2.h5 bf16:$GEO2" >>"$TMP/batch2"
	if SINKSCOPE_ATTN_TILE=$GEO2 actdump -m "$M/$v" --ids "$TMP/ids" -o "$TMP/$v.b2.h5" --acts resid,attn_out,mlp_out \
		--compute bf16 2>"$TMP/err"; then
		echo "$v(tiles $GEO2) $TMP/$v.b2.h5 $TMP/$v.h5 $TMP/$v.refb2.h5 $(ratio_of "$TMP/err")" >>"$TMP/bpairs"
	else t_fail "$v: SINKSCOPE_ATTN_TILE=$GEO2 actdump --compute bf16 ran" "$(head -3 "$TMP/err")"; fi
done
# The bf16 mode where oneDNN has no bf16 matmul (a CPU without AVX512_BF16
# or AMX): sgemm on inputs and weights rounded to bf16, against the same
# reference.  On such a CPU every run above is that path; on this one
# oneDNN is capped at AVX2 (ONEDNN_MAX_CPU_ISA) and the kernels too, for a
# bf16, an f32 and an f16 model (their weights rounded in the layer
# buffer).  Measured with oneDNN and the kernels capped at AVX2 on all 17
# variants: at most 5.2e-3, at least 1.86x closer than the f32 run
# (mlp_out_norm of qwen3-bf16-tied, also the least natively, 2.3x; the
# next 3.1x), so RATIO_EMU = 1.5; the engine before (sgemm on the f32
# inputs, a "refused" warning) gave 0.85x .. 1.03x on these three.
EMU_VARIANTS="qwen2-bf16-sh llama-f32 linrope-f16"
if grep -q "$emu_warn" "$TMP/err"; then
	t_pass "bf16 mode: this CPU's oneDNN has no bf16 matmul, so every bf16 run above was the sgemm path"
else
	for v in $EMU_VARIANTS; do
		if ONEDNN_MAX_CPU_ISA=AVX2 SINKSCOPE_ISA=avx2 SINKSCOPE_ATTN_TILE=$GEO actdump -m "$M/$v" --ids "$TMP/ids" \
			-o "$TMP/$v.e.h5" --acts resid,attn_out,mlp_out --compute bf16 2>"$TMP/err-e"; then
			echo "$v(oneDNN capped at AVX2) $TMP/$v.e.h5 $TMP/$v.h5 $TMP/$v.refb.h5 $RATIO_EMU" >>"$TMP/bpairs"
			t_eq "$v --compute bf16, oneDNN capped at AVX2: one warning line saying so" 1 \
				"$(grep -c "$emu_warn" "$TMP/err-e")"
		else t_fail "$v: actdump --compute bf16 with oneDNN capped at AVX2 ran" "$(head -3 "$TMP/err-e")"; fi
	done
fi
t_ok "reference bf16 mode at tiles $GEO2 on $GEO2_VARIANTS" $PY "$REF/hf_ref.py" --batch "$TMP/batch2"
err=$(SINKSCOPE_ATTN_TILE=32,40 actdump -m "$M/llama-f32" --ids "$TMP/ids" -o "$TMP/bad.h5" 2>&1); rc=$?
t_eq "SINKSCOPE_ATTN_TILE with a key tile not a multiple of 16: exit 1, one line" \
	"1 1 SINKSCOPE_ATTN_TILE '32,40'" "$rc $(echo "$err" | wc -l) $(echo "$err" | grep -o "SINKSCOPE_ATTN_TILE '32,40'")"
while IFS=$'\t' read -r st what det; do
	if [ "$st" = ok ]; then t_pass "$what ($det)"; else t_fail "$what" "$det"; fi
done < <($PY - "$TMP/bpairs" $TOLB <<'PYEOF' 2>&1 | sed '/\t/!s/^/not ok\tbf16 comparison\t/'
import sys, h5py, numpy as np
tol = float(sys.argv[2])
KEYS = ("acts/resid", "acts/attn_out", "acts/mlp_out", "stats/resid_norm", "stats/resid_cos0",
        "stats/recv", "stats/attn_out_norm", "stats/mlp_out_norm")
for line in open(sys.argv[1]):
    v, b, f, r, ratio = line.rsplit(None, 4)
    b, f, r, ratio = h5py.File(b), h5py.File(f), h5py.File(r), float(ratio)
    modes = (b.attrs["compute"], f.attrs["compute"])
    modes = tuple(m.decode() if isinstance(m, bytes) else str(m) for m in modes)
    print("%s\t%s: root attribute compute of the two runs\t%s" %
          ("ok" if modes == ("bf16", "f32") else "not ok", v, "%s, %s" % modes))
    for k in KEYS:
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
t_done
