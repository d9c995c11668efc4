#!/usr/bin/env bash
# tsne: TSV and HDF5 inputs, labels from a planted trace, the output
# formats, determinism across threads, the scan, and each bad input (one
# line, exit 1, no output).
. "$(dirname "$0")/../lib.sh"
if ! have_py h5py; then t_skip "tsne CLI" "no h5py in $PY"; t_done; exit 0; fi
$PY "$SS_ROOT/tests/tools/tsne_trace.py" "$TMP/p.h5" "$TMP/p.tsv"
$PY -c "
import numpy as np, sys
r = np.random.default_rng(3)
y = np.arange(300) % 3
X = r.normal(0, 1, (300, 10)) + 8 * np.eye(3)[y] @ r.normal(0, 1, (3, 10))
print('label\t' + '\t'.join('c%d' % i for i in range(10)))
for l, row in zip(y, X): print('g%d\t' % l + '\t'.join('%.6g' % v for v in row))" >"$TMP/m.tsv"

out=$(tsne -q --iter 300 <"$TMP/m.tsv"); rc=$?
t_eq "TSV matrix on stdin: exit 0" 0 $rc
t_eq "output header" "trace	pos	label	x	y" "$(printf '%s\n' "$out" | head -1)"
t_eq "one row per input row" 301 "$(printf '%s\n' "$out" | wc -l | tr -d ' ')"
t_eq "label column passes through" "100 g0 100 g1 100 g2" "$(printf '%s\n' "$out" | awk 'NR>1{print $3}' | sort | uniq -c | awk '{printf "%s%s %s", (NR>1 ? " " : ""), $1, $2}')"
a=$(tsne -q --iter 300 --threads 1 <"$TMP/m.tsv" | md5sum); b=$(tsne -q --iter 300 --threads 2 <"$TMP/m.tsv" | md5sum)
t_eq "same output with 1 and 2 threads" "$a" "$b"
c=$(tsne -q --iter 300 --threads 2 --init random -s 2 <"$TMP/m.tsv" | md5sum); d=$(tsne -q --iter 300 --threads 1 --init random -s 2 <"$TMP/m.tsv" | md5sum)
t_eq "random init: same output with 1 and 2 threads for one seed" "$c" "$d"
t_match "another seed, another layout" "^[0-9a-f]+ " "$([ "$c" != "$(tsne -q --iter 300 --init random -s 3 <"$TMP/m.tsv" | md5sum)" ] && echo "$c")"
e1=$(tsne -q --iter 300 --search vptree <"$TMP/m.tsv" | md5sum); e2=$(tsne -q --iter 300 --search blas <"$TMP/m.tsv" | md5sum)
t_eq "--search vptree and blas give the same embedding" "$e1" "$e2"
err=$(tsne --iter 300 <"$TMP/m.tsv" 2>&1 >/dev/null)
t_match "summary line reports the exact KL divergence" "^tsne: 300 points, 10 dims, KL divergence [0-9.]+ \(exact\)" "$err"
# planted clusters: each point's nearest neighbour in the embedding is of its cluster
nn=$(printf '%s\n' "$out" | awk 'NR>1{n++; l[n]=$3; x[n]=$4; y[n]=$5}
 END{ok=0; for (i=1;i<=n;i++) {bd=1e300; b=0; for (j=1;j<=n;j++) if (j!=i) {d=(x[i]-x[j])^2+(y[i]-y[j])^2; if (d<bd) {bd=d; b=j}}; ok+=(l[b]==l[i])}; printf "%.3f", ok/n}')
t_match "planted clusters: 1-NN label agreement in 2-D $nn >= 0.98" '^ok$' "$(awk -v a="$nn" 'BEGIN{print (a + 0 >= 0.98) ? "ok" : "bad"}')"

# HDF5 inputs and labels
out=$(tsne -q --iter 300 --layer 2 --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid")
t_eq "labels from sinkdetect TSV and token classes (counts)" "160 control 79 future 138 other 23 twin" \
	"$(printf '%s\n' "$out" | awk 'NR>1{print $3}' | sort | uniq -c | awk '{printf "%s%s %s", (NR>1 ? " " : ""), $1, $2}')"
t_eq "future rows are the planted ones (every 5th position)" "" \
	"$(printf '%s\n' "$out" | awk '$3=="future" && $2%5 {print}')"
t_eq "twins: the futures' token elsewhere (odd positions 3 mod 14), never a sink" "$(seq 3 14 399 | awk '$1%5' | xargs)" \
	"$(printf '%s\n' "$out" | awk '$3=="twin"{print $2}' | xargs)"
t_eq "--only future,twin" "79 future 23 twin" "$(tsne -q --iter 300 --layer 2 --labels "$TMP/p.tsv" --only future,twin "$TMP/p.h5:/acts/resid" | awk 'NR>1{print $3}' | sort | uniq -c | awk '{printf "%s%s %s", (NR>1 ? " " : ""), $1, $2}')"
t_eq "--only future,control" 239 "$(tsne -q --iter 300 --layer 2 --labels "$TMP/p.tsv" --only future,control "$TMP/p.h5:/acts/resid" | tail -n +2 | wc -l | tr -d ' ')"
t_eq "--min-lifetime 3 drops the lifetime-2 futures" 0 "$(tsne -q --iter 250 --layer 2 --labels "$TMP/p.tsv" --min-lifetime 3 "$TMP/p.h5:/acts/resid" | awk '$3=="future"' | wc -l | tr -d ' ')"
# --level takes membership from the level column (sinklevels --assign):
# level 1 for the futures at positions divisible by 10, 2 for the others
awk -F'\t' -v OFS='\t' 'NR==1{print $0, "level"; next} {print $0, ($5=="primary" ? 0 : ($2 % 10 ? 2 : 1))}' "$TMP/p.tsv" >"$TMP/pa.tsv"
n1=$(awk -F'\t' '$5=="secondary" && $9==1' "$TMP/pa.tsv" | wc -l | tr -d ' ')
t_eq "--level 1: the futures are the rows of level 1 ($n1)" "$(awk -F'\t' '$5=="secondary" && $9==1 {print $2}' "$TMP/pa.tsv" | xargs)" \
	"$(tsne -q --iter 250 --layer 2 --labels "$TMP/pa.tsv" --level 1 "$TMP/p.h5:/acts/resid" | awk '$3=="future"{print $2}' | xargs)"
t_eq "--level 2 keeps the other $((79 - n1))" $((79 - n1)) "$(tsne -q --iter 250 --layer 2 --labels "$TMP/pa.tsv" --level 2 "$TMP/p.h5:/acts/resid" | awk '$3=="future"' | wc -l | tr -d ' ')"
t_eq "--level 1,2 keeps all 79" 79 "$(tsne -q --iter 250 --layer 2 --labels "$TMP/pa.tsv" --level 1,2 "$TMP/p.h5:/acts/resid" | awk '$3=="future"' | wc -l | tr -d ' ')"
t_fails "--level K of no episode" 1 'pa.tsv: no episode of level 7$' tsne --layer 2 --labels "$TMP/pa.tsv" --level 7 "$TMP/p.h5:/acts/resid"
t_fails "--level without a level column" 1 "p.tsv: missing column 'level'" tsne --layer 2 --labels "$TMP/p.tsv" --level 1 "$TMP/p.h5:/acts/resid"
t_fails "--level 0 is a usage error" 2 "--level '0'" tsne --layer 2 --labels "$TMP/pa.tsv" --level 0 "$TMP/p.h5:/acts/resid"
t_eq "at layer 3 (= l_start) no row is a future sink" 0 "$(tsne -q --iter 250 --layer 3 --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid" | awk '$3=="future"' | wc -l | tr -d ' ')"
t_eq "two traces: rows (trace, pos)" 801 "$(cp "$TMP/p.h5" "$TMP/q.h5"; tsne -q --iter 250 --layer 1 "$TMP/p.h5:/acts/resid" "$TMP/q.h5:/acts/resid" | wc -l | tr -d ' ')"
t_eq "plain 2-D dataset FILE.h5:/plain/matrix" 401 "$(tsne -q --iter 250 "$TMP/p.h5:/plain/matrix" | wc -l | tr -d ' ')"
tsne -q --iter 250 --layer 2 --labels "$TMP/p.tsv" -o "$TMP/e.h5" "$TMP/p.h5:/acts/resid" >"$TMP/o.txt"; rc=$?
t_eq "-o FILE.h5: exit 0, nothing on stdout" "0 0" "$rc $(wc -c <"$TMP/o.txt" | tr -d ' ')"
t_eq "-o FILE.h5 read by h5py" "(400, 2) 400 400 160 True" "$($PY -c "
import h5py, sys
f = h5py.File(sys.argv[1])
lab = [x.decode() if isinstance(x, bytes) else x for x in f['tsne/label'][()]]
print(f['tsne/xy'].shape, len(f['tsne/pos']), len(f['tsne/trace']), lab.count('control'), f['tsne/xy'].attrs['kl_divergence'] > 0)" "$TMP/e.h5" 2>&1)"

# the scan: layer 1 inseparable, layer 2 separable (planted), 3-4 no futures
scan=$(tsne --scan all --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid" 2>"$TMP/scan.err")
t_eq "scan: header" "layer n_future n_twin n_control same_acc same_lo same_hi same_chance same_chance_hi same_silhouette same_leaves ctrl_acc ctrl_lo ctrl_hi ctrl_chance ctrl_chance_hi ctrl_silhouette ctrl_leaves decision" \
	"$(printf '%s\n' "$scan" | head -1 | tr '\t' ' ')"
t_eq "scan: one row per layer" "1 2 3 4" "$(printf '%s\n' "$scan" | tail -n +2 | cut -f1 | tr '\n' ' ' | sed 's/ $//')"
t_eq "scan: counts per layer (futures before l_start 3 only)" "79 23 160,79 23 160,0 23 160,0 23 160" \
	"$(printf '%s\n' "$scan" | awk -F'\t' 'NR>1{printf "%s%s %s %s", (NR>2?",":""), $2, $3, $4}')"
t_eq "scan: layer 1 at chance in both comparisons, layer 2 leaves it in both" "0 0 1 1" \
	"$(printf '%s\n' "$scan" | awk -F'\t' '$1==1{a=$11" "$18} $1==2{b=$11" "$18} END{print a, b}')"
t_eq "scan: the decision layer is 2 (column and stderr)" "2 decision layer 2" \
	"$(printf '%s\n' "$scan" | awk -F'\t' '$19==1{print $1}') $(grep -o 'decision layer [0-9]*' "$TMP/scan.err")"
# chance of the k-NN vote is not 1/2 with 79 futures against 23 twins: the
# majority class wins most votes when labels carry nothing; the interval is
# Wilson's over the 102 rows
t_match "scan: chance <= its 95th percentile < the interval's low end at layer 2; acc inside the interval" "^ok$" \
	"$(printf '%s\n' "$scan" | awk -F'\t' '$1==2{print ($8<=$9 && $9<$6 && $6<=$5 && $5<=$7 && $8>0.6) ? "ok" : "bad " $0}')"
t_match "scan: Wilson interval by hand (n = 102 rows at layer 2)" "^ok$" \
	"$(printf '%s\n' "$scan" | awk -F'\t' '$1==2{n=$2+$3; p=$5; z=1.959964; c=p+z*z/(2*n); w=z*sqrt(p*(1-p)/n+z*z/(4*n*n)); lo=(c-w)/(1+z*z/n); hi=(c+w)/(1+z*z/n)
	print (lo-$6<1e-5 && $6-lo<1e-5 && hi-$7<1e-5 && $7-hi<1e-5) ? "ok" : "bad " lo " " hi " " $6 " " $7}')"
t_match "scan: layers without futures are NA" "^NA NA$" "$(printf '%s\n' "$scan" | awk -F'\t' '$1==4{print $5, $12}')"
a=$(tsne -q --scan all --labels "$TMP/p.tsv" -s 5 "$TMP/p.h5:/acts/resid" | cut -f8,9)
t_match "scan: another seed, other permutations (chance columns differ)" "^ok$" "$([ "$a" != "$(printf '%s\n' "$scan" | cut -f8,9)" ] && echo ok)"
t_eq "scan of layer 1 alone (futures and twins from one distribution): no decision layer" "no decision layer" \
	"$(tsne --scan 1 --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid" 2>&1 >/dev/null | grep -o 'no decision layer')"
