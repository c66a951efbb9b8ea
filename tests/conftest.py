"""Shared test fixtures: the reference data sets beside the project (``../shared/data``)."""

import importlib.util
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(relative: str, name: str):
    """Import a script under ``benchmarks/`` (not a package) as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "classification").is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA


def pytest_configure(config):
    """Tiny tensors gain nothing from intra-op threads, and on a shared machine threads oversubscribe."""
    import os

    import torch

    torch.set_num_threads(1)
    # the tests compare runs bit for bit (resume = straight run): on the CPU, even where a GPU is visible
    os.environ.setdefault("COMPLEXORDER_DEVICE", "cpu")
