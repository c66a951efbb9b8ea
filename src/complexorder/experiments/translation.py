"""Machine translation (paper Sec. 3.2, Table 5): training, greedy and beam search, BLEU.

The model (:class:`~complexorder.models.seq2seq.TransformerSeq2Seq`) returns logits; everything
else lives here: label-smoothed cross-entropy, Adam with an inverse-square-root warm-up, gradient
clipping, atomic per-epoch checkpoints that a restarted run resumes from, checkpoint averaging,
batched incremental decoding and sacrebleu scoring.

A run directory holds ``last.pt`` (model, optimiser, progress, RNG: what a resumed run needs),
``epoch<N>.pt`` (weights of the last ``keep_last`` epochs, for evaluation and averaging) and
``log.jsonl`` (one line per epoch).
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from sacrebleu.metrics import BLEU
from torch import Tensor
from tqdm.auto import tqdm

from ..checkpoint import (append_jsonl, check_finite_weights, check_results_file, check_text_output, check_writable,
                          drop_records_after, is_torch_file, load_checkpoint, same_file, save_checkpoint)
from ..config import (FLOAT32_MAX, builtin_configs, check_number, check_seed, config_from_dict, config_to_dict,
                      merge_overrides, overrides_dict, plain_numbers, read_extended_toml)
from ..environment import bars_off, resolve_device, rng_state, set_rng_state
from ..errors import naming_out_of_memory
from ..data.multi30k import (BOS, EOS, PAD, UNK, build_tokenizer, filter_training_pairs, read_parallel, split_files,
                             tokenizer_from_state)
from ..models.seq2seq import Seq2SeqConfig, TransformerSeq2Seq, reorder_cache
from ..models.tied import tied_pairs
from ..nn.functional import as_integer
from .training import (EMBEDDING_ATTRIBUTES, check_finite_loss, count_parameters, cpu_state_dict, device_of,
                       generator_devices, parameter_groups, remove_stale_checkpoint_temporaries, run_directory_lock,
                       scale_frequency_lr, seed_generators)

__all__ = ["DataConfig", "TrainConfig", "DecodeConfig", "TranslationConfig", "packaged_configs", "resolve_config",
           "inverse_sqrt_lr", "make_batches", "collate", "train_translation", "load_translator",
           "average_checkpoints", "epoch_checkpoints", "greedy_search", "beam_search", "translate_sentences", "corpus_bleu",
           "evaluate_split", "count_unknown_words", "unknown_words_note"]

CHECKPOINT_KIND = "translation"


@dataclass
class DataConfig:
    """Pre-processing: ``"bpe"`` (joint sentencepiece, ``vocab_size``) or ``"word"`` (lower-cased words).

    ``max_tokens`` drops longer training pairs (never evaluation input); ``train_limit`` keeps the
    first N training pairs (0: all; for smoke tests), and the run's log says how many of how many.
    """

    preprocessing: str = "bpe"
    vocab_size: int = 8000
    min_frequency: int = 2
    max_tokens: int = 100
    src_lang: str = "en"
    tgt_lang: str = "de"
    train_limit: int = 0

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class TrainConfig:
    """Optimisation: the budget is ``max_steps`` (0: none) and ``max_epochs``, whichever ends first.

    ``frequency_lr_scale`` multiplies the learning rate of the complex-order frequencies (the
    parameters named ``frequency``) at every step of the schedule; 1 is the paper's setting.
    """

    batch_size: int = 64
    max_epochs: int = 30
    max_steps: int = 0
    lr: float = 5e-4
    warmup_steps: int = 4000
    betas: tuple[float, ...] = (0.9, 0.98)
    adam_eps: float = 1e-9
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    frequency_lr_scale: float = 1.0
    seed: int = 1
    keep_last: int = 5
    save_every_steps: int = 0

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class DecodeConfig:
    """Search: ``beam_size`` 1 is greedy; hypotheses end by ``max_len_a * source length + max_len_b``."""

    beam_size: int = 5
    length_penalty: float = 1.0
    max_len_a: float = 1.5
    max_len_b: int = 10
    batch_size: int = 64

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class TranslationConfig:
    name: str = "translation"
    model: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)


# --------------------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------------------


def packaged_configs() -> list[str]:
    """Names of the configs shipped in ``complexorder/configs/translation``."""
    return builtin_configs("translation")


def resolve_config(name_or_path: str | Path, overrides: Mapping[str, Any] | Sequence[str] | None = None, *,
                   option: str = "overrides") -> TranslationConfig:
    """A packaged config by name, or a TOML file, with ``overrides`` laid over it.

    ``overrides`` is a mapping of dotted keys to values (``{"train.lr": 1e-3, "name": "toy"}``) or a sequence of
    ``"KEY=VALUE"`` strings as ``translate train --set`` takes them (``["train.lr=1e-3"]``, values read as TOML,
    else as bare strings); a bare string is a ``TypeError``. Unknown keys and values of the wrong type are one-line
    ``ValueError`` errors naming the key as given: ``overrides['train.lrr']: unknown key 'lrr' in [train]; ...``
    (``option`` is the name they go by; the command line passes ``"--set"``, and its errors say ``--set train.lrr``).
    A TOML file without a ``name`` (which is not inherited through ``extends``) is named after the file (``my.toml``:
    ``my``), as ``classify`` names a grid file, so that two such files do not share ``runs/translation/translation``.
    """
    # KEY=VALUE, not SECTION.KEY=VALUE: the config's name is a top-level key (name=toy)
    sets = overrides_dict(overrides, name=option, form="KEY=VALUE", example="train.max_steps=2000", sections=False)
    path = Path(name_or_path)
    if not path.is_file():
        if str(name_or_path) not in packaged_configs():
            raise FileNotFoundError(f"config {str(name_or_path)!r} (--config) is neither a file nor a packaged config; "
                                    f"packaged: {', '.join(packaged_configs())}")
        path = Path(str(resources.files("complexorder") / "configs" / "translation" / f"{name_or_path}.toml"))
    data = read_extended_toml(path, "translation")
    data.setdefault("name", path.stem)  # stop 81: every unnamed file was "translation", sharing one run directory
    if sets:
        data = merge_overrides(data, sets, TranslationConfig, option)
    return config_from_dict(data, TranslationConfig, where=str(path))


# --------------------------------------------------------------------------------------
# Data: encoding and batches
# --------------------------------------------------------------------------------------


def _encode(tokenizer, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    return [(tokenizer.encode(s), tokenizer.encode(t)) for s, t in pairs]


def _share(unknown: int, total: int) -> str:
    return f"{unknown / max(1, total):.1%} ({unknown:,} of {total:,})"


def _unknown_report(tokenizer, config: "TranslationConfig", train: Sequence[tuple[Sequence[int], Sequence[int]]],
                    valid: Sequence[tuple[Sequence[int], Sequence[int]]]) -> str:
    """How many source and target tokens of the (kept) training and the validation pairs the word vocabulary
    reads as ``<unk>``: one log line."""
    counts = []
    for examples in (train, valid):
        for side in (0, 1):
            counts.append((sum(list(e[side]).count(UNK) for e in examples), sum(len(e[side]) for e in examples)))
    return (f"word vocabulary {tokenizer.vocab_size:,} (min_frequency {config.data.min_frequency}): <unk> stands for "
            f"{_share(*counts[0])} of training source tokens and {_share(*counts[1])} of target tokens, "
            f"{_share(*counts[2])} of validation source tokens and {_share(*counts[3])} of target tokens")


def count_unknown_words(tokenizer, sentences: Sequence[str]) -> tuple[int, int]:
    """``(unknown, words)``: source words that the word vocabulary reads as ``<unk>``, and all words, of
    ``sentences``; ``(0, 0)`` for BPE (byte fall-back: nothing is unknown)."""
    if getattr(tokenizer, "kind", "bpe") != "word":
        return 0, 0
    encoded = [tokenizer.encode(s) for s in sentences]
    return sum(ids.count(UNK) for ids in encoded), sum(len(ids) for ids in encoded)


def unknown_words_note(unknown: int, words: int, where: str) -> str:
    """The note ``translate run`` and ``translate eval`` print when source words are read as ``<unk>``."""
    return (f"note: {unknown:,} of {words:,} source words ({unknown / max(1, words):.1%}) of {where} are not in the "
            f"checkpoint's word vocabulary and are read as <unk>")


def make_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None) -> list[list[int]]:
    """Index batches of similar lengths. With ``generator``: shuffled, sorted within pools of 50 batches, shuffled."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = torch.randperm(len(lengths), generator=generator).tolist() if generator is not None else \
        list(range(len(lengths)))
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    if generator is not None:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def _pad(rows: Sequence[Sequence[int]]) -> Tensor:
    out = torch.full((len(rows), max(1, max(len(r) for r in rows))), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.as_tensor(r, dtype=torch.long)
    return out


def collate(examples: Sequence[tuple[Sequence[int], Sequence[int]]]) -> tuple[Tensor, Tensor, Tensor]:
    """``(src + </s>, <s> + tgt, tgt + </s>)`` right-padded: ``src [B, Ls]``, ``tgt_in``/``tgt_out [B, Lt]``."""
    src = _pad([list(s) + [EOS] for s, _ in examples])
    tgt_in = _pad([[BOS] + list(t) for _, t in examples])
    tgt_out = _pad([list(t) + [EOS] for _, t in examples])
    return src, tgt_in, tgt_out


def inverse_sqrt_lr(step: int, peak: float, warmup: int) -> float:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then ``peak * sqrt(warmup / step)`` (step from 1)."""
    if warmup <= 0:
        return peak
    return peak * min(step / warmup, math.sqrt(warmup / step))


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------


def _loss(model, batch, label_smoothing: float, with_nll: bool = False) -> tuple[Tensor, Tensor | None, int]:
    """Label-smoothed cross-entropy per target token (and the summed NLL when asked)."""
    device = device_of(model)
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    logits = model(src, tgt_in).flatten(0, 1)
    target = tgt_out.flatten()
    loss = F.cross_entropy(logits, target, ignore_index=PAD, label_smoothing=label_smoothing)
    nll = F.cross_entropy(logits, target, ignore_index=PAD, reduction="sum") if with_nll else None
    return loss, nll, int((target != PAD).sum())


@torch.no_grad()
def _validation_loss(model, examples, batch_size: int, label_smoothing: float) -> dict:
    was = model.training
    model.eval()
    total, nll, tokens = 0.0, 0.0, 0
    for idx in make_batches([len(t) for _, t in examples], batch_size):
        loss, batch_nll, n = _loss(model, collate([examples[i] for i in idx]), label_smoothing, True)
        total, nll, tokens = total + loss.item() * n, nll + cast(Tensor, batch_nll).item(), tokens + n
    model.train(was)
    return {"valid_loss": total / max(1, tokens), "valid_ppl": math.exp(min(50.0, nll / max(1, tokens)))}


#: Settings a resumed run may change: the budget, checkpoint keeping and decoding.
RESUMABLE_CHANGES = ("train.max_steps", "train.max_epochs", "train.save_every_steps", "train.keep_last", "decode.")


def _config_differences(a: dict, b: dict, prefix: str = "", ignore: tuple[str, ...] = (),
                        names: tuple[str, str] | None = ("in the checkpoint", "asked")) -> list[str]:
    """``"key: A NAME_A, B NAME_B"`` for each setting that differs; ``names`` say where ``a`` and ``b`` come from
    (``None``: ``"key: A → B"``, the caller saying which is which)."""
    diffs = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if ignore and (prefix + key).startswith(ignore):
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            diffs += _config_differences(x, y, f"{prefix}{key}.", ignore, names)
        elif x != y:
            diffs.append(f"{prefix}{key}: {x!r} → {y!r}" if names is None else
                         f"{prefix}{key}: {x!r} {names[0]}, {y!r} {names[1]}")
    return diffs


def epoch_checkpoints(run_dir: Path) -> list[Path]:
    """The run's per-epoch checkpoints ``epochN.pt``, oldest first (other files, e.g. ``epoch_avg.pt``, are not)."""
    found = [(int(m.group(1)), p) for p in run_dir.glob("epoch*.pt")
             if (m := re.fullmatch(r"epoch(\d+)", p.stem))]
    return [p for _, p in sorted(found)]


def _prune(run_dir: Path, keep_last: int) -> None:
    epochs = epoch_checkpoints(run_dir)
    for path in epochs[:-keep_last] if keep_last > 0 else []:
        path.unlink()


def _pairs_signature(pairs: Sequence[tuple[str, str]]) -> dict:
    """Number and SHA-256 of the training pairs a run reads (after ``data.train_limit``), kept in its
    checkpoints so that a resume on other data is refused rather than silently trained on."""
    digest = hashlib.sha256()
    for src, tgt in pairs:
        digest.update(src.encode("utf-8") + b"\t" + tgt.encode("utf-8") + b"\n")
    return {"pairs": len(pairs), "sha256": digest.hexdigest()}


def _check_settings(config: TranslationConfig) -> None:
    """One-line errors for settings out of range, before the tokenizer trains (never a silent 0-step run)."""
    dc, tc = config.data, config.train
    at_least = [("data.max_tokens", dc.max_tokens, 1, ""), ("data.train_limit", dc.train_limit, 0, " (0: all pairs)"),
                ("train.batch_size", tc.batch_size, 1, ""), ("train.max_epochs", tc.max_epochs, 1, ""),
                ("train.max_steps", tc.max_steps, 0, " (0: no limit)"),
                ("train.keep_last", tc.keep_last, 0, " (0: keep all)"),
                ("train.save_every_steps", tc.save_every_steps, 0, " (0: once per epoch)"),
                ("train.warmup_steps", tc.warmup_steps, 0, " (0: no warm-up)"),
                ("data.min_frequency", dc.min_frequency, 0, "")]
    if dc.preprocessing == "bpe":  # vocab_size is the BPE's; the word vocabulary ignores it
        at_least.insert(0, ("data.vocab_size", dc.vocab_size, 1, ""))
    for key, value, low, meaning in at_least:
        if value < low:
            raise ValueError(f"{key} must be >= {low}{meaning}, got {value}")
    check_seed("train.seed", tc.seed)
    if not config.name.strip() or any(c in config.name for c in "/\\\0") or config.name in (".", ".."):
        raise ValueError(f"name must be a plain name without '/' (it names the default run directory "
                         f"runs/translation/NAME), got {config.name!r}")
    check_number("train.lr", tc.lr, low=0.0, high=FLOAT32_MAX, low_open=True,
                 meaning=" (Adam keeps it in float32)")
    check_number("train.label_smoothing", tc.label_smoothing, low=0.0, high=1.0, high_open=True)
    check_number("train.weight_decay", tc.weight_decay, low=0.0)
    check_number("train.clip_norm", tc.clip_norm, low=0.0, meaning=" (0: no clipping)")
    check_number("train.adam_eps", tc.adam_eps, low=0.0, low_open=True)
    check_number("train.frequency_lr_scale", tc.frequency_lr_scale, low=0.0, meaning=" (0 freezes the frequencies)")
    if len(tc.betas) != 2:
        raise ValueError(f"train.betas must be two numbers [beta1, beta2], each in [0, 1), got {list(tc.betas)}")
    for i, beta in enumerate(tc.betas):
        check_number(f"train.betas[{i}]", beta, low=0.0, high=1.0, high_open=True)
    check_decode(config.decode)


#: the largest |length_penalty|: 700 overflowed ``length ** length_penalty`` (an OverflowError traceback)
MAX_LENGTH_PENALTY = 10.0


#: The most output tokens per source token a search may allow (``max_len_a``): beyond, ``a * length`` overflowed
#: the length limits' int64 (1e300 gave garbage limits), and no translation is a thousand times its source.
MAX_LEN_A = 1000.0
#: The most output tokens a search may allow beyond ``max_len_a`` x the source length (``max_len_b``), likewise.
MAX_LEN_B = 1_000_000


def check_decode(dc: DecodeConfig, where: str = "decode") -> None:
    """One-line errors for search settings that cannot give a translation; checked when training starts, so that
    a checkpoint never carries them, and again before decoding (:func:`translate_sentences`, with the command
    line's changes applied)."""
    if not isinstance(dc, DecodeConfig):
        raise TypeError(f"{where} must be a DecodeConfig, got {type(dc).__name__}")
    _check_search(asdict(dc), f"{where}.")


def _as_real(value: Any) -> Any:
    """A NumPy real or a one-element real tensor as a Python float (the search computes with them as such);
    anything else (a bool, a string) unchanged, for the check to name."""
    if isinstance(value, Tensor) and value.numel() == 1 and not (value.is_complex() or value.dtype == torch.bool):
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


def _check_search(settings: dict[str, Any], prefix: str = "") -> None:
    """The checks of :func:`check_decode` for the settings given (DecodeConfig's fields by name), each named
    ``prefix + name``: a config's ``decode.beam_size`` and the search functions' ``beam_size`` share them."""
    for key, meaning in (("beam_size", ""), ("batch_size", ""),
                         ("max_len_b", " (output tokens allowed beyond max_len_a x source length)")):
        if key not in settings:
            continue
        value = settings[key]
        if as_integer(value) is None:  # 2.5 and True failed inside torch (repeat_interleave, range)
            raise TypeError(f"{prefix}{key} must be an integer, at least 1{meaning}, got {value!r}")
        if value < 1:
            raise ValueError(f"{prefix}{key} must be at least 1{meaning}, got {value}")
        if key == "max_len_b" and value > MAX_LEN_B:  # 10**30 overflowed the length limits' int64
            raise ValueError(f"{prefix}max_len_b must be at most {MAX_LEN_B:,}{meaning}, got {value}")
    settings = {k: _as_real(v) for k, v in settings.items()}  # np.float32(0.6) and tensor(0.6) decode as before
    if "length_penalty" in settings:
        check_number(f"{prefix}length_penalty", settings["length_penalty"], low=-MAX_LENGTH_PENALTY,
                     high=MAX_LENGTH_PENALTY, meaning=" (hypotheses are ranked by log p / length ** length_penalty; "
                                                      "beyond this the power overflows for long outputs)")
    if "max_len_a" in settings:
        check_number(f"{prefix}max_len_a", settings["max_len_a"], low=0.0, high=MAX_LEN_A,  # 1e300 overflowed int64
                     meaning=" (output tokens per source token)")


#: How errors name the run directory: the Python argument and the option of ``translate train``.
RUN_DIR = "run_dir (--run-dir)"


def train_translation(config: TranslationConfig, run_dir: str | Path, data_dir: str | Path | None = None, *,
                      progress: bool = True, log: Callable[[str], None] = print,
                      device: str | torch.device | None = None) -> dict:
    """Train (or resume, when ``run_dir/last.pt`` exists) and return a summary of the run.

    Resuming needs the same config; a different one (another model variant, say) is a one-line
    error naming the differences. The tokenizer is trained on the training split only.
    ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (default: a GPU when torch sees one); checkpoints
    hold CPU weights (the optimiser state is mapped to the CPU when loaded). The run is seeded with
    ``train.seed``; the caller's global random state (torch's CPU generator, and the GPU's when training on one) is
    restored afterwards.

    Returns:
        A summary of what was trained (what ``translate train`` prints as JSON): ``name``, ``variant``,
        ``parameters``, ``step`` (the steps trained so far, a resumed run's earlier ones included; also as ``steps``,
        the name :func:`~complexorder.experiments.language_model.train_language_model` uses), ``epochs`` (an int:
        the epochs trained, the last one counted even when ``train.max_steps`` stopped it part-way;
        ``train_language_model``'s ``epochs`` is a float), ``epoch_complete`` (whether that last epoch was finished),
        ``train_seconds``, ``train_cpu_seconds`` and ``budget_reached`` (``train.max_steps`` or ``train.max_epochs``
        reached: a further call with the same config trains nothing).
    """
    if not isinstance(config, TranslationConfig):  # a dict failed with an AttributeError
        raise TypeError(f"config must be a TranslationConfig (from resolve_config, or config_from_dict(data, "
                        f"TranslationConfig)), got {type(config).__name__}")
    device = device if isinstance(device, torch.device) else resolve_device(device)
    run_dir = Path(run_dir)
    with torch.device("meta"):  # every model setting checked now, not after the tokenizer has trained
        TransformerSeq2Seq(config.model, PAD + 8, PAD + 8, pad_id=PAD)
    _check_settings(config)
    check_writable(run_dir, RUN_DIR, directory=True)
    check_results_file(Path(run_dir) / "log.jsonl", RUN_DIR, choose="choose another directory")  # the epochs' records are appended to it
    with run_directory_lock(run_dir, RUN_DIR, log):  # a second training in run_dir meanwhile is an error
        with torch.random.fork_rng(devices=generator_devices(device)):  # the caller's random state, restored after
            return _train_in_locked_directory(config, run_dir, data_dir, progress=progress, log=log, device=device)


def _train_in_locked_directory(config: TranslationConfig, run_dir: Path, data_dir: str | Path | None, *,
                               progress: bool, log: Callable[[str], None], device: torch.device) -> dict:
    """:func:`train_translation` once its settings are checked and ``run_dir`` is locked."""
    remove_stale_checkpoint_temporaries(run_dir, log, f"{config.name}: ")
    tc = config.train
    cfg_dict = config_to_dict(config)
    last_path = run_dir / "last.pt"
    resume = load_checkpoint(last_path, CHECKPOINT_KIND) if last_path.is_file() else None
    if resume is not None:
        missing = [k for k in ("optimizer_state", "progress", "rng_state") if k not in resume]
        if missing:  # an epoch or averaged checkpoint copied over last.pt
            raise ValueError(f"cannot resume {last_path}: it holds weights only, not a training state (no "
                             f"{missing[0]}); epochN.pt and averaged checkpoints are written that way — resume from "
                             f"the run's own last.pt, or start the run in a new {RUN_DIR}")
        # a checkpoint written before a setting existed had that setting's default: fill it in
        saved = config_to_dict(config_from_dict(resume["config"], TranslationConfig, where=f"{last_path} config"))
        diffs = _config_differences(saved, cfg_dict, ignore=RESUMABLE_CHANGES, names=None)
        if diffs:  # all of them: one at a time took a failed resume per setting
            raise ValueError(f"{last_path} was trained with another config (in the checkpoint → asked: "
                             f"{'; '.join(diffs)}); use another {RUN_DIR} or the same config")
        check_finite_weights(last_path, resume["model_state"])
    train_files = split_files(data_dir, "train", config.data.src_lang, config.data.tgt_lang)
    train_pairs = read_parallel(*train_files)
    if config.data.train_limit and config.data.train_limit < len(train_pairs):
        log(f"{config.name}: data.train_limit = {config.data.train_limit:,}: training on the first "
            f"{config.data.train_limit:,} of the {len(train_pairs):,} pairs in {train_files[0].parent}")
        train_pairs = train_pairs[:config.data.train_limit]
    valid_files = split_files(data_dir, "val", config.data.src_lang, config.data.tgt_lang)
    valid_pairs = read_parallel(*valid_files)
    if not any(s.strip() and t.strip() for s, t in train_pairs):  # nothing to train a vocabulary on
        _, report = filter_training_pairs(train_pairs, [((), ())] * len(train_pairs), config.data.max_tokens)
        raise ValueError(f"no training pairs in {' and '.join(map(str, train_files))}: {report.describe()}")
    train_signature = _pairs_signature(train_pairs)
    if resume is not None:
        saved_data = resume.get("train_data")  # absent in checkpoints written before stop 44: not checked
        if saved_data and saved_data != train_signature:
            raise ValueError(f"cannot resume {last_path}: it was trained on other training data "
                             f"({saved_data['pairs']:,} pairs, sha256 {saved_data['sha256'][:12]}…; "
                             f"{' and '.join(map(str, train_files))} now give {train_signature['pairs']:,} pairs, "
                             f"{train_signature['sha256'][:12]}…); use the original files or another {RUN_DIR}")
        tokenizer = tokenizer_from_state(resume["tokenizer"])
    else:
        tokenizer = build_tokenizer(config.data.preprocessing, [s for pair in train_pairs for s in pair],
                                    vocab_size=config.data.vocab_size, min_frequency=config.data.min_frequency)
        if config.data.preprocessing == "bpe" and tokenizer.vocab_size < config.data.vocab_size:
            # sentencepiece stops when no pair is left to merge (hard_vocab_limit=False): never a silent change
            built = tokenizer.vocab_size
            log(f"{config.name}: note: data.vocab_size = {config.data.vocab_size:,} asked, but the training text "
                f"gives a BPE vocabulary of {built:,} pieces only; training with {built:,} (the checkpoints record it "
                f"as vocab_size)")
    encoded = _encode(tokenizer, train_pairs)
    keep, report = filter_training_pairs(train_pairs, encoded, config.data.max_tokens)
    size_note = "" if config.data.preprocessing == "bpe" else \
        f"; its size comes from data.min_frequency = {config.data.min_frequency}, data.vocab_size applies to BPE only"
    log(f"{config.name}: {report.describe()}; vocabulary {tokenizer.vocab_size} ({config.data.preprocessing}"
        f"{size_note})")
    if not keep:
        raise ValueError(f"no training pairs in {' and '.join(map(str, train_files))}: {report.describe()}")
    if not any(s.strip() and t.strip() for s, t in valid_pairs):
        raise ValueError(f"no validation pairs in {' and '.join(map(str, valid_files))} (empty or blank files)")
    train = [encoded[i] for i in keep]
    valid = _encode(tokenizer, valid_pairs)
    if getattr(tokenizer, "kind", "bpe") == "word":  # BPE has byte fall-back: no <unk>
        log(f"{config.name}: {_unknown_report(tokenizer, config, train, valid)}")
    seed_generators(tc.seed, device)
    m = config.model
    with naming_out_of_memory(f"[model] d_model = {m.d_model}, dim_feedforward = {m.dim_feedforward}, "
                              f"{m.num_encoder_layers} + {m.num_decoder_layers} layers "
                              f"(vocabulary {tokenizer.vocab_size:,})"):
        model = TransformerSeq2Seq(config.model, tokenizer.vocab_size, tokenizer.vocab_size, pad_id=PAD).to(device)
    def make_optimizer(embedding_attributes=EMBEDDING_ATTRIBUTES) -> torch.optim.Adam:
        groups = parameter_groups(model, tc.weight_decay, embedding_attributes)
        groups = scale_frequency_lr(model, groups, tc.lr, tc.frequency_lr_scale)
        return torch.optim.Adam(groups, lr=tc.lr, betas=cast("tuple[float, float]", tuple(tc.betas)), eps=tc.adam_eps)

    optimizer = make_optimizer()
    # loss_sum / tok_sum: the current epoch's summed training loss and target tokens (kept for a resume)
    state: dict[str, Any]
    state = {"step": 0, "epoch": 1, "batch": 0, "train_seconds": 0.0, "train_cpu_seconds": 0.0,
             "loss_sum": 0.0, "tok_sum": 0}
    if resume is not None:
        model.load_state_dict(resume["model_state"])
        try:
            optimizer.load_state_dict(resume["optimizer_state"])
        except ValueError:  # saved before stop 38, whose groups left the translation embeddings decayed
            optimizer = make_optimizer(("embedding",))
            optimizer.load_state_dict(resume["optimizer_state"])
            log(f"{config.name}: {last_path} keeps its optimiser's earlier parameter groups (embedding tables "
                f"decayed when train.weight_decay > 0)")
        state.update(resume["progress"])
        set_rng_state(resume["rng_state"], device)
    # epochs logged after last.pt (or before a first last.pt) are written again
    drop_records_after(run_dir / "log.jsonl", state["step"])
    if resume is not None:
        log(f"{config.name}: resumed from {last_path} at step {state['step']} (epoch {state['epoch']})")
        if tc.max_steps and state["step"] >= tc.max_steps or state["epoch"] > tc.max_epochs:
            log(f"{config.name}: note: the run is already at its budget (train.max_steps = {tc.max_steps}, "
                f"train.max_epochs = {tc.max_epochs}); nothing to train — raise the budget to continue")
    n_params = count_parameters(model)
    log(f"{config.name}: {config.model.variant} model with {n_params:,} parameters")
    payload = {"tokenizer": tokenizer.state(), "vocab_size": tokenizer.vocab_size, "parameters": n_params,
               "train_data": train_signature}

    def save(path: Path, *, full: bool, **extra) -> None:
        more = {"optimizer_state": optimizer.state_dict(), "rng_state": rng_state(device),
                "progress": dict(state)} if full else {"step": state["step"], "epoch": extra.pop("epoch")}
        save_checkpoint(path, CHECKPOINT_KIND, cpu_state_dict(model), cfg_dict, **payload, **more, **extra)

    batches_per_epoch = len(make_batches([0] * len(train), tc.batch_size))
    total = tc.max_epochs * batches_per_epoch
    total = min(total, tc.max_steps) if tc.max_steps else total
    bar = tqdm(total=total, initial=state["step"], desc=config.name, disable=bars_off(progress), dynamic_ncols=True)
    model.train()
    lr = inverse_sqrt_lr(max(1, state["step"]), tc.lr, tc.warmup_steps)
    while state["epoch"] <= tc.max_epochs and not (tc.max_steps and state["step"] >= tc.max_steps):
        epoch = state["epoch"]
        generator = torch.Generator().manual_seed(tc.seed * 100_003 + epoch)
        batches = make_batches([len(s) + len(t) for s, t in train], tc.batch_size, generator)
        tok_window, window_start = 0, time.perf_counter()
        for b in range(state["batch"], len(batches)):
            start, cpu_start = time.perf_counter(), time.process_time()
            lr = inverse_sqrt_lr(state["step"] + 1, tc.lr, tc.warmup_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)
            loss, _, n_tokens = _loss(model, collate([train[i] for i in batches[b]]), tc.label_smoothing)
            loss_value = loss.item()
            check_finite_loss(loss_value, state["step"] + 1, last_path)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if tc.clip_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip_norm)
            optimizer.step()
            state["step"] += 1
            state["batch"] = b + 1
            state["train_seconds"] += time.perf_counter() - start
            state["train_cpu_seconds"] += time.process_time() - cpu_start
            state["loss_sum"] += loss_value * n_tokens
            state["tok_sum"] += n_tokens
            tok_window += n_tokens
            bar.update(1)
            if state["step"] % 10 == 0:
                now = time.perf_counter()
                bar.set_postfix(epoch=epoch, loss=f"{state['loss_sum'] / state['tok_sum']:.3f}", lr=f"{lr:.1e}",
                                tok_s=f"{tok_window / (now - window_start):.0f}")
                tok_window, window_start = 0, now
            if tc.save_every_steps and state["step"] % tc.save_every_steps == 0:
                save(last_path, full=True)
            if tc.max_steps and state["step"] >= tc.max_steps:
                break
        complete = state["batch"] >= len(batches)
        record = {"epoch": epoch, "step": state["step"], "train_loss": state["loss_sum"] / max(1, state["tok_sum"]),
                  "lr": lr, "epoch_complete": complete,
                  "train_seconds": state["train_seconds"], "train_cpu_seconds": state["train_cpu_seconds"],
                  **_validation_loss(model, valid, tc.batch_size, tc.label_smoothing)}
        if complete:  # a run stopped by max_steps mid-epoch keeps its weights in last.pt: an epochN.pt of part of
            # an epoch was overwritten by the resumed epoch's, and counted as an epoch by `translate average --last`
            save(run_dir / f"epoch{epoch}.pt", full=False, epoch=epoch, valid=record)
            state["epoch"], state["batch"], state["loss_sum"], state["tok_sum"] = epoch + 1, 0, 0.0, 0
        append_jsonl(run_dir / "log.jsonl", {"name": config.name, **record})  # before last.pt: never lost
        save(last_path, full=True)
        _prune(run_dir, tc.keep_last)
        bar.set_postfix(epoch=epoch, loss=f"{record['train_loss']:.3f}", valid_ppl=f"{record['valid_ppl']:.2f}")
        with bar.external_write_mode():  # the bar, if shown, is cleared and drawn again below the line
            log(f"{config.name}: epoch {epoch} step {state['step']} train loss {record['train_loss']:.3f} "
                f"valid loss {record['valid_loss']:.3f} ppl {record['valid_ppl']:.2f}")
    bar.close()
    # what was trained; not the resume position (``state`` holds the next epoch, and running sums reset to 0 at
    # an epoch's end, so a finished run of 100 epochs reported "epoch": 101 and "loss_sum": 0.0)
    done_epochs = state["epoch"] - 1 if state["batch"] == 0 else state["epoch"]
    return {"name": config.name, "variant": config.model.variant, "parameters": n_params, "step": state["step"],
            "steps": state["step"], "epochs": done_epochs, "epoch_complete": state["batch"] == 0,
            "train_seconds": state["train_seconds"],
            "train_cpu_seconds": state["train_cpu_seconds"],
            "budget_reached": bool(tc.max_steps and state["step"] >= tc.max_steps) or state["epoch"] > tc.max_epochs}


