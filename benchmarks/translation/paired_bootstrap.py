"""Is one translation row's BLEU different from another's on the same sentences? sacrebleu's paired bootstrap.

For each pair ``BASELINE:SYSTEM`` of row labels, reads both rows' ``ROOT/LABEL.summary.json`` (written by
``run_table5.py --phases eval``), takes the hypotheses of the checkpoint each chose on val
(``ROOT/LABEL-CHOICE.SPLIT.hyp``) and runs sacrebleu's paired bootstrap resampling (Koehn 2004; 13a tokenization,
lower-cased: the tok-lc figure of the Table 5 files) over the split's sentences. The p-value is sacrebleu's:
the share of resamples in which the system's gain over the baseline is at least as far from the mean gain as 0
(the smallest value with N resamples is 1 / (N + 1)). Prints a Markdown table.

Usage::

    python benchmarks/translation/paired_bootstrap.py --data-dir ../shared/data --root runs/table5x \
        --pairs vanilla:complex-order-zero-frequencies --split test2016
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bleu_breakdown import chosen_hypotheses, references  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--root", required=True, help="the run root holding LABEL.summary.json and the .hyp files")
    parser.add_argument("--pairs", required=True, help="comma-separated BASELINE:SYSTEM row labels")
    parser.add_argument("--split", default="test2016")
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    args = parser.parse_args()
    pairs = [p.split(":") for p in args.pairs.split(",")]
    if any(len(p) != 2 or not all(p) for p in pairs):
        raise SystemExit(f"--pairs: expected BASELINE:SYSTEM,..., got {args.pairs!r}")
    if args.samples < 1:
        raise SystemExit(f"--samples: expected a positive integer, got {args.samples}")
    root = Path(args.root)
    refs = references(args.data_dir, args.split)
    print(f"| baseline | BLEU tok-lc | system | BLEU tok-lc (± 95% CI half-width) | system − baseline | p (paired bootstrap, {args.samples} samples) |")
    print("|---|---:|---|---:|---:|---:|")
    signature = None
    for base, system in pairs:
        test = PairedTest([(name, chosen_hypotheses(root, name, args.split, len(refs), "--pairs")[1])
                           for name in (base, system)],
                          {"BLEU": BLEU(lowercase=True, tokenize="13a")}, references=[refs], test_type="bs",
                          n_samples=args.samples)
        signatures, scores = test()
        signature = signatures["BLEU"]
        b, s = scores["BLEU"]
        print(f"| {base} | {b.score:.2f} | {system} | {s.score:.2f} (± {s.ci:.2f}) | {s.score - b.score:+.2f} | "
              f"{s.p_value:.4f} |")
    print(f"\nsplit {args.split}; sacrebleu signature `{signature}`")


if __name__ == "__main__":
    main()
