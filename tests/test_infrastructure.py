"""Configs, checkpoints, result logs and downloads: bad input is a clear one-line error, nothing is lost."""

import os
import re
import shutil
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from complexorder.checkpoint import (append_jsonl, atomic_write_text, check_writable, load_checkpoint, read_jsonl,
                                    save_checkpoint)
from complexorder.config import apply_overrides, config_to_dict, load_config
from complexorder.data.download import fetch
from complexorder.data.paths import resolve_data_dir


@dataclass
class Inner:
    width: int = 4


@dataclass
class Cfg:
    name: str = "x"
    lr: float = 1e-3
    epochs: int = 2
    sizes: tuple[int, ...] = (3, 4, 5)
    mode: str | None = None
    inner: Inner = field(default_factory=Inner)


def test_config_loads_toml_and_rejects_unknown_keys(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('name = "y"\nlr = 1\nsizes = [1, 2]\n[inner]\nwidth = 8\n')
    cfg = load_config(f, Cfg)
    assert cfg == Cfg(name="y", lr=1.0, sizes=(1, 2), inner=Inner(8))
    assert config_to_dict(cfg)["sizes"] == [1, 2]
    f.write_text("epoch = 3\n")
    with pytest.raises(ValueError, match=r"c.toml: unknown key 'epoch'; valid keys: name, lr, epochs, sizes, mode, inner"):
        load_config(f, Cfg)
    f.write_text('epochs = "3"\n')
    with pytest.raises(ValueError, match=r"c.toml.epochs: expected an integer, got '3'"):
        load_config(f, Cfg)
    f.write_text("epochs = \n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        load_config(f, Cfg)
    with pytest.raises(FileNotFoundError, match="config file .*nope.toml does not exist"):
        load_config(tmp_path / "nope.toml", Cfg)
    assert apply_overrides(cfg, {"epochs": 9, "lr": None}).epochs == 9


def test_checkpoints_round_trip_and_reject_foreign_files(tmp_path):
    path = tmp_path / "m.pt"
    save_checkpoint(path, "classifier", {"w": torch.ones(2)}, {"a": 1}, vocab=["<pad>", "x"])
    ck = load_checkpoint(path, "classifier")
    assert torch.equal(ck["model_state"]["w"], torch.ones(2)) and ck["vocab"] == ["<pad>", "x"]
    with pytest.raises(ValueError, match=r"holds a 'classifier' model, expected 'translation'"):
        load_checkpoint(path, "translation")
    torch.save({"state": 1}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="is not a complexorder checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(ValueError) as info:
        load_checkpoint(tmp_path / "bad.pt")
    # torch's own error for a text file is KeyError: '110': the message names what the file is instead
    assert str(info.value) == (f"checkpoint {tmp_path / 'bad.pt'} could not be read (corrupted or not a PyTorch file): "
                               "it was not written by torch.save (it starts with b'not a ch', neither a zip archive "
                               "nor a pickle)")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(ValueError) as info:
        load_checkpoint(tmp_path / "empty.pt")
    assert str(info.value) == (f"checkpoint {tmp_path / 'empty.pt'} could not be read (corrupted or not a PyTorch "
                               "file): the file is empty")
    # a pickle of something other than tensors: the unpickler's reason, never torch's advice to load it
    # with weights_only=False; a truncated checkpoint: the first sentence of torch's reason, one line
    import pickle
    (tmp_path / "pickle.pt").write_bytes(pickle.dumps(object, protocol=2))
    with pytest.raises(ValueError) as info:
        load_checkpoint(tmp_path / "pickle.pt")
    message = str(info.value)
    assert message.startswith(f"checkpoint {tmp_path / 'pickle.pt'} could not be read (corrupted or not a PyTorch "
                              "file): a weights-only load refuses its contents (")
    assert message.endswith("); complexorder checkpoints hold tensors and plain values only")
    assert "weights_only" not in message and "\n" not in message
    assert "add_safe_globals" not in message and "was not an allowed global by default)" in message
    data = path.read_bytes()
    # a truncated zip, cut anywhere (torch says "failed finding central directory", or a bare OSError "Invalid
    # argument", depending on where): said as such, in one line
    for cut in (len(data) // 2, 100, len(data) - 10):
        (tmp_path / "truncated.pt").write_bytes(data[:cut])
        with pytest.raises(ValueError) as info:
            load_checkpoint(tmp_path / "truncated.pt")
        assert str(info.value) == (f"checkpoint {tmp_path / 'truncated.pt'} could not be read (corrupted or not a "
                                   f"PyTorch file): its zip archive is incomplete (the file was cut short, e.g. by an "
                                   f"interrupted copy; complexorder writes checkpoints atomically, so a run's own file "
                                   f"is whole)"), cut
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    # a run directory given for a checkpoint in it names the files there
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(IsADirectoryError, match=rf"^checkpoint {run} is a directory, expected a checkpoint file "
                                                r"\(it holds no .pt file\)$"):
        load_checkpoint(run)
    (run / "best.pt").write_bytes(b"")
    (run / "last.pt").write_bytes(b"")
    with pytest.raises(IsADirectoryError, match=rf"^checkpoint {run} is a directory, expected a checkpoint file such "
                                                rf"as {run / 'best.pt'} \(it holds best.pt, last.pt\)$"):
        load_checkpoint(run)
    shutil.rmtree(run)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_jsonl_appends_and_skips_a_truncated_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    append_jsonl(path, {"a": 1})
    append_jsonl(path, {"a": 2})
    with open(path, "a") as fh:
        fh.write('{"a": 3')  # an interrupted write
    warnings = []
    assert read_jsonl(path, warn=warnings.append) == [{"a": 1}, {"a": 2}]
    assert "malformed" in warnings[0]
    append_jsonl(path, {"a": 4})  # the next record starts on a fresh line and survives
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}, {"a": 4}]


def test_atomic_write_to_an_unwritable_place(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(PermissionError, match=r"cannot create directory .*a-file for .*x.txt"):
        atomic_write_text(blocker / "x.txt", "hi")


@pytest.mark.parametrize("fail_in, error", [("fsync", OSError("disk full")), ("replace", KeyboardInterrupt())])
def test_an_interrupted_atomic_write_keeps_the_old_file_and_leaves_no_temporary_file(fail_in, error, tmp_path,
                                                                                        monkeypatch):
    import complexorder.checkpoint as checkpoint

    target = tmp_path / "results.jsonl"
    target.write_text("finished result\n")

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(checkpoint.os, fail_in, fail)
    with pytest.raises(type(error)):
        atomic_write_text(target, "half of a new file")
    monkeypatch.undo()
    assert target.read_text() == "finished result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]  # the .tmp file was removed


def test_a_checkpoint_with_changed_bytes_fails_its_crc_check_instead_of_loading_wrong_weights(tmp_path):
    save_checkpoint(tmp_path / "ok.pt", "classifier", {"w": torch.arange(4096.0)}, {"a": 1})
    data = bytearray((tmp_path / "ok.pt").read_bytes())
    at = data.index(torch.arange(4096.0).numpy().tobytes()[4000:4016])  # inside the tensor's bytes
    data[at] ^= 0x40  # one bit: torch's own reader would load 4096 weights, one of them wrong
    (tmp_path / "bad.pt").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"^checkpoint .*bad\.pt is corrupted: its entry 'archive/data/0' fails its CRC "
                                         r"check \(the bytes changed after torch.save wrote them, e.g. on a faulty "
                                         r"disk or copy\)$"):
        load_checkpoint(tmp_path / "bad.pt")
    torch.testing.assert_close(load_checkpoint(tmp_path / "ok.pt")["model_state"]["w"], torch.arange(4096.0))


def test_writes_follow_a_symbolic_link_and_never_replace_a_pipe(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    atomic_write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and target.read_text() == "new"
    fifo, received = tmp_path / "pipe", []
    os.mkfifo(fifo)
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert received == [b"through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    append_jsonl(fifo, {"a": 1})  # no seek, no fsync on a pipe (fsync of /dev/null raised EINVAL)
    reader.join(timeout=30)
    assert received[1] == b'{"a": 1}\n' and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_read_jsonl_names_a_file_that_is_not_text(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(b"PK\x03\x04\xff\xfe binary")
    with pytest.raises(ValueError, match=r"model.pt is not a JSON-lines results file \(not UTF-8 text: .* at byte 4\)"):
        read_jsonl(path)


def test_check_writable_fails_before_any_work_naming_the_option(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(PermissionError, match=r"^--out: cannot create directory .*a-file for .*a-file/r.md: "
                                              r".*a-file is a file$"):
        check_writable(blocker / "r.md", "--out")
    with pytest.raises(PermissionError, match=r"^--figure: .*a-file is a file$"):
        check_writable(blocker / "sub" / "f.png", "--figure")
    with pytest.raises(PermissionError, match=r"^--out: .* is a directory, expected a file path$"):
        check_writable(tmp_path, "--out")
    with pytest.raises(PermissionError, match=r"^--run-dir: cannot create directory .*a-file/run for its files"):
        check_writable(blocker / "run", "--run-dir", directory=True)
    check_writable(tmp_path / "new" / "r.md", "--out")
    check_writable(tmp_path / "runs" / "a", "--run-dir", directory=True)
    # creates nothing: a command that fails later for another reason leaves no empty directory behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    atomic_write_text(tmp_path / "new" / "r.md", "x")  # the writer makes the directory
    assert (tmp_path / "new" / "r.md").read_text() == "x"


def test_check_writable_names_a_directory_it_may_not_write(tmp_path, monkeypatch):
    import complexorder.checkpoint as ck

    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(ck.os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))  # as non-root
    with pytest.raises(PermissionError, match=rf"^--out: cannot create directory {locked}/sub for {locked}/sub/r.md: "
                                              rf"directory {locked} is not writable$"):
        check_writable(locked / "sub" / "r.md", "--out")
    with pytest.raises(PermissionError, match=rf"^--run-dir: cannot write its files: directory {locked} is not writable$"):
        check_writable(locked, "--run-dir", directory=True)


def test_fetch_refuses_an_unwritable_destination_before_the_network(tmp_path, monkeypatch):
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("the network was touched"))
    (tmp_path / "file").write_text("")
    with pytest.raises(PermissionError, match=rf"^download destination: cannot create directory {tmp_path}/file/sub "
                                              rf"for {tmp_path}/file/sub/x.gz: {tmp_path}/file is a file$"):
        fetch("http://127.0.0.1:9/x.gz", tmp_path / "file" / "sub" / "x.gz")


@pytest.mark.parametrize("argv", [["download", "--datasets", "MR"], ["translate", "download"],
                                  ["lm", "prepare-text8", "--download"]])
def test_download_commands_name_a_data_dir_that_is_a_file_before_the_network(argv, tmp_path, monkeypatch, capsys):
    """`download --data-dir FILE` went to the network first and only failed when it came to write."""
    import urllib.request

    from complexorder.cli import main

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("the network was touched"))
    (tmp_path / "file").write_text("")
    assert main(argv + ["--data-dir", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("complexorder: error: --data-dir: cannot create directory ") and err.endswith(
        f": {tmp_path / 'file'} is a file"), err


@pytest.mark.parametrize("argv", [["download", "--datasets", "MR"], ["translate", "download"]])
def test_download_commands_need_no_write_access_when_the_data_is_present(argv, shared_data, monkeypatch, capsys):
    """A read-only data directory that holds every file (../shared/data is one) is not an error."""
    import urllib.request

    import complexorder.checkpoint as ck
    from complexorder.cli import main

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("the network was touched"))
    monkeypatch.setattr(ck.os, "access", lambda p, mode: False)  # nothing writable, as for a non-root user
    assert main(argv + ["--data-dir", str(shared_data)]) == 0
    assert "already present" in capsys.readouterr().out or argv[0] == "translate"


def test_a_broken_symbolic_link_on_an_output_path_is_named_before_any_work(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(PermissionError, match=rf"^--out: cannot create directory {tmp_path}/link/sub for "
                                              rf"{tmp_path}/link/sub/t.md: {tmp_path}/link is a broken symbolic link$"):
        check_writable(tmp_path / "link" / "sub" / "t.md", "--out")


def test_fetch_offline_is_a_clear_error(tmp_path):
    with pytest.raises(ConnectionError, match=r"cannot download http://127.0.0.1:9/x.tar.gz .*offline"):
        fetch("http://127.0.0.1:9/x.tar.gz", tmp_path / "x.tar.gz", timeout=2)


def test_data_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPLEXORDER_DATA", str(tmp_path / "env"))
    assert resolve_data_dir("/x/y") == Path("/x/y")  # the argument wins over $COMPLEXORDER_DATA
    assert resolve_data_dir("~/d") == Path.home() / "d"
    assert str(resolve_data_dir(None)).endswith("env")
    monkeypatch.delenv("COMPLEXORDER_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert resolve_data_dir(None) == tmp_path / "complexorder" / "data"


def test_set_threads_takes_the_option_then_the_environment(monkeypatch, capsys):
    import torch

    from complexorder.environment import set_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        set_threads(1)  # the option wins over the environment
        assert torch.get_num_threads() == 1
        set_threads(None)  # no option: the environment
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        monkeypatch.setenv("OMP_NUM_THREADS", "many")
        set_threads(None)  # neither: left as it is, and said (stop 75: ignored without a word)
        assert torch.get_num_threads() == 1
        assert capsys.readouterr().err == ("complexorder: note: $OMP_NUM_THREADS='many' is not a positive number of "
                                           "threads; torch keeps its own thread count (one per core)\n")
        monkeypatch.setenv("OMP_NUM_THREADS", "2,1")  # OpenMP's nested form: the outer level's count
        set_threads(None)
        assert torch.get_num_threads() == 2 and capsys.readouterr().err == ""
        torch.set_num_threads(1)
        with pytest.raises(ValueError, match=r"^--threads: expected a positive number of threads, got 0$"):
            set_threads(0)
        with pytest.raises(ValueError, match=r"^--threads: at most 1024 threads, got 100000 \(this machine has "):
            set_threads(100000)  # OpenMP crashed the process (SIGSEGV) at this count
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("argv", [["demo", "--threads", "-1"],
                                  ["classify", "--config", "table2", "--dry-run", "--threads", "-1"]])
def test_threads_option_of_demo_and_classify_is_checked_before_any_work(argv, capsys):
    from complexorder.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: --threads: expected a positive number of threads, got -1")


def test_merge_overrides_checks_each_key_against_the_config_class_and_the_file():
    from complexorder.config import merge_overrides
    from complexorder.experiments.language_model import LMConfig

    data = {"train": {"lr": 1e-3}}
    assert merge_overrides(data, {"train.lr": 0.01, "model.n_layer": 2}, LMConfig) == {
        "train": {"lr": 0.01}, "model": {"n_layer": 2}}
    with pytest.raises(ValueError, match=r"^--set train.lr: the config file's 'train' is not a section$"):
        merge_overrides({"train": 3}, {"train.lr": 0.01}, LMConfig)
    with pytest.raises(ValueError, match=r"^--set train.lrr: unknown key 'lrr' in \[train\]; valid keys: "):
        merge_overrides({}, {"train.lrr": 0.01}, LMConfig)


def test_a_broken_cached_archive_is_named_and_removed_so_the_next_run_downloads_it_again(tmp_path):
    from complexorder.data.sources import download_dataset

    cache = tmp_path / "downloads"
    cache.mkdir()
    (cache / "rt-polaritydata.tar.gz").write_bytes(b"<html>proxy error</html>")  # kept by an earlier attempt
    logs = []
    with pytest.raises(ValueError, match=r"^\S+/downloads/rt-polaritydata.tar.gz, the local copy of https://\S+/"
                                         r"rt-polaritydata.tar.gz \(nothing was downloaded\), is not a readable "
                                         r"archive \(.*\); removed it, so the next run downloads it again \(or copy a "
                                         r"good archive there\)$"):  # stop 75: it blamed the address
        download_dataset("MR", tmp_path, log=logs.append)
    assert list(cache.iterdir()) == []
    assert logs == [f"using the local copy {cache / 'rt-polaritydata.tar.gz'} of "
                    "https://www.cs.cornell.edu/people/pabo/movie-review-data/rt-polaritydata.tar.gz"]


def test_drop_records_after_keeps_every_other_line_as_it_was(tmp_path):
    from complexorder.checkpoint import drop_records_after

    log = tmp_path / "log.jsonl"
    assert drop_records_after(log, 3) == 0 and not log.exists()  # no log yet: nothing to do
    lines = ['{"step": 1, "x": 1.50}\n', '{"step": 5}\n', '{"event": "eval"}\n', "null\n", '[1, 2]\n',
             '{"step": 4, "event": "valid"}\n', '{"step": 2, "trunc']
    log.write_text("".join(lines))
    assert drop_records_after(log, 3) == 2
    assert log.read_text() == "".join(lines[:1] + lines[2:5] + lines[6:])
    assert drop_records_after(log, 3) == 0
    # an evaluation's record (lm eval --results, with its checkpoint's step) is no training's to write again: kept;
    # line ends are kept byte for byte
    log.write_bytes(b'{"step": 1}\r\n{"event": "eval", "step": 12}\n{"event": "valid", "step": 12}\n')
    assert drop_records_after(log, 10) == 1
    assert log.read_bytes() == b'{"step": 1}\r\n{"event": "eval", "step": 12}\n'


def test_drop_records_after_names_a_file_it_cannot_rewrite(tmp_path, monkeypatch):
    import complexorder.checkpoint as checkpoint

    log = tmp_path / "results.jsonl"
    log.write_text('{"step": 9}\n')

    def refuse(*args, **kwargs):  # what a read-only file gives a user other than root
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(checkpoint.os, "open", refuse)
    with pytest.raises(PermissionError, match=r"^cannot rewrite \S+results.jsonl \(to drop the records after step 3\): "
                                              r"the file is not writable$"):
        checkpoint.drop_records_after(log, 3)
    monkeypatch.undo()
    assert log.read_text() == '{"step": 9}\n'


def _wait_for_a_blocked_flock(path: Path, seconds: float = 10.0) -> None:
    """Return once another thread waits for a ``flock`` on ``path``'s file (a ``->`` line of /proc/locks)."""
    import time

    inode = os.stat(path).st_ino
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields and "FLOCK" in fields and any(f.endswith(f":{inode}") for f in fields):
                return
        time.sleep(0.01)
    raise AssertionError(f"no writer blocked on {path} within {seconds} s")


needs_proc_locks = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")


def _while_it_waits_for_the_lock(log: Path, call, meanwhile):
    """Hold the lock on ``log``, run ``call()`` in a thread until it waits for that lock, then ``meanwhile(held)``
    (``held``: the locked file, open for appending), release the lock, and return what ``call`` returned."""
    import fcntl

    returned = []
    with open(log, "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        thread = threading.Thread(target=lambda: returned.append(call()))
        thread.start()
        _wait_for_a_blocked_flock(log)
        meanwhile(held)
    thread.join(10)
    assert not thread.is_alive() and len(returned) == 1
    return returned[0]


@needs_proc_locks
def test_an_append_waiting_while_the_log_is_rewritten_lands_in_the_new_file(tmp_path):
    """lm eval --results appending while lm train --resume rewrites results.jsonl: the waiting append must go to
    the file the path names after the rewrite, not to the replaced one (the record was lost before)."""
    log = tmp_path / "results.jsonl"
    log.write_text('{"step": 1}\n{"step": 9}\n')
    # this test plays the rewriting training: it replaces the file while the append waits
    _while_it_waits_for_the_lock(log, lambda: append_jsonl(log, {"event": "eval"}),
                                 lambda held: atomic_write_text(log, '{"step": 1}\n'))
    assert log.read_text() == '{"step": 1}\n{"event": "eval"}\n'


@needs_proc_locks
def test_drop_records_after_reads_the_log_only_once_a_concurrent_append_is_done(tmp_path):
    from complexorder.checkpoint import drop_records_after

    log = tmp_path / "results.jsonl"
    log.write_text('{"step": 1}\n{"step": 9}\n')
    # this test plays lm eval, appending under the lock after the rewriter asked for the file
    assert _while_it_waits_for_the_lock(log, lambda: drop_records_after(log, 3),
                                        lambda held: held.write(b'{"event": "eval"}\n')) == 1
    assert log.read_text() == '{"step": 1}\n{"event": "eval"}\n'


@needs_proc_locks
def test_drop_records_after_leaves_a_log_removed_while_it_waited_removed(tmp_path):
    from complexorder.checkpoint import drop_records_after

    log = tmp_path / "results.jsonl"
    log.write_text('{"step": 9}\n')
    assert _while_it_waits_for_the_lock(log, lambda: drop_records_after(log, 3), lambda held: log.unlink()) == 0
    assert not log.exists()


def test_the_default_device_comes_from_the_environment_and_a_bad_value_is_named(monkeypatch):
    import torch

    from complexorder.environment import resolve_device

    monkeypatch.setenv("COMPLEXORDER_DEVICE", "cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setenv("COMPLEXORDER_DEVICE", "tpu")
    with pytest.raises(ValueError, match=r"^\$COMPLEXORDER_DEVICE: expected auto, cpu, cuda or cuda:N, got 'tpu'$"):
        resolve_device(None)
    assert resolve_device("cpu") == torch.device("cpu")  # an explicit --device wins over the environment


def test_writing_a_file_where_a_directory_is_is_a_one_line_error(tmp_path, capsys):
    """atomic_write_text / append_jsonl onto a directory were bare IsADirectoryError tracebacks (the option-level
    checks name the option; this is the guard behind every other writer)."""
    from complexorder.cli import main

    with pytest.raises(PermissionError, match=rf"^cannot write {tmp_path}: it is a directory, expected a file path$"):
        atomic_write_text(tmp_path, "x")
    with pytest.raises(PermissionError, match=rf"^cannot write {tmp_path}: it is a directory, expected a file path$"):
        append_jsonl(tmp_path, {"a": 1})
    assert main(["demo", "--embeddings", " , "]) == 2  # used to print an empty table
    assert capsys.readouterr().err.strip() == (
        "complexorder: error: --embeddings: ' , ' names nothing; valid names: none, pe, tpe, complex-vanilla, complex-order")


def test_every_option_of_every_command_says_what_it_does_in_its_help():
    import argparse

    from complexorder.cli import COMMANDS, build_parser

    bare, commands = [], set()

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                commands.add(path[0])
                if not (action.help or "").strip():
                    bare.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser([]), [])
    assert commands == set(COMMANDS)  # every command was registered and walked
    assert bare == []


def test_config_values_of_the_wrong_type_are_one_line_errors_naming_the_key():
    from typing import Literal

    from complexorder.config import config_from_dict

    @dataclass
    class Inner:
        size: int = 1

    @dataclass
    class Settings:
        name: str = "x"
        flag: bool = False
        mode: Literal["a", "b"] = "a"
        widths: list[int] = field(default_factory=list)
        extra: dict = field(default_factory=dict)
        inner: Inner = field(default_factory=Inner)
        limit: int | None = None
        ratio: float = 0.5
        names: list = field(default_factory=list)
        pair: tuple = ()

    ok = config_from_dict({"widths": [1, 2], "extra": {"k": 1}, "inner": {"size": 3}, "limit": None, "ratio": 2,
                           "names": ["a", 1], "pair": [1, "b"]}, Settings)
    assert ok == Settings(widths=[1, 2], extra={"k": 1}, inner=Inner(3), limit=None, ratio=2.0, names=["a", 1],
                          pair=(1, "b"))
    assert isinstance(ok.ratio, float) and isinstance(ok.pair, tuple) and isinstance(ok.names, list)
    for data, message in (
            ({"name": 3}, "config.name: expected a string, got 3"),
            ({"flag": 1}, "config.flag: expected true or false, got 1"),
            ({"mode": "c"}, "config.mode: must be one of 'a', 'b', got 'c'"),
            ({"widths": 3}, "config.widths: expected a list, got 3"),
            ({"widths": [1, "2"]}, "config.widths[1]: expected an integer, got '2'"),
            ({"extra": [1]}, "config.extra: expected a table, got [1]"),
            ({"inner": 2}, "config.inner: expected a table, got 2"),
            ({"inner": {"size": True}}, "config.inner.size: expected an integer, got True"),
            ({"limit": "ten"}, "config.limit: expected an integer, got 'ten'"),
            ({"ratio": "x"}, "config.ratio: expected a number, got 'x'"),
            ({"ratio": True}, "config.ratio: expected a number, got True"),
            ({"names": "a"}, "config.names: expected a list, got 'a'"),
            ({"pair": {"a": 1}}, "config.pair: expected a list, got {'a': 1}")):
        with pytest.raises(ValueError) as info:
            config_from_dict(data, Settings)
        assert str(info.value) == message
    with pytest.raises(ValueError, match=r"^config: expected a table of settings, got list$"):
        config_from_dict([1], Settings)

    @dataclass
    class Required:
        needed: int

    with pytest.raises(ValueError, match=r"^config: missing key 'needed'; it is required \(keys: needed\)$"):
        config_from_dict({}, Required)


def test_ctrl_c_says_finished_results_are_kept_and_exits_130(monkeypatch, capsys):
    import complexorder.experiments.demo_cli as demo_cli
    from complexorder.cli import main

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo_cli, "run", interrupted)
    assert main(["demo"]) == 130
    assert capsys.readouterr().err == "complexorder: interrupted; finished results are kept\n"


def test_a_failed_write_to_standard_output_is_named_as_such(monkeypatch, capsys):
    """A full disk behind `> file` raises an OSError without a file name; the error line used to read only
    "complexorder: error: No space left on device", naming nothing."""
    import errno
    import sys

    import complexorder.experiments.demo_cli as demo_cli
    from complexorder.cli import main

    class FullDisk:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

    def prints(args):
        print("accuracy 1.000")

    monkeypatch.setattr(demo_cli, "run", prints)
    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == "complexorder: error: standard output: No space left on device\n"
    assert isinstance(sys.stdout, FullDisk)  # the command's own stream is put back


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["demo", "--help"], ["lm", "train", "--help"]])
def test_help_that_cannot_be_written_is_an_error_not_a_success(monkeypatch, capsys, argv):
    """Stop 84: argparse swallows the OSError of a failed write (`complexorder --help > /dev/full`), and the command
    exited 0 with nothing written; now it says so and exits 2. Writable, it still exits 0."""
    import errno
    import sys

    from complexorder.cli import main

    class FullDisk:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", FullDisk())
    with pytest.raises(SystemExit) as failed:
        main(argv)
    assert failed.value.code == 2
    assert capsys.readouterr().err == "complexorder: error: standard output: No space left on device\n"
    assert isinstance(sys.stdout, FullDisk)  # the command's own stream is put back
    monkeypatch.undo()
    with pytest.raises(SystemExit) as written:
        main(argv)
    out = capsys.readouterr().out
    assert written.value.code == 0 and (out.startswith("usage: complexorder") or out.startswith("complexorder "))


def test_a_reader_that_goes_away_ends_the_command_quietly_with_the_sigpipe_status(shared_data, tmp_path):
    import subprocess
    import sys

    # `true` exits without reading, long before the command (which first imports torch) writes its list of units
    script = (f"set -o pipefail; {sys.executable} -m complexorder.cli classify --dry-run --data-dir {shared_data} "
              f"--results {tmp_path / 'none.jsonl'} | true")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    # no BrokenPipeError traceback: the dry run's summary line only
    assert done.returncode == 141 and done.stderr == (f"complexorder: table2: 1040 units, 0 already in "
                                                      f"{tmp_path / 'none.jsonl'}, 1040 to run\n")


def test_download_reads_the_upstream_archive_layouts_and_checks_every_file(shared_data, tmp_path, monkeypatch,
                                                                           capsys):
    """The archives `complexorder download` fetches, rebuilt in their upstream layout from the reference files and
    left in the download cache (so no network): tar.gz members, zip members, plain files and a header to strip."""
    import io
    import tarfile
    import zipfile

    from complexorder.data.download import sha256_of
    from complexorder.data.sources import download_dataset

    ref = shared_data / "classification"
    cache = tmp_path / "downloads"
    cache.mkdir()
    with tarfile.open(cache / "rt-polaritydata.tar.gz", "w:gz") as tf:
        for name in ("rt-polarity.pos", "rt-polarity.neg"):
            tf.add(ref / "MR" / name, arcname=f"rt-polaritydata/{name}")
    with zipfile.ZipFile(cache / "datasmall_NB_ACL12.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in ("custrev.pos", "custrev.neg"):
            zf.write(ref / "CR" / name, f"data/customerr/{name}")
    with zipfile.ZipFile(cache / "SST-2.zip", "w") as zf:
        zf.writestr("SST-2/train.tsv", b"sentence\tlabel\n" + (ref / "SST2" / "phrases.train.tsv").read_bytes())
    for name in ("stsa.binary.dev", "stsa.binary.test"):
        (cache / name).write_bytes((ref / "SST2" / name).read_bytes())
    logs = []
    for name, files in (("MR", ("rt-polarity.pos", "rt-polarity.neg")), ("CR", ("custrev.pos", "custrev.neg")),
                        ("SST2", ("stsa.binary.dev", "stsa.binary.test", "phrases.train.tsv"))):
        written = download_dataset(name, tmp_path, log=logs.append)
        assert sorted(p.name for p in written) == sorted(files)
        for f in files:  # byte for byte the reference files, header stripped
            assert sha256_of(tmp_path / "classification" / name / f) == sha256_of(ref / name / f)
    assert download_dataset("MR", tmp_path, log=logs.append) == []  # present and valid: kept, nothing fetched
    assert len(logs) == 5  # one "downloading URL" line per source read
    # archives with intact headers and damaged compressed bodies (zlib errors, not only "not an archive")
    for name, archive in (("CR", "datasmall_NB_ACL12.zip"), ("MR", "rt-polaritydata.tar.gz")):
        (tmp_path / "classification" / name).rename(tmp_path / f"{name}-done")
        blob = bytearray((cache / archive).read_bytes())
        blob[200:260] = bytes(b ^ 0x5A for b in blob[200:260])
        (cache / archive).write_bytes(bytes(blob))
        with pytest.raises(ValueError, match=rf"{archive}, the local copy of .* is not a readable archive \(.*\); "
                                             r"removed it, so the next run downloads it again \(or copy a good "
                                             r"archive there\)$"):
            download_dataset(name, tmp_path, log=lambda *_: None)
        assert not (cache / archive).exists()
        (tmp_path / f"{name}-done").rename(tmp_path / "classification" / name)
    # a member whose bytes differ from the reference is refused and not saved
    (tmp_path / "classification" / "MR" / "rt-polarity.neg").unlink()
    with tarfile.open(cache / "rt-polaritydata.tar.gz", "w:gz") as tf:
        for name in ("rt-polarity.pos", "rt-polarity.neg"):
            data = (ref / "MR" / name).read_bytes().replace(b"the ", b"teh ", 1)
            info = tarfile.TarInfo(f"rt-polaritydata/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match=r"^checksum mismatch for MR/rt-polarity.neg from https://www.cs.cornell.edu/"
                                         r"people/pabo/movie-review-data/rt-polaritydata.tar.gz: expected sha256 \w+, "
                                         r"got \w+; not saved \(the archive was read from .*downloads/rt-polaritydata.tar.gz: delete it "
                                         r"to download it "
                                         r"again, or use --skip-checksum to keep the file\)$"):
        download_dataset("MR", tmp_path, log=lambda *_: None)
    assert not (tmp_path / "classification" / "MR" / "rt-polarity.neg").exists()
    kept = download_dataset("MR", tmp_path, verify=False, log=lambda *_: None)
    assert [p.name for p in kept] == ["rt-polarity.neg"] and b"teh " in kept[0].read_bytes()
    # stop 78: a file present whose digest differs (the user's edit) was replaced by the download without a word
    edited = tmp_path / "classification" / "CR" / "custrev.pos"
    edited.write_bytes(edited.read_bytes() + b"my own line\n")
    mine = edited.read_bytes()
    with pytest.raises(ValueError, match=rf"^{re.escape(str(edited))} exists but differs from the reference \(sha256 "
                                         r"\w{12}…, expected \w{12}…\); move it away to download it again, or pass "
                                         r"--skip-checksum to keep it as it is$"):
        download_dataset("CR", tmp_path, log=lambda *_: None)
    assert download_dataset("CR", tmp_path, verify=False, log=lambda *_: None) == [] and edited.read_bytes() == mine
    # stop 81: `download` checked data set by data set, so an earlier set's missing files were fetched (offline: an
    # error about the network) before the edited file of a later set was named
    from complexorder.cli import main
    from complexorder.data import sources

    fetched = []
    monkeypatch.setattr(sources, "fetch", lambda url, *a, **k: fetched.append(url) or (_ for _ in ()).throw(
        ConnectionError(f"cannot download {url}")))
    (tmp_path / "classification" / "MR" / "rt-polarity.neg").unlink()
    assert main(["download", "--datasets", "MR,CR", "--data-dir", str(tmp_path), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"complexorder: error: {edited} exists but differs from the reference")
    assert fetched == [] and edited.read_bytes() == mine


def test_device_names_torch_knows_but_we_do_not_run_on_and_absent_gpus_are_named(monkeypatch):
    from complexorder.environment import resolve_device

    monkeypatch.delenv("COMPLEXORDER_DEVICE", raising=False)
    with pytest.raises(ValueError, match=r"^--device: expected auto, cpu, cuda or cuda:N, got 'meta'$"):
        resolve_device("meta")  # a valid torch device, not one to train on
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a one-GPU machine
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    with pytest.raises(ValueError, match=r"^--device cuda:3: only 1 CUDA device\(s\) visible$"):
        resolve_device("cuda:3")


def test_a_bare_cpu_random_state_from_an_older_checkpoint_is_restored():
    from complexorder.environment import rng_state, set_rng_state

    torch.manual_seed(3)
    bare = torch.get_rng_state()  # what checkpoints held before rng_state() returned a dict
    expected = torch.rand(3)
    torch.manual_seed(4)
    set_rng_state(bare, torch.device("cpu"))
    assert torch.equal(torch.rand(3), expected)
    state = rng_state(torch.device("cpu"))
    assert set(state) == {"cpu"}
    after = torch.rand(3)
    set_rng_state(state, torch.device("cpu"))
    assert torch.equal(torch.rand(3), after)


@pytest.mark.parametrize("command", [["classify", "--data-dir", "no-data"], ["ablate", "--data-dir", "no-data"],
                                     ["translate", "train", "--data-dir", "no-data"],
                                     ["lm", "train", "--corpus", "no-data", "--out", "out"]])
def test_a_config_file_without_settings_is_an_error_not_the_default_run(tmp_path, capsys, monkeypatch, command):
    """Stop 71: an empty config file (or one of comments only) ran the whole default grid or model: hours of work
    nobody asked for, when the file was most likely emptied or saved by mistake."""
    from complexorder.cli import main

    empty = tmp_path / "mine.toml"
    empty.write_text("# to do\n\n")
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--config", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"complexorder: error: config file {empty} holds no settings; write the settings to change, or "
        f'extends = "NAME" to start from a built-in config')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml"]  # nothing was started or written


def test_check_writable_tries_a_directory_that_os_access_calls_writable(tmp_path, monkeypatch):
    # os.access answers from the permission bits and says yes to root almost everywhere; /proc and /sys then
    # refuse the file only when the results are written, after the training. Trying to create a file catches it.
    import errno
    import tempfile

    import complexorder.checkpoint as ck

    refusing = tmp_path / "refusing"
    refusing.mkdir()
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if Path(dir) == refusing:
            raise OSError(errno.ENOENT, "No such file or directory")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(ck.tempfile, "mkstemp", mkstemp)
    with pytest.raises(PermissionError, match=rf"^--results: cannot write {refusing}/r.jsonl: directory {refusing} "
                                              r"does not accept new files \(No such file or directory\)$"):
        check_writable(refusing / "r.jsonl", "--results")
    with pytest.raises(PermissionError, match=rf"^--out: cannot create directory {refusing}/sub for "
                                              rf"{refusing}/sub/t.md: directory {refusing} does not accept new files"):
        check_writable(refusing / "sub" / "t.md", "--out")
    check_writable(tmp_path / "r.jsonl", "--results")  # an ordinary directory passes, and the probe is removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refusing"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_check_writable_refuses_proc_also_as_root(tmp_path):
    why = "does not accept new files" if os.geteuid() == 0 else "is not writable"  # root: only the probe finds it
    with pytest.raises(PermissionError, match=rf"^--results: cannot write /proc/complexorder-test.jsonl: directory /proc "
                                              rf"{why}"):
        check_writable("/proc/complexorder-test.jsonl", "--results")
    with pytest.raises(PermissionError, match=r"^--results: cannot write /proc/version: "):
        check_writable("/proc/version", "--results")


def test_an_existing_file_that_cannot_be_opened_for_appending_is_refused(tmp_path, monkeypatch):
    import builtins

    import complexorder.checkpoint as ck

    target = tmp_path / "results.jsonl"
    target.write_text('{"a": 1}\n')
    real_open = builtins.open

    def refusing_open(path, *args, **kwargs):  # what root meets in /proc, where os.access says yes
        if Path(path) == target:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(ck, "open", refusing_open, raising=False)
    with pytest.raises(PermissionError, match=rf"^--results: cannot write {target}: the file is not writable$"):
        check_writable(target, "--results")
    assert target.read_text() == '{"a": 1}\n'


def test_out_of_memory_becomes_one_line_naming_the_settings(capsys, monkeypatch):
    from complexorder import cli
    from complexorder.errors import is_out_of_memory, naming_out_of_memory, out_of_memory_message
    from complexorder.experiments import demo_cli

    with pytest.raises(MemoryError, match=r"^\[model\] d_model = 9: the model does not fit in memory \(one tensor of "
                                          r"1\.2 EB could not be allocated\); lower these sizes in the config$"):
        with naming_out_of_memory("[model] d_model = 9"):
            torch.empty(2 ** 60, dtype=torch.uint8)  # torch's own failure: 2**60 bytes fit no address space
    with pytest.raises(RuntimeError, match="^shapes do not match$"):  # any other RuntimeError passes through
        with naming_out_of_memory("[model] d_model = 9"):
            raise RuntimeError("shapes do not match")
    cuda = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total capacity)")
    assert is_out_of_memory(cuda) and out_of_memory_message(cuda) == "one tensor of 2.00 GiB could not be allocated"
    assert not is_out_of_memory(RuntimeError("expected scalar type Float"))
    # outside model building (a batch too large, say) the command line still prints one line, exit status 2
    def run(args):
        torch.empty(2 ** 60, dtype=torch.uint8)

    monkeypatch.setattr(demo_cli, "run", run)
    assert cli.main(["demo", "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert err == ("complexorder: error: out of memory: one tensor of 1.2 EB could not be allocated; lower "
                   "batch_size (or --beam-size) or the model's sizes in the config (finished results are kept)\n")


@pytest.mark.parametrize("argv, message", [
    (["--seed", "99999999999999999999"], "--seed must be an integer in [0, 2**32), got 99999999999999999999"),
    (["--seed", "-1"], "--seed must be an integer in [0, 2**32), got -1"),
    (["--train-size", "100000000000"], "--train-size must be at most 1,000,000 (the demo builds its sequences in "
                                       "memory; the default 4,000 trains in under a minute), got 100,000,000,000"),
])
def test_demo_checks_its_seed_and_size_before_any_work(argv, message, capsys, monkeypatch):
    """Stop 73: a seed of 20 digits said "Overflow when unpacking long long", -1 was taken (the grids refuse it), and
    10**11 training sequences ran until killed."""
    from complexorder.cli import main
    from complexorder.experiments import demo_cli

    monkeypatch.setattr(demo_cli, "run_demo", lambda *a, **k: pytest.fail("the demo ran"))
    assert main(["demo", "--embeddings", "pe", "--epochs", "1", *argv]) == 2
    assert capsys.readouterr().err == f"complexorder: error: {message}\n"


def test_a_checkpoint_of_a_newer_format_version_is_refused(tmp_path):
    """Stop 73: `inspect` loaded a checkpoint with version 99 as if it were version 1."""
    from complexorder.checkpoint import CHECKPOINT_VERSION, save_checkpoint

    path = tmp_path / "model.pt"
    save_checkpoint(path, kind="classifier", config={}, model_state={})
    assert load_checkpoint(path, "classifier")["version"] == CHECKPOINT_VERSION
    payload = torch.load(path, weights_only=True)
    payload["version"] = CHECKPOINT_VERSION + 98
    torch.save(payload, path)
    with pytest.raises(ValueError, match=rf"^checkpoint {path} has format version {CHECKPOINT_VERSION + 98}, newer than "
                                         rf"this complexorder reads \({CHECKPOINT_VERSION}\); upgrade complexorder to "
                                         r"load it$"):
        load_checkpoint(path, "classifier")


def test_a_file_that_fails_to_load_gives_the_one_line_without_torchs_warnings(tmp_path):
    """Stop 73: a pickle of protocol 4 printed torch's two-line UserWarning before the one-line error."""
    import pickle
    import warnings

    path = tmp_path / "p4.pt"
    path.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=rf"^checkpoint {path} could not be read \(corrupted or not a PyTorch "
                                             r"file\): "):
            load_checkpoint(path)
    assert caught == []


def test_a_device_is_written_in_place_without_its_directory_being_writable(tmp_path, monkeypatch):
    """Stop 73 (review): `--results /dev/null` was refused for a user who may not write /dev itself, and as root a
    probe file was made and removed in /dev for nothing."""
    import complexorder.checkpoint as ck

    if not Path(os.devnull).exists():
        pytest.skip("needs /dev/null")
    real_access = os.access
    monkeypatch.setattr(ck.os, "access", lambda p, mode: Path(p) != Path("/dev") and real_access(p, mode))
    monkeypatch.setattr(ck.tempfile, "mkstemp", lambda *a, **k: pytest.fail("probed a directory"))
    check_writable(os.devnull, "--results")
    ck.check_results_file(os.devnull, "--results")
    append_jsonl(os.devnull, {"a": 1})


@pytest.mark.parametrize("argv, message", [
    (["classify", "--data-dir", "", "--dry-run"],
     "--data-dir: an empty value; give one, or leave the option out for its default"),
    (["translate", "train", "--config", "cpu-vanilla", "--run-dir="],
     "--run-dir: an empty value; give one, or leave the option out for its default"),
    (["lm", "eval", "--checkpoint", "c.pt", "--corpus", "x", "--results", ""],
     "--results: an empty value; give one, or leave the option out for its default"),
    (["inspect", ""], "CHECKPOINT: an empty value; give one"),
])
def test_an_empty_value_is_refused_not_read_as_the_default(argv, message, capsys, tmp_path, monkeypatch):
    """Stop 75: `--data-dir ''` ran on $COMPLEXORDER_DATA and `translate train --run-dir ''` wrote under runs/, as
    if the option had been left out."""
    from complexorder.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"
    assert list(tmp_path.iterdir()) == []


def test_report_figure_empty_still_means_no_figure(tmp_path):
    from complexorder.cli import empty_value_problem, build_parser

    argv = ["report", "--results", "r.jsonl", "--figure", ""]
    assert empty_value_problem(build_parser(argv).parse_args(argv), argv) is None


def test_python_dash_m_runs_the_command():
    """`python -m complexorder` said "No module named complexorder.__main__"."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "complexorder", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("complexorder ")


def test_a_command_whose_extra_is_not_installed_names_it(tmp_path, capsys, monkeypatch):
    """Stop 78: the experiment packages became the `experiments` extra (the core needs torch, NumPy and tqdm); a
    command that needs a missing one names it and the extra, before it reads any data."""
    import sys

    from complexorder.cli import main

    monkeypatch.setitem(sys.modules, "gensim", None)  # `import gensim` raises ModuleNotFoundError(name="gensim")
    assert main(["vectors", "train", "--data-dir", str(tmp_path), "--out", str(tmp_path / "v.txt")]) == 2
    assert capsys.readouterr().err.strip() == ("complexorder: error: `complexorder vectors train` needs gensim, which "
                                               "is not installed: pip install 'complexorder[experiments]' (or pip "
                                               "install gensim)")
    from complexorder.experiments import demo_cli

    def broken(args):  # a module outside the extra missing is a bug or a broken install: its traceback shows
        raise ModuleNotFoundError("No module named 'somewhere'", name="somewhere")

    monkeypatch.setattr(demo_cli, "run", broken)
    with pytest.raises(ModuleNotFoundError, match="somewhere"):
        main(["demo"])


def test_the_installed_version_is_the_package_version():
    """The version is written once (complexorder.__version__; pyproject.toml reads it): two copies could disagree."""
    from importlib.metadata import version

    import complexorder

    assert version("complexorder") == complexorder.__version__
    project = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text().split("[project]", 1)[1]
    assert "\nversion =" not in project.split("\n[", 1)[0]  # the [project] table holds no second copy
