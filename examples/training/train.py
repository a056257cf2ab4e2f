"""A small deterministic training program for the platform's torch runtimes, launched by `torchrun`.

The strategy and the device mesh come from the node container's env, as the platform's
ClusterTrainingRuntimes set it: PLATFORM_TRAIN_STRATEGY (torch-ddp, torch-fsdp, torch-fsdp-tp),
PLATFORM_SHARD_DEGREE (hybrid shard: size of a shard group of data-parallel ranks; absent: one group,
full shard) and PLATFORM_TP_DEGREE (torch-fsdp-tp: size of a tensor-parallel group). Without torchrun (no WORLD_SIZE)
it trains the same model on the same data in one process: the reference a distributed run must match.

Every strategy trains on the same global batch per step: each data-parallel rank takes its slice, the
loss is a mean over the slice, and DDP and FSDP average gradients over the data-parallel ranks, so the
update equals that of the mean loss over the whole batch. Rank 0 writes the final parameters as JSON.

With a checkpoint directory (PLATFORM_CHECKPOINT_DIR, the job's `checkpoint` on the file share) every
rank saves the model after each step (torch.distributed.checkpoint, each rank its shards) and, when
it starts, loads the newest complete checkpoint there and goes on from the step after it: a run the
JobSet restarts after a lost node ends with the parameters of a run that was never interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

IN, HIDDEN, OUT = 8, 16, 4
GLOBAL_BATCH = 8
STEPS = 5
LR = 0.05


def make_model() -> nn.Sequential:
    """The same initial weights in every process (seeded)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT)).double()


def global_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """STEPS batches of GLOBAL_BATCH samples, the same in every process (seeded)."""
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(GLOBAL_BATCH, IN, generator=generator, dtype=torch.float64),
             torch.randn(GLOBAL_BATCH, OUT, generator=generator, dtype=torch.float64)) for _ in range(STEPS)]


def degree(name: str, world: int, default: int) -> int:
    """A mesh degree from the env: a divisor of the world size."""
    value = int(os.environ.get(name, default))
    if value < 1 or world % value:
        raise SystemExit(f"{name}={value}: must divide the world size {world}")
    return value


class Checkpoints:
    """A checkpoint per step in `root` (`step-<n>`, written by every rank together), the newest
    complete one (with the `.metadata` the coordinator writes last) loaded at start. Plain SGD keeps
    no optimizer state, so the model and the step are the whole state."""

    def __init__(self, root: str):
        self.root = root

    def restore(self, model: nn.Module) -> int:
        """Load the newest complete checkpoint into the model; the steps it holds (0: none)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

        done = [int(name.removeprefix("step-")) for name in os.listdir(self.root) if name.startswith("step-")
                and os.path.exists(os.path.join(self.root, name, ".metadata"))] if os.path.isdir(self.root) else []
        found = [max(done, default=0)]
        dist.broadcast_object_list(found, src=0)  # every rank resumes from the step rank 0 found
        if found[0]:
            state = get_model_state_dict(model)
            dcp.load(state, checkpoint_id=self._path(found[0]))
            set_model_state_dict(model, state)
        return found[0]

    def save(self, model: nn.Module, step: int) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        dcp.save(get_model_state_dict(model), checkpoint_id=self._path(step))
        if int(os.environ.get("TRAIN_EXIT_AFTER_STEP", 0)) == step:
            os._exit(137)  # as a node killed after this checkpoint would

    def _path(self, step: int) -> str:
        return os.path.join(self.root, f"step-{step:05d}")


def train(model: nn.Module, dp_rank: int, dp_size: int, checkpoints: Checkpoints | None = None) -> int:
    """SGD on this data-parallel rank's slice of every global batch, from the step after the newest
    checkpoint; the step it started from."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    size = GLOBAL_BATCH // dp_size
    start = checkpoints.restore(model) if checkpoints else 0
    for step, (x, y) in enumerate(global_batches(), 1):
        if step <= start:
            continue
        optimizer.zero_grad()
        F.mse_loss(model(x[dp_rank * size:(dp_rank + 1) * size]), y[dp_rank * size:(dp_rank + 1) * size]).backward()
        optimizer.step()
        if checkpoints:
            checkpoints.save(model, step)
    return start


