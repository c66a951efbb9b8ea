"""Speed and memory of the complex-order embedding and the complex layers, measured side by side.

One command runs the whole suite (about 12 minutes on 2 shared CPU cores) and writes
``benchmarks/results/speed.md``::

    OMP_NUM_THREADS=1 python benchmarks/speed.py --data-dir DIR   # DIR/classification/MR/rt-polarity.*

Sections (``--benchmarks``, default all):

* ``embedding`` -- forward + backward of :class:`complexorder.ComplexOrderEmbedding` against the
  paper's appendix C code (re-implemented here as written) and a plain ``nn.Embedding(V, 2D)``
  lookup (same output bytes: the memory-bound floor), over ``--shapes`` x ``--dims`` x ``--vocabs``,
  with glibc's default allocator settings and again with large blocks kept in the heap (see
  :func:`keep_large_blocks_in_heap`).
* ``layers`` -- each complex layer (linear, conv, attention) against its real counterpart.
* ``epoch`` -- seconds per training epoch of each classifier, complex-order / TPE (paper Fig. 2),
  on the MR sentences.
* ``memory`` -- peak memory of the embedding at L = 4096, one fresh process per candidate.

Every ratio compares candidates timed in the same process and run, interleaved round by round
(A, B, C, then B, C, A, ...), in CPU time of this process (one torch thread by default): the
machine is shared, so absolute times move between runs and only these paired ratios are reported
as results. Unknown benchmark, shape, dim, vocabulary, model or layer names are rejected with the
valid ones (:func:`parse_args`). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import complexorder
from complexorder import ComplexOrderEmbedding, build_embedding
from complexorder import nn as cnn
from complexorder.data.batching import EncodedDataset, iterate_batches
from complexorder.checkpoint import check_writable
from complexorder.data.paths import require_file, resolve_data_dir
from complexorder.experiments.training import parameter_groups
from complexorder.models import build_classifier
from complexorder.nn import native

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling report module, also when imported by path
from speed_report import PYTORCH_PATH, ratio, render  # noqa: E402

BENCHMARKS = ("embedding", "layers", "epoch", "memory")
SHAPES = {"32x50": (32, 50), "16x512": (16, 512)}
DIMS = (300, 512)
VOCABS = (20_000, 270_000)
MODELS = ("fasttext", "cnn", "lstm", "transformer")
LAYERS = ("linear", "conv", "attention")
GLIBC_DEFAULT = "glibc default"
HEAP_KEPT = "large blocks kept in the heap (mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=2 GiB)"
RESULTS = Path(__file__).resolve().parent / "results" / "speed.md"


# ----------------------------------------------------------------------------------- arguments


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def check_names(what: str, names: Sequence[str], valid: Sequence[str]) -> list[str]:
    """``names`` if all are in ``valid``; else a ValueError naming the bad ones and the valid list."""
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(repr(u) for u in unknown)}; valid {what}s: {', '.join(valid)}")
    if not names:
        raise ValueError(f"no {what} given; valid {what}s: {', '.join(valid)}")
    return list(names)


def check_ints(what: str, names: Sequence[str], valid: Sequence[int]) -> list[int]:
    return [int(n) for n in check_names(what, names, [str(v) for v in valid])]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and validate the command line; unknown names raise ValueError with the valid ones."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmarks", default=",".join(BENCHMARKS), help=f"comma list of {', '.join(BENCHMARKS)}")
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"BxL shapes of the embedding benchmark: {', '.join(SHAPES)}")
    p.add_argument("--dims", default=",".join(map(str, DIMS)), help=f"embedding dims D: {', '.join(map(str, DIMS))}")
    p.add_argument("--vocabs", default=",".join(map(str, VOCABS)), help=f"vocabulary sizes V: {', '.join(map(str, VOCABS))}")
    p.add_argument("--models", default=",".join(MODELS), help=f"classifiers of the epoch benchmark: {', '.join(MODELS)}")
    p.add_argument("--layers", default=",".join(LAYERS), help=f"layers of the layer benchmark: {', '.join(LAYERS)}")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per comparison (medians over rounds)")
    p.add_argument("--epoch-batches", type=int, default=4, help="batches per candidate per round in the epoch benchmark")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1") or 1),
                   help="torch threads (default: $OMP_NUM_THREADS, else 1)")
    p.add_argument("--data-dir", default=None, help="data directory holding classification/MR/rt-polarity.{pos,neg}")
    p.add_argument("--out", default=str(RESULTS), help="markdown report to write")
    p.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.benchmarks = check_names("benchmark", _split(args.benchmarks), BENCHMARKS)
    args.shapes = check_names("shape", _split(args.shapes), list(SHAPES))
    args.dims = check_ints("dim", _split(args.dims), DIMS)
    args.vocabs = check_ints("vocab", _split(args.vocabs), VOCABS)
    args.models = check_names("model", _split(args.models), MODELS)
    args.layers = check_names("layer", _split(args.layers), LAYERS)
    for name in ("rounds", "epoch_batches", "threads"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    check_writable(args.out, "--out")  # now, not after the benchmarks have run
    return args


# ----------------------------------------------------------------------- machine and timing


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "torch": torch.__version__,
            "cpu capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(),
            "python": platform.python_version(), "os": platform.platform(),
            "complexorder": complexorder.__version__ if hasattr(complexorder, "__version__") else "dev",
            "native kernel": "used" if native.available() else native.status()}


def loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def keep_large_blocks_in_heap() -> bool:
    """Keep freed memory in glibc's heap (no mmap for large blocks, no trimming).

    By default glibc serves blocks above 32 MB with a fresh ``mmap`` and returns them on free, so
    every large tensor (a [V, D] gradient table, a 33 MB output) pays page faults on first touch;
    on these virtual machines that costs more than the arithmetic. Turning it off (as jemalloc or
    tcmalloc would) shows the kernels' own cost. Returns False where ``mallopt`` is unavailable.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-4, 0)) and bool(libc.mallopt(-1, 2**31 - 1))  # M_MMAP_MAX, M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return False


