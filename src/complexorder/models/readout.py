"""Pieces shared by the classifiers: padding masks, pooling, dropout and the read-out.

A classifier is real or complex according to its embedding (``embedding.is_complex``); these
helpers pick the matching operation so that each architecture is written once.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import torch
from torch import Tensor, nn

from ..nn import ComplexDropout
from ..nn.functional import as_integer, modulus

__all__ = ["check_embedding", "check_sizes", "check_tokens", "padding_mask", "masked_mean", "masked_max",
           "make_dropout", "to_real_features"]


def check_embedding(embedding: nn.Module, model: str) -> None:
    """A one-line ``TypeError`` unless ``embedding`` is one of :mod:`complexorder.embeddings` (the classifiers read
    its ``is_complex`` and ``embedding_dim``)."""
    if not (isinstance(embedding, nn.Module) and isinstance(getattr(embedding, "is_complex", None), bool)
            and isinstance(getattr(embedding, "embedding_dim", None), int)):
        raise TypeError(f"{model}: embedding must be a module of complexorder.embeddings (build_embedding(name, ...)), "
                        f"which says whether it is complex (is_complex) and its embedding_dim; got "
                        f"{type(embedding).__name__}")


_NO_DROPOUT: Any = object()  # check_sizes' default: no dropout to check (None is a value, refused: it failed in torch)


def check_sizes(model: str, dropout: float | None = _NO_DROPOUT, **sizes: int) -> list[int]:
    """The ``sizes`` as Python ints, in order; a one-line ``ValueError`` naming the argument unless every size is a
    positive integer (NumPy's integers included) and ``dropout`` a probability in [0, 1) (``num_classes=0`` or
    ``hidden=0`` would build a model that cannot learn)."""
    numbers = []
    for name, value in sizes.items():
        number = as_integer(value)
        if number is None or number < 1:
            raise ValueError(f"{model}: {name} must be a positive integer, got {value!r}")
        numbers.append(number)
    if dropout is not _NO_DROPOUT and (isinstance(dropout, bool) or not isinstance(dropout, Real)
                                       or not 0 <= dropout < 1):
        raise ValueError(f"{model}: dropout must be a probability in [0, 1), got {dropout!r}")
    return numbers


def check_tokens(tokens: Tensor, model: str) -> None:
    """A one-line ``ValueError`` unless ``tokens`` is a ``[B, L]`` tensor (a 3-D batch would pool the wrong axis)."""
    if not isinstance(tokens, Tensor) or tokens.dim() != 2:
        shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
        raise ValueError(f"{model}: tokens must be a [B, L] tensor of token ids, got {shape}")
    if tokens.shape[1] == 0:  # FastText and the complex Transformer returned bias-only logits; others failed deep
        raise ValueError(f"{model}: tokens must hold at least one position ([B, L] with L >= 1), got shape "
                         f"{tuple(tokens.shape)}")


def padding_mask(tokens: Tensor, embedding: nn.Module) -> Tensor:
    """Boolean ``[B, L]``: True at real tokens, False at the embedding's ``padding_idx``."""
    pad = getattr(embedding, "padding_idx", None)
    if pad is None:
        return torch.ones_like(tokens, dtype=torch.bool)
    return tokens != pad


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean over dim 1 of ``x [B, L, D]`` (real or complex) at the True positions of ``mask [B, L]``."""
    if x.dtype == torch.complex32:  # no CPU kernel sums complex32 (`.half()` models): sum in complex64, cast back
        return masked_mean(x.to(torch.complex64), mask).to(x.dtype)
    weights = mask.to(x.real.dtype).unsqueeze(-1)
    return (x * weights).sum(1) / weights.sum(1).clamp_min(1.0)


def masked_max(x: Tensor, mask: Tensor) -> Tensor:
    """Max over dim 1 of a real ``x [B, L, D]`` at the True positions of ``mask [B, L]``."""
    return x.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(1)


def make_dropout(p: float, is_complex: bool) -> nn.Module:
    return ComplexDropout(p) if is_complex else nn.Dropout(p)


def to_real_features(x: Tensor) -> Tensor:
    """The read-out of the last complex layer: the modulus ``|z|`` (real inputs pass through)."""
    return modulus(x) if x.is_complex() else x
