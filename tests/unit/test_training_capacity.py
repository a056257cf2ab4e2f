"""The serving-first proof (training/capacity.py): serving's peak plus every team's guarantee fits each
GPU group at maxNodes, or the stack is refused with one line naming the group, the numbers and the keys."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.training.capacity import ShapeProof, group_proofs, proof_report, proof_table, shape_proofs
from platformctl.engine import stack_settings
from tests.conftest import ROOT, base_config
from tests.support.training_stacks import training_config

TRAIN_DEV = ROOT / "stacks" / "Pulumi.train-dev.yaml"


def _raw(gpus: int = 4, max_nodes: int = 8, per_node: int = 2, **team) -> dict:
    """base_config's GPU group grown to max_nodes x per_node GPUs, and one team `ml` guaranteed `gpus` there."""
    raw = base_config()
    group = raw["cluster"]["nodeGroups"][1]
    group["maxNodes"], group["gpu"]["perNode"] = max_nodes, per_node
    raw["training"] = {"teams": [{"name": "ml", "namespace": "ml", "quotas": [{"group": "gpu", "gpus": gpus}], **team}]}
    return raw


def _problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "Pulumi.test.yaml")
    return str(err.value).splitlines()


def test_serving_peak_counts_max_replicas_a_surge_replica_per_version_and_spare_slots():
    raw = _raw(gpus=2)
    raw["coldStart"] = {"spareSlots": {"gpu": 2}}
    raw["services"][0]["autoscaling"] = {"minReplicas": 1, "maxReplicas": 5}
    raw["services"][0]["versions"][0]["gpu"]["count"] = 2
    (proof,) = group_proofs(parse_settings(raw, "Pulumi.test.yaml"))
    # 5 replicas x 2 GPUs, one more replica while a rollout surges, 2 placeholders.
    assert (proof.serving, proof.surge, proof.spare, proof.peak) == (10, 2, 2, 14)
    assert (proof.capacity, proof.training, proof.rest, proof.fits) == (16, 2, 0, True)


def test_guarantees_that_fit_beside_serving_leave_training_only_the_rest():
    (proof,) = group_proofs(parse_settings(_raw(gpus=4), "Pulumi.test.yaml"))
    assert (proof.peak, proof.training, proof.rest) == (4, 4, 8)
    assert proof.peak + proof.training + proof.rest == proof.capacity


def test_a_guarantee_that_eats_into_serving_peak_is_one_line_naming_group_numbers_and_keys():
    (line,) = _problems(_raw(gpus=13))
    assert "inference-platform:training.teams[ml].quotas[0].gpus" in line
    assert "GPU group 'gpu'" in line and "peak serving 4" in line and "guaranteed training 13 (ml 13) = 17 of 16" in line
    assert "at most 12 x nvidia.com/gpu" in line
    assert "coldStart.spareSlots.gpu" in line and "cluster.nodeGroups[1].maxNodes to 9" in line


def test_serving_alone_over_a_group_is_refused_once_training_is_declared():
    raw = _raw(gpus=0, max_nodes=1, per_node=1)
    (line,) = _problems(raw)
    assert "inference-platform:cluster.nodeGroups[gpu].maxNodes" in line and "peak serving 4" in line
    # The same serving without training plans: the serving capacity check only warns there.
    del raw["training"]
    assert group_proofs(parse_settings(raw, "Pulumi.test.yaml")) == []


@pytest.mark.parametrize("edit,where,what", [
    (lambda t: t["teams"].append({**t["teams"][0], "namespace": "other"}), "teams[1].name", "a second team of this name"),
    (lambda t: t["teams"][0].update(namespace="kueue-system"), "namespace", "namespace of the platform"),
    (lambda t: t["teams"][0].update(namespace="svc"), "namespace", "namespace 'svc' is a service's (mesh-injected)"),
    (lambda t: t["teams"][0]["quotas"][0].update(group="cpu"), "quotas[0].group", "no GPU node group named 'cpu'"),
    (lambda t: t["teams"][0]["quotas"][0].update(migProfile="1g.10gb"), "quotas[0].migProfile", "MIG strategy 'mixed'"),
    (lambda t: t["teams"][0]["quotas"].append({"group": "gpu", "gpus": 1}), "quotas[1]", "a second quota on group 'gpu'"),
    (lambda t: t["teams"][0]["quotas"][0].update(lendingLimit=5), "quotas[0]", "lendingLimit (5) exceeds gpus (4)"),
    (lambda t: t.update(topologyLevels=["kubernetes.io/hostname", "topology.kubernetes.io/zone"]), "topologyLevels",
     "may only be the last"),
    (lambda t: t.update(topologyLevels=["a.example.com/rack", "a.example.com/rack"]), "topologyLevels", "one level only"),
])
def test_a_team_quota_kueue_would_refuse_or_that_breaks_a_namespace_is_one_line(edit, where, what):
    raw = _raw()
    edit(raw["training"])
    lines = _problems(raw)
    assert any(where in line and what in line for line in lines), lines


