"""Table 4 rows (parameter counts), `inspect` (δ_j, Table 7, figures) and their bad input."""

import dataclasses
import json
import os
import re
import shlex
import struct

import pytest
import torch

import complexorder as co
from complexorder.checkpoint import load_checkpoint, save_checkpoint
from complexorder.config import config_to_dict, find_config, load_config
from complexorder.experiments.ablation import PAPER_ROWS, render_table4
from complexorder.experiments.classification import GridConfig, Unit, Variant, build_model_from_config, unit_config
from complexorder.experiments.inspection import extreme_words, inspect_checkpoint, position_sensitivity

V, D, FF = 50, 8, 16


def ablation_grid() -> GridConfig:
    grid = load_config(find_config("table4", "ablation"), GridConfig)
    small = dataclasses.replace(grid.transformer, embedding_dim=D, dim_feedforward=FF, nhead=2)
    return dataclasses.replace(grid, transformer=small)


def expected_count(label: str) -> int:
    """The paper's arithmetic for the embedding plus our 1-layer encoder and output layer, by hand."""
    emb = {"complex-order": 2 * V * D, "adding initial phases": 3 * V * D, "dimension-sharing period": V * D + V,
           "word-sharing period": V * D + D, "dimension-sharing amplitude": V * D + V,
           "word-sharing amplitude": V * D + D, "complex-vanilla": 2 * V * D, "vanilla Transformer (TPE)": V * D}
    base = label.replace(", shared W", "")
    shared = label.endswith("shared W")
    if base.startswith("vanilla"):  # real nn.TransformerEncoderLayer
        layer = 4 * (D * D + D) + (D * FF + FF) + (FF * D + D) + 2 * 2 * D
    else:
        proj = D * D + D
        layer = 3 * (proj if shared else 2 * proj) + 2 * proj + 2 * (D * FF + FF) + 2 * (FF * D + D) + 2 * (2 * 2 * D)
    return emb[base] + layer + (D * 2 + 2)


def test_the_ablation_config_holds_the_paper_rows_in_order():
    grid = ablation_grid()
    assert [v.label for v in grid.resolved_variants()] == [row[0] for row in PAPER_ROWS]
    assert grid.datasets == ["SST2-sent"] and grid.models == ["transformer"]


@pytest.mark.parametrize("label", [row[0] for row in PAPER_ROWS])
def test_parameter_count_of_every_ablation_row(label):
    grid = ablation_grid()
    variant = next(v for v in grid.resolved_variants() if v.label == label)
    config = unit_config(grid, Unit("SST2", "transformer", variant, "seed-1"))
    model = build_model_from_config(config, V, 2, 64)
    assert sum(p.numel() for p in model.parameters()) == expected_count(label)


def classifier_checkpoint(tmp_path, embedding="complex-order", options=None, vocab=None):
    grid = GridConfig()
    settings = dataclasses.replace(grid.fasttext, embedding_dim=4, hidden=3)
    config = {"dataset": "SST2", "model": "fasttext", "split": "seed-1", "seed": 1, "embedding": embedding,
              "embedding_options": options or {}, "share_weights": False, "settings": config_to_dict(settings)}
    vocab = vocab or ["<pad>", "<unk>", "worst", "solid", "film", "the"]
    torch.manual_seed(0)
    model = build_model_from_config(config, len(vocab), 2, 20)
    if embedding == "complex-order" and model.embedding.frequency.shape[0] == len(vocab):  # not word-shared
        with torch.no_grad():
            model.embedding.frequency.copy_(torch.tensor(
                [[0, 0, 0, 0], [9, 9, 9, 9], [1.0, -2.0, 3.0, -2.0], [0.1, 0.1, -0.1, 0.1], [0.5, 0.5, 0.5, 0.5],
                 [0.0, 0.0, 0.0, 0.4]])[:, : model.embedding.frequency.shape[1]].expand_as(model.embedding.frequency))
    path = tmp_path / "model.pt"
    save_checkpoint(path, "classifier", model.state_dict(), config, vocab=vocab, label_names=["neg", "pos"],
                    max_positions=20, test_accuracy=0.5)
    return path, model


def test_delta_is_the_mean_absolute_frequency_by_hand(tmp_path):
    path, model = classifier_checkpoint(tmp_path)
    delta = position_sensitivity(model.embedding)
    assert torch.allclose(delta[2], torch.tensor((1 + 2 + 3 + 2) / 4))  # |-2| counts as 2
    assert torch.allclose(delta[3], torch.tensor(0.1)) and torch.allclose(delta[5], torch.tensor(0.1))
    greatest, smallest = extreme_words(delta, ["<pad>", "<unk>", "worst", "solid", "film", "the"], k=2)
    assert [w for w, _ in greatest] == ["worst", "film"] and {w for w, _ in smallest} == {"solid", "the"}
    shared = co.ComplexOrderEmbedding(6, 4, frequency_sharing="word")
    assert position_sensitivity(shared).shape == (6,) and len(set(position_sensitivity(shared).tolist())) == 1


