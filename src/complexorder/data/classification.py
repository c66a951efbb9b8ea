"""The six text-classification benchmarks of the paper (Table 1), read from a data directory.

Layout (the same as ``../shared/data``): ``<data_dir>/classification/<NAME>/<files>``.

========  =========================================  ==============================================
dataset   files                                      protocol
========  =========================================  ==============================================
MR        rt-polarity.pos / .neg                     10-fold stratified CV
SUBJ      subj.subjective / subj.objective           10-fold stratified CV
CR        custrev.pos / .neg                         10-fold stratified CV
MPQA      mpqa.pos / .neg                            10-fold stratified CV
SST2      phrases.train.tsv, stsa.binary.dev/.test   train on the 67k phrases; dev 872; test 1821
TREC      train_5500.label, TREC_10.label            test 500; dev = 10 % of train (stratified, fixed)
SST2-sent stsa.binary.train/.dev/.test               SST-2 trained on its 6920 sentences only (a
                                                     cheaper stand-in for SST2, not in the paper)
========  =========================================  ==============================================

Blank or whitespace-only lines are skipped and *counted* (``TextClassificationData.notes``); a
line that does not have the expected form (a missing label, an unknown class) is an error
naming the file, the line and the expected form. Nothing is truncated.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .paths import require_file
from .text import kim_tokenize, read_text_lines

__all__ = ["DATASETS", "DatasetSpec", "TextClassificationData", "Split", "load_dataset", "stratified_folds",
           "stratified_holdout", "make_split", "split_ids"]

GET_IT = "run `complexorder download --datasets {name} --data-dir DIR` (needs network) or copy the files there"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    protocol: str  # "cv" or "fixed"
    files: tuple[str, ...]
    label_names: tuple[str, ...]
    sha256: dict = field(default_factory=dict)


DATASETS: dict[str, DatasetSpec] = {
    "MR": DatasetSpec("MR", "cv", ("rt-polarity.neg", "rt-polarity.pos"), ("negative", "positive"), {
        "rt-polarity.neg": "4ace77d558c3714723843f1d65b60c01e3417b208180f0728808d76ad0eeeaca",
        "rt-polarity.pos": "2da124ec187a9d5a29c9f04e91c540e02baed5af8868f550a26bd6fd4dbf8bf0"}),
    "SUBJ": DatasetSpec("SUBJ", "cv", ("subj.objective", "subj.subjective"), ("objective", "subjective"), {
        "subj.objective": "5ddc9b44dc60d64d651347fcd7bdd489b0c70661e3f768215c16eea36f51204a",
        "subj.subjective": "73a2dcf8dc3cbcc7f068a70ef9f021c86b2a8e4dac81566b7fd015b3e938f2c5"}),
    "CR": DatasetSpec("CR", "cv", ("custrev.neg", "custrev.pos"), ("negative", "positive"), {
        "custrev.neg": "8f29d7fa39f9862764b71f36b193f0674e0056287ffc5bf170edf6db42cc8f83",
        "custrev.pos": "15eeb0b9424043bb3755488e2d8ed97bdaeba464a5c230f213bad075125d2192"}),
    "MPQA": DatasetSpec("MPQA", "cv", ("mpqa.neg", "mpqa.pos"), ("negative", "positive"), {
        "mpqa.neg": "02e193d98c7715bc6200bb23dc6d2903482bd80c0432c53c3f3738c636df3f72",
        "mpqa.pos": "f4aaafdd63c439fd2d056149f3b5d200416dabb200a8b7d8f4bf9903981ff8a5"}),
    "SST2": DatasetSpec("SST2", "fixed", ("phrases.train.tsv", "stsa.binary.dev", "stsa.binary.test"),
                        ("negative", "positive"), {
        "phrases.train.tsv": "10a92a297ec38e262386e5a2713b4bc70e5d18ced88b7f54bd171a26e5b34ab5",
        "stsa.binary.dev": "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1",
        "stsa.binary.test": "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b"}),
    "SST2-sent": DatasetSpec("SST2-sent", "fixed", ("stsa.binary.train", "stsa.binary.dev", "stsa.binary.test"),
                             ("negative", "positive"), {
        "stsa.binary.train": "71c04bcc41291fa47454dd670df701b14ee9249156babeaac404cfe2c8d74338",
        "stsa.binary.dev": "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1",
        "stsa.binary.test": "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b"}),
    "TREC": DatasetSpec("TREC", "fixed", ("train_5500.label", "TREC_10.label"),
                        ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"), {
        "train_5500.label": "9e4c8bdcaffb96ed61041bd64b564183d52793a8e91d84fc3a8646885f466ec3",
        "TREC_10.label": "033f22c028c2bbba9ca682f68ffe204dc1aa6e1cf35dd6207f2d4ca67f0d0e8e"}),
}

#: How many CV folds, the seed of the fold assignment, and the dev fraction carved from training data.
NUM_FOLDS, FOLD_SEED, DEV_FRACTION = 10, 0, 0.1


@dataclass
class TextClassificationData:
    """Tokenised texts and labels per part (``"all"`` for CV data sets; ``"train"/"dev"/"test"`` otherwise)."""

    name: str
    label_names: tuple[str, ...]
    texts: dict[str, list[list[str]]]
    labels: dict[str, list[int]]
    notes: list[str] = field(default_factory=list)

    @property
    def protocol(self) -> str:
        return DATASETS[self.name].protocol

    def max_length(self) -> int:
        return max(max((len(t) for t in texts), default=0) for texts in self.texts.values())


def _check_name(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    return DATASETS[name]


def _nonblank(path: Path, notes: list[str]) -> list[tuple[int, str]]:
    """(line number, text) of the non-blank lines; blank ones, and lines that were not UTF-8 (read as cp1252,
    else Latin-1, as MR's and SUBJ's real files need), are counted in ``notes``. A file of which more than half
    the lines are not UTF-8 is an error: it is binary or in another encoding (UTF-16, say), not one of the data
    sets' text files, and reading it would make junk examples."""
    lines, not_utf8 = read_text_lines(path)
    kept = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    if not_utf8 and 2 * len(not_utf8) > len(kept):
        raise ValueError(f"{path}: {len(not_utf8)} of its {len(lines)} lines are not UTF-8 (first: line "
                         f"{not_utf8[0]}); expected a text file, mostly UTF-8 (the real files have at most 2 % "
                         f"cp1252 lines)")
    if len(kept) < len(lines):
        notes.append(f"{path.name}: skipped {len(lines) - len(kept)} blank line(s)")
    if not_utf8:
        notes.append(f"{path.name}: {len(not_utf8)} line(s) not UTF-8, read as cp1252 (else Latin-1), e.g. line "
                     f"{not_utf8[0]}")
    return kept


