"""Paper Table 5 on CPU: vanilla vs complex-vanilla vs complex-order Transformers on Multi30k En->De.

Runs, from the project root, in three idempotent phases (each skips what is already done, and
trainings resume from their last checkpoint, so the script can simply be started again):

1. ``train``: ``complexorder translate train --config cpu-<variant>`` for the three variants
   (same steps, batch, schedule; parameters within 10 %), at most ``--jobs`` at a time, each with
   ``OMP_NUM_THREADS=1``; logs in ``runs/table5/<variant>.log``.
2. ``eval``: for each variant, the last checkpoint and the average of the last three epoch
   checkpoints are scored on **val**; the better one (tokenized lower-cased BLEU) is then scored
   once on test2016. test2016 is never used for any choice.
3. ``table``: writes ``benchmarks/results/table5.md`` from the recorded results.

Usage::

    nohup python benchmarks/translation/run_table5.py --data-dir ../shared/data > runs/table5/driver.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

VARIANTS = ("vanilla", "complex-vanilla", "complex-order")
PAPER = Path("/work/shared/paper-results/table5.csv")
PAPER_ROW = {"vanilla": "Transformer (Ma et al. 2019)", "complex-vanilla": "Transformer complex vanilla",
             "complex-order": "Transformer complex-order"}
AVERAGE_LAST = 3


def cli(*args: str) -> list[str]:
    return ["complexorder", *args]


def shell(cmd: list[str]) -> str:
    return " ".join(cmd)


def train_command(variant: str, data_dir: str, root: Path) -> list[str]:
    return cli("translate", "train", "--config", f"cpu-{variant}", "--run-dir", str(root / variant),
               "--data-dir", data_dir, "--no-progress")


def finished(run_dir: Path) -> bool:
    last = run_dir / "last.pt"
    if not last.is_file():
        return False
    ck = torch.load(last, map_location="cpu", weights_only=True)
    budget = ck["config"]["train"]["max_steps"]
    return ck["progress"]["step"] >= budget


def phase_train(args, root: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    pending = [v for v in args.variants if not finished(root / v)]
    running: dict[str, subprocess.Popen] = {}
    while pending or running:
        while pending and len(running) < args.jobs:
            variant = pending.pop(0)
            cmd = train_command(variant, args.data_dir, root)
            print(f"[{time.strftime('%H:%M:%S')}] start: OMP_NUM_THREADS=1 {shell(cmd)}", flush=True)
            log = open(root / f"{variant}.log", "a")
            running[variant] = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(20)
        for variant, proc in list(running.items()):
            if proc.poll() is not None:
                print(f"[{time.strftime('%H:%M:%S')}] {variant} exited with {proc.returncode}", flush=True)
                del running[variant]
                if proc.returncode != 0:
                    raise SystemExit(f"training {variant} failed; see {root / f'{variant}.log'}")


def results(root: Path) -> list[dict]:
    path = root / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def evaluate(checkpoint: Path, split: str, args, root: Path, tag: str) -> dict:
    for row in results(root):
        if row["checkpoint"] == str(checkpoint) and row["split"] == split:
            return row
    cmd = cli("translate", "eval", "--checkpoint", str(checkpoint), "--split", split, "--data-dir", args.data_dir,
              "--results", str(root / "results.jsonl"), "--hypotheses", str(root / f"{tag}.{split}.hyp"),
              "--no-progress")
    print(f"[{time.strftime('%H:%M:%S')}] OMP_NUM_THREADS=1 {shell(cmd)}", flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    row = [r for r in results(root) if r["checkpoint"] == str(checkpoint) and r["split"] == split][-1]
    row["command"] = "OMP_NUM_THREADS=1 " + shell(cmd)
    return row


def phase_eval(args, root: Path) -> None:
    for variant in args.variants:
        run_dir = root / variant
        epochs = sorted(run_dir.glob("epoch*.pt"), key=lambda p: int(p.stem[5:]))[-AVERAGE_LAST:]
        averaged = run_dir / f"average-last{AVERAGE_LAST}.pt"
        avg_cmd = cli("translate", "average", *map(str, epochs), "--output", str(averaged))
        if not averaged.is_file():
            print(f"[{time.strftime('%H:%M:%S')}] {shell(avg_cmd)}", flush=True)
            subprocess.run(avg_cmd, check=True)
        candidates = {"last": run_dir / "last.pt", f"average-last{AVERAGE_LAST}": averaged}
        val = {name: evaluate(path, "val", args, root, f"{variant}-{name}") for name, path in candidates.items()}
        best = max(val, key=lambda name: val[name]["bleu_tok_lc"])
        test = evaluate(candidates[best], "test2016", args, root, f"{variant}-{best}")
        summary = {"variant": variant, "selected": best, "val": val, "test": test, "average_command": shell(avg_cmd)}
        (root / f"{variant}.summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))


def paper_numbers() -> dict[str, str]:
    if not PAPER.is_file():
        return {}
    rows = [line.split(",") for line in PAPER.read_text().splitlines()[1:] if line.strip()]
    return {r[0]: r[1] for r in rows}


def phase_table(args, root: Path) -> None:
    paper = paper_numbers()
    rows, commands = [], []
    for variant in args.variants:
        s = json.loads((root / f"{variant}.summary.json").read_text())
        last = torch.load(root / variant / "last.pt", map_location="cpu", weights_only=True)
        prog, cfg = last["progress"], last["config"]
        val, test = s["val"][s["selected"]], s["test"]
        rows.append(f"| {variant} | {last['parameters']:,} | {prog['step']:,} | "
                    f"{prog['train_seconds'] / 60:.0f} / {prog['train_cpu_seconds'] / 60:.0f} | {s['selected']} | "
                    f"{val['bleu_tok_lc']:.2f} | **{test['bleu_tok_lc']:.2f}** | {test['bleu']:.2f} | "
                    f"{paper.get(PAPER_ROW[variant], 'n/a')} |")
        commands += [f"OMP_NUM_THREADS=1 {shell(train_command(variant, args.data_dir, root))}", s["average_command"]]
        commands += [r["command"] for r in s["val"].values() if "command" in r]
        if "command" in s["test"]:
            commands.append(s["test"]["command"])
        sig_detok, sig_lc = test["bleu_signature"], test["bleu_tok_lc_signature"]
        model = cfg["model"]
    table = "\n".join(rows)
    text = TEMPLATE.format(table=table, commands="\n".join(commands), sig_detok=sig_detok, sig_lc=sig_lc,
                           machine=f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}",
                           paper_vanilla=paper.get(PAPER_ROW["vanilla"], "n/a"),
                           paper_order=paper.get(PAPER_ROW["complex-order"], "n/a"), model=model)
    out = Path("benchmarks/results/table5.md")
    out.write_text(text)
    print(f"wrote {out}")


TEMPLATE = """# Table 5 (machine translation, Multi30k En→De) — CPU reproduction at equal budget

Generated by `benchmarks/translation/run_table5.py` ({machine}).

| model | parameters | steps | training time, min (wall / CPU) | checkpoint (chosen on val) | val BLEU tok-lc | **test2016 BLEU tok-lc** | test2016 BLEU detok | paper Table 5 |
|---|---:|---:|---:|---|---:|---:|---:|---:|
{table}

- **tok-lc**: tokenized, lower-cased BLEU, the figure comparable with the paper's Table 5 (`{sig_lc}`).
- **detok**: detokenized, case-sensitive BLEU (`{sig_detok}`).
- Beam 5, length penalty 1.0 (score / length), max length 1.5 × source + 10.

## Commands (run from the project root)

```
{commands}
```
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--root", default="runs/table5", help="run directories and logs")
    parser.add_argument("--jobs", type=int, default=2, help="trainings at a time (default 2)")
    parser.add_argument("--phases", default="train,eval,table")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    args.variants = [v for v in args.variants.split(",") if v]
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    for phase in args.phases.split(","):
        {"train": phase_train, "eval": phase_eval, "table": phase_table}[phase](args, root)


if __name__ == "__main__":
    sys.exit(main())
