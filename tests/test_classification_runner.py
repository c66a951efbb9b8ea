"""The grid runner end to end on tiny data: every architecture x embedding, resume, report, significance."""

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from complexorder.checkpoint import load_checkpoint, read_jsonl
from complexorder.data.download import sha256_of
from complexorder.config import find_config, load_config
from complexorder.experiments import classification as runner
from complexorder.experiments.classification import (GridConfig, ModelSettings, Variant, build_model_from_config,
                                                    plan_units, run_grid)
from complexorder.experiments.report import paired_wilcoxon, render_table2, significance_marks, write_report

WORDS = ["good", "bad", "great", "awful", "film", "plot", "the", "a", "is", "not", "very", "fun", "dull"]


def write_tiny_data(root):
    g = torch.Generator().manual_seed(0)
    folder = root / "classification" / "MR"
    folder.mkdir(parents=True)
    for name, marker in (("rt-polarity.pos", "good"), ("rt-polarity.neg", "bad")):
        lines = []
        for _ in range(30):
            idx = torch.randint(4, len(WORDS), (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
            words = [WORDS[i] for i in idx] + [marker]
            lines.append(" ".join(words))
        (folder / name).write_bytes(("\n".join(lines) + "\n\n").encode())
    vectors = root / "vec.txt"
    rows = [f"{w} " + " ".join(f"{v:.3f}" for v in torch.randn(8, generator=g).tolist()) for w in WORDS[:8]]
    vectors.write_text(f"{len(rows)} 8\n" + "\n".join(rows) + "\n")
    return vectors


def tiny_grid(tmp_path, **kw):
    vectors = write_tiny_data(tmp_path)
    small = ModelSettings(embedding_dim=8, batch_size=16, epochs=2, patience=1, hidden=8, filters=4, nhead=2,
                          dim_feedforward=16, dropout=0.1)
    settings = dict(name="tiny", datasets=["MR"], folds=[0, 1], data_dir=str(tmp_path), vectors=str(vectors),
                    results=str(tmp_path / "results.jsonl"), fasttext=small, cnn=small, lstm=small,
                    transformer=dataclasses.replace(small, pretrained=False))
    return GridConfig(**{**settings, **kw})


def test_every_architecture_and_embedding_end_to_end(tmp_path):
    grid = tiny_grid(tmp_path, folds=[0], checkpoint_dir=str(tmp_path / "ckpt"), device="cpu")
    records = run_grid(grid, progress=False, log=lambda *_: None, command="complexorder classify --test")
    assert len(records) == 4 * 5
    for r in records:
        assert r["device"] == "cpu"
        assert 0.0 <= r["test_accuracy"] <= 1.0 and r["parameters"] > 0 and r["seconds_per_epoch"] > 0
        assert r["split"] == "fold-0" and r["command"] == "complexorder classify --test"
        # the per-epoch test curve is recorded; the reported test accuracy is the best dev epoch's
        assert len(r["history"]) == r["epochs_run"] and all("monitor_accuracy" in h for h in r["history"])
        assert r["history"][r["best_epoch"] - 1]["monitor_accuracy"] == r["test_accuracy"]
        if r["model"] == "transformer":
            assert r["vectors"] == "none (random init)"
        else:
            assert r["vectors"]["path"].endswith("vec.txt") and 0 < r["vectors"]["coverage"] <= 1
            assert r["vectors"]["sha256"] == sha256_of(tmp_path / "vec.txt")
    # a saved checkpoint rebuilds the same model and predictions
    ck = load_checkpoint(tmp_path / "ckpt" / "MR-cnn-complex-order-fold-0.pt", "classifier")
    model = build_model_from_config(ck["config"], len(ck["vocab"]), 2, ck["max_positions"])
    model.load_state_dict(ck["model_state"])
    assert ck["vocab"][:2] == ["<pad>", "<unk>"] and ck["label_names"] == ["negative", "positive"]
    from complexorder.data.classification import load_dataset, make_split
    from complexorder.data.vocab import Vocabulary
    from complexorder.experiments.training import evaluate_accuracy

    split = make_split(load_dataset("MR", tmp_path), "fold-0")
    vocab = Vocabulary.from_texts(split.train[0])
    assert vocab.itos == ck["vocab"]
    test = runner._encode(vocab, split.test)
    record = next(r for r in records if r["model"] == "cnn" and r["variant"] == "complex-order")
    assert evaluate_accuracy(model, test, min_length=max(grid.cnn.filter_sizes)) == ck["test_accuracy"] \
        == record["test_accuracy"]


def test_resume_skips_finished_units_and_survives_an_interruption(tmp_path, monkeypatch):
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["none", "complex-order"])
    real = runner.run_unit
    calls = []

    def interrupted(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_unit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert len(read_jsonl(grid.results)) == 2  # the finished units are on disk
    with open(grid.results, "a") as fh:  # and a half-written line does not break the resume
        fh.write('{"dataset": "MR", "model"')
    monkeypatch.setattr(runner, "run_unit", real)
    logs = []
    rest = run_grid(grid, progress=False, log=logs.append)
    assert len(rest) == 2 and any("2 already in" in line for line in logs)
    assert f"{grid.results}:3: skipping a malformed (probably interrupted) line" in logs  # tolerated, and said
    assert run_grid(grid, progress=False, log=lambda *_: None) == []
    done = {(r["variant"], r["split"]) for r in read_jsonl(grid.results)}
    assert done == {(v, s) for v in ("none", "complex-order") for s in ("fold-0", "fold-1")}
    # a second crash over the file's life leaves a second cut line: still tolerated (it used to stop the grid)
    with open(grid.results, "a") as fh:
        fh.write('{"config_hash": "ab')
    logs = []
    assert run_grid(grid, progress=False, log=logs.append) == []
    assert sum("skipping a malformed (probably interrupted) line" in line for line in logs) == 2
    # a changed setting is a different experiment: it runs again
    grid2 = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, hidden=6))
    assert len(run_grid(grid2, progress=False, log=lambda *_: None)) == 4
    # a checkpoint directory given once the units have finished: they are not re-run, and the note says so
    logs = []
    assert run_grid(dataclasses.replace(grid2, checkpoint_dir=str(tmp_path / "ck")), progress=False,
                    log=logs.append) == []
    assert any(line.startswith(f"note: 4 finished unit(s) have no checkpoint in {tmp_path / 'ck'} (e.g. MR-fasttext-")
               for line in logs)
    # vectors re-trained at the same path: the finished units are kept, and the note says so
    with open(grid.vectors) as fh:
        lines = fh.read().splitlines()
    first = lines[1].split()
    lines[1] = " ".join([first[0], "9.999"] + first[2:])
    with open(grid.vectors, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    logs = []
    assert run_grid(grid2, progress=False, log=logs.append) == []
    assert any(line.startswith(f"note: 4 finished unit(s) in {grid.results} used another file at {grid.vectors}")
               for line in logs)


def test_a_checkpoint_of_another_configuration_is_never_overwritten(tmp_path):
    """Checkpoint names hold data set, model, row and split only: a second grid differing in a setting and
    sharing the directory would overwrite the first grid's models; it is refused before any training."""
    ckpt = tmp_path / "ck"
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["complex-order"], folds=[0], checkpoint_dir=str(ckpt))
    assert len(run_grid(grid, progress=False, log=lambda *_: None)) == 1
    path = ckpt / "MR-fasttext-complex-order-fold-0.pt"
    before = path.read_bytes()
    other = dataclasses.replace(grid, results=str(tmp_path / "other.jsonl"),
                                fasttext=dataclasses.replace(grid.fasttext, lr=1e-4))
    with pytest.raises(ValueError, match=rf"^checkpoint directory {re.escape(str(ckpt))} \(config `checkpoint_dir` / "
                                         r"--checkpoint-dir\) already holds MR-fasttext-complex-order-fold-0.pt from "
                                         r"another configuration \(config hash [0-9a-f]{16}, this unit's [0-9a-f]{16}\); "
                                         r"running it would overwrite that checkpoint — use another --checkpoint-dir$"):
        run_grid(other, progress=False, log=lambda *_: None)
    assert path.read_bytes() == before and not (tmp_path / "other.jsonl").exists()
    # the same configuration re-run (its result line removed) may replace its own checkpoint
    Path(grid.results).unlink()
    assert len(run_grid(grid, progress=False, log=lambda *_: None)) == 1
    # a file there that is not a classifier checkpoint is kept too
    path.write_text("notes")
    Path(grid.results).unlink()
    with pytest.raises(ValueError, match=r"already holds MR-fasttext-complex-order-fold-0.pt, which this run would "
                                         r"overwrite, and it cannot be read as a classifier \(checkpoint .* could not "
                                         r"be read"):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert path.read_text() == "notes"


def test_wilcoxon_marks_on_a_hand_made_example():
    ours = {f"fold-{i}": 0.80 + 0.01 * i for i in range(6)}
    worse = {f"fold-{i}": 0.78 + 0.01 * i for i in range(6)}
    p, n = paired_wilcoxon(ours, worse)
    assert n == 6 and abs(p - 1 / 64) < 1e-12  # all six differences positive: exact one-sided p = 2^-6
    mixed = {f"fold-{i}": v for i, v in enumerate([0.79, 0.81, 0.80, 0.84, 0.83, 0.86])}
    p_mixed, _ = paired_wilcoxon(ours, mixed)  # diffs +.01 0 +.02 -.01 +.01 -.01
    assert p_mixed > 0.05
    assert paired_wilcoxon(ours, ours) == (1.0, 6)
    cells = {("MR", "cnn", "complex-order"): ours, ("MR", "cnn", "none"): worse, ("MR", "cnn", "tpe"): mixed,
             ("MR", "cnn", "pe"): {k: v - 0.05 for k, v in list(ours.items())[:4]}}
    marks, pvalues = significance_marks(cells, "MR", "cnn")
    assert marks == "§"  # over none; not over tpe (mixed); not over pe (4 pairs: p >= 1/16)
    assert pvalues["pe"] == (1 / 16, 4)


def test_wilcoxon_ties_equal_in_exact_arithmetic_and_zero_differences():
    # correct answers out of 1821: differences +7 +9 +5 -5 +9 +5 -- +5 and -5 tie in rank, whatever the rounding
    ours = [1542, 1590, 1598, 1478, 1413, 1559]
    theirs = [1535, 1581, 1593, 1483, 1404, 1554]
    p, n = paired_wilcoxon({f"s{i}": o / 1821 for i, o in enumerate(ours)},
                           {f"s{i}": t / 1821 for i, t in enumerate(theirs)})
    # the exact permutation p-value with ties: 4 of the 64 sign patterns reach W+ >= 19 (split ties gave 3/64)
    assert n == 6 and p == pytest.approx(4 / 64)
    # four positive differences and six zeros: the zeros are dropped, 4 pairs cannot give p < 0.05
    p, n = paired_wilcoxon({f"f{i}": 0.8 + (0.01 * (i + 1) if i < 4 else 0) for i in range(10)},
                           {f"f{i}": 0.8 for i in range(10)})
    assert n == 10 and p == pytest.approx(1 / 16)



