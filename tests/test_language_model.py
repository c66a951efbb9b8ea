"""Transformer-XL language model: relative shift, causal memory, segment recurrence, text8 data, CLI."""

import json
import math
import re
import zipfile

import pytest
import torch

from complexorder.checkpoint import save_checkpoint
from complexorder.cli import main
from complexorder.config import config_from_dict
from complexorder.data.text8 import (PROXY_SOURCES, TEXT8_ALPHABET, build_proxy_corpus, decode_text8,
                                     encode_text8, load_corpus, normalise_text8, prepare_text8)
from complexorder.experiments.language_model import (LMConfig, TrainSettings, batchify, check_lm_config, evaluate_bpc,
                                                     evaluate_checkpoint, learning_rate, optimizer_groups,
                                                     train_language_model)
from complexorder.experiments.language_model_cli import load_lm_config, shipped_configs
from complexorder.models.transformer_xl import (RelPartialLearnableAttention, TransformerXL, TransformerXLConfig,
                                                TransformerXLLayer, XLMemory, causal_memory_mask, rel_shift,
                                                rel_shift_reference, relative_position_encoding)

VARIANTS = ("vanilla", "complex-vanilla", "complex-order")


def tiny(embedding="vanilla", **kw):
    torch.manual_seed(0)
    cfg = TransformerXLConfig(vocab_size=27, embedding=embedding, n_layer=2, n_head=2, d_model=16, d_head=8,
                              d_inner=32, dropout=0.0, **{"mem_len": 8, **kw})
    return TransformerXL(cfg).eval()


# --------------------------------------------------------------------------------------
# Relative shift, masks and the attention equation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("qlen,mlen", [(1, 0), (4, 0), (4, 3), (5, 9)])
def test_rel_shift_matches_the_naive_gather(qlen, mlen):
    klen = qlen + mlen
    x = torch.randn(2, 3, qlen, klen)
    allowed = ~causal_memory_mask(qlen, mlen)
    assert torch.equal(rel_shift(x)[..., allowed], rel_shift_reference(x)[..., allowed])
    # By definition: column m of x is distance klen-1-m; the result puts distance (mlen+i)-j at key j.
    f = lambda i, d: 100.0 * i + d  # noqa: E731 - a score that names its query and distance
    scores = torch.tensor([[f(i, klen - 1 - m) for m in range(klen)] for i in range(qlen)])
    shifted = rel_shift(scores)
    for i in range(qlen):
        for j in range(mlen + i + 1):
            assert shifted[i, j] == f(i, mlen + i - j)


def test_causal_memory_mask_by_hand():
    # 2 queries after 3 memory slots: query 0 is key 3, query 1 is key 4.
    assert causal_memory_mask(2, 3).tolist() == [[False, False, False, False, True],
                                                 [False, False, False, False, False]]
    # same_length with a window of 3: every query sees exactly its 3 most recent keys.
    blocked = causal_memory_mask(2, 3, window=3)
    assert blocked.tolist() == [[True, False, False, False, True], [True, True, False, False, False]]
    assert ((~blocked).sum(1) == 3).all()


def test_relative_attention_equals_the_equation_written_out():
    torch.manual_seed(0)
    H, Dh, d, B, q, m = 2, 3, 6, 2, 3, 4
    attn = RelPartialLearnableAttention(H, d, Dh, dropout=0.0).eval()
    h, mem = torch.randn(B, q, d), torch.randn(B, m, d)
    r_w, r_r = torch.randn(H, Dh), torch.randn(H, Dh)
    k_len = q + m
    r = relative_position_encoding(k_len, d)  # row t encodes distance k_len-1-t
    mask = causal_memory_mask(q, m)
    out = attn(h, r, r_w, r_r, mask, mem)
    cat = torch.cat([mem, h], 1)
    wq, wk, wv = attn.qkv_net.weight.chunk(3, 0)
    expected = torch.zeros(B, q, H * Dh)
    for b in range(B):
        for n in range(H):
            rows = slice(n * Dh, (n + 1) * Dh)
            for i in range(q):
                qi = wq[rows] @ h[b, i]
                score = torch.full((k_len,), float("-inf"))
                for j in range(m + i + 1):
                    rel = attn.r_net.weight[rows] @ r[k_len - 1 - (m + i - j)]  # W_r R_{i-j}
                    score[j] = ((qi + r_w[n]) @ (wk[rows] @ cat[b, j]) + (qi + r_r[n]) @ rel) / math.sqrt(Dh)
                expected[b, i, rows] = torch.softmax(score, 0) @ (cat[b] @ wv[rows].T)
    expected = attn.layer_norm(h + attn.o_net(expected))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("score", ["modulus", "real"])
