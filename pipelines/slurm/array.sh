#!/usr/bin/env bash
# slurm/array.sh - the pipeline as a Slurm job array: one task per trace
# (actdump -> sinkdetect), then one dependent job for everything over all
# traces (sinklevels, pcaprobe, swapexp, tsne, figures, report).
#
#   pipelines/slurm/array.sh MODEL [SBATCH-FLAGS...]
#       e.g. pipelines/slurm/array.sh Qwen3-14B -p cpu -t 4:00:00 --mem=64G -c 16
#
# The traces' texts are made here first (make OUT/traces/.done, which also
# checks the model folder), so the tasks share nothing they would write at
# once.  Each task runs `make -C pipelines MODEL=X OUT=... OUT/episodes/tNNN.tsv`
# with THREADS = SLURM_CPUS_PER_TASK; outputs are atomic, so resubmitting
# the same array after a failure redoes only the missing traces.
# OUT (default pipelines/out/MODEL) is passed on; other make variables
# (BIN, MODEL_DIR, ...) reach the jobs through the environment, which
# sbatch exports.  SBATCH (default: sbatch on PATH) names the sbatch to use.
set -euo pipefail
model=${1:?usage: slurm/array.sh MODEL [SBATCH-FLAGS...]}; shift
here=$(cd "$(dirname "$0")/.." && pwd)
cfg=$here/models/$model.yaml
[ -r "$cfg" ] || { echo "array.sh: $cfg: no such model" >&2; exit 1; }
out=${OUT:-$here/out/$model}
n=$("$here/bin/yaml2mk" "$cfg" | sed -n 's/^P_n_traces := //p')
make -s -C "$here" MODEL="$model" OUT="$out" "$out/config.mk"
make -s -C "$here" MODEL="$model" OUT="$out" "$out/traces/.done"
sb=${SBATCH:-sbatch}
jid=$("$sb" --parsable --job-name="ss-$model" --array="1-$n" "$@" --wrap \
  "make -C '$here' MODEL='$model' OUT='$out' THREADS=\${SLURM_CPUS_PER_TASK:-1} \
   '$out'/episodes/\$(printf 't%03d' \$SLURM_ARRAY_TASK_ID).tsv")
jid=${jid%%;*}
jid2=$("$sb" --parsable --job-name="ss-$model-all" --dependency="afterok:$jid" "$@" --wrap \
  "make -C '$here' MODEL='$model' OUT='$out' THREADS=\${SLURM_CPUS_PER_TASK:-1}")
echo "array.sh: submitted job array $jid ($n traces) and its report job ${jid2%%;*}" >&2
