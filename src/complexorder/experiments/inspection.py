"""``complexorder inspect``: what a trained complex-order classifier learned (paper appendix D).

* δ_j = mean_d |ω_{j,d}|, a word's sensitivity to position; its density (Fig. 3, PNG);
* the 50 words with the greatest and the 50 with the smallest δ (Table 7), printed and saved;
* one word's embedding dimensions as waves over positions, real parts (Fig. 1, PNG).

Everything comes from the checkpoint, which carries the model config and vocabulary.
"""

from __future__ import annotations

import difflib
import io
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from ..checkpoint import atomic_write_bytes, atomic_write_text, check_writable, load_checkpoint
from ..data.vocab import PAD_TOKEN, UNK_TOKEN
from ..embeddings import ComplexOrderEmbedding, sinusoidal_frequencies
from ..nn.functional import as_integer, positive_int
from .classification import build_model_from_config

__all__ = ["load_classifier", "position_sensitivity", "extreme_words", "plot_density", "plot_word_waves",
           "inspect_checkpoint"]


def load_classifier(path: str | Path):
    """``(model, checkpoint)`` of a classifier checkpoint written by ``complexorder classify/ablate``."""
    ck = load_checkpoint(path, "classifier", required=("vocab", "config", "label_names", "model_state"),
                         writer="complexorder classify --checkpoint-dir")
    for key in ("vocab", "label_names"):  # a list of other things failed later naming no file ("expected str")
        if not (isinstance(ck[key], list) and all(isinstance(w, str) for w in ck[key])):
            raise ValueError(f"checkpoint {path}: its {key!r} entry is not a list of strings; expected the one "
                             "`complexorder classify` stores")
    try:
        with torch.random.fork_rng(devices=[]):  # its weights are drawn, then replaced: the caller's RNG is left alone
            model = build_model_from_config(ck["config"], len(ck["vocab"]), len(ck["label_names"]),
                                            ck.get("max_positions", 512))
    except KeyError as exc:
        raise ValueError(f"checkpoint {path}: its config has no {exc.args[0]!r} entry (written by another "
                         "version?); expected the config `complexorder classify` stores") from None
    except (TypeError, ValueError, AttributeError) as exc:  # an unknown setting, a name, a config of another shape
        raise ValueError(f"checkpoint {path}: its config cannot build a classifier ({exc}); expected the config "
                         "`complexorder classify` stores") from None
    try:
        model.load_state_dict(ck["model_state"])
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        detail = next((line.strip() for line in first[1:] if line.strip()), first[0] if first else "")
        raise ValueError(f"checkpoint {path}: its weights do not match its config ({detail})") from None
    return model.eval(), ck


def position_sensitivity(embedding: ComplexOrderEmbedding) -> torch.Tensor:
    """δ_j = (1/D) Σ_d |ω_{j,d}| for every word ``j`` (``[V]``)."""
    w = embedding.frequency.detach().abs().expand(embedding.num_embeddings, embedding.embedding_dim)
    return w.mean(1)


#: Vocabulary entries that are not words: left out of Table 7 and its counts.
SPECIAL_TOKENS = ("<pad>", "<unk>")


def extreme_words(delta: torch.Tensor, vocab: list[str], k: int = 50, skip=SPECIAL_TOKENS):
    """The ``k`` words with the greatest δ (descending) and the ``k`` with the smallest (ascending)."""
    keep = [i for i, w in enumerate(vocab) if w not in skip]
    order = sorted(keep, key=lambda i: float(delta[i]))
    greatest = [(vocab[i], float(delta[i])) for i in reversed(order[-k:])]
    smallest = [(vocab[i], float(delta[i])) for i in order[:k]]
    return greatest, smallest