def test_complex_relative_attention_equals_the_equation_written_out(score):
    """Complex states [Re; Im]: AC = (q + r_w) . conj(k), BD = (q + r_r) . W_r R, in complex arithmetic."""
    torch.manual_seed(1)
    H, Dh, d, B, q, m = 2, 3, 6, 2, 3, 4
    attn = RelPartialLearnableAttention(H, d, Dh, dropout=0.0, score=score).eval()
    h, mem = torch.randn(B, q, d, dtype=torch.complex64), torch.randn(B, m, d, dtype=torch.complex64)
    r_w, r_r = torch.randn(H, Dh), torch.randn(H, Dh)
    k_len = q + m
    r = relative_position_encoding(k_len, d)
    out = attn(torch.stack([h.real, h.imag]), r, r_w, r_r, causal_memory_mask(q, m),
               torch.stack([mem.real, mem.imag]))
    cat = torch.cat([mem, h], 1)
    wq, wk, wv = (w.to(torch.complex64) for w in attn.qkv_net.weight.chunk(3, 0))
    bias_w, bias_r = r_w * (1 + 1j), r_r * (1 + 1j)  # the real bias added to both parts of the query
    expected = torch.zeros(B, q, H * Dh, dtype=torch.complex64)
    for b in range(B):
        for n in range(H):
            rows = slice(n * Dh, (n + 1) * Dh)
            for i in range(q):
                qi = wq[rows] @ h[b, i]
                scores = torch.full((k_len,), float("-inf"))
                for j in range(m + i + 1):
                    rel = (attn.r_net.weight[rows] @ r[k_len - 1 - (m + i - j)]).to(torch.complex64)
                    ac = ((qi + bias_w[n]) * (wk[rows] @ cat[b, j]).conj()).sum()
                    bd = ((qi + bias_r[n]) * rel).sum()
                    s = ac.abs() + bd.abs() if score == "modulus" else ac.real + bd.real
                    scores[j] = s / math.sqrt(Dh)
                expected[b, i, rows] = torch.softmax(scores, 0).to(torch.complex64) @ (cat[b] @ wv[rows].T)
    wo = attn.o_net.weight.to(torch.complex64)
    res = h + expected @ wo.T
    torch.testing.assert_close(out, torch.stack([attn.layer_norm(res.real), attn.layer_norm(res.imag)]),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("embedding", ["complex-vanilla", "complex-order"])
def test_complex_network_streams_memory_and_parameters(embedding):
    model = tiny(embedding, network="complex", mem_len=40)
    # same weights as the real network, plus the embedding's width doubled (d_model complex dimensions)
    real = tiny(embedding)
    count = lambda mdl: sum(p.numel() for p in mdl.parameters())  # noqa: E731
    # per word and complex dimension: amplitude and frequency (complex-order) or amplitude and phase
    assert count(model) == count(real) + 27 * 2 * (16 - 8)
    assert model.word_emb.amplitude.shape == (27, 16) and model.emb_proj is None
    stream = torch.randint(0, 27, (3, 40))
    whole, memory = model(stream)
    assert [tuple(x.shape) for x in memory.hidden] == [(2, 3, 40, 16)] * 2
    parts, memory = [], None
    for start in range(0, 40, 8):
        logits, memory = model(stream[:, start:start + 8], memory)
        parts.append(logits)
    torch.testing.assert_close(torch.cat(parts, 1), whole, atol=1e-5, rtol=1e-4)
    # no leakage from the future, with a memory
    x = stream[:, :6]
    logits, _ = model(x, memory)
    for t in range(6):
        changed = x.clone()
        changed[:, t:] = (changed[:, t:] + 1) % 27
        torch.testing.assert_close(model(changed, memory)[0][:, :t], logits[:, :t], atol=0, rtol=0)
    # the read-out is the modulus of the last layer's output
    h = model.embed(x, torch.arange(6))
    for layer in model.layers:
        h = layer(h, relative_position_encoding(6, 16), model.r_w_bias, model.r_r_bias, causal_memory_mask(6, 0))
    torch.testing.assert_close(model(x)[0], model.out(torch.sqrt(h[0] ** 2 + h[1] ** 2)), atol=1e-5, rtol=1e-5)
    assert "network='complex'" in repr(model)


@pytest.mark.parametrize("embedding", ["complex-vanilla", "complex-order"])
def test_phase_dropout_reaches_the_lm_embedding_drops_in_training_only_and_is_checked(embedding):
    model, plain = tiny(embedding, phase_dropout=0.3), tiny(embedding)
    assert model.word_emb.phase_dropout == 0.3 and plain.word_emb.phase_dropout == 0.0
    tokens = torch.randint(0, 27, (2, 6))
    torch.testing.assert_close(model(tokens)[0], plain(tokens)[0])  # evaluation: no dropout
    model.train()
    torch.manual_seed(1)
    assert not torch.allclose(model(tokens)[0], plain(tokens)[0])
    with pytest.raises(ValueError, match=r"^model.phase_dropout applies to the complex embeddings only "
                                         r"\('complex-vanilla', 'complex-order'\), got embedding 'tpe'$"):
        tiny("tpe", phase_dropout=0.1)
    with pytest.raises(ValueError, match=r"^model.phase_dropout must be a number in \[0, 1\)"):
        tiny(embedding, phase_dropout=-0.1)


def test_initial_phase_gives_the_lm_embedding_eq5_and_is_refused_elsewhere():
    """Stop 81: the language model had no way to give complex-order the paper's initial phases (Eq. 5)."""
    model, plain = tiny("complex-order", initial_phase=True), tiny("complex-order")
    emb = model.word_emb
    assert emb.initial_phase is not None and emb.initial_phase.shape == (27, 8) and plain.word_emb.initial_phase is None
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in plain.parameters()) + 27 * 8
    theta0 = emb.initial_phase.detach()
    assert float(theta0.abs().max()) <= math.pi and float(theta0.std()) > 1.0  # U(-pi, pi)
    tokens, positions = torch.randint(0, 27, (2, 6)), torch.arange(6).expand(2, 6)
    r, w, theta = emb.amplitude[tokens], emb.frequency[tokens], emb.initial_phase[tokens]
    phase = w * positions.unsqueeze(-1) + theta
    by_hand = torch.cat([r * torch.cos(phase), r * torch.sin(phase)], -1) * math.sqrt(16)
    torch.testing.assert_close(model.embed(tokens, positions), by_hand)
    for embedding in ("vanilla", "complex-vanilla", "pe"):
        with pytest.raises(ValueError, match=r"^model.initial_phase applies to model.embedding = 'complex-order' only "
                                             rf"\(complex-vanilla always has a phase per character\), got embedding "
                                             rf"'{embedding}'$"):
            tiny(embedding, initial_phase=True)
    with pytest.raises(ValueError, match=r"^model.initial_phase: expected true or false, got 'yes'$"):
        tiny("complex-order", initial_phase="yes")


def test_complex_network_config_errors():
    with pytest.raises(ValueError, match=r"^model.network = 'complex' needs a complex embedding \('complex-vanilla' "
                                         r"or 'complex-order'\), got 'vanilla'$"):
        tiny("vanilla", network="complex")
    with pytest.raises(ValueError, match=r"^model.d_embed must be unset with model.network = 'complex' \(the "
                                         r"embedding has d_model = 16 complex dimensions\), got 20$"):
        tiny("complex-order", network="complex", d_embed=20)
    with pytest.raises(ValueError, match=r"^model.network must be 'real' or 'complex', got 'two'$"):
        tiny("complex-order", network="two")
    with pytest.raises(ValueError, match=r"^model.attention_score applies to model.network = 'complex' only$"):
        tiny("complex-order", attention_score="real")
    model = tiny("complex-order", network="complex")
    _, memory = model(torch.randint(0, 27, (2, 4)))
    with pytest.raises(ValueError, match=r"does not fit a batch of 3 rows and d_model=16; expected \[2, 3, mlen, 16\]"):
        model(torch.randint(0, 27, (3, 4)), memory)


@pytest.mark.parametrize("same_length", [False, True])
def test_no_leakage_from_the_future_across_memory_and_segment(same_length):
    model = tiny("complex-order", same_length=same_length)
    _, memory = model(torch.randint(0, 27, (2, 6)))
    x = torch.randint(0, 27, (2, 6))
    logits, _ = model(x, memory)
    for t in range(6):
        changed = x.clone()
        changed[:, t:] = (changed[:, t:] + 1) % 27  # rewrite the future from t on
        logits2, _ = model(changed, memory)
        torch.testing.assert_close(logits2[:, :t], logits[:, :t], atol=0, rtol=0)
        assert not torch.allclose(logits2[:, t], logits[:, t])
    # and the memory does matter (otherwise the test above would be empty for the memory part)
    assert not torch.allclose(model(x)[0], logits)


@pytest.mark.parametrize("embedding, options", [(e, {}) for e in VARIANTS] + [
    ("vanilla", {"pre_lnorm": True}), ("vanilla", {"tie_weight": True}), ("complex-order", {"d_embed": 32})])
def test_segments_with_memory_equal_one_long_pass(embedding, options):
    model = tiny(embedding, mem_len=40, **options)
    stream = torch.randint(0, 27, (3, 40))
    whole, _ = model(stream)
    parts, memory = [], None
    for start in range(0, 40, 8):
        logits, memory = model(stream[:, start:start + 8], memory)
        parts.append(logits)
    torch.testing.assert_close(torch.cat(parts, 1), whole, atol=1e-5, rtol=1e-4)
    assert memory.next_position.tolist() == [40, 40, 40]
    ids = stream.reshape(-1)
    one, n1 = evaluate_bpc(model, ids, tgt_len=1000, batch_size=2)
    seg, n2 = evaluate_bpc(model, ids, tgt_len=7, batch_size=2, mem_len=100)
    assert n1 == n2 == 2 * (60 - 1) and seg == pytest.approx(one, rel=1e-5)
    with pytest.raises(ValueError, match=r"^the valid split has 120 characters: too few for 100 evaluation streams "
                                         r"of at least 2 characters each; use a smaller batch size$"):
        evaluate_bpc(model, ids, tgt_len=16, batch_size=100, split="valid")


@pytest.mark.parametrize("embedding, options", [(e, {}) for e in VARIANTS + ("pe", "tpe")] + [
    ("complex-order", {"network": "complex"}), ("complex-order", {"clamp_len": 3})])
