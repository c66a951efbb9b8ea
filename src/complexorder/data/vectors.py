"""Word vectors with gensim: train skip-gram word2vec on unlabeled text, load, and align to a vocabulary.

The paper initialises amplitudes (and the real baselines' word vectors) from the 300-d GoogleNews
word2vec vectors. Those are not on these machines, so ``complexorder vectors train`` trains 300-d
skip-gram vectors on the unlabeled sentences at hand instead; every result records the file used.
"""

from __future__ import annotations

import bz2
import codecs
import collections
import gzip
import json
import logging
import os
import platform
import warnings
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from ..checkpoint import _temporary_file_beside, check_writable
from ..environment import MAX_THREADS
from ..errors import naming_out_of_memory
from .classification import load_dataset
from .text import kim_tokenize, read_lines
from .vocab import Vocabulary

__all__ = ["unlabeled_sentences", "train_word2vec", "load_word_vectors", "vectors_for_vocabulary",
           "vectors_provenance", "provenance_path", "VECTOR_FORMATS"]

VECTOR_FORMATS = ("auto", "word2vec-binary", "word2vec-text", "glove")
MULTI30K_ENGLISH = ("train.en", "val.en", "test2016.en")
PAPER_DATASETS = ("MR", "SUBJ", "CR", "MPQA", "SST2", "TREC")


def unlabeled_sentences(data_dir: str | Path, datasets: Iterable[str] = PAPER_DATASETS,
                        include_multi30k: bool = True) -> list[list[str]]:
    """Kim-tokenised sentences of every part of ``datasets`` (labels unused) and of Multi30k's English side.

    Test sentences are included, as unlabeled text only (the issue's default corpus); no label is read.
    """
    sentences: list[list[str]] = []
    for name in datasets:
        data = load_dataset(name, data_dir)
        for texts in data.texts.values():
            sentences.extend(t for t in texts if t)
    if include_multi30k:
        folder = Path(data_dir) / "translation" / "multi30k"
        for filename in MULTI30K_ENGLISH:
            path = folder / filename
            if not path.is_file():
                raise FileNotFoundError(f"missing data file {filename} (expected at {path}); pass "
                                        "--no-multi30k to train on the classification sentences only")
            sentences.extend(t for t in (kim_tokenize(line) for line in read_lines(path)) if t)
    return sentences


def _library_versions() -> dict[str, str]:
    """Versions of what the trained vectors depend on (gensim's kernels call SciPy's BLAS, whose kernel depends on the CPU)."""
    import gensim
    import numpy
    import scipy

    from ..environment import cpu_info

    return {"gensim": gensim.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
            "python": platform.python_version(), "machine": platform.machine(), "cpu": cpu_info()["model"]}


def provenance_path(vectors: str | Path) -> Path:
    """Where :func:`train_word2vec` records how ``vectors`` was made: ``<file>.json`` beside it."""
    vectors = Path(vectors)
    return vectors.with_name(vectors.name + ".json")


