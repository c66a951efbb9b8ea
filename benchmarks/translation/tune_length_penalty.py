"""Choose each translation row's beam-search length penalty on val, then score test2016 once with it.

The Table 5 files decode every row with one setting (beam 5, ``log p / length ** 1.0``). The complex-order
rows write shorter translations than vanilla (``bleu_breakdown.py``: brevity penalty 0.88-0.92 on val against
0.94), so part of their BLEU gap may be the decoder's length preference rather than the model. This script
re-decodes each row's checkpoint (the one ``run_table5.py`` chose on val) on **val** with every length penalty
of ``--penalties``, keeps the best (tokenized lower-cased BLEU; ties go to the smaller penalty), and only then
decodes **test2016** with it, once. test2016 is used for no choice. Idempotent: decodings already in
``ROOT/length_penalty.jsonl`` are not repeated. Prints a Markdown table.

Usage::

    python benchmarks/translation/tune_length_penalty.py --data-dir ../shared/data --root runs/table5x \
        --rows vanilla,complex-order-real-network --penalties 1.0,1.5,2.0
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import sacrebleu

sys.path.insert(0, str(Path(__file__).parent))
from bleu_breakdown import lines, load_summary  # noqa: E402


def decode(root: Path, label: str, checkpoint: Path, split: str, penalty: float, data_dir: str) -> dict:
    results = root / "length_penalty.jsonl"
    tag = f"{label}-lp{penalty:g}.{split}"
    cmd = ["complexorder", "translate", "eval", "--checkpoint", str(checkpoint),
           "--split", split, "--data-dir", data_dir, "--length-penalty", f"{penalty:g}",
           "--results", str(results), "--hypotheses", str(root / f"{tag}.hyp"), "--no-progress"]

    def done() -> list[dict]:
        if not results.is_file():
            return []
        rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
        return [r for r in rows if r["checkpoint"] == str(checkpoint) and r["split"] == split
                and r["length_penalty"] == penalty]

    if not done():
        print("OMP_NUM_THREADS=1 " + shlex.join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
    return done()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--root", required=True, help="run root holding LABEL/ and LABEL.summary.json")
    parser.add_argument("--rows", required=True, help="comma-separated row labels")
    parser.add_argument("--penalties", default="1.0,1.5,2.0", help="length penalties to try on val")
    args = parser.parse_args()
    root = Path(args.root)
    try:
        penalties = sorted({float(p) for p in args.penalties.split(",")})
    except ValueError:
        raise SystemExit(f"--penalties: expected comma-separated numbers, got {args.penalties!r}") from None
    print("| row | checkpoint | val tok-lc at " + " / ".join(f"{p:g}" for p in penalties)
          + " | chosen on val | test2016 tok-lc at 1.0 | **test2016 tok-lc at the chosen penalty** | "
            "test2016 hyp/ref length |")
    print("|---|---|---:|---:|---:|---:|---:|")
    refs = lines(Path(args.data_dir) / "translation" / "multi30k" / "test2016.de")
    for label in args.rows.split(","):
        summary = load_summary(root, label)
        checkpoint = Path(summary["test"]["checkpoint"])
        val = {p: decode(root, label, checkpoint, "val", p, args.data_dir) for p in penalties}
        best = max(penalties, key=lambda p: (val[p]["bleu_tok_lc"], -p))
        test = decode(root, label, checkpoint, "test2016", best, args.data_dir)
        base = summary["test"]["bleu_tok_lc"] if summary["test"].get("length_penalty", 1.0) == 1.0 else float("nan")
        scored = sacrebleu.corpus_bleu(lines(root / f"{label}-lp{best:g}.test2016.hyp"), [refs], lowercase=True,
                                       tokenize="13a")
        ratio = scored.sys_len / scored.ref_len
        print(f"| {label} | {summary['selected']} | " + " / ".join(f"{val[p]['bleu_tok_lc']:.2f}" for p in penalties)
              + f" | {best:g} | {base:.2f} | **{test['bleu_tok_lc']:.2f}** | "
              + f"{ratio:.3f} |", flush=True)


if __name__ == "__main__":
    main()
