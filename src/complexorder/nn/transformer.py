"""Complex Transformer layers: self-attention + complex feed-forward, residuals, per-part layer norm."""

from __future__ import annotations

import copy
import re
from typing import Any, cast

import torch
from torch import Tensor, nn

from . import functional as CF
from .activation import ComplexDropout, SplitActivation
from .attention import ComplexMultiheadAttention, merge_masks
from .linear import ComplexLinear
from .normalization import ComplexLayerNorm

__all__ = ["ComplexTransformerEncoderLayer", "ComplexTransformerDecoderLayer", "ComplexTransformerEncoder",
           "ComplexTransformerDecoder"]


def _layer_sizes(d_model: object, nhead: object, dim_feedforward: object) -> tuple[int, int, int]:
    """The Transformer layers' sizes as ints, with their errors in the layers' own names (``d_model``, ``nhead``;
    the attention would say ``embed_dim``, ``num_heads``)."""
    sizes = (CF.positive_int(d_model, "d_model"), CF.positive_int(nhead, "nhead"),
             CF.positive_int(dim_feedforward, "dim_feedforward"))
    if sizes[0] % sizes[1]:
        raise ValueError(f"d_model ({sizes[0]}) must be divisible by nhead ({sizes[1]})")
    return sizes


def _attend(attention: ComplexMultiheadAttention, names: dict[str, str], *args, **kwargs) -> Tensor:
    """``attention(*args, **kwargs)``'s output, with its argument errors told in the layer's own argument names
    (``src_key_padding_mask``, not ``key_padding_mask``; ``memory``, not ``key``): the attention's checks know only
    their own."""
    try:
        out, _ = attention(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        for inner, outer in names.items():
            message = re.sub(rf"(?<![\w-]){re.escape(inner)}(?![\w-])", outer, message)
        if message == str(exc):
            raise
        raise type(exc)(message) from None
    return out


#: The attention's words -> the layers' arguments (the whole phrase first: the cross-attention's key and value
#: are both the memory).
_ENCODER_SELF = {"attn_mask": "src_mask", "key_padding_mask": "src_key_padding_mask", "query": "src",
                 "num_heads": "nhead"}
_DECODER_SELF = {"attn_mask": "tgt_mask", "key_padding_mask": "tgt_key_padding_mask", "query": "tgt",
                 "num_heads": "nhead"}
_DECODER_CROSS = {"attn_mask": "memory_mask",
                  "key_padding_mask": "memory_key_padding_mask", "query": "tgt", "key": "memory", "num_heads": "nhead"}


class _FeedForward(nn.Module):
    """``linear2(dropout(f(linear1(z))))`` with complex linears and a split activation."""

    def __init__(self, d_model: int, dim_feedforward: int, dropout: float, activation: str,
                 share_weights: bool, factory: dict) -> None:
        super().__init__()
        self.linear1 = ComplexLinear(d_model, dim_feedforward, share_weights=share_weights, **factory)
        self.activation = SplitActivation(activation)
        self.dropout = ComplexDropout(dropout)
        self.linear2 = ComplexLinear(dim_feedforward, d_model, share_weights=share_weights, **factory)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))

    def _forward_parts(self, real: Tensor, imag: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`forward` on the parts (the encoder layer's fast path)."""
        l1, l2 = self.linear1, self.linear2
        h = CF._linear_parts(real, imag, l1.weight_real, l1.weight_imag, l1.bias_real, l1.bias_imag)
        h = CF._activation_parts(self.activation.fn, *h)
        h = CF._dropout_parts(self.dropout.p, self.dropout.training, *h)
        return CF._linear_parts(h[0], h[1], l2.weight_real, l2.weight_imag, l2.bias_real, l2.bias_imag)


#: The fewest tokens (batch x length) for which the encoder layer runs on the parts: below, splitting, joining and the
#: checks cost more than the three-product form saves (d_model 256, one thread, stop 79: 0.94-0.96x at 8 tokens,
#: 1.05-1.06x at 80, 1.1-1.2x from 160 up, forward and backward or inference alone).
_PARTS_MIN_TOKENS = 64


class ComplexTransformerEncoderLayer(nn.Module):
    r"""Complex counterpart of :class:`torch.nn.TransformerEncoderLayer` (paper appendix B).

    ``x = norm1(x + dropout(self_attn(x)))``, ``x = norm2(x + dropout(ffn(x)))`` (post-norm, as
    Vaswani et al.; ``norm_first=True`` gives the pre-norm variant). Attention is
    :class:`ComplexMultiheadAttention`, the feed-forward block two :class:`ComplexLinear` with a
    split activation, and the norms :class:`ComplexLayerNorm` (real and imaginary parts separately). Appendix B
    of the paper normalises the two parts separately with *batch* normalisation; we keep the Transformer's layer
    norm (per token, no batch statistics, so padding and decoding step by step cannot change a token's state) and
    apply it to each part separately, as appendix B does. :class:`ComplexBatchNorm1d` is available for the other.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first:
            as :class:`torch.nn.TransformerEncoderLayer` (``batch_first`` defaults to True here;
            ``activation``, default ``"relu"``, is a name of :class:`SplitActivation` or a real callable,
            applied to each part).
        share_weights: real/imaginary weight sharing in ``W^{Q/K/V}`` (paper Table 4).
        share_ffn_weights: the same sharing in the feed-forward block.
        attention_score: ``"modulus"`` (paper Eq. 14, the default), ``"real"`` or ``"bilinear"`` (see
            :class:`ComplexMultiheadAttention`).
        device, dtype: of the real parameters (``dtype=torch.float64`` takes ``complex128`` inputs).

    Shape:
        - src: ``[B, L, d_model]`` complex (``[L, B, d_model]`` with ``batch_first=False``).
        - src_mask: optional ``[L, L]`` or ``[B * nhead, L, L]``, True where attention is NOT allowed (a float
          mask of 0 and -inf is taken too), as :class:`ComplexMultiheadAttention`'s ``attn_mask``.
        - src_key_padding_mask: optional ``[B, L]``, True = padding.
        - is_causal: ``True`` applies the causal mask itself (with ``src_mask``, if given, on top).
        - output: same shape as ``src``, complex.
        - unbatched, as :class:`torch.nn.TransformerEncoderLayer`: src ``[L, d_model]``, src_mask ``[L, L]`` or
          ``[nhead, L, L]``, src_key_padding_mask ``[L]``; the output ``[L, d_model]`` is that of a batch of one.

    Examples::

        >>> layer = ComplexTransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0).eval()
        >>> z = torch.randn(2, 5, 16, dtype=torch.complex64)
        >>> pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
        >>> out = layer(z, src_key_padding_mask=pad)
        >>> out.shape, out.dtype
        (torch.Size([2, 5, 16]), torch.complex64)
        >>> torch.allclose(out[1, :3], layer(z[1:, :3])[0], atol=1e-5)  # padded keys change nothing
        True
        >>> layer(z[1, :3]).shape  # unbatched
        torch.Size([3, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, *, share_weights: bool = False, share_ffn_weights: bool = False,
                 attention_score: str = "modulus", device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(batch_first=batch_first, norm_first=norm_first, share_weights=share_weights,
                       share_ffn_weights=share_ffn_weights)
        d_model, nhead, dim_feedforward = _layer_sizes(d_model, nhead, dim_feedforward)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = ComplexMultiheadAttention(d_model, nhead, dropout, share_weights=share_weights,
                                                   score=attention_score,
                                                   batch_first=batch_first, **factory)
        self.ffn = _FeedForward(d_model, dim_feedforward, dropout, activation, share_ffn_weights, factory)
        self.norm1 = ComplexLayerNorm(d_model, layer_norm_eps, **factory)
        self.norm2 = ComplexLayerNorm(d_model, layer_norm_eps, **factory)
        self.dropout1 = ComplexDropout(dropout)
        self.dropout2 = ComplexDropout(dropout)
        self.norm_first = norm_first

    def reset_parameters(self) -> None:
        """Draw every sub-layer's parameters afresh (torch's layers have none; its stacks' copies start equal)."""
        _reset_all(self)

    def _sa(self, x: Tensor, attn_mask, key_padding_mask, is_causal) -> Tensor:
        out = _attend(self.self_attn, _ENCODER_SELF, x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                      is_causal=is_causal)
        return self.dropout1(out)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """Self-attention then feed-forward, each with a residual and a norm: complex ``src`` ``[B, L, d_model]``
        (``batch_first``), ``[L, B, d_model]`` or unbatched ``[L, d_model]``; masks as
        :class:`torch.nn.TransformerEncoderLayer`."""
        if self._parts_ok(src, src_mask, src_key_padding_mask):
            return self._forward_parts(src, src_mask, src_key_padding_mask, is_causal)
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self.dropout2(self.ffn(x)))

    def _parts_ok(self, src: object, src_mask: object, src_key_padding_mask: object) -> bool:
        """Whether :meth:`_forward_parts` may run this call: a batched complex64/complex128 CPU input of width
        ``d_model`` outside autocast, boolean masks of the shapes the attention takes (anything else, a float mask
        included, takes the straightforward path and its checks), every parameter in the input's precision on the
        CPU, the sub-layers of the types this layer builds, with no hooks (the fast path does not call them)."""
        attn, ffn = self.self_attn, self.ffn
        if not (type(attn) is ComplexMultiheadAttention and CF._parts_ok(src, attn.q_proj.weight_real)):
            return False
        src = cast(Tensor, src)
        if src.dim() != 3 or src.shape[-1] != attn.embed_dim or attn.kdim != attn.embed_dim or \
                attn.vdim != attn.embed_dim:
            return False
        if src.shape[0] * src.shape[1] < _PARTS_MIN_TOKENS:  # an empty batch too (its parts cannot be reshaped)
            return False
        b, length = (src.shape[0], src.shape[1]) if attn.batch_first else (src.shape[1], src.shape[0])
        for mask, shapes in ((src_key_padding_mask, [(b, length)]),
                             (src_mask, [(length, length), (b * attn.num_heads, length, length)])):
            if mask is not None and not (isinstance(mask, Tensor) and mask.dtype == torch.bool
                                         and mask.device.type == "cpu" and tuple(mask.shape) in shapes):
                return False
        subs = (attn, attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj, ffn, ffn.linear1, ffn.activation,
                ffn.dropout, ffn.linear2, self.norm1, self.norm2, self.dropout1, self.dropout2)
        types = (ComplexMultiheadAttention, ComplexLinear, ComplexLinear, ComplexLinear, ComplexLinear, _FeedForward,
                 ComplexLinear, SplitActivation, ComplexDropout, ComplexLinear, ComplexLayerNorm, ComplexLayerNorm,
                 ComplexDropout, ComplexDropout)
        if any(type(m) is not t for m, t in zip(subs, types)) or not CF._no_hooks(*subs):
            return False
        weight = attn.q_proj.weight_real
        return (self.norm1.normalized_shape == self.norm2.normalized_shape == (attn.embed_dim,)
                and all(p.dtype == weight.dtype and p.device.type == "cpu" for p in self.parameters()))

    def _forward_parts(self, src: Tensor, src_mask: Tensor | None, src_key_padding_mask: Tensor | None,
                       is_causal: bool) -> Tensor:
        """:meth:`forward` on the real and imaginary parts of ``src``, split once and joined at the end (see
        ``functional._linear_parts``): the same result up to float rounding, and the same random numbers for every
        dropout, drawn in the same order."""
        attn = self.self_attn
        b, length = (src.shape[0], src.shape[1]) if attn.batch_first else (src.shape[1], src.shape[0])
        mask = merge_masks(length, length, src_key_padding_mask, src_mask, is_causal, device=src.device,
                           num_heads=attn.num_heads, batch_size=b)

        def norm(module: ComplexLayerNorm, real: Tensor, imag: Tensor) -> tuple[Tensor, Tensor]:
            return CF._layer_norm_parts(real, imag, module.normalized_shape, module.weight, module.bias, module.eps)

        def block(dropout: ComplexDropout, out: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
            return CF._dropout_parts(dropout.p, dropout.training, *out)

        real, imag = CF._split(src)  # in the input's layout, where the dropouts draw their masks as the layers do
        if self.norm_first:
            a = block(self.dropout1, attn._self_attention_parts(*norm(self.norm1, real, imag), mask))
            real, imag = real + a[0], imag + a[1]
            f = block(self.dropout2, self.ffn._forward_parts(*norm(self.norm2, real, imag)))
            real, imag = real + f[0], imag + f[1]
        else:
            a = block(self.dropout1, attn._self_attention_parts(real, imag, mask))
            real, imag = norm(self.norm1, real + a[0], imag + a[1])
            f = block(self.dropout2, self.ffn._forward_parts(real, imag))
            real, imag = norm(self.norm2, real + f[0], imag + f[1])
        return torch.complex(real, imag)


class ComplexTransformerDecoderLayer(nn.Module):
    r"""Complex counterpart of :class:`torch.nn.TransformerDecoderLayer`.

    Causal complex self-attention, complex cross-attention over the encoder ``memory`` and the
    complex feed-forward block, each with a residual and a per-part layer norm.

    ``cache`` (a dict filled in place) makes step-wise decoding incremental: the projected keys
    and values of earlier target positions and of the memory are kept, so a call with only the
    newest target token costs one position. Pass ``tgt_is_causal=True`` also in that case (the
    causal mask is bottom-right aligned).

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first:
            as :class:`torch.nn.TransformerDecoderLayer` (``batch_first`` defaults to True here;
            ``activation``, default ``"relu"``, is a name of :class:`SplitActivation` or a real callable,
            applied to each part).
        share_weights: real/imaginary weight sharing in ``W^{Q/K/V}`` of both attentions (paper Table 4).
        share_ffn_weights: the same sharing in the feed-forward block.
        attention_score: ``"modulus"`` (paper Eq. 14, the default), ``"real"`` or ``"bilinear"``, in both
            attentions (see :class:`ComplexMultiheadAttention`).
        device, dtype: of the real parameters (``dtype=torch.float64`` takes ``complex128`` inputs).

    Shape:
        - tgt: ``[B, Lt, d_model]``, memory: ``[B, Ls, d_model]`` complex (``[Lt, B, d_model]`` and
          ``[Ls, B, d_model]`` with ``batch_first=False``).
        - tgt_mask: optional ``[Lt, Lt]`` or ``[B * nhead, Lt, Lt]``; memory_mask: optional ``[Lt, Ls]`` or
          ``[B * nhead, Lt, Ls]``; True where attention is NOT allowed (a float mask of 0 and -inf is taken
          too).
        - tgt_key_padding_mask: optional ``[B, Lt]``; memory_key_padding_mask: optional ``[B, Ls]``; True =
          padding. With a ``cache``, the target masks' key dimension counts the cached positions too.
        - tgt_is_causal: ``True`` applies the causal mask itself; ``memory_is_causal`` likewise to the cross-attention
          (bottom-right aligned, as :func:`~complexorder.nn.functional.causal_mask`). Both are in
          :class:`torch.nn.TransformerDecoderLayer`'s places; ``cache`` is keyword-only.
        - output: same shape as ``tgt``, complex.
        - unbatched, as :class:`torch.nn.TransformerDecoderLayer`: tgt ``[Lt, d_model]`` and memory
          ``[Ls, d_model]`` (both unbatched), tgt_mask ``[Lt, Lt]`` or ``[nhead, Lt, Lt]``, memory_mask ``[Lt, Ls]``
          or ``[nhead, Lt, Ls]``, tgt_key_padding_mask ``[Lt]``, memory_key_padding_mask ``[Ls]``; the output
          ``[Lt, d_model]`` is that of a batch of one.

    Examples::

        >>> layer = ComplexTransformerDecoderLayer(16, 4, dim_feedforward=32, dropout=0.0).eval()
        >>> tgt, memory = torch.randn(1, 4, 16, dtype=torch.complex64), torch.randn(1, 6, 16, dtype=torch.complex64)
        >>> full = layer(tgt, memory, tgt_is_causal=True)
        >>> cache = {}
        >>> steps = [layer(tgt[:, t:t + 1], memory, tgt_is_causal=True, cache=cache) for t in range(4)]
        >>> torch.allclose(torch.cat(steps, 1), full, atol=1e-5)  # incremental decoding = the full pass
        True
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, *, share_weights: bool = False, share_ffn_weights: bool = False,
                 attention_score: str = "modulus", device=None, dtype=None) -> None:
        super().__init__()
        CF.check_flags(batch_first=batch_first, norm_first=norm_first, share_weights=share_weights,
                       share_ffn_weights=share_ffn_weights)
        d_model, nhead, dim_feedforward = _layer_sizes(d_model, nhead, dim_feedforward)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = ComplexMultiheadAttention(d_model, nhead, dropout, share_weights=share_weights,
                                                   score=attention_score,
                                                   batch_first=batch_first, **factory)
        self.cross_attn = ComplexMultiheadAttention(d_model, nhead, dropout, share_weights=share_weights,
                                                    score=attention_score,
                                                    batch_first=batch_first, **factory)
        self.ffn = _FeedForward(d_model, dim_feedforward, dropout, activation, share_ffn_weights, factory)
        self.norm1 = ComplexLayerNorm(d_model, layer_norm_eps, **factory)
        self.norm2 = ComplexLayerNorm(d_model, layer_norm_eps, **factory)
        self.norm3 = ComplexLayerNorm(d_model, layer_norm_eps, **factory)
        self.dropout1 = ComplexDropout(dropout)
        self.dropout2 = ComplexDropout(dropout)
        self.dropout3 = ComplexDropout(dropout)
        self.norm_first = norm_first

    def reset_parameters(self) -> None:
        """Draw every sub-layer's parameters afresh."""
        _reset_all(self)

    def _sa(self, x, mask, kpm, causal, cache):
        out = _attend(self.self_attn, _DECODER_SELF, x, x, x, key_padding_mask=kpm, attn_mask=mask, is_causal=causal,
                      cache=None if cache is None else cache.setdefault("self", {}))
        return self.dropout1(out)

    def _ca(self, x, memory, mask, kpm, causal, cache):
        out = _attend(self.cross_attn, _DECODER_CROSS, x, memory, memory, key_padding_mask=kpm, attn_mask=mask,
                      is_causal=causal, cache=None if cache is None else cache.setdefault("cross", {}), static_kv=True)
        return self.dropout2(out)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False, *, cache: dict | None = None) -> Tensor:
        """Causal self-attention, cross-attention over ``memory``, feed-forward: complex ``tgt`` and ``memory`` in
        the layer's layout; masks as :class:`torch.nn.TransformerDecoderLayer`; ``cache`` (a dict, keyword only)
        for step-wise decoding."""
        _check_cache(cache)
        if isinstance(tgt, Tensor) and isinstance(memory, Tensor) and tgt.dim() == memory.dim() == 3:
            b = 0 if self.self_attn.batch_first else 1
            if tgt.shape[b] != memory.shape[b]:
                raise ValueError(f"tgt and memory must hold the same batch, got tgt {tuple(tgt.shape)} and memory "
                                 f"{tuple(memory.shape)} (batch_first={self.self_attn.batch_first})")
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal, cache)
            x = x + self._ca(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal, cache)
            return x + self.dropout3(self.ffn(self.norm3(x)))
        x = self.norm1(x + self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal, cache))
        x = self.norm2(x + self._ca(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal, cache))
        return self.norm3(x + self.dropout3(self.ffn(x)))


