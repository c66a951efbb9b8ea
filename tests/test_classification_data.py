"""Loaders on the real files (and their defects), tokenisation, splits, vectors."""

import re

import numpy as np
import pytest
import torch

from complexorder.data.batching import EncodedDataset, iterate_batches
from complexorder.data.classification import (DATASETS, load_dataset, make_split, split_ids, stratified_folds,
                                              stratified_holdout)
from complexorder.data.text import kim_tokenize, read_lines
from complexorder.data.vectors import load_word_vectors, vectors_for_vocabulary
from complexorder.data.vocab import Vocabulary

SIZES = {"MR": {"all": 10662}, "SUBJ": {"all": 10000}, "CR": {"all": 3771}, "MPQA": {"all": 10603},
         "SST2": {"train": 67349, "dev": 872, "test": 1821}, "TREC": {"train": 4906, "dev": 546, "test": 500},
         "SST2-sent": {"train": 6920, "dev": 872, "test": 1821}}


@pytest.mark.parametrize("name", list(DATASETS))
def test_real_files_load_with_the_documented_sizes(name, shared_data):
    data = load_dataset(name, shared_data)
    assert {k: len(v) for k, v in data.texts.items()} == SIZES[name]
    assert all(len(t) == len(data.labels[k]) for k, t in data.texts.items())
    empty = sum(1 for texts in data.texts.values() for tokens in texts if not tokens)
    reported = sum(int(n.split(": ")[1].split()[0]) for n in data.notes if "no token left" in n)
    assert empty == reported


def test_blank_lines_are_counted_not_silently_dropped(shared_data):
    data = load_dataset("CR", shared_data)
    assert "custrev.neg: skipped 2 blank line(s)" in data.notes and "custrev.pos: skipped 2 blank line(s)" in data.notes
    assert any("no token left" in n for n in data.notes)
    assert data.labels["all"].count(1) == 2405 and data.labels["all"].count(0) == 1366


def test_cp1252_bytes_and_0x85_do_not_split_lines(shared_data):
    raw = (shared_data / "classification" / "MR" / "rt-polarity.pos").read_bytes()
    assert b"\x85" in raw
    lines = read_lines(shared_data / "classification" / "MR" / "rt-polarity.pos")
    assert len(lines) == 5331  # str.splitlines() would give more
    assert len(raw.decode("latin-1").splitlines()) > 5331
    hit = next(line for line in lines if "\u2026" in line)  # 0x85 is the cp1252 ellipsis
    assert "\x85" not in hit


def test_read_lines_and_malformed_label_lines(tmp_path):
    folder = tmp_path / "classification" / "SST2"
    folder.mkdir(parents=True)
    (folder / "phrases.train.tsv").write_bytes(b"good movie\t1\n\n  \nbad one\t0\n")
    (folder / "stsa.binary.dev").write_bytes(b"1 fine\r\n0 awful caf\xe9\n")
    (folder / "stsa.binary.test").write_bytes(b"1 ok\nno label here\n")
    with pytest.raises(ValueError, match=r"stsa.binary.test:2: expected '<0\|1> <sentence>', got 'no label here'"):
        load_dataset("SST2", tmp_path)
    (folder / "stsa.binary.test").write_bytes(b"1 ok\n")
    data = load_dataset("SST2", tmp_path)
    assert data.labels == {"train": [1, 0], "dev": [1, 0], "test": [1]}
    assert "phrases.train.tsv: skipped 2 blank line(s)" in data.notes
    assert data.texts["dev"][1] == ["awful", "caf"]  # cp1252 decoded, non-ASCII dropped as Kim
    assert "stsa.binary.dev: 1 line(s) not UTF-8, read as cp1252 (else Latin-1), e.g. line 2" in data.notes
    # stop 73: a UTF-8 byte-order mark made the first line's label '\ufeff1' (TREC: '\ufeffNUM:dist'), an error
    (folder / "stsa.binary.test").write_bytes(b"\xef\xbb\xbf1 ok\n0 bad\n")
    assert load_dataset("SST2", tmp_path).labels["test"] == [1, 0]
    assert read_lines(folder / "stsa.binary.test") == ["1 ok", "0 bad"]
    # stop 78 (an audit): a phrase line with a column too many was split at its last tab, "<TAB>1" read as a word
    (folder / "phrases.train.tsv").write_bytes(b"good movie\t1\nbad one\t1\t0\n")
    with pytest.raises(ValueError, match=r"^.*phrases.train.tsv:2: expected '<phrase><TAB><0\|1>', got "
                                         r"'bad one\\t1\\t0'$"):
        load_dataset("SST2", tmp_path)


