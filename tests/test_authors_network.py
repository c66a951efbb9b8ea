"""network = "authors": the encoder stack of the authors' released Transformer classifier, written out by hand as their
code computes it (FreedomIntelligence/complex-order, TEXT CLASSIFICATION/Transformer: attention_complex.py,
encoder_complex.py, feed_forward_complex.py, model_transformer/Complex_order.py) with separate real and imaginary
tensors, against the module working on complex tensors."""

import dataclasses
import math

import pytest
import torch
from torch.nn import functional as F

import complexorder as co
from complexorder.models import build_classifier
from complexorder.models.authors_encoder import AuthorsEncoderLayer, AuthorsLayerNorm

D, HEADS, FF = 8, 2, 12


def randomise(module, seed=1):
    """Every parameter drawn anew (the copies at initialisation would hide a wrong index)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5 + (1.0 if p.dim() == 1 and p.shape[0] == D else 0.0))


def their_norm(norm, t):  # the Annotated Transformer's LayerNorm: unbiased std, eps added to the std
    mean = t.mean(-1, keepdim=True)
    return norm.weight * (t - mean) / (t.std(-1, keepdim=True) + 1e-6) + norm.bias


def their_layer(layer, x, y, drop=lambda t: t):
    """encoder_complex.EncoderLayer.forward with separate real (x) and imaginary (y) parts; ``drop`` stands for their
    sublayer and feed-forward dropouts (identity: dropout off), the attention weights' dropout is off."""
    lin = [(p.weight, p.bias) for p in layer.projections]
    b, n, _ = x.shape
    heads = lambda t: t.view(b, n, HEADS, D // HEADS).transpose(1, 2)  # noqa: E731
    qr, kr, vr = (heads(F.linear(x, *lin[i])) for i in range(3))
    qp, kp, vp = (heads(F.linear(y, *lin[i])) for i in range(3))  # linears_phase = linears_real
    scores_real = qr @ kr.transpose(-2, -1) - qp @ kp.transpose(-2, -1)
    scores_phase = qr @ kp.transpose(-2, -1) + qp @ kr.transpose(-2, -1)
    p_attn = torch.softmax(torch.sqrt(scores_real ** 2 + scores_phase ** 2) / math.sqrt(D // HEADS), -1)
    merge = lambda t: t.transpose(1, 2).reshape(b, n, D)  # noqa: E731
    x, y = F.linear(merge(p_attn @ vr), *lin[3]), F.linear(merge(p_attn @ vp), *lin[3])
    x = x + drop(their_norm(layer.norm1, x))  # sublayer_output[0](x, lambda x: x)
    y = y + drop(y)  # sublayer_output[0](y, lambda x: y): the attention output itself
    ffn = lambda t: F.linear(drop(F.relu(F.linear(t, layer.linear1.weight, layer.linear1.bias))),  # noqa: E731
                             layer.linear2.weight, layer.linear2.bias)
    return x + drop(ffn(their_norm(layer.norm2, x))), y + drop(ffn(their_norm(layer.norm2, y)))


def test_layer_norm_is_theirs_written_out():
    norm = AuthorsLayerNorm(4)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    std = math.sqrt(5 / 3)  # Bessel's correction: sum of squares 5 over n - 1 = 3
    expected = torch.tensor([[-1.5, -0.5, 0.5, 1.5]]) / (std + 1e-6)
    torch.testing.assert_close(norm(x), expected)
    assert not torch.allclose(norm(x), F.layer_norm(x, (4,)), atol=1e-2)  # not nn.LayerNorm's biased variance


def test_encoder_layer_is_theirs_written_out():
    torch.manual_seed(0)
    layer = AuthorsEncoderLayer(D, HEADS, FF, dropout=0.1).eval()
    randomise(layer)
    z = torch.randn(3, 5, D, dtype=torch.complex64)
    with torch.no_grad():
        x, y = their_layer(layer, z.real, z.imag)
        out = layer(z)
    assert out.dtype == torch.complex64
    torch.testing.assert_close(out.real, x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.imag, y, atol=1e-5, rtol=1e-5)


class Doubling(torch.nn.Module):
    """A deterministic stand-in for dropout (x -> 2x) with p = 0, so the attention weights are not dropped."""
    p = 0.0

    def forward(self, t):
        return 2 * t


def test_encoder_layer_drops_where_theirs_does():
    """Their five dropouts of the sublayers and the feed-forward block, each stood in for by x -> 2x: placed as theirs
    (none on norm1 of the imaginary part, none on the attention input, which has no residual)."""
    torch.manual_seed(0)
    layer = AuthorsEncoderLayer(D, HEADS, FF, dropout=0.1)
    randomise(layer)
    layer.dropout = Doubling()
    z = torch.randn(3, 5, D, dtype=torch.complex64)
    with torch.no_grad():
        x, y = their_layer(layer, z.real, z.imag, drop=lambda t: 2 * t)
        out = layer(z)
    torch.testing.assert_close(out.real, x, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(out.imag, y, atol=1e-4, rtol=1e-5)


def test_encoder_layer_starts_as_theirs_and_masks_padded_keys():
    torch.manual_seed(0)
    layer = AuthorsEncoderLayer(D, HEADS, FF, dropout=0.0)
    first = layer.projections[0]
    for p in layer.projections[1:]:  # clones(self.real, 4): Q, K, V and O start as one linear's copies
        assert torch.equal(p.weight, first.weight) and torch.equal(p.bias, first.bias) and p.weight is not first.weight
    assert torch.equal(layer.norm1.weight, torch.ones(D)) and torch.equal(layer.norm2.bias, torch.zeros(D))
    randomise(layer)
    z = torch.randn(2, 5, D, dtype=torch.complex64)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    with torch.no_grad():
        torch.testing.assert_close(layer(z, src_key_padding_mask=pad)[1, :3], layer(z[1:, :3])[0], atol=1e-5,
                                   rtol=1e-5)
    with pytest.raises(ValueError, match=r"^AuthorsEncoderLayer: src must be a complex \[B, L, d_model\] tensor, got "
                                         r"torch.float32 \(2, 5, 8\)$"):
        layer(z.real)
    with pytest.raises(ValueError, match=r"^d_model \(8\) must be divisible by nhead \(3\)$"):
        AuthorsEncoderLayer(D, 3, FF)


def make_authors(num_layers, emb_name="complex-order", **kw):
    torch.manual_seed(0)
    emb = co.build_embedding(emb_name, 24, D, padding_idx=0, max_positions=32)
    return build_classifier("transformer", emb, 3, nhead=HEADS, dim_feedforward=FF, num_layers=num_layers,
                            network="authors", readout="last", attention_score="bilinear", **kw)


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_classifier_is_their_stack_written_out(num_layers):
    """Complex_order.Transformer.forward: encoder_layer(real, phase); encoder(phase, real) = its N layers and a
    norm on each part; fc([real, phase] of the read position). Here with the padding masked and "last" reading each
    sentence's last token (the fixed-length input is a separate setting)."""
    model = make_authors(num_layers, dropout=0.0).eval()
    assert model.network == "authors" and "network='authors'" in repr(model)
    assert model.output.in_features == 2 * D
    for layer in model.layers[1:]:  # the Encoder deep-copies encoder_layer: every layer starts as the first
        for (name, p), q in zip(layer.named_parameters(), model.layers[0].parameters()):
            assert torch.equal(p, q), name
    randomise(model.layers, seed=2)
    randomise(model.final_norm, seed=3)
    tokens = torch.tensor([[5, 7, 9, 11, 3], [4, 6, 8, 0, 0]])
    with torch.no_grad():
        z = model.embedding(tokens[:1])  # the unpadded sentence (their code has no mask)
        x, y = their_layer(model.layers[0], z.real, z.imag)
        x, y = y, x  # self.encoder(encoded_sents_phase, encoded_sents_real)
        for layer in model.layers[1:]:
            x, y = their_layer(layer, x, y)
        x, y = their_norm(model.final_norm, x), their_norm(model.final_norm, y)
        expected = model.output(torch.cat([x, y], 2)[:, -1])
        logits = model(tokens)
        torch.testing.assert_close(logits[:1], expected, atol=1e-5, rtol=1e-5)
        # the padded row: its padded keys masked and its last real token read, so it equals the sentence alone
        torch.testing.assert_close(logits[1:], model(tokens[1:, :3]), atol=1e-5, rtol=1e-5)


def test_classifier_with_the_authors_input_is_their_forward_written_out():
    """network="authors" with fixed_length=L and "from-end": their Complex_order.Transformer.forward on a sentence
    padded to L slots, positions L - 1, ..., 0, no mask, the state of slot L - 1 read out."""
    L = 7
    torch.manual_seed(0)
    emb = co.build_embedding("complex-order", 24, D, padding_idx=None, max_positions=32)
    model = build_classifier("transformer", emb, 3, nhead=HEADS, dim_feedforward=FF, num_layers=2, dropout=0.0,
                             network="authors", readout="last", attention_score="bilinear", fixed_length=L,
                             position_order="from-end").eval()
    randomise(model.layers, seed=4)
    tokens = torch.tensor([[5, 7, 9, 11], [4, 6, 0, 0]])
    padded = torch.nn.functional.pad(tokens, (0, L - 4))
    with torch.no_grad():
        z = model.embedding(padded, torch.arange(L - 1, -1, -1).expand(2, L))
        x, y = their_layer(model.layers[0], z.real, z.imag)
        x, y = their_layer(model.layers[1], y, x)  # self.encoder(encoded_sents_phase, encoded_sents_real)
        x, y = their_norm(model.final_norm, x), their_norm(model.final_norm, y)
        expected = model.output(torch.cat([x, y], 2)[:, -1, :])
        torch.testing.assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)


def test_classifier_errors_are_one_line():
    with pytest.raises(ValueError, match=r"^network='authors' needs a complex embedding; SinusoidalPositionalEmbedding "
                                         r"is real$"):
        make_authors(2, "tpe")
    emb = co.build_embedding("complex-order", 24, D, padding_idx=0)
    with pytest.raises(ValueError, match=r"^network='authors' reads \[Re h, Im h\] of one position, as the authors' "
                                         r"code: readout must be 'last', got 'modulus-of-mean'$"):
        build_classifier("transformer", emb, 3, nhead=HEADS, dim_feedforward=FF, network="authors")
    with pytest.raises(ValueError, match=r"^share_weights does not apply to network='authors' \(its weights are real, "
                                         r"shared by both parts already\)$"):
        make_authors(2, share_weights=True)
    with pytest.raises(ValueError, match=r"^network must be one of 'auto', 'complex', 'real', 'authors', got 'theirs'$"):
        build_classifier("transformer", emb, 3, nhead=HEADS, dim_feedforward=FF, network="theirs")


def test_classifier_trains_and_sees_word_order():
    model = make_authors(2)
    tokens = torch.tensor([[5, 7, 9, 11, 3, 4]])
    model.eval()
    assert not torch.allclose(model(tokens), model(tokens.flip(1)), atol=1e-4)
    model.train()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss = F.cross_entropy(model(torch.randint(1, 24, (4, 6))), torch.tensor([0, 1, 2, 0]))
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert {"embedding.frequency", "layers.1.projections.3.weight", "final_norm.weight", "output.weight"} <= changed


def test_runner_setting_is_checked_and_reaches_the_model(tmp_path):
    from test_classification_runner import tiny_grid

    from complexorder.experiments.classification import build_model_from_config, plan_units, run_grid, unit_config

    grid = tiny_grid(tmp_path, models=["transformer"], embeddings=["complex-order"], folds=[0])
    settings = dataclasses.replace(grid.transformer, network="authors", readout="last", num_layers=2,
                                   attention_score="bilinear")
    authors = dataclasses.replace(grid, transformer=settings)
    (unit,) = plan_units(authors)
    model = build_model_from_config(unit_config(authors, unit), vocab_size=30, num_classes=2, max_positions=8)
    assert model.network == "authors" and len(model.layers) == 2
    (record,) = run_grid(authors, progress=False, log=lambda *_: None)
    assert record["config"]["settings"]["network"] == "authors" and 0 <= record["test_accuracy"] <= 1
    mean = dataclasses.replace(authors, transformer=dataclasses.replace(settings, readout="modulus-of-mean"))
    with pytest.raises(ValueError, match=r"^\[transformer\] readout must be 'last' with network = 'authors' \(it reads "
                                         r"\[Re h, Im h\] of one position, as the authors' code\), got "
                                         r"'modulus-of-mean'$"):
        plan_units(mean)
    tpe = dataclasses.replace(authors, embeddings=["tpe"])
    with pytest.raises(ValueError, match=r"^\[transformer\] network = 'authors' needs complex embeddings; variant "
                                         r"'tpe' uses the real embedding 'tpe'$"):
        plan_units(tpe)
    shared = dataclasses.replace(authors, transformer=dataclasses.replace(settings, share_weights=True))
    with pytest.raises(ValueError, match=r"^\[transformer\] network = 'authors' has real weights shared by both parts "
                                         r"already; variant 'complex-order' sets share_weights$"):
        plan_units(shared)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_authors_network_trains_under_autocast_as_in_float32(dtype):
    """Under torch.autocast it failed: its parts were joined with torch.complex, which has no bfloat16 form
    ("Expected both inputs to be Half, Float or Double tensors but got BFloat16"), and float16 parts met float32
    ones in the norm's sublayer (stop 80). The other networks already joined them in float32."""
    torch.manual_seed(0)
    model = build_classifier("transformer", co.build_embedding("complex-order", 50, D), 2, nhead=HEADS,
                             dim_feedforward=FF, network="authors", readout="last", num_layers=2).eval()
    tokens, labels = torch.randint(1, 50, (4, 6)), torch.tensor([0, 1, 0, 1])
    exact = F.cross_entropy(model(tokens), labels)
    with torch.autocast("cpu", dtype=dtype):
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
    loss.backward()
    assert logits.dtype == dtype  # the last linear layer runs in autocast's precision, as torch's
    assert abs(loss.item() - exact.item()) < 0.02 * abs(exact.item())
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
