"""Where data lives: ``--data-dir``, else ``$COMPLEXORDER_DATA``, else a user cache directory."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "default_data_dir", "resolve_data_dir", "require_file"]

DATA_ENV = "COMPLEXORDER_DATA"


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/complexorder/data`` (``~/.cache/complexorder/data``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "complexorder" / "data"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data directory: the argument, else ``$COMPLEXORDER_DATA``, else :func:`default_data_dir`."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return default_data_dir()


def require_file(path: Path, how_to_get: str) -> Path:
    """``path`` if it is a file, else a one-line error saying which file, where, and how to get it."""
    if path.is_dir():
        raise IsADirectoryError(f"data file {path.name} is a directory (at {path}), expected a file; {how_to_get}")
    if not path.is_file():
        blocking = next((p for p in path.parents if p.exists()), None)
        if blocking is not None and not blocking.is_dir():  # stop 81: --data-dir FILE said "missing data file"
            raise NotADirectoryError(f"data file {path.name} cannot be at {path}: {blocking} is a file, not a "
                                     f"directory (a --data-dir that names a file?){_origin(path)}")
        raise FileNotFoundError(f"missing data file {path.name} (expected at {path}{_origin(path)}); {how_to_get}")
    return path


def _origin(path: Path) -> str:
    """Where a data path under the default data directory came from, when neither ``--data-dir`` nor
    ``$COMPLEXORDER_DATA`` chose the folder (someone who forgot to set the variable sees why it looked there)."""
    if os.environ.get(DATA_ENV):
        return ""
    default = default_data_dir()
    if path == default or default in path.parents:
        return f"; {default} is the default data directory: pass --data-dir or set ${DATA_ENV}"
    return ""
