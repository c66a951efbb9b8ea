"""The classification, Table 4 and inspection entry points as a notebook calls them (stop 79 audit of the Python API).

Each test names what happened before: an input file written over, a private argument needed, an ``AttributeError``
for a wrong type, a string walked character by character, the caller's random state or matplotlib backend changed.
"""

import dataclasses
import json
import re
import shutil
import struct
from pathlib import Path

import pytest
import torch

from test_classification_runner import tiny_grid, write_tiny_data

from complexorder.data.vectors import load_word_vectors, vectors_for_vocabulary
from complexorder.data.vocab import Vocabulary
from complexorder.experiments import classification as runner
from complexorder.experiments.ablation import paper_table4, render_table4, write_table4
from complexorder.experiments.classification import (GridConfig, ModelSettings, Variant, checkpoint_path,
                                                    load_grid_config, plan_units, run_grid, run_unit)
from complexorder.experiments.inspection import inspect_checkpoint
from complexorder.experiments.report import load_results, plot_epoch_times, write_report

TABLE4 = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "table4.jsonl"
QUIET = dict(progress=False, log=lambda *_: None)


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


@pytest.fixture
def table4_results(tmp_path) -> Path:
    """Four records of the committed Table 4 results (two rows, two seeds): quick to render."""
    lines = [line for line in TABLE4.read_text().splitlines()
             if json.loads(line)["variant"] in ("complex-order", "complex-vanilla")][:4]
    path = tmp_path / "table4.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A complex-order FastText trained for two epochs on the tiny data, saved by run_grid."""
    root = tmp_path_factory.mktemp("trained")
    grid = tiny_grid(root, models=["fasttext"], embeddings=["complex-order"], folds=[0], device="cpu",
                     checkpoint_dir=str(root / "ck"))
    run_grid(grid, **QUIET)
    return checkpoint_path(grid, plan_units(grid)[0])


def test_write_table4_refuses_to_write_over_its_results_or_notes_file(tmp_path, table4_results):
    """write_table4([results], out=results) replaced the results file with the table (130 records lost); the CLI
    and write_report refused it, write_table4 itself did not. The notes file was written over the same way."""
    before = table4_results.read_bytes()
    with pytest.raises(ValueError, match=exactly(
            f"--out {table4_results} is a results file it renders ({table4_results}), which this command reads; "
            "writing it would destroy it — choose another file")):
        write_table4([str(table4_results)], table4_results)
    assert table4_results.read_bytes() == before
    notes = tmp_path / "notes.md"
    notes.write_text("Hand-written reading.\n")
    with pytest.raises(ValueError, match=exactly(
            f"--out {notes} is the notes file it appends (--notes), which this command reads; writing it would "
            "destroy it — choose another file")):
        write_table4([table4_results], notes, notes=notes)
    assert notes.read_text() == "Hand-written reading.\n"
    # another file is written as before, the notes after the table
    text = write_table4([table4_results], tmp_path / "t4.md", notes=notes)
    assert (tmp_path / "t4.md").read_text() == text and text.endswith("\nHand-written reading.\n")


def test_a_single_results_path_is_refused_instead_of_walked_character_by_character(tmp_path, table4_results):
    """write_table4(str), write_report(str) and load_results(str) iterated the string: "results file / is a
    directory" (IsADirectoryError), naming no argument."""
    shown = str(table4_results)
    single = f"must be a list of results files, got the single path {shown!r}; pass [{shown!r}]"
    with pytest.raises(TypeError, match=exactly("results " + single)):
        write_table4(shown, tmp_path / "t4.md")
    with pytest.raises(TypeError, match=exactly("results " + single)):
        write_report(table4_results, tmp_path / "t2.md")
    for paths in (shown, table4_results):
        with pytest.raises(TypeError, match=exactly("paths " + single)):
            load_results(paths)
    with pytest.raises(TypeError, match=exactly("results must be a list of results files, got int")):
        write_report(5, tmp_path / "t2.md")
    assert not (tmp_path / "t4.md").exists() and not (tmp_path / "t2.md").exists()
    assert len(load_results((p for p in [table4_results]))) == 4  # a generator or a tuple is a list of files


