#!/usr/bin/env bash
# tests/golden/run.sh - golden outputs of every program, to prove that a
# restructuring (files moved or split, code moved from the mains into the
# library) leaves every output byte-identical.
#
#   tests/golden/run.sh make OUTDIR [BINDIR]   run the programs of BINDIR
#                                              (default: this tree's bin/) on
#                                              fixed inputs; outputs to OUTDIR
#   tests/golden/run.sh cmp DIR_A DIR_B        compare two such OUTDIRs; one
#                                              line per differing file, then
#                                              "golden: N files identical, M
#                                              differ"; exit 1 if any differ
#
# Comparing commit X (before) against the working tree (after):
#
#   git worktree add /tmp/gold-X X && make -C /tmp/gold-X -j2 all
#   make -j2 all
#   tests/golden/run.sh make /tmp/gold-before /tmp/gold-X/bin
#   tests/golden/run.sh make /tmp/gold-after            # ./bin
#   tests/golden/run.sh cmp /tmp/gold-before /tmp/gold-after
#   git worktree remove --force /tmp/gold-X
#
# Run both `make`s from the same tree (this script): every input (texts,
# spec, tokenizers, the generated random models) comes from the tree this
# script lives in, never from BINDIR's checkout, so only the programs differ.
# Run them on the same machine (OpenBLAS picks its kernels by CPU).
#
# What is covered (OUTDIR/status.tsv lists every command with its exit
# status; a program's stdout is saved as the named file, its stderr as
# NAME.err, both dropped when empty):
#   organism/, organism-f16/   mkorganism: the model organism from the
#                              default spec (examples/organism.yaml): model,
#                              config, tokenizer copy, truth/*.tsv
#   org/      the organism on 1800 characters of a real R1-distill trace
#             (593 tokens): actdump (--tokens-only, stats, --acts all four
#             components, --layers, FILE operand, --jsonl, image on a stdout
#             pipe, --timings), sinkdetect (episodes, --summary, -o with
#             /sinks, options, stdin, --config), sinklevels (levels, --fit,
#             --assign, options, --config), swapexp (rows, --summary, components,
#             --kv bf16, --exact, -o), pcaprobe (every l_start, --vectors,
#             --per-sink, --fit nonsink, alphas, classes), tsne (embedding,
#             -o HDF5, --scan, --level, --only, --exact, random init, the refusal
#             of identical points)
#   stories/  the real stories260k model (examples/models/stories260k):
#             actdump on a story and on 384 random ids, --acts, --no-bos,
#             --jsonl over rows (-o pattern), --positions warn|refuse,
#             --generate (greedy, bf16 KV cache, top-p sampling with seeds,
#             from a text prompt, --text-out), sinkdetect/sinklevels, a
#             relaxed sink rule for swapexp/pcaprobe, tsne --scan
#   random/   the reference tests' random models (tests/tools/mkmodel.py):
#             every --variants model (Llama with and without rope scaling,
#             Mistral with a binding window, Qwen2, Qwen3, Phi-3; f32, bf16,
#             f16; tied, sharded) through actdump + sinkdetect --summary,
#             activations for one per architecture, and swapexp/pcaprobe as
#             in tests/ref/swapexp.sh on a Qwen2 and a Llama model
#   synth/    tsne on a TSV matrix (stdin; seeds, --search, --theta 0, -o)
#             and on the planted trace of tests/tools/tsne_trace.py;
#             actdump --tokens-only with every test tokenizer on the
#             tokenizer corpus and with each --prompt-format
#   cli/      every program's --help and --version, and usage and data
#             errors (messages and exit statuses)
#   in/       the generated inputs (compared too: they must not differ)
#
# Adding a program: add its runs to a section below (g NAME CMD...) and its
# name to COVERED; `make` warns about programs of src/ that COVERED lacks,
# and every program found gets its --help and --version outputs anyway.
#
# Determinism:
#   - every program runs with 2 threads (-t 2 / -j 2), OpenBLAS with 1,
#     under LC_ALL=C, so no float sum depends on the machine's core count;
#   - seeds are fixed (actdump --seed, tsne -s, mkmodel.py and numpy seeds);
#   - the work runs inside OUTDIR with relative paths and programs called by
#     name through PATH, so no path of OUTDIR, BINDIR or the tree reaches an
#     output (the inputs are linked under OUTDIR/in/);
#   - HDF5 files are not compared byte for byte: the library stamps object
#     headers with creation times.  They are compared with h5diff (exact,
#     no tolerance: data and attributes) and with h5dump -A (structure,
#     types, shapes and every attribute, floats as hex), both without the
#     root attributes `command` and `generator` (GOLDEN_VOLATILE): they
#     record the command line and the program version, not a result;
#   - timings (actdump --timings, tsne's summary line) are replaced by '#'
#     in the saved stderr; the FLOP counts and everything else stay.
#
# Needs: bash, h5dump/h5diff (hdf5-tools), jq, /usr/bin/python3 with numpy
# and h5py (the inputs).  `make` takes 15-30 s on 2 cores.
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
export LC_ALL=C
GOLDEN_VOLATILE=${GOLDEN_VOLATILE:-command generator}
COVERED="actdump sinkdetect sinklevels pcaprobe tsne swapexp mkorganism"

