"""Stack configs with a `training` section for the training tests: the base test stack with a
GPU group of 4 GPUs per node, a team, a DDP job and an FSDP + tensor-parallel job; and train-dev
with topology-aware queues."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from platformctl.__main__ import main
from platformctl.plan import write_plan
from tests.conftest import ROOT, base_config, render_raw

IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
DDP = {"name": "ddp", "team": "vision", "runtime": "torch-ddp", "image": IMAGE, "command": ["torchrun", "train.py"],
       "nodes": 2, "gpu": {"group": "gpu", "count": 4},
       "dataset": {"cache": "fileShare", "path": "data/imagenet"}, "checkpoint": {"cache": "fileShare", "path": "ckpt/ddp"}}
FSDP_TP = {"name": "llm", "team": "vision", "runtime": "torch-fsdp-tp", "image": IMAGE,
           "command": ["torchrun", "train_llm.py"], "nodes": 2, "gpu": {"group": "gpu", "count": 4},
           "tensorParallelDegree": 2, "hybridShardDegree": 4, "activeDeadlineSeconds": 86400}


def training_config(**training: Any) -> dict:
    """The base test stack with 4-GPU nodes (up to 4) and a `training` section (defaults: team
    `vision` in namespace `vision-train`, the DDP and FSDP+TP jobs, NCCL on every interface but lo and docker*, without RDMA)."""
    raw = base_config()
    gpu = raw["cluster"]["nodeGroups"][1]
    gpu["gpu"]["perNode"] = 4
    gpu["maxNodes"] = 4
    raw["training"] = {"teams": [{"name": "vision", "namespace": "vision-train"}],
                       "networks": {"gpu": {"socketIfname": "^lo,docker", "ibDisable": True}},
                       "jobs": [copy.deepcopy(DDP), copy.deepcopy(FSDP_TP)], **training}
    return raw


def diff_lines(tmp_path, capsys, before: dict, edit) -> list[str]:
    """`platformctl diff` of the plan of `before` against that of `before` with its first job
    edited by `edit`: its printed lines."""
    after = copy.deepcopy(before)
    edit(after["training"]["jobs"][0])
    write_plan(render_raw(before), tmp_path / "a")
    write_plan(render_raw(after), tmp_path / "b")
    main(["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    return capsys.readouterr().out.splitlines()


TOPOLOGY_LEVELS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]


def train_dev_with_topology(directory: Path, levels: list[str] = TOPOLOGY_LEVELS) -> Path:
    """stacks/Pulumi.train-dev.yaml with every GPU group at a fixed size (minNodes = maxNodes),
    topology-aware queues on `levels` and no job publishing, written to `directory`: the only shape
    with topologyLevels the settings accept (Kueue's topology-aware admission counts only the nodes
    that exist, and skips its topology step for a job with a CPU-only publish step)."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.train-dev.yaml").read_text())
    config = doc["config"]
    for group in config["inference-platform:cluster"]["nodeGroups"]:
        if "gpu" in group:
            group["minNodes"] = group["maxNodes"]
    config["inference-platform:training"]["topologyLevels"] = list(levels)
    for job in config["inference-platform:training"]["jobs"]:
        job.pop("publishTo", None)
    path = directory / "Pulumi.train-dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
