#!/usr/bin/env bash
# kvevict on the model organism, where the planted secondary sinks take
# attention from layer 10 to 21 (episodes start at 9; layer l reads
# h[l-1]) and hold much of it (0.45-0.73 of the mass, from actdump's recv:
# mean over queries and heads of the probabilities on the episode table's
# secondary sinks): at a budget of 256 keys (of 593), what `streaming` loses
# is the mass of the sinks that left its window (at least 8% of the sinks'
# mass in each of those layers, and nothing else: at most 1e-9 on the rest
# and nothing on the primary sink), `sinks` loses none of it (at most 1e-9:
# the rounding of double sums), with the episode table and with the sink
# rule applied online.
. "$(dirname "$0")/../lib.sh"
for p in mkorganism actdump sinkdetect kvevict; do
	[ -x "$SS_BIN/$p" ] || { t_skip "kvevict on the organism" "$p not built"; t_done; exit 0; }
done
have_py h5py && have_py numpy || { t_skip "kvevict on the organism" "h5py or numpy absent for $PY"; t_done; exit 0; }
org=$TMP/org
t_ok "mkorganism" mkorganism -o "$org" "$SS_ROOT/examples/organism.yaml"
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" | jq -j '.response[:1800]' >"$TMP/text.txt"
t_ok "actdump and sinkdetect on the trace" sh -c 'actdump -m "$1" -t 2 "$2" -o "$3/t.h5" && sinkdetect "$3/t.h5" >"$3/eps.tsv"' \
	sh "$org" "$TMP/text.txt" "$TMP"
B=256
t_ok "kvevict --episodes" kvevict -m "$org" -t 2 --policies streaming,sinks --budgets $B --episodes "$TMP/eps.tsv" \
	--per-layer "$TMP/lay.tsv" -o "$TMP/tot.tsv" "$TMP/text.txt"
t_ok "kvevict, the rule online" kvevict -m "$org" -t 2 --policies streaming,sinks --budgets $B \
	--per-layer "$TMP/lay-online.tsv" -o /dev/null "$TMP/text.txt"
sed 's/^/# /' "$TMP/tot.tsv"
out=$($PY - "$TMP/t.h5" "$TMP/eps.tsv" "$TMP/lay.tsv" "$TMP/lay-online.tsv" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); recv = f["stats/recv"][()]        # [L, H, T]
L, H, T = recv.shape
def rows(p):
    with open(p) as fh:
        hd = fh.readline().rstrip("\n").split("\t")
        return [dict(zip(hd, l.rstrip("\n").split("\t"))) for l in fh]
eps = [e for e in rows(sys.argv[2]) if e["kind"] == "secondary"]
held = np.zeros(L + 1)
for l in range(1, L + 1):
    js = sorted({int(e["pos"]) for e in eps if int(e["l_start"]) <= l - 1 <= int(e["l_end"])})
    held[l] = sum(recv[l - 1, :, j].sum() * (T - j) for j in js) / (T * H)
print("# layer  held by secondary sinks  lost: streaming  sinks  (table; online)")
for name, path in (("table", sys.argv[3]), ("online", sys.argv[4])):
    lay = {(r["policy"], int(r["layer"])): r for r in rows(path)}
    bad_s, bad_k, bad_p = [], [], []
    for l in range(1, L + 1):
        s, k = lay[("streaming", l)], lay[("sinks", l)]
        ls, lk = float(s["lost_secondary"]), float(k["lost_secondary"])
        if name == "table":
            print("# %5d  %22.4f  %16.4f  %.2g" % (l, held[l], ls, lk))
        if 10 <= l <= 21 and not (held[l] > 0.3 and ls >= 0.08 * held[l] and float(s["lost_rest"]) <= 1e-9):
            bad_s.append("layer %d: held %.4g, streaming lost %.4g" % (l, held[l], ls))
        if lk > 1e-9:
            bad_k.append("layer %d: sinks lost %.3g" % (l, lk))
        if float(s["lost_primary"]) > 0 or float(k["lost_primary"]) > 0:
            bad_p.append("layer %d" % l)
    print(("not ok" if bad_s else "ok") + "\t%s: streaming loses >= 8%% of the secondary sinks' mass in each of layers 10-21, and only theirs\t%s" % (name, "; ".join(bad_s[:2])))
    print(("not ok" if bad_k else "ok") + "\t%s: sinks loses none of it (<= 1e-9)\t%s" % (name, "; ".join(bad_k[:2])))
    print(("not ok" if bad_p else "ok") + "\t%s: neither loses mass on the primary sink\t%s" % (name, "; ".join(bad_p[:2])))
PYEOF
)
printf '%s\n' "$out" | grep '^#'
while IFS=$'\t' read -r st what det; do
	case $st in ok) t_pass "$what" ;; "not ok") t_fail "$what" "$det" ;; esac
done <<<"$(printf '%s\n' "$out" | grep -v '^#')"
t_done
