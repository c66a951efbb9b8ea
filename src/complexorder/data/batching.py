"""Encoded examples and padded mini-batches (padding id 0, right-padded, never truncated)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["EncodedDataset", "iterate_batches"]


@dataclass
class EncodedDataset:
    """Token-id sequences (1-d LongTensors) and their integer labels."""

    sequences: list[Tensor]
    labels: Tensor

    def __post_init__(self) -> None:
        if len(self.sequences) != len(self.labels):
            raise ValueError(f"{len(self.sequences)} sequences but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.sequences)

    def subset(self, indices) -> "EncodedDataset":
        indices = torch.as_tensor(indices, dtype=torch.long)
        return EncodedDataset([self.sequences[i] for i in indices.tolist()], self.labels[indices])

    def max_length(self) -> int:
        return max((len(s) for s in self.sequences), default=0)


def pad_batch(sequences: list[Tensor], pad_id: int = 0, min_length: int = 1) -> Tensor:
    """Right-pad to the longest sequence (at least ``min_length``): ``[B, L]`` LongTensor."""
    length = max(min_length, max(len(s) for s in sequences))
    out = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = seq
    return out


def iterate_batches(data: EncodedDataset, batch_size: int, *, shuffle: bool = False,
                    generator: torch.Generator | None = None, pad_id: int = 0,
                    min_length: int = 1) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``(tokens [B, L], labels [B])``; shuffled with ``generator`` when ``shuffle``."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = torch.randperm(len(data), generator=generator) if shuffle else torch.arange(len(data))
    for start in range(0, len(data), batch_size):
        idx = order[start : start + batch_size].tolist()
        yield pad_batch([data.sequences[i] for i in idx], pad_id, min_length), data.labels[idx]
