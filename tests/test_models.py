"""Classifiers: every architecture x embedding runs, trains, and respects padding and order."""

import pytest
import torch

import complexorder as co
from complexorder.data.synthetic import word_order_task
from complexorder.experiments.training import evaluate_accuracy, parameter_groups, train_classifier
from complexorder.models import CLASSIFIERS, build_classifier

SMALL = {"fasttext": {"hidden": 8}, "cnn": {"filters": 4}, "lstm": {"hidden": 8},
         "transformer": {"nhead": 2, "dim_feedforward": 16}}


def make(arch, emb_name, dim=8, vocab=24, **kw):
    torch.manual_seed(0)
    emb = co.build_embedding(emb_name, vocab, dim, padding_idx=0, max_positions=32)
    return build_classifier(arch, emb, 3, **{**SMALL[arch], **kw})


@pytest.mark.parametrize("arch", list(CLASSIFIERS))
@pytest.mark.parametrize("emb_name", list(co.EMBEDDINGS))
def test_every_architecture_with_every_embedding_trains(arch, emb_name):
    model = make(arch, emb_name)
    tokens = torch.randint(1, 24, (4, 9))
    tokens[1, 6:] = 0
    logits = model(tokens)
    assert logits.shape == (4, 3) and logits.dtype == torch.float32
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    data = word_order_task(32, seed=0)
    train_classifier(model, data, None, epochs=1, batch_size=16, lr=1e-2, progress=False, min_length=5)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p, before[n])]
    assert any(n.startswith("embedding.") for n in changed) and any(n.startswith("output.") for n in changed)
    if emb_name == "complex-order":
        assert "embedding.frequency" in changed


@pytest.mark.parametrize("arch", list(CLASSIFIERS))
@pytest.mark.parametrize("emb_name", ["tpe", "complex-order"])
def test_predictions_do_not_depend_on_batch_padding(arch, emb_name):
    model = make(arch, emb_name, dropout=0.0).eval()
    sentence = torch.tensor([[5, 7, 9, 11, 3, 4]])
    padded = torch.cat([sentence, torch.zeros(1, 7, dtype=torch.long)], 1)
    assert torch.allclose(model(sentence), model(padded), atol=1e-5)


@pytest.mark.parametrize("emb_name", ["none", "complex-vanilla"])
def test_transformer_without_positions_ignores_word_order(emb_name):
    model = make("transformer", emb_name, dropout=0.0).eval()
    tokens = torch.tensor([[5, 7, 9, 11, 3, 4]])
    assert torch.allclose(model(tokens), model(tokens.flip(1)), atol=1e-5)


@pytest.mark.parametrize("emb_name", ["pe", "tpe", "complex-order"])
def test_transformer_with_positions_sees_word_order(emb_name):
    model = make("transformer", emb_name, dropout=0.0).eval()
    tokens = torch.tensor([[5, 7, 9, 11, 3, 4]])
    assert not torch.allclose(model(tokens), model(tokens.flip(1)), atol=1e-4)


def test_complex_models_use_complex_layers_and_share_weights():
    model = make("cnn", "complex-order", share_weights=True)
    assert isinstance(model.convs[0], co.nn.ComplexConv1d) and model.convs[0].weight_imag is None
    model = make("lstm", "complex-vanilla")
    assert isinstance(model.lstm, co.nn.ComplexLSTM)
    model = make("transformer", "complex-order", share_weights=True)
    assert model.layers[0].self_attn.q_proj.weight_imag is None
    with pytest.raises(ValueError, match="share_weights applies to complex embeddings in the complex network only"):
        make("transformer", "tpe", share_weights=True)


def test_cnn_rejects_sequences_shorter_than_the_widest_filter():
    with pytest.raises(ValueError, match=r"padded to at least the widest filter \(5\), got length 3"):
        make("cnn", "none")(torch.tensor([[1, 2, 3]]))


def test_unknown_architecture_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown model 'rnn'; valid names: fasttext, cnn, lstm, transformer"):
        build_classifier("rnn", co.build_embedding("none", 5, 2), 2)


