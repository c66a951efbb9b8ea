"""Autocast, half precision and in-place activations in the complex layers (audit 79).

- Under ``torch.autocast`` (the CPU's default is bfloat16, which has no complex dtype) the shared-weight layers and
  the LSTM joined autocast's bfloat16 parts with ``torch.complex`` and crashed, while the unshared layers returned
  complex64. Every layer now returns complex64 under autocast (bfloat16 or float16), shared or not.
- ``.half()`` layers crashed where they ran a complex matmul (``addmm`` has no ComplexHalf kernel on the CPU), while
  the dtype check's message suggested ``.to(torch.float16)``: they now compute complex32 through real products.
- An in-place activation (``nn.ReLU(inplace=True)``) ran on ``input.real`` and then ``input.imag``, two views of
  one tensor, and broke the backward pass.
- ``complex_conv1d`` with shared weights stacked an unbatched ``[C_in, L]`` input along its channels.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import complexorder.nn as cnn
import complexorder.nn.functional as CF

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

AUTOCAST_DTYPES = [torch.bfloat16, torch.float16]


def crandn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64)


def unshared_twin(shared: nn.Module, unshared: nn.Module) -> nn.Module:
    """``unshared`` loaded with ``shared``'s weights, each missing ``*_imag`` a copy of its ``*_real``: the same
    function (``B = A``, ``d = c``) computed by the unshared code."""
    weights = shared.state_dict()
    unshared.load_state_dict({name: weights[name] if name in weights else weights[name.replace("_imag", "_real")]
                              for name in unshared.state_dict()})
    return unshared


def first(out):
    return out[0] if isinstance(out, tuple) else out


def layer_pairs():
    """(name, shared layer, the same function unshared, input) for every layer with ``share_weights``."""
    torch.manual_seed(0)
    pairs = [
        ("linear", cnn.ComplexLinear(8, 6, share_weights=True), cnn.ComplexLinear(8, 6), crandn(2, 5, 8)),
        ("conv", cnn.ComplexConv1d(8, 6, 3, share_weights=True), cnn.ComplexConv1d(8, 6, 3), crandn(2, 8, 7)),
        ("attention", cnn.ComplexMultiheadAttention(8, 2, share_weights=True), cnn.ComplexMultiheadAttention(8, 2),
         crandn(2, 5, 8)),
        ("encoder layer", cnn.ComplexTransformerEncoderLayer(8, 2, 16, 0.0, share_weights=True, share_ffn_weights=True),
         cnn.ComplexTransformerEncoderLayer(8, 2, 16, 0.0), crandn(2, 5, 8)),
        ("lstm", cnn.ComplexLSTM(8, 4, 2, batch_first=True, bidirectional=True, share_weights=True),
         cnn.ComplexLSTM(8, 4, 2, batch_first=True, bidirectional=True), crandn(2, 5, 8)),
    ]
    return [(name, shared, unshared_twin(shared, unshared), z) for name, shared, unshared, z in pairs]


@pytest.mark.parametrize("dtype", AUTOCAST_DTYPES)
def test_under_autocast_shared_and_unshared_layers_return_complex64_and_agree(dtype):
    """Under autocast the shared layers crashed in torch.complex (bfloat16 parts) or returned complex32 that the next
    layer could not take (float16); they now return complex64 as the unshared ones, the float32 result to
    autocast's precision, and train (the backward pass runs into the float32 parameters)."""
    for name, shared, unshared, z in layer_pairs():
        exact = first(shared(z)).detach()
        for layer in (shared, unshared):
            with torch.autocast("cpu", dtype=dtype):
                out = first(layer(z))
            assert out.dtype == torch.complex64, (name, out.dtype)
            torch.testing.assert_close(out.detach(), exact, atol=2e-2, rtol=2e-2, msg=name)  # bfloat16: 8e-3
            out.abs().sum().backward()
            grads = [p.grad for p in layer.parameters()]
            assert all(g is not None and g.dtype == torch.float32 and g.isfinite().all() for g in grads), name


