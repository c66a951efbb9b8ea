"""What a result depends on beyond the code and its settings: the CPU and the kernel paths taken on it."""

from __future__ import annotations

import os
import platform

import torch

from .nn import native

__all__ = ["cpu_info", "set_threads"]


def cpu_info() -> dict[str, str]:
    """The CPU, the kernel path torch picked on it (``torch.backends.cpu.get_cpu_capability()``) and
    whether the complex embeddings ran the native kernel (``"native"``) or the PyTorch path (``"pytorch"``).

    Recorded with every result: the same code, seed and torch release give different floating-point
    results on CPUs where torch (or BLAS) takes another kernel path, and the native kernel's sines and
    cosines differ from torch's by up to ~1 ulp, so bit-for-bit reproduction of a result needs the same
    paths."""

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    return {"model": model or platform.processor() or platform.machine(),
            "torch_capability": torch.backends.cpu.get_cpu_capability(),
            "embedding_kernel": "native" if native.available() else "pytorch"}


def set_threads(threads: int | None, flag: str = "--threads") -> None:
    """Set torch's CPU thread count from a command's ``--threads`` option, else from ``$OMP_NUM_THREADS``;
    with neither, torch keeps its own choice (one thread per core).

    On a machine whose cores are busy with other processes, torch's default pool oversubscribes them and
    OpenMP's barriers spin: small models can then run many times slower than with one thread.
    """
    if threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "")
        threads = int(env) if env.isdigit() and int(env) > 0 else None
    elif threads < 1:
        raise ValueError(f"{flag}: expected a positive number of threads, got {threads}")
    if threads:
        torch.set_num_threads(threads)
