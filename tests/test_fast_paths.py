"""Every fast path equals its simple reference (values and gradients), and the benchmark rejects bad names."""

import itertools
import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from complexorder.nn import functional as CF
from complexorder.nn.wave import _cos_sin, complex_order_embedding, complex_order_embedding_reference

from conftest import load_benchmark

D64 = torch.float64
V, D = 9, 6
TABLE = {None: (V, D), "word": (1, D), "dimension": (V, 1)}
POSITIONS = {"per token": (3, 11), "per position": (11,), "broadcast row": (1, 11)}


def load_speed():
    return load_benchmark("speed.py", "speed_benchmark")


def tables(freq_share, amp_share, initial_phase, dtype=D64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    r = torch.randn(TABLE[amp_share], generator=gen, dtype=dtype).requires_grad_()
    w = (torch.rand(TABLE[freq_share], generator=gen, dtype=dtype) * 4 - 2).requires_grad_()
    theta = (torch.rand(V, D, generator=gen, dtype=dtype) * 6 - 3).requires_grad_() if initial_phase else None
    return r, w, theta


def both_paths(tokens, positions, r, w, theta, padding_idx, sparse, loss):
    """Outputs and parameter gradients of the fused path and of the reference."""
    params = [p for p in (r, w, theta) if p is not None]
    results = []
    for fused in (True, False):
        if fused:
            out = complex_order_embedding(tokens, positions, r, w, theta, padding_idx, sparse)
        else:
            out = complex_order_embedding_reference(tokens, positions, r, w, theta, padding_idx, sparse)
        grads = torch.autograd.grad(loss(out), params)
        results.append((out, grads))
    return results, params


def dense(grad):
    return grad.to_dense() if grad.is_sparse else grad


@pytest.mark.parametrize("freq_share,amp_share", list(itertools.product(TABLE, TABLE)))
@pytest.mark.parametrize("initial_phase", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("sparse", [False, True])
def test_fused_equals_reference_for_every_sharing_scheme(freq_share, amp_share, initial_phase, padding_idx, sparse):
    torch.manual_seed(3)
    tokens = torch.randint(0, V, (3, 11))
    tokens[0, 3] = tokens[2, 10] = 2  # padding tokens (when padding_idx=2), also at the last position
    upstream = torch.randn(3, 11, D, dtype=torch.complex128)
    loss = lambda z: (z * upstream.conj()).real.sum()  # noqa: E731
    for pos_name, pos_shape in POSITIONS.items():
        positions = torch.rand(pos_shape, dtype=D64) * 40
        r, w, theta = tables(freq_share, amp_share, initial_phase)
        ((out, grads), (ref_out, ref_grads)), params = both_paths(tokens, positions, r, w, theta, padding_idx,
                                                                    sparse, loss)
        width = max(p.shape[1] for p in (r, w, theta) if p is not None)  # [V, 1] tables only: one dimension
        assert out.dtype == torch.complex128 and out.shape == (3, 11, width)
        assert torch.allclose(out, ref_out, atol=1e-12, rtol=0), pos_name
        for g, ref_g, p in zip(grads, ref_grads, params):
            assert g.shape == p.shape
            assert g.is_sparse == ref_g.is_sparse == (sparse and p.shape[0] == V), pos_name  # [1, D] stay dense
            assert torch.allclose(dense(g), dense(ref_g), atol=1e-10, rtol=0), pos_name


@pytest.mark.parametrize("loss_name", ["real part", "modulus", "view_as_real", "imag slice", "conjugate"])
def test_fused_gradients_for_strided_and_broadcast_upstream_gradients(loss_name):
    """``.sum()`` and slicing hand the backward expanded or strided gradients; results must not change."""
    loss = {"real part": lambda z: z.real.sum(), "modulus": lambda z: z.abs().sum(),
            "view_as_real": lambda z: torch.view_as_real(z).sum(), "imag slice": lambda z: z[:, ::2].imag.sum(),
            "conjugate": lambda z: (z.conj() * torch.linspace(-1, 1, D, dtype=D64) * 1j).real.sum()}
    tokens = torch.randint(0, V, (3, 11), generator=torch.Generator().manual_seed(1))
    r, w, theta = tables(None, None, True)
    ((out, grads), (_, ref_grads)), _ = both_paths(tokens, torch.arange(11, dtype=D64), r, w, theta, 0, False,
                                                   loss[loss_name])
    for g, ref_g in zip(grads, ref_grads):
        assert torch.allclose(g, ref_g, atol=1e-10, rtol=0)


def test_int32_tokens_and_float32_tables_match_the_float64_reference():
    tokens = torch.randint(0, V, (4, 7), generator=torch.Generator().manual_seed(2))
    tokens[1, 2] = 0
    r64, w64, t64 = tables(None, "dimension", True)
    pos = torch.arange(7, dtype=D64) * 13.0  # phases up to ~200 rad
    r32, w32, t32 = (p.detach().float().requires_grad_() for p in (r64, w64, t64))
    for sparse in (False, True):
        out32 = complex_order_embedding(tokens.int(), pos.float(), r32, w32, t32, 0, sparse)
        ref = complex_order_embedding_reference(tokens, pos, r64, w64, t64, 0)
        assert out32.dtype == torch.complex64
        assert torch.allclose(out32.to(torch.complex128), ref, atol=2e-4, rtol=0)
        g32 = torch.autograd.grad(out32.real.sum() + 2 * out32.imag.sum(), (r32, w32, t32))
        g64 = torch.autograd.grad(ref.real.sum() + 2 * ref.imag.sum(), (r64, w64, t64))
        for a, b in zip(g32, g64):
            assert torch.allclose(dense(a).double(), b, atol=2e-3, rtol=1e-4)


def test_sparse_gradients_skip_padding_and_sum_repeated_words_like_nn_embedding():
    r, w, _ = tables(None, None, False)
    tokens = torch.tensor([[4, 0, 4, 0, 7]])
    out = complex_order_embedding(tokens, torch.arange(5, dtype=D64), r, w, None, 0, True)
    g_r, g_w = torch.autograd.grad(out.real.sum(), (r, w))
    for g in (g_r, g_w):
        assert g.is_sparse and g.shape == (V, D)
        assert 0 not in g._indices().tolist()[0]  # the padding rows are left out, as nn.Embedding does
        assert sorted(set(g._indices().tolist()[0])) == [4, 7]
    # word 4 at positions 0 and 2: dRe/dr = cos(w * 0) + cos(w * 2)
    assert torch.allclose(g_r.to_dense()[4], 1 + torch.cos(2 * w[4]).detach())


def test_negative_padding_idx_counts_back_from_the_end_of_the_per_word_tables_like_f_embedding():
    from complexorder.nn.wave import complex_vanilla_embedding, complex_vanilla_embedding_reference
    tokens, pos = torch.tensor([[V - 1, 1, V - 1]]), torch.arange(3, dtype=D64)
    for freq_share, amp_share in ((None, None), ("word", None), (None, "word")):
        for fn in (complex_order_embedding, complex_order_embedding_reference):
            r, w, _ = tables(freq_share, amp_share, False)
            out = fn(tokens, pos, r, w, None, -1)
            assert out[0, 0].abs().max() == 0 and out[0, 2].abs().max() == 0 and out[0, 1].abs().min() > 0
            torch.testing.assert_close(out, fn(tokens, pos, r, w, None, V - 1))
    r, theta = torch.randn(V, D, dtype=D64, requires_grad=True), torch.randn(V, D, dtype=D64, requires_grad=True)
    for fn in (complex_vanilla_embedding, complex_vanilla_embedding_reference):
        out = fn(tokens, r, theta, -1)
        (g,) = torch.autograd.grad(out.real.sum(), r)
        assert out[0, 0].abs().max() == 0 and g[V - 1].abs().max() == 0 and g[1].abs().min() > 0
    r, w, _ = tables("word", "word", False)
    with pytest.raises(ValueError, match=r"^padding_idx=-1 counts back from the end of a per-word table, but every "
                                         r"table is word-shared \(\[1, D\]\); pass the padding token's id \(>= 0\)$"):
        complex_order_embedding(tokens, pos, r, w, None, -1)
    r, w, _ = tables(None, None, False)
    with pytest.raises(ValueError, match=rf"^padding_idx must be within \[-{V}, {V}\) for tables of {V} rows, got {V}$"):
        complex_order_embedding_reference(tokens, pos, r, w, None, V)


def test_positions_that_require_grad_get_the_reference_gradient_on_the_fused_path():
    r, w, theta = tables(None, None, True)
    tokens = torch.tensor([[1, 4, 4, 2]])
    grads = []
    for fn in (complex_order_embedding, complex_order_embedding_reference):
        pos = torch.tensor([0.5, 1.0, 2.0, 3.5], dtype=D64, requires_grad=True)
        out = fn(tokens, pos, r, w, theta, 2)
        grads.append(torch.autograd.grad(out.real.sum() + 3 * out.imag.sum(), pos)[0])
    # d/dpos of r cos(w pos + theta) + 3 r sin(w pos + theta), summed over D; the padding token (2) gives 0
    phase = w[tokens[0]] * torch.tensor([0.5, 1.0, 2.0, 3.5], dtype=D64).unsqueeze(1) + theta[tokens[0]]
    by_hand = (r[tokens[0]] * w[tokens[0]] * (-torch.sin(phase) + 3 * torch.cos(phase))).sum(1).detach()
    by_hand[3] = 0
    torch.testing.assert_close(grads[0], by_hand)
    torch.testing.assert_close(grads[1], by_hand)


def test_fused_path_is_once_differentiable_and_refuses_a_backward_that_builds_a_graph():
    """Under create_graph=True the fused gradients would carry no graph: with an upstream gradient that needs
    one (below, from out.real ** 2) once_differentiable refused only at the second backward, and with a constant
    one (out.real.sum()) nothing refused: a penalty on the gradient was silently a constant."""
    r, w, _ = tables(None, None, False)
    message = (r"^the fused complex embedding is differentiable once; for a backward with create_graph=True \(a "
               r"gradient penalty, a Hessian-vector product\) build the embedding with fused=False$")
    for loss in (lambda out: (out.real ** 2).sum(), lambda out: out.real.sum()):
        out = complex_order_embedding(torch.tensor([[1, 2]]), torch.arange(2, dtype=D64), r, w)
        with pytest.raises(RuntimeError, match=message):
            torch.autograd.grad(loss(out), r, create_graph=True)
        out = complex_order_embedding(torch.tensor([[1, 2]]), torch.arange(2, dtype=D64), r, w)
        (g,) = torch.autograd.grad(loss(out), r)  # one backward, as before
        assert not g.requires_grad and g.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.float32, D64])
