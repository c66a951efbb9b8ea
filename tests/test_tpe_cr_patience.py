"""benchmarks/classification/tpe_cr_patience.py: patience-3 units against their no-early-stop twins (stop 71)."""

import json

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
    assert "| cnn | tpe | no early stop | 0.747 ± 0.006 | 3 | 0 | 5.7 | 5.7 |"  # 0.74, 0.75, 0.75 in out
    # complex-order 0.78/0.79/0.80 against 0.637 on three folds: every difference positive, p = 1/8
    assert "| cnn | complex-order (patience 3) above TPE (patience 3) | +15.30 | 0.125 | 3 |" in out
    assert "| cnn | complex-order (patience 3) above TPE (no early stop) | +4.33 | 0.125 | 3 |" in out
    assert "| cnn | TPE no early stop above TPE patience 3 | +10.97 | 0.125 | 3 |" in out
    assert "| cnn | tpe | 2 of 3 |" in out
    assert "| cnn | complex-order (no early stop) above TPE (no early stop) | — | — | 0 |" in out  # no such runs
