"""FastText classifier (Joulin et al. 2016): the mean of the word embeddings through a dense layer."""

from __future__ import annotations

from typing import cast

from torch import Tensor, nn

from ..nn import ComplexLinear, SplitActivation
from .readout import (check_embedding, check_sizes, check_tokens, make_dropout, masked_mean, padding_mask,
                      to_real_features)

__all__ = ["FastTextClassifier"]


class FastTextClassifier(nn.Module):
    r"""Mean of the embeddings -> dense (``hidden``) -> activation -> dropout -> output layer.

    With a complex embedding the mean and the dense layer are complex (paper appendix B,
    Eq. 10) and the hidden layer is read out with the modulus before the real output layer.
    A complex-order embedding keeps word order in the phases of the mean: words at different
    positions interfere.

    Args:
        embedding: any module of :mod:`complexorder.embeddings` (real or complex).
        num_classes: output classes.
        hidden: width of the dense layer.
        dropout: dropout on the embeddings and the hidden layer.
        share_weights: ``A = B`` in the complex dense layer.

    Shape: ``tokens [B, L]`` -> ``logits [B, num_classes]``.

    Examples::

        >>> import torch
        >>> from complexorder import ComplexOrderEmbedding
        >>> model = FastTextClassifier(ComplexOrderEmbedding(100, 16, padding_idx=0), 2, hidden=8).eval()
        >>> tokens = torch.tensor([[5, 7, 9, 0, 0], [9, 7, 5, 3, 1]])  # 0 = padding
        >>> model(tokens).shape
        torch.Size([2, 2])
        >>> torch.allclose(model(tokens[:1, :3]), model(tokens[:1]), atol=1e-6)  # padding changes nothing
        True
    """

    def __init__(self, embedding: nn.Module, num_classes: int, hidden: int = 128, dropout: float = 0.5,
                 share_weights: bool = False) -> None:
        super().__init__()
        check_embedding(embedding, "FastTextClassifier")
        num_classes, hidden = check_sizes("FastTextClassifier", dropout, num_classes=num_classes, hidden=hidden)
        self.embedding = embedding
        complex_ = cast(bool, embedding.is_complex)  # check_embedding checked both
        dim = cast(int, embedding.embedding_dim)
        self.dropout = make_dropout(dropout, complex_)
        if complex_:
            self.hidden: nn.Module = ComplexLinear(dim, hidden, share_weights=share_weights)
            self.activation: nn.Module = SplitActivation("relu")
        else:
            self.hidden = nn.Linear(dim, hidden)
            self.activation = nn.ReLU()
        self.hidden_dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        check_tokens(tokens, "FastTextClassifier")
        mask = padding_mask(tokens, self.embedding)
        x = self.dropout(self.embedding(tokens))
        h = self.activation(self.hidden(masked_mean(x, mask)))
        return self.output(self.hidden_dropout(to_real_features(h)))
