"""ComplexMultiheadAttention and the complex Transformer layers against torch.nn's conventions: ``kdim``/``vdim``
(keys and values of other widths) and unbatched inputs (``[L, E]``, no batch dimension), as
:class:`torch.nn.MultiheadAttention`, :class:`torch.nn.TransformerEncoderLayer` and
:class:`torch.nn.TransformerDecoderLayer` take them. Both were refused: ``kdim`` was no argument and ``[L, E]`` was
"query must be [B, L, E] complex"."""

import math
import re

import pytest
import torch

from complexorder import nn as cnn

C128 = torch.complex128
D64 = torch.float64


def crandn(*shape):
    return torch.randn(*shape, dtype=C128)


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def close(a, b):
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def as_complex(linear, x):
    """``W x + b`` of a ComplexLinear written out with its complex weight ``A + iB`` and bias ``c + id``."""
    w = torch.complex(linear.weight_real, linear.weight_imag)
    return x @ w.T + torch.complex(linear.bias_real, linear.bias_imag)


# ------------------------------------------------------------------------------ unbatched inputs


def _unbatched_masks(L, S, heads):
    g = torch.Generator().manual_seed(1)
    pad = torch.zeros(S, dtype=torch.bool)
    pad[-2:] = True
    forbid = torch.rand(L, S, generator=g) < 0.3
    forbid[:, 0] = False  # every query keeps a key
    per_head = torch.rand(heads, L, S, generator=g) < 0.3
    per_head[..., 0] = False
    return {"none": {}, "key_padding_mask": {"key_padding_mask": pad}, "attn_mask": {"attn_mask": forbid},
            "per_head_attn_mask": {"attn_mask": per_head}, "is_causal": {"is_causal": True},
            "all": {"key_padding_mask": pad, "attn_mask": forbid, "is_causal": True},
            "float_masks": {"key_padding_mask": torch.zeros(S).masked_fill(pad, float("-inf")),
                            "attn_mask": torch.zeros(L, S).masked_fill(forbid, float("-inf"))}}


def _batched(masks):
    """The same masks for a batch of one (a per-head ``[H, L, S]`` mask is already ``[B * H, L, S]`` for B = 1)."""
    return {name: m.unsqueeze(0) if name == "key_padding_mask" else m for name, m in masks.items()}


@pytest.mark.parametrize("masks", list(_unbatched_masks(4, 6, 2)))
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kdim, vdim", [(None, None), (6, 10)])
def test_unbatched_attention_is_the_batch_of_one_squeezed(masks, batch_first, kdim, vdim):
    torch.manual_seed(0)
    widths = {} if kdim is None else {"kdim": kdim, "vdim": vdim}  # the default: no kdim/vdim arguments at all
    mha = cnn.ComplexMultiheadAttention(8, 2, batch_first=batch_first, dtype=D64, **widths).eval()
    query, key, value = crandn(4, 8), crandn(6, kdim or 8), crandn(6, vdim or 8)
    kwargs = _unbatched_masks(4, 6, 2)[masks]
    batch_dim = 0 if batch_first else 1  # batch_first does not apply to unbatched inputs
    for average in (True, False):
        out, w = mha(query, key, value, need_weights=True, average_attn_weights=average, **kwargs)
        ref, w_ref = mha(*(t.unsqueeze(batch_dim) for t in (query, key, value)), need_weights=True,
                         average_attn_weights=average, **_batched(kwargs))
        assert out.shape == (4, 8) and w.shape == ((4, 6) if average else (2, 4, 6))
        close(out, ref.squeeze(batch_dim))
        close(w, w_ref.squeeze(0))
    if "key_padding_mask" in kwargs:
        assert torch.equal(w[..., -2:], torch.zeros_like(w[..., -2:]))  # the masks really mask
    out, none = mha(query, key, value, **kwargs)
    assert none is None and out.shape == (4, 8)