def png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_inspect_writes_the_figures_and_table7(tmp_path):
    path, _ = classifier_checkpoint(tmp_path)
    out = tmp_path / "out"
    logs = []
    written = inspect_checkpoint(path, out, word="worst", k=3, log=logs.append)
    assert png_size(written["density"]) == (720, 420) and written["density"].stat().st_size > 5000
    assert png_size(written["waves"]) == (840, 420) and written["waves"].stat().st_size > 5000
    table = written["table"].read_text()
    assert "| greatest δ, descending | worst film the |" in table or "| greatest δ, descending | worst film solid |" in table
    assert logs[0].startswith("greatest δ: worst film")
    assert written["dims"] == [0, 3, 2]  # |ω| of "worst" = 1, 2, 3, 2: slowest dim 0, middle (stable) 3, fastest 2
    # stop 73: lists longer than half the vocabulary overlapped without a word
    assert "Note: the vocabulary holds 4 words, fewer than twice --top 3, so the two lists share 2 words." in table
    assert "note: the vocabulary holds 4 words, fewer than twice --top 3, so the two lists share 2 words" in logs
    assert "share" not in inspect_checkpoint(path, tmp_path / "k2", k=2, log=lambda _: None)["table"].read_text()


def test_inspect_states_its_command_shell_quoted_so_it_can_be_pasted(tmp_path):
    # checkpoint names carry the row label, which may hold an apostrophe ("the authors' classifier")
    path, _ = classifier_checkpoint(tmp_path)
    odd = path.with_name("complex-order,_the_authors'_classifier-seed-1.pt")
    path.rename(odd)
    out = tmp_path / "out dir"
    written = inspect_checkpoint(odd, out, word="worst", k=3, log=lambda _: None)
    stated = re.search(r"^Produced by `complexorder inspect (.*)`\.$", written["table"].read_text(), re.M).group(1)
    assert shlex.split(stated) == [str(odd), "--out-dir", str(out), "--word", "worst", "--top", "3"]


def test_inspect_of_word_shared_frequencies_says_that_delta_is_the_same_for_every_word(tmp_path):
    path, model = classifier_checkpoint(tmp_path, options={"frequency_sharing": "word"})
    assert tuple(model.embedding.frequency.shape) == (1, 4)
    logs = []
    written = inspect_checkpoint(path, tmp_path / "out", k=2, log=logs.append)
    note = "frequencies are shared by all words (word-sharing): δ is the same for every word"
    assert f"Note: {note}." in written["table"].read_text() and f"note: {note}" in logs
    assert "Every word starts from the sinusoidal frequencies" not in written["table"].read_text()
    plain = inspect_checkpoint(classifier_checkpoint(tmp_path / "p")[0], tmp_path / "out2", k=2, log=lambda m: None)
    assert "Note:" not in plain["table"].read_text()


def test_inspect_cli_writes_under_runs_inspect_by_default(tmp_path, monkeypatch):
    from complexorder.cli import main

    path, _ = classifier_checkpoint(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["inspect", str(path), "--top", "2"]) == 0
    assert (tmp_path / "runs" / "inspect" / path.stem / "table7.md").exists()


