"""Complex 1-d convolution (paper appendix B: Eq. 10 applied to kernels)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import functional as CF
from .linear import init_complex_pair

__all__ = ["ComplexConv1d"]


def _single(value, name: str, low: int = 1) -> int:
    """An ``nn.Conv1d``-style size (an int or a 1-tuple) as an int >= ``low``; a one-line error otherwise."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    number = CF.as_integer(value)
    if number is None or number < low:
        raise ValueError(f"{name} must be an integer >= {low} (or a 1-tuple of one), got {value!r}")
    return number


class ComplexConv1d(nn.Module):
    r"""Complex convolution over time, ``(A*x - B*y + c) + i(B*x + A*y + d)``.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation: as
            :class:`torch.nn.Conv1d` (an int or a 1-tuple; ``padding`` also ``"valid"`` or ``"same"``);
            ``padding=0`` (default) is the narrow convolution of the paper.
        bias: learn ``c + id``.
        share_weights: ``A = B`` and ``c = d`` (half the parameters).

    Shape:
        ``[N, C_in, L]`` complex -> ``[N, C_out, (L + 2 padding - dilation (k - 1) - 1) // stride + 1]``; unbatched
        ``[C_in, L]`` -> ``[C_out, L_out]``, as :class:`torch.nn.Conv1d`.

    Examples::

        >>> conv = ComplexConv1d(300, 100, 3)
        >>> conv(torch.randn(2, 300, 20, dtype=torch.complex64)).shape
        torch.Size([2, 100, 18])
    """

    weight_imag: Tensor | None  # registered in __init__ (None: share_weights, or no bias)
    bias_real: Tensor | None
    bias_imag: Tensor | None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int], stride: int | tuple[int] = 1,
                 padding: int | tuple[int] | str = 0, dilation: int | tuple[int] = 1, *, bias: bool = True,
                 share_weights: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(bias=bias, share_weights=share_weights)
        factory = {"device": device, "dtype": dtype}
        in_channels = CF.positive_int(in_channels, "in_channels")
        out_channels = CF.positive_int(out_channels, "out_channels")
        kernel_size, stride, dilation = (_single(v, name) for v, name in ((kernel_size, "kernel_size"),
                                                                          (stride, "stride"), (dilation, "dilation")))
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"padding must be an integer, 'valid' or 'same' (as torch.nn.Conv1d), got {padding!r}")
            if padding == "same" and stride != 1:
                raise ValueError("padding='same' is not supported for strided convolutions (as torch.nn.Conv1d)")
            padding = 0 if padding == "valid" else padding
        else:
            padding = _single(padding, "padding", low=0)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.share_weights = share_weights
        shape = (out_channels, in_channels, kernel_size)
        self.weight_real = nn.Parameter(torch.empty(shape, **factory))
        self.register_parameter("weight_imag", None if share_weights else nn.Parameter(torch.empty(shape, **factory)))
        self.register_parameter("bias_real", nn.Parameter(torch.empty(out_channels, **factory)) if bias else None)
        self.register_parameter("bias_imag", nn.Parameter(torch.empty(out_channels, **factory))
                                if bias and not share_weights else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_complex_pair(self.weight_real, self.weight_imag, self.in_channels * self.kernel_size,
                          self.bias_real, self.bias_imag)

    def forward(self, input: Tensor) -> Tensor:
        """Complex convolution over time: complex ``[N, C_in, L]`` -> ``[N, C_out, L_out]`` (unbatched ``[C_in, L]``
        -> ``[C_out, L_out]``)."""
        if input.dim() == 2 and input.shape[0] == self.in_channels:  # unbatched [C_in, L], as nn.Conv1d
            return self.forward(input.unsqueeze(0)).squeeze(0)
        if input.dim() != 3 or input.shape[1] != self.in_channels:
            raise ValueError(f"ComplexConv1d expects input [N, {self.in_channels}, L] or unbatched "
                             f"[{self.in_channels}, L], got {tuple(input.shape)}")
        padding = self.padding  # an integer, or "same" ("valid" is 0)
        if not isinstance(padding, str) and input.shape[-1] < self.dilation * (self.kernel_size - 1) + 1 - 2 * padding:
            raise ValueError(f"input length {input.shape[-1]} is shorter than the kernel ({self.kernel_size}); "
                             "pad the sequences to at least the kernel size")
        return CF.complex_conv1d(input, self.weight_real, self.weight_imag, self.bias_real, self.bias_imag,
                                 self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        if self.stride != 1:
            s += f", stride={self.stride}"
        if self.padding:
            s += f", padding={self.padding!r}"
        if self.dilation != 1:
            s += f", dilation={self.dilation}"
        if self.bias_real is None:
            s += ", bias=False"
        if self.share_weights:
            s += ", share_weights=True"
        return s
