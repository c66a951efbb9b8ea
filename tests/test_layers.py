"""The complex layers against the paper's equations written out by hand."""

import io
import math
import types

import pytest
import torch
import torch.nn.functional as F

from complexorder import nn as cnn
from complexorder.nn import functional as CF

C128 = torch.complex128
D64 = torch.float64


def crandn(*shape):
    return torch.randn(*shape, dtype=C128)


# ------------------------------------------------------------------------------ linear


@pytest.mark.parametrize("share", [False, True])
def test_complex_linear_is_eq10_by_hand(share):
    torch.manual_seed(0)
    layer = cnn.ComplexLinear(5, 3, share_weights=share, dtype=D64)
    z = crandn(4, 5)
    x, y = z.real, z.imag
    A = layer.weight_real
    B = A if share else layer.weight_imag
    c = layer.bias_real
    d = c if share else layer.bias_imag
    expected_real = x @ A.T - y @ B.T + c
    expected_imag = x @ B.T + y @ A.T + d
    out = layer(z)
    assert torch.allclose(out.real, expected_real) and torch.allclose(out.imag, expected_imag)
    # and entry by entry in Python complex arithmetic
    for n in range(4):
        for o in range(3):
            s = sum(complex(A[o, i].item(), B[o, i].item()) * complex(z[n, i].item()) for i in range(5))
            assert abs(out[n, o].item() - (s + complex(c[o].item(), d[o].item()))) < 1e-10


def test_share_weights_halves_the_parameters():
    full = cnn.ComplexLinear(10, 6)
    shared = cnn.ComplexLinear(10, 6, share_weights=True)
    assert sum(p.numel() for p in full.parameters()) == 2 * (60 + 6)
    assert sum(p.numel() for p in shared.parameters()) == 60 + 6
    assert shared.weight_imag is None and shared.bias_imag is None


def test_parameter_counts_against_torch_nn_as_docs_layers_md_gives_them():
    """Stop 81: docs/layers.md said share_weights halves every layer and every complex layer has twice the
    parameters of its torch.nn counterpart; the attention keeps its output projection whole, and the LSTM has one
    bias per gate where torch has two."""
    def count(m):
        return sum(p.numel() for p in m.parameters())

    for real, complex_ in ((torch.nn.Linear(8, 6), lambda **k: cnn.ComplexLinear(8, 6, **k)),
                           (torch.nn.Conv1d(8, 6, 3), lambda **k: cnn.ComplexConv1d(8, 6, 3, **k)),
                           (torch.nn.MultiheadAttention(8, 2), lambda **k: cnn.ComplexMultiheadAttention(8, 2, **k))):
        assert count(complex_()) == 2 * count(real)
    assert count(cnn.ComplexLinear(8, 6, share_weights=True)) == count(torch.nn.Linear(8, 6))
    assert count(cnn.ComplexConv1d(8, 6, 3, share_weights=True)) == count(torch.nn.Conv1d(8, 6, 3))
    # attention: W^{Q/K/V} shared (3 x (8 x 8 + 8) once), the output projection's two parts kept
    assert count(cnn.ComplexMultiheadAttention(8, 2, share_weights=True)) == 3 * (64 + 8) + 2 * (64 + 8)
    # LSTM: 4H x (I + H) twice and one [4H] bias twice, against torch's two [4H] biases once
    assert count(cnn.ComplexLSTM(8, 6)) == 2 * (24 * 14 + 24) == 720
    assert count(torch.nn.LSTM(8, 6)) == 24 * 14 + 2 * 24 == 384
    assert count(cnn.ComplexLSTM(8, 6, share_weights=True)) == 360


@pytest.mark.parametrize("share", [False, True])
def test_complex_linear_is_complex_affine(share):
    torch.manual_seed(1)
    layer = cnn.ComplexLinear(6, 4, share_weights=share, dtype=D64)
    z = crandn(3, 6)
    f0 = layer(torch.zeros_like(z))
    for alpha in (2.0 - 1.5j, 1j, -0.3 + 0.0j):
        assert torch.allclose(layer(alpha * z) - f0, alpha * (layer(z) - f0))
    # additivity too
    w = crandn(3, 6)
    assert torch.allclose(layer(z + w) - f0, (layer(z) - f0) + (layer(w) - f0))


def test_complex_linear_rejects_real_input():
    with pytest.raises(TypeError, match="input must be a complex tensor"):
        cnn.ComplexLinear(3, 2)(torch.randn(2, 3))


# ------------------------------------------------------------------------------ activations, dropout, norms


def test_split_activation_and_modulus():
    z = crandn(4, 5)
    out = cnn.SplitActivation("sigmoid")(z)
    assert torch.allclose(out.real, torch.sigmoid(z.real)) and torch.allclose(out.imag, torch.sigmoid(z.imag))
    out = cnn.SplitActivation(torch.tanh)(z)
    assert torch.allclose(out.imag, torch.tanh(z.imag))
    assert torch.allclose(cnn.Modulus()(z), torch.sqrt(z.real ** 2 + z.imag ** 2))
    assert torch.allclose(cnn.Modulus(eps=1e-6)(z), torch.sqrt(z.real ** 2 + z.imag ** 2 + 1e-6))
    with pytest.raises(ValueError, match="unknown activation 'swish'; valid names: relu, sigmoid, tanh, gelu, silu, "
                                         "identity"):
        cnn.SplitActivation("swish")
    out = cnn.SplitActivation("silu")(z)
    assert torch.allclose(out.real, z.real * torch.sigmoid(z.real)) and torch.allclose(out.imag, F.silu(z.imag))