def test_inspect_bad_input(tmp_path):
    path, _ = classifier_checkpoint(tmp_path)
    with pytest.raises(ValueError, match=r"^word 'wrost' is not in the checkpoint's vocabulary \(4 words, lower-cased\); "
                                         r"near matches: worst$"):  # stop 75: "(6 words)" counted <pad> and <unk>
        inspect_checkpoint(path, tmp_path / "o", word="wrost")
    with pytest.raises(ValueError, match=r"^word 'FILM' is not in the checkpoint's vocabulary \(4 words, lower-cased\); "
                                         r"near matches: film$"):  # stop 75: no near match for the upper-case form
        inspect_checkpoint(path, tmp_path / "o", word="FILM")
    (tmp_path / "nan").mkdir()
    diverged, model = classifier_checkpoint(tmp_path / "nan")
    state = model.state_dict()
    state["embedding.frequency"][3, 1] = float("nan")
    save_checkpoint(diverged, "classifier", state, load_checkpoint(diverged, "classifier")["config"],
                    vocab=["<pad>", "<unk>", "worst", "solid", "film", "the"], label_names=["neg", "pos"],
                    max_positions=20, test_accuracy=0.5)
    with pytest.raises(ValueError, match=rf"^checkpoint {re.escape(str(diverged))}: its frequencies hold NaN or infinite "
                                         r"values \(a training that diverged\?\); nothing to inspect$"):
        inspect_checkpoint(diverged, tmp_path / "o")  # stop 75: "autodetected range of [nan, nan] is not finite"
    with pytest.raises(ValueError, match=r"^word '<pad>' is a special token of the vocabulary, not a word; choose a word$"):
        inspect_checkpoint(path, tmp_path / "o", word="<pad>")
    with pytest.raises(ValueError, match="^--dims: dimension 9 is outside 0..3$"):
        inspect_checkpoint(path, tmp_path / "fresh", word="worst", dims=[9])
    assert not (tmp_path / "fresh").exists()  # checked before anything is written
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(PermissionError, match="cannot create directory"):
        inspect_checkpoint(path, blocker / "sub")
    (tmp_path / "t").mkdir()
    tpe_path, _ = classifier_checkpoint(tmp_path / "t", "tpe")
    with pytest.raises(ValueError, match="with a 'tpe' embedding; frequencies exist only for 'complex-order'"):
        inspect_checkpoint(tpe_path, tmp_path / "o")
    save_checkpoint(tmp_path / "lm.pt", "language-model", {}, {})
    with pytest.raises(ValueError, match=r"holds a 'language-model' model, expected 'classifier'"):
        inspect_checkpoint(tmp_path / "lm.pt", tmp_path / "o")
    save_checkpoint(tmp_path / "novocab.pt", "classifier", {}, {"a": 1})
    with pytest.raises(ValueError) as err:
        inspect_checkpoint(tmp_path / "novocab.pt", tmp_path / "o")
    assert str(err.value) == (f"checkpoint {tmp_path / 'novocab.pt'} lacks its 'vocab' entry (`complexorder classify "
                              f"--checkpoint-dir` writes vocab, config, label_names and model_state); it is not a "
                              f"usable classifier checkpoint")
    # weights that do not fit the stored config, and a config without its settings: one-line errors
    ck = torch.load(path, weights_only=True)
    ck["model_state"] = {k: v[:1] if v.dim() else v for k, v in ck["model_state"].items()}
    torch.save(ck, tmp_path / "mismatch.pt")
    with pytest.raises(ValueError, match=r"mismatch.pt: its weights do not match its config \(size mismatch"):
        inspect_checkpoint(tmp_path / "mismatch.pt", tmp_path / "o")
    ck = torch.load(path, weights_only=True)
    del ck["config"]["settings"]
    torch.save(ck, tmp_path / "nosettings.pt")
    with pytest.raises(ValueError, match=r"nosettings.pt: its config has no 'settings' entry"):
        inspect_checkpoint(tmp_path / "nosettings.pt", tmp_path / "o")
    # a setting this version does not know, an unknown model name: one line naming the checkpoint
    for change, detail in ((lambda c: c["settings"].update(newopt=1), "unexpected keyword argument 'newopt'"),
                           (lambda c: c.update(model="gru"), "unknown model 'gru'")):
        ck = torch.load(path, weights_only=True)
        change(ck["config"])
        torch.save(ck, tmp_path / "odd.pt")
        with pytest.raises(ValueError, match=rf"^checkpoint {tmp_path / 'odd.pt'}: its config cannot build a classifier "
                                             rf"\(.*{detail}.*\); expected the config `complexorder classify` stores$"):
            inspect_checkpoint(tmp_path / "odd.pt", tmp_path / "o")


def ablation_record(grid: GridConfig, variant: Variant, seed: int, accuracy: float, parameters: int = 123,
                    command: str | None = None) -> dict:
    """A results-file record of one Table 4 unit, as the runner writes it (the fields the report reads)."""
    record = {"dataset": "SST2", "model": "transformer", "variant": variant.label, "split": f"seed-{seed}",
              "test_accuracy": accuracy, "parameters": parameters, "vocab_size": V,
              "config": unit_config(grid, Unit("SST2", "transformer", variant, f"seed-{seed}")), "finished_at": "t"}
    return record if command is None else {**record, "command": command}