def test_a_float64_model_runs_in_float64_and_agrees_with_float32(embedding, options):
    model = tiny(embedding, **options)
    stream = torch.randint(0, 27, (2, 12))
    single, memory = model(stream[:, :6])
    single, _ = model(stream[:, 6:], memory)
    model.double()
    double, memory = model(stream[:, :6])
    assert all(h.dtype == torch.float64 for h in memory.hidden)
    double, _ = model(stream[:, 6:], memory)
    assert double.dtype == torch.float64
    torch.testing.assert_close(double.float(), single, atol=1e-5, rtol=1e-5)


def test_complex_order_positions_keep_counting_across_segments():
    model = tiny("complex-order", mem_len=40)
    stream = torch.randint(0, 27, (2, 16))
    _, memory = model(stream[:, :8])
    # the second segment's inputs are embedded at stream positions 8..15
    expected = model.embed(stream[:, 8:], torch.arange(8, 16))
    _, memory2 = model(stream[:, 8:], memory)
    torch.testing.assert_close(memory2.hidden[0][:, 8:], expected)
    # restarting positions in every segment ("segment" mode) breaks the equality with one long pass
    seg = tiny("complex-order", mem_len=40, position_mode="segment")
    whole, _ = seg(stream)
    first, mem = seg(stream[:, :8])
    second, _ = seg(stream[:, 8:], mem)
    assert not torch.allclose(torch.cat([first, second], 1), whole, atol=1e-3)


def test_pre_lnorm_layer_normalises_the_inputs_of_attention_and_feed_forward_not_the_residual():
    torch.manual_seed(0)
    layer = TransformerXLLayer(2, 16, 8, 32, dropout=0.0, pre_lnorm=True).eval()
    with torch.no_grad():  # give both norms an affine map that is not the identity
        for norm in (layer.attn.layer_norm, layer.ff_norm):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    h, mem = torch.randn(3, 5, 16), torch.randn(3, 4, 16)
    r = relative_position_encoding(9, 16)
    w_bias, r_bias, mask = torch.randn(2, 8), torch.randn(2, 8), causal_memory_mask(5, 4)
    # Dai et al.'s pre-LN: a = h + Attn(LN([mem, h])), out = a + FF(LN(a)); the residual stream is not normalised
    a = layer.attn(h, r, w_bias, r_bias, mask, mem)
    torch.testing.assert_close(layer(h, r, w_bias, r_bias, mask, mem), a + layer.ff(layer.ff_norm(a)))
    norm = layer.attn.layer_norm
    normed_h, normed_mem = norm(h), norm(mem)
    layer.attn.layer_norm = torch.nn.Identity()  # now attn(x, m) = x + Attn([m, x])
    attn_of_normed = layer.attn(normed_h, r, w_bias, r_bias, mask, normed_mem) - normed_h
    torch.testing.assert_close(a, h + attn_of_normed)
    layer.attn.layer_norm, layer.attn.pre_lnorm = norm, False  # post-LN differs: LN(h + Attn([mem, h]))
    assert not torch.allclose(layer.attn(h, r, w_bias, r_bias, mask, mem), a, atol=1e-3)


def test_tie_weight_shares_the_word_table_with_the_output_layer():
    tied, untied = tiny("vanilla", tie_weight=True), tiny("vanilla")
    assert tied.out.weight is tied.word_emb.weight
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(untied) - count(tied) == 27 * 16
    with pytest.raises(ValueError, match=r"^model.tie_weight needs the real 'vanilla' embedding with d_embed == "
                                         r"d_model$"):
        tiny("complex-order", tie_weight=True)
    with pytest.raises(ValueError, match="tie_weight"):
        tiny("vanilla", tie_weight=True, d_embed=32)


def test_variants_have_the_same_parameter_count_and_the_embedding_is_bounded():
    counts = {e: sum(p.numel() for p in tiny(e).parameters()) for e in VARIANTS}
    assert len(set(counts.values())) == 1
    wide = tiny("complex-order", d_embed=32)  # 16 complex dims -> 32 real features -> projected to 16
    assert wide.emb_proj is not None and wide.emb_proj.weight.shape == (16, 32)
    model = tiny("complex-order")
    tokens = torch.tensor([[3, 3]])
    for pos in (0, 10**6):  # |f(j, pos)| = |r_j| for every position
        z = model.word_emb(tokens, torch.tensor([pos, pos + 1]))
        torch.testing.assert_close(z.abs()[0, 0], model.word_emb.amplitude[3].abs())


def test_model_rejects_memory_and_lengths_that_do_not_fit():
    model = tiny()
    _, memory = model(torch.randint(0, 27, (2, 4)))
    with pytest.raises(ValueError, match=r"does not fit a batch of 3 rows"):
        model(torch.randint(0, 27, (3, 4)), memory)
    with pytest.raises(ValueError, match="memory holds 1 layers, the model has 2"):
        model(torch.randint(0, 27, (2, 4)), XLMemory(memory.hidden[:1], memory.next_position))
    with pytest.raises(ValueError, match="same_length .* needs mem_len >= 1, got 0"):
        model.reset_length(mem_len=0, same_length=True)
    with pytest.raises(ValueError, match="mem_len must be >= 0, got -1"):
        model.reset_length(mem_len=-1)
    with pytest.raises(ValueError, match="d_embed must be even"):
        tiny("complex-order", d_embed=15)
    with pytest.raises(ValueError, match="tie_weight needs the real 'vanilla' embedding"):
        tiny("complex-order", tie_weight=True)


# --------------------------------------------------------------------------------------
# text8-format data
# --------------------------------------------------------------------------------------


def test_text8_normalisation_and_encoding():
    assert normalise_text8("Café  au-lait, 3 B-52s!\r\n") == ("cafe au lait three b five two s", 6)
    ids = encode_text8("ab z")
    assert ids.dtype == torch.uint8 and ids.tolist() == [1, 2, 0, 26] and decode_text8(ids) == "ab z"
    assert len(TEXT8_ALPHABET) == 27
    with pytest.raises(ValueError, match=r"f.txt: character 'B' \(code 0x42\) at offset 2 is outside the text8 "
                                         r"alphabet \(a-z and space\); 2 such character\(s\)"):
        encode_text8(b"a Bc\n", source="f.txt")
    # bytes of a UTF-8 file name the character, and count bytes at byte offsets
    with pytest.raises(ValueError, match=r"f.txt: character 'é' \(UTF-8 bytes c3 a9\) at byte offset 3 is outside "
                                         r"the text8 alphabet \(a-z and space\); 4 byte\(s\) outside it in all"):
        encode_text8("café é".encode(), source="f.txt")
    with pytest.raises(ValueError, match=r"f.txt: byte 0xff \(not UTF-8 text\) at byte offset 2"):
        encode_text8(b"ab\xffc", source="f.txt")


def write_sources(root, extra=b""):
    """Small stand-ins for every proxy source, with the real files' defects."""
    for i, (rel, kind) in enumerate(PROXY_SOURCES):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        prefix = b"1 " if "SST2" in rel else b"DESC:manner " if "TREC" in rel else b""
        lines = [prefix + f"sentence number {i} line {k} with some words".encode() for k in range(30)]
        path.write_bytes(b"\n".join(lines) + b"\n\n   \n" + extra)
    mr = root / "classification/MR/rt-polarity.pos"
    # cp1252 bytes: 0xe9 = e-acute, 0x85 = ellipsis inside a line (a line break for str.splitlines)
    mr.write_bytes(mr.read_bytes() + b"un caf\xe9 tr\xe8s bon\nfirst half\x85second half\nsentence number 0 line 0 "
                                     b"with some words\n")