def vectors_provenance(vectors: str | Path, sha256: str | None = None) -> dict | None:
    """The provenance record written beside ``vectors`` by :func:`train_word2vec`, or ``None`` when there is
    none, it is unreadable, or it describes another file (its ``sha256`` differs from ``sha256``, when given)."""
    try:
        record = json.loads(provenance_path(vectors).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or (sha256 is not None and record.get("sha256") != sha256):
        return None
    return record


#: gensim's seed range (``Seed must be between 0 and 2**32 - 1``).
SEED_RANGE = (0, 2**32 - 1)


def check_word2vec_settings(dim: int, epochs: int, min_count: int, option=lambda name: name, *, seed: int = 1,
                            workers: int = 1) -> None:
    """One-line errors for :func:`train_word2vec`'s settings; ``option`` names each (the CLI: ``--dim`` etc.).
    Nothing here needs the corpus, so the CLI calls it before reading one (``min_count`` above the count of the
    most frequent word is found by :func:`train_word2vec`)."""
    for name, value in (("dim", dim), ("epochs", epochs), ("min_count", min_count)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{option(name)} must be a positive integer, got {value!r}")
        if value > 2**31 - 1:  # stop 81: --dim 10**20 read the corpus, then said "Maximum allowed dimension exceeded"
            raise ValueError(f"{option(name)} must be at most {2**31 - 1:,}, got {value:,}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{option('workers')} must be a positive integer (gensim threads), got {workers!r}")
    if workers > MAX_THREADS:  # at 100,000 gensim failed with "RuntimeError: can't start new thread"
        raise ValueError(f"{option('workers')}: at most {MAX_THREADS} gensim threads, got {workers} (this machine "
                         f"has {os.cpu_count()} cores)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise ValueError(f"{option('seed')} must be an integer in [{SEED_RANGE[0]}, {SEED_RANGE[1]}] (gensim's "
                         f"seed range), got {seed!r}")


def check_vectors_out(out: str | Path, name: str = "out", force: bool = True) -> None:
    """A one-line error unless ``out`` may take new word vectors: missing, or (with ``force``) a regular file that is
    empty or holds word vectors (a word2vec ``<count> <dim>`` header or a GloVe row as its first line, compressed or
    not). A device or pipe would be replaced by a regular file (the vectors are written beside it and renamed over
    it: ``--out /dev/null`` as root removed the device), and a results file or a config would be lost."""
    out = Path(out)
    if not out.exists() or out.is_dir():  # a directory: check_writable names it
        return
    if not out.is_file():
        raise ValueError(f"{name} {out} is not a regular file; word vectors (and a .json provenance record beside "
                         "them) go to a file")
    if not force or out.stat().st_size == 0:  # an empty file: nothing to lose
        return
    try:
        first = _read_head(out)[0].split()
    except ValueError:  # named .gz but not compressed: not vectors either
        first = []
    header = len(first) == 2 and all(part.isdigit() for part in first)
    if not (header or (len(first) > 2 and all(_is_number(part) for part in first[1:]))):
        raise ValueError(f"{name} {out} exists and is not a word-vectors file (its first line is neither a '<count> "
                         "<dim>' header nor a GloVe row); only word vectors are replaced: give another path")


def train_word2vec(sentences: list[list[str]], out: str | Path, *, dim: int = 300, epochs: int = 5, window: int = 5,
                   min_count: int = 1, negative: int = 5, seed: int = 1, workers: int = 1, option=lambda name: name):
    """Train skip-gram word2vec (gensim) and save it atomically in word2vec text format; returns the KeyedVectors.

    With ``workers=1`` the vectors are a function of the corpus, ``seed`` and the numerical libraries
    (the same file on every run with the same gensim, NumPy and SciPy builds; other builds give other
    floats); with more threads gensim's result depends on thread scheduling and differs run to run.
    Beside the file, ``<out>.json`` records its sha256, the training settings, the corpus size and those
    libraries' versions (:func:`vectors_provenance` reads it back). ``option`` names the settings in errors (the
    CLI: ``--min-count`` etc.).
    """
    from gensim.models import Word2Vec

    check_word2vec_settings(dim, epochs, min_count, option, seed=seed, workers=workers)
    check_vectors_out(out, option("out"))  # before the training, not after it
    if not sentences:
        raise ValueError("no sentences to train word vectors on")
    counts = collections.Counter(w for s in sentences for w in s)
    most = max(counts.values(), default=0)
    if most < min_count:
        raise ValueError(f"{option('min_count')}={min_count} leaves no word: the most frequent word occurs {most} "
                         f"time(s)")
    logging.getLogger("gensim").setLevel(logging.WARNING)
    words = sum(1 for c in counts.values() if c >= min_count)
    with naming_out_of_memory(f"{option('dim')} {dim} ({words:,} words)", f"lower {option('dim')}"):
        model = Word2Vec(sentences=sentences, vector_size=dim, window=window, min_count=min_count,  # was NumPy's
                         sg=1, negative=negative, epochs=epochs, seed=seed, workers=workers)  # "Unable to allocate"
    out = Path(out)
    check_writable(out, "vectors file")
    # the temporary file ends as the output does: gensim compresses by the suffix (.gz, .bz2), and a ".tmp" name
    # wrote plain text into a file named .gz, which nothing then read
    fd, tmp = _temporary_file_beside(out, suffix=".tmp" + "".join(out.suffixes[-1:]))
    os.close(fd)
    try:
        model.wv.save_word2vec_format(tmp, binary=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    from ..checkpoint import atomic_write_text
    from .download import sha256_of

    record = {"file": out.name, "sha256": sha256_of(out), "words": len(model.wv.key_to_index),
              "sentences": len(sentences), "tokens": sum(map(len, sentences)),
              "settings": {"dim": dim, "epochs": epochs, "window": window, "min_count": min_count,
                           "negative": negative, "seed": seed, "workers": workers, "sg": 1},
              "versions": _library_versions()}
    atomic_write_text(provenance_path(out), json.dumps(record, indent=1) + "\n")
    return model.wv


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _open_binary(path: Path):
    """``path`` opened for reading bytes, decompressed by its suffix as gensim reads it (``.gz``, ``.bz2``: GoogleNews
    word2vec ships as ``.bin.gz``); the format sniffing and the dimension check read it alike."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


def _read_head(path: Path) -> tuple[bytes, bytes]:
    """A vectors file's first line and up to 4096 bytes after it, decompressed by the file's suffix; a file named
    ``.gz``/``.bz2`` that is not so compressed is a one-line error."""
    try:
        with _open_binary(path) as fh:
            return fh.readline(), fh.read(4096)
    except (EOFError, zlib.error, OSError) as exc:  # gzip.BadGzipFile is an OSError
        if path.suffix not in (".gz", ".bz2"):
            raise
        raise ValueError(f"vectors file {path} cannot be read as {path.suffix[1:]}-compressed ({exc}); decompress "
                         "it, or give the file another name if it is not compressed") from None


def _sniff_format(path: Path) -> str:
    head, second = _read_head(path)
    try:
        first = head.decode("utf-8").split()
    except UnicodeDecodeError:
        first = []
    if len(first) == 2 and all(f.isdigit() for f in first):
        if b"\n" in second:  # a whole first row of numbers is text, whatever a word's bytes (Latin-1, say)
            fields = second.split(b"\n", 1)[0].split()
            if len(fields) == int(first[1]) + 1 and all(_is_number(f) for f in fields[1:]):
                return "word2vec-text"
        try:  # incremental: a window that ends inside a multi-byte character is still text
            codecs.getincrementaldecoder("utf-8")().decode(second, final=False)
            return "word2vec-text"
        except UnicodeDecodeError:
            return "word2vec-binary"
    if len(first) > 2:
        return "glove"
    raise ValueError(f"vectors file {path}: cannot tell its format from the first line; expected word2vec "
                     "('<count> <dim>' header) or GloVe ('<word> <v1> <v2> ...'); pass --vectors-format "
                     "(or set vectors_format in the config)")


def vectors_dimension(path: str | Path, fmt: str = "auto") -> int:
    """The dimension a vectors file declares, read from its first line only (a check before hours of training:
    the word2vec header's second number, or a GloVe line's number of values). Errors as :func:`load_word_vectors`."""
    path = Path(path)
    fmt = _sniff_format(path) if fmt == "auto" else fmt
    first = _read_head(path)[0].decode("utf-8", errors="replace").split()
    if fmt == "glove" and len(first) > 2:
        return len(first) - 1
    if fmt != "glove" and len(first) == 2 and all(f.isdigit() for f in first):
        return int(first[1])
    raise ValueError(f"vectors file {path} is not valid {fmt} vectors: its first line is not "
                     + ("'<word> <v1> <v2> ...'" if fmt == "glove" else "a '<count> <dim>' header")
                     + _format_hint(path, fmt))


def vectors_rows_problem(path: str | Path, fmt: str = "auto") -> str | None:
    """The first row of a text vectors file whose number of values differs from its declared dimension (or a row
    count other than its header's), in a few words; None when there is none or the format is binary. Reads the
    whole file: for error paths (a header that says 9 where the rows hold 8 is not "vectors of dimension 9")."""
    path = Path(path)
    return _text_rows_problem(path, _sniff_format(path) if fmt == "auto" else fmt)


def _format_hint(path: Path, fmt: str) -> str:
    """``"; it looks like X: pass --vectors-format X (or auto)"`` when the file's first line says another format."""
    try:
        sniffed = _sniff_format(path)
    except (ValueError, OSError):
        return ""
    return f"; it looks like {sniffed}: pass --vectors-format {sniffed} (or auto)" if sniffed != fmt else ""


def _text_rows_problem(path: Path, fmt: str, notes: list[str] | None = None, values: bool = False) -> str | None:
    """The first row of a word2vec-text or GloVe file with another number of values than the dimension (its
    header's, or the first row's for GloVe), or fewer rows than the word2vec header declares, in a few words
    naming the line (a file cut short by an interrupted copy, say); None when neither (or another format).

    ``notes``: a list to append what gensim changes without a word: a word given twice (gensim keeps its first
    vector) and words whose bytes are not UTF-8 (read with U+FFFD in their place, so they match no word of the
    data). ``values``: also name the first value that is not a number (slow: every value is parsed)."""
    if fmt not in ("word2vec-text", "glove"):
        return None
    from gensim import utils  # opens .gz / .bz2 files as gensim itself reads them

    dim, declared, rows = None, None, 0
    first_seen: dict[str, int] = {}
    repeated: list[tuple[str, int, int]] = []
    not_utf8: list[tuple[int, str]] = []
    with utils.open(str(path), "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:  # split as gensim does (on " " after rstrip): a word may hold a no-break space
                parts = raw.decode("utf-8").rstrip().split(" ")
            except UnicodeDecodeError:
                parts = raw.decode("utf-8", errors="replace").rstrip().split(" ")
                if parts != [""] and (number > 1 or fmt == "glove"):
                    not_utf8.append((number, parts[0]))
            if parts == [""]:
                parts = []
            if number == 1 and fmt == "word2vec-text":
                parts = " ".join(parts).split()  # gensim splits the header on any whitespace: "10  8", "10\t8"
                if len(parts) != 2 or not all(p.isdigit() for p in parts):
                    return None
                declared, dim = int(parts[0]), int(parts[1])
                continue
            if not parts:
                continue
            if dim is None:
                dim = len(parts) - 1
            word = parts[0] if len(parts[0]) <= 40 else parts[0][:40] + " …"
            if len(parts) - 1 != dim and fmt == "word2vec-text" and rows == 0:  # the header, or the first row?
                return (f"its header declares dimension {dim} but its first row, line {number} (word {word!r}), holds "
                        f"{len(parts) - 1} values; correct the header's second number (or the file is damaged)")
            if len(parts) - 1 != dim:
                return (f"line {number} (word {word!r}) has {len(parts) - 1} values where {dim} were expected "
                        f"({'the header' if fmt == 'word2vec-text' else 'the first row'}'s dimension; truncated?)")
            if values:
                for value in parts[1:]:
                    try:
                        float(value)
                    except ValueError:
                        shown = value if len(value) <= 20 else value[:20] + " …"
                        return f"line {number} (word {word!r}) holds {shown!r}, which is not a number"
            if parts[0] in first_seen:
                repeated.append((word, first_seen[parts[0]], number))
            else:
                first_seen[parts[0]] = number
            rows += 1
    if declared is not None and rows < declared:
        return f"it has {rows} vector rows where its header declares {declared} (truncated?)"
    if declared is not None and rows > declared:  # gensim reads the declared number and drops the rest unsaid
        return f"it has {rows} vector rows where its header declares {declared}; correct the header's first number"
    if notes is not None and repeated:
        word, first, again = repeated[0]
        notes.append(f"{len(repeated)} word(s) appear more than once, e.g. {word!r} on lines {first} and {again}; the "
                     "first vector of each is used (as gensim does), the later ones are ignored")
    if notes is not None and not_utf8:
        number, word = not_utf8[0]
        notes.append(f"{len(not_utf8)} word(s) are not UTF-8, e.g. line {number} ({ascii(word)}); they are read with "
                     "U+FFFD in place of the bad bytes and match no word of the data")
    return None


def _declared_rows(path: Path) -> int:
    """The vector count a word2vec binary file's header declares (0 when it cannot be read)."""
    from gensim import utils

    with utils.open(str(path), "rb") as fh:
        parts = fh.readline().split()
    return int(parts[0]) if len(parts) == 2 and parts[0].isdigit() else 0


def load_word_vectors(path: str | Path, fmt: str = "auto", expected_dim: int | None = None):
    """Load word vectors with gensim ``KeyedVectors`` (word2vec binary/text, or GloVe text without header)."""
    from gensim.models import KeyedVectors

    path = Path(path)
    if fmt not in VECTOR_FORMATS:
        raise ValueError(f"vectors format {fmt!r} unknown; valid formats: {', '.join(VECTOR_FORMATS)}")
    if path.is_dir():
        raise IsADirectoryError(f"vectors file {path} is a directory; pass the vectors file itself (word2vec binary or "
                                "text, or GloVe text)")
    if path.exists() and not path.is_file():  # /dev/null, a pipe
        raise ValueError(f"vectors file {path} is not a regular file (a device or pipe?); pass the vectors file itself")
    if not path.is_file():
        raise FileNotFoundError(f"vectors file {path} does not exist; create one with `complexorder vectors train`")
    if fmt == "auto":
        fmt = _sniff_format(path)
    elif fmt == "word2vec-binary" and _format_hint(path, fmt).startswith("; it looks like word2vec-text"):
        # gensim reads a text file as binary without a word: the digits' bytes become floats near 1e-11
        raise ValueError(f"vectors file {path} is not valid {fmt} vectors: its vector rows are text"
                         f"{_format_hint(path, fmt)}")
    try:
        with warnings.catch_warnings():  # a value beyond float32 becomes inf, named below as not finite (stop 81:
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)  # numpy's warning came first)
            kv = KeyedVectors.load_word2vec_format(str(path), binary=fmt == "word2vec-binary",
                                                   no_header=fmt == "glove", unicode_errors="replace")
    except Exception as exc:  # noqa: BLE001 - gensim raises ValueError/EOFError/UnicodeError/...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first.encode("ascii", "backslashreplace").decode("ascii")  # raw bytes of a binary file, made printable
        first = first if len(first) <= 120 else first[:120] + " …"
        first = _text_rows_problem(path, fmt, values=True) or first  # gensim's words name no line ("could not ...")
        raise ValueError(f"vectors file {path} is not valid {fmt} vectors: {first}{_format_hint(path, fmt)}") from None
    if len(kv) == 0:
        raise ValueError(f"vectors file {path} holds no vectors{_format_hint(path, fmt)}")
    notes: list[str] = []
    if fmt in ("word2vec-text", "glove"):  # gensim reads as many rows as the header declares and drops the rest unsaid
        problem = _text_rows_problem(path, fmt, notes)
        if problem:
            raise ValueError(f"vectors file {path}: {problem}")
    elif len(kv.key_to_index) < _declared_rows(path):  # binary: gensim keeps a repeated word's first vector
        notes.append(f"{_declared_rows(path) - len(kv.key_to_index)} word(s) appear more than once; the first vector of each is "
                     "used (as gensim does), the later ones are ignored")
    kv.load_notes = notes  # what gensim changed without a word; the classification runner logs and records them
    finite = None if np.isfinite(kv.vectors.sum(dtype=np.float64)) else np.isfinite(kv.vectors).all(axis=1)
    if finite is not None and not bool(finite.all()):  # the sum first: the row check costs GBs on 3M vectors
        row = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"vectors file {path}: the vector of {kv.index_to_key[row]!r} (vector {row + 1}) holds a value "
                         f"that is not finite (NaN, inf, or beyond float32's range); {int((~finite).sum())} such "
                         "vector(s) in all")
    if expected_dim is not None and kv.vector_size != expected_dim:
        raise ValueError(f"vectors file {path} has dimension {kv.vector_size}, expected {expected_dim} "
                         "(the models' embedding_dim)")
    return kv


def vectors_for_vocabulary(kv, vocab: Vocabulary, *, seed: int = 0, scale: float = 0.25) -> tuple[torch.Tensor, float]:
    """``[len(vocab), dim]`` matrix: known words from ``kv``, others ``U(-scale, scale)`` (Kim 2014), padding 0.

    Returns the matrix and the fraction of vocabulary words (padding/unknown excluded) found in ``kv``.
    ``vocab`` must be a :class:`~complexorder.data.vocab.Vocabulary` (a list of words is a one-line ``TypeError``:
    its rows would not match the ids the model is given); ``seed`` seeds the random rows of the words ``kv`` lacks.
    """
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a complexorder.data.vocab.Vocabulary (e.g. "
                        f"Vocabulary.from_texts(token_lists)), got {type(vocab).__name__}")
    dim = kv.vector_size
    g = torch.Generator().manual_seed(seed)
    matrix = (torch.rand(len(vocab), dim, generator=g) * 2 - 1) * scale
    matrix[vocab.pad_id] = 0.0
    found = 0
    for index, word in enumerate(vocab.itos[2:], start=2):
        if word in kv.key_to_index:
            matrix[index] = torch.from_numpy(kv[word].copy())
            found += 1
    return matrix, found / max(1, len(vocab) - 2)
