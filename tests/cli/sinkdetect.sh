#!/usr/bin/env bash
# sinkdetect against planted ground truth (sinkplant(1)): every planted
# episode recovered exactly (position, kind, l_start, lifetime), no
# distractor reported; per-layer summary against the planted curves; pipes,
# several inputs, -o; and each bad input is one line and exit 1.
. "$(dirname "$0")/../lib.sh"
PLANT=$SS_BIN/sinkplant
cd "$TMP"
"$PLANT" -o p.h5 --truth truth.tsv --seed 3 || { t_fail "plant runs"; t_done; exit 0; }
key_truth() { awk -F'\t' 'NR>1{print $1, $4, $5, $7}' "$1"; }
key_det() { awk -F'\t' 'NR>1{print $2, $5, $6, $8}' "$1"; }

sinkdetect p.h5 >det.tsv; t_eq "exit 0" 0 $?
t_eq "header columns" "trace pos token text kind l_start l_end lifetime peak_norm norm_ratio cos0 score score_start mlp_norm_start" "$(head -1 det.tsv | tr '\t' ' ')"
t_eq "every planted episode, exactly, and nothing else (3 levels + 2 primaries + 40 distractors)" "" "$(diff <(key_truth truth.tsv) <(key_det det.tsv) | head -5)"
t_eq "trace column is the file name" "p.h5" "$(awk -F'\t' 'NR>1{print $1}' det.tsv | sort -u)"
# score_start and mlp_norm_start as planted (the truth holds the stored f32 values)
bad=$(paste <(awk -F'\t' 'NR>1{print $9, $10}' truth.tsv) <(awk -F'\t' 'NR>1{print $14, $13}' det.tsv) |
	awk '{ if ($1 > 0 && (($1-$3)^2 > (1e-5*$1)^2 || ($2-$4)^2 > (1e-5*$2+1e-7)^2)) n++ } END {print n+0}')
t_eq "mlp_norm_start and score_start match the planted values" 0 "$bad"
# --tokens: per text, its secondary episodes split by level as planted
# (truth.tsv: text and level of each; sinkplant's levels 12:4, 12:10, 18:6
# are numbered as sinklevels numbers them, by l_start then lifetime)
sinkdetect --tokens p.h5 >toks.tsv; t_eq "--tokens: exit 0" 0 $?
t_eq "--tokens: header" "token occurrences sinks rate episodes level1 level2 level3 none" "$(head -1 toks.tsv | tr '\t' ' ')"
want=$(awk -F'\t' 'NR>1 && $4=="secondary" { n[$3]++; c[$3, $8]++ } END { for (t in n) print t, n[t], c[t, 1] + 0, c[t, 2] + 0, c[t, 3] + 0, 0 }' truth.tsv | sort)
got=$(awk -F'\t' 'NR>1 && $3 > 0 { print $1, $3, $6, $7, $8, $9 }' toks.tsv | sort)
t_eq "--tokens: sinks per text and their split by level as planted" "$want" "$got"
t_ok "--tokens: rate = sinks / occurrences, occurrences = the trace's positions after 0" awk -F'\t' -v T="$(h5dump -d /tokens/ids -H p.h5 | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' | grep -o '[0-9]*$')" '
	NR>1 { o += $2; d = $4 - $3 / $2; if (d < 0) d = -d; if (d > 1e-5) bad++ } END { exit !(!bad && o == T - 1) }' toks.tsv
t_fails "--tokens with --summary is a usage error" 2 "choose one table" sinkdetect --tokens --summary p.h5
# no secondary episode at all (a norm threshold no token reaches): no level
# columns and every count 0 (this ran qsort on a NULL list: UBSan)
sinkdetect --tokens --tau-norm 1e30 p.h5 >toks0.tsv; t_eq "--tokens with no episode: exit 0" 0 $?
t_ok "--tokens with no episode: no level columns, no sinks, no episodes" awk -F"\t" 'NR == 1 { hdr = $0 } NR > 1 { if ($3 != 0 || $5 != 0 || $NF != 0) bad++ } END { exit !(NR > 1 && hdr == "token\toccurrences\tsinks\trate\tepisodes\tnone" && !bad) }' toks0.tsv

for n in 1 6; do
	if [ $n = 1 ]; then lv=16:6; else lv=8:3,8:9,14:5,20:4,20:12,26:3; fi
	"$PLANT" --n-layers 40 --tokens 4096 --heads 4 --levels $lv --per-level 150 --seed $n -o p$n.h5 --truth t$n.tsv
	sinkdetect p$n.h5 >d$n.tsv
	t_eq "$n level(s), L=40: exact recovery" "" "$(diff <(key_truth t$n.tsv) <(key_det d$n.tsv) | head -5)"
done

