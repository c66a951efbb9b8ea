"""Translation (paper Sec. 3.2): causal decoding, incremental = full, beam 1 = greedy, BLEU, data errors, end to end."""

import dataclasses
import hashlib
import io
import json
import math
import os
import re
import stat
import threading
from pathlib import Path

import pytest
import torch

from complexorder.checkpoint import load_checkpoint, save_checkpoint
from complexorder.cli import main
from complexorder.config import config_to_dict
from complexorder.data.multi30k import (EOS, PAD, UNK, SubwordTokenizer, WordTokenizer, filter_training_pairs,
                                        read_lines, read_parallel, split_files, tokenizer_from_state)
from complexorder.experiments.training import count_parameters
from complexorder.experiments.translation import (TranslationConfig, average_checkpoints, beam_search, corpus_bleu,
                                                  evaluate_split, greedy_search, inverse_sqrt_lr, load_translator,
                                                  make_batches, packaged_configs, resolve_config, train_translation)
from complexorder.experiments.translation import _pairs_signature
from complexorder.models.seq2seq import VARIANTS, Seq2SeqConfig, TransformerSeq2Seq, reorder_cache

V = 40


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def tiny(variant, **kw):
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(variant, **{"d_model": 16, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2,
                                    "dim_feedforward": 24, "dropout": 0.0, **kw})
    return TransformerSeq2Seq(cfg, V, V).eval()


def sources():
    src = torch.randint(4, V, (3, 7))
    src[1, 5:] = 0  # a padded sentence
    src[2, 3:] = 0
    src[0, -1] = src[1, 4] = src[2, 2] = EOS
    return src


def assert_causal_and_incremental(model):
    """Changing target token 4 changes no earlier output, and step-wise decoding equals full decoding.

    Returns ``(src, tgt, logits, memory)`` for further checks.
    """
    src, tgt = sources(), torch.randint(4, V, (3, 6))
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1 - 4) % (V - 4) + 4
    a, b = model(src, tgt), model(src, changed)
    assert torch.equal(a[:, :4], b[:, :4]) and not torch.allclose(a[:, 4:], b[:, 4:])
    memory, src_pad = model.encode(src)
    cache = {}
    steps = torch.stack([model.decode_step(tgt[:, t], t, memory, src_pad, cache) for t in range(6)], 1)
    assert torch.allclose(steps, a, atol=1e-5)
    return src, tgt, a, memory


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoder_is_causal_no_future_target_token_leaks(variant):
    model = tiny(variant)
    src, tgt = sources(), torch.randint(4, V, (3, 6))
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1 - 4) % (V - 4) + 4
    a, b = model(src, tgt), model(src, changed)
    assert torch.equal(a[:, :4], b[:, :4])  # outputs before the changed position are identical
    assert not torch.allclose(a[:, 4:], b[:, 4:])


@pytest.mark.parametrize("variant", VARIANTS)
def test_tied_output_is_the_target_embedding_at_position_zero_and_scaling_follows_d_model(variant):
    model = tiny(variant, tie_output=True)
    ids = torch.arange(V)
    if variant == "vanilla":
        expected = model.tgt_embedding.weight
        table = model.tgt_embedding.weight
    else:
        z = model.tgt_embedding(ids, torch.zeros_like(ids))  # f(j, 0) = r_j (no phase at position 0)
        expected = torch.cat((z.real, z.imag), -1)
        table = model.tgt_embedding.amplitude
    assert torch.equal(model.output_weight(), expected)
    h = torch.randn(2, 3, model.output_weight().shape[1])
    h = torch.complex(*h.chunk(2, -1)) if variant != "vanilla" else h
    feats = torch.cat((h.real, h.imag), -1) if variant != "vanilla" else h
    torch.testing.assert_close(model.project(h), feats @ expected.T + model.output_bias)
    # scale_embedding: tables start at N(0, 1/d) (pad row zero) and are multiplied by sqrt(d)
    assert torch.all(table[0] == 0)
    assert abs(table[1:].std().item() - 16 ** -0.5) < 0.05
    tokens = torch.randint(4, V, (2, 5))
    if variant == "vanilla":
        pos = __import__("complexorder").embeddings.sinusoidal_position_encoding(torch.arange(5), 16)
        expected_x = model.tgt_embedding(tokens) * 4.0 + pos
    else:
        expected_x = model.tgt_embedding(tokens) * 4.0
    torch.testing.assert_close(model._embed(model.tgt_embedding, tokens), expected_x)
    unscaled = tiny(variant, scale_embedding=False)
    table = unscaled.tgt_embedding.weight if variant == "vanilla" else unscaled.tgt_embedding.amplitude
    assert abs(table[1:].std().item() - 1.0) < 0.2 and unscaled.embed_scale == 1.0


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("options", [{}, {"norm_first": True, "tie_output": True}])
def test_incremental_decoding_equals_full_decoding(variant, options):
    model = tiny(variant, **options)
    src, tgt = sources(), torch.randint(4, V, (3, 6))
    full = model(src, tgt)
    memory, src_pad = model.encode(src)
    cache = {}
    steps = torch.stack([model.decode_step(tgt[:, t], t, memory, src_pad, cache) for t in range(6)], 1)
    assert torch.allclose(steps, full, atol=1e-5)
    # the cache holds one key per step, and only new tokens were projected
    assert cache["layer0"]["self"]["k"].shape[2] == 6


def test_complex_order_decoder_steps_use_the_explicit_position():
    model = tiny("complex-order")
    memory, src_pad = model.encode(sources())
    token = torch.full((3,), 7)
    at0 = model.decode_step(token, 0, memory, src_pad, {})
    at5 = model.decode_step(token, 5, memory, src_pad, {})
    assert not torch.allclose(at0, at5, atol=1e-4)
    plain = tiny("complex-vanilla")  # no positions: the first step is the same at any position
    memory, src_pad = plain.encode(sources())
    assert torch.allclose(plain.decode_step(token, 0, memory, src_pad, {}),
                          plain.decode_step(token, 5, memory, src_pad, {}), atol=1e-6)


def test_reorder_cache_follows_back_pointers():
    cache = {"layer0": {"self": {"k": torch.arange(3.0).view(3, 1)}}}
    reorder_cache(cache, torch.tensor([2, 2, 0]))
    assert cache["layer0"]["self"]["k"].view(-1).tolist() == [2.0, 2.0, 0.0]


@pytest.mark.parametrize("variant", VARIANTS)
def test_beam_search_with_beam_one_is_greedy(variant):
    model = tiny(variant)
    src = sources()
    greedy = greedy_search(model, src, max_len_a=1.0, max_len_b=3)
    assert greedy == beam_search(model, src, beam_size=1, max_len_a=1.0, max_len_b=3)
    assert all(len(h) <= 7 + 3 for h in greedy)


def test_beam_search_is_the_same_batched_or_alone_and_beats_greedy_score():
    model = tiny("complex-order")
    src = sources()
    batched = beam_search(model, src, beam_size=4, length_penalty=0.0, max_len_a=0.0, max_len_b=4)
    alone = [beam_search(model, src[i:i + 1, :int((src[i] != 0).sum())], beam_size=4, length_penalty=0.0,
                         max_len_a=0.0, max_len_b=4)[0] for i in range(3)]
    assert batched == alone

    def logprob(i, hyp):  # total log-probability of hyp + </s> given source i
        tgt = torch.tensor([[2] + hyp])
        lp = model(src[i:i + 1], tgt).log_softmax(-1)[0]
        return sum(lp[t, w].item() for t, w in enumerate(hyp + [EOS]))

    greedy = greedy_search(model, src, max_len_a=0.0, max_len_b=4)
    for i in range(3):  # without length normalisation, beam 4 finds at least the greedy probability
        assert logprob(i, batched[i]) >= logprob(i, greedy[i]) - 1e-5


def test_bleu_on_a_hand_made_example():
    # hypothesis/reference n-gram precisions 5/6, 3/5, 2/4, 1/3; equal lengths (no brevity penalty)
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    scores = corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert scores["bleu"] == pytest.approx(expected, abs=1e-6)
    assert scores["bleu_tok_lc"] == pytest.approx(expected, abs=1e-6)
    assert "case:mixed" in scores["bleu_signature"] and "case:lc" in scores["bleu_tok_lc_signature"]
    cased = corpus_bleu(["The Cat sat on the mat"], ["the cat sat on a mat"])
    assert cased["bleu_tok_lc"] == pytest.approx(expected, abs=1e-6) and cased["bleu"] < expected
    # brevity penalty exp(1 - r/c): a 4-word hypothesis that is a prefix of a 6-word reference
    short = corpus_bleu(["the cat sat on"], ["the cat sat on a mat"])
    assert short["bleu"] == pytest.approx(100 * math.exp(1 - 6 / 4), abs=1e-6)


def test_inverse_sqrt_schedule():
    assert inverse_sqrt_lr(1, 1e-3, 100) == pytest.approx(1e-5)
    assert inverse_sqrt_lr(100, 1e-3, 100) == pytest.approx(1e-3)
    assert inverse_sqrt_lr(400, 1e-3, 100) == pytest.approx(5e-4)


def test_batches_cover_every_example_once_and_group_lengths():
    lengths = [5, 1, 9, 3, 3, 7, 2]
    batches = make_batches(lengths, 3, torch.Generator().manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(7))
    assert make_batches(lengths, 3) == [[1, 6, 3], [4, 0, 5], [2]]


# ---------------------------------------------------------------------------------------- data


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_parallel_files_of_different_lengths_name_both_files_and_counts(tmp_path):
    src, tgt = write(tmp_path / "a.en", "one\ntwo\nthree\n"), write(tmp_path / "a.de", "eins\nzwei\n")
    with pytest.raises(ValueError, match=r"a.en has 3 lines but .*a.de has 2"):
        read_parallel(src, tgt)


def test_reading_splits_on_newlines_only_and_reports_bad_bytes(tmp_path):
    assert read_lines(write(tmp_path / "x", "a\x85b\r\n\nc")) == ["a\x85b", "", "c"]
    with pytest.raises(ValueError, match=r"x2:2: not valid UTF-8 \(byte 0xff\)"):
        read_lines(write(tmp_path / "x2", b"ok\nbad \xff\n"))
    with pytest.raises(FileNotFoundError, match=r"missing data file train.en .*translate download"):
        split_files(tmp_path, "train")
    with pytest.raises(ValueError, match="unknown Multi30k split 'dev'; valid splits: train, val, test2016"):
        split_files(tmp_path, "dev")


def test_empty_and_overlong_training_pairs_are_dropped_and_reported():
    pairs = [("a b", "x y"), ("", "x"), ("a b c d", "x"), ("a", "")]
    encoded = [(s.split(), t.split()) for s, t in pairs]
    keep, report = filter_training_pairs(pairs, encoded, max_tokens=3)
    assert keep == [0]
    assert report.describe() == ("kept 1 of 4 training pairs; dropped 2 with an empty side (first at line 2); "
                                 "dropped 1 longer than 3 tokens (first at line 3)")


