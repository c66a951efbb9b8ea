"""Complex multi-head attention (paper Eq. 13-14)."""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn

from . import functional as CF
from .linear import ComplexLinear
from .value_checks import value_checks_enabled

__all__ = ["ComplexMultiheadAttention", "merge_masks"]


def merge_masks(query_len: int, key_len: int, key_padding_mask: Tensor | None = None,
                attn_mask: Tensor | None = None, is_causal: bool = False, device=None,
                num_heads: int | None = None, batch_size: int | None = None) -> Tensor | None:
    """One boolean "allowed" mask ``[B|1, H|1, Lq, Lk]`` from ``nn.MultiheadAttention``-style masks.

    ``key_padding_mask [B, Lk]`` and ``attn_mask`` follow ``nn.MultiheadAttention``: True marks a
    key that must NOT be attended. ``attn_mask`` is ``[Lq, Lk]`` (every sequence and head) or
    ``[B * num_heads, Lq, Lk]`` (one mask per sequence and head; needs ``num_heads`` and
    ``batch_size``). ``is_causal`` adds the bottom-right aligned causal mask of
    :func:`complexorder.nn.functional.causal_mask`.
    """
    allowed = None
    if attn_mask is not None:
        attn_mask = _as_boolean_mask(attn_mask, "attn_mask", "True = not allowed")
        if attn_mask.dim() == 3 and num_heads is not None and batch_size is not None:
            expected = (batch_size * num_heads, query_len, key_len)
            if tuple(attn_mask.shape) != expected:
                raise ValueError(f"attn_mask must be [{query_len}, {key_len}] or [B * num_heads = {expected[0]}, "
                                 f"{query_len}, {key_len}], got {tuple(attn_mask.shape)}")
            allowed = ~attn_mask.view(batch_size, num_heads, query_len, key_len)
        elif attn_mask.shape != (query_len, key_len):
            raise ValueError(f"attn_mask must be [{query_len}, {key_len}], got {tuple(attn_mask.shape)}")
        else:
            allowed = ~attn_mask
    if is_causal:
        causal = CF.causal_mask(query_len, key_len, device=device)
        allowed = causal if allowed is None else allowed & causal
    if allowed is not None:
        allowed = allowed.view(1, 1, query_len, key_len) if allowed.dim() == 2 else allowed
    if key_padding_mask is not None:
        key_padding_mask = _as_boolean_mask(key_padding_mask, "key_padding_mask", "True = padding")
        if key_padding_mask.dim() != 2 or key_padding_mask.shape[1] != key_len:
            raise ValueError(f"key_padding_mask must be [B, {key_len}], got {tuple(key_padding_mask.shape)}")
        keys = (~key_padding_mask)[:, None, None, :]
        allowed = keys if allowed is None else allowed & keys
    return allowed


def _as_boolean_mask(mask: Tensor, name: str, meaning: str) -> Tensor:
    """``mask`` as a boolean mask (True = masked). A floating-point mask is taken as ``nn.MultiheadAttention``
    takes it, added to the scores, when it holds only 0 and -inf (what
    ``nn.Transformer.generate_square_subsequent_mask`` gives): -inf masks, 0 keeps. Other additive biases are
    refused (the masks here select keys; they do not weigh them)."""
    if mask.dtype == torch.bool:
        return mask
    if not mask.is_floating_point():
        raise TypeError(f"{name} must be boolean ({meaning}) or floating point holding 0 and -inf, got dtype "
                        f"{mask.dtype}")
    masked = mask == float("-inf")
    if value_checks_enabled() and not bool((masked | (mask == 0)).all()):
        raise ValueError(f"{name}: a floating-point mask may hold only 0 (keep) and -inf (mask); additive biases "
                         "are not supported, give a boolean mask")
    return masked


