"""How far training moved the complex-order frequencies of a translation checkpoint from the sinusoidal start.

For each checkpoint, reads the source embedding's frequency table ``w [V, D]`` and compares it with the start
``sinusoidal`` gives every word, ``w_k = 10000^(-k/D)`` (Eq. 7's frequencies for ``2D`` real dimensions): the mean
``|w - start|`` over the BPE ids 4-503 (the most frequent pieces: sentencepiece numbers them by frequency after the
four special ids) and over the last 500 ids (the rarest), and the mean ``|w|`` of the frequent ids in the quarter of
dimensions that start lowest (nearly position-free). Prints one line per checkpoint.

Usage::

    python benchmarks/translation/frequency_drift.py runs/stop50/mt/E-d144-real-seed2/last.pt ...
"""

from __future__ import annotations

import argparse

from complexorder.checkpoint import load_checkpoint
from complexorder.embeddings import sinusoidal_frequencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", help="translation checkpoints of complex-order models")
    args = parser.parse_args()
    for path in args.checkpoints:
        state = load_checkpoint(path, "translation")["model_state"]
        if "src_embedding.frequency" not in state:
            raise SystemExit(f"{path}: no src_embedding.frequency (not a complex-order model)")
        w = state["src_embedding.frequency"].double()
        vocab, dim = w.shape
        start = sinusoidal_frequencies(dim, 2 * dim).double()
        moved = (w - start).abs()
        low = 3 * dim // 4
        print(f"{path}: V={vocab} D={dim}; mean |w - start| ids 4-503 {moved[4:504].mean():.4f}, last 500 ids "
              f"{moved[-500:].mean():.4f}; lowest-starting quarter of dimensions (start <= {start[low]:.1e}): "
              f"ids 4-503 mean |w| {w[4:504, low:].abs().mean():.4f}")


if __name__ == "__main__":
    main()