def test_subword_vocabulary_spells_unseen_characters_as_bytes_and_round_trips():
    texts = ["Ein Mann fährt Fahrrad.", "A man rides a bike.", "Zwei Hunde spielen im Schnee."] * 5
    tok = SubwordTokenizer.train(texts, vocab_size=300)
    unseen = "Ein Schneemann ☃ und 中文"
    ids = tok.encode(unseen)
    assert UNK not in ids and tok.decode(ids) == unseen
    again = tokenizer_from_state(tok.state())
    assert again.encode(unseen) == ids
    words = WordTokenizer.train(["A man , a man .", "A dog"], min_frequency=2)
    assert words.decode(words.encode("A MAN and a cat.")) == "a man <unk> a <unk> <unk>"  # "." seen once
    # a threshold above every count would leave only the special tokens: every sentence <unk>
    with pytest.raises(ValueError, match=r"^data.min_frequency=4 leaves no word in the vocabulary: the most frequent "
                                         r"word of the training text occurs 3 time\(s\)$"):
        WordTokenizer.train(["A man , a man .", "A dog"], min_frequency=4)


# ---------------------------------------------------------------------------------------- configs


def test_packaged_configs_load_and_cpu_variants_share_budget_and_parameter_count():
    names = packaged_configs()
    for variant in VARIANTS:
        assert f"paper-{variant}" in names and f"cpu-{variant}" in names
    paper = resolve_config("paper-complex-order")
    assert (paper.model.num_encoder_layers, paper.model.d_model, paper.model.nhead, paper.model.dropout,
            paper.train.batch_size) == (6, 512, 8, 0.1, 64)
    cpu = [resolve_config(f"cpu-{v}") for v in VARIANTS]
    assert len({dataclasses.astuple(c.train) for c in cpu}) == 1 and len({dataclasses.astuple(c.data) for c in cpu}) == 1
    vocab = cpu[0].data.vocab_size
    counts = [sum(p.numel() for p in TransformerSeq2Seq(c.model, vocab, vocab).parameters()) for c in cpu]
    assert max(counts) / min(counts) <= 1.10
    assert resolve_config("cpu-vanilla", {"train.lr": 0.01}).train.lr == 0.01
    with pytest.raises(ValueError, match=r"^overrides\['train.warmup'\]: unknown key 'warmup' in \[train\]; valid keys: "):
        resolve_config("cpu-vanilla", {"train.warmup": 3})
    with pytest.raises(ValueError, match=r"^--set train.warmup: unknown key 'warmup' in \[train\]; valid keys: "):
        resolve_config("cpu-vanilla", {"train.warmup": 3}, option="--set")
    with pytest.raises(FileNotFoundError, match="neither a file nor a packaged config"):
        resolve_config("gpu-huge")


def test_a_translation_config_that_extends_a_packaged_one_inherits_everything_it_does_not_set(tmp_path):
    """extends = "cpu-complex-order": tables merge key by key, so only the keys the file gives change; its name is
    its own (not inherited); --set overrides still apply on top; a base that does not exist names the built-ins."""
    base = config_to_dict(resolve_config("cpu-complex-order"))
    path = tmp_path / "theta.toml"
    path.write_text('extends = "cpu-complex-order"\nname = "theta"\n[model]\ninitial_phase = true\n'
                    '[train]\nlr = 5e-4\n')
    got = config_to_dict(resolve_config(str(path)))
    expected = {**base, "name": "theta", "model": {**base["model"], "initial_phase": True},
                "train": {**base["train"], "lr": 5e-4}}
    assert got == expected
    assert resolve_config(str(path), {"model.d_model": 64}).model.d_model == 64
    path.write_text('extends = "cpu-complex-order"\n')
    # a name is never inherited: the file's own name, without .toml (stop 81: "translation", the dataclass default, so
    # every unnamed file trained into runs/translation/translation and resumed another file's run)
    assert resolve_config(str(path)).name == "theta"
    assert resolve_config(str(path), {"name": "mine"}).name == "mine"
    path.write_text('extends = "gpu-huge"\n')
    with pytest.raises(FileNotFoundError, match=r"^config gpu-huge not found: .*cpu-complex-order \(translation\)"):
        resolve_config(str(path))


def test_every_translation_explore_config_is_one_or_two_settings_away_from_the_config_it_extends():
    """The explore configs of benchmarks/translation/explore extend cpu-complex-order (or another explore file)
    instead of copying it: each resolves, differs from its base in the keys its file lists and nowhere else, and
    keeps cpu-complex-order's budget."""
    import tomllib

    folder = Path(__file__).resolve().parent.parent / "benchmarks" / "translation" / "explore"
    files = sorted(folder.glob("*.toml"))
    if not files:
        pytest.skip("no benchmarks/ folder beside the tests (an installed package)")
    budget = resolve_config("cpu-complex-order").train.max_steps
    for file in files:
        raw = tomllib.loads(file.read_text())
        extends = raw.pop("extends")
        assert extends == "cpu-complex-order" or (folder / extends).is_file(), (file.name, extends)
        base = config_to_dict(resolve_config(extends if extends == "cpu-complex-order" else str(folder / extends)))
        got = config_to_dict(resolve_config(str(file)))
        assert got["name"] == raw.pop("name") == file.stem
        for section in ("model", "data", "train", "decode"):
            given = raw.pop(section, {})
            assert got[section] == {**base[section], **given}, (file.name, section)
            assert all(base[section][key] != value for key, value in given.items()), (file.name, section)
        assert not raw, (file.name, raw)
        assert got["train"]["max_steps"] == budget


# ---------------------------------------------------------------------------------------- end to end

EN = ["one", "two", "three", "four", "five", "six"]
DE = ["eins", "zwei", "drei", "vier", "fünf", "sechs"]


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory):
    """A word-for-word toy 'translation' of number sequences in the Multi30k file layout."""
    root = tmp_path_factory.mktemp("data")
    gen = torch.Generator().manual_seed(0)

    def split(name, n):
        rows = [torch.randint(0, 6, (int(torch.randint(2, 5, (1,), generator=gen)),), generator=gen).tolist()
                for _ in range(n)]
        write(root / "translation/multi30k" / f"{name}.en", "".join(" ".join(EN[i] for i in r) + "\n" for r in rows))
        write(root / "translation/multi30k" / f"{name}.de", "".join(" ".join(DE[i] for i in r) + "\n" for r in rows))

    split("train", 96)
    split("val", 8)
    split("test2016", 8)
    with open(root / "translation/multi30k/train.en", "a") as f:  # an empty and an overlong pair
        f.write("\n" + " ".join(["one"] * 30) + "\n")
    with open(root / "translation/multi30k/train.de", "a") as f:
        f.write("eins\n" + " ".join(["eins"] * 30) + "\n")
    return root


def toy_config(variant):
    return resolve_config("cpu-" + variant, {
        "name": f"toy-{variant}", "model.d_model": 16, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 32, "model.dropout": 0.0,
        "data.preprocessing": "word", "data.min_frequency": 1, "data.max_tokens": 12,
        "train.batch_size": 8, "train.max_steps": 180, "train.lr": 0.01, "train.warmup_steps": 20,
        "train.keep_last": 2, "decode.beam_size": 3})


@pytest.fixture(scope="module")
def trained(toy_data, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    messages = []
    config = dataclasses.replace(toy_config("complex-order"))
    summary = train_translation(config, run_dir, toy_data, progress=False, log=messages.append)
    return run_dir, summary, messages, config


def test_a_run_stopped_mid_epoch_by_max_steps_writes_no_epoch_checkpoint(toy_data, tmp_path):
    """max_steps inside an epoch wrote epochN.pt for part of that epoch; a resume overwrote it with the whole
    epoch's, and `translate average --last` counted the partial snapshot as an epoch."""
    from complexorder.checkpoint import read_jsonl

    config = toy_config("vanilla")  # 96 pairs in batches of 8: 12 steps an epoch
    short = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=18))
    summary = train_translation(short, tmp_path, toy_data, progress=False, log=lambda m: None)
    assert summary["step"] == 18 and not summary["epoch_complete"]
    assert [p.name for p in tmp_path.glob("epoch*.pt")] == ["epoch1.pt"] and (tmp_path / "last.pt").is_file()
    log = read_jsonl(tmp_path / "log.jsonl")
    assert [(r["epoch"], r["step"], r["epoch_complete"]) for r in log] == [(1, 12, True), (2, 18, False)]
    longer = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=24))
    train_translation(longer, tmp_path, toy_data, progress=False, log=lambda m: None)
    assert sorted(p.name for p in tmp_path.glob("epoch*.pt")) == ["epoch1.pt", "epoch2.pt"]
    assert [(r["epoch"], r["step"], r["epoch_complete"]) for r in read_jsonl(tmp_path / "log.jsonl")][-1] == (2, 24, True)


