"""``complexorder report``: results files -> Table 2 (Markdown, significance marks, the paper beside ours) and Fig. 2.

Significance follows the paper: a one-sided Wilcoxon signed-rank test (scipy) of complex-order
against each baseline of the same architecture and data set, paired by fold (CV) or seed (fixed
splits); a mark means p < 0.05. With n pairs the smallest attainable p is 2^-n, so at least 5
pairs are needed for a mark. The differences are rounded (to 1e-12) before ranking, so that accuracies
equal in exact arithmetic tie (SciPy's advice), and pairs with no difference are dropped ("wilcox");
with ties or zeros SciPy (>= 1.15) then computes the exact permutation p-value for small n, which
:func:`signed_rank_greater` reproduces with the statistic vectorised over the sign flips.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import permutation_test, rankdata, wilcoxon

from ..checkpoint import atomic_write_bytes, atomic_write_text, check_writable, is_cut_record, scan_jsonl
from ..config import is_finite_number
from ..data.classification import DATASETS, NUM_FOLDS

__all__ = ["load_results", "read_results_lines", "check_records", "record_problem", "latest_records", "cell_scores",
           "paired_wilcoxon", "signed_rank_greater", "significance_marks", "render_table2", "plot_epoch_times",
           "paper_table2", "MARKS", "write_report"]

MARKS = {"none": "§", "pe": "†", "tpe": "‡", "complex-vanilla": "*"}
PAPER_COLUMNS = {"MR": "MR", "SUBJ": "SUBJ", "CR": "CR", "MPQA": "MPQA", "SST2": "SST", "TREC": "TREC",
                 "SST2-sent": "SST"}
MODEL_TITLES = {"fasttext": "FastText", "cnn": "CNN", "lstm": "LSTM", "transformer": "Transformer"}
ALPHA = 0.05


def results_list(paths, name: str = "results") -> list:
    """``paths`` (a list of results files) as a list; a single path (a ``str`` or ``Path``, which would be walked
    character by character) or a value that is not a list is a one-line ``TypeError`` naming ``name``."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        shown = os.fsdecode(paths)
        raise TypeError(f"{name} must be a list of results files, got the single path {shown!r}; pass "
                        f"[{shown!r}]")
    if not isinstance(paths, Iterable) or isinstance(paths, Mapping):
        raise TypeError(f"{name} must be a list of results files, got {type(paths).__name__}")
    return list(paths)


def load_results(paths, warn=print, require: dict[str, str] | None = None, extra=None) -> list[dict]:
    """The records of the results files ``paths``, each checked where it was read.

    Args:
        paths: a list of JSON-lines results files (``complexorder classify`` / ``ablate``); a single path is a
            one-line ``TypeError`` (wrap it in a list).
        warn: takes each line reporting a skipped line that is not JSON (an interrupted write); default ``print``,
            ``lambda *_: None`` silences them.
        require: fields only some outputs need, with what needs them (``FIGURE_FIELDS``).
        extra: a further check of a record: returns its problem, or None.

    Returns:
        The records of all the files, in file and line order.

    A record whose fields are missing or malformed is a one-line ``ValueError`` naming the file and line
    (:func:`record_problem`); a file of which most lines are not JSON is refused."""
    records = []
    for path in results_list(paths, "paths"):
        if Path(path).is_dir():
            raise IsADirectoryError(f"results file {path} is a directory; pass the JSON-lines file in it that "
                                    "`complexorder classify` or `ablate` wrote")
        if Path(path).exists() and not Path(path).is_file():  # /dev/null, a pipe: "does not exist" misled
            raise ValueError(f"results file {path} is not a regular file (a device or pipe?); pass the JSON-lines file "
                             "that `complexorder classify` or `ablate` wrote")
        if not Path(path).is_file():
            raise FileNotFoundError(f"results file {path} does not exist; run `complexorder classify` (or `ablate`) "
                                    f"first")
        numbered = read_results_lines(path, warn)
        found = [record for _, record in numbered]
        check_records(found, f"results file {path}", check_fields=False)
        for line, record in numbered:
            problem = record_problem(record, require) or (extra(record) if extra else None)
            if problem:
                raise ValueError(f"results file {path}:{line}: {problem}")
        records.extend(found)
    return records


#: Malformed lines of a results file reported one by one; more are reported in one line.
MALFORMED_SHOWN = 3


