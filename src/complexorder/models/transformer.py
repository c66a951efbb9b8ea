"""Transformer-encoder classifier (paper Sec. 3.1: 1 layer, d = 256, inner 512, 8 heads)."""

from __future__ import annotations

from torch import Tensor, nn

from ..nn import ComplexTransformerEncoderLayer
from .readout import make_dropout, masked_mean, padding_mask, to_real_features

__all__ = ["TransformerClassifier"]


class TransformerClassifier(nn.Module):
    r"""Embeddings -> ``num_layers`` encoder layers -> mean over the tokens -> output layer.

    Real embeddings run :class:`torch.nn.TransformerEncoderLayer`; complex ones
    :class:`~complexorder.nn.ComplexTransformerEncoderLayer` (complex attention, Eq. 13-14), read out
    with the modulus of the pooled state. ``d_model`` is the embedding's dimension. Without
    positions (``"none"``, ``"complex-vanilla"``) the whole model is invariant to word order.

    Args:
        embedding: any module of :mod:`complexorder.embeddings`.
        num_classes: output classes.
        nhead, dim_feedforward, num_layers, dropout: encoder settings.
        share_weights: real/imaginary weight sharing in ``W^{Q/K/V}`` (paper Table 4).
        attention_score: complex attention scores, ``"modulus"`` (paper Eq. 14) or ``"real"``; real
            embeddings run :class:`torch.nn.TransformerEncoderLayer`, whose scores are the real dot
            product already, and ignore it.

    Shape: ``tokens [B, L]`` -> ``logits [B, num_classes]``.
    """

    def __init__(self, embedding: nn.Module, num_classes: int, nhead: int = 8, dim_feedforward: int = 512,
                 num_layers: int = 1, dropout: float = 0.1, share_weights: bool = False,
                 attention_score: str = "modulus") -> None:
        super().__init__()
        self.embedding = embedding
        d = embedding.embedding_dim
        self.dropout = make_dropout(dropout, embedding.is_complex)
        if embedding.is_complex:
            make = lambda: ComplexTransformerEncoderLayer(d, nhead, dim_feedforward, dropout,  # noqa: E731
                                                          share_weights=share_weights,
                                                          attention_score=attention_score)
        else:
            if share_weights:
                raise ValueError("share_weights applies to complex embeddings only")
            make = lambda: nn.TransformerEncoderLayer(d, nhead, dim_feedforward, dropout, batch_first=True)  # noqa: E731
        self.layers = nn.ModuleList(make() for _ in range(num_layers))
        self.output = nn.Linear(d, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        mask = padding_mask(tokens, self.embedding)
        x = self.dropout(self.embedding(tokens))
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=~mask)
        return self.output(to_real_features(masked_mean(x, mask)))
