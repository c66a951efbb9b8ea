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


def _write(path, rows, cpu=None, capability=None, dataset="MR"):
    extra = {} if cpu is None else {"cpu": {"model": cpu}}
    if capability is not None:
        extra = {"cpu": {"model": cpu or "AMD EPYC", "torch_capability": capability}}
    path.write_text("".join(json.dumps({"dataset": dataset, "model": m, "variant": v, "split": s, "test_accuracy": a,
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


def test_capability_separates_two_kinds_that_share_a_model_name(tmp_path, capsys):
    # stops 84-90: "AMD EPYC" with and without AVX-512; the same unit on both kinds must not be paired across them
    _write(tmp_path / "avx512.jsonl", [("lstm", v, f"seed-{i}", a) for v, accs in
                                       (("a", [0.9, 0.9, 0.9]), ("b", [0.5, 0.5, 0.5])) for i, a in enumerate(accs, 1)],
           capability="AVX512", dataset="TREC")
    _write(tmp_path / "avx2.jsonl", [("lstm", "a", f"seed-{i}", a) for i, a in enumerate([0.7, 0.8, 0.75], 1)],
           capability="AVX2", dataset="TREC")
    files = [str(tmp_path / "avx512.jsonl"), str(tmp_path / "avx2.jsonl")]
    assert _script().main(["--results", *files, "--model", "lstm", "--row", "a", "--cpu", "AMD",
                           "--capability", "avx512"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| TREC |")]
    assert rows == ["| TREC | a | 3 | 0.9000 | b | 0.5000 | +0.4000 | 0.125 | 1 |"]
    # on AVX2 row a has no partner: nothing is printed but the header
    assert _script().main(["--results", *files, "--model", "lstm", "--row", "a", "--capability", "AVX2"]) == 0
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("| TREC |")] == []
    with pytest.raises(SystemExit, match=r"^--capability: no records whose cpu.torch_capability is 'SVE'; "
                                         r"present: \['AVX2', 'AVX512'\]$"):
        _script().main(["--results", *files, "--model", "lstm", "--row", "a", "--capability", "SVE"])


def test_seeds_compare_every_row_on_the_same_seeds(tmp_path, capsys):
    _write(tmp_path / "r.jsonl", [("lstm", "a", f"seed-{i}", 0.80 + i / 100) for i in range(1, 6)]
           + [("lstm", "b", f"seed-{i}", 0.70) for i in range(1, 6)],
           dataset="TREC")
    args = ["--results", str(tmp_path / "r.jsonl"), "--model", "lstm", "--row", "a"]
    assert _script().main([*args, "--seeds", "4-5"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| TREC |")]
    assert rows == ["| TREC | a | 2 | 0.8450 | b | 0.7000 | +0.1450 | 0.25 | 1 |"]
    assert _script().main([*args, "--seeds", "1,3"]) == 0
    assert "| 2 | 0.8200 | b | 0.7000 | +0.1200 |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"^--seeds: no records on seeds '7-8' \(splits \['seed-7', 'seed-8'\]\)$"):
        _script().main([*args, "--seeds", "7-8"])
    with pytest.raises(SystemExit, match=r"^--seeds: expected integers like '0-4' or '1,3,5', got 'four'$"):
        _script().main([*args, "--seeds", "four"])


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
