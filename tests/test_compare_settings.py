"""benchmarks/classification/compare_settings.py: the same rows under two settings, paired by fold or seed."""

import json

import pytest
from scipy.stats import wilcoxon

from conftest import load_benchmark


def _script():
    return load_benchmark("classification/compare_settings.py", "compare_settings")


def _write(path, rows):
    path.write_text("".join(json.dumps({"dataset": "MPQA", "model": m, "variant": v, "split": s, "test_accuracy": a,
                                        "dev_accuracy": d, "finished_at": "2026-11-29T00:00:00"}) + "\n"
                            for m, v, s, a, d in rows), encoding="utf-8")


def test_rows_are_paired_by_unit_and_match_scipy(tmp_path, capsys):
    new = [0.84, 0.85, 0.83, 0.86, 0.82, 0.84]
    old = [0.83, 0.82, 0.84, 0.83, 0.80, 0.81]
    _write(tmp_path / "new.jsonl", [("transformer", "tpe", f"fold-{i}", a, 0.9) for i, a in enumerate(new)]
           + [("transformer", "pe", "fold-0", 0.5, 0.5)])  # a row the old setting lacks: not listed
    # the old file holds one more fold (not paired) and a superseded record of fold 0 (the latest counts)
    _write(tmp_path / "old.jsonl", [("transformer", "tpe", "fold-0", 0.10, 0.10)]
           + [("transformer", "tpe", f"fold-{i}", a, 0.8) for i, a in enumerate(old)]
           + [("transformer", "tpe", "fold-9", 0.99, 0.99), ("cnn", "tpe", "fold-0", 0.5, 0.5)])
    assert _script().main(["--new", str(tmp_path / "new.jsonl"), "--old", str(tmp_path / "old.jsonl"),
                           "--model", "transformer"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| MPQA |")]
    diffs = [a - b for a, b in zip(new, old)]
    above = wilcoxon(diffs, alternative="greater").pvalue
    below = wilcoxon(diffs, alternative="less").pvalue
    assert rows == [f"| MPQA | tpe | 6 | 0.9000 | 0.8000 | 0.8400 | 0.8217 | +0.0183 | {above:.3g} | {below:.3g} |"]


def test_bad_input_gets_one_line_errors(tmp_path):
    _write(tmp_path / "r.jsonl", [("lstm", "none", "fold-0", 0.7, 0.7)])
    script = _script()
    with pytest.raises(SystemExit, match=r"^error: results file .*missing\.jsonl does not exist"):
        script.main(["--new", str(tmp_path / "missing.jsonl"), "--old", str(tmp_path / "r.jsonl"), "--model", "lstm"])
    with pytest.raises(SystemExit, match=r"^--model: no 'cnn' row is in both --new and --old$"):
        script.main(["--new", str(tmp_path / "r.jsonl"), "--old", str(tmp_path / "r.jsonl"), "--model", "cnn"])