def test_layers_with_every_named_activation_pickle_and_print_once():
    """"identity" was a lambda: pickle (torch.save of a whole layer, multiprocessing) failed on it. A module
    activation printed twice: its name in the layer's line and the child `(fn): ReLU()`."""
    import pickle

    z = crandn(2, 3, 4).to(torch.complex64)
    from complexorder.nn.activation import ACTIVATIONS

    for name in ACTIVATIONS:
        layer = cnn.ComplexTransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=name).eval()
        copy = pickle.loads(pickle.dumps(layer))
        torch.testing.assert_close(copy(z), layer(z))
        buffer = io.BytesIO()
        torch.save(cnn.SplitActivation(name), buffer)
    assert repr(cnn.SplitActivation("identity")) == "SplitActivation(identity)"
    assert repr(cnn.SplitActivation(torch.nn.ReLU())) == "SplitActivation(\n  (fn): ReLU()\n)"


def test_complex_dropout_drops_whole_units_and_keeps_phase():
    torch.manual_seed(0)
    z = crandn(200, 50)
    drop = cnn.ComplexDropout(0.4)
    out = drop(z)
    dropped = out == 0
    assert torch.equal(dropped, (out.real == 0) & (out.imag == 0))  # both parts together
    kept = ~dropped
    assert torch.allclose(out[kept], z[kept] / 0.6)  # scaled, same phase
    assert 0.35 < dropped.float().mean() < 0.45
    drop.eval()
    assert torch.equal(drop(z), z)
    with pytest.raises(ValueError, match=r"dropout probability p must be in \[0, 1\], got 1.5"):
        cnn.ComplexDropout(1.5)


def test_layer_norm_normalises_each_part_separately():
    torch.manual_seed(0)
    norm = cnn.ComplexLayerNorm(8, dtype=D64)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    z = crandn(3, 4, 8) * 5 + 2
    out = norm(z)
    re = F.layer_norm(z.real, (8,), norm.weight[0], norm.bias[0])
    im = F.layer_norm(z.imag, (8,), norm.weight[1], norm.bias[1])
    assert torch.allclose(out.real, re) and torch.allclose(out.imag, im)


def test_batch_norm_normalises_each_part_separately():
    torch.manual_seed(0)
    bn = cnn.ComplexBatchNorm1d(6, dtype=D64)
    z = crandn(32, 6, 10) * 3 + (1 - 2j)
    out = bn(z)
    for part in (out.real, out.imag):
        assert torch.allclose(part.mean((0, 2)), torch.zeros(6, dtype=D64), atol=1e-10)
        assert torch.allclose(part.var((0, 2), unbiased=False), torch.ones(6, dtype=D64), atol=1e-3)
    assert not torch.allclose(bn.real.running_mean, bn.imag.running_mean)


# ------------------------------------------------------------------------------ convolution


@pytest.mark.parametrize("share", [False, True])
def test_complex_conv1d_is_a_narrow_complex_convolution_by_hand(share):
    torch.manual_seed(0)
    conv = cnn.ComplexConv1d(3, 2, 3, share_weights=share, dtype=D64)
    z = crandn(2, 3, 7)
    out = conv(z)
    assert out.shape == (2, 2, 5)  # narrow: L - k + 1
    A = conv.weight_real
    B = A if share else conv.weight_imag
    bias = torch.complex(conv.bias_real, conv.bias_real if share else conv.bias_imag)
    for n in range(2):
        for o in range(2):
            for t in range(5):
                s = bias[o].item()
                for c in range(3):
                    for k in range(3):
                        s += complex(A[o, c, k].item(), B[o, c, k].item()) * z[n, c, t + k].item()
                assert abs(out[n, o, t].item() - s) < 1e-10


def test_complex_conv1d_bad_input():
    conv = cnn.ComplexConv1d(4, 2, 5)
    with pytest.raises(ValueError, match=r"ComplexConv1d expects input \[N, 4, L\] or unbatched \[4, L\], "
                                         r"got \(2, 3, 9\)"):
        conv(torch.randn(2, 3, 9, dtype=torch.complex64))
    with pytest.raises(ValueError, match="input length 3 is shorter than the kernel"):
        conv(torch.randn(2, 4, 3, dtype=torch.complex64))


def test_conv_takes_an_unbatched_input_as_torch_conv1d():
    torch.manual_seed(0)
    conv = cnn.ComplexConv1d(4, 3, 3, padding="same", dtype=D64)
    z = crandn(4, 6)
    out = conv(z)
    assert out.shape == (3, 6) == torch.nn.Conv1d(4, 3, 3, padding="same")(torch.randn(4, 6)).shape
    torch.testing.assert_close(out, conv(z.unsqueeze(0))[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"^ComplexConv1d expects input \[N, 4, L\] or unbatched \[4, L\], "
                                         r"got \(3, 6\)$"):
        conv(crandn(3, 6))


# ------------------------------------------------------------------------------ LSTM


def lstm_by_hand(lstm, z):
    """Eq. 12 step by step: complex gate pre-activations, split activations, part-wise gating."""
    H = lstm.hidden_size
    Wz = torch.complex(lstm.weight_ih_real, lstm.weight_ih_real if lstm.share_weights else lstm.weight_ih_imag)
    Wh = torch.complex(lstm.weight_hh_real, lstm.weight_hh_real if lstm.share_weights else lstm.weight_hh_imag)
    b = torch.complex(lstm.bias_real, lstm.bias_real if lstm.share_weights else lstm.bias_imag)
    B, L, _ = z.shape
    h = torch.zeros(B, H, dtype=z.dtype)
    c = torch.zeros(B, H, dtype=z.dtype)
    sig = lambda u: torch.complex(torch.sigmoid(u.real), torch.sigmoid(u.imag))  # noqa: E731
    tanh = lambda u: torch.complex(torch.tanh(u.real), torch.tanh(u.imag))  # noqa: E731
    partwise = lambda u, v: torch.complex(u.real * v.real, u.imag * v.imag)  # noqa: E731
    outs = []
    for t in range(L):
        pre = z[:, t] @ Wz.T + h @ Wh.T + b
        i, f, g, o = pre.split(H, dim=-1)
        c = partwise(sig(f), c) + partwise(sig(i), tanh(g))
        h = partwise(sig(o), tanh(c))
        outs.append(h)
    return torch.stack(outs, 1), h, c


@pytest.mark.parametrize("share", [False, True])
def test_complex_lstm_is_eq12_step_by_step(share):
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, batch_first=True, share_weights=share, dtype=D64)
    z = crandn(2, 6, 4)
    out, (h, c) = lstm(z)
    ref_out, ref_h, ref_c = lstm_by_hand(lstm, z)
    assert torch.allclose(out, ref_out) and torch.allclose(h[0], ref_h) and torch.allclose(c[0], ref_c)


