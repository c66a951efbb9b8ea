"""benchmarks/classification/order_use.py: test accuracy with every word but the last shuffled.

The diagnostic rests on one property of the authors' classifier (last-slot readout): without positions, reordering the
slots before the last cannot change its prediction, while with complex-order positions it can. Both are checked here
on untrained models, with the invariance to float precision."""

import random
import re
from pathlib import Path

import pytest
import torch

from complexorder.checkpoint import save_checkpoint
from complexorder.data.batching import EncodedDataset
from complexorder.data.classification import load_dataset, make_split
from complexorder.data.vocab import Vocabulary
from complexorder.experiments.classification import build_model_from_config
from complexorder.experiments.training import cpu_state_dict, evaluate_accuracy
from conftest import load_benchmark

SETTINGS = {"embedding_dim": 16, "pretrained": False, "batch_size": 64, "lr": 1e-4, "weight_decay": 0.0,
            "dropout": 0.1, "epochs": 1, "patience": 3, "hidden": 16, "filters": 8, "filter_sizes": [3, 4, 5],
            "nhead": 2, "dim_feedforward": 32, "num_layers": 2, "share_weights": False, "sparse_embeddings": True,
            "embedding_lr_scale": 10.0, "attention_score": "bilinear", "network": "authors", "readout": "last",
            "position_order": "from-end", "loss": "cross-entropy-of-probabilities", "fixed_length": 53}


def _script():
    return load_benchmark("classification/order_use.py", "order_use")


def _config(embedding, options=None, seed=1):
    return {"dataset": "SST2-sent", "model": "transformer", "split": f"seed-{seed}", "seed": seed,
            "embedding": embedding, "embedding_options": dict(options or {}), "share_weights": False,
            "settings": dict(SETTINGS), "vectors": None}


def _model(embedding, options=None, vocab_size=40):
    torch.manual_seed(0)
    return build_model_from_config(_config(embedding, options), vocab_size, 2, 53).eval()


def _sentences(n=12, vocab_size=40):
    g = torch.Generator().manual_seed(3)
    return [torch.randint(2, vocab_size, (int(torch.randint(4, 20, (1,), generator=g)),), generator=g)
            for _ in range(n)]


def test_shuffle_keeps_the_last_word_and_the_words():
    shuffle = _script().shuffle_before_last
    ids = torch.arange(10, 30)
    out = shuffle(ids, random.Random(5))
    assert out[-1] == 29 and sorted(out.tolist()) == ids.tolist() and out.tolist() != ids.tolist()
    assert shuffle(ids, random.Random(5)).tolist() == out.tolist()  # one seed, one order
    assert shuffle(torch.tensor([7]), random.Random(5)).tolist() == [7]


@pytest.mark.parametrize("embedding, options", [("complex-vanilla", {}),
                                                ("complex-order", {"frequency_init": "zeros"}),  # every phase 0
                                                ("complex-order", {"frequency_init": "zeros",
                                                                   "frequency_sharing": "dimension"})])
def test_a_row_without_positions_cannot_tell_the_orders_apart(embedding, options):
    shuffle, model = _script().shuffle_before_last, _model(embedding, options)
    reordered = 0
    with torch.no_grad():
        for k, s in enumerate(_sentences()):
            shuffled = shuffle(s, random.Random(k))
            reordered += shuffled.tolist() != s.tolist()
            torch.testing.assert_close(model(shuffled.unsqueeze(0)), model(s.unsqueeze(0)), rtol=1e-5, atol=1e-6)
    assert reordered >= 10


@pytest.mark.parametrize("embedding, options", [("complex-order", {}),
                                                ("complex-order", {"frequency_sharing": "dimension"})])
def test_a_row_with_positions_can(embedding, options):
    shuffle, model = _script().shuffle_before_last, _model(embedding, options)
    with torch.no_grad():
        moved = [float((model(shuffle(s, random.Random(k)).unsqueeze(0)) - model(s.unsqueeze(0))).abs().max())
                 for k, s in enumerate(_sentences())]
    assert max(moved) > 1e-3


def test_order_drop_is_zero_without_positions_and_counts_each_order():
    model = _model("complex-vanilla")
    seqs = _sentences(30)
    data = EncodedDataset(seqs, torch.tensor([int(s.sum()) % 2 for s in seqs]))
    base, shuffled = _script().order_drop(model, data, orders=3, seed=11)
    assert base == evaluate_accuracy(model, data) and shuffled == [base] * 3


def _saved(tmp_path, shared_data, recorded=None):
    data = load_dataset("SST2-sent", shared_data)
    split = make_split(data, "seed-1")
    vocab = Vocabulary.from_texts(split.train[0])
    torch.manual_seed(0)
    config = _config("complex-order", {"phase_dropout": 0.1})
    model = build_model_from_config(config, len(vocab), 2, 53).eval()
    test = EncodedDataset([vocab.encode(t) for t in split.test[0]], torch.tensor(split.test[1]))
    acc = evaluate_accuracy(model, test)
    path = tmp_path / "SST2-sent-transformer-complex-order-seed-1.pt"
    save_checkpoint(path, "classifier", cpu_state_dict(model), config, vocab=vocab.itos,
                    label_names=list(data.label_names), max_positions=53,
                    test_accuracy=acc if recorded is None else recorded)
    return path, acc


