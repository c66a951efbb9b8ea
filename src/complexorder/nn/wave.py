"""The complex-order word wave, as pure functions: f(j, pos) = r_j * exp(i(w_j * pos + theta_j)).

Two implementations of paper Eq. 5 live here:

* :func:`complex_order_embedding_reference` -- the plain autograd path, written as the
  equation reads (gather, multiply, ``cos``/``sin``). It is the reference the tests
  (``tests/test_fast_paths.py``) hold every faster path to.
* :func:`complex_order_embedding` -- the fused path used by
  :class:`complexorder.ComplexOrderEmbedding`: one custom autograd function. For CPU float32
  per-word tables it calls the native kernel (:mod:`complexorder.nn.native`: one pass each way,
  the phasor recomputed in backward instead of saved); otherwise (float64, CUDA, shared tables,
  or no compiled kernel) it gathers the rows once, computes ``cos``/``sin`` once, writes the
  interleaved complex output directly, saves the unit phasor and the gathered amplitudes for
  backward and scatters the gradients straight into the parameter tables (dense, or sparse like
  ``nn.Embedding(sparse=True)``).

Under ``torch.compile``, inside a ``torch.func`` transform (``grad``, ``vmap``, ``jvp``, ``jacrev``,
``jacfwd``, ...) and with forward-mode AD dual tensors (``torch.autograd.forward_ad``), the fused
functions run the reference instead (:func:`plain_autograd_required`): the native kernel reads raw
memory that dynamo cannot trace and a batched tensor does not have, and the fused function has
neither a batching rule nor a forward derivative. Under ``vmap``, ``sparse`` is ignored
(:func:`sparse_allowed`): PyTorch cannot batch sparse gradients.

Parameters may be *shared*: a table is ``[V, D]`` (one value per word and dimension),
``[1, D]`` (word-sharing: all words share one value per dimension) or ``[V, 1]``
(dimension-sharing: one value per word). Both functions accept any of these shapes.

Speed (``benchmarks/speed.py``, results in ``benchmarks/results/speed.md``): a dense
``[V, D]`` gradient is a table per parameter, the same bytes as the gradient of
``nn.Embedding(V, 2D)``; with large vocabularies filling it dominates the step, and
``sparse=True`` removes it. Sparse gradients need a sparse-aware optimizer for the tables and an
ordinary one for everything else::

    emb = ComplexOrderEmbedding(270_000, 300, padding_idx=0, sparse=True)
    model = build_classifier("cnn", emb, num_classes=2)
    tables = [p for p in emb.parameters() if p.shape[0] != 1]   # per-word [V, *] tables: sparse grads
    ids = {id(p) for p in tables}
    optimizers = [torch.optim.SparseAdam(tables, lr=1e-3),
                  torch.optim.Adam([p for p in model.parameters() if id(p) not in ids], lr=1e-3)]
    ...
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if id(p) not in ids], 5.0)  # dense only
    for opt in optimizers:
        opt.step()
        opt.zero_grad(set_to_none=True)

(word-shared ``[1, D]`` tables always get dense gradients and belong with Adam;
``torch.nn.utils.clip_grad_norm_`` does not accept sparse gradients.)
"""

from __future__ import annotations

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from . import native

__all__ = [
    "complex_order_embedding",
    "complex_order_embedding_reference",
    "complex_vanilla_embedding",
    "complex_vanilla_embedding_reference",
    "gather_rows",
]


# Whether a torch.func transform is active: the test torch.autograd.Function.apply itself makes (torch 2.x; no
# public equivalent). Absent (an older or newer torch without it): no transform is assumed.
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def _vmap_levels() -> bool:
    stack = getattr(torch._C._functorch, "get_interpreter_stack", lambda: None)()
    vmap = getattr(getattr(torch._C._functorch, "TransformType", None), "Vmap", None)
    return any(level.key() == vmap for level in stack or ())