def test_tiny_end_to_end_train_resume_evaluate_and_translate(trained, toy_data, tmp_path, capsys):
    run_dir, summary, messages, config = trained
    assert summary["step"] == 180
    # stop 73: the summary says what was trained (it gave the resume position: the next epoch, sums reset to 0)
    assert summary["epochs"] == 15 and summary["epoch_complete"] and summary["budget_reached"]
    assert "loss_sum" not in summary and "batch" not in summary
    assert any("kept 96 of 98 training pairs; dropped 1 with an empty side (first at line 97); dropped 1 longer "
               "than 12 tokens (first at line 98)" in m for m in messages)
    assert any(m.endswith("(word; its size comes from data.min_frequency = 1, data.vocab_size applies to BPE only)")
               for m in messages)  # stop 73: `--set data.vocab_size=5` with words was ignored unsaid
    assert sorted(p.name for p in run_dir.glob("epoch*.pt")) == ["epoch14.pt", "epoch15.pt"]  # keep_last = 2
    from complexorder.checkpoint import read_jsonl

    log = read_jsonl(run_dir / "log.jsonl")
    assert log[-1]["train_loss"] < log[0]["train_loss"] - 1.0
    # a finished run resumes to a no-op; a larger budget continues from the saved step
    notes = []
    assert train_translation(config, run_dir, toy_data, progress=False, log=notes.append)["step"] == 180
    assert "toy-complex-order: note: the run is already at its budget (train.max_steps = 180, train.max_epochs = 100); " \
           "nothing to train — raise the budget to continue" in notes
    more = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=186))
    assert train_translation(more, run_dir, toy_data, progress=False, log=lambda m: None)["step"] == 186
    # the model learned the word-for-word mapping of held-out sentences
    model, tokenizer, _ = load_translator(run_dir / "last.pt")
    src = torch.tensor([tokenizer.encode("three one five") + [EOS]])
    assert tokenizer.decode(greedy_search(model, src)[0]) == "drei eins fünf"
    assert main(["translate", "eval", "--checkpoint", str(run_dir / "last.pt"), "--data-dir", str(toy_data),
                 "--split", "val", "--no-progress"]) == 0
    out = capsys.readouterr().out
    # word-level output is lower-cased and tokenized: no detokenized case-sensitive figure is made up for it
    assert "toy-complex-order val: BLEU n/a (word-level output); tokenized lower-cased BLEU" in out
    assert "nrefs:1|case:lc|eff:no|tok:13a" in out
    (tmp_path / "in.en").write_text("two six\n\nfour four one\n")
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--input", str(tmp_path / "in.en"),
                 "--output", str(tmp_path / "out.de"), "--beam-size", "2"]) == 0
    assert (tmp_path / "out.de").read_text(encoding="utf-8") == "zwei sechs\n\nvier vier eins\n"
    capsys.readouterr()
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--input", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --input {tmp_path} is a directory; expected a "
                                               f"text file with one sentence per line, or - for standard input")
    # named pipes (a shell's <(...), say) are read and written like files: an output pipe is not replaced by a file
    fifo_in, fifo_out, received = tmp_path / "in.fifo", tmp_path / "out.fifo", []
    os.mkfifo(fifo_in)
    os.mkfifo(fifo_out)
    # (daemon threads joined with a timeout: a pipe replaced by a file would leave its reader blocked, not the tests)
    writer = threading.Thread(target=lambda: fifo_in.write_text("two six\n"), daemon=True)
    reader = threading.Thread(target=lambda: received.append(fifo_out.read_text(encoding="utf-8")), daemon=True)
    writer.start()
    reader.start()
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--input", str(fifo_in),
                 "--output", str(fifo_out), "--no-progress"]) == 0
    writer.join(timeout=30)
    reader.join(timeout=30)
    assert received == ["zwei sechs\n"] and stat.S_ISFIFO(os.stat(fifo_out).st_mode)
    # a checkpoint whose decode settings cannot give a translation (saved before training checked them)
    broken = torch.load(run_dir / "last.pt", weights_only=True)
    broken["config"]["decode"]["max_len_b"] = -100
    torch.save(broken, tmp_path / "broken-decode.pt")
    capsys.readouterr()
    assert main(["translate", "run", "--checkpoint", str(tmp_path / "broken-decode.pt")]) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: the checkpoint's decode.max_len_b must be at least 1 (output tokens allowed beyond "
        "max_len_a x source length), got -100")
    lacking = torch.load(run_dir / "last.pt", weights_only=True)
    del lacking["tokenizer"]
    torch.save(lacking, tmp_path / "lacking.pt")
    assert main(["translate", "run", "--checkpoint", str(tmp_path / "lacking.pt")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: checkpoint {tmp_path / 'lacking.pt'} lacks its 'tokenizer' entry (`complexorder "
        f"translate train` writes config, tokenizer, vocab_size and model_state); it is not a usable translation "
        f"checkpoint")
    # a sentence longer than the training limit (data.max_tokens = 12) is translated in full
    seen = []
    model.src_embedding.register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0].shape[-1]))
    long = " ".join(["two", "four", "six"] * 6)
    from complexorder.experiments.translation import translate_sentences

    output = translate_sentences(model, tokenizer, [long], dataclasses.replace(config.decode, beam_size=1))[0]
    assert seen[0] == 19 and output  # the encoder saw all 18 words + </s>
    assert main(["translate", "average", "--run-dir", str(run_dir), "--last", "2", "--output",
                 str(tmp_path / "avg.pt")]) == 0
    load_translator(tmp_path / "avg.pt")
    avg = torch.load(tmp_path / "avg.pt", weights_only=True)
    epochs = sorted(run_dir.glob("epoch*.pt"), key=lambda p: int(p.stem[5:]))[-2:]
    # an averaged file named like an epoch's in the run directory is not taken for one
    (run_dir / "epoch_avg.pt").write_bytes((tmp_path / "avg.pt").read_bytes())
    assert main(["translate", "average", "--run-dir", str(run_dir), "--last", "2", "--output",
                 str(tmp_path / "avg2.pt")]) == 0
    assert f"averaged {epochs[0].name}, {epochs[1].name} into" in capsys.readouterr().out
    assert main(["translate", "average", "--run-dir", str(run_dir), "--last", "0", "--output",
                 str(tmp_path / "avg3.pt")]) == 2
    assert "--last must be at least 1, got 0" in capsys.readouterr().err
    # stop 81: --last with checkpoints given by name was ignored without a word
    assert main(["translate", "average", str(epochs[0]), str(epochs[1]), "--last", "0", "--output",
                 str(tmp_path / "avg4.pt")]) == 2
    assert capsys.readouterr().err == ("complexorder: error: --last 0 applies to --run-dir only (the last N epoch "
                                       "checkpoints there); the checkpoints given by name are averaged as given\n")
    assert not (tmp_path / "avg4.pt").exists()
    # an output that is one of the inputs would replace it: refused, the epoch checkpoint kept as it was
    before = epochs[1].read_bytes()
    assert main(["translate", "average", "--run-dir", str(run_dir), "--last", "2", "--output", str(epochs[1])]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --output {epochs[1]} is one of the checkpoints to "
                                               f"average ({epochs[1]}), which this command reads; writing it would "
                                               "destroy it — choose another file")
    assert epochs[1].read_bytes() == before
    (run_dir / "epoch_avg.pt").unlink()
    # checkpoints of one config but another tokenizer (other training data) are not averaged
    other = torch.load(epochs[1], weights_only=True)
    other["tokenizer"] = {**other["tokenizer"], "itos": list(reversed(other["tokenizer"]["itos"]))}
    torch.save(other, tmp_path / "other.pt")
    assert main(["translate", "average", str(epochs[0]), str(tmp_path / "other.pt"), "--output",
                 str(tmp_path / "avg4.pt")]) == 2
    assert "their tokenizers differ (trained on other data)" in capsys.readouterr().err
    a, b = (torch.load(p, weights_only=True)["model_state"] for p in epochs)
    assert [Path(p).name for p in avg["averaged_from"]] == [p.name for p in epochs]
    for key, value in avg["model_state"].items():  # the element-wise mean of the last two epochs
        torch.testing.assert_close(value, (a[key] + b[key]) / 2)
    assert any(not torch.equal(a[k], b[k]) for k in a)  # two different checkpoints, so the mean is a real test


def test_translate_reads_standard_input(trained, monkeypatch, capsys):
    run_dir = trained[0]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"one two\nfive three six\n"), encoding="utf-8"))
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--beam-size", "1"]) == 0
    assert capsys.readouterr().out == "eins zwei\nfünf drei sechs\n"
    # bytes that are not UTF-8 are named as in a file, not passed on to the tokenizer
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"one two\n\xff\xfe three\n"), encoding="utf-8"))
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--beam-size", "1"]) == 2
    assert "<stdin>:2: not valid UTF-8 (byte 0xff); convert the file to UTF-8" in capsys.readouterr().err
    # empty input: an empty output, and a note saying so
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))
    assert main(["translate", "run", "--checkpoint", str(run_dir / "last.pt"), "--beam-size", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "note: standard input holds no lines; nothing to translate" in captured.err


def test_an_epoch_resumed_midway_logs_the_loss_of_all_its_batches(toy_data, tmp_path):
    from complexorder.checkpoint import read_jsonl

    def budget(steps):
        config = toy_config("vanilla")
        return dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=steps))

    train_translation(budget(10), tmp_path / "straight", toy_data, progress=False, log=lambda m: None)
    train_translation(budget(4), tmp_path / "resumed", toy_data, progress=False, log=lambda m: None)
    train_translation(budget(10), tmp_path / "resumed", toy_data, progress=False, log=lambda m: None)
    straight, resumed = read_jsonl(tmp_path / "straight" / "log.jsonl"), read_jsonl(tmp_path / "resumed" / "log.jsonl")
    assert [r["step"] for r in resumed] == [4, 10] and straight[-1]["step"] == 10
    assert resumed[-1]["train_loss"] == straight[-1]["train_loss"]  # all ten batches, not the six after the resume
    assert resumed[0]["train_loss"] != resumed[-1]["train_loss"]
    # a crash after epoch 2 was logged but before its last.pt: the resumed run's epoch 2 replaces the logged one
    at_10 = (tmp_path / "resumed" / "last.pt").read_bytes()
    train_translation(budget(14), tmp_path / "resumed", toy_data, progress=False, log=lambda m: None)
    (tmp_path / "resumed" / "last.pt").write_bytes(at_10)
    train_translation(budget(14), tmp_path / "resumed", toy_data, progress=False, log=lambda m: None)
    assert [r["step"] for r in read_jsonl(tmp_path / "resumed" / "log.jsonl")] == [4, 10, 12, 14]


def test_a_resume_on_other_training_data_is_refused_and_names_both(toy_data, tmp_path):
    import shutil

    config = toy_config("vanilla")
    config = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=4))
    train_translation(config, tmp_path / "run", toy_data, progress=False, log=lambda m: None)
    saved = torch.load(tmp_path / "run" / "last.pt", weights_only=True)["train_data"]
    pairs = (toy_data / "translation/multi30k/train.en").read_text().count("\n")
    assert saved["pairs"] == pairs and len(saved["sha256"]) == 64
    other = tmp_path / "other"
    shutil.copytree(toy_data, other)
    de = other / "translation/multi30k/train.de"
    de.write_text(de.read_text().replace("eins", "sieben", 1))  # one word of one line changed
    longer = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=6))
    with pytest.raises(ValueError, match=rf"cannot resume .*last.pt: it was trained on other training data "
                                         rf"\({pairs} pairs, sha256 {saved['sha256'][:12]}…; .*train.en and .*train.de "
                                         rf"now give {pairs} pairs, [0-9a-f]{{12}}…\); use the original files"):
        train_translation(longer, tmp_path / "run", other, progress=False, log=lambda m: None)
    train_translation(longer, tmp_path / "run", toy_data, progress=False, log=lambda m: None)  # the same data resumes
    assert torch.load(tmp_path / "run" / "last.pt", weights_only=True)["progress"]["step"] == 6


def test_a_checkpoint_of_another_model_type_is_a_clear_error(trained, toy_data, tmp_path, capsys):
    run_dir, _, _, config = trained
    save_checkpoint(tmp_path / "clf.pt", "classifier", {}, {})
    assert main(["translate", "run", "--checkpoint", str(tmp_path / "clf.pt")]) == 2
    assert "holds a 'classifier' model, expected 'translation'" in capsys.readouterr().err
    other = dataclasses.replace(config, model=dataclasses.replace(config.model, variant="vanilla"))
    with pytest.raises(ValueError, match=r"model.variant: 'complex-order' → 'vanilla'"):
        train_translation(other, run_dir, toy_data, progress=False, log=lambda m: None)
    assert main(["translate", "run", "--checkpoint", str(tmp_path / "none.pt")]) == 2
    assert "checkpoint" in capsys.readouterr().err


def test_a_config_default_is_the_paper_setting():
    cfg = TranslationConfig()
    assert (cfg.model.d_model, cfg.model.nhead, cfg.model.num_encoder_layers, cfg.train.batch_size) == (512, 8, 6, 64)


