"""torch.compile(fullgraph=True): the embeddings trace as the plain equation (the native kernel is a ctypes call dynamo
cannot trace), so a whole classifier compiles to one graph, with the outputs and gradients of eager mode. The
"aot_eager" backend runs dynamo and AOTAutograd without generating C++ (no compiler needed, seconds not minutes)."""

import pytest
import torch

import complexorder as co
from complexorder.models import build_classifier


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def tokens():
    t = torch.randint(1, 100, (4, 10), generator=torch.Generator().manual_seed(0))
    t[0, 7:] = 0  # padding
    return t


@pytest.mark.parametrize("name", ["complex-order", "complex-vanilla"])
def test_embedding_compiles_to_one_graph_with_eager_outputs_and_gradients(name):
    torch.manual_seed(0)
    emb = co.build_embedding(name, 100, 16, padding_idx=0)
    compiled = torch.compile(emb, fullgraph=True, backend="aot_eager")
    out = compiled(tokens())
    (out.real.square() + 3 * out.imag).sum().backward()
    grads = {n: p.grad.clone() for n, p in emb.named_parameters()}
    emb.zero_grad(set_to_none=True)
    ref = emb(tokens())  # eager: the native kernel where it is built
    (ref.real.square() + 3 * ref.imag).sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    for n, p in emb.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, rtol=1e-5, atol=1e-5)
    assert grads["amplitude"][0].abs().sum() == 0  # the padding row gets no gradient in either


@pytest.mark.parametrize("arch", ["fasttext", "cnn", "transformer"])
def test_complex_classifiers_compile_to_one_graph(arch):
    torch.manual_seed(0)
    options = {"nhead": 2, "dim_feedforward": 16} if arch == "transformer" else {}
    model = build_classifier(arch, co.build_embedding("complex-order", 100, 16, padding_idx=0), 2, **options).eval()
    torch.testing.assert_close(torch.compile(model, fullgraph=True, backend="aot_eager")(tokens()), model(tokens()),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_complex_lstm_trains_compiled_as_eager_and_compiles_whole_without_gradients(bidirectional):
    """torch.lstm's traced backward fails under aot_autograd (and inductor), so with gradients on the kernel runs
    outside the graph, as dynamo runs torch.nn.LSTM; the outputs and gradients are eager mode's. Without gradients
    it traces, and fullgraph=True works."""
    from complexorder.nn import ComplexLSTM
    torch.manual_seed(0)
    lstm = ComplexLSTM(8, 4, num_layers=2, batch_first=True, bidirectional=bidirectional)
    x = torch.randn(3, 6, 8, dtype=torch.complex64)
    out, (h, _) = torch.compile(lstm, backend="aot_eager")(x)
    (out.abs().sum() + h.real.sum()).backward()
    grads = {n: p.grad.clone() for n, p in lstm.named_parameters()}
    lstm.zero_grad(set_to_none=True)
    ref, (ref_h, _) = lstm(x)
    (ref.abs().sum() + ref_h.real.sum()).backward()
    torch.testing.assert_close(out, ref)
    for n, p in lstm.named_parameters():
        torch.testing.assert_close(grads[n], p.grad)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(lstm, fullgraph=True, backend="aot_eager")(x)[0], ref)
    torch._dynamo.reset()  # frozen weights, an input needing no gradient: nothing to record, one graph too
    lstm.requires_grad_(False)
    torch.testing.assert_close(torch.compile(lstm, fullgraph=True, backend="aot_eager")(x)[0], ref.detach())


def test_importing_the_package_does_not_load_dynamo():
    """Stop 78: a module-level torch.compiler.disable imported torch._dynamo, inductor and sympy with the package
    (about 1.2 s, and a directory made under /tmp); the disabled kernel is now made at the first compiled call."""
    import subprocess
    import sys

    code = "import sys, complexorder, complexorder.nn; print('torch._dynamo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_compiled_lstm_trains_without_recompiling():
    """A review of stop 78: the lazily made disabled kernel was a module global dynamo guarded on, so the second
    compiled training step recompiled (and failed under the "fail_on_recompile" stance)."""
    from complexorder.nn import ComplexLSTM

    if not hasattr(torch.compiler, "set_stance"):
        pytest.skip("torch.compiler.set_stance is torch >= 2.6")
    compiled = torch.compile(ComplexLSTM(8, 4, batch_first=True), backend="aot_eager")
    x = torch.randn(3, 6, 8, dtype=torch.complex64)
    compiled(x)[0].abs().sum().backward()
    torch.compiler.set_stance("fail_on_recompile")
    try:
        compiled(x)[0].abs().sum().backward()
    finally:
        torch.compiler.set_stance("default")
