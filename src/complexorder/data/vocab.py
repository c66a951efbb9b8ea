"""A word vocabulary built from training text only: id 0 = padding, id 1 = unknown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import torch

__all__ = ["Vocabulary", "PAD_TOKEN", "UNK_TOKEN"]

PAD_TOKEN, UNK_TOKEN = "<pad>", "<unk>"

#: What the errors for a raw string say to do instead.
TOKENIZE = "tokenize first, e.g. with complexorder.data.text.kim_tokenize (the classification data's tokenizer)"


def _shown(text: str) -> str:
    """``text`` quoted, cut to 40 characters."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + " …"


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
        """The vocabulary of ``texts``, a list of token lists (``[["a", "good", "movie"], ...]``): words by
        descending count, ties alphabetically, those seen fewer than ``min_count`` times left out.

        A text given as a string (a raw sentence) is a one-line ``TypeError``: its characters would be taken for
        words. Tokenize first (:func:`~complexorder.data.text.kim_tokenize`, the classification data's tokenizer).
        """
        if isinstance(texts, str):
            raise TypeError(f"Vocabulary.from_texts takes a list of token lists, got the string {_shown(texts)}; "
                            f"{TOKENIZE}")
        counts: Counter[str] = Counter()
        for number, tokens in enumerate(texts):
            if isinstance(tokens, str):  # its characters would be counted as words
                raise TypeError(f"Vocabulary.from_texts takes a list of token lists, got the string {_shown(tokens)} "
                                f"as text {number}; {TOKENIZE}")
            counts.update(w for w in tokens)  # (a generator: a mapping's values would be added as counts)
        return cls(w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count)

    pad_id, unk_id = 0, 1

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def encode(self, tokens: list[str]) -> torch.Tensor:
        """Ids of ``tokens`` (a list of words); an empty token list becomes ``[<unk>]`` (callers count those).

        A string is a one-line ``TypeError`` (its characters would each be encoded, as ``<unk>``): tokenize first."""
        if isinstance(tokens, str):
            raise TypeError(f"Vocabulary.encode takes a list of tokens, got the string {_shown(tokens)}; "
                            f"{TOKENIZE}")
        ids = [self.stoi.get(t, self.unk_id) for t in tokens] or [self.unk_id]
        return torch.tensor(ids, dtype=torch.long)
