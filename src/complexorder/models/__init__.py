"""Models: one file per architecture, the embedding passed in. Models return logits.

The four classifiers of Table 2 (:func:`build_classifier` builds one by name), the encoder-decoder Transformer of
Table 5 (:class:`TransformerSeq2Seq`, configured by :class:`Seq2SeqConfig`) and the character-level Transformer-XL of
Table 6 (:class:`TransformerXL`, configured by :class:`TransformerXLConfig`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .cnn import CNNClassifier
from .fasttext import FastTextClassifier
from .lstm import LSTMClassifier
from .seq2seq import Seq2SeqConfig, TransformerSeq2Seq
from .transformer import TransformerClassifier
from .transformer_xl import TransformerXL, TransformerXLConfig

CLASSIFIERS: dict[str, type[nn.Module]] = {
    "fasttext": FastTextClassifier,
    "cnn": CNNClassifier,
    "lstm": LSTMClassifier,
    "transformer": TransformerClassifier,
}


def build_classifier(architecture: str, embedding: nn.Module, num_classes: int, **options: Any) -> nn.Module:
    """The classifier ``architecture`` (one of :data:`CLASSIFIERS`) over ``embedding``.

    Args:
        architecture: ``"fasttext"``, ``"cnn"``, ``"lstm"`` or ``"transformer"`` (:class:`FastTextClassifier`,
            :class:`CNNClassifier`, :class:`LSTMClassifier`, :class:`TransformerClassifier`); another name is a
            ``ValueError``.
        embedding: any module of :mod:`complexorder.embeddings`; the classifier is complex when it is, and its
            layers take the embedding's device and (float32 or float64) dtype.
        num_classes: output classes.
        **options: keyword arguments of that class (``hidden``, ``filters``, ``dropout``, ``share_weights``, ...).

    Shape: the model maps ``tokens [B, L]`` to ``logits [B, num_classes]``.

    Examples::

        >>> import torch
        >>> from complexorder import build_embedding
        >>> model = build_classifier("cnn", build_embedding("complex-order", 100, 16, padding_idx=0), 2, filters=4)
        >>> type(model).__name__, model(torch.randint(1, 100, (3, 12))).shape
        ('CNNClassifier', torch.Size([3, 2]))
    """
    if architecture not in CLASSIFIERS:
        raise ValueError(f"unknown model {architecture!r}; valid names: {', '.join(CLASSIFIERS)}")
    model = CLASSIFIERS[architecture](embedding, num_classes, **options)
    # The layers are built in torch's default dtype on the CPU; an embedding built in float64 or on a GPU takes
    # them along (a float64 embedding met float32 layers: "mat1 and mat2 must have the same dtype" at the first call).
    # A float16 / bfloat16 embedding moves them too (stop 80: they stayed on the CPU), in their own dtype.
    table = next((t for t in embedding.parameters() if t.is_floating_point()), None)
    if table is not None:
        model.to(device=table.device, dtype=table.dtype if table.dtype in (torch.float32, torch.float64) else None)
    return model


__all__ = ["CLASSIFIERS", "build_classifier", "CNNClassifier", "FastTextClassifier", "LSTMClassifier",
           "TransformerClassifier", "Seq2SeqConfig", "TransformerSeq2Seq", "TransformerXLConfig", "TransformerXL"]
