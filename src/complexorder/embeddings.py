"""The embedding family: one call shape, ``forward(tokens, positions=None)``.

==========================  =====================================================  ===========
name (``build_embedding``)  what a word ``j`` at position ``pos`` becomes           output
==========================  =====================================================  ===========
``"none"``                  ``WE_j`` (no positions)                                real
``"pe"``                    ``WE_j + P_pos`` (learned positions, Gehring 2017)     real
``"tpe"``                   ``WE_j + PE_pos`` (fixed sinusoids, paper Eq. 7)       real
``"complex-vanilla"``       ``r_j * exp(i theta_j)`` (Wang et al. 2019)            complex
``"complex-order"``         ``r_j * exp(i (w_j * pos + theta_j))`` (paper Eq. 5)   complex
==========================  =====================================================  ===========

Positions default to ``0, 1, ..., L-1`` along the last token dimension (``pos`` in N as in
the paper's Sec. 2 and in the Transformer's Eq. 7; the paper's appendix C code counts from 1:
pass ``positions=torch.arange(1, L + 1)``, or build ``"complex-order"`` with ``first_position=1``,
to reproduce it). Explicit ``positions`` may be
integer or float tensors broadcastable to ``tokens`` -- step-wise decoding and
Transformer-XL memories pass them.

Every module exposes ``is_complex`` so that a model can pick real or complex layers.

Every embedding works under ``torch.func`` transforms (``grad``; ``vmap``, per-sample gradients
``vmap(grad(loss))`` with ``torch.func.functional_call`` included; ``jvp``, ``jacrev``, ``jacfwd``) and
forward-mode AD (``torch.autograd.forward_ad`` dual tensors), with the eager path's values. The complex
embeddings then compute Eq. 5 with plain autograd (the fused function and its native kernel have no batching
rule and no forward derivative), as under ``torch.compile``. The checks that read values (token ids in the
vocabulary, finite and in-range positions) are skipped for the tensors a transform wraps (``vmap``'s batched
inputs have no single value to read); an id outside the table still fails in ``F.embedding``'s lookup, with an
``IndexError`` that does not name it. Inside ``vmap``, ``sparse=True`` gives dense gradients (PyTorch cannot
batch sparse ones; ``nn.Embedding(sparse=True)`` fails there), and phase dropout in training mode needs
``vmap(..., randomness="different")`` or ``"same"``, as any dropout.
"""

from __future__ import annotations

import math
import operator
from typing import Any, TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .nn.functional import as_integer, check_flags
from .nn.value_checks import value_checks_enabled
from .nn.wave import (complex_order_embedding, complex_order_embedding_reference, complex_vanilla_embedding,
                      complex_vanilla_embedding_reference, sparse_allowed)

__all__ = [
    "EMBEDDINGS",
    "SHARING_SCHEMES",
    "FREQUENCY_INITS",
    "WordEmbedding",
    "LearnedPositionalEmbedding",
    "SinusoidalPositionalEmbedding",
    "ComplexVanillaEmbedding",
    "ComplexOrderEmbedding",
    "TokenIdError",
    "build_embedding",
    "embedding_options",
    "complex_to_real",
    "sinusoidal_frequencies",
    "sinusoidal_position_encoding",
]

SHARING_SCHEMES = (None, "word", "dimension")
FREQUENCY_INITS = ("sinusoidal", "uniform", "zeros", "word-index", "normal")


# --------------------------------------------------------------------------------------
# Helpers: validation and the sinusoids of Eq. 7
# --------------------------------------------------------------------------------------


class TokenIdError(ValueError, IndexError):
    """A token id outside ``[0, num_embeddings)``: a ``ValueError`` with a message naming the id, and an
    ``IndexError`` too, which :class:`torch.nn.Embedding` raises for the same input (``index out of range in
    self``), so that code written for it still catches this."""


def _check_tokens(tokens: Tensor, num_embeddings: int) -> None:
    if not isinstance(tokens, Tensor):
        raise TypeError(f"tokens must be an integer torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.long, torch.int):  # as F.embedding: int8, int16 and uint8 failed in some tables
        raise TypeError(f"tokens must be an integer tensor (torch.long or torch.int), got dtype {tokens.dtype}")
    if tokens.dim() == 0:
        raise ValueError("tokens must have at least one dimension [..., L], got a 0-d tensor")
    if tokens.numel() == 0 or not _values_readable(tokens):
        return
    lo: Tensor | int  # the tensors, then their values
    hi: Tensor | int
    lo, hi = torch.aminmax(tokens)
    lo, hi = int(lo), int(hi)
    if lo < 0 or hi >= num_embeddings:
        bad = lo if lo < 0 else hi
        raise TokenIdError(f"tokens: id {bad} is outside the vocabulary [0, {num_embeddings}) "
                           f"(num_embeddings={num_embeddings})")


def _values_readable(t: Tensor) -> bool:
    """Whether checks that read a tensor's values (ids in the vocabulary, finite positions) run: not on the ``meta``
    device (shapes only: no values to read), nor while ``torch.compile`` traces (a read is a host sync and breaks
    the graph; the compiled model then runs unchecked, as ``nn.Embedding``'s index check is a kernel assertion), nor
    on a tensor that a ``torch.func`` transform wraps (``vmap``'s batched tensors, and ``grad``'s and ``jvp``'s
    wrappers: a batched tensor has no single value to read, and ``vmap`` refuses the read; ``F.embedding`` still
    raises an ``IndexError`` for an id outside the table, without the id), nor when
    :class:`~complexorder.set_value_checks` turned the checks off."""
    return (value_checks_enabled() and t.device.type != "meta" and not torch.compiler.is_compiling()
            and not _functorch_wrapped(t))


#: Whether torch.func wraps a tensor (a private function of torch 2.x with no public equivalent); absent from a torch
#: that lacks it, no tensor is taken for wrapped (the checks then run, and vmap refuses their read as before)
_functorch_wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", lambda t: False)


def _position_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype positions (and phases) are computed in for parameters of ``dtype``: float16 and bfloat16 hold
    integers exactly only up to 2048 and 256, so neighbouring positions beyond would share one encoding."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _resolve_positions(tokens: Tensor, positions: Tensor | None, dtype: torch.dtype, used: bool = True) -> Tensor:
    """Positions as a ``dtype`` tensor broadcastable to ``tokens`` (default ``0..L-1``). ``used=False``: an
    embedding that validates positions and ignores them (no float32 exactness limit then)."""
    if positions is None:
        return torch.arange(tokens.shape[-1], device=tokens.device, dtype=dtype)
    if not isinstance(positions, Tensor):
        raise TypeError(f"positions must be a torch.Tensor or None, got {type(positions).__name__}")
    if positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must be an integer or real floating tensor, got dtype {positions.dtype}")
    try:
        shape = torch.broadcast_shapes(positions.shape, tokens.shape)
    except RuntimeError:
        shape = None
    if shape != tokens.shape:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} do not broadcast to tokens of shape "
            f"{tuple(tokens.shape)}; expected a shape such as {tuple(tokens.shape)} or ({tokens.shape[-1]},)"
        )
    out = positions.to(device=tokens.device, dtype=dtype)
    if not _values_readable(out):
        return out
    if used and out.dtype == torch.float32 and not positions.is_floating_point() and positions.numel():
        top = int(positions.abs().max())  # neighbouring integers beyond 2**24 round to one float32 position
        if top > 2 ** 24:
            raise ValueError(f"positions: integers up to 2**24 = 16,777,216 are exact in float32, got {top}; use a "
                             "float64 embedding (.double()), or count positions from a nearer origin")
    # checked after the cast: a finite float64 (or a large integer in half precision) may become inf. One reduction
    # and one host read in the common case (max propagates NaN, and inf is the largest |value|)
    if (positions.is_floating_point() or out.dtype in (torch.float16, torch.bfloat16)) and out.numel():
        largest = float(out.detach().abs().max())  # detached: positions may require a gradient (no warning)
        if not math.isfinite(largest):
            finite = torch.isfinite(out)
            bad = positions.to(out.device)[~finite].flatten()[0].item()
            raise ValueError(f"positions must be finite real numbers, got {bad}"
                             + (f" (not finite in {dtype})" if math.isfinite(bad) else ""))
        if used and out.dtype == torch.float32 and positions.is_floating_point():
            # float32's spacing is 2 beyond 2**24: 2**24 + 1 given in float64 became 2**24 unseen; judged on the
            # values given (a second reduction only when they were cast)
            given = (out if positions.dtype == out.dtype else positions).detach()
            if (largest if positions.dtype == out.dtype else float(given.abs().max())) > 2 ** 24:
                far = given.flatten()[given.abs().argmax()].item()  # with its sign
                raise ValueError(f"positions: float32 resolves positions only up to 2**24 = 16,777,216 in magnitude "
                                 f"(beyond, neighbouring integers round to one value), got {far:.10g}; use a float64 "
                                 "embedding (.double()), or count positions from a nearer origin")
    return out


