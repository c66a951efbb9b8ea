"""Exceptions of complexorder's own that the command line reports as one-line errors (kept free of heavy imports:
``complexorder.cli`` imports this module before any command's)."""

from __future__ import annotations

__all__ = ["RunDirectoryBusy"]


class RunDirectoryBusy(BlockingIOError):
    """Another training holds the lock of the run directory this one was asked to write into."""