die() { echo "golden: $*" >&2; exit 2; }
usage() { sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# ---------------------------------------------------------------- make ----

nbad=0
# g NAME [rc=N] CMD...: run CMD in OUTDIR, stdout to NAME, stderr to
# NAME.err (each removed when empty), "NAME<TAB>status<TAB>CMD" to
# status.tsv; warn when the status is not N (default 0).
g() {
	local name=$1 want=0; shift
	case $1 in rc=*) want=${1#rc=}; shift ;; esac
	mkdir -p "$(dirname "$name")"
	"$@" >"$name" 2>"$name.err" </dev/null
	local rc=$?
	printf '%s\t%s\t%s\n' "$name" "$rc" "$(printf '%s' "$*" | tr -s '\n\t' '  ')" >>status.tsv
	[ -s "$name" ] || rm -f "$name"
	[ -s "$name.err" ] || rm -f "$name.err"
	if [ "$rc" != "$want" ]; then
		echo "golden: $name: exit $rc, expected $want: $*" >&2
		nbad=$((nbad + 1))
	fi
	return 0
}
# sh_ 'PIPELINE': a pipeline for g (pipefail: any stage's failure shows)
sh_() { bash -o pipefail -c "$1"; }
# untime FILE: timings replaced by '#' (they change from run to run)
untime() {
	[ -f "$1" ] || return 0
	sed -E -i 's/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)? (s|tok\/s|GFLOP\/s)\b/# \3/g; s/\(pca [^)]*\)/(# times)/g' "$1"
}

inputs() {
	mkdir -p in/examples in/tests/data in/models in/tok
	# the organism spec finds its tokenizer at ../tests/data/tokenizers/
	ln -s "$ROOT/examples/organism.yaml" in/examples/organism.yaml
	ln -s "$ROOT/tests/data/tokenizers" in/tests/data/tokenizers
	ln -s "$ROOT/examples/models/stories260k" in/stories260k
	for t in qwen3 llama3_1 mistral deepseek_v3; do ln -s "$ROOT/tests/data/tokenizers/$t" in/tok/$t; done
	ln -s "$ROOT/tests/tok/corpus.jsonl" in/corpus.jsonl
	local tr=$ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl
	# organism: 1800 characters of the first response (593 tokens), as in
	# tests/e2e/organism.sh; stories260k and the random models: 700 (420)
	head -n 1 "$tr" | jq -j '.response[:1800]' >in/r1.txt
	head -n 1 "$tr" | jq -c '{response: .response[:1800]}' >in/r1.jsonl
	head -n 1 "$tr" | jq -j '.response[:700]' >in/m700.txt
	head -n 3 "$ROOT/examples/traces/aime24.jsonl" >in/rows.jsonl
	printf '%s\n' "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She ran to get it, but a dog took it first. Lily was sad, but then the dog came back and gave her the ball. They played together all day." >in/story.txt
	printf 'Find 2+2.' >in/p.txt
	echo 1 >in/bos.ids
	$PY - <<'EOF' || die "numpy for /usr/bin/python3 (python3-numpy) is needed"
import numpy as np
def ids(path, seed, lo, hi, n):
    r = np.random.default_rng(seed)
    open(path, "w").write(" ".join(map(str, [1] + list(r.integers(lo, hi, n - 1)))) + "\n")
ids("in/ids256.ids", 7, 0, 256, 300)     # the variants (vocab 256)
ids("in/ids512.ids", 11, 3, 512, 384)    # stories260k (vocab 512)
ids("in/ids520.ids", 12, 3, 512, 520)    # beyond max_position_embeddings 512
r = np.random.default_rng(3)             # tests/cli/tsne.sh's matrix
y = np.arange(300) % 3
X = r.normal(0, 1, (300, 10)) + 8 * np.eye(3)[y] @ r.normal(0, 1, (3, 10))
with open("in/m.tsv", "w") as f:
    f.write("label\t" + "\t".join("c%d" % i for i in range(10)) + "\n")
    for l, row in zip(y, X):
        f.write("g%d\t" % l + "\t".join("%.6g" % v for v in row) + "\n")
EOF
	local mk=$ROOT/tests/tools/mkmodel.py
	$PY "$mk" --variants in/models/V >/dev/null || die "mkmodel.py --variants failed"
	# tests/ref/swapexp.sh's model (4 layers), with the vocabulary of the
	# stories260k tokenizer so that the traces have real pieces
	$PY "$mk" --arch qwen2 --dtype f32 --layers 4 --vocab 512 in/models/q2 >/dev/null &&
		$PY "$mk" --arch llama --dtype bf16 --layers 4 --vocab 512 --seed 2 in/models/ll >/dev/null ||
		die "mkmodel.py failed"
	$PY "$ROOT/tests/tools/tsne_trace.py" in/p.h5 in/p.tsv >/dev/null || die "tests/tools/tsne_trace.py (h5py) failed"
	printf 'sinkdetect:\n  min-lifetime: 3\n  tau-cos: 0.9\nsinklevels:\n  tol: 2\n  min-count: 1\n' >in/cfg.yaml
	printf 'sinklevels:\n  fit: true\n' >in/fit.yaml
	# bad inputs for cli/
	printf 'kind\tl_start\tlifetime\tmlp_norm_start\tscore_start\tscore\nsecondary\tx\t4\t5\t0.1\t0.1\n' >in/notint.tsv
	printf 'pos\tl_start\n999\t2\n' >in/far.tsv
	printf 'a\tb\n1\t2\nnan\t3\n' >in/nan.tsv
	printf 'sinks: [\n' >in/bad.yaml
}

# --- the model organism
sec_organism() {
	local M=organism A="-t 2"
	g org/mkorganism.out mkorganism -o organism in/examples/organism.yaml
	g org/mkorganism-f16.out mkorganism --dtype f16 -o organism-f16 in/examples/organism.yaml
	g org/tokens.tsv actdump --tokens-only -m $M in/r1.txt
	g org/acts.out actdump -m $M $A --text in/r1.txt --acts resid,attn_out,mlp_in,mlp_out -o org/acts.h5
	g org/stats.out actdump -m $M $A in/r1.txt -o org/stats.h5
	g org/sel.out actdump -m $M $A --jsonl in/r1.jsonl --field response --index 0 \
		--acts mlp_out,resid --layers 0-2,9,24 -o org/sel.h5
	g org/pipe.h5 sh_ "actdump -m $M $A --text in/r1.txt | cat"
	g org/timings.out actdump -m $M $A --text in/r1.txt --timings -o org/timings.h5
	untime org/timings.out.err
	# sinkdetect
	g org/eps.tsv sinkdetect org/acts.h5
	g org/summary.tsv sinkdetect --summary org/acts.h5
	g org/eps.o.tsv sinkdetect -o org/sinks.h5 org/stats.h5
	g org/eps.opts.tsv sinkdetect -c 0.9 -n 3 --min-lifetime 2 -l 5-20 --primary-start 0.1 --primary-end 0.8 org/stats.h5
	g org/eps.stdin.tsv sh_ "sinkdetect <org/stats.h5"
	g org/eps.dash.tsv sh_ "cat org/stats.h5 | sinkdetect -"
	g org/eps.again.tsv sinkdetect -o org/sinks.again.h5 org/sinks.h5
	g org/eps.config.tsv sinkdetect --config in/cfg.yaml org/stats.h5
	g org/pipeline.tsv sh_ "actdump -m $M $A --text in/r1.txt | sinkdetect | sinklevels"
	# sinklevels
	g org/levels.tsv sinklevels org/eps.tsv
	g org/fit.tsv sinklevels --fit org/eps.tsv
	g org/assign.tsv sinklevels --assign org/eps.tsv
	g org/levels.opts.tsv sinklevels --tol 2 --min-count 1 --min-share 0 --top 5 org/eps.tsv
	g org/levels.config.tsv sinklevels --config in/cfg.yaml org/eps.tsv
	g org/fit.config.tsv sh_ "sinklevels --config in/fit.yaml <org/eps.tsv"
	# swapexp (window to layer 1 of the planted l_start 9, as in
	# tests/e2e/interv_organism.sh; --exact on three targets: it re-runs the
	# whole sequence per swap)
	g org/swap.summary.tsv swapexp -m $M $A org/acts.h5 org/eps.tsv -w 9 --summary
	g org/swap.rows.tsv swapexp -m $M $A org/acts.h5 org/eps.tsv -w 3
	g org/swap.opts.tsv swapexp -m $M $A org/acts.h5 org/eps.tsv -w 9 --components mlp_out,resid --kv bf16 \
		--summary --decision-frac 0.9 --classes space,punct
	awk -F'\t' 'NR == 1 || ($5 == "secondary" && n++ < 3)' org/eps.tsv >org/eps.few.tsv
	g org/swap.exact.out swapexp -m $M $A org/acts.h5 org/eps.few.tsv -w 2 --exact -o org/swap.exact.tsv
	# pcaprobe
	g org/pca.tsv pcaprobe -m $M $A org/acts.h5 org/eps.tsv
	g org/pca.vectors.tsv pcaprobe -m $M $A org/acts.h5 org/eps.tsv --layer 9 --n-components 3 --vectors
	g org/pca.k1.tsv pcaprobe -m $M $A org/acts.h5 org/eps.tsv --layer 9 --n-components 1 -a 2
	g org/pca.persink.tsv pcaprobe -m $M $A org/acts.h5 org/eps.tsv --layer 9 --n-components 3 --per-sink
	g org/pca.nonsink.out pcaprobe -m $M $A org/acts.h5 org/eps.tsv --layer 9 --fit nonsink -a -2:2:1 \
		--classes punct,digit --tau-cos 0.9 --tau-norm 2.5 -o org/pca.nonsink.tsv
	# tsne (future sinks of l_start 9 against controls, layers before it)
	local J="--threads 2"
	g org/tsne.l8.tsv tsne -q $J --iter 500 --layer 8 --labels org/eps.tsv org/acts.h5:/acts/resid
	g org/tsne.h5.out tsne $J --iter 300 --layer 6 --labels org/eps.tsv -o org/tsne.h5 org/acts.h5:/acts/mlp_in
	untime org/tsne.h5.out.err
	g org/tsne.scan.tsv tsne -q $J --iter 300 --scan 4-9 --labels org/eps.tsv org/acts.h5:/acts/resid
	g org/tsne.scan.k3.tsv tsne -q $J --iter 250 --scan 1-8 -k 3 --classes punct,space --labels org/eps.tsv \
		org/acts.h5:/acts/mlp_in
	g org/tsne.level.tsv tsne -q $J --iter 300 --layer 7 --labels org/assign.tsv --level 2 \
		--only future,control org/acts.h5:/acts/resid
	g org/tsne.exact.tsv tsne -q $J --iter 250 --layer 5 --labels org/eps.tsv --exact --perplexity 20 \
		--min-lifetime 5 org/acts.h5:/acts/mlp_in
	# the organism writes no attention output at layer 5 (attn_out is 0 at
	# every position): 593 identical points, none reaches perplexity 20, and
	# tsne refuses (#16 s7: exit 1 where no embedding is meaningful)
	g org/tsne.exact.zero.tsv rc=1 tsne -q $J --iter 250 --layer 5 --labels org/eps.tsv --exact \
		--perplexity 20 --min-lifetime 5 org/acts.h5:/acts/attn_out
	g org/tsne.random.tsv tsne -q $J --iter 250 --layer 8 --labels org/eps.tsv --init random -s 7 --pca 10 \
		--learning-rate 100 --exaggeration 8 --exag-iter 100 --l-start 9-9 org/acts.h5:/acts/resid
}

# --- the real stories260k model
sec_stories() {
	local M=in/stories260k A="-t 2"
	g stories/tokens.tsv actdump --tokens-only -m $M in/story.txt
	g stories/tokens.nobos.tsv actdump --tokens-only --no-bos -m $M --text in/story.txt
	g stories/story.out actdump -m $M $A --text in/story.txt --acts resid,attn_out,mlp_in,mlp_out -o stories/story.h5
	g stories/math.out actdump -m $M $A --text in/m700.txt --acts resid,mlp_in,mlp_out -o stories/math.h5
	g stories/ids.out actdump -m $M $A --ids in/ids512.ids -o stories/ids.h5
	g stories/nobos.out actdump -m $M $A --no-bos --text in/story.txt -o stories/nobos.h5
	g stories/rows.out actdump -m $M $A --jsonl in/rows.jsonl --field problem -o 'stories/row%d.h5'
	g stories/row1.tokens.tsv actdump --tokens-only -m $M --jsonl in/rows.jsonl --field problem --index 1
	g stories/warn.out actdump -m $M $A --ids in/ids520.ids --positions warn -o stories/warn.h5
	g stories/refuse.out rc=1 actdump -m $M $A --ids in/ids520.ids --positions refuse -o stories/refuse.h5
	# generation: greedy (llama2.c run.c's ids), bf16 cache, sampling
	g stories/gen.out actdump -m $M $A --ids in/bos.ids --generate 40 --text-out stories/gen.txt -o stories/gen.h5
	g stories/gen.bf16.out actdump -m $M $A --ids in/bos.ids --generate 40 --kv bf16 -o stories/gen.bf16.h5
	g stories/gen.s5.out actdump -m $M $A --ids in/bos.ids --generate 60 --temperature 1 --top-p 0.9 --seed 5 \
		--text-out stories/gen.s5.txt -o stories/gen.s5.h5
	g stories/gen.s6.out actdump -m $M $A --ids in/bos.ids --generate 60 --temperature 0.8 --seed 6 -o stories/gen.s6.h5
	g stories/gen.text.out actdump -m $M $A --jsonl in/rows.jsonl --field problem --index 1 --generate 8 \
		--prompt-format raw --text-out stories/gen.text.txt -o stories/gen.text.h5
	# the sink tables; the default rule finds no secondary sink in this
	# model, a relaxed one (--tau-cos 0.3 --tau-norm 1.1) finds some
	g stories/eps.tsv sinkdetect stories/story.h5 stories/math.h5
	g stories/summary.tsv sinkdetect --summary stories/math.h5
	g stories/levels.tsv sinklevels stories/eps.tsv
	local R="--tau-cos 0.3 --tau-norm 1.1"
	g stories/eps.relaxed.tsv sinkdetect $R stories/math.h5
	g stories/eps.story.tsv sinkdetect $R stories/story.h5
	g stories/levels.relaxed.tsv sinklevels --min-count 1 stories/eps.relaxed.tsv
	g stories/fit.relaxed.tsv sinklevels --fit --min-count 1 stories/eps.relaxed.tsv
	g stories/swap.tsv swapexp -m $M $A stories/math.h5 stories/eps.relaxed.tsv $R -w 2
	g stories/swap.summary.tsv swapexp -m $M $A stories/math.h5 stories/eps.relaxed.tsv $R --summary
	g stories/pca.tsv pcaprobe -m $M $A stories/math.h5 stories/eps.relaxed.tsv $R --n-components 4 -a -2,0,2
	g stories/tsne.scan.tsv tsne -q --threads 2 --iter 300 --scan all --labels stories/eps.relaxed.tsv $R stories/math.h5:/acts/resid
}

# --- the reference tests' random models
sec_random() {
	local A="-t 2" v
	while read -r v; do
		g random/$v.out actdump -m in/models/V/$v $A --ids in/ids256.ids -o random/$v.h5
		g random/$v.summary.tsv sinkdetect --summary random/$v.h5
	done <in/models/V/list
	for v in llama3rope-bf16-sh linrope-f16 mistral-swa-f32 qwen2-bf16-sh qwen3-f32 phi3-partial-bf16; do
		g random/$v.acts.out actdump -m in/models/V/$v $A --ids in/ids256.ids \
			--acts resid,attn_out,mlp_in,mlp_out -o random/$v.acts.h5
	done
	# tests/ref/swapexp.sh: with this rule the high-norm positions are sinks
	local R="--tau-cos -0.99 --tau-norm 1.2" T="--tokenizer in/stories260k/tokenizer.json" m
	for m in q2 ll; do
		g random/$m.out actdump -m in/models/$m $A $T --text in/m700.txt --acts resid,mlp_in -o random/$m.h5
		g random/$m.eps.tsv sinkdetect $R random/$m.h5
		g random/$m.swap.exact.tsv swapexp -m in/models/$m $A random/$m.h5 random/$m.eps.tsv -w 3 $R --exact
		g random/$m.swap.tsv swapexp -m in/models/$m $A random/$m.h5 random/$m.eps.tsv -w 3 $R
		g random/$m.swap.bf16.tsv swapexp -m in/models/$m $A random/$m.h5 random/$m.eps.tsv -w 3 $R --kv bf16
		g random/$m.swap.summary.tsv swapexp -m in/models/$m $A random/$m.h5 random/$m.eps.tsv -w 3 $R --summary
		g random/$m.pca.tsv pcaprobe -m in/models/$m $A random/$m.h5 random/$m.eps.tsv --layer 2 --n-components 3 -a -2,0,2 $R
		g random/$m.pca.persink.tsv pcaprobe -m in/models/$m $A random/$m.h5 random/$m.eps.tsv --layer 2 --n-components 3 --per-sink $R
	done
	g random/levels.tsv sh_ "cat random/q2.eps.tsv random/ll.eps.tsv | sinklevels --min-count 1"
}

# --- synthetic inputs: tsne matrices and planted traces, tokenizers
sec_synth() {
	local J="--threads 2"
	g synth/m.tsne.tsv sh_ "tsne -q $J --iter 300 <in/m.tsv"
	g synth/m.tsne.j1.tsv sh_ "tsne -q --threads 1 --iter 300 <in/m.tsv"
	g synth/m.random.tsv sh_ "tsne -q $J --iter 300 --init random -s 2 <in/m.tsv"
	g synth/m.vptree.tsv sh_ "tsne -q $J --iter 300 --search vptree <in/m.tsv"
	g synth/m.blas.tsv sh_ "tsne -q $J --iter 300 --search blas --theta 0 <in/m.tsv"
	g synth/m.summary.out sh_ "tsne $J --iter 300 -o synth/m.h5 <in/m.tsv"
	untime synth/m.summary.out.err
	g synth/p.tsne.tsv tsne -q $J --iter 300 --layer 2 --labels in/p.tsv in/p.h5:/acts/resid
	g synth/p.scan.tsv tsne -q $J --iter 300 --scan all --labels in/p.tsv in/p.h5:/acts/resid
	g synth/p.plain.tsv tsne -q $J --iter 250 in/p.h5:/plain/matrix
	local t
	for t in qwen3 llama3_1 mistral deepseek_v3; do
		g synth/tok.$t.tsv actdump --tokens-only --tokenizer in/tok/$t/tokenizer.json --jsonl in/corpus.jsonl --field s
	done
	# the corpus's first row is empty: without a BOS (qwen3) its table is
	# empty (#16 section 7; builds before that exit 1);
	# the rest of it, row by row
	g synth/tok.qwen3.rows.tsv sh_ "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
		actdump --tokens-only --tokenizer in/tok/qwen3/tokenizer.json --jsonl in/corpus.jsonl --field s --index \$i; done"
	g synth/tok.chatml.tsv actdump --tokens-only --tokenizer in/tok/qwen3/tokenizer.json --text in/p.txt --prompt-format chatml
	g synth/tok.llama3.tsv actdump --tokens-only --tokenizer in/tok/llama3_1/tokenizer.json --text in/p.txt --prompt-format llama3
	g synth/tok.r1.tsv actdump --tokens-only --tokenizer in/tok/deepseek_v3/tokenizer.json --text in/p.txt --prompt-format deepseek-r1
}

# --- help, version, errors
sec_cli() {
	local p
	for p in $PROGS; do
		g cli/$p.help $p --help
		g cli/$p.version $p -V
		g cli/$p.badopt rc=2 $p --no-such-option
	done
	local S=in/stories260k
	g cli/actdump.nofile rc=1 actdump -m $S --ids in/nofile.ids -o cli/x.h5
	g cli/actdump.nomodel rc=2 actdump --ids in/bos.ids -o cli/x.h5
	g cli/actdump.topp rc=2 actdump -m $S --ids in/bos.ids --generate 5 --top-p 0 -o cli/x.h5
	g cli/actdump.maxmem rc=1 actdump -m $S --ids in/ids512.ids --max-memory 1K -o cli/x.h5
	g cli/actdump.format rc=2 actdump -m $S --text in/p.txt --prompt-format alpaca -o cli/x.h5
	g cli/sinkdetect.nofile rc=1 sinkdetect in/nofile.h5
	g cli/sinkdetect.notrace rc=1 sinkdetect in/m.tsv
	g cli/sinklevels.notint rc=1 sinklevels in/notint.tsv
	g cli/swapexp.far rc=1 swapexp -m in/models/q2 random/q2.h5 in/far.tsv
	g cli/swapexp.arch rc=1 swapexp -m in/models/q2 random/ll.h5 random/ll.eps.tsv
	g cli/swapexp.window rc=2 swapexp -m in/models/q2 random/q2.h5 random/q2.eps.tsv -w 0
	g cli/pcaprobe.layer rc=2 pcaprobe -m in/models/q2 random/q2.h5 random/q2.eps.tsv --layer 99
	g cli/pcaprobe.k0 rc=2 pcaprobe -m in/models/q2 random/q2.h5 random/q2.eps.tsv --n-components 0
	g cli/pcaprobe.nocontrol rc=1 pcaprobe -m in/stories260k stories/story.h5 stories/eps.story.tsv --layer 3 \
		--classes digit --tau-cos 0.3 --tau-norm 1.1
	g cli/tsne.nan rc=1 sh_ "tsne <in/nan.tsv"
	g cli/tsne.nolayer rc=2 tsne in/p.h5:/acts/resid
	g cli/tsne.level rc=1 tsne --layer 2 --labels org/assign.tsv --level 7 org/acts.h5:/acts/resid
	g cli/mkorganism.noout rc=2 mkorganism in/examples/organism.yaml
	g cli/mkorganism.bad rc=1 mkorganism -o cli/org in/bad.yaml
}

cmd_make() {
	[ $# -ge 1 ] && [ $# -le 2 ] || usage
	local out=$1 bin=${2:-$ROOT/bin}
	[ -d "$bin" ] || die "$bin: no such folder (build it: make -j2 all)"
	bin=$(cd "$bin" && pwd)
	if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then die "$out exists and is not empty"; fi
	command -v h5dump >/dev/null || die "h5dump missing (hdf5-tools)"
	command -v jq >/dev/null || die "jq missing"
	mkdir -p "$out" && cd "$out" || die "cannot create $out"
	export PATH="$bin:$PATH" SINKSCOPE_NO_PROGRESS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 TZ=UTC
	# A build from before 4acb345 spells pcaprobe's count --components (the
	# name is now swapexp's component list): its runs go through a shim
	# outside OUTDIR that passes --components where this script says
	# --n-components, and `make` says so.  Nothing else is translated: the
	# messages that name the option differ, and cmp shows them.
	if [ -x "$bin/pcaprobe" ] && ! "$bin/pcaprobe" --help 2>&1 | grep -q -- --n-components; then
		GOLDEN_SHIM=$(mktemp -d) || die "mktemp failed"
		trap 'rm -rf "$GOLDEN_SHIM"' EXIT
		cat >"$GOLDEN_SHIM/pcaprobe" <<EOF
#!/usr/bin/env bash
a=()
for x; do
	case \$x in --n-components) x=--components ;; --n-components=*) x=--components=\${x#*=} ;; esac
	a+=("\$x")
done
exec -a pcaprobe "$bin/pcaprobe" "\${a[@]}"
EOF
		chmod +x "$GOLDEN_SHIM/pcaprobe"
		PATH="$GOLDEN_SHIM:$PATH"
		echo "golden: $bin/pcaprobe predates --n-components (4acb345): its runs get --components instead" >&2
	fi
	# the programs: this tree's sources (src/cmd/*.c or src/*.c) and BINDIR
	local srcs p
	srcs=$(ls "$ROOT"/src/cmd/*.c "$ROOT"/src/*.c 2>/dev/null | sed 's|.*/||; s|\.c$||' | sort -u)
	PROGS=$( (echo "$srcs"; echo $COVERED | tr ' ' '\n') | sort -u | xargs)
	for p in $srcs; do
		case " $COVERED " in *" $p "*) ;; *) echo "golden: warning: $p (src) has no runs here but --help and --version; add them" >&2 ;; esac
	done
	for p in $PROGS; do [ -x "$bin/$p" ] || echo "golden: warning: $bin/$p missing; its outputs will be missing" >&2; done
	local t0=$SECONDS
	: >status.tsv
	inputs
	sec_organism
	sec_stories
	sec_random
	sec_synth
	sec_cli
	rm -f cli/x.h5
	echo "golden: $(find . -type f | wc -l) files in $out ($((SECONDS - t0)) s, $nbad unexpected exit statuses)"
	[ $nbad -eq 0 ]
}

