"""``complexorder classify``, ``complexorder vectors`` and ``complexorder download``."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any, overload

from ..checkpoint import check_writable
from ..models import CLASSIFIERS
from ..config import check_no_repeats, config_from_dict, find_config, read_extended_toml
from ..data.classification import DATASETS
from ..data.paths import resolve_data_dir
from ..data.vectors import VECTOR_FORMATS
from ..environment import NO_PROGRESS_HELP, set_threads
from .classification import (GridConfig, check_grid_outputs, dry_run_summary, load_grid_config, plan_units,
                             run_grid)
from .classification import select_variants as select_variants_by_name
from .classification import variant_names


@overload
def parse_names(text: str, valid, what: str) -> list[str]: ...
@overload
def parse_names(text: None, valid, what: str) -> None: ...
def parse_names(text: str | None, valid, what: str) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]``, each checked against ``valid``.

    Names that themselves hold commas (ablation labels such as ``"word-sharing period, shared W"``) are
    separated with semicolons instead: when ``text`` holds a ``;``, it is split on ``;`` only. One such name
    alone is taken whole (``--embeddings "word-sharing period, shared W"``).
    """
    if text is None:
        return None
    if text.strip() in valid:  # one name holding commas: it was split at them ("unknown name 'shared W'")
        return [text.strip()]
    names = [n.strip() for n in text.split(";" if ";" in text else ",") if n.strip()]
    if any("," in v for v in valid):  # labels holding commas: quoted, and the separator said
        listed = "; ".join(repr(v) for v in valid) + " (separate names holding a comma with ';')"
    else:
        listed = ", ".join(valid)
    if not names:
        raise ValueError(f"--{what}: {text!r} names nothing; valid names: {listed}")
    for n in names:
        if n not in valid:
            raise ValueError(f"--{what}: unknown name {n!r}; valid names: {listed}")
    check_no_repeats(names, text, what)  # each unit would train twice and be recorded twice
    return names


def select_variants(variants, text: str) -> list:
    """The variants named in ``--embeddings`` ``text`` (see :func:`classification.select_variants`)."""
    return select_variants_by_name(variants, parse_names(text, variant_names(variants), "embeddings"))


#: The most values one ``--folds``/``--seeds`` option may select (each is at least one trained model).
MAX_SELECTED = 10_000


def parse_ints(text: str | None, what: str) -> list[int] | None:
    """``"0-4"`` or ``"1,3,5"`` (or a mix) -> a list of integers.

    A reversed range (``"3-1"``), a value given twice and more than :data:`MAX_SELECTED` values are errors.
    """
    if text is None:
        return None
    values: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part[1:]:
                lo: str | int  # the range's ends as written, then as integers
                hi: str | int
                lo, hi = part.split("-", 1) if not part.startswith("-") else (part, part)
                lo, hi = int(lo), int(hi)
                if hi < lo:
                    raise LookupError(f"--{what}: '{part}' selects nothing (a range is low-high, e.g. '1-3')")
                if len(values) + hi - lo + 1 > MAX_SELECTED:
                    raise LookupError(f"--{what}: {text!r} selects {len(values) + hi - lo + 1:,} values; at most "
                                      f"{MAX_SELECTED:,} (each is a trained model)")
                values.extend(range(lo, hi + 1))
            elif part:
                values.append(int(part))
            else:  # "1,,2": a slip, not a selection
                raise LookupError(f"--{what}: {text!r} has an empty entry between commas")
            if not part.replace("-", "").isascii():  # int() reads other scripts' digits too
                raise ValueError(part)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    except ValueError:
        raise ValueError(f"--{what}: expected integers like '0-4' or '1,3,5', got {text!r}") from None
    if not values:
        raise ValueError(f"--{what}: {text!r} selects nothing (a range is low-high, e.g. '1-3')")
    counts = Counter(values)
    repeated = sorted(v for v, n in counts.items() if n > 1)
    if repeated:
        raise ValueError(f"--{what}: {', '.join(map(str, repeated))} given more than once in {text!r}")
    return values


