#!/usr/bin/env bash
# One meaning per option name, suite-wide (#16 §5, sinkscope(7) OPTIONS):
# no long option is a count (N, K) in one program and a list or range in
# another; --layers is a layer list or range everywhere (sinkplant's count
# is --n-layers) and --components a list of components (pcaprobe's count is
# --n-components); the old spellings of the counts are usage errors (exit
# 2, before any input is read) naming the new option, on the command line
# and as config keys (exit 1, naming the file and line); the new names take
# the count they name.
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
for p in "$SS_BIN"/*; do
	[ -x "$p" ] || continue
	"$p" --help | awk -v n="$(basename "$p")" '/^  (-[a-zA-Z], |    )--[a-z]/ {
		sub(/^  (-[a-zA-Z], |    )/, ""); print n, $1, ($2 ~ /^[A-Z]/ ? $2 : "-")}' >>all
done
t_ok "options read from every --help" test "$(wc -l <all)" -ge 60
# a count: N or K; a list or range: LIST, A-B or a comma-separated form
t_eq "no option name is a count in one program and a list in another" "" \
	"$(awk '$3 == "N" || $3 == "K" {c[$2] = c[$2] " " $1}
		$3 ~ /LIST|^A-B$|,/ {l[$2] = l[$2] " " $1}
		END {for (o in c) if (o in l) print o, "count in" c[o], "list in" l[o]}' all)"
t_eq "--layers is a list or range in every program that has it" "" \
	"$(awk '$2 == "--layers" && $3 !~ /LIST|^A-B$/ {print $1, $3}' all)"
t_eq "--components is a list in every program that has it" "" \
	"$(awk '$2 == "--components" && $3 != "LIST" {print $1, $3}' all)"
t_eq "the counts are --n-layers (sinkplant) and --n-components (pcaprobe)" \
	"pcaprobe --n-components K|sinkplant --n-layers N" \
	"$(grep -E -- ' --n-(layers|components) ' all | sort | paste -sd'|')"

# the old spellings: usage errors naming the new option (inputs absent: a
# status 1 would mean they were opened)
t_fails "pcaprobe --components 3" 2 "^pcaprobe: --components: renamed --n-components " \
	pcaprobe -m nomodel --components 3 no.h5 no.tsv
t_fails "pcaprobe --components=3" 2 "^pcaprobe: --components: renamed --n-components " \
	pcaprobe -m nomodel --components=3 no.h5 no.tsv
t_fails "sinkplant --layers 12" 2 "^sinkplant: --layers: renamed --n-layers " sinkplant --layers 12 -o old.h5
t_ok "sinkplant --layers wrote nothing" test ! -e old.h5
printf 'pcaprobe:\n  components: 3\n' >pc.yaml
t_fails "pcaprobe config key components" 1 "^pcaprobe: pc.yaml:2: pcaprobe: components: renamed --n-components " \
	pcaprobe --config pc.yaml -m nomodel no.h5 no.tsv
printf 'sinkplant:\n  layers: 12\n' >sp.yaml
t_fails "sinkplant config key layers" 1 "^sinkplant: sp.yaml:2: sinkplant: layers: renamed --n-layers " \
	sinkplant --config sp.yaml -o old.h5
t_fails "pcaprobe --n-components 0" 2 "^pcaprobe: --n-components: 0 must be at least 1$" \
	pcaprobe -m nomodel --n-components 0 no.h5 no.tsv
t_fails "sinkplant --n-layers 1" 2 "^sinkplant: --n-layers: 1, expected 2-4096$" sinkplant --n-layers 1 -o old.h5

# the new names take their count: a planted trace of 7 layers has 7
# attention layers and 8 residual rows (embeddings + 7)
sinkplant --n-layers 7 --tokens 64 --heads 2 --levels 3:2 --per-level 3 --distractors 1 -o p.h5 2>/dev/null
t_eq "sinkplant --n-layers 7: /stats/mlp_out_norm is 7 x 64, resid_norm 8 x 64" "{7, 64} {8, 64}" \
	"$(h5ls -r p.h5 | awk '$1 == "/stats/mlp_out_norm" || $1 == "/stats/resid_norm" {print $3, $4}' | paste -sd' ')"
printf 'sinkplant:\n  n-layers: 9\n' >sp9.yaml
sinkplant --config sp9.yaml --tokens 64 --heads 2 --levels 3:2 --per-level 3 --distractors 1 -o p9.h5 2>/dev/null
t_eq "sinkplant config n-layers: 9 layers" "{9, 64}" \
	"$(h5ls -r p9.h5 | awk '$1 == "/stats/mlp_out_norm" {print $3, $4}')"
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" | jq -j '.response[:600]' >text.txt
actdump -m org -t 2 --text text.txt --acts resid,mlp_in -o t.h5 2>/dev/null
sinkdetect t.h5 >eps.tsv 2>/dev/null
LS=$(awk -F'\t' 'NR == 2 { print $2 }' org/truth/decision.tsv)
pcaprobe -m org -t 2 --layer "$LS" --n-components 3 --vectors t.h5 eps.tsv >v3.tsv 2>/dev/null
t_eq "pcaprobe --n-components 3 --vectors: components 1 2 3" "1 2 3" \
	"$(awk -F'\t' 'NR > 1 {print $3}' v3.tsv | paste -sd' ')"
t_done