def test_unbatched_attention_has_the_shapes_of_nn_multihead_attention():
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10)
    ref = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=10, batch_first=True)
    pad, per_head = torch.zeros(7, dtype=torch.bool), torch.zeros(2, 5, 7, dtype=torch.bool)
    for average in (True, False):
        c = [t.shape for t in mha(torch.randn(5, 8, dtype=torch.complex64), torch.randn(7, 6, dtype=torch.complex64),
                                  torch.randn(7, 10, dtype=torch.complex64), key_padding_mask=pad, attn_mask=per_head,
                                  need_weights=True, average_attn_weights=average)]
        r = [t.shape for t in ref(torch.randn(5, 8), torch.randn(7, 6), torch.randn(7, 10), key_padding_mask=pad,
                                  attn_mask=per_head, need_weights=True, average_attn_weights=average)]
        assert c == r


def test_unbatched_attention_cache_equals_the_full_pass():
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2, dtype=D64).eval()
    x = crandn(5, 8)
    full, _ = mha(x, is_causal=True)
    cache = {}
    steps = torch.cat([mha(x[t : t + 1], is_causal=True, cache=cache)[0] for t in range(5)])
    close(steps, full)
    close(full, mha(x[None], is_causal=True)[0][0])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [True, False])
def test_unbatched_encoder_layer_is_the_batch_of_one_squeezed(norm_first, batch_first):
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
                                               dtype=D64).eval()
    src = crandn(6, 8)
    batch_dim = 0 if batch_first else 1
    for kwargs in _unbatched_masks(6, 6, 2).values():
        kwargs = {{"key_padding_mask": "src_key_padding_mask", "attn_mask": "src_mask"}.get(k, k): v
                  for k, v in kwargs.items()}
        out = layer(src, **kwargs)
        batched = {k: v.unsqueeze(0) if k == "src_key_padding_mask" else v for k, v in kwargs.items()}
        assert out.shape == (6, 8)
        close(out, layer(src.unsqueeze(batch_dim), **batched).squeeze(batch_dim))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [True, False])
def test_unbatched_decoder_layer_is_the_batch_of_one_squeezed(norm_first, batch_first):
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
                                               dtype=D64).eval()
    tgt, memory = crandn(4, 8), crandn(6, 8)
    batch_dim = 0 if batch_first else 1
    self_masks, cross_masks = _unbatched_masks(4, 4, 2), _unbatched_masks(4, 6, 2)
    for case in self_masks:
        kwargs = {{"key_padding_mask": "tgt_key_padding_mask", "attn_mask": "tgt_mask",
                   "is_causal": "tgt_is_causal"}[k]: v for k, v in self_masks[case].items()}
        kwargs.update({{"key_padding_mask": "memory_key_padding_mask", "attn_mask": "memory_mask"}[k]: v
                       for k, v in cross_masks[case].items() if k != "is_causal"})
        out = layer(tgt, memory, **kwargs)
        batched = {k: v.unsqueeze(0) if k.endswith("key_padding_mask") else v for k, v in kwargs.items()}
        assert out.shape == (4, 8)
        close(out, layer(tgt.unsqueeze(batch_dim), memory.unsqueeze(batch_dim), **batched).squeeze(batch_dim))
    # step-wise decoding of one unbatched sentence
    full = layer(tgt, memory, tgt_is_causal=True)
    cache = {}
    close(torch.cat([layer(tgt[t : t + 1], memory, tgt_is_causal=True, cache=cache) for t in range(4)]), full)


def test_unbatched_layers_have_the_shapes_of_torch_layers():
    enc, dec = cnn.ComplexTransformerEncoderLayer(8, 2, 16), cnn.ComplexTransformerDecoderLayer(8, 2, 16)
    ref_enc = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    ref_dec = torch.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    src, tgt = torch.randn(5, 8, dtype=torch.complex64), torch.randn(3, 8, dtype=torch.complex64)
    masks = {"src_mask": torch.zeros(2, 5, 5, dtype=torch.bool),
             "src_key_padding_mask": torch.zeros(5, dtype=torch.bool)}
    assert enc(src, **masks).shape == ref_enc(src.real, **masks).shape == (5, 8)
    masks = {"tgt_mask": torch.zeros(3, 3, dtype=torch.bool), "memory_mask": torch.zeros(2, 3, 5, dtype=torch.bool),
             "tgt_key_padding_mask": torch.zeros(3, dtype=torch.bool),
             "memory_key_padding_mask": torch.zeros(5, dtype=torch.bool)}
    assert dec(tgt, src, **masks).shape == ref_dec(tgt.real, src.real, **masks).shape == (3, 8)