def test_non_utf8_lines_are_reported_and_a_binary_or_utf16_file_is_an_error(tmp_path, shared_data):
    """Found by an audit (stop 52): a file of random bytes became a handful of junk examples, a UTF-16 file single
    letters, and the 101 cp1252 lines of each real MR file were decoded without a note."""
    mr = load_dataset("MR", shared_data)
    assert mr.notes == ["rt-polarity.neg: 101 line(s) not UTF-8, read as cp1252 (else Latin-1), e.g. line 32",
                        "rt-polarity.pos: 101 line(s) not UTF-8, read as cp1252 (else Latin-1), e.g. line 44"]
    folder = tmp_path / "classification" / "CR"
    folder.mkdir(parents=True)
    (folder / "custrev.neg").write_bytes(b"bad phone\nawful\n")
    (folder / "custrev.pos").write_bytes("great phone\n".encode("utf-16"))
    with pytest.raises(ValueError, match=r"custrev.pos:1: holds a NUL byte, so it is not a text file \(UTF-16 or "
                                         r"binary\?\); expected 8-bit text \(UTF-8, cp1252 or Latin-1\), one example "
                                         r"per line$"):
        load_dataset("CR", tmp_path)
    (folder / "custrev.pos").write_bytes(b"fine\n\xe9t\xe9\n\xff\xfe\x81\n")
    with pytest.raises(ValueError, match=r"custrev.pos: 2 of its 3 lines are not UTF-8 \(first: line 2\); expected "
                                         r"a text file, mostly UTF-8 \(the real files have at most 2 % cp1252 lines\)$"):
        load_dataset("CR", tmp_path)


def test_missing_files_and_unknown_names(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing data file rt-polarity.neg \(expected at .*MR/rt-polarity.neg\); "
                                                r"run `complexorder download --datasets MR"):
        load_dataset("MR", tmp_path)
    with pytest.raises(ValueError, match="unknown dataset 'IMDB'; valid names: MR, SUBJ, CR, MPQA, SST2, SST2-sent, TREC"):
        load_dataset("IMDB", tmp_path)
    folder = tmp_path / "classification" / "TREC"
    folder.mkdir(parents=True)
    (folder / "train_5500.label").write_text("DESC:manner How ?\nWHAT:x y\n")
    with pytest.raises(ValueError, match=r"train_5500.label:2: expected '<COARSE>:<fine> <question>' with COARSE in ABBR"):
        load_dataset("TREC", tmp_path)


def test_kim_tokenizer():
    assert kim_tokenize("It's a GREAT film, isn't it?!") == ["it", "'s", "a", "great", "film", ",", "is", "n't", "it",
                                                             "?", "!"]
    assert kim_tokenize("(really) ... \u2026 caf\u00e9") == ["(", "really", ")", "caf"]


def test_stratified_folds_are_disjoint_complete_and_stratified():
    labels = np.array([0] * 73 + [1] * 27 + [2] * 11)
    folds = stratified_folds(labels, 10, seed=0)
    together = np.concatenate(folds)
    assert len(together) == len(labels) and len(np.unique(together)) == len(labels)
    for cls, total in ((0, 73), (1, 27), (2, 11)):
        counts = [int((labels[f] == cls).sum()) for f in folds]
        assert max(counts) - min(counts) <= 1 and sum(counts) == total
    assert all(np.array_equal(a, b) for a, b in zip(folds, stratified_folds(labels, 10, seed=0)))  # fixed seed
    kept, held = stratified_holdout(np.arange(111), labels, 0.1, seed=3)
    assert len(np.intersect1d(kept, held)) == 0 and len(kept) + len(held) == 111
    assert [int((labels[held] == c).sum()) for c in range(3)] == [7, 3, 1]