def test_cos_sin_matches_torch_within_float_rounding_and_keeps_nan_for_infinities(dtype):
    phase = torch.cat((torch.linspace(-5000, 5000, 10001, dtype=dtype), torch.tensor([math.inf, -math.inf, math.nan],
                                                                                         dtype=dtype)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from NumPy on inf
        cos, sin = _cos_sin(phase.clone())
    exact = phase.double()
    tol = 1e-6 if dtype == torch.float32 else 1e-14
    finite = exact.isfinite()
    assert torch.allclose(cos[finite].double(), torch.cos(exact[finite]), atol=tol, rtol=0)
    assert torch.allclose(sin[finite].double(), torch.sin(exact[finite]), atol=tol, rtol=0)
    assert cos[~finite].isnan().all() and sin[~finite].isnan().all()


def block_form_conv1d(z, a, b, c, d, stride, padding, dilation):
    """Complex convolution as four real ones: (A*x - B*y + c) + i(B*x + A*y + d)."""
    x, y = z.real, z.imag
    conv = lambda inp, wt: F.conv1d(inp, wt, None, stride, padding, dilation)  # noqa: E731
    real, imag = conv(x, a) - conv(y, b), conv(x, b) + conv(y, a)
    if c is not None:
        real, imag = real + c.unsqueeze(-1), imag + d.unsqueeze(-1)
    return torch.complex(real, imag)


@pytest.mark.parametrize("bias", ["none", "separate", "real only"])
@pytest.mark.parametrize("stride,padding,dilation", [(1, 0, 1), (2, 1, 2)])
def test_complex_conv1d_equals_the_four_real_convolutions_values_and_gradients(bias, stride, padding, dilation):
    gen = torch.Generator().manual_seed(4)
    z = torch.randn(2, 5, 13, dtype=torch.complex128, generator=gen).requires_grad_()
    a, b = (torch.randn(3, 5, 3, dtype=D64, generator=gen).requires_grad_() for _ in range(2))
    c = None if bias == "none" else torch.randn(3, dtype=D64, generator=gen).requires_grad_()
    d = torch.randn(3, dtype=D64, generator=gen).requires_grad_() if bias == "separate" else None
    out = CF.complex_conv1d(z, a, b, c, d, stride, padding, dilation)
    ref = block_form_conv1d(z, a, b, c, d if bias == "separate" else c, stride, padding, dilation)
    assert torch.allclose(out, ref, atol=1e-12)
    upstream = torch.randn(ref.shape, dtype=torch.complex128, generator=gen)
    params = [p for p in (z, a, b, c, d) if p is not None]
    got = torch.autograd.grad((out * upstream.conj()).real.sum(), params)
    want = torch.autograd.grad((ref * upstream.conj()).real.sum(), params)
    for g, h in zip(got, want):
        assert torch.allclose(g, h, atol=1e-10)


# --------------------------------------------------------------------------- the benchmark


def test_appendix_c_baseline_computes_eq5_with_positions_from_one_and_wrapped_phases():
    speed = load_speed()
    torch.manual_seed(0)
    emb = speed.AppendixCEmbedding(V, D).double()
    tokens = torch.randint(0, V, (2, 5))
    theta = emb.initial_phase_emb.weight.detach() % (2 * math.pi)
    re, im = emb(tokens)
    ref = complex_order_embedding_reference(tokens, torch.arange(1, 6, dtype=D64), emb.word_emb.weight.detach(),
                                            emb.frequency_emb.weight.detach(), theta)
    assert torch.allclose(torch.complex(re, im), ref, atol=1e-12)


@pytest.mark.parametrize("argv,message", [
    (["--benchmarks", "embedding,speed"], "unknown benchmark 'speed'; valid benchmarks: embedding, layers, epoch, memory"),
    (["--shapes", "32x50,64x64"], "unknown shape '64x64'; valid shapes: 32x50, 16x512"),
    (["--dims", "256"], "unknown dim '256'; valid dims: 300, 512"),
    (["--vocabs", "20000,1000"], "unknown vocab '1000'; valid vocabs: 20000, 270000"),
    (["--models", "gru"], "unknown model 'gru'; valid models: fasttext, cnn, lstm, transformer"),
    (["--layers", "lstm"], "unknown layer 'lstm'; valid layers: linear, conv, attention"),
    (["--benchmarks", ","], "no benchmark given; valid benchmarks: embedding, layers, epoch, memory"),
    (["--rounds", "0"], "--rounds must be at least 1, got 0"),
])
def test_benchmark_runner_rejects_unknown_names_with_the_valid_ones(argv, message, capsys, tmp_path):
    speed = load_speed()
    with pytest.raises(ValueError) as err:
        speed.parse_args(argv)
    assert str(err.value) == message
    out = tmp_path / "speed.md"
    assert speed.main([*argv, "--out", str(out)]) == 2  # the command line: one-line error, nothing run
    assert capsys.readouterr().err.strip() == f"speed.py: error: {message}"
    assert not out.exists()


def test_benchmark_runner_accepts_the_issue_grid():
    args = load_speed().parse_args(["--shapes", "16x512", "--dims", "300,512", "--vocabs", "270000"])
    assert args.shapes == ["16x512"] and args.dims == [300, 512] and args.vocabs == [270000]
    assert args.benchmarks == ["embedding", "layers", "epoch", "memory"]


def test_report_marks_met_and_missed_targets_from_the_paired_ratios():
    """The report from made-up timings (no benchmark run): ratios are medians of per-round ratios."""
    speed = load_speed()
    args = speed.parse_args(["--benchmarks", "embedding,layers", "--shapes", "32x50", "--dims", "300",
                             "--vocabs", "20000"])
    ms = lambda *values: [v / 1000 for v in values]  # noqa: E731
    times = {"floor": ms(10, 10, 20), "ours": ms(15, 15, 30), "ours+theta": ms(12, 12, 24),
             "ours sparse": ms(5, 5, 10), "floor sparse": ms(1, 1, 2), "appendix C": ms(45, 45, 90),
             "ours, PyTorch path": ms(30, 45, 60)}
    rows = [{"regime": speed.GLIBC_DEFAULT, "shape": "32x50", "dim": 300, "vocab": 20000, "times": times,
             "fault_mib": {"floor": 46.0, "ours": 0.0, "ours+theta": 0.0}}]
    layer_times = {"real D": ms(10, 10), "real 2D": ms(30, 30), "complex": ms(33, 33), "complex shared": ms(20, 20)}
    sections = {"embedding": rows, "layers": [{"layer": "linear", "workload": "w", "times": layer_times}],
                "minutes": {"layers": 0.5}}
    text = speed.render(args, "python benchmarks/speed.py", {"cpu": "test"}, ("1.00", "2.00"), sections, 60.0)
    assert "| 32x50 | 300 | 20,000 | yes | yes | **no** (1.15x the target) | yes | yes |" in text  # 1.5 / 1.3
    assert "| 32x50 | 300 | 20,000 | 10.0 (10.0-20.0) | 15.0 (15.0-30.0) | 1.50 (1.50-1.50) | 3.00 (3.00-3.00) | " \
           "3.00 (3.00-4.50) | 2.00 (2.00-3.00) |" in text
    assert "It takes 2.00-2.00x the native kernel's time (3.00-3.00x the floor)." in text
    assert "complex / real 2D 1.10-1.10" in text and "share_weights brings it to 2.00-2.00 x real D" in text
    assert "Minutes per section: layers 0.5." in text
    # the miss is named with its shape, ratio, distance to the target and round range
    assert ("The 1.3x-floor target is missed by ours in 1 of 1 measurements: glibc default, 32x50 D=300 V=20,000: "
            "1.50x the floor, 1.15x the target, rounds 1.50-1.50.") in text
    times["ours"] = ms(12, 13, 25)  # 1.2, 1.3, 1.25: median 1.25, at or under the target
    text = speed.render(args, "python benchmarks/speed.py", {"cpu": "test"}, ("1.00", "2.00"), sections, 60.0)
    assert "The 1.3x-floor target holds for ours at all 1 measurements of this run." in text
    assert "missed by ours" not in text