def test_proxy_corpus_is_normalised_deduplicated_deterministic_and_split(tmp_path):
    write_sources(tmp_path / "src")
    m1 = build_proxy_corpus(tmp_path / "src", tmp_path / "a")
    m2 = build_proxy_corpus(tmp_path / "src", tmp_path / "b")
    for split in ("train", "valid", "test"):
        assert (tmp_path / "a" / f"{split}.txt").read_bytes() == (tmp_path / "b" / f"{split}.txt").read_bytes()
    stream = "".join((tmp_path / "a" / f"{s}.txt").read_text() for s in ("train", "valid", "test"))
    assert set(stream) <= set(TEXT8_ALPHABET) and "  " not in stream
    assert "un cafe tres bon" in stream and "first half second half" in stream  # 0x85 did not split the line
    assert "manner" not in stream and " desc " not in f" {stream} "  # labels stripped
    assert m1 == m2 and m1["characters"] == len(stream)
    sizes = {s: m1["splits"][s]["characters"] for s in ("train", "valid", "test")}
    assert sizes["valid"] == sizes["test"] == round(0.05 * len(stream))
    mr = next(s for s in m1["sources"] if s["path"].endswith("rt-polarity.pos"))
    assert mr["duplicates"] == 1 and mr["non_utf8_lines"] == 2 and mr["kept"] == 32
    assert build_proxy_corpus(tmp_path / "src", tmp_path / "c", seed=1)["splits"] != m1["splits"]  # seed = order
    loaded = load_corpus(tmp_path / "a")
    assert decode_text8(loaded["valid"]) == (tmp_path / "a" / "valid.txt").read_text()


