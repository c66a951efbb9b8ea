"""Kim (2014) CNN: narrow convolutions of widths 3, 4, 5, max-pooled over time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import torch
from torch import Tensor, nn

from ..nn import ComplexConv1d, SplitActivation
from ..nn import functional as CF
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
        x = self.dropout(self.embedding(tokens))  # [B, L, D]
        if self._parts_ok(x):
            maps = self._convolve_parts(x)
        else:
            x = x.transpose(1, 2)  # [B, D, L]
            maps = [conv(x) for conv in self.convs]
        pooled = []
        for k, out in zip(self.filter_sizes, maps):
            h = to_real_features(self.activation(out)).transpose(1, 2)  # [B, L-k+1, F]
            starts = torch.arange(h.shape[1], device=h.device)
            inside = (starts.unsqueeze(0) <= (lengths - k).clamp_min(0).unsqueeze(1))
            pooled.append(masked_max(h, inside))
        return self.output(self.feature_dropout(torch.cat(pooled, dim=1)))

    def _parts_ok(self, x: Tensor) -> bool:
        """Whether :meth:`_convolve_parts` may run: a complex64/complex128 CPU input outside autocast, in the
        precision of every convolution, which are the :class:`~complexorder.nn.ComplexConv1d` this model builds, with
        no hooks (the fast path does not call them)."""
        convs = list(self.convs)
        if not (convs and all(type(conv) is ComplexConv1d for conv in convs)):
            return False
        weight = cast(ComplexConv1d, convs[0]).weight_real
        return (CF._parts_ok(x, weight) and CF._no_hooks(*convs)
                and all(p.dtype == weight.dtype and p.device.type == "cpu" for p in self.convs.parameters()))

    def _convolve_parts(self, x: Tensor) -> list[Tensor]:
        """Every convolution's output ``[B, F, L-k+1]`` from the embeddings ``x [B, L, D]``, computed on the parts,
        split (and transposed to ``[B, D, L]``) once for all the filter widths: three real convolutions each, two
        with shared weights (``functional._conv1d_parts``); the same result as calling the convolutions, up to float
        rounding. Forward and backward of the three complex convolutions of Table 2's CNN (64 filters each, width
        300, [64, 40] tokens) took 164 -> 134 ms (one thread, stop 79): the complex convolution converts its input
        between interleaved and real parts at every call, and for every filter width."""
        real, imag = (t.contiguous() for t in torch.view_as_real(x.resolve_conj()).permute(3, 0, 2, 1).unbind(0))
        combos: dict[str, Tensor] = {}
        maps = []
        for conv in self.convs:
            conv = cast(ComplexConv1d, conv)
            out = CF._conv1d_parts(real, imag, conv.weight_real, conv.weight_imag, conv.bias_real, conv.bias_imag,
                                   conv.stride, conv.padding, conv.dilation, combos)
            maps.append(torch.complex(*out))
        return maps
