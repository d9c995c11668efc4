#!/usr/bin/env bash
# The pipeline end to end (pipelines/Makefile) on planted traces
# (sinkplant(1)), the shipped stories260k and the model organism
# (mkorganism): every table and figure of each stage whose program is built
# exists and parses (SVG with xmllint, PNG by its signature), the report
# lists them, and the planted truth is found: plant's levels; the organism's
# levels, norm law and swap decisions (its truth/ tables).
# Stages whose program has not landed are skipped visibly (# SKIP).
# Also: the Slurm wrapper with a stand-in srun on PATH (the real Slurm is
# tests/e2e/slurm.sh), resumability after a failure (a missing model folder,
# a failing stage, a failing command inside a pipe: no partial output, and a
# rerun after the fix continues), `make list` without side effects, no
# stage using a program built under tests/, and the helpers' bad-input
# errors.
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
have() { [ -x "$SS_BIN/$1" ]; }
isvg() { xmllint --noout "$1" 2>/dev/null && grep -q '<svg' "$1"; }
ipng() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

# stage -> program, tables it makes (in OUT/tables), figures
declare -A PROG=([h5]=actdump [episodes]=sinkdetect [levels]=sinklevels [pca]=pcaprobe [swap]=swapexp [tsne]=tsne)
check_model() { # MODEL OUT [MAKE-ARGS...]
	local m=$1 out=$2; shift 2
	t_ok "$m: make -C pipelines runs" make -s -C "$PL" MODEL="$m" OUT="$out" BIN="$SS_BIN" THREADS=1 "$@"
	t_ok "$m: report.md written" test -s "$out/report.md"
	local n; n=$(sed -n 's/^P_n_traces := //p' "$out/config.mk")
	[ -n "${SRC-actdump}" ] && t_eq "$m: one text per trace" "$n" "$(ls "$out"/traces/t*.txt 2>/dev/null | wc -l | tr -d ' ')"
	ck() { # DESC TABLE FIGURE PROGS...
		local d=$1 tab=$2 fig=$3; shift 3
		for p in "$@"; do have "$p" || { t_skip "$m: $d" "$p not built yet"; return; }; done
		# a model without sink levels (stories260k): the level-based figures
		# must be skipped cleanly, saying why
		if [ "$(($(wc -l <"$out/levels.tsv" 2>/dev/null || echo 1) - 1))" -le 0 ] && [ -n "$fig" ] &&
			[[ $fig == fig[34567]_* ]] && grep -q "^$fig: skipped (no" "$out/figs.log"; then
			t_match "$m: $d: skipped without sink levels" "not drawn" "$(grep -i "^\*Figure ${fig:3:1}\." "$out/report.md")"
			return
		fi
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
	local src=${SRC-actdump}
	ck "heatmap (fig 1)" heatmap.tsv fig1_heatmap $src sinkdetect
	ck "valley (fig 2)" primary.tsv fig2_valley $src sinkdetect
	ck "episodes table" lstart_hist.tsv "" $src sinkdetect
	ck "token table (sinkdetect --tokens)" tokens.tsv "" $src sinkdetect
	have sinkdetect && t_match "$m: report shows which tokens become sinks" "^## Which tokens become sinks" "$(cat "$out/report.md")"
	ck "levels (fig 3)" episodes.tsv fig3_levels $src sinkdetect sinklevels
	ck "norm law (fig 4)" normlaw.tsv fig4_normlaw $src sinkdetect sinklevels
	if [ -n "${NOACTS:-}" ]; then
		for f in "PCA (fig 5)" "t-SNE (fig 6)" "swaps (fig 7)"; do t_skip "$m: $f" "planted traces have no model or activations"; done
		return
	fi
	if [ -f "$out/notext" ]; then # actdump without /tokens/text: no control set
		for f in "PCA (fig 5)" "t-SNE (fig 6)" "swaps (fig 7)"; do
			t_match "$m: $f skipped, saying why" 'no /tokens/text' "$(cat "$out/report.md")"
			t_skip "$m: $f" "actdump writes no /tokens/text yet"
		done
		return
	fi
	ck "PCA (fig 5)" pca.tsv fig5_pca actdump sinkdetect sinklevels pcaprobe
	ck "t-SNE (fig 6)" separability.tsv fig6_tsne actdump sinkdetect sinklevels tsne
	ck "swaps (fig 7)" swap.tsv fig7_swap actdump sinkdetect sinklevels swapexp
	ck "cache eviction (fig 8)" kvevict.tsv fig8_kvevict actdump sinkdetect kvevict
}

cells() { # the (l_start:lifetime) cells of a level table, sorted
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "l_start") a = i; if ($i == "lifetime") b = i } next }
		{ print $a ":" $b }' "$1" 2>/dev/null | sort -t: -k1,1n -k2,2n | tr '\n' ' ' | sed 's/ $//'; }