def split_option_notes(args: argparse.Namespace, grid: GridConfig) -> list[str]:
    """Say when ``--folds`` or ``--seeds`` does not apply to some of the data sets selected.

    CV data sets run folds, the fixed-split ones seeds; the option for the other kind is not an error
    (a whole grid mixes both), but a user asking for one unit should not silently get a long run.
    """
    notes = []
    for option, protocol, other in (("folds", "fixed", "seeds"), ("seeds", "cv", "folds")):
        if getattr(args, option, None) is None or getattr(args, other, None) is not None:
            continue
        unaffected = [d for d in grid.datasets if DATASETS[d].protocol == protocol]
        if unaffected:
            runs = getattr(grid, other)
            notes.append(f"note: --{option} applies to the {'fixed-split' if option == 'seeds' else 'CV'} data sets "
                         f"only; {', '.join(unaffected)} run{'s' if len(unaffected) == 1 else ''} {other} "
                         f"{', '.join(map(str, runs))} (choose them with --{other})")
    return notes


def add_grid_arguments(p: argparse.ArgumentParser, default_config: str, datasets=tuple(DATASETS),
                       models=tuple(CLASSIFIERS)) -> None:
    """The options shared by `classify` and `ablate` (``datasets``/``models``: the names its help lists)."""
    p.add_argument("--config", default=default_config, help=f"grid TOML file or built-in name (default: {default_config})")
    p.add_argument("--datasets", help=f"subset, comma-separated ({', '.join(datasets)}; default: the config's)")
    p.add_argument("--models", help=f"subset, comma-separated ({', '.join(models)}; default: the config's)")
    p.add_argument("--embeddings", help="subset of variant labels or embedding names, comma-separated (semicolon-separated when a label holds a comma; one such label alone may be given as it is); a name that is a label selects that row only, an embedding name every row built on it")
    p.add_argument("--folds", help="CV folds, e.g. 0-9 or 0,3 (default: the config's)")
    p.add_argument("--seeds", help="seeds of the fixed-split data sets, e.g. 1-5 (default: the config's)")
    p.add_argument("--epochs", type=int, help="override the epochs of every model")
    p.add_argument("--data-dir", help="data directory (default: $COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    p.add_argument("--vectors", help="word2vec/GloVe file for the pretrained amplitudes and word vectors "
                                     "(default: the config's vectors: table2's is vectors/sg300.txt; table4 uses "
                                     "none)")
    p.add_argument("--vectors-format", choices=VECTOR_FORMATS,
                   help="format of the vectors file (default: the config's vectors_format, 'auto': told from its first line)")
    p.add_argument("--results", help="results JSON-lines file (default: the config's results; table2: "
                                      "runs/table2/results.jsonl, table4: runs/table4/results.jsonl)")
    p.add_argument("--checkpoint-dir", help="save each trained model here, for `complexorder inspect` (default: the "
                                            "config's checkpoint_dir: table4's is runs/table4/checkpoints, table2 "
                                            "saves none)")
    p.add_argument("--dry-run", action="store_true", help="list the units and exit")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: $OMP_NUM_THREADS or torch's choice); "
                                               "the benchmarks ran one per process")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: the config's device, else $COMPLEXORDER_DEVICE "
                                     "when set, else a GPU when torch sees one, else the CPU); not part of a unit's "
                                     "identity: a grid may finish on another device")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("classify", help="run the text-classification grid (paper Table 2); resumable",
                       description="Train and test every (dataset, model, embedding, fold/seed) unit of a grid config "
                                   "not yet in its results file; each finished unit is appended as one JSON line.")
    add_grid_arguments(p, "table2")
    p.set_defaults(func=run_classify)

    v = sub.add_parser("vectors", help="word vectors: `vectors train` trains 300-d skip-gram word2vec with gensim")
    vsub = v.add_subparsers(dest="action", metavar="ACTION")
    vsub.required = True
    t = vsub.add_parser("train", help="train skip-gram vectors on the unlabeled sentences of the data sets",
                        description="Trains skip-gram word2vec (gensim; 300-d by default, --dim) on every sentence "
                                    "of the six classification data sets and, unless --no-multi30k, the English side "
                                    "of Multi30k (labels unused), and "
                                    "saves it in word2vec text format with a .json provenance record beside it. With "
                                    "one worker thread the file is the same on every run with the same library "
                                    "builds.")
    t.add_argument("--data-dir", help="data directory whose classification/ and translation/multi30k/ sentences "
                                      "are read (default: $COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    t.add_argument("--out", default="vectors/sg300.txt",
                   help="output file, word2vec text format (default: %(default)s); an existing file is kept unless "
                        "--force")
    t.add_argument("--force", action="store_true",
                   help="replace an existing --out (classification units record the vectors' digest, so units "
                        "trained with the old file run again)")
    t.add_argument("--dim", type=int, default=300, help="vector dimension (default: %(default)s, as GoogleNews word2vec)")
    t.add_argument("--epochs", type=int, default=5, help="passes over the sentences (default: %(default)s, gensim's)")
    t.add_argument("--min-count", type=int, default=1,
                   help="ignore words rarer than this (default: %(default)s: every word gets a vector)")
    t.add_argument("--seed", type=int, default=1, help="gensim's random seed (default: %(default)s)")
    t.add_argument("--workers", type=int, default=1,
                   help="gensim worker threads (default 1: the same vectors on every run for the same seed and "
                        "corpus); more threads are faster, but their vectors vary from run to run")
    t.add_argument("--no-multi30k", action="store_true", help="leave out the English side of Multi30k")
    t.set_defaults(func=run_vectors_train)

    r = sub.add_parser("report", help="render classification results as Table 2 (Markdown) and Fig. 2 (PNG)",
                       description="Render the records of `complexorder classify` as the paper's Table 2: mean accuracy "
                                   "per data set, model and embedding, Wilcoxon marks of complex-order against each "
                                   "baseline, the paper's numbers beside ours; and Fig. 2, seconds per epoch.")
    r.add_argument("--results", nargs="+", default=["runs/table2/results.jsonl"],
                   help="results JSON-lines file(s) (default: runs/table2/results.jsonl)")
    r.add_argument("--out", help="Markdown table to write (default: beside the first results file, named after it: "
                                 "X.jsonl gives X.md, and results.jsonl gives table2.md; so the committed "
                                 "benchmarks/results/table2.md is written only when named)")
    r.add_argument("--figure", help="PNG of seconds per epoch (default: beside --out, fig2_epoch_time.png for "
                                    "table2.md and X_fig2_epoch_time.png for X.md; '' for none)")
    r.add_argument("--figure-dataset", help="plot only this data set (default: a panel per data set)")
    r.add_argument("--notes", help="Markdown file appended verbatim after the rendered table (hand-written scope "
                                   "and deviations), so that re-rendering reproduces the whole file")
    r.set_defaults(func=run_report)

    d = sub.add_parser("download", help="fetch the classification data sets from their public sources (network)",
                       description="Fetches MR, SUBJ, CR, MPQA, SST-2 and TREC from their original public sources "
                                   "into DATA_DIR/classification/NAME/, each file checked against the SHA-256 of "
                                   "the reference copy. Files already present and valid are kept; archives are "
                                   "cached in DATA_DIR/downloads/ (copy them there by hand when offline).")
    d.add_argument("--datasets", default=",".join(DATASETS),
                   help="comma-separated data sets to fetch (default: all, %(default)s)")
    d.add_argument("--data-dir", help="where classification/NAME/ folders are written (default: $COMPLEXORDER_DATA or "
                                      "~/.cache/complexorder/data)")
    d.add_argument("--no-progress", action="store_true", help="no download progress bar (it shows only when standard error is a terminal)")
    d.add_argument("--skip-checksum", action="store_true",
                   help="keep files whose SHA-256 differs from the reference: files already in --data-dir (never "
                        "replaced; without this option they are an error) and files downloaded now")
    d.set_defaults(func=run_download)


