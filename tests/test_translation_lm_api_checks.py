"""Stop 78 (an audit of the translation and language-model APIs): the Python functions check what the command line
checks, a checkpoint of NaN weights is refused, `lm train` logs its validations, and the messages name settings."""

import dataclasses
import json
import math
import re

import pytest
import torch

from complexorder.checkpoint import save_checkpoint
from complexorder.cli import main
from complexorder.config import config_from_dict, config_to_dict
from complexorder.data.multi30k import WordTokenizer
from complexorder.experiments.language_model import (LMConfig, batchify, build_model, evaluate_bpc,
                                                     evaluate_checkpoint, train_language_model)
from complexorder.experiments.language_model_cli import load_lm_config
from complexorder.experiments.translation import (MAX_LENGTH_PENALTY, DecodeConfig, TranslationConfig,
                                                  average_checkpoints, beam_search, corpus_bleu, greedy_search,
                                                  load_translator, resolve_config, train_translation,
                                                  translate_sentences)
from complexorder.models.seq2seq import Seq2SeqConfig, TransformerSeq2Seq


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


EN = ["one", "two", "three", "four", "five", "six"]
DE = ["eins", "zwei", "drei", "vier", "fünf", "sechs"]


def tiny_config(**sets) -> TranslationConfig:
    return resolve_config("cpu-complex-order", {
        "name": "toy", "model.d_model": 8, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 16, "model.dropout": 0.0,
        "data.preprocessing": "word", "data.min_frequency": 1, "train.batch_size": 8, "train.max_steps": 2,
        "train.lr": 0.01, "train.warmup_steps": 1, "decode.beam_size": 2, **sets})


def tiny_translator():
    """``(model, tokenizer, config)`` of an untrained toy translator."""
    config = tiny_config()
    tokenizer = WordTokenizer.train([" ".join(EN), " ".join(DE)], 1)
    torch.manual_seed(0)
    model = TransformerSeq2Seq(config.model, tokenizer.vocab_size, tokenizer.vocab_size).eval()
    return model, tokenizer, config


def save_translator(path, model, tokenizer, config, **poison) -> None:
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for name, value in poison.items():
        state[name].view(-1)[0] = value
    save_checkpoint(path, "translation", state, config_to_dict(config), tokenizer=tokenizer.state(),
                    vocab_size=tokenizer.vocab_size, parameters=1)


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    folder = root / "translation/multi30k"
    folder.mkdir(parents=True)
    gen = torch.Generator().manual_seed(0)
    for split, n in (("train", 40), ("val", 6), ("test2016", 6)):
        rows = [torch.randint(0, 6, (3,), generator=gen).tolist() for _ in range(n)]
        (folder / f"{split}.en").write_text("".join(" ".join(EN[i] for i in r) + "\n" for r in rows))
        (folder / f"{split}.de").write_text("".join(" ".join(DE[i] for i in r) + "\n" for r in rows))
    return root


# ---------------------------------------------------------------------------------------------- item 1: decoding API


LP = (" (hypotheses are ranked by log p / length ** length_penalty; beyond this the power overflows for long "
      "outputs)")


@pytest.mark.parametrize("call, error, message", [
    (lambda m, s: beam_search(m, s, beam_size=2, length_penalty=float("nan")), ValueError,
     f"length_penalty must be a finite number in [-10, 10]{LP}, got nan"),  # hypotheses were ranked by NaN
    (lambda m, s: beam_search(m, s, beam_size=2, length_penalty=1000.0), ValueError,
     f"length_penalty must be a finite number in [-10, 10]{LP}, got 1000.0"),  # an OverflowError traceback
    (lambda m, s: beam_search(m, s, beam_size=2.5), TypeError, "beam_size must be an integer, at least 1, got 2.5"),
    (lambda m, s: beam_search(m, s, beam_size=True), TypeError, "beam_size must be an integer, at least 1, got True"),
    (lambda m, s: beam_search(m, s, beam_size=2, max_len_a=-5.0, max_len_b=1), ValueError,  # empty hypotheses
     "max_len_a must be a finite number in [0, 1000] (output tokens per source token), got -5.0"),
    (lambda m, s: greedy_search(m, s, max_len_a=-1.0), ValueError,
     "max_len_a must be a finite number in [0, 1000] (output tokens per source token), got -1.0"),
    (lambda m, s: greedy_search(m, s, max_len_b=0), ValueError,
     "max_len_b must be at least 1 (output tokens allowed beyond max_len_a x source length), got 0"),
])
def test_the_search_functions_check_their_settings_as_the_command_line_does(call, error, message):
    model, _, _ = tiny_translator()
    src = torch.tensor([[4, 5, 6, 3], [7, 8, 3, 0]])
    with pytest.raises(error, match=exactly(message)):
        call(model, src)


