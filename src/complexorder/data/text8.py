"""text8 (Mahoney 2011) and a text8-format proxy corpus for character-level language modelling.

A *text8-format corpus* is a directory with ``train.txt``, ``valid.txt`` and ``test.txt`` holding
only the 27 characters ``a``-``z`` and the space (no line breaks). Characters are ids ``0`` (space) to
``26`` (``z``), see :data:`TEXT8_ALPHABET`. text8 and the corpora built here hold single spaces only; a
corpus of your own with runs of spaces is read as it is (each space is a character to predict), not refused.

**Characters outside the alphabet are an error, never silently mapped**: :func:`encode_text8`
(and so every loader) raises a one-line ``ValueError`` naming the file, the offset and the
character. Text that is not text8-format yet is normalised first with :func:`normalise_text8`
(what :func:`build_proxy_corpus` does), which reports how many characters it replaced.

Two ways to get a corpus:

* **text8** (100M characters of English Wikipedia): :func:`download_text8` (network) or a local
  ``text8``/``text8.zip`` file, then :func:`prepare_text8` writes the standard split of
  Mikolov et al. (2012): the first 90M characters for training, the next 5M for validation,
  the last 5M for test.
* **the proxy corpus** built here from the English text in ``../shared/data`` (no network):
  :func:`build_proxy_corpus`, deterministic, split 90/5/5.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..checkpoint import atomic_write_bytes, atomic_write_text
from .download import fetch, sha256_of
from .paths import require_file

__all__ = ["TEXT8_ALPHABET", "TEXT8_URL", "TEXT8_ZIP_BYTES", "TEXT8_ZIP_SHA256", "TEXT8_SHA256", "TEXT8_CHARACTERS", "TEXT8_SPLIT_SIZES", "SPLITS",
           "PROXY_SOURCES", "check_sha256", "encode_text8", "decode_text8", "normalise_text8", "load_corpus", "prepare_text8",
           "download_text8", "build_proxy_corpus", "check_corpus_out", "read_lines"]

TEXT8_ALPHABET = " abcdefghijklmnopqrstuvwxyz"
TEXT8_URL = "http://mattmahoney.net/dc/text8.zip"
#: Size of Mahoney's text8.zip in bytes, as checked by TensorFlow's word2vec tutorial and many others.
TEXT8_ZIP_BYTES = 31_344_016
#: SHA-256 of Mahoney's ``text8.zip`` and of the ``text8`` file inside it. Not computed here (no
#: network on the machines this project is built on): taken from independent public projects that
#: pin them (several agree on each digest); :func:`prepare_text8` refuses a file that differs
#: unless ``verify=False``.
TEXT8_ZIP_SHA256 = "a6640522afe85d1963ad56c05b0ede0a0c000dddc9671758a6cc09b7a38e5232"
TEXT8_SHA256 = "6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7"
TEXT8_CHARACTERS = 100_000_000
TEXT8_SPLIT_SIZES = (90_000_000, 5_000_000, 5_000_000)
SPLITS = ("train", "valid", "test")

_LOOKUP = np.full(256, -1, dtype=np.int16)
for _i, _c in enumerate(TEXT8_ALPHABET):
    _LOOKUP[ord(_c)] = _i
_DIGITS = dict(zip("0123456789", ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")))
_DIGIT_TABLE = str.maketrans({d: f" {w} " for d, w in _DIGITS.items()})
_NOT_LETTERS = re.compile(r"[^a-z]+")
_PTB_BRACKETS = re.compile(r"-[lr][rcs]b-", re.IGNORECASE)  # SST writes "(" as -LRB-, ")" as -RRB-


# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------


def encode_text8(text: str | bytes, source: str = "text") -> Tensor:
    """Character ids (``torch.uint8``, 0 = space, 1..26 = a..z) of a text8-format string or bytes.

    Raises:
        ValueError: at the first character outside ``a``-``z`` and space, naming ``source``,
            the offset and the character.
    """
    data = text.encode("latin-1", errors="replace") if isinstance(text, str) else bytes(text)
    raw = np.frombuffer(data, dtype=np.uint8)
    ids = _LOOKUP[raw]
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        offset = int(bad[0])
        fix = ("Normalise the text first (complexorder lm build-corpus, or "
               "complexorder.data.text8.normalise_text8)")
        if isinstance(text, str) or raw[offset] < 0x80:
            char = text[offset] if isinstance(text, str) else chr(raw[offset])
            raise ValueError(f"{source}: character {char!r} (code {ord(char):#x}) at offset {offset} is outside "
                             f"the text8 alphabet (a-z and space); {bad.size} such character(s) in all. {fix}")
        # a byte of a multi-byte character (a text8 file is ASCII): name the character UTF-8 makes of it
        char = next((c for c in (_utf8_char(data[offset:offset + k]) for k in (2, 3, 4)) if c), "")
        what = (f"character {char!r} (UTF-8 bytes {char.encode().hex(' ')})" if char
                else f"byte {raw[offset]:#x} (not UTF-8 text)")
        raise ValueError(f"{source}: {what} at byte offset {offset} is outside the text8 alphabet (a-z and "
                         f"space); {bad.size} byte(s) outside it in all. {fix}")
    return torch.from_numpy(ids.astype(np.uint8))


def _utf8_char(chunk: bytes) -> str:
    """``chunk`` decoded as one UTF-8 character, or ``""``."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return text if len(text) == 1 else ""


