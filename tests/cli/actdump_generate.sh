#!/usr/bin/env bash
# actdump --generate on the real stories260k model: greedy continuation from
# BOS reproduces llama2.c run.c's ids at temperature 0 (issue 3) with f32 and
# bf16 caches, the continuation decodes to its text, the trace records the
# whole sequence with the stats a plain run over the same ids gives, EOS
# (from generation_config.json) stops, seeds reproduce; bad options exit 2.
. "$(dirname "$0")/../lib.sh"
S=$SS_ROOT/examples/models/stories260k
want="1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352"
story="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, r"
ids_of() { h5dump -d /tokens/ids -y "$1" | awk '/DATA/{f=1; next} /}/{f=0} f' | tr ',' ' ' | xargs; }
cd "$TMP" || exit 1
echo 1 >bos.ids
t_ok "--generate 40 (f32 cache)" actdump -m "$S" --ids bos.ids --generate 40 --text-out g.txt -o g.h5
t_eq "greedy ids are llama2.c's" "$want" "$(ids_of g.h5)"
t_eq "--text-out: the continuation as text" "$story" "$(cat g.txt)"
t_ok "--generate 40 --kv bf16" actdump -m "$S" --ids bos.ids --generate 40 --kv bf16 -o b.h5
t_eq "bf16 cache: the same greedy ids" "$want" "$(ids_of b.h5)"
echo "$want" >all.ids
actdump -m "$S" --ids all.ids -o p.h5
# the stats were recorded while generating (no second pass): a plain run's
# up to the order of f32 sums (1e-5: norms relative, cosines and recv absolute)
stats_match() { # name test.h5 ref.h5
	local out; out=$("$PY" "$SS_ROOT/tests/ref/cmp_h5.py" --tol 1e-5 "$2" "$3" 2>&1)
	if [ $? -eq 0 ]; then t_pass "$1"; else t_fail "$1" "$(printf '%s\n' "$out" | grep -v '^ok' | head -3)"; fi
}
if have_py h5py; then
	stats_match "the trace's stats equal a plain run over prompt + continuation" g.h5 p.h5
	t_ok "--timings: recorded during generation" sh -c "actdump -m '$S' --ids bos.ids --generate 8 \
		--timings -o t.h5 2>&1 | grep -q 'statistics recorded'"
	actdump -m "$S" --ids bos.ids --generate 40 --kv bf16 --acts resid -o ba.h5
	t_eq "--acts: the trace from a second pass (the plain run's stats exactly)" \
		"$(h5dump -d /stats/recv p.h5 | grep -v HDF5)" "$(h5dump -d /stats/recv ba.h5 | grep -v HDF5)"
	# a bf16 model decodes from its resident bf16 weights (gemv.h)
	if have_py numpy && $PY "$SS_ROOT/tests/tools/mkmodel.py" --arch qwen2 --dtype bf16 --tied --layers 3 q2 >/dev/null 2>&1; then
		echo 1 5 9 >q.ids
		actdump -m q2 --ids q.ids --generate 24 --temperature 1 --seed 2 -o qg.h5
		ids_of qg.h5 >qall.ids
		actdump -m q2 --ids qall.ids -o qp.h5
		t_eq "bf16 model: 27 positions generated" 27 "$(wc -w <qall.ids)"
		stats_match "bf16 model: stats of the generation equal a plain run's" qg.h5 qp.h5
	else
		t_fail "mkmodel.py --arch qwen2 --dtype bf16"
	fi
else
	t_skip "stats against a plain run" "h5py absent for $PY"