def test_complex_lstm_lengths_equal_running_the_truncated_sequences():
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, batch_first=True, dtype=D64)
    z = crandn(3, 6, 4)
    lengths = torch.tensor([6, 2, 4])
    out, (h, c) = lstm(z, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        ref_out, ref_h, ref_c = lstm_by_hand(lstm, z[b : b + 1, :n])
        assert torch.allclose(out[b, :n], ref_out[0]) and torch.allclose(h[0, b], ref_h[0])
        assert torch.allclose(c[0, b], ref_c[0])
        assert torch.equal(out[b, n:], torch.zeros_like(out[b, n:]))


def test_complex_lstm_continues_from_a_given_state():
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, batch_first=True, dtype=D64)
    z = crandn(3, 6, 4)
    out, (h, c) = lstm(z)
    _, state = lstm(z[:, :3])
    rest, (h2, c2) = lstm(z[:, 3:], hx=state)  # complex (h0, c0): real and imaginary parts must not swap
    assert torch.allclose(rest, out[:, 3:]) and torch.allclose(h2, h) and torch.allclose(c2, c)
    lengths = torch.tensor([3, 2, 1])  # with lengths too: the state carries on from the given one
    rest, (h3, _) = lstm(z[:, 3:], hx=state, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        full, (hb, _) = lstm(z[b : b + 1, : 3 + n])
        assert torch.allclose(rest[b, :n], full[0, 3:]) and torch.allclose(h3[0, b], hb[0, 0])


def test_complex_lstm_time_major_and_gradients():
    lstm = cnn.ComplexLSTM(4, 3)
    z = torch.randn(5, 2, 4, dtype=torch.complex64)
    out, (h, _) = lstm(z)
    assert out.shape == (5, 2, 3) and torch.allclose(out[-1], h[0])
    out.abs().sum().backward()
    assert lstm.weight_hh_imag.grad.abs().sum() > 0
    with pytest.raises(ValueError, match=r"lengths must be \[2\] integers in \[1, L\]"):
        lstm(z, lengths=torch.tensor([0, 5]))


# ------------------------------------------------------------------------------ attention


def test_complex_attention_is_eq13_14_by_hand():
    torch.manual_seed(0)
    q, k, v = crandn(3, 4), crandn(5, 4), crandn(5, 2)
    out, w = CF.complex_scaled_dot_product_attention(q, k, v)
    for i in range(3):
        e = [abs(sum(q[i, d].item() * k[j, d].item().conjugate() for d in range(4))) / math.sqrt(4) for j in range(5)]
        z = sum(math.exp(x) for x in e)
        a = [math.exp(x) / z for x in e]
        for j in range(5):
            assert abs(w[i, j].item() - a[j]) < 1e-12
        for d in range(2):
            assert abs(out[i, d].item() - sum(a[j] * v[j, d].item() for j in range(5))) < 1e-12
    assert w.dtype == D64  # real weights


def test_bilinear_attention_score_is_the_modulus_without_conjugate_by_hand():
    """The authors' classification code: Re = q_r k_r^T - q_i k_i^T, Im = q_r k_i^T + q_i k_r^T, score |.| / sqrt(d)."""
    torch.manual_seed(0)
    q, k, v = crandn(3, 4), crandn(5, 4), crandn(5, 2)
    out, w = CF.complex_scaled_dot_product_attention(q, k, v, score="bilinear")
    qr, qi, kr, ki = q.real, q.imag, k.real, k.imag
    re, im = qr @ kr.T - qi @ ki.T, qr @ ki.T + qi @ kr.T  # written as in attention_complex.py
    e = torch.sqrt(re * re + im * im) / math.sqrt(4)
    for i in range(3):
        for j in range(5):
            by_hand = abs(sum(q[i, d].item() * k[j, d].item() for d in range(4))) / math.sqrt(4)
            assert abs(by_hand - e[i, j].item()) < 1e-12
    assert torch.allclose(w, torch.softmax(e, -1), atol=1e-12, rtol=0)
    assert torch.allclose(out, torch.softmax(e, -1).to(v.dtype) @ v, atol=1e-12, rtol=0)
    # with waves e^{i w pos}: the Hermitian modulus depends on pos_q - pos_k, the bilinear one on pos_q + pos_k
    omega = torch.tensor([0.3, 1.1], dtype=D64)
    wave = lambda pos: torch.polar(torch.tensor([1.0, 2.0], dtype=D64), omega * pos)  # noqa: E731
    qs = torch.stack([wave(1.0), wave(3.0)])
    ks = torch.stack([wave(2.0), wave(4.0)])
    herm = (qs @ ks.T.conj()).abs()
    bil = (qs @ ks.T).abs()
    assert torch.isclose(herm[0, 0], herm[1, 1])  # 1-2 and 3-4: same offset
    assert not torch.isclose(bil[0, 0], bil[1, 1])
    assert torch.isclose(bil[0, 1], bil[1, 0])  # 1+4 and 3+2: same sum
    assert not torch.isclose(herm[0, 1], herm[1, 0])
    mha = cnn.ComplexMultiheadAttention(8, 2, score="bilinear", dtype=D64).eval()
    assert "score='bilinear'" in repr(mha)
    x = crandn(2, 5, 8)
    full, _ = mha(x, is_causal=True)
    cache = {}
    steps = torch.cat([mha(x[:, t : t + 1], is_causal=True, cache=cache)[0] for t in range(5)], 1)
    assert torch.allclose(full, steps, atol=1e-12)


def test_real_attention_score_is_the_real_part_by_hand_and_tells_z_from_minus_z():
    torch.manual_seed(0)
    q, k, v = crandn(3, 4), crandn(5, 4), crandn(5, 2)
    out, w = CF.complex_scaled_dot_product_attention(q, k, v, score="real")
    for i in range(3):
        e = [sum(q[i, d].item() * k[j, d].item().conjugate() for d in range(4)).real / math.sqrt(4) for j in range(5)]
        z = sum(math.exp(x) for x in e)
        for j in range(5):
            assert abs(w[i, j].item() - math.exp(e[j]) / z) < 1e-12
        for d in range(2):
            assert abs(out[i, d].item() - sum(math.exp(e[j]) / z * v[j, d].item() for j in range(5))) < 1e-12
    # keys k and -k: the paper's modulus cannot tell them apart, the real part can
    pair = torch.cat([k[:1], -k[:1]])
    modulus = CF.complex_scaled_dot_product_attention(q, pair, v[:2])[1]
    real = CF.complex_scaled_dot_product_attention(q, pair, v[:2], score="real")[1]
    assert torch.allclose(modulus, torch.full_like(modulus, 0.5)) and not torch.allclose(real, modulus)
    with pytest.raises(ValueError, match=r"^score must be one of 'modulus', 'real', 'bilinear', got 'abs'$"):
        CF.complex_scaled_dot_product_attention(q, k, v, score="abs")
    with pytest.raises(ValueError, match=r"^score must be one of 'modulus', 'real', 'bilinear', got 'abs'$"):
        cnn.ComplexMultiheadAttention(8, 2, score="abs")
    mha = cnn.ComplexMultiheadAttention(8, 2, score="real", dtype=D64).eval()
    assert "score='real'" in repr(mha)
    x = crandn(2, 5, 8)
    full, _ = mha(x, is_causal=True)
    cache = {}
    steps = [mha(x[:, t : t + 1], is_causal=True, cache=cache)[0] for t in range(5)]
    assert torch.allclose(torch.cat(steps, 1), full)


def test_attention_mask_really_masks():
    torch.manual_seed(0)
    q, k, v = crandn(2, 3, 4), crandn(2, 5, 4), crandn(2, 5, 4)
    mask = torch.tensor([True, True, False, True, False])
    out, w = CF.complex_scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(w[..., ~mask], torch.zeros(2, 3, 2, dtype=D64))
    k2, v2 = k.clone(), v.clone()
    k2[:, ~mask] = crandn(2, 2, 4) * 100
    v2[:, ~mask] = crandn(2, 2, 4) * 100
    out2, _ = CF.complex_scaled_dot_product_attention(q, k2, v2, mask)
    assert torch.allclose(out, out2)
    ref, _ = CF.complex_scaled_dot_product_attention(q, k[:, mask], v[:, mask])
    assert torch.allclose(out, ref)
    # a query that may see nothing gets zeros, not NaN, and so do the gradients
    none = torch.zeros(3, 5, dtype=torch.bool)
    none[1:] = True
    qg = q.clone().requires_grad_()
    out3, w3 = CF.complex_scaled_dot_product_attention(qg, k, v, none)
    assert torch.equal(out3[:, 0], torch.zeros(2, 4, dtype=C128)) and not torch.isnan(w3).any()
    out3.abs().sum().backward()
    assert not torch.isnan(qg.grad).any()
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        CF.complex_scaled_dot_product_attention(q, k, v, mask.float())


def test_causal_mask_is_bottom_right_aligned():
    assert torch.equal(CF.causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    assert torch.equal(CF.causal_mask(1, 4), torch.ones(1, 4, dtype=torch.bool))
    assert torch.equal(CF.causal_mask(2, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))


def test_multihead_attention_weights_and_time_major_layout():
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2, dtype=D64).eval()
    x = crandn(2, 5, 8)
    out, w_heads = mha(x, need_weights=True, average_attn_weights=False)
    _, w = mha(x, need_weights=True)
    assert w_heads.shape == (2, 2, 5, 5) and torch.allclose(w, w_heads.mean(1))
    assert torch.allclose(w_heads.sum(-1), torch.ones(2, 2, 5, dtype=D64))
    assert not torch.allclose(w_heads[:, 0], w_heads[:, 1])  # two different heads: the mean is a real test
    time_major = cnn.ComplexMultiheadAttention(8, 2, batch_first=False, dtype=D64).eval()
    time_major.load_state_dict(mha.state_dict())
    out_t, w_t = time_major(x.transpose(0, 1), need_weights=True)
    assert torch.allclose(out_t.transpose(0, 1), out) and torch.allclose(w_t, w)


def test_multihead_attention_key_padding_and_causal_masks():
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2, dtype=D64).eval()
    x = crandn(2, 6, 8)
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    out, _ = mha(x, key_padding_mask=pad)
    x2 = x.clone()
    x2[1, 4:] = crandn(2, 8) * 50
    out2, _ = mha(x2, key_padding_mask=pad)
    assert torch.allclose(out[:, :4], out2[:, :4]) and torch.allclose(out[0], out2[0])
    # causal: changing a later token leaves the earlier outputs unchanged
    out, w = mha(x, is_causal=True, need_weights=True)
    x3 = x.clone()
    x3[:, 3] += 10
    out3, _ = mha(x3, is_causal=True)
    assert torch.allclose(out[:, :3], out3[:, :3]) and not torch.allclose(out[:, 3], out3[:, 3])
    assert torch.equal(w.triu(1), torch.zeros_like(w))
    # attn_mask follows nn.MultiheadAttention: True = not allowed
    forbid = ~CF.causal_mask(6)
    out4, _ = mha(x, attn_mask=forbid)
    assert torch.allclose(out, out4)
    # a per-sequence, per-head mask [B * H, Lq, Lk], as nn.MultiheadAttention takes it
    per_head = forbid.expand(2 * 2, 6, 6).clone()
    per_head[1] = False  # sequence 0, head 1: no mask
    out5, w5 = mha(x, attn_mask=per_head, need_weights=True, average_attn_weights=False)
    _, w_free = mha(x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(w5[0, 1], w_free[0, 1])
    _, w_causal = mha(x, attn_mask=forbid, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(w5[1], w_causal[1])  # sequence 1: both heads causal
    assert not torch.allclose(w5[0, 0], w_free[0, 0])
    with pytest.raises(ValueError, match=r"^attn_mask must be \[6, 6\] or \[B \* num_heads = 4, 6, 6\], got \(2, 6, 6\)$"):
        mha(x, attn_mask=forbid.expand(2, 6, 6))


def test_multihead_attention_cache_equals_full_pass():
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2, dtype=D64).eval()
    x = crandn(2, 5, 8)
    full, _ = mha(x, is_causal=True)
    cache = {}
    steps = [mha(x[:, t : t + 1], is_causal=True, cache=cache)[0] for t in range(5)]
    assert torch.allclose(torch.cat(steps, 1), full)
    assert cache["k"].shape == (2, 2, 5, 4)


@pytest.mark.parametrize("share", [False, True])
def test_multihead_attention_share_weights_and_state_dict(share):
    a = cnn.ComplexMultiheadAttention(8, 4, share_weights=share)
    n = sum(p.numel() for p in a.parameters())
    per_proj_full = 2 * (64 + 8)
    per_proj_shared = 64 + 8
    assert n == (3 * (per_proj_shared if share else per_proj_full) + per_proj_full)
    b = cnn.ComplexMultiheadAttention(8, 4, share_weights=share)
    buf = io.BytesIO()
    torch.save(a.state_dict(), buf)
    buf.seek(0)
    b.load_state_dict(torch.load(buf, weights_only=True))
    x = torch.randn(1, 3, 8, dtype=torch.complex64)
    assert torch.equal(a(x)[0], b(x)[0])


def test_multihead_attention_bad_input():
    mha = cnn.ComplexMultiheadAttention(8, 2)
    with pytest.raises(ValueError, match=r"embed_dim \(8\) must be divisible by num_heads \(3\)"):
        cnn.ComplexMultiheadAttention(8, 3)
    with pytest.raises(ValueError, match=r"query must be \[B, L, 8\] complex, got \(2, 3, 4\)"):
        mha(torch.randn(2, 3, 4, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"key_padding_mask must be \[B, 3\]"):
        mha(torch.randn(2, 3, 8, dtype=torch.complex64), key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))


# ------------------------------------------------------------------------------ transformer layers


def test_encoder_layer_is_permutation_equivariant_without_positions():
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=D64).eval()
    x = crandn(2, 5, 8)
    perm = torch.tensor([3, 0, 4, 1, 2])
    assert torch.allclose(layer(x)[:, perm], layer(x[:, perm]))