def test_weight_decay_skips_the_embedding_and_every_angle():
    model = make("fasttext", "complex-order")
    decayed, free = parameter_groups(model, 1e-3)
    names = {id(p): n for n, p in model.named_parameters()}
    assert {names[id(p)] for p in free["params"]} == {"embedding.frequency", "embedding.amplitude"}
    assert free["weight_decay"] == 0.0 and decayed["weight_decay"] == 1e-3
    assert {names[id(p)] for p in decayed["params"]} == {"hidden.weight_real", "hidden.weight_imag", "hidden.bias_real",
                                                         "hidden.bias_imag", "output.weight", "output.bias"}
    wrapper = torch.nn.ModuleDict({"enc": co.ComplexOrderEmbedding(5, 2), "out": torch.nn.Linear(2, 2)})
    decayed, free = parameter_groups(wrapper, 1e-3)  # no `.embedding`: angles still found by name
    assert [p.shape for p in free["params"]] == [torch.Size([5, 2])] and len(decayed["params"]) == 3


def test_sparse_embeddings_train_with_sparse_adam_and_match_dense_gradients():
    from complexorder.experiments.training import make_optimizers

    torch.manual_seed(0)
    emb = co.build_embedding("complex-order", 24, 8, padding_idx=0, sparse=True)
    model = build_classifier("fasttext", emb, 2, hidden=4)
    opts = make_optimizers(model, 1e-2, 0.0)
    assert [type(o).__name__ for o in opts] == ["Adam", "SparseAdam"]
    assert {id(p) for p in opts[1].param_groups[0]["params"]} == {id(emb.amplitude), id(emb.frequency)}
    data = word_order_task(32, seed=0)
    before = emb.frequency.detach().clone()
    train_classifier(model, data, None, epochs=1, batch_size=16, lr=1e-2, progress=False)
    assert not torch.equal(before, emb.frequency)


def test_word_order_task_defeats_bag_of_words_and_is_learned_with_positions():
    data = word_order_task(2000, seed=3)
    assert 0.45 < data.labels.float().mean() < 0.55
    for seq in data.sequences[:50]:  # exactly one A and one B
        assert (seq == 1).sum() == 1 and (seq == 2).sum() == 1
    model = make("transformer", "complex-order", dim=16, vocab=24, dropout=0.0)
    train_classifier(model, data, None, epochs=6, batch_size=64, lr=3e-3, progress=False)
    assert evaluate_accuracy(model, word_order_task(500, seed=4)) > 0.9


def test_monitor_split_is_recorded_each_epoch_but_never_changes_training():
    train, dev, test = word_order_task(96, seed=0), word_order_task(40, seed=1), word_order_task(40, seed=2)
    runs = {}
    for name, monitor in (("plain", None), ("monitored", test)):
        model = make("fasttext", "complex-order")
        result = train_classifier(model, train, dev, epochs=4, batch_size=16, lr=1e-2, seed=3, patience=2,
                                  progress=False, monitor=monitor)
        runs[name] = (result, {k: v.clone() for k, v in model.state_dict().items()}, model)
    plain, monitored = runs["plain"][0], runs["monitored"][0]
    assert [h["dev_accuracy"] for h in plain.history] == [h["dev_accuracy"] for h in monitored.history]
    assert (plain.best_epoch, plain.epochs_run) == (monitored.best_epoch, monitored.epochs_run)
    assert all(torch.equal(runs["plain"][1][k], runs["monitored"][1][k]) for k in runs["plain"][1])
    assert all("monitor_accuracy" not in h for h in plain.history)
    assert len(monitored.history) == monitored.epochs_run
    assert all(0.0 <= h["monitor_accuracy"] <= 1.0 for h in monitored.history)
    # the kept model is the best dev epoch's: its test accuracy is that epoch's monitor accuracy
    best = monitored.history[monitored.best_epoch - 1]
    assert evaluate_accuracy(runs["monitored"][2], test) == best["monitor_accuracy"]