def test_write_table4_and_write_report_send_skipped_lines_to_warn(tmp_path, table4_results, capsys):
    """The malformed-line warnings of write_table4 and write_report went to standard output with no way to
    silence them or to collect them."""
    with open(table4_results, "a") as fh:
        fh.write('{"dataset": "SST2", "mod\n')  # a line cut short by a crash
    expected = f"{table4_results}:5: skipping a malformed (probably interrupted) line"
    for write in (write_table4, write_report):
        lines: list[str] = []
        write([table4_results], tmp_path / "out.md", warn=lines.append)
        assert lines == [expected]
        write([table4_results], tmp_path / "out.md", warn=lambda *_: None)
    assert capsys.readouterr().out == ""
    write_table4([table4_results], tmp_path / "out.md")  # the default still prints
    assert capsys.readouterr().out == expected + "\n"


def test_run_unit_needs_no_private_cache_returns_the_record_and_keeps_another_configurations_checkpoint(tmp_path):
    """run_unit(grid, unit) needed the private _Cache; given one, it skipped the checkpoint check of run_grid and
    overwrote a checkpoint that another configuration had written."""
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["tpe"], folds=[0], device="cpu",
                     checkpoint_dir=str(tmp_path / "ck"))
    (unit,) = plan_units(grid)
    record = run_unit(grid, unit, progress=False)
    assert record["variant"] == "tpe" and record["split"] == "fold-0" and 0 <= record["test_accuracy"] <= 1
    assert not Path(grid.results).exists()  # returned, not appended
    path = checkpoint_path(grid, unit)
    before = path.read_bytes()
    other = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, lr=1e-2))
    with pytest.raises(ValueError, match=rf"^checkpoint directory {re.escape(str(tmp_path / 'ck'))} \(config "
                                         r"`checkpoint_dir` / --checkpoint-dir\) already holds MR-fasttext-tpe-fold-0.pt "
                                         r"from another configuration \(config hash [0-9a-f]{16}, this unit's "
                                         r"[0-9a-f]{16}\); running it would overwrite that checkpoint — use another "
                                         r"--checkpoint-dir$"):
        run_unit(other, plan_units(other)[0], progress=False)
    assert path.read_bytes() == before
    # the same unit again (its own configuration) may replace its checkpoint, with the same numbers
    again = run_unit(grid, unit, progress=False)
    assert again["test_accuracy"] == record["test_accuracy"]
    assert [h["train_loss"] for h in again["history"]] == [h["train_loss"] for h in record["history"]]
    with pytest.raises(TypeError, match=exactly("run_unit: unit must be a Unit (one of plan_units(grid)), got "
                                                "tuple")):
        run_unit(grid, ("MR", "fasttext", "tpe", "fold-0"))
    with pytest.raises(ValueError, match=exactly("folds must be a list (config `folds` / --folds), got '0'")):
        run_unit(dataclasses.replace(grid, folds="0"), unit)  # the grid is validated, as plan_units does


def test_run_grid_and_plan_units_name_what_to_pass_for_a_dict_or_a_config_name():
    """run_grid({...}), run_grid("table2") and plan_units("table2") were AttributeErrors ('dict' object has no
    attribute 'validate')."""
    hint = "load it with load_grid_config('table2')"
    for name, call in (("run_grid", run_grid), ("plan_units", plan_units), ("run_unit", lambda g: run_unit(g, None))):
        with pytest.raises(TypeError, match=exactly(f"{name}: grid must be a GridConfig (from load_grid_config), "
                                                    f"got str 'table2'; {hint}")):
            call("table2")
        with pytest.raises(TypeError, match=exactly(f"{name}: grid must be a GridConfig (from load_grid_config), "
                                                    "got dict")):
            call({"datasets": ["TREC"]})