def test_encoder_layer_is_the_composition_of_its_parts():
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", dtype=D64).eval()
    x = crandn(2, 5, 8)
    a, _ = layer.self_attn(x)
    h = layer.norm1(x + a)
    ff = layer.ffn.linear2(CF.split_activation(layer.ffn.linear1(h), F.gelu))
    assert torch.allclose(layer(x), layer.norm2(h + ff))


def test_pre_norm_layers_are_the_composition_of_their_parts():
    torch.manual_seed(0)
    enc = cnn.ComplexTransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True, dtype=D64).eval()
    x = crandn(2, 5, 8)
    h = x + enc.self_attn(*(enc.norm1(x),) * 3)[0]
    assert torch.allclose(enc(x), h + enc.ffn(enc.norm2(h)))
    dec = cnn.ComplexTransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True, dtype=D64).eval()
    tgt, memory = crandn(2, 5, 8), crandn(2, 7, 8)
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    n1 = dec.norm1(tgt)
    h = tgt + dec.self_attn(n1, n1, n1, attn_mask=causal)[0]
    h = h + dec.cross_attn(dec.norm2(h), memory, memory)[0]
    assert torch.allclose(dec(tgt, memory, tgt_mask=causal), h + dec.ffn(dec.norm3(h)))


def test_encoder_layer_state_dict_round_trip_and_padding():
    a = cnn.ComplexTransformerEncoderLayer(8, 2, 16, share_weights=True, norm_first=True).eval()
    b = cnn.ComplexTransformerEncoderLayer(8, 2, 16, share_weights=True, norm_first=True).eval()
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 4, 8, dtype=torch.complex64)
    pad = torch.tensor([[False, False, True, True], [False] * 4])
    assert torch.equal(a(x, src_key_padding_mask=pad), b(x, src_key_padding_mask=pad))
    x2 = x.clone()
    x2[0, 2:] = 7
    assert torch.allclose(a(x, src_key_padding_mask=pad)[0, :2], a(x2, src_key_padding_mask=pad)[0, :2])