def test_cv_split_of_a_real_dataset(shared_data):
    data = load_dataset("MR", shared_data)
    seen = []
    for fold in range(10):
        split = make_split(data, f"fold-{fold}")
        sizes = (len(split.train[0]), len(split.dev[0]), len(split.test[0]))
        assert sum(sizes) == 10662 and 1060 <= sizes[2] <= 1072 and 955 <= sizes[1] <= 965
        assert abs(np.mean(split.test[1]) - 0.5) < 0.01
        parts = [{id(t) for t in part[0]} for part in (split.train, split.dev, split.test)]
        assert len(parts[0] | parts[1] | parts[2]) == 10662  # train, dev, test disjoint and complete
        seen.extend(parts[2])
    assert len(seen) == len(set(seen)) == 10662  # every sentence is tested exactly once over the ten folds
    assert set(seen) == {id(t) for t in data.texts["all"]}
    assert split_ids("MR", [0, 3], [1]) == ["fold-0", "fold-3"] and split_ids("TREC", [0], [1, 2]) == ["seed-1", "seed-2"]
    with pytest.raises(ValueError, match=r"^fold 10 is outside 0..9 \(--folds, or the config's `folds`\)$"):
        split_ids("MR", [10], [1])


def test_vocabulary_from_training_text_only():
    vocab = Vocabulary.from_texts([["b", "a", "b"], ["c"]])
    assert vocab.itos == ["<pad>", "<unk>", "b", "a", "c"]
    assert vocab.encode(["a", "zzz"]).tolist() == [3, 1] and vocab.encode([]).tolist() == [1]


@pytest.mark.parametrize("bucket, shuffle", [(True, True), (True, False), (False, True), (False, False)])
def test_bucketed_batches_cover_every_example_once(bucket, shuffle):
    data = EncodedDataset([torch.arange(1, n + 1) for n in (torch.arange(100) % 17 + 1).tolist()], torch.arange(100))
    g = torch.Generator().manual_seed(0)
    seen = []
    for tokens, labels in iterate_batches(data, 8, shuffle=shuffle, generator=g, bucket=bucket, bucket_batches=4,
                                          min_length=5):
        assert tokens.shape[1] >= 5
        seen.extend(labels.tolist())
        for row, label in zip(tokens, labels.tolist()):  # padding only at the end, sequence intact
            n = len(data.sequences[label])
            assert torch.equal(row[:n], data.sequences[label]) and (row[n:] == 0).all()
    assert sorted(seen) == list(range(100))
    if not (bucket or shuffle):
        assert seen == list(range(100))  # the data's own order
    elif not bucket:
        assert seen != list(range(100))


def test_encoded_dataset_subset_length_and_mismatch():
    data = EncodedDataset([torch.tensor([5, 6, 7]), torch.tensor([8]), torch.tensor([9, 9])], torch.tensor([1, 0, 1]))
    part = data.subset([2, 0])
    assert len(part) == 2 and part.labels.tolist() == [1, 1] and torch.equal(part.sequences[1], torch.tensor([5, 6, 7]))
    assert data.max_length() == 3 and EncodedDataset([], torch.tensor([], dtype=torch.long)).max_length() == 0
    with pytest.raises(ValueError, match=r"^3 sequences but 2 labels$"):
        EncodedDataset(data.sequences, torch.tensor([1, 0]))
    with pytest.raises(ValueError, match=r"^batch_size must be positive, got 0$"):
        next(iterate_batches(data, 0))


