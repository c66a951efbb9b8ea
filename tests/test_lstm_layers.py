"""ComplexLSTM's stacked, bidirectional and unbatched forms, against Eq. 12 written out by hand (torch.nn.LSTM's
conventions for how layers and directions are joined)."""

import re
import warnings

import pytest
import torch

from complexorder import nn as cnn

C128 = torch.complex128
D64 = torch.float64


def crandn(*shape):
    return torch.randn(*shape, dtype=C128)


def cell_weights(lstm, suffix):
    """(W^z, W^h, b) of one layer and direction as complex matrices; A = B, c = d with shared weights."""
    def pair(name):
        real = getattr(lstm, f"{name}_real{suffix}")
        imag = getattr(lstm, f"{name}_imag{suffix}")
        return torch.complex(real, real if imag is None else imag)
    return pair("weight_ih"), pair("weight_hh"), pair("bias")


def run_by_hand(Wz, Wh, b, z, h, c):
    """Eq. 12 over one sequence z [L, n] from (h, c) [H]: split activations, part-wise gating."""
    H = Wh.shape[1]
    sig = lambda u: torch.complex(torch.sigmoid(u.real), torch.sigmoid(u.imag))  # noqa: E731
    tanh = lambda u: torch.complex(torch.tanh(u.real), torch.tanh(u.imag))  # noqa: E731
    partwise = lambda u, v: torch.complex(u.real * v.real, u.imag * v.imag)  # noqa: E731
    outs = []
    for t in range(z.shape[0]):
        i, f, g, o = (Wz @ z[t] + Wh @ h + b).split(H)
        c = partwise(sig(f), c) + partwise(sig(i), tanh(g))
        h = partwise(sig(o), tanh(c))
        outs.append(h)
    return torch.stack(outs), h, c


def stack_by_hand(lstm, z, h0=None, c0=None):
    """One sequence z [L, input_size] through every layer: the reverse direction reads z backwards, layer k > 0
    reads layer k - 1's joined output (forward first). Returns output [L, dirs * H], h_n and c_n [layers * dirs, H]."""
    H, dirs = lstm.hidden_size, 2 if lstm.bidirectional else 1
    zeros = torch.zeros(lstm.num_layers * dirs, H, dtype=z.dtype)
    h0 = zeros if h0 is None else h0
    c0 = zeros if c0 is None else c0
    hs, cs = [], []
    x = z
    for layer in range(lstm.num_layers):
        base = "" if layer == 0 else f"_l{layer}"
        outs = []
        for d, suffix in enumerate([base, base + "_reverse"][:dirs]):
            k = layer * dirs + d
            seq = x if d == 0 else x.flip(0)
            out, h, c = run_by_hand(*cell_weights(lstm, suffix), seq, h0[k], c0[k])
            outs.append(out if d == 0 else out.flip(0))
            hs.append(h)
            cs.append(c)
        x = torch.cat(outs, dim=-1)
    return x, torch.stack(hs), torch.stack(cs)


@pytest.mark.parametrize("layers,bidirectional,share", [(2, False, False), (1, True, False), (3, True, False),
                                                        (2, True, True)])
def test_stacked_and_bidirectional_lstm_is_eq12_layer_by_layer(layers, bidirectional, share):
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, num_layers=layers, bidirectional=bidirectional, batch_first=True,
                           share_weights=share, dtype=D64)
    z = crandn(2, 6, 4)
    dirs = 2 if bidirectional else 1
    states = layers * dirs
    h0, c0 = crandn(states, 2, 3), crandn(states, 2, 3)
    out, (h, c) = lstm(z, (h0, c0))
    assert out.shape == (2, 6, dirs * 3) and h.shape == c.shape == (states, 2, 3)
    for b in range(2):
        ref_out, ref_h, ref_c = stack_by_hand(lstm, z[b], h0[:, b], c0[:, b])
        torch.testing.assert_close(out[b], ref_out)
        torch.testing.assert_close(h[:, b], ref_h)
        torch.testing.assert_close(c[:, b], ref_c)


