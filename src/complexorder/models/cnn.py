"""Kim (2014) CNN: narrow convolutions of widths 3, 4, 5, max-pooled over time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import torch
from torch import Tensor, nn

from ..nn import ComplexConv1d, SplitActivation
from .readout import (check_embedding, check_sizes, check_tokens, make_dropout, masked_max, padding_mask,
                      to_real_features)

__all__ = ["CNNClassifier"]


class CNNClassifier(nn.Module):
    r"""Kim CNN over any embedding of the family.

    For each filter width ``k``: a narrow convolution over time (``filters`` output channels),
    ReLU, and max-pooling over the windows that lie inside the sentence (windows running into
    the padding are ignored, so a prediction never depends on how much a batch is padded; a
    sentence shorter than ``k`` keeps its first window). With a complex embedding the
    convolutions are :class:`~complexorder.nn.ComplexConv1d` with a split ReLU and each window
    is read out with its modulus before pooling.

    Args:
        embedding: any module of :mod:`complexorder.embeddings`.
        num_classes: output classes.
        filters: output channels per filter width.
        filter_sizes: the widths (Kim: 3, 4, 5).
        dropout: dropout on the embeddings and the pooled features.
        share_weights: ``A = B`` in the complex kernels.

    Shape: ``tokens [B, L]`` (``L >= max(filter_sizes)``) -> ``logits [B, num_classes]``.

    Examples::

        >>> import torch
        >>> from complexorder import ComplexOrderEmbedding
        >>> model = CNNClassifier(ComplexOrderEmbedding(100, 16, padding_idx=0), 2, filters=4).eval()
        >>> model(torch.randint(1, 100, (3, 12))).shape
        torch.Size([3, 2])
    """

    def __init__(self, embedding: nn.Module, num_classes: int, filters: int = 100,
                 filter_sizes: tuple[int, ...] = (3, 4, 5), dropout: float = 0.5, share_weights: bool = False) -> None:
        super().__init__()
        check_embedding(embedding, "CNNClassifier")
        num_classes, filters = check_sizes("CNNClassifier", dropout, num_classes=num_classes, filters=filters)
        if isinstance(filter_sizes, (str, bytes)) or not isinstance(filter_sizes, Iterable):
            raise ValueError(f"CNNClassifier: filter_sizes must be a sequence of positive integers, got {filter_sizes!r}")
        filter_sizes = tuple(filter_sizes)  # once: a generator was used up by the checks and left no filter
        if not filter_sizes:
            raise ValueError("CNNClassifier: filter_sizes must name at least one filter width, got an empty list")
        filter_sizes = tuple(check_sizes("CNNClassifier",
                                         **{f"filter_sizes[{i}]": k for i, k in enumerate(filter_sizes)}))
        self.embedding = embedding
        self.filter_sizes = filter_sizes
        complex_ = cast(bool, embedding.is_complex)  # check_embedding checked both
        dim = cast(int, embedding.embedding_dim)
        self.dropout = make_dropout(dropout, complex_)
        if complex_:
            self.convs = nn.ModuleList(ComplexConv1d(dim, filters, k, share_weights=share_weights)
                                       for k in self.filter_sizes)
            self.activation: nn.Module = SplitActivation("relu")
        else:
            self.convs = nn.ModuleList(nn.Conv1d(dim, filters, k) for k in self.filter_sizes)
            self.activation = nn.ReLU()
        self.feature_dropout = nn.Dropout(dropout)
        self.output = nn.Linear(filters * len(self.filter_sizes), num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        check_tokens(tokens, "CNNClassifier")
        if tokens.shape[1] < max(self.filter_sizes):
            raise ValueError(f"CNNClassifier: tokens must be padded to at least the widest filter "
                             f"({max(self.filter_sizes)}), "
                             f"got length {tokens.shape[1]}")
        mask = padding_mask(tokens, self.embedding)
        lengths = mask.sum(1)
        x = self.dropout(self.embedding(tokens)).transpose(1, 2)  # [B, D, L]
        pooled = []
        for k, conv in zip(self.filter_sizes, self.convs):
            h = to_real_features(self.activation(conv(x))).transpose(1, 2)  # [B, L-k+1, F]
            starts = torch.arange(h.shape[1], device=h.device)
            inside = (starts.unsqueeze(0) <= (lengths - k).clamp_min(0).unsqueeze(1))
            pooled.append(masked_max(h, inside))
        return self.output(self.feature_dropout(torch.cat(pooled, dim=1)))
