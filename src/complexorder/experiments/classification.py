"""The text-classification grid (paper Sec. 3.1, Table 2): datasets x models x embedding variants x folds/seeds.

A *unit* is one training run: (dataset, model, variant, split), where the split is ``fold-K``
(10-fold CV data sets) or ``seed-S`` (SST2, TREC). Each finished unit is appended as one JSON
line to the results file (config, seed, vectors, scores, seconds per epoch, parameters), so an
interrupted grid loses no finished result and a re-run skips what is done.

The Table 4 ablation uses the same runner: its rows are *variants* (an embedding name plus
options such as ``frequency_sharing`` and the model's ``share_weights``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from tqdm.auto import tqdm

from .. import __version__
from ..checkpoint import (append_jsonl, check_results_file, check_writable, is_cut_record, load_checkpoint,
                          save_checkpoint, scan_jsonl)
from ..config import (FLOAT32_MAX, _check_value, check_number, config_from_dict, config_to_dict, find_config,
                      is_finite_number, plain_numbers, read_extended_toml)
from ..data.batching import EncodedDataset
from ..data.classification import DATASETS, dataset_digest, dataset_folder, load_dataset, make_split, split_ids
from ..data.download import sha256_of
from ..data.paths import resolve_data_dir
from ..data.vectors import (VECTOR_FORMATS, load_word_vectors, vectors_dimension, vectors_for_vocabulary,
                            vectors_provenance, vectors_rows_problem)
from ..data.vocab import Vocabulary
from ..embeddings import EMBEDDINGS, build_embedding, embedding_options
from ..environment import bars_off, cpu_info, resolve_device
from ..errors import naming_out_of_memory
from ..models import CLASSIFIERS, build_classifier
from ..models.transformer import NETWORKS, POSITION_ORDERS, READOUTS
from ..nn.functional import ATTENTION_SCORES, as_integer
from .training import (LOSSES, count_parameters, cpu_state_dict, evaluate_accuracy, generator_devices, seed_generators,
                       train_classifier)

__all__ = ["ModelSettings", "Variant", "GridConfig", "Unit", "load_grid_config", "plan_units", "run_grid", "run_unit",
           "check_grid_outputs", "build_model_from_config", "unit_key"]


@dataclass
class ModelSettings:
    """Hyper-parameters of one architecture (the paper's pool: batch {32,64,128}, lr {1e-3,1e-4,1e-5},
    L2 {0,1e-3,1e-4}, hidden {120,128}, filters {64,128}).

    ``sparse_embeddings`` trains the embedding tables with sparse gradients and ``SparseAdam`` (a lazy
    Adam that updates only the rows of the words in the batch; 2-4x faster epochs on CPU).
    ``weight_decay`` (L2) applies to every layer after the embedding (the authors' code decays the output layer only;
    the embedding tables, frequencies and phases are never decayed). The table2 config uses 0.
    ``frequency_lr_scale`` multiplies the learning rate of the complex-order frequencies only (not in
    the paper's pool; 1.0, the default, trains them like every other parameter).
    ``embedding_lr_scale`` (an extension, not in the paper; 1.0, the default, is none) multiplies the learning rate
    of the embedding layer's other parameters: its per-word tables (amplitudes, complex-vanilla's phases, initial
    phases, real word vectors), dense or sparse; the frequencies keep ``frequency_lr_scale``.
    ``frequency_decay`` (an extension, not in the paper; 0, the default, is none) shrinks the complex-order
    frequencies towards 0 after every step, ``omega <- (1 - lr * frequency_lr_scale * frequency_decay) omega``
    (decoupled as in AdamW; with sparse embeddings only the rows of the words in the batch): a frequency the loss
    does not keep pushing away from 0 decays back to a position-free word.
    ``attention_score`` is how the complex Transformer scores a query-key product: ``"modulus"`` (paper
    Eq. 14, the default), ``"real"`` (``Re(q . conj(k))``, not the paper's) or ``"bilinear"`` (``|q . k|``
    without the conjugate, as the authors' classification code computes it); real embeddings run
    PyTorch's layers, whose dot product is already the real one, and ignore it.
    ``readout`` (Transformer only) turns the token states into features: ``"modulus-of-mean"`` (default,
    ``|mean_t z_t|``), ``"mean-of-modulus"`` (``mean_t |z_t|``; complex layers, real ones take the mean) or
    ``"last"`` (the last token's state, every embedding); see :class:`~complexorder.models.TransformerClassifier`.
    ``position_order`` (Transformer only): ``"forward"`` (default, positions from each sentence's first token) or
    ``"from-end"`` (each sentence's last token at position 0; the authors' Transformer classifier counts from the last
    of its 53 padded slots, which is ``"from-end"`` with ``fixed_length = 53``).
    ``loss``: ``"cross-entropy"`` (default) or ``"cross-entropy-of-probabilities"`` (cross-entropy applied to the
    softmax probabilities, i.e. a second softmax: what the authors' Transformer classifier trains; see
    :func:`~complexorder.experiments.training.train_classifier`).
    ``fixed_length`` (Transformer only; 0, the default, is off): the authors' Transformer classifier's input
    (torchtext ``fix_length = 53``): every sentence right-padded to exactly this many tokens with ``<pad>``, which is
    then a learned word (the embedding gets no ``padding_idx``) that every position attends to, without a mask; with
    ``readout = "last"`` and ``position_order = "from-end"`` the state of slot ``fixed_length - 1`` (position 0) is read
    out, as theirs. A data set with a longer sentence is refused before any training (nothing is truncated).
    ``patience_above_majority`` (false, the default, as the paper's protocol): when true, epochs do not count
    towards ``patience`` until the best dev accuracy is above the dev majority-class rate (what predicting one
    class scores), so a run that sits at that plateau for its first epochs trains on, up to ``epochs``, instead of
    stopping there (TPE on CR did so in half its folds: ``benchmarks/results/table2_tpe_cr_patience.md``).
    ``num_layers`` stacks the Transformer's encoder layers or the LSTM's layers (1, the default, as the paper; FastText
    and the CNN refuse another value; before stop 77 the LSTM ignored it) and ``bidirectional`` (LSTM only, false by
    default) adds a backward LSTM whose final state is read out beside the forward one's.
    """

    embedding_dim: int = 300
    pretrained: bool = True
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0
    dropout: float = 0.5
    epochs: int = 10
    patience: int = 3
    hidden: int = 128
    filters: int = 128
    filter_sizes: tuple[int, ...] = (3, 4, 5)
    nhead: int = 8
    dim_feedforward: int = 512
    num_layers: int = 1
    share_weights: bool = False
    sparse_embeddings: bool = True
    frequency_lr_scale: float = 1.0
    frequency_decay: float = 0.0
    embedding_lr_scale: float = 1.0
    attention_score: str = "modulus"
    network: str = "auto"  # transformer only: "real" feeds a complex embedding's [Re f, Im f] to real layers;
    # "authors": the layers of the authors' released Transformer classifier
    readout: str = "modulus-of-mean"  # transformer only: |mean z|, mean |z| (complex layers) or "last"
    position_order: str = "forward"  # transformer only: "from-end" puts each sentence's last token at position 0
    loss: str = "cross-entropy"  # or "cross-entropy-of-probabilities" (the authors' Transformer classifier)
    fixed_length: int = 0  # transformer only: > 0 pads every sentence to it with a learned, unmasked <pad>
    patience_above_majority: bool = False  # patience counts only once dev beats the majority-class rate
    bidirectional: bool = False  # lstm only: a second LSTM reads each sentence backwards (num_layers stacks it)

    def validate(self, where: str, architecture: str | None = None) -> None:
        """Raise a one-line ``ValueError`` naming ``where`` (e.g. ``[cnn]``) and the key for a value out of range.

        ``architecture`` adds the checks only it needs (the Transformer's heads must divide ``embedding_dim``)."""
        def fail(key: str, expected: str) -> None:
            raise ValueError(f"{where} {key} must be {expected}, got {getattr(self, key)!r}")

        for key in ("embedding_dim", "batch_size", "epochs", "hidden", "filters", "nhead", "dim_feedforward",
                    "num_layers"):
            value = getattr(self, key)
            if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                fail(key, "a positive integer")
        if not (isinstance(self.patience, int) and not isinstance(self.patience, bool) and self.patience >= 1):
            fail("patience", "a positive integer (epochs without a better dev accuracy before stopping)")
        if not isinstance(self.patience_above_majority, bool):
            fail("patience_above_majority", "true or false")
        if not isinstance(self.bidirectional, bool):
            fail("bidirectional", "true or false")
        if architecture not in (None, "lstm") and self.bidirectional:
            fail("bidirectional", "false (only the lstm reads both ways)")
        if architecture in ("fasttext", "cnn") and self.num_layers != 1:
            fail("num_layers", "1 (only the lstm and the transformer stack layers)")
        if architecture == "transformer" and self.embedding_dim % self.nhead:
            fail("nhead", f"a divisor of embedding_dim ({self.embedding_dim})")
        sizes = self.filter_sizes
        if not (isinstance(sizes, (list, tuple)) and sizes
                and all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in sizes)):
            fail("filter_sizes", "a non-empty list of positive integers")
        check_number(f"{where} lr", self.lr, low=0.0, high=FLOAT32_MAX, low_open=True,
                     meaning=" (Adam keeps it in float32)")
        check_number(f"{where} weight_decay", self.weight_decay, low=0.0)
        if not (isinstance(self.dropout, (int, float)) and 0 <= self.dropout < 1):
            fail("dropout", "a number in [0, 1)")
        for key in ("frequency_lr_scale", "embedding_lr_scale"):  # inf would train to NaN; true is no scale
            if not is_finite_number(getattr(self, key), 0.0):
                fail(key, "a finite number >= 0")
        if not (isinstance(self.frequency_decay, (int, float)) and not isinstance(self.frequency_decay, bool)
                and self.frequency_decay >= 0 and self.lr * self.frequency_lr_scale * self.frequency_decay < 1):
            fail("frequency_decay", "a number >= 0 with lr * frequency_lr_scale * frequency_decay < 1")
        if self.attention_score not in ATTENTION_SCORES:
            fail("attention_score", f"one of {', '.join(map(repr, ATTENTION_SCORES))}")
        if self.network not in NETWORKS:
            fail("network", f"one of {', '.join(map(repr, NETWORKS))}")
        if architecture not in (None, "transformer") and self.network != "auto":
            fail("network", "'auto' (only the transformer has a real network for complex embeddings)")
        if self.readout not in READOUTS:
            fail("readout", f"one of {', '.join(map(repr, READOUTS))}")
        if architecture not in (None, "transformer") and self.readout != READOUTS[0]:
            fail("readout", f"{READOUTS[0]!r} (only the transformer chooses its read-out)")
        if self.network == "authors" and self.readout != "last":
            fail("readout", "'last' with network = 'authors' (it reads [Re h, Im h] of one position, as the authors' "
                 "code)")
        if self.position_order not in POSITION_ORDERS:
            fail("position_order", f"one of {', '.join(map(repr, POSITION_ORDERS))}")
        if architecture not in (None, "transformer") and self.position_order != POSITION_ORDERS[0]:
            fail("position_order", f"{POSITION_ORDERS[0]!r} (only the transformer chooses its positions)")
        if self.loss not in LOSSES:
            fail("loss", f"one of {', '.join(map(repr, LOSSES))}")
        length = self.fixed_length
        if not (isinstance(length, int) and not isinstance(length, bool) and length >= 0):
            fail("fixed_length", "an integer >= 0 (0: off; L: every sentence padded to L tokens)")
        if architecture not in (None, "transformer") and self.fixed_length:
            fail("fixed_length", "0 (only the transformer pads to a fixed length)")

    def model_options(self, architecture: str, share_weights: bool) -> dict[str, Any]:
        if architecture == "fasttext":
            return {"hidden": self.hidden, "dropout": self.dropout, "share_weights": share_weights}
        if architecture == "cnn":
            return {"filters": self.filters, "filter_sizes": tuple(self.filter_sizes), "dropout": self.dropout,
                    "share_weights": share_weights}
        if architecture == "lstm":
            return {"hidden": self.hidden, "dropout": self.dropout, "share_weights": share_weights,
                    "num_layers": self.num_layers, "bidirectional": self.bidirectional}
        return {"nhead": self.nhead, "dim_feedforward": self.dim_feedforward, "num_layers": self.num_layers,
                "dropout": self.dropout, "share_weights": share_weights, "attention_score": self.attention_score,
                "network": self.network, "readout": self.readout, "position_order": self.position_order,
                "fixed_length": self.fixed_length or None}

    def __post_init__(self) -> None:
        plain_numbers(self)  # NumPy numbers (np.int64(3), np.float32(1e-3)) stored as plain ones (JSON)


@dataclass
class Variant:
    """A row of the table: an embedding of the family with options, and the model's weight sharing."""

    label: str
    embedding: str
    options: dict = field(default_factory=dict)
    share_weights: bool | None = None


#: The fields of a grid that name files or directories: a ``Path`` is taken and stored as a string.
PATH_FIELDS = ("vectors", "data_dir", "results", "checkpoint_dir")


def _transformer_settings() -> ModelSettings:
    return ModelSettings(embedding_dim=256, pretrained=False, dropout=0.1, dim_feedforward=512, nhead=8)


@dataclass
class GridConfig:
    """A whole grid; every field can be set in a TOML file (unknown keys are rejected)."""

    name: str = "table2"
    datasets: list[str] = field(default_factory=lambda: ["MR", "SUBJ", "CR", "MPQA", "SST2", "TREC"])
    models: list[str] = field(default_factory=lambda: list(CLASSIFIERS))
    embeddings: list[str] = field(default_factory=lambda: list(EMBEDDINGS))
    variants: list[Variant] = field(default_factory=list)
    folds: list[int] = field(default_factory=lambda: list(range(10)))
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    vectors: str | None = None
    vectors_format: str = "auto"
    data_dir: str | None = None
    results: str = "runs/classify/results.jsonl"
    checkpoint_dir: str | None = None
    device: str | None = None  # cpu, cuda, cuda:N; None/"auto": a GPU when torch sees one (not part of a unit's hash)
    fasttext: ModelSettings = field(default_factory=ModelSettings)
    cnn: ModelSettings = field(default_factory=ModelSettings)
    lstm: ModelSettings = field(default_factory=ModelSettings)
    transformer: ModelSettings = field(default_factory=_transformer_settings)

    def resolved_variants(self) -> list[Variant]:
        return self.variants or [Variant(name, name) for name in self.embeddings]

    def check_names(self, where: str) -> None:
        """A one-line error naming ``where`` (the config file) and the key or variant of a dataset, model or embedding
        name that does not exist; :meth:`validate` checks them again after the command line's subsets."""
        for key, valid in (("datasets", DATASETS), ("models", CLASSIFIERS)):
            for name in getattr(self, key):
                if name not in valid:
                    raise ValueError(f"{where}: {key}: unknown name {name!r}; valid names: {', '.join(valid)}")
        for v in self.resolved_variants():
            if v.embedding not in EMBEDDINGS:
                who = f"variant {v.label!r}: unknown embedding" if self.variants else "embeddings: unknown name"
                raise ValueError(f"{where}: {who} {v.embedding!r}; valid names: {', '.join(EMBEDDINGS)}")

    def validate(self) -> None:
        """One-line ``ValueError`` naming the key for a field that is wrong (an unknown name, an empty or repeated
        list, settings out of range, ...). A tuple, a range or a NumPy array of a list field is stored as a list,
        and a ``Path`` of a path field (``vectors``, ``data_dir``, ``results``, ``checkpoint_dir``) as a string.
        The caller's random state is left as it was (the checks build tiny embeddings)."""
        with torch.random.fork_rng(devices=[]):
            self._validate()

    def _validate(self) -> None:
        for key in PATH_FIELDS:  # a Path was written into every record and failed there (not JSON)
            value = getattr(self, key)
            if isinstance(value, os.PathLike):
                value = os.fspath(value)
                setattr(self, key, value)
            if not (isinstance(value, str) or (value is None and key != "results")):
                raise ValueError(f"{key} must be a path (a string){'' if key == 'results' else ' or None'} (config "
                                 f"`{key}` / --{key.replace('_', '-')}), got {value!r}")
        if not isinstance(self.name, str) or not self.name:  # recorded with every result as its grid
            raise ValueError(f"name must be a non-empty string (config `name`), got {self.name!r}")
        for key in ("datasets", "models", "embeddings", "folds", "seeds"):  # the Python API: "CR" iterated as C, R
            value = getattr(self, key)
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise ValueError(f"{key} must be a list (config `{key}` / --{key}), got {value!r}")
            if not isinstance(value, list):  # a tuple, a range, a NumPy array: the list it holds
                setattr(self, key, list(value))
        for key in ("folds", "seeds"):  # NumPy integers (np.arange) taken as ints, as everywhere
            values = getattr(self, key)
            numbers = [as_integer(v) for v in values]
            bad = [v for v, n in zip(values, numbers) if n is None]
            if bad:
                raise ValueError(f"{key} must hold integers (config `{key}` / --{key}), got {bad[0]!r}")
            setattr(self, key, numbers)
        resolve_device(self.device, "device (config `device` / --device)")
        for key, valid in (("datasets", DATASETS), ("models", CLASSIFIERS)):  # was "0 units ... 0 to run", exit 0
            if not getattr(self, key):
                raise ValueError(f"{key} is empty (config `{key}` / --{key}); list at least one of "
                                 f"{', '.join(valid)}")
        if not self.variants and not self.embeddings:
            raise ValueError(f"embeddings is empty (config `embeddings` / --embeddings) and no variants are given; "
                             f"list at least one of {', '.join(EMBEDDINGS)}")
        for key in ("datasets", "models", "folds", "seeds"):  # a repeated entry would train each of its units twice
            values = getattr(self, key)
            repeated = [v for v in dict.fromkeys(values) if values.count(v) > 1]
            if repeated:
                raise ValueError(f"{key} lists {', '.join(map(repr, repeated))} more than once (config `{key}` or "
                                 f"--{key}); each unit would train and be recorded twice")
        for name in self.datasets:
            if name not in DATASETS:
                raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
        for name in self.models:
            if name not in CLASSIFIERS:
                raise ValueError(f"unknown model {name!r}; valid names: {', '.join(CLASSIFIERS)}")
        for v in self.resolved_variants():
            if v.embedding not in EMBEDDINGS:
                raise ValueError(f"unknown embedding {v.embedding!r}; valid names: {', '.join(EMBEDDINGS)}")
        if self.vectors_format not in VECTOR_FORMATS:
            raise ValueError(f"vectors_format must be one of {', '.join(VECTOR_FORMATS)}, got {self.vectors_format!r}")
        for name in self.models:
            getattr(self, name).validate(f"[{name}]", name)
            network = getattr(self, name).network
            if network in ("complex", "authors"):
                for v in self.resolved_variants():
                    if not build_embedding(v.embedding, 4, 4, padding_idx=0).is_complex:
                        raise ValueError(f"[{name}] network = {network!r} needs complex embeddings; variant "
                                         f"{v.label!r} uses the real embedding {v.embedding!r}")
                    if network == "authors" and (getattr(self, name).share_weights if v.share_weights is None
                                                 else v.share_weights):
                        raise ValueError(f"[{name}] network = 'authors' has real weights shared by both parts "
                                         f"already; variant {v.label!r} sets share_weights")
            for v in self.resolved_variants():  # shared real/imaginary weights exist in complex layers only
                model_wide = getattr(self, name).share_weights and v.share_weights is None
                if not (v.share_weights or model_wide):
                    continue
                who = (f"[{name}] share_weights = true, but variant {v.label!r}" if model_wide
                       else f"[{name}] variant {v.label!r} sets share_weights, but it")
                if not _is_complex_embedding(v.embedding):
                    if model_wide:  # it applies to the complex rows; the real rows' records say share_weights false
                        continue
                    raise ValueError(f"{who} uses the real embedding {v.embedding!r}: real layers have no "
                                     "real/imaginary weights to share")
                if network == "real":
                    raise ValueError(f"{who} runs in network = 'real', whose real layers have no real/imaginary "
                                     "weights to share")
        runner_owned = {"sparse", "device", "dtype", "padding_idx", "max_positions", "pretrained", "num_embeddings",
                        "embedding_dim"}
        for v in self.resolved_variants():
            if v.options:  # a tiny table built now: a misspelt option fails before any training, not after
                owned = sorted(set(v.options) & runner_owned)
                if owned:
                    raise ValueError(f"variant {v.label!r}: option(s) {', '.join(owned)} are set by the runner "
                                     "(sparse from the model section's sparse_embeddings, the sizes, padding and "
                                     "pretrained vectors from the data), not per variant")
                settable = sorted(embedding_options(v.embedding) - runner_owned)
                unknown = sorted(set(v.options) - set(settable))
                if unknown:  # build_embedding's list would offer sparse, device and dtype, refused just above
                    raise ValueError(f"variant {v.label!r}: option(s) {', '.join(unknown)} not accepted by embedding "
                                     f"{v.embedding!r}; " + (f"accepted: {', '.join(settable)}" if settable
                                                             else "it takes no options per variant"))
                try:
                    build_embedding(v.embedding, 4, 4, padding_idx=0, **v.options)
                except (TypeError, ValueError) as err:
                    raise ValueError(f"variant {v.label!r}: {err}") from None
                starts = [m for m in self.models if getattr(self, m).pretrained] if self.vectors else []
                if starts:  # a shared amplitude has no per-word row for a word's vector; this used to fail only
                    try:    # when the grid reached that unit, after the earlier units had trained
                        build_embedding(v.embedding, 4, 4, padding_idx=0, pretrained=torch.ones(4, 4), **v.options)
                    except (TypeError, ValueError) as err:
                        raise ValueError(f"variant {v.label!r} cannot start from the word vectors that [{starts[0]}] "
                                         f"pretrained = true gives it ({err}); set pretrained = false in "
                                         f"[{starts[0]}], or run the variant on models without vectors") from None
        labels = [v.label for v in self.resolved_variants()]
        if any(not label.strip() for label in labels):  # refused by the table renderer only after training
            raise ValueError("variants: a label is empty; give every row a name")
        odd = [label for label in labels if "|" in label or any(c in label for c in "\r\n")]
        if odd:  # each label is a row of a Markdown table
            raise ValueError(f"variant label {odd[0]!r} holds '|' or a line break, which would break the rendered "
                             "Markdown table; rename it")
        if len(set(labels)) != len(labels):
            raise ValueError(f"variant labels must be unique, got {labels}")


def variant_names(variants: list[Variant]) -> list[str]:
    """The names that select among ``variants``: their labels, then their embeddings' names (each once)."""
    return list(dict.fromkeys([v.label for v in variants] + [v.embedding for v in variants]))


def select_variants(variants: list[Variant], names: list[str], what: str = "embeddings") -> list[Variant]:
    """The variants named in ``names``: by label, or by embedding name.

    A name that is some variant's label selects that variant only, even where it is also an embedding name: in the
    Table 4 grid ``complex-order`` is the first row, not every row built on the complex-order embedding. A name that
    is no label selects every variant with that embedding (``complex-order`` in a config whose only such row is
    labelled ``"complex-order, frequency lr x0.1"``). An unknown name is a one-line ``ValueError`` naming ``what``."""
    labels = [v.label for v in variants]
    valid = variant_names(variants)
    if not names:  # no variant selected: an empty `variants` would mean every embedding of the grid
        raise ValueError(f"{what} is empty; select at least one of {'; '.join(repr(v) for v in valid)}")
    for name in names:
        if name not in valid:
            raise ValueError(f"{what}: unknown name {name!r}; valid names: {'; '.join(repr(v) for v in valid)}")
    wanted = set(names)
    return [v for v in variants if v.label in wanted or (v.embedding in wanted and v.embedding not in labels)]


def load_grid_config(config: str | Path = "table2", task: str = "classification", *, epochs: int | None = None,
                     **changes: Any) -> GridConfig:
    """The grid of a packaged config (``"table2"``; ``task="ablation"``: ``"table4"``) or of a TOML file, with
    ``changes`` to its fields, checked as ``complexorder classify`` checks its options.

    Args:
        config: a packaged config name or a path to a TOML file (which may ``extends`` a packaged one).
        task: ``"classification"`` or ``"ablation"``, where packaged names are looked up.
        epochs: every model's epoch cap, as ``--epochs``.
        **changes: :class:`GridConfig` fields: ``datasets=["TREC"]``, ``models=["cnn"]``, ``folds=[0]``,
            ``seeds=[1]``, ``data_dir=...``, ``results=...``; ``embeddings=[...]`` selects the config's variants
            (or those given as ``variants``) by label or embedding name, as ``--embeddings``. Each is type-checked
            as the config file's keys are (a one-line ``ValueError`` naming it); paths may be ``Path`` objects
            (stored as strings); a model section (``fasttext=...``) is a :class:`ModelSettings` or a dict of some of
            its keys, which change the config's section (``fasttext={"lr": 1e-2}``, the rest kept); ``variants``
            is a list of :class:`Variant` or of dicts of their fields.

    Returns:
        The validated :class:`GridConfig`, for :func:`plan_units` and :func:`run_grid`.

    Examples::

        >>> grid = load_grid_config("table2", datasets=["TREC"], models=["cnn"], embeddings=["complex-order"],
        ...                         seeds=[1], epochs=2)
        >>> [(u.dataset, u.model, u.variant.label, u.split) for u in plan_units(grid)]
        [('TREC', 'cnn', 'complex-order', 'seed-1')]
    """
    path = find_config(config, task)
    raw = read_extended_toml(path, task)
    raw.setdefault("name", path.stem)  # a file of one's own without `name` ran (and recorded) as "table2"
    grid = config_from_dict(raw, GridConfig, where=str(path))
    grid.check_names(str(path))  # before the subsets: a misspelt name in the file is named with the file
    fields = {f.name for f in dataclasses.fields(GridConfig)}
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise TypeError(f"load_grid_config: unknown field {unknown[0]!r}; valid fields: {', '.join(sorted(fields))}")
    names = changes.pop("embeddings", _NOT_GIVEN)
    hints = typing.get_type_hints(GridConfig)
    changes = {key: _checked_change(grid, key, value, hints[key]) for key, value in changes.items()}
    grid = dataclasses.replace(grid, **changes)
    if names is not _NOT_GIVEN:  # selects among the variants given with it, if any
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise ValueError(f"embeddings must be a list of names, got {names!r}")
        grid.variants = select_variants(grid.resolved_variants(), list(names))
    if epochs is not None:
        if isinstance(epochs, bool) or as_integer(epochs) is None or epochs <= 0:
            raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
        for model in CLASSIFIERS:
            setattr(grid, model, dataclasses.replace(getattr(grid, model), epochs=int(epochs)))
    grid.validate()
    return grid


_NOT_GIVEN = object()


def _checked_change(grid: GridConfig, key: str, value: Any, tp: Any) -> Any:
    """A ``load_grid_config`` change to field ``key`` (of type ``tp``) of ``grid``, type-checked as a config file's
    key would be (a dict for a model section or a variant becomes one); an ``AttributeError`` deep in the checks,
    or a ``Path`` in every record (not JSON), before."""
    if key in PATH_FIELDS and isinstance(value, os.PathLike):
        value = os.fspath(value)
    if key == "device" and isinstance(value, torch.device):
        value = str(value)
    if key in ("datasets", "models", "folds", "seeds"):
        return value  # GridConfig.validate checks them (and takes a tuple, a range or a NumPy array)
    if key in CLASSIFIERS:
        if isinstance(value, dict):  # the keys given change the config's section, as a file that `extends` it
            value = {**config_to_dict(getattr(grid, key)), **value}
        elif not isinstance(value, ModelSettings):
            raise ValueError(f"load_grid_config {key}: expected a ModelSettings or a dict of some of its settings, "
                             f"got {value!r}")
    return _check_value(value, tp, f"load_grid_config {key}")


@dataclass
class Unit:
    dataset: str
    model: str
    variant: Variant
    split: str

    @property
    def seed(self) -> int:
        kind, number = self.split.split("-", 1)
        return int(number) + 1 if kind == "fold" else int(number)


def _is_complex_embedding(name: str) -> bool:
    with torch.random.fork_rng(devices=[]):  # a tiny table: the caller's random state is left as it was
        return bool(build_embedding(name, 4, 4, padding_idx=0).is_complex)


def unit_config(grid: GridConfig, unit: Unit) -> dict:
    """Everything that determines a unit's result (hashed to recognise finished units)."""
    settings: ModelSettings = getattr(grid, unit.model)
    share = settings.share_weights if unit.variant.share_weights is None else unit.variant.share_weights
    if unit.variant.share_weights is None and share and not _is_complex_embedding(unit.variant.embedding):
        share = False  # a model-wide share_weights is for the complex rows: real layers have no parts to share
    config = {
        "dataset": unit.dataset, "model": unit.model, "split": unit.split, "seed": unit.seed,
        "variant": config_to_dict(unit.variant), "embedding": unit.variant.embedding,
        "embedding_options": dict(unit.variant.options), "share_weights": share,
        "settings": _settings_dict(settings),
        "vectors": grid.vectors if settings.pretrained else None,
    }
    if unit.model == "lstm" and settings.num_layers != 1:
        # Before stop 77 the LSTM ignored num_layers (one layer, recorded as more): a new hash, so that such a record
        # is never taken for a finished unit of the stacked LSTM.
        config["lstm_num_layers"] = settings.num_layers
    return config


#: Settings added after results were first recorded, with the default that leaves those results' hashes as they were.
LATER_DEFAULTS = {"frequency_lr_scale": 1.0, "frequency_decay": 0.0, "attention_score": "modulus", "network": "auto",
                  "readout": "modulus-of-mean", "position_order": "forward", "loss": "cross-entropy", "fixed_length": 0,
                  "patience_above_majority": False, "bidirectional": False, "embedding_lr_scale": 1.0}


def _settings_dict(settings: ModelSettings) -> dict:
    """The settings as hashed; options added later are left out at their default value, so that the
    units of results files written before they existed are still recognised as finished."""
    out = config_to_dict(settings)
    for key, default in LATER_DEFAULTS.items():
        if out.get(key) == default:
            del out[key]
    return out


def unit_key(record: dict) -> tuple:
    return (record["dataset"], record["model"], record["variant"], record["split"], record["config_hash"])


def _hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _check_grid(grid: Any, caller: str) -> None:
    """A one-line ``TypeError`` unless ``grid`` is a :class:`GridConfig` (a dict or a config name failed with an
    ``AttributeError``)."""
    if not isinstance(grid, GridConfig):
        named = f" {grid!r}; load it with load_grid_config({grid!r})" if isinstance(grid, (str, Path)) else ""
        raise TypeError(f"{caller}: grid must be a GridConfig (from load_grid_config), got "
                        f"{type(grid).__name__}{named}")


def plan_units(grid: GridConfig) -> list[Unit]:
    """The units (training runs) of ``grid``, in the order :func:`run_grid` trains them.

    Args:
        grid: a :class:`GridConfig` (from :func:`load_grid_config`); validated first (a one-line ``ValueError``
            naming a wrong field; anything else than a ``GridConfig`` is a ``TypeError``).

    Returns:
        One :class:`Unit` (data set, model, variant, split) per run, split-major: every variant of fold/seed k
        before fold/seed k+1. The results file is not read: finished units are listed too.
    """
    _check_grid(grid, "plan_units")
    grid.validate()
    # split-major: every variant of fold/seed k runs before fold/seed k+1, so partial results stay paired
    return [Unit(d, m, v, s) for d in grid.datasets for m in grid.models for s in split_ids(d, grid.folds, grid.seeds)
            for v in grid.resolved_variants()]


def build_model_from_config(config: dict, vocab_size: int, num_classes: int, max_positions: int,
                            pretrained: torch.Tensor | None = None) -> torch.nn.Module:
    """The classifier a unit config describes (used by training and by ``complexorder inspect``)."""
    settings = config["settings"]
    fixed_length = settings.get("fixed_length", 0)  # the authors' input: <pad> is a learned, unmasked word
    embedding = build_embedding(config["embedding"], vocab_size, settings["embedding_dim"],
                                padding_idx=None if fixed_length else 0, pretrained=pretrained,
                                max_positions=max(max_positions, fixed_length),
                                sparse=settings.get("sparse_embeddings", False), **config["embedding_options"])
    options = ModelSettings(**cast("dict[str, Any]",
                                   {k: (tuple(v) if k == "filter_sizes" else v) for k, v in settings.items()}))
    return build_classifier(config["model"], embedding, num_classes,
                            **options.model_options(config["model"], config["share_weights"]))


class _Cache:
    """Per-process cache of loaded data sets and word vectors."""

    def __init__(self, data_dir: Path, vectors_format: str, log=None) -> None:
        self.data_dir, self.vectors_format, self.log = data_dir, vectors_format, log
        self.datasets: dict[str, Any] = {}
        self.vectors: dict[tuple[str, int], Any] = {}
        self.digests: dict[str, str] = {}
        self.data_digests: dict[str, str] = {}

    def dataset(self, name: str):
        if name not in self.datasets:
            self.datasets[name] = load_dataset(name, self.data_dir)
            for note in self.datasets[name].notes if self.log else ():
                self.log(f"{name}: {note}")  # skipped lines are also kept in every result's data_notes
        return self.datasets[name]

    def word_vectors(self, path: str, dim: int):
        if (path, dim) not in self.vectors:
            self.vectors[(path, dim)] = load_word_vectors(path, self.vectors_format, expected_dim=dim)
            for note in getattr(self.vectors[(path, dim)], "load_notes", []) if self.log else ():
                self.log(f"vectors file {path}: {note}")  # also kept in every result's vectors record
        return self.vectors[(path, dim)]

    def data_digest(self, name: str) -> str | None:
        """:func:`dataset_digest` of data set ``name`` (None while a file is missing: not cached then)."""
        if name not in self.data_digests:
            digest = dataset_digest(name, self.data_dir)
            if digest is None:
                return None
            self.data_digests[name] = digest
        return self.data_digests[name]

    def digest(self, path: str) -> str:
        """sha256 of a vectors file: recorded with every result, so a re-trained file is told apart."""
        if path not in self.digests:
            self.digests[path] = sha256_of(path)
        return self.digests[path]


def _encode(vocab: Vocabulary, part) -> EncodedDataset:
    texts, labels = part
    return EncodedDataset([vocab.encode(t) for t in texts], torch.tensor(labels, dtype=torch.long))


def checkpoint_path(grid: GridConfig, unit: Unit) -> Path:
    """Where a unit's trained model goes with ``checkpoint_dir`` (one file per data set, model, row and split)."""
    name = f"{unit.dataset}-{unit.model}-{unit.variant.label}-{unit.split}".replace(" ", "_").replace("/", "_")
    return Path(cast(str, grid.checkpoint_dir)) / f"{name}.pt"  # called only with a checkpoint_dir


def check_checkpoint_names(grid: GridConfig, units: list[Unit]) -> None:
    """Refuse, before any training, to overwrite a checkpoint that another configuration wrote.

    A checkpoint is named by data set, model, row and split only, so two grids that differ in a
    setting (a learning rate, an ablation's option) and share ``checkpoint_dir`` would write the
    same file. A file holding this unit's own configuration (a unit re-run after its result line
    was removed) may be replaced; any other file at that name is kept and the run stops.
    """
    labels_at: dict[Path, str] = {}
    for unit in units:  # two rows whose labels differ only in ' ' and '/' would share one file
        path = checkpoint_path(grid, unit)
        other = labels_at.setdefault(path, unit.variant.label)
        if other != unit.variant.label:
            raise ValueError(f"rows {other!r} and {unit.variant.label!r} would write the same checkpoint file "
                             f"{path.name} (spaces and '/' become '_'); rename one of them")
    for unit in units:
        path = checkpoint_path(grid, unit)
        if not path.exists():
            continue
        try:
            stored = load_checkpoint(path, "classifier").get("config")
        except (ValueError, OSError) as exc:
            raise ValueError(f"checkpoint directory {grid.checkpoint_dir} (config `checkpoint_dir` / --checkpoint-dir) "
                             f"already holds {path.name}, which this run would overwrite, and it cannot be read as a "
                             f"classifier ({exc}); move it away or use another --checkpoint-dir") from None
        mine = _hash(unit_config(grid, unit))
        theirs = _hash(stored) if isinstance(stored, dict) else "none"
        if theirs != mine:
            raise ValueError(f"checkpoint directory {grid.checkpoint_dir} (config `checkpoint_dir` / --checkpoint-dir) "
                             f"already holds {path.name} from another configuration (config hash {theirs}, this unit's "
                             f"{mine}); running it would overwrite that checkpoint — use another --checkpoint-dir")


def majority_rate(data) -> float:
    """The accuracy on ``data`` of always predicting its most common label: the best any one-class prediction
    scores, computed as :func:`evaluate_accuracy` computes accuracy (a count over the size), so that a model
    stuck at that plateau scores exactly this value."""
    return int(torch.bincount(data.labels).max()) / len(data) if len(data) else 0.0


def run_unit(grid: GridConfig, unit: Unit, cache: _Cache | None = None, progress: bool = True,
             command: str | None = None) -> dict:
    """Train and test one unit of ``grid`` (on ``grid.device``) and return its result record.

    The record is returned only: it is not appended to ``grid.results``, and that file is not read (a unit it holds
    is trained again); :func:`run_grid` skips finished units and appends each record. With ``grid.checkpoint_dir``
    the trained model is saved there; a checkpoint of another configuration at its name is refused before
    training (as :func:`run_grid` refuses it). The caller's random state (torch's CPU generator, and the GPU's when
    it trains on one) is left as it was: the unit is seeded with its own seed inside.

    Args:
        grid: a :class:`GridConfig` (from :func:`load_grid_config`); validated first.
        unit: one of ``plan_units(grid)``.
        cache: the data sets and word vectors read so far, shared by :func:`run_grid` over its units; None (the
            default) reads them for this call.
        progress: show progress bars of the epochs.
        command: the command line stored in the record (None for a call from Python).

    Returns:
        The result record: scores (``test_accuracy``, ``dev_accuracy``, ``history``), ``seconds_per_epoch``,
        ``parameters``, the unit's ``config`` and ``config_hash``, data and vectors provenance, versions, device.
    """
    _check_grid(grid, "run_unit")
    if not isinstance(unit, Unit):
        raise TypeError(f"run_unit: unit must be a Unit (one of plan_units(grid)), got {type(unit).__name__}")
    grid.validate()
    device = resolve_device(grid.device, "device (config `device` / --device)")
    if grid.checkpoint_dir:  # run_grid checks every unit first; a direct call overwrote another grid's checkpoint
        check_writable(grid.checkpoint_dir, "checkpoint directory (config `checkpoint_dir` / --checkpoint-dir)",
                       directory=True)
        check_checkpoint_names(grid, [unit])
    if cache is None:
        cache = _Cache(resolve_data_dir(grid.data_dir), grid.vectors_format)
    # the unit's own seed inside, the caller's generators restored after (the GPU's included when it trains there)
    with torch.random.fork_rng(devices=generator_devices(device)):
        return _train_unit(grid, unit, cache, device, progress, command)


def _train_unit(grid: GridConfig, unit: Unit, cache: _Cache, device: torch.device, progress: bool,
                command: str | None) -> dict:
    """:func:`run_unit` once its arguments are checked."""
    config = unit_config(grid, unit)
    settings: ModelSettings = getattr(grid, unit.model)
    data = cache.dataset(unit.dataset)
    split = make_split(data, unit.split)
    vocab = Vocabulary.from_texts(split.train[0])
    train, dev, test = (_encode(vocab, p) for p in (split.train, split.dev, split.test))
    vectors_info: dict[str, Any] | None
    pretrained, vectors_info = None, None
    if settings.pretrained and grid.vectors:
        kv = cache.word_vectors(grid.vectors, settings.embedding_dim)
        pretrained, coverage = vectors_for_vocabulary(kv, vocab, seed=unit.seed)
        vectors_info = {"path": grid.vectors, "coverage": round(coverage, 4), "sha256": cache.digest(grid.vectors)}
        if getattr(kv, "load_notes", None):
            vectors_info["notes"] = list(kv.load_notes)
        made = vectors_provenance(grid.vectors, vectors_info["sha256"])  # written by `complexorder vectors train`
        if made and isinstance(made.get("versions"), dict):
            vectors_info["trained_with"] = made["versions"]
    seed_generators(unit.seed, device)
    with naming_out_of_memory(f"[{unit.model}] embedding_dim = {settings.embedding_dim} "
                              f"(vocabulary {len(vocab):,} words)"):
        model = build_model_from_config(config, len(vocab), len(data.label_names), data.max_length(), pretrained)
        model.to(device)
    min_length = max(settings.filter_sizes) if unit.model == "cnn" else 1
    dev_majority = majority_rate(dev)  # the dev accuracy of predicting one class: a collapse shows as this
    result = train_classifier(model, train, dev, epochs=settings.epochs, batch_size=settings.batch_size,
                              lr=settings.lr, weight_decay=settings.weight_decay, seed=unit.seed,
                              patience=settings.patience, min_length=min_length, progress=progress,
                              desc=f"{unit.dataset} {unit.model} {unit.variant.label} {unit.split}",
                              monitor=test,  # per-epoch test accuracy, recorded only (the authors' protocol)
                              frequency_lr_scale=settings.frequency_lr_scale,
                              frequency_decay=settings.frequency_decay, loss=settings.loss,
                              embedding_lr_scale=settings.embedding_lr_scale,
                              patience_floor=dev_majority if settings.patience_above_majority else None)
    test_acc = evaluate_accuracy(model, test, min_length=min_length)
    record = {
        "grid": grid.name, "dataset": unit.dataset, "model": unit.model, "variant": unit.variant.label,
        "embedding": unit.variant.embedding, "split": unit.split, "seed": unit.seed,
        "test_accuracy": test_acc, "dev_accuracy": result.best_dev_accuracy, "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run, "seconds_per_epoch": round(result.seconds_per_epoch, 3),
        "parameters": count_parameters(model), "vocab_size": len(vocab), "train_size": len(train),
        "dev_size": len(dev), "test_size": len(test),
        "dev_majority_rate": dev_majority, "data_sha256": cache.data_digest(unit.dataset),
        "vectors": vectors_info if settings.pretrained else "none (random init)",
        "history": result.history, "data_notes": data.notes, "config": config, "config_hash": _hash(config),
        "complexorder_version": __version__, "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
        "cpu": cpu_info(), "device": str(device),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "command": command,
    }
    if grid.checkpoint_dir:
        save_checkpoint(checkpoint_path(grid, unit), "classifier", cpu_state_dict(model), config,
                        vocab=vocab.itos, label_names=list(data.label_names), max_positions=data.max_length(),
                        test_accuracy=test_acc)
    return record


def _read_results_file(path: Path, log) -> list[dict]:
    """The records of a results file, refusing before anything trains a file that ``classify`` did not write
    (notes, a vectors file, another experiment's records). Lines cut short by interrupted writes (a JSON object's
    beginning: ``append_jsonl`` starts the next record on a fresh line) are tolerated and reported, however many
    crashes a long grid has seen; any other line that is not JSON means the file is not a results file."""
    numbered, malformed = scan_jsonl(path)
    records = [record for _, record in numbered]
    if malformed and (not records or not all(is_cut_record(line) for _, line in malformed)):
        lines = len(records) + len(malformed)
        raise ValueError(f"results file {path} (--results): {len(malformed)} of its {lines} lines are not JSON "
                         f"(nor records cut short by an interrupted write); it is not a file that `complexorder "
                         f"classify` wrote — pass a new file, or one that `classify` wrote")
    for number, _ in malformed:
        log(f"{path}:{number}: skipping a malformed (probably interrupted) line")
    for i, r in enumerate(records, 1):
        if not isinstance(r, dict):
            raise ValueError(f"results file {path}: record {i} is a JSON {type(r).__name__}, not an object; pass a "
                             f"JSON-lines file that `complexorder classify` wrote, or a new one")
        if "config_hash" not in r or "test_accuracy" not in r:
            held = ", ".join(sorted(r)[:6]) + (", …" if len(r) > 6 else "")
            raise ValueError(f"results file {path} (--results): record {i} is not a classification result (it holds "
                             f"{held}); pass a new file or one that `complexorder classify` wrote")
    return records


def _preflight(grid: GridConfig, todo: list[Unit], cache: "_Cache") -> None:
    """Read every data set the pending units need, and the vectors file's declared dimension, before the first
    unit trains: a missing or malformed file is found now, not after hours of other units."""
    for name in dict.fromkeys(u.dataset for u in todo):
        cache.dataset(name)
    for name, split_id in dict.fromkeys((u.dataset, u.split) for u in todo):  # a part too small to use: now, not
        make_split(cache.dataset(name), split_id)                              # after the earlier folds have trained
    for unit in todo:
        cap = getattr(grid, unit.model).fixed_length
        if cap and cache.dataset(unit.dataset).max_length() > cap:
            raise ValueError(f"[{unit.model}] fixed_length {cap} is shorter than the longest sentence of "
                             f"{unit.dataset} ({cache.dataset(unit.dataset).max_length()} tokens); set it to at least "
                             f"that (sentences are never truncated)")
    dims = {getattr(grid, u.model).embedding_dim for u in todo if getattr(grid, u.model).pretrained}
    if dims and grid.vectors:
        found = vectors_dimension(grid.vectors, grid.vectors_format)
        wrong = sorted(d for d in dims if d != found)
        if wrong:
            problem = vectors_rows_problem(grid.vectors, grid.vectors_format)  # the header may be what is wrong
            if problem:
                raise ValueError(f"vectors file {grid.vectors} (--vectors) is not valid: {problem}")
            raise ValueError(f"vectors file {grid.vectors} (--vectors) has dimension {found}, but the pretrained "
                             f"models to run have embedding_dim {wrong[0]}; pass vectors of that dimension or set "
                             f"embedding_dim")


def units_to_run(grid: GridConfig, units: list, finished: list[dict]) -> tuple[list, set]:
    """The units of ``units`` without a record in ``finished`` (same data set, model, row, split and settings),
    and the keys of all of ``units``."""
    done = {unit_key(r) for r in finished}
    todo, keys = [], set()
    for unit in units:
        key = (unit.dataset, unit.model, unit.variant.label, unit.split, _hash(unit_config(grid, unit)))
        keys.add(key)
        if key not in done:
            todo.append(unit)
    return todo, keys


def _plan_line(grid: GridConfig, units: list, todo: list) -> str:
    return f"{grid.name}: {len(units)} units, {len(units) - len(todo)} already in {grid.results}, {len(todo)} to run"


def check_grid_outputs(grid: GridConfig) -> None:
    """One-line errors, before any work, for a results file or checkpoint directory the grid could not write (the
    checks :func:`run_grid` makes first; ``classify --dry-run`` makes them too, so that a dry run that passes means
    the run would start)."""
    check_results_file(grid.results, "results file (config `results` / --results)", read_first=True)
    if grid.checkpoint_dir:
        check_writable(grid.checkpoint_dir, "checkpoint directory (config `checkpoint_dir` / --checkpoint-dir)",
                       directory=True)


def dry_run_summary(grid: GridConfig, units: list, log=lambda *_: None) -> tuple[str, list]:
    """The line a run would log first: how many of ``units`` its results file holds already (read, not written),
    and the units still to run. ``log`` gets what reading the file says (skipped malformed lines), as a run's."""
    path = Path(grid.results)
    finished = _read_results_file(path, log) if path.is_file() else []
    todo, keys = units_to_run(grid, units, finished)
    _check_finished_data(finished, keys, _Cache(resolve_data_dir(grid.data_dir), grid.vectors_format), path)
    return _plan_line(grid, units, todo), todo


def _check_finished_data(finished: list[dict], keys: set, cache: _Cache, results_path: Path) -> None:
    """A one-line error when finished units of this grid were trained on other data than ``cache``'s data directory
    holds now: they would be reported as this data's (a unit's identity holds no data; records since stop 78 carry
    the data's digest, older ones are taken as they are)."""
    for record in finished:
        old = record.get("data_sha256")
        if not old or unit_key(record) not in keys:
            continue
        now = cache.data_digest(record["dataset"])
        if now is not None and now != old:
            same = sum(1 for r in finished if r.get("data_sha256") == old and r["dataset"] == record["dataset"]
                       and unit_key(r) in keys)
            folder = dataset_folder(record["dataset"], cache.data_dir)
            raise ValueError(f"{results_path} holds {same} finished unit(s) of {record['dataset']} trained on other "
                             f"data (sha256 {old[:12]}…; the files in {folder} give {now[:12]}…): they would be "
                             f"taken as this data's; give another results file (--results), or remove their lines to "
                             f"re-run them")


def run_grid(grid: GridConfig, progress: bool = True, log=tqdm.write, command: str | None = None) -> list[dict]:
    """Run every unit of ``grid`` not yet in its results file; append each result as it finishes.

    Everything that can be checked without training is checked before the first unit trains (the grid, the
    results file, the checkpoint directory, the data, the vectors file). The caller's random state (torch's CPU
    generator, and that of the GPU it trains on) is left as it was: each unit is seeded with its own seed
    inside.

    Args:
        grid: a :class:`GridConfig` (from :func:`load_grid_config`; anything else is a one-line ``TypeError``).
        progress: show progress bars (units, and each unit's epochs).
        log: takes each line it reports (default: standard output through ``tqdm.write``, which keeps the progress
            bars on standard error whole; ``print`` cut through them; ``lambda *_: None`` silences them).
        command: the command line that asked for the run, stored with each result (None for a call from Python).

    Returns:
        The records of the units this call trained, in order (each also appended to ``grid.results``); units
        already in the results file are skipped and not returned (a second call returns ``[]``; read the file with
        :func:`~complexorder.experiments.report.load_results` for all of them).
    """
    _check_grid(grid, "run_grid")
    with torch.random.fork_rng(devices=[]):  # the checks build tiny embeddings; run_unit forks a GPU's itself
        return _run_grid(grid, progress, log, command)


def _run_grid(grid: GridConfig, progress: bool, log, command: str | None) -> list[dict]:
    """:func:`run_grid` once ``grid`` is known to be a grid."""
    units = plan_units(grid)  # validates the grid, its device included, before any data is read
    check_grid_outputs(grid)
    cache = _Cache(resolve_data_dir(grid.data_dir), grid.vectors_format, log)
    results_path = Path(grid.results)
    finished = _read_results_file(results_path, log)
    todo, keys = units_to_run(grid, units, finished)
    log(_plan_line(grid, units, todo))
    if grid.checkpoint_dir:  # finished units are not re-run for a checkpoint directory given later
        pending = {id(u) for u in todo}
        missing = [u for u in units if id(u) not in pending and not checkpoint_path(grid, u).is_file()]
        if missing:
            log(f"note: {len(missing)} finished unit(s) have no checkpoint in {grid.checkpoint_dir} (e.g. "
                f"{checkpoint_path(grid, missing[0]).name}: they ran without a checkpoint directory); remove their "
                f"lines from {results_path} to re-run them with checkpoints")
    _check_finished_data(finished, keys, cache, results_path)
    recorded = [r for r in finished if unit_key(r) in keys and isinstance(r.get("vectors"), dict)
                and r["vectors"].get("sha256")]
    if recorded and grid.vectors and Path(grid.vectors).is_file():  # a unit's identity holds the path, not the digest
        now = cache.digest(grid.vectors)
        stale = [r for r in recorded if r["vectors"]["sha256"] != now]
        if stale:
            log(f"note: {len(stale)} finished unit(s) in {results_path} used another file at {grid.vectors} (sha256 "
                f"{stale[0]['vectors']['sha256'][:12]}…, now {now[:12]}…); they are kept and not re-run — remove "
                f"their lines from the results file to re-run them with the current vectors")
    if grid.checkpoint_dir:
        check_checkpoint_names(grid, todo)
    if grid.vectors and any(getattr(grid, u.model).pretrained for u in todo) and not Path(grid.vectors).is_file():
        if Path(grid.vectors).is_dir():
            raise IsADirectoryError(f"vectors file {grid.vectors} (config `vectors` / --vectors) is a directory; pass "
                                    "the vectors file itself (word2vec binary or text, or GloVe text)")
        if Path(grid.vectors).exists():  # /dev/null, a pipe: it exists, and "does not exist" misled
            raise ValueError(f"vectors file {grid.vectors} (config `vectors` / --vectors) is not a regular file (a "
                             "device or pipe?); pass the vectors file itself (word2vec binary or text, or GloVe text)")
        raise FileNotFoundError(f"vectors file {grid.vectors} (config `vectors` / --vectors) does not exist; create one "
                                "with `complexorder vectors train`, or pass another with --vectors")
    if todo and any(getattr(grid, u.model).pretrained for u in todo) and not grid.vectors:
        log("note: no word vectors configured (vectors = ...); pretrained models start from random vectors")
    _preflight(grid, todo, cache)
    records = []
    for unit in tqdm(todo, desc=f"{grid.name} units", disable=bars_off(progress), dynamic_ncols=True):
        record = run_unit(grid, unit, cache, progress, command)
        append_jsonl(results_path, record)
        records.append(record)
        log(f"{unit.dataset} {unit.model} {unit.variant.label} {unit.split}: test {record['test_accuracy']:.4f} "
            f"(dev {record['dev_accuracy']:.4f}, epoch {record['best_epoch']}, {record['seconds_per_epoch']:.1f} s/epoch)")
    return records
