#!/usr/bin/env bash
# The decision layer on the model organism (mkorganism(1)), whose answer is
# planted: truth/decision.tsv's l_decision, and per occurrence of a planted
# token whether it becomes a sink (mkorganism --truth: future 1, or 0 when
# no trigger sits in its context window).
#   - tsne --scan from layer 1 to l_start - 1: the futures and the twins
#     (the same tokens that do not become sinks) are the truth's; the
#     decision layer it calls is the planted one, and swapexp's (the
#     earliest mlp_out swap that prevents the sink) is the same;
#   - the futures moved onto their own twins (a relabelling within each
#     token, so the labels no longer follow the context): no decision layer;
#   - the silhouette of futures against twins equals sklearn's
#     silhouette_score on the same rows (layer 1 and the decision layer).
. "$(dirname "$0")/../lib.sh"
for p in mkorganism actdump sinkdetect swapexp tsne; do
	if [ ! -x "$SS_BIN/$p" ]; then t_skip "organism decision layer" "$p not built yet"; t_done; exit 0; fi
done
if ! have_py sklearn || ! have_py h5py; then t_skip "organism decision layer" "no sklearn/h5py in $PY"; t_done; exit 0; fi
cd "$TMP" || exit 1
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null || { t_fail "mkorganism"; t_done; exit 0; }
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" |
	jq -j '.response[:1800]' >text.txt
actdump -m org --text text.txt --acts resid,mlp_in -o t.h5
sinkdetect t.h5 >eps.tsv
mkorganism --truth org t.h5 >occ.tsv
LD=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} NR==2{print $c["l_decision"]}' org/truth/decision.tsv)
LS=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} NR==2{print $c["l_start"]}' org/truth/decision.tsv)
t_match "truth: decision layer $LD before l_start $LS" "^ok$" "$([ "${LD:-0}" -ge 1 ] && [ "$LD" -lt "${LS:-0}" ] && echo ok)"
# per occurrence: pos token future l_start
awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} {print $c["pos"], $c["token"], $c["future"], $c["l_start"]}' occ.tsv >occ.txt

scan=$(tsne --scan "1-$((LS - 1))" --labels eps.tsv t.h5:/acts/resid 2>scan.err) || t_fail "tsne --scan" "$(cat scan.err)"
printf '%s\n' "$scan" >scan.tsv
col() { awk -F'\t' -v c="$1" 'NR==1{for(i=1;i<=NF;i++) if ($i==c) n=i; next} {print $1, $n}' scan.tsv; }
# the truth's counts: futures start after the layer; twins are the
# occurrences that do not become sinks, of tokens that do elsewhere
want=$(for l in $(seq 1 $((LS - 1))); do awk -v l="$l" '$3==1 && $4>l {f++} $3==1 {tok[$2]=1} {n[NR]=$2; fu[NR]=$3}
	END {for (i in n) if (!fu[i] && (n[i] in tok)) t++; print l, f + 0, t + 0}' occ.txt; done)
t_eq "futures and twins per layer are the truth's" "$want" "$(paste -d' ' <(col n_future) <(col n_twin | cut -d' ' -f2))"
got=$(awk -F'\t' 'NR>1 && $NF==1{print $1}' scan.tsv)
t_eq "tsne --scan calls the planted decision layer $LD" "$LD" "$got"
t_match "its statement on stderr" "decision layer $LD: from it on" "$(cat scan.err)"
# before it, at chance (some layer's measure inside the null band); from it
# on, the interval's low end above the band
t_eq "same-text separability leaves chance at $LD and stays out" "$(seq "$LD" $((LS - 1)) | xargs)" \
	"$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} $c["same_leaves"]==1{print $1}' scan.tsv | awk -v d="$LD" '$1>=d' | xargs)"
t_eq "layer $((LD - 1)) at chance (leaves 0)" 0 "$(awk -F'\t' -v l=$((LD - 1)) 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} $1==l{print $c["same_leaves"]}' scan.tsv)"
# the other non-informative tokens differ by identity at every layer
t_eq "futures against other non-informative tokens: separable at every layer" "$(seq 1 $((LS - 1)) | xargs)" \
	"$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} $c["ctrl_leaves"]==1{print $1}' scan.tsv | xargs)"

t_ok "swapexp on the organism" swapexp -m org t.h5 eps.tsv -w "$LS" --summary -o sum.tsv
sw=$(awk -F'\t' '$1!="all" && $4=="mlp_out" && $10==1 {print $6}' sum.tsv | sort -u)
t_eq "swapexp's decision layer (earliest preventing mlp_out swap) equals tsne --scan's" "$got" "$sw"

# the futures moved onto twins: each secondary episode's position becomes
# another occurrence of its token that the truth says does not become a
# sink (seeded choice, without replacement); the labels then say nothing of
# the context
$PY - eps.tsv occ.txt >shuf.tsv <<'EOF'
import sys, random
eps, occ = sys.argv[1], sys.argv[2]
rng = random.Random(7)
free = {}
for line in open(occ):
    pos, tok, fut, _ = line.split()
    if fut == "0":
        free.setdefault(tok, []).append(pos)
for v in free.values():
    rng.shuffle(v)
rows = [l.rstrip("\n").split("\t") for l in open(eps)]
h = rows[0]; ip, it, ik = h.index("pos"), h.index("token"), h.index("kind")
print("\t".join(h))
for r in rows[1:]:
    if r[ik] == "secondary":
        if not free.get(r[it]):
            continue
        r[ip] = free[r[it]].pop()
    print("\t".join(r))
EOF
nshuf=$(awk -F'\t' '$5=="secondary"' shuf.tsv | wc -l | tr -d ' ')
sh=$(tsne --scan "1-$((LS - 1))" --labels shuf.tsv t.h5:/acts/resid 2>shuf.err) || t_fail "tsne --scan on moved labels" "$(cat shuf.err)"
t_eq "futures moved onto their twins ($nshuf episodes): no decision layer" "no decision layer" "$(grep -o 'no decision layer' shuf.err)"
t_eq "... and no row marked" "" "$(printf '%s\n' "$sh" | awk -F'\t' 'NR>1 && $NF==1')"

# the silhouette against sklearn, on the truth's rows
for l in 1 "$LD"; do
	ref=$($PY - t.h5 occ.txt "$l" <<'EOF'
import sys, h5py, numpy as np
from sklearn.metrics import silhouette_score
f = h5py.File(sys.argv[1], "r"); l = int(sys.argv[3])
ds = f["acts/resid"]; X = ds[list(ds.attrs["layers"]).index(l)].astype(np.float64)
occ = [line.split() for line in open(sys.argv[2])]
fut_tok = {t for _, t, fu, _ in occ if fu == "1"}
rows, lab = [], []
for pos, tok, fu, ls in occ:
    if fu == "1" and int(ls) > l: rows.append(int(pos)); lab.append(0)
    elif fu == "0" and tok in fut_tok: rows.append(int(pos)); lab.append(1)
print("%.6g" % silhouette_score(X[rows], lab))
EOF
)
	s=$(awk -F'\t' -v l="$l" 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} $1==l{print $c["same_silhouette"]}' scan.tsv)
	t_num "layer $l: silhouette $s equals sklearn's $ref" "$ref" "$s" 1e-4
done
t_done
