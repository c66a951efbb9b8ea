"""Stop 79 (an audit of the Python API, called as a notebook user calls it): the translation and language-model
functions check what their commands check, take overrides in one form, leave the caller's random state alone, return
summaries with shared key names and word their errors for Python callers as well as for the command line."""

import json
import re

import numpy as np
import pytest
import torch

from complexorder.checkpoint import save_checkpoint
from complexorder.cli import main
from complexorder.config import config_from_dict, config_to_dict
from complexorder.data.multi30k import WordTokenizer
from complexorder.experiments import language_model as LM
from complexorder.experiments import translation as T
from complexorder.experiments.language_model import (LMConfig, build_model, evaluate_checkpoint,
                                                     train_language_model)
from complexorder.experiments.language_model_cli import load_lm_config, shipped_configs
from complexorder.experiments.translation import (average_checkpoints, packaged_configs, resolve_config,
                                                  train_translation)
from complexorder.models.seq2seq import TransformerSeq2Seq
from test_translation_lm_api_checks import DE, EN, toy_data  # noqa: F401  (toy_data: a fixture used below)

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def quiet(*_):
    pass


# ------------------------------------------------------------------------------------------------ tiny set-ups



def tiny_translation_config(**sets):
    return resolve_config("cpu-complex-order", {
        "name": "toy", "model.d_model": 8, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 16, "model.dropout": 0.1,
        "data.preprocessing": "word", "data.min_frequency": 1, "train.batch_size": 8, "train.max_steps": 2,
        "train.lr": 0.01, "train.warmup_steps": 1, "decode.beam_size": 2, **sets})


def save_toy_translator(path, seed: int) -> None:
    """An untrained toy translation checkpoint (weights drawn with ``seed``), as average_checkpoints reads them."""
    config = tiny_translation_config()
    tokenizer = WordTokenizer.train([" ".join(EN), " ".join(DE)], 1)
    torch.manual_seed(seed)
    model = TransformerSeq2Seq(config.model, tokenizer.vocab_size, tokenizer.vocab_size)
    save_checkpoint(path, "translation", model.state_dict(), config_to_dict(config), tokenizer=tokenizer.state(),
                    vocab_size=tokenizer.vocab_size, parameters=1)


