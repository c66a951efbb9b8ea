"""The paper's reported results as the package carries them (``complexorder/paper/*.csv``).

Reports print these beside our measurements, so they must be the shared transcription exactly, and scripts must
read them from the package (not from a path on one machine, where a missing file silently emptied the paper
column of ``benchmarks/translation/run_table5.py``'s table).
"""

from __future__ import annotations

from importlib import resources

import pytest

from conftest import SHARED_DATA, load_benchmark

SHARED_RESULTS = SHARED_DATA.parent / "paper-results"


@pytest.mark.parametrize("table", ["table2", "table4", "table5", "table6"])
def test_package_copy_equals_the_shared_transcription(table):
    shared = SHARED_RESULTS / f"{table}.csv"
    if not shared.is_file():
        pytest.skip(f"shared transcription not found at {shared}")
    packaged = resources.files("complexorder").joinpath(f"paper/{table}.csv").read_text(encoding="utf-8")
    assert packaged.splitlines() == shared.read_text(encoding="utf-8").splitlines()


def test_table5_script_reads_the_paper_from_the_package():
    run_table5 = load_benchmark("translation/run_table5.py", "run_table5")
    paper = run_table5.paper_numbers()
    # the three rows the script prints beside ours (paper Table 5)
    assert [paper[run_table5.PAPER_ROW[v]] for v in run_table5.VARIANTS] == ["34.5", "34.7", "35.8"]


def test_table5_script_says_what_is_missing_and_names_a_bad_phase(tmp_path, monkeypatch, capsys):
    """`--phases table` before any run ended in a FileNotFoundError traceback, and an unknown phase in a KeyError;
    --data-dir ignored $COMPLEXORDER_DATA."""
    import sys

    run_table5 = load_benchmark("translation/run_table5.py", "run_table5")
    out = tmp_path / "t5.md"
    monkeypatch.setattr(sys, "argv", ["run_table5.py", "--phases", "table", "--root", str(tmp_path), "--out", str(out)])
    with pytest.raises(SystemExit) as stop:
        run_table5.main()
    missing = ", ".join(str(tmp_path / f"{v}.summary.json") for v in run_table5.VARIANTS)
    assert str(stop.value) == (f"run_table5.py: error: no finished run to tabulate: {missing} missing; run the train "
                               "and eval phases first (--phases train,eval,table)")
    assert not out.exists()
    monkeypatch.setattr(sys, "argv", ["run_table5.py", "--phases", "train,tabel", "--root", str(tmp_path)])
    with pytest.raises(SystemExit):
        run_table5.main()
    assert capsys.readouterr().err.strip().endswith("--phases: unknown phase 'tabel'; valid: train, eval, table")
