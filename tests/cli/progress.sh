#!/usr/bin/env bash
# Progress with ETA on a terminal (#16 §4): swapexp (swap_run's progress
# callback), pcaprobe (per l_start probed: the distinct l_starts of its
# table) and kvevict print "N/TOTAL layers ... ETA" lines on a terminal
# (a pty from script(1)), nothing when stderr is not one.  swapexp's total
# is the baseline's L layers plus one step for the batched re-runs; with
# --exact, the baseline's L plus L per swap (one row of its table each),
# run here on one target, one layer and one component.
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
command -v script >/dev/null || { t_skip "progress" "no script(1) (util-linux)"; t_done; exit 0; }
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
L=$(jq .num_hidden_layers org/config.json)
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" | jq -j '.response[:600]' >text.txt
actdump -m org -t 2 --text text.txt --acts resid,mlp_in -o t.h5 2>/dev/null
sinkdetect t.h5 >eps.tsv 2>/dev/null
t_ok "inputs: trace and episodes" test -s t.h5 -a -s eps.tsv
tty() { env -u SINKSCOPE_NO_PROGRESS script -qec "$*" /dev/null </dev/null | tr '\r' '\n'; }
tty "$SS_BIN/swapexp -m org -t 2 -o sw.tsv t.h5 eps.tsv" >sw.tty
t_match "swapexp on a terminal: an ETA line" "^swapexp: [0-9]+/$((L + 1)) layers, [0-9.]+ layers/s, ETA [0-9]+ s" "$(cat sw.tty)"
t_eq "swapexp on a terminal: the last line reaches $((L + 1))/$((L + 1))" "$((L + 1))/$((L + 1))" \
	"$(grep -a -o '[0-9]*/[0-9]* layers' sw.tty | tail -n 1 | cut -d' ' -f1)"
env -u SINKSCOPE_NO_PROGRESS swapexp -m org -t 2 -o sw2.tsv t.h5 eps.tsv 2>sw.err
t_eq "swapexp, stderr not a terminal: nothing on stderr" "" "$(cat sw.err)"
t_ok "swapexp: the same table with and without a terminal" cmp sw.tsv sw2.tsv
awk -F'\t' 'NR == 1 || ($5 == "secondary" && n++ < 1)' eps.tsv >eps1.tsv
tty "$SS_BIN/swapexp -m org -t 2 --exact -w 1 --components mlp_out -o swx.tsv t.h5 eps1.tsv" >swx.tty
nsw=$(($(wc -l <swx.tsv) - 1))
t_ok "swapexp --exact: one swap row" test "$nsw" -eq 1
tot=$((L * (1 + nsw)))
t_eq "swapexp --exact on a terminal: the last line reaches $tot/$tot" "$tot/$tot" \
	"$(grep -a -o '[0-9]*/[0-9]* layers' swx.tty | tail -n 1 | cut -d' ' -f1)"
t_eq "swapexp --exact: no line counts past its total" "" \
	"$(grep -a -o '[0-9]*/[0-9]* layers' swx.tty | awk -F'[/ ]' '$1 > $2 || $2 != '$tot'')"
tty "$SS_BIN/kvevict -m org -t 2 --budgets 8 -o kv.tsv text.txt" >kv.tty
t_match "kvevict on a terminal: an ETA line" "^kvevict: pass [0-9]+/[0-9]+, layer [0-9]+/$L: [0-9]+/[0-9]+ layers, .* ETA [0-9]+ s" "$(cat kv.tty)"
env -u SINKSCOPE_NO_PROGRESS kvevict -m org -t 2 --budgets 8 -o kv2.tsv text.txt 2>kv.err
t_eq "kvevict, stderr not a terminal: nothing on stderr" "" "$(cat kv.err)"
tty "$SS_BIN/pcaprobe -m org -t 2 -o pc.tsv t.h5 eps.tsv" >pc.tty
nls=$(awk -F'\t' 'NR > 1 {print $2}' pc.tsv | sort -u | wc -l)
t_match "pcaprobe on a terminal: an ETA line" "^pcaprobe: [0-9]+/$nls layers, [0-9.]+ layers/s, ETA [0-9]+ s" "$(cat pc.tty)"
env -u SINKSCOPE_NO_PROGRESS pcaprobe -m org -t 2 -o pc2.tsv t.h5 eps.tsv 2>pc.err
t_eq "pcaprobe, stderr not a terminal: nothing on stderr" "" "$(cat pc.err)"
t_ok "pcaprobe: the same table with and without a terminal" cmp pc.tsv pc2.tsv
t_done
