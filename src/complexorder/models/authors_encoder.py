"""The encoder layer of the authors' released Transformer classifier, reproduced to measure it (not a recommendation).

FreedomIntelligence/complex-order, ``TEXT CLASSIFICATION/Transformer/`` (``attention_complex.py``,
``encoder_complex.py``, ``feed_forward_complex.py``; ``sublayer.py`` is missing from the repository, and the
``SublayerOutput`` / ``LayerNorm`` it imports are those of the code it was adapted from, the Annotated Transformer:
``x + dropout(sublayer(norm(x)))`` and ``a * (x - mean) / (std + eps) + b``). It is not the paper's complex layer
(Eq. 10-14, :class:`~complexorder.nn.ComplexTransformerEncoderLayer`):

- every projection is one *real* ``nn.Linear`` applied to the real and to the imaginary part alike
  (``linears_phase = linears_real``), i.e. ``W = A`` real and ``b = c (1 + i)``, not ``W = A + iB``;
- the four projections Q, K, V, O start as copies of one layer (``clones(self.real, 4)`` deep-copies it);
- the feed-forward block and the layer norms are real modules applied to each part;
- the first sublayer loses the attention input's residual (the attention runs first and its output is passed
  to ``sublayer_output[0](x, lambda x: x)``): the real part becomes ``a + dropout(norm(a))`` and the imaginary
  part ``a + dropout(a)`` (its lambda returns ``y``, the attention output, and drops the norm).

With complex tensors at the boundary: ``z [B, L, d]`` complex in and out.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..nn.functional import _join, check_attention_score, complex_scaled_dot_product_attention, positive_int

__all__ = ["AuthorsLayerNorm", "AuthorsEncoderLayer", "per_part", "swap_parts"]


def per_part(module, z: Tensor) -> Tensor:
    """``module(Re z) + i module(Im z)``: one real module with the same weights on both parts (one call on the two
    parts stacked, so a dropout inside draws its own mask for each part)."""
    out = module(torch.stack((z.real, z.imag)))
    return _join(out[0], out[1])  # under autocast: joined in float32 (bfloat16 has no complex form)


def swap_parts(z: Tensor) -> Tensor:
    """``Im z + i Re z`` (``= i conj(z)``): what the authors' classifier passes to its second encoder,
    ``self.encoder(encoded_sents_phase, encoded_sents_real)``."""
    return torch.complex(z.imag, z.real)


class AuthorsLayerNorm(nn.Module):
    r"""``weight * (x - mean) / (std + eps) + bias`` over the last dimension, ``std`` with Bessel's correction
    (the Annotated Transformer's ``LayerNorm``, which the authors' code imports); real tensors.

    Args:
        features: the last dimension.
        eps: added to the standard deviation (default 1e-6, theirs).

    Shape: ``[..., features]`` real -> same.

    Examples::

        >>> norm = AuthorsLayerNorm(4)
        >>> torch.allclose(norm(torch.tensor([1.0, 2.0, 3.0, 4.0])).std(), torch.tensor(1.0), atol=1e-5)
        True
    """

    def __init__(self, features: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x: Tensor) -> Tensor:
        mean = x.mean(-1, keepdim=True)
        return self.weight * (x - mean) / (x.std(-1, keepdim=True) + self.eps) + self.bias

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class AuthorsEncoderLayer(nn.Module):
    r"""One encoder layer of the authors' Transformer classifier (see the module's docstring for how it departs
    from the paper's complex layer).

    With ``P(z) = W Re z + b + i (W Im z + b)`` (one real linear per projection, on both parts):
    ``a = P_O(attention(P_Q z, P_K z, P_V z))`` with real attention weights from ``score``, then
    ``h = Re a + dropout(norm1(Re a)) + i (Im a + dropout(Im a))`` and, on each part ``t`` of ``h``,
    ``t + dropout(W_2 dropout(relu(W_1 norm2(t))))``.

    Args:
        d_model, nhead, dim_feedforward, dropout: as :class:`torch.nn.TransformerEncoderLayer`.
        attention_score: ``"bilinear"`` (default: theirs, ``|q . k| / sqrt(d_k)`` without the conjugate),
            ``"modulus"`` (paper Eq. 14) or ``"real"``; see
            :func:`~complexorder.nn.functional.complex_scaled_dot_product_attention`.

    Shape: ``src [B, L, d_model]`` complex -> same; ``src_key_padding_mask [B, L]`` True = padding (the authors'
    code has none: its fixed-length padding is attended to).

    Examples::

        >>> layer = AuthorsEncoderLayer(16, 4, 32, dropout=0.0)
        >>> z = torch.randn(2, 5, 16, dtype=torch.complex64)
        >>> layer(z).shape, layer(z).dtype
        (torch.Size([2, 5, 16]), torch.complex64)
        >>> all(torch.equal(p.weight, layer.projections[0].weight) for p in layer.projections)  # copies at start
        True
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 attention_score: str = "bilinear") -> None:
        super().__init__()
        # sizes first: nhead=0 was a ZeroDivisionError, d_model=0 was built
        d_model, nhead, dim_feedforward = (positive_int(v, name) for name, v in (
            ("d_model", d_model), ("nhead", nhead), ("dim_feedforward", dim_feedforward)))
        if d_model % nhead:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        self.nhead = nhead
        self.attention_score = check_attention_score(attention_score, "attention_score")
        self.projections = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(4))  # Q, K, V, O
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = AuthorsLayerNorm(d_model)
        self.norm2 = AuthorsLayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)  # each call draws its own mask, as their several dropout modules do
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``nn.Linear``'s default for Q and the feed-forward block; K, V and O start as copies of Q (theirs
        deep-copies one linear four times)."""
        for module in (cast(nn.Linear, self.projections[0]), self.linear1, self.linear2):
            module.reset_parameters()
        with torch.no_grad():
            for p in self.projections[1:]:
                p.load_state_dict(self.projections[0].state_dict())
        for norm in (self.norm1, self.norm2):
            nn.init.ones_(norm.weight)
            nn.init.zeros_(norm.bias)

    def _feed_forward(self, t: Tensor) -> Tensor:  # the second sublayer, on one part (or both stacked)
        return t + self.dropout(self.linear2(self.dropout(F.relu(self.linear1(self.norm2(t))))))

    def forward(self, src: Tensor, src_key_padding_mask: Tensor | None = None) -> Tensor:
        if not src.is_complex() or src.dim() != 3:
            raise ValueError(f"AuthorsEncoderLayer: src must be a complex [B, L, d_model] tensor, got "
                             f"{src.dtype} {tuple(src.shape)}")
        b, length, d = src.shape
        heads = cast("tuple[Tensor, Tensor, Tensor]",  # q, k, v (a list of three), unpacked below
                     [per_part(p, src).view(b, length, self.nhead, d // self.nhead).transpose(1, 2)
                      for p in self.projections[:3]])
        mask = None if src_key_padding_mask is None else ~src_key_padding_mask[:, None, None, :]
        attended, _ = complex_scaled_dot_product_attention(*heads, mask, dropout_p=self.dropout.p,
                                                           training=self.training, score=self.attention_score)
        a = per_part(self.projections[3], attended.transpose(1, 2).reshape(b, length, d))
        # the first sublayer as theirs: no residual from src; the norm on the real part only
        h = _join(a.real + self.dropout(self.norm1(a.real)), a.imag + self.dropout(a.imag))
        return per_part(self._feed_forward, h)

    def extra_repr(self) -> str:
        return f"nhead={self.nhead}, attention_score={self.attention_score!r}"
