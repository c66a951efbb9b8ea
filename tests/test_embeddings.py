"""The embedding family against the paper's equations written out by hand."""

import cmath
import copy
import math
import re

import numpy as np
import pytest
import torch

import complexorder as co
from complexorder.embeddings import ComplexOrderEmbedding, sinusoidal_position_encoding

D64 = torch.float64


def hand_wave(r, w, theta, token, pos, d):
    """Paper Eq. 5 for one word, position and dimension, in Python complex arithmetic."""
    return r[token][d] * cmath.exp(1j * (w[token][d] * pos + theta[token][d]))


def random_embedding(**kw):
    torch.manual_seed(0)
    emb = co.ComplexOrderEmbedding(7, 5, dtype=D64, **kw)
    with torch.no_grad():
        emb.frequency.uniform_(-2, 2)
        emb.amplitude.normal_()
    return emb


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("initial_phase", [False, True])
def test_eq5_on_random_parameters_and_positions(fused, initial_phase):
    emb = random_embedding(initial_phase=initial_phase, fused=fused)
    tokens = torch.tensor([[3, 1, 4, 1], [5, 0, 2, 6]])
    positions = torch.tensor([[0.0, 2.5, 7.0, 11.0], [3.0, 1.0, 40.0, 9.0]], dtype=D64)
    out = emb(tokens, positions)
    r = emb.amplitude.tolist()
    w = emb.frequency.tolist()
    theta = emb.initial_phase.tolist() if initial_phase else [[0.0] * 5] * 7
    for b in range(2):
        for i in range(4):
            for d in range(5):
                expected = hand_wave(r, w, theta, tokens[b, i].item(), positions[b, i].item(), d)
                assert abs(out[b, i, d].item() - expected) < 1e-10


def test_default_positions_count_from_zero_along_last_dim():
    emb = random_embedding()
    tokens = torch.tensor([[3, 1, 4], [1, 5, 9 % 7]])
    assert torch.equal(emb(tokens), emb(tokens, torch.arange(3)))
    assert torch.equal(emb(tokens), emb(tokens, torch.arange(3).expand(2, 3)))
    # position 0 leaves the frequency out: the embedding is r_j exactly (no initial phase)
    assert torch.allclose(emb(tokens)[:, 0].real, emb.amplitude[tokens[:, 0]])
    assert torch.allclose(emb(tokens)[:, 0].imag, torch.zeros(2, 5, dtype=D64))


@pytest.mark.parametrize("fused", [True, False])
def test_first_position_shifts_only_the_default_positions(fused):
    emb = random_embedding(fused=fused, first_position=1, padding_idx=0)
    tokens = torch.tensor([[3, 1, 4, 0], [5, 2, 6, 1]])
    out = emb(tokens)
    r, w = emb.amplitude.tolist(), emb.frequency.tolist()
    zero = [[0.0] * 5] * 7
    for b in range(2):
        for i in range(4):  # the authors' counting: the i-th token sits at position i + 1
            for d in range(5):
                if tokens[b, i] == 0:
                    continue  # padding, checked below
                expected = hand_wave(r, w, zero, tokens[b, i].item(), i + 1, d)
                assert abs(out[b, i, d].item() - expected) < 1e-10
    assert torch.all(out[0, 3] == 0)  # padding stays exactly zero
    # explicit positions are used as given, whatever first_position says
    assert torch.equal(emb(tokens, torch.arange(4)), random_embedding(fused=fused, padding_idx=0)(tokens))
    # the shared-amplitude rows of Table 4: at position 0 every word is r_d; from position 1 on it is not
    shared = random_embedding(amplitude_sharing="word")
    assert torch.equal(shared(torch.tensor([[3]]))[0, 0], shared(torch.tensor([[5]]))[0, 0])
    shared.first_position = 1
    assert not torch.equal(shared(torch.tensor([[3]]))[0, 0], shared(torch.tensor([[5]]))[0, 0])
    assert "first_position=1" in repr(emb) and "first_position" not in repr(random_embedding())
    assert co.build_embedding("complex-order", 4, 2, first_position=2).first_position == 2
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match=r"^first_position must be a non-negative integer \(the first "
                                             r"default position\), got "):
            co.ComplexOrderEmbedding(4, 2, first_position=bad)
    with pytest.raises(ValueError, match="option\\(s\\) first_position not accepted by embedding 'tpe'"):
        co.build_embedding("tpe", 4, 2, first_position=1)


def test_output_dtype_is_complex64_for_float32_parameters():
    emb = co.ComplexOrderEmbedding(10, 3)
    assert emb(torch.tensor([[1, 2]])).dtype == torch.complex64
    assert emb(torch.tensor([[1, 2]], dtype=torch.int32)).dtype == torch.complex64


def test_claim1_linear_witness_and_boundedness():
    """g(p + n) = exp(i w n) * g(p) for every p: the witness depends on n and the word only."""
    emb = random_embedding(initial_phase=True)
    word = torch.tensor([4])
    p = torch.arange(0, 60, dtype=D64)
    g = emb(word.expand(60), p)  # [60, D]
    w = emb.frequency[4]
    for n in (1, 2, 7, 13):
        witness = torch.exp(1j * w * n)
        assert torch.allclose(g[n:], witness * g[:-n], atol=1e-10)
    assert torch.allclose(g.abs(), emb.amplitude[4].abs().expand(60, 5), atol=1e-12)


