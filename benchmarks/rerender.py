"""Re-render the committed tables listed in ``benchmarks/renders.toml`` and check (or refresh) them.

Each listed table is rendered by one ``complexorder report`` or ``complexorder ablate --report-only`` command
from records committed beside it. This script runs each command into a temporary directory and compares the
render with the committed file's generated part, the text between its hand-written preface (if any) and its
hand-written sections (if any). A difference means the committed numbers are not what the committed records
and the current code give.

Usage (from the repository root):
    python benchmarks/rerender.py                 # check every table; exit 1 naming those that differ
    python benchmarks/rerender.py --write         # replace the generated parts that differ
    python benchmarks/rerender.py --only table4   # tables whose file name contains "table4"
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "benchmarks" / "renders.toml"
HAND_WRITTEN = "hand-written"


@dataclass(frozen=True)
class Table:
    file: str
    args: tuple[str, ...]
    starts_at: str | None = None
    ends_before: str | None = None
    whole_file: bool = False


def load_registry(path: Path = REGISTRY) -> list[Table]:
    with open(path, "rb") as f:
        entries = tomllib.load(f)["table"]
    return [Table(e["file"], tuple(e["args"]), e.get("starts_at"), e.get("ends_before"), e.get("whole_file", False))
            for e in entries]


def split_committed(table: Table, text: str) -> tuple[list[str], list[str], list[str]]:
    """``(preface, generated, rest)`` lines of the committed file; trailing blank lines of the generated part
    are kept with ``rest``."""
    lines = text.splitlines()
    start = 0
    if table.starts_at is not None:
        matches = [i for i, line in enumerate(lines) if line == table.starts_at]
        if len(matches) != 1:
            raise ValueError(f"{table.file}: expected exactly one line {table.starts_at!r}, found {len(matches)}")
        start = matches[0]
    end = len(lines)
    for i in range(start + 1, len(lines) if not table.whole_file else 0):
        line = lines[i]
        if (line.startswith(table.ends_before) if table.ends_before is not None
                else line.startswith("## ") and HAND_WRITTEN in line):
            end = i
            break
    else:
        if table.ends_before is not None:
            raise ValueError(f"{table.file}: no line starts with {table.ends_before!r}")
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[:start], lines[start:end], lines[end:]


def render(table: Table, tmp: Path) -> list[str]:
    """The table as the command renders it now, with the title demoted where the committed file demotes it."""
    from complexorder.cli import main

    out = tmp / Path(table.file).name
    args = [a.replace("{tmp}", str(tmp)) for a in table.args] + ["--out", str(out)]
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(args)
    if code != 0:
        raise RuntimeError(f"{table.file}: `complexorder {' '.join(args)}` exited {code}: {err.getvalue().strip()}")
    lines = out.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if table.starts_at is not None and lines and lines[0].startswith("# "):
        lines[0] = "#" + lines[0]
    return lines


def check(table: Table, tmp: Path, write: bool = False) -> list[str]:
    """A unified diff (committed -> rendered) of the generated part; empty when they agree. ``write`` replaces
    a differing generated part in the committed file."""
    path = ROOT / table.file
    text = path.read_text(encoding="utf-8")
    preface, generated, rest = split_committed(table, text)
    rendered = render(table, tmp)
    if generated == rendered:
        return []
    diff = list(difflib.unified_diff(generated, rendered, f"{table.file} (committed)", f"{table.file} (rendered)",
                                     lineterm="", n=1))
    if write:
        path.write_text("\n".join(preface + rendered + rest) + "\n", encoding="utf-8")
    return diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the generated parts that differ")
    parser.add_argument("--only", help="only the tables whose file name contains this text")
    parser.add_argument("--diff-lines", type=int, default=20, help="lines of each diff to print (default 20)")
    args = parser.parse_args(argv)
    tables = [t for t in load_registry() if not args.only or args.only in Path(t.file).name]
    if not tables:
        parser.error(f"--only {args.only!r} matches no table of {REGISTRY.relative_to(ROOT)}")
    differing = []
    for table in tables:
        with tempfile.TemporaryDirectory() as tmp:
            diff = check(table, Path(tmp), write=args.write)
        print(f"{table.file}: {'agrees' if not diff else 'rewritten' if args.write else 'DIFFERS'}")
        if diff:
            differing.append(table.file)
            print("\n".join(diff[:args.diff_lines]) + ("\n  ..." if len(diff) > args.diff_lines else ""))
    if differing and not args.write:
        print(f"{len(differing)} of {len(tables)} tables differ from what their commands render now; "
              f"`python benchmarks/rerender.py --write` refreshes them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
