#!/usr/bin/env bash
# Bounded runs (#16 §4) and range messages (§7): a text longer than
# max_position_embeddings is refused by default, naming both numbers and
# the override (--positions warn runs it); sizes print in the unit that
# fits (--max-memory 1K is "1 KiB", not "0.00 GiB"); on a terminal the
# estimated memory and a progress line come before and during the run;
# ranges print as "-3" and "5-2", a reversed one as reversed.
. "$(dirname "$0")/../lib.sh"
S=$SS_ROOT/examples/models/stories260k
cd "$TMP"
# 803 tokens for a model of 512 positions (stories260k's config.json)
awk 'BEGIN{for (i = 0; i < 80; i++) printf "Once upon a time there was a cat. "; print ""}' >long.txt
n=$(actdump --tokens-only -m "$S" long.txt | awk 'END{print NR - 1}')
mp=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['max_position_embeddings'])" "$S/config.json")
t_ok "the text is longer than the model's positions ($n > $mp)" test "$n" -gt "$mp"
T_OUT=long.h5 t_fails "longer than max_position_embeddings: refused by default" 1 \
	"^actdump: .*config.json:max_position_embeddings: $n tokens exceed $mp \(--positions warn runs them anyway\)$" \
	actdump -m "$S" -o long.h5 long.txt
actdump -m "$S" --positions warn -o long.h5 long.txt 2>warn.err; rc=$?
t_eq "--positions warn: runs (exit 0)" 0 "$rc"
t_match "--positions warn: says so, with both numbers" "$n tokens exceed max_position_embeddings $mp" "$(cat warn.err)"
printf 'Once upon a time there was a cat.\n' >short.txt
t_fails "--max-memory 1K: the sizes in fitting units" 1 \
	"need about [0-9.]+ [KM]iB besides the mapped weights \([0-9.]+ [KM]iB\), more than --max-memory 1 KiB$" \
	actdump -m "$S" --max-memory 1K -o s.h5 short.txt
t_fails "--max-memory 100K" 1 "more than --max-memory 100 KiB$" actdump -m "$S" --max-memory 100K -o s.h5 short.txt
# on a terminal (script(1) gives the program one): the estimate, then progress
: >empty
if timeout 120 script -q -c "env -u SINKSCOPE_NO_PROGRESS actdump -m '$S' -o tty.h5 --positions warn long.txt" typescript >script.out 2>&1 <empty; then
	out=$(tr '\r' '\n' <typescript)
	t_match "on a terminal: the estimated memory before the run" "actdump: long.txt: $n tokens: about [0-9.]+ [KMG]iB of memory besides the mapped weights" "$out"
	t_match "on a terminal: progress with the rate and ETA" "actdump: layer [0-9]+/[0-9]+: [0-9]+/$n tok, [0-9.]+ tok/s, ETA" "$out"
else
	t_skip "on a terminal" "script(1) could not run"
fi
# HDF5 is refused on a terminal whether stdout is named "-" or otherwise
for o in - /dev/stdout /dev/fd/1; do
	if timeout 60 script -q -c "actdump -m '$S' -o $o short.txt; echo rc=\$?" typescript >script.out 2>&1 <empty; then
		out=$(tr '\r' '\n' <typescript)
		t_match "-o $o on a terminal: refused, exit 2" \
			"actdump: refusing to write HDF5 to a terminal: use -o FILE or a pipe.*rc=2" "$(echo "$out" | tr '\n' ' ')"
	else
		t_skip "-o $o on a terminal" "script(1) could not run"
	fi
done
actdump -m "$S" -o quiet.h5 short.txt 2>quiet.err
t_eq "not a terminal, a small run: nothing on stderr" "" "$(cat quiet.err)"
# ranges
t_fails "--layers -3: printed as -3" 2 "^actdump: --layers: layer -3 outside 0-[0-9]+$" actdump -m "$S" --layers -3 -o x.h5 short.txt
t_fails "--layers 5-2: a reversed range" 2 "^actdump: --layers: layer range 5-2 is reversed \(write 2-5\)$" actdump -m "$S" --layers 5-2 -o x.h5 short.txt
t_fails "--layers 3-99: outside" 2 "^actdump: --layers: layer range 3-99 outside 0-[0-9]+$" actdump -m "$S" --layers 3-99 -o x.h5 short.txt
sinkplant --n-layers 12 --tokens 64 --heads 2 --levels 4:3 --per-level 3 --distractors 1 -o p.h5 2>/dev/null
t_fails "sinkdetect -l 13: one layer, printed as 13" 1 "layer 13: outside the trace's layers 1-12$" sinkdetect -l 13 p.h5
t_done
