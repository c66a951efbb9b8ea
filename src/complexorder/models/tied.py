"""A ``load_state_dict`` guard for modules that hold one tensor under two names (tied weights)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import Tensor

__all__ = ["refuse_untied_state", "tied_pairs"]


def tied_pairs(state: Mapping[str, object], first: str, second: str, prefix: str = ""
               ) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
    """The ``(key, twin)`` pairs of ``state`` that name one tied tensor twice: ``key`` under ``prefix + first``, its
    ``twin`` the same name under ``prefix + second``; and the first pair whose tensors differ (``None`` if none):
    a state dict written by an untied model."""
    pairs = [(key, prefix + second + key[len(prefix + first):]) for key in state if key.startswith(prefix + first)]
    pairs = [(key, twin) for key, twin in pairs if twin in state]
    differing = next(((key, twin) for key, twin in pairs if _differ(state[key], state[twin])), None)
    return pairs, differing


def _differ(a: object, b: object) -> bool:
    return isinstance(a, Tensor) and isinstance(b, Tensor) and not (a.shape == b.shape and torch.equal(a, b))


def refuse_untied_state(first: str, second: str, fix: str, *, drop_second: bool = False) -> Callable[..., None]:
    """A ``register_load_state_dict_pre_hook`` hook for a module in which ``first`` and ``second`` (key prefixes, such
    as ``"src_embedding."`` and ``"tgt_embedding."``) name one shared tensor: a state dict holding two different
    tensors there (written by an untied model) is an error collected by ``load_state_dict``. PyTorch loads both names
    into the one tensor, the second overwriting the first, without a word. ``fix`` ends the message.

    ``drop_second=True``: the module registers the shared tensor under ``first`` only, so the ``second`` keys of a
    state dict that has them (written when both names were registered) are checked and then removed, not reported
    as unexpected; a ``second`` key without its ``first`` twin is loaded under the ``first`` name. The hook is an object of a module-level class, so the module still pickles (``torch.save(model)``).
    """
    return _RefuseUntiedState(first, second, fix, drop_second)


class _RefuseUntiedState:
    def __init__(self, first: str, second: str, fix: str, drop_second: bool = False) -> None:
        self.first, self.second, self.fix, self.drop_second = first, second, fix, drop_second

    def __call__(self, module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs) -> None:
        pairs, differing = tied_pairs(state_dict, self.first, self.second, prefix)
        if differing is not None:
            error_msgs.append(f"{differing[0]} and {differing[1]} differ, but this model holds one tensor for both: "
                              f"the state dict is of an untied model; {self.fix}")
        if self.drop_second:  # after an error too: the twins are not "unexpected keys", their difference is the news
            for _, twin in pairs:
                del state_dict[twin]
            alone = [k for k in state_dict if k.startswith(prefix + self.second)]  # no first-name twin: a partial
            for key in alone:  # state dict of the target side alone loads into the one table, as it did before
                state_dict[prefix + self.first + key[len(prefix + self.second):]] = state_dict.pop(key)
