"""The edits users make every week, each with what `pulumi up` would do to every resource.

Each row edits an example stack file, renders it, and classifies the change against the
unedited plan with the same rules as `platformctl diff`. The classification must be
exactly the expected one, and no everyday edit may replace or delete the cluster, a node
group, the file share, a bucket or a PersistentVolume (claim), nor produce a diff error.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from platformctl.diff import diff_plans
from platformctl.engine import render_stack
from tests.conftest import ROOT, stack_plan
from tests.support.variants import HEAT_FILE, HEAT_STACK, heat_plan

# Resources that hold nodes or data: an everyday edit never replaces or deletes one.
STATEFUL_TYPES = {
    "openstack:containerinfra/cluster:Cluster",
    "openstack:containerinfra/nodeGroup:NodeGroup",
    "openstack:sharedfilesystem/share:Share",
    "pulumi-python:dynamic/s3:Bucket",
    "kubernetes:core/v1:PersistentVolume",
    "kubernetes:core/v1:PersistentVolumeClaim",
}


def _key(name: str) -> str:
    return f"inference-platform:{name}"


def _service(config: dict, index: int) -> dict:
    return config[_key("services")][index]


def _group(config: dict, index: int) -> dict:
    return config[_key("cluster")]["nodeGroups"][index]


def _weights(index: int, *weights: int):
    def edit(config):
        for version, weight in zip(_service(config, index)["versions"], weights, strict=True):
            version["weight"] = weight
    return edit


def _untuned(version: dict) -> dict:
    """A copy of a version without its tuning run (platformctl patch copies versions so too)."""
    return {k: copy.deepcopy(v) for k, v in version.items() if k != "tuning"}


def _add_version(config):
    versions = _service(config, 1)["versions"]
    versions.append(dict(_untuned(versions[0]), name="v2", weight=0))


def _remove_first_version(config):
    versions = _service(config, 0)["versions"]
    versions.pop(0)
    versions[0]["weight"] = 100


def _add_service(config):
    new = dict(copy.deepcopy(_service(config, 1)), name="rerank", hosts=["rerank.acme.example.com"])
    new["versions"] = [_untuned(v) for v in new["versions"]]
    config[_key("services")].append(new)


NEW_SERVICE = {
    ("create", name) for name in (
        "acme-prod-namespaces-rerank", "acme-prod-namespaces-rerank-mtls", "rerank", "rerank-v1", "rerank-v1-hpa",
        "rerank-basic-auth", "rerank-basic-auth-filter", "rerank-basic-auth-policy", "rerank-service", "rerank-sa", "rerank-podmonitor", "rerank-destinationrule",
        "rerank-virtualservice", "rerank-networkpolicy", "rerank-authorizationpolicy", "rerank-peerauthentication",
        "rerank-password", "rerank-admin-key", "acme-prod-weights-s3-rerank",
    )
} | {("update", "acme-prod-mesh-gateway-customer"), ("update", "acme-prod-observability-rules")}


CONTRACT_OF_CPU_BATCH = {("create", "acme-prod-gpu-contract-marker-cpu-batch"), ("create", "acme-prod-gpu-contract-rule-cpu-batch")}

# (row id, stack, edit, expected {(action, logical name)}, xfail reason)
CATALOGUE = [
    # llm-chat is an LLM service: its canary is on the HTTPRoute (serving/llm_routing.py).
    ("shift canary weights", "acme-prod", _weights(0, 60, 40), {("update", "llm-chat-httproute")}, None),
    ("promote the canary", "acme-prod", _weights(0, 0, 100),
     # the canary alert follows the stable version
     {("update", "llm-chat-httproute"), ("update", "acme-prod-observability-rules")}, None),
    ("add a version", "acme-prod", _add_version,
     {("create", "embed-v2"), ("create", "embed-v2-hpa"), ("update", "embed-destinationrule")}, None),
    ("remove a version", "acme-prod", _remove_first_version,
     {("delete", "llm-chat-v7"), ("delete", "llm-chat-v7-hpa"), ("delete", "llm-chat-v7-pdb"),
      ("update", "llm-chat-destinationrule"), ("update", "llm-chat-httproute"),
      ("delete", "llm-chat-v7-router"), ("delete", "llm-chat-v7-router-networkpolicy"),
      ("update", "llm-chat-networkpolicy"), ("update", "acme-prod-observability-rules")}, None),
    ("add a service", "acme-prod", _add_service, NEW_SERVICE, None),
    ("change min/max replicas", "acme-prod",
     lambda c: _service(c, 0)["autoscaling"].update(minReplicas=3, maxReplicas=8),
     {("update", "llm-chat-v7-hpa"), ("update", "llm-chat-v8-hpa")}, None),
    ("change the queue-time target", "acme-prod",
     lambda c: _service(c, 1).setdefault("autoscaling", {}).update(queueTimeTargetUs=30000),
     {("update", "embed-v1-hpa")}, None),
    # an LLM version scales on its engine's load, not on Triton's (empty) queue
    ("change an LLM version's requests-in-flight target", "acme-prod",
     lambda c: _service(c, 0)["versions"][0]["llm"].update(autoscaling={"requestsInFlightTarget": 20}),
     {("update", "llm-chat-v7-hpa")}, None),
    ("change an extra node group's min/max", "acme-prod", lambda c: _group(c, 2).update(minNodes=2, maxNodes=3),
     # the capacity alert rule names the group's size
     {("update", "acme-prod-cluster-gpu-l4"), ("update", "acme-prod-observability-rules")}, None),
    # Its bounds are cluster labels, read at creation only: the plan changes nothing and the
    # diff says so (test_default_group_bounds_are_kept_out_with_a_note).
    ("change the default node group's max", "acme-prod", lambda c: _group(c, 0).update(maxNodes=8), set(), None),
    ("add a node group", "acme-prod",
     lambda c: c[_key("cluster")]["nodeGroups"].append({"name": "cpu-batch", "flavor": "m1.xlarge", "minNodes": 1, "maxNodes": 3}),
     # and the group's node contract: its marker and its rule
     {("create", "acme-prod-cluster-cpu-batch"), *CONTRACT_OF_CPU_BATCH}, None),
    ("change time-slicing replicas", "acme-prod", lambda c: _group(c, 2)["gpu"]["sharing"].update(replicas=8),
     # the device plugin config is replaced under its own name: the release that names it is left alone
     {("replace", "acme-prod-gpu-device-plugin"),
      ("update", "acme-prod-gpu-contract-rule-gpu-l4")}, None),
    # The same node-group edits on Magnum's Heat driver, whose extra groups our autoscaler sizes
    # (the stack keeps acme-prod's customer and environment, which name the resources).
    ("heat: change the default node group's max", HEAT_STACK, lambda c: _group(c, 0).update(maxNodes=8), set(), None),
    ("heat: change an extra node group's min/max", HEAT_STACK, lambda c: _group(c, 2).update(minNodes=2, maxNodes=3),
     {("update", "acme-prod-cluster-gpu-l4"), ("update", "acme-prod-observability-rules")}, None),
    ("heat: add a node group", HEAT_STACK,
     lambda c: c[_key("cluster")]["nodeGroups"].append({"name": "cpu-batch", "flavor": "m1.xlarge", "minNodes": 1, "maxNodes": 3}),
     # the platform's autoscaler discovers the new group by its role
     {("create", "acme-prod-cluster-cpu-batch"), ("update", "acme-prod-cluster-autoscaler-deployment"), *CONTRACT_OF_CPU_BATCH}, None),
    ("heat: change time-slicing replicas", HEAT_STACK, lambda c: _group(c, 2)["gpu"]["sharing"].update(replicas=8),
     # the device plugin config is replaced under its own name: the release that names it is left alone
     {("replace", "acme-prod-gpu-device-plugin"),
      ("update", "acme-prod-gpu-contract-rule-gpu-l4")}, None),
    ("change the MIG profile", "demo-dev", lambda c: _group(c, 1)["gpu"]["sharing"].update(migProfile="all-2g.20gb"),
     # the MIG manager follows the label the group's rule sets; resnet v2's tuning runs again on the new slice
     {("update", "demo-dev-gpu-contract-rule-gpu-a100"), ("replace", "resnet-v2-tune"), ("replace", "resnet-v2-tuning")},
     None),
    ("change the driver branch", "acme-prod", lambda c: c[_key("gpuOperator")]["driver"].update(branch="580"),
     {("update", "acme-prod-gpu-release")}, None),
    ("change retention", "acme-prod", lambda c: c[_key("observability")].update(prometheusRetention="45d"),
     {("update", "acme-prod-observability-kube-prometheus-stack")}, None),
    ("rotate the TLS secret name", "acme-prod", lambda c: c[_key("mesh")]["tls"].update(secretName="acme-gateway-tls-2026"),
     {("update", "acme-prod-mesh-gateway-customer"), ("update", "llm-chat-gateway"),
      ("update", "llm-chat-gateway-certificate-grant")}, None),
]


def _stack_file(stack: str) -> Path:
    return HEAT_FILE if stack == HEAT_STACK else ROOT / "stacks" / f"Pulumi.{stack}.yaml"


def _plan(stack: str):
    return heat_plan() if stack == HEAT_STACK else stack_plan(stack)


def _edited(tmp_path: Path, stack: str, edit) -> dict:
    raw = yaml.safe_load(_stack_file(stack).read_text())
    edit(raw["config"])
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    return render_stack(stack, stack_file).to_json()


def _rows():
    for row_id, stack, edit, expected, xfail in CATALOGUE:
        marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
        yield pytest.param(stack, edit, expected, id=row_id, marks=marks)


@pytest.mark.parametrize("stack,edit,expected", list(_rows()))
def test_everyday_edit(tmp_path, stack, edit, expected):
    before = _plan(stack).to_json()
    assert STATEFUL_TYPES <= {r["type"] for r in before["resources"]} or stack == "demo-dev"
    d = diff_plans(before, _edited(tmp_path, stack, edit))
    damaging = [c for c in d["changes"] if c.type in STATEFUL_TYPES and c.action in ("replace", "delete")]
    assert not damaging, [(c.action, c.key, c.reason) for c in damaging]
    assert not d["errors"], d["errors"]
    classified = {(c.action, c.key.rsplit("::", 1)[-1]) for c in d["changes"]}
    assert classified == expected


def test_default_group_bounds_are_kept_out_with_a_note_that_says_what_to_run(tmp_path):
    d = diff_plans(stack_plan("acme-prod").to_json(), _edited(tmp_path, "acme-prod", lambda c: _group(c, 0).update(maxNodes=8)))
    assert d["changes"] == [] and d["errors"] == []
    (note,) = d["notes"]
    assert note.startswith("note: inference-platform::inference-platform:index:InferencePlatform$inference-platform:index:Cluster"
                           "$openstack:containerinfra/cluster:Cluster::acme-prod-cluster-magnum: "
                           "inputs.labels.max_node_count changed but ignoreChanges keeps the old value; ")
    assert "\n" not in note
    assert note.endswith("`openstack coe nodegroup update <cluster> default-worker replace max_node_count=8`, "
                         "where <cluster> is the Magnum cluster acme-prod-cluster-magnum-<suffix> (`openstack coe cluster list`)")


def test_on_heat_the_default_group_bounds_note_also_sets_the_autoscalers_flag(tmp_path):
    # Heat's update_nodegroup only saves Magnum's record; Magnum's autoscaler reads its --nodes flag.
    heat_min = yaml.safe_load(HEAT_FILE.read_text())["config"]["inference-platform:cluster"]["nodeGroups"][0]["minNodes"]
    d = diff_plans(heat_plan().to_json(), _edited(tmp_path, HEAT_STACK, lambda c: _group(c, 0).update(maxNodes=8)))
    (note,) = d["notes"]
    assert "`openstack coe nodegroup update <cluster> default-worker replace max_node_count=8`" in note
    assert note.endswith("Magnum's own autoscaler keeps the bounds it was created with: set them in its flag as well, "
                         f"`kubectl -n kube-system edit deployment cluster-autoscaler`, `--nodes={heat_min}:8:default-worker`")
    mcapi = diff_plans(stack_plan("acme-prod").to_json(), _edited(tmp_path, "acme-prod", lambda c: _group(c, 0).update(maxNodes=8)))
    assert "kubectl" not in mcapi["notes"][0]
