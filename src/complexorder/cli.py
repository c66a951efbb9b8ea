"""The ``complexorder`` command line. Each subcommand lives in the module that does its work.

Errors a user can fix (bad names, missing files, malformed input) print one line
``complexorder: error: ...`` and exit with status 2; set ``COMPLEXORDER_DEBUG=1`` for the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable

from .errors import RunDirectoryBusy, is_out_of_memory, out_of_memory_message

#: subcommand -> module defining ``register(subparsers)``; imported only when needed.
COMMANDS: dict[str, str] = {
    "demo": "complexorder.experiments.demo_cli",
    "classify": "complexorder.experiments.classification_cli",
    "vectors": "complexorder.experiments.classification_cli",
    "download": "complexorder.experiments.classification_cli",
    "report": "complexorder.experiments.classification_cli",
    "ablate": "complexorder.experiments.ablation_cli",
    "inspect": "complexorder.experiments.ablation_cli",
    "translate": "complexorder.experiments.translation_cli",
    "lm": "complexorder.experiments.language_model_cli",
}

#: The packages of the ``experiments`` extra (module name: what pip installs): the experiment commands import them
#: when they run; the embeddings, the layers, the models and ``demo`` need none of them.
OPTIONAL_PACKAGES = {"scipy": "scipy", "matplotlib": "matplotlib", "gensim": "gensim", "sacrebleu": "sacrebleu",
                     "sentencepiece": "sentencepiece"}

USER_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, KeyError,
               ConnectionError, FloatingPointError,  # FloatingPointError: a run whose loss diverged
               RunDirectoryBusy,  # a second training in a run directory another one holds
               MemoryError,  # a model too large for the machine (errors.naming_out_of_memory names the settings)
               OSError)  # what the system refuses: a full disk, a read-only file system, too many open files


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that takes options by their full names only (``allow_abbrev=False``).

    argparse's abbreviations let ``--out`` mean ``--out-dir`` until a command gains an option that also starts with
    ``--out``, and then a script that worked fails, or means another option. Every subcommand's parser is of this
    class too: ``add_subparsers`` builds its parsers with the parent's class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = CommandParser(prog="complexorder",
                           description="Order-aware complex-valued word embeddings (Wang et al., ICLR 2020).")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"complexorder {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Register only the command asked for (fast start-up), or all of them for --help.
    wanted = [a for a in (argv or []) if not a.startswith("-")][:1]
    names = wanted if wanted and wanted[0] in COMMANDS else list(COMMANDS)
    for module in dict.fromkeys(COMMANDS[name] for name in names):  # a module may register several commands
        importlib.import_module(module).register(sub)
    return parser


#: Options whose empty value means something (``report --figure ''``: no figure), or gets a better error from the
#: command itself (a name list: "'' names nothing; valid names: ..."; ``--sha256``: "must be a SHA-256 digest").
EMPTY_HANDLED_BY_COMMAND = {"figure", "datasets", "models", "embeddings", "splits", "sha256"}


def empty_value_problem(args: argparse.Namespace, argv: list[str],
                        parser: argparse.ArgumentParser | None = None) -> str | None:
    """A one-line error for an option or argument given as an empty string, which used to mean its default
    without a word (``--data-dir ''`` read ``$COMPLEXORDER_DATA``, ``--run-dir ''`` wrote under ``runs/``).
    With ``parser``, an option the command requires (it has no default to leave it out for) is told so."""
    required = _required_options(parser, args) if parser is not None else set()
    for dest, value in vars(args).items():
        if dest in EMPTY_HANDLED_BY_COMMAND or not (value == "" or (isinstance(value, list) and "" in value)):
            continue
        flags = _option_strings(parser, args, dest) if parser is not None else ["--" + dest.replace("_", "-")]
        given = [a.split("=", 1)[0] for a in argv if a.split("=", 1)[0] in flags]
        if given:
            flag = given[-1]  # the name the user wrote: `translate train --out ''`, not --run-dir
            if dest in required:  # every required option names a file or directory, --config a name or file
                return f"{flag}: an empty value; give {'a config name or file' if dest == 'config' else 'a path'}"
            return f"{flag}: an empty value; give one, or leave the option out for its default"
        return f"{dest.upper()}: an empty value; give one"  # a positional argument
    return None


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the innermost (sub)command chosen in ``args``: ``translate run``'s for ``translate run ...``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(str(getattr(args, action.dest, None)))
            if chosen is not None:
                return chosen_parser(chosen, args)
    return parser


def _option_strings(parser: argparse.ArgumentParser, args: argparse.Namespace, dest: str) -> list[str]:
    """The long option names of ``dest`` in the command chosen in ``args`` (an alias too: ``--run-dir``, ``--out``)."""
    for parser in (chosen_parser(parser, args), parser):
        for action in parser._actions:
            if action.dest == dest and action.option_strings:
                return [name for name in action.option_strings if name.startswith("--")]
    return ["--" + dest.replace("_", "-")]


def _required_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> set[str]:
    """The destinations of the options that the (sub)command chosen in ``args`` requires, alone or as one of a
    required group (``lm prepare-text8``'s ``--source`` or ``--download``)."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(str(getattr(args, action.dest, None)))
            if chosen is not None:
                found |= _required_options(chosen, args)
        elif action.option_strings and action.required:
            found.add(action.dest)
    for group in parser._mutually_exclusive_groups:
        if group.required:
            found |= {action.dest for action in group._group_actions}
    return found


class _StandardOutput:
    """``sys.stdout`` for the length of a command, naming itself in a failed write: a full disk behind ``> file``
    (or ``> /dev/full``) raises an OSError without a file name, and the error line would name nothing."""

    def __init__(self, stream):
        self._stream = stream
        self.error: OSError | None = None  # the last failed write or flush: argparse's --help swallows it

    def _named(self, method: str, *args):
        try:
            return getattr(self._stream, method)(*args)
        except OSError as exc:
            if exc.filename is None and not isinstance(exc, BrokenPipeError):
                exc.filename = "standard output"
            self.error = exc
            raise

    def write(self, text: str) -> int:
        return self._named("write", text)

    def flush(self) -> None:
        return self._named("flush")

    def __getattr__(self, name: str):  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)


