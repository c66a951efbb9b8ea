"""Bad input to `report`, `ablate --report-only` and `vectors train`, found by an audit: each is a one-line error
naming the file and line (or the option) and the expected form, or a reported skip — never a traceback, a
message naming nothing, or a record dropped silently."""

import json
import os
import re

import pytest

from complexorder.cli import main

#: A Table 4 record's config (the shape of benchmarks/results/table4.jsonl, a small vocabulary).
CONFIG = {"dataset": "SST2-sent", "embedding": "complex-order", "embedding_options": {}, "model": "transformer",
          "seed": 1, "settings": {"batch_size": 64, "dim_feedforward": 512, "dropout": 0.1, "embedding_dim": 256,
                                  "epochs": 8, "filter_sizes": [3, 4, 5], "filters": 128, "hidden": 128, "lr": 0.001,
                                  "nhead": 8, "num_layers": 1, "patience": 2, "pretrained": False,
                                  "share_weights": False, "sparse_embeddings": True, "weight_decay": 0.0},
          "share_weights": False, "split": "seed-1", "vectors": None}


def record(dataset="MR", model="cnn", variant="none", split="fold-0", acc=0.75, **extra):
    """A classification result as `classify` writes it (the shape of benchmarks/results/table2_supplement.jsonl)."""
    return {"dataset": dataset, "model": model, "variant": variant, "split": split, "test_accuracy": acc,
            "dev_accuracy": 0.74, "seconds_per_epoch": 2.5, "finished_at": "2026-11-23T10:31:11", "command": "c",
            "torch_threads": 1, "config": {"dataset": dataset, "split": split, "seed": 1, "embedding": variant},
            **extra}


def table4_record(seed=1, variant="complex-order", acc=0.8):
    return {**record("SST2-sent", "transformer", variant, f"seed-{seed}", acc), "config": {**CONFIG, "seed": seed},
            "parameters": 180_000, "vocab_size": 100}


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def report(tmp_path, results, figure=""):
    return main(["report", "--results", str(results), "--out", str(tmp_path / "t.md"), "--figure", figure])


@pytest.mark.parametrize("change, message", [
    ({"split": 5}, "'split' is 5; expected a string \"fold-K\" or \"seed-K\""),
    ({"test_accuracy": "abc"}, "'test_accuracy' is \"abc\"; expected a number in [0, 1]"),
    ({"test_accuracy": None}, "'test_accuracy' is null; expected a number in [0, 1]"),
    ({"dataset": "FOO"}, "'dataset' is \"FOO\"; expected one of MR, SUBJ, CR, MPQA, SST2, TREC, SST2-sent"),
    ({"model": "rnn"}, "'model' is \"rnn\"; expected one of fasttext, cnn, lstm, transformer"),
    # stop 74: a fold beyond the ten, or a seed on a cross-validated set, entered the table as a further pair
    ({"split": "fold-99"}, "'split' is \"fold-99\"; MR is cross-validated: expected \"fold-K\" with K in 0..9"),
    ({"split": "seed-1"}, "'split' is \"seed-1\"; MR is cross-validated: expected \"fold-K\" with K in 0..9"),
    ({"dataset": "TREC", "split": "fold-1"}, "'split' is \"fold-1\"; TREC has fixed splits: expected \"seed-S\""),
])
def test_report_names_the_file_line_and_field_of_a_malformed_record(tmp_path, capsys, change, message):
    """split 5 was `AttributeError: 'int' object has no attribute 'startswith'` (a traceback); accuracy "abc" or
    null a float() error naming nothing; dataset FOO a matplotlib error (`Number of columns must be a positive
    integer, not 0`); and with --figure '' an unknown data set or model was dropped from the table silently."""
    results = write(tmp_path / "r.jsonl", [record(split="fold-0"), {**record(split="fold-1"), **change}])
    for figure in (str(tmp_path / "f.png"), ""):
        assert report(tmp_path, results, figure) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: results file {results}:2: {message}"
        assert not (tmp_path / "t.md").exists() and not (tmp_path / "f.png").exists()


def test_report_names_a_record_without_seconds_per_epoch_only_when_the_figure_needs_it(tmp_path, capsys):
    """Was `complexorder: error: seconds_per_epoch` (a bare KeyError)."""
    bare = record(split="fold-1")
    del bare["seconds_per_epoch"]
    results = write(tmp_path / "r.jsonl", [record(), bare])
    assert report(tmp_path, results, str(tmp_path / "f.png")) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: results file {results}:2: no 'seconds_per_epoch' (a number >= 0), which the figure "
        f"of seconds per epoch needs (pass --figure '' to render the table alone)")
    assert report(tmp_path, results) == 0 and (tmp_path / "t.md").is_file()


