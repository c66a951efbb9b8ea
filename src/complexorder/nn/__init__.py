"""Complex-valued layers on ``torch.complex64`` tensors (paper appendix B).

Most modules are thin wrappers over pure functions in :mod:`complexorder.nn.functional`;
:class:`ComplexLSTM` and :class:`ComplexBatchNorm1d` run PyTorch's own LSTM and BatchNorm1d on
the real numbers (the LSTM with block weights; batch norm with separate statistics of the real and
imaginary parts).
"""

from . import functional
from .activation import ComplexDropout, Modulus, SplitActivation
from .attention import ComplexMultiheadAttention
from .conv import ComplexConv1d
from .linear import ComplexLinear
from .normalization import ComplexBatchNorm1d, ComplexLayerNorm
from .recurrent import ComplexLSTM
from .transformer import (ComplexTransformerDecoder, ComplexTransformerDecoderLayer, ComplexTransformerEncoder,
                          ComplexTransformerEncoderLayer)

__all__ = [
    "functional",
    "ComplexLinear",
    "ComplexConv1d",
    "ComplexLSTM",
    "ComplexMultiheadAttention",
    "ComplexTransformerEncoderLayer",
    "ComplexTransformerDecoderLayer",
    "ComplexTransformerEncoder",
    "ComplexTransformerDecoder",
    "ComplexLayerNorm",
    "ComplexBatchNorm1d",
    "SplitActivation",
    "ComplexDropout",
    "Modulus",
]
