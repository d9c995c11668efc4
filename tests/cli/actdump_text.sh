#!/usr/bin/env bash
# actdump text input: --text / FILE operand, --jsonl --field [--index],
# --tokens-only, --tokenizer, --no-bos, /tokens/text; bad input cases.
. "$(dirname "$0")/../lib.sh"
A=$SS_BIN/actdump
M=$SS_ROOT/examples/models/stories260k
Q=$SS_ROOT/tests/data/tokenizers/qwen3/tokenizer.json
if [ ! -x "$A" ]; then t_skip "actdump text input" "actdump not built"; t_done; exit 0; fi
story='Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, r'
want='1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352'
printf '%s' "$story" >"$TMP/story.txt"
got=$("$A" --tokens-only -m "$M" "$TMP/story.txt" | awk 'NR>1{printf "%s%s", s, $2; s=" "}')
t_eq "stories260k: the greedy story encodes to llama2.c's ids (BOS first)" "$want" "$got"
got=$("$A" --tokens-only -m "$M" --no-bos --text - <"$TMP/story.txt" | awk 'NR==2{print $2}')
t_eq "--no-bos: first id is 'Once' (403)" 403 "$got"
t_eq "--tokens-only header" $'i\tid\tpiece' "$("$A" --tokens-only -m "$M" "$TMP/story.txt" | sed -n 1p)"
got=$("$A" --tokens-only -m "$M" "$TMP/story.txt" | sed -n 3p)
t_eq "--tokens-only line: i id piece" $'1\t403\t Once' "$got"
# Qwen3 without a model: special tokens in text, tabs escaped
printf '<|im_start|>user\n\tx' >"$TMP/chat.txt"
got=$("$A" --tokens-only --tokenizer "$Q" "$TMP/chat.txt" | tail -n +2 | cut -f2- | tr '\n' '|')
t_eq "--tokenizer without -m: special token, newline and tab escaped" $'151644\t<|im_start|>|872\tuser|198\t\\n|10225\t\\tx|' "$got"
# --jsonl: one row, every row with a pattern
J=$SS_ROOT/examples/traces/aime24.jsonl
n=$(grep -c . "$J")
rows=$("$A" --tokens-only --tokenizer "$Q" --jsonl "$J" --field problem | tail -n +2 | cut -f1 | uniq | wc -l)
t_eq "--jsonl without --index: every row ($n)" "$n" "$rows"
t_eq "--jsonl header has the row column" $'row\ti\tid\tpiece' "$("$A" --tokens-only --tokenizer "$Q" --jsonl "$J" --field problem | sed -n 1p)"
one=$("$A" --tokens-only --tokenizer "$Q" --jsonl "$J" --field problem --index 2 | tail -n +2 | cut -f2 | tr '\n' ' ')
all2=$("$A" --tokens-only --tokenizer "$Q" --jsonl "$J" --field problem | awk -F'\t' 'NR>1 && $1==2{print $3}' | tr '\n' ' ')
t_eq "--index 2 gives row 2's tokens" "$all2" "$one"
head -3 "$J" >"$TMP/three.jsonl"
t_ok "--jsonl every row into -o PATTERN" "$A" -m "$M" --tokenizer "$M/tokenizer.json" --jsonl "$TMP/three.jsonl" --field problem -o "$TMP/row-{row}.h5"
t_eq "one file per row" "row-0.h5 row-1.h5 row-2.h5" "$(cd "$TMP" && ls row-*.h5 | tr '\n' ' ' | sed 's/ $//')"
t_ok "-o with %d" "$A" -m "$M" --jsonl "$TMP/three.jsonl" --field problem -o "$TMP/p%d.h5"
t_eq "%d replaced" "p0.h5 p1.h5 p2.h5" "$(cd "$TMP" && ls p*.h5 | tr '\n' ' ' | sed 's/ $//')"
# /tokens/text and ids in the HDF5 file
"$A" -m "$M" "$TMP/story.txt" -o "$TMP/s.h5"
if have_py h5py; then
	got=$($PY -c "
import h5py,sys
f=h5py.File(sys.argv[1]); t=[x.decode() for x in f['/tokens/text'][:]]; i=f['/tokens/ids'][:]
print(' '.join(map(str,i))); print('|'.join(t[:4]))" "$TMP/s.h5")
	t_eq "/tokens/ids from text" "$want" "$(printf '%s\n' "$got" | sed -n 1p)"
	t_eq "/tokens/text: decoded pieces" "<s>| Once| upon| a" "$(printf '%s\n' "$got" | tail -1)"
	printf '%s' "$want" >"$TMP/ids.txt"
	"$A" -m "$M" --ids "$TMP/ids.txt" -o "$TMP/i.h5"
	got=$($PY -c "
import h5py,sys
f=h5py.File(sys.argv[1]); print('|'.join(x.decode() for x in f['/tokens/text'][:4]))" "$TMP/i.h5")
	t_eq "--ids: /tokens/text from the folder's tokenizer.json" "<s>| Once| upon| a" "$got"
	printf 'x \xe4\xbd\xa0' >"$TMP/cjk.txt"   # not in the 512 pieces: 3 byte tokens
	"$A" -m "$M" --no-bos "$TMP/cjk.txt" -o "$TMP/c.h5"
	got=$($PY -c "
import h5py,sys
f=h5py.File(sys.argv[1]); print('|'.join(x.decode() for x in f['/tokens/text'][:]))" "$TMP/c.h5")
	t_eq "/tokens/text: split character bytes are U+FFFD (first piece: the stripped prefix)" "|x| |�|�|�" "$got"
else
	t_skip "/tokens/text checks" "no h5py"
fi
# bad input: one line, exit status, no output
printf 'ok \xff\xfe' >"$TMP/bad.txt"
T_OUT=$TMP/bad.h5 t_fails "invalid UTF-8 names the byte offset" 1 "^actdump: .*bad.txt: invalid UTF-8 at byte offset 3$" "$A" -m "$M" "$TMP/bad.txt" -o "$TMP/bad.h5"
t_fails "--jsonl needs -o PATTERN for every row" 2 "^actdump: --jsonl without --index .*PATTERN" "$A" -m "$M" --jsonl "$TMP/three.jsonl" --field problem -o "$TMP/x.h5"
T_OUT=$TMP/y.h5 t_fails "--index out of range" 1 "^actdump: .*three.jsonl: --index 3 out of range \\(3 rows\\)$" "$A" -m "$M" --jsonl "$TMP/three.jsonl" --field problem --index 3 -o "$TMP/y.h5"
t_fails "missing field" 1 "^actdump: .*three.jsonl:1: field 'nope' is missing or not a string$" "$A" -m "$M" --jsonl "$TMP/three.jsonl" --field nope --index 0 -o "$TMP/z.h5"
printf '{"q": "a"}\n{"q": \n' >"$TMP/broken.jsonl"
t_fails "malformed JSON line" 1 "^actdump: .*broken.jsonl:2: not valid JSON" "$A" -m "$M" --jsonl "$TMP/broken.jsonl" --field q --index 1 -o "$TMP/z.h5"
t_fails "--jsonl without --field" 2 "^actdump: --jsonl needs --field NAME$" "$A" -m "$M" --jsonl "$TMP/three.jsonl"
t_fails "--field without --jsonl" 2 "^actdump: --field and --index go with --jsonl$" "$A" -m "$M" --field x "$TMP/story.txt"
t_fails "two inputs" 2 "^actdump: give one input" "$A" -m "$M" --ids "$TMP/ids.txt" "$TMP/story.txt"
t_fails "no input" 2 "^actdump: missing input" "$A" -m "$M"
t_fails "--tokens-only without a tokenizer" 2 "^actdump: --tokens-only needs -m DIR or --tokenizer FILE$" "$A" --tokens-only "$TMP/story.txt"
t_fails "missing tokenizer file" 1 "^actdump: $TMP/none.json: No such file" "$A" --tokens-only --tokenizer "$TMP/none.json" "$TMP/story.txt"
head -c 3000000 "$Q" >"$TMP/cut.json"
t_fails "tokenizer.json cut short: file, line and column" 1 "^actdump: .*cut.json:[0-9]{5,}:[0-9]+: not valid JSON: parse error: premature EOF$" "$A" --tokens-only --tokenizer "$TMP/cut.json" "$TMP/story.txt"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a"]]}}' >"$TMP/merge.json"
t_fails "merge of tokens not in the vocabulary" 1 "^actdump: .*merge.json:model.merges\\[0\\]: 'aa' is not in the vocabulary$" "$A" --tokens-only --tokenizer "$TMP/merge.json" "$TMP/story.txt"
printf '{"model": {"type": "Unigram", "vocab": []}}' >"$TMP/uni.json"
t_fails "unsupported tokenizer model" 1 "^actdump: .*uni.json:model.type: unsupported model 'Unigram'" "$A" --tokens-only --tokenizer "$TMP/uni.json" "$TMP/story.txt"
: >"$TMP/empty.txt"
t_fails "empty text without BOS: an error" 1 "^actdump: .*empty.txt: empty text, nothing to run" "$A" -m "$M" --no-bos "$TMP/empty.txt" -o "$TMP/e.h5"
t_done
