"""Character-level language modelling with Transformer-XL: training, evaluation in bits per character.

As in Dai et al.'s code: each split is cut into ``batch_size`` contiguous streams (one per batch
row, the remainder dropped), read ``tgt_len`` characters at a time; the model carries its
memory (and the stream positions of the complex-order embedding) from one segment to the next.
Training uses Adam with a cosine schedule and gradient clipping. Evaluation may use another
segment length, a longer memory, ``same_length`` and ``clamp_len`` (Dai et al. evaluate text8
with ``tgt_len=80, mem_len=2100, clamp_len=820, same_length``).

BPC is the mean negative log2-likelihood of every predicted character: all characters of a
split except the first of each stream.

A run directory holds ``last.pt`` (everything needed to resume exactly: weights, optimiser,
step, data position, memory, random state; written atomically), ``best.pt`` (the weights with
the best validation BPC seen so far) and ``results.jsonl`` (one line per validation and per
evaluation, with the full config).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from ..checkpoint import (append_jsonl, check_finite_weights, check_results_file, check_writable, drop_records_after,
                          load_checkpoint, save_checkpoint)
from ..config import FLOAT32_MAX, check_number, check_seed, config_from_dict, config_to_dict, plain_numbers
from ..data.text8 import TEXT8_ALPHABET, load_corpus
from ..environment import bars_off, resolve_device, rng_state, set_rng_state
from ..errors import naming_out_of_memory
from ..models.transformer_xl import (TransformerXL, TransformerXLConfig, XLMemory, check_clamp_len, check_config,
                                     check_lengths)
from ..nn.functional import as_integer, positive_int
from .training import (PERIODIC_PARAMETER_NAMES, check_finite_loss, cpu_state_dict, device_of, generator_devices,
                       remove_stale_checkpoint_temporaries, run_directory_lock, seed_generators)

__all__ = ["TrainSettings", "EvalSettings", "LMConfig", "batchify", "evaluate_bpc", "train_language_model",
           "evaluate_checkpoint", "build_model", "check_lm_config", "CHECKPOINT_KIND"]

CHECKPOINT_KIND = "language-model"
LN2 = math.log(2.0)


@dataclass
class TrainSettings:
    tgt_len: int = 512
    batch_size: int = 22
    max_steps: int = 400_000
    lr: float = 2.5e-4
    min_lr: float = 0.0          # the cosine schedule ends here
    warmup_steps: int = 0
    weight_decay: float = 0.0    # never applied to frequencies or phases (they are angles)
    frequency_lr_scale: float = 1.0  # learning rate of the complex-order frequencies relative to lr
    clip: float = 0.25
    seed: int = 1111
    log_interval: int = 200
    eval_interval: int = 4000    # validation every so many steps (and at the end)
    eval_tgt_len: int = 128      # segment length of those validations (memory: model.mem_len)
    eval_max_chars: int = 0      # validate on the first so many characters; 0: the whole split
    checkpoint_interval: int = 1000

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class EvalSettings:
    """The final evaluation on valid and test (Dai et al.'s text8 evaluation by default)."""

    tgt_len: int = 80
    mem_len: int = 2100
    clamp_len: int = 820
    same_length: bool = True
    batch_size: int = 10

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class LMConfig:
    model: TransformerXLConfig = field(default_factory=TransformerXLConfig)
    train: TrainSettings = field(default_factory=TrainSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)


def check_lm_config(cfg: LMConfig) -> None:
    """One-line errors for settings that cannot run."""
    if not isinstance(cfg, LMConfig):  # a dict failed with an AttributeError
        raise TypeError(f"the config must be an LMConfig (from config_from_dict(data, LMConfig)), got "
                        f"{type(cfg).__name__}")
    check_config(cfg.model)
    if cfg.model.vocab_size != len(TEXT8_ALPHABET):
        raise ValueError(f"model.vocab_size must be {len(TEXT8_ALPHABET)} for a text8-format corpus "
                         f"(a-z and space), got {cfg.model.vocab_size}")
    t, e = cfg.train, cfg.eval
    for name, value in (("train.tgt_len", t.tgt_len), ("train.batch_size", t.batch_size),
                        ("train.max_steps", t.max_steps), ("train.eval_tgt_len", t.eval_tgt_len),
                        ("train.eval_interval", t.eval_interval), ("train.log_interval", t.log_interval),
                        ("train.checkpoint_interval", t.checkpoint_interval), ("eval.tgt_len", e.tgt_len),
                        ("eval.batch_size", e.batch_size)):
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    check_number("train.lr", t.lr, low=0.0, high=FLOAT32_MAX, low_open=True,
                 meaning=" (Adam keeps it in float32)")
    check_number("train.min_lr", t.min_lr, low=0.0, high=t.lr, meaning=" (the cosine schedule's end, at most train.lr)")
    check_number("train.weight_decay", t.weight_decay, low=0.0)
    check_number("train.clip", t.clip, low=0.0, meaning=" (0: no clipping)")
    check_number("train.frequency_lr_scale", t.frequency_lr_scale, low=0.0, meaning=" (0 freezes the frequencies)")
    for name, value, meaning in (("train.eval_max_chars", t.eval_max_chars, " (0: the whole valid split)"),
                                 ("train.warmup_steps", t.warmup_steps, " (0: no warm-up)")):
        if value < 0:
            raise ValueError(f"{name} must be >= 0{meaning}, got {value}")
    check_seed("train.seed", t.seed)
    check_lengths(e.mem_len, e.same_length, where="eval.mem_len")


def build_model(cfg: LMConfig) -> TransformerXL:
    m = cfg.model
    with naming_out_of_memory(f"[model] d_model = {m.d_model}, d_inner = {m.d_inner}, n_layer = {m.n_layer}, "
                              f"n_head = {m.n_head}, d_head = {m.d_head}"):
        return TransformerXL(cfg.model)


# --------------------------------------------------------------------------------------
# Data as streams
# --------------------------------------------------------------------------------------


STREAMS = " (the number of streams)"  # what batch_size means here, in its errors


def batchify(ids: Tensor, batch_size: int, tgt_len: int, split: str = "data", evaluation: bool = False, *,
             source: str | Path | None = None) -> Tensor:
    """Cut ``ids`` into ``batch_size`` contiguous streams: ``[batch_size, len(ids) // batch_size]``.

    Raises a one-line error when a stream is shorter than one segment (``tgt_len`` inputs plus
    the target of the last one), naming ``split`` and the file ``source`` it was read from, when given.
    """
    positive_int(batch_size, "batch_size", STREAMS)  # 0 divided by zero
    n = ids.numel() // batch_size
    if n < tgt_len + 1:
        need = ("the 2 characters of one prediction (evaluation reads segments of any length)" if evaluation else
                f"one segment of tgt_len={tgt_len} plus its target ({tgt_len + 1})")
        sizes = "batch_size" if evaluation else "batch_size / tgt_len"
        where = f" ({source})" if source is not None else ""
        raise ValueError(f"the {split} split{where} has {ids.numel():,} characters: {batch_size} streams of {n:,}, "
                         f"shorter than {need}; use a longer corpus or a smaller {sizes}")
    return ids[: n * batch_size].view(batch_size, n)


@torch.no_grad()
def evaluate_bpc(model: TransformerXL, ids: Tensor, *, tgt_len: int, batch_size: int, mem_len: int | None = None,
                 same_length: bool | None = None, clamp_len: int | None = None, split: str = "data",
                 progress: bool = False) -> tuple[float, int]:
    """Bits per character of ``model`` on the stream ``ids``; returns ``(bpc, predicted characters)``.

    Reads ``batch_size`` streams ``tgt_len`` characters at a time (the last segment may be
    shorter) with the memory carried over; ``mem_len``, ``same_length`` and ``clamp_len``
    override the model's for this evaluation only. The model's mode and lengths are restored.
    """
    if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.is_floating_point() or ids.is_complex() \
            or ids.dtype == torch.bool:  # float ids were truncated to integers without a word
        form = f"shape {tuple(ids.shape)} and dtype {ids.dtype}" if isinstance(ids, Tensor) else type(ids).__name__
        raise ValueError(f"ids must be a 1-d integer tensor of character ids, got {form}")
    positive_int(batch_size, "batch_size", STREAMS)
    if ids.numel() < 2:
        raise ValueError(f"the {split} split has {ids.numel():,} character(s); evaluating it needs at least 2 (an "
                         f"input and its target): check the corpus's {split} file")
    if ids.numel() // batch_size < 2:  # evaluation takes short last segments: a stream needs one input and its target
        raise ValueError(f"the {split} split has {ids.numel():,} characters: too few for {batch_size} evaluation "
                         f"streams of at least 2 characters each; use a smaller batch size")
    data = batchify(ids, batch_size, 1, split, evaluation=True)
    if tgt_len <= 0:
        raise ValueError(f"tgt_len must be positive, got {tgt_len}")
    saved = (model.mem_len, model.same_length, model.clamp_len)
    was_training = model.training
    device = device_of(model)
    model.reset_length(mem_len, same_length, clamp_len)
    model.eval()
    try:
        total, count, memory = 0.0, 0, None
        starts = range(0, data.shape[1] - 1, tgt_len)
        for start in tqdm(starts, desc=f"eval {split}", disable=bars_off(progress), leave=False, dynamic_ncols=True):
            end = min(start + tgt_len, data.shape[1] - 1)
            x, y = data[:, start:end].to(device).long(), data[:, start + 1:end + 1].to(device).long()
            logits, memory = model(x, memory)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), y.reshape(-1),
                                     reduction="sum").item()
            count += y.numel()
    finally:
        model.reset_length(*saved)
        model.train(was_training)
    return total / count / LN2, count


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------


