"""The complex-order word wave, as pure functions: f(j, pos) = r_j * exp(i(w_j * pos + theta_j)).

Two implementations of paper Eq. 5 live here:

* :func:`complex_order_embedding_reference` -- the plain autograd path, written as the
  equation reads (gather, multiply, ``torch.polar``). It is the reference the tests hold
  every faster path to.
* :func:`complex_order_embedding` -- the fused path used by
  :class:`complexorder.ComplexOrderEmbedding`: one custom autograd function that gathers
  the rows once, computes ``cos``/``sin`` once, saves only the unit phasor for backward and
  scatters the gradients straight into the parameter tables (dense, or sparse like
  ``nn.Embedding(sparse=True)``).

Parameters may be *shared*: a table is ``[V, D]`` (one value per word and dimension),
``[1, D]`` (word-sharing: all words share one value per dimension) or ``[V, 1]``
(dimension-sharing: one value per word). Both functions accept any of these shapes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "complex_order_embedding",
    "complex_order_embedding_reference",
    "gather_rows",
]


def gather_rows(table: Tensor, tokens: Tensor) -> Tensor:
    """Rows of a possibly shared ``[V|1, D|1]`` table for ``tokens`` of shape ``S``.

    Returns a tensor broadcastable to ``S + (D,)``: ``table[tokens]`` for a per-word table
    (shape ``S + (table.shape[1],)``) and a broadcast view for a word-shared ``[1, D]`` table
    (shape ``(1,) * len(S) + (D,)``). Differentiable with plain autograd.
    """
    if table.shape[0] == 1:
        return table.view((1,) * tokens.dim() + (table.shape[1],))
    return F.embedding(tokens, table)


def complex_order_embedding_reference(
    tokens: Tensor,
    positions: Tensor,
    amplitude: Tensor,
    frequency: Tensor,
    initial_phase: Tensor | None = None,
    padding_idx: int | None = None,
) -> Tensor:
    """Paper Eq. 5 with plain autograd: ``r[tokens] * exp(i (w[tokens] * pos + theta[tokens]))``.

    Args:
        tokens: integer tensor of shape ``S`` (already validated).
        positions: real tensor broadcastable to ``S`` (already converted to the table dtype).
        amplitude, frequency, initial_phase: real tables of shape ``[V|1, D|1]``.
        padding_idx: tokens equal to it embed to exactly zero.

    Returns:
        complex tensor of shape ``S + (D,)``.
    """
    r = gather_rows(amplitude, tokens)
    phase = gather_rows(frequency, tokens) * positions.unsqueeze(-1)
    if initial_phase is not None:
        phase = phase + gather_rows(initial_phase, tokens)
    dim = max(amplitude.shape[1], frequency.shape[1],
              1 if initial_phase is None else initial_phase.shape[1])
    shape = tuple(tokens.shape) + (dim,)
    r = r.expand(shape)
    if padding_idx is not None:
        r = r * (tokens != padding_idx).unsqueeze(-1).to(r.dtype)
    # Not torch.polar: its backward assumes r >= 0, while amplitudes (e.g. word2vec) are signed.
    return torch.complex(r * torch.cos(phase), r * torch.sin(phase))


def _scatter_rows(grad_rows: Tensor, shape: torch.Size, flat_tokens: Tensor, sparse: bool) -> Tensor:
    """Gradient of a ``[V|1, D|1]`` table of ``shape`` gathered by ``flat_tokens``.

    ``grad_rows`` is the gradient of the gathered rows, of shape ``[N, D]``.
    """
    if shape[1] == 1 and grad_rows.shape[1] != 1:
        grad_rows = grad_rows.sum(1, keepdim=True)
    if shape[0] == 1:
        return grad_rows.sum(0, keepdim=True)
    if sparse:
        return torch.sparse_coo_tensor(flat_tokens.unsqueeze(0), grad_rows, shape, check_invariants=False)
    return grad_rows.new_zeros(shape).index_add_(0, flat_tokens, grad_rows)


class _ComplexOrderWave(torch.autograd.Function):
    """Fused forward/backward of Eq. 5. Saves tokens, positions and the unit phasor only."""

    @staticmethod
    def forward(ctx, tokens, positions, amplitude, frequency, initial_phase, padding_idx, sparse):
        shape = tuple(tokens.shape)
        flat = tokens.reshape(-1)
        n = flat.numel()
        dim = max(amplitude.shape[1], frequency.shape[1],
                  1 if initial_phase is None else initial_phase.shape[1])
        pos = positions.expand(shape).reshape(n, 1)
        # phase = w[tokens] * pos (+ theta[tokens]), computed in place on the gathered copy.
        if frequency.shape[0] == 1:
            phase = frequency.expand(n, frequency.shape[1]) * pos
        else:
            phase = frequency.index_select(0, flat).mul_(pos)
        if initial_phase is not None:
            theta = initial_phase if initial_phase.shape[0] == 1 else initial_phase.index_select(0, flat)
            phase = phase + theta
        cos = torch.cos(phase)  # [n, D] or [n, 1] (dimension-shared frequency, no theta)
        sin = torch.sin(phase)
        r = amplitude.expand(n, amplitude.shape[1]) if amplitude.shape[0] == 1 else amplitude.index_select(0, flat)
        if padding_idx is not None:
            r = r * (flat != padding_idx).unsqueeze(1).to(r.dtype)
        out = torch.empty((n, dim, 2), dtype=cos.dtype, device=cos.device)
        torch.mul(r, cos, out=out[..., 0])
        torch.mul(r, sin, out=out[..., 1])
        ctx.save_for_backward(flat, pos, cos, sin, amplitude, frequency)
        ctx.phase_shape = None if initial_phase is None else initial_phase.shape
        ctx.padding_idx = padding_idx
        ctx.sparse = sparse
        return torch.view_as_complex(out).view(shape + (dim,))

    @staticmethod
    def backward(ctx, grad_out):
        flat, pos, cos, sin, amplitude, frequency = ctx.saved_tensors
        n = flat.numel()
        g = torch.view_as_real(grad_out.reshape(n, grad_out.shape[-1]))
        g_re, g_im = g[..., 0], g[..., 1]
        keep = None if ctx.padding_idx is None else (flat != ctx.padding_idx).unsqueeze(1).to(cos.dtype)
        grad_r = grad_w = grad_theta = None
        need_r, need_w, need_theta = ctx.needs_input_grad[2:5]
        if need_r:
            grad_r = torch.addcmul(g_re * cos, g_im, sin)
            if keep is not None:
                grad_r.mul_(keep)
            grad_r = _scatter_rows(grad_r, amplitude.shape, flat, ctx.sparse)
        if need_w or need_theta:
            r = amplitude.expand(n, amplitude.shape[1]) if amplitude.shape[0] == 1 else amplitude.index_select(0, flat)
            if keep is not None:
                r = r * keep
            # d out / d phase = i * out  =>  dL/dphase = Re(conj(g) * i * out) = r (g_im cos - g_re sin)
            grad_phase = (g_im * cos).sub_(g_re * sin).mul_(r)
            if need_theta:
                grad_theta = _scatter_rows(grad_phase, ctx.phase_shape, flat, ctx.sparse)
            if need_w:
                grad_w = _scatter_rows(grad_phase.mul_(pos), frequency.shape, flat, ctx.sparse)
        return None, None, grad_r, grad_w, grad_theta, None, None


def complex_order_embedding(
    tokens: Tensor,
    positions: Tensor,
    amplitude: Tensor,
    frequency: Tensor,
    initial_phase: Tensor | None = None,
    padding_idx: int | None = None,
    sparse: bool = False,
) -> Tensor:
    """Fused paper Eq. 5; same contract and result as :func:`complex_order_embedding_reference`.

    Gradients flow to ``amplitude``, ``frequency`` and ``initial_phase`` (not to ``positions``,
    which are treated as data). With ``sparse=True`` the gradients of per-word ``[V, *]``
    tables are ``torch.sparse_coo_tensor`` (pair them with ``torch.optim.SparseAdam``, ``SGD``
    or ``Adagrad``); word-shared ``[1, D]`` tables always get dense gradients.
    """
    return _ComplexOrderWave.apply(tokens, positions, amplitude, frequency, initial_phase,
                                   padding_idx, sparse)