# --------------------------------------------------------------------------------------
# Checkpoints: load, average
# --------------------------------------------------------------------------------------


def load_translator(path: str | Path, device: str | torch.device | None = "cpu"
                    ) -> tuple[TransformerSeq2Seq, object, TranslationConfig]:
    """``(model in eval mode on device, tokenizer, config)`` from a translation checkpoint.

    Any other kind of checkpoint (a classifier, a language model) is a one-line error naming both.
    ``device`` defaults to ``"cpu"``, unlike :func:`train_translation` and the language model's functions, which
    pick a GPU when torch sees one: pass ``device=None`` (or ``"cuda"``) to decode on the GPU. Values as in
    :func:`train_translation`.

    Returns:
        ``(model, tokenizer, config)``: the :class:`~complexorder.models.seq2seq.TransformerSeq2Seq` in eval mode
        on ``device``, the checkpoint's tokenizer, and its :class:`TranslationConfig` (``config.decode`` holds the
        search settings :func:`evaluate_split` uses by default).
    """
    ck = load_checkpoint(path, CHECKPOINT_KIND, required=("config", "tokenizer", "vocab_size", "model_state"),
                         writer="complexorder translate train")
    config = config_from_dict(ck["config"], TranslationConfig, where=f"{path} config")
    check_finite_weights(path, ck["model_state"])
    try:
        tokenizer = tokenizer_from_state(ck["tokenizer"])
    except ValueError as exc:
        raise ValueError(f"checkpoint {path}: {exc}") from None
    with torch.random.fork_rng(devices=[]):  # its weights are drawn, then replaced: the caller's RNG is left alone
        model = TransformerSeq2Seq(config.model, ck["vocab_size"], ck["vocab_size"], pad_id=PAD)
    try:
        model.load_state_dict(ck["model_state"])
    except RuntimeError as exc:
        raise ValueError(f"checkpoint {path} does not fit a {config.model.variant!r} model: "
                         f"{str(exc).splitlines()[1].strip()}") from None
    return model.to(device if isinstance(device, torch.device) else resolve_device(device)).eval(), tokenizer, config