def test_the_example_stack_proves_every_resource_of_its_groups_and_prints_it():
    s = stack_settings(TRAIN_DEV)
    proofs = {(p.group, p.resource): p for p in group_proofs(s)}
    assert set(proofs) == {("gpu-h100", "nvidia.com/gpu"), ("gpu-mig", "nvidia.com/mig-3g.40gb"),
                           ("gpu-mig", "nvidia.com/mig-2g.20gb"), ("gpu-mig", "nvidia.com/mig-1g.10gb")}
    h100 = proofs["gpu-h100", "nvidia.com/gpu"]
    # chat: 3 replicas x 2 GPUs, a surge replica of 2, 2 spare slots; research 8 and applied 4 guaranteed.
    assert (h100.peak, h100.training, h100.capacity, h100.rest) == (10, 12, 48, 26)
    assert all(p.fits for p in proofs.values())
    report = proof_report(s)
    assert len(report) == 7 and all(line.startswith("Serving first, GPU group ") for line in report[:4])
    # chat's 3 replicas, its surge replica and 2 placeholders: 6 pods that may touch all 6 nodes, so
    # no node is sure to have 8 GPUs free (applied's guarantee of 4 promises no pod of 8 anyway).
    shapes = {p.job: p for p in shape_proofs(s)}
    assert {j: (p.pod, p.slots, min(p.lost, p.slots), p.free, p.guaranteed_pods) for j, p in shapes.items()} == {
        "resnet-ddp": (4, 12, 6, 6, 2), "llm-fsdp-tp": (8, 6, 6, 0, 0), "embed-ft": (4, 12, 6, 6, 2)}
    assert all(p.fits for p in shapes.values())
    assert [p.within_guarantee for p in shapes.values()] == [False, False, True]
    assert report[-1].endswith("so the whole job (1 x 4) always finds room")
    assert "it starts only on room it borrows" in report[5]


def _shaped(max_nodes: int = 4, gpus: int = 4) -> dict:
    """training_config (4 nodes of 4 GPUs, serving at most 4 pods of 1 GPU there, DDP and FSDP+TP
    jobs of 4-GPU pods) with team vision guaranteed `gpus` GPUs."""
    raw = training_config()
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = max_nodes
    raw["training"]["teams"][0]["quotas"] = [{"group": "gpu", "gpus": gpus}]
    return raw


def test_units_that_fit_are_refused_when_serving_spread_over_the_nodes_leaves_no_whole_node_for_a_pod():
    # Units: serving's peak 4 + the guarantee 4 = 8 of 16 fits, which the unit proof alone accepted.
    lines = _problems(_shaped())
    assert len(lines) == 2 and "inference-platform:training.jobs[llm].gpu.count" in lines[1]
    line = lines[0]
    assert "inference-platform:training.jobs[ddp].gpu.count" in line
    assert "runs pods of 4 x nvidia.com/gpu, 1 per node: 4 nodes offer 4 places" in line
    assert "serving's 4 pods at peak" in line and "leaving 0" in line and "admits 1 such pods" in line
    assert "raise cluster.nodeGroups[1].maxNodes to 5" in line
    # The maxNodes the line names is enough: a fifth node stays whole for the guaranteed pod.
    settings = parse_settings(_shaped(max_nodes=5), "Pulumi.test.yaml")
    (unit,) = group_proofs(settings)
    assert unit.fits and all(p.fits and p.free == 1 for p in shape_proofs(settings))


def test_a_guarantee_smaller_than_a_pod_promises_no_pod_and_is_not_refused():
    settings = parse_settings(_shaped(gpus=3), "Pulumi.test.yaml")
    assert [(p.guaranteed_pods, p.fits, p.within_guarantee) for p in shape_proofs(settings)] == [(0, True, False)] * 2


@pytest.mark.parametrize("serving,per_node,pod,lost", [
    ((2,) * 6, 8, 8, 6),      # 2-GPU replicas, one per node at worst: each takes the node's one place
    ((2,) * 6, 8, 4, 6),      # each may break one of a node's two 4-GPU places
    ((8, 8), 8, 4, 4),        # a whole-node pod takes both places of its node
    ((1,) * 9, 8, 8, 9),      # more pods than nodes: capped by the places there are (free never negative)
])
def test_a_pod_takes_at_most_ceil_of_its_units_over_the_job_pod_of_a_nodes_places(serving, per_node, pod, lost):
    proof = ShapeProof("g", 1, "nvidia.com/gpu", per_node, 6, "j", 0, "t", pod, 1, pod, serving, ())
    assert proof.lost == lost and proof.free == max(proof.slots - lost, 0)


def test_the_docs_table_is_the_example_stacks_proof():
    page = (ROOT / "docs" / "training-quotas.md").read_text()
    assert proof_table(stack_settings(TRAIN_DEV)) in page
