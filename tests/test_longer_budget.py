"""benchmarks/classification/longer_budget.py: a unit re-run with more epochs against its shorter run and a reference."""

import json

import pytest

from conftest import load_benchmark


def _script():
    return load_benchmark("classification/longer_budget.py", "longer_budget")


def _record(label, seed, epochs, devs, test, best, cpu="Intel(R) Xeon(R) Processor", lr=1e-4):
    history = [{"epoch": i + 1, "train_loss": round(1.0 - 0.01 * i, 4), "dev_accuracy": d} for i, d in enumerate(devs)]
    return {"dataset": "SST2-sent", "seed": seed, "test_accuracy": test, "best_epoch": best, "epochs_run": len(devs),
            "history": history, "cpu": {"model": cpu},
            "config": {"variant": {"label": label}, "embedding_options": {"phase_dropout": 0.1},
                       "settings": {"epochs": epochs, "lr": lr, "patience": 3}}}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


SLOW = [0.50, 0.60, 0.65, 0.70]  # still rising at the 4-epoch limit


def _run(tmp_path, capsys, longer, base, *extra):
    args = ["--longer", _write(tmp_path / "longer.jsonl", longer), "--base", _write(tmp_path / "base.jsonl", base),
            "--reference", "co", *extra]
    assert _script().main(args) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("| cv |")]


def test_deltas_and_the_premise_check_on_hand_made_records(tmp_path, capsys):
    co = _record("co", 2, 4, [0.70, 0.78, 0.77], 0.7900, 2)  # patience ended it inside its 4 epochs: it stands for 8
    short = _record("cv", 2, 4, SLOW, 0.7200, 4)
    longer = _record("cv", 2, 8, SLOW + [0.72, 0.74, 0.73, 0.73], 0.7750, 6)
    [row] = _run(tmp_path, capsys, [longer], [short, co])
    assert row == ("| cv | 2 | 8 / 8 | 6 | 0.7750 | 4 / 4, 4, 0.7200 | +5.50 | yes | 0.7900, 3 / 4 | -1.50 | yes |")


def test_a_longer_run_that_does_not_reproduce_the_first_epochs_says_no_and_a_far_gap_is_not_caught_up(tmp_path,
                                                                                                       capsys):
    co = _record("co", 2, 4, [0.70, 0.78, 0.77], 0.7900, 2)
    short = _record("cv", 2, 4, SLOW, 0.7200, 4)
    longer = _record("cv", 2, 8, [0.50, 0.61, 0.65, 0.70, 0.71], 0.7300, 5)  # epoch 2 differs
    [row] = _run(tmp_path, capsys, [longer], [short, co])
    assert "| +1.00 | NO |" in row and row.endswith("| -6.00 | no |")


def test_a_reference_that_ran_to_its_last_epoch_gives_no_delta(tmp_path, capsys):
    co = _record("co", 2, 4, [0.70, 0.72, 0.75, 0.78], 0.7900, 4)  # best at its last epoch: would go on
    short = _record("cv", 2, 4, SLOW, 0.7200, 4)
    longer = _record("cv", 2, 8, SLOW + [0.71], 0.7300, 5)
    [row] = _run(tmp_path, capsys, [longer], [short, co])
    assert row.endswith("| 0.7900, 4 / 4 | n/a (the reference ran to its last epoch) | n/a |")


def test_other_settings_another_seed_or_another_cpu_are_not_twins(tmp_path, capsys):
    co = _record("co", 2, 4, [0.70, 0.78, 0.77], 0.7900, 2)
    longer = _record("cv", 2, 8, SLOW + [0.71], 0.7300, 5)
    for base in (_record("cv", 2, 4, SLOW, 0.72, 4, lr=1e-3), _record("cv", 3, 4, SLOW, 0.72, 4),
                 _record("cv", 2, 4, SLOW, 0.72, 4, cpu="AMD EPYC")):
        with pytest.raises(SystemExit, match=r"--base: no record of 'cv', seed 2, with the settings of the longer run "
                                             r"but fewer epochs than 8"):
            _run(tmp_path, capsys, [longer], [base, co], "--cpu", "Intel")


def test_bad_files_are_named_with_their_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seed": 1}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"bad.jsonl, line 1: not a record of `complexorder ablate`"):
        _script().main(["--longer", str(bad), "--base", str(bad), "--reference", "co"])
    with pytest.raises(SystemExit, match=r"missing.jsonl: cannot read it"):
        _script().main(["--longer", str(tmp_path / "missing.jsonl"), "--base", str(bad), "--reference", "co"])