def learning_rate(step: int, t: TrainSettings) -> float:
    """Linear warm-up, then cosine annealing from ``lr`` to ``min_lr`` at ``max_steps``."""
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    progress = (step - t.warmup_steps) / max(1, t.max_steps - t.warmup_steps)
    return t.min_lr + (t.lr - t.min_lr) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def optimizer_groups(model: nn.Module, t: TrainSettings) -> list[dict]:
    """Adam groups: weights (decayed), angles (undecayed), frequencies (undecayed, own lr scale)."""
    groups: dict[str, list[nn.Parameter]] = {"decay": [], "angle": [], "frequency": []}
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        key = "frequency" if leaf == "frequency" else "angle" if leaf in PERIODIC_PARAMETER_NAMES else "decay"
        groups[key].append(p)
    out = [{"params": groups["decay"], "weight_decay": t.weight_decay, "lr_scale": 1.0, "name": "decay"}]
    if groups["angle"]:
        out.append({"params": groups["angle"], "weight_decay": 0.0, "lr_scale": 1.0, "name": "angle"})
    if groups["frequency"]:
        out.append({"params": groups["frequency"], "weight_decay": 0.0, "lr_scale": t.frequency_lr_scale,
                    "name": "frequency"})
    return out


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


#: The settings ``lm train`` has options of its own for (the others are given with --set).
SETTING_OPTIONS = {"model.embedding": "--embedding", "train.max_steps": "--max-steps"}