def test_signed_rank_p_value_is_scipys_own_number_with_ties_zeros_and_without():
    """The vectorised exact permutation test gives bit for bit the p-value of SciPy's wilcoxon, which
    evaluates the same 2^n statistics one at a time; and the cases SciPy answers otherwise are passed to it."""
    import numpy as np
    from scipy.stats import wilcoxon

    from complexorder.experiments.report import signed_rank_greater

    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        n = int(rng.integers(2, 11))
        d = np.round(rng.choice([-0.02, -0.01, 0.0, 0.01, 0.02, 0.03], size=n)
                     + (rng.random(n) < 0.3) * rng.normal(0, 0.01, n), 12)
        if np.all(d == 0):
            continue
        assert signed_rank_greater(d) == wilcoxon(d, alternative="greater", zero_method="wilcox").pvalue, d
        checked += 1
    assert checked >= 30
    # no ties, no zeros (SciPy's exact distribution), n > 13 with ties (its normal approximation),
    # and a single non-zero difference among zeros
    for d in (np.array([0.01, 0.03, -0.02, 0.05, 0.04]), np.round(np.tile([0.01, 0.02, -0.01, 0.0], 4), 12),
              np.array([0.0, 0.02, 0.0])):
        assert signed_rank_greater(d) == wilcoxon(d, alternative="greater", zero_method="wilcox").pvalue

def test_report_names_a_results_file_of_another_experiment_and_notes_cells_mixing_settings(tmp_path, capsys):
    from complexorder.cli import main

    (tmp_path / "bleu.jsonl").write_text(json.dumps({"bleu": 30.1, "split": "test2016"}) + "\n")
    assert main(["report", "--results", str(tmp_path / "bleu.jsonl")]) == 2
    assert (f"results file {tmp_path / 'bleu.jsonl'}: record 1 is not a classification result (no 'dataset'; it "
            "holds bleu, split)") in capsys.readouterr().err
    # complex-order's seed 1 re-run with other epochs into the same file: the cell mixes two settings
    def record(variant, seed, epochs, acc):
        return {"dataset": "TREC", "model": "fasttext", "variant": variant, "split": f"seed-{seed}",
                "test_accuracy": acc, "seconds_per_epoch": 1.0, "finished_at": f"t{epochs}", "command": "c",
                "device": "cpu", "torch_threads": 1, "cpu": {"model": "Some CPU"},
                "config": {"split": f"seed-{seed}", "seed": seed, "embedding": variant, "settings": {"epochs": epochs}}}
    rows = [record(v, s, 1, 0.5) for v in ("none", "complex-order") for s in (1, 2, 3)] + [record("complex-order", 1, 3, 0.6)]
    (tmp_path / "mixed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["report", "--results", str(tmp_path / "mixed.jsonl"), "--out", str(tmp_path / "t.md")]) == 0
    assert "some cells of" in capsys.readouterr().err
    text = (tmp_path / "t.md").read_text()
    assert "**Cells mixing settings.**" in text and "- TREC fasttext complex-order: 2 different settings (" in text
    assert "TREC fasttext none" not in text.split("**Cells mixing settings.**")[1].split("## Targets")[0]
    assert "(cpu, 1 torch thread, Some CPU)" in text  # the run conditions come from the records
    # stop 73: the earlier record of complex-order seed 1 (1 epoch) was dropped without a word, and the cell's
    # settings looked uniform once it was gone; now the report lists it
    assert "**Units re-run with other settings.**" in text
    hidden = text.split("**Units re-run with other settings.**")[1].split("## Targets")[0]
    assert re.search(r"- TREC fasttext complex-order seed-1: shows the latest record \(settings \w{12}, test 0\.6000\); "
                     r"1 earlier record\(s\) with other settings left out \(settings \w{12}, test 0\.5000\)", hidden)
    assert "seed-2" not in hidden and "none" not in hidden
    rows = [record("complex-order", 1, 1, 0.5), record("complex-order", 1, 3, 0.6)]  # no cell mixes, a unit hides one
    (tmp_path / "rerun.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["report", "--results", str(tmp_path / "rerun.jsonl"), "--out", str(tmp_path / "r.md")]) == 0
    err = capsys.readouterr().err
    assert "mix units" not in err and ("some units of " + str(tmp_path / "r.md") + " also have earlier records "
                                       "trained with other settings, which the table leaves out") in err
    same = [record("none", 1, 1, 0.5), record("none", 1, 1, 0.5)]  # a re-run with the same settings is not listed
    (tmp_path / "same.jsonl").write_text("".join(json.dumps(r) + "\n" for r in same))
    assert main(["report", "--results", str(tmp_path / "same.jsonl"), "--out", str(tmp_path / "s.md")]) == 0
    assert "re-run with other settings" not in (tmp_path / "s.md").read_text()



def test_report_appends_its_notes_file_verbatim_and_names_a_missing_one(tmp_path, capsys):
    from complexorder.cli import main

    records = [{"dataset": "MR", "model": "cnn", "variant": v, "split": f"fold-{i}", "test_accuracy": 0.7 + 0.01 * i,
                "seconds_per_epoch": 1.0, "finished_at": "t", "command": "c"}
               for v in ("none", "complex-order") for i in range(3)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "notes.md").write_text("## Scope (hand-written)\n\n- one line, no final newline", encoding="utf-8")
    args = ["report", "--results", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "t.md"), "--figure", ""]
    assert main(args) == 0
    plain = (tmp_path / "t.md").read_text()
    assert main(args + ["--notes", str(tmp_path / "notes.md")]) == 0
    assert (tmp_path / "t.md").read_text() == plain + "\n## Scope (hand-written)\n\n- one line, no final newline\n"
    capsys.readouterr()
    (tmp_path / "t.md").unlink()
    assert main(args + ["--notes", str(tmp_path / "nosuch.md")]) == 2
    assert (f"--notes: {tmp_path / 'nosuch.md'} does not exist (expected a Markdown file to append)"
            in capsys.readouterr().err)
    assert not (tmp_path / "t.md").exists()  # refused before anything was written
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    for bad, why in ((tmp_path, "is a directory"), (tmp_path / "latin1.md", "is not UTF-8 text (byte 3)")):
        assert main(args + ["--notes", str(bad)]) == 2
        assert f"--notes: {bad} {why}" in capsys.readouterr().err and not (tmp_path / "t.md").exists()

def test_report_target_line_without_any_paired_baseline_says_so():
    # only the complex-order row measured: no "0/0 baselines (at or above all)" claim
    records = [{"dataset": "MPQA", "model": "transformer", "variant": "complex-order", "split": f"fold-{i}",
                "test_accuracy": 0.83, "seconds_per_epoch": 2.0, "finished_at": "t", "command": "c"} for i in range(3)]
    # a baseline on other folds does not pair either
    records.append({"dataset": "MPQA", "model": "transformer", "variant": "none", "split": "fold-7",
                    "test_accuracy": 0.80, "seconds_per_epoch": 2.0, "finished_at": "t", "command": "c"})
    text = render_table2(records)
    assert ("- Transformer on MPQA (n = 3): complex-order 0.830; no baseline measured on the same folds / seeds; "
            "paper complex-order 0.863: 3.3 points below.") in text
    assert "0/0" not in text and "at or above all" not in text


def test_report_writes_beside_its_results_by_default_and_creates_nothing_when_it_fails(tmp_path, monkeypatch, capsys):
    from complexorder.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["report", "--results", "nosuch.jsonl"]) == 2
    assert "nosuch.jsonl" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
    runs = tmp_path / "runs" / "mine"
    runs.mkdir(parents=True)
    (runs / "results.jsonl").write_text("".join(json.dumps(
        {"dataset": "MR", "model": "cnn", "variant": v, "split": f"fold-{i}", "test_accuracy": 0.7 + 0.01 * i,
         "seconds_per_epoch": 2.0, "finished_at": "t", "command": "c"}) + "\n" for v in ("tpe", "complex-order")
        for i in range(3)))
    assert main(["report", "--results", str(runs / "results.jsonl")]) == 0
    assert sorted(p.name for p in runs.iterdir()) == ["fig2_epoch_time.png", "results.jsonl", "table2.md"]
    assert not (tmp_path / "benchmarks").exists()
    # another results file beside a committed table2.md and Fig. 2 gets a table and figure named after it, so that
    # neither is written over (stop 93: `ablate` wrote over the committed table4.md this way)
    (runs / "table2.md").write_text("the committed table\n")
    (runs / "fig2_epoch_time.png").write_bytes(b"the committed figure")
    (runs / "extra.jsonl").write_text((runs / "results.jsonl").read_text())
    assert main(["report", "--results", str(runs / "extra.jsonl")]) == 0
    assert (runs / "extra.md").read_text().startswith("# Table 2")
    assert (runs / "extra_fig2_epoch_time.png").read_bytes().startswith(b"\x89PNG")
    assert (runs / "table2.md").read_text() == "the committed table\n"
    assert (runs / "fig2_epoch_time.png").read_bytes() == b"the committed figure"