def plain_autograd_required(*tensors: Tensor | None) -> bool:
    """Whether Eq. 5 must run as plain autograd (the reference) rather than the fused function.

    True under ``torch.compile`` (the native kernel is a ctypes call that dynamo cannot trace), inside a
    ``torch.func`` transform (``grad``, ``vmap``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ...: the fused
    function has no batching rule or forward derivative, and the kernel reads the memory of plain tensors only) and
    when one of ``tensors`` is a forward-mode AD dual tensor (``torch.autograd.forward_ad.make_dual``: the fused
    function has no ``jvp``; ``unpack_dual``, public, finds the tangent, inside a ``dual_level`` only). About 0.25
    microseconds per call in the common eager case (one thread; docs/speed.md), against milliseconds for the embedding's step.
    """
    if torch.compiler.is_compiling() or _functorch_active():
        return True
    # dual tensors exist only inside a forward_ad.dual_level(); outside one (the common case) nothing to unpack
    if getattr(fwAD, "_current_level", 0) < 0:
        return False
    return any(t is not None and fwAD.unpack_dual(t).tangent is not None for t in tensors)


def sparse_allowed(sparse: bool) -> bool:
    """``sparse``, except inside ``torch.func.vmap`` (per-sample gradients): PyTorch cannot batch sparse gradients
    (``nn.Embedding(sparse=True)`` fails there too), so the per-word tables get dense ones."""
    return sparse and not (_functorch_active() and _vmap_levels())


def gather_rows(table: Tensor, tokens: Tensor, padding_idx: int | None = None, sparse: bool = False) -> Tensor:
    """Rows of a possibly shared ``[V|1, D|1]`` table for ``tokens`` of shape ``S``.

    Returns a tensor broadcastable to ``S + (D,)``: ``table[tokens]`` for a per-word table
    (shape ``S + (table.shape[1],)``; ``padding_idx`` and ``sparse`` as in ``F.embedding``) and a
    broadcast view for a word-shared ``[1, D]`` table (shape ``(1,) * len(S) + (D,)``, dense
    gradient). Differentiable with plain autograd.
    """
    if table.shape[0] == 1:
        return table.view((1,) * tokens.dim() + (table.shape[1],))
    return F.embedding(tokens, table, padding_idx, sparse=sparse)


def resolve_padding_idx(padding_idx: int | None, *tables: Tensor | None) -> int | None:
    """``padding_idx`` as a token id: a negative one counts back from the end of the per-word tables.

    As ``F.embedding`` does with its weight; the vocabulary size is the row count of the per-word
    (``[V, *]``) tables among ``tables``. Raises a one-line ``ValueError`` when it is out of range or
    negative with every table word-shared (``[1, *]``: no vocabulary size to count back from).
    """
    if padding_idx is None:
        return None
    rows = [t.shape[0] for t in tables if t is not None and t.shape[0] != 1]
    if not rows:
        if padding_idx < 0:
            raise ValueError(f"padding_idx={padding_idx} counts back from the end of a per-word table, but every "
                             f"table is word-shared ([1, D]); pass the padding token's id (>= 0)")
        return padding_idx
    vocab = max(rows)
    if not -vocab <= padding_idx < vocab:
        raise ValueError(f"padding_idx must be within [-{vocab}, {vocab}) for tables of {vocab} rows, got {padding_idx}")
    return padding_idx % vocab