#: The key every record of ``lm train`` and ``lm eval`` holds, for :func:`~complexorder.checkpoint.check_results_file`.
LM_RECORDS = ("event", "lm train's and lm eval's records")

#: How errors name the output directory: the Python argument and the option of ``lm train``.
OUT_DIR = "out_dir (--out)"

RESUMABLE_CHANGES = frozenset({"train.log_interval", "train.checkpoint_interval"})  # never change the weights


def _check_resumable(saved: dict, cfg: LMConfig, path: Path) -> None:
    # a checkpoint written before a setting existed had that setting's default: fill it in
    saved = config_to_dict(config_from_dict(saved, LMConfig, where=f"{path} config"))
    now = config_to_dict(cfg)
    diffs, flags, unset, overrides = [], [], [], {}
    for section in ("model", "train"):
        for key, value in now[section].items():
            old = saved.get(section, {}).get(key)
            if old != value and f"{section}.{key}" not in RESUMABLE_CHANGES:
                diffs.append(f"{section}.{key}: {old!r} → {value!r}")
                option = SETTING_OPTIONS.get(f"{section}.{key}")
                if old is None:  # unset (model.d_embed, say): no --set value means it ("None" is not an integer)
                    unset.append(f"{section}.{key}")
                else:
                    flags.append(f"{option} {old}" if option else f"--set {section}.{key}={_set_value(old)}")
                overrides[f"{section}.{key}"] = old
    if diffs:  # all of them: one at a time took a failed resume per setting
        raise ValueError(f"cannot resume {path}: it was trained with other settings (the run's → the config's now: "
                         f"{'; '.join(diffs)}); resume with the run's settings (lm train: "
                         + "; ".join(([f"add {' '.join(flags)}"] if flags else [])
                                     + ([f"leave {', '.join(unset)} unset (in the config and --set)"] if unset else []))
                         + f"; Python: language_model_cli.load_lm_config(..., overrides={overrides!r})) or train in a "
                         f"new {OUT_DIR}")