def test_table4_rendering_with_deltas():
    grid = ablation_grid()
    records = [ablation_record(grid, variant, seed, 0.80 - 0.01 * i + 0.002 * seed)
               for i, variant in enumerate(grid.resolved_variants()[:3]) for seed in (1, 2)]
    text = render_table4(records)
    assert "| complex-order | r e^{i ω pos} | × | 0.00M |" in text
    assert "0.793 ± 0.001 | 2 | -0.010 | 0.785 | -0.028 |" in text
    assert "| vanilla Transformer (TPE) | WE + PE | - | — | — | 4.10M | not measured | 0 |" in text
    assert "Further rows" not in text
    # a variant that is not a paper row (positions counted from 1) gets its own table, out of the ordering checks
    extra = Variant("complex-order, positions from 1", "complex-order",
                                                  {"first_position": 1})
    # seed 7 has no complex-order pair
    records += [ablation_record(grid, extra, seed, acc, 2_500_000) for seed, acc in ((1, 0.90), (2, 0.92), (7, 0.50))]
    text = render_table4(records)
    # complex-order: 0.802 and 0.804 on seeds 1, 2; the extra row 0.90, 0.92, 0.50 (mean 0.773 ± 0.237):
    # Δ on the paired seeds 1, 2 = mean(0.098, 0.116) = +0.107
    # it extends complex-order itself (no options), so both deltas are the same
    assert ("| complex-order, positions from 1 | × | complex-order: first_position = 1 | — | 2.50M | 0.773 ± 0.237 | 3 | "
            "+0.107 (n=2) | complex-order | +0.107 (n=2) |") in text
    # a row adding first_position to a sharing row is compared with that row: the paper row with the options
    # {amplitude_sharing: word} is the largest proper subset of {amplitude_sharing: word, first_position: 1}
    word = next(v for v in grid.resolved_variants() if v.label == "word-sharing amplitude")
    both = Variant("word-sharing amplitude, positions from 1", "complex-order", {**word.options, "first_position": 1})
    records += [ablation_record(grid, v, seed, acc, 1_000_000)
                for v, accs in ((word, (0.70, 0.74)), (both, (0.75, 0.80))) for seed, acc in zip((1, 2), accs)]
    text = render_table4(records)
    # to complex-order (0.802, 0.804): mean(-0.052, -0.004) = -0.028; to word-sharing amplitude: mean(0.05, 0.06) = +0.055
    assert ("| word-sharing amplitude, positions from 1 | × | complex-order: amplitude_sharing = 'word', first_position = 1 "
            "| — | 1.00M | 0.775 ± 0.035 | 2 | -0.028 (n=2) | word-sharing amplitude | +0.055 (n=2) |") in text
    assert "complex-order best (paper: yes): yes" in text  # the extra row does not count as a paper row
    # paired tests: adding initial phases (row 2) is 0.792 / 0.794 against complex-order's 0.802 / 0.804
    # on seeds 1, 2: differences -0.010, -0.010; scipy's exact one-sided p with n = 2 is 1/4 one way, 1 the other
    assert "## Paired tests against complex-order" in text
    assert "no p can fall below 1/2^n (0.25 at n = 2)" in text
    assert "| adding initial phases | 2 | -0.010 | 0.25 | 1 |" in text
    # the extra row with an unpaired seed 7: paired on seeds 1, 2 only (+0.098, +0.116)
    assert "| complex-order, positions from 1 | 2 | +0.107 | 1 | 0.25 |" in text
    # a row that changes a model setting, not an embedding option ([transformer] attention_score = "real"):
    # it extends the row with the same embedding and options whose settings lack the change (adding initial
    # phases, not complex-order, which has fewer options), and the settings column names the change
    real_grid = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, attention_score="real"))
    phases = next(v for v in grid.resolved_variants() if v.label == "adding initial phases")
    real = Variant("adding initial phases, real attention score", "complex-order", dict(phases.options))
    records += [ablation_record(real_grid, real, seed, acc, 3_000_000) for seed, acc in ((1, 0.83), (2, 0.80))]
    text = render_table4(records)
    # adding initial phases: 0.792, 0.794; the row 0.83, 0.80: Δ = mean(0.038, 0.006) = +0.022;
    # to complex-order (0.802, 0.804): mean(0.028, -0.004) = +0.012
    assert ("| adding initial phases, real attention score | × | complex-order: initial_phase = True | "
            "attention_score = 'real' | 3.00M | 0.815 ± 0.021 | 2 | +0.012 (n=2) | adding initial phases | "
            "+0.022 (n=2) |") in text