def complex_order_embedding_reference(
    tokens: Tensor,
    positions: Tensor,
    amplitude: Tensor,
    frequency: Tensor,
    initial_phase: Tensor | None = None,
    padding_idx: int | None = None,
    sparse: bool = False,
    phase_dropout: float = 0.0,
) -> Tensor:
    """Paper Eq. 5 with plain autograd: ``r[tokens] * exp(i (w[tokens] * pos + theta[tokens]))``.

    Args:
        tokens: integer tensor of shape ``S`` (already validated).
        positions: real tensor broadcastable to ``S`` (already converted to the table dtype);
            gradients flow to it when it requires one.
        amplitude, frequency, initial_phase: real tables of shape ``[V|1, D|1]``.
        padding_idx: tokens equal to it embed to exactly zero and give their rows no gradient; a
            negative one counts back from the end of the per-word tables, as in ``F.embedding``.
        sparse: sparse COO gradients for the per-word tables, as ``F.embedding(sparse=True)`` (dense inside
            ``torch.func.vmap``, which cannot batch sparse gradients: :func:`sparse_allowed`).
        phase_dropout: probability of inverted dropout (``F.dropout``) on the phases
            ``w * pos + theta`` before ``cos``/``sin`` (0, the default: none): each phase is set to 0 with
            this probability, the others scaled by ``1 / (1 - p)``. The authors' Transformer classifier
            applies ``nn.Dropout`` to ``w * pos`` this way (see :class:`complexorder.ComplexOrderEmbedding`).

    Returns:
        complex tensor of shape ``S + (D,)``.
    """
    padding_idx = resolve_padding_idx(padding_idx, amplitude, frequency, initial_phase)
    sparse = sparse_allowed(sparse)
    r = gather_rows(amplitude, tokens, padding_idx, sparse)
    phase = gather_rows(frequency, tokens, padding_idx, sparse) * positions.unsqueeze(-1)
    if initial_phase is not None:
        phase = phase + gather_rows(initial_phase, tokens, padding_idx, sparse)
    if phase_dropout:
        phase = F.dropout(phase, phase_dropout, training=True)
    dim = max(amplitude.shape[1], frequency.shape[1],
              1 if initial_phase is None else initial_phase.shape[1])
    shape = tuple(tokens.shape) + (dim,)
    r = r.expand(shape)
    if padding_idx is not None:
        r = r * (tokens != padding_idx).unsqueeze(-1).to(r.dtype)
    # Not torch.polar: its backward assumes r >= 0, while amplitudes (e.g. word2vec) are signed.
    return torch.complex(r * torch.cos(phase), r * torch.sin(phase))


def _cos_sin(phase: Tensor) -> tuple[Tensor, Tensor]:
    """``(cos(phase), sin(phase))``; the sine overwrites ``phase`` (a buffer the caller owns).

    On the CPU, float32 goes through NumPy's SIMD ``cos``/``sin``, within 1-2 ulp of torch's. Which
    is faster depends on the CPU: NumPy was about 2.5x faster than ``torch.cos``/``torch.sin`` on the
    AMD EPYC of earlier measurements (torch 2.13, one thread, 1M values), torch's Sleef kernels about
    1.7x faster than NumPy on an Intel Xeon (AVX-512, 2.5M values). This is the fallback path: CPU
    float32 per-word tables normally take the native kernel. Other dtypes and devices use torch.
    """
    if phase.device.type == "cpu" and phase.dtype == torch.float32 and phase.is_contiguous() and phase.numel():
        p = phase.numpy()
        cos = torch.empty_like(phase)
        with np.errstate(all="ignore"):  # cos(inf) = nan, as torch, without a warning
            np.cos(p, out=cos.numpy())
            np.sin(p, out=p)
        return cos, phase
    return torch.cos(phase), phase.sin_()


def _planar_copy(part: Tensor) -> Tensor:
    """A contiguous copy of one part (``[..., 0]`` or ``[..., 1]``) of an interleaved complex tensor.

    Arithmetic on contiguous copies beats arithmetic on the stride-2 views: the four
    multiply-adds of the backward run about 1.2x faster after the two copies (NumPy's strided
    copy is the quicker one on the CPU).
    """
    if part.device.type == "cpu" and part.dtype in (torch.float32, torch.float64):
        return torch.from_numpy(np.array(part.detach().numpy(), order="C"))  # always a copy
    return part.clone(memory_format=torch.contiguous_format)


