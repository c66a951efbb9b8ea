"""Is ``torch.compile`` worth it for a whole complex model? A side-by-side probe (stop 77).

Since stop 77 the complex embeddings trace as the plain equation under ``torch.compile`` (the native kernel is a
ctypes call dynamo cannot trace), so a classifier compiles to one graph. This times one training step (forward,
cross-entropy, backward, Adam step) of Table 2's Transformer classifier (width ``--dim``, default 256, 8 heads, inner
512, one layer, no dropout) in two forms, interleaved round by round in one process, in CPU time of the process (one
torch thread), and prints the median per form and their ratio:

* ``eager``    -- the model as it runs in the experiments (the embedding in the native kernel where it is built);
* ``compiled`` -- ``torch.compile(model)`` (inductor's CPU C++ code generation, default mode, static shapes).

Before timing it checks that both forms give the same logits and the same gradients. Run::

    OMP_NUM_THREADS=1 python benchmarks/compile_model.py --shapes 32x50,16x200 --embeddings complex-order,tpe

Needs a C++ compiler (inductor builds its kernels on first use; the compile time is printed).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
import torch.nn.functional as F

from compile_probe import _shape  # the same BxL parser (this folder is on sys.path when run as a script)
from complexorder import build_embedding
from complexorder.models import build_classifier


def probe(embedding: str, batch: int, length: int, dim: int, vocab: int, rounds: int) -> str:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, vocab, (batch, length), generator=gen)
    tokens[: batch // 2, length // 2:] = 0  # half the batch padded to half the length
    labels = torch.randint(0, 2, (batch,), generator=gen)
    model = build_classifier("transformer", build_embedding(embedding, vocab, dim, padding_idx=0), 2,
                             nhead=8, dim_feedforward=512, dropout=0.0)
    twin = copy.deepcopy(model)
    forms = {"eager": model, "compiled": torch.compile(twin, dynamic=False)}
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-3) for name, m in forms.items()}

    start = time.perf_counter()
    results = {}
    for name, m in forms.items():
        logits = m(tokens)
        F.cross_entropy(logits, labels).backward()
        results[name] = (logits.detach(), [p.grad.clone() for p in m.parameters()])
        m.zero_grad(set_to_none=True)
    compile_s = time.perf_counter() - start
    (a, ga), (b, gb) = results["eager"], results["compiled"]
    torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
    for x, y in zip(ga, gb):
        torch.testing.assert_close(y, x, rtol=1e-3, atol=1e-5 * max(1.0, float(x.abs().max())))

    def step(name):
        optimizers[name].zero_grad(set_to_none=True)
        F.cross_entropy(forms[name](tokens), labels).backward()
        optimizers[name].step()

    names = list(forms)
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names[k % 2:] + names[:k % 2]:
            t = time.process_time()
            step(name)
            times[name].append(time.process_time() - t)
    ms = {name: 1e3 * statistics.median(v) for name, v in times.items()}
    return (f"| {embedding} | {batch}x{length} | {dim} | {vocab:,} | {ms['eager']:.1f} | {ms['compiled']:.1f} "
            f"| {ms['compiled'] / ms['eager']:.2f} | {compile_s:.0f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="32x50,16x200", help="comma-separated BxL (default: %(default)s)")
    parser.add_argument("--embeddings", default="complex-order,tpe",
                        help="comma-separated embedding names (default: %(default)s)")
    parser.add_argument("--dim", type=int, default=256, help="embedding / model width (default: %(default)s)")
    parser.add_argument("--vocab", type=int, default=20000, help="V (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per form (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        shapes = [_shape(s) for s in args.shapes.split(",")]
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, one thread, median CPU ms of {args.rounds} interleaved training steps")
    print("| embedding | BxL | d | V | eager ms | compiled ms | compiled / eager | compile + check s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for embedding in args.embeddings.split(","):
        for batch, length in shapes:
            print(probe(embedding, batch, length, args.dim, args.vocab, args.rounds), flush=True)


if __name__ == "__main__":
    main()