def test_the_line_number_counts_blank_and_skipped_lines_and_the_api_names_the_record(tmp_path, capsys):
    from complexorder.experiments.report import render_table2

    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(record()) + "\n\n" + json.dumps(record(split="fold-1", acc=2)) + "\n")
    assert report(tmp_path, results) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: results file {results}:3: 'test_accuracy' is "
                                               f"2; expected a number in [0, 1]")
    with pytest.raises(ValueError, match=r"^results: record 2: 'split' is 5; expected a string \"fold-K\" or "):
        render_table2([record(), record(split=5)])


def test_a_file_that_is_not_json_lines_is_one_error_not_a_warning_per_line(tmp_path, capsys):
    """`report --results vectors.txt` printed "skipping a malformed (probably interrupted) line" once per line."""
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("4 3\n" + "".join(f"w{i} 0.1 0.2 0.3\n" for i in range(4)))
    assert report(tmp_path, vectors) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == (
        f"complexorder: error: results file {vectors}: 5 of its 5 lines are not JSON; it is not a results file — "
        f"pass the JSON-lines file that `complexorder classify` or `ablate` wrote")
    # a line cut short by an interrupted write stays a reported skip, and so do a few bad lines among many good
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(record()) + "\n" + json.dumps(record(split="fold-1")) + "\n"
                       + json.dumps(record(split="fold-2"))[:40])
    assert report(tmp_path, results) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{results}:3: skipping a malformed (probably interrupted) line"
    results.write_text("".join(json.dumps(record(split=f"fold-{i}")) + "\n" + ("{oops\n" if i < 5 else "")
                               for i in range(10)))
    assert report(tmp_path, results) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{results}: skipping 5 malformed lines of 15 (lines 2, 4, 6, …): not JSON, or cut short by an interrupted "
        f"write")


@pytest.mark.parametrize("change, message", [
    ({"test_accuracy": "abc"}, "'test_accuracy' is \"abc\"; expected a number in [0, 1]"),
    ({"split": 3}, "'split' is 3; expected a string \"fold-K\" or \"seed-K\""),
    ({"config": None}, "no 'config' (an object of the unit's settings), which Table 4 needs to rebuild the model and "
                       "count its parameters"),
    ({"parameters": None}, "no 'parameters' (a positive integer), which Table 4 needs (the row's parameter count)"),
    ({"config": {**CONFIG, "settings": None}}, "'config' entry 'settings' is null; expected an object"),
])
def test_ablate_report_only_names_the_file_line_and_field_of_a_malformed_record(tmp_path, capsys, change, message):
    """accuracy "abc" was a numpy dtype error; split 3 `'<' not supported between 'int' and 'str'` (with other
    seeds); no config or parameters a bare `complexorder: error: config` / `parameters`."""
    bad = {**table4_record(2), **change}
    for key in [k for k, v in change.items() if v is None and k in ("config", "parameters")]:
        del bad[key]
    results = write(tmp_path / "r.jsonl", [table4_record(1), bad])
    assert main(["ablate", "--report-only", "--results", str(results), "--out", str(tmp_path / "t4.md")]) == 2
    assert capsys.readouterr().err.strip() == f"complexorder: error: results file {results}:2: {message}"
    assert not (tmp_path / "t4.md").exists()
    write(results, [table4_record(1), table4_record(2)])  # the same records, well formed, render
    assert main(["ablate", "--report-only", "--results", str(results), "--out", str(tmp_path / "t4.md")]) == 0
    assert (tmp_path / "t4.md").read_text().startswith("# Table 4")


@pytest.fixture
def corpus_reads(monkeypatch):
    """`vectors train` reads a tiny corpus (a, b, c) instead of the data sets; the list records each read."""
    import complexorder.data.vectors as vectors

    reads = []

    def sentences(data_dir, include_multi30k=True):
        reads.append(data_dir)
        return [["a", "b", "a"], ["b", "c"]]

    monkeypatch.setattr(vectors, "unlabeled_sentences", sentences)
    return reads


