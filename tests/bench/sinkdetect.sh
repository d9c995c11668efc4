#!/usr/bin/env bash
# sinkdetect over the stats of a 64-layer model on a 32,768-token trace
# (planted, 40 heads: /stats is 65x32768x2 + 64x32768x2 + 64x40x32768
# floats, about 370 MB), next to `cat` of the same file in the same run.
# sinkdetect reads only /tokens and /stats (never /acts).  Best of 3 runs,
# page cache warm (the first cat warms it).
set -u
: "${SS_BIN:=bin}" "${SS_BUILD:=build}"
d=$SS_BUILD/bench/sinkdetect
mkdir -p "$d"
f=$d/L64_T32768_H40.h5
if [ ! -s "$f" ]; then
	"$SS_BIN/sinkplant" --n-layers 64 --tokens 32768 --heads 40 --levels 20:4,20:12,34:6 --per-level 2000 \
		--distractors 200 -o "$f" || exit 1
fi
stats_mb=$(/usr/bin/python3 -c '
import h5py, sys
f = h5py.File(sys.argv[1]); g = f["stats"]
print("%.1f" % (sum(g[k].size * g[k].dtype.itemsize for k in g) / 1e6))' "$f" 2>/dev/null || echo "")
file_mb=$(awk -v b="$(stat -c %s "$f")" 'BEGIN{printf "%.1f", b/1e6}')
[ -n "$stats_mb" ] || stats_mb=$file_mb
# The machine may be shared: report the best wall time and the best CPU
# time (user + sys) of 3 runs.
best() { # "wall cpu" of "$@"
	local bw= bc=
	for i in 1 2 3; do
		local r
		/usr/bin/time -o "$d/.time" -f '%e %U %S' "$@" >/dev/null 2>&1
		r=$(tail -1 "$d/.time")
		bw=$(awk -v r="$r" -v b="$bw" 'BEGIN{split(r,a," "); t=a[1]; if (b=="" || t<b) b=t; printf "%.3f", b}')
		bc=$(awk -v r="$r" -v b="$bc" 'BEGIN{split(r,a," "); t=a[2]+a[3]; if (b=="" || t<b) b=t; printf "%.3f", b}')
	done
	echo "$bw $bc"
}
cat "$f" >/dev/null
tc=$(best cat "$f")
ts=$(best "$SS_BIN/sinkdetect" "$f")
tsum=$(best "$SS_BIN/sinkdetect" --summary "$f")
tin=$(best sh -c "\"$SS_BIN/sinkdetect\" < \"$f\"")
rows=$("$SS_BIN/sinkdetect" "$f" | wc -l)
printf 'file %s: %s MB, /stats %s MB, %d episode rows\n' "$(basename "$f")" "$file_mb" "$stats_mb" $((rows - 1))
tpipe=$(best sh -c "cat \"$f\" | \"$SS_BIN/sinkdetect\"")
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-36s %8s %8s %10s %10s\n' "what" "wall s" "cpu s" "MB/s wall" "MB/s cpu"
for r in "cat FILE >/dev/null:$tc:$file_mb" "sinkdetect FILE:$ts:$stats_mb" \
	"sinkdetect --summary FILE:$tsum:$stats_mb" "sinkdetect < FILE (stdin, a file):$tin:$stats_mb" \
	"cat FILE | sinkdetect (a pipe):$tpipe:$stats_mb"; do
	IFS=: read -r what t mb <<<"$r"
	read -r w c <<<"$t"
	printf '%-36s %8s %8s %10.0f %10.0f\n' "$what" "$w" "$c" "$(awk -v m="$mb" -v t="$w" 'BEGIN{print m/t}')" \
		"$(awk -v m="$mb" -v t="$c" 'BEGIN{print (t>0 ? m/t : 0)}')"
done
