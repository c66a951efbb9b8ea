"""Bad input of ``lm prepare-text8 --sha256``, word-level ``<unk>`` reporting in translation, and the temporary
checkpoint files an interrupted write leaves in a run directory."""

import hashlib
import json
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from complexorder.cli import main
from complexorder.config import config_from_dict
from complexorder.data import text8 as t8
from complexorder.experiments.language_model import LMConfig, train_language_model
from complexorder.errors import RunDirectoryBusy
from complexorder.experiments.training import remove_stale_checkpoint_temporaries, run_directory_lock
from complexorder.experiments.translation import count_unknown_words, resolve_config, train_translation


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# --------------------------------------------------------------------------------------
# lm prepare-text8 --sha256
# --------------------------------------------------------------------------------------


@pytest.fixture
def small_text8(tmp_path, monkeypatch):
    """A 20-character stand-in for the 100M-character text8 (as in test_language_model.py)."""
    monkeypatch.setattr(t8, "TEXT8_CHARACTERS", 20)
    monkeypatch.setattr(t8, "TEXT8_SPLIT_SIZES", (18, 1, 1))
    data = b"the cat sat on a mat"
    write(tmp_path / "text8", data)
    with zipfile.ZipFile(tmp_path / "text8.zip", "w") as zf:
        zf.writestr("text8", data)
    return data