def _same_tokenizer(a: dict, b: dict) -> bool:
    """Whether two saved tokenizer states are the same (kind and vocabulary / sentencepiece model)."""
    if a.keys() != b.keys():
        return False
    return all(torch.equal(a[k], b[k]) if isinstance(a[k], Tensor) and isinstance(b[k], Tensor) else a[k] == b[k]
               for k in a)


def average_checkpoints(paths: Sequence[str | Path], output: str | Path) -> Path:
    """Average the weights of translation checkpoints of one run (same config) into ``output``.

    ``paths`` is a list of checkpoints, each given once (one given twice would weigh double: a one-line error; a
    bare string or path is a ``TypeError``: pass ``[path]``). ``output`` may replace an existing checkpoint, but not
    one of ``paths``, a training run's resume checkpoint or a file that is not a checkpoint (a JSON-lines log or
    results file, a text file such as a Multi30k split): a one-line error, before anything is read or written.
    Returns ``output`` as a ``Path``."""
    if isinstance(paths, (str, bytes, os.PathLike)):  # a path was averaged one character at a time
        raise TypeError(f"paths must be a list of checkpoint paths, got a single {type(paths).__name__}; pass [path] "
                        "for one checkpoint")
    try:
        paths = list(paths)
    except TypeError:
        raise TypeError(f"paths must be a list of checkpoint paths, got {type(paths).__name__}") from None
    bad = next((i for i, p in enumerate(paths) if not isinstance(p, (str, os.PathLike))), None)
    if bad is not None:
        raise TypeError(f"paths[{bad}] must be a checkpoint path (a str or Path), got {type(paths[bad]).__name__}")
    if not paths:
        raise ValueError("no checkpoints to average")
    twice = [str(p) for i, p in enumerate(paths) if any(same_file(p, q) for q in paths[:i])]
    if twice:  # it would weigh that checkpoint double
        raise ValueError(f"checkpoint {twice[0]} is given more than once; each checkpoint is averaged once")
    # the output must not replace one of the checkpoints it averages (names the option as `translate average` does)
    check_writable(output, "--output", inputs={f"one of the checkpoints to average ({p})": p for p in paths})
    if Path(output).is_file() and Path(output).stat().st_size and not is_torch_file(output):
        # a results file, a training log, a Multi30k split (an empty file loses nothing)
        check_text_output(output, "--output", "the averaged checkpoint")  # names a JSON-lines file as run, eval do
        raise ValueError(f"--output {output} is not a checkpoint (its first bytes are not torch.save's zip or pickle); "
                         "writing the averaged checkpoint over it would destroy it — choose another file")
    if Path(output).is_file():
        try:
            existing = load_checkpoint(output, CHECKPOINT_KIND)
        except ValueError:  # not a translation checkpoint: the user's file to replace
            existing = {}
        if "optimizer_state" in existing:
            raise ValueError(f"--output {output} is a training run's resume checkpoint (it holds the optimizer state); "
                             "the average would replace it — write it to a new file (e.g. averaged.pt)")

    def full_config(ck: dict, path) -> dict:  # a setting a checkpoint predates had its default: fill it in
        return config_to_dict(config_from_dict(ck["config"], TranslationConfig, where=f"{path} config"))

    first = load_checkpoint(paths[0], CHECKPOINT_KIND)
    check_finite_weights(paths[0], first["model_state"])  # NaN would spread into every averaged weight
    first_config = full_config(first, paths[0])
    shared = bool(first_config["model"]["share_embeddings"])

    def model_state(ck: dict, path) -> dict:  # checkpoints before stop 82 also held a shared table as tgt_embedding.*
        if not shared:
            return ck["model_state"]
        pairs, differing = tied_pairs(ck["model_state"], "src_embedding.", "tgt_embedding.")
        if differing is not None:
            raise ValueError(f"checkpoint {path}: {differing[1]} and {differing[0]} differ, but its config shares one "
                             "table (model.share_embeddings); it was not written by this run's model")
        twins = {twin for _, twin in pairs}
        return {k: v for k, v in ck["model_state"].items() if k not in twins}

    sums = {k: v.double().clone() for k, v in model_state(first, paths[0]).items()}
    for path in paths[1:]:
        ck = load_checkpoint(path, CHECKPOINT_KIND)
        check_finite_weights(path, ck["model_state"])
        diffs = _config_differences(first_config, full_config(ck, path), ignore=RESUMABLE_CHANGES,
                                    names=(f"in {paths[0]}", f"in {path}"))
        if diffs:
            raise ValueError(f"cannot average {paths[0]} and {path}: different configs ({'; '.join(diffs)})")
        if not _same_tokenizer(first["tokenizer"], ck["tokenizer"]):
            raise ValueError(f"cannot average {paths[0]} and {path}: their tokenizers differ (trained on other data)")
        for k, v in model_state(ck, path).items():
            sums[k] += v.double()
    state = {k: (v / len(paths)).to(first["model_state"][k].dtype) for k, v in sums.items()}
    extra = {k: first[k] for k in ("tokenizer", "vocab_size", "parameters")}
    save_checkpoint(output, CHECKPOINT_KIND, state, first["config"], averaged_from=[str(p) for p in paths], **extra)
    return Path(output)


