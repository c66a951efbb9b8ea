"""A built-in word-order task: no data, no network, and a bag of words cannot beat chance.

Each sequence holds random filler words and two marker words, ``A`` and ``B``, at random
distinct positions; the label is 1 when ``A`` comes before ``B``. Swapping the two markers
gives a sequence with the same bag of words, the opposite label and the same probability under
the generator, so any model that ignores order is at 50 % in expectation.
"""

from __future__ import annotations

import torch

from .batching import EncodedDataset

__all__ = ["PAD", "MARKER_A", "MARKER_B", "word_order_task"]

PAD, MARKER_A, MARKER_B = 0, 1, 2


def word_order_task(num_examples: int, *, vocab_size: int = 24, min_len: int = 6, max_len: int = 14,
                    seed: int = 0) -> EncodedDataset:
    """``num_examples`` sequences of length ``min_len..max_len`` over ids ``0..vocab_size-1`` (0 = PAD).

    Returns an :class:`EncodedDataset` with labels 1 (A before B) or 0.
    """
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be at least 4 (PAD, A, B and one filler), got {vocab_size}")
    if not 2 <= min_len <= max_len:
        raise ValueError(f"need 2 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    g = torch.Generator().manual_seed(seed)
    sequences, labels = [], []
    for _ in range(num_examples):
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=g))
        seq = torch.randint(3, vocab_size, (length,), generator=g)
        i, j = torch.randperm(length, generator=g)[:2].tolist()
        seq[i], seq[j] = MARKER_A, MARKER_B
        sequences.append(seq)
        labels.append(int(i < j))
    return EncodedDataset(sequences, torch.tensor(labels))
