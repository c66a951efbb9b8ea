"""ComplexTransformerEncoder / ComplexTransformerDecoder: torch.nn.TransformerEncoder / Decoder's stacks of copies."""

import re

import pytest
import torch

from complexorder import nn as cnn

C64 = torch.complex64


def encoder_layer(**kw):
    return cnn.ComplexTransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)


def decoder_layer(**kw):
    return cnn.ComplexTransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)


def test_encoder_is_its_layers_in_order_then_the_norm():
    torch.manual_seed(0)
    encoder = cnn.ComplexTransformerEncoder(encoder_layer(norm_first=True), 3, norm=cnn.ComplexLayerNorm(8)).eval()
    encoder.reset_parameters()  # the copies start equal; drawn afresh they differ, so the order matters below
    assert not torch.equal(encoder.layers[0].ffn.linear1.weight_real, encoder.layers[1].ffn.linear1.weight_real)
    src = torch.randn(2, 5, 8, dtype=C64)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    x = src
    for layer in encoder.layers:
        x = layer(x, src_key_padding_mask=pad, is_causal=True)
    torch.testing.assert_close(encoder(src, src_key_padding_mask=pad, is_causal=True), encoder.norm(x))
    reversed_order = src
    for layer in reversed(encoder.layers):
        reversed_order = layer(reversed_order, src_key_padding_mask=pad, is_causal=True)
    assert not torch.allclose(encoder.norm(reversed_order), encoder.norm(x), atol=1e-4)
    torch.testing.assert_close(encoder(src[1, :3]), encoder(src[1:, :3])[0])  # unbatched through the stack


def test_copies_start_equal_and_are_independent():
    layer = encoder_layer()
    encoder = cnn.ComplexTransformerEncoder(layer, 2)
    assert encoder.layers[0] is not layer and encoder.layers[0] is not encoder.layers[1]
    for a, b in zip(encoder.layers[0].parameters(), encoder.layers[1].parameters()):
        assert torch.equal(a, b) and a.data_ptr() != b.data_ptr()  # as torch: deep copies
    assert sum(p.numel() for p in encoder.parameters()) == 2 * sum(p.numel() for p in layer.parameters())
    with torch.no_grad():
        encoder.layers[0].norm1.weight.add_(1.0)
    assert not torch.equal(encoder.layers[0].norm1.weight, encoder.layers[1].norm1.weight)


def test_decoder_step_by_step_with_the_cache_equals_the_whole_prefix():
    torch.manual_seed(0)
    decoder = cnn.ComplexTransformerDecoder(decoder_layer(), 3, norm=cnn.ComplexLayerNorm(8)).eval()
    decoder.reset_parameters()
    tgt, memory = torch.randn(2, 6, 8, dtype=C64), torch.randn(2, 4, 8, dtype=C64)
    mem_pad = torch.tensor([[False] * 4, [False] * 2 + [True] * 2])
    full = decoder(tgt, memory, memory_key_padding_mask=mem_pad, tgt_is_causal=True)
    x = tgt
    for layer in decoder.layers:
        x = layer(x, memory, memory_key_padding_mask=mem_pad, tgt_is_causal=True)
    torch.testing.assert_close(full, decoder.norm(x))
    cache = {}
    steps = [decoder(tgt[:, t : t + 1], memory, memory_key_padding_mask=mem_pad, cache=cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    assert sorted(cache) == [0, 1, 2] and cache[0]["self"]["k"].shape[2] == 6  # every layer kept its 6 keys
    # a later target token changes no earlier output (causal through the whole stack)
    changed = tgt.clone()
    changed[:, 4:] = torch.randn(2, 2, 8, dtype=C64)
    torch.testing.assert_close(decoder(changed, memory, memory_key_padding_mask=mem_pad, tgt_is_causal=True)[:, :4],
                               full[:, :4])


def test_bad_stacks_are_named():
    with pytest.raises(ValueError, match=r"^ComplexTransformerEncoder: num_layers must be a positive integer, got 0$"):
        cnn.ComplexTransformerEncoder(encoder_layer(), 0)
    with pytest.raises(ValueError, match=r"^ComplexTransformerDecoder: num_layers must be a positive integer, got True$"):
        cnn.ComplexTransformerDecoder(decoder_layer(), True)
    with pytest.raises(TypeError, match=re.escape("ComplexTransformerDecoder: the layer must be a "
                                                  "ComplexTransformerDecoderLayer, got ComplexTransformerEncoderLayer")):
        cnn.ComplexTransformerDecoder(encoder_layer(), 2)
    decoder = cnn.ComplexTransformerDecoder(decoder_layer(), 2)
    with pytest.raises(TypeError, match=r"^cache must be a dict \(empty at the first step\), got list$"):
        decoder(torch.randn(1, 1, 8, dtype=C64), torch.randn(1, 3, 8, dtype=C64), cache=[])


def test_decoder_arguments_sit_in_torchs_places_and_memory_is_causal_masks_the_memory():
    """torch's 8th argument is memory_is_causal: a positional call in torch's order read it as the cache."""
    torch.manual_seed(0)
    decoder = cnn.ComplexTransformerDecoder(decoder_layer(), 2).eval()
    tgt, memory = torch.randn(1, 4, 8, dtype=C64), torch.randn(1, 4, 8, dtype=C64)
    mask = torch.ones(4, 4, dtype=torch.bool).triu(1)  # True = not allowed: the causal mask written out
    by_flag = decoder(tgt, memory, None, None, None, None, True, True)  # torch's positional order
    torch.testing.assert_close(by_flag, decoder(tgt, memory, mask, mask))
    assert not torch.allclose(by_flag, decoder(tgt, memory, mask), atol=1e-4)  # the memory mask does something
    with pytest.raises(TypeError):
        decoder(tgt, memory, None, None, None, None, True, False, {})  # cache is keyword-only


@pytest.mark.parametrize("make", [encoder_layer, decoder_layer])
def test_layers_reset_every_sub_layer(make):
    torch.manual_seed(0)
    layer = make()
    before = {n: p.detach().clone() for n, p in layer.named_parameters()}
    with torch.no_grad():
        for p in layer.parameters():
            p.fill_(7.0)
    layer.reset_parameters()
    for name, p in layer.named_parameters():
        assert not bool((p == 7.0).any()), f"{name} was not reset"
        if "norm" in name:  # layer norms come back to their start exactly: weights 1, biases 0
            torch.testing.assert_close(p, before[name])
