#!/usr/bin/env bash
# The memory estimates of --max-memory (#16 s4) against what the programs
# use, on a model where they matter: 8 layers of 1024 (16 heads, 4 KV
# heads, MLP 2816), bf16, 173 MiB of weights, and 2043 tokens.  The
# estimate (the number ss_mem_check prints, read from a --max-memory 1K
# refusal) counts what a run allocates besides the mapped weights; the
# weights leave the process layer by layer, so the measure it predicts is
# the peak of RssAnon (sampled every 5 ms by tests/tools/peakmem.py), and
# the estimate plus the weights bounds the peak RSS (getrusage's
# ru_maxrss, /usr/bin/time -v's figure) from above.  Tolerances: estimate
# >= 0.9x and <= 2x the peak RssAnon; estimate + weights >= 0.9x the peak
# RSS.  Measured (load ~4 on 2 cores): actdump 0.93x, kvevict 1.00x,
# swapexp 1.03x, pcaprobe 1.3x.
. "$(dirname "$0")/../lib.sh"
if [ "${SS_SANITIZE:-0}" = 1 ]; then   # ASan's shadow memory and redzones are in every RSS figure
	t_skip "memory estimates" "sanitizer build"; t_done; exit 0
fi
if ! have_py numpy; then t_skip "memory estimates" "python3-numpy absent"; t_done; exit 0; fi
cd "$TMP"
S=$SS_ROOT/examples/models/stories260k
PM="$PY $SS_ROOT/tests/tools/peakmem.py"
$PY "$SS_ROOT/tests/tools/mkmodel.py" --hidden 1024 --heads 16 --kv-heads 4 --inter 2816 --layers 8 \
	--vocab 512 --dtype bf16 --tied --max-pos 4096 big >/dev/null
awk 'BEGIN{for (i = 0; i < 60; i++) printf "Once upon a time, there was a little girl named Lily. She liked to play with her 3 dogs and 2 cats. "; print ""}' >story.txt
actdump --tokens-only -m "$S" story.txt | awk 'NR > 1 && NR <= 2044 {print $2}' >ids
actdump -m big --ids ids --tokenizer "$S/tokenizer.json" --acts resid,mlp_in --layers 2,4,6 -t 2 -o big.h5 2>/dev/null
printf 'trace\tpos\tkind\tl_start\tlifetime\n' >eps.tsv
for l in 2 4 6; do for p in 300 1500; do printf 'big.h5\t%d\tsecondary\t%d\t2\n' $((p + l)) $l >>eps.tsv; done; done
t_ok "inputs: a 2043-token trace of the model and six targets" test -s big.h5 -a "$(wc -l <ids)" -eq 2043
bytes() { awk -v s="$1" 'BEGIN{split(s, a, " "); m = a[2] == "KiB" ? 1024 : a[2] == "MiB" ? 1048576 : a[2] == "GiB" ? 1073741824 : 1; printf "%.0f", a[1] * m}'; }
measure() { # NAME CMD...: the estimate against the peak memory of the run
	local n=$1; shift
	"$@" --max-memory 1K >/dev/null 2>refuse.err
	local est w
	est=$(bytes "$(sed -n 's/.* need about \([0-9.]* [KMG]*i*B\) besides.*/\1/p' refuse.err)")
	w=$(bytes "$(sed -n 's/.*besides the mapped weights (\([0-9.]* [KMG]*i*B\)).*/\1/p' refuse.err)")
	local st rss anon file
	read -r st rss anon file < <($PM "$@" 2>/dev/null | tail -n 1)
	t_eq "$n: runs (exit 0)" 0 "$st"
	local r1 r2
	r1=$(awk -v e="$est" -v a="$anon" 'BEGIN{printf "%.3f", e / (a * 1024)}')
	r2=$(awk -v e="$est" -v w="$w" -v r="$rss" 'BEGIN{printf "%.3f", (e + w) / (r * 1024)}')
	echo "# $n: estimate $((est / 1048576)) MiB, weights $((w / 1048576)) MiB; peak RssAnon $((anon / 1024)) MiB ($r1 x), peak RSS $((rss / 1024)) MiB (estimate + weights $r2 x), peak RssFile $((file / 1024)) MiB"
	t_ok "$n: estimate >= 0.9x the peak RssAnon ($r1)" awk -v r="$r1" 'BEGIN{exit !(r >= 0.9)}'
	t_ok "$n: estimate <= 2x the peak RssAnon ($r1)" awk -v r="$r1" 'BEGIN{exit !(r <= 2)}'
	t_ok "$n: estimate + weights >= 0.9x the peak RSS ($r2)" awk -v r="$r2" 'BEGIN{exit !(r >= 0.9)}'
}
measure actdump actdump -m big --ids ids --tokenizer "$S/tokenizer.json" --acts resid,mlp_in --layers 4 -t 2 -o a.h5
measure swapexp swapexp -m big -t 2 -o sw.tsv big.h5 eps.tsv
measure pcaprobe pcaprobe -m big -t 2 -o pc.tsv big.h5 eps.tsv
measure kvevict kvevict -m big -t 2 --ids ids --policies window --budgets 64 -o kv.tsv
t_done
