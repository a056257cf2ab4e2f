"""The env, command and args Kubeflow Trainer v2.3.0 gives each training node, by its torch plugin's
rules (pkg/runtime/framework/plugins/torch/torch.go, jobset/builder.go)."""

from __future__ import annotations

import copy

import pytest

from inference_platform.training.trainer_env import (
    COMPLETION_INDEX_FIELD,
    TrainerEnvError,
    expand,
    node_env,
    node_launch,
    nproc_per_node,
    num_nodes,
    quantity_value,
)
from tests.support.training import runtime_and_trainjob


def objects(kind: str = "torch-fsdp", **trainer) -> tuple[dict, dict]:
    runtime, job = runtime_and_trainjob(kind, ["/workspace/train.py", "--out", "/ckpt/final.json"])
    job["spec"]["trainer"].update(trainer)
    job["spec"]["trainer"] = {k: v for k, v in job["spec"]["trainer"].items() if v is not None}
    return runtime, job


def env_of(runtime: dict, job: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in node_env(runtime, job)}


def test_each_node_gets_the_pet_variables_with_its_completion_index_as_node_rank():
    runtime, job = objects()
    ranks = [node_launch(runtime, job, rank).env for rank in (0, 1)]
    assert [e["PET_NODE_RANK"] for e in ranks] == ["0", "1"]
    for env in ranks:
        assert {k: env[k] for k in ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT")} == {
            "PET_NNODES": "2", "PET_NPROC_PER_NODE": "2",
            "PET_MASTER_ADDR": "torch-fsdp-check-node-0-0.torch-fsdp-check", "PET_MASTER_PORT": "29500"}
    assert env_of(runtime, job)["PET_NODE_RANK"] == {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}


def test_the_runtime_env_comes_first_and_the_job_env_replaces_a_name_in_place():
    runtime, job = objects(env=[{"name": "PLATFORM_SHARD_DEGREE", "value": "4"}, {"name": "EXTRA", "value": "1"}])
    names = [e["name"] for e in node_env(runtime, job)]
    assert names == ["PLATFORM_TRAIN_STRATEGY", "HOME", "PLATFORM_SHARD_DEGREE", "EXTRA",
                     "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"]
    assert env_of(runtime, job)["PLATFORM_SHARD_DEGREE"] == "4"


def test_a_job_setting_a_pet_variable_is_refused_as_trainer_refuses_it():
    runtime, job = objects(env=[{"name": "PET_NNODES", "value": "8"}])
    with pytest.raises(TrainerEnvError, match=r"spec.trainer.env: must not set PET_NNODES"):
        node_env(runtime, job)


def test_nodes_come_from_the_job_else_the_runtime_ml_policy_else_one():
    runtime, job = objects(numNodes=3)
    assert num_nodes(runtime, job) == 3
    runtime, job = objects(numNodes=None)
    runtime["spec"]["mlPolicy"]["numNodes"] = 5
    assert num_nodes(runtime, job) == 5
    del runtime["spec"]["mlPolicy"]["numNodes"]
    assert num_nodes(runtime, job) == 1


@pytest.mark.parametrize("resources, expected", [
    ({"limits": {"nvidia.com/gpu": "4"}}, "auto"),              # a GPU node: torchrun starts one per GPU
    ({"requests": {"cpu": "3"}, "limits": {"cpu": "6"}}, "3"),  # the CPU request
    ({"requests": {"cpu": "0"}, "limits": {"cpu": "1500m"}}, "2"),  # a zero request: the limit, rounded up
    ({"requests": {"memory": "1Gi"}}, "1"),                     # no CPU at all: at least one
])
def test_processes_per_node_default_to_auto_on_gpus_else_the_cpu_count(resources, expected):
    runtime, job = objects(numProcPerNode=None, resourcesPerNode=resources)
    assert nproc_per_node(runtime, job) == expected


def test_the_jobs_resources_replace_the_runtimes_for_the_process_count():
    runtime, job = objects(numProcPerNode=None, resourcesPerNode=None)
    container = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    assert nproc_per_node(runtime, job) == "auto"
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "4"}}
    assert nproc_per_node(runtime, job) == "4"


def test_an_explicit_process_count_wins_over_gpus():
    runtime, job = objects(numProcPerNode=2, resourcesPerNode={"limits": {"nvidia.com/gpu": "8"}})
    assert nproc_per_node(runtime, job) == "2"


def test_the_runtime_command_runs_the_jobs_args_and_a_job_command_replaces_it():
    runtime, job = objects()
    assert node_launch(runtime, job, 0).argv == ["torchrun", "/workspace/train.py", "--out", "/ckpt/final.json"]
    runtime, job = objects(command=["python", "-m", "x"], args=["--rank", "$(PET_NODE_RANK)", "$$(PET_NODE_RANK)", "$(UNSET)"])
    assert node_launch(runtime, job, 1).argv == ["python", "-m", "x", "--rank", "1", "$(PET_NODE_RANK)", "$(UNSET)"]


def test_env_values_expand_earlier_variables_only():
    runtime, job = objects(env=[{"name": "OUT", "value": "/ckpt/$(PLATFORM_TRAIN_STRATEGY)/$(LATER)"}, {"name": "LATER", "value": "x"}])
    assert node_launch(runtime, job, 0).env["OUT"] == "/ckpt/torch-fsdp/$(LATER)"


def test_a_rank_outside_the_job_and_an_unresolvable_env_are_refused():
    runtime, job = objects()
    with pytest.raises(TrainerEnvError, match="node rank 2: the job has 2 nodes"):
        node_launch(runtime, job, 2)
    runtime, job = objects(env=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
    with pytest.raises(TrainerEnvError, match="env TOKEN: valueFrom"):
        node_launch(runtime, job, 0)


def test_a_runtime_without_a_trainer_job_or_node_container_is_refused():
    runtime, job = objects()
    broken = copy.deepcopy(runtime)
    broken["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"] = {}
    with pytest.raises(TrainerEnvError, match="0 jobs labelled trainer.kubeflow.org/trainjob-ancestor-step=trainer"):
        node_env(broken, job)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "main"
    with pytest.raises(TrainerEnvError, match="no container named 'node'"):
        node_env(runtime, job)


@pytest.mark.parametrize("quantity, value", [("2", 2), ("500m", 1), ("1.5", 2), ("2k", 2000), ("1Ki", 1024), ("3e2", 300), (4, 4)])
def test_quantities_round_up_as_kubernetes_value_does(quantity, value):
    assert quantity_value(quantity) == value


def test_a_malformed_quantity_is_one_clear_error():
    with pytest.raises(TrainerEnvError, match=r"'two' is not a Kubernetes quantity"):
        quantity_value("two")


def test_expansion_keeps_a_lone_dollar_and_an_unclosed_reference():
    assert expand("a$b $(X", {"X": "1"}) == "a$b $(X"