@pytest.mark.parametrize("sparse", [False, True])
def test_frequency_lr_scale_changes_only_the_frequencies_learning_rate(sparse):
    from complexorder.experiments.training import make_optimizers

    torch.manual_seed(0)
    emb = co.build_embedding("complex-order", 24, 8, padding_idx=0, sparse=sparse)
    model = build_classifier("fasttext", emb, 2, hidden=4)
    opts = make_optimizers(model, 1e-2, 1e-4, frequency_lr_scale=0.1)
    lr_of = {id(p): (g["lr"], g.get("weight_decay", 0.0)) for o in opts for g in o.param_groups for p in g["params"]}
    assert lr_of[id(emb.frequency)] == (pytest.approx(1e-3), 0.0)
    assert lr_of[id(emb.amplitude)][0] == 1e-2 and lr_of[id(model.output.weight)] == (1e-2, 1e-4)
    assert len(lr_of) == sum(1 for p in model.parameters() if p.requires_grad)  # nothing lost or doubled
    # scale 0 freezes the frequencies and nothing else
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train_classifier(model, word_order_task(32, seed=0), None, epochs=1, batch_size=16, lr=1e-2, progress=False,
                     frequency_lr_scale=0.0)
    assert torch.equal(before["embedding.frequency"], emb.frequency)
    assert not torch.equal(before["embedding.amplitude"], emb.amplitude)
    with pytest.raises(ValueError, match="frequency_lr_scale must be >= 0, got -1"):
        make_optimizers(model, 1e-2, 0.0, frequency_lr_scale=-1)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", ["complex-order", "complex-vanilla", "complex-order-phase", "tpe"])
def test_embedding_lr_scale_changes_only_the_embedding_tables_learning_rate(sparse, kind):
    """embedding_lr_scale moves the embedding's per-word tables (not its frequencies) to lr * scale, keeping their
    decay; with frequency_lr_scale too each gets its own rate; the first Adam step of a table entry is then
    lr * scale * sign(gradient), by hand."""
    from complexorder.experiments.training import make_optimizers

    torch.manual_seed(0)
    options = {"initial_phase": True} if kind == "complex-order-phase" else {}
    emb = co.build_embedding(kind.replace("-phase", ""), 24, 8, padding_idx=0, sparse=sparse, **options)
    model = build_classifier("fasttext", emb, 2, hidden=4, dropout=0.0)
    opts = make_optimizers(model, 1e-2, 1e-4, frequency_lr_scale=0.5, embedding_lr_scale=10.0)
    lr_of = {id(p): (g["lr"], g.get("weight_decay", 0.0)) for o in opts for g in o.param_groups for p in g["params"]}
    tables = [p for n, p in emb.named_parameters() if n != "frequency"]
    assert tables and all(lr_of[id(p)] == (pytest.approx(0.1), 0.0) for p in tables)
    if kind.startswith("complex-order"):
        assert lr_of[id(emb.frequency)] == (pytest.approx(5e-3), 0.0)
    assert lr_of[id(model.output.weight)] == (1e-2, 1e-4)
    assert len(lr_of) == sum(1 for p in model.parameters() if p.requires_grad)  # nothing lost or doubled
    # one step by hand: Adam's first update of an entry is lr_of_its_group * sign(grad) (|grad| >> eps)
    from complexorder.experiments.training import iterate_batches

    tokens, labels = next(iterate_batches(word_order_task(16, seed=0), 16))
    torch.nn.functional.cross_entropy(model(tokens), labels).backward()
    grads = {n: (p.grad.to_dense() if p.grad.is_sparse else p.grad).clone() for n, p in model.named_parameters()}
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for o in opts:
        o.step()
    for name, p in model.named_parameters():
        g = grads[name]
        moved = g.abs() > 1e-3  # there the step is lr * sign(g) to 1e-4 (SparseAdam adds eps uncorrected)
        step = (before[name] - p.detach())[moved]
        expected = lr_of[id(p)][0] * g[moved].sign()
        if lr_of[id(p)][1]:  # Adam's L2 adds wd * p to the gradient before the step
            continue
        assert moved.any() and torch.allclose(step, expected, rtol=1e-3, atol=1e-6), name
    with pytest.raises(ValueError, match="embedding_lr_scale must be >= 0, got -1"):
        make_optimizers(model, 1e-2, 0.0, embedding_lr_scale=-1)


