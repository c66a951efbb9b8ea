"""The fast paths of the complex layers (stop 79) against the straightforward formulas, values and gradients.

* the parts helpers of ``complexorder.nn.functional`` (Gauss's three real products for a complex linear map and a
  complex convolution, the attention on the parts, dropout, layer norm) against the complex functions they stand for;
* :class:`ComplexTransformerEncoderLayer` on the parts against the same layer with the fast paths switched off
  (``functional._FAST_PATHS``, which runs the code of before stop 79), over its options;
* the CNN classifier's shared convolution of the parts, and the LSTM classifier's padded read, likewise;
* where each fast path is taken and where not (the other calls keep their checks and errors).

float64 comparisons are exact up to rounding (1e-10); float32 is held to the float64 result. Gradients are taken
through smooth losses, and the float32 checks of whole layers use GELU or eval mode: with ReLU, an input within float
rounding of 0 may fall on either side of the kink in two forms that round differently (both then differ from float64
by that unit's whole gradient)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import complexorder as co
from complexorder import nn as cnn
from complexorder.models import build_classifier
from complexorder.nn import functional as CF

from conftest import load_benchmark

C128, D64 = torch.complex128, torch.float64


def count_calls(monkeypatch, cls: type, name: str) -> list:
    """A list that gets one entry per call of method ``name`` of ``cls`` (which still runs): was the fast path taken?"""
    calls: list = []
    original = getattr(cls, name)
    monkeypatch.setattr(cls, name, lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


@pytest.fixture(autouse=True)
def parts_for_small_inputs(monkeypatch):
    """The encoder layer runs on the parts from one token on, so that the tests' small inputs take the fast path (by
    default it needs 64 tokens: :func:`test_encoder_layer_keeps_small_and_empty_batches_on_the_straightforward_path`)."""
    import complexorder.nn.transformer as transformer

    monkeypatch.setattr(transformer, "_PARTS_MIN_TOKENS", 1)


@pytest.fixture
def slow(monkeypatch):
    """Run a block with the fast paths switched off: ``with slow(): ...``."""
    import contextlib

    @contextlib.contextmanager
    def off():
        monkeypatch.setattr(CF, "_FAST_PATHS", False)
        try:
            yield
        finally:
            monkeypatch.setattr(CF, "_FAST_PATHS", True)
    return off


def crandn(*shape, dtype=C128, seed=0):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def rel(a: torch.Tensor, b: torch.Tensor, floor: float = 1e-6) -> float:
    """Largest difference relative to the largest entry of ``b``, or to ``floor`` where that is smaller: a gradient
    that is 0 in exact arithmetic (the key bias's under the "real" score: softmax ignores a constant per query) comes
    out as rounding noise of 1e-18 in either form."""
    a, b = torch.as_tensor(a).detach(), torch.as_tensor(b).detach()
    return float((a.to(b.dtype) - b).abs().max() / b.abs().max().clamp_min(floor))


def grads_of(loss_fn, tensors):
    for t in tensors:
        t.grad = None
    out = loss_fn()
    smooth(out).backward()
    return out.detach(), [t.grad.clone() for t in tensors]


def smooth(out: torch.Tensor) -> torch.Tensor:
    """A loss with a gradient that differs from entry to entry (and no kink): each part weighed."""
    weights = torch.linspace(-1.0, 2.0, out.numel(), dtype=out.real.dtype).view(out.shape)
    if out.is_complex():
        return (weights * out.real + weights.flip(-1) * out.imag.square()).sum()
    return (weights * out).sum() + out.square().sum()


# ------------------------------------------------------------------------------------------------- parts helpers


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("bias", ["none", "both", "real only"])
def test_linear_on_the_parts_is_complex_linear(share, bias):
    """Gauss's three real products (two shared) give Eq. 10, values and gradients, in float64 exactly."""
    torch.manual_seed(0)
    z = crandn(3, 4, 6).requires_grad_()
    A = torch.randn(5, 6, dtype=D64, requires_grad=True)
    B = None if share else torch.randn(5, 6, dtype=D64, requires_grad=True)
    c = None if bias == "none" else torch.randn(5, dtype=D64, requires_grad=True)
    d = torch.randn(5, dtype=D64, requires_grad=True) if bias == "both" else None
    leaves = [t for t in (z, A, B, c, d) if t is not None]

    def fast():
        return torch.complex(*CF._linear_parts(*CF._split(z), A, B, c, d))

    out, grads = grads_of(fast, leaves)
    ref, ref_grads = grads_of(lambda: CF.complex_linear(z, A, B, c, d), leaves)
    assert rel(out, ref) < 1e-12
    for g, r in zip(grads, ref_grads):
        assert rel(g, r) < 1e-12
    # Eq. 10 by hand: (Ax - By + c) + i(Bx + Ay + d)
    Bw = A if B is None else B
    cc = torch.zeros(5, dtype=D64) if c is None else c
    dd = cc if d is None else d
    hand = torch.complex(z.real @ A.T - z.imag @ Bw.T + cc, z.real @ Bw.T + z.imag @ A.T + dd)
    assert rel(out, hand) < 1e-12


def test_linear_on_the_parts_in_float32_is_the_float64_result():
    torch.manual_seed(1)
    z = crandn(64, 256, seed=1)
    A, B, c, d = (torch.randn(*s, dtype=D64) / 16 for s in ((128, 256), (128, 256), (128,), (128,)))
    exact = CF.complex_linear(z, A, B, c, d)
    fast = torch.complex(*CF._linear_parts(*CF._split(z.to(torch.complex64)), A.float(), B.float(), c.float(),
                                           d.float()))
    plain = CF.complex_linear(z.to(torch.complex64), A.float(), B.float(), c.float(), d.float())
    assert rel(fast, exact) < 2e-6 and rel(plain, exact) < 2e-6


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("options", [{}, {"padding": 2, "stride": 2}, {"padding": "same", "dilation": 2}])
def test_convolution_on_the_parts_is_complex_conv1d(share, options):
    torch.manual_seed(2)
    x = crandn(2, 4, 11, seed=2).requires_grad_()
    A = torch.randn(3, 4, 3, dtype=D64, requires_grad=True)
    B = None if share else torch.randn(3, 4, 3, dtype=D64, requires_grad=True)
    c = torch.randn(3, dtype=D64, requires_grad=True)
    d = None if share else torch.randn(3, dtype=D64, requires_grad=True)
    leaves = [t for t in (x, A, B, c, d) if t is not None]
    combos: dict = {}
    out, grads = grads_of(lambda: torch.complex(*CF._conv1d_parts(*CF._split(x), A, B, c, d, combos=combos,
                                                                  **options)), leaves)
    ref, ref_grads = grads_of(lambda: CF.complex_conv1d(x, A, B, c, d, **options), leaves)
    assert rel(out, ref) < 1e-12
    for g, r in zip(grads, ref_grads):
        assert rel(g, r) < 1e-12
    assert set(combos) == ({"sum", "difference"} if share else {"sum"})  # kept for the next convolution


@pytest.mark.parametrize("score", CF.ATTENTION_SCORES)
def test_attention_on_the_parts_is_complex_attention(score):
    """Scores, masks (a fully masked query included), weights dropout (the same random numbers) and output."""
    q, k, v = (crandn(2, 3, 5, 4, seed=s).requires_grad_() for s in (3, 4, 5))
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    mask[0, :, :, 3:] = False
    mask[1, :, 2, :] = False  # a query with no key
    for training in (False, True):
        def fast():
            torch.manual_seed(7)
            re, im = CF._attention_parts(CF._split(q), CF._split(k), CF._split(v), mask, 0.3, training, 0.5, score)
            return torch.complex(re, im)

        def plain():
            torch.manual_seed(7)
            return CF.complex_scaled_dot_product_attention(q, k, v, mask, 0.3, training, 0.5, score)[0]

        out, grads = grads_of(fast, [q, k, v])
        ref, ref_grads = grads_of(plain, [q, k, v])
        assert rel(out, ref) < 1e-12
        assert out[1, :, 2].abs().max() == 0
        for g, r in zip(grads, ref_grads):
            assert rel(g, r) < 1e-12


def test_dropout_on_the_parts_draws_complex_dropouts_mask():
    z = crandn(4, 6, 8)
    torch.manual_seed(3)
    ref = CF.complex_dropout(z, 0.4, True)
    torch.manual_seed(3)
    re, im = CF._dropout_parts(0.4, True, *CF._split(z))
    assert torch.equal(torch.complex(re, im), ref)
    re, im = z.real, z.imag
    assert CF._dropout_parts(0.4, False, re, im)[0] is re  # eval: nothing drawn, nothing copied


def test_layer_norm_on_the_parts_is_complex_layer_norm():
    z = crandn(3, 5, 8).requires_grad_()
    w = torch.randn(2, 8, dtype=D64, requires_grad=True)
    b = torch.randn(2, 8, dtype=D64, requires_grad=True)
    out, grads = grads_of(lambda: torch.complex(*CF._layer_norm_parts(*CF._split(z), (8,), w, b, 1e-5)), [z, w, b])
    ref, ref_grads = grads_of(lambda: CF.complex_layer_norm(z, (8,), w, b, 1e-5), [z, w, b])
    assert rel(out, ref) < 1e-12
    for g, r in zip(grads, ref_grads):
        assert rel(g, r) < 1e-12


# ------------------------------------------------------------------------------------- the Transformer encoder layer


def layer_grads(layer, src, call, slow_paths, slow=None):
    """Output and gradients (input and every parameter) of ``call(layer, src)``, fast or slow, dropout seeded."""
    leaves = [src] + list(layer.parameters())

    def run():
        torch.manual_seed(11)
        return call(layer, src)

    if slow_paths:
        with slow():
            return grads_of(run, leaves)
    return grads_of(run, leaves)


LAYER_CASES = {
    "default": ({}, {}),
    "norm_first": ({"norm_first": True}, {}),
    "batch_first False": ({"batch_first": False}, {}),
    "shared weights": ({"share_weights": True, "share_ffn_weights": True}, {}),
    "real score": ({"attention_score": "real"}, {}),
    "bilinear score": ({"attention_score": "bilinear"}, {}),
    "gelu": ({"activation": "gelu"}, {}),
    "identity (not element-wise)": ({"activation": "identity"}, {}),
    "in-place ReLU module": ({"activation": nn.ReLU(inplace=True)}, {}),
    "padding mask": ({}, {"src_key_padding_mask": "padding"}),
    "causal": ({}, {"is_causal": True}),
    "mask [L, L] and padding": ({}, {"src_mask": "square", "src_key_padding_mask": "padding"}),
    "mask [B * H, L, L]": ({}, {"src_mask": "per head"}),
}


def masks(kind, batch, length, heads):
    gen = torch.Generator().manual_seed(5)
    if kind == "padding":
        mask = torch.zeros(batch, length, dtype=torch.bool)
        mask[0, length - 2:] = True
        mask[1, :] = True  # a sequence of padding only: its queries see no key
        return mask
    if kind == "square":
        return torch.rand(length, length, generator=gen) < 0.3
    return torch.rand(batch * heads, length, length, generator=gen) < 0.3


def encoder_call(options):
    def call(layer, src):
        kwargs = {}
        for name, value in options.items():
            if isinstance(value, str):
                b, length = (src.shape[0], src.shape[1]) if layer.self_attn.batch_first else (src.shape[1],
                                                                                              src.shape[0])
                value = masks(value, b, length, layer.self_attn.num_heads)
            kwargs[name] = value
        return layer(src, **kwargs)
    return call


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_encoder_layer_on_the_parts_is_the_layer(case, training, slow, monkeypatch):
    """float64: the fast path gives the straightforward layer's output and every gradient to rounding, in training
    too (the same dropout masks, drawn in the same order)."""
    built, options = LAYER_CASES[case]
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12, dropout=0.2, dtype=D64, **built).train(training)
    batch_first = built.get("batch_first", True)
    src = crandn(*((3, 5, 8) if batch_first else (5, 3, 8)), seed=6).requires_grad_()
    calls = count_calls(monkeypatch, cnn.ComplexTransformerEncoderLayer, "_forward_parts")
    out, grads = layer_grads(layer, src, encoder_call(options), False)
    assert calls, "the fast path was not taken"
    ref, ref_grads = layer_grads(layer, src, encoder_call(options), True, slow)
    assert len(calls) == 1
    assert rel(out, ref) < 1e-10
    for g, r in zip(grads, ref_grads):
        assert rel(g, r) < 1e-10


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_on_the_parts_in_float32_is_the_float64_layer(norm_first, slow):
    """Table 2's sizes: the float32 fast path stays as close to the float64 layer as the float32 straightforward
    path does (GELU: no kink for rounding to flip)."""
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(64, 8, 128, dropout=0.1, activation="gelu", norm_first=norm_first)
    layer64 = cnn.ComplexTransformerEncoderLayer(64, 8, 128, dropout=0.1, activation="gelu", norm_first=norm_first,
                                                 dtype=D64)
    layer64.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    src64 = crandn(8, 20, 64, seed=8)
    call = encoder_call({"src_key_padding_mask": "padding"})
    ref, ref_grads = layer_grads(layer64, src64.clone().requires_grad_(), call, True, slow)
    fast, fast_grads = layer_grads(layer, src64.to(torch.complex64).requires_grad_(), call, False)
    plain, plain_grads = layer_grads(layer, src64.to(torch.complex64).requires_grad_(), call, True, slow)
    assert rel(fast, ref) < 5e-6 and rel(plain, ref) < 5e-6
    for f, p, r in zip(fast_grads, plain_grads, ref_grads):
        assert rel(f, r) < 3e-5 and rel(p, r) < 3e-5


