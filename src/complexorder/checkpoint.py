"""Nothing is lost: atomic files, append-only result logs, and checkpoints that say what they are.

A checkpoint is a plain dict saved with ``torch.save`` and read back with
``torch.load(..., weights_only=True)``::

    {"format": "complexorder", "version": 1, "kind": "classifier" | "translation" | "language-model",
     "config": {...}, "model_state": {...}, ...}   # plus whatever the writer adds (vocabulary, optimizer, ...)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

__all__ = ["check_writable", "check_results_file", "check_text_output", "same_file", "resume_point", "atomic_write_bytes",
           "atomic_write_text", "append_jsonl", "read_jsonl", "scan_jsonl", "is_cut_record", "save_checkpoint", "load_checkpoint", "CHECKPOINT_FORMAT",
           "check_finite_weights"]

CHECKPOINT_FORMAT = "complexorder"
_REPLAYED_WARNINGS: dict[str, dict] = {}  # warnings' once-per-place registries, by the file that warned
CHECKPOINT_VERSION = 1


def _check_can_make_dir(folder: Path, purpose: str, probe: bool = False) -> None:
    """Raise a one-line ``PermissionError`` when ``folder`` could not be created or written; create nothing.

    ``probe``: also try to create a file there (the check before a long run; a writer's own temporary file is the
    try when it writes, so its checkpoint saves need no probe)."""
    blocker = next((p for p in (folder, *folder.parents) if os.path.lexists(p)), None)  # a broken link too
    if blocker is None:
        return
    if not blocker.is_dir():
        kind = "a broken symbolic link" if not blocker.exists() else "a file"
        raise PermissionError(f"cannot create directory {folder} for {purpose}: {blocker} is {kind}")
    why = None if os.access(blocker, os.W_OK | os.X_OK) else "is not writable"
    if why is None and probe:
        why = _probe_directory(blocker)  # root passes os.access everywhere, but /proc and /sys refuse new files
    if why is not None:
        if blocker == folder:
            raise PermissionError(f"cannot write {purpose}: directory {folder} {why}")
        raise PermissionError(f"cannot create directory {folder} for {purpose}: directory {blocker} {why}")


def _probe_directory(folder: Path) -> str | None:
    """Create and remove an empty temporary file in ``folder``: ``None`` when that works, else why not.

    ``os.access`` answers from the permission bits, and for root it says yes almost everywhere, also in
    ``/proc`` and ``/sys``, whose files cannot be created; trying is the only sure check. The file is removed
    at once, so nothing is left behind."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".complexorder-probe.", suffix=".tmp")
    except OSError as exc:
        return f"does not accept new files ({exc.strerror})"
    os.close(fd)
    os.unlink(probe)
    return None


def _make_dir(folder: Path, purpose: str) -> None:
    """Create ``folder`` (and its parents) or raise a one-line ``PermissionError`` saying why not."""
    _check_can_make_dir(folder, purpose)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PermissionError(f"cannot create directory {folder} for {purpose}: {exc.strerror}") from None
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write {purpose}: directory {folder} is not writable")


def _check_writable_dir(path: Path) -> None:
    if path.is_dir():
        raise PermissionError(f"cannot write {path}: it is a directory, expected a file path")
    _make_dir(path.parent, str(path))


def _missing_dirs(folder: str | Path) -> list[Path]:
    """The directories from ``folder`` upwards that do not exist yet, deepest first: what making ``folder`` makes.

    Each is named by its real path, so that a ``..`` in ``folder`` (``new/../mine``: ``mkdir`` makes ``new``, not
    ``mine``) never lists a directory that exists already."""
    made: list[Path] = []
    for path in (Path(folder), *Path(folder).parents):
        if path.exists():
            break
        real = Path(os.path.realpath(path))
        if not real.exists() and real not in made:
            made.append(real)
    return sorted(made, key=lambda p: len(p.parts), reverse=True)


