"""Early stopping that does not stop a run while its dev accuracy is still what predicting one class scores
(``patience_floor`` / the config key ``patience_above_majority``; stop 72, after TPE on CR stopped at the
majority class in half its folds: benchmarks/results/table2_tpe_cr_patience.md)."""

import dataclasses

import pytest
import torch
from torch import nn

from complexorder.data.batching import EncodedDataset
from complexorder.experiments import classification as runner
from complexorder.experiments.classification import ModelSettings, majority_rate, plan_units, run_grid
from complexorder.experiments.training import evaluate_accuracy, train_classifier

from test_classification_runner import tiny_grid


class OneClassFirst(nn.Module):
    """Predicts class 0 for every example during its first ``switch`` training steps, then reads the label
    from the token (token = label + 1): its dev accuracy is exactly the majority-class rate until then."""

    def __init__(self, switch: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(2))  # something for the optimiser; the data decide nothing
        self.switch, self.steps = switch, 0

    def forward(self, tokens):
        if self.training:
            self.steps += 1
        if self.steps <= self.switch:
            logits = torch.tensor([5.0, 0.0]).expand(tokens.shape[0], 2)
        else:
            logits = 5.0 * nn.functional.one_hot(tokens[:, 0] - 1, 2).float()
        return logits + self.bias


def _data(labels):
    return EncodedDataset([torch.tensor([y + 1]) for y in labels], torch.tensor(labels))


TRAIN = _data([0] * 6 + [1] * 2)  # one step per epoch at batch size 8
DEV = _data([0, 0, 0, 1])  # majority rate 0.75


def _train(switch, epochs, floor):
    return train_classifier(OneClassFirst(switch), TRAIN, DEV, epochs=epochs, batch_size=8, lr=1e-3, patience=2,
                            progress=False, patience_floor=floor)


def test_majority_rate_is_what_a_one_class_prediction_scores():
    assert majority_rate(DEV) == 0.75 and majority_rate(_data([1, 2, 2, 0, 2])) == 0.6
    assert majority_rate(_data([])) == 0.0
    model = OneClassFirst(switch=10**9).eval()  # always class 0, the dev majority
    assert evaluate_accuracy(model, DEV) == majority_rate(DEV)  # equal as floats: the plateau is not "above" it


def test_without_a_floor_patience_stops_a_run_at_the_majority_plateau():
    result = _train(switch=4, epochs=10, floor=None)
    assert (result.epochs_run, result.best_epoch, result.best_dev_accuracy) == (3, 1, 0.75)


def test_with_the_majority_floor_the_run_trains_past_the_plateau_then_stops_by_patience():
    result = _train(switch=4, epochs=10, floor=majority_rate(DEV))
    assert [h["dev_accuracy"] for h in result.history] == [0.75] * 4 + [1.0] * 3
    assert (result.epochs_run, result.best_epoch, result.best_dev_accuracy) == (7, 5, 1.0)


def test_a_run_that_never_leaves_the_plateau_trains_to_the_epoch_cap():
    result = _train(switch=10**9, epochs=6, floor=majority_rate(DEV))
    assert (result.epochs_run, result.best_epoch, result.best_dev_accuracy) == (6, 1, 0.75)


def test_the_config_key_is_off_by_default_and_out_of_the_hash_until_set():
    assert ModelSettings().patience_above_majority is False
    assert "patience_above_majority" not in runner._settings_dict(ModelSettings())  # earlier results keep their hash
    assert runner._settings_dict(ModelSettings(patience_above_majority=True))["patience_above_majority"] is True


def test_the_grid_passes_the_dev_majority_rate_as_the_floor(tmp_path, monkeypatch):
    grid = tiny_grid(tmp_path, models=["fasttext"], folds=[0])
    seen = []
    real = runner.train_classifier

    def spy(model, train, dev, **kw):
        seen.append((kw["patience_floor"], majority_rate(dev)))
        return real(model, train, dev, **kw)

    monkeypatch.setattr(runner, "train_classifier", spy)
    records = run_grid(grid, progress=False, log=lambda *_: None)
    on = dataclasses.replace(grid, fasttext=dataclasses.replace(grid.fasttext, patience_above_majority=True),
                             results=str(tmp_path / "on.jsonl"))
    run_grid(on, progress=False, log=lambda *_: None)
    per_run = len(seen) // 2
    assert per_run == 5 and all(floor is None for floor, _ in seen[:per_run])
    assert all(floor == rate and 0.5 <= rate < 1 for floor, rate in seen[per_run:])
    # every record states the rate (with the option on or off), so a collapse can be read from the record alone
    assert [r["dev_majority_rate"] for r in records] == [rate for _, rate in seen[:per_run]]


def test_a_non_boolean_value_is_refused_naming_the_key(tmp_path):
    grid = tiny_grid(tmp_path, models=["cnn"])
    bad = dataclasses.replace(grid, cnn=dataclasses.replace(grid.cnn, patience_above_majority=1))
    with pytest.raises(ValueError, match=r"^\[cnn\] patience_above_majority must be true or false, got 1$"):
        plan_units(bad)


def test_the_report_lists_the_units_kept_at_the_majority_class():
    from complexorder.experiments.report import render_table2

    def unit(variant, split, dev, rate=0.637):
        record = {"dataset": "CR", "model": "cnn", "variant": variant, "split": split, "test_accuracy": dev,
                  "dev_accuracy": dev, "seconds_per_epoch": 1.0, "finished_at": "t", "command": "c"}
        return record if rate is None else {**record, "dev_majority_rate": rate}

    held = {**unit("tpe", "fold-9", 0.637), "config": {"settings": {"patience_above_majority": True}}}
    records = [held, unit("tpe", "fold-2", 0.60), unit("tpe", "fold-3", 0.70),
               unit("complex-order", "fold-2", 0.75), unit("complex-order", "fold-3", 0.637, rate=None)]
    text = render_table2(records)
    assert "## Units kept at the majority class" in text
    assert "Of the 4 units whose records state their dev majority-class rate" in text  # the one without is not judged
    section = text.split("## Units kept at the majority class")[1].split("\n## ")[0]
    # at the rate, and below it (fold-3, above, is not); fold-9 ran with the option and still never left the rate
    assert "| CR | cnn | tpe | 2 | fold-2, fold-9 | 1 |" in section
    assert "complex-order" not in section
    assert "Units kept at the majority class" not in render_table2([r for r in records if r["variant"] != "tpe"])