def test_table4_rows_on_other_seeds_are_compared_paired():
    """A row run on fewer seeds than complex-order is compared with it on the seeds both ran: here the
    difference of the means says the row is above complex-order, the paired difference that it is 2.5 points below."""
    grid = ablation_grid()
    variants = {v.label: v for v in grid.resolved_variants()}
    records = []
    for label, accs in (("complex-order", (0.80, 0.80, 0.70)), ("dimension-sharing period", (0.77, 0.78)),
                        ("complex-vanilla", (0.81, 0.79, 0.72))):
        for seed, acc in enumerate(accs, 1):
            config = unit_config(grid, Unit("SST2", "transformer", variants[label], f"seed-{seed}"))
            records.append({"dataset": "SST2", "model": "transformer", "variant": label, "split": f"seed-{seed}",
                            "test_accuracy": acc, "parameters": 1, "vocab_size": V, "config": config, "finished_at": "t"})
    text = render_table4(records)
    # means 0.7667 and 0.775 (unpaired +0.008); paired on seeds 1, 2: (-0.03 - 0.02) / 2 = -0.025
    assert "| 0.775 ± 0.007 | 2 | -0.025 (n=2) | 0.797 | -0.016 |" in text
    # complex-vanilla on the same three seeds: the difference of the means, no count: (0.01 - 0.01 + 0.02) / 3
    assert "| 0.773 ± 0.047 | 3 | +0.007 | 0.764 | -0.049 |" in text
    assert "- complex-order best (paper: yes): NO — above it: complex-vanilla (+0.7 points)." in text
    assert ("- sharing schemes within 2 points of complex-order (paper: all within 2.1): 0/1; more than 2 points "
            "below: dimension-sharing period (-2.5).") in text
    assert "- complex-vanilla clearly below complex-order (paper: 4.9 / 7.0 points below): NO (+0.7 points)." in text
    assert "compared on the seeds both were run on (2 seeds)" in text


def test_table4_paired_tests_by_hand():
    from scipy.stats import wilcoxon

    grid = ablation_grid()
    variants = {v.label: v for v in grid.resolved_variants()}
    top = [0.78, 0.76, 0.77, 0.75, 0.79, 0.74]
    tpe = [0.75, 0.77, 0.74, 0.73, 0.76, 0.74]  # one tie (seed 6) is dropped
    records = []
    for label, accs in (("complex-order", top), ("vanilla Transformer (TPE)", tpe)):
        for seed, acc in enumerate(accs, 1):
            config = unit_config(grid, Unit("SST2", "transformer", variants[label], f"seed-{seed}"))
            records.append({"dataset": "SST2", "model": "transformer", "variant": label, "split": f"seed-{seed}",
                            "test_accuracy": acc, "parameters": 1, "vocab_size": V, "config": config, "finished_at": "t"})
    text = render_table4(records)
    d = [a - b for a, b in zip(top, tpe)]
    p = wilcoxon(d, alternative="greater", zero_method="wilcox").pvalue
    q = wilcoxon(d, alternative="less", zero_method="wilcox").pvalue
    # differences 0.03, -0.01, 0.03, 0.02, 0.03, 0 -> five non-zero, ranks 4, 1, 4, 2, 4: W+ = 14 of 15, p = 2/32
    assert abs(p - 2 / 32) < 1e-12
    assert f"| vanilla Transformer (TPE) | 6 | {-sum(d) / 6:+.3f} | {p:.3g} | {q:.3g} |" in text
    assert "(0.0156 at n = 6)" in text
    # without a shared seed, or without complex-order, no section
    assert "Paired tests" not in render_table4([r for r in records if r["variant"] != "complex-order"])


