"""Typed experiment configs: dataclasses filled from versioned TOML files, unknown keys rejected.

Example::

    @dataclass
    class TrainConfig:
        epochs: int = 10
        lr: float = 1e-3

    cfg = load_config("configs/x.toml", TrainConfig)            # or a dict
    cfg = apply_overrides(cfg, {"epochs": 3})
    record = config_to_dict(cfg)                                 # saved with every result/checkpoint
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["check_no_repeats", "check_number", "is_finite_number", "load_config", "config_from_dict", "config_to_dict", "apply_overrides", "check_overrides", "merge_overrides", "override_label",
           "parse_override", "overrides_dict", "read_toml", "find_config",
           "builtin_configs", "read_extended_toml"]

T = TypeVar("T")


def read_toml(path: str | Path) -> dict:
    """Parse a TOML file; a missing or malformed file is a one-line error naming it."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"config file {path} is a directory, expected a TOML file")
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist")
    try:  # a UTF-8 byte-order mark (Windows editors write one) is not TOML, but it is not the user's error either
        return tomllib.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 text
        raise ValueError(f"config file {path} is not valid TOML: not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None


#: The largest finite float32: a learning rate beyond it overflows inside Adam.
FLOAT32_MAX = 3.4028234663852886e38


def is_finite_number(value: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    """Whether ``value`` is an int or float (not a bool), finite, and in ``[low, high]``."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and low <= value <= high)


def check_no_repeats(names, text: str, what: str) -> None:
    """A one-line error naming the entries of the list option ``--what`` (given as ``text``) that appear more than
    once (``--datasets``, ``--embeddings``, ``--splits``, ...: each would run and be recorded twice)."""
    repeated = [n for n in dict.fromkeys(names) if list(names).count(n) > 1]
    if repeated:
        raise ValueError(f"--{what}: {', '.join(map(repr, repeated))} given more than once in {text!r}")


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, meaning: str = "") -> None:
    """Raise a one-line ``ValueError`` naming ``name`` unless ``value`` is a finite number in the range.

    ``low``/``high`` are inclusive bounds unless ``low_open``/``high_open``; ``meaning`` is appended
    to the expected form (``" (0: no clipping)"``). NaN and infinities never pass: a learning rate of
    ``inf`` would otherwise train to NaN and exit successfully.
    """
    if is_finite_number(value, -math.inf if low is None else low, math.inf if high is None else high) and \
            not (low_open and value == low) and not (high_open and value == high):
        return
    if low is not None and high is not None:
        form = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        form = f"{'>' if low_open else '>='} {low:g}"
    elif high is not None:
        form = f"{'<' if high_open else '<='} {high:g}"
    else:
        form = ""
    raise ValueError(f"{name} must be a finite number{' ' + form if form else ''}{meaning}, got {value!r}")


def json_ready(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None``: ``json.dumps`` writes them as ``Infinity`` and
    ``NaN``, which are not JSON (a summary printed before any validation held ``"best_valid_bpc": Infinity``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def check_seed(name: str, value: Any) -> None:
    """A one-line error unless ``value`` is an integer seed in [0, 2**32): torch's and NumPy's generators keep
    32 bits of larger ones (2**32 + 1 repeated seed 1's run), and 20-digit ones overflowed with a message naming
    no setting."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 32:
        raise ValueError(f"{name} must be an integer in [0, 2**32), got {value!r}")


def _check_value(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _check_value(value, arg, where)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: unexpected value {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where}: must be one of {', '.join(repr(a) for a in args)}, got {value!r}")
        return value
    if origin in (list, tuple) or tp in (list, tuple):  # list[int], or a bare list
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        item = args[0] if args else Any
        items = [_check_value(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if tuple in (origin, tp) else items
    if origin is dict or tp is dict:  # dict[str, int], or a bare dict
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a table, got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, typing.cast(type, tp)):  # is_dataclass narrowed ``tp`` to "instance or class"
            return value
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a table, got {value!r}")
        return config_from_dict(value, typing.cast(type, tp), where)
    if tp is float:  # NumPy numbers too (np.float32(0.1), np.int64(3)); not bools (np.True_ is no Real)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:  # NumPy integers too (np.int64(4), as np.random.choice draws them), returned as int
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{where}: expected an integer, got {value!r}")
        return int(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def check_fields(config: Any, where: str) -> None:
    """One-line errors for fields of the dataclass instance ``config`` whose values do not have their declared type
    (as a TOML file's would be refused): ``tie_output="no"`` is truthy and silently tied the output, ``nhead=True``
    built one head, ``clamp_len=None`` failed only at the first forward pass."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        tp = hints[f.name]
        if typing.Literal in (typing.get_origin(tp), *map(typing.get_origin, typing.get_args(tp))):
            continue  # names: the model checks them with messages of its own
        _check_value(getattr(config, f.name), tp, f"{where}.{f.name}")
    plain_numbers(config)


def plain_numbers(config: Any) -> None:
    """Store NumPy numbers in the ``int`` and ``float`` fields (``int | None`` too) of the config dataclass instance
    ``config`` as plain Python ones, in place: ``np.int64(4)`` as ``4``, as the layers take them, so that the config
    serialises to JSON and checkpoints. What is not a number (a bool, ``np.True_``, a string) is left for
    :func:`check_fields` to refuse."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value, kinds = getattr(config, f.name), (hints[f.name], *typing.get_args(hints[f.name]))
        if isinstance(value, (bool, int, float)) or not isinstance(value, numbers.Real):
            continue  # already plain, or not a number
        if int in kinds and isinstance(value, numbers.Integral):
            setattr(config, f.name, int(value))
        elif float in kinds:
            setattr(config, f.name, float(value))


def config_from_dict(data: dict, cls: type[T], where: str = "config") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types are one-line errors."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table of settings, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(typing.cast(Any, cls))}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {name: _check_value(value, hints[name], f"{where}.{name}") for name, value in data.items()}
    missing = [name for name, f in fields.items() if name not in data and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and f.init]
    if missing:  # was Python's "Variant.__init__() missing 1 required positional argument: 'label'"
        raise ValueError(f"{where}: missing key {missing[0]!r}; it is required (keys: {', '.join(fields)})")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # anything else a constructor refuses
        raise ValueError(f"{where}: {exc}") from None


def override_label(option: str, dotted: str) -> str:
    """How an error names one override: ``--set train.lr`` for a command-line option (``option`` starts with ``-``),
    ``overrides['train.lr']`` for a Python argument (``option`` is its name), or ``option`` with the key put in
    for ``{}`` (``"keyword {}"``: ``keyword train.lr``)."""
    if "{}" in option:
        return option.replace("{}", dotted)
    return f"{option} {dotted}" if option.startswith("-") else f"{option}[{dotted!r}]"


def check_overrides(cls: type, overrides: dict[str, Any], option: str = "--set") -> None:
    """One-line errors naming ``option`` for dotted keys (``train.lr``) that ``cls`` lacks or values of the wrong type.

    Checked before the overrides are merged into a config file, so that a misspelt ``--set`` key is
    blamed on the option, not on the file it would have been merged into. ``option`` is a command-line option
    (``--set``: errors say ``--set train.lr: ...``) or the name of a Python argument (``overrides``: errors say
    ``overrides['train.lr']: ...``).
    """
    for dotted, value in overrides.items():
        label = override_label(option, dotted)
        node, parts = cls, dotted.split(".")
        for i, part in enumerate(parts):
            section = ".".join(parts[:i])
            if not dataclasses.is_dataclass(node):
                raise ValueError(f"{label}: {section!r} is a value, not a section")
            fields = [f.name for f in dataclasses.fields(node)]
            if part not in fields:
                where = f"[{section}]" if section else "the top level"
                raise ValueError(f"{label}: unknown key {part!r} in {where}; valid keys: {', '.join(fields)}")
            node = typing.get_type_hints(node)[part]
        _check_value(value, node, label)


def merge_overrides(data: dict, overrides: dict[str, Any], cls: type, option: str = "--set") -> dict:
    """``data`` (a config file's tables) with dotted ``overrides`` laid over it, each checked against ``cls`` first."""
    check_overrides(cls, overrides, option)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # the file holds a value where ``cls`` has a section
                raise ValueError(f"{override_label(option, dotted)}: the config file's {part!r} is not a section")
        node[leaf] = value
    return data


def parse_override(item: str, *, name: str = "--set", form: str = "SECTION.KEY=VALUE", example: str = "train.lr=1e-3",
                   sections: bool = True) -> tuple[str, Any]:
    """``(dotted key, value)`` of one override string as ``--set`` takes it: ``train.lr=1e-3``.

    The value is read as TOML (``1e-3``, ``true``, ``[0.9, 0.98]``), or kept as a bare string when it is none
    (``complex-order``). A one-line ``ValueError`` naming ``name`` (``--set``, ``overrides[2]``) when ``item`` has no
    ``=`` or no key, or (``sections``) a key without a section (``lr=1e-3``); ``form`` and ``example`` say what was
    expected.
    """
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or (sections and "." not in key):
        raise ValueError(f"{name} {item!r}: expected {form}, e.g. {example}")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare string such as complex-order
    return key, value


def overrides_dict(overrides: Mapping[str, Any] | Sequence[str] | None, *, name: str = "overrides",
                   form: str = "SECTION.KEY=VALUE", example: str = "train.lr=1e-3",
                   sections: bool = True) -> dict[str, Any]:
    """Config overrides in either form the config loaders take, as ``{dotted key: value}``.

    ``overrides`` is a mapping (``{"train.lr": 1e-3}``, values as they are) or a sequence of ``form`` strings
    (``["train.lr=1e-3"]``, read by :func:`parse_override`, a later one replacing an earlier one of the same key, as
    repeated ``--set`` options do); ``None`` is none. A bare string is a one-line ``TypeError`` (it was read one
    character at a time), and so is anything else that is neither form; a malformed string is a ``ValueError``
    naming its place (``overrides[1]``), or the option when ``name`` is one (``--set 'lr': ...``).
    """
    if overrides is None:
        return {}
    expected = f"{name} must be a mapping {{'train.lr': 0.001}} or a list of '{form}' strings"
    if isinstance(overrides, str):
        raise TypeError(f"{expected}, got a single str; pass [{overrides!r}] for one override")
    if isinstance(overrides, (bytes, bytearray)):
        raise TypeError(f"{expected}, got {type(overrides).__name__}")
    if isinstance(overrides, Mapping):
        for key in overrides:
            if not isinstance(key, str):
                raise TypeError(f"{name}: keys must be dotted setting names such as 'train.lr', got {key!r}")
        return dict(overrides)
    if not isinstance(overrides, Sequence):
        raise TypeError(f"{expected}, got {type(overrides).__name__}")
    out = {}
    for i, item in enumerate(overrides):
        label = name if name.startswith("-") else f"{name}[{i}]"  # a repeatable option (--set), or overrides[1]
        if not isinstance(item, str):
            raise TypeError(f"{label} must be a '{form}' string, got {type(item).__name__}")
        key, value = parse_override(item, name=label, form=form, example=example, sections=sections)
        out[key] = value
    return out


def load_config(source: str | Path | dict, cls: type[T]) -> T:
    """Load ``cls`` from a TOML file path or a dict."""
    if isinstance(source, dict):
        return config_from_dict(source, cls)
    return config_from_dict(read_toml(source), cls, where=str(source))


def config_to_dict(config: Any) -> dict:
    """A JSON/TOML-friendly dict of a config dataclass (tuples become lists)."""

    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return plain(dataclasses.asdict(config))


def apply_overrides(config: T, overrides: dict[str, Any]) -> T:
    """A copy of ``config`` with ``overrides`` (``None`` values ignored), type-checked like the file."""
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if not overrides:
        return config
    merged = {**config_to_dict(config), **overrides}
    return config_from_dict(merged, type(config), where="overrides")


def builtin_configs(task: str) -> list[str]:
    """Names of the configs shipped in ``complexorder/configs/<task>/``."""
    folder = Path(__file__).parent / "configs" / task
    return sorted(p.stem for p in folder.glob("*.toml"))


def find_config(name_or_path: str | Path, task: str) -> Path:
    """A config file path: an existing path as given, else the built-in ``configs/<task>/<name>.toml``."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    builtin = _builtin(name_or_path, task)
    if builtin is not None:
        return builtin
    wanted = f"give a TOML file path or one of the built-in {task} configs: {', '.join(builtin_configs(task)) or '(none)'}"
    command = {"classification": "classify", "ablation": "ablate", "translation": "translate train",
               "lm": "lm train"}
    other = next((t for t in command if t != task and _builtin(name_or_path, t) is not None), None)
    if other is not None and task in command:  # classify --config table4: a built-in of another command
        raise FileNotFoundError(f"config {name_or_path} is a built-in {other} config: run it with `complexorder "
                                f"{command[other]} --config {name_or_path}` ({wanted})")
    if path.is_dir():
        raise IsADirectoryError(f"config {name_or_path} is a directory; {wanted}")
    raise FileNotFoundError(f"config {name_or_path} not found: {wanted}")


def _builtin(name: str | Path, task: str) -> Path | None:
    """The built-in ``configs/<task>/<name>.toml`` when ``name`` is a bare name of one, else None."""
    path = Path(name)
    builtin = Path(__file__).parent / "configs" / task / f"{path.stem}.toml"
    return builtin if path.parent == Path(".") and builtin.is_file() else None


#: Tasks whose configs are the same grid (``GridConfig``): each may extend the other's built-ins.
GRID_TASKS = ("classification", "ablation")


def _find_base(name: str, task: str) -> Path:
    """The config ``extends`` names: a built-in of ``task`` or, for a grid, of the other grid task."""
    tasks = (task, *(t for t in GRID_TASKS if t != task)) if task in GRID_TASKS else (task,)
    for t in tasks:
        builtin = _builtin(name, t)
        if builtin is not None:
            return builtin
    names = ", ".join(f"{c} ({t})" for t in tasks for c in builtin_configs(t)) or "(none)"
    raise FileNotFoundError(f"config {name} not found: give a TOML file path (relative to the extending file) "
                            f"or a built-in config: {names}")


#: Keys an ``extends`` file never inherits: where its results go and what it is called are its own.
NOT_INHERITED = ("name", "results", "checkpoint_dir")


def _merge(base: dict, over: dict) -> dict:
    """``over`` laid over ``base``: tables merged key by key, everything else (lists too) replaced."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def read_extended_toml(path: str | Path, task: str, _chain: tuple[str, ...] = ()) -> dict:
    """A config's TOML with ``extends = "BASE"`` resolved (every task: grids, translation, lm).

    ``BASE`` is a file path relative to the extending file, or a built-in config name of ``task``
    (``extends = "table4"``, ``extends = "cpu-complex-order"``). The base is read first (it may extend
    another), then the file's own keys are laid over it: tables (``[transformer]``, ``[model]``) merge
    key by key, lists (``variants``, ``seeds``) and values replace. ``name``, ``results`` and
    ``checkpoint_dir`` are not inherited. A grid file that extends must give its own ``results``, so
    that its units never land in the base's results file. Unit config hashes depend on the resolved
    settings only, so a unit of an extending file pairs with the same unit of its base.
    """
    path = Path(path)
    data = read_toml(path)
    if not data:  # a file emptied by mistake would otherwise run the whole default grid or model
        raise ValueError(f"config file {path} holds no settings; write the settings to change, or "
                         f"extends = \"NAME\" to start from a built-in config")
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or not base_name:
        raise ValueError(f"config file {path}: extends must be a config name or a path, got {base_name!r}")
    if task in GRID_TASKS and "results" not in data:
        raise ValueError(f"config file {path} extends {base_name!r} but gives no results file of its own; "
                         f"add e.g. results = \"runs/{path.stem}.jsonl\" (results are not inherited)")
    relative = path.parent / base_name
    if relative.is_dir():
        raise IsADirectoryError(f"config file {path}: extends {base_name!r}, which is a directory, expected a TOML "
                                "file or a built-in config name")
    base_path = relative if relative.is_file() else _find_base(base_name, task)
    chain = (*_chain, str(path.resolve()))
    if str(base_path.resolve()) in chain:
        raise ValueError(f"config file {path}: extends {base_name!r} makes a cycle "
                         f"({' -> '.join(Path(c).name for c in chain)} -> {base_path.name})")
    base = read_extended_toml(base_path, task, chain)
    return _merge({k: v for k, v in base.items() if k not in NOT_INHERITED}, data)
