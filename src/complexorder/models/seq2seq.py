"""Encoder-decoder Transformer for translation over real or complex embeddings (paper Sec. 3.2).

Three variants share one class and one call shape:

=====================  ==============================================  =================================
variant                embedding of a token ``j`` at position ``pos``   layers
=====================  ==============================================  =================================
``"vanilla"``          ``s * WE_j + PE_pos`` (Vaswani et al., Eq. 7)    :class:`torch.nn.TransformerEncoderLayer` /
                                                                        :class:`torch.nn.TransformerDecoderLayer`
``"complex-vanilla"``  ``s * r_j e^{i theta_j}`` (no position)         :class:`~complexorder.nn.ComplexTransformerEncoderLayer` /
                                                                        :class:`~complexorder.nn.ComplexTransformerDecoderLayer`
``"complex-order"``    ``s * r_j e^{i omega_j pos}`` (Eq. 5, no          as complex-vanilla
                       initial phase, as the paper's MT setting)
=====================  ==============================================  =================================

``s = sqrt(d_model)`` with ``scale_embedding`` (word tables then start at ``N(0, 1/d_model)``,
as fairseq). The decoder of the complex variants runs causal complex self-attention and complex
cross-attention; its last state ``h`` is read out as the real vector ``[Re h, Im h]`` (or, with
``readout = "modulus-squared"``, as ``|h|^2`` per dimension, as the authors' released translation code does) and
projected to the target vocabulary.

``network = "real"`` (config) keeps a complex variant's embedding but feeds its ``[Re f, Im f]`` to the
real layers of width ``2 * d_model``: it separates what the embedding does from what the complex
layers do (the paper's LM replaces Transformer-XL's word embedding in this way).

Decoding is incremental: :meth:`TransformerSeq2Seq.decode_step` embeds only the newest target token
at its explicit position and keeps the projected keys/values of earlier steps (and of the encoder
memory) in a ``cache`` dict. The complex layers take that cache natively; the real
:class:`torch.nn.TransformerDecoderLayer` has none, so the step runs the layer's own sub-modules
with cached projections (tests check that step-wise and full decoding agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral
from typing import Any, Literal, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import check_fields, check_number, plain_numbers
from ..embeddings import build_embedding, check_phase_dropout, complex_to_real, sinusoidal_position_encoding
from ..nn import (ComplexDropout, ComplexLayerNorm, ComplexTransformerDecoderLayer,
                  ComplexTransformerEncoderLayer)
from ..nn.functional import as_integer, check_attention_score
from ..nn.value_checks import value_checks_enabled
from .tied import refuse_untied_state

__all__ = ["READOUTS", "VARIANTS", "Seq2SeqConfig", "TransformerSeq2Seq", "reorder_cache"]

VARIANTS = ("vanilla", "complex-vanilla", "complex-order")
_EMBEDDING_OF = {"vanilla": "none", "complex-vanilla": "complex-vanilla", "complex-order": "complex-order"}


@dataclass
class Seq2SeqConfig:
    """Hyper-parameters of :class:`TransformerSeq2Seq` (defaults: the paper's MT setting).

    Args:
        variant: ``"vanilla"``, ``"complex-vanilla"`` or ``"complex-order"``.
        d_model: model width: real dimensions for ``"vanilla"``, complex dimensions for the
            complex variants (a complex width ``D`` carries ``2D`` real numbers).
        nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, dropout, activation,
            norm_first: as :class:`torch.nn.Transformer` (``dim_feedforward`` is complex units for
            the complex variants).
        share_embeddings: one embedding table for source and target (needs a joint vocabulary).
        tie_output: use the target embedding as the output projection (``vanilla``: the word
            table; complex: ``[Re f(j, 0), Im f(j, 0)]``, the embedding at position 0, or ``|f(j, 0)|`` with
            ``readout = "modulus-squared"``; never with phase dropout).
        scale_embedding: word tables (amplitudes) start at ``N(0, 1/d_model)`` and are scaled by
            ``sqrt(d_model)``; otherwise ``N(0, 1)`` and unscaled.
        frequency_init: initial frequencies of ``"complex-order"`` (see
            :class:`~complexorder.embeddings.ComplexOrderEmbedding`).
        initial_phase: give ``"complex-order"`` a learned initial phase ``theta_j`` per word and
            dimension (``f(j, pos) = r_j e^{i(omega_j pos + theta_j)}``, paper Eq. 5; ``V * D`` more
            parameters). Off by default: the paper's translation model has none.
        frequency_sharing: ``None`` (a frequency per word and dimension, the paper's MT setting),
            ``"word"`` (one frequency per dimension shared by all words: ``D`` parameters) or
            ``"dimension"`` (one per word) -- the paper's Table 4 period-sharing schemes.
        share_weights: real/imaginary weight sharing in the complex attention (paper Table 4).
        attention_score: how the complex attention scores a query-key product: ``"modulus"``
            (``|q . conj(k)|``, paper Eq. 14), ``"real"`` (``Re(q . conj(k))``, not the paper's) or
            ``"bilinear"`` (``|q . k|``, the authors' classification code; see
            :func:`~complexorder.nn.functional.complex_scaled_dot_product_attention`).
        network: how a complex embedding enters the model. ``"complex"`` (the default for the complex
            variants): complex encoder and decoder stacks (paper §3.2). ``"real"``: the embedding's
            ``[Re f, Im f]`` (paper appendix C) feeds the real :class:`torch.nn.Transformer` layers of
            width ``2 * d_model`` -- the embedding "directly replaces the word embedding" of a vanilla
            Transformer, with no added position encoding (the phases carry the positions). ``None``
            picks ``"complex"`` for the complex variants and ``"real"`` for ``"vanilla"`` (which
            accepts ``"real"`` only).
        readout: how the complex network's last decoder state ``h [..., D]`` becomes the real features
            of the output projection: ``"real-imag"`` (``[Re h, Im h]``, ``2D`` features; the default)
            or ``"modulus-squared"`` (``|h_d|^2`` per dimension, ``D`` features, blind to the state's
            phases: the read-out of the authors' released translation code,
            ``FreedomIntelligence/complex-order``, ``TRANSLATION/transformer/Models.py``). With
            ``tie_output`` the latter's output matrix is ``|f(j, 0)|`` (the amplitudes' moduli). Complex
            network only (a real network's state has no phases).
        phase_dropout: in training, inverted dropout on the embedding's phases (``omega_j pos``, plus ``theta_j``
            with ``initial_phase``, for ``"complex-order"``; ``theta_j`` for ``"complex-vanilla"``; see
            :class:`~complexorder.embeddings.ComplexOrderEmbedding`), as the authors' classifier does at 0.1;
            0 (the default) is none. Complex variants only.
    """

    variant: Literal["vanilla", "complex-vanilla", "complex-order"] = "complex-order"
    d_model: int = 512
    nhead: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dim_feedforward: int = 2048
    dropout: float = 0.1
    activation: Literal["relu", "gelu"] = "relu"
    norm_first: bool = False
    share_embeddings: bool = True
    tie_output: bool = False
    scale_embedding: bool = True
    frequency_init: Literal["sinusoidal", "uniform", "zeros", "word-index", "normal"] = "sinusoidal"
    frequency_sharing: Literal["word", "dimension"] | None = None
    initial_phase: bool = False
    share_weights: bool = False
    attention_score: Literal["modulus", "real", "bilinear"] = "modulus"
    network: Literal["complex", "real"] | None = None
    readout: Literal["real-imag", "modulus-squared"] = "real-imag"
    phase_dropout: float = 0.0

    def __post_init__(self) -> None:
        plain_numbers(self)  # np.int64(4) is stored as 4 (JSON and checkpoints take plain numbers only)


READOUTS = ("real-imag", "modulus-squared")


def _check_token_ids(name: str, tokens: Tensor, dims: int) -> None:
    """A one-line error unless ``tokens`` is an integer tensor of ``dims`` dimensions (``[B, L]`` or ``[B]``)."""
    form = "[B, L]" if dims == 2 else "[B]"
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a {form} tensor of token ids, got {type(tokens).__name__}")
    if tokens.dim() != dims or tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise ValueError(f"{name} must be a {form} tensor of token ids, got shape {tuple(tokens.shape)} and dtype "
                         f"{tokens.dtype}")


_INDEX_FORM = "a 1-D integer tensor of beam/batch positions, each in [0, batch)"


def reorder_cache(cache: dict, index: Tensor) -> dict:
    """Select batch rows ``index`` of every tensor in a (nested) decoding cache, in place (beam search).

    ``index`` is a 1-D integer tensor of the rows to keep (beam back-pointers), each in ``[0, batch)``, ``batch``
    being the rows the cache holds; another form is a one-line ``TypeError`` or ``ValueError`` naming ``index``, raised
    before the cache is touched. The range is checked for a CPU ``index`` only: checking a GPU one would wait for
    the GPU (a host sync) at every decoding step."""
    tensors = _cache_tensors(cache)
    index = _check_reorder_index(index, tensors)
    for tensor_dict, key in tensors:
        tensor_dict[key] = tensor_dict[key].index_select(0, index)
    return cache


def _cache_tensors(cache: dict) -> list[tuple[dict, Any]]:
    """``(dict, key)`` of every tensor in the nested dict ``cache``."""
    found: list[tuple[dict, Any]] = []
    for key, value in cache.items():
        if isinstance(value, dict):
            found.extend(_cache_tensors(value))
        elif isinstance(value, Tensor):
            found.append((cache, key))
    return found


def _check_reorder_index(index: object, tensors: list[tuple[dict, Any]]) -> Tensor:
    """``index`` as ``index_select`` takes it (int32 or int64), or a one-line error naming it."""
    if not isinstance(index, Tensor):
        raise TypeError(f"index must be {_INDEX_FORM}, got {type(index).__name__}")
    if index.is_floating_point() or index.is_complex() or index.dtype == torch.bool:
        raise TypeError(f"index must be {_INDEX_FORM}, got dtype {index.dtype}")
    if index.dim() != 1:
        raise ValueError(f"index must be {_INDEX_FORM}, got shape {tuple(index.shape)}")
    if index.dtype not in (torch.int32, torch.int64):
        index = index.long()  # uint8, int16, ...: index_select takes int32 and int64 only
    sizes = [d[k].shape[0] for d, k in tensors if d[k].dim()]
    # on a GPU min/max would sync host and device
    if index.device.type == "cpu" and index.numel() and sizes and value_checks_enabled():
        batch = min(sizes)
        low, high = (int(v) for v in torch.aminmax(index))
        if low < 0 or high >= batch:
            raise ValueError(f"index must be {_INDEX_FORM}; the cache holds batch = {batch} rows, got values from "
                             f"{low} to {high}")
    return index


def _check_cache(cache: dict, position: int, memory: Tensor) -> None:
    """A decoding cache must hold the steps just before ``position`` (its last step at ``position - 1``), for the
    same sentences and source as ``memory``: otherwise the new token would attend to another prefix, or to keys
    projected from another source, without any error from the attention."""
    if "position" not in cache:
        return  # a fresh cache: the first step may sit at any position
    if position != cache["position"] + 1:
        raise ValueError(f"position {position} does not follow the cache, whose last step was at position "
                         f"{cache['position']}: pass position {cache['position'] + 1}, or a new {{}} cache to start over")
    layer = cache.get("layer0", {})  # decode_step's own dicts: the first layer's cached keys tell the sizes
    keys = layer.get("self", {}).get("k")
    if isinstance(keys, Tensor) and keys.shape[0] != memory.shape[0]:
        raise ValueError(f"the cache holds {keys.shape[0]} sentence(s) but memory holds {memory.shape[0]}: after "
                         f"selecting beams, apply reorder_cache to the cache with the same index")
    cross = layer.get("cross", {}).get("k")
    if isinstance(cross, Tensor) and cross.shape[2] != memory.shape[1]:
        raise ValueError(f"memory has {memory.shape[1]} source positions but the cache was filled from a memory of "
                         f"{cross.shape[2]}: the source keys are computed at the first step; start a new {{}} cache "
                         f"for another source")


def _mha_step(mha: nn.MultiheadAttention, query: Tensor, key_value: Tensor, cache: dict, static_kv: bool,
              key_padding_mask: Tensor | None) -> Tensor:
    """``nn.MultiheadAttention`` on new queries with cached, head-split keys/values ``[B, H, L, d_head]``."""
    d, h = mha.embed_dim, mha.num_heads
    w, b = mha.in_proj_weight, mha.in_proj_bias
    bias = (lambda i: None) if b is None else (lambda i: b[i * d:(i + 1) * d])  # noqa: E731
    heads = lambda x: x.view(x.shape[0], x.shape[1], h, d // h).transpose(1, 2)  # noqa: E731
    q = heads(F.linear(query, w[:d], bias(0)))
    if static_kv and "k" in cache:
        k, v = cache["k"], cache["v"]
    else:
        k = heads(F.linear(key_value, w[d:2 * d], bias(1)))
        v = heads(F.linear(key_value, w[2 * d:], bias(2)))
        if "k" in cache:
            k, v = torch.cat((cache["k"], k), 2), torch.cat((cache["v"], v), 2)
    cache["k"], cache["v"] = k, v
    mask = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=mha.dropout if mha.training else 0.0)
    return mha.out_proj(out.transpose(1, 2).reshape(query.shape[0], query.shape[1], d))


def _real_decoder_layer_step(layer: nn.TransformerDecoderLayer, x: Tensor, memory: Tensor,
                             memory_key_padding_mask: Tensor | None, cache: dict) -> Tensor:
    """One incremental step of a :class:`torch.nn.TransformerDecoderLayer`, same computation as its forward."""
    def sa(y):
        return layer.dropout1(_mha_step(layer.self_attn, y, y, cache.setdefault("self", {}), False, None))

    def ca(y):
        return layer.dropout2(_mha_step(layer.multihead_attn, y, memory, cache.setdefault("cross", {}), True,
                                        memory_key_padding_mask))

    def ff(y):
        return layer.dropout3(layer.linear2(layer.dropout(layer.activation(layer.linear1(y)))))

    if layer.norm_first:
        x = x + sa(layer.norm1(x))
        x = x + ca(layer.norm2(x))
        return x + ff(layer.norm3(x))
    x = layer.norm1(x + sa(x))
    x = layer.norm2(x + ca(x))
    return layer.norm3(x + ff(x))


class TransformerSeq2Seq(nn.Module):
    r"""Encoder-decoder Transformer over real (``"vanilla"``) or complex embeddings; returns logits.

    Args:
        config: :class:`Seq2SeqConfig`.
        src_vocab_size, tgt_vocab_size: vocabulary sizes (equal when ``share_embeddings``).
        pad_id: padding id of both vocabularies (embeds to zero; masked as a key).

    Shape:
        - ``forward(src [B, Ls], tgt_in [B, Lt])`` -> logits ``[B, Lt, V_tgt]`` (teacher forcing,
          causal: output ``t`` sees ``tgt_in[:, :t+1]`` only).
        - ``encode(src)`` -> ``(memory [B, Ls, d] (complex64 in the complex network; real ``2d`` wide for a complex variant in the real network), src_pad [B, Ls])``.
        - ``decode_step(tokens [B], position, memory, src_pad, cache)`` -> logits ``[B, V_tgt]``.

    Examples::

        >>> cfg = Seq2SeqConfig("complex-order", d_model=16, nhead=2, num_encoder_layers=1,
        ...                     num_decoder_layers=1, dim_feedforward=32)
        >>> model = TransformerSeq2Seq(cfg, 50, 50)
        >>> model(torch.randint(1, 50, (2, 7)), torch.randint(1, 50, (2, 5))).shape
        torch.Size([2, 5, 50])
    """

    def __init__(self, config: Seq2SeqConfig, src_vocab_size: int, tgt_vocab_size: int, *, pad_id: int = 0) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(f"config must be a Seq2SeqConfig, got {type(config).__name__}")
        check_fields(config, "model")  # types first: tie_output="no" tied the output, nhead=True built one head
        for name, size in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size)):
            if as_integer(size) is None or size <= 0:  # NumPy integers are taken (and stored as ints)
                raise ValueError(f"{name} must be a positive integer, got {size!r}")
        src_vocab_size, tgt_vocab_size = cast(int, as_integer(src_vocab_size)), cast(int, as_integer(tgt_vocab_size))
        if config.variant not in VARIANTS:
            raise ValueError(f"model.variant must be one of {', '.join(VARIANTS)}; got {config.variant!r}")
        if config.share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(f"share_embeddings needs one joint vocabulary, got source {src_vocab_size} and "
                             f"target {tgt_vocab_size} entries; set share_embeddings = false")
        if config.network not in (None, "complex", "real"):
            raise ValueError(f"model.network must be 'complex' or 'real', got {config.network!r}")
        if config.network == "complex" and config.variant == "vanilla":
            raise ValueError("model.network = 'complex' needs a complex variant ('complex-vanilla' or "
                             "'complex-order'); 'vanilla' is a real network")
        self.complex_embedding = config.variant != "vanilla"
        network = config.network or ("complex" if self.complex_embedding else "real")
        self.is_complex = network == "complex"  # complex encoder/decoder stacks
        if config.nhead < 1 or config.d_model < 1:
            raise ValueError(f"model.d_model and model.nhead must be positive, got {config.d_model} and {config.nhead}")
        if config.d_model % config.nhead:
            raise ValueError(f"model.d_model ({config.d_model}) must be divisible by model.nhead ({config.nhead})")
        for key in ("num_encoder_layers", "num_decoder_layers", "dim_feedforward"):
            if getattr(config, key) < 1:
                raise ValueError(f"model.{key} must be a positive integer, got {getattr(config, key)}")
        check_number("model.dropout", config.dropout, low=0.0, high=1.0, high_open=True)
        smallest = min(src_vocab_size, tgt_vocab_size)
        if as_integer(pad_id) is None or not 0 <= pad_id < smallest:
            # a negative id would embed as row V + pad_id but never be masked (src == pad_id compares the raw id)
            raise ValueError(f"pad_id must be a token id in [0, {smallest}) (the padding token of both "
                             f"vocabularies), got {pad_id!r}")
        pad_id = cast(int, as_integer(pad_id))  # checked above
        if config.share_weights and not self.is_complex:
            raise ValueError("share_weights applies to the complex network only (complex variants, network 'complex')")
        check_attention_score(config.attention_score, "model.attention_score")  # named (it said "score")
        if config.attention_score != "modulus" and not self.is_complex:
            raise ValueError("model.attention_score applies to the complex network only "
                             "(complex variants, network 'complex')")
        if config.activation not in ("relu", "gelu"):  # the complex stacks took any split activation, vanilla none
            raise ValueError(f"model.activation must be 'relu' or 'gelu' (what torch.nn.TransformerDecoderLayer "
                             f"takes, for every variant alike), got {config.activation!r}")
        if config.readout not in READOUTS:
            raise ValueError(f"model.readout must be one of {', '.join(READOUTS)}; got {config.readout!r}")
        if config.readout != "real-imag" and not self.is_complex:
            raise ValueError(f"model.readout = {config.readout!r} applies to the complex network only "
                             "(complex variants, network 'complex'); a real network's state has no phases")
        self.config = config
        self.pad_id = pad_id
        self.tgt_vocab_size = tgt_vocab_size  # the output's size: beam search keeps at most that many hypotheses
        d = config.d_model
        if config.frequency_sharing is not None and config.variant != "complex-order":
            raise ValueError(f"model.frequency_sharing applies to the complex-order variant only; "
                             f"got variant {config.variant!r}")
        if config.initial_phase and config.variant != "complex-order":
            raise ValueError(f"model.initial_phase applies to the complex-order variant only "
                             f"(complex-vanilla always has a phase per word); got variant {config.variant!r}")
        check_phase_dropout(config.phase_dropout, "model.phase_dropout")
        if config.phase_dropout and not self.complex_embedding:
            raise ValueError(f"model.phase_dropout applies to the complex variants only (the 'vanilla' embedding has "
                             f"no phases); got {config.phase_dropout!r}")
        options: dict[str, Any]
        options = ({"frequency_init": config.frequency_init, "frequency_sharing": config.frequency_sharing,
                    "initial_phase": config.initial_phase}
                   if config.variant == "complex-order" else {})
        if config.phase_dropout:
            options["phase_dropout"] = config.phase_dropout
        name = _EMBEDDING_OF[config.variant]
        self.src_embedding = build_embedding(name, src_vocab_size, d, padding_idx=pad_id, **options)
        if config.share_embeddings:
            # One table, registered once: `tgt_embedding` is then a property returning `src_embedding`. A module
            # registered under two names is left rebound to the passed tensors after torch.func.functional_call
            # (PyTorch restores its aliases in the order it swapped them). A state dict with `tgt_embedding.*` keys
            # (written before stop 82, or by an untied model) is checked: equal to the source table, they are
            # dropped; different, it is an error (PyTorch loaded the target's into both, without a word).
            self.register_load_state_dict_pre_hook(refuse_untied_state(
                "src_embedding.", "tgt_embedding.", "build this one with share_embeddings=False", drop_second=True))
        else:
            self.add_module("tgt_embedding", build_embedding(name, tgt_vocab_size, d, padding_idx=pad_id, **options))
        self.embed_scale = math.sqrt(d) if config.scale_embedding else 1.0
        self.embed_dropout = ComplexDropout(config.dropout) if self.is_complex else nn.Dropout(config.dropout)
        # A complex embedding read by the real network arrives as [Re f, Im f]: 2 * d real features.
        width = 2 * d if self.complex_embedding and not self.is_complex else d
        layer_args = (width, config.nhead, config.dim_feedforward, config.dropout)
        layer_kwargs: dict[str, Any]
        layer_kwargs = {"activation": config.activation, "batch_first": True, "norm_first": config.norm_first}
        enc: type[nn.Module]  # the complex or the real layers, built alike
        dec: type[nn.Module]
        norm: type[nn.Module]
        if self.is_complex:
            layer_kwargs.update(share_weights=config.share_weights, attention_score=config.attention_score)
            enc, dec, norm = ComplexTransformerEncoderLayer, ComplexTransformerDecoderLayer, ComplexLayerNorm
        else:
            enc, dec, norm = nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.LayerNorm
        self.encoder_layers = nn.ModuleList(enc(*layer_args, **layer_kwargs) for _ in range(config.num_encoder_layers))
        self.decoder_layers = nn.ModuleList(dec(*layer_args, **layer_kwargs) for _ in range(config.num_decoder_layers))
        # Pre-norm stacks end with a norm (post-norm layers already end normalised).
        self.encoder_norm = norm(width) if config.norm_first else None
        self.decoder_norm = norm(width) if config.norm_first else None
        readout = 2 * d if self.complex_embedding and config.readout == "real-imag" else d
        if config.tie_output:
            self.register_module("output", None)
            self.output_bias = nn.Parameter(torch.zeros(tgt_vocab_size))
        else:
            self.output = nn.Linear(readout, tgt_vocab_size)
            self.register_parameter("output_bias", None)
        self._reset_embeddings_and_output()

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "tgt_embedding" and "config" in self.__dict__ and self.config.share_embeddings:
            # nn.Module would register it beside the property, which would go on returning src_embedding
            raise AttributeError("tgt_embedding is src_embedding when model.share_embeddings is true: assign "
                                 "src_embedding, or build the model with share_embeddings=False")
        super().__setattr__(name, value)

    @property
    def tgt_embedding(self) -> nn.Module:
        """The target side's embedding: ``src_embedding`` itself when ``config.share_embeddings``."""
        if self.config.share_embeddings:
            return self.src_embedding
        module = self._modules.get("tgt_embedding")
        if module is None:  # while the constructor registers it (add_module asks hasattr first)
            raise AttributeError("tgt_embedding")
        return module

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Draw every parameter afresh, from the distributions the constructor draws it from: each sub-layer by its own
        initialisation, its parts before it (torch's attention zeroes its output projection's bias after that
        projection's own draw), then the embeddings and the output projection as the constructor does. A model built
        on the meta device is ready after ``to_empty(device=...)`` and this call. (The constructor itself draws only
        the last part: its layers initialise themselves, and the same seed gives the same model as before stop 82.)"""
        seen: set[int] = set()

        def reset_below(module: nn.Module) -> None:
            for child in module.children():
                if id(child) in seen:
                    continue
                seen.add(id(child))
                reset_below(child)
                if isinstance(child, nn.MultiheadAttention):
                    child._reset_parameters()
                elif hasattr(child, "reset_parameters"):
                    cast(Any, child).reset_parameters()

        reset_below(self)
        self._reset_embeddings_and_output()

    @torch.no_grad()
    def _reset_embeddings_and_output(self) -> None:
        emb: Any  # an embedding of build_embedding: reset_parameters, amplitude or weight
        for emb in {id(e): e for e in (self.src_embedding, self.tgt_embedding)}.values():
            emb.reset_parameters()
            if self.config.scale_embedding:
                table = emb.amplitude if self.complex_embedding else emb.weight
                nn.init.normal_(table, std=self.config.d_model ** -0.5)
                table[self.pad_id].zero_()
        if self.output is not None:
            self.output.reset_parameters()
        else:
            self.output_bias.zero_()

    # ---------------------------------------------------------------- embeddings and read-out
    def _embed(self, embedding: nn.Module, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        if self.complex_embedding:
            x = embedding(tokens, positions) * self.embed_scale
            if not self.is_complex:
                x = complex_to_real(x)
        else:
            pos = torch.arange(tokens.shape[-1], device=tokens.device) if positions is None else positions
            x = embedding(tokens) * self.embed_scale
            x = x + sinusoidal_position_encoding(pos, self.config.d_model).to(x.dtype)
        return self.embed_dropout(x)

    def output_weight(self) -> Tensor:
        """The ``[V_tgt, d]`` (vanilla), ``[V_tgt, 2D]`` (complex variants: real ⊕ imaginary parts) or ``[V_tgt, D]``
        (``readout = "modulus-squared"``) output matrix."""
        if self.output is not None:
            return self.output.weight
        emb = self.tgt_embedding
        if not self.complex_embedding:
            return emb.weight
        ids = torch.arange(emb.num_embeddings, device=self.output_bias.device)
        was_training = emb.training
        emb.train(False)  # the output matrix is f(j, 0) itself: no phase dropout on it (gradients still flow)
        try:
            table = emb(ids, torch.zeros_like(ids))
        finally:
            emb.train(was_training)
        return table.abs() if self.config.readout == "modulus-squared" else complex_to_real(table)

    def project(self, h: Tensor) -> Tensor:
        """Logits from decoder states ``h [..., d]`` (complex states read out as ``[Re h, Im h]``, or as
        ``|h|^2`` per dimension with ``readout = "modulus-squared"``)."""
        if self.config.readout == "modulus-squared":
            features = h.real.square() + h.imag.square()  # smooth at h = 0, unlike |h|
        else:
            features = complex_to_real(h)
        if self.output is not None:
            return self.output(features)
        return F.linear(features, self.output_weight(), self.output_bias)

    # ---------------------------------------------------------------- encoder / decoder
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder states and the source padding mask (True = padding)."""
        _check_token_ids("src", src, 2)
        if src.shape[1] == 0:  # the vanilla attention failed deep inside torch, the complex one attended to nothing
            raise ValueError(f"src must hold at least one token per sentence ([B, Ls] with Ls >= 1; a sentence of "
                             f"padding only is fine), got shape {tuple(src.shape)}")
        src_pad = src == self.pad_id
        if not self.is_complex:  # a source of padding only: PyTorch's inference fast path gave NaN for its row (the
            src_pad = src_pad & ~src_pad.all(1, keepdim=True)  # training path 0); it attends to its padding instead
        x = self._embed(self.src_embedding, src)
        for layer in self.encoder_layers:
            x = layer(x, src_key_padding_mask=src_pad)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, src_pad

    def _check_memory(self, batch: int, memory: Tensor, src_pad: Tensor) -> None:
        """The encoder output and its padding mask must belong to the same ``batch`` sentences (a batch of 1 would
        otherwise be broadcast to every sentence by the complex attention)."""
        if not isinstance(memory, Tensor) or not isinstance(src_pad, Tensor):
            raise TypeError(f"memory and src_pad must be tensors (what encode() returns), got "
                            f"{type(memory).__name__} and {type(src_pad).__name__}")
        if memory.dim() != 3 or memory.shape[0] != batch or tuple(src_pad.shape) != tuple(memory.shape[:2]):
            raise ValueError(f"memory [B, Ls, D] and src_pad [B, Ls] must hold the same {batch} sentence(s) as the "
                             f"target, got {tuple(memory.shape)} and {tuple(src_pad.shape)}")
        if src_pad.dtype != torch.bool:  # a long mask met PyTorch's attn_mask dtype error, a float one "~" failed
            raise ValueError(f"src_pad must be a boolean [B, Ls] mask (True = padding), got dtype {src_pad.dtype}")
        weight = next(self.parameters())
        expected = {torch.float32: torch.complex64, torch.float64: torch.complex128,
                    torch.float16: torch.complex32}.get(weight.dtype) if self.is_complex else weight.dtype
        if memory.dtype != expected and not torch.is_autocast_enabled(memory.device.type):
            raise ValueError(f"memory must be the encoder's output, of dtype {expected}, got {memory.dtype}")

    def decode(self, tgt_in: Tensor, memory: Tensor, src_pad: Tensor) -> Tensor:
        """Teacher-forced decoder: logits ``[B, Lt, V]``; position ``t`` sees target tokens ``<= t`` only."""
        _check_token_ids("tgt_in", tgt_in, 2)
        self._check_memory(tgt_in.shape[0], memory, src_pad)
        length = tgt_in.shape[1]
        x = self._embed(self.tgt_embedding, tgt_in)
        if self.is_complex:
            for layer in self.decoder_layers:
                x = layer(x, memory, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        else:
            causal = torch.ones(length, length, dtype=torch.bool, device=tgt_in.device).triu(1)  # True = masked
            for layer in self.decoder_layers:
                x = layer(x, memory, tgt_mask=causal, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        return self.project(x)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)

    def decode_step(self, tokens: Tensor, position: int, memory: Tensor, src_pad: Tensor, cache: dict) -> Tensor:
        """Logits ``[B, V]`` for the next token after ``tokens [B]``, which sit at target ``position``.

        Only the new token is embedded (at its explicit ``position``) and run through the decoder;
        earlier steps live in ``cache`` (start with ``{}`` at position 0 and keep passing it with consecutive
        positions; use :func:`reorder_cache` to follow beam-search back-pointers). The source keys are
        projected from ``memory`` at the first step and reused: a cache belongs to one source batch. A position
        that does not follow the cache's last step, or a memory of another batch or length, is refused.
        """
        _check_token_ids("tokens", tokens, 1)  # [B]: one new token per sentence ([B, 2] blamed the memory)
        if not isinstance(cache, dict):
            raise TypeError(f"cache must be a dict (start with {{}} at position 0 and keep passing it), got "
                            f"{type(cache).__name__}")
        x = tokens.view(-1, 1)
        if isinstance(position, bool) or not isinstance(position, (int, Integral)) or position < 0:
            raise ValueError(f"position must be a non-negative integer (the new token's target position), "
                             f"got {position!r}")
        self._check_memory(x.shape[0], memory, src_pad)
        _check_cache(cache, int(position), memory)
        x = self._embed(self.tgt_embedding, x, torch.full((1,), int(position), device=x.device))
        for i, layer in enumerate(self.decoder_layers):
            layer_cache = cache.setdefault(f"layer{i}", {})
            if self.is_complex:
                x = layer(x, memory, memory_key_padding_mask=src_pad, tgt_is_causal=True, cache=layer_cache)
            else:
                x = _real_decoder_layer_step(cast(nn.TransformerDecoderLayer, layer), x, memory, src_pad, layer_cache)
        cache["position"] = int(position)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        return self.project(x)[:, 0]

    def extra_repr(self) -> str:
        c = self.config
        return (f"variant={c.variant!r}, d_model={c.d_model}, nhead={c.nhead}, layers={c.num_encoder_layers}+"
                f"{c.num_decoder_layers}, dim_feedforward={c.dim_feedforward}")
