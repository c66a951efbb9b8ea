"""Checksummed downloads for users with network access (never at import time, never in tests)."""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from tqdm import tqdm

from ..checkpoint import (_is_special, _naming_write_failures, _removing_made_dirs, _temporary_file_beside,
                          check_writable)
from ..environment import bars_off

__all__ = ["sha256_of", "fetch"]

_CHUNK = 1 << 20  # bytes read (and hashed, and written) at a time


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(url: str, dest: str | Path, sha256: str | None = None, timeout: float = 60.0,
          what: str = "download destination", *, progress: bool = True) -> Path:
    """Download ``url`` to ``dest`` (atomically) and check its SHA-256.

    The response is streamed, chunk by chunk, into a temporary file next to ``dest`` while its SHA-256 is computed,
    and renamed to ``dest`` only when it is complete and its checksum matches: a failed, interrupted or mismatching
    download leaves neither ``dest`` nor a temporary file behind (an existing ``dest`` is left as it was), nor the
    directories it made to hold them. A symbolic
    link ``dest`` is followed, as :func:`~complexorder.checkpoint.atomic_write_bytes` does; a device or pipe
    (``/dev/null``) is written only once the whole download has been checked.

    A progress bar (bytes; its total from the ``Content-Length`` header when the server sends one) goes to standard
    error, shown only when standard error is a terminal; ``progress=False`` hides it.

    An existing ``dest`` with the right checksum is kept. A ``dest`` that cannot be written is a
    one-line :class:`PermissionError` starting with ``what`` (the option that named it), raised
    before the network is touched. Offline or unreachable hosts, and a download cut short, give a one-line
    :class:`ConnectionError` naming the URL; a checksum mismatch a :class:`ValueError`.
    """
    dest = Path(dest)
    if dest.is_file() and (sha256 is None or sha256_of(dest) == sha256):
        return dest
    stale = dest.is_file()  # there, with another SHA-256: the offline error says so (stop 81: it said "copy it there")
    check_writable(dest, what)  # before the network: a bad path fails offline too
    target = Path(os.path.realpath(dest)) if dest.is_symlink() else dest
    special = _is_special(target)
    with _naming_write_failures(target), _removing_made_dirs(target.parent):  # offline: no empty directory left
        if special:  # nothing to rename over: keep the download aside until it is checked
            with tempfile.TemporaryFile() as tmp:
                _download(url, tmp, dest, sha256, timeout, progress, stale)
                tmp.seek(0)
                with open(target, "wb") as out:
                    for chunk in iter(lambda: tmp.read(_CHUNK), b""):
                        out.write(chunk)
            return dest
        fd, tmp_name = _temporary_file_beside(target)
        try:
            with os.fdopen(fd, "wb") as fh:
                _download(url, fh, dest, sha256, timeout, progress, stale)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp_name, 0o644)  # mkstemp creates 0600
            os.replace(tmp_name, target)
        except BaseException:  # a failed read, a mismatch, a full disk, Ctrl-C: no partial file is left
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
            raise
    return dest


def _download(url: str, out: IO[bytes], dest: Path, sha256: str | None, timeout: float, progress: bool,
              stale: bool = False) -> None:
    """Stream ``url`` into the open file ``out``, hashing as it goes; raise when it fails, is cut short or does not
    match ``sha256``. Only network errors become the ``ConnectionError``: a failed write (a full disk) travels up as
    the ``OSError`` it is."""
    def failed(reason: object) -> ConnectionError:
        there = (f"The {dest} there does not match the reference SHA-256; copy the right file over it by hand "
                 "instead" if stale else f"Copy the file to {dest} by hand instead")
        return ConnectionError(f"cannot download {url} ({reason}); are you offline? {there}")

    network_errors = (urllib.error.URLError, OSError, http.client.HTTPException)
    try:
        response = urllib.request.urlopen(url, timeout=timeout)
    except network_errors as exc:
        raise failed(_reason(exc)) from None
    digest = hashlib.sha256()
    received = 0
    with response:
        total = _content_length(response)
        with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, file=sys.stderr,
                  disable=bars_off(progress), dynamic_ncols=True) as bar:
            while True:
                try:
                    chunk = response.read(_CHUNK)
                except network_errors as exc:  # the connection dropped or timed out half-way
                    raise failed(_reason(exc)) from None
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
    if total is not None and received != total:
        raise failed(f"the download was cut short: got {received:,} of {total:,} bytes")
    got = digest.hexdigest()
    if sha256 is not None and got != sha256:
        raise ValueError(f"checksum mismatch for {url}: expected sha256 {sha256}, got {got}; file not saved")


def _reason(exc: BaseException) -> object:
    """What a network error says went wrong, never an empty text."""
    return getattr(exc, "reason", None) or str(exc) or type(exc).__name__


def _content_length(response: object) -> int | None:
    """The response's ``Content-Length`` in bytes, or None when it sends none (or a malformed one)."""
    headers = getattr(response, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    try:
        length = int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return length if length is not None and length >= 0 else None
