#!/usr/bin/env bash
# The real stories260k model on its own greedy story (the 41 ids llama2.c's
# run.c gives from BOS): actdump's /stats and activations against the
# float64 torch reference (tests/ref/hf_ref.py), tolerance 1e-4 as in
# actdump_ref.sh; and the position-0 figures that tests/unit/test_stories.c
# records (norm of h[l][0], sink-score of position 0 per layer) recomputed
# here from the reference file.
. "$(dirname "$0")/../lib.sh"
REF=$SS_ROOT/tests/ref
MD=$SS_ROOT/examples/models/stories260k
if ! have_py torch || ! have_py h5py; then
	t_skip "stories260k vs reference" "python3-torch or python3-h5py absent for $PY"; t_done; exit 0
fi
echo "1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352" >"$TMP/ids"
t_ok "reference forward" $PY "$REF/hf_ref.py" -m "$MD" --ids "$TMP/ids" -o "$TMP/ref.h5"
t_ok "actdump" actdump -m "$MD" --ids "$TMP/ids" -o "$TMP/t.h5" --acts all -t 2
while IFS=$'\t' read -r st what det; do
	if [ "$st" = ok ]; then t_pass "$what ($det)"; else t_fail "$what" "$det"; fi
done < <($PY "$REF/cmp_h5.py" --tol 1e-4 --acts resid,attn_out,mlp_in,mlp_out --label stories260k "$TMP/t.h5" "$TMP/ref.h5" 2>&1 | sed '/\t/!s/^/not ok\tcmp_h5.py\t/')
# position 0 as recorded in test_stories.c: ||h[l][0]|| for l = 0..5 and the
# sink-score of position 0 (mean over heads of recv) for l = 1..5
got=$($PY -c "
import h5py, sys
want = [2.2496, 8.2140, 10.3609, 12.2176, 16.0261, 18.6480, 0.0914, 0.0825, 0.1063, 0.0820, 0.1446]
f = h5py.File(sys.argv[1])
v = list(f['stats/resid_norm'][:, 0]) + list(f['stats/recv'][:, :, 0].mean(axis=1))
print(max(abs(a - b) for a, b in zip(v, want)) < 1e-4)" "$TMP/ref.h5" 2>&1)
t_eq "position 0 in the reference = the values test_stories.c asserts (within 1e-4)" True "$got"
t_done