def test_autocast_mixes_run_or_give_the_one_line_dtype_error():
    """The dtype check was skipped under autocast, so a mix met torch's errors (``mat1 and mat2 must have the same
    dtype``, ``Unexpected floating ScalarType in at::autocast::prioritize``). Half, single and bfloat16 now mix
    (complex64 out); float64 against any of them is the layers' own one-line error."""
    torch.manual_seed(0)
    z = crandn(2, 5, 8)
    layers = [cnn.ComplexLinear(8, 4), cnn.ComplexLinear(8, 4, share_weights=True), cnn.ComplexLayerNorm(8),
              cnn.ComplexMultiheadAttention(8, 2), cnn.ComplexLSTM(8, 4, batch_first=True)]
    for layer in layers:
        exact = first(layer(z)).detach()
        for weights, input in [(torch.float32, torch.complex32), (torch.float16, torch.complex64),
                               (torch.float16, torch.complex32), (torch.bfloat16, torch.complex64)]:
            for dtype in AUTOCAST_DTYPES:
                with torch.autocast("cpu", dtype=dtype):
                    out = first(copy.deepcopy(layer).to(weights)(z.to(input)))
                assert out.dtype == torch.complex64, (layer, weights, input, dtype)
                torch.testing.assert_close(out, exact, atol=5e-2, rtol=5e-2)
        with torch.autocast("cpu"), pytest.raises(TypeError, match=r"^input is torch\.complex128 but the layer's "
                                                                   r"weights are torch\.float32: [^\n]*$"):
            layer(z.to(torch.complex128))


def half_layers():
    torch.manual_seed(0)
    return [("linear", cnn.ComplexLinear(8, 6), crandn(2, 5, 8)),
            ("linear, bias=False", cnn.ComplexLinear(8, 6, bias=False), crandn(2, 5, 8)),
            ("shared linear", cnn.ComplexLinear(8, 6, share_weights=True), crandn(2, 5, 8)),
            ("conv", cnn.ComplexConv1d(8, 6, 3), crandn(2, 8, 7)),
            *[(f"attention, {score}", cnn.ComplexMultiheadAttention(8, 2, score=score), crandn(2, 5, 8))
              for score in CF.ATTENTION_SCORES],
            ("encoder layer", cnn.ComplexTransformerEncoderLayer(8, 2, 16, 0.0), crandn(2, 5, 8)),
            ("decoder layer", cnn.ComplexTransformerDecoderLayer(8, 2, 16, 0.0), crandn(2, 5, 8)),
            ("lstm", cnn.ComplexLSTM(8, 4, batch_first=True), crandn(2, 5, 8))]


def test_half_precision_layers_compute_complex32_close_to_float32_and_train():
    """``.half()`` layers (as the dtype check suggests for a complex32 input) crashed in ``addmm`` for ComplexHalf;
    they now give complex32, the float32 layer's result to half precision, and a half-precision backward pass."""
    for name, layer, z in half_layers():
        half, z16 = layer.half(), z.to(torch.complex32).requires_grad_()
        ref = copy.deepcopy(half).float()  # the same (rounded) weights, in float32
        z32 = z16.detach().to(torch.complex64).requires_grad_()
        call = (lambda m, x: m(x, x)) if isinstance(layer, cnn.ComplexTransformerDecoderLayer) else (lambda m, x: m(x))
        out = first(call(half, z16))
        assert out.dtype == torch.complex32, name
        exact = first(call(ref, z32))
        torch.testing.assert_close(out.to(torch.complex64), exact, atol=1e-2, rtol=1e-2, msg=name)
        out.real.float().sum().backward()  # complex32 has no sum kernel: the loss is taken in float32
        exact.real.sum().backward()
        assert z16.grad is not None and z16.grad.dtype == torch.complex32
        torch.testing.assert_close(z16.grad.to(torch.complex64), z32.grad, atol=1e-2, rtol=1e-2, msg=name)
        for (pname, p), p32 in zip(half.named_parameters(), ref.parameters()):
            assert p.grad is not None and p.grad.dtype == torch.float16, (name, pname)
            torch.testing.assert_close(p.grad.float(), p32.grad, atol=1e-2, rtol=1e-2, msg=f"{name}: {pname}")


