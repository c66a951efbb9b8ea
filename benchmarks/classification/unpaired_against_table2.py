"""Compare a results file's cells with table2.md's per-cell statistics when no paired units exist.

table2.md's raw results are lost (see that file), so its Transformer cells on CR, MPQA and TREC can only be
compared by their summary statistics: this script reads the "Per cell: scores and p-values" rows of
``benchmarks/results/table2.md`` (n, mean, standard deviation) and, for each data set of ``--results`` (JSON
lines written by ``complexorder classify``), prints the new row's mean ± std and Welch's unequal-variance t-test
(``scipy.stats.ttest_ind_from_stats``, two-sided) against each of table2.md's five embeddings for that model.
Unpaired and across machines/code versions: weaker than the Wilcoxon tests of the report, say so when quoting.

Usage::

    python benchmarks/classification/unpaired_against_table2.py --results benchmarks/results/table2_transformer_zero_frequencies_unpaired.jsonl --model transformer
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

from scipy.stats import ttest_ind_from_stats

from complexorder.cli import run_script
from complexorder.experiments.report import cell_scores, load_results

EMBEDDINGS = ("none", "pe", "tpe", "complex-vanilla", "complex-order")


def table2_cells(path: Path, model: str) -> dict[tuple[str, str], tuple[int, float, float]]:
    pattern = re.compile(rf"\| (\w+) \| {re.escape(model)} \| ([a-z-]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|")
    cells = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = pattern.match(line)
        if m:
            cells[(m[1], m[2])] = (int(m[3]), float(m[4]), float(m[5]))
    return cells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, type=Path, help="JSON lines from `complexorder classify`")
    ap.add_argument("--model", required=True, help="architecture whose table2.md cells to compare with")
    ap.add_argument("--table2", type=Path, default=Path("benchmarks/results/table2.md"))
    args = ap.parse_args(argv)
    if not args.table2.is_file():
        sys.exit(f"--table2: no file {args.table2}")
    cells = table2_cells(args.table2, args.model)
    if not cells:
        sys.exit(f"--table2: no per-cell rows for model {args.model!r} in {args.table2}")
    try:
        records = load_results([args.results])
    except (FileNotFoundError, IsADirectoryError) as e:
        sys.exit(f"--results: {e}")
    rows = {key: split_scores for key, split_scores in cell_scores(records).items() if key[1] == args.model}
    if not rows:
        sys.exit(f"--results: no {args.model!r} records in {args.results}")
    print("| data set | row | n, mean ± std | table2.md embedding | n | mean ± std | row − it | Welch p (two-sided) |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for (ds, _, label), split_scores in rows.items():
        v = list(split_scores.values())
        n, m, s = len(v), statistics.mean(v), statistics.stdev(v) if len(v) > 1 else float("nan")
        for emb in EMBEDDINGS:
            if (ds, emb) not in cells:
                continue
            bn, bm, bs = cells[(ds, emb)]
            p = ttest_ind_from_stats(m, s, n, bm, bs, bn, equal_var=False).pvalue
            print(f"| {ds} | {label} | {n}, {m:.4f} ± {s:.4f} | {emb} | {bn} | {bm:.4f} ± {bs:.4f} | {m - bm:+.4f} | {p:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