# pipes and several inputs
sinkdetect <p.h5 >stdin.tsv
t_eq "sinkdetect < file.h5: same rows, trace '-'" "$(cut -f2- det.tsv)" "$(cut -f2- stdin.tsv)"
t_eq "stdin trace name is -" "-" "$(awk -F'\t' 'NR>1{print $1}' stdin.tsv | sort -u)"
t_eq "cat f.h5 | sinkdetect - " "$(cut -f2- det.tsv)" "$(cat p.h5 | sinkdetect - | cut -f2-)"
sinkdetect p.h5 p1.h5 >two.tsv
t_eq "two inputs: one header, rows concatenated" "$(( $(wc -l <det.tsv) + $(wc -l <d1.tsv) - 1 ))" "$(wc -l <two.tsv | tr -d ' ')"
t_eq "two inputs: trace column per file" "p.h5 p1.h5" "$(awk -F'\t' 'NR>1 && !s[$1]++{printf "%s%s", n++?" ":"", $1}' two.tsv)"

# --summary: the valley curve and the histogram of l_start, from the plant's formulas
sinkdetect --summary p.h5 >sum.tsv
t_eq "summary header" "trace layer sinks primary secondary primary_score secondary_starts" "$(head -1 sum.tsv | tr '\t' ' ')"
t_eq "summary: one row per layer" 32 "$(awk 'NR>1' sum.tsv | wc -l | tr -d ' ')"
worst=$(awk -F'\t' 'NR>1{z=($2-16)/(32/6); v=0.8-0.5*exp(-z*z); d=$6-v; if(d<0)d=-d; if(d>m)m=d} END{printf "%.1e", m}' sum.tsv)
t_eq "summary: primary score = planted valley 0.8-0.5exp(-((l-L/2)/(L/6))^2) within 1e-5" 1 "$(awk -v w=$worst 'BEGIN{print (w<1e-5)}')"
t_eq "summary: secondary_starts = planted l_start histogram" \
	"$(awk -F'\t' 'NR>1 && $4=="secondary"{c[$5]++} END{for(l=1;l<=32;l++) printf "%d ", c[l]+0}' truth.tsv)" \
	"$(awk -F'\t' 'NR>1{printf "%d ", $7}' sum.tsv)"
t_eq "summary: secondary sinks per layer = planted" \
	"$(awk -F'\t' 'NR>1 && $4=="secondary"{for(l=$5;l<=$6;l++) c[l]++} END{for(l=1;l<=32;l++) printf "%d ", c[l]+0}' truth.tsv)" \
	"$(awk -F'\t' 'NR>1{printf "%d ", $5}' sum.tsv)"

# options
t_eq "--layers 1-11: only the two primaries remain" "0 primary 1 11|5 primary 2 11" \
	"$(sinkdetect -l 1-11 p.h5 | awk -F'\t' 'NR>1{printf "%s%s %s %s %s", n++?"|":"", $2, $5, $6, $7}')"
t_eq "--min-lifetime 7 drops shorter episodes" \
	"$(awk -F'\t' 'NR>1 && $7>=7' truth.tsv | wc -l | tr -d ' ')" "$(sinkdetect --min-lifetime 7 p.h5 | awk 'NR>1' | wc -l | tr -d ' ')"
t_eq "--tau-cos 0.7 admits the cosine-0.8 distractors" 1 "$(sinkdetect -c 0.7 p.h5 | awk 'END{print (NR-1 > '"$(wc -l <truth.tsv)"')}')"
printf 'sinkdetect:\n  min-lifetime: 7\n' >cfg.yaml
t_eq "--config YAML" "$(sinkdetect --min-lifetime 7 p.h5 | md5sum)" "$(sinkdetect --config cfg.yaml p.h5 | md5sum)"

# -o: the trace plus /sinks
sinkdetect -o out.h5 p.h5 >o.tsv
t_eq "-o: table on stdout unchanged" "$(cat det.tsv)" "$(cat o.tsv)"
if have_py h5py; then
	t_eq "-o: /sinks/pos,l_start,lifetime,primary as in the table (read with h5py)" \
		"$(awk -F'\t' 'NR>1{print $2, $6, $8, ($5=="primary")}' det.tsv)" \
		"$($PY -c 'import h5py,sys; s=h5py.File(sys.argv[1])["sinks"]; [print(*r) for r in zip(s["pos"][()], s["l_start"][()], s["lifetime"][()], s["primary"][()])]' out.h5)"
	t_eq "-o: attribute tau_norm recorded" 5.0 "$($PY -c 'import h5py,sys; print(float(h5py.File(sys.argv[1])["sinks"].attrs["tau_norm"]))' out.h5)"
fi
t_eq "-o output is itself a valid trace with the same episodes" "$(cut -f2- det.tsv)" "$(sinkdetect out.h5 | cut -f2-)"
t_eq "-o over an output that has /sinks replaces it" "$(cut -f2- det.tsv)" "$(sinkdetect -o out2.h5 out.h5 | cut -f2-)"

