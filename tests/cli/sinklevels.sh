#!/usr/bin/env bash
# sinklevels against planted levels: 1, 3 and 6 levels (two pairs sharing
# l_start) found with their planted (l_start, lifetime); the norm-law slopes
# within 5% of the planted ones; pipes; and each bad table is one line, exit 1.
. "$(dirname "$0")/../lib.sh"
PLANT=$SS_BIN/sinkplant
cd "$TMP"
# slope_score 0.02, slope_life 4 are the plant's defaults; other slopes below
within5() { awk -v a="$1" -v e="$2" 'BEGIN{d=(a-e)/e; if(d<0)d=-d; exit !(d<=0.05)}'; }
check() { # name levels plant-args...
	local name=$1 want=$2; shift 2
	"$PLANT" "$@" -o $name.h5 --truth $name.truth
	sinkdetect $name.h5 | sinklevels >$name.lv
	t_eq "$name: levels (l_start:lifetime) as planted" "$want" \
		"$(awk -F'\t' 'NR>1{printf "%s%s:%s", n++?",":"", $2, $3}' $name.lv)"
	# a far tail of one level can sit nearer another: allow 1% of the counts
	t_eq "$name: counts per level = planted (within 1%)" "" "$(paste \
		<(awk -F'\t' 'NR>1 && $4=="secondary"{c[$8]++} END{for(k=1;k in c;k++) print c[k]}' $name.truth) \
		<(awk -F'\t' 'NR>1{print $4}' $name.lv) | awk '{d=$1-$2; if(d<0)d=-d; if(d>0.01*$1) print}')"
	# --assign: the episode table as it was, plus each episode's level,
	# which is the planted one (within the 1% above) and adds up to the
	# level table's counts
	sinkdetect $name.h5 >$name.eps
	sinklevels --assign $name.eps >$name.asg
	t_eq "$name: --assign keeps the episode table, adds a level column" "$(cat $name.eps)" "$(cut -f1-14 $name.asg)"
	t_eq "$name: --assign: level column last, 0 for primaries" "level 0" \
		"$(awk -F'\t' 'NR==1{print $15} NR>1 && $5=="primary" {z = z || $15 != 0} END{print z}' $name.asg | xargs)"
	t_eq "$name: --assign: episodes per level = the level table's count" \
		"$(awk -F'\t' 'NR>1{printf "%s:%s ", $1, $4}' $name.lv)" \
		"$(awk -F'\t' 'NR>1 && $15>0{c[$15]++} END{for(k=1;k in c;k++) printf "%s:%s ", k, c[k]}' $name.asg)"
	t_eq "$name: --assign: each episode's level is the planted one (>= 99%)" ok \
		"$(awk -F'\t' 'NR==FNR{if(FNR>1) lv[$1]=$8; next} FNR>1 && $5=="secondary"{n++; ok+=(lv[$2]==$15)} END{print (ok >= 0.99*n) ? "ok" : ok "/" n}' $name.truth $name.asg)"
	sinkdetect $name.h5 | sinklevels --fit >$name.fit
	local ss sl
	ss=$(awk -F'\t' '$1=="all" && $2=="score_start"{print $3}' $name.fit)
	sl=$(awk -F'\t' '$1=="all" && $2=="lifetime"{print $3}' $name.fit)
	if within5 "$ss" "$SS"; then t_pass "$name: score_start slope $ss within 5% of $SS"; else t_fail "$name: score_start slope $ss within 5% of $SS"; fi
	if within5 "$sl" "$SL"; then t_pass "$name: lifetime slope $sl within 5% of $SL"; else t_fail "$name: lifetime slope $sl within 5% of $SL"; fi
}
SS=0.02 SL=4
check one 24:6 --n-layers 40 --tokens 4096 --heads 4 --levels 24:6 --per-level 400 --seed 11
check three 12:4,12:10,18:6 --n-layers 32 --tokens 4096 --heads 4 --levels 12:4,12:10,18:6 --per-level 400 --seed 12
check six 8:3,8:9,14:5,20:4,20:12,26:3 --n-layers 40 --tokens 8192 --heads 4 --levels 8:3,8:9,14:5,20:4,20:12,26:3 --per-level 400 --seed 13
SS=0.05 SL=2.5
check slopes 10:3,10:8,16:5 --n-layers 32 --tokens 4096 --heads 4 --levels 10:3,10:8,16:5 --per-level 400 --slope-score 0.05 --slope-life 2.5 --seed 14
t_eq "header columns" "level l_start lifetime count share mlp_norm_median score_mean" "$(head -1 three.lv | cut -f1-7 | tr '\t' ' ')"
t_eq "fit header" "scope y slope intercept r n" "$(head -1 three.fit | tr '\t' ' ')"
t_eq "fit rows: all and each level, both y" "all:score_start all:lifetime level1:score_start level1:lifetime level2:score_start level2:lifetime level3:score_start level3:lifetime" \
	"$(awk -F'\t' 'NR>1{printf "%s%s:%s", n++?" ":"", $1, $2}' three.fit)"
t_eq "shares sum to 1 with no noise" 1 "$(awk -F'\t' 'NR>1{s+=$5} END{printf "%.3f", s}' three.lv | sed 's/1.000/1/')"
# mlp_norm_median against the truth's values, per level
# (on the one-level file, where assignment is unambiguous)
t_eq "mlp_norm_median = median of the planted norms" \
	"$(awk -F'\t' 'NR>1 && $8==1{print $9}' one.truth | sort -g | awk '{a[NR]=$1} END{m=NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.5g", m}')" \
	"$(awk -F'\t' 'NR>1{printf "%.5g", $6}' one.lv)"

