#!/usr/bin/env bash
# Short tuning runs for the Table 6 benchmark, judged on the validation split only (never test):
# 1500 steps of the proxy_cpu config each (validation every 500 steps on its first 60,000 characters),
# one thread each, resumable; a finished run (RUN.done) is not repeated.
# Usage: benchmarks/lm/calibrate.sh STAGE [CORPUS_DIR] [RUNS_DIR]    (STAGE: 1, 2, 3 or 4)
# Stages 1 and 2 ran two trainings at a time; stage 3 runs beside a benchmark training.
# Note: stage 1 ran on a first build of the proxy corpus that still held SST's -LRB-/-RRB- tokens as
# the words "lrb"/"rrb"; stages 2 and 3 on the final build (runs/lm/table6/corpus).
set -euo pipefail
STAGE=$1
CORPUS=${2:-runs/lm/table6/corpus}
RUNS=${3:-runs/lm/calibrate}
export OMP_NUM_THREADS=1
# shellcheck source=benchmarks/lm/lib.sh
source "$(dirname "$0")/lib.sh"
CO=${CO:-.venv/bin/complexorder}
run() {  # name, then extra arguments
  local name=$1; shift
  [[ -f $RUNS/$name.done ]] && return 0
  local resume=""; [[ -f $RUNS/$name/last.pt ]] && resume="--resume"
  $CO lm train --config proxy_cpu --corpus "$CORPUS" --out "$RUNS/$name" --max-steps 1500 \
     --set train.eval_interval=500 --no-progress $resume "$@" >> "$RUNS/$name.log" 2>&1 && touch "$RUNS/$name.done"
}
mkdir -p "$RUNS"
case $STAGE in
  1)  # complex-order with positions counting across segments against vanilla
    run vanilla --embedding vanilla --set model.position_mode=stream &
    run complex-order-stream --embedding complex-order --set model.position_mode=stream &
    wait_all ;;
  2)  # positions restarting in every segment (the authors' released code), and complex-vanilla
    run complex-order-segment --embedding complex-order --set model.position_mode=segment &
    run complex-vanilla --embedding complex-vanilla --set model.position_mode=stream &
    wait_all ;;
  3)  # complex-order frequencies starting at zero (position-free start) instead of the sinusoidal ones
    run complex-order-segment-zeros --embedding complex-order --set model.position_mode=segment \
        --set model.frequency_init=zeros ;;
  4)  # stop 38: why positions counted across segments do not train. From frequencies at 0 (the run starts
      # as complex-vanilla), at the usual learning rate and at 1e-4 x it: if a slower frequency helps, the
      # cause is the frequencies' gradient, proportional to positions in the millions
    run complex-order-stream-zeros --embedding complex-order --set model.position_mode=stream \
        --set model.frequency_init=zeros &
    run complex-order-stream-zeros-lr1e-4 --embedding complex-order --set model.position_mode=stream \
        --set model.frequency_init=zeros --set train.frequency_lr_scale=1e-4 &
    wait_all ;;
esac