# ----------------------------------------------------------------- cmp ----

is_h5() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 894844460d0a1a0a ]; }
# h5norm FILE: structure, types, shapes and every attribute (floats as hex,
# so exact), without the file name and the volatile root attributes
h5norm() {
	h5dump -A -m %a "$1" 2>&1 | sed 1d | awk -v vol=" $GOLDEN_VOLATILE " '
		skip { if ($0 == "   }") skip = 0; next }
		/^   ATTRIBUTE "[^"]*" \{$/ { n = $0; sub(/^   ATTRIBUTE "/, "", n); sub(/" \{$/, "", n)
			if (index(vol, " " n " ")) { skip = 1; next } }
		{ print }'
}
# h5same A B: empty when equal, else what differs.  h5diff compares data
# and attributes exactly; on the whole file first, and when that differs
# (possibly only in a volatile root attribute), object by object below the
# root, whose attributes h5norm has compared.
h5same() {
	if ! cmp -s <(h5norm "$1") <(h5norm "$2"); then echo "structure or attributes (h5dump -A)"; return; fi
	h5diff -q "$1" "$2" >/dev/null 2>&1 && return
	local o bad=
	for o in $(h5norm "$1" | sed -nE 's/^   (GROUP|DATASET|DATATYPE) "([^"]*)" \{$/\2/p'); do
		h5diff -q "$1" "$2" "/$o" "/$o" >/dev/null 2>&1 || bad="$bad /$o"
	done
	[ -n "$bad" ] && echo "data (h5diff):$bad"
}