def test_an_in_place_activation_gives_the_out_of_place_values_and_gradients():
    """``nn.ReLU(inplace=True)`` on input.real, then on input.imag (views of one tensor) broke the backward pass of
    SplitActivation and of the Transformer layers (torch.nn.TransformerEncoderLayer takes it); it now acts on a copy
    of the parts and leaves the input alone. Whatever activation, each part is still transformed on its own."""
    torch.manual_seed(0)
    z = crandn(3, 4, 8)
    for act in (nn.ReLU(inplace=True), nn.LeakyReLU(0.1, inplace=True), lambda t: F.relu_(t)):
        base = z.clone().requires_grad_()
        x = base * 1  # a non-leaf, as a layer's output
        kept = x.detach().clone()
        out = cnn.SplitActivation(act)(x)
        assert torch.equal(x.detach(), kept)  # the input is left as it was
        out.abs().sum().backward()
        ref_base = z.clone().requires_grad_()
        ref = torch.complex(F.leaky_relu(ref_base.real, 0.1 if isinstance(act, nn.LeakyReLU) else 0.0),
                            F.leaky_relu(ref_base.imag, 0.1 if isinstance(act, nn.LeakyReLU) else 0.0))
        ref.abs().sum().backward()
        assert torch.equal(out.detach(), ref.detach())
        torch.testing.assert_close(base.grad, ref_base.grad)
    for act in ("relu", "gelu", nn.GELU(), torch.tanh, lambda t: torch.softmax(t, -1)):  # each part on its own
        fn = cnn.SplitActivation(act).fn
        torch.testing.assert_close(cnn.SplitActivation(act)(z), torch.complex(fn(z.real), fn(z.imag)))
    torch.manual_seed(1)
    layer = cnn.ComplexTransformerEncoderLayer(8, 2, 16, 0.0, activation=nn.ReLU(inplace=True))
    twin = copy.deepcopy(layer)
    twin.ffn.activation = cnn.SplitActivation("relu")
    outs, grads = [], []
    for module in (layer, twin):
        src = z.clone().requires_grad_()
        out = module(src)
        out.abs().sum().backward()
        outs.append(out.detach())
        grads.append([src.grad, *(p.grad for p in module.parameters())])
    torch.testing.assert_close(outs[0], outs[1], atol=0, rtol=0)
    for g, g_ref in zip(*grads):
        torch.testing.assert_close(g, g_ref)


def test_shared_functional_conv_takes_unbatched_input_as_the_unshared_one():
    """``complex_conv1d(x, w)`` (shared, ``weight_imag=None``) concatenated the parts of an unbatched ``[C_in, L]``
    input along its channels: a wrong channel count gave a result and the right one an error. It is now the batched
    result without its batch dimension, and a wrong channel count is F.conv1d's error, as the unshared path."""
    torch.manual_seed(0)
    w, b = torch.randn(3, 4, 3), torch.randn(3)
    x = crandn(4, 10)
    for bias_imag in (None, torch.randn(3)):
        out = CF.complex_conv1d(x, w, None, b, bias_imag, padding=1)
        assert out.shape == (3, 10)
        torch.testing.assert_close(out, CF.complex_conv1d(x.unsqueeze(0), w, None, b, bias_imag, padding=1)[0])
        torch.testing.assert_close(out, CF.complex_conv1d(x, w, w, b, b if bias_imag is None else bias_imag,
                                                          padding=1))
    for weight_imag in (None, w):
        with pytest.raises(RuntimeError, match="to have 4 channels, but got 2 channels instead"):
            CF.complex_conv1d(crandn(2, 10), w, weight_imag)
    conv = cnn.ComplexConv1d(4, 3, 3, share_weights=True)
    torch.testing.assert_close(conv(x), CF.complex_conv1d(x, conv.weight_real, None, conv.bias_real))


@pytest.mark.parametrize("make", [lambda: (lambda t: torch.softmax(t, 0)), lambda: (lambda t: t / t.abs().max()),
                                  lambda: torch.nn.PReLU(4), lambda: torch.nn.BatchNorm1d(4)],
                         ids=["softmax-dim0", "global-max", "prelu-per-channel", "batchnorm"])
