"""The package ships ``py.typed``: its annotations are what users' type checkers read, so mypy must accept them."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_errors_in_the_package(tmp_path):
    pytest.importorskip("mypy")
    from mypy import api

    # pyproject.toml's [tool.mypy] settings; a fresh cache (about 15 s on two cores) that writes nothing into the tree
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path),
                                      str(ROOT / "src" / "complexorder")])
    assert status == 0, f"mypy exit status {status}:\n{stdout}{stderr}"
