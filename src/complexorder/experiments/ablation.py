"""``complexorder ablate``: paper Table 4 on the Transformer classifier, run by the Table 2 runner.

Each row of Table 4 is a variant of the grid (embedding options and ``share_weights``); the
results file, resumption and checkpoints are those of :mod:`complexorder.experiments.classification`.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import cast

import numpy as np
from torch import nn

from ..checkpoint import atomic_write_text, check_writable
from .classification import build_model_from_config
from .report import (check_records, latest_records, load_results, mixed_settings, paired_wilcoxon,
                     read_notes, results_list, superseded_section)

__all__ = ["PAPER_ROWS", "paper_table4", "render_table4", "write_table4", "parameter_split", "TABLE4_FIELDS",
           "table4_config_problem"]

#: Our variant labels (configs/ablation/table4.toml) in the paper's row order, with f_d(j, pos) and W sharing.
PAPER_ROWS = [
    ("complex-order", "r e^{i ω pos}", False),
    ("adding initial phases", "r e^{i (ω pos + θ)}", False),
    ("dimension-sharing period", "r e^{i ω_j pos}", False),
    ("word-sharing period", "r e^{i ω_d pos}", False),
    ("dimension-sharing amplitude", "r_j e^{i ω pos}", False),
    ("word-sharing amplitude", "r_d e^{i ω pos}", False),
    ("complex-vanilla", "r e^{i θ}", False),
    ("dimension-sharing period, shared W", "r e^{i ω_j pos}", True),
    ("word-sharing period, shared W", "r e^{i ω_d pos}", True),
    ("dimension-sharing amplitude, shared W", "r_j e^{i ω pos}", True),
    ("word-sharing amplitude, shared W", "r_d e^{i ω pos}", True),
    ("complex-vanilla, shared W", "r e^{i θ}", True),
    ("vanilla Transformer (TPE)", "WE + PE", None),
]


def paper_table4() -> list[dict]:
    """The paper's Table 4 (``complexorder/paper/table4.csv``).

    Returns:
        One dict per row, in the paper's order (that of :data:`PAPER_ROWS`), of strings as the CSV holds them:
        ``row`` (the paper's name), ``embedding_formula``, ``share_real_imag_weights_in_WQKV`` (``"yes"``,
        ``"no"`` or ``"-"``), ``params_millions``, ``accuracy`` and ``delta`` (to complex-order; empty for that
        row).
    """
    text = resources.files("complexorder").joinpath("paper/table4.csv").read_text()
    return list(csv.DictReader(text.splitlines()))


def parameter_split(record: dict) -> tuple[int, int]:
    """(embedding parameters, other parameters) of the model a record describes (rebuilt, not trained)."""
    model = build_model_from_config(record["config"], record["vocab_size"], 2, max_positions=512)
    emb = sum(p.numel() for p in cast(nn.Module, model.embedding).parameters())
    return emb, sum(p.numel() for p in model.parameters()) - emb


#: What a record needs for Table 4 besides a classification result's fields, and why.
TABLE4_FIELDS = {"config": "which Table 4 needs to rebuild the model and count its parameters",
                 "parameters": "which Table 4 needs (the row's parameter count)",
                 "vocab_size": "which Table 4 needs to rebuild the model and count its parameters"}
#: The entries of a record's ``config`` that rebuild its model (:func:`parameter_split`), with their form.
CONFIG_FIELDS = {"model": (str, "a string"), "embedding": (str, "a string"), "embedding_options": (dict, "an object"),
                 "settings": (dict, "an object"), "share_weights": (bool, "true or false")}


def table4_config_problem(record: dict) -> str | None:
    """What keeps :func:`parameter_split` from rebuilding the model of ``record`` (its ``config`` lacks an entry or
    holds one of another type), in a few words; None when nothing does (or it has no ``config``: see TABLE4_FIELDS)."""
    config = record.get("config")
    if not isinstance(config, dict):
        return None
    for name, (kind, expected) in CONFIG_FIELDS.items():
        if name not in config:
            return f"'config' has no {name!r} ({expected}), which Table 4 needs to rebuild the model"
        if not isinstance(config[name], kind):
            return f"'config' entry {name!r} is {json.dumps(config[name], default=str)[:40]}; expected {expected}"
    return None


def render_table4(records: list[dict], commands: list[str] | None = None) -> str:
    """Table 4 of ``records`` as Markdown, the paper's numbers beside ours (what :func:`write_table4` writes).

    Args:
        records: classification result records of the Transformer (as :func:`~complexorder.experiments.report.
            load_results` reads them); each needs ``config``, ``parameters`` and ``vocab_size`` (a one-line
            ``ValueError`` names a record without them). Rows of other models are left out; a unit recorded twice
            counts with its latest record.
        commands: command lines listed under "Commands" at the end (None or empty: no such section).

    Returns:
        The Markdown text: the table, the paper's three claims checked, further rows, paired Wilcoxon tests.
    """
    check_records(records, require=TABLE4_FIELDS, extra=table4_config_problem)
    superseded = superseded_section([r for r in records if r["model"] == "transformer"])
    superseded += [""] if superseded else []
    records = [r for r in latest_records(records) if r["model"] == "transformer"]
    by_variant: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_variant[r["variant"]].append(r)
    paper = paper_table4()
    first = by_variant.get(PAPER_ROWS[0][0])
    lines = ["| row | f_d(j, pos) | shared W^{Q/K/V} | params (ours) | embedding + rest | params (paper) | "
             "accuracy (ours, mean ± std) | seeds | Δ (ours) | accuracy (paper) | Δ (paper) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (label, formula, share), ref in zip(PAPER_ROWS, paper):
        runs = by_variant.get(label, [])
        share_text = "-" if share is None else ("✓" if share else "×")
        if runs:
            acc = np.array([r["test_accuracy"] for r in runs])
            emb, rest = parameter_split(runs[0])
            std = f" ± {acc.std(ddof=1):.3f}" if len(acc) > 1 else ""
            delta = "" if first is None or label == PAPER_ROWS[0][0] else _delta_to_first(runs, first)
            ours = (f"{runs[0]['parameters'] / 1e6:.2f}M | {emb / 1e6:.2f}M + {rest / 1e6:.2f}M | {ref['params_millions']}M | "
                    f"{acc.mean():.3f}{std} | {len(acc)} | {delta}")
        else:
            ours = f"— | — | {ref['params_millions']}M | not measured | 0 | "
        lines.append(f"| {label} | {formula} | {share_text} | {ours} | {ref['accuracy']} | {ref['delta'] or ''} |")
    vocab = sorted({r["vocab_size"] for r in records})
    model, source, dev, test = _setting_text(records)
    out = ["# Table 4: ablation of the complex-order Transformer classifier on SST-2", "",
           f"Accuracy on the SST-2 test sentences ({test}) of the {model} trained on {source}, with early stopping on "
           f"dev ({dev}); mean ± standard deviation over seeds; Δ to the first row (the difference of the means where a row "
           "was run on the same seeds as the first; otherwise the mean paired difference on the seeds both were run "
           "on, their number beside it). Parameter counts are exact counts of our models (embedding + the rest).",
           ""] + lines + [""]
    mixed = mixed_settings(records)
    if mixed:
        out += ["**Rows mixing settings.** These rows average (and pair) units trained with different settings under "
                "one label (e.g. from two results files); setting hashes without split and seed in brackets:", ""]
        out += [f"- {line}" for line in mixed] + [""]
    out += superseded
    out += ["## Ordering against the paper's", ""] + _ordering(by_variant) + [""]
    out += _further_rows(by_variant)
    out += _paired_tests(by_variant)
    if vocab:
        dims = " / ".join(sorted({str(r["config"]["settings"].get("embedding_dim")) for r in records}, key=int))
        out += [f"Our vocabulary (training data, Kim tokenisation) has {', '.join(map(str, vocab))} entries, so the "
                f"embedding of d = {dims} complex dimensions holds 2 x V x {'d' if '/' in dims else dims} parameters by "
                "default; the paper does not give "
                "its vocabulary size, and its counts are not reproducible from the text (e.g. its shared-W rows save "
                "about 1.05M parameters where sharing W^Q, W^K, W^V of one layer saves 3 x 256 x 256 + 3 x 256 ≈ 0.2M), "
                "so compare the differences between rows rather than the absolute counts.", ""]
    if commands:
        out += ["## Commands", "", "```"] + commands + ["```", ""]
    return "\n".join(out)


#: The real SST-2 files' sizes (train, dev, test), for records written before stop 78, which hold no dev or test size.
REAL_SIZES = {"SST2": (67349, 872, 1821), "SST2-sent": (6920, 872, 1821)}


def _setting_text(records: list[dict]) -> tuple[str, str, str, str]:
    """The model, the training data, and the dev and test sizes the records were run with, for the table's opening
    sentence (it described d = 256 and the 6,920 sentences whatever a config had run; stop 78). Values that differ
    between records are joined with " / "."""
    def joined(values, comma: bool = False) -> str:
        shown = sorted({v for v in values if v is not None}, key=str)
        return " / ".join(f"{v:,}" if comma and isinstance(v, int) else str(v) for v in shown) or "?"

    settings = [r["config"]["settings"] for r in records]
    pretrained = {bool(s.get("pretrained")) for s in settings}
    vectors = {frozenset([False]): "no pretrained vectors", frozenset([True]): "pretrained vectors"}.get(
        frozenset(pretrained), "with and without pretrained vectors")
    layers = joined(s.get("num_layers", 1) for s in settings)
    model = (f"{layers}-layer Transformer classifier (" if "/" not in layers else
             f"Transformer classifier ({layers} layers, ") + (
        f"d = {joined(s.get('embedding_dim') for s in settings)}, inner "
        f"{joined(s.get('dim_feedforward') for s in settings)}, {joined(s.get('nhead') for s in settings)} heads, "
        f"{vectors})")

    def size(r: dict, key: str, index: int) -> int | None:
        if key in r:
            return r[key]
        real = REAL_SIZES.get(r["dataset"])
        return real[index] if real and r.get("train_size") == real[0] else None

    parts = []
    for d in sorted({r["dataset"] for r in records}):
        n = joined((r.get("train_size") for r in records if r["dataset"] == d), comma=True)
        parts.append(f"the {n} SST-2 training phrases (as the paper)" if d == "SST2" else
                     f"the {n} SST-2 training sentences only (NOT the 67k phrases of the paper: a CPU budget choice, "
                     "see the config)" if d == "SST2-sent" else f"{d} ({n} training examples)")
    return (model, "; ".join(parts) or "—", joined(size(r, "dev_size", 1) for r in records),
            joined(size(r, "test_size", 2) for r in records))


def _paired_diffs(runs: list[dict], base: list[dict]) -> list[float]:
    """Test-accuracy differences of ``runs`` over ``base`` on the seeds both were run on."""
    by_split = {r["split"]: r["test_accuracy"] for r in base}
    return [r["test_accuracy"] - by_split[r["split"]] for r in runs if r["split"] in by_split]


def _gap(runs: list[dict], base: list[dict]) -> tuple[float, int | None]:
    """Test-accuracy difference of ``runs`` over ``base`` and, where their seeds differ, the number of seeds
    it is paired on (``None`` for the same seeds, where it is the difference of the means). Without a common
    seed, the difference of the means over each row's own seeds, with ``0``."""
    if {r["split"] for r in runs} == {r["split"] for r in base}:
        return float(np.mean([r["test_accuracy"] for r in runs]) - np.mean([r["test_accuracy"] for r in base])), None
    pairs = _paired_diffs(runs, base)
    if pairs:
        return float(np.mean(pairs)), len(pairs)
    return float(np.mean([r["test_accuracy"] for r in runs]) - np.mean([r["test_accuracy"] for r in base])), 0