def test_bidirectional_lengths_read_each_sequence_backwards_from_its_own_end():
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, num_layers=2, bidirectional=True, dtype=D64)  # time-major
    z = crandn(6, 3, 4)
    lengths = torch.tensor([6, 2, 4])
    h0, c0 = crandn(4, 3, 3), crandn(4, 3, 3)  # given states follow their sequences through the sorting by length
    out, (h, c) = lstm(z, (h0, c0), lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        ref_out, ref_h, ref_c = stack_by_hand(lstm, z[:n, b], h0[:, b], c0[:, b])
        torch.testing.assert_close(out[:n, b], ref_out)
        torch.testing.assert_close(h[:, b], ref_h)
        torch.testing.assert_close(c[:, b], ref_c)
        assert torch.equal(out[n:, b], torch.zeros_like(out[n:, b]))


def test_unbatched_input_equals_a_batch_of_one():
    torch.manual_seed(0)
    for batch_first in (False, True):
        lstm = cnn.ComplexLSTM(4, 3, num_layers=2, bidirectional=True, batch_first=batch_first, dtype=D64)
        z, h0, c0 = crandn(5, 4), crandn(4, 3), crandn(4, 3)
        out, (h, c) = lstm(z, (h0, c0))
        batched = z.unsqueeze(0 if batch_first else 1)
        ref_out, (ref_h, ref_c) = lstm(batched, (h0.unsqueeze(1), c0.unsqueeze(1)))
        assert out.shape == (5, 6) and h.shape == c.shape == (4, 3)
        torch.testing.assert_close(out, ref_out.squeeze(0 if batch_first else 1), rtol=0, atol=0)
        torch.testing.assert_close((h, c), (ref_h.squeeze(1), ref_c.squeeze(1)), rtol=0, atol=0)


def test_dropout_drops_whole_complex_units_between_layers_in_training_only():
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, num_layers=2, dropout=0.5, batch_first=True, dtype=D64)
    z = crandn(2, 6, 4)
    dropped = []
    original = cnn.functional.complex_dropout

    def spy(input, p, training):
        out = original(input, p, training)
        dropped.append((input, out, p, training))
        return out

    cnn.functional.complex_dropout = spy
    try:
        lstm.train()
        lstm(z)
        lstm.eval()
        out, (h, c) = lstm(z)
    finally:
        cnn.functional.complex_dropout = original
    (first_in, first_out, p, training), (_, second_out, _, eval_training) = dropped
    assert p == 0.5 and training and not eval_training
    zeroed = first_out == 0
    assert zeroed.any() and not zeroed.all()
    assert torch.equal(first_out.real == 0, first_out.imag == 0)  # a unit goes whole
    torch.testing.assert_close(first_out[~zeroed], 2 * first_in[~zeroed])
    ref_out, ref_h, _ = stack_by_hand(lstm, z[0])  # eval: no dropout, Eq. 12 layer by layer
    torch.testing.assert_close(out[0], ref_out)


def test_the_next_layer_reads_the_dropped_output():
    """dropout = 1 drops every unit of layer 0's output, so layer 1 runs Eq. 12 on zeros (a review's mutations, the
    dropout's result thrown away or applied after the last layer instead, passed the spy test above)."""
    torch.manual_seed(0)
    lstm = cnn.ComplexLSTM(4, 3, num_layers=2, dropout=1.0, batch_first=True, dtype=D64).train()
    out, (h, _) = lstm(crandn(1, 6, 4))
    zeros = torch.zeros(3, dtype=C128)
    ref, ref_h, _ = run_by_hand(*cell_weights(lstm, "_l1"), torch.zeros(6, 3, dtype=C128), zeros, zeros)
    torch.testing.assert_close(out[0], ref)
    torch.testing.assert_close(h[1, 0], ref_h)
    assert (h[0] != 0).all()  # layer 0's own state is not dropped


def test_one_layer_keeps_the_single_layer_names_and_loads_their_state_dicts():
    single = cnn.ComplexLSTM(4, 3)
    # the single-layer order too: an optimizer's state_dict matches parameters by position
    assert [name for name, _ in single.named_parameters()] == ["weight_ih_real", "weight_hh_real", "weight_ih_imag",
                                                               "weight_hh_imag", "bias_real", "bias_imag"]
    deep = cnn.ComplexLSTM(4, 3, num_layers=2, bidirectional=True, share_weights=True)
    assert sorted(deep.state_dict()) == sorted(f"{w}_real{s}" for w in ("weight_ih", "weight_hh", "bias")
                                               for s in ("", "_reverse", "_l1", "_l1_reverse"))
    assert deep.weight_ih_real_l1.shape == (12, 6)  # layer 1 reads both directions' 3 complex features
    # parameters: per layer and direction, two real matrices (one shared) and two biases
    assert sum(p.numel() for p in cnn.ComplexLSTM(4, 3, num_layers=2).parameters()) == \
        2 * (12 * 4 + 12 * 3 + 12) + 2 * (12 * 3 + 12 * 3 + 12)


