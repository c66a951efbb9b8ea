"""Complex LSTM (paper Eq. 12 with complex gates), run by PyTorch's fused LSTM kernel."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import functional as CF
from .functional import _require_complex, _require_matching_dtype
from .linear import init_complex_pair

__all__ = ["ComplexLSTM", "complex_lstm_block_weight"]


def complex_lstm_block_weight(weight_real: Tensor, weight_imag: Tensor | None) -> Tensor:
    """Real block form of the four complex gate matrices, in PyTorch's LSTM layout.

    ``weight_* [4H, n]`` (gates i, f, g, o stacked) becomes ``[8H, 2n]`` whose gate ``k`` block is
    ``[[A_k, -B_k], [B_k, A_k]]``: it maps ``[x_re, x_im]`` to ``[Re(W_k z), Im(W_k z)]``.
    """
    b = weight_real if weight_imag is None else weight_imag
    four_h, n = weight_real.shape
    a4 = weight_real.view(4, four_h // 4, n)
    b4 = b.view(4, four_h // 4, n)
    top = torch.cat((a4, -b4), dim=-1)
    bottom = torch.cat((b4, a4), dim=-1)
    return torch.stack((top, bottom), dim=1).reshape(2 * four_h, 2 * n)


class ComplexLSTM(nn.Module):
    r"""Single-layer complex LSTM: paper Eq. 12 with complex gates.

    Every gate pre-activation is a complex affine map of the input and the previous hidden state,
    ``W^z z_t + W^h h_{t-1} + b`` (Eq. 10), passed through the split activation
    ``f(z) = sigma(Re z) + i sigma(Im z)`` (tanh for the candidate). The gating products
    ``f * c`` and ``o * tanh(c)`` are taken part by part, like the activation: a full complex
    product would let ``|f|`` reach ``sqrt 2`` and the cell grow without bound. The whole cell is
    then exactly a real LSTM of width ``2H`` whose weights have the complex block structure, so it
    runs in PyTorch's fused LSTM kernel (``torch.lstm``), with packing for variable lengths.

    Args:
        input_size, hidden_size: complex widths.
        bias: learn a complex bias per gate.
        batch_first: input/output as ``[B, L, *]`` (default ``False``: ``[L, B, *]``, as :class:`torch.nn.LSTM`).
        share_weights: ``A = B``, ``c = d`` for all gate matrices.

    Shape:
        - input: ``[B, L, input_size]`` (batch_first) or ``[L, B, input_size]`` complex.
        - hx: optional ``(h_0, c_0)``, each ``[1, B, hidden_size]`` complex.
        - lengths: optional ``[B]`` integer tensor of valid lengths; outputs past a sequence's end are 0
          and ``h_n``/``c_n`` are taken at its last valid step.
        - output: ``[B, L, hidden_size]`` (batch_first) or ``[L, B, hidden_size]`` complex; ``(h_n, c_n)`` each
          ``[1, B, hidden_size]`` complex (whatever ``batch_first``, as :class:`torch.nn.LSTM`).

    Examples::

        >>> lstm = ComplexLSTM(16, 8, batch_first=True)
        >>> out, (h, c) = lstm(torch.randn(2, 5, 16, dtype=torch.complex64), lengths=torch.tensor([5, 3]))
        >>> out.shape, h.shape
        (torch.Size([2, 5, 8]), torch.Size([1, 2, 8]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, batch_first: bool = False,
                 share_weights: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(bias=bias, batch_first=batch_first, share_weights=share_weights)
        factory = {"device": device, "dtype": dtype}
        self.input_size, self.hidden_size = input_size, hidden_size
        self.batch_first, self.share_weights = batch_first, share_weights
        h4 = 4 * hidden_size
        self.weight_ih_real = nn.Parameter(torch.empty(h4, input_size, **factory))
        self.weight_hh_real = nn.Parameter(torch.empty(h4, hidden_size, **factory))
        for name, cols in (("weight_ih_imag", input_size), ("weight_hh_imag", hidden_size)):
            self.register_parameter(name, None if share_weights else nn.Parameter(torch.empty(h4, cols, **factory)))
        self.register_parameter("bias_real", nn.Parameter(torch.empty(h4, **factory)) if bias else None)
        self.register_parameter("bias_imag", nn.Parameter(torch.empty(h4, **factory))
                                if bias and not share_weights else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_complex_pair(self.weight_ih_real, self.weight_ih_imag, self.hidden_size, self.bias_real, self.bias_imag)
        init_complex_pair(self.weight_hh_real, self.weight_hh_imag, self.hidden_size)

    def _real_params(self) -> list[Tensor]:
        w_ih = complex_lstm_block_weight(self.weight_ih_real, self.weight_ih_imag)
        w_hh = complex_lstm_block_weight(self.weight_hh_real, self.weight_hh_imag)
        if self.bias_real is None:
            return [w_ih, w_hh]
        h = self.hidden_size
        d = self.bias_real if self.bias_imag is None else self.bias_imag
        b = torch.stack((self.bias_real.view(4, h), d.view(4, h)), dim=1).reshape(8 * h)
        return [w_ih, w_hh, b, torch.zeros_like(b)]

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None,
                lengths: Tensor | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        _require_complex("input", input)
        _require_matching_dtype(input, self.weight_ih_real)
        if input.dim() != 3 or input.shape[-1] != self.input_size:
            raise ValueError(f"ComplexLSTM expects input [B, L, {self.input_size}] (batch_first) or "
                             f"[L, B, {self.input_size}], got {tuple(input.shape)}")
        h = self.hidden_size
        x = torch.cat((input.real, input.imag), dim=-1)
        batch = x.shape[0] if self.batch_first else x.shape[1]
        if hx is None:
            zeros = x.new_zeros(1, batch, 2 * h)
            real_hx = (zeros, zeros)
        else:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError(f"hx must be a pair (h_0, c_0) of complex tensors [1, {batch}, {h}], got "
                                f"{type(hx).__name__}")
            for name, t in zip(("h_0", "c_0"), hx):  # torch.lstm itself checks none of this (a wrong batch
                _require_complex(f"hx's {name}", t)  # size read past the buffer)
                if tuple(t.shape) != (1, batch, h):
                    raise ValueError(f"hx's {name} must be [1, {batch}, {h}] (one layer, the input's batch, "
                                     f"hidden_size), got {tuple(t.shape)}")
                if t.dtype != input.dtype:  # was cast silently (complex128 state rounded into a float32 layer)
                    raise TypeError(f"hx's {name} is {t.dtype} but the input is {input.dtype}: give both in one "
                                    "dtype")
            real_hx = tuple(torch.cat((t.real, t.imag), dim=-1) for t in hx)
        params = self._real_params()
        has_bias = self.bias_real is not None
        if lengths is not None:
            lengths = torch.as_tensor(lengths)
            if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:  # 2.7 became 2
                raise ValueError(f"lengths must be integers (an integer tensor or list), got dtype {lengths.dtype}")
            lengths = lengths.to("cpu", torch.int64)
            if lengths.shape != (batch,) or (batch and (lengths.min() < 1
                                                        or lengths.max() > x.shape[1 if self.batch_first else 0])):
                raise ValueError(f"lengths must be [{batch}] integers in [1, L], got {lengths.tolist()}")
        if lengths is None or batch == 0:  # an empty batch has nothing to pack
            out, h_n, c_n = torch.lstm(x, real_hx, params, has_bias, 1, 0.0, self.training, False, self.batch_first)
        else:
            total = x.shape[1 if self.batch_first else 0]
            packed = pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=False)
            order = packed.sorted_indices
            sorted_hx = tuple(t.index_select(1, order) for t in real_hx)
            data, h_n, c_n = torch.lstm(packed.data, packed.batch_sizes, sorted_hx, params, has_bias, 1, 0.0,
                                        self.training, False)
            packed_out = packed._replace(data=data)
            out, _ = pad_packed_sequence(packed_out, batch_first=self.batch_first, total_length=total)
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = c_n.index_select(1, packed.unsorted_indices)
        as_complex = lambda t: torch.complex(t[..., :h], t[..., h:])  # noqa: E731
        return as_complex(out), (as_complex(h_n), as_complex(c_n))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias_real is None:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.share_weights:
            s += ", share_weights=True"
        return s