def _delta_to_first(runs: list[dict], first: list[dict]) -> str:
    gap, n = _gap(runs, first)
    return f"{gap:+.3f}" + ("" if n is None else " (no common seed)" if n == 0 else f" (n={n})")


def _paired_delta(runs: list[dict], base: list[dict]) -> str:
    """Mean test-accuracy difference of ``runs`` over ``base`` on the seeds both were run on."""
    pairs = _paired_diffs(runs, base)
    return f"{np.mean(pairs):+.3f} (n={len(pairs)})" if pairs else "— (no common seed)"


def _contains(big: dict, small: dict) -> bool:
    return all(k in big and big[k] == v for k, v in small.items())


def _extended_row(label: str, by_variant: dict[str, list[dict]]) -> str | None:
    """The measured row that ``label`` extends: same embedding and weight sharing, embedding options and
    model settings each a subset of its own, at least one a proper subset (the most specific such row; a
    paper row on a tie). E.g. ``word-sharing amplitude`` for the same options plus ``first_position = 1``,
    or ``complex-order`` for ``[transformer] attention_score = "real"`` (settings added after the first
    results are recorded only where they differ from their default, so the row without them has fewer).
    ``None`` when no measured row qualifies."""
    config = by_variant[label][0].get("config", {})
    options, settings = config.get("embedding_options", {}), config.get("settings", {})
    known = {row for row, _, _ in PAPER_ROWS}
    best, size = None, (-1, False)
    for other, runs in by_variant.items():
        if other == label or not runs:
            continue
        oc = runs[0].get("config", {})
        oo, os_ = oc.get("embedding_options", {}), oc.get("settings", {})
        if (oc.get("embedding") == config.get("embedding") and bool(oc.get("share_weights")) == bool(config.get("share_weights"))
                and _contains(options, oo) and _contains(settings, os_) and len(oo) + len(os_) < len(options) + len(settings)
                and (len(oo) + len(os_), other in known) > size):  # on a tie in size, a paper row
            best, size = other, (len(oo) + len(os_), other in known)
    return best


