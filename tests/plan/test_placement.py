"""Pods land where the plan says: Magnum node groups carry the names the platform's selectors
use, unnamed cloud resources show the names their provider will give, and a selector no
node's labels satisfy fails the plan."""

from __future__ import annotations

import copy
import re

import pytest

from inference_platform.core.node_contract import MAGNUM_GROUP_LABELS
from inference_platform.settings.loader import parse_settings
from platformctl import placement
from platformctl.autonaming import bridged_name
from platformctl.engine import stack_settings
from platformctl.invariants import PlanInvariantError, check_plan
from tests.conftest import ROOT, as_magnum, base_config, render_raw, stack_plan
from tests.support.variants import HEAT_FILE, heat_plan

NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
CLUSTER = "openstack:containerinfra/cluster:Cluster"


def resources_of(plan) -> list[dict]:
    return [r.to_json() for r in plan.resources]


@pytest.mark.parametrize("plan,settings", [
    (lambda: stack_plan("acme-prod"), lambda: stack_settings(ROOT / "stacks" / "Pulumi.acme-prod.yaml")),
    (heat_plan, lambda: stack_settings(HEAT_FILE)),
])
def test_magnum_node_groups_carry_the_names_the_selectors_use(plan, settings):
    plan, settings = plan(), settings()
    label = MAGNUM_GROUP_LABELS[settings.cluster.magnum_labeller]
    named = {g.inputs["role"]: g.inputs.get("name") for g in plan.of_type(NODE_GROUP)}
    assert named == {g.name: g.name for g in settings.cluster.node_groups[1:]}
    for group in settings.cluster.node_groups[1:]:
        assert group.selector == {label: named[group.name]}
    assert placement.violations(resources_of(plan), settings) == []


def test_an_unnamed_cloud_resource_shows_the_name_its_provider_will_give():
    (cluster,) = stack_plan("acme-prod").of_type(CLUSTER)
    shown = cluster.to_json()["outputs"]["name"]
    assert re.fullmatch(r"acme-prod-cluster-magnum-[0-9a-f]{7}", shown), shown
    assert "name" not in cluster.inputs
    (group, *_) = stack_plan("acme-prod").of_type(NODE_GROUP)
    assert "outputs" not in group.to_json()  # named by the program: nothing for the provider to make up


def test_a_selector_on_a_name_the_provider_made_up_fails_the_plan():
    plan = stack_plan("acme-prod")
    settings = stack_settings(ROOT / "stacks" / "Pulumi.acme-prod.yaml")
    resources = copy.deepcopy(resources_of(plan))
    for r in resources:  # the node groups as an unnamed declaration leaves them
        if r["type"] == NODE_GROUP:
            del r["inputs"]["name"]
            r["outputs"] = {"name": bridged_name(NODE_GROUP, r["name"], r["inputs"])}
    found = placement.violations(resources, settings)
    assert found and all("matches no node of any group" in line for line in found)
    assert any("nodegroup': 'gpu-h100'" in line and "=acme-prod-cluster-gpu-h100-" in line for line in found), found
    with pytest.raises(PlanInvariantError, match="matches no node of any group"):
        check_plan(resources, settings)


def test_magnum_capi_helm_selects_the_name_as_its_driver_writes_it():
    raw = as_magnum(base_config())
    raw["cluster"]["magnum"] = {"clusterApiDriver": "magnum-capi-helm"}
    raw["cluster"]["nodeGroups"][1].update(name="gpu--a", flavor="g1")
    for service in raw["services"]:
        for version in service["versions"]:
            version["gpu"]["group"] = "gpu--a"
    settings = parse_settings(raw, "stacks/Pulumi.test-dev.yaml")
    # magnum_capi_helm/driver_utils.py sanitized_name: runs of characters outside [a-z0-9] become one `-`.
    assert settings.cluster.node_groups[1].selector == {"capi.stackhpc.com/node-group": "gpu-a"}
    plan = render_raw(raw)
    assert placement.violations(resources_of(plan), settings) == []


def test_a_selector_no_group_carries_is_named_with_what_the_nodes_do_carry():
    settings = stack_settings(ROOT / "stacks" / "Pulumi.demo-dev.yaml")
    pod = {"type": "kubernetes:apps/v1:Deployment", "name": "stray", "inputs": {"spec": {"template": {"spec": {
        "nodeSelector": {"example.com/pool": "batch"}}}}}}
    affinity = {"type": "kubernetes:apps/v1:Deployment", "name": "picky", "inputs": {"spec": {"template": {"spec": {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}}}}}}}
    fine = {"type": "kubernetes:apps/v1:DaemonSet", "name": "everywhere", "inputs": {"spec": {"template": {"spec": {
        "nodeSelector": {"kubernetes.io/os": "linux"}}}}}}
    found = placement.violations([pod, affinity, fine], settings)
    assert [line.split(":")[0] for line in found] == ["Deployment stray", "Deployment picky"]
    assert "spec.template.spec: nodeSelector {'example.com/pool': 'batch'}" in found[0]


def test_an_unnamed_kubernetes_object_shows_the_name_pulumi_kubernetes_will_give():
    # pulumi-kubernetes names it `<logical name>-<8 hex>` (metadata/naming.go, NewUniqueName's default length).
    plan = stack_plan("acme-prod")
    (hpa, *_) = plan.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    assert "name" not in hpa.inputs["metadata"]
    shown = hpa.to_json()["outputs"]["metadata"]["name"]
    assert re.fullmatch(rf"{re.escape(hpa.name)}-[0-9a-f]{{8}}", shown), shown
    deployments = {d.to_json()["outputs"]["metadata"]["name"] for d in plan.of_type("kubernetes:apps/v1:Deployment")}
    assert hpa.inputs["spec"]["scaleTargetRef"]["name"] in deployments