def test_empty_training_validation_or_test_files_are_errors_naming_them(toy_data, tmp_path):
    import shutil

    root = tmp_path / "data"
    shutil.copytree(toy_data, root)
    folder = root / "translation/multi30k"
    config = toy_config("vanilla")
    for name in ("train.en", "train.de"):
        (folder / name).write_text("\n\n")  # blank lines only: every pair dropped
    with pytest.raises(ValueError, match=r"no training pairs in .*train.en and .*train.de: kept 0 of 2 training "
                                         r"pairs; dropped 2 with an empty side"):
        train_translation(config, tmp_path / "run", root, progress=False, log=lambda m: None)
    shutil.copy(toy_data / "translation/multi30k/train.en", folder / "train.en")
    shutil.copy(toy_data / "translation/multi30k/train.de", folder / "train.de")
    for name in ("val.en", "val.de"):
        (folder / name).write_text("")
    with pytest.raises(ValueError, match=r"no validation pairs in .*val.en and .*val.de \(empty or blank files\)"):
        train_translation(config, tmp_path / "run", root, progress=False, log=lambda m: None)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(PermissionError, match=r"^run_dir \(--run-dir\): cannot create directory .*file/run for its files: .*file is a file"):
        train_translation(config, blocker / "run", root, progress=False, log=lambda m: None)


def test_evaluating_an_empty_split_is_an_error_naming_its_files(trained, toy_data, tmp_path):
    import shutil

    run_dir, _, _, config = trained
    root = tmp_path / "data"
    shutil.copytree(toy_data, root)
    for lang in ("en", "de"):
        (root / f"translation/multi30k/test2016.{lang}").write_text("")
    model, tokenizer, config = load_translator(run_dir / "last.pt")
    with pytest.raises(ValueError, match=r"no sentences to evaluate in .*test2016.en and .*test2016.de \(empty files, or blank lines only\)$"):
        evaluate_split(model, tokenizer, config, "test2016", root)


def test_frequency_lr_scale_scales_the_frequencies_at_every_step_of_the_schedule(toy_data, tmp_path):
    """0 freezes the frequencies exactly (the schedule rewrites lr every step and must keep the ratio);
    the other parameters still train."""
    config = resolve_config("cpu-complex-order", {
        "name": "toy-frozen", "model.d_model": 8, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 8, "data.preprocessing": "word",
        "data.min_frequency": 1, "data.max_tokens": 12, "train.batch_size": 16, "train.max_steps": 6,
        "train.warmup_steps": 2, "train.frequency_lr_scale": 0.0})
    torch.manual_seed(config.train.seed)
    train_translation(config, tmp_path / "frozen", toy_data, progress=False, log=lambda m: None)
    model, _, _ = load_translator(tmp_path / "frozen" / "last.pt")
    init = TransformerSeq2Seq(config.model, model.src_embedding.num_embeddings, model.src_embedding.num_embeddings)
    assert torch.equal(model.src_embedding.frequency, init.src_embedding.frequency)
    assert not torch.equal(model.src_embedding.amplitude, init.src_embedding.amplitude)
    last = torch.load(tmp_path / "frozen" / "last.pt", weights_only=True)
    groups = last["optimizer_state"]["param_groups"]
    frequency_group = [g for g in groups if g.get("lr_scale") == 0.0]
    assert len(frequency_group) == 1 and frequency_group[0]["lr"] == 0.0
    assert all(g["lr"] == inverse_sqrt_lr(6, config.train.lr, 2) for g in groups if g is not frequency_group[0])
    with pytest.raises(ValueError, match=r"^train.frequency_lr_scale must be a finite number >= 0 \(0 freezes the "
                                         r"frequencies\), "
                                         r"got -1.0$"):
        train_translation(dataclasses.replace(config, train=dataclasses.replace(config.train, frequency_lr_scale=-1.0)),
                          tmp_path / "negative", toy_data, progress=False)


def test_frequency_sharing_gives_the_paper_period_sharing_tables_and_only_for_complex_order():
    word = tiny("complex-order", frequency_sharing="word")
    per_word = tiny("complex-order")
    assert word.src_embedding.frequency.shape == (1, 16) and per_word.src_embedding.frequency.shape == (V, 16)
    assert tiny("complex-order", frequency_sharing="dimension").src_embedding.frequency.shape == (V, 1)
    # sinusoidal start: the shared row is the per-word table's (identical) rows
    assert torch.equal(word.src_embedding.frequency[0], per_word.src_embedding.frequency[5])
    with pytest.raises(ValueError, match=r"^model.frequency_sharing applies to the complex-order variant only; "
                                         r"got variant 'complex-vanilla'$"):
        tiny("complex-vanilla", frequency_sharing="word")


@pytest.mark.parametrize("network", ["complex", "real"])
def test_initial_phase_adds_theta_to_complex_order_and_keeps_the_decoder_causal_and_incremental(network):
    model = tiny("complex-order", initial_phase=True, network=network)
    plain = tiny("complex-order", network=network)
    emb = model.src_embedding
    assert emb.initial_phase.shape == (V, 16) and plain.src_embedding.initial_phase is None
    assert count_parameters(model) - count_parameters(plain) == V * 16
    # f(j, pos) = r_j exp(i (omega_j pos + theta_j)), written out by hand (Eq. 5), times sqrt(d_model)
    tokens = torch.tensor([[5, 9, 11]])
    r, w, th = emb.amplitude[tokens[0]], emb.frequency[tokens[0]], emb.initial_phase[tokens[0]]
    pos = torch.arange(3.0)[:, None]
    by_hand = 4.0 * r * torch.exp(1j * (w * pos + th))
    got = model._embed(emb, tokens)[0]
    if network == "real":
        by_hand = torch.cat([by_hand.real, by_hand.imag], -1)
    assert torch.allclose(got, by_hand, atol=1e-5)
    assert_causal_and_incremental(model)
    with pytest.raises(ValueError, match=r"^model.initial_phase applies to the complex-order variant only "
                                         r"\(complex-vanilla always has a phase per word\); got variant 'complex-vanilla'$"):
        tiny("complex-vanilla", initial_phase=True)


@pytest.mark.parametrize("variant", ["complex-vanilla", "complex-order"])
@pytest.mark.parametrize("score", ["real", "bilinear"])
def test_other_attention_scores_keep_the_decoder_causal_and_incremental(variant, score):
    model = tiny(variant, attention_score=score)
    layer = model.decoder_layers[0]
    assert layer.self_attn.score == layer.cross_attn.score == model.encoder_layers[0].self_attn.score == score
    src, tgt, a, memory = assert_causal_and_incremental(model)
    # the paper's modulus gives other logits from the same weights
    modulus = tiny(variant)
    assert not torch.allclose(modulus(src, tgt), a)
    with pytest.raises(ValueError, match=r"^model.attention_score applies to the complex network only "
                                         r"\(complex variants, network 'complex'\)$"):
        tiny("vanilla", attention_score="real")


@pytest.mark.parametrize("variant", ["complex-vanilla", "complex-order"])
@pytest.mark.parametrize("tie_output", [False, True])
def test_modulus_squared_readout_projects_the_squared_moduli_and_is_blind_to_the_states_phases(variant, tie_output):
    """readout = "modulus-squared" (the authors' translation code): logits = |h|^2 W^T + b, D features, not 2D."""
    model = tiny(variant, readout="modulus-squared", tie_output=tie_output)
    default = tiny(variant, tie_output=tie_output)
    w = model.output_weight()
    assert w.shape == (V, 16) and default.output_weight().shape == (V, 32)
    if tie_output:  # |f(j, 0)|: the amplitudes' moduli (complex-vanilla's e^{i theta_j} drops out)
        torch.testing.assert_close(w, model.tgt_embedding.amplitude.abs())
        bias = model.output_bias
    else:
        bias = model.output.bias
        n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
        assert n(default) - n(model) == 16 * V  # the projection reads D features instead of 2D
    h = torch.randn(2, 3, 16, dtype=torch.complex64)
    by_hand = (h.real ** 2 + h.imag ** 2) @ w.T + bias
    torch.testing.assert_close(model.project(h), by_hand)
    turned = h * torch.exp(1j * torch.rand(2, 3, 16) * 2 * math.pi)  # any phase per state and dimension
    torch.testing.assert_close(model.project(turned), by_hand)
    assert not torch.allclose(default.project(turned), default.project(h))
    src, _, _, _ = assert_causal_and_incremental(model)
    greedy = greedy_search(model, src, max_len_a=1.0, max_len_b=3)
    assert greedy == beam_search(model, src, beam_size=1, max_len_a=1.0, max_len_b=3)
    # gradients reach the state through |h|^2 = Re^2 + Im^2, also where h = 0 (|h| has no derivative there)
    z = torch.zeros(1, 1, 16, dtype=torch.complex64, requires_grad=True)
    model.project(z).sum().backward()
    assert torch.isfinite(torch.view_as_real(z.grad)).all()


@pytest.mark.parametrize("variant", ["complex-vanilla", "complex-order"])
def test_phase_dropout_reaches_the_embedding_drops_in_training_only_and_is_checked(variant):
    model = tiny(variant, phase_dropout=0.3)
    plain = tiny(variant)  # the same weights (same seed, dropout draws no parameters)
    assert model.src_embedding is model.tgt_embedding and model.src_embedding.phase_dropout == 0.3
    src, tgt = sources(), torch.randint(4, V, (3, 6))
    torch.testing.assert_close(model(src, tgt), plain(src, tgt))  # evaluation: no dropout
    assert_causal_and_incremental(model)
    model.train()
    torch.manual_seed(1)
    assert not torch.allclose(model(src, tgt), plain(src, tgt))  # training: phases dropped or stretched
    with pytest.raises(ValueError, match=r"^model.phase_dropout applies to the complex variants only \(the 'vanilla' "
                                         r"embedding has no phases\); got 0.1$"):
        tiny("vanilla", phase_dropout=0.1)
    with pytest.raises(ValueError, match=r"^model.phase_dropout must be a number in \[0, 1\) \(the probability of "
                                         r"dropping a phase\), got 1.0$"):
        tiny(variant, phase_dropout=1.0)


def test_a_tied_output_matrix_never_drops_phases_and_leaves_the_embedding_in_its_mode():
    """With phase dropout and a tied output, the output matrix is f(j, 0) exactly, also in training (complex-vanilla:
    r_j e^{i theta_j}, whose phases dropout would otherwise drop or stretch at every call)."""
    model = tiny("complex-vanilla", tie_output=True, phase_dropout=0.5).train()
    emb = model.tgt_embedding
    exact = torch.complex(emb.amplitude * torch.cos(emb.phase), emb.amplitude * torch.sin(emb.phase))
    assert torch.any(emb.phase != 0)
    for _ in range(3):
        torch.testing.assert_close(model.output_weight(), torch.cat((exact.real, exact.imag), -1))
        assert emb.training  # restored
    model.output_weight().sum().backward()
    assert emb.amplitude.grad is not None and emb.phase.grad is not None  # still trained through the projection


