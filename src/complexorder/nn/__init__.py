"""Complex-valued layers on ``torch.complex64`` tensors (paper appendix B).

Each module is a thin wrapper over a pure function in :mod:`complexorder.nn.functional`.
"""

from . import functional
from .activation import ComplexDropout, Modulus, SplitActivation
from .attention import ComplexMultiheadAttention
from .conv import ComplexConv1d
from .linear import ComplexLinear
from .normalization import ComplexBatchNorm1d, ComplexLayerNorm
from .recurrent import ComplexLSTM
from .transformer import ComplexTransformerDecoderLayer, ComplexTransformerEncoderLayer

__all__ = [
    "functional",
    "ComplexLinear",
    "ComplexConv1d",
    "ComplexLSTM",
    "ComplexMultiheadAttention",
    "ComplexTransformerEncoderLayer",
    "ComplexTransformerDecoderLayer",
    "ComplexLayerNorm",
    "ComplexBatchNorm1d",
    "SplitActivation",
    "ComplexDropout",
    "Modulus",
]
