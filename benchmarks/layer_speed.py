"""One training step of Table 2's classifiers with the old formulas and with the fast paths of stop 79, side by side.

Stop 79 made the complex layers of Table 2's classifiers faster without changing their results beyond float rounding
(``tests/test_layer_fast_paths.py``): the Transformer encoder layer runs on the real and imaginary parts with three
real products per complex one, the CNN convolves the parts split once for its three filter widths, and the LSTM
classifier reads a bucketed batch padded (PyTorch's fused LSTM kernel) instead of packed. This script times one
training step (forward, cross-entropy, backward, optimiser steps: Table 2's SparseAdam for the sparse embedding tables and
Adam for the layers; ``--dense-embeddings``: one Adam over every parameter) of each classifier in both forms, interleaved round by round
in one process, in CPU time of the process (one torch thread), after checking that both forms give the same loss and
gradients from the same weights (in eval mode: see :func:`probe`), and prints a Markdown table. Run::

    OMP_NUM_THREADS=1 python benchmarks/layer_speed.py                      # old: the fast paths switched off
    OMP_NUM_THREADS=1 python benchmarks/layer_speed.py --old-rev 8c59427    # old: the package at that commit
    OMP_NUM_THREADS=1 python benchmarks/layer_speed.py --old-src DIR        # old: the package DIR/complexorder

"Old" is, by default, this package with the fast paths switched off (``complexorder.nn.functional._FAST_PATHS``): the
straightforward formulas, which are the code before stop 79. ``--old-rev REV`` extracts ``src/complexorder`` at commit
``REV`` with ``git archive`` (nothing in the working tree changes) and ``--old-src DIR`` takes a copy of an old
package; either is imported beside this one as ``complexorder_old`` (the compiled embedding kernel, unchanged by stop
79, is copied in when the copy lacks it) and gets the new model's weights through ``load_state_dict``.

The batches are ``B x L`` token ids (``--shapes``, default 64x20,64x50: Table 2's batch size, MR and SST-2 sentence
lengths); one row in eight ends three tokens early, as bucketing by length leaves little padding. Sizes are Table 2's
(``src/complexorder/configs/classification/table2.toml``): the Transformer d = 256, 8 heads, inner 512, one layer,
dropout 0.1; the LSTM hidden 128, the CNN 64 filters of widths 3, 4, 5 and FastText hidden 128 at d = 300, dropout 0.5.
FastText has no fast path (a control). ``--heap`` keeps large freed blocks in glibc's heap: Adam's temporaries over
the embedding tables then stop paying page faults, the noisiest part of a step on a shared machine (FastText's
old / new stays within 1% with it, and moved by up to 15% without it).
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import importlib.util
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

import complexorder
from complexorder import build_embedding
from complexorder.experiments.training import make_optimizers
from complexorder.models import build_classifier
from complexorder.nn import functional as CF

ROOT = Path(__file__).resolve().parents[1]
MODELS = {
    "transformer": (256, {"nhead": 8, "dim_feedforward": 512, "dropout": 0.1}),
    "lstm": (300, {"hidden": 128, "dropout": 0.5}),
    "cnn": (300, {"filters": 64, "filter_sizes": (3, 4, 5), "dropout": 0.5}),
    "fasttext": (300, {"hidden": 128, "dropout": 0.5}),
}


def keep_large_blocks_in_heap() -> bool:
    """glibc's heap keeps freed blocks (no ``mmap`` for large ones, no trimming), as ``benchmarks/speed.py`` does
    with ``--heap``: Adam's temporaries over the [V, D] tables then stop paying page faults at every step, which on
    these shared machines vary more than the layers' own cost. Returns False where ``mallopt`` is unavailable."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-4, 0)) and bool(libc.mallopt(-1, 2**31 - 1))  # M_MMAP_MAX, M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return False


