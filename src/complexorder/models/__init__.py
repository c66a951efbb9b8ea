"""Models: one file per architecture, the embedding passed in. Models return logits."""

from __future__ import annotations

from typing import Any

from torch import nn

from .cnn import CNNClassifier
from .fasttext import FastTextClassifier
from .lstm import LSTMClassifier
from .transformer import TransformerClassifier

CLASSIFIERS: dict[str, type[nn.Module]] = {
    "fasttext": FastTextClassifier,
    "cnn": CNNClassifier,
    "lstm": LSTMClassifier,
    "transformer": TransformerClassifier,
}


def build_classifier(architecture: str, embedding: nn.Module, num_classes: int, **options: Any) -> nn.Module:
    """The classifier ``architecture`` (one of :data:`CLASSIFIERS`) over ``embedding``."""
    if architecture not in CLASSIFIERS:
        raise ValueError(f"unknown model {architecture!r}; valid names: {', '.join(CLASSIFIERS)}")
    return CLASSIFIERS[architecture](embedding, num_classes, **options)


__all__ = ["CLASSIFIERS", "build_classifier", "CNNClassifier", "FastTextClassifier", "LSTMClassifier",
           "TransformerClassifier"]