def test_report_renders_table2_with_the_paper_beside_ours(tmp_path):
    records = []
    for variant, base in (("none", 0.70), ("complex-order", 0.75)):
        for i in range(6):
            records.append({"dataset": "MR", "model": "cnn", "variant": variant, "split": f"fold-{i}",
                            "test_accuracy": base + 0.001 * i, "seconds_per_epoch": 2.0, "finished_at": "t",
                            "command": "complexorder classify --datasets MR"})
    text = render_table2(records)
    assert "| CNN | complex-order | 0.753§ (0.825) |" in text
    assert "| CNN | none | 0.703 (0.809) |" in text
    # a cell with fewer folds says so, and the target line compares on the folds both have (fold-0 only)
    records.append({"dataset": "MR", "model": "cnn", "variant": "pe", "split": "fold-0", "test_accuracy": 0.751,
                    "seconds_per_epoch": 2.0, "finished_at": "t", "command": "c"})
    text = render_table2(records)
    assert "| CNN | pe | 0.751 [n=1] (0.816) |" in text
    assert "| MR | cnn | pe | 1 | 0.7510 | — | 0.7510 | 0.7510 |" in text  # stop 75: the std of one fold was "nan"
    assert "complex-order 0.753 ≥ 1/2 baselines (pe above it)" in text  # 0.750 < 0.751 on fold-0
    records.pop()
    assert "## Word vectors" not in text  # no unit used pretrained vectors
    records[0]["vectors"] = {"path": "v.txt", "coverage": 0.9, "sha256": "ab12"}
    records[1]["vectors"] = {"path": "v.txt", "coverage": 0.9}
    text = render_table2(records)
    assert "| v.txt | ab12 | 1 | cnn | MR |" in text and "| v.txt | not recorded | 1 | cnn | MR |" in text
    assert "2 different vector files (or unrecorded digests) are mixed in this table" in text
    records[1]["vectors"] = dict(records[0]["vectors"])
    assert "| v.txt | ab12 | 2 | cnn | MR |" in render_table2(records) and "mixed" not in render_table2(records)
    # the authors' protocol (best test epoch) beside ours, only for units that recorded the test curve
    assert "best test over epochs" not in render_table2(records)
    records[0]["history"] = [{"epoch": 1, "dev_accuracy": 0.8, "monitor_accuracy": 0.70},
                             {"epoch": 2, "dev_accuracy": 0.7, "monitor_accuracy": 0.76}]
    records[1]["history"] = [{"epoch": 1, "dev_accuracy": 0.8}]  # an older unit: left out
    text = render_table2(records)
    r0 = records[0]
    assert (f"| {r0['dataset']} | {r0['model']} | {r0['variant']} | 1 | {r0['test_accuracy']:.3f} | 0.760 | "
            f"{0.76 - r0['test_accuracy']:+.3f} |") in text
    assert text.count("| MR | cnn |") == 1 + text.split("best test over epochs")[0].count("| MR | cnn |")
    del records[0]["history"], records[1]["history"]
    results = tmp_path / "r.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    out = write_report([str(results)], tmp_path / "t.md", tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 1000
    assert "complexorder classify --datasets MR" in out and "NOT within 1.5 points" in out
    with pytest.raises(FileNotFoundError, match="results file .*missing.jsonl does not exist"):
        write_report([str(tmp_path / "missing.jsonl")], tmp_path / "x.md")
    with pytest.raises(IsADirectoryError, match=r"^results file .* is a directory; pass the JSON-lines file in it "):
        write_report([str(tmp_path)], tmp_path / "x.md")  # a run directory given for its results file
    (tmp_path / "a-file").write_text("")
    with pytest.raises(PermissionError, match=r"^--figure: cannot create directory .*a-file is a file$"):
        write_report([str(results)], tmp_path / "t2.md", tmp_path / "a-file" / "fig.png")
    assert not (tmp_path / "t2.md").exists()  # checked before anything is written
    with pytest.raises(ValueError, match=r"^--figure .*fig.jpg: unsupported image format '.jpg'; use one of .png, "
                                         r".pdf, .svg$"):
        write_report([str(results)], tmp_path / "t3.md", tmp_path / "fig.jpg")
    assert not (tmp_path / "t3.md").exists()
    write_report([str(results)], tmp_path / "t4.md", tmp_path / "fig.svg")
    assert (tmp_path / "fig.svg").read_text().lstrip().startswith("<?xml")  # the suffix's format, not PNG bytes


def test_report_compares_a_configured_variant_with_complex_order_on_dev_accuracy():
    from scipy.stats import wilcoxon
    records = []
    dev_base = [0.70, 0.71, 0.72, 0.73, 0.74, 0.75]
    dev_gain = [0.02, 0.01, -0.01, 0.03, 0.00, 0.04]  # up in 4 units, down in 1, equal in 1
    for i in range(6):
        for variant, dev, test in (("complex-order", dev_base[i], 0.80),
                                   ("complex-order, frequency lr x0.1", dev_base[i] + dev_gain[i], 0.79)):
            records.append({"dataset": "MR", "model": "cnn", "variant": variant, "split": f"fold-{i}",
                            "dev_accuracy": dev, "test_accuracy": test, "finished_at": "t", "command": "c"})
    records.append({"dataset": "MR", "model": "cnn", "variant": "complex-order, frequency lr x0.1",
                    "split": "fold-9", "dev_accuracy": 0.99, "test_accuracy": 0.99, "finished_at": "t"})  # unpaired
    text = render_table2(records)
    assert "## Configured variants against complex-order on dev accuracy" in text
    # by hand: dev means 0.7250 and 0.7400 (+1.50 points), 4 up / 1 down, test 0.79 - 0.80 = -1.00 points
    assert "| MR | cnn | complex-order, frequency lr x0.1 | 6 | 0.7250 | 0.7400 | +1.50 | 4 / 1 | -1.00 |" in text
    p = wilcoxon(dev_gain, alternative="greater", zero_method="wilcox").pvalue
    assert (f"- complex-order, frequency lr x0.1: dev accuracy higher in 1 of 1 cells and 4 of 6 units (lower in 1); "
            f"one-sided Wilcoxon over the units p = {p:.2g}.") in text
    # no configured variant (or no dev accuracies): no section
    assert "on dev accuracy" not in render_table2([r for r in records if r["variant"] == "complex-order"])


def test_names_holding_commas_are_separated_by_semicolons():
    from complexorder.experiments.classification_cli import parse_names

    valid = ["tpe", "word-sharing period", "word-sharing period, shared W"]
    assert parse_names("tpe, word-sharing period", valid, "embeddings") == ["tpe", "word-sharing period"]
    assert parse_names("word-sharing period, shared W; tpe", valid, "embeddings") == ["word-sharing period, shared W", "tpe"]
    # stop 74: one such name alone is taken whole (it was split at its comma: "unknown name 'shared W'")
    assert parse_names(" word-sharing period, shared W ", valid, "embeddings") == ["word-sharing period, shared W"]
    with pytest.raises(ValueError, match=r"--embeddings: unknown name 'shared X'"):
        parse_names("word-sharing period, shared X", valid, "embeddings")


def test_a_config_without_a_model_table_is_noted_before_training(tmp_path, capsys):
    """A grid whose config gives no [transformer] table trains the Transformer with the library defaults:
    the command says so on stderr (the mistake of table4_first_position.toml), and is silent otherwise."""
    import argparse

    from complexorder.experiments.classification_cli import run_classify

    bare = tmp_path / "bare.toml"
    bare.write_text('name = "x"\ndatasets = ["SST2-sent"]\nmodels = ["transformer"]\nseeds = [1]\n')
    full = tmp_path / "full.toml"
    full.write_text(bare.read_text() + "[transformer]\nembedding_dim = 256\npretrained = false\nepochs = 8\npatience = 2\n")
    args = argparse.Namespace(config=str(bare), datasets=None, models=None, embeddings="tpe", folds=None, seeds=None,
                              data_dir=None, vectors=None, vectors_format=None, results=str(tmp_path / "r.jsonl"),
                              checkpoint_dir=None, epochs=None, dry_run=True, no_progress=True)
    assert run_classify(args) == 0
    out = capsys.readouterr()
    assert out.out == "SST2-sent transformer tpe seed-1\n"
    # the library's Transformer defaults: ModelSettings' epochs 10, patience 3, lr 1e-3, batch 64
    assert out.err == (f"complexorder: note: {bare} has no [transformer] table, so its transformer units train with the "
                       "library defaults (epochs 10, patience 3, lr 0.001, batch 64); copy the settings of the grid it "
                       "should pair with, or extend it (extends = \"table4\"), to compare by seed\n"
                       f"complexorder: x: 1 units, 0 already in {tmp_path / 'r.jsonl'}, 1 to run\n")
    args.config = str(full)
    assert run_classify(args) == 0  # no note; the dry run's summary only
    assert capsys.readouterr().err == f"complexorder: x: 1 units, 0 already in {tmp_path / 'r.jsonl'}, 1 to run\n"


def test_a_config_that_extends_table4_inherits_its_settings_and_pairs_with_its_units(tmp_path, capsys):
    """extends = "table4": the built-in ablation grid's [transformer] settings are inherited (a table merges
    key by key), variants/seeds are replaced, name/results/checkpoint_dir are not inherited; a unit that is
    the same as one of table4's has table4's config hash (so the two pair by seed); and no note is printed."""
    import argparse

    from complexorder.config import read_extended_toml
    from complexorder.experiments.classification_cli import load_grid, run_classify

    explore = tmp_path / "explore.toml"
    explore.write_text('extends = "table4"\nname = "explore"\nseeds = [7]\nresults = "runs/explore.jsonl"\n'
                       '[[variants]]\nlabel = "complex-order"\nembedding = "complex-order"\n'
                       '[[variants]]\nlabel = "uniform"\nembedding = "complex-order"\n'
                       'options = { frequency_init = "uniform" }\n[transformer]\nlr = 3e-4\n')
    raw = read_extended_toml(explore, "ablation")
    base = read_extended_toml(find_config("table4", "ablation"), "ablation")
    assert raw["transformer"] == {**base["transformer"], "lr": 3e-4}        # merged key by key
    assert raw["datasets"] == base["datasets"] == ["SST2-sent"] and raw["seeds"] == [7]
    assert [v["label"] for v in raw["variants"]] == ["complex-order", "uniform"]   # replaced, not appended
    assert raw["name"] == "explore" and "checkpoint_dir" not in raw and "extends" not in raw

    args = argparse.Namespace(config=str(explore), datasets=None, models=None, embeddings=None, folds=None, seeds=None,
                              data_dir=None, vectors=None, vectors_format=None, results=None, checkpoint_dir=None,
                              epochs=None, dry_run=True, no_progress=True)
    grid = load_grid(args, "ablation")
    assert grid.transformer.epochs == base["transformer"]["epochs"] and grid.transformer.lr == 3e-4
    assert run_classify(args, "ablation") == 0
    out = capsys.readouterr()
    assert out.err == "complexorder: explore: 2 units, 0 already in runs/explore.jsonl, 2 to run\n"  # and no note
    assert out.out == ("SST2-sent transformer complex-order seed-7\n"
                                         "SST2-sent transformer uniform seed-7\n")
    # the same unit from the base file and from a file that only extends it: one config hash
    same = tmp_path / "same.toml"
    same.write_text('extends = "table4"\nresults = "runs/same.jsonl"\n')
    hashes = []
    for config in (str(same), "table4"):
        args.config = config
        grid = load_grid(args, "ablation")
        unit = next(u for u in runner.plan_units(grid) if u.variant.label == "complex-order")
        hashes.append(runner._hash(runner.unit_config(grid, unit)))
    assert hashes[0] == hashes[1]