def test_build_corpus_cli_reads_the_data_directory_by_default(tmp_path, capsys):
    write_sources(tmp_path / "data")
    assert main(["lm", "build-corpus", "--data-dir", str(tmp_path / "data")]) == 0
    assert (tmp_path / "data" / "text8-proxy" / "train.txt").stat().st_size > 0  # read from and written into it
    assert main(["lm", "build-corpus", "--data-dir", str(tmp_path / "empty"), "--source-dir", str(tmp_path / "data"),
                 "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "train.txt").read_bytes() == (tmp_path / "data" / "text8-proxy" / "train.txt").read_bytes()
    assert main(["lm", "build-corpus", "--data-dir", str(tmp_path / "nope")]) == 2
    assert f"source directory {tmp_path / 'nope'} does not exist" in capsys.readouterr().err


def test_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus directory .*nope does not exist"):
        load_corpus(tmp_path / "nope")
    (tmp_path / "train.txt").write_text("abc")
    with pytest.raises(FileNotFoundError, match="missing data file valid.txt"):
        load_corpus(tmp_path)
    (tmp_path / "valid.txt").write_text("abc\n")
    with pytest.raises(ValueError, match=r"valid.txt: character '\\n' .* at offset 3"):
        load_corpus(tmp_path, ("valid",))
    with pytest.raises(ValueError, match=r"the train split has 100 characters: 4 streams of 25, shorter than one "
                                         r"segment of tgt_len=32 plus its target \(33\)"):
        batchify(torch.zeros(100, dtype=torch.uint8), 4, 32, "train")
    with pytest.raises(ValueError, match=r"^the valid split has 0 characters: 16 streams of 0, shorter than the 2 "
                                         r"characters of one prediction \(evaluation reads segments of any length\); "
                                         r"use a longer corpus or a smaller batch_size$"):
        batchify(torch.zeros(0, dtype=torch.uint8), 16, 1, "valid", evaluation=True)  # no tgt_len=1 in the message
    with pytest.raises(ValueError, match=r"^the train split has 30 characters: 16 streams of 1, shorter than one "
                                         r"segment of tgt_len=1 plus its target \(2\)"):
        batchify(torch.zeros(30, dtype=torch.uint8), 16, 1, "train")  # training with tgt_len 1 says so
    with pytest.raises(FileNotFoundError, match="source directory .* does not exist"):
        build_proxy_corpus(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "text8").write_text("a short file")
    with pytest.raises(ValueError, match="text8 has 100,000,000 characters of one byte each, this file 12 bytes"):
        prepare_text8(tmp_path / "text8", tmp_path / "t8")
    with zipfile.ZipFile(tmp_path / "text8.zip", "w") as zf:
        zf.writestr("other", "x")
    with pytest.raises(ValueError, match="zip archive without a 'text8' member"):
        prepare_text8(tmp_path / "text8.zip", tmp_path / "t8")
    with pytest.raises(FileNotFoundError, match="download it from http://mattmahoney.net/dc/text8.zip"):
        prepare_text8(tmp_path / "absent.zip", tmp_path / "t8")


def test_prepare_text8_checks_the_pinned_sha256(tmp_path, monkeypatch):
    import hashlib

    from complexorder.data import text8 as t8
    from complexorder.data.download import sha256_of
    assert t8.TEXT8_SHA256 == "6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7"
    assert t8.TEXT8_ZIP_SHA256 == "a6640522afe85d1963ad56c05b0ede0a0c000dddc9671758a6cc09b7a38e5232"
    # a 20-character stand-in for the 100M-character file, so the test needs no download
    monkeypatch.setattr(t8, "TEXT8_CHARACTERS", 20)
    monkeypatch.setattr(t8, "TEXT8_SPLIT_SIZES", (18, 1, 1))
    data = b"the cat sat on a mat"
    (tmp_path / "text8").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    with pytest.raises(ValueError, match=f"text8 content has sha256 {digest}, expected {t8.TEXT8_SHA256} .*"
                                         f"--skip-checksum"):
        t8.prepare_text8(tmp_path / "text8", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    manifest = t8.prepare_text8(tmp_path / "text8", tmp_path / "out", verify=False)
    assert manifest["verified"] is False and manifest["sha256_text8"] == digest
    assert (tmp_path / "out" / "train.txt").read_bytes() == data[:18]
    assert (tmp_path / "out" / "test.txt").read_bytes() == data[19:]
    monkeypatch.setattr(t8, "TEXT8_SHA256", digest)
    hashed = []  # an unzipped file is its own content: read and hashed once, not again as a file (stop 86)
    monkeypatch.setattr(t8, "sha256_of", lambda path: hashed.append(path) or hashlib.sha256(b"not this").hexdigest())
    manifest = t8.prepare_text8(tmp_path / "text8", tmp_path / "out2")
    assert manifest["verified"] is True and manifest["sha256_source"] == digest and hashed == []
    # a file of another length is told in bytes (a UTF-8 character outside text8's alphabet takes two)
    (tmp_path / "other").write_bytes("the cat sät on a mat".encode())
    with pytest.raises(ValueError, match=r"other: text8 has 20 characters of one byte each, this file 21 bytes; "
                                         r"is it the right file\?"):
        t8.prepare_text8(tmp_path / "other", tmp_path / "out3")
    # text8.zip as Mahoney distributes it: the same splits from its 'text8' member
    with zipfile.ZipFile(tmp_path / "text8.zip", "w") as zf:
        zf.writestr("text8", data)
    monkeypatch.setattr(t8, "sha256_of", sha256_of)
    manifest = t8.prepare_text8(tmp_path / "text8.zip", tmp_path / "out4")
    assert manifest["verified"] is True and manifest["sha256_text8"] == digest
    assert manifest["sha256_source"] == sha256_of(tmp_path / "text8.zip") != digest  # the archive's own digest
    assert all((tmp_path / "out4" / f).read_bytes() == (tmp_path / "out2" / f).read_bytes()
               for f in ("train.txt", "valid.txt", "test.txt"))
    damaged = bytearray((tmp_path / "text8.zip").read_bytes())
    damaged[35:45] = bytes(b ^ 0xFF for b in damaged[35:45])  # inside the stored member: a CRC error
    (tmp_path / "damaged.zip").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=r"damaged.zip: the zip archive cannot be read \(.*\); download it again$"):
        t8.prepare_text8(tmp_path / "damaged.zip", tmp_path / "out6")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("enwik8", data)
    with pytest.raises(ValueError, match=r"other.zip: zip archive without a 'text8' member \(has \['enwik8'\]\)$"):
        t8.prepare_text8(tmp_path / "other.zip", tmp_path / "out5")
    # --download --skip-checksum with a text8.zip of the wrong size already there: named, and removed
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "text8.zip").write_bytes(b"<html>proxy error</html>")
    with pytest.raises(ValueError, match=rf"^downloaded {t8.TEXT8_URL} has 24 bytes, expected "
                                         rf"{t8.TEXT8_ZIP_BYTES:,}; file removed$"):
        t8.download_text8(tmp_path / "dl", sha256=None)
    assert not (tmp_path / "dl" / "text8.zip").exists()


# --------------------------------------------------------------------------------------
# Training and evaluation end to end
# --------------------------------------------------------------------------------------

TINY_RUN = {"model": {"embedding": "complex-order", "n_layer": 2, "n_head": 2, "d_model": 16, "d_head": 8,
                      "d_inner": 32, "mem_len": 16, "dropout": 0.1},
            "train": {"tgt_len": 16, "batch_size": 4, "max_steps": 12, "lr": 3e-3, "log_interval": 4,
                      "eval_interval": 6, "eval_tgt_len": 16, "eval_max_chars": 2000, "checkpoint_interval": 4},
            "eval": {"tgt_len": 8, "mem_len": 32, "clamp_len": 24, "same_length": True, "batch_size": 4}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    write_sources(root / "src")
    build_proxy_corpus(root / "src", root / "corpus")
    return root / "corpus"


def test_train_resume_and_eval_end_to_end(corpus, tmp_path, capsys):
    cfg = config_from_dict(TINY_RUN, LMConfig)
    straight = train_language_model(cfg, corpus, tmp_path / "a", progress=False)
    assert straight["steps"] == 12 and (tmp_path / "a" / "best.pt").is_file()
    records = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    valid = [r["valid_bpc"] for r in records if r["event"] == "valid"]
    assert len(valid) == 2 and valid[-1] < math.log2(27)  # better than uniform guessing
    # interrupted after 5 steps and resumed: the same weights as the straight run
    train_language_model(cfg, corpus, tmp_path / "b", stop_after=5, progress=False)
    with pytest.raises(ValueError, match=r"last.pt exists: pass resume=True \(--resume\)"):
        train_language_model(cfg, corpus, tmp_path / "b", progress=False)
    # resumed with other log and checkpoint intervals (bookkeeping only): still the straight run's weights
    bookkeeping = config_from_dict({**TINY_RUN, "train": {**TINY_RUN["train"], "log_interval": 3,
                                                          "checkpoint_interval": 6}}, LMConfig)
    train_language_model(bookkeeping, corpus, tmp_path / "b", resume=True, progress=False, log=lambda *_: None)
    a = torch.load(tmp_path / "a" / "last.pt", weights_only=True)["model_state"]
    b = torch.load(tmp_path / "b" / "last.pt", weights_only=True)["model_state"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    # each train record says over how many steps its train_bpc is averaged: the first window after the resume
    # at step 5 covers step 6 only (log_interval 4, then 3), the others four and three steps
    windows = [(r["step"], r["window_steps"]) for r in map(json.loads, (tmp_path / "b" / "results.jsonl").read_text()
                                                                 .splitlines()) if r["event"] == "train"]
    assert windows == [(4, 4), (6, 1), (9, 3), (12, 3)]
    assert [(r["step"], r["window_steps"]) for r in records if r["event"] == "train"] == [(4, 4), (8, 4), (12, 4)]
    # --resume where no run was started yet says that it starts one
    messages = []
    train_language_model(cfg, corpus, tmp_path / "fresh", resume=True, stop_after=1, progress=False,
                         log=messages.append)
    assert f"note: --resume given but {tmp_path / 'fresh' / 'last.pt'} does not exist; starting a new run" in messages
    # the run says what it trains, the complex-order positions included
    assert (f"lm complex-order (real network, positions: {cfg.model.position_mode}, frequency start: "
            f"{cfg.model.frequency_init}): {straight['parameters']:,} parameters, 2 layers, d_model 16; 12 steps of "
            f"4 x 16 characters, memory 16") in messages
    # the embeddings that take positions say which; vanilla takes none
    for embedding, said in (("tpe", " (real network, positions: word)"), ("vanilla", " (real network)")):
        other = config_from_dict({**TINY_RUN, "model": {**TINY_RUN["model"], "embedding": embedding,
                                                        "position_mode": "word"}}, LMConfig)
        messages = []
        train_language_model(other, corpus, tmp_path / embedding, stop_after=1, progress=False, log=messages.append)
        assert any(m.startswith(f"lm {embedding}{said}: ") for m in messages), messages
    # a crash after the step-8 checkpoint, once steps 9-12 were logged: the resumed run drops and rewrites them
    train_language_model(cfg, corpus, tmp_path / "c", stop_after=8, progress=False)
    at_8 = (tmp_path / "c" / "last.pt").read_bytes()
    train_language_model(cfg, corpus, tmp_path / "c", resume=True, progress=False, log=lambda *_: None)
    (tmp_path / "c" / "last.pt").write_bytes(at_8)
    messages = []
    train_language_model(cfg, corpus, tmp_path / "c", resume=True, progress=False, log=messages.append)
    assert f"dropped 2 record(s) after step 8 from {tmp_path / 'c' / 'results.jsonl'}" in messages
    logged = lambda run: [(r["event"], r["step"], r.get("valid_bpc"), r.get("train_bpc"))  # noqa: E731
                          for r in map(json.loads, (tmp_path / run / "results.jsonl").read_text().splitlines())]
    assert logged("c") == logged("a")
    # resuming on another corpus is refused
    other_corpus = tmp_path / "corpus2"
    other_corpus.mkdir()
    for split in ("train", "valid", "test"):
        text = (corpus / f"{split}.txt").read_text()
        (other_corpus / f"{split}.txt").write_text(text[::-1].strip() if split == "train" else text)
    with pytest.raises(ValueError, match=r"cannot resume .*last.pt: it was trained on another corpus \(train split "):
        train_language_model(cfg, other_corpus, tmp_path / "c", resume=True, progress=False)
    other = config_from_dict({**TINY_RUN, "train": {**TINY_RUN["train"], "lr": 1e-3}}, LMConfig)
    with pytest.raises(ValueError, match=r"trained with other settings \(the run's → the config's now: train.lr: "
                                         r"0.003 → 0.001\); resume with the run's settings \(lm train: add --set "
                                         r"train.lr=0.003; Python: language_model_cli\.load_lm_config\(\.\.\., "
                                         r"overrides=\{'train.lr': 0.003\}\)\) or train in a new out_dir "
                                         r"\(--out\)$"):
        train_language_model(other, corpus, tmp_path / "b", resume=True, progress=False)
    other = config_from_dict({**TINY_RUN, "model": {**TINY_RUN["model"], "embedding": "vanilla"}}, LMConfig)
    with pytest.raises(ValueError, match=r"trained with other settings \(the run's → the config's now: "
                                         r"model.embedding: 'complex-order' → 'vanilla'\); resume with the run's "
                                         r"settings \(lm train: add --embedding complex-order; Python: "
                                         r"language_model_cli\.load_lm_config\(\.\.\., overrides=\{'model.embedding': "
                                         r"'complex-order'\}\)\)"):
        train_language_model(other, corpus, tmp_path / "b", resume=True, progress=False)  # stop 76: named no flag
    # evaluation from the CLI: the [eval] settings (longer memory, same_length), valid and test
    ck = tmp_path / "a" / "best.pt"
    capsys.readouterr()  # the direct calls' notes
    assert main(["lm", "eval", "--checkpoint", str(ck), "--corpus", str(corpus), "--no-progress",
                 "--results", str(tmp_path / "eval.jsonl")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eval"]["mem_len"] == 32 and 0 < out["test_bpc"] < 6 and out["valid_chars"] > 0
    direct = evaluate_checkpoint(ck, corpus, splits=("test",), progress=False)
    assert direct["test_bpc"] == pytest.approx(out["test_bpc"])
    # --max-chars: the first N characters of each split, recorded with the result
    assert main(["lm", "eval", "--checkpoint", str(ck), "--corpus", str(corpus), "--no-progress", "--splits", "test",
                 "--max-chars", "100"]) == 0
    short = json.loads(capsys.readouterr().out)
    first = evaluate_checkpoint(ck, corpus, splits=("test",), progress=False, max_chars=100)
    assert short["max_chars"] == 100 and short["test_bpc"] == pytest.approx(first["test_bpc"])
    assert short["test_chars"] < out["test_chars"] and short["test_chars"] <= 100
    # last.pt names its step too (it is kept in its progress record as well)
    assert evaluate_checkpoint(tmp_path / "a" / "last.pt", corpus, splits=("test",), progress=False,
                               max_chars=100)["step"] == 12


def test_cli_train_and_bad_input(corpus, tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(
        "\n".join(f"[{section}]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in values.items())
                  for section, values in TINY_RUN.items()))
    args = ["lm", "train", "--config", str(tmp_path / "tiny.toml"), "--corpus", str(corpus), "--no-progress",
            "--embedding", "vanilla", "--max-steps", "4", "--set", "train.eval_interval=4"]
    assert main(args + ["--out", str(tmp_path / "run")]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["steps"] == 4
    assert main(args + ["--out", str(tmp_path / "run2"), "--set", "train.tgt_len=100000"]) == 2
    assert "shorter than one segment of tgt_len=100000" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "run3"), "--set", "eval.mem_len=0"]) == 2
    assert "same_length lets every character attend to its eval.mem_len" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "run4"), "--set", "model.vocab_size=30"]) == 2
    assert "model.vocab_size must be 27" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "run5"), "--set", "train.lr"]) == 2
    assert "expected SECTION.KEY=VALUE" in capsys.readouterr().err
    assert main(["lm", "train", "--config", "no_such_config", "--corpus", str(corpus), "--out", "x"]) == 2
    assert "no shipped config of that name" in capsys.readouterr().err
    # an --out under a file failed at the first checkpoint, after eval_interval steps, naming no option
    (tmp_path / "file").write_text("")
    assert main(args + ["--out", str(tmp_path / "file" / "run")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: out_dir (--out): cannot create directory "
                                               f"{tmp_path / 'file' / 'run'} for its files: {tmp_path / 'file'} is a file")
    assert main(["lm", "build-corpus", "--source-dir", str(tmp_path), "--out", str(tmp_path / "file" / "c")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --out: cannot create directory "
                                               f"{tmp_path / 'file' / 'c'} for its files: {tmp_path / 'file'} is a file")
    for seed in ("-1", "99999999999999999999"):  # stop 75: taken, unlike every other seed of the project
        assert main(["lm", "build-corpus", "--source-dir", str(tmp_path), "--out", str(tmp_path / "c"), "--seed",
                     seed]) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: --seed must be an integer in [0, 2**32), got {seed}"
    assert not (tmp_path / "c").exists()
    # prepare-text8 checks its output before reading 100M characters; the default lies in --data-dir
    for extra, option, out in ((["--out", str(tmp_path / "file" / "t8")], "--out", tmp_path / "file" / "t8"),
                               (["--data-dir", str(tmp_path / "file")], "--data-dir", tmp_path / "file" / "text8")):
        assert main(["lm", "prepare-text8", "--source", str(tmp_path / "no-text8.zip"), *extra]) == 2
        assert capsys.readouterr().err.strip() == (f"complexorder: error: {option}: cannot create directory {out} for "
                                                   f"its files: {tmp_path / 'file'} is a file")
    # corrupted and foreign checkpoints
    (tmp_path / "bad.pt").write_bytes(b"\x00 not a checkpoint")
    save_checkpoint(tmp_path / "clf.pt", "classifier", {}, {})
    torch.save({"weights": torch.ones(2)}, tmp_path / "foreign.pt")
    for name, message in (("bad.pt", "could not be read"), ("clf.pt", "holds a 'classifier' model"),
                          ("foreign.pt", "is not a complexorder checkpoint")):
        assert main(["lm", "eval", "--checkpoint", str(tmp_path / name), "--corpus", str(corpus)]) == 2
        assert message in capsys.readouterr().err
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--mem-len", "-3", "--no-progress"]) == 2
    assert "evaluation mem_len (--mem-len) must be >= 0, got -3" in capsys.readouterr().err
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--tgt-len", "0"]) == 2
    assert "evaluation tgt_len (--tgt-len) must be a positive integer, got 0" in capsys.readouterr().err
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--batch-size", "0"]) == 2
    assert "evaluation batch_size (--batch-size) must be a positive integer, got 0" in capsys.readouterr().err
    # a checkpoint of the right kind that lacks its config or weights names the entry, in one short line
    for entry in ("config", "model_state"):
        saved = torch.load(tmp_path / "run" / "best.pt", weights_only=True)
        saved[entry] = {}
        torch.save(saved, tmp_path / "lacking.pt")
        assert main(["lm", "eval", "--checkpoint", str(tmp_path / "lacking.pt"), "--corpus", str(corpus)]) == 2
        assert capsys.readouterr().err.strip() == (
            f"complexorder: error: checkpoint {tmp_path / 'lacking.pt'} lacks its {entry!r} entry (`complexorder lm "
            f"train` writes config and model_state); it is not a usable language-model checkpoint")
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--splits", "dev"]) == 2
    assert "--splits: unknown split 'dev'" in capsys.readouterr().err
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--splits", "test,valid,test"]) == 2
    assert capsys.readouterr().err.strip() == "complexorder: error: --splits: 'test' given more than once in 'test,valid,test'"
    # devices: a name that is not one, CUDA where there is none; the CPU named explicitly works
    assert main(args + ["--out", str(tmp_path / "run6"), "--device", "gpu"]) == 2
    assert "--device: expected auto, cpu, cuda or cuda:N, got 'gpu'" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(args + ["--out", str(tmp_path / "run6"), "--device", "cuda"]) == 2
        assert "--device cuda: CUDA is not available" in capsys.readouterr().err
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "run" / "best.pt"), "--corpus", str(corpus),
                 "--splits", "test", "--max-chars", "200", "--device", "cpu", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["test_chars"] > 0
    # resuming from a weights-only checkpoint (best.pt copied over last.pt) names what is missing
    (tmp_path / "run" / "last.pt").write_bytes((tmp_path / "run" / "best.pt").read_bytes())
    assert main(args + ["--out", str(tmp_path / "run"), "--resume"]) == 2
    assert (f"cannot resume {tmp_path / 'run' / 'last.pt'}: it holds weights only, not a training state (no "
            "optimizer_state); best.pt is written that way") in capsys.readouterr().err


def test_shipped_configs_load():
    assert {"proxy_cpu", "text8_6l"} <= set(shipped_configs())
    for name in shipped_configs():
        cfg = load_lm_config(name, ["model.embedding=complex-order"])
        assert cfg.model.embedding == "complex-order" and cfg.model.vocab_size == 27
    paper = load_lm_config("text8_6l")
    assert (paper.model.n_layer, paper.model.d_model, paper.train.tgt_len, paper.eval.mem_len) == (6, 512, 512, 2100)


def test_an_lm_config_that_extends_a_shipped_one_changes_only_what_it_gives(tmp_path):
    from complexorder.config import config_to_dict

    base = config_to_dict(load_lm_config("proxy_cpu"))
    path = tmp_path / "long.toml"
    path.write_text('extends = "proxy_cpu"\n[train]\ntgt_len = 128\n')
    got = config_to_dict(load_lm_config(str(path), ["model.embedding=complex-order"]))
    assert got == {**base, "model": {**base["model"], "embedding": "complex-order"},
                   "train": {**base["train"], "tgt_len": 128}}
    path.write_text(f'extends = "{path.name}"\n')
    with pytest.raises(ValueError, match=r"^config file .*long.toml: extends 'long.toml' makes a cycle "):
        load_lm_config(str(path))


def test_word_positions_count_letters_from_the_last_space_across_segments():
    model = tiny("complex-order", mem_len=40, position_mode="word")
    # "ab cde fg" then "hi jk": space = 0; a stream starts as if after a space
    first = torch.tensor([[1, 2, 0, 3, 4, 5, 0, 6, 7]])
    second = torch.tensor([[8, 9, 0, 10, 11]])
    memory = model.init_memory(1)
    assert model.positions(first, memory).tolist() == [[1, 2, 0, 1, 2, 3, 0, 1, 2]]
    _, memory = model(first, memory)
    assert memory.next_position.tolist() == [3]
    # the word "fghi" runs over the segment boundary: h and i are its letters 3 and 4
    assert model.positions(second, memory).tolist() == [[3, 4, 0, 1, 2]]
    # so a stream read in segments equals one long pass when the memory covers it
    whole, _ = model(torch.cat([first, second], 1))
    a, mem = model(first)
    b, _ = model(second, mem)
    torch.testing.assert_close(torch.cat([a, b], 1), whole, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"^model.separator_id must be a token id in \[0, 27\), got 27$"):
        tiny("complex-order", position_mode="word", separator_id=27)


def test_pe_control_adds_a_learned_vector_per_word_offset_clamped_to_its_table():
    model = tiny("pe", position_mode="word", max_positions=3)
    tokens = torch.tensor([[1, 2, 3, 4, 0, 5]])  # offsets 1 2 3 4 0 1 -> clamped to 1 2 2 2 0 1
    emb = model.word_emb
    by_hand = emb.weight[tokens[0]] + emb.position_weight[torch.tensor([1, 2, 2, 2, 0, 1])]
    positions = model.positions(tokens, model.init_memory(1))
    torch.testing.assert_close(model.embed(tokens, positions)[0], by_hand * math.sqrt(16))
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in tiny().parameters()) + 3 * 16
    assert emb.position_weight.std() < 0.05  # Dai et al.'s N(0, init_std), like the word table
    with pytest.raises(ValueError, match=r"^model.network = 'complex' needs a complex embedding \('complex-vanilla' or "
                                         r"'complex-order'\), got 'pe'$"):
        tiny("pe", network="complex")


