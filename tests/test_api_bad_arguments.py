"""The Python API on bad or unusual arguments: a one-line error at the boundary, never a silently wrong result.

Each case was found by an audit of the public API (stop 52); the comment says what happened before.
"""

import dataclasses
import re
import warnings

import pytest
import torch
from torch import nn

import complexorder as co
from complexorder import nn as cnn
from complexorder.models import CNNClassifier, FastTextClassifier, LSTMClassifier, TransformerClassifier
from complexorder.models.seq2seq import Seq2SeqConfig, TransformerSeq2Seq, reorder_cache
from complexorder.nn import functional as CF


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def test_complex_lstm_checks_its_initial_state():
    """A wrong batch size in hx went to torch.lstm unchecked: the process aborted or read uninitialised memory."""
    lstm = cnn.ComplexLSTM(8, 4, batch_first=True)
    z = torch.randn(2, 5, 8, dtype=torch.complex64)
    for batch in (1, 3):
        h0 = torch.zeros(1, batch, 4, dtype=torch.complex64)
        with pytest.raises(ValueError, match=exactly(f"hx's h_0 must be [1, 2, 4] (num_layers * num_directions, "
                                                     f"the input's batch, hidden_size), got (1, {batch}, 4)")):
            lstm(z, (h0, h0))
    with pytest.raises(TypeError, match=exactly("hx's h_0 must be a complex tensor (torch.complex64), got "
                                                "torch.float32")):
        lstm(z, (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)))
    with pytest.raises(TypeError, match=exactly("hx must be a pair (h_0, c_0) of complex tensors [1, 2, 4], got "
                                                "Tensor")):
        lstm(z, torch.zeros(1, 2, 4, dtype=torch.complex64))
    # a valid state: the same as running the first steps and carrying their state on
    out, (h, c) = lstm(z)
    first, state = lstm(z[:, :2])
    rest, (h2, c2) = lstm(z[:, 2:], state)
    torch.testing.assert_close(torch.cat((first, rest), 1), out)
    torch.testing.assert_close((h2, c2), (h, c))


def test_seq2seq_pad_id_must_be_a_token_id():
    """pad_id=-1 embedded as row V-1 but was never masked (src == -1); pad_id=None zeroed the whole table."""
    cfg = Seq2SeqConfig("complex-order", d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=16)
    for pad in (-1, None, 20, True):
        with pytest.raises(ValueError, match=exactly(f"pad_id must be a token id in [0, 20) (the padding token of "
                                                     f"both vocabularies), got {pad!r}")):
            TransformerSeq2Seq(cfg, 20, 20, pad_id=pad)
    with pytest.raises(ValueError, match=exactly("model.d_model and model.nhead must be positive, got 8 and 0")):
        TransformerSeq2Seq(Seq2SeqConfig("vanilla", d_model=8, nhead=0), 20, 20)


def test_seq2seq_takes_numpy_integer_vocabulary_sizes_and_pad_id_as_ints():
    """Stop 75: np.int64 vocabulary sizes (len of a NumPy vocabulary, a size from np.random.choice) were refused
    ("src_vocab_size must be a positive integer, got np.int64(20)") while the classifiers take them; they are now
    taken and stored as ints, and bools, floats and strings are still refused."""
    import numpy as np

    cfg = Seq2SeqConfig("complex-order", d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=16, share_embeddings=False)
    model = TransformerSeq2Seq(cfg, np.int64(20), np.int32(24), pad_id=np.int64(1))
    assert type(model.pad_id) is int and model.pad_id == 1
    assert model.src_embedding.num_embeddings == 20 and model.output.out_features == 24
    assert model.src_embedding.padding_idx == 1
    for bad in (20.0, "20", True):
        with pytest.raises(ValueError, match=exactly(f"src_vocab_size must be a positive integer, got {bad!r}")):
            TransformerSeq2Seq(cfg, bad, 24)


@pytest.mark.parametrize("variant", ["vanilla", "complex-order"])
def test_seq2seq_decoding_checks_the_position_and_the_memory_batch(variant):
    """A NaN position gave NaN logits (vanilla); a memory of batch 1 was broadcast to every sentence (complex)."""
    model = TransformerSeq2Seq(Seq2SeqConfig(variant, d_model=8, nhead=2, num_encoder_layers=1,
                                             num_decoder_layers=1, dim_feedforward=16), 20, 20).eval()
    memory, src_pad = model.encode(torch.tensor([[3, 4, 5]]))
    tokens = torch.tensor([1, 1])
    for position in (float("nan"), -1, 1.5):
        with pytest.raises(ValueError, match=exactly(f"position must be a non-negative integer (the new token's "
                                                     f"target position), got {position!r}")):
            model.decode_step(tokens[:1], position, memory, src_pad, {})
    with pytest.raises(ValueError, match=exactly("memory [B, Ls, D] and src_pad [B, Ls] must hold the same 2 "
                                                 "sentence(s) as the target, got "
                                                 f"{tuple(memory.shape)} and (1, 3)")):
        model.decode_step(tokens, 0, memory, src_pad, {})
    with pytest.raises(ValueError, match=r"^memory \[B, Ls, D\] and src_pad \[B, Ls\] must hold the same 2 "):
        model(torch.tensor([[3, 4, 5]]), torch.tensor([[1, 6], [1, 7]]))


def test_complex_attention_refuses_what_nn_multihead_attention_refuses():
    """A key/value or padding mask of batch 1 was broadcast to every sequence; num_heads=0 divided by zero."""
    attn = cnn.ComplexMultiheadAttention(8, 2)
    z = torch.randn(2, 5, 8, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"^query, key and value must hold the same batch \(and key and value the "
                                         r"same length\), got \(2, 5, 8\), \(1, 5, 8\) and \(1, 5, 8\)"):
        attn(z, z[:1], z[:1])
    with pytest.raises(ValueError, match=exactly("key_padding_mask must be [B = 2, Lk], got (1, 5)")):
        attn(z, key_padding_mask=torch.zeros(1, 5, dtype=torch.bool))
    for heads in (0, -2):
        with pytest.raises(ValueError, match=exactly(f"embed_dim and num_heads must be greater than 0, got "
                                                     f"embed_dim=8 and num_heads={heads}")):
            cnn.ComplexMultiheadAttention(8, heads)
    q = torch.randn(3, 4, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"^query, key and value must have the same number of dimensions"):
        CF.complex_scaled_dot_product_attention(q, z.unsqueeze(0), z.unsqueeze(0))
    with pytest.raises(ValueError, match=r"^query must be \[\.\.\., L, d\] with d >= 1, got \(4,\)$"):
        CF.complex_scaled_dot_product_attention(q[0], q, q)
    with pytest.raises(ValueError, match=r"^mask \[\.\.\., Lq, Lk\] may not have more dimensions than query"):
        CF.complex_scaled_dot_product_attention(q, q, q, torch.ones(1, 1, 3, 3, dtype=torch.bool))


def test_modulus_eps_and_frequency_init_must_be_finite_and_sensible():
    """eps=-1 gave NaN for small |z|; a NaN or infinite frequency_init made every embedding NaN."""
    for eps in (-1.0, float("nan")):
        with pytest.raises(ValueError, match=exactly(f"eps must be a finite number >= 0, got {eps!r}")):
            cnn.Modulus(eps)
        with pytest.raises(ValueError, match=exactly(f"eps must be a finite number >= 0, got {eps!r}")):
            CF.modulus(torch.zeros(2, dtype=torch.complex64), eps)
    for init in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=exactly(f"frequency_init must be finite, got {init!r}")):
            co.ComplexOrderEmbedding(10, 4, frequency_init=init)
    with pytest.raises(ValueError, match=exactly("frequency_init holds NaN or infinite values; frequencies must be "
                                                 "finite")):
        co.ComplexOrderEmbedding(10, 4, frequency_init=torch.tensor([0.1, float("nan"), 0.2, 0.3]))


