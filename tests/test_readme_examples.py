"""The README's Python examples run as written and do what their comments say.

The two ```python blocks of README.md are each executed on their own, as a reader copies one (the second used
the first's imports until stop 76, and failed alone with "name 'co' is not defined"), so an example cannot rot
while the API changes under it. The only edit: the sparse example's vocabulary of
270,000 words becomes 2,000 here (its two tables would hold 2 x 270k x 300 floats plus SparseAdam's state,
gigabytes for a unit test; nothing in the example depends on the size).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_readme_has_the_two_examples():
    assert len(BLOCKS) == 2
    assert "ComplexOrderEmbedding(10_000, 300, padding_idx=0)" in BLOCKS[0]
    assert "ComplexOrderEmbedding(270_000, 300, padding_idx=0, sparse=True)" in BLOCKS[1]
    assert "270_000" in BLOCKS[1] and "loss.backward()" in BLOCKS[1]


def test_in_python_example_matches_its_comments():
    torch.manual_seed(0)
    ns: dict = {}
    exec(compile(BLOCKS[0], "README.md (In Python)", "exec"), ns)
    z, z_step, features, tokens = ns["z"], ns["z_step"], ns["features"], ns["tokens"]
    assert z.shape == (1, 4, 300) and z.dtype == torch.complex64  # "[1, 4, 300] complex64"
    # "positions 0..L-1": the explicit position 3 of the last token gives the same wave as the implicit one
    assert torch.equal(z_step, z[:, 3:4])
    # padding_idx=0: the padded token's embedding is zero at every position
    assert torch.count_nonzero(z[0, 3]) == 0 and tokens[0, 3] == 0
    assert features.shape == (1, 300) and not features.is_complex() and bool((features >= 0).all())
    out, h_n, encoder = ns["out"], ns["h_n"], ns["encoder"]
    assert out.shape == (1, 4, 256) and out.is_complex() and h_n.shape == (4, 1, 128)  # the comment's shapes
    assert len(encoder.layers) == 2 and encoder(ns["z"]).shape == (1, 4, 300)
    assert torch.count_nonzero(out[0, 3]) == 0  # the padded step is past the sequence's length


def test_sparse_example_updates_no_row_outside_its_batch():
    torch.manual_seed(0)
    code = BLOCKS[1].replace("270_000", "2_000")
    before, marker, after = code.partition("loss.backward()")
    assert marker, "the sparse example no longer calls loss.backward()"
    ns: dict = {}
    exec(compile(before, "README.md (sparse, before backward)", "exec"), ns)
    emb, tokens = ns["emb"], ns["tokens"]
    tables = {name: p.detach().clone() for name, p in emb.named_parameters()}
    assert [p for p in ns["tables"]] == [emb.amplitude, emb.frequency]
    exec(compile(marker + after, "README.md (sparse, backward and step)", "exec"), ns)
    used = torch.zeros(2_000, dtype=torch.bool)
    used[tokens.flatten()] = True
    for name, p in emb.named_parameters():
        moved = (p.detach() != tables[name]).any(dim=1)
        # a batch row whose gradient is zero may stay (no max-pool window of the CNN picked it): at least one moves
        assert bool(moved[used].any()), f"{name}: no row of the batch moved"
        assert not bool(moved[~used].any()), f"{name}: SparseAdam moved a row outside the batch"
        assert p.grad is None  # zero_grad(set_to_none=True)