def read_results_lines(path: str | Path, warn=print) -> list[tuple[int, Any]]:
    """``(line number, record)`` of each JSON line of ``path``. Lines that are not JSON are skipped and reported
    through ``warn`` (one line each, or one line for all when there are more than ``MALFORMED_SHOWN``); when lines
    that are not even the start of a record (:func:`~complexorder.checkpoint.is_cut_record`) are as many as the
    records, it is not a results file (word vectors, notes): a one-line error, not a warning per line."""
    numbered, malformed = scan_jsonl(path)
    lines = len(numbered) + len(malformed)
    foreign = sum(not is_cut_record(line) for _, line in malformed)
    if foreign and foreign >= len(numbered):
        raise ValueError(f"results file {path}: {len(malformed)} of its {lines} lines are not JSON; it is not a "
                         f"results file — pass the JSON-lines file that `complexorder classify` or `ablate` wrote")
    if len(malformed) > MALFORMED_SHOWN:
        shown = ", ".join(str(number) for number, _ in malformed[:MALFORMED_SHOWN])
        warn(f"{path}: skipping {len(malformed)} malformed lines of {lines} (lines {shown}, …): not JSON, or cut "
             f"short by an interrupted write")
    else:
        for number, _ in malformed:
            warn(f"{path}:{number}: skipping a malformed (probably interrupted) line")
    return numbered


#: What a classification result record must hold to be rendered.
RECORD_FIELDS = ("dataset", "model", "variant", "split", "test_accuracy")
#: What the figure of seconds per epoch (``report --figure``) needs besides, and why.
FIGURE_FIELDS = {"seconds_per_epoch": "which the figure of seconds per epoch needs (pass --figure '' to render "
                                      "the table alone)"}


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


#: ``field -> (test, expected form)`` of the fields the renderers read (``None`` allowed where noted).
FIELD_FORMS = {
    "dataset": (lambda v: v in PAPER_COLUMNS, f"one of {', '.join(PAPER_COLUMNS)}"),
    "model": (lambda v: v in MODEL_TITLES, f"one of {', '.join(MODEL_TITLES)}"),
    "variant": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string naming the row"),
    "split": (lambda v: isinstance(v, str) and re.fullmatch(r"(fold|seed)-\d+", v) is not None,
              'a string "fold-K" or "seed-K"'),
    "test_accuracy": (lambda v: is_finite_number(v, 0, 1), "a number in [0, 1]"),
    "dev_accuracy": (lambda v: v is None or is_finite_number(v, 0, 1), "a number in [0, 1] or null"),
    "seconds_per_epoch": (lambda v: is_finite_number(v, 0), "a number >= 0"),
    "finished_at": (lambda v: isinstance(v, str), 'a time stamp string ("2026-11-23T10:31:11")'),
    "command": (lambda v: v is None or isinstance(v, str), "a string (the command line) or null"),
    "config": (lambda v: isinstance(v, dict), "an object of the unit's settings"),
    "parameters": (_is_count, "a positive integer"),
    "vocab_size": (_is_count, "a positive integer"),
    "history": (lambda v: v is None or (isinstance(v, list) and all(
        isinstance(h, dict) and all(is_finite_number(h[k]) for k in ("monitor_accuracy", "dev_accuracy") if k in h)
        for h in v)), "a list of objects whose accuracies are numbers"),
}


