#!/usr/bin/env bash
# Seed-to-seed variation of Table 6 on CPU: the three Transformer-XL variants of run_table6.sh (config
# proxy_cpu, same steps, complex-order with frequencies starting at 0 as chosen there on validation) trained
# again with other seeds, each evaluated with the training lengths (64/64) on valid and test. Table 6's own
# runs use the config's seed 1111; this adds seeds 2 and 3 by default. Two trainings at a time, one thread
# each; resumable (finished runs are skipped, interrupted ones resume from last.pt).
# FREQ_LR=0.1 also trains the ablation "complex-order with the frequencies' learning rate x0.1" on every seed
# (run directories complex-order-flr0.1-sS). COMPLEX_NETWORK=1 also trains complex-order and complex-vanilla
# with complex hidden states through the whole network (--set model.network=complex; run directories
# complex-order-cnet-sS, complex-vanilla-cnet-sS; about twice the compute of a real-network run).
# WORD_POSITIONS=1 also trains complex-order with each character embedded at its offset in its word
# (--set model.position_mode=word; run directories complex-order-word-sS), two seeds at a time. PE_WORD=1
# trains its control, vanilla plus a learned vector per word offset (--embedding pe --set
# model.position_mode=word; run directories pe-word-sS). TPE_WORD=1 trains the control without parameters, vanilla
# plus the fixed sinusoids of paper Eq. 7 at the word offsets (--embedding tpe --set model.position_mode=word;
# run directories tpe-word-sS).
# BASE=0 skips the three Table 6 variants (for adding an ablation to seeds whose records are committed).
# ONLY="V1 V2 ..." trains exactly the named variants (run-directory names without -sS: vanilla, complex-vanilla,
# complex-order, complex-order-word, pe-word, ...), one lane per variant over the seeds, and ignores the
# switches above. Every complex-order variant starts its frequencies at 0 (model.frequency_init=zeros), except that a
# name ending in -sinusoidal (complex-order-word-sinusoidal, say) starts them at the sinusoids of paper Eq. 7.
#
# Usage (from the repository root):
#   [BASE=0] [ONLY=...] [FREQ_LR=0.1] [COMPLEX_NETWORK=1] [WORD_POSITIONS=1] [PE_WORD=1] [TPE_WORD=1] benchmarks/lm/run_table6_seeds.sh [SHARED_DATA_DIR] [RUN_DIR] [SEEDS]
set -euo pipefail
SHARED=${1:-../shared/data}
RUNS=${2:-runs/lm/seeds}
SEEDS=${3:-2 3}
CO=${CO:-.venv/bin/complexorder}
PY=${PY:-.venv/bin/python}
FREQ_LR=${FREQ_LR:-}
COMPLEX_NETWORK=${COMPLEX_NETWORK:-}
WORD_POSITIONS=${WORD_POSITIONS:-}
PE_WORD=${PE_WORD:-}
TPE_WORD=${TPE_WORD:-}
BASE=${BASE:-1}
export OMP_NUM_THREADS=1
# shellcheck source=benchmarks/lm/lib.sh
source "$(dirname "$0")/lib.sh"

mkdir -p "$RUNS"
[[ -f $RUNS/corpus/manifest.json ]] || $CO lm build-corpus --source-dir "$SHARED" --out "$RUNS/corpus"

