"""The classification training loop: Adam, early stopping on dev accuracy, progress bars.

Models return logits; the loss, the optimiser and the loop live here.
"""

from __future__ import annotations

import copy
import math
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from ..checkpoint import _missing_dirs, _remove_empty_dirs
from ..data.batching import EncodedDataset, iterate_batches
from ..environment import bars_off
from ..errors import RunDirectoryBusy

__all__ = ["LOSSES", "TrainResult", "train_classifier", "evaluate_accuracy", "parameter_groups", "make_optimizers",
           "scale_frequency_lr", "scale_embedding_lr", "count_parameters", "remove_stale_checkpoint_temporaries",
           "check_finite_loss", "run_directory_lock"]

#: Parameters that are angles (periodic): L2 decay would pull them to 0 rather than regularise.
PERIODIC_PARAMETER_NAMES = ("frequency", "initial_phase", "phase")
#: Classifier training losses (see :func:`train_classifier`): the first is the default.
LOSSES = ("cross-entropy", "cross-entropy-of-probabilities")


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


#: Where a model keeps its embedding tables (classifiers: ``embedding``; translation: one per side).
EMBEDDING_ATTRIBUTES = ("embedding", "src_embedding", "tgt_embedding")


def unwrap_parallel(model: nn.Module) -> nn.Module:
    """The model inside a ``DistributedDataParallel`` or ``DataParallel`` wrapper (else ``model``): the optimiser
    groups find the embedding by its attribute, which the wrapper hides (its tables then decayed, and sparse tables
    went to ``Adam``)."""
    while isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        model = model.module
    return model


