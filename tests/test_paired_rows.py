"""benchmarks/classification/paired_rows.py: paired Wilcoxon of one row against the model's other rows."""

import json

import pytest
from scipy.stats import wilcoxon

from conftest import load_benchmark


def _script():
    return load_benchmark("classification/paired_rows.py", "paired_rows")


def _write(path, rows):
    path.write_text("".join(json.dumps({"dataset": "MR", "model": m, "variant": v, "split": s, "test_accuracy": a,
                                        "finished_at": "2026-11-26T00:00:00"}) + "\n" for m, v, s, a in rows),
                    encoding="utf-8")


def test_rows_match_scipy_on_hand_made_results(tmp_path, capsys):
    new = [0.80, 0.82, 0.79, 0.85, 0.81]
    base = [0.78, 0.80, 0.80, 0.81, 0.77]
    _write(tmp_path / "base.jsonl", [("lstm", "complex-order", f"fold-{i}", a) for i, a in enumerate(base)]
           + [("cnn", "none", "fold-0", 0.5)])
    _write(tmp_path / "new.jsonl", [("lstm", "complex-order, x", f"fold-{i}", a) for i, a in enumerate(new)])
    args = ["--results", str(tmp_path / "base.jsonl"), str(tmp_path / "new.jsonl"), "--model", "lstm",
            "--row", "complex-order, x"]
    assert _script().main(args) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| MR |")]
    assert len(rows) == 1  # the cnn record is another model's
    diffs = [a - b for a, b in zip(new, base)]
    above = wilcoxon(diffs, alternative="greater").pvalue
    below = wilcoxon(diffs, alternative="less").pvalue
    assert rows[0] == (f"| MR | complex-order, x | 5 | 0.8140 | complex-order | 0.7920 | +0.0220 "
                       f"| {above:.3g} | {below:.3g} |")


def test_bad_input_gets_one_line_errors(tmp_path):
    _write(tmp_path / "r.jsonl", [("lstm", "none", "fold-0", 0.7)])
    script = _script()
    with pytest.raises(SystemExit, match=r"^--results: results file .*missing\.jsonl does not exist"):
        script.main(["--results", str(tmp_path / "missing.jsonl"), "--model", "lstm", "--row", "none"])
    with pytest.raises(SystemExit, match=r"^--row: no 'lstm' records with row 'pe'; rows present: \['none'\]$"):
        script.main(["--results", str(tmp_path / "r.jsonl"), "--model", "lstm", "--row", "pe"])
