"""Write benchmarks/results/table6_seeds.md from the runs of benchmarks/lm/run_table6_seeds.sh.

Every number comes from the JSON lines the runs wrote: each run's results.jsonl (training) and the
evaluations in RUNS/eval_train_lengths.jsonl (training lengths, 64/64). ``--also DIR`` adds the runs of
another directory laid out the same way. The per-run summaries are also kept in a committed JSON-lines
file (``--records``, default benchmarks/results/table6_seeds.jsonl): runs found on disk replace their
record there, records of runs no longer on disk are kept, so the table can be extended in a later
session (run directories are not committed) and re-rendered from the committed file alone.

A run is labelled by its embedding, plus "complex network" (``model.network = "complex"``: complex
hidden states through the whole network, as the authors' Transformer-XL code), "word positions"
(``model.position_mode = "word"``), "initial phases" (``model.initial_phase = true``), a frequency start other than
zeros and the frequency learning-rate scale when it is not 1. Each variant is compared with vanilla on the seeds both ran (paired
differences, one-sided Wilcoxon signed-rank test of "below vanilla"); an ablation also with its base
variant.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from scipy.stats import wilcoxon

from make_table6 import VARIANTS, read_jsonl  # this directory is on sys.path when run as a script


def label_of(embedding: str, config: dict) -> str:
    """The embedding, plus what differs from the Table 6 setting: complex network, frequency lr scale."""
    parts = [{"pe": "vanilla + learned positions", "tpe": "vanilla + sinusoids"}.get(embedding, embedding)]
    if config["model"].get("network", "real") == "complex":
        score = config["model"].get("attention_score", "modulus")
        parts.append("complex network" + ("" if score == "modulus" else f" ({score} score)"))
    if embedding in ("complex-order", "pe", "tpe") and config["model"].get("position_mode") == "word":
        parts.append("word positions")
    if embedding == "complex-order" and config["model"].get("initial_phase"):  # stop 81; before the start, which
        parts.append("initial phases")  # render() reads as the last part of a label
    start = config["model"].get("frequency_init", "sinusoidal")
    if embedding == "complex-order" and start != "zeros":  # Table 6's complex-order rows start at 0
        parts.append(f"{start} frequency start")
    if config["model"].get("position_scale") is not None:  # "tpe" with a scale other than the default
        parts.append(f"position scale {config['model']['position_scale']:g}")
    scale = config["train"].get("frequency_lr_scale", 1.0)
    if scale != 1.0:
        parts.append(f"frequency lr x{scale:g}")
    return ", ".join(parts)


def portable(path: Path) -> str:
    """``path`` relative to the current directory when it lies inside it (runs named by an absolute path, from
    a worktree, say), so that the committed records name no machine's folders."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def collect(runs: Path) -> dict[tuple[str, int], dict]:
    """(label, seed) -> the run's last evaluation and training summary."""
    out = {}
    for ev in read_jsonl(runs / "eval_train_lengths.jsonl"):
        run = Path(ev["checkpoint"]).parent
        train = read_jsonl(run / "results.jsonl")
        valid = [r for r in train if r.get("event") == "valid"]
        steps = [r for r in train if r.get("event") == "train"]
        last, planned = max((r["step"] for r in train if "step" in r), default=0), ev["config"]["train"]["max_steps"]
        if last < planned:  # a crashed run still has a best.pt: never render it as a finished one
            raise SystemExit(f"{run}: training stopped at step {last:,} of {planned:,}; finish it (resume) first")
        label, seed = label_of(ev["embedding"], ev["config"]), ev["config"]["train"]["seed"]
        out[(label, seed)] = {
            "label": label, "seed": seed, "embedding": ev["embedding"],
            "run": portable(run), "valid_bpc": ev["valid_bpc"], "test_bpc": ev["test_bpc"], "parameters": ev["parameters"],
            "step": ev["step"], "config": ev["config"], "eval": ev["eval"],
            "train_minutes": valid[-1]["train_seconds"] / 60 if valid else None,
            "chars_per_second": sum(r["chars_per_second"] for r in steps) / len(steps) if steps else None,
        }
    return out


def load_records(path: Path) -> dict[tuple[str, int], dict]:
    return {(r["label"], r["seed"]): r for r in read_jsonl(path)}


def records_text(records: dict[tuple[str, int], dict]) -> str:
    return "".join(json.dumps(records[k], sort_keys=True) + "\n" for k in sorted(records))


