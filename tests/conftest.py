"""Shared test fixtures: the reference data sets beside the project (``../shared/data``), one torch thread."""

import importlib.util
from pathlib import Path

import pytest
import torch

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


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run fastest on one thread (and do not fight other processes for the cores); a module opts in
    with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
