"""``set_value_checks``: the checks that read tensor values (a host-device synchronisation on a GPU, every forward
call) can be turned off; types and shapes are still checked, and the setting is restored on leaving a block."""

import threading

import pytest
import torch

import complexorder as co
from complexorder.embeddings import TokenIdError
from complexorder.models.seq2seq import reorder_cache
from complexorder.nn import ComplexMultiheadAttention


def test_the_switch_is_on_by_default_and_restored_by_the_block_even_after_an_error():
    assert co.value_checks_enabled() is True
    with co.set_value_checks(False):
        assert co.value_checks_enabled() is False
        with co.set_value_checks(True):
            assert co.value_checks_enabled() is True
        assert co.value_checks_enabled() is False
    assert co.value_checks_enabled() is True
    with pytest.raises(RuntimeError, match="^boom$"):
        with co.set_value_checks(False):
            raise RuntimeError("boom")
    assert co.value_checks_enabled() is True
    co.set_value_checks(False)  # as a plain call, like torch.set_grad_enabled
    try:
        assert co.value_checks_enabled() is False
    finally:
        co.set_value_checks(True)
    assert co.value_checks_enabled() is True


def test_the_setting_belongs_to_its_thread_as_grad_mode_does():
    """It was one process-wide value: two threads' overlapping blocks turned the checks back on inside the block still
    open, and left them off after both had ended."""
    seen = []
    with co.set_value_checks(False):
        thread = threading.Thread(target=lambda: seen.append(co.value_checks_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]  # a new thread starts with the checks on
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside_b = []

    def a():
        with co.set_value_checks(False):
            a_in.set()
            b_in.wait()
        a_out.set()

    def b():
        a_in.wait()
        with co.set_value_checks(False):
            b_in.set()
            a_out.wait()
            inside_b.append(co.value_checks_enabled())
        inside_b.append(co.value_checks_enabled())

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inside_b == [False, True] and co.value_checks_enabled() is True


def test_as_a_decorator_it_turns_the_checks_off_around_each_call_only():
    """Decorating raised "'set_value_checks' object is not callable" and left the checks off."""
    @co.set_value_checks(False)
    def unchecked(tokens):
        return co.value_checks_enabled(), emb(tokens)

    emb = co.ComplexOrderEmbedding(10, 4)
    assert co.value_checks_enabled() is True
    enabled, out = unchecked(torch.tensor([[1, 2]]))
    assert enabled is False and co.value_checks_enabled() is True and out.shape == (1, 2, 4)
    with pytest.raises(IndexError):
        unchecked(torch.tensor([[1, 10]]))
    assert co.value_checks_enabled() is True
    assert unchecked.__name__ == "unchecked"


@pytest.mark.parametrize("mode", [0, 1, None, "false"])
def test_a_mode_that_is_not_a_bool_is_refused(mode):
    with pytest.raises(TypeError, match=f"^set_value_checks: mode must be True or False, got {mode!r}$"):
        co.set_value_checks(mode)
    assert co.value_checks_enabled() is True


@pytest.mark.parametrize("name", ["complex-order", "complex-vanilla", "pe", "tpe", "none"])
def test_without_value_checks_an_id_outside_the_vocabulary_reaches_torch_unnamed(name):
    emb = co.build_embedding(name, 10, 4)
    bad = torch.tensor([[1, 10]])
    with pytest.raises(TokenIdError, match=r"^tokens: id 10 is outside the vocabulary \[0, 10\)"):
        emb(bad)
    with co.set_value_checks(False):
        with pytest.raises(IndexError) as caught:
            emb(bad)
    # torch's "index out of range in self", or the complex embeddings' CPU kernel's own bounds check: no id named
    assert not isinstance(caught.value, TokenIdError) and "10" not in str(caught.value).replace("[0, 10)", "")
    # the checks that read no values are still made
    with co.set_value_checks(False):
        with pytest.raises(TypeError, match="^tokens must be an integer tensor"):
            emb(torch.tensor([[1.0, 2.0]]))
    good = torch.tensor([[1, 2, 3]])
    with co.set_value_checks(False):
        unchecked = emb(good)
    assert torch.equal(unchecked, emb(good))


def test_without_value_checks_positions_are_not_read():
    emb = co.ComplexOrderEmbedding(10, 4)
    tokens = torch.tensor([[1, 2]])
    nan = torch.tensor([0.0, float("nan")])
    with pytest.raises(ValueError, match="^positions must be finite real numbers, got nan$"):
        emb(tokens, nan)
    with co.set_value_checks(False):
        out = emb(tokens, nan)
    assert torch.isnan(out[0, 1]).all() and torch.isfinite(torch.view_as_real(out[0, 0])).all()
    learned = co.LearnedPositionalEmbedding(10, 4, max_positions=4)
    with pytest.raises(ValueError, match=r"^positions must be integers in \[0, 4\)"):
        learned(tokens, torch.tensor([0, 9]))
    with co.set_value_checks(False), pytest.raises(IndexError, match="index out of range"):
        learned(tokens, torch.tensor([0, 9]))


def test_without_value_checks_a_float_attention_mask_is_read_as_minus_inf_masked_else_kept():
    torch.manual_seed(0)
    attn = ComplexMultiheadAttention(4, 2).eval()
    x = torch.randn(1, 3, 4, dtype=torch.complex64)
    bias = torch.tensor([[0.0, 0.5, float("-inf")]] * 3)
    with pytest.raises(ValueError, match="^attn_mask: a floating-point mask may hold only 0"):
        attn(x, x, x, attn_mask=bias)
    with co.set_value_checks(False):
        out, _ = attn(x, x, x, attn_mask=bias)
    expected, _ = attn(x, x, x, attn_mask=torch.tensor([[False, False, True]] * 3))
    assert torch.equal(out, expected)


def test_without_value_checks_reorder_cache_leaves_the_range_to_index_select():
    cache = {"k": torch.zeros(2, 3), "layer": {"v": torch.zeros(2, 1)}}
    with pytest.raises(ValueError, match="the cache holds batch = 2 rows, got values from 0 to 5$"):
        reorder_cache(cache, torch.tensor([0, 5]))
    with co.set_value_checks(False), pytest.raises(IndexError, match="out of range"):
        reorder_cache(cache, torch.tensor([0, 5]))
    with co.set_value_checks(False):  # its form is still checked
        with pytest.raises(TypeError, match="^index must be a 1-D integer tensor"):
            reorder_cache(cache, torch.tensor([0.0, 1.0]))
