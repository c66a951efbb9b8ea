"""torch.func transforms and forward-mode AD: every embedding of the family works under ``torch.func.grad``,
``vmap`` (per-sample gradients ``vmap(grad(loss))`` with ``functional_call`` included), ``jvp``/``jacfwd`` and
``torch.autograd.forward_ad`` dual tensors, with the values of eager mode.

The complex embeddings take the plain-autograd reference there (the fused autograd function has no ``setup_context``,
batching rule or ``jvp``, and the native kernel reads raw memory); the checks that read values are skipped for tensors a
transform wraps (``vmap``'s batched tokens have no single value). Eager references below use the fused path (the
native kernel where it is built), so the comparisons hold the transformed path to it."""

import copy

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import functional_call, grad, jacfwd, jacrev, jvp, vmap

import complexorder as co

# torch's own forward-AD decompositions script themselves with torch.jit.script the first time jvp runs
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

V, D = 12, 5
TOKENS = torch.tensor([[1, 2, 3, 1, 0, 0],  # repeats (gradients accumulate) and padding (id 0)
                       [4, 4, 5, 6, 7, 0],
                       [11, 2, 9, 8, 3, 1]])

# the fused complex embeddings: torch.func.grad and forward-mode AD failed on them
FUSED = {
    "order": lambda: co.ComplexOrderEmbedding(V, D),  # the native kernel where built
    "order-padding-initial-phase": lambda: co.ComplexOrderEmbedding(V, D, padding_idx=0, initial_phase=True),
    "order-frequency-word": lambda: co.ComplexOrderEmbedding(V, D, frequency_sharing="word", padding_idx=0),
    "order-frequency-dimension": lambda: co.ComplexOrderEmbedding(V, D, frequency_sharing="dimension"),
    "order-amplitude-word": lambda: co.ComplexOrderEmbedding(V, D, amplitude_sharing="word", initial_phase=True),
    "order-amplitude-dimension": lambda: co.ComplexOrderEmbedding(V, D, amplitude_sharing="dimension",
                                                                  padding_idx=0, frequency_init="uniform"),
    "order-first-position": lambda: co.ComplexOrderEmbedding(V, D, first_position=1, frequency_init="normal"),
    "order-float64": lambda: co.ComplexOrderEmbedding(V, D, padding_idx=0, initial_phase=True, dtype=torch.float64),
    "order-sparse": lambda: co.ComplexOrderEmbedding(V, D, padding_idx=0, sparse=True),
    "vanilla": lambda: co.ComplexVanillaEmbedding(V, D, padding_idx=0),
    "vanilla-sparse": lambda: co.ComplexVanillaEmbedding(V, D, sparse=True),
}
# the others: grad and jvp worked on them, vmap failed (the token-range check read the batched tokens' values)
OTHERS = {
    "order-unfused": lambda: co.ComplexOrderEmbedding(V, D, padding_idx=0, initial_phase=True, fused=False),
    "vanilla-unfused": lambda: co.ComplexVanillaEmbedding(V, D, fused=False),
    "word": lambda: co.WordEmbedding(V, D, padding_idx=0),
    "word-sparse": lambda: co.WordEmbedding(V, D, sparse=True),
    "learned": lambda: co.LearnedPositionalEmbedding(V, D, max_positions=8, padding_idx=0),
    "sinusoidal": lambda: co.SinusoidalPositionalEmbedding(V, D, padding_idx=0),
}
ALL = {**FUSED, **OTHERS}


def make(name):
    torch.manual_seed(0)
    emb = ALL[name]()
    with torch.no_grad():  # frequencies of order one: the phases (and their gradients) vary across positions
        for p in emb.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return emb


def weights(emb):
    """Fixed weights of the loss: one per output part (real and imaginary parts of a complex output)."""
    shape = (emb.embedding_dim, 2) if emb.is_complex else (emb.embedding_dim,)
    return torch.linspace(-1.0, 1.5, emb.embedding_dim * len(shape)).reshape(shape).to(
        next(emb.parameters()).dtype)


def as_real(out):
    return torch.view_as_real(out) if out.is_complex() else out


def loss_of(emb):
    """A scalar loss of the output, nonlinear in it: ``loss(params, tokens)``."""
    w = weights(emb)
    return lambda params, tokens: torch.sin(as_real(functional_call(emb, params, (tokens,))) * w).sum()


def params_of(emb):
    return {k: v.detach() for k, v in emb.named_parameters()}


def dense(g):
    return g.to_dense() if g.is_sparse else g