def test_readout_setting_errors_are_one_line_and_name_the_setting():
    with pytest.raises(ValueError, match=r"^model.readout must be one of real-imag, modulus-squared; got 'modulus'$"):
        tiny("complex-order", readout="modulus")
    message = (r"^model.readout = 'modulus-squared' applies to the complex network only \(complex variants, network "
               r"'complex'\); a real network's state has no phases$")
    with pytest.raises(ValueError, match=message):
        tiny("vanilla", readout="modulus-squared")
    with pytest.raises(ValueError, match=message):
        tiny("complex-order", network="real", readout="modulus-squared")


@pytest.mark.parametrize("variant", ["complex-vanilla", "complex-order"])
def test_real_network_feeds_re_and_im_of_the_complex_embedding_to_real_layers_of_twice_the_width(variant):
    model = tiny(variant, network="real")
    assert not model.is_complex and model.complex_embedding
    assert all(type(layer) is torch.nn.TransformerEncoderLayer and layer.self_attn.embed_dim == 32
               for layer in model.encoder_layers)
    assert all(type(layer) is torch.nn.TransformerDecoderLayer for layer in model.decoder_layers)
    # the input: [r cos(w pos + theta), r sin(w pos + theta)] * sqrt(d), written out (no added position encoding)
    emb = model.src_embedding
    tokens = torch.randint(4, V, (2, 5))
    pos = torch.arange(5.0)[:, None]
    r = emb.amplitude[tokens]
    phase = emb.frequency[tokens] * pos if variant == "complex-order" else emb.phase[tokens]
    expected = torch.cat((r * torch.cos(phase), r * torch.sin(phase)), -1) * 4.0
    x = model._embed(emb, tokens)
    assert x.dtype == torch.float32 and x.shape == (2, 5, 32)
    torch.testing.assert_close(x, expected)
    # the same real layers as a vanilla Transformer of width 2 * d_model
    vanilla = tiny("vanilla", d_model=32)
    layers = lambda m: sum(p.numel() for n, p in m.named_parameters() if "embedding" not in n)  # noqa: E731
    assert layers(model) == layers(vanilla)
    if variant == "complex-order":  # amplitudes + frequencies: V x 2D, exactly vanilla's word table
        assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in vanilla.parameters())


@pytest.mark.parametrize("variant", ["complex-vanilla", "complex-order"])
@pytest.mark.parametrize("options", [{}, {"norm_first": True, "tie_output": True}])
def test_real_network_is_causal_incremental_and_beam_one_is_greedy(variant, options):
    model = tiny(variant, network="real", **options)
    src, _, _, memory = assert_causal_and_incremental(model)
    assert not memory.is_complex() and memory.shape[-1] == 32
    greedy = greedy_search(model, src, max_len_a=1.0, max_len_b=3)
    assert greedy == beam_search(model, src, beam_size=1, max_len_a=1.0, max_len_b=3)
    if options.get("tie_output"):  # tied: [Re f(j, 0), Im f(j, 0)], 2 * d_model wide like the states
        assert model.output_weight().shape == (V, 32)


def test_network_setting_errors_are_one_line_and_name_the_setting():
    with pytest.raises(ValueError, match=r"^model.network = 'complex' needs a complex variant \('complex-vanilla' or "
                                         r"'complex-order'\); 'vanilla' is a real network$"):
        tiny("vanilla", network="complex")
    with pytest.raises(ValueError, match=r"^model.network must be 'complex' or 'real', got 'both'$"):
        tiny("complex-order", network="both")
    with pytest.raises(ValueError, match=r"^model.attention_score applies to the complex network only"):
        tiny("complex-order", network="real", attention_score="real")
    with pytest.raises(ValueError, match=r"^share_weights applies to the complex network only"):
        tiny("complex-order", network="real", share_weights=True)
    assert tiny("vanilla", network="real").config.network == "real"  # the vanilla network is real: accepted


def test_a_run_from_before_a_setting_existed_resumes_with_its_default(trained, toy_data, tmp_path):
    """Checkpoints written before train.frequency_lr_scale / model.frequency_sharing / model.attention_score
    existed lack those keys; they had the defaults, so resuming with the same config is no 'other config'."""
    import shutil

    run_dir, _, _, config = trained
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    ck = torch.load(old / "last.pt", weights_only=True)
    config = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=ck["progress"]["step"]))
    for section, key in (("train", "frequency_lr_scale"), ("model", "frequency_sharing"), ("model", "attention_score"),
                         ("model", "network"), ("model", "initial_phase"), ("model", "readout"),
                         ("model", "phase_dropout")):
        del ck["config"][section][key]
    torch.save(ck, old / "last.pt")
    again = train_translation(config, old, toy_data, progress=False, log=lambda m: None)
    assert again["step"] == ck["progress"]["step"]  # finished: resumed to a no-op
    other = dataclasses.replace(config, train=dataclasses.replace(config.train, frequency_lr_scale=0.5))
    with pytest.raises(ValueError, match=r"was trained with another config \(in the checkpoint → asked: "
                                         r"train.frequency_lr_scale: 1.0 → 0.5\)"):
        train_translation(other, old, toy_data, progress=False, log=lambda m: None)


def test_a_bad_model_setting_fails_before_any_data_is_read_or_directory_made(tmp_path):
    config = resolve_config("cpu-complex-order", {"model.nhead": 3})
    with pytest.raises(ValueError, match=r"^model.d_model \(128\) must be divisible by model.nhead \(3\)$"):
        train_translation(config, tmp_path / "run", tmp_path / "no-data", progress=False)
    assert not (tmp_path / "run").exists()


def test_weight_decay_leaves_both_embedding_tables_and_angles_undecayed():
    from complexorder.experiments.training import parameter_groups

    config = toy_config("complex-order")
    model = TransformerSeq2Seq(config.model, 40, 40, pad_id=PAD)
    decayed, free = parameter_groups(model, 1e-4)
    assert decayed["weight_decay"] == 1e-4 and free["weight_decay"] == 0.0
    undecayed = {id(p) for p in free["params"]}
    tables = list(model.src_embedding.parameters()) + list(model.tgt_embedding.parameters())
    assert tables and all(id(p) in undecayed for p in tables)
    assert {id(p) for p in decayed["params"]} == {id(p) for p in model.parameters()} - undecayed
    assert all(id(p) not in undecayed for p in model.encoder_layers.parameters() if p.dim() == 2)


def test_a_run_saved_with_the_earlier_optimizer_groups_resumes_and_a_fresh_start_rewrites_its_log(toy_data, tmp_path):
    from complexorder.checkpoint import read_jsonl
    from complexorder.experiments.training import parameter_groups

    config = toy_config("vanilla")
    budget = lambda steps: dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=steps))  # noqa: E731
    run = tmp_path / "run"
    train_translation(budget(4), run, toy_data, progress=False, log=lambda m: None)
    # last.pt as stop 37 wrote it: one optimizer group (the translation embeddings were not told apart)
    ck = torch.load(run / "last.pt", weights_only=True)
    model = TransformerSeq2Seq(config.model, ck["vocab_size"], ck["vocab_size"], pad_id=PAD)
    model.load_state_dict(ck["model_state"])
    legacy = torch.optim.Adam(parameter_groups(model, 0.0, ("embedding",)), lr=config.train.lr)
    assert len(legacy.state_dict()["param_groups"]) == 1
    ck["optimizer_state"] = legacy.state_dict()
    torch.save(ck, run / "last.pt")
    messages = []
    assert train_translation(budget(6), run, toy_data, progress=False, log=messages.append)["step"] == 6
    assert any("keeps its optimiser's earlier parameter groups" in m for m in messages)
    # a crash before the first last.pt leaves a logged epoch: a fresh start drops it instead of logging it twice
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "log.jsonl").write_text(json.dumps({"name": "x", "epoch": 1, "step": 4, "train_loss": 9.9}) + "\n")
    train_translation(budget(4), fresh, toy_data, progress=False, log=lambda m: None)
    assert [(r["epoch"], r["step"]) for r in read_jsonl(fresh / "log.jsonl")] == [(1, 4)]
    assert read_jsonl(fresh / "log.jsonl")[0]["train_loss"] != 9.9


@pytest.mark.parametrize("key, value, message", [
    ("data.train_limit", -1, "data.train_limit must be >= 0 (0: all pairs), got -1"),  # was: the last pair dropped
    ("train.max_steps", -1, "train.max_steps must be >= 0 (0: no limit), got -1"),  # was: a 0-step run
    ("train.max_epochs", 0, "train.max_epochs must be >= 1, got 0"),
    ("data.vocab_size", 0, "data.vocab_size must be >= 1, got 0"),  # was: a sentencepiece traceback
    ("train.label_smoothing", 2.0, "train.label_smoothing must be a finite number in [0, 1), got 2.0"),  # was: a torch traceback
    ("train.lr", -1.0, "train.lr must be a finite number in (0, 3.40282e+38] (Adam keeps it in float32), got -1.0"),
    ("train.lr", float("inf"),  # was: NaN loss, exit 0
     "train.lr must be a finite number in (0, 3.40282e+38] (Adam keeps it in float32), got inf"),
    ("train.clip_norm", -1.0, "train.clip_norm must be a finite number >= 0 (0: no clipping), got -1.0"),  # was: uphill
    ("train.weight_decay", -1.0, "train.weight_decay must be a finite number >= 0, got -1.0"),
    ("train.adam_eps", 0.0, "train.adam_eps must be a finite number > 0, got 0.0"),
    ("train.betas", [0.9], "train.betas must be two numbers [beta1, beta2], each in [0, 1), got [0.9]"),  # was: IndexError
    ("train.betas", [0.9, 1.5], "train.betas[1] must be a finite number in [0, 1), got 1.5"),
    ("decode.max_len_b", -100, "decode.max_len_b must be at least 1 (output tokens allowed beyond max_len_a x source "
                               "length), got -100"),  # was: every translation silently empty
    ("decode.max_len_a", -1.0, "decode.max_len_a must be a finite number in [0, 1000] (output tokens per source token), got -1.0"),
    ("decode.batch_size", 0, "decode.batch_size must be at least 1, got 0"),  # was: range() arg 3 must not be zero
    ("decode.beam_size", 0, "decode.beam_size must be at least 1, got 0"),
    ("decode.length_penalty", float("nan"), "decode.length_penalty must be a finite number in [-10, 10] (hypotheses "
     "are ranked by log p / length ** length_penalty; beyond this the power overflows for long outputs), got nan"),
    # stop 73: 700 raised OverflowError in the beam search, -700 ZeroDivisionError (tracebacks)
    ("decode.length_penalty", 700.0, "decode.length_penalty must be a finite number in [-10, 10] (hypotheses "
     "are ranked by log p / length ** length_penalty; beyond this the power overflows for long outputs), got 700.0"),
    ("train.seed", 2 ** 32 + 5, "train.seed must be an integer in [0, 2**32), got 4294967301"),  # stop 73: seed 5's run
    ("train.warmup_steps", -10, "train.warmup_steps must be >= 0 (0: no warm-up), got -10"),  # stop 73: as lm train
    ("data.min_frequency", -1, "data.min_frequency must be >= 0, got -1"),  # stop 73: trained
    ("name", "../../evil", "name must be a plain name without '/' (it names the default run directory "
                           "runs/translation/NAME), got '../../evil'"),  # stop 73: wrote to ./evil
])
def test_a_setting_out_of_range_is_an_error_naming_it_before_any_work(key, value, message, tmp_path):
    config = resolve_config("cpu-vanilla", {key: value})
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        train_translation(config, tmp_path / "run", tmp_path / "no-data", progress=False)
    assert not (tmp_path / "run").exists()


