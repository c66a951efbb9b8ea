"""Checksummed downloads for users with network access (never at import time, never in tests)."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from ..checkpoint import atomic_write_bytes, check_writable

__all__ = ["sha256_of", "fetch"]


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(url: str, dest: str | Path, sha256: str | None = None, timeout: float = 60.0,
          what: str = "download destination") -> Path:
    """Download ``url`` to ``dest`` (atomically) and check its SHA-256.

    An existing ``dest`` with the right checksum is kept. A ``dest`` that cannot be written is a
    one-line :class:`PermissionError` starting with ``what`` (the option that named it), raised
    before the network is touched. Offline or unreachable hosts give a one-line
    :class:`ConnectionError` naming the URL; a checksum mismatch a :class:`ValueError`.
    """
    dest = Path(dest)
    if dest.is_file() and (sha256 is None or sha256_of(dest) == sha256):
        return dest
    check_writable(dest, what)  # before the network: a bad path fails offline too
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, tempfile.TemporaryFile() as tmp:
            shutil.copyfileobj(response, tmp)
            tmp.seek(0)
            data = tmp.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionError(f"cannot download {url} ({reason}); are you offline? "
                              f"Copy the file to {dest} by hand instead") from None
    got = hashlib.sha256(data).hexdigest()
    if sha256 is not None and got != sha256:
        raise ValueError(f"checksum mismatch for {url}: expected sha256 {sha256}, got {got}; file not saved")
    atomic_write_bytes(dest, data)
    return dest
