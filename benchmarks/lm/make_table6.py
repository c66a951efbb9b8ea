"""Write benchmarks/results/table6.md from the run directories of benchmarks/lm/run_table6.sh.

Every number comes from the JSON lines the runs wrote; the paper's numbers from
../shared/paper-results/table6.csv; the hand-written discussion from benchmarks/lm/table6_notes.md.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

VARIANTS = ("vanilla", "complex-vanilla", "complex-order")
HERE = Path(__file__).resolve().parent
CALIBRATION = {
    "vanilla": "stage 1: reference (first corpus build)",
    "complex-order-stream": "stage 1: positions counting across segments (first corpus build)",
    "complex-order-segment": "stage 2: positions restarting in every segment, sinusoidal frequencies",
    "complex-vanilla": "stage 2: reference",
    "complex-order-segment-zeros": "stage 3: positions per segment, frequencies starting at 0",
    "complex-order-stream-zeros": "stage 4 (stop 38): positions across segments, frequencies from 0",
    "complex-order-stream-zeros-lr1e-4": "stage 4 (stop 38): the same, frequencies' learning rate x 1e-4",
}
CALIBRATION_COMMANDS = {
    "vanilla": (1, "--embedding vanilla --set model.position_mode=stream"),
    "complex-order-stream": (1, "--embedding complex-order --set model.position_mode=stream"),
    "complex-order-segment": (2, "--embedding complex-order --set model.position_mode=segment"),
    "complex-vanilla": (2, "--embedding complex-vanilla --set model.position_mode=stream"),
    "complex-order-segment-zeros": (3, "--embedding complex-order --set model.position_mode=segment "
                                       "--set model.frequency_init=zeros"),
    "complex-order-stream-zeros": (4, "--embedding complex-order --set model.position_mode=stream "
                                      "--set model.frequency_init=zeros"),
    "complex-order-stream-zeros-lr1e-4": (4, "--embedding complex-order --set model.position_mode=stream "
                                             "--set model.frequency_init=zeros --set train.frequency_lr_scale=1e-4"),
}


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def last_eval(path: Path, variant: str) -> dict | None:
    rows = [r for r in read_jsonl(path) if r.get("embedding") == variant]
    return rows[-1] if rows else None


def fmt(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def run_summary(run: Path) -> dict | None:
    records = read_jsonl(run / "results.jsonl")
    valid = [r for r in records if r.get("event") == "valid"]
    train = [r for r in records if r.get("event") == "train"]
    if not valid:
        return None
    cfg = valid[-1]["config"]
    best = min(valid, key=lambda r: r["valid_bpc"])
    return {"config": cfg, "parameters": valid[-1]["parameters"], "steps": valid[-1]["step"],
            "train_seconds": valid[-1]["train_seconds"], "best_valid": best["valid_bpc"], "best_step": best["step"],
            "chars_per_second": sum(r["chars_per_second"] for r in train) / max(1, len(train)),
            "curve": [(r["step"], r["valid_bpc"]) for r in valid]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", default="runs/lm/table6")
    ap.add_argument("--calibration", default="runs/lm/calibrate")
    ap.add_argument("--paper", default="../shared/paper-results/table6.csv")
    ap.add_argument("--notes", default=str(HERE / "table6_notes.md"))
    ap.add_argument("--out", default="benchmarks/results/table6.md")
    args = ap.parse_args()
    runs = Path(args.runs)
    manifest = json.loads((runs / "corpus" / "manifest.json").read_text())
    summaries = {v: run_summary(runs / v) for v in VARIANTS}
    for v, s in summaries.items():  # a crashed run still has a best.pt: never render it as a finished one
        if s and s["steps"] < s["config"]["train"]["max_steps"]:
            raise SystemExit(f"{runs / v}: training stopped at step {s['steps']:,} of "
                             f"{s['config']['train']['max_steps']:,}; finish it (resume) first")
    cfg = next(s["config"] for s in summaries.values() if s)
    m, t, e = cfg["model"], cfg["train"], cfg["eval"]
    lines = ["# Table 6 — character-level language modelling (bits per character), CPU reproduction", ""]
    sizes = manifest["splits"]
    lines += [
        f"Transformer-XL with three word embeddings, trained and tested on the **text8-format proxy corpus** "
        f"built from the English text in `../shared/data` (text8 itself is not available on this machine): "
        f"{manifest['characters']:,} characters after normalisation and de-duplication "
        f"(train {sizes['train']['characters']:,} / valid {sizes['valid']['characters']:,} / "
        f"test {sizes['test']['characters']:,}).",
        "",
        f"Same network for all rows: {m['n_layer']} layers, d_model {m['d_model']}, {m['n_head']} heads of "
        f"{m['d_head']}, d_inner {m['d_inner']}, dropout {m['dropout']}; training segments of {t['tgt_len']} "
        f"characters with a memory of {m['mem_len']}, batch {t['batch_size']}, {t['max_steps']:,} Adam steps "
        f"(lr {t['lr']}, {t['warmup_steps']} warm-up steps, cosine decay), seed {t['seed']}. The weights with the "
        f"best validation BPC (first {t['eval_max_chars']:,} validation characters, checked every "
        f"{t['eval_interval']:,} steps) are evaluated on the full validation and test splits. One thread per "
        f"training on a shared 2-core CPU.",
        "",
        "| model (ours) | parameters | steps | training time | chars/s | valid BPC (64/64) | **test BPC (64/64)** "
        "| valid BPC (long memory) | **test BPC (long memory)** |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in VARIANTS:
        s = summaries[v]
        short = last_eval(runs / "eval_train_lengths.jsonl", v)
        long = last_eval(runs / "eval_long_memory.jsonl", v)
        if s is None:
            lines.append(f"| Transformer-XL {v} | not run | | | | | | | |")
            continue
        mode = s["config"]["model"]["position_mode"]
        name = f"Transformer-XL {v}" + (f" (positions: {mode})" if v == "complex-order" else "")
        lines.append(
            f"| {name} | {s['parameters']:,} | {s['steps']:,} | {s['train_seconds'] / 60:.1f} min | "
            f"{s['chars_per_second']:,.0f} | {fmt(short and short['valid_bpc'])} | **{fmt(short and short['test_bpc'])}** | "
            f"{fmt(long and long['valid_bpc'])} | **{fmt(long and long['test_bpc'])}** |")
    lines += ["",
              f"*64/64*: evaluated with the training lengths (segments of 64, memory 64). *Long memory*: the config's "
              f"evaluation setting, segments of {e['tgt_len']}, memory {e['mem_len']}, clamp_len {e['clamp_len']}, "
              f"same_length={str(e['same_length']).lower()} (Dai et al. evaluate text8 with 80 / 2100 / 820 / same_length). "
              f"Training time counts the optimisation steps only (no validation).", ""]
    lines += ["Validation BPC during training (first "
              f"{t['eval_max_chars']:,} validation characters):", "",
              "| step | " + " | ".join(v for v in VARIANTS if summaries[v]) + " |",
              "|---:|" + "---:|" * sum(1 for v in VARIANTS if summaries[v])]
    steps = sorted({st for s in summaries.values() if s for st, _ in s["curve"]})
    for st in steps:
        row = [fmt(dict(summaries[v]["curve"]).get(st)) for v in VARIANTS if summaries[v]]
        lines.append(f"| {st:,} | " + " | ".join(row) + " |")
    lines += ["", "## The paper's Table 6 (text8, 6 layers, GPU)", "",
              "| method | BPC (text8) | reported from other papers |", "|---|---:|---|"]
    with open(args.paper, newline="") as fh:
        for row in csv.DictReader(fh):
            lines.append(f"| {row['method']} | {row['bpc_text8']} | {row['reported_from_other_papers']} |")
    calib = Path(args.calibration)
    rows = []
    for run in sorted(p for p in calib.glob("*") if p.is_dir()):
        s = run_summary(run)
        if s:
            rows.append(f"| {run.name} | {CALIBRATION.get(run.name, '')} | {s['steps']:,} | "
                        + " / ".join(f"{fmt(b)}" for _, b in s["curve"]) + " |")
    if rows:
        lines += ["", "## Choices made on the validation split (short runs, never the test split)", "",
                  "`benchmarks/lm/calibrate.sh`: the proxy_cpu config for 1,500 steps, validation BPC on the first "
                  f"{t['eval_max_chars']:,} validation characters every 500 steps.", "",
                  "| run | what it tests | steps | valid BPC at 500 / 1000 / 1500 steps |", "|---|---|---:|---|",
                  *rows]
    lines += ["", "## Commands", "", "```bash",
              "# everything below, resumable: benchmarks/lm/run_table6.sh ../shared/data runs/lm/table6",
              f"complexorder lm build-corpus --source-dir ../shared/data --out {runs}/corpus"]
    for v in VARIANTS:
        s = summaries[v]
        init = s["config"]["model"]["frequency_init"] if s else "sinusoidal"
        extra = f" --set model.frequency_init={init}" if v == "complex-order" and init != "sinusoidal" else ""
        lines.append(f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {runs}/corpus "
                     f"--out {runs}/{v} --embedding {v}{extra}")
    for v in VARIANTS:
        lines.append(f"OMP_NUM_THREADS=1 complexorder lm eval --checkpoint {runs}/{v}/best.pt --corpus {runs}/corpus "
                     f"--results {runs}/eval_long_memory.jsonl")
        lines.append(f"OMP_NUM_THREADS=1 complexorder lm eval --checkpoint {runs}/{v}/best.pt --corpus {runs}/corpus "
                     f"--tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length "
                     f"--results {runs}/eval_train_lengths.jsonl")
    lines += [f"python benchmarks/lm/make_table6.py --runs {runs} --out benchmarks/results/table6.md", "",
              "# calibration on the validation split: benchmarks/lm/calibrate.sh STAGE CORPUS runs/lm/calibrate"]
    for name, (stage, args_) in CALIBRATION_COMMANDS.items():
        corpus = "runs/lm/corpus" if stage == 1 else f"{runs}/corpus"
        lines.append(f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {corpus} "
                     f"--out runs/lm/calibrate/{name} --max-steps 1500 --set train.eval_interval=500 {args_}")
    lines += ["```", "",
              "Stage 1 used `runs/lm/corpus`, a first build of the proxy corpus by commit 978f2e4, before SST's "
              "`-LRB-`/`-RRB-` tokens were read as brackets (they stayed in the text as the words *lrb*/*rrb*); "
              "every other run uses the final build.", ""]
    notes = Path(args.notes)
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
