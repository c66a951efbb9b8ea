"""Normalisation of the real and imaginary parts separately (paper appendix B).

Appendix B normalises the two parts separately with batch normalisation (:class:`ComplexBatchNorm1d`); the
complex Transformer layers use :class:`ComplexLayerNorm`, the same per-part idea with the Transformer's layer
norm (see :class:`complexorder.nn.ComplexTransformerEncoderLayer`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import torch
from torch import Tensor, nn

from . import functional as CF

__all__ = ["ComplexLayerNorm", "ComplexBatchNorm1d"]


class ComplexLayerNorm(nn.Module):
    """Layer norm of ``Re z`` and ``Im z`` separately, each with its own affine parameters.

    Args:
        normalized_shape: trailing shape to normalise over (an int for the last dimension).
        eps: as :class:`torch.nn.LayerNorm`.
        elementwise_affine: learn ``weight``/``bias`` of shape ``[2, *normalized_shape]``
            (row 0 real part, row 1 imaginary part).

    Shape: ``[..., *normalized_shape]`` complex -> same.

    Examples::

        >>> norm = ComplexLayerNorm(8)
        >>> out = norm(torch.randn(3, 8, dtype=torch.complex64) * 5 + 2)
        >>> torch.allclose(out.real.mean(-1), torch.zeros(3), atol=1e-5), torch.allclose(out.imag.mean(-1), torch.zeros(3), atol=1e-5)
        (True, True)
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5, elementwise_affine: bool = True, *,
                 device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(elementwise_affine=elementwise_affine)
        if CF.as_integer(normalized_shape) is not None:  # one size (an int, a NumPy or 0-d tensor integer)
            shape: Any = (normalized_shape,)
        else:  # a sequence, as torch.nn.LayerNorm takes (np.array([4]) too)
            try:
                shape = list(cast(Iterable, normalized_shape))
            except TypeError:
                shape = [normalized_shape]
        sizes = [CF.as_integer(n) for n in shape]
        if not sizes or any(n is None or n < 1 for n in sizes):
            raise ValueError(f"normalized_shape must be a positive integer or a non-empty sequence of them, got "
                             f"{normalized_shape!r}")
        self.normalized_shape = tuple(cast(list[int], sizes))
        CF.check_modulus_eps(eps)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(2, *self.normalized_shape, device=device, dtype=dtype))
            self.bias = nn.Parameter(torch.empty(2, *self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Layer norm of the real and imaginary parts separately over ``normalized_shape``: complex in, complex out."""
        n = len(self.normalized_shape)
        if isinstance(input, Tensor) and (input.dim() < n or tuple(input.shape[input.dim() - n:]) != self.normalized_shape):
            raise ValueError(f"ComplexLayerNorm expects input [..., {', '.join(map(str, self.normalized_shape))}], "
                             f"got {list(input.shape)}")
        return CF.complex_layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class ComplexBatchNorm1d(nn.Module):
    """Batch norm of ``Re z`` and ``Im z`` separately (paper appendix B), each with its own statistics.

    Args: as :class:`torch.nn.BatchNorm1d` (``num_features`` complex channels).

    Shape: ``[N, C]`` or ``[N, C, L]`` complex -> same.

    Examples::

        >>> norm = ComplexBatchNorm1d(4)
        >>> out = norm(torch.randn(32, 4, 10, dtype=torch.complex64) + 3j)
        >>> out.shape, torch.allclose(out.imag.mean((0, 2)), torch.zeros(4), atol=1e-5)
        (torch.Size([32, 4, 10]), True)
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(affine=affine, track_running_stats=track_running_stats)
        CF.check_modulus_eps(eps)
        num_features = CF.positive_int(num_features, "num_features")
        kwargs = dict(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats,
                      device=device, dtype=dtype)
        self.real = nn.BatchNorm1d(num_features, **kwargs)
        self.imag = nn.BatchNorm1d(num_features, **kwargs)

    def reset_parameters(self) -> None:
        self.real.reset_parameters()
        self.imag.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        """Batch norm of each part with its own statistics: complex ``[N, C]`` or ``[N, C, L]`` in, the same out."""
        CF._require_complex("input", input)
        if input.dim() not in (2, 3) or input.shape[1] != self.real.num_features:
            c = self.real.num_features
            raise ValueError(f"ComplexBatchNorm1d expects input [N, {c}] or [N, {c}, L], got {list(input.shape)}")
        x, y = input.real, input.imag
        if not torch.jit.is_scripting():  # affine weights or running statistics: their dtype must match the input's
            state = self.real.weight if self.real.weight is not None else self.real.running_mean
            if state is not None:
                CF._require_matching_dtype(input, state)
                if state.dtype in (torch.float16, torch.bfloat16) and x.dtype != state.dtype:
                    # a mix autocast let through (the check passed): batch_norm takes half parts into float32
                    # statistics, but not float32 parts into half ones, nor float16 into bfloat16
                    x, y = x.to(state.dtype), y.to(state.dtype)
        return CF._join(self.real(x), self.imag(y))
