"""Markdown report of ``benchmarks/speed.py``: tables, target checks and the findings of one run."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

PYTORCH_PATH = "ours, PyTorch path"
FLOOR_TARGET = 1.3  # issue 7: forward + backward within 1.3x nn.Embedding(V, 2D)
SPEEDUP_TARGET = 2.0  # issue 7: at least 2x faster than the appendix C code


def round_ratios(times: dict[str, list[float]], a: str, b: str) -> list[float]:
    """``time(a) / time(b)`` in each round (paired by round)."""
    return [x / y for x, y in zip(times[a], times[b])]


def ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    """Median over rounds of ``time(a) / time(b)`` (paired by round)."""
    return statistics.median(round_ratios(times, a, b))


def fmt_ms(ts: list[float]) -> str:
    return f"{statistics.median(ts) * 1e3:.1f} ({min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f})"


def fmt_ratio(times: dict[str, list[float]], a: str, b: str) -> str:
    rs = round_ratios(times, a, b)
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"


def _table(header: Sequence[str], rows: list[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    return out + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def _check(value: float, target: float, at_most: bool) -> str:
    ok = value <= target if at_most else value >= target
    return "yes" if ok else f"**no** ({value / target:.2f}x the target)" if at_most else f"**no** ({value:.2f}x)"


def render_embedding(rows: list[dict]) -> list[str]:
    lines = []
    for regime in dict.fromkeys(r["regime"] for r in rows):
        lines += ["", f"### Allocator: {regime}", ""]
        body = []
        for r in (r for r in rows if r["regime"] == regime):
            t = r["times"]
            body.append([r["shape"], r["dim"], f"{r['vocab']:,}", fmt_ms(t["floor"]), fmt_ms(t["ours"]),
                         fmt_ratio(t, "ours", "floor"), fmt_ratio(t, "appendix C", "ours"),
                         fmt_ratio(t, PYTORCH_PATH, "floor"), fmt_ratio(t, PYTORCH_PATH, "ours"),
                         fmt_ratio(t, "ours+theta", "floor"), fmt_ratio(t, "appendix C", "ours+theta"),
                         fmt_ratio(t, "ours sparse", "floor"), fmt_ratio(t, "ours sparse", "floor sparse"),
                         ", ".join(f"{r['fault_mib'][k]:.0f}" for k in ("floor", "ours", "ours+theta"))])
        lines += _table(["BxL", "D", "V", "floor ms", "ours ms", "ours / floor", "appendix C / ours",
                         "PyTorch path / floor", "PyTorch path / ours",
                         "ours+theta / floor", "appendix C / ours+theta", "ours sparse / floor",
                         "ours sparse / floor sparse", "fresh MiB/step floor, ours, ours+theta"], body)
        lines += ["", "Targets (ours = default, no initial phase; ours+theta = the same three tables as appendix C):", ""]
        body = []
        for r in (r for r in rows if r["regime"] == regime):
            t = r["times"]
            body.append([r["shape"], r["dim"], f"{r['vocab']:,}",
                         _check(ratio(t, "appendix C", "ours"), SPEEDUP_TARGET, False),
                         _check(ratio(t, "appendix C", "ours+theta"), SPEEDUP_TARGET, False),
                         _check(ratio(t, "ours", "floor"), FLOOR_TARGET, True),
                         _check(ratio(t, "ours+theta", "floor"), FLOOR_TARGET, True),
                         _check(ratio(t, "ours sparse", "floor"), FLOOR_TARGET, True)])
        lines += _table(["BxL", "D", "V", f">= {SPEEDUP_TARGET:g}x faster than appendix C (ours)", "(ours+theta)",
                         f"<= {FLOOR_TARGET:g}x floor (ours)", "(ours+theta)", "(ours sparse)"], body)
    return lines


def render_layers(rows: list[dict]) -> list[str]:
    body = []
    for r in rows:
        t = r["times"]
        body.append([r["layer"], r["workload"], fmt_ms(t["real D"]), fmt_ms(t["real 2D"]), fmt_ms(t["complex"]),
                     fmt_ms(t["complex shared"]), fmt_ratio(t, "complex", "real D"), fmt_ratio(t, "complex", "real 2D"),
                     fmt_ratio(t, "complex shared", "real D"), fmt_ratio(t, "complex shared", "real 2D")])
    return _table(["layer", "workload", "real D ms", "real 2D ms", "complex ms", "complex shared ms",
                   "complex / real D", "complex / real 2D", "shared / real D", "shared / real 2D"], body)


def render_epoch(rows: list[dict], info: dict) -> list[str]:
    body = []
    per_epoch = info["batches"] / info["timed_batches"]
    for r in rows:
        t = r["times"]
        sec = {name: sum(v) * per_epoch for name, v in t.items()}
        body.append([r["model"], f"{sec['tpe']:.1f}", f"{sec['complex-order']:.1f}",
                     fmt_ratio(t, "complex-order", "tpe"), _check(ratio(t, "complex-order", "tpe"), 1.25, True),
                     fmt_ratio(t, "complex-vanilla", "tpe"), fmt_ratio(t, "complex-order", "complex-vanilla"),
                     fmt_ratio(t, "complex-order shared", "tpe"),
                     f"{sec['tpe sparse']:.1f}", f"{sec['complex-order sparse']:.1f}",
                     fmt_ratio(t, "complex-order sparse", "tpe sparse")])
    return _table(["model", "TPE s/epoch", "complex-order s/epoch", "complex-order / TPE", "<= 1.25x",
                   "complex-vanilla / TPE", "complex-order / complex-vanilla", "complex-order shared / TPE",
                   "TPE sparse s/epoch", "complex-order sparse s/epoch", "sparse: complex-order / TPE"], body)


def render_memory(rows: list[dict]) -> list[str]:
    floor = next(r for r in rows if r["candidate"] == "floor")
    body = [[r["candidate"], f"{r['peak_mib']:.0f}", f"{r['peak_mib'] / floor['peak_mib']:.2f}",
             f"{r['saved_mib']:.0f}", f"{r['grad_mib']:.0f}"] for r in rows]
    return _table(["candidate", "peak MiB above start", "peak / floor", "saved for backward MiB",
                   "gradients MiB"], body)


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def findings(sections: dict) -> list[str]:
    """Plain statements derived from this run's numbers (ranges over shapes), with the reasons."""
    out = []
    emb = sections.get("embedding", [])
    for regime in dict.fromkeys(r["regime"] for r in emb):
        rows = [r for r in emb if r["regime"] == regime]
        get = lambda a, b: [ratio(r["times"], a, b) for r in rows]  # noqa: E731
        out.append(f"- Embedding, {regime}: ours / floor {_span(get('ours', 'floor'))}, ours+theta / floor "
                   f"{_span(get('ours+theta', 'floor'))}, appendix C / ours {_span(get('appendix C', 'ours'))}, "
                   f"appendix C / ours+theta {_span(get('appendix C', 'ours+theta'))}, ours sparse / floor "
                   f"{_span(get('ours sparse', 'floor'))}.")
    if emb:
        get_all = lambda a, b: [ratio(r["times"], a, b) for r in emb]  # noqa: E731
        over = [r for r in emb if ratio(r["times"], "ours", "floor") > FLOOR_TARGET]
        if over:
            listed = "; ".join(
                f"{r['regime']}, {r['shape']} D={r['dim']} V={r['vocab']:,}: "
                f"{ratio(r['times'], 'ours', 'floor'):.2f}x the floor, "
                f"{ratio(r['times'], 'ours', 'floor') / FLOOR_TARGET:.2f}x the target, rounds "
                f"{_span(round_ratios(r['times'], 'ours', 'floor'))}" for r in over)
            out.append(
                f"- The {FLOOR_TARGET}x-floor target is missed by ours in {len(over)} of {len(emb)} measurements: "
                f"{listed}. Where the floor's whole-table fill is small (a small V against many tokens, as 8,192 "
                "tokens over 20k words), what separates ours from it is the arithmetic: 2D sines and cosines per token in "
                "each direction and the second table's rows read again in backward. Ratios this close to the "
                "target move across it from run to run (see the rounds); the file reports this run as measured.")
        else:
            out.append(f"- The {FLOOR_TARGET}x-floor target holds for ours at all {len(emb)} measurements of this run.")
        out += [
            "- What ours is: the native kernel (`complexorder/nn/_wave_kernel.c`; the machine table says whether it "
            "was used). Forward, per token: the `r` and `w` rows gathered once, the phase `w * pos` rounded as the "
            "reference rounds it, sine and cosine by a vectorised Cody-Waite reduction and polynomials in "
            "registers, the interleaved complex row written. Backward: the phasor recomputed (nothing of size "
            "`[B, L, D]` is saved), `dL/dr` and `dL/dw` written into the gradient tables at a word's first token "
            "and added at its next ones, and only the rows no token touched zero-filled at the end.",
            "- Against the floor: `nn.Embedding(V, 2D)` gathers `2D` numbers per token, zero-fills the whole "
            "`[V, 2D]` gradient and adds into it. Ours moves the same bytes (two `[V, D]` tables are one "
            "`[V, 2D]`), re-reads the `r`, `w` rows in backward and computes `2D` sines and cosines per token in "
            "each direction, but skips the zero-fill of the rows it writes and their first read-modify-write; "
            "with large vocabularies (V = 270k, where few rows are touched) the whole-table fill dominates both.",
            f"- `{PYTORCH_PATH}`: the fallback when the kernel is not built (or `COMPLEXORDER_NATIVE=0`), the "
            "earlier fused autograd function: gathers and sines/cosines as whole-tensor PyTorch/NumPy calls and "
            "about nine elementwise passes over `[B, L, D]` that eager PyTorch cannot fuse, the unit phasor saved "
            f"for backward. It takes {_span(get_all(PYTORCH_PATH, 'ours'))}x the native kernel's time "
            f"({_span(get_all(PYTORCH_PATH, 'floor'))}x the floor).",
            "- Why the allocator matters: glibc serves blocks above 32 MB with a fresh `mmap` each time, so "
            "every such output and gradient table is page-faulted in (kernel zero-fill) on every step; the "
            "`fresh MiB/step` column counts it. That cost is the same per byte for ours and the floor and "
            "pulls the ratio towards 1 (V = 270k: gradient tables of 0.3-1.1 GB each). With large blocks kept "
            "in the heap the arithmetic shows.",
            "- Why ours+theta costs more: a third `[V, D]` table (50% more gradient bytes than the floor's) and "
            "one more gather and scatter; at V = 270k the dense gradient fill alone puts it near 1.5x the floor. "
            "The appendix C code has the same three tables, so ours+theta / appendix C is the like-for-like speed-up.",
            "- `sparse=True` drops the `[V, D]` zero-fill: the gradient is the batch's rows only, which is what "
            "a 270k vocabulary needs; against `nn.Embedding(sparse=True)` what remains is the trigonometry and "
            "the second and third tables' rows.",
        ]
    if "layers" in sections:
        rows = sections["layers"]
        get = lambda a, b: [ratio(r["times"], a, b) for r in rows]  # noqa: E731
        out.append(f"- Complex layers: complex / real 2D {_span(get('complex', 'real 2D'))} (a complex product is "
                   f"four real ones: the same multiply-adds as the real layer of twice the width), complex / real D "
                   f"{_span(get('complex', 'real D'))}; share_weights brings it to "
                   f"{_span(get('complex shared', 'real D'))} x real D.")
    if "epoch" in sections:
        rows, _ = sections["epoch"]
        get = lambda a, b: [ratio(r["times"], a, b) for r in rows]  # noqa: E731
        out.append(f"- Epochs: complex-order / complex-vanilla {_span(get('complex-order', 'complex-vanilla'))}: "
                   "encoding word order in the phases costs next to nothing, as the paper says. The gap to TPE "
                   f"(complex-order / TPE {_span(get('complex-order', 'tpe'))}, target 1.25) is the complex "
                   "network: a complex product of width D takes four real products of width D (as here; "
                   "three at the least, by Gauss's trick), so complex layers cost about 3x real ones of the same "
                   "width (section 2), and the embedding has two `[V, D]` tables (r and w) where TPE has one, so "
                   "twice the dense gradient and Adam work. A model whose time is mostly its layers cannot come "
                   "within 1.25x of the real model of the same width. share_weights gives "
                   f"{_span(get('complex-order shared', 'tpe'))} x TPE, sparse tables (SparseAdam) "
                   f"{_span(get('complex-order sparse', 'tpe sparse'))} x sparse TPE.")
    return out