def test_word2vec_with_one_worker_is_reproducible_and_bad_workers_are_rejected(tmp_path):
    import random

    from complexorder.data.download import sha256_of
    from complexorder.data.vectors import train_word2vec

    rng = random.Random(0)
    words = [f"w{i}" for i in range(50)]
    sentences = [[rng.choice(words) for _ in range(8)] for _ in range(200)]
    digests = []
    for name in ("a.txt", "b.txt"):
        kv = train_word2vec(sentences, tmp_path / name, dim=8, epochs=1, workers=1)
        digests.append(sha256_of(tmp_path / name))
    assert digests[0] == digests[1] and len(kv.key_to_index) == 50 and kv.vector_size == 8
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"workers must be a positive integer \(gensim threads\), got "):
            train_word2vec(sentences, tmp_path / "c.txt", dim=8, workers=bad)
    assert not (tmp_path / "c.txt").exists()


@pytest.mark.parametrize("first_line", [b"vectors\n", b"\xff\xfe\x00binary\n", b"300\n", b"\n"])
def test_a_vectors_file_whose_format_cannot_be_told_is_a_one_line_error_naming_the_option(first_line, tmp_path):
    (tmp_path / "v.dat").write_bytes(first_line + b"cat 1 2 3\n")
    with pytest.raises(ValueError, match=rf"^vectors file {re.escape(str(tmp_path / 'v.dat'))}: cannot tell its "
                                         r"format from the first "
                                         r"line; expected word2vec \('<count> <dim>' header\) or GloVe \('<word> <v1> "
                                         r"<v2> \.\.\.'\); pass --vectors-format \(or set vectors_format in the config\)$"):
        load_word_vectors(tmp_path / "v.dat")


def test_word_vectors_in_three_formats(tmp_path):
    vocab = Vocabulary(["cat", "dog", "emu"])
    (tmp_path / "v.txt").write_text("2 3\ncat 1 2 3\ndog 4 5 6\n")
    (tmp_path / "g.txt").write_text("cat 1 2 3\ndog 4 5 6\n")
    for name in ("v.txt", "g.txt"):
        kv = load_word_vectors(tmp_path / name)
        matrix, coverage = vectors_for_vocabulary(kv, vocab)
        assert torch.equal(matrix[2], torch.tensor([1.0, 2.0, 3.0])) and torch.equal(matrix[0], torch.zeros(3))
        assert abs(coverage - 2 / 3) < 1e-9 and matrix[4].abs().max() <= 0.25
    kv.save_word2vec_format(str(tmp_path / "b.bin"), binary=True)
    assert load_word_vectors(tmp_path / "b.bin").vector_size == 3
    with pytest.raises(ValueError, match=r"has dimension 3, expected 300 \(the models' embedding_dim\)"):
        load_word_vectors(tmp_path / "v.txt", expected_dim=300)
    (tmp_path / "bad.txt").write_text("2 3\ncat 1 2\n")
    with pytest.raises(ValueError, match="bad.txt is not valid word2vec-text vectors"):
        load_word_vectors(tmp_path / "bad.txt")
    with pytest.raises(FileNotFoundError, match="create one with `complexorder vectors train`"):
        load_word_vectors(tmp_path / "none.txt")
    (tmp_path / "vecdir").mkdir()
    with pytest.raises(IsADirectoryError, match=r"^vectors file .*vecdir is a directory; pass the vectors file itself "):
        load_word_vectors(tmp_path / "vecdir")
    with pytest.raises(ValueError, match=r"^vectors file /dev/null is not a regular file \(a device or pipe\?\); pass "
                                         r"the vectors file itself$"):  # stop 75: it "does not exist"
        load_word_vectors("/dev/null")
    with pytest.raises(ValueError, match="vectors format 'fasttext' unknown"):
        load_word_vectors(tmp_path / "v.txt", "fasttext")
    # a UTF-8 text file whose first 4096 bytes after the header end inside a character is still text
    first = "a" * 4085 + " 1 2 3\n"  # 4,092 bytes: the next line's é takes bytes 4,095 and 4,096
    body = (first + "café 4 5 6\n").encode()
    assert body[4095:4097] == "é".encode()
    (tmp_path / "u.txt").write_bytes(b"2 3\n" + body)
    assert load_word_vectors(tmp_path / "u.txt").index_to_key == ["a" * 4085, "café"]


