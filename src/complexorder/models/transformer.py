"""Transformer-encoder classifier (paper Sec. 3.1: 1 layer, d = 256, inner 512, 8 heads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
from torch import Tensor, nn

from ..embeddings import complex_to_real
from ..nn import ComplexTransformerEncoderLayer
from ..nn.functional import as_integer, check_attention_score
from .authors_encoder import AuthorsEncoderLayer, AuthorsLayerNorm, per_part, swap_parts
from .readout import (check_embedding, check_sizes, check_tokens, make_dropout, masked_mean, padding_mask,
                      to_real_features)

__all__ = ["TransformerClassifier", "NETWORKS", "READOUTS", "POSITION_ORDERS"]

#: How a complex embedding enters the classifier's layers ("authors": the layers of the authors' released code).
NETWORKS = ("auto", "complex", "real", "authors")
#: How the encoder's token states become the output layer's features: the modulus of their mean (default),
#: the mean of their moduli, or the state of each sentence's last token (the authors' code reads one position).
READOUTS = ("modulus-of-mean", "mean-of-modulus", "last")
#: Which positions the embedding sees: ``0, 1, ..., L - 1`` from each sentence's first token (the embedding's
#: default), or counted back from each sentence's last token, which is at 0 (with ``fixed_length``: from the last slot,
#: as the authors' Transformer classifier counts over its fixed 53 slots).
POSITION_ORDERS = ("forward", "from-end")


class TransformerClassifier(nn.Module):
    r"""Embeddings -> ``num_layers`` encoder layers -> mean over the tokens -> output layer.

    Real embeddings run :class:`torch.nn.TransformerEncoderLayer`; complex ones
    :class:`~complexorder.nn.ComplexTransformerEncoderLayer` (complex attention, Eq. 13-14), read out
    with the modulus of the pooled state. ``d_model`` is the embedding's dimension. Without
    positions (``"none"``, ``"complex-vanilla"``) the whole model is invariant to word order.

    ``network="real"`` feeds a complex embedding's ``[Re f, Im f]`` (paper appendix C) to the real
    :class:`torch.nn.TransformerEncoderLayer` of width ``2 * embedding_dim`` instead: a complex-order
    embedding of dimension ``D`` then has exactly the parameters of a real ``2D`` word table and the same
    layers as the real baselines of width ``2D``. It separates what the embedding does from what the
    complex layers do (as ``model.network`` of the translation model).

    Args:
        embedding: any module of :mod:`complexorder.embeddings`.
        num_classes: output classes.
        nhead, dim_feedforward, num_layers, dropout: encoder settings.
        share_weights: real/imaginary weight sharing in ``W^{Q/K/V}`` (paper Table 4).
        attention_score: complex attention scores, ``"modulus"`` (paper Eq. 14), ``"real"`` or
            ``"bilinear"`` (the authors' code; see
            :func:`~complexorder.nn.functional.complex_scaled_dot_product_attention`); real
            embeddings run :class:`torch.nn.TransformerEncoderLayer`, whose scores are the real dot
            product already, and ignore it (so does ``network="real"``).
        network: ``"auto"`` (default: complex layers for complex embeddings, real ones for real
            embeddings), ``"complex"`` (complex embeddings only), ``"real"``, or ``"authors"`` (complex
            embeddings only): the stack of the authors' released Transformer classifier, to measure it, not
            the paper's layers: :class:`~complexorder.models.authors_encoder.AuthorsEncoderLayer` (real weights
            shared by both parts, the attention input's residual lost), the real and imaginary parts of the
            first layer's output swapped before the next (theirs: ``self.encoder(phase, real)``), every layer
            starting as a copy of the first, a final :class:`~complexorder.models.authors_encoder.AuthorsLayerNorm`
            on each part, and ``[Re h, Im h]`` of the read position as the output layer's features (no
            modulus); ``readout`` must be ``"last"`` and ``share_weights`` off; ``attention_score`` applies
            (theirs is ``"bilinear"``).
        readout: with complex layers, ``"modulus-of-mean"`` (default: ``|mean_t z_t|``, the token states
            summed as complex numbers, so states whose phases differ interfere, as in complex FastText) or
            ``"mean-of-modulus"`` (``mean_t |z_t|``: each state's modulus first, so the phases of the states
            never meet), or ``"last"`` (the state of each sentence's last token, its modulus with complex
            layers; real layers too). The paper does not say which its Transformer classifier used; the
            authors' code reads the state at the last position of sentences padded to a fixed length
            (``encoded_sents[:, -1, :]``, a padding token for most sentences, attending to every position
            without a mask), which ``"last"`` approximates without reading padding, and reproduces with
            ``fixed_length``. Real layers (real
            embeddings, ``network="real"``) have no modulus: ``"mean-of-modulus"`` is their mean, as the
            default is, and they ignore ``attention_score``.
        position_order: ``"forward"`` (default: the embedding's own positions, ``0, 1, ..., L - 1`` from the
            first token) or ``"from-end"``: each sentence's tokens at ``n - 1, ..., 1, 0`` for its ``n``
            non-padding tokens, so the last token is at 0 whatever the padding (padding tokens at 0). The
            authors' Transformer classifier counts positions from the end (``torch.arange(klen - 1, -1, -1)``),
            but over sentences padded to a fixed 53 tokens, so their last *slot* is at 0 and the first word at
            52: that is ``"from-end"`` with ``fixed_length=53``. Every embedding receives these positions;
            position-free ones (``"none"``, ``"complex-vanilla"``) ignore them.
        fixed_length: ``None`` (default: batches padded to their longest sentence, padding masked out) or
            ``L``: the authors' input (torchtext ``fix_length``): every sentence right-padded to exactly ``L``
            tokens with the padding token id 0, which is then a learned word that every position attends to,
            with no mask (the embedding must have no ``padding_idx``; ``build_model_from_config`` builds it so).
            ``"last"`` then reads slot ``L - 1`` (a padding token for every sentence shorter than ``L``),
            ``"from-end"`` counts ``L - 1, ..., 0`` over the slots, and the mean read-outs average all ``L``
            slots. A batch longer than ``L`` is refused (nothing is truncated).

    Shape: ``tokens [B, L]`` -> ``logits [B, num_classes]``.

    Examples::

        >>> import torch
        >>> from complexorder import ComplexOrderEmbedding, ComplexVanillaEmbedding
        >>> tokens = torch.tensor([[5, 7, 9, 11]])
        >>> swapped = tokens[:, [3, 1, 2, 0]]
        >>> order_blind = TransformerClassifier(ComplexVanillaEmbedding(100, 16), 2, nhead=2, dim_feedforward=16).eval()
        >>> torch.allclose(order_blind(tokens), order_blind(swapped), atol=1e-6)  # no positions: a bag of words
        True
        >>> ordered = TransformerClassifier(ComplexOrderEmbedding(100, 16), 2, nhead=2, dim_feedforward=16).eval()
        >>> torch.allclose(ordered(tokens), ordered(swapped), atol=1e-6)  # positions in the phases
        False
    """

    def __init__(self, embedding: nn.Module, num_classes: int, nhead: int = 8, dim_feedforward: int = 512,
                 num_layers: int = 1, dropout: float = 0.1, share_weights: bool = False,
                 attention_score: str = "modulus", network: str = "auto", readout: str = "modulus-of-mean",
                 position_order: str = "forward", fixed_length: int | None = None) -> None:
        super().__init__()
        check_embedding(embedding, "TransformerClassifier")
        num_classes, nhead, dim_feedforward, num_layers = check_sizes(
            "TransformerClassifier", dropout, num_classes=num_classes, nhead=nhead, dim_feedforward=dim_feedforward,
            num_layers=num_layers)
        if fixed_length is not None:
            if (as_integer(fixed_length) or 0) < 1:
                raise ValueError(f"fixed_length must be None or a positive integer, got {fixed_length!r}")
            fixed_length = as_integer(fixed_length)
            if getattr(embedding, "padding_idx", None) is not None:
                raise ValueError(f"fixed_length needs an embedding without padding_idx (the padding token is a learned "
                                 f"word every position attends to); {type(embedding).__name__} has padding_idx="
                                 f"{embedding.padding_idx}")
        self.fixed_length = fixed_length
        # checked whatever the layers: real ones ignore it (documented), but a misspelt name was built silently
        check_attention_score(attention_score, "attention_score")
        if position_order not in POSITION_ORDERS:
            raise ValueError(f"position_order must be one of {', '.join(map(repr, POSITION_ORDERS))}, "
                             f"got {position_order!r}")
        self.position_order = position_order
        if network not in NETWORKS:
            raise ValueError(f"network must be one of {', '.join(map(repr, NETWORKS))}, got {network!r}")
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {', '.join(map(repr, READOUTS))}, got {readout!r}")
        if network in ("complex", "authors") and not embedding.is_complex:
            raise ValueError(f"network={network!r} needs a complex embedding; {type(embedding).__name__} is real")
        if network == "authors" and readout != "last":
            raise ValueError(f"network='authors' reads [Re h, Im h] of one position, as the authors' code: readout must "
                             f"be 'last', got {readout!r}")
        if network == "authors" and share_weights:
            raise ValueError("share_weights does not apply to network='authors' (its weights are real, shared by "
                             "both parts already)")
        self.authors = network == "authors"
        self.embedding = embedding
        self.is_complex = cast(bool, embedding.is_complex) and network != "real"  # complex encoder layers
        # a complex embedding read by real layers arrives as [Re f, Im f]: 2 * D real features
        d = cast(int, embedding.embedding_dim) * (2 if embedding.is_complex and not self.is_complex else 1)
        if d % nhead:  # was torch's "embed_dim must be divisible by num_heads" (an AssertionError for real layers)
            width = f"2 x embedding_dim = {d}" if embedding.is_complex and not self.is_complex else f"{d}"
            raise ValueError(f"TransformerClassifier: nhead ({nhead}) must divide the layers' width ({width})")
        self.dropout = make_dropout(dropout, self.is_complex)
        make: Callable[[], nn.Module]
        if self.authors:
            make = lambda: AuthorsEncoderLayer(d, nhead, dim_feedforward, dropout,  # noqa: E731
                                               attention_score=attention_score)
        elif self.is_complex:
            make = lambda: ComplexTransformerEncoderLayer(d, nhead, dim_feedforward, dropout,  # noqa: E731
                                                          share_weights=share_weights,
                                                          attention_score=attention_score)
        else:
            if share_weights:
                raise ValueError("share_weights applies to complex embeddings in the complex network only")
            make = lambda: nn.TransformerEncoderLayer(d, nhead, dim_feedforward, dropout, batch_first=True)  # noqa: E731
        # real layers: the mean, or the last token's state
        self.readout = readout if self.is_complex or readout == "last" else READOUTS[0]
        self.layers = nn.ModuleList(make() for _ in range(num_layers))
        if self.authors:  # their stack: every layer a deep copy of the first, one more norm, [Re h, Im h] read out
            for layer in self.layers[1:]:
                layer.load_state_dict(self.layers[0].state_dict())
            self.final_norm = AuthorsLayerNorm(d)
        self.output = nn.Linear(2 * d if self.authors else d, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        check_tokens(tokens, "TransformerClassifier")
        if tokens.shape[0] == 0:  # an empty batch: PyTorch's real encoder layer fails to reshape it
            return self.output(self.output.weight.new_zeros(0, self.output.in_features))
        if self.fixed_length is not None:  # the authors' input: right-padded with id 0 to fixed_length, no mask
            if tokens.shape[1] > self.fixed_length:
                raise ValueError(f"TransformerClassifier: tokens of length {tokens.shape[1]} exceed fixed_length "
                                 f"{self.fixed_length} (sentences are never truncated; raise fixed_length)")
            tokens = nn.functional.pad(tokens, (0, self.fixed_length - tokens.shape[1]), value=0)
        mask = padding_mask(tokens, self.embedding)
        if self.position_order == "from-end":  # n - 1, ..., 0 over each row's n real tokens; padding at 0
            steps = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.embedding(tokens, (mask.sum(1, keepdim=True) - 1 - steps).clamp_min(0))
        else:
            x = self.embedding(tokens)
        if not self.is_complex:  # a complex embedding read by real layers: [Re f, Im f]; real ones pass through
            x = complex_to_real(x)
        x = self.dropout(x)
        # real layers: a row of padding only attends to its padding (PyTorch's inference fast path gave NaN for it,
        # the training path finite values); the read-out below ignores that row's states either way
        attend = mask if self.is_complex else mask | ~mask.any(1, keepdim=True)
        for i, layer in enumerate(self.layers):
            x = layer(x, src_key_padding_mask=~attend)
            if self.authors and i == 0:  # theirs: encoder_layer(real, phase), then encoder(phase, real)
                x = swap_parts(x)
        if self.authors:
            x = per_part(self.final_norm, x)
        if self.readout == "mean-of-modulus":  # complex layers only (see __init__)
            return self.output(masked_mean(to_real_features(x), mask))
        if self.readout == "last":  # each row's last non-padding position
            last = (mask * torch.arange(1, mask.shape[1] + 1, device=mask.device)).argmax(1)
            state = x[torch.arange(x.shape[0], device=x.device), last]
            return self.output(torch.cat((state.real, state.imag), -1) if self.authors else to_real_features(state))
        return self.output(to_real_features(masked_mean(x, mask)))

    @property
    def network(self) -> str:
        """``"complex"``, ``"real"`` or ``"authors"``: the kind of encoder layers (``"auto"`` resolved)."""
        return "authors" if self.authors else "complex" if self.is_complex else "real"

    def extra_repr(self) -> str:
        return (f"network={self.network!r}" + (f", readout={self.readout!r}" if self.readout != READOUTS[0] else "")
                + (f", position_order={self.position_order!r}" if self.position_order != POSITION_ORDERS[0] else "")
                + (f", fixed_length={self.fixed_length}" if self.fixed_length is not None else ""))