def test_appendix_a_word_sharing_sinusoidal_frequencies_reproduce_the_transformer_pe():
    d_complex = 8
    d_model = 2 * d_complex
    emb = co.ComplexOrderEmbedding(3, d_complex, frequency_sharing="word", amplitude_sharing="word",
                                   amplitude_init="ones", frequency_init="sinusoidal", dtype=D64)
    positions = torch.arange(50)
    z = emb(torch.zeros(50, dtype=torch.long), positions)
    for pos in range(50):
        for k in range(d_complex):
            pe_2k = math.sin(pos / 10000 ** (2 * k / d_model))
            pe_2k1 = math.cos(pos / 10000 ** (2 * k / d_model))
            assert abs(z[pos, k].imag.item() - pe_2k) < 1e-9  # Eq. 8: PE_2k = Im f
            assert abs(z[pos, k].real.item() - pe_2k1) < 1e-9  # PE_2k+1 = Re f
    # the same words embed identically: a pure position encoding
    assert torch.equal(emb(torch.tensor([1, 2]), torch.tensor([3, 3]))[0], emb(torch.tensor([1, 2]), torch.tensor([3, 3]))[1])


def test_sinusoidal_position_encoding_is_eq7():
    pe = sinusoidal_position_encoding(torch.arange(20), 6)
    for pos in range(20):
        for k in range(3):
            assert abs(pe[pos, 2 * k].item() - math.sin(pos / 10000 ** (2 * k / 6))) < 1e-5
            assert abs(pe[pos, 2 * k + 1].item() - math.cos(pos / 10000 ** (2 * k / 6))) < 1e-5


SHARINGS = [(None, None), ("word", None), ("dimension", None), (None, "word"), (None, "dimension"), ("word", "word")]


@pytest.mark.parametrize("freq_share,amp_share", SHARINGS)
@pytest.mark.parametrize("initial_phase", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_fused_path_equals_reference_values_and_gradients(freq_share, amp_share, initial_phase, padding_idx):
    torch.manual_seed(1)
    kw = dict(frequency_sharing=freq_share, amplitude_sharing=amp_share, initial_phase=initial_phase,
              padding_idx=padding_idx, frequency_init="uniform", dtype=D64)
    fast = co.ComplexOrderEmbedding(9, 6, **kw)
    slow = co.ComplexOrderEmbedding(9, 6, fused=False, **kw)
    slow.load_state_dict(fast.state_dict())
    tokens = torch.randint(0, 9, (3, 11))
    tokens[0, 3] = 2
    positions = torch.rand(3, 11, dtype=D64) * 30
    grad = torch.randn(3, 11, 6, dtype=torch.complex128)
    outs = []
    for emb in (fast, slow):
        out = emb(tokens, positions)
        (out * grad.conj()).real.sum().backward()
        outs.append(out)
    assert torch.allclose(outs[0], outs[1], atol=1e-12)
    for (name, a), (_, b) in zip(fast.named_parameters(), slow.named_parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-10), name


def test_gradcheck_fused_function():
    torch.manual_seed(0)
    emb = co.ComplexOrderEmbedding(5, 3, initial_phase=True, padding_idx=1, frequency_init="uniform", dtype=D64)
    tokens = torch.tensor([[0, 1, 2, 4, 4]])
    pos = torch.tensor([0.0, 1.0, 2.0, 3.5, 9.0], dtype=D64)
    fn = lambda r, w, t: co.nn.functional.complex_order_embedding(tokens, pos, r, w, t, 1)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (emb.amplitude, emb.frequency, emb.initial_phase))


@pytest.mark.parametrize("cls", [co.ComplexVanillaEmbedding, co.ComplexOrderEmbedding])
def test_unfused_embeddings_are_differentiable_twice_by_hand(cls):
    """A gradient penalty: with loss = sum Re z = sum r cos(phi), d loss / d phi = -r sin(phi), and the penalty
    P = sum (r sin(phi))^2 has d P / d r = 2 r sin(phi)^2. The float32 complex-vanilla embedding always took the
    native kernel (differentiable once), with no switch to leave it."""
    torch.manual_seed(0)
    emb = cls(6, 3, fused=False)
    tokens = torch.tensor([[1, 4, 2]])  # distinct words: one occurrence per table row
    phase_table = emb.phase if cls is co.ComplexVanillaEmbedding else emb.frequency  # positions 0, 1, 2
    (g,) = torch.autograd.grad(emb(tokens).real.sum(), phase_table, create_graph=True)
    g.pow(2).sum().backward()
    r = emb.amplitude.detach()[tokens[0]]
    phase = phase_table.detach()[tokens[0]] * (1 if cls is co.ComplexVanillaEmbedding else torch.arange(3.0)[:, None])
    positions = 1 if cls is co.ComplexVanillaEmbedding else torch.arange(3.0)[:, None]  # d phi / d w = pos
    expected = 2 * r * (positions * torch.sin(phase)) ** 2
    torch.testing.assert_close(emb.amplitude.grad[tokens[0]], expected)
    assert "fused=False" in repr(emb)
    fused = cls(6, 3)  # differentiable once: a backward that would build a graph is refused, not silently flat
    with pytest.raises(RuntimeError, match="differentiable once; .* build the embedding with fused=False$"):
        torch.autograd.grad(fused(tokens).real.sum(), fused.amplitude, create_graph=True)


def test_gradients_reach_the_frequencies():
    emb = co.ComplexOrderEmbedding(10, 4)
    emb(torch.tensor([[1, 2, 3]])).abs().sum().backward()  # |z| does not depend on w ...
    assert torch.allclose(emb.frequency.grad, torch.zeros_like(emb.frequency.grad), atol=1e-5)
    emb.zero_grad()
    emb(torch.tensor([[1, 2, 3]])).real.sum().backward()  # ... but Re z does
    assert emb.frequency.grad[2].abs().sum() > 0 and emb.frequency.grad[3].abs().sum() > 0
    assert emb.frequency.grad[1].abs().sum() == 0  # word 1 sits at position 0: w has no effect there
    assert emb.frequency.grad[5].abs().sum() == 0  # absent word


