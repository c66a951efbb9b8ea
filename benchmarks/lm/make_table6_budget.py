"""Write benchmarks/results/table6_budget.md: Table 6's vanilla and complex-order at 12,000 steps (stop 76).

The rule, fixed before the runs: ``benchmarks/lm/table6_budget_rule.md``. Every number comes from JSON lines: the
runs' own ``results.jsonl`` and ``RUNS/eval_train_lengths.jsonl`` (``lm eval`` at the training lengths, 64/64),
collected as ``make_table6_seeds.py`` collects them, and kept in a committed records file (``--records``) so the
table re-renders without the run directories. The 6,000-step figures of the same seeds come from the committed
``table6_seeds.jsonl``.

Usage (from the repository root): ``python benchmarks/lm/make_table6_budget.py [--runs runs/stop76/lm]``;
``--check`` writes nothing and exits 1 if the committed files differ from what it would write.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_table6_seeds import collect, load_records, records_text, write_atomically  # noqa: E402

STEPS = 12_000
SEEDS = (3, 4, 5)  # the rule's seeds
ROWS = ("vanilla", "complex-order")  # complex-order: segment positions, frequencies from 0 (Table 6's setting)


def one_sided(diffs: list[float]) -> tuple[str, str]:
    """One-sided Wilcoxon p of "below 0" and of "above 0" (exact; zero differences dropped, as every table here)."""
    nonzero = [d for d in (round(x, 12) for x in diffs) if d != 0]
    if not nonzero:
        return "—", "—"
    return tuple(f"{wilcoxon(nonzero, alternative=a).pvalue:.3g}" for a in ("less", "greater"))


def render(records: dict, base: dict, records_path: Path, runs: str) -> str:
    seeds = [s for s in SEEDS if all((row, s) in records for row in ROWS)]
    missing = [s for s in SEEDS if s not in seeds]
    lines = [
        "# Table 6 at twice the budget: vanilla and complex-order, 12,000 steps, seeds 3–5 (stop 76)", "",
        "Config `proxy_cpu` (4 layers, d_model 128, 16 × 64 characters a step) with `train.max_steps=12000` (the "
        "cosine schedule spans the 12,000 steps); complex-order as in Table 6: positions restarting in every segment, "
        "frequencies starting at 0. Test and valid BPC of each run's `best.pt` at the training lengths (64/64), on the "
        "proxy corpus (4,819,465 characters). Two trainings at a time, one thread each, on a 2-core AMD EPYC. The rule "
        "and everything reported were fixed before any run: `benchmarks/lm/table6_budget_rule.md`.", "",
        "| seed | vanilla valid | vanilla **test** | complex-order valid | complex-order **test** | "
        "complex-order − vanilla (test), 12,000 steps | the same at 6,000 steps (`table6_seeds.md`) | "
        "training time (vanilla / complex-order) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    diffs, diffs_6k = [], []
    for s in seeds:
        v, c = records[("vanilla", s)], records[("complex-order", s)]
        d = c["test_bpc"] - v["test_bpc"]
        d6 = base[("complex-order", s)]["test_bpc"] - base[("vanilla", s)]["test_bpc"]
        diffs.append(d)
        diffs_6k.append(d6)
        lines.append(f"| {s} | {v['valid_bpc']:.3f} | **{v['test_bpc']:.3f}** | {c['valid_bpc']:.3f} | "
                     f"**{c['test_bpc']:.3f}** | {d:+.3f} | {d6:+.3f} | {v['train_minutes']:.1f} / "
                     f"{c['train_minutes']:.1f} min |")
    lines.append("")
    if seeds:
        below, above = one_sided(diffs)
        mean = statistics.fmean(diffs)
        n_below = sum(d < 0 for d in diffs)
        lines += [
            f"- Over seeds {', '.join(map(str, seeds))}: complex-order − vanilla = **{mean:+.4f}** test BPC (mean), "
            f"below vanilla on {n_below} of {len(seeds)}; at 6,000 steps on the same seeds "
            f"{statistics.fmean(diffs_6k):+.4f}. One-sided Wilcoxon p (below / above): {below} / {above} (with "
            f"{len(seeds)} pairs neither can be below {0.5 ** len(seeds):.3g}: a measurement of the gap, not a test).",
            "- Vanilla: " + ", ".join(f"{records[('vanilla', s)]['test_bpc']:.3f}" for s in seeds)
            + f" (mean {statistics.fmean(records[('vanilla', s)]['test_bpc'] for s in seeds):.3f}); complex-order: "
            + ", ".join(f"{records[('complex-order', s)]['test_bpc']:.3f}" for s in seeds)
            + f" (mean {statistics.fmean(records[('complex-order', s)]['test_bpc'] for s in seeds):.3f}).",
            "- Twice the budget lowers vanilla by "
            + f"{statistics.fmean(base[('vanilla', s)]['test_bpc'] - records[('vanilla', s)]['test_bpc'] for s in seeds):.3f}"
            + " and complex-order by "
            + f"{statistics.fmean(base[('complex-order', s)]['test_bpc'] - records[('complex-order', s)]['test_bpc'] for s in seeds):.3f}"
            + " test BPC on these seeds (mean); the gap "
            + ("narrows" if abs(mean) < abs(statistics.fmean(diffs_6k)) else "does not narrow")
            + f" ({statistics.fmean(diffs_6k):+.4f} at 6,000 steps, {mean:+.4f} at 12,000).",
            "- Beside it, not pooled (another session): stop 54's seed-2 screen at 12,000 steps, vanilla 1.896 and "
            "complex-order 1.897 (+0.001; `table6_seeds.md`, \"Twice the budget, one seed\").",
            "- **Verdict by the rule** (complex-order below vanilla on all three seeds): "
            + ("**reached at 12,000 steps**." if len(seeds) == len(SEEDS) and n_below == len(SEEDS) else
               "**not reached at 12,000 steps**" + (" (seeds unfinished at the rule's time cap: "
                                                     f"{', '.join(map(str, missing))})." if missing else ".")),
        ]
    if missing:
        lines.append(f"- Unfinished by the rule's cap (00:30 UTC): seed(s) {', '.join(map(str, missing))}; not "
                     "extrapolated.")
    lines += commands_section(
        "Run from the repository root; `runs/stop76/lm/lm.sh` (not committed) ran these, lanes A (vanilla 3, "
        "complex-order 4, vanilla 5) and B (complex-order 3, vanilla 4, complex-order 5) at once:", [
            f"complexorder lm build-corpus --source-dir ../shared/data --out {runs}/corpus",
            f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {runs}/corpus --out "
            f"{runs}/E-12k-sS --embedding E --set train.seed=S --set train.max_steps={STEPS} --no-progress   # "
            "complex-order: also --set model.frequency_init=zeros",
            eval_command(f"{runs}/E-12k-sS/best.pt", f"{runs}/corpus", runs),
            f"python benchmarks/lm/make_table6_budget.py --runs {runs}"], records_path)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = screen_parser(__doc__, "budget", 76)
    ap.add_argument("--base", default="benchmarks/results/table6_seeds.jsonl", help="the 6,000-step records")
    args = ap.parse_args(argv)
    records_path = Path(args.records)
    records = load_records(records_path)
    add_runs(records, args.runs, STEPS, ROWS)
    base = load_records(Path(args.base))
    return check_or_write(render(records, base, records_path, "runs/stop76/lm"), records, records_path,
                          Path(args.out), args.check)


def add_runs(records: dict, runs: str | None, steps: int, labels, seeds=None) -> None:
    """Add the finished runs under ``runs`` (when given) to ``records``; a run outside the table's rule (another
    budget, row or seed) stops the script naming it."""
    if not runs:
        return
    found = collect(Path(runs))
    wrong = [k for k, r in found.items() if r["config"]["train"]["max_steps"] != steps or k[0] not in labels
             or (seeds is not None and k[1] not in seeds)]
    if wrong:
        raise SystemExit(f"{runs}: runs outside this table's rule: {wrong}")
    records.update(found)


def screen_parser(doc: str, name: str, stop: int) -> argparse.ArgumentParser:
    """The options every Table 6 screen script takes: ``--runs``, ``--records``, ``--out`` (defaults
    ``benchmarks/results/table6_NAME.jsonl`` / ``.md``) and ``--check``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--runs", help=f"run directory of the stop-{stop} runs (default: render from --records alone)")
    ap.add_argument("--records", default=f"benchmarks/results/table6_{name}.jsonl")
    ap.add_argument("--out", default=f"benchmarks/results/table6_{name}.md")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out or --records would change")
    return ap


def eval_command(checkpoint: str, corpus: str, runs: str) -> str:
    """The ``lm eval`` command of every screen: the training lengths (64/64), records appended to RUNS."""
    return (f"OMP_NUM_THREADS=1 complexorder lm eval --checkpoint {checkpoint} --corpus {corpus} --no-progress "
            f"--tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length --results {runs}/eval_train_lengths.jsonl")


def commands_section(intro: str, commands: list[str], records_path: Path) -> list[str]:
    """A screen's closing "## Commands" lines: ``intro``, the ``commands`` in a code block, the records file."""
    return ["", "## Commands", "", intro, "", "```", *commands, "```", "",
            f"Records (one line per run, from which this file re-renders): `{records_path.as_posix()}`.", ""]


def check_or_write(text: str, records: dict, records_path: Path, out: Path, check: bool) -> int:
    """``--check``: 0 if the committed table and records are what would be written, else 1; otherwise write both."""
    if check:
        same = out.read_text(encoding="utf-8") == text and (
            records_path.read_text(encoding="utf-8") == records_text(records))
        return 0 if same else 1
    write_atomically(records_path, records_text(records))
    write_atomically(out, text)
    print(f"wrote {out} and {records_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