def _tokens(text: str, number: int, empty: list[int]) -> list[str]:
    """Kim tokens of ``text``; records ``number`` in ``empty`` when nothing is left."""
    tokens = kim_tokenize(text)
    if not tokens:
        empty.append(number)
    return tokens


def _require_examples(path: Path, count: int, expected: str) -> None:
    """A data file that yields no example is an error, never a silently smaller data set."""
    if count == 0:
        raise ValueError(f"{path}: no examples (the file is empty or blank); expected lines like {expected}")


def _read_polarity(folder: Path, spec: DatasetSpec, notes: list[str]):
    texts, labels = [], []
    for label, filename in enumerate(spec.files):
        path = require_file(folder / filename, GET_IT.format(name=spec.name))
        empty: list[int] = []
        lines = _nonblank(path, notes)
        _require_examples(path, len(lines), "'<sentence>' (one per line)")
        for number, line in lines:
            texts.append(_tokens(line, number, empty))
            labels.append(label)
        if empty:
            notes.append(f"{filename}: {len(empty)} line(s) with no token left after tokenisation "
                         f"(kept as a single <unk>), e.g. line {empty[0]}")
    return texts, labels


def _read_labelled(path: Path, parse, notes: list[str], expected: str):
    texts, labels = [], []
    empty: list[int] = []
    lines = _nonblank(path, notes)
    _require_examples(path, len(lines), expected)
    for number, line in lines:
        parsed = parse(line)
        if parsed is None:
            shown = line if len(line) <= 60 else line[:57] + "..."
            raise ValueError(f"{path}:{number}: expected {expected}, got {shown!r}")
        label, text = parsed
        texts.append(_tokens(text, number, empty))
        labels.append(label)
    if empty:
        notes.append(f"{path.name}: {len(empty)} line(s) with no token left after tokenisation "
                     f"(kept as a single <unk>), e.g. line {empty[0]}")
    return texts, labels


def _parse_sst(line: str):
    label, _, text = line.strip().partition(" ")
    return (int(label), text) if label in ("0", "1") and text.strip() else None


