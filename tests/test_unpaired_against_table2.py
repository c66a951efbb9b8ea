"""benchmarks/classification/unpaired_against_table2.py: Welch's test against table2.md's per-cell statistics."""

import json

import pytest
from scipy.stats import ttest_ind_from_stats

from conftest import load_benchmark


def _script():
    return load_benchmark("classification/unpaired_against_table2.py", "unpaired_against_table2")


TABLE2 = """| data set | model | embedding | n | mean | std | min | max |
|---|---|---|---:|---:|---:|---:|---:|
| CR | transformer | none | 3 | 0.7000 | 0.0100 | 0.69 | 0.71 |
| CR | transformer | tpe | 3 | 0.6000 | 0.0200 | 0.58 | 0.62 |
| CR | cnn | none | 3 | 0.9000 | 0.0100 | 0.89 | 0.91 |
"""


def _record(split, acc, model="transformer", label="complex-order, frequencies from 0"):
    return {"dataset": "CR", "model": model, "variant": label, "split": split, "test_accuracy": acc,
            "finished_at": "2026-11-26T00:00:00", "embedding": "complex-order"}


def test_welch_rows_match_scipy_on_hand_made_cells(tmp_path, capsys):
    table2 = tmp_path / "table2.md"
    table2.write_text(TABLE2, encoding="utf-8")
    results = tmp_path / "r.jsonl"
    scores = [0.72, 0.74, 0.73]
    results.write_text("".join(json.dumps(_record(f"fold-{i}", a)) + "\n" for i, a in enumerate(scores))
                       + json.dumps(_record("fold-0", 0.5, model="cnn")) + "\n", encoding="utf-8")
    assert _script().main(["--results", str(results), "--model", "transformer", "--table2", str(table2)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| CR |")]
    assert len(rows) == 2  # only the transformer cells of table2.md, the cnn record ignored
    p_none = ttest_ind_from_stats(0.73, 0.01, 3, 0.70, 0.01, 3, equal_var=False).pvalue
    assert rows[0] == (f"| CR | complex-order, frequencies from 0 | 3, 0.7300 ± 0.0100 | none | 3 | 0.7000 ± 0.0100 "
                       f"| +0.0300 | {p_none:.3f} |")
    assert "| tpe | 3 | 0.6000 ± 0.0200 | +0.1300 |" in rows[1]


def test_bad_input_gets_one_line_errors(tmp_path):
    table2 = tmp_path / "table2.md"
    table2.write_text(TABLE2, encoding="utf-8")
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(_record("fold-0", 0.7)) + "\n", encoding="utf-8")
    script = _script()
    with pytest.raises(SystemExit, match=r"^--results: results file .*missing\.jsonl does not exist"):
        script.main(["--results", str(tmp_path / "missing.jsonl"), "--model", "transformer", "--table2", str(table2)])
    with pytest.raises(SystemExit, match=r"^--table2: no file "):
        script.main(["--results", str(results), "--model", "transformer", "--table2", str(tmp_path / "no.md")])
    with pytest.raises(SystemExit, match=r"^--table2: no per-cell rows for model 'lstm'"):
        script.main(["--results", str(results), "--model", "lstm", "--table2", str(table2)])
    with pytest.raises(SystemExit, match=r"^--results: no 'cnn' records in "):
        script.main(["--results", str(results), "--model", "cnn", "--table2", str(table2)])