def load_old_package(src: Path) -> ModuleType:
    """The package ``src/complexorder`` imported as ``complexorder_old`` (its imports are relative)."""
    package = src / "complexorder"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"no package at {package}")
    kernel = package / "nn"
    if not list(kernel.glob("_wave_kernel*.so")):  # built, not committed: the unchanged kernel of this checkout
        for built in (Path(complexorder.__file__).parent / "nn").glob("_wave_kernel*.so"):
            shutil.copy2(built, kernel / built.name)
    spec = importlib.util.spec_from_file_location("complexorder_old", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["complexorder_old"] = module
    spec.loader.exec_module(module)
    importlib.import_module("complexorder_old.models")
    return module


def extract_revision(rev: str, into: Path) -> Path:
    """``src/complexorder`` at commit ``rev``, extracted under ``into`` with ``git archive`` (read-only)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/complexorder"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return into / "src"


def batch(size: int, length: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, vocab, (size, length), generator=gen)
    tokens[: max(1, size // 8), max(1, length - 3):] = 0  # padding id 0
    return tokens, torch.randint(0, 2, (size,), generator=gen)


def build(package: ModuleType | None, arch: str, embedding: str, vocab: int, sparse: bool) -> torch.nn.Module:
    dim, options = MODELS[arch]
    if package is None:
        return build_classifier(arch, build_embedding(embedding, vocab, dim, padding_idx=0, sparse=sparse), 2,
                                **options)
    models = sys.modules[package.__name__ + ".models"]
    return models.build_classifier(arch, package.build_embedding(embedding, vocab, dim, padding_idx=0, sparse=sparse),
                                   2, **options)


class Form:
    """A model, its optimizer and the fast-path switch it runs with."""

    def __init__(self, model: torch.nn.Module, fast: bool) -> None:
        self.model, self.fast = model, fast
        # Table 2's optimisers: Adam for the layers, SparseAdam for sparse embedding tables (make_optimizers)
        self.optimizers = make_optimizers(model, lr=1e-3, weight_decay=0.0)

    def loss_and_grads(self, tokens, labels) -> tuple[float, list[torch.Tensor]]:
        CF._FAST_PATHS = self.fast
        self.model.zero_grad(set_to_none=True)
        torch.manual_seed(1)  # the same dropout masks in both forms
        loss = F.cross_entropy(self.model(tokens), labels)
        loss.backward()
        return loss.item(), [(p.grad.to_dense() if p.grad.is_sparse else p.grad.clone())
                             for p in self.model.parameters() if p.grad is not None]

    def step(self, tokens, labels) -> float:
        CF._FAST_PATHS = self.fast
        start = time.process_time()
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(self.model(tokens), labels).backward()
        for optimizer in self.optimizers:
            optimizer.step()
        return time.process_time() - start


def probe(arch: str, embedding: str, size: int, length: int, vocab: int, rounds: int, old: ModuleType | None,
          sparse: bool = True) -> str:
    """One row of the table: the two forms of one classifier from the same weights, checked to agree, then timed."""
    torch.manual_seed(0)
    model = build(None, arch, embedding, vocab, sparse)
    if old is None:
        reference = copy.deepcopy(model)
    else:
        reference = build(old, arch, embedding, vocab, sparse)
        reference.load_state_dict(model.state_dict())  # the same weights; the state dict's layout is unchanged
    forms = {"old": Form(reference, fast=False), "new": Form(model, fast=True)}
    tokens, labels = batch(size, length, vocab)
    # eval mode for the check: a dropout mask drawn in training puts some ReLU inputs within rounding of 0, where the
    # two forms' float rounding may take different sides of the kink (the gradient then differs at that unit)
    for form in forms.values():
        form.model.eval()
    (loss_old, grads_old), (loss_new, grads_new) = (f.loss_and_grads(tokens, labels) for f in forms.values())
    for form in forms.values():
        form.model.train()
    diff = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in zip(grads_new, grads_old))
    if abs(loss_new - loss_old) > 1e-5 * max(1.0, abs(loss_old)) or diff > 1e-4:
        raise SystemExit(f"{arch}: the forms differ: loss {loss_old} vs {loss_new}, gradients {diff:.1e}")
    times: dict[str, list[float]] = {name: [] for name in forms}
    names = list(forms)
    for name in names:  # warm-up
        forms[name].step(tokens, labels)
    for k in range(rounds):
        for name in names[k % 2:] + names[:k % 2]:
            times[name].append(forms[name].step(tokens, labels))
    CF._FAST_PATHS = True
    best = {name: 1e3 * min(v) for name, v in times.items()}
    median = {name: 1e3 * statistics.median(v) for name, v in times.items()}
    return (f"| {arch} | {embedding} | {size}x{length} | {best['old']:.1f} ({median['old']:.1f}) "
            f"| {best['new']:.1f} ({median['new']:.1f}) | {best['old'] / best['new']:.2f} "
            f"| {median['old'] / median['new']:.2f} | {diff:.0e} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="transformer,lstm,cnn,fasttext",
                        help="comma-separated classifiers (default: %(default)s)")
    parser.add_argument("--embeddings", default="complex-order", help="comma-separated embeddings (default: "
                        "%(default)s; tpe shows the real LSTM's padded read)")
    parser.add_argument("--shapes", default="64x20,64x50", help="comma-separated BxL (default: %(default)s)")
    parser.add_argument("--vocab", type=int, default=20000, help="V (default: %(default)s)")
    parser.add_argument("--dense-embeddings", action="store_true", help="dense embedding gradients and one Adam over "
                        "every parameter (default: Table 2's sparse tables with SparseAdam, Adam for the layers)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per form, at least 5 (default: "
                        "%(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: %(default)s)")
    parser.add_argument("--heap", action="store_true", help="keep large freed blocks in glibc's heap (less noise "
                        "from page faults; the experiments run with glibc's defaults)")
    old_source = parser.add_mutually_exclusive_group()
    old_source.add_argument("--old-rev", help="old form: src/complexorder at this git commit")
    old_source.add_argument("--old-src", type=Path, help="old form: the package DIR/complexorder")
    args = parser.parse_args(argv)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; valid: {', '.join(MODELS)}")
    try:
        shapes = [tuple(int(n) for n in s.lower().split("x")) for s in args.shapes.split(",")]
    except ValueError:
        parser.error(f"--shapes must be BxL pairs such as 64x20, got {args.shapes!r}")
    if any(len(s) != 2 or min(s) < 1 for s in shapes) or args.rounds < 5:
        parser.error("--shapes must be BxL pairs of positive integers, --rounds at least 5")
    torch.set_num_threads(args.threads)
    heap = args.heap and keep_large_blocks_in_heap()
    old = None
    with tempfile.TemporaryDirectory(prefix="layer_speed_") as tmp:
        if args.old_rev:
            old = load_old_package(extract_revision(args.old_rev, Path(tmp)))
            label = f"the package at {args.old_rev}"
        elif args.old_src:
            old = load_old_package(args.old_src)
            label = f"the package in {args.old_src}"
        else:
            label = "this package with the fast paths switched off"
        allocator = "glibc's heap keeping large blocks" if heap else "glibc's default allocator"
        tables = ("dense embedding gradients, one Adam" if args.dense_embeddings
                  else "sparse embedding tables with SparseAdam and Adam for the layers, as Table 2")
        print(f"torch {torch.__version__}, {args.threads} thread(s), {allocator}; {tables}; old: {label}; CPU ms per "
              f"training step, best of {args.rounds} interleaved rounds (median in brackets)\n")
        print("| model | embedding | BxL | old ms | new ms | old / new (best) | old / new (median) | max grad diff |")
        print("|---|---|---|---:|---:|---:|---:|---:|")
        for arch in models:
            for embedding in args.embeddings.split(","):
                for size, length in shapes:
                    print(probe(arch, embedding, size, length, args.vocab, args.rounds, old,
                                sparse=not args.dense_embeddings), flush=True)


if __name__ == "__main__":
    main()
