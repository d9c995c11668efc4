#!/usr/bin/env bash
# --max-memory in swapexp, pcaprobe and kvevict (#16 s4), as in actdump
# (tests/cli/bounded.sh): before the run each estimates the memory it
# allocates besides the mapped weights (swap_memory, probe_memory,
# kv_memory) and ss_mem_check refuses a run needing more than the limit:
# exit 1, one line naming the model folder (the trace file for pcaprobe),
# the estimate and the limit in fitting units, no output file.  A limit 1%
# under the printed estimate is refused and 1% over it runs, so the check
# compares that very estimate.  A bad size is a usage error (exit 2) naming
# the option before any input is read (the inputs here do not exist).  On a
# terminal the estimate is printed before the run.
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" | jq -j '.response[:600]' >text.txt
actdump -m org -t 2 --text text.txt --acts resid,mlp_in -o t.h5 2>/dev/null
sinkdetect t.h5 >eps.tsv 2>/dev/null
t_ok "inputs: trace and episodes" test -s t.h5 -a -s eps.tsv
T=$(h5dump -H -d /tokens/ids t.h5 2>/dev/null | sed -n "s/.*SIMPLE { ( \([0-9]*\) ).*/\1/p")
t_ok "the trace's length read ($T tokens)" test -n "$T"
sz='[0-9.]+ (B|KiB|MiB|GiB)'
# bytes of a printed size "4.3 MiB"
bytes() { awk -v s="$1" 'BEGIN{split(s, a, " "); m = a[2] == "KiB" ? 1024 : a[2] == "MiB" ? 1048576 : a[2] == "GiB" ? 1073741824 : 1; printf "%.0f", a[1] * m}'; }
check() { # NAME WHO OUT CMD...: the refusal, the limits around the estimate, the bad sizes
	local n=$1 who=$2 out=$3; shift 3
	T_OUT=$out t_fails "$n --max-memory 1K: refused, the estimate and the limit" 1 \
		"^$n: $who: $T tokens need about $sz besides the mapped weights \($sz\), more than --max-memory 1 KiB$" \
		"$@" -o "$out" --max-memory 1K
	local est; est=$(sed -n 's/.* need about \([0-9.]* [KMG]*i*B\) besides.*/\1/p' "$TMP/.err")
	local b; b=$(bytes "$est")
	T_OUT=$out t_fails "$n: a limit 1% under the estimate ($est) is refused" 1 "more than --max-memory" \
		"$@" -o "$out" --max-memory "$((b * 99 / 100))"
	"$@" -o "$out" --max-memory "$((b * 101 / 100))" 2>/dev/null
	t_eq "$n: a limit 1% over the estimate runs" 0 $?
	t_ok "$n: ... and writes its table" test -s "$out"
	rm -f "$out"
	for s in 1Q 0 -5M 12GG; do
		t_fails "$n --max-memory $s: a usage error before any input is read" 2 \
			"^$n: --max-memory: bad size '$s' \(e\.g\. 20G, 512M\)$" \
			"$@" -o "$out" --max-memory "$s" --model nothere
	done
}
check swapexp org sw.tsv swapexp -m org -t 2 t.h5 eps.tsv
check pcaprobe t.h5 pc.tsv pcaprobe -m org -t 2 t.h5 eps.tsv
check kvevict org kv.tsv kvevict -m org -t 2 --budgets 8 text.txt
# the usage errors above came with the model folder missing: not read
t_fails "swapexp --max-memory 1Q, inputs missing: still the usage error" 2 "bad size '1Q'" \
	swapexp -m nothere --max-memory 1Q missing.h5 missing.tsv
t_fails "kvevict --max-memory 1Q, input missing: still the usage error" 2 "bad size '1Q'" \
	kvevict -m nothere --max-memory 1Q missing.txt
# on a terminal: the estimate before the run
if command -v script >/dev/null; then
	tty() { env -u SINKSCOPE_NO_PROGRESS script -qec "$*" /dev/null </dev/null | tr '\r' '\n'; }
	t_match "swapexp on a terminal: the estimate" "^swapexp: t\.h5: $T tokens: about $sz of memory besides the mapped weights \($sz\)" \
		"$(tty "$SS_BIN/swapexp -m org -t 2 -o sw.tsv t.h5 eps.tsv")"
	t_match "pcaprobe on a terminal: the estimate" "^pcaprobe: t\.h5: $T tokens: about $sz of memory besides the mapped weights \($sz\)" \
		"$(tty "$SS_BIN/pcaprobe -m org -t 2 -o pc.tsv t.h5 eps.tsv")"
	t_match "kvevict on a terminal: the estimate" "^kvevict: text\.txt: [0-9]+ tokens: about $sz of memory besides the mapped weights \($sz\)" \
		"$(tty "$SS_BIN/kvevict -m org -t 2 --budgets 8 -o kv.tsv text.txt")"
else
	t_skip "on a terminal" "no script(1) (util-linux)"
fi
t_done
