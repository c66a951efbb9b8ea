"""A ``load_state_dict`` guard for modules that hold one tensor under two names (tied weights)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["refuse_untied_state"]


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
        twins, reported = [], False
        for key, value in state_dict.items():
            if not key.startswith(prefix + self.first):
                continue
            twin = prefix + self.second + key[len(prefix + self.first):]
            if twin not in state_dict:
                continue
            twins.append(twin)
            other = state_dict[twin]
            if not reported and isinstance(other, Tensor) and not (other.shape == value.shape
                                                                   and torch.equal(other, value)):
                error_msgs.append(f"{key} and {twin} differ, but this model holds one tensor for both: the state dict "
                                  f"is of an untied model; {self.fix}")
                reported = True  # the first pair that differs is named
        if self.drop_second:  # after an error too: the twins are not "unexpected keys", their difference is the news
            for twin in twins:
                del state_dict[twin]
            alone = [k for k in state_dict if k.startswith(prefix + self.second)]  # no first-name twin: a partial
            for key in alone:  # state dict of the target side alone loads into the one table, as it did before
                state_dict[prefix + self.first + key[len(prefix + self.second):]] = state_dict.pop(key)