train() {  # variant seed [extra arguments]; variant complex-order-flrX is complex-order with frequency lr xX
  local v=$1 s=$2; shift 2
  local run=$RUNS/$v-s$s
  if [[ $v == complex-order*-sinusoidal ]]; then v=${v%-sinusoidal}; set -- "$@" --set model.frequency_init=sinusoidal
  elif [[ $v == complex-order* ]]; then set -- "$@" --set model.frequency_init=zeros; fi
  local embedding=$v
  if [[ $v == complex-order-flr* ]]; then embedding=complex-order; set -- "$@" --set "train.frequency_lr_scale=${v#complex-order-flr}"; fi
  if [[ $v == *-cnet ]]; then embedding=${v%-cnet}; set -- "$@" --set model.network=complex; fi
  if [[ $v == complex-order-word ]]; then embedding=complex-order; set -- "$@" --set model.position_mode=word; fi
  if [[ $v == pe-word || $v == tpe-word ]]; then embedding=${v%-word}; set -- "$@" --set model.position_mode=word; fi
  [[ -f $run.done ]] && return 0
  local resume=""; [[ -f $run/last.pt ]] && resume="--resume"
  $CO lm train --config proxy_cpu --corpus "$RUNS/corpus" --out "$run" --embedding "$embedding" --set "train.seed=$s" "$@" \
     --no-progress $resume >> "$run.train.log" 2>&1 && touch "$run.done"
}
evaluate() {  # variant seed
  local run=$RUNS/$1-s$2
  [[ -f $run.done ]] || { echo "$run has not finished training; not evaluated" >&2; return 1; }
  [[ $run.eval.done -nt $run/best.pt ]] && return 0  # evaluated since its last best.pt (not before a resume)
  $CO lm eval --checkpoint "$run/best.pt" --corpus "$RUNS/corpus" --no-progress \
     --tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length \
     --results "$RUNS/eval_train_lengths.jsonl" >> "$run.eval.log" 2>&1 && touch "$run.eval.done"
}

BASE_VARIANTS=""
ONLY=${ONLY:-}
if [[ -n $ONLY ]]; then
  for v in $ONLY; do ( for s in $SEEDS; do train "$v" "$s"; done ) & done
  wait_all
  BASE_VARIANTS=$ONLY; FREQ_LR=""; COMPLEX_NETWORK=""; WORD_POSITIONS=""; PE_WORD=""; TPE_WORD=""
elif [[ $BASE == 1 ]]; then
  BASE_VARIANTS="vanilla complex-vanilla complex-order"
  ( for s in $SEEDS; do train vanilla "$s"; train complex-order "$s"; done ) &
  ( for s in $SEEDS; do train complex-vanilla "$s"; done ) &
  wait_all
fi
if [[ -n $FREQ_LR ]]; then for s in $SEEDS; do train "complex-order-flr$FREQ_LR" "$s"; done; fi
if [[ -n $COMPLEX_NETWORK ]]; then
  ( for s in $SEEDS; do train complex-order-cnet "$s"; done ) &
  ( for s in $SEEDS; do train complex-vanilla-cnet "$s"; done ) &
  wait_all
fi
if [[ -n $WORD_POSITIONS ]]; then
  read -ra seeds <<< "$SEEDS"
  ( for ((i = 0; i < ${#seeds[@]}; i += 2)); do train complex-order-word "${seeds[i]}"; done ) &
  ( for ((i = 1; i < ${#seeds[@]}; i += 2)); do train complex-order-word "${seeds[i]}"; done ) &
  wait_all
fi
if [[ -n $PE_WORD ]]; then
  read -ra seeds <<< "$SEEDS"
  ( for ((i = 0; i < ${#seeds[@]}; i += 2)); do train pe-word "${seeds[i]}"; done ) &
  ( for ((i = 1; i < ${#seeds[@]}; i += 2)); do train pe-word "${seeds[i]}"; done ) &
  wait_all
fi
if [[ -n $TPE_WORD ]]; then
  read -ra seeds <<< "$SEEDS"
  ( for ((i = 0; i < ${#seeds[@]}; i += 2)); do train tpe-word "${seeds[i]}"; done ) &
  ( for ((i = 1; i < ${#seeds[@]}; i += 2)); do train tpe-word "${seeds[i]}"; done ) &
  wait_all
fi
for s in $SEEDS; do
  for v in $BASE_VARIANTS ${FREQ_LR:+complex-order-flr$FREQ_LR} \
           ${COMPLEX_NETWORK:+complex-order-cnet complex-vanilla-cnet} ${WORD_POSITIONS:+complex-order-word} ${PE_WORD:+pe-word} ${TPE_WORD:+tpe-word}; do
    evaluate "$v" "$s"
  done
done
$PY benchmarks/lm/make_table6_seeds.py --runs "$RUNS" --out benchmarks/results/table6_seeds.md \
   --notes benchmarks/lm/table6_seeds_notes.md