def _check_cache(cache: object) -> None:
    if cache is not None and not isinstance(cache, dict):
        raise TypeError(f"cache must be a dict (empty at the first step), got {type(cache).__name__}")


def _clones(layer: nn.Module, num_layers: int, owner: str, expected: type) -> nn.ModuleList:
    if not isinstance(layer, expected):
        raise TypeError(f"{owner}: the layer must be a {expected.__name__}, got {type(layer).__name__}")
    return nn.ModuleList(copy.deepcopy(layer) for _ in range(CF.positive_int(num_layers, f"{owner}: num_layers")))


def _reset_all(module: nn.Module) -> None:
    for sub in module.modules():
        if sub is not module and hasattr(sub, "reset_parameters"):
            cast(Any, sub).reset_parameters()  # checked above; Module.__getattr__ would type it Tensor | Module


class ComplexTransformerEncoder(nn.Module):
    r"""A stack of ``num_layers`` copies of a :class:`ComplexTransformerEncoderLayer`, as
    :class:`torch.nn.TransformerEncoder`, with an optional final norm.

    The copies are deep copies, so they start with equal weights, as in :class:`torch.nn.TransformerEncoder`;
    :meth:`reset_parameters` draws each layer's (and the norm's) afresh.

    Args:
        encoder_layer: the layer to copy.
        num_layers: number of copies, a positive integer.
        norm: optional module applied to the last layer's output (a :class:`ComplexLayerNorm`, say; the pre-norm
            stacks, ``norm_first=True``, want one).

    Shape: as :class:`ComplexTransformerEncoderLayer` (``mask`` is its ``src_mask``); unbatched inputs too.

    Examples::

        >>> layer = ComplexTransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0)
        >>> encoder = ComplexTransformerEncoder(layer, num_layers=3, norm=ComplexLayerNorm(16)).eval()
        >>> encoder(torch.randn(2, 5, 16, dtype=torch.complex64), is_causal=True).shape
        torch.Size([2, 5, 16])
    """

    def __init__(self, encoder_layer: ComplexTransformerEncoderLayer, num_layers: int,
                 norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "ComplexTransformerEncoder", ComplexTransformerEncoderLayer)
        self.num_layers, self.norm = len(self.layers), norm

    def reset_parameters(self) -> None:
        _reset_all(self)

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """The layers in order (then ``norm``), each with the same masks: as :class:`torch.nn.TransformerEncoder`."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        return x if self.norm is None else self.norm(x)


class ComplexTransformerDecoder(nn.Module):
    r"""A stack of ``num_layers`` copies of a :class:`ComplexTransformerDecoderLayer`, as
    :class:`torch.nn.TransformerDecoder`, with an optional final norm and incremental decoding.

    The copies are deep copies (equal starting weights, as in torch); :meth:`reset_parameters` draws them afresh.

    Args:
        decoder_layer: the layer to copy.
        num_layers: number of copies, a positive integer.
        norm: optional module applied to the last layer's output.

    Shape: as :class:`ComplexTransformerDecoderLayer`; unbatched inputs too. With ``cache`` (a dict, empty at
    the first step) each call passes only the new target tokens: every layer keeps its keys and values under
    ``cache[i]`` (its index) and the memory's projections once, so step-by-step decoding gives what the whole
    prefix gives at once with ``tgt_is_causal=True``. Pass ``tgt_is_causal=True`` at every step too: a step of
    several tokens (a prompt) otherwise lets them see each other's later ones.

    Examples::

        >>> layer = ComplexTransformerDecoderLayer(16, 4, dim_feedforward=32, dropout=0.0)
        >>> decoder = ComplexTransformerDecoder(layer, num_layers=2).eval()
        >>> tgt, memory = torch.randn(1, 4, 16, dtype=torch.complex64), torch.randn(1, 6, 16, dtype=torch.complex64)
        >>> full = decoder(tgt, memory, tgt_is_causal=True)
        >>> cache = {}
        >>> steps = torch.cat([decoder(tgt[:, :2], memory, tgt_is_causal=True, cache=cache),  # a prompt of two,
        ...                    *(decoder(tgt[:, t : t + 1], memory, tgt_is_causal=True, cache=cache) for t in (2, 3))],
        ...                   dim=1)  # then a token at a time
        >>> torch.allclose(steps, full, atol=1e-5)
        True
    """

    def __init__(self, decoder_layer: ComplexTransformerDecoderLayer, num_layers: int,
                 norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "ComplexTransformerDecoder", ComplexTransformerDecoderLayer)
        self.num_layers, self.norm = len(self.layers), norm

    def reset_parameters(self) -> None:
        _reset_all(self)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False, *, cache: dict | None = None) -> Tensor:
        """The layers in order (then ``norm``); ``cache`` holds one decoding cache per layer."""
        _check_cache(cache)
        x = tgt
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                      memory_is_causal=memory_is_causal, cache=None if cache is None else cache.setdefault(i, {}))
        return x if self.norm is None else self.norm(x)