def test_encoder_layer_on_the_parts_supports_a_gradient_penalty(slow):
    """Plain autograd throughout: create_graph=True works as on the straightforward path."""
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12, dropout=0.0, activation="gelu", dtype=D64)
    src = crandn(2, 4, 8, seed=9).requires_grad_()

    def penalty():
        out = layer(src)
        (g,) = torch.autograd.grad(smooth(out), src, create_graph=True)
        return g.abs().square().sum()

    fast = torch.autograd.grad(penalty(), list(layer.parameters()))
    with slow():
        ref = torch.autograd.grad(penalty(), list(layer.parameters()))
    for f, r in zip(fast, ref):
        assert rel(f, r) < 1e-10


def test_encoder_stack_and_transformer_classifier_take_the_fast_path(slow, monkeypatch):
    calls = count_calls(monkeypatch, cnn.ComplexTransformerEncoderLayer, "_forward_parts")
    torch.manual_seed(0)
    model = build_classifier("transformer", co.build_embedding("complex-order", 50, 16, padding_idx=0), 3, nhead=2,
                             dim_feedforward=24, num_layers=2, dropout=0.1)
    tokens = torch.randint(1, 50, (4, 7), generator=torch.Generator().manual_seed(1))
    tokens[0, 4:] = 0
    torch.manual_seed(2)
    logits = model(tokens)
    assert len(calls) == 2
    with slow():
        torch.manual_seed(2)
        ref = model(tokens)
    torch.testing.assert_close(logits, ref, rtol=1e-5, atol=1e-6)