def parameter_groups(model: nn.Module, weight_decay: float,
                     embedding_attributes: tuple[str, ...] = EMBEDDING_ATTRIBUTES) -> list[dict]:
    """Adam groups: the layers after the embedding with L2 ``weight_decay``; the embedding tables
    (``model.embedding``, or a translation model's ``src_embedding`` / ``tgt_embedding``) and every
    frequency/phase parameter (wherever it is) without. ``embedding_attributes=("embedding",)`` gives the
    grouping before stop 38 (a translation model's tables then decayed), which older checkpoints' optimiser
    states were saved with.

    The authors' code applies L2 to the output layer only, and for frequencies and phases (angles)
    L2 is meaningless (the paper: omega "cannot be directly regularized with L2-norm penalties").
    Embedding tables with sparse gradients are left out: they go to ``SparseAdam``.
    """
    model = unwrap_parallel(model)
    embeddings = [m for m in (getattr(model, n, None) for n in embedding_attributes) if isinstance(m, nn.Module)]
    sparse = {id(p) for m in embeddings if hasattr(m, "sparse_parameters") for p in cast(Any, m).sparse_parameters()}
    embedding_ids = {id(p) for m in embeddings for p in m.parameters()}
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad and id(p) not in sparse:
            free = id(p) in embedding_ids or name.rsplit(".", 1)[-1] in PERIODIC_PARAMETER_NAMES
            (no_decay if free else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def _split_off_scaled(groups: list[dict], ids: set[int], lr: float, scale: float, **settings) -> list[dict]:
    """``groups`` with the parameters whose ``id`` is in ``ids`` moved out into groups of their own, one per group
    they came from and after the others, each with learning rate ``lr * scale``, ``"lr_scale": scale`` and
    ``settings`` over the settings of the group it came from."""
    out, moved_groups = [], []
    for g in groups:
        keep = [p for p in g["params"] if id(p) not in ids]
        moved = [p for p in g["params"] if id(p) in ids]
        if keep:
            out.append({**g, "params": keep})
        if moved:
            moved_groups.append({**g, "params": moved, "lr": lr * scale, "lr_scale": scale, **settings})
    return out + moved_groups


def scale_frequency_lr(model: nn.Module, groups: list[dict], lr: float, scale: float) -> list[dict]:
    """Move every parameter named ``frequency`` into a group of its own with learning rate ``lr * scale`` (and no
    weight decay).

    The group also records ``"lr_scale": scale``, so a schedule that rewrites ``lr`` every step (the
    translation trainer) keeps the ratio: ``group["lr"] = lr * group.get("lr_scale", 1.0)``.
    """
    if scale == 1.0:
        return groups
    return _split_off_scaled(groups, {id(p) for p in frequency_parameters(model)}, lr, scale, weight_decay=0.0)


def scale_embedding_lr(model: nn.Module, groups: list[dict], lr: float, scale: float,
                       embedding_attributes: tuple[str, ...] = EMBEDDING_ATTRIBUTES) -> list[dict]:
    """Move every parameter of the model's embedding layer (``model.embedding``, or a translation model's
    ``src_embedding`` / ``tgt_embedding``) except the frequencies into groups with learning rate ``lr * scale``.

    That is the per-word tables: amplitudes, complex-vanilla's phases, initial phases, real word vectors (and a
    learned position table). The frequencies keep the rate :func:`scale_frequency_lr` gave them. Each moved
    parameter keeps the other settings of the group it came from (its weight decay), and the group records
    ``"lr_scale": scale`` as :func:`scale_frequency_lr`'s does.
    """
    if scale == 1.0:
        return groups
    model = unwrap_parallel(model)
    frequency = {id(p) for p in frequency_parameters(model)}
    tables = {id(p) for m in (getattr(model, n, None) for n in embedding_attributes) if isinstance(m, nn.Module)
              for p in m.parameters() if id(p) not in frequency}
    return _split_off_scaled(groups, tables, lr, scale)


def generator_devices(device: torch.device) -> list[int]:
    """The CUDA devices whose generator a run on ``device`` seeds and draws from: what ``torch.random.fork_rng`` must
    fork for the caller's random state to come back after the run (none on the CPU)."""
    if device.type != "cuda":
        return []
    return [device.index if device.index is not None else torch.cuda.current_device()]


def seed_generators(seed: int, device: torch.device) -> None:
    """Seed torch's CPU generator and, for a GPU, that device's, as ``torch.manual_seed`` seeds them (the same
    numbers), without reseeding the other GPUs or queueing a seed that CUDA would apply when first used (after the
    caller's state was restored by ``fork_rng``)."""
    torch.default_generator.manual_seed(seed)
    if device.type == "cuda":
        with torch.cuda.device(device):
            torch.cuda.manual_seed(seed)


def make_optimizers(model: nn.Module, lr: float, weight_decay: float,
                    frequency_lr_scale: float = 1.0, embedding_lr_scale: float = 1.0) -> list[torch.optim.Optimizer]:
    """Adam for everything with dense gradients, plus SparseAdam for sparse embedding tables (if any).

    ``frequency_lr_scale`` multiplies the learning rate of the complex-order frequencies (every
    parameter named ``frequency``), dense or sparse; ``embedding_lr_scale`` that of the embedding layer's other
    parameters (its per-word tables: see :func:`scale_embedding_lr`); the other parameters keep ``lr``. ``model``
    may be wrapped in ``DistributedDataParallel`` or ``DataParallel`` (the groups are those of the model inside).
    """
    if not frequency_lr_scale >= 0.0:
        raise ValueError(f"frequency_lr_scale must be >= 0, got {frequency_lr_scale}")
    if not embedding_lr_scale >= 0.0:
        raise ValueError(f"embedding_lr_scale must be >= 0, got {embedding_lr_scale}")
    wrapper, model = model, unwrap_parallel(model)
    embedding: Any = getattr(model, "embedding", None)
    sparse = [p for p in (embedding.sparse_parameters() if hasattr(embedding, "sparse_parameters") else [])
              if p.requires_grad]
    if sparse and isinstance(wrapper, nn.parallel.DistributedDataParallel):
        sparse_ids = {id(p) for p in sparse}
        reduced = [name for name, p in model.named_parameters()
                   if id(p) in sparse_ids and name not in wrapper.parameters_to_ignore]
        if reduced:  # else the first backward fails inside DDP: "Cannot access storage of SparseTensorImpl"
            raise ValueError(f"the model's embedding has sparse=True, which DistributedDataParallel cannot reduce "
                             f"({', '.join(reduced)}: DDP takes sparse gradients only from torch.nn.Embedding); "
                             "build the embedding with sparse=False")
    def scaled(groups: list[dict]) -> list[dict]:
        groups = scale_frequency_lr(model, groups, lr, frequency_lr_scale)
        return scale_embedding_lr(model, groups, lr, embedding_lr_scale)

    optimizers: list[torch.optim.Optimizer] = [torch.optim.Adam(scaled(parameter_groups(model, weight_decay)), lr=lr)]
    if sparse:
        sparse_groups = scaled([{"params": sparse}])
        for g in sparse_groups:
            g.pop("weight_decay", None)  # SparseAdam has no weight decay
        optimizers.append(torch.optim.SparseAdam(sparse_groups, lr=lr))
    return optimizers


def frequency_parameters(model: nn.Module) -> list[nn.Parameter]:
    """Every trainable parameter named ``frequency`` (the complex-order frequencies ``omega``), in model order."""
    return [p for name, p in model.named_parameters() if p.requires_grad and name.rsplit(".", 1)[-1] == "frequency"]


@torch.no_grad()
def decay_frequencies(parameters: list[nn.Parameter], factor: float) -> None:
    """Decoupled weight decay of the frequencies after an optimiser step: ``omega <- (1 - factor) omega``.

    With a sparse gradient (``SparseAdam``) only the rows the gradient touched decay, as only they were
    updated (a lazy decay, the sparse counterpart of AdamW's); with a dense gradient every entry decays, as
    in AdamW. A parameter without a gradient this step is left as it is. The training loop calls it with
    ``factor = lr * frequency_lr_scale * frequency_decay``.
    """
    if not 0.0 <= factor < 1.0:
        raise ValueError(f"the frequency decay factor (lr * frequency_lr_scale * frequency_decay) must be in [0, 1), "
                         f"got {factor}")
    if factor == 0.0:
        return
    for p in parameters:
        grad = p.grad
        if grad is None:
            continue
        if grad.is_sparse:
            rows = grad.coalesce().indices()[0]  # coalesced: each row once
            p.index_copy_(0, rows, p.index_select(0, rows).mul_(1.0 - factor))
        else:
            p.mul_(1.0 - factor)


def device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s parameters are: batches are moved there."""
    return next(model.parameters()).device


def cpu_state_dict(model: nn.Module) -> dict:
    """The model's state dict in CPU tensors: what checkpoints hold, whatever the device it trained on.

    A tensor under several keys (a tied embedding and output layer) is copied once, and its keys share the copy, as
    they share it on the CPU: ``.cpu()`` of a GPU tensor makes a new copy per key, and ``torch.save`` stored each.
    """
    copies: dict[int, torch.Tensor] = {}
    state = {}
    for key, tensor in model.state_dict(keep_vars=True).items():  # the tensors themselves: tied keys give one object
        if id(tensor) not in copies:
            copies[id(tensor)] = tensor.detach().cpu()
        state[key] = copies[id(tensor)]
    return state


def check_finite_loss(loss: float, step: int, last_path: Path) -> None:
    """Stop a run whose loss at ``step`` is NaN or infinite (it would train on to NaN weights and exit 0) with a
    one-line ``FloatingPointError`` saying whether ``last_path`` keeps an earlier checkpoint."""
    if not math.isfinite(loss):
        kept = f"{last_path} keeps the last checkpoint" if last_path.is_file() else "no checkpoint was saved"
        raise FloatingPointError(f"training diverged at step {step}: the loss is {loss} ({kept}); lower train.lr or "
                                 f"raise train.warmup_steps")


#: The temporary name :func:`complexorder.checkpoint.atomic_write_bytes` gives a checkpoint ``NAME.pt`` while
#: writing it (``tempfile.mkstemp``: prefix ``.NAME.pt.``, eight random characters, suffix ``.tmp``), for the names
#: the trainings write (``last.pt``, ``best.pt``, ``epochN.pt``): another command's write into the same directory
#: (``translate average --output RUN/avg.pt``) is not theirs to remove.
_CHECKPOINT_TEMPORARY = re.compile(r"\.((?:last|best|epoch[0-9]+)\.pt)\.[a-z0-9_]{8}\.tmp")


def remove_stale_checkpoint_temporaries(run_dir: str | Path, log=print, prefix: str = "") -> int:
    """Remove the temporary checkpoint files (``.last.pt.XXXXXXXX.tmp``, of ``last.pt``, ``best.pt`` and
    ``epochN.pt``) that a write killed before its rename (SIGKILL, power loss) left in ``run_dir``; they are
    incomplete by construction. Logs one line (after ``prefix``) when there were any; returns how many were
    removed. Call it when a run starts or resumes, holding :func:`run_directory_lock`."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return 0
    stale = sorted(p for p in run_dir.iterdir()
                   if _CHECKPOINT_TEMPORARY.fullmatch(p.name) and p.is_file() and not p.is_symlink())
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        log(f"{prefix}removed {len(stale)} incomplete checkpoint file(s) left in {run_dir} by an interrupted write "
            f"({', '.join(p.name for p in stale[:3])}{', …' if len(stale) > 3 else ''})")
    return len(stale)


#: The lock file a training holds in its run directory (an advisory ``flock``; released when the process ends).
RUN_LOCK_NAME = ".complexorder.lock"


@contextmanager
def run_directory_lock(run_dir: str | Path, option: str, log=print):
    """Hold an exclusive lock on ``run_dir`` while a training writes into it; a second training started in the same
    directory meanwhile gets a one-line error (:class:`~complexorder.errors.RunDirectoryBusy`) naming ``option`` and
    the holder's process id, instead of both writing ``last.pt`` (and each removing the other's temporary
    checkpoint files at start).

    The lock is an advisory ``flock`` on ``run_dir/.complexorder.lock``: the system releases it when the process
    ends, however it ends, so a killed run leaves no stale lock. Missing directories are made; those made here that
    hold nothing but the lock file when the training ends (it failed before writing anything) are removed again, so
    a run refused on its input leaves no empty directory behind. Where ``fcntl`` is missing (Windows) or the file
    system cannot lock (some network mounts) the training runs unlocked, the latter with a note through ``log``.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on this project's machines
        yield
        return
    run_dir = Path(run_dir)
    made = _missing_dirs(run_dir)  # the directories made here, deepest first
    run_dir.mkdir(parents=True, exist_ok=True)
    lock_path = run_dir / RUN_LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise RunDirectoryBusy(f"{option}: another training is writing into {run_dir} (process {holder}); wait "
                                   f"for it to finish, or choose another directory") from None
        except OSError as exc:  # ENOLCK, EOPNOTSUPP: a file system without locks
            locked = False
            log(f"note: {option}: {run_dir} cannot be locked ({exc.strerror}); training without the lock that "
                f"refuses a second training in the same directory")
        if locked:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            try:
                only_the_lock = bool(made) and [p.name for p in run_dir.iterdir()] == [RUN_LOCK_NAME]
            except OSError:  # the directory went away meanwhile: nothing to tidy, and no error to mask
                only_the_lock = False
            if only_the_lock:
                lock_path.unlink(missing_ok=True)
                _remove_empty_dirs(made)  # one another process wrote into meanwhile is kept
    finally:
        os.close(fd)


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, data: EncodedDataset, batch_size: int = 256, min_length: int = 1) -> float:
    """Accuracy of ``model`` on ``data`` (eval mode; the previous mode is restored)."""
    was_training = model.training
    model.eval()
    correct = 0
    device = device_of(model)
    for tokens, labels in iterate_batches(data, batch_size, min_length=min_length, bucket=True,
                                          bucket_batches=len(data)):
        correct += (model(tokens.to(device)).argmax(-1) == labels.to(device)).sum().item()
    model.train(was_training)
    return correct / max(1, len(data))


@dataclass
class TrainResult:
    best_dev_accuracy: float
    best_epoch: int
    epochs_run: int
    seconds_per_epoch: float
    history: list[dict] = field(default_factory=list)


def train_classifier(model: nn.Module, train: EncodedDataset, dev: EncodedDataset | None, *, epochs: int,
                     batch_size: int, lr: float, weight_decay: float = 0.0, seed: int = 0, patience: int | None = None,
                     min_length: int = 1, clip_norm: float | None = 5.0, bucket: bool = True, progress: bool = True,
                     desc: str = "train", monitor: EncodedDataset | None = None,
                     frequency_lr_scale: float = 1.0, frequency_decay: float = 0.0,
                     loss: str = "cross-entropy", patience_floor: float | None = None,
                     embedding_lr_scale: float = 1.0) -> TrainResult:
    """Train with cross-entropy and Adam; keep (and load back) the weights of the best dev epoch.

    Sparse embedding tables (``sparse=True``) are optimised by ``SparseAdam`` and left out of
    gradient clipping (``clip_norm`` applies to the dense gradients). ``bucket`` batches examples of
    similar length together (see :func:`iterate_batches`).

    Without ``dev`` the last epoch is kept. ``patience`` stops after that many epochs without a
    better dev accuracy. ``patience_floor`` (``None``, the default: off) holds patience back until the best dev
    accuracy is above it: with the dev majority-class rate as the floor, a run whose dev accuracy sits at what
    predicting one class scores (a plateau some runs leave only after several epochs) trains on, up to ``epochs``,
    instead of being stopped there. ``seconds_per_epoch`` counts training steps only (no evaluation).

    ``frequency_lr_scale`` scales the learning rate of the complex-order frequencies (see
    :func:`make_optimizers`), ``embedding_lr_scale`` that of the embedding's other parameters (its per-word tables:
    amplitudes, phases, word vectors; see :func:`scale_embedding_lr`). ``frequency_decay`` (0 by default: none)
    shrinks the frequencies towards 0 after every step by the factor ``1 - lr * frequency_lr_scale * frequency_decay`` (decoupled, as AdamW; see
    :func:`decay_frequencies`), an extension not in the paper: a frequency that the loss does not keep pushing
    away from 0 decays back, with a half-life of ``ln 2 / (lr * frequency_lr_scale * frequency_decay)`` steps.

    ``loss``: ``"cross-entropy"`` (default: ``-log softmax(z)_y`` of the model's logits ``z``) or
    ``"cross-entropy-of-probabilities"`` (``-log softmax(softmax(z))_y``: what the authors' Transformer classifier
    trains, whose model returns ``softmax(z)`` to ``nn.CrossEntropyLoss``, which applies its own softmax; an
    option for reproducing it, not a recommendation). The second squashes the inputs of the loss into [0, 1], so
    it never reaches 0 (two classes: at least ``log(1 + e^-1) = 0.313``) and keeps pushing every example. The
    predictions (``argmax z``) are the same for both.

    A loss that becomes NaN or infinite ends the training: the best dev epoch so far is kept (the history's last
    record says ``"diverged": True``), or, with no such epoch, a one-line ``FloatingPointError`` is raised.

    ``monitor`` (e.g. the test split) is scored after every epoch and recorded in the history as
    ``monitor_accuracy``, for diagnostics only: it never influences the epoch that is kept or when
    training stops.
    """
    if epochs <= 0:
        raise ValueError(f"epochs must be positive, got {epochs}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {loss!r}")
    squash = loss == "cross-entropy-of-probabilities"
    generator = torch.Generator().manual_seed(seed)
    device = device_of(model)
    optimizers = make_optimizers(model, lr, weight_decay, frequency_lr_scale, embedding_lr_scale)
    decay_factor = lr * frequency_lr_scale * frequency_decay
    if not (frequency_decay >= 0.0 and decay_factor < 1.0):
        raise ValueError(f"frequency_decay must be >= 0 with lr * frequency_lr_scale * frequency_decay < 1, got "
                         f"{frequency_decay} (lr {lr}, frequency_lr_scale {frequency_lr_scale})")
    decayed = frequency_parameters(model) if decay_factor > 0.0 else []
    best_acc, best_epoch, best_state = -1.0, 0, None
    history, train_seconds = [], 0.0
    steps_per_epoch = math.ceil(len(train) / batch_size)
    bar = tqdm(total=epochs * steps_per_epoch, desc=desc, disable=bars_off(progress), leave=False, dynamic_ncols=True)
    epoch = 0
    for epoch in range(1, epochs + 1):
        model.train()
        start = time.perf_counter()
        total_loss, seen = 0.0, 0
        for tokens, labels in iterate_batches(train, batch_size, shuffle=True, generator=generator,
                                              min_length=min_length, bucket=bucket):
            tokens, labels = tokens.to(device), labels.to(device)
            logits = model(tokens)
            batch_loss = F.cross_entropy(logits.softmax(-1) if squash else logits, labels)
            for optimizer in optimizers:
                optimizer.zero_grad(set_to_none=True)
            batch_loss.backward()
            if clip_norm:
                nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None and not p.grad.is_sparse],
                                         clip_norm)
            for optimizer in optimizers:
                optimizer.step()
            if decayed:
                decay_frequencies(decayed, decay_factor)
            total_loss += batch_loss.item() * len(labels)
            seen += len(labels)
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{total_loss / seen:.4f}")
        train_seconds += time.perf_counter() - start
        record = {"epoch": epoch, "train_loss": total_loss / max(1, seen)}
        if not math.isfinite(record["train_loss"]):  # the weights are NaN or infinite from here on
            if best_state is None:  # nothing finite to keep: a chance-level result must not be recorded as finished
                raise FloatingPointError(f"{desc}: training diverged in epoch {epoch}: the mean training loss is "
                                         f"{record['train_loss']}, and no earlier epoch was kept by dev accuracy; "
                                         "lower the learning rate (this unit is not recorded)")
            history.append({**record, "diverged": True})  # keep the best dev epoch, as early stopping would
            break
        if dev is not None:
            acc = evaluate_accuracy(model, dev, min_length=min_length)
            record["dev_accuracy"] = acc
            if acc > best_acc:
                best_acc, best_epoch, best_state = acc, epoch, copy.deepcopy(model.state_dict())
            bar.set_postfix(epoch=epoch, loss=f"{record['train_loss']:.4f}", dev=f"{acc:.3f}")
        if monitor is not None:
            record["monitor_accuracy"] = evaluate_accuracy(model, monitor, min_length=min_length)
        history.append(record)
        if (patience is not None and dev is not None and epoch - best_epoch >= patience
                and (patience_floor is None or best_acc > patience_floor)):
            break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    else:
        best_epoch = epoch
    return TrainResult(best_acc, best_epoch, epoch, train_seconds / epoch, history)