def test_decoder_layer_incremental_equals_full_and_is_causal():
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=D64).eval()
    tgt, memory = crandn(2, 5, 8), crandn(2, 7, 8)
    mpad = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
    full = layer(tgt, memory, memory_key_padding_mask=mpad, tgt_is_causal=True)
    cache = {}
    steps = [layer(tgt[:, t : t + 1], memory, memory_key_padding_mask=mpad, tgt_is_causal=True, cache=cache)
             for t in range(5)]
    assert torch.allclose(torch.cat(steps, 1), full)
    tgt2 = tgt.clone()
    tgt2[:, 4] += 3
    assert torch.allclose(layer(tgt2, memory, memory_key_padding_mask=mpad, tgt_is_causal=True)[:, :4], full[:, :4])


@pytest.mark.parametrize("share", [False, True])
def test_complex_weights_start_with_the_energy_of_real_default_layers(share):
    # nn.Linear / nn.Conv1d draw U(-1/sqrt(fan_in), 1/sqrt(fan_in)): E w^2 = 1 / (3 fan_in).
    # A complex W = A + iB with A, B ~ U(-k, k), k = 1/sqrt(2 fan_in) has E|W|^2 = 2 k^2 / 3, the same.
    torch.manual_seed(0)
    layers = [(cnn.ComplexLinear(400, 300, share_weights=share), 400),
              (cnn.ComplexConv1d(50, 300, 8, share_weights=share), 50 * 8)]
    for layer, fan_in in layers:
        a = layer.weight_real
        b = a if layer.weight_imag is None else layer.weight_imag
        energy = (a.detach() ** 2 + b.detach() ** 2).mean().item()
        assert abs(energy * 3 * fan_in - 1) < 0.05, type(layer).__name__
        assert a.abs().max() <= (2 * fan_in) ** -0.5 and a.abs().max() > 0.99 * (2 * fan_in) ** -0.5
        assert (layer.weight_imag is None) == share