def _remove_empty_dirs(made: list[Path]) -> None:
    """Remove the directories ``made`` (deepest first, as :func:`_missing_dirs` lists them) while they are empty; one
    that is not (another process wrote into it meanwhile), and those above it, are kept."""
    for path in made:
        try:
            path.rmdir()
        except OSError:
            break


@contextlib.contextmanager
def _removing_made_dirs(folder: str | Path, *, always: bool = False):
    """Run the block; when it fails (or, with ``always``, when it ends), remove the directories it made for ``folder``
    that are still empty, so that a command that fails (offline, say) leaves no empty directory behind."""
    made = _missing_dirs(folder)
    try:
        yield
    except BaseException:
        _remove_empty_dirs(made)
        raise
    if always:
        _remove_empty_dirs(made)


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when ``a`` and ``b`` name one file (through links too), or would once created."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def check_writable(path: str | Path, option: str, *, directory: bool = False,
                   inputs: Mapping[str, str | Path | None] | None = None) -> None:
    """Fail at once, before any work, when ``path`` cannot be written; the error names ``option``.

    ``path`` is a file to be written or, with ``directory=True``, a directory to write files into.
    ``inputs`` maps a description (``"the test2016 references"``) to a file the command reads: writing ``path``
    over one of them would destroy it, so that is an error naming both.
    Nothing is created: a missing directory is made when the first file is written into it (or, for
    ``translate train`` and ``lm train``, by the run-directory lock, which removes what it made again when the
    run fails before writing), so a command that fails later for another reason leaves no empty directory
    behind. Long runs call this first so that an unwritable output is a one-line error, not a result lost after
    hours of training.
    """
    path = Path(path)
    if not directory and _is_special(path):  # /dev/null, a pipe: written in place; /dev itself need not be writable
        return
    try:
        if directory:
            _check_can_make_dir(path, "its files", probe=True)
        else:
            if path.is_dir():
                raise PermissionError(f"{path} is a directory, expected a file path")
            _check_can_make_dir(path.parent, str(path), probe=True)
            if path.exists() and not (os.access(path, os.W_OK) and _can_open_for_append(path)):
                raise PermissionError(f"cannot write {path}: the file is not writable")
    except PermissionError as exc:
        raise PermissionError(f"{option}: {exc}") from None
    if _is_special(path):  # writing to a device or pipe (/dev/stdout) replaces no file
        return
    for what, source in (inputs or {}).items():
        if source is not None and str(source) != "-" and same_file(path, source):
            raise ValueError(f"{option} {path} is {what}, which this command reads; writing it would destroy it — "
                             "choose another file")


