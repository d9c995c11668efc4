#!/usr/bin/env bash
# Layer options checked before any data is read (#16 §4/§5): a --layers
# range outside the model (actdump) and a --layer outside it (pcaprobe) are
# usage errors, exit 2, from config.json alone: the text, ids, trace and
# episode table are not opened (here they do not exist, or are FIFOs no one
# writes, so reading them would fail with 1 or block).  swapexp and kvevict
# take no layer option (swapexp's -w is a count, clamped at layer 1).
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
L=$(jq .num_hidden_layers org/config.json)
t_ok "the organism has layers in config.json" test "$L" -ge 2
mkfifo fifo.txt fifo.h5 fifo.tsv
Lp=$((L + 1))
t_fails "actdump --layers $Lp, text absent" 2 "^actdump: --layers: layer $Lp outside 0-$L$" \
	actdump -m org --layers "$Lp" -o x.h5 no.txt
t_fails "actdump --layers 2-$((L + 5)), --ids absent" 2 "^actdump: --layers: layer range 2-$((L + 5)) outside 0-$L$" \
	actdump -m org --layers "2-$((L + 5))" -o x.h5 --ids no.ids
t_fails "actdump --layers 5-2 (reversed), --text absent" 2 "^actdump: --layers: layer range 5-2 is reversed" \
	actdump -m org --layers 5-2 -o x.h5 --text no.txt
t_fails "actdump --layers $Lp, text a FIFO (not opened)" 2 "^actdump: --layers: layer $Lp outside 0-$L$" \
	timeout 20 actdump -m org --layers "$Lp" -o x.h5 fifo.txt
t_ok "actdump --layers: no output" test ! -e x.h5
printf 'Hello world.' >ok.txt
t_ok "actdump --layers 0,$L (the last layer) runs" actdump -m org -t 2 --acts resid --layers "0,$L" -o ok.h5 ok.txt
for l in 0 "$Lp" -1; do
	t_fails "pcaprobe --layer $l, trace and table absent" 2 "^pcaprobe: --layer: $l outside 1-$L, the layers of org$" \
		pcaprobe -m org --layer "$l" no.h5 no.tsv
done
t_fails "pcaprobe --layer $Lp, trace and table FIFOs (not opened)" 2 "^pcaprobe: --layer: $Lp outside 1-$L" \
	timeout 20 pcaprobe -m org --layer "$Lp" fifo.h5 fifo.tsv
t_fails "pcaprobe --layer $L in range: fails at the absent trace" 1 "^pcaprobe: no.h5: " \
	pcaprobe -m org --layer "$L" no.h5 no.tsv
t_eq "swapexp and kvevict have no layer option" "" \
	"$(for p in swapexp kvevict; do $p --help | grep -E -- '--layers? ' | sed "s/^/$p: /"; done)"
t_done
