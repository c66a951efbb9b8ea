"""Write benchmarks/results/table6_initial_phase.md: complex-order with initial phases against vanilla, seeds 11-13 (stop 81).

The rule, fixed before the runs: ``benchmarks/lm/table6_initial_phase_rule.md``. Every number comes from JSON lines:
the runs' own ``results.jsonl`` and ``RUNS/eval_train_lengths.jsonl`` (``lm eval`` at the training lengths, 64/64),
collected as ``make_table6_seeds.py`` collects them, and kept in a committed records file (``--records``) so the
table re-renders without the run directories.

Usage (from the repository root): ``python benchmarks/lm/make_table6_initial_phase.py [--runs runs/stop81/lm]``;
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
SEEDS = (11, 12, 13)  # the rule's seeds
VANILLA, ROW = "vanilla", "complex-order, initial phases"



def train_commands(runs: str) -> list[str]:
    """The corpus and the vanilla and complex-order-with-initial-phases trainings (the confirmation, stop 82,
    ran the same)."""
    return [
        f"complexorder lm build-corpus --source-dir ../shared/data --out {runs}/corpus",
        f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {runs}/corpus --out {runs}/vanilla-sS "
        "--embedding vanilla --set train.seed=S --no-progress",
        f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {runs}/corpus --out "
        f"{runs}/complex-order-theta-sS --embedding complex-order --set model.frequency_init=zeros --set "
        "model.initial_phase=true --set train.seed=S --no-progress"]

def render(records: dict, records_path: Path, runs: str) -> str:
    seeds = [s for s in SEEDS if (VANILLA, s) in records and (ROW, s) in records]
    missing = [s for s in SEEDS if s not in seeds]
    params = {label: records[(label, s)]["parameters"] for label, s in records}
    lines = [
        "# Table 6: complex-order with initial phases against vanilla, seeds 11–13 (stop 81; a screen, an extension)", "",
        "Config `proxy_cpu` (4 layers, d_model 128, 6,000 steps of 16 × 64 characters); complex-order as in Table 6 "
        "(positions restarting in every segment, frequencies starting at 0) plus the paper's initial phases θ "
        "(`model.initial_phase=true`, Eq. 5: `r e^{i(ωp + θ)}`, θ from U(−π, π); "
        f"{params.get(ROW, 0):,} parameters against vanilla's {params.get(VANILLA, 0):,}), against vanilla re-run on the "
        "same machine. Not the paper's Transformer-XL setting, which has no initial phases: Table 6 is unchanged. "
        "Test and valid BPC of each run's `best.pt` at the training lengths (64/64), on the proxy corpus (4,819,465 "
        "characters). Two trainings at a time, one thread each, on a 2-core AMD EPYC. The rule and everything reported "
        "were fixed before any run: `benchmarks/lm/table6_initial_phase_rule.md`.", "",
    ]
    rows, diffs = pair_rows(records, seeds, VANILLA, ROW, "complex-order, initial phases")
    lines += rows
    if seeds:
        n_below = sum(d < 0 for d in diffs)
        below, above = one_sided(diffs)
        lines.append(f"- Over seeds {', '.join(map(str, seeds))}: complex-order − vanilla = "
                     f"**{statistics.fmean(diffs):+.4f}** test BPC (mean), below vanilla on {n_below} of {len(seeds)} "
                     f"(one-sided Wilcoxon p below / above: {below} / {above}; with three seeds p cannot go under 0.125).")
        passed = len(seeds) == len(SEEDS) and n_below == len(SEEDS)
        lines.append("- **Verdict by the rule** (below vanilla on all three seeds): **"
                     + ("passed" if passed else "not passed") + "**"
                     + (f" (unfinished at the rule's time cap: seed(s) {', '.join(map(str, missing))})." if missing
                        else ".")
                     + (" A screen, not the Table 6 target: a confirmation on new seeds, with complex-vanilla beside it, "
                        "is for a later stop." if passed else ""))
    if missing:
        lines.append(f"- Unfinished by the rule's cap (14:05 UTC): seed(s) {', '.join(map(str, missing))}; not "
                     "extrapolated.")
    lines += commands_section(
        f"Run from the repository root; `{runs}/lane.sh` (not committed) ran these, lanes A (vanilla 11, "
        "complex-order 12, vanilla 13) and B (complex-order 11, vanilla 12, complex-order 13) at once:",
        train_commands(runs) + [
            eval_command(f"{runs}/RUN/best.pt", f"{runs}/corpus", runs),
            f"python benchmarks/lm/make_table6_initial_phase.py --runs {runs}"], records_path)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = screen_parser(__doc__, "initial_phase", 81)
    args = ap.parse_args(argv)
    records_path = Path(args.records)
    records = load_records(records_path) if records_path.exists() else {}
    add_runs(records, args.runs, STEPS, (VANILLA, ROW), SEEDS)
    return check_or_write(render(records, records_path, "runs/stop81/lm"), records, records_path, Path(args.out),
                          args.check)


if __name__ == "__main__":
    sys.exit(main())
