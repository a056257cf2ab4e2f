"""Placements that can never run are refused in one line each: a MIG slice the group does not have,
more units per node pod than a node offers, more node pods than the group's nodes hold, a job larger
than its team's queue can ever admit, and job memory no more than its runtime's /dev/shm."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.support.hostile_corpus import example

IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
# train-dev's gpu-mig group: 4 A100s per node, each {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}, at most 2 nodes;
# research holds 4 x 3g.40gb there, and on gpu-h100 (6 nodes of 8) 8 GPUs with borrowingLimit 8.
MIG_JOB = {"name": "mig-ft", "team": "research", "runtime": "torch-ddp", "image": IMAGE,
           "command": ["torchrun", "train.py"], "gpu": {"group": "gpu-mig", "migProfile": "3g.40gb", "count": 1}}


def train_dev(*jobs: dict) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in example("train-dev")["config"].items() if k.startswith("inference-platform:")}
    raw = copy.deepcopy(raw)
    raw["training"]["jobs"] += [copy.deepcopy(j) for j in jobs]
    return raw


def refused(raw: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "stacks/Pulumi.train-dev.yaml", stack="train-dev")
    return dict(zip(err.value.paths, (msg for _, msg in err.value.problems), strict=True))


def test_a_mig_job_on_slices_the_group_has_plans():
    assert parse_settings(train_dev(MIG_JOB, {**MIG_JOB, "name": "mig-4", "nodes": 2, "gpu": {**MIG_JOB["gpu"], "count": 2}}),
                          "stacks/Pulumi.train-dev.yaml", stack="train-dev")


@pytest.mark.parametrize("edit,path,words", [
    ({"gpu": {"group": "gpu-mig", "migProfile": "7g.80gb", "count": 1}}, "gpu.migProfile",
     "group 'gpu-mig' has no 7g.80gb slices; its MIG mix per GPU: 1 x 3g.40gb, 1 x 2g.20gb, 2 x 1g.10gb"),
    ({"gpu": {"group": "gpu-mig", "migProfile": "3g.40gb", "count": 5}}, "gpu.count",
     "a node pod asks for 5 x nvidia.com/mig-3g.40gb, but one node of group 'gpu-mig' offers 4; allowed: count 1-4"),
    ({"nodes": 3, "gpu": {"group": "gpu-mig", "migProfile": "3g.40gb", "count": 4}}, "nodes",
     "3 node pods of 4 x nvidia.com/mig-3g.40gb need 3 nodes of 'gpu-mig' (1 per node), which has at most 2"),
    ({"nodes": 17, "gpu": {"group": "gpu-mig", "migProfile": "1g.10gb", "count": 1}}, "nodes",
     "17 node pods of 1 x nvidia.com/mig-1g.10gb need 3 nodes of 'gpu-mig' (8 per node), which has at most 2; "
     "allowed: at most 16 node pods"),
], ids=["slice-absent", "more-slices-than-a-node", "more-pods-than-nodes", "more-pods-than-slices"])
def test_mig_placements_no_node_can_hold_are_refused(edit, path, words):
    found = refused(train_dev({**MIG_JOB, **edit}))
    key = f"inference-platform:training.jobs[mig-ft].{path}"
    assert list(found) == [key] and words in found[key]


def test_a_job_larger_than_its_teams_queue_can_ever_admit_is_refused():
    # research: 8 guaranteed GPUs on gpu-h100 and borrowingLimit 8, so its queue holds at most 16.
    job = {**MIG_JOB, "name": "big", "gpu": {"group": "gpu-h100", "count": 4}}
    assert parse_settings(train_dev({**job, "nodes": 4}), "stacks/Pulumi.train-dev.yaml", stack="train-dev")
    found = refused(train_dev({**job, "nodes": 5}))
    key = "inference-platform:training.jobs[big].nodes"
    assert list(found) == [key]
    assert "needs 20 x nvidia.com/gpu at once" in found[key] and "can never hold more than 16 there" in found[key]
    assert "allowed: at most 4 node pods" in found[key]


def test_a_queue_borrows_no_more_than_the_other_teams_lend():
    # applied lends at most 2 of its 4 on gpu-h100: research, without a borrowingLimit, can reach
    # its 8, the unguaranteed rest and those 2, not applied's whole guarantee.
    raw = train_dev()
    research = raw["training"]["teams"][0]["quotas"][0]
    del research["borrowingLimit"]
    from inference_platform.training.capacity import group_proofs, queue_admits
    settings = parse_settings(raw, "stacks/Pulumi.train-dev.yaml", stack="train-dev")
    (p,) = [p for p in group_proofs(settings) if p.group == "gpu-h100"]
    assert queue_admits(settings, "research", p) == 8 + p.rest + 2
    assert queue_admits(settings, "applied", p) == 4 + p.rest + 8


def test_job_memory_no_more_than_its_runtimes_dev_shm_is_refused():
    raw = train_dev()
    raw["training"]["runtimes"] = [{"kind": "torch-ddp", "shmSize": "16Gi"}, {"kind": "torch-fsdp-tp"}]
    raw["training"]["jobs"][0]["memory"] = "16Gi"
    found = refused(raw)
    key = "inference-platform:training.jobs[resnet-ddp].memory"
    assert list(found) == [key]
    assert "16Gi is no more than the 16Gi /dev/shm of runtime torch-ddp" in found[key] and "allowed: more than 16Gi" in found[key]
    raw["training"]["jobs"][0]["memory"] = "17Gi"
    assert parse_settings(raw, "stacks/Pulumi.train-dev.yaml", stack="train-dev")