def test_load_grid_config_type_checks_each_change_as_a_config_file_key():
    """fasttext={...} and variants=[{...}] were AttributeErrors deep in validate; results=123, name=None and
    checkpoint_dir=5 were taken (and failed later, or were recorded); a Path stayed a Path."""
    base = load_grid_config("table2")
    grid = load_grid_config("table2", fasttext={"lr": 1e-2}, variants=[{"label": "x", "embedding": "tpe"}],
                            results=Path("/tmp/r.jsonl"), data_dir=Path("/tmp/data"), vectors=Path("/tmp/v.txt"),
                            checkpoint_dir=Path("/tmp/ck"), device=torch.device("cpu"))
    assert grid.fasttext == dataclasses.replace(base.fasttext, lr=1e-2)  # the other keys of the section kept
    assert grid.cnn == base.cnn and grid.variants == [Variant("x", "tpe")]
    assert (grid.results, grid.data_dir, grid.vectors, grid.checkpoint_dir, grid.device) == (
        "/tmp/r.jsonl", "/tmp/data", "/tmp/v.txt", "/tmp/ck", "cpu")
    for change, message in (
            (dict(results=123), "load_grid_config results: expected a string, got 123"),
            (dict(results=None), "load_grid_config results: expected a string, got None"),
            (dict(name=None), "load_grid_config name: expected a string, got None"),
            (dict(checkpoint_dir=5), "load_grid_config checkpoint_dir: expected a string, got 5"),
            (dict(device=0), "load_grid_config device: expected a string, got 0"),
            (dict(fasttext={"lr": "fast"}), "load_grid_config fasttext.lr: expected a number, got 'fast'"),
            (dict(fasttext=5), "load_grid_config fasttext: expected a ModelSettings or a dict of some of its "
                               "settings, got 5"),
            (dict(variants=[{"embedding": "tpe"}]), "load_grid_config variants[0]: missing key 'label'; it is "
                                                    "required (keys: label, embedding, options, share_weights)"),
            (dict(variants="tpe"), "load_grid_config variants: expected a list, got 'tpe'")):
        with pytest.raises(ValueError, match=exactly(message)):
            load_grid_config("table2", **change)
    with pytest.raises(ValueError, match=r"^load_grid_config fasttext: unknown key 'epoch'; valid keys: "):
        load_grid_config("table2", fasttext={"epoch": 1})
    # embeddings selects among the variants given with it
    grid = load_grid_config("table2", variants=[Variant("x", "tpe"), Variant("y", "pe")], embeddings=["y"])
    assert grid.variants == [Variant("y", "pe")]
    # a GridConfig built directly: a Path is stored as a string, other types are named
    grid = GridConfig(results=Path("/tmp/r.jsonl"), vectors=Path("/tmp/v.txt"))
    grid.validate()
    assert (grid.results, grid.vectors) == ("/tmp/r.jsonl", "/tmp/v.txt")
    with pytest.raises(ValueError, match=exactly("results must be a path (a string) (config `results` / --results), "
                                                 "got 123")):
        GridConfig(results=123).validate()
    with pytest.raises(ValueError, match=exactly("name must be a non-empty string (config `name`), got None")):
        GridConfig(name=None).validate()


def test_a_grid_with_path_arguments_and_a_model_section_dict_runs_and_records_strings(tmp_path):
    """vectors=Path(...) failed in run_grid after the first unit had trained ("Object of type PosixPath is not JSON
    serializable"), and the model settings could not be given as a dict."""
    vectors = write_tiny_data(tmp_path)
    grid = load_grid_config("table2", datasets=["MR"], models=["fasttext"], embeddings=["complex-order"],
                            folds=[0], data_dir=tmp_path, vectors=vectors, results=tmp_path / "r.jsonl",
                            device="cpu", fasttext={"embedding_dim": 8, "hidden": 8, "batch_size": 16}, epochs=1)
    (record,) = run_grid(grid, **QUIET)
    assert record["vectors"]["path"] == str(vectors) and record["config"]["settings"]["embedding_dim"] == 8
    assert json.loads((tmp_path / "r.jsonl").read_text())["vectors"]["path"] == str(vectors)
    # a GridConfig built directly with Path objects, too
    direct = tiny_grid(tmp_path / "direct", models=["fasttext"], embeddings=["tpe"], folds=[0], device="cpu")
    direct = dataclasses.replace(direct, vectors=Path(direct.vectors), data_dir=Path(direct.data_dir),
                                 results=Path(direct.results), checkpoint_dir=tmp_path / "direct" / "ck")
    (record,) = run_grid(direct, **QUIET)
    assert record["vectors"]["path"] == str(tmp_path / "direct" / "vec.txt")
    assert json.loads((tmp_path / "direct" / "results.jsonl").read_text())["test_accuracy"] == record["test_accuracy"]