Step = Callable[[], None]


def cpu_seconds() -> float:
    """CPU time of this process (user + system, page faults included).

    Other jobs share the machine; wall-clock time would mostly measure how long this process
    waited for a core. With one torch thread (the default here) CPU time is the step's cost.
    """
    return time.process_time()


def page_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def interleaved(candidates: dict[str, tuple[Step, Step]], rounds: int, warmup: int = 1,
                faults: dict[str, list[int]] | None = None) -> dict[str, list[float]]:
    """CPU-time ``step`` of each candidate ``rounds`` times, rotating the order every round.

    ``candidates`` maps a name to ``(step, reset)``; ``reset`` (e.g. dropping the gradients, as
    ``zero_grad(set_to_none=True)``) runs after each step, outside the timed region. Page faults
    per step are appended to ``faults[name]`` when given.
    """
    names = list(candidates)
    for _ in range(warmup):
        for name in names:
            step, reset = candidates[name]
            step()
            reset()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            step, reset = candidates[name]
            f0, start = page_faults(), cpu_seconds()
            step()
            times[name].append(cpu_seconds() - start)
            if faults is not None:
                faults.setdefault(name, []).append(page_faults() - f0)
            reset()
    return times


def drop_grads(module: nn.Module) -> Step:
    def reset() -> None:
        for p in module.parameters():
            p.grad = None
    return reset


# ------------------------------------------------------------------------------ 1. embedding


class AppendixCEmbedding(nn.Module):
    """The paper's appendix C code, as written (three tables, phases re-wrapped every forward)."""

    def __init__(self, n_token: int, d_model: int) -> None:
        super().__init__()
        self.word_emb = nn.Embedding(n_token, d_model)
        self.frequency_emb = nn.Embedding(n_token, d_model)
        self.initial_phase_emb = nn.Embedding(n_token, d_model)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        amplitude = self.word_emb(x)
        frequency = self.frequency_emb(x)
        self.initial_phase_emb.weight = nn.Parameter(self.initial_phase_emb.weight % (2 * math.pi))
        sent_len = x.size(-1)
        pos_seq = torch.arange(1, sent_len + 1, 1.0, device=amplitude.device)
        pos_seq = pos_seq.unsqueeze(0).unsqueeze(-1)
        pos_seq = pos_seq.repeat([x.size(0), 1, amplitude.size(-1)])
        dimension_bais = self.initial_phase_emb(x)
        enc_output_phase = torch.mul(pos_seq, frequency) + dimension_bais
        enc_output_real = amplitude * torch.cos(enc_output_phase)
        enc_output_image = amplitude * torch.sin(enc_output_phase)
        return enc_output_real, enc_output_image


class PyTorchPath(nn.Module):
    """``ComplexOrderEmbedding`` with the native kernel switched off: the PyTorch fused path."""

    def __init__(self, emb: ComplexOrderEmbedding) -> None:
        super().__init__()
        self.emb = emb

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        with native.disabled():  # the backward follows the forward's choice
            return self.emb(tokens)


EMBEDDING_CANDIDATES = ("ours", PYTORCH_PATH, "ours+theta", "ours sparse", "appendix C", "floor", "floor sparse")