def hooked(layer):
    seen = []
    layer.self_attn.register_forward_hook(lambda mod, args, out: seen.append(out))
    return seen


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("case", ["unbatched", "float mask", "complex32", "autocast", "hook", "float64 weights",
                                  "replaced activation"])
def test_encoder_layer_takes_the_straightforward_path_where_the_fast_one_does_not_apply(case, monkeypatch):
    calls = count_calls(monkeypatch, cnn.ComplexTransformerEncoderLayer, "_forward_parts")
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12, dropout=0.0)
    src = crandn(2, 4, 8, dtype=torch.complex64)
    kwargs: dict = {}
    if case == "unbatched":
        src = src[0]
    elif case == "float mask":
        kwargs["src_mask"] = nn.Transformer.generate_square_subsequent_mask(4)
    elif case == "complex32":
        layer, src = layer.half(), src.to(torch.complex32)
    elif case == "hook":
        seen = hooked(layer)
    elif case == "replaced activation":
        layer.ffn.activation = nn.Identity()  # not a SplitActivation: the module's own forward must run
    if case == "float64 weights":
        layer = layer.double()
        with pytest.raises(TypeError, match="input is torch.complex64 but the layer's weights are torch.float64"):
            layer(src)
    elif case == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert layer(src).dtype == torch.complex64
    else:
        layer(src, **kwargs)
    assert not calls
    if case == "hook":
        assert len(seen) == 1  # the hook ran: the sub-layers were called


