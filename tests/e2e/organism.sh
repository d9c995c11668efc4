#!/usr/bin/env bash
# The model organism end to end: mkorganism builds it; an independent
# float64 forward pass (organism_check.py) finds exactly the planted
# structure; then, once actdump, sinkdetect and sinklevels are built, the
# pipeline on a real R1-distill trace (actdump tokenizes the text itself)
# recovers every planted level exactly (levels start at different layers),
# with as many episodes per level as the tokenizer's --tokens-only output has
# planted tokens, and the norm law within 5% of the planted one and within
# 0.5% of the same fit over the truth's norms (each token has its own).  Both sides read the first NC characters of the first trace's
# response (593 tokens).
. "$(dirname "$0")/../lib.sh"
P=$SS_BIN/mkorganism
TR=$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
NC=1800
if [ ! -x "$P" ]; then t_skip "organism" "mkorganism not built"; t_done; exit 0; fi
org=$TMP/org
t0=$(date +%s)
t_ok "mkorganism builds the default organism" "$P" -o "$org" "$SS_ROOT/examples/organism.yaml"
echo "# mkorganism took $(($(date +%s) - t0)) s"
truth=$org/truth
head -n 1 "$TR" | jq -j --argjson n $NC '.response[:$n]' >"$TMP/text.txt"
if [ -x "$SS_BIN/actdump" ]; then
	t_ok "actdump --tokens-only on the text" sh -c 'actdump --tokens-only -m "$1" "$2" >"$3"' sh "$org" "$TMP/text.txt" "$TMP/tokens.tsv"
else
	t_skip "tokens of the text" "actdump not built yet"
fi
N=$(($(wc -l <"$TMP/tokens.tsv" 2>/dev/null || echo 1) - 1))
if have_py torch && have_py numpy && [ "$N" -gt 0 ]; then
	out=$($PY "$SS_ROOT/tests/e2e/organism_check.py" "$org" "$TMP/tokens.tsv" 2>&1); rc=$?
	printf '%s\n' "$out" | grep '^#'
	while IFS= read -r l; do
		case $l in
		"ok - "*) t_pass "float64 reference: ${l#ok - }" ;;
		"not ok - "*) t_fail "float64 reference: ${l#not ok - }" ;;
		esac
	done <<<"$out"
	t_eq "float64 reference check exits 0" 0 $rc
else
	t_skip "float64 reference check" "no torch/numpy in $PY, or no tokens"
fi