def eager_grads(emb, tokens):
    """The gradients of the loss by eager autograd, through the module itself (the fused path)."""
    emb.zero_grad(set_to_none=True)
    w = weights(emb)
    torch.sin(as_real(emb(tokens)) * w).sum().backward()
    return {k: dense(p.grad) for k, p in emb.named_parameters()}


def tolerance(emb):
    double = next(emb.parameters()).dtype == torch.float64
    return {"rtol": 1e-10, "atol": 1e-12} if double else {"rtol": 1e-4, "atol": 2e-5}


def assert_grads_close(got, want, emb):
    assert sorted(got) == sorted(want)
    for k in want:
        torch.testing.assert_close(dense(got[k]), want[k], **tolerance(emb), msg=lambda m, k=k: f"{k}: {m}")


@pytest.mark.parametrize("name", sorted(ALL))
def test_vmap_forward_equals_eager(name):
    emb = make(name)
    torch.testing.assert_close(vmap(emb)(TOKENS), emb(TOKENS), **tolerance(emb))
    # vmap over the positions too (the checks on batched positions are skipped)
    if name not in ("word", "word-sparse", "vanilla", "vanilla-sparse", "vanilla-unfused"):
        positions = torch.arange(TOKENS.shape[1]).flip(0).expand(TOKENS.shape).contiguous()
        torch.testing.assert_close(vmap(emb)(TOKENS, positions), emb(TOKENS, positions), **tolerance(emb))


@pytest.mark.parametrize("name", sorted(ALL))
def test_grad_equals_eager_autograd(name):
    emb = make(name)
    loss = loss_of(emb)
    assert_grads_close(grad(loss)(params_of(emb), TOKENS), eager_grads(emb, TOKENS), emb)
    # the forward vmapped over the batch inside the differentiated function: the same gradient
    per_row = lambda params, tokens: torch.sin(  # noqa: E731
        as_real(vmap(lambda t: functional_call(emb, params, (t,)))(tokens)) * weights(emb)).sum()
    assert_grads_close(grad(per_row)(params_of(emb), TOKENS), eager_grads(emb, TOKENS), emb)


@pytest.mark.parametrize("name", sorted(ALL))
def test_per_sample_gradients_equal_one_sample_at_a_time(name):
    emb = make(name)
    per_sample = vmap(grad(loss_of(emb)), in_dims=(None, 0))(params_of(emb), TOKENS.unsqueeze(1))
    for i in range(TOKENS.shape[0]):
        want = eager_grads(emb, TOKENS[i:i + 1])
        assert_grads_close({k: g[i] for k, g in per_sample.items()}, want, emb)
    if not emb.sparse:  # sparse=True: dense per-sample gradients (PyTorch cannot batch sparse ones)
        assert all(not g.is_sparse for g in per_sample.values())


def finite_difference(emb, key, tangent, tokens, h=1e-6):
    """``d/de emb(tokens)`` with ``emb.<key>`` moved by ``e * tangent``, by central differences in float64 (eager,
    the fused path)."""
    emb64 = copy.deepcopy(emb).double()
    params = dict(emb64.named_parameters())
    with torch.no_grad():
        base = params[key].clone()
        params[key].copy_(base + h * tangent)
        plus = emb64(tokens)
        params[key].copy_(base - h * tangent)
        minus = emb64(tokens)
        params[key].copy_(base)
    return (plus - minus) / (2 * h)


def jvp_tolerance(emb):
    return {"rtol": 1e-5, "atol": 1e-6} if next(emb.parameters()).dtype == torch.float64 else {"rtol": 1e-3,
                                                                                              "atol": 1e-4}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_jvp_equals_finite_differences(name):
    emb = make(name)
    params = params_of(emb)
    for key in params:
        tangent = torch.randn(params[key].shape, generator=torch.Generator().manual_seed(1), dtype=params[key].dtype)
        out, tan = jvp(lambda p: functional_call(emb, {**params, key: p}, (TOKENS,)), (params[key],), (tangent,))
        torch.testing.assert_close(out, emb(TOKENS), **tolerance(emb))
        want = finite_difference(emb, key, tangent, TOKENS).to(tan.dtype)
        torch.testing.assert_close(tan, want, **jvp_tolerance(emb), msg=lambda m, key=key: f"{key}: {m}")


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_per_sample_jvp_equals_finite_differences(name):
    """vmap(jvp) over the batch (jvp alone worked on these)."""
    emb = make(name)
    params = params_of(emb)
    key = next(iter(params))
    tangent = torch.randn(params[key].shape, generator=torch.Generator().manual_seed(1))
    f = lambda t: jvp(lambda p: functional_call(emb, {**params, key: p}, (t,)), (params[key],), (tangent,))  # noqa
    out, tan = vmap(f)(TOKENS)
    torch.testing.assert_close(out, emb(TOKENS), **tolerance(emb))
    torch.testing.assert_close(tan, finite_difference(emb, key, tangent, TOKENS).to(tan.dtype), **jvp_tolerance(emb))


