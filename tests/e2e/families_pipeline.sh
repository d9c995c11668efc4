#!/usr/bin/env bash
# The whole study (pipelines/Makefile, a model file per model as in
# pipelines/models/*.yaml) on a small random model of each family beyond the
# paper's (tests/tools/mkmodel.py; stories260k's tokenizer, vocabulary 512):
# GPT-2, GPT-NeoX, Gemma 2, Gemma 3, OLMo 2, Mixtral, Qwen2-MoE, Qwen3-MoE.
# Each run must finish with its report; its traces must carry the family's
# architecture, and the MoE traces their routing (/stats/moe_experts).
# Random models have no secondary sinks worth the name: the level-based
# stages are skipped by the pipeline itself, saying why (as for stories260k).
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
MK=$SS_ROOT/tests/tools/mkmodel.py
for p in actdump sinkdetect sinklevels; do
	[ -x "$SS_BIN/$p" ] || { t_skip "family pipelines" "$p not built yet"; t_done; exit 0; }
done
if ! have_py numpy || ! have_py h5py; then t_skip "family pipelines" "numpy or h5py absent"; t_done; exit 0; fi
mkdir -p "$TMP/models"
declare -A arch=([gpt2]=GPT2LMHeadModel [neox]=GPTNeoXForCausalLM [gemma2]=Gemma2ForCausalLM
	[gemma3]=Gemma3ForCausalLM [olmo2]=Olmo2ForCausalLM [mixtral]=MixtralForCausalLM
	[qwen2moe]=Qwen2MoeForCausalLM [qwen3moe]=Qwen3MoeForCausalLM)
for f in gpt2 neox gemma2 gemma3 olmo2 mixtral qwen2moe qwen3moe; do
	d=$TMP/m-$f
	$PY "$MK" --arch "$f" --layers 4 --vocab 512 --window 48 "$d" >/dev/null || { t_fail "$f: mkmodel.py"; continue; }
	cp "$SS_ROOT/examples/models/stories260k/tokenizer.json" "$d/"
	cat >"$TMP/models/fam-$f.yaml" <<EOF
# a random ${arch[$f]} (tests/e2e/families_pipeline.sh)
pipeline:
  model: $d
  architecture: ${arch[$f]}
  n_layers: 4
  traces: $SS_ROOT/examples/traces/aime24.jsonl
  field: problem
  prompt: raw
  n_traces: 1
  max_tokens: 96
  acts_layers: 1-4
  tsne_before: 2
  heatmap_trace: t001
  kv_budgets: 8,16,32
  expect: "a random model: primary sink at position 0"
EOF
	out=$TMP/out/fam-$f
	if make -s -C "$PL" MODELS_DIR="$TMP/models" OUT_ROOT="$TMP/out" MODEL="fam-$f" BIN="$SS_BIN" THREADS=1 \
		>"$TMP/$f.log" 2>&1; then
		t_ok "$f: the pipeline runs to its report" test -s "$out/report.md"
	else
		t_fail "$f: the pipeline runs" "$(tail -3 "$TMP/$f.log")"; continue
	fi
	h=$(ls "$out"/h5/*.h5 2>/dev/null | head -1)
	got=$($PY -c "
import h5py, sys
f = h5py.File(sys.argv[1])
a = f.attrs['architecture']; a = a.decode() if isinstance(a, bytes) else a
print(a, 'moe' if 'stats/moe_experts' in f else 'dense')" "$h" 2>&1)
	case $f in mixtral|qwen*moe) want="${arch[$f]} moe" ;; *) want="${arch[$f]} dense" ;; esac
	t_eq "$f: the trace is of ${arch[$f]}${want#* }" "$want" "$got"
done
t_done