def decode_text8(ids: Tensor) -> str:
    """The string of character ids (inverse of :func:`encode_text8`)."""
    return "".join(TEXT8_ALPHABET[i] for i in ids.tolist())


def normalise_text8(text: str) -> tuple[str, int]:
    """Mahoney's text8 normalisation of one piece of text; returns ``(text, replaced)``.

    Lower-case; accents dropped (``é`` -> ``e``, Unicode NFKD); digits spelled out (``1`` ->
    ``one``, as Mahoney's ``wikifil.pl``); every other character (punctuation, apostrophes,
    symbols, line breaks) becomes a space; runs of spaces become one; no leading or trailing
    space. ``replaced`` counts the characters that were neither letters, digits nor spaces.
    """
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()
    replaced = sum(1 for c in folded if not (c.isascii() and (c.isalnum() or c == " ")))
    spelled = folded.translate(_DIGIT_TABLE)
    return _NOT_LETTERS.sub(" ", spelled).strip(), replaced


# --------------------------------------------------------------------------------------
# Reading a corpus
# --------------------------------------------------------------------------------------


def load_corpus(corpus_dir: str | Path, splits: tuple[str, ...] = SPLITS) -> dict[str, Tensor]:
    """The character ids of ``corpus_dir/{split}.txt`` for each split (``torch.uint8``, 1-d)."""
    corpus_dir = Path(corpus_dir)
    if corpus_dir.is_file():
        raise NotADirectoryError(f"corpus {corpus_dir} is a file; pass the corpus directory that holds train.txt, "
                                 f"valid.txt and test.txt (here {corpus_dir.parent})")
    if not corpus_dir.is_dir():
        raise FileNotFoundError(f"corpus directory {corpus_dir} does not exist; build one with "
                                f"'complexorder lm build-corpus' or 'complexorder lm prepare-text8'")
    out = {}
    for split in splits:
        path = require_file(corpus_dir / f"{split}.txt", "a text8-format corpus has train.txt, valid.txt and "
                                                          "test.txt (see 'complexorder lm build-corpus --help')")
        out[split] = encode_text8(path.read_bytes(), source=str(path))
    return out


def check_sha256(digest: str, what: str = "sha256") -> str:
    """``digest`` lower-cased when it is a SHA-256 digest (64 hexadecimal characters), else a one-line
    ``ValueError`` naming ``what`` (the option that gave it)."""
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", digest.strip()):
        raise ValueError(f"{what} must be a SHA-256 digest (64 hexadecimal characters), got {digest!r}")
    return digest.strip().lower()


