"""Compare one row of classification results with every other row of the same model, paired by fold or seed.

``complexorder report`` tests complex-order rows against the four baselines only; this script also tests a row
against the other complex-order rows (e.g. "frequencies from 0" against the sinusoidal start and against
"frequency lr x0.1"). For each data set where ``--row`` has results, it prints the row's mean and, against each
other row of ``--model`` on the same data set, the mean over the common folds/seeds, the mean difference and
the one-sided Wilcoxon signed-rank p-values in both directions (``report.paired_wilcoxon``). Records are read
with ``report.load_results`` (the latest record per unit counts, as in the report).

Usage::

    python benchmarks/classification/paired_rows.py --results benchmarks/results/table2_supplement.jsonl \\
        benchmarks/results/table2_lstm_zero_frequencies.jsonl --model lstm --row "complex-order, frequencies from 0"

``--cpu Intel`` keeps only the records run on a CPU whose model name contains "Intel" (the record's ``cpu.model``),
for pairing within one machine kind where the kind moves a unit (Table 4 in the authors' classifier, rule addendum 6).
One model name can cover two kinds (an AMD EPYC with AVX-512 and one without, stops 84-90): ``--capability AVX2``
keeps only the records whose ``cpu.torch_capability`` is that value. ``--seeds 4-6`` keeps only the seeds given
(fixed-split data sets; the splits named ``seed-N``), so that every row of one printout is compared on the same
seeds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from complexorder.cli import run_script
from complexorder.experiments.classification_cli import parse_ints
from complexorder.experiments.report import cell_scores, load_results, paired_wilcoxon


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, nargs="+", type=Path, help="JSON lines from `complexorder classify`")
    ap.add_argument("--model", required=True, help="architecture (fasttext, cnn, lstm, transformer)")
    ap.add_argument("--row", required=True, help="the row (variant label) to compare with the others")
    ap.add_argument("--cpu", default=None,
                    help="only records whose cpu model (the record's cpu.model) contains this text, case-insensitive: "
                         "pairs within one machine kind, where the kind moves a unit (records without one are left out)")
    ap.add_argument("--capability", default=None,
                    help="only records whose torch CPU capability (the record's cpu.torch_capability, e.g. AVX2, "
                         "AVX512) is this, case-insensitive")
    ap.add_argument("--seeds", default=None, help="only these seeds (the splits seed-N), e.g. 4-6 or 4,6")
    args = ap.parse_args(argv)
    try:
        seeds = parse_ints(args.seeds, "seeds")
    except ValueError as e:
        sys.exit(str(e))
    try:
        records = load_results(args.results)
    except (FileNotFoundError, IsADirectoryError) as e:
        sys.exit(f"--results: {e}")
    if args.cpu is not None:
        models = [str((r.get("cpu") or {}).get("model") or "") for r in records]
        kept = [r for r, m in zip(records, models) if args.cpu.lower() in m.lower()]
        if not kept:
            models = sorted(set(models))
            sys.exit(f"--cpu: no records whose cpu model contains {args.cpu!r}; cpu models present: {models}")
        records = kept
    if args.capability is not None:
        kinds = [str((r.get("cpu") or {}).get("torch_capability") or "") for r in records]
        kept = [r for r, k in zip(records, kinds) if k.lower() == args.capability.lower()]
        if not kept:
            kinds = sorted(set(kinds))
            sys.exit(f"--capability: no records whose cpu.torch_capability is {args.capability!r}; present: {kinds}")
        records = kept
    if seeds is not None:
        wanted = {f"seed-{s}" for s in seeds}
        kept = [r for r in records if r.get("split") in wanted]
        if not kept:
            sys.exit(f"--seeds: no records on seeds {args.seeds!r} (splits {sorted(wanted)})")
        records = kept
    cells = cell_scores(records)
    datasets = [ds for (ds, model, label) in cells if model == args.model and label == args.row]
    if not datasets:
        labels = sorted({label for (_, model, label) in cells if model == args.model})
        sys.exit(f"--row: no {args.model!r} records with row {args.row!r}; rows present: {labels}")
    print("| data set | row | n | row mean | other row | other mean | row − other | p (row above) | p (row below) |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    for ds in datasets:
        ours = cells[(ds, args.model, args.row)]
        for (d, model, label), theirs in sorted(cells.items()):
            if d != ds or model != args.model or label == args.row:
                continue
            common = sorted(set(ours) & set(theirs))
            if not common:
                continue
            a = statistics.mean(ours[s] for s in common)
            b = statistics.mean(theirs[s] for s in common)
            p_above, n = paired_wilcoxon(ours, theirs)
            p_below, _ = paired_wilcoxon(theirs, ours)
            print(f"| {ds} | {args.row} | {n} | {a:.4f} | {label} | {b:.4f} | {a - b:+.4f} | {p_above:.3g} | {p_below:.3g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