def test_translate_sentences_checks_its_decode_settings_and_refuses_a_bare_string():
    model, tokenizer, _ = tiny_translator()
    with pytest.raises(ValueError, match=exactly("decode.batch_size must be at least 1, got 0")):  # range() arg 3
        translate_sentences(model, tokenizer, ["one two"], DecodeConfig(batch_size=0))
    with pytest.raises(ValueError, match=exactly(f"decode.length_penalty must be a finite number in [-10, 10]{LP}, "
                                                 "got inf")):
        translate_sentences(model, tokenizer, ["one two"], DecodeConfig(length_penalty=math.inf))
    with pytest.raises(TypeError, match=exactly("sentences must be a list of sentences (strings), got a single str; "
                                                "pass [text] for one sentence")):  # translated a character each
        translate_sentences(model, tokenizer, "one two", DecodeConfig(beam_size=1))
    with pytest.raises(TypeError, match=exactly("sentences[1] must be a string (one sentence), got NoneType")):
        translate_sentences(model, tokenizer, ["one", None], DecodeConfig(beam_size=1))
    assert len(translate_sentences(model, tokenizer, ["one two", ""], DecodeConfig(beam_size=1))) == 2


# ---------------------------------------------------------------------------------- item 2: non-finite weights


def test_a_translation_checkpoint_of_nan_or_infinite_weights_is_refused_naming_it(tmp_path, toy_data, capsys):
    """It was scored: `translate run` printed empty lines, `translate eval` BLEU 0.00, exit 0."""
    model, tokenizer, config = tiny_translator()
    good, bad, worse = tmp_path / "good.pt", tmp_path / "bad.pt", tmp_path / "worse.pt"
    save_translator(good, model, tokenizer, config)
    save_translator(bad, model, tokenizer, config, **{"src_embedding.amplitude": math.nan})
    save_translator(worse, model, tokenizer, config, **{"src_embedding.amplitude": math.inf,
                                                        "src_embedding.frequency": math.nan})
    message = f"checkpoint {bad}: its weights hold NaN or infinite values (src_embedding.amplitude); a training that " \
              "diverged?"
    with pytest.raises(ValueError, match=exactly(message)):
        load_translator(bad)
    with pytest.raises(ValueError, match=exactly(f"checkpoint {worse}: its weights hold NaN or infinite values "
                                                 "(src_embedding.amplitude); a training that diverged?")):
        load_translator(worse)  # the first one named
    with pytest.raises(ValueError, match=exactly(message)):
        average_checkpoints([good, bad], tmp_path / "avg.pt")
    assert not (tmp_path / "avg.pt").exists()
    text = tmp_path / "in.txt"
    text.write_text("one two\n")
    for argv in (["translate", "run", "--checkpoint", str(bad), "--input", str(text)],
                 ["translate", "eval", "--checkpoint", str(bad), "--data-dir", str(toy_data), "--no-progress"]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.err.strip() == f"complexorder: error: {message}" and captured.out == ""
    load_translator(good)  # finite weights load


def test_resuming_a_translation_run_from_nan_weights_is_refused(toy_data, tmp_path):
    config = tiny_config()
    train_translation(config, tmp_path / "run", toy_data, progress=False, log=lambda m: None)
    last = tmp_path / "run" / "last.pt"
    ck = torch.load(last, weights_only=True)
    ck["model_state"]["src_embedding.frequency"].view(-1)[0] = math.nan
    torch.save(ck, last)
    more = dataclasses.replace(config, train=dataclasses.replace(config.train, max_steps=4))
    with pytest.raises(ValueError, match=exactly(f"checkpoint {last}: its weights hold NaN or infinite values "
                                                 "(src_embedding.frequency); a training that diverged?")):
        train_translation(more, tmp_path / "run", toy_data, progress=False, log=lambda m: None)


TINY_LM = {"model": {"embedding": "vanilla", "n_layer": 1, "n_head": 2, "d_model": 16, "d_head": 8, "d_inner": 32,
                     "mem_len": 16, "dropout": 0.0},
           "train": {"tgt_len": 16, "batch_size": 4, "max_steps": 8, "lr": 3e-3, "log_interval": 2,
                     "eval_interval": 4, "eval_tgt_len": 16, "checkpoint_interval": 4},
           "eval": {"tgt_len": 8, "mem_len": 16, "clamp_len": 8, "same_length": True, "batch_size": 4}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    gen = torch.Generator().manual_seed(0)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]
    for split, n in (("train", 600), ("valid", 60), ("test", 60)):
        (root / f"{split}.txt").write_text(" ".join(words[i] for i in torch.randint(0, 8, (n,), generator=gen)))
    return root


def test_an_lm_checkpoint_of_nan_weights_is_refused_by_eval_and_resume(corpus, tmp_path, capsys):
    """`lm eval` printed a null BPC and exited 0."""
    cfg = config_from_dict(TINY_LM, LMConfig)
    state = {k: v.clone() for k, v in build_model(cfg).state_dict().items()}
    state["word_emb.weight"].view(-1)[3] = -math.inf
    bad = tmp_path / "bad.pt"
    save_checkpoint(bad, "language-model", state, config_to_dict(cfg), step=1)
    message = f"checkpoint {bad}: its weights hold NaN or infinite values (word_emb.weight); a training that diverged?"
    with pytest.raises(ValueError, match=exactly(message)):
        evaluate_checkpoint(bad, corpus, progress=False)
    assert main(["lm", "eval", "--checkpoint", str(bad), "--corpus", str(corpus), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == f"complexorder: error: {message}" and captured.out == ""
    train_language_model(cfg, corpus, tmp_path / "run", stop_after=4, progress=False, log=lambda m: None)
    last = tmp_path / "run" / "last.pt"
    ck = torch.load(last, weights_only=True)
    ck["model_state"]["word_emb.weight"].view(-1)[0] = math.nan
    torch.save(ck, last)
    with pytest.raises(ValueError, match=exactly(f"checkpoint {last}: its weights hold NaN or infinite values "
                                                 "(word_emb.weight); a training that diverged?")):
        train_language_model(cfg, corpus, tmp_path / "run", resume=True, progress=False, log=lambda m: None)


# ------------------------------------------------------------------------------- item 3: lm train's log lines


def test_lm_train_logs_a_line_per_validation_with_train_and_valid_bpc(corpus, tmp_path, capsys):
    """With the bar off (standard error not a terminal) the run said nothing between its first line and its
    summary."""
    cfg = config_from_dict(TINY_LM, LMConfig)
    messages = []
    train_language_model(cfg, corpus, tmp_path / "run", progress=False, log=messages.append)
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    lines = [m for m in messages if " valid bpc " in m]
    assert len(lines) == 2
    best = math.inf
    for line, (start, end) in zip(lines, ((0, 4), (4, 8))):
        valid = next(r for r in records if r["event"] == "valid" and r["step"] == end)
        train = [r for r in records if r["event"] == "train" and start < r["step"] <= end]
        # train bpc: over the steps since the previous validation (steps of equal size: the mean of the windows)
        train_bpc = sum(r["train_bpc"] * r["window_steps"] for r in train) / sum(r["window_steps"] for r in train)
        best = min(best, valid["valid_bpc"])
        match = re.fullmatch(rf"lm vanilla: step {end} train bpc {train_bpc:.3f} valid bpc {valid['valid_bpc']:.3f} "
                             rf"\(best {best:.3f}\), ([\d,]+) chars/s", line)
        assert match and int(match.group(1).replace(",", "")) > 0, line
    # the command line prints them to standard error (the bar is off: not a terminal)
    (tmp_path / "tiny.toml").write_text("\n".join(f"[{section}]\n" + "\n".join(f"{k} = {json.dumps(v)}"
                                                                               for k, v in values.items())
                                                  for section, values in TINY_LM.items()))
    assert main(["lm", "train", "--config", str(tmp_path / "tiny.toml"), "--corpus", str(corpus), "--out",
                 str(tmp_path / "cli")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" train bpc")[0] for line in err if " valid bpc " in line] == ["lm vanilla: step 4",
                                                                                      "lm vanilla: step 8"]


# ------------------------------------------------------------------------ item 4: a valid split too short


def test_a_valid_split_too_short_for_the_evaluation_batch_names_eval_batch_size_and_the_file(corpus, tmp_path,
                                                                                             capsys):
    """The message said to lower batch_size (the training's), which does not matter here."""
    chars = len((corpus / "valid.txt").read_text())
    cfg = config_from_dict({**TINY_LM, "eval": {**TINY_LM["eval"], "batch_size": chars}}, LMConfig)
    with pytest.raises(ValueError, match=exactly(
            f"the valid split ({corpus / 'valid.txt'}) has {chars:,} characters: too few for eval.batch_size = "
            f"{chars} validation streams of at least 2 characters each; lower eval.batch_size to at most "
            f"{chars // 2} or use a longer valid split")):
        train_language_model(cfg, corpus, tmp_path / "run", progress=False, log=lambda m: None)
    # lm eval: the --batch-size option, or the checkpoint's setting when none is given
    fine = config_from_dict(TINY_LM, LMConfig)
    ck = tmp_path / "ck.pt"
    save_checkpoint(ck, "language-model", build_model(cfg).state_dict(), config_to_dict(cfg), step=0)
    prefix = (f"complexorder: error: the valid split ({corpus / 'valid.txt'}) has {chars:,} characters: too few for "
              f"{chars} evaluation streams of at least 2 characters each; give --batch-size {chars // 2} or less")
    assert main(["lm", "eval", "--checkpoint", str(ck), "--corpus", str(corpus), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == f"{prefix} (the checkpoint's eval.batch_size is {chars})"
    save_checkpoint(ck, "language-model", build_model(fine).state_dict(), config_to_dict(fine), step=0)
    assert main(["lm", "eval", "--checkpoint", str(ck), "--corpus", str(corpus), "--no-progress", "--batch-size",
                 str(chars)]) == 2
    assert capsys.readouterr().err.strip() == prefix


# ------------------------------------------------------------------ item 5: a BPE vocabulary smaller than asked


def test_a_bpe_vocabulary_smaller_than_asked_is_said_and_recorded(toy_data, tmp_path):
    config = tiny_config(**{"data.preprocessing": "bpe", "data.vocab_size": 5000, "train.max_steps": 1})
    messages = []
    train_translation(config, tmp_path / "run", toy_data, progress=False, log=messages.append)
    built = torch.load(tmp_path / "run" / "last.pt", weights_only=True)["vocab_size"]
    assert built < 5000
    assert (f"toy: note: data.vocab_size = 5,000 asked, but the training text gives a BPE vocabulary of {built:,} "
            f"pieces only; training with {built:,} (the checkpoints record it as vocab_size)") in messages


# -------------------------------------------------------------------- item 6: an empty value for a required option


def test_an_empty_value_of_a_required_option_does_not_offer_a_default(capsys, tmp_path, monkeypatch):
    """`translate run --checkpoint ''` said `give one, or leave the option out for its default`: it has none."""
    monkeypatch.chdir(tmp_path)
    for argv, message in (
            (["translate", "run", "--checkpoint", ""], "--checkpoint: an empty value; give a path"),
            (["translate", "average", "a.pt", "--output="], "--output: an empty value; give a path"),
            (["translate", "train", "--config", ""], "--config: an empty value; give a config name or file"),
            (["lm", "eval", "--checkpoint", "c.pt", "--corpus", ""], "--corpus: an empty value; give a path"),
            (["lm", "prepare-text8", "--source", ""], "--source: an empty value; give a path"),  # or --download
            # an option with a default keeps its message; so does translate run's --output, which has one
            (["translate", "run", "--checkpoint", "c.pt", "--output", ""],
             "--output: an empty value; give one, or leave the option out for its default")):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------- item 7: lm train --out of another kind of run


def test_lm_train_into_a_directory_of_another_kind_of_run_says_so(corpus, tmp_path, capsys):
    """It said `pass --resume to continue that run`, which would fail: the checkpoint is a translation's."""
    cfg = config_from_dict(TINY_LM, LMConfig)
    for name, write, what in (("translation", lambda p: save_checkpoint(p, "translation", {}, {}),
                               "a 'translation' checkpoint"),
                              ("text", lambda p: p.write_text("notes\n"),
                               "a file that is not a complexorder checkpoint")):
        out = tmp_path / name
        out.mkdir()
        write(out / "last.pt")
        with pytest.raises(ValueError, match=exactly(f"out_dir (--out) {out} holds {out / 'last.pt'}, {what}, not "
                                                     "a language model's; out_dir (--out) must be another directory")):
            train_language_model(cfg, corpus, out, progress=False, log=lambda m: None)


# ---------------------------------------------------------------------------------------- item 8: API gaps


def test_lm_and_bleu_functions_refuse_arguments_they_cannot_use(tmp_path):
    cfg = config_from_dict(TINY_LM, LMConfig)
    model = build_model(cfg).eval()
    ids = torch.randint(0, 27, (200,))
    for call in (lambda: evaluate_bpc(model, ids, tgt_len=16, batch_size=0), lambda: batchify(ids, 0, 16)):
        with pytest.raises(ValueError, match=exactly("batch_size must be a positive integer (the number of streams), "
                                                     "got 0")):  # ZeroDivisionError
            call()
    with pytest.raises(ValueError, match=exactly("ids must be a 1-d integer tensor of character ids, got shape (200,) "
                                                 "and dtype torch.float32")):  # 2.7 was read as 2
        evaluate_bpc(model, ids.float() + 0.7, tgt_len=16, batch_size=4)
    assert evaluate_bpc(model, ids, tgt_len=16, batch_size=4)[1] == 4 * 49
    with pytest.raises(ValueError, match=exactly("no sentences to score: hypotheses and references are empty")):
        corpus_bleu([], [])  # an IndexError inside sacrebleu
    with pytest.raises(TypeError, match=exactly("hypotheses must be a list of sentences (strings), got a single str; "
                                                "pass [text] for one sentence")):  # scored a character per sentence
        corpus_bleu("abc", "abd")
    with pytest.raises(TypeError, match=exactly("references must be a list of sentences (strings), got a single "
                                                "str; pass [text] for one sentence")):
        corpus_bleu(["abc"], "abc")
    assert corpus_bleu(["a cat sat on the mat"], ["a cat sat on the mat"])["bleu_tok_lc"] == pytest.approx(100)
    with pytest.raises(TypeError, match=exactly("config must be a TranslationConfig (from resolve_config, or "
                                                "config_from_dict(data, TranslationConfig)), got dict")):
        train_translation({"model": {}}, tmp_path / "run")  # an AttributeError
    with pytest.raises(TypeError, match=exactly("the config must be an LMConfig (from config_from_dict(data, "
                                                "LMConfig)), got dict")):
        train_language_model(TINY_LM, tmp_path / "corpus", tmp_path / "lm")
    assert not (tmp_path / "run").exists() and not (tmp_path / "lm").exists()


# ------------------------------------------------------------------------------------------- item 9: wording


def test_the_divisibility_error_names_the_model_settings():
    with pytest.raises(ValueError, match=exactly("model.d_model (15) must be divisible by model.nhead (2)")):
        TransformerSeq2Seq(Seq2SeqConfig(d_model=15, nhead=2), 10, 10)


def test_a_refused_translation_resume_lists_every_differing_setting(toy_data, tmp_path):
    config = tiny_config()
    train_translation(config, tmp_path / "run", toy_data, progress=False, log=lambda m: None)
    other = dataclasses.replace(config, train=dataclasses.replace(config.train, lr=0.02, label_smoothing=0.2),
                                model=dataclasses.replace(config.model, dim_feedforward=32))
    with pytest.raises(ValueError, match=exactly(
            f"{tmp_path / 'run' / 'last.pt'} was trained with another config (in the checkpoint → asked: "
            "model.dim_feedforward: 16 → 32; train.label_smoothing: 0.1 → 0.2; train.lr: 0.01 → 0.02); use "
            "another run_dir (--run-dir) or the same config")):
        train_translation(other, tmp_path / "run", toy_data, progress=False, log=lambda m: None)


def test_a_refused_lm_resume_lists_every_differing_setting_and_the_flags_to_resume(corpus, tmp_path):
    cfg = config_from_dict(TINY_LM, LMConfig)
    train_language_model(cfg, corpus, tmp_path / "run", stop_after=2, progress=False, log=lambda m: None)
    other = config_from_dict({**TINY_LM, "model": {**TINY_LM["model"], "embedding": "pe"},
                              "train": {**TINY_LM["train"], "lr": 1e-3}}, LMConfig)
    with pytest.raises(ValueError, match=exactly(
            f"cannot resume {tmp_path / 'run' / 'last.pt'}: it was trained with other settings (the run's → the "
            "config's now: model.embedding: 'vanilla' → 'pe'; train.lr: 0.003 → 0.001); resume with the run's "
            "settings (lm train: add --embedding vanilla --set train.lr=0.003; Python: "
            "language_model_cli.load_lm_config(..., overrides={'model.embedding': 'vanilla', 'train.lr': 0.003})) or "
            "train in a new out_dir (--out)")):
        train_language_model(other, corpus, tmp_path / "run", resume=True, progress=False, log=lambda m: None)
    # stop 81: a setting the run left unset was given as "--set model.d_embed=None", which --set refuses
    other = config_from_dict({**TINY_LM, "model": {**TINY_LM["model"], "d_embed": 8}}, LMConfig)
    with pytest.raises(ValueError, match=exactly(
            f"cannot resume {tmp_path / 'run' / 'last.pt'}: it was trained with other settings (the run's → the "
            "config's now: model.d_embed: None → 8); resume with the run's settings (lm train: leave model.d_embed "
            "unset (in the config and --set); Python: language_model_cli.load_lm_config(..., overrides="
            "{'model.d_embed': None})) or train in a new out_dir (--out)")):
        train_language_model(other, corpus, tmp_path / "run", resume=True, progress=False, log=lambda m: None)
    assert load_lm_config("proxy_cpu", overrides={"model.d_embed": 64}).model.d_embed == 64
    assert load_lm_config("proxy_cpu", overrides={"model.d_embed": None}).model.d_embed is None  # the hint works


def test_an_lm_option_and_a_set_of_the_same_setting_that_disagree_are_refused(tmp_path, capsys):
    """`--embedding complex-order --set model.embedding=pe` trained complex-order without a word."""
    with pytest.raises(ValueError, match=exactly("--embedding complex-order and --set model.embedding=pe contradict "
                                                 "each other; give one of them")):
        load_lm_config("proxy_cpu", ["model.embedding=pe"], option="--set", **{"model.embedding": "complex-order"})
    with pytest.raises(ValueError, match=exactly("--max-steps 5 and --set train.max_steps=7 contradict each other; "
                                                 "give one of them")):
        load_lm_config("proxy_cpu", ["train.max_steps=7"], option="--set", **{"train.max_steps": 5})
    # from Python the message names the arguments as they were given (stop 80: it named --embedding and --set)
    with pytest.raises(ValueError, match=exactly("keyword model.embedding='complex-order' and "
                                                 "overrides['model.embedding']='pe' contradict each other; give one "
                                                 "of them")):
        load_lm_config("proxy_cpu", ["model.embedding=pe"], **{"model.embedding": "complex-order"})
    same = load_lm_config("proxy_cpu", ["model.embedding=pe"], **{"model.embedding": "pe"})
    assert same.model.embedding == "pe"
    assert main(["lm", "train", "--config", "proxy_cpu", "--corpus", str(tmp_path), "--out", str(tmp_path / "run"),
                 "--embedding", "complex-order", "--set", "model.embedding=pe"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --embedding complex-order and --set "
                                               "model.embedding=pe contradict each other; give one of them")


def test_the_length_penalty_help_gives_its_range_and_default(capsys):
    with pytest.raises(SystemExit):
        main(["translate", "run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (f"a number in [-{MAX_LENGTH_PENALTY:g}, {MAX_LENGTH_PENALTY:g}]" in help_text
            and "(default: the checkpoint's decode.length_penalty, 1.0 in the packaged configs)" in help_text)
    assert resolve_config("cpu-complex-order").decode.length_penalty == 1.0


def test_length_limits_that_overflow_are_refused():
    """max_len_a = 1e300 (or max_len_b = 10**30) overflowed the int64 length limits: garbage limits, no error."""
    from complexorder.experiments.translation import DecodeConfig, check_decode

    with pytest.raises(ValueError, match=r"^decode\.max_len_a must be a finite number in \[0, 1000\] \(output tokens "
                                         r"per source token\), got 1e\+300$"):
        check_decode(DecodeConfig(max_len_a=1e300))
    with pytest.raises(ValueError, match=rf"^decode\.max_len_b must be at most 1,000,000 \(output tokens allowed "
                                         rf"beyond max_len_a x source length\), got {10**30}$"):
        check_decode(DecodeConfig(max_len_b=10**30))
    check_decode(DecodeConfig(max_len_a=1000.0, max_len_b=1_000_000))


def test_the_search_functions_take_numpy_and_one_element_tensor_settings_as_before():
    """A review of stop 78's checks: np.float32(0.6) and torch.tensor(1.5) decoded before the shared check and were
    then refused as out of range (check_number takes int and float only)."""
    import numpy as np

    model, _, _ = tiny_translator()
    src = torch.tensor([[4, 5, 6, 3], [7, 8, 3, 0]])
    plain = beam_search(model, src, beam_size=2, length_penalty=0.6, max_len_a=1.5, max_len_b=3)
    assert beam_search(model, src, beam_size=np.int64(2), length_penalty=np.float32(0.6),
                       max_len_a=torch.tensor(1.5), max_len_b=torch.tensor(3)) == plain
    assert greedy_search(model, src, max_len_a=np.float64(1.5), max_len_b=np.int32(3)) == \
        greedy_search(model, src, max_len_a=1.5, max_len_b=3)


def test_checkpoints_from_before_and_after_the_shared_table_was_stored_once_load_and_average(tmp_path):
    """Since stop 82 a shared embedding table is stored once (src_embedding.*); checkpoints written before held it
    under tgt_embedding.* as well. Both load, and `translate average` takes one of each (a run resumed across the
    change): its sums were keyed by the first checkpoint's names, a KeyError at the other's."""
    model, tokenizer, config = tiny_translator()
    new, old, avg = tmp_path / "new.pt", tmp_path / "old.pt", tmp_path / "avg.pt"
    state = {k: v.clone() for k, v in model.state_dict().items() if not k.startswith("tgt_embedding.")}
    save_checkpoint(new, "translation", state, config_to_dict(config), tokenizer=tokenizer.state(),
                    vocab_size=tokenizer.vocab_size, parameters=1)
    state["src_embedding.amplitude"] += 1.0
    state.update({k.replace("src_embedding.", "tgt_embedding.", 1): v.clone() for k, v in list(state.items())
                  if k.startswith("src_embedding.")})
    save_checkpoint(old, "translation", state, config_to_dict(config), tokenizer=tokenizer.state(),
                    vocab_size=tokenizer.vocab_size, parameters=1)
    loaded, _, _ = load_translator(old)
    torch.testing.assert_close(loaded.src_embedding.amplitude, model.src_embedding.amplitude + 1.0)
    average_checkpoints([new, old], avg)
    averaged, _, _ = load_translator(avg)
    torch.testing.assert_close(averaged.src_embedding.amplitude, model.src_embedding.amplitude + 0.5)
    assert averaged.tgt_embedding is averaged.src_embedding

    # a checkpoint whose config shares the table but whose two tables differ is refused, not averaged half-way
    state["tgt_embedding.amplitude"] = state["tgt_embedding.amplitude"] + 1.0
    save_checkpoint(old, "translation", state, config_to_dict(config), tokenizer=tokenizer.state(),
                    vocab_size=tokenizer.vocab_size, parameters=1)
    with pytest.raises(ValueError, match=exactly(f"checkpoint {old}: tgt_embedding.amplitude and src_embedding."
                                                 "amplitude differ, but its config shares one table "
                                                 "(model.share_embeddings); it was not written by this run's model")):
        average_checkpoints([new, old], tmp_path / "avg2.pt")