def test_a_misspelt_name_in_a_config_file_names_the_file_and_the_key_or_variant(tmp_path, capsys):
    """A misspelt dataset, embedding or variant embedding in a grid file read "unknown dataset 'MRR'; valid names:
    ...", naming neither the file nor the key, while the same mistake on the command line names its flag."""
    from complexorder.cli import main

    cases = {
        "a.toml": ('extends = "table2"\ndatasets = ["MRR"]\n', "datasets: unknown name 'MRR'; valid names: MR, SUBJ, "
                   "CR, MPQA, SST2, SST2-sent, TREC"),
        "b.toml": ('extends = "table2"\nembeddings = ["tpee"]\n', "embeddings: unknown name 'tpee'; valid names: none, "
                   "pe, tpe, complex-vanilla, complex-order"),
        "c.toml": ('extends = "table4"\n[[variants]]\nlabel = "x"\nembedding = "complex-ordr"\n',
                   "variant 'x': unknown embedding 'complex-ordr'; valid names: none, pe, tpe, complex-vanilla, "
                   "complex-order"),
        "d.toml": ('extends = "table2"\nmodels = ["cnnn"]\n', "models: unknown name 'cnnn'; valid names: fasttext, cnn, "
                   "lstm, transformer"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text.replace("\n", f'\nresults = "{tmp_path / "r.jsonl"}"\n', 1))
        command = "ablate" if "table4" in text else "classify"
        assert main([command, "--config", str(path), "--dry-run", "--data-dir", str(tmp_path)]) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {path}: {message}"
    # a built-in config of the other command says which command runs it
    assert main(["classify", "--config", "table4", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: config table4 is a built-in ablation config: run it with `complexorder ablate --config "
        "table4` (give a TOML file path or one of the built-in classification configs: table2)")


def test_extends_errors_name_the_file_and_what_to_do(tmp_path):
    from complexorder.config import read_extended_toml

    no_results = tmp_path / "a.toml"
    no_results.write_text('extends = "table4"\n')
    with pytest.raises(ValueError, match=rf"^config file {no_results} extends 'table4' but gives no results file of "
                                         rf"its own; add e.g. results = \"runs/a.jsonl\" \(results are not inherited\)$"):
        read_extended_toml(no_results, "ablation")
    missing = tmp_path / "b.toml"
    missing.write_text('extends = "tabel4"\nresults = "r.jsonl"\n')
    with pytest.raises(FileNotFoundError, match=r"^config tabel4 not found: give a TOML file path \(relative to the "
                                                r"extending file\) or a built-in config: table4 \(ablation\), "
                                                r"table2 \(classification\)$"):
        read_extended_toml(missing, "ablation")
    from complexorder.config import find_config

    with pytest.raises(IsADirectoryError, match=rf"^config {tmp_path} is a directory; give a TOML file path or one of "
                                                r"the built-in ablation configs: table4$"):
        find_config(tmp_path, "ablation")  # was "not found"
    (tmp_path / "confdir").mkdir()
    into_dir = tmp_path / "d.toml"
    into_dir.write_text(f'extends = "{tmp_path / "confdir"}"\nresults = "r.jsonl"\n')
    with pytest.raises(IsADirectoryError, match=rf"^config file {into_dir}: extends '{tmp_path / 'confdir'}', which is "
                                                r"a directory, expected a TOML file or a built-in config name$"):
        read_extended_toml(into_dir, "ablation")
    from complexorder.config import read_toml

    with pytest.raises(IsADirectoryError, match=rf"^config file {tmp_path} is a directory, expected a TOML file$"):
        read_toml(tmp_path)  # lm train --config DIR said "does not exist"
    # classify and ablate run the same grid: each extends the other's built-ins
    across = tmp_path / "across.toml"
    across.write_text('extends = "table4"\nresults = "r.jsonl"\n')
    assert read_extended_toml(across, "classification")["datasets"] == ["SST2-sent"]
    across.write_text('extends = "table2"\nresults = "r.jsonl"\n')
    assert "MR" in read_extended_toml(across, "ablation")["datasets"]
    (tmp_path / "c.toml").write_text('extends = "d.toml"\nresults = "r.jsonl"\n')
    (tmp_path / "d.toml").write_text('extends = "c.toml"\nresults = "r.jsonl"\n')
    with pytest.raises(ValueError, match=r"^config file .*d.toml: extends 'c.toml' makes a cycle "
                                         r"\(c.toml -> d.toml -> c.toml\)$"):
        read_extended_toml(tmp_path / "c.toml", "ablation")
    (tmp_path / "e.toml").write_text('extends = 4\nresults = "r.jsonl"\n')
    with pytest.raises(ValueError, match=r"extends must be a config name or a path, got 4$"):
        read_extended_toml(tmp_path / "e.toml", "ablation")


def test_embeddings_names_a_label_before_an_embedding():
    from complexorder.experiments.classification import Variant
    from complexorder.experiments.classification_cli import select_variants

    table4 = [Variant("complex-order", "complex-order"),
              Variant("adding initial phases", "complex-order", {"initial_phase": True}),
              Variant("complex-vanilla", "complex-vanilla"),
              Variant("complex-vanilla, shared W", "complex-vanilla", share_weights=True),
              Variant("vanilla Transformer (TPE)", "tpe")]
    labels = lambda vs: [v.label for v in vs]
    # a label selects its row only, even where it is also an embedding name
    assert labels(select_variants(table4, "complex-order;complex-vanilla")) == ["complex-order", "complex-vanilla"]
    # an embedding name that is no label selects every row built on it
    assert labels(select_variants(table4, "tpe")) == ["vanilla Transformer (TPE)"]
    explore = [Variant("complex-order, frequency lr x0.1", "complex-order")]
    assert labels(select_variants(explore, "complex-order")) == ["complex-order, frequency lr x0.1"]
    # labels that hold commas are quoted and the separator is said, so that one name is told from the next
    with pytest.raises(ValueError, match=r"^--embeddings: unknown name 'pe'; valid names: 'complex-order'; 'adding "
                                         r"initial phases'; .*; 'complex-vanilla, shared W'; .*\(separate names "
                                         r"holding a comma with ';'\)$"):
        select_variants(table4, "pe")


@pytest.mark.parametrize("key, value, bad, expected", [
    ("frequency_lr_scale", 0.1, [-0.5, float("inf"), True], "a finite number >= 0"),
    ("embedding_lr_scale", 10.0, [-1.0, float("nan"), float("inf"), True], "a finite number >= 0"),
    # 1000 * lr 1e-3 = 1: the factor would zero every frequency
    ("frequency_decay", 10.0, [-1.0, 1000.0, True], "a number >= 0 with lr * frequency_lr_scale * frequency_decay < 1"),
])
def test_frequency_settings_are_validated_and_keep_old_hashes(tmp_path, key, value, bad, expected):
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["cnn"])
    unit = plan_units(grid)[0]
    config = unit_config(grid, unit)
    assert key not in config["settings"]  # the default leaves the hash as before
    changed = dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, **{key: value}))
    assert unit_config(changed, unit)["settings"][key] == value
    assert _hash(unit_config(changed, unit)) != _hash(config)
    for wrong in bad:
        invalid = dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, **{key: wrong}))
        with pytest.raises(ValueError, match=rf"^\[cnn\] {key} must be {re.escape(expected)}, got {wrong!r}$"):
            plan_units(invalid)


def test_frequency_decay_reaches_the_training_loop(tmp_path, monkeypatch):
    import complexorder.experiments.classification as runner

    seen, train = [], runner.train_classifier
    monkeypatch.setattr(runner, "train_classifier", lambda *a, **kw: seen.append(kw["frequency_decay"]) or train(*a, **kw))
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["complex-order"], folds=[0])
    grid = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, frequency_decay=7.0))
    (record,) = run_grid(grid, progress=False, log=lambda *_: None)
    assert seen == [7.0] and record["config"]["settings"]["frequency_decay"] == 7.0


def test_embedding_lr_scale_reaches_the_optimiser(tmp_path, monkeypatch):
    import complexorder.experiments.training as training

    seen, make = [], training.make_optimizers
    monkeypatch.setattr(training, "make_optimizers",
                        lambda *a, **kw: seen.append(a[4] if len(a) > 4 else kw.get("embedding_lr_scale")) or make(*a, **kw))
    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["complex-order"], folds=[0])
    grid = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, embedding_lr_scale=10.0))
    (record,) = run_grid(grid, progress=False, log=lambda *_: None)
    assert seen == [10.0] and record["config"]["settings"]["embedding_lr_scale"] == 10.0


def test_attention_score_reaches_the_complex_transformer_and_keeps_old_hashes(tmp_path):
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["tpe", "complex-order"])
    units = plan_units(grid)
    assert all("attention_score" not in unit_config(grid, u)["settings"] for u in units)  # default: old hashes
    real = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, attention_score="real"))
    for unit in units:
        config = unit_config(real, unit)
        assert config["settings"]["attention_score"] == "real" and _hash(config) != _hash(unit_config(grid, unit))
        model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=16)
        if unit.variant.embedding == "complex-order":
            assert model.layers[0].self_attn.score == "real"
        else:  # PyTorch's layer: its dot product is the real one already
            assert isinstance(model.layers[0], torch.nn.TransformerEncoderLayer)
    assert build_model_from_config(unit_config(grid, units[-1]), 30, 2, 16).layers[0].self_attn.score == "modulus"
    bad = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, attention_score="abs"))
    with pytest.raises(ValueError, match=r"^\[transformer\] attention_score must be one of 'modulus', 'real', "
                                         r"'bilinear', got 'abs'$"):
        plan_units(bad)


def test_readout_setting_reaches_the_transformer_keeps_old_hashes_and_is_checked(tmp_path):
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["complex-order"])
    units = plan_units(grid)
    assert all("readout" not in unit_config(grid, u)["settings"] for u in units)  # default: old hashes
    for readout in ("mean-of-modulus", "last"):
        other = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, readout=readout))
        for unit in units:
            config = unit_config(other, unit)
            assert config["settings"]["readout"] == readout and _hash(config) != _hash(unit_config(grid, unit))
            model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=16)
            assert model.readout == readout
    bad = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, readout="max"))
    with pytest.raises(ValueError, match=r"^\[transformer\] readout must be one of 'modulus-of-mean', "
                                         r"'mean-of-modulus', 'last', got 'max'$"):
        plan_units(bad)
    lstm = dataclasses.replace(grid, models=["lstm"])
    lstm = dataclasses.replace(lstm, lstm=dataclasses.replace(lstm.lstm, readout="mean-of-modulus"))
    with pytest.raises(ValueError, match=r"^\[lstm\] readout must be 'modulus-of-mean' \(only the transformer "
                                         r"chooses its read-out\), got 'mean-of-modulus'$"):
        plan_units(lstm)