def is_torch_file(path: str | Path) -> bool:
    """Whether the file ``path`` starts as ``torch.save`` writes: a zip file, or a pickle (older PyTorch)."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    return head == b"PK\x03\x04" or head[:1] == b"\x80"


def check_text_output(path: str | Path, option: str, writing: str = "text") -> None:
    """Before a command writes plain text (translations) to ``path``: refuse an existing file that is a checkpoint
    or a JSON-lines file (results, a training log), which the text would destroy — a run's ``last.pt`` could then no
    longer be resumed. Other existing files are replaced, as output files are. ``writing`` names what the command
    writes, in the message."""
    path = Path(path)
    if _is_special(path) or not path.is_file():
        return
    if is_torch_file(path):
        what = "a checkpoint or another binary file (torch.save's zip, or a pickle)"
    elif _is_json_object(_first_nonblank_line(path)):  # (a translation may start with "{": no cut record guessed)
        what = "a JSON-lines file (results or a training log)"
    else:
        return
    raise ValueError(f"{option} {path} is {what}; writing {writing} over it would destroy it — choose another file")


def check_results_file(path: str | Path, option: str, *, read_first: bool = False,
                       record: tuple[str, str] | None = None, choose: str = "choose another file") -> None:
    """Before a command appends to the JSON-lines results file ``path``: fail at once unless it is missing, a
    device or pipe (the line goes there: ``/dev/null``, a process substitution), or a regular file whose first
    non-blank line is a JSON object (a record cut short by a crash counts). Any other file (a corpus, a
    checkpoint, a Markdown table) would be corrupted by the appended line.

    ``read_first``: the command reads the whole file before appending (the classification grid, to skip its
    finished units). Its own reader names a bad line more precisely, so the lines are left to it; but a device
    other than ``/dev/null``, or a pipe, would hang that read (``/dev/stdout`` is the process's own output), so
    those are refused.

    ``record``: ``(key, what)``: the file's first record must hold ``key`` (``"event"``: the records of ``lm train`` and
    ``lm eval``), else it is another command's results file (``classify``'s, say), whose reader would then stop at
    the appended line; the error calls the expected records ``what``.

    ``choose``: what the error tells the user to do; a command whose results file sits in a directory it was given
    (``option`` names that directory) says ``"choose another directory"``.
    """
    path = Path(path)
    check_writable(path, option)
    if _is_special(path):
        if read_first and not same_file(path, os.devnull):
            raise ValueError(f"{option} {path} is not a regular file, and this command reads its results file "
                             "before running (to skip finished units); give a file")
        return
    if read_first or not path.is_file():
        return
    first = _first_nonblank_line(path)
    if not first:  # empty, or blank lines only
        return
    # a record cut short by a crash still counts
    if not (_is_json_object(first) or is_cut_record(first.decode("utf-8", "replace"))):
        raise ValueError(f"{option} {path} is not a JSON-lines results file (its first line is not a JSON object); "
                         f"results are appended one JSON object per line — {choose}")
    if record is not None and _is_json_object(first) and record[0] not in json.loads(first):
        raise ValueError(f"{option} {path} holds another command's results (its first record has no {record[0]!r} "
                         f"key, which {record[1]} have); appending would break that command's reading of it — "
                         f"{choose}")


def _first_nonblank_line(path: Path) -> bytes:
    """The first line of ``path`` holding more than white space (read in chunks of 1 MiB at most); ``b""`` if none."""
    with open(path, "rb") as fh:
        return next((line for line in iter(lambda: fh.readline(1 << 20), b"") if line.strip()), b"")


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return False


def _can_open_for_append(path: Path) -> bool:
    """Open an existing file for appending and close it, writing nothing (its contents and time stamps stay):
    the check ``os.access`` cannot make for root. Devices and pipes are not opened (a pipe would block)."""
    if _is_special(path):
        return True
    try:
        with open(path, "ab"):
            pass
    except OSError:
        return False
    return True


def _is_special(path: Path) -> bool:
    """True for an existing path that is not a regular file or directory: a device (``/dev/null``,
    ``/dev/stdout``), a named pipe or a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and ``os.replace`` (never a half-written file).

    A symbolic link is followed: the file it points to is replaced and the link kept. A device, named
    pipe or socket (``/dev/null``, ``/dev/stdout``, a FIFO) is written to directly, never replaced.
    """
    path = Path(path)
    with _naming_write_failures(path):
        _atomic_write_bytes(path, data)


@contextlib.contextmanager
def _naming_write_failures(path: Path):
    """A failed ``write()`` or ``fsync()`` (a full disk) names no file: re-raise it naming ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None and exc.strerror:
            raise type(exc)(exc.errno, f"cannot write {path}: {exc.strerror}") from None
        raise


