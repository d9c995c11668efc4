#!/usr/bin/env bash
# The pipelines' helper scripts (pipelines/bin) fail when an early stage of
# one of their pipes fails, with the stage's one line, instead of writing
# their output from what the failed stage left: bin/compare on a model
# whose levels.tsv lacks a column (the columns were process substitutions
# feeding paste: the message was printed, the table written, exit 0);
# bin/hastext on a trace with and without token text; bin/yaml2mk on a
# pipeline: section with a key twice (make let the last one win).
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
cd "$TMP"
# a model's pipeline outputs as bin/compare reads them, no traces
mkdir -p m/tables cmp
printf 'P_n_layers := 4\nP_n_traces := 0\n' >m/config.mk
printf 'layer\tscore\n1\t0.2\n2\t0.9\n3\t0.4\n4\t0.8\n' >m/tables/primary.tsv
printf 'level\tl_start\tlifetime\tcount\n1\t2\t2\t5\n' >m/levels.tsv # no share column
"$PL/bin/compare" cmp m=m >out 2>err; rc=$?
t_eq "compare: a levels.tsv without its share column: exit 1" 1 $rc
t_match "compare: ... one line naming the file and the column" "^compare: m/levels\.tsv: missing column share$" "$(head -1 err)"
t_ok "compare: ... no levels table written" test ! -e cmp/tables/levels.tsv
sed -i 's/count$/count\tshare/; s/5$/5\t1/' m/levels.tsv
printf 'trace\tkind\n' >m/episodes.tsv # no pos column
"$PL/bin/compare" cmp m=m >out 2>err; rc=$?
t_eq "compare: an episodes.tsv without its pos column: exit 1" 1 $rc
t_match "compare: ... naming the file and the column" "^compare: m/episodes\.tsv: missing column pos$" "$(head -1 err)"
# hastext: exit 0 with token text, 1 without (the sed | grep pipe)
if [ -x "$SS_BIN/sinkplant" ] && have_py h5py; then
	sinkplant --n-layers 4 --tokens 32 --heads 2 --levels 2:2 --per-level 3 --distractors 1 -o p.h5 2>/dev/null
	$PY -c 'import h5py,sys; f=h5py.File(sys.argv[1],"a"); d=f["/tokens/text"]; t=d[...]; del f["/tokens/text"]; f.create_dataset("/tokens/text", data=[b""]*len(t), dtype=h5py.string_dtype())' \
		p.h5 2>/dev/null && cp p.h5 empty.h5
	sinkplant --n-layers 4 --tokens 32 --heads 2 --levels 2:2 --per-level 3 --distractors 1 -o p.h5 2>/dev/null
	t_ok "hastext: a planted trace has token text" "$PL/bin/hastext" p.h5
	if [ -f empty.h5 ]; then
		"$PL/bin/hastext" empty.h5; t_eq "hastext: all pieces empty: exit 1" 1 $?
	else t_skip "hastext: all pieces empty" "could not blank /tokens/text"; fi
	"$PL/bin/hastext" nosuch.h5; t_eq "hastext: a missing file: exit 1" 1 $?
else
	t_skip "hastext" "sinkplant or h5py absent"
fi
# yaml2mk: a pipeline: key twice
printf 'pipeline:\n  model: a\n  n_traces: 2\n  model: b\nactdump:\n  model: c\n' >dup.yaml
"$PL/bin/yaml2mk" dup.yaml >out 2>err; rc=$?
t_eq "yaml2mk: a pipeline: key twice: exit 1" 1 $rc
t_eq "yaml2mk: ... one line naming the file, line and key" \
	"yaml2mk: dup.yaml: line 4: duplicate key 'model' (first at line 2)" "$(cat err)"
t_eq "yaml2mk: ... no P_LOADED (the Makefile's mark of a complete file)" "" "$(grep P_LOADED out)"
printf 'pipeline:\n  model: a\n  n_traces: 2\nactdump:\n  model: c\n' >ok.yaml
t_eq "yaml2mk: the same key in another section is fine" "P_model := a P_n_traces := 2 P_LOADED := 1" "$("$PL/bin/yaml2mk" ok.yaml | xargs)"
t_done
