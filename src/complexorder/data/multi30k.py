"""Multi30k English-German (WMT16 multimodal task 1): reading, the two pre-processings, a downloader.

Files live under ``<data dir>/translation/multi30k/{train,val,test2016}.{en,de}``: raw, true-cased
sentences, one per line, aligned by line number (see :func:`complexorder.data.paths.resolve_data_dir`).

Pre-processings (both give one joint vocabulary for the two languages, ids
``<pad>=0, <unk>=1, <s>=2, </s>=3``):

- ``"bpe"``: a joint sentencepiece BPE model trained on the training split only; byte fall-back,
  so characters never seen in training are spelled as bytes instead of ``<unk>``; decoding
  gives detokenized, true-cased text.
- ``"word"``: lower-cased word tokens (the mteval-13a tokenizer, as the 2019 setups the paper
  compares with); words rarer than ``min_frequency`` in training become ``<unk>``; decoding
  gives tokenized, lower-cased text.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import io
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch

from ..checkpoint import _removing_made_dirs, atomic_write_bytes
from .download import fetch
from .paths import require_file, resolve_data_dir
from .text import check_line_bytes

__all__ = ["SPLITS", "PAD", "UNK", "BOS", "EOS", "SPECIALS", "multi30k_dir", "split_files", "read_lines", "decode_lines",
           "read_parallel", "FilterReport", "filter_training_pairs", "SubwordTokenizer", "WordTokenizer",
           "build_tokenizer", "tokenizer_from_state", "download_multi30k"]

SPLITS = ("train", "val", "test2016")
PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")

_HOW_TO_GET = ("run `complexorder translate download --data-dir DIR` (needs network) or copy the Multi30k raw "
               "files there as {split}.{lang}")
_SOURCE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}.{lang}.gz"
_SOURCE_NAME = {"train": "train", "val": "val", "test2016": "test_2016_flickr"}
#: SHA-256 of the uncompressed files (as distributed by the Multi30k project, one sentence per line).
_SHA256 = {
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.de": "366863c09b91e91c100bc87501a85fe1ce49270c2301de46d39075aee5ce8021",
    "test2016.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test2016.de": "c1d2f544471a7387e37d15f1adf075ff7d6fe57a30840bb969281ae102d24cb1",
}


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------


def multi30k_dir(data_dir: str | Path | None = None) -> Path:
    """``<data dir>/translation/multi30k``."""
    return resolve_data_dir(data_dir) / "translation" / "multi30k"


def split_files(data_dir: str | Path | None, split: str, src_lang: str = "en", tgt_lang: str = "de") -> tuple[Path, Path]:
    """The existing ``(source, target)`` files of ``split``; a missing one is a one-line error."""
    if split not in SPLITS:
        raise ValueError(f"unknown Multi30k split {split!r}; valid splits: {', '.join(SPLITS)}")
    folder = multi30k_dir(data_dir)
    return cast("tuple[Path, Path]",
                tuple(require_file(folder / f"{split}.{lang}", _HOW_TO_GET.format(split=split, lang=lang))
                      for lang in (src_lang, tgt_lang)))


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 text file, split on ``\\n`` only, stripped (``\\r`` included); a final newline adds no line.

    A UTF-8 byte-order mark at the start of the file is not part of its first sentence: it is dropped."""
    path = Path(path)
    return decode_lines(path.read_bytes(), str(path))