def make_embedding(name: str, vocab: int, dim: int) -> nn.Module:
    if name == "appendix C":
        return AppendixCEmbedding(vocab, dim)
    if name.startswith("floor"):
        return nn.Embedding(vocab, 2 * dim, sparse=name.endswith("sparse"))
    emb = ComplexOrderEmbedding(vocab, dim, initial_phase=name == "ours+theta", sparse=name.endswith("sparse"),
                                frequency_init="uniform")
    return PyTorchPath(emb) if name == PYTORCH_PATH else emb


def embedding_step(module: nn.Module, tokens: torch.Tensor, grad: torch.Tensor) -> Step:
    """Forward + backward with a fixed upstream gradient ``grad`` ([B, L, D, 2] real)."""
    if isinstance(module, AppendixCEmbedding):
        g_re, g_im = grad[..., 0], grad[..., 1]
        return lambda: torch.autograd.backward(module(tokens), (g_re, g_im))
    if isinstance(module, (ComplexOrderEmbedding, PyTorchPath)):
        g = torch.view_as_complex(grad)
        return lambda: module(tokens).backward(g)
    g = grad.flatten(-2)
    return lambda: module(tokens).backward(g)


def bench_embedding(args: argparse.Namespace, regime: str) -> list[dict]:
    rows = []
    for shape in args.shapes:
        b, length = SHAPES[shape]
        for dim in args.dims:
            for vocab in args.vocabs:
                torch.manual_seed(0)
                tokens = torch.randint(0, vocab, (b, length))
                grad = torch.randn(b, length, dim, 2)
                cands = {}
                for name in EMBEDDING_CANDIDATES:
                    module = make_embedding(name, vocab, dim)
                    cands[name] = (embedding_step(module, tokens, grad), drop_grads(module))
                faults: dict[str, list[int]] = {}
                times = interleaved(cands, args.rounds, faults=faults)
                rows.append({"regime": regime, "shape": shape, "dim": dim, "vocab": vocab, "times": times,
                             "fault_mib": {k: statistics.median(v) * resource.getpagesize() / 2**20
                                           for k, v in faults.items()}})
                del cands
                print(f"  embedding [{regime}] {shape} D={dim} V={vocab}: ours/floor {ratio(times, 'ours', 'floor'):.2f}, "
                      f"appendix C/ours {ratio(times, 'appendix C', 'ours'):.2f}, "
                      f"PyTorch path/ours {ratio(times, PYTORCH_PATH, 'ours'):.2f}", flush=True)
    return rows


# --------------------------------------------------------------------------------- 2. layers


def layer_candidates(layer: str) -> tuple[dict[str, Callable[[], tuple[nn.Module, torch.Tensor]]], str]:
    """Constructors of (module, input) for each variant of ``layer``, and the workload's description."""
    b, length = 32, 50
    if layer == "linear":
        d = 300
        cases = {"real D": lambda: (nn.Linear(d, d), torch.randn(b, length, d)),
                 "real 2D": lambda: (nn.Linear(2 * d, 2 * d), torch.randn(b, length, 2 * d)),
                 "complex": lambda: (cnn.ComplexLinear(d, d), torch.randn(b, length, d, dtype=torch.complex64)),
                 "complex shared": lambda: (cnn.ComplexLinear(d, d, share_weights=True),
                                            torch.randn(b, length, d, dtype=torch.complex64))}
        return cases, f"[{b}, {length}, D] -> D, D = {d}"
    if layer == "conv":
        d, f, k = 300, 100, 3
        cases = {"real D": lambda: (nn.Conv1d(d, f, k), torch.randn(b, d, length)),
                 "real 2D": lambda: (nn.Conv1d(2 * d, 2 * f, k), torch.randn(b, 2 * d, length)),
                 "complex": lambda: (cnn.ComplexConv1d(d, f, k), torch.randn(b, d, length, dtype=torch.complex64)),
                 "complex shared": lambda: (cnn.ComplexConv1d(d, f, k, share_weights=True),
                                            torch.randn(b, d, length, dtype=torch.complex64))}
        return cases, f"[{b}, D, {length}] -> {f} channels, kernel {k}, D = {d}"
    d, h = 256, 8
    cases = {"real D": lambda: (nn.MultiheadAttention(d, h, batch_first=True), torch.randn(b, length, d)),
             "real 2D": lambda: (nn.MultiheadAttention(2 * d, h, batch_first=True), torch.randn(b, length, 2 * d)),
             "complex": lambda: (cnn.ComplexMultiheadAttention(d, h), torch.randn(b, length, d, dtype=torch.complex64)),
             "complex shared": lambda: (cnn.ComplexMultiheadAttention(d, h, share_weights=True),
                                        torch.randn(b, length, d, dtype=torch.complex64))}
    return cases, f"self-attention [{b}, {length}, D], {h} heads, D = {d}"