def _shown(value) -> str:
    """``value`` as the JSON it was read from (``null``, ``"abc"``, ``5``), at most 40 characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:40] + " …"


def record_problem(record: dict, require: dict[str, str] | None = None) -> str | None:
    """What is wrong with the fields of a classification result ``record`` (an object holding ``RECORD_FIELDS``),
    in a few words naming the field and the expected form; None when nothing is. Fields in ``require`` must be
    present (their values say why); the others are checked where present."""
    for name, why in (require or {}).items():
        if name not in record:
            expected = FIELD_FORMS[name][1] if name in FIELD_FORMS else "present"
            return f"no {name!r} ({expected}), {why}"
    for name, (test, expected) in FIELD_FORMS.items():
        if name in record and not test(record[name]):
            return f"{name!r} is {_shown(record[name])}; expected {expected}"
    if record.get("dataset") in DATASETS and "split" in record:  # both well formed: the split must be one of its own
        kind, number = record["split"].split("-")
        if DATASETS[record["dataset"]].protocol == "cv" and (kind != "fold" or int(number) >= NUM_FOLDS):
            return (f"'split' is {_shown(record['split'])}; {record['dataset']} is cross-validated: expected "
                    f'"fold-K" with K in 0..{NUM_FOLDS - 1}')
        if DATASETS[record["dataset"]].protocol == "fixed" and kind != "seed":
            return (f"'split' is {_shown(record['split'])}; {record['dataset']} has fixed splits: expected "
                    f'"seed-S"')
    return None


def check_records(records: list[dict], source: str = "results", require: dict[str, str] | None = None,
                  check_fields: bool = True, extra=None) -> None:
    """A one-line error when ``records`` are not classification results (another experiment's file, say), or
    (``check_fields``) one of them has a field missing or malformed (:func:`record_problem`, then ``extra``)."""
    for i, r in enumerate(records, 1):
        if not isinstance(r, dict):
            raise ValueError(f"{source}: record {i} is not a classification result (a JSON {type(r).__name__}, not "
                             f"an object); pass the JSON-lines file that `complexorder classify` or `ablate` wrote")
        missing = [k for k in RECORD_FIELDS if k not in r]
        if missing:
            held = ", ".join(sorted(r)[:6]) + (", …" if len(r) > 6 else "")
            raise ValueError(f"{source}: record {i} is not a classification result (no {missing[0]!r}; it holds "
                             f"{held}); pass the JSON-lines file that `complexorder classify` or `ablate` wrote")
        problem = (record_problem(r, require) or (extra(r) if extra else None)) if check_fields else None
        if problem:
            raise ValueError(f"{source}: record {i}: {problem}")


def setting_key(record: dict) -> str | None:
    """The record's settings without its split and seed (a hash), or None for records without a config:
    two records of one cell with different keys were trained differently."""
    config = record.get("config")
    if not isinstance(config, dict):
        return None
    rest = {k: v for k, v in config.items() if k not in ("split", "seed")}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()[:12]


def superseded_section(records: list[dict]) -> list[str]:
    """The Markdown lines listing :func:`superseded_settings` (none when there are none), without blank lines
    around them."""
    hidden = superseded_settings(records)
    if not hidden:
        return []
    return (["**Units re-run with other settings.** Only the latest record of a unit is shown; these units also "
             "have earlier records trained with other settings (setting hashes without split and seed), which no "
             "mean or test here includes:", ""] + [f"- {line}" for line in hidden])


def print_superseded_note(text: str, out) -> None:
    """On standard error: that the rendered ``text`` (written to ``out``) lists units re-run with other settings."""
    if "**Units re-run with other settings.**" in text:
        print(f"complexorder: note: some units of {out} also have earlier records trained with other settings, "
              "which the table leaves out (listed under the table)", file=sys.stderr)


def mixed_settings(records: list[dict]) -> list[str]:
    """One line per (dataset, model, variant) cell whose shown units were trained with different settings."""
    keys: dict[tuple, set] = defaultdict(set)
    for r in latest_records(records):
        keys[(r["dataset"], r["model"], r["variant"])].add(setting_key(r))
    return [f"{d} {m} {v}: {len(k)} different settings ({', '.join(sorted(map(str, k)))})"
            for (d, m, v), k in sorted(keys.items()) if len(k) > 1]


def superseded_settings(records: list[dict]) -> list[str]:
    """One line per unit that also has an earlier record trained with other settings than the one shown (a unit
    re-run with other epochs or vectors into the same file, or the same unit in two results files): only the
    latest record of a unit is shown, so the other is left out of every mean and test."""
    shown = {(r["dataset"], r["model"], r["variant"], r["split"]): r for r in latest_records(records)}
    hidden: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        key = (r["dataset"], r["model"], r["variant"], r["split"])
        if r is not shown[key] and setting_key(r) != setting_key(shown[key]):
            hidden[key].append(r)
    def brief(r: dict) -> str:
        return f"settings {setting_key(r)}, test {float(r['test_accuracy']):.4f}"

    return [f"{d} {m} {v} {split}: shows the latest record ({brief(shown[(d, m, v, split)])}); {len(rs)} earlier "
            f"record(s) with other settings left out ({'; '.join(map(brief, rs))})"
            for (d, m, v, split), rs in sorted(hidden.items())]


def latest_records(records: list[dict]) -> list[dict]:
    """One record per (dataset, model, variant, split): the most recently finished one."""
    check_records(records)
    best: dict[tuple, dict] = {}
    for r in records:
        key = (r["dataset"], r["model"], r["variant"], r["split"])
        if key not in best or r.get("finished_at", "") >= best[key].get("finished_at", ""):
            best[key] = r
    return list(best.values())


def cell_scores(records: list[dict], field: str = "test_accuracy") -> dict[tuple[str, str, str], dict[str, float]]:
    """``(dataset, model, variant) -> {split: record[field]}`` over the latest record of each unit (test accuracy by
    default; a unit whose ``field`` is missing or null, e.g. ``dev_accuracy`` without a dev split, is left out)."""
    cells: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in latest_records(records):
        if r.get(field) is not None:
            cells[(r["dataset"], r["model"], r["variant"])][r["split"]] = float(r[field])
    return dict(cells)


def paired_wilcoxon(ours: dict[str, float], theirs: dict[str, float]) -> tuple[float | None, int]:
    """One-sided p-value that ``ours`` > ``theirs`` over their common splits, and the number of pairs."""
    common = sorted(set(ours) & set(theirs))
    if not common:
        return None, 0
    diffs = np.round(np.array([ours[s] - theirs[s] for s in common]), 12)  # equal in exact arithmetic: tied
    if np.all(diffs == 0):
        return 1.0, len(common)
    return signed_rank_greater(diffs), len(common)


def signed_rank_greater(diffs: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(diffs, alternative="greater", zero_method="wilcox", method="auto").pvalue``,
    the same number, faster where SciPy runs its exact permutation test (n <= 13 with ties or zeros).

    SciPy evaluates that test's 2^n signed-rank statistics one at a time (about 0.4 s per test at n = 10,
    minutes for a whole Table 2). The ranks of |d| do not change when signs flip, so the statistic (the sum
    of the ranks of the positive differences) is computed here for all flips at once, by SciPy's own
    ``permutation_test``. Zeros are dropped first, as "wilcox" does; that divides the 2^n flips into
    2^(number of zeros) equal copies, so the p-value is the same fraction. Fewer than two non-zero
    differences, or none of SciPy's permutation cases, go to SciPy itself.
    """
    diffs = np.asarray(diffs, dtype=np.float64)
    nonzero = diffs[diffs != 0]
    ties = np.unique(np.abs(nonzero)).size < nonzero.size
    if diffs.size > 13 or nonzero.size < 2 or not (ties or nonzero.size < diffs.size):
        return float(wilcoxon(diffs, alternative="greater", zero_method="wilcox", method="auto").pvalue)
    ranks = rankdata(np.abs(nonzero))

    def positive_rank_sum(flipped, axis=-1):
        return np.sum(np.where(flipped > 0, ranks, 0.0), axis=axis)

    return float(permutation_test((nonzero,), positive_rank_sum, permutation_type="samples", vectorized=True,
                                  n_resamples=9999, alternative="greater").pvalue)


def is_complex_order_row(variant: str) -> bool:
    """``complex-order`` itself and its configured variants (labels ``"complex-order, ..."``), which
    are all tested against the four baselines."""
    return variant == "complex-order" or variant.startswith("complex-order,")


def significance_marks(cells, dataset: str, model: str, target: str = "complex-order") -> tuple[str, dict]:
    """The marks (§ † ‡ *) of ``target`` over each baseline, and the p-values."""
    marks, pvalues = "", {}
    ours = cells.get((dataset, model, target))
    if not ours:
        return "", {}
    for baseline, mark in MARKS.items():
        theirs = cells.get((dataset, model, baseline))
        if not theirs:
            continue
        p, n = paired_wilcoxon(ours, theirs)
        pvalues[baseline] = (p, n)
        if p is not None and p < ALPHA and np.mean([ours[s] for s in theirs if s in ours]) > np.mean(
                [theirs[s] for s in ours if s in theirs]):
            marks += mark
    return marks, pvalues


def paper_table2() -> dict[tuple[str, str], dict[str, float]]:
    """The paper's Table 2: ``(model, embedding) -> {dataset: accuracy}`` (our dataset names)."""
    text = resources.files("complexorder").joinpath("paper/table2.csv").read_text()
    table = {}
    for row in csv.DictReader(text.splitlines()):
        table[(row["architecture"], row["embedding"])] = {ours: float(row[col]) for ours, col in PAPER_COLUMNS.items()}
    return table


def _fmt(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _vectors_section(records: list[dict]) -> list[str]:
    """Which word-vector files the shown units were initialised from (path, sha256, units, models, data sets).

    Results from before the digest was recorded say "sha256 not recorded". More than one file in one
    table is called out: their cells are not strictly comparable.
    """
    files: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in latest_records(records):
        info = r.get("vectors")
        if isinstance(info, dict):
            files[(str(info.get("path")), str(info.get("sha256") or "not recorded"))].append(r)
    if not files:
        return []
    lines = ["", "## Word vectors", "", "| file | sha256 | units | models | data sets |", "|---|---|---:|---|---|"]
    for (path, digest), units in files.items():
        models = ", ".join(sorted({u["model"] for u in units}))
        datasets = ", ".join(sorted({u["dataset"] for u in units}))
        lines.append(f"| {path} | {digest} | {len(units)} | {models} | {datasets} |")
    if len(files) > 1:
        lines += ["", f"{len(files)} different vector files (or unrecorded digests) are mixed in this table: "
                      "cells initialised from different files are not strictly comparable."]
    return lines


#: the baselines' order in tables; configured rows ("complex-order, ...") sort after them
ORDER = {"none": 0, "pe": 1, "tpe": 2, "complex-vanilla": 3, "complex-order": 4}


def _split_order(split: str) -> tuple:
    """``fold-2`` before ``fold-10``: the split's name, its number compared as a number."""
    name, _, number = split.rpartition("-")
    return (name, int(number)) if number.isdigit() else (split, -1)


def _majority_section(records: list[dict]) -> list[str]:
    """Units whose kept model is, on dev, no better than predicting one class: the best dev accuracy at or below
    the record's ``dev_majority_rate`` (recorded since stop 72; older records are not judged). With Table 2's
    patience such a unit may have been stopped before it left that plateau (TPE on CR did, in half its folds)."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    held: dict[tuple[str, str, str], int] = defaultdict(int)  # units that already ran with patience_above_majority
    judged = 0
    for r in latest_records(records):
        rate, dev = r.get("dev_majority_rate"), r.get("dev_accuracy")
        if isinstance(rate, (int, float)) and isinstance(dev, (int, float)):
            judged += 1
            if dev <= rate:
                groups[(r["dataset"], r["model"], r["variant"])].append(r["split"])
                settings = (r.get("config") or {}).get("settings") or {}
                held[(r["dataset"], r["model"], r["variant"])] += settings.get("patience_above_majority") is True
    if not groups:
        return []
    lines = ["", "## Units kept at the majority class", "",
             f"Of the {judged} units whose records state their dev majority-class rate, these kept a model whose best "
             "dev accuracy is no higher than that rate: on dev, no better than predicting the most common label. "
             "Their cells average such one-class guesses in. A unit stopped by `patience` at that plateau may have "
             "left it with more epochs; `patience_above_majority = true` in the architecture's config section "
             "trains such units on (`docs/design.md`). Units that already ran with it (last column) never rose above "
             "the rate in any epoch: more epochs would not have changed them.", "",
             "| data set | model | embedding | units | splits | of them with `patience_above_majority` |",
             "|---|---|---|---:|---|---:|"]
    for (d, m, v), splits in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], ORDER.get(kv[0][2], 9), kv[0][2])):
        lines.append(f"| {d} | {m} | {v} | {len(splits)} | {', '.join(sorted(splits, key=_split_order))} | "
                     f"{held[(d, m, v)]} |")
    return lines


def _test_curve_section(records: list[dict]) -> list[str]:
    """Our accuracy next to what the authors' cross-validation code would report for the same units.

    The authors' code (FreedomIntelligence/complex-order, ``TEXT CLASSIFICATION/*/train.py``) keeps,
    for MR, SUBJ, CR and MPQA, the best per-epoch accuracy on the held-out fold itself (no separate
    dev split) and averages it over folds. Units whose history holds the per-epoch test accuracy
    (``monitor_accuracy``; recorded, never used for selection) allow the same figure here. It is an
    optimistic number, shown only to compare with the paper; our tables use the best dev epoch.
    """
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in latest_records(records):
        history = r.get("history") or []
        if history and all("monitor_accuracy" in h for h in history):
            groups[(r["dataset"], r["model"], r["variant"])].append(r)
    if not groups:
        return []
    lines = ["", "## Test accuracy at the best dev epoch vs at the best test epoch (the authors' protocol)", "",
             "The authors' code reports, for MR, SUBJ, CR and MPQA, the best per-epoch accuracy on the held-out "
             "fold itself. The last column does the same over the epochs our runs trained (early stopping on dev "
             "ends them sooner than the authors' fixed 20 epochs, so it is, if anything, lower than their "
             "protocol would give). It selects on the test data and is optimistic: it is shown only to compare "
             "with the paper's numbers, never used in the tables above.", "",
             "| data set | model | embedding | units | test at best dev epoch | best test over epochs | gain |",
             "|---|---|---|---:|---:|---:|---:|"]
    for (d, m, v), units in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], ORDER.get(kv[0][2], 9), kv[0][2])):
        ours = float(np.mean([u["test_accuracy"] for u in units]))
        oracle = float(np.mean([max(h["monitor_accuracy"] for h in u["history"]) for u in units]))
        lines.append(f"| {d} | {m} | {v} | {len(units)} | {ours:.3f} | {oracle:.3f} | {oracle - ours:+.3f} |")
    return lines



def _variant_dev_section(records: list[dict]) -> list[str]:
    """Each configured complex-order variant (rows ``"complex-order, ..."``) against ``complex-order``
    itself, on the **dev** accuracy of the same folds/seeds: the evidence for choosing a variant that
    does not look at test data. Per cell: paired units, mean dev accuracy of both, the change, how many
    units went up/down, and the change in test accuracy beside it; then all cells pooled, with the
    one-sided Wilcoxon signed-rank p-value that the variant's dev accuracy is higher."""
    dev: dict[tuple[str, str, str], dict[str, tuple[float, float]]] = defaultdict(dict)
    for r in latest_records(records):
        if is_complex_order_row(r["variant"]) and r.get("dev_accuracy") is not None:
            dev[(r["dataset"], r["model"], r["variant"])][r["split"]] = (float(r["dev_accuracy"]),
                                                                          float(r["test_accuracy"]))
    rows, pooled = [], defaultdict(list)
    for (d, m, v), units in sorted(dev.items()):
        base = dev.get((d, m, "complex-order"))
        if v == "complex-order" or not base:
            continue
        common = sorted(set(units) & set(base))
        if not common:
            continue
        ddev = np.array([units[s][0] - base[s][0] for s in common])
        dtest = np.array([units[s][1] - base[s][1] for s in common])
        pooled[v].append(ddev)
        rows.append(f"| {d} | {m} | {v} | {len(common)} | {np.mean([base[s][0] for s in common]):.4f} | "
                    f"{np.mean([units[s][0] for s in common]):.4f} | {100 * ddev.mean():+.2f} | "
                    f"{int((ddev > 0).sum())} / {int((ddev < 0).sum())} | {100 * dtest.mean():+.2f} |")
    if not rows:
        return []
    lines = ["", "## Configured variants against complex-order on dev accuracy", "",
             "Paired units (same fold or seed) of each \"complex-order, …\" row and complex-order itself. "
             "Dev accuracy is the selection criterion (test accuracy is shown beside it, not used); changes in "
             "points.", "",
             "| data set | model | variant | units | dev, complex-order | dev, variant | dev change | units up / down | test change |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"] + rows + [""]
    for v, diffs in sorted(pooled.items()):
        alld = np.round(np.concatenate(diffs), 12)  # as in paired_wilcoxon: exact-arithmetic ties stay ties
        p = 1.0 if np.all(alld == 0) else float(wilcoxon(alld, alternative="greater", zero_method="wilcox",
                                                         method="auto").pvalue)
        cells_up = sum(float(x.mean()) > 0 for x in diffs)
        lines.append(f"- {v}: dev accuracy higher in {cells_up} of {len(diffs)} cells and {int((alld > 0).sum())} of "
                     f"{alld.size} units (lower in {int((alld < 0).sum())}); one-sided Wilcoxon over the units "
                     f"p = {p:.2g}.")
    return lines


def render_table2(records: list[dict], datasets: list[str] | None = None, models: list[str] | None = None,
                  variants: list[str] | None = None, commands: list[str] | None = None) -> str:
    """Table 2's layout: a block per architecture, a row per embedding, ``ours marks (paper)`` per data set."""
    cells = cell_scores(records)
    paper = paper_table2()
    datasets = datasets or [d for d in PAPER_COLUMNS if any(k[0] == d for k in cells)]
    models = models or [m for m in MODEL_TITLES if any(k[1] == m for k in cells)]
    variants = variants or list(dict.fromkeys(["none", "pe", "tpe", "complex-vanilla", "complex-order"]
                                             + [k[2] for k in cells]))
    def kind(scores: dict) -> str:  # folds (CV) or seeds (fixed splits): each kind has its own fullest cell
        return "fold" if any(s.startswith("fold-") for s in scores) else "seed"

    full_n: dict[str, int] = {}
    scores: dict[str, float] | None  # each cell's, then the one of the row (None: no results)
    for scores in cells.values():
        full_n[kind(scores)] = max(full_n.get(kind(scores), 0), len(scores))
    lines = ["| model | embedding | " + " | ".join(datasets) + " |", "|---|---|" + "---:|" * len(datasets)]
    detail = ["| data set | model | embedding | n | mean | std | min | max | p vs none | p vs pe | p vs tpe | p vs complex-vanilla |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model in models:
        for variant in variants:
            if not any((d, model, variant) in cells for d in datasets):
                continue
            row = [MODEL_TITLES.get(model, model), variant]
            for d in datasets:
                scores = cells.get((d, model, variant))
                ref = paper.get((model, variant), {}).get(d)
                ref_text = f" ({ref:.3f})" if ref is not None else ""
                if not scores:
                    row.append("—" + ref_text)
                    continue
                target = is_complex_order_row(variant)
                marks = significance_marks(cells, d, model, variant)[0] if target else ""
                n_text = f" [n={len(scores)}]" if len(scores) < full_n[kind(scores)] else ""
                row.append(f"{np.mean(list(scores.values())):.3f}{marks}{n_text}{ref_text}")
                values = np.array(list(scores.values()))
                pv = significance_marks(cells, d, model, variant)[1] if target else {}
                ptext = [("—" if b not in pv or pv[b][0] is None else f"{pv[b][0]:.3g} (n={pv[b][1]})")
                         for b in MARKS]
                detail.append(f"| {d} | {model} | {variant} | {len(values)} | {values.mean():.4f} | "
                              f"{f'{values.std(ddof=1):.4f}' if len(values) > 1 else '—'} | {values.min():.4f} | "
                              f"{values.max():.4f} | " + " | ".join(ptext) + " |")
            lines.append("| " + " | ".join(row) + " |")
    out = ["# Table 2: text-classification accuracy", "",
           "Each cell: our mean test accuracy over folds (CV) or seeds (fixed splits), the significance marks of "
           "complex-order and of its configured variants (rows \"complex-order, …\") (one-sided Wilcoxon signed-rank, p < 0.05, over § none, † PE, ‡ TPE, * complex-vanilla), "
           "and the paper's figure in brackets. [n=k]: a cell measured on fewer folds (seeds) than the fullest "
           "cross-validated (fixed-split) cell of the table. — = not measured.", ""]
    out += lines
    mixed = mixed_settings(records)
    if mixed:
        out += ["", "**Cells mixing settings.** These cells average (and pair) units trained with different settings "
                    "under one label — e.g. a unit re-run with other epochs into the same results file; their means "
                    "and marks mix the two (setting hashes without split and seed in brackets):", ""]
        out += [f"- {line}" for line in mixed]
    hidden = superseded_section(records)
    out += ["", *hidden] if hidden else []
    out += ["", "## Targets", ""] + _targets(cells, paper, datasets, models)
    out += ["", "## Per cell: scores and p-values", ""] + detail
    out += _majority_section(records)
    out += _test_curve_section(records)
    out += _variant_dev_section(records)
    out += _vectors_section(records)
    if commands:
        out += ["", "## Commands", "", "```"] + commands + ["```"]
    return "\n".join(out) + "\n"


def _targets(cells, paper, datasets, models) -> list[str]:
    lines = []
    targets = sorted({k[2] for k in cells if is_complex_order_row(k[2])}, key=lambda v: (v != "complex-order", v))
    for model in models:
        for d, variant in ((d, v) for d in datasets for v in targets):
            ours = cells.get((d, model, variant))
            if not ours:
                continue
            mean = float(np.mean(list(ours.values())))
            # each baseline is compared on the folds/seeds both were measured on (paired, as the test)
            paired = {b: sorted(set(ours) & set(cells[(d, model, b)])) for b in MARKS if (d, model, b) in cells}
            others = {b: float(np.mean([cells[(d, model, b)][k] for k in common])) for b, common in paired.items()
                      if common}
            marks, pv = significance_marks(cells, d, model, variant)
            beaten = [b for b, m in others.items()
                      if np.mean([ours[k] for k in paired[b]]) >= m]
            sig = [b for b in others if MARKS[b] in marks]
            ref = paper.get((model, "complex-order"), {}).get(d)
            if model == "transformer":
                vs_paper = f"paper complex-order {ref:.3f}: {'at or above' if mean >= ref else f'{(ref - mean) * 100:.1f} points below'}"
            else:
                gap = (ref - mean) * 100
                vs_paper = f"paper complex-order {ref:.3f}: {'within' if gap <= 1.5 else 'NOT within'} 1.5 points ({abs(gap):.1f} points {'below' if gap > 0 else 'above'} it)"
            n = len(ours)
            if not others:  # "0/0 baselines" would claim what was never measured
                lines.append(f"- {MODEL_TITLES[model]} on {d} (n = {n}): {variant} {mean:.3f}; no baseline measured "
                             f"on the same folds / seeds; {vs_paper}.")
                continue
            above = sorted(set(others) - set(beaten))  # baselines whose mean is above complex-order's
            lines.append(f"- {MODEL_TITLES[model]} on {d} (n = {n}): {variant} {mean:.3f} ≥ {len(beaten)}/{len(others)} "
                         f"baselines ({', '.join(above) + ' above it' if above else 'at or above all'}); significant "
                         f"over {len(sig)}/{len(others)}; {vs_paper}.")
    return lines or ["- no complex-order cell measured yet"]


def plot_epoch_times(records: list[dict], path: str | Path, dataset: str | None = None) -> dict:
    """Fig. 2: mean training seconds per epoch per model x embedding, one panel per data set (PNG, or PDF/SVG by the suffix).

    Returns ``{dataset: {(model, variant): mean seconds}}`` for the plotted data sets.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    check_records(records, require=FIGURE_FIELDS)
    times: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in latest_records(records):
        if dataset is None or r["dataset"] == dataset:
            times[r["dataset"]][(r["model"], r["variant"])].append(float(r["seconds_per_epoch"]))
    if not times:
        present = sorted({r["dataset"] for r in records})
        raise ValueError(f"no results{'' if dataset is None else f' for data set {dataset!r}'} to plot"
                         + (f"; the results hold {', '.join(present)}" if present and dataset is not None else ""))
    datasets = [d for d in PAPER_COLUMNS if d in times]
    # a Figure of its own, not pyplot's: matplotlib.use("Agg") replaced a notebook's inline backend
    fig = Figure(figsize=(3.2 * len(datasets) + 1.5, 3.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(datasets), squeeze=False)
    means: dict[str, dict[tuple[str, str], float]] = {}
    variants_all = ["none", "pe", "tpe", "complex-vanilla", "complex-order"]
    colours = dict(zip(variants_all, matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, d in zip(axes[0], datasets):
        means[d] = {k: float(np.mean(v)) for k, v in times[d].items()}
        models = [m for m in MODEL_TITLES if any(k[0] == m for k in means[d])]
        variants = [v for v in variants_all if any(k[1] == v for k in means[d])]
        width = 0.8 / max(1, len(variants))
        for i, v in enumerate(variants):
            xs = [j + i * width for j in range(len(models))]
            ax.bar(xs, [means[d].get((m, v), 0.0) for m in models], width, label=v, color=colours[v])
        ax.set_xticks([j + width * (len(variants) - 1) / 2 for j in range(len(models))])
        ax.set_xticklabels([MODEL_TITLES[m] for m in models], fontsize=8)
        ax.set_title(d, fontsize=10)
    axes[0][0].set_ylabel("seconds per training epoch")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=7)
    fig.suptitle(f"Training time per epoch ({run_conditions(records)})", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.88, 0.95))
    buffer = io.BytesIO()
    fig.savefig(buffer, format=_image_format(path), dpi=110)
    atomic_write_bytes(path, buffer.getvalue())
    return means


def run_conditions(records: list[dict]) -> str:
    """Where the units ran, from the records: devices, torch threads, CPU models (records written before a
    field existed count as the CPU, or as "threads not recorded")."""
    units = latest_records(records)
    devices = sorted({str(r.get("device", "cpu")) for r in units})
    threads = sorted({r["torch_threads"] for r in units if isinstance(r.get("torch_threads"), int)})
    cpus = sorted({r["cpu"]["model"] for r in units if isinstance(r.get("cpu"), dict) and r["cpu"].get("model")})
    parts = [" / ".join(devices),
             ("threads not recorded" if not threads else
              f"{threads[0]} torch thread{'s' if threads[0] > 1 else ''}" if len(threads) == 1 else
              f"{threads[0]}-{threads[-1]} torch threads")]
    if cpus:
        parts.append(cpus[0] if len(cpus) == 1 else f"{len(cpus)} CPU models")
    return ", ".join(parts)


IMAGE_FORMATS = ("png", "pdf", "svg")


def _image_format(path: str | Path) -> str:
    """The figure's format from its suffix (PNG when there is none); a one-line error for others."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix and suffix not in IMAGE_FORMATS:
        raise ValueError(f"--figure {path}: unsupported image format '.{suffix}'; use one of "
                         f"{', '.join('.' + f for f in IMAGE_FORMATS)}")
    return suffix or "png"


def read_notes(path: str | Path | None, option: str = "--notes") -> str:
    """The hand-written Markdown appended to a rendered table ('' for none), read before anything is rendered."""
    if path is None:
        return ""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{option}: {path} does not exist (expected a Markdown file to append)") from None
    except IsADirectoryError:
        raise ValueError(f"{option}: {path} is a directory (expected a Markdown file to append)") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{option}: {path} is not UTF-8 text (byte {e.start}); expected a Markdown file") from None
    return text if text.endswith("\n") or not text else text + "\n"


def write_report(results: list[str], out: str | Path, figure: str | Path | None = None,
                 figure_dataset: str | None = None, notes: str | Path | None = None, warn=print) -> str:
    """Render ``results`` as Table 2 into ``out`` (and Fig. 2 into ``figure``), then append the Markdown file
    ``notes`` verbatim after a blank line.

    Args:
        results: a list of JSON-lines results files (``complexorder classify``); a single path is a one-line
            ``TypeError`` (wrap it in a list).
        out: the Markdown file to write; one of the files read (a results file, ``notes``) is refused.
        figure: where Fig. 2 (seconds per epoch) goes (``.png``, ``.pdf`` or ``.svg``); None: no figure.
        figure_dataset: plot this data set only (default: every data set the results hold).
        notes: a Markdown file appended verbatim after the table (None: nothing).
        warn: takes each line reporting a skipped malformed line of a results file (default ``print``;
            ``lambda *_: None`` silences them).

    Returns:
        The text written to ``out``.
    """
    results = results_list(results)
    if figure:
        _image_format(figure)
    notes_text = read_notes(notes)
    records = load_results(results, warn=warn, require=FIGURE_FIELDS if figure else None)
    if not records:
        raise ValueError(f"no results in {', '.join(map(str, results))}")
    reads: dict[str, str | Path] = {f"a results file it renders ({r})": r for r in results}
    if notes:
        reads["the notes file it appends (--notes)"] = notes
    check_writable(out, "--out", inputs=reads)  # creates nothing: the directory is made when the table is written
    if figure:
        check_writable(figure, "--figure", inputs=reads)
    commands = list(dict.fromkeys(r["command"] for r in records if r.get("command")))
    text = render_table2(records, commands=commands)
    if figure:
        plotted = plot_epoch_times(records, figure, figure_dataset)
        rows = ["", "## Fig. 2: seconds per training epoch", "", f"![seconds per epoch]({Path(figure).name})", "",
                "| data set | model | embedding | s/epoch | complex-order / TPE |", "|---|---|---|---:|---:|"]
        for d, means in plotted.items():
            for (model, variant), t in sorted(means.items()):
                tpe = means.get((model, "tpe"))
                ratio = f"{t / tpe:.2f}" if variant == "complex-order" and tpe else ""
                rows.append(f"| {d} | {model} | {variant} | {t:.1f} | {ratio} |")
        rows += ["", f"Seconds per epoch are training time (no evaluation) measured inside the grid runs "
                     f"({run_conditions(records)}), possibly beside other jobs: compare ratios within a data set "
                     f"with care (benchmarks/results/speed.md measures them side by side)."]
        text += "\n".join(rows) + "\n"
    if notes_text:
        text += "\n" + notes_text
    atomic_write_text(out, text)
    return text
