#!/usr/bin/env bash
# valgrind memcheck on the CLI programs with small models (issue 9): zero
# errors and zero leaks (definitely + indirectly lost) for good runs, for
# failures (bad model, bad input) and for --help.  Skipped in the sanitizer
# build, where ASan does this job.
. "$(dirname "$0")/../lib.sh"
MK=$SS_ROOT/tests/tools/mkmodel.py

if [ "${SS_SANITIZE:-0}" = 1 ]; then t_skip "valgrind" "sanitizer build"; t_done; exit 0; fi
if ! command -v valgrind >/dev/null; then t_skip "valgrind" "valgrind not installed"; t_done; exit 0; fi
if ! have_py numpy; then t_skip "valgrind" "python3-numpy absent"; t_done; exit 0; fi

# OpenBLAS must not pick kernels valgrind cannot decode (AVX-512).
export OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell
VG=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
	--errors-for-leak-kinds=definite,indirect --num-callers=20)
[ -f "$SS_ROOT/tests/fault/valgrind.supp" ] && VG+=(--suppressions="$SS_ROOT/tests/fault/valgrind.supp")

# vg DESC EXPECTED_STATUS PROG ARGS...: memcheck clean and the program's own
# exit status as expected.
vg() { local d=$1 st=$2 prog=$3; shift 3
	if [ ! -x "$SS_BIN/$prog" ]; then t_skip "valgrind: $d" "bin/$prog not built yet"; return; fi
	"${VG[@]}" --log-file="$TMP/vg.log" "$SS_BIN/$prog" "$@" >"$TMP/vg.out" 2>"$TMP/vg.err" </dev/null
	local rc=$?
	local errs; errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$TMP/vg.log" | tail -1)
	if [ $rc -eq 99 ] || [ -s "$TMP/vg.log" ]; then
		_res 1 "valgrind: $d" "memcheck: ${errs:-?} errors (exit $rc)" "$(grep -m8 -E '==[0-9]+== +(Invalid|Conditional|Use of|Syscall|[0-9,]+ bytes|at |by )' "$TMP/vg.log" | sed 's/==[0-9]*== //')"
	elif [ $rc -ne "$st" ]; then
		_res 1 "valgrind: $d" "exit $rc, expected $st" "$(head -3 "$TMP/vg.err")"
	else _res 0 "valgrind: $d"; fi
}

$PY "$MK" --layers 2 "$TMP/m"
$PY "$MK" --arch qwen3 --dtype bf16 --tied --shards 2 --layers 2 "$TMP/q3"
$PY "$MK" --arch phi3 --dtype f16 --layers 2 "$TMP/p3"
$PY "$MK" --fault missing-tensor --layers 2 "$TMP/bad"
$PY "$MK" --fault trunc-mid --layers 2 "$TMP/trunc"
seq 1 32 | tr '\n' ' ' >"$TMP/ids"

vg "actdump --help" 0 actdump --help
vg "actdump llama f32, all activations" 0 actdump -m "$TMP/m" --ids "$TMP/ids" -o "$TMP/a.h5" \
	--acts resid,attn_out,mlp_in,mlp_out
vg "actdump qwen3 bf16 sharded, --layers 2, 2 threads" 0 actdump -m "$TMP/q3" --ids "$TMP/ids" -o "$TMP/b.h5" \
	--acts mlp_out --layers 2 --threads 2
vg "actdump phi3 f16, stats only" 0 actdump -m "$TMP/p3" --ids "$TMP/ids" -o "$TMP/c.h5"
vg "actdump missing tensor (exit 1)" 1 actdump -m "$TMP/bad" --ids "$TMP/ids" -o "$TMP/x.h5"
vg "actdump truncated safetensors (exit 1)" 1 actdump -m "$TMP/trunc" --ids "$TMP/ids" -o "$TMP/x.h5"
# sinkdetect and sinklevels on a planted trace (independent of actdump)
PLANT=$SS_BIN/sinkplant
if [ -x "$PLANT" ] && "$PLANT" --n-layers 12 --tokens 512 --heads 4 --levels 4:3,6:4 --per-level 20 --distractors 5 -o "$TMP/p.h5" 2>/dev/null; then
	vg "sinkdetect on a planted trace" 0 sinkdetect "$TMP/p.h5"
	vg "sinkdetect --summary -o OUT.h5" 0 sinkdetect --summary -o "$TMP/p2.h5" "$TMP/p.h5"
	head -c 3000 "$TMP/p.h5" >"$TMP/cut.h5"
	vg "sinkdetect on truncated HDF5 (exit 1)" 1 sinkdetect "$TMP/cut.h5"
	if [ -x "$SS_BIN/sinkdetect" ]; then
		sinkdetect "$TMP/p.h5" >"$TMP/ep.tsv" 2>/dev/null
		vg "sinklevels on sinkdetect output" 0 sinklevels "$TMP/ep.tsv"
		head -5 "$TMP/ep.tsv" | cut -f1-4 >"$TMP/bad.tsv"
		vg "sinklevels on a malformed table (exit 1)" 1 sinklevels "$TMP/bad.tsv"
	fi
	if [ -s "$TMP/a.h5" ]; then vg "sinkdetect on actdump output" 0 sinkdetect "$TMP/a.h5"; fi
else
	t_skip "valgrind: sinkdetect, sinklevels" "bin/sinkplant not built"
fi
t_done