def decode_lines(data: bytes, name: str) -> list[str]:
    """:func:`read_lines` of bytes read elsewhere (standard input, say); ``name`` is used in the error."""
    check_line_bytes(data, name, "a UTF-8 text file (UTF-16 or binary?); convert it to UTF-8, one sentence per line")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"{name}:{line}: not valid UTF-8 (byte {data[exc.start]:#04x}); "
                         f"convert the file to UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte-order mark (Windows editors write one) was read into line 1
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.strip() for line in lines]


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> list[tuple[str, str]]:
    """Aligned ``(source, target)`` sentence pairs; files of different lengths are a one-line error."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise ValueError(f"parallel files differ in length: {src_path} has {len(src)} lines but {tgt_path} has "
                         f"{len(tgt)}; both need one sentence per line, aligned by line number")
    return list(zip(src, tgt))


@dataclass
class FilterReport:
    """What :func:`filter_training_pairs` dropped (1-based line numbers)."""

    total: int
    empty: list[int] = field(default_factory=list)
    overlong: list[int] = field(default_factory=list)
    max_tokens: int = 0

    @property
    def kept(self) -> int:
        return self.total - len(self.empty) - len(self.overlong)

    def describe(self) -> str:
        parts = [f"kept {self.kept} of {self.total} training pairs"]
        if self.empty:
            parts.append(f"dropped {len(self.empty)} with an empty side (first at line {self.empty[0]})")
        if self.overlong:
            parts.append(f"dropped {len(self.overlong)} longer than {self.max_tokens} tokens "
                         f"(first at line {self.overlong[0]})")
        return "; ".join(parts)


def filter_training_pairs(pairs: Sequence[tuple[str, str]], encoded: Sequence[tuple[Sequence[int], Sequence[int]]],
                          max_tokens: int) -> tuple[list[int], FilterReport]:
    """Indices of the training pairs to keep: both sides non-blank and at most ``max_tokens`` tokens each.

    Only training data is filtered; evaluation and translation keep every sentence in full.
    """
    report = FilterReport(total=len(pairs), max_tokens=max_tokens)
    keep = []
    for i, ((src, tgt), (src_ids, tgt_ids)) in enumerate(zip(pairs, encoded)):
        if not src.strip() or not tgt.strip():
            report.empty.append(i + 1)
        elif len(src_ids) > max_tokens or len(tgt_ids) > max_tokens:
            report.overlong.append(i + 1)
        else:
            keep.append(i)
    return keep, report


# --------------------------------------------------------------------------------------
# Tokenizers: text <-> ids, serialisable into a checkpoint
# --------------------------------------------------------------------------------------


#: Every line separator of ``str.splitlines``; a decoded translation must not hold one.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _one_line(text: str) -> str:
    """``text`` with each line break as a space: a translation is one line of the output file."""
    return _LINE_BREAKS.sub(" ", text)


class SubwordTokenizer:
    """Joint sentencepiece BPE (byte fall-back) with the ids ``<pad>=0, <unk>=1, <s>=2, </s>=3``.

    Args:
        model_proto: the serialised sentencepiece model (as stored in checkpoints).
    """

    kind = "bpe"

    def __init__(self, model_proto: bytes) -> None:
        import sentencepiece as spm

        self.model_proto = bytes(model_proto)
        self.processor = spm.SentencePieceProcessor(model_proto=self.model_proto)

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> "SubwordTokenizer":
        """Train a BPE model of about ``vocab_size`` pieces on ``texts`` (training data only)."""
        import sentencepiece as spm

        texts = [t for t in texts if t]
        if not texts:
            raise ValueError("cannot train a subword vocabulary on no text")
        if vocab_size < 1:
            raise ValueError(f"data.vocab_size must be positive, got {vocab_size}")
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts), model_writer=model, model_type="bpe", vocab_size=vocab_size,
                character_coverage=1.0, byte_fallback=True, hard_vocab_limit=False, pad_id=PAD, unk_id=UNK,
                bos_id=BOS, eos_id=EOS, pad_piece=SPECIALS[PAD], unk_piece=SPECIALS[UNK], bos_piece=SPECIALS[BOS],
                eos_piece=SPECIALS[EOS], num_threads=1, minloglevel=2, max_sentence_length=1 << 16)
        except RuntimeError as exc:  # sentencepiece's checks: "INTERNAL: file.cc(N) [check] reason"
            reason = str(exc).split("] ", 1)[-1].strip()
            need = re.search(r"smaller than required_chars\. \d+ vs (\d+)", reason)
            if need or not reason:  # below the special pieces sentencepiece gives no reason at all
                least = need.group(1) if need else len(SPECIALS) + 256 + len(set().union(*texts))
                reason = (f"it needs at least {least} pieces ({len(SPECIALS)} special, 256 byte fall-back and one "
                          f"per distinct character of the training text)")
            raise ValueError(f"data.vocab_size={vocab_size}: cannot train a BPE vocabulary of that size: {reason}") from None
        return cls(model.getvalue())

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.processor.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        # byte fall-back pieces can spell a line break; a translation is one line of the output file
        return _one_line(self.processor.decode([i for i in ids if i > EOS]))

    def state(self) -> dict:
        return {"kind": self.kind, "model": torch.frombuffer(bytearray(self.model_proto), dtype=torch.uint8)}


class WordTokenizer:
    """Lower-cased mteval-13a word tokens over a joint vocabulary (``itos``: id -> word, specials first)."""

    kind = "word"

    def __init__(self, itos: Sequence[str]) -> None:
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a word vocabulary must start with {', '.join(SPECIALS)}")
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self._tokenize = Tokenizer13a()

    def tokenize(self, text: str) -> list[str]:
        return self._tokenize(text.lower()).split()

    @classmethod
    def train(cls, texts: Iterable[str], min_frequency: int = 2) -> "WordTokenizer":
        """Vocabulary of the words seen at least ``min_frequency`` times (most frequent first)."""
        counts: collections.Counter[str] = collections.Counter()
        tok = cls(SPECIALS)
        for text in texts:
            counts.update(tok.tokenize(text))
        words = sorted((w for w, c in counts.items() if c >= min_frequency and w not in SPECIALS),
                       key=lambda w: (-counts[w], w))
        if not words:  # every sentence would be <unk> only
            most = max(counts.values(), default=0)
            raise ValueError(f"data.min_frequency={min_frequency} leaves no word in the vocabulary: the most frequent "
                             f"word of the training text occurs {most} time(s)")
        return cls(list(SPECIALS) + words)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(w, UNK) for w in self.tokenize(text)]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.itos[i] for i in ids if i == UNK or i > EOS)

    def state(self) -> dict:
        return {"kind": self.kind, "itos": list(self.itos)}


def build_tokenizer(preprocessing: str, texts: Iterable[str], *, vocab_size: int = 8000,
                    min_frequency: int = 2) -> SubwordTokenizer | WordTokenizer:
    """``"bpe"`` (sentencepiece, ``vocab_size``) or ``"word"`` (lower-cased words, ``min_frequency``)."""
    if preprocessing == "bpe":
        return SubwordTokenizer.train(texts, vocab_size)
    if preprocessing == "word":
        return WordTokenizer.train(texts, min_frequency)
    raise ValueError(f"unknown preprocessing {preprocessing!r}; valid: 'bpe', 'word'")


def tokenizer_from_state(state: dict) -> SubwordTokenizer | WordTokenizer:
    """Rebuild a tokenizer saved with ``.state()`` (e.g. from a checkpoint)."""
    kind = state.get("kind") if isinstance(state, dict) else None
    if kind not in ("bpe", "word"):
        raise ValueError(f"unknown tokenizer kind {kind!r} in checkpoint; expected 'bpe' or 'word'")
    key = "model" if kind == "bpe" else "itos"
    if key not in state:
        raise ValueError(f"the checkpoint's {kind} tokenizer has no {key!r} entry; it was not written by "
                         "`complexorder translate train`, or was damaged")
    try:
        if kind == "bpe":
            if not (isinstance(state["model"], torch.Tensor) and state["model"].dtype == torch.uint8):
                raise TypeError(f"expected a uint8 tensor, got {type(state['model']).__name__}")
            return SubwordTokenizer(state["model"].numpy().tobytes())
        return WordTokenizer(state["itos"])
    except (RuntimeError, TypeError, ValueError, AttributeError, IndexError) as exc:  # sentencepiece: RuntimeError
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise ValueError(f"the checkpoint's {kind} tokenizer cannot be rebuilt ({detail}); the checkpoint is damaged "
                         "or was not written by `complexorder translate train`") from None


# --------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------


def download_multi30k(data_dir: str | Path | None = None, *, timeout: float = 60.0, progress: bool = True,
                      verify: bool = True) -> Path:
    """Fetch the six raw Multi30k files into ``<data dir>/translation/multi30k`` and check them.

    Files already present with the right SHA-256 are kept. A file already present whose SHA-256 differs (an edit of
    one's own, another release) is never replaced: a one-line :class:`ValueError` names it before anything is
    fetched. Offline: a one-line :class:`ConnectionError` naming the URL; a fetched file that does not match its
    checksum is a :class:`ValueError` and is not kept. ``verify=False`` (``translate download --skip-checksum``)
    keeps both as they are, as ``complexorder download --skip-checksum`` does. ``progress=False`` hides the downloads'
    bars.
    """
    folder = multi30k_dir(data_dir)
    missing = []
    for split in SPLITS:
        for lang in ("en", "de"):
            dest = folder / f"{split}.{lang}"
            if not dest.is_file():
                missing.append((split, lang))
                continue
            got, expected = hashlib.sha256(dest.read_bytes()).hexdigest(), _SHA256[f"{split}.{lang}"]
            if verify and got != expected:  # was replaced by the download without a word, the user's edit lost
                raise ValueError(f"{dest} exists but differs from the reference (sha256 {got[:12]}…, expected "
                                 f"{expected[:12]}…); move it away to download it again, or pass --skip-checksum "
                                 "(verify=False) to keep it as it is")
    # each archive is removed once read, and .download/ with it when this made it and it is empty
    with _removing_made_dirs(folder / ".download", always=True):
        for split, lang in missing:
            dest = folder / f"{split}.{lang}"
            expected = _SHA256[f"{split}.{lang}"]
            url = _SOURCE_URL.format(name=_SOURCE_NAME[split], lang=lang)
            archive = fetch(url, folder / ".download" / f"{split}.{lang}.gz", timeout=timeout, what="--data-dir",
                            progress=progress)
            blob = archive.read_bytes()
            try:
                data = gzip.decompress(blob)
            except (OSError, EOFError, zlib.error) as exc:  # not gzip (a proxy's HTML page), cut short or damaged
                archive.unlink()
                raise ValueError(f"{url} did not give a readable gzip file ({exc}); removed {archive}, so the "
                                 "next run downloads it again") from None
            got = hashlib.sha256(data).hexdigest()
            if got != expected and verify:
                archive.unlink()
                raise ValueError(f"checksum mismatch for {url} (uncompressed): expected sha256 {expected}, got {got}; "
                                 "pass --skip-checksum (verify=False) to keep it")
            atomic_write_bytes(dest, data)
            archive.unlink()
    return folder