def _settings_changed(runs: list[dict], reference: list[dict]) -> str:
    """The model settings of ``runs`` that differ from those of ``reference`` (complex-order), as text. Without a
    complex-order row there is nothing to compare with: said so (a dash read as "the same settings")."""
    if not reference:
        return "not compared (no complex-order row)"
    mine, theirs = runs[0].get("config", {}).get("settings", {}), reference[0].get("config", {}).get("settings", {})
    changed = [f"{k} = {mine[k]!r}" for k in sorted(mine) if k not in theirs or theirs[k] != mine[k]]
    return ", ".join(changed) or "—"


def _further_rows(by_variant: dict[str, list[dict]]) -> list[str]:
    """Variants of the config that are not rows of the paper's table (e.g. ``first_position = 1``),
    after the paper's rows. Two paired differences (mean over the seeds both were run on, their number
    beside it): to complex-order, and to the measured row the variant extends (same embedding and weight
    sharing, a proper subset of its options and settings), which isolates what the added options do."""
    known = {label for label, _, _ in PAPER_ROWS}
    extra = [label for label, runs in by_variant.items() if label not in known and runs]
    if not extra:
        return []
    first = by_variant.get(PAPER_ROWS[0][0], [])
    lines = ["## Further rows (not in the paper's table)", "",
             "| row | shared W^{Q/K/V} | embedding options | model settings (vs complex-order) | params (ours) | "
             "accuracy (ours, mean ± std) | seeds | Δ to complex-order (paired seeds) | row it extends | "
             "Δ to that row (paired seeds) |",
             "|---|---|---|---|---:|---:|---:|---:|---|---:|"]
    for label in sorted(extra):
        runs = by_variant[label]
        acc = np.array([r["test_accuracy"] for r in runs])
        config = runs[0].get("config", {})
        options = ", ".join(f"{k} = {v!r}" for k, v in sorted(config.get("embedding_options", {}).items())) or "—"
        std = f" ± {acc.std(ddof=1):.3f}" if len(acc) > 1 else ""
        delta = _paired_delta(runs, first) if first else "— (no complex-order row)"  # not "no common seed"
        base = _extended_row(label, by_variant)
        base_delta = _paired_delta(runs, by_variant[base]) if base else "—"
        share = "✓" if config.get("share_weights") else "×"
        lines.append(f"| {label} | {share} | {config.get('embedding', '?')}: {options} | {_settings_changed(runs, first)} | "
                     f"{runs[0]['parameters'] / 1e6:.2f}M | {acc.mean():.3f}{std} | {len(acc)} | {delta} | {base or '—'} | "
                     f"{base_delta} |")
    return lines + [""]