def test_input_of_the_wrong_width_is_an_error_naming_the_layer_and_shape():
    """ComplexLinear, ComplexLayerNorm and ComplexBatchNorm1d failed inside torch ("mat1 and mat2 shapes cannot be
    multiplied", "running_mean should contain 4 elements not 3"), unlike the conv, LSTM and attention layers."""
    z = torch.randn(2, 5, 4, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"^ComplexLinear expects input \[\.\.\., 3\], got \[2, 5, 4\]$"):
        cnn.ComplexLinear(3, 2)(z)
    with pytest.raises(ValueError, match=r"^ComplexLayerNorm expects input \[\.\.\., 3\], got \[2, 5, 4\]$"):
        cnn.ComplexLayerNorm(3)(z)
    with pytest.raises(ValueError, match=r"^ComplexBatchNorm1d expects input \[N, 3\] or \[N, 3, L\], got \[2, 4, 5\]$"):
        cnn.ComplexBatchNorm1d(3)(z.transpose(1, 2))
    assert cnn.ComplexLinear(4, 2)(z).shape == (2, 5, 2) and cnn.ComplexLayerNorm((5, 4))(z).shape == z.shape


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch 2.13 deprecates torch.jit.script; users still call it
def test_linear_and_batch_norm_still_script_with_their_width_checks():
    """The width checks must not break torch.jit.script, which these two layers supported before them."""
    z = torch.randn(6, 4, dtype=torch.complex64)
    for layer in (cnn.ComplexLinear(4, 3), cnn.ComplexBatchNorm1d(4).eval()):
        scripted = torch.jit.script(layer)
        torch.testing.assert_close(scripted(z), layer(z))


# ------------------------------------------------------------------------------ options off their defaults


def test_bias_free_layers_are_their_equations_without_the_bias():
    torch.manual_seed(0)
    z = crandn(4, 5)
    linear = cnn.ComplexLinear(5, 3, bias=False, dtype=D64)
    assert linear.bias_real is None and linear.bias_imag is None
    W = torch.complex(linear.weight_real, linear.weight_imag)
    assert torch.allclose(linear(z), z @ W.T)  # Eq. 10 with c = d = 0
    lstm = cnn.ComplexLSTM(4, 3, bias=False, batch_first=True, dtype=D64)
    assert lstm.bias_real is None and sum(p.numel() for p in lstm.parameters()) == 2 * 4 * 3 * (4 + 3)
    z_seq = crandn(2, 6, 4)
    out, (h, c) = lstm(z_seq)
    zero = torch.zeros(4 * 3, dtype=D64)  # Eq. 12 by hand with a zero bias
    same = types.SimpleNamespace(hidden_size=3, share_weights=False, weight_ih_real=lstm.weight_ih_real,
                                 weight_ih_imag=lstm.weight_ih_imag, weight_hh_real=lstm.weight_hh_real,
                                 weight_hh_imag=lstm.weight_hh_imag, bias_real=zero, bias_imag=zero)
    ref_out, ref_h, ref_c = lstm_by_hand(same, z_seq)
    assert torch.allclose(out, ref_out) and torch.allclose(h[0], ref_h) and torch.allclose(c[0], ref_c)


