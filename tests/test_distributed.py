"""The models under torch.distributed: DistributedDataParallel on the CPU (gloo), two processes, against one process
trained on both processes' batches together; and the optimiser groups of a wrapped model (stop 80's audit)."""

import datetime

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import complexorder as co
from complexorder.experiments.training import make_optimizers, parameter_groups
from complexorder.models import build_classifier

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

V, D, C = 40, 8, 3
OPTIONS = {"fasttext": {"hidden": 8, "dropout": 0.0}, "cnn": {"filters": 4, "filter_sizes": (2, 3), "dropout": 0.0},
           "lstm": {"hidden": 8, "dropout": 0.0}, "transformer": {"nhead": 2, "dim_feedforward": 16, "dropout": 0.0}}
CASES = [(arch, emb) for arch in OPTIONS for emb in ("tpe", "complex-order")]


def model_for(arch: str, embedding: str) -> nn.Module:
    torch.manual_seed(0)
    return build_classifier(arch, co.build_embedding(embedding, V, D, padding_idx=0), C, **OPTIONS[arch]).eval()


def batches() -> tuple[torch.Tensor, torch.Tensor]:
    """8 sentences of 7 tokens, padded at the end; rank r trains on rows 4r .. 4r + 3."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, V, (8, 7), generator=g)
    for row, length in enumerate((7, 5, 3, 7, 6, 7, 4, 2)):
        tokens[row, length:] = 0
    return tokens, torch.randint(0, C, (8,), generator=g)


def step(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    nn.functional.cross_entropy(model(tokens), labels).backward()
    optimizer.step()


def worker(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    torch.set_num_threads(1)
    try:
        tokens, labels = batches()
        for arch, embedding in CASES:
            model = DDP(model_for(arch, embedding))
            step(model, tokens[4 * rank:4 * rank + 4], labels[4 * rank:4 * rank + 4])
            if rank == 0:
                torch.save(model.module.state_dict(), f"{out_dir}/{arch}-{embedding}.pt")
    finally:
        dist.destroy_process_group()


def test_ddp_on_two_processes_takes_the_same_step_as_one_process_on_both_batches(tmp_path):
    """Dense gradients (the embeddings' default sparse=False): each process's half batch, averaged by DDP, gives the
    step of one process on the whole batch, for every classifier with a real and a complex embedding."""
    mp.spawn(worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    tokens, labels = batches()
    for arch, embedding in CASES:
        alone = model_for(arch, embedding)
        before = {k: v.clone() for k, v in alone.state_dict().items()}
        step(alone, tokens, labels)
        together = torch.load(tmp_path / f"{arch}-{embedding}.pt", weights_only=True)
        moved = [k for k in before if not torch.equal(before[k], alone.state_dict()[k])]
        assert moved, (arch, embedding)
        for key, value in alone.state_dict().items():
            assert torch.allclose(together[key], value, atol=1e-6), (arch, embedding, key)


def _groups(groups: list[dict]) -> list[tuple[int, float]]:
    return [(len(g["params"]), g.get("weight_decay", 0.0)) for g in groups]


def test_the_optimiser_groups_of_a_wrapped_model_are_those_of_the_model_inside(tmp_path):
    """make_optimizers(DDP(model)) looked for `model.embedding` on the wrapper, found none, and decayed the embedding
    tables (and would have given sparse tables to Adam)."""
    model = build_classifier("cnn", co.build_embedding("complex-order", V, D, padding_idx=0, sparse=True), C,
                             filters=4)
    plain = make_optimizers(model, 1e-3, 0.1)
    assert [type(o).__name__ for o in plain] == ["Adam", "SparseAdam"]
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        # DDP cannot reduce these tables' sparse gradients: refused here, not at the first backward inside DDP
        with pytest.raises(ValueError, match=r"^the model's embedding has sparse=True, which DistributedDataParallel "
                                             r"cannot reduce \(embedding\.amplitude, embedding\.frequency: DDP takes "
                                             r"sparse gradients only from torch\.nn\.Embedding\); build the "
                                             r"embedding with sparse=False$"):
            make_optimizers(DDP(model), 1e-3, 0.1)
        # unless the caller keeps them out of DDP (and reduces them itself)
        DDP._set_params_and_buffers_to_ignore_for_model(model, ["embedding.amplitude", "embedding.frequency"])
        for wrapped in (nn.DataParallel(model), DDP(model)):
            assert _groups(parameter_groups(wrapped, 0.1)) == _groups(parameter_groups(model, 0.1))
            optimizers = make_optimizers(wrapped, 1e-3, 0.1)
            assert [type(o).__name__ for o in optimizers] == ["Adam", "SparseAdam"]
            for mine, theirs in zip(optimizers, plain):
                assert [[id(p) for p in g["params"]] for g in mine.param_groups] == \
                    [[id(p) for p in g["params"]] for g in theirs.param_groups]
    finally:
        dist.destroy_process_group()