def check_phase_dropout(phase_dropout: float, name: str = "phase_dropout") -> float:
    """A probability in ``[0, 1)`` (an int or float, not a bool), returned as a float."""
    if isinstance(phase_dropout, bool) or not isinstance(phase_dropout, (int, float)) or not 0 <= phase_dropout < 1:
        raise ValueError(f"{name} must be a number in [0, 1) (the probability of dropping a phase), "
                         f"got {phase_dropout!r}")
    return float(phase_dropout)


def _check_sizes(num_embeddings: int, embedding_dim: int) -> None:
    """Positive integers (NumPy's and torch's integer scalars too, as ``operator.index`` takes them)."""
    if not all((as_integer(n) or 0) > 0 for n in (num_embeddings, embedding_dim)):
        raise ValueError(f"num_embeddings and embedding_dim must be positive integers, got {num_embeddings!r} "
                         f"and {embedding_dim!r}")


def _check_dtype(dtype: torch.dtype | None) -> None:
    """The tables are real (a complex output is built from real amplitudes and phases)."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype must be a real floating-point dtype (torch.float32, float64, float16 or bfloat16; "
                         f"complex embeddings build their complex output from real tables), got {dtype!r}")


def _normalise_padding_idx(padding_idx: int | None, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    try:
        if isinstance(padding_idx, bool):
            raise TypeError
        padding_idx = operator.index(padding_idx)
    except TypeError:
        raise ValueError(f"padding_idx must be an integer token id or None, got {padding_idx!r}") from None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"padding_idx must be within [-{num_embeddings}, {num_embeddings}), got {padding_idx}")
    return padding_idx % num_embeddings


_E = TypeVar("_E", bound=nn.Module)


def _from_pretrained(cls: type[_E], amplitude: Tensor, freeze_amplitude: bool, kwargs: dict) -> _E:
    """A complex embedding whose amplitudes start from ``amplitude`` ``[V, D]`` (frozen or trained)."""
    if not isinstance(amplitude, Tensor) or amplitude.dim() != 2:
        got = tuple(amplitude.shape) if isinstance(amplitude, Tensor) else type(amplitude).__name__
        raise ValueError(f"amplitude must be a 2-d [V, D] tensor, got {got}")
    if "freeze" in kwargs:  # nn.Embedding.from_pretrained's argument; here the constructor's "unexpected keyword"
        raise TypeError(f"{cls.__name__}.from_pretrained takes freeze_amplitude, not freeze (default False: the "
                        "amplitudes train, unlike nn.Embedding.from_pretrained's freeze=True; the other tables always "
                        "train)")
    if amplitude.is_floating_point():  # as nn.Embedding.from_pretrained: the matrix's dtype (float64 stays float64)
        kwargs = {"dtype": amplitude.dtype, **kwargs}
    kwargs = {"device": amplitude.device, **kwargs}  # and its device (stop 80: a GPU matrix gave a CPU embedding)
    emb = cls(amplitude.shape[0], amplitude.shape[1], amplitude_init=amplitude, **kwargs)
    emb.amplitude.requires_grad_(not freeze_amplitude)
    return emb


def _check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")


def _check_matrix(name: str, matrix: Tensor, shape: tuple[int, ...]) -> Tensor:
    if not isinstance(matrix, Tensor) or matrix.dim() != 2 or tuple(matrix.shape) != tuple(shape):
        got = tuple(matrix.shape) if isinstance(matrix, Tensor) else type(matrix).__name__
        raise ValueError(f"{name} must be a real tensor of shape {tuple(shape)} (num_embeddings, embedding_dim), got {got}")
    if matrix.is_complex():
        raise ValueError(f"{name} must be real-valued, got dtype {matrix.dtype}")
    if matrix.is_floating_point() and matrix.numel() and not bool(torch.isfinite(matrix.sum(dtype=torch.float64))) \
            and not bool(torch.isfinite(matrix).all()):  # NaN and inf carry through the sum: the exact check is rare
        row = int((~torch.isfinite(matrix)).any(dim=1).nonzero()[0, 0])
        raise ValueError(f"{name} holds NaN or infinite values (first in row {row}); it must be finite")
    return matrix


def _check_complex_form(module: str, dtype: torch.dtype | None) -> None:
    """Complex embeddings build a complex output from their real tables: bfloat16 has no complex form, and complex
    tables (``.to(torch.complex64)``, which ``Module.to`` allows) failed deep in arange or autograd."""
    if dtype is not None and dtype.is_complex:
        real = torch.empty(0, dtype=dtype).real.dtype
        raise TypeError(f"{module}'s tables are {dtype} (a .to({dtype})?): it keeps real tables and returns complex "
                        f"outputs itself; convert it back with .to({real})")
    if dtype == torch.bfloat16:
        raise TypeError(f"{module} has no bfloat16 form (PyTorch has no bfloat16 complex dtype); use "
                        "float32, float64 or float16 parameters")


def _embedding_repr(module: nn.Module, *options: str) -> str:
    """``extra_repr`` of an embedding: ``num_embeddings, embedding_dim``, ``padding_idx`` if set, ``options``,
    ``sparse=True`` if set (the order of :class:`torch.nn.Embedding`'s repr)."""
    parts = [f"{module.num_embeddings}, {module.embedding_dim}"]
    if module.padding_idx is not None:
        parts.append(f"padding_idx={module.padding_idx}")
    parts += options
    if module.sparse:
        parts.append("sparse=True")
    return ", ".join(parts)


def _amplitude_init_repr(init: str | Tensor) -> list[str]:
    """``amplitude_init`` for ``extra_repr`` when it is a non-default name (a pretrained matrix is not printed)."""
    return [f"amplitude_init={init!r}"] if isinstance(init, str) and init != "normal" else []


def _init_amplitude(amplitude: nn.Parameter, init: str | Tensor) -> None:
    """Fill an amplitude table from a pretrained matrix, with ones, or N(0, 1) (``"normal"``)."""
    if isinstance(init, Tensor):
        amplitude.copy_(init)
    elif init == "ones":
        amplitude.fill_(1.0)
    else:
        nn.init.normal_(amplitude)


def sinusoidal_frequencies(num_frequencies: int, d_model: int | None = None, base: float = 10000.0,
                           dtype: torch.dtype = torch.float64) -> Tensor:
    """The Transformer's geometric angular frequencies ``w_k = base ** (-2k / d_model)``.

    With ``d_model`` omitted it is ``2 * num_frequencies``: a complex embedding of ``D``
    dimensions is the real sinusoidal encoding of ``d_model = 2D`` (paper appendix A, Eq. 8).

    Args:
        num_frequencies: how many frequencies, ``k = 0, ..., num_frequencies - 1``.
        d_model: width of the real encoding in the exponent (default ``None``: ``2 * num_frequencies``).
        base: the geometric base (default 10000).
        dtype: of the result, and of the computation (default ``torch.float64``).

    Shape: output ``[num_frequencies]``.

    Examples::

        >>> sinusoidal_frequencies(4)  # 10000 ** (-2k / 8)
        tensor([1.0000, 0.1000, 0.0100, 0.0010], dtype=torch.float64)
    """
    d_model = 2 * num_frequencies if d_model is None else d_model
    k = torch.arange(num_frequencies, dtype=torch.float64)
    return torch.pow(torch.tensor(base, dtype=dtype), -2.0 * k.to(dtype) / d_model)


def sinusoidal_position_encoding(positions: Tensor, d_model: int, base: float = 10000.0) -> Tensor:
    """Paper Eq. 7: ``PE_2k = sin(pos w_k)``, ``PE_2k+1 = cos(pos w_k)``, ``w_k = base^(-2k/d_model)``.

    Args:
        positions: integer or float tensor of positions.
        d_model: width of the encoding (an odd width drops the last cosine).
        base: the geometric base of the frequencies (default 10000).

    Shape: ``positions [...]`` -> ``[..., d_model]``. Computed in float32 (float64 inputs stay
    float64), so positions need no table and may be unbounded or fractional.

    Examples::

        >>> sinusoidal_position_encoding(torch.arange(3), 4)  # [sin(pos), cos(pos), sin(pos / 100), cos(pos / 100)]
        tensor([[ 0.0000,  1.0000,  0.0000,  1.0000],
                [ 0.8415,  0.5403,  0.0100,  0.9999],
                [ 0.9093, -0.4161,  0.0200,  0.9998]])
    """
    dtype = positions.dtype if positions.dtype == torch.float64 else torch.float32
    half = (d_model + 1) // 2
    freqs = sinusoidal_frequencies(half, d_model, base).to(device=positions.device, dtype=dtype)
    angles = positions.to(dtype).unsqueeze(-1) * freqs
    pe = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
    return pe[..., :d_model]


def complex_to_real(z: Tensor, dim: int = -1) -> Tensor:
    """Concatenate real and imaginary parts along ``dim`` (paper appendix C).

    Lets a real-valued network consume a complex embedding: ``[..., D]`` complex becomes
    ``[..., 2D]`` real ``[Re z, Im z]``. Real inputs are returned unchanged.

    Args:
        z: a complex tensor (a real one is returned as it is).
        dim: the dimension along which the parts are concatenated (default -1).

    Shape: ``z [..., D]`` complex -> ``[..., 2D]`` real (float32 for complex64); with another ``dim``, that
    dimension doubles.

    Examples::

        >>> complex_to_real(torch.tensor([[1 + 2j, 3 - 4j]]))
        tensor([[ 1.,  3.,  2., -4.]])
        >>> complex_to_real(torch.randn(2, 3, dtype=torch.complex64), dim=0).shape
        torch.Size([4, 3])
    """
    if not isinstance(z, Tensor):
        raise TypeError(f"z must be a torch.Tensor (complex or real), got {type(z).__name__}")
    if not z.is_complex():
        return z
    return torch.cat((z.real, z.imag), dim=dim)


# --------------------------------------------------------------------------------------
# Real-valued baselines
# --------------------------------------------------------------------------------------


class WordEmbedding(nn.Module):
    r"""A plain word embedding with the family's call shape; positions are ignored.

    Args:
        num_embeddings: vocabulary size ``V``.
        embedding_dim: ``D``.
        padding_idx: as in :class:`torch.nn.Embedding` (negative allowed; row zeroed, no gradient).
        sparse: sparse gradients for the word table, as in :class:`torch.nn.Embedding`.

    Shape:
        - tokens: ``[..., L]`` integer; positions: broadcastable to tokens or ``None``.
        - output: ``[..., L, D]`` real.

    Examples::

        >>> emb = WordEmbedding(100, 8, padding_idx=0)
        >>> emb(torch.tensor([[5, 7, 0]])).shape
        torch.Size([1, 3, 8])
    """

    is_complex = False

    def __init__(self, num_embeddings: int, embedding_dim: int, *, padding_idx: int | None = None,
                 sparse: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        _check_sizes(num_embeddings, embedding_dim)
        _check_dtype(dtype)
        check_flags(sparse=sparse)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _normalise_padding_idx(padding_idx, num_embeddings)
        self.sparse = sparse
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight)
        if self.padding_idx is not None:
            with torch.no_grad():
                self.weight[self.padding_idx].zero_()

    def sparse_parameters(self) -> list[nn.Parameter]:
        """The parameters that receive sparse gradients (``sparse=True``): the word table."""
        return [self.weight] if self.sparse else []

    def load_word_vectors(self, vectors: Tensor) -> None:
        """Copy a pretrained ``[V, D]`` matrix into the word table (padding row re-zeroed)."""
        vectors = _check_matrix("vectors", vectors, (self.num_embeddings, self.embedding_dim))
        with torch.no_grad():
            self.weight.copy_(vectors)
            if self.padding_idx is not None:
                self.weight[self.padding_idx].zero_()

    def embed_words(self, tokens: Tensor) -> Tensor:
        _check_tokens(tokens, self.num_embeddings)
        return F.embedding(tokens, self.weight, self.padding_idx, sparse=sparse_allowed(self.sparse))

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """The word vectors alone (positions are validated and ignored): ``tokens [*, L]`` -> real
        ``[*, L, embedding_dim]``."""
        if positions is not None:
            _resolve_positions(tokens, positions, _position_dtype(self.weight.dtype), used=False)  # validate only
        return self.embed_words(tokens)

    def _pad_mask(self, tokens: Tensor, x: Tensor) -> Tensor:
        """Zero the padding tokens' rows of ``x`` (position terms included)."""
        if self.padding_idx is None:
            return x
        return x * (tokens != self.padding_idx).unsqueeze(-1).to(x.dtype)

    def extra_repr(self) -> str:
        return _embedding_repr(self)


class LearnedPositionalEmbedding(WordEmbedding):
    r"""PE: word vector plus a learned vector per absolute position (Gehring et al. 2017).

    Args:
        num_embeddings, embedding_dim, padding_idx, sparse: as :class:`WordEmbedding`.
        max_positions: size of the position table; positions must lie in ``[0, max_positions)``.

    Shape:
        ``[..., L]`` -> ``[..., L, D]`` real. Padding tokens embed to exactly zero.

    Examples::

        >>> emb = LearnedPositionalEmbedding(100, 8, max_positions=64, padding_idx=0)
        >>> x = emb(torch.tensor([[5, 5, 0]]))
        >>> x.shape, torch.equal(x[0, 0], x[0, 1])  # the same word at two positions differs
        (torch.Size([1, 3, 8]), False)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, max_positions: int = 512,
                 padding_idx: int | None = None, sparse: bool = False, device=None, dtype=None) -> None:
        if (as_integer(max_positions) or 0) <= 0:  # not 2.5, "8", True; any integer type, stored as an int
            raise ValueError(f"max_positions must be a positive integer, got {max_positions!r}")
        self.max_positions = max_positions = cast(int, as_integer(max_positions))  # an int: checked above
        super().__init__(num_embeddings, embedding_dim, padding_idx=padding_idx, sparse=sparse,
                         device=device, dtype=dtype)
        self.position_weight = nn.Parameter(torch.empty(max_positions, embedding_dim, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if hasattr(self, "position_weight"):
            nn.init.normal_(self.position_weight, std=0.1)

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """Word vector plus a learned position vector: ``tokens [*, L]`` -> real ``[*, L, embedding_dim]``;
        ``positions`` (optional, integers in ``[0, max_positions)``) broadcast to ``tokens``, default ``0..L-1``."""
        words = self.embed_words(tokens)
        if positions is None and tokens.dim() and tokens.shape[-1] > self.max_positions:
            raise ValueError(f"sequence length {tokens.shape[-1]} exceeds max_positions={self.max_positions} of "
                             "LearnedPositionalEmbedding (without positions, tokens take positions 0 .. L-1); build "
                             "it with a larger max_positions")
        pos = _resolve_positions(tokens, positions, torch.float64)
        if pos.numel() and _values_readable(pos) and (pos.min() < 0 or pos.max() >= self.max_positions
                                                      or (pos != pos.round()).any()):
            raise ValueError(
                f"positions must be integers in [0, {self.max_positions}) for LearnedPositionalEmbedding "
                f"(max_positions={self.max_positions}); got values in [{pos.min().item():g}, {pos.max().item():g}]"
            )
        return self._pad_mask(tokens, words + F.embedding(pos.long(), self.position_weight))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", max_positions={self.max_positions}"


class SinusoidalPositionalEmbedding(WordEmbedding):
    r"""TPE: word vector plus the fixed sinusoidal encoding of paper Eq. 7 (Vaswani et al. 2017).

    The encoding is computed from the positions on the fly (no table, no length limit).

    Args:
        num_embeddings, embedding_dim, padding_idx, sparse: as :class:`WordEmbedding`.
        position_scale: factor of the encoding, ``WE_j + s PE_pos`` (default 1, Eq. 7 as written; a
            network whose word table starts small may want the encoding on the table's scale).

    Shape:
        ``[..., L]`` -> ``[..., L, D]`` real. Padding tokens embed to exactly zero.

    Examples::

        >>> emb = SinusoidalPositionalEmbedding(100, 8)
        >>> x = emb(torch.tensor([[5, 5]]))
        >>> pe = sinusoidal_position_encoding(torch.tensor([0.0, 1.0]), 8)  # paper Eq. 7
        >>> torch.allclose(x[0, 1] - x[0, 0], pe[1] - pe[0], atol=1e-6)  # the same word, one position apart
        True
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, position_scale: float = 1.0, **kwargs) -> None:
        super().__init__(num_embeddings, embedding_dim, **kwargs)
        if isinstance(position_scale, bool) or not isinstance(position_scale, (int, float)) or \
                not (math.isfinite(position_scale) and position_scale > 0):
            raise ValueError(f"position_scale must be a positive number, got {position_scale!r}")
        self.position_scale = float(position_scale)

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """Word vector plus the sinusoidal encoding (Vaswani et al.): ``tokens [*, L]`` -> real
        ``[*, L, embedding_dim]``; ``positions`` (optional) broadcast to ``tokens``, default ``0..L-1``."""
        words = self.embed_words(tokens)
        pos = _resolve_positions(tokens, positions, _position_dtype(words.dtype))
        pe = sinusoidal_position_encoding(pos, self.embedding_dim).to(words.dtype)
        if self.position_scale != 1.0:
            pe = pe * self.position_scale
        return self._pad_mask(tokens, words + pe)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", position_scale={self.position_scale:g}" if self.position_scale != 1.0 else "")