cmd_cmp() {
	[ $# -eq 2 ] || usage
	local a=$1 b=$2 f why same=0 diff=0
	[ -d "$a" ] || die "$a: no such folder"
	[ -d "$b" ] || die "$b: no such folder"
	command -v h5diff >/dev/null || die "h5diff missing (hdf5-tools)"
	local la lb
	la=$(cd "$a" && find . -type f | sed 's|^\./||' | sort)
	lb=$(cd "$b" && find . -type f | sed 's|^\./||' | sort)
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		echo "only in $a: $f"; diff=$((diff + 1))
	done < <(comm -23 <(echo "$la") <(echo "$lb"))
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		echo "only in $b: $f"; diff=$((diff + 1))
	done < <(comm -13 <(echo "$la") <(echo "$lb"))
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		if is_h5 "$a/$f" && is_h5 "$b/$f"; then
			why=$(h5same "$a/$f" "$b/$f")
		elif cmp -s "$a/$f" "$b/$f"; then why=
		else why="bytes (cmp)"; fi
		if [ -z "$why" ]; then same=$((same + 1)); else echo "differ: $f: $why"; diff=$((diff + 1)); fi
	done < <(comm -12 <(echo "$la") <(echo "$lb"))
	echo "golden: $same files identical, $diff differ"
	[ $diff -eq 0 ]
}

case ${1:-} in
make) shift; cmd_make "$@" ;;
cmp) shift; cmd_cmp "$@" ;;
*) usage ;;
esac
