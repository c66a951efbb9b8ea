"""The switch for checks that read tensor *values* on every forward call.

The embeddings read their token ids (inside the vocabulary?) and their positions (finite? exact in float32?), the
attention layers a floating-point mask (only 0 and -inf?), and the translation model's ``reorder_cache`` its beam
index: one small reduction and one read of its result each. On the CPU that costs microseconds. On a GPU each read
waits for the device (a host-device synchronisation), which stalls the queue of kernels every call.
:class:`set_value_checks` turns them off, for a loop whose inputs are known to be good.
The checks of types, shapes and arguments stay on: they read no values.
"""

from __future__ import annotations

from types import TracebackType

__all__ = ["set_value_checks", "value_checks_enabled"]

_enabled = True


def value_checks_enabled() -> bool:
    """Whether the checks that read tensor values run (``True`` unless :class:`set_value_checks` turned them off)."""
    return _enabled


class set_value_checks:
    r"""Turn the value checks on or off, as a call or as a context manager (as :class:`torch.autograd.set_grad_enabled`).

    With the checks off, bad values are not reported by this library: a token id outside the vocabulary is still an
    ``IndexError`` on the CPU, without the id (``index out of range in self`` from
    :func:`torch.nn.functional.embedding`, or the complex embeddings' CPU kernel's bounds check), and a device-side
    assertion on a GPU, as :class:`torch.nn.Embedding` gives; a position that is not finite or not exact in float32
    gives NaN or a rounded phase; a floating-point attention mask is read as ``-inf`` = masked, anything else kept; a
    beam index outside the cache is left to ``index_select``. The setting is global to the process (all threads), not
    per module.

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
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_value_checks: mode must be True or False, got {mode!r}")
        global _enabled
        self.prev = _enabled
        _enabled = mode

    def __enter__(self) -> set_value_checks:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        global _enabled
        _enabled = self.prev