def test_settings_that_mean_something_at_their_edge_are_still_accepted(tmp_path):
    """vocab_size is the BPE's (ignored for words), min_frequency 0 counts as 1, warmup_steps 0 is no warm-up
    (stop 73: a negative one is refused, as lm train does): none of these reach the range check, so the run goes on
    to read the data (absent here)."""
    for changes in ({"data.preprocessing": "word", "data.vocab_size": 0, "data.min_frequency": 0},
                    {"train.warmup_steps": 0}):
        config = resolve_config("cpu-vanilla", changes)
        with pytest.raises(FileNotFoundError):
            train_translation(config, tmp_path / "run", tmp_path / "no-data", progress=False)


def test_a_bpe_vocabulary_smaller_than_the_alphabet_is_an_error_naming_the_setting():
    text = ["Ein Mann fährt Rad.", "A man rides a bike."]  # 20 distinct characters, the space included
    with pytest.raises(ValueError, match=r"^data.vocab_size=100: cannot train a BPE vocabulary of that size: it needs "
                                         r"at least 280 pieces \(4 special, 256 byte fall-back and one per distinct "
                                         r"character of the training text\)$"):
        SubwordTokenizer.train(text, vocab_size=100)
    # below the four special pieces sentencepiece gives no reason (stop 71: the message ended in ": ")
    for size in (1, 3):
        with pytest.raises(ValueError, match=rf"^data.vocab_size={size}: cannot train a BPE vocabulary of that size: "
                                             r"it needs at least 280 pieces \(4 special, 256 byte fall-back"):
            SubwordTokenizer.train(text, vocab_size=size)


def test_a_translation_is_one_line_even_when_its_bytes_spell_a_line_break():
    tok = SubwordTokenizer.train(["a b c", "line one\nline two\r\nthree\x85four"] * 3, vocab_size=400)
    assert tok.decode(tok.encode("x\ny\rz\x85w")) == "x y z w"
    pairs = [("   ", "\t"), ("a", "b")]  # whitespace-only sides are blank: dropped and counted
    keep, report = filter_training_pairs(pairs, [([1], [1]), ([1], [1])], max_tokens=5)
    assert keep == [1] and report.empty == [1]


def test_output_paths_are_checked_before_decoding_and_name_the_option(trained, tmp_path, capsys):
    run_dir = trained[0]
    ck = str(run_dir / "last.pt")
    cases = [(["translate", "eval", "--checkpoint", ck, "--hypotheses", str(tmp_path)], "--hypotheses"),
             (["translate", "eval", "--checkpoint", ck, "--results", str(tmp_path)], "--results"),
             (["translate", "run", "--checkpoint", ck, "--output", str(tmp_path)], "--output"),
             (["translate", "average", ck, "--output", str(tmp_path)], "--output")]
    for argv, option in cases:  # each was a bare IsADirectoryError traceback
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == (
            f"complexorder: error: {option}: {tmp_path} is a directory, expected a file path")
    assert main(["translate", "average", ck, "--run-dir", str(run_dir), "--output", str(tmp_path / "a.pt")]) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: give checkpoints to average or --run-dir, not both")  # was: the checkpoint ignored
    for value in ("nan", "700", "-700"):  # stop 73: 700 was an OverflowError traceback, -700 a ZeroDivisionError
        assert main(["translate", "run", "--checkpoint", ck, "--length-penalty", value]) == 2
        assert capsys.readouterr().err.strip() == ("complexorder: error: --length-penalty must be a finite number in "
                                                   f"[-10, 10], got {float(value)}")


def test_translations_never_overwrite_a_checkpoint_a_results_file_or_the_data(trained, toy_data, tmp_path, capsys):
    """Stop 73: --hypotheses and --output wrote text over another run's last.pt (which could then not be resumed),
    over results and training logs, and over the training data; --hypotheses and --results could name one file."""
    import shutil

    run_dir = trained[0]
    ck = str(run_dir / "last.pt")
    copy = tmp_path / "other-run.pt"
    shutil.copy(ck, copy)
    results = tmp_path / "results.jsonl"
    results.write_text('{"bleu": 30.1}\n')
    data = toy_data / "translation/multi30k"
    before = {p: p.read_bytes() for p in (copy, results, data / "train.en", run_dir / "log.jsonl")}
    base = ["--checkpoint", ck, "--data-dir", str(toy_data), "--no-progress"]
    cases = [(["translate", "eval", *base, "--hypotheses", str(copy)], f"--hypotheses {copy} is a checkpoint "
              "or another binary file (torch.save's zip, or a pickle); writing text over it would destroy it — "
              "choose another file"),
             (["translate", "eval", *base, "--hypotheses", str(run_dir / "log.jsonl")], f"--hypotheses "
              f"{run_dir / 'log.jsonl'} is a JSON-lines file (results or a training log); writing text over it would "
              "destroy it — choose another file"),
             (["translate", "eval", *base, "--hypotheses", str(data / "train.en")], f"--hypotheses {data / 'train.en'} "
              "is a file of the Multi30k data (train.en), which this command reads; writing it would destroy it — "
              "choose another file"),
             (["translate", "eval", *base, "--hypotheses", str(results), "--results", str(results)],
              f"--hypotheses {results} is a JSON-lines file (results or a training log); writing text over it would "
              "destroy it — choose another file"),
             (["translate", "eval", *base, "--hypotheses", str(tmp_path / "h.txt"), "--results",
               str(tmp_path / "h.txt")], f"--hypotheses and --results name one file ({tmp_path / 'h.txt'}); the "
              "translations and the JSON result would be written into each other — give two files"),
             (["translate", "run", "--checkpoint", ck, "--input", str(data / "val.en"), "--output", str(copy)],
              f"--output {copy} is a checkpoint or another binary file (torch.save's zip, or a pickle); writing text over "
              "it would destroy it — choose another file")]
    for argv, message in cases:
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    assert all(p.read_bytes() == b for p, b in before.items())
    beside = data / "test2016.hyp"  # review: a hypotheses file kept beside the data is not a data file
    beside.write_text("old\n")
    assert main(["translate", "eval", *base, "--hypotheses", str(beside)]) == 0
    beside.unlink()
    capsys.readouterr()
    if Path("/dev/null").exists():  # review: /dev/null named twice destroys nothing
        assert main(["translate", "eval", *base, "--hypotheses", "/dev/null", "--results", "/dev/null"]) == 0
        capsys.readouterr()
    hyps = tmp_path / "hyps.txt"  # an ordinary text file is still replaced, as output files are
    hyps.write_text("old\n")
    assert main(["translate", "eval", *base, "--hypotheses", str(hyps)]) == 0
    assert len(hyps.read_text().splitlines()) == 8 and "BLEU" in capsys.readouterr().out


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_the_score_is_printed_before_a_file_that_cannot_be_written(trained, toy_data, capsys):
    """Stop 73: with --results /dev/full (a full disk) the BLEU, computed after all the decoding, was never shown."""
    ck = str(trained[0] / "last.pt")
    assert main(["translate", "eval", "--checkpoint", ck, "--data-dir", str(toy_data), "--no-progress",
                 "--results", "/dev/full"]) == 2
    out, err = capsys.readouterr()
    assert re.match(r"^toy-complex-order test2016: BLEU .*; tokenized lower-cased BLEU \d+\.\d\d", out)
    assert "No space left on device" in err