@pytest.mark.parametrize("freq_share,amp_share", SHARINGS)
@pytest.mark.parametrize("fused", [True, False])
def test_padding_embeds_to_exact_zero_and_gets_no_gradient(freq_share, amp_share, fused):
    emb = co.ComplexOrderEmbedding(6, 4, padding_idx=-1, frequency_sharing=freq_share, amplitude_sharing=amp_share,
                                   initial_phase=True, fused=fused)
    assert emb.padding_idx == 5
    with torch.no_grad():  # even a non-zero padding row embeds to 0
        emb.amplitude.normal_()
    tokens = torch.tensor([[1, 5, 2, 5, 5]])
    out = emb(tokens, torch.tensor([0.0, 3.0, 4.0, 100.0, 7.5]))
    assert torch.equal(out[0, [1, 3, 4]], torch.zeros(3, 4, dtype=torch.complex64))
    (out.real.sum() + out.imag.sum()).backward()
    for name in ("amplitude", "frequency", "initial_phase"):
        p = getattr(emb, name)
        if p.shape[0] != 1:
            assert torch.equal(p.grad[5], torch.zeros_like(p.grad[5])), name
    # word-shared tables: the padding tokens add nothing to the shared gradient
    if amp_share == "word":
        ref = co.ComplexOrderEmbedding(6, 4, padding_idx=5, amplitude_sharing="word", frequency_sharing=freq_share,
                                       initial_phase=True)
        ref.load_state_dict(emb.state_dict())
        o = ref(torch.tensor([[1, 2]]), torch.tensor([0.0, 4.0]))
        (o.real.sum() + o.imag.sum()).backward()
        assert torch.allclose(ref.amplitude.grad, emb.amplitude.grad, atol=1e-6)


def test_reset_parameters_zeroes_padding_rows():
    emb = co.ComplexOrderEmbedding(6, 4, padding_idx=0, initial_phase=True)
    for p in (emb.amplitude, emb.frequency, emb.initial_phase):
        assert torch.equal(p[0], torch.zeros(4))


@pytest.mark.parametrize("kw,expected", [
    ({}, 2 * 50 * 8),
    ({"initial_phase": True}, 3 * 50 * 8),
    ({"frequency_sharing": "word"}, 50 * 8 + 8),
    ({"frequency_sharing": "dimension"}, 50 * 8 + 50),
    ({"amplitude_sharing": "word"}, 50 * 8 + 8),
    ({"amplitude_sharing": "dimension"}, 50 * 8 + 50),
])
def test_parameter_counts_follow_the_paper(kw, expected):
    emb = co.ComplexOrderEmbedding(50, 8, **kw)
    assert sum(p.numel() for p in emb.parameters()) == expected


def test_sharing_attributes_broadcast_to_v_by_d():
    emb = co.ComplexOrderEmbedding(50, 8, frequency_sharing="word", amplitude_sharing="dimension")
    assert emb.frequency.shape == (1, 8) and emb.amplitude.shape == (50, 1) and emb.initial_phase is None
    assert torch.broadcast_shapes(emb.frequency.shape, emb.amplitude.shape) == (50, 8)


def test_dimension_sharing_sinusoidal_init_spreads_frequencies_over_words():
    emb = co.ComplexOrderEmbedding(40, 8, frequency_sharing="dimension")
    assert emb.frequency.shape == (40, 1)
    assert torch.allclose(emb.frequency.sort(0).values.squeeze(1), co.sinusoidal_frequencies(40).float().sort().values)


def test_pretrained_amplitudes_and_freezing():
    vectors = torch.randn(12, 6)
    emb = co.ComplexOrderEmbedding.from_pretrained(vectors, freeze_amplitude=True)
    assert torch.equal(emb.amplitude, vectors) and not emb.amplitude.requires_grad
    z = emb(torch.tensor([[3, 4]]), torch.zeros(2))
    assert torch.allclose(z.real, vectors[[3, 4]].unsqueeze(0))
    with pytest.raises(ValueError, match=r"amplitude_init must be a real tensor of shape \(12, 5\)"):
        co.ComplexOrderEmbedding(12, 5, amplitude_init=vectors)
    vanilla = co.ComplexVanillaEmbedding.from_pretrained(vectors, padding_idx=0)
    assert torch.equal(vanilla.amplitude[1:], vectors[1:]) and vanilla.amplitude.requires_grad
    z = vanilla(torch.tensor([[3, 0]]))
    torch.testing.assert_close(z.abs()[0, 0], vectors[3].abs())  # |r e^{i theta}| = |r|
    assert z[0, 1].abs().max() == 0
    with pytest.raises(ValueError, match=r"^amplitude must be a 2-d \[V, D\] tensor, got \(12,\)$"):
        co.ComplexVanillaEmbedding.from_pretrained(vectors[:, 0])


@pytest.mark.parametrize("fused", [True, False])
def test_sparse_gradients_equal_dense_ones(fused):
    torch.manual_seed(0)
    dense = co.ComplexOrderEmbedding(20, 4, padding_idx=0, frequency_init="uniform")
    sparse = co.ComplexOrderEmbedding(20, 4, padding_idx=0, frequency_init="uniform", sparse=True, fused=fused)
    sparse.load_state_dict(dense.state_dict())
    tokens = torch.tensor([[0, 3, 3, 7, 19]])
    for emb in (dense, sparse):
        emb(tokens).real.sum().backward()
    assert sparse.amplitude.grad.is_sparse and sparse.frequency.grad.is_sparse
    assert torch.allclose(sparse.amplitude.grad.to_dense(), dense.amplitude.grad)
    assert torch.allclose(sparse.frequency.grad.to_dense(), dense.frequency.grad)
    opt = torch.optim.SparseAdam(sparse.parameters(), lr=0.1)  # the documented pairing works
    before = {n: p.detach().clone() for n, p in sparse.named_parameters()}
    opt.step()
    for name, p in sparse.named_parameters():  # only the rows of the batch's (non-padding) words move
        moved = (p.detach() != before[name]).any(1).nonzero().flatten().tolist()
        assert moved == [3, 7, 19], name


