#!/usr/bin/env bash
# actdump over several sequences keeps the first one's packed weights for
# the rest (forward.h, ss_fwd_keep): each row's file must equal, dataset by
# dataset and bit for bit, the file of a run over that row alone (which
# packs its own), in both compute modes, with activations stored, for rows
# of different lengths (a packing laid out for another number of rows is
# made again: the bf16 mode's 64-row matrices of stories260k are laid out
# one way for 7-37 rows and another above); and --timings must show the
# later rows finding every matrix packed or packing it (kept + packed =
# the first row's packed).
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
A=$SS_BIN/actdump
M=$SS_ROOT/examples/models/stories260k
if [ ! -x "$A" ]; then t_skip "kept packings" "actdump not built"; t_done; exit 0; fi
have_py h5py || { t_skip "kept packings" "h5py (python3-h5py) missing"; t_done; exit 0; }
cd "$TMP" || exit 1
long='Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She ran to it and kicked it high into the sky. The ball flew over the trees and landed in a pond. Lily was sad, but a kind duck swam to the ball and pushed it back to her.'
{
	printf '{"t": "%s"}\n' "$long"
	printf '{"t": "%s"}\n' "Once upon a time, there was a cat."
	printf '{"t": "%s"}\n' "$long $long"
	printf '{"t": "%s"}\n' "The dog ran to the park. The sun was hot."
} >rows.jsonl
same() { # same A B: "ok" when every dataset of A is in B with equal values
	$PY - "$1" "$2" <<'PYEOF'
import h5py, sys, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visit(lambda n: names.append(n) if isinstance(a[n], h5py.Dataset) else None)
bad = [n for n in names if n != "meta/command" and (n not in b or a[n].dtype != b[n].dtype or
       not np.array_equal(a[n][()], b[n][()]))]
print("ok" if names and not bad else "differ: %s" % (bad or "no datasets"))
PYEOF
}
for mode in f32 bf16; do
	"$A" -m "$M" --compute "$mode" --jsonl rows.jsonl --field t --acts resid,mlp_out --timings \
		-o "all-$mode-{row}.h5" 2>"all-$mode.err"
	t_eq "$mode: four rows written" 4 "$(ls all-"$mode"-*.h5 2>/dev/null | wc -l)"
	for i in 0 1 2 3; do
		"$A" -m "$M" --compute "$mode" --jsonl rows.jsonl --field t --index "$i" --acts resid,mlp_out \
			-o "one-$mode-$i.h5" 2>/dev/null
		t_eq "$mode row $i: kept packings give the file of a run over the row alone" ok \
			"$(same "one-$mode-$i.h5" "all-$mode-$i.h5")"
	done
	counts=$(sed -n 's/.*matrices packed \([0-9]*\), kept from an earlier sequence \([0-9]*\)$/\1 \2/p' "all-$mode.err")
	t_eq "$mode: --timings gives the counts of every row" 4 "$(printf '%s\n' "$counts" | grep -c .)"
	first=$(printf '%s\n' "$counts" | awk 'NR == 1 { print $1 }')
	t_eq "$mode: the first row finds nothing kept" 0 "$(printf '%s\n' "$counts" | awk 'NR == 1 { print $2 }')"
	if [ "${first:-0}" -gt 0 ]; then   # oneDNN packs here (not sgemm)
		t_eq "$mode: later rows: kept + packed = the first row's packings" "$first $first $first" \
			"$(printf '%s\n' "$counts" | awk 'NR > 1 { printf "%s%d", s, $1 + $2; s = " " }')"
		t_match "$mode: the last row keeps packings" '^[0-9]+ [1-9]' "$(printf '%s\n' "$counts" | tail -1)"
	else
		t_skip "$mode: kept + packed" "no oneDNN packings on this CPU"
		t_skip "$mode: the last row keeps packings" "no oneDNN packings on this CPU"
	fi
done
t_done
