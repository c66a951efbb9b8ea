"""The native float32 kernel of Eq. 5 (``complexorder/nn/_wave_kernel.c``) equals the reference.

Every comparison is against the plain-autograd reference in float64 (the paper's equation as it
reads), with tolerances that float32 rounding of the phase explains, and against the PyTorch
fused path in float32 (which it replaces on the CPU). The kernel must be built wherever a C
compiler is present (CI): a missing build is a test failure there, not a silent fallback.
"""

import platform
import shutil
import sys

import pytest
import torch

from complexorder import ComplexOrderEmbedding
from complexorder.nn import native
from complexorder.nn.wave import complex_order_embedding, complex_order_embedding_reference

D64 = torch.float32, torch.float64
F32, F64 = D64
HAS_COMPILER = sys.platform.startswith("linux") and bool(shutil.which("cc") or shutil.which("gcc"))

requires_kernel = pytest.mark.skipif(not native.available(), reason=f"native kernel: {native.status()}")


def test_the_kernel_is_built_where_a_c_compiler_is_present():
    if not HAS_COMPILER:
        pytest.skip("no C compiler on this platform: the PyTorch path is the supported one here")
    assert native.available(), native.status()
    assert native.status().startswith("loaded from ")


def make_tables(vocab, dim, theta, seed=0, freq_scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    r = torch.randn(vocab, dim, generator=gen, dtype=F64)
    w = (torch.rand(vocab, dim, generator=gen, dtype=F64) * 2 - 1) * freq_scale
    t = (torch.rand(vocab, dim, generator=gen, dtype=F64) * 6 - 3) if theta else None
    return r, w, t


def run(tokens, positions, tables, padding_idx, sparse, upstream, dtype, use_native):
    """Output and parameter gradients of the fused function (native or PyTorch path) in ``dtype``."""
    params = [None if t is None else t.to(dtype).requires_grad_() for t in tables]
    live = [p for p in params if p is not None]
    if use_native:
        assert native.supports(tokens, positions.to(dtype), *params) == (dtype == F32)
        out = complex_order_embedding(tokens, positions.to(dtype), *params, padding_idx, sparse)
    else:
        with native.disabled():
            out = complex_order_embedding(tokens, positions.to(dtype), *params, padding_idx, sparse)
    grads = torch.autograd.grad((out * upstream.to(out.dtype).conj()).real.sum(), live)
    return out, [g.to_dense() if g.is_sparse else g for g in grads], grads


def reference(tokens, positions, tables, padding_idx, upstream):
    params = [None if t is None else t.clone().requires_grad_() for t in tables]
    out = complex_order_embedding_reference(tokens, positions.to(F64), *params, padding_idx)
    grads = torch.autograd.grad((out * upstream.conj()).real.sum(), [p for p in params if p is not None])
    return out, grads


@requires_kernel
@pytest.mark.parametrize("theta", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("pos_shape", [(4, 13), (13,), (1, 13)])
def test_native_values_and_gradients_equal_the_float64_reference(theta, padding_idx, sparse, pos_shape):
    vocab, dim = 40, 37  # 37: not a multiple of the vector width, so the loops' tails run too
    tables = make_tables(vocab, dim, theta)
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (4, 13), generator=gen)
    tokens[0, 0] = tokens[3, 12] = tokens[1, 5] = 3  # padding tokens when padding_idx=3, also repeated words
    tokens[2, 7] = tokens[2, 8] = 11
    positions = torch.rand(pos_shape, generator=gen, dtype=F64) * 50  # |phase| up to ~100 + 3 rad
    positions = positions.to(F32).to(F64)  # the same positions in both precisions
    upstream = torch.randn(4, 13, dim, dtype=torch.complex128, generator=gen)
    out, grads, raw = run(tokens, positions, tables, padding_idx, sparse, upstream, F32, True)
    ref_out, ref_grads = reference(tokens, positions, tables, padding_idx, upstream)
    assert out.dtype == torch.complex64 and out.shape == (4, 13, dim)
    # float32 phase (ulp 8e-6 at 100 rad) times |r| <= ~4, and ~1.5 ulp of sin/cos
    assert torch.allclose(out.to(torch.complex128), ref_out, atol=1e-4, rtol=0)
    if padding_idx is not None:
        assert (out[tokens == padding_idx] == 0).all()
    for g, raw_g, ref_g, table in zip(grads, raw, ref_grads, [t for t in tables if t is not None]):
        assert g.shape == table.shape and raw_g.is_sparse == sparse
        scale = ref_g.abs().max()
        assert torch.allclose(g.double(), ref_g, atol=1e-4 * scale, rtol=0)
        if padding_idx is not None:
            assert (g[padding_idx] == 0).all()  # the padding word gets no gradient, as nn.Embedding
        unseen = sorted(set(range(vocab)) - set(tokens.flatten().tolist()))
        assert unseen and (g[unseen] == 0).all()  # rows no token touched are exactly zero


@requires_kernel
@pytest.mark.parametrize("theta", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_native_equals_the_pytorch_fused_path_in_float32(theta, sparse):
    vocab, dim = 300, 70
    tables = make_tables(vocab, dim, theta, seed=2, freq_scale=6.0)
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, vocab, (8, 60), generator=gen)
    positions = torch.arange(60, dtype=F64)
    upstream = torch.randn(8, 60, dim, dtype=torch.complex128, generator=gen)
    out, grads, _ = run(tokens, positions, tables, 0, sparse, upstream, F32, True)
    out_pt, grads_pt, _ = run(tokens, positions, tables, 0, sparse, upstream, F32, False)
    # the same phases (bit for bit), sin/cos within ~2 ulp of each other: |r| <= ~5
    assert (torch.view_as_real(out) - torch.view_as_real(out_pt)).abs().max() <= 5 * 2.4e-7
    for g, h in zip(grads, grads_pt):
        assert torch.allclose(g, h, atol=1e-5 * h.abs().max(), rtol=0)


@requires_kernel
def test_native_phase_keeps_the_references_two_roundings():
    """w * pos and + theta are rounded separately, as the reference does: no fused multiply-add.

    At phases near 3000 rad one float32 ulp is 2.4e-4, so a fused w * pos + theta would move
    cos/sin by up to that much; the kernel must stay within sin/cos rounding (~2.4e-7) of the
    float32 reference instead.
    """
    gen = torch.Generator().manual_seed(5)
    vocab, dim = 50, 64
    r = torch.ones(vocab, dim)
    w = torch.rand(vocab, dim, generator=gen) * 3 + 3
    theta = torch.rand(vocab, dim, generator=gen) * 6 - 3
    tokens = torch.randint(0, vocab, (2, 500), generator=gen)
    positions = torch.arange(500, dtype=F32)
    out = complex_order_embedding(tokens, positions, r, w, theta)
    ref = complex_order_embedding_reference(tokens, positions, r, w, theta)  # float32 reference
    assert (torch.view_as_real(out) - torch.view_as_real(ref)).abs().max() <= 4.8e-7
    fused_phase = (w[tokens].double() * positions.unsqueeze(-1).double() + theta[tokens].double()).float()
    assert (fused_phase.cos() - ref.real).abs().max() > 1e-5  # the test can tell the two apart


@requires_kernel
@pytest.mark.parametrize("limit", [1.0, 100.0, 8000.0, 1e5, 1e8, 1e12])
def test_native_sin_cos_absolute_error_below_1e7(limit):
    """Cody-Waite reduction in float (|x| <= 8192), in double (<= 8e8), libm beyond.

    The bound is absolute (about 2 ulp of values in [0.5, 1)); near the zeros of sin and cos
    the relative error can be large, as for any fixed-precision reduction of this kind."""
    x = (torch.rand(200_000, generator=torch.Generator().manual_seed(6), dtype=F64) * 2 - 1) * limit
    x = torch.cat((x.float(), torch.tensor([0.0, -0.0, 8192.0, -8192.0, 8192.001, 8e8, 8.1e8], dtype=F32)))
    s, c = native.sincos(x)
    exact = x.double()
    assert (s.double() - exact.sin()).abs().max() <= 1.2e-7  # 2 ulp of values in [0.5, 1)
    assert (c.double() - exact.cos()).abs().max() <= 1.2e-7


@requires_kernel
def test_native_sin_cos_of_infinities_and_nan_are_nan():
    s, c = native.sincos(torch.tensor([float("inf"), float("-inf"), float("nan")]))
    assert s.isnan().all() and c.isnan().all()


@requires_kernel
def test_native_large_phases_of_the_word_index_initialisation_match_the_reference():
    """The authors' word-index frequencies reach j * 1 rad per position: phases of 1e5-1e6 rad."""
    emb = ComplexOrderEmbedding(20_000, 16, frequency_init="word-index")
    tokens = torch.tensor([[19_999, 15_000, 7, 0, 12_345]])
    positions = torch.tensor([[40.0, 900.0, 3.0, 1.0, 60.0]])
    out = emb(tokens, positions)
    ref = complex_order_embedding_reference(tokens, positions.double(), emb.amplitude.double(),
                                            emb.frequency.double())
    # the float32 phase itself is the reference's input here: compare with the float32 reference
    ref32 = complex_order_embedding_reference(tokens, positions, emb.amplitude, emb.frequency)
    assert (torch.view_as_real(out) - torch.view_as_real(ref32)).abs().max() <= 5 * 2.4e-7
    assert out.abs().sub(ref.abs()).abs().max() < 1e-5  # moduli agree whatever the phase's rounding


@requires_kernel
def test_native_threads_split_the_columns_and_give_bitwise_the_same_result():
    torch.manual_seed(7)
    emb = ComplexOrderEmbedding(5000, 300, padding_idx=0, initial_phase=True)
    tokens = torch.randint(0, 5000, (16, 200))
    upstream = torch.randn(16, 200, 300, dtype=torch.complex64)
    results = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            assert len(native._column_ranges(300, tokens.numel() * 300)) == n
            out = emb(tokens)
            grads = torch.autograd.grad((out * upstream.conj()).real.sum(), list(emb.parameters()))
            results.append((out, grads))
    finally:
        torch.set_num_threads(threads)
    (out1, g1), (out3, g3) = results
    assert torch.equal(out1, out3)
    assert all(torch.equal(a, b) for a, b in zip(g1, g3))


def test_column_ranges_cover_the_columns_on_cache_line_boundaries(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert native._column_ranges(300, 10**7) == [(0, 80), (80, 160), (160, 240), (240, 300)]
    assert native._column_ranges(300, 1000) == [(0, 300)]  # too little work for threads
    assert native._column_ranges(20, 10**7) == [(0, 16), (16, 20)]


@requires_kernel
def test_native_refuses_out_of_range_tokens_without_reading_out_of_bounds():
    r, w, _ = make_tables(10, 8, False)
    r, w = r.float(), w.float()
    for bad in (10, -1, 10**9):
        with pytest.raises(IndexError, match=r"tokens: an id is outside the vocabulary \[0, 10\)"):
            complex_order_embedding(torch.tensor([[1, bad]]), torch.arange(2, dtype=F32), r, w)


@requires_kernel
def test_native_empty_batch_and_frozen_amplitude():
    emb = ComplexOrderEmbedding(30, 8, padding_idx=0)
    empty = emb(torch.zeros(2, 0, dtype=torch.long))
    assert empty.shape == (2, 0, 8) and empty.dtype == torch.complex64
    empty.abs().sum().backward()
    assert (emb.amplitude.grad == 0).all() and (emb.frequency.grad == 0).all()
    emb.zero_grad(set_to_none=True)
    emb.amplitude.requires_grad_(False)  # e.g. from_pretrained(freeze_amplitude=True)
    tokens = torch.tensor([[4, 5, 0]])
    z = emb(tokens)
    z.real.sum().backward()
    assert emb.amplitude.grad is None
    expected = torch.zeros(30, 8)  # d Re / d w = -r sin(w pos) pos
    for p, t in enumerate([4, 5]):
        expected[t] += -emb.amplitude[t] * torch.sin(emb.frequency[t] * p) * p
    assert torch.allclose(emb.frequency.grad, expected, atol=1e-6)


@requires_kernel
@pytest.mark.parametrize("upstream", ["expanded", "conjugate", "strided"])
def test_native_backward_accepts_non_contiguous_upstream_gradients(upstream):
    emb = ComplexOrderEmbedding(50, 24, padding_idx=0)
    tokens = torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(8))
    loss = {"expanded": lambda z: z.real.sum(), "conjugate": lambda z: (z.conj() * 1j).real.sum(),
            "strided": lambda z: z[:, ::2, 1::3].imag.sum()}[upstream]
    got = torch.autograd.grad(loss(emb(tokens)), [emb.amplitude, emb.frequency])
    with native.disabled():
        want = torch.autograd.grad(loss(emb(tokens)), [emb.amplitude, emb.frequency])
    for g, h in zip(got, want):
        assert torch.allclose(g, h, atol=1e-5)


def test_disabled_runs_the_pytorch_path(monkeypatch):
    calls = []
    forward = native.wave_forward
    monkeypatch.setattr(native, "wave_forward", lambda *a, **k: calls.append(a) or forward(*a, **k))
    emb = ComplexOrderEmbedding(20, 4)
    with native.disabled():
        assert not native.available() and native.status().startswith("disabled")
        emb(torch.tensor([[1, 2]]))
    assert calls == []
    emb(torch.tensor([[1, 2]]))
    assert len(calls) == (1 if native.available() else 0)


@pytest.mark.parametrize("case", ["float64", "word-shared frequency", "dimension-shared amplitude",
                                  "word-shared both (appendix A)"])
def test_native_declines_what_it_does_not_compute(case):
    emb = {"float64": lambda: ComplexOrderEmbedding(20, 4, dtype=F64),
           "word-shared frequency": lambda: ComplexOrderEmbedding(20, 4, frequency_sharing="word"),
           "dimension-shared amplitude": lambda: ComplexOrderEmbedding(20, 4, amplitude_sharing="dimension"),
           "word-shared both (appendix A)": lambda: ComplexOrderEmbedding(
               20, 4, frequency_sharing="word", amplitude_sharing="word", amplitude_init="ones")}[case]()
    pos = torch.arange(3, dtype=emb.amplitude.dtype)
    assert not native.supports(torch.tensor([1, 2, 3]), pos, emb.amplitude, emb.frequency, emb.initial_phase)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 only")
def test_kernel_source_builds_portable_clones_not_for_the_build_machine():
    """No -march=native: the wheel must run on any x86-64; the CPU-specific code is in target_clones."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    setup = (root / "setup.py").read_text()
    assert '"-march' not in setup and "'-march" not in setup and "optional=True" in setup
    assert 'target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")' in \
        (root / "src" / "complexorder" / "nn" / "_wave_kernel.c").read_text()


@requires_kernel
@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("sparse", [False, True])
def test_native_complex_vanilla_equals_its_float64_reference(padding_idx, sparse):
    """Complex-vanilla r exp(i theta) runs the same kernel with no frequency table."""
    from complexorder import ComplexVanillaEmbedding
    from complexorder.nn.wave import complex_vanilla_embedding_reference

    emb = ComplexVanillaEmbedding(60, 29, padding_idx=padding_idx, sparse=sparse)
    tokens = torch.randint(0, 60, (5, 17), generator=torch.Generator().manual_seed(9))
    tokens[0, :3] = 0
    upstream = torch.randn(5, 17, 29, dtype=torch.complex128, generator=torch.Generator().manual_seed(10))
    calls = []
    forward = native.wave_forward
    try:
        native.wave_forward = lambda *a, **k: calls.append(a) or forward(*a, **k)
        out = emb(tokens)
    finally:
        native.wave_forward = forward
    assert len(calls) == 1 and calls[0][1] is None  # the native path, without positions
    got = torch.autograd.grad((out * upstream.to(out.dtype).conj()).real.sum(), [emb.amplitude, emb.phase])
    r64, t64 = (p.detach().double().requires_grad_() for p in (emb.amplitude, emb.phase))
    ref = complex_vanilla_embedding_reference(tokens, r64, t64, padding_idx)
    want = torch.autograd.grad((ref * upstream.conj()).real.sum(), [r64, t64])
    assert torch.allclose(out.to(torch.complex128), ref, atol=5 * 2.4e-7 * r64.abs().max().item(), rtol=0)
    for g, h in zip(got, want):
        assert g.is_sparse == sparse
        assert torch.allclose(g.to_dense().double() if sparse else g.double(), h, atol=1e-5 * h.abs().max(), rtol=0)
    if padding_idx is not None:
        assert (out[tokens == 0] == 0).all()


@requires_kernel
def test_native_sin_keeps_the_sign_of_zero():
    s, c = native.sincos(torch.tensor([-0.0, 0.0]))
    assert torch.equal(s.signbit(), torch.tensor([True, False])) and torch.equal(c, torch.ones(2))


@requires_kernel
def test_native_mixed_float_and_double_reductions_do_not_depend_on_the_column_split():
    """The float/double/libm choice is made per element: a column's bits never depend on its neighbours."""
    gen = torch.Generator().manual_seed(11)
    dim = 96
    w = (torch.rand(40, dim, generator=gen) * 2 - 1) * 4
    w[:, 5] = 50.0    # 50 rad per position: beyond 8192 rad from position 164 on (double reduction)
    w[:, 70] = 3e6    # beyond 8e8 rad from position 267 on (libm)
    r = torch.randn(40, dim, generator=gen)
    tokens = torch.randint(0, 40, (3, 400), generator=gen)
    pos = torch.arange(400, dtype=F32)
    whole = complex_order_embedding(tokens, pos, r, w)
    flat, p = tokens.reshape(-1), pos.expand(3, 400).reshape(-1).contiguous()
    lib = native._load()
    pieces = torch.empty(flat.numel(), dim, 2)
    for c0, c1 in [(0, 16), (16, 48), (48, 80), (80, 96)]:  # other splits than the single-thread call's
        assert lib.co_wave_forward(flat.numel(), dim, 40, flat.data_ptr(), p.data_ptr(), r.data_ptr(), w.data_ptr(),
                                   None, -1, pieces.data_ptr(), c0, c1) == 0
    assert torch.equal(torch.view_as_real(whole).reshape(-1, dim, 2), pieces)
    ref = complex_order_embedding_reference(tokens, pos, r, w)  # float32 reference: same phases
    assert (torch.view_as_real(whole) - torch.view_as_real(ref)).abs().max() <= 5 * 2.4e-7


@requires_kernel
def test_native_rows_longer_than_one_block_of_columns():
    """D > 1024 runs the kernel's column blocks (CO_MAX_CHUNK) more than once per row."""
    tables = make_tables(12, 1100, True, seed=12)
    gen = torch.Generator().manual_seed(13)
    tokens = torch.randint(0, 12, (2, 7), generator=gen)
    positions = torch.arange(7, dtype=F64)
    upstream = torch.randn(2, 7, 1100, dtype=torch.complex128, generator=gen)
    for sparse in (False, True):
        out, grads, _ = run(tokens, positions, tables, 0, sparse, upstream, F32, True)
        ref_out, ref_grads = reference(tokens, positions, tables, 0, upstream)
        assert torch.allclose(out.to(torch.complex128), ref_out, atol=1e-5, rtol=0)
        for g, h in zip(grads, ref_grads):
            assert torch.allclose(g.double(), h, atol=1e-4 * h.abs().max(), rtol=0)


@pytest.mark.parametrize("tokens", ["meta device", "float"])
def test_native_declines_tokens_it_cannot_read(tokens, monkeypatch):
    """Tokens on another device or of a float dtype never reach C (a pointer C would dereference)."""
    r, w = (t.float() for t in make_tables(10, 8, False)[:2])
    bad = torch.tensor([[1, 2]], device="meta") if tokens == "meta device" else torch.tensor([[1.0, 2.0]])
    assert not native.supports(bad, torch.arange(2, dtype=F32), r, w, None)
    monkeypatch.setattr(native, "wave_forward", lambda *a, **k: pytest.fail("the native kernel was called"))
    if tokens == "float":
        with pytest.raises(RuntimeError, match="indices"):  # the PyTorch path: F.embedding's own error
            complex_order_embedding(bad, torch.arange(2, dtype=F32), r, w)
    else:
        complex_order_embedding(bad, torch.arange(2, dtype=F32), r, w)  # no crash; meta in, meta out