@pytest.mark.parametrize("name", list(co.EMBEDDINGS))
def test_every_embedding_gives_sparse_gradients_equal_to_dense_ones(name):
    torch.manual_seed(0)
    dense = co.build_embedding(name, 20, 4, padding_idx=0, max_positions=8)
    sparse = co.build_embedding(name, 20, 4, padding_idx=0, max_positions=8, sparse=True)
    sparse.load_state_dict(dense.state_dict())
    tokens = torch.tensor([[0, 3, 3, 7, 19], [5, 5, 0, 0, 0]])
    for emb in (dense, sparse):
        out = emb(tokens)
        (out.real.sum() + out.imag.square().sum() if out.is_complex() else out.square().sum()).backward()
    word_tables = sparse.sparse_parameters()
    assert word_tables and not dense.sparse_parameters()
    ids = {id(p) for p in word_tables}
    for (n, p), (_, q) in zip(sparse.named_parameters(), dense.named_parameters()):
        if id(p) in ids:
            assert p.grad.is_sparse, n
            torch.testing.assert_close(p.grad.to_dense(), q.grad)
            assert torch.all(q.grad[0] == 0)  # padding rows get no gradient
        else:  # e.g. the learned position table of "pe": dense, like everything after the embedding
            assert not p.grad.is_sparse and torch.equal(p.grad, q.grad), n


def test_state_dict_round_trip():
    a = co.ComplexOrderEmbedding(10, 4, initial_phase=True, frequency_sharing="word")
    b = co.ComplexOrderEmbedding(10, 4, initial_phase=True, frequency_sharing="word")
    b.load_state_dict(a.state_dict())
    t = torch.tensor([[1, 2, 3]])
    assert torch.equal(a(t), b(t))


# ---------------------------------------------------------------------------- bad input


def test_token_ids_outside_the_vocabulary():
    emb = co.ComplexOrderEmbedding(10, 4)
    with pytest.raises(ValueError, match=r"tokens: id 10 is outside the vocabulary \[0, 10\)"):
        emb(torch.tensor([[1, 10]]))
    with pytest.raises(ValueError, match=r"tokens: id -3 is outside the vocabulary \[0, 10\)"):
        emb(torch.tensor([[-3, 1]]))


@pytest.mark.parametrize("name", list(co.EMBEDDINGS))
def test_every_embedding_rejects_bad_tokens_and_positions(name):
    emb = co.build_embedding(name, 10, 4)
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        emb(torch.tensor([[1.0, 2.0]]))
    with pytest.raises(TypeError, match="tokens must be an integer torch.Tensor"):
        emb([[1, 2]])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        emb(torch.tensor([[1, 12]]))
    with pytest.raises(IndexError, match="outside the vocabulary"):  # stop 73: what nn.Embedding raises, caught alike
        emb(torch.tensor([[-1, 2]]))
    with pytest.raises(IndexError):
        torch.nn.Embedding(10, 4)(torch.tensor([[1, 12]]))
    with pytest.raises(ValueError, match=r"positions of shape \(3,\) do not broadcast to tokens of shape \(2, 2\)"):
        emb(torch.tensor([[1, 2], [3, 4]]), torch.arange(3))
    with pytest.raises(ValueError, match=r"do not broadcast"):  # broadcasting would *grow* the tokens
        emb(torch.tensor([[1, 2]]), torch.zeros(3, 2))
    for bad in (float("nan"), float("inf"), float("-inf")):  # a NaN phase would make every output NaN
        with pytest.raises(ValueError, match=rf"^positions must be finite real numbers, got {bad}$"):
            emb(torch.tensor([[1, 2]]), torch.tensor([0.0, bad]))
    if name != "pe":  # a finite float64 position beyond float32's range (pe takes integer positions only)
        with pytest.raises(ValueError, match=r"^positions must be finite real numbers, got 1e\+300 \(not finite in "
                                             r"torch.float32\)$"):
            emb(torch.tensor([[1, 2]]), torch.tensor([0.0, 1e300], dtype=torch.float64))
    far = torch.tensor([2 ** 24, 2 ** 24 + 1])  # one float32 number: the two positions got one encoding
    if name in ("tpe", "complex-order"):
        with pytest.raises(ValueError, match=r"^positions: integers up to 2\*\*24 = 16,777,216 are exact in float32, got "
                                             r"16777217; use a float64 embedding \(\.double\(\)\), or count positions "
                                             r"from a nearer origin$"):
            emb(torch.tensor([[1, 1]]), far)
        out = copy.deepcopy(emb).double()(torch.tensor([[1, 1]]), far)
        assert not torch.equal(out[0, 0], out[0, 1])
        # float positions alike: 2**24 + 1 in float64 became 2**24 in float32 unseen, and 1e30 had a meaningless phase
        for positions, shown in ((far.double(), "16777217"), (torch.tensor([0.0, 1e30]), "1.000000015e+30"),
                                 (torch.tensor([-(2.0 ** 24) - 2, 0.0]), "-16777218")):
            with pytest.raises(ValueError, match=rf"^positions: float32 resolves positions only up to 2\*\*24 = "
                                                 rf"16,777,216 in magnitude \(beyond, neighbouring integers round to "
                                                 rf"one value\), "
                                                 rf"got {re.escape(shown)}; use a float64 embedding \(\.double\(\)\), "
                                                 rf"or count positions from a nearer origin$"):
                emb(torch.tensor([[1, 1]]), positions)
        emb(torch.tensor([[1, 1]]), torch.tensor([2.0 ** 24, 0.5]))  # up to 2**24, fractions included: taken
        out = copy.deepcopy(emb).double()(torch.tensor([[1, 1]]), far.double())
        assert not torch.equal(out[0, 0], out[0, 1])
    elif name != "pe":  # positions validated and ignored: no limit
        out = emb(torch.tensor([[1, 1]]), far)
        assert torch.equal(out[0, 0], out[0, 1])
    for v, d in ((0, 4), (10, 0), (-1, 4)):
        with pytest.raises(ValueError, match=rf"^num_embeddings and embedding_dim must be positive integers, got {v} and {d}$"):
            co.build_embedding(name, v, d)
    with pytest.raises(ValueError, match=r"^tokens must have at least one dimension \[\.\.\., L\], got a 0-d tensor$"):
        emb(torch.tensor(3))
    with pytest.raises(TypeError, match=r"^positions must be a torch.Tensor or None, got list$"):
        emb(torch.tensor([[1, 2]]), [0, 1])
    for dtype in (torch.complex64, torch.bool):
        with pytest.raises(TypeError, match=rf"^positions must be an integer or real floating tensor, got dtype {dtype}$"):
            emb(torch.tensor([[1, 2]]), torch.zeros(2, dtype=dtype))
    for bad in (10, -11):
        with pytest.raises(ValueError, match=rf"^padding_idx must be within \[-10, 10\), got {bad}$"):
            co.build_embedding(name, 10, 4, padding_idx=bad)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="frequency_sharing must be one of None, 'word', 'dimension'; got 'words'"):
        co.ComplexOrderEmbedding(5, 2, frequency_sharing="words")
    with pytest.raises(ValueError, match="amplitude_sharing must be one of"):
        co.ComplexOrderEmbedding(5, 2, amplitude_sharing="all")
    with pytest.raises(ValueError, match="frequency_init must be one of 'sinusoidal', 'uniform', 'zeros', 'word-index', 'normal'"):
        co.ComplexOrderEmbedding(5, 2, frequency_init="geometric")
    with pytest.raises(ValueError, match="unknown embedding 'complex'; valid names: none, pe, tpe, complex-vanilla, complex-order"):
        co.build_embedding("complex", 5, 2)
    with pytest.raises(ValueError, match="option.s. initial_phase not accepted by embedding 'tpe'"):
        co.build_embedding("tpe", 5, 2, initial_phase=True)
    with pytest.raises(ValueError, match="makes all embedding dimensions identical"):
        co.ComplexOrderEmbedding(5, 2, frequency_sharing="dimension", amplitude_sharing="dimension")


