"""A word vocabulary built from training text only: id 0 = padding, id 1 = unknown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import torch

__all__ = ["Vocabulary", "PAD_TOKEN", "UNK_TOKEN"]

PAD_TOKEN, UNK_TOKEN = "<pad>", "<unk>"


class Vocabulary:
    """Words in order of first appearance by frequency; ``encode`` maps unknown words to ``<unk>``."""

    def __init__(self, words: Iterable[str]) -> None:
        self.itos: list[str] = [PAD_TOKEN, UNK_TOKEN]
        seen = set(self.itos)
        for w in words:
            if w not in seen:
                seen.add(w)
                self.itos.append(w)
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def from_texts(cls, texts: Iterable[list[str]], min_count: int = 1) -> "Vocabulary":
        counts = Counter(w for t in texts for w in t)
        return cls(w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count)

    pad_id, unk_id = 0, 1

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def encode(self, tokens: list[str]) -> torch.Tensor:
        """Ids of ``tokens``; an empty token list becomes ``[<unk>]`` (callers count those)."""
        ids = [self.stoi.get(t, self.unk_id) for t in tokens] or [self.unk_id]
        return torch.tensor(ids, dtype=torch.long)