def test_encoder_layer_bad_masks_keep_their_errors():
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12)
    src = crandn(2, 4, 8, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"src_key_padding_mask must be \[B = 2, Lk\], got \(3, 4\)"):
        layer(src, src_key_padding_mask=torch.zeros(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"src_mask must be \[4, 4\]"):
        layer(src, src_mask=torch.zeros(4, 5, dtype=torch.bool))


def test_encoder_layer_state_dict_is_unchanged():
    """The fast path reads the same parameters: the state dict's keys and shapes are those of before."""
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12)
    keys = {k: tuple(v.shape) for k, v in layer.state_dict().items()}
    assert keys["self_attn.q_proj.weight_real"] == (8, 8) and keys["norm1.weight"] == (2, 8)
    assert len(keys) == 28 and "self_attn.in_proj_weight" not in keys


# ------------------------------------------------------------------------------------------------- the classifiers


def classifier_grads(model, tokens, labels, seed=3):
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    logits = model(tokens)
    F.cross_entropy(logits, labels).backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def tokens_and_labels(batch=4, length=9, vocab=40, short=(5, 1)):
    gen = torch.Generator().manual_seed(4)
    tokens = torch.randint(1, vocab, (batch, length), generator=gen)
    for row, n in enumerate(short):
        tokens[row, n:] = 0
    return tokens, torch.randint(0, 3, (batch,), generator=gen)


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("training", [False, True])
def test_cnn_on_the_parts_is_the_cnn(share, training, slow, monkeypatch):
    calls = count_calls(monkeypatch, co.models.CNNClassifier, "_convolve_parts")
    torch.manual_seed(0)
    model = build_classifier("cnn", co.build_embedding("complex-order", 40, 6, padding_idx=0, dtype=D64), 3,
                             filters=4, share_weights=share).train(training)
    tokens, labels = tokens_and_labels()
    out, grads = classifier_grads(model, tokens, labels)
    assert calls
    with slow():
        ref, ref_grads = classifier_grads(model, tokens, labels)
    assert len(calls) == 1
    assert rel(out, ref) < 1e-10
    assert grads.keys() == ref_grads.keys()
    for name in grads:
        assert rel(grads[name], ref_grads[name]) < 1e-10, name