def test_pretrained_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"pretrained must be a real tensor of shape \(5, 2\) \(num_embeddings, embedding_dim\), got \(5, 3\)"):
        co.build_embedding("complex-order", 5, 2, pretrained=torch.zeros(5, 3))
    with pytest.raises(ValueError, match=r"vectors must be a real tensor of shape \(5, 2\)"):
        co.WordEmbedding(5, 2).load_word_vectors(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"^pretrained must be real-valued, got dtype torch.complex64$"):
        co.build_embedding("complex-order", 5, 2, pretrained=torch.zeros(5, 2, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"^max_positions must be a positive integer, got 0$"):
        co.LearnedPositionalEmbedding(5, 2, max_positions=0)


# ---------------------------------------------------------------------------- the baselines


def test_tpe_is_word_vector_plus_eq7():
    emb = co.SinusoidalPositionalEmbedding(10, 6)
    tokens = torch.tensor([[4, 2, 7]])
    out = emb(tokens)
    for i in range(3):
        for k in range(3):
            assert abs(out[0, i, 2 * k].item() - emb.weight[tokens[0, i], 2 * k].item()
                       - math.sin(i / 10000 ** (2 * k / 6))) < 1e-5
            assert abs(out[0, i, 2 * k + 1].item() - emb.weight[tokens[0, i], 2 * k + 1].item()
                       - math.cos(i / 10000 ** (2 * k / 6))) < 1e-5


def test_learned_pe_is_word_plus_position_vector():
    emb = co.LearnedPositionalEmbedding(10, 3, max_positions=5, padding_idx=0)
    tokens = torch.tensor([[4, 2, 0]])
    out = emb(tokens)
    assert torch.allclose(out[0, 1], emb.weight[2] + emb.position_weight[1])
    assert torch.equal(out[0, 2], torch.zeros(3))
    with pytest.raises(ValueError, match=r"positions must be integers in \[0, 5\)"):
        emb(tokens, torch.tensor([0, 1, 5]))


def test_complex_vanilla_ignores_position():
    emb = co.ComplexVanillaEmbedding(10, 4)
    tokens = torch.tensor([[3, 3, 3]])
    out = emb(tokens)
    assert torch.allclose(out[0, 0], out[0, 2])
    assert torch.allclose(out[0, 0], torch.polar(emb.amplitude[3], emb.phase[3]))
    assert (emb.phase >= -math.pi).all() and (emb.phase < math.pi).all()


def test_word_embedding_ignores_position_and_pads():
    emb = co.build_embedding("none", 10, 4, padding_idx=1)
    out = emb(torch.tensor([[1, 3, 3]]))
    assert torch.equal(out[0, 0], torch.zeros(4)) and torch.equal(out[0, 1], out[0, 2])


@pytest.mark.parametrize("name", list(co.EMBEDDINGS))
def test_factory_loads_pretrained_vectors_into_the_word_part(name):
    vectors = torch.randn(10, 4)
    emb = co.build_embedding(name, 10, 4, pretrained=vectors)
    table = emb.amplitude if emb.is_complex else emb.weight
    assert torch.equal(table, vectors)


def test_complex_to_real_concatenates_parts():
    z = torch.randn(2, 3, dtype=torch.complex64)
    x = co.complex_to_real(z)
    assert x.shape == (2, 6) and torch.equal(x[:, :3], z.real) and torch.equal(x[:, 3:], z.imag)
    real = torch.randn(2, 3)
    assert co.complex_to_real(real) is real


def test_word_index_frequency_init_is_the_authors_position_embedding():
    # FreedomIntelligence/complex-order, TEXT CLASSIFICATION/CNN/model_cnn/Complex_order.py:
    # W_pos = range(vocab_size)[:, None] @ (1 / 10000 ** (2 * range(D) / D))[None, :]
    V, D = 7, 4
    emb = co.ComplexOrderEmbedding(V, D, frequency_init="word-index", dtype=D64)
    for j in range(V):
        for d in range(D):
            assert emb.frequency[j, d].item() == pytest.approx(j / 10000.0 ** (2 * d / D), rel=1e-12)
    # the padding row stays position-free; one frequency per word ("dimension" sharing) is j
    padded = co.ComplexOrderEmbedding(V, D, frequency_init="word-index", padding_idx=0, dtype=D64)
    assert torch.equal(padded.frequency[0], torch.zeros(D, dtype=D64))
    shared = co.ComplexOrderEmbedding(V, D, frequency_init="word-index", frequency_sharing="dimension", dtype=D64)
    assert torch.equal(shared.frequency[:, 0], torch.arange(V, dtype=D64))
    assert "frequency_init='word-index'" in repr(emb)
    with pytest.raises(ValueError, match="frequency_init='word-index' needs a frequency per word"):
        co.ComplexOrderEmbedding(V, D, frequency_init="word-index", frequency_sharing="word")


def test_reprs_name_every_non_default_option():
    assert repr(co.build_embedding("complex-order", 100, 16, padding_idx=0, frequency_sharing="word")) == \
        "ComplexOrderEmbedding(100, 16, padding_idx=0, frequency_sharing='word')"
    assert repr(co.ComplexOrderEmbedding(10, 4, amplitude_sharing="dimension", initial_phase=True,
                                         frequency_init="zeros", sparse=True)) == \
        "ComplexOrderEmbedding(10, 4, amplitude_sharing='dimension', initial_phase=True, frequency_init='zeros', " \
        "sparse=True)"
    assert repr(co.ComplexVanillaEmbedding(10, 4, padding_idx=1, sparse=True)) == \
        "ComplexVanillaEmbedding(10, 4, padding_idx=1, sparse=True)"
    assert repr(co.LearnedPositionalEmbedding(10, 4, max_positions=7, sparse=True)) == \
        "LearnedPositionalEmbedding(10, 4, sparse=True, max_positions=7)"
    assert repr(co.WordEmbedding(10, 4)) == "WordEmbedding(10, 4)"


def test_frequency_init_options_fill_the_table_as_documented():
    torch.manual_seed(0)
    uniform = co.ComplexOrderEmbedding(200, 16, frequency_init="uniform").frequency.detach()
    assert uniform.min() >= 0 and uniform.max() < 2 * math.pi and (uniform > math.pi).float().mean() > 0.4
    assert torch.all(co.ComplexOrderEmbedding(5, 4, frequency_init="zeros").frequency == 0)
    torch.manual_seed(1)
    normal = co.ComplexOrderEmbedding(300, 16, frequency_init="normal", padding_idx=0).frequency.detach()
    torch.manual_seed(1)
    co.ComplexOrderEmbedding(300, 16, frequency_init="zeros")  # the same amplitude draw first
    assert torch.equal(normal[1:], torch.randn(300, 16)[1:])  # nn.Embedding's N(0, 1), drawn after the amplitudes
    assert torch.all(normal[0] == 0)  # the padding row
    assert torch.all(co.ComplexOrderEmbedding(5, 4, frequency_init=0.3).frequency == 0.3)
    row = torch.tensor([[0.5, 1.0, 1.5, 2.0]])
    assert torch.equal(co.ComplexOrderEmbedding(5, 4, frequency_init=row).frequency.detach(), row.expand(5, 4))
    sinus = co.ComplexOrderEmbedding(5, 4).frequency.detach()
    assert torch.allclose(sinus, (10000.0 ** (-2 * torch.arange(4.0) / 8)).expand(5, 4))  # 10000^(-2d / 2D)
    per_word = co.ComplexOrderEmbedding(7, 4, frequency_sharing="dimension").frequency.detach()
    assert per_word.shape == (7, 1)
    assert torch.allclose(per_word.flatten().sort().values, (10000.0 ** (-torch.arange(7.0) / 7)).sort().values)


@pytest.mark.parametrize("module", ["complexorder.embeddings", "complexorder.nn.linear", "complexorder.nn.conv",
                                    "complexorder.nn.recurrent", "complexorder.nn.attention",
                                    "complexorder.nn.transformer", "complexorder.nn.normalization",
                                    "complexorder.nn.activation", "complexorder.models.fasttext",
                                    "complexorder.models.cnn", "complexorder.models.lstm",
                                    "complexorder.models.transformer", "complexorder.models.seq2seq",
                                    "complexorder.models.transformer_xl", "complexorder.nn.functional",
                                    "complexorder.models", "complexorder.experiments.classification",
                                    "complexorder.nn.value_checks"])
def test_docstring_examples_run_and_print_what_they_claim(module):
    import doctest
    import importlib

    torch.manual_seed(0)
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_frequency_init_and_sizes_of_the_wrong_kind_are_one_line_errors():
    """A frequency_init tensor of the wrong shape was an expand error from inside torch, a complex one silently lost
    its imaginary part, None silently started every frequency at zero; a float size was an error from torch.empty."""
    with pytest.raises(ValueError, match=r"^frequency_init must be a real tensor broadcastable to the frequency table "
                                         r"\(10, 4\), got \(3, 3\) torch.float32$"):
        co.ComplexOrderEmbedding(10, 4, frequency_init=torch.zeros(3, 3))
    with pytest.raises(ValueError, match=r"^frequency_init must be a real tensor broadcastable to the frequency table "
                                         r"\(10, 4\), got \(10, 4\) torch.complex64$"):
        co.ComplexOrderEmbedding(10, 4, frequency_init=torch.zeros(10, 4, dtype=torch.complex64))
    with pytest.raises(TypeError, match=r"^frequency_init must be one of 'sinusoidal', 'uniform', 'zeros', "
                                        r"'word-index', 'normal', a number or a tensor, got NoneType$"):
        co.ComplexOrderEmbedding(10, 4, frequency_init=None)
    emb = co.ComplexOrderEmbedding(10, 4, frequency_init=torch.arange(4.0))  # [D] broadcasts to [V, D]
    assert torch.equal(emb.frequency[3], torch.arange(4.0))
    with pytest.raises(ValueError, match=r"^num_embeddings and embedding_dim must be positive integers, got 10.5 and 4$"):
        co.build_embedding("complex-order", 10.5, 4)
    # TPE's optional factor of the sinusoids (the Transformer-XL control sets it): Eq. 7 scaled, a bad value named
    tokens, positions = torch.tensor([[3, 4]]), torch.tensor([[2.0, 7.0]])
    plain, scaled = co.build_embedding("tpe", 10, 4), co.build_embedding("tpe", 10, 4, position_scale=0.5)
    scaled.load_state_dict(plain.state_dict())
    pe = co.sinusoidal_position_encoding(positions, 4)
    torch.testing.assert_close(scaled(tokens, positions) - plain(tokens, positions), -0.5 * pe)
    assert "position_scale=0.5" in repr(scaled) and "position_scale" not in repr(plain)
    with pytest.raises(ValueError, match=r"^position_scale must be a positive number, got 0$"):
        co.build_embedding("tpe", 10, 4, position_scale=0)
    # integer scalars of NumPy and torch are integers (they were accepted before the check)
    assert co.build_embedding("complex-order", np.int64(10), torch.tensor(4)).amplitude.shape == (10, 4)


@pytest.mark.parametrize("kind", ["complex-order", "complex-vanilla"])
def test_phase_dropout_drops_or_stretches_each_phase_in_training_only(kind):
    # Each phase phi (w * pos + theta; theta alone for complex-vanilla) is either dropped (the value becomes the
    # real amplitude r) or stretched to phi / (1 - p); evaluation mode is the plain embedding; padding stays 0.
    p = 0.25
    torch.manual_seed(0)
    if kind == "complex-order":
        emb = co.ComplexOrderEmbedding(7, 5, dtype=D64, padding_idx=0, phase_dropout=p, initial_phase=True)
        with torch.no_grad():
            emb.frequency.uniform_(-2, 2)
            emb.frequency[0].zero_()
        w, theta = emb.frequency.detach(), emb.initial_phase.detach()
    else:
        emb = co.ComplexVanillaEmbedding(7, 5, dtype=D64, padding_idx=0, phase_dropout=p)
        w, theta = torch.zeros(7, 5, dtype=D64), emb.phase.detach()
    r = emb.amplitude.detach()
    tokens = torch.tensor([[1, 2, 3, 4, 5, 6, 0] * 20])
    out = emb(tokens).detach()
    dropped = kept = 0
    for i, token in enumerate(tokens[0].tolist()):
        pos = i if kind == "complex-order" else 0
        for d in range(5):
            phi = float(w[token, d]) * pos + float(theta[token, d])
            got = complex(out[0, i, d])
            if token == 0:
                assert got == 0
                continue
            as_dropped = float(r[token, d])
            as_kept = float(r[token, d]) * cmath.exp(1j * phi / (1 - p))
            if abs(got - as_dropped) < 1e-12 and abs(as_kept - as_dropped) > 1e-6:
                dropped += 1
            else:
                assert abs(got - as_kept) < 1e-12
                kept += 1
    assert 0.15 < dropped / (dropped + kept) < 0.35  # about p of 600 phases
    emb.eval()
    plain = emb(tokens).detach()
    for i, token in enumerate(tokens[0].tolist()[:7]):
        pos = i if kind == "complex-order" else 0
        for d in range(5):
            want = float(r[token, d]) * cmath.exp(1j * (float(w[token, d]) * pos + float(theta[token, d])))
            assert abs(complex(plain[0, i, d]) - (0 if token == 0 else want)) < 1e-12


def test_phase_dropout_gives_dropped_phases_no_frequency_gradient():
    torch.manual_seed(3)
    emb = co.ComplexOrderEmbedding(4, 64, dtype=D64, phase_dropout=0.5)
    out = emb(torch.tensor([2, 2]), positions=torch.tensor([3.0, 3.0], dtype=D64))
    out.real.sum().backward()
    # each dimension's two copies of word 2 at position 3: the gradient of w sums over the copies that were kept
    r, w = emb.amplitude.detach()[2], emb.frequency.detach()[2]
    per_copy = -r * torch.sin(3 * w / 0.5) * 3 / 0.5  # d/dw of r cos(3 w / (1 - p))
    kept = (out.imag.detach() != 0).to(D64)  # sin of a stretched phase is non-zero here; a dropped one is 0
    assert torch.allclose(emb.frequency.grad[2], (kept * per_copy).sum(0))


@pytest.mark.parametrize("bad", [1, 1.0, -0.1, True, "0.1", float("nan")])
def test_phase_dropout_must_be_a_probability(bad):
    for cls in (co.ComplexOrderEmbedding, co.ComplexVanillaEmbedding):
        with pytest.raises(ValueError, match=r"^phase_dropout must be a number in \[0, 1\) \(the probability of "
                                             r"dropping a phase\), got "):
            cls(5, 4, phase_dropout=bad)


def test_phase_dropout_reaches_the_complex_embeddings_through_the_factory_and_repr():
    from complexorder.embeddings import build_embedding
    assert repr(build_embedding("complex-order", 10, 4, phase_dropout=0.1)) == \
        "ComplexOrderEmbedding(10, 4, phase_dropout=0.1)"
    assert repr(build_embedding("complex-vanilla", 10, 4, padding_idx=0, phase_dropout=0.2)) == \
        "ComplexVanillaEmbedding(10, 4, padding_idx=0, phase_dropout=0.2)"
    with pytest.raises(ValueError, match=r"^option\(s\) phase_dropout not accepted by embedding 'tpe'; accepted: "):
        build_embedding("tpe", 10, 4, phase_dropout=0.1)


# --- stop 70: edge cases found by a review -------------------------------------------------------------------


@pytest.mark.parametrize("sharing", [None, "word"])
def test_sinusoidal_start_of_a_one_dimensional_table_is_the_geometric_frequency_of_every_word(sharing):
    # D = 1 made a [V, 1] table look like dimension sharing: per-word frequencies in random order (no sharing)
    # or a crash (word sharing). Every word starts at 10000^(-2*0/2) = 1.
    emb = co.ComplexOrderEmbedding(6, 1, frequency_sharing=sharing)
    assert torch.equal(emb.frequency, torch.ones_like(emb.frequency))


def test_dimension_shared_sinusoidal_start_still_spreads_the_range_over_words():
    emb = co.ComplexOrderEmbedding(6, 4, frequency_sharing="dimension")
    expected = torch.pow(10000.0, -torch.arange(6, dtype=torch.float64) / 6).float()
    assert torch.allclose(emb.frequency.flatten().sort().values, expected.sort().values)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("name", ["none", "complex-vanilla"])
def test_position_free_embeddings_accept_positions_that_float16_cannot_hold(name):
    # Positions are validated in the dtype position-aware embeddings compute them in (float32 for half tables),
    # so positions past float16's range (65504) are not "not finite" for embeddings that ignore them.
    emb = co.build_embedding(name, 5, 4, dtype=torch.float16)
    out = emb(torch.tensor([[1, 2]]), positions=torch.tensor([70000, 70001]))
    same = out.view(torch.float16) if out.is_complex() else out  # complex32 has no torch.equal
    assert torch.equal(same, (lambda o: o.view(torch.float16) if o.is_complex() else o)(emb(torch.tensor([[1, 2]]))))


def test_extra_repr_shows_a_non_default_amplitude_init():
    assert "amplitude_init='ones'" in repr(co.ComplexOrderEmbedding(5, 4, amplitude_init="ones"))
    assert "amplitude_init='ones'" in repr(co.ComplexVanillaEmbedding(5, 4, amplitude_init="ones"))
    assert "amplitude_init" not in repr(co.ComplexOrderEmbedding(5, 4))
    assert "amplitude_init" not in repr(co.ComplexOrderEmbedding.from_pretrained(torch.randn(5, 4)))


def test_frequency_jitter_multiplies_each_initial_frequency_by_one_plus_s_times_a_normal_draw():
    """Stop 74: ``frequency_jitter = s`` sets w_{j,d} = w_d (1 + s eps_{j,d}) after the sinusoidal start, eps drawn
    from torch's generator after the amplitudes; the padding row stays 0; reset_parameters draws anew."""
    torch.manual_seed(0)
    emb = ComplexOrderEmbedding(7, 6, padding_idx=0, frequency_jitter=0.1)
    torch.manual_seed(0)
    torch.randn(7, 6)  # the amplitudes' draw
    eps = torch.randn(7, 6)
    d = torch.arange(6, dtype=torch.float64)
    by_hand = (10000.0 ** (-2 * d / 12)).float() * (1 + 0.1 * eps)  # paper Eq. 7's w_d, perturbed
    assert torch.equal(emb.frequency[1:], by_hand[1:])
    assert torch.equal(emb.frequency[0], torch.zeros(6))
    assert len({tuple(row) for row in emb.frequency[1:].tolist()}) == 6  # every word its own spectrum
    before = emb.frequency.detach().clone()
    emb.reset_parameters()
    assert not torch.equal(emb.frequency, before) and torch.equal(emb.frequency[0], torch.zeros(6))
    plain = ComplexOrderEmbedding(7, 6, padding_idx=0)  # no jitter: the sinusoidal start itself
    assert torch.equal(plain.frequency[1:], (10000.0 ** (-2 * d / 12)).float().expand(6, 6))
    assert "frequency_jitter=0.1" in repr(emb) and "jitter" not in repr(plain)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), True, "0.1"])
