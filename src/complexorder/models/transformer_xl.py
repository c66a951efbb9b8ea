"""Character-level Transformer-XL (Dai et al. 2019) whose word embedding can be complex (paper Sec. 3.3).

The network is Dai et al.'s: segment-level recurrence (each layer also attends to a memory of
the previous segments' hidden states, kept without gradient), relative positional attention
with the two global biases ``r_w`` (content) and ``r_r`` (position) and the relative-shift
trick, a causal mask across memory and segment, ``same_length`` and ``clamp_len``. Only the
word embedding changes between the three variants (paper: "directly replaces the word
embedding with our proposed embedding under the same setting"):

=====================  ======================================================================
``embedding``          the input layer
=====================  ======================================================================
``"vanilla"``          a real word table ``WE_j`` (Dai et al.)
``"complex-vanilla"``  ``r_j exp(i theta_j)`` (no position)
``"complex-order"``    ``r_j exp(i w_j pos)`` (paper Eq. 5 without initial phases)
``"pe"``               ``WE_j + P_pos``: the real table plus a learned vector per position (a control
                       for the positions given to complex-order, e.g. ``position_mode="word"``;
                       positions above ``max_positions - 1`` share its vector)
``"tpe"``              ``WE_j + s PE_pos``: the real table plus the fixed sinusoids of paper Eq. 7 (a
                       control without parameters); ``s = position_scale``, by default
                       ``sqrt(2) init_std`` so that each sinusoid's RMS equals the table's initial
                       standard deviation, as ``"pe"``'s learned vectors start (the whole sum is
                       then scaled by ``sqrt(d_model)``; Vaswani et al.'s ``sqrt(d) W + PE`` is
                       ``s = 1 / sqrt(d_model)``, positions about 3 times the characters' vectors
                       at d_model 128 and Dai et al.'s initialisation)
=====================  ======================================================================

**How a complex embedding enters the network** (``network``):

- ``"real"`` (default): an embedding of ``D = d_embed / 2`` complex dimensions enters Dai et al.'s
  real network as ``[Re z, Im z]`` (:func:`complexorder.complex_to_real`, paper appendix C), so all
  three variants feed ``d_embed`` real features to identical layers and have the same parameter
  count (with ``d_embed != d_model`` a bias-free projection follows, as in Dai et al.'s adaptive
  input).
- ``"complex"``: the hidden states stay complex, ``d_model`` complex dimensions, as in the authors'
  released Transformer-XL code. The embedding has ``d_model`` complex dimensions; every layer applies
  its real weights to the real and the imaginary part alike (one weight set, so the parameter count
  is the real network's plus the embedding's frequencies), LayerNorm and ReLU act on each part, and
  attention scores are complex: the content term ``(q_i + r_w) . conj(k_j)`` (the Hermitian product,
  so a pair's score depends on its phase difference, i.e. on ``w (pos_i - pos_j)``) and the position
  term ``(q_i + r_r) . W_r R_{i-j}`` (``R`` is real), each read out by its modulus,
  ``|AC| + |BD|`` as in the authors' code (``attention_score="modulus"``), or both by their real
  part (``"real"``). The biases ``r_w``, ``r_r`` are added to the real and the imaginary part of the
  query, as the authors do. The output layer reads the modulus ``|h|`` of the last hidden state.
  Two deviations from the authors' code, both fixes: it multiplies ``q . k`` without the conjugate
  and its imaginary content term adds ``Re q . Im k`` twice (instead of ``Im q . Re k``); and it
  divides the read-out modulus by 1.5, dropped here (the output layer learns any scale). About twice
  the real network's compute (two parts per layer, complex scores). Dropout, as every real layer here,
  acts on the two stacked parts, so it drops a unit's real and imaginary part independently (unlike
  :class:`complexorder.nn.ComplexDropout`, which drops whole complex units); the committed complex-network
  runs (``benchmarks/results/table6_seeds.md``) were trained so, and it is kept for their reproduction.

**Positions in a stream.** Transformer-XL reads an unbounded stream segment after segment, and
the memory holds hidden states that were computed when their tokens were embedded. For the
phases ``w_j pos`` of a token in memory and of a token in the current segment to differ by
``w_j`` times their true distance, positions must keep counting across segments. With the
default ``position_mode="stream"`` the model carries the next position in its
:class:`XLMemory` (one counter per batch row, starting at 0 with an empty memory), so a row's
characters are embedded at positions ``0, 1, 2, ...`` of that row's stream, however many
segments it is cut into. Positions are therefore unbounded while the embedding stays bounded by
design (``|f(j, pos)| = |r_j|`` for every ``pos``); the phase ``w pos`` is computed in float32,
exact for integer positions up to ``2**24`` with a rounding error of about
``|w| pos 2**-24`` radians (at most 0.06 rad at one million positions for ``|w| <= 1``).
``position_mode="segment"`` restarts positions at 0 in every segment (what the authors'
released code does); it keeps positions small but gives a memory token and a current token at
the same offset the same phase. The relative attention is unaffected by either choice.

A bounded embedding does not make a bounded *sensitivity*: ``d f / d w = i pos f`` grows with the
position, so one optimiser step that moves a frequency by ``dw`` turns the phase at stream position
``pos`` by ``pos dw``. Far into a stream (hundreds of thousands of characters per batch row) every
step scrambles the phases and the embedding stops identifying characters: on the CPU benchmark
(``benchmarks/results/table6.md``) "stream" positions left the model at unigram statistics
(validation BPC 4.1 against 2.3-2.4 for the other runs after 1,500 steps), while "segment"
positions trained normally. The shipped configs therefore set ``position_mode = "segment"``.

``position_mode="word"`` (an extension, not in the paper) embeds each character at its offset in
its word: the separator (``separator_id``, text8's space) at 0, the letters after it at 1, 2, ...
It is bounded by the longest word, carried across segments in ``next_position`` (a word cut by a
segment boundary keeps counting), and a memory token and a current token get the same phase only
when they hold the same place in their words; a stream read in segments equals one long pass.

Examples::

    >>> cfg = TransformerXLConfig(vocab_size=27, n_layer=2, n_head=2, d_model=16, d_head=8,
    ...                           d_inner=32, mem_len=8, embedding="complex-order")
    >>> model = TransformerXL(cfg)
    >>> logits, memory = model(torch.randint(0, 27, (3, 5)))          # first segment
    >>> logits, memory = model(torch.randint(0, 27, (3, 5)), memory)  # positions 5..9, sees 5 + 5
    >>> logits.shape, memory.length, memory.next_position.tolist()  # memory keeps the last mem_len
    (torch.Size([3, 5, 27]), 8, [10, 10, 10])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, cast

import torch
from torch import Tensor, nn

from ..config import check_fields, check_number, plain_numbers
from ..embeddings import build_embedding, check_phase_dropout, complex_to_real, sinusoidal_position_encoding
from ..nn.functional import positive_int
from .tied import refuse_untied_state

__all__ = ["TransformerXLConfig", "XLMemory", "TransformerXL", "rel_shift", "rel_shift_reference",
           "causal_memory_mask", "relative_position_encoding", "RelPartialLearnableAttention",
           "TransformerXLLayer", "XL_EMBEDDINGS"]

#: Transformer-XL variant -> name in :func:`complexorder.build_embedding`.
XL_EMBEDDINGS = {"vanilla": "none", "complex-vanilla": "complex-vanilla", "complex-order": "complex-order", "pe": "pe",
                 "tpe": "tpe"}
#: The variants with a real embedding.
REAL_EMBEDDINGS = ("vanilla", "pe", "tpe")


@dataclass
class TransformerXLConfig:
    """Model hyper-parameters (the names of Dai et al.'s code).

    ``mem_len``, ``same_length`` and ``clamp_len`` are the training values; evaluation may use
    others through :meth:`TransformerXL.reset_length` (e.g. a longer memory).

    Args:
        vocab_size: number of tokens (default 27, text8's characters).
        embedding: the input layer: ``"vanilla"`` (default), ``"complex-vanilla"``, ``"complex-order"``, ``"pe"``
            or ``"tpe"`` (see the module docstring).
        n_layer, n_head, d_model, d_head, d_inner: layers, heads, hidden width, width per head and inner width of
            the feed-forward block (defaults 6, 8, 512, 64, 2048).
        d_embed: real features out of the embedding (a complex one has ``d_embed / 2`` complex dimensions, so
            ``d_embed`` is even), projected to ``d_model`` when they differ; ``None`` (default): ``d_model``.
            Must stay unset with ``network="complex"``.
        dropout, dropatt: dropout in the network (embeddings, position encodings, layers, before the output
            layer) and on the attention weights, each in ``[0, 1)`` (defaults 0.1 and 0).
        pre_lnorm: layer norm before each block instead of after it (default ``False``).
        mem_len: hidden states kept per layer for the next segment, ``>= 0`` (default 512).
        same_length: each query attends only to its ``mem_len`` most recent keys, the same attention length for
            every query (needs ``mem_len >= 1``; default ``False``).
        clamp_len: relative distances above it share its encoding; ``<= 0`` (default -1): no clamp.
        tie_weight: the output layer shares the word table (``"vanilla"`` with ``d_embed == d_model`` only;
            default ``False``).
        init_std: standard deviation of the initial weights (default 0.02; see
            :meth:`TransformerXL.reset_parameters`).
        frequency_init: ``"complex-order"`` only: the frequencies' start, a name of
            :class:`~complexorder.ComplexOrderEmbedding`'s ``frequency_init`` (default ``"sinusoidal"``).
        position_mode: ``"stream"`` (default), ``"segment"`` or ``"word"`` (see the module docstring).
        separator_id: ``position_mode="word"`` only: the token that ends a word (default 0, text8's space).
        max_positions: ``"pe"`` only: size of its position table; larger positions share its last vector
            (default 64).
        position_scale: ``"tpe"`` only: the factor ``s`` of the sinusoids; ``None`` (default): ``sqrt(2) init_std``.
        network: ``"real"`` (default) or ``"complex"``: how a complex embedding enters (see the module docstring).
        attention_score: ``network="complex"`` only: ``"modulus"`` (default, ``|AC| + |BD|``) or ``"real"``
            (``Re(AC + BD)``).
        phase_dropout: complex embeddings only: dropout on the phases in training, as
            :class:`~complexorder.ComplexOrderEmbedding`'s (default 0: none).
        initial_phase: ``"complex-order"`` only: a learned initial phase ``theta_j`` per character and dimension,
            ``f(j, pos) = r_j e^{i(omega_j pos + theta_j)}`` (paper Eq. 5; a ``vocab_size`` x (complex dimensions)
            table more: ``d_embed / 2`` of them with the real network, ``d_model`` with the complex one), started at
            ``U(-pi, pi)``. Default ``False``: the paper's Transformer-XL has none.
    """

    vocab_size: int = 27
    embedding: Literal["vanilla", "complex-vanilla", "complex-order", "pe", "tpe"] = "vanilla"
    n_layer: int = 6
    n_head: int = 8
    d_model: int = 512
    d_head: int = 64
    d_inner: int = 2048
    d_embed: int | None = None  # real features out of the embedding; None: d_model
    dropout: float = 0.1
    dropatt: float = 0.0
    pre_lnorm: bool = False
    mem_len: int = 512
    same_length: bool = False
    clamp_len: int = -1  # relative distances above clamp_len share its encoding; <= 0: no clamp
    tie_weight: bool = False  # output layer = word table (vanilla only)
    init_std: float = 0.02
    frequency_init: Literal["sinusoidal", "uniform", "zeros", "word-index", "normal"] = "sinusoidal"  # complex-order only
    position_mode: Literal["stream", "segment", "word"] = "stream"  # see the module docstring
    separator_id: int = 0  # position_mode="word": the token that ends a word (text8's space is 0)
    max_positions: int = 64  # embedding="pe": size of its position table (larger positions are clamped)
    position_scale: float | None = None  # embedding="tpe": factor of the sinusoids; None: sqrt(2) init_std
    network: Literal["real", "complex"] = "real"  # how a complex embedding enters (module docstring)
    attention_score: Literal["modulus", "real"] = "modulus"  # complex network only: |AC| + |BD| or Re(AC + BD)
    phase_dropout: float = 0.0  # complex embeddings only: dropout on the phases in training (see the embeddings)
    initial_phase: bool = False  # complex-order only: a learned theta per character and dimension (paper Eq. 5)

    def __post_init__(self) -> None:
        plain_numbers(self)  # np.int64(4) is stored as 4 (JSON and checkpoints take plain numbers only)


def check_config(cfg: TransformerXLConfig) -> None:
    """One-line errors for settings that cannot build a model."""
    if not isinstance(cfg, TransformerXLConfig):
        raise TypeError(f"config must be a TransformerXLConfig, got {type(cfg).__name__}")
    check_fields(cfg, "model")  # types first: "no" for a switch, True or None for a size
    for name in ("vocab_size", "n_layer", "n_head", "d_model", "d_head", "d_inner"):
        if getattr(cfg, name) <= 0:
            raise ValueError(f"model.{name} must be positive, got {getattr(cfg, name)}")
    check_number("model.init_std", cfg.init_std, low=0.0, meaning=" (the weights' initial standard deviation)")
    d_embed = cfg.d_model if cfg.d_embed is None else cfg.d_embed
    if d_embed <= 0:
        raise ValueError(f"model.d_embed must be positive, got {d_embed}")
    if cfg.embedding not in XL_EMBEDDINGS:
        raise ValueError(f"model.embedding must be one of {', '.join(map(repr, XL_EMBEDDINGS))}, got {cfg.embedding!r}")
    if cfg.embedding not in REAL_EMBEDDINGS and d_embed % 2 and cfg.network != "complex":
        named = "model.d_embed" if cfg.d_embed is not None else "model.d_model (model.d_embed, unset, follows it)"
        raise ValueError(f"{named} must be even for a complex embedding ([Re z, Im z] of d_embed/2 "
                         f"complex dimensions), got {d_embed}")
    if cfg.tie_weight and (cfg.embedding != "vanilla" or d_embed != cfg.d_model):
        raise ValueError("model.tie_weight needs the real 'vanilla' embedding with d_embed == d_model")
    if cfg.network not in ("real", "complex"):
        raise ValueError(f"model.network must be 'real' or 'complex', got {cfg.network!r}")
    if cfg.position_mode not in ("stream", "segment", "word"):
        raise ValueError(f"model.position_mode must be 'stream', 'segment' or 'word', got {cfg.position_mode!r}")
    if cfg.position_mode == "word" and not 0 <= cfg.separator_id < cfg.vocab_size:
        raise ValueError(f"model.separator_id must be a token id in [0, {cfg.vocab_size}), got {cfg.separator_id}")
    if cfg.attention_score not in ("modulus", "real"):
        raise ValueError(f"model.attention_score must be 'modulus' or 'real', got {cfg.attention_score!r}")
    if cfg.network == "complex" and cfg.embedding in REAL_EMBEDDINGS:
        raise ValueError("model.network = 'complex' needs a complex embedding ('complex-vanilla' or 'complex-order'), "
                         f"got {cfg.embedding!r}")
    if cfg.initial_phase and cfg.embedding != "complex-order":
        raise ValueError(f"model.initial_phase applies to model.embedding = 'complex-order' only (complex-vanilla "
                         f"always has a phase per character), got embedding {cfg.embedding!r}")
    check_phase_dropout(cfg.phase_dropout, "model.phase_dropout")
    if cfg.phase_dropout and cfg.embedding in REAL_EMBEDDINGS:
        raise ValueError(f"model.phase_dropout applies to the complex embeddings only ('complex-vanilla', "
                         f"'complex-order'), got embedding {cfg.embedding!r}")
    if cfg.embedding == "pe" and cfg.max_positions <= 0:
        raise ValueError(f"model.max_positions must be positive, got {cfg.max_positions}")
    if cfg.position_scale is not None and not (cfg.embedding == "tpe" and math.isfinite(cfg.position_scale)
                                               and cfg.position_scale > 0):
        raise ValueError("model.position_scale applies to model.embedding = 'tpe' only and must be a positive number, "
                         f"got {cfg.position_scale!r} with embedding {cfg.embedding!r}")
    if cfg.network == "complex" and cfg.d_embed is not None:
        raise ValueError(f"model.d_embed must be unset with model.network = 'complex' (the embedding has d_model = "
                         f"{cfg.d_model} complex dimensions), got {cfg.d_embed}")
    if cfg.network == "real" and cfg.attention_score != "modulus":
        raise ValueError("model.attention_score applies to model.network = 'complex' only")
    if not (0.0 <= cfg.dropout < 1.0 and 0.0 <= cfg.dropatt < 1.0):
        raise ValueError(f"model.dropout and model.dropatt must be in [0, 1), got {cfg.dropout} and {cfg.dropatt}")
    check_lengths(cfg.mem_len, cfg.same_length, where="model.mem_len")
    check_clamp_len(cfg.clamp_len, "model.clamp_len")


#: The largest memory length and ``clamp_len`` taken (torch's int32 index range; far beyond any corpus here).
MAX_LENGTH = 2**31 - 1


def check_clamp_len(clamp_len: int, where: str = "clamp_len") -> None:
    if isinstance(clamp_len, bool) or not isinstance(clamp_len, int):
        raise ValueError(f"{where} must be an integer (<= 0: no clamp), got {clamp_len!r}")
    if clamp_len > MAX_LENGTH:  # stop 81: an OverflowError traceback from the distances' clamp
        raise ValueError(f"{where} must be at most {MAX_LENGTH:,} (<= 0: no clamp), got {clamp_len:,}")


def check_lengths(mem_len: int, same_length: bool, where: str = "mem_len") -> None:
    if isinstance(mem_len, bool) or not isinstance(mem_len, int):  # 2.5 failed at the first slice of the memory
        raise ValueError(f"{where} must be an integer >= 0, got {mem_len!r}")
    if not isinstance(same_length, bool):
        raise ValueError(f"same_length must be True or False, got {same_length!r}")
    if mem_len < 0:
        raise ValueError(f"{where} must be >= 0, got {mem_len}")
    if mem_len > MAX_LENGTH:  # stop 81: 10**20 ended in an OverflowError traceback from the same_length mask
        raise ValueError(f"{where} must be at most {MAX_LENGTH:,}, got {mem_len:,}")
    if same_length and mem_len < 1:
        raise ValueError(f"same_length lets every character attend to its {where} most recent positions; "
                         f"it needs {where} >= 1, got {mem_len}")


# --------------------------------------------------------------------------------------
# Pure functions: relative shift, masks, relative position encodings
# --------------------------------------------------------------------------------------


def rel_shift(x: Tensor) -> Tensor:
    r"""Dai et al.'s relative shift: turn scores per *relative distance* into scores per *key*.

    ``x[..., i, m]`` holds the score of query ``i`` with the encoding of distance
    ``klen - 1 - m`` (distances listed from ``klen - 1`` down to 0). The result ``y[..., i, j]``
    is the score of query ``i`` (absolute index ``mlen + i``, ``mlen = klen - qlen``) with key
    ``j``, i.e. ``x[..., i, j + qlen - 1 - i]``, for every key ``j <= mlen + i`` (the keys a
    causal mask lets through); the other entries are left-over values, to be masked. Done with
    one zero column, a reshape and a slice -- no gather.

    Shape: ``[..., qlen, klen]`` -> ``[..., qlen, klen]`` with ``klen >= qlen``.
    """
    *lead, qlen, klen = x.shape
    if klen < qlen:
        raise ValueError(f"rel_shift needs klen >= qlen, got qlen={qlen}, klen={klen}")
    padded = torch.cat([x.new_zeros(*lead, qlen, 1), x], dim=-1)
    return padded.view(*lead, klen + 1, qlen)[..., 1:, :].reshape(*lead, qlen, klen)


def rel_shift_reference(x: Tensor) -> Tensor:
    """:func:`rel_shift` written as its definition (a gather); zeros where ``j > mlen + i``."""
    *lead, qlen, klen = x.shape
    i = torch.arange(qlen, device=x.device).unsqueeze(1)
    j = torch.arange(klen, device=x.device).unsqueeze(0)
    m = j + qlen - 1 - i
    valid = m < klen
    out = torch.gather(x, -1, m.clamp(max=klen - 1).expand(*lead, qlen, klen))
    return out * valid.to(x.dtype)


def causal_memory_mask(qlen: int, mlen: int, window: int | None = None, device=None) -> Tensor:
    """Boolean ``[qlen, mlen + qlen]``, True where query ``i`` may NOT attend to key ``j``.

    Keys ``0..mlen-1`` are the memory, ``mlen..mlen+qlen-1`` the segment; query ``i`` sits at key
    index ``mlen + i`` and sees every key ``j <= mlen + i`` (all of the memory, the segment up to
    itself). With ``window`` (Dai et al.'s ``same_length``, ``window = mem_len``) it sees only
    the ``window`` most recent keys ``mlen + i - window < j <= mlen + i``.
    """
    i = torch.arange(qlen, device=device).unsqueeze(1)
    j = torch.arange(mlen + qlen, device=device).unsqueeze(0)
    blocked = j > i + mlen
    if window is not None:
        blocked = blocked | (j <= i + mlen - window)
    return blocked


def relative_position_encoding(klen: int, d_model: int, clamp_len: int = -1, device=None,
                               dtype=torch.float32) -> Tensor:
    """Sinusoids (paper Eq. 7) of the distances ``klen-1, ..., 1, 0``, clamped at ``clamp_len`` if > 0.

    Shape: ``[klen, d_model]``.
    """
    distances = torch.arange(klen - 1, -1, -1.0, device=device, dtype=dtype)
    if clamp_len > 0:
        distances = distances.clamp(max=clamp_len)
    return sinusoidal_position_encoding(distances, d_model).to(dtype)


# --------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------


class RelPartialLearnableAttention(nn.Module):
    r"""Multi-head attention with relative positions (Dai et al. Eq. 4 with the relative shift).

    ``score(i, j) = (q_i + r_w)^T k_j + (q_i + r_r)^T W_r R_{i-j}`` over memory and segment;
    ``r_w``, ``r_r`` (``[n_head, d_head]``) are passed in because they are shared by all layers.

    Complex hidden states come as their two parts stacked, ``h [2, B, qlen, d_model]`` (real, then
    imaginary; ``mem`` alike): the same weights act on both parts and the score is complex,
    ``AC = (q_i + r_w) . conj(k_j)``, ``BD = (q_i + r_r) . W_r R_{i-j}``, read out as
    ``|AC| + |BD|`` (``score="modulus"``) or ``Re(AC) + Re(BD)`` (``"real"``); one set of weights
    per head then averages the values of both parts.

    Shape: ``h [B, qlen, d_model]``, ``r [klen, d_model]``, ``mask [qlen, klen]`` (True = blocked),
    ``mem [B, mlen, d_model]`` or ``None`` -> ``[B, qlen, d_model]``; complex: ``h [2, B, qlen,
    d_model]``, ``mem [2, B, mlen, d_model]`` -> ``[2, B, qlen, d_model]``.
    """

    def __init__(self, n_head: int, d_model: int, d_head: int, dropout: float, dropatt: float = 0.0,
                 pre_lnorm: bool = False, score: str = "modulus") -> None:
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
        self.pre_lnorm = pre_lnorm
        self.score = score
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)
        self.scale = 1.0 / math.sqrt(d_head)

    def forward(self, h: Tensor, r: Tensor, r_w_bias: Tensor, r_r_bias: Tensor, mask: Tensor,
                mem: Tensor | None = None) -> Tensor:
        qlen = h.shape[-2]
        cat = h if mem is None or mem.shape[-2] == 0 else torch.cat([mem, h], dim=-2)
        lead, klen = cat.shape[:-2], cat.shape[-2]  # lead: (B,), or (2, B) for complex states
        heads = self.qkv_net(self.layer_norm(cat) if self.pre_lnorm else cat)
        q, k, v = heads.chunk(3, dim=-1)
        q = q[..., -qlen:, :].reshape(*lead, qlen, self.n_head, self.d_head).transpose(-2, -3)  # [.., H, q, Dh]
        k = k.reshape(*lead, klen, self.n_head, self.d_head).transpose(-2, -3)                  # [.., H, k, Dh]
        v = v.reshape(*lead, klen, self.n_head, self.d_head).transpose(-2, -3)
        r_k = self.r_net(r).reshape(klen, self.n_head, self.d_head).transpose(0, 1)   # [H, k, Dh]
        q_w = q + r_w_bias.unsqueeze(1)
        ac = torch.matmul(q_w, k.transpose(-1, -2))                                    # content terms (a)+(c)
        bd = rel_shift(torch.matmul(q + r_r_bias.unsqueeze(1), r_k.transpose(-1, -2)))  # position (b)+(d)
        if len(lead) == 2:  # complex: Re/Im of (q + r_w) . conj(k) and of (q + r_r) . W_r R (R real)
            ac_re = ac[0] + ac[1]
            if self.score == "real":
                score = ac_re + bd[0]
            else:
                ac_im = torch.matmul(q_w[1], k[0].transpose(-1, -2)) - torch.matmul(q_w[0], k[1].transpose(-1, -2))
                score = _modulus(ac_re, ac_im) + _modulus(bd[0], bd[1])
        else:
            score = ac + bd
        score = score.mul_(self.scale).masked_fill_(mask, float("-inf"))
        prob = self.dropatt(torch.softmax(score, dim=-1))  # [B, H, q, k], the same for both parts
        vec = torch.matmul(prob, v).transpose(-2, -3).reshape(*lead, qlen, self.n_head * self.d_head)
        out = self.drop(self.o_net(vec))
        return h + out if self.pre_lnorm else self.layer_norm(h + out)

    def extra_repr(self) -> str:
        s = f"n_head={self.n_head}, d_model={self.d_model}, d_head={self.d_head}, pre_lnorm={self.pre_lnorm}"
        return s + (f", score={self.score!r}" if self.score != "modulus" else "")


def _modulus(re: Tensor, im: Tensor, eps: float = 1e-12) -> Tensor:
    """``sqrt(re^2 + im^2 + eps)``: the modulus, differentiable where both parts are 0."""
    return torch.sqrt(re * re + im * im + eps)


class TransformerXLLayer(nn.Module):
    """Relative attention then the position-wise feed-forward block (ReLU), each with residual + LayerNorm."""

    def __init__(self, n_head: int, d_model: int, d_head: int, d_inner: int, dropout: float,
                 dropatt: float = 0.0, pre_lnorm: bool = False, score: str = "modulus") -> None:
        super().__init__()
        self.attn = RelPartialLearnableAttention(n_head, d_model, d_head, dropout, dropatt, pre_lnorm, score)
        self.ff = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(d_inner, d_model), nn.Dropout(dropout))
        self.ff_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, h: Tensor, r: Tensor, r_w_bias: Tensor, r_r_bias: Tensor, mask: Tensor,
                mem: Tensor | None = None) -> Tensor:
        h = self.attn(h, r, r_w_bias, r_r_bias, mask, mem)
        if self.pre_lnorm:
            return h + self.ff(self.ff_norm(h))
        return self.ff_norm(h + self.ff(h))


# --------------------------------------------------------------------------------------
# The language model
# --------------------------------------------------------------------------------------


@dataclass
class XLMemory:
    """What a Transformer-XL carries from one segment to the next (no gradient).

    ``hidden[l]``: the last ``mlen`` inputs of layer ``l``, ``[B, mlen, d_model]`` (complex network:
    ``[2, B, mlen, d_model]``, real and imaginary parts); ``next_position``: ``[B]`` long, the stream
    position of each row's next character.
    """

    hidden: list[Tensor]
    next_position: Tensor

    @property
    def length(self) -> int:
        return self.hidden[0].shape[-2] if self.hidden else 0

    def detach(self) -> "XLMemory":
        return XLMemory([h.detach() for h in self.hidden], self.next_position.clone())

    def state(self) -> dict:
        """Tensors only, for a ``weights_only`` checkpoint."""
        return {"hidden": [h.detach().cpu() for h in self.hidden], "next_position": self.next_position.cpu()}

    @classmethod
    def from_state(cls, state: dict, device: torch.device | str | None = None) -> "XLMemory":
        """The memory saved by :meth:`state`, on ``device`` (default: where the tensors are)."""
        return cls([h.to(device) for h in state["hidden"]], state["next_position"].to(device))


class TransformerXL(nn.Module):
    r"""Transformer-XL language model; returns next-character logits and the new memory.

    Args:
        config: a :class:`TransformerXLConfig`.

    Shape:
        - tokens: ``[B, L]`` long; memory: :class:`XLMemory` from the previous segment or ``None``;
          positions: optional ``[B, L]`` or ``[L]`` stream positions (default: the memory's counter,
          see the module docstring).
        - output: ``(logits [B, L, vocab_size], XLMemory)``; logit ``t`` predicts token ``t + 1``.

    Examples::

        >>> cfg = TransformerXLConfig(vocab_size=27, n_layer=2, n_head=2, d_model=16, d_head=8, d_inner=32,
        ...                           mem_len=8, embedding="complex-order")
        >>> model = TransformerXL(cfg).eval()
        >>> x = torch.randint(0, 27, (2, 8))
        >>> first, memory = model(x[:, :4])
        >>> second, memory = model(x[:, 4:], memory)  # attends to the first segment through the memory
        >>> second.shape, memory.length
        (torch.Size([2, 4, 27]), 8)
        >>> torch.allclose(torch.cat([first, second], 1), model(x)[0], atol=1e-5)  # = one pass over both segments
        True
    """

    def __init__(self, config: TransformerXLConfig) -> None:
        super().__init__()
        check_config(config)
        self.config = config
        d_embed = config.d_model if config.d_embed is None else config.d_embed
        self.d_embed = d_embed
        position_scale = math.sqrt(2.0) * config.init_std if config.position_scale is None else config.position_scale
        options = cast("dict[str, Any]",  # values of several types, by embedding
                       {"complex-order": {"frequency_init": config.frequency_init, "initial_phase": config.initial_phase},
                        "pe": {"max_positions": config.max_positions},
                        "tpe": {"position_scale": position_scale}}.get(config.embedding, {}))
        if config.phase_dropout:
            options = {**options, "phase_dropout": config.phase_dropout}
        self.complex_network = config.network == "complex"
        if self.complex_network:
            d_embed = self.d_embed = config.d_model  # complex dimensions, not projected
        width = d_embed if config.embedding in REAL_EMBEDDINGS or self.complex_network else d_embed // 2
        self.word_emb: Any = build_embedding(XL_EMBEDDINGS[config.embedding], config.vocab_size, width, **options)
        self.emb_proj = (nn.Linear(d_embed, config.d_model, bias=False)
                         if d_embed != config.d_model and not self.complex_network else None)
        self.emb_scale = math.sqrt(config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            TransformerXLLayer(config.n_head, config.d_model, config.d_head, config.d_inner, config.dropout,
                               config.dropatt, config.pre_lnorm, config.attention_score) for _ in range(config.n_layer))
        self.r_w_bias = nn.Parameter(torch.empty(config.n_head, config.d_head))
        self.r_r_bias = nn.Parameter(torch.empty(config.n_head, config.d_head))
        self.out = nn.Linear(config.d_model, config.vocab_size)
        if config.tie_weight:
            self.out.weight = cast(nn.Parameter, self.word_emb.weight)  # a real embedding's table
            self.register_load_state_dict_pre_hook(refuse_untied_state(
                "word_emb.weight", "out.weight", "build this one with tie_weight = false"))
        self.mem_len, self.same_length, self.clamp_len = config.mem_len, config.same_length, config.clamp_len
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Dai et al.'s initialisation: weights ``N(0, init_std)``, biases 0, LayerNorm gains ``N(1, init_std)``.

        The complex amplitudes get ``N(0, sqrt(2) init_std)`` so that their real and imaginary
        parts have the vanilla table's scale; frequencies follow ``frequency_init``.
        """
        std = self.config.init_std
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.normal_(module.weight, 1.0, std)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.r_w_bias, 0.0, std)
        nn.init.normal_(self.r_r_bias, 0.0, std)
        self.word_emb.reset_parameters()
        if self.word_emb.is_complex:
            nn.init.normal_(self.word_emb.amplitude, 0.0, std * math.sqrt(2.0))
        else:
            nn.init.normal_(self.word_emb.weight, 0.0, std)
            if self.config.embedding == "pe":
                nn.init.normal_(self.word_emb.position_weight, 0.0, std)

    def reset_length(self, mem_len: int | None = None, same_length: bool | None = None,
                     clamp_len: int | None = None) -> None:
        """Change the memory length, ``same_length`` or ``clamp_len`` (e.g. a longer memory to evaluate)."""
        mem_len = self.mem_len if mem_len is None else mem_len
        same_length = self.same_length if same_length is None else same_length
        check_lengths(mem_len, same_length)
        if clamp_len is not None:
            check_clamp_len(clamp_len)
        self.mem_len, self.same_length = mem_len, same_length
        self.clamp_len = self.clamp_len if clamp_len is None else clamp_len

    def init_memory(self, batch_size: int) -> XLMemory:
        batch_size = positive_int(batch_size, "batch_size", low=0)  # -1 and 2.0 failed in new_zeros
        param = self.r_w_bias
        lead = (2, batch_size) if self.complex_network else (batch_size,)
        empty = [param.new_zeros(*lead, 0, self.config.d_model) for _ in self.layers]
        return XLMemory(empty, torch.zeros(batch_size, dtype=torch.long, device=param.device))

    def _check_memory(self, memory: XLMemory, bsz: int) -> None:
        d = self.config.d_model
        if not isinstance(memory, XLMemory):  # a list of tensors said "'list' object has no attribute 'hidden'"
            raise TypeError(f"memory must be an XLMemory (init_memory() or the previous segment's), got "
                            f"{type(memory).__name__}")
        if len(memory.hidden) != len(self.layers):
            raise ValueError(f"memory holds {len(memory.hidden)} layers, the model has {len(self.layers)}")
        lead = (2, bsz) if self.complex_network else (bsz,)
        for h in memory.hidden:
            if h.shape[:-2] != lead or h.shape[-1] != d or h.shape[-2] != memory.length:
                expected = ", ".join(map(str, (*lead, "mlen", d)))
                raise ValueError(f"memory of shape {tuple(h.shape)} does not fit a batch of {bsz} rows and "
                                 f"d_model={d}; expected [{expected}] for every layer")
        if memory.next_position.shape != (bsz,):
            raise ValueError(f"memory.next_position must have shape ({bsz},), got {tuple(memory.next_position.shape)}")
        device = self.r_w_bias.device  # XLMemory.from_state(state) keeps state()'s CPU tensors (a matmul error)
        elsewhere = next((t.device for t in (*memory.hidden, memory.next_position) if t.device != device), None)
        if elsewhere is not None:
            raise ValueError(f"memory is on {elsewhere}, the model on {device}; move it with "
                             f"XLMemory.from_state(memory.state(), device={str(device)!r}) or start with init_memory()")
        dtype = self.r_w_bias.dtype
        wrong = next((h.dtype for h in memory.hidden if h.dtype != dtype), None)
        if wrong is not None and not torch.is_autocast_enabled(self.r_w_bias.device.type):  # was a matmul error
            raise ValueError(f"memory holds {wrong} states, the model's are {dtype}; build it with init_memory()")

    def embed(self, tokens: Tensor, positions: Tensor) -> Tensor:
        """The input layer: word embedding (complex ones as ``[Re, Im]``), projection, ``sqrt(d_model)`` scale.

        With the complex network: the real and imaginary parts stacked, ``[2, B, L, d_model]``.
        """
        if self.complex_network:
            z = self.word_emb(tokens, positions)
            return torch.stack([z.real, z.imag]) * self.emb_scale
        if self.config.embedding == "pe":
            positions = positions.clamp(0, self.config.max_positions - 1)
        x = complex_to_real(self.word_emb(tokens, positions))
        if self.emb_proj is not None:
            x = self.emb_proj(x)
        return x * self.emb_scale

    def positions(self, tokens: Tensor, memory: XLMemory) -> Tensor:
        """The positions ``[B, L]`` at which ``tokens`` are embedded, by ``config.position_mode``.

        ``"stream"``: ``memory.next_position + 0, 1, ...``; ``"segment"``: ``0, 1, ...`` in every
        segment; ``"word"``: the character's offset in its word, the separator at 0 and the letters
        after it at 1, 2, ... (carried across segments; a stream starts as if after a separator).
        """
        idx = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
        mode = self.config.position_mode
        if mode == "segment":
            return idx.expand_as(tokens)
        if mode == "stream":
            return memory.next_position.unsqueeze(1) + idx
        offset = memory.next_position.clamp(min=1).unsqueeze(1)
        last_sep = torch.where(tokens == self.config.separator_id, idx, -1).cummax(dim=1).values
        return torch.where(last_sep >= 0, idx - last_sep, offset + idx)

    def forward(self, tokens: Tensor, memory: XLMemory | None = None,
                positions: Tensor | None = None) -> tuple[Tensor, XLMemory]:
        if not isinstance(tokens, Tensor):  # a list or an array said "'list' object has no attribute 'dim'"
            raise TypeError(f"tokens must be a [B, L] integer tensor, got {type(tokens).__name__}")
        if tokens.dim() != 2 or tokens.shape[1] == 0:
            raise ValueError(f"tokens must be [B, L] with L >= 1, got shape {tuple(tokens.shape)}")
        bsz, qlen = tokens.shape
        memory = self.init_memory(bsz) if memory is None else memory
        self._check_memory(memory, bsz)
        if positions is None:
            positions = self.positions(tokens, memory)
        elif not isinstance(positions, Tensor):  # embedding="pe" said "'list' object has no attribute 'clamp'"
            raise TypeError(f"positions must be a torch.Tensor or None, got {type(positions).__name__}")
        else:  # the next memory's counter lives with the tokens (stop 80: CPU positions for GPU tokens left it on
            positions = positions.to(tokens.device)  # the CPU, and the next segment failed)
        mlen = memory.length
        mask = causal_memory_mask(qlen, mlen, self.mem_len if self.same_length else None, device=tokens.device)
        r = self.drop(relative_position_encoding(mlen + qlen, self.config.d_model, self.clamp_len,
                                                 device=tokens.device, dtype=self.r_w_bias.dtype))
        h = self.drop(self.embed(tokens, positions))
        hidden = []
        for layer, mem in zip(self.layers, memory.hidden):
            hidden.append(h)
            h = layer(h, r, self.r_w_bias, self.r_r_bias, mask, mem)
        if self.complex_network:  # read out the modulus |h|
            h = _modulus(h[0], h[1])
        logits = self.out(self.drop(h))
        with torch.no_grad():
            new_hidden = [torch.cat([m, x], dim=-2)[..., -self.mem_len:, :].detach() if self.mem_len > 0
                          else x[..., :0, :].clone() for m, x in zip(memory.hidden, hidden)]
            last = positions.expand(bsz, qlen)[:, -1].to(torch.long)
        return logits, XLMemory(new_hidden, last + 1)

    def extra_repr(self) -> str:
        c = self.config
        s = (f"embedding={c.embedding!r}, n_layer={c.n_layer}, d_model={c.d_model}, mem_len={self.mem_len}, "
             f"same_length={self.same_length}, clamp_len={self.clamp_len}, position_mode={c.position_mode!r}")
        if self.complex_network:
            s += f", network='complex', attention_score={c.attention_score!r}"
        return s
