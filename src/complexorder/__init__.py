"""complexorder: order-aware complex-valued word embeddings (Wang et al., ICLR 2020).

A word ``j`` at position ``pos`` is a wave ``f(j, pos) = r_j * exp(i (w_j pos + theta_j))``.
"""

from . import nn
from .embeddings import (
    EMBEDDINGS,
    ComplexOrderEmbedding,
    ComplexVanillaEmbedding,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEmbedding,
    WordEmbedding,
    build_embedding,
    complex_to_real,
    sinusoidal_frequencies,
    sinusoidal_position_encoding,
)
from .nn.value_checks import set_value_checks, value_checks_enabled

__version__ = "0.1.0"

__all__ = [
    "nn",
    "EMBEDDINGS",
    "ComplexOrderEmbedding",
    "ComplexVanillaEmbedding",
    "LearnedPositionalEmbedding",
    "SinusoidalPositionalEmbedding",
    "WordEmbedding",
    "build_embedding",
    "complex_to_real",
    "sinusoidal_frequencies",
    "sinusoidal_position_encoding",
    "set_value_checks",
    "value_checks_enabled",
    "__version__",
]