def _paired_tests(by_variant: dict[str, list[dict]]) -> list[str]:
    """Every measured row against complex-order on the seeds both were run on: the mean paired difference
    and the one-sided Wilcoxon signed-rank p-values both ways (as Table 2's marks; scipy, zero differences
    dropped). Nothing when complex-order or every other row is unmeasured, or no seed is shared."""
    top = by_variant.get(PAPER_ROWS[0][0])
    if not top:
        return []
    ours = {r["split"]: r["test_accuracy"] for r in top}
    order = [label for label, _, _ in PAPER_ROWS] + sorted(l for l in by_variant if l not in {p[0] for p in PAPER_ROWS})
    rows, n_max = [], 0
    for label in order:
        runs = by_variant.get(label)
        diffs = _paired_diffs(runs, top) if runs and label != PAPER_ROWS[0][0] else []
        if not diffs:
            continue
        theirs = {r["split"]: r["test_accuracy"] for r in cast("list[dict]", runs)}  # diffs: runs were found
        p_top, _ = paired_wilcoxon(ours, theirs)
        p_row, _ = paired_wilcoxon(theirs, ours)
        rows.append(f"| {label} | {len(diffs)} | {np.mean(diffs):+.3f} | {p_top:.3g} | {p_row:.3g} |")
        n_max = max(n_max, len(diffs))
    if not rows:
        return []
    return ["## Paired tests against complex-order", "",
            "Each row against complex-order on the seeds both were run on: mean of (row − complex-order) and the "
            "one-sided Wilcoxon signed-rank p-values (scipy, zero differences dropped) that complex-order is above "
            f"the row, and that the row is above complex-order. With n paired seeds no p can fall below 1/2^n "
            f"({0.5 ** n_max:.3g} at n = {n_max}).", "",
            "| row | seeds paired | mean Δ (row − complex-order) | p (complex-order above) | p (row above) |",
            "|---|---:|---:|---:|---:|"] + rows + [""]