# --------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------


def _limits(src_pad: Tensor, a: float, b: int) -> Tensor:
    """Most output tokens (before ``</s>``) per sentence: ``floor(a * source length + b)``."""
    return ((~src_pad).sum(1).double() * a + b).floor().long()


def _constrain(log_probs: Tensor, step: int, limits: Tensor) -> Tensor:
    """No ``<pad>``/``<s>``; only ``</s>`` once a hypothesis has reached its length limit."""
    log_probs[:, PAD] = log_probs[:, BOS] = float("-inf")
    at_limit = step >= limits
    if at_limit.any():
        eos = log_probs[at_limit, EOS]
        log_probs[at_limit] = float("-inf")
        log_probs[at_limit, EOS] = eos
    return log_probs


def _strip(ids: Sequence[int]) -> list[int]:
    ids = list(ids)
    return ids[:ids.index(EOS)] if EOS in ids else ids


@torch.no_grad()
def greedy_search(model: TransformerSeq2Seq, src: Tensor, *, max_len_a: float = 1.5, max_len_b: int = 10) -> list[list[int]]:
    """Most probable next token at each step, decoded incrementally; ids without ``</s>``."""
    _check_search({"max_len_a": max_len_a, "max_len_b": max_len_b})
    memory, src_pad = model.encode(src)
    limits = _limits(src_pad, max_len_a, max_len_b)
    tokens = src.new_full((src.shape[0],), BOS)
    done = torch.zeros_like(tokens, dtype=torch.bool)
    cache: dict[str, Any]
    cache, out = {}, []
    for step in range(int(limits.max()) + 1):
        log_probs = _constrain(model.decode_step(tokens, step, memory, src_pad, cache).log_softmax(-1), step, limits)
        tokens = log_probs.argmax(-1)
        out.append(tokens)
        done |= tokens == EOS
        if done.all():
            break
    return [_strip(row) for row in torch.stack(out, 1).tolist()]


