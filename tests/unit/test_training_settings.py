"""The `training` section refuses, each with one line naming its key path, what Kubeflow Trainer
would refuse or run wrongly: reserved env, degrees that do not tile the ranks, a job its GPU group
cannot place, names that do not resolve."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.support.training_stacks import training_config

JOB = "inference-platform:training.jobs[{}]"


def problems(edit, secrets: frozenset[str] = frozenset()) -> dict[str, str]:
    raw = training_config()
    edit(raw)
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "Pulumi.test-dev.yaml", secrets)
    return dict(zip(err.value.paths, (msg for _, msg in err.value.problems), strict=True))


def job(index: int, **keys):
    def edit(raw):
        raw["training"]["jobs"][index].update(copy.deepcopy(keys))
    return edit


def test_the_two_example_jobs_are_valid():
    settings = parse_settings(training_config(), "Pulumi.test-dev.yaml")
    assert [j.name for j in settings.training.jobs] == ["ddp", "llm"]
    assert [r.kind for r in settings.training.runtimes] == ["torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning"]


@pytest.mark.parametrize("name", ["PET_NNODES", "PET_MASTER_ADDR", "PET_RDZV_BACKEND", "PLATFORM_TP_DEGREE"])
def test_a_job_env_may_not_set_what_trainer_torchrun_or_the_platform_set(name):
    found = problems(job(0, env={name: "x"}))
    (path,) = found
    assert path == f"{JOB.format('ddp')}.env.{name}" and "reserved" in found[path]


def test_tensor_parallel_is_required_for_fsdp_tp_and_stays_within_a_node():
    assert problems(_drop(1, "tensorParallelDegree")) == {
        f"{JOB.format('llm')}.tensorParallelDegree": "required with runtime torch-fsdp-tp (ranks in one tensor-parallel group, 2-16)"}
    found = problems(job(1, tensorParallelDegree=3))
    assert list(found) == [f"{JOB.format('llm')}.tensorParallelDegree"] and "does not divide processesPerNode 4" in next(iter(found.values()))


def test_suspend_true_is_refused_because_kueue_lifts_it_and_it_restarts_a_running_job():
    found = problems(job(0, suspend=True))
    assert list(found) == [f"{JOB.format('ddp')}.suspend"]
    assert "Kueue lifts suspend from every job it admits" in found[f"{JOB.format('ddp')}.suspend"]
    assert "leave it out of training.jobs" in found[f"{JOB.format('ddp')}.suspend"]
    raw = training_config()
    raw["training"]["jobs"][0]["suspend"] = False
    assert parse_settings(raw, "Pulumi.test-dev.yaml").training.jobs[0].suspend is False


def _drop(index: int, key: str):
    def edit(raw):
        raw["training"]["jobs"][index].pop(key)
    return edit


def test_a_hybrid_shard_degree_must_divide_the_data_parallel_ranks():
    # 2 nodes x 4 processes / TP 2 = 4 data-parallel ranks: 3 does not divide them.
    found = problems(job(1, hybridShardDegree=3))
    assert list(found) == [f"{JOB.format('llm')}.hybridShardDegree"]
    assert "data-parallel size 4" in found[f"{JOB.format('llm')}.hybridShardDegree"]
    fsdp = problems(_fsdp_with(hybrid=5))
    assert "does not divide the world size 8" in fsdp[f"{JOB.format('llm')}.hybridShardDegree"]


def _fsdp_with(hybrid: int):
    def edit(raw):
        j = raw["training"]["jobs"][1]
        j.pop("tensorParallelDegree")
        j.update(runtime="torch-fsdp", hybridShardDegree=hybrid)
    return edit


def test_sharding_degrees_are_refused_on_strategies_without_sharding():
    found = problems(job(0, hybridShardDegree=2, tensorParallelDegree=2))
    assert sorted(found) == [f"{JOB.format('ddp')}.hybridShardDegree", f"{JOB.format('ddp')}.tensorParallelDegree"]


def test_a_job_its_gpu_group_cannot_place_is_refused():
    assert list(problems(job(0, gpu={"group": "cpu"}))) == [f"{JOB.format('ddp')}.gpu.group"]
    assert list(problems(job(0, gpu={"group": "gpu", "count": 8}))) == [f"{JOB.format('ddp')}.gpu.count"]
    assert list(problems(job(0, nodes=5))) == [f"{JOB.format('ddp')}.nodes"]
    assert list(problems(job(0, processesPerNode=5))) == [f"{JOB.format('ddp')}.processesPerNode"]


def test_names_a_job_uses_must_resolve_and_the_team_namespace_must_not_be_a_services():
    assert list(problems(job(0, team="audio"))) == [f"{JOB.format('ddp')}.team"]
    found = problems(lambda raw: raw["training"].update(runtimes=[{"kind": "torch-ddp"}]))
    assert list(found) == [f"{JOB.format('llm')}.runtime"]
    found = problems(lambda raw: raw["training"]["teams"][0].update(namespace="svc"))
    assert list(found) == ["inference-platform:training.teams[vision].namespace"] and "mesh-injected" in found[
        "inference-platform:training.teams[vision].namespace"]


def test_checkpoints_go_to_the_file_share_and_caches_must_exist():
    found = problems(job(0, checkpoint={"cache": "s3", "path": "ckpt"}))
    assert f"{JOB.format('ddp')}.checkpoint.cache" in found


def test_the_groups_network_and_the_jobs_env_may_not_both_set_an_nccl_variable():
    found = problems(job(0, env={"NCCL_SOCKET_IFNAME": "eth0"}))
    assert list(found) == [f"{JOB.format('ddp')}.env"] and "training.networks.gpu" in found[f"{JOB.format('ddp')}.env"]


def test_node_pods_of_part_of_a_node_share_nodes_before_the_group_runs_out():
    # 4 GPUs per node, 2 per pod: 8 pods fit the group's 4 nodes, 9 do not (8 would be beyond the
    # queue, which holds 12 beside serving's peak, so 6: 3 nodes).
    assert parse_settings(training_config(jobs=[{**_ddp(), "nodes": 6, "gpu": {"group": "gpu", "count": 2}}]), "P.yaml")
    found = problems(job(0, nodes=9, gpu={"group": "gpu", "count": 2}))
    assert "need 5 nodes of 'gpu' (2 per node), which has at most 4" in found[f"{JOB.format('ddp')}.nodes"]


def _ddp() -> dict:
    return copy.deepcopy(training_config()["training"]["jobs"][0])


def _network(**keys):
    def edit(raw):
        raw["training"]["networks"]["gpu"] = dict(keys)
    return edit


@pytest.mark.parametrize("value", ["=eth0", "eth", "eth0", "^lo,docker", "^=lo", "=eth0,eth1"])
def test_a_socket_ifname_that_selects_the_pods_eth0_and_not_lo_is_accepted(value):
    raw = training_config()
    _network(socketIfname=value)(raw)
    assert parse_settings(raw, "Pulumi.test-dev.yaml").training.networks["gpu"].env() == {"NCCL_SOCKET_IFNAME": value}


@pytest.mark.parametrize("value,why", [
    # NCCL treats a set NCCL_SOCKET_IFNAME as find-or-fail; a pod has lo and eth0 only.
    ("=eth1", "selects no interface a training pod has"),
    ("ib", "selects no interface a training pod has"),
    ("^eth", "selects no interface a training pod has"),
    ("lo", "selects no interface a training pod has"),
    # lo comes first in getifaddrs order: the bootstrap would listen where no other pod reaches.
    ("^docker", "also selects lo"),
    ("e,l", "also selects lo"),
    # `=` applies to the whole list, once, after `^`; an item's own `=` would be part of its name.
    ("=eth0,=eth1", "is not an NCCL interface list"),
    ("=^lo", "is not an NCCL interface list"),
    ("eth0:1", "is not an NCCL interface list"),
])
def test_a_socket_ifname_a_pod_on_the_pod_network_cannot_satisfy_is_one_line(value, why):
    found = problems(_network(socketIfname=value))
    path = "inference-platform:training.networks.gpu.socketIfname"
    assert list(found) == [path] and why in found[path]
    assert "allowed:" in found[path] and "\n" not in found[path]


def test_an_ib_hca_is_refused_as_no_rdma_device_reaches_a_training_pod():
    found = problems(_network(ibHca="mlx5_0:1,mlx5_1:1"))
    path = "inference-platform:training.networks.gpu.ibHca"
    assert list(found) == [path]
    assert "names RDMA devices" in found[path] and "IPC_LOCK" in found[path] and "allowed: leave it unset" in found[path]


def test_a_jobs_own_nccl_env_is_held_to_the_groups_rules():
    def edit(raw):
        del raw["training"]["networks"]
        raw["training"]["jobs"][0]["env"] = {"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO"}
    found = problems(edit)
    assert sorted(found) == [f"{JOB.format('ddp')}.env.NCCL_IB_HCA", f"{JOB.format('ddp')}.env.NCCL_SOCKET_IFNAME"]
    assert "selects no interface a training pod has" in found[f"{JOB.format('ddp')}.env.NCCL_SOCKET_IFNAME"]


def test_nccl_selects_interfaces_as_ncclosfindinterfaces_matches_them():
    from inference_platform.settings.training import nccl_selects

    # The examples of NCCL's env.rst (NCCL_SOCKET_IFNAME), on the names they speak of.
    assert nccl_selects("eth", "eth0") and nccl_selects("eth", "eth1") and not nccl_selects("eth", "ib0")
    assert nccl_selects("=eth0", "eth0") and not nccl_selects("=eth0", "eth01")
    assert nccl_selects("=eth0,eth1", "eth1") and not nccl_selects("=eth0,eth1", "eth10")
    assert not nccl_selects("^docker", "docker0") and nccl_selects("^docker", "eth0") and nccl_selects("^docker", "lo")
    assert not nccl_selects("^=docker0", "docker0") and nccl_selects("^=docker0", "docker01")


CODE = {"cache": "fileShare", "path": "code/ddp"}


def _with_s3(edit):
    """`edit`, on the test stack with an S3 cache beside its file share."""
    def both(raw):
        raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights", "region": "eu-1"}
        raw.update({key: "secret" for key in S3_KEYS})
        edit(raw)
    return both


S3_KEYS = frozenset({"s3AccessKeyId", "s3SecretAccessKey"})


@pytest.mark.parametrize("keys", [
    {"code": CODE, "command": ["torchrun", "/workspace/code/train.py", "--out", "/workspace/checkpoint/params.json"]},
    {"code": CODE, "command": ["bash", "-c", "cd /workspace/code && torchrun train.py --data=/workspace/dataset"]},
    {"command": ["torchrun", "/opt/app/train.py"]},
    {"command": ["torchrun", "train.py"]},
    # The image's /workspace (the PyTorch images' working directory) when no S3 initializer covers it.
    {"command": ["torchrun", "/workspace/train.py"]},
])
def test_a_command_running_code_that_reaches_its_pods_is_accepted(keys):
    raw = training_config()
    job(0, **keys)(raw)
    assert parse_settings(raw, "Pulumi.test-dev.yaml").training.jobs[0].command == keys["command"]


@pytest.mark.parametrize("keys,word,why", [
    ({"command": ["torchrun", "/workspace/code/train.py"]}, 1, "the job has no `code`"),
    ({"command": ["bash", "-c", "torchrun /workspace/code/train.py"]}, 2, "the job has no `code`"),
    # The job's data and checkpoint directories hold data, never its code.
    ({"command": ["torchrun", "/workspace/checkpoint/train.py"]}, 1, "holds the job's checkpoint, not its code"),
    ({"command": ["torchrun", "/workspace/dataset/prep.sh"]}, 1, "holds the job's dataset, not its code"),
    ({"code": CODE, "command": ["torchrun", "/workspace/code/../checkpoint/train.py"]}, 1, "holds the job's checkpoint"),
    ({"command": ["/workspace/checkpoint/run"]}, 0, "holds the job's checkpoint"),
    ({"command": ["torchrun", "/workspace/model/train.py"]}, 1, "the job has no `model`"),
    # Trainer's initializers mount their volume over /workspace: the image's files there are hidden.
    ({"dataset": {"cache": "s3", "path": "data/imagenet"}, "command": ["torchrun", "/workspace/train.py"]}, 1,
     "reads its dataset from S3"),
])
def test_a_command_running_code_no_volume_or_image_provides_is_one_line(keys, word, why):
    found = problems(_with_s3(job(0, **keys)), S3_KEYS)
    path = f"{JOB.format('ddp')}.command[{word}]"
    assert list(found) == [path] and why in found[path] and "allowed:" in found[path]


def test_a_jobs_code_comes_from_the_file_share():
    found = problems(_with_s3(job(0, code={"cache": "s3", "path": "code"})), S3_KEYS)
    assert list(found) == [f"{JOB.format('ddp')}.code.cache"] and "allowed: fileShare" in found[f"{JOB.format('ddp')}.code.cache"]


def test_topology_levels_are_refused_while_a_gpu_group_autoscales():
    # The test stack's GPU group scales 1..4: Kueue's topology-aware admission counts only the nodes
    # that exist, and no ProvisioningRequest check asks the autoscaler for more.
    found = problems(lambda raw: raw["training"].update(topologyLevels=["kubernetes.io/hostname"]))
    path = "inference-platform:training.topologyLevels"
    assert list(found) == [path]
    assert "gpu (minNodes 1 < maxNodes 4) autoscale" in found[path] and "ProvisioningRequest" in found[path]
    assert "allowed: topologyLevels only when every GPU group has minNodes equal to maxNodes" in found[path]


def test_topology_levels_on_gpu_groups_of_a_fixed_size_are_accepted():
    raw = training_config(topologyLevels=["kubernetes.io/hostname"])
    raw["cluster"]["nodeGroups"][1]["minNodes"] = 4
    assert parse_settings(raw, "Pulumi.test-dev.yaml").training.topology_levels == ["kubernetes.io/hostname"]
    # The CPU group autoscales (1..2), which does not matter: Kueue has no flavor of it.
    cpu = raw["cluster"]["nodeGroups"][0]
    assert "gpu" not in cpu and cpu["minNodes"] < cpu["maxNodes"]