def test_ablate_report_renders_also_results(tmp_path, capsys):
    """`ablate --report-only --also-results`: an explore config's rows rendered beside another results file's
    paper rows, paired by seed; a missing file is a one-line error naming it."""
    import json

    from complexorder.cli import main

    grid = ablation_grid()
    real_grid = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, attention_score="real"))
    base = next(v for v in grid.resolved_variants() if v.label == "complex-order")
    real = Variant("complex-order, real attention score", "complex-order")

    def record(g, v, seed, acc):
        return ablation_record(g, v, seed, acc, 1_000_000, command=f"complexorder ablate --seeds {seed} ({v.label})")

    paper = tmp_path / "paper.jsonl"
    paper.write_text("".join(json.dumps(record(grid, base, s, a)) + "\n" for s, a in ((1, 0.70), (2, 0.72))))
    explore = tmp_path / "explore.jsonl"
    explore.write_text("".join(json.dumps(record(real_grid, real, s, a)) + "\n" for s, a in ((1, 0.75), (2, 0.73))))
    out = tmp_path / "t.md"
    assert main(["ablate", "--report-only", "--results", str(explore), "--also-results", str(paper),
                 "--out", str(out)]) == 0
    text = out.read_text()
    assert "| complex-order | r e^{i ω pos} | × |" in text and "0.710 ± 0.014 | 2 |" in text
    # +0.05 and +0.01 on seeds 1, 2: +0.030 to complex-order, which it extends by the setting alone
    assert ("| complex-order, real attention score | × | complex-order: — | attention_score = 'real' | 1.00M | "
            "0.740 ± 0.014 | 2 | +0.030 (n=2) | complex-order | +0.030 (n=2) |") in text
    assert "complexorder ablate --seeds 2 (complex-order)" in text  # both files' commands are listed
    # stop 84: without a complex-order row both columns that compare with it say so; they read "—", which is what
    # "the same settings" prints, and "— (no common seed)"
    assert main(["ablate", "--report-only", "--results", str(explore), "--out", str(tmp_path / "alone.md")]) == 0
    assert ("| complex-order, real attention score | × | complex-order: — | not compared (no complex-order row) | "
            "1.00M | 0.740 ± 0.014 | 2 | — (no complex-order row) | — | — |") in (tmp_path / "alone.md").read_text()
    assert "re-run with other settings" not in capsys.readouterr().err
    # stop 73 (review): seed 1 of the paper row re-run with other settings into the same file: noted on the command line
    rerun = record(real_grid, base, 1, 0.74)
    rerun["finished_at"] = "u"  # after the others ("t")
    with open(paper, "a") as f:
        f.write(json.dumps(rerun) + "\n")
    assert main(["ablate", "--report-only", "--results", str(explore), "--also-results", str(paper),
                 "--out", str(tmp_path / "rerun.md")]) == 0
    assert (f"complexorder: note: some units of {tmp_path / 'rerun.md'} also have earlier records trained with other "
            "settings, which the table leaves out (listed under the table)") in capsys.readouterr().err
    assert "**Units re-run with other settings.**" in (tmp_path / "rerun.md").read_text()
    paper.write_text("".join(json.dumps(record(grid, base, s, a)) + "\n" for s, a in ((1, 0.70), (2, 0.72))))
    # --notes appends a hand-written section verbatim; a missing notes file is refused before anything is written
    (tmp_path / "notes.md").write_text("## Reading (hand-written)\n\nwords\n")
    assert main(["ablate", "--report-only", "--results", str(explore), "--also-results", str(paper),
                 "--out", str(out), "--notes", str(tmp_path / "notes.md")]) == 0
    assert out.read_text() == text + "\n## Reading (hand-written)\n\nwords\n"
    assert main(["ablate", "--report-only", "--results", str(explore), "--out", str(tmp_path / "n.md"),
                 "--notes", str(tmp_path / "nosuch.md")]) == 2
    assert (f"--notes: {tmp_path / 'nosuch.md'} does not exist (expected a Markdown file to append)"
            in capsys.readouterr().err) and not (tmp_path / "n.md").exists()
    assert main(["ablate", "--report-only", "--results", str(explore), "--also-results", str(tmp_path / "nope.jsonl"),
                 "--out", str(out)]) == 2
    assert f"results file {tmp_path / 'nope.jsonl'} does not exist" in capsys.readouterr().err
    # without --out the table goes beside the results file, named after it (explore.jsonl -> explore.md), so that
    # rendering an explore file kept beside the committed table4.md never writes over it (stop 93: it did)
    (tmp_path / "table4.md").write_text("the committed table\n")
    assert main(["ablate", "--report-only", "--results", str(explore)]) == 0
    assert (tmp_path / "explore.md").read_text().startswith("# Table 4")
    assert (tmp_path / "table4.md").read_text() == "the committed table\n"
    # a grid's default results.jsonl still gives table4.md
    generic = tmp_path / "grid" / "results.jsonl"
    generic.parent.mkdir()
    generic.write_text(explore.read_text())
    assert main(["ablate", "--report-only", "--results", str(generic)]) == 0
    assert (tmp_path / "grid" / "table4.md").read_text().startswith("# Table 4")
    # records of another grid are refused, not rendered as a contradictory Table 4
    cr = tmp_path / "cr.jsonl"
    cr.write_text(json.dumps({**json.loads(paper.read_text().splitlines()[0]), "dataset": "CR", "split": "fold-1"}) + "\n")
    assert main(["ablate", "--report-only", "--results", str(cr), "--out", str(tmp_path / "x.md")]) == 2
    assert (f"{cr} hold(s) records that are not Table 4's (the Transformer on SST-2): CR transformer; render "
            "classification results with complexorder report") in capsys.readouterr().err
    assert not (tmp_path / "x.md").exists()