t_fails "--only not with --scan" 2 "^tsne: --only: not with --scan" tsne --scan all --only future --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid"
t_fails "--permutations 0" 2 "^tsne: --permutations: must be 1 to 100000$" tsne --scan all --permutations 0 --labels "$TMP/p.tsv" "$TMP/p.h5:/acts/resid"

# bad input: one line, exit 1, no output
printf 'a\tb\n1\t2\nnan\t3\n' >"$TMP/nan.tsv"
t_fails_in "NaN on stdin" 1 '^tsne: <stdin>:3: column .a.: not a finite number: .nan.$' "$TMP/nan.tsv" tsne
# a first row holding inf (or 1e999) is data, not a header (it was taken
# for one and dropped without a word)
for v in inf -inf 1e999; do
	printf '0\t1\t%s\n1\t2\t3\n' "$v" >"$TMP/inf.tsv"
	t_fails_in "$v in the first row" 1 "^tsne: <stdin>:1: column 3: not a finite number: '$v'\$" "$TMP/inf.tsv" tsne
done
$PY -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f: f['acts/resid'][2, 17, 4] = np.nan" "$TMP/q.h5"
t_fails "NaN row in /acts" 1 '^tsne: .*q.h5:/acts/resid: layer 2, pos 17: non-finite value in column 5$' tsne --layer 2 "$TMP/q.h5:/acts/resid"
head -51 "$TMP/m.tsv" >"$TMP/small.tsv"
t_fails_in "N too small for the perplexity" 1 '^tsne: <stdin>: 50 points: too few for perplexity 30 \(need more than 90\)$' "$TMP/small.tsv" tsne
t_fails "missing dataset" 1 '^tsne: .*p.h5:/acts/nope: no such dataset$' tsne --layer 1 "$TMP/p.h5:/acts/nope"
t_fails "missing layer" 1 'layer 9' tsne --layer 9 "$TMP/p.h5:/acts/resid"
t_fails "missing file" 1 '^tsne: .*nofile.h5' tsne --layer 1 "$TMP/nofile.h5:/acts/resid"
awk -F'\t' 'NR==3{$2=812}1' OFS='\t' "$TMP/p.tsv" >"$TMP/badpos.tsv"
t_fails "labels do not match the vectors (pos beyond the trace)" 1 '^tsne: .*badpos.tsv:3: pos 812 outside trace .p.h5. \(400 tokens\): labels do not match the vectors$' \
	tsne --layer 2 --labels "$TMP/badpos.tsv" "$TMP/p.h5:/acts/resid"
awk -F'\t' 'NR==3{$3=999}1' OFS='\t' "$TMP/p.tsv" >"$TMP/badtok.tsv"
t_fails "labels do not match the vectors (token id differs)" 1 'badtok.tsv:3: token 999 at pos 5, but trace .p.h5. has 220 there' \
	tsne --layer 2 --labels "$TMP/badtok.tsv" "$TMP/p.h5:/acts/resid"
sed 's/^p\.h5/other.h5/' "$TMP/p.tsv" >"$TMP/other.tsv"
t_fails "labels naming no input trace" 1 'other.tsv: no episode names an input trace' \
	tsne --layer 2 --labels "$TMP/other.tsv" "$TMP/p.h5:/acts/resid"
T_OUT="$TMP/never.h5" t_fails "-o: no partial output on failure" 1 'non-finite' tsne -o "$TMP/never.h5" --layer 2 "$TMP/q.h5:/acts/resid"
t_fails "layer required for /acts" 2 '^tsne: .*--layer is required' tsne "$TMP/p.h5:/acts/resid"
t_fails "--only with an unknown label" 2 "unknown label 'sink'" tsne --only sink
t_done
