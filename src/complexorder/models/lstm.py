"""LSTM classifier: the last hidden state of a (complex) LSTM over the embeddings."""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

from ..nn import ComplexLSTM
from ..nn import functional as CF
from ..nn.recurrent import _lstm_kernel_dtype
from .readout import check_embedding, check_sizes, check_tokens, make_dropout, padding_mask, to_real_features

__all__ = ["LSTMClassifier"]


class LSTMClassifier(nn.Module):
    r"""Embeddings -> LSTM (``hidden``) -> hidden state at each sentence's last token -> dropout -> output.

    With a complex embedding the LSTM is :class:`~complexorder.nn.ComplexLSTM` (paper Eq. 12) and
    its last hidden state is read out with the modulus. Variable lengths are handled by packing (on the CPU a
    one-layer forward LSTM reads a mostly full batch padded instead, in PyTorch's fused kernel: the same state at each
    row's last token, faster).

    Args:
        embedding: any module of :mod:`complexorder.embeddings` (real: :class:`torch.nn.LSTM`; complex:
            :class:`~complexorder.nn.ComplexLSTM`).
        num_classes: output classes.
        hidden: width of the LSTM's hidden state (default 128).
        dropout: dropout on the embeddings and the last hidden state, in ``[0, 1)`` (default 0.5).
        share_weights: ``A = B``, ``c = d`` in the complex LSTM's gates (ignored with a real embedding).
        num_layers: stacked LSTM layers (default 1, the paper's), with ``dropout`` between them too.
        bidirectional: a second LSTM reads each sentence backwards; the read-out joins the last layer's two final
            states (the forward one at the last token, the backward one at the first), ``2 * hidden`` features.

    Shape: ``tokens [B, L]``, padded at the end with the embedding's ``padding_idx`` (each row is read up to its
    number of non-padding tokens) -> ``logits [B, num_classes]``.

    Examples::

        >>> import torch
        >>> from complexorder import ComplexOrderEmbedding
        >>> model = LSTMClassifier(ComplexOrderEmbedding(100, 16, padding_idx=0), 2, hidden=8).eval()
        >>> tokens = torch.tensor([[5, 7, 9, 0, 0], [9, 7, 5, 3, 1]])  # 0 = padding
        >>> torch.allclose(model(tokens[:1, :3]), model(tokens[:1]), atol=1e-6)  # padding changes nothing
        True
    """

    def __init__(self, embedding: nn.Module, num_classes: int, hidden: int = 128, dropout: float = 0.5,
                 share_weights: bool = False, num_layers: int = 1, bidirectional: bool = False) -> None:
        super().__init__()
        check_embedding(embedding, "LSTMClassifier")
        num_classes, hidden, num_layers = check_sizes("LSTMClassifier", dropout, num_classes=num_classes, hidden=hidden,
                                                      num_layers=num_layers)
        if not isinstance(bidirectional, bool):  # nn.LSTM takes any truthy value
            raise ValueError(f"LSTMClassifier: bidirectional must be True or False, got {bidirectional!r}")
        self.embedding = embedding
        complex_ = cast(bool, embedding.is_complex)  # check_embedding checked both
        dim = cast(int, embedding.embedding_dim)
        self.dropout = make_dropout(dropout, complex_)
        stack: dict[str, Any]
        stack = {"num_layers": num_layers, "bidirectional": bidirectional,
                 "dropout": dropout if num_layers > 1 else 0.0}  # validated by the LSTMs themselves
        if complex_:
            self.lstm: nn.Module = ComplexLSTM(dim, hidden, batch_first=True, share_weights=share_weights, **stack)
        else:
            self.lstm = nn.LSTM(dim, hidden, batch_first=True, **stack)
        self.feature_dropout = nn.Dropout(dropout)
        self.output = nn.Linear(2 * hidden if bidirectional else hidden, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        check_tokens(tokens, "LSTMClassifier")
        if tokens.shape[0] == 0:  # an empty batch: nn.LSTM takes it, packing does not
            return self.output(self.output.weight.new_zeros(0, self.output.in_features))
        lengths = padding_mask(tokens, self.embedding).sum(1).clamp_min(1).cpu()
        x = self.dropout(self.embedding(tokens))
        if self._read_padded(x, lengths):
            # One forward layer reads each row from its first token, so its state at the row's last token does not
            # depend on the padding after it: the padded batch gives the packed batch's h_n there, and PyTorch's CPU
            # LSTM runs it in its fused (oneDNN) kernel, where packed sequences take a step-by-step path: a training
            # step of the LSTM over [64, 40] tokens, 299 -> 179 ms complex, 68 -> 38 ms real (one thread, stop 79).
            out, _ = self._run_lstm(x, x)
            last = out[torch.arange(out.shape[0], device=out.device), lengths.to(out.device) - 1]
            return self.output(self.feature_dropout(to_real_features(last)))
        if isinstance(self.lstm, ComplexLSTM):
            _, (h, _) = self.lstm(x, lengths=lengths)
        else:
            _, (h, _) = self._run_lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False), x)
        last = torch.cat((h[-2], h[-1]), dim=-1) if self.lstm.bidirectional else h[-1]  # the last layer's
        return self.output(self.feature_dropout(to_real_features(last)))

    def _run_lstm(self, inputs: Any, x: Tensor) -> Any:
        """``self.lstm(inputs)``; the real LSTM under a CPU autocast its kernel has no form for (float16 on most
        processors, bfloat16 on those without AVX-512) in float32 with autocast off, as
        :class:`~complexorder.nn.ComplexLSTM` runs there: PyTorch's CPU LSTM kernel (oneDNN) fails there ("could not
        create a primitive descriptor", a bare ``torch.nn.LSTM``'s error too)."""
        dtype = None if isinstance(self.lstm, ComplexLSTM) else _lstm_kernel_dtype(x)
        if dtype is None:
            return self.lstm(inputs)
        with torch.autocast("cpu", enabled=False):
            return self.lstm(inputs.to(dtype))

    def _read_padded(self, x: Tensor, lengths: Tensor) -> bool:
        """Whether the LSTM reads the padded batch instead of packing it (the same result up to float rounding): one
        layer, one direction, on the CPU, and real tokens in at least two thirds of the batch's slots (training
        batches are bucketed by length). The fused kernel computes the padding too, so with more of it packing is
        faster again: a batch of 64 MR sentences drawn at random (22 tokens on average, 51 at most) took 177 ms
        packed and 219 ms padded. The reverse direction would start in the padding, and a second layer's dropout would
        draw its mask over the packed tokens, not the padded ones (another random stream). On a GPU cuDNN runs packed
        sequences in its fused kernel already. A hook on the LSTM would see another call (no lengths, the padded
        outputs): the packed call runs then."""
        return bool(self.lstm.num_layers == 1 and not self.lstm.bidirectional and x.device.type == "cpu"
                    and CF._fast_paths_enabled() and CF._no_hooks(self.lstm)
                    and 3 * int(lengths.sum()) >= 2 * lengths.numel() * x.shape[1])