def test_run_grid_and_run_unit_leave_the_callers_random_state_as_it_was(tmp_path):
    """run_grid and run_unit called torch.manual_seed(unit seed): a notebook's seeded stream was replaced by the
    last unit's (torch.initial_seed() became that seed)."""
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["complex-order"], folds=[0], device="cpu")
    torch.manual_seed(12345)
    torch.rand(3)
    state = torch.get_rng_state()
    (record,) = run_grid(grid, **QUIET)
    assert torch.equal(torch.get_rng_state(), state) and torch.initial_seed() == 12345
    again = run_unit(grid, plan_units(grid)[0], progress=False)
    assert torch.equal(torch.get_rng_state(), state)
    assert again["test_accuracy"] == record["test_accuracy"]  # the unit is still seeded with its own seed
    assert [h["train_loss"] for h in again["history"]] == [h["train_loss"] for h in record["history"]]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_figures_leave_a_notebooks_matplotlib_backend_alone(tmp_path, checkpoint, table4_results):
    """inspect_checkpoint, plot_density, plot_word_waves and report's Fig. 2 called matplotlib.use("Agg"), which
    replaced a notebook's inline backend; the PNGs keep their sizes."""
    import matplotlib

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # stands for a notebook's inline backend
    try:
        written = inspect_checkpoint(checkpoint, tmp_path / "insp", word="good", k=3, log=lambda *_: None)
        assert matplotlib.get_backend() == "svg"
        plot_epoch_times(load_results([table4_results]), tmp_path / "fig2.png")
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)
    assert _png_size(written["density"]) == (720, 420) and _png_size(written["waves"]) == (840, 420)
    assert _png_size(tmp_path / "fig2.png") == (517, 418)  # 4.7 x 3.8 inches at 110 dpi


def test_inspect_checkpoint_refuses_dims_without_a_word_and_dims_that_are_no_list(tmp_path, checkpoint):
    """dims=[0, 1] without word was ignored without a word (the CLI refuses --dims without --word); dims="0,1"
    was walked character by character, dims=[] drew an empty plot."""
    with pytest.raises(ValueError, match=exactly("dims chooses the dimensions of the wave plot of word, and no word "
                                                 "is given; give word too, or leave dims out")):
        inspect_checkpoint(checkpoint, tmp_path / "a", dims=[0, 1], log=lambda *_: None)
    for dims in ("0,1", [], [0, 1.5], 3):
        with pytest.raises(ValueError, match=exactly(f"dims must be a non-empty list of embedding dimensions "
                                                     f"(integers), got {dims!r}")):
            inspect_checkpoint(checkpoint, tmp_path / "a", word="good", dims=dims, log=lambda *_: None)
    assert not (tmp_path / "a").exists()
    written = inspect_checkpoint(checkpoint, tmp_path / "b", word="good", dims=(0, 1), log=lambda *_: None)
    assert written["dims"] == [0, 1]