def _table_grad(grad: Tensor, shape: torch.Size, flat: Tensor, pad_rows: Tensor | None,
                padding_idx: int | None, sparse: bool) -> Tensor:
    """Gradient of a ``[V|1, D|1]`` table of ``shape`` from the gradient ``grad`` of its gathered rows.

    ``grad`` has shape ``S + (D,)`` (``S`` the token shape, ``n`` tokens in ``flat``) and may hold
    anything at padding tokens: they are skipped. Per-word tables scatter with
    ``embedding_backward`` (dense: one zero-filled ``[V, D]`` table and a row-wise add; sparse: a
    COO tensor over the ``n`` token rows, as ``nn.Embedding(sparse=True)``).
    """
    rows = grad.reshape(flat.numel(), grad.shape[-1])
    if shape[1] == 1 and rows.shape[1] != 1:
        rows = rows.sum(1, keepdim=True)
    if shape[0] == 1:
        total = rows.sum(0, keepdim=True)
        if pad_rows is not None:
            total -= rows.index_select(0, pad_rows).sum(0, keepdim=True)
        return total
    return torch.ops.aten.embedding_backward(rows, flat, shape[0], -1 if padding_idx is None else padding_idx,
                                             False, sparse)


class _ComplexOrderWave(torch.autograd.Function):
    """Fused forward/backward of Eq. 5.

    Native path (:func:`complexorder.nn.native.supports`: CPU float32 ``[V, D]`` tables): the kernel
    does each direction in one pass; saved are the flat tokens, the positions and the tables
    themselves (the phasor is recomputed in backward), so changing a table in place between
    forward and backward raises autograd's "modified by an inplace operation" error, where the
    PyTorch path would silently use the values of the forward. ``frequency=None``
    (complex-vanilla, phase = ``initial_phase``) is accepted on this path only.

    PyTorch path (everything else), which saves tokens, positions, the unit phasor and the gathered
    amplitudes. Forward: the phase is computed in place on the gathered frequency rows (or, for a
    word-shared frequency without per-word phase, once per *position* rather than per token),
    ``cos``/``sin`` once, and ``r cos``/``r sin`` written straight into the interleaved complex
    output; padding rows are zeroed afterwards (no mask multiply). Backward: four fused
    multiply-adds give ``dL/dr`` and ``dL/dphase``, which go straight to the tables.
    """

    @staticmethod
    def forward(ctx, tokens, positions, amplitude, frequency, initial_phase, padding_idx, sparse):
        ctx.padding_idx = padding_idx
        ctx.sparse = sparse
        ctx.native = native.supports(tokens, positions, amplitude, frequency, initial_phase)
        if ctx.native:
            flat = tokens.reshape(-1).to(torch.int64).contiguous()
            pos = None if positions is None else positions.expand(tokens.shape).reshape(-1).contiguous()
            out = native.wave_forward(flat, pos, amplitude, frequency, initial_phase, padding_idx)
            ctx.save_for_backward(flat, pos, amplitude, frequency, initial_phase)
            return torch.view_as_complex(out.view(tuple(tokens.shape) + (amplitude.shape[1], 2)))
        shape = tuple(tokens.shape)
        flat = tokens.reshape(-1)
        n = flat.numel()
        dim = max(amplitude.shape[1], frequency.shape[1],
                  1 if initial_phase is None else initial_phase.shape[1])
        p = positions.unsqueeze(-1)  # P + (1,), broadcasts to S + (D,)
        # phase = w[tokens] * pos (+ theta[tokens]), in place on the gathered copy.
        if frequency.shape[0] == 1:
            phase = gather_rows(frequency, tokens) * p  # [.., P, D]: one per position, not per token
        else:
            phase = F.embedding(tokens, frequency).mul_(p)
        if initial_phase is not None:
            theta = gather_rows(initial_phase, tokens)
            full = torch.broadcast_shapes(phase.shape, theta.shape)
            phase = phase.add_(theta) if phase.shape == full else phase + theta
        cos, sin = _cos_sin(phase)
        r = gather_rows(amplitude, tokens)
        r = r.expand(shape + (r.shape[-1],))  # a view; makes every product below full-shape
        out = torch.empty(shape + (dim, 2), dtype=cos.dtype, device=cos.device)
        torch.mul(r, cos, out=out[..., 0])
        torch.mul(r, sin, out=out[..., 1])
        pad_rows = None
        if padding_idx is not None:
            pad_rows = (flat == padding_idx).nonzero().squeeze(1)
            if pad_rows.numel():
                out.view(n, 2 * dim).index_fill_(0, pad_rows, 0.0)
            else:
                pad_rows = None
        # r is kept too (one more [.., D] tensor): gathering it again in backward costs ~6% of the step.
        ctx.save_for_backward(tokens, positions, cos, sin, r, pad_rows)
        ctx.amplitude_shape = amplitude.shape
        ctx.shapes = (frequency.shape, None if initial_phase is None else initial_phase.shape)
        return torch.view_as_complex(out)

    @staticmethod
    def backward(ctx, grad_out):
        if torch.is_grad_enabled():  # a backward with create_graph=True (a gradient penalty, say)
            raise RuntimeError(DIFFERENTIABLE_ONCE)
        return _backward(ctx, grad_out)