def _parse_phrase(line: str):
    text, tab, label = line.rstrip("\n").rpartition("\t")
    label = label.strip()  # a second tab: a column too many (the phrase would have taken "<TAB>1" as a word)
    return (int(label), text) if tab and label in ("0", "1") and text.strip() and "\t" not in text else None


def _parse_trec(classes: tuple[str, ...]):
    def parse(line: str):
        head, _, text = line.strip().partition(" ")
        coarse = head.split(":", 1)[0]
        return (classes.index(coarse), text) if ":" in head and coarse in classes and text.strip() else None

    return parse


def dataset_folder(name: str, data_dir: str | Path) -> Path:
    """Where data set ``name``'s files are: ``<data_dir>/classification/<name>/`` (SST2-sent reads SST2's)."""
    return Path(data_dir) / "classification" / ("SST2" if name == "SST2-sent" else name)


def dataset_digest(name: str, data_dir: str | Path) -> str | None:
    """A SHA-256 over the files data set ``name`` is read from (their names and digests), or None when one is
    missing. Every classification result records it, so that a results file's finished units are never taken for
    units of other data (a cut for a trial run, another release of the files)."""
    from .download import sha256_of

    folder = dataset_folder(name, data_dir)
    files = _check_name(name).files
    if not all((folder / f).is_file() for f in files):
        return None
    return hashlib.sha256("".join(f"{f}:{sha256_of(folder / f)}\n" for f in files).encode()).hexdigest()


def load_dataset(name: str, data_dir: str | Path) -> TextClassificationData:
    """Read and tokenise data set ``name`` from ``<data_dir>/classification/<name>/``."""
    spec = _check_name(name)
    folder = dataset_folder(name, data_dir)
    notes: list[str] = []
    get = GET_IT.format(name=name)
    if spec.protocol == "cv":
        texts, labels = _read_polarity(folder, spec, notes)
        return TextClassificationData(name, spec.label_names, {"all": texts}, {"all": labels}, notes)
    if name in ("SST2", "SST2-sent"):
        if name == "SST2":
            train = _read_labelled(require_file(folder / "phrases.train.tsv", get), _parse_phrase, notes,
                                   "'<phrase><TAB><0|1>'")
        else:
            train = _read_labelled(require_file(folder / "stsa.binary.train", get), _parse_sst, notes,
                                   "'<0|1> <sentence>'")
        dev = _read_labelled(require_file(folder / "stsa.binary.dev", get), _parse_sst, notes, "'<0|1> <sentence>'")
        test = _read_labelled(require_file(folder / "stsa.binary.test", get), _parse_sst, notes, "'<0|1> <sentence>'")
    else:  # TREC
        parse = _parse_trec(spec.label_names)
        expected = f"'<COARSE>:<fine> <question>' with COARSE in {', '.join(spec.label_names)}"
        full = _read_labelled(require_file(folder / "train_5500.label", get), parse, notes, expected)
        test = _read_labelled(require_file(folder / "TREC_10.label", get), parse, notes, expected)
        keep, held = stratified_holdout(np.arange(len(full[1])), np.asarray(full[1]), DEV_FRACTION, FOLD_SEED)
        train = ([full[0][i] for i in keep], [full[1][i] for i in keep])
        dev = ([full[0][i] for i in held], [full[1][i] for i in held])
    return TextClassificationData(name, spec.label_names, {"train": train[0], "dev": dev[0], "test": test[0]},
                                  {"train": train[1], "dev": dev[1], "test": test[1]}, notes)


def stratified_folds(labels, k: int = NUM_FOLDS, seed: int = FOLD_SEED) -> list[np.ndarray]:
    """Test indices of ``k`` stratified folds: each class is shuffled (fixed seed) and dealt round-robin.

    The folds are disjoint, cover every index once, and each holds each class in proportion
    (class counts per fold differ by at most one).
    """
    labels = np.asarray(labels)
    if k < 2 or k > len(labels):
        raise ValueError(f"number of folds must be in [2, {len(labels)}], got {k}")
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    offset = 0
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        rng.shuffle(members)
        for j, index in enumerate(members):
            folds[(offset + j) % k].append(int(index))
        offset += len(members)
    return [np.sort(np.asarray(f, dtype=np.int64)) for f in folds]


