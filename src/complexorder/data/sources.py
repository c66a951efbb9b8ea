"""Where the classification data sets come from, for ``complexorder download`` (network needed).

Every file is checked against the SHA-256 of the reference copy (``DATASETS[...].sha256``); a
mismatch is an error and nothing is written (``--skip-checksum`` keeps the file anyway). A file already present
whose digest differs (edited by hand, another release) is never replaced: it is an error naming it, or with
``--skip-checksum`` kept as it is.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import atomic_write_bytes, check_writable
from .classification import DATASETS
from .download import fetch, sha256_of

__all__ = ["SOURCES", "check_present_files", "download_dataset"]


@dataclass(frozen=True)
class Source:
    url: str
    archive: str | None  # "tar.gz", "zip" or None (a plain file)
    members: dict  # target file name -> member path inside the archive (or "" for a plain file)
    strip_header: bool = False


CORNELL = "https://www.cs.cornell.edu/people/pabo/movie-review-data"
SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data/datasmall_NB_ACL12.zip"
KIM_DATA = "https://raw.githubusercontent.com/harvardnlp/sent-conv-torch/master/data"
TREC_URL = "https://cogcomp.seas.upenn.edu/Data/QA/QC"

SOURCES: dict[str, list[Source]] = {
    "MR": [Source(f"{CORNELL}/rt-polaritydata.tar.gz", "tar.gz", {
        "rt-polarity.pos": "rt-polaritydata/rt-polarity.pos", "rt-polarity.neg": "rt-polaritydata/rt-polarity.neg"})],
    "SUBJ": [Source(f"{CORNELL}/rotten_imdb.tar.gz", "tar.gz", {
        "subj.subjective": "quote.tok.gt9.5000", "subj.objective": "plot.tok.gt9.5000"})],
    "CR": [Source(SENTEVAL, "zip", {"custrev.pos": "data/customerr/custrev.pos",
                                    "custrev.neg": "data/customerr/custrev.neg"})],
    "MPQA": [Source(SENTEVAL, "zip", {"mpqa.pos": "data/mpqa/mpqa.pos", "mpqa.neg": "data/mpqa/mpqa.neg"})],
    "SST2": [Source(f"{KIM_DATA}/stsa.binary.dev", None, {"stsa.binary.dev": ""}),
             Source(f"{KIM_DATA}/stsa.binary.test", None, {"stsa.binary.test": ""}),
             Source("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip", "zip",
                    {"phrases.train.tsv": "SST-2/train.tsv"}, strip_header=True)],
    "SST2-sent": [Source(f"{KIM_DATA}/stsa.binary.{part}", None, {f"stsa.binary.{part}": ""})
                  for part in ("train", "dev", "test")],
    "TREC": [Source(f"{TREC_URL}/train_5500.label", None, {"train_5500.label": ""}),
             Source(f"{TREC_URL}/TREC_10.label", None, {"TREC_10.label": ""})],
}


def _extract(blob: bytes, source: Source, member: str) -> bytes:
    if source.archive is None:
        return blob
    try:
        if source.archive == "zip":
            with zipfile.ZipFile(io.BytesIO(blob)) as zf:
                return zf.read(member)
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
            fh = tf.extractfile(member)
            if fh is None:
                raise KeyError(member)
            return fh.read()
    except KeyError:
        raise ValueError(f"{source.url} has no member {member!r}; the upstream archive has changed") from None


def check_present_files(name: str, data_dir: str | Path) -> None:
    """A one-line ``ValueError`` naming the first file of data set ``name`` already in ``data_dir`` whose SHA-256
    differs from the reference (an edit of one's own, another release): :func:`download_dataset` never replaces it,
    and ``complexorder download`` checks every data set asked for with this before fetching anything."""
    if name not in SOURCES:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(SOURCES)}")
    spec = DATASETS[name]
    folder = Path(data_dir) / "classification" / ("SST2" if name == "SST2-sent" else name)
    for source in SOURCES[name]:
        for t in source.members:
            if not (folder / t).is_file():
                continue
            got, expected = sha256_of(folder / t), spec.sha256.get(t)
            if got != expected:  # was replaced by the download without a word, the user's edit lost
                raise ValueError(f"{folder / t} exists but differs from the reference (sha256 {got[:12]}…, expected "
                                 f"{str(expected)[:12]}…); move it away to download it again, or pass "
                                 "--skip-checksum to keep it as it is")


def download_dataset(name: str, data_dir: str | Path, verify: bool = True, log=print, *,
                     progress: bool = True) -> list[Path]:
    """Fetch data set ``name`` into ``<data_dir>/classification/<name>/``. Files already present and valid are kept;
    present ones whose SHA-256 differs from the reference are an error naming them (``verify=False``: kept as they
    are), never replaced: the difference may be the user's own edit. ``progress=False`` hides the download's bar."""
    if name not in SOURCES:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(SOURCES)}")
    spec = DATASETS[name]
    folder = Path(data_dir) / "classification" / ("SST2" if name == "SST2-sent" else name)
    cache = Path(data_dir) / "downloads"
    if verify:
        check_present_files(name, data_dir)  # every source's files, before anything of this data set is fetched
    written = []
    for source in SOURCES[name]:
        targets = {t: m for t, m in source.members.items() if not (folder / t).is_file()}
        if not targets:
            continue
        check_writable(folder, "--data-dir", directory=True)  # before the network; only when a file is missing
        archive = cache / Path(source.url).name
        local = archive.is_file()  # a copy put there by hand (the offline error says to) or by an earlier run
        log(f"using the local copy {archive} of {source.url}" if local else f"downloading {source.url}")
        blob = fetch(source.url, archive, what="--data-dir", progress=progress).read_bytes()
        for target, member in targets.items():
            try:
                data = _extract(blob, source, member)
            except ValueError as exc:  # a member missing: the upstream archive changed, downloading again won't help
                raise ValueError(f"{exc} (archive read from {archive}; delete it to download it again)") from None
            except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                archive.unlink()  # not an archive (a proxy's HTML page), cut short or damaged: never reuse it
                if local:  # nothing was downloaded now: the copy at hand (an earlier run's, or put there by hand)
                    raise ValueError(f"{archive}, the local copy of {source.url} (nothing was downloaded), is not a "
                                     f"readable archive ({exc}); removed it, so the next run downloads it again (or "
                                     "copy a good archive there)") from None
                raise ValueError(f"{source.url} is not a readable archive ({exc}); removed {archive}, so the next "
                                 "run downloads it again") from None
            if source.strip_header:
                data = data.split(b"\n", 1)[1] if b"\n" in data else b""
            got = hashlib.sha256(data).hexdigest()
            if verify and got != spec.sha256.get(target):
                raise ValueError(f"checksum mismatch for {name}/{target} from {source.url}: expected sha256 "
                                 f"{spec.sha256.get(target)}, got {got}; not saved (the archive was read from {archive}: "
                                 f"delete it to download it again, or use --skip-checksum to keep the file)")
            atomic_write_bytes(folder / target, data)
            written.append(folder / target)
    return written