def test_network_setting_reaches_the_transformer_keeps_old_hashes_and_is_checked(tmp_path):
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["tpe", "complex-order"])
    units = plan_units(grid)
    assert all("network" not in unit_config(grid, u)["settings"] for u in units)  # default "auto": old hashes
    real = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, network="real"))
    for unit in units:
        config = unit_config(real, unit)
        assert config["settings"]["network"] == "real" and _hash(config) != _hash(unit_config(grid, unit))
        model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=16)
        assert model.network == "real" and type(model.layers[0]) is torch.nn.TransformerEncoderLayer
    bad = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, network="both"))
    with pytest.raises(ValueError, match=r"^\[transformer\] network must be one of 'auto', 'complex', 'real', "
                                         r"'authors', got 'both'$"):
        plan_units(bad)
    cplx = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, network="complex"))
    with pytest.raises(ValueError, match=r"^\[transformer\] network = 'complex' needs complex embeddings; "
                                         r"variant 'tpe' uses the real embedding 'tpe'$"):
        plan_units(cplx)
    cnn = dataclasses.replace(grid, models=["cnn"], embeddings=["complex-order"])
    cnn = dataclasses.replace(cnn, cnn=dataclasses.replace(cnn.cnn, network="real"))
    with pytest.raises(ValueError, match=r"^\[cnn\] network must be 'auto' \(only the transformer has a real "
                                         r"network for complex embeddings\), got 'real'$"):
        plan_units(cnn)


def test_configured_complex_order_rows_are_tested_against_the_baselines_too():
    records = []
    for k in range(6):  # six folds: the variant beats every baseline on each one
        for variant, acc in (("none", 0.70), ("pe", 0.71), ("tpe", 0.72), ("complex-vanilla", 0.73),
                             ("complex-order", 0.69), ("complex-order, frequency lr x0.1", 0.80)):
            records.append({"dataset": "MR", "model": "cnn", "variant": variant, "split": f"fold-{k}",
                            "test_accuracy": acc + 0.002 * k, "seconds_per_epoch": 1.0, "finished_at": "t"})
    text = render_table2(records)
    assert "| CNN | complex-order, frequency lr x0.1 | 0.805§†‡* |" in text  # one-sided p = 1/64 < 0.05
    assert "| CNN | complex-order | 0.695 (0.825) |" in text
    assert "- CNN on MR (n = 6): complex-order, frequency lr x0.1 0.805 ≥ 4/4 baselines (at or above all); significant over 4/4" in text
    assert "- CNN on MR (n = 6): complex-order 0.695 ≥ 0/4 baselines" in text


@pytest.mark.parametrize("change, message", [
    ({"batch_size": 0}, r"\[cnn\] batch_size must be a positive integer, got 0"),
    ({"epochs": -3}, r"\[cnn\] epochs must be a positive integer, got -3"),
    ({"filter_sizes": ()}, r"\[cnn\] filter_sizes must be a non-empty list of positive integers, got \(\)"),
    ({"dropout": 1.0}, r"\[cnn\] dropout must be a number in \[0, 1\), got 1.0"),
    ({"lr": 0.0}, r"\[cnn\] lr must be a finite number in \(0, 3.40282e\+38\] \(Adam keeps it in float32\), got 0.0"),
    ({"patience": 0}, r"\[cnn\] patience must be a positive integer \(epochs without a better dev accuracy before "
                      r"stopping\), got 0"),
    ({"nhead": 3}, r"\[transformer\] nhead must be a divisor of embedding_dim \(8\), got 3"),
])
def test_model_settings_out_of_range_fail_before_any_training(tmp_path, monkeypatch, change, message):
    model = "transformer" if "nhead" in change else "cnn"
    grid = tiny_grid(tmp_path, models=[model])
    bad = dataclasses.replace(grid, **{model: dataclasses.replace(getattr(grid, model), **change)})
    with pytest.raises(ValueError, match=message):
        plan_units(bad)
    trained = []
    monkeypatch.setattr(runner, "build_classifier", lambda *a, **k: trained.append(1))
    with pytest.raises(ValueError, match=message):
        run_grid(bad, progress=False, log=lambda *_: None)
    assert not trained and not (tmp_path / "results.jsonl").exists()


def test_heads_are_checked_for_the_transformer_only(tmp_path):
    grid = tiny_grid(tmp_path, models=["cnn"])  # nhead 3 means nothing to a CNN of embedding_dim 8
    assert plan_units(dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, nhead=3)))
    for name in ("table2", "table4"):  # the shipped configs pass (300-d FastText/CNN/LSTM keep the default nhead 8)
        kind = "classification" if name == "table2" else "ablation"
        assert plan_units(load_config(find_config(name, kind), GridConfig))


def test_variant_options_the_runner_sets_are_refused(tmp_path):
    for key in ("sparse", "dtype"):
        variants = [Variant("mine", "complex-order", {key: False})]
        with pytest.raises(ValueError, match=rf"^variant 'mine': option\(s\) {key} are set by the runner "
                                             r"\(sparse from the model section's sparse_embeddings, the sizes, "
                                             r"padding and pretrained vectors from the data\), not per variant$"):
            plan_units(tiny_grid(tmp_path / key, variants=variants))


def test_a_variant_that_cannot_take_the_word_vectors_is_refused_before_any_unit_trains(tmp_path):
    """Stop 75: a shared-amplitude variant on FastText/CNN/LSTM with pretrained = true (table2's default) stopped the
    grid only when it reached that unit, after the earlier units had trained, with an error about amplitude_init."""
    variants = [Variant("pe", "pe"), Variant("shared", "complex-order", {"amplitude_sharing": "word"})]
    with pytest.raises(ValueError, match=re.escape(
            "variant 'shared' cannot start from the word vectors that [fasttext] pretrained = true gives it "
            "(amplitude_init must be a real tensor of shape (1, 4) (num_embeddings, embedding_dim), got (4, 4)); set "
            "pretrained = false in [fasttext], or run the variant on models without vectors") + "$"):
        plan_units(tiny_grid(tmp_path / "a", models=["fasttext", "transformer"], variants=variants))
    # without vectors, or on the Transformer (pretrained = false), the row runs from its own start
    assert plan_units(tiny_grid(tmp_path / "b", models=["fasttext"], variants=variants, vectors=None))
    assert plan_units(tiny_grid(tmp_path / "c", models=["transformer"], variants=variants))


def test_bad_vectors_format_and_variant_options_fail_at_validation(tmp_path):
    with pytest.raises(ValueError, match=r"vectors_format must be one of auto, word2vec-binary, word2vec-text, "
                                         r"glove, got 'glov'"):
        plan_units(tiny_grid(tmp_path / "a", vectors_format="glov"))
    variants = [Variant("mine", "complex-order", {"frequency_sharng": "word"})]
    with pytest.raises(ValueError, match=re.escape(
            "variant 'mine': option(s) frequency_sharng not accepted by embedding 'complex-order'; accepted: "
            "amplitude_sharing, first_position, frequency_init, frequency_jitter, frequency_sharing, fused, "
            "initial_phase, phase_dropout") + "$"):
        plan_units(tiny_grid(tmp_path / "b", variants=variants))
    # stop 75: the list offered sparse, device and dtype, which the runner sets and the next error refuses
    with pytest.raises(ValueError, match=re.escape("variant 'mine': option(s) bogus not accepted by embedding 'pe'; it "
                                                   "takes no options per variant") + "$"):
        plan_units(tiny_grid(tmp_path / "c", variants=[Variant("mine", "pe", {"bogus": 1})]))


