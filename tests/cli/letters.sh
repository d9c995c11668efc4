#!/usr/bin/env bash
# One meaning per option letter, suite-wide (sinkscope(7) OPTIONS): every
# letter a program's --help shows is the letter of the same long option in
# the table of sinkscope(7) and in every other program; a program with an
# option of the table takes its letter; threads are validated before any
# input is read (0 and 10000 are usage errors, exit 2, naming --threads)
# and default to every CPU; a usage error names the option at fault.
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
# the table: letter and long option, from the rendered manual
mandoc -Tascii -O width=200 "$SS_ROOT/man/man7/sinkscope.7" | col -b |
	awk '/^OPTIONS/{f=1; next} /^[A-Z]/{f=0} f && $1 ~ /^-[a-zA-Z]$/ && $2 ~ /^--/ {print $1, $2}' >table
t_ok "sinkscope(7) has an option-letter table" test "$(wc -l <table)" -ge 10
for p in "$SS_BIN"/*; do
	[ -x "$p" ] || continue
	n=$(basename "$p")
	"$p" --help | awk -v n="$n" '/^  -[a-zA-Z], --/ {sub(/^  /, ""); print n, substr($1, 1, 2), $2}
		/^      --/ {print n, "-", $1}' >>all
done
# letter -> long: one long name per letter across the suite, as in the table
t_eq "each letter has one long option in every program" "" \
	"$(awk '$2 != "-" {print $2, $3}' all | sort -u | awk '{c[$1]++} c[$1] > 1' )"
t_eq "each letter a program uses is in sinkscope(7) with that long option" "" \
	"$(awk 'NR==FNR {t[$1] = $2; next} $2 != "-" && t[$2] != $3 {print $1, $2, $3}' table all)"
t_eq "an option of the table has its letter in every program" "" \
	"$(awk 'NR==FNR {t[$2] = $1; next} $2 == "-" && ($3 in t) {print $1, $3}' table all)"
t_eq "the old letters are gone (sinkdetect -s -m, sinklevels -t, tsne -j -l -n, swapexp -c -s)" "" \
	"$(grep -E '^(sinkdetect -s --summary|sinkdetect -m --min-lifetime|sinklevels -. --(fit|assign|tol|min-count)|tsne -j --threads|tsne -l --layer|tsne -n --iter|tsne -L --labels|swapexp -c --components|swapexp -s --summary|pcaprobe -l --layer|pcaprobe -k --(n-)?components|sinkplant -. --(n-layers|layers|tokens|heads))$' all)"

# threads: 0 and 10000 are usage errors before any input is read (the
# inputs here do not exist: a status 1 would mean they were opened)
for bad in 0 10000 -1; do
	t_fails "actdump -t $bad" 2 "^actdump: --threads: $bad out of range 1-1024$" actdump -m nomodel -t $bad --ids noids
	t_fails "kvevict -t $bad" 2 "^kvevict: --threads: $bad out of range 1-1024$" kvevict -m nomodel -t $bad --ids noids
	t_fails "pcaprobe -t $bad" 2 "^pcaprobe: --threads: $bad out of range 1-1024$" pcaprobe -m nomodel -t $bad no.h5 no.tsv
	t_fails "swapexp -t $bad" 2 "^swapexp: --threads: $bad out of range 1-1024$" swapexp -m nomodel -t $bad no.h5 no.tsv
	t_fails "tsne -t $bad" 2 "^tsne: --threads: $bad out of range 1-1024$" tsne -t $bad no.h5:/acts/resid
done
printf 'tsne:\n  threads: 0\n' >t0.yaml
t_fails "threads: 0 in a config file" 2 "^tsne: --threads: 0 out of range" tsne --config t0.yaml no.h5:/acts/resid
t_fails "-t x: names --threads" 2 "^tsne: --threads: expected an integer, got 'x'$" tsne -t x no.h5:/acts/resid
# an integer too large for its type (strtol's ERANGE) is out of range,
# with the range, not "expected an integer"; --threads gives its own range
big=99999999999999999999
for p in actdump kvevict; do
	t_fails "$p -t $big: out of range" 2 "^$p: --threads: $big out of range 1-1024$" $p -m nomodel -t $big --ids noids
done
t_fails "tsne -t -$big: out of range" 2 "^tsne: --threads: -$big out of range 1-1024$" tsne -t -$big no.h5:/acts/resid
t_fails "sinklevels --top $big: out of range" 2 \
	"^sinklevels: --top: $big out of range -9223372036854775808 to 9223372036854775807$" sinklevels --top $big no.tsv
t_fails "tsne --iter -$big: out of range" 2 \
	"^tsne: --iter: -$big out of range -9223372036854775808 to 9223372036854775807$" tsne --iter -$big no.h5:/acts/resid
t_fails "sinkplant --seed $big: out of range" 2 "^sinkplant: --seed: $big out of range " sinkplant --seed $big -o o.h5
printf 'sinklevels:\n  top: %s\n' $big >big.yaml
t_fails "top: $big in a config file: out of range, file and line" 1 \
	"^sinklevels: big\.yaml:2: sinklevels: top: $big out of range " sinklevels --config big.yaml no.tsv
t_ok "-t 1024 is accepted (fails later, at the missing input)" sh -c 'tsne -t 1024 --layer 1 no.h5:/acts/resid 2>/dev/null; test $? -eq 1'
# the default: every CPU, the same in every program that has threads
t_eq "every --threads defaults to all processors" "" \
	"$(for p in actdump kvevict pcaprobe swapexp tsne; do $p --help | grep -- '--threads' | grep -qv 'default: all processors' && echo $p; done)"
awk 'BEGIN{srand(3); for (i = 0; i < 60; i++) {printf "%d", i % 3; for (j = 0; j < 4; j++) printf "\t%.4f", rand() + (i % 3); print ""}}' >m.tsv
tsne --iter 50 --exag-iter 20 --perplexity 5 <m.tsv >/dev/null 2>err
t_match "tsne without -t runs on every CPU ($(nproc))" " $(nproc) threads$" "$(cat err)"

# a usage error names the option at fault
t_fails "tsne --perplexity 0" 2 "^tsne: --perplexity: must be positive$" tsne --perplexity 0 no.h5:/acts/resid
t_fails "tsne --iter 0" 2 "^tsne: --iter: must be at least 1$" tsne --iter 0 no.h5:/acts/resid
t_fails "tsne --knn 0" 2 "^tsne: --knn: must be at least 1$" tsne --knn 0 no.h5:/acts/resid
t_fails "tsne --classes bad" 2 "^tsne: --classes: " tsne --classes bad no.h5:/acts/resid
t_fails "pcaprobe --n-components 0" 2 "^pcaprobe: --n-components: 0 must be at least 1$" pcaprobe -m M --n-components 0 a.h5 b.tsv
t_fails "pcaprobe --fit x" 2 "^pcaprobe: --fit: expected all or nonsink" pcaprobe -m M --fit x a.h5 b.tsv
t_fails "pcaprobe --classes x" 2 "^pcaprobe: --classes: " pcaprobe -m M --classes x a.h5 b.tsv
t_fails "pcaprobe -c 2" 2 "^pcaprobe: --tau-cos: 2 outside" pcaprobe -m M -c 2 a.h5 b.tsv
t_fails "pcaprobe without -m" 2 "^pcaprobe: -m, --model: missing" pcaprobe a.h5 b.tsv
t_fails "swapexp --window 0" 2 "^swapexp: --window: 0 must be at least 1$" swapexp -m M --window 0 a.h5 b.tsv
t_fails "swapexp --components x" 2 "^swapexp: --components: " swapexp -m M --components x a.h5 b.tsv
t_fails "swapexp --kv x" 2 "^swapexp: --kv: " swapexp -m M --kv x a.h5 b.tsv
t_fails "swapexp -n 0" 2 "^swapexp: --tau-norm: 0 must be positive$" swapexp -m M -n 0 a.h5 b.tsv
t_fails "swapexp --decision-frac 2" 2 "^swapexp: --decision-frac: 2 must be in" swapexp -m M --decision-frac 2 a.h5 b.tsv
t_fails "actdump --top-p 2" 2 "^actdump: --top-p: 2 outside" actdump -m M --generate 3 --top-p 2 --text no.txt
t_fails "actdump --temperature -1" 2 "^actdump: --temperature: -1 is negative$" actdump -m M --generate 3 --temperature -1 --text no.txt
t_fails "actdump --kv x" 2 "^actdump: --kv: expected f32 or bf16" actdump -m M --generate 3 --kv x --text no.txt
t_fails "actdump --text-out without --generate" 2 "^actdump: --text-out: " actdump -m M --text-out o.txt --text no.txt
t_fails "kvevict -c 1" 2 "^kvevict: --tau-cos: 1 outside" kvevict -m M -c 1 --ids no
t_fails "sinklevels --top -1" 2 "^sinklevels: --top: -1 must be >= 0$" sinklevels --top -1 no.tsv
t_fails "sinkdetect -n x" 2 "^sinkdetect: --tau-norm: expected a finite number, got 'x'$" sinkdetect -n x no.h5
# each option of a combined check on its own (sinklevels named none, with
# no --; sinkdetect named both), and a single layer range as every range
# prints (reversed: say so; layers start at 1)
t_fails "sinklevels --tol 0" 2 "^sinklevels: --tol: 0 must be positive$" sinklevels --tol 0 no.tsv
t_fails "sinklevels --min-count 0" 2 "^sinklevels: --min-count: 0 must be at least 1$" sinklevels --min-count 0 no.tsv
t_fails "sinklevels --min-share 2" 2 "^sinklevels: --min-share: 2 outside \[0, 1\]$" sinklevels --min-share 2 no.tsv
t_fails "sinkdetect --primary-start 2" 2 "^sinkdetect: --primary-start 2: must lie in \[0, 1\]$" sinkdetect --primary-start 2 no.h5
t_fails "sinkdetect --primary-end -1" 2 "^sinkdetect: --primary-end -1: must lie in \[0, 1\]$" sinkdetect --primary-end -1 no.h5
t_fails "sinkdetect -l 5-2" 2 "^sinkdetect: --layers: layer range 5-2 is reversed \(write 2-5\)$" sinkdetect -l 5-2 no.h5
t_fails "sinkdetect -l 0" 2 "^sinkdetect: --layers: layer 0: layers start at 1$" sinkdetect -l 0 no.h5
t_fails "sinkdetect -l 3-" 2 "^sinkdetect: --layers: expected A or A-B, got '3-'$" sinkdetect -l 3- no.h5
t_fails "tsne --l-start 5-2" 2 "^tsne: --l-start: layer range 5-2 is reversed \(write 2-5\)$" tsne --l-start 5-2 --labels no.tsv --layer 1 no.h5:/acts/resid
t_done
