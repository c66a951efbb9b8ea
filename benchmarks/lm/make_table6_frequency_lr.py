"""Write benchmarks/results/table6_frequency_lr.md: complex-order with frequencies at 0.1 x lr, seeds 7-9 (stop 77).

The rule, fixed before the runs: ``benchmarks/lm/table6_frequency_lr_rule.md``. Every number comes from JSON lines:
the runs' own ``results.jsonl`` and ``RUNS/eval_train_lengths.jsonl`` (``lm eval`` at the training lengths, 64/64),
collected as ``make_table6_seeds.py`` collects them, and kept in a committed records file (``--records``) so the
table re-renders without the run directories. Seeds 2-6 of the same two rows (stop 28, other machines) come from the
committed ``table6_seeds.jsonl`` and are pooled only descriptively.

Usage (from the repository root): ``python benchmarks/lm/make_table6_frequency_lr.py [--runs runs/stop77/lm]``;
``--check`` writes nothing and exits 1 if the committed files differ from what it would write.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_table6_budget import (add_runs, check_or_write, commands_section, eval_command,  # noqa: E402
                                one_sided, screen_parser)
from make_table6_seeds import load_records, pair_rows  # noqa: E402

STEPS = 6_000
SEEDS = (7, 8, 9)  # the rule's seeds
EARLIER = (2, 3, 4, 5, 6)  # stop 28's seeds of the same rows
VANILLA, ROW = "vanilla", "complex-order, frequency lr x0.1"


def render(records: dict, base: dict, records_path: Path, runs: str) -> str:
    seeds = [s for s in SEEDS if (VANILLA, s) in records and (ROW, s) in records]
    missing = [s for s in SEEDS if s not in seeds]
    lines = [
        "# Table 6: complex-order with frequencies at 0.1 × the learning rate, seeds 7–9 (stop 77)", "",
        "Config `proxy_cpu` (4 layers, d_model 128, 6,000 steps of 16 × 64 characters); complex-order as in Table 6 "
        "(positions restarting in every segment, frequencies starting at 0) with the frequencies' learning rate scaled "
        "by 0.1 (`train.frequency_lr_scale=0.1`), against vanilla re-run on the same machine. Test and valid BPC of each "
        "run's `best.pt` at the training lengths (64/64), on the proxy corpus (4,819,465 characters). Two trainings at a "
        "time, one thread each, on a 2-core AMD EPYC without AVX-512. The rule and everything reported were fixed "
        "before any run: `benchmarks/lm/table6_frequency_lr_rule.md`.", "",
    ]
    rows, diffs = pair_rows(records, seeds, VANILLA, ROW, "complex-order, frequency lr ×0.1")
    lines += rows
    if seeds:
        n_below = sum(d < 0 for d in diffs)
        lines.append(f"- Over seeds {', '.join(map(str, seeds))}: complex-order − vanilla = "
                     f"**{statistics.fmean(diffs):+.4f}** test BPC (mean), below vanilla on {n_below} of {len(seeds)}.")
        earlier = [base[(ROW, s)]["test_bpc"] - base[(VANILLA, s)]["test_bpc"] for s in EARLIER]
        pooled = earlier + diffs
        below, above = one_sided(pooled)
        lines.append(
            f"- Pooled descriptively with stop 28's seeds 2–6 (other machines; `table6_seeds.md`: "
            + ", ".join(f"{d:+.3f}" for d in earlier)
            + f"): {len(pooled)} seeds, mean {statistics.fmean(pooled):+.4f}, below vanilla on "
            f"{sum(d < 0 for d in pooled)} of {len(pooled)}; one-sided Wilcoxon p (below / above): {below} / {above}. "
            "Not the verdict.")
        reached = len(seeds) == len(SEEDS) and n_below == len(SEEDS)
        lines.append("- **Verdict by the rule** (below vanilla on all three new seeds): "
                     + ("**reached**." if reached else "**not reached**"
                        + (f" (unfinished at the rule's time cap: seed(s) {', '.join(map(str, missing))})."
                           if missing else ".")))
    if missing:
        lines.append(f"- Unfinished by the rule's cap (03:25 UTC): seed(s) {', '.join(map(str, missing))}; not "
                     "extrapolated.")
    lines += commands_section(
        f"Run from the repository root; `{runs}/lm.sh` (not committed) ran these, lanes A (vanilla 7, complex-order "
        "8, vanilla 9) and B (complex-order 7, vanilla 8, complex-order 9) at once, on stop 76's corpus:", [
            "complexorder lm build-corpus --source-dir ../shared/data --out runs/stop76/lm/corpus",
            f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus runs/stop76/lm/corpus --out "
            f"{runs}/E-sS --embedding E --set train.seed=S --no-progress   # complex-order: also --set "
            "model.frequency_init=zeros --set train.frequency_lr_scale=0.1 (run folder complex-order-flr0.1-sS)",
            eval_command(f"{runs}/E-sS/best.pt", "runs/stop76/lm/corpus", runs),
            f"python benchmarks/lm/make_table6_frequency_lr.py --runs {runs}"], records_path)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = screen_parser(__doc__, "frequency_lr", 77)
    ap.add_argument("--base", default="benchmarks/results/table6_seeds.jsonl", help="stop 28's records (seeds 2-6)")
    args = ap.parse_args(argv)
    records_path = Path(args.records)
    records = load_records(records_path) if records_path.exists() else {}
    add_runs(records, args.runs, STEPS, (VANILLA, ROW), SEEDS)
    base = load_records(Path(args.base))
    return check_or_write(render(records, base, records_path, "runs/stop77/lm"), records, records_path,
                          Path(args.out), args.check)


if __name__ == "__main__":
    sys.exit(main())