def _set_value(value: object) -> str:
    """``value`` as ``--set`` reads it back (TOML: true, 0.1, "zeros" unquoted where that parses the same)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def train_language_model(cfg: LMConfig, corpus_dir: str | Path, out_dir: str | Path, *, resume: bool = False,
                         stop_after: int | None = None, progress: bool = True, log=print,
                         device: str | torch.device | None = None) -> dict:
    """Train (or resume) a Transformer-XL on ``corpus_dir``; checkpoints and results go to ``out_dir``.

    ``stop_after`` ends this call after that many steps (``last.pt`` saved; continue with
    ``resume=True``), e.g. to train in time slices. ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:N"``
    (default: a GPU when torch sees one). Checkpoints hold CPU weights (the optimiser state is mapped to
    the CPU when loaded), so a run may resume on another device. The run is seeded with ``train.seed``; the
    caller's global random state (torch's CPU generator, and the GPU's when training on one) is restored afterwards.

    Returns:
        A summary of the run (what ``lm train`` prints as JSON): ``steps`` (the steps trained so far, a resumed run's
        earlier ones included; also as ``step``, the name :func:`~complexorder.experiments.translation.train_translation`
        uses), ``epochs`` (passes over the training streams, a float: 2.5 is two and a half; ``train_translation``'s
        ``epochs`` is an int), ``parameters``, ``best_valid_bpc`` (``inf`` before any validation), ``train_seconds``,
        ``chars_per_second`` and ``budget_reached`` (``train.max_steps`` reached, as in ``train_translation``'s
        summary; false when ``stop_after`` ended the call earlier).
    """
    check_lm_config(cfg)
    if stop_after is not None and stop_after <= 0:
        raise ValueError(f"stop_after (--stop-after) must be a positive number of steps, got {stop_after}")
    out_dir = Path(out_dir)
    check_writable(out_dir, OUT_DIR, directory=True)  # not at the first checkpoint, after minutes of training
    check_results_file(Path(out_dir) / "results.jsonl", OUT_DIR, record=LM_RECORDS,
                       choose="choose another directory")  # records are appended to it: not to another file
    device = device if isinstance(device, torch.device) else resolve_device(device)
    with run_directory_lock(out_dir, OUT_DIR, log):  # a second training in out_dir meanwhile is an error
        with torch.random.fork_rng(devices=generator_devices(device)):  # the caller's random state, restored after
            return _train_in_locked_directory(cfg, corpus_dir, out_dir, resume=resume, stop_after=stop_after,
                                              progress=progress, log=log, device=device)


def _train_in_locked_directory(cfg: LMConfig, corpus_dir: str | Path, out_dir: Path, *, resume: bool,
                               stop_after: int | None, progress: bool, log, device: torch.device) -> dict:
    """:func:`train_language_model` once its settings are checked and ``out_dir`` is locked."""
    t = cfg.train
    last_path, best_path, results_path = out_dir / "last.pt", out_dir / "best.pt", out_dir / "results.jsonl"
    if last_path.exists() and not resume:
        try:
            kind = load_checkpoint(last_path).get("kind")
        except (ValueError, OSError):  # not a complexorder checkpoint at all (a directory, say)
            kind = None
        if kind != CHECKPOINT_KIND:  # another command's run (a translation's last.pt): --resume would not help
            what = f"a {kind!r} checkpoint" if kind else "a file that is not a complexorder checkpoint"
            raise ValueError(f"{OUT_DIR} {out_dir} holds {last_path}, {what}, not a language model's; {OUT_DIR} "
                             "must be another directory")
        raise ValueError(f"{last_path} exists: pass resume=True (--resume) to continue that run, or choose another "
                         "out_dir (--out)")
    remove_stale_checkpoint_temporaries(out_dir, log)
    corpus = load_corpus(corpus_dir, ("train", "valid"))
    corpus_signature: dict[str, Any]
    corpus_signature = {"train_chars": corpus["train"].numel(),
                        "train_sha256": hashlib.sha256(corpus["train"].numpy().tobytes()).hexdigest()}
    train_data = batchify(corpus["train"], t.batch_size, t.tgt_len, "train", source=Path(corpus_dir) / "train.txt")
    if corpus["valid"].numel() // cfg.eval.batch_size < 2:  # fail now, not after hours of training; name the setting
        chars = corpus["valid"].numel()
        raise ValueError(f"the valid split ({Path(corpus_dir) / 'valid.txt'}) has {chars:,} characters: too few for "
                         f"eval.batch_size = {cfg.eval.batch_size} validation streams of at least 2 characters each; "
                         + (f"lower eval.batch_size to at most {chars // 2} or use a longer valid split" if chars >= 2
                            else "use a longer valid split"))
    valid = corpus["valid"][: t.eval_max_chars] if t.eval_max_chars else corpus["valid"]
    if t.eval_max_chars and valid.numel() < 2 * cfg.eval.batch_size <= corpus["valid"].numel():  # the setting's fault
        raise ValueError(f"train.eval_max_chars = {t.eval_max_chars} leaves {valid.numel():,} validation characters, "
                         f"too few for {cfg.eval.batch_size} evaluation streams of 2 or more; set it to at least "
                         f"{2 * cfg.eval.batch_size} (or 0: the whole valid split)")
    segments_per_epoch = (train_data.shape[1] - 1) // t.tgt_len

    seed_generators(t.seed, device)
    model = build_model(cfg).to(device)
    optimizer = torch.optim.Adam(optimizer_groups(model, t), lr=t.lr)
    state: dict[str, Any]
    state = {"step": 0, "epoch": 0, "segment": 0, "best_valid_bpc": math.inf, "train_seconds": 0.0,
             "train_chars": 0}
    memory: XLMemory | None = None
    if resume and not last_path.exists():
        log(f"note: --resume given but {last_path} does not exist; starting a new run")
    if resume and last_path.exists():
        ck = load_checkpoint(last_path, CHECKPOINT_KIND)
        missing = [k for k in ("optimizer_state", "progress", "rng_state") if k not in ck]
        if missing:
            raise ValueError(f"cannot resume {last_path}: it holds weights only, not a training state (no "
                             f"{missing[0]}); best.pt is written that way — resume from the run's own last.pt")
        _check_resumable(ck["config"], cfg, last_path)
        check_finite_weights(last_path, ck["model_state"])
        model.load_state_dict(ck["model_state"])
        optimizer.load_state_dict(ck["optimizer_state"])
        state = dict(ck["progress"])
        memory = XLMemory.from_state(ck["memory"], device) if ck.get("memory") is not None else None
        set_rng_state(ck["rng_state"], device)
        saved_corpus = ck.get("corpus")
        if saved_corpus and saved_corpus != corpus_signature:
            raise ValueError(f"cannot resume {last_path}: it was trained on another corpus (train split "
                             f"{saved_corpus['train_chars']:,} characters, sha256 {saved_corpus['train_sha256'][:12]}…; "
                             f"{corpus_dir} has {corpus_signature['train_chars']:,}, "
                             f"{corpus_signature['train_sha256'][:12]}…)")
        log(f"resumed {last_path} at step {state['step']}")
    # records written after last.pt (or, starting afresh, before a first last.pt): they come again
    dropped = drop_records_after(results_path, state["step"])
    if dropped:
        log(f"dropped {dropped} record(s) after step {state['step']} from {results_path}")
    n_params = count_parameters(model)
    record_base = {"config": config_to_dict(cfg), "parameters": n_params, "corpus": str(corpus_dir)}
    m = cfg.model
    positions = (f", positions: {m.position_mode}" if m.embedding in ("pe", "tpe", "complex-order") else "")
    positions += f", frequency start: {m.frequency_init}" if m.embedding == "complex-order" else ""
    positions += ", initial phases" if m.initial_phase else ""
    log(f"lm {m.embedding} ({m.network} network{positions}): {n_params:,} parameters, {m.n_layer} layers, "
        f"d_model {m.d_model}; {t.max_steps:,} steps of {t.batch_size} x {t.tgt_len} characters, memory {m.mem_len}")

    def save_last() -> None:
        save_checkpoint(last_path, CHECKPOINT_KIND, cpu_state_dict(model), config_to_dict(cfg),
                        optimizer_state=optimizer.state_dict(), progress=dict(state),
                        memory=None if memory is None else memory.state(), rng_state=rng_state(device),
                        corpus=corpus_signature,
                        step=state["step"])

    def validate() -> float:
        bpc, n = evaluate_bpc(model, valid, tgt_len=t.eval_tgt_len, batch_size=cfg.eval.batch_size,
                              split="valid", progress=progress)
        if bpc < state["best_valid_bpc"]:
            state["best_valid_bpc"] = bpc
            save_checkpoint(best_path, CHECKPOINT_KIND, cpu_state_dict(model), config_to_dict(cfg),
                            step=state["step"], valid_bpc=bpc)
        append_jsonl(results_path, {**record_base, "event": "valid", "step": state["step"], "valid_bpc": bpc,
                                    "valid_chars": n, "train_seconds": state["train_seconds"]})
        return bpc

    model.train()
    bar = tqdm(total=t.max_steps, initial=state["step"], desc=f"lm {cfg.model.embedding}", disable=bars_off(progress),
               dynamic_ncols=True)
    # train_bpc is averaged over the steps since the last log record: log_interval of them, fewer in the
    # first window after a resume (or at max_steps); each record says how many ("window_steps")
    window_loss, window_chars, window_seconds, window_steps = 0.0, 0, 0.0, 0
    # the same since the last validation, for its log line (written whether or not the bar shows: to a log file
    # the run said nothing between its start and its summary)
    since_loss, since_chars, since_seconds = 0.0, 0, 0.0
    stop_at = t.max_steps if stop_after is None else min(t.max_steps, state["step"] + stop_after)
    while state["step"] < stop_at:
        if state["segment"] >= segments_per_epoch:
            state["epoch"] += 1
            state["segment"], memory = 0, None
        start = state["segment"] * t.tgt_len
        x = train_data[:, start:start + t.tgt_len].to(device).long()
        y = train_data[:, start + 1:start + t.tgt_len + 1].to(device).long()
        tic = time.perf_counter()
        lr = learning_rate(state["step"], t)
        for group in optimizer.param_groups:
            group["lr"] = lr * group["lr_scale"]
        logits, memory = model(x, memory)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss_value = loss.item()
        check_finite_loss(loss_value, state["step"] + 1, last_path)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if t.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), t.clip)
        optimizer.step()
        seconds = time.perf_counter() - tic
        state["step"] += 1
        state["segment"] += 1
        state["train_seconds"] += seconds
        state["train_chars"] += y.numel()
        window_loss += loss_value * y.numel()
        window_chars += y.numel()
        window_seconds += seconds
        window_steps += 1
        since_loss += loss_value * y.numel()
        since_chars += y.numel()
        since_seconds += seconds
        bar.update(1)
        if state["step"] % t.log_interval == 0 or state["step"] == t.max_steps:
            bar.set_postfix(bpc=f"{window_loss / window_chars / LN2:.3f}", chars_s=f"{window_chars / window_seconds:,.0f}",
                            lr=f"{lr:.2e}")
            append_jsonl(results_path, {"event": "train", "step": state["step"], "epoch": state["epoch"],
                                        "train_bpc": window_loss / window_chars / LN2, "window_steps": window_steps,
                                        "lr": lr, "chars_per_second": window_chars / window_seconds})
            window_loss, window_chars, window_seconds, window_steps = 0.0, 0, 0.0, 0
        if state["step"] % t.eval_interval == 0 or state["step"] == t.max_steps:
            bpc = validate()
            bar.set_postfix(valid_bpc=f"{bpc:.3f}", best=f"{state['best_valid_bpc']:.3f}")
            with bar.external_write_mode():  # the bar, if shown, is cleared and drawn again below the line
                log(f"lm {cfg.model.embedding}: step {state['step']} train bpc "
                    f"{since_loss / since_chars / LN2:.3f} valid bpc {bpc:.3f} (best {state['best_valid_bpc']:.3f}), "
                    f"{since_chars / max(since_seconds, 1e-9):,.0f} chars/s")
            since_loss, since_chars, since_seconds = 0.0, 0, 0.0
        if state["step"] % t.checkpoint_interval == 0 or state["step"] in (t.max_steps, stop_at):
            save_last()
    bar.close()
    return {"steps": state["step"], "step": state["step"],
            "epochs": state["epoch"] + state["segment"] / segments_per_epoch,
            "parameters": n_params, "best_valid_bpc": state["best_valid_bpc"],
            "train_seconds": state["train_seconds"],
            "chars_per_second": state["train_chars"] / max(state["train_seconds"], 1e-9),
            "budget_reached": state["step"] >= t.max_steps}


SPLITS = ("train", "valid", "test")


def _check_splits(splits: Iterable[str]) -> tuple[str, ...]:
    """``splits`` as a tuple of split names, each once; one-line errors naming the argument and ``--splits``."""
    if isinstance(splits, (str, bytes)):  # "valid" was read as the splits v, a, l, i, d
        raise TypeError(f"splits (--splits) must be a sequence of split names (train, valid, test), got a single "
                        f"{type(splits).__name__}; pass ({splits!r},) for one split")
    try:
        names = tuple(splits)
    except TypeError:
        raise TypeError(f"splits (--splits) must be a sequence of split names (train, valid, test), got "
                        f"{type(splits).__name__}") from None
    if not names:
        raise ValueError("splits (--splits): no split given; choose from train, valid, test")
    bad = [s for s in names if not isinstance(s, str) or s not in SPLITS]
    if bad:
        raise ValueError(f"splits (--splits): unknown split {bad[0]!r}; choose from train, valid, test")
    repeated = [s for s in dict.fromkeys(names) if names.count(s) > 1]
    if repeated:  # each would be evaluated (minutes on a large corpus) and recorded twice
        raise ValueError(f"splits (--splits): {', '.join(map(repr, repeated))} given more than once in {names!r}; "
                         "each split is evaluated once")
    return names


def _check_max_chars(max_chars: Any) -> int | None:
    """``max_chars`` as an int (or None); one-line errors naming the argument and ``--max-chars``."""
    if max_chars is None:
        return None
    value = as_integer(max_chars)  # 2.5 failed as a slice index; True would have kept one character
    if value is None:
        raise TypeError(f"max_chars (--max-chars) must be a positive integer (evaluate the first N characters of each "
                        f"split), got {max_chars!r}")
    if value <= 0:  # -100 dropped the last 100 characters and was recorded as max_chars
        raise ValueError(f"max_chars (--max-chars) must be a positive integer (evaluate the first N characters of "
                         f"each split), got {value}")
    return value


def evaluate_checkpoint(checkpoint: str | Path, corpus_dir: str | Path, *, splits: Iterable[str] = ("valid", "test"),
                        overrides: dict | None = None, progress: bool = True, results: str | Path | None = None,
                        max_chars: int | None = None, device: str | torch.device | None = None,
                        report: Callable[[dict], None] | None = None) -> dict:
    """BPC of a saved model on ``splits``; ``overrides`` replace fields of the checkpoint's ``[eval]`` settings.

    ``splits`` is a sequence of split names, each at most once (``("valid",)``; a bare string is a ``TypeError``).
    ``results`` names a JSON-lines file to append the result to; it is checked before anything is loaded (a file that
    is not a results file, such as the corpus's ``test.txt``, is a one-line error and stays untouched).
    ``report`` is called with the result before it is appended to ``results``, so that a results file that
    cannot be written (a full disk) loses no evaluation.

    ``max_chars`` (a positive integer) evaluates only the first that many characters of each split (recorded as
    ``max_chars``); ``device`` as in :func:`train_language_model`.

    Returns:
        The result (what ``lm eval`` prints as JSON): ``checkpoint``, ``step`` (the training step it was saved at),
        ``parameters``, ``eval`` (the evaluation settings used: tgt_len, mem_len, clamp_len, same_length,
        batch_size), ``embedding``, ``max_chars`` (only when given), ``{split}_bpc`` and ``{split}_chars`` (the
        predicted characters) for each split, and ``eval_seconds``. The line appended to ``results`` adds
        ``"event": "eval"`` and the checkpoint's full ``config``.
    """
    splits = _check_splits(splits)
    max_chars = _check_max_chars(max_chars)
    if results is not None:  # before the evaluation: not appended to a corpus file, a checkpoint, a table
        check_results_file(results, "results (--results)", record=LM_RECORDS)
    ck = load_checkpoint(checkpoint, CHECKPOINT_KIND, required=("config", "model_state"),
                         writer="complexorder lm train")
    try:
        cfg = config_from_dict(ck["config"], LMConfig, where=f"checkpoint {checkpoint} config")
    except (ValueError, KeyError) as exc:
        raise ValueError(f"checkpoint {checkpoint} has no usable language-model config: {exc}") from None
    settings = {**config_to_dict(cfg.eval), **{k: v for k, v in (overrides or {}).items() if v is not None}}
    ev = config_from_dict(settings, EvalSettings, where="evaluation settings")
    for name, value in (("tgt_len", ev.tgt_len), ("batch_size", ev.batch_size)):
        if value <= 0:
            raise ValueError(f"evaluation {name} (--{name.replace('_', '-')}) must be a positive integer, got {value}")
    check_lengths(ev.mem_len, ev.same_length, where="evaluation mem_len (--mem-len)")
    check_clamp_len(ev.clamp_len, "evaluation clamp_len (--clamp-len)")
    model = build_model(cfg)
    try:
        model.load_state_dict(ck["model_state"])
    except RuntimeError as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = " ".join(lines[1:]) if len(lines) > 1 else (lines[0] if lines else "")  # missing and unexpected keys
        detail = detail if len(detail) <= 300 else detail[:300] + " …"
        raise ValueError(f"checkpoint {checkpoint} weights do not match its config: {detail}") from None
    check_finite_weights(checkpoint, ck["model_state"])
    model.to(device if isinstance(device, torch.device) else resolve_device(device))
    corpus = load_corpus(corpus_dir, splits)
    out = {"checkpoint": str(checkpoint), "step": ck.get("step", (ck.get("progress") or {}).get("step")),
           "parameters": count_parameters(model),
           "eval": config_to_dict(ev), "embedding": cfg.model.embedding}
    if max_chars is not None:
        out["max_chars"] = max_chars
    start = time.perf_counter()
    for split in splits:
        ids = corpus[split] if max_chars is None else corpus[split][:max_chars]
        chars = corpus[split].numel()
        if 2 <= chars < 2 * ev.batch_size:  # the batch size's fault, not --max-chars': name it and the file
            raise ValueError(f"the {split} split ({Path(corpus_dir) / f'{split}.txt'}) has {chars:,} characters: too "
                             f"few for {ev.batch_size} evaluation streams of at least 2 characters each; give "
                             f"--batch-size {chars // 2} or less" + (
                                 "" if (overrides or {}).get("batch_size") is not None else
                                 f" (the checkpoint's eval.batch_size is {ev.batch_size})"))
        if max_chars is not None and ids.numel() < 2 * ev.batch_size < 2 * corpus[split].numel():
            raise ValueError(f"max_chars = {max_chars} (--max-chars) leaves the {split} split {ids.numel():,} "
                             f"characters, too few for {ev.batch_size} evaluation streams of 2 or more; give at least "
                             f"{2 * ev.batch_size} (or a smaller batch_size, --batch-size)")
        bpc, n = evaluate_bpc(model, ids, tgt_len=ev.tgt_len, batch_size=ev.batch_size,
                              mem_len=ev.mem_len, same_length=ev.same_length, clamp_len=ev.clamp_len,
                              split=split, progress=progress)
        out[f"{split}_bpc"], out[f"{split}_chars"] = bpc, n
    out["eval_seconds"] = time.perf_counter() - start
    if report is not None:
        report(out)
    if results is not None:
        append_jsonl(results, {**out, "event": "eval", "config": config_to_dict(cfg)})
    return out
