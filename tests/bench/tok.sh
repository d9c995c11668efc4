#!/usr/bin/env bash
# tests/bench/tok.sh - tokenizer speed: encode 4 MiB of mixed prose, math
# and code (reasoning traces and problems from examples/traces, the
# repository's C sources, scripts and man pages, interleaved and repeated
# to 4 MiB; written to build/bench/tok_mixed.txt) with the Qwen3
# tokenizer, in C (tok_ library, best of 3) and with Hugging Face's
# JavaScript tokenizers (node, one run after a warm-up), in the same run.
# Also the time to load the 11 MB tokenizer.json (C: best of 3) and a
# check that both produced the same number of tokens.
set -u
cd "$(dirname "$0")/../.."
: "${SS_BUILD:=$PWD/build}"
mkdir -p "$SS_BUILD/bench"
txt=$SS_BUILD/bench/tok_mixed.txt
tj=tests/data/tokenizers/qwen3/tokenizer.json
/usr/bin/python3 - "$txt" <<'PY'
import glob, json, sys
texts, code = [], []
for f in sorted(glob.glob("examples/traces/*.jsonl")):
    for line in open(f, encoding="utf-8"):
        o = json.loads(line)
        for k in ("problem", "solution", "response", "full_cot"):
            if isinstance(o.get(k), str) and o[k]:
                texts.append(o[k])
for pat in ("src/cmd/*.c", "src/lib/*/*.[ch]", "tests/*/*.sh", "man/man*/*.[157]"):
    for f in sorted(glob.glob(pat)):
        code.append(open(f, encoding="utf-8", errors="replace").read())
mixed, i = [], 0
while i < max(len(texts), len(code)):
    if i < len(texts): mixed.append(texts[i])
    if i < len(code): mixed.append(code[i])
    i += 1
one = "\n\n".join(mixed)
target = 4 << 20
out = (one * (target // len(one.encode()) + 1)).encode()[:target]
while True:  # cut at a character boundary
    try: out.decode(); break
    except UnicodeDecodeError: out = out[:-1]
open(sys.argv[1], "wb").write(out)
print("# text: %d bytes (%d distinct bytes before repetition), %d traces/problems, %d source files" %
      (len(out), len(one.encode()), len(texts), len(code)))
PY
tool=$SS_BUILD/tools/tokenize
[ -x "$tool" ] || { echo "build first: make tools"; exit 1; }
c=$("$tool" --bench --no-bos "$tj" "$txt") || exit 1
loads=$(for i in 1 2 3; do "$tool" --bench --no-bos "$tj" /dev/null | awk '$1=="load_s"{w=$2} $1=="load_cpu_s"{print w, $2}'; done | sort -n)
cl=$(printf '%s\n' "$loads" | head -1 | cut -d' ' -f1)
clc=$(printf '%s\n' "$loads" | sort -k2 -n | head -1 | cut -d' ' -f2)
get() { printf '%s\n' "$1" | awk -v k="$2" '$1==k{print $2}'; }
if [ -d "$SS_BUILD/node/node_modules/@huggingface/tokenizers" ] || [ -n "${TOKENIZERS_JS:-}" ]; then
	j=$(node tests/bench/tok_js.mjs "$tj" "$txt") || exit 1
else
	echo "# @huggingface/tokenizers not installed: npm install --prefix build/node @huggingface/tokenizers"
	j=$'load_s\tnan\nload_cpu_s\tnan\nencode_s\tnan\nencode_cpu_s\tnan\nMBps\tnan\nMBps_cpu\tnan\ntokens\tnan'
fi
printf '%-28s %12s %12s\n' "Qwen3 tokenizer" "C (tok_)" "JS (tokenizers.js)"
printf '%-28s %12s %12s\n' "load tokenizer.json (s)" "$cl" "$(get "$j" load_s)"
printf '%-28s %12s %12s\n' "  CPU time (s)" "$clc" "$(get "$j" load_cpu_s)"
printf '%-28s %12s %12s\n' "encode 4 MiB (s)" "$(get "$c" encode_s)" "$(get "$j" encode_s)"
printf '%-28s %12s %12s\n' "  CPU time (s)" "$(get "$c" encode_cpu_s)" "$(get "$j" encode_cpu_s)"
printf '%-28s %12s %12s\n' "MB/s (wall)" "$(get "$c" MBps)" "$(get "$j" MBps)"
printf '%-28s %12s %12s\n' "MB/s (CPU time)" "$(get "$c" MBps_cpu)" "$(get "$j" MBps_cpu)"
printf '%-28s %12s %12s\n' "tokens" "$(get "$c" tokens)" "$(get "$j" tokens)"
awk -v a="$(get "$c" MBps)" -v b="$(get "$j" MBps)" 'BEGIN{ if (b+0 > 0) printf "speed ratio C/JS (wall): %.1fx (target >= 20x)\n", a/b }'
awk -v a="$(get "$c" MBps_cpu)" -v b="$(get "$j" MBps_cpu)" 'BEGIN{ if (b+0 > 0) printf "speed ratio C/JS (CPU):  %.1fx\n", a/b }'
awk -v l="$cl" -v c="$clc" 'BEGIN{ printf "C load %.3f s wall, %.3f s CPU (target < 0.5 s): %s\n", l, c, (l < 0.5 ? "met" : c < 0.5 ? "met in CPU time only (machine loaded)" : "NOT met") }'
echo "# machine load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