def test_classic_mac_line_ends_are_refused_not_read_as_one_sentence(trained, tmp_path, capsys):
    """Stop 73: `A dog.\\rA cat.\\r` was translated as one sentence (and a CR-only test split scored as one pair)."""
    mac = tmp_path / "mac.txt"
    mac.write_bytes(b"A dog.\rA cat.\rA man.\r")
    assert main(["translate", "run", "--checkpoint", str(trained[0] / "last.pt"), "--input", str(mac)]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: {mac}: its lines end in '\\r' alone (classic Mac "
                                               "line ends) and it holds no '\\n'; convert it to '\\n' line ends "
                                               "(e.g. tr '\\r' '\\n')")


def test_a_damaged_tokenizer_in_a_checkpoint_is_one_line(trained, tmp_path):
    """Stop 73: garbage in the BPE model gave sentencepiece's RuntimeError traceback, bytes an AttributeError, and a
    word tokenizer without its list the bare message `itos`."""
    payload = torch.load(trained[0] / "last.pt", weights_only=True)
    cases = [({"kind": "word"}, "the checkpoint's word tokenizer has no 'itos' entry; it was not written by "
              "`complexorder translate train`, or was damaged"),
             ({"kind": "bpe", "model": torch.tensor([1, 2, 3], dtype=torch.uint8)}, "the checkpoint's bpe tokenizer "
              "cannot be rebuilt ("),
             ({"kind": "bpe", "model": [1, 2]}, "the checkpoint's bpe tokenizer cannot be rebuilt (expected a uint8 "
              "tensor, got list)")]
    for i, (tokenizer, message) in enumerate(cases):
        path = tmp_path / f"damaged{i}.pt"
        torch.save({**payload, "tokenizer": tokenizer}, path)
        with pytest.raises(ValueError, match="^" + re.escape(f"checkpoint {path}: {message}")):
            load_translator(path)


def test_train_limit_keeps_the_first_pairs_and_says_so(toy_data, tmp_path):
    config = resolve_config("cpu-complex-order", {
        "name": "limited", "model.d_model": 16, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 32, "data.preprocessing": "word",
        "data.min_frequency": 1, "data.max_tokens": 12, "data.train_limit": 40, "train.batch_size": 8,
        "train.max_steps": 1, "train.warmup_steps": 1})
    messages = []
    train_translation(config, tmp_path / "run", toy_data, progress=False, log=messages.append)
    folder = toy_data / "translation" / "multi30k"
    assert f"limited: data.train_limit = 40: training on the first 40 of the 98 pairs in {folder}" in messages
    assert any(m.startswith("limited: kept 40 of 40 training pairs") for m in messages), messages
    ck = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    pairs = read_parallel(*split_files(toy_data, "train"))
    assert ck["train_data"] == _pairs_signature(pairs[:40]) != _pairs_signature(pairs[-40:])  # the first 40


def test_average_refuses_checkpoints_of_other_configs_and_load_refuses_weights_that_do_not_fit(trained, tmp_path):
    run_dir, _, _, config = trained
    last = load_checkpoint(run_dir / "last.pt", "translation")
    other = {**last, "config": {**last["config"], "model": {**last["config"]["model"], "d_model": 32}}}
    save_checkpoint(tmp_path / "other.pt", "translation", other["model_state"], other["config"],
                    **{k: v for k, v in other.items() if k not in ("kind", "model_state", "config", "format",
                                                                   "version")})
    with pytest.raises(ValueError, match=rf"^cannot average {re.escape(str(run_dir / 'last.pt'))} and "
                                         rf"{re.escape(str(tmp_path / 'other.pt'))}: different configs \(model.d_model"):
        average_checkpoints([run_dir / "last.pt", tmp_path / "other.pt"], tmp_path / "avg.pt")
    assert not (tmp_path / "avg.pt").exists()
    with pytest.raises(ValueError, match=rf"^checkpoint {re.escape(str(tmp_path / 'other.pt'))} does not fit a "
                                         r"'complex-order' model: size mismatch for "):
        load_translator(tmp_path / "other.pt")
    # a checkpoint written before a setting existed had its default: it averages with one that records it
    model = {k: v for k, v in last["config"]["model"].items() if k not in ("readout", "phase_dropout", "network")}
    save_checkpoint(tmp_path / "older.pt", "translation", last["model_state"], {**last["config"], "model": model},
                    **{k: v for k, v in last.items() if k not in ("kind", "model_state", "config", "format", "version")})
    average_checkpoints([run_dir / "last.pt", tmp_path / "older.pt"], tmp_path / "avg.pt")
    averaged = load_checkpoint(tmp_path / "avg.pt", "translation")["model_state"]
    assert all(torch.allclose(averaged[k].float(), v.float()) for k, v in last["model_state"].items())


def test_download_multi30k_unpacks_checks_and_never_keeps_a_broken_archive(shared_data, tmp_path):
    """Offline: the gzip files `download_multi30k` fetches, rebuilt from ../shared/data and left where it caches them."""
    import gzip

    from complexorder.data.multi30k import download_multi30k

    ref = shared_data / "translation" / "multi30k"
    cache = tmp_path / "translation" / "multi30k" / ".download"
    cache.mkdir(parents=True)
    names = [f"{split}.{lang}" for split in ("train", "val", "test2016") for lang in ("en", "de")]
    for name in names:
        (cache / f"{name}.gz").write_bytes(gzip.compress((ref / name).read_bytes()))
    folder = download_multi30k(tmp_path)
    assert all((folder / n).read_bytes() == (ref / n).read_bytes() for n in names)
    assert list(cache.iterdir()) == []  # each archive removed once its file is in place
    assert download_multi30k(tmp_path) == folder  # present and valid: nothing to fetch
    # a cached "archive" that is not gzip (a proxy's error page): a one-line error, and it is not kept
    (folder / "val.de").unlink()
    (cache / "val.de.gz").write_bytes(b"<html>proxy error</html>")
    with pytest.raises(ValueError, match=r"^https://\S+ did not give a readable gzip file \(.*\); removed "
                                         r".*val.de.gz, so the next run downloads it again$"):
        download_multi30k(tmp_path)
    assert not (cache / "val.de.gz").exists() and not (folder / "val.de").exists()
    # a gzip file with an intact header and a damaged body (a zlib error): the same
    blob = bytearray(gzip.compress((ref / "val.de").read_bytes()))
    blob[20:40] = bytes(b ^ 0xFF for b in blob[20:40])
    (cache / "val.de.gz").write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=r"did not give a readable gzip file \(.*\); removed .*val.de.gz, so the "
                                         r"next run downloads it again$"):
        download_multi30k(tmp_path)
    assert not (cache / "val.de.gz").exists() and not (folder / "val.de").exists()
    # an archive whose text differs from the reference: refused, not saved, not kept
    (cache / "val.de.gz").write_bytes(gzip.compress((ref / "val.de").read_bytes() + b"extra line\n"))
    with pytest.raises(ValueError, match=r"^checksum mismatch for https://\S+ \(uncompressed\): expected sha256 \w+, "
                                         r"got \w+; pass --skip-checksum \(verify=False\) to keep it$"):
        download_multi30k(tmp_path)
    assert not (cache / "val.de.gz").exists() and not (folder / "val.de").exists()
    # verify=False (--skip-checksum) keeps it, as `complexorder download --skip-checksum` does (stop 81)
    (cache / "val.de.gz").write_bytes(gzip.compress((ref / "val.de").read_bytes() + b"extra line\n"))
    download_multi30k(tmp_path, verify=False)
    assert (folder / "val.de").read_bytes() == (ref / "val.de").read_bytes() + b"extra line\n"


