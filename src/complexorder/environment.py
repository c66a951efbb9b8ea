"""What a result depends on beyond the code and its settings: the CPU and the kernel paths taken on it."""

from __future__ import annotations

import platform

import torch

from .nn import native

__all__ = ["cpu_info"]


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