# --------------------------------------------------------------------------------------
# Complex-valued embeddings
# --------------------------------------------------------------------------------------


class ComplexOrderEmbedding(nn.Module):
    r"""Order-aware complex word embedding (paper Eq. 5).

    A word ``j`` at position ``pos`` becomes, per dimension ``d``,

    .. math:: f(j, pos)_d = r_{j,d} \, e^{i(\omega_{j,d} \, pos + \theta_{j,d})}

    -- amplitude ``r`` (the word's meaning), angular frequency ``w`` (how sensitive the word
    is to its position; period ``2 pi / w``) and optional initial phase ``theta``.

    Args:
        num_embeddings: vocabulary size ``V``.
        embedding_dim: number of complex dimensions ``D``.
        padding_idx: as in :class:`torch.nn.Embedding`: the padding token embeds to exactly 0 at
            every position and its rows receive no gradient. Negative values count from the end.
        frequency_sharing: ``None`` (a frequency per word and dimension, ``[V, D]``),
            ``"word"`` (all words share one frequency per dimension, ``w_{j,d} = w_{.,d}``,
            ``[1, D]``) or ``"dimension"`` (one frequency per word, ``w_{j,d} = w_{j,.}``, ``[V, 1]``).
        amplitude_sharing: the same three schemes for the amplitude.
        initial_phase: learn ``theta`` (``[V, D]``); off by default as in the paper's main setting.
        frequency_init: ``"sinusoidal"`` (default: every word starts with the Transformer's
            geometric frequencies ``w_d = 10000^(-2d / 2D)``, so that with amplitudes of one the
            embedding is the sinusoidal position encoding, appendix A; the authors' Transformer
            classifier starts the same way),
            ``"word-index"`` (the authors' CNN/FastText/LSTM code: word ``j`` of the vocabulary starts
            at ``w_{j,d} = j * 10000^(-2d / D)``, a different, mostly fast spectrum per word;
            needs a per-word table), ``"uniform"`` (``U(0, 2 pi)``, periods from one position
            up), ``"zeros"`` (start position-free), ``"normal"`` (``N(0, 1)``, ``nn.Embedding``'s
            default: the frequency table of the authors' Transformer "complex-vanilla" classifier,
            ``Complex_vanilla.py``, which multiplies it by the positions), a float (constant) or a
            tensor broadcastable to the table. With ``frequency_sharing="dimension"`` (a ``[V, 1]`` table),
            ``"sinusoidal"`` gives each word one of the V geometric frequencies ``10000^(-j / V)``,
            in random order (drawn from torch's global generator). A quarter of the words then start above 0.1; in
            the authors' Transformer classifier at lr 1e-4 (amplitudes at 10x) they stay there and the row scores 5.8
            points under complex-order, 1.2 under on average from ``"zeros"`` (see
            ``benchmarks/results/table4_dimension_sharing_period_zero_frequencies.md``).
        amplitude_init: ``"normal"`` (default, ``N(0, 1)`` like ``nn.Embedding``), ``"ones"``,
            or a tensor of the amplitude table's shape (``[V, D]``, e.g. word2vec vectors; ``[1, D]`` or
            ``[V, 1]`` with amplitude sharing). A tensor is kept (``self.amplitude_init``, not in the
            ``state_dict``) so that :meth:`reset_parameters` restores it; ``emb.amplitude_init = "normal"``
            releases it once it is no longer needed.
        sparse: sparse gradients for per-word tables, as :class:`torch.nn.Embedding`; pair with
            ``torch.optim.SparseAdam`` (or SGD/Adagrad) for these parameters.
        fused: use the fused autograd function (default). ``False`` runs the plain-autograd
            reference of the same equation: slower, but differentiable twice (the fused function is
            differentiable once), for gradient penalties or Hessian-vector products. Inside ``torch.func``
            transforms, with forward-mode AD dual tensors and under ``torch.compile`` the reference runs either
            way (see the module docstring).
        first_position: where the default positions start: ``first_position, ..., first_position + L - 1``
            (default 0, as the paper's Sec. 2 and Eq. 7; the authors' code counts from 1). At
            position 0 the phase is ``theta`` (0 without initial phases), so a word's embedding is
            its amplitude alone; with shared amplitudes that loses (word-sharing) or reduces to a
            scale (dimension-sharing) the first word's identity -- starting at 1 avoids it.
            Explicit ``positions`` passed to :meth:`forward` are used as given.
        frequency_jitter: the standard deviation ``s`` of a relative perturbation of the initial frequencies:
            after ``frequency_init``, each entry of the frequency table is multiplied by ``1 + s * eps``,
            ``eps ~ N(0, 1)`` drawn per entry from torch's global generator (0, the default: none; not in the
            paper). The sinusoidal start gives every word the same frequencies, so under word-sharing amplitudes
            every word is the same wave at the start; a small jitter makes the words distinct from the first
            step while keeping each dimension's scale (``"uniform"`` makes them distinct with fast, random
            frequencies instead). The padding row stays 0.
        phase_dropout: in training mode, inverted dropout on the phases ``w * pos + theta`` before the
            ``cos``/``sin`` (0, the default: none; not in the paper). Each phase is set to 0 with this
            probability (the value becomes the real amplitude ``r``) and the others are scaled by
            ``1 / (1 - p)``, a random stretch of the wave. The authors' Transformer classifier does this
            (``self.drop(enc_output_phase)`` on ``w * pos``, with a separate dropout mask on the
            amplitudes) at ``p = 0.1``. Training mode runs the plain-autograd path; evaluation is unchanged.

    Attributes:
        amplitude, frequency: real parameters broadcastable to ``[V, D]``.
        initial_phase: real ``[V, D]`` parameter, or ``None``.

    Shape:
        - tokens: ``[..., L]`` integer ids in ``[0, V)``.
        - positions: ``None`` (``first_position, ..., first_position + L - 1``) or an integer/float
          tensor broadcastable to tokens.
        - output: ``[..., L, D]`` complex (``complex64`` for float32 parameters).

    Parameter count: ``2VD``; ``3VD`` with initial phases; ``VD + D`` with word-sharing and
    ``VD + V`` with dimension-sharing frequencies (likewise for amplitudes).

    Examples::

        >>> emb = ComplexOrderEmbedding(1000, 64, padding_idx=0)
        >>> z = emb(torch.tensor([[3, 14, 15, 0]]))
        >>> z.shape, z.dtype
        (torch.Size([1, 4, 64]), torch.complex64)
        >>> tpe = ComplexOrderEmbedding(1000, 64, frequency_sharing="word", amplitude_sharing="word",
        ...                             amplitude_init="ones")   # appendix A: the sinusoidal PE
    """

    is_complex = True

    def __init__(self, num_embeddings: int, embedding_dim: int, *, padding_idx: int | None = None,
                 frequency_sharing: str | None = None, amplitude_sharing: str | None = None,
                 initial_phase: bool = False, frequency_init: str | float | Tensor = "sinusoidal",
                 amplitude_init: str | Tensor = "normal", sparse: bool = False, fused: bool = True,
                 first_position: int = 0, phase_dropout: float = 0.0, frequency_jitter: float = 0.0, device=None,
                 dtype=None) -> None:
        super().__init__()
        _check_sizes(num_embeddings, embedding_dim)
        _check_dtype(dtype)
        _check_complex_form("ComplexOrderEmbedding", dtype)
        check_flags(sparse=sparse, fused=fused, initial_phase=initial_phase)
        self.phase_dropout = check_phase_dropout(phase_dropout)
        if isinstance(first_position, bool) or not isinstance(first_position, int) or first_position < 0:
            raise ValueError(f"first_position must be a non-negative integer (the first default position), "
                             f"got {first_position!r}")
        _check_choice("frequency_sharing", frequency_sharing, SHARING_SCHEMES)
        _check_choice("amplitude_sharing", amplitude_sharing, SHARING_SCHEMES)
        if frequency_sharing == "dimension" and amplitude_sharing == "dimension" and not initial_phase:
            raise ValueError("frequency_sharing='dimension' with amplitude_sharing='dimension' makes all "
                             "embedding dimensions identical; share one of them only")
        if isinstance(frequency_init, bool) or not isinstance(frequency_init, (str, int, float, Tensor)):
            raise TypeError(f"frequency_init must be one of {', '.join(map(repr, FREQUENCY_INITS))}, a number or a "
                            f"tensor, got {type(frequency_init).__name__}")
        if isinstance(frequency_init, str):
            _check_choice("frequency_init", frequency_init, FREQUENCY_INITS)
            if frequency_init == "word-index" and frequency_sharing == "word":
                raise ValueError("frequency_init='word-index' needs a frequency per word; it cannot be combined "
                                 "with frequency_sharing='word'")
        if isinstance(amplitude_init, str):
            _check_choice("amplitude_init", amplitude_init, ("normal", "ones"))
        if isinstance(frequency_jitter, bool) or not isinstance(frequency_jitter, (int, float)) or \
                not math.isfinite(frequency_jitter) or frequency_jitter < 0:
            raise ValueError(f"frequency_jitter must be a finite number >= 0 (the standard deviation of the relative "
                             f"perturbation of the initial frequencies), got {frequency_jitter!r}")
        if frequency_jitter and (frequency_init == "zeros" or (isinstance(frequency_init, (int, float))
                                                               and frequency_init == 0)):
            raise ValueError("frequency_jitter multiplies the initial frequencies by (1 + jitter * N(0, 1)): with "
                             "frequency_init = 'zeros' it changes nothing; drop one of them")
        self.frequency_jitter = float(frequency_jitter)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _normalise_padding_idx(padding_idx, num_embeddings)
        self.frequency_sharing = frequency_sharing
        self.amplitude_sharing = amplitude_sharing
        self.frequency_init = frequency_init
        self.amplitude_init = amplitude_init
        self.sparse = sparse
        self.fused = fused
        self.first_position = first_position
        factory = {"device": device, "dtype": dtype}
        self.amplitude = nn.Parameter(torch.empty(self._table_shape(amplitude_sharing), **factory))
        self.frequency = nn.Parameter(torch.empty(self._table_shape(frequency_sharing), **factory))
        if initial_phase:
            self.initial_phase = nn.Parameter(torch.empty(num_embeddings, embedding_dim, **factory))
        else:
            self.register_parameter("initial_phase", None)
        if isinstance(amplitude_init, Tensor):
            _check_matrix("amplitude_init", amplitude_init, tuple(self.amplitude.shape))
        if isinstance(frequency_init, Tensor):
            shape = tuple(self.frequency.shape)
            try:
                fits = torch.broadcast_shapes(frequency_init.shape, shape) == shape
            except RuntimeError:
                fits = False
            if not fits or frequency_init.is_complex():
                raise ValueError(f"frequency_init must be a real tensor broadcastable to the frequency table {shape}, "
                                 f"got {tuple(frequency_init.shape)} {frequency_init.dtype}")
            if not bool(torch.isfinite(frequency_init).all()):
                raise ValueError("frequency_init holds NaN or infinite values; frequencies must be finite")
        elif isinstance(frequency_init, (int, float)) and not math.isfinite(frequency_init):
            raise ValueError(f"frequency_init must be finite, got {frequency_init!r}")
        self.reset_parameters()

    def _table_shape(self, sharing: str | None) -> tuple[int, int]:
        return {None: (self.num_embeddings, self.embedding_dim), "word": (1, self.embedding_dim),
                "dimension": (self.num_embeddings, 1)}[sharing]

    @classmethod
    def from_pretrained(cls, amplitude: Tensor, *, freeze_amplitude: bool = False, **kwargs: Any) -> "ComplexOrderEmbedding":
        """Build from a pretrained ``[V, D]`` amplitude matrix (e.g. word2vec vectors), in its dtype.

        ``freeze_amplitude=True`` keeps the amplitudes fixed; the default trains them (``nn.Embedding.from_pretrained``
        freezes by default). Other keyword arguments go to the constructor."""
        return _from_pretrained(cls, amplitude, freeze_amplitude, kwargs)

    @torch.no_grad()
    def reset_parameters(self) -> None:
        _init_amplitude(self.amplitude, self.amplitude_init)
        finit = self.frequency_init
        if isinstance(finit, Tensor):
            self.frequency.copy_(finit.expand_as(self.frequency))
        elif isinstance(finit, (int, float)):
            self.frequency.fill_(float(finit))
        elif finit == "sinusoidal":
            freqs = sinusoidal_frequencies(self.embedding_dim).to(self.frequency)
            if self.frequency_sharing == "dimension":  # one frequency per word: spread the geometric range over words
                freqs = sinusoidal_frequencies(self.num_embeddings).to(self.frequency)
                self.frequency.copy_(freqs[torch.randperm(self.num_embeddings)].unsqueeze(1))
            else:
                self.frequency.copy_(freqs.expand_as(self.frequency))
        elif finit == "word-index":  # the authors' code: Position_Embedding over the vocabulary
            j = torch.arange(self.num_embeddings, dtype=torch.float64).unsqueeze(1)
            k = torch.arange(self.frequency.shape[1], dtype=torch.float64)
            self.frequency.copy_(j * torch.pow(10000.0, -2.0 * k / self.frequency.shape[1]))
        elif finit == "uniform":
            nn.init.uniform_(self.frequency, 0.0, 2 * math.pi)
        elif finit == "normal":
            nn.init.normal_(self.frequency)
        else:
            self.frequency.zero_()
        if self.frequency_jitter:  # every entry its own relative perturbation: words distinct from the first step
            self.frequency.mul_(1.0 + self.frequency_jitter * torch.randn_like(self.frequency))
        if self.initial_phase is not None:
            nn.init.uniform_(self.initial_phase, -math.pi, math.pi)
        if self.padding_idx is not None:
            for table in (self.amplitude, self.frequency, self.initial_phase):
                if table is not None and table.shape[0] != 1:
                    table[self.padding_idx].zero_()

    def sparse_parameters(self) -> list[nn.Parameter]:
        """The parameters that receive sparse gradients (``sparse=True``): the per-word tables.

        Word-shared ``[1, D]`` tables always get dense gradients. Optimise the sparse ones with
        ``torch.optim.SparseAdam`` (or SGD/Adagrad) and everything else with a dense optimiser.
        """
        if not self.sparse:
            return []
        return [p for p in (self.amplitude, self.frequency, self.initial_phase) if p is not None and p.shape[0] != 1]

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """Eq. 5 at ``positions``: ``tokens [*, L]`` (integer ids) -> complex ``[*, L, embedding_dim]``.

        ``positions`` (optional) broadcasts to ``tokens``; default ``first_position + 0..L-1`` along the last axis.
        See the class docstring for the shapes and :func:`build_embedding` for the family."""
        _check_tokens(tokens, self.num_embeddings)
        dtype = self.amplitude.dtype
        _check_complex_form("ComplexOrderEmbedding", dtype)
        pos = _resolve_positions(tokens, positions, _position_dtype(dtype))
        if positions is None and self.first_position:
            pos = pos + self.first_position
        # float16 parameters: plain autograd (the fused path multiplies in place, in the table's dtype), so that the
        # phases w * pos are computed with the float32 positions; the result is rounded once to half precision.
        # Phase dropout (training only) drops entries of the phase tensor: plain autograd too.
        drop = self.phase_dropout if self.training else 0.0
        args = (tokens, pos, self.amplitude, self.frequency, self.initial_phase, self.padding_idx, self.sparse)
        if self.fused and dtype != torch.float16 and not drop:
            out = complex_order_embedding(*args)
        else:
            out = complex_order_embedding_reference(*args, phase_dropout=drop)
        return out.to(torch.complex32) if dtype == torch.float16 else out

    def extra_repr(self) -> str:
        options = [f"{name}={getattr(self, name)!r}" for name in ("frequency_sharing", "amplitude_sharing")
                   if getattr(self, name) is not None]
        if self.initial_phase is not None:
            options.append("initial_phase=True")
        if not isinstance(self.frequency_init, Tensor) and self.frequency_init != "sinusoidal":
            options.append(f"frequency_init={self.frequency_init!r}")
        options += _amplitude_init_repr(self.amplitude_init)
        s = _embedding_repr(self, *options)
        if not self.fused:
            s += ", fused=False"
        if self.first_position:
            s += f", first_position={self.first_position}"
        if self.phase_dropout:
            s += f", phase_dropout={self.phase_dropout}"
        if self.frequency_jitter:
            s += f", frequency_jitter={self.frequency_jitter}"
        return s