class ComplexMultiheadAttention(nn.Module):
    r"""Multi-head attention on complex sequences (paper Eq. 13-14).

    Query, key and value projections are :class:`ComplexLinear` maps ``W^{Q/K/V}``; each head
    weighs the values by ``softmax_j(|q_i . conj(k_j)| / sqrt(d_head))`` and the heads are joined
    by a complex output projection.

    Args:
        embed_dim: complex model width; num_heads must divide it.
        num_heads: number of heads.
        dropout: dropout on the attention weights.
        bias: biases in the projections.
        share_weights: real/imaginary weight sharing in ``W^{Q/K/V}`` (paper Table 4); the output
            projection keeps separate weights.
        batch_first: ``[B, L, E]`` (default) or ``[L, B, E]``.
        score: ``"modulus"`` (paper Eq. 14, the default), ``"real"``, ``Re(q . conj(k))``, or
            ``"bilinear"``, ``|q . k|`` without the conjugate as in the authors' classification code (see
            :func:`~complexorder.nn.functional.complex_scaled_dot_product_attention`).
        kdim, vdim: complex widths of the keys and values, as :class:`torch.nn.MultiheadAttention`'s (default
            ``None``: ``embed_dim``); ``W^K`` and ``W^V`` map them to ``embed_dim``. Key and value must then be
            given (they default to the query and the key).

    Masks follow :class:`torch.nn.MultiheadAttention`: ``key_padding_mask [B, Lk]`` and boolean
    ``attn_mask [Lq, Lk]`` or ``[B * num_heads, Lq, Lk]`` are True where attention is NOT allowed (a floating-point
    mask holding only 0 and -inf, such as ``nn.Transformer.generate_square_subsequent_mask``'s, is taken too;
    other additive biases are refused); ``is_causal=True`` lets query
    ``i`` see keys up to ``i + Lk - Lq`` (so a cached prefix of keys works for step-wise decoding).
    (:func:`complexorder.nn.functional.complex_scaled_dot_product_attention` itself takes the
    opposite, ``scaled_dot_product_attention`` convention: True = allowed.)

    Shape:
        query ``[B, Lq, E]``, key ``[B, Lk, kdim]``, value ``[B, Lk, vdim]`` complex (``[Lq, B, E]``, ... with
        ``batch_first=False``) -> output ``[B, Lq, E]`` complex and,
        with ``need_weights=True``, weights averaged over heads ``[B, Lq, Lk]`` (``average_attn_weights=False``:
        ``[B, H, Lq, Lk]``). ``need_weights`` defaults to ``False`` (:class:`torch.nn.MultiheadAttention`'s to
        ``True``): the weights are then ``None``, and no head-averaged copy is made. Unbatched inputs are taken
        as :class:`torch.nn.MultiheadAttention` takes them: query ``[Lq, E]``, key ``[Lk, kdim]``, value
        ``[Lk, vdim]``, ``key_padding_mask [Lk]`` and ``attn_mask [Lq, Lk]`` or ``[num_heads, Lq, Lk]`` give
        output ``[Lq, E]`` and weights ``[Lq, Lk]`` (``[H, Lq, Lk]``), the results of a batch of one
        (``batch_first`` does not apply). Query, key and value are all batched or all unbatched.

    Examples::

        >>> attn = ComplexMultiheadAttention(16, 4)
        >>> z = torch.randn(2, 5, 16, dtype=torch.complex64)
        >>> out, w = attn(z, need_weights=True, is_causal=True)
        >>> out.shape, out.dtype, w.shape
        (torch.Size([2, 5, 16]), torch.complex64, torch.Size([2, 5, 5]))
        >>> bool(w[:, 0, 1:].abs().max() == 0), torch.allclose(w.sum(-1), torch.ones(2, 5))  # causal; rows sum to 1
        (True, True)
        >>> cross = ComplexMultiheadAttention(16, 4, kdim=6, vdim=10)
        >>> memory, values = torch.randn(7, 6, dtype=torch.complex64), torch.randn(7, 10, dtype=torch.complex64)
        >>> out, w = cross(z[0], memory, values, need_weights=True)  # unbatched: no batch dimension
        >>> out.shape, w.shape
        (torch.Size([5, 16]), torch.Size([5, 7]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, *,
                 share_weights: bool = False, batch_first: bool = True, score: str = "modulus",
                 kdim: int | None = None, vdim: int | None = None, device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(bias=bias, share_weights=share_weights, batch_first=batch_first)
        # an integer first (2.0 built, then failed in view(); True built one head), then torch's own bound
        numbers = [CF.as_integer(v) for v in (embed_dim, num_heads)]
        for name, value, number in zip(("embed_dim", "num_heads"), (embed_dim, num_heads), numbers):
            if number is None:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        embed_dim, num_heads = cast(list[int], numbers)
        if embed_dim <= 0 or num_heads <= 0:  # nn.MultiheadAttention's message
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}")
        dims = [None if d is None else CF.as_integer(d) for d in (kdim, vdim)]
        if any(d is not None and (n is None or n <= 0) for d, n in zip((kdim, vdim), dims)):
            raise ValueError(f"kdim and vdim must be positive integers (or None: embed_dim), got kdim={kdim!r} and "
                             f"vdim={vdim!r}")
        kdim, vdim = dims
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        CF.check_dropout(dropout)
        self.score = CF.check_attention_score(score)
        factory = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.dropout, self.batch_first, self.share_weights = dropout, batch_first, share_weights
        self.q_proj = ComplexLinear(embed_dim, embed_dim, bias, share_weights=share_weights, **factory)
        self.k_proj = ComplexLinear(self.kdim, embed_dim, bias, share_weights=share_weights, **factory)
        self.v_proj = ComplexLinear(self.vdim, embed_dim, bias, share_weights=share_weights, **factory)
        self.out_proj = ComplexLinear(embed_dim, embed_dim, bias, **factory)

    def reset_parameters(self) -> None:
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            proj.reset_parameters()

    def _heads(self, x: Tensor) -> Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None,
                key_padding_mask: Tensor | None = None, need_weights: bool = False, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True, is_causal: bool = False, cache: dict | None = None,
                static_kv: bool = False) -> tuple[Tensor, Tensor | None]:
        """See the class docstring.

        ``cache`` (a dict, filled in place) enables step-wise decoding: the projected, head-split
        keys and values are stored under ``"k"``/``"v"`` and new ones appended at each call, so
        each step projects only its new tokens. With ``static_kv=True`` (cross-attention) the
        cached keys/values are computed once and reused: a cache whose batch or static key length does
        not fit the call is refused, but a new memory of the same shape is not detected (start a new
        cache for it). Masks must cover the full cached key length. Unbatched calls keep a cache of a
        batch of one.
        """
        if (key is None and self.kdim != self.embed_dim) or \
                (value is None and self.vdim != (self.embed_dim if key is None else self.kdim)):
            raise ValueError(f"key and value must be given with kdim={self.kdim} and vdim={self.vdim} (they default to "
                             f"the query and the key, of embed_dim={self.embed_dim})")
        key = query if key is None else key
        value = key if value is None else value
        batched = isinstance(query, Tensor) and query.dim() == 3  # [L, E]: unbatched, as in nn.MultiheadAttention
        layout = "[B, L, {}]" if self.batch_first else "[L, B, {}]"
        form = layout if batched else "[L, {}]"
        for name, z, width in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            CF._require_complex(name, z)
            if name == "query" and z.dim() not in (2, 3):
                raise ValueError(f"query must be {layout.format(width)} (batched) or [L, {width}] (unbatched) complex, "
                                 f"got {tuple(z.shape)}")
            if z.dim() != query.dim():
                raise ValueError(f"{name} must be {form.format(width)} complex ({'' if batched else 'un'}batched, as "
                                 f"query), got {tuple(z.shape)}")
            if z.shape[-1] != width:
                raise ValueError(f"{name} must be {form.format(width)} complex, got {tuple(z.shape)}")
        if not batched:  # a batch of one, taken away again from the results
            if key.shape[0] != value.shape[0]:
                raise ValueError(f"key and value must have the same length, got {tuple(key.shape)} and "
                                 f"{tuple(value.shape)}")
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not query.shape[0] == key.shape[0] == value.shape[0] or key.shape[1] != value.shape[1]:
            # nn.MultiheadAttention refuses these too; a batch of 1 would otherwise broadcast to every sequence
            raise ValueError(f"query, key and value must hold the same batch (and key and value the same length), "
                             f"got {tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)} (batch_first="
                             f"{self.batch_first})")
        if batched and key_padding_mask is not None and key_padding_mask.shape[:1] != query.shape[:1]:
            raise ValueError(f"key_padding_mask must be [B = {query.shape[0]}, Lk], got {tuple(key_padding_mask.shape)}")
        if cache is not None:
            self._check_cache(cache, query.shape[0], key.shape[1], static_kv)
        q = self._heads(self.q_proj(query))
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k = self._heads(self.k_proj(key))
            v = self._heads(self.v_proj(value))
            if cache is not None and "k" in cache:
                k = torch.cat((cache["k"], k), dim=2)
                v = torch.cat((cache["v"], v), dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        if not batched:
            key_padding_mask = self._unbatched_masks(q.shape[-2], k.shape[-2], key_padding_mask, attn_mask)
        mask = merge_masks(q.shape[-2], k.shape[-2], key_padding_mask, attn_mask, is_causal, device=q.device,
                           num_heads=self.num_heads, batch_size=q.shape[0])
        out, weights = CF.complex_scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training,
                                                               score=self.score)
        out = self.out_proj(out.transpose(1, 2).reshape(query.shape[0], query.shape[1], self.embed_dim))
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = weights.mean(1) if average_attn_weights else weights
        return out, weights if batched else weights.squeeze(0)

    def _self_attention_parts(self, real: Tensor, imag: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """Self-attention on the parts of a batched input (``[B, L, E]``, or ``[L, B, E]`` with
        ``batch_first=False``; the output in the same layout) with a merged "allowed" mask (:func:`merge_masks`), for
        the encoder layer's fast path (``functional._attention_parts``): ``W^{Q/K/V}`` as one product of the three
        weights stacked, three real products on the parts (two when shared)."""
        e, heads, d = self.embed_dim, self.num_heads, self.head_dim
        projs = (self.q_proj, self.k_proj, self.v_proj)
        weight_imag = None if self.share_weights else torch.cat([cast(Tensor, p.weight_imag) for p in projs])
        bias_real = None if self.q_proj.bias_real is None else torch.cat([cast(Tensor, p.bias_real) for p in projs])
        bias_imag = None if self.q_proj.bias_imag is None else torch.cat([cast(Tensor, p.bias_imag) for p in projs])
        qkv = CF._linear_parts(real, imag, torch.cat([p.weight_real for p in projs]), weight_imag, bias_real, bias_imag)
        order = (0, 2, 1, 3) if self.batch_first else (1, 2, 0, 3)  # -> [B, H, L, d]
        # views of the query, key and value blocks of both parts (split, not slices: see functional._attention_parts)
        blocks = [[t.view(*real.shape[:2], heads, d).permute(order) for t in part.split(e, -1)] for part in qkv]
        q, k, v = ((blocks[0][j], blocks[1][j]) for j in range(3))
        out = CF._attention_parts(q, k, v, mask, self.dropout, self.training, 1.0 / math.sqrt(d), self.score)
        back = (0, 2, 1, 3) if self.batch_first else (2, 0, 1, 3)  # [B, H, L, d] -> the input's layout
        merged = [t.permute(back).reshape(real.shape) for t in out]
        proj = self.out_proj
        return CF._linear_parts(merged[0], merged[1], proj.weight_real, proj.weight_imag, proj.bias_real,
                                proj.bias_imag)

    @staticmethod
    def _check_cache(cache: object, batch: int, key_len: int, static_kv: bool) -> None:
        """A one-line error when a decoding cache cannot belong to this call (it would be used silently: a cached
        batch of one broadcasts to any batch; cached cross-attention keys ignore the new ``key``)."""
        if not isinstance(cache, dict):
            raise TypeError(f"cache must be a dict (empty at the first step), got {type(cache).__name__}")
        if "k" not in cache:
            return
        cached = cache["k"]
        if cached.shape[0] != batch:
            raise ValueError(f"the cache holds keys for a batch of {cached.shape[0]} but the query's batch is {batch}: "
                             "start a new {} cache for a new batch (after selecting beams, reorder the cache alike)")
        if static_kv and cached.shape[2] != key_len:
            raise ValueError(f"the cache holds static keys of length {cached.shape[2]} but key has length {key_len}: "
                             "static_kv keys are computed at the first call; start a new {} cache for a new memory")

    def _unbatched_masks(self, query_len: int, key_len: int, key_padding_mask: Tensor | None,
                         attn_mask: Tensor | None) -> Tensor | None:
        """Checks ``nn.MultiheadAttention``'s unbatched masks, ``key_padding_mask [Lk]`` and ``attn_mask [Lq, Lk]`` or
        ``[num_heads, Lq, Lk]`` (what :func:`merge_masks` takes for a batch of one), and returns the padding mask
        ``[1, Lk]``."""
        if attn_mask is not None and attn_mask.dim() == 3 and attn_mask.shape != (self.num_heads, query_len, key_len):
            raise ValueError(f"attn_mask must be [{query_len}, {key_len}] or [num_heads = {self.num_heads}, "
                             f"{query_len}, {key_len}] for an unbatched query, got {tuple(attn_mask.shape)}")
        if key_padding_mask is None:
            return None
        if key_padding_mask.shape != (key_len,):
            raise ValueError(f"key_padding_mask must be [{key_len}] for an unbatched query, got "
                             f"{tuple(key_padding_mask.shape)}")
        return key_padding_mask.unsqueeze(0)

    def extra_repr(self) -> str:
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.kdim != self.embed_dim:
            s += f", kdim={self.kdim}"
        if self.vdim != self.embed_dim:
            s += f", vdim={self.vdim}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.share_weights:
            s += ", share_weights=True"
        if self.score != "modulus":
            s += f", score={self.score!r}"
        if not self.batch_first:
            s += ", batch_first=False"
        return s
