"""The native float32 CPU kernel of paper Eq. 5 (``_wave_kernel.c``), reached through ctypes.

The kernel computes ``r[t] * exp(i (w[t] * pos + theta[t]))`` and its gradients row by row in
one pass each way: the table rows are gathered once, sine and cosine computed in registers,
the interleaved complex output written directly, and the backward recomputes the phasor
instead of saving it, adding straight into the gradient tables. It is an optional part of the
package: ``setup.py`` compiles it when a C compiler is present, and without it (or with
``COMPLEXORDER_NATIVE=0`` in the environment, or inside :func:`disabled`) the PyTorch path of
:mod:`complexorder.nn.wave` runs instead. Both give the same results to float32 rounding;
``tests/test_fast_paths.py`` holds them to the plain-autograd reference.

The work is split by columns over ``torch.get_num_threads()`` threads (ctypes releases the
GIL; column ranges never overlap, so threads never write the same element).

:func:`available` says whether the kernel is loaded, :func:`status` why not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import cast, overload

import torch
from torch import Tensor

__all__ = ["available", "status", "disabled", "supports", "wave_forward", "wave_backward", "sincos"]

_ALIGN = 16              # column split points are multiples of 16 floats (64-byte cache lines)
_MIN_PARALLEL = 1 << 16  # elements below which one thread does all the work

_lib: ctypes.CDLL | None = None
_status = "not loaded yet"
_enabled = os.environ.get("COMPLEXORDER_NATIVE", "1").strip() != "0"
_pool: ThreadPoolExecutor | None = None
_pool_key = (0, 0)  # (size, pid): a forked child (DataLoader workers) has none of its parent's threads
_pool_lock = threading.Lock()


def _load() -> ctypes.CDLL | None:
    global _lib, _status
    if _lib is not None or _status != "not loaded yet":
        return _lib
    try:
        # built by setup.py; a module so that pip installs it like any extension
        from . import _wave_kernel  # type: ignore[attr-defined]  # a compiled C extension: mypy sees no module
        lib = ctypes.CDLL(_wave_kernel.__file__)
    except (ImportError, OSError) as exc:
        _status = f"not built or not loadable ({exc}); the PyTorch path is used"
        return None
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.co_wave_forward.argtypes = [i64, i64, i64, p, p, p, p, p, i64, p, i64, i64]
    lib.co_wave_forward.restype = ctypes.c_int
    lib.co_wave_backward.argtypes = [i64, i64, i64, p, p, p, p, p, i64, p, p, p, p, ctypes.c_int, i64, i64]
    lib.co_wave_backward.restype = ctypes.c_int
    lib.co_sincos_array.argtypes = [i64, p, p, p]
    lib.co_sincos_array.restype = None
    _lib, _status = lib, f"loaded from {_wave_kernel.__file__}"
    return lib


def available() -> bool:
    """True if the native kernel is built, loaded and enabled."""
    return _enabled and _load() is not None


def status() -> str:
    """One line: whether the native kernel is used, and if not, why."""
    _load()
    if not _enabled:
        return "disabled (COMPLEXORDER_NATIVE=0 or complexorder.nn.native.disabled()); the PyTorch path is used"
    return _status


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the PyTorch path inside this block (for comparisons and tests)."""
    global _enabled
    before, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = before


