"""Who may reach the model pipeline: the people and CI named in `modelPipeline.submitters` may run
a service's template and follow its workflows and nothing more, and Prometheus alone may reach the
`argo` namespace, on the controller's metrics port."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import base_config, render_raw

PIPELINE = {"baseVersion": "v1", "model": "resnet50", "inputs": {"input": [3, 224, 224]}, "repositoryPrefix": "svc"}
SUBMITTERS = [{"kind": "Group", "name": "ml-engineers"}, {"kind": "User", "name": "alice@example.com"},
              {"kind": "ServiceAccount", "name": "ci", "namespace": "ci"}]


def with_pipeline(**pipeline_settings) -> dict:
    raw = base_config()
    raw["services"][0]["pipeline"] = copy.deepcopy(PIPELINE)
    raw["modelPipeline"] = {"enabled": True, **pipeline_settings}
    return raw


def objects(raw: dict, kind: str) -> list[dict]:
    return [manifest(r) for r in render_raw(raw).resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


def test_submitters_may_run_their_services_template_and_follow_its_workflows_only():
    raw = with_pipeline(submitters=SUBMITTERS)
    roles = {r["metadata"]["name"]: r for r in objects(raw, "Role")}
    assert roles["svc-pipeline-submit"]["rules"] == [
        {"apiGroups": ["argoproj.io"], "resources": ["workflowtemplates"], "resourceNames": ["svc-pipeline"], "verbs": ["get"]},
        {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create", "get", "list", "watch"]}]
    (binding,) = [b for b in objects(raw, "RoleBinding") if b["roleRef"]["name"] == "svc-pipeline-submit"]
    assert binding["metadata"]["namespace"] == "svc"
    assert binding["subjects"] == [
        {"kind": "Group", "name": "ml-engineers", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "User", "name": "alice@example.com", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "ci", "namespace": "ci"}]


def test_without_submitters_the_role_waits_unbound():
    raw = with_pipeline()
    assert "svc-pipeline-submit" in {r["metadata"]["name"] for r in objects(raw, "Role")}
    assert not [b for b in objects(raw, "RoleBinding") if b["roleRef"]["name"] == "svc-pipeline-submit"]


@pytest.mark.parametrize("bad", [{"kind": "ServiceAccount", "name": "ci"}, {"kind": "Group", "name": "g", "namespace": "ci"},
                                 {"kind": "Role", "name": "x"}, {"kind": "User", "name": "bad name"}])
def test_a_submitter_that_is_not_a_binding_subject_is_refused(bad):
    with pytest.raises(ConfigError) as info:
        parse_settings(with_pipeline(submitters=[bad]), "stacks/Pulumi.test.yaml")
    assert info.value.paths[0].startswith("inference-platform:modelPipeline.submitters[")


def test_prometheus_alone_reaches_the_argo_namespace_on_the_controllers_metrics_port():
    (policy,) = [p for p in objects(with_pipeline(), "NetworkPolicy") if p["metadata"]["namespace"] == "argo"]
    assert policy["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": 9090}]}]}