def test_mixed_batched_and_unbatched_arguments_name_the_argument_and_the_expected_shape():
    mha = cnn.ComplexMultiheadAttention(8, 2, kdim=6)
    q, k = torch.randn(4, 8, dtype=torch.complex64), torch.randn(5, 6, dtype=torch.complex64)
    v = torch.randn(5, 8, dtype=torch.complex64)
    bad = {
        "key must be [L, 6] complex (unbatched, as query), got (1, 5, 6)": lambda: mha(q, k[None], v),
        "value must be [L, 8] complex (unbatched, as query), got (1, 5, 8)": lambda: mha(q, k, v[None]),
        "key must be [B, L, 6] complex (batched, as query), got (5, 6)": lambda: mha(q[None], k, v[None]),
        "query must be [B, L, 8] (batched) or [L, 8] (unbatched) complex, got (8,)": lambda: mha(q[0], k, v),
        "query must be [B, L, 8] (batched) or [L, 8] (unbatched) complex, got (1, 1, 4, 8)":
            lambda: mha(q[None, None], k, v),
        "query must be [L, 8] complex, got (4, 6)": lambda: mha(k[:4], k, v),
        "key and value must have the same length, got (5, 6) and (4, 8)": lambda: mha(q, k, v[:4]),
        "key_padding_mask must be [5] for an unbatched query, got (1, 5)":
            lambda: mha(q, k, v, key_padding_mask=torch.zeros(1, 5, dtype=torch.bool)),
        "key_padding_mask must be [5] for an unbatched query, got (4,)":
            lambda: mha(q, k, v, key_padding_mask=torch.zeros(4, dtype=torch.bool)),
        "attn_mask must be [4, 5] or [num_heads = 2, 4, 5] for an unbatched query, got (1, 4, 5)":
            lambda: mha(q, k, v, attn_mask=torch.zeros(1, 4, 5, dtype=torch.bool)),
        "attn_mask must be [4, 5], got (5, 4)": lambda: mha(q, k, v, attn_mask=torch.zeros(5, 4, dtype=torch.bool)),
        "key_padding_mask must be [B = 1, Lk], got (5,)":
            lambda: mha(q[None], k[None], v[None], key_padding_mask=torch.zeros(5, dtype=torch.bool)),
    }
    for message, call in bad.items():
        with pytest.raises(ValueError, match=exactly(message)):
            call()


def test_transformer_layers_name_their_own_arguments_for_mixed_ranks():
    enc, dec = cnn.ComplexTransformerEncoderLayer(8, 2, 16), cnn.ComplexTransformerDecoderLayer(8, 2, 16)
    x, memory = torch.randn(3, 8, dtype=torch.complex64), torch.randn(5, 8, dtype=torch.complex64)
    bad = {
        "src_key_padding_mask must be [3] for an unbatched src, got (1, 3)":
            lambda: enc(x, src_key_padding_mask=torch.zeros(1, 3, dtype=torch.bool)),
        "src_mask must be [3, 3] or [nhead = 2, 3, 3] for an unbatched src, got (4, 3, 3)":
            lambda: enc(x, src_mask=torch.zeros(4, 3, 3, dtype=torch.bool)),
        "memory must be [L, 8] complex (unbatched, as tgt), got (1, 5, 8)": lambda: dec(x, memory[None]),
        "memory must be [B, L, 8] complex (batched, as tgt), got (5, 8)": lambda: dec(x[None], memory),
        "memory_key_padding_mask must be [5] for an unbatched tgt, got (1, 5)":
            lambda: dec(x, memory, memory_key_padding_mask=torch.zeros(1, 5, dtype=torch.bool)),
        "tgt_key_padding_mask must be [3] for an unbatched tgt, got (5,)":
            lambda: dec(x, memory, tgt_key_padding_mask=torch.zeros(5, dtype=torch.bool)),
        "memory_mask must be [3, 5] or [nhead = 2, 3, 5] for an unbatched tgt, got (2, 3, 3)":
            lambda: dec(x, memory, memory_mask=torch.zeros(2, 3, 3, dtype=torch.bool)),
    }
    for message, call in bad.items():
        with pytest.raises(ValueError, match=exactly(message)):
            call()