@pytest.mark.parametrize("option, value, message", [
    ("--seed", "-1", "--seed must be an integer in [0, 4294967295] (gensim's seed range), got -1"),
    ("--seed", str(2**32), "--seed must be an integer in [0, 4294967295] (gensim's seed range), got 4294967296"),
    ("--workers", "0", "--workers must be a positive integer (gensim threads), got 0"),
    ("--workers", "100000", f"--workers: at most 1024 gensim threads, got 100000 (this machine has {os.cpu_count()} "
                            "cores)"),  # stop 75: gensim's traceback "RuntimeError: can't start new thread"
])
def test_vectors_train_checks_seed_and_workers_before_reading_the_corpus(tmp_path, capsys, corpus_reads, option,
                                                                         value, message):
    """--seed -1 read the whole corpus and then printed gensim's `Seed must be between 0 and 2**32 - 1`; --workers 0
    was found after the corpus was read, its message without the `--`."""
    assert main(["vectors", "train", "--data-dir", str(tmp_path), "--out", str(tmp_path / "v.txt"),
                 option, value]) == 2
    assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    assert corpus_reads == [] and not (tmp_path / "v.txt").exists()


def test_vectors_train_names_dim_when_the_vectors_do_not_fit_in_memory(tmp_path, capsys, corpus_reads, monkeypatch):
    """Stop 75: --dim 100000000 ended in NumPy's `Unable to allocate 758. GiB for an array with shape (2036,
    100000000) ...`, naming no option. (gensim is replaced by its failure: a real allocation that size may be
    granted by an overcommitting kernel and the process killed later.)"""
    import gensim.models

    def word2vec(**kwargs):
        raise MemoryError(f"Unable to allocate 758. GiB for an array with shape (3, {kwargs['vector_size']}) and data "
                          "type float32")

    monkeypatch.setattr(gensim.models, "Word2Vec", word2vec)
    assert main(["vectors", "train", "--data-dir", str(tmp_path), "--out", str(tmp_path / "v.txt"),
                 "--dim", "100000000"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --dim 100000000 (3 words): the model does not fit "
                                               "in memory (one tensor of 758. GiB could not be allocated); lower --dim")
    assert not (tmp_path / "v.txt").exists()


def test_vectors_train_keeps_an_existing_out_file_unless_forced(tmp_path, capsys, corpus_reads):
    """A trial run (`vectors train --epochs 1`, default --out) replaced vectors/sg300.txt without a word, and every
    classification unit recorded with the old file's digest then ran again."""
    out = tmp_path / "v.txt"
    argv = ["vectors", "train", "--data-dir", str(tmp_path), "--out", str(out), "--dim", "4", "--epochs", "1"]
    assert main(argv) == 0
    first = out.read_bytes()
    digest = json.loads((tmp_path / "v.txt.json").read_text())["sha256"]
    capsys.readouterr()
    assert main(argv + ["--seed", "2"]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --out {out} exists (sha256 {digest[:12]}…); pass "
                                               "--force to replace it, or give another --out")
    assert out.read_bytes() == first and len(corpus_reads) == 1  # refused before the corpus is read
    assert main(argv + ["--seed", "2", "--force"]) == 0
    assert out.read_bytes() != first


def test_vectors_train_names_min_count_that_leaves_no_word(tmp_path, capsys, corpus_reads):
    assert main(["vectors", "train", "--data-dir", str(tmp_path), "--out", str(tmp_path / "v.txt"),
                 "--min-count", "100000"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: --min-count=100000 leaves no word: the most "
                                               "frequent word occurs 2 time(s)")
    assert not (tmp_path / "v.txt").exists()


def test_a_truncated_word2vec_text_file_names_the_line_and_its_number_of_values(tmp_path):
    """Was `... could not broadcast input array from shape (124,) into shape (300,)`, naming no line."""
    from complexorder.data.vectors import load_word_vectors

    rows = [f"w{i} " + " ".join(f"0.{(i * 300 + j) % 997:03d}" for j in range(300)) for i in range(4)]
    cut = tmp_path / "cut.txt"
    cut.write_text("4 300\n" + "\n".join(rows[:3]) + "\n" + " ".join(rows[3].split(" ")[:125]))
    with pytest.raises(ValueError, match=rf"^vectors file {cut} is not valid word2vec-text vectors: line 5 \(word "
                                         r"'w3'\) has 124 values where 300 were expected \(the header's dimension; "
                                         r"truncated\?\)$"):
        load_word_vectors(cut)
    glove = tmp_path / "glove.txt"
    glove.write_text("\n".join(rows[:3]) + "\n" + " ".join(rows[3].split(" ")[:125]))
    with pytest.raises(ValueError, match=r"is not valid glove vectors: line 4 \(word 'w3'\) has 124 values where "
                                         r"300 were expected \(the first row's dimension; truncated\?\)$"):
        load_word_vectors(glove, "glove")
    short = tmp_path / "short.txt"
    short.write_text("6 300\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"is not valid word2vec-text vectors: it has 4 vector rows where its "
                                         r"header declares 6 \(truncated\?\)$"):
        load_word_vectors(short)
    whole = tmp_path / "whole.txt"
    whole.write_text("4 300\n" + "\n".join(rows) + "\n")
    assert load_word_vectors(whole).vector_size == 300


def test_repeated_and_non_utf8_words_and_a_non_number_are_named(tmp_path, capsys):
    """Stop 73: a word given twice lost its second vector, and a word with bytes that are not UTF-8 was read with
    U+FFFD (so it matched nothing), both without a word; a non-number said gensim's "could not convert string to
    float: 'abc'", naming no line."""
    import numpy as np
    from gensim.models import KeyedVectors

    from complexorder.data.vectors import load_word_vectors

    rows = [f"w{i} " + " ".join(f"0.{(i * 8 + j) % 97:02d}" for j in range(8)) for i in range(4)]
    twice = tmp_path / "twice.txt"
    twice.write_text("5 8\n" + "\n".join(rows) + "\nw1 " + " ".join(["9.0"] * 8) + "\n")
    kv = load_word_vectors(twice)
    assert kv.load_notes == ["1 word(s) appear more than once, e.g. 'w1' on lines 3 and 6; the first vector of each is "
                             "used (as gensim does), the later ones are ignored"]
    assert kv["w1"][0] == pytest.approx(0.08, abs=1e-7) and len(kv.key_to_index) == 4  # gensim's choice, now said
    glove = tmp_path / "glove.txt"
    glove.write_text("\n".join(rows) + "\nw2 " + " ".join(["9.0"] * 8) + "\n")
    assert load_word_vectors(glove, "glove").load_notes[0].startswith("1 word(s) appear more than once, e.g. 'w2' on "
                                                                      "lines 3 and 5")
    binary = tmp_path / "twice.bin"
    KeyedVectors.load_word2vec_format(str(twice)).save_word2vec_format(str(binary), binary=True)
    raw = binary.read_bytes().split(b"\n", 1)  # repeat the first row (word w0) after the last: w0 given twice
    row = raw[1][: len(raw[1]) // 4]
    binary.write_bytes(b"5 8\n" + raw[1] + row)
    assert load_word_vectors(binary).load_notes == ["1 word(s) appear more than once; the first vector of each is used "
                                                    "(as gensim does), the later ones are ignored"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes(("4 8\n" + "\n".join(rows[:3]) + "\n").encode() + b"caf\xe9 " + rows[3].split(" ", 1)[1].encode())
    # (the byte 0xE9 within the first 4 kB made the format sniffer take the file for word2vec binary)
    assert load_word_vectors(latin).load_notes == ["1 word(s) are not UTF-8, e.g. line 5 ('caf\\ufffd'); they are read "
                                                   "with U+FFFD in place of the bad bytes and match no word of the data"]
    word = tmp_path / "word.txt"
    word.write_text("4 8\n" + "\n".join(rows[:2]) + "\nw2 0.1 abc" + " 0.1" * 6 + "\n" + rows[3] + "\n")
    with pytest.raises(ValueError, match=rf"^vectors file {word} is not valid word2vec-text vectors: line 4 \(word "
                                         r"'w2'\) holds 'abc', which is not a number$"):
        load_word_vectors(word)
    clean = tmp_path / "clean.txt"
    clean.write_text("4 8\n" + "\n".join(rows) + "\n")
    assert load_word_vectors(clean).load_notes == [] and np.isfinite(load_word_vectors(clean).vectors).all()


def test_a_glove_word_holding_a_no_break_space_is_one_word_as_gensim_reads_it(tmp_path):
    """Stop 73 (review): the row check split on any white space, so a word holding U+00A0 (gensim splits on " ")
    was refused as a row with one value too many."""
    from complexorder.data.vectors import load_word_vectors

    glove = tmp_path / "glove.txt"
    glove.write_text("the 0.1 0.2 0.3\nat\u00a0name 0.4 0.5 0.6\nof 0.7 0.8 0.9\n", encoding="utf-8")
    kv = load_word_vectors(glove, "glove")
    assert "at\u00a0name" in kv.key_to_index and kv.load_notes == []


def test_vectors_train_never_replaces_a_device_a_pipe_or_a_file_that_is_not_word_vectors(tmp_path, capsys,
                                                                                         corpus_reads):
    """Stop 78 (an audit): `--out /dev/full --force` wrote the vectors beside it and renamed them over the device
    (as root, `--out /dev/null` would have removed /dev/null), and `--force` replaced a results file."""
    from complexorder.data.vectors import train_word2vec

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    results = tmp_path / "results.jsonl"
    results.write_text('{"dataset": "CR", "accuracy": 0.8}\n')
    base = ["vectors", "train", "--data-dir", str(tmp_path), "--dim", "4", "--epochs", "1"]
    for force in ([], ["--force"]):
        assert main(base + ["--out", str(pipe)] + force) == 2
        assert capsys.readouterr().err.strip() == (f"complexorder: error: --out {pipe} is not a regular file; word "
                                                   "vectors (and a .json provenance record beside them) go to a file")
    assert main(base + ["--out", str(results), "--force"]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --out {results} exists and is not a word-vectors "
                                               "file (its first line is neither a '<count> <dim>' header nor a GloVe "
                                               "row); only word vectors are replaced: give another path")
    assert corpus_reads == [] and pipe.is_fifo() and results.read_text() == '{"dataset": "CR", "accuracy": 0.8}\n'
    with pytest.raises(ValueError, match=f"^out {re.escape(str(pipe))} is not a regular file"):
        train_word2vec([["a", "b"]], pipe, dim=4, epochs=1)
    assert pipe.is_fifo()
    # a review: GloVe vectors, an empty file and compressed vectors are word vectors to replace with --force
    import gzip

    glove, empty, packed = tmp_path / "g.txt", tmp_path / "e.txt", tmp_path / "v.txt.gz"
    glove.write_text("good 0.1 0.2 0.3 0.4\n")
    empty.write_bytes(b"")
    packed.write_bytes(gzip.compress(b"1 4\ngood 0.1 0.2 0.3 0.4\n"))
    for out in (glove, empty, packed):
        assert main(base + ["--out", str(out), "--force"]) == 0, capsys.readouterr().err
        text = gzip.decompress(out.read_bytes()).decode() if out.suffix == ".gz" else out.read_text()
        assert text.split("\n", 1)[0].split()[1] == "4"  # word2vec text now, dimension 4 (.gz: gzip-compressed;
        # it was plain text under a .gz name, which the loader then could not read)


def test_compressed_vectors_are_read_as_gensim_reads_them(tmp_path):
    """Stop 78 (an audit): a .txt.gz / .bin.gz file (GoogleNews word2vec ships as .bin.gz), which gensim reads, was
    refused by the format sniffing and the dimension pre-check ("cannot tell its format from the first line")."""
    import bz2
    import gzip

    from complexorder.data.vectors import _sniff_format, load_word_vectors, vectors_dimension

    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=6)
    kv.add_vectors([f"w{i}" for i in range(5)], [[i + 0.5 * j for j in range(6)] for i in range(5)])
    plain_text, plain_bin = tmp_path / "v.txt", tmp_path / "v.bin"
    kv.save_word2vec_format(str(plain_text), binary=False)
    kv.save_word2vec_format(str(plain_bin), binary=True)
    for plain, fmt in ((plain_text, "word2vec-text"), (plain_bin, "word2vec-binary")):
        for suffix, module in ((".gz", gzip), (".bz2", bz2)):
            packed = tmp_path / (plain.name + suffix)
            packed.write_bytes(module.compress(plain.read_bytes()))
            assert _sniff_format(packed) == fmt and vectors_dimension(packed) == 6
            loaded = load_word_vectors(packed)
            assert loaded.index_to_key == kv.index_to_key and (loaded.vectors == kv.vectors).all()
    fake = tmp_path / "not.txt.gz"
    fake.write_bytes(plain_text.read_bytes())
    with pytest.raises(ValueError, match=rf"^vectors file {re.escape(str(fake))} cannot be read as gz-compressed "
                                         r"\(Not a gzipped file \(b'5 '\)\); decompress it, or give the file another "
                                         r"name if it is not compressed$"):
        vectors_dimension(fake)
    with pytest.raises(ValueError, match=r"cannot be read as gz-compressed"):  # the format given: a bare BadGzipFile
        vectors_dimension(fake, "word2vec-text")
