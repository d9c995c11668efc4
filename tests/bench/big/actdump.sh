#!/usr/bin/env bash
# make bench-big: a model larger than memory through actdump (issue 3).
#
# Writes a random model with the exact shapes of Qwen2.5-14B (Qwen2ForCausalLM:
# hidden 5120, 48 layers, 40 heads, 8 KV heads, head_dim 128, intermediate
# 13824, vocab 152064, q/k/v bias, untied lm_head, rope_theta 1e6, bf16,
# 29.5 GB in 8 shards with model.safetensors.index.json, like the real one)
# with build/tools/mkbig into $SS_BUILD/bench/qwen14b-shape (never committed),
# and in each compute mode (BENCH_MODES, default "f32 bf16": actdump
# --compute) evicts it from the page cache (so that every byte is read from
# disk) and runs actdump over BENCH_T=512 tokens, stats only,
# BENCH_THREADS=2 threads.
# Layer-major prefill converts one layer at a time and releases its mapped
# pages afterwards (model.h), so it must complete on a machine with less
# memory than the model.  Reports: generation time, actdump wall time and
# tokens/s, bytes read from disk (the process's own, /usr/bin/time -v "File
# system inputs", and the disk's, /proc/diskstats), peak RSS (time -v) with
# the largest file-backed (mapped weights) and anonymous parts sampled each
# second, and the CPU other processes used meanwhile (foreign load; more
# than 0.25 cores marks the run LOADED), one block per mode.
#
# Refuses to start unless the file system holds the model plus 2 GB.  The
# model is deleted afterwards unless KEEP=1 (a rerun with KEEP=1 reuses it).
# The table also goes to $SS_BUILD/bench/actdump-big.txt.  BENCH_MKBIG="..."
# passes other shapes to mkbig (a dry run of this script on a small model),
# BENCH_DIR (default $SS_BUILD/bench) another folder for the model and the
# files of the run (tests/cli/bench_timings.sh runs it so on a tiny model).
set -u
: "${SS_ROOT:=$(cd "$(dirname "$0")/../../.." && pwd)}" "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
B=${BENCH_DIR:-$SS_BUILD/bench}
M=$B/qwen14b-shape
TH=${BENCH_THREADS:-2}
T=${BENCH_T:-512}
KEEP=${KEEP:-}
MKBIG=$SS_BUILD/tools/mkbig
PC=$SS_BUILD/tools/pagecache
. "$SS_ROOT/tests/bench/timings"
read -r -a MKARGS <<<"${BENCH_MKBIG:-}"
mkdir -p "$B"
exec > >(tee "$B/actdump-big.txt") 2>&1
gib() { awk -v b="$1" 'BEGIN{printf "%.2f", b / 1073741824}'; }
gb() { awk -v b="$1" 'BEGIN{printf "%.2f", b / 1e9}'; }
cleanup() {
	rm -rf "$M.tmp" "$B/big.h5" "$B/big-ids" "$B/big-rss.txt" "$B/big-time.txt"
	[ "$KEEP" = 1 ] || rm -rf "$M"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for p in "$MKBIG" "$PC" "$SS_BIN/actdump"; do
	[ -x "$p" ] || { echo "bench-big: $p missing (make all)"; exit 1; }
done
size=$("$MKBIG" --size ${MKARGS[@]+"${MKARGS[@]}"})
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $TH threads"
echo "# memory: $(awk '/MemTotal/{t=$2} /MemAvailable/{a=$2} /SwapTotal/{s=$2} END{printf "%.1f GiB total, %.1f GiB available, swap %.1f GiB", t/1048576, a/1048576, s/1048576}' /proc/meminfo)"

if [ "$KEEP" = 1 ] && [ -f "$M/config.json" ]; then
	echo "# model: reusing $M (KEEP=1)"
	gen="reused"
else
	rm -rf "$M" "$M.tmp"
	avail=$(df -P -B1 "$B" | awk 'NR == 2 {print $4}')
	need=$((size + 2 * 1024 * 1024 * 1024))
	if [ "$avail" -lt "$need" ]; then
		echo "bench-big: refusing: the model needs $(gb "$size") GB and 2 GiB to spare under $B, but only $(gb "$avail") GB are free"
		exit 1
	fi
	echo "# writing the random ${BENCH_MKBIG:+($BENCH_MKBIG) }Qwen2.5-14B-shaped bf16 model ($(gb "$size") GB) to $M ($(gb "$avail") GB free)"
	t0=$(date +%s.%N)
	"$MKBIG" ${MKARGS[@]+"${MKARGS[@]}"} "$M.tmp" 2>"$B/mkbig.err" || { echo "bench-big: mkbig failed: $(tail -1 "$B/mkbig.err")"; exit 1; }
	mv "$M.tmp" "$M"
	t1=$(date +%s.%N)
	gen=$(awk -v a="$t0" -v b="$t1" -v s="$size" 'BEGIN{printf "%.0f s (%.0f MB/s)", b - a, s / (b - a) / 1e6}')
	echo "# written in $gen"
fi
bytes=$(du -cb "$M"/*.safetensors | tail -1 | cut -f1)
V=$(sed -n 's/.*"vocab_size": *\([0-9]*\).*/\1/p' "$M/config.json")
# <|endoftext|> first, as Qwen's BOS, then random ids of the 151643 ordinary tokens
awk -v T="$T" -v V="$V" 'BEGIN{srand(T); n = V < 151643 ? V : 151643; printf "%d", (V > 151643 ? 151643 : 0)
	for (i = 1; i < T; i++) printf " %d", int(rand() * n); print ""}' >"$B/big-ids"

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }   # user nice system irq softirq
dev=$(df -P "$M" | awk 'NR == 2 {print $1}'); dev=${dev#/dev/}
dread() { awk -v d="$dev" '$3 == d {printf "%.0f\n", $6 * 512}' /proc/diskstats; }
hz=$(getconf CLK_TCK)
L=$(sed -n 's/.*"num_hidden_layers": *\([0-9]*\).*/\1/p' "$M/config.json")
nsh=$(ls "$M"/*.safetensors | wc -l)
summary=()
for md in ${BENCH_MODES:-f32 bf16}; do
	# every byte from disk: nothing of the model in the page cache
	read -r cached total < <("$PC" evict "$M"/*.safetensors)
	echo "# $md: page cache holds $(gb "$cached") GB of the $(gb "$total") GB model before the run"
	rm -f "$B/big-rss.txt"
	b0=$(busy); d0=$(dread); t0=$(date +%s.%N)
	/usr/bin/time -v -o "$B/big-time.txt" "$SS_BIN/actdump" -m "$M" --ids "$B/big-ids" -t "$TH" --timings \
		--compute "$md" -o "$B/big.h5" 2>"$B/big-err-$md.txt" &
	tpid=$!
	# the largest mapped (RssFile) and anonymous (RssAnon) parts, once a second
	(
		pid=""
		while [ -z "$pid" ] && kill -0 $tpid 2>/dev/null; do pid=$(pgrep -P $tpid actdump); sleep 0.2; done
		mf=0 ma=0
		while [ -n "$pid" ] && [ -r /proc/$pid/status ]; do
			read -r f a < <(awk '/RssFile/{f=$2} /RssAnon/{a=$2} END{print f+0, a+0}' /proc/$pid/status 2>/dev/null)
			[ "${f:-0}" -gt $mf ] && mf=$f
			[ "${a:-0}" -gt $ma ] && ma=$a
			echo "$mf $ma" >"$B/big-rss.txt"
			sleep 1
		done
	) &
	spid=$!
	wait $tpid
	rc=$?
	t1=$(date +%s.%N); b1=$(busy); d1=$(dread)
	wait $spid 2>/dev/null
	if [ $rc -ne 0 ]; then
		echo "bench-big: actdump --compute $md failed (exit $rc): $(grep -v '^actdump: [0-9]* tokens' "$B/big-err-$md.txt" | head -3)"
		exit 1
	fi
	# the summary line by its shape (timings: the time and kernel lines follow it);
	# no readable line is a failure, not a table of zeros
	timings_read "$B/big-err-$md.txt" || { echo "bench-big: actdump --compute $md: --timings summary unreadable"; exit 1; }
	rss=$(awk -F': ' '/Maximum resident/{print $2}' "$B/big-time.txt")
	own=$(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{print u+s}' "$B/big-time.txt")
	inb=$(awk -F': ' '/File system inputs/{print $2 * 512}' "$B/big-time.txt")
	maj=$(awk -F': ' '/Major .*page faults/{print $2}' "$B/big-time.txt")
	read -r mf ma 2>/dev/null <"$B/big-rss.txt" || { mf=0; ma=0; }
	last=$(h5dump -d /stats/resid_norm -s "$L,0" -c "1,4" "$B/big.h5" 2>/dev/null | sed -n "s/^ *($L,0): //p")
	rm -f "$B/big.h5"
	summary+=("$(awk -v T="$T" -v md="$md" -v rss="$rss" -v own="$own" -v b0="$b0" -v b1="$b1" -v hz="$hz" \
		-v t0="$t0" -v t1="$t1" -v inb="$inb" -v dr="$(awk -v a="$d0" -v b="$d1" 'BEGIN{printf "%.0f", b - a}')" -v w="$bytes" -v mf="$mf" -v ma="$ma" \
		-v maj="$maj" -v th="$TH" -v last="$last" -v L="$L" \
		-v fw="$TM_FORWARD" -v tok="$TM_FORWARD_TOK" -v cpu="$TM_CPU" -v tokc="$TM_CPU_TOK" 'BEGIN {
		wall = t1 - t0; foreign = ((b1 - b0) / hz - own) / wall; if (foreign < 0) foreign = 0
		printf "actdump    --compute %s, T=%d, stats only, %d threads: wall %.1f s (forward %.3f s, %.2f tok/s; cpu %.3f s, %.2f tok/s per %d threads)\n", md, T, th, wall, fw, tok, cpu, tokc, th
		printf "  read     %.2f GB by actdump (%.2fx the model; time -v file system inputs), %.2f GB by the disk meanwhile; %d major faults\n", inb / 1e9, inb / w, dr / 1e9, maj
		printf "  peak RSS %.2f GiB (time -v); sampled maxima: mapped weights (RssFile) %.2f GiB, anonymous %.2f GiB\n", rss / 1048576, mf / 1048576, ma / 1048576
		printf "  foreign  %.2f cores during the run%s\n", foreign, (foreign > 0.25 ? "  LOADED" : "")
		printf "  h[%d]    ||h|| of the first positions: %s (finite: actdump checks every layer)", L, last
	}')")
done
awk -v w="$bytes" -v gen="$gen" -v nsh="$nsh" -v shapes="${BENCH_MKBIG:-Qwen2.5-14B shapes}" 'BEGIN {
	printf "model      %s, bf16, %.2f GB (%.2f GiB) in %d shards; written in %s\n", shapes, w / 1e9, w / 1073741824, nsh, gen }'
printf '%s\n' "${summary[@]}"