def test_cnn_on_the_parts_in_float32_is_the_float64_cnn(slow):
    torch.manual_seed(0)
    model = build_classifier("cnn", co.build_embedding("complex-order", 40, 32, padding_idx=0), 3, filters=16).eval()
    model64 = build_classifier("cnn", co.build_embedding("complex-order", 40, 32, padding_idx=0, dtype=D64), 3,
                               filters=16).eval()
    model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    tokens, labels = tokens_and_labels(length=12)
    ref, ref_grads = classifier_grads(model64, tokens, labels)
    fast, fast_grads = classifier_grads(model, tokens, labels)
    assert rel(fast, ref) < 2e-6
    for name in ref_grads:
        assert rel(fast_grads[name], ref_grads[name]) < 2e-5, name


def test_cnn_takes_the_convolutions_where_the_fast_path_does_not_apply(monkeypatch):
    calls = count_calls(monkeypatch, co.models.CNNClassifier, "_convolve_parts")
    tokens, _ = tokens_and_labels()
    real = build_classifier("cnn", co.build_embedding("tpe", 40, 6, padding_idx=0), 3, filters=4)
    real(tokens)
    model = build_classifier("cnn", co.build_embedding("complex-order", 40, 6, padding_idx=0), 3, filters=4)
    seen = []
    model.convs[1].register_forward_hook(lambda mod, args, out: seen.append(out))
    model(tokens)
    assert not calls and len(seen) == 1
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(tokens)
    assert not calls