fi
mkdir -p eos && cp "$S"/* eos/ && echo '{"eos_token_id": [2, 383]}' >eos/generation_config.json
actdump -m eos --ids bos.ids --generate 40 -o e.h5
t_eq "EOS from generation_config.json stops (and is kept)" "1 403 407 261 378 432 383" "$(ids_of e.h5)"
actdump -m "$S" --ids bos.ids --generate 30 --temperature 1 --top-p 0.9 --seed 5 -o s1.h5
actdump -m "$S" --ids bos.ids --generate 30 --temperature 1 --top-p 0.9 --seed 5 -o s2.h5
actdump -m "$S" --ids bos.ids --generate 30 --temperature 1 --top-p 0.9 --seed 6 -o s3.h5
t_eq "sampling: the same seed, the same ids" "$(ids_of s1.h5)" "$(ids_of s2.h5)"
t_ok "sampling: another seed, other ids" test "$(ids_of s1.h5)" != "$(ids_of s3.h5)"
# prompt formats: the chat template's special tokens become single ids
Q=$SS_ROOT/tests/data/tokenizers
printf 'Find 2+2.' >p.txt
got=$(actdump --tokens-only --tokenizer "$Q/qwen3/tokenizer.json" --text p.txt --prompt-format chatml | awk -F'\t' 'NR>1{printf "%s ", $2}')
t_eq "--prompt-format chatml (Qwen3 tokenizer)" "151644 872 198 9885 220 17 10 17 13 151645 198 151644 77091 198 " "$got"
got=$(actdump --tokens-only --tokenizer "$Q/llama3_1/tokenizer.json" --text p.txt --prompt-format llama3 | awk -F'\t' 'NR==2||NR==3{printf "%s ", $2}')
t_eq "--prompt-format llama3: one <|begin_of_text|>, then <|start_header_id|>" "128000 128006 " "$got"
printf '{"problem": "Once"}\n{"problem": "Lily"}\n' >q.jsonl
t_ok "--jsonl --index --generate (text input)" actdump -m "$S" --jsonl q.jsonl --field problem --index 1 --generate 5 --text-out q.txt -o q.h5
t_eq "text input + generation: 5 more tokens recorded" 5 "$(( $(ids_of q.h5 | wc -w) - $(actdump --tokens-only -m "$S" --jsonl q.jsonl --field problem --index 1 | tail -n +2 | wc -l) ))"
t_fails "--prompt-format with --ids" 2 "prompt-format chatml wraps text" actdump -m "$S" --ids bos.ids --prompt-format chatml --generate 5 -o x.h5
t_fails "--prompt-format unknown" 2 "^actdump: --prompt-format: 'alpaca', expected raw, chatml" actdump -m "$S" --text p.txt --prompt-format alpaca -o x.h5
t_fails "--generate over every --jsonl row" 2 "give --jsonl with --index" actdump -m "$S" --jsonl q.jsonl --field problem --generate 5 -o 'x%d.h5'
t_fails "--temperature -1" 2 "^actdump: --temperature: -1 is negative$" actdump -m "$S" --ids bos.ids --generate 5 --temperature -1 -o x.h5
t_fails "--top-p 0" 2 "^actdump: --top-p: 0 outside" actdump -m "$S" --ids bos.ids --generate 5 --top-p 0 -o x.h5
t_fails "--kv f16" 2 "^actdump: --kv: .*f16" actdump -m "$S" --ids bos.ids --generate 5 --kv f16 -o x.h5
t_fails "--text-out without --generate" 2 "text-out" actdump -m "$S" --ids bos.ids --text-out t.txt -o x.h5
# a model's vocabulary padded beyond its tokenizer's (as Qwen's is): only
# the tokenizer's ids are sampled.  small.json keeps stories260k's ids below
# 300 of 512; at temperature 3 the padded-out ids are likely at every step.
/usr/bin/python3 - "$S/tokenizer.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
m = t["model"]
m["vocab"] = {k: v for k, v in m["vocab"].items() if v < 300}
pair = lambda x: x if isinstance(x, list) else x.split(" ")
m["merges"] = [x for x in m["merges"] if all(p in m["vocab"] for p in pair(x) + ["".join(pair(x))])]
json.dump(t, open("small.json", "w"))
EOF
t_ok "--generate with a tokenizer smaller than the model's vocabulary" \
	actdump -m "$S" --tokenizer small.json --ids bos.ids --generate 60 --temperature 3 --seed 1 --text-out small.txt -o small.h5
t_eq "every sampled id is below the tokenizer's 300" "" "$(ids_of small.h5 | tr ' ' '\n' | awk '$1 >= 300')"
t_ok "and 60 were sampled" test "$(ids_of small.h5 | wc -w)" -eq 61
t_done
