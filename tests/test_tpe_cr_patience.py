"""benchmarks/classification/tpe_cr_patience.py: patience-3 units against their no-early-stop twins (stop 71)."""

import json

import pytest

from conftest import load_benchmark


def _record(model, label, fold, devs, test, best):
    history = [{"epoch": i + 1, "train_loss": round(0.7 - 0.01 * i, 4), "dev_accuracy": d} for i, d in enumerate(devs)]
    return {"dataset": "CR", "model": model, "variant": label, "split": f"fold-{fold}", "test_accuracy": test,
            "best_epoch": best, "epochs_run": len(devs), "history": history}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_majority_folds_tests_and_the_first_epochs_check_on_hand_made_records(tmp_path, capsys):
    plateau = [0.637, 0.637, 0.637, 0.637]
    short = [_record("cnn", "tpe", f, plateau, 0.637, 1) for f in range(3)]               # all at the majority class
    short += [_record("cnn", "complex-order", f, [0.70, 0.75], 0.78 + 0.01 * f, 2) for f in range(3)]
    long = [_record("cnn", "tpe", f, plateau + [0.70, 0.76], 0.74 + 0.01 * f, 6) for f in range(2)]
    long.append(_record("cnn", "tpe", 2, [0.637, 0.64, 0.637, 0.637, 0.75], 0.75, 5))  # differs in epoch 2: flagged
    script = load_benchmark("classification/tpe_cr_patience.py", "tpe_cr_patience")
    assert script.main(["--patience3", _write(tmp_path / "a.jsonl", short),
                        "--no-early-stop", _write(tmp_path / "b.jsonl", long)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "| cnn | tpe | patience 3 (Table 2) | 0.637 ± 0.000 | 3 | 3 | 1.0 | 4.0 |" in out
    assert "| cnn | tpe | no early stop | 0.747 ± 0.006 | 3 | 0 | 5.7 | 5.7 |" in out  # 0.74, 0.75, 0.75
    # complex-order 0.78/0.79/0.80 against 0.637 on three folds: every difference positive, p = 1/8
    assert "| cnn | complex-order (patience 3) above TPE (patience 3) | +15.30 | 0.125 | 3 |" in out
    assert "| cnn | complex-order (patience 3) above TPE (no early stop) | +4.33 | 0.125 | 3 |" in out
    assert "| cnn | TPE no early stop above TPE patience 3 | +10.97 | 0.125 | 3 |" in out
    assert "| cnn | tpe | 2 of 3 |" in out
    assert "| cnn | complex-order (no early stop) above TPE (no early stop) | — | — | 0 |" in out  # no such runs


def test_the_option_rows_and_check_on_hand_made_records(tmp_path, capsys):
    """--above-majority (stop 72): a unit starting above its dev majority rate must repeat its patience-3 twin;
    one starting at the plateau may change; the check counts both, and a repeat that differs shows as a miss."""
    def with_rate(r):
        return {**r, "dev_majority_rate": 0.637}

    plateau = [0.637, 0.637, 0.637, 0.637]
    short = [_record("cnn", "tpe", f, plateau, 0.637, 1) for f in range(2)]
    short += [_record("cnn", "complex-order", f, [0.70, 0.75], 0.78 + 0.01 * f, 2) for f in range(2)]
    option = [with_rate(_record("cnn", "tpe", 0, plateau + [0.70, 0.76], 0.75, 6)),  # trained past the plateau
              with_rate(_record("cnn", "tpe", 1, plateau, 0.637, 1)),               # the same: never left it
              with_rate(_record("cnn", "complex-order", 0, [0.70, 0.75], 0.78, 2)),  # identical: as it must be
              with_rate(_record("cnn", "complex-order", 1, [0.70, 0.75], 0.70, 2))]  # differs: the check shows it
    script = load_benchmark("classification/tpe_cr_patience.py", "tpe_cr_patience")
    assert script.main(["--patience3", _write(tmp_path / "a.jsonl", short), "--no-early-stop",
                        _write(tmp_path / "b.jsonl", []), "--above-majority", _write(tmp_path / "c.jsonl", option)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "| cnn | tpe | patience 3 above the majority rate | 0.694 ± 0.080 | 2 | 1 | 3.5 | 5.0 |" in out
    assert "| cnn | TPE (patience 3 above the majority rate) above TPE patience 3 | +5.65 | 0.5 | 2 |" in out
    assert "| cnn | complex-order (patience 3) above TPE (patience 3 above the majority rate) | +9.15 | 0.25 | 2 |" in out
    assert "| cnn | tpe | 0 of 0 | 1 of 2 | 1 of 1 |" in out  # fold 0 changed, and it had collapsed
    assert "| cnn | complex-order | 1 of 2 | 0 of 0 | 0 of 0 |" in out
    assert not any("above the majority rate" in line for line in _script_lines(script, short, tmp_path, capsys))


def _script_lines(script, short, tmp_path, capsys):
    """Without --above-majority the table has none of the option's rows (stop 71's table is unchanged)."""
    assert script.main(["--patience3", _write(tmp_path / "a.jsonl", short), "--no-early-stop",
                        _write(tmp_path / "b.jsonl", [])]) == 0
    return capsys.readouterr().out.splitlines()


def test_option_records_without_the_majority_rate_are_refused_naming_the_unit(tmp_path, capsys):
    short = [_record("cnn", "tpe", 0, [0.637] * 4, 0.637, 1)]
    script = load_benchmark("classification/tpe_cr_patience.py", "tpe_cr_patience")
    with pytest.raises(SystemExit, match=r"^--above-majority: the cnn tpe fold-0 record has no dev_majority_rate; "
                                         r"expected the results of tpe_cr_above_majority.toml"):
        script.main(["--patience3", _write(tmp_path / "a.jsonl", short), "--no-early-stop",
                     _write(tmp_path / "b.jsonl", []), "--above-majority", _write(tmp_path / "c.jsonl", short)])
