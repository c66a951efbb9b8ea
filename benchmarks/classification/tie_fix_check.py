"""Stop 38: which committed p-values change when accuracy differences are rounded before the Wilcoxon test.

Compares ``report.paired_wilcoxon`` (differences rounded to 1e-12, so that differences equal in exact arithmetic
tie) with the computation before stop 38 (unrounded differences) for every ordered pair of rows of the same
data set and model, in every classification results file of benchmarks/results (each alone, then all together);
prints the tests whose p-value crosses 0.05 and the counts. Usage (about 30 minutes on one thread):

    OMP_NUM_THREADS=1 python benchmarks/classification/tie_fix_check.py
"""

from __future__ import annotations

import glob

import numpy as np
from scipy.stats import wilcoxon

from complexorder.cli import run_script
from complexorder.experiments.report import cell_scores, load_results, paired_wilcoxon


def before_stop_38(ours: dict, theirs: dict) -> float | None:
    """The p-value as computed until stop 38: the same test on unrounded differences."""
    common = sorted(set(ours) & set(theirs))
    if not common:
        return None
    diffs = np.array([ours[s] - theirs[s] for s in common])
    if np.all(diffs == 0):
        return 1.0
    return float(wilcoxon(diffs, alternative="greater", zero_method="wilcox").pvalue)


def main() -> None:
    files = sorted(f for f in glob.glob("benchmarks/results/*.jsonl") if "table5" not in f and "table6" not in f)
    records = {f: load_results([f], warn=lambda *_: None) for f in files}
    checked = changed = 0
    for group in [[f] for f in files] + [files]:
        cells = cell_scores([r for f in group for r in records[f]])
        for (d, m, v), ours in cells.items():
            for (d2, m2, v2), theirs in cells.items():
                if (d2, m2) != (d, m) or v2 == v:
                    continue
                old = before_stop_38(ours, theirs)
                if old is None:
                    continue
                new, n = paired_wilcoxon(ours, theirs)
                checked += 1
                if abs(old - new) > 1e-12:
                    changed += 1
                    if (old < 0.05) != (new < 0.05):
                        where = group[0] if len(group) == 1 else "all files"
                        print(f"{where} {d} {m} | {v} vs {v2}: {old:.4g} -> {new:.4g} (n={n})", flush=True)
    print(f"checked {checked} changed {changed}")


if __name__ == "__main__":
    raise SystemExit(run_script(main))
