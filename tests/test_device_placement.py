"""Where tensors end up when the model is not on the CPU. No GPU is lent to this project, so the GPU's placement is
stood in for by PyTorch's ``meta`` device (shapes only; a tensor left on the CPU meets it as it would meet a CUDA
one), and the copy a GPU tensor's ``.cpu()`` makes by a patched ``Tensor.cpu`` (stop 80's audit of the GPU path)."""

import pytest
import torch

from complexorder import ComplexOrderEmbedding, ComplexVanillaEmbedding, build_embedding
from complexorder.experiments.training import cpu_state_dict
from complexorder.models import TransformerSeq2Seq, Seq2SeqConfig, TransformerXL, TransformerXLConfig, build_classifier
from complexorder.models.transformer_xl import XLMemory


@pytest.mark.parametrize("name, dtype", [(name, dtype) for name in ("none", "tpe") for dtype in
                                          (torch.float32, torch.float16, torch.bfloat16)]
                         + [("complex-order", torch.float32), ("complex-order", torch.float16)])  # no bfloat16 form
def test_build_classifier_moves_the_layers_to_the_embeddings_device_whatever_its_dtype(name, dtype):
    """A float16 / bfloat16 embedding left the layers on the CPU (the move was tied to the float32/64 dtype check)."""
    emb = build_embedding(name, 50, 8, padding_idx=0, device="meta", dtype=dtype)
    model = build_classifier("fasttext", emb, 3)
    assert {p.device.type for p in model.parameters()} == {"meta"}
    if dtype == torch.float32 or not name.startswith("complex"):  # complex32 layers ask autocast about "meta": no
        assert model(torch.ones(2, 6, dtype=torch.long, device="meta")).shape == (2, 3)
    # the layers keep their own dtype under a half-precision embedding, as before; float64 is taken along
    layers = [p for n, p in model.named_parameters() if not n.startswith("embedding.")]
    assert {p.dtype for p in layers} == {torch.float32}
    wide = build_classifier("fasttext", build_embedding(name, 50, 8, padding_idx=0, dtype=torch.float64), 3)
    assert {p.dtype for n, p in wide.named_parameters() if not n.startswith("embedding.")} == {torch.float64}


@pytest.mark.parametrize("cls", [ComplexOrderEmbedding, ComplexVanillaEmbedding])
def test_from_pretrained_builds_the_embedding_where_the_matrix_is(cls, monkeypatch):
    """nn.Embedding.from_pretrained keeps the matrix's device; the complex ones built on the CPU."""
    import complexorder.embeddings as E

    monkeypatch.setattr(E, "_check_matrix", lambda name, matrix, shape: matrix)  # it reads values: meta has none
    vectors = torch.empty(10, 4, device="meta")
    emb = cls.from_pretrained(vectors)
    assert {p.device.type for p in emb.parameters()} == {"meta"}
    assert cls.from_pretrained(torch.randn(10, 4)).amplitude.device.type == "cpu"


def _xl(**changes):
    cfg = TransformerXLConfig(vocab_size=27, n_layer=1, n_head=2, d_model=16, d_head=8, d_inner=32, mem_len=8,
                              **changes)
    return TransformerXL(cfg)


@pytest.mark.parametrize("mode", ["stream", "word"])
def test_transformer_xl_keeps_the_memory_counter_with_the_tokens_when_positions_are_given_elsewhere(mode):
    """CPU positions for tokens on another device left memory.next_position on the CPU; the next segment failed."""
    model = _xl(embedding="complex-order", position_mode=mode).to("meta")
    tokens = torch.empty(2, 4, dtype=torch.long, device="meta")
    _, memory = model(tokens, positions=torch.arange(4))
    assert memory.next_position.device.type == "meta"
    logits, memory = model(tokens, memory)
    assert logits.shape == (2, 4, 27) and memory.next_position.device.type == "meta"


def test_transformer_xl_names_a_memory_on_another_device():
    """XLMemory.from_state(state) without a device keeps state()'s CPU tensors: a bare device-mismatch error."""
    model = _xl().to("meta")
    state = {"hidden": [torch.zeros(2, 4, 16)], "next_position": torch.tensor([4, 4])}
    with pytest.raises(ValueError, match=r"^memory is on cpu, the model on meta; move it with "
                                         r"XLMemory\.from_state\(memory\.state\(\), device='meta'\) or start with "
                                         r"init_memory\(\)$"):
        model(torch.empty(2, 4, dtype=torch.long, device="meta"), XLMemory.from_state(state))
    logits, _ = model(torch.empty(2, 4, dtype=torch.long, device="meta"), XLMemory.from_state(state, "meta"))
    assert logits.shape == (2, 4, 27)


def _copying_cpu(monkeypatch):
    """``Tensor.cpu`` as on a GPU: a new copy for every call."""
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self, *args, **kwargs: self.clone())


def test_a_checkpoints_tied_tables_are_stored_once_when_copied_off_the_device(monkeypatch, tmp_path):
    """On a GPU `.cpu()` copied a tied table once per key: every checkpoint of the shared translation embedding and
    the tied Transformer-XL held it twice."""
    config = Seq2SeqConfig(variant="vanilla", d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=32, share_embeddings=True, tie_output=True)
    seq2seq = TransformerSeq2Seq(config, 40, 40)
    # since stop 82 the shared translation table is registered once: its state dict names it once
    assert not [k for k in seq2seq.state_dict() if k.startswith("tgt_embedding.")]
    _copying_cpu(monkeypatch)
    for model in (seq2seq, _xl(tie_weight=True)):
        state = cpu_state_dict(model)
        shared = {}
        for key, tensor in model.state_dict(keep_vars=True).items():
            shared.setdefault(id(tensor), []).append(key)
        tied = [keys for keys in shared.values() if len(keys) > 1]
        assert tied or model is seq2seq, "the model ties no table"
        for keys in tied:
            assert len({state[k].untyped_storage().data_ptr() for k in keys}) == 1, keys
        for key, tensor in model.state_dict().items():  # the values, and a copy of each (not the model's own tensor)
            assert torch.equal(state[key], tensor)
            assert state[key].untyped_storage().data_ptr() != tensor.untyped_storage().data_ptr()
        untied = [k for keys in shared.values() if len(keys) == 1 for k in keys]
        assert len({state[k].untyped_storage().data_ptr() for k in untied}) == len(untied)


def test_plot_density_takes_a_delta_that_is_not_a_plain_cpu_tensor(tmp_path):
    """``delta.numpy()`` refused a GPU tensor and one that requires a gradient (δ computed from the live table)."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    from complexorder.experiments.inspection import plot_density

    frequency = torch.nn.Parameter(torch.randn(200, 8))
    delta = frequency.abs().mean(1)  # requires a gradient
    plot_density(delta, tmp_path / "density.png")
    assert (tmp_path / "density.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("embedding", ["vanilla", "pe", "complex-order"])
def test_transformer_xl_refuses_positions_that_are_not_a_tensor(embedding):
    """With embedding="pe" a list said "'list' object has no attribute 'clamp'"; the others named positions."""
    model = _xl(embedding=embedding)
    with pytest.raises(TypeError, match="^positions must be a torch.Tensor or None, got list$"):
        model(torch.zeros(2, 4, dtype=torch.long), positions=[0, 1, 2, 3])