def _save_figure(fig, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    atomic_write_bytes(path, buffer.getvalue())


def _figure(figsize: tuple[float, float]):
    """A figure drawn by Agg that pyplot does not know: ``matplotlib.use("Agg")`` and ``pyplot`` replaced a
    notebook's backend (its inline figures) and kept every figure open until closed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def plot_density(delta: torch.Tensor, path: str | Path, title: str = "") -> None:
    """Fig. 3: density of δ_j (histogram and Gaussian kernel density estimate), a PNG at ``path``.

    Args:
        delta: the words' δ_j (:func:`position_sensitivity`, special tokens left out).
        path: the PNG file to write.
        title: the plot's title (default: "Distribution of the words' mean absolute frequency").
    """
    from scipy.stats import gaussian_kde

    values = delta.detach().cpu().numpy().astype(np.float64)  # a GPU embedding's δ too
    fig, ax = _figure((6, 3.5))
    ax.hist(values, bins=60, density=True, alpha=0.35, color="tab:blue", label="histogram")
    if values.std() > 0:
        xs = np.linspace(values.min(), values.max(), 400)
        ax.plot(xs, gaussian_kde(values)(xs), color="tab:blue", label="kernel density")
    ax.set_xlabel(r"$\delta_j = \frac{1}{D}\sum_d |\omega_{j,d}|$ (higher: more position-sensitive)")
    ax.set_ylabel("density")
    ax.set_title(title or "Distribution of the words' mean absolute frequency")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save_figure(fig, Path(path))


def plot_word_waves(embedding: ComplexOrderEmbedding, word_id: int, word: str, path: str | Path,
                    dims: list[int] | None = None, max_position: int = 40) -> list[int]:
    """Fig. 1: Re f_d(j, pos) = r_{j,d} cos(ω_{j,d} pos + θ_{j,d}) over positions for a few dimensions, a PNG.

    Args:
        embedding: the trained complex-order embedding.
        word_id: the word's id in the vocabulary; ``word``: its text, for the title.
        path: the PNG file to write.
        dims: the dimensions to draw (default: the slowest, a middle and the fastest |ω| of the word).
        max_position: the last position drawn.

    Returns:
        The dimensions drawn.
    """
    D = embedding.embedding_dim
    r = embedding.amplitude.detach().expand(embedding.num_embeddings, D)[word_id]
    w = embedding.frequency.detach().expand(embedding.num_embeddings, D)[word_id]
    theta = (embedding.initial_phase.detach()[word_id] if embedding.initial_phase is not None else torch.zeros(D))
    if dims is None:  # three dimensions with different periods: the slowest, a middle and the fastest |ω|
        order = torch.argsort(w.abs(), stable=True).tolist()
        dims = [order[0], order[len(order) // 2], order[-1]]
    bad = [d for d in dims if not 0 <= d < D]
    if bad:
        raise ValueError(f"--dims: dimension {bad[0]} is outside 0..{D - 1}")
    fig, ax = _figure((7, 3.5))
    xs = np.linspace(0, max_position, 800)
    for d in dims:
        ys = float(r[d]) * np.cos(float(w[d]) * xs + float(theta[d]))
        line, = ax.plot(xs, ys, label=f"dim {d}: r={float(r[d]):.2f}, period={2 * np.pi / max(abs(float(w[d])), 1e-12):.1f}")
        ints = np.arange(0, max_position + 1)
        ax.plot(ints, float(r[d]) * np.cos(float(w[d]) * ints + float(theta[d])), "o", ms=3, color=line.get_color())
    ax.set_xlabel("position")
    ax.set_ylabel("real part of the embedding")
    ax.set_title(f"'{word}' as waves over positions (dots: integer positions)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save_figure(fig, Path(path))
    return dims


def inspect_checkpoint(path: str | Path, out_dir: str | Path, word: str | None = None, k: int = 50,
                       dims: list[int] | None = None, log=print) -> dict:
    """Write ``delta_density.png`` (Fig. 3), ``table7.md`` (Table 7) and, with ``word``, ``waves_<word>.png``
    (Fig. 1) to ``out_dir``, as ``complexorder inspect`` does.

    Args:
        path: a classifier checkpoint with a complex-order embedding (``classify``/``ablate`` with a
            ``checkpoint_dir``).
        out_dir: the directory the files go into (created when missing).
        word: a word of the checkpoint's vocabulary to draw as waves over positions (None: no wave plot).
        k: how many words each list of Table 7 holds (the greatest and the smallest δ; a positive integer).
        dims: the embedding dimensions of the wave plot (default: the word's slowest, a middle and its fastest
            frequency); it needs ``word`` (without it, a one-line ``ValueError``).
        log: takes the lines reported (the two word lists, notes); default ``print``, ``lambda *_: None``
            silences them.

    Returns:
        ``{"density": Path, "table": Path}`` of the files written, and with ``word`` also ``"waves"`` (the PNG's
        path) and ``"dims"`` (the dimensions drawn, a list of ints).
    """
    k = positive_int(k, "k", " (words per list; --top)")  # 0 listed every word as greatest, 2.5 a TypeError
    if dims is not None and word is None:  # it was ignored without a word (the CLI refuses it)
        raise ValueError("dims chooses the dimensions of the wave plot of word, and no word is given; give word "
                         "too, or leave dims out")
    if dims is not None:  # a string was walked character by character, [] drew an empty plot
        listed = isinstance(dims, Iterable) and not isinstance(dims, (str, bytes))
        numbers = [as_integer(d) for d in dims] if listed else []
        if not numbers or None in numbers:
            raise ValueError(f"dims must be a non-empty list of embedding dimensions (integers), got {dims!r}")
        dims = cast("list[int]", numbers)
    model, ck = load_classifier(path)
    emb = model.embedding
    if not isinstance(emb, ComplexOrderEmbedding):
        raise ValueError(f"checkpoint {path} holds a classifier with a {ck['config']['embedding']!r} embedding; "
                         "frequencies exist only for 'complex-order'")
    vocab = ck["vocab"]
    word_id = None
    if word is not None:
        if word in (PAD_TOKEN, UNK_TOKEN):
            raise ValueError(f"word {word!r} is a special token of the vocabulary, not a word; choose a word")
        if word not in vocab:
            words: list[str] | torch.Tensor  # reused below for the words' δ and how many are near the start
            near: list[str] | int
            words = [w for w in vocab if w not in SPECIAL_TOKENS]
            near = difflib.get_close_matches(word, words, n=5)
            if word.lower() in words:  # the vocabulary is lower-cased (Kim 2014): "Good" is "good", first
                near = [word.lower()] + [w for w in near if w != word.lower()][:4]
            raise ValueError(f"word {word!r} is not in the checkpoint's vocabulary ({len(words):,} words, lower-cased)"
                             + (f"; near matches: {', '.join(near)}" if near else ""))
        word_id = vocab.index(word)
    bad = [d for d in dims or [] if not 0 <= d < emb.embedding_dim]
    if bad:  # before anything is written
        raise ValueError(f"--dims: dimension {bad[0]} is outside 0..{emb.embedding_dim - 1}")
    out_dir = Path(out_dir)
    check_writable(out_dir, "--out-dir", directory=True)
    if not bool(torch.isfinite(emb.frequency).all()):  # a run whose training diverged; the plot's error named no file
        raise ValueError(f"checkpoint {path}: its frequencies hold NaN or infinite values (a training that diverged?); "
                         "nothing to inspect")
    delta = position_sensitivity(emb)
    note = ""
    if emb.frequency.shape[0] == 1:
        note = "frequencies are shared by all words (word-sharing): δ is the same for every word"
    greatest, smallest = extreme_words(delta, vocab, k)
    n_words = len([w for w in vocab if w not in SPECIAL_TOKENS])
    overlap = (f"the vocabulary holds {n_words:,} words, fewer than twice --top {k}, so the two lists share "
               f"{max(0, len(greatest) + len(smallest) - n_words):,} words" if 2 * k > n_words else "")
    plot_density(delta[2:], out_dir / "delta_density.png", f"δ_j over {len(vocab) - 2} words ({ck['config']['dataset']})")
    fmt = lambda pairs: " ".join(w for w, _ in pairs)  # noqa: E731
    table = ["# Table 7: words by position sensitivity δ_j = mean_d |ω_j,d|", "",
             f"Checkpoint: `{path}` ({ck['config']['dataset']}, {ck['config']['model']}, "
             f"test accuracy {ck.get('test_accuracy', float('nan')):.4f}).", "",
             "Produced by `complexorder inspect " + " ".join(shlex.quote(a) for a in
                 [str(path), "--out-dir", str(out_dir)] + (["--word", word] if word else [])
                 + (["--top", str(k)] if k != 50 else [])) + "`.", ""]
    if overlap:
        table += [f"Note: {overlap}.", ""]
    if note:
        table += [f"Note: {note}.", ""]
    elif (tuple(emb.frequency.shape) == (emb.num_embeddings, emb.embedding_dim)
          and ck["config"].get("embedding_options", {}).get("frequency_init", "sinusoidal") == "sinusoidal"):
        start = float(sinusoidal_frequencies(emb.embedding_dim).abs().mean())
        words = delta[[i for i, w in enumerate(vocab) if w not in SPECIAL_TOKENS]]
        near = int(((words - start).abs() < 1e-3).sum())
        table += [f"Every word starts from the sinusoidal frequencies, δ = {start:.4f}; {near:,} of {len(words):,} "
                  "words end within 0.001 of it (mostly rare words, which few updates reach), so the "
                  "smallest-δ list is dominated by near-ties; the greatest-δ list is what training moved.", ""]
    table += ["| | words |", "|---|---|",
              f"| greatest δ, descending | {fmt(greatest)} |", f"| smallest δ, ascending | {fmt(smallest)} |", "",
              "| rank | greatest | δ | smallest | δ |", "|---:|---|---:|---|---:|"]
    for i, ((gw, gd), (sw, sd)) in enumerate(zip(greatest, smallest), 1):
        table.append(f"| {i} | {gw} | {gd:.4f} | {sw} | {sd:.4f} |")
    atomic_write_text(out_dir / "table7.md", "\n".join(table) + "\n")
    log(f"greatest δ: {fmt(greatest)}")
    log(f"smallest δ: {fmt(smallest)}")
    for line in (overlap, note):
        if line:
            log(f"note: {line}")
    written: dict[str, Any] = {"density": out_dir / "delta_density.png", "table": out_dir / "table7.md"}
    if word_id is not None:
        safe = "".join(c if c.isalnum() else "_" for c in cast(str, word))  # word_id: a word was given
        written["waves"] = out_dir / f"waves_{safe}.png"
        written["dims"] = plot_word_waves(emb, word_id, cast(str, word), written["waves"], dims)
    return written