@pytest.mark.parametrize("embedding", ["complex-order", "tpe"])
@pytest.mark.parametrize("training", [False, True])
def test_lstm_reads_the_padded_batch_as_the_packed_one(embedding, training, slow, monkeypatch):
    """One forward layer: the state at each row's last token of the padded batch is the packed batch's h_n (a row
    of padding only reads its first slot, as its clamped length 1 says), values and gradients."""
    torch.manual_seed(0)
    model = build_classifier("lstm", co.build_embedding(embedding, 40, 6, padding_idx=0, dtype=D64), 3,
                             hidden=5).train(training)
    tokens, labels = tokens_and_labels(batch=6, short=(7,))  # 5 of 6 rows full: the padded read is taken
    tokens[5, :] = 0
    packed = []
    monkeypatch.setattr("complexorder.models.lstm.pack_padded_sequence",
                        lambda *a, **k: packed.append(1) or nn.utils.rnn.pack_padded_sequence(*a, **k))
    lstm_calls = []
    model.lstm.forward = (lambda original: lambda *a, **k: lstm_calls.append(k) or original(*a, **k))(
        model.lstm.forward)
    out, grads = classifier_grads(model, tokens, labels)
    assert lstm_calls and "lengths" not in lstm_calls[-1] and not packed
    with slow():
        ref, ref_grads = classifier_grads(model, tokens, labels)
    assert ("lengths" in lstm_calls[-1]) if embedding == "complex-order" else packed
    assert rel(out, ref) < 1e-10
    for name in ref_grads:
        assert rel(grads[name], ref_grads[name]) < 1e-10, name


@pytest.mark.parametrize("options", [{"bidirectional": True}, {"num_layers": 2}, "much padding", "hook"])
def test_lstm_packs_where_the_padded_read_does_not_apply(options, monkeypatch):
    lengths_seen = []
    torch.manual_seed(0)
    build = {} if isinstance(options, str) else options
    model = build_classifier("lstm", co.build_embedding("complex-order", 40, 6, padding_idx=0), 3, hidden=5,
                             **build)
    original = model.lstm.forward
    model.lstm.forward = lambda *a, **k: lengths_seen.append(k.get("lengths")) or original(*a, **k)
    tokens, _ = tokens_and_labels(batch=4, short=(7, 2, 3) if options == "much padding" else (7,))
    if options == "hook":
        model.lstm.register_forward_hook(lambda mod, args, out: None)
    model(tokens)
    assert lengths_seen and lengths_seen[-1] is not None  # packed: the LSTM got the lengths


def test_switching_the_fast_paths_off_restores_the_old_code_paths(slow):
    """benchmarks/layer_speed.py's default "old" form: with the switch off no fast path runs."""
    with slow():
        assert not CF._fast_paths_enabled()
        layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12)
        assert not layer._parts_ok(crandn(2, 4, 8, dtype=torch.complex64), None, None)
    assert CF._fast_paths_enabled()
    assert layer._parts_ok(crandn(2, 4, 8, dtype=torch.complex64), None, None)


def test_layer_speed_benchmark_times_both_forms_and_rejects_bad_arguments(capsys):
    bench = load_benchmark("layer_speed.py", "layer_speed_benchmark")
    src = Path(co.__file__).resolve().parents[1]  # this package, loaded beside itself as the "old" one
    bench.main(["--models", "transformer,lstm,cnn", "--shapes", "4x6", "--vocab", "60", "--rounds", "5",
                "--old-src", str(src)])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| transformer") or line.startswith("| lstm")
            or line.startswith("| cnn")]
    assert len(rows) == 3 and "old: the package in" in out
    assert CF._FAST_PATHS  # switched back on
    for argv in (["--models", "rnn"], ["--shapes", "64"], ["--rounds", "3"]):
        with pytest.raises(SystemExit):
            bench.main(argv)


def test_encoder_layer_keeps_small_and_empty_batches_on_the_straightforward_path(monkeypatch):
    # below 64 tokens the parts cost more than they save (d_model 256: 0.94-0.96x at 8 tokens); an empty batch could
    # not be reshaped on the parts ("cannot reshape tensor of 0 elements")
    import complexorder.nn.transformer as transformer

    monkeypatch.setattr(transformer, "_PARTS_MIN_TOKENS", 64)
    calls = count_calls(monkeypatch, cnn.ComplexTransformerEncoderLayer, "_forward_parts")
    torch.manual_seed(0)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 12, dropout=0.0)
    for shape in ((0, 5, 8), (3, 0, 8), (3, 5, 8)):
        assert layer(torch.zeros(shape, dtype=torch.complex64)).shape == shape
    assert not calls
    layer(crandn(8, 8, 8, dtype=torch.complex64))  # 64 tokens
    assert calls == [1]