def test_repr_names_the_new_settings():
    assert repr(cnn.ComplexLSTM(4, 6, num_layers=2, dropout=0.1, bidirectional=True)) == \
        "ComplexLSTM(4, 6, num_layers=2, dropout=0.1, bidirectional=True)"


def exactly(message):
    return "^" + re.escape(message) + "$"


def test_bad_settings_and_states_are_named():
    with pytest.raises(TypeError, match=r"^num_layers must be a positive integer, got True \(bias is a keyword"):
        cnn.ComplexLSTM(4, 3, True)  # the old third positional argument
    with pytest.raises(ValueError, match=exactly("num_layers must be a positive integer, got 0")):
        cnn.ComplexLSTM(4, 3, num_layers=0)
    with pytest.raises(ValueError, match=exactly("bidirectional must be True or False, got 'yes'")):
        cnn.ComplexLSTM(4, 3, bidirectional="yes")
    with pytest.raises(ValueError, match=exactly("dropout must be in [0, 1], got 1.5")):
        cnn.ComplexLSTM(4, 3, num_layers=2, dropout=1.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cnn.ComplexLSTM(4, 3, dropout=0.2)
    assert any("with num_layers=1 it has no effect" in str(w.message) for w in caught)
    lstm = cnn.ComplexLSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True)
    z = torch.randn(2, 5, 4, dtype=torch.complex64)
    h0 = torch.zeros(2, 2, 3, dtype=torch.complex64)
    with pytest.raises(ValueError, match=exactly("hx's h_0 must be [4, 2, 3] (num_layers * num_directions, the "
                                                 "input's batch, hidden_size), got (2, 2, 3)")):
        lstm(z, (h0, h0))
    h0 = torch.zeros(4, 2, 3, dtype=torch.complex64)  # a batched state for an unbatched input
    with pytest.raises(ValueError, match=exactly("hx's h_0 must be [4, 3] (num_layers * num_directions, "
                                                 "hidden_size), got (4, 2, 3)")):
        lstm(z[0], (h0, h0))
    with pytest.raises(ValueError, match=r"^lengths is for a batched input"):
        lstm(z[0], lengths=torch.tensor([5]))
    with pytest.raises(ValueError, match=exactly("ComplexLSTM expects input [B, L, 4] (batch_first), [L, B, 4] or "
                                                 "unbatched [L, 4], got (5,)")):
        lstm(z[0, :, 0])


@pytest.mark.parametrize("embedding", ["tpe", "complex-order"])
def test_bidirectional_classifier_reads_the_last_layers_two_final_states(embedding):
    """The read-out joins the last layer's forward state (at each sentence's last token) and backward state (at
    its first): the forward one computed on the unpadded sentence alone, the backward one on the sentence reversed."""
    from complexorder import build_embedding
    from complexorder.models import build_classifier
    from complexorder.models.readout import to_real_features

    torch.manual_seed(0)
    model = build_classifier("lstm", build_embedding(embedding, 50, 6, padding_idx=0), 3, hidden=4, num_layers=2,
                             bidirectional=True).eval()
    assert model.output.in_features == 8 and model.lstm.num_layers == 2 and model.lstm.dropout == 0.5
    tokens = torch.tensor([[5, 7, 9, 0, 0], [9, 7, 5, 3, 1]])
    logits = model(tokens)
    for b, n in enumerate((3, 5)):
        out, (h, _) = model.lstm(model.embedding(tokens[b : b + 1, :n]))
        half = model.lstm.hidden_size
        features = torch.cat((out[0, n - 1, :half], out[0, 0, half:]))  # forward at the end, backward at the start
        torch.testing.assert_close(torch.cat((h[-2, 0], h[-1, 0])), features)
        torch.testing.assert_close(logits[b], model.output(to_real_features(features)))
    with pytest.raises(ValueError, match=r"^LSTMClassifier: num_layers must be a positive integer, got 0$"):
        build_classifier("lstm", build_embedding("tpe", 50, 6), 3, num_layers=0)
    with pytest.raises(ValueError, match=r"^LSTMClassifier: bidirectional must be True or False, got 1$"):
        build_classifier("lstm", build_embedding("tpe", 50, 6), 3, bidirectional=1)