def write_atomically(path: Path, text: str) -> None:
    """A temporary file in the same directory, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def save_records(path: Path, records: dict[tuple[str, int], dict]) -> None:
    write_atomically(path, records_text(records))


def pair_rows(records: dict, seeds: list[int], base: str, row: str, heading: str) -> tuple[list[str], list[float]]:
    """The per-seed table of a two-row screen (``base`` against ``row``, which the header calls ``heading``: valid
    and test BPC, the test difference, both training times), its header and a closing blank line included, and the
    test differences ``row - base``."""
    lines = [f"| seed | vanilla valid | vanilla **test** | {heading} valid | … **test** | difference (test) | "
             "training time (vanilla / complex-order) |", "|---:|---:|---:|---:|---:|---:|---:|"]
    diffs = []
    for s in seeds:
        v, c = records[(base, s)], records[(row, s)]
        diffs.append(c["test_bpc"] - v["test_bpc"])
        lines.append(f"| {s} | {v['valid_bpc']:.3f} | **{v['test_bpc']:.3f}** | {c['valid_bpc']:.3f} | "
                     f"**{c['test_bpc']:.3f}** | {diffs[-1]:+.3f} | {v['train_minutes']:.1f} / "
                     f"{c['train_minutes']:.1f} min |")
    return lines + [""], diffs


def mean_std(xs: list[float]) -> str:
    if not xs:
        return "—"
    return f"{statistics.mean(xs):.3f}" + (f" ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else "")


def paired(results: dict, label: str, base: str) -> tuple[str, str, str, str]:
    """Per-seed differences label − base, their mean, and the one-sided Wilcoxon p of "below" and of "above"."""
    seeds = sorted(s for (v, s) in results if v == label and (base, s) in results)
    if not seeds:
        return "—", "—", "—", "—"
    diffs = [results[(label, s)]["test_bpc"] - results[(base, s)]["test_bpc"] for s in seeds]
    text = ", ".join(f"{d:+.3f} ({s})" for s, d in zip(seeds, diffs))
    testable = len(diffs) >= 2 and any(diffs)
    ps = [f"{wilcoxon(diffs, alternative=side).pvalue:.3g}" if testable else "—" for side in ("less", "greater")]
    return text, f"{statistics.mean(diffs):+.3f}", *ps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", default="runs/lm/seeds")
    ap.add_argument("--also", action="append", default=[], help="another run directory laid out the same way")
    ap.add_argument("--records", default="benchmarks/results/table6_seeds.jsonl",
                    help="committed per-run summaries: read, updated from the runs on disk, written back")
    ap.add_argument("--out", default="benchmarks/results/table6_seeds.md")
    ap.add_argument("--notes", default=None, help="hand-written section appended to the table (Markdown file)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if --out or --records differ from what this command would write")
    args = ap.parse_args(argv)
    records_path = Path(args.records)
    results = load_records(records_path)
    for d in [args.runs, *args.also]:
        results.update(collect(Path(d)))
    if not results:
        raise SystemExit(f"no evaluations in {args.runs}/eval_train_lengths.jsonl nor records in {records_path}: "
                         "run benchmarks/lm/run_table6_seeds.sh")
    if not args.check:
        save_records(records_path, results)
    seeds = sorted({s for _, s in results})
    labels = [v for v in VARIANTS if any(k[0] == v for k in results)]
    labels += sorted({v for v, _ in results} - set(VARIANTS))
    cfg = results[("vanilla", seeds[0])]["config"] if ("vanilla", seeds[0]) in results else next(iter(results.values()))["config"]
    m, t = cfg["model"], cfg["train"]
    lines = ["# Table 6 across seeds — character-level LM on the proxy corpus, CPU", "",
             f"The three Transformer-XL variants of `table6.md` (config `proxy_cpu`: {m['n_layer']} layers, d_model "
             f"{m['d_model']}, {t['max_steps']:,} steps of {t['batch_size']} x {t['tgt_len']} characters; complex-order "
             "with positions restarting in every segment and frequencies starting at 0, as chosen on validation for "
             "Table 6), trained with other seeds. Labels name what differs from that setting, everything else "
             "equal: \"complex network\" keeps the hidden states complex through every layer (`--set "
             "model.network=complex`: d_model = 128 complex dimensions, one real weight set applied to both "
             "parts, attention score |AC| + |BD|, modulus read-out; the authors' Transformer-XL design) instead "
             "of feeding [Re, Im] to the real network; \"frequency lr x0.1\" scales the frequencies' learning "
             "rate by 0.1 (`--set train.frequency_lr_scale=0.1`); \"word positions\" embeds each character at its offset in "
             "its word, the space at 0 (`--set model.position_mode=word`, an extension), instead of restarting "
             "positions in every segment; \"vanilla + learned positions\" adds to vanilla's word vector a learned vector "
             "per position (`--embedding pe`, 64 positions, 8,192 parameters more), the control for those positions; "
             "\"vanilla + sinusoids\" adds instead the fixed sinusoids of paper Eq. 7 at those positions, scaled so that "
             "each has the RMS of the table's initial standard deviation, 0.02 (`--embedding tpe`, no parameters more), "
             "the control without parameters; \"sinusoidal frequency start\" starts complex-order's frequencies at the "
             "sinusoids of paper Eq. 7 (`--set model.frequency_init=sinusoidal`) instead of 0. Each row: the weights with the best validation BPC during training, evaluated on the full valid "
             "and test splits with the training lengths (segments of 64, memory 64). One thread per training, two "
             "trainings at a time on a 2-core CPU. The per-run summaries behind this table are in "
             f"`{records_path.as_posix()}`.", "",
             "| variant | seed | parameters | best step | valid BPC | **test BPC** | training time | chars/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in labels:
        for s in seeds:
            r = results.get((v, s))
            if r is None:
                continue
            minutes = "—" if r["train_minutes"] is None else f"{r['train_minutes']:.1f} min"
            cps = "—" if r["chars_per_second"] is None else f"{r['chars_per_second']:,.0f}"
            lines.append(f"| {v} | {s} | {r['parameters']:,} | {r['step']:,} | {r['valid_bpc']:.3f} | **{r['test_bpc']:.3f}** | "
                         f"{minutes} | {cps} |")
    lines += ["", "## Over seeds", "",
              "Mean ± sample standard deviation of test BPC over the seeds each variant was run on; the paired "
              "difference to a reference on each seed both ran (negative: below it, the paper's direction for "
              "complex-order against vanilla) and the one-sided Wilcoxon signed-rank p of \"below\" and of "
              "\"above\" (scipy, exact; with n pairs neither can be smaller than 1/2^n: 0.0625 for 4 pairs).", "",
              "| variant | seeds | test BPC | valid BPC | reference | test BPC − reference, per seed | mean difference "
              "| p (below) | p (above) |",
              "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for v in labels:
        mine = [s for s in seeds if (v, s) in results]
        tests = [results[(v, s)]["test_bpc"] for s in mine]
        valids = [results[(v, s)]["valid_bpc"] for s in mine]
        refs = [] if v == "vanilla" else ["vanilla"] + ([results[(v, mine[0])]["embedding"]] if v not in VARIANTS else [])
        if v.startswith("complex-order, complex network"):
            refs.append(v.replace("complex-order", "complex-vanilla", 1))
        if v.startswith("complex-order") and "word positions" in v:  # Table 6's third row, as the paper orders them
            refs.append("complex-vanilla")
        if v.startswith("vanilla + learned positions"):  # the control: same positions, real embedding
            refs[1:] = [v.replace("vanilla + learned positions", "complex-order", 1)]
        if v.startswith("vanilla + sinusoids"):  # the parameter-free control: same positions, fixed code
            refs[1:] = [v.replace("vanilla + sinusoids", "complex-order", 1),
                        v.replace("vanilla + sinusoids", "vanilla + learned positions", 1)]
        if v.startswith("complex-order") and v.endswith(" frequency start"):  # another start: its base row, controls
            base = v.rsplit(", ", 1)[0]
            refs = ["vanilla", base, "complex-vanilla"]
            if "word positions" in base:
                refs += [base.replace("complex-order", "vanilla + sinusoids", 1),
                         base.replace("complex-order", "vanilla + learned positions", 1)]
        if not refs:
            lines.append(f"| {v} | {', '.join(map(str, mine))} | {mean_std(tests)} | {mean_std(valids)} | — | — | — | — | — |")
        for i, ref in enumerate(refs):
            head = f"| {v} | {', '.join(map(str, mine))} | {mean_std(tests)} | {mean_std(valids)}" if i == 0 else "| | | | "
            lines.append(f"{head} | {ref} | " + " | ".join(paired(results, v, ref)) + " |")
    lines += ["", "## Commands", "", "```bash",
              f"benchmarks/lm/run_table6_seeds.sh ../shared/data {args.runs} 'SEEDS'",
              "# which runs, for each variant v and seed s:",
              f"OMP_NUM_THREADS=1 complexorder lm train --config proxy_cpu --corpus {args.runs}/corpus --out {args.runs}/v-ss "
              "--embedding v --set train.seed=s   # complex-order: also --set model.frequency_init=zeros",
              "#   complex network rows: also --set model.network=complex; frequency lr x0.1 rows: complex-order with "
              "also --set train.frequency_lr_scale=0.1; word positions rows: complex-order with also "
              "--set model.position_mode=word (vanilla + learned positions: --embedding pe with it; vanilla + sinusoids: "
              "--embedding tpe with it); sinusoidal frequency start rows: --set model.frequency_init=sinusoidal instead of zeros",
              f"OMP_NUM_THREADS=1 complexorder lm eval --checkpoint {args.runs}/v-ss/best.pt --corpus {args.runs}/corpus "
              f"--tgt-len 64 --mem-len 64 --clamp-len -1 --no-same-length --results {args.runs}/eval_train_lengths.jsonl",
              f"python benchmarks/lm/make_table6_seeds.py --runs {args.runs} --records {records_path.as_posix()} --out {args.out}"
              + (f" --notes {args.notes}" if args.notes else ""), "```", ""]
    if args.notes:
        lines += [Path(args.notes).read_text().rstrip(), ""]
    text = "\n".join(lines)
    if args.check:
        stale = [str(path) for path, want in ((Path(args.out), text), (records_path, records_text(results)))
                 if not path.is_file() or path.read_text() != want]
        print(f"{', '.join(stale)}: differ(s) from what this command writes" if stale
              else f"{args.out} and {records_path} agree with this command")
        return 1 if stale else 0
    write_atomically(Path(args.out), text)
    print(f"wrote {args.out} and {records_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
