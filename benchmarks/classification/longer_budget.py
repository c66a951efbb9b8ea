"""Compare units re-run with a longer epoch budget against their shorter-budget records, and against a reference row.

A unit (variant label, seed) re-run with more epochs and nothing else changed trains exactly as before for the epochs
both ran: the trainer has no schedule that depends on the budget and its batch order comes from the seed alone. For each
record of ``--longer`` this script finds the record of the same label and seed in ``--base`` whose settings differ only
in ``epochs`` (a smaller one) and

- checks that premise: the first epochs of the longer run reproduce the base run's train losses and dev accuracies
  exactly (column "same first epochs");
- prints the longer unit's best dev epoch and test accuracy against the base unit's (Δ, points);
- pairs it with the ``--reference`` row (e.g. complex-order) of the same seed and settings. A reference unit that early
  stopping (patience) ended inside its budget would end at the same epoch with any longer budget, so its result stands
  for the longer budget too; one that ran to its last epoch would not, and the Δ is then not given ("n/a").

A unit "catches up" when its Δ to the reference is at least ``--within`` points below (default 2.0, the rule of
Table 4's addendum 8). Usage::

    python benchmarks/classification/longer_budget.py \\
        --longer benchmarks/results/table4_authors_classifier_lr1e-4_24_epochs.jsonl \\
        --base benchmarks/results/table4_authors_classifier_lr1e-4_intel.jsonl \\
               benchmarks/results/table4_authors_classifier_lr1e-4_grid.jsonl \\
        --reference "complex-order, the authors' classifier, lr 1e-4" --cpu Intel
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from complexorder.cli import run_script


def read_records(paths: list[Path], cpu: str | None) -> list[dict]:
    """Every JSON line of ``paths`` (those run on a CPU whose model contains ``cpu``, when given); a line that is not
    JSON is an error naming the file and line."""
    records = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (FileNotFoundError, IsADirectoryError) as e:
            raise SystemExit(f"{path}: cannot read it ({e.strerror}); expected JSON lines from `complexorder ablate`")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                record["config"]["variant"]["label"], record["config"]["settings"]["epochs"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise SystemExit(f"{path}, line {number}: not a record of `complexorder ablate` (a JSON object with "
                                 f"config.variant.label and config.settings.epochs)") from None
            if cpu is None or cpu.lower() in str((record.get("cpu") or {}).get("model") or "").lower():
                records.append(record)
    return records


def label(record: dict) -> str:
    return record["config"]["variant"]["label"]


def settings_but_epochs(record: dict) -> dict:
    return {k: v for k, v in record["config"]["settings"].items() if k != "epochs"}


def shorter_twin(record: dict, candidates: list[dict], wanted_label: str) -> dict | None:
    """The last candidate of ``wanted_label``, the same dataset and seed, whose settings differ from ``record``'s at
    most in a smaller epoch budget (a budget no larger, for another row: the reference)."""
    epochs = record["config"]["settings"]["epochs"]
    found = None
    for c in candidates:
        if label(c) != wanted_label or c["seed"] != record["seed"] or c["dataset"] != record["dataset"]:
            continue
        if settings_but_epochs(c) != settings_but_epochs(record):
            continue
        if wanted_label == label(record):
            if c["config"]["settings"]["epochs"] < epochs and \
                    c["config"].get("embedding_options") == record["config"].get("embedding_options"):
                found = c
        elif c["config"]["settings"]["epochs"] <= epochs:
            found = c
    return found


def same_first_epochs(longer: dict, base: dict) -> bool:
    """Whether the longer run's first epochs are the base run's, train loss and dev accuracy, exactly."""
    keys = ("epoch", "train_loss", "dev_accuracy")
    first = [{k: e.get(k) for k in keys} for e in longer["history"][:len(base["history"])]]
    return first == [{k: e.get(k) for k in keys} for e in base["history"]]


def stopped_by_patience(record: dict) -> bool:
    return record["epochs_run"] < record["config"]["settings"]["epochs"]


def rows(longer: list[dict], base: list[dict], reference: str, within: float) -> list[str]:
    out = ["| row | seed | epochs (run / budget) | best dev epoch | test | base: epochs (run / budget), best, test "
           "| Δ to base, points | same first epochs | reference (seed) test, epochs run / budget | Δ to reference, points "
           f"| within {within:g} points |",
           "|---|---:|---:|---:|---:|---|---:|---|---|---:|---|"]
    for r in sorted(longer, key=lambda r: (label(r), r["seed"])):
        b = shorter_twin(r, base, label(r))
        if b is None:
            raise SystemExit(f"--base: no record of {label(r)!r}, seed {r['seed']}, with the settings of the longer "
                             f"run but fewer epochs than {r['config']['settings']['epochs']}")
        ref = shorter_twin(r, base, reference)
        cells = [label(r).split(",")[0], str(r["seed"]), f"{r['epochs_run']} / {r['config']['settings']['epochs']}",
                 str(r["best_epoch"]), f"{r['test_accuracy']:.4f}",
                 f"{b['epochs_run']} / {b['config']['settings']['epochs']}, {b['best_epoch']}, {b['test_accuracy']:.4f}",
                 f"{100 * (r['test_accuracy'] - b['test_accuracy']):+.2f}",
                 "yes" if same_first_epochs(r, b) else "NO"]
        if ref is None:
            cells += [f"none found for seed {r['seed']}", "n/a", "n/a"]
        else:
            cells.append(f"{ref['test_accuracy']:.4f}, {ref['epochs_run']} / {ref['config']['settings']['epochs']}")
            if stopped_by_patience(ref):
                delta = 100 * (r["test_accuracy"] - ref["test_accuracy"])
                cells += [f"{delta:+.2f}", "yes" if delta >= -within else "no"]
            else:
                cells += ["n/a (the reference ran to its last epoch)", "n/a"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--longer", required=True, nargs="+", type=Path, help="records of the longer-budget units")
    ap.add_argument("--base", required=True, nargs="+", type=Path,
                    help="records holding the same units with fewer epochs, and the reference row")
    ap.add_argument("--reference", required=True, help="the variant label to pair each unit with, seed by seed")
    ap.add_argument("--cpu", default=None, help="only records whose cpu model contains this text (case-insensitive)")
    ap.add_argument("--within", type=float, default=2.0, help="points below the reference still called caught up")
    args = ap.parse_args(argv)
    longer = read_records(args.longer, args.cpu)
    if not longer:
        raise SystemExit(f"--longer: no records{'' if args.cpu is None else f' run on a {args.cpu!r} CPU'} in "
                         f"{', '.join(map(str, args.longer))}")
    print("\n".join(rows(longer, read_records(args.base, args.cpu), args.reference, args.within)))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