def test_ablate_and_inspect_outputs_that_cannot_be_written_are_named_before_any_work(tmp_path, capsys):
    """`ablate --out DIR` was an IsADirectoryError traceback after the whole grid had trained; `inspect --out-dir`
    under a file did not name the option."""
    from complexorder.cli import main

    assert main(["ablate", "--report-only", "--results", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: --out: {tmp_path} is a directory, expected a file path")
    path, _ = classifier_checkpoint(tmp_path)
    (tmp_path / "file").write_text("")
    assert main(["inspect", str(path), "--out-dir", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --out-dir: cannot create directory "
                                               f"{tmp_path / 'file'} for its files: {tmp_path / 'file'} is a file")
    # --dims without --word was silently ignored
    assert main(["inspect", str(path), "--dims", "0,1", "--out-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --dims chooses the dimensions of the wave plot of "
                                               "--word; give --word too")
    assert not (tmp_path / "out").exists()


def test_ablate_refuses_a_grid_that_is_not_table4_before_any_training(tmp_path, capsys):
    """write_table4 refuses other data sets or models, but only after the whole grid had trained."""
    from complexorder.cli import main

    assert main(["ablate", "--datasets", "MR,SST2", "--data-dir", str(tmp_path / "absent"),
                 "--results", str(tmp_path / "r.jsonl")]) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: ablate runs Table 4, the Transformer on SST-2 (datasets SST2 or SST2-sent, model "
        "transformer); --datasets asks for MR — run other grids with complexorder classify")
    assert not (tmp_path / "r.jsonl").exists()
    # --also-results that do not exist, and a --results file holding other cells, are refused before training too
    # (the data directory is absent: reaching the grid would be another error)
    assert main(["ablate", "--data-dir", str(tmp_path / "absent"), "--results", str(tmp_path / "r.jsonl"),
                 "--also-results", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "t.md")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: results file {tmp_path / 'nope.jsonl'} does not exist; run `complexorder classify` "
        f"(or `ablate`) first")
    grid = ablation_grid()
    record = ablation_record(grid, next(iter(grid.resolved_variants())), 1, 0.7, 1_000_000, command="c")
    (tmp_path / "mixed.jsonl").write_text(json.dumps({**record, "dataset": "MR", "split": "fold-0"}) + "\n")
    assert main(["ablate", "--data-dir", str(tmp_path / "absent"), "--results", str(tmp_path / "mixed.jsonl"),
                 "--out", str(tmp_path / "t.md")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: {tmp_path / 'mixed.jsonl'} hold(s) records that are not Table 4's (the Transformer on "
        f"SST-2): MR transformer; render classification results with complexorder report")
    assert not (tmp_path / "t.md").exists()


@pytest.mark.parametrize("label", ["complex-order, shared W", "adding initial phases, shared W"])
def test_parameter_count_of_the_shared_w_rows_the_paper_leaves_out(label):
    """Issue 6 asks for every row with and without shared W^{Q/K/V}; the paper's table has these two without it
    only. They live in benchmarks/classification/explore/table4_shared_w.toml, which extends table4."""
    from pathlib import Path

    from complexorder.config import config_from_dict, read_extended_toml

    explore = config_from_dict(read_extended_toml(
        Path(__file__).parents[1] / "benchmarks/classification/explore/table4_shared_w.toml", "ablation"), GridConfig)
    small = dataclasses.replace(explore.transformer, embedding_dim=D, dim_feedforward=FF, nhead=2)
    grid = dataclasses.replace(explore, transformer=small)
    assert [v.label for v in grid.resolved_variants()] == ["complex-order, shared W", "adding initial phases, shared W"]
    variant = next(v for v in grid.resolved_variants() if v.label == label)
    assert variant.share_weights
    model = build_model_from_config(unit_config(grid, Unit("SST2", "transformer", variant, "seed-1")), V, 2, 64)
    assert sum(p.numel() for p in model.parameters()) == expected_count(label)
    # the rest of the grid is table4's, so the rows pair by seed with it
    base = ablation_grid()
    assert (grid.datasets, grid.models, grid.transformer) == (base.datasets, base.models, base.transformer)


def test_every_classification_explore_config_loads_and_plans():
    from pathlib import Path

    from complexorder.config import config_from_dict, read_extended_toml
    from complexorder.experiments.classification import plan_units

    files = sorted((Path(__file__).parents[1] / "benchmarks/classification/explore").glob("*.toml"))
    assert len(files) > 20
    for path in files:  # a Table 4 explore config extends the ablation grid, the others the classification grid
        task = "ablation" if 'extends = "table4"' in path.read_text() else "classification"
        assert plan_units(config_from_dict(read_extended_toml(path, task), GridConfig, where=str(path))), path


def test_table4_names_rows_without_a_common_seed_and_rows_mixing_settings():
    grid = ablation_grid()
    top, phases = grid.resolved_variants()[:2]
    records = [ablation_record(grid, top, seed, 0.80 + 0.002 * seed) for seed in (1, 2)]
    # "adding initial phases" on seeds 3, 4 only: Δ is the difference of the means, marked as unpaired
    records += [ablation_record(grid, phases, seed, 0.78 + 0.002 * seed) for seed in (3, 4)]
    text = render_table4(records)
    # complex-order 0.802 / 0.804 (mean 0.803), the row 0.786 / 0.788 (mean 0.787): -0.016
    assert "| 0.787 ± 0.001 | 2 | -0.016 (no common seed) | 0.785 | -0.028 |" in text
    assert "Rows mixing settings" not in text
    # a unit of the first row re-trained with other settings (e.g. another results file): the rows say so
    other = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, epochs=grid.transformer.epochs + 1))
    records.append(ablation_record(other, top, 3, 0.81))
    text = render_table4(records)
    assert "**Rows mixing settings.**" in text
    assert re.search(r"^- SST2 transformer complex-order: 2 different settings \(\w+, \w+\)$", text, re.M), text
    assert "Units re-run with other settings" not in text  # different seeds: nothing is hidden
    # stop 73: seed 1 re-trained with other settings: the latest record is shown, the earlier one is listed
    later = ablation_record(other, top, 1, 0.83)
    later["finished_at"] = "u"  # after the others ("t")
    text = render_table4(records + [later])
    assert "**Units re-run with other settings.**" in text
    assert re.search(r"^- SST2 transformer complex-order seed-1: shows the latest record \(settings \w{12}, test "
                     r"0\.8300\); 1 earlier record\(s\) with other settings left out \(settings \w{12}, test 0\.8020\)$",
                     text, re.M), text


def test_table4_describes_the_setting_its_records_ran():
    """Stop 78 (an audit): the opening sentence said d = 256, inner 512, 8 heads, one layer and the 6,920 training
    sentences whatever the records had run (seven committed tables of 2-layer models said 1-layer)."""
    grid = ablation_grid()
    variants = grid.resolved_variants()[:2]
    records = [{**ablation_record(grid, v, 1, 0.8), "dataset": "SST2-sent", "train_size": 60, "dev_size": 20,
                "test_size": 30} for v in variants]
    text = render_table4(records)
    assert (f"Accuracy on the SST-2 test sentences (30) of the 1-layer Transformer classifier (d = {D}, inner {FF}, 2 "
            f"heads, no pretrained vectors) trained on the 60 SST-2 training sentences only (NOT the 67k phrases of the "
            f"paper: a CPU budget choice, see the config), with early stopping on dev (20);") in text
    assert f"embedding of d = {D} complex dimensions holds 2 x V x {D} parameters" in text  # it said 256 too
    two = dataclasses.replace(grid, transformer=dataclasses.replace(grid.transformer, num_layers=2))
    records.append({**ablation_record(two, variants[0], 2, 0.8), "dataset": "SST2-sent", "train_size": 6920})
    text = render_table4(records)  # a record before stop 78 (no dev/test sizes) of the real data: the real files' sizes
    assert (f"SST-2 test sentences (1821 / 30) of the Transformer classifier (1 / 2 layers, d = {D}, inner {FF}, 2 "
            f"heads, no pretrained vectors) trained on the 60 / 6,920 SST-2 training sentences only") in text
    assert "with early stopping on dev (20 / 872);" in text


def test_inspect_suggests_the_lower_cased_word_first_and_report_names_a_device(tmp_path, capsys):
    """Stop 78 (an audit): `--word Good` suggested 'mood, good, moody' (difflib's order), the word the user meant
    second; `report --results /dev/null` said the file does not exist."""
    from complexorder.cli import main

    path, _ = classifier_checkpoint(tmp_path, vocab=["<pad>", "<unk>", "mood", "good", "moody", "the"])
    with pytest.raises(ValueError, match=r"^word 'Good' is not in the checkpoint's vocabulary \(4 words, "
                                         r"lower-cased\); near matches: good, mood, moody$"):
        inspect_checkpoint(path, tmp_path / "o", word="Good")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert main(["report", "--results", str(pipe), "--out", str(tmp_path / "t.md")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: results file {pipe} is not a regular file (a "
                                               "device or pipe?); pass the JSON-lines file that `complexorder "
                                               "classify` or `ablate` wrote")


def test_inspect_names_a_checkpoint_whose_vocabulary_is_not_strings(tmp_path):
    """Stop 78 (an audit): integers in `vocab` failed as `sequence item 0: expected str instance, int found`."""
    path, _ = classifier_checkpoint(tmp_path)
    for key, value in (("vocab", [0, 1, 2, 3, 4, 5]), ("label_names", "neg,pos")):
        ck = torch.load(path, weights_only=True)
        ck[key] = value
        torch.save(ck, tmp_path / "odd.pt")
        with pytest.raises(ValueError, match=rf"^checkpoint {re.escape(str(tmp_path / 'odd.pt'))}: its '{key}' entry "
                                             r"is not a list of strings; expected the one `complexorder classify` "
                                             r"stores$"):
            inspect_checkpoint(tmp_path / "odd.pt", tmp_path / "o", word="film")