def test_unwritable_outputs_are_named_before_any_training(tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(runner, "build_classifier", lambda *a, **k: trained.append(1))
    (tmp_path / "results-dir").mkdir()
    grid = tiny_grid(tmp_path, models=["cnn"], results=str(tmp_path / "results-dir"))
    with pytest.raises(PermissionError, match=r"^results file \(config `results` / --results\): .*results-dir is a "
                                              r"directory, expected a file path$"):
        run_grid(grid, progress=False, log=lambda *_: None)
    (tmp_path / "a-file").write_text("")
    grid = tiny_grid(tmp_path / "b", models=["cnn"], checkpoint_dir=str(tmp_path / "a-file"))
    with pytest.raises(PermissionError, match=r"^checkpoint directory \(config `checkpoint_dir` / --checkpoint-dir\): "):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert not trained


def test_results_record_the_library_versions_the_vectors_were_trained_with(tmp_path):
    import json

    from complexorder.data.vectors import provenance_path

    grid = tiny_grid(tmp_path, folds=[0], models=["fasttext"], embeddings=["none"])
    vec = tmp_path / "vec.txt"
    made = {"sha256": sha256_of(vec), "versions": {"gensim": "4.4.0", "numpy": "2.4.6", "scipy": "1.17.1"}}
    provenance_path(vec).write_text(json.dumps(made))
    (first,) = run_grid(grid, progress=False, log=lambda *_: None)
    assert first["vectors"]["trained_with"] == made["versions"]
    # the CPU and torch's kernel path are recorded too (results are bit-reproducible only on the same path)
    assert first["cpu"]["torch_capability"] == torch.backends.cpu.get_cpu_capability() and first["cpu"]["model"]
    from complexorder.nn import native
    assert first["cpu"]["embedding_kernel"] == ("native" if native.available() else "pytorch")
    # a provenance file for another file's digest is ignored, and its absence changes nothing else
    provenance_path(vec).write_text(json.dumps({**made, "sha256": "f" * 64}))
    (second,) = run_grid(dataclasses.replace(grid, results=str(tmp_path / "other.jsonl")), progress=False,
                         log=lambda *_: None)
    assert "trained_with" not in second["vectors"]
    assert {k: v for k, v in first["vectors"].items() if k != "trained_with"} == second["vectors"]
    assert first["config_hash"] == second["config_hash"] and first["test_accuracy"] == second["test_accuracy"]


def test_folds_and_seeds_options_reject_empty_or_repeated_lists_and_say_where_they_do_not_apply(capsys, tmp_path):
    from complexorder.cli import main

    for text, message in (("3-1", "--folds: '3-1' selects nothing (a range is low-high, e.g. '1-3')"),
                          ("0,2,0", "--folds: 0 given more than once in '0,2,0'")):
        assert main(["classify", "--datasets", "CR", "--folds", text, "--dry-run"]) == 2
        assert capsys.readouterr().err == f"complexorder: error: {message}\n"
    assert main(["classify", "--datasets", "TREC", "--seeds=-1", "--dry-run"]) == 2
    assert capsys.readouterr().err == ("complexorder: error: seed -1 is negative (--seeds, or the config's `seeds`: "
                                       "integers >= 0)\n")
    # found by an audit (stop 52): a reversed range beside other values was dropped silently, a huge range ran out of
    # memory (or took minutes to check for repeats), and a repeated data set or model trained each unit twice
    for option, text, message in (
            ("--folds", "3-1,5", "--folds: '3-1' selects nothing (a range is low-high, e.g. '1-3')"),
            ("--seeds", "1-100000000000", "--seeds: '1-100000000000' selects 100,000,000,000 values; at most 10,000 "
                                          "(each is a trained model)"),
            ("--datasets", "TREC,TREC", "--datasets: 'TREC' given more than once in 'TREC,TREC'"),
            ("--models", "cnn,lstm,cnn", "--models: 'cnn' given more than once in 'cnn,lstm,cnn'")):
        args = {"--datasets": "TREC", option: text}
        assert main(["classify", *[x for kv in args.items() for x in kv], "--dry-run"]) == 2
        assert capsys.readouterr().err == f"complexorder: error: {message}\n"
    results = tmp_path / "r.jsonl"
    assert main(["classify", "--datasets", "CR,TREC", "--models", "cnn", "--embeddings", "tpe", "--folds", "4",
                 "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr()
    assert out.err == ("complexorder: note: --folds applies to the CV data sets only; TREC runs seeds 1, 2, 3, 4, 5, "
                       f"6 (choose them with --seeds)\ncomplexorder: table2: 7 units, 0 already in {results}, 7 to "
                       "run\n")
    assert out.out.splitlines()[:2] == ["CR cnn tpe fold-4", "TREC cnn tpe seed-1"]
    assert main(["classify", "--datasets", "CR,TREC", "--models", "cnn", "--embeddings", "tpe", "--folds", "4",
                 "--seeds", "2", "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr()
    assert out.err == f"complexorder: table2: 2 units, 0 already in {results}, 2 to run\n"
    assert out.out.splitlines() == ["CR cnn tpe fold-4", "TREC cnn tpe seed-2"]
    # stop 81: a dry run passed outputs the run refuses at once (a results "file" that is a directory, a checkpoint
    # directory that is a file, a table that is a directory): it fails where the run would
    (tmp_path / "file").write_text("x\n")
    for argv, start in ((["classify", "--datasets", "TREC", "--results", str(tmp_path)],
                         f"complexorder: error: results file (config `results` / --results): {tmp_path} is a "
                         "directory, expected a file path"),
                        (["classify", "--datasets", "TREC", "--results", str(results), "--checkpoint-dir",
                          str(tmp_path / "file")],
                         "complexorder: error: checkpoint directory (config `checkpoint_dir` / --checkpoint-dir): "),
                        (["ablate", "--results", str(results), "--out", str(tmp_path)],
                         f"complexorder: error: --out: {tmp_path} is a directory, expected a file path")):
        assert main([*argv, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(start) and err.count("\n") == 1, err


def test_a_device_that_is_none_or_absent_is_named_before_any_data_is_read(tmp_path):
    grid = tiny_grid(tmp_path, models=["fasttext"], device="gpu", data_dir=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"^device \(config `device` / --device\): expected auto, cpu, cuda or "
                                         r"cuda:N, got 'gpu'$"):
        run_grid(grid, progress=False, log=lambda *_: None)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"^device \(config `device` / --device\) cuda:1: CUDA is not available"):
            run_grid(dataclasses.replace(grid, device="cuda:1"), progress=False, log=lambda *_: None)
    assert not (tmp_path / "results.jsonl").exists()
    with pytest.raises(ValueError, match=r"^device \(config `device` / --device\): expected auto"):
        plan_units(grid)  # what --dry-run lists: the device is checked there too


def test_a_missing_vectors_file_is_named_with_its_option_before_any_data_is_read(tmp_path):
    grid = tiny_grid(tmp_path, models=["cnn"], vectors=str(tmp_path / "nope.txt"), data_dir=str(tmp_path / "no-data"))
    with pytest.raises(FileNotFoundError, match=rf"^vectors file {tmp_path / 'nope.txt'} \(config `vectors` / "
                                                r"--vectors\) does not exist; create one with `complexorder vectors "
                                                r"train`, or pass another with --vectors$"):
        run_grid(grid, progress=False, log=lambda *_: None)
    (tmp_path / "vecdir").mkdir()
    with pytest.raises(IsADirectoryError, match=rf"^vectors file {tmp_path / 'vecdir'} \(config `vectors` / "
                                                r"--vectors\) is a directory; pass the vectors file itself"):
        run_grid(dataclasses.replace(grid, vectors=str(tmp_path / "vecdir")), progress=False, log=lambda *_: None)
    # stop 75: /dev/null "does not exist"
    with pytest.raises(ValueError, match=re.escape("vectors file /dev/null (config `vectors` / --vectors) is not a "
                                                   "regular file (a device or pipe?); pass the vectors file itself "
                                                   "(word2vec binary or text, or GloVe text)") + "$"):
        run_grid(dataclasses.replace(grid, vectors="/dev/null"), progress=False, log=lambda *_: None)
    # a grid that needs no vectors (the Transformer) does not ask for them
    transformer = tiny_grid(tmp_path / "t", models=["transformer"], vectors=str(tmp_path / "nope.txt"), folds=[0])
    assert len(run_grid(transformer, progress=False, log=lambda *_: None)) == 5


def test_n_labels_compare_folds_with_folds_and_seeds_with_seeds():
    def rows(dataset, variant, splits):
        return [{"dataset": dataset, "model": "cnn", "variant": variant, "split": s, "test_accuracy": 0.8,
                 "seconds_per_epoch": 1.0, "finished_at": "t", "command": "c"} for s in splits]

    folds, seeds = [f"fold-{i}" for i in range(10)], [f"seed-{i}" for i in range(1, 7)]
    text = render_table2(rows("MR", "none", folds) + rows("MR", "complex-order", folds[:4])
                         + rows("TREC", "none", seeds) + rows("TREC", "complex-order", seeds[:3]))
    assert "| CNN | none | 0.800 (0.809) | 0.800 (0.898) |" in text  # six seeds: TREC's full plan, no [n=6]
    assert "| CNN | complex-order | 0.800 [n=4] (0.825) | 0.800 [n=3] (0.939) |" in text


def test_an_empty_name_list_and_a_results_line_that_is_not_an_object_are_errors_naming_them(tmp_path, capsys):
    """`--datasets ''` used to run every data set of the config (and `--datasets ,` none, silently); a results line
    holding a JSON list or number was "sequence item 0: expected str instance" / "argument of type 'int' is not
    iterable", naming no file."""
    from complexorder.cli import main

    for option, text in (("--datasets", ""), ("--datasets", ","), ("--models", " "), ("--embeddings", "")):
        assert main(["classify", option, text, "--dry-run"]) == 2
        assert capsys.readouterr().err.startswith(f"complexorder: error: {option}: {text!r} names nothing; valid names: ")
    assert main(["download", "--datasets", ""]) == 2
    assert capsys.readouterr().err.startswith("complexorder: error: --datasets: '' names nothing; valid names: MR, ")
    for line, kind in (("[1, 2]", "list"), ("5", "int")):
        (tmp_path / "odd.jsonl").write_text(line + "\n")
        assert main(["report", "--results", str(tmp_path / "odd.jsonl"), "--out", str(tmp_path / "t.md")]) == 2
        assert capsys.readouterr().err.strip() == (
            f"complexorder: error: results file {tmp_path / 'odd.jsonl'}: record 1 is not a classification result "
            f"(a JSON {kind}, not an object); pass the JSON-lines file that `complexorder classify` or `ablate` wrote")
        grid = tiny_grid(tmp_path / kind, models=["fasttext"], results=str(tmp_path / "odd.jsonl"))
        with pytest.raises(ValueError, match=rf"^results file .*odd.jsonl: record 1 is a JSON {kind}, not an object; "):
            run_grid(grid, progress=False, log=lambda *_: None)


def test_a_foreign_results_file_missing_data_and_vectors_of_another_dimension_fail_before_any_training(tmp_path,
                                                                                                         monkeypatch):
    """Found by an audit (stop 44): `--results notes.md` trained and appended to the notes; a missing data set or
    vectors of the wrong dimension stopped the grid only when its first unit came, after the others had trained."""
    trained = []
    monkeypatch.setattr(runner, "build_classifier", lambda *a, **k: trained.append(1))
    grid = tiny_grid(tmp_path, models=["cnn"])
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n\nsome text\nmore text\n")
    with pytest.raises(ValueError, match=rf"^results file {notes} \(--results\): 3 of its 3 lines are not JSON \(nor "
                                         r"records cut short by an interrupted write\); it is not a file that "
                                         r"`complexorder classify` wrote — pass a new file, or one that `classify` "
                                         r"wrote$"):
        run_grid(dataclasses.replace(grid, results=str(notes)), progress=False, log=lambda *_: None)
    other = tmp_path / "other.jsonl"
    other.write_text('{"step": 1, "loss": 2.5}\n')
    with pytest.raises(ValueError, match=rf"^results file {other} \(--results\): record 1 is not a classification "
                                         r"result \(it holds loss, step\)"):
        run_grid(dataclasses.replace(grid, results=str(other)), progress=False, log=lambda *_: None)
    with pytest.raises(FileNotFoundError, match=r"^missing data file custrev.neg \(expected at .*CR"):
        run_grid(dataclasses.replace(grid, datasets=["MR", "CR"]), progress=False, log=lambda *_: None)
    wide = dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, embedding_dim=16, nhead=2))
    with pytest.raises(ValueError, match=rf"^vectors file {grid.vectors} \(--vectors\) has dimension 8, but the "
                                         r"pretrained models to run have embedding_dim 16"):
        run_grid(wide, progress=False, log=lambda *_: None)
    # stop 78 (an audit): a header that says 16 over rows of 8 was "has dimension 16", as if the rows held 16
    lines = Path(grid.vectors).read_text().splitlines()
    lines[0] = lines[0].split()[0] + " 16"
    Path(grid.vectors).write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"^vectors file {grid.vectors} \(--vectors\) is not valid: its header "
                                         r"declares dimension 16 but its first row, line 2 \(word '\w+'\), holds 8 "
                                         r"values; correct the header's second number \(or the file is damaged\)$"):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert not trained and not (tmp_path / "results.jsonl").exists()
    assert notes.read_text() == "# my notes\n\nsome text\nmore text\n"


def test_vectors_read_in_the_wrong_format_say_which_format_the_file_looks_like(tmp_path):
    from complexorder.data.vectors import load_word_vectors, vectors_dimension

    vectors = write_tiny_data(tmp_path)  # word2vec text, dimension 8
    assert vectors_dimension(vectors) == 8 and vectors_dimension(vectors, "word2vec-text") == 8
    with pytest.raises(ValueError, match=rf"^vectors file {vectors} is not valid glove vectors: .*; it looks like "
                                         r"word2vec-text: pass --vectors-format word2vec-text \(or auto\)$"):
        load_word_vectors(vectors, "glove")
    with pytest.raises(ValueError, match=r"not valid glove vectors: its first line is not '<word> <v1> <v2> \.\.\.'; "
                                         r"it looks like word2vec-text"):
        vectors_dimension(vectors, "glove")
    # stop 75: a text file read as word2vec-binary loaded without a word (words '010', '5', vectors near 1e-11)
    with pytest.raises(ValueError, match=re.escape(f"vectors file {vectors} is not valid word2vec-binary vectors: its "
                                                   f"vector rows are text; it looks like word2vec-text: pass "
                                                   f"--vectors-format word2vec-text (or auto)") + "$"):
        load_word_vectors(vectors, "word2vec-binary")
    binary = tmp_path / "vec.bin"
    load_word_vectors(vectors).save_word2vec_format(str(binary), binary=True)
    assert load_word_vectors(binary, "word2vec-binary").vector_size == 8  # a binary file still loads
    glove = tmp_path / "glove.txt"
    glove.write_text("".join(line + "\n" for line in vectors.read_text().splitlines()[1:]))
    assert vectors_dimension(glove) == 8


def test_epochs_option_overrides_every_model_and_must_be_positive(capsys):
    from complexorder.cli import build_parser, main
    from complexorder.experiments.classification_cli import load_grid

    argv = ["classify", "--epochs", "3", "--datasets", "MR"]
    grid = load_grid(build_parser(argv).parse_args(argv))
    assert [getattr(grid, m).epochs for m in ("fasttext", "cnn", "lstm", "transformer")] == [3, 3, 3, 3]
    default = load_grid(build_parser(["classify"]).parse_args(["classify"]))
    assert [getattr(default, m).epochs for m in ("fasttext", "cnn", "lstm", "transformer")] == [20, 15, 15, 15]
    assert main(["classify", "--epochs", "0", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == "complexorder: error: --epochs must be positive, got 0"


def test_report_names_a_figure_data_set_the_results_do_not_hold_and_an_empty_results_file(tmp_path):
    from complexorder.experiments.report import load_results, plot_epoch_times, write_report

    committed = Path(__file__).resolve().parents[1] / "benchmarks/results/table2_subj_vectors_2d457d48.jsonl"
    records = load_results([committed])
    with pytest.raises(ValueError, match=r"^no results for data set 'TREC' to plot; the results hold SUBJ$"):
        plot_epoch_times(records, tmp_path / "f.png", dataset="TREC")
    assert not (tmp_path / "f.png").exists()
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match=rf"^no results in {re.escape(str(tmp_path / 'empty.jsonl'))}$"):
        write_report([tmp_path / "empty.jsonl"], tmp_path / "t.md")
    assert not (tmp_path / "t.md").exists()


def test_a_grid_config_with_repeated_or_empty_lists_is_refused_before_any_training(tmp_path, monkeypatch):
    """Found by an audit (stop 52): `seeds = [1, 1]` trained seed 1 twice and recorded it twice; `seeds = []` with
    fixed-split data sets ran 0 units and exited 0."""
    monkeypatch.setattr(runner, "build_classifier", lambda *a, **k: pytest.fail("nothing may train"))
    grid = tiny_grid(tmp_path)
    for key, value, shown in (("seeds", [1, 1], "1"), ("folds", [0, 3, 0], "0"), ("datasets", ["MR", "MR"], "'MR'"),
                              ("models", ["cnn", "cnn"], "'cnn'")):
        with pytest.raises(ValueError, match=rf"^{key} lists {shown} more than once \(config `{key}` or --{key}\); "
                                             r"each unit would train and be recorded twice$"):
            run_grid(dataclasses.replace(grid, **{key: value}), progress=False, log=lambda *_: None)
    with pytest.raises(ValueError, match=r"^no seeds selected for the fixed-split data set TREC \(config `seeds` is "
                                         r"empty\); list some, e.g. --seeds 1-6$"):
        run_grid(dataclasses.replace(grid, datasets=["TREC"], seeds=[]), progress=False, log=lambda *_: None)
    with pytest.raises(ValueError, match=r"^fold 12 is outside 0..9 \(--folds, or the config's `folds`\)$"):
        run_grid(dataclasses.replace(grid, folds=[0, 12]), progress=False, log=lambda *_: None)
    assert not (tmp_path / "results.jsonl").exists()


def test_position_order_setting_reaches_the_transformer_keeps_old_hashes_and_is_checked(tmp_path):
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["complex-order"])
    units = plan_units(grid)
    assert all("position_order" not in unit_config(grid, u)["settings"] for u in units)  # default: old hashes
    other = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, position_order="from-end"))
    for unit in units:
        config = unit_config(other, unit)
        assert config["settings"]["position_order"] == "from-end" and _hash(config) != _hash(unit_config(grid, unit))
        model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=16)
        assert model.position_order == "from-end"
    bad = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, position_order="reversed"))
    with pytest.raises(ValueError, match=r"^\[transformer\] position_order must be one of 'forward', 'from-end', "
                                         r"got 'reversed'$"):
        plan_units(bad)
    cnn = dataclasses.replace(grid, models=["cnn"])
    cnn = dataclasses.replace(cnn, cnn=dataclasses.replace(cnn.cnn, position_order="from-end"))
    with pytest.raises(ValueError, match=r"^\[cnn\] position_order must be 'forward' \(only the transformer chooses "
                                         r"its positions\), got 'from-end'$"):
        plan_units(cnn)


