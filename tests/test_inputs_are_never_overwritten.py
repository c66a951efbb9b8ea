"""Bad input found by a user's-eye sweep (stop 70): outputs that would destroy inputs, foreign results files,
divergence recorded as a result, and data defects that silently changed the data. Each case: a one-line error,
and the input left as it was."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from pathlib import Path

import pytest
import torch

from complexorder.checkpoint import check_results_file, check_writable, save_checkpoint
from complexorder.cli import main
from complexorder.data.batching import EncodedDataset
from complexorder.data.classification import TextClassificationData, make_split
from complexorder.data.text import read_lines
from complexorder.data.vectors import load_word_vectors
from complexorder.experiments.classification import Variant, plan_units
from complexorder.experiments.translation import average_checkpoints
from complexorder.experiments.training import train_classifier
from complexorder.models import build_classifier
import complexorder as co

from test_classification_runner import tiny_grid


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.strip().splitlines()


# --- outputs over inputs ---------------------------------------------------------------------------------------


def test_check_writable_refuses_an_output_that_is_an_input_also_through_a_link(tmp_path):
    source = tmp_path / "refs.de"
    source.write_text("ein Satz\n")
    (tmp_path / "link.de").symlink_to(source)
    for out in (source, tmp_path / "link.de", tmp_path / "sub" / ".." / "refs.de"):
        with pytest.raises(ValueError, match=r"^--hypotheses .* is the references, which this command reads; "
                                             r"writing it would destroy it — choose another file$"):
            check_writable(out, "--hypotheses", inputs={"the references": source})
    check_writable(tmp_path / "hyps.de", "--hypotheses", inputs={"the references": source, "stdin": "-"})
    if os.path.exists("/dev/null"):  # a device is written to, never replaced (--input /dev/stdin --output /dev/stdout)
        check_writable("/dev/null", "--output", inputs={"the input file": "/dev/null"})


def multi30k(root: Path) -> Path:
    folder = root / "translation" / "multi30k"
    folder.mkdir(parents=True)
    for name in ("test2016.en", "test2016.de"):
        (folder / name).write_text("a b\n")
    return folder


def test_translate_eval_never_writes_hypotheses_over_its_references_or_checkpoint(tmp_path, capsys):
    folder = multi30k(tmp_path)
    checkpoint = tmp_path / "last.pt"
    checkpoint.write_bytes(b"weights")
    for target, what in ((folder / "test2016.de", r"a file of the test2016 split \(test2016\.de\)"),
                         (checkpoint, r"the checkpoint this command loads \(--checkpoint\)")):
        code, err = run_cli(["translate", "eval", "--checkpoint", checkpoint, "--data-dir", tmp_path,
                             "--hypotheses", target], capsys)
        assert code == 2 and len(err) == 1
        assert re.fullmatch(rf"complexorder: error: --hypotheses {re.escape(str(target))} is {what}, which this "
                            r"command reads; writing it would destroy it — choose another file", err[0])
    assert (folder / "test2016.de").read_text() == "a b\n" and checkpoint.read_bytes() == b"weights"


def test_translate_run_never_writes_over_its_input(tmp_path, capsys):
    text = tmp_path / "in.en"
    text.write_text("a b\n")
    code, err = run_cli(["translate", "run", "--checkpoint", tmp_path / "x.pt", "--input", text,
                         "--output", text], capsys)
    assert code == 2 and "is the input file (--input), which this command reads" in err[0]
    assert text.read_text() == "a b\n"


def test_translate_average_never_replaces_a_resume_checkpoint(tmp_path):
    last = tmp_path / "last.pt"
    save_checkpoint(last, "translation", {}, {}, optimizer_state={"state": {}}, progress={"step": 3})
    before = last.read_bytes()
    with pytest.raises(ValueError, match=rf"^--output {re.escape(str(last))} is a training run's resume checkpoint "
                                         r"\(it holds the optimizer state\); the average would replace it"):
        average_checkpoints([tmp_path / "epoch1.pt"], last)
    assert last.read_bytes() == before


def test_report_never_writes_its_table_over_its_results_or_notes(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_bytes(Path("benchmarks/results/table2_transformer_lr1e-4.jsonl").read_bytes())
    notes = tmp_path / "notes.md"
    notes.write_text("hand-written\n")
    before = results.read_bytes()
    for out, what in ((results, "a results file it renders"), (notes, "the notes file it appends")):
        code, err = run_cli(["report", "--results", results, "--notes", notes, "--out", out], capsys)
        assert code == 2 and f"--out {out} is {what}" in err[-1]
    assert results.read_bytes() == before and notes.read_text() == "hand-written\n"


def test_vectors_train_never_writes_into_the_data_it_reads(tmp_path, capsys):
    target = tmp_path / "classification" / "TREC" / "TREC_10.label"
    target.parent.mkdir(parents=True)
    target.write_text("DESC:def what is a test ?\n")
    code, err = run_cli(["vectors", "train", "--data-dir", tmp_path, "--out", target], capsys)
    assert code == 2 and re.fullmatch(rf"complexorder: error: --out {re.escape(str(target))} is inside the data "
                                      rf"folder it reads \({re.escape(str(tmp_path / 'classification'))}\), which "
                                      r"this command reads; write the vectors elsewhere \(e\.g\. vectors/sg300\.txt\)",
                                      err[-1])
    assert target.read_text() == "DESC:def what is a test ?\n"
    (tmp_path / "v.txt.json").mkdir()  # the provenance record could not be written after the training
    code, err = run_cli(["vectors", "train", "--data-dir", tmp_path, "--out", tmp_path / "v.txt"], capsys)
    assert code == 2 and "--out (its provenance record)" in err[-1] and not (tmp_path / "v.txt").exists()


# --- results files ---------------------------------------------------------------------------------------------


def test_results_file_must_be_json_lines_or_new(tmp_path):
    check_results_file(tmp_path / "new.jsonl", "--results")
    (tmp_path / "empty.jsonl").write_text("")
    check_results_file(tmp_path / "empty.jsonl", "--results")
    (tmp_path / "ok.jsonl").write_text('{"a": 1}\n')
    check_results_file(tmp_path / "ok.jsonl", "--results")
    (tmp_path / "cut.jsonl").write_text('{"a": ')  # a first record cut short by a crash is still a results file
    check_results_file(tmp_path / "cut.jsonl", "--results")
    corpus = tmp_path / "valid.txt"
    corpus.write_text("anarchism originated as a term")
    with pytest.raises(ValueError, match=rf"^--results {re.escape(str(corpus))} is not a JSON-lines results file "
                                         r"\(its first line is not a JSON object\)"):
        check_results_file(corpus, "--results")
    (tmp_path / "blank-first.jsonl").write_text('\n  \n{"a": 1}\n')  # the readers skip blank lines too
    check_results_file(tmp_path / "blank-first.jsonl", "--results")
    if os.path.exists("/dev/zero"):
        for device in ("/dev/null", "/dev/zero"):  # appending to a device or pipe replaces nothing
            check_results_file(device, "--results")
        check_results_file("/dev/null", "--results", read_first=True)  # reads as empty at once
        # a grid reads its results file before it runs: /dev/zero (or /dev/stdout, a pipe) would never end
        with pytest.raises(ValueError, match=r"^--results /dev/zero is not a regular file, and this command reads its "
                                             r"results file before running"):
            check_results_file("/dev/zero", "--results", read_first=True)


def test_lm_eval_never_appends_to_a_corpus_file(tmp_path, capsys):
    corpus = tmp_path / "valid.txt"
    corpus.write_text("anarchism originated")
    code, err = run_cli(["lm", "eval", "--checkpoint", tmp_path / "best.pt", "--corpus", tmp_path,
                         "--results", corpus], capsys)
    assert code == 2 and "is not a JSON-lines results file" in err[-1]
    assert corpus.read_text() == "anarchism originated"


# --- classification --------------------------------------------------------------------------------------------


def tiny_fasttext():
    data = EncodedDataset([torch.tensor(s) for s in [[1, 2, 3], [2, 3, 4]] * 8], torch.tensor([0, 1] * 8))
    model = build_classifier("fasttext", co.build_embedding("none", 6, 4, padding_idx=0), num_classes=2, hidden=4)
    return data, model


def test_a_classifier_diverging_before_any_kept_epoch_is_an_error_not_a_recorded_result():
    data, model = tiny_fasttext()
    with torch.no_grad():
        model.embedding.weight.fill_(math.nan)
    with pytest.raises(FloatingPointError, match=r"^unit: training diverged in epoch 1: the mean training loss is "
                                                 r"nan, and no earlier epoch was kept by dev accuracy; lower the "
                                                 r"learning rate \(this unit is not recorded\)$"):
        train_classifier(model, data, data, epochs=2, batch_size=4, lr=1e-3, progress=False, desc="unit")


def test_a_classifier_diverging_after_a_kept_epoch_keeps_that_epoch():
    data, model = tiny_fasttext()
    calls = []

    def poison(module, args):  # the 5th training batch (epoch 2 of 4 batches) meets NaN weights
        if module.training:
            calls.append(1)
            if len(calls) == 5:
                with torch.no_grad():
                    module.embedding.weight.fill_(math.nan)

    model.register_forward_pre_hook(poison)
    result = train_classifier(model, data, data, epochs=6, batch_size=4, lr=1e-3, progress=False, patience=3)
    assert result.best_epoch == 1 and result.epochs_run == 2
    assert result.history[-1]["diverged"] is True and "dev_accuracy" not in result.history[-1]
    assert all(bool(p.isfinite().all()) for p in model.parameters())  # the kept epoch's weights


@pytest.mark.parametrize("key, value", [("lr", math.inf), ("lr", 1e300), ("weight_decay", math.inf)])
def test_learning_rate_and_weight_decay_must_be_finite(tmp_path, key, value):
    import dataclasses

    grid = tiny_grid(tmp_path, models=["cnn"])
    grid = dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, **{key: value}))
    with pytest.raises(ValueError, match=rf"\[cnn\] {key} must be a finite number"):
        plan_units(grid)


def test_checkpoint_names_of_two_rows_may_not_collide_and_labels_may_not_be_empty(tmp_path):
    from complexorder.experiments.classification import check_checkpoint_names

    grid = tiny_grid(tmp_path, models=["cnn"], checkpoint_dir=str(tmp_path / "ck"),
                     variants=[Variant("x/y", "complex-order"), Variant("x y", "complex-vanilla")])
    with pytest.raises(ValueError, match=r"^rows 'x/y' and 'x y' would write the same checkpoint file "
                                         r"MR-cnn-x_y-fold-0\.pt \(spaces and '/' become '_'\); rename one of them$"):
        check_checkpoint_names(grid, plan_units(grid))
    with pytest.raises(ValueError, match=r"^variants: a label is empty; give every row a name$"):
        plan_units(tiny_grid(tmp_path / "b", variants=[Variant(" ", "complex-order")]))
    with pytest.raises(ValueError, match=r"option\(s\) padding_idx are set by the runner"):
        plan_units(tiny_grid(tmp_path / "c", variants=[Variant("p", "complex-order", {"padding_idx": 3})]))


def test_a_file_with_carriage_returns_alone_is_an_error_not_one_long_example(tmp_path):
    path = tmp_path / "TREC_10.label"
    path.write_bytes(b"DESC:def what is it ?\rHUM:ind who is he ?\r")
    with pytest.raises(ValueError, match=r"its lines end in '\\r' alone \(classic Mac line ends\) and it holds no "
                                         r"'\\n'; convert it"):
        read_lines(path)
    path.write_bytes(b"DESC:def what is it ?\r\nHUM:ind who is he ?\r\n")  # CRLF stays fine
    assert read_lines(path) == ["DESC:def what is it ?", "HUM:ind who is he ?"]


def test_a_split_part_that_rounds_to_nothing_is_an_error_naming_the_sizes():
    data = TextClassificationData("TREC", ("A", "B"), {"train": [["a"], ["b"], ["c"]], "dev": [], "test": [["d"]]},
                                  {"train": [0, 1, 0], "dev": [], "test": [1]}, [])
    with pytest.raises(ValueError, match=r"^TREC seed-1: the dev split is empty \(train 3, dev 0, test 1 examples; "
                                         r"dev holds out 10% of each class\); the data set is too small"):
        make_split(data, "seed-1")


def test_a_fold_too_small_to_split_stops_the_grid_before_any_unit_trains(tmp_path):
    """Stop 71: the empty-part check ran as each unit started, so a grid stopped at its first unusable fold after
    the folds before it had trained (here fold 2 trains, fold 0's dev part rounds to nothing)."""
    from complexorder.experiments.classification import run_grid

    grid = tiny_grid(tmp_path, folds=[2, 0], models=["fasttext"], variants=[Variant("complex-order", "complex-order")])
    folder = tmp_path / "classification" / "MR"
    for name, word in (("rt-polarity.pos", "good"), ("rt-polarity.neg", "bad")):  # 6 + 6 sentences
        (folder / name).write_text("".join(f"{word} film {i}\n" for i in range(6)))
    with pytest.raises(ValueError, match=r"^MR fold-0: the dev split is empty \(train 10, dev 0, test 2 examples; "):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert not (tmp_path / "results.jsonl").exists()  # fold 2 did not train first
    assert len(run_grid(dataclasses.replace(grid, folds=[2]), progress=False, log=lambda *_: None)) == 1
    # stop 81: fewer examples than folds said "number of folds must be in [2, 9], got 10", naming no data set
    for name, lines in (("rt-polarity.pos", 5), ("rt-polarity.neg", 4)):
        (folder / name).write_text("".join(f"word {i}\n" for i in range(lines)))
    with pytest.raises(ValueError, match=r"^MR fold-2: 9 examples, fewer than the 10 folds of the paper's "
                                         r"cross-validation; the data set is too small for this protocol$"):
        run_grid(dataclasses.replace(grid, folds=[2], results=str(tmp_path / "r2.jsonl")), progress=False,
                 log=lambda *_: None)


# --- word vectors ----------------------------------------------------------------------------------------------


def test_vectors_whose_header_miscounts_are_empty_or_not_finite_are_errors(tmp_path):
    rows = [f"w{i} " + " ".join(["0.5"] * 4) for i in range(6)]
    path = tmp_path / "v.txt"
    path.write_text("3 4\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"it has 6 vector rows where its header declares 3; correct the header"):
        load_word_vectors(path, "word2vec-text")
    for header in ("3  4", "3\t4", " 3 4"):  # stop 81: gensim splits the header on any whitespace, the check did not
        path.write_text(header + "\n" + "\n".join(rows) + "\n")
        with pytest.raises(ValueError, match=r"it has 6 vector rows where its header declares 3; correct the header"):
            load_word_vectors(path, "word2vec-text")
    path.write_text("0 4\n")
    with pytest.raises(ValueError, match=r"holds no vectors"):
        load_word_vectors(path, "word2vec-text")
    path.write_text("6 4\n" + "\n".join(rows[:2] + ["bad nan 0 0 0"] + rows[3:]) + "\n")
    with pytest.raises(ValueError, match=r"the vector of 'bad' \(vector 3\) holds a value that is not finite"):
        load_word_vectors(path, "word2vec-text")
    path.write_text("6 4\n" + "\n".join(rows[:3] + ["big 1e39 0 0 0"] + rows[4:]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stop 81: numpy's "overflow encountered in cast" was printed before the error
        with pytest.raises(ValueError, match=r"the vector of 'big' \(vector 4\) holds a value that is not finite"):
            load_word_vectors(path, "word2vec-text")
    path.write_text("6 4\n" + "\n".join(rows) + "\n")
    assert len(load_word_vectors(path, "word2vec-text")) == 6


# --- settings and API arguments --------------------------------------------------------------------------------


def test_a_config_file_with_a_utf8_byte_order_mark_reads_as_without(tmp_path):
    from complexorder.config import read_toml

    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbfname = \"x\"\n")
    assert read_toml(tmp_path / "bom.toml") == {"name": "x"}


def test_translation_settings_are_named_when_out_of_range():
    from complexorder.experiments.translation import _check_settings, resolve_config
    from complexorder.models.seq2seq import TransformerSeq2Seq

    for key, value, message in (("train.lr", 1e300, r"train\.lr must be a finite number in \(0, 3\.40282e\+38\] "
                                                     r"\(Adam keeps it in float32\), got 1e\+300"),):
        with pytest.raises(ValueError, match=rf"^{message}$"):
            _check_settings(resolve_config("cpu-complex-order", {key: value}))
    for key, value, message in (("model.dropout", 1.5, r"model\.dropout must be a finite number in \[0, 1\), got 1\.5"),
                                ("model.dim_feedforward", 0, r"model\.dim_feedforward must be a positive integer, got 0")):
        with pytest.raises(ValueError, match=rf"^{message}$"):
            TransformerSeq2Seq(resolve_config("cpu-complex-order", {key: value}).model, 50, 50)


@pytest.mark.parametrize("kwargs, message", [
    ({"padding_idx": 1.0}, r"padding_idx must be an integer token id or None, got 1\.0"),
    ({"padding_idx": True}, r"padding_idx must be an integer token id or None, got True"),
    ({"dtype": torch.complex64}, r"dtype must be a real floating-point dtype .*got torch\.complex64"),
    ({"dtype": torch.int64}, r"dtype must be a real floating-point dtype .*got torch\.int64"),
])
@pytest.mark.parametrize("name", ["none", "pe", "tpe", "complex-vanilla", "complex-order"])
def test_embedding_arguments_of_the_wrong_kind_are_named(name, kwargs, message):
    with pytest.raises(ValueError, match=rf"^{message}"):
        co.build_embedding(name, 10, 4, **kwargs)


def test_a_directory_where_a_data_file_or_a_file_where_the_corpus_directory_belongs_is_named(tmp_path):
    from complexorder.data.paths import require_file
    from complexorder.data.text8 import load_corpus

    (tmp_path / "TREC_10.label").mkdir()
    with pytest.raises(IsADirectoryError, match=r"^data file TREC_10\.label is a directory \(at .*\), expected a "
                                                r"file; get it$"):
        require_file(tmp_path / "TREC_10.label", "get it")
    (tmp_path / "train.txt").write_text("abc")
    with pytest.raises(NotADirectoryError, match=r"^corpus .*train\.txt is a file; pass the corpus directory"):
        load_corpus(tmp_path / "train.txt")


@pytest.mark.parametrize("architecture, kwargs, message", [
    ("fasttext", {"num_classes": 0}, r"FastTextClassifier: num_classes must be a positive integer, got 0"),
    ("lstm", {"num_classes": 2, "hidden": 0}, r"LSTMClassifier: hidden must be a positive integer, got 0"),
    ("cnn", {"num_classes": 2, "filter_sizes": ()}, r"CNNClassifier: filter_sizes must name at least one filter"),
    ("cnn", {"num_classes": 2, "filter_sizes": (3, 0)}, r"CNNClassifier: filter_sizes\[1\] must be a positive integer"),
    ("transformer", {"num_classes": 2, "nhead": 2, "dropout": 1.5},
     r"TransformerClassifier: dropout must be a probability in \[0, 1\), got 1\.5"),
])
def test_classifier_sizes_that_cannot_learn_are_named(architecture, kwargs, message):
    with pytest.raises(ValueError, match=rf"^{message}"):
        build_classifier(architecture, co.build_embedding("complex-order", 10, 4, padding_idx=0), **kwargs)


def test_boolean_switches_of_the_embeddings_must_be_booleans():
    for kwargs in ({"sparse": "no"}, {"initial_phase": "yes"}, {"fused": 1}):
        name = next(iter(kwargs))
        with pytest.raises(ValueError, match=rf"^{name} must be True or False, got "):
            co.ComplexOrderEmbedding(5, 4, **kwargs)
    with pytest.raises(ValueError, match=r"^sparse must be True or False, got 'no'$"):
        co.build_embedding("none", 5, 4, sparse="no")


def test_seeds_beyond_32_bits_labels_that_break_the_table_and_empty_list_entries_are_refused(tmp_path):
    from complexorder.experiments.classification_cli import parse_ints

    from complexorder.data.classification import split_ids

    with pytest.raises(ValueError, match=r"^seed 4294967297 is 2\*\*32 or more \(--seeds, or the config's `seeds`"):
        split_ids("TREC", [0], [1, 2**32 + 1])
    with pytest.raises(ValueError, match=r"^variant label 'a\|b' holds '\|' or a line break"):
        plan_units(tiny_grid(tmp_path / "b", variants=[Variant("a|b", "complex-order")]))
    with pytest.raises(ValueError, match=r"^--seeds: '1,,2' has an empty entry between commas$"):
        parse_ints("1,,2", "seeds")
    with pytest.raises(ValueError, match=r"^--folds: expected integers like '0-4' or '1,3,5', got '١'$"):
        parse_ints("١", "folds")  # an Arabic-Indic one: int() would read it
    assert parse_ints("0-2, 5", "folds") == [0, 1, 2, 5]