def load_grid(args: argparse.Namespace, task: str = "classification") -> GridConfig:
    """The grid of ``--config`` with the command line's subsets and settings (:func:`load_grid_config`)."""
    changes: dict[str, Any] = {}
    if args.datasets is not None:
        changes["datasets"] = parse_names(args.datasets, DATASETS, "datasets")
    if args.models is not None:
        # any model, as --datasets takes any data set: one the config leaves out runs with its [model] settings
        # (the defaults where the config has none, noted before training); it said "unknown name 'transformer'"
        changes["models"] = parse_names(args.models, list(CLASSIFIERS), "models")
    for name in ("folds", "seeds"):
        values = parse_ints(getattr(args, name), name)
        if values is not None:
            changes[name] = values
    for name in ("data_dir", "vectors", "vectors_format", "results", "checkpoint_dir", "device"):
        if getattr(args, name, None):
            changes[name] = getattr(args, name)
    if args.epochs is not None and args.epochs <= 0:
        raise ValueError(f"--epochs must be positive, got {args.epochs}")
    if args.embeddings is not None:
        # --embeddings names the file's variants (by label or embedding name), checked here for the option's own
        # error; the file is read, not yet checked, as the command line's other settings change it (--device cpu)
        path = find_config(args.config, task)
        variants = config_from_dict(read_extended_toml(path, task), GridConfig, where=str(path)).resolved_variants()
        changes["variants"] = select_variants(variants, args.embeddings)
    return load_grid_config(args.config, task, epochs=args.epochs, **changes)