def test_any_activation_sees_each_part_alone_with_the_inputs_shape(make):
    # sigma(Re z) + i sigma(Im z): an activation that is not element-wise (over dim 0, the whole tensor, a channel)
    # is called on each part with the input's shape, not on the two parts stacked
    torch.manual_seed(0)
    z = torch.randn(3, 4, dtype=torch.complex64)
    act = make()
    expected = torch.complex(act(z.real.clone()), act(z.imag.clone()))
    shapes = []
    if isinstance(act, torch.nn.Module):
        act.register_forward_hook(lambda module, args, out: shapes.append(tuple(args[0].shape)))
    assert torch.allclose(CF.split_activation(z, act), expected, atol=1e-6)
    if shapes:
        assert shapes == [(3, 4), (3, 4)]


@pytest.mark.parametrize("embedding", ["none", "pe", "tpe", "complex-order"])
@pytest.mark.parametrize("lengths", [(7, 7, 6, 7), (7, 2, 3, 1)])  # read padded / packed
def test_the_lstm_classifier_trains_under_a_float16_cpu_autocast(embedding, lengths):
    """The real embeddings' torch.nn.LSTM failed under a float16 autocast on the CPU ("could not create a primitive
    descriptor for the LSTM forward propagation primitive", oneDNN has no float16 LSTM on most processors); the
    complex LSTM already ran in float32 there, and now the real one does too (stop 80)."""
    from complexorder import build_embedding
    from complexorder.models import build_classifier

    torch.manual_seed(0)
    model = build_classifier("lstm", build_embedding(embedding, 30, 8, padding_idx=0), 2, hidden=8).eval()
    tokens = torch.randint(1, 30, (4, 7))
    for row, n in enumerate(lengths):
        tokens[row, n:] = 0
    labels = torch.tensor([0, 1, 1, 0])
    exact = torch.nn.functional.cross_entropy(model(tokens), labels)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    assert abs(loss.item() - exact.item()) < 0.01 * exact.item()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)


def test_bfloat16_autocast_runs_the_lstm_in_float32_where_the_cpu_kernel_has_no_bfloat16(monkeypatch):
    """Stop 88: on an AVX2 processor oneDNN's LSTM has no bfloat16 form, so a bfloat16 autocast (the CPU's default)
    failed in ComplexLSTM and the LSTM classifier ("could not create a primitive descriptor", torch.nn.LSTM's error
    too). There the kernel now runs in float32 with autocast off, giving exactly the float32 result; where it has a
    bfloat16 form it runs as autocast has it. Both branches are chosen here by hand, whatever this processor has."""
    from complexorder.nn import recurrent

    x = torch.zeros(2, 3, 4)
    monkeypatch.setattr(recurrent, "_CPU_LSTM_HAS_BFLOAT16", False)
    assert recurrent._lstm_kernel_dtype(x) is None  # no autocast
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert recurrent._lstm_kernel_dtype(x) == torch.float32
        assert recurrent._lstm_kernel_dtype(x.double()) == torch.float64
    with torch.autocast("cpu", dtype=torch.float16):
        assert recurrent._lstm_kernel_dtype(x) == torch.float32
    torch.manual_seed(0)
    lstm, z = cnn.ComplexLSTM(4, 5, batch_first=True), crandn(2, 3, 4)
    expected, (h_expected, _) = lstm(z)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, (h, _) = lstm(z)
    assert out.dtype == torch.complex64 and torch.equal(out, expected) and torch.equal(h, h_expected)
    monkeypatch.setattr(recurrent, "_CPU_LSTM_HAS_BFLOAT16", True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert recurrent._lstm_kernel_dtype(x) is None
    with torch.autocast("cpu", dtype=torch.float16):
        assert recurrent._lstm_kernel_dtype(x) == torch.float32


def test_compiled_lstm_under_a_bfloat16_autocast_traces_whole():
    """The bfloat16 check of stop 88 was a torch op returning a bool, which ``torch.compile(fullgraph=True)`` refused
    ("torch.* op returned non-Tensor") on every processor; it is now a constant to dynamo. Without gradients the
    compiled LSTM traces whole and agrees with the eager one, whichever kernel dtype this processor takes."""
    torch.manual_seed(0)
    lstm, z = cnn.ComplexLSTM(4, 5, batch_first=True), crandn(2, 3, 4)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = lstm(z)[0]
        out = torch.compile(lstm, fullgraph=True, backend="eager")(z)[0]
    assert out.dtype == torch.complex64
    torch.testing.assert_close(out, expected)