# bad input: one line naming file and field, exit 1, nothing on stdout
head -c 3000 p.h5 >trunc.h5
echo "not hdf5" >text.h5
: >empty.h5
t_fails "truncated file" 1 "^sinkdetect: trunc\.h5:/: .*truncated" sinkdetect trunc.h5
t_fails "non-HDF5 file" 1 "^sinkdetect: text\.h5: not an HDF5 file" sinkdetect text.h5
t_fails "empty file" 1 "^sinkdetect: empty\.h5: empty file" sinkdetect empty.h5
t_fails "empty stdin" 1 "^sinkdetect: <stdin>: empty input" sinkdetect
t_fails_in "truncated image on stdin" 1 "^sinkdetect: <stdin>:/: cannot open HDF5 image" trunc.h5 sinkdetect
t_fails "missing file" 1 "^sinkdetect: nope\.h5: No such file" sinkdetect nope.h5
t_fails "good then bad file: no partial table" 1 "^sinkdetect: text\.h5: " sinkdetect p.h5 text.h5
T_OUT=$TMP/never.h5 t_fails "bad input with -o leaves no output file" 1 "trunc\.h5" sinkdetect -o never.h5 trunc.h5
if have_py h5py; then
	# every bad variant from one h5py start-up: copy p1.h5, then edit in place
	$PY - p1.h5 <<'PY'
import h5py, numpy as np, shutil, sys
edits = {
    "v2.h5": lambda f: f.attrs.__setitem__("sinkscope_format", 2),
    "nofmt.h5": lambda f: f.attrs.__delitem__("sinkscope_format"),
    "shape.h5": lambda f: (f.__delitem__("stats/recv"), f.__setitem__("stats/recv", np.zeros((40, 3, 4096), np.float32))),
    "ntok.h5": lambda f: (f.__delitem__("stats/resid_cos0"), f.__setitem__("stats/resid_cos0", np.zeros((41, 4000), np.float32))),
    "nan.h5": lambda f: f["stats/resid_norm"].__setitem__((7, 123), np.nan),
    "inf.h5": lambda f: f["stats/recv"].__setitem__((2, 1, 5), np.inf),
    "miss.h5": lambda f: f.__delitem__("stats/mlp_out_norm"),
    "strl.h5": lambda f: f.attrs.__setitem__("n_layers", "forty"),
    "txt.h5": lambda f: (f.__delitem__("tokens/text"), f.create_dataset("tokens/text", data=["a"] * 10, dtype=h5py.string_dtype())),
}
for name, ed in edits.items():
    shutil.copy(sys.argv[1], name)
    with h5py.File(name, "r+") as f:
        ed(f)
PY
	t_fails "unknown format version" 1 "^sinkdetect: v2\.h5:/: sinkscope_format 2, this program reads 1$" sinkdetect v2.h5
	t_fails "no format attribute" 1 "^sinkdetect: nofmt\.h5:/: missing attribute 'sinkscope_format'" sinkdetect nofmt.h5
	t_fails "mismatched shape (recv heads)" 1 "^sinkdetect: shape\.h5:/stats/recv: shape 40x3x4096, expected 40x4x4096$" sinkdetect shape.h5
	t_fails "mismatched shape (tokens)" 1 "^sinkdetect: ntok\.h5:/stats/resid_cos0: shape 41x4000, expected 41x4096$" sinkdetect ntok.h5
	t_fails "NaN in stats" 1 "^sinkdetect: nan\.h5:/stats/resid_norm: non-finite value at \[7\]\[123\]$" sinkdetect nan.h5
	t_fails "Inf in recv" 1 "^sinkdetect: inf\.h5:/stats/recv: non-finite value at \[2\]\[1\]\[5\]$" sinkdetect inf.h5
	t_fails "missing dataset" 1 "^sinkdetect: miss\.h5:/stats/mlp_out_norm: missing dataset$" sinkdetect miss.h5
	t_fails "attribute of the wrong type" 1 "^sinkdetect: strl\.h5:/: attribute 'n_layers' is not an integer" sinkdetect strl.h5
	t_fails "token text count differs" 1 "^sinkdetect: txt\.h5:/tokens/text: shape 10, expected 4096" sinkdetect txt.h5
else
	t_skip "bad-HDF5 cases built with h5py" "no h5py"
fi
t_fails "layer range beyond the trace" 1 "^sinkdetect: p\.h5:/: layer range 1-99: outside" sinkdetect -l 1-99 p.h5
t_fails "bad --layers" 2 "^sinkdetect: --layers: expected A or A-B, got 'x'" sinkdetect -l x p.h5
t_fails "bad --tau-cos" 2 "^sinkdetect: --tau-cos 1\.5" sinkdetect --tau-cos 1.5 p.h5
t_fails "-o with two inputs" 2 "^sinkdetect: -o takes exactly one input" sinkdetect -o x.h5 p.h5 p1.h5
t_done