@torch.no_grad()
def beam_search(model: TransformerSeq2Seq, src: Tensor, *, beam_size: int = 5, length_penalty: float = 1.0,
                max_len_a: float = 1.5, max_len_b: int = 10) -> list[list[int]]:
    """Batched beam search, decoded incrementally (the cache follows the beams' back-pointers).

    Each step extends every live hypothesis, keeps the ``2 * beam_size`` best candidates per
    sentence, finishes those ending in ``</s>`` among the first ``beam_size`` and continues the
    ``beam_size`` best others. A sentence is done with ``beam_size`` finished hypotheses; the
    best by ``log p / length ** length_penalty`` (length counting ``</s>``) is returned.
    """
    _check_search({"beam_size": beam_size, "length_penalty": length_penalty, "max_len_a": max_len_a,
                   "max_len_b": max_len_b})
    if beam_size > model.tgt_vocab_size:  # (100000 ran out of memory: the source is copied per beam)
        raise ValueError(f"beam_size must be at most the target vocabulary size, {model.tgt_vocab_size}, "
                         f"got {beam_size}")
    k = beam_size
    memory, src_pad = model.encode(src)
    n = src.shape[0]
    limits = _limits(src_pad, max_len_a, max_len_b)
    memory, src_pad, beam_limits = (t.repeat_interleave(k, 0) for t in (memory, src_pad, limits))
    scores = torch.full((n, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0
    tokens = src.new_full((n * k,), BOS)
    history = src.new_empty((n * k, 0))
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(n)]
    offset = (torch.arange(n, device=src.device) * k).unsqueeze(1)
    cache: dict = {}
    for step in range(int(limits.max()) + 1):
        log_probs = model.decode_step(tokens, step, memory, src_pad, cache).log_softmax(-1)
        log_probs = _constrain(log_probs, step, beam_limits)
        vocab = log_probs.shape[-1]
        candidates = (scores.view(-1, 1) + log_probs).view(n, k * vocab)
        top, index = candidates.topk(min(2 * k, k * vocab), dim=1)
        origin, token = offset + index // vocab, index % vocab
        is_eos = token == EOS
        for b, j in (is_eos[:, :k] & torch.isfinite(top[:, :k])).nonzero().tolist():
            if len(finished[b]) < k:
                finished[b].append((top[b, j].item() / (step + 1) ** length_penalty, history[origin[b, j]].tolist()))
        scores, keep = top.masked_fill(is_eos, float("-inf")).topk(k, dim=1)
        done = torch.tensor([len(f) >= k for f in finished], device=src.device)
        if done.all():
            break
        scores[done] = float("-inf")
        rows, tokens = origin.gather(1, keep).view(-1), token.gather(1, keep).view(-1)
        history = torch.cat((history[rows], tokens.unsqueeze(1)), 1)
        reorder_cache(cache, rows)
    return [max(f)[1] if f else [] for f in finished]


def _check_sentences(name: str, sentences: Sequence[str]) -> None:
    """A ``TypeError`` naming ``name`` unless ``sentences`` is a sequence of strings: a bare string was read as one
    sentence per character."""
    if isinstance(sentences, (str, bytes)):
        raise TypeError(f"{name} must be a list of sentences (strings), got a single {type(sentences).__name__}; "
                        f"pass [text] for one sentence")
    bad = next((i for i, s in enumerate(sentences) if not isinstance(s, str)), None)
    if bad is not None:
        raise TypeError(f"{name}[{bad}] must be a string (one sentence), got {type(sentences[bad]).__name__}")


def translate_sentences(model: TransformerSeq2Seq, tokenizer, sentences: Sequence[str], decode: DecodeConfig, *,
                        progress: bool = False) -> list[str]:
    """Translate raw sentences (batched by length, in full: no source is truncated); empty lines stay empty.

    ``sentences`` is a list of strings, one sentence each: a bare string is a ``TypeError`` (it was translated one
    character at a time). ``decode`` is checked as :func:`check_decode` does (``decode.batch_size must be ...``)."""
    _check_sentences("sentences", sentences)
    check_decode(decode)
    model.eval()
    encoded = [tokenizer.encode(s) + [EOS] for s in sentences]
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    outputs: list[str] = [""] * len(encoded)
    bar = tqdm(total=len(encoded), desc="translate", disable=bars_off(progress), leave=False, dynamic_ncols=True)
    for start in range(0, len(order), decode.batch_size):
        idx = order[start:start + decode.batch_size]
        src = _pad([encoded[i] for i in idx]).to(device_of(model))
        if decode.beam_size == 1:
            hyps = greedy_search(model, src, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)
        else:
            hyps = beam_search(model, src, beam_size=decode.beam_size, length_penalty=decode.length_penalty,
                               max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)
        for i, ids in zip(idx, hyps):
            outputs[i] = tokenizer.decode(ids) if sentences[i].strip() else ""
        bar.update(len(idx))
    bar.close()
    return outputs


# --------------------------------------------------------------------------------------
# BLEU
# --------------------------------------------------------------------------------------


#: What ``bleu`` holds when the hypotheses are not detokenized, true-cased text.
NO_DETOKENIZED_BLEU = ("n/a: word-level output is lower-cased and tokenized, so detokenized case-sensitive BLEU "
                       "cannot be computed; see bleu_tok_lc")


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], *, detokenized: bool = True) -> dict:
    """sacrebleu corpus BLEU, two ways, each with its signature.

    - ``bleu``: detokenized, case-sensitive BLEU (sacrebleu's default, ``13a`` tokenization). Only
      for detokenized, true-cased hypotheses: with ``detokenized=False`` (the lower-cased word
      pre-processing) it is ``None`` and its signature says why.
    - ``bleu_tok_lc``: tokenized (mteval-13a), lower-cased BLEU -- the kind of figure the 2019 Multi30k
      literature (and the paper's Table 5) reports. It is sacrebleu with ``lowercase=True`` and its own 13a
      tokenization of the raw sentences (signature ``case:lc|tok:13a``), not ``multi-bleu.perl`` over Moses-tokenized
      text (not measured against each other here).

    Each argument is a list of sentences, one string each, of equal lengths; a bare string (scored a character per
    sentence) is a ``TypeError``, and no sentences at all a ``ValueError`` (BLEU of nothing is undefined).
    """
    _check_sentences("hypotheses", hypotheses)
    _check_sentences("references", references)
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:  # sacrebleu failed with an IndexError
        raise ValueError("no sentences to score: hypotheses and references are empty")
    tok_lc = BLEU(lowercase=True)
    b = tok_lc.corpus_score(list(hypotheses), [list(references)])
    out = {"bleu": None, "bleu_signature": NO_DETOKENIZED_BLEU, "bleu_tok_lc": b.score,
           "bleu_tok_lc_signature": str(tok_lc.get_signature())}
    if detokenized:
        detok = BLEU()
        out.update(bleu=detok.corpus_score(list(hypotheses), [list(references)]).score,
                   bleu_signature=str(detok.get_signature()))
    return out