def test_prepare_text8_sha256_pins_the_source_file_instead_of_mahoneys(tmp_path, small_text8, capsys):
    digest = hashlib.sha256(small_text8).hexdigest()
    source = tmp_path / "text8"
    # the file's own digest (upper case is fine) is checked instead of Mahoney's, and the run says so
    assert main(["lm", "prepare-text8", "--source", str(source), "--sha256", digest.upper(),
                 "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert (f"checked {source} against --sha256 {digest} (your pinned digest, instead of Mahoney's text8): "
            f"the file matches") in out.splitlines()
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["sha256_pinned"] == digest and manifest["verified_by"] == "--sha256 (file)"
    assert manifest["verified"] is False  # not Mahoney's text8
    assert (tmp_path / "a" / "train.txt").read_bytes() == small_text8[:18]
    # text8.zip: the digest of the archive or of its text8 member
    archive = tmp_path / "text8.zip"
    zip_digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    for pinned, which, out_dir in ((zip_digest, "the file", "b"), (digest, "its text8 content", "c")):
        assert main(["lm", "prepare-text8", "--source", str(archive), "--sha256", pinned,
                     "--out", str(tmp_path / out_dir)]) == 0
        assert (f"checked {archive} against --sha256 {pinned} (your pinned digest, instead of Mahoney's text8): "
                f"{which} matches") in capsys.readouterr().out.splitlines()
    # another digest: a one-line error naming --sha256, and nothing written
    other = "0" * 64
    assert main(["lm", "prepare-text8", "--source", str(source), "--sha256", other, "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: {source}: the file has sha256 {digest}, expected "
                                               f"{other} (--sha256); is it the file you pinned?")
    assert main(["lm", "prepare-text8", "--source", str(archive), "--sha256", other, "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: {archive}: the file has sha256 {zip_digest} and "
                                               f"its text8 content {digest}, expected {other} (--sha256); is it the "
                                               f"file you pinned?")
    assert not (tmp_path / "d").exists()
    # without --sha256: Mahoney's digest, and the error names both ways out
    assert main(["lm", "prepare-text8", "--source", str(source), "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: {source}: the text8 content has sha256 {digest}, expected {t8.TEXT8_SHA256} (Mahoney's "
        f"text8); pass --skip-checksum to use this file anyway, or --sha256 with your own pinned digest")


@pytest.mark.parametrize("action", [["--source", "text8"], ["--download"]])
@pytest.mark.parametrize("digest", ["xyz", "0" * 63, "g" * 64, ""])
def test_prepare_text8_refuses_a_malformed_sha256_before_any_work(tmp_path, small_text8, monkeypatch, capsys,
                                                                   action, digest):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(t8, "fetch", lambda *a, **k: pytest.fail("no download with a malformed --sha256"))
    assert main(["lm", "prepare-text8", *action, "--sha256", digest, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --sha256 must be a SHA-256 digest (64 "
                                               f"hexadecimal characters), got {digest!r}")
    assert not (tmp_path / "out").exists()


def test_prepare_text8_refuses_sha256_with_skip_checksum(tmp_path, small_text8, capsys):
    digest = hashlib.sha256(small_text8).hexdigest()
    assert main(["lm", "prepare-text8", "--source", str(tmp_path / "text8"), "--sha256", digest, "--skip-checksum",
                 "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: --sha256 and --skip-checksum contradict each other: give --sha256 to check the file "
        "against your digest, or --skip-checksum to check none")
    assert not (tmp_path / "out").exists()


def test_prepare_text8_library_checks_the_sha256_argument(tmp_path, small_text8):
    with pytest.raises(ValueError, match=r"^--sha256 must be a SHA-256 digest \(64 hexadecimal characters\), "
                                         r"got 'abc'$"):
        t8.prepare_text8(tmp_path / "text8", tmp_path / "out", sha256="abc")
    manifest = t8.prepare_text8(tmp_path / "text8", tmp_path / "out", sha256=hashlib.sha256(small_text8).hexdigest())
    assert manifest["verified_by"] == "--sha256 (file)"
    assert t8.prepare_text8(tmp_path / "text8", tmp_path / "out2", verify=False)["verified_by"] is None


# --------------------------------------------------------------------------------------
# Word-level translation: <unk> counted and reported
# --------------------------------------------------------------------------------------

EN = ["one", "two", "three", "four"]
DE = ["eins", "zwei", "drei", "vier"]


@pytest.fixture(scope="module")
def word_data(tmp_path_factory):
    """Multi30k file layout; the training text has every word of EN/DE, validation and test some others."""
    root = tmp_path_factory.mktemp("data")
    folder = root / "translation/multi30k"
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randint(0, 4, (3,), generator=gen).tolist() for _ in range(24)]
    write(folder / "train.en", "".join(" ".join(EN[i] for i in r) + "\n" for r in rows))  # 72 tokens
    write(folder / "train.de", "".join(" ".join(DE[i] for i in r) + "\n" for r in rows))
    for split in ("val", "test2016"):  # 10 source tokens, 2 unknown; 9 target tokens, 1 unknown
        write(folder / f"{split}.en", "one two seven\nthree four\nfour eight one\ntwo three\n")
        write(folder / f"{split}.de", "eins zwei sieben\ndrei vier\nvier eins\nzwei drei\n")
    return root


def word_config(name="toy-word", **more):
    return resolve_config("cpu-vanilla", {
        "name": name, "model.d_model": 16, "model.nhead": 2, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dim_feedforward": 32, "model.dropout": 0.0,
        "data.preprocessing": "word", "data.min_frequency": 1, "train.batch_size": 8, "train.max_steps": 2,
        "train.warmup_steps": 2, "decode.beam_size": 1, "decode.max_len_b": 3, **more})


@pytest.fixture(scope="module")
def word_run(word_data, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    messages = []
    train_translation(word_config(), run_dir, word_data, progress=False, log=messages.append)
    return run_dir, messages


def test_word_training_reports_the_share_of_unk_tokens(word_run):
    _, messages = word_run
    assert ("toy-word: word vocabulary 12 (min_frequency 1): <unk> stands for 0.0% (0 of 72) of training source "
            "tokens and 0.0% (0 of 72) of target tokens, 20.0% (2 of 10) of validation source tokens and 11.1% (1 of 9) "
            "of target tokens") in messages


def test_translate_run_and_eval_note_source_words_read_as_unk(word_run, word_data, tmp_path, capsys):
    run_dir, _ = word_run
    checkpoint = str(run_dir / "last.pt")
    write(tmp_path / "in.en", "one seven two\nnine ten eleven\n")
    assert main(["translate", "run", "--checkpoint", checkpoint, "--input", str(tmp_path / "in.en"),
                 "--output", str(tmp_path / "out.de"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.strip() == (f"note: 4 of 6 source words (66.7%) of {tmp_path / 'in.en'} are not in the checkpoint's "
                           f"word vocabulary and are read as <unk>")
    assert len((tmp_path / "out.de").read_text().splitlines()) == 2
    # every word known: no note
    write(tmp_path / "known.en", "one two\n")
    assert main(["translate", "run", "--checkpoint", checkpoint, "--input", str(tmp_path / "known.en"),
                 "--output", str(tmp_path / "known.de"), "--no-progress"]) == 0
    assert "<unk>" not in capsys.readouterr().err
    # eval: the split's source file, and the counts in the results
    assert main(["translate", "eval", "--checkpoint", checkpoint, "--split", "test2016", "--data-dir", str(word_data),
                 "--results", str(tmp_path / "results.jsonl"), "--no-progress"]) == 0
    source = word_data / "translation/multi30k/test2016.en"
    assert capsys.readouterr().err.strip() == (f"note: 2 of 10 source words (20.0%) of {source} are not in the "
                                               f"checkpoint's word vocabulary and are read as <unk>")
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["source_unk_words"] == 2 and record["source_words"] == 10


def test_count_unknown_words_is_zero_for_bpe():
    class Bpe:
        kind = "bpe"

        def encode(self, text):
            raise AssertionError("BPE has byte fall-back: nothing is encoded to count")

    assert count_unknown_words(Bpe(), ["anything at all"]) == (0, 0)


# --------------------------------------------------------------------------------------
# Temporary checkpoint files left by a killed write
# --------------------------------------------------------------------------------------


def killed_checkpoint_write(path):
    """Run ``atomic_write_bytes(path)`` in a child that SIGKILLs itself before the rename; the name of the
    temporary file it leaves behind."""
    code = textwrap.dedent(f"""
        import os, signal
        from complexorder import checkpoint
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        checkpoint.atomic_write_bytes({str(path)!r}, b"half a checkpoint")
    """)
    assert subprocess.run([sys.executable, "-c", code]).returncode == -9
    left = [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.") and p.name.endswith(".tmp")]
    assert len(left) == 1, left
    return left[0]


def test_helper_removes_only_checkpoint_temporaries(tmp_path):
    stale = killed_checkpoint_write(tmp_path / "last.pt")
    write(tmp_path / ".epoch3.pt.abc_1234.tmp", b"x")
    keep = [".notes.tmp", ".log.jsonl.abcdefgh.tmp", "last.pt.abcdefgh.tmp", ".last.pt.tmp", ".last.pt.abc.tmp",
            "epoch1.pt", ".avg.pt.abcdefgh.tmp"]  # the last: `translate average --output RUN/avg.pt` writing now
    for name in keep:
        write(tmp_path / name, b"x")
    messages = []
    assert remove_stale_checkpoint_temporaries(tmp_path, messages.append, "run: ") == 2
    assert messages == [f"run: removed 2 incomplete checkpoint file(s) left in {tmp_path} by an interrupted write "
                        f"({', '.join(sorted([stale, '.epoch3.pt.abc_1234.tmp']))})"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    # nothing to remove, or no directory yet: silent
    assert remove_stale_checkpoint_temporaries(tmp_path, messages.append) == 0
    assert remove_stale_checkpoint_temporaries(tmp_path / "absent", messages.append) == 0
    assert len(messages) == 1


def test_translate_train_removes_temporaries_of_a_killed_checkpoint_write(word_data, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stale = killed_checkpoint_write(run_dir / "last.pt")
    messages = []
    train_translation(word_config("toy-stale", **{"train.max_steps": 1}), run_dir, word_data, progress=False,
                      log=messages.append)
    assert f"toy-stale: removed 1 incomplete checkpoint file(s) left in {run_dir} by an interrupted write ({stale})" \
        in messages
    assert not (run_dir / stale).exists() and (run_dir / "last.pt").is_file()


TINY_RUN = {"model": {"embedding": "complex-order", "n_layer": 1, "n_head": 2, "d_model": 16, "d_head": 8,
                      "d_inner": 32, "mem_len": 8, "dropout": 0.0},
            "train": {"tgt_len": 8, "batch_size": 2, "max_steps": 2, "lr": 3e-3, "log_interval": 1,
                      "eval_interval": 2, "eval_tgt_len": 8, "eval_max_chars": 200, "checkpoint_interval": 2},
            "eval": {"tgt_len": 8, "mem_len": 8, "clamp_len": 8, "same_length": True, "batch_size": 2}}


def tiny_corpus(tmp_path):
    """A text8-format corpus of 1,000 characters per split in ``tmp_path/corpus``."""
    text = "the cat sat on the mat and the dog sat on the log " * 20
    for split in ("train", "valid", "test"):
        write(tmp_path / "corpus" / f"{split}.txt", text.strip())
    return tmp_path / "corpus"


def tiny_lm_run(tmp_path):
    """``TINY_RUN`` trained on :func:`tiny_corpus` into ``tmp_path/run`` (2 steps); returns the run directory."""
    out = tmp_path / "run"
    train_language_model(config_from_dict(TINY_RUN, LMConfig), tiny_corpus(tmp_path), out, progress=False,
                         log=lambda m: None)
    return out


def test_lm_train_removes_temporaries_of_a_killed_checkpoint_write(tmp_path):
    tiny_corpus(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    stale = [killed_checkpoint_write(out / "last.pt"), killed_checkpoint_write(out / "best.pt")]
    messages = []
    train_language_model(config_from_dict(TINY_RUN, LMConfig), tmp_path / "corpus", out, progress=False,
                         log=messages.append)
    assert (f"removed 2 incomplete checkpoint file(s) left in {out} by an interrupted write "
            f"({', '.join(sorted(stale))})") in messages
    assert not any((out / name).exists() for name in stale) and (out / "last.pt").is_file()


# --------------------------------------------------------------------------------------
# A second training in a run directory that another training is writing into
# --------------------------------------------------------------------------------------


def hold_lock_as_another_process(run_dir, pid="4242"):
    """What a training running in ``run_dir`` holds: ``flock`` on its lock file, which names the process. A second
    ``open`` of the file is a separate lock owner for ``flock``, even in this process."""
    import fcntl
    import os
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / ".complexorder.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, f"{pid}\n".encode())
    return fd


def test_lm_train_refuses_a_run_directory_another_training_holds(tmp_path, capsys):
    """Stop 53: two trainings in one directory both wrote last.pt, and each removed the other's temporary files."""
    import os
    tiny_corpus(tmp_path)
    cfg = config_from_dict(TINY_RUN, LMConfig)
    out = tmp_path / "run"
    fd = hold_lock_as_another_process(out)
    stale = killed_checkpoint_write(out / "last.pt")  # the other training's write in progress
    with pytest.raises(RunDirectoryBusy, match="^" + re.escape(
            f"out_dir (--out): another training is writing into {out} (process 4242); wait for it to finish, or "
            f"choose another directory") + "$"):
        train_language_model(cfg, tmp_path / "corpus", out, progress=False, log=lambda *_: None)
    assert (out / stale).exists() and not (out / "last.pt").exists()  # nothing of the other run touched
    # the command line says it in one line, exit 2
    args = ["lm", "train", "--corpus", str(tmp_path / "corpus"), "--out", str(out), "--no-progress"]
    config = write(tmp_path / "tiny.toml", "".join(f"[{section}]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in values.items())
        for section, values in TINY_RUN.items()))
    assert main(args + ["--config", str(config)]) == 2
    assert capsys.readouterr().err == (f"complexorder: error: out_dir (--out): another training is writing into {out} "
                                       f"(process 4242); wait for it to finish, or choose another directory\n")
    # once the other training ends (its process closes the file), the directory is free
    os.close(fd)
    train_language_model(cfg, tmp_path / "corpus", out, progress=False, log=lambda *_: None)
    assert (out / "last.pt").is_file() and not (out / stale).exists()
    assert (out / ".complexorder.lock").read_text() == f"{os.getpid()}\n"  # the last holder
    hold_lock_as_another_process(out)  # released at the end of the training: free again (closed with the test)


def test_translate_train_refuses_a_run_directory_another_training_holds(word_data, tmp_path):
    import os
    run_dir = tmp_path / "run"
    fd = hold_lock_as_another_process(run_dir, "77")
    with pytest.raises(RunDirectoryBusy, match="^" + re.escape(
            f"run_dir (--run-dir): another training is writing into {run_dir} (process 77); wait for it to finish, "
            f"or choose another directory") + "$"):
        train_translation(word_config("toy-lock", **{"train.max_steps": 1}), run_dir, word_data, progress=False,
                          log=lambda *_: None)
    os.close(fd)
    train_translation(word_config("toy-lock", **{"train.max_steps": 1}), run_dir, word_data, progress=False,
                      log=lambda *_: None)
    assert (run_dir / "last.pt").is_file()


def test_a_training_that_fails_before_writing_leaves_no_directory(tmp_path):
    """The lock makes the run directory; a run that fails on its input before writing anything removes it again,
    as before the lock (check_writable creates nothing)."""
    cfg = config_from_dict(TINY_RUN, LMConfig)
    with pytest.raises(FileNotFoundError):
        train_language_model(cfg, tmp_path / "no-corpus", tmp_path / "runs" / "a" / "new", progress=False)
    assert not (tmp_path / "runs").exists()  # nor the parents it made
    # the lock is released on the error: a run in the same directory goes ahead
    with run_directory_lock(tmp_path / "runs" / "a" / "new", "--out"):
        (tmp_path / "runs" / "a" / "keep.txt").write_text("another process's file")
    assert [p.name for p in (tmp_path / "runs" / "a").iterdir()] == ["keep.txt"]  # "new" removed, "a" not empty
    # a run directory removed while the training ran: the training's own error comes through, not the tidying's
    import shutil
    with pytest.raises(ValueError, match="^the training's error$"):
        with run_directory_lock(tmp_path / "gone" / "run", "--out"):
            shutil.rmtree(tmp_path / "gone")
            raise ValueError("the training's error")
    # a directory that existed before is kept, with the lock file
    (tmp_path / "old").mkdir()
    with pytest.raises(FileNotFoundError):
        train_language_model(cfg, tmp_path / "no-corpus", tmp_path / "old", progress=False)
    assert [p.name for p in (tmp_path / "old").iterdir()] == [".complexorder.lock"]


def test_a_file_system_that_cannot_lock_trains_unlocked_with_a_note(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    messages = []
    with run_directory_lock(tmp_path / "run", "--out", messages.append):
        (tmp_path / "run" / "last.pt").write_bytes(b"x")
    assert messages == [f"note: --out: {tmp_path / 'run'} cannot be locked (No locks available); training without "
                        f"the lock that refuses a second training in the same directory"]


def test_lm_eval_shows_its_result_before_the_results_file_and_names_a_short_cut(tmp_path, capsys):
    """Stop 73: with --results /dev/full the BPC was never shown; `--max-chars 1` blamed the corpus's valid file;
    `train.eval_max_chars = 1` said "use a longer corpus"; `--splits valid,` passed; a summary printed before any
    validation held `Infinity`, which is not JSON."""
    out = tiny_lm_run(tmp_path)
    ck, corpus = str(out / "last.pt"), str(tmp_path / "corpus")
    if Path("/dev/full").exists():
        assert main(["lm", "eval", "--checkpoint", ck, "--corpus", corpus, "--no-progress", "--splits", "valid",
                     "--results", "/dev/full"]) == 2
        shown, err = capsys.readouterr()
        assert json.loads(shown)["valid_bpc"] > 0
        assert err == "complexorder: error: cannot write /dev/full: No space left on device\n"  # no "[Errno 28]"
    assert main(["lm", "eval", "--checkpoint", ck, "--corpus", corpus, "--no-progress", "--splits", "valid",
                 "--max-chars", "3"]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: max_chars = 3 (--max-chars) leaves the valid split "
                                               "3 characters, too few for 2 evaluation streams of 2 or more; give at "
                                               "least 4 (or a smaller batch_size, --batch-size)")
    for splits in ("valid,", "valid,,test"):
        assert main(["lm", "eval", "--checkpoint", ck, "--corpus", corpus, "--splits", splits]) == 2
        assert capsys.readouterr().err.strip() == (f"complexorder: error: --splits: {splits!r} has an empty entry; "
                                                   "give names separated by single commas")
    data = {k: dict(v) for k, v in TINY_RUN.items()}
    data["train"]["eval_max_chars"] = 1
    with pytest.raises(ValueError, match=r"^train.eval_max_chars = 1 leaves 1 validation characters, too few for 2 "
                                         r"evaluation streams of 2 or more; set it to at least 4 \(or 0: the whole "
                                         r"valid split\)$"):
        train_language_model(config_from_dict(data, LMConfig), tmp_path / "corpus", tmp_path / "run2", progress=False,
                             log=lambda m: None)
    from complexorder.config import json_ready
    assert json.dumps(json_ready({"best_valid_bpc": float("inf"), "a": [float("nan"), 1.0]})) == \
        '{"best_valid_bpc": null, "a": [null, 1.0]}'


def test_prepare_text8_never_writes_over_its_source(tmp_path, small_text8, capsys):
    """Stop 73: `--source p/train.txt --out p` replaced the source by its first 90M characters."""
    source = tmp_path / "train.txt"
    source.write_bytes(small_text8)
    assert main(["lm", "prepare-text8", "--source", str(source), "--out", str(tmp_path), "--skip-checksum"]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: --out {tmp_path / 'train.txt'} is the source "
                                               "(--source), which this command reads; writing it would destroy it — "
                                               "choose another file")
    assert source.read_bytes() == small_text8


def test_lm_train_interrupted_says_where_a_resume_starts_and_refuses_a_foreign_results_file(tmp_path, capsys,
                                                                                             monkeypatch):
    """Stop 73: Ctrl-C on `lm train` lost the steps since the last checkpoint without a word; `--out D` whose
    results.jsonl was not JSON lines had the records appended to it."""
    from complexorder.experiments import language_model_cli

    out = tiny_lm_run(tmp_path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(language_model_cli, "train_language_model", interrupted)
    assert main(["lm", "train", "--config", "proxy_cpu", "--corpus", str(tmp_path / "corpus"), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == (
        f"complexorder: interrupted; `lm train ... --resume` continues from step 2 ({out / 'last.pt'}); the steps "
        "after it are trained again (a checkpoint is written every train.checkpoint_interval = 250 steps)")
    monkeypatch.undo()
    other = tmp_path / "other"
    write(other / "results.jsonl", "not json\n")
    # the run directory is what the user gave, so the message asks for another directory (stop 82)
    with pytest.raises(ValueError, match="^" + re.escape(f"out_dir (--out) {other / 'results.jsonl'} is not a JSON-lines results file")
                       + r".* — choose another directory$"):
        train_language_model(config_from_dict(TINY_RUN, LMConfig), tmp_path / "corpus", other, progress=False,
                             log=lambda m: None)
    assert (other / "results.jsonl").read_text() == "not json\n"
    assert main(["lm", "build-corpus", "--source-dir", str(other / "results.jsonl"), "--out", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.strip() == (f"complexorder: error: source directory {other / 'results.jsonl'} is a "
                                               "file, not a directory (expected the shared data directory with "
                                               "classification/ and translation/)")


def test_a_train_split_shorter_than_one_segment_names_its_file(tmp_path):
    """Stop 81: `the train split has 7 characters: ...` named no file, where the valid split's error named its own."""
    corpus = tiny_corpus(tmp_path)
    write(corpus / "train.txt", "the cat")
    with pytest.raises(ValueError, match="^" + re.escape(
            f"the train split ({corpus / 'train.txt'}) has 7 characters: 2 streams of 3, shorter than one segment of "
            "tgt_len=8 plus its target (9); use a longer corpus or a smaller batch_size / tgt_len") + "$"):
        train_language_model(config_from_dict(TINY_RUN, LMConfig), corpus, tmp_path / "run", progress=False,
                             log=lambda m: None)


def test_build_corpus_refuses_to_write_beside_the_data_sets_it_reads(tmp_path, capsys):
    """Stop 81: `lm build-corpus --out DATA/classification/MR` wrote train.txt, valid.txt, test.txt and manifest.json
    beside MR's own files (`vectors train` refused the like since stop 73)."""
    from complexorder.data.text8 import PROXY_SOURCES, build_proxy_corpus

    data = tmp_path / "data"
    for rel, _ in PROXY_SOURCES:
        write(data / rel, "")
    for out, what in ((data / "classification" / "MR", f"inside {data / 'classification'}"),
                      (data, f"{data}"), (data / "translation", f"{data / 'translation'}")):
        before = sorted(p for p in data.rglob("*"))
        with pytest.raises(ValueError, match="^" + re.escape(f"out_dir {out} is {what}, which the proxy corpus is "
                                                             "read from; write it elsewhere (the default: "
                                                             "DATA_DIR/text8-proxy)") + "$"):
            build_proxy_corpus(data, out)
        assert main(["lm", "build-corpus", "--source-dir", str(data), "--out", str(out)]) == 2
        assert capsys.readouterr().err == f"complexorder: error: --out {out} is {what}, which the proxy corpus is " \
                                          "read from; write it elsewhere (the default: DATA_DIR/text8-proxy)\n"
        assert sorted(p for p in data.rglob("*")) == before  # nothing written, not even a probe
    write(data / "classification" / "MR" / "rt-polarity.pos", "a good film\n")
    build_proxy_corpus(data, data / "text8-proxy")  # the default place, inside the data directory, is fine
    assert (data / "text8-proxy" / "train.txt").is_file()


def test_eval_results_refuse_another_commands_results_file(tmp_path, capsys):
    """Stop 81: `lm eval --results` and `translate eval --results` appended to a `classify` results file, whose
    grid then failed to resume (`record 3 is not a classification result`)."""
    from complexorder.checkpoint import check_results_file
    from complexorder.experiments.language_model import evaluate_checkpoint

    out = tiny_lm_run(tmp_path)
    foreign = tmp_path / "classify.jsonl"
    text = json.dumps({"dataset": "TREC", "model": "cnn", "test_accuracy": 0.9}) + "\n"
    write(foreign, text)
    message = (f"{foreign} holds another command's results (its first record has no 'event' key, which lm train's "
               "and lm eval's records have); appending would break that command's reading of it — choose another file")
    with pytest.raises(ValueError, match="^" + re.escape(f"results (--results) {message}") + "$"):
        evaluate_checkpoint(out / "last.pt", tmp_path / "corpus", results=foreign, progress=False)
    assert main(["lm", "eval", "--checkpoint", str(out / "last.pt"), "--corpus", str(tmp_path / "corpus"),
                 "--results", str(foreign), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"complexorder: error: --results {message}\n"
    assert foreign.read_text() == text
    with pytest.raises(ValueError, match=r"first record has no 'bleu_tok_lc' key, which translate eval's records have"):
        check_results_file(foreign, "--results", record=("bleu_tok_lc", "translate eval's records"))
    # its own records, and a run's results.jsonl (training records first), are appended to as before
    evaluate_checkpoint(out / "last.pt", tmp_path / "corpus", results=out / "results.jsonl", progress=False)
    assert json.loads((out / "results.jsonl").read_text().splitlines()[-1])["event"] == "eval"


def test_lengths_and_sizes_too_large_for_torch_are_one_line_errors(tmp_path, capsys):
    """Stop 81: `lm eval --mem-len 99999999999999999999` (and --clamp-len, and model.clamp_len) ended in an
    OverflowError traceback; `vectors train --dim 99999999999999999999` read the corpus, then said "Maximum allowed
    dimension exceeded", naming no option."""
    from complexorder.data.vectors import check_word2vec_settings
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig

    huge = 10**20
    out = tiny_lm_run(tmp_path)
    args = ["lm", "eval", "--checkpoint", str(out / "last.pt"), "--corpus", str(tmp_path / "corpus"), "--no-progress"]
    for option, where in (("--mem-len", "evaluation mem_len (--mem-len)"),
                          ("--clamp-len", "evaluation clamp_len (--clamp-len)")):
        assert main(args + [option, str(huge)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"complexorder: error: {where} must be at most 2,147,483,647") and err.count("\n") == 1
    small = dict(vocab_size=27, n_layer=1, n_head=2, d_model=16, d_head=8, d_inner=32)
    for key in ("mem_len", "clamp_len"):
        with pytest.raises(ValueError, match=rf"^model.{key} must be at most 2,147,483,647"):
            TransformerXL(TransformerXLConfig(**small, **{key: huge}))
    TransformerXL(TransformerXLConfig(**small, mem_len=2**31 - 1, clamp_len=2**31 - 1))  # the bound itself is taken
    with pytest.raises(ValueError, match=r"^--dim must be at most 2,147,483,647, got 100,000,000,000,000,000,000$"):
        check_word2vec_settings(huge, 5, 1, lambda name: "--" + name.replace("_", "-"))
    assert main(["vectors", "train", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "v.txt"),
                 "--dim", str(huge)]) == 2  # before any corpus is looked for
    assert "--dim must be at most 2,147,483,647" in capsys.readouterr().err