def test_tpe_control_adds_scaled_fixed_sinusoids_of_the_word_offsets():
    model = tiny("tpe", position_mode="word")
    tokens = torch.tensor([[1, 2, 3, 0, 5]])  # offsets 1 2 3 0 1
    offsets = torch.tensor([1.0, 2.0, 3.0, 0.0, 1.0])
    # paper Eq. 7 written out: PE(pos, 2k) = sin(pos / 10000^(2k/d)), PE(pos, 2k+1) = cos(same)
    k = torch.arange(8, dtype=torch.float32)
    angle = offsets[:, None] / 10000.0 ** (2 * k / 16)
    pe = torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(5, 16)
    scale = math.sqrt(2.0) * 0.02  # each sinusoid's RMS equals the table's initial standard deviation
    by_hand = model.word_emb.weight[tokens[0]] + scale * pe
    positions = model.positions(tokens, model.init_memory(1))
    torch.testing.assert_close(model.embed(tokens, positions)[0], by_hand * math.sqrt(16))
    # no parameters beyond vanilla's; position_scale overrides the factor
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in tiny().parameters())
    big = tiny("tpe", position_mode="word", position_scale=1.0)
    torch.testing.assert_close(big.embed(tokens, positions)[0], (big.word_emb.weight[tokens[0]] + pe) * 4.0)
    with pytest.raises(ValueError, match=r"^positions of shape \(3, 5\) do not broadcast"):  # checked as "pe" does
        model(torch.ones(1, 5, dtype=torch.long), positions=torch.zeros(3, 5))
    for bad, embedding in ((0.0, "tpe"), (float("nan"), "tpe"), (1.0, "pe")):
        with pytest.raises(ValueError, match=r"^model.position_scale applies to model.embedding = 'tpe' only and must "
                                             r"be a positive number, got "):
            tiny(embedding, position_scale=bad)


