"""Shared test fixtures: the reference data sets beside the project (``../shared/data``)."""

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "classification").is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA


def pytest_configure(config):
    """Tiny tensors gain nothing from intra-op threads, and on a shared machine threads oversubscribe."""
    import torch

    torch.set_num_threads(1)
