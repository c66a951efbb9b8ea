"""Split activations, complex dropout and the modulus read-out."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import functional as CF

__all__ = ["SplitActivation", "ComplexDropout", "Modulus", "ACTIVATIONS"]



def identity(input: Tensor) -> Tensor:
    """The activation ``"identity"``: a module-level function, so that layers using it can be pickled (a lambda
    cannot: ``torch.save`` of a whole module, multiprocessing)."""
    return input


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "sigmoid": F.sigmoid,
    "tanh": F.tanh,
    "gelu": F.gelu,
    "silu": F.silu,
    "identity": identity,
}


class SplitActivation(nn.Module):
    r"""``f(z) = sigma(Re z) + i sigma(Im z)`` for a real activation ``sigma`` (paper Eq. 10, 12).

    Args:
        activation: a name (``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"gelu"``, ``"silu"``, ``"identity"``)
            or a callable on real tensors (a function or a module instance such as ``nn.ReLU()``).

    Shape: any complex tensor -> same shape.

    Examples::

        >>> SplitActivation("relu")(torch.tensor([1 - 2j, -3 + 4j]))
        tensor([1.+0.j, 0.+4.j])
    """

    def __init__(self, activation: str | Callable[[Tensor], Tensor] = "relu") -> None:
        super().__init__()
        if isinstance(activation, str):
            if activation not in ACTIVATIONS:
                raise ValueError(f"unknown activation {activation!r}; valid names: {', '.join(ACTIVATIONS)}")
            self.name, self.fn = activation, ACTIVATIONS[activation]
        elif isinstance(activation, type):  # nn.ReLU itself: calling it would build a module, not apply one
            raise TypeError(f"activation must be a name, a function or a module instance, got the class "
                            f"{activation.__name__}; pass {activation.__name__}() instead")
        elif callable(activation):
            self.name, self.fn = getattr(activation, "__name__", type(activation).__name__), activation
        else:
            raise TypeError(f"activation must be a name or a callable, got {type(activation).__name__}")

    def forward(self, input: Tensor) -> Tensor:
        """``f(Re z) + i f(Im z)``: complex in, complex out (same shape)."""
        return CF.split_activation(input, self.fn)

    def extra_repr(self) -> str:
        return "" if isinstance(self.fn, nn.Module) else self.name  # a module is printed as the child (fn)


class ComplexDropout(nn.Module):
    """Dropout of whole complex units (one mask for both parts); see :func:`complex_dropout`.

    Args:
        p: the probability that a unit (both its parts) is zeroed, in [0, 1]; kept units are scaled by ``1/(1-p)``
            in training, and nothing is dropped in ``eval()`` mode.

    Shape: any complex tensor -> same shape.

    Examples::

        >>> out = ComplexDropout(0.5)(torch.ones(1000, dtype=torch.complex64) * (1 + 1j))
        >>> bool(((out.real == 0) == (out.imag == 0)).all())  # a unit is dropped whole, both parts
        True
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        CF.check_dropout(p, "dropout probability p")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        """Zeroes whole complex entries with probability ``p`` in training (one mask for both parts), scaling the
        rest by ``1 / (1 - p)``; the identity in eval mode."""
        return CF.complex_dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Modulus(nn.Module):
    """Read-out ``|z|`` of the last complex layer (real output).

    Args:
        eps: a finite number >= 0; with ``eps > 0`` the read-out is ``sqrt(|z|^2 + eps)``, differentiable at
            ``z = 0`` (see :func:`modulus`).

    Shape: a complex tensor of any shape -> a real tensor of the same shape.

    Examples::

        >>> Modulus()(torch.tensor([3 + 4j, -1j]))
        tensor([5., 1.])
    """

    def __init__(self, eps: float = 0.0) -> None:
        super().__init__()
        CF.check_modulus_eps(eps)
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        """``|z|`` (``sqrt(|z|^2 + eps)`` with ``eps > 0``): complex in, real out (same shape)."""
        return CF.modulus(input, self.eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}" if self.eps else ""
