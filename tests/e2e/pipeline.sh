#!/usr/bin/env bash
# The pipeline end to end (pipelines/Makefile) on the shipped stories260k
# and on the organism: every table and figure of each stage whose program
# is built exists and parses (SVG with xmllint, PNG by its signature), the
# report lists them, and the organism's report shows its planted levels.
# Stages whose program has not landed are skipped visibly (# SKIP).
# Also: the Slurm wrapper with a stand-in srun on PATH, resumability, and
# the helpers' bad-input errors.
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
have() { [ -x "$SS_BIN/$1" ] || return 1
	# the pipeline gives actdump text: an actdump with only --ids is not enough
	[ "$1" != actdump ] || "$SS_BIN/actdump" --help 2>/dev/null | grep -q -- --max-tokens; }
isvg() { xmllint --noout "$1" 2>/dev/null && grep -q '<svg' "$1"; }
ipng() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

# stage -> program, tables it makes (in OUT/tables), figures
declare -A PROG=([h5]=actdump [episodes]=sinkdetect [levels]=sinklevels [pca]=pcaprobe [swap]=swapexp [tsne]=tsne)
check_model() { # MODEL OUT [MAKE-ARGS...]
	local m=$1 out=$2; shift 2
	t_ok "$m: make -C pipelines runs" make -s -C "$PL" MODEL="$m" OUT="$out" BIN="$SS_BIN" THREADS=1 "$@"
	t_ok "$m: report.md written" test -s "$out/report.md"
	local n; n=$(sed -n 's/^P_n_traces := //p' "$out/config.mk")
	t_eq "$m: one text per trace" "$n" "$(ls "$out"/traces/t*.txt 2>/dev/null | wc -l | tr -d ' ')"
	ck() { # DESC TABLE FIGURE PROGS...
		local d=$1 tab=$2 fig=$3; shift 3
		for p in "$@"; do have "$p" || { t_skip "$m: $d" "$p not built yet"; return; }; done
		if [ -n "$tab" ]; then
			if [ -s "$out/tables/$tab" ] && [ "$(wc -l <"$out/tables/$tab")" -ge 1 ]; then t_pass "$m: table $tab"
			else t_fail "$m: table $tab" "missing or empty"; fi
		fi
		[ -n "$fig" ] || return
		if [ -f "$out/figs/$fig.svg" ] && isvg "$out/figs/$fig.svg"; then t_pass "$m: $fig.svg parses"
		else t_fail "$m: $fig.svg parses" "$(grep "^$fig" "$out/figs.log")"; fi
		if [ -f "$out/figs/$fig.png" ] && ipng "$out/figs/$fig.png"; then t_pass "$m: $fig.png is a PNG"
		else t_fail "$m: $fig.png is a PNG"; fi
		t_match "$m: report shows $fig" "figs/$fig.svg" "$(cat "$out/report.md")"
	}
	ck "heatmap (fig 1)" heatmap.tsv fig1_heatmap actdump sinkdetect
	ck "valley (fig 2)" primary.tsv fig2_valley actdump sinkdetect
	ck "episodes table" lstart_hist.tsv "" actdump sinkdetect
	ck "levels (fig 3)" episodes.tsv fig3_levels actdump sinkdetect sinklevels
	ck "norm law (fig 4)" normlaw.tsv fig4_normlaw actdump sinkdetect sinklevels
	ck "PCA (fig 5)" pca.tsv fig5_pca actdump sinkdetect sinklevels pcaprobe
	ck "t-SNE (fig 6)" separability.tsv fig6_tsne actdump sinkdetect sinklevels tsne
	ck "swaps (fig 7)" swap.tsv fig7_swap actdump sinkdetect sinklevels swapexp
}

t0=$(date +%s)
check_model stories260k "$TMP/stories260k"
# Resumable: a second run redoes nothing per trace.
if have actdump; then
	touch -d '2000-01-01' "$TMP/stories260k/h5/t001.h5" 2>/dev/null
	before=$(stat -c %Y "$TMP/stories260k/h5/t002.h5")
	make -s -C "$PL" MODEL=stories260k OUT="$TMP/stories260k" BIN="$SS_BIN" >/dev/null 2>&1
	t_eq "resume: finished traces are not recomputed" "$before" "$(stat -c %Y "$TMP/stories260k/h5/t002.h5")"
else
	t_skip "resume: finished traces are not recomputed" "actdump not built yet"
fi