def test_translate_download_never_replaces_an_edited_file(shared_data, tmp_path, capsys):
    """Stop 81: a Multi30k file edited in the data directory was replaced by `translate download` without a word
    (the classification downloader refused it since stop 78)."""
    import gzip

    from complexorder.cli import main
    from complexorder.data.multi30k import download_multi30k

    ref = shared_data / "translation" / "multi30k"
    folder = tmp_path / "translation" / "multi30k"
    cache = folder / ".download"
    cache.mkdir(parents=True)
    names = [f"{split}.{lang}" for split in ("train", "val", "test2016") for lang in ("en", "de")]
    for name in names[:-1]:  # test2016.de missing: its archive waits in the cache
        (folder / name).write_bytes((ref / name).read_bytes())
    (cache / "test2016.de.gz").write_bytes(gzip.compress((ref / "test2016.de").read_bytes()))
    edited = (ref / "val.en").read_bytes() + b"x\n"
    (folder / "val.en").write_bytes(edited)
    message = (f"{folder / 'val.en'} exists but differs from the reference (sha256 "
               f"{hashlib.sha256(edited).hexdigest()[:12]}…, expected ")
    with pytest.raises(ValueError, match="^" + re.escape(message) + r"[0-9a-f]{12}…\); move it away to download it "
                                         r"again, or pass --skip-checksum \(verify=False\) to keep it as it is$"):
        download_multi30k(tmp_path)
    assert (folder / "val.en").read_bytes() == edited  # kept, and nothing fetched before the error
    assert (cache / "test2016.de.gz").exists() and not (folder / "test2016.de").exists()
    assert main(["translate", "download", "--data-dir", str(tmp_path), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"complexorder: error: {message}")
    assert main(["translate", "download", "--data-dir", str(tmp_path), "--no-progress", "--skip-checksum"]) == 0
    assert (folder / "val.en").read_bytes() == edited
    assert (folder / "test2016.de").read_bytes() == (ref / "test2016.de").read_bytes()


def test_translate_train_and_eval_from_the_command_line(toy_data, tmp_path, capsys):
    sets = ["name=toy-cli", "model.d_model=16", "model.nhead=2", "model.num_encoder_layers=1",
            "model.num_decoder_layers=1", "model.dim_feedforward=32", "data.preprocessing=word", "data.min_frequency=1",
            "data.max_tokens=12", "train.batch_size=8", "train.max_steps=3", "train.warmup_steps=1",
            "decode.beam_size=2"]
    argv = ["translate", "train", "--config", "cpu-complex-order", "--run-dir", str(tmp_path / "run"),
            "--data-dir", str(toy_data), "--no-progress"] + [a for s in sets for a in ("--set", s)]
    assert main(argv) == 0
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert summary["step"] == 3 and "toy-cli: done after 3 steps" in out.err
    ck = load_checkpoint(tmp_path / "run" / "last.pt", "translation")
    assert ck["config"]["name"] == "toy-cli" and ck["config"]["model"]["d_model"] == 16  # ints and bare strings
    assert ck["config"]["decode"]["beam_size"] == 2
    hyp, results = tmp_path / "val.hyp", tmp_path / "results.jsonl"
    assert main(["translate", "eval", "--checkpoint", str(tmp_path / "run" / "last.pt"), "--split", "val",
                 "--data-dir", str(toy_data), "--hypotheses", str(hyp), "--results", str(results),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    record = json.loads(results.read_text())
    assert len(hyp.read_text().splitlines()) == 8 == record["sentences"]  # one line per val sentence
    assert record["split"] == "val" and record["config"]["name"] == "toy-cli" and record["beam_size"] == 2
    assert f"tokenized lower-cased BLEU {record['bleu_tok_lc']:.2f}" in printed
    for bad in ("train.max_steps", "=3"):
        assert main(["translate", "train", "--config", "cpu-complex-order", "--set", bad]) == 2
        assert capsys.readouterr().err.strip() == (f"complexorder: error: --set {bad!r}: expected KEY=VALUE, "
                                                   "e.g. train.max_steps=2000")


def test_a_diverging_loss_stops_training_with_an_error_naming_the_step(toy_data, tmp_path, monkeypatch, capsys):
    """A NaN or infinite loss used to train on to NaN weights and exit 0."""
    import complexorder.experiments.translation as T

    real_loss = T._loss
    calls = []

    def loss_turning_nan(model, batch, label_smoothing, with_nll=False):
        loss, nll, n = real_loss(model, batch, label_smoothing, with_nll)
        calls.append(1)
        return (loss * float("nan") if len(calls) == 3 else loss), nll, n

    monkeypatch.setattr(T, "_loss", loss_turning_nan)
    config = toy_config("complex-order")
    with pytest.raises(FloatingPointError, match=r"^training diverged at step 3: the loss is nan \(no checkpoint was "
                                                 r"saved\); lower train.lr or raise train.warmup_steps$"):
        train_translation(config, tmp_path / "run", toy_data, progress=False, log=lambda m: None)


def test_average_and_eval_name_a_missing_run_dir_a_repeated_checkpoint_and_a_blank_split(trained, toy_data, tmp_path,
                                                                                           capsys):
    """Stop 73: `average --run-dir nope` said "no epochN.pt checkpoints there"; one checkpoint given twice was
    weighed double; `--last 100` with two epoch files said nothing; a split of blank lines scored BLEU 0.00, exit 0;
    `--checkpoint /dev/null` said "does not exist"."""
    import shutil

    run_dir = trained[0]
    epochs = sorted(run_dir.glob("epoch*.pt"))
    assert main(["translate", "average", "--run-dir", str(tmp_path / "nope"), "--output", str(tmp_path / "a.pt")]) == 2
    assert capsys.readouterr().err.strip() == f"complexorder: error: --run-dir {tmp_path / 'nope'} does not exist"
    assert main(["translate", "average", str(epochs[0]), str(epochs[0]), "--output", str(tmp_path / "a.pt")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: checkpoint {epochs[0]} is given more than once; "
                                               "each checkpoint is averaged once")
    assert main(["translate", "average", "--run-dir", str(run_dir), "--last", "100", "--output",
                 str(tmp_path / "a.pt")]) == 0
    assert (f"note: --last 100, but {run_dir} holds {len(epochs)} epoch checkpoint(s); averaging all {len(epochs)}"
            in capsys.readouterr().err)
    blank = tmp_path / "blank"
    shutil.copytree(toy_data, blank)
    for lang in ("en", "de"):
        (blank / "translation/multi30k" / f"val.{lang}").write_text("\n \n\n")
    assert main(["translate", "eval", "--checkpoint", str(run_dir / "last.pt"), "--data-dir", str(blank), "--split",
                 "val", "--no-progress"]) == 2
    assert "(empty files, or blank lines only)" in capsys.readouterr().err
    if Path("/dev/null").exists():
        assert main(["translate", "run", "--checkpoint", "/dev/null", "--input", str(blank / "translation/multi30k/"
                                                                                       "train.en")]) == 2
        assert capsys.readouterr().err.strip() == ("complexorder: error: checkpoint /dev/null is not a regular file "
                                                   "(a device or pipe?); expected a checkpoint file")


def test_an_interrupted_training_says_where_a_resume_starts_and_a_foreign_log_is_refused(toy_data, tmp_path,
                                                                                        capsys, monkeypatch):
    """Stop 73: Ctrl-C said "finished results are kept" and nothing about the steps a resume trains again; a run
    directory whose log.jsonl was another kind of file had the epochs' records appended to it."""
    from complexorder.experiments import translation as T

    run_dir = tmp_path / "run"

    def interrupted(config, run_dir, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(T, "train_translation", interrupted)
    assert main(["translate", "train", "--config", "cpu-vanilla", "--run-dir", str(run_dir), "--data-dir",
                 str(toy_data)]) == 130
    assert capsys.readouterr().err.strip() == (
        f"complexorder: interrupted; the same command continues from step 0: no checkpoint was written yet "
        f"({run_dir / 'last.pt'} does not exist); the steps after it are trained again (a checkpoint is written every "
        f"train.save_every_steps = 200 steps, 0: every epoch)")
    monkeypatch.undo()
    run_dir.mkdir()
    (run_dir / "log.jsonl").write_text("my notes\n")
    config = dataclasses.replace(toy_config("vanilla"), name="toy-log")
    # the run directory is what the user gave, so the message asks for another directory (stop 82)
    with pytest.raises(ValueError, match="^" + re.escape(f"run_dir (--run-dir) {run_dir / 'log.jsonl'} is not a JSON-lines results file")
                       + r".* — choose another directory$"):
        train_translation(config, run_dir, toy_data, progress=False, log=lambda m: None)
    assert (run_dir / "log.jsonl").read_text() == "my notes\n"


# ---------------------------------------------------------------------------------------- stop 75 audit


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def test_a_byte_order_mark_is_not_read_into_the_first_sentence(trained, tmp_path, monkeypatch, capsys):
    """Stop 75: read_lines kept a UTF-8 byte-order mark, so the first sentence of a file saved by a Windows editor was
    '\\ufeffA man walks .' (in training pairs, references and `translate run` input, from a file or standard input)."""
    from complexorder.data.multi30k import decode_lines

    bom = b"\xef\xbb\xbf"
    assert read_lines(write(tmp_path / "in_bom.txt", bom + b"A man walks .\n\nA dog .\n")) == [
        "A man walks .", "", "A dog ."]
    assert decode_lines(bom + b"one two\n", "<stdin>") == ["one two"]
    assert read_lines(write(tmp_path / "inside.txt", b"A\n" + bom + b"B\n")) == ["A", "\ufeffB"]  # not a file's start
    pairs = read_parallel(write(tmp_path / "p.en", bom + b"one two\nthree\n"),
                          write(tmp_path / "p.de", bom + b"eins zwei\ndrei\n"))
    assert pairs == [("one two", "eins zwei"), ("three", "drei")]
    # translate run: the same translation (and no <unk> note) with or without the mark, from a file or standard input
    ck = str(trained[0] / "last.pt")
    outputs = []
    for data in (b"one two\nfive three six\n", bom + b"one two\nfive three six\n"):
        assert main(["translate", "run", "--checkpoint", ck, "--input", str(write(tmp_path / "in.txt", data))]) == 0
        outputs.append(capsys.readouterr())
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        assert main(["translate", "run", "--checkpoint", ck]) == 0
        outputs.append(capsys.readouterr())
    assert all(o == outputs[0] for o in outputs) and "<unk>" not in outputs[0].err


def test_a_utf16_or_binary_translation_file_is_refused_naming_its_line(tmp_path):
    """Stop 75: a UTF-16 file of ASCII text is valid UTF-8 with a NUL after every character, and was read as
    sentences of junk (classification files already refused a NUL byte)."""
    from complexorder.data.multi30k import decode_lines

    utf16 = write(tmp_path / "in16.txt", "A man walks .\nA dog .\n".encode("utf-16-le"))  # no BOM
    with pytest.raises(ValueError, match=exactly(f"{utf16}:1: holds a NUL byte, so it is not a UTF-8 text file "
                                                 "(UTF-16 or binary?); convert it to UTF-8, one sentence per line")):
        read_lines(utf16)
    with pytest.raises(ValueError, match=exactly("<stdin>:2: holds a NUL byte, so it is not a UTF-8 text file (UTF-16 "
                                                 "or binary?); convert it to UTF-8, one sentence per line")):
        decode_lines(b"one\ntwo\0\n", "<stdin>")


def test_average_never_writes_over_a_log_a_results_file_or_a_split_file(trained, toy_data, tmp_path, capsys):
    """Stop 75: `translate average --output` replaced a training log, a results file or a Multi30k split with a torch
    zip file, without a word (an existing checkpoint may still be replaced, and an empty file)."""
    import shutil

    run_dir = trained[0]
    epochs = [str(p) for p in sorted(run_dir.glob("epoch*.pt"))]
    log = shutil.copy(run_dir / "log.jsonl", tmp_path / "log.jsonl")
    split = shutil.copy(toy_data / "translation/multi30k/val.de", tmp_path / "val.de")
    before = {p: Path(p).read_bytes() for p in (log, split, *epochs)}
    cases = [(log, f"--output {log} is a JSON-lines file (results or a training log); writing the averaged "
                   "checkpoint over it would destroy it — choose another file"),
             (split, f"--output {split} is not a checkpoint (its first bytes are not torch.save's zip or pickle); "
                     "writing the averaged checkpoint over it would destroy it — choose another file"),
             (epochs[-1], f"--output {epochs[-1]} is one of the checkpoints to average ({epochs[-1]}), which this "
                          "command reads; writing it would destroy it — choose another file")]
    for output, message in cases:
        assert main(["translate", "average", *epochs, "--output", str(output)]) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    with pytest.raises(ValueError, match=exactly(cases[1][1])):
        average_checkpoints(epochs, split)
    assert all(Path(p).read_bytes() == b for p, b in before.items())
    for name, old in (("old-average.pt", Path(epochs[0]).read_bytes()), ("empty.pt", b"")):
        output = write(tmp_path / name, old)  # an existing (averaged) checkpoint, or an empty file, is replaced
        assert main(["translate", "average", *epochs, "--output", str(output)]) == 0
        assert load_checkpoint(output, "translation")["averaged_from"] == epochs
    capsys.readouterr()


def test_average_of_other_configs_names_both_checkpoints_and_both_values(trained, tmp_path, capsys):
    """Stop 75: the error said `train.batch_size: 8 in the checkpoint, 1 asked`: nothing was asked, and which
    checkpoint held which value was not said."""
    run_dir = trained[0]
    first = run_dir / "last.pt"
    last = load_checkpoint(first, "translation")
    other = tmp_path / "other.pt"
    config = {**last["config"], "train": {**last["config"]["train"], "batch_size": 1}}
    extra = {k: v for k, v in last.items() if k not in ("kind", "model_state", "config", "format", "version")}
    save_checkpoint(other, "translation", last["model_state"], config, **extra)
    message = f"cannot average {first} and {other}: different configs (train.batch_size: 8 in {first}, 1 in {other})"
    with pytest.raises(ValueError, match=exactly(message)):
        average_checkpoints([first, other], tmp_path / "avg.pt")
    assert main(["translate", "average", str(first), str(other), "--output", str(tmp_path / "avg.pt")]) == 2
    assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    assert not (tmp_path / "avg.pt").exists()


def test_a_beam_wider_than_the_target_vocabulary_is_refused_before_decoding(trained, toy_data, tmp_path, monkeypatch,
                                                                           capsys):
    """Stop 75: `--beam-size 100000` was accepted and decoding ran out of time and memory (the source is copied once
    per beam)."""
    from complexorder.experiments import translation as T

    for tie_output in (False, True):
        with pytest.raises(ValueError, match=exactly(f"beam_size must be at most the target vocabulary size, {V}, "
                                                     f"got {V + 1}")):
            beam_search(tiny("vanilla", tie_output=tie_output), sources(), beam_size=V + 1)
    assert len(beam_search(tiny("vanilla"), sources(), beam_size=V, max_len_a=0.0, max_len_b=2)) == 3
    run_dir = trained[0]
    ck = run_dir / "last.pt"
    vocab = load_checkpoint(ck, "translation")["vocab_size"]
    text = write(tmp_path / "in.txt", "one two\n")
    assert main(["translate", "run", "--checkpoint", str(ck), "--input", str(text), "--beam-size", str(vocab)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(T, "translate_sentences", lambda *a, **k: pytest.fail("decoding started"))
    for argv in (["translate", "run", "--checkpoint", str(ck), "--input", str(text)],
                 ["translate", "eval", "--checkpoint", str(ck), "--data-dir", str(toy_data), "--no-progress"]):
        assert main([*argv, "--beam-size", "100000"]) == 2
        assert capsys.readouterr().err.strip() == (
            f"complexorder: error: --beam-size must be at most the checkpoint's target vocabulary size, {vocab}, "
            "got 100000")
    # a checkpoint's own decode.beam_size (a config edited by hand) is named as such
    payload = torch.load(ck, weights_only=True)
    wide = tmp_path / "wide.pt"
    torch.save({**payload, "config": {**payload["config"], "decode": {**payload["config"]["decode"],
                                                                      "beam_size": vocab + 1}}}, wide)
    assert main(["translate", "run", "--checkpoint", str(wide), "--input", str(text)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: the checkpoint's decode.beam_size must be at most the checkpoint's target vocabulary "
        f"size, {vocab}, got {vocab + 1}")


def test_decoding_sizes_below_one_name_the_option_and_its_value(trained, toy_data, tmp_path, capsys):
    """Stop 75: `--beam-size 0` said `--beam-size and --batch-size must be at least 1`, naming neither the one that
    was wrong nor its value."""
    ck = str(trained[0] / "last.pt")
    text = str(write(tmp_path / "in.txt", "one two\n"))
    for argv in (["translate", "eval", "--checkpoint", ck, "--data-dir", str(toy_data), "--no-progress"],
                 ["translate", "run", "--checkpoint", ck, "--input", text]):
        for option, value in (("--beam-size", "0"), ("--batch-size", "-3"), ("--batch-size", "0")):
            assert main([*argv, option, value]) == 2
            assert capsys.readouterr().err.strip() == f"complexorder: error: {option} must be at least 1, got {value}"