# ------------------------------------------------------------------------------ kdim / vdim


def test_kdim_vdim_set_the_key_and_value_projection_widths():
    mha = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10)
    assert (mha.kdim, mha.vdim) == (6, 10)
    assert mha.k_proj.weight_real.shape == mha.k_proj.weight_imag.shape == (8, 6)
    assert mha.v_proj.weight_real.shape == mha.v_proj.weight_imag.shape == (8, 10)
    assert mha.q_proj.weight_real.shape == mha.out_proj.weight_real.shape == (8, 8)
    assert sum(p.numel() for p in mha.parameters()) == 2 * (64 + 8) * 2 + 2 * (48 + 8) + 2 * (80 + 8)
    shared = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10, share_weights=True)
    assert shared.k_proj.weight_real.shape == (8, 6) and shared.k_proj.weight_imag is None
    out, w = mha(torch.randn(2, 3, 8, dtype=torch.complex64), torch.randn(2, 5, 6, dtype=torch.complex64),
                 torch.randn(2, 5, 10, dtype=torch.complex64), need_weights=True)
    assert out.shape == (2, 3, 8) and w.shape == (2, 3, 5)
    time_major = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10, batch_first=False)
    out = time_major(torch.randn(3, 2, 8, dtype=torch.complex64), torch.randn(5, 2, 6, dtype=torch.complex64),
                     torch.randn(5, 2, 10, dtype=torch.complex64))[0]
    assert out.shape == (3, 2, 8)


def test_kdim_vdim_none_or_embed_dim_keep_the_parameters_and_state_dict_keys():
    keys = [f"{p}_proj.{t}_{part}" for p in ("q", "k", "v", "out") for t in ("weight", "bias")
            for part in ("real", "imag")]
    for kwargs in ({}, {"kdim": None, "vdim": None}, {"kdim": 8, "vdim": 8}):
        mha = cnn.ComplexMultiheadAttention(8, 2, **kwargs)
        assert sorted(mha.state_dict()) == sorted(keys)
        assert sum(p.numel() for p in mha.parameters()) == 4 * 2 * (64 + 8)
        assert mha.extra_repr() == "embed_dim=8, num_heads=2"
    old = cnn.ComplexMultiheadAttention(8, 2).state_dict()
    cnn.ComplexMultiheadAttention(8, 2, kdim=8, vdim=8).load_state_dict(old)  # strict: same keys, same shapes


def test_kdim_vdim_attention_is_eq13_14_by_hand():
    """Each head weighs the values by softmax_j(|q_i . conj(k_j)| / sqrt(d_head)), with q = W^Q query,
    k = W^K key (kdim wide), v = W^V value (vdim wide); the heads are joined by W^O."""
    torch.manual_seed(0)
    heads, d = 2, 4
    mha = cnn.ComplexMultiheadAttention(8, heads, kdim=6, vdim=10, dtype=D64).eval()
    query, key, value = crandn(3, 8), crandn(5, 6), crandn(5, 10)
    out, w = mha(query, key, value, need_weights=True, average_attn_weights=False)
    q, k, v = as_complex(mha.q_proj, query), as_complex(mha.k_proj, key), as_complex(mha.v_proj, value)
    joined = torch.zeros(3, 8, dtype=C128)
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        for i in range(3):
            e = [abs(sum(q[i, cols][c].item() * k[j, cols][c].item().conjugate() for c in range(d))) / math.sqrt(d)
                 for j in range(5)]
            z = sum(math.exp(x) for x in e)
            a = [math.exp(x) / z for x in e]
            for j in range(5):
                assert abs(w[h, i, j].item() - a[j]) < 1e-12
            for c in range(d):
                joined[i, h * d + c] = sum(a[j] * v[j, h * d + c].item() for j in range(5))
    torch.testing.assert_close(out, as_complex(mha.out_proj, joined), atol=1e-12, rtol=0)
    # and batched, the same numbers
    out_b, w_b = mha(query[None], key[None], value[None], need_weights=True, average_attn_weights=False)
    close(out_b[0], out)
    close(w_b[0], w)