def stratified_holdout(indices: np.ndarray, labels: np.ndarray, fraction: float, seed: int):
    """Split ``indices`` into ``(kept, held_out)`` with about ``fraction`` of each class held out."""
    rng = np.random.default_rng(seed)
    kept, held = [], []
    labels_of = labels[indices]
    for cls in np.unique(labels_of):
        members = indices[labels_of == cls].copy()
        rng.shuffle(members)
        n = int(round(fraction * len(members)))
        held.extend(members[:n].tolist())
        kept.extend(members[n:].tolist())
    return np.sort(np.asarray(kept, dtype=np.int64)), np.sort(np.asarray(held, dtype=np.int64))


@dataclass
class Split:
    """Tokenised train/dev/test parts of one fold (CV) or of the fixed split."""

    train: tuple[list[list[str]], list[int]]
    dev: tuple[list[list[str]], list[int]]
    test: tuple[list[list[str]], list[int]]


def split_ids(name: str, folds: list[int], seeds: list[int]) -> list[str]:
    """The units of a data set: ``fold-K`` for CV data sets, ``seed-S`` for fixed splits."""
    spec = _check_name(name)
    if spec.protocol == "cv":
        bad = [f for f in folds if not 0 <= f < NUM_FOLDS]
        if bad:
            raise ValueError(f"fold {bad[0]} is outside 0..{NUM_FOLDS - 1} (--folds, or the config's `folds`)")
        if not folds:
            raise ValueError(f"no folds selected for the CV data set {name} (config `folds` is empty); list some, "
                             f"e.g. --folds 0-9")
        return [f"fold-{f}" for f in folds]
    bad = [s for s in seeds if s < 0]
    if bad:
        raise ValueError(f"seed {bad[0]} is negative (--seeds, or the config's `seeds`: integers >= 0)")
    bad = [s for s in seeds if s >= 2**32]  # the generators keep 32 bits: 2**32 + 1 would draw what 1 draws
    if bad:
        raise ValueError(f"seed {bad[0]} is 2**32 or more (--seeds, or the config's `seeds`: integers below 2**32, "
                         "the generators' range; a larger seed repeats a smaller one's draws)")
    if not seeds:
        raise ValueError(f"no seeds selected for the fixed-split data set {name} (config `seeds` is empty); list "
                         f"some, e.g. --seeds 1-6")
    return [f"seed-{s}" for s in seeds]


def make_split(data: TextClassificationData, split_id: str) -> Split:
    """The train/dev/test parts of ``split_id`` (``fold-K`` or ``seed-S``; the seed does not change fixed splits)."""
    kind, _, number = split_id.partition("-") if isinstance(split_id, str) else ("", "", "")
    if data.protocol == "cv" and not (kind == "fold" and number.isdigit() and int(number) < NUM_FOLDS):
        raise ValueError(f"split_id must be 'fold-K' with K in 0..{NUM_FOLDS - 1} for the CV data set {data.name}, got "
                         f"{split_id!r}")
    if data.protocol == "fixed" and not (kind == "seed" and number.isdigit()):
        raise ValueError(f"split_id must be 'seed-S' (S >= 0) for the fixed-split data set {data.name}, got "
                         f"{split_id!r}")
    if data.protocol == "fixed":
        part = lambda p: (data.texts[p], data.labels[p])  # noqa: E731
        split = Split(part("train"), part("dev"), part("test"))
    else:
        fold = int(split_id.split("-", 1)[1])
        texts, labels = data.texts["all"], np.asarray(data.labels["all"])
        if len(labels) < NUM_FOLDS:  # stratified_folds' own error named no data set, and a number of folds not set
            raise ValueError(f"{data.name} {split_id}: {len(labels)} examples, fewer than the {NUM_FOLDS} folds of the "
                             f"paper's cross-validation; the data set is too small for this protocol")
        test_idx = stratified_folds(labels)[fold]
        rest = np.setdiff1d(np.arange(len(labels)), test_idx)
        train_idx, dev_idx = stratified_holdout(rest, labels, DEV_FRACTION, FOLD_SEED + 1 + fold)
        pick = lambda idx: ([texts[i] for i in idx], [int(labels[i]) for i in idx])  # noqa: E731
        split = Split(pick(train_idx), pick(dev_idx), pick(test_idx))
    empty = [name for name in ("train", "dev", "test") if not getattr(split, name)[1]]
    if empty:  # an empty part would fail deep in batching, or score an empty test set
        sizes = ", ".join(f"{name} {len(getattr(split, name)[1])}" for name in ("train", "dev", "test"))
        raise ValueError(f"{data.name} {split_id}: the {empty[0]} split is empty ({sizes} examples; dev holds out "
                         f"{DEV_FRACTION:.0%} of each class); the data set is too small for this protocol")
    return split