@pytest.mark.parametrize("sparse", [False, True])
def test_frequency_decay_shrinks_the_frequencies_after_each_step_by_hand(sparse):
    """One step with frequency_decay: omega = (Adam-updated omega) * (1 - lr * scale * decay), on the rows of the
    batch's words only when the gradient is sparse, everywhere when it is dense; nothing else changes."""
    from complexorder.experiments.training import decay_frequencies, frequency_parameters

    lr, scale, decay = 1e-2, 0.5, 20.0
    data = word_order_task(8, seed=0)
    runs = {}
    for name, kwargs in (("plain", {}), ("decayed", {"frequency_decay": decay})):
        torch.manual_seed(0)
        emb = co.build_embedding("complex-order", 32, 8, padding_idx=0, sparse=sparse)
        model = build_classifier("fasttext", emb, 2, hidden=4, dropout=0.0)
        train_classifier(model, data, None, epochs=1, batch_size=8, lr=lr, progress=False, bucket=False,
                         frequency_lr_scale=scale, **kwargs)
        runs[name] = model
    assert frequency_parameters(runs["plain"]) == [runs["plain"].embedding.frequency]
    plain, decayed = runs["plain"].embedding.frequency.detach(), runs["decayed"].embedding.frequency.detach()
    used = torch.zeros(32, dtype=torch.bool)
    used[torch.cat(data.sequences).unique()] = True
    assert not used[24:].any()  # rows 24-31: words the batch does not hold
    factor = 1 - lr * scale * decay  # 0.9
    expected = plain.clone()
    if sparse:
        expected[used] *= factor   # one batch holds every example: one step, the batch's rows only
    else:
        expected *= factor
    rows = torch.arange(32) != 0   # the padding row's frequency never changes the output
    torch.testing.assert_close(decayed[rows], expected[rows], rtol=1e-6, atol=0.0)
    assert not torch.equal(decayed, plain)
    for (n, p), (_, q) in zip(runs["plain"].named_parameters(), runs["decayed"].named_parameters()):
        if n != "embedding.frequency":
            assert torch.equal(p, q), n  # the decay comes after the step: nothing else sees it
    with pytest.raises(ValueError, match=r"frequency_decay must be >= 0 with lr \* frequency_lr_scale \* "
                                         r"frequency_decay < 1, got 200.0 \(lr 0.01, frequency_lr_scale 0.5\)"):
        train_classifier(runs["plain"], data, None, epochs=1, batch_size=8, lr=lr, progress=False,
                         frequency_lr_scale=scale, frequency_decay=200.0)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\), got 1.5"):
        decay_frequencies([runs["plain"].embedding.frequency], 1.5)


@pytest.mark.parametrize("emb_name", ["complex-vanilla", "complex-order"])
def test_transformer_real_network_reads_re_and_im_by_hand_with_the_real_baselines_layers(emb_name):
    model = make("transformer", emb_name, dim=8, network="real", dropout=0.0).eval()
    assert model.network == "real" and "network='real'" in repr(model)
    assert all(type(layer) is torch.nn.TransformerEncoderLayer for layer in model.layers)
    seen = []
    model.layers[0].register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    tokens = torch.tensor([[5, 7, 9, 11, 3, 0]])
    model(tokens)
    emb = model.embedding
    r = emb.amplitude[tokens]
    pos = torch.arange(6.0)[:, None] + getattr(emb, "first_position", 0)
    phase = emb.frequency[tokens] * pos if emb_name == "complex-order" else emb.phase[tokens]
    expected = torch.cat((r * torch.cos(phase), r * torch.sin(phase)), -1)  # [Re f, Im f], paper appendix C
    assert seen[0].dtype == torch.float32 and seen[0].shape == (1, 6, 16)
    torch.testing.assert_close(seen[0], expected)
    # the layers of a real baseline of width 2D; complex-order's amplitudes + frequencies: V x 2D, TPE's table
    tpe = make("transformer", "tpe", dim=16)
    layers = lambda m: sum(p.numel() for n, p in m.named_parameters() if not n.startswith("embedding"))  # noqa: E731
    assert layers(model) == layers(tpe)
    if emb_name == "complex-order":
        assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in tpe.parameters())
        assert not torch.allclose(model(tokens[:, :5]), model(tokens[:, :5].flip(1)), atol=1e-4)  # sees order
    else:  # no positions anywhere: invariant to word order
        torch.testing.assert_close(model(tokens[:, :5]), model(tokens[:, :5].flip(1)), atol=1e-5, rtol=1e-4)


