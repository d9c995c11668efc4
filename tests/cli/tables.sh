#!/usr/bin/env bash
# Tables any reader parses (#16 §6): every TSV a program writes reads back
# cell for cell the same with awk -F'\t', with Python's csv module in tab
# mode with its default quoting, and with pandas' read_csv(sep='\t')
# defaults, on texts full of quotes, tabs, newlines and backslashes (token
# texts and a trace name with them): text cells escape \t \n \r \\ and "
# (sinkscope(7) TABLES), and the episode reader reads the escapes back.
. "$(dirname "$0")/../lib.sh"
cd "$TMP"
PY3=/usr/bin/python3
if ! $PY3 -c 'import pandas' 2>/dev/null; then t_skip "tables" "no python3-pandas for /usr/bin/python3"; t_done; exit 0; fi
# an organism whose planted sinks are quotes, tabs and quote pairs
sed -e "s|tokenizer: .*|tokenizer: $SS_ROOT/tests/data/tokenizers/qwen3/tokenizer.json|" \
	-e 's|{lifetime: 2, start_layer: 9, tokens: .*|{lifetime: 2, start_layer: 9, tokens: [",\\"", "\\""]}|' \
	-e 's|{lifetime: 5, start_layer: 9, tokens: .*|{lifetime: 5, start_layer: 9, tokens: ["\\t", " \\""]}|' \
	-e 's|{lifetime: 5, start_layer: 12, tokens: .*|{lifetime: 5, start_layer: 12, tokens: ["\\".", "\\\\"]}|' \
	"$SS_ROOT/examples/organism.yaml" >spec.yaml