fitv() { awk -F'\t' -v y="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
	$k["scope"] == "all" && $k["y"] == y { print $k[c] }' "$1" 2>/dev/null; }

t0=$(date +%s)
# Planted traces: the statistics stages against plant's truth (12:4, 12:10,
# 18:6 and lifetime slope 4 per ln norm in pipelines/models/planted.yaml).
if [ -x "$SS_BIN/sinkplant" ]; then
	SRC="" NOACTS=1 check_model planted "$TMP/planted"
	if have sinklevels; then
		t_eq "planted: the planted levels are found" "12:4 12:10 18:6" "$(cells "$TMP/planted/levels.tsv")"
		t_num "planted: norm-law slope of lifetime (planted 4)" 4 "$(fitv "$TMP/planted/normlaw.tsv" lifetime slope)" 0.15
		t_num "planted: gnuplot's refit agrees with sinklevels' slope" "$(fitv "$TMP/planted/normlaw.tsv" lifetime slope)" \
			"$(awk -F'\t' '$1 == "lifetime" { print $3 }' "$TMP/planted/tables/normlaw_gnuplot.tsv")" 0.02
		# figure 4 fits the same quantity as sinklevels --fit (score_start)
		t_num "planted: gnuplot's refit of score_start agrees with sinklevels'" "$(fitv "$TMP/planted/normlaw.tsv" score_start slope)" \
			"$(awk -F'\t' '$1 == "score_start" { print $3 }' "$TMP/planted/tables/normlaw_gnuplot.tsv")" 0.00001
		# figure 1's colour scale ends at the strongest cell shown with >= 32
		# queries (computed here from heatmap.tsv), position 0 included, so
		# the primary sink does not saturate
		hs=$TMP/planted/tables/heatmap_scale.tsv
		want=$(awk -F'\t' 'FNR == NR { if (FNR == 2) { N = $1; T = $2; q = $5 } next }
			FNR > 1 && $2 < N && $2 < T - q && $3 > m { m = $3 } END { print m }' "$hs" "$TMP/planted/tables/heatmap.tsv")
		t_num "planted: figure 1's scale tops at the strongest cell shown" "$want" "$(awk -F'\t' 'NR == 2 { print $4 }' "$hs")" 0.01
		p0=$(awk -F'\t' 'NR > 1 && $2 == 0 && $3 > m { m = $3 } END { print m }' "$TMP/planted/tables/heatmap.tsv")
		t_ok "planted: position 0 within figure 1's scale" awk -v a="$p0" -v b="$(awk -F'\t' 'NR == 2 { print $4 }' "$hs")" 'BEGIN { exit !(a <= b * 1.01) }'
	else
		t_skip "planted: levels and law" "sinklevels not built yet"
	fi
else
	t_skip "planted: pipeline" "bin/sinkplant not built"
fi

check_model stories260k "$TMP/stories260k"
# Resumable: after an interruption (one trace's dump lost), a second run
# redoes that trace only.
if have actdump; then
	rm -f "$TMP/stories260k/h5/t001.h5"
	before=$(stat -c %Y "$TMP/stories260k/h5/t002.h5")
	sleep 1
	make -s -C "$PL" MODEL=stories260k OUT="$TMP/stories260k" BIN="$SS_BIN" >/dev/null 2>&1
	t_ok "resume: the missing trace is redone" test -s "$TMP/stories260k/h5/t001.h5"
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
	o=$TMP/organism
	if have actdump && have sinklevels; then
		t_eq "organism: the planted levels are found" "$(cells "$org/truth/levels.tsv")" "$(cells "$o/levels.tsv")"
		t_match "organism: the report says so" 'Planted levels recovered' "$(cat "$o/report.md")"
		want=$(awk -F'\t' '$1 == "ln_norm" && $2 == "lifetime" { print $3 }' "$org/truth/law.tsv")
		t_num "organism: norm-law slope of lifetime (planted $want)" "$want" "$(fitv "$o/normlaw.tsv" lifetime slope)" 0.02
		# fig 3's levels are sinklevels' assignment (assign.tsv), and on the
		# organism every secondary episode sits on its level's planted cell
		bad=$(awk -F'\t' 'FNR == NR { if (FNR > 1) cell[$1] = $2 ":" $3; next }
			FNR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
			{ n++; if (cell[$k["level"]] != $k["l_start"] ":" $k["lifetime"]) print $k["trace"] ":" $k["pos"] ":" $k["level"] }
			END { if (!n) print "no episode" }' "$o/levels.tsv" "$o/tables/episodes.tsv" | head -3 | xargs)
		t_eq "organism: each episode of fig 3 in the level of its planted cell" "" "$bad"
	else
		t_skip "organism: planted levels and law" "actdump or sinklevels not built yet"
	fi
	if have actdump && have swapexp && [ ! -f "$o/notext" ]; then
		# every planted decision (layer, component, prevents) against the suppressed fraction
		# (tables/swap.tsv: l_start comp layer suppression ..., per start layer)
		bad=$(awk -F'\t' 'FNR == NR { if (FNR > 1) { c = $4 == "resid" ? 0 : $4 == "attn_out" ? 1 : 2; w[$2, c, $3 - $2] = $5 } next }
			FNR > 1 && (($1, $2, $3) in w) { n++; if ((w[$1, $2, $3] == 1) != ($4 > 0.5)) print "l_start " $1 " comp " $2 " layer " $3 ": " $4 }
			END { if (!n) print "no swap row matches a planted decision" }' "$org/truth/decision.tsv" "$o/tables/swap.tsv")
		t_eq "organism: swaps suppress exactly where the truth says" "" "$bad"
	else
		t_skip "organism: swap decisions" "actdump or swapexp not built yet"
	fi
else
	t_skip "organism: pipeline" "mkorganism not built yet and examples/organism/ absent"
fi
echo "# both models took $(($(date +%s) - t0)) s (a figure, not a test: speed belongs in make bench)"

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
		BIN="$SS_BIN" SLURM=1 THREADS=1 -j2 \
		"$TMP"/slurm/episodes/t00{1,2,3}.tsv >/dev/null 2>&1
	t_eq "SLURM=1: one job step per trace and stage" 6 "$(grep -c '^srun --ntasks=1 --cpus-per-task=1 --mem=16G --job-name=ss-stories260k :: bash' "$TMP/srun2.log" 2>/dev/null)"
	t_eq "SLURM=1: a step's bash fails on a failing command of a pipe" 'rc=1' \
		"$(PATH=$TMP/fakebin:$PATH SRUN_LOG=$TMP/srun3.log "$PL/bin/srun-shell" -n1 -- -c 'false | true; echo not-reached' 2>&1; echo "rc=$?")"
	t_eq "SLURM=1: same episodes as the local run" "$(cat "$TMP/stories260k"/episodes/*.tsv | md5sum)" \
		"$(cat "$TMP/slurm"/episodes/*.tsv 2>/dev/null | md5sum)"
else
	t_skip "SLURM=1 through make" "actdump/sinkdetect not built yet"
fi

# --- failures, then resumption -------------------------------------------
# files OUT: every file under OUT but config.mk and the traces' text
outputs() { (cd "$1" 2>/dev/null && find . -type f ! -name config.mk ! -path './traces/*' | sort); }
if have actdump && have sinkdetect; then
	# a missing model folder: one line naming it, before any stage, nothing made
	o=$TMP/nomodel
	make -s -C "$PL" MODEL=stories260k OUT="$o" BIN="$SS_BIN" MODEL_DIR="$TMP/m" >"$TMP/nm.out" 2>"$TMP/nm.err"; rc=$?
	t_eq "model folder absent: make fails" 2 "$rc"
	t_match "model folder absent: one line names it" "checkmodel: $TMP/m: no such model folder" "$(head -1 "$TMP/nm.err")"
	t_eq "model folder absent: no stage ran, no output" "" "$(outputs "$o")"
	mkdir -p "$TMP/m" && cp "$SS_ROOT/examples/models/stories260k/config.json" "$TMP/m/"
	make -s -C "$PL" MODEL=stories260k OUT="$o" BIN="$SS_BIN" MODEL_DIR="$TMP/m" >/dev/null 2>"$TMP/nm.err"
	t_match "model folder incomplete: what is missing, in one line" \
		"^checkmodel: $TMP/m: missing weights \(\*\.safetensors\), tokenizer\.json$" "$(grep -v '^make' "$TMP/nm.err")"
	t_eq "model folder incomplete: no output" "" "$(outputs "$o")"
	cp "$SS_ROOT/examples/models/stories260k/"{model.safetensors,tokenizer.json} "$TMP/m/"
	t_ok "model folder completed: the rerun makes the report" make -s -C "$PL" MODEL=stories260k OUT="$o" BIN="$SS_BIN" MODEL_DIR="$TMP/m"
	t_eq "model folder completed: the same episodes as a run that never failed" \
		"$(cat "$TMP/stories260k"/episodes/*.tsv | md5sum)" "$(cat "$o"/episodes/*.tsv 2>/dev/null | md5sum)"

	# a failing stage (sinkdetect fails after writing half a table): nothing
	# of it is left; the rerun after the fix redoes it, not the dumps
	o=$TMP/failstage
	mkdir -p "$TMP/badbin"
	for p in "$SS_BIN"/*; do ln -sf "$p" "$TMP/badbin/"; done
	rm -f "$TMP/badbin/sinkdetect"
	printf '#!/bin/sh\nprintf "pos\\tl_start\\n1\\t"; echo "sinkdetect: disk on fire" >&2; exit 1\n' >"$TMP/badbin/sinkdetect"
	chmod +x "$TMP/badbin/sinkdetect"
	make -s -C "$PL" MODEL=stories260k OUT="$o" BIN="$TMP/badbin" >/dev/null 2>"$TMP/fs.err"; rc=$?
	t_eq "failing stage: make fails" 2 "$rc"
	t_eq "failing stage: no episode table, no temporary, left" "" "$(outputs "$o" | grep -E 'episodes|\.tmp' || true)"
	t_eq "failing stage: the dumps before it are kept" 3 "$(ls "$o"/h5/*.h5 2>/dev/null | wc -l | tr -d ' ')"
	before=$(stat -c %Y "$o"/h5/*.h5 | md5sum)
	sleep 1
	t_ok "failing stage fixed: the rerun makes the report" make -s -C "$PL" MODEL=stories260k OUT="$o" BIN="$SS_BIN"
	t_eq "failing stage fixed: the dumps are not recomputed" "$before" "$(stat -c %Y "$o"/h5/*.h5 | md5sum)"
	t_eq "failing stage fixed: the same episodes as a run that never failed" \
		"$(cat "$TMP/stories260k"/episodes/*.tsv | md5sum)" "$(cat "$o"/episodes/*.tsv 2>/dev/null | md5sum)"
else
	t_skip "failures and resumption" "actdump/sinkdetect not built yet"
fi
# a failing command inside a pipe (tsne failing under bin/tsnescan's
# `tsne | awk`): the t-SNE stage fails, leaves nothing, and reruns after
o=$TMP/organism
if have tsne && [ -s "$o/tsne.tsv" ] && [ "$(wc -l <"$o/levels.tsv")" -gt 1 ]; then
	cp "$o/tsne.tsv" "$TMP/tsne.ok"; cp "$o/separability.tsv" "$TMP/sep.ok"
	rm -f "$o/tsne.tsv" "$o/separability.tsv"
	mkdir -p "$TMP/badtsne"
	for p in "$SS_BIN"/*; do ln -sf "$p" "$TMP/badtsne/"; done
	rm -f "$TMP/badtsne/tsne"
	printf '#!/bin/sh\necho "tsne: out of luck" >&2; exit 1\n' >"$TMP/badtsne/tsne"
	chmod +x "$TMP/badtsne/tsne"
	make -s -C "$PL" MODEL=organism OUT="$o" BIN="$TMP/badtsne" MODEL_DIR="$org" "$o/tsne.tsv" >/dev/null 2>&1; rc=$?
	t_eq "failing command in a pipe: the stage fails" 2 "$rc"
	t_eq "failing command in a pipe: no t-SNE table, no temporary, left" "" "$(outputs "$o" | grep -E '^\./(tsne\.tsv|separability)|\.tmp|\.part' || true)"
	make -s -C "$PL" MODEL=organism OUT="$o" BIN="$SS_BIN" MODEL_DIR="$org" "$o/tsne.tsv" >/dev/null 2>&1
	t_ok "failing command in a pipe, fixed: the rerun makes the same t-SNE tables" \
		bash -c 'cmp "$1" "$2" && cmp "$3" "$4"' _ "$TMP/tsne.ok" "$o/tsne.tsv" "$TMP/sep.ok" "$o/separability.tsv"
else
	t_skip "failing command in a pipe" "no organism levels or tsne"
fi

# make list: the models, nothing written
mkdir -p "$TMP/listcopy" && cp -r "$PL" "$TMP/listcopy/pipelines" && rm -rf "$TMP/listcopy/pipelines/out"
snap() { (cd "$TMP/listcopy" && find . -printf '%p %s %T@\n' | sort); }
s0=$(snap)
l=$(make -s -C "$TMP/listcopy/pipelines" list 2>&1)
t_eq "make list: the models" "$(cd "$PL/models" && ls *.yaml | sed 's/\.yaml$//')" "$l"
t_eq "make list: no side effects (nothing written)" "$s0" "$(snap)"
# no stage uses a program built under tests/ (build/tools)
t_eq "no pipeline stage uses a program built under tests/" "" \
	"$(grep -nE 'build/tools|tests/tools|TOKENIZE|PLANT' "$PL/Makefile" "$PL"/bin/* "$PL"/slurm/* || true)"

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
