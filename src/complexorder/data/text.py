"""Reading real text files and tokenising them as Kim (2014).

The classification files are not all UTF-8 (MR, SUBJ-subjective and TREC-train hold cp1252 /
Latin-1 bytes) and some lines contain the byte 0x85, which ``str.splitlines`` would treat as a
line break. :func:`read_lines` therefore splits the *bytes* on ``b"\\n"`` only and decodes each
line on its own: UTF-8 when valid, else cp1252, else Latin-1 (which never fails).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["read_lines", "decode_line", "kim_tokenize"]


def decode_line(raw: bytes) -> str:
    """Decode one line: UTF-8, else cp1252, else Latin-1."""
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1")


def read_lines(path: str | Path) -> list[str]:
    """All lines of ``path`` (split on ``\\n`` only, ``\\r`` stripped); no trailing empty line after the last ``\\n``."""
    data = Path(path).read_bytes()
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    return [decode_line(p.rstrip(b"\r")) for p in parts]


_KIM_RULES = [
    (re.compile(r"[^A-Za-z0-9(),!?\'\`]"), " "),
    (re.compile(r"\'s"), " 's"),
    (re.compile(r"\'ve"), " 've"),
    (re.compile(r"n\'t"), " n't"),
    (re.compile(r"\'re"), " 're"),
    (re.compile(r"\'d"), " 'd"),
    (re.compile(r"\'ll"), " 'll"),
    (re.compile(r","), " , "),
    (re.compile(r"!"), " ! "),
    (re.compile(r"\("), " ( "),
    (re.compile(r"\)"), " ) "),
    (re.compile(r"\?"), " ? "),
]


def kim_tokenize(text: str) -> list[str]:
    """Kim (2014)'s ``clean_str``, lower-cased: keep ``A-Za-z0-9(),!?'` ``; split clitics and ``, ! ? ( )``.

    Every other character (other punctuation, non-ASCII letters) becomes a space, as in Kim's code
    (whose ``" \\( "`` replacement inserted a stray backslash; here the bracket is kept alone).
    """
    for pattern, repl in _KIM_RULES:
        text = pattern.sub(repl, text)
    return text.lower().split()