def _ordering(by_variant: dict[str, list[dict]]) -> list[str]:
    """The paper's three claims about Table 4, checked on the measured rows of the paper's table by each
    row's gap to complex-order (``_gap``: the difference of the means on the same seeds, else the mean paired
    difference); further rows of a config are left out of the comparison."""
    known = {label for label, _, _ in PAPER_ROWS}
    top = PAPER_ROWS[0][0]
    if not by_variant.get(top):
        return ["- complex-order not measured yet."]
    # each row's gap to complex-order: the difference of the means on the same seeds, else paired (see _gap)
    gaps = {label: _gap(runs, by_variant[top]) for label, runs in by_variant.items()
            if runs and label in known and label != top}
    paired = sorted({n for _, n in gaps.values() if n})

    def points(label: str) -> str:
        return f"{gaps[label][0] * 100:+.1f}"

    lines = []
    above = sorted((label for label in gaps if gaps[label][0] > 0), key=lambda l: -gaps[l][0])
    lines.append(f"- complex-order best (paper: yes): {'yes' if not above else 'NO — above it: ' + ', '.join(f'{l} ({points(l)} points)' for l in above)}.")
    sharing = [label for label, _, _ in PAPER_ROWS if "sharing" in label and label in gaps]
    if sharing:
        far = [l for l in sharing if gaps[l][0] < -0.02]
        lines.append(f"- sharing schemes within 2 points of complex-order (paper: all within 2.1): "
                     f"{len(sharing) - len(far)}/{len(sharing)}"
                     + (f"; more than 2 points below: {', '.join(f'{l} ({points(l)})' for l in far)}" if far else "") + ".")
    for l in ("complex-vanilla", "complex-vanilla, shared W"):
        if l in gaps:
            lines.append(f"- {l} clearly below complex-order (paper: 4.9 / 7.0 points below): "
                         f"{'yes' if gaps[l][0] <= -0.01 else 'NO'} ({points(l)} points).")
    if paired:
        lines.append(f"- gaps in points to complex-order; rows run on other seeds than complex-order are compared on the "
                     f"seeds both were run on ({', '.join(map(str, paired))} seeds), the others by their means.")
    if {"word-sharing amplitude", "dimension-sharing amplitude"} & set(gaps):
        lines.append("- note on the shared-amplitude rows: our default positions start at 0, where the phase is 0 and a "
                     "word's embedding is its amplitude alone: r_d, the same vector for every word (word-sharing), or "
                     "r_j times the all-ones vector (dimension-sharing), so the first token's identity is lost or reduced "
                     "to a scale (the authors' code counts positions from 1); this may explain part of those rows' gap.")
    seeds = sorted({len(v) for v in by_variant.values() if v})
    lines.append(f"- seeds per measured row: {', '.join(map(str, seeds))}; differences of a point or two "
                 "can be seed-to-seed variation (see the ± columns and, with paired seeds, the Wilcoxon tests below).")
    return lines


