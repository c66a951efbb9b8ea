"""How much a trained classifier uses word order: its test accuracy with the words of every test sentence shuffled.

For each checkpoint written by ``complexorder classify/ablate --checkpoint-dir``, the script rebuilds the unit's test
set (the checkpoint's data set and split, encoded with its vocabulary), checks that the accuracy in the original order
equals the one the checkpoint recorded, then scores the same sentences with every word but the last put in a random
order (``--orders`` orders, each drawn from its own seeded generator) and prints the drop in points.

Why every word but the last: a Transformer without positions is permutation-equivariant over its slots, so a readout
of one slot cannot change when the other slots are reordered. The authors' classifier (``network = "authors"``,
``fixed_length = 53``) reads the last of its 53 slots, a padding slot for every sentence shorter than 53; the
``"last"`` readout without ``fixed_length`` reads the sentence's last word, which is therefore kept in place. For these
models a drop measures what the row takes from positions alone; a mean readout is invariant to any reordering. For
other models (an LSTM reads in order by construction) the drop measures order use of any kind. The table names each
checkpoint's model, network and readout. Only the sentence's own words are reordered, never ``<pad>``.

A diagnostic of what a trained row uses, not one of the paper's measurements. Usage::

    python benchmarks/classification/order_use.py --data-dir ../shared/data --out order_use.md CKPT [CKPT ...]
"""

from __future__ import annotations

import argparse
import random
import re
import shlex
import statistics
import sys
from pathlib import Path

import torch

from complexorder.checkpoint import atomic_write_text, check_text_output, check_writable
from complexorder.cli import run_script
from complexorder.data.batching import EncodedDataset
from complexorder.data.classification import load_dataset, make_split
from complexorder.data.paths import resolve_data_dir
from complexorder.data.vocab import Vocabulary
from complexorder.experiments.inspection import load_classifier
from complexorder.experiments.training import evaluate_accuracy


def shuffle_before_last(ids: torch.Tensor, rng: random.Random) -> torch.Tensor:
    """``ids`` with every element but the last in an order drawn from ``rng`` (the last stays last)."""
    head = ids[:-1].tolist()
    rng.shuffle(head)
    return torch.tensor(head + ids[-1:].tolist(), dtype=ids.dtype)


def network_name(settings: dict, model: torch.nn.Module) -> str:
    """The Transformer's layers as the run built them: ``network = "auto"`` (also a config written before the setting
    existed) means complex layers for a complex embedding and real ones for a real embedding (none, PE, TPE)."""
    network = str(settings.get("network", "auto"))
    if network != "auto":
        return network
    return "complex" if model.embedding.is_complex else "real"


def order_drop(model: torch.nn.Module, test: EncodedDataset, orders: int, seed: int) -> tuple[float, list[float]]:
    """(accuracy in order, accuracies with the words before the last shuffled, one per order)."""
    base = evaluate_accuracy(model, test)
    shuffled = []
    for k in range(orders):
        rng = random.Random(seed + k)
        seqs = [shuffle_before_last(s, rng) for s in test.sequences]
        shuffled.append(evaluate_accuracy(model, EncodedDataset(seqs, test.labels)))
    return base, shuffled


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+", type=Path, help="classifier checkpoints (complexorder classify/ablate)")
    ap.add_argument("--data-dir", default=None, help="the data directory (as for complexorder classify)")
    ap.add_argument("--orders", type=int, default=5, help="random orders per checkpoint (default 5)")
    ap.add_argument("--seed", type=int, default=1000, help="seed of the first order; order k uses seed + k")
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file (atomically)")
    args = ap.parse_args(argv)
    if args.orders < 1:
        sys.exit(f"--orders must be a positive integer, got {args.orders}")
    if args.out is not None:  # before any work: a checkpoint or results file given as --out is refused, not replaced
        try:
            check_writable(args.out, "--out")
            check_text_output(args.out, "--out", "a Markdown table")
        except (OSError, ValueError) as e:
            sys.exit(str(e))
    torch.set_num_threads(1)
    data_dir = resolve_data_dir(args.data_dir)
    datasets: dict = {}
    lines = ["| checkpoint | model | seed | recorded test | in order | shuffled, mean (min–max) | drop (points) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    drops: dict[str, list[float]] = {}
    print("\n".join(lines), flush=True)
    for path in args.checkpoints:
        try:
            model, ck = load_classifier(path)
        except (FileNotFoundError, IsADirectoryError, ValueError) as e:  # load_checkpoint's messages name the file
            sys.exit(str(e) if str(path) in str(e) else f"checkpoint {path}: {e}")
        config = ck["config"]
        name = config["dataset"]
        if name not in datasets:
            try:
                datasets[name] = load_dataset(name, data_dir)
            except (FileNotFoundError, ValueError) as e:  # a missing file: which, where, how to get it
                sys.exit(f"checkpoint {path}: its data set {name}: {e}")
        texts, labels = make_split(datasets[name], config["split"]).test
        vocab = Vocabulary(ck["vocab"][2:])
        if vocab.itos != ck["vocab"]:
            sys.exit(f"checkpoint {path}: its vocabulary does not start with <pad>, <unk>; expected the one "
                     "`complexorder classify` stores")
        test = EncodedDataset([vocab.encode(t) for t in texts], torch.tensor(labels, dtype=torch.long))
        base, shuffled = order_drop(model, test, args.orders, args.seed)
        recorded = ck.get("test_accuracy")
        if recorded is not None and abs(base - recorded) > 1e-9:
            sys.exit(f"checkpoint {path}: test accuracy in order {base:.4f}, but it recorded {recorded:.4f}; "
                     "the test set or the model differs from the run's")
        mean = statistics.mean(shuffled)
        drop = 100 * (base - mean)
        row = re.sub(r"-seed-\d+$", "", path.stem)
        drops.setdefault(row, []).append(drop)
        model_name = config["model"]
        if model_name == "transformer":
            settings = config["settings"]
            model_name += f", {network_name(settings, model)} network, {settings['readout']} readout"
        line = (f"| {path.name} | {model_name} | {config['seed']} | "
                f"{'—' if recorded is None else f'{recorded:.4f}'} | {base:.4f} | {mean:.4f} "
                f"({min(shuffled):.4f}–{max(shuffled):.4f}) | {drop:+.2f} |")
        lines.append(line)
        print(line, flush=True)
    summary = ["", "| row (checkpoint name without its seed) | checkpoints | mean drop (points) | per checkpoint |",
               "|---|---:|---:|---|"]
    summary += [f"| {row} | {len(d)} | {statistics.mean(d):+.2f} | {', '.join(f'{x:+.2f}' for x in d)} |"
                for row, d in drops.items()]
    print("\n".join(summary))
    if args.out is not None:
        given = argv if argv is not None else sys.argv[1:]
        command = "python benchmarks/classification/order_use.py " + shlex.join(given)
        head = ["# Test accuracy with the words before each sentence's last shuffled", "",
                f"{args.orders} random orders per checkpoint (seeds {args.seed}–{args.seed + args.orders - 1}); "
                "drop = accuracy in order minus the mean over the orders, in points. Produced by:", "",
                f"    {command}", ""]
        atomic_write_text(args.out, "\n".join(head + lines + summary) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