def test_set_errors_name_the_option_not_the_config_file(tmp_path, capsys):
    base = ["lm", "train", "--config", "proxy_cpu", "--corpus", str(tmp_path), "--out", str(tmp_path / "o")]
    for extra, message in (
            (["--set", "train.max_step=5"], "--set train.max_step: unknown key 'max_step' in [train]; valid keys: "
                                            "tgt_len, batch_size, max_steps, "),
            (["--set", "train.lr=fast"], "--set train.lr: expected a number, got 'fast'"),
            (["--set", "model.n_layer.x=3"], "--set model.n_layer.x: 'model.n_layer' is a value, not a section"),
            (["--set", "optim.lr=1"], "--set optim.lr: unknown key 'optim' in the top level; valid keys: model, "
                                      "train, eval"),
            (["--max-steps", "-5"], "--max-steps must be positive, got -5")):
        assert main(base + extra) == 2
        assert capsys.readouterr().err.startswith(f"complexorder: error: {message}")
    assert not (tmp_path / "o").exists()


def test_a_fresh_start_drops_records_left_by_a_crash_before_the_first_checkpoint(corpus, tmp_path):
    cfg = config_from_dict({**TINY_RUN, "train": {**TINY_RUN["train"], "max_steps": 4, "checkpoint_interval": 4}},
                           LMConfig)
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(json.dumps({"event": "train", "step": 4, "train_bpc": 9.9}) + "\n")
    messages = []
    train_language_model(cfg, corpus, run, progress=False, log=messages.append)
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert [(r["event"], r["step"]) for r in records] == [("train", 4), ("valid", 4)]
    assert records[0]["train_bpc"] != 9.9 and f"dropped 1 record(s) after step 0 from {run / 'results.jsonl'}" in messages