# the three levels above must have been replaced (the default spec's lines)
[ "$(grep -c 'tokens: \[",\\"", \|tokens: \["\\t", \|tokens: \["\\"\.",' spec.yaml)" -eq 3 ] ||
	{ t_fail "the quote spec replaces three levels of examples/organism.yaml" "$(grep lifetime spec.yaml)"; t_done; exit 0; }
mkorganism -o org spec.yaml >/dev/null 2>mk.err || { t_fail "mkorganism on the quote spec" "$(cat mk.err)"; t_done; exit 0; }
t_pass "mkorganism: an organism whose sinks are quotes and tabs"
# the text: every planted token after a context token, many times over
for i in 1 2 3 4 5 6 7 8; do
	printf '( x = "a%d", the "b" + "c".\tthe ( = \\ "d",\n' $i
	printf 'He said "yes," then ( "no". the\t"q" = \\path\\to "e".\n'
done >'q"t.txt'
actdump -m org -t 2 --acts all -o 'q"t.h5' 'q"t.txt' 2>ad.err || t_fail "actdump" "$(cat ad.err)"
actdump --tokens-only -m org 'q"t.txt' >tokens.tsv
sinkdetect 'q"t.h5' >eps.tsv
sinkdetect --summary 'q"t.h5' >summary.tsv
sinklevels --min-count 1 eps.tsv >levels.tsv
sinklevels --fit --min-count 1 eps.tsv >fit.tsv
sinklevels --assign --min-count 1 eps.tsv >assign.tsv
t_match "the episodes include sinks on quote tokens" '"' "$(awk -F'\t' 'NR>1 && $5=="secondary" {print $4}' eps.tsv | sort -u | xargs -0)"
pcaprobe -m org -t 2 --n-components 2 --per-sink 'q"t.h5' eps.tsv >pca.persink.tsv 2>pc.err || t_fail "pcaprobe" "$(cat pc.err)"
swapexp -m org -t 2 -w 2 'q"t.h5' eps.tsv >swap.tsv 2>sw.err || t_fail "swapexp" "$(cat sw.err)"
kvevict -m org -t 2 --budgets 8 --per-layer kvl.tsv 'q"t.txt' >kv.tsv 2>kv.err || t_fail "kvevict" "$(cat kv.err)"
tsne -q -t 2 --iter 100 --exag-iter 50 --perplexity 5 --layer 10 --labels eps.tsv 'q"t.h5:/acts/resid' >tsne.tsv 2>ts.err ||
	t_fail "tsne" "$(cat ts.err)"
swapexp -m org -t 2 -w 2 --summary 'q"t.h5' eps.tsv >swap.summary.tsv 2>/dev/null
pcaprobe -m org -t 2 --n-components 2 'q"t.h5' eps.tsv >pca.tsv 2>/dev/null
tsne -q -t 2 --iter 100 --exag-iter 50 --perplexity 5 --scan 9-10 --labels eps.tsv 'q"t.h5:/acts/resid' >scan.tsv 2>/dev/null
kvevict -m org -t 2 --budgets 8 --policies window --masks kvm.tsv 'q"t.txt' >/dev/null 2>&1
sinkplant --n-layers 12 --tokens 256 --heads 2 --levels 4:3 --per-level 10 --distractors 2 -o p.h5 --truth plant.tsv 2>/dev/null
for f in org/truth/*.tsv; do cp "$f" "truth.${f##*/}"; done
# check F: F.tsv reads back the same cells with awk, csv and pandas
check() {
	local f=$1 r
	[ -s "$f.tsv" ] || { t_fail "$f.tsv written"; return; }
	awk -F'\t' '{for (i = 1; i <= NF; i++) printf "%s%s", $i, (i < NF ? "\x1f" : "\x1e")}' "$f.tsv" >"$f.awk"
	r=$($PY3 - "$f.tsv" "$f.awk" <<'PY'
import csv, math, sys
import pandas as pd
path, awkp = sys.argv[1], sys.argv[2]
awk = [r.split('\x1f') for r in open(awkp, encoding='utf-8', newline='').read().split('\x1e')[:-1]]
with open(path, encoding='utf-8', newline='') as f:
    rows = list(csv.reader(f, delimiter='\t'))
if rows != awk:
    bad = next(i for i in range(max(len(rows), len(awk))) if i >= len(rows) or i >= len(awk) or rows[i] != awk[i])
    print(f"csv: {len(rows)} rows, awk {len(awk)}; first difference at line {bad + 1}")
    sys.exit()
df = pd.read_csv(path, sep='\t')
if list(df.columns) != awk[0] or df.shape != (len(awk) - 1, len(awk[0])):
    print(f"pandas: shape {df.shape}, columns {list(df.columns)[:4]}..., awk {len(awk) - 1}x{len(awk[0])}")
    sys.exit()
for j, c in enumerate(df.columns):
    for i, v in enumerate(df[c]):
        a = awk[i + 1][j]
        if isinstance(v, str):
            ok = v == a
        elif isinstance(v, float) and math.isnan(v):
            ok = a in ('', 'nan', 'NaN', 'NA', 'N/A', 'null', 'None', '-nan')
        else:
            try:
                # pandas' default float parser is within an ulp or so, not exact
                ok = math.isclose(float(a), float(v), rel_tol=1e-12, abs_tol=0)
            except ValueError:
                ok = False
        if not ok:
            print(f"pandas: line {i + 2} column {c}: {v!r}, awk {a!r}")
            sys.exit()
print("same")
PY
)
	t_eq "$f.tsv: awk, csv and pandas read the same cells ($(($(wc -l <"$f.tsv") - 1)) rows)" same "$r"
}
for f in tokens eps summary levels fit assign pca pca.persink swap swap.summary kv kvl kvm tsne scan plant $(ls truth.*.tsv | sed 's/\.tsv$//'); do
	check "$f"
done
# bytes that are not UTF-8 (a trace whose token texts were written by
# another tool, a file name in Latin-1) and the other line breaks: every
# table is still UTF-8 (\xNN for such a byte), the same cells for every
# reader, and the escapes read back to the bytes
bad=$(printf 'l\xe9\xff')
cp 'q"t.h5' "$bad.h5" && cp 'q"t.txt' "$bad.txt"
$PY3 - "$bad.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1].encode('utf-8', 'surrogateescape'), 'r+') as f:
    t = [bytes(v) for v in f['/tokens/text'][()]]
    # odd positions: a stray byte, a truncated sequence, an overlong form,
    # a surrogate, a CR, a vertical tab and U+0085 (NEL)
    junk = [b'\xff', b'\xe2\x82', b'\xc0\xaf', b'\xed\xa0\x80', b'\r', b'\x0b', b'\xc2\x85']
    t = [v + junk[i // 2 % len(junk)] if i % 2 else v for i, v in enumerate(t)]
    del f['/tokens/text']
    f.create_dataset('/tokens/text', data=np.array(t, dtype=object), dtype=h5py.string_dtype('utf-8'))
PY
sinkdetect "$bad.h5" >u.eps.tsv 2>u.err || t_fail "sinkdetect on non-UTF-8 texts" "$(cat u.err)"
sinkdetect --summary "$bad.h5" >u.summary.tsv
sinkdetect --tokens "$bad.h5" >u.toks.tsv
sinklevels --min-count 1 u.eps.tsv >u.levels.tsv
sinklevels --assign --min-count 1 u.eps.tsv >u.assign.tsv
pcaprobe -m org -t 2 --n-components 2 --per-sink "$bad.h5" u.eps.tsv >u.pca.persink.tsv 2>/dev/null
swapexp -m org -t 2 -w 2 "$bad.h5" u.eps.tsv >u.swap.tsv 2>/dev/null
tsne -q -t 2 --iter 100 --exag-iter 50 --perplexity 5 --layer 10 --labels u.eps.tsv "$bad.h5:/acts/resid" >u.tsne.tsv 2>/dev/null
kvevict -m org -t 2 --budgets 8 --policies window "$bad.txt" >u.kv.tsv 2>/dev/null
t_match "the episodes include texts with bytes that are not UTF-8" '\\xff' "$(cat u.eps.tsv)"
for f in u.eps u.summary u.toks u.levels u.assign u.pca.persink u.swap u.tsne u.kv; do check "$f"; done
t_eq "every table is UTF-8" "" "$(for f in *.tsv; do iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 || echo "$f"; done)"
t_eq "the trace column escapes the file name's bytes" 'l\xe9\xff.h5' "$(awk -F'\t' 'NR==2 {print $1}' u.eps.tsv)"
t_eq "sinklevels reads the escapes back (the same levels from --assign)" "$(cat u.levels.tsv)" "$(sinklevels --min-count 1 u.assign.tsv)"
# the escapes themselves: a text cell has no raw quote, and reads back
t_eq "no text cell holds an unescaped quote" "" "$(cat *.tsv | grep -n '[^\\]"\|^"' | head -3)"
t_eq "the tokens table writes the quote piece as \\\"" '\"' "$(awk -F'\t' '$2 == 1 {print $3; exit}' tokens.tsv)"
t_eq "the trace column names the trace q\"t.h5" 'q\"t.h5' "$(awk -F'\t' 'NR==2 {print $1}' eps.tsv)"
t_eq "sinklevels reads its own --assign table back (the same levels)" "$(cat levels.tsv)" "$(sinklevels --min-count 1 assign.tsv)"
t_done