# composition: cat of two tables (repeated header), a file operand, stdin
sinkdetect one.h5 >a.tsv; sinkdetect three.h5 >b.tsv
t_eq "cat two tables | sinklevels = levels of both" "12:4,12:10,18:6,24:6" \
	"$(cat a.tsv b.tsv | sinklevels | awk -F'\t' 'NR>1{printf "%s%s:%s", n++?",":"", $2, $3}')"
t_eq "files as operands = stdin" "$(cat a.tsv b.tsv | sinklevels)" "$(sinklevels a.tsv b.tsv)"
t_eq "cat f.h5 | sinkdetect | sinklevels" "$(cat three.lv)" "$(cat three.h5 | sinkdetect | sinklevels)"
head -1 a.tsv >hdr.tsv
t_eq "header only: empty level table, exit 0" "level l_start lifetime count share mlp_norm_median score_mean l_start_min l_start_max lifetime_min lifetime_max tokens" "$(sinklevels hdr.tsv | tr '\t' ' ')"
printf 'sinklevels:\n  fit: true\n' >cfg.yaml
t_eq "--config YAML" "$(cat three.fit)" "$(sinkdetect three.h5 | sinklevels --config cfg.yaml)"

t_eq "--assign output read back: the same levels" "$(cat three.lv)" "$(sinklevels three.asg)"
t_eq "--assign, then --fit: the same fits" "$(cat three.fit)" "$(sinklevels --fit three.asg)"
t_fails "--assign needs the whole episode table" 1 "^sinklevels: nocol2\.tsv: missing column 'trace'" \
	sh -c 'cut -f5- a.tsv >nocol2.tsv; sinklevels --assign nocol2.tsv'
# membership by mode, not by range: level 1 at (10,4) with 5 episodes at
# (12,6), level 2 at (13,2) with 5 at (11,4).  (11,4) lies within level 1's
# ranges (l_start 10-12, lifetime 4-6) but climbs to level 2's peak: its
# episodes are level 2's
{ printf 'trace\tpos\ttoken\ttext\tkind\tl_start\tl_end\tlifetime\tpeak_norm\tnorm_ratio\tcos0\tscore\tscore_start\tmlp_norm_start\n'
  p=1; for c in 10:4:40 12:6:5 13:2:50 11:4:5; do IFS=: read -r s l n <<<"$c"
	for _ in $(seq "$n"); do printf 'x\t%d\t5\t,\tsecondary\t%s\t%s\t%s\t9\t3\t0.99\t0.1\t0.1\t40\n' $p "$s" $((s + l - 1)) "$l"; p=$((p + 1)); done
  done; } >ov.tsv
t_eq "overlapping ranges: the level table" "1:10:4:45:10:12:4:6 2:13:2:55:11:13:2:4" \
	"$(sinklevels ov.tsv | awk -F'\t' 'NR>1{printf "%s%s:%s:%s:%s:%s:%s:%s:%s", n++?" ":"", $1, $2, $3, $4, $8, $9, $10, $11}')"
t_eq "overlapping ranges: --assign places (11,4) in level 2, whose peak it climbs to" "10:4:1:40 11:4:2:5 12:6:1:5 13:2:2:50" \
	"$(sinklevels --assign ov.tsv | awk -F'\t' 'NR>1{c[$6":"$8":"$15]++} END{for(k in c) print k":"c[k]}' | sort | xargs)"
t_fails "--fit and --assign together" 2 "^sinklevels: --fit and --assign" sinklevels --fit --assign a.tsv

# bad tables
printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\nsecondary\t3\t4\t5\t0.1\n' >short.tsv
printf 'kind\tl_start\tlifetime\tscore_start\tscore\nsecondary\t3\t4\t0.1\t0.1\n' >nocol.tsv
printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\nsecondary\tx\t4\t5\t0.1\t0.1\n' >notint.tsv
printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\ntertiary\t3\t4\t5\t0.1\t0.1\n' >kind.tsv
printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\nsecondary\t0\t4\t5\t0.1\t0.1\n' >zero.tsv
printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\nsecondary\t3\t4\tnan\t0.1\t0.1\n' >nan.tsv
: >empty.tsv
t_fails "malformed row (field count)" 1 "^sinklevels: short\.tsv:2: " sinklevels short.tsv
t_fails "missing column" 1 "^sinklevels: nocol\.tsv: missing column 'mlp_norm_start'" sinklevels nocol.tsv
t_fails "not an integer" 1 "^sinklevels: notint\.tsv:2: column 'l_start': not an integer" sinklevels notint.tsv
t_fails "unknown kind" 1 "^sinklevels: kind\.tsv:2: column 'kind': expected primary or secondary" sinklevels kind.tsv
t_fails "layer 0" 1 "^sinklevels: zero\.tsv:2: l_start 0" sinklevels zero.tsv
t_fails "NaN norm" 1 "^sinklevels: nan\.tsv:2: column 'mlp_norm_start'" sinklevels nan.tsv
t_fails "empty file" 1 "^sinklevels: empty\.tsv: empty input" sinklevels empty.tsv
t_fails "empty stdin" 1 "^sinklevels: <stdin>: empty input" sinklevels
t_fails "good then bad table: no partial output" 1 "^sinklevels: short\.tsv:2: " sinklevels a.tsv short.tsv
t_fails "HDF5 given instead of a table" 1 "^sinklevels: one\.h5:" sinklevels one.h5
t_fails "bad --tol" 2 "^sinklevels: .*tol" sinklevels --tol 0 a.tsv
t_done