def test_a_data_file_without_examples_is_an_error_not_a_smaller_data_set(tmp_path):
    folder = tmp_path / "classification" / "MR"
    folder.mkdir(parents=True)
    (folder / "rt-polarity.pos").write_bytes(b"a fine film\n")
    (folder / "rt-polarity.neg").write_bytes(b"\n  \n")  # only blank lines: a one-class MR otherwise
    with pytest.raises(ValueError, match=r"rt-polarity.neg: no examples \(the file is empty or blank\); "
                                         r"expected lines like '<sentence>' \(one per line\)"):
        load_dataset("MR", tmp_path)
    sst = tmp_path / "classification" / "SST2"
    sst.mkdir(parents=True)
    (sst / "stsa.binary.train").write_bytes(b"1 good\n")
    (sst / "stsa.binary.dev").write_bytes(b"0 bad\n")
    (sst / "stsa.binary.test").write_bytes(b"")
    with pytest.raises(ValueError, match=r"stsa.binary.test: no examples .*expected lines like '<0\|1> <sentence>'"):
        load_dataset("SST2-sent", tmp_path)


def test_word2vec_records_its_provenance_beside_the_file(tmp_path):
    import json
    import random

    import gensim
    import numpy
    import scipy

    from complexorder.data.download import sha256_of
    from complexorder.data.vectors import provenance_path, train_word2vec, vectors_provenance

    rng = random.Random(1)
    words = [f"w{i}" for i in range(30)]
    sentences = [[rng.choice(words) for _ in range(6)] for _ in range(50)]
    out = tmp_path / "v.txt"
    train_word2vec(sentences, out, dim=4, epochs=1, seed=7)
    assert provenance_path(out) == tmp_path / "v.txt.json"
    made = json.loads(provenance_path(out).read_text())
    assert made["sha256"] == sha256_of(out) and made["file"] == "v.txt"
    assert (made["sentences"], made["tokens"], made["words"]) == (50, 300, 30)
    assert made["settings"] == {"dim": 4, "epochs": 1, "window": 5, "min_count": 1, "negative": 5, "seed": 7,
                                "workers": 1, "sg": 1}
    assert (made["versions"]["gensim"], made["versions"]["numpy"], made["versions"]["scipy"]) == (
        gensim.__version__, numpy.__version__, scipy.__version__)
    assert vectors_provenance(out, sha256_of(out)) == made
    # a record describing another file, or a broken one, is not this file's provenance
    assert vectors_provenance(out, "0" * 64) is None
    provenance_path(out).write_text("{not json")
    assert vectors_provenance(out) is None
    assert vectors_provenance(tmp_path / "absent.txt") is None


def test_word2vec_sizes_min_count_and_output_path_are_checked_and_named(tmp_path, capsys):
    """`vectors train --dim 0` wrote 0-d vectors; --dim -3, --epochs 0 and an --out that is a directory or lies
    under a file were gensim/numpy/OS tracebacks or messages naming no option; a --min-count above every word's
    count was a gensim traceback after the corpus was read."""
    from complexorder.cli import main
    from complexorder.data.vectors import train_word2vec

    for argv, message in ((["--dim", "0"], "--dim must be a positive integer, got 0"),
                          (["--dim", "-3"], "--dim must be a positive integer, got -3"),
                          (["--epochs", "0"], "--epochs must be a positive integer, got 0"),
                          (["--min-count", "0"], "--min-count must be a positive integer, got 0"),
                          (["--out", str(tmp_path)], f"--out: {tmp_path} is a directory, expected a file path")):
        argv = ["vectors", "train", "--data-dir", str(tmp_path / "no-data"), "--out", str(tmp_path / "v.txt")] + argv
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"  # before any data is read
    sentences = [["a", "b", "a"], ["b", "c"]]
    with pytest.raises(ValueError, match=r"^min_count=3 leaves no word: the most frequent word occurs 2 time\(s\)$"):
        train_word2vec(sentences, tmp_path / "v.txt", dim=4, epochs=1, min_count=3)
    with pytest.raises(ValueError, match=r"^dim must be a positive integer, got 0$"):
        train_word2vec(sentences, tmp_path / "v.txt", dim=0, epochs=1)
    assert not (tmp_path / "v.txt").exists()


