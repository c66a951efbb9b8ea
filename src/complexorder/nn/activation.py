"""Split activations, complex dropout and the modulus read-out."""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from . import functional as CF

__all__ = ["SplitActivation", "ComplexDropout", "Modulus", "ACTIVATIONS"]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "sigmoid": F.sigmoid,
    "tanh": F.tanh,
    "gelu": F.gelu,
    "identity": lambda x: x,
}


class SplitActivation(nn.Module):
    r"""``f(z) = sigma(Re z) + i sigma(Im z)`` for a real activation ``sigma`` (paper Eq. 10, 12).

    Args:
        activation: a name (``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"gelu"``, ``"identity"``) or
            a callable on real tensors.

    Shape: any complex tensor -> same shape.
    """

    def __init__(self, activation: str | Callable[[Tensor], Tensor] = "relu") -> None:
        super().__init__()
        if isinstance(activation, str):
            if activation not in ACTIVATIONS:
                raise ValueError(f"unknown activation {activation!r}; valid names: {', '.join(ACTIVATIONS)}")
            self.name, self.fn = activation, ACTIVATIONS[activation]
        elif callable(activation):
            self.name, self.fn = getattr(activation, "__name__", type(activation).__name__), activation
        else:
            raise TypeError(f"activation must be a name or a callable, got {type(activation).__name__}")

    def forward(self, input: Tensor) -> Tensor:
        return CF.split_activation(input, self.fn)

    def extra_repr(self) -> str:
        return self.name


class ComplexDropout(nn.Module):
    """Dropout of whole complex units (one mask for both parts); see :func:`complex_dropout`."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return CF.complex_dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Modulus(nn.Module):
    """Read-out ``|z|`` of the last complex layer (real output); ``eps`` as :func:`modulus`."""

    def __init__(self, eps: float = 0.0) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        return CF.modulus(input, self.eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}" if self.eps else ""