def command_line() -> str:
    return "complexorder " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def default_settings_notes(config_path, grid: GridConfig, task: str = "classification") -> list[str]:
    """One line per model of ``grid`` whose settings the config file does not give (no ``[model]`` table):
    its units train with the library defaults, which an explore config meant to pair with a main grid (e.g.
    ``table4``: 8 epochs, patience 2) easily gets wrong without noticing (their config hashes then differ)."""
    raw = read_extended_toml(config_path, task)
    notes = []
    for model in grid.models:
        if model not in raw:
            s = getattr(grid, model)
            notes.append(f"note: {config_path} has no [{model}] table, so its {model} units train with the library "
                         f"defaults (epochs {s.epochs}, patience {s.patience}, lr {s.lr:g}, batch {s.batch_size}); "
                         f"copy the settings of the grid it should pair with, or extend it (extends = \"table4\"), "
                         f"to compare by seed")
    return notes


def run_classify(args: argparse.Namespace, task: str = "classification") -> int:
    set_threads(getattr(args, "threads", None))
    grid = load_grid(args, task)
    for line in default_settings_notes(find_config(args.config, task), grid, task) + split_option_notes(args, grid):
        print(f"complexorder: {line}", file=sys.stderr)
    if args.dry_run:
        units = plan_units(grid)
        check_grid_outputs(grid)  # stop 81: a dry run passed a results "file" that was a directory
        line, todo = dry_run_summary(grid, units, lambda text: print(f"complexorder: {text}", file=sys.stderr))
        print(f"complexorder: {line}", file=sys.stderr)  # as the run's first line says
        pending = {id(u) for u in todo}
        for u in units:  # finished ones marked: the list showed them as if they would run
            print(u.dataset, u.model, u.variant.label, u.split, *([] if id(u) in pending else ["(finished)"]))
        return 0
    run_grid(grid, progress=not args.no_progress, command=command_line())
    return 0


