"""Reading real text files and tokenising them as Kim (2014).

The classification files are not all UTF-8 (MR, SUBJ-subjective and TREC-train hold cp1252 /
Latin-1 bytes) and some lines contain the byte 0x85, which ``str.splitlines`` would treat as a
line break. :func:`read_lines` therefore splits the *bytes* on ``b"\\n"`` only and decodes each
line on its own: UTF-8 when valid, else cp1252, else Latin-1 (which never fails).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["read_lines", "read_text_lines", "decode_line", "kim_tokenize"]


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
    return read_text_lines(path)[0]


def check_line_bytes(data: bytes, name: str | Path, not_text: str) -> None:
    """One-line errors for a file that reading line by line would silently turn into junk: a NUL byte (``"{name}:{line}:
    holds a NUL byte, so it is not {not_text}"``: a UTF-16 file of ASCII text is valid UTF-8 with a NUL after every
    character), or ``\\r`` line ends alone (all the lines would become one)."""
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise ValueError(f"{name}:{line}: holds a NUL byte, so it is not {not_text}")
    if b"\n" not in data and b"\r" in data.rstrip(b"\r"):
        raise ValueError(f"{name}: its lines end in '\\r' alone (classic Mac line ends) and it holds no '\\n'; "
                         f"convert it to '\\n' line ends (e.g. tr '\\r' '\\n')")


def read_text_lines(path: str | Path) -> tuple[list[str], list[int]]:
    """:func:`read_lines`, and the (1-based) numbers of the lines that were not UTF-8 (decoded as cp1252 or
    Latin-1), for the caller to report. A NUL byte is a one-line error: 8-bit text never holds one, a UTF-16
    or binary file does, and decoding it line by line would silently make junk examples."""
    data = Path(path).read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark (Windows editors) marks the encoding; it is not text
        data = data[3:]
    check_line_bytes(data, path, "a text file (UTF-16 or binary?); expected 8-bit text (UTF-8, cp1252 or Latin-1), "
                                 "one example per line")
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    lines, not_utf8 = [], []
    for number, part in enumerate(parts, 1):
        part = part.rstrip(b"\r")
        try:
            lines.append(part.decode("utf-8"))
        except UnicodeDecodeError:
            lines.append(decode_line(part))
            not_utf8.append(number)
    return lines, not_utf8


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