# the pipeline, when its programs are built
if [ -x "$SS_BIN/actdump" ] && [ -x "$SS_BIN/sinkdetect" ] && [ -x "$SS_BIN/sinklevels" ]; then
	t0=$(date +%s)
	t_ok "actdump on the text ($N tokens)" actdump -m "$org" --text "$TMP/text.txt" -o "$TMP/t.h5"
	echo "# actdump on the organism took $(($(date +%s) - t0)) s"
	want=$(awk -F'\t' 'NR>1{printf "%s ", $2}' "$TMP/tokens.tsv")
	got=$(h5dump -d /tokens/ids -y -w 0 "$TMP/t.h5" | awk '/DATA \{/{d=1; next} d && /\}/{d=0} d' | tr ',' ' ' | xargs)
	t_eq "/tokens/ids are the tokenizer's ids" "$(echo $want)" "$got"
	ne=$(h5dump -d /tokens/text -y -w 0 "$TMP/t.h5" | grep -oE '(^|[ {])""([ ,]|$)' | wc -l)
	t_eq "/tokens/text is filled (no empty piece)" 0 "$ne"
	sinkdetect "$TMP/t.h5" >"$TMP/eps.tsv"
	# nuisance (truth/nuisance.tsv): no episode on a nuisance token with the
	# default rule; with --tau-norm 1.8 (below the old default 2) every occurrence of
	# an aligned one (norm 2-3x the median) is reported, and only those
	nu_eps() { awk -F'\t' 'FILENAME ~ /nuisance.tsv$/ { if (FNR > 1) nu[$1] = 1; next } FNR > 1 && $2 > 0 && ($3 in nu)' "$truth/nuisance.tsv" "$1" | wc -l; }
	t_eq "no episode on a nuisance token (heavy, loud, aligned)" 0 "$(nu_eps "$TMP/eps.tsv")"
	sinkdetect --tau-norm 1.8 "$TMP/t.h5" >"$TMP/eps2.tsv"
	want=$(awk -F'\t' 'FILENAME ~ /nuisance.tsv$/ { if (FNR > 1 && $5 == 1) al[$1] = 1; next } FNR > 1 && ($2 in al) { n++ } END { print n + 0 }' "$truth/nuisance.tsv" "$TMP/tokens.tsv")
	t_eq "--tau-norm 1.8 reports the aligned nuisance occurrences ($want in the text)" "$want" "$(nu_eps "$TMP/eps2.tsv")"
	sinklevels "$TMP/eps.tsv" >"$TMP/levels.tsv"
	sinklevels --fit "$TMP/eps.tsv" >"$TMP/fit.tsv"
	sed 's/^/# levels: /' "$TMP/levels.tsv" | cut -c1-160
	sed 's/^/# fit: /' "$TMP/fit.tsv"
	col() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"; }
	want=$(paste <(col "$truth/levels.tsv" l_start) <(col "$truth/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
	got=$(paste <(col "$TMP/levels.tsv" l_start) <(col "$TMP/levels.tsv" lifetime) | sort -k1,1n -k2,2n | tr '\t\n' ', ')
	t_eq "sinklevels finds exactly the planted levels (l_start,lifetime)" "$want" "$got"
	# episodes per level = future sinks among the tokenizer's output: planted
	# tokens after position 0 (truth/levels.tsv lists each level's ids) with
	# a trigger (truth/context.tsv) among the window positions before them,
	# position 0 aside; every occurrence when there is no context
	want=$(awk -F'\t' 'FILENAME ~ /levels.tsv$/ { if (FNR>1) { n=split($11, a, ","); for (i=1;i<=n;i++) lev[a[i]]=$2","$3 } next }
		FILENAME ~ /context.tsv$/ { if (FNR>1) { trig[$1]=1; W=$3; nt++ } next }
		FNR>1 { id[$1]=$2; n=$1 }
		END { for (i=1;i<=n;i++) if (id[i] in lev) { f=!nt; for (j=(i-W<1?1:i-W); j<i; j++) if (id[j] in trig) f=1; if (f) c[lev[id[i]]]++ }
			for (k in c) print k","c[k] }' "$truth/levels.tsv" "$truth/context.tsv" "$TMP/tokens.tsv" | sort -t, -k1,1n -k2,2n | xargs)
	got=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} {print $h["l_start"]","$h["lifetime"]","$h["count"]}' "$TMP/levels.tsv" | sort -t, -k1,1n -k2,2n | xargs)
	t_eq "episodes per level (l_start,lifetime,count) = planted tokens in the text" "$want" "$got"
	# level membership (sinklevels --assign): every secondary episode is
	# assigned the level whose cell is its token's planted one
	sinklevels --assign "$TMP/eps.tsv" >"$TMP/assign.tsv"
	bad=$(awk -F'\t' 'FILENAME == ARGV[1] { if (FNR > 1) { n = split($11, a, ","); for (i = 1; i <= n; i++) cell[a[i]] = $2 ":" $3 } next }
		FILENAME == ARGV[2] { if (FNR > 1) lv[$1] = $2 ":" $3; next }
		FNR > 1 && $5 == "secondary" { n2++; if (!($15 in lv) || lv[$15] != cell[$3]) print $2 ":" $3 ":" $15 }
		END { if (!n2) print "no secondary episode" }' "$truth/levels.tsv" "$TMP/levels.tsv" "$TMP/assign.tsv" | head -5 | xargs)
	t_eq "sinklevels --assign: each episode's level is its token's planted level" "" "$bad"
	# mkorganism --truth states the same: its future occurrences are
	# exactly the secondary episodes (position, l_start, lifetime)
	mkorganism --truth "$org" "$TMP/t.h5" >"$TMP/occ.tsv"
	want=$(awk -F'\t' 'NR>1 && $4==1 {print $2":"$6":"$7}' "$TMP/occ.tsv" | sort | xargs)
	got=$(awk -F'\t' 'NR>1 && $5=="secondary" {print $2":"$6":"$8}' "$TMP/eps.tsv" | sort | xargs)
	t_eq "secondary episodes = the future occurrences of mkorganism --truth" "$want" "$got"
	nf=$(awk -F'\t' 'NR>1 && $4==0' "$TMP/occ.tsv" | wc -l)
	t_ok "the same texts occur also as non-sinks ($nf occurrences)" test "$nf" -gt 0
	slope=$(awk -F'\t' '$1=="ln_norm"{print $3}' "$truth/law.tsv")
	icpt=$(awk -F'\t' '$1=="ln_norm"{print $4}' "$truth/law.tsv")
	fs=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} $h["scope"]=="all" && $h["y"]=="lifetime"{print $h["slope"]}' "$TMP/fit.tsv")
	fi=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} $h["scope"]=="all" && $h["y"]=="lifetime"{print $h["intercept"]}' "$TMP/fit.tsv")
	t_num "norm law slope: planted $slope, fitted ${fs:-none}" "$slope" "${fs:-0}" 0.05
	t_num "norm law intercept: planted $icpt, fitted ${fi:-none}" "$icpt" "${fi:-0}" 0.05
	# a level's tokens have their own planted norms (sinks.spread), so the
	# fit runs over a continuum of norms; lifetimes are whole layers, so the
	# fit over the occurrences is the law only within about the spread: it
	# must equal the same least squares over the truth's norms of the future
	# occurrences (mkorganism --truth) within 0.5%
	read -r ts ti tn < <(awk -F'\t' 'NR>1 && $4==1 { x=log($8); y=$7; n++; sx+=x; sy+=y; sxx+=x*x; sxy+=x*y; d[$8]=1 }
		END { b=(sxy-sx*sy/n)/(sxx-sx*sx/n); k=0; for (v in d) k++; print b, sy/n-b*sx/n, k }' "$TMP/occ.tsv")
	t_ok "the future occurrences carry $tn distinct planted norms (more than one per level)" \
		test "$tn" -gt "$(($(wc -l <"$truth/levels.tsv") - 1))"
	t_num "norm law slope: fitted ${fs:-none}, over the truth's norms $ts" "$ts" "${fs:-0}" 0.005
	t_num "norm law intercept: fitted ${fi:-none}, over the truth's norms $ti" "$ti" "${fi:-0}" 0.005
	# which tokens become sinks (sinkdetect --tokens) against the truth: per
	# planted text, its occurrences in the tokenizer's output, its future
	# occurrences (mkorganism --truth) as sinks and episodes, all of them in
	# its planted level's column (levels numbered as sinklevels does), the
	# rate their ratio; every other text 0 sinks
	sinkdetect --tokens "$TMP/t.h5" >"$TMP/toks.tsv"
	# (occ.tsv: a row per occurrence of a planted token after position 0,
	# by id; truth/tokens.tsv: each id's text, TSV-escaped as the table's)
	want=$(awk -F'\t' 'FILENAME ~ /tokens.tsv$/ { if (FNR > 1) tx[$1] = $2; next }
		FNR > 1 { t = tx[$3]; n[t]++; f[t] += $4; lvl[t] = $5 }
		END { for (t in n) printf "%s|%d|%d|%.4f|%d|L%d\n", t, n[t], f[t], f[t] / n[t], f[t], f[t] ? lvl[t] : 0 }' \
		"$truth/tokens.tsv" "$TMP/occ.tsv" | sort)
	got=$(awk -F'\t' 'FILENAME ~ /tokens.tsv$/ { if (FNR > 1) pl[$2] = 1; next }
		FNR == 1 { for (i = 6; i < NF; i++) c[i] = substr($i, 6); next }
		($1 in pl) { L = 0; for (i = 6; i < NF; i++) if ($i > 0) { if (L || $i != $5) L = -1; else L = c[i] }
			printf "%s|%d|%d|%.4f|%d|L%d\n", $1, $2, $3, $4, $5, L }' "$truth/tokens.tsv" "$TMP/toks.tsv" | sort)
	t_eq "sinkdetect --tokens: per planted text occurrences, sinks, rate, episodes, level = the truth's" "$want" "$got"
	t_eq "sinkdetect --tokens: no other text becomes a sink" "" \
		"$(awk -F'\t' 'FILENAME ~ /tokens.tsv$/ { if (FNR > 1) pl[$2] = 1; next } FNR > 1 && !($1 in pl) && $3 > 0 { print $1 }' "$truth/tokens.tsv" "$TMP/toks.tsv")"
	t_eq "sinkdetect --tokens: level columns as sinklevels numbers its levels" \
		"$(col "$TMP/levels.tsv" level | sed 's/^/level/' | xargs) none" "$(head -n 1 "$TMP/toks.tsv" | cut -f6- | tr '\t' ' ')"
	# levels with different start layers, and level numbers 1-based
	t_ok "the planted levels have several start layers ($(col "$truth/levels.tsv" l_start | sort -u | xargs))" \
		test "$(col "$truth/levels.tsv" l_start | sort -u | wc -l)" -gt 1
	t_eq "sinklevels numbers its levels 1..N" "$(seq 1 $(($(wc -l <"$TMP/levels.tsv") - 1)) | xargs)" "$(col "$TMP/levels.tsv" level | xargs)"
	t_eq "sinklevels --assign: secondary episodes in levels 1..N, primary 0" \
		"0 $(col "$TMP/levels.tsv" level | xargs)" \
		"$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) h[$i]=i; next} {print $h["level"]}' "$TMP/assign.tsv" | sort -un | xargs)"
else
	t_skip "pipeline on the organism" "actdump, sinkdetect or sinklevels not built yet"
fi
t_done