def test_transformer_network_errors_are_one_line_and_name_the_setting():
    with pytest.raises(ValueError, match=r"^network must be one of 'auto', 'complex', 'real', 'authors', got 'both'$"):
        make("transformer", "complex-order", network="both")
    with pytest.raises(ValueError, match=r"^network='complex' needs a complex embedding; SinusoidalPositionalEmbedding is real$"):
        make("transformer", "tpe", network="complex")
    with pytest.raises(ValueError, match=r"^share_weights applies to complex embeddings in the complex network only$"):
        make("transformer", "complex-order", network="real", share_weights=True)
    assert make("transformer", "tpe", network="real").network == "real"  # a real embedding: real already
    assert make("transformer", "complex-order").network == "complex"  # auto


@pytest.mark.parametrize("emb_name", ["complex-vanilla", "complex-order"])
def test_transformer_readouts_by_hand(emb_name):
    """modulus-of-mean: |mean_t z_t| over the real tokens; mean-of-modulus: mean_t |z_t| (per dimension)."""
    tokens = torch.tensor([[5, 7, 9, 11, 3, 0], [4, 6, 0, 0, 0, 0]])
    mask = (tokens != 0).unsqueeze(-1)
    for readout in ("modulus-of-mean", "mean-of-modulus"):
        model = make("transformer", emb_name, dim=8, dropout=0.0, readout=readout).eval()
        states, features = [], []
        model.layers[-1].register_forward_hook(lambda mod, args, out: states.append(out))
        model.output.register_forward_pre_hook(lambda mod, args: features.append(args[0]))
        model(tokens)
        z = states[0]
        assert z.is_complex() and z.shape == (2, 6, 8)
        if readout == "modulus-of-mean":
            expected = ((z * mask).sum(1) / mask.sum(1)).abs()
        else:
            expected = (z.abs() * mask).sum(1) / mask.sum(1)
            assert "readout='mean-of-modulus'" in repr(model)
        torch.testing.assert_close(features[0], expected)
    # the two differ whenever the states' phases differ (the triangle inequality is strict): mean |z| > |mean z|
    assert bool((expected > ((z * mask).sum(1) / mask.sum(1)).abs() + 1e-6).any())


@pytest.mark.parametrize("emb_name, kw", [("complex-order", {}), ("complex-vanilla", {}), ("tpe", {}), ("none", {}),
                                          ("complex-order", {"network": "real"})])
def test_transformer_last_token_readout_by_hand(emb_name, kw):
    """readout="last": the output layer reads each row's last non-padding state (its modulus with complex layers),
    for real layers too; a row's padding and the other rows change nothing."""
    tokens = torch.tensor([[5, 7, 9, 11, 3, 0], [4, 6, 0, 0, 0, 0], [8, 8, 2, 5, 6, 7]])
    model = make("transformer", emb_name, dim=8, dropout=0.0, readout="last", **kw).eval()
    assert model.readout == "last" and "readout='last'" in repr(model)
    states, features = [], []
    model.layers[-1].register_forward_hook(lambda mod, args, out: states.append(out))
    model.output.register_forward_pre_hook(lambda mod, args: features.append(args[0]))
    logits = model(tokens)
    z = states[0]
    expected = torch.stack([z[0, 4], z[1, 1], z[2, 5]])
    torch.testing.assert_close(features[0], expected.abs() if z.is_complex() else expected)
    torch.testing.assert_close(logits[1:2], model(tokens[1:2, :2]), atol=1e-5, rtol=1e-5)  # padding is not read
    mean = make("transformer", emb_name, dim=8, dropout=0.0, **kw).eval()
    mean.load_state_dict(model.state_dict())
    assert not torch.allclose(mean(tokens), logits, atol=1e-4)  # the same weights read out otherwise


def test_transformer_readout_errors_and_real_layers_ignore_it():
    with pytest.raises(ValueError, match=r"^readout must be one of 'modulus-of-mean', 'mean-of-modulus', 'last', "
                                         r"got 'max'$"):
        make("transformer", "complex-order", readout="max")
    tokens = torch.tensor([[5, 7, 9, 0]])
    for emb_name, kw in (("tpe", {}), ("complex-order", {"network": "real"})):
        chosen = make("transformer", emb_name, readout="mean-of-modulus", dropout=0.0, **kw).eval()
        default = make("transformer", emb_name, dropout=0.0, **kw).eval()
        assert chosen.readout == "modulus-of-mean" and "readout" not in repr(chosen)
        torch.testing.assert_close(chosen(tokens), default(tokens))


