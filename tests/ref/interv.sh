#!/usr/bin/env bash
# Interventions and incremental decoding (decode.h) against full
# recomputation through the same forward pass: tests/tools/ivcheck on the
# real stories260k model and on random models of the other architectures
# (Qwen2 biases, Qwen3 q/k norms, Phi-3 fused weights, Llama-3 RoPE; f32
# and bf16 weights).  Tolerances are ivcheck's: 1e-5 relative for f32
# caches, 1e-2 (re-runs) and 2e-2 (logits) with bf16 caches.
. "$(dirname "$0")/../lib.sh"
run() { # name dir T
	local out rc
	out=$("$SS_BUILD/tools/ivcheck" "$2" "$3" 2>&1); rc=$?
	local nf; nf=$(printf '%s\n' "$out" | grep -c '^not ok')
	local np; np=$(printf '%s\n' "$out" | grep -c '^ok')
	if [ $rc -eq 0 ] && [ "$nf" -eq 0 ] && [ "$np" -ge 40 ]; then t_pass "$1: $np checks (interventions, decode, MLP, queries)"
	else t_fail "$1: ivcheck exit $rc, $nf failed" "$(printf '%s\n' "$out" | grep -v '^ok' | head -5)"; fi
}
run stories260k "$SS_ROOT/examples/models/stories260k" 64
if have_py numpy; then
	M=$TMP/models
	for v in "qwen2 --dtype f32 --tied" "qwen3 --dtype bf16" "phi3 --dtype f32" "llama --rope llama3 --dtype bf16"; do
		set -- $v; a=$1; shift
		d=$M/$a-$*; d=${d// /}
		if $PY "$SS_ROOT/tests/tools/mkmodel.py" --arch "$a" "$@" --layers 4 "$d" >/dev/null 2>&1; then
			run "random $a $*" "$d" 96
		else t_fail "mkmodel.py --arch $a $*"; fi
	done
else
	t_skip "random architectures" "numpy absent for $PY"
fi
t_done