def _stdout_to_devnull(stream) -> None:
    """Point standard output's descriptor at the null device, so that Python's flush at exit does not fail again
    after the reader went away (nothing to do for a stream without a descriptor, as a test's capture)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _reader_gone(stream) -> int:
    """Stop quietly after a reader went away: standard output to the null device, and the status a shell reports
    for a command killed by SIGPIPE (128 + 13)."""
    _stdout_to_devnull(stream)
    return 141


def run_script(main: Callable[[], int | None]) -> int | None:
    """``main()``'s exit status for a script that prints to standard output (the table printers under
    ``benchmarks/``): a reader that went away (``script.py ... | head -3``) stops it quietly with 141, as it stops
    ``complexorder`` (below), not with a BrokenPipeError traceback and status 1.

    Use as ``raise SystemExit(run_script(main))``."""
    try:
        code = main()
        sys.stdout.flush()  # here, not at exit, so that a reader gone away is caught below
    except BrokenPipeError:
        return _reader_gone(sys.stdout)
    return code


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = wrapper = _StandardOutput(stdout)
    try:
        return _main(argv)
    except SystemExit as exc:
        if exc.code in (0, None):  # --help, --version: argparse swallows a failed write, which exited 0
            try:
                wrapper.flush()
            except OSError:
                pass
            if isinstance(wrapper.error, BrokenPipeError):  # `complexorder --help | head -1`: stop quietly
                _stdout_to_devnull(stdout)
            elif wrapper.error is not None:
                print(f"complexorder: error: standard output: {wrapper.error.strerror or wrapper.error}",
                      file=sys.stderr)
                raise SystemExit(2) from None
        raise
    finally:
        sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse would print the top-level usage; the command's own says what it takes
        before_command = argv.index(args.command) if args.command in argv else len(argv)
        blamed = parser if any(a in argv[:before_command] for a in unknown) else chosen_parser(parser, args)
        blamed.error(f"unrecognized arguments: {' '.join(unknown)}")  # `complexorder --bogus demo`: the top level's
    problem = empty_value_problem(args, argv, parser)
    if problem:
        print(f"complexorder: error: {problem}", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader went away (`complexorder classify --dry-run | head`): stop quietly
        return _reader_gone(sys.stdout)
    except ModuleNotFoundError as exc:  # an experiments extra not installed (the core needs torch, numpy, tqdm only)
        if exc.name not in OPTIONAL_PACKAGES or os.environ.get("COMPLEXORDER_DEBUG"):
            raise
        words = [a for a in argv[:2] if not a.startswith("-")]  # `translate run`, not `inspect ck/x.pt`
        command = " ".join(words if words[:1] in (["translate"], ["lm"], ["vectors"]) else words[:1])
        print(f"complexorder: error: `complexorder {command}` needs {exc.name}, which is not installed: pip install "
              f"'complexorder[experiments]' (or pip install {OPTIONAL_PACKAGES[exc.name]})", file=sys.stderr)
        return 2
    except USER_ERRORS as exc:
        if os.environ.get("COMPLEXORDER_DEBUG"):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        if isinstance(exc, MemoryError) and not str(exc):  # Python's own, which says nothing
            message = f"out of memory: {out_of_memory_message(exc)}"
        if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:  # not "[Errno 28] ..."
            message = exc.strerror if exc.filename is None else f"{exc.filename}: {exc.strerror}"
        print(f"complexorder: error: {message}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a failed allocation outside model building: a batch too large, say
        if not is_out_of_memory(exc) or os.environ.get("COMPLEXORDER_DEBUG"):
            raise
        print(f"complexorder: error: out of memory: {out_of_memory_message(exc)}; lower batch_size (or --beam-size) "
              "or the model's sizes in the config (finished results are kept)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        hint = getattr(args, "on_interrupt", None)  # a training says where a resume would start
        print(f"complexorder: interrupted; {hint() if callable(hint) else 'finished results are kept'}",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
