#!/usr/bin/env bash
# The model organism end to end: mkorganism builds it; an independent
# float64 forward pass (organism_check.py) finds exactly the planted
# structure; then, once actdump, sinkdetect and sinklevels are built, the
# pipeline on a real R1-distill trace recovers every planted level exactly
# and the norm law within 5%.
. "$(dirname "$0")/../lib.sh"
P=$SS_BIN/mkorganism
TR=$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
N=600
if [ ! -x "$P" ]; then t_skip "organism" "mkorganism not built"; t_done; exit 0; fi
org=$TMP/org
t0=$(date +%s)
t_ok "mkorganism builds the default organism" "$P" -o "$org" "$SS_ROOT/examples/organism.yaml"
t_ok "... in under 30 s" test $(($(date +%s) - t0)) -lt 30
truth=$org/truth
if have_py torch && have_py numpy; then
	out=$($PY "$SS_ROOT/tests/e2e/organism_check.py" "$org" "$TR" $N 2>&1); rc=$?
	printf '%s\n' "$out" | grep '^#'
	while IFS= read -r l; do
		case $l in
		"ok - "*) t_pass "float64 reference: ${l#ok - }" ;;
		"not ok - "*) t_fail "float64 reference: ${l#not ok - }" ;;
		esac
	done <<<"$out"
	t_eq "float64 reference check exits 0" 0 $rc
else
	t_skip "float64 reference check" "no torch/numpy in $PY"
fi

# the pipeline, when its programs are built
if [ -x "$SS_BIN/actdump" ] && [ -x "$SS_BIN/sinkdetect" ] && [ -x "$SS_BIN/sinklevels" ] && have_py json; then
	$PY "$SS_ROOT/tests/e2e/organism_check.py" --ids "$org" "$TR" $N >"$TMP/ids.txt"
	t0=$(date +%s)
	t_ok "actdump on $N tokens" actdump -m "$org" --ids "$TMP/ids.txt" -o "$TMP/t.h5"
	t_ok "... in under 20 s" test $(($(date +%s) - t0)) -lt 20
	sinkdetect "$TMP/t.h5" >"$TMP/eps.tsv"
	sinklevels "$TMP/eps.tsv" >"$TMP/levels.tsv"
	sinklevels --fit "$TMP/eps.tsv" >"$TMP/fit.tsv"
	sed 's/^/# levels: /' "$TMP/levels.tsv" | cut -c1-160
	sed 's/^/# fit: /' "$TMP/fit.tsv"
	col() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"; }
	want=$(paste <(col "$truth/levels.tsv" l_start) <(col "$truth/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
	got=$(paste <(col "$TMP/levels.tsv" l_start) <(col "$TMP/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
	t_eq "sinklevels finds exactly the planted levels (l_start,lifetime)" "$want" "$got"
	slope=$(awk -F'\t' '$1=="ln_norm"{print $3}' "$truth/law.tsv")
	icpt=$(awk -F'\t' '$1=="ln_norm"{print $4}' "$truth/law.tsv")
	fs=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} $h["scope"]=="all" && $h["y"]=="lifetime"{print $h["slope"]}' "$TMP/fit.tsv")
	fi=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} $h["scope"]=="all" && $h["y"]=="lifetime"{print $h["intercept"]}' "$TMP/fit.tsv")
	t_num "norm law slope: planted $slope, fitted ${fs:-none}" "$slope" "${fs:-0}" 0.05
	t_num "norm law intercept: planted $icpt, fitted ${fi:-none}" "$icpt" "${fi:-0}" 0.05
else
	t_skip "pipeline on the organism" "actdump, sinkdetect or sinklevels not built yet"
fi
t_done
