"""What a result depends on beyond the code and its settings: the CPU and the kernel paths taken on it."""

from __future__ import annotations

import os
import platform
import sys

import torch

from .nn import native

__all__ = ["cpu_info", "set_threads", "resolve_device", "rng_state", "set_rng_state"]


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


#: The most threads ``--threads`` accepts.
MAX_THREADS = 1024


def set_threads(threads: int | None, flag: str = "--threads") -> None:
    """Set torch's CPU thread count from a command's ``--threads`` option, else from ``$OMP_NUM_THREADS``;
    with neither, torch keeps its own choice (one thread per core).

    On a machine whose cores are busy with other processes, torch's default pool oversubscribes them and
    OpenMP's barriers spin: small models can then run many times slower than with one thread.
    """
    if threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "")
        first = env.split(",")[0].strip()  # OpenMP's list form "4,2" (nested levels): the outer level's count
        threads = int(first) if first.isascii() and first.isdigit() and int(first) > 0 else None
        if threads is None and env.strip():  # "abc", "0", "-3" were ignored without a word
            print(f"complexorder: note: $OMP_NUM_THREADS={env!r} is not a positive number of threads; torch keeps "
                  "its own thread count (one per core)", file=sys.stderr)
        flag = "$OMP_NUM_THREADS"
    elif threads < 1:
        raise ValueError(f"{flag}: expected a positive number of threads, got {threads}")
    if threads is not None and threads > MAX_THREADS:  # at 100,000 OpenMP crashed the process (SIGSEGV)
        raise ValueError(f"{flag}: at most {MAX_THREADS} threads, got {threads} (this machine has "
                         f"{os.cpu_count()} cores)")
    if threads:
        torch.set_num_threads(threads)


def bars_off(progress: bool) -> bool | None:
    """tqdm's ``disable`` for a command's progress bars: off with ``--no-progress``, else shown only when standard
    error is a terminal (``None``: tqdm's own check), so that a run redirected to a log file does not fill it with
    carriage-return updates and cursor moves."""
    return None if progress else True


#: The ``--no-progress`` help of every command with progress bars (see :func:`bars_off`).
NO_PROGRESS_HELP = "hide the progress bars (shown only when standard error is a terminal)"

#: The ``--device`` help of every training and evaluation command.
DEVICE_HELP = ("cpu, cuda or cuda:N (default: $COMPLEXORDER_DEVICE when set, else a GPU when torch sees one, else "
               "the CPU)")


def resolve_device(name: str | None, flag: str = "--device") -> torch.device:
    """The device a command trains or evaluates on: ``name`` (``cpu``, ``cuda``, ``cuda:N``), or with ``None``
    (or ``"auto"``) ``$COMPLEXORDER_DEVICE`` when set, else the first CUDA GPU when torch sees one, else the CPU.

    A one-line error names ``flag`` when the string is not a device or CUDA is asked for and absent.
    """
    if name is None or name == "auto":
        name = os.environ.get("COMPLEXORDER_DEVICE") or "auto"
        flag = "$COMPLEXORDER_DEVICE" if name != "auto" else flag
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise ValueError(f"{flag}: expected auto, cpu, cuda or cuda:N, got {name!r}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"{flag}: expected auto, cpu, cuda or cuda:N, got {name!r}")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise ValueError(f"{flag} {name}: CUDA is not available (torch {torch.__version__}, {build}, "
                             f"sees no GPU); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{flag} {name}: only {torch.cuda.device_count()} CUDA device(s) visible")
    return device


def rng_state(device: torch.device) -> dict:
    """The random state a resumable run saves: torch's CPU generator and, on a GPU, that device's generator."""
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state, device: torch.device) -> None:
    """Restore :func:`rng_state`'s output (or a bare CPU state, as older checkpoints hold); a GPU generator is
    restored only on a GPU."""
    if isinstance(state, torch.Tensor):
        torch.set_rng_state(state)
        return
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)