def test_eval_results_path_and_mismatched_weights_are_one_line_errors_naming_them(corpus, tmp_path, capsys):
    """`lm eval --results DIR` was a bare IsADirectoryError after the evaluation; weights that do not fit the
    config named only torch's header line ("Error(s) in loading state_dict for TransformerXL:")."""
    cfg = config_from_dict({**TINY_RUN, "train": {**TINY_RUN["train"], "max_steps": 2, "eval_interval": 2}}, LMConfig)
    train_language_model(cfg, corpus, tmp_path / "run", progress=False, log=lambda *_: None)
    ck = tmp_path / "run" / "best.pt"
    assert main(["lm", "eval", "--checkpoint", str(ck), "--corpus", str(corpus), "--no-progress",
                 "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: --results: {tmp_path} is a directory, expected a file path")
    saved = torch.load(ck, weights_only=True)
    saved["model_state"] = {k: v for k, v in saved["model_state"].items() if k != "out.bias"}
    torch.save(saved, tmp_path / "missing.pt")
    assert main(["lm", "eval", "--checkpoint", str(tmp_path / "missing.pt"), "--corpus", str(corpus)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: checkpoint {tmp_path / 'missing.pt'} weights do not match its config: "
        "Missing key(s) in state_dict: \"out.bias\".")


def test_training_wraps_to_a_new_epoch_and_resumes_across_the_boundary(corpus, tmp_path):
    # 32 streams of segments of 128: the tiny corpus holds a few segments per stream, so 12 steps wrap twice
    run = {**TINY_RUN, "train": {**TINY_RUN["train"], "tgt_len": 128, "batch_size": 32, "max_steps": 12,
                                 "log_interval": 1, "eval_interval": 12, "checkpoint_interval": 12}}
    cfg = config_from_dict(run, LMConfig)
    train = load_corpus(corpus, ("train",))["train"]
    per_epoch = (batchify(train, 32, 128).shape[1] - 1) // 128
    assert 2 <= per_epoch < 6
    straight = train_language_model(cfg, corpus, tmp_path / "a", progress=False, log=lambda *_: None)
    assert straight["epochs"] == pytest.approx(12 // per_epoch + (12 % per_epoch) / per_epoch)
    logged = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    epochs = [r["epoch"] for r in logged if r["event"] == "train"]
    assert epochs == [step // per_epoch for step in range(12)]  # step k trains segment k mod per_epoch
    # stopped exactly at the end of the first epoch (its memory saved), then resumed: the straight run's weights
    train_language_model(cfg, corpus, tmp_path / "b", stop_after=per_epoch, progress=False, log=lambda *_: None)
    ck = torch.load(tmp_path / "b" / "last.pt", weights_only=True)
    assert ck["progress"]["segment"] == per_epoch and ck["memory"] is not None
    train_language_model(cfg, corpus, tmp_path / "b", resume=True, progress=False, log=lambda *_: None)
    a = torch.load(tmp_path / "a" / "last.pt", weights_only=True)["model_state"]
    b = torch.load(tmp_path / "b" / "last.pt", weights_only=True)["model_state"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_learning_rate_warms_up_linearly_then_follows_the_cosine_to_min_lr():
    t = TrainSettings(lr=1e-3, min_lr=1e-5, warmup_steps=4, max_steps=14)
    assert [learning_rate(s, t) for s in range(4)] == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3])
    assert learning_rate(4, t) == pytest.approx(1e-3)  # the cosine starts at lr
    assert learning_rate(9, t) == pytest.approx(1e-5 + (1e-3 - 1e-5) * 0.5)  # half way: cos(pi/2) = 0
    assert learning_rate(14, t) == pytest.approx(1e-5) and learning_rate(20, t) == pytest.approx(1e-5)
    assert learning_rate(0, TrainSettings(lr=1e-3, max_steps=10)) == pytest.approx(1e-3)  # no warm-up


@pytest.mark.parametrize("embedding, angles, frequencies", [
    ("vanilla", [], []),
    ("complex-vanilla", ["word_emb.phase"], []),
    ("complex-order", [], ["word_emb.frequency"]),
])
def test_optimizer_groups_never_decay_angles_and_scale_only_the_frequencies(embedding, angles, frequencies):
    model = tiny(embedding)
    names = {id(p): n for n, p in model.named_parameters()}
    groups = {g["name"]: g for g in optimizer_groups(model, TrainSettings(weight_decay=0.1, frequency_lr_scale=0.5))}
    assert [names[id(p)] for p in groups.get("angle", {"params": []})["params"]] == angles
    assert [names[id(p)] for p in groups.get("frequency", {"params": []})["params"]] == frequencies
    assert groups["decay"]["weight_decay"] == 0.1 and groups["decay"]["lr_scale"] == 1.0
    assert all(g["weight_decay"] == 0.0 for k, g in groups.items() if k != "decay")
    if frequencies:
        assert groups["frequency"]["lr_scale"] == 0.5
    grouped = [id(p) for g in groups.values() for p in g["params"]]
    assert sorted(grouped) == sorted(names)  # every parameter in exactly one group


@pytest.mark.parametrize("key, value, message", [
    ("train.lr", float("inf"),  # was: BPC Infinity, exit 0
     "train.lr must be a finite number in (0, 3.40282e+38] (Adam keeps it in float32), got inf"),
    ("train.min_lr", float("nan"), "train.min_lr must be a finite number in [0, 0.003] (the cosine schedule's end, "
                                   "at most train.lr), got nan"),  # was: NaN passed `min_lr < 0 or min_lr > lr`
    ("train.clip", -1.0, "train.clip must be a finite number >= 0 (0: no clipping), got -1.0"),
    ("train.weight_decay", -1.0, "train.weight_decay must be a finite number >= 0, got -1.0"),
    ("model.init_std", -1.0, "model.init_std must be a finite number >= 0 (the weights' initial standard deviation), "
                             "got -1.0"),  # was: a torch traceback from normal_()
    # stop 73: a seed of 2**32 + 1 repeated seed 1's run; the two counts below shared one message naming neither value
    ("train.seed", 2 ** 32 + 1, "train.seed must be an integer in [0, 2**32), got 4294967297"),
    ("train.warmup_steps", -5, "train.warmup_steps must be >= 0 (0: no warm-up), got -5"),
    ("train.eval_max_chars", -1, "train.eval_max_chars must be >= 0 (0: the whole valid split), got -1"),
])
def test_an_lm_setting_out_of_range_is_an_error_naming_it(key, value, message):
    section, name = key.split(".")
    data = {s: dict(v) for s, v in TINY_RUN.items()}
    data[section][name] = value
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        check_lm_config(config_from_dict(data, LMConfig))


def test_a_diverging_lm_loss_stops_training_with_an_error_naming_the_step(corpus, tmp_path, monkeypatch):
    import complexorder.experiments.language_model as L

    def poisoned(cfg):
        model = TransformerXL(cfg.model)
        with torch.no_grad():
            model.out.bias.fill_(float("nan"))  # every logit NaN: the loss is NaN from the first step
        return model

    monkeypatch.setattr(L, "build_model", poisoned)
    cfg = config_from_dict({s: dict(v) for s, v in TINY_RUN.items()}, LMConfig)
    with pytest.raises(FloatingPointError, match=r"^training diverged at step 1: the loss is nan \(no checkpoint was "
                                                 r"saved\); lower train.lr or raise train.warmup_steps$"):
        train_language_model(cfg, corpus, tmp_path / "run", progress=False, log=lambda m: None)


def test_a_run_from_before_a_setting_existed_resumes_with_its_default(corpus, tmp_path):
    """A checkpoint written before model.phase_dropout / model.attention_score existed lacks those keys; it had the
    defaults, so resuming it with the same config is no 'other config' (a changed setting still is)."""
    cfg = config_from_dict(TINY_RUN, LMConfig)
    train_language_model(cfg, corpus, tmp_path / "old", stop_after=4, progress=False, log=lambda *_: None)
    ck = torch.load(tmp_path / "old" / "last.pt", weights_only=True)
    for key in ("phase_dropout", "attention_score"):
        del ck["config"]["model"][key]
    torch.save(ck, tmp_path / "old" / "last.pt")
    summary = train_language_model(cfg, corpus, tmp_path / "old", resume=True, progress=False, log=lambda *_: None)
    assert summary["steps"] == 12
    other = config_from_dict({**TINY_RUN, "model": {**TINY_RUN["model"], "phase_dropout": 0.1}}, LMConfig)
    with pytest.raises(ValueError, match=r"trained with other settings \(the run's → the config's now: "
                                         r"model.phase_dropout: 0.0 → 0.1\)"):
        train_language_model(other, corpus, tmp_path / "old", resume=True, progress=False)