def render(args: argparse.Namespace, command: str, info: dict, load: tuple[str, str], sections: dict,
           elapsed: float) -> str:
    lines = ["# Speed and memory (issue 7)", "",
             f"Written by `{command}` in {elapsed / 60:.1f} minutes, {time.strftime('%Y-%m-%d %H:%M %Z')}.",
             "Every ratio is the median over interleaved rounds (A, B, C, then B, C, A, ...) of paired timings in",
             "this one process and run; the range over rounds is in brackets. Times are CPU time of this process",
             "(user + system, page faults included; one torch thread), median (min-max) in ms: other jobs share",
             "this machine, and wall-clock time would mostly measure them. Load average (1/5/15 min) before:",
             f"{load[0]}, after: {load[1]}. Minutes per section: "
             + ", ".join(f"{k} {v:.1f}" for k, v in sections.get("minutes", {}).items()) + ".", "",
             *_table(["machine", ""], [[k, v] for k, v in info.items()])]
    if "embedding" in sections:
        lines += ["", "## 1. ComplexOrderEmbedding forward + backward", "",
                  "Floor: `nn.Embedding(V, 2D)` (the same output bytes). Appendix C: the paper's code as written "
                  "(three tables, `% (2 pi)` of the phase table and a `[B, L, D]` position tensor every forward). "
                  f"Rounds: {args.rounds}; gradients dropped after every step (as `zero_grad(set_to_none=True)`).",
                  *render_embedding(sections["embedding"])]
    if "layers" in sections:
        lines += ["", "## 2. Complex layers against real ones (forward + backward)", "",
                  "real D: the real layer at the complex layer's width; real 2D: at twice the width "
                  "(the complex input's real numbers; the same multiply-adds as a full complex product).",
                  "", *render_layers(sections["layers"])]
    if "epoch" in sections:
        rows, info_e = sections["epoch"]
        lines += ["", "## 3. Seconds per training epoch, complex-order / TPE (paper Fig. 2)", "",
                  f"MR, {info_e['sentences']} sentences, vocabulary {info_e['vocab']:,} (lower-cased, whitespace "
                  f"tokens), batch {info_e['batch_size']}, Adam (lr 1e-3, gradient clipping 5), D = 300 "
                  f"(Transformer: 256, 8 heads). Timed: {info_e['timed_batches']} of the {info_e['batches']} "
                  f"batches of one epoch ({info_e['rounds']} interleaved rounds of {info_e['per_round']} batches), "
                  "scaled up to the whole epoch. Sparse: `sparse=True` tables with SparseAdam, Adam for the rest.",
                  "", *render_epoch(rows, info_e)]
    if "memory" in sections:
        b, length, dim, vocab = sections["memory_shape"]
        lines += ["", f"## 4. Peak memory of the embedding at L = {length} (B = {b}, D = {dim}, V = {vocab:,})", "",
                  "Method: each candidate runs in a fresh process; after a warm-up step and `malloc_trim(0)` the "
                  "kernel's peak-RSS counter is reset (`/proc/self/clear_refs` = 5) and one forward + backward is run; "
                  "peak = VmHWM - VmRSS before the step (output, saved tensors, gradient tables and transients). "
                  "Saved: bytes of the tensors autograd keeps for backward (parameters excluded), via "
                  "`torch.autograd.graph.saved_tensors_hooks`.", "", *render_memory(sections["memory"])]
    lines += ["", "## What the numbers say", "", *findings(sections)]
    return "\n".join(lines) + "\n"
