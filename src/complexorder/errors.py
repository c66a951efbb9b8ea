"""Exceptions of complexorder's own that the command line reports as one-line errors (kept free of heavy imports:
``complexorder.cli`` imports this module before any command's)."""

from __future__ import annotations

import contextlib
import re

__all__ = ["RunDirectoryBusy", "is_out_of_memory", "out_of_memory_message", "naming_out_of_memory"]

#: what torch's CPU and CUDA allocators say when an allocation fails
_OUT_OF_MEMORY = ("can't allocate memory", "not enough memory", "out of memory")


class RunDirectoryBusy(BlockingIOError):
    """Another training holds the lock of the run directory this one was asked to write into."""


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a failed allocation: ``MemoryError``, or torch's ``RuntimeError`` (``torch.OutOfMemoryError``
    on CUDA; ``DefaultCPUAllocator: can't allocate memory`` on the CPU)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError)
                                            and any(m in str(exc) for m in _OUT_OF_MEMORY))


def out_of_memory_message(exc: BaseException) -> str:
    """One line for a failed allocation, with the size torch asked for when its message gives it."""
    found = re.search(r"(?:tried to allocate|allocate) (\d+) bytes", str(exc))
    if found:
        return f"one tensor of {_size(int(found.group(1)))} could not be allocated"
    # CUDA: "Tried to allocate 2.00 GiB"; NumPy: "Unable to allocate 758. GiB for an array with shape ..."
    found = re.search(r"(?:[Tt]ried|Unable) to allocate ([\d.]+ [KMGTP]?i?B)", str(exc))
    if found:
        return f"one tensor of {found.group(1)} could not be allocated"
    return "the allocator ran out of memory"


def _size(n: int) -> str:
    for unit, scale in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@contextlib.contextmanager
def naming_out_of_memory(what: str, advice: str = "lower these sizes in the config"):
    """Turn a failed allocation inside the block into a one-line ``MemoryError`` naming ``what`` (the settings
    that sized it: ``"[transformer] embedding_dim = 2560000 (vocabulary 5,123 words)"``) and ``advice``."""
    try:
        yield
    except (RuntimeError, MemoryError) as exc:
        if not is_out_of_memory(exc):
            raise
        raise MemoryError(f"{what}: the model does not fit in memory ({out_of_memory_message(exc)}); "
                          f"{advice}") from None
