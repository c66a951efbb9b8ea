"""Complex LSTM (paper Eq. 12 with complex gates), run by PyTorch's fused LSTM kernel."""

from __future__ import annotations

import warnings
from typing import cast

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from . import functional as CF
from .functional import _require_complex, _require_matching_dtype
from .linear import init_complex_pair

__all__ = ["ComplexLSTM", "complex_lstm_block_weight"]


@torch._disable_dynamo
def _lstm_eager(*args) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.lstm`` outside dynamo's graph. ``torch._disable_dynamo`` (private; torch uses it for its own such
    functions) imports dynamo at the first call: ``torch.compiler.disable`` at import loaded torch._dynamo, inductor
    and sympy with the package (1.2 s), and a wrapper made lazily in this module was a global dynamo guarded on, so
    the second compiled call recompiled (tests/test_compile.py holds both)."""
    return torch.lstm(*args)


def _lstm(x: Tensor, *args) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.lstm(x, *args)``, run outside ``torch.compile``'s graph when it records gradients: its traced backward
    fails (aot_autograd: "expected all tensors_saved_with_vc_check to be Tensors"; inductor: "expected Tensor() for
    op mkldnn_rnn_layer"), so it is a graph break there, as ``torch.nn.LSTM`` is (dynamo runs those eagerly). Without
    gradients (``no_grad``, or frozen weights and an input that needs none) it traces, and ``fullgraph=True`` works."""
    if torch.compiler.is_compiling() and torch.is_grad_enabled() and (
            x.requires_grad or any(t.requires_grad for t in args if isinstance(t, Tensor))
            or any(t.requires_grad for group in args if isinstance(group, (list, tuple)) for t in group)):
        return _lstm_eager(x, *args)
    return torch.lstm(x, *args)