def evaluate_split(model: TransformerSeq2Seq, tokenizer, config: TranslationConfig, split: str,
                   data_dir: str | Path | None = None, *, decode: DecodeConfig | None = None,
                   progress: bool = False) -> tuple[dict, list[str]]:
    """BLEU of ``model`` on a Multi30k split.

    Args:
        model, tokenizer, config: as :func:`load_translator` returns them (``config.data`` names the languages).
        split: ``"val"``, ``"test2016"`` or ``"train"``: the files ``<split>.<src_lang>`` and ``<split>.<tgt_lang>``
            under ``data_dir/translation/multi30k``.
        data_dir: the data directory (default: ``$COMPLEXORDER_DATA`` or ``~/.cache/complexorder/data``).
        decode: the search settings (default: ``config.decode``), checked as :func:`check_decode` does.
        progress: show a progress bar (on a terminal).

    Returns:
        ``(scores, hypotheses)``: ``scores`` is :func:`corpus_bleu`'s dict (``bleu``, ``None`` for word-level output,
        ``bleu_signature``, ``bleu_tok_lc``, ``bleu_tok_lc_signature``) with ``split``, ``sentences``, ``beam_size``,
        ``length_penalty`` and ``decode_seconds`` added, and for a word vocabulary ``source_unk_words`` and
        ``source_words``; ``hypotheses`` is the list of translations, one string per source line (empty lines stay
        empty).
    """
    decode = decode or config.decode
    files = split_files(data_dir, split, config.data.src_lang, config.data.tgt_lang)
    pairs = read_parallel(*files)
    if not any(s and t for s, t in pairs):  # blank lines only scored BLEU 0.00, exit 0
        raise ValueError(f"no sentences to evaluate in {' and '.join(map(str, files))} (empty files, or blank lines "
                         "only)")
    start = time.perf_counter()
    hyps = translate_sentences(model, tokenizer, [s for s, _ in pairs], decode, progress=progress)
    scores = corpus_bleu(hyps, [t for _, t in pairs], detokenized=getattr(tokenizer, "kind", "bpe") != "word")
    scores.update(split=split, sentences=len(pairs), beam_size=decode.beam_size,
                  length_penalty=decode.length_penalty, decode_seconds=time.perf_counter() - start)
    if getattr(tokenizer, "kind", "bpe") == "word":  # source words read as <unk> (BPE has none)
        scores["source_unk_words"], scores["source_words"] = count_unknown_words(tokenizer, [s for s, _ in pairs])
    return scores, hyps