def layer_step(module: nn.Module, x: torch.Tensor) -> tuple[Step, Step]:
    x.requires_grad_(True)
    attention = isinstance(module, (nn.MultiheadAttention, cnn.ComplexMultiheadAttention))
    run = (lambda: module(x, x, x, need_weights=False)[0]) if attention else (lambda: module(x))
    with torch.no_grad():
        grad = torch.randn_like(run())

    def reset() -> None:
        drop_grads(module)()
        x.grad = None
    return (lambda: run().backward(grad)), reset


def bench_layers(args: argparse.Namespace) -> list[dict]:
    rows = []
    for layer in args.layers:
        torch.manual_seed(0)
        makers, workload = layer_candidates(layer)
        cands = {name: layer_step(*make()) for name, make in makers.items()}
        times = interleaved(cands, args.rounds)
        rows.append({"layer": layer, "workload": workload, "times": times})
        print(f"  layer {layer}: complex/real D {ratio(times, 'complex', 'real D'):.2f}", flush=True)
    return rows


# ---------------------------------------------------------------------------------- 3. epoch


def load_mr(data_dir: str | None) -> tuple[EncodedDataset, int]:
    """MR sentences (both polarities): latin-1, split on b"\\n" only, lower-cased, whitespace tokens."""
    root = resolve_data_dir(data_dir) / "classification" / "MR"
    how = "pass --data-dir DIR holding classification/MR/rt-polarity.{pos,neg} (the Cornell MR data)"
    vocab: dict[str, int] = {"<pad>": 0}
    sequences, labels = [], []
    for label, name in ((1, "rt-polarity.pos"), (0, "rt-polarity.neg")):
        for line in require_file(root / name, how).read_bytes().split(b"\n"):
            words = line.decode("latin-1").lower().split()
            if words:
                sequences.append(torch.tensor([vocab.setdefault(w, len(vocab)) for w in words]))
                labels.append(label)
    return EncodedDataset(sequences, torch.tensor(labels)), len(vocab)


EPOCH_CANDIDATES = ("tpe", "complex-vanilla", "complex-order", "complex-order shared", "tpe sparse",
                    "complex-order sparse")


def make_optimizers(model: nn.Module, sparse: bool) -> list[torch.optim.Optimizer]:
    """Adam as the training runner; with sparse embeddings SparseAdam for the embedding tables."""
    if not sparse:
        return [torch.optim.Adam(parameter_groups(model, 0.0), lr=1e-3)]
    table = [p for p in model.embedding.parameters() if p.shape[0] != 1]
    ids = {id(p) for p in table}
    rest = [p for p in model.parameters() if id(p) not in ids]
    return [torch.optim.SparseAdam(table, lr=1e-3), torch.optim.Adam(rest, lr=1e-3)]


def epoch_candidate(arch: str, name: str, vocab: int, batches: list) -> Callable[[int], None]:
    """A function training the classifier ``arch`` over ``name`` on the batches of one block."""
    dim = 256 if arch == "transformer" else 300
    sparse = name.endswith("sparse")
    emb = build_embedding(name.split()[0], vocab, dim, padding_idx=0, sparse=sparse)
    model = build_classifier(arch, emb, 2, **({"share_weights": True} if "shared" in name else {}))
    model.train()
    optimizers = make_optimizers(model, sparse)
    table_ids = {id(p) for p in model.embedding.parameters()} if sparse else set()
    dense = [p for p in model.parameters() if id(p) not in table_ids]

    def run_block(block: int) -> None:
        for tokens, labels in batches[block]:
            loss = F.cross_entropy(model(tokens), labels)
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(dense, 5.0)
            for opt in optimizers:
                opt.step()
    return run_block


