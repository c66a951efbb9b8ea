"""Compare the same rows trained under two settings (two sets of results files), paired by fold or seed.

``paired_rows.py`` compares rows within one set of results; here each row (data set, model, variant label) of
``--new`` is paired with the row of the same name in ``--old`` (e.g. the Transformer at lr 1e-4 against the
same embeddings at lr 1e-3), unit by unit. For each row it prints the number of common folds / seeds, both
means of the test accuracy (and of the dev accuracy), the difference and the one-sided Wilcoxon signed-rank
p-values in both directions (``report.paired_wilcoxon``; a two-sided p is at most twice the smaller one).
Records are read with ``report.load_results`` (the latest record per unit counts, as in the report).

Usage::

    python benchmarks/classification/compare_settings.py --model transformer \\
        --new benchmarks/results/table2_transformer_lr1e-4.jsonl \\
        --old benchmarks/results/table2_transformer_cr_mpqa_trec.jsonl
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from complexorder.cli import run_script
from complexorder.experiments.report import cell_scores, load_results, paired_wilcoxon


def compare(new: list[dict], old: list[dict], model: str) -> list[str]:
    """The Markdown table rows (header included) comparing every ``model`` row of ``new`` with ``old``'s."""
    test_new, test_old = cell_scores(new), cell_scores(old)
    dev_new, dev_old = cell_scores(new, "dev_accuracy"), cell_scores(old, "dev_accuracy")
    lines = ["| data set | row | n | dev new | dev old | test new | test old | new − old | p (new above) | "
             "p (new below) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key in sorted(k for k in test_new if k[1] == model and k in test_old):
        ours, theirs = test_new[key], test_old[key]
        common = sorted(set(ours) & set(theirs))
        if not common:
            continue
        mean = lambda scores: statistics.mean(scores[s] for s in common)  # noqa: E731
        dev = lambda scores: (f"{mean(scores):.4f}" if all(s in scores for s in common) else "–")  # noqa: E731
        p_above, n = paired_wilcoxon(ours, theirs)
        p_below, _ = paired_wilcoxon(theirs, ours)
        lines.append(f"| {key[0]} | {key[2]} | {n} | {dev(dev_new.get(key, {}))} | {dev(dev_old.get(key, {}))} | "
                     f"{mean(ours):.4f} | {mean(theirs):.4f} | {mean(ours) - mean(theirs):+.4f} | {p_above:.3g} | "
                     f"{p_below:.3g} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new", required=True, nargs="+", type=Path, help="results of the new setting")
    ap.add_argument("--old", required=True, nargs="+", type=Path, help="results of the old setting")
    ap.add_argument("--model", required=True, help="architecture (fasttext, cnn, lstm, transformer)")
    args = ap.parse_args(argv)
    try:
        new, old = load_results(args.new), load_results(args.old)
    except (FileNotFoundError, IsADirectoryError, ValueError) as e:
        sys.exit(f"error: {e}")
    lines = compare(new, old, args.model)
    if len(lines) == 2:
        sys.exit(f"--model: no {args.model!r} row is in both --new and --old")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
