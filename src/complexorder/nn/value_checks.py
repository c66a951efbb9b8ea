"""The switch for checks that read tensor *values* on every forward call.

The embeddings read their token ids (inside the vocabulary?) and their positions (finite? exact in float32? integers
in range, for the learned table?), and the attention layers a floating-point mask (only 0 and -inf?): one small
reduction and one read of its result each, every call. On the CPU that costs microseconds. On a GPU each read waits
for the device (a host-device synchronisation), which stalls the queue of kernels every call.
:class:`set_value_checks` turns them off, for a loop whose inputs are known to be good. ``reorder_cache``'s check of
its beam index, which runs on the CPU only, follows the switch too. The checks of types, shapes and arguments stay
on: they read no values.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["set_value_checks", "value_checks_enabled"]

_F = TypeVar("_F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True  # each thread starts with the checks on


_state = _State()


def value_checks_enabled() -> bool:
    """Whether the checks that read tensor values run in this thread (``True`` unless :class:`set_value_checks`
    turned them off)."""
    return _state.enabled


class set_value_checks:
    r"""Turn the value checks on or off in this thread: as a call, a context manager or a decorator, as
    :class:`torch.set_grad_enabled` works.

    With the checks off, bad values are not reported by this library:

    - a token id outside the vocabulary is an ``IndexError`` on the CPU without the id (``index out of range in
      self`` from :func:`torch.nn.functional.embedding`, or the complex embeddings' CPU kernel's bounds check), and a
      device-side assertion on a GPU, as :class:`torch.nn.Embedding` gives; a complex embedding whose tables are all
      word-shared (``[1, D]``) reads no row by id and raises nothing (its output does not depend on the ids);
    - a position that is not finite or not exact in float32 gives NaN or a rounded phase; a position outside the
      learned table is an ``IndexError``, and a fractional one is truncated to an integer row;
    - a floating-point attention mask is read as ``-inf`` = masked, anything else kept;
    - a beam index outside the cache is left to ``index_select`` (an ``IndexError`` on the CPU).

    The setting belongs to the thread that makes it, as torch's grad mode does: another thread starts with the
    checks on.

    Args:
        mode: ``True`` (the default state) runs the checks, ``False`` skips them.

    Examples::

        >>> import torch
        >>> from complexorder import ComplexOrderEmbedding, set_value_checks, value_checks_enabled
        >>> emb = ComplexOrderEmbedding(10, 4)
        >>> with set_value_checks(False):  # e.g. a GPU training loop over a checked data set
        ...     z = emb(torch.tensor([[1, 2, 3]]))
        ...     value_checks_enabled()
        False
        >>> value_checks_enabled()  # restored on leaving the block
        True
        >>> @set_value_checks(False)
        ... def embed(tokens):
        ...     return emb(tokens), value_checks_enabled()
        >>> embed(torch.tensor([[4, 5]]))[1], value_checks_enabled()
        (False, True)
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_value_checks: mode must be True or False, got {mode!r}")
        self.mode = mode
        self.prev = _state.enabled
        _state.enabled = mode

    def __enter__(self) -> set_value_checks:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _state.enabled = self.prev

    def __call__(self, function: _F) -> _F:
        """As a decorator: the setting is undone at once, and made anew around each call of ``function``."""
        _state.enabled = self.prev
        mode = self.mode

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_value_checks(mode):
                return function(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
