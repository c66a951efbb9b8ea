"""Does ``torch.compile`` beat the hand-fused embedding? A side-by-side probe (issue 7).

Times forward + backward of three candidates in one process, interleaved round by round, in CPU
time of this process (one torch thread), and prints the median per candidate and the ratios:

* ``floor``    -- ``nn.Embedding(V, 2D)``, the memory-bound floor of ``benchmarks/speed.py``;
* ``ours``     -- :func:`complexorder.nn.wave.complex_order_embedding` (no initial phase);
* ``compiled`` -- Eq. 5 written plainly (gather, multiply, cos/sin, stack) and passed to
  ``torch.compile`` (inductor's CPU C++ code generation; fused forward and backward).

Before timing it checks that ``compiled`` and ``ours`` agree (outputs and both gradients). Run::

    OMP_NUM_THREADS=1 python benchmarks/compile_probe.py --shapes 32x50,16x512 --dims 300,512 --vocab 20000

Needs a C++ compiler (inductor builds its kernels on first use; the compile time is printed).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from complexorder.nn.wave import complex_order_embedding


def wave(tokens, positions, amplitude, frequency):
    """Eq. 5 without initial phase, as real and imaginary parts in a trailing axis of 2."""
    phase = F.embedding(tokens, frequency) * positions.unsqueeze(-1)
    r = F.embedding(tokens, amplitude)
    return torch.stack((r * torch.cos(phase), r * torch.sin(phase)), -1)


def _shape(text: str) -> tuple[int, int]:
    try:
        b, l = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shapes: expected BxL like 32x50, got {text!r}") from None
    return b, l


def probe(batch: int, length: int, dim: int, vocab: int, rounds: int) -> str:
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (batch, length), generator=gen)
    positions = torch.arange(length, dtype=torch.float32).expand(batch, length)
    amplitude = torch.randn(vocab, dim, generator=gen).requires_grad_()
    frequency = (0.1 * torch.randn(vocab, dim, generator=gen)).requires_grad_()
    floor = torch.nn.Embedding(vocab, 2 * dim)
    compiled = torch.compile(wave, dynamic=False)

    start = time.perf_counter()
    weights = torch.randn(batch, length, dim, 2, generator=gen)
    grads = []
    for fn in (lambda: torch.view_as_real(complex_order_embedding(tokens, positions, amplitude, frequency)),
               lambda: compiled(tokens, positions, amplitude, frequency)):
        out = fn()
        (out * weights).sum().backward()
        grads.append((out.detach(), amplitude.grad, frequency.grad))
        amplitude.grad = frequency.grad = None
    compile_s = time.perf_counter() - start
    for a, b in zip(*grads):
        # float32 sums in another order: tolerance relative to the largest entry (grad of w grows with pos)
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5 * float(a.abs().max()))

    def step(fn, params):
        fn().sum().backward()
        for p in params:
            p.grad = None

    candidates = {
        "floor": lambda: step(lambda: floor(tokens), [floor.weight]),
        "ours": lambda: step(lambda: torch.view_as_real(
            complex_order_embedding(tokens, positions, amplitude, frequency)), [amplitude, frequency]),
        "compiled": lambda: step(lambda: compiled(tokens, positions, amplitude, frequency),
                                 [amplitude, frequency]),
    }
    names = list(candidates)
    times = {name: [] for name in names}
    for k in range(rounds):
        for name in names[k % 3:] + names[:k % 3]:
            t = time.process_time()
            candidates[name]()
            times[name].append(time.process_time() - t)
    ms = {name: 1e3 * statistics.median(v) for name, v in times.items()}
    return (f"| {batch}x{length} | {dim} | {vocab:,} | {ms['floor']:.1f} | {ms['ours']:.1f} | {ms['compiled']:.1f} "
            f"| {ms['ours'] / ms['floor']:.2f} | {ms['compiled'] / ms['floor']:.2f} "
            f"| {ms['compiled'] / ms['ours']:.2f} | {compile_s:.0f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="32x50,16x512", help="comma-separated BxL (default: %(default)s)")
    parser.add_argument("--dims", default="300,512", help="comma-separated D (default: %(default)s)")
    parser.add_argument("--vocab", type=int, default=20000, help="V (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per candidate (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        shapes = [_shape(s) for s in args.shapes.split(",")]
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    dims = [int(d) for d in args.dims.split(",")]
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, one thread, median CPU ms of {args.rounds} interleaved rounds")
    print("| BxL | D | V | floor ms | ours ms | compiled ms | ours / floor | compiled / floor | compiled / ours | compile + check s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for batch, length in shapes:
        for dim in dims:
            print(probe(batch, length, dim, args.vocab, args.rounds), flush=True)


if __name__ == "__main__":
    main()
