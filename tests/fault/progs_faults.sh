#!/usr/bin/env bash
# pcaprobe, swapexp and tsne under faults (issue 9): traces cut short at
# several size classes, missing model folder, /dev/full and a closed pipe
# on stdout, a full disk on -o.  Inputs come from actdump on a small random
# model (skipped until actdump is built).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/known.inc"
MK=$SS_ROOT/tests/tools/mkmodel.py

if ! have_py numpy; then t_skip "pcaprobe/swapexp/tsne faults" "python3-numpy absent"; t_done; exit 0; fi
if [ ! -x "$SS_BIN/actdump" ] || [ ! -x "$SS_BIN/sinkdetect" ]; then
	t_skip "pcaprobe/swapexp/tsne faults" "bin/actdump or bin/sinkdetect not built yet"; t_done; exit 0
fi
cd "$TMP" || exit 1
$PY "$MK" --layers 4 m
$PY -c "import numpy as np; r=np.random.default_rng(3); print(' '.join(map(str, [1]+list(r.integers(0,256,383)))))" >ids
actdump -m m --ids ids -o t.h5 --acts resid,attn_out,mlp_in,mlp_out 2>/dev/null
sinkdetect t.h5 >e.tsv 2>/dev/null
t_ok "inputs: trace with activations and its episodes" test -s t.h5 -a -s e.tsv
size=$(stat -c %s t.h5)
for n in 0 40 4096 $((size / 2)) $((size - 1)); do
	head -c $n t.h5 >cut$n.h5
done
empty() { local l; l=$(ls -A "$1" 2>&1); [ -z "$l" ] || { echo "left in $1: $l"; return 1; }; }

for prog in pcaprobe swapexp; do
	if [ ! -x "$SS_BIN/$prog" ]; then t_skip "$prog faults" "bin/$prog not built"; continue; fi
	for n in 0 40 4096 $((size / 2)) $((size - 1)); do
		t_fails "$prog: trace cut to $n bytes" 1 "cut$n\.h5" $prog -m m cut$n.h5 e.tsv
	done
	t_fails "$prog: model folder missing" 1 "nomodel" $prog -m nomodel t.h5 e.tsv
	t_fails "$prog: episodes file missing" 1 "noep\.tsv" $prog -m m t.h5 noep.tsv
done

if [ -x "$SS_BIN/tsne" ]; then
	TS=(--layer 2 --iter 100 --exag-iter 50 -q)
	tsne "${TS[@]}" t.h5:/acts/resid >ok.tsv 2>/dev/null
	t_ok "tsne: baseline embedding" test -s ok.tsv
	for n in 0 40 4096 $((size / 2)) $((size - 1)); do
		t_fails "tsne: trace cut to $n bytes" 1 "cut$n\.h5" tsne "${TS[@]}" cut$n.h5:/acts/resid
	done
	tsne "${TS[@]}" t.h5:/acts/resid >/dev/full 2>full.err; rc=$?
	t_eq "tsne > /dev/full: exit 1" 1 "$rc"
	t_eq "tsne > /dev/full: one line" 1 "$(wc -l <full.err | tr -d ' ')"
	rc=$(closed_pipe tsne "${TS[@]}" t.h5:/acts/resid 2>pipe.err)
	t_eq "tsne | (closed pipe): ends by SIGPIPE, as a filter does" -13 "$rc"
	t_eq "tsne | (closed pipe): silent" 0 "$(wc -l <pipe.err | tr -d ' ')"
	mkdir -p disk
	t_fails "tsne -o with RLIMIT_FSIZE 1k" 1 "out\.h5" \
		bash -c 'trap "" XFSZ; ulimit -f 1; exec "$@"' sh tsne "${TS[@]}" -o disk/out.h5 t.h5:/acts/resid
	t_ok "tsne -o with RLIMIT_FSIZE: nothing left" empty disk
else
	t_skip "tsne faults" "bin/tsne not built"
fi
t_done