def bench_epoch(args: argparse.Namespace, mr: tuple[EncodedDataset, int]) -> tuple[list[dict], dict]:
    data, vocab = mr
    batch_size = 50
    gen = torch.Generator().manual_seed(0)
    # min_length 5: the CNN's widest filter; every model sees the same padded batches
    all_batches = list(iterate_batches(data, batch_size, shuffle=True, generator=gen, min_length=5))
    k = args.epoch_batches
    rounds = max(3, args.rounds - 2)
    blocks = [all_batches[i * k:(i + 1) * k] for i in range(rounds + 1)]  # block 0 warms up
    rows = []
    for arch in args.models:
        torch.manual_seed(0)
        cands = {name: epoch_candidate(arch, name, vocab, blocks) for name in EPOCH_CANDIDATES}
        times: dict[str, list[float]] = {name: [] for name in cands}
        for run in cands.values():
            run(0)
        for r in range(rounds):
            names = list(cands)[r % len(cands):] + list(cands)[:r % len(cands)]
            for name in names:
                start = cpu_seconds()
                cands[name](r + 1)
                times[name].append(cpu_seconds() - start)
        rows.append({"model": arch, "times": times})
        print(f"  epoch {arch}: complex-order/tpe {ratio(times, 'complex-order', 'tpe'):.2f}", flush=True)
    info = {"sentences": len(data), "vocab": vocab, "batch_size": batch_size, "batches": len(all_batches),
            "timed_batches": sum(len(b) for b in blocks[1:]), "rounds": rounds, "per_round": k}
    return rows, info


# --------------------------------------------------------------------------------- 4. memory

MEMORY_SHAPE = (4, 4096, 512, 20_000)  # B, L, D, V
MEMORY_CANDIDATES = ("ours", PYTORCH_PATH, "ours+theta", "ours sparse", "appendix C", "floor")


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def memory_probe(name: str) -> dict:
    """Run in a fresh process: peak resident memory of one forward + backward, and saved bytes."""
    b, length, dim, vocab = MEMORY_SHAPE
    torch.manual_seed(0)
    module = make_embedding(name, vocab, dim)
    tokens = torch.randint(0, vocab, (b, length))
    grad = torch.randn(b, length, dim, 2)
    step = embedding_step(module, tokens, grad)
    step()  # warm-up: one-time allocations
    drop_grads(module)()
    saved: dict[int, int] = {}

    params = {p.untyped_storage().data_ptr() for p in module.parameters()}

    def pack(t: torch.Tensor) -> torch.Tensor:  # bytes kept for backward, parameters excluded
        if t.untyped_storage().data_ptr() not in params:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set size (VmHWM)
    base = _rss_kib("VmRSS")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    peak = _rss_kib("VmHWM")
    grads = sum(p.grad.numel() * p.grad.element_size() if not p.grad.is_sparse
                else p.grad._values().numel() * p.grad.element_size() for p in module.parameters() if p.grad is not None)
    return {"peak_mib": (peak - base) / 1024, "saved_mib": sum(saved.values()) / 2**20, "grad_mib": grads / 2**20}


def bench_memory(args: argparse.Namespace) -> list[dict]:
    rows = []
    for name in MEMORY_CANDIDATES:
        cmd = [sys.executable, __file__, "--memory-probe", name, "--threads", str(args.threads)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append({"candidate": name, **json.loads(done.stdout.strip().splitlines()[-1])})
        print(f"  memory {name}: {rows[-1]['peak_mib']:.0f} MiB peak", flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except (ValueError, PermissionError) as err:
        print(f"speed.py: error: {err}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    if args.memory_probe is not None:
        print(json.dumps(memory_probe(check_names("memory candidate", [args.memory_probe], MEMORY_CANDIDATES)[0])))
        return 0
    try:
        mr = load_mr(args.data_dir) if "epoch" in args.benchmarks else None  # fail before any timing
    except FileNotFoundError as err:
        print(f"speed.py: error: {err}", file=sys.stderr)
        return 2
    env = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} " if "OMP_NUM_THREADS" in os.environ else ""
    command = env + " ".join(["python", "benchmarks/speed.py", *(sys.argv[1:] if argv is None else argv)])
    info = machine_info()
    load_before = loadavg()
    print(f"machine: {info}\nload average before: {load_before}", flush=True)
    start = time.perf_counter()
    sections: dict = {"minutes": {}}

    def timed(name: str, run: Callable[[], object]) -> object:
        t0 = time.perf_counter()
        result = run()
        sections["minutes"][name] = (time.perf_counter() - t0) / 60
        return result
    if "layers" in args.benchmarks:
        sections["layers"] = timed("layers", lambda: bench_layers(args))
    if "epoch" in args.benchmarks:
        sections["epoch"] = timed("epoch", lambda: bench_epoch(args, mr))
    if "memory" in args.benchmarks:
        sections["memory"] = timed("memory", lambda: bench_memory(args))
        sections["memory_shape"] = MEMORY_SHAPE
    if "embedding" in args.benchmarks:
        rows = timed("embedding (glibc default)", lambda: bench_embedding(args, GLIBC_DEFAULT))
        if keep_large_blocks_in_heap():
            rows += timed("embedding (heap kept)", lambda: bench_embedding(args, HEAP_KEPT))
        sections["embedding"] = rows
    text = render(args, command, info, (load_before, loadavg()), sections, time.perf_counter() - start)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
