#!/usr/bin/env bash
# Bad inputs found by trying the suite as a new user (issue 16, section 7):
# each is one line naming the file at fault, the right exit status, and no
# output left.
#   - an empty text is an error even for a tokenizer that adds a BOS (a
#     BOS-only trace means nothing); --tokens-only on it prints the header
#     alone (Hugging Face tokenizes "" to []);
#   - tsne --scan with -o: a usage error before any data is read (the scan
#     is a table on stdout; -o was ignored);
#   - a directory given as an HDF5 trace, a YAML config or an organism spec
#     says so (not "empty file" or "input error").
. "$(dirname "$0")/../lib.sh"
for p in actdump sinkdetect tsne mkorganism; do [ -x "$SS_BIN/$p" ] || { t_skip "messages" "$p not built"; t_done; exit 0; }; done
cd "$TMP" || exit 1
S=$SS_ROOT/examples/models/stories260k
: >empty.txt
T_OUT=$TMP/e.h5 t_fails "actdump: an empty text (BOS tokenizer): exit 1, no trace" 1 'empty\.txt: empty text, nothing to run' \
	actdump -m "$S" --text empty.txt -o e.h5
T_OUT=$TMP/e.h5 t_fails "actdump: empty stdin" 1 '<stdin>: empty text' bash -c "actdump -m '$S' --text - -o e.h5 </dev/null"
printf '{"t":""}\n' >e.jsonl
T_OUT=$TMP/e.h5 t_fails "actdump: an empty --jsonl field" 1 "e\.jsonl:1: field 't': empty text" \
	actdump -m "$S" --jsonl e.jsonl --field t --index 0 -o e.h5
out=$(actdump --tokens-only -m "$S" --text empty.txt 2>&1); rc=$?
t_eq "actdump --tokens-only on an empty text: exit 0, the header alone" "0 $(printf 'i\tid\tpiece')" "$rc $out"
out=$(actdump --tokens-only -m "$S" --text - </dev/null 2>&1); rc=$?
t_eq "actdump --tokens-only on empty stdin: exit 0, the header alone" "0 $(printf 'i\tid\tpiece')" "$rc $out"
sinkplant --n-layers 4 --tokens 64 --heads 2 --levels 2:2 --per-level 5 --distractors 2 -o p.h5 2>/dev/null
sinkdetect p.h5 >eps.tsv 2>/dev/null
T_OUT=$TMP/scan.h5 t_fails "tsne --scan -o: a usage error naming --output" 2 '^tsne: --output: not with --scan' \
	tsne --scan 1-2 --labels eps.tsv -o scan.h5 nosuch.h5:/acts/resid
mkdir -p adir
t_fails "sinkdetect on a directory: says so" 1 '^sinkdetect: adir: is a directory, expected an HDF5 file$' sinkdetect adir
t_fails "tsne on a directory: says so" 1 'adir: is a directory, expected an HDF5 file' tsne --layer 1 adir:/acts/resid
t_fails "--config a directory: says so" 1 '^sinkdetect: adir: is a directory, expected a YAML file$' sinkdetect --config adir p.h5
# a key twice in one YAML mapping: an error naming file, line and key,
# never the last one silently winning (libyaml keeps both)
printf 'sinkdetect:\n  tau-cos: 0.9\n  min-lifetime: 2\n  tau-cos: 0.5\n' >dup.yaml
t_fails "--config: a key twice in a section" 1 "^sinkdetect: dup\.yaml: line 4: duplicate key 'tau-cos' \(first at line 2\)$" \
	sinkdetect --config dup.yaml p.h5
printf 'sinkdetect:\n  tau-cos: 0.9\nsinklevels:\n  top: 2\nsinkdetect:\n  tau-cos: 0.5\n' >dupsec.yaml
t_fails "--config: a program's section twice" 1 "^sinkdetect: dupsec\.yaml: line 5: duplicate key 'sinkdetect' \(first at line 1\)$" \
	sinkdetect --config dupsec.yaml p.h5
t_fails "--config: another program's section twice (a pipeline's file)" 1 "^sinklevels: dupsec\.yaml: line 5: duplicate key" \
	sinklevels --config dupsec.yaml eps.tsv
T_OUT=$TMP/org t_fails "mkorganism on a directory spec: says so" 1 '^mkorganism: adir: is a directory, expected a YAML spec' \
	mkorganism -o org adir
t_done
