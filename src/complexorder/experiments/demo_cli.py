"""``complexorder demo`` command."""

from __future__ import annotations

import argparse
import dataclasses

from ..config import check_no_repeats, check_seed
from ..embeddings import EMBEDDINGS
from ..environment import NO_PROGRESS_HELP, set_threads
from .demo import DEMO_TABLE_HEADER, DemoConfig, format_demo_row, run_demo, test_majority_rate

#: the largest --train-size (the default is 4,000)
MAX_TRAIN_SIZE = 1_000_000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="train the five embeddings on the built-in word-order task (no data needed)",
                       description="A 1-layer Transformer classifier learns whether marker A comes before marker B. "
                                   "The bag of words is the same for both labels, so models without positions "
                                   "stay at chance. Runs in under a minute on 2 idle CPU cores.")
    p.add_argument("--embeddings", default=",".join(EMBEDDINGS),
                   help="comma-separated embeddings to compare (default: all five)")
    p.add_argument("--epochs", type=int, default=DemoConfig.epochs, help="training epochs (default: %(default)s)")
    p.add_argument("--train-size", type=int, default=DemoConfig.train_size,
                   help="training sequences (default: %(default)s)")
    p.add_argument("--seed", type=int, default=DemoConfig.seed,
                   help="seed of the data and of every model (default: %(default)s)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: $OMP_NUM_THREADS or torch's choice; "
                                               "use 1 when other jobs keep the cores busy)")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    names = tuple(n.strip() for n in args.embeddings.split(",") if n.strip())
    unknown = [n for n in names if n not in EMBEDDINGS]
    if unknown:
        raise ValueError(f"--embeddings: unknown embedding {unknown[0]!r}; valid names: {', '.join(EMBEDDINGS)}")
    if not names:
        raise ValueError(f"--embeddings: {args.embeddings!r} names nothing; valid names: {', '.join(EMBEDDINGS)}")
    check_no_repeats(names, args.embeddings, "embeddings")  # each would train and print twice
    for option, value in (("--epochs", args.epochs), ("--train-size", args.train_size)):
        if value <= 0:  # it said "--epochs and --train-size must be positive", naming neither
            raise ValueError(f"{option} must be a positive integer, got {value}")
    if args.train_size > MAX_TRAIN_SIZE:  # built in memory at once: 10**11 ran until killed, with no output
        raise ValueError(f"--train-size must be at most {MAX_TRAIN_SIZE:,} (the demo builds its sequences in memory; "
                         f"the default {DemoConfig.train_size:,} trains in under a minute), got {args.train_size:,}")
    check_seed("--seed", args.seed)  # the grids', translation's and the LM's seeds stay below 2**32 too
    set_threads(getattr(args, "threads", None))
    config = dataclasses.replace(DemoConfig(), epochs=args.epochs, train_size=args.train_size, seed=args.seed)
    epochs = f"{config.epochs} epoch{'s' if config.epochs != 1 else ''}"
    print(f"Word-order task: is A before B? {config.train_size:,} training sequences of length "
          f"{config.min_len}-{config.max_len}, {epochs}; {config.test_size:,} test sequences. Both labels hold the "
          "same words, so a model blind to order is at chance: 0.5 in expectation (always answering the test set's "
          f"more frequent label scores {test_majority_rate(config):.3f}).")
    print(DEMO_TABLE_HEADER, flush=True)
    # each row as its model finishes: an interrupted demo keeps what it printed (it printed nothing before the end)
    printed: list[dict] = []
    args.on_interrupt = lambda: ("the rows above are the embeddings that finished" if printed else
                                 "no embedding had finished")

    def row(r: dict) -> None:
        print(format_demo_row(r), flush=True)
        printed.append(r)

    run_demo(config, names, progress=not args.no_progress, on_row=row)
    return 0