def test_the_demo_separates_order_aware_from_order_blind_embeddings(capsys):
    """The README's main job, shortened (4 epochs, 1,000 sequences): the bag of words stays at chance on the
    word-order task, complex-order learns it."""
    from complexorder.cli import main

    assert main(["demo", "--embeddings", "none,complex-order", "--epochs", "4", "--train-size", "1000",
                 "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Word-order task: is A before B? 1,000 training sequences of length 6-14, 4 epochs; "
                               "1,000 test sequences.")
    assert lines[1] == "| embedding | test accuracy | parameters | seconds |"
    rows = {cells[1].strip(): float(cells[2]) for cells in (line.split("|") for line in lines[3:])}
    assert set(rows) == {"none", "complex-order"}
    assert rows["none"] < 0.6 and rows["complex-order"] > 0.9  # measured: 0.484 and 0.981
    for argv, message in ((["--embeddings", "none,wave"], "--embeddings: unknown embedding 'wave'; valid names: "
                                                          "none, pe, tpe, complex-vanilla, complex-order"),
                          (["--embeddings", "pe, none,pe"], "--embeddings: 'pe' given more than once in 'pe, none,pe'"),
                          (["--epochs", "0"], "--epochs must be a positive integer, got 0"),
                          (["--train-size", "-3"], "--train-size must be a positive integer, got -3")):
        assert main(["demo"] + argv) == 2
        assert capsys.readouterr().err.strip() == f"complexorder: error: {message}"


@pytest.mark.parametrize("emb_name, kw", [("complex-order", {}), ("tpe", {}), ("pe", {}),
                                          ("complex-order", {"network": "real"})])
def test_transformer_positions_from_the_end_by_hand(emb_name, kw):
    """position_order="from-end": the embedding sees n - 1, ..., 0 over each row's n real tokens (padding at 0), so
    the model on a sentence equals the forward-counting model on the sentence reversed (the encoder is permutation
    equivariant and the mean read-out invariant: the same (token, position) pairs)."""
    tokens = torch.tensor([[5, 7, 9, 11, 3, 0], [4, 6, 0, 0, 0, 0], [8, 8, 2, 5, 6, 7]])
    model = make("transformer", emb_name, dim=8, dropout=0.0, position_order="from-end", **kw).eval()
    assert "position_order='from-end'" in repr(model)
    seen = []
    model.embedding.register_forward_pre_hook(lambda mod, args: seen.append(args[1]))
    logits = model(tokens)
    assert seen[0].tolist() == [[4, 3, 2, 1, 0, 0], [1, 0, 0, 0, 0, 0], [5, 4, 3, 2, 1, 0]]
    forward = make("transformer", emb_name, dim=8, dropout=0.0, **kw).eval()
    forward.load_state_dict(model.state_dict())
    for row, n in enumerate((5, 2, 6)):
        reversed_row = tokens[row:row + 1, :n].flip(1)
        torch.testing.assert_close(logits[row:row + 1], forward(reversed_row), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(forward(tokens[2:]), logits[2:], atol=1e-4)  # the order matters for these embeddings


def test_transformer_position_order_errors_and_position_free_embeddings_ignore_it():
    with pytest.raises(ValueError, match=r"^position_order must be one of 'forward', 'from-end', got 'backward'$"):
        make("transformer", "complex-order", position_order="backward")
    tokens = torch.tensor([[5, 7, 9, 0]])
    for emb_name in ("complex-vanilla", "none"):
        from_end = make("transformer", emb_name, dropout=0.0, position_order="from-end").eval()
        default = make("transformer", emb_name, dropout=0.0).eval()
        default.load_state_dict(from_end.state_dict())
        torch.testing.assert_close(from_end(tokens), default(tokens))


def make_unmasked(emb_name, dim=8, vocab=24, **kw):
    """A Transformer classifier whose embedding has no padding_idx (the padding token is a learned word)."""
    torch.manual_seed(0)
    emb = co.build_embedding(emb_name, vocab, dim, padding_idx=None, max_positions=32)
    return build_classifier("transformer", emb, 3, **{**SMALL["transformer"], "dropout": 0.0, **kw})


@pytest.mark.parametrize("emb_name", ["complex-order", "complex-vanilla", "tpe"])
def test_fixed_length_is_the_authors_padded_input_written_out(emb_name):
    """fixed_length=L (the authors' torchtext fix_length): a sentence right-padded with id 0 to exactly L slots, the
    padding a learned word attended to without a mask, positions L - 1, ..., 0 over the slots with "from-end", and
    "last" reading slot L - 1. Written out: the embedding of the padded row at those positions, the encoder layer
    without a mask, the modulus of the last slot's state, the output layer."""
    L = 7
    tokens = torch.tensor([[5, 7, 9, 11], [4, 6, 0, 0]])  # the second row already carries two pads of its batch
    model = make_unmasked(emb_name, fixed_length=L, readout="last", position_order="from-end").eval()
    assert f"fixed_length={L}" in repr(model)
    padded = torch.tensor([[5, 7, 9, 11, 0, 0, 0], [4, 6, 0, 0, 0, 0, 0]])
    with torch.no_grad():
        x = model.embedding(padded, torch.arange(L - 1, -1, -1).expand(2, L))  # dropout: identity in eval
        for layer in model.layers:
            x = layer(x, src_key_padding_mask=torch.zeros(2, L, dtype=torch.bool))
        last = x[:, L - 1]
        expected = model.output(last.abs() if last.is_complex() else last)
        torch.testing.assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(padded), expected, atol=1e-5, rtol=1e-5)  # already L long: the same
        # the same computation with the padding masked out as keys differs: the model attends to its <pad> slots
        x = model.embedding(padded, torch.arange(L - 1, -1, -1).expand(2, L))
        for layer in model.layers:
            x = layer(x, src_key_padding_mask=padded == 0)
        last = x[:, L - 1]
        assert not torch.allclose(model.output(last.abs() if last.is_complex() else last), expected, atol=1e-4)


def test_fixed_length_errors():
    with pytest.raises(ValueError, match=r"^fixed_length needs an embedding without padding_idx \(the padding token is "
                                         r"a learned word every position attends to\); ComplexOrderEmbedding has "
                                         r"padding_idx=0$"):
        make("transformer", "complex-order", fixed_length=5)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=rf"^fixed_length must be None or a positive integer, got {bad!r}$"):
            make_unmasked("complex-order", fixed_length=bad)
    model = make_unmasked("complex-order", fixed_length=4)
    with pytest.raises(ValueError, match=r"^TransformerClassifier: tokens of length 5 exceed fixed_length 4 \(sentences "
                                         r"are never truncated; raise fixed_length\)$"):
        model(torch.ones(2, 5, dtype=torch.long))