def run_vectors_train(args: argparse.Namespace) -> int:
    import gensim  # noqa: F401  (an extra: missing, it is named now, not after the corpus is read)
    from ..data.download import sha256_of
    from ..data.vectors import (check_vectors_out, check_word2vec_settings, provenance_path, train_word2vec,
                                unlabeled_sentences, vectors_provenance)

    option = lambda name: "--" + name.replace("_", "-")  # noqa: E731
    check_word2vec_settings(args.dim, args.epochs, args.min_count, option,  # before the corpus is read
                            seed=args.seed, workers=args.workers)
    data_dir = resolve_data_dir(args.data_dir)
    # before the corpus is read and the vectors trained: the vectors and their provenance record can be written,
    # and not over the data sets they are trained on
    corpus = {f"the data folder it reads ({data_dir / part})": data_dir / part for part in ("classification", "translation")}
    check_vectors_out(args.out, "--out", force=args.force)
    check_writable(args.out, "--out")
    check_writable(provenance_path(args.out), "--out (its provenance record)")
    inside = [what for what, folder in corpus.items() if Path(args.out).resolve().is_relative_to(folder.resolve())]
    if inside:
        raise ValueError(f"--out {args.out} is inside {inside[0]}, which this command reads; write the vectors "
                         "elsewhere (e.g. vectors/sg300.txt)")
    if Path(args.out).exists() and not args.force:  # a test run must not replace the vectors of earlier results
        made = vectors_provenance(args.out) or {}
        digest = f" (sha256 {made['sha256'][:12]}…)" if made.get("sha256") else ""
        raise ValueError(f"--out {args.out} exists{digest}; pass --force to replace it, or give another --out")
    sentences = unlabeled_sentences(data_dir, include_multi30k=not args.no_multi30k)
    print(f"training {args.dim}-d skip-gram word2vec on {len(sentences):,} sentences "
          f"({sum(map(len, sentences)):,} tokens) from {data_dir}")
    kv = train_word2vec(sentences, args.out, dim=args.dim, epochs=args.epochs, min_count=args.min_count, seed=args.seed,
                        workers=args.workers, option=option)
    made = vectors_provenance(args.out) or {}  # written by train_word2vec, with the file's digest
    # every classification result records this digest, so results from different vector files are told apart
    print(f"saved {len(kv.key_to_index):,} vectors to {args.out} (sha256 {made.get('sha256') or sha256_of(args.out)})")
    versions = ", ".join(f"{k} {v}" for k, v in made.get("versions", {}).items())
    print(f"provenance (settings, corpus size, {versions}) in {provenance_path(args.out)}")
    return 0


def run_download(args: argparse.Namespace) -> int:
    from ..data.sources import check_present_files, download_dataset

    data_dir = resolve_data_dir(args.data_dir)
    names = parse_names(args.datasets, DATASETS, "datasets")
    if not args.skip_checksum:  # an edited file of a later data set stops the command before anything is fetched
        for name in names:
            check_present_files(name, data_dir)
    for name in names:
        files = download_dataset(name, data_dir, verify=not args.skip_checksum, progress=not args.no_progress)
        print(f"{name}: {'fetched ' + ', '.join(f.name for f in files) if files else 'already present'}")
    return 0


def default_table_path(results: str | Path, name: str) -> Path:
    """Where ``report``/``ablate`` write their table without ``--out``: beside the results file and named after it
    (``X.jsonl`` gives ``X.md``), so that rendering one file never replaces another's table; a grid's generic
    ``results.jsonl`` gives ``name`` (``table2.md``, ``table4.md``)."""
    results = Path(results)
    return results.parent / (name if results.stem == "results" else results.stem + ".md")


def run_report(args: argparse.Namespace) -> int:
    from .report import print_superseded_note, write_report

    if args.out is None:
        args.out = str(default_table_path(args.results[0], "table2.md"))
    if args.figure is None:  # and the figure after the table, so that only table2.md's is Fig. 2's file name
        out = Path(args.out)
        args.figure = str(out.parent / ("fig2_epoch_time.png" if out.name == "table2.md"
                                        else out.stem + "_fig2_epoch_time.png"))
    text = write_report(args.results, args.out, args.figure or None, args.figure_dataset, notes=args.notes)
    print(f"wrote {args.out}" + (f" and {args.figure}" if args.figure else ""))
    if "**Cells mixing settings.**" in text:
        print(f"complexorder: note: some cells of {args.out} mix units trained with different settings (listed "
              f"under the table)", file=sys.stderr)
    print_superseded_note(text, args.out)
    return 0