def supports(tokens: Tensor, positions: Tensor | None, amplitude: Tensor, frequency: Tensor | None,
             initial_phase: Tensor | None) -> bool:
    """Whether the native kernel can compute this call.

    It serves integer CPU ``tokens`` with CPU float32 per-word tables of one shape ``[V, D]``,
    ``V > 1`` (no sharing scheme; a frequency table, an initial-phase table or both) and float32
    positions (``None`` without a frequency table: complex-vanilla). Everything else (float64,
    CUDA, shared ``[1, D]`` / ``[V, 1]`` tables, float or bool tokens) takes the PyTorch path,
    which also gives the errors for bad input.
    """
    if not available():
        return False
    if (tokens.device.type != "cpu" or tokens.is_floating_point() or tokens.is_complex()
            or tokens.dtype == torch.bool):
        return False
    tables = [t for t in (amplitude, frequency, initial_phase) if t is not None]
    if len(tables) < 2 or (frequency is None and initial_phase is None):
        return False
    if frequency is not None and (positions is None or positions.dtype != torch.float32
                                  or positions.device.type != "cpu"):
        return False
    shape = amplitude.shape
    if len(shape) != 2 or shape[0] < 2:  # [1, D]: word-shared tables (the vocabulary is not the table's)
        return False
    return all(t.device.type == "cpu" and t.dtype == torch.float32 and t.shape == shape for t in tables)


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _column_ranges(dim: int, work: int) -> list[tuple[int, int]]:
    """``[(col0, col1), ...]`` covering ``[0, dim)``, one range per thread worth using."""
    threads = torch.get_num_threads()
    parts = min(threads, max(1, work // _MIN_PARALLEL), -(-dim // _ALIGN))
    if parts <= 1:
        return [(0, dim)]
    step = -(-dim // parts)
    step = -(-step // _ALIGN) * _ALIGN
    return [(c, min(c + step, dim)) for c in range(0, dim, step)]


def _run(fn: Callable[..., int], args: tuple, dim: int, work: int) -> int:
    """``fn(*args, col0, col1)`` over the column ranges, in threads when there are several."""
    global _pool, _pool_key
    ranges = _column_ranges(dim, work)
    if len(ranges) == 1:
        return fn(*args, 0, dim)
    with _pool_lock:  # callers in several Python threads: one pool, never shut down under another's feet
        if _pool is None or _pool_key[0] < len(ranges) or _pool_key[1] != os.getpid():
            # A smaller pool is left to finish what it holds and be collected, not shut down.
            _pool = ThreadPoolExecutor(len(ranges), thread_name_prefix="complexorder-wave")
            _pool_key = (len(ranges), os.getpid())
        pool = _pool
    first, *rest = ranges
    futures = [pool.submit(fn, *args, c0, c1) for c0, c1 in rest]
    codes = [fn(*args, *first)] + [f.result() for f in futures]  # the calling thread takes one range
    return min(codes)


@overload
def _contiguous(t: Tensor) -> Tensor: ...
@overload
def _contiguous(t: Tensor | None) -> Tensor | None: ...
def _contiguous(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.detach().contiguous()


def _out_of_range(vocab: int) -> IndexError:
    return IndexError(f"tokens: an id is outside the vocabulary [0, {vocab}) of the embedding tables")


def wave_forward(tokens: Tensor, positions: Tensor, amplitude: Tensor, frequency: Tensor | None,
                 initial_phase: Tensor | None, padding_idx: int | None) -> Tensor:
    """Eq. 5 for int64 ``tokens`` ``[n]`` and float32 ``positions`` ``[n]`` (contiguous; None without
    a frequency table).

    Returns the interleaved real view ``[n, D, 2]`` of the complex output; padding rows are 0.
    Raises IndexError if a token is outside ``[0, V)`` (nothing is read out of bounds).
    """
    lib = cast(ctypes.CDLL, _load())  # callers check supports() first
    vocab, dim = amplitude.shape
    n = tokens.numel()
    out = torch.empty(n, dim, 2, dtype=torch.float32)
    amp, freq, theta = _contiguous(amplitude), _contiguous(frequency), _contiguous(initial_phase)
    args = (n, dim, vocab, tokens.data_ptr(), _ptr(positions), amp.data_ptr(), _ptr(freq), _ptr(theta),
            -1 if padding_idx is None else padding_idx, out.data_ptr())
    if n and _run(lib.co_wave_forward, args, dim, n * dim) < 0:
        raise _out_of_range(vocab)
    return out


def wave_backward(tokens: Tensor, positions: Tensor, amplitude: Tensor, frequency: Tensor | None,
                  initial_phase: Tensor | None, padding_idx: int | None, grad: Tensor,
                  needs: tuple[bool, bool, bool], rows: bool) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """Gradients of ``(amplitude, frequency, initial_phase)`` from the output gradient ``grad``.

    ``grad`` is the interleaved real ``[n, D, 2]`` float32 gradient (contiguous). ``needs`` says
    which of the three are wanted (None is returned for the others). ``rows=False`` gives dense
    ``[V, D]`` tables (zero rows for unseen words and the padding word, as ``nn.Embedding``);
    ``rows=True`` gives one ``[n, D]`` row per token (padding rows 0), for sparse gradients.
    """
    lib = cast(ctypes.CDLL, _load())  # callers check supports() first
    vocab, dim = amplitude.shape
    n = tokens.numel()
    shape = (n, dim) if rows else (vocab, dim)
    # The kernel writes every element (dense: the rows no token touched are zero-filled by it).
    grads = [torch.empty(shape, dtype=torch.float32) if (need and table is not None) else None
             for need, table in zip(needs, (amplitude, frequency, initial_phase))]
    amp, freq, theta = _contiguous(amplitude), _contiguous(frequency), _contiguous(initial_phase)
    args = (n, dim, vocab, tokens.data_ptr(), _ptr(positions), amp.data_ptr(), _ptr(freq), _ptr(theta),
            -1 if padding_idx is None else padding_idx, grad.data_ptr(), *(_ptr(g) for g in grads), int(rows))
    if any(g is not None for g in grads):
        code = _run(lib.co_wave_backward, args, dim, n * dim)
        if code == -1:
            raise _out_of_range(vocab)
        if code == -2:
            raise MemoryError(f"the native embedding backward could not allocate its {vocab}-byte word map")
    return grads[0], grads[1], grads[2]


def sincos(x: Tensor) -> tuple[Tensor, Tensor]:
    """``(sin(x), cos(x))`` of a float32 CPU tensor with the kernel's own routine (for tests)."""
    lib = _load()
    if lib is None:
        raise RuntimeError(f"the native kernel is {status()}")
    x = x.detach().to(torch.float32).contiguous()
    s, c = torch.empty_like(x), torch.empty_like(x)
    lib.co_sincos_array(x.numel(), x.data_ptr(), s.data_ptr(), c.data_ptr())
    return s, c
