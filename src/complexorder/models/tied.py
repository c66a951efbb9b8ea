"""A ``load_state_dict`` guard for modules that hold one tensor under two names (tied weights)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["refuse_untied_state"]


def refuse_untied_state(first: str, second: str, fix: str) -> Callable[..., None]:
    """A ``register_load_state_dict_pre_hook`` hook for a module in which ``first`` and ``second`` (key prefixes, such
    as ``"src_embedding."`` and ``"tgt_embedding."``) name one shared tensor: a state dict holding two different
    tensors there (written by an untied model) is an error collected by ``load_state_dict``. PyTorch loads both names
    into the one tensor, the second overwriting the first, without a word. ``fix`` ends the message."""
    def hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) -> None:
        for key, value in state_dict.items():
            if not key.startswith(prefix + first):
                continue
            twin = prefix + second + key[len(prefix + first):]
            other = state_dict.get(twin)
            if isinstance(other, Tensor) and not (other.shape == value.shape and torch.equal(other, value)):
                error_msgs.append(f"{key} and {twin} differ, but this model holds one tensor for both: the state dict "
                                  f"is of an untied model; {fix}")
                return

    return hook