def test_fixed_length_setting_builds_the_unmasked_model_keeps_old_hashes_and_is_checked(tmp_path):
    """[transformer] fixed_length: the embedding gets no padding_idx (a learned <pad>), the model pads to the length
    and trains end to end; 0 (the default) leaves old hashes; a data set with a longer sentence is refused before
    anything trains, naming the setting, the data set and its longest sentence."""
    from complexorder.data.classification import load_dataset
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["complex-order"], folds=[0])
    (unit,) = plan_units(grid)
    assert "fixed_length" not in unit_config(grid, unit)["settings"]  # the default leaves the hashes as they were
    longest = load_dataset("MR", tmp_path).max_length()
    other = dataclasses.replace(grid, transformer=dataclasses.replace(
        grid.transformer, fixed_length=longest + 2, readout="last", position_order="from-end"))
    config = unit_config(other, unit)
    assert config["settings"]["fixed_length"] == longest + 2 and _hash(config) != _hash(unit_config(grid, unit))
    model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=4)
    assert model.fixed_length == longest + 2 and model.embedding.padding_idx is None
    pe = build_model_from_config({**config, "embedding": "pe"}, vocab_size=30, num_classes=2, max_positions=4)
    assert pe.embedding.max_positions == longest + 2  # position tables cover every slot
    (record,) = run_grid(other, progress=False, log=lambda *_: None)
    assert record["config"]["settings"]["fixed_length"] == longest + 2 and 0 <= record["test_accuracy"] <= 1
    short = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, fixed_length=longest - 1),
                                results=str(tmp_path / "short.jsonl"))
    with pytest.raises(ValueError, match=rf"^\[transformer\] fixed_length {longest - 1} is shorter than the longest "
                                         rf"sentence of MR \({longest} tokens\); set it to at least that \(sentences "
                                         r"are never truncated\)$"):
        run_grid(short, progress=False, log=lambda *_: None)
    assert not (tmp_path / "short.jsonl").exists()
    for bad in (-1, 2.5):
        wrong = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, fixed_length=bad))
        with pytest.raises(ValueError, match=rf"^\[transformer\] fixed_length must be an integer >= 0 \(0: off; L: "
                                             rf"every sentence padded to L tokens\), got {bad!r}$"):
            plan_units(wrong)
    cnn = dataclasses.replace(grid, models=["cnn"])
    cnn = dataclasses.replace(cnn, cnn=dataclasses.replace(cnn.cnn, fixed_length=40))
    with pytest.raises(ValueError, match=r"^\[cnn\] fixed_length must be 0 \(only the transformer pads to a fixed "
                                         r"length\), got 40$"):
        plan_units(cnn)


def test_loss_setting_reaches_the_training_loop_keeps_old_hashes_and_is_checked(tmp_path, monkeypatch):
    import complexorder.experiments.classification as runner
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["complex-order"], folds=[0])
    (unit,) = plan_units(grid)
    assert "loss" not in unit_config(grid, unit)["settings"]  # the default leaves the hashes as they were
    other = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, loss="cross-entropy-of-probabilities"))
    assert _hash(unit_config(other, unit)) != _hash(unit_config(grid, unit))
    seen, train = [], runner.train_classifier
    monkeypatch.setattr(runner, "train_classifier", lambda *a, **kw: seen.append(kw["loss"]) or train(*a, **kw))
    (record,) = run_grid(other, progress=False, log=lambda *_: None)
    assert seen == ["cross-entropy-of-probabilities"]
    assert record["config"]["settings"]["loss"] == "cross-entropy-of-probabilities"
    bad = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, loss="nll"))
    with pytest.raises(ValueError, match=r"^\[fasttext\] loss must be one of 'cross-entropy', "
                                         r"'cross-entropy-of-probabilities', got 'nll'$"):
        plan_units(bad)


def test_a_model_too_large_for_memory_is_a_one_line_error_naming_its_settings(tmp_path, monkeypatch):
    # a real failed allocation of torch's (2**60 bytes exceeds any address space, so it fails on every machine),
    # raised where the runner builds the model, as an embedding_dim of millions does
    def too_large(*args, **kwargs):
        return torch.empty(2 ** 60, dtype=torch.uint8)

    monkeypatch.setattr(runner, "build_model_from_config", too_large)
    grid = tiny_grid(tmp_path, folds=[0], models=["lstm"], embeddings=["complex-order"])
    with pytest.raises(MemoryError, match=r"^\[lstm\] embedding_dim = 8 \(vocabulary \d+ words\): the model does not "
                                          r"fit in memory \(one tensor of 1\.2 EB could not be allocated\); "
                                          r"lower these sizes in the config$"):
        run_grid(grid, progress=False, log=lambda *_: None)
    assert not (tmp_path / "results.jsonl").exists() or not read_jsonl(tmp_path / "results.jsonl")


def test_share_weights_on_a_real_embedding_or_network_fails_before_any_training(tmp_path, monkeypatch):
    # stop 73: FastText, CNN and LSTM silently ignored it (and recorded share_weights: true), the Transformer
    # refused it only when the grid reached it, after the other models' units had trained
    trained = []
    monkeypatch.setattr(runner, "build_classifier", lambda *a, **k: trained.append(1))
    variants = [Variant("x", "none"), Variant("y", "pe", share_weights=True)]
    for model in ("fasttext", "transformer"):
        with pytest.raises(ValueError, match=rf"^\[{model}\] variant 'y' sets share_weights, but it uses the real "
                                             r"embedding 'pe': real layers have no real/imaginary weights to share$"):
            plan_units(tiny_grid(tmp_path / model, models=[model], variants=variants))
    # a model-wide share_weights applies to the complex rows; the real rows are recorded with share_weights false
    grid = tiny_grid(tmp_path / "wide", models=["cnn"], embeddings=["complex-order", "tpe"],
                     cnn=ModelSettings(embedding_dim=8, filters=4, share_weights=True))
    shares = {u.variant.label: runner.unit_config(grid, u)["share_weights"] for u in plan_units(grid)}
    assert shares == {"complex-order": True, "tpe": False}
    real_network = dataclasses.replace(tiny_grid(tmp_path / "net").transformer, network="real")
    grid = tiny_grid(tmp_path / "net2", models=["transformer"], transformer=real_network,
                     variants=[Variant("shared", "complex-order", share_weights=True)])
    with pytest.raises(ValueError, match=r"^\[transformer\] variant 'shared' sets share_weights, but it runs in "
                                         r"network = 'real', whose real layers have no real/imaginary weights to share$"):
        plan_units(grid)
    assert not trained
    # complex embeddings in complex layers keep it, model-wide or per variant
    assert len(plan_units(tiny_grid(tmp_path / "ok", models=["cnn"], embeddings=["complex-order"],
                                    cnn=ModelSettings(embedding_dim=8, filters=4, share_weights=True)))) == 2


