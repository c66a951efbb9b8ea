"""Stop 71: TPE on CR with Table 2's patience 3 against no early stopping (rule: tpe_cr_patience_rule.md).

Reads the JSON-lines results of the five configs ``benchmarks/classification/explore/tpe_cr_*.toml`` and prints, as
Markdown, per model: each row's mean test accuracy, the folds ending at the majority class (test within 0.005 of
0.637 with the best dev epoch 1), the best and last epochs; the one-sided Wilcoxon tests the rule names; and a check
that each no-early-stop unit's first epochs reproduce its patience-3 twin exactly (patience changes when training
stops, nothing else). Usage::

    python benchmarks/classification/tpe_cr_patience.py --patience3 runs/stop71/cr_patience3.jsonl \\
        runs/stop71/cr_freqlr_patience3.jsonl --no-early-stop runs/stop71/cr_no_early_stop.jsonl \\
        runs/stop71/cr_freqlr_no_early_stop.jsonl --other runs/stop71/cr_position_scale.jsonl \\
        --above-majority runs/stop72/cr_above_majority.jsonl

``--above-majority`` (stop 72, the rule's second addendum) adds the units of ``tpe_cr_above_majority.toml``
(patience 3 counted only once dev beats the dev majority rate): their rows, their tests, and the check that every
unit whose first dev accuracy is above its ``dev_majority_rate`` repeats its patience-3 twin exactly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from complexorder.cli import run_script  # noqa: E402
from complexorder.experiments.report import paired_wilcoxon  # noqa: E402

MAJORITY = 0.637
MODELS = ("fasttext", "cnn", "lstm")


def read(paths: list[str]) -> list[dict]:
    records = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise SystemExit(f"{path}: cannot read it ({e.strerror}); expected `complexorder classify` results")
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    raise SystemExit(f"{path}, line {number}: not JSON; expected `complexorder classify` results")
    return records


def by_fold(records: list[dict], model: str, label: str) -> dict[str, dict]:
    """The latest record (by ``finished_at``) of each fold, as ``complexorder report`` keeps."""
    folds: dict[str, dict] = {}
    for r in records:
        if r["model"] == model and r["variant"] == label and \
                (r["split"] not in folds or r.get("finished_at", "") >= folds[r["split"]].get("finished_at", "")):
            folds[r["split"]] = r
    return folds


def at_majority(r: dict) -> bool:
    return abs(r["test_accuracy"] - MAJORITY) <= 0.005 and r["best_epoch"] == 1


def summary(units: dict[str, dict]) -> str:
    if not units:
        return "| — | — | — | — | — |"
    acc = [u["test_accuracy"] for u in units.values()]
    sd = statistics.stdev(acc) if len(acc) > 1 else 0.0
    return (f"| {statistics.mean(acc):.3f} ± {sd:.3f} | {len(units)} | {sum(map(at_majority, units.values()))} | "
            f"{statistics.mean(u['best_epoch'] for u in units.values()):.1f} | "
            f"{statistics.mean(u['epochs_run'] for u in units.values()):.1f} |")


def test(ours: dict[str, dict], theirs: dict[str, dict]) -> str:
    p, n = paired_wilcoxon({s: r["test_accuracy"] for s, r in ours.items()},
                           {s: r["test_accuracy"] for s, r in theirs.items()})
    if not n:
        return "— | — | 0"
    diff = statistics.mean(ours[s]["test_accuracy"] - theirs[s]["test_accuracy"] for s in set(ours) & set(theirs))
    return f"{100 * diff:+.2f} | {p:.4g} | {n}"


def same_first_epochs(short: dict[str, dict], long: dict[str, dict]) -> tuple[int, int]:
    same = total = 0
    for split in set(short) & set(long):
        a, b = short[split]["history"], long[split]["history"]
        total += 1
        same += all(x == y for x, y in zip(a, b)) and len(b) >= len(a)
    return same, total


def option_check(option: dict[str, dict], twin: dict[str, dict]) -> str:
    """The rule's check (i) over the folds both runs have: ``k of n | m of n | c of m``: units starting above their
    dev majority rate that repeat their twin; units starting at or below it that the option changed; and of those
    changed, how many had ended at the majority class under patience 3."""
    eligible = same = low = changed = collapsed = 0
    for split in sorted(set(option) & set(twin)):
        o, t = option[split], twin[split]
        if "dev_majority_rate" not in o:
            raise SystemExit(f"--above-majority: the {o['model']} {o['variant']} {split} record has no dev_majority_rate; "
                             "expected the results of tpe_cr_above_majority.toml (records written since stop 72)")
        identical = o["history"] == t["history"] and o["test_accuracy"] == t["test_accuracy"]
        if o["history"][0]["dev_accuracy"] > o["dev_majority_rate"]:
            eligible, same = eligible + 1, same + identical
        else:
            low, changed = low + 1, changed + (not identical)
            collapsed += not identical and at_majority(t)
    return f"{same} of {eligible} | {changed} of {low} | {collapsed} of {changed}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patience3", nargs="+", required=True, help="results of the patience-3 configs")
    parser.add_argument("--no-early-stop", nargs="+", required=True, help="results of the no-early-stop configs")
    parser.add_argument("--other", nargs="*", default=[], help="exploratory rows (patience 3), shown beside")
    parser.add_argument("--above-majority", nargs="*", default=[],
                        help="results of tpe_cr_above_majority.toml (patience 3 counted above the majority rate)")
    args = parser.parse_args(argv)
    a, b, other = read(args.patience3), read(args.no_early_stop), read(args.other)
    above = read(args.above_majority)
    above_name = "patience 3 above the majority rate"
    rows = ("tpe", "complex-order", "complex-order, frequency lr x0.1")
    out = ["| model | row | setting | test accuracy (mean ± sd) | folds | at the majority class | best epoch (mean) | "
           "epochs run (mean) |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for model in MODELS:
        for label in rows:
            for name, records in (("patience 3 (Table 2)", a), ("no early stop", b)):
                out.append(f"| {model} | {label} | {name} {summary(by_fold(records, model, label))}")
        for label in dict.fromkeys(r["variant"] for r in other):
            out.append(f"| {model} | {label} | patience 3 (Table 2) {summary(by_fold(other, model, label))}")
        if above:
            for label in rows[:2]:
                out.append(f"| {model} | {label} | {above_name} {summary(by_fold(above, model, label))}")
    out += ["", "| model | comparison | mean Δ (points) | p (one-sided, first above) | folds |", "|---|---|---:|---:|---:|"]
    for model in MODELS:
        tpe_a, tpe_b = by_fold(a, model, "tpe"), by_fold(b, model, "tpe")
        for label in rows[1:]:
            co_a, co_b = by_fold(a, model, label), by_fold(b, model, label)
            out.append(f"| {model} | {label} (patience 3) above TPE (patience 3) | {test(co_a, tpe_a)} |")
            out.append(f"| {model} | {label} (no early stop) above TPE (no early stop) | {test(co_b, tpe_b)} |")
            out.append(f"| {model} | {label} (patience 3) above TPE (no early stop) | {test(co_a, tpe_b)} |")
        out.append(f"| {model} | TPE no early stop above TPE patience 3 | {test(tpe_b, tpe_a)} |")
        for label in dict.fromkeys(r["variant"] for r in other):
            out.append(f"| {model} | {label} above TPE (patience 3) | {test(by_fold(other, model, label), tpe_a)} |")
        if above:
            tpe_m = by_fold(above, model, "tpe")
            out.append(f"| {model} | complex-order (patience 3) above TPE ({above_name}) | "
                       f"{test(by_fold(a, model, 'complex-order'), tpe_m)} |")
            out.append(f"| {model} | TPE ({above_name}) above TPE patience 3 | {test(tpe_m, tpe_a)} |")
            out.append(f"| {model} | TPE no early stop above TPE ({above_name}) | {test(tpe_b, tpe_m)} |")
    out += ["", "| model | row | no-early-stop units whose first epochs equal their patience-3 twin's |", "|---|---|---:|"]
    for model in MODELS:
        for label in rows:
            same, total = same_first_epochs(by_fold(a, model, label), by_fold(b, model, label))
            out.append(f"| {model} | {label} | {same} of {total} |")
    if above:
        out += ["", "| model | row | units starting above the dev majority rate: identical to their patience-3 twin | "
                "units starting at or below it: changed by the option | changed units that had ended at the majority "
                "class at patience 3 |", "|---|---|---:|---:|---:|"]
        for model in MODELS:
            for label in rows[:2]:
                out.append(f"| {model} | {label} | {option_check(by_fold(above, model, label), by_fold(a, model, label))} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