def test_half_precision_embeddings_keep_neighbouring_positions_apart():
    """float16 holds integers exactly only up to 2048, bfloat16 up to 256: positions were cast to the parameters'
    dtype first, so 475 (float16) and 2300 (bfloat16) of 2999 neighbouring positions shared one encoding."""
    tokens = torch.full((1, 3000), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "ComplexHalf support is experimental"
        for fused in (True, False):
            embedding = co.ComplexOrderEmbedding(10, 8, fused=fused).half()
            out = embedding(tokens)
            assert out.dtype == torch.complex32
            rows = torch.view_as_real(out)[0].flatten(1).float()
            assert not (rows[1:] == rows[:-1]).all(1).any()
            # the float32 computation's values, to half precision (the phases computed in float16 were 0.87 off)
            full = co.ComplexOrderEmbedding(10, 8, fused=fused)
            full.load_state_dict({k: v.float() for k, v in embedding.state_dict().items()})
            torch.testing.assert_close(rows, torch.view_as_real(full(tokens))[0].flatten(1), atol=2e-3, rtol=2e-3)
    tpe = co.SinusoidalPositionalEmbedding(10, 8).to(torch.bfloat16)
    rows = tpe(tokens)[0]
    assert rows.dtype == torch.bfloat16 and not (rows[1:] == rows[:-1]).all(1).any()
    with pytest.raises(TypeError, match=r"^ComplexOrderEmbedding has no bfloat16 form"):
        co.ComplexOrderEmbedding(10, 8).to(torch.bfloat16)(tokens[:, :4])


@pytest.mark.parametrize("cls", [FastTextClassifier, CNNClassifier, LSTMClassifier, TransformerClassifier])
def test_classifiers_name_a_foreign_embedding_and_a_token_tensor_of_the_wrong_rank(cls):
    """nn.Embedding failed with "no attribute 'is_complex'"; [1, 2, 6] tokens gave FastText logits [1, 6, 2]."""
    with pytest.raises(TypeError, match=exactly(f"{cls.__name__}: embedding must be a module of "
                                                f"complexorder.embeddings (build_embedding(name, ...)), which says "
                                                f"whether it is complex (is_complex) and its embedding_dim; got "
                                                f"Embedding")):
        cls(nn.Embedding(20, 8), 2)
    kwargs = {"nhead": 2, "dim_feedforward": 16} if cls is TransformerClassifier else {}
    model = cls(co.build_embedding("complex-order", 20, 8, padding_idx=0), 2, **kwargs).eval()
    with pytest.raises(ValueError, match=exactly(f"{cls.__name__}: tokens must be a [B, L] tensor of token ids, got "
                                                 f"(1, 2, 6)")):
        model(torch.randint(1, 20, (1, 2, 6)))
    assert model(torch.randint(1, 20, (2, 6))).shape == (2, 2)


@pytest.mark.parametrize("share_weights", [False, True])
def test_complex_conv1d_takes_the_argument_forms_of_nn_conv1d(share_weights):
    """padding='same'/'valid' failed with "unsupported operand type(s) for -: 'int' and 'str'", kernel_size=(3,)
    inside torch.empty."""
    z = torch.randn(2, 4, 7, dtype=torch.complex64)
    reference = cnn.ComplexConv1d(4, 5, 3, padding=1, share_weights=share_weights)
    for kwargs, same_as in (({"padding": "same"}, reference), ({"padding": (1,), "kernel_size": (3,)}, reference),
                            ({"padding": "valid"}, None)):
        conv = cnn.ComplexConv1d(4, 5, **{"kernel_size": 3, **kwargs}, share_weights=share_weights)
        conv.load_state_dict(reference.state_dict())
        expected = reference(z) if same_as is not None else reference(z)[..., 1:-1]  # 'valid': no padding
        torch.testing.assert_close(conv(z), expected)
    for kwargs, message in (({"padding": "full"}, "padding must be an integer, 'valid' or 'same' (as torch.nn.Conv1d), "
                                                  "got 'full'"),
                            ({"padding": -1}, "padding must be an integer >= 0 (or a 1-tuple of one), got -1"),
                            ({"kernel_size": 0}, "kernel_size must be an integer >= 1 (or a 1-tuple of one), got 0"),
                            ({"padding": "same", "stride": 2}, "padding='same' is not supported for strided "
                                                               "convolutions (as torch.nn.Conv1d)")):
        with pytest.raises(ValueError, match=exactly(message)):
            cnn.ComplexConv1d(4, 5, **{"kernel_size": 3, **kwargs})


@pytest.mark.parametrize("name", ["complex-order", "complex-vanilla", "none", "pe", "tpe"])
def test_every_embedding_takes_the_token_dtypes_of_f_embedding_and_names_the_others(name):
    """int16/uint8 tokens worked in some tables and failed inside F.embedding in others."""
    embedding = co.build_embedding(name, 10, 4)
    expected = embedding(torch.tensor([[1, 2]]))
    torch.testing.assert_close(embedding(torch.tensor([[1, 2]], dtype=torch.int32)), expected)
    for dtype in (torch.int16, torch.uint8, torch.int8):
        with pytest.raises(TypeError, match=exactly(f"tokens must be an integer tensor (torch.long or torch.int), got "
                                                    f"dtype {dtype}")):
            embedding(torch.tensor([[1, 2]], dtype=dtype))


def test_from_pretrained_names_freeze_amplitude_when_given_nn_embeddings_freeze():
    """`freeze=True`, nn.Embedding.from_pretrained's argument, failed in the constructor with "got an unexpected
    keyword argument 'freeze'", which named neither from_pretrained nor the argument it takes."""
    matrix = torch.randn(5, 4)
    for cls in (co.ComplexOrderEmbedding, co.ComplexVanillaEmbedding):
        with pytest.raises(TypeError, match=exactly(f"{cls.__name__}.from_pretrained takes freeze_amplitude, not freeze "
                                                    "(default False: the amplitudes train, unlike "
                                                    "nn.Embedding.from_pretrained's freeze=True; the other tables "
                                                    "always train)")):
            cls.from_pretrained(matrix, freeze=True)
        assert not cls.from_pretrained(matrix, freeze_amplitude=True).amplitude.requires_grad
        assert cls.from_pretrained(matrix).amplitude.requires_grad


def test_an_lstm_state_in_another_dtype_than_the_input_is_named():
    """A complex128 (h_0, c_0) given to a float32 ComplexLSTM was rounded to float32 without a word."""
    lstm = cnn.ComplexLSTM(4, 3)
    z = torch.randn(5, 2, 4, dtype=torch.complex64)
    state = torch.zeros(1, 2, 3, dtype=torch.complex128)
    with pytest.raises(TypeError, match=exactly("hx's h_0 is torch.complex128 but the input is torch.complex64: give "
                                                "both in one dtype")):
        lstm(z, (state, state.to(torch.complex64)))
    out, _ = lstm(z, (state.to(torch.complex64), state.to(torch.complex64)))
    torch.testing.assert_close(out, lstm(z)[0])  # a zero state is the default one


def test_from_pretrained_keeps_the_matrix_dtype_and_split_activation_names_a_class_given_for_an_instance():
    """A float64 matrix made float32 parameters (nn.Embedding.from_pretrained keeps float64); SplitActivation(nn.ReLU)
    was accepted and failed at forward with "complex(): argument 'real' must be Tensor, not ReLU"."""
    matrix = torch.randn(5, 4, dtype=torch.float64)
    for cls in (co.ComplexOrderEmbedding, co.ComplexVanillaEmbedding):
        embedding = cls.from_pretrained(matrix)
        assert embedding.amplitude.dtype == torch.float64 and torch.equal(embedding.amplitude, matrix)
        assert embedding(torch.tensor([[1, 2]])).dtype == torch.complex128
        assert cls.from_pretrained(matrix, dtype=torch.float32).amplitude.dtype == torch.float32
    with pytest.raises(TypeError, match=exactly("activation must be a name, a function or a module instance, got the "
                                                "class ReLU; pass ReLU() instead")):
        cnn.SplitActivation(nn.ReLU)
    z = torch.randn(3, dtype=torch.complex64)
    torch.testing.assert_close(cnn.SplitActivation(nn.ReLU())(z), torch.complex(z.real.relu(), z.imag.relu()))


@pytest.mark.parametrize("make", [lambda: cnn.ComplexLinear(8, 4), lambda: cnn.ComplexLinear(8, 4, share_weights=True),
                                  lambda: cnn.ComplexConv1d(8, 4, 3), lambda: cnn.ComplexLSTM(8, 4, batch_first=True),
                                  lambda: cnn.ComplexMultiheadAttention(8, 2, batch_first=True),
                                  lambda: cnn.ComplexLayerNorm(8)],
                         ids=["linear", "linear-shared", "conv1d", "lstm", "attention", "layer-norm"])
def test_a_complex128_input_into_a_float32_layer_names_both_dtypes_and_the_fix(make):
    """Stop 53: complex128 into a float32 layer gave "mat1 and mat2 must have the same dtype" (linear, attention),
    "Input type (c10::complex<double>) and bias type (c10::complex<float>) should be the same" (convolution) or
    "expected m1 and m2 to have the same dtype" (LSTM), naming neither the input nor the layer. The layer norm
    (stop 76) promoted the mix silently to complex128, so the error came one layer later."""
    layer = make()
    z = torch.randn(2, 8, 5, dtype=torch.complex128)  # [N, C, L] for the convolution, [B, L, 8] for the others
    if not isinstance(layer, cnn.ComplexConv1d):
        z = z.transpose(1, 2)
    args = (z, z, z) if isinstance(layer, cnn.ComplexMultiheadAttention) else (z,)
    with pytest.raises(TypeError, match=exactly("input is torch.complex128 but the layer's weights are torch.float32: "
                                                "convert the input with .to(torch.complex64) or the layer with "
                                                ".to(torch.float64)")):
        layer(*args)
    # following either advice works, and both give the same result up to float32 rounding
    out64 = layer.to(torch.float64)(*args)[0] if isinstance(layer, (cnn.ComplexLSTM, cnn.ComplexMultiheadAttention)) \
        else layer.to(torch.float64)(*args)
    layer = layer.to(torch.float32)
    small = tuple(a.to(torch.complex64) for a in args)
    out32 = layer(*small)[0] if isinstance(layer, (cnn.ComplexLSTM, cnn.ComplexMultiheadAttention)) else layer(*small)
    assert out64.dtype == torch.complex128 and out32.dtype == torch.complex64
    assert torch.allclose(out64.to(torch.complex64), out32, atol=1e-5)


def test_transformer_xl_refuses_an_empty_segment():
    """Stop 53: a [B, 0] segment raised IndexError (index -1 is out of bounds) deep in the memory update."""
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig
    cfg = TransformerXLConfig(vocab_size=27, n_layer=1, n_head=2, d_model=16, d_head=8, d_inner=32, mem_len=8)
    model = TransformerXL(cfg)
    with pytest.raises(ValueError, match=exactly("tokens must be [B, L] with L >= 1, got shape (3, 0)")):
        model(torch.zeros(3, 0, dtype=torch.long))
    logits, _ = model(torch.zeros(0, 5, dtype=torch.long))  # an empty batch passes, as in nn.TransformerEncoder
    assert logits.shape == (0, 5, 27)


def test_the_dtype_check_leaves_autocast_alone_and_names_bfloat16_weights():
    """Under autocast a shared-weight layer returns complex64, as the unshared layers do (since stop 79; it returned
    complex32, which the next layer had to take); a bfloat16 layer has no complex dtype to suggest for the input."""
    z = torch.randn(2, 8, dtype=torch.complex64, requires_grad=True)
    first, second = cnn.ComplexLinear(8, 8, share_weights=True), cnn.ComplexLinear(8, 4, share_weights=True)
    with warnings.catch_warnings(), torch.autocast("cpu", dtype=torch.float16):
        warnings.simplefilter("ignore")  # "ComplexHalf support is experimental"
        out = second(first(z))
    assert out.dtype == torch.complex64
    out.real.float().sum().backward()
    assert z.grad is not None and first.weight_real.grad is not None
    with pytest.raises(TypeError, match=exactly("input is torch.complex64 but the layer's weights are torch.bfloat16: "
                                                "convert the layer with .to(torch.float32)")):
        cnn.ComplexLinear(8, 4).to(torch.bfloat16)(z.detach())


def test_layer_hyper_parameters_are_checked_at_construction():
    """Stop 71: ComplexLayerNorm(eps=nan or -1) and ComplexBatchNorm1d(eps=-1) were accepted and gave NaN outputs;
    ComplexMultiheadAttention(dropout=-1) was accepted and silently meant no dropout; dropout 1.5 failed only at the
    first training forward pass, inside F.dropout."""
    for bad in (float("nan"), -1.0, float("inf"), "1e-5"):
        with pytest.raises(ValueError, match=exactly(f"eps must be a finite number >= 0, got {bad!r}")):
            cnn.ComplexLayerNorm(8, eps=bad)
        with pytest.raises(ValueError, match=exactly(f"eps must be a finite number >= 0, got {bad!r}")):
            cnn.ComplexBatchNorm1d(8, eps=bad)
    for bad in (-1, 1.5, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match=exactly(f"dropout must be in [0, 1], got {bad!r}")):
            cnn.ComplexMultiheadAttention(8, 2, dropout=bad)
        with pytest.raises(ValueError, match=exactly(f"dropout probability p must be in [0, 1], got {bad!r}")):
            cnn.ComplexDropout(bad)
    z = torch.randn(2, 3, 8, dtype=torch.complex64)
    with pytest.raises(ValueError, match=exactly("dropout_p must be in [0, 1], got -0.5")):
        CF.complex_scaled_dot_product_attention(z, z, z, dropout_p=-0.5)
    # the edges stay valid: eps 0 (as torch.nn.LayerNorm), dropout 0 and 1
    assert not cnn.ComplexLayerNorm(8, eps=0)(z).isnan().any()
    attn = cnn.ComplexMultiheadAttention(8, 2, dropout=1.0).train()
    out, weights = attn(z, z, z, need_weights=True)
    assert weights.abs().max() == 0  # every attention weight dropped


def test_complex_to_real_names_a_non_tensor():
    """Stop 71: complex_to_real([1j]) raised AttributeError: 'list' object has no attribute 'is_complex'."""
    with pytest.raises(TypeError, match=exactly("z must be a torch.Tensor (complex or real), got list")):
        co.complex_to_real([1j])
    z = torch.tensor([[1 + 2j, 3 - 4j]])
    assert torch.equal(co.complex_to_real(z), torch.tensor([[1.0, 3.0, 2.0, -4.0]]))


@pytest.mark.parametrize("make, name", [
    (lambda v: cnn.ComplexLinear(8, 4, share_weights=v), "share_weights"),
    (lambda v: cnn.ComplexLinear(8, 4, bias=v), "bias"),
    (lambda v: cnn.ComplexConv1d(8, 4, 3, share_weights=v), "share_weights"),
    (lambda v: cnn.ComplexMultiheadAttention(8, 2, share_weights=v), "share_weights"),
    (lambda v: cnn.ComplexMultiheadAttention(8, 2, batch_first=v), "batch_first"),
    (lambda v: cnn.ComplexLSTM(8, 4, share_weights=v), "share_weights"),
    (lambda v: cnn.ComplexLSTM(8, 4, batch_first=v), "batch_first"),
    (lambda v: cnn.ComplexLayerNorm(8, elementwise_affine=v), "elementwise_affine"),
    (lambda v: cnn.ComplexBatchNorm1d(8, affine=v), "affine"),
    (lambda v: cnn.ComplexBatchNorm1d(8, track_running_stats=v), "track_running_stats"),
    (lambda v: cnn.ComplexTransformerEncoderLayer(8, 2, 16, norm_first=v), "norm_first"),
    (lambda v: cnn.ComplexTransformerEncoderLayer(8, 2, 16, share_ffn_weights=v), "share_ffn_weights"),
    (lambda v: cnn.ComplexTransformerDecoderLayer(8, 2, 16, share_weights=v), "share_weights"),
    (lambda v: cnn.ComplexTransformerDecoderLayer(8, 2, 16, batch_first=v), "batch_first"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_the_complex_layers_switches_must_be_booleans(make, name):
    """Stop 73: the layers took any truthy value as True, so share_weights="no" silently built the shared-weight
    layer (half the parameters) and batch_first="False" meant batch first; the embeddings already refused this."""
    for bad in ("no", "False", 1, 0, None):
        with pytest.raises(ValueError, match=exactly(f"{name} must be True or False, got {bad!r}")):
            make(bad)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    built = {value: make(value) for value in (True, False)}  # the booleans themselves still build
    if name in ("share_weights", "share_ffn_weights", "bias", "elementwise_affine", "affine"):
        assert count(built[True]) != count(built[False])  # and they still switch the thing they name


def test_complex_embeddings_refuse_bfloat16_when_built_and_nan_tables():
    """Stop 73: ComplexVanillaEmbedding(dtype=bfloat16) was built and failed at forward with torch's "Expected both
    inputs to be Half, Float or Double tensors"; ComplexOrderEmbedding failed only at forward; NaN amplitudes or word
    vectors were taken without a word (frequency_init already refused them)."""
    for cls in (co.ComplexOrderEmbedding, co.ComplexVanillaEmbedding):
        with pytest.raises(TypeError, match=exactly(f"{cls.__name__} has no bfloat16 form (PyTorch has no bfloat16 "
                                                    "complex dtype); use float32, float64 or float16 parameters")):
            cls(10, 4, dtype=torch.bfloat16)
        with pytest.raises(TypeError, match=f"^{cls.__name__} has no bfloat16 form"):
            cls(10, 4).to(torch.bfloat16)(torch.tensor([[1, 2]]))
        bad = torch.randn(10, 4)
        bad[3, 1] = float("nan")
        with pytest.raises(ValueError, match=exactly("amplitude_init holds NaN or infinite values (first in row 3); "
                                                     "it must be finite")):
            cls(10, 4, amplitude_init=bad)
        with pytest.raises(ValueError, match=exactly("amplitude_init holds NaN or infinite values (first in row 3); "
                                                     "it must be finite")):
            cls.from_pretrained(bad)
    bad = torch.randn(10, 4)
    bad[7, 0] = float("inf")
    with pytest.raises(ValueError, match=exactly("vectors holds NaN or infinite values (first in row 7); it must be "
                                                 "finite")):
        co.WordEmbedding(10, 4).load_word_vectors(bad)
    assert torch.equal(co.ComplexOrderEmbedding.from_pretrained(bad.nan_to_num(posinf=1.0)).amplitude[7],
                       bad[7].nan_to_num(posinf=1.0))


def test_learned_positions_name_max_positions():
    """Stop 73: max_positions=2.5 raised "empty() takes 1 positional argument", '8' a comparison TypeError, True
    built a one-row table; a sequence longer than the table said "positions ... got values in [0, 3]" to a caller
    who had passed no positions."""
    for bad in (2.5, True, "8", 0, -1):
        with pytest.raises(ValueError, match=exactly(f"max_positions must be a positive integer, got {bad!r}")):
            co.LearnedPositionalEmbedding(10, 4, max_positions=bad)
    import numpy as np
    assert co.LearnedPositionalEmbedding(10, 4, max_positions=np.int64(8)).max_positions == 8  # any integer type
    emb = co.LearnedPositionalEmbedding(10, 4, max_positions=3)
    with pytest.raises(ValueError, match=exactly("sequence length 4 exceeds max_positions=3 of "
                                                 "LearnedPositionalEmbedding (without positions, tokens take positions "
                                                 "0 .. L-1); build it with a larger max_positions")):
        emb(torch.tensor([[1, 2, 0, 3]]))
    assert emb(torch.tensor([[1, 2, 3]])).shape == (1, 3, 4)
    with pytest.raises(ValueError, match=r"^positions must be integers in \[0, 3\)"):  # explicit positions: as before
        emb(torch.tensor([[1, 2]]), torch.tensor([[0, 3]]))


def test_complex_batch_norm_names_a_complex128_input_into_float32_statistics():
    """Stop 73: ComplexBatchNorm1d said torch's "mixed dtype (CPU): all inputs must share same datatype"."""
    z = torch.randn(2, 8, 5, dtype=torch.complex128)
    with pytest.raises(TypeError, match=exactly("input is torch.complex128 but the layer's weights are torch.float32: "
                                                "convert the input with .to(torch.complex64) or the layer with "
                                                ".to(torch.float64)")):
        cnn.ComplexBatchNorm1d(8)(z)
    assert cnn.ComplexBatchNorm1d(8).to(torch.float64)(z).dtype == torch.complex128
    assert cnn.ComplexBatchNorm1d(8, affine=False, track_running_stats=False)(z).dtype == torch.complex128


def test_complex_lstm_refuses_lengths_that_are_not_integers():
    """Stop 73: lengths=[2.7, 5.0] ran as [2, 5] without a word."""
    lstm = cnn.ComplexLSTM(4, 3, batch_first=True)
    z = torch.randn(2, 5, 4, dtype=torch.complex64)
    for bad in (torch.tensor([2.7, 5.0]), [2.5, 5.0], torch.tensor([True, True])):
        with pytest.raises(ValueError, match=r"^lengths must be integers \(an integer tensor or list\), got dtype "):
            lstm(z, lengths=bad)
    torch.testing.assert_close(lstm(z, lengths=[2, 5])[0], lstm(z, lengths=torch.tensor([2, 5]))[0])


def test_model_configs_check_the_types_of_their_fields():
    """Stop 73: tie_output="no" tied the output, share_embeddings="no" shared one table, nhead=True built one head,
    num_encoder_layers="2" said "'<' not supported", and TransformerXL's clamp_len=None or mem_len=2.5 built and
    failed only at the first forward pass."""
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig

    base = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    for key, value, message in (("tie_output", "no", "model.tie_output: expected true or false, got 'no'"),
                                ("share_embeddings", "no", "model.share_embeddings: expected true or false, got 'no'"),
                                ("nhead", True, "model.nhead: expected an integer, got True"),
                                ("num_encoder_layers", "2", "model.num_encoder_layers: expected an integer, got '2'"),
                                ("dim_feedforward", 16.0, "model.dim_feedforward: expected an integer, got 16.0")):
        with pytest.raises(ValueError, match=exactly(message)):
            TransformerSeq2Seq(Seq2SeqConfig("complex-order", **{**base, key: value}), 20, 20)
    with pytest.raises(TypeError, match=exactly("config must be a Seq2SeqConfig, got dict")):
        TransformerSeq2Seq(base, 20, 20)
    with pytest.raises(ValueError, match=exactly("src_vocab_size must be a positive integer, got 0")):
        TransformerSeq2Seq(Seq2SeqConfig("vanilla", **base, share_embeddings=False), 0, 20)
    xl = dict(vocab_size=20, n_layer=1, n_head=2, d_model=8, d_head=4, d_inner=16, mem_len=4)
    for key, value, message in (("tie_weight", "no", "model.tie_weight: expected true or false, got 'no'"),
                                ("clamp_len", None, "model.clamp_len: expected an integer, got None"),
                                ("mem_len", 2.5, "model.mem_len: expected an integer, got 2.5"),
                                ("n_layer", True, "model.n_layer: expected an integer, got True")):
        with pytest.raises(ValueError, match=exactly(message)):
            TransformerXL(TransformerXLConfig(**{**xl, key: value}))
    model = TransformerXL(TransformerXLConfig(**xl))
    with pytest.raises(ValueError, match=exactly("mem_len must be an integer >= 0, got 2.5")):
        model.reset_length(mem_len=2.5)
    with pytest.raises(ValueError, match=exactly("clamp_len must be an integer (<= 0: no clamp), got '3'")):
        model.reset_length(clamp_len="3")


def test_an_odd_width_for_a_complex_xl_embedding_names_the_setting_the_user_gave():
    """Stop 75: `--set model.d_model=7` was refused as `model.d_embed must be even`, a setting the user never gave
    (d_embed follows d_model when unset); and the complex network, whose embedding has d_model complex dimensions,
    was refused an odd d_model it builds and runs with."""
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig

    xl = dict(vocab_size=20, n_layer=1, n_head=2, d_model=7, d_head=4, d_inner=16, mem_len=4, embedding="complex-order")
    end = " must be even for a complex embedding ([Re z, Im z] of d_embed/2 complex dimensions), got 7"
    with pytest.raises(ValueError, match=exactly("model.d_model (model.d_embed, unset, follows it)" + end)):
        TransformerXL(TransformerXLConfig(**xl))
    with pytest.raises(ValueError, match=exactly("model.d_embed" + end)):
        TransformerXL(TransformerXLConfig(**{**xl, "d_model": 8, "d_embed": 7}))
    logits, _ = TransformerXL(TransformerXLConfig(**xl, network="complex"))(torch.randint(0, 20, (2, 5)))
    assert logits.shape == (2, 5, 20) and torch.isfinite(logits).all()


@pytest.mark.parametrize("network", ["real-embedding", "real-network"])
def test_a_row_of_padding_only_gives_the_same_finite_logits_with_and_without_gradients(network):
    """Stop 73: with real layers PyTorch's inference fast path gave NaN logits for a row of padding only under
    torch.no_grad(), finite ones with gradients on; a translation source of padding only likewise."""
    torch.manual_seed(0)
    if network == "real-embedding":
        model = TransformerClassifier(co.build_embedding("none", 20, 8, padding_idx=0), 2, nhead=2, dim_feedforward=8)
    else:
        model = TransformerClassifier(co.build_embedding("complex-order", 20, 4, padding_idx=0), 2, nhead=2,
                                      dim_feedforward=8, network="real")
    model.eval()
    tokens = torch.tensor([[0, 0, 0], [3, 4, 5]])
    with_grad = model(tokens)
    with torch.no_grad():
        without = model(tokens)
    assert torch.isfinite(without).all() and torch.allclose(with_grad, without)
    with torch.no_grad():  # the other row is what it is alone
        assert torch.allclose(model(tokens[1:]), without[1:], atol=1e-6)
    seq = TransformerSeq2Seq(Seq2SeqConfig("vanilla", d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                           dim_feedforward=16), 20, 20).eval()
    with torch.no_grad():
        assert torch.isfinite(seq(torch.tensor([[0, 0, 0], [3, 4, 5]]), torch.tensor([[1, 2], [1, 2]]))).all()


def test_classifiers_agree_on_empty_batches_and_refuse_empty_sequences():
    """Stop 73: batch 0 failed in the real LSTM ("Cannot pack empty tensors") and the real Transformer (a reshape
    error); length 0 gave bias-only logits (FastText, complex Transformer) or errors about arguments never passed."""
    emb = lambda name="none": co.build_embedding(name, 20, 8, padding_idx=0)  # noqa: E731
    models = {"FastTextClassifier": FastTextClassifier(emb(), 2, hidden=4),
              "LSTMClassifier": LSTMClassifier(emb(), 2, hidden=4),
              "complex LSTMClassifier": LSTMClassifier(emb("complex-order"), 2, hidden=4),
              "TransformerClassifier": TransformerClassifier(emb(), 2, nhead=2, dim_feedforward=8),
              "complex TransformerClassifier": TransformerClassifier(emb("complex-order"), 2, nhead=2,
                                                                     dim_feedforward=8)}
    for name, model in models.items():
        assert model.eval()(torch.zeros(0, 3, dtype=torch.long)).shape == (0, 2), name
        with pytest.raises(ValueError, match=exactly(f"{name.split()[-1]}: tokens must hold at least one position "
                                                     "([B, L] with L >= 1), got shape (2, 0)")):
            model(torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match=exactly("TransformerClassifier: nhead (3) must divide the layers' width (8)")):
        TransformerClassifier(emb(), 2, nhead=3)
    with pytest.raises(ValueError, match=exactly("TransformerClassifier: nhead (3) must divide the layers' width "
                                                 "(2 x embedding_dim = 16)")):
        TransformerClassifier(emb("complex-order"), 2, nhead=3, network="real")


def test_cnn_filter_sizes_from_a_generator_and_a_bare_int():
    """Stop 73: a generator was used up by the checks and built a CNN without filters; an int said "'int' object is
    not iterable"."""
    emb = co.build_embedding("none", 20, 8, padding_idx=0)
    model = CNNClassifier(emb, 2, filters=4, filter_sizes=(k for k in (2, 3)))
    assert model.filter_sizes == (2, 3) and model.output.in_features == 8
    with pytest.raises(ValueError, match=exactly("CNNClassifier: filter_sizes must be a sequence of positive "
                                                 "integers, got 3")):
        CNNClassifier(emb, 2, filters=4, filter_sizes=3)


@pytest.mark.parametrize("variant", ["vanilla", "complex-order"])
def test_seq2seq_names_token_shapes_mask_and_memory_dtypes_and_the_cache(variant):
    """Stop 73: a long src_pad met PyTorch's "Expected attn_mask dtype to be bool or float" (vanilla); memory of
    another dtype "mat1 and mat2 must have the same dtype"; a 3-D source an AssertionError about queries; tokens of
    shape [2, 2] in decode_step blamed the memory; cache=None an AttributeError."""
    model = TransformerSeq2Seq(Seq2SeqConfig(variant, d_model=8, nhead=2, num_encoder_layers=1,
                                             num_decoder_layers=1, dim_feedforward=16), 20, 20).eval()
    memory, src_pad = model.encode(torch.tensor([[3, 4, 0], [5, 6, 7]]))
    tokens = torch.tensor([1, 1])
    with pytest.raises(ValueError, match=exactly("src_pad must be a boolean [B, Ls] mask (True = padding), got "
                                                 "dtype torch.int64")):
        model.decode_step(tokens, 0, memory, src_pad.long(), {})
    wrong = memory.to(torch.complex128 if memory.is_complex() else torch.float64)
    with pytest.raises(ValueError, match=exactly(f"memory must be the encoder's output, of dtype {memory.dtype}, got "
                                                 f"{wrong.dtype}")):
        model.decode_step(tokens, 0, wrong, src_pad, {})
    with pytest.raises(ValueError, match=exactly("src must be a [B, L] tensor of token ids, got shape (1, 2, 4) and "
                                                 "dtype torch.int64")):
        model.encode(torch.ones(1, 2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=exactly("tokens must be a [B] tensor of token ids, got shape (2, 2) and dtype "
                                                 "torch.int64")):
        model.decode_step(torch.ones(2, 2, dtype=torch.long), 0, memory, src_pad, {})
    with pytest.raises(TypeError, match=exactly("cache must be a dict (start with {} at position 0 and keep passing "
                                                "it), got NoneType")):
        model.decode_step(tokens, 0, memory, src_pad, None)
    with pytest.raises(ValueError, match=r"^tgt_in must be a \[B, L\] tensor of token ids, got shape \(2, 3\) and "
                                         r"dtype torch.float32$"):
        model(torch.tensor([[3, 4, 0], [5, 6, 7]]), torch.ones(2, 3))
    assert model.decode_step(tokens, 0, memory, src_pad, {}).shape == (2, 20)  # the right forms still decode


def test_transformer_xl_names_a_memory_of_another_type_or_dtype():
    """Stop 73: a list of tensors said "'list' object has no attribute 'hidden'", float64 states a matmul dtype
    error 14 frames deep."""
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig, XLMemory

    model = TransformerXL(TransformerXLConfig(vocab_size=20, n_layer=1, n_head=2, d_model=8, d_head=4, d_inner=16,
                                              mem_len=4))
    tokens = torch.randint(0, 20, (2, 5))
    _, memory = model(tokens, model.init_memory(2))
    with pytest.raises(TypeError, match=exactly("memory must be an XLMemory (init_memory() or the previous "
                                                "segment's), got list")):
        model(tokens, list(memory.hidden))
    with pytest.raises(ValueError, match=exactly("memory holds torch.float64 states, the model's are torch.float32; "
                                                 "build it with init_memory()")):
        model(tokens, XLMemory([h.double() for h in memory.hidden], memory.next_position))


@pytest.mark.parametrize("variant", ["vanilla", "complex-order"])
def test_seq2seq_decode_step_refuses_a_cache_that_does_not_fit(variant):
    """Stop 74: a skipped or repeated position, a cache of another batch, or a cache filled from another source
    decoded silently: the new token attended to a prefix that is not its own, or to another source's keys."""
    model = TransformerSeq2Seq(Seq2SeqConfig(variant, d_model=8, nhead=2, num_encoder_layers=1,
                                             num_decoder_layers=1, dim_feedforward=16), 20, 20).eval()
    memory, src_pad = model.encode(torch.tensor([[3, 4, 0], [5, 6, 7]]))
    tokens = torch.tensor([1, 1])
    cache = {}
    model.decode_step(tokens, 0, memory, src_pad, cache)
    model.decode_step(tokens, 1, memory, src_pad, cache)
    for position in (1, 3, 0):
        with pytest.raises(ValueError, match=exactly(f"position {position} does not follow the cache, whose last "
                                                     f"step was at position 1: pass position 2, or a new {{}} cache "
                                                     f"to start over")):
            model.decode_step(tokens, position, memory, src_pad, cache)
    other, other_pad = model.encode(torch.tensor([[3, 4, 5, 6, 7]] * 2))
    with pytest.raises(ValueError, match=exactly("memory has 5 source positions but the cache was filled from a "
                                                 "memory of 3: the source keys are computed at the first step; start "
                                                 "a new {} cache for another source")):
        model.decode_step(tokens, 2, other, other_pad, cache)
    three, three_pad = model.encode(torch.tensor([[3, 4, 0], [5, 6, 7], [8, 9, 10]]))
    with pytest.raises(ValueError, match=exactly("the cache holds 2 sentence(s) but memory holds 3: after selecting "
                                                 "beams, apply reorder_cache to the cache with the same index")):
        model.decode_step(torch.tensor([1, 1, 1]), 2, three, three_pad, cache)
    # the refused calls changed nothing: the next step still matches a fresh full decode
    step2 = model.decode_step(tokens, 2, memory, src_pad, cache)
    full = model.decode(torch.tensor([[1, 1, 1], [1, 1, 1]]), memory, src_pad)[:, 2]
    assert torch.allclose(step2, full, atol=1e-5)
    reorder_cache(cache, torch.tensor([1, 0]))  # reordering keeps the cache usable
    assert cache["position"] == 2
    assert model.decode_step(tokens, 3, memory, src_pad, cache).shape == (2, 20)


@pytest.mark.parametrize("complex_", [False, True])
def test_classifiers_take_numpy_integer_sizes_as_ints(complex_):
    """Stop 74: sizes drawn by np.random.choice (np.int64) were refused by every classifier ("hidden must be a
    positive integer, got np.int64(8)"), and ComplexConv1d refused a NumPy kernel_size; they are now taken, and
    stored as Python ints (the checkpoints' configs stay JSON). Booleans, floats and strings are still refused."""
    import numpy as np

    emb = (co.ComplexOrderEmbedding if complex_ else co.WordEmbedding)(30, 8, padding_idx=0)
    n = np.int64
    models = [FastTextClassifier(emb, n(3), hidden=n(6)), LSTMClassifier(emb, n(3), hidden=n(6)),
              CNNClassifier(emb, n(3), filters=n(4), filter_sizes=np.array([2, 3])),
              TransformerClassifier(emb, n(3), nhead=n(2), dim_feedforward=n(16), num_layers=n(1))]
    tokens = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9]])
    for model in models:
        assert model.eval()(tokens).shape == (2, 3)
    assert type(models[0].output.out_features) is int
    assert models[2].filter_sizes == (2, 3) and all(type(k) is int for k in models[2].filter_sizes)
    assert cnn.ComplexConv1d(4, 3, np.int32(2)).kernel_size == 2
    for bad in (True, 2.0, "8"):
        with pytest.raises(ValueError, match=exactly(f"LSTMClassifier: hidden must be a positive integer, got "
                                                     f"{bad!r}")):
            LSTMClassifier(emb, 3, hidden=bad)
    with pytest.raises(ValueError, match=exactly("FastTextClassifier: dropout must be a probability in [0, 1), got "
                                                 "False")):
        FastTextClassifier(emb, 3, dropout=False)


@pytest.mark.parametrize("variant", ["vanilla", "complex-vanilla", "complex-order"])
def test_seq2seq_activation_is_relu_or_gelu_for_every_variant(variant):
    """Stop 74: Seq2SeqConfig(activation="tanh") built a complex model (its split activation takes any name) while
    vanilla failed with PyTorch's "activation should be relu/gelu, not tanh": one variant could not be compared."""
    config = Seq2SeqConfig(variant, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=16, activation="tanh")
    with pytest.raises(ValueError, match=exactly("model.activation must be 'relu' or 'gelu' (what "
                                                 "torch.nn.TransformerDecoderLayer takes, for every variant alike), "
                                                 "got 'tanh'")):
        TransformerSeq2Seq(config, 20, 20)
    config.activation = "gelu"
    assert TransformerSeq2Seq(config, 20, 20).encode(torch.tensor([[3, 4]]))[0].shape[:2] == (1, 2)


def test_layer_sizes_must_be_positive_integers_numpy_ones_included():
    """Stop 78: Linear(True, 4) built one input feature, Conv1d(8, 0, 3) and dim_feedforward=0 empty layers,
    num_heads=2.0 failed in the first forward (view()), LSTM refused np.int64, LayerNorm(np.int64) was not iterable."""
    import numpy as np
    c = torch.complex64
    bad = {
        "in_features must be a positive integer, got True": lambda: cnn.ComplexLinear(True, 4),
        "in_features must be a positive integer, got 8.0": lambda: cnn.ComplexLinear(8.0, 4),
        "out_features must be a positive integer, got 0": lambda: cnn.ComplexLinear(8, 0),
        "in_channels must be a positive integer, got True": lambda: cnn.ComplexConv1d(True, 4, 3),
        "out_channels must be a positive integer, got 0": lambda: cnn.ComplexConv1d(8, 0, 3),
        "num_heads must be a positive integer, got 2.0": lambda: cnn.ComplexMultiheadAttention(8, 2.0),
        "num_heads must be a positive integer, got True": lambda: cnn.ComplexMultiheadAttention(8, True),
        "embed_dim must be a positive integer, got '8'": lambda: cnn.ComplexMultiheadAttention("8", 2),
        "hidden_size must be a positive integer, got 4.0": lambda: cnn.ComplexLSTM(8, 4.0),
        "normalized_shape must be a positive integer or a non-empty sequence of them, got 0":
            lambda: cnn.ComplexLayerNorm(0),
        "normalized_shape must be a positive integer or a non-empty sequence of them, got (4, 2.5)":
            lambda: cnn.ComplexLayerNorm((4, 2.5)),
        "num_features must be a positive integer, got 0": lambda: cnn.ComplexBatchNorm1d(0),
        "dim_feedforward must be a positive integer, got 0":
            lambda: cnn.ComplexTransformerEncoderLayer(8, 2, dim_feedforward=0),
        "d_model (7) must be divisible by nhead (2)": lambda: cnn.ComplexTransformerEncoderLayer(7, 2),
        "nhead must be a positive integer, got 0": lambda: cnn.ComplexTransformerDecoderLayer(8, 0),
    }
    for message, make in bad.items():
        with pytest.raises(ValueError, match=exactly(message)):
            make()
    n = np.int64  # np.random.choice draws these in a hyper-parameter search: taken and stored as ints
    layers = [cnn.ComplexLinear(n(8), n(4)), cnn.ComplexConv1d(n(8), n(4), 3),
              cnn.ComplexMultiheadAttention(n(8), n(2)),
              cnn.ComplexLSTM(n(8), n(4), n(2)), cnn.ComplexLayerNorm(n(8)), cnn.ComplexBatchNorm1d(n(8)),
              cnn.ComplexTransformerEncoderLayer(n(8), n(2), n(16))]
    assert layers[0].in_features == 8 and type(layers[0].in_features) is int
    assert type(layers[1].out_channels) is int and type(layers[2].num_heads) is int
    assert layers[3].num_layers == 2 and type(layers[3].hidden_size) is int
    assert layers[4].normalized_shape == (8,) and type(layers[4].normalized_shape[0]) is int
    assert cnn.ComplexLayerNorm(np.array([8, 2])).normalized_shape == (8, 2)  # as torch.nn.LayerNorm takes it
    stack = cnn.ComplexTransformerEncoder(layers[6], n(2))
    assert stack.num_layers == 2 and type(stack.num_layers) is int
    z = torch.randn(2, 5, 8, dtype=c)
    assert stack(z).shape == (2, 5, 8) and layers[2](z)[0].shape == (2, 5, 8)


def test_options_torch_nn_lacks_are_keyword_only():
    """Stop 78: torch's positional order built another layer silently: MultiheadAttention's fifth place is
    add_bias_kv (here it was share_weights), the Transformer layers' ninth is bias (here share_weights)."""
    with pytest.raises(TypeError):
        cnn.ComplexMultiheadAttention(8, 2, 0.0, True, True)
    for layer in (cnn.ComplexTransformerEncoderLayer, cnn.ComplexTransformerDecoderLayer):
        with pytest.raises(TypeError):
            layer(8, 2, 16, 0.1, "relu", 1e-5, True, False, True)
    with pytest.raises(TypeError):
        cnn.ComplexConv1d(8, 4, 3, 1, 0, 1, 1)  # torch's seventh: groups
    with pytest.raises(TypeError):
        cnn.ComplexLayerNorm(8, 1e-5, True, True)  # torch's fourth: bias
    with pytest.raises(TypeError):
        cnn.ComplexLSTM(8, 4, 1, True, False, 0.0, False, 0)  # torch's eighth: proj_size
    with pytest.raises(TypeError):
        cnn.ComplexLinear(8, 4, True, True)
    # torch's positional prefix still works and means what it means in torch
    attn = cnn.ComplexMultiheadAttention(8, 2, 0.1, False)
    assert attn.dropout == 0.1 and attn.q_proj.bias_real is None and not attn.share_weights
    enc = cnn.ComplexTransformerEncoderLayer(8, 2, 16, 0.0, "gelu", 1e-6, False, True)
    assert not enc.self_attn.batch_first and enc.norm_first and enc.norm1.eps == 1e-6
    conv = cnn.ComplexConv1d(8, 4, 3, 2, 1, 2)
    assert (conv.stride, conv.padding, conv.dilation) == (2, 1, 2)
    lstm = cnn.ComplexLSTM(8, 4, 2, False, True, 0.0, True)
    assert lstm.num_layers == 2 and lstm.bias_real is None and lstm.batch_first and lstm.bidirectional


def test_a_decoding_cache_that_does_not_fit_the_call_is_refused():
    """Stop 78: a cached batch of one broadcast to a batch of three, and static cross-attention keys of one memory
    were used with a memory of another length; cache=[] into a decoder layer was an AttributeError."""
    c = torch.complex64
    torch.manual_seed(0)
    attn = cnn.ComplexMultiheadAttention(8, 2).eval()
    cache = {}
    attn(torch.randn(1, 1, 8, dtype=c), torch.randn(1, 4, 8, dtype=c), torch.randn(1, 4, 8, dtype=c), cache=cache,
         static_kv=True)
    with pytest.raises(ValueError, match=exactly("the cache holds keys for a batch of 1 but the query's batch is 3: "
                                                 "start a new {} cache for a new batch (after selecting beams, reorder "
                                                 "the cache alike)")):
        attn(torch.randn(3, 1, 8, dtype=c), torch.randn(3, 4, 8, dtype=c), torch.randn(3, 4, 8, dtype=c), cache=cache,
             static_kv=True)
    with pytest.raises(ValueError, match=exactly("the cache holds static keys of length 4 but key has length 6: "
                                                 "static_kv keys are computed at the first call; start a new {} cache "
                                                 "for a new memory")):
        attn(torch.randn(1, 1, 8, dtype=c), torch.randn(1, 6, 8, dtype=c), torch.randn(1, 6, 8, dtype=c), cache=cache,
             static_kv=True)
    self_cache = {}
    attn(torch.randn(1, 2, 8, dtype=c), cache=self_cache)
    attn(torch.randn(1, 1, 8, dtype=c), cache=self_cache)  # self-attention keys grow: any key length
    assert self_cache["k"].shape[2] == 3
    dec = cnn.ComplexTransformerDecoderLayer(8, 2, 16, 0.0).eval()
    memory = torch.randn(2, 4, 8, dtype=c)
    with pytest.raises(TypeError, match=exactly("cache must be a dict (empty at the first step), got list")):
        dec(torch.randn(2, 1, 8, dtype=c), memory, cache=[])
    cache = {}
    dec(torch.randn(2, 1, 8, dtype=c), memory, tgt_is_causal=True, cache=cache)
    with pytest.raises(ValueError, match=r"^the cache holds static keys of length 4 but memory has length 5"):
        dec(torch.randn(2, 1, 8, dtype=c), torch.randn(2, 5, 8, dtype=c), tgt_is_causal=True, cache=cache)


def test_the_grid_api_checks_split_names_list_types_and_inspect_k(tmp_path):
    """Stop 78 (an audit): make_split(data, "fold-10") was a bare IndexError and a seed split of a CV data set was
    taken as fold 1; GridConfig(datasets="CR") said "unknown dataset 'C'", folds="0" a bare TypeError;
    inspect_checkpoint(k=0) listed every word as the greatest, k=2.5 failed in a slice."""
    from complexorder.data.classification import TextClassificationData, make_split
    from complexorder.experiments.classification import GridConfig
    from complexorder.experiments.inspection import inspect_checkpoint

    cv = TextClassificationData("CR", ("negative", "positive"), {"all": [["w"]] * 40}, {"all": [0, 1] * 20}, [])
    for bad in ("fold-10", "seed-1", "blah", "fold-", 3):
        with pytest.raises(ValueError, match=exactly(f"split_id must be 'fold-K' with K in 0..9 for the CV data set "
                                                     f"CR, got {bad!r}")):
            make_split(cv, bad)
    assert len(make_split(cv, "fold-9").test[1]) == 4
    fixed = TextClassificationData("TREC", ("a", "b"), {p: [["w"]] * 4 for p in ("train", "dev", "test")},
                                   {p: [0, 1, 0, 1] for p in ("train", "dev", "test")}, [])
    with pytest.raises(ValueError, match=exactly("split_id must be 'seed-S' (S >= 0) for the fixed-split data set "
                                                 "TREC, got 'fold-1'")):
        make_split(fixed, "fold-1")
    for field_, value, message in (("datasets", "CR", "datasets must be a list (config `datasets` / --datasets), got "
                                                      "'CR'"),
                                   ("folds", "0", "folds must be a list (config `folds` / --folds), got '0'"),
                                   ("folds", [0, "1"], "folds must hold integers (config `folds` / --folds), got '1'"),
                                   ("seeds", [True], "seeds must hold integers (config `seeds` / --seeds), got True")):
        with pytest.raises(ValueError, match=exactly(message)):
            GridConfig(**{field_: value}).validate()
    for k in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=exactly(f"k must be a positive integer (words per list; --top), got "
                                                     f"{k!r}")):
            inspect_checkpoint(tmp_path / "missing.pt", tmp_path / "out", k=k)
    # a review: NumPy integers, a range and a tuple are taken (np.arange folds planned fine before the check)
    import numpy as np

    grid = GridConfig(datasets=("CR",), folds=np.arange(2), seeds=range(1, 3))
    grid.validate()
    assert grid.datasets == ["CR"] and grid.folds == [0, 1] and grid.seeds == [1, 2]
    assert all(type(v) is int for v in grid.folds + grid.seeds)
    with pytest.raises(FileNotFoundError):  # k = np.int64(5) passes its check; the missing file is next
        inspect_checkpoint(tmp_path / "missing.pt", tmp_path / "out", k=np.int64(5))


def test_a_module_moved_to_a_complex_dtype_is_named_with_the_fix():
    """Stop 78 (an audit): Module.to(torch.complex64) (the public output dtype, so a plausible try) is allowed by
    torch and turned the real tables and weights complex; the forward then failed inside arange, autograd or with
    'input is torch.complex64 but the layer's weights are torch.complex64'."""
    c = torch.complex64
    for emb in (co.ComplexOrderEmbedding(10, 4), co.ComplexVanillaEmbedding(10, 4)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: "Complex modules are a new feature ..."
            emb.to(c)
        with pytest.raises(TypeError, match=exactly(f"{type(emb).__name__}'s tables are torch.complex64 (a "
                                                    f".to(torch.complex64)?): it keeps real tables and returns "
                                                    "complex outputs itself; convert it back with "
                                                    ".to(torch.float32)")):
            emb(torch.tensor([[1, 2]]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert emb.to(torch.float32)(torch.tensor([[1, 2]])).dtype == c
    for layer, x in ((cnn.ComplexLinear(4, 4), torch.randn(2, 3, 4, dtype=c)),
                     (cnn.ComplexLSTM(4, 4), torch.randn(2, 3, 4, dtype=c)),
                     (cnn.ComplexConv1d(4, 4, 1), torch.randn(2, 4, 3, dtype=c)),
                     (cnn.ComplexLayerNorm(4), torch.randn(2, 3, 4, dtype=c)),
                     (cnn.ComplexTransformerEncoderLayer(4, 2, 8), torch.randn(2, 3, 4, dtype=c))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer.to(torch.complex128)
        with pytest.raises(TypeError, match=exactly("the layer's weights are torch.complex128 (a "
                                                    ".to(torch.complex128)?): complex layers keep real parameters and "
                                                    "take complex inputs; convert the layer back with "
                                                    ".to(torch.float64)")):
            layer(x)


def test_seq2seq_refuses_two_tables_into_a_shared_one_an_empty_source_and_a_misspelt_score():
    """Stop 78 (an audit of the models): a state dict with separate source and target tables loaded into a model
    sharing one table kept the target's and lost the source's, without an error; an empty source failed deep in
    torch (vanilla) or attended to nothing (complex); a misspelt attention_score said "score must be ..." (seq2seq)
    or was built silently (the classifier's real layers)."""
    def config(**kw):
        return Seq2SeqConfig("complex-order", d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                             dim_feedforward=32, **kw)

    torch.manual_seed(0)
    separate = TransformerSeq2Seq(config(share_embeddings=False), 30, 30)
    shared = TransformerSeq2Seq(config(share_embeddings=True), 30, 30)
    with pytest.raises(RuntimeError, match=r"src_embedding\.amplitude and tgt_embedding\.amplitude differ, but this "
                                           r"model holds one tensor for both: the state dict is of an untied model; "
                                           r"build this one with share_embeddings=False"):
        shared.load_state_dict(separate.state_dict())
    twin = TransformerSeq2Seq(config(share_embeddings=True), 30, 30)
    shared.load_state_dict(twin.state_dict())  # a shared model's own state dict loads
    assert torch.equal(shared.src_embedding.amplitude, twin.src_embedding.amplitude)
    for variant in ("vanilla", "complex-order"):
        model = TransformerSeq2Seq(dataclasses.replace(config(), variant=variant), 30, 30)
        with pytest.raises(ValueError, match=exactly("src must hold at least one token per sentence ([B, Ls] with "
                                                     "Ls >= 1; a sentence of padding only is fine), got shape (2, 0)")):
            model(torch.ones(2, 0, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=exactly("model.attention_score must be one of 'modulus', 'real', "
                                                 "'bilinear', got 'bad'")):
        TransformerSeq2Seq(config(attention_score="bad"), 30, 30)
    with pytest.raises(ValueError, match=exactly("attention_score must be one of 'modulus', 'real', 'bilinear', got "
                                                 "'bad'")):
        TransformerClassifier(co.build_embedding("none", 50, 16), 2, nhead=2, attention_score="bad")



def test_transformer_xl_refuses_an_untied_state_and_names_bad_tokens_and_batch_sizes():
    """Stop 78 (an audit of the models): tie_weight holds one table under word_emb.weight and out.weight, so an
    untied model's state dict loaded silently (the output layer's table over the embedding's); a list of tokens
    said "'list' object has no attribute 'dim'", init_memory(-1) "negative dimension"."""
    from complexorder.models.transformer_xl import TransformerXL, TransformerXLConfig

    def model(**kw):
        torch.manual_seed(0)
        return TransformerXL(TransformerXLConfig(n_layer=1, d_model=8, n_head=2, d_head=4, d_inner=16, mem_len=4, **kw))

    with pytest.raises(RuntimeError, match=r"word_emb\.weight and out\.weight differ, but this model holds one "
                                           r"tensor for both: the state dict is of an untied model; build this one "
                                           r"with tie_weight = false"):
        model(tie_weight=True).load_state_dict(model(tie_weight=False).state_dict())
    tied = model(tie_weight=True)
    tied.load_state_dict(model(tie_weight=True).state_dict())
    with pytest.raises(TypeError, match=exactly("tokens must be a [B, L] integer tensor, got list")):
        tied([[1, 2]])
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match=exactly(f"batch_size must be an integer >= 0, got {bad!r}")):
            tied.init_memory(bad)


def test_classifier_dropout_none_and_authors_layer_sizes_are_named():
    """Stop 78 (an audit of the models): dropout=None passed the classifiers' check (None meant "nothing to check")
    and failed in torch naming no model; AuthorsEncoderLayer(16, 0) was a ZeroDivisionError, (0, 2) was built."""
    from complexorder.models.authors_encoder import AuthorsEncoderLayer

    with pytest.raises(ValueError, match=exactly("FastTextClassifier: dropout must be a probability in [0, 1), got "
                                                 "None")):
        FastTextClassifier(co.build_embedding("none", 20, 8), 2, dropout=None)
    for args, message in (((16, 0), "nhead must be a positive integer, got 0"),
                          ((0, 2), "d_model must be a positive integer, got 0"),
                          ((16, 2, 0), "dim_feedforward must be a positive integer, got 0")):
        with pytest.raises(ValueError, match=exactly(message)):
            AuthorsEncoderLayer(*args)
