"""Write benchmarks/results/table6_seeds.md from the runs of benchmarks/lm/run_table6_seeds.sh.

Every number comes from the JSON lines the runs wrote: each run's results.jsonl (training) and the
evaluations in RUNS/eval_train_lengths.jsonl (training lengths, 64/64). ``--also DIR`` adds the runs of
another directory laid out the same way (e.g. Table 6's own seed-1111 runs, when they are on disk).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from make_table6 import VARIANTS, read_jsonl  # this directory is on sys.path when run as a script


def collect(runs: Path) -> dict[tuple[str, int], dict]:
    """(variant, seed) -> the run's last evaluation and training summary."""
    out = {}
    for ev in read_jsonl(runs / "eval_train_lengths.jsonl"):
        run = Path(ev["checkpoint"]).parent
        train = read_jsonl(run / "results.jsonl")
        valid = [r for r in train if r.get("event") == "valid"]
        steps = [r for r in train if r.get("event") == "train"]
        out[(ev["embedding"], ev["config"]["train"]["seed"])] = {
            "run": str(run), "valid_bpc": ev["valid_bpc"], "test_bpc": ev["test_bpc"], "parameters": ev["parameters"],
            "step": ev["step"], "config": ev["config"],
            "train_minutes": valid[-1]["train_seconds"] / 60 if valid else None,
            "chars_per_second": sum(r["chars_per_second"] for r in steps) / len(steps) if steps else None,
        }
    return out


def mean_std(xs: list[float]) -> str:
    if not xs:
        return "—"
    return f"{statistics.mean(xs):.3f}" + (f" ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", default="runs/lm/seeds")
    ap.add_argument("--also", action="append", default=[], help="another run directory laid out the same way")
    ap.add_argument("--out", default="benchmarks/results/table6_seeds.md")
    ap.add_argument("--notes", default=None, help="hand-written section appended to the table (Markdown file)")
    args = ap.parse_args()
    results: dict[tuple[str, int], dict] = {}
    for d in [args.runs, *args.also]:
        results.update(collect(Path(d)))
    if not results:
        raise SystemExit(f"no evaluations in {args.runs}/eval_train_lengths.jsonl: run benchmarks/lm/run_table6_seeds.sh")
    seeds = sorted({s for _, s in results})
    cfg = next(iter(results.values()))["config"]
    m, t = cfg["model"], cfg["train"]
    lines = ["# Table 6 across seeds — character-level LM on the proxy corpus, CPU", "",
             f"The three Transformer-XL variants of `table6.md` (config `proxy_cpu`: {m['n_layer']} layers, d_model "
             f"{m['d_model']}, {t['max_steps']:,} steps of {t['batch_size']} x {t['tgt_len']} characters; complex-order "
             "with positions restarting in every segment and frequencies starting at 0, as chosen on validation for "
             "Table 6), trained with other seeds. Each row: the weights with the best validation BPC during training, "
             "evaluated on the full valid and test splits with the training lengths (segments of 64, memory 64). "
             "One thread per training, two trainings at a time on a 2-core CPU.", "",
             "| variant | seed | parameters | best step | valid BPC | **test BPC** | training time | chars/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in VARIANTS:
        for s in seeds:
            r = results.get((v, s))
            if r is None:
                continue
            minutes = "—" if r["train_minutes"] is None else f"{r['train_minutes']:.1f} min"
            cps = "—" if r["chars_per_second"] is None else f"{r['chars_per_second']:,.0f}"
            lines.append(f"| {v} | {s} | {r['parameters']:,} | {r['step']:,} | {r['valid_bpc']:.3f} | **{r['test_bpc']:.3f}** | "
                         f"{minutes} | {cps} |")
    lines += ["", "## Over seeds", "",
              "Mean ± sample standard deviation of test BPC over the seeds each variant was run on, and the paired "
              "difference to vanilla on each seed (negative: below vanilla, the paper's direction).", "",
              "| variant | seeds | test BPC | valid BPC | test BPC − vanilla, per seed | mean difference |",
              "|---|---:|---:|---:|---|---:|"]
    for v in VARIANTS:
        mine = [s for s in seeds if (v, s) in results]
        if not mine:
            continue
        tests = [results[(v, s)]["test_bpc"] for s in mine]
        valids = [results[(v, s)]["valid_bpc"] for s in mine]
        if v == "vanilla":
            diff_text, mean_diff = "—", "—"
        else:
            diffs = {s: results[(v, s)]["test_bpc"] - results[("vanilla", s)]["test_bpc"] for s in mine
                     if ("vanilla", s) in results}
            diff_text = ", ".join(f"{d:+.3f} (seed {s})" for s, d in diffs.items()) or "—"
            mean_diff = f"{statistics.mean(diffs.values()):+.3f}" if diffs else "—"
        lines.append(f"| {v} | {', '.join(map(str, mine))} | {mean_std(tests)} | {mean_std(valids)} | {diff_text} | {mean_diff} |")
    lines += ["", "## Commands", "", "```bash",
              f"benchmarks/lm/run_table6_seeds.sh ../shared/data {args.runs} '{' '.join(map(str, seeds))}'",
              "# which runs, for each variant v and seed s:",
              f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {args.runs}/corpus --out {args.runs}/v-ss "
              "--embedding v --set train.seed=s   # complex-order: also --set model.frequency_init=zeros",
              f"OMP_NUM_THREADS=1 complexorder lm eval --checkpoint {args.runs}/v-ss/best.pt --corpus {args.runs}/corpus "
              f"--tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length --results {args.runs}/eval_train_lengths.jsonl",
              f"python benchmarks/lm/make_table6_seeds.py --runs {args.runs} --out {args.out}"
              + (f" --notes {args.notes}" if args.notes else ""), "```", ""]
    if args.notes:
        lines += [Path(args.notes).read_text().rstrip(), ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