class ComplexVanillaEmbedding(nn.Module):
    r"""Complex-vanilla: ``r_j * exp(i theta_j)``, no position (Wang et al. 2019).

    Amplitudes as :class:`ComplexOrderEmbedding`; phases ``theta ~ U[-pi, pi)`` and trained.
    Positions are accepted (and validated) for the common call shape, then ignored.

    Args:
        num_embeddings: vocabulary size ``V``.
        embedding_dim: ``D`` complex dimensions.
        padding_idx: as in :class:`torch.nn.Embedding` (negative allowed); padding tokens embed to
            exactly zero and their rows get no gradient.
        amplitude_init: ``"normal"``, ``"ones"`` or a ``[V, D]`` tensor (e.g. word vectors).
        sparse: sparse gradients for both tables (see :meth:`sparse_parameters`).
        phase_dropout: in training mode, inverted dropout on the phases ``theta`` (0, the default: none),
            as :class:`ComplexOrderEmbedding`'s.
        fused: the native kernel where it applies (CPU float32, the default); ``False`` runs plain autograd,
            differentiable twice, as :class:`ComplexOrderEmbedding`'s ``fused`` (plain autograd either way inside
            ``torch.func`` transforms, with forward-mode AD and under ``torch.compile``).

    Shape:
        ``[..., L]`` -> ``[..., L, D]`` complex.

    Examples::

        >>> emb = ComplexVanillaEmbedding(100, 8, padding_idx=0)
        >>> z = emb(torch.tensor([[5, 7, 5, 0]]))
        >>> z.shape, z.dtype
        (torch.Size([1, 4, 8]), torch.complex64)
        >>> torch.equal(z[0, 0], z[0, 2]), bool(z[0, 3].abs().max() == 0)  # no position; padding is 0
        (True, True)
    """

    is_complex = True

    def __init__(self, num_embeddings: int, embedding_dim: int, *, padding_idx: int | None = None,
                 amplitude_init: str | Tensor = "normal", sparse: bool = False, phase_dropout: float = 0.0,
                 fused: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        _check_sizes(num_embeddings, embedding_dim)
        _check_dtype(dtype)
        _check_complex_form("ComplexVanillaEmbedding", dtype)
        check_flags(sparse=sparse, fused=fused)
        self.fused = fused
        self.phase_dropout = check_phase_dropout(phase_dropout)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _normalise_padding_idx(padding_idx, num_embeddings)
        self.amplitude_init = amplitude_init
        self.sparse = sparse
        if isinstance(amplitude_init, Tensor):
            _check_matrix("amplitude_init", amplitude_init, (num_embeddings, embedding_dim))
        elif isinstance(amplitude_init, str):
            _check_choice("amplitude_init", amplitude_init, ("normal", "ones"))
        self.amplitude = nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        self.phase = nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        _init_amplitude(self.amplitude, self.amplitude_init)
        nn.init.uniform_(self.phase, -math.pi, math.pi)
        if self.padding_idx is not None:
            self.amplitude[self.padding_idx].zero_()
            self.phase[self.padding_idx].zero_()

    @classmethod
    def from_pretrained(cls, amplitude: Tensor, *, freeze_amplitude: bool = False,
                        **kwargs: Any) -> "ComplexVanillaEmbedding":
        """Build from a pretrained ``[V, D]`` amplitude matrix (e.g. word2vec vectors), in its dtype; phases start at
        random. ``freeze_amplitude`` as :meth:`ComplexOrderEmbedding.from_pretrained`."""
        return _from_pretrained(cls, amplitude, freeze_amplitude, kwargs)

    def sparse_parameters(self) -> list[nn.Parameter]:
        """The parameters that receive sparse gradients (``sparse=True``)."""
        return [self.amplitude, self.phase] if self.sparse else []

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        """``r_j e^{i θ_j}`` for each token (positions are validated and ignored): ``tokens [*, L]`` -> complex
        ``[*, L, embedding_dim]``."""
        _check_tokens(tokens, self.num_embeddings)
        _check_complex_form("ComplexVanillaEmbedding", self.amplitude.dtype)  # a module moved with .to(bfloat16)
        if positions is not None:
            _resolve_positions(tokens, positions, _position_dtype(self.amplitude.dtype), used=False)  # validate only
        if (self.training and self.phase_dropout) or not self.fused:
            return complex_vanilla_embedding_reference(tokens, self.amplitude, self.phase, self.padding_idx, self.sparse,
                                                       phase_dropout=self.phase_dropout if self.training else 0.0)
        return complex_vanilla_embedding(tokens, self.amplitude, self.phase, self.padding_idx, self.sparse)

    def extra_repr(self) -> str:
        return (_embedding_repr(self, *_amplitude_init_repr(self.amplitude_init))
                + (f", phase_dropout={self.phase_dropout}" if self.phase_dropout else "")
                + ("" if self.fused else ", fused=False"))


# --------------------------------------------------------------------------------------
# The factory
# --------------------------------------------------------------------------------------

EMBEDDINGS: dict[str, type[nn.Module]] = {
    "none": WordEmbedding,
    "pe": LearnedPositionalEmbedding,
    "tpe": SinusoidalPositionalEmbedding,
    "complex-vanilla": ComplexVanillaEmbedding,
    "complex-order": ComplexOrderEmbedding,
}


def embedding_options(name: str) -> set[str]:
    """The keyword options :func:`build_embedding` passes on to embedding ``name`` (besides its sizes, padding,
    ``pretrained`` and ``max_positions``)."""
    allowed = {"sparse", "device", "dtype"}
    if name in ("complex-order", "complex-vanilla"):
        allowed |= {"phase_dropout", "fused"}
    if name == "complex-order":
        allowed |= {"frequency_sharing", "amplitude_sharing", "initial_phase", "frequency_init",
                    "first_position", "frequency_jitter"}
    if name == "tpe":
        allowed |= {"position_scale"}
    return allowed


def build_embedding(name: str, num_embeddings: int, embedding_dim: int, *, padding_idx: int | None = None,
                    pretrained: Tensor | None = None, max_positions: int = 512, **options: Any) -> nn.Module:
    """Build an embedding of the family by name.

    Args:
        name: one of ``"none"``, ``"pe"``, ``"tpe"``, ``"complex-vanilla"``, ``"complex-order"``.
        num_embeddings, embedding_dim, padding_idx: as the classes.
        pretrained: optional ``[V, D]`` word vectors: the word table of the real embeddings,
            the amplitudes of the complex ones, cast to the embedding's dtype (the default dtype, or
            ``dtype=`` among the options; ``ComplexOrderEmbedding.from_pretrained`` keeps the matrix's).
        max_positions: position-table size of ``"pe"`` (ignored by the others).
        **options: further keyword arguments for ``"complex-order"`` (sharing schemes,
            ``initial_phase``, ``frequency_init``, ``first_position``, ...), ``phase_dropout`` for both
            complex embeddings and ``sparse`` for all.

    Examples::

        >>> build_embedding("complex-order", 100, 16, padding_idx=0, frequency_sharing="word")
        ComplexOrderEmbedding(100, 16, padding_idx=0, frequency_sharing='word')
    """
    if name not in EMBEDDINGS:
        raise ValueError(f"unknown embedding {name!r}; valid names: {', '.join(EMBEDDINGS)}")
    if pretrained is not None:
        _check_matrix("pretrained", pretrained, (num_embeddings, embedding_dim))
    allowed = embedding_options(name)
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"option(s) {', '.join(unknown)} not accepted by embedding {name!r}; "
                         f"accepted: {', '.join(sorted(allowed))}")
    cls = EMBEDDINGS[name]
    if name == "pe":
        options["max_positions"] = max_positions
    if cls in (ComplexOrderEmbedding, ComplexVanillaEmbedding):
        if pretrained is not None:
            options["amplitude_init"] = pretrained
        return cls(num_embeddings, embedding_dim, padding_idx=padding_idx, **options)
    emb = cls(num_embeddings, embedding_dim, padding_idx=padding_idx, **options)
    if pretrained is not None:
        cast(WordEmbedding, emb).load_word_vectors(pretrained)  # the real embeddings: WordEmbedding and subclasses
    return emb