def test_the_script_on_the_real_test_set(tmp_path, shared_data, capsys):
    path, acc = _saved(tmp_path, shared_data)
    out = tmp_path / "order.md"
    assert _script().main(["--data-dir", str(shared_data), "--orders", "2", "--out", str(out), str(path)]) == 0
    row = next(line for line in out.read_text().splitlines() if line.startswith(f"| {path.name} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["transformer, authors network, last readout", "1", f"{acc:.4f}", f"{acc:.4f}"]
    text = out.read_text()
    assert "| SST2-sent-transformer-complex-order | 1 |" in text
    command = f"python benchmarks/classification/order_use.py --data-dir {shared_data} --orders 2 --out {out} {path}"
    assert f"    {command}\n" in text


def test_a_checkpoint_whose_recorded_accuracy_differs_is_refused(tmp_path, shared_data):
    path, acc = _saved(tmp_path, shared_data, recorded=0.25)
    with pytest.raises(SystemExit, match=r"test accuracy in order .*, but it recorded 0\.2500; the test set or the "
                                         r"model differs from the run's"):
        _script().main(["--data-dir", str(shared_data), "--orders", "1", str(path)])


def test_orders_must_be_positive(tmp_path):
    with pytest.raises(SystemExit, match="--orders must be a positive integer, got 0"):
        _script().main(["--orders", "0", str(tmp_path / "x.pt")])


def test_a_missing_or_foreign_checkpoint_is_named(tmp_path):
    with pytest.raises(SystemExit, match=r"^checkpoint .*nope\.pt does not exist"):
        _script().main([str(tmp_path / "nope.pt")])
    foreign = tmp_path / "lm.pt"
    save_checkpoint(foreign, "lm", {}, {})
    with pytest.raises(SystemExit, match=r"^checkpoint .*lm\.pt holds a 'lm' model, expected 'classifier'$"):
        _script().main([str(foreign)])


# every committed output of the script (stops 90, 92, 94) and how many rows (checkpoint names without the seed) it has
COMMITTED = {"table4_order_use.md": 5, "table4_order_use_baselines.md": 2, "table4_order_use_initial_phases.md": 2}
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_every_committed_table_of_the_script_is_checked():
    assert sorted(p.name for p in RESULTS.glob("table4_order_use*.md")) == sorted(COMMITTED)


@pytest.mark.parametrize("name, n_rows", sorted(COMMITTED.items()))
def test_the_committed_table_agrees_with_itself(name, n_rows):
    """benchmarks/results/table4_order_use*.md: each drop is its row's accuracy in order minus its shuffled mean, and
    each summary row the mean of its checkpoints' drops (the checkpoints are not committed; the arithmetic is)."""
    path = RESULTS / name
    rows, summary = {}, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| SST2-sent") and cells[0].endswith(".pt"):
            in_order, shuffled, drop = float(cells[4]), float(cells[5].split()[0]), float(cells[6])
            assert float(cells[3]) == in_order  # the recorded accuracy, checked by the script
            assert abs(100 * (in_order - shuffled) - drop) <= 0.011, line
            rows.setdefault(re.sub(r"-seed-\d+\.pt$", "", cells[0]), []).append(drop)
        elif line.startswith("| SST2-sent"):
            summary[cells[0]] = (int(cells[1]), float(cells[2]), [float(x) for x in cells[3].split(",")])
    assert set(summary) == set(rows) and len(rows) == n_rows
    for row, drops in rows.items():
        n, mean, listed = summary[row]
        # the mean is of the unrounded drops, then rounded: it and the mean of the rounded drops differ by at most
        # 0.005 + 0.005 (stop 92's TPE row: 0.31 against 0.95 / 3)
        assert n == len(drops) and listed == drops and abs(mean - sum(drops) / n) <= 0.0101


def test_an_out_path_holding_a_checkpoint_is_refused_before_any_work(tmp_path):
    taken = tmp_path / "taken.pt"
    save_checkpoint(taken, "lm", {}, {})
    with pytest.raises(SystemExit, match=r"^--out .*taken\.pt is a checkpoint or another binary file .*choose another "
                                         r"file$"):  # before the missing checkpoint is opened
        _script().main(["--out", str(taken), str(tmp_path / "never-read.pt")])


def test_a_data_directory_without_the_data_set_names_the_missing_file(tmp_path, shared_data):
    path, _ = _saved(tmp_path, shared_data)
    with pytest.raises(SystemExit, match=r"^checkpoint .*seed-1\.pt: its data set SST2-sent: missing data file "
                                         r"stsa\.binary\.train \(expected at .*empty.*\)"):
        _script().main(["--data-dir", str(tmp_path / "empty"), str(path)])


@pytest.mark.parametrize("embedding, settings, expected", [
    ("tpe", {"readout": "last"}, "real"),  # a config written before `network` existed: "auto"
    ("tpe", {"network": "auto", "readout": "last"}, "real"),
    ("complex-order", {"readout": "last"}, "complex"),
    ("complex-vanilla", {"network": "auto", "readout": "last"}, "complex"),
    ("complex-order", {"network": "authors", "readout": "last"}, "authors"),
    ("complex-order", {"network": "real", "readout": "last"}, "real"),
])
def test_the_network_named_is_the_one_the_run_built(embedding, settings, expected):
    # "auto" builds real layers for a real embedding (TPE) and complex ones for a complex embedding
    config = _config(embedding)
    config["settings"].update(network="auto", attention_score="modulus", loss="cross-entropy")
    model = build_model_from_config(config, 40, 2, 53)
    assert _script().network_name(settings, model) == expected