def test_functional_layers_add_an_imaginary_bias_given_with_shared_weights():
    """complex_linear / complex_conv1d with weight_imag=None (A = B) and both biases: b = c + id, by hand. The
    imaginary bias was dropped without a word (the shared-weight path added c to both parts)."""
    torch.manual_seed(0)
    A, c, d = torch.randn(4, 3, dtype=D64), torch.randn(4, dtype=D64), torch.randn(4, dtype=D64) + 10
    z = crandn(2, 3)
    by_hand = z @ torch.complex(A, A).T + torch.complex(c, d)
    torch.testing.assert_close(CF.complex_linear(z, A, None, c, d), by_hand)
    torch.testing.assert_close(CF.complex_linear(z, A, None, c), z @ torch.complex(A, A).T + torch.complex(c, c))
    K = torch.randn(4, 3, 2, dtype=D64)
    x = crandn(2, 3, 5)
    full = CF.complex_conv1d(x, K, K.clone(), c, d)  # the unshared path with B = A is the same layer
    torch.testing.assert_close(CF.complex_conv1d(x, K, None, c, d), full)
    message = r"^bias_imag is given without bias_real: pass bias_real too \(a zero tensor for b = 0 \+ id\); " \
              r"bias_imag=None shares c = d$"
    for layer, weight, input in ((CF.complex_linear, A, z), (CF.complex_conv1d, K, x)):
        for weight_imag in (None, weight):
            with pytest.raises(ValueError, match=message):
                layer(input, weight, weight_imag, None, d)


def test_complex_conv1d_with_stride_padding_dilation_and_no_bias_by_hand():
    torch.manual_seed(0)
    conv = cnn.ComplexConv1d(3, 2, 3, stride=2, padding=1, dilation=2, bias=False, dtype=D64)
    z = crandn(2, 3, 9)
    out = conv(z)
    padded = F.pad(z, (1, 1))  # zero padding of both parts
    length = (9 + 2 * 1 - 2 * (3 - 1) - 1) // 2 + 1
    assert out.shape == (2, 2, length) == (2, 2, 4)
    W = torch.complex(conv.weight_real, conv.weight_imag)
    for n in range(2):
        for o in range(2):
            for t in range(length):
                s = sum(W[o, c, k].item() * padded[n, c, 2 * t + 2 * k].item() for c in range(3) for k in range(3))
                assert abs(out[n, o, t].item() - s) < 1e-10


def test_layer_norm_without_affine_standardises_each_part():
    norm = cnn.ComplexLayerNorm(8, elementwise_affine=False, dtype=D64)
    assert norm.weight is None and norm.bias is None and list(norm.parameters()) == []
    out = norm(crandn(3, 8) * 4 + (2 - 1j))
    for part in (out.real, out.imag):
        assert torch.allclose(part.mean(-1), torch.zeros(3, dtype=D64), atol=1e-12)
        assert torch.allclose(part.var(-1, unbiased=False), torch.ones(3, dtype=D64), atol=1e-4)


def test_reprs_show_the_options_that_differ_from_the_defaults():
    assert repr(cnn.ComplexConv1d(4, 6, 3)) == "ComplexConv1d(4, 6, kernel_size=3)"
    assert repr(cnn.ComplexConv1d(4, 6, 3, stride=2, padding=1, dilation=2, bias=False, share_weights=True)) == \
        "ComplexConv1d(4, 6, kernel_size=3, stride=2, padding=1, dilation=2, bias=False, share_weights=True)"
    assert repr(cnn.ComplexLSTM(4, 6)) == "ComplexLSTM(4, 6)"
    assert repr(cnn.ComplexLSTM(4, 6, bias=False, batch_first=True, share_weights=True)) == \
        "ComplexLSTM(4, 6, bias=False, batch_first=True, share_weights=True)"
    assert cnn.ComplexMultiheadAttention(8, 2).extra_repr() == "embed_dim=8, num_heads=2"
    assert cnn.ComplexMultiheadAttention(8, 2, dropout=0.1, share_weights=True).extra_repr() == \
        "embed_dim=8, num_heads=2, dropout=0.1, share_weights=True"