def test_kdim_vdim_in_the_repr_and_bad_values():
    assert cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10).extra_repr() == \
        "embed_dim=8, num_heads=2, kdim=6, vdim=10"
    assert cnn.ComplexMultiheadAttention(8, 2, vdim=10).extra_repr() == "embed_dim=8, num_heads=2, vdim=10"
    assert "kdim=6" in repr(cnn.ComplexMultiheadAttention(8, 2, kdim=6))
    for kwargs in ({"kdim": 0}, {"vdim": -3}, {"kdim": True}, {"vdim": 2.0}):  # True built a 1-wide projection
        with pytest.raises(ValueError, match=exactly(f"kdim and vdim must be positive integers (or None: embed_dim), "
                                                     f"got kdim={kwargs.get('kdim')!r} and vdim={kwargs.get('vdim')!r}")):
            cnn.ComplexMultiheadAttention(8, 2, **kwargs)
    mha = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=10)
    z = torch.randn(2, 3, 8, dtype=torch.complex64)
    message = ("key and value must be given with kdim=6 and vdim=10 (they default to the query and the key, of "
               "embed_dim=8)")
    with pytest.raises(ValueError, match=exactly(message)):
        mha(z)
    with pytest.raises(ValueError, match=exactly(message)):
        mha(z, torch.randn(2, 5, 6, dtype=torch.complex64))
    with pytest.raises(ValueError, match=exactly("key must be [B, L, 6] complex, got (2, 5, 8)")):
        mha(z, z[:, :1].expand(2, 5, 8), torch.randn(2, 5, 10, dtype=torch.complex64))
    with pytest.raises(ValueError, match=exactly("value must be [B, L, 10] complex, got (2, 5, 6)")):
        mha(z, torch.randn(2, 5, 6, dtype=torch.complex64), torch.randn(2, 5, 6, dtype=torch.complex64))
    # kdim == vdim != embed_dim: the value may default to the key
    same = cnn.ComplexMultiheadAttention(8, 2, kdim=6, vdim=6)
    key = torch.randn(2, 5, 6, dtype=torch.complex64)
    assert torch.equal(same(z, key)[0], same(z, key, key)[0])


def test_shape_errors_use_the_layers_own_batch_layout():
    """With batch_first=False the errors said [B, L, E] all the same."""
    attention = cnn.ComplexMultiheadAttention(8, 2, batch_first=False)
    with pytest.raises(ValueError, match=r"^query must be \[L, B, 8\] complex, got \(5, 2, 6\)$"):
        attention(torch.randn(5, 2, 6, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"^query must be \[L, B, 8\] \(batched\) or \[L, 8\] \(unbatched\) complex"):
        attention(torch.randn(8, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"^query must be \[B, L, 8\] complex, got \(5, 2, 6\)$"):
        cnn.ComplexMultiheadAttention(8, 2)(torch.randn(5, 2, 6, dtype=torch.complex64))


def test_layer_errors_name_nhead_not_the_attentions_num_heads():
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    with pytest.raises(ValueError, match=r"^src_mask must be \[3, 3\] or \[B \* nhead = 4, 3, 3\], got \(5, 3, 3\)$"):
        layer(torch.randn(2, 3, 8, dtype=torch.complex64), src_mask=torch.zeros(5, 3, 3, dtype=torch.bool))
