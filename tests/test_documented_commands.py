"""Every ``complexorder`` command written in the documentation uses options its command has.

The README, ``docs/``, the results files under ``benchmarks/`` and the scripts there quote about 3,600 command lines,
each the record of how a number was made. An option renamed or removed in the command line interface would
leave those records wrong without a test failing; and since the parser takes options by their full names only
(``allow_abbrev=False``), a quoted abbreviation would no longer run either. These tests read the files as text:
for every ``complexorder COMMAND [ACTION]`` they find, each ``--option`` that follows on the same line must be an
option of that command.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from complexorder.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted(p for p in (ROOT / "benchmarks").rglob("*") if p.suffix in {".md", ".toml", ".sh", ".py"})]

_MENTION = re.compile(r"complexorder (%s)\b" % "|".join(COMMANDS))
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def documented_option_problems(text: str, where: str, top: argparse.ArgumentParser) -> list[str]:
    """``where: complexorder CMD ...: --option`` for each option a quoted command line gives that its command lacks.

    A mention runs to the end of its backtick span, its shell comment, pipe or redirection, or the line."""
    problems = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for mention in _MENTION.finditer(line):
            rest = re.split(r"`|\s#\s|\s[|<>]\s|\s&&\s|;\s", line[mention.end():])[0]
            parser = _subparsers(top)[mention.group(1)]
            words = rest.split()
            actions = _subparsers(parser)
            if actions and words and words[0] in actions:  # `translate run`, `lm train`
                parser = actions[words[0]]
            known = _options(parser)
            for option in _OPTION.findall(rest):
                if option not in known:
                    problems.append(f"{where}:{lineno}: complexorder {mention.group(1)} ...: {option}")
    return problems


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


def test_the_scan_finds_wrong_options_and_accepts_right_ones(parser):
    text = ("run `complexorder classify --config table2 --datasets MR` then\n"
            "    complexorder translate run --checkpoint x.pt --beam-size 4 < en.txt  # --not-an-option here\n"
            "complexorder lm train --config proxy_cpu --corpus c --out o --embeding vanilla\n"
            "`complexorder report --result r.jsonl`, complexorder inspect ck.pt --out-dir d\n")
    assert documented_option_problems(text, "t.md", parser) == [
        "t.md:3: complexorder lm ...: --embeding",
        "t.md:4: complexorder report ...: --result",
    ]


def test_documented_commands_use_existing_options(parser):
    problems, mentions = [], 0
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        mentions += len(_MENTION.findall(text))
        problems += documented_option_problems(text, str(path.relative_to(ROOT)), parser)
    assert mentions > 1000  # the scan reads the files it should
    assert problems == []


@pytest.mark.parametrize("argv, usage", [
    (["demo", "--bogus"], "usage: complexorder demo "),
    (["translate", "run", "--checkpoint", "x.pt", "--bogus"], "usage: complexorder translate run "),
    (["--bogus", "demo"], "usage: complexorder [-h] [--version] COMMAND"),  # before the command: the top level's
])
def test_an_unknown_option_is_reported_with_its_commands_usage(capsys, argv, usage):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)  # not the top-level `usage: complexorder [-h] [--version] COMMAND ...`
    assert err.rstrip().endswith("error: unrecognized arguments: --bogus")


@pytest.mark.parametrize("argv, message", [
    (["classify", "--data", "d", "--dry-run"], "unrecognized arguments: --data d"),  # --data-dir, abbreviated
    (["lm", "eval", "--checkpoint", "c.pt", "--corpus", "c", "--split", "valid"],  # --splits, abbreviated
     "unrecognized arguments: --split valid"),
])
def test_options_are_taken_by_their_full_names_only(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(message)


@pytest.mark.parametrize("argv, name, dest", [
    (["translate", "train", "--config", "cpu-vanilla"], "--run-dir", "run_dir"),
    (["translate", "run", "--checkpoint", "c.pt"], "--output", "output"),
    (["translate", "average", "--run-dir", "r"], "--output", "output"),
    (["inspect", "c.pt"], "--out-dir", "out_dir"),
])
def test_out_is_taken_where_the_output_option_has_another_name(parser, argv, name, dest):
    # `--out` is the output option of `vectors train`, `report`, `ablate` and `lm build-corpus|prepare-text8|train`;
    # the commands that named theirs otherwise (--run-dir, --output, --out-dir) take --out too, for the same value
    for flag in (name, "--out"):
        assert getattr(parser.parse_args([*argv, flag, "x"]), dest) == "x"


@pytest.mark.parametrize("argv, flag", [
    (["translate", "train", "--config", "cpu-vanilla", "--out", ""], "--out"),
    (["translate", "train", "--config", "cpu-vanilla", "--run-dir="], "--run-dir"),
    (["inspect", "c.pt", "--out="], "--out"),
])
def test_an_empty_value_names_the_option_as_written(capsys, argv, flag):
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"complexorder: error: {flag}: an empty value; give one, or leave the option "
                                       "out for its default\n")


def test_the_python_example_of_docs_configs_calls_the_api_as_it_is(monkeypatch):
    # the example in docs/configs.md, run with the three training functions replaced by stand-ins that check the
    # arguments they are given against the real signatures (training itself takes minutes to hours)
    import inspect

    import complexorder.experiments.classification as classification
    import complexorder.experiments.language_model as language_model
    import complexorder.experiments.translation as translation

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "configs.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    calls = []
    for module, name in ((classification, "run_grid"), (translation, "train_translation"),
                         (language_model, "train_language_model")):
        real = getattr(module, name)

        def stand_in(*args, _real=real, **kwargs):
            inspect.signature(_real).bind(*args, **kwargs)  # a TypeError if the example calls it wrongly
            calls.append((_real.__name__, args))
            return {}

        monkeypatch.setattr(module, name, stand_in)
    exec(compile(blocks[0], "docs/configs.md", "exec"), {})
    assert [name for name, _ in calls] == ["run_grid", "train_translation", "train_language_model"]
    grid, config, lm_config = calls[0][1][0], calls[1][1][0], calls[2][1][0]
    assert (grid.datasets, grid.models, grid.seeds, grid.results) == (["TREC"], ["cnn"], [1, 2], "runs/trec_cnn.jsonl")
    assert config.train.lr == 0.0016
    assert lm_config.model.frequency_init == "zeros"
