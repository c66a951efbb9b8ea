#!/usr/bin/env bash
# Short tuning runs for the Table 6 benchmark, judged on the validation split only (never test).
# 1500 steps of the proxy_cpu config each; two at a time, one thread each, resumable (--resume).
# Usage: benchmarks/lm/calibrate.sh [CORPUS_DIR] [RUNS_DIR]
set -euo pipefail
CORPUS=${1:-runs/lm/corpus}
RUNS=${2:-runs/lm/calibrate}
export OMP_NUM_THREADS=1
CO=${CO:-.venv/bin/complexorder}
run() {  # name, then extra arguments
  local name=$1; shift
  local resume=""; [[ -f $RUNS/$name/last.pt ]] && resume="--resume"
  $CO lm train --config proxy_cpu --corpus "$CORPUS" --out "$RUNS/$name" --max-steps 1500 \
     --set train.eval_interval=500 --no-progress $resume "$@" > "$RUNS/$name.log" 2>&1
}
mkdir -p "$RUNS"
run vanilla --embedding vanilla &
run complex-order-stream --embedding complex-order &
wait
run complex-order-segment --embedding complex-order --set model.position_mode=segment &
run complex-order-stream-freqlr0.01 --embedding complex-order --set train.frequency_lr_scale=0.01 &
wait
for f in "$RUNS"/*.log; do echo "$f: $(tail -n 1 "$f")"; done