#: The data sets of Table 4 (the Transformer on SST-2, trained on its phrases or its sentences).
TABLE4_DATASETS = ("SST2", "SST2-sent")


def check_table4_records(records: list[dict], results: list[str]) -> None:
    """A one-line error when ``records`` (read from ``results``) hold cells that are not Table 4's."""
    other = sorted({f"{r['dataset']} {r['model']}" for r in records
                    if r["dataset"] not in TABLE4_DATASETS or r["model"] != "transformer"})
    if other:
        raise ValueError(f"{', '.join(map(str, results))} hold(s) records that are not Table 4's (the Transformer on "
                         f"SST-2): {', '.join(other)}; render classification results with complexorder report")


def write_table4(results: list[str], out: str | Path, notes: str | Path | None = None, warn=print) -> str:
    """Render ``results`` as Table 4 into ``out``, then the Markdown file ``notes`` verbatim after a blank line.

    Args:
        results: a list of JSON-lines results files (``complexorder ablate``; the Transformer on SST-2); a single
            path is a one-line ``TypeError`` (wrap it in a list).
        out: the Markdown file to write; one of the files read (a results file, ``notes``) is refused before
            anything is written, as ``complexorder ablate --out`` refuses it.
        notes: a Markdown file appended verbatim after the table (None: nothing).
        warn: takes each line reporting a skipped malformed line of a results file (default ``print``;
            ``lambda *_: None`` silences them).

    Returns:
        The text written to ``out``.
    """
    results = results_list(results)
    notes_text = read_notes(notes)
    records = load_results(results, warn=warn, require=TABLE4_FIELDS, extra=table4_config_problem)
    if not records:
        raise ValueError(f"no results in {', '.join(map(str, results))}")
    check_table4_records(records, results)
    reads: dict[str, str | Path] = {f"a results file it renders ({r})": r for r in results}
    if notes:
        reads["the notes file it appends (--notes)"] = notes
    check_writable(out, "--out", inputs=reads)  # writing a results file over with its table destroyed it
    commands = list(dict.fromkeys(r["command"] for r in records if r.get("command")))
    text = render_table4(records, commands)
    if notes_text:
        text += "\n" + notes_text
    atomic_write_text(out, text)
    return text