def test_frequency_jitter_must_be_a_finite_number_at_least_zero(bad):
    with pytest.raises(ValueError, match=re.escape(f"frequency_jitter must be a finite number >= 0 (the standard "
                                                   f"deviation of the relative perturbation of the initial "
                                                   f"frequencies), got {bad!r}") + "$"):
        ComplexOrderEmbedding(7, 6, frequency_jitter=bad)
    with pytest.raises(ValueError, match=r"^frequency_jitter multiplies the initial frequencies by \(1 \+ jitter \* "
                                         r"N\(0, 1\)\): with frequency_init = 'zeros' it changes nothing; drop one of "
                                         r"them$"):
        ComplexOrderEmbedding(7, 6, frequency_init="zeros", frequency_jitter=0.1)


@pytest.mark.parametrize("name", ["none", "pe", "tpe", "complex-vanilla", "complex-order"])
def test_every_embedding_runs_on_the_meta_device_for_shapes(name):
    """Built or moved to `meta` (shapes without storage, as for initialising a large model before materialising it),
    an embedding gives its output's shape and dtype, as nn.Embedding does; the value checks (ids, positions) read
    values with .item() and failed there, and the fused path's nonzero() has no meta implementation."""
    emb = co.build_embedding(name, 10, 4, padding_idx=0).to("meta")
    tokens = torch.tensor([[1, 0, 3]], device="meta")
    for positions in (None, torch.tensor([[2, 3, 4]], device="meta")):
        out = emb(tokens, positions)
        assert out.device.type == "meta" and out.shape == (1, 3, 4)
        assert out.dtype == (torch.complex64 if name.startswith("complex") else torch.float32)