def test_empty_selections_and_a_variant_without_a_label_are_errors(tmp_path):
    # stop 73: `datasets = []` or `models = []` planned 0 units and exited 0; a variant without `label` said
    # "Variant.__init__() missing 1 required positional argument: 'label'"
    from complexorder.config import config_from_dict

    for key, listed in (("datasets", "MR, SUBJ, CR"), ("models", "fasttext, cnn, lstm, transformer")):
        with pytest.raises(ValueError, match=rf"^{key} is empty \(config `{key}` / --{key}\); list at least one of "
                                             rf"{listed}"):
            plan_units(tiny_grid(tmp_path / key, **{key: []}))
    with pytest.raises(ValueError, match=r"^embeddings is empty \(config `embeddings` / --embeddings\) and no variants "
                                         r"are given; list at least one of none, pe, tpe, complex-vanilla, complex-order$"):
        plan_units(tiny_grid(tmp_path / "e", embeddings=[]))
    assert len(plan_units(tiny_grid(tmp_path / "v", embeddings=[], variants=[Variant("a", "none")]))) == 8  # 4 x 2
    with pytest.raises(ValueError, match=r"^grid.toml.variants\[0\]: missing key 'label'; it is required \(keys: "
                                         r"label, embedding, options, share_weights\)$"):
        config_from_dict({"embedding": "none"}, Variant, where="grid.toml.variants[0]")


def test_a_config_without_a_name_is_named_after_its_file(tmp_path):
    """Stop 75: a config file of one's own without `name` ran, and recorded its results, as grid "table2"."""
    from complexorder.cli import build_parser
    from complexorder.experiments.classification_cli import load_grid

    (tmp_path / "my_grid.toml").write_text('datasets = ["MR"]\nresults = "r.jsonl"\n')
    (tmp_path / "named.toml").write_text('name = "mine"\nextends = "my_grid.toml"\nresults = "s.jsonl"\n')
    (tmp_path / "child.toml").write_text('extends = "named.toml"\nresults = "t.jsonl"\n')  # name is not inherited
    for stem, name in (("my_grid", "my_grid"), ("named", "mine"), ("child", "child")):
        argv = ["classify", "--config", str(tmp_path / f"{stem}.toml")]
        assert load_grid(build_parser(argv).parse_args(argv)).name == name
    argv = ["classify"]
    assert load_grid(build_parser(argv).parse_args(argv)).name == "table2"  # the built-in default keeps its own


def test_a_dry_run_says_how_many_units_its_results_file_holds_already(capsys):
    """`--dry-run` listed every unit without the count the run itself logs first; on the committed Table 4 records
    (130 units: 13 rows x 10 seeds) it now says that none is left to run, as the run would, without writing."""
    from complexorder.cli import main

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "table4.jsonl"
    before = results.read_bytes()
    assert main(["ablate", "--seeds", "1-10", "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr()
    assert out.err == f"complexorder: table4: 130 units, 130 already in {results}, 0 to run\n"
    assert len(out.out.splitlines()) == 130 and results.read_bytes() == before
    assert all(line.endswith(" (finished)") for line in out.out.splitlines())  # stop 78: they were not marked
    assert main(["ablate", "--seeds", "1-11", "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr()
    assert out.err == f"complexorder: table4: 143 units, 130 already in {results}, 13 to run\n"
    assert sum(line.endswith(" (finished)") for line in out.out.splitlines()) == 130
    assert "SST2-sent transformer complex-order seed-11" in out.out.splitlines()


def test_lstm_layers_and_directions_reach_the_model_keep_old_hashes_and_are_checked(tmp_path):
    """[lstm] num_layers was recorded but never reached the LSTM (one layer whatever it said); bidirectional is new."""
    from complexorder.experiments.classification import _hash, plan_units, unit_config

    grid = tiny_grid(tmp_path, models=["lstm"], embeddings=["tpe", "complex-order"])
    units = plan_units(grid)
    assert all("bidirectional" not in unit_config(grid, u)["settings"] for u in units)  # default: old hashes
    deep = dataclasses.replace(grid, lstm=dataclasses.replace(grid.lstm, num_layers=2, bidirectional=True))
    two = dataclasses.replace(grid, lstm=dataclasses.replace(grid.lstm, num_layers=2))
    for unit in units:  # a record of the old code, which trained one layer for num_layers = 2, is not recognised
        config = unit_config(two, unit)
        old = {k: v for k, v in config.items() if k != "lstm_num_layers"}
        assert config["lstm_num_layers"] == 2 and _hash(config) != _hash(old)
    for unit in units:
        config = unit_config(deep, unit)
        assert config["settings"]["bidirectional"] is True and _hash(config) != _hash(unit_config(grid, unit))
        model = build_model_from_config(config, vocab_size=30, num_classes=2, max_positions=16)
        assert (model.lstm.num_layers, model.lstm.bidirectional, model.output.in_features) == (2, True, 16)
    for model_name in ("cnn", "transformer"):
        bad = dataclasses.replace(grid, models=[model_name])
        bad = dataclasses.replace(bad, **{model_name: dataclasses.replace(getattr(bad, model_name), bidirectional=True)})
        with pytest.raises(ValueError, match=rf"^\[{model_name}\] bidirectional must be false \(only the lstm reads "
                                             r"both ways\), got True$"):
            plan_units(bad)
    flat = dataclasses.replace(grid, models=["fasttext"], fasttext=dataclasses.replace(grid.fasttext, num_layers=2))
    with pytest.raises(ValueError, match=r"^\[fasttext\] num_layers must be 1 \(only the lstm and the transformer "
                                         r"stack layers\), got 2$"):
        plan_units(flat)


def test_finished_units_of_other_data_are_never_taken_for_this_datas(tmp_path):
    """Stop 78 (an audit): a grid run on a cut of the data for a trial, then pointed at the real data with the same
    results file, reported the trial's units as the real data's ('1 already in ..., 0 to run'): a unit's identity
    holds no data. Records now carry the data files' digest, and a mismatch is an error before anything trains."""
    import hashlib

    from complexorder.data.classification import dataset_digest

    grid = tiny_grid(tmp_path, models=["fasttext"], embeddings=["none"], folds=[0])
    first = run_grid(grid, progress=False, log=lambda *_: None)
    folder = tmp_path / "classification" / "MR"
    expected = hashlib.sha256("".join(f"{f}:{sha256_of(folder / f)}\n"
                                      for f in ("rt-polarity.neg", "rt-polarity.pos")).encode()).hexdigest()
    assert first[0]["data_sha256"] == expected == dataset_digest("MR", tmp_path)
    other = tmp_path / "other"
    (other / "classification").mkdir(parents=True)
    shutil.copytree(folder, other / "classification" / "MR")
    assert run_grid(dataclasses.replace(grid, data_dir=str(other)), progress=False, log=lambda *_: None) == []
    with open(other / "classification" / "MR" / "rt-polarity.pos", "a") as fh:
        fh.write("good fun film good\n")
    now = dataset_digest("MR", other)
    message = (rf"^{re.escape(grid.results)} holds 1 finished unit\(s\) of MR trained on other data \(sha256 "
               rf"{expected[:12]}…; the files in {re.escape(str(other / 'classification' / 'MR'))} give {now[:12]}…\): "
               r"they would be taken as this data's; give another results file \(--results\), or remove their lines "
               r"to re-run them$")
    with pytest.raises(ValueError, match=message):
        run_grid(dataclasses.replace(grid, data_dir=str(other)), progress=False, log=lambda *_: None)
    with pytest.raises(ValueError, match=message):  # a dry run says what the run would (it said "0 to run")
        runner.dry_run_summary(dataclasses.replace(grid, data_dir=str(other)), plan_units(grid))
    # records written before stop 78 carry no digest: taken as they are
    lines = [json.loads(line) for line in open(grid.results)]
    for r in lines:
        del r["data_sha256"]
    with open(grid.results, "w") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in lines))
    assert run_grid(dataclasses.replace(grid, data_dir=str(other)), progress=False, log=lambda *_: None) == []


def test_load_grid_config_is_the_python_api_of_classify_options():
    # the grid `complexorder classify --config table2 --datasets TREC --models cnn --embeddings complex-order
    # --seeds 1 --epochs 2` runs, built in Python
    import numpy as np

    from complexorder.experiments.classification import load_grid_config, plan_units

    grid = load_grid_config("table2", datasets=["TREC"], models=["cnn"], embeddings=["complex-order"], seeds=(1,),
                            epochs=np.int64(2), data_dir="somewhere")
    assert [(u.dataset, u.model, u.variant.label, u.split) for u in plan_units(grid)] == [
        ("TREC", "cnn", "complex-order", "seed-1")]
    assert grid.seeds == [1] and grid.data_dir == "somewhere" and grid.name == "table2"
    assert {getattr(grid, m).epochs for m in ("fasttext", "cnn", "lstm", "transformer")} == {2}
    assert type(grid.cnn.epochs) is int

    # a label selects its row only; an embedding name that is no label selects every row built on it
    table4 = load_grid_config("table4", "ablation", embeddings=["complex-order"])
    assert [v.label for v in table4.variants] == ["complex-order"]
    with pytest.raises(ValueError, match=r"^embeddings: unknown name 'complex-ordr'; valid names: 'complex-order'; "):
        load_grid_config("table4", "ablation", embeddings=["complex-ordr"])
    with pytest.raises(TypeError, match=r"^load_grid_config: unknown field 'dataset'; valid fields: checkpoint_dir, "):
        load_grid_config("table2", dataset=["TREC"])
    with pytest.raises(ValueError, match=r"^epochs must be a positive integer, got 0$"):
        load_grid_config("table2", epochs=0)
    with pytest.raises(ValueError, match=r"^embeddings must be a list of names, got 'tpe'$"):
        load_grid_config("table2", embeddings="tpe")
    with pytest.raises(ValueError, match=r"unknown dataset 'TRECC'"):
        load_grid_config("table2", datasets=["TRECC"])