def _probe_cpu_lstm_bfloat16() -> bool:
    """Whether the CPU's LSTM kernel (oneDNN) has a bfloat16 form on this processor: torch's own check
    (``torch.ops.mkldnn._is_mkldnn_bf16_supported``, private; AVX-512 processors have one, AVX2 ones do not). False when
    torch lacks the check: the float32 fallback is then taken, correct on every processor."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# Asked once, at import (about a microsecond): a plain bool is a constant to ``torch.compile``, where the op's bool
# result broke ``fullgraph=True`` (and ``torch.compiler.assume_constant_result`` would load dynamo with the package).
_CPU_LSTM_HAS_BFLOAT16 = _probe_cpu_lstm_bfloat16()


def _lstm_kernel_dtype(x: Tensor) -> torch.dtype | None:
    """Under a CPU autocast whose dtype the CPU's LSTM kernel (oneDNN) has no form for, the dtype the kernel runs in
    instead, with autocast off: float32 (float64 for a float64 ``x``, which autocast leaves alone anyway). That is a
    float16 autocast on most processors, and a bfloat16 one (the CPU's default) on processors without AVX-512 ("could
    not create a primitive descriptor for the LSTM forward propagation primitive", torch.nn.LSTM's error there too).
    None everywhere else: the kernel runs as autocast has it."""
    if x.device.type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return None
    dtype = torch.get_autocast_dtype("cpu")
    if dtype == torch.float16 or (dtype == torch.bfloat16 and not _CPU_LSTM_HAS_BFLOAT16):
        return torch.promote_types(x.dtype, torch.float32)
    return None


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
    r"""Complex LSTM: paper Eq. 12 with complex gates, one or more layers, one or both directions.

    Every gate pre-activation is a complex affine map of the input and the previous hidden state,
    ``W^z z_t + W^h h_{t-1} + b`` (Eq. 10), passed through the split activation
    ``f(z) = sigma(Re z) + i sigma(Im z)`` (tanh for the candidate). The gating products
    ``f * c`` and ``o * tanh(c)`` are taken part by part, like the activation: a full complex
    product would let ``|f|`` reach ``sqrt 2`` and the cell grow without bound. The whole cell is
    then exactly a real LSTM of width ``2H`` whose weights have the complex block structure, so it
    runs in PyTorch's fused LSTM kernel (``torch.lstm``), with packing for variable lengths.

    Layers and directions follow :class:`torch.nn.LSTM`: layer ``k > 0`` reads layer ``k - 1``'s output (both
    directions joined, ``num_directions * hidden_size`` complex features), the reverse direction reads each
    sequence backwards from its last valid step, and ``dropout`` drops whole complex units
    (:func:`~complexorder.nn.functional.complex_dropout`, one mask for both parts) of every layer's output but
    the last, in training only.

    Args:
        input_size, hidden_size: complex widths.
        num_layers: stacked LSTM layers (default 1).
        bias: learn a complex bias per gate.
        batch_first: input/output as ``[B, L, *]`` (default ``False``: ``[L, B, *]``, as :class:`torch.nn.LSTM`).
        dropout: complex dropout between layers, in ``[0, 1]`` (default 0; with one layer it has no effect,
            and a warning says so, as :class:`torch.nn.LSTM`).
        bidirectional: run a second LSTM over each sequence backwards and join both directions' outputs.
        share_weights: ``A = B``, ``c = d`` for all gate matrices.

    Attributes:
        weight_ih_real, weight_ih_imag, weight_hh_real, weight_hh_imag, bias_real, bias_imag: layer 0's
            forward direction (``[4H, input_size]``, ``[4H, H]``, ``[4H]``; gates i, f, g, o stacked), the names
            of the single-layer LSTM, so its state dicts still load. Layer ``k``'s carry the suffix ``_l{k}`` and
            the reverse direction's ``_reverse`` (``weight_ih_real_l1_reverse``); ``*_imag`` are ``None`` with
            ``share_weights``.

    Shape:
        - input: ``[B, L, input_size]`` (batch_first), ``[L, B, input_size]``, or unbatched ``[L, input_size]``,
          complex.
        - hx: optional ``(h_0, c_0)``, each ``[num_layers * num_directions, B, hidden_size]`` complex
          (``[num_layers * num_directions, hidden_size]`` for an unbatched input).
        - lengths: optional ``[B]`` integer tensor of valid lengths (batched input only); outputs past a
          sequence's end are 0, and ``h_n``/``c_n`` are the forward direction's at its last valid step (the reverse
          direction's at its first, where it ends).
        - output: ``[B, L, num_directions * hidden_size]`` (batch_first), ``[L, B, num_directions * hidden_size]``
          or ``[L, num_directions * hidden_size]`` complex (forward direction first); ``(h_n, c_n)`` each
          ``[num_layers * num_directions, B, hidden_size]`` complex (whatever ``batch_first``, as
          :class:`torch.nn.LSTM`; without ``B`` for an unbatched input).

    Examples::

        >>> lstm = ComplexLSTM(16, 8, batch_first=True)
        >>> out, (h, c) = lstm(torch.randn(2, 5, 16, dtype=torch.complex64), lengths=torch.tensor([5, 3]))
        >>> out.shape, h.shape
        (torch.Size([2, 5, 8]), torch.Size([1, 2, 8]))
        >>> deep = ComplexLSTM(16, 8, num_layers=2, bidirectional=True)
        >>> out, (h, c) = deep(torch.randn(5, 16, dtype=torch.complex64))  # unbatched [L, input_size]
        >>> out.shape, h.shape
        (torch.Size([5, 16]), torch.Size([4, 8]))
    """

    weight_ih_real: Tensor  # registered by name in __init__ (with the other weights, per layer and direction)
    bias_real: Tensor | None

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, *,
                 share_weights: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(num_layers, bool):
            # ComplexLSTM(n, h, True) meant bias=True before num_layers took the third place (torch's order)
            raise TypeError(f"num_layers must be a positive integer, got {num_layers!r} (bias is a keyword: "
                            "ComplexLSTM(input_size, hidden_size, bias=...))")
        CF.check_flags(bias=bias, batch_first=batch_first, bidirectional=bidirectional, share_weights=share_weights)
        input_size, hidden_size, num_layers = (CF.positive_int(value, name) for name, value in (
            ("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)))
        CF.check_dropout(dropout)
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"ComplexLSTM: dropout={dropout} acts between layers, so with num_layers=1 it has no "
                          "effect", stacklevel=2)
        factory = {"device": device, "dtype": dtype}
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.batch_first, self.dropout = batch_first, float(dropout)
        self.bidirectional, self.share_weights = bidirectional, share_weights
        h4 = 4 * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            cols = input_size if layer == 0 else directions * hidden_size
            for suffix in self._suffixes(layer):  # in the single-layer LSTM's order (optimizer states match by it)
                for name, width in (("weight_ih_real", cols), ("weight_hh_real", hidden_size)):
                    self.register_parameter(f"{name}{suffix}", nn.Parameter(torch.empty(h4, width, **factory)))
                for name, width in (("weight_ih_imag", cols), ("weight_hh_imag", hidden_size)):
                    self.register_parameter(f"{name}{suffix}", None if share_weights else
                                            nn.Parameter(torch.empty(h4, width, **factory)))
                self.register_parameter(f"bias_real{suffix}", nn.Parameter(torch.empty(h4, **factory))
                                        if bias else None)
                self.register_parameter(f"bias_imag{suffix}", nn.Parameter(torch.empty(h4, **factory))
                                        if bias and not share_weights else None)
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> list[str]:
        base = "" if layer == 0 else f"_l{layer}"
        return [base, base + "_reverse"] if self.bidirectional else [base]

    def _cell(self, suffix: str) -> list[Tensor | None]:
        return [getattr(self, f"{name}{suffix}") for name in
                ("weight_ih_real", "weight_ih_imag", "weight_hh_real", "weight_hh_imag", "bias_real", "bias_imag")]

    def reset_parameters(self) -> None:
        for layer in range(self.num_layers):
            for suffix in self._suffixes(layer):
                ih_re, ih_im, hh_re, hh_im, b_re, b_im = self._cell(suffix)
                init_complex_pair(cast(Tensor, ih_re), ih_im, self.hidden_size, b_re, b_im)  # *_real: never None
                init_complex_pair(cast(Tensor, hh_re), hh_im, self.hidden_size)

    def _real_params(self, suffix: str = "") -> list[Tensor]:
        """One direction of one layer as the real LSTM's ``[w_ih, w_hh(, b_ih, b_hh)]``."""
        # (under autocast, half weights as float32 first: autocast's cat refuses float16 under bfloat16)
        ih_re, ih_im, hh_re, hh_im, b_re, b_im = (None if t is None else CF._autocast_weight(t)
                                                  for t in self._cell(suffix))
        w_ih = complex_lstm_block_weight(cast(Tensor, ih_re), ih_im)  # the *_real weights are never None
        w_hh = complex_lstm_block_weight(cast(Tensor, hh_re), hh_im)
        if b_re is None:
            return [w_ih, w_hh]
        h = self.hidden_size
        d = b_re if b_im is None else b_im
        b = torch.stack((b_re.view(4, h), d.view(4, h)), dim=1).reshape(8 * h)
        return [w_ih, w_hh, b, torch.zeros_like(b)]

    def _check_state(self, hx, batch: int | None, dtype: torch.dtype) -> None:
        states = self.num_layers * self.num_directions
        shape = (states, self.hidden_size) if batch is None else (states, batch, self.hidden_size)
        form = f"[{', '.join(map(str, shape))}]"
        if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"hx must be a pair (h_0, c_0) of complex tensors {form}, got {type(hx).__name__}")
        for name, t in zip(("h_0", "c_0"), hx):  # torch.lstm itself checks none of this (a wrong batch
            _require_complex(f"hx's {name}", t)  # size read past the buffer)
            if tuple(t.shape) != shape:
                what = "num_layers * num_directions, " + ("" if batch is None else "the input's batch, ")
                raise ValueError(f"hx's {name} must be {form} ({what}hidden_size), got {tuple(t.shape)}")
            if t.dtype != dtype:  # was cast silently (complex128 state rounded into a float32 layer)
                raise TypeError(f"hx's {name} is {t.dtype} but the input is {dtype}: give both in one dtype")

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None,
                lengths: Tensor | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Eq. 12 over a sequence: complex ``input`` ``[B, L, input_size]`` (``batch_first``), ``[L, B, *]`` or
        unbatched ``[L, *]``; ``hx`` an optional complex ``(h_0, c_0)``; ``lengths`` an optional ``[B]`` of true
        lengths (packed inside). Returns ``(output, (h_n, c_n))`` as :class:`torch.nn.LSTM` does, complex."""
        _require_complex("input", input)
        _require_matching_dtype(input, self.weight_ih_real)
        if input.dim() not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(f"ComplexLSTM expects input [B, L, {self.input_size}] (batch_first), "
                             f"[L, B, {self.input_size}] or unbatched [L, {self.input_size}], got {tuple(input.shape)}")
        unbatched = input.dim() == 2
        if unbatched:
            if lengths is not None:
                raise ValueError("lengths is for a batched input [B, L, *] or [L, B, *]; an unbatched sequence "
                                 "[L, *] is read whole (slice it to its length)")
            if hx is not None:
                self._check_state(hx, None, input.dtype)
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            input = input.unsqueeze(0 if self.batch_first else 1)
        h = self.hidden_size
        input = CF._autocast_input(input)  # under autocast, complex32 as complex64 (autocast's cat refuses float16)
        x = torch.cat((input.real, input.imag), dim=-1)
        batch = x.shape[0] if self.batch_first else x.shape[1]
        states = self.num_layers * self.num_directions
        real_hx: tuple[Tensor, ...]
        if hx is None:
            zeros = x.new_zeros(states, batch, 2 * h)
            real_hx = (zeros, zeros)
        else:
            if not unbatched:
                self._check_state(hx, batch, input.dtype)
            real_hx = tuple(torch.cat((t.real, t.imag), dim=-1) for t in map(CF._autocast_input, hx))
        if lengths is not None:
            lengths = torch.as_tensor(lengths)
            if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:  # 2.7 became 2
                raise ValueError(f"lengths must be integers (an integer tensor or list), got dtype {lengths.dtype}")
            lengths = lengths.to("cpu", torch.int64)
            if lengths.shape != (batch,) or (batch and (lengths.min() < 1
                                                        or lengths.max() > x.shape[1 if self.batch_first else 0])):
                raise ValueError(f"lengths must be [{batch}] integers in [1, L], got {lengths.tolist()}")
        packed = None
        if lengths is not None and batch > 0:  # an empty batch has nothing to pack
            # enforce_sorted=False: the packed sequence's sorted_indices and unsorted_indices are set
            packed = pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=False)
            real_hx = tuple(t.index_select(1, cast(Tensor, packed.sorted_indices)) for t in real_hx)
            x = packed.data
        h_n: list[Tensor] | Tensor  # the layers' states, then their concatenation
        c_n: list[Tensor] | Tensor
        h_n, c_n = [], []
        dirs = self.num_directions
        for layer in range(self.num_layers):
            if layer > 0:
                x = self._next_input(x)
            params = [p for suffix in self._suffixes(layer) for p in self._real_params(suffix)]
            state = tuple(t[layer * dirs:(layer + 1) * dirs] for t in real_hx)
            dtype = _lstm_kernel_dtype(x)
            if dtype is None:
                x, hl, cl = self._kernel(x, state, params, packed)
            else:
                with torch.autocast("cpu", enabled=False):
                    x, hl, cl = self._kernel(x.to(dtype), tuple(t.to(dtype) for t in state),
                                             [p.to(dtype) for p in params], packed)
            h_n.append(hl)
            c_n.append(cl)
        h_n, c_n = torch.cat(h_n), torch.cat(c_n)
        if packed is not None:
            total = input.shape[1 if self.batch_first else 0]
            x, _ = pad_packed_sequence(packed._replace(data=x), batch_first=self.batch_first, total_length=total)
            h_n = h_n.index_select(1, cast(Tensor, packed.unsorted_indices))
            c_n = c_n.index_select(1, cast(Tensor, packed.unsorted_indices))
        out = self._as_complex_output(x)
        h_n, c_n = (CF._join(t[..., :h], t[..., h:]) for t in (h_n, c_n))  # complex64 under autocast
        if unbatched:
            out = out.squeeze(0 if self.batch_first else 1)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return out, (h_n, c_n)

    def _kernel(self, x: Tensor, state: tuple[Tensor, ...], params: list[Tensor],
                packed: PackedSequence | None) -> tuple[Tensor, Tensor, Tensor]:
        """One layer (both directions) of the real LSTM: ``torch.lstm`` on the padded or the packed input."""
        if packed is None:
            return _lstm(x, state, params, self.bias_real is not None, 1, 0.0, self.training, self.bidirectional,
                         self.batch_first)
        return _lstm(x, packed.batch_sizes, state, params, self.bias_real is not None, 1, 0.0, self.training,
                     self.bidirectional)

    def _as_complex_output(self, x: Tensor) -> Tensor:
        """The real kernel's output ``[..., (re, im) per direction]`` as complex ``[..., directions * H]``."""
        h = self.hidden_size
        if not self.bidirectional:
            return CF._join(x[..., :h], x[..., h:])
        return CF._join(torch.cat((x[..., :h], x[..., 2 * h:3 * h]), -1),
                        torch.cat((x[..., h:2 * h], x[..., 3 * h:]), -1))

    def _next_input(self, x: Tensor) -> Tensor:
        """A layer's real output as the next layer's real input ``[Re z, Im z]``, after complex dropout."""
        z = CF.complex_dropout(self._as_complex_output(x), self.dropout, self.training)
        return torch.cat((z.real, z.imag), dim=-1)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias_real is None:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        if self.share_weights:
            s += ", share_weights=True"
        return s