def test_the_default_word2vec_corpus_is_every_sentence_of_the_six_sets_and_the_english_of_multi30k(shared_data,
                                                                                                   tmp_path):
    from complexorder.data.vectors import PAPER_DATASETS, unlabeled_sentences

    classification = [t for name in PAPER_DATASETS for texts in load_dataset(name, shared_data).texts.values()
                      for t in texts if t]
    folder = shared_data / "translation" / "multi30k"
    english = [t for f in ("train.en", "val.en", "test2016.en") for t in map(kim_tokenize, read_lines(folder / f)) if t]
    got = unlabeled_sentences(shared_data)
    assert got == classification + english and len(got) == 142_043  # the count `vectors train` printed (stop 46)
    assert kim_tokenize("How far is it from Denver to Aspen ?") in got  # TREC's first question, without its label
    trec = shared_data / "classification" / "TREC"
    labels = {tuple(kim_tokenize(line.split()[0])) for f in ("train_5500.label", "TREC_10.label")
              for line in read_lines(trec / f) if line.strip()}
    assert ("num", "dist") in labels and len(labels) == 50  # 'NUM:dist' tokenises to two words, the ':' dropped
    assert not any(tuple(s[:2]) in labels for s in got)  # no sentence starts with a TREC label
    assert unlabeled_sentences(shared_data, include_multi30k=False) == classification
    (tmp_path / "classification").symlink_to(shared_data / "classification")  # no translation/ folder
    with pytest.raises(FileNotFoundError, match=r"^missing data file train.en \(expected at .*translation/multi30k/"
                                                r"train.en\); pass --no-multi30k to train on the classification "
                                                r"sentences only$"):
        unlabeled_sentences(tmp_path)


def test_a_missing_file_under_the_default_data_directory_says_how_that_folder_was_chosen(tmp_path, monkeypatch):
    """Someone who forgot to set $COMPLEXORDER_DATA read "expected at ~/.cache/complexorder/data/..." without being
    told that this was the default."""
    from complexorder.data.paths import require_file, resolve_data_dir

    monkeypatch.delenv("COMPLEXORDER_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    default = tmp_path / "complexorder" / "data"
    missing = resolve_data_dir() / "classification" / "TREC" / "train_5500.label"
    with pytest.raises(FileNotFoundError, match=re.escape(
            f"missing data file train_5500.label (expected at {missing}; {default} is the default data directory: "
            "pass --data-dir or set $COMPLEXORDER_DATA); download it")):
        require_file(missing, "download it")
    chosen = resolve_data_dir(tmp_path / "mine") / "x.txt"  # a folder given by --data-dir: no hint
    with pytest.raises(FileNotFoundError, match=re.escape(f"missing data file x.txt (expected at {chosen}); get it")):
        require_file(chosen, "get it")


def test_a_data_directory_that_is_a_file_is_named_as_such(tmp_path, capsys):
    """Stop 81: `classify --data-dir /etc/passwd` said "missing data file ... (expected at /etc/passwd/...)"."""
    from complexorder.cli import main
    from complexorder.data.paths import require_file

    not_a_dir = tmp_path / "notes.txt"
    not_a_dir.write_text("x\n")
    path = not_a_dir / "classification" / "TREC" / "TREC_10.label"
    message = (f"data file TREC_10.label cannot be at {path}: {not_a_dir} is a file, not a directory (a --data-dir "
               "that names a file?)")
    with pytest.raises(NotADirectoryError, match="^" + re.escape(message) + "$"):
        require_file(path, "download it")
    assert main(["classify", "--datasets", "TREC", "--models", "transformer", "--embeddings", "none", "--seeds", "1",
                 "--data-dir", str(not_a_dir), "--results", str(tmp_path / "r.jsonl"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("complexorder: error: data file ") and f"{not_a_dir} is a file, not a directory" in err