def full_parameters(model: nn.Module) -> dict[str, list[float]]:
    """Every parameter whole (a collective for sharded ones: every rank calls it)."""
    return {name: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().flatten().tolist()
            for name, p in model.named_parameters()}


Run = tuple[nn.Module, list[int], int]  # the model, the mesh's shape, the step the run started from


def ddp(world: int, rank: int, checkpoints: Checkpoints | None) -> Run:
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(make_model())
    start = train(model, rank, world, checkpoints)
    return model.module, [world], start


def fsdp(world: int, rank: int, checkpoints: Checkpoints | None) -> Run:
    """FSDP2; hybrid shard over a (replicate, shard) mesh when PLATFORM_SHARD_DEGREE is set."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    shard = degree("PLATFORM_SHARD_DEGREE", world, world)
    mesh = init_device_mesh("cpu", (world // shard, shard), mesh_dim_names=("replicate", "shard"))
    model = make_model()
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    start = train(model, rank, world, checkpoints)  # every rank is a data-parallel rank: replicas and shards alike
    return model, list(mesh.shape), start


def fsdp_tp(world: int, rank: int, checkpoints: Checkpoints | None) -> Run:
    """Tensor parallel inside groups of PLATFORM_TP_DEGREE ranks, FSDP2 across them: a (replicate,
    shard, tp) mesh, hybrid shard over the data-parallel ranks in groups of PLATFORM_SHARD_DEGREE
    (absent: one group, full shard). TP is innermost (a node's ranks), the shard groups next."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    tp = degree("PLATFORM_TP_DEGREE", world, 1)
    shard = degree("PLATFORM_SHARD_DEGREE", world // tp, world // tp)
    mesh = init_device_mesh("cpu", (world // tp // shard, shard, tp), mesh_dim_names=("replicate", "shard", "tp"))
    model = make_model()
    # The first layer split by output features, the second by input features: one all-reduce per forward.
    parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    fully_shard(model, mesh=mesh["replicate", "shard"])
    # A tp group's ranks see the same samples; the data-parallel rank counts the shard groups' ranks in order.
    dp_rank = mesh.get_local_rank("replicate") * shard + mesh.get_local_rank("shard")
    start = train(model, dp_rank, world // tp, checkpoints)
    return model, list(mesh.shape), start


STRATEGIES = {"torch-ddp": ddp, "torch-fsdp": fsdp, "torch-fsdp-tp": fsdp_tp}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where rank 0 writes the final parameters (JSON)")
    out = parser.parse_args().out
    if "WORLD_SIZE" not in os.environ:
        model = make_model()
        train(model, 0, 1)
        write_report(out, {"strategy": "reference", "world_size": 1, "mesh": [1], "params": full_parameters(model)})
        return
    strategy = os.environ["PLATFORM_TRAIN_STRATEGY"]
    if strategy not in STRATEGIES:
        raise SystemExit(f"PLATFORM_TRAIN_STRATEGY={strategy!r}: this program runs {', '.join(STRATEGIES)}")
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    directory = os.environ.get("PLATFORM_CHECKPOINT_DIR")
    model, mesh, start = STRATEGIES[strategy](world, rank, Checkpoints(directory) if directory else None)
    report = {"strategy": strategy, "world_size": world, "mesh": mesh, "resumed_after": start,
              "params": full_parameters(model)}
    if rank == 0:
        write_report(out, report)
    end_worker()


def write_report(out: str, report: dict) -> None:
    with open(out, "w") as f:
        json.dump(report, f)


def end_worker() -> None:
    """Leave the process group and end this torchrun worker without interpreter finalization.

    torch 2.13's gloo worker threads (ProcessGroupGloo::runLoop) drop their last collective after
    the caller saw it complete; a collective launched inside backward() holds the Python context
    autograd stashes in thread-local state (torch/autograd/graph.py `_engine_run_backward`), whose
    release takes the GIL. If the main thread is already finalizing the interpreter, that thread
    exits inside a C++ destructor and the worker aborts ("terminate called without an active
    exception", SIGABRT) after its work is done, and torchrun's agents on the other nodes wait out
    their 300 s exit barrier. A loaded machine widens that window; skipping finalization closes it.
    """
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