def prepare_text8(source: str | Path, out_dir: str | Path, verify: bool = True, sha256: str | None = None) -> dict:
    """Write the standard 90M/5M/5M split of ``text8`` (the file or ``text8.zip``) into ``out_dir``.

    The content must be 100M characters of the text8 alphabet and, unless ``verify=False``, have
    the SHA-256 :data:`TEXT8_SHA256` (a one-line ``ValueError`` otherwise; nothing is written).
    ``sha256`` (the user's own pinned digest, ``--sha256``) is checked instead of
    :data:`TEXT8_SHA256`: it must be the SHA-256 of the ``source`` file itself or of its text8
    content (the same for an unzipped file); the manifest records which (``"verified_by"``).
    """
    source = Path(source)
    if sha256 is not None:
        sha256 = check_sha256(sha256, "--sha256")
    require_file(source, f"download it from {TEXT8_URL} or run 'complexorder lm prepare-text8 --download'")
    zipped = zipfile.is_zipfile(source)
    if zipped:
        try:
            with zipfile.ZipFile(source) as zf:
                if "text8" not in zf.namelist():
                    raise ValueError(f"{source}: zip archive without a 'text8' member (has {zf.namelist()[:3]})")
                data = zf.read("text8")
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:  # cut short or damaged
            raise ValueError(f"{source}: the zip archive cannot be read ({exc}); download it again") from None
    else:
        data = source.read_bytes()
    if len(data) != TEXT8_CHARACTERS:
        raise ValueError(f"{source}: text8 has {TEXT8_CHARACTERS:,} characters of one byte each, this file "
                         f"{len(data):,} bytes; is it the right file?")
    encode_text8(data, source=str(source))  # alphabet check
    digest = hashlib.sha256(data).hexdigest()
    file_digest = sha256_of(source) if zipped else digest  # an unzipped file is its content: hash 100 MB once
    verified_by = None
    if sha256 is not None:
        if sha256 not in (file_digest, digest):
            content = "" if file_digest == digest else f" and its text8 content {digest}"
            raise ValueError(f"{source}: the file has sha256 {file_digest}{content}, expected {sha256} (--sha256); "
                             f"is it the file you pinned?")
        verified_by = "--sha256 (file)" if sha256 == file_digest else "--sha256 (text8 content)"
    elif verify:
        if digest != TEXT8_SHA256:
            raise ValueError(f"{source}: the text8 content has sha256 {digest}, expected {TEXT8_SHA256} (Mahoney's "
                             f"text8); pass --skip-checksum to use this file anyway, or --sha256 with your own "
                             f"pinned digest")
        verified_by = "Mahoney's text8"
    out_dir = Path(out_dir)
    bounds = np.cumsum((0,) + TEXT8_SPLIT_SIZES)
    manifest: dict[str, Any]
    manifest = {"format": "text8", "source": str(source), "sha256_source": file_digest, "sha256_text8": digest,
                "verified": digest == TEXT8_SHA256, "sha256_pinned": sha256, "verified_by": verified_by,
                "splits": {}}
    for split, lo, hi in zip(SPLITS, bounds[:-1], bounds[1:]):
        atomic_write_bytes(out_dir / f"{split}.txt", data[lo:hi])
        manifest["splits"][split] = {"characters": int(hi - lo),
                                     "sha256": hashlib.sha256(data[lo:hi]).hexdigest()}
    atomic_write_text(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def download_text8(data_dir: str | Path, sha256: str | None = TEXT8_ZIP_SHA256, *, progress: bool = True) -> Path:
    """Download ``text8.zip`` into ``data_dir`` (atomically) and check it.

    The archive must have :data:`TEXT8_ZIP_BYTES` bytes and the SHA-256 ``sha256`` (by default
    :data:`TEXT8_ZIP_SHA256`; ``None`` checks the size only); a mismatch is a ``ValueError`` and
    nothing is kept. :func:`prepare_text8` then checks the content. ``progress=False`` hides the download's bar.
    """
    dest = Path(data_dir) / "text8.zip"
    fetch(TEXT8_URL, dest, sha256=sha256, what="--data-dir", progress=progress)
    size = dest.stat().st_size
    if size != TEXT8_ZIP_BYTES:
        dest.unlink()
        raise ValueError(f"downloaded {TEXT8_URL} has {size:,} bytes, expected {TEXT8_ZIP_BYTES:,}; file removed")
    return dest


# --------------------------------------------------------------------------------------
# The proxy corpus from ../shared/data
# --------------------------------------------------------------------------------------

#: (path under the data directory, what to strip from each line). SST-2's ``phrases.train.tsv``
#: is left out on purpose: its 67k phrases are sub-phrases of the SST training sentences, and
#: repeating them would fill the corpus with copies of the same text.
PROXY_SOURCES: tuple[tuple[str, str], ...] = (
    ("translation/multi30k/train.en", "line"),
    ("translation/multi30k/val.en", "line"),
    ("translation/multi30k/test2016.en", "line"),
    ("classification/MR/rt-polarity.pos", "line"),
    ("classification/MR/rt-polarity.neg", "line"),
    ("classification/SUBJ/subj.subjective", "line"),
    ("classification/SUBJ/subj.objective", "line"),
    ("classification/CR/custrev.pos", "line"),
    ("classification/CR/custrev.neg", "line"),
    ("classification/MPQA/mpqa.pos", "line"),
    ("classification/MPQA/mpqa.neg", "line"),
    ("classification/SST2/stsa.binary.train", "first-field"),
    ("classification/SST2/stsa.binary.dev", "first-field"),
    ("classification/SST2/stsa.binary.test", "first-field"),
    ("classification/TREC/train_5500.label", "first-field"),
    ("classification/TREC/TREC_10.label", "first-field"),
)


def read_lines(path: Path) -> tuple[list[str], int]:
    """Lines of a file split on ``\\n`` only; each decoded as UTF-8, else cp1252 (else Latin-1).

    Returns ``(lines, fallback)``, ``fallback`` counting the lines that were not UTF-8. Splitting
    on ``\\n`` only matters: these files contain the byte 0x85, a line break for ``str.splitlines``.
    """
    lines, fallback = [], 0
    for raw in path.read_bytes().split(b"\n"):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            fallback += 1
            try:
                lines.append(raw.decode("cp1252"))
            except UnicodeDecodeError:  # the five bytes cp1252 leaves undefined
                lines.append(raw.decode("latin-1"))
    return lines, fallback


def check_corpus_out(source_dir: str | Path, out_dir: str | Path, option: str = "out_dir") -> None:
    """A one-line ``ValueError`` (naming ``option``) when ``out_dir`` is ``source_dir`` or lies in a folder the proxy
    corpus is read from (``classification/``, ``translation/``): its files would be written beside the data sets'."""
    source_dir, out = Path(source_dir), Path(out_dir).resolve()
    read = [source_dir / top for top in dict.fromkeys(Path(rel).parts[0] for rel, _ in PROXY_SOURCES)]
    inside = [folder for folder in [source_dir, *read] if out == folder.resolve()
              or (folder != source_dir and out.is_relative_to(folder.resolve()))]
    if inside:  # stop 81: --out DATA/classification/MR wrote train.txt, ... beside the data set's files
        raise ValueError(f"{option} {out_dir} is {'' if out == inside[0].resolve() else 'inside '}{inside[0]}, which "
                         "the proxy corpus is read from; write it elsewhere (the default: DATA_DIR/text8-proxy)")


def build_proxy_corpus(source_dir: str | Path, out_dir: str | Path, *, seed: int = 0,
                       fractions: tuple[float, float, float] = (0.90, 0.05, 0.05)) -> dict:
    """Build a text8-format corpus from the English text of the shared data; returns its manifest.

    Every line of :data:`PROXY_SOURCES` (labels stripped) is normalised with
    :func:`normalise_text8` (SST's tokens ``-LRB-``/``-RRB-`` count as the brackets they
    stand for); empty lines and exact duplicates (after normalisation, e.g. the
    sentences MR and SST share) are dropped; the remaining lines are put in a fixed
    pseudo-random order (sorted by SHA-256 of ``seed`` and the line, so the result depends on
    nothing but the input files and ``seed``), joined by single spaces into one stream, and cut
    into train/valid/test by character count (90/5/5 by default). Writes
    ``{train,valid,test}.txt`` and ``manifest.json`` into ``out_dir``.
    """
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        what = "is a file, not a directory" if source_dir.exists() else "does not exist"
        raise FileNotFoundError(f"source directory {source_dir} {what} (expected the shared data "
                                f"directory with classification/ and translation/)")
    if len(fractions) != 3 or min(fractions) <= 0 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    check_corpus_out(source_dir, out_dir)
    seen: set[str] = set()
    kept: list[str] = []
    sources = []
    replaced_total = 0
    for rel, kind in PROXY_SOURCES:
        path = require_file(source_dir / rel, "the proxy corpus reads the shared data set files listed in "
                                              "complexorder.data.text8.PROXY_SOURCES")
        lines, fallback = read_lines(path)
        stats: dict[str, Any]
        stats = {"path": rel, "lines": 0, "kept": 0, "duplicates": 0, "empty": 0, "non_utf8_lines": fallback}
        for line in lines:
            if not line.strip():
                continue
            stats["lines"] += 1
            if kind == "first-field":  # "LABEL sentence" (SST) or "COARSE:fine question" (TREC)
                line = line.strip().split(" ", 1)[1] if " " in line.strip() else ""
            text, replaced = normalise_text8(_PTB_BRACKETS.sub(" ( ", line))
            replaced_total += replaced
            if not text:
                stats["empty"] += 1
            elif text in seen:
                stats["duplicates"] += 1
            else:
                seen.add(text)
                kept.append(text)
                stats["kept"] += 1
        sources.append(stats)
    kept.sort(key=lambda t: hashlib.sha256(f"{seed}\n{t}".encode("ascii")).digest())
    stream = " ".join(kept)
    n = len(stream)
    n_valid, n_test = round(fractions[1] * n), round(fractions[2] * n)
    cuts = (0, n - n_valid - n_test, n - n_test, n)
    out_dir = Path(out_dir)
    manifest: dict[str, Any]
    manifest = {"format": "text8", "built_by": "complexorder.data.text8.build_proxy_corpus", "seed": seed,
                "fractions": list(fractions), "source_dir": str(source_dir), "sources": sources,
                "lines_kept": len(kept), "characters": n, "characters_replaced_by_space": replaced_total,
                "splits": {}}
    for split, lo, hi in zip(SPLITS, cuts[:-1], cuts[1:]):
        text = stream[lo:hi]
        atomic_write_text(out_dir / f"{split}.txt", text)
        manifest["splits"][split] = {"characters": hi - lo, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    atomic_write_text(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest
