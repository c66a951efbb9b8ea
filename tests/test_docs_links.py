"""The README and the results index point at files and sections that exist.

Both documents send readers to the file that holds a figure and its commands; a renamed or deleted results
file, or a renamed section, would leave a number without its source. These tests read the Markdown as
text: every Markdown link to a local file (and its ``#anchor``, as GitHub spells headings), and every
backticked path under ``benchmarks/`` or ``src/``, must resolve in the repository.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\s]+)`")


def github_slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = [c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN"]
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {github_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", path.read_text(encoding="utf-8"), re.M)}


def test_github_slug_on_hand_made_headings():
    assert github_slug("Table 2 — text classification") == "table-2--text-classification"
    assert github_slug("Table 5 — Multi30k English→German translation") == "table-5--multi30k-englishgerman-translation"
    assert github_slug("Speed, memory and `sparse=True`") == "speed-memory-and-sparsetrue"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_links_resolve(doc):
    broken = []
    for target in _LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part) if file_part else doc
        if not path.exists():
            broken.append(f"{target}: no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_backticked_repository_paths_exist(doc):
    missing = []
    for text in _CODE.findall(doc.read_text(encoding="utf-8")):
        if not text.startswith(("benchmarks/", "src/")) or any(c in text for c in "*{}<>…"):
            continue
        if not (ROOT / text.rstrip("/")).exists():
            missing.append(text)
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_results_index_lists_every_results_file():
    """Every file in benchmarks/results/ is named in its index (a new table cannot go unlisted)."""
    index = (ROOT / "benchmarks" / "results" / "README.md").read_text(encoding="utf-8")
    named = set(_CODE.findall(index))
    unlisted = []
    for path in sorted((ROOT / "benchmarks" / "results").iterdir()):
        if path.name == "README.md":
            continue
        listed = (
            path.name in named
            or f"{path.name}/" in named
            # "`table2_supplement.md` / `.jsonl`": a raw-results file listed beside its table
            or (path.suffix == ".jsonl" and f"{path.stem}.md" in named and ".jsonl" in named)
            # "`…_unpaired.jsonl`": a sibling named by its distinct ending
            or any(n.startswith("…") and path.name.endswith(n[1:]) for n in named)
        )
        if not listed:
            unlisted.append(path.name)
    assert not unlisted, f"benchmarks/results/README.md does not list: {unlisted}"