def test_cross_entropy_of_probabilities_is_the_authors_second_softmax_written_out():
    """loss = "cross-entropy-of-probabilities": -log softmax(softmax(z))_y, averaged (the authors' Transformer
    classifier returns softmax(z) to nn.CrossEntropyLoss). With a learning rate of 1e-30 the weights stay put, so
    the one epoch's recorded loss is the loss of the untrained model, computed here by hand."""
    import math

    import torch.nn.functional as F

    data = word_order_task(48, seed=0)
    losses = {}
    for loss in ("cross-entropy", "cross-entropy-of-probabilities"):
        model = make("fasttext", "complex-order", dropout=0.0)
        result = train_classifier(model, data, None, epochs=1, batch_size=48, lr=1e-30, progress=False, loss=loss,
                                  clip_norm=None)
        losses[loss] = (result.history[0]["train_loss"], model)
    model = losses["cross-entropy"][1]
    model.eval()
    tokens = torch.zeros(len(data), data.max_length(), dtype=torch.long)
    for i, s in enumerate(data.sequences):
        tokens[i, :len(s)] = s
    with torch.no_grad():
        z = model(tokens)
    p = torch.exp(z) / torch.exp(z).sum(-1, keepdim=True)
    y = torch.as_tensor(data.labels)
    by_hand = {"cross-entropy": -torch.log(p[torch.arange(len(y)), y]).mean().item(),
               "cross-entropy-of-probabilities": -torch.log(torch.exp(p)[torch.arange(len(y)), y]
                                                            / torch.exp(p).sum(-1)).mean().item()}
    assert abs(by_hand["cross-entropy"] - by_hand["cross-entropy-of-probabilities"]) > 0.01  # the test can tell them apart
    for loss, (recorded, _) in losses.items():
        assert math.isclose(recorded, by_hand[loss], rel_tol=1e-5), (loss, recorded, by_hand[loss])
    # the bound: with two classes the second softmax never goes below log(1 + e^-1) = 0.3133
    certain = F.cross_entropy(torch.tensor([[50.0, -50.0]]).softmax(-1), torch.tensor([0])).item()
    assert math.isclose(certain, math.log(1 + math.exp(-1)), rel_tol=1e-6)
    with pytest.raises(ValueError, match=r"^loss must be one of 'cross-entropy', 'cross-entropy-of-probabilities', "
                                         r"got 'nll'$"):
        train_classifier(model, data, None, epochs=1, batch_size=48, lr=1e-3, progress=False, loss="nll")