@pytest.mark.parametrize("name", sorted(n for n in FUSED if n.startswith("order")))
def test_forward_ad_dual_frequency_gives_i_pos_times_the_wave(name):
    """``d/dw r e^{i(w pos + theta)} = i pos r e^{i(w pos + theta)}``: a tangent of ones on the frequency table
    (torch.autograd.forward_ad dual tensors, eager) gives ``i * pos * z``; also through ``torch.func.jvp`` and
    ``jacfwd``."""
    emb = make(name)
    z = emb(TOKENS).detach()
    pos = (torch.arange(TOKENS.shape[1]) + emb.first_position).to(z.real.dtype).unsqueeze(-1)
    want = 1j * pos * z
    params = params_of(emb)
    ones = torch.ones_like(params["frequency"])
    with fwAD.dual_level():
        dual = fwAD.make_dual(params["frequency"], ones)
        out = functional_call(emb, {**params, "frequency": dual}, (TOKENS,))
        primal, tangent = fwAD.unpack_dual(out)
    torch.testing.assert_close(primal, z, **tolerance(emb))
    torch.testing.assert_close(tangent, want, **jvp_tolerance(emb))
    _, tangent = jvp(lambda w: functional_call(emb, {**params, "frequency": w}, (TOKENS,)),
                     (params["frequency"],), (ones,))
    torch.testing.assert_close(tangent, want, **jvp_tolerance(emb))
    # jacfwd over the positions (dual positions): d/dpos = i w r e^{i(...)}; here summed over the L positions
    w_rows = co.nn.wave.gather_rows(params["frequency"], TOKENS).expand(z.shape)
    positions = torch.arange(TOKENS.shape[1], dtype=z.real.dtype) + emb.first_position
    jac = jacfwd(lambda p: torch.view_as_real(functional_call(emb, params, (TOKENS, p))))(positions)
    torch.testing.assert_close(torch.view_as_complex(jac.sum(-1).contiguous()), 1j * w_rows * z, **jvp_tolerance(emb))


@pytest.mark.parametrize("name", ["order", "vanilla"])
def test_forward_ad_dual_tables_equal_finite_differences(name):
    emb = make(name)
    params = params_of(emb)
    for key in params:
        tangent = torch.randn(params[key].shape, generator=torch.Generator().manual_seed(2))
        with fwAD.dual_level():
            out = functional_call(emb, {**params, key: fwAD.make_dual(params[key], tangent)}, (TOKENS,))
            tan = fwAD.unpack_dual(out).tangent
        torch.testing.assert_close(tan, finite_difference(emb, key, tangent, TOKENS).to(tan.dtype),
                                   **jvp_tolerance(emb))


def test_hessian_of_the_fused_embedding_equals_the_double_backward_of_the_reference():
    """jacfwd(jacrev) (torch.func.hessian) through the default, fused embedding; eager double backward needs
    fused=False (the fused function is differentiable once)."""
    emb = make("order")
    params = params_of(emb)
    loss = loss_of(emb)
    f = lambda r: loss({**params, "amplitude": r}, TOKENS[:1, :3])  # noqa: E731
    hess = jacfwd(jacrev(f))(params["amplitude"])
    ref = copy.deepcopy(emb)
    ref.fused = False
    g = lambda r: loss_of(ref)({**params_of(ref), "amplitude": r}, TOKENS[:1, :3])  # noqa: E731
    want = torch.autograd.functional.hessian(g, params["amplitude"])
    torch.testing.assert_close(hess, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ALL))
def test_an_id_outside_the_vocabulary_under_vmap_is_an_index_error(name):
    """The range check cannot read batched tokens: the lookup's own IndexError (nn.Embedding's) instead of vmap's
    "calling .item()" RuntimeError; outside transforms the check still names the id."""
    emb = make(name)
    bad = TOKENS.clone()
    bad[1, 2] = V
    with pytest.raises(IndexError):
        vmap(emb)(bad)
    with pytest.raises(co.embeddings.TokenIdError, match=f"id {V} is outside"):
        emb(bad)
