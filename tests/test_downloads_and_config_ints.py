"""Downloads stream to a temporary file beside the destination (checksummed as they go, with a progress bar), model
configs take NumPy integers as the layers do, and `reorder_cache` names a bad `index` in one line. No network: every
download here is a fake `urllib.request.urlopen`."""

import dataclasses
import hashlib
import io
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

from complexorder.config import config_to_dict
from complexorder.data.download import fetch
from complexorder.models.seq2seq import Seq2SeqConfig, TransformerSeq2Seq, reorder_cache
from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py

URL = "http://example.invalid/data/x.gz"
BLOB = bytes(range(256)) * 40  # 10,240 bytes
SHA = hashlib.sha256(BLOB).hexdigest()


class FakeResponse:
    """What `urlopen` returns: `read(n)` gives `chunks` one by one, then whatever `fail` says (an exception to raise,
    or end of data); `seen` records the files in `folder` at each read (the download's temporary file)."""

    def __init__(self, chunks, length=None, fail=None, folder=None):
        self.chunks, self.fail, self.folder = list(chunks), fail, folder
        self.headers = {} if length is None else {"Content-Length": str(length)}
        self.seen: list[list[str]] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self, amt=-1):
        if self.folder is not None:
            self.seen.append(sorted(p.name for p in self.folder.iterdir()))
        if self.chunks:
            return self.chunks.pop(0)
        if self.fail is not None:
            raise self.fail
        return b""


def serve(monkeypatch, response):
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: response)
    return response


def temporary_files(seen):
    return {name for names in seen for name in names if name.startswith(".x.gz.") and name.endswith(".tmp")}


# ------------------------------------------------------------------------------------------------------------------
# fetch: streamed to a temporary file beside dest, renamed when complete and checked
# ------------------------------------------------------------------------------------------------------------------


def test_fetch_streams_into_a_temporary_file_beside_dest_and_renames_it(tmp_path, monkeypatch):
    chunks = [BLOB[:4000], BLOB[4000:8000], BLOB[8000:]]
    response = serve(monkeypatch, FakeResponse(chunks, length=len(BLOB), folder=tmp_path))
    assert fetch(URL, tmp_path / "x.gz", sha256=SHA) == tmp_path / "x.gz"
    assert (tmp_path / "x.gz").read_bytes() == BLOB
    assert len(temporary_files(response.seen)) == 1  # written beside dest while it came in: one rename at the end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.gz"]
    assert (tmp_path / "x.gz").stat().st_mode & 0o777 == 0o644  # as atomic_write_bytes leaves it (not mkstemp's 0600)


def test_fetch_makes_the_missing_directory_of_dest(tmp_path, monkeypatch):
    """multi30k downloads into data/.download/, which does not exist yet."""
    dest = tmp_path / "data" / ".download" / "x.gz"
    response = serve(monkeypatch, FakeResponse([BLOB], length=len(BLOB), folder=dest.parent))
    assert fetch(URL, dest, sha256=SHA).read_bytes() == BLOB
    assert temporary_files(response.seen)  # made before the download started, to hold its temporary file
    assert sorted(p.name for p in dest.parent.iterdir()) == ["x.gz"]


def test_a_checksum_mismatch_leaves_neither_dest_nor_a_temporary_file(tmp_path, monkeypatch):
    response = serve(monkeypatch, FakeResponse([BLOB[:5000], BLOB[5000:]], length=len(BLOB), folder=tmp_path))
    wrong = "0" * 64
    with pytest.raises(ValueError, match=exactly(f"checksum mismatch for {URL}: expected sha256 {wrong}, got {SHA}; "
                                                 "file not saved")):
        fetch(URL, tmp_path / "x.gz", sha256=wrong)
    assert temporary_files(response.seen)  # the download went to a file beside dest ...
    assert list(tmp_path.iterdir()) == []  # ... which is gone, and nothing was saved


