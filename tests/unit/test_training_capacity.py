"""The serving-first proof (training/capacity.py): serving's peak plus every team's guarantee fits each
GPU group at maxNodes, or the stack is refused with one line naming the group, the numbers and the keys."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.training.capacity import group_proofs, proof_report, proof_table
from platformctl.engine import stack_settings
from tests.conftest import ROOT, base_config

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
    # chat: 6 replicas x 2 GPUs, a surge replica of 2, 2 spare slots; research 8 and applied 4 guaranteed.
    assert (h100.peak, h100.training, h100.capacity, h100.rest) == (16, 12, 48, 20)
    assert all(p.fits for p in proofs.values())
    assert len(proof_report(s)) == 4 and all(line.startswith("Serving first, GPU group ") for line in proof_report(s))


def test_the_docs_table_is_the_example_stacks_proof():
    page = (ROOT / "docs" / "training-quotas.md").read_text()
    assert proof_table(stack_settings(TRAIN_DEV)) in page
