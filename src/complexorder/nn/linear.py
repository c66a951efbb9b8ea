"""Complex dense layer (paper Eq. 10/11)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import functional as CF

__all__ = ["ComplexLinear", "init_complex_pair"]


def init_complex_pair(weight_real: Tensor, weight_imag: Tensor | None, fan_in: int,
                      bias_real: Tensor | None = None, bias_imag: Tensor | None = None) -> None:
    """Initialise ``W = A + iB`` so that ``E|W|^2`` equals that of ``nn.Linear``'s default.

    ``A`` and ``B`` (or the shared ``A``, as ``W = A(1 + i)``) are ``U(-k, k)`` with
    ``k = 1 / sqrt(2 fan_in)``; biases likewise.
    """
    bound = 1.0 / math.sqrt(2 * fan_in) if fan_in > 0 else 0.0
    with torch.no_grad():
        for t in (weight_real, weight_imag, bias_real, bias_imag):
            if t is not None:
                t.uniform_(-bound, bound)


class ComplexLinear(nn.Module):
    r"""Complex dense layer ``z -> W z + b`` with ``W = A + iB``, ``b = c + id`` (paper Eq. 10/11).

    .. math:: (Ax - By + c) + i(Bx + Ay + d)

    Args:
        in_features, out_features: complex widths.
        bias: learn ``b = c + id``.
        share_weights: the paper's ``A = B``, ``c = d``: half the parameters and two real
            products instead of a complex one.

    Attributes:
        weight_real (A), weight_imag (B, ``None`` when shared): real ``[out, in]``.
        bias_real (c), bias_imag (d, ``None`` when shared or without bias): real ``[out]``.

    Shape:
        ``[..., in]`` complex -> ``[..., out]`` complex.

    Examples::

        >>> layer = ComplexLinear(8, 4)
        >>> layer(torch.randn(2, 8, dtype=torch.complex64)).shape
        torch.Size([2, 4])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, share_weights: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(bias=bias, share_weights=share_weights)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features = CF.positive_int(in_features, "in_features")
        self.out_features = out_features = CF.positive_int(out_features, "out_features")
        self.share_weights = share_weights
        self.weight_real = nn.Parameter(torch.empty(out_features, in_features, **factory))
        if share_weights:
            self.register_parameter("weight_imag", None)
        else:
            self.weight_imag = nn.Parameter(torch.empty(out_features, in_features, **factory))
        if bias:
            self.bias_real = nn.Parameter(torch.empty(out_features, **factory))
        else:
            self.register_parameter("bias_real", None)
        if bias and not share_weights:
            self.bias_imag = nn.Parameter(torch.empty(out_features, **factory))
        else:
            self.register_parameter("bias_imag", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_complex_pair(self.weight_real, self.weight_imag, self.in_features, self.bias_real, self.bias_imag)

    def complex_weight(self) -> Tensor:
        """``W = A + iB`` as one complex tensor."""
        return torch.complex(self.weight_real, self.weight_real if self.weight_imag is None else self.weight_imag)

    def forward(self, input: Tensor) -> Tensor:
        """``W z + b`` with complex ``W = A + iB``: complex ``[*, in_features]`` -> ``[*, out_features]``."""
        if isinstance(input, Tensor) and (input.dim() == 0 or input.shape[-1] != self.in_features):
            raise ValueError(f"ComplexLinear expects input [..., {self.in_features}], got {list(input.shape)}")
        return CF.complex_linear(input, self.weight_real, self.weight_imag, self.bias_real, self.bias_imag)

    def extra_repr(self) -> str:
        s = f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias_real is not None}"
        if self.share_weights:
            s += ", share_weights=True"
        return s
