"""A ClusterTrainingRuntime and a TrainJob of each training kind, as the plan renders them.

Until the Training component renders them, `runtime_and_trainjob` builds them here following the
runtimes' contract: the `node` container runs `torchrun` configured only through the PET_* variables
Trainer injects, the job's args name the program, and the container's env carries
PLATFORM_TRAIN_STRATEGY (the kind), PLATFORM_SHARD_DEGREE (hybrid shard group size; absent: full
shard) and PLATFORM_TP_DEGREE (torch-fsdp-tp). The objects validate against the vendored
kubeflow-trainer 2.3.0 CRDs (tests/live/test_torchrun_distributed.py checks it). When the plan renders
them, this one function returns the plan's objects instead.
"""

from __future__ import annotations

from typing import Any

from inference_platform.training.trainer_env import ANCESTOR_LABEL, ANCESTOR_TRAINER, NODE

API_VERSION = "trainer.kubeflow.org/v1alpha1"
KINDS = ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning")
# The mesh each kind's runtime declares for 2 nodes x 2 processes.
MESH_ENV = {"torch-ddp": {}, "torch-fsdp": {"PLATFORM_SHARD_DEGREE": "2"}, "torch-fsdp-tp": {"PLATFORM_TP_DEGREE": "2"}, "lightning": {}}


def runtime_and_trainjob(kind: str, program: list[str], *, nodes: int = 2, procs_per_node: int = 2) -> tuple[dict[str, Any], dict[str, Any]]:
    """The runtime of `kind` and a CPU TrainJob on it running `program` (the job's args) on `nodes`
    nodes of `procs_per_node` processes."""
    env = [{"name": "PLATFORM_TRAIN_STRATEGY", "value": kind}] + [{"name": k, "value": v} for k, v in MESH_ENV[kind].items()]
    runtime = {
        "apiVersion": API_VERSION, "kind": "ClusterTrainingRuntime",
        "metadata": {"name": kind, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": NODE,
                "template": {
                    "metadata": {"labels": {ANCESTOR_LABEL: ANCESTOR_TRAINER}},
                    "spec": {"template": {"spec": {"containers": [{
                        "name": NODE,
                        # The image of kubeflow/trainer v2.3.0 manifests/base/runtimes/torch_distributed.yaml.
                        "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
                        "command": ["torchrun"],
                        "env": env,
                    }]}}},
                },
            }]}},
        },
    }
    trainjob = {
        "apiVersion": API_VERSION, "kind": "TrainJob",
        "metadata": {"name": f"{kind}-check", "namespace": "team-a"},
        "spec": {
            "runtimeRef": {"name": kind, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
            "trainer": {"numNodes": nodes, "numProcPerNode": procs_per_node, "args": program,
                        "resourcesPerNode": {"requests": {"cpu": str(procs_per_node)}}},
        },
    }
    return runtime, trainjob
