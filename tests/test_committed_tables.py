"""Every committed table that one command renders from committed records is exactly what that command
renders now (benchmarks/renders.toml lists them; benchmarks/rerender.py renders them). A table whose
numbers no longer follow from its records and the current code fails here, naming the file."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("rerender", ROOT / "benchmarks" / "rerender.py")
rerender = importlib.util.module_from_spec(_spec)
sys.modules["rerender"] = rerender  # dataclasses resolve the module by name
_spec.loader.exec_module(rerender)
TABLES = rerender.load_registry()


@pytest.mark.parametrize("table", TABLES, ids=[Path(t.file).stem for t in TABLES])
def test_committed_table_is_what_its_command_renders_from_the_committed_records(table, tmp_path):
    diff = rerender.check(table, tmp_path)
    assert not diff, (f"{table.file} differs from `complexorder {' '.join(table.args)}`; "
                      f"`python benchmarks/rerender.py --write` refreshes it:\n" + "\n".join(diff[:30]))


def test_registry_lists_every_committed_report_table_whose_records_are_committed():
    """A table rendered by report / ablate --report-only from committed records cannot go unchecked: each
    results table naming such a command is in the registry, or is one of the documented exceptions."""
    listed = {Path(t.file).name for t in TABLES}
    not_renderable = {"table4_first_position.md", "table4_first_three_seeds.md"}  # inputs not committed
    not_renderable.add("table4_authors_classifier_lr1e-4_24_epochs.md")  # longer_budget.py, checked below
    not_renderable.add("table2_tpe_cr_patience.md")  # tpe_cr_patience.py, checked below
    not_renderable.add("table2_tpe_trec_scale.md")  # paired_rows.py, checked below
    not_renderable.add("table2_tpe_sst2_scale.md")  # paired_rows.py, checked below
    # order_use.py over checkpoints (not committed): table4_order_use*.md, checked in tests/test_order_use.py
    not_renderable |= {p.name for p in (ROOT / "benchmarks" / "results").glob("table4_order_use*.md")}
    for path in sorted((ROOT / "benchmarks" / "results").glob("table[24]*.md")):
        if path.name not in not_renderable:
            assert path.name in listed, f"{path.name} is not in benchmarks/renders.toml"
    for table in TABLES:
        for arg in table.args:
            if arg.endswith((".jsonl", ".toml", ".md")):
                assert (ROOT / arg).is_file(), f"{table.file}: {arg} is not committed"


# --config files printed in results files that are not in the project, and what each file printing one must say
# about it: the committed replacement's path in backticks (its config hashes checked by hand against the records,
# stop 83), or the sentence saying the file is lost
ABSENT_CONFIGS = {
    "/work/exp/cnn_lstm_freqlr_sst2.toml": "`benchmarks/classification/explore/cnn_lstm_freqlr_sst2.toml`",  # stop 83
    **{f"runs/explore/{n}.toml": "`runs/explore/` and are lost"  # hparams.md, stop 55
       for n in ("freq_fasttext", "freq_cnn_lstm", "lr1e-3", "lr1e-4", "lr1e-4_long")},
}


def test_every_config_file_a_results_file_prints_is_committed_or_explained():
    """A command printed beside a number must be one a reader can re-run: its --config file exists in the project,
    or the file printing it names the committed file that replaces it or says that it is lost (ABSENT_CONFIGS)."""
    import re
    for path in sorted((ROOT / "benchmarks" / "results").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for config in sorted(set(re.findall(r"--config (\S+)", text))):
            config = config.strip("`'\\")
            if "/" not in config and not config.endswith(".toml"):
                continue  # a built-in name (table2, table4, cpu-complex-order, proxy_cpu), checked when run
            if (ROOT / config).is_file() or config.startswith("/work/main/") and Path(config).is_file():
                continue
            assert config in ABSENT_CONFIGS, f"{path.name} prints --config {config}, which is not in the project"
            said = ABSENT_CONFIGS[config]
            assert said in text, f"{path.name} prints --config {config} without saying {said}"
            if said.startswith("`benchmarks/"):
                assert (ROOT / said.strip("`")).is_file(), f"{said} is not committed"


def test_split_keeps_preface_and_hand_written_sections_and_rewrites_only_the_render(tmp_path, monkeypatch):
    table = rerender.Table("t.md", ("report",), starts_at="## Title")
    text = "# Preface\n\nwords\n\n## Title\n\nold 0.1\n\n## Reading (hand-written)\n\nnotes\n"
    preface, generated, rest = rerender.split_committed(table, text)
    assert preface == ["# Preface", "", "words", ""]
    assert generated == ["## Title", "", "old 0.1"]
    assert rest == ["", "## Reading (hand-written)", "", "notes"]
    (tmp_path / "t.md").write_text(text)
    monkeypatch.setattr(rerender, "ROOT", tmp_path)
    monkeypatch.setattr(rerender, "render", lambda t, tmp: ["## Title", "", "new 0.2"])
    diff = rerender.check(table, tmp_path, write=True)
    assert "-old 0.1" in diff and "+new 0.2" in diff
    assert (tmp_path / "t.md").read_text() == text.replace("old 0.1", "new 0.2")
    assert rerender.check(table, tmp_path) == []
    with pytest.raises(ValueError, match=r"t.md: expected exactly one line '## Missing', found 0"):
        rerender.split_committed(rerender.Table("t.md", (), starts_at="## Missing"), text)


def test_table6_seeds_is_what_its_script_renders_from_the_committed_records(monkeypatch, capsys):
    """table6_seeds.md and its records: `make_table6_seeds.py --check` with the command the file states (the run
    directories are not committed, so it renders from the records alone; where they exist they must agree)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "lm"))
    spec = importlib.util.spec_from_file_location("make_table6_seeds", ROOT / "benchmarks/lm/make_table6_seeds.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stated = "--runs runs/lm/confirm --records benchmarks/results/table6_seeds.jsonl --out benchmarks/results/table6_seeds.md --notes benchmarks/lm/table6_seeds_notes.md"
    assert f"python benchmarks/lm/make_table6_seeds.py {stated}" in (ROOT / "benchmarks/results/table6_seeds.md").read_text()
    assert script.main(stated.split() + ["--check"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("name, runs", [("budget", "runs/stop76/lm"),  # stop 76
                                        ("frequency_lr", "runs/stop77/lm"),  # stop 77
                                        ("initial_phase", "runs/stop81/lm"),  # stop 81
                                        ("initial_phase_confirm", "runs/stop82/lm")])  # stop 82
def test_table6_screens_are_what_their_scripts_render_from_the_committed_records(name, runs, monkeypatch):
    """table6_NAME.md and its records: `make_table6_NAME.py --runs RUNS --check` with the command the file states
    (the run directories are not committed: the script renders from the records alone where they are missing)."""
    monkeypatch.chdir(ROOT)
    spec = importlib.util.spec_from_file_location(f"make_table6_{name}", ROOT / f"benchmarks/lm/make_table6_{name}.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert f"python benchmarks/lm/make_table6_{name}.py --runs {runs}" in \
        (ROOT / f"benchmarks/results/table6_{name}.md").read_text()
    assert script.main(["--runs", runs, "--check"]) == 0


SCRIPT_TABLES = [  # (script under benchmarks/classification, committed table, the arguments the table states)
    ("longer_budget.py", "table4_authors_classifier_lr1e-4_24_epochs.md",  # rule addendum 8
     ["--longer", "benchmarks/results/table4_authors_classifier_lr1e-4_24_epochs.jsonl",
      "--base", "benchmarks/results/table4_authors_classifier_lr1e-4_intel.jsonl",
      "benchmarks/results/table4_authors_classifier_lr1e-4_grid.jsonl",
      "--reference", "complex-order, the authors' classifier, lr 1e-4", "--cpu", "Intel"]),
    ("tpe_cr_patience.py", "table2_tpe_cr_patience.md",  # stop 71
     ["--patience3", "benchmarks/results/table2_tpe_cr_patience3.jsonl",
      "--no-early-stop", "benchmarks/results/table2_tpe_cr_no_early_stop.jsonl",
      "--other", "benchmarks/results/table2_tpe_cr_position_scale.jsonl",
      "--above-majority", "benchmarks/results/table2_tpe_cr_above_majority.jsonl"]),  # stop 72
] + [("paired_rows.py", "table2_tpe_trec_scale.md",  # stop 72: one command per model and row
      ["--results", "benchmarks/results/table2_tpe_trec_scale.jsonl", "--model", model, "--row", row])
     for model in ("cnn", "lstm", "fasttext") for row in ("complex-order", "complex-order, frequency lr x0.1")] + [
    ("paired_rows.py", "table2_tpe_sst2_scale.md",  # stop 72
     ["--results", "benchmarks/results/table2_tpe_sst2_scale.jsonl", "--model", "lstm", "--row",
      "complex-order, frequency lr x0.1"])]


@pytest.mark.parametrize("script_name, table, args", SCRIPT_TABLES,
                         ids=[t[1] + ("" if t[0] != "paired_rows.py" else f" {t[2][-3]}, {t[2][-1]}") for t in SCRIPT_TABLES])
def test_script_table_is_what_its_script_prints_from_the_committed_records(monkeypatch, capsys, script_name, table,
                                                                           args):
    """A table printed by a script (not by report / ablate): it states the command, and its table is exactly what
    that command prints now from the committed records."""
    from conftest import load_benchmark

    monkeypatch.chdir(ROOT)
    script = load_benchmark(f"classification/{script_name}", Path(script_name).stem)
    text = (ROOT / "benchmarks/results" / table).read_text(encoding="utf-8")
    stated = f"python benchmarks/classification/{script_name} " + " ".join(f'"{a}"' if " " in a else a for a in args)
    assert stated in text
    assert script.main(args) == 0
    printed = capsys.readouterr().out.strip()
    assert printed in text, printed