@pytest.mark.parametrize("architecture", ["fasttext", "cnn", "lstm", "transformer"])
def test_a_float64_embedding_builds_a_float64_classifier(architecture):
    """The layers were built in float32 whatever the embedding: a float64 embedding failed at the first call
    ("mat1 and mat2 must have the same dtype", or the complex layers' dtype error)."""
    torch.manual_seed(0)
    tokens = torch.randint(1, 50, (2, 7))
    for name in ("none", "tpe", "complex-order"):
        model = build_classifier(architecture, co.build_embedding(name, 50, 16, padding_idx=0, dtype=torch.float64), 3)
        assert {p.dtype for p in model.parameters()} == {torch.float64}
        assert model(tokens).dtype == torch.float64
        model32 = build_classifier(architecture, co.build_embedding(name, 50, 16, padding_idx=0), 3)
        assert {p.dtype for p in model32.parameters()} == {torch.float32}


def test_progress_bars_show_only_on_a_terminal(monkeypatch):
    """A run redirected to a log file wrote hundreds of carriage-return updates and cursor moves into it."""
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((io.StringIO(), False), (Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        torch.manual_seed(0)
        data = word_order_task(64, seed=0)
        model = make("fasttext", "tpe")
        train_classifier(model, data, None, epochs=1, batch_size=16, lr=1e-2, progress=True)
        assert ("\r" in stream.getvalue()) == shown


def test_demo_rows_do_not_depend_on_what_ran_before_them():
    """The demo warms up before timing and reseeds every row: a row's results are the same alone or after others."""
    from complexorder.experiments.demo import DemoConfig, run_demo

    config = DemoConfig(train_size=200, test_size=100, epochs=2)
    alone = run_demo(config, ("complex-order",), progress=False)[0]
    after = run_demo(config, ("tpe", "complex-order"), progress=False)[1]
    assert (alone["test_accuracy"], alone["dev_accuracy"]) == (after["test_accuracy"], after["dev_accuracy"])


def test_an_interrupted_demo_keeps_the_rows_it_finished(capsys, monkeypatch):
    """Stop 78 (an audit): the table was printed only at the end, so Ctrl-C after two models printed no row while
    saying 'finished results are kept'; rows now print as each model finishes. The header gives the test set's
    majority rate, the bar a model blind to order cannot pass (it said 0.5)."""
    from complexorder.cli import main
    from complexorder.experiments import demo

    real, calls = demo.train_classifier, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(demo, "train_classifier", interrupted)
    assert main(["demo", "--embeddings", "none,pe", "--epochs", "1", "--train-size", "100", "--no-progress"]) == 130
    out = capsys.readouterr()
    lines = out.out.splitlines()
    majority = demo.test_majority_rate(demo.DemoConfig())
    assert lines[0].endswith(f"0.5 in expectation (always answering the test set's more frequent label scores "
                             f"{majority:.3f}).")
    assert 0.5 < majority < 0.6  # 1,000 test sequences of seed 2
    assert lines[1:3] == ["| embedding | test accuracy | parameters | seconds |", "|---|---:|---:|---:|"]
    assert len(lines) == 4 and lines[3].startswith("| none | ")
    assert out.err.strip() == "complexorder: interrupted; the rows above are the embeddings that finished"
    calls.clear()
    calls.append(1)  # the next model is the second call: interrupted before any row
    assert main(["demo", "--embeddings", "none", "--epochs", "1", "--train-size", "100", "--no-progress"]) == 130
    assert capsys.readouterr().err.strip() == "complexorder: interrupted; no embedding had finished"
