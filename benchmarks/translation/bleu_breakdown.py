"""What each translation row's BLEU is made of: n-gram precisions, brevity penalty, length ratio.

Reads the rows' ``ROOT/LABEL.summary.json`` (written by ``run_table5.py --phases eval``), takes the checkpoint
chosen on val and its saved hypotheses (``ROOT/LABEL-CHOICE.SPLIT.hyp``), and re-scores them against the raw
references with sacrebleu (13a tokenization, lower-cased: the tok-lc figure of the Table 5 files, which it
reproduces). Prints a Markdown table.

Usage::

    python benchmarks/translation/bleu_breakdown.py --data-dir ../shared/data --root runs/table5x \
        --rows vanilla,complex-order-real-network --splits val,test2016
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import sacrebleu


def lines(path: Path) -> list[str]:
    """The file's lines, split at "\\n" only (not str.splitlines: it also splits at U+0085, U+2028, ...)."""
    text = path.read_text(encoding="utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def load_summary(root: Path, label: str, option: str = "--rows") -> dict:
    """The row's ``LABEL.summary.json`` (the checkpoint chosen on val and its scores), or a one-line exit
    naming ``option`` (the argument that named the row)."""
    path = root / f"{label}.summary.json"
    if not path.is_file():
        raise SystemExit(f"{option}: no {path} (run run_table5.py --phases eval for {label!r} first)")
    return json.loads(path.read_text())


def references(data_dir: str, split: str) -> list[str]:
    """The German reference lines of ``split``, or a one-line exit naming ``--data-dir``."""
    path = Path(data_dir) / "translation" / "multi30k" / f"{split}.de"
    if not path.is_file():
        raise SystemExit(f"--data-dir: no reference file {path}")
    return lines(path)


def chosen_hypotheses(root: Path, label: str, split: str, n_refs: int, option: str = "--rows") -> tuple[str, list[str]]:
    """The checkpoint choice of row ``label`` (on val) and its saved hypotheses on ``split``, checked to have
    one line per reference; a one-line exit otherwise."""
    choice = load_summary(root, label, option)["selected"]
    path = root / f"{label}-{choice}.{split}.hyp"
    if not path.is_file():
        raise SystemExit(f"{option}: no hypotheses {path} (run run_table5.py --phases eval for {label!r} first)")
    hyps = lines(path)
    if len(hyps) != n_refs:
        raise SystemExit(f"{path}: {len(hyps)} lines, but the {split} references have {n_refs}")
    return choice, hyps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--root", required=True, help="the run root holding LABEL.summary.json and the .hyp files")
    parser.add_argument("--rows", required=True, help="comma-separated row labels")
    parser.add_argument("--splits", default="val,test2016")
    args = parser.parse_args()
    root = Path(args.root)
    print("| row | split | checkpoint | BLEU tok-lc | 1-gram | 2-gram | 3-gram | 4-gram | BP | hyp/ref length |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for split in args.splits.split(","):
        refs = references(args.data_dir, split)
        for label in args.rows.split(","):
            choice, hyps = chosen_hypotheses(root, label, split, len(refs))
            b = sacrebleu.corpus_bleu(hyps, [refs], lowercase=True, tokenize="13a")
            p = " | ".join(f"{x:.1f}" for x in b.precisions)
            print(f"| {label} | {split} | {choice} | {b.score:.2f} | {p} | {b.bp:.3f} | {b.sys_len / b.ref_len:.3f} |")


if __name__ == "__main__":
    main()