#: The fused function's gradients carry no graph: under ``create_graph=True`` they would be silent constants, and
#: a penalty built on them would add nothing to the parameters' gradients (``once_differentiable`` raises only
#: when the incoming gradient itself requires a gradient).
DIFFERENTIABLE_ONCE = ("the fused complex embedding is differentiable once; for a backward with create_graph=True "
                       "(a gradient penalty, a Hessian-vector product) build the embedding with fused=False")


@once_differentiable
def _backward(ctx, grad_out):
    if ctx.native:
        return _native_backward(ctx, grad_out)
    tokens, positions, cos, sin, r, pad_rows = ctx.saved_tensors
    freq_shape, theta_shape = ctx.shapes
    flat = tokens.reshape(-1)
    g = torch.view_as_real(grad_out.resolve_conj().resolve_neg())  # lazy conj/neg views are copied
    g_re, g_im = _planar_copy(g[..., 0]), _planar_copy(g[..., 1])  # our own buffers: updated in place below
    grad_r = grad_w = grad_theta = None
    need_r, need_w, need_theta = ctx.needs_input_grad[2:5]
    table_grad = lambda grad, shape: _table_grad(grad, shape, flat, pad_rows, ctx.padding_idx,  # noqa: E731
                                                 ctx.sparse)
    if need_r:
        grad_r = table_grad((g_re * cos).addcmul_(g_im, sin), ctx.amplitude_shape)
    if need_w or need_theta:
        # d out / d phase = i * out  =>  dL/dphase = Re(conj(g) * i * out) = r (g_im cos - g_re sin)
        grad_phase = g_im.mul_(cos).addcmul_(g_re, sin, value=-1).mul_(r)
        if need_theta:
            grad_theta = table_grad(grad_phase, theta_shape)
        if need_w:
            p = positions.unsqueeze(-1)
            if freq_shape[0] == 1:  # word-shared: sum_tokens grad_phase * pos, one matrix-vector product
                rows = grad_phase.reshape(flat.numel(), grad_phase.shape[-1])
                pos = p.expand(tokens.shape + (1,)).reshape(flat.numel())
                if pad_rows is not None:
                    pos = pos.index_fill(0, pad_rows, 0.0)
                grad_w = (pos @ rows).unsqueeze(0)
                if freq_shape[1] == 1:
                    grad_w = grad_w.sum(1, keepdim=True)
            else:
                in_place = not (need_theta and ctx.sparse)  # sparse grad_theta holds grad_phase itself
                grad_w = table_grad(grad_phase.mul_(p) if in_place else grad_phase * p, freq_shape)
    return None, None, grad_r, grad_w, grad_theta, None, None


