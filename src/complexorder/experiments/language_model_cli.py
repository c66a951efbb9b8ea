"""``complexorder lm``: character-level Transformer-XL language models (paper Sec. 3.3, Table 6).

Actions: ``build-corpus`` (text8-format proxy corpus from the shared data), ``prepare-text8``
(the standard text8 split from a local file or a download), ``train`` and ``eval``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..checkpoint import check_results_file, check_writable, resume_point
from ..config import (builtin_configs, check_no_repeats, check_seed, config_from_dict, json_ready, merge_overrides,
                      override_label, overrides_dict, read_extended_toml)
from ..data.paths import resolve_data_dir
from ..data.text8 import (TEXT8_ZIP_SHA256, build_proxy_corpus, check_corpus_out, check_sha256, download_text8,
                          prepare_text8)
from ..data.download import sha256_of
from ..environment import DEVICE_HELP, NO_PROGRESS_HELP, resolve_device, set_threads
from .language_model import LM_RECORDS, SETTING_OPTIONS, LMConfig, evaluate_checkpoint, train_language_model

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs" / "lm"
EMBEDDINGS = ("vanilla", "complex-vanilla", "complex-order", "pe", "tpe")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lm", help="character-level Transformer-XL language models (text8, bits per character)",
                       description="Transformer-XL (Dai et al. 2019) with a vanilla, complex-vanilla or "
                                   "complex-order word embedding (or the controls pe and tpe: vanilla plus a learned or "
                                   "sinusoidal position vector); bits per character on text8-format corpora.")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    b = actions.add_parser("build-corpus", help="build the text8-format proxy corpus from the shared data",
                           description="Normalise the English text of Multi30k and the six classification data "
                                       "sets like text8 (a-z and single spaces), drop duplicates, shuffle lines "
                                       "deterministically and split 90/5/5 into train/valid/test.txt.")
    b.add_argument("--data-dir", help="data directory, with the classification/ and translation/ folders of the "
                                      "data sets (default: $COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    b.add_argument("--source-dir", help="read the data sets from here instead of the data directory "
                                        "(e.g. ../shared/data)")
    b.add_argument("--out", help="output directory (default: DATA_DIR/text8-proxy)")
    b.add_argument("--seed", type=int, default=0, help="seed of the line order (default: %(default)s)")
    b.set_defaults(func=run_build_corpus)

    t8 = actions.add_parser("prepare-text8", help="split text8 (local file or --download) into 90M/5M/5M",
                            description="Write the standard text8 split (Mikolov et al. 2012) as train/valid/"
                                        "test.txt. Reads --source (text8 or text8.zip) or downloads text8.zip.")
    src = t8.add_mutually_exclusive_group(required=True)
    src.add_argument("--source", help="a local text8 or text8.zip file")
    src.add_argument("--download", action="store_true", help="download text8.zip into DATA_DIR, where a later run finds "
                     "it (needs network); the split goes to --out")
    t8.add_argument("--sha256", help="your own pinned SHA-256 (64 hex characters), checked instead of Mahoney's: "
                                     "of text8.zip with --download (whose size is always checked), of the --source "
                                     "file or of its text8 content with --source (default: the pinned digests of "
                                     "Mahoney's text8.zip and text8)")
    t8.add_argument("--skip-checksum", action="store_true",
                    help="accept a text8.zip or text8 whose SHA-256 differs from the pinned one (not with --sha256)")
    t8.add_argument("--data-dir", help="data directory (default: $COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    t8.add_argument("--out", help="output directory (default: DATA_DIR/text8)")
    t8.add_argument("--no-progress", action="store_true", help="no download progress bar (it shows only when standard error is a terminal)")
    t8.set_defaults(func=run_prepare_text8)

    tr = actions.add_parser("train", help="train (or --resume) a Transformer-XL",
                            description="Train on CORPUS/train.txt, validate on CORPUS/valid.txt; checkpoints "
                                        "and results.jsonl go to --out.")
    tr.add_argument("--config", required=True,
                    help=f"a TOML file, or the name of a shipped config ({', '.join(shipped_configs())})")
    tr.add_argument("--corpus", required=True, help="text8-format corpus directory (train/valid/test.txt)")
    tr.add_argument("--out", required=True, help="run directory for last.pt, best.pt and results.jsonl")
    tr.add_argument("--embedding", choices=EMBEDDINGS, help="override model.embedding")
    tr.add_argument("--max-steps", type=int, help="override train.max_steps")
    tr.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override any setting, e.g. --set train.lr=1e-3 (TOML values); repeatable")
    tr.add_argument("--resume", action="store_true", help="continue the run in --out from last.pt")
    tr.add_argument("--stop-after", type=int, help="stop after this many steps of this call (resume later)")
    tr.add_argument("--threads", type=int, help="torch threads (default: $OMP_NUM_THREADS or torch's default)")
    tr.add_argument("--device", help=DEVICE_HELP)
    tr.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    tr.set_defaults(func=run_train)

    ev = actions.add_parser("eval", help="bits per character of a checkpoint on valid and test",
                            description="Evaluate a checkpoint; lengths default to the [eval] section of the "
                                        "checkpoint's config (text8_6l: Dai et al.'s tgt_len 80, mem_len 2100, "
                                        "clamp_len 820, same_length; proxy_cpu: 32, 256, 128, same_length).")
    ev.add_argument("--checkpoint", required=True, help="best.pt or last.pt of a run")
    ev.add_argument("--corpus", required=True, help="text8-format corpus directory")
    ev.add_argument("--splits", default="valid,test", help="comma-separated splits (default: %(default)s)")
    ev.add_argument("--tgt-len", type=int, help="segment length (default: the checkpoint's eval.tgt_len)")
    ev.add_argument("--mem-len", type=int, help="memory length, may exceed the training one (default: the "
                                                "checkpoint's eval.mem_len)")
    ev.add_argument("--clamp-len", type=int, help="clamp relative distances, <= 0: no clamp (default: the "
                                                  "checkpoint's eval.clamp_len)")
    ev.add_argument("--same-length", action=argparse.BooleanOptionalAction, default=None,
                    help="every character attends to exactly mem_len positions (default: the checkpoint's "
                         "eval.same_length)")
    ev.add_argument("--batch-size", type=int, help="number of streams (default: the checkpoint's eval.batch_size)")
    ev.add_argument("--max-chars", type=int, help="evaluate only the first N characters of each split (a quick "
                                                  "check; the figures to report use whole splits)")
    ev.add_argument("--results", help="append the result as a JSON line to this file")
    ev.add_argument("--threads", type=int, help="torch threads (default: $OMP_NUM_THREADS or torch's default)")
    ev.add_argument("--device", help=DEVICE_HELP)
    ev.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    ev.set_defaults(func=run_eval)


def shipped_configs() -> list[str]:
    """Names of the configs shipped in ``complexorder/configs/lm``."""
    return builtin_configs("lm")


def load_lm_config(source: str | Path, overrides: Mapping[str, Any] | Sequence[str] | None = (), *,
                   option: str = "overrides", **direct: Any) -> LMConfig:
    """An :class:`LMConfig` from a TOML file or a shipped config name, with overrides laid over it.

    Args:
        source: a TOML file (it may ``extends = "NAME"`` another), or the name of a shipped config
            (:func:`shipped_configs`: ``proxy_cpu``, ``text8_6l``, ...), as ``lm train --config`` takes it.
        overrides: settings to change, as ``lm train --set`` takes them: a mapping of dotted keys to values
            (``{"train.lr": 1e-3, "model.embedding": "pe"}``) or a sequence of ``"SECTION.KEY=VALUE"`` strings
            (``["train.lr=1e-3"]``, values read as TOML, else as bare strings). A bare string is a ``TypeError``: pass
            ``["train.lr=1e-3"]``. Unknown keys and values of the wrong type are one-line ``ValueError`` errors
            naming the key as given (``overrides['train.lrr']: unknown key 'lrr' in [train]; ...``).
        option: the name errors give ``overrides`` (the command line passes ``"--set"``: ``--set train.lrr: ...``).
        **direct: dotted keys (so passed as ``**{"model.embedding": "pe"}``) of the settings ``lm train`` has options
            of its own for (``--embedding``: ``model.embedding``; ``--max-steps``: ``train.max_steps``); ``None``
            values are ignored, and a value that contradicts ``overrides`` for the same key is a ``ValueError``.
            Any other keyword is a ``TypeError`` (give other settings in ``overrides``).

    Returns:
        The checked :class:`LMConfig`, for
        :func:`~complexorder.experiments.language_model.train_language_model`.
    """
    command_line = option.startswith("-")
    sets = overrides_dict(overrides, name=option)  # a malformed override is named before the config is looked for
    path = Path(source)
    if not path.suffix and not path.exists():
        if str(source) not in shipped_configs():
            raise ValueError(f"config {str(source)!r} (--config): no such file and no shipped config of that name; "
                             f"shipped: {', '.join(shipped_configs())}")
        path = CONFIG_DIR / f"{source}.toml"
    for key, value in direct.items():
        if key not in SETTING_OPTIONS:  # embedding="pe" read "option embedding: unknown key 'embedding' ..."
            raise TypeError(f"load_lm_config: unexpected keyword {key!r}; its keywords are the dotted settings "
                            f"{', '.join(SETTING_OPTIONS)} (pass **{{'model.embedding': 'pe'}}); give any other "
                            "setting in overrides")
        if value is not None and key in sets and sets[key] != value:  # --embedding vanilla --set model.embedding=pe
            both = (f"{SETTING_OPTIONS[key]} {value} and {option} {key}={sets[key]}" if command_line else
                    f"keyword {key}={value!r} and {override_label(option, key)}={sets[key]!r}")
            raise ValueError(f"{both} contradict each other; give one of them")
    data = merge_overrides(read_extended_toml(path, "lm"), sets, LMConfig, option)
    for key, value in direct.items():  # named as the caller gave them: --max-steps, or the Python keyword
        if value is not None:
            label = f"{SETTING_OPTIONS[key]} ({{}})" if command_line else "load_lm_config keyword {}"
            data = merge_overrides(data, {key: value}, LMConfig, label)
    return config_from_dict(data, LMConfig, where=str(path))


def run_build_corpus(args: argparse.Namespace) -> int:
    check_seed("--seed", args.seed)  # -1 and 20-digit seeds were taken, unlike every other seed of the project
    data_dir = resolve_data_dir(args.data_dir)
    out = Path(args.out) if args.out else data_dir / "text8-proxy"
    check_corpus_out(args.source_dir or data_dir, out, "--out")  # not beside the data sets' files it reads
    check_writable(out, "--out" if args.out else "--data-dir", directory=True)  # before the sources are read
    manifest = build_proxy_corpus(args.source_dir or data_dir, out, seed=args.seed)
    sizes = ", ".join(f"{s} {v['characters']:,}" for s, v in manifest["splits"].items())
    dropped = sum(s["duplicates"] for s in manifest["sources"])
    print(f"wrote {out}: {manifest['lines_kept']:,} lines, {manifest['characters']:,} characters ({sizes}); "
          f"{dropped:,} duplicate lines dropped, {manifest['characters_replaced_by_space']:,} characters outside "
          f"a-z/0-9/space replaced by spaces")
    return 0


def run_prepare_text8(args: argparse.Namespace) -> int:
    pinned = check_sha256(args.sha256, "--sha256") if args.sha256 is not None else None
    if pinned and args.skip_checksum:
        raise ValueError("--sha256 and --skip-checksum contradict each other: give --sha256 to check the file "
                         "against your digest, or --skip-checksum to check none")
    data_dir = resolve_data_dir(args.data_dir)
    out = Path(args.out) if args.out else data_dir / "text8"
    # before the download and the 100M characters are read
    check_writable(out, "--out" if args.out else "--data-dir", directory=True)
    if args.download:
        expected = None if args.skip_checksum else (pinned or TEXT8_ZIP_SHA256)
        source = download_text8(data_dir, sha256=expected, progress=not args.no_progress)
        print(f"downloaded {source} (sha256 {sha256_of(source)})")
    else:
        source = Path(args.source)
        for name in ("train.txt", "valid.txt", "test.txt"):  # the split would replace the text it is cut from
            check_writable(out / name, "--out" if args.out else "--data-dir", inputs={"the source (--source)": source})
    manifest = prepare_text8(source, out, verify=not args.skip_checksum, sha256=pinned)
    if pinned:
        which = "the file" if manifest["sha256_source"] == pinned else "its text8 content"
        print(f"checked {source} against --sha256 {pinned} (your pinned digest, instead of Mahoney's text8): "
              f"{which} matches")
    print(f"wrote {out}/train.txt, valid.txt, test.txt (90M/5M/5M characters)")
    return 0


def run_train(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    device = resolve_device(args.device)
    if args.max_steps is not None and args.max_steps <= 0:
        raise ValueError(f"--max-steps must be positive, got {args.max_steps}")
    cfg = load_lm_config(args.config, args.set, option="--set",  # "--set 'x': expected ..." names the option
                         **{"model.embedding": args.embedding, "train.max_steps": args.max_steps})
    args.on_interrupt = lambda: (f"`lm train ... --resume` continues from "
                                 f"{resume_point(Path(args.out) / 'last.pt')}; the steps after it are trained again "
                                 f"(a checkpoint is written every train.checkpoint_interval = "
                                 f"{cfg.train.checkpoint_interval} steps)")
    summary = train_language_model(cfg, args.corpus, args.out, resume=args.resume,  # notes to stderr: stdout is JSON
                                   stop_after=args.stop_after, progress=not args.no_progress, device=device,
                                   log=lambda message: print(message, file=sys.stderr, flush=True))
    print(json.dumps(json_ready({"out": args.out, **summary}), sort_keys=True))
    return 0


def run_eval(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    device = resolve_device(args.device)
    splits = tuple(s.strip() for s in args.splits.split(","))
    if "" in splits and any(splits):  # "valid," or "valid,,test": a typo, as --folds 1,,2 is for classify
        raise ValueError(f"--splits: {args.splits!r} has an empty entry; give names separated by single commas")
    splits = tuple(s for s in splits if s)
    bad = [s for s in splits if s not in ("train", "valid", "test")]
    if bad or not splits:
        raise ValueError(f"--splits: unknown split {bad[0] if bad else ''!r}; choose from train, valid, test")
    check_no_repeats(splits, args.splits, "splits")  # each would be evaluated (minutes on a large corpus) and recorded twice
    overrides = {"tgt_len": args.tgt_len, "mem_len": args.mem_len, "clamp_len": args.clamp_len,
                 "same_length": args.same_length, "batch_size": args.batch_size}
    # the split names are checked above with the option's text (evaluate_checkpoint checks them again, for Python
    # callers); --max-chars is checked by evaluate_checkpoint alone, before the checkpoint is read
    if args.results:  # before the evaluation: an unwritable or foreign results file is a one-line error naming it
        check_results_file(args.results, "--results", record=LM_RECORDS)
    evaluate_checkpoint(args.checkpoint, args.corpus, splits=splits, overrides=overrides, progress=not args.no_progress,
                        results=args.results, max_chars=args.max_chars, device=device,
                        report=lambda result: print(json.dumps(json_ready(result), sort_keys=True), flush=True))
    return 0
