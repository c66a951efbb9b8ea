"""Encoded examples and padded mini-batches (padding id 0, right-padded, never truncated)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
                    generator: torch.Generator | None = None, pad_id: int = 0, min_length: int = 1,
                    bucket: bool = False, bucket_batches: int = 50) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``(tokens [B, L], labels [B])``, every example exactly once.

    ``shuffle`` draws a random order from ``generator``. ``bucket`` groups examples of similar length
    to cut padding: the (shuffled) order is cut into chunks of ``bucket_batches`` batches, each chunk
    is sorted by length and cut into batches, and the batches are shuffled (when ``shuffle``).
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = torch.randperm(len(data), generator=generator) if shuffle else torch.arange(len(data))
    batches: list[Any] = []  # index tensors; each becomes a list of ints below
    if bucket:
        lengths = torch.tensor([len(s) for s in data.sequences])
        chunk = batch_size * bucket_batches
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            part = part[torch.sort(lengths[part], stable=True).indices]
            batches.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
        if shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    else:
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    for idx in batches:
        idx = idx.tolist()
        yield pad_batch([data.sequences[i] for i in idx], pad_id, min_length), data.labels[idx]
