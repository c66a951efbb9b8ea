"""docs/api.md lists every public name with its current signature (it is written from the code by docs/make_api.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _make_api():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="docs/api.md is written under Python 3.11; other versions "
                    "print some annotations differently (typing.Optional, unions)")
def test_api_reference_is_up_to_date():
    make_api = _make_api()
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == make_api.render(), \
        "docs/api.md is out of date: run python docs/make_api.py"


def test_api_reference_names_every_public_name():
    import importlib

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    modules = _make_api().MODULES
    assert "complexorder.experiments.classification" in modules  # the Python API behind the commands too
    for module in map(importlib.import_module, modules):
        for name in module.__all__:
            if name in ("nn", "functional", "__version__"):
                continue
            assert f"### `{name}" in text, f"{module.__name__}.{name} is missing from docs/api.md"
    assert "Define the computation performed at every call" not in text  # torch's, not ours
    # the signature is the code's: a keyword-only option shows after the *
    assert "### `ComplexLinear(in_features: int, out_features: int, bias: bool = True, *, share_weights: bool = " in text
