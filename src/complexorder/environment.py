"""What a result depends on beyond the code and its settings: the CPU and the kernel path torch picks on it."""

from __future__ import annotations

import platform

import torch

__all__ = ["cpu_info"]


def cpu_info() -> dict[str, str]:
    """The CPU and the kernel path torch picked on it (``torch.backends.cpu.get_cpu_capability()``).

    Recorded with every result: the same code, seed and torch release give different floating-point
    results on CPUs where torch (or BLAS) takes another kernel path, so bit-for-bit reproduction of a
    result needs the same path."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    return {"model": model or platform.processor() or platform.machine(),
            "torch_capability": torch.backends.cpu.get_cpu_capability()}
