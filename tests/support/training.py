"""A ClusterTrainingRuntime and a TrainJob of each training kind, as the plan renders them: the
training test stack (tests/support/training_stacks.py) with one CPU-sized job of the kind, run
through the Training component under the mock runtime; the test reads the rendered objects.

The `node` container runs the job's command (`torchrun <program> ...`), configured only through
the PET_* variables Trainer injects; the runtime's env carries PLATFORM_TRAIN_STRATEGY (the kind)
and the job's PLATFORM_SHARD_DEGREE (torch-fsdp) or PLATFORM_TP_DEGREE (torch-fsdp-tp).
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from inference_platform.settings.training import runtime_name
from tests.conftest import render_raw
from tests.support.training_stacks import IMAGE, training_config

KINDS = ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning")
# The mesh each kind's job declares for 2 nodes x 2 processes.
MESH_KEYS = {"torch-ddp": {}, "torch-fsdp": {"hybridShardDegree": 2}, "torch-fsdp-tp": {"tensorParallelDegree": 2},
             "lightning": {}}
CUSTOM = "kubernetes:"


def _job(kind: str, command: list[str], nodes: int, procs_per_node: int, mesh: dict[str, int]) -> dict[str, Any]:
    return {"name": f"{kind}-check", "team": "vision", "runtime": kind, "image": IMAGE, "command": command,
            "nodes": nodes, "processesPerNode": procs_per_node, "gpu": {"group": "gpu", "count": procs_per_node}, **mesh}


def _object(resource) -> dict[str, Any]:
    inputs = copy.deepcopy(resource.inputs)
    return {k: inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}


@functools.cache
def _rendered(kind: str, command_json: str, nodes: int, procs_per_node: int, mesh_json: str) -> tuple[dict[str, Any], dict[str, Any]]:
    raw = training_config(jobs=[_job(kind, json.loads(command_json), nodes, procs_per_node, json.loads(mesh_json))])
    plan = render_raw(raw)
    objects = [_object(r) for r in plan.resources if r.type.startswith(CUSTOM) and r.type.endswith(("TrainingRuntime", "TrainJob"))]
    [runtime] = [o for o in objects if o["kind"] == "ClusterTrainingRuntime" and o["metadata"]["name"] == runtime_name(kind)]
    [trainjob] = [o for o in objects if o["kind"] == "TrainJob"]
    return runtime, trainjob


def runtime_and_trainjob(kind: str, program: list[str], *, nodes: int = 2, procs_per_node: int = 2,
                         mesh: dict[str, int] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan's runtime of `kind` and its TrainJob running `torchrun <program>` on `nodes` nodes
    of `procs_per_node` processes, with the job's mesh keys `mesh` (default MESH_KEYS[kind]; copies:
    the caller may edit them)."""
    mesh_json = json.dumps(MESH_KEYS[kind] if mesh is None else mesh, sort_keys=True)
    runtime, trainjob = _rendered(kind, json.dumps(["torchrun", *program]), nodes, procs_per_node, mesh_json)
    return copy.deepcopy(runtime), copy.deepcopy(trainjob)