def test_the_vocabulary_refuses_raw_strings_and_vectors_for_vocabulary_a_list(tmp_path):
    """Vocabulary.from_texts(["good movie"]) built a vocabulary of characters and encode("good movie") encoded each
    character as <unk>; vectors_for_vocabulary(kv, [words]) was an AttributeError (no pad_id)."""
    tip = "tokenize first, e.g. with complexorder.data.text.kim_tokenize (the classification data's tokenizer)"
    with pytest.raises(TypeError, match=exactly("Vocabulary.from_texts takes a list of token lists, got the string "
                                                f"'a bad movie' as text 1; {tip}")):
        Vocabulary.from_texts([["a", "good", "movie"], "a bad movie"])
    with pytest.raises(TypeError, match=exactly("Vocabulary.from_texts takes a list of token lists, got the string "
                                                f"'a good movie'; {tip}")):
        Vocabulary.from_texts("a good movie")
    vocab = Vocabulary.from_texts([["a", "good", "movie"], ["a", "bad", "movie"]])
    with pytest.raises(TypeError, match=exactly(f"Vocabulary.encode takes a list of tokens, got the string "
                                                f"'good movie'; {tip}")):
        vocab.encode("good movie")
    assert vocab.encode(["good", "movie"]).tolist() == [5, 3]
    assert Vocabulary.from_texts(iter([("b", "a", "b"), ["c"]])).itos == ["<pad>", "<unk>", "b", "a", "c"]
    (tmp_path / "v.txt").write_text("2 3\ngood 1 2 3\nmovie 4 5 6\n")
    kv = load_word_vectors(tmp_path / "v.txt")
    with pytest.raises(TypeError, match=exactly("vocab must be a complexorder.data.vocab.Vocabulary (e.g. "
                                                "Vocabulary.from_texts(token_lists)), got list")):
        vectors_for_vocabulary(kv, ["good", "movie"])
    matrix, coverage = vectors_for_vocabulary(kv, vocab)
    assert matrix.shape == (6, 3) and coverage == 0.5


@pytest.mark.parametrize("function", [plan_units, run_unit, run_grid, render_table4, paper_table4,
                                      inspect_checkpoint, load_results, write_report, write_table4])
def test_public_entry_points_document_their_arguments_and_what_they_return(function):
    """These had no docstring, or one naming neither all their arguments nor what they return."""
    import inspect

    doc = inspect.getdoc(function) or ""
    assert "Returns:" in doc
    params = list(inspect.signature(function).parameters)
    if params:
        assert "Args:" in doc
    undocumented = [p for p in params if not re.search(rf"^\s+{p}:", doc, re.M)]
    assert undocumented == []
    if function is run_grid:
        assert "units already in the results file are skipped and not returned" in " ".join(doc.split())
    if function is run_unit:
        assert "it is not appended to ``grid.results``" in " ".join(doc.split())


def test_embeddings_selects_after_the_command_lines_other_settings_and_never_nothing(tmp_path, capsys):
    # stop 79's review: `--embeddings` checked the file's grid before `--device cpu` changed it (a config with
    # device = "cuda" failed on a CPU-only machine with --embeddings only), and embeddings=[] selected every embedding
    from complexorder.cli import main
    from complexorder.experiments.classification import load_grid_config

    config = tmp_path / "gpu.toml"
    config.write_text('extends = "table2"\nresults = "r.jsonl"\ndevice = "cuda:7"\n')
    argv = ["classify", "--config", str(config), "--datasets", "TREC", "--models", "cnn", "--seeds", "1",
            "--device", "cpu", "--dry-run", "--data-dir", str(tmp_path)]
    assert main([*argv, "--embeddings", "complex-order"]) == 0
    assert capsys.readouterr().out.splitlines() == ["TREC cnn complex-order seed-1"]
    assert main([*argv, "--embeddings", "complex-ordr"]) == 2
    assert "--embeddings: unknown name 'complex-ordr'; valid names: " in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"^embeddings is empty; select at least one of 'none'; 'pe'; "):
        load_grid_config("table2", embeddings=[])


def test_loading_a_checkpoint_leaves_the_callers_random_state_as_it_was(checkpoint, tmp_path):
    # stop 79's review: load_classifier (inspect_checkpoint) and load_translator drew the weights of the model they
    # then replaced from the caller's generator
    from complexorder.experiments.inspection import load_classifier

    torch.manual_seed(12345)
    state = torch.get_rng_state()
    load_classifier(checkpoint)
    assert torch.equal(torch.get_rng_state(), state)
