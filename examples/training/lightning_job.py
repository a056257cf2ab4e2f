"""The same small training run as train.py under Lightning, launched by `torchrun` (the `lightning`
runtime, PLATFORM_TRAIN_STRATEGY=lightning).

Lightning finds torchrun's env (TorchElasticEnvironment) and joins its processes instead of starting
its own: devices per node and nodes come from torchrun's LOCAL_WORLD_SIZE and WORLD_SIZE. Rank 0
writes the world size and node count Lightning saw, and the final parameters, as JSON (the
distributed test checks the world size; the parameters are not compared with train.py's reference).
"""

from __future__ import annotations

import argparse
import os

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from train import GLOBAL_BATCH, LR, STEPS, end_worker, full_parameters, global_batches, make_model, write_report


class SmallModel(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = make_model()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=LR)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where rank 0 writes the world size and final parameters (JSON)")
    out = parser.parse_args().out
    strategy = os.environ.get("PLATFORM_TRAIN_STRATEGY")
    if strategy != "lightning":
        raise SystemExit(f"PLATFORM_TRAIN_STRATEGY={strategy!r}: this program runs lightning")
    world, per_node = int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_WORLD_SIZE"])
    batches = global_batches()
    data = TensorDataset(torch.cat([x for x, _ in batches]), torch.cat([y for _, y in batches]))
    model = SmallModel()
    trainer = L.Trainer(accelerator="cpu", devices=per_node, num_nodes=world // per_node, strategy="ddp",
                        max_steps=STEPS, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, DataLoader(data, batch_size=GLOBAL_BATCH // world, shuffle=False))
    if trainer.global_rank == 0:
        params = {name.removeprefix("net."): values for name, values in full_parameters(model).items()}
        write_report(out, {"strategy": strategy, "world_size": trainer.world_size, "num_nodes": trainer.num_nodes,
                           "params": params})
    end_worker()  # Lightning leaves its process group to interpreter finalization: see train.end_worker


if __name__ == "__main__":
    main()
