#!/usr/bin/env bash
# Table 6 on CPU: Transformer-XL vanilla vs complex-vanilla vs complex-order on the text8-format proxy corpus.
# Same config (proxy_cpu: same layers, same steps); only the word embedding differs. At most two trainings
# at a time, one thread each. Resumable: run it again after an interruption and every training continues
# from its last.pt (finished ones are skipped).
#
# Usage (from the repository root): benchmarks/lm/run_table6.sh [SHARED_DATA_DIR] [RUN_DIR]
set -euo pipefail
SHARED=${1:-../shared/data}
RUNS=${2:-runs/lm/table6}
CO=${CO:-.venv/bin/complexorder}
PY=${PY:-.venv/bin/python}
CAL=${CAL:-runs/lm/calibrate}
export OMP_NUM_THREADS=1
# shellcheck source=benchmarks/lm/lib.sh
source "$(dirname "$0")/lib.sh"

mkdir -p "$RUNS"
[[ -f $RUNS/corpus/manifest.json ]] || $CO lm build-corpus --source-dir "$SHARED" --out "$RUNS/corpus"

train() {  # variant, extra arguments
  local v=$1; shift
  [[ -f $RUNS/$v.done ]] && return 0
  local resume=""; [[ -f $RUNS/$v/last.pt ]] && resume="--resume"
  $CO lm train --config proxy_cpu --corpus "$RUNS/corpus" --out "$RUNS/$v" --embedding "$v" "$@" \
     --no-progress $resume >> "$RUNS/$v.train.log" 2>&1 && touch "$RUNS/$v.done"
}
evaluate() {  # variant (only a finished training: a crashed one still has a best.pt)
  local v=$1
  [[ -f $RUNS/$v.done ]] || { echo "$RUNS/$v has not finished training; not evaluated" >&2; return 1; }
  # the config's [eval] lengths: a longer memory than in training (Dai et al.'s practice)
  $CO lm eval --checkpoint "$RUNS/$v/best.pt" --corpus "$RUNS/corpus" --no-progress \
     --results "$RUNS/eval_long_memory.jsonl" >> "$RUNS/$v.eval.log" 2>&1
  # the training lengths: segments of 64, memory of 64
  $CO lm eval --checkpoint "$RUNS/$v/best.pt" --corpus "$RUNS/corpus" --no-progress \
     --tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length \
     --results "$RUNS/eval_train_lengths.jsonl" >> "$RUNS/$v.eval.log" 2>&1
}
final_valid() {  # calibration run -> its validation BPC at the last step
  tail -n 50 "$CAL/$1/results.jsonl" | grep '"valid"' | tail -n 1 | $PY -c "import json,sys; print(json.loads(sys.stdin.read())['valid_bpc'])"
}

( train vanilla && train complex-vanilla ) &
(
  # complex-order's frequency initialisation is chosen on the validation split (calibration stages 2 and 3)
  benchmarks/lm/calibrate.sh 2 "$RUNS/corpus" "$CAL"
  benchmarks/lm/calibrate.sh 3 "$RUNS/corpus" "$CAL"
  zeros=$(final_valid complex-order-segment-zeros)
  sinusoidal=$(final_valid complex-order-segment)
  [[ -n $zeros && -n $sinusoidal ]] || { echo "calibration runs missing in $CAL; no initialisation chosen" >&2; exit 1; }
  init=sinusoidal
  if $PY -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$zeros" "$sinusoidal"; then init=zeros; fi
  echo "complex-order frequency_init=$init (validation)" > "$RUNS/complex-order.choice"
  train complex-order --set "model.frequency_init=$init"
) &
wait_all
for v in vanilla complex-vanilla complex-order; do evaluate "$v"; done
$PY benchmarks/lm/make_table6.py --runs "$RUNS" --calibration "$CAL" --out benchmarks/results/table6.md