def test_a_mismatch_keeps_the_file_already_at_dest(tmp_path, monkeypatch):
    (tmp_path / "x.gz").write_bytes(b"mine")
    response = serve(monkeypatch, FakeResponse([BLOB], length=len(BLOB), folder=tmp_path))
    with pytest.raises(ValueError, match="^checksum mismatch"):
        fetch(URL, tmp_path / "x.gz", sha256="0" * 64)
    assert temporary_files(response.seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.gz"] and (tmp_path / "x.gz").read_bytes() == b"mine"
    # offline, the error says the file there is the wrong one (stop 81: it said to copy the file there)
    serve(monkeypatch, FakeResponse([BLOB[:4000]], length=len(BLOB), fail=TimeoutError("timed out"), folder=tmp_path))
    with pytest.raises(ConnectionError, match=rf"^cannot download {re.escape(URL)} \(.+\); are you offline\? The "
                                              rf"{re.escape(str(tmp_path))}/x.gz there does not match the reference "
                                              rf"SHA-256; copy the right file over it by hand instead$"):
        fetch(URL, tmp_path / "x.gz", sha256="0" * 64)
    assert (tmp_path / "x.gz").read_bytes() == b"mine"


@pytest.mark.parametrize("error", [ConnectionResetError(104, "Connection reset by peer"), TimeoutError("timed out")])
def test_a_download_that_fails_half_way_leaves_no_partial_file(error, tmp_path, monkeypatch):
    response = serve(monkeypatch, FakeResponse([BLOB[:4000]], length=len(BLOB), fail=error, folder=tmp_path))
    with pytest.raises(ConnectionError, match=rf"^cannot download {re.escape(URL)} \(.+\); are you offline\? Copy "
                                              rf"the file to {re.escape(str(tmp_path))}/x.gz by hand instead$"):
        fetch(URL, tmp_path / "x.gz")
    assert temporary_files(response.seen)  # 4,000 bytes had been written beside dest
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_download_leaves_no_partial_file(tmp_path, monkeypatch):
    """Ctrl-C half-way: the KeyboardInterrupt goes up, the partial temporary file does not stay."""
    response = serve(monkeypatch, FakeResponse([BLOB[:4000]], fail=KeyboardInterrupt(), folder=tmp_path))
    with pytest.raises(KeyboardInterrupt):
        fetch(URL, tmp_path / "x.gz")
    assert temporary_files(response.seen)
    assert list(tmp_path.iterdir()) == []


def test_a_download_cut_short_of_its_content_length_is_not_saved(tmp_path, monkeypatch):
    """The server closed the connection early without an error: with no checksum to check, the truncated file was
    saved as if complete."""
    serve(monkeypatch, FakeResponse([BLOB[:4000]], length=len(BLOB)))
    with pytest.raises(ConnectionError, match=exactly(f"cannot download {URL} (the download was cut short: got 4,000 "
                                                      f"of 10,240 bytes); are you offline? Copy the file to "
                                                      f"{tmp_path}/x.gz by hand instead")):
        fetch(URL, tmp_path / "x.gz")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_download_leaves_no_directory_it_made(tmp_path, monkeypatch):
    """Offline, `complexorder download` left an empty `~/.cache/complexorder/data/downloads/` behind (stop 83): the
    directories made to hold the download are removed again when it fails; one that existed before is kept, and one
    that another file went into meanwhile too."""
    dest = tmp_path / "data" / "downloads" / "x.gz"
    serve(monkeypatch, FakeResponse([BLOB[:4000]], length=len(BLOB), fail=TimeoutError("timed out")))
    with pytest.raises(ConnectionError, match="^cannot download"):
        fetch(URL, dest)
    assert list(tmp_path.iterdir()) == []  # neither data/ nor data/downloads/

    (tmp_path / "data").mkdir()  # there before: kept; downloads/ made here: removed
    serve(monkeypatch, FakeResponse([BLOB], length=len(BLOB)))
    with pytest.raises(ValueError, match="^checksum mismatch"):
        fetch(URL, dest, sha256="0" * 64)
    assert list(tmp_path.iterdir()) == [tmp_path / "data"] and list((tmp_path / "data").iterdir()) == []

    class Other(FakeResponse):  # another file lands in data/downloads/ while this download runs: that folder stays
        def read(self, amt=-1):
            (dest.parent / "other.zip").write_bytes(b"x")
            return super().read(amt)

    serve(monkeypatch, Other([BLOB[:10]], length=len(BLOB), fail=TimeoutError("timed out")))
    with pytest.raises(ConnectionError):
        fetch(URL, dest)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["other.zip"]


def test_a_relative_dest_through_a_new_directory_never_removes_one_that_was_there(tmp_path, monkeypatch):
    """`new/../mine/x.gz` with `mine` the user's own empty directory: mkdir makes `new`, so a failed download removes
    `new` and keeps `mine` (the review of stop 83 found `mine` removed and `new` left)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    serve(monkeypatch, FakeResponse([BLOB[:10]], length=len(BLOB), fail=TimeoutError("timed out")))
    with pytest.raises(ConnectionError):
        fetch(URL, Path("new") / ".." / "mine" / "downloads" / "x.gz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"] and list((tmp_path / "mine").iterdir()) == []


def test_translate_download_leaves_no_empty_archive_folder(shared_data, tmp_path, monkeypatch):
    """Each Multi30k archive is removed once its file is written; the `.download/` folder made for them was left
    empty after a successful download, and after a failed one that came after a successful file (stop 83)."""
    import gzip

    from complexorder.data.multi30k import download_multi30k

    ref = shared_data / "translation" / "multi30k"

    def online(url, timeout=None):
        name = {"train": "train", "val": "val", "test_2016_flickr": "test2016"}[url.rsplit("/", 1)[1].split(".")[0]]
        return FakeResponse([gzip.compress((ref / f"{name}.{url.rsplit('.', 2)[1]}").read_bytes())])

    monkeypatch.setattr(urllib.request, "urlopen", online)
    folder = download_multi30k(tmp_path / "data", progress=False)
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in ref.iterdir() if p.name[0] != ".")
    assert not (folder / ".download").exists()

    (folder / "val.de").unlink(), (folder / "val.en").unlink()
    calls = []

    def second_fails(url, timeout=None):
        calls.append(url)
        if len(calls) == 2:
            raise urllib.error.URLError("offline")
        return online(url)

    monkeypatch.setattr(urllib.request, "urlopen", second_fails)
    with pytest.raises(ConnectionError, match="^cannot download"):
        download_multi30k(tmp_path / "data", progress=False)
    assert len(calls) == 2 and (folder / "val.en").is_file() and not (folder / "val.de").exists()
    assert not (folder / ".download").exists()


def test_the_download_command_offline_leaves_the_data_directory_as_it_was(tmp_path, monkeypatch, capsys):
    from complexorder.cli import main

    def offline(url, timeout=None):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    assert main(["download", "--datasets", "TREC", "--data-dir", str(tmp_path / "cache" / "data")]) != 0
    assert "are you offline?" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_fetch_shows_a_byte_progress_bar_on_a_terminal_only(tmp_path, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    serve(monkeypatch, FakeResponse([BLOB[:5000], BLOB[5000:]], length=len(BLOB)))
    fetch(URL, tmp_path / "a" / "x.gz", sha256=SHA)
    bar = terminal.getvalue()
    assert "x.gz" in bar and "100%" in bar and "10.2k/10.2k" in bar  # bytes, scaled, total from Content-Length

    terminal.seek(0), terminal.truncate()  # progress=False: no bar, even on a terminal
    serve(monkeypatch, FakeResponse([BLOB], length=len(BLOB)))
    fetch(URL, tmp_path / "b" / "x.gz", sha256=SHA, progress=False)
    assert terminal.getvalue() == ""

    log = io.StringIO()  # standard error redirected to a file: no bar either
    monkeypatch.setattr("sys.stderr", log)
    serve(monkeypatch, FakeResponse([BLOB]))  # no Content-Length: no total, still fine
    assert fetch(URL, tmp_path / "c" / "x.gz", sha256=SHA).read_bytes() == BLOB
    assert log.getvalue() == ""


# ------------------------------------------------------------------------------------------------------------------
# Model configs: NumPy integers taken (and stored as ints), bools, floats and strings still refused
# ------------------------------------------------------------------------------------------------------------------

SEQ2SEQ = {"d_model": 8, "nhead": 2, "num_encoder_layers": 1, "num_decoder_layers": 1, "dim_feedforward": 16}
XL = {"vocab_size": 11, "n_layer": 1, "n_head": 2, "d_model": 8, "d_head": 4, "d_inner": 16, "mem_len": 4}


def numpy_ints(settings):
    return {k: (np.int64(v) if i % 2 else np.int32(v)) for i, (k, v) in enumerate(settings.items())}


def assert_plain_ints(config):
    record = config_to_dict(config)
    json.dumps(record)  # np.int64 is not JSON
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        assert not isinstance(value, np.generic), (f.name, value)


BAD_INTS = [True, np.True_, 8.0, np.float64(8.0), "8"]


@pytest.mark.parametrize("bad", BAD_INTS, ids=repr)
def test_seq2seq_config_takes_numpy_integers_but_still_refuses_bools_floats_and_strings(bad):
    config = Seq2SeqConfig(**numpy_ints(SEQ2SEQ))
    assert_plain_ints(config)
    model = TransformerSeq2Seq(config, np.int64(12), 12)
    assert model.config.d_model == 8 and type(model.config.d_model) is int
    later = Seq2SeqConfig(**SEQ2SEQ)
    later.dim_feedforward = np.int16(16)  # set after the config was made: converted when the model is built
    TransformerSeq2Seq(later, 12, 12)
    assert type(later.dim_feedforward) is int

    with pytest.raises(ValueError, match=exactly(f"model.d_model: expected an integer, got {bad!r}")):
        TransformerSeq2Seq(Seq2SeqConfig(**{**SEQ2SEQ, "d_model": bad}), 12, 12)


@pytest.mark.parametrize("bad", BAD_INTS, ids=repr)
def test_transformer_xl_config_takes_numpy_integers_but_still_refuses_bools_floats_and_strings(bad):
    config = TransformerXLConfig(**numpy_ints(XL), d_embed=np.int64(8), clamp_len=np.int64(-1),
                                 separator_id=np.uint8(0))
    assert_plain_ints(config)
    model = TransformerXL(config)
    assert model.config.mem_len == 4 and type(model.config.mem_len) is int
    later = TransformerXLConfig(**XL)
    later.n_head = np.int64(2)
    TransformerXL(later)
    assert type(later.n_head) is int

    with pytest.raises(ValueError, match=exactly(f"model.n_layer: expected an integer, got {bad!r}")):
        TransformerXL(TransformerXLConfig(**{**XL, "n_layer": bad}))


def test_config_dicts_take_numpy_numbers_and_store_plain_ones():
    # the dict path (a TOML file, --set, a grid drawn with NumPy) as the dataclass: np.int64 and np.float32 are taken
    # and stored as int and float; a NumPy bool is still no integer
    from complexorder.config import config_from_dict

    config = config_from_dict({"d_model": np.int64(8), "dropout": np.float32(0.25)}, Seq2SeqConfig, "model")
    assert (config.d_model, config.dropout) == (8, 0.25)
    assert type(config.d_model) is int and type(config.dropout) is float
    xl = config_from_dict({**XL, "n_layer": np.int64(2), "dropout": np.float64(0.1)}, TransformerXLConfig, "model")
    assert type(xl.n_layer) is int and type(xl.dropout) is float
    assert_plain_ints(xl)
    with pytest.raises(ValueError, match=exactly("model.d_model: expected an integer, got np.True_")):
        config_from_dict({"d_model": np.True_}, Seq2SeqConfig, "model")
    with pytest.raises(ValueError, match=exactly("model.dropout: expected a number, got np.True_")):
        config_from_dict({"dropout": np.True_}, Seq2SeqConfig, "model")


# ------------------------------------------------------------------------------------------------------------------
# reorder_cache: a bad index is a one-line error naming it, and the cache is left as it was
# ------------------------------------------------------------------------------------------------------------------

FORM = "index must be a 1-D integer tensor of beam/batch positions, each in [0, batch)"


def cache3():
    return {"position": 2, "layer0": {"self": {"k": torch.arange(3.0).view(3, 1), "v": torch.arange(3.0).view(3, 1)},
                                      "cross": {"k": torch.arange(6.0).view(3, 2)}}}


@pytest.mark.parametrize("index, error, message", [
    (torch.tensor([0.0, 1.0]), TypeError, f"{FORM}, got dtype torch.float32"),
    (torch.tensor([True, False, True]), TypeError, f"{FORM}, got dtype torch.bool"),
    ([0, 1], TypeError, f"{FORM}, got list"),
    (np.array([0, 1]), TypeError, f"{FORM}, got ndarray"),
    (torch.tensor([[0, 1]]), ValueError, f"{FORM}, got shape (1, 2)"),
    (torch.tensor(1), ValueError, f"{FORM}, got shape ()"),
    (torch.tensor([0, 3]), ValueError, f"{FORM}; the cache holds batch = 3 rows, got values from 0 to 3"),
    (torch.tensor([-1, 2]), ValueError, f"{FORM}; the cache holds batch = 3 rows, got values from -1 to 2"),
], ids=["float", "bool", "list", "ndarray", "2-D", "0-D", "too large", "negative"])
def test_reorder_cache_names_a_bad_index_and_leaves_the_cache_untouched(index, error, message):
    cache, before = cache3(), cache3()
    with pytest.raises(error, match=exactly(message)):
        reorder_cache(cache, index)
    assert cache["position"] == 2
    for part in ("self", "cross"):
        for key, value in before["layer0"][part].items():
            assert torch.equal(cache["layer0"][part][key], value)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int8, torch.uint8])  # int64 and int32: index_select's own
def test_reorder_cache_takes_any_integer_index(dtype):
    cache = cache3()
    assert reorder_cache(cache, torch.tensor([2, 2, 0, 1], dtype=dtype)) is cache
    assert cache["layer0"]["self"]["k"].view(-1).tolist() == [2.0, 2.0, 0.0, 1.0]
    assert cache["layer0"]["cross"]["k"].tolist() == [[4.0, 5.0], [4.0, 5.0], [0.0, 1.0], [2.0, 3.0]]
    assert reorder_cache({}, torch.tensor([5], dtype=dtype)) == {}  # nothing cached yet: nothing to check against


# ------------------------------------------------------------------------------------------------------------------
# --no-progress reaches the download bar of each download command
# ------------------------------------------------------------------------------------------------------------------

class _Stop(Exception):
    """Raised by the fake fetch once it has recorded its call: nothing is downloaded or written."""


@pytest.mark.parametrize("argv, module", [
    (["download", "--datasets", "MR"], "complexorder.data.sources"),
    (["translate", "download"], "complexorder.data.multi30k"),
    (["lm", "prepare-text8", "--download"], "complexorder.data.text8"),
])
@pytest.mark.parametrize("flag", [[], ["--no-progress"]], ids=["default", "--no-progress"])
def test_no_progress_reaches_the_download_bar(monkeypatch, tmp_path, capsys, argv, module, flag):
    import importlib

    from complexorder.cli import main

    calls = []

    def fake_fetch(url, dest, *args, **kwargs):
        calls.append(kwargs.get("progress", True))
        raise _Stop

    monkeypatch.setattr(importlib.import_module(module), "fetch", fake_fetch)
    monkeypatch.setenv("COMPLEXORDER_DEBUG", "1")
    with pytest.raises(_Stop):
        main([*argv, "--data-dir", str(tmp_path), *flag])
    assert calls == [not flag]


def test_the_runners_settings_take_numpy_numbers_and_store_plain_ones():
    # stop 79's review: ModelSettings(epochs=np.int64(2)) was "[cnn] epochs must be a positive integer, got
    # np.int64(2)", TrainConfig(seed=np.int64(3)) "train.seed must be an integer in [0, 2**32)"
    from complexorder.experiments.classification import ModelSettings
    from complexorder.experiments.language_model import EvalSettings, TrainSettings
    from complexorder.experiments.translation import DataConfig, DecodeConfig, TrainConfig

    settings = ModelSettings(epochs=np.int64(2), lr=np.float32(1e-3))
    settings.validate("[cnn]")
    assert (type(settings.epochs), type(settings.lr)) == (int, float)
    for made in (TrainConfig(seed=np.int64(3), lr=np.float32(1e-3)), DataConfig(max_tokens=np.int32(50)),
                 DecodeConfig(beam_size=np.int64(4)), TrainSettings(seed=np.int64(3)), EvalSettings(mem_len=np.int64(8))):
        json.dumps(config_to_dict(made))  # np.int64 is not JSON
        assert not any(isinstance(getattr(made, f.name), np.generic) for f in dataclasses.fields(made)), made


def test_a_directory_removed_by_another_failing_download_is_made_again(tmp_path, monkeypatch):
    """Two downloads into one fresh directory (stop 85): when the other fails, it removes the directory it made while
    that is empty — possibly between this download making it and creating its temporary file there. This download
    makes it again rather than failing with "No such file or directory"."""
    import tempfile

    dest = tmp_path / "data" / "downloads" / "x.gz"
    real_mkstemp, calls = tempfile.mkstemp, []

    def other_download_cleans_up_first(*args, **kwargs):
        if Path(kwargs.get("dir") or "") != dest.parent:  # check_writable's probe, before anything is made
            return real_mkstemp(*args, **kwargs)
        calls.append(kwargs["dir"])
        if len(calls) == 1:  # the other, failing download removes the empty folders it made, just now
            dest.parent.rmdir()
            dest.parent.parent.rmdir()
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", other_download_cleans_up_first)
    serve(monkeypatch, FakeResponse([BLOB], length=len(BLOB)))
    assert fetch(URL, dest, sha256=SHA).read_bytes() == BLOB
    assert len(calls) == 2 and sorted(p.name for p in dest.parent.iterdir()) == ["x.gz"]


def test_an_atomic_write_into_a_directory_removed_meanwhile_makes_it_again(tmp_path, monkeypatch):
    """The same race for the files a download writes once fetched (`atomic_write_text`, shared with `fetch`)."""
    import tempfile

    from complexorder.checkpoint import atomic_write_text

    dest = tmp_path / "data" / "set" / "train.txt"
    real_mkstemp, calls = tempfile.mkstemp, []

    def removed_first(*args, **kwargs):
        if Path(kwargs.get("dir") or "") == dest.parent:
            calls.append(1)
            if len(calls) == 1:
                dest.parent.rmdir()
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", removed_first)
    atomic_write_text(dest, "a line\n")
    assert dest.read_text() == "a line\n" and len(calls) == 2
