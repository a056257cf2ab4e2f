"""Kueue as the training test stack declares it, against the real APIs: every Kueue object validates
against the vendored CRDs (kueue 0.19.2, v1beta2) and Kueue's own webhook rules for queues, and the
pinned chart renders with a real `helm template` with our configuration reaching the controller.
train-dev's objects, and the Topology and topology-aware flavors of train-dev on fixed-size GPU
groups (the only shape the settings accept topologyLevels in)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from platformctl.engine import render_stack
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT
from tests.support import conformance, helm
from tests.support.training_stacks import train_dev_with_topology

TRAIN_DEV = ROOT / "stacks" / "Pulumi.train-dev.yaml"
PLAN = render_stack("train-dev", TRAIN_DEV)
TOPOLOGY_PLAN = render_stack("train-dev", train_dev_with_topology(Path(tempfile.mkdtemp())))


def _kueue_docs(plan, kinds=None) -> list[dict]:
    docs = [manifest(r) for r in plan.resources if is_k8s_object(r) and r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    return [d for d in docs if kinds is None or d["kind"] in kinds]


KUEUE_DOCS = _kueue_docs(PLAN) + _kueue_docs(TOPOLOGY_PLAN, {"Topology", "ResourceFlavor"})


def _id(doc: dict) -> str:
    return f"{doc['kind']}:{doc['metadata']['name']}"


@pytest.mark.parametrize("doc", KUEUE_DOCS, ids=[_id(d) for d in KUEUE_DOCS])
def test_every_kueue_object_validates_against_the_vendored_crd(doc, reference):
    conformance.validate(doc)


def test_the_stack_declares_every_kind_of_kueue_object():
    assert {d["kind"] for d in KUEUE_DOCS} == {"ResourceFlavor", "Topology", "Cohort", "ClusterQueue", "LocalQueue",
                                               "WorkloadPriorityClass"}


def resource_group_problems(spec: dict, cohort: bool) -> list[str]:
    """Kueue's admission rules for resourceGroups (kueue v0.19.2 pkg/webhooks/clusterqueue_webhook.go
    validateResourceGroups, validateFlavorQuotas, validateLimit, validateLendingLimit) and the CRD's CEL
    rule that every flavor lists as many resources as its group covers."""
    problems, resources, flavors = [], set(), set()
    for rg in spec.get("resourceGroups", []):
        covered = rg["coveredResources"]
        problems += [f"resource {r} in two groups" for r in covered if r in resources]
        resources |= set(covered)
        for f in rg["flavors"]:
            if f["name"] in flavors:
                problems.append(f"flavor {f['name']} twice")
            flavors.add(f["name"])
            if [q["name"] for q in f["resources"]] != covered:
                problems.append(f"flavor {f['name']} does not list {covered} in order")
            for q in f["resources"]:
                if any(q.get(k, 0) < 0 for k in ("nominalQuota", "borrowingLimit", "lendingLimit")):
                    problems.append(f"{f['name']} {q['name']}: negative")
                if cohort and ({"borrowingLimit", "lendingLimit"} & set(q)):
                    problems.append(f"{f['name']} {q['name']}: a cohort without a parent takes no limits")
                if q.get("lendingLimit", 0) > q["nominalQuota"]:
                    problems.append(f"{f['name']} {q['name']}: lendingLimit over nominalQuota")
    return problems


@pytest.mark.parametrize("doc", [d for d in KUEUE_DOCS if d["kind"] in ("ClusterQueue", "Cohort")],
                         ids=[_id(d) for d in KUEUE_DOCS if d["kind"] in ("ClusterQueue", "Cohort")])
def test_queues_and_the_cohort_pass_kueues_own_resource_group_rules(doc):
    assert resource_group_problems(doc["spec"], cohort=doc["kind"] == "Cohort") == []
    if doc["kind"] == "ClusterQueue":
        # CRD rule: borrowingLimit only with a cohort (cohortName).
        assert doc["spec"]["cohortName"] == "gpu"


def test_the_rule_checker_sees_a_broken_resource_group():
    broken = {"resourceGroups": [{"coveredResources": ["a", "b"], "flavors": [
        {"name": "f", "resources": [{"name": "b", "nominalQuota": 1}, {"name": "a", "nominalQuota": 1, "lendingLimit": 2}]}]}]}
    assert len(resource_group_problems(broken, cohort=True)) == 3


def _kueue_release() -> dict:
    (release,) = [r for r in helm.releases(PLAN) if r["chart"].endswith("/kueue")]
    return release


def test_the_kueue_chart_renders_and_every_object_validates(reference):
    docs = helm.helm_template(_kueue_release())
    own = conformance.validate_rendered(docs)
    assert {("kueue.x-k8s.io/v1beta2", "ClusterQueue"), ("kueue.x-k8s.io/v1beta2", "Topology")} <= set(own)


def test_our_configuration_reaches_the_kueue_controller(reference):
    docs = helm.installed(_kueue_release())
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("manager-config")]
    config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    assert config["integrations"]["frameworks"] == ["trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset"]
    assert config["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    # The chart adds its internal certificates to whatever configuration it is given.
    assert config["internalCertManagement"]["enable"] is True
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and "controller-manager" in d["metadata"]["name"]]
    assert deployment["metadata"]["namespace"] == "kueue-system"
    # The chart's hardening (core/chart_hardening.py) over its own pod security context.
    assert deployment["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}