def _temporary_file_beside(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    """Make the directory of ``path`` when it is missing and a hidden temporary file in it (``.NAME.XXXXXXXX.tmp``),
    to be renamed over ``path`` once written: the file descriptor and the name, as :func:`tempfile.mkstemp`.

    A download into the same fresh directory that fails at the same moment removes that directory again while it is
    empty (:func:`_removing_made_dirs`), possibly between this making it and creating the file in it; the directory is
    then made once more (stop 85). Once the temporary file is there, the directory is not empty and stays."""
    for attempt in range(3):
        _check_writable_dir(path)
        try:
            return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
        except FileNotFoundError:
            if attempt == 2 or path.parent.exists():  # not that race: a real error, named by the caller
                raise
    raise AssertionError("unreachable")


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    if _is_special(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    fd, tmp = _temporary_file_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _open_locked(path: Path, *, create: bool = True):
    """Open ``path`` for appending and reading (made if missing, unless ``create`` is false: then a missing file
    raises ``FileNotFoundError``) holding an exclusive ``flock`` on it, so that two processes writing one JSON-lines
    file (``lm eval --results`` appending while ``lm train --resume`` rewrites it, two ``classify`` runs appending)
    take turns and no line is lost. :func:`drop_records_after` replaces the file, so a writer that waited on the old
    file finds the path pointing elsewhere and opens the new one. Where ``fcntl`` is missing (Windows) or the file
    system cannot lock (some network mounts) the file is opened unlocked, as before. The lock is released when the
    returned file is closed."""
    def open_file():
        if create:
            return open(path, "ab+")
        return os.fdopen(os.open(path, os.O_RDWR | os.O_APPEND), "ab+")

    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on this project's machines
        return open_file()
    while True:
        fh = open_file()
        try:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            except OSError:  # ENOLCK, EOPNOTSUPP: a file system without locks
                return fh
            try:
                same = os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
            except FileNotFoundError:  # removed meanwhile: open it again (or say it is gone)
                same = False
        except BaseException:
            fh.close()  # never keep the lock while an error travels up
            raise
        if same:
            return fh
        fh.close()  # replaced or removed while we waited: take the file the path names now


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one JSON line; the line is written with a single ``write`` and fsynced, under an exclusive lock on
    the file (shared with :func:`drop_records_after`), so concurrent writers of one file lose no line.

    A crash can at worst leave a truncated last line, which :func:`read_jsonl` skips (and
    reports); earlier lines are never touched.
    """
    path = Path(path)
    if not _is_special(path):  # a device or pipe is written in place: its directory (/dev) is not
        _check_writable_dir(path)
    line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
    if _is_special(path):  # /dev/null, a pipe: nothing to seek, lock or fsync
        with _naming_write_failures(path), open(path, "ab") as fh:
            fh.write(line)
        return
    with _naming_write_failures(path), _open_locked(path) as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() > 0:  # after an interrupted write, start a fresh line
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = b"\n" + line
        fh.write(line)
        fh.flush()
        if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # /dev/null and pipes cannot be fsynced
            os.fsync(fh.fileno())


def drop_records_after(path: str | Path, step: int) -> int:
    """Rewrite a run's JSON-lines log (atomically) without the records of steps after ``step``: what a
    run resumed from a checkpoint of ``step`` (or started afresh: ``step = 0``) will write again. Every
    other line, malformed ones included, is kept byte for byte (line ends too), and so are the records of an
    evaluation (``"event": "eval"``, which ``lm eval --results`` appends with its checkpoint's step and no training
    writes again). Returns how many records were dropped.

    The file is read and replaced under the lock :func:`append_jsonl` takes, so a record another process appends
    meanwhile is kept, not overwritten. A missing file is left missing; one that cannot be written is a one-line
    ``PermissionError``."""
    path = Path(path)
    if not path.is_file():
        return 0

    def later(line: str) -> bool:
        try:
            record = json.loads(line)
        except ValueError:
            return False
        return (isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] > step
                and record.get("event") != "eval")

    try:
        fh = _open_locked(path, create=False)
    except FileNotFoundError:  # removed since is_file(): nothing to drop
        return 0
    except PermissionError:
        raise PermissionError(f"cannot rewrite {path} (to drop the records after step {step}): the file is not "
                              f"writable") from None
    with fh:
        fh.seek(0)
        lines = fh.read().decode("utf-8").splitlines(keepends=True)
        kept = [line for line in lines if not later(line)]
        if len(kept) != len(lines):
            atomic_write_text(path, "".join(kept))
    return len(lines) - len(kept)


def scan_jsonl(path: str | Path) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """``(line number, record)`` of each JSON line of ``path`` and ``(line number, text)`` of each non-blank line
    that is not JSON (missing file: both empty). A file that is not UTF-8 text is a one-line error."""
    path = Path(path)
    if not path.exists():
        return [], []
    try:
        text = path.read_text(encoding="utf-8")  # our lines are ASCII (json.dumps escapes the rest)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not a JSON-lines results file (not UTF-8 text: {exc.reason} at byte "
                         f"{exc.start})") from None
    records, malformed = [], []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError:
            malformed.append((number, line))
    return records, malformed


def resume_point(path: str | Path) -> str:
    """Where a resume from the training checkpoint ``path`` (``last.pt``) would start: ``"step N (path)"``, or a
    phrase saying there is none yet (said when a training is interrupted, so that the lost steps are no surprise).
    The file is memory-mapped: reading a large optimiser state after Ctrl-C would keep the user waiting."""
    path = Path(path)
    if not path.is_file():
        return f"step 0: no checkpoint was written yet ({path} does not exist)"
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        step = (payload.get("progress") or {}).get("step", payload.get("step"))
    except (Exception, KeyboardInterrupt):  # noqa: BLE001 - a file cut short by the interrupt, a second Ctrl-C
        return f"the last complete checkpoint ({path} could not be read now)"
    return f"step {step} ({path})"


def is_cut_record(line: str) -> bool:
    """Whether a line that is not JSON is the beginning of a record, cut short by an interrupted write
    (:func:`append_jsonl` starts the next record on a fresh line), rather than text of another kind."""
    return line.lstrip().startswith("{")


def read_jsonl(path: str | Path, *, warn=None) -> list[dict]:
    """Records of a JSON-lines file (missing file: empty). Malformed lines are skipped and reported."""
    records, malformed = scan_jsonl(path)
    if warn is not None:
        for number, _ in malformed:
            warn(f"{path}:{number}: skipping a malformed (probably interrupted) line")
    return [record for _, record in records]


def save_checkpoint(path: str | Path, kind: str, model_state: dict, config: dict, **extra: Any) -> None:
    """Atomically save a checkpoint of ``kind`` with its config and any extra entries."""
    payload = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "kind": kind, "config": config,
               "model_state": model_state, **extra}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _load_failure(exc: BaseException, head: bytes) -> str:
    """The reason in torch's error for a file it cannot load, in one short line. torch's weights-only refusal
    advises ``weights_only=False``, which this project never does: only the unpickler's own reason is kept.
    ``head`` (the file's first bytes) names an empty file or one torch.save never wrote, whose errors from torch
    are cryptic (a bare ``EOFError``; ``KeyError: '101'`` for a text file)."""
    if not head:
        return "the file is empty"
    if not head.startswith((b"PK\x03\x04", b"\x80")):
        return f"it was not written by torch.save (it starts with {head!r}, neither a zip archive nor a pickle)"
    text = str(exc).strip()
    if head.startswith(b"PK\x03\x04") and (isinstance(exc, OSError) or "zip archive" in text):
        return ("its zip archive is incomplete (the file was cut short, e.g. by an interrupted copy; complexorder "
                "writes checkpoints atomically, so a run's own file is whole)")
    if "WeightsUnpickler error:" in text:
        detail = " ".join(text.split("WeightsUnpickler error:", 1)[1].split("Check the documentation")[0].split())
        detail = detail.split(" Please use `torch.serialization")[0].rstrip(".")  # advice to trust it: not ours to give
        return f"a weights-only load refuses its contents ({detail}); complexorder checkpoints hold tensors and plain values only"
    if not text:
        return type(exc).__name__
    first = text.splitlines()[0]
    first = first.split(". ")[0].rstrip(".") if ". " in first else first
    return f"{type(exc).__name__}: {first}"


def _failed_crc(path: Path) -> str | None:
    """The first entry of a zip-format checkpoint whose CRC-32 does not match its bytes (torch's reader does not
    check them, so a flipped byte would load as silently wrong weights); None when all match or when the file is
    not a readable zip archive (torch.load then says what is wrong with it)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
        return None


def load_checkpoint(path: str | Path, kind: str | tuple[str, ...] | None = None, *,
                    required: tuple[str, ...] = (), writer: str | None = None) -> dict:
    """Load a checkpoint with ``weights_only=True``; a corrupted, foreign or wrong-kind file is a one-line error.

    ``required`` entries must be present and non-empty, else a one-line error names the first missing one,
    the command that writes them (``writer``) and all of them.
    """
    path = Path(path)
    if path.is_dir():  # a run directory given for the file in it
        found = sorted(p.name for p in path.glob("*.pt"))
        raise IsADirectoryError(f"checkpoint {path} is a directory, expected a checkpoint file"
                                + (f" such as {path / found[0]} (it holds {', '.join(found[:4])}"
                                   f"{', …' if len(found) > 4 else ''})" if found else " (it holds no .pt file)"))
    if not path.is_file():
        if path.exists():  # /dev/null, a pipe: "does not exist" misled
            raise ValueError(f"checkpoint {path} is not a regular file (a device or pipe?); expected a checkpoint file")
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    damaged = _failed_crc(path)
    if damaged:
        raise ValueError(f"checkpoint {path} is corrupted: its entry {damaged!r} fails its CRC check (the bytes "
                         f"changed after torch.save wrote them, e.g. on a faulty disk or copy)")
    with warnings.catch_warnings(record=True) as caught:  # a file that fails gets the one line, not torch's warnings
        warnings.simplefilter("always")
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
            with open(path, "rb") as handle:
                head = handle.read(8)
            raise ValueError(f"checkpoint {path} could not be read (corrupted or not a PyTorch file): "
                             f"{_load_failure(exc, head)}") from None
    for w in caught:  # a file that loads: its warnings as torch gave them (module and once-per-place kept)
        module = next((name for name, m in list(sys.modules.items())
                       if getattr(m, "__file__", None) == w.filename), None)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, module=module,
                               registry=_REPLAYED_WARNINGS.setdefault(w.filename, {}))
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {path} is not a complexorder checkpoint (no 'format': 'complexorder' entry)")
    version = payload.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint {path} has format version {version}, newer than this complexorder reads "
                         f"({CHECKPOINT_VERSION}); upgrade complexorder to load it")
    kinds = (kind,) if isinstance(kind, str) else kind
    if kinds is not None and payload.get("kind") not in kinds:
        raise ValueError(f"checkpoint {path} holds a {payload.get('kind')!r} model, expected {' or '.join(map(repr, kinds))}")
    for entry in required:
        if not payload.get(entry):
            listing = ", ".join(required[:-1]) + (" and " if len(required) > 1 else "") + required[-1]
            raise ValueError(f"checkpoint {path} lacks its {entry!r} entry (`{writer}` writes {listing}); it is not "
                             f"a usable {payload.get('kind')} checkpoint")
    return payload


def check_finite_weights(path: str | Path, state: Mapping[str, Any]) -> None:
    """A one-line error naming the checkpoint ``path`` and the first tensor of its weights ``state`` that holds NaN or
    an infinity: such a model translates to empty lines, scores BLEU 0.00 and a BPC of null, without any error."""
    for name, value in state.items():
        if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()) \
                and not bool(torch.isfinite(value).all()):
            raise ValueError(f"checkpoint {path}: its weights hold NaN or infinite values ({name}); a training that "
                             "diverged?")