def test_attention_mask_and_shape_errors_name_the_argument_and_the_expected_form():
    q = crandn(2, 3, 4)
    with pytest.raises(ValueError, match=r"^query and key must share their last dimension, got 4 and 5$"):
        CF.complex_scaled_dot_product_attention(q, crandn(2, 3, 5), q)
    with pytest.raises(ValueError, match=r"^key and value must have the same length, got 3 and 2$"):
        CF.complex_scaled_dot_product_attention(q, q, crandn(2, 2, 4))
    mha = cnn.ComplexMultiheadAttention(8, 2)
    x = torch.randn(2, 3, 8, dtype=torch.complex64)
    with pytest.raises(TypeError, match=r"^attn_mask must be boolean \(True = not allowed\) or floating point holding "
                                        r"0 and -inf, got dtype torch.int64$"):
        mha(x, attn_mask=torch.zeros(3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^attn_mask: a floating-point mask may hold only 0 \(keep\) and -inf \(mask\); "
                                         r"additive biases are not supported, give a boolean mask$"):
        mha(x, attn_mask=torch.full((3, 3), -1e9))
    with pytest.raises(ValueError, match=r"^attn_mask must be \[3, 3\] or \[B \* num_heads = 4, 3, 3\], got "
                                         r"\(2, 3, 3\)$"):
        mha(x, attn_mask=torch.zeros(2, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"^attn_mask must be \[3, 3\], got \(3, 4\)$"):
        mha(x, attn_mask=torch.zeros(3, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"^key_padding_mask must be boolean \(True = padding\) or floating point holding "
                                        r"0 and -inf, got dtype torch.int64$"):
        mha(x, key_padding_mask=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^dropout probability p must be in \[0, 1\], got 1.5$"):
        CF.complex_dropout(x, 1.5)


def test_float_masks_of_zeros_and_minus_infinity_mask_as_their_boolean_twins():
    """nn.Transformer.generate_square_subsequent_mask gives a float mask of 0 and -inf; it was refused by dtype."""
    torch.manual_seed(0)
    mha = cnn.ComplexMultiheadAttention(8, 2).eval()
    x = torch.randn(2, 4, 8, dtype=torch.complex64)
    square = torch.nn.Transformer.generate_square_subsequent_mask(4)
    torch.testing.assert_close(mha(x, attn_mask=square)[0], mha(x, is_causal=True)[0])
    padding = torch.tensor([[False, False, True, True], [False, False, False, True]])
    float_padding = torch.zeros(2, 4).masked_fill(padding, float("-inf"))
    torch.testing.assert_close(mha(x, key_padding_mask=float_padding)[0], mha(x, key_padding_mask=padding)[0])
    dec = cnn.ComplexTransformerDecoderLayer(8, 2, 16, dropout=0.0).eval()
    memory = torch.randn(2, 5, 8, dtype=torch.complex64)
    torch.testing.assert_close(dec(x, memory, tgt_mask=square), dec(x, memory, tgt_is_causal=True))


def test_transformer_layers_name_their_own_arguments_in_mask_and_shape_errors():
    """The layers passed their masks through to the attention, whose errors named key_padding_mask, attn_mask,
    query and key, not src_key_padding_mask, memory_mask, tgt or memory."""
    c = torch.complex64
    enc = cnn.ComplexTransformerEncoderLayer(16, 4, 32, dropout=0.0)
    dec = cnn.ComplexTransformerDecoderLayer(16, 4, 32, dropout=0.0)
    x, memory = torch.randn(2, 3, 16, dtype=c), torch.randn(2, 5, 16, dtype=c)
    bad = {
        "^src_key_padding_mask must be \\[B, 3\\], got \\(2, 4\\)$":
            lambda: enc(x, src_key_padding_mask=torch.zeros(2, 4, dtype=torch.bool)),
        "^src_mask must be \\[3, 3\\], got \\(2, 2\\)$": lambda: enc(x, src_mask=torch.zeros(2, 2, dtype=torch.bool)),
        "^src must be \\[B, L, 16\\] complex, got \\(2, 3, 8\\)$": lambda: enc(torch.randn(2, 3, 8, dtype=c)),
        "^memory_key_padding_mask must be \\[B, 5\\], got \\(2, 3\\)$":
            lambda: dec(x, memory, memory_key_padding_mask=torch.zeros(2, 3, dtype=torch.bool)),
        "^tgt_key_padding_mask must be \\[B, 3\\], got \\(2, 5\\)$":
            lambda: dec(x, memory, tgt_key_padding_mask=torch.zeros(2, 5, dtype=torch.bool)),
        "^memory_mask must be \\[3, 5\\], got \\(3, 3\\)$":
            lambda: dec(x, memory, memory_mask=torch.zeros(3, 3, dtype=torch.bool)),
        "^tgt and memory must hold the same batch, got tgt \\(2, 3, 16\\) and memory \\(1, 5, 16\\) "
        "\\(batch_first=True\\)$": lambda: dec(x, memory[:1]),
        "^memory must be \\[B, L, 16\\] complex, got \\(2, 5, 8\\)$": lambda: dec(x, torch.randn(2, 5, 8, dtype=c)),
        "^memory must be a complex tensor \\(torch.complex64\\), got torch.float32$": lambda: dec(x, memory.real),
    }
    for message, call in bad.items():
        with pytest.raises((ValueError, TypeError), match=message):
            call()


# --- stop 70: edge cases found by a review -------------------------------------------------------------------


def test_complex_layer_norm_adds_a_bias_given_without_a_weight():
    z = torch.randn(2, 4, dtype=torch.complex64)
    bias = torch.stack((torch.full((4,), 5.0), torch.full((4,), -3.0)))
    out = CF.complex_layer_norm(z, (4,), None, bias)
    assert torch.allclose(out.real, F.layer_norm(z.real, (4,), None, bias[0]))
    assert torch.allclose(out.imag, F.layer_norm(z.imag, (4,), None, bias[1]))


@pytest.mark.parametrize("score", ["modulus", "real", "bilinear"])
def test_attention_takes_lazily_conjugated_inputs(score):
    q = torch.randn(2, 3, 4, dtype=torch.complex64)
    k, v = torch.randn(2, 5, 4, dtype=torch.complex64), torch.randn(2, 5, 4, dtype=torch.complex64)
    lazy = CF.complex_scaled_dot_product_attention(q.conj(), k.conj(), v.conj(), score=score)
    plain = CF.complex_scaled_dot_product_attention(q.conj().resolve_conj(), k.conj().resolve_conj(),
                                                    v.conj().resolve_conj(), score=score)
    assert torch.equal(lazy[0], plain[0]) and torch.equal(lazy[1], plain[1])


def test_attention_extra_repr_shows_batch_first_false():
    assert "batch_first=False" in repr(cnn.ComplexMultiheadAttention(8, 2, batch_first=False))
    assert "batch_first" not in repr(cnn.ComplexMultiheadAttention(8, 2))


def test_lstm_with_lengths_takes_an_empty_batch_as_without():
    lstm = cnn.ComplexLSTM(4, 3, batch_first=True)
    x = torch.zeros(0, 5, 4, dtype=torch.complex64)
    out, (h, c) = lstm(x, lengths=torch.zeros(0, dtype=torch.long))
    assert out.shape == (0, 5, 3) and h.shape == c.shape == (1, 0, 3)
    with pytest.raises(ValueError, match=r"lengths must be \[2\] integers in \[1, L\], got \[0, 3\]"):
        lstm(torch.zeros(2, 5, 4, dtype=torch.complex64), lengths=torch.tensor([0, 3]))