TINY_LM = {"model": {"embedding": "complex-order", "n_layer": 1, "n_head": 2, "d_model": 16, "d_head": 8,
                     "d_inner": 32, "mem_len": 8, "dropout": 0.1},
           "train": {"tgt_len": 8, "batch_size": 2, "max_steps": 3, "lr": 3e-3, "log_interval": 1,
                     "eval_interval": 2, "eval_tgt_len": 8, "eval_max_chars": 200, "checkpoint_interval": 2},
           "eval": {"tgt_len": 8, "mem_len": 8, "clamp_len": 8, "same_length": True, "batch_size": 2}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A text8-format corpus of 1,000 characters per split."""
    root = tmp_path_factory.mktemp("corpus")
    text = "the cat sat on the mat and the dog sat on the log " * 20
    for split in ("train", "valid", "test"):
        (root / f"{split}.txt").write_text(text.strip())
    return root


@pytest.fixture(scope="module")
def lm_checkpoint(corpus, tmp_path_factory):
    """An untrained TINY_LM checkpoint."""
    cfg = config_from_dict(TINY_LM, LMConfig)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("lm") / "ck.pt"
    save_checkpoint(path, "language-model", build_model(cfg).state_dict(), config_to_dict(cfg), step=0)
    return path


def corpus_bytes(corpus) -> dict:
    return {p.name: p.read_bytes() for p in sorted(corpus.iterdir())}


# ---------------------------------------------------------------- item 2: evaluate_checkpoint's results file


def test_evaluate_checkpoint_refuses_a_results_file_that_is_not_one_before_loading_anything(corpus, lm_checkpoint,
                                                                                            tmp_path):
    """results=corpus/test.txt appended a JSON line to the corpus's test split (the command refused it)."""
    before = corpus_bytes(corpus)
    target = corpus / "test.txt"
    message = (f"results (--results) {target} is not a JSON-lines results file (its first line is not a JSON "
               "object); results are appended one JSON object per line — choose another file")
    with pytest.raises(ValueError, match=exactly(message)):
        evaluate_checkpoint(lm_checkpoint, corpus, splits=("valid",), results=target, progress=False, device="cpu")
    # before the checkpoint is read: a missing checkpoint is not what it reports
    with pytest.raises(ValueError, match=exactly(message)):
        evaluate_checkpoint(tmp_path / "missing.pt", corpus, results=target, progress=False)
    assert corpus_bytes(corpus) == before
    # a results file, or none yet, takes the line; the command's message is unchanged
    results = tmp_path / "results.jsonl"
    evaluate_checkpoint(lm_checkpoint, corpus, splits=("valid",), results=results, progress=False, device="cpu")
    assert json.loads(results.read_text())["event"] == "eval"


def test_lm_eval_still_names_results_as_the_option(corpus, lm_checkpoint, capsys):
    before = corpus_bytes(corpus)
    assert main(["lm", "eval", "--checkpoint", str(lm_checkpoint), "--corpus", str(corpus), "--no-progress",
                 "--results", str(corpus / "test.txt")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: --results {corpus / 'test.txt'} is not a JSON-lines results file (its first line is "
        "not a JSON object); results are appended one JSON object per line — choose another file")
    assert corpus_bytes(corpus) == before
    # --max-chars is now checked by evaluate_checkpoint, with a message naming both the argument and the option
    assert main(["lm", "eval", "--checkpoint", str(lm_checkpoint), "--corpus", str(corpus), "--no-progress",
                 "--max-chars", "0"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: max_chars (--max-chars) must be a positive "
                                               "integer (evaluate the first N characters of each split), got 0")


# --------------------------------------------------------------------------- item 3: average_checkpoints


@pytest.fixture()
def two_checkpoints(tmp_path):
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    save_toy_translator(a, 0)
    save_toy_translator(b, 1)
    return a, b


def test_average_checkpoints_refuses_a_checkpoint_given_twice(two_checkpoints, tmp_path):
    """It weighed that checkpoint double, without a word (`translate average` refused it)."""
    a, b = two_checkpoints
    (tmp_path / "link.pt").symlink_to(a)
    for paths, twice in (([a, a, b], a), ([str(a), b, f"{tmp_path}/./a.pt"], f"{tmp_path}/./a.pt"),
                         ([a, b, tmp_path / "link.pt"], tmp_path / "link.pt")):  # the same file under another name
        with pytest.raises(ValueError, match=exactly(f"checkpoint {twice} is given more than once; each checkpoint is "
                                                     "averaged once")):
            average_checkpoints(paths, tmp_path / "avg.pt")
    assert not (tmp_path / "avg.pt").exists()
    assert average_checkpoints([a, b], tmp_path / "avg.pt") == tmp_path / "avg.pt"


def test_average_checkpoints_never_writes_over_one_of_its_inputs(two_checkpoints):
    """average_checkpoints([e1, e2], e1) replaced e1 by the average."""
    a, b = two_checkpoints
    before = {p: p.read_bytes() for p in (a, b)}
    for output in (a, str(b)):
        with pytest.raises(ValueError, match=exactly(f"--output {output} is one of the checkpoints to average "
                                                     f"({output}), which this command reads; writing it would destroy "
                                                     "it — choose another file")):
            average_checkpoints([a, b], output)
    assert {p: p.read_bytes() for p in (a, b)} == before


def test_average_checkpoints_refuses_a_single_path_for_paths(two_checkpoints, tmp_path):
    """A bare str was averaged one character at a time ("'/'": no such checkpoint)."""
    a, _ = two_checkpoints
    for paths, kind in ((str(a), "str"), (a, type(a).__name__)):
        with pytest.raises(TypeError, match=exactly(f"paths must be a list of checkpoint paths, got a single {kind}; "
                                                    "pass [path] for one checkpoint")):
            average_checkpoints(paths, tmp_path / "avg.pt")
    with pytest.raises(TypeError, match=exactly("paths[1] must be a checkpoint path (a str or Path), got int")):
        average_checkpoints([a, 3], tmp_path / "avg.pt")
    assert not (tmp_path / "avg.pt").exists()
    assert average_checkpoints((p for p in [a]), tmp_path / "avg.pt").is_file()  # any iterable of paths


def test_translate_average_keeps_its_messages(two_checkpoints, tmp_path, capsys):
    a, b = two_checkpoints
    before = a.read_bytes()
    assert main(["translate", "average", str(a), str(a), "--output", str(tmp_path / "avg.pt")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: checkpoint {a} is given more than once; each "
                                               "checkpoint is averaged once")
    assert main(["translate", "average", str(a), str(b), "--output", str(a)]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --output {a} is one of the checkpoints to "
                                               f"average ({a}), which this command reads; writing it would destroy it "
                                               "— choose another file")
    assert a.read_bytes() == before and not (tmp_path / "avg.pt").exists()
    # and the function now says the same to a Python caller
    with pytest.raises(ValueError, match=exactly(f"checkpoint {a} is given more than once; each checkpoint is "
                                                 "averaged once")):
        average_checkpoints([a, a], tmp_path / "avg.pt")


# ------------------------------------------------------------------------ item 7: overrides in either form


def test_resolve_config_takes_a_list_of_set_strings_as_well_as_a_mapping():
    """It took a dict only: a list failed with "'list' object has no attribute 'items'"."""
    listed = resolve_config("cpu-complex-order", ["train.lr=0.0016", "name=toy", "model.variant=vanilla"])
    mapped = resolve_config("cpu-complex-order", {"train.lr": 0.0016, "name": "toy", "model.variant": "vanilla"})
    assert listed == mapped and listed.train.lr == 0.0016 and listed.name == "toy"
    assert resolve_config("cpu-complex-order", ()) == resolve_config("cpu-complex-order")
    with pytest.raises(TypeError, match=exactly("overrides must be a mapping {'train.lr': 0.001} or a list of "
                                                "'KEY=VALUE' strings, got a single str; pass ['train.lr=1e-3'] for one "
                                                "override")):
        resolve_config("cpu-complex-order", "train.lr=1e-3")
    with pytest.raises(ValueError, match=exactly("overrides[1] 'train.lr': expected KEY=VALUE, e.g. "
                                                 "train.max_steps=2000")):
        resolve_config("cpu-complex-order", ["name=toy", "train.lr"])
    with pytest.raises(TypeError, match=exactly("overrides[0] must be a 'KEY=VALUE' string, got tuple")):
        resolve_config("cpu-complex-order", [("train.lr", 1e-3)])
    with pytest.raises(TypeError, match=exactly("overrides: keys must be dotted setting names such as 'train.lr', "
                                                "got 3")):
        resolve_config("cpu-complex-order", {3: 1})


def test_override_errors_name_the_python_argument_not_the_command_line_option(capsys, tmp_path):
    """Stop 80: a misspelt key in ``overrides={...}`` was reported as ``--set train.lrr: ...``, an option the Python
    caller never gave, and ``load_lm_config(..., embedding="pe")`` as ``option embedding: unknown key ...``."""
    for load, valid in ((lambda ov, **kw: resolve_config("cpu-complex-order", ov, **kw), "batch_size, max_epochs"),
                        (lambda ov, **kw: load_lm_config("proxy_cpu", ov, **kw), "tgt_len, batch_size")):
        with pytest.raises(ValueError, match="^" + re.escape(f"overrides['train.lrr']: unknown key 'lrr' in [train]; "
                                                             f"valid keys: {valid}, ")):
            load({"train.lrr": 1})
        with pytest.raises(ValueError, match=exactly("overrides['train.lr']: expected a number, got 'x'")):
            load({"train.lr": "x"})
        with pytest.raises(ValueError, match=exactly("overrides['train.lr.x']: 'train.lr' is a value, not a section")):
            load({"train.lr.x": 1})
        with pytest.raises(ValueError, match=exactly("--set train.lr: expected a number, got 'x'")):
            load({"train.lr": "x"}, option="--set")  # what the command line passes
    with pytest.raises(TypeError, match=exactly(
            "load_lm_config: unexpected keyword 'embedding'; its keywords are the dotted settings model.embedding, "
            "train.max_steps (pass **{'model.embedding': 'pe'}); give any other setting in overrides")):
        load_lm_config("proxy_cpu", embedding="pe")
    with pytest.raises(TypeError, match="^load_lm_config: unexpected keyword 'train.lr'; "):
        load_lm_config("proxy_cpu", **{"train.lr": 1e-3})
    with pytest.raises(ValueError, match=exactly("load_lm_config keyword train.max_steps: expected an integer, got 'x'")):
        load_lm_config("proxy_cpu", **{"train.max_steps": "x"})
    # option= names the argument in every error, malformed strings included (resolve_config's said overrides[0])
    with pytest.raises(ValueError, match=exactly("cfg[0] 'lr': expected KEY=VALUE, e.g. train.max_steps=2000")):
        resolve_config("cpu-vanilla", ["lr"], option="cfg")
    with pytest.raises(ValueError, match=exactly("cfg[0] 'lr=1': expected SECTION.KEY=VALUE, e.g. train.lr=1e-3")):
        load_lm_config("proxy_cpu", ["lr=1"], option="cfg")
    # a command-line option's own setting is named by the option (it said "load_lm_config keyword train.max_steps")
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "proxy_cpu"\ntrain = 3\n')
    assert main(["lm", "train", "--config", str(bad), "--corpus", str(tmp_path), "--out", str(tmp_path / "run"),
                 "--max-steps", "5"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --max-steps (train.max_steps): the config file's "
                                               "'train' is not a section")
    # the command lines still name --set
    assert main(["translate", "train", "--config", "cpu-complex-order", "--set", "train.lrr=1"]) == 2
    assert capsys.readouterr().err.strip().startswith("complexorder: error: --set train.lrr: unknown key 'lrr' in "
                                                      "[train]; valid keys: batch_size, ")
    assert main(["lm", "train", "--config", "proxy_cpu", "--corpus", str(tmp_path), "--out", str(tmp_path / "run"),
                 "--set", "train.lrr=1"]) == 2
    assert capsys.readouterr().err.strip().startswith("complexorder: error: --set train.lrr: unknown key 'lrr' in "
                                                      "[train]; valid keys: tgt_len, ")


def test_load_lm_config_takes_a_mapping_as_well_as_a_list_of_set_strings(capsys, tmp_path):
    """It took a list only: a dict was read as its keys ("--set 'train.lr': expected SECTION.KEY=VALUE") and a bare
    string one character at a time ("--set 't': ...")."""
    mapped = load_lm_config("proxy_cpu", {"train.lr": 1e-3, "model.embedding": "pe"})
    listed = load_lm_config("proxy_cpu", ["train.lr=1e-3", "model.embedding=pe"])
    assert mapped == listed and mapped.train.lr == 1e-3 and mapped.model.embedding == "pe"
    assert load_lm_config("proxy_cpu", None) == load_lm_config("proxy_cpu")
    with pytest.raises(TypeError, match=exactly("overrides must be a mapping {'train.lr': 0.001} or a list of "
                                                "'SECTION.KEY=VALUE' strings, got a single str; pass "
                                                "['train.lr=1e-3'] for one override")):
        load_lm_config("proxy_cpu", "train.lr=1e-3")
    with pytest.raises(ValueError, match=exactly("overrides[0] 'lr=1e-3': expected SECTION.KEY=VALUE, e.g. "
                                                 "train.lr=1e-3")):
        load_lm_config("proxy_cpu", ["lr=1e-3"])
    # a mapping that contradicts an option's direct value is refused as a list was
    with pytest.raises(ValueError, match=exactly("keyword train.max_steps=5 and overrides['train.max_steps']=7 "
                                                 "contradict each other; give one of them")):
        load_lm_config("proxy_cpu", {"train.max_steps": 7}, **{"train.max_steps": 5})
    # the command line's message still names --set
    assert main(["lm", "train", "--config", "proxy_cpu", "--corpus", str(tmp_path), "--out", str(tmp_path / "run"),
                 "--set", "train.lr"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --set 'train.lr': expected SECTION.KEY=VALUE, "
                                               "e.g. train.lr=1e-3")


# ---------------------------------------------------------------------- item 8: evaluate_checkpoint's arguments


@pytest.mark.parametrize("arguments, error, message", [
    ({"splits": "valid"}, TypeError,  # "missing data file v.txt"
     "splits (--splits) must be a sequence of split names (train, valid, test), got a single str; pass ('valid',) "
     "for one split"),
    ({"splits": ("valid", "valid")}, ValueError,  # evaluated and recorded twice
     "splits (--splits): 'valid' given more than once in ('valid', 'valid'); each split is evaluated once"),
    ({"splits": ["test", "valid", "test"]}, ValueError,
     "splits (--splits): 'test' given more than once in ('test', 'valid', 'test'); each split is evaluated once"),
    ({"splits": ("dev",)}, ValueError, "splits (--splits): unknown split 'dev'; choose from train, valid, test"),
    ({"splits": ()}, ValueError, "splits (--splits): no split given; choose from train, valid, test"),
    ({"splits": 3}, TypeError, "splits (--splits) must be a sequence of split names (train, valid, test), got int"),
    ({"max_chars": -100}, ValueError,  # accepted: the last 100 characters dropped, max_chars -100 recorded
     "max_chars (--max-chars) must be a positive integer (evaluate the first N characters of each split), got -100"),
    ({"max_chars": 0}, ValueError,
     "max_chars (--max-chars) must be a positive integer (evaluate the first N characters of each split), got 0"),
    ({"max_chars": 2.5}, TypeError,  # "slice indices must be integers"
     "max_chars (--max-chars) must be a positive integer (evaluate the first N characters of each split), got 2.5"),
    ({"max_chars": True}, TypeError,
     "max_chars (--max-chars) must be a positive integer (evaluate the first N characters of each split), got True"),
])
def test_evaluate_checkpoint_checks_its_splits_and_max_chars_before_loading(arguments, error, message, corpus,
                                                                            tmp_path):
    results = tmp_path / "results.jsonl"
    with pytest.raises(error, match=exactly(message)):  # before the (missing) checkpoint is read
        evaluate_checkpoint(tmp_path / "missing.pt", corpus, progress=False, results=results, **arguments)
    assert not results.exists()


def test_evaluate_checkpoint_takes_any_sequence_of_splits_and_an_integer_max_chars(corpus, lm_checkpoint, tmp_path):
    """Besides the checks: a list of splits, a NumPy integer max_chars (recorded as a plain int)."""
    out = evaluate_checkpoint(lm_checkpoint, corpus, splits=["test", "valid"], max_chars=np.int64(40), progress=False,
                              device="cpu", results=tmp_path / "r.jsonl")
    assert out["test_chars"] == out["valid_chars"] == 38 and type(out["max_chars"]) is int and out["max_chars"] == 40
    assert json.loads((tmp_path / "r.jsonl").read_text())["max_chars"] == 40
    with pytest.raises(ValueError, match=exactly("splits (--splits): 'valid' given more than once in ('valid', "
                                                 "'valid'); each split is evaluated once")):
        evaluate_checkpoint(lm_checkpoint, corpus, splits=("valid", "valid"), progress=False)


# --------------------------------------------------------------------- item 9b: the caller's random state


def test_train_translation_leaves_the_callers_random_state_as_it_was(toy_data, tmp_path):
    """It reseeded torch's global generator with train.seed: a notebook's next draws were the run's."""
    config = tiny_translation_config()
    torch.manual_seed(777)
    before = torch.get_rng_state()
    first = train_translation(config, tmp_path / "a", toy_data, progress=False, log=quiet, device="cpu")
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(5)  # another caller state: the same run
    train_translation(config, tmp_path / "b", toy_data, progress=False, log=quiet, device="cpu")
    a, b = (torch.load(tmp_path / run / "last.pt", weights_only=True)["model_state"] for run in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a) and first["step"] == 2


def test_train_language_model_leaves_the_callers_random_state_as_it_was(corpus, tmp_path):
    cfg = config_from_dict(TINY_LM, LMConfig)
    torch.manual_seed(777)
    before = torch.get_rng_state()
    train_language_model(cfg, corpus, tmp_path / "a", progress=False, log=quiet, device="cpu")
    assert torch.equal(torch.get_rng_state(), before)
    # in slices (stop_after, then resume=True), from another caller state: the straight run's weights
    torch.manual_seed(5)
    train_language_model(cfg, corpus, tmp_path / "b", stop_after=1, progress=False, log=quiet, device="cpu")
    between = torch.get_rng_state()
    train_language_model(cfg, corpus, tmp_path / "b", resume=True, progress=False, log=quiet, device="cpu")
    assert torch.equal(torch.get_rng_state(), between)
    a, b = (torch.load(tmp_path / run / "last.pt", weights_only=True)["model_state"] for run in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_training_on_a_gpu_leaves_its_random_state_as_it_was(toy_data, corpus, tmp_path):
    torch.manual_seed(777)
    before = torch.get_rng_state(), torch.cuda.get_rng_state()
    train_translation(tiny_translation_config(), tmp_path / "t", toy_data, progress=False, log=quiet, device="cuda")
    train_language_model(config_from_dict(TINY_LM, LMConfig), corpus, tmp_path / "lm", progress=False, log=quiet,
                         device="cuda")
    assert torch.equal(torch.get_rng_state(), before[0]) and torch.equal(torch.cuda.get_rng_state(), before[1])


# ----------------------------------------------------------------------------- item 10: return values


def test_both_training_summaries_carry_step_steps_and_budget_reached(toy_data, corpus, tmp_path):
    """train_translation returned "step", train_language_model "steps" (and no budget_reached)."""
    t = train_translation(tiny_translation_config(), tmp_path / "t", toy_data, progress=False, log=quiet,
                          device="cpu")
    assert t["step"] == t["steps"] == 2 and t["budget_reached"] is True and isinstance(t["epochs"], int)
    cfg = config_from_dict(TINY_LM, LMConfig)
    part = train_language_model(cfg, corpus, tmp_path / "lm", stop_after=2, progress=False, log=quiet, device="cpu")
    assert part["step"] == part["steps"] == 2 and part["budget_reached"] is False
    done = train_language_model(cfg, corpus, tmp_path / "lm", resume=True, progress=False, log=quiet, device="cpu")
    assert done["step"] == done["steps"] == 3 and done["budget_reached"] is True and isinstance(done["epochs"], float)
    shared = {"step", "steps", "epochs", "parameters", "train_seconds", "budget_reached"}
    assert shared <= set(t) and shared <= set(done)


@pytest.mark.parametrize("function, sections", [
    (T.train_translation, ("Returns:",)), (LM.train_language_model, ("Returns:",)),
    (T.evaluate_split, ("Args:", "Returns:")), (LM.evaluate_checkpoint, ("Returns:",)),
    (T.load_translator, ("Returns:",)), (load_lm_config, ("Args:", "Returns:", "**direct"))])
def test_the_api_functions_document_their_arguments_and_return_values(function, sections):
    doc = function.__doc__ or ""
    assert all(section in doc for section in sections), function.__name__
    if function in (T.train_translation, LM.train_language_model):  # the shared key names, said in both
        assert "``step``" in doc and "``steps``" in doc and "``epochs``" in doc
    if function is T.load_translator:
        assert 'defaults to ``"cpu"``' in doc


# ----------------------------------------------------------------------- item 12: errors for Python callers


def test_errors_of_the_python_functions_name_the_argument_and_the_option(corpus, lm_checkpoint, tmp_path):
    """They named the command line's options only: "pass --resume ... choose another --out", "--max-chars 3 ...",
    "--config: ..."."""
    cfg = config_from_dict(TINY_LM, LMConfig)
    train_language_model(cfg, corpus, tmp_path / "run", stop_after=1, progress=False, log=quiet, device="cpu")
    with pytest.raises(ValueError, match=exactly(f"{tmp_path / 'run' / 'last.pt'} exists: pass resume=True (--resume) "
                                                 "to continue that run, or choose another out_dir (--out)")):
        train_language_model(cfg, corpus, tmp_path / "run", progress=False, log=quiet, device="cpu")
    with pytest.raises(ValueError, match=exactly("max_chars = 3 (--max-chars) leaves the valid split 3 characters, too "
                                                 "few for 2 evaluation streams of 2 or more; give at least 4 (or a "
                                                 "smaller batch_size, --batch-size)")):
        evaluate_checkpoint(lm_checkpoint, corpus, splits=("valid",), max_chars=3, progress=False, device="cpu")
    with pytest.raises(FileNotFoundError, match=exactly(f"config 'no-such' (--config) is neither a file nor a "
                                                        f"packaged config; packaged: {', '.join(packaged_configs())}")):
        resolve_config("no-such")
    with pytest.raises(ValueError, match=exactly(f"config 'no_such' (--config): no such file and no shipped config of "
                                                 f"that name; shipped: {', '.join(shipped_configs())}")):
        load_lm_config("no_such")


def test_load_translator_leaves_the_callers_random_state_as_it_was(two_checkpoints):
    a, _ = two_checkpoints
    torch.manual_seed(12345)
    state = torch.get_rng_state()
    T.load_translator(a)
    assert torch.equal(torch.get_rng_state(), state)
