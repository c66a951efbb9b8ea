"""``complexorder ablate`` (paper Table 4) and ``complexorder inspect`` (appendix D: Fig. 1, Fig. 3, Table 7)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checkpoint import check_writable
from .classification_cli import add_grid_arguments, default_table_path, parse_ints, run_classify


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("ablate", help="run the Table 4 ablation (Transformer on SST-2) and write its table; resumable",
                       description="Runs every variant of the ablation config with the classification runner "
                                   "(finished units are skipped), then renders the table.")
    add_grid_arguments(a, "table4", datasets=("SST2", "SST2-sent"), models=("transformer",))
    a.add_argument("--out", help="Markdown table to write (default: beside the results file, named after it: "
                                 "X.jsonl gives X.md, and results.jsonl gives table4.md; so the committed "
                                 "benchmarks/results/table4.md is written only from table4.jsonl or when named)")
    a.add_argument("--report-only", action="store_true", help="only render the table from the results file")
    a.add_argument("--also-results", action="append", default=[], metavar="FILE",
                   help="render the records of this results file too (repeatable), e.g. "
                        "benchmarks/results/table4.jsonl beside an explore config's rows, so they pair by seed")
    a.add_argument("--notes", help="Markdown file appended verbatim after the rendered table (hand-written scope "
                                   "and reading), so that re-rendering reproduces the whole file")
    a.set_defaults(func=run_ablate)

    i = sub.add_parser("inspect", help="what a complex-order classifier learned: δ density, Table 7, word waves",
                       description="δ_j = mean_d |ω_j,d| per word: its density (Fig. 3), the 50 greatest and 50 "
                                   "smallest (Table 7), and a chosen word as waves over positions (Fig. 1).")
    i.add_argument("checkpoint", help="a classifier checkpoint (written by classify/ablate into the config's "
                                      "checkpoint_dir or --checkpoint-dir)")
    i.add_argument("--out-dir", "--out", dest="out_dir", help="where the PNGs and table7.md go (default: runs/inspect/CHECKPOINT-NAME)")
    i.add_argument("--word", help="word to draw as waves (Fig. 1)")
    i.add_argument("--dims", help="dimensions to draw, e.g. 0,5,9 (default: slowest, middle and fastest)")
    i.add_argument("--top", type=int, default=50, help="words per list (default 50)")
    i.set_defaults(func=run_inspect)


def run_ablate(args: argparse.Namespace) -> int:
    from .ablation import TABLE4_DATASETS, TABLE4_FIELDS, check_table4_records, table4_config_problem, write_table4
    from .report import load_results, print_superseded_note, read_notes
    from .classification_cli import load_grid

    grid = load_grid(args, "ablation")
    other = [(d, "--datasets" if args.datasets else f"--config {args.config}")
             for d in grid.datasets if d not in TABLE4_DATASETS]
    other += [(m, "--models" if args.models else f"--config {args.config}") for m in grid.models if m != "transformer"]
    if other:  # before any training: write_table4 would refuse these records only after the grid had run
        raise ValueError(f"ablate runs Table 4, the Transformer on SST-2 (datasets {' or '.join(TABLE4_DATASETS)}, "
                         f"model transformer); {other[0][1]} asks for {', '.join(name for name, _ in other)} — run "
                         f"other grids with complexorder classify")
    if args.out is None:
        args.out = str(default_table_path(grid.results, "table4.md"))
    reads = {f"a results file it renders ({r})": r for r in [grid.results, *args.also_results]}
    if args.notes:
        reads["the notes file it appends (--notes)"] = args.notes
    # before any training (and in a dry run, which should fail where the run would): an unwritable table is a
    # one-line error, not hours lost (stop 81: --dry-run --out DIRECTORY passed)
    check_writable(args.out, "--out", inputs=reads)
    if not args.dry_run:
        read_notes(args.notes)  # and so is a notes file that cannot be read
        # and so are --also-results files that do not exist, or results of other cells that the table would refuse
        existing = [*([grid.results] if Path(grid.results).is_file() else []), *args.also_results]
        records = load_results(existing, warn=lambda *_: None, require=TABLE4_FIELDS, extra=table4_config_problem)
        check_table4_records(records, existing)
    if not args.report_only:
        code = run_classify(args, "ablation")
        if args.dry_run:
            return code
    text = write_table4([grid.results, *args.also_results], args.out, notes=args.notes)
    print(f"wrote {args.out}")
    print_superseded_note(text, args.out)
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    from .inspection import inspect_checkpoint

    if args.top <= 0:
        raise ValueError(f"--top must be positive, got {args.top}")
    if args.dims is not None and args.word is None:
        raise ValueError("--dims chooses the dimensions of the wave plot of --word; give --word too")
    if args.out_dir is None:
        args.out_dir = str(Path("runs/inspect") / Path(args.checkpoint).stem)
    written = inspect_checkpoint(args.checkpoint, args.out_dir, args.word, args.top, parse_ints(args.dims, "dims"))
    print("wrote " + ", ".join(str(v) for k, v in written.items() if k != "dims"))
    return 0
