"""benchmarks/classification/paired_rows.py: paired Wilcoxon of one row against the model's other rows."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import wilcoxon

from conftest import load_benchmark


def _script():
    return load_benchmark("classification/paired_rows.py", "paired_rows")


def _write(path, rows, cpu=None):
    extra = {} if cpu is None else {"cpu": {"model": cpu}}
    path.write_text("".join(json.dumps({"dataset": "MR", "model": m, "variant": v, "split": s, "test_accuracy": a,
                                        "finished_at": "2026-11-26T00:00:00", **extra}) + "\n"
                            for m, v, s, a in rows), encoding="utf-8")


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


def test_cpu_keeps_only_one_machine_kind_and_the_same_unit_of_another_kind_is_not_paired(tmp_path, capsys):
    # the same unit (complex-order, fold-0..2) run on two machine kinds: --cpu pairs only within the chosen one
    _write(tmp_path / "amd.jsonl", [("lstm", "complex-order", f"fold-{i}", a) for i, a in enumerate([0.9, 0.9, 0.9])],
           cpu="AMD EPYC 7B13")
    _write(tmp_path / "intel.jsonl", [("lstm", "complex-order", f"fold-{i}", a) for i, a in enumerate([0.7, 0.8, 0.75])]
           + [("lstm", "none", f"fold-{i}", a) for i, a in enumerate([0.6, 0.7, 0.7])], cpu="Intel(R) Xeon(R)")
    files = [str(tmp_path / "intel.jsonl"), str(tmp_path / "amd.jsonl")]
    assert _script().main(["--results", *files, "--model", "lstm", "--row", "none", "--cpu", "intel"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| MR |")]
    assert len(rows) == 1 and "| 3 | 0.6667 | complex-order | 0.7500 | -0.0833 |" in rows[0]
    with pytest.raises(SystemExit, match=r"^--cpu: no records whose cpu model contains 'arm'; cpu models present: "
                                         r"\['AMD EPYC 7B13', 'Intel\(R\) Xeon\(R\)'\]$"):
        _script().main(["--results", *files, "--model", "lstm", "--row", "none", "--cpu", "arm"])


def test_bad_input_gets_one_line_errors(tmp_path):
    _write(tmp_path / "r.jsonl", [("lstm", "none", "fold-0", 0.7)])
    script = _script()
    with pytest.raises(SystemExit, match=r"^--results: results file .*missing\.jsonl does not exist"):
        script.main(["--results", str(tmp_path / "missing.jsonl"), "--model", "lstm", "--row", "none"])
    with pytest.raises(SystemExit, match=r"^--row: no 'lstm' records with row 'pe'; rows present: \['none'\]$"):
        script.main(["--results", str(tmp_path / "r.jsonl"), "--model", "lstm", "--row", "pe"])


def test_a_reader_that_goes_away_stops_the_script_quietly(tmp_path):
    # `paired_rows.py ... | head -1` printed a BrokenPipeError traceback and exited 1 until stop 86
    _write(tmp_path / "r.jsonl", [("lstm", v, f"fold-{i}", 0.5 + i / 100) for v in ("a", "b") for i in range(5)])
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "classification" / "paired_rows.py"
    proc = subprocess.Popen([sys.executable, str(script), "--results", str(tmp_path / "r.jsonl"), "--model", "lstm",
                             "--row", "a"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before the script writes a line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""