def _native_backward(ctx, grad_out: Tensor) -> tuple:
    flat, pos, amplitude, frequency, initial_phase = ctx.saved_tensors
    g = torch.view_as_real(grad_out.resolve_conj().resolve_neg()).contiguous()
    needs = ctx.needs_input_grad[2:5]
    rows = ctx.sparse
    grads: tuple[Tensor | None, ...]
    grads = native.wave_backward(flat, pos, amplitude, frequency, initial_phase, ctx.padding_idx, g, needs, rows)
    if rows:  # one row per token -> uncoalesced COO over the token rows, padding rows left out
        grads = tuple(None if gr is None else _table_grad(gr, amplitude.shape, flat, None, ctx.padding_idx, True)
                      for gr in grads)
    return (None, None, *grads, None, None)


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

    Gradients flow to ``amplitude``, ``frequency`` and ``initial_phase``; ``positions`` that require
    a gradient take the reference path, so that they get one too. The fused path is differentiable
    once (no double backward: use the reference for that). A negative ``padding_idx`` counts back
    from the end of the per-word tables, as in ``F.embedding``. With ``sparse=True`` the gradients of per-word ``[V, *]`` tables are
    uncoalesced ``torch.sparse_coo_tensor`` over the batch's token rows, padding rows left out, as
    ``nn.Embedding(sparse=True)`` gives: pair them with ``torch.optim.SparseAdam`` (or ``SGD``,
    ``Adagrad``) and the other parameters with ``Adam`` (see the module docstring). Word-shared
    ``[1, D]`` tables always get dense gradients. Under ``torch.compile``, inside ``torch.func`` transforms
    (``grad``, ``vmap``, ``jvp``, ...) and for forward-mode AD dual tensors it runs the reference
    (:func:`plain_autograd_required`), which these support.
    """
    padding_idx = resolve_padding_idx(padding_idx, amplitude, frequency, initial_phase)
    if ((positions.requires_grad and torch.is_grad_enabled()) or tokens.device.type == "meta"  # meta: shapes only
            or plain_autograd_required(positions, amplitude, frequency, initial_phase)):
        # torch.compile: the native kernel (ctypes) is opaque to dynamo (a graph break, and fullgraph=True failed);
        # traced as the plain equation, inductor fuses it itself. torch.func transforms and forward-mode AD: the
        # fused function has no batching rule and no jvp (plain_autograd_required)
        return complex_order_embedding_reference(tokens, positions, amplitude, frequency, initial_phase,
                                                 padding_idx, sparse)
    return _ComplexOrderWave.apply(tokens, positions, amplitude, frequency, initial_phase,
                                   padding_idx, sparse)


def complex_vanilla_embedding_reference(tokens: Tensor, amplitude: Tensor, phase: Tensor,
                                        padding_idx: int | None = None, sparse: bool = False,
                                        phase_dropout: float = 0.0) -> Tensor:
    """Complex-vanilla (Wang et al. 2019): ``r[tokens] * exp(i theta[tokens])``, position-free, plain autograd.

    ``padding_idx`` (negative: counted back from the end of the tables) and ``sparse`` as in ``F.embedding``;
    ``phase_dropout`` as in :func:`complex_order_embedding_reference` (on ``theta``).
    """
    padding_idx = resolve_padding_idx(padding_idx, amplitude, phase)
    sparse = sparse_allowed(sparse)
    r = F.embedding(tokens, amplitude, padding_idx, sparse=sparse)
    theta = F.embedding(tokens, phase, padding_idx, sparse=sparse)
    if phase_dropout:
        theta = F.dropout(theta, phase_dropout, training=True)
    if padding_idx is not None:
        r = r * (tokens != padding_idx).unsqueeze(-1).to(r.dtype)
    return torch.complex(r * torch.cos(theta), r * torch.sin(theta))  # not polar: r is signed


def complex_vanilla_embedding(tokens: Tensor, amplitude: Tensor, phase: Tensor,
                              padding_idx: int | None = None, sparse: bool = False) -> Tensor:
    """Complex-vanilla, fused: the native kernel (with no frequency table) for CPU float32 ``[V, D]``
    tables, else :func:`complex_vanilla_embedding_reference` (always under ``torch.compile``, ``torch.func`` transforms
    and forward-mode AD: :func:`plain_autograd_required`). Same contract and result."""
    padding_idx = resolve_padding_idx(padding_idx, amplitude, phase)
    if not plain_autograd_required(amplitude, phase) and native.supports(tokens, None, amplitude, None, phase):
        return _ComplexOrderWave.apply(tokens, None, amplitude, None, phase, padding_idx, sparse)
    return complex_vanilla_embedding_reference(tokens, amplitude, phase, padding_idx, sparse)