# The organism (built by mkorganism; examples/organism/ when present).
org=$SS_ROOT/examples/organism
if [ ! -f "$org/config.json" ] && have mkorganism; then
	org=$TMP/organism-model
	"$SS_BIN/mkorganism" -o "$org" >/dev/null 2>&1 || t_fail "mkorganism builds the organism"
fi
if [ -f "$org/config.json" ]; then
	check_model organism "$TMP/organism" MODEL_DIR="$org"
else
	t_skip "organism: pipeline" "mkorganism not built yet and examples/organism/ absent"
fi
t_ok "both models in under two minutes ($(($(date +%s) - t0)) s)" test $(($(date +%s) - t0)) -lt 120

# Slurm: the SHELL wrapper runs a recipe through srun (stand-in on PATH).
mkdir -p "$TMP/fakebin"
cat >"$TMP/fakebin/srun" <<'SH'
#!/usr/bin/env bash
# stand-in srun: log the flags, run the command after them
log=${SRUN_LOG:?}; args=()
while [ $# -gt 0 ] && [[ $1 == -* ]]; do args+=("$1"); shift; done
echo "srun ${args[*]} :: $1" >>"$log"; exec "$@"
SH
chmod +x "$TMP/fakebin/srun"
out=$(PATH=$TMP/fakebin:$PATH SRUN_LOG=$TMP/srun.log "$PL/bin/srun-shell" -n1 -c2 --mem=1G -- -c 'echo from-step')
t_eq "srun-shell runs the recipe as a job step" "from-step" "$out"
t_match "srun-shell passes the step flags" '^srun -n1 -c2 --mem=1G :: bash' "$(cat "$TMP/srun.log")"
if have actdump && have sinkdetect; then
	PATH=$TMP/fakebin:$PATH SRUN_LOG=$TMP/srun2.log make -s -C "$PL" MODEL=stories260k OUT="$TMP/slurm" \
		BIN="$SS_BIN" SLURM=1 THREADS=1 -j2 stages >/dev/null 2>&1
	t_eq "SLURM=1: one job step per trace and stage" 6 "$(grep -c '^srun -n1 -c1' "$TMP/srun2.log" 2>/dev/null)"
	t_eq "SLURM=1: same episodes as the local run" "$(cat "$TMP/stories260k"/episodes/*.tsv | md5sum)" \
		"$(cat "$TMP/slurm"/episodes/*.tsv 2>/dev/null | md5sum)"
else
	t_skip "SLURM=1 through make" "actdump/sinkdetect not built yet"
fi

# Helpers: bad input is one clear line, exit 1, no partial output.
printf '{"problem":"x"}\n' >"$TMP/bad.jsonl"
T_OUT=$TMP/mt/t001.txt t_fails "mktraces: record without the field" 1 'bad.jsonl:1: field "response" missing' \
	"$PL/bin/mktraces" "$TMP/bad.jsonl" raw 1 "$TMP/mt"
t_fails "mktraces: unknown prompt format" 1 "unknown prompt format 'nope'" "$PL/bin/mktraces" "$TMP/bad.jsonl" nope 1 "$TMP/mt"
t_fails "mktraces: more traces than records" 1 '1 records, 5 asked for' "$PL/bin/mktraces" "$TMP/bad.jsonl" raw 5 "$TMP/mt" problem
printf 'pipeline:\n  model x\n' >"$TMP/bad.yaml"
t_fails "yaml2mk: malformed pipeline section" 1 'bad.yaml:2: pipeline: expected' "$PL/bin/yaml2mk" "$TMP/bad.yaml"
t_fails "unknown model" 2 'no-such-model.yaml does not exist' make -s -C "$PL" MODEL=no-such-model
# mktraces formats (hand-checked strings)
printf '{"problem":"P","response":"R"}\n' >"$TMP/one.jsonl"
"$PL/bin/mktraces" "$TMP/one.jsonl" chatml 1 "$TMP/f"
t_eq "mktraces chatml" "$(printf '<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\nR')" "$(cat "$TMP/f/t001.txt")"
"$PL/bin/mktraces" "$TMP/one.jsonl" deepseek-r1 1 "$TMP/f"
t_eq "mktraces deepseek-r1" "$(printf '<｜begin▁of▁sentence｜><｜User｜>P<｜Assistant｜><think>\nR')" "$(cat "$TMP/f/t001.txt")"
# every model file configures the pipeline
for y in "$PL"/models/*.yaml; do
	t_match "$(basename "$y"): pipeline section" 'P_model := .+' "$("$PL/bin/yaml2mk" "$y")"
done
t_done
